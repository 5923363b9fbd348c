//! Swift/T's `files` functions over a file's text, as Turbine's Tcl
//! (`files.tcl`) computes them: `file_lines` keeps each non-empty line
//! under its line number, `file_chunks` splits at delimiter lines, both
//! cutting a comment (a regular expression to the line's end) first;
//! `write_array_string` writes `key value` lines.

use crate::engine::value::{Key, Value};
use locus_proto::run::RunError;
use regex::Regex;
use std::collections::BTreeMap;

/// The pattern that cuts a comment from a line (`None`: comments off).
fn comment_cut(comment: &str) -> Result<Option<Regex>, RunError> {
    if comment.is_empty() {
        return Ok(None);
    }
    Regex::new(&format!("{comment}.*"))
        .map(Some)
        .map_err(|e| RunError::script(format!("comment pattern '{comment}': {e}")))
}

fn uncommented<'t>(line: &'t str, cut: &Option<Regex>) -> std::borrow::Cow<'t, str> {
    match cut {
        Some(re) => re.replace(line, ""),
        None => line.into(),
    }
}

/// `file_lines(f, comment)`: each line without its comment, trimmed, kept
/// if not empty, under its line number (from 0).
pub(crate) fn lines(text: &str, comment: &str) -> Result<BTreeMap<Key, Value>, RunError> {
    let cut = comment_cut(comment)?;
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = uncommented(line, &cut);
        let line = line.trim();
        if !line.is_empty() {
            out.insert(Key::Int(n as i64), Value::Str(line.to_string()));
        }
    }
    Ok(out)
}

/// `file_chunks(f, delimiter, comment)`: the text between lines that are
/// `delimiter` (after the comment is cut), each chunk's non-empty lines
/// joined and trimmed; a delimiter at the end leaves an empty last chunk.
pub(crate) fn chunks(text: &str, delimiter: &str, comment: &str) -> Result<Vec<String>, RunError> {
    let cut = comment_cut(comment.trim())?;
    let mut lines = text.lines();
    let mut out = Vec::new();
    loop {
        let mut chunk = String::new();
        let mut delimited = false;
        for line in lines.by_ref() {
            let line = uncommented(line, &cut);
            if line == delimiter {
                delimited = true;
                break;
            }
            if !line.is_empty() {
                if !chunk.is_empty() {
                    chunk.push('\n');
                }
                chunk.push_str(&line);
            }
        }
        out.push(chunk.trim().to_string());
        if !delimited {
            return Ok(out);
        }
    }
}

/// `write_array_string(A, chunk)`: a `key value` line per member.
pub(crate) fn key_value_lines(members: &BTreeMap<Key, Value>) -> String {
    members
        .iter()
        .map(|(k, v)| format!("{k} {}\n", v.render()))
        .collect()
}

/// `write_array_string_ordered(A)`: a line per member `0`, `1`, … up to the
/// array's size; a missing one is an error.
pub(crate) fn ordered_lines(members: &BTreeMap<Key, Value>) -> Result<String, RunError> {
    (0..members.len() as i64)
        .map(|i| match members.get(&Key::Int(i)) {
            Some(v) => Ok(format!("{}\n", v.render())),
            None => Err(RunError::script(format!("the array has no member [{i}]"))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_numbers_and_lose_comments_and_blanks() {
        let got = lines("a\n\n  b # note\n# all\nc\n", "#").unwrap();
        let keys: Vec<String> = got
            .iter()
            .map(|(k, v)| format!("{k}={}", v.render()))
            .collect();
        assert_eq!(keys, ["0=a", "2=b", "4=c"]);
        let raw = lines("x # y\n", "").unwrap();
        assert_eq!(raw[&Key::Int(0)], Value::Str("x # y".into()));
        assert!(lines("a", "(").is_err());
    }

    #[test]
    fn chunks_split_at_delimiter_lines() {
        let text = "a\nb # c\n----\n\n d\n----\n";
        assert_eq!(chunks(text, "----", "#").unwrap(), ["a\nb", "d", ""]);
        assert_eq!(chunks("x\ny", "----", "").unwrap(), ["x\ny"]);
        assert_eq!(chunks("", "----", "#").unwrap(), [""]);
    }

    #[test]
    fn arrays_are_written_as_lines() {
        let mut a = BTreeMap::new();
        a.insert(Key::Int(1), Value::Str("b".into()));
        a.insert(Key::Int(0), Value::Str("a".into()));
        assert_eq!(key_value_lines(&a), "0 a\n1 b\n");
        assert_eq!(ordered_lines(&a).unwrap(), "a\nb\n");
        a.remove(&Key::Int(0));
        assert!(ordered_lines(&a).unwrap_err().message.contains("[0]"));
    }
}
