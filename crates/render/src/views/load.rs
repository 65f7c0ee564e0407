//! load's view: the proxy-load runs, their mean and interval, and latency per
//! object size.
use stackmeter_results::LoadParams;
use stackmeter_results::LoadRun;
use stackmeter_results::LoadSummary;

use crate::units::{bit_rate, byte_rate, Units};
use crate::view::{Block, Col, Table, View};
use crate::views::latency::{latency_cells, latency_cols, tails};
use stackmeter_recorder::MeanCi;
use stackmeter_results::format_size;

/// load's blocks below the title; returns the sample counts behind them.
pub(crate) fn view(v: &mut View, p: &LoadParams, runs: &[LoadRun], s: Option<&LoadSummary>, u: Units) -> Vec<u64> {
    let names: Vec<String> = p.objects.iter().map(|x| x.name.clone()).collect();
    v.line(format!(
        "{} clients, one connection each (opened before the start barrier); each lists, then fetches the {} objects {} time(s) ({}); {} run(s); every byte checked",
        p.clients,
        p.objects.len(),
        p.fetch_each,
        names.join(", "),
        p.repeat
    ));
    v.blank();
    let cols = vec![
        Col::num("run", 3),
        Col::num("wall s", 9),
        Col::num("bytes", 12),
        Col::num("verified", 12),
        Col::num("errors", 6),
        Col::num("requests", 8),
        Col::num("bytes/s", 12),
        Col::num("bits/s", 14),
        Col::num("req/s", 9),
    ];
    let rows = runs
        .iter()
        .map(|r| {
            vec![
                r.run.to_string(),
                format!("{:.3}", r.wall_s),
                r.bytes.to_string(),
                r.verified_bytes.to_string(),
                r.errors.to_string(),
                r.requests.to_string(),
                byte_rate(r.rate_kBps * 1024.0),
                bit_rate(r.rate_mbps, u),
                format!("{:.0}", r.requests_per_s),
            ]
        })
        .collect();
    v.push(Block::Table(Table {
        cols,
        rows,
        ..Table::default()
    }));
    // The target's own process on this host (a proxy, the responder).
    for r in runs {
        if let Some(t) = &r.target_use {
            v.line(format!(
                " run {}: the target's process (pid {} {}) used {:.2} CPU s ({:.2} s per GiB received), peak memory {:.1} MiB",
                r.run, t.pid, t.command, t.cpu_s, t.cpu_s_per_gib, t.peak_rss_mib
            ));
        }
    }
    let mut counts = Vec::new();
    if let Some(s) = s {
        // The mean and its interval, each written by `f` (with its unit).
        let iv = |i: &MeanCi, f: &dyn Fn(f64) -> String| {
            if i.n < 2 {
                format!("{} (one run: no interval)", f(i.mean))
            } else {
                format!("{} (95% CI {} .. {})", f(i.mean), f(i.low), f(i.high))
            }
        };
        v.blank();
        v.line(format!(" mean over {} run(s):", s.wall_s.n));
        v.line(format!("   wall time  {}", iv(&s.wall_s, &|x| format!("{x:.3} s"))));
        v.line(format!(
            "   rate       {}",
            iv(&s.rate_kBps, &|x| byte_rate(x * 1024.0))
        ));
        v.line(format!("   rate       {}", iv(&s.rate_mbps, &|x| bit_rate(x, u))));
        v.line(format!(
            "   requests   {}",
            iv(&s.requests_per_s, &|x| format!("{x:.0}/s"))
        ));
        v.blank();
        v.line(
            " per-request latency, all runs, microseconds from the request sent to the last byte received and checked",
        );
        let mut cols = vec![Col::text("object", 10), Col::num("size", 8), Col::num("samples", 7)];
        let tails = tails(s.by_object.iter().filter_map(|b| b.latency_us.as_ref()));
        cols.extend(latency_cols(tails));
        let mut table = Table {
            cols,
            ..Table::default()
        };
        for b in &s.by_object {
            if let Some(l) = &b.latency_us {
                let mut c = vec![clip(&b.name, 10), format_size(b.size), l.count.to_string()];
                c.extend(latency_cells(l, tails));
                table.rows.push(c);
                counts.push(l.count);
            }
        }
        v.push(Block::Table(table));
    }
    for r in runs {
        if let Some(e) = &r.first_error {
            v.line(format!(
                " run {}: {} of {} clients completed; first error: {e}",
                r.run, r.clients_completed, p.clients
            ));
        }
    }
    counts
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        t + "~"
    }
}

impl crate::views::TestView for stackmeter_results::LoadBody {
    fn view(&self, v: &mut View, units: Units) -> Vec<u64> {
        view(v, &self.params, &self.results, self.summary.as_ref(), units)
    }
}
