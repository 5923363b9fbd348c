//! Runtime values of Swift futures.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Array and struct keys, ordered as Swift/T orders them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Key {
    Int(i64),
    Str(String),
    Bool(bool),
    /// Float keys by their bits (`NaN` is a key like any other).
    Float(u64),
}

impl Key {
    /// The key as a value (a `foreach` index).
    pub fn to_value(&self) -> Value {
        match self {
            Key::Int(i) => Value::Int(*i),
            Key::Str(s) => Value::Str(s.clone()),
            Key::Bool(b) => Value::Bool(*b),
            Key::Float(b) => Value::Float(f64::from_bits(*b)),
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Int(i) => write!(f, "{i}"),
            Key::Str(s) => f.write_str(s),
            Key::Bool(b) => write!(f, "{b}"),
            Key::Float(b) => write!(f, "{}", f64::from_bits(*b)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    pub rank: i64,
    pub hard: bool,
    pub node: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Value {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    /// A file: its path.
    File(String),
    Location(Location),
    Strictness(bool),
    Accuracy(bool),
    /// A closed array or struct: its members' values, in key order.
    Container(BTreeMap<Key, Value>),
    /// Bytes (Swift/T's `blob`).
    Blob(Vec<u8>),
}

impl Value {
    pub fn key(&self) -> Option<Key> {
        Some(match self {
            Value::Int(i) => Key::Int(*i),
            Value::Str(s) => Key::Str(s.clone()),
            Value::Bool(b) => Key::Bool(*b),
            Value::Float(x) => Key::Float(x.to_bits()),
            _ => return None,
        })
    }

    /// The text Swift/T prints for a value (`trace`, `%s`, command lines).
    pub fn render(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Float(x) => format_float(*x),
            Value::Str(s) | Value::File(s) => s.clone(),
            Value::Bool(b) => if *b { "true" } else { "false" }.to_string(),
            Value::Location(l) => format!(
                "location({}, {}, {})",
                l.rank,
                if l.hard { "HARD" } else { "SOFT" },
                if l.node { "NODE" } else { "RANK" }
            ),
            Value::Strictness(hard) => if *hard { "HARD" } else { "SOFT" }.to_string(),
            Value::Accuracy(node) => if *node { "NODE" } else { "RANK" }.to_string(),
            Value::Container(m) => {
                let items: Vec<String> = m.values().map(Value::render).collect();
                format!("[{}]", items.join(","))
            }
            Value::Blob(b) => format!("blob({} bytes)", b.len()),
        }
    }
}

/// A float as Swift/T prints it: as Tcl 8.6 prints a double
/// (`Tcl_PrintDouble`): the fewest digits that read back as the same
/// number, in E format (`1e+20`, `2.5e-7`) when the first digit's
/// exponent is below -4 or above 16, else with a decimal point (`2.0`,
/// `0.0001`, `10000000000000000.0`); `NaN`, `Inf`, `-Inf`.
pub(crate) fn format_float(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Inf" } else { "-Inf" }.into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    // Rust's `{:e}` gives the shortest digits: `d[.ddd]e<exponent>`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}`'s exponent is a number");
    if !(-4..=16).contains(&exponent) {
        return format!("{sign}{mantissa}e{exponent:+}");
    }
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if exponent < 0 {
        let zeros = "0".repeat((-exponent - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let whole = exponent as usize + 1;
    match digits.len() > whole {
        true => format!("{sign}{}.{}", &digits[..whole], &digits[whole..]),
        false => format!("{sign}{digits}{}.0", "0".repeat(whole - digits.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::format_float;

    #[test]
    fn floats_print_as_tcl_prints_doubles() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (2.5, "2.5"),
            (100.25, "100.25"),
            (-3.75, "-3.75"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (1e-4, "0.0001"),
            (1.5e-4, "0.00015"),
            (1e-5, "1e-5"),
            (2.5e-7, "2.5e-7"),
            (1e15, "1000000000000000.0"),
            (1e16, "10000000000000000.0"),
            (1e17, "1e+17"),
            (1e20, "1e+20"),
            (123_456_789_012_345_680.0, "1.2345678901234568e+17"),
            (-1.5e300, "-1.5e+300"),
            (f64::INFINITY, "Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ];
        for (x, tcl) in cases {
            assert_eq!(format_float(x), tcl, "{x:e}");
        }
    }
}
