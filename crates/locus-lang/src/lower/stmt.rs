//! Statements: declarations, assignments (and the variables they declare
//! by inference), loops and conditionals.

use super::*;

impl<'a> FnCx<'a> {
    pub(super) fn stmt(&mut self, s: &ast::Stmt, out: &mut Vec<Stmt>) {
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
                    if t == Type::Updateable && v.init.is_none() {
                        let n = &v.name.name;
                        self.error(v.name.span, format!("updateable_float '{n}' needs its first value: updateable_float {n} = 0.0;"));
                    }
                    if let Some(init) = &v.init {
                        self.assign_into(id, &t, init, out);
                        self.note_assign(&v.name, id);
                    }
                }
            }
            StmtKind::Assign { targets, value } => self.assign(targets, value, out),
            StmtKind::Append { target, value } => self.append(target, value, out),
            StmtKind::Update { target, op, value } => self.update(target, op, value, out),
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
                    // An updateable is waited for whole: until it is final.
                    vars.push(self.expr(e, out, Some(&Type::Updateable)).0);
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
                    // chain: it belongs to the enclosing block. Temporaries
                    // stay in their part, which closes them (an array
                    // literal given to a call in the part must close before
                    // the part is done).
                    // (A hoisted variable's mapping, a temporary, goes
                    // with it.)
                    let scope = self.scopes.last().expect("a scope");
                    let named = |v: &VarId| scope.values().any(|l| l.id == *v);
                    let mappings: Vec<VarId> = b
                        .iter()
                        .filter_map(|s| match s {
                            Stmt::Decl { var, mapping } if named(var) => *mapping,
                            _ => None,
                        })
                        .collect();
                    let hoisted = |v: &VarId| named(v) || mappings.contains(v);
                    let (decls, rest): (Vec<Stmt>, Vec<Stmt>) = b
                        .into_iter()
                        .partition(|s| matches!(s, Stmt::Decl { var, .. } if hoisted(var)));
                    out.extend(decls);
                    seq.push(rest);
                }
                out.push(Stmt::Seq(seq));
            }
            StmtKind::Block(b) => self.block(b, out),
        }
    }

    /// `x <incr> := v;`: updateable `x` changed (where it is declared, or
    /// in blocks inside: its writers are counted there, and it is final,
    /// for `wait (x)`, once they are all done).
    fn update(&mut self, target: &Ident, op: &Ident, value: &Expr, out: &mut Vec<Stmt>) {
        let Some((var, role)) = self.lookup(&target.name).map(|l| (l.id, l.role)) else {
            self.error(
                target.span,
                format!("undeclared variable '{}'", target.name),
            );
            return;
        };
        let ty = self.vars[var as usize].ty.clone();
        if !matches!(ty, Type::Updateable | Type::Error) {
            let n = &target.name;
            self.error(
                target.span,
                format!(
                    "'{n}' is {ty}; only an updateable_float is updated with <{}> :=",
                    op.name
                ),
            );
            return;
        }
        if role == Role::Global {
            let n = &target.name;
            self.error(
                target.span,
                format!("'{n}' is a top-level variable: a function updates an updateable_float given to it as an argument"),
            );
        }
        let Some(op) = ir::UpdateOp::named(&op.name) else {
            let o = &op.name;
            self.error(
                op.span,
                format!("unknown update <{o}>; the updates are <incr>, <scale> and <min>"),
            );
            return;
        };
        let value = self.typed_expr(value, out, &Type::Float);
        self.ever_assigned.insert(var);
        let at = self.pos(target.span);
        out.push(Stmt::Update { var, op, value, at });
    }

    /// `B += v;`, `A[i] += v;`, `s.f += v;`: `v` added to the bag or
    /// array there (made on first use, as an element assigned is) under a
    /// key no other member has.
    pub(super) fn append(&mut self, target: &ast::LValue, value: &Expr, out: &mut Vec<Stmt>) {
        let root = target.root();
        let Some((id, role)) = self.lookup(&root.name).map(|l| (l.id, l.role)) else {
            self.error(root.span, format!("undeclared variable '{}'", root.name));
            return;
        };
        self.read_only(role, root);
        let (array, path, ty) = match target {
            ast::LValue::Var(_) => (id, Vec::new(), self.vars[id as usize].ty.clone()),
            _ => match self.lvalue_parent(target, out) {
                (Some((array, path)), ty) => (array, path, ty),
                (None, _) => return,
            },
        };
        let elem = match ty {
            Type::Array { elem, .. } => *elem,
            Type::Error => return,
            other => {
                self.error(
                    value.span,
                    format!("only a bag or array can be appended to; this is {other}"),
                );
                return;
            }
        };
        let v = self.typed_expr(value, out, &elem);
        self.ever_assigned.insert(array);
        let at = self.pos(root.span);
        out.push(Stmt::ArrayAppend {
            array,
            path,
            value: v,
            at,
        });
    }

    pub(super) fn assign(&mut self, targets: &[ast::LValue], value: &Expr, out: &mut Vec<Stmt>) {
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
                if let Some(role) = self.lookup(&target.root().name).map(|l| l.role) {
                    self.read_only(role, target.root());
                }
                if let Some(id) = self.lookup(&target.root().name).map(|l| l.id) {
                    self.ever_assigned.insert(id);
                }
                let at = self.pos(target.root().span);
                match container {
                    Some((array, mut path)) if path.len() == 1 => match path.remove(0) {
                        ir::Member::Index(index) => out.push(Stmt::ArrayInsert {
                            array,
                            index,
                            value: v,
                            at,
                        }),
                        ir::Member::Field(field) => out.push(Stmt::StructSet {
                            target: array,
                            field,
                            value: v,
                            at,
                        }),
                    },
                    Some((target, path)) => out.push(Stmt::InsertPath {
                        target,
                        path,
                        value: v,
                        at,
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
    pub(super) fn declare_indexed(
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
    pub(super) fn key_type(&self, key: &Expr) -> Type {
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
    pub(super) fn lvalue_parent(
        &mut self,
        lv: &ast::LValue,
        out: &mut Vec<Stmt>,
    ) -> (Container, Type) {
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
    pub(super) fn assign_into(&mut self, dst: VarId, ty: &Type, e: &Expr, out: &mut Vec<Stmt>) {
        if *ty == Type::Updateable {
            // Its first value: member 0 of the container it is.
            let value = self.typed_expr(e, out, &Type::Float);
            let (index, _) = self.constant(Type::Int, Const::Int(0), out);
            let at = self.pos(e.span);
            out.push(Stmt::ArrayInsert {
                array: dst,
                index,
                value,
                at,
            });
            return;
        }
        if let ExprKind::Call { .. } = e.kind {
            self.call(e, Some(&[(dst, ty.clone())]), out);
            return;
        }
        let src = self.typed_expr(e, out, ty);
        out.push(Stmt::Copy { dst, src });
    }

    pub(super) fn loop_opts(&mut self, annotations: &[ast::Annotation]) -> ir::LoopOpts {
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

    pub(super) fn foreach(
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
                at: cx.pos(value.span),
            }
        });
        out.push(stmt);
    }

    /// `foreach v[, i] in [lo:hi:step]` over ints: iterated without an array.
    pub(super) fn foreach_range(
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
                at: cx.pos(value.span),
            }
        });
        out.push(stmt);
    }

    /// `iterate v { body } until (c);` as a loop whose test block is the
    /// body followed by `!c`: the body runs before each test.
    pub(super) fn iterate(
        &mut self,
        var: &Ident,
        body: &[ast::Stmt],
        until: &Expr,
        out: &mut Vec<Stmt>,
    ) {
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
                at: cx.pos(var.span),
            }
        });
        out.push(stmt);
    }

    pub(super) fn for_loop(
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
                    let declared = resolve_type(self.g, ty, self.diags);
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
            let mut next = Vec::new();
            let mut updates = Vec::new();
            // The updates see the body's variables (the guide's `count =
            // count + c`, `c` declared in the body): one scope for both.
            cx.scoped(|cx| {
                for s in body {
                    cx.stmt(s, &mut body_ir);
                }
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
            });
            cx.loop_depth -= 1;
            Stmt::Loop {
                vars,
                cond: cond_ir,
                test,
                body: body_ir,
                next,
                updates,
                at: cx.pos(cond.span),
            }
        });
        out.push(stmt);
    }

    // ---- expressions ----

    /// A condition: a boolean, or an int (true when not zero, as Swift/T
    /// allows).
    pub(super) fn condition(&mut self, cond: &Expr, out: &mut Vec<Stmt>) -> VarId {
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
}

/// An assignment target: its root variable and the path to the slot
/// (`None` after an error).
pub(super) type Container = Option<(VarId, Vec<ir::Member>)>;
