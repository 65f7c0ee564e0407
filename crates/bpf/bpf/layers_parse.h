/* layers.bpf.c's reading of packets: a UDP datagram of stackmeter's found
 * in an skb (once per packet, where it enters the path), and which half of
 * the path a socket receives. Included by layers.bpf.c only. */
#ifndef LAYERS_PARSE_H
#define LAYERS_PARSE_H

/* Enough of a frame for Ethernet, IPv6 and UDP with stackmeter's first 16
 * payload bytes. */
#define HEAD_BYTES 80

/* The payload's first 16 bytes at `p`: 1 and *key, *half set when they are
 * stackmeter's (magic "SMTU", kind 1 request or 2 reply). */
static __always_inline int smtu(const __u8 *p, __u64 *key, __u32 *half)
{
	__u64 seq = 0;
	int i;

	if (p[0] != 'S' || p[1] != 'M' || p[2] != 'T' || p[3] != 'U' || (p[5] != 1 && p[5] != 2))
		return 0;
	/* Byte by byte: p may sit at any offset of the caller's buffer. */
#pragma unroll
	for (i = 8; i < 16; i++)
		seq = (seq << 8) | p[i];
	*key = seq;
	*half = p[5] == 2;
	return 1;
}

/* The UDP header's offset in b (an IP header at offset `ip`), when the
 * datagram is to or from cfg_port; else 0. */
static __always_inline __u32 udp_at(const __u8 *b, __u32 ip)
{
	__u32 udp;
	__u16 sport, dport;

	if (ip + 40 + 8 + 16 > HEAD_BYTES)
		return 0;
	if ((b[ip] >> 4) == 4 && b[ip + 9] == IPPROTO_UDP)
		udp = ip + (b[ip] & 15) * 4;
	else if ((b[ip] >> 4) == 6 && b[ip + 6] == IPPROTO_UDP)
		udp = ip + 40;
	else
		return 0;
	if (udp + 8 + 16 > HEAD_BYTES)
		return 0;
	sport = ((__u16)b[udp] << 8) | b[udp + 1];
	dport = ((__u16)b[udp + 2] << 8) | b[udp + 3];
	return sport == cfg_port || dport == cfg_port ? udp : 0;
}

/* Whether the skb holds a datagram of stackmeter's to or from cfg_port:
 * then *r is its reference and its trip is begun. skb->data is the
 * Ethernet header on the way out and the IP header on the way in: both are
 * tried, the port telling a right guess from a wrong one. */
static __always_inline int parse_packet(struct sk_buff *skb, struct skb_ref *r, __u32 type)
{
	__u8 b[HEAD_BYTES];
	__u8 *data = BPF_CORE_READ(skb, data);
	__u32 udp = 0;

	if (bpf_probe_read_kernel(b, sizeof(b), data))
		return 0;
	if (type == T_QUEUE && ((b[12] == 0x08 && b[13] == 0x00) || (b[12] == 0x86 && b[13] == 0xdd)))
		udp = udp_at(b, 14);
	if (!udp)
		udp = udp_at(b, 0);
	if (!udp || udp + 8 + 16 > HEAD_BYTES)
		return 0;
	if (!smtu(&b[udp + 8], &r->key, &r->half))
		return 0;
	r->live = 1;
	begin(r->key);
	return 1;
}

/* Which half of the path a socket receives: 0 the responder's (bound to
 * cfg_port), 1 the client's (connected to it), -1 neither. */
static __always_inline int udp_sock_half(struct sock *sk)
{
	/* Both ports in one read: skc_portpair is skc_dport (network order)
	 * then skc_num (host order), as they lie in memory. */
	__u32 pp = BPF_CORE_READ(sk, __sk_common.skc_portpair);
	__u8 *b = (__u8 *)&pp;

	if (*(__u16 *)&b[2] == cfg_port)
		return 0;
	return (((__u16)b[0] << 8) | b[1]) == cfg_port ? 1 : -1;
}

#endif
