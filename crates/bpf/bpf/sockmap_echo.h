/* Counter slots of sockmap_echo's per-CPU array, shared by the BPF program
 * and its loader. */
#ifndef SOCKMAP_ECHO_H
#define SOCKMAP_ECHO_H

enum sockmap_echo_counter {
	SE_VERDICTS = 0,   /* verdict program runs (one per skb or parsed message) */
	SE_ECHOED_BYTES,   /* bytes redirected back out of the same socket */
	SE_ECHOED_MSGS,    /* runs that redirected (SK_PASS from the redirect) */
	SE_NOT_IN_MAP,     /* socket not in the map: data left to the application */
	SE_PARSER_RUNS,    /* stream parser runs (parser mode only) */
	SE_NR
};

#endif
