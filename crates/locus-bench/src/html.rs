//! The benchmarks' HTML pages: throughput per configuration like seed 004
//! Fig. 6, phases like Fig. 7, and per configuration the run report's
//! timelines, I/O breakdowns and locality panel.

use crate::emulated::Outcome;
use crate::filecopy::{read_bound, Results};
use locus_runtime::report::html::{
    breakdown_chart, esc, legend, locality_table, page, placement_timeline, stacked, timeline,
    COLORS, MB,
};
use locus_runtime::report::RunView;
use std::fmt::Write;

/// Per outcome, a titled timeline by function and one by placement outcome
/// (local, spilled, remote as placed).
fn timelines(outcomes: &[Outcome]) -> String {
    let mut s = String::new();
    for o in outcomes {
        let _ = write!(
            s,
            "<h3>{} — {:.2} s, idle {:.1}%</h3>{}<p>where each task ran against its input bytes:</p>{}",
            esc(&o.config.name),
            o.run.seconds,
            100.0 * o.run.idle_share(),
            timeline(&o.run),
            placement_timeline(&o.run)
        );
    }
    s
}

/// The outcomes labelled by their configuration.
fn labelled<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Vec<(&'a str, &'a RunView)> {
    outcomes
        .into_iter()
        .map(|o| (o.config.name.as_str(), &o.run))
        .collect()
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
            o.run.per_task_rate("write_task", |t| t.written_bytes) / MB
        }),
        ("Read throughput per task (Fig. 6b)", "MB/s", |_, o| {
            o.run
                .per_task_rate("read_task", |t| t.local_bytes + t.remote_bytes)
                / MB
        }),
        ("Whole-workflow throughput (Fig. 6c)", "MB/s", |s, o| {
            2.0 * f64::from(s.files) * s.size as f64 / o.run.seconds / MB
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
    let _ = write!(body, "{}", breakdown_chart(&labelled(&last.outcomes)));
    let b = &last.baselines;
    let _ = write!(
        body,
        "<h2>Locality, {}</h2>{}<p>Read phase against its bound (the busiest node's bytes at its share of the host's concurrent dd rate {:.0} MB/s, its remote bytes through its link at {:.1} MB/s): {}</p>",
        esc(&step_label(last)),
        locality_table(&labelled(&last.outcomes)),
        b.dd_read / MB,
        b.link / MB,
        last.outcomes
            .iter()
            .filter(|o| !o.config.central)
            .map(|o| format!(
                "{} {:.0}%",
                esc(&o.config.name),
                100.0 * read_bound(o, b) / o.run.phase_seconds("read_task")
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
        .map(std::string::ToString::to_string)
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
        r.outcomes.iter().map(|o| o.run.seconds).collect(),
    )];
    let _ = write!(
        body,
        "<h2>Average seconds per task by phase (Fig. 7)</h2>{}{}<h2>Total execution time</h2>{}{}<h2>I/O breakdown, average seconds per task (Figs. 8–9)</h2>{}<h2>Locality</h2>{}<h2>Per-worker timelines (Fig. 10)</h2>",
        legend(&phases),
        stacked("s", &rows, &phases),
        legend(&names),
        bars("s", &totals, &names),
        breakdown_chart(&labelled(&r.outcomes)),
        locality_table(&labelled(&r.outcomes))
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
                let rate = |central| {
                    r.find(n, layout, central)
                        .map_or(0.0, super::meta_cluster::Point::rate)
                };
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
