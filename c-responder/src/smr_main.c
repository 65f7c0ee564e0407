/*
 * main() of stackmeter-responder, the POSIX build: the command line into
 * the engine's config (smr_args.c), then the sockets loop (smr_posix.c).
 * A separate file so the lwIP sockets build (smr_lwip_sock.c) can bring
 * its stack up first and then run the same loop.
 */
#include "smr_posix.h"

int main(int argc, char **argv) {
    struct smr_config cfg;
    smr_default_config(&cfg);
    smr_args(argc, argv, &cfg);
    return smr_run(&cfg);
}
