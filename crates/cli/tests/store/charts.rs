//! Every kind of chart, from real results, laid out by a real browser at a
//! wide and a narrow page: lines, points with error bars, bars, log axes,
//! shaded bands (a report of rr, stream and rrul from two responders, a
//! comparison, a percentile spectrum), the heatmap (a fleet run of three
//! responders) and a history (a series of runs with its change points). A script added to each page reads every label's box as
//! Chromium laid it out; no label may leave its chart or overlap another.
//! Screenshots of both widths are left in target/tmp/store-charts/ to be
//! looked at.

use super::{chromium, db, ok, runs, sm, stdout};
use crate::Server;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Page widths checked: two charts a row, and one.
const WIDE: u32 = 1400;
const NARROW: u32 = 720;

/// Reads, after the page's own scripts, the box of every chart and of every
/// text in it (its four corners, turned with it), and writes what it found
/// into a `<pre id="measured">` as JSON: the charts' boxes, and a line per
/// label that leaves its chart or overlaps another of the same chart.
const MEASURE: &str = r#"<script>
window.addEventListener('load', function () {
  var out = {width: window.innerWidth, height: document.documentElement.scrollHeight, charts: [], problems: [], drawn: document.body.getAttribute('data-charts-drawn')};
  function corners(e) {
    var b = e.getBBox(), m = e.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]].map(function (p) {
      return [m.a * p[0] + m.c * p[1] + m.e, m.b * p[0] + m.d * p[1] + m.f];
    });
  }
  function span(r, ax, ay) {
    var lo = Infinity, hi = -Infinity;
    r.forEach(function (c) { var v = c[0] * ax + c[1] * ay; lo = Math.min(lo, v); hi = Math.max(hi, v); });
    return [lo, hi];
  }
  function apart(p, q) {
    var quads = [p, q];
    for (var k = 0; k < 2; k++) for (var i = 0; i < 4; i++) {
      var a = quads[k][i], b = quads[k][(i + 1) % 4];
      var ax = -(b[1] - a[1]), ay = b[0] - a[0], l = Math.hypot(ax, ay);
      if (!l) continue;
      var s = span(p, ax / l, ay / l), t = span(q, ax / l, ay / l);
      if (s[1] <= t[0] + 0.5 || t[1] <= s[0] + 0.5) return true;
    }
    return false;
  }
  document.querySelectorAll('svg[data-chart]').forEach(function (svg, n) {
    var r = svg.getBoundingClientRect();
    var name = svg.getAttribute('data-chart') + ' #' + n;
    var texts = [];
    svg.querySelectorAll('text').forEach(function (t) {
      var label = Array.prototype.filter.call(t.childNodes, function (c) { return c.nodeName !== 'title'; })
        .map(function (c) { return c.textContent; }).join(' ');
      if (label.trim()) texts.push({text: label, c: corners(t)});
    });
    texts.forEach(function (t, i) {
      var out_of = t.c.some(function (c) {
        return c[0] < r.left - 0.5 || c[0] > r.right + 0.5 || c[1] < r.top - 0.5 || c[1] > r.bottom + 0.5;
      });
      if (out_of) out.problems.push(name + ': "' + t.text + '" leaves the chart');
      for (var j = i + 1; j < texts.length; j++) {
        if (!apart(t.c, texts[j].c)) out.problems.push(name + ': "' + t.text + '" overlaps "' + texts[j].text + '"');
      }
    });
    out.charts.push({kind: svg.getAttribute('data-chart'), left: r.left, top: r.top + window.scrollY,
      width: r.width, height: r.height, texts: texts.length});
  });
  var pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
</body>"#;

/// What the browser measured on `page` at `width`.
fn measure(page: &Path, width: u32) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    assert!(html.contains("</body>"), "{}", page.display());
    let probe = page.with_extension(format!("measure-{width}.html"));
    std::fs::write(&probe, html.replacen("</body>", MEASURE, 1)).unwrap();
    let dom = chromium(&probe, &["--dump-dom", &format!("--window-size={width},1000")]);
    let json = dom
        .split("<pre id=\"measured\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("the measuring script did not run on {}", page.display()));
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

/// A screenshot of the whole page (up to 16000 px tall) at `width`.
fn screenshot(page: &Path, width: u32, height: f64, to: &Path) {
    let h = height.clamp(600.0, 16000.0) as u32;
    let _ = std::fs::remove_file(to);
    chromium(
        page,
        &[
            &format!("--screenshot={}", to.display()),
            &format!("--window-size={width},{h}"),
        ],
    );
    assert!(to.exists(), "no screenshot {}", to.display());
}

/// The charts' boxes: (kind, left, top, width).
fn boxes(m: &Value) -> Vec<(String, f64, f64, f64)> {
    m["charts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_string(),
                c["left"].as_f64().unwrap(),
                c["top"].as_f64().unwrap(),
                c["width"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// A suite of rr, stream and rrul against two responders, and a fleet run
/// of three: the pages every chart kind is drawn on.
fn pages(dir: &Path, db: &Path) -> Vec<PathBuf> {
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "[[step]]\nname = \"latency\"\ntest = \"rr\"\nsizes = \"1:1,1K:1K,1:64K\"\niterations = 200\n\n\
         [[step]]\nname = \"bulk\"\ntest = \"stream\"\ndirection = \"bidir\"\ntime = 1\ninterval = 0.25\n\n\
         [[step]]\nname = \"rrul\"\ntest = \"rrul\"\nphases = \"idle,down,up,bidir,idle\"\nphase_time = 1\nparallel = 1\n",
    )
    .unwrap();
    ok(sm(
        db,
        &[
            "suite",
            plan.to_str().unwrap(),
            "--repeat",
            "2",
            "--target",
            &format!("a={}", a.target()),
            "--target",
            &format!("b={}", b.target()),
        ],
    ));
    let run = runs(db)[0]["id"].as_i64().unwrap().to_string();
    let report = dir.join("report.html");
    ok(sm(db, &["report", "a", "b", "-o", report.to_str().unwrap()]));
    let compare = dir.join("compare.html");
    std::fs::write(
        &compare,
        stdout(&ok(sm(db, &["compare", "a", "b", "--format", "html"]))),
    )
    .unwrap();
    let spectrum = dir.join("spectrum.html");
    let html = stdout(&ok(sm(db, &["show", &run, "--percentiles", "--format", "html"])));
    std::fs::write(&spectrum, html).unwrap();

    // Three responders, each a client of the other two.
    let nodes = [Server::start(&[]), Server::start(&[]), Server::start(&[])];
    let names = ["bench-a-pc-1", "b2", "board-with-a-long-name-3"];
    let mut fleet = String::from(
        "name = \"charts\"\n[[step]]\nname = \"latency\"\ntest = \"rr\"\nsizes = \"1:1\"\niterations = 50\n",
    );
    for (n, s) in names.iter().zip(&nodes) {
        fleet += &format!(
            "\n[[node]]\nname = \"{n}\"\naddress = \"127.0.0.1\"\nport = {}\n",
            s.addr.port()
        );
    }
    let file = dir.join("fleet.toml");
    std::fs::write(&file, fleet).unwrap();
    let locks = dir.join("locks");
    std::fs::create_dir_all(&locks).unwrap();
    for n in names {
        ok(sm(
            db,
            &[
                "fleet",
                "run",
                file.to_str().unwrap(),
                "--node",
                n,
                "--run",
                "r1",
                "--lock-dir",
                locks.to_str().unwrap(),
            ],
        ));
    }
    let heatmap = dir.join("fleet.html");
    std::fs::write(
        &heatmap,
        stdout(&ok(sm(db, &["fleet", "report", "r1", "--format", "html"]))),
    )
    .unwrap();
    // A history: twelve runs of one label, the client moved onto the
    // responder's CPU half way, so the chart has a change point to draw.
    for n in 1..=12 {
        let cpu = if n <= 6 { "1" } else { "0" };
        let commit = format!("commit=c{n}");
        ok(sm(
            db,
            &[
                "rr",
                "--sizes",
                "1:1",
                "-n",
                "50",
                "--label",
                "hist",
                "--affinity",
                cpu,
                "--responder-affinity",
                "0",
                "--attr",
                &commit,
            ],
        ));
    }
    let history = dir.join("history.html");
    std::fs::write(
        &history,
        stdout(&ok(sm(
            db,
            &["history", "hist", "--figure", "rtt p50", "--format", "html"],
        ))),
    )
    .unwrap();
    vec![report, compare, spectrum, heatmap, history]
}

#[test]
fn charts_keep_their_labels_inside_and_apart_at_two_page_widths() {
    let db = db("charts");
    let dir = db.parent().unwrap().to_path_buf();
    let pages = pages(&dir, &db);
    let mut kinds: Vec<String> = Vec::new();
    for page in &pages {
        let html = std::fs::read_to_string(page).unwrap();
        assert!(!html.contains("width=\"640\""), "no chart drawn at a fixed width");
        for width in [WIDE, NARROW] {
            let m = measure(page, width);
            let name = page.file_stem().unwrap().to_string_lossy();
            let problems: Vec<&str> = m["problems"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap())
                .collect();
            assert!(problems.is_empty(), "{name} at {width} px:\n{}", problems.join("\n"));
            assert_eq!(m["width"].as_f64(), Some(width as f64), "the page is as wide as asked");
            let charts = boxes(&m);
            assert!(!charts.is_empty(), "{name}: no chart");
            assert_eq!(
                m["drawn"].as_str().and_then(|d| d.parse::<usize>().ok()),
                Some(charts.len()),
                "{name}: every chart laid out"
            );
            for c in &charts {
                if !kinds.contains(&c.0) {
                    kinds.push(c.0.clone());
                }
            }
            // Charts (heatmaps keep their own size) use the page: two a row
            // on the wide page, one a row filling the narrow one.
            let plots: Vec<_> = charts.iter().filter(|c| c.0 != "heatmap").collect();
            let shared =
                |c: &(String, f64, f64, f64)| plots.iter().any(|d| (d.2 - c.2).abs() < 1.0 && (d.1 - c.1).abs() > 1.0);
            let usable = width as f64 - 2.0 * 24.0;
            for c in &plots {
                match width {
                    WIDE => assert!(
                        c.3 >= 0.4 * usable && c.3 <= 0.55 * usable,
                        "{name} at {width} px: a {} chart {} px wide",
                        c.0,
                        c.3
                    ),
                    _ => assert!(
                        c.3 >= 0.95 * usable && !shared(c),
                        "{name} at {width} px: a {} chart {} px wide, or beside another",
                        c.0,
                        c.3
                    ),
                }
            }
            // Charts that follow each other share a row (a spectrum has a
            // table between each two).
            if width == WIDE && name != "spectrum" && plots.len() >= 2 {
                assert!(plots.iter().any(|c| shared(c)), "{name}: two charts a row");
            }
            let shot = dir.join(format!("{name}-{width}.png"));
            screenshot(page, width, m["height"].as_f64().unwrap(), &shot);
        }
    }
    for kind in [
        "comparison",
        "repetitions",
        "percentiles",
        "histogram",
        "intervals",
        "rrul-induced",
        "rrul-throughput",
        "rrul-latency",
        "rrul-percentiles",
        "heatmap",
        "history",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} chart in {kinds:?}");
    }
}

/// The report shows what the text of each test shows: a single source's
/// rrul run has its phase table (with the induced p99) in the HTML, and the
/// placement is written in words.
#[test]
fn a_report_of_one_source_has_the_rrul_phase_table() {
    let db = db("report-rrul");
    let server = Server::start(&[]);
    ok(sm(
        &db,
        &[
            "rrul",
            &server.target(),
            "--phases",
            "idle,bidir",
            "--phase-time",
            "1",
            "-P",
            "1",
            "--label",
            "x",
        ],
    ));
    let id = runs(&db)[0]["id"].as_i64().unwrap().to_string();
    let text = stdout(&ok(sm(&db, &["show", &id])));
    let report = db.with_file_name("one.html");
    ok(sm(&db, &["report", "x", "-o", report.to_str().unwrap()]));
    let page = std::fs::read_to_string(&report).unwrap();
    let rrul = page.split("Latency under load (rrul)").nth(1).expect("an rrul section");
    let table = rrul.split("<table>").nth(1).expect("a table in the rrul section");
    let table = table.split("</table>").next().unwrap();
    // Every column head of the text's phase table is a head of the HTML's.
    let head = text
        .lines()
        .find(|l| l.trim_start().starts_with("phase "))
        .unwrap_or_else(|| panic!("no phase table in\n{text}"));
    for h in head.split("  ").map(str::trim).filter(|h| !h.is_empty()) {
        assert!(table.contains(&format!(">{h}</th>")), "no column {h:?} in {table}");
    }
    assert!(table.contains("bidir"), "{table}");
    let env = page.split("Environment").nth(1).unwrap();
    assert!(env.contains("client not pinned") && !env.contains("-/-"), "{env}");
}
