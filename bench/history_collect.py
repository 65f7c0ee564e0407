#!/usr/bin/env python3
"""bench/history_collect.py - measures the real series behind bench/history.sh.

The same targets measured again and again on this machine, each run made of
REPS repetitions (one stackmeter invocation each), with changes made for real
part way through, and series with no change at all. Writes one CSV per series
(Otava's shape: a time column, attribute columns, metric columns; one row per
repetition, the repetitions of a run share its time) and truth.json (where the
changes were made and what was planned). Run by `bench/history.sh collect`,
which holds the machine's CPU lock around it and sets up (and removes) the
network namespace the stream series go through. Standard library only.

Sessions:
  rr-size   stackmeter serve, rr with nine size pairs per invocation; two
            rows never change (1:1K, 1:4K), seven change their response size
            at planned runs, sizes chosen from a calibration at the start so
            the p50 moves by about 5%, 10% or 25%.
  swap      rows 1:1K and 1:64K against stackmeter serve, then the C
            responder, then stackmeter serve --threads 0.
  stream    TCP up through a tbf on a veth into a namespace: the rate steps
            200 -> 190 -> 171 -> 128 -> 160 Mbit/s (-5%, -10%, -25%, +25%);
            a second veth at a fixed 200 Mbit/s, measured in turn with it,
            never changes.
"""

import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
import time

ITER = 200  # rr transactions per size and repetition


def note(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out)


def rr(sm, target, sizes, cpu):
    """One rr invocation, one row (connection) per entry of `sizes`, even
    when two entries are the same pair; [(p50, p99)] in microseconds."""
    doc = run_json([sm, "rr", target, "--no-store", "--json", "--sizes", ",".join(sizes),
                    "-n", str(ITER), "--affinity", str(cpu)])
    if len(doc["results"]) != len(sizes):
        raise SystemExit(f"rr gave {len(doc['results'])} rows for {len(sizes)} sizes")
    return [(row["rtt_us"]["p50"], row["rtt_us"]["p99"]) for row in doc["results"]]


def stamp(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " +0000"


class Writer:
    """One CSV per series, rows appended as repetitions come in."""

    def __init__(self, out, name, header):
        self.path = os.path.join(out, name + ".csv")
        self.f = open(self.path, "w", newline="")
        self.w = csv.writer(self.f)
        self.w.writerow(header)

    def row(self, *values):
        self.w.writerow(values)

    def close(self):
        self.f.close()


def calibrate(sm, target, cpu, base, candidates, rounds):
    """Median p50 of each size over interleaved rounds; sizes for +5/10/25%."""
    sizes = [f"1:{s}" for s in [base] + candidates]
    seen = {s: [] for s in sizes}
    for _ in range(rounds):
        for s, (p50, _) in zip(sizes, rr(sm, target, sizes, cpu)):
            seen[s].append(p50)
    med = {s: sorted(v)[len(v) // 2] for s, v in seen.items()}
    b = med[f"1:{base}"]
    chosen = {}
    for goal in (1.05, 1.10, 1.25):
        best = min(sizes[1:], key=lambda s: abs(med[s] / b - goal))
        chosen[goal] = best
    return med, chosen


def session_rr_size(a, out, truth):
    base = "1:2K"
    note("calibrating response sizes")
    med, chosen = calibrate(a.stackmeter, a.rust, a.client_cpu, "2K",
                            ["3K", "4K", "6K", "8K", "12K", "16K", "24K", "32K", "48K", "64K", "96K", "128K"],
                            a.calibration_rounds)
    s5, s10, s25 = chosen[1.05], chosen[1.10], chosen[1.25]
    note(f"calibration: {json.dumps(med)}; +5% {s5}, +10% {s10}, +25% {s25}")
    runs = a.runs_rr
    # row name -> list of (first run, size), first entry at run 0; planned shift per change.
    plan = {
        "u1": [(0, "1:1K")],
        "u2": [(0, "1:4K")],
        "a1": [(0, base), (runs * 30 // 100, s5)],
        "a2": [(0, base), (runs * 67 // 100, s5)],
        "b1": [(0, base), (runs * 20 // 100, s10), (runs * 63 // 100, base)],
        "b2": [(0, s10), (runs * 43 // 100, base)],
        "c1": [(0, base), (runs * 50 // 100, s25), (runs * 80 // 100, base)],
        "c2": [(0, base), (runs * 33 // 100, s25)],
        "c3": [(0, s25), (runs * 17 // 100, base), (runs * 90 // 100, s25)],
    }
    goal = {base: 1.0, s5: 1.05, s10: 1.10, s25: 1.25, "1:1K": 1.0, "1:4K": 1.0}
    writers = {r: Writer(out, f"rr-size-{r}", ["time", "run", "size", "p50", "p99"]) for r in plan}

    def size_at(r, i):
        return [s for start, s in plan[r] if start <= i][-1]

    t0 = time.time()
    for i in range(runs):
        sizes = {r: size_at(r, i) for r in plan}
        when = stamp(time.time())
        for _ in range(a.reps):
            got = rr(a.stackmeter, a.rust, list(sizes.values()), a.client_cpu)
            for (r, s), (p50, p99) in zip(sizes.items(), got):
                writers[r].row(when, i, s, p50, p99)
        if i % 50 == 49:
            note(f"rr-size: {i + 1}/{runs} runs, {time.time() - t0:.0f} s")
    for w in writers.values():
        w.close()
    for r, steps in plan.items():
        changes = []
        for (_, before), (start, after) in zip(steps, steps[1:]):
            changes.append({"index": start, "planned": goal[after] / goal[before],
                            "what": f"response size {before} -> {after}"})
        truth.append({"file": f"rr-size-{r}.csv", "metric": "p50", "direction": "lower_is_better",
                      "changes": changes, "kind": "rr p50, response size"})
        truth.append({"file": f"rr-size-{r}.csv", "metric": "p99", "direction": "lower_is_better",
                      "changes": changes, "kind": "rr p99, response size", "score": not changes})
    return {"calibration_p50_us": med, "sizes": {"base": base, "+5%": s5, "+10%": s10, "+25%": s25}}


def session_swap(a, out, truth):
    runs = a.runs_swap
    cut1, cut2 = runs * 42 // 100, runs * 71 // 100
    targets = [(0, a.rust, "serve"), (cut1, a.c, "c-responder"), (cut2, a.rust_t0, "serve --threads 0")]
    rows = {"s1": "1:1K", "s2": "1:64K"}
    writers = {r: Writer(out, f"swap-{r}", ["time", "run", "responder", "p50", "p99"]) for r in rows}
    t0 = time.time()
    for i in range(runs):
        _, target, name = [t for t in targets if t[0] <= i][-1]
        when = stamp(time.time())
        for _ in range(a.reps):
            got = rr(a.stackmeter, target, list(rows.values()), a.client_cpu)
            for r, figures in zip(rows, got):
                writers[r].row(when, i, name, *figures)
        if i % 50 == 49:
            note(f"swap: {i + 1}/{runs} runs, {time.time() - t0:.0f} s")
    for w in writers.values():
        w.close()
    changes = [{"index": cut1, "planned": None, "what": "serve -> C responder"},
               {"index": cut2, "planned": None, "what": "C responder -> serve --threads 0"}]
    for r in rows:
        for metric in ("p50", "p99"):
            truth.append({"file": f"swap-{r}.csv", "metric": metric, "direction": "lower_is_better",
                          "changes": changes, "kind": f"rr {metric}, responder swapped"})


def stream(sm, target, seconds, cpu):
    doc = run_json([sm, "stream", target, "--no-store", "--json", "-t", str(seconds), "-i", str(seconds),
                    "--affinity", str(cpu)])
    return doc["summary"]["total_mbps"]


def session_stream(a, out, truth):
    runs = a.runs_stream
    step = runs // 5
    levels = [(0, 200), (step, 190), (2 * step, 171), (3 * step, 128), (4 * step, 160)]
    wa = Writer(out, "stream-tbf-steps", ["time", "run", "tbf_mbit", "throughput"])
    wb = Writer(out, "stream-tbf-fixed", ["time", "run", "tbf_mbit", "throughput"])
    t0 = time.time()
    current = None
    for i in range(runs):
        rate = [r for s, r in levels if s <= i][-1]
        if rate != current:
            subprocess.run(["tc", "qdisc", "change", "dev", a.veth_steps, "root", "tbf", "rate", f"{rate}mbit",
                            "burst", "64kb", "latency", "20ms"], check=True)
            current = rate
        when = stamp(time.time())
        for _ in range(a.stream_reps):
            wa.row(when, i, rate, stream(a.stackmeter, a.stream_steps, a.stream_seconds, a.client_cpu))
            wb.row(when, i, 200, stream(a.stackmeter, a.stream_fixed, a.stream_seconds, a.client_cpu))
        if i % 50 == 49:
            note(f"stream: {i + 1}/{runs} runs, {time.time() - t0:.0f} s")
    wa.close()
    wb.close()
    changes = [{"index": s, "planned": r / p, "what": f"tbf {p} -> {r} Mbit/s"}
               for (_, p), (s, r) in zip(levels, levels[1:])]
    truth.append({"file": "stream-tbf-steps.csv", "metric": "throughput", "direction": "higher_is_better",
                  "changes": changes, "kind": "stream throughput, tbf rate"})
    truth.append({"file": "stream-tbf-fixed.csv", "metric": "throughput", "direction": "higher_is_better",
                  "changes": [], "kind": "stream throughput, tbf rate"})


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stackmeter", required=True)
    p.add_argument("--rust", required=True, help="HOST:PORT of stackmeter serve")
    p.add_argument("--c", required=True, help="HOST:PORT of the C responder")
    p.add_argument("--rust-t0", required=True, help="HOST:PORT of stackmeter serve --threads 0")
    p.add_argument("--stream-steps", required=True, help="HOST:PORT behind the stepped tbf")
    p.add_argument("--stream-fixed", required=True, help="HOST:PORT behind the fixed tbf")
    p.add_argument("--veth-steps", required=True, help="device whose tbf steps")
    p.add_argument("--client-cpu", type=int, default=1)
    p.add_argument("--reps", type=int, default=4)
    p.add_argument("--stream-reps", type=int, default=3)
    p.add_argument("--stream-seconds", type=float, default=0.2)
    p.add_argument("--runs-rr", type=int, default=300)
    p.add_argument("--runs-swap", type=int, default=240)
    p.add_argument("--runs-stream", type=int, default=250)
    p.add_argument("--calibration-rounds", type=int, default=15)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    truth = []
    meta = {"started": stamp(time.time()), "reps": a.reps, "stream_reps": a.stream_reps, "rr_iterations": ITER,
            "stream_seconds": a.stream_seconds, "client_cpu": a.client_cpu,
            "load_before": open("/proc/loadavg").read().split()[:3]}
    t0 = time.time()
    meta["rr_size"] = session_rr_size(a, out=a.out, truth=truth)
    session_swap(a, a.out, truth)
    session_stream(a, a.out, truth)
    meta["seconds"] = round(time.time() - t0)
    meta["load_after"] = open("/proc/loadavg").read().split()[:3]
    with open(os.path.join(a.out, "truth.json"), "w") as f:
        json.dump({"meta": meta, "series": truth}, f, indent=1)
        f.write("\n")
    note(f"done in {meta['seconds']} s")


if __name__ == "__main__":
    main()
