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
use std::sync::{Arc, OnceLock};

mod call;
mod expr;
mod globals;
mod stmt;

/// A callable's signature, user-defined or built in.
#[derive(Clone)]
struct FnSig {
    inputs: Vec<ParamKind>,
    required: usize,
    variadic: bool,
    outputs: Vec<Type>,
    /// Runs as a leaf task (may take `@location`).
    task: bool,
    /// An `app` (may take `@par`: its program is an MPI job).
    app: bool,
    /// A builtin: which, and the module it needs.
    builtin: Option<Builtin>,
    module: Option<&'static str>,
    /// A user function's parameter names (for keyword arguments) and
    /// default values.
    params: Vec<String>,
    defaults: Vec<Option<Expr>>,
    /// The top-level variables a user function reads (itself or through
    /// its calls): hidden inputs after its own, which every call passes.
    globals: Vec<String>,
}

impl FnSig {
    /// Builtin `name`'s signature (made once per builtin).
    fn builtin(name: &str) -> Option<Arc<FnSig>> {
        static SIGNATURES: OnceLock<HashMap<&str, Arc<FnSig>>> = OnceLock::new();
        SIGNATURES
            .get_or_init(|| {
                builtins::signatures()
                    .map(|s| (s.name, Arc::new(FnSig::from_builtin(s))))
                    .collect()
            })
            .get(name)
            .cloned()
    }

    fn from_builtin(s: Signature) -> FnSig {
        FnSig {
            inputs: s.inputs,
            required: s.required,
            variadic: s.variadic,
            outputs: s.outputs,
            task: false,
            app: false,
            builtin: Some(s.builtin),
            module: Some(s.module),
            params: Vec::new(),
            defaults: Vec::new(),
            globals: Vec::new(),
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
    functions: HashMap<String, Arc<FnSig>>,
    /// The IR names of an overloaded name's definitions.
    overloads: HashMap<String, Vec<String>>,
    /// The IR name of each overloaded definition, by where its name is.
    ir_names: HashMap<u32, String>,
    structs: BTreeMap<String, Vec<(String, Type)>>,
    typedefs: HashMap<String, Type>,
    consts: HashMap<String, (Type, Const)>,
    /// The variables top-level statements declare, which functions read.
    top: BTreeMap<String, Type>,
}

pub(crate) fn lower(prog: &ast::Program, src: &Source) -> (ir::Program, Vec<Diagnostic>) {
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
        top: BTreeMap::new(),
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
            ast::Item::Typedef { name, ty, sub } => {
                let base = resolve_type(&g, ty, &mut diags);
                // Subtypes of primitive types; of an array or a struct,
                // `type` names the same type, as `typedef` does.
                let primitive = !matches!(base, Type::Error | Type::Array { .. } | Type::Struct(_));
                let t = match sub {
                    true if primitive => Type::Sub {
                        name: name.name.clone(),
                        base: Box::new(base),
                    },
                    _ => base,
                };
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
    // Their errors are reported where `main` declares them.
    g.top = globals::top_level(prog, &g, &mut Vec::new());
    let reads = globals::read_by_functions(prog, &g.top);
    let mut definitions: HashMap<&str, usize> = HashMap::new();
    for item in &prog.items {
        if let ast::Item::Func(f) = item {
            *definitions.entry(f.name.name.as_str()).or_default() += 1;
        }
    }
    // A type and a function share one namespace (Swift/T).
    for item in &prog.items {
        if let ast::Item::Struct { name, .. } | ast::Item::Typedef { name, .. } = item {
            if definitions.contains_key(name.name.as_str()) {
                diags.push(Diagnostic::new(
                    name.span,
                    format!("type '{}' has the name of a function", name.name),
                ));
            }
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

                // Optional parameters come last (Swift/T).
                let first_default = f.inputs.iter().position(|p| p.default.is_some());
                if let Some(d) = first_default {
                    if let Some(p) = f.inputs[d..].iter().find(|p| p.default.is_none()) {
                        diags.push(Diagnostic::new(
                            p.name.span,
                            format!(
                                "parameter '{}' needs a default value: it follows '{}', which has one",
                                p.name.name, f.inputs[d].name.name
                            ),
                        ));
                    }
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
                    app: matches!(f.body, ast::FuncBody::App(_)),
                    builtin: None,
                    module: None,
                    params: f.inputs.iter().map(|p| p.name.name.clone()).collect(),
                    // Kept only for functions that have defaults.
                    defaults: match f.inputs.iter().any(|p| p.default.is_some()) {
                        true => f.inputs.iter().map(|p| p.default.clone()).collect(),
                        false => Vec::new(),
                    },
                    globals: reads.get(&f.name.name).cloned().unwrap_or_default(),
                };
                if ir_name != f.name.name {
                    g.overloads
                        .entry(f.name.name.clone())
                        .or_default()
                        .push(ir_name.clone());
                    g.ir_names.insert(f.name.span.start, ir_name.clone());
                }
                g.functions.insert(ir_name, Arc::new(sig));
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
                    let n = v.name.name.as_str();
                    if definitions.contains_key(n) || FnSig::builtin(n).is_some() {
                        diags.push(Diagnostic::new(
                            v.name.span,
                            format!("global const '{n}' has the name of a function"),
                        ));
                        continue;
                    }
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
                cx.stmt(s, &mut body);
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
            fields: f.iter().map(|(n, t)| (n.clone(), t.erased())).collect(),
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
    /// These globals as `f` sees them: each of its type variables a type
    /// of its own in its body.
    fn with_type_vars(&self, f: &ast::FuncDef) -> std::borrow::Cow<'_, Globals<'s>> {
        if f.type_params.is_empty() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut g = self.clone();
        for t in &f.type_params {
            g.typedefs.insert(t.name.clone(), Type::Var(t.name.clone()));
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
                    kt.base(),
                    Type::Int
                        | Type::String
                        | Type::Float
                        | Type::Bool
                        | Type::Var(_)
                        | Type::Error
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
                    dispatch = Some(v.clone());
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
    let mut updated = Vec::new();
    for (params, out, is_output) in [
        (&f.inputs, &mut inputs, false),
        (&f.outputs, &mut outputs, true),
    ] {
        for p in params {
            let ty = resolve_type(g, &p.ty, &mut Vec::new());
            // An updateable parameter is updated here for the caller: an
            // output of the IR's, after the results (calls pass it so).
            if ty == Type::Updateable && !is_output {
                if !matches!(f.body, ast::FuncBody::Composite(_)) {
                    cx.error(
                        p.name.span,
                        "only composite functions take an updateable_float",
                    );
                }
                updated.push(cx.declare(&p.name, ty, Role::Output));
                continue;
            }
            let id = cx.declare(
                &p.name,
                ty,
                if is_output { Role::Output } else { Role::Input },
            );
            out.push(id);
        }
    }
    outputs.extend(updated);
    let name = (g.ir_names.get(&f.name.span.start).cloned()).unwrap_or_else(|| f.name.name.clone());
    if let Some(sig) = g.functions.get(&name) {
        for global in &sig.globals {
            let ident = Ident {
                name: global.clone(),
                span: f.name.span,
            };
            inputs.push(cx.declare(&ident, g.top[global].clone(), Role::Global));
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
                    if !matches!(t.base(), Type::File | Type::String | Type::Error) {
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
    let mut func = cx.finish(name, kind, inputs, outputs, body);
    func.pure_fn = pure_fn;
    func.dispatch = dispatch;
    Some(func)
}

/// The type of `t`'s innermost elements, as their base.
fn elem_type(t: &Type) -> &Type {
    match t {
        Type::Array { elem, .. } => elem_type(elem),
        t => t.base(),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Local,
    Input,
    Output,
    /// A top-level variable a function reads (`globals`).
    Global,
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
        // Subtypes are the front end's: the IR has their bases.
        let mut vars = self.vars;
        for v in &mut vars {
            v.ty = v.ty.erased();
        }
        ir::Function {
            name,
            kind,
            inputs,
            outputs,
            vars,
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
            at: None,
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
        self.vars[id as usize].at = Some(self.pos(name.span));
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

    /// Reports an assignment of `name`, which has `role`, if it is not
    /// allowed: an input's, or a global's inside a function (as Swift/T).
    fn read_only(&mut self, role: Role, name: &Ident) -> bool {
        let why = match role {
            Role::Input => "is an input and cannot be assigned",
            Role::Global => {
                "is a top-level variable: only the top level assigns it, not a function"
            }
            Role::Local | Role::Output => return false,
        };
        self.error(name.span, format!("'{}' {why}", name.name));
        true
    }

    /// Records a whole-value assignment of `id` and reports a second one.
    fn note_assign(&mut self, name: &Ident, id: VarId) {
        let (role, loop_depth) = match self.lookup(&name.name) {
            Some(l) => (l.role, l.loop_depth),
            None => return,
        };
        if self.read_only(role, name) {
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
}
