//! Calls: which function a name and its arguments find (builtins, user
//! functions, overloads), how arguments bind to parameters (positions,
//! keywords, defaults), and the statement a call becomes.

use super::*;

/// What a call's name and arguments find.
pub(super) enum Resolved {
    /// The signature, and for an overloaded name the IR name of the
    /// definition chosen.
    Found(Arc<FnSig>, Option<String>),
    Unknown,
    /// An overloaded name none of whose definitions takes these types.
    NoOverload(Vec<Type>, Vec<String>),
}

impl<'a> FnCx<'a> {
    /// A call used as a value: it must return exactly one result.
    pub(super) fn call_value(&mut self, e: &Expr, out: &mut Vec<Stmt>) -> (VarId, Type) {
        let (name, args, _) = call_parts(e);
        if self.is_constructor(name) {
            let t = Type::Struct(name.name.clone());
            let dst = self.temp(t.clone(), out);
            self.construct(e, dst, out);
            return (dst, t);
        }
        if let Some(t) = self.subtype(name) {
            let dst = self.temp(t.clone(), out);
            self.convert(e, dst, out);
            return (dst, t);
        }
        let resolved = self.resolve(name, args);
        let Resolved::Found(sig, _) = &resolved else {
            self.call_resolved(e, resolved, None, out);
            return (self.new_var("error", Type::Error), Type::Error);
        };
        match sig.outputs.len() {
            1 => {
                // Its type is the result's, as the arguments bind it.
                let dst = self.temp(Type::Error, out);
                let results = self.call_resolved(e, resolved, Some(&[(dst, Type::Error)]), out);
                let t = results.into_iter().next().unwrap_or(Type::Error);
                self.vars[dst as usize].ty = t.clone();
                (dst, t)
            }
            0 => {
                self.call_resolved(e, resolved, None, out);
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
    pub(super) fn resolve(&mut self, name: &Ident, args: &[Expr]) -> Resolved {
        if let Some(s) = self.g.functions.get(&name.name) {
            return Resolved::Found(s.clone(), None);
        }
        let Some(defs) = self.g.overloads.get(&name.name) else {
            return match FnSig::builtin(&name.name) {
                Some(s) => Resolved::Found(s, None),
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
                    ParamKind::Is(want) => want.binds(t, &mut HashMap::new()),
                    _ => true,
                })
        };
        for ir_name in defs {
            let sig = &self.g.functions[ir_name];
            if fits(sig) {
                return Resolved::Found(sig.clone(), Some(ir_name.clone()));
            }
        }
        Resolved::NoOverload(types, defs.clone())
    }

    /// The type of `e`, found by lowering it to a throwaway list (its
    /// errors are reported when it is lowered for real).
    pub(super) fn probe_type(&mut self, e: &Expr) -> Type {
        let reported = self.diags.len();
        let (_, t) = self.expr(e, &mut Vec::new(), None);
        self.diags.truncate(reported);
        t
    }

    /// Lowers a call whose results go to `outs` (`None`: a statement, so
    /// the results are dropped).
    pub(super) fn call(&mut self, e: &Expr, outs: Option<&[(VarId, Type)]>, out: &mut Vec<Stmt>) {
        let (name, args, _) = call_parts(e);
        if self.is_constructor(name) {
            let made = Type::Struct(name.name.clone());
            match outs {
                Some([(dst, t)]) if t.accepts(&made) => self.construct(e, *dst, out),
                Some([(_, t)]) => self.error(e.span, format!("this makes a {made}; {t} expected")),
                _ => self.error(e.span, format!("'{made}(…)' makes one value; assign it")),
            }
            return;
        }
        if let Some(made) = self.subtype(name) {
            match outs {
                Some([(dst, t)]) if t.accepts(&made) => self.convert(e, *dst, out),
                Some([(_, t)]) => self.error(e.span, format!("this makes a {made}; {t} expected")),
                _ => self.error(e.span, format!("'{made}(…)' makes one value; assign it")),
            }
            return;
        }
        let resolved = self.resolve(name, args);
        self.call_resolved(e, resolved, outs, out);
    }

    /// The subtype a call of `name` converts to (`type name base;`, and no
    /// function of that name).
    fn subtype(&self, name: &Ident) -> Option<Type> {
        let t = self.g.typedefs.get(&name.name)?;
        let free = !self.g.functions.contains_key(&name.name)
            && !self.g.overloads.contains_key(&name.name);
        (matches!(t, Type::Sub { .. }) && free).then(|| t.clone())
    }

    /// `T(v)` for subtype `T`, into `dst`: `v`, a value of `T`'s base (or
    /// of another subtype of it), taken as a `T`.
    fn convert(&mut self, e: &Expr, dst: VarId, out: &mut Vec<Stmt>) {
        let (name, args, _) = call_parts(e);
        let [arg] = args else {
            self.error(
                e.span,
                format!(
                    "'{}(…)' converts one value, given {}",
                    name.name,
                    args.len()
                ),
            );
            return;
        };
        let base = self.g.typedefs[&name.name].base().clone();
        let src = self.typed_expr(arg, out, &base);
        out.push(Stmt::Copy { dst, src });
    }

    /// Whether a call of `name` constructs a struct: it names a struct type
    /// and no function.
    fn is_constructor(&self, name: &Ident) -> bool {
        self.g.structs.contains_key(&name.name)
            && !self.g.functions.contains_key(&name.name)
            && !self.g.overloads.contains_key(&name.name)
    }

    /// `T(a, b, …)` for struct type `T`, into `dst`: its fields, in the
    /// order `T` declares them, set to the arguments (Swift/T's guide:
    /// `person p3 = person("Nguyen", 42);`).
    fn construct(&mut self, e: &Expr, dst: VarId, out: &mut Vec<Stmt>) {
        let (name, args, annotations) = call_parts(e);
        if let Some(a) = annotations.first() {
            self.error(
                a.span,
                format!("constructing a {} takes no annotations", name.name),
            );
        }
        let fields = self.g.structs[&name.name].clone();
        let keyword = args
            .iter()
            .find(|a| matches!(a.kind, ExprKind::Keyword(..)));
        if args.len() != fields.len() || keyword.is_some() {
            let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
            self.error(
                keyword.map_or(e.span, |k| k.span),
                format!(
                    "constructing a {} takes its {} field{} in order ({}), given {} argument{}",
                    name.name,
                    fields.len(),
                    if fields.len() == 1 { "" } else { "s" },
                    names.join(", "),
                    args.len(),
                    if args.len() == 1 { "" } else { "s" },
                ),
            );
            return;
        }
        let at = self.pos(e.span);
        for ((field, want), a) in fields.into_iter().zip(args) {
            let (value, t) = self.expr(a, out, Some(&want));
            if !want.accepts(&t) {
                let s = &name.name;
                self.error(
                    a.span,
                    format!("field '{field}' of {s} is {want}, given {t}"),
                );
            }
            out.push(Stmt::StructSet {
                target: dst,
                field,
                value,
                at,
            });
        }
    }

    /// `call`, where what the call finds is known already; the types of
    /// its results, the type variables bound by the arguments (none when
    /// it could not be made).
    fn call_resolved(
        &mut self,
        e: &Expr,
        resolved: Resolved,
        outs: Option<&[(VarId, Type)]>,
        out: &mut Vec<Stmt>,
    ) -> Vec<Type> {
        let (name, args, annotations) = call_parts(e);
        let (ir_name, sig) = match resolved {
            Resolved::Found(sig, ir_name) => (ir_name, sig),
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
                return Vec::new();
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
                return Vec::new();
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
            return Vec::new();
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
        // What the arguments bind the callee's type variables to.
        let mut bound = HashMap::new();
        let mut same: Option<Type> = None;
        // Arguments sharing one type, ints and floats mixed (Swift/T's
        // `assertEqual(n, 2.0)` with an int `n`): floats, the ints
        // converted once all are lowered.
        let mut mixed = false;
        let mut same_ints = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let kind = sig.inputs.get(i).cloned().unwrap_or(ParamKind::Any);
            let hint = match &kind {
                ParamKind::Is(t) => Some(t.bound(&bound)),
                ParamKind::Same => same.clone(),
                _ => None,
            };
            let (id, t) = self.expr(a, out, hint.as_ref());
            // Arguments sharing a type are compared as their bases.
            let t = match kind {
                ParamKind::Same => t.base().clone(),
                _ => t,
            };
            if matches!(kind, ParamKind::Same) && t == Type::Int {
                same_ints.push(i);
            }
            let ok = match &kind {
                ParamKind::Is(want) => want.binds(&t, &mut bound),
                ParamKind::Any => t != Type::Void,
                ParamKind::AnyArray => t.is_array() || t == Type::Error,
                ParamKind::Same => match &same {
                    Some(s) if s.accepts(&t) => true,
                    Some(s) if numeric_pair(s, &t) => {
                        mixed = true;
                        true
                    }
                    Some(_) => false,
                    None => {
                        same = Some(t.clone());
                        true
                    }
                },
            };
            if !ok {
                let want = match kind {
                    ParamKind::Is(w) => w.bound(&bound).to_string(),
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
        for i in same_ints.into_iter().filter(|_| mixed) {
            let float = self.temp(Type::Float, out);
            let int = arg_ids[i];
            self.builtin(
                vec![float],
                Pure::IntToFloat.into(),
                vec![int],
                args[i].span,
                out,
            );
            arg_ids[i] = float;
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
                "par" if !sig.app => {
                    self.error(
                        a.span,
                        format!(
                            "@par applies to app functions (their program runs as an MPI job); '{}' is not one",
                            name.name
                        ),
                    );
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
        let results: Vec<Type> = sig.outputs.iter().map(|t| t.bound(&bound)).collect();
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
                for ((_, want), got) in o.iter().zip(&results) {
                    if !want.accepts(got) {
                        self.error(
                            e.span,
                            format!("expected {want}, but '{}' returns {got}", name.name),
                        );
                    }
                }
                o.iter().map(|(id, _)| *id).collect()
            }
            // A builtin's results nobody reads are not made at all; a
            // function's are, for its body to write.
            None if sig.builtin.is_some() => Vec::new(),
            None => results.iter().map(|t| self.temp(t.clone(), out)).collect(),
        };
        match sig.builtin {
            Some(op) => self.builtin(out_ids, op, arg_ids, name.span, out),
            None => {
                // An updateable given to a function is updated by it: it
                // goes among the call's outputs (after the results), so
                // the call counts as one of its writers.
                let mut out_ids = out_ids;
                let updated = (0..arg_ids.len()).rev().filter(|&i| {
                    matches!(sig.inputs.get(i), Some(ParamKind::Is(Type::Updateable)))
                });
                let mut given: Vec<VarId> = updated.map(|i| arg_ids.remove(i)).collect();
                given.reverse();
                out_ids.extend(given);
                // The globals it reads, as they are here.
                for global in &sig.globals {
                    match self.lookup(global) {
                        Some(l) => arg_ids.push(l.id),
                        None => self.error(
                            name.span,
                            format!("'{}' reads top-level variable '{global}', which is not declared before this call", name.name),
                        ),
                    }
                }
                let at = self.pos(name.span);
                out.push(Stmt::Call {
                    func: ir_name.unwrap_or_else(|| name.name.clone()),
                    outs: out_ids,
                    args: arg_ids,
                    opts,
                    at,
                });
            }
        }
        results
    }

    /// A call's arguments in parameter order: keyword arguments (`x=1`)
    /// put in their parameter's place and the defaults of parameters left
    /// out after them filled in. `None` (reported, the arguments lowered
    /// for their own errors) if they do not fit the parameters.
    pub(super) fn bind_args<'e>(
        &mut self,
        callee: &str,
        sig: &'e FnSig,
        args: &'e [Expr],
        out: &mut Vec<Stmt>,
    ) -> Option<Vec<&'e Expr>> {
        let keyword = |a: &Expr| matches!(a.kind, ExprKind::Keyword(..));
        if !args.iter().any(keyword) && sig.defaults.iter().skip(args.len()).all(Option::is_none) {
            return Some(args.iter().collect());
        }
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
            if i < sig.required {
                // Swift/T: keywords name optional parameters only.
                self.error(
                    key.span,
                    format!(
                        "parameter '{}' of '{callee}' has no default: give it by position",
                        key.name
                    ),
                );
                ok = false;
            }
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
    pub(super) fn app_word(&mut self, w: &Expr, out: &mut Vec<Stmt>) -> ir::Word {
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

/// The name, arguments and annotations of call expression `e`.
fn call_parts(e: &Expr) -> (&Ident, &[Expr], &[ast::Annotation]) {
    let ExprKind::Call {
        name,
        args,
        annotations,
    } = &e.kind
    else {
        unreachable!("a call")
    };
    (name, args, annotations)
}

/// Whether one of `a` and `b` is int and the other float.
fn numeric_pair(a: &Type, b: &Type) -> bool {
    matches!((a, b), (Type::Int, Type::Float) | (Type::Float, Type::Int))
}
