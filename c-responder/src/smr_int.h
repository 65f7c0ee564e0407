/*
 * smr_int.h: what the engine's files share and a backend never sees (a
 * backend includes smr.h only): a connection's phases, modes and private
 * flags, and the calls the files make into each other. It exists so that
 * the engine can be one file per concern, as the Rust twin is
 * (crates/proto/src/machine/), with nothing of that split in smr.h.
 *
 * The files, one concern each, and who calls whom (always downward, so
 * no two files call each other):
 *   smr.c          the session core and the call order: config, input
 *                  (one dispatch per phase), rr and crr requests, output
 *                  and what was sent, passes and turns, end of input,
 *                  the close, timeouts and deadlines
 *   smr_header.c   the session header and the auth phase: parse, judge,
 *                  challenge and proof, then start the mode
 *   smr_objects.c  object mode (LIST, FETCH, the synthetic objects)
 *   smr_control.c  throughput tests: control sessions and their records,
 *                  sinks and sources, Reports, the drain, pacing
 *   smr_slots.c    the connection table: a slot for a new connection,
 *                  and who may hold how many
 *   smr_udp.c      UDP: the echo rule, stream counters, the tables kept
 *                  per client (replay windows, count blocks)
 *   smr_status.c   the bottom: byte order, reason text, status records
 *                  and stamp blocks, and how a session ends (refused and
 *                  lingering, aborted)
 *   smr_auth.c     SHA-256 and HMAC (declared in smr.h)
 * smr.c calls smr_header.c, smr_objects.c, smr_control.c and
 * smr_status.c; smr_header.c calls smr_control.c, smr_objects.c,
 * smr_slots.c and smr_status.c; smr_udp.c calls smr_control.c (a stream's
 * test) and smr_status.c; the rest call only smr_status.c (and
 * smr_auth.c), which calls nothing but the backend's log hook.
 */
#ifndef SMR_INT_H
#define SMR_INT_H

#include "smr.h"

/* A connection's phase (smr_conn.phase). */
enum { PH_FREE, PH_HEADER, PH_RR, PH_CRR, PH_CRR_WAIT, PH_CONTROL, PH_SINK, PH_SOURCE, PH_LINGER, PH_DRAIN, PH_OBJ, PH_AUTH };
/* Session modes (docs/protocol.md 2.2), object requests (9.2), control
 * record types (8.1). */
enum { M_RR = 1, M_CRR = 2, M_CONTROL = 3, M_SINK = 4, M_SOURCE = 5, M_OBJECTS = 16 };
enum { OP_LIST = 1, OP_FETCH = 2 };
enum { T_SNAPSHOT = 1, T_STOP = 2, T_WELCOME = 16, T_REPORT = 17 };
/* Private bits of smr_conn.flags, beside the SMR_F_ ones of smr.h. */
#define F_AWAIT 8u   /* control: Stop received, final Report not yet queued */
#define F_OPEN 32u   /* stamped rr: a response is being sent */
#define F_AUTHED 64u /* the proof was right: judge the header itself */
#define F_EVICT 128u /* given up for a new connection: closed once its record is out */

/* Stamp blocks need the backend's stamps hook; a build that has none
 * (-DSMR_NO_TS) compiles no stamp code, and answers a request for stamps
 * as one with a NULL hook does: as if the flag were unknown. */
#ifdef SMR_NO_TS
#define STAMPS(x) 0
#define STAMPED(c) 0
#else
#define STAMPS(x) ((x)->stamps != NULL)
#define STAMPED(c) ((c)->flags & SMR_F_STAMPS)
#endif

/* A connection that counts against max_sessions (not free, not lingering
 * after a refusal); one still sending its header or its proof, whose
 * deadline is the header's, fixed when it was accepted; and a
 * connection's slot number. */
#define SMR_COUNTED(c) ((c)->phase != PH_FREE && (c)->phase != PH_LINGER)
#define SMR_WAITING(c) ((c)->phase == PH_HEADER || (c)->phase == PH_AUTH)
#define SMR_INDEX(x, c) ((size_t)((c) - (x)->conns))

/* smr_status.c: big-endian fields, decimal text for reasons, and the
 * ends of a session. smr_fmt writes template t into r, NUL-terminated,
 * with its %u replaced by a, b and c in turn, in decimal, and returns the
 * length: the reason texts are short, their buffers sized for them. */
void smr_put16(uint8_t *b, uint32_t v);
void smr_put32(uint8_t *b, uint32_t v);
void smr_put64(uint8_t *b, uint64_t v);
uint32_t smr_get16(const uint8_t *b);
uint32_t smr_get32(const uint8_t *b);
uint64_t smr_get64(const uint8_t *b);
size_t smr_utoa(char *p, uint32_t v);
size_t smr_fmt(char *r, const char *t, uint32_t a, uint32_t b, uint32_t c);
/* One line in the backend's log (its hook, when it has one). */
void smr_event(struct smr_ctx *x, const struct smr_conn *c, const char *what, const char *detail);
/* The accepted status record, queued. */
void smr_status_ok(struct smr_conn *c);
/* The lingering close: what c->out holds goes, then a half-close, the
 * client's bytes drained for a while; c no longer counts. */
void smr_linger(struct smr_ctx *x, struct smr_conn *c, uint64_t now);
/* A refusal record queued (and logged), then the lingering close. */
void smr_refuse(struct smr_ctx *x, struct smr_conn *c, unsigned code, const char *reason, uint64_t now);
/* Logged, and closed at once. */
void smr_abort(struct smr_ctx *x, struct smr_conn *c, const char *why);

/* smr_header.c: a connection still sending its header, or its proof. */
size_t smr_header_want(const struct smr_conn *c);
size_t smr_in_header(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now);
#ifndef SMR_NO_AUTH
size_t smr_in_auth(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now);
#endif

/* smr_objects.c: an object session (phase PH_OBJ). */
void smr_start_objects(struct smr_ctx *x, struct smr_conn *c, uint64_t now);
size_t smr_obj_want(const struct smr_conn *c);
size_t smr_in_objects(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now);
/* The next piece of the response body being sent, generated into x->gen. */
size_t smr_obj_body(struct smr_ctx *x, struct smr_conn *c, const uint8_t **p);

/* smr_control.c: throughput tests. */
struct smr_test *smr_find_test(struct smr_ctx *x, uint32_t id);
/* The open test c belongs to, or NULL. */
struct smr_test *smr_conn_test(struct smr_ctx *x, const struct smr_conn *c);
void smr_start_control(struct smr_ctx *x, struct smr_conn *c, uint64_t now);
void smr_start_data(struct smr_ctx *x, struct smr_conn *c, uint64_t now);
size_t smr_control_want(const struct smr_conn *c);
size_t smr_in_control(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now);
/* Stops a test's sources: they half-close once their output drains. */
void smr_stop_sources(struct smr_ctx *x, const struct smr_test *t);
/* With a highest rate, when test t's sources may write again, if that is
 * after x->now (else 0). */
uint64_t smr_paced(const struct smr_ctx *x, const struct smr_test *t);
/* c is going: its test ends with it (a control session) or counts one
 * data session fewer. */
void smr_test_leave(struct smr_ctx *x, struct smr_conn *c, uint64_t now);
/* The earliest time a test needs a look (a final Report, pacing). */
uint64_t smr_tests_due(const struct smr_ctx *x);

#endif
