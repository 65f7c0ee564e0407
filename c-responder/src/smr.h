/*
 * smr: the stackmeter responder protocol engine (wire protocol v1,
 * docs/protocol.md). Portable C99, no I/O, no clock, no dynamic memory.
 *
 * Every backend (POSIX sockets, lwIP raw API, lwIP sockets API, an in-stack
 * module) owns the sockets and the clock and drives the engine:
 *   new connection   -> smr_conn_open(), smr_conn_start(); a connection
 *                       it returns was given up to make room: send what
 *                       it has (its refusal) and close it as it asks
 *   bytes received   -> smr_conn_input()
 *   bytes to send    <- smr_conn_output() / smr_conn_iov(), then smr_conn_sent()
 *   half-close, close<- smr_conn_flags()
 *   peer closed      -> smr_conn_eof(); socket gone -> smr_conn_free()
 *   time passes      -> smr_conn_deadline(), smr_conn_timeout(), smr_tick()
 *   UDP datagram     -> smr_udp_input_from(), then smr_udp_stamp_tx(),
 *                       smr_udp_seal() (a secret's MAC trailer)
 *   shared secret    -> smr_auth_key() into the config, 16 random bytes
 *                       into smr_ctx.seed (docs/protocol.md section 10)
 *   stamp blocks     <- the stamps hook (smr_ctx.stamps), smr_put_block();
 *                       rr sessions with SMR_F_STAMPS count c->served
 *   one pass         -> smr_pass_begin(), then smr_conn_read_max() bytes
 *                       at most per read
 *
 * Bounded work per pass. A pass is what a backend does between two looks
 * at its sockets (a poll or epoll_wait, one callback of a stack). The
 * backend calls smr_pass_begin() at its start and serves the UDP datagrams
 * that have come first; until the next smr_pass_begin() the engine offers
 * to send (smr_conn_output, smr_conn_iov) and asks to read
 * (smr_conn_read_max) at most SMR_PASS_BYTES of TCP bytes in all,
 * whatever number of connections share them (smr_ctx.pass_left: 0 when
 * the pass is spent), but never cuts a record (a status, control record,
 * Report or response head: at most SMR_OUT_MAX bytes, which may go past
 * the bound once per pass). Connections take turns: the backend serves its ready
 * ones in the order of smr_turn(), which begins after the last connection
 * that moved bytes, so none starves however busy the others are. UDP is
 * answered whatever is left. So a UDP probe waits behind at most one pass
 * of bulk data, on every backend alike. smr_init() gives a first pass.
 *
 * Output lifetime: the bytes smr_conn_output()/smr_conn_iov() point at are
 * valid only until the next call into the engine (any smr_ function taking
 * the context): records live in the connection, and object-mode bytes are
 * generated into one scratch buffer the whole context shares (smr_ctx.gen).
 * Only smr_payload itself (p == smr_payload) is static and may be handed to
 * a stack by reference (lwIP tcp_write without TCP_WRITE_FLAG_COPY, an mbuf
 * with external storage); copy everything else, or write it out, before
 * calling the engine again.
 *
 * All state lives in one struct smr_ctx; the sizes below are compile-time
 * tunables: set them with -D on the command line, the same for every file
 * of a build (struct sizes depend on them). -DSMR_NO_AUTH leaves the shared
 * secret out; -DSMR_NO_TS, for a backend without kernel timestamps, leaves
 * stamp blocks out (requests for them are answered as with no stamps hook).
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
/* Fair slots (docs/protocol.md 5.2): sessions one client address can never
 * take, kept for the others: half of max_sessions, at most this many. A
 * 6-session board keeps 3 (one address holds 3 at most), a 1024-session
 * host 16 (one address holds 1008). See smr_client_share(). */
#ifndef SMR_CLIENT_RESERVE
#define SMR_CLIENT_RESERVE 16
#endif
/* Throughput tests open at once (RAM: one struct smr_test each, about
 * 6 KiB; one more control session is refused Busy), and UDP streams counted
 * per test (RAM: 192 bytes each, per test). */
#ifndef SMR_MAX_TESTS
#define SMR_MAX_TESTS 16
#endif
#ifndef SMR_MAX_STREAMS
#define SMR_MAX_STREAMS 32
#endif
/* Size of the read-only payload buffer responses are sent from. */
#ifndef SMR_TX_CHUNK
#define SMR_TX_CHUNK 65536
#endif
/* TCP bytes a pass may move, reads and writes together (see above): the
 * most bulk data a UDP probe waits behind. Smaller costs more looks at the
 * sockets per byte; on loopback at 20 Gbit/s 64 KiB is 25-30 us. */
#ifndef SMR_PASS_BYTES
#define SMR_PASS_BYTES 65536u
#endif
/* An rr session without stamps reads every request that has come at once,
 * while the responses it owes come to less than this, and sends them back
 * to back (at most SMR_TX_CHUNK per call). Requests are counted, never
 * kept: no memory per connection whatever this is. */
#ifndef SMR_RR_QUEUE
#define SMR_RR_QUEUE 65536u
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
/* After Stop, UDP counts are final once no stream datagram came for this
 * long (datagrams still queued when Stop was read are counted). */
#ifndef SMR_UDP_QUIET_NS
#define SMR_UDP_QUIET_NS 20000000ull
#endif
/* Object mode (session mode 16): synthetic pattern objects a catalogue can
 * hold (RAM: 4 bytes each in struct smr_config; the protocol allows 4096),
 * and the bytes of LIST and FETCH bodies generated per smr_conn_output()
 * call (RAM: one buffer of this size per context, shared by every
 * connection; a stack that copies anyway wants about one segment). */
#ifndef SMR_MAX_OBJECTS
#define SMR_MAX_OBJECTS 16
#endif
#ifndef SMR_GEN_CHUNK
#define SMR_GEN_CHUNK 16384
#endif

/* Runtime defaults of struct smr_config (smr_default_config()). Together
 * with the tunables above they are the limits table of docs/protocol.md
 * section 5, checked against protocol/vectors.json by smr-test. */
#define SMR_DEFAULT_MAX_MSG (64u << 20)
#define SMR_DEFAULT_HEADER_TIMEOUT_NS 5000000000ull
#define SMR_DEFAULT_IDLE_TIMEOUT_NS 60000000000ull

#define SMR_DEFAULT_PORT 24680
#define SMR_DUP_WINDOW 1024 /* docs/protocol.md 8.4 */
#define SMR_CATALOGUE_MAX 4096 /* objects a catalogue may hold (9.4) */
#define SMR_NAME_MAX 255       /* longest object name in a request (9.2) */
#define SMR_OBJ_NAME_LEN 16    /* longest name smr_object_name() makes */
#define SMR_UDP_HDR 40
#define SMR_BLOCK_LEN 48 /* stamp block (docs/protocol.md 4.3) */
#define SMR_REPORT_LEN 128
#define SMR_OUT_MAX (8 + SMR_REPORT_LEN) /* status + Report, or a refusal */
#define SMR_RX_ANY ((size_t)-1)
/* Authentication (docs/protocol.md section 10, src/smr_auth.c): compiled
 * in unless -DSMR_NO_AUTH; on when smr_config.key_len > 0. Replay windows
 * of UDP echo requests are kept for SMR_AUTH_PEERS client addresses (RAM:
 * about 40 bytes each), the least recently used forgotten first. */
#define SMR_CHALLENGE_LEN 24
#define SMR_PROOF_LEN 32
#define SMR_MAC_LEN 16
#ifndef SMR_AUTH_PEERS
#define SMR_AUTH_PEERS 16
#endif
#define SMR_PEER_KEY 20 /* bytes of a peer address the window is keyed by */
/* Count blocks (docs/protocol.md 4.4): how many of a client's echo
 * requests arrived, kept per (client address, count id) for
 * SMR_COUNT_PEERS clients (about 36 bytes each), the least recently used
 * forgotten first. */
#ifndef SMR_COUNT_PEERS
#define SMR_COUNT_PEERS 8
#endif

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
    SMR_UNKNOWN_TEST = 9,
    SMR_NOT_FOUND = 10,   /* object mode responses only */
    SMR_BAD_REQUEST = 11, /* object mode responses only */
    SMR_AUTH = 12,        /* no or wrong proof of the shared secret (section 10) */
    SMR_LIMIT = 13        /* an operator's limit per client address (5.1) */
};

/* What smr_conn_flags() asks of the backend. */
#define SMR_F_SHUT 1u  /* half-close (shutdown write) once output is empty */
#define SMR_F_CLOSE 2u /* close the socket now, then call smr_conn_free() */
#define SMR_F_SHUT_DONE 4u
/* An rr session whose every response starts with a stamp block: the
 * backend turns kernel timestamps on before the status record goes out. */
#define SMR_F_STAMPS 16u

struct smr_config {
    uint32_t max_sessions;      /* <= SMR_MAX_CONNS */
    uint32_t max_msg;           /* largest request/response/write size */
    uint64_t header_timeout_ns; /* whole header must arrive within this */
    uint64_t idle_timeout_ns;   /* no progress for this long: abort */
    uint32_t nobjects;          /* 0: object mode off (mode 16 is UnknownMode) */
    uint32_t object_size[SMR_MAX_OBJECTS]; /* object i: pattern seed i */
    /* An operator's limits (docs/protocol.md 5.1), 0 for none; advertised
     * in the Welcome. Longest test: a session ends max_test_s + 5 s after
     * it was accepted (sources stop as after Stop, others are aborted).
     * Tests at once per client address: counted over smr_conn.client.
     * Highest rate: a test's sources together, bit/s (at most 10^10). */
    uint32_t max_test_s;
    uint32_t max_tests_per_client;
    uint64_t max_rate_bps;
#ifndef SMR_NO_AUTH
    uint8_t key[64]; /* the secret as HMAC keys with it (smr_auth_key) */
    uint8_t key_len; /* 0: no secret, every client is served */
#endif
};

/* What a per-client table entry is found by: the client's address (its
 * first SMR_PEER_KEY bytes) and an id; the least recently used goes first. */
struct smr_slot {
    uint32_t used; /* 0: free; else the context's use counter */
    uint32_t id;   /* a count id (4.4); 0 for a replay window */
    uint8_t key[SMR_PEER_KEY];
};

/* One client's count of counted echo requests (docs/protocol.md 4.4). */
struct smr_count {
    struct smr_slot slot;
    uint64_t received;
};

/* The replay window of one client address (docs/protocol.md 10.2). */
struct smr_peer {
    struct smr_slot slot;
    uint64_t highest, seen; /* seen bit i: sequence highest - i came */
};

/* One TCP connection. Object sessions reuse fields that are idle after the
 * header: in[0..4] the request head (in[0] its op while the answer is sent),
 * in_need the name length, req_got the name bytes read, hdr[] the first 16
 * of them, resp_size the body length of the answer being sent. */
struct smr_conn {
    uint64_t tx_left;  /* body bytes of the current response not yet sent
                        * (rr without stamps: of every response owed) */
    uint64_t deadline; /* ns: header, idle or linger deadline */
    uint64_t ends_by;  /* ns: the longest test's end (0: none) */
    uint32_t req_size; /* rr/crr request size; sink/source: test id */
    uint32_t resp_size;
    uint32_t req_got; /* bytes of the current request (or linger count) */
    uint32_t pending; /* stamped rr: complete requests not yet answered */
    uint32_t test_id;
    uint32_t served; /* stamped rr: responses completely sent */
    uint32_t client; /* set by the backend: its client address, as a tag */
    uint16_t hdr_len, hdr_got;
    uint16_t out_len, out_off;
    uint16_t in_got, in_need; /* control record being assembled */
    uint16_t skip;            /* control: bytes of an unknown record left */
    uint16_t obj;             /* objects: index of the object being sent */
    uint8_t phase, mode, flags, test_ix;
    uint8_t hdr[24];
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
    uint64_t now;       /* the latest time the backend gave (pacing) */
    size_t pass_left;   /* TCP bytes this pass may still move */
    uint32_t turn;      /* the slot after the last connection that moved bytes */
    void *user;
    /* Optional hooks (NULL: not available). Return 1 when valid. */
    int (*cpu)(void *user, uint64_t *user_ns, uint64_t *sys_ns);
    int (*tcpinfo)(void *user, const struct smr_conn *c, struct smr_tcpinfo *ti);
    /* Stamp blocks (NULL: this backend has no kernel timestamps, and
     * requests for stamps are answered as if the flag were unknown). Called
     * right before a stamped rr response goes out: fills v = {kernel
     * receive, application receive, application send, earlier reply's id,
     * its kernel send stamp} (wall clock, ns) and returns the block's flag
     * bits saying which are valid (smr_put_block). */
    unsigned (*stamps)(void *user, const struct smr_conn *c, uint64_t v[5]);
    /* One line per refusal or aborted session; what: refusal name or
     * "aborted"; detail: a short reason. May be NULL. */
    void (*log)(void *user, const struct smr_conn *c, const char *what, const char *detail);
    uint32_t list_len; /* body length of LIST (set by smr_init) */
    uint32_t slot_uses; /* the per-client tables' use counter */
#ifndef SMR_NO_AUTH
    uint8_t seed[16];     /* random bytes from the backend, for nonces */
    uint32_t challenges;  /* challenges given: each nonce's counter */
    struct smr_peer peers[SMR_AUTH_PEERS];
#endif
    struct smr_count counts[SMR_COUNT_PEERS];
    struct smr_test tests[SMR_MAX_TESTS];
    struct smr_conn conns[SMR_MAX_CONNS + SMR_SPARE_CONNS];
    uint8_t gen[SMR_GEN_CHUNK]; /* object bytes of the last output call */
};

/* The read-only payload every response is cut from. */
extern const uint8_t smr_payload[SMR_TX_CHUNK];

/* smr_init copies cfg (object sizes included; nobjects is capped at
 * SMR_MAX_OBJECTS). The default config serves objects 4K, 64K, 1M, 8800K. */
void smr_init(struct smr_ctx *x, const struct smr_config *cfg);
void smr_default_config(struct smr_config *cfg);

/* A new TCP connection: a slot, or NULL when there is none (close the
 * socket at once). Record the peer and its tag (smr_conn.client), then
 * call smr_conn_start(). When the sessions are all taken, or c's address
 * holds its share (smr_client_share), the oldest connection still sending
 * its header or proof (of c's address, in the second case) is given up
 * for c: it gets a Busy record saying so and asks to be closed once that
 * is out (smr_conn_flags), and smr_conn_start returns it for the backend
 * to serve now (NULL: none given up). With none to give up, c itself is
 * refused Busy, the reason naming the limit. */
struct smr_conn *smr_conn_open(struct smr_ctx *x, uint64_t now);
struct smr_conn *smr_conn_start(struct smr_ctx *x, struct smr_conn *c, uint64_t now);
/* The most sessions one client address may hold: cfg->max_sessions less
 * the reserve kept for others (half of it, at most SMR_CLIENT_RESERVE),
 * at least 1. */
uint32_t smr_client_share(const struct smr_config *cfg);
/* The one line a backend prints at start with these limits (sessions,
 * the share of one address, the header timeout, giving way),
 * NUL-terminated into out (at least SMR_LIMITS_LINE bytes); returns its
 * length. */
#define SMR_LIMITS_LINE 192
size_t smr_limits_line(const struct smr_config *cfg, char *out);
/* Index of a connection in the pool (for a backend's parallel arrays). */
size_t smr_conn_index(const struct smr_ctx *x, const struct smr_conn *c);
/* Connections of client tag `client` (smr_conn.client): still sending
 * their header (waiting > 0), running a test (waiting == 0: any session
 * past its header but a throughput test's data sessions), or every
 * session it holds (waiting < 0). */
uint32_t smr_client_count(const struct smr_ctx *x, uint32_t client, int waiting);

/* How many bytes the engine wants read now (0: none; SMR_RX_ANY: any).
 * A backend that reads at most this never has to keep bytes back. */
size_t smr_conn_want(const struct smr_conn *c);
/* A new pass (bounded work per pass, above): SMR_PASS_BYTES to move. */
void smr_pass_begin(struct smr_ctx *x);
/* What to read now: smr_conn_want() within what the pass has left. */
size_t smr_conn_read_max(const struct smr_ctx *x, const struct smr_conn *c);
/* c's place in the order of turns (0 first): slots in order, beginning
 * after the last connection that moved bytes (read or sent). */
size_t smr_turn(const struct smr_ctx *x, const struct smr_conn *c);
/* Feeds received bytes; returns how many were consumed (fewer only when
 * the engine waits for its output to drain, or the connection is closing).
 * They count against the pass. */
size_t smr_conn_input(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now);
/* The next contiguous bytes to send (0 when nothing is due or the pass is
 * spent). */
size_t smr_conn_output(struct smr_ctx *x, struct smr_conn *c, const uint8_t **p);
/* Nonzero when output is due (for a poll set): like smr_conn_output() != 0,
 * without generating object bytes or changing any state. */
int smr_conn_has_output(const struct smr_ctx *x, const struct smr_conn *c);
/* Up to two pieces at once (a record, then payload or object bytes) for
 * one writev: crr sends its status record and response together, object
 * mode a response head and the start of its body. Returns the count. */
size_t smr_conn_iov(struct smr_ctx *x, struct smr_conn *c, const uint8_t **p, size_t *n);
/* n bytes of what smr_conn_output() offered were taken by the stack (they
 * count against the pass). */
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
 * smr_next_deadline() says one is due. Returns the throughput tests open:
 * while there are any, a session's input can change what another one
 * has to do (Stop, the final Report, pacing), so a backend looks at
 * every connection after each pass. */
unsigned smr_tick(struct smr_ctx *x, uint64_t now);
uint64_t smr_next_deadline(const struct smr_ctx *x);

/* UDP: rewrites buf in place and returns the reply length, 0 to drop.
 * With a stamps hook, a reply whose buf[7] has bit 1 set wants the stamp
 * block at buf + 40 (smr_put_block) before it is sent. */
size_t smr_udp_input(struct smr_ctx *x, uint8_t *buf, size_t len, uint64_t rx_ns);
/* The same for a datagram from peer (any bytes naming the client's address
 * and port, at most SMR_PEER_KEY used): with a secret, a datagram without a
 * valid MAC trailer, or a replayed echo request, gives 0 (no reply at all),
 * and the length returned excludes the trailer: after smr_udp_stamp_tx
 * (and the stamp block), smr_udp_seal appends the reply's trailer and
 * returns the length to send. smr_udp_input is this with no peer (one
 * replay window for every client). */
size_t smr_udp_input_from(struct smr_ctx *x, uint8_t *buf, size_t len, uint64_t rx_ns, const void *peer, size_t plen);
size_t smr_udp_seal(const struct smr_ctx *x, uint8_t *buf, size_t len);
void smr_udp_stamp_tx(uint8_t *buf, uint64_t tx_ns);
/* Writes the 48-byte stamp block: flags bit 0 v[1], v[2]; bit 1 v[0];
 * bit 2 v[3], v[4] (fields without their bit are written as 0). */
void smr_put_block(uint8_t *b, unsigned flags, const uint64_t v[5]);

#ifndef SMR_NO_AUTH
/* smr_auth.c: the secret as HMAC keys with it (longer than 64 bytes: its
 * SHA-256), HMAC-SHA256 of a then b, and a comparison without early exit. */
void smr_auth_key(struct smr_config *cfg, const uint8_t *secret, size_t n);
void smr_hmac(const struct smr_config *cfg, const uint8_t *a, size_t an, const uint8_t *b, size_t bn, uint8_t out[32]);
int smr_mac_ok(const uint8_t *want, const uint8_t *got, size_t n);
#endif

/* Pure helpers shared with the tests. */
const char *smr_refusal_name(unsigned code);
size_t smr_status(uint8_t *out, size_t cap, unsigned code, const char *reason);
void smr_stream_record(struct smr_stream *s, uint64_t seq, size_t len, uint64_t sent_ns, uint64_t arrival_ns);
/* Parses a complete header: 0 and *mode/req/resp set, or a refusal code. */
unsigned smr_parse_header(const uint8_t *h, size_t n, uint8_t *mode, uint32_t *req, uint32_t *resp);
/* Object i's name as the Rust responder gives it ("4K", "8800K", "1M",
 * "100"; "-2", "-3" for repeated sizes) into out (SMR_OBJ_NAME_LEN bytes,
 * no terminator); returns its length. */
size_t smr_object_name(const struct smr_config *cfg, size_t i, char *out);
/* n bytes of pattern object k from offset off (docs/protocol.md 9.5). */
void smr_pattern(uint8_t *out, uint32_t k, uint64_t off, size_t n);

#endif
