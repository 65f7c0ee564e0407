#!/usr/bin/env bash
# bench/k8s-cni.sh - which pod network is faster, asked of a real
# Kubernetes cluster (not a test): the same fleet (rr, crr, ping, stream)
# on host network and on each pod network that scripts/k8s-local offers
# with Debian's CNI plugins (bridge, ptp, macvlan, ipvlan), every network
# in every round (the order turned by one each round, so no network is
# always first), and `fleet compare` of each against host network: the
# verdict and the 95% interval of every figure of every pair.
#
# Two nodes (node-1 and node-2), both directions; every test is in the
# exclusive class, so the two client Jobs never measure at the same time
# (PostgreSQL's advisory locks keep them apart, as on a real fleet). The
# clients measure the responders' pod addresses (with host network, the
# nodes'), so no hostPort rewriting is in the path unless asked for. The
# nodes' pods are pinned (scripts/k8s-local up --pin: node-1's on CPU 0,
# node-2's on CPU 1), so a client and the responder it measures are on
# different CPUs in every run: on two CPUs an unpinned pair flips between
# sharing a CPU and not, and the round trip with it.
#
# Needs root, the pieces of scripts/k8s-local (built on first use),
# PostgreSQL 15 (Debian's postgresql) and python3. Run it with nothing
# else heavy on the machine:
#   sudo bench/k8s-cni.sh > bench/results/DATE-k8s-cni.md
#   ROUNDS=6 NETS="host bridge bridge-hostport ptp macvlan ipvlan" STACKMETER=target/release/stackmeter
# A network named NET-hostport is pod network NET measured at the nodes'
# addresses instead: through the responders' hostPort, which the portmap
# plugin makes with a DNAT rule on each node (the rewriting in the path).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-6}
read -r -a NETS <<<"${NETS:-host bridge bridge-hostport ptp macvlan ipvlan}"
SM=${STACKMETER:-target/release/stackmeter}
K=scripts/k8s-local
PGBIN=/usr/lib/postgresql/15/bin
PGPORT=25432
HOST_IP=198.19.100.1

note() { printf '# %s\n' "$*" >&2; }
die() {
    note "error: $*"
    exit 1
}

[[ $(id -u) -eq 0 ]] || die "bench/k8s-cni.sh needs root (the cluster's namespaces)"
[[ -x $SM ]] || die "build first: cargo build --release ($SM)"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS='$ROUNDS': a number of rounds"
for n in "${NETS[@]}"; do
    case ${n%-hostport} in host | bridge | ptp | macvlan | ipvlan) ;; *) die "NETS: '$n' is not host, bridge, ptp, macvlan or ipvlan (a pod network may end in -hostport)" ;; esac
done
for t in python3 "$PGBIN/initdb"; do command -v "$t" >/dev/null || die "$t is missing"; done
SM=$(realpath "$SM")
WORK=$(mktemp -d /tmp/stackmeter-k8s-cni.XXXXXX)
chmod 755 "$WORK"
UP=0

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [[ -d $WORK/pg ]] && su postgres -c "$PGBIN/pg_ctl -D $WORK/pg -m immediate stop" >/dev/null 2>&1 || true
    if ((UP)); then
        "$K" down >&2 || rc=1
    fi
    rm -rf -- "$WORK"
    exit "$rc"
}
trap cleanup EXIT INT TERM

note "cluster up (2 nodes)"
t0=$SECONDS
out=$("$K" up --nodes 2 --pin --bin "$SM")
UP=1
KUBECONFIG=$(sed -n 's/^KUBECONFIG=//p' <<<"$out")
KUBECTL=$(sed -n 's/^KUBECTL=//p' <<<"$out")
IMAGE=$(sed -n 's/^IMAGE=//p' <<<"$out")
export KUBECONFIG
UP_SECONDS=$((SECONDS - t0))
# kubectl with every request bounded; kcw for the waits, bounded by their
# own --timeout.
kc() { "$KUBECTL" --request-timeout=120s "$@"; }
kcw() { "$KUBECTL" "$@"; }

note "PostgreSQL on $HOST_IP:$PGPORT"
mkdir -p "$WORK/pg"
chown postgres "$WORK/pg"
su postgres -c "$PGBIN/initdb -D $WORK/pg/data -A trust -U postgres" >/dev/null
# The pods' addresses only (the benchmarking range), without a password:
# the server lives on this machine's bridge for the length of the run.
echo "host all all 198.19.0.0/16 trust" >>"$WORK/pg/data/pg_hba.conf"
su postgres -c "$PGBIN/pg_ctl -D $WORK/pg/data -o '-k $WORK/pg -p $PGPORT -c listen_addresses=$HOST_IP -c max_connections=100 -c fsync=off' -l $WORK/pg/log -w start" >/dev/null
su postgres -c "$PGBIN/psql -h $WORK/pg -p $PGPORT -c 'CREATE DATABASE bench'" >/dev/null
DSN="postgres://postgres@$HOST_IP:$PGPORT/bench?connect_timeout=5"

kc create namespace stackmeter >/dev/null
kc -n stackmeter create secret generic stackmeter-db --from-literal=dsn="$DSN" >/dev/null

# fleet_file ADDR1 ADDR2: the fleet, its nodes at those addresses.
fleet_file() {
    cat <<EOF
name = "cni"
description = "pod networks against host network (bench/k8s-cni.sh)"
repeat = 1
# Every test alone: the two client Jobs take turns.
exclusive = ["rr", "crr", "ping", "stream"]

[[step]]
name = "rr"
test = "rr"
sizes = "1:1"
iterations = 5000
warmup = 500

[[step]]
name = "crr"
test = "crr"
iterations = 1000
warmup = 100

[[step]]
name = "ping"
test = "ping"
count = 5000

[[step]]
name = "stream"
test = "stream"
time = 3

[[node]]
name = "node-1"
address = "$1"

[[node]]
name = "node-2"
address = "$2"
EOF
}

stamp=$(date -u +%Y%m%dT%H%M%SZ)
run_of() { echo "cni-$1-$stamp"; }

# One network's turn: its responders, then the client Jobs, then gone.
run_net() {
    local net=$1 round=$2 run extra=() ips a1 a2 t
    run=$(run_of "$net")
    kcw -n stackmeter delete daemonset stackmeter-responder --ignore-not-found --wait=true --timeout=120s >/dev/null
    kcw -n stackmeter wait --for=delete pod -l app.kubernetes.io/component=responder --timeout=120s >/dev/null 2>&1 || true
    if [[ $net == host ]]; then
        extra=(--host-network)
    else
        "$K" cni "${net%-hostport}" 2>/dev/null || die "$net: scripts/k8s-local cni ${net%-hostport} failed"
    fi
    fleet_file 198.19.100.11 198.19.100.12 >"$WORK/fleet.toml"
    "$SM" fleet k8s "$WORK/fleet.toml" --run "$run" --image "$IMAGE" --pull-policy Never "${extra[@]}" \
        >"$WORK/m.yaml" 2>/dev/null
    kc apply -f "$WORK/m.yaml" -l 'app.kubernetes.io/component!=client' >/dev/null
    kcw -n stackmeter rollout status daemonset/stackmeter-responder --timeout=180s >/dev/null
    ips=$(kc -n stackmeter get pods -l app.kubernetes.io/component=responder \
        -o jsonpath='{range .items[*]}{.spec.nodeName} {.status.podIP}{"\n"}{end}')
    a1=$(awk '$1 == "node-1" {print $2}' <<<"$ips")
    a2=$(awk '$1 == "node-2" {print $2}' <<<"$ips")
    [[ -n $a1 && -n $a2 ]] || die "$net: no responder address: $ips"
    if [[ $net == *-hostport ]]; then
        a1=198.19.100.11 a2=198.19.100.12
    fi
    echo "$net $a1 $a2" >>"$WORK/addresses"
    fleet_file "$a1" "$a2" >"$WORK/fleet.toml"
    "$SM" fleet k8s "$WORK/fleet.toml" --run "$run" --image "$IMAGE" --pull-policy Never "${extra[@]}" \
        >"$WORK/m.yaml" 2>/dev/null
    t=$SECONDS
    kc apply -f "$WORK/m.yaml" -l 'app.kubernetes.io/component in (config,client)' >/dev/null
    if ! kcw -n stackmeter wait --for=condition=complete job -l "stackmeter/run=$run" --timeout=900s >/dev/null; then
        kc -n stackmeter get pods -o wide >&2
        kc -n stackmeter logs -l "stackmeter/run=$run" --tail=20 >&2 || true
        die "$net round $round: the Jobs did not complete"
    fi
    kc -n stackmeter logs -l "stackmeter/run=$run" --tail=-1 >"$WORK/$net-$round.jsonl"
    note "round $round, $net ($a1, $a2): $(grep -c '^{' "$WORK/$net-$round.jsonl") results in $((SECONDS - t)) s"
    kcw -n stackmeter delete jobs -l "stackmeter/run=$run" --wait=true --timeout=120s >/dev/null
}

# The pod networks this kernel can make (ipvlan and macvlan are drivers a
# kernel may lack); the others are left out and said so in the report.
SKIPPED=""
usable=()
for net in "${NETS[@]}"; do
    if [[ $net == host ]] || err=$("$K" cni "${net%-hostport}" 2>&1); then
        usable+=("$net")
    else
        note "$net left out: $err"
        SKIPPED+="- $net: not measured: ${err#k8s-local: }"$'\n'
    fi
done
"$K" cni bridge 2>/dev/null
NETS=("${usable[@]}")
((${#NETS[@]} >= 2)) || die "fewer than two networks to compare"

started=$(date -u '+%Y-%m-%d %H:%M UTC')
for ((r = 1; r <= ROUNDS; r++)); do
    for ((i = 0; i < ${#NETS[@]}; i++)); do
        run_net "${NETS[$(((i + r - 1) % ${#NETS[@]}))]}" "$r"
    done
done
kcw -n stackmeter delete daemonset stackmeter-responder --wait=true --timeout=120s >/dev/null
"$K" cni bridge 2>/dev/null

for net in "${NETS[@]}"; do
    "$SM" fleet report "$(run_of "$net")" --db "$DSN" --json >"$WORK/report-$net.json"
done
base=${NETS[0]}
for net in "${NETS[@]:1}"; do
    "$SM" fleet compare "$(run_of "$base")" "$(run_of "$net")" --db "$DSN" --json >"$WORK/compare-$net.json" || true
    "$SM" fleet compare "$(run_of "$base")" "$(run_of "$net")" --db "$DSN" >"$WORK/compare-$net.txt" || true
done
# Each NET-hostport against NET itself: what the hostPort's DNAT adds.
for net in "${NETS[@]}"; do
    if [[ $net == *-hostport ]] && printf '%s\n' "${NETS[@]}" | grep -qx "${net%-hostport}"; then
        "$SM" fleet compare "$(run_of "${net%-hostport}")" "$(run_of "$net")" --db "$DSN" >"$WORK/nat-$net.txt" || true
    fi
done

# The report: stdout is Markdown.
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
cat <<EOF
# bench/k8s-cni.sh on $(date -u +%Y-%m-%d)

Command: \`ROUNDS=$ROUNDS NETS="${NETS[*]}" bench/k8s-cni.sh\` (started $started), as root,
stackmeter $("$SM" --version | awk '{print $2}') (release build), on a $(nproc)-CPU machine ($cpu,
Linux $(uname -r)). The cluster: \`scripts/k8s-local up --nodes 2 --pin\` (Kubernetes $("$KUBECTL" version --client | awk '/Client Version/ {print $3}'),
containerd $(containerd --version | awk '{print $3}'), Debian's CNI plugins), up in $UP_SECONDS s. Each node is a
network namespace whose link is a veth pair into one Linux bridge on the host; the control plane,
PostgreSQL and both nodes share the machine's $(nproc) CPUs. Placement: \`up --pin\`, node-1's pods
(client and responder) on CPU 0, node-2's on CPU 1; the kernel's network work runs where it runs.

Per round every network in turn (the order turned by one each round): the responders
(\`stackmeter agent\`, the DaemonSet of \`fleet k8s\`) made on it, then the two client Jobs
measuring each other's responder at its pod address (with host network, the node's; for
NET-hostport at the node's address, through the hostPort's DNAT), one test at a time (all four
tests in the exclusive class). $ROUNDS rounds: $ROUNDS repetitions of every test of
every pair, compared by \`fleet compare\` (bootstrap 95% interval of the ratio of medians,
Mann-Whitney U). The agents' own probes (a ping and an rr round trip per pair a second) ran
throughout, as they do in a fleet.

${SKIPPED:+Pod networks left out:

$SKIPPED
}Addresses (network: node-1's responder, node-2's):

\`\`\`
$(sort -u "$WORK/addresses")
\`\`\`

EOF
python3 - "$WORK" "$base" "${NETS[@]}" <<'PY'
import json, sys
work, base, nets = sys.argv[1], sys.argv[2], sys.argv[3:]
reports = {n: json.load(open(f"{work}/report-{n}.json")) for n in nets}
def title(k):
    stat = "" if k["stat"] == "value" else " " + k["stat"]
    return f'{k["step"]} {k["row"]}: {k["series"]}{stat}'
keys = []
for m in reports[base]["matrices"]:
    keys.append((json.dumps(m["key"], sort_keys=True), title(m["key"]), m["unit"]))
def cell(n, key, pair):
    for m in reports[n]["matrices"]:
        if json.dumps(m["key"], sort_keys=True) == key:
            for c in m["cells"]:
                if (c["client"], c["target"]) == pair:
                    return c
    return None
def fmt(v):
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
pairs = [("node-1", "node-2"), ("node-2", "node-1")]
print("## Medians of the repetitions, per pair\n")
print("| figure | pair | " + " | ".join(nets) + " |")
print("|---|---|" + "---|" * len(nets))
for key, t, unit in keys:
    for p in pairs:
        vals = []
        for n in nets:
            c = cell(n, key, p)
            vals.append(f'{fmt(c["value"])}' if c else "-")
        print(f"| {t} ({unit}) | {p[0]}->{p[1]} | " + " | ".join(vals) + " |")
print()
print(f"## Against {base}: `fleet compare` per pair and figure\n")
print("ratio = B's median / A's (A = " + base + "); the 95% interval of the ratio; the verdict (faster / slower / ~ no significant difference). For times lower is better, for rates higher.\n")
print("| figure | pair | " + " | ".join(n for n in nets if n != base) + " |")
print("|---|---|" + "---|" * (len(nets) - 1))
comps = {}
for n in nets:
    if n == base:
        continue
    try:
        comps[n] = json.load(open(f"{work}/compare-{n}.json"))
    except Exception:
        comps[n] = {"changes": []}
verdict = {"faster": "faster", "slower": "slower", "no_significant_difference": "~", "too_few_repetitions": "too few"}
for key, t, unit in keys:
    for p in pairs:
        row = []
        for n in nets:
            if n == base:
                continue
            ch = [c for c in comps[n].get("changes", []) if json.dumps(c["key"], sort_keys=True) == key and (c["client"], c["target"]) == p]
            if not ch:
                row.append("-")
                continue
            s = ch[0]["stats"]
            v = s["verdict"] if isinstance(s["verdict"], str) else str(s["verdict"])
            row.append(f'{s["ratio"]:.2f} [{s["ratio_ci"][0]:.2f}, {s["ratio_ci"][1]:.2f}] {verdict.get(v, v)}')
        print(f"| {t} | {p[0]}->{p[1]} | " + " | ".join(row) + " |")
print()
PY
for net in "${NETS[@]:1}"; do
    echo "## \`fleet compare\` $base $net (as printed)"
    echo
    echo '```text'
    cat "$WORK/compare-$net.txt"
    echo '```'
    echo
done
for f in "$WORK"/nat-*.txt; do
    [[ -e $f ]] || continue
    net=$(basename "$f" .txt)
    net=${net#nat-}
    echo "## \`fleet compare\` ${net%-hostport} $net: what the hostPort's DNAT adds (as printed)"
    echo
    echo '```text'
    cat "$f"
    echo '```'
    echo
done
note "done; taking the cluster down"
