//! The Swift (Swift/T dialect) front end: lexer, parser, type checker with
//! diagnostics, and lowering to the IR the runtime executes.

pub mod ast;
pub mod builtins;
pub mod diag;
pub mod ir;
pub mod lexer;
pub mod lower;
pub mod parser;
pub mod source;
pub mod types;

pub use diag::Diagnostic;
pub use source::Source;

/// Checks and lowers one script. Every independent error is reported,
/// sorted by position.
pub fn compile(src: &Source) -> Result<ir::Program, Vec<Diagnostic>> {
    let (tokens, mut diags) = lexer::lex(&src.text);
    let (ast, parse_diags) = parser::parse(tokens);
    diags.extend(parse_diags);
    let (program, check_diags) = lower::lower(&ast);
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
