//! The intermediate form the runtime executes (see docs/architecture.md).
//!
//! Every variable is a future. A statement reads futures and may run only
//! once those it reads are closed: the runtime turns each into a rule that
//! waits on its inputs, then executes it as part of a control task. `Call`s
//! of `app` and leaf functions become leaf tasks with their placement
//! options; composite calls run their body as new control work.

use crate::ast::{BinOp, UnOp};
use crate::builtins::Builtin;
use crate::types::Type;
use serde::{Deserialize, Serialize};
use std::fmt::{self, Write};

pub type VarId = u32;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Program {
    /// The script's name, as given to the compiler.
    pub file: String,
    /// The script's name, then each user module's file (`Pos::file`).
    pub files: Vec<String>,
    pub imports: Vec<String>,
    pub structs: Vec<StructDef>,
    pub functions: Vec<Function>,
    /// Top-level statements and `main`, in that order.
    pub main: Function,
}

/// How `x <op> := v` changes an updateable variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpdateOp {
    /// `x <incr> := v`: `x + v`.
    Incr,
    /// `x <scale> := v`: `x * v`.
    Scale,
    /// `x <min> := v`: the smaller of `x` and `v`.
    Min,
}

impl UpdateOp {
    /// The operation a script names between `<` and `>`.
    pub fn named(name: &str) -> Option<UpdateOp> {
        Some(match name {
            "incr" => UpdateOp::Incr,
            "scale" => UpdateOp::Scale,
            "min" => UpdateOp::Min,
            _ => return None,
        })
    }

    /// `x` changed by this operation with `v`.
    pub fn apply(self, x: f64, v: f64) -> f64 {
        match self {
            UpdateOp::Incr => x + v,
            UpdateOp::Scale => x * v,
            UpdateOp::Min => x.min(v),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            UpdateOp::Incr => "incr",
            UpdateOp::Scale => "scale",
            UpdateOp::Min => "min",
        }
    }
}

/// One step into a container: an array index or a struct field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Member {
    Index(VarId),
    Field(String),
}

/// `[i].f…` as the script wrote it, variables named by `v`.
fn show_path(path: &[Member], v: &dyn Fn(VarId) -> String) -> String {
    path.iter()
        .map(|m| match m {
            Member::Index(i) => format!("[{}]", v(*i)),
            Member::Field(f) => format!(".{f}"),
        })
        .collect()
}

/// A 1-based line and column in the script or one of its modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pos {
    /// Index in `Program::files`.
    pub file: u32,
    pub line: u32,
    pub col: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructDef {
    pub name: String,
    pub fields: Vec<(String, Type)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Var {
    pub id: VarId,
    pub name: String,
    pub ty: Type,
    /// Where the script declares it (`None` for the compiler's own).
    #[serde(default)]
    pub at: Option<Pos>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Function {
    pub name: String,
    pub kind: FnKind,
    pub inputs: Vec<VarId>,
    pub outputs: Vec<VarId>,
    /// Every variable of the function, indexed by id.
    pub vars: Vec<Var>,
    pub body: Vec<Stmt>,
    /// `@pure`/`@deterministic`: results may be cached or repeated.
    pub pure_fn: bool,
    /// `@dispatch=WORKER|CONTROL|LOCAL` for leaf functions.
    pub dispatch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FnKind {
    Composite,
    /// A program run as a leaf task. `body` computes the values the
    /// command line needs before the task is put.
    App(AppTemplate),
    /// Implemented by the runtime (`"package" "version" "function"`).
    Leaf {
        package: String,
        version: String,
        target: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppTemplate {
    pub words: Vec<Word>,
    pub stdin: Option<VarId>,
    pub stdout: Option<VarId>,
    pub stderr: Option<VarId>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Word {
    Lit(String),
    /// A value: numbers and strings as text, a file as its path, an array
    /// expanded to one word per element.
    Var(VarId),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Const {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Hard,
    Soft,
    Rank,
    Node,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    Bin(BinOp),
    Un(UnOp),
}

/// Placement and scheduling options of a call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallOpts {
    /// `@location` (as given) or `@soft_location` (forced SOFT).
    pub location: Option<VarId>,
    pub soft: bool,
    pub prio: Option<VarId>,
    pub par: Option<VarId>,
    /// `@timeout=SECONDS`: the app is killed (and fails) after that long.
    #[serde(default)]
    pub timeout: Option<VarId>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Stmt {
    /// Creates a future; a file may be mapped to the name in `mapping`.
    Decl {
        var: VarId,
        mapping: Option<VarId>,
    },
    Const {
        dst: VarId,
        value: Const,
    },
    Op {
        dst: VarId,
        op: Op,
        args: Vec<VarId>,
        at: Pos,
    },
    /// A call of a builtin (`size`, `trace`, `python`, …); its outputs, if
    /// any, are set when it is done (a `void` one as a signal).
    Builtin {
        outs: Vec<VarId>,
        op: Builtin,
        args: Vec<VarId>,
        at: Pos,
    },
    Call {
        func: String,
        outs: Vec<VarId>,
        args: Vec<VarId>,
        opts: CallOpts,
        /// Where the call is in the script, for errors at run time.
        at: Pos,
    },
    Copy {
        dst: VarId,
        src: VarId,
    },
    If {
        cond: VarId,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    Switch {
        on: VarId,
        cases: Vec<(Vec<i64>, Vec<Stmt>)>,
        default: Vec<Stmt>,
    },
    ForeachArray {
        array: VarId,
        value: VarId,
        index: Option<VarId>,
        body: Vec<Stmt>,
        opts: LoopOpts,
        /// The loop variable, naming the loop (in a run out of memory).
        at: Pos,
    },
    ForeachRange {
        lo: VarId,
        hi: VarId,
        step: Option<VarId>,
        value: VarId,
        index: Option<VarId>,
        body: Vec<Stmt>,
        opts: LoopOpts,
        at: Pos,
    },
    /// A sequential `for` loop: each iteration's variables are new futures.
    Loop {
        vars: Vec<(VarId, VarId)>,
        cond: Vec<Stmt>,
        test: VarId,
        body: Vec<Stmt>,
        next: Vec<Stmt>,
        updates: Vec<(VarId, VarId)>,
        at: Pos,
    },
    Wait {
        vars: Vec<VarId>,
        deep: bool,
        body: Vec<Stmt>,
    },
    /// `a => b`: each part starts when everything the previous one did is done.
    Seq(Vec<Vec<Stmt>>),
    /// Changes updateable `var` (a container whose member 0 is its value)
    /// by `op` with `value`.
    Update {
        var: VarId,
        op: UpdateOp,
        value: VarId,
        at: Pos,
    },
    /// Adds `value` under a key no other member has to `array`, or to the
    /// container at `path` in it (`A[i] += v`).
    ArrayAppend {
        array: VarId,
        #[serde(default)]
        path: Vec<Member>,
        value: VarId,
        /// Where the script writes it, for errors at run time (as for the
        /// other writes below).
        at: Pos,
    },
    ArrayInsert {
        array: VarId,
        index: VarId,
        value: VarId,
        at: Pos,
    },
    /// `A[i][j] = v`, `s.a.f = v`, …: the slot at `path` in container
    /// `target`; inner containers on the way are created by their first
    /// write and close with `target`.
    InsertPath {
        target: VarId,
        path: Vec<Member>,
        value: VarId,
        at: Pos,
    },
    /// Reads fail at run time if the element is never set: `at` says
    /// where the script reads it.
    ArrayGet {
        dst: VarId,
        array: VarId,
        index: VarId,
        at: Pos,
    },
    /// `A[i][j]`, `s.a.x`: the element at `path` in container `target`,
    /// read as soon as it is set (not when all of `target` is).
    GetPath {
        dst: VarId,
        target: VarId,
        path: Vec<Member>,
        at: Pos,
    },
    StructSet {
        target: VarId,
        field: String,
        value: VarId,
        at: Pos,
    },
    StructGet {
        dst: VarId,
        src: VarId,
        field: String,
        at: Pos,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopOpts {
    pub splitdegree: Option<i64>,
    pub leafdegree: Option<i64>,
    pub sync: bool,
}

// ---- printing ----

impl Function {
    fn var(&self, id: VarId) -> String {
        match self.vars.get(id as usize) {
            Some(v) => format!("{}%{}", v.name, id),
            None => format!("%{id}"),
        }
    }

    fn vars(&self, ids: &[VarId]) -> String {
        ids.iter()
            .map(|&i| self.var(i))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn typed(&self, ids: &[VarId]) -> String {
        ids.iter()
            .map(|&i| format!("{}: {}", self.var(i), self.vars[i as usize].ty))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn write_block(&self, out: &mut String, body: &[Stmt], depth: usize) {
        for s in body {
            self.write_stmt(out, s, depth);
        }
    }

    fn open(&self, out: &mut String, depth: usize, head: String, body: &[Stmt]) {
        let pad = "  ".repeat(depth);
        let _ = writeln!(out, "{pad}{head} {{");
        self.write_block(out, body, depth + 1);
        let _ = writeln!(out, "{pad}}}");
    }

    fn write_stmt(&self, out: &mut String, s: &Stmt, depth: usize) {
        let pad = "  ".repeat(depth);
        let v = |i: VarId| self.var(i);
        match s {
            Stmt::Decl { var, mapping } => {
                let ty = &self.vars[*var as usize].ty;
                let map = mapping.map_or(String::new(), |m| format!(" <{}>", v(m)));
                let _ = writeln!(out, "{pad}decl {}: {ty}{map}", v(*var));
            }
            Stmt::Const { dst, value } => {
                let _ = writeln!(out, "{pad}{} = {value:?}", v(*dst));
            }
            Stmt::Op { dst, op, args, .. } => {
                let _ = writeln!(out, "{pad}{} = {op:?}({})", v(*dst), self.vars(args));
            }
            Stmt::Builtin { outs, op, args, .. } => {
                let _ = writeln!(
                    out,
                    "{pad}({}) = {}({})",
                    self.vars(outs),
                    op.name(),
                    self.vars(args)
                );
            }
            Stmt::Call {
                func,
                outs,
                args,
                opts,
                ..
            } => {
                let mut o = String::new();
                if let Some(l) = opts.location {
                    let _ = write!(
                        o,
                        " @location={}{}",
                        v(l),
                        if opts.soft { " SOFT" } else { "" }
                    );
                }
                if let Some(p) = opts.prio {
                    let _ = write!(o, " @prio={}", v(p));
                }
                if let Some(p) = opts.par {
                    let _ = write!(o, " @par={}", v(p));
                }
                let _ = writeln!(
                    out,
                    "{pad}({}) = call {func}({}){o}",
                    self.vars(outs),
                    self.vars(args)
                );
            }
            Stmt::Copy { dst, src } => {
                let _ = writeln!(out, "{pad}{} = {}", v(*dst), v(*src));
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                self.open(out, depth, format!("if {}", v(*cond)), then);
                if !otherwise.is_empty() {
                    self.open(out, depth, "else".into(), otherwise);
                }
            }
            Stmt::Switch { on, cases, default } => {
                let _ = writeln!(out, "{pad}switch {} {{", v(*on));
                for (labels, body) in cases {
                    self.open(out, depth + 1, format!("case {labels:?}"), body);
                }
                self.open(out, depth + 1, "default".into(), default);
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::ForeachArray {
                array,
                value,
                index,
                body,
                opts,
                ..
            } => {
                let idx = index.map_or(String::new(), |i| format!(", {}", v(i)));
                self.open(
                    out,
                    depth,
                    format!("foreach {}{idx} in {} {opts:?}", v(*value), v(*array)),
                    body,
                );
            }
            Stmt::ForeachRange {
                lo,
                hi,
                step,
                value,
                index,
                body,
                opts,
                ..
            } => {
                let idx = index.map_or(String::new(), |i| format!(", {}", v(i)));
                let st = step.map_or(String::new(), |s| format!(":{}", v(s)));
                self.open(
                    out,
                    depth,
                    format!(
                        "foreach {}{idx} in [{}:{}{st}] {opts:?}",
                        v(*value),
                        v(*lo),
                        v(*hi)
                    ),
                    body,
                );
            }
            Stmt::Loop {
                vars,
                cond,
                test,
                body,
                next,
                updates,
                ..
            } => {
                let init: Vec<String> = vars
                    .iter()
                    .map(|(a, b)| format!("{} = {}", v(*a), v(*b)))
                    .collect();
                let _ = writeln!(out, "{pad}loop ({}) {{", init.join(", "));
                self.open(out, depth + 1, format!("while {}", v(*test)), cond);
                self.open(out, depth + 1, "body".into(), body);
                let upd: Vec<String> = updates
                    .iter()
                    .map(|(a, b)| format!("{} = {}", v(*a), v(*b)))
                    .collect();
                self.open(out, depth + 1, format!("next ({})", upd.join(", ")), next);
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::Wait { vars, deep, body } => {
                let d = if *deep { " deep" } else { "" };
                self.open(out, depth, format!("wait{d} ({})", self.vars(vars)), body);
            }
            Stmt::Seq(parts) => {
                let _ = writeln!(out, "{pad}seq {{");
                for p in parts {
                    self.open(out, depth + 1, "then".into(), p);
                }
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::Update { var, op, value, .. } => {
                let _ = writeln!(out, "{pad}{} <{}> := {}", v(*var), op.name(), v(*value));
            }
            Stmt::ArrayAppend {
                array, path, value, ..
            } => {
                let steps = show_path(path, &v);
                let _ = writeln!(out, "{pad}{}{steps} += {}", v(*array), v(*value));
            }
            Stmt::ArrayInsert {
                array,
                index,
                value,
                ..
            } => {
                let _ = writeln!(out, "{pad}{}[{}] = {}", v(*array), v(*index), v(*value));
            }
            Stmt::ArrayGet {
                dst, array, index, ..
            } => {
                let _ = writeln!(out, "{pad}{} = {}[{}]", v(*dst), v(*array), v(*index));
            }
            Stmt::InsertPath {
                target,
                path,
                value,
                ..
            } => {
                let steps = show_path(path, &v);
                let _ = writeln!(out, "{pad}{}{steps} = {}", v(*target), v(*value));
            }
            Stmt::GetPath {
                dst, target, path, ..
            } => {
                let steps = show_path(path, &v);
                let _ = writeln!(out, "{pad}{} = {}{steps}", v(*dst), v(*target));
            }
            Stmt::StructSet {
                target,
                field,
                value,
                ..
            } => {
                let _ = writeln!(out, "{pad}{}.{field} = {}", v(*target), v(*value));
            }
            Stmt::StructGet {
                dst, src, field, ..
            } => {
                let _ = writeln!(out, "{pad}{} = {}.{field}", v(*dst), v(*src));
            }
        }
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let kind = match &self.kind {
            FnKind::Composite => "function",
            FnKind::App(_) => "app",
            FnKind::Leaf { .. } => "leaf",
        };
        let _ = writeln!(
            out,
            "{kind} {}({}) -> ({}) {{",
            self.name,
            self.typed(&self.inputs),
            self.typed(&self.outputs)
        );
        self.write_block(&mut out, &self.body, 1);
        match &self.kind {
            FnKind::App(t) => {
                let words: Vec<String> = t
                    .words
                    .iter()
                    .map(|w| match w {
                        Word::Lit(s) => format!("{s:?}"),
                        Word::Var(i) => self.var(*i),
                    })
                    .collect();
                let _ = writeln!(out, "  command: {}", words.join(" "));
                for (name, slot) in [
                    ("stdin", t.stdin),
                    ("stdout", t.stdout),
                    ("stderr", t.stderr),
                ] {
                    if let Some(i) = slot {
                        let _ = writeln!(out, "  {name}: {}", self.var(i));
                    }
                }
            }
            FnKind::Leaf {
                package,
                version,
                target,
            } => {
                let _ = writeln!(out, "  implementation: {package} {version} {target:?}");
            }
            FnKind::Composite => {}
        }
        out.push('}');
        f.write_str(&out)
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in &self.imports {
            writeln!(f, "import {i}")?;
        }
        for s in &self.structs {
            let fields: Vec<String> = s.fields.iter().map(|(n, t)| format!("{n}: {t}")).collect();
            writeln!(f, "struct {} {{ {} }}", s.name, fields.join("; "))?;
        }
        for func in &self.functions {
            writeln!(f, "{func}")?;
        }
        write!(f, "{}", self.main)
    }
}
