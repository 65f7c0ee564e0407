/*
 * main() of stackmeter-lwip-sock, the lwIP sockets-API backend (the
 * "application" path: a responder that talks to an in-process lwIP
 * through lwip_socket/lwip_poll/...): brings lwIP up on a TAP device, then
 * runs the POSIX backend's loop, whose files are compiled with -DSMR_LWIP
 * (smr_posix.h maps every socket call to lwip_NAME).
 * Usage: lwip-sock TAP-DEVICE IPV4-ADDRESS [--listen ADDR:PORT] [flags]
 */
#include "smr_posix.h"
#include "smr_lwip_common.h"

#include <stdio.h>

int main(int argc, char **argv) {
    struct smr_config cfg;
    smr_default_config(&cfg);
    /* lwip-sock TAP IP [flags]: the stack runs in this process. */
    if (argc < 3 || argv[1][0] == '-') smr_die("usage: " SMR_NAME " TAP-DEVICE IPV4-ADDRESS [flags]", NULL);
    smr_args(argc - 2, argv + 2, &cfg);
    if (smr_lwip_start(argv[1], argv[2]) != 0) smr_die("cannot start lwIP on TAP device ", argv[1]);
    if (smr_g.nlisten == 0) {
        char a[40];
        snprintf(a, sizeof a, "%s:%d", argv[2], SMR_DEFAULT_PORT);
        if (smr_parse_addr(a, &smr_g.listen[0]) != 0) smr_die("bad IPv4 address ", argv[2]);
        smr_g.nlisten = 1;
    }
    return smr_run(&cfg);
}
