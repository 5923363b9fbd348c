//! The executed task graph of a run (`locus report RUN_DIR --graph dot`):
//! each task a node, filled by how it ended and outlined by where it ran
//! against its inputs; an edge from the task that wrote a file to each
//! task that read it. Past `MOST_TASKS` tasks, one node per function (its
//! task count) and one edge per pair of functions passing files.

use super::{Placement, Report};
use crate::records::record::TaskRecord;
use locus_lang::graph::esc;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// The most tasks drawn one by one.
const MOST_TASKS: usize = 3000;

fn fill(t: &TaskRecord) -> &'static str {
    if t.failed() {
        "#f4cccc"
    } else if t.resumed {
        "#eeeeee"
    } else if t.error.is_some() {
        // Stopped by a lost node or an interruption.
        "#fff2cc"
    } else {
        "#d9ead3"
    }
}

fn outline(p: Placement) -> &'static str {
    match p {
        Placement::Local => "color=\"#38761d\" penwidth=2",
        Placement::Remote => "color=\"#cc0000\" penwidth=2",
        Placement::Spilled => "color=\"#e69138\" penwidth=2 style=\"filled,dashed\"",
        Placement::NoInputs => "color=\"#666666\"",
    }
}

impl Report {
    /// The run's task graph in Graphviz's dot language.
    pub fn graph_dot(&self) -> String {
        // Who wrote each file, by path and version.
        let mut writer: HashMap<(&str, &str), usize> = HashMap::new();
        for (k, t) in self.tasks.iter().enumerate() {
            for o in &t.outputs {
                writer.insert((o.path.as_str(), o.version.as_str()), k);
            }
        }
        let mut passed: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        for (k, t) in self.tasks.iter().enumerate() {
            for i in &t.inputs {
                if let Some(&w) = writer.get(&(i.path.as_str(), i.version.as_str())) {
                    *passed.entry((w, k)).or_default() += 1;
                }
            }
        }
        let mut out = String::new();
        let _ = writeln!(
            out,
            "digraph \"{}\" {{",
            esc(&self.dir.display().to_string())
        );
        let _ = writeln!(out, "  rankdir=LR;");
        let _ = writeln!(
            out,
            "  node [fontname=\"Helvetica\" fontsize=10 shape=box style=filled];"
        );
        if self.tasks.len() <= MOST_TASKS {
            for t in &self.tasks {
                let _ = writeln!(
                    out,
                    "  \"t{}\" [label=\"{} #{}\\n{}\" tooltip=\"{}\" fillcolor=\"{}\" {}];",
                    t.id,
                    esc(&t.func),
                    t.id,
                    esc(&t.node),
                    esc(&t.at),
                    fill(t),
                    outline(Placement::of(t))
                );
            }
            for (&(w, r), &files) in &passed {
                let (w, r) = (&self.tasks[w], &self.tasks[r]);
                let label = if files > 1 {
                    format!(" [label=\"{files}\"]")
                } else {
                    String::new()
                };
                let _ = writeln!(out, "  \"t{}\" -> \"t{}\"{label};", w.id, r.id);
            }
        } else {
            let mut per: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
            for t in &self.tasks {
                let e = per.entry(t.func.as_str()).or_default();
                e.0 += 1;
                e.1 += usize::from(t.failed());
            }
            for (f, (n, failed)) in &per {
                let color = if *failed > 0 { "#f4cccc" } else { "#d9ead3" };
                let _ = writeln!(
                    out,
                    "  \"{}\" [label=\"{}\\n{n} tasks, {failed} failed\" fillcolor=\"{color}\"];",
                    esc(f),
                    esc(f)
                );
            }
            let mut between: BTreeMap<(&str, &str), usize> = BTreeMap::new();
            for (&(w, r), &files) in &passed {
                *between
                    .entry((self.tasks[w].func.as_str(), self.tasks[r].func.as_str()))
                    .or_default() += files;
            }
            for ((a, b), files) in between {
                let _ = writeln!(
                    out,
                    "  \"{}\" -> \"{}\" [label=\"{files} files\"];",
                    esc(a),
                    esc(b)
                );
            }
        }
        out.push_str("}\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranks::layout::Layout;
    use crate::ranks::rank::RunSummary;

    fn task(id: u64, func: &str, reads: &[&str], writes: &[&str]) -> TaskRecord {
        let seen = |paths: &[&str]| -> Vec<serde_json::Value> {
            paths
                .iter()
                .map(|p| serde_json::json!({"path": p, "version": "s1"}))
                .collect()
        };
        serde_json::from_value(serde_json::json!({
            "id": id, "func": func, "rank": 0, "node": "a", "target": null,
            "placed": "Auto", "start_us": id, "end_us": id + 1,
            "local_bytes": 1, "remote_bytes": 0, "exit": 0, "attempts": 1, "error": null,
            "inputs": seen(reads), "outputs": seen(writes)
        }))
        .unwrap()
    }

    fn report(tasks: Vec<TaskRecord>) -> Report {
        Report {
            run: RunSummary::plain(
                Layout::from_names(1, &["a".to_string(), "a".to_string()]).unwrap(),
                0,
                1,
            ),
            tasks,
            never_started: Vec::new(),
            dir: std::path::PathBuf::from("run"),
        }
    }

    /// `n` map tasks each writing a file one reduce task reads.
    fn map_reduce(n: u64) -> Report {
        let names: Vec<String> = (0..n).map(|k| format!("/m{k}")).collect();
        let mut tasks: Vec<TaskRecord> = (0..n)
            .map(|k| task(k, "map", &[], &[&names[k as usize]]))
            .collect();
        let all: Vec<&str> = names.iter().map(String::as_str).collect();
        tasks.push(task(n, "reduce", &all, &["/out"]));
        report(tasks)
    }

    #[test]
    fn each_file_passed_is_an_edge_and_a_large_run_is_drawn_by_function() {
        let small = map_reduce(4).graph_dot();
        assert_eq!(small.matches(" -> ").count(), 4, "{small}");
        assert_eq!(small.matches("[label=\"map #").count(), 4, "{small}");
        assert!(small.contains("\"t2\" -> \"t4\";"), "{small}");
        let large = map_reduce(MOST_TASKS as u64 + 10).graph_dot();
        assert_eq!(large.matches(" -> ").count(), 1, "{large}");
        assert!(
            large.contains(&format!(
                "\"map\" -> \"reduce\" [label=\"{} files\"];",
                MOST_TASKS + 10
            )),
            "{large}"
        );
        assert!(
            large.contains(&format!(
                "label=\"map\\n{} tasks, 0 failed\"",
                MOST_TASKS + 10
            )),
            "{large}"
        );
    }
}
