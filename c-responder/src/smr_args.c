/*
 * The command line of the POSIX responders into the engine's config and the
 * backend's settings: every flag, its value's syntax and range (numbers
 * with K/M/G, size lists, ADDR:PORT, networks), the secret file's checks,
 * --help and --version. A bad value ends the process with one line naming
 * the flag (exit 2), before anything listens. A board's firmware sets the
 * same struct smr_config fields from its own settings instead.
 */
#include "smr_posix_int.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A number with an optional K, M or G of k (1024 for sizes, 1000 for rates). */
static unsigned long smr_num(const char *flag, const char *v, unsigned long max, unsigned long k) {
    char *end;
    unsigned long n, m = 1;
    if (!v) smr_die("missing value for ", flag);
    n = strtoul(v, &end, 10);
    if (*end == 'K' || *end == 'M' || *end == 'G') {
        m = *end == 'K' ? k : *end == 'M' ? k * k : k * k * k;
        end++;
    }
    if (end == v || *end || n > max / m) {
        fprintf(stderr, SMR_NAME ": error: %s: bad value '%s' (at most %lu)\n", flag, v, max);
        exit(2);
    }
    return n * m;
}

/* One item of a size list, as the Rust CLI reads it: digits, then no unit
 * or B, K, KB, KiB, M, MB, MiB, G, GB, GiB in any case (K = 1024), spaces
 * around allowed; 1 .. 4G-1. Returns 0 and *out, or -1. */
static int smr_size(const char *s, size_t len, uint32_t *out) {
    static const char *const units[] = {"b", "k", "kb", "kib", "m", "mb", "mib", "g", "gb", "gib"};
    static const uint8_t shift[] = {0, 10, 10, 10, 20, 20, 20, 30, 30, 30};
    uint64_t v = 0;
    size_t i = 0, u;
    while (len && s[len - 1] == ' ') len--;
    while (i < len && s[i] == ' ') i++;
    if (i == len || s[i] < '0' || s[i] > '9') return -1;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
        if ((v = v * 10 + (uint64_t)(s[i] - '0')) > 0xffffffffu) return -1;
    for (u = 0; i < len && u < sizeof units / sizeof units[0]; u++) {
        size_t k = 0;
        while (i + k < len && units[u][k] && (s[i + k] | 0x20) == units[u][k]) k++;
        if (i + k == len && !units[u][k]) break;
    }
    if (i < len && u == sizeof units / sizeof units[0]) return -1;
    if (i < len) v <<= shift[u];
    if (v == 0 || v > 0xffffffffu) return -1;
    *out = (uint32_t)v;
    return 0;
}

/* --objects SIZES: "4K,64K,1M,8800K", at most SMR_MAX_OBJECTS of them. */
static void smr_objects(const char *v, struct smr_config *cfg) {
    const char *item = v;
    if (!v) smr_die("missing value for --objects", NULL);
    cfg->nobjects = 0;
    for (;;) {
        const char *end = strchr(item, ',');
        size_t len = end ? (size_t)(end - item) : strlen(item);
        if (cfg->nobjects == SMR_MAX_OBJECTS) {
            fprintf(stderr, SMR_NAME ": error: --objects: more than %d objects (this build's SMR_MAX_OBJECTS)\n",
                    SMR_MAX_OBJECTS);
            exit(2);
        }
        if (smr_size(item, len, &cfg->object_size[cfg->nobjects]) != 0) {
            fprintf(stderr, SMR_NAME ": error: --objects: bad size list item '%.*s' (sizes such as 64, 4K, 1M)\n",
                    (int)len, item);
            exit(2);
        }
        cfg->nobjects++;
        if (!end) return;
        item = end + 1;
    }
}

static void smr_usage(void) {
    printf("usage: " SMR_NAME " [--listen ADDR:PORT]... [--max-sessions N] [--max-msg SIZE]\n"
           "       [--header-timeout-ms MS] [--idle-timeout-ms MS] [--objects SIZES | --no-objects]\n"
           "       [--affinity CPU] [--priority fifo:N|rr:N|nice:N] [--mlock] [--busy-poll US]\n"
           "       [--secret-file FILE] [--max-test-seconds S] [--max-source-rate BITS/S]\n"
           "       [--max-tests-per-client N] [--max-idle-per-client N] [--max-connects-per-second N]\n"
           "       [--allow CIDR]... [--quiet] [--version]\n"
           "stackmeter protocol v1 responder (TCP and UDP on each address; default 0.0.0.0:24680)\n"
           "--objects: synthetic objects for object mode, K = 1024 (default 4K,64K,1M,8800K)\n");
    exit(0);
}

/* --allow: "10.0.0.0/8", "fd00::/8" or an address; at most SMR_MAX_ALLOW. */
static void smr_allow(struct smr_admit *m, const char *v) {
    char host[INET6_ADDRSTRLEN];
    uint8_t a[16];
    const char *slash = v ? strchr(v, '/') : NULL;
    size_t hl = !v ? 0 : slash ? (size_t)(slash - v) : strlen(v), len = 4;
    if (hl >= sizeof host || m->nallow == SMR_MAX_ALLOW) hl = 0;
    memcpy(host, v ? v : "", hl);
    host[hl] = 0;
    if (inet_pton(AF_INET, host, a) != 1 && (len = 16, inet_pton(AF_INET6, host, a) != 1))
        smr_die("--allow wants a network such as 10.0.0.0/8 or fd00::/8, or an address (at most 8), got ",
                v ? v : "nothing");
    smr_admit_add(m, a, len, slash ? (unsigned)smr_num("--allow", slash + 1, len * 8u, 1000) : len * 8u);
}

#ifndef SMR_NO_AUTH
/* --secret-file: a regular file only its owner may read or write, 1 to
 * 4096 bytes after trailing line ends (docs/protocol.md section 10). */
static void smr_secret(const char *path, struct smr_config *cfg) {
    static uint8_t b[4098];
    struct stat st;
    ssize_t n;
    int fd = path ? open(path, O_RDONLY) : -1;
    if (fd < 0) smr_die("--secret-file: cannot open ", path ? path : "nothing");
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077))
        smr_die("secret file is not a regular file only its owner may read or write (chmod 600): ", path);
    n = read(fd, b, sizeof b);
    close(fd);
    while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == '\r')) n--;
    if (n <= 0 || n > 4096) smr_die("secret file is empty or longer than 4096 bytes: ", path);
    smr_auth_key(cfg, b, (size_t)n);
}
#endif

/* The numeric flags, their largest values and their multiplier bases
 * (K/M/G: 1024 for sizes and counts, 1000 from --max-test-seconds on). */
static const char *const smr_numflag[] = {"--max-sessions", "--max-msg", "--header-timeout-ms",
                                          "--idle-timeout-ms", "--affinity", "--busy-poll",
                                          "--max-test-seconds", "--max-source-rate", "--max-tests-per-client",
                                          "--max-idle-per-client", "--max-connects-per-second"};
#define SMR_NNUM (sizeof smr_numflag / sizeof smr_numflag[0])

/* A flag without a value: 1 when f is one (and done), else 0. */
static int smr_switch(const char *f, struct smr_config *cfg, struct smr_posix *g) {
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) smr_usage();
    if (strcmp(f, "--version") == 0 || strcmp(f, "-V") == 0) {
        printf(SMR_NAME " " SMR_VERSION " (stackmeter protocol 1, C99 engine)\n");
        exit(0);
    }
    if (strcmp(f, "--quiet") == 0)
        g->quiet = 1;
    else if (strcmp(f, "--no-objects") == 0)
        cfg->nobjects = 0;
    else if (strcmp(f, "--mlock") == 0)
        smr_mlock();
    else
        return 0;
    return 1;
}

/* A flag with a value that is not a number (v: NULL when missing). */
static void smr_valued(const char *f, const char *v, struct smr_config *cfg, struct smr_posix *g) {
    if (strcmp(f, "--listen") == 0) {
        if (!v || g->nlisten == SMR_MAX_LISTEN || smr_parse_addr(v, &g->listen[g->nlisten]) != 0)
            smr_die("--listen wants ADDR:PORT (e.g. 127.0.0.1:24680 or [::1]:24680), got ", v ? v : "nothing");
        g->nlisten++;
    } else if (strcmp(f, "--objects") == 0) {
        smr_objects(v, cfg);
    } else if (strcmp(f, "--priority") == 0) {
        smr_priority(v);
    } else if (strcmp(f, "--allow") == 0) {
        smr_allow(&g->adm, v);
#ifndef SMR_NO_AUTH
    } else if (strcmp(f, "--secret-file") == 0) {
        smr_secret(v, cfg);
#endif
    } else {
        smr_die("unknown flag ", f);
    }
}

/* The numeric flags' values (in smr_numflag's order) into their places. */
static void smr_apply(const unsigned long *n, struct smr_config *cfg, struct smr_posix *g) {
    cfg->max_sessions = (uint32_t)n[0];
    cfg->max_msg = (uint32_t)n[1];
    cfg->header_timeout_ns = (uint64_t)n[2] * 1000000u;
    cfg->idle_timeout_ns = (uint64_t)n[3] * 1000000u;
    if (n[4] != (unsigned long)-1) smr_pin(n[4]);
    g->busy_poll = (int)n[5];
#ifndef SMR_KNOBS
    if (n[5]) smr_die("--busy-poll is only in Linux builds with the knobs (not -DSMR_NO_KNOBS)", NULL);
#endif
    cfg->max_test_s = (uint32_t)n[6];
    cfg->max_rate_bps = n[7];
    cfg->max_tests_per_client = (uint32_t)n[8];
    g->adm.max_idle = (uint32_t)n[9];
    g->adm.max_cps = (uint32_t)n[10];
}

void smr_args(int argc, char **argv, struct smr_config *cfg, struct smr_posix *g) {
    static const unsigned long max[SMR_NNUM] = {SMR_MAX_CONNS, 0xffffffffu, 86400000u, 86400000u, 1023, 1000000u,
                                         31536000u, sizeof(long) > 4 ? 10000000000ull : 0xffffffffu,
                                         SMR_MAX_CONNS, SMR_MAX_CONNS, 1000000u};
    unsigned long n[SMR_NNUM];
    size_t k;
    int i;
    n[0] = cfg->max_sessions;
    n[1] = cfg->max_msg;
    n[2] = (unsigned long)(cfg->header_timeout_ns / 1000000u);
    n[3] = (unsigned long)(cfg->idle_timeout_ns / 1000000u);
    n[4] = (unsigned long)-1;
    for (k = 5; k < SMR_NNUM; k++) n[k] = 0;
    for (i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (smr_switch(f, cfg, g)) continue;
        i++;
        for (k = 0; k < SMR_NNUM && strcmp(f, smr_numflag[k]) != 0; k++)
            ;
        if (k < SMR_NNUM)
            n[k] = smr_num(f, v, max[k], k < 6 ? 1024 : 1000);
        else
            smr_valued(f, v, cfg, g);
    }
    smr_apply(n, cfg, g);
}
