//! Expressions: literals, variables, element reads, operators and ranges,
//! each checked as it is turned into futures.

use super::*;

impl<'a> FnCx<'a> {
    /// A range's bounds and step, and whether any of them is a float.
    pub(super) fn range_parts(
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
    pub(super) fn range_array(
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

    /// Lowers `e` where a `want` is expected, reporting anything else.
    pub(super) fn typed_expr(&mut self, e: &Expr, out: &mut Vec<Stmt>, want: &Type) -> VarId {
        let (id, t) = self.expr(e, out, Some(want));
        if !want.accepts(&t) {
            self.error(e.span, format!("expected {want}, found {t}"));
        }
        id
    }

    pub(super) fn constant(
        &mut self,
        dst_ty: Type,
        value: Const,
        out: &mut Vec<Stmt>,
    ) -> (VarId, Type) {
        let id = self.temp(dst_ty.clone(), out);
        out.push(Stmt::Const { dst: id, value });
        (id, dst_ty)
    }

    /// Lowers `e` to a future; `expected` guides literals (an int literal
    /// where a float is expected is a float).
    pub(super) fn expr(
        &mut self,
        e: &Expr,
        out: &mut Vec<Stmt>,
        expected: Option<&Type>,
    ) -> (VarId, Type) {
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
            ExprKind::Var(name) => match self.var_ref(name, e.span, out) {
                // Read where a value is wanted, an updateable is its value now.
                (id, Type::Updateable) if expected != Some(&Type::Updateable) => {
                    self.latest(id, e.span, out)
                }
                found => found,
            },
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
                let pos = self.pos(e.span);
                for (i, v) in vals.into_iter().enumerate() {
                    let (idx, _) = self.constant(Type::Int, Const::Int(i as i64), out);
                    out.push(Stmt::ArrayInsert {
                        array: arr,
                        index: idx,
                        value: v,
                        at: pos,
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
                            self.error(k.span, format!("keys must all be {want}, found {t}"));
                        }
                        None => kt = Some(t),
                        _ => {}
                    }
                    let (vid, t) = self.expr(v, out, vt.as_ref());
                    match &vt {
                        Some(want) if !want.accepts(&t) => {
                            self.error(v.span, format!("values must all be {want}, found {t}"));
                        }
                        None => vt = Some(t),
                        _ => {}
                    }
                    entries.push((kid, vid, self.pos(k.span)));
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
                for (k, v, at) in entries {
                    // A key given twice fails here at run time.
                    out.push(Stmt::ArrayInsert {
                        array: arr,
                        index: k,
                        value: v,
                        at,
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
    pub(super) fn path_type(&self, e: &Expr) -> Option<Type> {
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
    pub(super) fn path_read(&mut self, e: &Expr, out: &mut Vec<Stmt>) -> (VarId, Type) {
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
    pub(super) fn path_type_of(&self, e: &Expr) -> Option<Type> {
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

    /// The value updateable `id` has now (member 0 of the container it is:
    /// set from its declaration on).
    fn latest(&mut self, id: VarId, span: Span, out: &mut Vec<Stmt>) -> (VarId, Type) {
        let (index, _) = self.constant(Type::Int, Const::Int(0), out);
        let dst = self.temp(Type::Float, out);
        let at = self.pos(span);
        out.push(Stmt::ArrayGet {
            dst,
            array: id,
            index,
            at,
        });
        (dst, Type::Float)
    }

    pub(super) fn var_ref(&mut self, name: &str, span: Span, out: &mut Vec<Stmt>) -> (VarId, Type) {
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

    pub(super) fn binary(
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
        // A subtype's operators are its base's, as is their result.
        let (mut a, at) = self.expr(l, out, hint.as_ref());
        let mut at = at.base().clone();
        let (mut b, bt) = self.expr(r, out, Some(&at).filter(|t| t.is_numeric()));
        let bt = bt.base().clone();
        if at == Type::Int && bt == Type::Float && matches!(l.kind, ExprKind::Int(_)) {
            at = Type::Float;
        }
        let mismatch = |cx: &mut Self| {
            cx.error(
                span,
                format!("'{}' cannot combine {at} and {bt}", op.symbol()),
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
                } else if let Some(joined) = self.number_text((a, &at), (b, &bt), span, out) {
                    // Swift/T: a string and a number join as text.
                    (a, b) = joined;
                    Type::String
                } else {
                    mismatch(self)
                }
            }
            // Swift/T: a power is a float, of ints too (`2 ** -2` is 0.25).
            BinOp::Pow => {
                if both(&Type::Int) || both(&Type::Float) {
                    Type::Float
                } else {
                    mismatch(self)
                }
            }
            BinOp::Sub | BinOp::Mul => {
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

    /// For `+` of a string and a number: both operands as strings, the
    /// number's text in its place (`None` for any other pair).
    fn number_text(
        &mut self,
        (a, at): (VarId, &Type),
        (b, bt): (VarId, &Type),
        span: Span,
        out: &mut Vec<Stmt>,
    ) -> Option<(VarId, VarId)> {
        let number = |t: &Type| matches!(t, Type::Int | Type::Float);
        let text = |cx: &mut Self, v: VarId, out: &mut Vec<Stmt>| {
            let s = cx.temp(Type::String, out);
            cx.builtin(vec![s], Pure::ToString.into(), vec![v], span, out);
            s
        };
        match (at, bt) {
            (Type::String, t) if number(t) => Some((a, text(self, b, out))),
            (t, Type::String) if number(t) => Some((text(self, a, out), b)),
            _ => None,
        }
    }
}
