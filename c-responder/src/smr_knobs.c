/*
 * Where and how the responder's one thread runs: --affinity (CPU pinning),
 * and the real-time knobs --priority fifo:N|rr:N|nice:N and --mlock (the
 * settings a latency test on Linux asks for: nice -n -20, chrt --rr 99).
 * Linux only; -DSMR_NO_KNOBS leaves the knobs out (an RTOS sets its task's
 * priority where the firmware creates the task), and a flag a build does
 * not have is refused with a line saying so. --busy-poll is a socket
 * option, set where the sockets are made (smr_posix.c).
 */
#include "smr_posix_int.h"

#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <sched.h>
#endif
#if defined(SMR_KNOBS)
#include <sys/mman.h>
#include <sys/resource.h>
/* smr_priority indexes its names by policy number. */
typedef char smr_check_sched[SCHED_OTHER == 0 && SCHED_FIFO == 1 && SCHED_RR == 2 ? 1 : -1];
#endif

void smr_pin(unsigned long cpu) {
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) smr_die("--affinity: cannot pin to that CPU", NULL);
#else
    (void)cpu;
    smr_die("--affinity is only supported on Linux", NULL);
#endif
}

void smr_priority(const char *v) {
#if defined(SMR_KNOBS)
    /* Indexed by policy: SCHED_OTHER (0, with nice), SCHED_FIFO (1), SCHED_RR (2). */
    static const char *const pols[] = {"nice", "fifo", "rr"};
    struct sched_param p;
    char name[5];
    int k = 0, used = 0, pol = 3;
    if (v && sscanf(v, "%4[a-z]:%3d%n", name, &k, &used) == 2 && !v[used])
        for (pol = 0; pol < 3 && strcmp(name, pols[pol]) != 0; pol++)
            ;
    if (pol == 3 || (pol ? k < 1 || k > 99 : k < -20 || k > 19))
        smr_die("--priority wants fifo:N or rr:N (N 1..99), or nice:N (N -20..19), got ", v ? v : "nothing");
    memset(&p, 0, sizeof p);
    p.sched_priority = pol ? k : 0;
    if (sched_setscheduler(0, pol, &p) != 0 || (!pol && setpriority(PRIO_PROCESS, 0, k) != 0))
        smr_die("--priority: not permitted (run as root, or give the process CAP_SYS_NICE or an RLIMIT_RTPRIO / "
                "RLIMIT_NICE that allows it): ", v);
#else
    (void)v;
    smr_die("--priority is only in Linux builds with the knobs (not -DSMR_NO_KNOBS)", NULL);
#endif
}

void smr_mlock(void) {
#if defined(SMR_KNOBS)
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
        smr_die("--mlock: cannot lock this process's memory (run as root, or raise RLIMIT_MEMLOCK with ulimit -l)",
                NULL);
#else
    smr_die("--mlock is only in Linux builds with the knobs (not -DSMR_NO_KNOBS)", NULL);
#endif
}
