//! Source text, byte spans, and line/column lookup. A script and the user
//! modules it imports share one space of byte offsets: each module's text
//! starts after the one before, so a span alone says which file it is in.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A byte range in the script or one of its modules.
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

    /// This span moved `by` bytes on (a module's spans start at its base).
    pub fn shifted(self, by: usize) -> Span {
        Span::new(self.start as usize + by, self.end as usize + by)
    }
}

/// One file's text and where its offsets start.
struct File {
    name: String,
    base: usize,
    text: String,
    line_starts: Vec<usize>,
    /// Offsets of the bytes that continue a character (UTF-8 past its
    /// first byte): a column counts characters without walking its line,
    /// which would make positions in a long line quadratic to find.
    continuations: Vec<usize>,
}

impl File {
    /// 1-based line and column of source offset `at` (within this file).
    fn line_col(&self, at: u32) -> (usize, usize) {
        let at = (at as usize - self.base).min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= at) - 1;
        let start = self.line_starts[line];
        let end = floor_char(&self.text, at);
        let before = |i| self.continuations.partition_point(|&c| c < i);
        let col = end - start - (before(end) - before(start)) + 1;
        (line + 1, col)
    }

    fn new(name: String, base: usize, text: String) -> File {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let continuations = text
            .bytes()
            .enumerate()
            .filter(|&(_, b)| b & 0xC0 == 0x80)
            .map(|(i, _)| i)
            .collect();
        File {
            name,
            base,
            text,
            line_starts,
            continuations,
        }
    }

    fn end(&self) -> usize {
        // One past the text: a span at end of file still maps here.
        self.base + self.text.len() + 1
    }
}

/// A position: the file's name, 1-based line and column (in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub file: String,
    pub line: usize,
    pub col: usize,
}

pub struct Source {
    /// The script's name and text.
    pub name: String,
    pub text: String,
    /// Where `import a.b;` looks for `a/b.swift` after the importing file's
    /// directory.
    pub search: Vec<PathBuf>,
    /// The script (first), then each module loaded.
    files: Mutex<Vec<Arc<File>>>,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Source {
        let (name, text) = (name.into(), text.into());
        Source {
            files: Mutex::new(vec![Arc::new(File::new(name.clone(), 0, text.clone()))]),
            name,
            text,
            search: Vec::new(),
        }
    }

    /// The script in file `path` (named by it in diagnostics; bytes that
    /// are not UTF-8 replaced), importing modules from `search` too.
    pub fn read(path: &std::path::Path, search: Vec<PathBuf>) -> std::io::Result<Source> {
        let text = std::fs::read(path)?;
        let src = Source::new(path.display().to_string(), String::from_utf8_lossy(&text));
        Ok(src.with_search(search))
    }

    /// The same script, importing modules from `dirs` too.
    pub fn with_search(mut self, dirs: Vec<PathBuf>) -> Source {
        self.search = dirs;
        self
    }

    /// Adds a module's text; returns the offset its spans start at.
    pub fn add_module(&self, name: String, text: String) -> usize {
        let mut files = self.files.lock().expect("source files");
        let base = files.last().map_or(0, |f| f.end());
        files.push(Arc::new(File::new(name, base, text)));
        base
    }

    /// The names of the script and its modules, by file index.
    pub fn file_names(&self) -> Vec<String> {
        let files = self.files.lock().expect("source files");
        files.iter().map(|f| f.name.clone()).collect()
    }

    fn file_at(&self, at: u32) -> (usize, Arc<File>) {
        let files = self.files.lock().expect("source files");
        let i = files
            .partition_point(|f| f.base <= at as usize)
            .saturating_sub(1);
        (i, files[i].clone())
    }

    /// File index, 1-based line and column of offset `at`, and its file.
    fn locate(&self, at: u32) -> (usize, usize, usize, Arc<File>) {
        let (index, f) = self.file_at(at);
        let (line, col) = f.line_col(at);
        (index, line, col, f)
    }

    /// Where byte offset `at` is.
    pub fn position(&self, at: u32) -> Position {
        let (_, line, col, f) = self.locate(at);
        Position {
            file: f.name.clone(),
            line,
            col,
        }
    }

    /// File index (0 for the script, then modules as loaded), 1-based line
    /// and column of byte offset `at` (no name copied: compiling asks this
    /// of every call).
    pub fn index_line_col(&self, at: u32) -> (usize, usize, usize) {
        let files = self.files.lock().expect("source files");
        let i = files
            .partition_point(|f| f.base <= at as usize)
            .saturating_sub(1);
        let (line, col) = files[i].line_col(at);
        (i, line, col)
    }

    /// 1-based line and column of byte offset `at` in its file.
    pub fn line_col(&self, at: u32) -> (usize, usize) {
        let (_, line, col, _) = self.locate(at);
        (line, col)
    }

    /// The text of the line holding offset `at`, without its newline.
    pub fn line_text(&self, at: u32) -> String {
        let (_, line, _, f) = self.locate(at);
        let start = f.line_starts[line - 1];
        let end = f.line_starts.get(line).map_or(f.text.len(), |&e| e - 1);
        f.text[start..end].trim_end_matches('\r').to_string()
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::Source;

    #[test]
    fn columns_count_characters_not_bytes() {
        let src = Source::new("s.swift", "ab\né€x\n\"ü\" + y");
        assert_eq!(src.line_col(0), (1, 1));
        assert_eq!(src.line_col(3), (2, 1));
        assert_eq!(src.line_col(5), (2, 2));
        assert_eq!(src.line_col(8), (2, 3));
        // Inside a character: its column.
        assert_eq!(src.line_col(6), (2, 2));
        assert_eq!(src.line_col(14), (3, 4));
    }
}
