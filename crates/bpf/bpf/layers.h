/* The record layers.bpf.c writes per round trip, shared with its loader
 * (src/layers.rs, Trip: a #[repr(C)] struct with the same fields in the
 * same order; both sides assert the size), and the counters' slots. */
#ifndef LAYERS_H
#define LAYERS_H

/* Positions along a round trip: 0 and LAYER_POINTS - 1 are the client's own
 * clock reads (filled in by the loader), the rest the kernel's. What each
 * one is depends on the mode (UDP or TCP): src/layers.rs names them. */
#define LAYER_POINTS 15

struct layer_trip {
	__u64 key;               /* UDP: the datagram's sequence number; TCP: connection << 40 | transaction */
	__u64 at[LAYER_POINTS];  /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) at each position, 0: not seen */
	__u8 cpu[LAYER_POINTS];  /* the CPU each ran on */
	__u8 state;              /* enum trip_state */
};

_Static_assert(sizeof(struct layer_trip) == 144, "src/layers.rs reads 144 bytes: change both");

enum trip_state { TRIP_EMPTY = 0, TRIP_OPEN, TRIP_SENT };

enum layer_counter {
	LC_EMITTED = 0,  /* records written to the ring buffer */
	LC_LOST,         /* records the full ring buffer refused */
	LC_UNFINISHED,   /* trips begun and overwritten before their last point */
	LC_NR
};

#endif
