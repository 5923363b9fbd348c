//! Diagnostics: `file:line:col: error: message`, the source line, a caret.

use crate::source::{Source, Span};
use std::fmt::Write;

/// Characters of a source line shown under an error.
const WINDOW: usize = 120;
/// Errors shown for one script; the rest are counted.
pub const MAX_SHOWN: usize = 100;

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
        let p = src.position(self.span.start);
        format!("{}:{}:{}: error: {}", p.file, p.line, p.col, self.message)
    }

    /// The headline, the source line and a caret under the span. A long
    /// line is shown as a window around the column, so one error costs a
    /// few lines whatever the file looks like.
    pub fn render(&self, src: &Source) -> String {
        let (line, col) = src.line_col(self.span.start);
        let full = src.line_text(self.span.start);
        let (end_line, end_col) = src.line_col(self.span.end.max(self.span.start + 1) - 1);
        let width = if end_line == line {
            (end_col + 1).saturating_sub(col).max(1)
        } else {
            1
        };
        // Columns count characters; keep up to WINDOW of them around `col`.
        // Control characters (a binary file's) are shown as one mark each,
        // never sent to the terminal, which would act on them.
        let skip = (col - 1).saturating_sub(WINDOW / 2);
        let text: String = (full.chars().skip(skip).take(WINDOW))
            .map(|c| {
                if c.is_control() && c != '\t' {
                    '\u{fffd}'
                } else {
                    c
                }
            })
            .collect();
        let col = col - skip;
        let width = width.min(WINDOW + 1 - col).max(1);
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

/// Every diagnostic rendered (at most [`MAX_SHOWN`]), then how many there were.
pub fn report(diags: &[Diagnostic], src: &Source) -> String {
    let mut out = String::new();
    for d in diags.iter().take(MAX_SHOWN) {
        out.push_str(&d.render(src));
        out.push('\n');
    }
    let n = diags.len();
    let _ = write!(
        out,
        "{}: {n} error{}",
        src.name,
        if n == 1 { "" } else { "s" }
    );
    if n > MAX_SHOWN {
        let _ = write!(out, " ({} not shown)", n - MAX_SHOWN);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_and_many_errors_stay_short() {
        let line = format!("{}@{}", "x".repeat(1_000_000), "y".repeat(1_000_000));
        let src = Source::new("long.swift", line);
        let d = Diagnostic::new(
            Span {
                start: 1_000_000,
                end: 1_000_001,
            },
            "bad",
        );
        let shown = d.render(&src);
        assert!(shown.len() < 400, "{}", shown.len());
        assert!(shown.starts_with("long.swift:1:1000001: error: bad"));
        let lines: Vec<&str> = shown.lines().collect();
        let at = lines[1].find('@').unwrap();
        assert_eq!(lines[2].find('^'), Some(at));
        let many = vec![d; 1000];
        let all = report(&many, &src);
        assert!(all.len() < 40_000, "{}", all.len());
        assert!(all.ends_with("long.swift: 1000 errors (900 not shown)"));
    }

    #[test]
    fn control_characters_of_a_line_are_not_printed() {
        let src = Source::new("bin.swift", "\u{1b}[2J\u{7}\tx @ y\u{8}");
        let d = Diagnostic::new(Span { start: 8, end: 9 }, "bad");
        let shown = d.render(&src);
        assert!(!shown
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'));
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[1], " 1 | \u{fffd}[2J\u{fffd}\tx @ y\u{fffd}");
        // The caret still stands under the '@'.
        assert_eq!(lines[2], "   |      \t  ^");
    }
}
