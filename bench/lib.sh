# bench/lib.sh - what the bench scripts share (sourced, not run): progress
# notes, cleanup on exit or signal, starting a server and waiting until it
# listens, running a client with a time bound, logging the command lines
# once, free ports, the floor programs built, rows of results, the
# machine's line, the C responders beside the Rust one. Sourcing defines
# functions only. latency.sh and throughput.sh define SERVER_PIDS,
# CLIENT_PID, WORK, KEEP_LOGS, RUN_NO, CMDS and their own stop_server;
# load.sh, sessions.sh, openloop.sh and rrul.sh keep pids and $work and
# use pids_cleanup, start_named and c_sides; lab-stacks.sh, mcu-stacks.sh
# and path-floors.sh use lab_work.

# Progress and notes go to stderr; stdout carries only the Markdown report.
note() { printf '# %s\n' "$*" >&2; }

die() { note "error: $*"; exit 1; }

cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    if [[ -n $CLIENT_PID ]]; then
        kill -TERM "$CLIENT_PID" 2>/dev/null || true
        wait "$CLIENT_PID" 2>/dev/null || true
    fi
    for pid in "${SERVER_PIDS[@]}"; do
        stop_server "$pid"
    done
    if [[ -n $WORK && -d $WORK ]]; then
        if [[ $KEEP_LOGS == 1 ]]; then
            note "raw outputs kept in $WORK"
        else
            rm -rf -- "$WORK"
        fi
    fi
    exit "$rc"
}

# True once process PID listens on PORT (PROTO t = TCP, u = UDP).
wait_listen() {
    local proto=$1 port=$2 pid=$3 i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || return 1
        if ! command -v ss >/dev/null; then
            sleep 0.5
            return 0
        fi
        if ss -Hln"$proto"p "sport = :$port" 2>/dev/null | grep -q "pid=$pid,"; then
            return 0
        fi
        sleep 0.05
    done
    return 1
}

# start_server LOG PROTO PORT CMD... ; sets SERVER_PID.
start_server() {
    local log=$1 proto=$2 port=$3
    shift 3
    "$@" >"$log" 2>&1 &
    SERVER_PID=$!
    SERVER_PIDS+=("$SERVER_PID")
    if ! wait_listen "$proto" "$port" "$SERVER_PID"; then
        note "server did not start: $*"
        sed 's/^/#   /' "$log" >&2 || true
        stop_server "$SERVER_PID"
        return 1
    fi
}

# Log each distinct command line once (first repetition).
log_cmd() {
    local label=$1
    shift
    if [[ $RUN_NO == 1 ]]; then
        printf '%s\t%s\n' "$label" "$(printf '%q ' "$@")" >>"$CMDS"
    fi
}

# ------------------------------------------------------------ reports
# What the report scripts (latency.sh, throughput.sh, openloop.sh, rrul.sh)
# share beyond the process handling above.

# The machine in one line: kernel, CPUs, CPU model, and the time (UTC).
machine_line() {
    echo "$(uname -sr), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%Y-%m-%dT%H:%MZ)"
}

# run_bounded SECONDS OUT CMD...: CMD with stdout to OUT and stderr to
# OUT.err, killed after SECONDS. Run in the background and waited for, so a
# signal reaches the caller's trap at once (CLIENT_PID meanwhile).
run_bounded() {
    local secs=$1 out=$2 rc=0
    shift 2
    timeout -k 2 "$secs" "$@" >"$out" 2>"$out.err" &
    CLIENT_PID=$!
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    return "$rc"
}

# append_row FILE FIELDS...: one tab-separated line, a tab or a newline
# inside a field written as a space.
append_row() {
    local file=$1 f
    shift
    for f in "$@"; do
        printf '%s\t' "${f//[$'\t\n']/ }"
    done >>"$file"
    printf '\n' >>"$file"
}

# last_line FILE...: the last non-blank line (at most 160 characters) of
# the first FILE that is not empty, else "no output".
last_line() {
    local f
    for f in "$@"; do
        if [[ -s $f ]]; then
            grep -v '^\s*$' "$f" | tail -n 1 | cut -c 1-160
            return
        fi
    done
    echo "no output"
}

# start_named NAME PORT CMD...: a responder logging to $work/NAME.log,
# its pid added to the caller's pids (and pid_of[NAME] where the caller
# declared that map), waited for until it listens on TCP PORT.
start_named() {
    local name=$1 port=$2
    shift 2
    "$@" >"$work/$name.log" 2>&1 &
    pids+=("$!")
    if [[ $(declare -p pid_of 2>/dev/null) == "declare -A"* ]]; then
        pid_of[$name]=$!
    fi
    for _ in $(seq 100); do
        ss -Hltn "sport = :$port" 2>/dev/null | grep -q LISTEN && return 0
        sleep 0.05
    done
    note "$name did not start: $*"
    cat "$work/$name.log" >&2
    return 1
}

# c_sides PORT_C PORT_BEFORE: the C responder (C_RESPONDER) on PORT_C and,
# when C_BEFORE is set, that binary on PORT_BEFORE, each pinned to
# SERVER_CPU, started with start_named and added to the caller's sides.
c_sides() {
    if [[ -x $C_RESPONDER ]]; then
        start_named c "$1" "$C_RESPONDER" --listen "127.0.0.1:$1" --affinity "$SERVER_CPU" --quiet
        sides+=("c=127.0.0.1:$1")
    else
        note "no C responder at $C_RESPONDER (make -C c-responder): Rust only"
    fi
    if [[ -n $C_BEFORE ]]; then
        start_named c-before "$2" "$C_BEFORE" --listen "127.0.0.1:$2" --affinity "$SERVER_CPU" --quiet
        sides+=("c-before=127.0.0.1:$2")
    fi
}

# On exit, for the scripts that keep their processes in pids and their
# files in $work: stop them all, remove $work.
pids_cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}

# Ports free for both TCP and UDP on HOST, from PORT_BASE up.
pick_ports() {
    python3 - "$HOST" "$PORT_BASE" "$1" <<'PY'
import socket, sys
host, port, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
held, found = [], []
while len(found) < want and port < 65536:
    socks = []
    try:
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            s = socket.socket(socket.AF_INET, kind)
            socks.append(s)
            s.bind((host, port))
        found.append(port)
        held += socks
    except OSError:
        for s in socks:
            s.close()
    port += 1
if len(found) < want:
    sys.exit("no free ports")
print(" ".join(map(str, found)))
PY
}

# build_floor PROGRAM...: bench/floor/PROGRAM.c compiled into $BIN.
build_floor() {
    local p cc=${CC:-cc}
    mkdir -p "$BIN"
    for p in "$@"; do
        "$cc" -std=c99 -O2 -Wall -Wextra -Werror -pedantic -D_POSIX_C_SOURCE=200809L \
            -o "$BIN/$p" "$BENCH_DIR/floor/$p.c" ||
            die "could not build bench/floor/$p.c with $cc"
    done
}

# ------------------------------------------------------------ noise and paths
# What decide.sh, history-relative.sh and fleet-aa.sh share: the busy loop
# that switches on and off, and two rate-limited paths to one responder.

# busy_toggler: a shell busy loop, unpinned, on for 0.5-3 s and off for
# 0.5-3 s at random (seed RANDOM first), until killed (TERM: it takes its
# loop with it). Run it in the background.
busy_toggler() {
    local burner="" ms
    trap 'kill "$burner" 2>/dev/null; exit 0' TERM
    while :; do
        sh -c 'while :; do :; done' &
        burner=$!
        ms=$((500 + RANDOM % 2500))
        sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
        kill "$burner" 2>/dev/null || true
        wait "$burner" 2>/dev/null || true
        ms=$((500 + RANDOM % 2500))
        sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    done
}

# two_paths NS DEV NET_A NET_B PORT SM LOG: a namespace NS with one
# responder (SM serve, on CPU 0) listening on NET_A.2:PORT and NET_B.2:PORT,
# each reached over a veth of its own (DEV-a0/DEV-a1, DEV-b0/DEV-b1, the
# *1 side in the namespace, the responses' way); its pid goes into PIDS.
two_paths() {
    local ns=$1 dev=$2 net_a=$3 net_b=$4 port=$5 sm=$6 log=$7 side net
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    for side in a b; do
        net=$([[ $side == a ]] && echo "$net_a" || echo "$net_b")
        ip link add "$dev-${side}0" type veth peer name "$dev-${side}1"
        ip link set "$dev-${side}1" netns "$ns"
        ip addr add "$net.1/24" dev "$dev-${side}0"
        ip link set "$dev-${side}0" up
        ip -n "$ns" addr add "$net.2/24" dev "$dev-${side}1"
        ip -n "$ns" link set "$dev-${side}1" up
    done
    ip netns exec "$ns" taskset -c 0 "$sm" serve --listen "$net_a.2:$port" --listen "$net_b.2:$port" 2>"$log" &
    PIDS+=("$!")
    for _ in $(seq 100); do grep -q "listening on tcp" "$log" && return 0; sleep 0.05; done
    return 1
}

# two_paths_down NS DEV: what two_paths made, removed.
two_paths_down() {
    local pid
    for pid in $(ip netns pids "$1" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    ip link del "$2-a0" 2>/dev/null || true
    ip link del "$2-b0" 2>/dev/null || true
    ip netns del "$1" 2>/dev/null || true
}

# path_rate NS DEV MBIT: the tbf on a path's response side (burst 2 KiB,
# so a 16 KiB response is paced, not sent in one burst).
path_rate() {
    ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3mbit" burst 2kb latency 100ms
}

# lab_work NAME: the work folder of a script that brings the lab up
# (lab-stacks.sh, mcu-stacks.sh): WORK made, the lab's state and results
# store inside it, and on exit or signal the lab taken down and WORK
# removed (kept with KEEP_LOGS=1), then LAB_CLEANUP (a function name, if
# the script set one) run first for what else it made.
lab_work() {
    WORK=$(mktemp -d "/tmp/stackmeter-$1.XXXXXX")
    export STACKMETER_LAB_DIR=$WORK/lab STACKMETER_DB=$WORK/results.db
    trap lab_done EXIT INT TERM
}

lab_done() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n ${LAB_CLEANUP:-} ]]; then "$LAB_CLEANUP"; fi
    "$STACKMETER" lab down >/dev/null 2>&1 || true
    if [[ ${KEEP_LOGS:-0} == 1 ]]; then note "raw outputs kept in $WORK"; else rm -rf -- "$WORK"; fi
    exit "$rc"
}
