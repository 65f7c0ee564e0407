/* Event record of layers.bpf.c, shared with its loader. Plain fixed-size
 * types: in Rust (src/layers.rs, Record), a #[repr(C)] struct with the same
 * fields in the same order (72 bytes, no implicit padding); both sides
 * assert the size. */
#ifndef LAYERS_H
#define LAYERS_H

enum layer_event_id {
	EV_SYS_SEND_ENTER = 1, /* sendto/sendmsg/sendmmsg entered (seq from the user buffer) */
	EV_SYS_SEND_EXIT,      /* ... returned (ret = bytes or -errno) */
	EV_SYS_RECV_ENTER,     /* recvfrom/recvmsg/recvmmsg entered */
	EV_SYS_RECV_EXIT,      /* ... returned (seq from the user buffer) */
	EV_SYS_WAIT_ENTER,     /* poll/ppoll/select/pselect6/epoll_wait/epoll_pwait entered */
	EV_SYS_WAIT_EXIT,      /* ... returned */
	EV_SOCK_SEND_LENGTH,   /* sock:sock_send_length (end of sock_sendmsg) */
	EV_NET_DEV_QUEUE,      /* net:net_dev_queue (dev_queue_xmit) */
	EV_NET_DEV_START_XMIT, /* net:net_dev_start_xmit (just before the driver) */
	EV_NET_DEV_XMIT,       /* net:net_dev_xmit (driver returned, ret = rc) */
	EV_NETIF_RX,           /* net:netif_rx (lo, veth without NAPI: into the backlog) */
	EV_NAPI_GRO_RECEIVE,   /* net:napi_gro_receive_entry (NAPI drivers, veth with XDP/GRO) */
	EV_NETIF_RECEIVE_SKB,  /* net:netif_receive_skb (__netif_receive_skb: the stack takes it) */
	EV_SK_DATA_READY,      /* sock:sk_data_ready (queued on the socket, reader woken) */
	EV_SKB_COPY_DATAGRAM,  /* skb:skb_copy_datagram_iovec (copy to the user buffer) */
	EV_SOCK_RECV_LENGTH,   /* sock:sock_recv_length (end of sock_recvmsg) */
	EV_CONSUME_SKB,        /* skb:consume_skb (freed after normal use) */
	EV_KFREE_SKB,          /* skb:kfree_skb (dropped, ret = drop reason) */
	EV_NR
};

enum layer_seq_source {
	SEQ_NONE = 0,
	SEQ_NETWORK_HDR, /* skb->head + network_header */
	SEQ_MAC_HDR,     /* skb->head + mac_header, Ethernet */
	SEQ_DATA_IP,     /* skb->data is the IP header (receive side) */
	SEQ_DATA_ETH,    /* skb->data is the Ethernet header (transmit side) */
	SEQ_USER_BUF,    /* the syscall's user buffer */
	SEQ_SOCK_QUEUE,  /* tail skb of sk->sk_receive_queue (sk_data_ready) */
};

struct layer_event {
	__u64 ts;      /* bpf_ktime_get_ns(): CLOCK_MONOTONIC, all CPUs, all namespaces */
	__u64 skb;     /* skb address, 0 for syscall events */
	__u64 seq;     /* sequence at UDP payload offset 8, host order (valid if seq_src) */
	__u32 len;     /* skb->len / tracepoint len / syscall length argument */
	__s32 ret;     /* syscall return, net_dev_xmit rc, kfree_skb reason */
	__u32 tgid;    /* current process (softirq: whoever was interrupted) */
	__u32 tid;
	__u32 netns;   /* inode of the network namespace (skb->dev's or current's) */
	__u16 ifindex; /* skb->dev->ifindex, 0 if none */
	__u16 id;      /* enum layer_event_id */
	__u16 sport;   /* UDP ports, host order, 0 if unknown */
	__u16 dport;
	__u8 cpu;
	__u8 kind;     /* stackmeter kind byte (1 request, 2 reply), 0 unknown */
	__u8 seq_src;  /* enum layer_seq_source */
	__u8 magic_ok; /* payload starts with "SMTU" */
	char dev[16];  /* device name from the net tracepoint's own record, "" if none */
};

_Static_assert(sizeof(struct layer_event) == 72, "src/layers.rs reads 72 bytes: change both");

#endif
