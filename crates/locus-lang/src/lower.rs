//! Name resolution, type checking and lowering, in one pass over each
//! function: every expression is checked as it is turned into futures and
//! statements of the IR. Errors are collected (never fatal), so one run
//! reports every independent mistake; the IR is kept only when there are none.

use crate::ast::{self, BinOp, Expr, ExprKind, Ident, StmtKind, UnOp};
use crate::builtins::{self, Builtin, ParamKind, Pure, Signature};
use crate::diag::Diagnostic;
use crate::ir::{self, Const, Member, Stmt, VarId};
use crate::source::{Source, Span};
use crate::types::Type;
use std::collections::{BTreeMap, HashMap, HashSet};

/// What a call's name and arguments find.
enum Resolved {
    Found(String, FnSig),
    Unknown,
    /// An overloaded name none of whose definitions takes these types.
    NoOverload(Vec<Type>, Vec<String>),
}

/// A callable's signature, user-defined or built in.
#[derive(Clone)]
struct FnSig {
    inputs: Vec<ParamKind>,
    required: usize,
    variadic: bool,
    outputs: Vec<Type>,
    /// Runs as a leaf task (may take `@location`).
    task: bool,
    /// A builtin: which, and the module it needs.
    builtin: Option<Builtin>,
    module: Option<&'static str>,
    /// A user function's parameter names (for keyword arguments) and
    /// default values.
    params: Vec<String>,
    defaults: Vec<Option<Expr>>,
}

impl FnSig {
    fn from_builtin(s: Signature) -> FnSig {
        FnSig {
            inputs: s.inputs,
            required: s.required,
            variadic: s.variadic,
            outputs: s.outputs,
            task: false,
            builtin: Some(s.builtin),
            module: Some(s.module),
            params: Vec::new(),
            defaults: Vec::new(),
        }
    }
}

#[derive(Clone)]
struct Globals<'s> {
    /// The script, for the positions of calls in the IR.
    src: &'s Source,
    imports: HashSet<String>,
    /// User functions by their name in the IR: the script's name, or for
    /// a name defined several times (overloaded by parameter types),
    /// `name(types)`.
    functions: HashMap<String, FnSig>,
    /// The IR names of an overloaded name's definitions.
    overloads: HashMap<String, Vec<String>>,
    /// The IR name of each definition, by where its name is.
    ir_names: HashMap<u32, String>,
    structs: BTreeMap<String, Vec<(String, Type)>>,
    typedefs: HashMap<String, Type>,
    consts: HashMap<String, (Type, Const)>,
}

pub fn lower(prog: &ast::Program, src: &Source) -> (ir::Program, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut g = Globals {
        src,
        imports: HashSet::from(["builtins".to_string()]),
        functions: HashMap::new(),
        overloads: HashMap::new(),
        ir_names: HashMap::new(),
        structs: BTreeMap::new(),
        typedefs: HashMap::new(),
        consts: HashMap::new(),
    };
    let mut imports = Vec::new();
    // Types first, so that signatures can use them in any order.
    for item in &prog.items {
        match item {
            ast::Item::Import { path, span } => {
                let name = path
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(".");
                if !builtins::MODULES.contains(&name.as_str()) {
                    diags.push(Diagnostic::new(*span, format!("unknown module '{name}'")));
                } else if g.imports.insert(name.clone()) {
                    imports.push(name);
                }
            }
            ast::Item::Struct { name, .. } | ast::Item::Typedef { name, .. } => {
                if Type::primitive(&name.name).is_some()
                    || g.structs.contains_key(&name.name)
                    || g.typedefs.contains_key(&name.name)
                {
                    diags.push(Diagnostic::new(
                        name.span,
                        format!("type '{}' is already defined", name.name),
                    ));
                } else if let ast::Item::Struct { .. } = item {
                    g.structs.insert(name.name.clone(), Vec::new());
                } else {
                    g.typedefs.insert(name.name.clone(), Type::Error);
                }
            }
            _ => {}
        }
    }
    for item in &prog.items {
        match item {
            ast::Item::Typedef { name, ty } => {
                let t = resolve_type(&g, ty, &mut diags);
                g.typedefs.insert(name.name.clone(), t);
            }
            ast::Item::Struct { name, fields } => {
                let mut seen = HashSet::new();
                let mut out = Vec::new();
                for f in fields {
                    if !seen.insert(f.name.name.clone()) {
                        diags.push(Diagnostic::new(
                            f.name.span,
                            format!("field '{}' is defined twice", f.name.name),
                        ));
                    }
                    out.push((f.name.name.clone(), resolve_type(&g, &f.ty, &mut diags)));
                }
                g.structs.insert(name.name.clone(), out);
            }
            _ => {}
        }
    }
    let mut definitions: HashMap<&str, usize> = HashMap::new();
    for item in &prog.items {
        if let ast::Item::Func(f) = item {
            *definitions.entry(f.name.name.as_str()).or_default() += 1;
        }
    }
    for item in &prog.items {
        match item {
            ast::Item::Func(f) => {
                let gf = g.with_type_vars(f);
                let ir_name = if definitions[f.name.name.as_str()] > 1 {
                    let mut scratch = Vec::new();
                    let types: Vec<String> = f
                        .inputs
                        .iter()
                        .map(|p| resolve_type(&gf, &p.ty, &mut scratch).to_string())
                        .collect();
                    format!("{}({})", f.name.name, types.join(", "))
                } else {
                    f.name.name.clone()
                };
                if g.functions.contains_key(&ir_name) {
                    diags.push(Diagnostic::new(
                        f.name.span,
                        format!("function '{}' is defined twice", f.name.name),
                    ));
                    continue;
                }

                let sig = FnSig {
                    inputs: f
                        .inputs
                        .iter()
                        .map(|p| ParamKind::Is(resolve_type(&gf, &p.ty, &mut diags)))
                        .collect(),
                    // Parameters from the first with a default on may be
                    // left out.
                    required: f
                        .inputs
                        .iter()
                        .position(|p| p.default.is_some())
                        .unwrap_or(f.inputs.len()),
                    variadic: false,
                    outputs: f
                        .outputs
                        .iter()
                        .map(|p| resolve_type(&gf, &p.ty, &mut diags))
                        .collect(),
                    task: !matches!(f.body, ast::FuncBody::Composite(_)),
                    builtin: None,
                    module: None,
                    params: f.inputs.iter().map(|p| p.name.name.clone()).collect(),
                    defaults: f.inputs.iter().map(|p| p.default.clone()).collect(),
                };
                if ir_name != f.name.name {
                    g.overloads
                        .entry(f.name.name.clone())
                        .or_default()
                        .push(ir_name.clone());
                }
                g.ir_names.insert(f.name.span.start, ir_name.clone());
                g.functions.insert(ir_name, sig);
            }
            ast::Item::Stmt(ast::Stmt {
                kind:
                    StmtKind::Decl {
                        ty,
                        vars,
                        global: true,
                    },
                ..
            }) => {
                let t = resolve_type(
                    &g,
                    &ast::TypeRef {
                        base: ty.clone(),
                        dims: Vec::new(),
                    },
                    &mut diags,
                );
                for v in vars {
                    let value = match (&t, v.init.as_ref().and_then(|e| const_value(&g, e))) {
                        (Type::Int, Some(Const::Int(i))) => Some(Const::Int(i)),
                        (Type::Float, Some(Const::Float(x))) => Some(Const::Float(x)),
                        (Type::Float, Some(Const::Int(i))) => Some(Const::Float(i as f64)),
                        (Type::String, Some(Const::Str(s))) => Some(Const::Str(s)),
                        (Type::Bool, Some(Const::Bool(b))) => Some(Const::Bool(b)),
                        _ => None,
                    };
                    match value {
                        Some(c) if v.dims.is_empty() && v.mapping.is_none() => {
                            g.consts.insert(v.name.name.clone(), (t.clone(), c));
                        }
                        _ => diags.push(Diagnostic::new(
                            v.name.span,
                            format!(
                                "global const '{}' needs a constant {t} value (literals, \
                                 other global constants and + - * / on them)",
                                v.name.name
                            ),
                        )),
                    }
                }
            }
            _ => {}
        }
    }

    let mut functions = Vec::new();
    for item in &prog.items {
        if let ast::Item::Func(f) = item {
            if let Some(func) = lower_function(&g.with_type_vars(f), f, &mut diags) {
                functions.push(func);
            }
        }
    }
    // The main function: top-level statements, then `main { }`.
    let mut cx = FnCx::new(&g, &mut diags);
    let mut body = Vec::new();
    let mut mains = 0;
    for item in &prog.items {
        match item {
            ast::Item::Stmt(s) if !matches!(s.kind, StmtKind::Decl { global: true, .. }) => {
                cx.stmt(s, &mut body)
            }
            ast::Item::Main { body: b, span } => {
                mains += 1;
                if mains > 1 {
                    cx.error(*span, "a program has only one 'main'");
                }
                cx.block(b, &mut body);
            }
            _ => {}
        }
    }
    let main = cx.finish(
        "main".into(),
        ir::FnKind::Composite,
        Vec::new(),
        Vec::new(),
        body,
    );
    let structs = g
        .structs
        .iter()
        .map(|(n, f)| ir::StructDef {
            name: n.clone(),
            fields: f.clone(),
        })
        .collect();
    (
        ir::Program {
            file: src.name.clone(),
            files: src.file_names(),
            imports,
            structs,
            functions,
            main,
        },
        diags,
    )
}

/// The value of a constant expression: literals, global constants already
/// defined, unary minus and not, and + - * / on them (as at run time; `/`
/// of two ints is not constant, as it is not an int).
fn const_value(g: &Globals<'_>, e: &Expr) -> Option<Const> {
    use Const::{Bool, Float, Int, Str};
    Some(match &e.kind {
        ExprKind::Int(i) => Int(*i),
        ExprKind::Float(x) => Float(*x),
        ExprKind::Str(s) => Str(s.clone()),
        ExprKind::Bool(b) => Bool(*b),
        ExprKind::Var(name) => g.consts.get(name)?.1.clone(),
        ExprKind::Unary(op, a) => match (op, const_value(g, a)?) {
            (UnOp::Neg, Int(i)) => Int(i.checked_neg()?),
            (UnOp::Neg, Float(x)) => Float(-x),
            (UnOp::Not, Bool(b)) => Bool(!b),
            _ => return None,
        },
        ExprKind::Binary(op, a, b) => {
            let (a, b) = match (const_value(g, a)?, const_value(g, b)?) {
                // An int literal beside a float is a float.
                (Int(i), Float(y)) => (Float(i as f64), Float(y)),
                (Float(x), Int(j)) => (Float(x), Float(j as f64)),
                pair => pair,
            };
            match (op, a, b) {
                (BinOp::Add, Int(x), Int(y)) => Int(x.checked_add(y)?),
                (BinOp::Sub, Int(x), Int(y)) => Int(x.checked_sub(y)?),
                (BinOp::Mul, Int(x), Int(y)) => Int(x.checked_mul(y)?),
                (BinOp::Add, Float(x), Float(y)) => Float(x + y),
                (BinOp::Sub, Float(x), Float(y)) => Float(x - y),
                (BinOp::Mul, Float(x), Float(y)) => Float(x * y),
                (BinOp::Div, Float(x), Float(y)) => Float(x / y),
                (BinOp::Add, Str(x), Str(y)) => Str(x + &y),
                _ => return None,
            }
        }
        _ => return None,
    })
}

impl<'s> Globals<'s> {
    /// These globals as `f` sees them: its type variables stand for any
    /// type (checked where the values are used, at run time).
    fn with_type_vars(&self, f: &ast::FuncDef) -> std::borrow::Cow<'_, Globals<'s>> {
        if f.type_params.is_empty() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut g = self.clone();
        for t in &f.type_params {
            g.typedefs.insert(t.name.clone(), Type::Error);
        }
        std::borrow::Cow::Owned(g)
    }
}

fn resolve_type(g: &Globals<'_>, t: &ast::TypeRef, diags: &mut Vec<Diagnostic>) -> Type {
    let base = resolve_name(g, &t.base, diags);
    wrap_dims(g, base, &t.dims, diags)
}

fn resolve_name(g: &Globals<'_>, name: &Ident, diags: &mut Vec<Diagnostic>) -> Type {
    if let Some(t) = Type::primitive(&name.name) {
        return t;
    }
    if g.structs.contains_key(&name.name) {
        return Type::Struct(name.name.clone());
    }
    if let Some(t) = g.typedefs.get(&name.name) {
        return t.clone();
    }
    diags.push(Diagnostic::new(
        name.span,
        format!("unknown type '{}'", name.name),
    ));
    Type::Error
}

/// `T name[k1][k2]`: indexing by `k1` first, so the outer array is keyed by `k1`.
fn wrap_dims(
    g: &Globals<'_>,
    base: Type,
    dims: &[Option<Ident>],
    diags: &mut Vec<Diagnostic>,
) -> Type {
    let mut t = base;
    for d in dims.iter().rev() {
        let key = match d {
            None => Type::Int,
            Some(k) => {
                let kt = resolve_name(g, k, diags);
                if !matches!(
                    kt,
                    Type::Int | Type::String | Type::Float | Type::Bool | Type::Error
                ) {
                    diags.push(Diagnostic::new(
                        k.span,
                        format!("arrays cannot be keyed by {kt}"),
                    ));
                }
                kt
            }
        };
        t = Type::Array {
            key: Box::new(key),
            elem: Box::new(t),
        };
    }
    t
}

fn lower_function(
    g: &Globals<'_>,
    f: &ast::FuncDef,
    diags: &mut Vec<Diagnostic>,
) -> Option<ir::Function> {
    let mut cx = FnCx::new(g, diags);
    let mut pure_fn = false;
    let mut dispatch = None;
    for a in &f.annotations {
        match a.name.name.as_str() {
            "pure" | "deterministic" => pure_fn = true,
            "dispatch" => match a.value.as_ref().map(|v| &v.kind) {
                Some(ExprKind::Var(v)) if matches!(v.as_str(), "WORKER" | "CONTROL" | "LOCAL") => {
                    dispatch = Some(v.clone())
                }
                _ => cx.error(a.span, "@dispatch takes WORKER, CONTROL or LOCAL"),
            },
            // Swift/T's optimiser hints and library declarations: nothing
            // to do here (every function runs where and when it is ready).
            "par" | "builtin_op" | "stc_intrinsic" | "implements" | "sync" | "suppress"
            | "sideeffectfree" | "commutative" | "copy" | "minmax" | "assertion" | "checkpoint"
            | "deprecated" => {}
            other => cx.error(
                a.name.span,
                format!("unknown function annotation '@{other}'"),
            ),
        }
    }
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (params, out, is_output) in [
        (&f.inputs, &mut inputs, false),
        (&f.outputs, &mut outputs, true),
    ] {
        for p in params {
            let ty = resolve_type(g, &p.ty, &mut Vec::new());
            let id = cx.declare(
                &p.name,
                ty,
                if is_output { Role::Output } else { Role::Input },
            );
            out.push(id);
        }
    }
    let mut body = Vec::new();
    let kind = match &f.body {
        ast::FuncBody::Composite(b) => {
            cx.block(b, &mut body);
            for (p, &id) in f.outputs.iter().zip(&outputs) {
                if !cx.ever_assigned.contains(&id) && cx.vars[id as usize].ty != Type::Void {
                    cx.error(
                        p.name.span,
                        format!(
                            "output '{}' of '{}' is never assigned",
                            p.name.name, f.name.name
                        ),
                    );
                }
            }
            ir::FnKind::Composite
        }
        ast::FuncBody::App(app) => {
            for (p, &id) in f.outputs.iter().zip(&outputs) {
                let t = &cx.vars[id as usize].ty;
                if !matches!(elem_type(t), Type::File | Type::Void | Type::Error) {
                    cx.error(p.name.span, format!("app outputs must be files, not {t}"));
                }
            }
            let mut words = Vec::new();
            for w in &app.words {
                words.push(cx.app_word(w, &mut body));
            }
            let stream = |e: &Option<Expr>, cx: &mut FnCx, body: &mut Vec<Stmt>| {
                e.as_ref().map(|e| {
                    let (id, t) = cx.expr(e, body, None);
                    if !matches!(t, Type::File | Type::String | Type::Error) {
                        cx.error(
                            e.span,
                            format!("a redirection takes a file or a file name, not {t}"),
                        );
                    }
                    id
                })
            };
            let stdin = stream(&app.stdin, &mut cx, &mut body);
            let stdout = stream(&app.stdout, &mut cx, &mut body);
            let stderr = stream(&app.stderr, &mut cx, &mut body);
            ir::FnKind::App(ir::AppTemplate {
                words,
                stdin,
                stdout,
                stderr,
            })
        }
        ast::FuncBody::Leaf {
            package,
            version,
            target,
        } => ir::FnKind::Leaf {
            package: package.clone(),
            version: version.clone(),
            target: target.clone(),
        },
    };
    let name = (g.ir_names.get(&f.name.span.start).cloned()).unwrap_or_else(|| f.name.name.clone());
    let mut func = cx.finish(name, kind, inputs, outputs, body);
    func.pure_fn = pure_fn;
    func.dispatch = dispatch;
    Some(func)
}

fn elem_type(t: &Type) -> &Type {
    match t {
        Type::Array { elem, .. } => elem_type(elem),
        t => t,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Local,
    Input,
    Output,
}

struct Local {
    id: VarId,
    role: Role,
    loop_depth: u32,
}

struct FnCx<'a> {
    g: &'a Globals<'a>,
    diags: &'a mut Vec<Diagnostic>,
    vars: Vec<ir::Var>,
    scopes: Vec<HashMap<String, Local>>,
    loop_depth: u32,
    /// Where each variable was assigned on the current path.
    assigned: HashMap<VarId, Span>,
    ever_assigned: HashSet<VarId>,
}

impl<'a> FnCx<'a> {
    fn new(g: &'a Globals<'a>, diags: &'a mut Vec<Diagnostic>) -> FnCx<'a> {
        FnCx {
            g,
            diags,
            vars: Vec::new(),
            scopes: vec![HashMap::new()],
            loop_depth: 0,
            assigned: HashMap::new(),
            ever_assigned: HashSet::new(),
        }
    }

    fn finish(
        self,
        name: String,
        kind: ir::FnKind,
        inputs: Vec<VarId>,
        outputs: Vec<VarId>,
        body: Vec<Stmt>,
    ) -> ir::Function {
        ir::Function {
            name,
            kind,
            inputs,
            outputs,
            vars: self.vars,
            body,
            pure_fn: false,
            dispatch: None,
        }
    }

    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::new(span, msg));
    }

    fn new_var(&mut self, name: &str, ty: Type) -> VarId {
        let id = self.vars.len() as VarId;
        self.vars.push(ir::Var {
            id,
            name: name.to_string(),
            ty,
        });
        id
    }

    fn temp(&mut self, ty: Type, out: &mut Vec<Stmt>) -> VarId {
        let id = self.new_var("t", ty);
        out.push(Stmt::Decl {
            var: id,
            mapping: None,
        });
        id
    }

    fn lookup(&self, name: &str) -> Option<&Local> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// Declares `name` in the innermost scope; shadowing is an error.
    fn declare(&mut self, name: &Ident, ty: Type, role: Role) -> VarId {
        self.declare_checked(name, ty, role, true)
    }

    /// Declares `name` in the innermost scope, shadowing any outer one.
    fn declare_over(&mut self, name: &Ident, ty: Type, role: Role) -> VarId {
        self.declare_checked(name, ty, role, false)
    }

    fn declare_checked(&mut self, name: &Ident, ty: Type, role: Role, no_shadow: bool) -> VarId {
        let inner = self
            .scopes
            .last()
            .is_some_and(|s| s.contains_key(&name.name));
        if (no_shadow || inner) && self.lookup(&name.name).is_some() {
            let what = if inner {
                "is already declared"
            } else {
                "shadows a variable of an enclosing scope"
            };
            self.error(name.span, format!("'{}' {what}", name.name));
        } else if self.g.consts.contains_key(&name.name) {
            self.error(
                name.span,
                format!("'{}' shadows a global constant", name.name),
            );
        }
        let id = self.new_var(&name.name, ty);
        let loop_depth = self.loop_depth;
        self.scopes.last_mut().expect("a scope").insert(
            name.name.clone(),
            Local {
                id,
                role,
                loop_depth,
            },
        );
        id
    }

    fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.scopes.push(HashMap::new());
        let r = f(self);
        self.scopes.pop();
        r
    }

    fn block(&mut self, b: &[ast::Stmt], out: &mut Vec<Stmt>) {
        self.scoped(|cx| {
            for s in b {
                cx.stmt(s, out);
            }
        });
    }

    /// Records a whole-value assignment of `id` and reports a second one.
    fn note_assign(&mut self, name: &Ident, id: VarId) {
        let (role, loop_depth) = match self.lookup(&name.name) {
            Some(l) => (l.role, l.loop_depth),
            None => return,
        };
        if role == Role::Input {
            self.error(
                name.span,
                format!("'{}' is an input and cannot be assigned", name.name),
            );
            return;
        }
        if loop_depth < self.loop_depth {
            self.error(
                name.span,
                format!(
                    "'{}' is declared outside this loop; assigning it here would assign it on every iteration",
                    name.name
                ),
            );
            return;
        }
        if self.assigned.contains_key(&id) {
            self.error(
                name.span,
                format!("'{}' is assigned more than once", name.name),
            );
            return;
        }
        self.assigned.insert(id, name.span);
        self.ever_assigned.insert(id);
    }

    /// Runs alternative branches; a variable counts as assigned after them if
    /// any branch assigned it (each branch starts from the same state).
    fn branches(&mut self, n: usize, mut f: impl FnMut(&mut Self, usize)) {
        let before = self.assigned.clone();
        let mut after = before.clone();
        for i in 0..n {
            self.assigned = before.clone();
            f(self, i);
            for (k, v) in &self.assigned {
                after.entry(*k).or_insert(*v);
            }
        }
        self.assigned = after;
    }

    // ---- statements ----

    fn stmt(&mut self, s: &ast::Stmt, out: &mut Vec<Stmt>) {
        match &s.kind {
            StmtKind::Decl { ty, vars, global } => {
                if *global {
                    self.error(s.span, "'global const' is only allowed at the top level");
                }
                let base = resolve_name(self.g, ty, self.diags);
                for v in vars {
                    // A `void` variable is a signal: set when its writer is done.
                    let t = wrap_dims(self.g, base.clone(), &v.dims, self.diags);
                    let mapping = v.mapping.as_ref().map(|m| {
                        if elem_type(&t) != &Type::File {
                            self.error(m.span, format!("only files can be mapped, not {t}"));
                        }
                        let (id, mt) = self.expr(m, out, Some(&Type::String));
                        if !Type::String.accepts(&mt) {
                            self.error(m.span, format!("a mapping must be a string, not {mt}"));
                        }
                        id
                    });
                    let id = self.declare(&v.name, t.clone(), Role::Local);
                    out.push(Stmt::Decl { var: id, mapping });
                    if let Some(init) = &v.init {
                        self.assign_into(id, &t, init, out);
                        self.note_assign(&v.name, id);
                    }
                }
            }
            StmtKind::Assign { targets, value } => self.assign(targets, value, out),
            StmtKind::Append { target, value } => self.append(target, value, out),
            StmtKind::Expr(e) => {
                if let ExprKind::Call { .. } = e.kind {
                    self.call(e, None, out);
                } else {
                    self.error(e.span, "only calls can be statements");
                }
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.condition(cond, out);
                let mut then_ir = Vec::new();
                let mut else_ir = Vec::new();
                let empty = Vec::new();
                let arms = [then, otherwise.as_ref().unwrap_or(&empty)];
                self.branches(2, |cx, i| {
                    let out = if i == 0 { &mut then_ir } else { &mut else_ir };
                    cx.block(arms[i], out);
                });
                out.push(Stmt::If {
                    cond: c,
                    then: then_ir,
                    otherwise: else_ir,
                });
            }
            StmtKind::Switch {
                scrutinee,
                cases,
                default,
            } => {
                let (on, t) = self.expr(scrutinee, out, Some(&Type::Int));
                if !Type::Int.accepts(&t) {
                    self.error(scrutinee.span, format!("switch takes an int, not {t}"));
                }
                let mut seen = HashSet::new();
                let mut labels_ir = Vec::new();
                for (labels, _) in cases {
                    let mut ls = Vec::new();
                    for l in labels {
                        let v = match &l.kind {
                            ExprKind::Int(v) => Some(*v),
                            ExprKind::Unary(UnOp::Neg, inner) => match inner.kind {
                                ExprKind::Int(v) => Some(-v),
                                _ => None,
                            },
                            _ => None,
                        };
                        match v {
                            Some(v) => {
                                if !seen.insert(v) {
                                    self.error(l.span, format!("case {v} appears twice"));
                                }
                                ls.push(v);
                            }
                            None => self.error(l.span, "a case label must be an integer literal"),
                        }
                    }
                    labels_ir.push(ls);
                }
                let mut bodies: Vec<Vec<Stmt>> = vec![Vec::new(); cases.len() + 1];
                let empty = Vec::new();
                self.branches(cases.len() + 1, |cx, i| {
                    let b = if i < cases.len() {
                        &cases[i].1
                    } else {
                        default.as_ref().unwrap_or(&empty)
                    };
                    cx.block(b, &mut bodies[i]);
                });
                let default_ir = bodies.pop().unwrap_or_default();
                out.push(Stmt::Switch {
                    on,
                    cases: labels_ir.into_iter().zip(bodies).collect(),
                    default: default_ir,
                });
            }
            StmtKind::Foreach {
                annotations,
                value,
                index,
                source,
                body,
            } => self.foreach(annotations, value, index.as_ref(), source, body, out),
            StmtKind::Iterate { var, body, until } => self.iterate(var, body, until, out),
            StmtKind::For {
                init,
                cond,
                update,
                body,
            } => self.for_loop(init, cond, update, body, out),
            StmtKind::Wait { deep, on, body } => {
                let mut vars = Vec::new();
                for e in on {
                    vars.push(self.expr(e, out, None).0);
                }
                let mut b = Vec::new();
                self.block(body, &mut b);
                out.push(Stmt::Wait {
                    vars,
                    deep: *deep,
                    body: b,
                });
            }
            StmtKind::Chain(parts) => {
                let mut seq = Vec::new();
                for p in parts {
                    let mut b = Vec::new();
                    self.stmt(p, &mut b);
                    // A variable declared in a part is visible after the
                    // chain: it belongs to the enclosing block.
                    let (decls, rest): (Vec<Stmt>, Vec<Stmt>) =
                        b.into_iter().partition(|s| matches!(s, Stmt::Decl { .. }));
                    out.extend(decls);
                    seq.push(rest);
                }
                out.push(Stmt::Seq(seq));
            }
            StmtKind::Block(b) => self.block(b, out),
        }
    }

    /// `b += v;` on a bag or array variable.
    fn append(&mut self, target: &ast::LValue, value: &Expr, out: &mut Vec<Stmt>) {
        let ast::LValue::Var(name) = target else {
            self.error(
                value.span,
                "only a bag or array variable can be appended to",
            );
            return;
        };
        let Some(local) = self.lookup(&name.name).map(|l| (l.id, l.role)) else {
            self.error(name.span, format!("undeclared variable '{}'", name.name));
            return;
        };
        let (array, role) = local;
        if role == Role::Input {
            self.error(
                name.span,
                format!("'{}' is an input and cannot be assigned", name.name),
            );
        }
        let elem = match &self.vars[array as usize].ty {
            Type::Array { elem, .. } => (**elem).clone(),
            other => {
                self.error(
                    name.span,
                    format!("'{}' is {other}, not a bag or array", name.name),
                );
                return;
            }
        };
        let v = self.typed_expr(value, out, &elem);
        self.ever_assigned.insert(array);
        out.push(Stmt::ArrayAppend { array, value: v });
    }

    fn assign(&mut self, targets: &[ast::LValue], value: &Expr, out: &mut Vec<Stmt>) {
        if let ExprKind::Tuple(values) = &value.kind {
            // `a, b = 1, 2;`: each target from its value.
            if values.len() != targets.len() {
                self.error(
                    value.span,
                    format!(
                        "{} variable(s) assigned {} value(s)",
                        targets.len(),
                        values.len()
                    ),
                );
                return;
            }
            for (t, v) in targets.iter().zip(values) {
                self.assign(std::slice::from_ref(t), v, out);
            }
            return;
        }
        if targets.len() > 1 {
            // `(a, b) = f(…)`
            if !matches!(value.kind, ExprKind::Call { .. }) {
                self.error(
                    value.span,
                    "several variables can only be assigned from a call",
                );
                return;
            }
            let mut outs = Vec::new();
            for t in targets {
                match t {
                    ast::LValue::Var(name) => match self.lookup(&name.name).map(|l| l.id) {
                        Some(id) => {
                            self.note_assign(name, id);
                            outs.push((id, self.vars[id as usize].ty.clone()));
                        }
                        None => {
                            self.error(name.span, format!("undeclared variable '{}'", name.name));
                            outs.push((self.new_var("error", Type::Error), Type::Error));
                        }
                    },
                    _ => {
                        self.error(value.span, "only plain variables can take several results");
                        return;
                    }
                }
            }
            self.call(value, Some(&outs), out);
            return;
        }
        let target = &targets[0];
        match target {
            ast::LValue::Var(name) => {
                let id = match self.lookup(&name.name).map(|l| l.id) {
                    Some(id) => id,
                    None => {
                        // Inference: `x = e;` declares x with e's type.
                        let (src, t) = self.expr(value, out, None);
                        if t == Type::Void {
                            self.error(value.span, "this call returns nothing");
                        }
                        let id = self.declare(name, t, Role::Local);
                        out.push(Stmt::Decl {
                            var: id,
                            mapping: None,
                        });
                        out.push(Stmt::Copy { dst: id, src });
                        self.note_assign(name, id);
                        return;
                    }
                };
                let t = self.vars[id as usize].ty.clone();
                self.assign_into(id, &t, value, out);
                self.note_assign(name, id);
            }
            ast::LValue::Index(..) | ast::LValue::Field(..) => {
                // Inference: `A[i][j] = e;` declares an undeclared A as an
                // array of arrays of e's type.
                let inferred = match self.lookup(&target.root().name) {
                    None => self.declare_indexed(target, value, out),
                    Some(_) => None,
                };
                let (container, ty) = self.lvalue_parent(target, out);
                let v = match inferred {
                    Some(v) => v,
                    None => self.typed_expr(value, out, &ty),
                };
                if let Some(root) = self.lookup(&target.root().name) {
                    if root.role == Role::Input {
                        let span = target.root().span;
                        let n = target.root().name.clone();
                        self.error(span, format!("'{n}' is an input and cannot be assigned"));
                    }
                }
                if let Some(id) = self.lookup(&target.root().name).map(|l| l.id) {
                    self.ever_assigned.insert(id);
                }
                match container {
                    Some((array, mut path)) if path.len() == 1 => match path.remove(0) {
                        ir::Member::Index(index) => out.push(Stmt::ArrayInsert {
                            array,
                            index,
                            value: v,
                        }),
                        ir::Member::Field(field) => out.push(Stmt::StructSet {
                            target: array,
                            field,
                            value: v,
                        }),
                    },
                    Some((target, path)) => out.push(Stmt::InsertPath {
                        target,
                        path,
                        value: v,
                    }),
                    None => {}
                }
            }
        }
    }

    /// Declares the undeclared root of `A[k1]…[kn] = value` as an array of
    /// `value`'s type with n dimensions, each keyed by its index's type
    /// (ints unless the index is plainly a string, float or boolean);
    /// returns the lowered value. `None` for targets with fields, left to
    /// be reported as undeclared.
    fn declare_indexed(
        &mut self,
        target: &ast::LValue,
        value: &Expr,
        out: &mut Vec<Stmt>,
    ) -> Option<VarId> {
        let mut keys = Vec::new();
        let mut lv = target;
        while let ast::LValue::Index(base, key, _) = lv {
            keys.push(self.key_type(key));
            lv = base;
        }
        let ast::LValue::Var(name) = lv else {
            return None;
        };
        let (v, mut t) = self.expr(value, out, None);
        if t == Type::Void {
            self.error(value.span, "this call returns nothing");
        }
        for key in keys {
            t = Type::Array {
                key: Box::new(key),
                elem: Box::new(t),
            };
        }
        let id = self.declare(name, t, Role::Local);
        out.push(Stmt::Decl {
            var: id,
            mapping: None,
        });
        Some(v)
    }

    /// The type of an index expression, as far as it shows without
    /// lowering it: a literal's or a variable's; otherwise int.
    fn key_type(&self, key: &Expr) -> Type {
        match &key.kind {
            ExprKind::Str(_) => Type::String,
            ExprKind::Float(_) => Type::Float,
            ExprKind::Bool(_) => Type::Bool,
            ExprKind::Var(name) => self
                .lookup(name)
                .map(|l| self.vars[l.id as usize].ty.clone())
                .filter(|t| matches!(t, Type::String | Type::Float | Type::Bool))
                .unwrap_or(Type::Int),
            _ => Type::Int,
        }
    }

    /// For `A[i]…` / `s.f…` targets: the root container variable and the
    /// path from it to the slot, and the type the slot holds.
    fn lvalue_parent(&mut self, lv: &ast::LValue, out: &mut Vec<Stmt>) -> (Container, Type) {
        let (base, key, span) = match lv {
            ast::LValue::Var(_) => unreachable!("handled by the caller"),
            ast::LValue::Index(base, key, span) => (base, Some(key), *span),
            ast::LValue::Field(base, _) => (base, None, Span::default()),
        };
        let (root, mut path, bty) = match &**base {
            ast::LValue::Var(name) => match self.lookup(&name.name).map(|l| l.id) {
                Some(id) => (id, Vec::new(), self.vars[id as usize].ty.clone()),
                None => {
                    self.error(name.span, format!("undeclared variable '{}'", name.name));
                    return (None, Type::Error);
                }
            },
            inner => match self.lvalue_parent(inner, out) {
                (Some((root, path)), t) => (root, path, t),
                (None, _) => return (None, Type::Error),
            },
        };
        match (lv, bty) {
            (ast::LValue::Index(..), Type::Array { key: kt, elem }) => {
                let key = key.expect("index");
                let (k, t) = self.expr(key, out, Some(&kt));
                if !kt.accepts(&t) {
                    self.error(key.span, format!("this array is indexed by {kt}, not {t}"));
                }
                path.push(ir::Member::Index(k));
                (Some((root, path)), *elem)
            }
            (ast::LValue::Field(_, field), Type::Struct(s)) => {
                match self
                    .g
                    .structs
                    .get(&s)
                    .and_then(|f| f.iter().find(|(n, _)| *n == field.name))
                {
                    Some((_, t)) => {
                        path.push(ir::Member::Field(field.name.clone()));
                        (Some((root, path)), t.clone())
                    }
                    None => {
                        self.error(
                            field.span,
                            format!("type {s} has no field '{}'", field.name),
                        );
                        (None, Type::Error)
                    }
                }
            }
            (_, Type::Error) => (None, Type::Error),
            (ast::LValue::Index(..), t) => {
                self.error(span, format!("cannot index a value of type {t}"));
                (None, Type::Error)
            }
            (ast::LValue::Field(_, field), t) => {
                self.error(field.span, format!("a value of type {t} has no fields"));
                (None, Type::Error)
            }
            (ast::LValue::Var(_), _) => unreachable!("handled by the caller"),
        }
    }

    /// Evaluates `e` into existing variable `dst` of type `ty`; a call
    /// writes its result there directly (so a mapped file is the app's output).
    fn assign_into(&mut self, dst: VarId, ty: &Type, e: &Expr, out: &mut Vec<Stmt>) {
        if let ExprKind::Call { .. } = e.kind {
            self.call(e, Some(&[(dst, ty.clone())]), out);
            return;
        }
        let src = self.typed_expr(e, out, ty);
        out.push(Stmt::Copy { dst, src });
    }

    fn loop_opts(&mut self, annotations: &[ast::Annotation]) -> ir::LoopOpts {
        let mut opts = ir::LoopOpts::default();
        for a in annotations {
            let int_value = |cx: &mut Self| match a.value.as_ref().map(|v| &v.kind) {
                Some(ExprKind::Int(v)) if *v > 0 => Some(*v),
                _ => {
                    cx.error(a.span, format!("@{} takes a positive integer", a.name.name));
                    None
                }
            };
            match a.name.name.as_str() {
                // Unrolling and splitting shape how STC compiles a loop;
                // here iterations are futures the servers share out.
                "async" | "nosplit" => {}
                "unroll" => {
                    int_value(self);
                }
                "sync" => opts.sync = true,
                "splitdegree" => opts.splitdegree = int_value(self),
                "leafdegree" => opts.leafdegree = int_value(self),
                other => self.error(a.name.span, format!("unknown loop annotation '@{other}'")),
            }
        }
        opts
    }

    fn foreach(
        &mut self,
        annotations: &[ast::Annotation],
        value: &Ident,
        index: Option<&Ident>,
        source: &Expr,
        body: &[ast::Stmt],
        out: &mut Vec<Stmt>,
    ) {
        let opts = self.loop_opts(annotations);
        let (array, t) = match &source.kind {
            ExprKind::Range { lo, hi, step } => {
                let (bounds, float) = self.range_parts(lo, hi, step.as_deref(), out);
                if !float {
                    return self.foreach_range(value, index, &bounds, body, opts, out);
                }
                // A float range is made as an array (an int range is
                // iterated without one).
                self.range_array(bounds, true, source.span, out)
            }
            _ => self.expr(source, out, None),
        };
        let (kt, et) = match t {
            Type::Array { key, elem } => (*key, *elem),
            Type::Error => (Type::Error, Type::Error),
            t => {
                self.error(
                    source.span,
                    format!("foreach iterates over an array or a range, not {t}"),
                );
                (Type::Error, Type::Error)
            }
        };
        let stmt = self.scoped(|cx| {
            cx.loop_depth += 1;
            let v = cx.declare(value, et, Role::Input);
            let i = index.map(|i| cx.declare(i, kt, Role::Input));
            let mut b = Vec::new();
            cx.block(body, &mut b);
            cx.loop_depth -= 1;
            Stmt::ForeachArray {
                array,
                value: v,
                index: i,
                body: b,
                opts,
            }
        });
        out.push(stmt);
    }

    /// `foreach v[, i] in [lo:hi:step]` over ints: iterated without an array.
    fn foreach_range(
        &mut self,
        value: &Ident,
        index: Option<&Ident>,
        bounds: &[VarId],
        body: &[ast::Stmt],
        opts: ir::LoopOpts,
        out: &mut Vec<Stmt>,
    ) {
        let stmt = self.scoped(|cx| {
            cx.loop_depth += 1;
            let v = cx.declare(value, Type::Int, Role::Input);
            let i = index.map(|i| cx.declare(i, Type::Int, Role::Input));
            let mut b = Vec::new();
            cx.block(body, &mut b);
            cx.loop_depth -= 1;
            Stmt::ForeachRange {
                lo: bounds[0],
                hi: bounds[1],
                step: bounds.get(2).copied(),
                value: v,
                index: i,
                body: b,
                opts,
            }
        });
        out.push(stmt);
    }

    /// A range's bounds and step, and whether any of them is a float.
    fn range_parts(
        &mut self,
        lo: &Expr,
        hi: &Expr,
        step: Option<&Expr>,
        out: &mut Vec<Stmt>,
    ) -> (Vec<VarId>, bool) {
        let mut float = false;
        let mut parts = Vec::new();
        for e in [lo, hi].into_iter().chain(step) {
            let (v, t) = self.expr(e, out, None);
            match t {
                Type::Int | Type::Error => {}
                Type::Float => float = true,
                t => self.error(e.span, format!("a range takes numbers, not {t}")),
            }
            parts.push(v);
        }
        (parts, float)
    }

    /// The array `[lo:hi:step]` holds: ints, or floats if `float`.
    fn range_array(
        &mut self,
        bounds: Vec<VarId>,
        float: bool,
        span: Span,
        out: &mut Vec<Stmt>,
    ) -> (VarId, Type) {
        let (op, elem) = if float {
            (Pure::RangeFloat, Type::Float)
        } else {
            (Pure::Range, Type::Int)
        };
        let t = Type::array_of(elem);
        let dst = self.temp(t.clone(), out);
        self.builtin(vec![dst], op.into(), bounds, span, out);
        (dst, t)
    }

    /// Where `span` starts, for errors at run time.
    fn pos(&self, span: Span) -> ir::Pos {
        let (file, line, col) = self.g.src.index_line_col(span.start);
        ir::Pos {
            file: file as u32,
            line: line as u32,
            col: col as u32,
        }
    }

    /// `dst = op(args)`, an operator at `span`.
    fn op(&mut self, dst: VarId, op: ir::Op, args: Vec<VarId>, span: Span, out: &mut Vec<Stmt>) {
        let at = self.pos(span);
        out.push(Stmt::Op { dst, op, args, at });
    }

    /// `outs = op(args)`, a builtin called at `span`.
    fn builtin(
        &mut self,
        outs: Vec<VarId>,
        op: Builtin,
        args: Vec<VarId>,
        span: Span,
        out: &mut Vec<Stmt>,
    ) {
        let at = self.pos(span);
        out.push(Stmt::Builtin { outs, op, args, at });
    }

    /// Lowers `e` where a `want` is expected, reporting anything else.
    fn typed_expr(&mut self, e: &Expr, out: &mut Vec<Stmt>, want: &Type) -> VarId {
        let (id, t) = self.expr(e, out, Some(want));
        if !want.accepts(&t) {
            self.error(e.span, format!("expected {want}, found {t}"));
        }
        id
    }

    /// `iterate v { body } until (c);` as a loop whose test block is the
    /// body followed by `!c`: the body runs before each test.
    fn iterate(&mut self, var: &Ident, body: &[ast::Stmt], until: &Expr, out: &mut Vec<Stmt>) {
        let (zero, _) = self.constant(Type::Int, Const::Int(0), out);
        let stmt = self.scoped(|cx| {
            cx.loop_depth += 1;
            let v = cx.declare_over(var, Type::Int, Role::Input);
            let mut cond_ir = Vec::new();
            cx.block(body, &mut cond_ir);
            let stop = cx.condition(until, &mut cond_ir);
            let test = cx.temp(Type::Bool, &mut cond_ir);
            cx.op(
                test,
                ir::Op::Un(UnOp::Not),
                vec![stop],
                until.span,
                &mut cond_ir,
            );
            let mut next = Vec::new();
            let (one, _) = cx.constant(Type::Int, Const::Int(1), &mut next);
            let succ = cx.temp(Type::Int, &mut next);
            cx.op(
                succ,
                ir::Op::Bin(BinOp::Add),
                vec![v, one],
                var.span,
                &mut next,
            );
            cx.loop_depth -= 1;
            Stmt::Loop {
                vars: vec![(v, zero)],
                cond: cond_ir,
                test,
                body: Vec::new(),
                next,
                updates: vec![(v, succ)],
            }
        });
        out.push(stmt);
    }

    fn for_loop(
        &mut self,
        init: &[ast::ForVar],
        cond: &Expr,
        update: &[(Ident, Expr)],
        body: &[ast::Stmt],
        out: &mut Vec<Stmt>,
    ) {
        let mut inits = Vec::new();
        for v in init {
            let (id, t) = self.expr(&v.init, out, None);
            let t = match &v.ty {
                Some(ty) => {
                    let declared = resolve_name(self.g, ty, self.diags);
                    if !declared.accepts(&t) {
                        self.error(v.init.span, format!("expected {declared}, found {t}"));
                    }
                    declared
                }
                None => t,
            };
            inits.push((v, id, t));
        }
        let stmt = self.scoped(|cx| {
            cx.loop_depth += 1;
            let mut vars = Vec::new();
            for (v, init_id, t) in &inits {
                // Loop variables take a new value each iteration: the loop,
                // not the body, assigns them.
                // `for (i = 0; …)` with `i` declared outside: the loop's
                // own `i` (a variable is assigned once; the loop's takes a
                // value per iteration), as Swift/T accepts it.
                let id = match v.ty {
                    None => cx.declare_over(&v.name, t.clone(), Role::Input),
                    Some(_) => cx.declare(&v.name, t.clone(), Role::Input),
                };
                vars.push((id, *init_id));
            }
            let mut cond_ir = Vec::new();
            let test = cx.condition(cond, &mut cond_ir);
            let mut body_ir = Vec::new();
            cx.block(body, &mut body_ir);
            let mut next = Vec::new();
            let mut updates = Vec::new();
            for (name, e) in update {
                let Some(var) = vars
                    .iter()
                    .find(|(id, _)| cx.vars[*id as usize].name == name.name)
                    .map(|v| v.0)
                else {
                    cx.error(
                        name.span,
                        format!("'{}' is not a variable of this loop", name.name),
                    );
                    continue;
                };
                let ty = cx.vars[var as usize].ty.clone();
                let val = cx.typed_expr(e, &mut next, &ty);
                updates.push((var, val));
            }
            cx.loop_depth -= 1;
            Stmt::Loop {
                vars,
                cond: cond_ir,
                test,
                body: body_ir,
                next,
                updates,
            }
        });
        out.push(stmt);
    }

    // ---- expressions ----

    /// A condition: a boolean, or an int (true when not zero, as Swift/T
    /// allows).
    fn condition(&mut self, cond: &Expr, out: &mut Vec<Stmt>) -> VarId {
        let (c, t) = self.expr(cond, out, Some(&Type::Bool));
        if t == Type::Int {
            let (zero, _) = self.constant(Type::Int, Const::Int(0), out);
            let dst = self.temp(Type::Bool, out);
            self.op(dst, ir::Op::Bin(BinOp::Ne), vec![c, zero], cond.span, out);
            return dst;
        }
        if !Type::Bool.accepts(&t) {
            self.error(cond.span, format!("a condition must be boolean, not {t}"));
        }
        c
    }

    fn constant(&mut self, dst_ty: Type, value: Const, out: &mut Vec<Stmt>) -> (VarId, Type) {
        let id = self.temp(dst_ty.clone(), out);
        out.push(Stmt::Const { dst: id, value });
        (id, dst_ty)
    }

    /// Lowers `e` to a future; `expected` guides literals (an int literal
    /// where a float is expected is a float).
    fn expr(&mut self, e: &Expr, out: &mut Vec<Stmt>, expected: Option<&Type>) -> (VarId, Type) {
        match &e.kind {
            ExprKind::Int(v) => {
                if expected == Some(&Type::Float) {
                    self.constant(Type::Float, Const::Float(*v as f64), out)
                } else {
                    self.constant(Type::Int, Const::Int(*v), out)
                }
            }
            ExprKind::Float(v) => self.constant(Type::Float, Const::Float(*v), out),
            ExprKind::Str(s) => self.constant(Type::String, Const::Str(s.clone()), out),
            ExprKind::Bool(b) => self.constant(Type::Bool, Const::Bool(*b), out),
            ExprKind::Var(name) => self.var_ref(name, e.span, out),
            ExprKind::Call { .. } => self.call_value(e, out),
            ExprKind::Index(..) | ExprKind::Field(..) if self.path_type(e).is_some() => {
                self.path_read(e, out)
            }
            ExprKind::Index(base, key) => {
                let (b, bt) = self.expr(base, out, None);
                match bt {
                    Type::Array { key: kt, elem } => {
                        let (k, t) = self.expr(key, out, Some(&kt));
                        if !kt.accepts(&t) {
                            self.error(key.span, format!("this array is indexed by {kt}, not {t}"));
                        }
                        let dst = self.temp((*elem).clone(), out);
                        let at = self.pos(e.span);
                        out.push(Stmt::ArrayGet {
                            dst,
                            array: b,
                            index: k,
                            at,
                        });
                        (dst, *elem)
                    }
                    Type::Error => (b, Type::Error),
                    t => {
                        self.error(base.span, format!("cannot index a value of type {t}"));
                        (b, Type::Error)
                    }
                }
            }
            ExprKind::Field(base, field) => {
                let (b, bt) = self.expr(base, out, None);
                match &bt {
                    Type::Struct(s) => {
                        match self
                            .g
                            .structs
                            .get(s)
                            .and_then(|f| f.iter().find(|(n, _)| *n == field.name))
                        {
                            Some((_, t)) => {
                                let t = t.clone();
                                let dst = self.temp(t.clone(), out);
                                let at = self.pos(e.span);
                                out.push(Stmt::StructGet {
                                    dst,
                                    src: b,
                                    field: field.name.clone(),
                                    at,
                                });
                                (dst, t)
                            }
                            None => {
                                self.error(
                                    field.span,
                                    format!("type {s} has no field '{}'", field.name),
                                );
                                (b, Type::Error)
                            }
                        }
                    }
                    Type::Error => (b, Type::Error),
                    t => {
                        self.error(field.span, format!("a value of type {t} has no fields"));
                        (b, Type::Error)
                    }
                }
            }
            ExprKind::Unary(op, inner) => {
                let (v, t) = self.expr(inner, out, expected);
                let ok = match op {
                    UnOp::Not => Type::Bool.accepts(&t),
                    UnOp::Neg => t.is_numeric(),
                };
                let t = if !ok {
                    let sym = if *op == UnOp::Not { "!" } else { "-" };
                    self.error(e.span, format!("'{sym}' does not apply to {t}"));
                    Type::Error
                } else if *op == UnOp::Not {
                    Type::Bool
                } else {
                    t
                };
                let dst = self.temp(t.clone(), out);
                self.op(dst, ir::Op::Un(*op), vec![v], e.span, out);
                (dst, t)
            }
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r, e.span, out, expected),
            ExprKind::Tuple(_) => {
                self.error(
                    e.span,
                    "a parenthesised list is only allowed after the format operator '%'",
                );
                (self.new_var("error", Type::Error), Type::Error)
            }
            ExprKind::Array(items) => {
                let want = match expected {
                    Some(Type::Array { elem, .. }) => Some((**elem).clone()),
                    _ => None,
                };
                let mut vals = Vec::new();
                let mut elem_t = want.clone();
                for it in items {
                    let (v, t) = self.expr(it, out, elem_t.as_ref());
                    match &elem_t {
                        Some(et) if !et.accepts(&t) => self.error(
                            it.span,
                            format!("array elements must all be {et}, found {t}"),
                        ),
                        None => elem_t = Some(t),
                        _ => {}
                    }
                    vals.push(v);
                }
                let Some(et) = elem_t else {
                    self.error(e.span, "cannot tell the type of an empty array here");
                    return (self.new_var("error", Type::Error), Type::Error);
                };
                let at = Type::array_of(et);
                let arr = self.temp(at.clone(), out);
                for (i, v) in vals.into_iter().enumerate() {
                    let (idx, _) = self.constant(Type::Int, Const::Int(i as i64), out);
                    out.push(Stmt::ArrayInsert {
                        array: arr,
                        index: idx,
                        value: v,
                    });
                }
                (arr, at)
            }
            ExprKind::Dict(pairs) => {
                let (mut kt, mut vt) = match expected {
                    Some(Type::Array { key, elem }) => {
                        (Some((**key).clone()), Some((**elem).clone()))
                    }
                    _ => (None, None),
                };
                let mut entries = Vec::new();
                for (k, v) in pairs {
                    let (kid, t) = self.expr(k, out, kt.as_ref());
                    match &kt {
                        Some(want) if !want.accepts(&t) => {
                            self.error(k.span, format!("keys must all be {want}, found {t}"))
                        }
                        None => kt = Some(t),
                        _ => {}
                    }
                    let (vid, t) = self.expr(v, out, vt.as_ref());
                    match &vt {
                        Some(want) if !want.accepts(&t) => {
                            self.error(v.span, format!("values must all be {want}, found {t}"))
                        }
                        None => vt = Some(t),
                        _ => {}
                    }
                    entries.push((kid, vid));
                }
                let (Some(kt), Some(vt)) = (kt, vt) else {
                    self.error(e.span, "cannot tell the type of an empty dictionary here");
                    return (self.new_var("error", Type::Error), Type::Error);
                };
                let at = Type::Array {
                    key: Box::new(kt),
                    elem: Box::new(vt),
                };
                let arr = self.temp(at.clone(), out);
                for (k, v) in entries {
                    out.push(Stmt::ArrayInsert {
                        array: arr,
                        index: k,
                        value: v,
                    });
                }
                (arr, at)
            }
            ExprKind::Range { lo, hi, step } => {
                let (bounds, float) = self.range_parts(lo, hi, step.as_deref(), out);
                self.range_array(bounds, float, e.span, out)
            }
            ExprKind::Keyword(key, value) => {
                self.error(
                    key.span,
                    format!(
                        "'{}=' names a parameter: it is only allowed among a call's arguments",
                        key.name
                    ),
                );
                self.expr(value, out, expected)
            }
            ExprKind::FileName(inner) => {
                let (v, t) = self.expr(inner, out, None);
                if !matches!(elem_type(&t), Type::File | Type::Error) {
                    self.error(inner.span, format!("'@' gives a file's name; this is {t}"));
                }
                let dst = self.temp(Type::String, out);
                self.builtin(vec![dst], Pure::Filename.into(), vec![v], e.span, out);
                (dst, Type::String)
            }
        }
    }

    /// The type of `e` if it reads two or more steps into a variable's
    /// nested containers (`A[i][j]`, `s.a.x`, `A[i].f`) and every step is a
    /// valid one (else the step-by-step lowering reports what is wrong).
    fn path_type(&self, e: &Expr) -> Option<Type> {
        let (mut steps, mut base) = (0, e);
        while let ExprKind::Index(inner, _) | ExprKind::Field(inner, _) = &base.kind {
            steps += 1;
            base = inner;
        }
        if steps < 2 || !matches!(base.kind, ExprKind::Var(_)) {
            return None;
        }
        self.path_type_of(e).filter(|t| *t != Type::Error)
    }

    /// Lowers a read `path_type` accepts to one `GetPath`: it waits for
    /// that element only, not for every writer of the variable.
    fn path_read(&mut self, e: &Expr, out: &mut Vec<Stmt>) -> (VarId, Type) {
        let t = self.path_type(e).expect("checked by the caller");
        let mut steps = Vec::new();
        let mut base = e;
        let root = loop {
            match &base.kind {
                ExprKind::Index(b, k) => {
                    steps.push((b.as_ref(), Some(k.as_ref()), None));
                    base = b;
                }
                ExprKind::Field(b, f) => {
                    steps.push((b.as_ref(), None, Some(f.name.clone())));
                    base = b;
                }
                ExprKind::Var(name) => break self.var_ref(name, base.span, out).0,
                _ => unreachable!("path_type accepted it"),
            }
        };
        let mut path = Vec::new();
        for (container, key, field) in steps.into_iter().rev() {
            match (key, field) {
                (Some(k), _) => {
                    let key_type = match self.path_type_of(container) {
                        Some(Type::Array { key, .. }) => *key,
                        _ => Type::Error,
                    };
                    let (id, kt) = self.expr(k, out, Some(&key_type));
                    if !key_type.accepts(&kt) {
                        self.error(
                            k.span,
                            format!("this array is indexed by {key_type}, not {kt}"),
                        );
                    }
                    path.push(Member::Index(id));
                }
                (None, Some(f)) => path.push(Member::Field(f)),
                (None, None) => unreachable!("a step is an index or a field"),
            }
        }
        let dst = self.temp(t.clone(), out);
        let at = self.pos(e.span);
        out.push(Stmt::GetPath {
            dst,
            target: root,
            path,
            at,
        });
        (dst, t)
    }

    /// The type of a variable or of a path into one, without lowering it.
    fn path_type_of(&self, e: &Expr) -> Option<Type> {
        match &e.kind {
            ExprKind::Var(name) => Some(self.vars[self.lookup(name)?.id as usize].ty.clone()),
            ExprKind::Index(b, _) => match self.path_type_of(b)? {
                Type::Array { elem, .. } => Some(*elem),
                _ => None,
            },
            ExprKind::Field(b, f) => match self.path_type_of(b)? {
                Type::Struct(s) => self
                    .g
                    .structs
                    .get(&s)?
                    .iter()
                    .find(|(n, _)| *n == f.name)
                    .map(|(_, t)| t.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    fn var_ref(&mut self, name: &str, span: Span, out: &mut Vec<Stmt>) -> (VarId, Type) {
        if let Some(l) = self.lookup(name) {
            let id = l.id;
            return (id, self.vars[id as usize].ty.clone());
        }
        if let Some((t, c)) = self.g.consts.get(name).cloned() {
            return self.constant(t, c, out);
        }
        if let Some((module, t)) = builtins::constant(name) {
            if !self.g.imports.contains(module) {
                self.error(span, format!("'{name}' needs 'import {module};'"));
            }
            let c = match name {
                "HARD" => Const::Hard,
                "SOFT" => Const::Soft,
                "RANK" => Const::Rank,
                "NODE" => Const::Node,
                "NaN" => Const::Float(f64::NAN),
                "inf" => Const::Float(f64::INFINITY),
                "PI" => Const::Float(std::f64::consts::PI),
                "E" => Const::Float(std::f64::consts::E),
                "CLOCK_FMT_ISO8601" => Const::Str("%Y-%m-%dT%H:%M:%S".into()),
                "CLOCK_FMT_RFC3339" => Const::Str("%Y-%m-%d %H:%M:%S".into()),
                other => unreachable!("constant '{other}' is in the table but has no value"),
            };
            return self.constant(t, c, out);
        }
        self.error(span, format!("undeclared variable '{name}'"));
        (self.new_var(name, Type::Error), Type::Error)
    }

    fn binary(
        &mut self,
        op: BinOp,
        l: &Expr,
        r: &Expr,
        span: Span,
        out: &mut Vec<Stmt>,
        expected: Option<&Type>,
    ) -> (VarId, Type) {
        if op == BinOp::Format {
            let (f, ft) = self.expr(l, out, Some(&Type::String));
            if !Type::String.accepts(&ft) {
                self.error(
                    l.span,
                    format!("the format operator needs a string on the left, not {ft}"),
                );
            }
            let mut args = vec![f];
            let items: Vec<&Expr> = match &r.kind {
                ExprKind::Tuple(items) => items.iter().collect(),
                _ => vec![r],
            };
            for it in items {
                args.push(self.expr(it, out, None).0);
            }
            let dst = self.temp(Type::String, out);
            self.builtin(vec![dst], Pure::Sprintf.into(), args, span, out);
            return (dst, Type::String);
        }
        // Let a literal on one side take the other side's type.
        let hint = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Pow => expected.cloned(),
            _ => None,
        };
        let hint = if op == BinOp::Div {
            Some(Type::Float)
        } else {
            hint
        };
        let (a, mut at) = self.expr(l, out, hint.as_ref());
        let (b, bt) = self.expr(r, out, Some(&at).filter(|t| t.is_numeric()));
        if at == Type::Int && bt == Type::Float && matches!(l.kind, ExprKind::Int(_)) {
            at = Type::Float;
        }
        let mismatch = |cx: &mut Self| {
            cx.error(
                span,
                format!("'{}' cannot combine {at} and {bt}", op_symbol(op)),
            );
            Type::Error
        };
        let both = |t: &Type| at.accepts(t) && bt.accepts(t);
        let result = match op {
            BinOp::Or | BinOp::And => {
                if both(&Type::Bool) {
                    Type::Bool
                } else {
                    mismatch(self)
                }
            }
            BinOp::Eq | BinOp::Ne => {
                if at.accepts(&bt) && !at.is_array() {
                    Type::Bool
                } else {
                    mismatch(self)
                }
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                if both(&Type::Int) || both(&Type::Float) || both(&Type::String) {
                    Type::Bool
                } else {
                    mismatch(self)
                }
            }
            BinOp::Add => {
                if both(&Type::Int) {
                    Type::Int
                } else if both(&Type::Float) {
                    Type::Float
                } else if both(&Type::String) {
                    Type::String
                } else {
                    mismatch(self)
                }
            }
            BinOp::Sub | BinOp::Mul | BinOp::Pow => {
                if both(&Type::Int) {
                    Type::Int
                } else if both(&Type::Float) {
                    Type::Float
                } else {
                    mismatch(self)
                }
            }
            BinOp::Div => {
                if both(&Type::Float) {
                    Type::Float
                } else if both(&Type::String) {
                    // `dir/"name"`: joined with a slash (file mappings).
                    Type::String
                } else if both(&Type::Int) {
                    self.error(span, "'/' divides floats; use '%/' for integer division");
                    Type::Error
                } else {
                    mismatch(self)
                }
            }
            BinOp::IntDiv | BinOp::Mod => {
                if both(&Type::Int) {
                    Type::Int
                } else {
                    mismatch(self)
                }
            }
            BinOp::Format => unreachable!("handled above"),
        };
        let dst = self.temp(result.clone(), out);
        self.op(dst, ir::Op::Bin(op), vec![a, b], span, out);
        (dst, result)
    }

    /// A call used as a value: it must return exactly one result.
    fn call_value(&mut self, e: &Expr, out: &mut Vec<Stmt>) -> (VarId, Type) {
        let ExprKind::Call { name, .. } = &e.kind else {
            unreachable!("a call")
        };
        let ExprKind::Call { args, .. } = &e.kind else {
            unreachable!("a call")
        };
        let Resolved::Found(_, sig) = self.resolve(name, args) else {
            self.call(e, None, out);
            return (self.new_var("error", Type::Error), Type::Error);
        };
        match sig.outputs.len() {
            1 => {
                let t = sig.outputs[0].clone();
                let dst = self.temp(t.clone(), out);
                self.call(e, Some(&[(dst, t.clone())]), out);
                (dst, t)
            }
            0 => {
                self.call(e, None, out);
                (self.new_var("void", Type::Void), Type::Void)
            }
            n => {
                self.error(
                    e.span,
                    format!(
                        "'{}' returns {n} results; assign them with (a, b, …) = …",
                        name.name
                    ),
                );
                (self.new_var("error", Type::Error), Type::Error)
            }
        }
    }

    /// The function a call of `name` with `args` calls: its IR name and
    /// signature. An overloaded name's definition is the first whose
    /// parameters take the types of the arguments given by position.
    fn resolve(&mut self, name: &Ident, args: &[Expr]) -> Resolved {
        if let Some(s) = self.g.functions.get(&name.name) {
            return Resolved::Found(name.name.clone(), s.clone());
        }
        let Some(defs) = self.g.overloads.get(&name.name) else {
            return match builtins::lookup(&name.name) {
                Some(s) => Resolved::Found(name.name.clone(), FnSig::from_builtin(s)),
                None => Resolved::Unknown,
            };
        };
        let positional: Vec<&Expr> = args
            .iter()
            .filter(|a| !matches!(a.kind, ExprKind::Keyword(..)))
            .collect();
        let types: Vec<Type> = positional.iter().map(|a| self.probe_type(a)).collect();
        let fits = |sig: &FnSig| {
            types.len() <= sig.inputs.len()
                && types.iter().zip(&sig.inputs).all(|(t, k)| match k {
                    ParamKind::Is(want) => want.accepts(t),
                    _ => true,
                })
        };
        for ir_name in defs {
            let sig = &self.g.functions[ir_name];
            if fits(sig) {
                return Resolved::Found(ir_name.clone(), sig.clone());
            }
        }
        Resolved::NoOverload(types, defs.clone())
    }

    /// The type of `e`, found by lowering it to a throwaway list (its
    /// errors are reported when it is lowered for real).
    fn probe_type(&mut self, e: &Expr) -> Type {
        let reported = self.diags.len();
        let (_, t) = self.expr(e, &mut Vec::new(), None);
        self.diags.truncate(reported);
        t
    }

    /// Lowers a call whose results go to `outs` (`None`: a statement, so
    /// the results are dropped).
    fn call(&mut self, e: &Expr, outs: Option<&[(VarId, Type)]>, out: &mut Vec<Stmt>) {
        let ExprKind::Call {
            name,
            args,
            annotations,
        } = &e.kind
        else {
            unreachable!("a call")
        };
        let (ir_name, sig) = match self.resolve(name, args) {
            Resolved::Found(ir_name, sig) => (ir_name, sig),
            Resolved::Unknown => {
                let mut known: Vec<&str> = (self.g.functions.keys())
                    .chain(self.g.overloads.keys())
                    .map(String::as_str)
                    .collect();
                for n in builtins::names() {
                    known.push(n);
                }
                let hint = builtins::nearest(&name.name, known.into_iter())
                    .map(|k| format!("; did you mean '{k}'?"))
                    .unwrap_or_default();
                self.error(name.span, format!("unknown function '{}'{hint}", name.name));
                for a in args {
                    self.expr(a, out, None);
                }
                return;
            }
            Resolved::NoOverload(types, defs) => {
                let given: Vec<String> = types.iter().map(Type::to_string).collect();
                self.error(
                    name.span,
                    format!(
                        "no definition of '{}' takes ({}); there are {}",
                        name.name,
                        given.join(", "),
                        defs.join(", ")
                    ),
                );
                return;
            }
        };
        if let Some(module) = sig.module {
            if !self.g.imports.contains(module) {
                self.error(
                    name.span,
                    format!("'{}' needs 'import {module};'", name.name),
                );
            }
        }
        let Some(args) = self.bind_args(&name.name, &sig, args, out) else {
            return;
        };
        let n = args.len();
        if n < sig.required || (n > sig.inputs.len() && !sig.variadic) {
            let want = if sig.variadic {
                format!("at least {}", sig.required)
            } else if sig.required == sig.inputs.len() {
                sig.required.to_string()
            } else {
                format!("{} to {}", sig.required, sig.inputs.len())
            };
            self.error(
                e.span,
                format!(
                    "'{}' takes {want} argument{}, given {n}",
                    name.name,
                    if want == "1" { "" } else { "s" }
                ),
            );
        }
        let mut arg_ids = Vec::new();
        let mut same: Option<Type> = None;
        for (i, a) in args.iter().enumerate() {
            let kind = sig.inputs.get(i).cloned().unwrap_or(ParamKind::Any);
            let hint = match &kind {
                ParamKind::Is(t) => Some(t.clone()),
                ParamKind::Same => same.clone(),
                _ => None,
            };
            let (id, t) = self.expr(a, out, hint.as_ref());
            let ok = match &kind {
                ParamKind::Is(want) => want.accepts(&t),
                ParamKind::Any => t != Type::Void,
                ParamKind::AnyArray => t.is_array() || t == Type::Error,
                ParamKind::Same => match &same {
                    Some(s) => s.accepts(&t),
                    None => {
                        same = Some(t.clone());
                        true
                    }
                },
            };
            if !ok {
                let want = match kind {
                    ParamKind::Is(w) => w.to_string(),
                    ParamKind::AnyArray => "an array".into(),
                    ParamKind::Same => same
                        .clone()
                        .map_or("the same type".into(), |s| s.to_string()),
                    ParamKind::Any => "a value".into(),
                };
                self.error(
                    a.span,
                    format!(
                        "argument {} of '{}' must be {want}, not {t}",
                        i + 1,
                        name.name
                    ),
                );
            }
            arg_ids.push(id);
        }
        let mut opts = ir::CallOpts::default();
        for a in annotations {
            let value = a.value.as_ref();
            let which = a.name.name.as_str();
            match which {
                "location" | "soft_location" => {
                    if !sig.task {
                        self.error(
                            a.span,
                            format!("@{which} applies to app and leaf functions; '{}' does not run as a task", name.name),
                        );
                    }
                    let Some(v) = value else {
                        self.error(a.span, format!("@{which} needs a location value"));
                        continue;
                    };
                    let (id, t) = self.expr(v, out, Some(&Type::Location));
                    if !Type::Location.accepts(&t) {
                        self.error(v.span, format!("@{which} needs a location, not {t}"));
                    }
                    opts.location = Some(id);
                    opts.soft = which == "soft_location";
                }
                "prio" | "par" => {
                    let Some(v) = value else {
                        self.error(a.span, format!("@{which} needs an int value"));
                        continue;
                    };
                    let (id, t) = self.expr(v, out, Some(&Type::Int));
                    if !Type::Int.accepts(&t) {
                        self.error(v.span, format!("@{which} needs an int, not {t}"));
                    }
                    if which == "prio" {
                        opts.prio = Some(id);
                    } else {
                        opts.par = Some(id);
                    }
                }
                "timeout" => {
                    if !sig.task {
                        self.error(
                            a.span,
                            format!(
                                "@timeout applies to app functions; '{}' does not run as a task",
                                name.name
                            ),
                        );
                    }
                    let Some(v) = value else {
                        self.error(a.span, "@timeout needs a number of seconds".to_string());
                        continue;
                    };
                    let (id, t) = self.expr(v, out, Some(&Type::Float));
                    if !matches!(t, Type::Int | Type::Float | Type::Error) {
                        self.error(
                            v.span,
                            format!("@timeout needs seconds (int or float), not {t}"),
                        );
                    }
                    opts.timeout = Some(id);
                }
                other => self.error(a.name.span, format!("unknown call annotation '@{other}'")),
            }
        }
        let out_ids: Vec<VarId> = match outs {
            Some(o) => {
                if !sig.outputs.is_empty() && o.len() != sig.outputs.len() {
                    self.error(
                        e.span,
                        format!(
                            "'{}' returns {} results, {} expected",
                            name.name,
                            sig.outputs.len(),
                            o.len()
                        ),
                    );
                } else if sig.outputs.is_empty() && !o.is_empty() {
                    self.error(e.span, format!("'{}' returns nothing", name.name));
                }
                for ((_, want), got) in o.iter().zip(&sig.outputs) {
                    if !want.accepts(got) {
                        self.error(
                            e.span,
                            format!("expected {want}, but '{}' returns {got}", name.name),
                        );
                    }
                }
                o.iter().map(|(id, _)| *id).collect()
            }
            None => sig
                .outputs
                .iter()
                .map(|t| self.temp(t.clone(), out))
                .collect(),
        };
        match sig.builtin {
            Some(op) => self.builtin(out_ids, op, arg_ids, name.span, out),
            None => {
                let at = self.pos(name.span);
                out.push(Stmt::Call {
                    func: ir_name,
                    outs: out_ids,
                    args: arg_ids,
                    opts,
                    at,
                });
            }
        }
    }

    /// A call's arguments in parameter order: keyword arguments (`x=1`)
    /// put in their parameter's place and the defaults of parameters left
    /// out after them filled in. `None` (reported, the arguments lowered
    /// for their own errors) if they do not fit the parameters.
    fn bind_args<'e>(
        &mut self,
        callee: &str,
        sig: &'e FnSig,
        args: &'e [Expr],
        out: &mut Vec<Stmt>,
    ) -> Option<Vec<&'e Expr>> {
        let mut bound: Vec<Option<&Expr>> = Vec::new();
        let (mut ok, mut keywords) = (true, false);
        for a in args {
            let ExprKind::Keyword(key, value) = &a.kind else {
                if keywords {
                    self.error(a.span, "a positional argument after keyword arguments");
                    ok = false;
                }
                bound.push(Some(a));
                continue;
            };
            keywords = true;
            let Some(i) = sig.params.iter().position(|p| *p == key.name) else {
                let k = &key.name;
                let msg = match sig.params.is_empty() {
                    true => format!("'{callee}' takes no keyword arguments ('{k}=')"),
                    false => format!(
                        "'{callee}' has no parameter '{k}' (its parameters: {})",
                        sig.params.join(", ")
                    ),
                };
                self.error(key.span, msg);
                ok = false;
                continue;
            };
            if bound.len() <= i {
                bound.resize(i + 1, None);
            }
            if bound[i].is_some() {
                self.error(
                    key.span,
                    format!("parameter '{}' of '{callee}' is given twice", key.name),
                );
                ok = false;
            }
            bound[i] = Some(value);
        }
        for (i, default) in sig.defaults.iter().enumerate() {
            match (bound.get(i).copied().flatten(), default) {
                (Some(_), _) => {}
                (None, Some(d)) => {
                    if bound.len() <= i {
                        bound.resize(i + 1, None);
                    }
                    bound[i] = Some(d);
                }
                (None, None) if i < bound.len() => {
                    self.error(
                        args.last().map_or(Span::default(), |a| a.span),
                        format!("parameter '{}' of '{callee}' is not given", sig.params[i]),
                    );
                    ok = false;
                }
                (None, None) => {}
            }
        }
        if !ok {
            for a in args {
                let a = match &a.kind {
                    ExprKind::Keyword(_, v) => v,
                    _ => a,
                };
                self.expr(a, out, None);
            }
            return None;
        }
        Some(bound.into_iter().flatten().collect())
    }

    /// One word of an app's command line.
    fn app_word(&mut self, w: &Expr, out: &mut Vec<Stmt>) -> ir::Word {
        match &w.kind {
            ExprKind::Str(s) => ir::Word::Lit(s.clone()),
            ExprKind::Int(v) => ir::Word::Lit(v.to_string()),
            _ => {
                let (id, t) = self.expr(w, out, None);
                if matches!(t, Type::Void | Type::Struct(_) | Type::Location) {
                    self.error(w.span, format!("a {t} cannot appear on a command line"));
                }
                ir::Word::Var(id)
            }
        }
    }
}

/// An assignment target: its root variable and the path to the slot
/// (`None` after an error).
type Container = Option<(VarId, Vec<ir::Member>)>;

fn op_symbol(op: BinOp) -> &'static str {
    match op {
        BinOp::Or => "||",
        BinOp::And => "&&",
        BinOp::Eq => "==",
        BinOp::Ne => "!=",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::IntDiv => "%/",
        BinOp::Mod => "%%",
        BinOp::Format => "%",
        BinOp::Pow => "**",
    }
}
