//! Swift/T's `json` module: a path of comma-separated keys into a JSON
//! document (`"a,0,b"`: key `a`, element 0, key `b`; the empty path is the
//! document itself), answered as Swift/T's Python helpers answer: values
//! as Python's `str()` prints them, keys in the document's order.

use crate::engine::value::Value;
use locus_proto::run::RunError;
use serde_json::Value as Json;

/// The value at `path` in the JSON text `doc`.
fn at<'j>(doc: &'j Json, path: &str) -> Result<&'j Json, RunError> {
    let mut here = doc;
    for step in path.split(',').filter(|s| !s.is_empty()) {
        let next = match here {
            Json::Array(items) => step.trim().parse::<usize>().ok().and_then(|i| items.get(i)),
            Json::Object(map) => map.get(step),
            _ => None,
        };
        here = next.ok_or_else(|| RunError::script(format!("json: '{path}': no '{step}' here")))?;
    }
    Ok(here)
}

fn parse(text: &str) -> Result<Json, RunError> {
    serde_json::from_str(text)
        .map_err(|e| RunError::script(format!("json: not a JSON document: {e}")))
}

/// `json_get(J, path)`: what is at `path`, as text.
pub(crate) fn get(text: &str, path: &str) -> Result<String, RunError> {
    let doc = parse(text)?;
    Ok(python_str(at(&doc, path)?))
}

/// `json_type(J, path)`: `string`, `int`, `float`, `array`, `object` or
/// `null` (and `boolean`, where Swift/T's helper fails).
pub(crate) fn type_of(text: &str, path: &str) -> Result<String, RunError> {
    let doc = parse(text)?;
    Ok(match at(&doc, path)? {
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
        Json::Number(n) if n.is_f64() => "float",
        Json::Number(_) => "int",
        Json::Bool(_) => "boolean",
        Json::Null => "null",
    }
    .into())
}

/// `json_array_size(J, path)`: the length of the array at `path`.
pub(crate) fn array_size(text: &str, path: &str) -> Result<usize, RunError> {
    match at(&parse(text)?, path)? {
        Json::Array(items) => Ok(items.len()),
        _ => Err(RunError::script(format!("json: '{path}' is not an array"))),
    }
}

/// `json_object_names(J, path)`: the names of the object at `path`, in
/// order, joined by commas.
pub(crate) fn object_names(text: &str, path: &str) -> Result<String, RunError> {
    match at(&parse(text)?, path)? {
        Json::Object(map) => Ok(map.keys().cloned().collect::<Vec<_>>().join(",")),
        _ => Err(RunError::script(format!("json: '{path}' is not an object"))),
    }
}

/// `json_list_length(f, path)`: `json_array_size` of a file's text.
pub(crate) fn list_length(text: &str, path: &str) -> Result<String, RunError> {
    array_size(text, path).map(|n| n.to_string())
}

/// `json_dict_entries(f, path)`: `json_object_names` of a file's text.
pub(crate) fn dict_entries(text: &str, path: &str) -> Result<String, RunError> {
    object_names(text, path)
}

/// How `json_encode_*` writes each value.
pub(crate) enum Encoding<'a> {
    /// By its Swift type: numbers bare, strings quoted, booleans as the
    /// integers Turbine keeps them as.
    Infer,
    /// By a type name each (`int`, `float`, `string`, `boolean`, `array`,
    /// `object`, `json`, `null`, or their letters `A B J N O`).
    Types(&'a [String]),
    /// By a `%` specifier each, in one string (`"%i %0.2f %s"`; `%A %B %J
    /// %N %O` as the type letters).
    Format(&'a str),
}

/// The members of a JSON array (no `names`) or object, comma-separated,
/// as Turbine's `json_encode_*` writes them (`name` is the builtin's, for
/// messages).
pub(crate) fn encode(
    name: &str,
    names: Option<&[String]>,
    how: Encoding,
    values: &[Value],
) -> Result<String, RunError> {
    let count = |what: &str, n: usize| match n == values.len() {
        true => Ok(()),
        false => Err(RunError::script(format!(
            "{name}(): length of {what} ({n}) not equal to length of given values ({})",
            values.len()
        ))),
    };
    if let Some(names) = names {
        count("names", names.len())?;
    }
    let specs: Vec<String> = match how {
        Encoding::Infer => Vec::new(),
        Encoding::Types(types) => {
            count("types", types.len())?;
            types.to_vec()
        }
        Encoding::Format(fmt) => {
            let specs: Vec<String> = fmt
                .split([' ', '\t', '\n', '\r'])
                .map(String::from)
                .collect();
            count("specifiers", specs.len())?;
            if let Some(bad) = specs.iter().find(|s| !s.starts_with('%')) {
                return Err(RunError::script(format!(
                    "{name}(): format token without %: '{bad}'"
                )));
            }
            specs
        }
    };
    let tokens = values.iter().enumerate().map(|(i, v)| {
        let prefix = names.map_or(String::new(), |n| format!("\"{}\":", n[i]));
        let token = match specs.get(i) {
            None => inferred(name, v)?,
            Some(spec) => as_spec(name, spec, v)?,
        };
        Ok(prefix + &token)
    });
    Ok(tokens
        .collect::<Result<Vec<String>, RunError>>()?
        .join(", "))
}

/// Turbine's text of a value (a boolean is the integer it keeps).
fn tcl_text(v: &Value) -> String {
    match v {
        Value::Bool(b) => u8::from(*b).to_string(),
        other => other.render(),
    }
}

fn inferred(name: &str, v: &Value) -> Result<String, RunError> {
    match v {
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => Ok(tcl_text(v)),
        Value::Str(s) => Ok(format!("\"{s}\"")),
        other => Err(RunError::script(format!(
            "{name}(): cannot encode {}",
            other.render()
        ))),
    }
}

/// `v` written as `spec` says: a type name or a `%` specifier.
fn as_spec(name: &str, spec: &str, v: &Value) -> Result<String, RunError> {
    let text = tcl_text(v);
    let number = || {
        text.trim()
            .parse::<f64>()
            .map_err(|_| RunError::script(format!("{name}(): cannot convert '{text}' to a number")))
    };
    let kind = match spec.strip_prefix('%') {
        Some(_) => spec.chars().last().map(String::from).unwrap_or_default(),
        None => spec.to_string(),
    };
    Ok(match kind.as_str() {
        "f" => crate::builtins::format::sprintf(spec, &[Value::Float(number()?)])?,
        "i" => crate::builtins::format::sprintf(spec, &[Value::Int(number()?.trunc() as i64)])?,
        "s" => format!(
            "\"{}\"",
            crate::builtins::format::sprintf(spec, &[Value::Str(text)])?
        ),
        "int" => (number()?.trunc() as i64).to_string(),
        "float" => Value::Float(number()?).render(),
        "string" => format!("\"{text}\""),
        "array" | "A" => format!("[ {text} ]"),
        "boolean" | "B" => match number()? == 0.0 {
            true => "false".into(),
            false => "true".into(),
        },
        "json" | "J" => text,
        "null" | "N" => "null".into(),
        "object" | "O" => format!("{{ {text} }}"),
        _ => {
            return Err(RunError::script(format!(
                "{name}(): unknown format: '{spec}'"
            )))
        }
    })
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
                out.push_str(&format!("\\x{:02x}", c as u32));
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
        assert_eq!(type_of(DOC, "nested").unwrap(), "object");
        assert_eq!(type_of(DOC, "sizes").unwrap(), "array");
        assert_eq!(type_of(DOC, "sizes,1").unwrap(), "float");
        assert_eq!(type_of(DOC, "nested,z").unwrap(), "null");
        assert_eq!(array_size(DOC, "sizes").unwrap(), 4);
        assert_eq!(object_names(DOC, "nested").unwrap(), "z,a");
        assert_eq!(type_of(DOC, "n").unwrap(), "int");
        assert_eq!(list_length(DOC, "sizes").unwrap(), "4");
        assert_eq!(dict_entries(DOC, "nested").unwrap(), "z,a");
        assert_eq!(dict_entries(DOC, "").unwrap(), "name,sizes,ok,nested,n");
        assert!(get(DOC, "sizes,9").unwrap_err().message.contains("no '9'"));
        assert!(get("{", "a")
            .unwrap_err()
            .message
            .contains("not a JSON document"));
        assert!(list_length(DOC, "name").is_err());
        assert_eq!(python_float(100.0), "100.0");
        assert_eq!(python_float(0.0001), "0.0001");
        assert_eq!(python_float(123456789012345680.0), "1.2345678901234568e+17");
    }

    #[test]
    fn values_are_encoded_as_turbine_encodes_them() {
        let v = [
            Value::Int(1),
            Value::Float(2.5),
            Value::Str("x".into()),
            Value::Bool(true),
        ];
        let names: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let enc = |names, how| encode("json_encode", names, how, &v);
        assert_eq!(enc(None, Encoding::Infer).unwrap(), r#"1, 2.5, "x", 1"#);
        assert_eq!(
            enc(Some(&names[..]), Encoding::Infer).unwrap(),
            r#""a":1, "b":2.5, "c":"x", "d":1"#
        );
        let types: Vec<String> = ["float", "int", "string", "boolean"]
            .map(String::from)
            .to_vec();
        let e = encode("f", None, Encoding::Types(&types), &v[..3]).unwrap_err();
        assert!(
            e.message
                .contains("length of types (4) not equal to length of given values (3)"),
            "{e}"
        );
        let nums = [
            Value::Int(3),
            Value::Float(2.7),
            Value::Int(0),
            Value::Str("[1,2]".into()),
        ];
        let types: Vec<String> = ["float", "int", "B", "J"].map(String::from).to_vec();
        assert_eq!(
            encode("f", None, Encoding::Types(&types), &nums).unwrap(),
            "3.0, 2, false, [1,2]"
        );
        assert_eq!(
            encode("f", None, Encoding::Format("%i %0.2f %s %A"), &nums).unwrap(),
            r#"3, 2.70, "0", [ [1,2] ]"#
        );
        let e = encode("f", None, Encoding::Format("%i x %s %A"), &nums).unwrap_err();
        assert!(e.message.contains("format token without %: 'x'"), "{e}");
        let e = encode(
            "f",
            None,
            Encoding::Types(&["int".into()]),
            &[Value::Str("z".into())],
        );
        assert!(e.unwrap_err().message.contains("cannot convert 'z'"));
    }
}
