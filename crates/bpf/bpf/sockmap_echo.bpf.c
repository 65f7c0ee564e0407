// SPDX-License-Identifier: GPL-2.0
/*
 * sockmap_echo: TCP echo inside the kernel. The application accepts a
 * connection and inserts the socket into `socks` (key: the socket cookie,
 * getsockopt(SO_COOKIE); value: the fd). From then on every byte the peer
 * sends runs through echo_verdict, which redirects it to the egress of the
 * same socket: the bytes go straight back and the application never reads.
 *
 * Attach (bpf_prog_attach(prog, map, type, 0)):
 *   echo_verdict -> BPF_SK_SKB_STREAM_VERDICT (required)
 *   echo_parser  -> BPF_SK_SKB_STREAM_PARSER  (optional: without it the
 *                   kernel hands the verdict each skb as it arrives; with it
 *                   the data goes through a strparser first)
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "sockmap_echo.h"

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 65536);
	__type(key, __u64);   /* socket cookie */
	__type(value, __u32); /* fd on update; the kernel keeps the socket */
} socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SE_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += n;
}

/* Every byte that arrives is its own message: no framing in stackmeter's
 * data phase. */
SEC("sk_skb/stream_parser")
int echo_parser(struct __sk_buff *skb)
{
	count(SE_PARSER_RUNS, 1);
	return skb->len;
}

SEC("sk_skb/stream_verdict")
int echo_verdict(struct __sk_buff *skb)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	__u32 len = skb->len;
	long rc;

	count(SE_VERDICTS, 1);
	/* flags 0: to the egress (send side) of the target socket, which is
	 * this socket itself. BPF_F_INGRESS would queue it for reading. */
	rc = bpf_sk_redirect_hash(skb, &socks, &cookie, 0);
	if (rc == SK_PASS) {
		count(SE_ECHOED_MSGS, 1);
		count(SE_ECHOED_BYTES, len);
		return SK_PASS;
	}
	/* Not in the map (cannot happen for a socket the verdict runs on,
	 * unless it was just deleted): let the application have the data. */
	count(SE_NOT_IN_MAP, 1);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
