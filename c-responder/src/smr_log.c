/*
 * Event lines of the POSIX backend on stderr, in the Rust responder's
 * format ("NAME: 2026-11-23T00:40:01.123Z LEVEL: ..."): refusals and
 * aborted sessions (the engine's log hook), the catalogue at start, and
 * the one-line errors that end the process. Nothing here is on the
 * measured path: the engine logs only refusals and aborts. A leaf: what
 * a line says comes in as arguments (the loop's log hook, smr_posix.c,
 * finds the client's address and honours --quiet).
 */
#include "smr_posix_int.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void smr_die(const char *msg, const char *arg) {
    fprintf(stderr, SMR_NAME ": error: %s%s\n", msg, arg ? arg : "");
    exit(2);
}

void smr_fmt_addr(const union smr_addr *a, char *out, size_t cap) {
    char ip[INET6_ADDRSTRLEN];
    int v6 = a->sa.sa_family == AF_INET6;
    inet_ntop(a->sa.sa_family, v6 ? (const void *)&a->v6.sin6_addr : (const void *)&a->v4.sin_addr, ip, sizeof ip);
    snprintf(out, cap, v6 ? "[%s]:%u" : "%s:%u", ip, (unsigned)ntohs(v6 ? a->v6.sin6_port : a->v4.sin_port));
}

/* The wall clock in UTC with milliseconds, as the Rust responder logs;
 * LEVEL is "info", or "warn" for a refused or broken session. */
void smr_log_head(const char *level) {
    struct timespec ts;
    struct tm tm;
    char t[24] = "";
    clock_gettime(CLOCK_REALTIME, &ts);
    if (gmtime_r(&ts.tv_sec, &tm)) strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, SMR_NAME ": %s.%03ldZ %s: ", t, (long)(ts.tv_nsec / 1000000L), level);
}

void smr_log_info(const char *a, const char *b) {
    smr_log_head("info");
    fprintf(stderr, "%s%s\n", a, b);
}

void smr_log_event(const union smr_addr *peer, const char *what, const char *detail) {
    char a[64];
    int ab;
    smr_fmt_addr(peer, a, sizeof a);
    smr_log_head("warn");
    ab = strcmp(what, "aborted") == 0;
    fprintf(stderr, ab ? "%s: session ended%s: %s\n" : "refused %s: %s: %s\n", a, ab ? "" : what, detail);
}

/* One line naming the catalogue, or saying object mode is off. */
void smr_log_objects(const struct smr_config *cfg) {
    char name[SMR_OBJ_NAME_LEN + 1];
    uint32_t i;
    smr_log_head("info");
    if (!cfg->nobjects) {
        fprintf(stderr, "objects: off\n");
        return;
    }
    fprintf(stderr, "objects: %u in the catalogue:", (unsigned)cfg->nobjects);
    for (i = 0; i < cfg->nobjects; i++) {
        name[smr_object_name(cfg, i, name)] = 0;
        fprintf(stderr, " %s", name);
    }
    fprintf(stderr, "\n");
}
