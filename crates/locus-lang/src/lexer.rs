//! The lexer: `//`, `/* */` and `#` comments; integer (decimal, `0x` hex,
//! `0o` or leading-zero octal), float and string literals (C escapes, and
//! `"""` strings that may span lines and hold quotes).

use crate::diag::Diagnostic;
use crate::source::Span;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    Str(String),
    Sym(&'static str),
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// Symbols, longest first so that `%/` wins over `%`.
const SYMBOLS: &[&str] = &[
    "=>", "==", "!=", "<=", ">=", "&&", "||", "**", "%/", "%%", "(", ")", "{", "}", "[", "]", "<",
    ">", "=", ";", ",", ":", ".", "+", "-", "*", "/", "%", "!", "@",
];

pub fn lex(text: &str) -> (Vec<Token>, Vec<Diagnostic>) {
    let mut lx = Lexer {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        tokens: Vec::new(),
        diags: Vec::new(),
    };
    lx.run();
    (lx.tokens, lx.diags)
}

struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tokens: Vec<Token>,
    diags: Vec<Diagnostic>,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> u8 {
        self.bytes.get(self.pos + ahead).copied().unwrap_or(0)
    }

    fn push(&mut self, tok: Tok, start: usize) {
        self.tokens.push(Token {
            tok,
            span: Span::new(start, self.pos),
        });
    }

    fn error(&mut self, start: usize, end: usize, msg: impl Into<String>) {
        self.diags.push(Diagnostic::new(Span::new(start, end), msg));
    }

    fn run(&mut self) {
        while self.pos < self.bytes.len() {
            let c = self.peek(0);
            let start = self.pos;
            match c {
                b' ' | b'\t' | b'\r' | b'\n' => self.pos += 1,
                b'#' => self.skip_line(),
                b'/' if self.peek(1) == b'/' => self.skip_line(),
                b'/' if self.peek(1) == b'*' => self.skip_block_comment(),
                b'"' => self.string(),
                b'0'..=b'9' => self.number(),
                b'.' if self.peek(1).is_ascii_digit() => self.number(),
                c if c == b'_' || c.is_ascii_alphabetic() => {
                    while self.peek(0) == b'_' || self.peek(0).is_ascii_alphanumeric() {
                        self.pos += 1;
                    }
                    let word = self.text[start..self.pos].to_string();
                    self.push(Tok::Ident(word), start);
                }
                _ => {
                    let rest = &self.text[self.pos..];
                    if let Some(sym) = SYMBOLS.iter().find(|s| rest.starts_with(**s)) {
                        self.pos += sym.len();
                        self.push(Tok::Sym(sym), start);
                    } else {
                        let ch = rest.chars().next().expect("not at end");
                        self.pos += ch.len_utf8();
                        self.error(
                            start,
                            self.pos,
                            format!("unexpected character '{}'", ch.escape_default()),
                        );
                    }
                }
            }
        }
        // "found end of file" points just after the last token.
        let end = self.tokens.last().map_or(0, |t| t.span.end as usize);
        self.tokens.push(Token {
            tok: Tok::Eof,
            span: Span::new(end, end),
        });
    }

    fn skip_line(&mut self) {
        while self.pos < self.bytes.len() && self.peek(0) != b'\n' {
            self.pos += 1;
        }
    }

    fn skip_block_comment(&mut self) {
        let start = self.pos;
        self.pos += 2;
        while self.pos < self.bytes.len() {
            if self.peek(0) == b'*' && self.peek(1) == b'/' {
                self.pos += 2;
                return;
            }
            self.pos += 1;
        }
        self.error(start, start + 2, "unterminated comment");
    }

    fn number(&mut self) {
        let start = self.pos;
        let radix = match (self.peek(0), self.peek(1)) {
            (b'0', b'x' | b'X') => 16,
            (b'0', b'o' | b'O') => 8,
            _ => 10,
        };
        if radix != 10 {
            self.pos += 2;
            let digits = self.pos;
            while self.peek(0).is_ascii_alphanumeric() {
                self.pos += 1;
            }
            let text = &self.text[digits..self.pos];
            match i64::from_str_radix(text, radix) {
                Ok(v) => self.push(Tok::Int(v), start),
                Err(_) => self.error(
                    start,
                    self.pos,
                    format!("invalid integer literal '{}'", &self.text[start..self.pos]),
                ),
            }
            return;
        }
        while self.peek(0).is_ascii_digit() {
            self.pos += 1;
        }
        let mut is_float = false;
        if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
            is_float = true;
            self.pos += 1;
            while self.peek(0).is_ascii_digit() {
                self.pos += 1;
            }
        }
        if matches!(self.peek(0), b'e' | b'E')
            && (self.peek(1).is_ascii_digit()
                || (matches!(self.peek(1), b'+' | b'-') && self.peek(2).is_ascii_digit()))
        {
            is_float = true;
            self.pos += 2;
            while self.peek(0).is_ascii_digit() {
                self.pos += 1;
            }
        }
        if self.peek(0) == b'_' || self.peek(0).is_ascii_alphabetic() {
            while self.peek(0) == b'_' || self.peek(0).is_ascii_alphanumeric() {
                self.pos += 1;
            }
            self.error(
                start,
                self.pos,
                format!("invalid number '{}'", &self.text[start..self.pos]),
            );
            return;
        }
        let text = &self.text[start..self.pos];
        if is_float {
            match text.parse::<f64>() {
                Ok(v) => self.push(Tok::Float(v), start),
                Err(_) => self.error(start, self.pos, format!("invalid float literal '{text}'")),
            }
        } else {
            // C convention: a leading zero means octal.
            let parsed = if text.len() > 1 && text.starts_with('0') {
                i64::from_str_radix(&text[1..], 8)
            } else {
                text.parse::<i64>()
            };
            match parsed {
                Ok(v) => self.push(Tok::Int(v), start),
                Err(_) => self.error(start, self.pos, format!("invalid integer literal '{text}'")),
            }
        }
    }

    fn string(&mut self) {
        let start = self.pos;
        let triple = self.text[self.pos..].starts_with("\"\"\"");
        self.pos += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            if self.pos >= self.bytes.len() {
                self.error(start, start + 1, "unterminated string literal");
                return;
            }
            let rest = &self.text[self.pos..];
            if triple && rest.starts_with("\"\"\"") {
                self.pos += 3;
                break;
            }
            let ch = rest.chars().next().expect("not at end");
            match ch {
                '"' if !triple => {
                    self.pos += 1;
                    break;
                }
                '\n' if !triple => {
                    self.error(
                        start,
                        start + 1,
                        "unterminated string literal (use \"\"\" for text spanning lines)",
                    );
                    return;
                }
                '\\' => {
                    let esc_start = self.pos;
                    self.pos += 1;
                    match self.escape() {
                        Some(c) => out.push(c),
                        None => {
                            let end = (self.pos).min(self.text.len());
                            self.error(esc_start, end, "invalid escape sequence");
                        }
                    }
                }
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
        self.push(Tok::Str(out), start);
    }

    /// Reads the escape after a backslash.
    fn escape(&mut self) -> Option<char> {
        let c = self.text[self.pos..].chars().next()?;
        self.pos += c.len_utf8();
        Some(match c {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            'a' => '\x07',
            'b' => '\x08',
            'f' => '\x0c',
            'v' => '\x0b',
            '\\' => '\\',
            '"' => '"',
            '\'' => '\'',
            'x' => {
                let hex = self.text.get(self.pos..self.pos + 2)?;
                let v = u8::from_str_radix(hex, 16).ok()?;
                self.pos += 2;
                v as char
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let (t, d) = lex(s);
        assert!(d.is_empty(), "{d:?}");
        t.into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn numbers_strings_and_comments() {
        assert_eq!(
            toks("0x1F 0o17 017 12 1.5 2e3 # c\n// c\n/* c */ \"a\\tb\\x41\""),
            vec![
                Tok::Int(31),
                Tok::Int(15),
                Tok::Int(15),
                Tok::Int(12),
                Tok::Float(1.5),
                Tok::Float(2000.0),
                Tok::Str("a\tbA".into()),
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("\"\"\"a\n\"b\" c\"\"\""),
            vec![Tok::Str("a\n\"b\" c".into()), Tok::Eof]
        );
        assert_eq!(
            toks("a %/ b %% c % d"),
            vec![
                Tok::Ident("a".into()),
                Tok::Sym("%/"),
                Tok::Ident("b".into()),
                Tok::Sym("%%"),
                Tok::Ident("c".into()),
                Tok::Sym("%"),
                Tok::Ident("d".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn errors_are_reported_not_panicked() {
        for bad in [
            "\"open", "/* open", "0x", "12abc", "\"\\q\"", "$", "\"\\x4\"",
        ] {
            let (_, d) = lex(bad);
            assert!(!d.is_empty(), "{bad}");
        }
    }
}
