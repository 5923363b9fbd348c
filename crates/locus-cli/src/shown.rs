//! Names as `ls` shows them on a terminal: one holding control characters
//! (a newline, a terminal escape) is quoted the way GNU `ls` quotes it
//! (`'a'$'\n''b'`), so it can neither break the listing's lines nor drive
//! the reader's terminal, and can be pasted back into a shell.

use std::borrow::Cow;

/// `name` as listed: as it is unless it holds a control character.
pub(crate) fn shown(name: &str) -> Cow<'_, str> {
    if !name.chars().any(char::is_control) {
        return Cow::Borrowed(name);
    }
    #[derive(PartialEq)]
    enum In {
        Nothing,
        Quotes,
        Escapes,
    }
    let mut out = String::new();
    let mut state = In::Nothing;
    let mut switch = |out: &mut String, to: In| {
        if state == to {
            return;
        }
        if state != In::Nothing {
            out.push('\'');
        }
        match to {
            In::Quotes => out.push('\''),
            In::Escapes => out.push_str("$'"),
            In::Nothing => {}
        }
        state = to;
    };
    for c in name.chars() {
        if c.is_control() {
            switch(&mut out, In::Escapes);
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                _ => {
                    let mut bytes = [0; 4];
                    for b in c.encode_utf8(&mut bytes).bytes() {
                        out.push_str(&format!("\\{b:03o}"));
                    }
                }
            }
        } else if c == '\'' {
            switch(&mut out, In::Nothing);
            out.push_str("\\'");
        } else {
            switch(&mut out, In::Quotes);
            out.push(c);
        }
    }
    switch(&mut out, In::Nothing);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn control_characters_are_quoted_as_gnu_ls_quotes_them() {
        assert_eq!(shown("plain name.txt"), "plain name.txt");
        assert_eq!(shown("a\nb"), "'a'$'\\n''b'");
        assert_eq!(shown("\x1b[31mred"), "$'\\033''[31mred'");
        assert_eq!(shown("tab\t\r"), "'tab'$'\\t\\r'");
        assert_eq!(shown("it's\n"), "'it'\\''s'$'\\n'");
        assert_eq!(shown("c1\u{9b}"), "'c1'$'\\302\\233'");
    }
}
