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

/// Floats print with a decimal point, as Tcl prints doubles (`2.0`, `0.5`).
pub(crate) fn format_float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x == x.trunc() && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}
