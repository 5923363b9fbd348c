//! Top-level variables read inside functions, Swift/T's globals: a function
//! that names one (itself, or through a function it calls) takes it as a
//! hidden input after its own, and every call passes it. A function never
//! assigns one: the top level does.

use super::*;

/// What a function's body names: variables it does not declare, and the
/// functions it calls.
#[derive(Default)]
struct Uses {
    names: HashSet<String>,
    declared: HashSet<String>,
    calls: HashSet<String>,
}

impl Uses {
    fn of(f: &ast::FuncDef) -> Uses {
        let mut u = Uses::default();
        for p in f.inputs.iter().chain(&f.outputs) {
            u.declared.insert(p.name.name.clone());
            if let Some(d) = &p.default {
                u.expr(d);
            }
        }
        match &f.body {
            ast::FuncBody::Composite(b) => u.block(b),
            ast::FuncBody::App(app) => {
                for e in app
                    .words
                    .iter()
                    .chain(&app.stdin)
                    .chain(&app.stdout)
                    .chain(&app.stderr)
                {
                    u.expr(e);
                }
            }
            ast::FuncBody::Leaf { .. } => {}
        }
        u
    }

    fn block(&mut self, b: &[ast::Stmt]) {
        for s in b {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &ast::Stmt) {
        match &s.kind {
            StmtKind::Decl { vars, .. } => {
                for v in vars {
                    self.declared.insert(v.name.name.clone());
                    for e in v.mapping.iter().chain(&v.init) {
                        self.expr(e);
                    }
                }
            }
            StmtKind::Assign { targets, value } => {
                for t in targets {
                    self.lvalue(t);
                }
                self.expr(value);
            }
            StmtKind::Append { target, value } => {
                self.lvalue(target);
                self.expr(value);
            }
            StmtKind::Update { target, value, .. } => {
                self.names.insert(target.name.clone());
                self.expr(value);
            }
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond);
                self.block(then);
                self.block(otherwise.as_deref().unwrap_or_default());
            }
            StmtKind::Switch {
                scrutinee,
                cases,
                default,
            } => {
                self.expr(scrutinee);
                for (labels, body) in cases {
                    for l in labels {
                        self.expr(l);
                    }
                    self.block(body);
                }
                self.block(default.as_deref().unwrap_or_default());
            }
            StmtKind::Foreach {
                value,
                index,
                source,
                body,
                ..
            } => {
                self.declared.insert(value.name.clone());
                self.declared.extend(index.iter().map(|i| i.name.clone()));
                self.expr(source);
                self.block(body);
            }
            StmtKind::For {
                init,
                cond,
                update,
                body,
            } => {
                for v in init {
                    self.declared.insert(v.name.name.clone());
                    self.expr(&v.init);
                }
                self.expr(cond);
                for (_, e) in update {
                    self.expr(e);
                }
                self.block(body);
            }
            StmtKind::Iterate { var, body, until } => {
                self.declared.insert(var.name.clone());
                self.block(body);
                self.expr(until);
            }
            StmtKind::Wait { on, body, .. } => {
                for e in on {
                    self.expr(e);
                }
                self.block(body);
            }
            StmtKind::Chain(parts) => {
                for p in parts {
                    self.stmt(p);
                }
            }
            StmtKind::Block(b) => self.block(b),
        }
    }

    fn lvalue(&mut self, lv: &ast::LValue) {
        match lv {
            ast::LValue::Var(name) => {
                self.names.insert(name.name.clone());
            }
            ast::LValue::Index(base, key, _) => {
                self.lvalue(base);
                self.expr(key);
            }
            ast::LValue::Field(base, _) => self.lvalue(base),
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Str(_) | ExprKind::Bool(_) => {}
            ExprKind::Var(name) => {
                self.names.insert(name.clone());
            }
            ExprKind::Call {
                name,
                args,
                annotations,
            } => {
                self.calls.insert(name.name.clone());
                for a in args {
                    self.expr(a);
                }
                for v in annotations.iter().filter_map(|a| a.value.as_ref()) {
                    self.expr(v);
                }
            }
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Field(a, _)
            | ExprKind::Unary(_, a)
            | ExprKind::FileName(a)
            | ExprKind::Keyword(_, a) => self.expr(a),
            ExprKind::Tuple(items) | ExprKind::Array(items) => {
                for i in items {
                    self.expr(i);
                }
            }
            ExprKind::Range { lo, hi, step } => {
                self.expr(lo);
                self.expr(hi);
                if let Some(s) = step {
                    self.expr(s);
                }
            }
            ExprKind::Dict(pairs) => {
                for (k, v) in pairs {
                    self.expr(k);
                    self.expr(v);
                }
            }
        }
    }
}

/// The variables the program's top-level statements declare, with their
/// types (`global const` are constants, not among them).
pub(super) fn top_level(
    prog: &ast::Program,
    g: &Globals<'_>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Type> {
    let mut vars = BTreeMap::new();
    for item in &prog.items {
        if let ast::Item::Stmt(ast::Stmt {
            kind:
                StmtKind::Decl {
                    ty,
                    vars: declared,
                    global: false,
                },
            ..
        }) = item
        {
            let base = resolve_name(g, ty, diags);
            for v in declared {
                let t = wrap_dims(g, base.clone(), &v.dims, diags);
                vars.insert(v.name.name.clone(), t);
            }
        }
    }
    vars
}

/// For each function (by its name in the script), the globals of `top`
/// it reads itself or through the functions it calls, in name order.
pub(super) fn read_by_functions(
    prog: &ast::Program,
    top: &BTreeMap<String, Type>,
) -> HashMap<String, Vec<String>> {
    let mut uses: HashMap<&str, (HashSet<String>, HashSet<String>)> = HashMap::new();
    for item in &prog.items {
        if let ast::Item::Func(f) = item {
            let u = Uses::of(f);
            let read: HashSet<String> = (u.names.iter())
                .filter(|n| top.contains_key(*n) && !u.declared.contains(*n))
                .cloned()
                .collect();
            let entry = uses.entry(f.name.name.as_str()).or_default();
            entry.0.extend(read);
            entry.1.extend(u.calls);
        }
    }
    // Through calls, until nothing changes (a call graph may have cycles).
    loop {
        let mut changed = false;
        let names: Vec<&str> = uses.keys().copied().collect();
        for f in names {
            let callees = uses[f].1.clone();
            let mut gained = HashSet::new();
            for c in &callees {
                if let Some((read, _)) = uses.get(c.as_str()) {
                    gained.extend(read.iter().filter(|n| !uses[f].0.contains(*n)).cloned());
                }
            }
            if !gained.is_empty() {
                changed = true;
                uses.get_mut(f).expect("a function").0.extend(gained);
            }
        }
        if !changed {
            break;
        }
    }
    uses.into_iter()
        .filter(|(_, (read, _))| !read.is_empty())
        .map(|(f, (read, _))| {
            let mut read: Vec<String> = read.into_iter().collect();
            read.sort();
            (f.to_string(), read)
        })
        .collect()
}
