//! The layout rules checked on estimated text boxes: units scaled to the
//! range, tick labels apart on every axis tried, titles and names wrapped
//! inside the drawing, no two labels of a chart on top of each other. The
//! browser test (crates/cli/tests/store/charts.rs) checks the same on the
//! boxes Chromium lays out.

use super::*;

/// Two convex quadrilaterals overlap (separating axis test), by more than
/// a hair.
fn overlap(a: &[(f64, f64); 4], b: &[(f64, f64); 4]) -> bool {
    for quad in [a, b] {
        for i in 0..4 {
            let (p, q) = (quad[i], quad[(i + 1) % 4]);
            let axis = (-(q.1 - p.1), q.0 - p.0);
            let len = (axis.0 * axis.0 + axis.1 * axis.1).sqrt();
            if len == 0.0 {
                continue;
            }
            let proj = |r: &[(f64, f64); 4]| {
                r.iter()
                    .map(|c| (c.0 * axis.0 + c.1 * axis.1) / len)
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
            };
            let ((a0, a1), (b0, b1)) = (proj(a), proj(b));
            if a1 <= b0 + 0.5 || b1 <= a0 + 0.5 {
                return false;
            }
        }
    }
    true
}

/// Every text of `c` inside its drawing, no two overlapping.
fn assert_clean(c: &Chart) {
    let lay = c.layout();
    for t in &lay.texts {
        let (l, tp, r, b) = t.bounds();
        assert!(
            l >= 0.0 && tp >= 0.0 && r <= WIDTH && b <= lay.height,
            "{:?} leaves the {WIDTH}x{} box of {:?}: {:?}",
            t.lines,
            lay.height,
            c.title,
            t.bounds()
        );
    }
    for (i, a) in lay.texts.iter().enumerate() {
        for b in &lay.texts[i + 1..] {
            assert!(
                !overlap(&a.corners(), &b.corners()),
                "{:?} and {:?} overlap in {:?}",
                a.lines,
                b.lines,
                c.title
            );
        }
    }
}

#[test]
fn broken_ranges_have_no_ticks() {
    for (lo, hi) in [(1.0, f64::INFINITY), (f64::NAN, 10.0), (10.0, 1.0)] {
        assert!(Axis::log("us", lo, hi).ticks(200.0, Along::Y).is_empty(), "{lo}..{hi}");
        assert!(
            Axis::linear("s", lo, hi).ticks(200.0, Along::X).is_empty(),
            "{lo}..{hi}"
        );
    }
}

#[test]
fn percentile_points_leave_out_the_maximum() {
    let pts = by_percentile([(0.5, 10.0), (0.99, 20.0), (1.0, 30.0)]);
    assert_eq!(pts.len(), 2);
    assert!((pts[0].0 - 2.0).abs() < 1e-9 && (pts[1].0 - 100.0).abs() < 1e-6);
}

#[test]
fn units_scale_to_the_range() {
    assert_eq!(scale_unit("us", 60000.0), ("ms".to_string(), 1000.0));
    assert_eq!(scale_unit("us", 500.0), ("us".to_string(), 1.0));
    assert_eq!(scale_unit("us", 2.5e6), ("s".to_string(), 1e6));
    assert_eq!(scale_unit("us", 0.5).0, "ns");
    assert_eq!(scale_unit("Mbit/s", 66000.0), ("Gbit/s".to_string(), 1000.0));
    assert_eq!(scale_unit("Mbit/s", 0.5).0, "kbit/s");
    assert_eq!(scale_unit("pps", 32000.0).0, "kpps");
    assert_eq!(scale_unit("KiB/s", 2048.0).0, "MiB/s");
    assert_eq!(scale_unit("%", 1e6), ("%".to_string(), 1.0));
    assert_eq!(scale_unit("us", 0.0), ("us".to_string(), 1.0));
    let a = Axis::linear("throughput", 0.0, 66000.0).unit("Mbit/s");
    assert_eq!(a.title(), "throughput (Gbit/s)");
    let labels: Vec<String> = a.ticks(230.0, Along::Y).into_iter().map(|t| t.label).collect();
    assert!(labels.contains(&"60".to_string()), "{labels:?}");
    assert!(labels.iter().all(|l| !l.contains('k')), "{labels:?}");
    assert_eq!(
        Axis::log("rtt", 20.0, 60000.0).unit("us").title(),
        "rtt (ms, log scale)"
    );
    assert_eq!(Axis::log("B / A", 0.1, 2.0).title(), "B / A (log scale)");
    assert_eq!(Axis::linear("", 0.0, 1.0).unit("us").title(), "us");
}

#[test]
fn tick_labels_keep_apart_on_every_axis_tried() {
    let ranges = [
        (0.0, 1.0),
        (0.0, 7.5),
        (0.0, 66000.0),
        (-176.0, 4.8),
        (0.029, 3.3),
        (10.0, 110.0),
        (62.0, 68.0),
        (0.9, 60000.0),
        (1.0, 1e6),
        (3.0, 12000.0),
        (99.0, 101.0),
        (1e-3, 1e3),
    ];
    for (lo, hi) in ranges {
        for log in [false, true] {
            if log && lo <= 0.0 {
                continue;
            }
            for (along, lengths) in [(Along::X, [230.0, 400.0, 560.0]), (Along::Y, [120.0, 230.0, 400.0])] {
                for px in lengths {
                    for unit in ["", "us", "Mbit/s"] {
                        let a = Axis {
                            log,
                            ..Axis::linear("v", lo, hi).unit(unit)
                        };
                        let t = a.ticks(px, along);
                        assert!(a.fits(&t, px, along), "{lo}..{hi} log {log} {along:?} {px}: {t:?}");
                        assert!(t.len() >= 2, "{lo}..{hi} log {log} {along:?} {px}: {t:?}");
                        let labels: Vec<&str> = t.iter().map(|t| t.label.as_str()).collect();
                        let mut uniq = labels.clone();
                        uniq.dedup();
                        assert_eq!(uniq, labels, "labels tell ticks apart");
                    }
                }
            }
        }
    }
}

#[test]
fn a_log_axis_labels_only_what_fits() {
    let t = Axis::log("", 10.0, 110.0).ticks(230.0, Along::Y);
    let v: Vec<f64> = t.iter().map(|t| t.value).collect();
    assert_eq!(v, [10.0, 20.0, 50.0, 100.0], "{t:?}");
    // One decade gets every digit where they fit.
    let t = Axis::log("", 60.0, 110.0).ticks(230.0, Along::Y);
    assert_eq!(t.len(), 5, "{t:?}");
    // Many decades: powers of ten, some skipped on a short axis.
    let t = Axis::log("", 1.0, 1e9).ticks(120.0, Along::Y);
    assert!(t.len() >= 3 && t.len() < 10, "{t:?}");
}

#[test]
fn percentile_ticks_are_written_as_percentiles() {
    let t = Axis::percentiles(2000.0).ticks(560.0, Along::X);
    let labels: Vec<&str> = t.iter().map(|t| t.label.as_str()).collect();
    for want in ["p50", "p90", "p99", "p99.9"] {
        assert!(labels.contains(&want), "{labels:?}");
    }
    // Only round percentiles, however long the axis: no p66.6667 (a tick
    // at 3) or p96.6667 (at 30).
    let round = ["p0", "p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "p99.9999"];
    for xmax in [40.0, 2000.0, 3e4, 1e6] {
        for t in Axis::percentiles(xmax).ticks(560.0, Along::X) {
            assert!(round.contains(&t.label.as_str()), "{xmax}: {t:?}");
        }
    }
}

#[test]
fn a_snapped_ratio_axis_labels_both_sides_of_its_points() {
    // A ratio near 0.07 with its interval, and the reference 1.
    for (lo, hi) in [(0.065, 1.0), (0.0008, 1.0), (1.0, 37.0), (0.93, 1.07)] {
        let (_, t) = Axis::log("B / A", lo, hi).snapped().drawn(230.0, Along::Y);
        assert!(t.first().unwrap().value <= lo * 1.0001, "{lo}..{hi}: {t:?}");
        assert!(t.last().unwrap().value >= hi * 0.9999, "{lo}..{hi}: {t:?}");
        assert!(t.len() >= 2, "{t:?}");
    }
    let (_, t) = Axis::linear("B / A", -176.3, 4.8).snapped().drawn(230.0, Along::Y);
    assert!(t[0].value <= -176.3 && t.last().unwrap().value >= 4.8, "{t:?}");
}

#[test]
fn snapping_widens_by_one_step_of_the_scheme_drawn() {
    // 0.027 to 28 ms of round trips: 1-3 steps fit, ending at 0.01 and 30
    // (not widened scheme after scheme to 100).
    let (a, t) = Axis::log("rtt", 27.0, 28000.0)
        .unit("us")
        .snapped()
        .drawn(230.0, Along::Y);
    assert!(!a.snap);
    assert_eq!((a.min, a.max), (10.0, 30000.0), "{t:?}");
    let labels: Vec<&str> = t.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(labels, ["0.01", "0.03", "0.1", "0.3", "1", "3", "10", "30"]);
    let (a, _) = Axis::linear("", 0.0, 59.2).snapped().drawn(230.0, Along::Y);
    assert_eq!((a.min, a.max), (0.0, 60.0));
}

#[test]
fn wrapped_lines_fit_and_keep_every_word() {
    let s = "Induced round trip per phase (p50 minus idle's): median of runs, lowest to highest";
    let lines = wrap(s, 300.0, 14.0, true);
    assert!(lines.len() >= 2, "{lines:?}");
    assert!(lines.iter().all(|l| text_width(l, 14.0, true) <= 300.0), "{lines:?}");
    assert_eq!(lines.join(" "), s);
    let long = "x".repeat(200);
    let lines = wrap(&long, 100.0, 10.0, false);
    assert!(lines.iter().all(|l| text_width(l, 10.0, false) <= 100.0));
    assert_eq!(lines.concat(), long);
    assert!(wrap("", 100.0, 10.0, false).is_empty());
}

fn chart(title: &str, x: Axis, y: Axis, series: usize) -> Chart {
    let pts = |k: usize| {
        (0..20)
            .map(|i| {
                let t = i as f64 / 19.0;
                (
                    x.min + t * (x.max - x.min),
                    y.min + t * (y.max - y.min) * (k + 1) as f64 / series as f64,
                )
            })
            .collect()
    };
    let s = (0..series)
        .map(|k| Trace::line(format!("series number {k} with a name"), k, pts(k)))
        .collect();
    Chart::new("test", title, x, y, s)
}

#[test]
fn charts_keep_every_label_inside_and_apart() {
    let long = "a (latest run): Throughput against time (receiver-counted, per interval), with a title that goes on and on past any box";
    let mut charts = vec![
        chart(
            long,
            Axis::linear("time", 0.0, 7.5).unit("s"),
            Axis::linear("throughput", 0.0, 66000.0).unit("Mbit/s").snapped(),
            2,
        ),
        chart(
            "rtt by percentile",
            Axis::percentiles(1e5),
            Axis::log("rtt", 0.9, 60000.0).unit("us"),
            6,
        ),
        chart(
            "histogram",
            Axis::log("rtt", 12.0, 20000.0).unit("us"),
            Axis::linear("share of samples", 0.0, 0.33).snapped(),
            1,
        ),
    ];
    // A label at the very left of the x axis, under the lowest y label.
    charts.push(chart(
        "corner",
        Axis::log("rtt", 49.5, 20000.0).unit("us"),
        Axis::linear("share of samples", 0.0, 0.33).snapped(),
        2,
    ));
    let mut bands = chart(
        "bands",
        Axis::linear("time", 0.0, 30.0).unit("s"),
        Axis::log("delay", 10.0, 20000.0).unit("us"),
        3,
    );
    bands.bands = (0..12)
        .map(|i| Band {
            from: i as f64 * 2.5,
            to: (i + 1) as f64 * 2.5,
            label: ["idle", "down", "up", "bidir"][i % 4].into(),
        })
        .collect();
    charts.push(bands);
    for n in [1, 3, 8, 30] {
        let mut c = chart(
            "B / A per row, with 95% interval",
            Axis::linear("", -0.6, n as f64 - 0.4),
            Axis::log("B / A", 0.06, 1.1).snapped(),
            1,
        );
        c.categories = (0..n)
            .map(|i| format!("{} KiB:{} B and a long row label", 1 << i, i))
            .collect();
        c.hline = Some(1.0);
        charts.push(c);
    }
    for c in &charts {
        assert_clean(c);
        let svg = c.svg();
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
        assert!(svg.contains(r#"width="100%""#) && !svg.contains("width=\"640\""));
    }
}

#[test]
fn a_ratio_chart_far_from_one_labels_its_point() {
    let mut c = Chart::new(
        "comparison",
        "B / A",
        Axis::linear("", -0.6, 0.6),
        Axis::log("B / A", 0.06, 1.0).snapped(),
        vec![Trace {
            errors: vec![(0.065, 0.075)],
            kind: Kind::Points { radius: 4.0 },
            ..Trace::line("b / a", 1, vec![(0.0, 0.07)])
        }],
    );
    c.categories = vec!["bidir 128 KiB".into()];
    let lay = c.layout();
    let v: Vec<f64> = lay.y_ticks.iter().map(|t| t.value).collect();
    assert!(
        v.iter().any(|&t| t <= 0.065) && v.iter().any(|t| (0.075..=0.2).contains(t)),
        "{v:?}"
    );
    assert_clean(&c);
}

#[test]
fn a_point_without_an_interval_has_no_whisker() {
    let s = Trace {
        errors: vec![(f64::NAN, f64::NAN), (0.5, 0.9)],
        kind: Kind::Points { radius: 4.0 },
        ..Trace::line("b / a", 1, vec![(0.0, 0.7), (1.0, 0.7)])
    };
    let c = Chart::new(
        "comparison",
        "B / A",
        Axis::linear("", -0.6, 1.6),
        Axis::log("B / A", 0.4, 1.1),
        vec![s],
    );
    let svg = c.svg();
    assert_eq!(svg.matches("class=\"err\"").count(), 1, "{svg}");
    assert!(!svg.contains("NaN"), "{svg}");
}
