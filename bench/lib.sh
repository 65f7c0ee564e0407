# bench/lib.sh - what the bench scripts share (sourced, not run): progress
# notes, cleanup on exit or signal, starting a server and waiting until it
# listens, running a client with a time bound, logging the command lines
# once, free ports, the floor programs built, rows of results, the
# machine's line, the C responders beside the Rust one. Sourcing defines
# functions only. latency.sh and throughput.sh define SERVER_PIDS,
# CLIENT_PID, WORK, KEEP_LOGS, RUN_NO, CMDS and their own stop_server;
# load.sh, sessions.sh, openloop.sh and rrul.sh keep pids and $work and
# use pids_cleanup, start_named and c_sides; the scripts that make TAP
# devices check with need_lab; lab-stacks.sh, mcu-stacks.sh and
# path-floors.sh use lab_work; embox-linux.sh and nuttx-linux.sh (an RTOS
# against Linux on one emulated board) use lab_work and the board_* and
# rtos_* functions at the end.

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

# need_lab WHAT: root (for WHAT, the devices the script makes) and the
# stackmeter binary, or a one-line error.
need_lab() {
    [[ $(id -u) == 0 ]] || die "needs root ($1)"
    [[ -x $STACKMETER ]] || die "$STACKMETER not found (cargo build --release -p stackmeter)"
}

# ------------------------------------------------------------ an RTOS against Linux
# What embox-linux.sh and nuttx-linux.sh share: the emulated boards and
# floors they boot on TAP devices of their own (PIDS, TAPS, LAST_PID are
# theirs), the rounds of the round-trip table, and the report's common
# parts (rtos_report). They run under lab_work, with WORK, STACKMETER,
# COUNT, REPEAT, SERVER_CPU and CLIENT_CPU set.

# board_tap NAME NET: a TAP device with the host at 198.18.NET.1/24,
# removed by boards_down.
board_tap() {
    ip link show "$1" >/dev/null 2>&1 && die "$1 exists already (another lab or bench run?)"
    ip tuntap add dev "$1" mode tap
    TAPS+=("$1")
    ip addr add "198.18.$2.1/24" dev "$1"
    ip link set "$1" mtu 1500 up
}

# board_qemu NAME READY SECONDS ARGS...: qemu-system-arm with ARGS on
# SERVER_CPU, no display, its console in $WORK/NAME.console, waited for
# until READY appears there (SECONDS at most); its pid in LAST_PID.
board_qemu() {
    local name=$1 ready=$2 secs=$3
    shift 3
    taskset -c "$SERVER_CPU" qemu-system-arm -display none -monitor none -serial "file:$WORK/$name.console" "$@" \
        2>>"$WORK/qemu.log" &
    PIDS+=($!)
    LAST_PID=$!
    for _ in $(seq $((secs * 10))); do
        grep -q "$ready" "$WORK/$name.console" 2>/dev/null && return 0
        kill -0 "$LAST_PID" 2>/dev/null || break
        sleep 0.1
    done
    die "$name did not come up: $(tail -5 "$WORK/$name.console" "$WORK/qemu.log" 2>/dev/null)"
}

# boards_down: every QEMU board_qemu started (continued first, should it
# be stopped) and every TAP device board_tap made, gone; the scripts'
# LAB_CLEANUP (lab_done takes the lab down).
boards_down() {
    local p d
    for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
    for d in "${TAPS[@]}"; do ip link del "$d" 2>/dev/null || true; done
}

# rtos_round LABEL ADDR: COUNT 64-byte echoes against ADDR (every payload
# checked, answers over 100 us counted slow), the client on CLIENT_CPU;
# LABEL's figures appended to $WORK/rounds, the round-trip table's input.
rtos_round() {
    taskset -c "$CLIENT_CPU" "$STACKMETER" ping "$2" -c "$COUNT" --slow-us 100 --json --no-store \
        >"$WORK/ping.json" 2>"$WORK/ping.err" || die "ping $1: $(tail -1 "$WORK/ping.err")"
    python3 - "$1" "$WORK/ping.json" >>"$WORK/rounds" <<'EOF'
import json, sys
r = json.load(open(sys.argv[2]))["results"][0]
t = r["rtt_us"]
print(sys.argv[1], t["mean"], t["min"], t["max"], t["p50"], t["p99"], r["slow"], r["mismatched"], r["received"], r["sent"])
EOF
}

# rtos_split NAME ADDR: COUNT 128-byte echoes with --timestamps against
# ADDR into $WORK/split-NAME.json: where a round trip goes.
rtos_split() {
    taskset -c "$CLIENT_CPU" "$STACKMETER" ping "$2" -c "$COUNT" --size 128 --timestamps --json --no-store \
        >"$WORK/split-$1.json" 2>"$WORK/split-$1.err" || die "ping --timestamps $1: $(tail -1 "$WORK/split-$1.err")"
}

# rtos_report PART ARGS...: a part of the report in Markdown, from
# $WORK/rounds (per target, over the rounds: the median of mean, p50 and
# p99, the least min, the most max, the counts summed) and
# $WORK/split-NAME.json:
#   table TARGET...          the round-trip table, the targets measured in
#                            this order
#   ratio A B TEXT [MORE]    "TEXT: A / B on the mean, on the median MORE."
#   floors IRQ POLL SYS...   each system's p50 above the two floors
#   above A B IRQ TEXT       "TEXT: (A - IRQ) / (B - IRQ)" at the medians
#   split NAME...            the split's parts, p50
#   board NAME...            the board's share of the split (stack in,
#                            application, stack out)
#   stamped NAME...          the split's round trip against the table's
rtos_report() {
    python3 - "$WORK" "$COUNT" "$REPEAT" "$@" <<'EOF'
import json, os, statistics, sys
work, count, repeat, part, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
rows = {}
for line in open(os.path.join(work, "rounds")):
    label, *v = line.split()
    rows.setdefault(label, []).append([float(x) for x in v])
med = statistics.median
table = {}
for label, rs in rows.items():
    col = list(zip(*rs))
    table[label] = dict(mean=med(col[0]), min=min(col[1]), max=max(col[2]), p50=med(col[3]), p99=med(col[4]),
                        slow=int(sum(col[5])), mismatched=int(sum(col[6])), received=int(sum(col[7])), sent=int(sum(col[8])))
def split(t):
    try:
        return json.load(open(os.path.join(work, f"split-{t}.json")))["results"][0]
    except Exception:
        return None
if part == "table":
    print(f"`stackmeter ping -c {count} --slow-us 100`, every target and floor in turn, {repeat} rounds: the median over rounds of mean, p50 and p99, the least min, the most max, slow answers (over 100 us) and mismatched payloads summed.\n")
    print("| target | mean (us) | min (us) | max (us) | p50 (us) | p99 (us) | slow > 100 us | mismatched | received / sent |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for l in [l for l in args if l in table]:
        t = table[l]
        print(f"| {l} | {t['mean']:.1f} | {t['min']:.1f} | {t['max']:.1f} | {t['p50']:.1f} | {t['p99']:.1f} | {t['slow']} | {t['mismatched']} | {t['received']} / {t['sent']} |")
elif part == "ratio":
    a, b, text, more = args[0], args[1], args[2], (args[3] if len(args) > 3 else "")
    if a in table and b in table:
        print(f"\n{text}: {table[a]['mean'] / table[b]['mean']:.2f}x on the mean, {table[a]['p50'] / table[b]['p50']:.2f}x on the median{more}.")
elif part == "floors":
    irq, poll = args[0], args[1]
    print(f"| target | p50 (us) | above {irq} (us) | above {poll} (us) |")
    print("|---|---:|---:|---:|")
    for l in [l for l in args[2:] if l in table]:
        p = table[l]["p50"]
        fi = table.get(irq, {}).get("p50", float("nan"))
        fp = table.get(poll, {}).get("p50", float("nan"))
        print(f"| {l} | {p:.1f} | {p - fi:.1f} | {p - fp:.1f} |")
elif part == "above":
    a, b, irq, text = args
    if all(k in table for k in [a, b, irq]):
        fi = table[irq]["p50"]
        print(f"\nAbove the interrupt-driven floor, {text}: {(table[a]['p50'] - fi) / (table[b]['p50'] - fi):.2f}x.")
elif part == "split":
    parts = ["client_send_stack", "out_path", "responder_stack_in", "responder_app", "back_path", "responder_stack_out", "client_recv_stack"]
    splits = {t: split(t) for t in args}
    print("| part | " + " | ".join(args) + " |")
    print("|---|" + "---:|" * len(args))
    for p in parts:
        print(f"| {p} | " + " | ".join(f"{splits[t]['split_us'][p]['p50']:.1f}" if splits[t] else "-" for t in args) + " |")
elif part == "board":
    print()
    for t in [t for t in args if split(t)]:
        s = split(t)["split_us"]
        board = s["responder_stack_in"]["p50"] + s["responder_app"]["p50"] + s["responder_stack_out"]["p50"]
        print(f"{t}: on the board, stack in + application + stack out = {board:.1f} us at the medians, the application {100 * s['responder_app']['p50'] / board:.0f}% of it; {s['samples']} exchanges split, {s['incomplete']} without all stamps, {s['unbalanced']} not adding up.")
elif part == "stamped":
    for t in [t for t in args if split(t) and t in table]:
        r = split(t)["rtt_us"]
        print(f"{t}: the round trip with stamps asked for, p50 {r['p50']:.1f} us (mean {r['mean']:.1f}), against {table[t]['p50']:.1f} without (table 1) (stamping adds work on the board, where Linux reads each send stamp back from the socket's error queue, and on the host; the two runs are also minutes apart, and a difference of a few microseconds either way is theirs).")
else:
    sys.exit(f"rtos_report: no part {part}")
EOF
}

# size_files DIR FILE...: each FILE of DIR that is there, under its name
# (the builds' sizes and times).
size_files() {
    local dir=$1 f
    shift
    for f in "$@"; do
        if [[ -f $dir/$f ]]; then printf '%s:\n%s\n' "$f" "$(cat "$dir/$f")"; fi
    done
}

# console_lines PATTERN FILE...: the lines of the consoles that are there
# matching PATTERN (grep's), trimmed (a serial console ends its lines in
# CR).
console_lines() {
    local pattern=$1 f
    shift
    for f in "$@"; do
        if [[ -f $f ]]; then grep -a -- "$pattern" "$f" | tr -d '\r' | sed 's/^[[:space:]]*//; s/[[:space:]]*$//' || true; fi
    done
}
