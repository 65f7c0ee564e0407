/*
 * smr_nuttx.h - the C responder's build choices on NuttX, included before
 * every source file (-include, from apps/stackmeter/Makefile) so that
 * c-responder/src compiles as it is: poll() rather than epoll; no kernel
 * timestamps (NuttX has no SO_TIMESTAMPING; SMR_TS is Linux's alone) but
 * the stamp block from our virtio-net driver stamps (c-responder/stamps,
 * stamps/smr_nuttx_frames.c), as on Embox; none of Linux's real-time
 * knobs (an RTOS sets a task's priority where it starts the task: the
 * init task does, smr_nuttx_init.c); pools sized for a board as on Embox
 * (c-responder/a9/embox/smr_embox.h): 16 sessions, 4 spare, 4 tests at
 * once.
 */
#ifndef SMR_NUTTX_H
#define SMR_NUTTX_H

#define SMR_POLL 1
#define SMR_DRIVER_TS 1
#define SMR_NO_KNOBS 1
#define SMR_MAX_CONNS 16
#define SMR_SPARE_CONNS 4
#define SMR_MAX_TESTS 4
#define SMR_NAME "stackmeter-nuttx"

#endif
