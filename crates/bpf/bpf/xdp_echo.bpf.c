// SPDX-License-Identifier: GPL-2.0
/*
 * xdp_echo: answers stackmeter UDP echo requests (docs/protocol.md section 4)
 * at the driver, or echoes any UDP datagram to the port (plain mode).
 *
 * Ethernet + IPv4 (no options, not fragmented) or IPv6 (UDP directly after
 * the fixed header). Everything else goes up the stack unchanged (XDP_PASS).
 *
 * Echo rule as implemented here (bytes at UDP payload offsets):
 *   payload < 40 bytes            -> XDP_PASS (the application decides)
 *   magic != "SMTU"               -> XDP_PASS (not ours)
 *   kind == 4 (stream data)       -> XDP_PASS (the application counts it)
 *   kind != 1                     -> XDP_DROP (never answer a reply/refusal)
 *   version != 1                  -> XDP_PASS (the application refuses it)
 *   flags bit 2 (MAC trailer)     -> XDP_PASS (authenticated: application)
 *   flags bit 3 (count request)   -> answered, without the count block
 *   otherwise: version 1, kind 2, code 0, flags 1, server receive time and
 *   server send time = bpf_ktime_get_ns() (big-endian, like every field),
 *   payload unchanged, same length, back to the source: XDP_TX.
 *
 * The UDP checksum is kept valid: swapping addresses and ports does not
 * change a one's complement sum, so only the 20 rewritten header bytes are
 * folded in incrementally (RFC 1624). If the incoming checksum field only
 * holds the pseudo-header sum (CHECKSUM_PARTIAL: a datagram sent by a local
 * socket over veth or lo, whose checksum was left to "hardware"), the
 * incremental update would give a wrong checksum, so the program then
 * computes the whole checksum from scratch (see full_udp_csum).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Set by the loader before load (libbpf skeleton: skel->rodata->...,
 * aya: EbpfLoader::set_global). volatile keeps clang from folding them. */
volatile const __u16 cfg_port = 24680; /* host byte order */
volatile const __u8 cfg_plain = 0;     /* 1: echo any datagram unchanged */

enum xdp_echo_counter {
	C_ANSWERED = 0,      /* stackmeter echo reply sent (XDP_TX) */
	C_ANSWERED_PLAIN,    /* plain echo sent (XDP_TX) */
	C_ANSWERED_BYTES,    /* UDP payload bytes sent back (both modes) */
	C_PASS_NOT_OURS,     /* not IPv4/IPv6 UDP, or multicast/broadcast */
	C_PASS_OTHER_PORT,   /* UDP to another port */
	C_PASS_IP_SPECIAL,   /* IPv4 options or fragment, IPv6 ext headers */
	C_PASS_BAD_LEN,      /* UDP length disagrees with the packet */
	C_PASS_SHORT,        /* payload shorter than 40 bytes */
	C_PASS_BAD_MAGIC,    /* not "SMTU" */
	C_PASS_VERSION,      /* version != 1: the application refuses it */
	C_PASS_MAC,          /* flags bit 2: authenticated, application */
	C_PASS_COUNT,        /* flags bit 3: answered without the count block */
	C_PASS_STREAM,       /* kind 4: stream data, application counts */
	C_DROP_NOT_REQUEST,  /* kind 2, 3 or unknown: dropped */
	C_PASS_V6_NOCSUM,    /* IPv6 with checksum 0 (invalid) */
	C_CSUM_FULL,         /* checksum recomputed from scratch (partial in) */
	C_CSUM_ZERO,         /* IPv4 without checksum (0): left 0 */
	C_PASS_TOO_BIG,      /* partial checksum and > MAX_FULL_CSUM bytes */
	C_DROP_CSUM_FAIL,    /* recomputing the checksum failed (helper error) */
	C_NR
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

#define SMTU_HDR 40
#define KIND_REQUEST 1
#define KIND_REPLY 2
#define KIND_STREAM 4
#define FLAG_SERVER_TS 1
#define FLAG_MAC 4
#define FLAG_COUNT 8
/* Largest UDP datagram (header + payload) whose checksum the program
 * recomputes from scratch; it works through it CHUNK bytes at a time. */
#define CHUNK 256
#define MAX_CHUNKS 256
#define MAX_FULL_CSUM (CHUNK * MAX_CHUNKS)

static __always_inline void count(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += n;
}

static __always_inline __u32 fold32(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return s;
}

static __always_inline __u32 fold64(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	return fold32((__u32)s);
}

/* One's complement sum, in memory (network) order, of the pseudo-header. */
static __always_inline __u64 pseudo_sum_v4(const struct iphdr *ip, __u16 udp_len_be)
{
	__u64 s = 0;

	s += ip->saddr;
	s += ip->daddr;
	s += bpf_htons(IPPROTO_UDP);
	s += udp_len_be;
	return s;
}

static __always_inline __u64 pseudo_sum_v6(const struct ipv6hdr *ip6, __u16 udp_len_be)
{
	const __u32 *a = (const __u32 *)&ip6->saddr;
	__u64 s = 0;
	int i;

#pragma unroll
	for (i = 0; i < 8; i++)
		s += a[i]; /* saddr then daddr: contiguous in ipv6hdr */
	s += bpf_htons(IPPROTO_UDP);
	s += udp_len_be;
	return s;
}

/*
 * Sum of the whole UDP datagram (udp header with its checksum field taken
 * as 0, then the payload), udp_len bytes starting at packet offset udp_off.
 * Uses bpf_xdp_load_bytes into a stack buffer and bpf_csum_diff, a chunk at
 * a time, so the verifier needs no variable-offset packet pointers.
 * Returns -1 when it cannot (too long or a helper failed).
 */
static __always_inline __s64 datagram_sum(struct xdp_md *ctx, __u32 udp_off, __u32 udp_len)
{
	__u8 buf[CHUNK];
	__u64 s = 0;
	__u32 off = 0;
	/* off only takes multiples of CHUNK, so the last, short chunk is
	 * udp_len % CHUNK bytes. Computed once, outside the loop, so that
	 * clang cannot drop the mask the verifier needs for its bounds. */
	__u32 tail = udp_len & (CHUNK - 1);
	__u32 tail_padded = (tail + 3) & ~3U;
	int i;

	if (udp_len > MAX_FULL_CSUM)
		return -1;
	for (i = 0; i < MAX_CHUNKS; i++) {
		__s64 r;

		if (off >= udp_len)
			break;
		if (udp_len - off >= CHUNK) {
			if (bpf_xdp_load_bytes(ctx, udp_off + off, buf, CHUNK))
				return -1;
			r = bpf_csum_diff(0, 0, (__be32 *)buf, CHUNK, 0);
		} else {
			__builtin_memset(buf, 0, sizeof(buf));
			if (tail == 0 || tail_padded > CHUNK)
				return -1;
			if (bpf_xdp_load_bytes(ctx, udp_off + off, buf, tail))
				return -1;
			r = bpf_csum_diff(0, 0, (__be32 *)buf, tail_padded, 0);
		}
		if (r < 0)
			return -1;
		s += (__u32)r;
		off += CHUNK;
	}
	if (off < udp_len)
		return -1;
	return (__s64)s;
}

/* Rewrites an echo request into its reply. Returns the XDP action; *sum_old
 * and *sum_new get the one's complement sums of the rewritten 16-bit words
 * before and after, for the incremental checksum update. */
static __always_inline int smtu_rewrite(__u8 *p, void *data_end, __u32 payload_len,
					__u32 *sum_old, __u32 *sum_new)
{
	__u16 *w = (__u16 *)p;
	__u64 now;
	__u32 so = 0, sn = 0;
	__u8 newhdr[20]; /* bytes 4..8 then 24..40 */
	__u16 *nw = (__u16 *)newhdr;
	int i;

	if (payload_len < SMTU_HDR) {
		count(C_PASS_SHORT, 1);
		return XDP_PASS;
	}
	if ((void *)(p + SMTU_HDR) > data_end) {
		count(C_PASS_BAD_LEN, 1);
		return XDP_PASS;
	}
	if (p[0] != 'S' || p[1] != 'M' || p[2] != 'T' || p[3] != 'U') {
		count(C_PASS_BAD_MAGIC, 1);
		return XDP_PASS;
	}
	if (p[5] == KIND_STREAM) {
		count(C_PASS_STREAM, 1);
		return XDP_PASS;
	}
	if (p[5] != KIND_REQUEST) {
		count(C_DROP_NOT_REQUEST, 1);
		return XDP_DROP;
	}
	if (p[4] != 1) {
		count(C_PASS_VERSION, 1);
		return XDP_PASS;
	}
	if (p[7] & FLAG_MAC) {
		count(C_PASS_MAC, 1);
		return XDP_PASS;
	}
	/* A request for the responder's count (bit 3) is answered too, with
	 * flags 1: the reply says no count block, and the client reports the
	 * loss split as unknown. Counted apart. */
	if (p[7] & FLAG_COUNT)
		count(C_PASS_COUNT, 1);

	now = bpf_ktime_get_ns();
	newhdr[0] = 1;              /* version */
	newhdr[1] = KIND_REPLY;     /* kind */
	newhdr[2] = 0;              /* code */
	newhdr[3] = FLAG_SERVER_TS; /* flags: server times valid, no stamp block */
#pragma unroll
	for (i = 0; i < 8; i++) {
		__u8 b = (__u8)(now >> (56 - 8 * i)); /* big-endian */

		newhdr[4 + i] = b;  /* server receive time */
		newhdr[12 + i] = b; /* server send time (same instant in-kernel) */
	}

	/* words 2,3 (bytes 4..8) and 12..19 (bytes 24..40) */
	so += w[2];
	so += w[3];
	sn += nw[0];
	sn += nw[1];
	w[2] = nw[0];
	w[3] = nw[1];
#pragma unroll
	for (i = 0; i < 8; i++) {
		so += w[12 + i];
		sn += nw[2 + i];
		w[12 + i] = nw[2 + i];
	}
	*sum_old = so;
	*sum_new = sn;
	return XDP_TX;
}

static __always_inline void swap_mac(struct ethhdr *eth)
{
	__u8 tmp[ETH_ALEN];

	__builtin_memcpy(tmp, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, tmp, ETH_ALEN);
}

/* New UDP checksum field from the old one: incremental, or from scratch when
 * the old one holds only the pseudo-header sum. Returns 0 on success. */
static __always_inline int fix_udp_csum(struct xdp_md *ctx, struct udphdr *udp, __u64 pseudo,
					__u32 udp_off, __u32 udp_len, __u32 so, __u32 sn)
{
	__u16 old = udp->check;
	__u32 s;

	/* A checksum that equals the folded pseudo-header sum itself (not its
	 * complement) is a CHECKSUM_PARTIAL leftover (or a 1 in 65536 chance;
	 * recomputing is right in that case too). */
	if (old == (__u16)fold64(pseudo)) {
		__s64 d;

		udp->check = 0;
		d = datagram_sum(ctx, udp_off, udp_len);
		if (d < 0) {
			udp->check = old;
			return -1;
		}
		s = fold64(pseudo + (__u64)d);
		count(C_CSUM_FULL, 1);
	} else {
		/* RFC 1624 eqn 3: HC' = ~(~HC + ~m + m') */
		s = (__u16)~old;
		s += (__u16)~fold32(so);
		s += fold32(sn);
	}
	s = (__u16)~fold32(s);
	udp->check = s ? (__u16)s : 0xffff;
	return 0;
}

/* The UDP header of an Ethernet frame holding IPv4 (no options, not a
 * fragment) or IPv6 (UDP right after the fixed header), unicast: 0 and
 * *udp, *v6 set; else the action for the frame (counted). */
static __always_inline int find_udp(void *data, void *data_end, struct udphdr **udp, int *v6)
{
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end || (eth->h_dest[0] & 1)) /* multicast or broadcast: never answer */
		goto not_ours;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end || ip->protocol != IPPROTO_UDP)
			goto not_ours;
		if (ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3fff))) {
			count(C_PASS_IP_SPECIAL, 1);
			return XDP_PASS;
		}
		*udp = (void *)(ip + 1);
		*v6 = 0;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		/* extension headers (or not UDP), multicast: not handled here */
		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_UDP || ip6->daddr.in6_u.u6_addr8[0] == 0xff)
			goto not_ours;
		*udp = (void *)(ip6 + 1);
		*v6 = 1;
	} else {
		goto not_ours;
	}
	if ((void *)(*udp + 1) > data_end)
		goto not_ours;
	return 0;
not_ours:
	count(C_PASS_NOT_OURS, 1);
	return XDP_PASS;
}

/* The pseudo-header's sum of a datagram to answer, once its lengths agree
 * with the IP header's: 0 and *pseudo set; else the action (counted). */
static __always_inline int check_lengths(void *data, void *data_end, struct udphdr *udp, int v6,
					  __u64 *pseudo)
{
	struct ethhdr *eth = data;
	__u32 udp_len = bpf_ntohs(udp->len);

	if (udp_len < sizeof(*udp) || (void *)udp + udp_len > data_end) {
		count(C_PASS_BAD_LEN, 1);
		return XDP_PASS;
	}
	if (v6) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end || bpf_ntohs(ip6->payload_len) != udp_len) {
			count(C_PASS_BAD_LEN, 1);
			return XDP_PASS;
		}
		if (udp->check == 0) {
			count(C_PASS_V6_NOCSUM, 1);
			return XDP_PASS;
		}
		*pseudo = pseudo_sum_v6(ip6, udp->len);
	} else {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end || bpf_ntohs(ip->tot_len) != sizeof(*ip) + udp_len) {
			count(C_PASS_BAD_LEN, 1);
			return XDP_PASS;
		}
		*pseudo = pseudo_sum_v4(ip, udp->len);
	}
	/* A partial checksum (see fix_udp_csum) we could not recompute: leave
	 * the datagram to the application untouched. */
	if (udp->check == (__u16)fold64(*pseudo) && udp_len > MAX_FULL_CSUM) {
		count(C_PASS_TOO_BIG, 1);
		return XDP_PASS;
	}
	return 0;
}

/* Sends the frame back where it came from: addresses and ports swapped,
 * the hop limit 64. The packet pointers are reloaded (the checksum's
 * helpers may have invalidated them). Returns the action. */
static __always_inline int turn_around(struct xdp_md *ctx, int v6)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u16 port;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (v6) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct in6_addr a;

		if ((void *)(ip6 + 1) + sizeof(struct udphdr) > data_end)
			return XDP_DROP;
		udp = (void *)(ip6 + 1);
		a = ip6->saddr;
		ip6->saddr = ip6->daddr;
		ip6->daddr = a;
		ip6->hop_limit = 64;
	} else {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 a = ip->saddr;
		__u16 oldw, neww;
		__u32 s;

		if ((void *)(ip + 1) + sizeof(struct udphdr) > data_end)
			return XDP_DROP;
		udp = (void *)(ip + 1);
		ip->saddr = ip->daddr;
		ip->daddr = a;
		/* TTL 64, IP header checksum updated for the ttl/protocol word */
		oldw = *(__u16 *)&ip->ttl;
		ip->ttl = 64;
		neww = *(__u16 *)&ip->ttl;
		s = (__u16)~ip->check;
		s += (__u16)~oldw;
		s += neww;
		ip->check = (__u16)~fold32(s);
	}
	port = udp->source;
	udp->source = udp->dest;
	udp->dest = port;
	swap_mac(eth);
	return XDP_TX;
}

SEC("xdp")
int xdp_echo(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct udphdr *udp = NULL;
	__u32 udp_len, udp_off, so = 0, sn = 0;
	__u64 pseudo = 0;
	int v6 = 0, act;

	act = find_udp(data, data_end, &udp, &v6);
	if (act || !udp)
		return act ? act : XDP_PASS;
	if ((void *)(udp + 1) > data_end)
		return XDP_PASS;
	if (udp->dest != bpf_htons(cfg_port)) {
		count(C_PASS_OTHER_PORT, 1);
		return XDP_PASS;
	}
	act = check_lengths(data, data_end, udp, v6, &pseudo);
	if (act)
		return act;
	udp_len = bpf_ntohs(udp->len);
	udp_off = (__u32)((void *)udp - data);
	if (!cfg_plain) {
		act = smtu_rewrite((__u8 *)(udp + 1), data_end, udp_len - sizeof(*udp), &so, &sn);
		if (act != XDP_TX)
			return act;
	}
	/* Checksum: IPv4 0 means "none" and stays 0. */
	if (!v6 && udp->check == 0) {
		count(C_CSUM_ZERO, 1);
	} else if (fix_udp_csum(ctx, udp, pseudo, udp_off, udp_len, so, sn)) {
		/* A helper failed: the header is already rewritten, so the
		 * application would see a reply. Drop it, counted. */
		count(C_DROP_CSUM_FAIL, 1);
		return XDP_DROP;
	}
	act = turn_around(ctx, v6);
	if (act != XDP_TX)
		return act;
	count(cfg_plain ? C_ANSWERED_PLAIN : C_ANSWERED, 1);
	count(C_ANSWERED_BYTES, udp_len - sizeof(*udp));
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
