//! A script's dataflow as a Graphviz graph (`locus check --graph dot`):
//! each function with a body a cluster, its calls (apps, composite and
//! leaf functions, builtins) and the script's named variables as nodes, the
//! data they pass as edges, loops as clusters inside. The compiler's own
//! temporaries are not drawn: what flows through one is drawn from where
//! it comes from to where it goes.

use crate::ir::{FnKind, Function, Program, Stmt, VarId};
use crate::types::Type;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Node {
    Var(VarId),
    Task(usize),
}

#[derive(Clone, Copy)]
enum Kind {
    App,
    Composite,
    Leaf,
    Builtin,
}

struct Task {
    label: String,
    kind: Kind,
    cluster: usize,
}

/// A function's drawing: cluster 0 is the function, the others its loops.
struct Drawing<'a> {
    /// Each function's kind, by name.
    kinds: &'a HashMap<&'a str, Kind>,
    f: &'a Function,
    clusters: Vec<(String, usize)>,
    tasks: Vec<Task>,
    /// The cluster each variable was first met in.
    home: BTreeMap<VarId, usize>,
    into: BTreeMap<Node, BTreeSet<Node>>,
    from: BTreeMap<Node, BTreeSet<Node>>,
}

impl<'a> Drawing<'a> {
    fn new(kinds: &'a HashMap<&'a str, Kind>, f: &'a Function) -> Self {
        let mut d = Drawing {
            kinds,
            f,
            clusters: vec![(f.name.clone(), 0)],
            tasks: Vec::new(),
            home: BTreeMap::new(),
            into: BTreeMap::new(),
            from: BTreeMap::new(),
        };
        for &v in f.inputs.iter().chain(&f.outputs) {
            d.meet(v, 0);
        }
        d.walk(&f.body, 0);
        d.contract();
        d
    }

    fn meet(&mut self, v: VarId, cluster: usize) {
        self.home.entry(v).or_insert(cluster);
    }

    fn edge(&mut self, a: Node, b: Node) {
        if a != b {
            self.from.entry(a).or_default().insert(b);
            self.into.entry(b).or_default().insert(a);
        }
    }

    fn flow(&mut self, src: VarId, dst: VarId, cluster: usize) {
        self.meet(src, cluster);
        self.meet(dst, cluster);
        self.edge(Node::Var(src), Node::Var(dst));
    }

    fn task(&mut self, label: String, kind: Kind, args: &[VarId], outs: &[VarId], cluster: usize) {
        let t = self.tasks.len();
        self.tasks.push(Task {
            label,
            kind,
            cluster,
        });
        for &a in args {
            self.meet(a, cluster);
            self.edge(Node::Var(a), Node::Task(t));
        }
        for &o in outs {
            self.meet(o, cluster);
            self.edge(Node::Task(t), Node::Var(o));
        }
    }

    fn cluster(&mut self, label: String, parent: usize) -> usize {
        self.clusters.push((label, parent));
        self.clusters.len() - 1
    }

    fn name(&self, v: VarId) -> &str {
        self.f.vars.get(v as usize).map_or("?", |v| v.name.as_str())
    }

    fn walk(&mut self, body: &[Stmt], c: usize) {
        for s in body {
            match s {
                Stmt::Decl { var, mapping } => {
                    self.meet(*var, c);
                    if let Some(m) = mapping {
                        self.flow(*m, *var, c);
                    }
                }
                Stmt::Const { dst, .. } => self.meet(*dst, c),
                Stmt::Op { dst, args, .. } => {
                    for &a in args {
                        self.flow(a, *dst, c);
                    }
                }
                Stmt::Copy { dst, src } => self.flow(*src, *dst, c),
                Stmt::Builtin { outs, op, args, .. } => {
                    self.task(op.name().to_string(), Kind::Builtin, args, outs, c);
                }
                Stmt::Call {
                    func,
                    outs,
                    args,
                    opts,
                    ..
                } => {
                    // Where it runs (`@location`) is drawn as one more input.
                    let args: Vec<VarId> = args.iter().copied().chain(opts.location).collect();
                    let kind = self.kinds.get(func.as_str()).copied().unwrap_or(Kind::Leaf);
                    self.task(func.clone(), kind, &args, outs, c);
                }
                Stmt::If {
                    then, otherwise, ..
                } => {
                    self.walk(then, c);
                    self.walk(otherwise, c);
                }
                Stmt::Switch { cases, default, .. } => {
                    for (_, case) in cases {
                        self.walk(case, c);
                    }
                    self.walk(default, c);
                }
                Stmt::ForeachArray {
                    array,
                    value,
                    index,
                    body,
                    ..
                } => {
                    let inner = self.cluster(format!("foreach {}", self.name(*value)), c);
                    self.flow(*array, *value, inner);
                    if let Some(i) = index {
                        self.flow(*array, *i, inner);
                    }
                    self.walk(body, inner);
                }
                Stmt::ForeachRange {
                    lo,
                    hi,
                    step,
                    value,
                    index,
                    body,
                    ..
                } => {
                    let inner = self.cluster(format!("foreach {}", self.name(*value)), c);
                    for &bound in [lo, hi].into_iter().chain(step) {
                        self.flow(bound, *value, inner);
                    }
                    if let Some(i) = index {
                        self.flow(*value, *i, inner);
                    }
                    self.walk(body, inner);
                }
                Stmt::Loop {
                    vars,
                    cond,
                    body,
                    next,
                    updates,
                    ..
                } => {
                    let names: Vec<&str> = vars.iter().map(|&(v, _)| self.name(v)).collect();
                    let inner = self.cluster(format!("for {}", names.join(", ")), c);
                    for &(a, b) in vars.iter().chain(updates) {
                        self.flow(b, a, inner);
                    }
                    self.walk(cond, inner);
                    self.walk(body, inner);
                    self.walk(next, inner);
                }
                Stmt::Wait { body, .. } => self.walk(body, c),
                Stmt::Seq(parts) => {
                    for part in parts {
                        self.walk(part, c);
                    }
                }
                Stmt::Update { var, value, .. }
                | Stmt::ArrayAppend {
                    array: var, value, ..
                }
                | Stmt::ArrayInsert {
                    array: var, value, ..
                }
                | Stmt::InsertPath {
                    target: var, value, ..
                }
                | Stmt::StructSet {
                    target: var, value, ..
                } => self.flow(*value, *var, c),
                Stmt::ArrayGet {
                    dst, array: src, ..
                }
                | Stmt::GetPath {
                    dst, target: src, ..
                }
                | Stmt::StructGet { dst, src, .. } => self.flow(*src, *dst, c),
            }
        }
    }

    /// Whether the script names `v` (else it is the compiler's).
    fn named(&self, v: VarId) -> bool {
        self.f.vars.get(v as usize).is_some_and(|v| v.at.is_some())
    }

    /// Each temporary replaced by edges from its sources to its readers.
    fn contract(&mut self) {
        let temps: Vec<VarId> = self
            .home
            .keys()
            .copied()
            .filter(|&v| !self.named(v))
            .collect();
        for t in temps {
            let node = Node::Var(t);
            let ins = self.into.remove(&node).unwrap_or_default();
            let outs = self.from.remove(&node).unwrap_or_default();
            for i in &ins {
                if let Some(s) = self.from.get_mut(i) {
                    s.remove(&node);
                }
            }
            for o in &outs {
                if let Some(s) = self.into.get_mut(o) {
                    s.remove(&node);
                }
            }
            for &i in &ins {
                for &o in &outs {
                    self.edge(i, o);
                }
            }
        }
    }

    fn write(&self, out: &mut String, f: usize) {
        let id = |n: Node| match n {
            Node::Var(v) => format!("f{f}v{v}"),
            Node::Task(t) => format!("f{f}t{t}"),
        };
        let drawn: BTreeSet<Node> = self
            .from
            .iter()
            .filter(|(_, to)| !to.is_empty())
            .flat_map(|(&a, to)| std::iter::once(a).chain(to.iter().copied()))
            .chain((0..self.tasks.len()).map(Node::Task))
            .collect();
        let mut members: Vec<Vec<String>> = vec![Vec::new(); self.clusters.len()];
        for &n in &drawn {
            let (cluster, attrs) = match n {
                Node::Task(t) => {
                    let task = &self.tasks[t];
                    let style = match task.kind {
                        Kind::App => "shape=box style=\"filled\" fillcolor=\"#cfe2f3\"",
                        Kind::Composite => "shape=box style=\"rounded\"",
                        Kind::Leaf => "shape=box style=\"filled\" fillcolor=\"#fce5cd\"",
                        Kind::Builtin => "shape=box style=\"dashed\"",
                    };
                    (
                        task.cluster,
                        format!("label=\"{}\" {style}", esc(&task.label)),
                    )
                }
                Node::Var(v) => {
                    let var = &self.f.vars[v as usize];
                    let shape = match &var.ty {
                        Type::File => "note",
                        Type::Array { .. } => "folder",
                        _ => "ellipse",
                    };
                    let label = format!("{} : {}", var.name, var.ty);
                    (
                        self.home[&v],
                        format!("label=\"{}\" shape={shape}", esc(&label)),
                    )
                }
            };
            members[cluster].push(format!("\"{}\" [{attrs}];", id(n)));
        }
        self.write_cluster(out, f, 0, &members, 1);
        for (&a, to) in &self.from {
            for &b in to {
                let _ = writeln!(out, "  \"{}\" -> \"{}\";", id(a), id(b));
            }
        }
    }

    fn write_cluster(
        &self,
        out: &mut String,
        f: usize,
        c: usize,
        members: &[Vec<String>],
        depth: usize,
    ) {
        let pad = "  ".repeat(depth);
        let _ = writeln!(out, "{pad}subgraph \"cluster_f{f}_{c}\" {{");
        let _ = writeln!(out, "{pad}  label=\"{}\";", esc(&self.clusters[c].0));
        for m in &members[c] {
            let _ = writeln!(out, "{pad}  {m}");
        }
        for inner in (1..self.clusters.len()).filter(|&k| self.clusters[k].1 == c) {
            self.write_cluster(out, f, inner, members, depth + 1);
        }
        let _ = writeln!(out, "{pad}}}");
    }
}

/// `s` as the inside of a dot string (quotes and backslashes escaped).
pub fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The program's dataflow in Graphviz's dot language: the top level first,
/// then each composite function.
pub fn dot(program: &Program) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", esc(&program.file));
    let _ = writeln!(out, "  rankdir=LR;");
    let _ = writeln!(out, "  node [fontname=\"Helvetica\" fontsize=10];");
    let bodies = std::iter::once(&program.main).chain(
        program
            .functions
            .iter()
            .filter(|f| f.kind == FnKind::Composite),
    );
    let kinds: HashMap<&str, Kind> = program
        .functions
        .iter()
        .map(|g| {
            let kind = match g.kind {
                FnKind::App(_) => Kind::App,
                FnKind::Composite => Kind::Composite,
                FnKind::Leaf { .. } => Kind::Leaf,
            };
            (g.name.as_str(), kind)
        })
        .collect();
    for (k, f) in bodies.enumerate() {
        Drawing::new(&kinds, f).write(&mut out, k);
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compile, Source};

    fn drawn(script: &str) -> String {
        let program = compile(&Source::new("t.swift", script)).expect("compiles");
        dot(&program)
    }

    /// The labels of the nodes an edge joins, in order.
    fn edges(dot: &str) -> Vec<(String, String)> {
        let label = |id: &str| -> String {
            let decl = format!("\"{id}\" [label=\"");
            let at = dot.find(&decl).map(|i| i + decl.len()).expect("declared");
            dot[at..].split('"').next().unwrap_or_default().to_string()
        };
        dot.lines()
            .filter_map(|l| l.trim().strip_suffix(';')?.split_once(" -> "))
            .map(|(a, b)| (label(a.trim_matches('"')), label(b.trim_matches('"'))))
            .collect()
    }

    #[test]
    fn a_scatter_and_gather_is_drawn_with_its_loop_as_a_cluster() {
        let d = drawn(
            "app (file o) sim(int i) { \"sim\" i o; }\n\
             app (file o) merge(file i[]) { \"cat\" i @stdout=o; }\n\
             file outs[];\n\
             foreach i in [0:3] { file f <sprintf(\"out%i\", i)> = sim(i); outs[i] = f; }\n\
             file all <\"all.txt\"> = merge(outs);\n",
        );
        assert!(
            d.starts_with("digraph \"t.swift\" {") && d.ends_with("}\n"),
            "{d}"
        );
        assert_eq!(
            d.matches("subgraph").count(),
            2,
            "the top level and the loop: {d}"
        );
        assert!(d.contains("label=\"foreach i\";"), "{d}");
        let mut got = edges(&d);
        got.sort();
        let want = [
            ("f : file", "outs : file[]"),
            ("i : int", "sim"),
            ("i : int", "sprintf"),
            ("merge", "all : file"),
            ("outs : file[]", "merge"),
            ("sim", "f : file"),
            ("sprintf", "f : file"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(got, want, "{d}");
        // Apps are filled boxes; the builtin dashed.
        assert!(
            d.contains("label=\"sim\" shape=box style=\"filled\""),
            "{d}"
        );
        assert!(
            d.contains("label=\"sprintf\" shape=box style=\"dashed\""),
            "{d}"
        );
    }

    #[test]
    fn a_composite_function_is_a_cluster_of_its_own_and_temporaries_are_not_drawn() {
        let d = drawn(
            "(int o) twice(int x) { o = x * 2 + 1; }\n\
             int a = twice(3);\n\
             trace(twice(a) + 1);\n",
        );
        assert!(d.contains("label=\"twice\";"), "{d}");
        let got = edges(&d);
        // In `twice`, x flows to o through two operations drawn as one edge.
        assert!(
            got.contains(&("x : int".into(), "o : int".into())),
            "{got:?}"
        );
        // `twice(a) + 1` goes from the call to trace, its temporaries gone.
        assert!(got.contains(&("twice".into(), "trace".into())), "{got:?}");
        assert!(got.contains(&("twice".into(), "a : int".into())), "{got:?}");
        assert!(got.contains(&("a : int".into(), "twice".into())), "{got:?}");
        assert!(!d.contains("label=\"%"), "{d}");
    }
}
