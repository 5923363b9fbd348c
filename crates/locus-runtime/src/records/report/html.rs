//! Self-contained HTML reports (inline SVG and CSS, no scripts or fonts
//! from elsewhere): a run's per-worker timeline like seed 004 Fig. 10, its
//! I/O breakdown like Figs. 8–9 and a locality panel; the pieces the
//! benchmarks' pages are made of.

use super::view::{Outcome, RunView, Span};
use super::{Placement, Report};
use std::collections::BTreeMap;
use std::fmt::Write;

pub const COLORS: [&str; 8] = [
    "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d",
];
pub const MB: f64 = 1e6;

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn page(title: &str, body: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{t}</title>
<style>
body{{font-family:sans-serif;margin:2em;color:#222;max-width:1100px}}
h1{{font-size:1.5em}} h2{{font-size:1.2em;margin-top:2em}} h3{{font-size:1em}}
table{{border-collapse:collapse;margin:1em 0}} td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}
th:first-child,td:first-child{{text-align:left}}
svg{{display:block;margin:0.5em 0}} .legend span{{display:inline-block;margin-right:1em}}
.sw{{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}}
.failed{{border-left:6px solid #d62728;background:#fdecea;padding:0.5em 1em}} .failed h2{{margin-top:0;color:#d62728}}
td.text{{text-align:left}} pre{{margin:0;white-space:pre-wrap;font-size:0.85em}}
</style></head><body>
<h1>{t}</h1>
{body}
</body></html>
"#,
        t = esc(title)
    )
}

pub fn legend(names: &[String]) -> String {
    let pairs: Vec<(String, &str)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), COLORS[i % COLORS.len()]))
        .collect();
    coloured_legend(&pairs)
}

/// A legend of (name, colour) swatches.
fn coloured_legend(pairs: &[(String, &str)]) -> String {
    let mut s = String::from("<div class=\"legend\">");
    for (n, colour) in pairs {
        let _ = write!(
            s,
            "<span><i class=\"sw\" style=\"background:{colour}\"></i>{}</span>",
            esc(n)
        );
    }
    s.push_str("</div>");
    s
}

/// Horizontal stacked bars: one bar per row, one segment per part.
pub fn stacked(unit: &str, rows: &[(String, Vec<f64>)], parts: &[String]) -> String {
    let max = rows
        .iter()
        .map(|(_, v)| v.iter().sum::<f64>())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let (bar, left, width) = (20.0, 210.0, 560.0);
    let height = rows.len() as f64 * bar + 30.0;
    let mut s = format!(
        "<svg class=\"chart\" width=\"{}\" height=\"{height}\" role=\"img\">",
        left + width + 90.0
    );
    for (r, (label, values)) in rows.iter().enumerate() {
        let y = r as f64 * bar;
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{}</text>",
            y + bar - 6.0,
            esc(label)
        );
        let mut x = left;
        for (i, v) in values.iter().enumerate() {
            let w = v / max * width;
            let _ = write!(
                s,
                "<rect class=\"bar\" x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\"><title>{}: {v:.3} {unit}</title></rect>",
                bar - 4.0,
                COLORS[i % COLORS.len()],
                esc(&parts[i])
            );
            x += w;
        }
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{:.3}</text>",
            x + 4.0,
            y + bar - 8.0,
            values.iter().sum::<f64>()
        );
    }
    let _ = write!(
        s,
        "<text x=\"{left}\" y=\"{}\" font-size=\"11\">{}</text></svg>",
        height - 8.0,
        esc(unit)
    );
    s
}

/// How a task's bar is outlined: by how it ended.
fn outline(o: Outcome) -> &'static str {
    match o {
        Outcome::Done => "",
        Outcome::Failed => " stroke=\"#d62728\" stroke-width=\"3\"",
        Outcome::Retried => " stroke=\"#9467bd\" stroke-width=\"2\" stroke-dasharray=\"3 2\"",
        Outcome::Resumed => " stroke=\"#7f7f7f\" stroke-width=\"1.5\" stroke-dasharray=\"1 2\"",
        Outcome::Remade => " stroke=\"#1f77b4\" stroke-width=\"2\" stroke-dasharray=\"6 2\"",
        Outcome::Stopped => " stroke=\"#ff7f0e\" stroke-width=\"2\" stroke-dasharray=\"1 1\"",
    }
}

/// Per-worker timeline: busy spans coloured by function on an idle (dark
/// red) background, as in seed 004 Fig. 10, with each worker's idle share.
pub fn timeline(o: &RunView) -> String {
    let mut funcs: Vec<String> = o.spans.iter().map(|s| s.func.clone()).collect();
    funcs.sort();
    funcs.dedup();
    let groups: Vec<(String, &str)> = funcs
        .iter()
        .enumerate()
        .map(|(i, f)| (f.clone(), COLORS[i % COLORS.len()]))
        .collect();
    timeline_by(o, &groups, |t| {
        funcs.iter().position(|f| *f == t.func).unwrap_or(0)
    })
}

/// The same timeline with each task coloured by where it ran against its
/// input bytes: local, spilled by its server, remote where it was placed.
pub fn placement_timeline(o: &RunView) -> String {
    let colour = |p: Placement| match p {
        Placement::Local => "#54a24b",
        Placement::Spilled => "#f58518",
        Placement::Remote => "#4c78a8",
        Placement::NoInputs => "#bab0ac",
    };
    let groups: Vec<(String, &str)> = Placement::ALL
        .iter()
        .map(|p| (p.label().to_string(), colour(*p)))
        .collect();
    timeline_by(o, &groups, |t| {
        Placement::ALL
            .iter()
            .position(|p| *p == t.placement)
            .unwrap_or(0)
    })
}

/// Tasks a worker's row draws one by one; a row with more draws one bar
/// per pixel column instead (a run of a million tasks made a 318 MB page).
const SPANS_DRAWN: usize = 2_000;

/// Per-worker timeline of busy spans on an idle (dark red) background,
/// each span in the colour of its group (`groups`: name and colour).
fn timeline_by(
    o: &RunView,
    groups: &[(String, &str)],
    group_of: impl Fn(&Span) -> usize,
) -> String {
    let (row, left, width) = (16.0, 110.0, 760.0);
    let total = o.seconds.max(1e-6);
    let height = o.workers.len() as f64 * row + 30.0;
    let mut s = format!(
        "<svg class=\"chart\" width=\"{}\" height=\"{height}\" role=\"img\">",
        left + width + 70.0
    );
    let busy = o.busy();
    let mut by_rank: BTreeMap<u32, Vec<&Span>> = BTreeMap::new();
    for t in &o.spans {
        by_rank.entry(t.rank).or_default().push(t);
    }
    let group_of = |t: &Span| group_of(t).min(groups.len() - 1);
    for (i, (rank, node)) in o.workers.iter().enumerate() {
        let y = i as f64 * row;
        let busy = busy.get(rank).copied().unwrap_or(0.0);
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"11\">rank {rank} {}</text><rect x=\"{left}\" y=\"{y}\" width=\"{width}\" height=\"{}\" fill=\"#8b1a1a\"/>",
            y + row - 4.0,
            esc(node),
            row - 2.0
        );
        let spans = by_rank.remove(rank).unwrap_or_default();
        let bars = if spans.len() <= SPANS_DRAWN {
            spans
                .iter()
                .map(|t| Bar {
                    from: t.start / total,
                    to: t.end / total,
                    group: group_of(t),
                    outcome: t.outcome,
                    title: format!(
                        "{} ({}, {})",
                        t.func,
                        groups[group_of(t)].0,
                        t.outcome.label()
                    ),
                    tasks: None,
                    start: t.start,
                    end: t.end,
                })
                .collect()
        } else {
            columns(&spans, total, width as usize, groups, group_of)
        };
        for b in bars {
            let x = left + b.from * width;
            let w = ((b.to - b.from) * width).max(0.5);
            let title = match b.tasks {
                Some(n) => format!("{n} tasks, mostly {}", b.title),
                None => b.title,
            };
            let _ = write!(
                s,
                "<rect class=\"bar\" x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\"{}><title>{} {:.3}–{:.3} s</title></rect>",
                row - 2.0,
                groups[b.group].1,
                outline(b.outcome),
                esc(&title),
                b.start,
                b.end
            );
        }
        let idle = 100.0 * (1.0 - busy / total).max(0.0);
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"11\">idle {idle:.1}%</text>",
            left + width + 6.0,
            y + row - 4.0
        );
    }
    let _ = write!(
        s,
        "<text x=\"{left}\" y=\"{}\" font-size=\"11\">0 s</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{total:.2} s</text></svg>",
        height - 8.0,
        left + width,
        height - 8.0
    );
    let mut all = groups.to_vec();
    all.push(("idle".to_string(), "#8b1a1a"));
    let mut lg = coloured_legend(&all);
    for (node, why) in &o.lost_nodes {
        let _ = write!(
            lg,
            "<p><b style=\"color:#ff7f0e\">lost during the run: {}</b> ({})</p>",
            esc(node),
            esc(why)
        );
    }
    for why in &o.workers_gone {
        let _ = write!(
            lg,
            "<p><b style=\"color:#ff7f0e\">{}</b>; its tasks ran elsewhere</p>",
            esc(why)
        );
    }
    if o.spans.iter().any(|t| t.outcome != Outcome::Done) {
        let _ = write!(
            lg,
            "<p>outlined: <b style=\"color:#d62728\">failed</b> (red), \
             <b style=\"color:#9467bd\">retried</b> (purple dashes), \
             <b style=\"color:#7f7f7f\">resumed</b> (grey dots, not run again), \
             <b style=\"color:#1f77b4\">remade</b> (blue dashes, run again to make files lost with a node), \
             <b style=\"color:#ff7f0e\">stopped</b> (orange dots, stopped by a lost node and run again)</p>"
        );
    }
    format!(
        "{lg}{s}<p>busy {:.1}% of worker time</p>",
        100.0 * (1.0 - o.idle_share())
    )
}

/// A bar of a worker's row: from and to as shares of the run; one task,
/// or (`tasks`) the pixel columns of many.
struct Bar {
    from: f64,
    to: f64,
    group: usize,
    outcome: Outcome,
    title: String,
    tasks: Option<usize>,
    start: f64,
    end: f64,
}

/// A busy row of many tasks as bars of whole pixel columns: each column
/// in the colour of the group that kept the worker busiest in it, outlined
/// by its worst outcome; neighbouring columns alike make one bar.
fn columns(
    spans: &[&Span],
    total: f64,
    width: usize,
    groups: &[(String, &str)],
    group_of: impl Fn(&Span) -> usize,
) -> Vec<Bar> {
    struct Column {
        busy: Vec<f64>,
        tasks: usize,
        outcome: Outcome,
    }
    let mut cols: Vec<Column> = (0..width)
        .map(|_| Column {
            busy: vec![0.0; groups.len()],
            tasks: 0,
            outcome: Outcome::Done,
        })
        .collect();
    let per = total / width as f64;
    let col_of = |t: f64| ((t / per) as usize).min(width - 1);
    for t in spans {
        let (first, last) = (col_of(t.start), col_of(t.end));
        cols[first].tasks += 1;
        for (c, col) in cols.iter_mut().enumerate().take(last + 1).skip(first) {
            let (lo, hi) = (c as f64 * per, (c + 1) as f64 * per);
            // A task too short for the clock still shows where it ran.
            let took = (t.end.min(hi) - t.start.max(lo)).max(f64::MIN_POSITIVE);
            col.busy[group_of(t)] += took;
            if t.outcome.severity() > col.outcome.severity() {
                col.outcome = t.outcome;
            }
        }
    }
    let mut bars: Vec<Bar> = Vec::new();
    for (c, col) in cols.iter().enumerate() {
        let most = (0..groups.len()).max_by(|a, b| col.busy[*a].total_cmp(&col.busy[*b]));
        let Some(group) = most.filter(|g| col.busy[*g] > 0.0) else {
            continue;
        };
        let (start, end) = (c as f64 * per, (c + 1) as f64 * per);
        match bars.last_mut() {
            Some(b) if b.group == group && b.outcome == col.outcome && b.end >= start => {
                b.end = end;
                b.to = end / total;
                b.tasks = b.tasks.map(|n| n + col.tasks);
            }
            _ => bars.push(Bar {
                from: start / total,
                to: end / total,
                group,
                outcome: col.outcome,
                title: format!("{} ({})", groups[group].0, col.outcome.label()),
                tasks: Some(col.tasks),
                start,
                end,
            }),
        }
    }
    bars
}

/// Average seconds per task of each function in each part: staging its
/// inputs, its program, registering its outputs.
fn breakdown(o: &RunView) -> Vec<(String, f64)> {
    let mut parts = Vec::new();
    let mut funcs: Vec<&str> = o.spans.iter().map(|s| s.func.as_str()).collect();
    funcs.sort();
    funcs.dedup();
    for func in funcs {
        parts.push((format!("{func}: staging inputs"), o.mean(func, |s| s.stage)));
        parts.push((
            format!("{func}: program"),
            o.mean(func, |s| (s.end - s.start - s.stage - s.commit).max(0.0)),
        ));
        parts.push((
            format!("{func}: registering outputs"),
            o.mean(func, |s| s.commit),
        ));
    }
    parts
}

/// One stacked bar per labelled run of the parts any of them spent time in.
pub fn breakdown_chart(runs: &[(&str, &RunView)]) -> String {
    let all: Vec<Vec<(String, f64)>> = runs.iter().map(|(_, v)| breakdown(v)).collect();
    let mut parts: Vec<String> = Vec::new();
    for (name, v) in all.iter().flatten() {
        if *v > 0.0005 && !parts.contains(name) {
            parts.push(name.clone());
        }
    }
    let rows: Vec<(String, Vec<f64>)> = runs
        .iter()
        .zip(&all)
        .map(|((label, _), b)| {
            let value = |p: &String| b.iter().find(|(n, _)| n == p).map_or(0.0, |(_, v)| *v);
            (label.to_string(), parts.iter().map(value).collect())
        })
        .collect();
    format!("{}{}", legend(&parts), stacked("s", &rows, &parts))
}

/// The locality panel, a row per labelled run: local and fetched input bytes, SOFT spills.
pub fn locality_table(runs: &[(&str, &RunView)]) -> String {
    let mut s = String::from(
        "<table><tr><th>configuration</th><th>local MB</th><th>fetched MB</th><th>local share</th><th>SOFT spills</th></tr>",
    );
    for (label, o) in runs {
        let (l, r) = o.input_bytes(None);
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.0}%</td><td>{}</td></tr>",
            esc(label),
            l as f64 / MB,
            r as f64 / MB,
            100.0 * l as f64 / (l + r).max(1) as f64,
            o.spilled
        );
    }
    s.push_str("</table>");
    s
}

/// Failed tasks a page lists one by one.
const FAILURES_LISTED: usize = 100;

/// A failed run's box, at the top of its page: the run's error, then each
/// failed task (function, position, node, exit, attempts, error, the tail
/// of its stderr and a link to all of it).
fn failures(report: &Report) -> String {
    let failed = report.failures();
    let Some(error) = &report.run.error else {
        if failed.is_empty() {
            return String::new();
        }
        return format!(
            "<div class=\"failed\">{}</div>",
            failed_tasks(report, &failed)
        );
    };
    // A run stopped from outside did not fail: it says what never started.
    let (heading, never_started) = match report.run.error_kind {
        Some(locus_proto::run::ErrorKind::Interrupted) => ("Stopped", never_started(report)),
        _ => ("Failed", String::new()),
    };
    format!(
        "<div class=\"failed\"><h2>{heading}</h2><p>{}</p>{}{never_started}</div>",
        esc(error),
        failed_tasks(report, &failed)
    )
}

fn never_started(report: &Report) -> String {
    let held = &report.never_started;
    if held.is_empty() {
        return String::new();
    }
    format!(
        "<p>Never started: {} task(s): {}</p>",
        held.len(),
        esc(&super::calls(held.iter().map(|h| (&h.func, &h.at))))
    )
}

fn failed_tasks(report: &Report, failed: &[&crate::records::record::TaskRecord]) -> String {
    if failed.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "<h3>{} failed task(s)</h3><table><tr><th>function</th><th>at</th><th>node (rank)</th>\
         <th>exit</th><th>attempts</th><th>error</th><th>stderr, last lines</th></tr>",
        failed.len()
    );
    for t in failed.iter().take(FAILURES_LISTED) {
        let stderr = match &t.stderr {
            Some(file) => {
                let path = std::path::absolute(report.dir.join(file)).unwrap_or_default();
                format!(
                    "<pre>{}</pre><a href=\"file://{}\">{}</a>",
                    esc(&report.stderr_tail(t).join("\n")),
                    esc(&path.display().to_string()),
                    esc(file)
                )
            }
            None => String::new(),
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td class=\"text\">{}</td><td class=\"text\">{} ({})</td><td>{}</td><td>{}</td><td class=\"text\">{}</td><td class=\"text\">{stderr}</td></tr>",
            esc(&t.func),
            esc(&t.at),
            esc(&t.node),
            t.rank,
            t.exit.map_or_else(|| "–".to_string(), |c| c.to_string()),
            t.attempts,
            esc(t.error.as_deref().unwrap_or_default()),
        );
    }
    s.push_str("</table>");
    if failed.len() > FAILURES_LISTED {
        let _ = write!(
            s,
            "<p>… and {} more (<code>locus report</code> lists them)</p>",
            failed.len() - FAILURES_LISTED
        );
    }
    s
}

/// A page for one run: how it failed, if it did; its timeline, I/O
/// breakdown and locality.
pub fn run(name: &str, report: &Report) -> String {
    let o = &RunView::of(report);
    let body = format!(
        "{}<p>{} tasks in {:.3} s on {} workers</p><h2>Per-worker timeline</h2>{}<h2>Placement: where each task ran against its input bytes</h2>{}<h2>I/O breakdown, average seconds per task</h2>{}<h2>Locality</h2>{}",
        failures(report),
        o.spans.len(),
        o.seconds,
        o.workers.len(),
        timeline(o),
        placement_timeline(o),
        breakdown_chart(&[(name, o)]),
        locality_table(&[(name, o)])
    );
    page(&format!("Locus run {name}"), &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(func: &str, start: f64, end: f64, outcome: Outcome) -> Span {
        Span {
            func: func.into(),
            rank: 0,
            start,
            end,
            stage: 0.0,
            commit: 0.0,
            local_bytes: 0,
            remote_bytes: 0,
            written_bytes: 0,
            placement: Placement::NoInputs,
            outcome,
        }
    }

    fn view(spans: Vec<Span>, seconds: f64) -> RunView {
        RunView {
            seconds,
            workers: vec![(0, "node0".into())],
            spans,
            spilled: 0,
            spill_checks: Vec::new(),
            lost_nodes: Vec::new(),
            workers_gone: Vec::new(),
        }
    }

    #[test]
    fn a_few_tasks_are_drawn_one_by_one() {
        let page = timeline(&view(vec![span("f", 0.0, 1.0, Outcome::Done)], 2.0));
        assert!(
            page.contains("<title>f (f, done) 0.000–1.000 s</title>"),
            "{page}"
        );
    }

    #[test]
    fn a_row_of_a_million_tasks_is_drawn_in_pixel_columns() {
        // Half the run `a` then half `b`, each task a microsecond or none,
        // one failure among them.
        let n = 1_000_000;
        let spans = (0..n)
            .map(|i| {
                let start = i as f64 * 1e-6;
                let func = if i < n / 2 { "a" } else { "b" };
                let outcome = if i == 10 {
                    Outcome::Failed
                } else {
                    Outcome::Done
                };
                span(func, start, start + (i % 2) as f64 * 1e-6, outcome)
            })
            .collect();
        let page = timeline(&view(spans, 1.0));
        assert!(page.len() < 20_000, "{} bytes", page.len());
        let bars = page.matches("class=\"bar\"").count();
        assert_eq!(bars, 3, "{page}");
        // The failure outlines its column; every task is counted once.
        assert!(page.contains("stroke=\"#d62728\""), "{page}");
        let counted: usize = page
            .split("<title>")
            .skip(1)
            .filter_map(|t| t.split(" tasks, mostly").next()?.parse::<usize>().ok())
            .sum();
        assert_eq!(counted, n);
        assert!(page.contains("tasks, mostly a (done)"), "{page}");
        assert!(page.contains("tasks, mostly b (done)"), "{page}");
    }
}
