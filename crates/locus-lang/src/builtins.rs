//! The built-in library: one entry per builtin, with the module that must
//! be imported for it, the names a script may call it by (Swift/T's first,
//! then its second names), and its signature. Signatures are written
//! compactly, e.g. `"string int? -> string"`: `any` is any type, `any[]`
//! any array, `T` the type of the first `T` argument, `...` any number of
//! further arguments of any type, `?` optional.
//!
//! Each builtin is a variant of the enum of where the runtime evaluates it
//! ([`Pure`], [`Run`], [`Effect`], [`Task`]); the runtime matches each enum
//! exhaustively, so a builtin without an implementation does not compile.

use crate::types::Type;
use serde::{Deserialize, Serialize};

/// Modules a script may import. Functions of `builtins` need no import.
pub const MODULES: &[&str] = &[
    "assert", "blob", "builtins", "files", "io", "json", "launch", "location", "math", "python",
    "R", "random", "stats", "string", "sys", "unix",
];

macro_rules! library {
    ($(
        $(#[$doc:meta])*
        $kind:ident {
            $($variant:ident: $module:ident $name:literal $(| $alias:literal)* => $sig:literal,)*
        }
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
            pub enum $kind { $($variant),* }

            impl From<$kind> for Builtin {
                fn from(b: $kind) -> Builtin {
                    Builtin::$kind(b)
                }
            }

            impl $kind {
                /// The builtin's first name, for messages.
                pub fn name(self) -> &'static str {
                    match self {
                        $($kind::$variant => $name,)*
                    }
                }
            }
        )*

        /// A builtin, by where the runtime evaluates it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum Builtin { $($kind($kind)),* }

        /// (builtin, module, name, signature), one row per name.
        const TABLE: &[(Builtin, &str, &str, &str)] = &[
            $($(
                (Builtin::$kind($kind::$variant), stringify!($module), $name, $sig),
                $((Builtin::$kind($kind::$variant), stringify!($module), $alias, $sig),)*
            )*)*
        ];
    };
}

library! {
    /// A function of its argument values (and of the run's arguments and
    /// environment), evaluated by the control task that reads them.
    Pure {
        Size: builtins "size" | "bag_size" | "bagSize" => "any[] -> int",
        ToString: builtins "toString" | "repr" | "bool2string" | "boolean2string" => "any -> string",
        FromInt: builtins "fromint" | "fromInt" | "int2string" => "int -> string",
        FromFloat: builtins "fromfloat" | "fromFloat" | "float2string" => "float -> string",
        // Swift/T converts a float with toInt and parses a string with
        // toint; Locus's earlier toInt parsed strings: both are accepted.
        ToInt: builtins "toInt" => "any -> int",
        FloatToInt: builtins "float2int" | "ftoi" => "float -> int",
        ParseInt: builtins "toint" => "string -> int",
        ParseIntBase: builtins "parseInt" | "string2int" => "string int? -> int",
        ToFloat: builtins "toFloat" => "any -> float",
        IntToFloat: builtins "itof" | "int2float" => "int -> float",
        ParseFloat: builtins "tofloat" | "parseFloat" | "string2float" => "string -> float",
        ParseBool: builtins "string2bool" | "string2boolean" => "string -> boolean",
        Strcat: builtins "strcat" => "... -> string",
        Dircat: builtins "dircat" => "... -> string",
        Length: builtins "length" => "string -> int",
        Sprintf: builtins "sprintf" => "string ... -> string",
        Filename: builtins "filename" => "file -> string",
        Input: builtins "input" | "input_file" | "unsafe_uncached_input_file" => "string -> file",
        InputUrl: builtins "input_url" | "urlname" => "string -> string",
        Contains: builtins "contains" => "any[] any -> boolean",
        Exists: builtins "exists" => "any[] any -> boolean",
        KeysString: builtins "keys_string" => "any[] -> string[]",
        KeysInteger: builtins "keys_integer" => "any[] -> int[]",
        ArrayRepr: builtins "array_repr" => "any[] -> string[]",
        PickIntegerString: builtins "pick_integer_string" => "string[] int[] -> string[]",
        PickStableIntegerString: builtins "pick_stable_integer_string" => "string[] int[] -> string[]",
        Range: builtins "range" => "int int int? -> int[]",
        RangeStep: builtins "range_step" | "rangestep" => "int int int -> int[]",
        RangeFloat: builtins "range_float" => "float float float? -> float[]",
        RangeFloatStep: builtins "range_float_step" => "float float float -> float[]",
        MakeVoid: builtins "make_void" | "makeVoid" | "propagate" => "... -> void",
        SumInteger: builtins "sum_integer" => "int[] -> int",
        SumFloat: builtins "sum_float" => "float[] -> float",
        MaxInteger: builtins "max_integer" => "int int -> int",
        MinInteger: builtins "min_integer" => "int int -> int",
        MaxFloat: builtins "max_float" => "float float -> float",
        MinFloat: builtins "min_float" => "float float -> float",
        Max: builtins "max" => "T T -> T",
        Min: builtins "min" => "T T -> T",
        AbsInteger: builtins "abs_integer" => "int -> int",
        AbsFloat: builtins "abs_float" => "float -> float",
        PowInteger: builtins "pow_integer" => "int int -> float",
        PowFloat: builtins "pow_float" => "float float -> float",
        Xor: builtins "xor" => "boolean boolean -> boolean",
        Ternary: builtins "ternary" | "ternary_integer" => "boolean int int -> int",
        TernaryString: builtins "ternary_string" => "boolean string string -> string",
        TurbineEngines: builtins "turbine_engines" => "-> int",
        Location: builtins "location" => "int strictness accuracy -> location",
        LocationFromRank: builtins "locationFromRank" | "location_from_rank" | "rank2location" => "int -> location",
        Getenv: builtins "getenv" => "string -> string",
        Strlen: string "strlen" => "string -> int",
        Substring: string "substring" => "string int int -> string",
        Find: string "find" => "string string int int -> int",
        Replace: string "replace" => "string string string int -> string",
        ReplaceAll: string "replace_all" | "replaceAll" => "string string string int? int? -> string",
        Split: string "split" => "string string? -> string[]",
        Join: string "string_join" | "join" => "string[] string? -> string",
        JoinArgs: string "join_args" => "string ... -> string",
        Trim: string "trim" => "string -> string",
        ToUpper: string "toupper" | "toUpper" => "string -> string",
        ToLower: string "tolower" | "toLower" => "string -> string",
        StringCount: string "string_count" => "string string int? int? -> int",
        IsInt: string "isint" => "string -> boolean",
        Hash: string "hash" => "string -> int",
        StringFromFloats: string "string_from_floats" => "float[] -> string",
        PickRegexp: string "pick_regexp" => "string string[] -> string[]",
        Argv: sys "argv" => "string string? -> string",
        Argc: sys "argc" => "-> int",
        Argp: sys "argp" => "int string? -> string",
        Args: sys "args" => "-> string",
        ArgvContains: sys "argv_contains" => "string -> boolean",
        ClockSeconds: sys "clock_seconds" => "-> int",
        Clock: sys "clock" => "-> float",
        ClockFormat: sys "clock_format" => "string any -> string",
        IntMax: sys "INT_MAX" => "-> int",
        Sqrt: math "sqrt" => "float -> float",
        Pow: builtins "pow" => "T T -> float",
        Floor: math "floor" => "float -> float",
        Ceil: math "ceil" => "float -> float",
        Round: math "round" => "float -> float",
        Log: math "log" => "float float? -> float",
        Exp: math "exp" => "float -> float",
        Ln: math "ln" => "float -> float",
        Log10: math "log10" => "float -> float",
        Cbrt: math "cbrt" => "float -> float",
        Abs: math "abs" => "T -> T",
        Sin: math "sin" => "float -> float",
        Cos: math "cos" => "float -> float",
        Tan: math "tan" => "float -> float",
        Asin: math "asin" => "float -> float",
        Acos: math "acos" => "float -> float",
        Atan: math "atan" => "float -> float",
        Atan2: math "atan2" => "float float -> float",
        IsNan: math "isNaN" | "is_nan" => "float -> boolean",
        Avg: stats "avg" => "any[] -> float",
        Std: stats "std" => "any[] -> float",
        Stats: stats "stats" => "any[] -> float float",
        Random: random "random" => "-> float",
        Randint: random "randint" => "int int -> int",
        Dirname: files "dirname" => "file -> string",
        DirnameString: files "dirname_string" => "string -> string",
        Basename: files "basename" => "file -> string",
        BasenameString: files "basename_string" => "string -> string",
        Rootname: files "rootname" => "file -> string",
        RootnameString: files "rootname_string" => "string -> string",
        Extension: files "extension" => "file -> string",
        ExtensionString: files "extension_string" => "string -> string",
        Realpath: files "realpath" => "file -> file",
        RealpathString: files "realpath_string" => "string -> string",
        JsonGet: json "json_get" => "string string -> string",
        JsonGetInt: json "json_get_int" => "string string -> int",
        JsonGetFloat: json "json_get_float" => "string string -> float",
        JsonGetBoolean: json "json_get_boolean" => "string string -> boolean",
        JsonType: json "json_type" => "string string -> string",
        JsonArraySize: json "json_array_size" => "string string -> int",
        JsonObjectNames: json "json_object_names" => "string string -> string",
        JsonArrayify: json "json_arrayify" => "string -> string",
        JsonObjectify: json "json_objectify" => "string -> string",
        JsonEncodeArray: json "json_encode_array" => "... -> string",
        JsonEncodeArrayContents: json "json_encode_array_contents" => "... -> string",
        JsonEncodeArrayRetype: json "json_encode_array_retype" => "string[] ... -> string",
        JsonEncodeArrayContentsRetype: json "json_encode_array_contents_retype" => "string[] ... -> string",
        JsonEncodeArrayFormat: json "json_encode_array_format" => "string ... -> string",
        JsonEncodeArrayContentsFormat: json "json_encode_array_contents_format" => "string ... -> string",
        JsonEncodeObject: json "json_encode_object" => "string[] ... -> string",
        JsonEncodeObjectContents: json "json_encode_object_contents" => "string[] ... -> string",
        JsonEncodeObjectRetype: json "json_encode_object_retype" => "string[] string[] ... -> string",
        JsonEncodeObjectContentsRetype: json "json_encode_object_contents_retype" => "string[] string[] ... -> string",
        JsonEncodeObjectFormat: json "json_encode_object_format" => "string[] string ... -> string",
        JsonEncodeObjectContentsFormat: json "json_encode_object_contents_format" => "string[] string ... -> string",
        BlobSize: blob "blob_size" => "blob -> int",
        BlobNull: blob "blob_null" => "-> blob",
        BlobFromString: blob "blob_from_string" => "string -> blob",
        StringFromBlob: blob "string_from_blob" => "blob -> string",
        BlobFromFloats: blob "blob_from_floats" => "float[] -> blob",
        BlobFromInts: blob "blob_from_ints" => "int[] -> blob",
        FloatsFromBlob: blob "floats_from_blob" => "blob -> float[]",
        IntsFromBlob: blob "ints_from_blob" => "blob -> int[]",
        BlobZeroesFloat: blob "blob_zeroes_float" => "int -> blob",
    }

    /// Reads the run: its layout and its file system (the storage builtins
    /// of the seeds, Swift/T's hostmap builtins, and the file builtins,
    /// whose paths may be Locus files or host files).
    Run {
        Lookup: builtins "lookup" => "string -> string",
        Ip2rank: builtins "ip2rank" => "string -> location",
        GetRank: builtins "get_rank" => "string -> int",
        SetRank: builtins "set_rank" => "string int ->",
        TurbineWorkers: builtins "turbine_workers" => "-> int",
        AdlbServers: builtins "adlb_servers" => "-> int",
        HostmapOneWorker: location "hostmapOneWorker" | "hostmap_one_worker" => "string -> location",
        HostmapOneWorkerRank: location "hostmapOneWorkerRank" => "string -> int",
        HostmapOne: location "hostmapOne" | "hostmap_one" => "string -> location",
        HostmapOneRank: location "hostmapOneRank" => "string -> int",
        HostmapList: location "hostmapList" | "hostmap_list" => "-> string[]",
        RandomWorker: location "randomWorker" | "random_worker" | "random_engine" => "-> location",
        RandomWorkerRank: location "randomWorkerRank" => "-> int",
        Read: files "read" | "readFile" => "file -> string",
        Write: files "write" | "writeFile" => "string -> file",
        FileLines: files "file_lines" => "file string? -> string[]",
        FileChunks: files "file_chunks" => "file string? string? -> string[]",
        FileTypeString: files "file_type_string" => "string -> string",
        MktempString: files "mktemp_string" => "-> string",
        Mktemp: files "mktemp" => "-> file",
        WriteArrayString: files "write_array_string" => "string[] int -> file",
        WriteArrayStringOrdered: files "write_array_string_ordered" => "string[] -> file",
        FileExists: files "file_exists" => "string -> boolean",
        FileSize: files "file_size" => "file -> int",
        FileType: files "file_type" => "file -> string",
        FileMtime: files "file_mtime" => "string -> int",
        Glob: files "glob" => "string -> file[]",
        JsonListLength: json "json_list_length" => "file string -> string",
        JsonDictEntries: json "json_dict_entries" => "file string -> string",
        BlobRead: blob "blob_read" => "file -> blob",
    }

    /// Produces no value: output and checks, by the control task.
    Effect {
        Trace: builtins "trace" => "... -> void",
        Printf: io "printf" => "string ... -> void",
        Assert: assert "assert" => "boolean string ->",
        AssertEqual: assert "assertEqual" => "T T string ->",
        AssertLt: assert "assertLT" => "T T string ->",
        AssertLte: assert "assertLTE" => "T T string ->",
        ArgvAccept: sys "argv_accept" => "... ->",
    }

    /// Runs on a worker, as a leaf task.
    Task {
        Sleep: sys "sleep" => "float -> void",
        SleepTrace: builtins "sleep_trace" => "float ... -> void",
        Python: python "python" => "string string? -> string",
        PythonPersist: python "python_persist" => "string string? -> string",
        R: R "R" => "string string? -> string",
        RPersist: R "R_persist" => "string string? -> string",
        System: sys "system" => "string[] -> string int",
        System1: sys "system1" => "string -> string int",
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
    pub builtin: Builtin,
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
    TABLE
        .iter()
        .find(|(_, _, n, _)| *n == name)
        .map(|row| signature(*row))
}

/// Every builtin's signature, one per name.
pub fn signatures() -> impl Iterator<Item = Signature> {
    TABLE.iter().map(|row| signature(*row))
}

fn signature(
    (builtin, module, name, spec): (Builtin, &'static str, &'static str, &str),
) -> Signature {
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
    Signature {
        builtin,
        module,
        name,
        inputs,
        required,
        variadic,
        outputs,
    }
}

/// Every builtin function's name.
pub fn names() -> impl Iterator<Item = &'static str> {
    TABLE.iter().map(|(_, _, n, _)| *n)
}

impl Builtin {
    /// The builtin's first name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Pure(b) => b.name(),
            Builtin::Run(b) => b.name(),
            Builtin::Effect(b) => b.name(),
            Builtin::Task(b) => b.name(),
        }
    }
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
        for (builtin, _, name, _) in TABLE {
            let s = lookup(name).unwrap();
            assert!(MODULES.contains(&s.module), "{name}");
            assert_eq!(s.builtin, *builtin);
        }
        let names: std::collections::HashSet<_> = names().collect();
        assert_eq!(names.len(), TABLE.len(), "a name is given twice");
        let argv = lookup("argv").unwrap();
        assert_eq!((argv.inputs.len(), argv.required), (2, 1));
        assert!(lookup("printf").unwrap().variadic);
    }
}
