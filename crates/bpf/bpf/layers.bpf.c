// SPDX-License-Identifier: GPL-2.0
/*
 * layers: the time of each layer a round trip of stackmeter's passes in the
 * kernel, one record per round trip (struct layer_trip, layers.h).
 *
 * Raw tracepoints only (this kernel has no kprobes, no fentry, no tp_btf):
 * the probe gets the tracepoint's own arguments (the skb, the socket), with
 * no trace record built. Each point is cheap: a packet is parsed once, where
 * it enters the path (net_dev_queue for a local sender, netif_rx or
 * napi_gro_receive_entry for one from elsewhere), and remembered by its skb's
 * address; later points find it in a direct-mapped cache (an array) and
 * write one time stamp into the trip's slot of another. The point that ends a trip
 * (cfg_emit_at) copies the slot into the ring buffer, without waking the
 * reader: it polls the buffer on a timer of its own.
 *
 * Two modes (cfg_tcp):
 *   UDP: trips keyed by the datagram's sequence number (stackmeter's header:
 *     kind at payload offset 5, sequence at 8), to or from UDP port cfg_port;
 *     the responder's read (sock_recv_length on the socket its request was
 *     queued on) and its send (the route lookup of a datagram from cfg_port,
 *     fib_table_lookup or fib6_table_lookup, on the CPU that read it: no
 *     system call is traced, so no task takes the slow system call path).
 *   TCP: trips keyed by connection and transaction, from the byte counts of
 *     the sockets registered in map conns (layers_tcp.h): the request's first
 *     and last byte queued, the last byte through the driver and the stack,
 *     the whole request on the responder's socket, its read, the write of the
 *     response's last byte, and the same back to the client's socket.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "layers.h"

volatile const __u16 cfg_port = 24680;
volatile const __u8 cfg_tcp = 0;
/* The position whose point closes a trip: the last one attached. */
volatile const __u8 cfg_emit_at = 12;

#define SLOTS 4096

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* 110000 records */
} trips_out SEC(".maps");

/* Trips in progress, at key % SLOTS. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__type(value, struct layer_trip);
} trips SEC(".maps");

/* A packet on the path: its trip, and which half (0 the request, 1 the
 * reply) it is in. */
struct skb_ref {
	__u64 key;
	__u32 half;
	__u32 live;
};

/* Packets on the path, by address: a direct-mapped cache (an array: no
 * lock, no allocation), each slot holding the address it is for. */
#define CACHE 4096

struct cached {
	__u64 addr;
	struct skb_ref ref;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CACHE);
	__type(key, __u32);
	__type(value, struct cached);
} skbs SEC(".maps");

/* UDP: the request last queued on a responder's socket, by the socket's
 * address, for the read that takes it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CACHE);
	__type(key, __u32);
	__type(value, struct cached);
} socks SEC(".maps");

/* The packet this CPU's stack took last (netif_receive_skb), for the
 * sk_data_ready that follows it in the same call chain. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct skb_ref);
} current SEC(".maps");

/* UDP: the request this CPU's reader read last, for the send that
 * answers it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct skb_ref);
} last_read SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LC_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Where a point sits in each half of the path: request half, reply half. */
enum point_type { T_QUEUE = 0, T_XMIT, T_RX, T_STACK, T_SOCK, T_READ };
#define UDP_SEND_POS 7 /* the responder's send */

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

static __always_inline struct layer_trip *slot_of(__u64 key)
{
	__u32 slot = (__u32)(key % SLOTS);

	return bpf_map_lookup_elem(&trips, &slot);
}

/* Opens the trip `key` in its slot, unless it is open there already. */
static __always_inline void begin(__u64 key)
{
	struct layer_trip *t = slot_of(key);
	int i;

	if (!t || (t->key == key && t->state != TRIP_EMPTY))
		return;
	if (t->state == TRIP_OPEN)
		count(LC_UNFINISHED);
	t->key = key;
#pragma unroll
	for (i = 0; i < LAYER_POINTS; i++)
		t->at[i] = 0;
	t->state = TRIP_OPEN;
}

static __always_inline void emit(struct layer_trip *t)
{
	struct layer_trip *e = bpf_ringbuf_reserve(&trips_out, sizeof(*e), 0);

	t->state = TRIP_SENT;
	if (!e) {
		count(LC_LOST);
		return;
	}
	__builtin_memcpy(e, t, sizeof(*e));
	/* No wake-up: waking the reader (irq_work, then a context switch) on
	 * the traced path would cost more than every probe together. */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	count(LC_EMITTED);
}

/* The time of position `pos` of the open trip `key`: the first time only. */
static __always_inline void mark(__u64 key, __u32 pos)
{
	struct layer_trip *t = slot_of(key);

	if (!t || t->key != key || t->state != TRIP_OPEN || pos >= LAYER_POINTS)
		return;
	if (!t->at[pos]) {
		t->at[pos] = bpf_ktime_get_ns();
		t->cpu[pos] = (__u8)bpf_get_smp_processor_id();
	}
	if (pos == cfg_emit_at)
		emit(t);
}

/* Whether position `pos` of trip `key` is already stamped. */
static __always_inline int marked(__u64 key, __u32 pos)
{
	struct layer_trip *t = slot_of(key);

	return t && t->key == key && pos < LAYER_POINTS && t->at[pos];
}

/* The position of a point of `type` in `half`: UDP's request half starts
 * at 1 and its reply half at 8; TCP's (the last byte's path) at 2 and 9. */
static __always_inline __u32 position(__u32 type, __u32 half)
{
	if (cfg_tcp)
		return (half ? 9 : 2) + type;
	return (half ? 8 : 1) + type;
}

/* The slot of `addr` in a direct-mapped cache: the one it is in, or the
 * one it would go to (then `hit` is 0). */
static __always_inline struct cached *cache_slot(void *cache, __u64 addr, int *hit)
{
	__u32 i = (__u32)((addr >> 8) ^ (addr >> 20)) & (CACHE - 1);
	struct cached *c = bpf_map_lookup_elem(cache, &i);

	*hit = c && c->addr == addr;
	return c;
}

#include "layers_parse.h"
#include "layers_tcp.h"

/* A point on an skb's path: a packet already on the path is found by its
 * address; one that is not is parsed where `may_parse` (where packets enter
 * the path), and remembered. Returns the packet's reference, or NULL. */
static __always_inline struct skb_ref *skb_point(struct sk_buff *skb, __u32 type, int may_parse,
						 struct skb_ref *fresh)
{
	int hit = 0;
	struct cached *c = cache_slot(&skbs, (__u64)skb, &hit);
	struct skb_ref *r = hit && type != T_QUEUE ? &c->ref : NULL;
	__u32 pos;

	if (!c)
		return NULL;
	if (!r || !r->live) {
		if (!may_parse || !parse_packet(skb, fresh, type)) {
			/* A packet not ours at an address that was: forget it. */
			if (hit)
				c->addr = 0;
			return NULL;
		}
		c->addr = (__u64)skb;
		c->ref = *fresh;
		r = &c->ref;
	}
	pos = position(type, r->half);
	/* The same skb back the other way (an XDP responder turned it
	 * around, so no socket had it): the reply half from here on. Once a
	 * socket had the request, the skb was freed and its address may come
	 * back as a packet we never saw queued (one injected by a TAP
	 * device): ignored. */
	if (!cfg_tcp && !r->half && marked(r->key, pos)) {
		if (marked(r->key, position(T_SOCK, 0)) || marked(r->key, position(T_READ, 0)))
			return NULL;
		r->half = 1;
		pos = position(type, 1);
	}
	mark(r->key, pos);
	return r;
}

static __always_inline __u64 arg(void *ctx, int i)
{
	/* The arguments as plain words: vmlinux.h declares args[] as a
	 * zero-length array, which a CO-RE relocation (aya's) refuses to
	 * index. */
	return ((const __u64 *)ctx)[i];
}

SEC("raw_tracepoint/net_dev_queue")
int rtp_net_dev_queue(struct bpf_raw_tracepoint_args *ctx)
{
	struct sk_buff *skb = (struct sk_buff *)arg(ctx, 0);
	struct skb_ref fresh = {};

	if (cfg_tcp)
		tcp_queued(skb);
	else
		skb_point(skb, T_QUEUE, 1, &fresh);
	return 0;
}

SEC("raw_tracepoint/net_dev_start_xmit")
int rtp_net_dev_start_xmit(struct bpf_raw_tracepoint_args *ctx)
{
	struct skb_ref fresh = {};

	skb_point((struct sk_buff *)arg(ctx, 0), T_XMIT, 0, &fresh);
	return 0;
}

SEC("raw_tracepoint/netif_rx")
int rtp_netif_rx(struct bpf_raw_tracepoint_args *ctx)
{
	struct skb_ref fresh = {};

	skb_point((struct sk_buff *)arg(ctx, 0), T_RX, !cfg_tcp, &fresh);
	return 0;
}

SEC("raw_tracepoint/napi_gro_receive_entry")
int rtp_napi_gro_receive_entry(struct bpf_raw_tracepoint_args *ctx)
{
	struct skb_ref fresh = {};

	skb_point((struct sk_buff *)arg(ctx, 0), T_RX, !cfg_tcp, &fresh);
	return 0;
}

SEC("raw_tracepoint/netif_receive_skb")
int rtp_netif_receive_skb(struct bpf_raw_tracepoint_args *ctx)
{
	struct skb_ref fresh = {}, none = {};
	struct skb_ref *r = skb_point((struct sk_buff *)arg(ctx, 0), T_STACK, 0, &fresh);
	__u32 zero = 0;

	bpf_map_update_elem(&current, &zero, r ? r : &none, BPF_ANY);
	return 0;
}

SEC("raw_tracepoint/sk_data_ready")
int rtp_sk_data_ready(struct bpf_raw_tracepoint_args *ctx)
{
	struct sock *sk = (struct sock *)arg(ctx, 0);
	struct skb_ref *r;
	__u32 zero = 0;

	if (cfg_tcp) {
		tcp_on_socket(sk);
		return 0;
	}
	/* The packet this CPU's stack just delivered, to the socket of its
	 * half: a request to the responder's (bound to cfg_port), a reply to
	 * the client's (connected to it). A socket woken later for an earlier
	 * packet (UDP wakes a reader only when its queue was empty) is not
	 * this one. */
	r = bpf_map_lookup_elem(&current, &zero);
	if (!r || !r->live || udp_sock_half(sk) != (int)r->half)
		return 0;
	r->live = 0;
	mark(r->key, position(T_SOCK, r->half));
	if (!r->half) {
		int hit;
		struct cached *c = cache_slot(&socks, (__u64)sk, &hit);

		if (c) {
			c->addr = (__u64)sk;
			c->ref = *r;
			c->ref.live = 1;
		}
	}
	return 0;
}

/* The route lookup of a datagram from the responder's port: its send of
 * the reply to the request it read last on this CPU. */
static __always_inline void udp_send(const void *ports, __u8 proto_udp)
{
	__be16 p[2];
	struct skb_ref *r;
	__u32 zero = 0;

	if (cfg_tcp || !proto_udp || bpf_probe_read_kernel(p, sizeof(p), ports))
		return;
	if (p[1] != bpf_htons(cfg_port)) /* uli.ports: dport, sport */
		return;
	r = bpf_map_lookup_elem(&last_read, &zero);
	if (!r || !r->live)
		return;
	r->live = 0;
	mark(r->key, UDP_SEND_POS);
}

SEC("raw_tracepoint/fib_table_lookup")
int rtp_fib_table_lookup(struct bpf_raw_tracepoint_args *ctx)
{
	struct flowi4 *fl = (struct flowi4 *)arg(ctx, 1);

	udp_send(&fl->uli.ports, BPF_CORE_READ(fl, __fl_common.flowic_proto) == IPPROTO_UDP);
	return 0;
}

SEC("raw_tracepoint/fib6_table_lookup")
int rtp_fib6_table_lookup(struct bpf_raw_tracepoint_args *ctx)
{
	struct flowi6 *fl = (struct flowi6 *)arg(ctx, 3);

	udp_send(&fl->uli.ports, BPF_CORE_READ(fl, __fl_common.flowic_proto) == IPPROTO_UDP);
	return 0;
}

SEC("raw_tracepoint/sock_recv_length")
int rtp_sock_recv_length(struct bpf_raw_tracepoint_args *ctx)
{
	struct sock *sk = (struct sock *)arg(ctx, 0);
	int hit = 0;
	struct cached *c;

	if ((int)arg(ctx, 1) <= 0)
		return 0;
	if (cfg_tcp) {
		tcp_read(sk);
		return 0;
	}
	/* UDP: the responder's read of the request its socket was woken for. */
	c = cache_slot(&socks, (__u64)sk, &hit);
	if (!c || !hit || !c->ref.live)
		return 0;
	c->ref.live = 0;
	mark(c->ref.key, position(T_READ, 0));
	{
		__u32 zero = 0;
		struct skb_ref now = c->ref;

		now.live = 1;
		bpf_map_update_elem(&last_read, &zero, &now, BPF_ANY);
	}
	return 0;
}

SEC("raw_tracepoint/tcp_sendmsg_locked")
int rtp_tcp_sendmsg_locked(struct bpf_raw_tracepoint_args *ctx)
{
	tcp_write((struct sock *)arg(ctx, 0), (struct msghdr *)arg(ctx, 1));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
