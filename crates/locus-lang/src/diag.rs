//! Diagnostics: `file:line:col: error: message`, the source line, a caret.

use crate::source::{Source, Span};
use std::fmt::Write;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub span: Span,
    pub message: String,
}

impl Diagnostic {
    pub fn new(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span,
            message: message.into(),
        }
    }

    /// The first line alone: `file:line:col: error: message`.
    pub fn headline(&self, src: &Source) -> String {
        let (line, col) = src.line_col(self.span.start);
        format!("{}:{line}:{col}: error: {}", src.name, self.message)
    }

    /// The headline, the source line and a caret under the span.
    pub fn render(&self, src: &Source) -> String {
        let (line, col) = src.line_col(self.span.start);
        let text = src.line_text(line);
        let (end_line, end_col) = src.line_col(self.span.end.max(self.span.start + 1) - 1);
        let width = if end_line == line {
            (end_col + 1).saturating_sub(col).max(1)
        } else {
            1
        };
        let mut out = self.headline(src);
        let gutter = line.to_string();
        let _ = write!(
            out,
            "\n {gutter} | {text}\n {} | ",
            " ".repeat(gutter.len())
        );
        // Keep tabs so the caret lines up with the source.
        for c in text.chars().take(col - 1) {
            out.push(if c == '\t' { '\t' } else { ' ' });
        }
        out.push_str(&"^".repeat(width));
        out
    }
}

/// Diagnostics sorted by position, each once.
pub fn sorted(mut diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diags.sort_by_key(|d| (d.span.start, d.span.end));
    diags.dedup();
    diags
}
