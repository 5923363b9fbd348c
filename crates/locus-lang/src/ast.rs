//! The syntax tree, as written (before name resolution and types).

use crate::source::Span;

#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Import {
        path: Vec<Ident>,
        span: Span,
    },
    /// `typedef name type[dims];`
    Typedef {
        name: Ident,
        ty: TypeRef,
        /// `type name base;` (a subtype), not `typedef` (the same type).
        sub: bool,
    },
    /// `type name { type field; … }`
    Struct {
        name: Ident,
        fields: Vec<Param>,
    },
    Func(FuncDef),
    Main {
        body: Block,
        span: Span,
    },
    Stmt(Stmt),
}

/// A type as written: a base name and array dimensions, each with an
/// optional key type (`[]` is keyed by int).
#[derive(Debug, Clone, PartialEq)]
pub struct TypeRef {
    pub base: Ident,
    pub dims: Vec<Option<Ident>>,
}

/// `type name[dims]` in parameter lists and struct fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub ty: TypeRef,
    pub name: Ident,
    /// `int x = 1`: the value when a call leaves the parameter out.
    pub default: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Annotation {
    pub name: Ident,
    pub value: Option<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FuncDef {
    pub annotations: Vec<Annotation>,
    /// `<T, U>`: type variables, standing for any type.
    pub type_params: Vec<Ident>,
    pub name: Ident,
    pub outputs: Vec<Param>,
    pub inputs: Vec<Param>,
    pub body: FuncBody,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FuncBody {
    /// `app` functions: a command-line template.
    App(Box<AppBody>),
    Composite(Block),
    /// `"package" "version" "function"` or `[ "template" ]`: implemented
    /// outside Swift (a builtin of the runtime).
    Leaf {
        package: String,
        version: String,
        target: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct AppBody {
    pub words: Vec<Expr>,
    pub stdin: Option<Expr>,
    pub stdout: Option<Expr>,
    pub stderr: Option<Expr>,
}

pub type Block = Vec<Stmt>;

#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeclVar {
    pub name: Ident,
    pub dims: Vec<Option<Ident>>,
    pub mapping: Option<Expr>,
    pub init: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LValue {
    Var(Ident),
    Index(Box<LValue>, Expr, Span),
    Field(Box<LValue>, Ident),
}

impl LValue {
    pub fn root(&self) -> &Ident {
        match self {
            LValue::Var(i) => i,
            LValue::Index(l, _, _) | LValue::Field(l, _) => l.root(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// `type a, b<map> = e, …;` (`global const` at top level)
    Decl {
        ty: Ident,
        vars: Vec<DeclVar>,
        global: bool,
    },
    /// `x = e;`, `A[i] = e;`, `s.f = e;`, `(a, b) = f(…);`
    Assign {
        targets: Vec<LValue>,
        value: Expr,
    },
    /// `b += v;`: adds a member to a bag (or an array, at a new index).
    Append {
        target: LValue,
        value: Expr,
    },
    /// `x <incr> := v;`: changes updateable variable `x` by `op`.
    Update {
        target: Ident,
        op: Ident,
        value: Expr,
    },
    Expr(Expr),
    If {
        cond: Expr,
        then: Block,
        otherwise: Option<Block>,
    },
    Switch {
        scrutinee: Expr,
        cases: Vec<(Vec<Expr>, Block)>,
        default: Option<Block>,
    },
    Foreach {
        annotations: Vec<Annotation>,
        value: Ident,
        index: Option<Ident>,
        source: Expr,
        body: Block,
    },
    /// `for (init; cond; update) { … }`: sequential, with loop-carried variables.
    For {
        init: Vec<ForVar>,
        cond: Expr,
        update: Vec<(Ident, Expr)>,
        body: Block,
    },
    /// `iterate var { body } until (until);`: the body runs with var 0, 1,
    /// … until `until` (read after each run) holds.
    Iterate {
        var: Ident,
        body: Block,
        until: Expr,
    },
    Wait {
        deep: bool,
        on: Vec<Expr>,
        body: Block,
    },
    /// `a => b => c;`: each runs after the one before finished.
    Chain(Vec<Stmt>),
    Block(Block),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForVar {
    /// `int i = 0`, `int A[] = B`: declared in the header (else a name
    /// whose type is its first value's).
    pub ty: Option<TypeRef>,
    pub name: Ident,
    pub init: Expr,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    IntDiv,
    Mod,
    Format,
    Pow,
}

impl BinOp {
    /// How a script writes it.
    pub fn symbol(self) -> &'static str {
        match self {
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum UnOp {
    Not,
    Neg,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Var(String),
    Call {
        name: Ident,
        args: Vec<Expr>,
        annotations: Vec<Annotation>,
    },
    Index(Box<Expr>, Box<Expr>),
    Field(Box<Expr>, Ident),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Tuple(Vec<Expr>),
    Array(Vec<Expr>),
    Range {
        lo: Box<Expr>,
        hi: Box<Expr>,
        step: Option<Box<Expr>>,
    },
    Dict(Vec<(Expr, Expr)>),
    /// `@f` in an app command line: the file's name.
    FileName(Box<Expr>),
    /// `name=value` among a call's arguments.
    Keyword(Ident, Box<Expr>),
}
