/*
 * main() of stackmeter-responder, the POSIX build: the command line into
 * the engine's config (smr_args.c), then the sockets loop (smr_posix.c).
 * A separate file so the lwIP sockets build (smr_lwip_sock.c) can bring
 * its stack up first and then run the same loop.
 */
#include "smr_posix_int.h"

int main(int argc, char **argv) {
    /* The backend's one state (about 0.5 MiB with 1024 sessions: static,
     * not on the stack), handed to the parts that fill and run it. */
    static struct smr_posix g;
    struct smr_config cfg;
    smr_default_config(&cfg);
    smr_args(argc, argv, &cfg, &g);
    return smr_run(&g, &cfg);
}
