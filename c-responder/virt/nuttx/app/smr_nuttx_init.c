/*
 * smr_nuttx_init.c - the init task of the stackmeter NuttX image
 * (CONFIG_INIT_ENTRYPOINT="stackmeter_init"): brings eth0 up at its fixed
 * address, starts the responder on its port, says on the console that it
 * is ready, then hands the console to NSH.
 *
 * Why an init task of our own rather than NSH's start-up script: NSH runs
 * /etc/init.d/rcS only from a ROMFS image, which NuttX's build makes with
 * the host's genromfs (one more tool to install), and a script cannot
 * tell when the responder is listening. Here the responder is a task
 * started with task_create (its priority and stack from Kconfig), and
 * the ready line is printed only once its UDP port is taken, which this
 * task sees by failing to bind that port itself. NSH still runs on the
 * console afterwards for whoever looks (ifconfig, ps, free), as the Linux
 * guest's init leaves a shell.
 *
 * The address comes from netinit (apps/netutils/netinit: CONFIG_NETINIT_
 * IPADDR and friends, which build.sh sets from NUTTX_IP and NUTTX_GW);
 * the MAC is the one QEMU gives the virtio-net device. The ready line,
 *   nuttx: eth0 A.B.C.D MAC, responder on udp and tcp PORT, K KiB of
 *   heap in use, ready S s after boot
 * names the heap in use then (mallinfo), the image's static RAM being in
 * nuttx-size.txt.
 */
#include <nuttx/config.h>

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "netutils/netinit.h"
#include "netutils/netlib.h"

/* The responder's main (smr_main.c, renamed by Application.mk) and NSH's. */
int stackmeter_main(int argc, char *argv[]);
int nsh_main(int argc, char *argv[]);
int stackmeter_init(int argc, char *argv[]);

#define INIT_PORT_WAIT_MS 5000
#define INIT_PORT_STEP_MS 10
#define INIT_STR2(x) #x
#define INIT_STR(x) INIT_STR2(x)

/* 1 once something holds UDP port STACKMETER_PORT (our bind fails with
 * EADDRINUSE), 0 while it is free, -1 when no socket can be had. */
static int init_port_taken(void) {
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_DGRAM, 0), r;
    if (fd < 0) return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(STACKMETER_PORT);
    r = bind(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno == EADDRINUSE;
    close(fd);
    return r;
}

/* Waits, bounded, until the responder listens: 0, or -1 when it did not. */
static int init_wait_responder(void) {
    int waited;
    for (waited = 0; waited < INIT_PORT_WAIT_MS; waited += INIT_PORT_STEP_MS) {
        int t = init_port_taken();
        if (t != 0) return t > 0 ? 0 : -1;
        usleep(INIT_PORT_STEP_MS * 1000);
    }
    return -1;
}

static void init_ready(void) {
    struct in_addr ip;
    uint8_t mac[6] = {0};
    struct mallinfo mi = mallinfo();
    struct timespec now;
    char a[INET_ADDRSTRLEN] = "?";
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (netlib_get_ipv4addr("eth0", &ip) == 0) inet_ntop(AF_INET, &ip, a, sizeof a);
    (void)netlib_getmacaddr("eth0", mac);
    printf("nuttx: eth0 %s %02x:%02x:%02x:%02x:%02x:%02x, responder on udp and tcp %d, %lu KiB of heap in use, "
           "ready %ld.%02ld s after boot\n",
           a, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], STACKMETER_PORT, (unsigned long)mi.uordblks / 1024,
           (long)now.tv_sec, now.tv_nsec / 10000000L);
    fflush(stdout);
}

int stackmeter_init(int argc, char *argv[]) {
    static char *args[] = {"--listen", "0.0.0.0:" INIT_STR(STACKMETER_PORT), "--max-sessions", "16", "--quiet", NULL};
    if (netinit_bringup() != 0) printf("nuttx: panic: eth0 did not come up (no virtio-net device?)\n");
    if (task_create("stackmeter", STACKMETER_PRIORITY, STACKMETER_STACKSIZE, stackmeter_main, args) < 0)
        printf("nuttx: panic: the responder's task was not created: %s\n", strerror(errno));
    else if (init_wait_responder() != 0)
        printf("nuttx: panic: the responder does not listen on udp %d\n", STACKMETER_PORT);
    else
        init_ready();
    return nsh_main(argc, argv);
}
