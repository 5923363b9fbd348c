//! Swift/T's string functions as Turbine's Tcl library defines them
//! (`turbine/code/lib/string.tcl`): indices count characters; an end index
//! bounds where a match may end, -1 meaning the string's end; an empty
//! substring is never found; `split` splits at each character of its
//! delimiter, as Tcl's `split` does.

/// The characters of `s`, to index as Tcl does.
fn chars(s: &str) -> Vec<char> {
    s.chars().collect()
}

fn first(hay: &[char], needle: &[char], from: usize) -> Option<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return None;
    }
    (from..=hay.len() - needle.len()).find(|&i| hay[i..i + needle.len()] == *needle)
}

/// Where `needle` first starts at or after `start`, ending by `end` (-1:
/// the end of `hay`); -1 if nowhere (`find`).
pub(crate) fn find(hay: &str, needle: &str, start: i64, end: i64) -> i64 {
    let (hay, needle) = (chars(hay), chars(needle));
    find_in(&hay, &needle, start, end)
}

fn find_in(hay: &[char], needle: &[char], start: i64, end: i64) -> i64 {
    let end = if end == -1 { hay.len() as i64 } else { end };
    match first(hay, needle, start.max(0) as usize) {
        Some(at) if (at + needle.len()) as i64 <= end => at as i64,
        _ => -1,
    }
}

/// How many times `needle` occurs, not overlapping, between `start` and
/// `end` (`string_count`).
pub(crate) fn count(hay: &str, needle: &str, start: i64, end: i64) -> i64 {
    let (hay, needle) = (chars(hay), chars(needle));
    let mut found = 0;
    let mut at = start;
    loop {
        match find_in(&hay, &needle, at, end) {
            -1 => return found,
            r => {
                found += 1;
                at = r + needle.len() as i64;
            }
        }
    }
}

/// `hay` with the first `needle` at or after `start` replaced (`replace`).
pub(crate) fn replace(hay: &str, needle: &str, with: &str, start: i64) -> String {
    let (h, n) = (chars(hay), chars(needle));
    match find_in(&h, &n, start, -1) {
        -1 => hay.to_string(),
        at => {
            let at = at as usize;
            let mut out: String = h[..at].iter().collect();
            out.push_str(with);
            out.extend(&h[at + n.len()..]);
            out
        }
    }
}

/// `hay` with every `needle` that starts at or after `start` and ends by
/// `end` replaced (`replaceAll`; its 3- and 4-argument forms end at the
/// string's end).
pub(crate) fn replace_all(
    hay: &str,
    needle: &str,
    with: &str,
    start: i64,
    end: Option<i64>,
) -> String {
    let (h, n) = (chars(hay), chars(needle));
    let end = end.unwrap_or(h.len() as i64);
    let start = start.clamp(0, h.len() as i64) as usize;
    let mut out: String = h[..start].iter().collect();
    let mut at = start;
    loop {
        match find_in(&h, &n, at as i64, end) {
            -1 => {
                out.extend(&h[at..]);
                return out;
            }
            r => {
                let r = r as usize;
                out.extend(&h[at..r]);
                out.push_str(with);
                at = r + n.len();
            }
        }
    }
}

/// The pieces of `s` between any of the characters of `delimiters` (" "
/// when not given); every character alone when it is empty; none for an
/// empty `s` (`split`).
pub(crate) fn split(s: &str, delimiters: Option<&str>) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    let delimiters = delimiters.unwrap_or(" ");
    if delimiters.is_empty() {
        return s.chars().map(String::from).collect();
    }
    s.split(|c| delimiters.contains(c))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_and_count_use_character_indices_and_an_end_bound() {
        assert_eq!(find("hello world", "o", 0, -1), 4);
        assert_eq!(find("hello world", "o", 5, -1), 7);
        assert_eq!(find("hello world", "world", 0, 10), -1, "would end past 10");
        assert_eq!(find("hello world", "world", 0, 11), 6);
        assert_eq!(find("héllo", "l", 0, -1), 2, "characters, not bytes");
        assert_eq!(
            find("abc", "", 0, -1),
            -1,
            "an empty substring is never found"
        );
        assert_eq!(find("abc", "c", -5, -1), 2);
        assert_eq!(count("aaaa", "aa", 0, -1), 2, "not overlapping");
        assert_eq!(count("abcabcabc", "abc", 1, -1), 2);
        assert_eq!(count("abcabcabc", "abc", 0, 8), 2);
        assert_eq!(count("abc", "", 0, -1), 0);
    }

    #[test]
    fn replace_and_replace_all_start_and_end_where_asked() {
        assert_eq!(replace("a-b-c", "-", "+", 0), "a+b-c");
        assert_eq!(replace("a-b-c", "-", "+", 2), "a-b+c");
        assert_eq!(replace("abc", "", "x", 0), "abc");
        assert_eq!(replace_all("a-b-c-d", "-", "+", 0, None), "a+b+c+d");
        assert_eq!(replace_all("a-b-c-d", "-", "+", 2, None), "a-b+c+d");
        assert_eq!(replace_all("a-b-c-d", "-", "+", 0, Some(4)), "a+b+c-d");
        assert_eq!(replace_all("aaa", "aa", "b", 0, None), "ba");
        assert_eq!(replace_all("ébé", "b", "B", 0, None), "éBé");
        assert_eq!(replace_all("abc", "", "x", 0, None), "abc");
    }

    #[test]
    fn split_cuts_at_each_delimiter_character_as_tcl_does() {
        assert_eq!(split("a b  c", None), ["a", "b", "", "c"]);
        assert_eq!(split("a,b;c", Some(",;")), ["a", "b", "c"]);
        assert_eq!(split("a,", Some(",")), ["a", ""]);
        assert_eq!(split("abc", Some("")), ["a", "b", "c"]);
        assert!(split("", Some(",")).is_empty());
    }
}
