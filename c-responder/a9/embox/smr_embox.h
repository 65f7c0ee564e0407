/*
 * The C responder's build choices on Embox, included before every source
 * file (--include, from the module's Mybuild) so that c-responder/src
 * compiles as it is: poll() rather than epoll; the stamp block
 * (docs/protocol.md 4.3) from our LAN9118 driver stamps
 * (c-responder/stamps, stamps/smr_embox_frames.c) rather than Linux's
 * SO_TIMESTAMPING, and the clock they share, the A9's global timer; none of Linux's real-time
 * knobs (an RTOS sets a task's priority where it starts the task); pools
 * sized for a board: 16 sessions, 4 tests at once.
 */
#ifndef SMR_EMBOX_H
#define SMR_EMBOX_H

#define SMR_POLL 1
#define SMR_DRIVER_TS 1
#define SMR_PLATFORM_CLOCK 1
#define SMR_NO_KNOBS 1
#define SMR_MAX_CONNS 16
#define SMR_SPARE_CONNS 4
#define SMR_MAX_TESTS 4
#define SMR_NAME "stackmeter-embox"

#endif
