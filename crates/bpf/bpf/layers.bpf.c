// SPDX-License-Identifier: GPL-2.0
/*
 * layers: time stamps of one UDP round trip at every layer the kernel has a
 * tracepoint for, into a ring buffer, each with the skb address and, where
 * the packet can be read, the stackmeter sequence number (UDP payload offset
 * 8, big-endian) and kind (offset 5).
 *
 * Attach points (all classic tracepoints, plus the two raw_syscalls raw
 * tracepoints): see enum layer_event_id in layers.h. No kprobes, no fentry:
 * the kernel this was written on has neither.
 *
 * Filters, set by the loader:
 *   cfg_port: only skbs whose UDP source or destination port is this one;
 *   tgids map / cfg_comm1 / cfg_comm2: only syscalls of these processes
 *   (tgid in the map, or the thread's comm equal to one of the names).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "layers.h"

volatile const __u16 cfg_port = 24680;
volatile const char cfg_comm1[16] = "";
volatile const char cfg_comm2[16] = "";
/* Network namespaces (inode numbers, as stat -L /run/netns/NAME or
 * /proc/PID/ns/net show) to trace; both 0: all. */
volatile const __u32 cfg_netns1 = 0;
volatile const __u32 cfg_netns2 = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

/* Processes whose syscalls are traced (key: tgid, value: unused). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

/* A receive in progress: where its data goes (key: pid_tgid). */
struct recv_call {
	__u64 buf;
	__u64 len;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct recv_call);
} inflight SEC(".maps");

enum { LC_EMITTED = 0, LC_RINGBUF_FULL, LC_NR };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LC_NR);
	__type(key, __u32);
	__type(value, __u64);
} lcounters SEC(".maps");

/* x86_64 syscall numbers */
#define NR_read 0
#define NR_poll 7
#define NR_select 23
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_epoll_wait 232
#define NR_pselect6 270
#define NR_ppoll 271
#define NR_epoll_pwait 281
#define NR_recvmmsg 299
#define NR_sendmmsg 307

static __always_inline void lcount(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&lcounters, &idx);

	if (v)
		*v += 1;
}

static __always_inline void emit(const struct layer_event *src)
{
	struct layer_event *e;

	if ((cfg_netns1 || cfg_netns2) && src->netns != cfg_netns1 && src->netns != cfg_netns2)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		lcount(LC_RINGBUF_FULL);
		return;
	}
	__builtin_memcpy(e, src, sizeof(*e));
	/* No wakeup of the reader per record: waking it (irq_work, then a
	 * context switch into the loader) on the traced path costs far more
	 * than the probe itself and moves the measured times. The reader
	 * drains the buffer on its own timer instead (ring_buffer__consume). */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	lcount(LC_EMITTED);
}

static __always_inline void base(struct layer_event *e, __u16 id)
{
	__u64 pt = bpf_get_current_pid_tgid();

	__builtin_memset(e, 0, sizeof(*e));
	e->ts = bpf_ktime_get_ns();
	e->id = id;
	e->cpu = (__u8)bpf_get_smp_processor_id();
	e->tgid = (__u32)(pt >> 32);
	e->tid = (__u32)pt;
}

static __always_inline __u32 current_netns(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(t, nsproxy, net_ns, ns.inum);
}

/* Reads the UDP header and the first 16 payload bytes at l4 (kernel
 * memory). Returns 1 if one of the ports is cfg_port. */
static __always_inline int read_udp(const void *l4, struct layer_event *e)
{
	struct {
		__be16 sport, dport, len, check;
		__u8 p[16];
	} u;

	if (bpf_probe_read_kernel(&u, sizeof(u), l4))
		return 0;
	if (u.sport != bpf_htons(cfg_port) && u.dport != bpf_htons(cfg_port))
		return 0;
	e->sport = bpf_ntohs(u.sport);
	e->dport = bpf_ntohs(u.dport);
	e->magic_ok = u.p[0] == 'S' && u.p[1] == 'M' && u.p[2] == 'T' && u.p[3] == 'U';
	e->kind = u.p[5];
	e->seq = bpf_be64_to_cpu(*(__u64 *)&u.p[8]);
	return 1;
}

/* ip points at an IPv4 or IPv6 header: finds UDP behind it. */
static __always_inline int read_ip(const __u8 *ip, struct layer_event *e)
{
	__u8 b[10];

	if (bpf_probe_read_kernel(b, sizeof(b), ip))
		return 0;
	if ((b[0] >> 4) == 4) {
		if (b[9] != IPPROTO_UDP)
			return 0;
		return read_udp(ip + (b[0] & 15) * 4, e);
	}
	if ((b[0] >> 4) == 6) {
		if (b[6] != IPPROTO_UDP)
			return 0;
		return read_udp(ip + 40, e);
	}
	return 0;
}

static __always_inline int read_eth(const __u8 *eth, struct layer_event *e)
{
	__be16 proto;

	if (bpf_probe_read_kernel(&proto, sizeof(proto), eth + 12))
		return 0;
	if (proto != bpf_htons(0x0800) && proto != bpf_htons(0x86DD))
		return 0;
	return read_ip(eth + 14, e);
}

/*
 * Finds the UDP datagram in skb, wherever this layer has it: the header
 * offsets are not all set at every layer (a received skb built by a driver
 * has no network header until __netif_receive_skb_core sets it; on transmit
 * skb->data is the Ethernet header, on receive the IP header). Tries them in
 * turn; the port check tells a right guess from a wrong one.
 * Returns 1 if the skb is UDP to or from cfg_port.
 */
static __always_inline int parse_skb(struct sk_buff *skb, struct layer_event *e)
{
	__u8 *head = BPF_CORE_READ(skb, head);
	__u8 *data = BPF_CORE_READ(skb, data);
	__u16 nh = BPF_CORE_READ(skb, network_header);
	__u16 mh = BPF_CORE_READ(skb, mac_header);

	e->skb = (__u64)skb;
	e->ifindex = (__u16)BPF_CORE_READ(skb, dev, ifindex);
	e->netns = BPF_CORE_READ(skb, dev, nd_net.net, ns.inum);
	if (!e->netns) {
		/* No device any more (UDP clears skb->dev once queued on the
		 * socket): the owning socket's namespace, else the current task's
		 * (skb_copy_datagram_iovec and consume_skb of a received datagram
		 * run in the receiving process). */
		struct sock *sk = BPF_CORE_READ(skb, sk);

		e->netns = sk ? BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum) : current_netns();
	}
	if (nh != 0xffff && nh != 0 && read_ip(head + nh, e)) {
		e->seq_src = SEQ_NETWORK_HDR;
		return 1;
	}
	if (mh != 0xffff && read_eth(head + mh, e)) {
		e->seq_src = SEQ_MAC_HDR;
		return 1;
	}
	if (read_ip(data, e)) {
		e->seq_src = SEQ_DATA_IP;
		return 1;
	}
	if (read_eth(data, e)) {
		e->seq_src = SEQ_DATA_ETH;
		return 1;
	}
	return 0;
}

/* ctx: the tracepoint record; name_loc: its __data_loc_name field (offset
 * in the low 16 bits, length in the high 16), or 0 */
static __always_inline int skb_event(void *ctx, __u32 name_loc, void *skbaddr, __u32 len, __s32 ret,
				     __u16 id)
{
	struct layer_event e;

	base(&e, id);
	e.len = len;
	e.ret = ret;
	if (!parse_skb((struct sk_buff *)skbaddr, &e))
		return 0;
	if (name_loc)
		bpf_probe_read_kernel_str(e.dev, sizeof(e.dev), (char *)ctx + (name_loc & 0xffff));
	emit(&e);
	return 0;
}

/* ---- device layer ---- */

SEC("tracepoint/net/net_dev_queue")
int tp_net_dev_queue(struct trace_event_raw_net_dev_template *ctx)
{
	return skb_event(ctx, ctx->__data_loc_name, ctx->skbaddr, ctx->len, 0, EV_NET_DEV_QUEUE);
}

SEC("tracepoint/net/net_dev_start_xmit")
int tp_net_dev_start_xmit(struct trace_event_raw_net_dev_start_xmit *ctx)
{
	return skb_event(ctx, ctx->__data_loc_name, (void *)ctx->skbaddr, ctx->len, 0, EV_NET_DEV_START_XMIT);
}

SEC("tracepoint/net/net_dev_xmit")
int tp_net_dev_xmit(struct trace_event_raw_net_dev_xmit *ctx)
{
	return skb_event(ctx, ctx->__data_loc_name, ctx->skbaddr, ctx->len, ctx->rc, EV_NET_DEV_XMIT);
}

SEC("tracepoint/net/netif_rx")
int tp_netif_rx(struct trace_event_raw_net_dev_template *ctx)
{
	return skb_event(ctx, ctx->__data_loc_name, ctx->skbaddr, ctx->len, 0, EV_NETIF_RX);
}

SEC("tracepoint/net/napi_gro_receive_entry")
int tp_napi_gro_receive_entry(struct trace_event_raw_net_dev_rx_verbose_template *ctx)
{
	return skb_event(ctx, ctx->__data_loc_name, (void *)ctx->skbaddr, ctx->len, 0, EV_NAPI_GRO_RECEIVE);
}

SEC("tracepoint/net/netif_receive_skb")
int tp_netif_receive_skb(struct trace_event_raw_net_dev_template *ctx)
{
	return skb_event(ctx, ctx->__data_loc_name, ctx->skbaddr, ctx->len, 0, EV_NETIF_RECEIVE_SKB);
}

/* ---- socket layer ---- */

static __always_inline int sock_port_matches(struct sock *sk)
{
	__u16 num = BPF_CORE_READ(sk, __sk_common.skc_num);       /* host order */
	__be16 dport = BPF_CORE_READ(sk, __sk_common.skc_dport); /* network order */

	return num == cfg_port || dport == bpf_htons(cfg_port);
}

SEC("tracepoint/sock/sk_data_ready")
int tp_sk_data_ready(struct trace_event_raw_sk_data_ready *ctx)
{
	struct sock *sk = (struct sock *)ctx->skaddr;
	struct sk_buff *tail;
	struct layer_event e;

	if (ctx->protocol != IPPROTO_UDP)
		return 0;
	base(&e, EV_SK_DATA_READY);
	/* UDP queues the datagram at the tail of sk_receive_queue right before
	 * calling sk_data_ready: read the packet from there. */
	tail = BPF_CORE_READ(sk, sk_receive_queue.prev);
	if (tail && (void *)tail != (void *)&sk->sk_receive_queue && parse_skb(tail, &e)) {
		e.seq_src = SEQ_SOCK_QUEUE;
		e.len = BPF_CORE_READ(tail, len);
		e.ifindex = 0; /* skb->dev of a queued skb is stale or NULL */
	} else if (!sock_port_matches(sk)) {
		return 0;
	}
	e.netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	emit(&e);
	return 0;
}

SEC("tracepoint/skb/skb_copy_datagram_iovec")
int tp_skb_copy_datagram_iovec(struct trace_event_raw_skb_copy_datagram_iovec *ctx)
{
	return skb_event(ctx, 0, (void *)ctx->skbaddr, (__u32)ctx->len, 0, EV_SKB_COPY_DATAGRAM);
}

static __always_inline int sock_len_event(struct trace_event_raw_sock_msg_length *ctx, __u16 id)
{
	struct sock *sk = (struct sock *)ctx->sk;
	struct layer_event e;

	if (ctx->protocol != IPPROTO_UDP || !sock_port_matches(sk))
		return 0;
	base(&e, id);
	e.ret = ctx->ret;
	e.netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	emit(&e);
	return 0;
}

SEC("tracepoint/sock/sock_recv_length")
int tp_sock_recv_length(struct trace_event_raw_sock_msg_length *ctx)
{
	return sock_len_event(ctx, EV_SOCK_RECV_LENGTH);
}

SEC("tracepoint/sock/sock_send_length")
int tp_sock_send_length(struct trace_event_raw_sock_msg_length *ctx)
{
	return sock_len_event(ctx, EV_SOCK_SEND_LENGTH);
}

/* ---- syscalls ---- */

static __always_inline int comm_is(const char *comm, const volatile char *want)
{
	int i;

#pragma unroll
	for (i = 0; i < 16; i++) {
		if (comm[i] != want[i])
			return 0;
		if (!comm[i])
			return 1;
	}
	return 1;
}

static __always_inline int traced(void)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	char comm[16];

	if (bpf_map_lookup_elem(&tgids, &tgid))
		return 1;
	if (bpf_get_current_comm(comm, sizeof(comm)))
		return 0;
	return (cfg_comm1[0] && comm_is(comm, cfg_comm1)) || (cfg_comm2[0] && comm_is(comm, cfg_comm2));
}

/* First data buffer of a msghdr / mmsghdr (user memory). */
static __always_inline __u64 msghdr_buf(__u64 umsg)
{
	struct user_msghdr m;
	struct iovec iov;

	if (bpf_probe_read_user(&m, sizeof(m), (void *)umsg) || !m.msg_iov || !m.msg_iovlen)
		return 0;
	if (bpf_probe_read_user(&iov, sizeof(iov), m.msg_iov))
		return 0;
	return (__u64)iov.iov_base;
}

static __always_inline void read_user_payload(__u64 buf, struct layer_event *e)
{
	__u8 p[16];

	if (!buf || bpf_probe_read_user(p, sizeof(p), (void *)buf))
		return;
	e->magic_ok = p[0] == 'S' && p[1] == 'M' && p[2] == 'T' && p[3] == 'U';
	e->kind = p[5];
	e->seq = bpf_be64_to_cpu(*(__u64 *)&p[8]);
	e->seq_src = SEQ_USER_BUF;
}

SEC("raw_tracepoint/sys_enter")
int raw_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	/* The arguments as plain words: vmlinux.h declares args[] as a
	 * zero-length array, which a CO-RE relocation (aya's) refuses to
	 * index. */
	const __u64 *args = (const __u64 *)ctx;
	struct pt_regs *regs = (struct pt_regs *)args[0];
	long nr = (long)args[1];
	struct layer_event e;
	__u64 buf = 0;

	switch (nr) {
	case NR_sendto: case NR_sendmsg: case NR_sendmmsg:
	case NR_recvfrom: case NR_recvmsg: case NR_recvmmsg:
	case NR_poll: case NR_ppoll: case NR_select: case NR_pselect6:
	case NR_epoll_wait: case NR_epoll_pwait:
		break;
	default:
		return 0;
	}
	if (!traced())
		return 0;

	if (nr == NR_sendto || nr == NR_sendmsg || nr == NR_sendmmsg) {
		base(&e, EV_SYS_SEND_ENTER);
		if (nr == NR_sendto) {
			buf = BPF_CORE_READ(regs, si);
			e.len = (__u32)BPF_CORE_READ(regs, dx);
		} else {
			buf = msghdr_buf(BPF_CORE_READ(regs, si));
		}
		read_user_payload(buf, &e);
	} else if (nr == NR_recvfrom || nr == NR_recvmsg || nr == NR_recvmmsg) {
		struct recv_call rc = {};
		__u64 key = bpf_get_current_pid_tgid();

		base(&e, EV_SYS_RECV_ENTER);
		if (nr == NR_recvfrom) {
			rc.buf = BPF_CORE_READ(regs, si);
			rc.len = BPF_CORE_READ(regs, dx);
			e.len = (__u32)rc.len;
		} else {
			rc.buf = msghdr_buf(BPF_CORE_READ(regs, si));
		}
		bpf_map_update_elem(&inflight, &key, &rc, BPF_ANY);
	} else {
		base(&e, EV_SYS_WAIT_ENTER);
	}
	e.ret = (__s32)nr; /* enter events: ret holds the syscall number */
	e.netns = current_netns();
	emit(&e);
	return 0;
}

SEC("raw_tracepoint/sys_exit")
int raw_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	const __u64 *args = (const __u64 *)ctx;
	struct pt_regs *regs = (struct pt_regs *)args[0];
	long ret = (long)args[1];
	long nr = BPF_CORE_READ(regs, orig_ax);
	struct layer_event e;

	switch (nr) {
	case NR_sendto: case NR_sendmsg: case NR_sendmmsg:
		if (!traced())
			return 0;
		base(&e, EV_SYS_SEND_EXIT);
		break;
	case NR_recvfrom: case NR_recvmsg: case NR_recvmmsg: {
		__u64 key = bpf_get_current_pid_tgid();
		struct recv_call *rc = bpf_map_lookup_elem(&inflight, &key);

		if (!rc)
			return 0; /* not traced (or entered before we attached) */
		base(&e, EV_SYS_RECV_EXIT);
		if (ret >= 16)
			read_user_payload(rc->buf, &e);
		bpf_map_delete_elem(&inflight, &key);
		break;
	}
	case NR_poll: case NR_ppoll: case NR_select: case NR_pselect6:
	case NR_epoll_wait: case NR_epoll_pwait:
		if (!traced())
			return 0;
		base(&e, EV_SYS_WAIT_EXIT);
		break;
	default:
		return 0;
	}
	e.ret = (__s32)ret;
	e.netns = current_netns();
	emit(&e);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
