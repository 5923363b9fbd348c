//! Recursive-descent parser. On an error it records a diagnostic, skips to
//! the end of the statement, and goes on, so one run reports every
//! independent syntax error.

use crate::ast::*;
use crate::diag::Diagnostic;
use crate::lexer::{Tok, Token};
use crate::source::Span;

/// Nesting deeper than this is refused rather than overflowing the stack.
const MAX_DEPTH: u32 = 100;

/// A switch's cases (labels, body) and its default body.
type SwitchArms = (Vec<(Vec<Expr>, Block)>, Option<Block>);

pub(crate) fn parse(tokens: Vec<Token>) -> (Program, Vec<Diagnostic>) {
    let mut p = Parser {
        toks: tokens,
        pos: 0,
        diags: Vec::new(),
        depth: 0,
    };
    let mut items = Vec::new();
    while !p.at_eof() {
        if p.eat_sym(";") {
            continue;
        }
        let before = p.pos;
        match p.item() {
            Ok(item) => items.push(item),
            Err(()) => p.skip_statement(before, true),
        }
        if p.pos == before {
            p.pos += 1;
        }
    }
    (Program { items }, p.diags)
}

type PResult<T> = Result<T, ()>;

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    diags: Vec<Diagnostic>,
    depth: u32,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("'{s}'"),
        Tok::Int(v) => format!("'{v}'"),
        Tok::Float(v) => format!("'{v}'"),
        Tok::Str(_) => "a string".into(),
        Tok::Sym(s) => format!("'{s}'"),
        Tok::Eof => "end of file".into(),
    }
}

impl Parser {
    fn tok(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }

    fn tok_at(&self, ahead: usize) -> &Tok {
        &self.toks[(self.pos + ahead).min(self.toks.len() - 1)].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos.min(self.toks.len() - 1)].span
    }

    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1).min(self.toks.len() - 1)].span
    }

    fn at_eof(&self) -> bool {
        matches!(self.tok(), Tok::Eof)
    }

    fn bump(&mut self) {
        if !self.at_eof() {
            self.pos += 1;
        }
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(self.tok(), Tok::Sym(x) if *x == s)
    }

    fn is_sym_at(&self, ahead: usize, s: &str) -> bool {
        matches!(self.tok_at(ahead), Tok::Sym(x) if *x == s)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.tok(), Tok::Ident(x) if x == w)
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        if self.is_sym(s) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn eat_word(&mut self, w: &str) -> bool {
        if self.is_word(w) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn error<T>(&mut self, msg: impl Into<String>) -> PResult<T> {
        let span = self.span();
        self.diags.push(Diagnostic::new(span, msg));
        Err(())
    }

    fn expected<T>(&mut self, what: &str) -> PResult<T> {
        let found = describe(self.tok());
        self.error(format!("expected {what}, found {found}"))
    }

    fn expect_sym(&mut self, s: &str) -> PResult<()> {
        if self.eat_sym(s) {
            Ok(())
        } else {
            self.expected(&format!("'{s}'"))
        }
    }

    fn ident(&mut self) -> PResult<Ident> {
        match self.tok().clone() {
            Tok::Ident(name) => {
                let span = self.span();
                self.bump();
                Ok(Ident { name, span })
            }
            _ => self.expected("a name"),
        }
    }

    fn string(&mut self) -> PResult<String> {
        match self.tok().clone() {
            Tok::Str(s) => {
                self.bump();
                Ok(s)
            }
            _ => self.expected("a string"),
        }
    }

    /// After an error in the statement that began at token `from`, skips to
    /// its end: the `;` or `}` that closes it at its own nesting depth. A `}`
    /// closing the enclosing block is left for the block, unless
    /// `top_level` (there is none).
    fn skip_statement(&mut self, from: usize, top_level: bool) {
        let mut depth: i32 = 0;
        for t in &self.toks[from..self.pos.min(self.toks.len())] {
            match t.tok {
                Tok::Sym("{") => depth += 1,
                Tok::Sym("}") => depth -= 1,
                _ => {}
            }
        }
        while !self.at_eof() {
            match self.tok() {
                Tok::Sym("{") => depth += 1,
                Tok::Sym("}") => {
                    if depth <= 0 && !top_level {
                        return;
                    }
                    depth -= 1;
                    if depth <= 0 {
                        self.bump();
                        return;
                    }
                }
                Tok::Sym(";") if depth <= 0 => {
                    self.bump();
                    return;
                }
                _ => {}
            }
            self.bump();
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.error("nesting too deep");
        }
        Ok(())
    }

    // ---- items ----

    fn item(&mut self) -> PResult<Item> {
        let start = self.span();
        if self.eat_word("import") {
            let mut path = vec![self.ident()?];
            while self.eat_sym(".") {
                path.push(self.ident()?);
            }
            self.expect_sym(";")?;
            return Ok(Item::Import {
                path,
                span: start.to(self.prev_span()),
            });
        }
        if self.is_word("type")
            && matches!(self.tok_at(1), Tok::Ident(_))
            && matches!(self.tok_at(2), Tok::Ident(_))
        {
            // `type name existing;`: a subtype of `existing`.
            self.bump();
            let name = self.ident()?;
            let ty = self.type_ref()?;
            self.expect_sym(";")?;
            return Ok(Item::Typedef {
                name,
                ty,
                sub: true,
            });
        }
        if self.eat_word("typedef") {
            let name = self.ident()?;
            let ty = self.type_ref()?;
            self.expect_sym(";")?;
            return Ok(Item::Typedef {
                name,
                ty,
                sub: false,
            });
        }
        if self.is_word("type") && matches!(self.tok_at(1), Tok::Ident(_)) && self.is_sym_at(2, "{")
        {
            self.bump();
            let name = self.ident()?;
            self.expect_sym("{")?;
            let mut fields = Vec::new();
            while !self.eat_sym("}") {
                if self.at_eof() {
                    return self.expected("'}'");
                }
                fields.push(self.param()?);
                self.expect_sym(";")?;
            }
            return Ok(Item::Struct { name, fields });
        }
        if self.is_word("main")
            && (self.is_sym_at(1, "{") || (self.is_sym_at(1, "(") && self.is_sym_at(2, ")")))
        {
            self.bump();
            if self.eat_sym("(") {
                self.expect_sym(")")?;
            }
            let body = self.block()?;
            return Ok(Item::Main {
                body,
                span: start.to(self.prev_span()),
            });
        }
        let annotations = self.annotations()?;
        if self.eat_sym("<") {
            // `<T> (T o) f(T i) …`: a definition over any type T.
            let mut type_params = vec![self.ident()?];
            while self.eat_sym(",") {
                type_params.push(self.ident()?);
            }
            self.expect_sym(">")?;
            let annotations = [annotations, self.annotations()?].concat();
            let mut f = self.func_def(annotations, start)?;
            f.type_params = type_params;
            return Ok(Item::Func(f));
        }
        if self.is_word("app") || self.starts_func_def() || self.starts_outputless_def() {
            return self.func_def(annotations, start).map(Item::Func);
        }
        self.stmt_after_annotations(annotations, start)
            .map(Item::Stmt)
    }

    /// `( … ) name (` starts a composite or leaf function definition.
    fn starts_func_def(&self) -> bool {
        if !self.is_sym("(") {
            return false;
        }
        self.after_parens(self.pos).is_some_and(|i| {
            matches!(self.toks.get(i).map(|t| &t.tok), Some(Tok::Ident(_)))
                && matches!(self.toks.get(i + 1).map(|t| &t.tok), Some(Tok::Sym("(")))
        })
    }

    /// `name ( … ) {` or `name ( … ) "package"` at top level starts a
    /// function without outputs (a call there ends with `;`).
    fn starts_outputless_def(&self) -> bool {
        const STATEMENTS: [&str; 7] = ["if", "switch", "for", "foreach", "wait", "iterate", "main"];
        match self.tok() {
            Tok::Ident(w) if !STATEMENTS.contains(&w.as_str()) && self.is_sym_at(1, "(") => {}
            _ => return false,
        }
        match self.after_parens(self.pos + 1) {
            Some(i) => matches!(
                self.toks.get(i).map(|t| &t.tok),
                Some(Tok::Sym("{") | Tok::Str(_))
            ),
            None => false,
        }
    }

    /// The index after the parenthesis matching the one at `open`.
    fn after_parens(&self, open: usize) -> Option<usize> {
        let mut depth = 0;
        for (i, t) in self.toks.iter().enumerate().skip(open) {
            match &t.tok {
                Tok::Sym("(") => depth += 1,
                Tok::Sym(")") => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                Tok::Eof | Tok::Sym(";" | "{" | "}") => return None,
                _ => {}
            }
        }
        None
    }

    fn type_ref(&mut self) -> PResult<TypeRef> {
        let base = self.ident()?;
        let dims = self.dims()?;
        Ok(TypeRef { base, dims })
    }

    fn dims(&mut self) -> PResult<Vec<Option<Ident>>> {
        let mut dims = Vec::new();
        while self.is_sym("[")
            && (self.is_sym_at(1, "]")
                || (matches!(self.tok_at(1), Tok::Ident(_)) && self.is_sym_at(2, "]")))
        {
            self.bump();
            if self.eat_sym("]") {
                dims.push(None);
            } else {
                dims.push(Some(self.ident()?));
                self.expect_sym("]")?;
            }
        }
        Ok(dims)
    }

    fn param(&mut self) -> PResult<Param> {
        let base = self.ident()?;
        let name = self.ident()?;
        let dims = self.dims()?;
        let default = if self.eat_sym("=") {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(Param {
            ty: TypeRef { base, dims },
            name,
            default,
        })
    }

    fn params(&mut self) -> PResult<Vec<Param>> {
        self.expect_sym("(")?;
        let mut out = Vec::new();
        // `()` and `(void)` both declare no parameters.
        if self.eat_sym(")")
            || (self.is_word("void")
                && self.is_sym_at(1, ")")
                && self.eat_word("void")
                && self.eat_sym(")"))
        {
            return Ok(out);
        }
        loop {
            out.push(self.param()?);
            if self.eat_sym(")") {
                return Ok(out);
            }
            self.expect_sym(",")?;
        }
    }

    fn annotations(&mut self) -> PResult<Vec<Annotation>> {
        let mut out = Vec::new();
        while self.is_sym("@") {
            let start = self.span();
            self.bump();
            let name = self.ident()?;
            let value = if !self.eat_sym("=") {
                None
            } else if name.name == "dispatch" {
                // `@dispatch=WORKER (int o) f(…)`: a bare mode, never a call.
                let mode = self.ident()?;
                Some(Expr {
                    kind: ExprKind::Var(mode.name),
                    span: mode.span,
                })
            } else {
                Some(self.postfix()?)
            };
            out.push(Annotation {
                name,
                value,
                span: start.to(self.prev_span()),
            });
        }
        Ok(out)
    }

    fn func_def(&mut self, annotations: Vec<Annotation>, start: Span) -> PResult<FuncDef> {
        let is_app = self.eat_word("app");
        let outputs = if self.is_sym("(") {
            self.params()?
        } else {
            Vec::new()
        };
        let name = self.ident()?;
        let inputs = self.params()?;
        let body = if is_app {
            FuncBody::App(Box::new(self.app_body()?))
        } else if self.is_sym("{") {
            FuncBody::Composite(self.block()?)
        } else if matches!(self.tok(), Tok::Str(_)) {
            let package = self.string()?;
            let version = self.string()?;
            let target = if self.eat_sym("[") {
                let t = self.string()?;
                self.expect_sym("]")?;
                t
            } else {
                self.string()?
            };
            self.expect_sym(";")?;
            FuncBody::Leaf {
                package,
                version,
                target,
            }
        } else {
            return self.expected("a function body");
        };
        Ok(FuncDef {
            annotations,
            type_params: Vec::new(),
            name,
            outputs,
            inputs,
            body,
            span: start.to(self.prev_span()),
        })
    }

    fn app_body(&mut self) -> PResult<AppBody> {
        self.expect_sym("{")?;
        let mut body = AppBody {
            words: Vec::new(),
            stdin: None,
            stdout: None,
            stderr: None,
        };
        loop {
            if self.eat_sym("}") {
                return Ok(body);
            }
            if self.eat_sym(";") {
                continue;
            }
            if self.at_eof() {
                return self.expected("'}'");
            }
            if self.is_sym("@") {
                let at = self.span();
                self.bump();
                if let Tok::Ident(w) = self.tok().clone() {
                    if matches!(w.as_str(), "stdin" | "stdout" | "stderr") && self.is_sym_at(1, "=")
                    {
                        self.bump();
                        self.bump();
                        let e = self.app_word()?;
                        let slot = match w.as_str() {
                            "stdin" => &mut body.stdin,
                            "stdout" => &mut body.stdout,
                            _ => &mut body.stderr,
                        };
                        *slot = Some(e);
                        continue;
                    }
                }
                let e = self.app_word()?;
                let span = at.to(e.span);
                body.words.push(Expr {
                    kind: ExprKind::FileName(Box::new(e)),
                    span,
                });
                continue;
            }
            body.words.push(self.app_word()?);
        }
    }

    // ---- statements ----

    fn block(&mut self) -> PResult<Block> {
        self.expect_sym("{")?;
        self.enter()?;
        let mut stmts = Vec::new();
        loop {
            if self.eat_sym("}") {
                break;
            }
            if self.at_eof() {
                self.depth -= 1;
                return self.expected("'}'");
            }
            if self.eat_sym(";") {
                // An empty statement.
                continue;
            }
            let before = self.pos;
            match self.stmt() {
                Ok(s) => stmts.push(s),
                Err(()) => self.skip_statement(before, false),
            }
            if self.pos == before {
                self.bump();
            }
        }
        self.depth -= 1;
        Ok(stmts)
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        let start = self.span();
        let annotations = self.annotations()?;
        self.stmt_after_annotations(annotations, start)
    }

    fn stmt_after_annotations(
        &mut self,
        annotations: Vec<Annotation>,
        start: Span,
    ) -> PResult<Stmt> {
        if self.is_word("foreach") {
            return self.foreach(annotations, start);
        }
        if !annotations.is_empty() {
            // Annotations before anything but a loop belong to a call.
            let e = self.call_with(annotations)?;
            return self.finish_simple(StmtKind::Expr(e), start);
        }
        let kind = match self.tok() {
            Tok::Sym("{") => StmtKind::Block(self.block()?),
            Tok::Ident(w) if w == "if" => return self.if_stmt(start),
            Tok::Ident(w) if w == "switch" => return self.switch_stmt(start),
            Tok::Ident(w) if w == "for" && self.is_sym_at(1, "(") => return self.for_stmt(start),
            Tok::Ident(w) if w == "wait" => return self.wait_stmt(start),
            Tok::Ident(w) if w == "iterate" && matches!(self.tok_at(1), Tok::Ident(_)) => {
                return self.iterate(start)
            }
            _ => self.simple()?,
        };
        if matches!(kind, StmtKind::Block(_)) {
            return Ok(Stmt {
                kind,
                span: start.to(self.prev_span()),
            });
        }
        self.finish_simple(kind, start)
    }

    /// A simple statement, then `=> stmt`s or `;`.
    fn finish_simple(&mut self, kind: StmtKind, start: Span) -> PResult<Stmt> {
        let first = Stmt {
            kind,
            span: start.to(self.prev_span()),
        };
        if self.is_sym("=>") {
            let mut chain = vec![first];
            while self.eat_sym("=>") {
                let s = self.span();
                if self.is_sym("{") {
                    let b = self.block()?;
                    chain.push(Stmt {
                        kind: StmtKind::Block(b),
                        span: s.to(self.prev_span()),
                    });
                } else {
                    let annotations = self.annotations()?;
                    let kind = if annotations.is_empty() {
                        self.simple()?
                    } else {
                        StmtKind::Expr(self.call_with(annotations)?)
                    };
                    chain.push(Stmt {
                        kind,
                        span: s.to(self.prev_span()),
                    });
                }
            }
            self.eat_sym(";");
            return Ok(Stmt {
                kind: StmtKind::Chain(chain),
                span: start.to(self.prev_span()),
            });
        }
        self.expect_sym(";")?;
        Ok(first)
    }

    /// Declaration, assignment or call, without the terminator.
    fn simple(&mut self) -> PResult<StmtKind> {
        let global = self.is_word("global") && self.is_word_at(1, "const");
        if global {
            self.bump();
            self.bump();
        }
        let generic = self.is_word("bag") && self.is_sym_at(1, "<");
        if generic || matches!(self.tok(), Tok::Ident(_)) && matches!(self.tok_at(1), Tok::Ident(_))
        {
            return self.decl(global);
        }
        if global {
            return self.expected("a declaration after 'global const'");
        }
        if matches!(self.tok(), Tok::Ident(_)) && self.is_sym_at(1, "=>") {
            // `v => …`: what follows waits for v (a `void` signal, say).
            let v = self.ident()?;
            return Ok(StmtKind::Wait {
                deep: false,
                on: vec![Expr {
                    kind: ExprKind::Var(v.name),
                    span: v.span,
                }],
                body: Vec::new(),
            });
        }
        if self.is_sym("(") {
            // `(a, b) = f(…)`: tried first, undone if it is not that.
            let (save, ndiags) = (self.pos, self.diags.len());
            if let Ok(targets) = self.tuple_targets() {
                if self.eat_sym("=") {
                    let value = self.expr_list()?;
                    return Ok(StmtKind::Assign { targets, value });
                }
            }
            self.pos = save;
            self.diags.truncate(ndiags);
        }
        if matches!(self.tok(), Tok::Ident(_))
            && self.is_sym_at(1, "<")
            && matches!(self.tok_at(2), Tok::Ident(_))
            && self.is_sym_at(3, ">")
            && self.is_sym_at(4, ":")
            && self.is_sym_at(5, "=")
        {
            // `x <incr> := v;`
            let target = self.ident()?;
            self.bump();
            let op = self.ident()?;
            for _ in 0..3 {
                self.bump();
            }
            let value = self.expr()?;
            return Ok(StmtKind::Update { target, op, value });
        }
        if matches!(self.tok(), Tok::Ident(_)) && !self.is_sym_at(1, "(") {
            // `a = e;`, or `a, b = f();` and `a, b = 1, 2;`, or `b += v;`
            let mut targets = vec![self.lvalue()?];
            if self.is_sym("+") && self.is_sym_at(1, "=") {
                self.bump();
                self.bump();
                let value = self.expr()?;
                let target = targets.pop().expect("one target");
                return Ok(StmtKind::Append { target, value });
            }
            while self.eat_sym(",") {
                targets.push(self.lvalue()?);
            }
            self.expect_sym("=")?;
            let value = self.expr_list()?;
            return Ok(StmtKind::Assign { targets, value });
        }
        let e = self.expr()?;
        if !matches!(e.kind, ExprKind::Call { .. }) {
            self.diags.push(Diagnostic::new(
                e.span,
                "this expression does nothing: only calls can be statements",
            ));
            return Err(());
        }
        Ok(StmtKind::Expr(e))
    }

    /// One expression, or several separated by commas as one tuple.
    fn expr_list(&mut self) -> PResult<Expr> {
        let first = self.expr()?;
        if !self.is_sym(",") {
            return Ok(first);
        }
        let start = first.span;
        let mut items = vec![first];
        while self.eat_sym(",") {
            items.push(self.expr()?);
        }
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span: start.to(self.prev_span()),
        })
    }

    fn tuple_targets(&mut self) -> PResult<Vec<LValue>> {
        self.expect_sym("(")?;
        let mut targets = Vec::new();
        loop {
            targets.push(self.lvalue()?);
            if self.eat_sym(")") {
                return Ok(targets);
            }
            self.expect_sym(",")?;
        }
    }

    fn is_word_at(&self, ahead: usize, w: &str) -> bool {
        matches!(self.tok_at(ahead), Tok::Ident(x) if x == w)
    }

    fn lvalue(&mut self) -> PResult<LValue> {
        let var = LValue::Var(self.ident()?);
        let mut links = 0;
        let lv = self.lvalue_links(var, &mut links);
        self.depth -= links;
        lv
    }

    /// The indices and fields after a target's variable, each link counted
    /// against the nesting limit (as in `postfix`).
    fn lvalue_links(&mut self, mut lv: LValue, links: &mut u32) -> PResult<LValue> {
        loop {
            if self.is_sym("[") || self.is_sym(".") {
                *links += 1;
                self.enter()?;
            }
            if self.is_sym("[") {
                let s = self.span();
                self.bump();
                let idx = self.expr()?;
                self.expect_sym("]")?;
                lv = LValue::Index(Box::new(lv), idx, s.to(self.prev_span()));
            } else if self.eat_sym(".") {
                lv = LValue::Field(Box::new(lv), self.ident()?);
            } else {
                return Ok(lv);
            }
        }
    }

    fn decl(&mut self, global: bool) -> PResult<StmtKind> {
        let mut ty = self.ident()?;
        // `bag<T> b`: an unordered collection of T, kept as an array of T
        // whose members get new keys.
        let bag = ty.name == "bag" && self.eat_sym("<");
        if bag {
            ty = self.ident()?;
            self.expect_sym(">")?;
        }
        let mut vars = Vec::new();
        loop {
            let name = self.ident()?;
            let mut dims = self.dims()?;
            if bag {
                dims.insert(0, None);
            }
            let mapping = if self.eat_sym("<") {
                let m = self.additive()?;
                self.expect_sym(">")?;
                Some(m)
            } else {
                None
            };
            let init = if self.eat_sym("=") {
                Some(self.expr()?)
            } else {
                None
            };
            vars.push(DeclVar {
                name,
                dims,
                mapping,
                init,
            });
            if !self.eat_sym(",") {
                return Ok(StmtKind::Decl { ty, vars, global });
            }
        }
    }

    fn if_stmt(&mut self, start: Span) -> PResult<Stmt> {
        self.bump();
        self.expect_sym("(")?;
        let cond = self.expr()?;
        self.expect_sym(")")?;
        let then = self.block()?;
        let otherwise = if self.eat_word("else") {
            if self.is_word("if") {
                // The IR nests each `else if` in the previous one's `else`:
                // a chain counts against the nesting limit like any block.
                let s = self.span();
                self.enter()?;
                let chained = self.if_stmt(s);
                self.depth -= 1;
                Some(vec![chained?])
            } else {
                Some(self.block()?)
            }
        } else {
            None
        };
        Ok(Stmt {
            kind: StmtKind::If {
                cond,
                then,
                otherwise,
            },
            span: start.to(self.prev_span()),
        })
    }

    fn switch_stmt(&mut self, start: Span) -> PResult<Stmt> {
        self.bump();
        self.expect_sym("(")?;
        let scrutinee = self.expr()?;
        self.expect_sym(")")?;
        self.expect_sym("{")?;
        self.enter()?;
        let arms = self.switch_arms();
        self.depth -= 1;
        let (cases, default) = arms?;
        Ok(Stmt {
            kind: StmtKind::Switch {
                scrutinee,
                cases,
                default,
            },
            span: start.to(self.prev_span()),
        })
    }

    /// A switch's cases and default, up to its closing `}`.
    fn switch_arms(&mut self) -> PResult<SwitchArms> {
        let mut cases = Vec::new();
        let mut default = None;
        loop {
            if self.eat_sym("}") {
                break;
            }
            let labels = if self.eat_word("default") {
                None
            } else if self.eat_word("case") {
                let mut labels = vec![self.unary()?];
                self.expect_sym(":")?;
                while self.eat_word("case") {
                    labels.push(self.unary()?);
                    self.expect_sym(":")?;
                }
                Some(labels)
            } else {
                return self.expected("'case', 'default' or '}'");
            };
            if labels.is_none() {
                self.expect_sym(":")?;
            }
            let mut body = Vec::new();
            while !self.is_word("case") && !self.is_word("default") && !self.is_sym("}") {
                if self.at_eof() {
                    return self.expected("'}'");
                }
                let before = self.pos;
                match self.stmt() {
                    Ok(s) => body.push(s),
                    Err(()) => self.skip_statement(before, false),
                }
                if self.pos == before {
                    self.bump();
                }
            }
            match labels {
                Some(l) => cases.push((l, body)),
                None => default = Some(body),
            }
        }
        Ok((cases, default))
    }

    fn foreach(&mut self, annotations: Vec<Annotation>, start: Span) -> PResult<Stmt> {
        self.bump();
        let value = self.ident()?;
        let index = if self.eat_sym(",") {
            Some(self.ident()?)
        } else {
            None
        };
        if !self.eat_word("in") {
            return self.expected("'in'");
        }
        let source = self.expr()?;
        let body = self.block()?;
        Ok(Stmt {
            kind: StmtKind::Foreach {
                annotations,
                value,
                index,
                source,
                body,
            },
            span: start.to(self.prev_span()),
        })
    }

    fn for_stmt(&mut self, start: Span) -> PResult<Stmt> {
        self.bump();
        self.expect_sym("(")?;
        let mut init = Vec::new();
        if !self.is_sym(";") {
            loop {
                let base = match self.tok_at(1) {
                    Tok::Ident(_) => Some(self.ident()?),
                    _ => None,
                };
                let name = self.ident()?;
                let ty = match base {
                    Some(base) => Some(TypeRef {
                        base,
                        dims: self.dims()?,
                    }),
                    None => None,
                };
                self.expect_sym("=")?;
                init.push(ForVar {
                    ty,
                    name,
                    init: self.expr()?,
                });
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_sym(";")?;
        let cond = self.expr()?;
        self.expect_sym(";")?;
        let mut update = Vec::new();
        if !self.is_sym(")") {
            loop {
                let name = self.ident()?;
                self.expect_sym("=")?;
                update.push((name, self.expr()?));
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_sym(")")?;
        let body = self.block()?;
        Ok(Stmt {
            kind: StmtKind::For {
                init,
                cond,
                update,
                body,
            },
            span: start.to(self.prev_span()),
        })
    }

    /// `iterate v { … } until (cond);`
    fn iterate(&mut self, start: Span) -> PResult<Stmt> {
        self.bump();
        let var = self.ident()?;
        let body = self.block()?;
        if !self.eat_word("until") {
            return self.expected("'until'");
        }
        self.expect_sym("(")?;
        let until = self.expr()?;
        self.expect_sym(")")?;
        self.expect_sym(";")?;
        Ok(Stmt {
            kind: StmtKind::Iterate { var, body, until },
            span: start.to(self.prev_span()),
        })
    }

    fn wait_stmt(&mut self, start: Span) -> PResult<Stmt> {
        self.bump();
        let deep = self.eat_word("deep");
        self.expect_sym("(")?;
        let mut on = Vec::new();
        if !self.is_sym(")") {
            loop {
                on.push(self.expr()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_sym(")")?;
        let body = self.block()?;
        Ok(Stmt {
            kind: StmtKind::Wait { deep, on, body },
            span: start.to(self.prev_span()),
        })
    }

    // ---- expressions ----

    pub(crate) fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let e = self.binary(0);
        self.depth -= 1;
        e
    }

    /// Operators by precedence level, loosest first (Swift/T's order).
    const LEVELS: &'static [&'static [(&'static str, BinOp)]] = &[
        &[("||", BinOp::Or)],
        &[("&&", BinOp::And)],
        &[("==", BinOp::Eq), ("!=", BinOp::Ne)],
        &[
            ("<", BinOp::Lt),
            ("<=", BinOp::Le),
            (">", BinOp::Gt),
            (">=", BinOp::Ge),
        ],
        &[("+", BinOp::Add), ("-", BinOp::Sub)],
        &[
            ("*", BinOp::Mul),
            ("/", BinOp::Div),
            ("%/", BinOp::IntDiv),
            ("%%", BinOp::Mod),
            ("%", BinOp::Format),
        ],
    ];

    fn binary(&mut self, level: usize) -> PResult<Expr> {
        if level == Self::LEVELS.len() {
            return self.power();
        }
        let mut lhs = self.binary(level + 1)?;
        // Each link of a chain deepens the (left-leaning) tree: count it
        // against the nesting limit too.
        let mut links = 0;
        let result = loop {
            let op = Self::LEVELS[level]
                .iter()
                .find(|(s, _)| self.is_sym(s))
                .map(|&(_, op)| op);
            let Some(op) = op else { break Ok(lhs) };
            self.bump();
            links += 1;
            if self.enter().is_err() {
                break Err(());
            }
            let rhs = match self.binary(level + 1) {
                Ok(r) => r,
                Err(()) => break Err(()),
            };
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        };
        self.depth -= links;
        result
    }

    /// Additive level and tighter: mapping expressions, where `>` closes.
    fn additive(&mut self) -> PResult<Expr> {
        self.binary(4)
    }

    fn power(&mut self) -> PResult<Expr> {
        let base = self.unary()?;
        if self.eat_sym("**") {
            self.enter()?;
            let exp = self.power();
            self.depth -= 1;
            let exp = exp?;
            let span = base.span.to(exp.span);
            return Ok(Expr {
                kind: ExprKind::Binary(BinOp::Pow, Box::new(base), Box::new(exp)),
                span,
            });
        }
        Ok(base)
    }

    fn unary(&mut self) -> PResult<Expr> {
        let start = self.span();
        let op = if self.eat_sym("!") {
            UnOp::Not
        } else if self.eat_sym("-") {
            UnOp::Neg
        } else {
            return self.postfix();
        };
        self.enter()?;
        let e = self.unary();
        self.depth -= 1;
        let e = e?;
        let span = start.to(e.span);
        Ok(Expr {
            kind: ExprKind::Unary(op, Box::new(e)),
            span,
        })
    }

    fn postfix(&mut self) -> PResult<Expr> {
        self.postfix_in(false)
    }

    /// One word of an app's command line: as `postfix`, but a `[` after a
    /// space starts the next word (`"echo" [a, b]` is two words, `A[i]`
    /// one), as in Swift/T's command lines.
    fn app_word(&mut self) -> PResult<Expr> {
        self.postfix_in(true)
    }

    fn postfix_in(&mut self, words: bool) -> PResult<Expr> {
        let e = self.primary()?;
        let mut links = 0;
        let e = self.postfix_links(e, words, &mut links);
        self.depth -= links;
        e
    }

    /// The indices and fields after a primary expression. Each link deepens
    /// the (left-leaning) tree every later pass walks: count it against the
    /// nesting limit too.
    fn postfix_links(&mut self, mut e: Expr, words: bool, links: &mut u32) -> PResult<Expr> {
        loop {
            if words && self.is_sym("[") && self.span().start != self.prev_span().end {
                return Ok(e);
            }
            let link =
                self.is_sym("[") || (self.is_sym(".") && matches!(self.tok_at(1), Tok::Ident(_)));
            if link {
                *links += 1;
                self.enter()?;
            }
            if self.is_sym("[") {
                self.bump();
                let idx = self.expr()?;
                self.expect_sym("]")?;
                let span = e.span.to(self.prev_span());
                e = Expr {
                    kind: ExprKind::Index(Box::new(e), Box::new(idx)),
                    span,
                };
            } else if self.is_sym(".") && matches!(self.tok_at(1), Tok::Ident(_)) {
                self.bump();
                let field = self.ident()?;
                let span = e.span.to(field.span);
                e = Expr {
                    kind: ExprKind::Field(Box::new(e), field),
                    span,
                };
            } else {
                return Ok(e);
            }
        }
    }

    /// A call preceded by call annotations (`@location=L f(x)`).
    fn call_with(&mut self, annotations: Vec<Annotation>) -> PResult<Expr> {
        let start = annotations.first().map_or(self.span(), |a| a.span);
        let name = self.ident()?;
        if !self.is_sym("(") {
            return self.expected("a call after the annotations");
        }
        let args = self.args()?;
        Ok(Expr {
            kind: ExprKind::Call {
                name,
                args,
                annotations,
            },
            span: start.to(self.prev_span()),
        })
    }

    fn args(&mut self) -> PResult<Vec<Expr>> {
        self.expect_sym("(")?;
        let mut args = Vec::new();
        if self.eat_sym(")") {
            return Ok(args);
        }
        loop {
            let start = self.span();
            if matches!(self.tok(), Tok::Ident(_)) && self.is_sym_at(1, "=") {
                let name = self.ident()?;
                self.expect_sym("=")?;
                let value = self.expr()?;
                args.push(Expr {
                    kind: ExprKind::Keyword(name, Box::new(value)),
                    span: start.to(self.prev_span()),
                });
            } else {
                args.push(self.expr()?);
            }
            if self.eat_sym(")") {
                return Ok(args);
            }
            self.expect_sym(",")?;
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let start = self.span();
        let lit = |kind| Expr { kind, span: start };
        match self.tok().clone() {
            Tok::Int(v) => {
                self.bump();
                Ok(lit(ExprKind::Int(v)))
            }
            Tok::Float(v) => {
                self.bump();
                Ok(lit(ExprKind::Float(v)))
            }
            Tok::Str(s) => {
                self.bump();
                Ok(lit(ExprKind::Str(s)))
            }
            Tok::Ident(w) if w == "true" || w == "false" => {
                self.bump();
                Ok(lit(ExprKind::Bool(w == "true")))
            }
            Tok::Ident(_) => {
                let name = self.ident()?;
                if self.is_sym("(") {
                    let args = self.args()?;
                    return Ok(Expr {
                        kind: ExprKind::Call {
                            name,
                            args,
                            annotations: Vec::new(),
                        },
                        span: start.to(self.prev_span()),
                    });
                }
                Ok(Expr {
                    kind: ExprKind::Var(name.name),
                    span: name.span,
                })
            }
            // `@f(x)`: Swift/K's mark of a call, ignored by Swift/T too.
            Tok::Sym("@") if matches!(self.tok_at(1), Tok::Ident(_)) && self.is_sym_at(2, "(") => {
                self.bump();
                self.call_with(Vec::new())
            }
            Tok::Sym("@") => {
                let annotations = self.annotations()?;
                self.call_with(annotations)
            }
            Tok::Sym("(") => {
                self.bump();
                let first = self.expr()?;
                if self.eat_sym(")") {
                    return Ok(first);
                }
                let mut items = vec![first];
                while self.eat_sym(",") {
                    items.push(self.expr()?);
                }
                self.expect_sym(")")?;
                Ok(Expr {
                    kind: ExprKind::Tuple(items),
                    span: start.to(self.prev_span()),
                })
            }
            Tok::Sym("[") => {
                self.bump();
                if self.eat_sym("]") {
                    return Ok(Expr {
                        kind: ExprKind::Array(Vec::new()),
                        span: start.to(self.prev_span()),
                    });
                }
                let first = self.expr()?;
                if self.eat_sym(":") {
                    let hi = self.expr()?;
                    let step = if self.eat_sym(":") {
                        Some(Box::new(self.expr()?))
                    } else {
                        None
                    };
                    self.expect_sym("]")?;
                    return Ok(Expr {
                        kind: ExprKind::Range {
                            lo: Box::new(first),
                            hi: Box::new(hi),
                            step,
                        },
                        span: start.to(self.prev_span()),
                    });
                }
                let mut items = vec![first];
                while self.eat_sym(",") {
                    items.push(self.expr()?);
                }
                self.expect_sym("]")?;
                Ok(Expr {
                    kind: ExprKind::Array(items),
                    span: start.to(self.prev_span()),
                })
            }
            Tok::Sym("{") => {
                self.bump();
                let mut pairs = Vec::new();
                if !self.eat_sym("}") {
                    loop {
                        let k = self.expr()?;
                        self.expect_sym(":")?;
                        let v = self.expr()?;
                        pairs.push((k, v));
                        if self.eat_sym("}") {
                            break;
                        }
                        self.expect_sym(",")?;
                    }
                }
                Ok(Expr {
                    kind: ExprKind::Dict(pairs),
                    span: start.to(self.prev_span()),
                })
            }
            _ => self.expected("an expression"),
        }
    }
}
