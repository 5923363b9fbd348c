//! Self-contained HTML reports (inline SVG and CSS, no scripts or fonts
//! from elsewhere): per-worker timelines like seed 004 Fig. 10, throughput
//! per configuration like Fig. 6, I/O breakdowns like Figs. 7–9, and a
//! locality panel.

use crate::emulated::Outcome;
use crate::filecopy::{read_bound, Results};
use std::fmt::Write;

const COLORS: [&str; 8] = [
    "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d",
];
const MB: f64 = 1e6;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, body: &str) -> String {
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
</style></head><body>
<h1>{t}</h1>
{body}
</body></html>
"#,
        t = esc(title)
    )
}

fn legend(names: &[String]) -> String {
    let mut s = String::from("<div class=\"legend\">");
    for (i, n) in names.iter().enumerate() {
        let _ = write!(
            s,
            "<span><i class=\"sw\" style=\"background:{}\"></i>{}</span>",
            COLORS[i % COLORS.len()],
            esc(n)
        );
    }
    s.push_str("</div>");
    s
}

/// Horizontal grouped bars: one group per label, one bar per series.
fn bars(unit: &str, groups: &[(String, Vec<f64>)], series: &[String]) -> String {
    let max = groups
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let (bar, gap, left, width) = (14.0, 10.0, 210.0, 560.0);
    let per_group = series.len() as f64 * bar + gap;
    let height = groups.len() as f64 * per_group + 30.0;
    let mut s = format!(
        "<svg class=\"chart\" width=\"{}\" height=\"{height}\" role=\"img\">",
        left + width + 90.0
    );
    for (g, (label, values)) in groups.iter().enumerate() {
        let y0 = g as f64 * per_group;
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>",
            y0 + per_group / 2.0,
            esc(label)
        );
        for (i, v) in values.iter().enumerate() {
            let v = if v.is_finite() { *v } else { 0.0 };
            let w = (v / max * width).max(1.0);
            let y = y0 + i as f64 * bar;
            let _ = write!(
                s,
                "<rect class=\"bar\" x=\"{left}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\"><title>{}: {v:.1} {unit}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{v:.1}</text>",
                bar - 2.0,
                COLORS[i % COLORS.len()],
                esc(&series[i]),
                left + w + 4.0,
                y + bar - 4.0
            );
        }
    }
    let _ = write!(
        s,
        "<text x=\"{left}\" y=\"{}\" font-size=\"11\">{}</text></svg>",
        height - 8.0,
        esc(unit)
    );
    s
}

/// Horizontal stacked bars: one bar per row, one segment per part.
fn stacked(unit: &str, rows: &[(String, Vec<f64>)], parts: &[String]) -> String {
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

/// Per-worker timeline: busy spans coloured by function on an idle (dark
/// red) background, as in seed 004 Fig. 10, with each worker's idle share.
fn timeline(o: &Outcome) -> String {
    let funcs: Vec<String> = {
        let mut f: Vec<String> = o.spans.iter().map(|s| s.func.clone()).collect();
        f.sort();
        f.dedup();
        f
    };
    let (row, left, width) = (16.0, 110.0, 760.0);
    let total = o.seconds.max(1e-6);
    let height = o.workers.len() as f64 * row + 30.0;
    let mut s = format!(
        "<svg class=\"chart\" width=\"{}\" height=\"{height}\" role=\"img\">",
        left + width + 70.0
    );
    for (i, (rank, node)) in o.workers.iter().enumerate() {
        let y = i as f64 * row;
        let busy: f64 = o
            .spans
            .iter()
            .filter(|t| t.rank == *rank)
            .map(|t| t.end - t.start)
            .sum();
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"11\">rank {rank} {}</text><rect x=\"{left}\" y=\"{y}\" width=\"{width}\" height=\"{}\" fill=\"#8b1a1a\"/>",
            y + row - 4.0,
            esc(node),
            row - 2.0
        );
        for t in o.spans.iter().filter(|t| t.rank == *rank) {
            let x = left + t.start / total * width;
            let w = ((t.end - t.start) / total * width).max(0.5);
            let c = funcs.iter().position(|f| *f == t.func).unwrap_or(0);
            let _ = write!(
                s,
                "<rect class=\"bar\" x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\"><title>{} {:.3}–{:.3} s</title></rect>",
                row - 2.0,
                COLORS[c % COLORS.len()],
                esc(&t.func),
                t.start,
                t.end
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
    let mut names = funcs;
    names.push("idle".into());
    let mut lg = legend(&names[..names.len() - 1]);
    lg.insert_str(
        lg.len() - 6,
        "<span><i class=\"sw\" style=\"background:#8b1a1a\"></i>idle</span>",
    );
    format!(
        "{lg}{s}<p>busy {:.1}% of worker time</p>",
        100.0 * (1.0 - o.idle_share())
    )
}

/// Average seconds per task of each function in each part: staging its
/// inputs, its program, registering its outputs.
fn breakdown(o: &Outcome) -> Vec<(String, f64)> {
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

/// A titled timeline per outcome.
fn timelines(outcomes: &[Outcome]) -> String {
    let mut s = String::new();
    for o in outcomes {
        let _ = write!(
            s,
            "<h3>{} — {:.2} s, idle {:.1}%</h3>{}",
            esc(&o.config.name),
            o.seconds,
            100.0 * o.idle_share(),
            timeline(o)
        );
    }
    s
}

/// One stacked bar per outcome of the parts any of them spent time in.
fn breakdown_chart(outcomes: &[Outcome]) -> String {
    let all: Vec<Vec<(String, f64)>> = outcomes.iter().map(breakdown).collect();
    let mut parts: Vec<String> = Vec::new();
    for (name, v) in all.iter().flatten() {
        if *v > 0.0005 && !parts.contains(name) {
            parts.push(name.clone());
        }
    }
    let rows: Vec<(String, Vec<f64>)> = outcomes
        .iter()
        .zip(&all)
        .map(|(o, b)| {
            let value = |p: &String| b.iter().find(|(n, _)| n == p).map_or(0.0, |(_, v)| *v);
            (o.config.name.clone(), parts.iter().map(value).collect())
        })
        .collect();
    format!("{}{}", legend(&parts), stacked("s", &rows, &parts))
}

/// The locality panel: local and fetched input bytes, SOFT spills.
fn locality_table(outcomes: &[&Outcome]) -> String {
    let mut s = String::from(
        "<table><tr><th>configuration</th><th>local MB</th><th>fetched MB</th><th>local share</th><th>SOFT spills</th></tr>",
    );
    for o in outcomes {
        let (l, r) = o.input_bytes(None);
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.0}%</td><td>{}</td></tr>",
            esc(&o.config.name),
            l as f64 / MB,
            r as f64 / MB,
            100.0 * l as f64 / (l + r).max(1) as f64,
            o.spilled
        );
    }
    s.push_str("</table>");
    s
}

pub fn filecopy(r: &Results) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>{}<br>{}; {:?} scaling. Central = all data and metadata on the storage host (the shared file system of the seeds).</p>",
        esc(&r.testbed.machine),
        esc(&r.testbed.links()),
        r.scaling
    );
    let Some(last) = r.steps.last() else {
        return page("Locus filecopy benchmark", &(body + "<p>no results</p>"));
    };
    let names: Vec<String> = last
        .outcomes
        .iter()
        .map(|o| o.config.name.clone())
        .collect();
    let step_label =
        |s: &crate::filecopy::Step| format!("{} nodes × {} workers", s.nodes, s.workers_per_node);
    type Metric = fn(&crate::filecopy::Step, &Outcome) -> f64;
    let metrics: [(&str, &str, Metric); 3] = [
        ("Write throughput per task (Fig. 6a)", "MB/s", |_, o| {
            o.per_task_rate("write_task", |t| t.written_bytes) / MB
        }),
        ("Read throughput per task (Fig. 6b)", "MB/s", |_, o| {
            o.per_task_rate("read_task", |t| t.local_bytes + t.remote_bytes) / MB
        }),
        ("Whole-workflow throughput (Fig. 6c)", "MB/s", |s, o| {
            2.0 * s.files as f64 * s.size as f64 / o.seconds / MB
        }),
    ];
    for (title, unit, f) in metrics {
        let groups: Vec<(String, Vec<f64>)> = r
            .steps
            .iter()
            .map(|s| (step_label(s), s.outcomes.iter().map(|o| f(s, o)).collect()))
            .collect();
        let _ = write!(
            body,
            "<h2>{}</h2>{}{}",
            esc(title),
            legend(&names),
            bars(unit, &groups, &names)
        );
    }
    let _ = write!(
        body,
        "<h2>I/O breakdown, average seconds per task (Figs. 7–9), {}</h2>",
        esc(&step_label(last))
    );
    let _ = write!(body, "{}", breakdown_chart(&last.outcomes));
    let b = &last.baselines;
    let _ = write!(
        body,
        "<h2>Locality, {}</h2>{}<p>Read phase against its bound (the busiest node's bytes at its share of the host's concurrent dd rate {:.0} MB/s, its remote bytes through its link at {:.1} MB/s): {}</p>",
        esc(&step_label(last)),
        locality_table(&last.outcomes.iter().collect::<Vec<_>>()),
        b.dd_read / MB,
        b.link / MB,
        last.outcomes
            .iter()
            .filter(|o| !o.config.central)
            .map(|o| format!(
                "{} {:.0}%",
                esc(&o.config.name),
                100.0 * read_bound(o, b) / o.phase_seconds("read_task")
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = write!(
        body,
        "<h2>Per-worker timelines (Fig. 10), {}</h2>",
        esc(&step_label(last))
    );
    body.push_str(&timelines(&last.outcomes));
    page("Locus filecopy benchmark", &body)
}

pub fn mapreduce(r: &crate::mapreduce::Results) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>{}<br>{} nodes × {} workers, {} files of {} MiB; {}. Central = all data and metadata on the storage host.</p>",
        esc(&r.testbed.machine),
        r.nodes,
        r.workers_per_node,
        r.files,
        r.size >> 20,
        esc(&r.testbed.links())
    );
    let names: Vec<String> = r.outcomes.iter().map(|o| o.config.name.clone()).collect();
    let phases: Vec<String> = crate::mapreduce::PHASES
        .iter()
        .map(|p| p.to_string())
        .collect();
    let rows: Vec<(String, Vec<f64>)> = r
        .outcomes
        .iter()
        .map(|o| {
            let v = phases
                .iter()
                .map(|p| crate::mapreduce::phase_avg(o, p))
                .collect();
            (o.config.name.clone(), v)
        })
        .collect();
    let totals = vec![(
        "whole workflow".to_string(),
        r.outcomes.iter().map(|o| o.seconds).collect(),
    )];
    let _ = write!(
        body,
        "<h2>Average seconds per task by phase (Fig. 7)</h2>{}{}<h2>Total execution time</h2>{}{}<h2>I/O breakdown, average seconds per task (Figs. 8–9)</h2>{}<h2>Locality</h2>{}<h2>Per-worker timelines (Fig. 10)</h2>",
        legend(&phases),
        stacked("s", &rows, &phases),
        legend(&names),
        bars("s", &totals, &names),
        breakdown_chart(&r.outcomes),
        locality_table(&r.outcomes.iter().collect::<Vec<_>>())
    );
    body.push_str(&timelines(&r.outcomes));
    page("Locus mapreduce benchmark", &body)
}

pub fn meta_cluster(r: &crate::meta_cluster::Results) -> String {
    use crate::meta::Layout;
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>{}<br>one client per node, each creating {} empty files with {} in flight; {}. Central = one metadata daemon on the storage host (the shared file system of the seeds).</p>",
        esc(&r.testbed.machine),
        r.files,
        r.depth,
        esc(&r.testbed.links())
    );
    let series = vec!["Locus".to_string(), "central".to_string()];
    let sections = [
        (
            Layout::OwnDirs,
            "each client in its own directory (seed 002 Fig. 6)",
        ),
        (
            Layout::SharedDir,
            "all clients in one directory (seed 002 Fig. 7)",
        ),
    ];
    for (layout, title) in sections {
        let groups: Vec<(String, Vec<f64>)> = r
            .node_counts()
            .into_iter()
            .map(|n| {
                let rate = |central| r.find(n, layout, central).map_or(0.0, |p| p.rate());
                (format!("{n} node(s)"), vec![rate(false), rate(true)])
            })
            .collect();
        let _ = write!(
            body,
            "<h2>Creates per second, {}</h2>{}{}",
            esc(title),
            legend(&series),
            bars("creates/s", &groups, &series)
        );
    }
    page("Locus metadata benchmark on an emulated cluster", &body)
}

/// A page for one run: its timeline, I/O breakdown and locality.
pub fn run(o: &Outcome) -> String {
    let body = format!(
        "<p>{} tasks in {:.3} s on {} workers</p><h2>Per-worker timeline</h2>{}<h2>I/O breakdown, average seconds per task</h2>{}<h2>Locality</h2>{}",
        o.spans.len(),
        o.seconds,
        o.workers.len(),
        timeline(o),
        breakdown_chart(std::slice::from_ref(o)),
        locality_table(&[o])
    );
    page(&format!("Locus run {}", o.config.name), &body)
}
