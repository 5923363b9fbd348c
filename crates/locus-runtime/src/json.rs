//! Swift/T's `json` module: a path of comma-separated keys into a JSON
//! document (`"a,0,b"`: key `a`, element 0, key `b`; the empty path is the
//! document itself), answered as Swift/T's Python helpers answer: values
//! as Python's `str()` prints them, keys in the document's order.

use serde_json::Value as Json;

/// The value at `path` in the JSON text `doc`.
fn at<'j>(doc: &'j Json, path: &str) -> Result<&'j Json, String> {
    let mut here = doc;
    for step in path.split(',').filter(|s| !s.is_empty()) {
        let next = match here {
            Json::Array(items) => step.trim().parse::<usize>().ok().and_then(|i| items.get(i)),
            Json::Object(map) => map.get(step),
            _ => None,
        };
        here = next.ok_or_else(|| format!("json: '{path}': no '{step}' here"))?;
    }
    Ok(here)
}

fn parse(text: &str) -> Result<Json, String> {
    serde_json::from_str(text).map_err(|e| format!("json: not a JSON document: {e}"))
}

/// `json_get(J, path)`: what is at `path`, as text.
pub fn get(text: &str, path: &str) -> Result<String, String> {
    let doc = parse(text)?;
    Ok(python_str(at(&doc, path)?))
}

/// `json_type(f, path)`: `string`, `list`, `dict`, `int`, `float`,
/// `boolean` or `null`.
pub fn type_of(text: &str, path: &str) -> Result<String, String> {
    let doc = parse(text)?;
    Ok(match at(&doc, path)? {
        Json::String(_) => "string",
        Json::Array(_) => "list",
        Json::Object(_) => "dict",
        Json::Number(n) if n.is_f64() => "float",
        Json::Number(_) => "int",
        Json::Bool(_) => "boolean",
        Json::Null => "null",
    }
    .into())
}

/// `json_list_length(f, path)`: the length of the list at `path`.
pub fn list_length(text: &str, path: &str) -> Result<String, String> {
    let doc = parse(text)?;
    match at(&doc, path)? {
        Json::Array(items) => Ok(items.len().to_string()),
        _ => Err(format!("json_list_length: '{path}' is not a list")),
    }
}

/// `json_dict_entries(f, path)`: the keys of the dict at `path`, joined
/// by commas.
pub fn dict_entries(text: &str, path: &str) -> Result<String, String> {
    let doc = parse(text)?;
    match at(&doc, path)? {
        Json::Object(map) => Ok(map.keys().cloned().collect::<Vec<_>>().join(",")),
        _ => Err(format!("json_dict_entries: '{path}' is not a dict")),
    }
}

/// Python's `str()` of the value `json.loads` gives.
fn python_str(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => python_repr(other),
    }
}

/// Python's `repr()`: what `str()` gives inside lists and dicts.
fn python_repr(v: &Json) -> String {
    match v {
        Json::Null => "None".into(),
        Json::Bool(b) => if *b { "True" } else { "False" }.into(),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), ..) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (.., Some(x)) => python_float(x),
            _ => n.to_string(),
        },
        Json::String(s) => python_string_repr(s),
        Json::Array(items) => {
            let parts: Vec<String> = items.iter().map(python_repr).collect();
            format!("[{}]", parts.join(", "))
        }
        Json::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", python_string_repr(k), python_repr(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Python's float repr: the shortest digits that read back, positional
/// for exponents -5 < e < 16, else `d.ddde±XX`.
fn python_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    if (-5 < exp) && (exp < 16) {
        let s = format!("{x}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// Python's repr of a string: single quotes unless the text holds one and
/// no double quote.
fn python_string_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"name": "run", "sizes": [1, 2.5, 1e-7, 1e16], "ok": true,
        "nested": {"z": null, "a": "it's"}, "n": 3}"#;

    #[test]
    fn paths_and_python_text() {
        assert_eq!(get(DOC, "name").unwrap(), "run");
        assert_eq!(get(DOC, "sizes,1").unwrap(), "2.5");
        assert_eq!(get(DOC, "sizes").unwrap(), "[1, 2.5, 1e-07, 1e+16]");
        assert_eq!(get(DOC, "ok").unwrap(), "True");
        assert_eq!(get(DOC, "nested").unwrap(), r#"{'z': None, 'a': "it's"}"#);
        assert_eq!(type_of(DOC, "nested").unwrap(), "dict");
        assert_eq!(type_of(DOC, "sizes").unwrap(), "list");
        assert_eq!(type_of(DOC, "n").unwrap(), "int");
        assert_eq!(list_length(DOC, "sizes").unwrap(), "4");
        assert_eq!(dict_entries(DOC, "nested").unwrap(), "z,a");
        assert_eq!(dict_entries(DOC, "").unwrap(), "name,sizes,ok,nested,n");
        assert!(get(DOC, "sizes,9").unwrap_err().contains("no '9'"));
        assert!(get("{", "a").unwrap_err().contains("not a JSON document"));
        assert!(list_length(DOC, "name").is_err());
        assert_eq!(python_float(100.0), "100.0");
        assert_eq!(python_float(0.0001), "0.0001");
        assert_eq!(python_float(123456789012345680.0), "1.2345678901234568e+17");
    }
}
