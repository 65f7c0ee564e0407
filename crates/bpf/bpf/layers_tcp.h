/* layers.bpf.c's TCP mode: a transaction of rr (a request of unit bytes one
 * way, a response the other way, one connection per size pair, one
 * transaction outstanding) located by the sockets' byte counts. The loader
 * registers both ends of a connection in `conns`; the client's first send
 * of the data phase anchors the counts (the bytes each side sent before
 * it: the session header, the status record), and from then on a byte's
 * offset in its direction, less that base, divided by the message's size,
 * is its transaction. Included by layers.bpf.c only. */
#ifndef LAYERS_TCP_H
#define LAYERS_TCP_H

/* Positions of the TCP mode that are not a packet's (see position()). */
#define TCP_FIRST_QUEUED 1 /* the request's first byte queued */
#define TCP_ON_RESPONDER 6 /* the whole request on the responder's socket */
#define TCP_READ 7         /* the responder's read returned its last byte */
#define TCP_WRITE 8        /* the responder's write of the response's last byte */
#define TCP_ON_CLIENT 13   /* the whole response on the client's socket */

/* One end of a registered connection. */
struct conn {
	__u64 in_base;  /* bytes received on this socket before the data phase */
	__u64 out_base; /* bytes sent from it before the data phase */
	__u32 unit_in;  /* a message arriving: the request (responder) or the response (client) */
	__u32 unit_out; /* a message leaving */
	__u32 index;    /* the connection's number, the key's high bits */
	__u8 responder; /* 1: the responder's end */
	__u8 anchored;  /* the bases are known */
	__u16 pad;
};

_Static_assert(sizeof(struct conn) == 32, "src/layers.rs writes 32 bytes: change both");

/* Key: local port << 16 | remote port, host order. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct conn);
} conns SEC(".maps");

static __always_inline __u32 conn_key(struct sock *sk, __u32 *peer)
{
	/* Both ports in one read: skc_portpair is skc_dport (network order)
	 * then skc_num (host order), as they lie in memory. */
	__u32 pp = BPF_CORE_READ(sk, __sk_common.skc_portpair);
	__u8 *b = (__u8 *)&pp;
	__u16 dport = ((__u16)b[0] << 8) | b[1];
	__u16 num = *(__u16 *)&b[2];

	*peer = ((__u32)dport << 16) | num;
	return ((__u32)num << 16) | dport;
}

static __always_inline struct conn *conn_of(struct sock *sk, __u32 *peer)
{
	__u32 key;

	if (!sk)
		return NULL;
	key = conn_key(sk, peer);
	return bpf_map_lookup_elem(&conns, &key);
}

static __always_inline __u64 trip_key(struct conn *c, __u64 i)
{
	return ((__u64)c->index << 40) | i;
}

/* The offset in the outgoing stream of sequence number `seq` (its
 * distance from the first unacknowledged byte, added to the bytes acked:
 * 64 bits, however much has gone). */
static __always_inline __u64 out_offset(struct tcp_sock *tp, __u32 seq)
{
	return BPF_CORE_READ(tp, bytes_acked) + (__u32)(seq - BPF_CORE_READ(tp, snd_una));
}

/* net_dev_queue of a TCP segment: the request's first byte (a trip
 * begins), and a message's last byte (its skb joins the path, for the
 * driver and the stack). */
static __always_inline void tcp_queued(struct sk_buff *skb)
{
	struct sock *sk = BPF_CORE_READ(skb, sk);
	struct conn *c;
	__u8 b[HEAD_BYTES];
	__u32 peer, tcp, seq, hdr, len;
	__u64 off, end;
	int hit = 0;
	struct cached *slot = cache_slot(&skbs, (__u64)skb, &hit);

	if (!slot)
		return;
	if (hit)
		slot->addr = 0; /* a new packet at an address that was on the path */
	c = conn_of(sk, &peer);
	if (!c || !c->anchored || !c->unit_out)
		return;
	if (bpf_probe_read_kernel(b, sizeof(b), BPF_CORE_READ(skb, data)))
		return;
	if (b[12] == 0x08 && b[13] == 0x00 && (b[14] >> 4) == 4)
		tcp = 14 + (b[14] & 15) * 4;
	else if (b[12] == 0x86 && b[13] == 0xdd)
		tcp = 14 + 40;
	else
		return;
	if (tcp + 20 > HEAD_BYTES)
		return;
	seq = ((__u32)b[tcp + 4] << 24) | ((__u32)b[tcp + 5] << 16) | ((__u32)b[tcp + 6] << 8) | b[tcp + 7];
	hdr = tcp + (b[tcp + 12] >> 4) * 4;
	len = BPF_CORE_READ(skb, len);
	if (len <= hdr)
		return; /* no data: an ACK */
	len -= hdr;
	off = out_offset((struct tcp_sock *)sk, seq) - c->out_base;
	end = off + len;
	if (!c->responder && off % c->unit_out == 0) {
		begin(trip_key(c, off / c->unit_out));
		mark(trip_key(c, off / c->unit_out), TCP_FIRST_QUEUED);
	}
	if (end % c->unit_out)
		return;
	slot->addr = (__u64)skb;
	slot->ref.key = trip_key(c, end / c->unit_out - 1);
	slot->ref.half = c->responder;
	slot->ref.live = 1;
	mark(slot->ref.key, position(T_QUEUE, slot->ref.half));
}

/* sk_data_ready: a whole message is on the socket when the bytes received
 * reach its end. */
static __always_inline void tcp_on_socket(struct sock *sk)
{
	__u32 peer;
	struct conn *c = conn_of(sk, &peer);
	__u64 n;

	if (!c || !c->anchored || !c->unit_in)
		return;
	n = BPF_CORE_READ((struct tcp_sock *)sk, bytes_received) - c->in_base;
	if (n && n % c->unit_in == 0)
		mark(trip_key(c, n / c->unit_in - 1), c->responder ? TCP_ON_RESPONDER : TCP_ON_CLIENT);
}

/* sock_recv_length: the responder's read that took the request's last
 * byte (bytes received less those still unread). */
static __always_inline void tcp_read(struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 peer;
	struct conn *c = conn_of(sk, &peer);
	__u64 n;

	if (!c || !c->anchored || !c->responder || !c->unit_in)
		return;
	n = BPF_CORE_READ(tp, bytes_received) - (__u32)(BPF_CORE_READ(tp, rcv_nxt) - BPF_CORE_READ(tp, copied_seq));
	n -= c->in_base;
	if (n && n % c->unit_in == 0)
		mark(trip_key(c, n / c->unit_in - 1), TCP_READ);
}

/* The client's first send of the data phase: the bases of both ends. In
 * the client's own offsets (bytes_acked, which counts its SYN) and in the
 * responder's (bytes_received: data only), the client's bytes so far
 * (bytes_sent: the data it has sent, all acknowledged by now). */
static __always_inline void anchor(struct tcp_sock *tp, struct conn *c, __u32 peer)
{
	struct conn *p = bpf_map_lookup_elem(&conns, &peer);

	c->out_base = out_offset(tp, BPF_CORE_READ(tp, write_seq));
	c->in_base = BPF_CORE_READ(tp, bytes_received);
	c->anchored = 1;
	if (p) {
		p->in_base = BPF_CORE_READ(tp, bytes_sent);
		p->out_base = c->in_base;
		p->anchored = 1;
	}
}

/* tcp_sendmsg_locked: anchors a client's connection; on the responder's
 * end, the write holding the response's last byte. */
static __always_inline void tcp_write(struct sock *sk, struct msghdr *msg)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 peer;
	struct conn *c = conn_of(sk, &peer);
	__u64 w, size, last;

	if (!c || !cfg_tcp)
		return;
	if (!c->responder) {
		if (!c->anchored)
			anchor(tp, c, peer);
		return;
	}
	if (!c->anchored || !c->unit_out)
		return;
	w = out_offset(tp, BPF_CORE_READ(tp, write_seq)) - c->out_base;
	size = BPF_CORE_READ(msg, msg_iter.count);
	last = (w / c->unit_out + 1) * c->unit_out; /* the next message's end */
	if (size && last <= w + size)
		mark(trip_key(c, last / c->unit_out - 1), TCP_WRITE);
}

#endif
