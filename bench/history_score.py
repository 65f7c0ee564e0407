#!/usr/bin/env python3
"""bench/history_score.py - scores stackmeter's change points against Otava's.

Run by bench/history.sh with the Python of Otava's virtual environment
(target/py), which it imports. Three sets of series, each a CSV file both tools
read, and a sweep of noise levels (how noisy a series may be for a 10% shift
to be flagged within 5 runs):

  real       the measured series of bench/results/history (truth.json says
             where changes were made); a change's size is what the data show:
             the median of the run medians after it over that before it, on
             the true segments.
  injected   the measured series that never change, cut into windows of 150
             runs, with one shift of exactly 5%, 10% or 25% multiplied into
             every repetition from run 75 on (worse and better way): real
             noise, known shifts.
  synthetic  seeded series of 240 runs of 4 repetitions at three noise levels
             (between-run and within-run log-normal noise, outlier
             repetitions and outlier runs), two changes of one size each, and
             series with none.

Both tools see the same repetitions in the same order. stackmeter: the CSV
example of crates/history-csv (`history_csv FILE...`, one JSON line per file).
Otava: its own analysis, `otava.series.Series.analyze` with its default
`AnalysisOptions` (window 50, p-value 0.001, magnitude 0) on the metric's
values in file order, one point per repetition (as `otava analyze` reads the
same CSV; the CLI's date parsing costs seconds per file, so it runs on a
sample of files only, as a check that both give the same change points).
"Otava, run medians" is Otava on one point per run (the median of its
repetitions), a fairer input for a method that has no notion of repetitions;
"Otava, tuned" is that with the best settings of 18 tried on these series
(window 50, p-value 1e-5), chosen with the truth in hand.

A detection matches a true change within MARGIN runs (one to one, nearest
first); precision counts unmatched detections on series with changes, recall
the matched changes; false alarms are detections on series without any
change, per 100 runs. Delay: each series cut right after k runs past a change
(k in DELAYS), both tools run on the cut; the smallest k at which a detection
lies within MARGIN of the change.
"""

import argparse
import csv
import datetime
import io
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile

MARGIN = 5
DELAYS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30]
BINS = [("5%", 0.025, 0.075), ("10%", 0.075, 0.175), ("25%", 0.175, 10.0)]
WINDOW, INJECT_AT, STRIDE = 150, 75, 50
SYNTH_RUNS, SYNTH_REPS = 240, 4
SYNTH_LEVELS = {"quiet": (0.01, 0.02), "moderate": (0.03, 0.05), "noisy": (0.08, 0.10)}
SYNTH_PER_CELL = 8
POWER_TAUS = [0.01, 0.02, 0.03, 0.04, 0.06, 0.08]
POWER_SERIES, POWER_AT = 20, 150
# The best of 18 Otava settings (one point per run or per repetition; window
# 25, 50, 100; p-value 1e-3, 1e-4, 1e-5) on these very series, chosen with
# the truth in hand: it flatters Otava.
TUNED_P, TUNED_WINDOW = 1e-5, 50


def note(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


# ---- CSV series -----------------------------------------------------------

class Csv:
    """A CSV file as header, rows and runs (consecutive rows of one time)."""

    def __init__(self, text):
        rows = list(csv.reader(io.StringIO(text)))
        self.header, self.rows = rows[0], [r for r in rows[1:] if r]
        t = self.header.index("time")
        self.run_of_row, self.run_rows = [], []
        for i, r in enumerate(self.rows):
            if not self.run_rows or self.rows[self.run_rows[-1][0]][t] != r[t]:
                self.run_rows.append([])
            self.run_rows[-1].append(i)
            self.run_of_row.append(len(self.run_rows) - 1)

    def values(self, metric):
        c = self.header.index(metric)
        return [float(r[c]) for r in self.rows]

    def runs(self):
        return len(self.run_rows)

    def text(self, runs=None, columns=None):
        """The file cut after `runs` runs, keeping `columns` (all by default)."""
        keep = [self.header.index(c) for c in columns] if columns else list(range(len(self.header)))
        end = len(self.rows) if runs is None else self.run_rows[runs - 1][-1] + 1
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow([self.header[c] for c in keep])
        for r in self.rows[:end]:
            w.writerow([r[c] for c in keep])
        return out.getvalue()


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def stamp(base, i):
    """A time for run i: whole minutes after `base` (seconds since the epoch)."""
    t = datetime.datetime.fromtimestamp(base + 60 * i, datetime.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S +0000")


# ---- cases ------------------------------------------------------------------

class Case:
    """One metric of one CSV file with its true changes."""

    def __init__(self, kind, path, metric, direction, changes, group, label):
        self.kind, self.path, self.metric, self.direction = kind, path, metric, direction
        self.changes = changes  # [(run index, bin name or None)]
        self.group, self.label = group, label
        self.csv = Csv(open(path).read())


def realised(runs_values, changes):
    """Size of each change in the data: median of run medians after / before."""
    med = [statistics.median(v) for v in runs_values]
    out = []
    idx = list(changes)
    for j, c in enumerate(idx):
        a = idx[j - 1] if j > 0 else 0
        b = idx[j + 1] if j + 1 < len(idx) else len(med)
        out.append(statistics.median(med[c:b]) / statistics.median(med[a:c]))
    return out


def bin_of(ratio):
    size = max(ratio, 1 / ratio) - 1
    for name, lo, hi in BINS:
        if lo <= size < hi:
            return name
    return None


def run_values(c, metric):
    vals = c.values(metric)
    return [[vals[i] for i in rows] for rows in c.run_rows]


def real_cases(data):
    truth = json.load(open(os.path.join(data, "truth.json")))
    cases, unchanged = [], []
    for s in truth["series"]:
        path = os.path.join(data, s["file"])
        idx = [ch["index"] for ch in s["changes"]]
        c = Csv(open(path).read())
        ratios = realised(run_values(c, s["metric"]), idx) if idx else []
        changes = [(i, bin_of(r)) for i, r in zip(idx, ratios)]
        case = Case("real", path, s["metric"], s["direction"], changes, s["kind"], s["file"])
        case.ratios = ratios
        case.planned = [ch.get("planned") for ch in s["changes"]]
        if not idx:
            unchanged.append(case)
            cases.append(case)
        elif s.get("score", True):
            cases.append(case)
    return cases, unchanged


def injected_cases(unchanged, out):
    cases = []
    for base in unchanged:
        c = base.csv
        vals = c.values(base.metric)
        tcol = c.header.index("time")
        worse = 1 if base.direction == "lower_is_better" else -1
        for start in range(0, c.runs() - WINDOW + 1, STRIDE):
            for name, size in (("5%", 0.05), ("10%", 0.10), ("25%", 0.25)):
                for way in (1, -1):
                    factor = (1 + size) ** (worse * way)
                    rows = []
                    for run in range(start, start + WINDOW):
                        for i in c.run_rows[run]:
                            v = vals[i] * (factor if run - start >= INJECT_AT else 1.0)
                            rows.append([c.rows[i][tcol], run - start, f"{v:.6g}"])
                    tag = "worse" if way == 1 else "better"
                    path = os.path.join(out, f"inj-{os.path.basename(base.path)[:-4]}-{base.metric}-{start}-{name[:-1]}-{tag}.csv")
                    write_csv(path, ["time", "run", base.metric], rows)
                    cases.append(Case("injected", path, base.metric, base.direction, [(INJECT_AT, name)],
                                      base.group, os.path.basename(path)))
    return cases


def synthetic_cases(out, base_time):
    cases = []
    rng = random.Random(20261127)
    for level, (tau, sigma) in SYNTH_LEVELS.items():
        for name, size in [(None, 0.0)] + [(b, s) for b, s in (("5%", 0.05), ("10%", 0.10), ("25%", 0.25))]:
            for k in range(SYNTH_PER_CELL):
                changes = []
                if name:
                    first = rng.randrange(30, SYNTH_RUNS - 80)
                    second = rng.randrange(first + 40, SYNTH_RUNS - 30)
                    changes = [first, second]
                level_log = 0.0
                rows = []
                for run in range(SYNTH_RUNS):
                    if run in changes:
                        level_log += math.log1p(size) * rng.choice((1, -1))
                    run_effect = rng.gauss(0, tau)
                    if rng.random() < 0.02:  # a disturbed run: everything slower
                        run_effect += math.log(rng.uniform(1.2, 2.0))
                    for _ in range(SYNTH_REPS):
                        v = math.exp(math.log(100) + level_log + run_effect + rng.gauss(0, sigma))
                        if rng.random() < 0.03:  # one wild repetition
                            v *= rng.uniform(1.3, 3.0)
                        rows.append([stamp(base_time, run), run, f"{v:.6g}"])
                path = os.path.join(out, f"syn-{level}-{name or 'none'}-{k}.csv".replace("%", ""))
                write_csv(path, ["time", "run", "p50"], rows)
                cases.append(Case("synthetic", path, "p50", "lower_is_better", [(c, name) for c in changes],
                                  f"synthetic, {level} (tau {tau:.0%}, sigma {sigma:.0%})", os.path.basename(path)))
    return cases


def power_cases(out, base_time):
    """For the noise a 10% shift needs: 20 series per noise level, 150 runs
    of 4 repetitions, then the shift, cut 5 runs after it."""
    cases = []
    rng = random.Random(5)
    for tau in POWER_TAUS:
        for k in range(POWER_SERIES):
            rows = []
            for run in range(POWER_AT + 5):
                level = math.log(100) + (math.log(1.10) if run >= POWER_AT else 0.0) + rng.gauss(0, tau)
                for _ in range(SYNTH_REPS):
                    rows.append([stamp(base_time, run), run, f"{math.exp(level + rng.gauss(0, 1.5 * tau)):.6g}"])
            path = os.path.join(out, f"pow-{tau}-{k}.csv")
            write_csv(path, ["time", "run", "p50"], rows)
            case = Case("power", path, "p50", "lower_is_better", [(POWER_AT, "10%")], f"{tau}", os.path.basename(path))
            case.tau = tau
            cases.append(case)
    return cases


def power_report(cases, found_by_tool):
    print("\n### The noise a 10% shift can be flagged within 5 runs at\n")
    print(f"Series of {POWER_AT} runs of {SYNTH_REPS} repetitions, then a 10% shift, cut 5 runs after it; "
          "between-run noise tau (log standard deviation), within-run noise 1.5 tau; "
          f"{POWER_SERIES} series per level. The standard deviation of a run's median is about "
          "sqrt(tau^2 + 1.2 (1.5 tau)^2 / 4) = 1.3 tau.\n")
    names = list(found_by_tool)
    print("| tau | run median sd | " + " | ".join(f"{n}: flagged" for n in names) + " |")
    print("|---:|---:|" + "---:|" * len(names))
    for tau in POWER_TAUS:
        idx = [i for i, c in enumerate(cases) if c.tau == tau]
        cells = []
        for n in names:
            hit = sum(1 for i in idx if any(abs(d - POWER_AT) <= MARGIN for d in found_by_tool[n][i]))
            cells.append(f"{hit}/{len(idx)}")
        print(f"| {tau:.0%} | {1.3 * tau:.1%} | " + " | ".join(cells) + " |")


# ---- the tools ----------------------------------------------------------------

def stackmeter_runs(binary, jobs, transient=False):
    """jobs: [(path, metric, direction)] -> [[change point run index]]; the
    change points that bound an episode (`transient`) only when asked."""
    by_args = {}
    for n, (path, metric, direction) in enumerate(jobs):
        flag = "--lower-is-better" if direction == "lower_is_better" else "--higher-is-better"
        by_args.setdefault((flag, metric), []).append((n, path))
    result = [None] * len(jobs)
    for (flag, metric), items in by_args.items():
        for i in range(0, len(items), 200):
            chunk = items[i:i + 200]
            got = subprocess.run([binary, flag, metric] + [p for _, p in chunk], check=True,
                                 capture_output=True, text=True).stdout.splitlines()
            for (n, _), line in zip(chunk, got):
                doc = json.loads(line)
                series = [s for s in doc.get("series", []) if s["metric"] == metric]
                if not series or "change_points" not in series[0]:
                    result[n] = []
                else:
                    result[n] = [cp["index"] for cp in series[0]["change_points"]
                                 if transient or not cp.get("transient", False)]
    return result


def otava_points(values, window=50, pvalue=0.001, magnitude=0.0):
    """Otava's change points (indices into `values`) with its analysis code."""
    from otava.series import AnalysisOptions, Metric, Series
    opts = AnalysisOptions()
    opts.window_len, opts.max_pvalue, opts.min_magnitude = window, pvalue, magnitude
    s = Series("t", None, list(range(len(values))), {"m": Metric(1, 1.0)}, {"m": list(values)}, {})
    return sorted(int(cp.index) for cp in s.analyze(opts).change_points["m"])


def otava_runs(case, cut=None, per_run=False, **kw):
    c = case.csv
    vals = c.values(case.metric)
    if per_run:
        runs = [statistics.median(vals[i] for i in rows) for rows in c.run_rows[:cut]]
        return otava_points(runs, **kw)
    end = len(vals) if cut is None else c.run_rows[cut - 1][-1] + 1
    return sorted({c.run_of_row[i] for i in otava_points(vals[:end], **kw)})


def otava_cli_check(otava, cases, tmp):
    """`otava analyze` on a few files must agree with the library call."""
    cfg = {"tests": {}}
    for n, case in enumerate(cases):
        cfg["tests"][f"t{n}"] = {"type": "csv", "file": case.path, "time_column": "time",
                                 "metrics": {case.metric: {"direction": -1 if case.direction == "lower_is_better" else 1}}}
    path = os.path.join(tmp, "otava.yaml")
    with open(path, "w") as f:
        json.dump(cfg, f)  # JSON is YAML
    cmd = [otava, "analyze", "--config-file", path, "--output", "json", "--since", "2000-01-01"] + \
          [f"t{n}" for n in range(len(cases))]
    got = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    agree = 0
    docs = [json.loads(line) for line in got.splitlines() if line.startswith("{")]
    for n, case in enumerate(cases):
        doc = next(d for d in docs if f"t{n}" in d)
        rows = sorted({ch["index"] for g in doc[f"t{n}"] for ch in g["changes"]})
        cli = sorted({case.csv.run_of_row[r] for r in rows})
        agree += cli == otava_runs(case)
    return agree, len(cases), " ".join(cmd[:6]) + " ..."


# ---- scoring --------------------------------------------------------------------

def match(true, found):
    pairs = sorted((abs(t - f), ti, fi) for ti, t in enumerate(true) for fi, f in enumerate(found)
                   if abs(t - f) <= MARGIN)
    used_t, used_f = set(), set()
    for _, ti, fi in pairs:
        if ti not in used_t and fi not in used_f:
            used_t.add(ti)
            used_f.add(fi)
    return used_t, len(found) - len(used_f)


def score(cases, found):
    """Per bin: TP, FN, FP (unmatched detections on series with a change of that bin)."""
    table = {b: {"tp": 0, "fn": 0, "fp": 0} for b, _, _ in BINS}
    for case, det in zip(cases, found):
        if not case.changes:
            continue
        idx = [c for c, _ in case.changes]
        hit, _ = match(idx, det)
        # An unmatched detection counts against the bin of the nearest change.
        matched_f = set()
        for ti in hit:
            matched_f.add(min((f for f in det if abs(f - idx[ti]) <= MARGIN), key=lambda f: abs(f - idx[ti])))
        for f in det:
            if f in matched_f:
                continue
            near = min(case.changes, key=lambda c: abs(c[0] - f))[1]
            if near:
                table[near]["fp"] += 1
        for ti, (_, b) in enumerate(case.changes):
            if b:
                table[b]["tp" if ti in hit else "fn"] += 1
    return table


def prf(t):
    p = t["tp"] / (t["tp"] + t["fp"]) if t["tp"] + t["fp"] else float("nan")
    r = t["tp"] / (t["tp"] + t["fn"]) if t["tp"] + t["fn"] else float("nan")
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return p, r, f


def false_alarms(cases, found):
    runs = sum(c.csv.runs() for c in cases if not c.changes)
    alarms = sum(len(d) for c, d in zip(cases, found) if not c.changes)
    return alarms, runs


def delays(cases, tools, stackmeter_bin, tmp):
    """For every true change, the smallest k in DELAYS at which each tool flags it."""
    items = []
    for ci, case in enumerate(cases):
        idx = [c for c, _ in case.changes]
        for j, (c, b) in enumerate(case.changes):
            if not b:
                continue
            for k in DELAYS:
                end = c + k
                nxt = idx[j + 1] if j + 1 < len(idx) else case.csv.runs()
                if end > nxt:
                    break
                items.append((ci, j, k, end))
    note(f"delay: {len(items)} cuts")
    flagged = {name: {} for name in tools}
    # stackmeter: the cut files, in batches.
    jobs, keys = [], []
    for n, (ci, j, k, end) in enumerate(items):
        case = cases[ci]
        path = os.path.join(tmp, f"cut-{n}.csv")
        with open(path, "w") as f:
            f.write(case.csv.text(end, ["time", case.metric]))
        jobs.append((path, case.metric, case.direction))
        keys.append((ci, j, k))
    got = stackmeter_runs(stackmeter_bin, jobs)
    for (ci, j, k), det, (_, _, _, end) in zip(keys, got, items):
        c = cases[ci].changes[j][0]
        flagged["stackmeter"][(ci, j, k)] = any(abs(d - c) <= MARGIN for d in det)
    for name, fn in tools.items():
        if name == "stackmeter":
            continue
        for (ci, j, k, end) in items:
            c = cases[ci].changes[j][0]
            det = fn(cases[ci], end)
            flagged[name][(ci, j, k)] = any(abs(d - c) <= MARGIN for d in det)
    # The delay is the first cut from which on every later cut flags it: a
    # detection that comes and goes (a nearby false alarm) does not count.
    out = {name: {} for name in tools}
    for name in tools:
        cuts = {}
        for (ci, j, k, end) in items:
            cuts.setdefault((ci, j), []).append((k, flagged[name][(ci, j, k)]))
        for key, ks in cuts.items():
            first = None
            for k, f in ks:
                if f and first is None:
                    first = k
                elif not f:
                    first = None
            if first is not None:
                out[name][key] = first
    return out


def fmt(x):
    if isinstance(x, float) and math.isnan(x):
        return "-"
    return f"{x:.2f}"


def report(title, cases, results, delay, note_lines=(), extra=None):
    extra = extra or {}
    print(f"\n### {title}\n")
    for line in note_lines:
        print(line)
    if note_lines:
        print()
    names = list(results)
    print("| shift | changes | " + " | ".join(f"{n}: P / R / F1 | {n}: delay (median; within 5)" for n in names) + " |")
    print("|---|---:|" + "---|---|" * len(names))
    for b, _, _ in BINS:
        n_changes = sum(1 for c in cases for _, bb in c.changes if bb == b)
        if not n_changes:
            continue
        cells = []
        for n in names:
            t = score(cases, results[n])[b]
            p, r, f = prf(t)
            ks = [delay[n][(ci, j)] for ci, c in enumerate(cases) for j, (_, bb) in enumerate(c.changes)
                  if bb == b and (ci, j) in delay[n]]
            within = sum(1 for k in ks if k <= 5)
            med = statistics.median(ks) if ks else float("nan")
            cells.append(f"{fmt(p)} / {fmt(r)} / {fmt(f)}")
            cells.append(f"{fmt(med) if ks else '-'}; {within}/{n_changes}")
        print(f"| {b} | {n_changes} | " + " | ".join(cells) + " |")
    fa_cells = []
    for n in names:
        alarms, runs = false_alarms(cases, results[n])
        if runs:
            fa_cells.append(f"{n}: {alarms} in {runs} runs = {100 * alarms / runs:.2f} per 100")
    if "stackmeter, episodes too" in extra:
        alarms, runs = false_alarms(cases, extra["stackmeter, episodes too"])
        if runs:
            fa_cells.append(f"stackmeter counting the change points it marks transient too: {alarms} = "
                            f"{100 * alarms / runs:.2f} per 100")
    if fa_cells:
        print("\nFalse alarms on the series without a change: " + "; ".join(fa_cells) + ".")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--otava", required=True)
    p.add_argument("--stackmeter", required=True)
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="history-score-")
    real, unchanged = real_cases(a.data)
    truth = json.load(open(os.path.join(a.data, "truth.json")))
    base_time = 1764000000  # 2025-11-24: synthetic runs are a minute apart from here
    sets = [("Real series (bench/results/history)", real),
            ("Real noise, shifts multiplied in", injected_cases(unchanged, tmp)),
            ("Synthetic", synthetic_cases(tmp, base_time))]
    tools = {
        "stackmeter": None,
        "Otava": lambda case, cut: otava_runs(case, cut),
        "Otava, run medians": lambda case, cut: otava_runs(case, cut, per_run=True),
        "Otava, tuned": lambda case, cut: otava_runs(case, cut, per_run=True, pvalue=TUNED_P, window=TUNED_WINDOW),
    }
    print("## stackmeter history against Apache Otava\n")
    print(f"Matching margin {MARGIN} runs; delay cuts after k = {DELAYS} runs past a change.")
    meta = truth["meta"]
    print(f"Real series: {meta['reps']} repetitions per rr run ({meta['rr_iterations']} transactions each), "
          f"{meta['stream_reps']} per stream run ({meta['stream_seconds']} s each), client on CPU "
          f"{meta['client_cpu']}, measured {meta['started']} in {meta['seconds']} s, load "
          f"{' '.join(meta['load_before'])} before and {' '.join(meta['load_after'])} after.")
    sample = [c for c in real if c.csv.runs() <= 300][:3]
    agree, n, cmd = otava_cli_check(a.otava, sample, tmp)
    print(f"Otava's CLI (`{cmd}`) and its library call agreed on {agree} of {n} real files checked.")
    for title, cases in sets:
        note(f"{title}: {len(cases)} series")
        jobs = [(c.path, c.metric, c.direction) for c in cases]
        results = {"stackmeter": stackmeter_runs(a.stackmeter, jobs)}
        extra = {"stackmeter, episodes too": stackmeter_runs(a.stackmeter, jobs, transient=True)}
        for name, fn in tools.items():
            if fn:
                results[name] = [fn(c, None) for c in cases]
        delay = delays(cases, tools, a.stackmeter, tmp)
        lines = []
        if cases and cases[0].kind == "real":
            for c in cases:
                if c.changes:
                    sizes = ", ".join(f"run {i}: x{r:.3f} ({b or 'under 2.5%'})" for (i, b), r in zip(c.changes, c.ratios))
                    lines.append(f"- {c.label} {c.metric} ({c.group}): {sizes}")
        report(title, cases, results, delay, lines, extra)
        if cases and cases[0].kind == "real":
            print("\nPer series (run indices of the change points found):\n")
            print("| series | true | stackmeter ((transient)) | Otava | Otava, run medians | Otava, tuned |")
            print("|---|---|---|---|---|---|")
            for i, c in enumerate(cases):
                both = extra["stackmeter, episodes too"][i]
                shown = [f"{x}" if x in results["stackmeter"][i] else f"({x})" for x in both]
                print(f"| {c.label} {c.metric} | {[x for x, _ in c.changes]} | {' '.join(shown)} | "
                      f"{results['Otava'][i]} | {results['Otava, run medians'][i]} | {results['Otava, tuned'][i]} |")
    cases = power_cases(tmp, base_time)
    note(f"noise sweep: {len(cases)} series")
    found = {"stackmeter": stackmeter_runs(a.stackmeter, [(c.path, c.metric, c.direction) for c in cases])}
    for name, fn in tools.items():
        if fn:
            found[name] = [fn(c, None) for c in cases]
    power_report(cases, found)


if __name__ == "__main__":
    main()
