/*
 * smr: the stackmeter responder protocol engine (wire protocol v1,
 * docs/protocol.md). Portable C99, no I/O, no clock, no dynamic memory.
 *
 * Every backend (POSIX sockets, lwIP raw API, lwIP sockets API, an in-stack
 * module) owns the sockets and the clock and drives the engine:
 *   bytes received   -> smr_conn_input()
 *   bytes to send    <- smr_conn_output() / smr_conn_sent()
 *   half-close, close<- smr_conn_flags()
 *   peer closed      -> smr_conn_eof(); socket gone -> smr_conn_free()
 *   time passes      -> smr_conn_deadline(), smr_conn_timeout(), smr_tick()
 *   UDP datagram     -> smr_udp_input(), then smr_udp_stamp_tx()
 * All state lives in one struct smr_ctx; the sizes below are compile-time
 * tunables: set them with -D on the command line, the same for every file
 * of a build (struct sizes depend on them).
 */
#ifndef SMR_H
#define SMR_H

#include <stddef.h>
#include <stdint.h>

/* Connection slots: sessions plus SMR_SPARE_CONNS for Busy refusals. */
#ifndef SMR_MAX_CONNS
#define SMR_MAX_CONNS 1024
#endif
#ifndef SMR_SPARE_CONNS
#define SMR_SPARE_CONNS 8
#endif
/* Throughput tests open at once, and UDP streams counted per test. */
#ifndef SMR_MAX_TESTS
#define SMR_MAX_TESTS 8
#endif
#ifndef SMR_MAX_STREAMS
#define SMR_MAX_STREAMS 32
#endif
/* Size of the read-only payload buffer responses are sent from. */
#ifndef SMR_TX_CHUNK
#define SMR_TX_CHUNK 65536
#endif
/* Linger after a refusal: at most this long and this many bytes. */
#ifndef SMR_LINGER_NS
#define SMR_LINGER_NS 500000000ull
#endif
#ifndef SMR_LINGER_BYTES
#define SMR_LINGER_BYTES 65536u
#endif
/* How long a final Report waits for the test's data sessions to end. */
#ifndef SMR_DRAIN_NS
#define SMR_DRAIN_NS 2000000000ull
#endif

#define SMR_DEFAULT_PORT 24680
#define SMR_DUP_WINDOW 1024 /* docs/protocol.md 8.4 */
#define SMR_UDP_HDR 40
#define SMR_REPORT_LEN 128
#define SMR_OUT_MAX (8 + SMR_REPORT_LEN) /* status + Report, or a refusal */
#define SMR_RX_ANY ((size_t)-1)

/* Refusal codes (docs/protocol.md section 3). */
enum smr_refusal {
    SMR_BAD_MAGIC = 1,
    SMR_UNSUPPORTED_VERSION = 2,
    SMR_UNKNOWN_MODE = 3,
    SMR_BAD_HEADER = 4,
    SMR_TOO_LARGE = 5,
    SMR_BUSY = 6,
    SMR_HEADER_TIMEOUT = 7,
    SMR_INTERNAL = 8,
    SMR_UNKNOWN_TEST = 9
};

/* What smr_conn_flags() asks of the backend. */
#define SMR_F_SHUT 1u  /* half-close (shutdown write) once output is empty */
#define SMR_F_CLOSE 2u /* close the socket now, then call smr_conn_free() */
#define SMR_F_SHUT_DONE 4u

struct smr_config {
    uint32_t max_sessions;      /* <= SMR_MAX_CONNS */
    uint32_t max_msg;           /* largest request/response/write size */
    uint64_t header_timeout_ns; /* whole header must arrive within this */
    uint64_t idle_timeout_ns;   /* no progress for this long: abort */
};

struct smr_conn {
    uint64_t tx_left;  /* payload bytes of the current response not yet sent */
    uint64_t deadline; /* ns: header, idle or linger deadline */
    uint32_t req_size; /* rr/crr request size; sink/source: test id */
    uint32_t resp_size;
    uint32_t req_got; /* bytes of the current request (or linger count) */
    uint32_t pending; /* complete requests not yet answered (rr) */
    uint32_t test_id;
    uint16_t hdr_len, hdr_got;
    uint16_t out_len, out_off;
    uint16_t in_got, in_need; /* control record being assembled */
    uint16_t skip;            /* control: bytes of an unknown record left */
    uint8_t phase, mode, flags, test_ix;
    uint8_t hdr[16];
    uint8_t in[8];
    uint8_t out[SMR_OUT_MAX];
};

struct smr_stream {
    uint64_t received, bytes, expected, duplicates, reordered;
    uint64_t jitter16;
    uint64_t last_transit; /* arrival - sent, modulo 2^64 */
    uint8_t have_transit;
    uint64_t seen[SMR_DUP_WINDOW / 64];
};

struct smr_test {
    uint32_t id; /* 0: slot free */
    uint32_t sessions, open;
    uint32_t stop_id;
    uint64_t start_ns, drain_deadline;
    uint64_t tcp_rx, tcp_tx;
    uint64_t cpu_user0, cpu_sys0;
    uint64_t udp_last_ns; /* arrival of the last stream datagram (0: none) */
    struct smr_conn *control;
    uint8_t stopping, awaiting;
    uint8_t started; /* first Snapshot seen: sources may write */
    struct smr_stream streams[SMR_MAX_STREAMS];
};

/* Per-source TCP figures the backend may be able to read (TCP_INFO). */
struct smr_tcpinfo {
    uint32_t retrans, cwnd_bytes, rtt_us;
};

struct smr_ctx {
    struct smr_config cfg;
    uint32_t active;    /* sessions counted against max_sessions */
    uint32_t next_test; /* last test id given */
    uint32_t hi;        /* 1 + highest connection slot in use */
    void *user;
    /* Optional hooks (NULL: not available). Return 1 when valid. */
    int (*cpu)(void *user, uint64_t *user_ns, uint64_t *sys_ns);
    int (*tcpinfo)(void *user, const struct smr_conn *c, struct smr_tcpinfo *ti);
    /* One line per refusal or aborted session; what: refusal name or
     * "aborted"; detail: a short reason. May be NULL. */
    void (*log)(void *user, const struct smr_conn *c, const char *what, const char *detail);
    struct smr_test tests[SMR_MAX_TESTS];
    struct smr_conn conns[SMR_MAX_CONNS + SMR_SPARE_CONNS];
};

/* The read-only payload every response is cut from. */
extern const uint8_t smr_payload[SMR_TX_CHUNK];

void smr_init(struct smr_ctx *x, const struct smr_config *cfg);
void smr_default_config(struct smr_config *cfg);

/* A new TCP connection: a slot, or NULL when there is none (close the
 * socket at once). Record the peer, then call smr_conn_start(), which
 * queues a Busy refusal when the session limit is reached. */
struct smr_conn *smr_conn_open(struct smr_ctx *x, uint64_t now);
void smr_conn_start(struct smr_ctx *x, struct smr_conn *c, uint64_t now);
/* Index of a connection in the pool (for a backend's parallel arrays). */
size_t smr_conn_index(const struct smr_ctx *x, const struct smr_conn *c);

/* How many bytes the engine wants read now (0: none; SMR_RX_ANY: any).
 * A backend that reads at most this never has to keep bytes back. */
size_t smr_conn_want(const struct smr_conn *c);
/* Feeds received bytes; returns how many were consumed (fewer only when
 * the engine waits for its output to drain, or the connection is closing). */
size_t smr_conn_input(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now);
/* The next contiguous bytes to send (0 when nothing is due). */
size_t smr_conn_output(struct smr_ctx *x, struct smr_conn *c, const uint8_t **p);
/* Up to two pieces at once (a record, then payload) for one writev:
 * crr sends its status record and response together. Returns the count. */
size_t smr_conn_iov(struct smr_ctx *x, struct smr_conn *c, const uint8_t **p, size_t *n);
/* n bytes of what smr_conn_output() offered were taken by the stack. */
void smr_conn_sent(struct smr_ctx *x, struct smr_conn *c, size_t n, uint64_t now);
unsigned smr_conn_flags(const struct smr_conn *c);
void smr_conn_shut_done(struct smr_conn *c);
/* The peer half-closed (read returned 0). */
void smr_conn_eof(struct smr_ctx *x, struct smr_conn *c, uint64_t now);
/* The backend closed the socket (any reason): the slot is free again. */
void smr_conn_free(struct smr_ctx *x, struct smr_conn *c, uint64_t now);
uint64_t smr_conn_deadline(const struct smr_conn *c);
void smr_conn_timeout(struct smr_ctx *x, struct smr_conn *c, uint64_t now);
/* Drain deadlines of stopped tests; call at least every few 100 ms while
 * smr_next_deadline() says one is due. */
void smr_tick(struct smr_ctx *x, uint64_t now);
uint64_t smr_next_deadline(const struct smr_ctx *x);

/* UDP: rewrites buf in place and returns the reply length, 0 to drop. */
size_t smr_udp_input(struct smr_ctx *x, uint8_t *buf, size_t len, uint64_t rx_ns);
void smr_udp_stamp_tx(uint8_t *buf, uint64_t tx_ns);

/* Pure helpers shared with the tests. */
const char *smr_refusal_name(unsigned code);
size_t smr_status(uint8_t *out, size_t cap, unsigned code, const char *reason);
void smr_stream_record(struct smr_stream *s, uint64_t seq, size_t len, uint64_t sent_ns, uint64_t arrival_ns);
/* Parses a complete header: 0 and *mode/req/resp set, or a refusal code. */
unsigned smr_parse_header(const uint8_t *h, size_t n, uint8_t *mode, uint32_t *req, uint32_t *resp);

#endif
