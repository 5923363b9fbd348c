//! Source text, byte spans, and line/column lookup.

/// A byte range in one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

pub struct Source {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Source {
        let text = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Source {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of byte offset `at`.
    pub fn line_col(&self, at: u32) -> (usize, usize) {
        let at = (at as usize).min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= at) - 1;
        let start = self.line_starts[line];
        let col = self.text[start..floor_char(&self.text, at)].chars().count() + 1;
        (line + 1, col)
    }

    /// The text of 1-based `line`, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_starts[line - 1];
        let end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |&e| e - 1);
        self.text[start..end].trim_end_matches('\r')
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
