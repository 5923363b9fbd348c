//! The Swift (Swift/T dialect) front end: lexer, parser, type checker with
//! diagnostics, and lowering to the IR the runtime executes.

pub mod ast;
pub mod builtins;
pub mod diag;
pub mod graph;
pub mod ir;
mod lexer;
mod lower;
mod modules;
mod parser;
pub mod source;
pub mod types;

pub use diag::Diagnostic;
pub use lexer::lex;
pub use source::Source;

/// Stack for the recursive descent: enough for the deepest nesting the
/// parser accepts, whatever thread the caller runs on.
const STACK: usize = 32 << 20;

/// Checks and lowers one script. Every independent error is reported,
/// sorted by position.
pub fn compile(src: &Source) -> Result<ir::Program, Vec<Diagnostic>> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("locus-compile".into())
            .stack_size(STACK)
            .spawn_scoped(s, || compile_here(src))
            .expect("spawning the compiler thread")
            .join()
            .expect("the compiler does not panic")
    })
}

fn compile_here(src: &Source) -> Result<ir::Program, Vec<Diagnostic>> {
    let (tokens, mut diags) = lexer::lex(&src.text);
    let eof = tokens.last().map_or(0, |t| t.span.start);
    let (mut ast, parse_diags) = parser::parse(tokens);
    // A bad token usually derails the parse of its own line, and an
    // unterminated string or comment the end of the file: those echoes of a
    // lexical error are not reported.
    let lex_lines: Vec<usize> = diags.iter().map(|d| src.line_col(d.span.start).0).collect();
    diags.extend(parse_diags.into_iter().filter(|d| {
        lex_lines.is_empty()
            || !(lex_lines.contains(&src.line_col(d.span.start).0) || d.span.start >= eof)
    }));
    diags.extend(modules::expand(src, &mut ast));
    let (program, check_diags) = lower::lower(&ast, src);
    // Checking a tree with syntax errors in it would report their echoes.
    if diags.is_empty() {
        diags = check_diags;
    }
    if diags.is_empty() {
        Ok(program)
    } else {
        Err(diag::sorted(diags))
    }
}
