//! Signatures of the built-in library: Swift/T's modules and Locus's storage
//! builtins. A signature is written compactly, e.g. `"string int? -> string"`:
//! `any` is any type, `any[]` any array, `T` the type of the first `T`
//! argument, `...` any number of further arguments of any type, `?` optional.

use crate::types::Type;

/// Modules a script may import. Functions of `builtins` need no import.
pub const MODULES: &[&str] = &[
    "assert", "blob", "builtins", "files", "io", "launch", "location", "math", "python", "R",
    "random", "stats", "string", "sys", "unix",
];

/// (module, name, signature)
const TABLE: &[(&str, &str, &str)] = &[
    ("builtins", "trace", "... ->"),
    ("builtins", "sleep_trace", "float ... ->"),
    ("builtins", "size", "any[] -> int"),
    ("builtins", "toString", "any -> string"),
    ("builtins", "toInt", "string -> int"),
    ("builtins", "toFloat", "string -> float"),
    ("builtins", "parseInt", "string int? -> int"),
    ("builtins", "parseFloat", "string -> float"),
    ("builtins", "itof", "int -> float"),
    ("builtins", "fromInt", "int -> string"),
    ("builtins", "fromFloat", "float -> string"),
    ("builtins", "strcat", "... -> string"),
    ("builtins", "dircat", "... -> string"),
    ("builtins", "filename", "file -> string"),
    ("builtins", "input", "string -> file"),
    ("builtins", "input_file", "string -> file"),
    ("builtins", "contains", "any[] any -> boolean"),
    ("builtins", "range", "int int int? -> int[]"),
    ("builtins", "sum_integer", "int[] -> int"),
    ("builtins", "sum_float", "float[] -> float"),
    ("builtins", "max_integer", "int int -> int"),
    ("builtins", "min_integer", "int int -> int"),
    ("builtins", "max_float", "float float -> float"),
    ("builtins", "min_float", "float float -> float"),
    ("builtins", "abs_integer", "int -> int"),
    ("builtins", "abs_float", "float -> float"),
    // Swift/T's names for the conversions and arithmetic above.
    ("builtins", "toint", "string -> int"),
    ("builtins", "fromint", "int -> string"),
    ("builtins", "tofloat", "string -> float"),
    ("builtins", "fromfloat", "float -> string"),
    ("builtins", "pow_integer", "int int -> float"),
    ("builtins", "pow_float", "float float -> float"),
    ("builtins", "xor", "boolean boolean -> boolean"),
    ("builtins", "rangestep", "int int int -> int[]"),
    ("builtins", "bag_size", "any[] -> int"),
    ("builtins", "ternary", "boolean int int -> int"),
    ("builtins", "input_url", "string -> string"),
    ("builtins", "urlname", "string -> string"),
    ("builtins", "turbine_workers", "-> int"),
    ("builtins", "turbine_engines", "-> int"),
    ("builtins", "adlb_servers", "-> int"),
    (
        "builtins",
        "location",
        "int strictness accuracy -> location",
    ),
    // Locus storage builtins (seeds 001, 004): where files live.
    ("builtins", "lookup", "string -> string"),
    ("builtins", "ip2rank", "string -> location"),
    ("builtins", "get_rank", "string -> int"),
    ("builtins", "set_rank", "string int ->"),
    ("builtins", "locationFromRank", "int -> location"),
    ("io", "printf", "string ... ->"),
    ("builtins", "sprintf", "string ... -> string"),
    ("string", "strlen", "string -> int"),
    ("string", "substring", "string int int -> string"),
    ("string", "find", "string string int int -> int"),
    ("string", "replace", "string string string int -> string"),
    (
        "string",
        "replace_all",
        "string string string int -> string",
    ),
    ("string", "split", "string string -> string[]"),
    ("string", "string_join", "string[] string -> string"),
    ("string", "trim", "string -> string"),
    ("string", "toupper", "string -> string"),
    ("string", "tolower", "string -> string"),
    ("string", "toUpper", "string -> string"),
    ("string", "toLower", "string -> string"),
    (
        "string",
        "replaceAll",
        "string string string int? -> string",
    ),
    ("string", "string_count", "string string int? int? -> int"),
    ("string", "isint", "string -> boolean"),
    ("string", "hash", "string -> int"),
    ("string", "string_from_floats", "float[] -> string"),
    ("string", "pick_regexp", "string string[] -> string[]"),
    ("string", "join", "string[] string -> string"),
    ("files", "glob", "string -> file[]"),
    ("files", "read", "file -> string"),
    ("files", "write", "string -> file"),
    ("files", "file_lines", "file -> string[]"),
    ("files", "file_exists", "string -> boolean"),
    ("files", "file_size", "file -> int"),
    ("files", "readFile", "file -> string"),
    ("files", "writeFile", "string -> file"),
    ("files", "file_type", "file -> string"),
    ("files", "file_mtime", "string -> int"),
    ("sys", "argv", "string string? -> string"),
    ("sys", "argc", "-> int"),
    ("sys", "argp", "int string? -> string"),
    ("sys", "args", "-> string"),
    ("sys", "argv_accept", "... ->"),
    ("sys", "clock_seconds", "-> int"),
    ("sys", "clock", "-> float"),
    ("sys", "clock_format", "string any -> string"),
    ("sys", "INT_MAX", "-> int"),
    ("sys", "argv_contains", "string -> boolean"),
    ("builtins", "getenv", "string -> string"),
    ("sys", "sleep", "float ->"),
    ("math", "sqrt", "float -> float"),
    ("math", "pow", "float float -> float"),
    ("math", "floor", "float -> float"),
    ("math", "ceil", "float -> float"),
    ("math", "round", "float -> float"),
    ("math", "log", "float float? -> float"),
    ("math", "abs", "T -> T"),
    ("math", "sin", "float -> float"),
    ("math", "cos", "float -> float"),
    ("math", "tan", "float -> float"),
    ("math", "asin", "float -> float"),
    ("math", "acos", "float -> float"),
    ("math", "atan", "float -> float"),
    ("math", "atan2", "float float -> float"),
    ("math", "isNaN", "float -> boolean"),
    ("stats", "avg", "any[] -> float"),
    ("math", "exp", "float -> float"),
    ("math", "is_nan", "float -> boolean"),
    ("assert", "assert", "boolean string ->"),
    ("assert", "assertEqual", "T T string ->"),
    ("assert", "assertLT", "T T string ->"),
    ("assert", "assertLTE", "T T string ->"),
    ("location", "hostmapOneWorker", "string -> int"),
    ("location", "hostmapList", "-> string[]"),
    ("location", "randomWorker", "-> location"),
    ("random", "random", "-> float"),
    ("python", "python", "string string? -> string"),
    ("python", "python_persist", "string string? -> string"),
    ("random", "randint", "int int -> int"),
];

/// The builtin the runtime runs for `name`: Swift/T's second names of a
/// builtin are the builtin itself.
pub fn runtime_name(name: &str) -> &str {
    match name {
        "readFile" => "read",
        "writeFile" => "write",
        other => other,
    }
}

/// Named constants: (module, name, type).
pub const CONSTANTS: &[(&str, &str, Type)] = &[
    ("builtins", "HARD", Type::Strictness),
    ("builtins", "SOFT", Type::Strictness),
    ("builtins", "RANK", Type::Accuracy),
    ("builtins", "NODE", Type::Accuracy),
    ("builtins", "NaN", Type::Float),
    ("builtins", "inf", Type::Float),
    ("sys", "CLOCK_FMT_ISO8601", Type::String),
    ("sys", "CLOCK_FMT_RFC3339", Type::String),
    ("math", "PI", Type::Float),
    ("math", "E", Type::Float),
];

#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    Is(Type),
    Any,
    AnyArray,
    /// The same type as the first `T` argument.
    Same,
}

#[derive(Debug, Clone)]
pub struct Signature {
    pub module: &'static str,
    pub name: &'static str,
    pub inputs: Vec<ParamKind>,
    /// Inputs from this index on may be left out.
    pub required: usize,
    /// Further arguments of any type are accepted.
    pub variadic: bool,
    pub outputs: Vec<Type>,
}

fn parse_type(word: &str) -> ParamKind {
    match word {
        "any" => ParamKind::Any,
        "any[]" => ParamKind::AnyArray,
        "T" => ParamKind::Same,
        "strictness" => ParamKind::Is(Type::Strictness),
        "accuracy" => ParamKind::Is(Type::Accuracy),
        w => match w.strip_suffix("[]") {
            Some(elem) => ParamKind::Is(Type::array_of(Type::primitive(elem).expect("table type"))),
            None => ParamKind::Is(Type::primitive(w).expect("table type")),
        },
    }
}

fn kind_type(k: ParamKind) -> Type {
    match k {
        ParamKind::Is(t) => t,
        _ => Type::Error,
    }
}

/// The signature of builtin `name`, if there is one.
pub fn lookup(name: &str) -> Option<Signature> {
    let &(module, name, spec) = TABLE.iter().find(|(_, n, _)| *n == name)?;
    let (ins, outs) = spec.split_once("->").expect("table signature");
    let mut inputs = Vec::new();
    let mut required = 0;
    let mut variadic = false;
    for w in ins.split_whitespace() {
        if w == "..." {
            variadic = true;
        } else if let Some(opt) = w.strip_suffix('?') {
            inputs.push(parse_type(opt));
        } else {
            inputs.push(parse_type(w));
            required = inputs.len();
        }
    }
    let outputs = outs
        .split_whitespace()
        .map(|w| kind_type(parse_type(w)))
        .collect();
    Some(Signature {
        module,
        name,
        inputs,
        required,
        variadic,
        outputs,
    })
}

/// Every builtin function's name.
pub fn names() -> impl Iterator<Item = &'static str> {
    TABLE.iter().map(|(_, n, _)| *n)
}

/// The known name closest to `name` (at most two edits away, ignoring
/// case), for "did you mean".
pub fn nearest<'k>(name: &str, known: impl Iterator<Item = &'k str>) -> Option<String> {
    let lower = name.to_lowercase();
    known
        .filter(|k| *k != name)
        .map(|k| (edit_distance(&lower, &k.to_lowercase()), k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| k.to_string())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

pub fn constant(name: &str) -> Option<(&'static str, Type)> {
    CONSTANTS
        .iter()
        .find(|(_, n, _)| *n == name)
        .map(|(m, _, t)| (*m, t.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signature_parses() {
        for (_, name, _) in TABLE {
            let s = lookup(name).unwrap();
            assert!(MODULES.contains(&s.module), "{name}");
        }
        let argv = lookup("argv").unwrap();
        assert_eq!((argv.inputs.len(), argv.required), (2, 1));
        assert!(lookup("printf").unwrap().variadic);
    }
}
