# bench/lib.sh - process handling shared by the bench scripts (sourced,
# not run): progress notes, cleanup on exit or signal, starting a server and
# waiting until it listens, running a client with a time bound, logging the
# command lines once. The sourcing script defines SERVER_PIDS, CLIENT_PID,
# WORK, KEEP_LOGS, RUN_NO, CMDS and its own stop_server.

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
