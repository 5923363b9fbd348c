//! Builtin operators and functions, evaluated by control tasks on values
//! that are already closed.

pub(crate) mod cmdline;
pub(crate) mod format;
pub(crate) mod json;
pub(crate) mod paths;
pub(crate) mod storage;
pub(crate) mod strings;
pub(crate) mod text_files;

use crate::engine::value::{format_float, Key, Location, Value};
use crate::CommandLine;
use format::sprintf;
use locus_lang::ast::{BinOp, UnOp};
use locus_lang::builtins::{Effect, Pure};
use locus_proto::run::RunError;
use std::collections::BTreeMap;

/// The most elements an array made from a range may have: all of them are
/// held in memory at once.
const MAX_RANGE_ARRAY: u64 = 1 << 26;

/// `e`, said by the builtin `name` (its kind kept).
fn named(name: &str, e: RunError) -> RunError {
    RunError::new(e.kind, format!("{name}: {}", e.message))
}

/// How many values `[lo:hi:step]` has, for any ints.
pub(crate) fn range_len(lo: i64, hi: i64, step: i64) -> Result<u64, RunError> {
    if step <= 0 {
        return Err(RunError::script(format!(
            "range step must be positive, not {step}"
        )));
    }
    Ok(if hi < lo {
        0
    } else {
        ((i128::from(hi) - i128::from(lo)) / i128::from(step)) as u64 + 1
    })
}

/// The `k`th value of a range starting at `lo` (in range: at most its end).
pub(crate) fn range_value(lo: i64, step: i64, k: u64) -> i64 {
    (i128::from(lo) + i128::from(k) * i128::from(step)) as i64
}

/// What builtins may read of the run.
pub(crate) struct Context<'a> {
    pub args: &'a CommandLine,
}

fn int(v: &Value) -> Result<i64, RunError> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(RunError::script(format!(
            "expected an int, got {}",
            other.render()
        ))),
    }
}

fn float(v: &Value) -> Result<f64, RunError> {
    match v {
        Value::Float(x) => Ok(*x),
        Value::Int(i) => Ok(*i as f64),
        other => Err(RunError::script(format!(
            "expected a float, got {}",
            other.render()
        ))),
    }
}

fn boolean(v: &Value) -> Result<bool, RunError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(RunError::script(format!(
            "expected a boolean, got {}",
            other.render()
        ))),
    }
}

fn blob(v: &Value) -> Result<&[u8], RunError> {
    match v {
        Value::Blob(b) => Ok(b),
        other => Err(RunError::script(format!(
            "expected a blob, got {}",
            other.render()
        ))),
    }
}

/// A blob's 8-byte words.
fn words<'b>(name: &str, b: &'b [u8]) -> Result<impl Iterator<Item = [u8; 8]> + 'b, RunError> {
    if !b.len().is_multiple_of(8) {
        return Err(RunError::script(format!(
            "{name}: a blob of {} bytes is not a whole number of 8-byte values",
            b.len()
        )));
    }
    Ok(b.chunks_exact(8).map(|w| w.try_into().expect("8 bytes")))
}

pub(crate) fn string(v: &Value) -> Result<&str, RunError> {
    match v {
        Value::Str(s) | Value::File(s) => Ok(s),
        other => Err(RunError::script(format!(
            "expected a string, got {}",
            other.render()
        ))),
    }
}

fn members(v: &Value) -> Result<&BTreeMap<Key, Value>, RunError> {
    match v {
        Value::Container(m) => Ok(m),
        other => Err(RunError::script(format!(
            "expected an array, got {}",
            other.render()
        ))),
    }
}

pub(crate) fn array(items: impl IntoIterator<Item = Value>) -> Value {
    Value::Container(
        items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (Key::Int(i as i64), v))
            .collect(),
    )
}

pub(crate) fn binary(op: BinOp, a: &Value, b: &Value) -> Result<Value, RunError> {
    use Value::*;
    Ok(match (op, a, b) {
        (BinOp::Or, Bool(x), Bool(y)) => Bool(*x || *y),
        (BinOp::And, Bool(x), Bool(y)) => Bool(*x && *y),
        (BinOp::Eq, x, y) => Bool(x == y),
        (BinOp::Ne, x, y) => Bool(x != y),
        (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, x, y) => {
            let ord = match (x, y) {
                (Int(p), Int(q)) => p.partial_cmp(q),
                (Float(p), Float(q)) => p.partial_cmp(q),
                (Str(p), Str(q)) => p.partial_cmp(q),
                _ => None,
            };
            let Some(o) = ord else { return Ok(Bool(false)) };
            Bool(match op {
                BinOp::Lt => o.is_lt(),
                BinOp::Le => o.is_le(),
                BinOp::Gt => o.is_gt(),
                _ => o.is_ge(),
            })
        }
        // Swift/T: a power is a float, of ints too.
        (BinOp::Pow, Int(x), Int(y)) => Float((*x as f64).powf(*y as f64)),
        (BinOp::IntDiv | BinOp::Mod, Int(_), Int(0)) => {
            return Err(RunError::script("integer division by zero"))
        }
        // A result past 64 bits is an error, never a wrapped number (Swift/T's
        // Tcl would give the big number). Division is Swift/T's: truncated,
        // the remainder with the dividend's sign (-7 %/ 2 is -3, -7 %% 2 is
        // -1), as Java and C.
        (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::IntDiv | BinOp::Mod, Int(x), Int(y)) => {
            let result = match op {
                BinOp::Add => x.checked_add(*y),
                BinOp::Sub => x.checked_sub(*y),
                BinOp::Mul => x.checked_mul(*y),
                BinOp::IntDiv => x.checked_div(*y),
                _ => x.checked_rem(*y),
            };
            Int(result.ok_or_else(|| too_big(format!("{x} {} {y}", op.symbol())))?)
        }
        (BinOp::Add, Float(x), Float(y)) => Float(x + y),
        (BinOp::Sub, Float(x), Float(y)) => Float(x - y),
        (BinOp::Mul, Float(x), Float(y)) => Float(x * y),
        (BinOp::Div, Float(x), Float(y)) => Float(x / y),
        (BinOp::Pow, Float(x), Float(y)) => Float(x.powf(*y)),
        (BinOp::Add, Str(x), Str(y)) => Str(format!("{x}{y}")),
        (BinOp::Div, Str(x), Str(y)) => Str(format!("{x}/{y}")),
        (op, x, y) => {
            return Err(RunError::script(format!(
                "{op:?} of {} and {}",
                x.render(),
                y.render()
            )))
        }
    })
}

/// The error of an integer result past 64 bits, `what` being how it was
/// computed.
fn too_big(what: String) -> RunError {
    RunError::script(format!("integer overflow: {what} does not fit in 64 bits"))
}

/// `|i|`, which the most negative integer has none of.
fn abs_int(i: i64) -> Result<i64, RunError> {
    i.checked_abs().ok_or_else(|| too_big(format!("abs({i})")))
}

pub(crate) fn unary(op: UnOp, a: &Value) -> Result<Value, RunError> {
    Ok(match (op, a) {
        (UnOp::Not, Value::Bool(b)) => Value::Bool(!b),
        (UnOp::Neg, Value::Int(i)) => {
            Value::Int(i.checked_neg().ok_or_else(|| too_big(format!("-({i})")))?)
        }
        (UnOp::Neg, Value::Float(x)) => Value::Float(-x),
        (op, v) => return Err(RunError::script(format!("{op:?} of {}", v.render()))),
    })
}

/// The mean and population standard deviation of an array of numbers.
fn mean_std(name: &str, m: &BTreeMap<Key, Value>) -> Result<(f64, f64), RunError> {
    if m.is_empty() {
        return Err(RunError::script(format!("{name} of an empty array")));
    }
    let xs: Vec<f64> = m.values().map(float).collect::<Result<_, _>>()?;
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    Ok((mean, var.sqrt()))
}

/// Evaluates a builtin of values: the values of its outputs.
/// One of the `json_encode_*` family: an array's or an object's members
/// (with `_contents`, without the brackets), their names and how they are
/// written taken from the leading arguments.
fn json_encode(op: Pure, a: &[Value]) -> Result<Value, RunError> {
    use json::Encoding;
    /// How the members are written: by type, by type names, by format.
    enum By {
        Infer,
        Retype,
        Format,
    }
    let (object, contents, by) = match op {
        Pure::JsonEncodeArray => (false, false, By::Infer),
        Pure::JsonEncodeArrayContents => (false, true, By::Infer),
        Pure::JsonEncodeArrayRetype => (false, false, By::Retype),
        Pure::JsonEncodeArrayContentsRetype => (false, true, By::Retype),
        Pure::JsonEncodeArrayFormat => (false, false, By::Format),
        Pure::JsonEncodeArrayContentsFormat => (false, true, By::Format),
        Pure::JsonEncodeObject => (true, false, By::Infer),
        Pure::JsonEncodeObjectContents => (true, true, By::Infer),
        Pure::JsonEncodeObjectRetype => (true, false, By::Retype),
        Pure::JsonEncodeObjectContentsRetype => (true, true, By::Retype),
        Pure::JsonEncodeObjectFormat => (true, false, By::Format),
        _ => (true, true, By::Format),
    };
    let name = op.name();
    let lead = |i: usize| {
        a.get(i)
            .ok_or_else(|| RunError::script(format!("{name}: missing argument {}", i + 1)))
    };
    let strings = |i: usize| -> Result<Vec<String>, RunError> {
        members(lead(i)?)?
            .values()
            .map(|s| string(s).map(String::from))
            .collect()
    };
    let names = match object {
        true => Some(strings(0)?),
        false => None,
    };
    let at = usize::from(object);
    let types;
    let (how, values) = match by {
        By::Infer => (Encoding::Infer, &a[at..]),
        By::Retype => {
            types = strings(at)?;
            (Encoding::Types(&types), &a[at + 1..])
        }
        By::Format => (Encoding::Format(string(lead(at)?)?), &a[at + 1..]),
    };
    let members = json::encode(name, names.as_deref(), how, values)?;
    Ok(Value::Str(match (contents, object) {
        (true, _) => members,
        (false, false) => format!("[{members}]"),
        (false, true) => format!("{{{members}}}"),
    }))
}

pub(crate) fn pure(op: Pure, a: &[Value], cx: &Context) -> Result<Vec<Value>, RunError> {
    let name = op.name();
    let arg = |i: usize| {
        a.get(i)
            .ok_or_else(|| RunError::script(format!("{name}: missing argument {}", i + 1)))
    };
    let one = match op {
        Pure::Size => Value::Int(members(arg(0)?)?.len() as i64),
        Pure::ToString | Pure::FromInt | Pure::FromFloat => Value::Str(arg(0)?.render()),
        Pure::ToInt | Pure::FloatToInt if !matches!(arg(0)?, Value::Str(_)) => {
            let x = float(arg(0)?)?;
            if !x.is_finite() {
                return Err(RunError::script(format!(
                    "{name}: {} is not a finite number",
                    format_float(x)
                )));
            }
            Value::Int(x.trunc() as i64)
        }
        Pure::ToInt | Pure::FloatToInt | Pure::ParseInt | Pure::ParseIntBase => {
            let s = string(arg(0)?)?;
            let base = a.get(1).map(int).transpose()?.unwrap_or(10);
            if !(2..=36).contains(&base) {
                return Err(RunError::script(format!(
                    "{name}: base {base} is not between 2 and 36"
                )));
            }
            Value::Int(
                i64::from_str_radix(s.trim(), base as u32)
                    .map_err(|_| RunError::script(format!("{name}: '{s}' is not an integer")))?,
            )
        }
        Pure::ToFloat | Pure::IntToFloat if !matches!(arg(0)?, Value::Str(_)) => {
            Value::Float(float(arg(0)?)?)
        }
        Pure::ToFloat | Pure::IntToFloat | Pure::ParseFloat => {
            let s = string(arg(0)?)?;
            Value::Float(
                s.trim()
                    .parse()
                    .map_err(|_| RunError::script(format!("{name}: '{s}' is not a number")))?,
            )
        }
        // Tcl's boolean words.
        Pure::ParseBool => {
            let s = string(arg(0)?)?;
            Value::Bool(match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => true,
                "false" | "0" | "no" | "off" => false,
                _ => return Err(RunError::script(format!("{name}: '{s}' is not a boolean"))),
            })
        }
        Pure::Strcat => Value::Str(a.iter().map(Value::render).collect()),
        // What `dir/"name"` gives, for any number of parts.
        Pure::Dircat => Value::Str(a.iter().map(Value::render).collect::<Vec<_>>().join("/")),
        Pure::Length | Pure::Strlen => Value::Int(string(arg(0)?)?.chars().count() as i64),
        Pure::Sprintf => Value::Str(sprintf(string(arg(0)?)?, &a[1..])?),
        Pure::Filename | Pure::InputUrl => Value::Str(string(arg(0)?)?.to_string()),
        Pure::Input => Value::File(string(arg(0)?)?.to_string()),
        // Swift/T's: whether the array has the key (`exists` waits for the
        // array to be closed here, so it answers as `contains` does).
        Pure::Contains | Pure::Exists => {
            let key = arg(1)?.key().ok_or_else(|| {
                RunError::script(format!(
                    "{name}: {} is not a key",
                    arg(1).map_or(String::new(), Value::render)
                ))
            })?;
            Value::Bool(members(arg(0)?)?.contains_key(&key))
        }
        Pure::KeysString => array(members(arg(0)?)?.keys().map(|k| Value::Str(k.to_string()))),
        Pure::KeysInteger => array(
            members(arg(0)?)?
                .keys()
                .map(|k| match k {
                    Key::Int(i) => Ok(Value::Int(*i)),
                    k => Err(RunError::script(format!("{name}: key {k} is not an int"))),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Pure::ArrayRepr => array(members(arg(0)?)?.values().map(|v| Value::Str(v.render()))),
        Pure::PickIntegerString | Pure::PickStableIntegerString => {
            let from = members(arg(0)?)?;
            let mut picked = BTreeMap::new();
            for (n, i) in members(arg(1)?)?.values().enumerate() {
                let i = int(i)?;
                let v = from.get(&Key::Int(i)).ok_or_else(|| {
                    RunError::script(format!("{name}: the array has no element {i}"))
                })?;
                let k = if op == Pure::PickStableIntegerString {
                    i
                } else {
                    n as i64
                };
                picked.insert(Key::Int(k), v.clone());
            }
            Value::Container(picked)
        }
        Pure::Range | Pure::RangeStep => {
            let (lo, hi) = (int(arg(0)?)?, int(arg(1)?)?);
            let step = a.get(2).map(int).transpose()?.unwrap_or(1);
            let len = range_len(lo, hi, step)?;
            if len > MAX_RANGE_ARRAY {
                return Err(RunError::script(format!(
                    "[{lo}:{hi}:{step}] has {len} elements; an array made from a range holds \
                     at most {MAX_RANGE_ARRAY} (a foreach over the range itself is not held \
                     in memory)"
                )));
            }
            array((0..len).map(|k| Value::Int(range_value(lo, step, k))))
        }
        Pure::RangeFloat | Pure::RangeFloatStep => {
            let (lo, hi) = (float(arg(0)?)?, float(arg(1)?)?);
            let step = a.get(2).map(float).transpose()?.unwrap_or(1.0);
            if !(step > 0.0 && step.is_finite() && lo.is_finite() && hi.is_finite()) {
                return Err(RunError::script(format!(
                    "[{lo}:{hi}:{step}]: the step must be a positive number"
                )));
            }
            // Counted, not summed, so rounding does not add or drop the
            // last value: lo + k*step up to hi (within rounding).
            let len = ((hi - lo) / step + 1e-9).floor() + 1.0;
            let len = if len > 0.0 { len } else { 0.0 };
            if len > MAX_RANGE_ARRAY as f64 {
                return Err(RunError::script(format!(
                    "[{lo}:{hi}:{step}] has {len} elements; a float range holds at most \
                     {MAX_RANGE_ARRAY}"
                )));
            }
            array((0..len as u64).map(|k| Value::Float(lo + k as f64 * step)))
        }
        Pure::MakeVoid => Value::Bool(true),
        Pure::SumInteger => Value::Int(members(arg(0)?)?.values().try_fold(0i64, |sum, v| {
            let v = int(v)?;
            sum.checked_add(v)
                .ok_or_else(|| too_big(format!("sum_integer: {sum} + {v}")))
        })?),
        Pure::SumFloat => Value::Float(
            members(arg(0)?)?
                .values()
                .map(float)
                .sum::<Result<f64, _>>()?,
        ),
        Pure::MaxInteger => Value::Int(int(arg(0)?)?.max(int(arg(1)?)?)),
        Pure::MinInteger => Value::Int(int(arg(0)?)?.min(int(arg(1)?)?)),
        Pure::MaxFloat => Value::Float(float(arg(0)?)?.max(float(arg(1)?)?)),
        Pure::MinFloat => Value::Float(float(arg(0)?)?.min(float(arg(1)?)?)),
        Pure::Max | Pure::Min => {
            let (x, y) = (arg(0)?, arg(1)?);
            let first = match binary(BinOp::Lt, x, y)? {
                Value::Bool(lt) => lt == (op == Pure::Min),
                _ => unreachable!("a comparison gives a boolean"),
            };
            if first {
                x.clone()
            } else {
                y.clone()
            }
        }
        Pure::AbsInteger => Value::Int(abs_int(int(arg(0)?)?)?),
        Pure::AbsFloat => Value::Float(float(arg(0)?)?.abs()),
        Pure::Abs => match arg(0)? {
            Value::Int(i) => Value::Int(abs_int(*i)?),
            v => Value::Float(float(v)?.abs()),
        },
        Pure::PowInteger | Pure::PowFloat | Pure::Pow => {
            Value::Float(float(arg(0)?)?.powf(float(arg(1)?)?))
        }
        Pure::Xor => Value::Bool(boolean(arg(0)?)? != boolean(arg(1)?)?),
        Pure::Ternary | Pure::TernaryString => {
            if boolean(arg(0)?)? {
                arg(1)?.clone()
            } else {
                arg(2)?.clone()
            }
        }
        // Engines no longer exist in Swift/T: it answers 0.
        Pure::TurbineEngines => Value::Int(0),
        Pure::Avg | Pure::Std => {
            let (mean, std) = mean_std(name, members(arg(0)?)?)?;
            Value::Float(if op == Pure::Avg { mean } else { std })
        }
        Pure::Stats => {
            let (mean, std) = mean_std(name, members(arg(0)?)?)?;
            return Ok(vec![Value::Float(mean), Value::Float(std)]);
        }
        Pure::Location => match (arg(1)?, arg(2)?) {
            (Value::Strictness(hard), Value::Accuracy(node)) => Value::Location(Location {
                rank: int(arg(0)?)?,
                hard: *hard,
                node: *node,
            }),
            _ => return Err(RunError::script("location(rank, HARD|SOFT, RANK|NODE)")),
        },
        Pure::LocationFromRank => Value::Location(Location {
            rank: int(arg(0)?)?,
            hard: true,
            node: false,
        }),
        Pure::Args => Value::Str(cx.args.args().to_string()),
        Pure::ClockSeconds => Value::Int(since_epoch().as_secs() as i64),
        // Seconds, to the millisecond, as Swift/T's clock() gives them.
        Pure::Clock => Value::Float(since_epoch().as_millis() as f64 / 1000.0),
        Pure::ClockFormat => Value::Str(clock_format(string(arg(0)?)?, float(arg(1)?)?)?),
        // Swift/T's INT_MAX() is Tcl's `format %X -1` with its first F made
        // a 7: the 32-bit maximum, whatever Swift/T's ints hold.
        Pure::IntMax => Value::Int(i64::from(i32::MAX)),
        Pure::Argc => Value::Int(cx.args.argc() as i64),
        Pure::Argp => {
            let i = int(arg(0)?)?;
            match cx.args.argp(i) {
                Some(s) => Value::Str(s.to_string()),
                None if a.len() > 1 => Value::Str(string(arg(1)?)?.to_string()),
                None if i < 0 => {
                    return Err(RunError::script(format!("argp({i}): must be 0 or more")))
                }
                None => {
                    return Err(RunError::script(format!(
                        "argp({i}): there are only {} arguments",
                        cx.args.argc()
                    )))
                }
            }
        }
        Pure::Argv => {
            let key = string(arg(0)?)?;
            match cx.args.flag(key) {
                Some(v) => Value::Str(v.to_string()),
                None => match a.get(1) {
                    Some(default) => Value::Str(string(default)?.to_string()),
                    None => {
                        return Err(RunError::script(format!(
                            "argv(): the command line did not provide '{key}' (-{key}=value)"
                        )))
                    }
                },
            }
        }
        Pure::ArgvContains => Value::Bool(cx.args.flag(string(arg(0)?)?).is_some()),
        Pure::Getenv => Value::Str(std::env::var(string(arg(0)?)?).unwrap_or_default()),
        Pure::Substring => {
            let s: Vec<char> = string(arg(0)?)?.chars().collect();
            let start = int(arg(1)?)?.clamp(0, s.len() as i64) as usize;
            let len = int(arg(2)?)?.max(0) as usize;
            Value::Str(s[start..(start + len).min(s.len())].iter().collect())
        }
        Pure::Find => {
            let (s, sub) = (string(arg(0)?)?, string(arg(1)?)?);
            Value::Int(strings::find(s, sub, int(arg(2)?)?, int(arg(3)?)?))
        }
        Pure::Replace => {
            let (s, sub, rep) = (string(arg(0)?)?, string(arg(1)?)?, string(arg(2)?)?);
            Value::Str(strings::replace(s, sub, rep, int(arg(3)?)?))
        }
        Pure::ReplaceAll => {
            let (s, sub, rep) = (string(arg(0)?)?, string(arg(1)?)?, string(arg(2)?)?);
            let start = a.get(3).map(int).transpose()?.unwrap_or(0);
            let end = a.get(4).map(int).transpose()?;
            Value::Str(strings::replace_all(s, sub, rep, start, end))
        }
        Pure::StringCount => {
            let (s, sub) = (string(arg(0)?)?, string(arg(1)?)?);
            let start = a.get(2).map(int).transpose()?.unwrap_or(0);
            let end = a.get(3).map(int).transpose()?.unwrap_or(-1);
            Value::Int(strings::count(s, sub, start, end))
        }
        Pure::IsInt => Value::Bool(string(arg(0)?)?.trim().parse::<i64>().is_ok()),
        Pure::Hash => {
            let h = blake3::hash(string(arg(0)?)?.as_bytes());
            Value::Int(i64::from_le_bytes(
                h.as_bytes()[..8].try_into().expect("8 bytes"),
            ))
        }
        Pure::StringFromFloats => {
            let parts: Vec<String> = members(arg(0)?)?.values().map(Value::render).collect();
            Value::Str(parts.join(","))
        }
        Pure::PickRegexp => {
            let pattern = string(arg(0)?)?;
            let re = regex::Regex::new(pattern).map_err(|e| {
                RunError::script(format!("pick_regexp: bad pattern '{pattern}': {e}"))
            })?;
            let picked: Vec<Value> = members(arg(1)?)?
                .values()
                .filter(|v| matches!(v, Value::Str(s) if re.is_match(s)))
                .cloned()
                .collect();
            array(picked)
        }
        Pure::Split => {
            let delimiters = a.get(1).map(string).transpose()?;
            array(
                strings::split(string(arg(0)?)?, delimiters)
                    .into_iter()
                    .map(Value::Str),
            )
        }
        Pure::Join => {
            let parts: Vec<String> = members(arg(0)?)?.values().map(Value::render).collect();
            let separator = a.get(1).map(string).transpose()?.unwrap_or(" ");
            Value::Str(parts.join(separator))
        }
        Pure::JoinArgs => {
            let parts: Vec<String> = a[1..].iter().map(Value::render).collect();
            Value::Str(parts.join(string(arg(0)?)?))
        }
        Pure::Trim => Value::Str(string(arg(0)?)?.trim().to_string()),
        Pure::ToUpper => Value::Str(string(arg(0)?)?.to_uppercase()),
        Pure::ToLower => Value::Str(string(arg(0)?)?.to_lowercase()),
        Pure::Sqrt => Value::Float(float(arg(0)?)?.sqrt()),
        Pure::Floor => Value::Float(float(arg(0)?)?.floor()),
        Pure::Ceil => Value::Float(float(arg(0)?)?.ceil()),
        Pure::Round => Value::Float(float(arg(0)?)?.round()),
        Pure::Log => match a.get(1) {
            Some(base) => Value::Float(float(arg(0)?)?.log(float(base)?)),
            None => Value::Float(float(arg(0)?)?.ln()),
        },
        Pure::Exp => Value::Float(float(arg(0)?)?.exp()),
        Pure::Ln => Value::Float(float(arg(0)?)?.ln()),
        Pure::Log10 => Value::Float(float(arg(0)?)?.log10()),
        Pure::Cbrt => Value::Float(float(arg(0)?)?.cbrt()),
        Pure::Sin => Value::Float(float(arg(0)?)?.sin()),
        Pure::Cos => Value::Float(float(arg(0)?)?.cos()),
        Pure::Tan => Value::Float(float(arg(0)?)?.tan()),
        Pure::Asin => Value::Float(float(arg(0)?)?.asin()),
        Pure::Acos => Value::Float(float(arg(0)?)?.acos()),
        Pure::Atan => Value::Float(float(arg(0)?)?.atan()),
        Pure::Atan2 => Value::Float(float(arg(0)?)?.atan2(float(arg(1)?)?)),
        Pure::IsNan => Value::Bool(float(arg(0)?)?.is_nan()),
        Pure::Random => Value::Float(pseudo_random()),
        Pure::Randint => {
            let (lo, hi) = (int(arg(0)?)?, int(arg(1)?)?);
            if hi <= lo {
                return Err(RunError::script(format!(
                    "randint({lo}, {hi}): empty range"
                )));
            }
            Value::Int(lo + (pseudo_random() * (hi - lo) as f64) as i64)
        }
        Pure::Dirname | Pure::DirnameString => Value::Str(paths::dirname(string(arg(0)?)?)),
        Pure::Basename | Pure::BasenameString => Value::Str(paths::basename(string(arg(0)?)?)),
        Pure::Rootname | Pure::RootnameString => Value::Str(paths::rootname(string(arg(0)?)?)),
        Pure::Extension | Pure::ExtensionString => Value::Str(paths::extension(string(arg(0)?)?)),
        Pure::Realpath => Value::File(paths::realpath(string(arg(0)?)?)),
        Pure::RealpathString => Value::Str(paths::realpath(string(arg(0)?)?)),
        Pure::JsonGet => Value::Str(json::get(string(arg(0)?)?, string(arg(1)?)?)?),
        Pure::JsonGetInt | Pure::JsonGetFloat | Pure::JsonGetBoolean => {
            let got = Value::Str(json::get(string(arg(0)?)?, string(arg(1)?)?)?);
            let parse = match op {
                Pure::JsonGetInt => Pure::ParseInt,
                Pure::JsonGetFloat => Pure::ParseFloat,
                _ => Pure::ParseBool,
            };
            return pure(parse, &[got], cx);
        }
        Pure::JsonType => Value::Str(json::type_of(string(arg(0)?)?, string(arg(1)?)?)?),
        Pure::JsonArraySize => {
            Value::Int(json::array_size(string(arg(0)?)?, string(arg(1)?)?)? as i64)
        }
        Pure::JsonObjectNames => {
            Value::Str(json::object_names(string(arg(0)?)?, string(arg(1)?)?)?)
        }
        Pure::JsonArrayify => Value::Str(format!("[{}]", string(arg(0)?)?)),
        Pure::JsonObjectify => Value::Str(format!("{{{}}}", string(arg(0)?)?)),
        Pure::JsonEncodeArray
        | Pure::JsonEncodeArrayContents
        | Pure::JsonEncodeArrayRetype
        | Pure::JsonEncodeArrayContentsRetype
        | Pure::JsonEncodeArrayFormat
        | Pure::JsonEncodeArrayContentsFormat
        | Pure::JsonEncodeObject
        | Pure::JsonEncodeObjectContents
        | Pure::JsonEncodeObjectRetype
        | Pure::JsonEncodeObjectContentsRetype
        | Pure::JsonEncodeObjectFormat
        | Pure::JsonEncodeObjectContentsFormat => json_encode(op, a)?,
        // Blobs hold floats as C doubles and ints as 64-bit integers, in
        // this machine's byte order.
        Pure::BlobSize => Value::Int(blob(arg(0)?)?.len() as i64),
        Pure::BlobNull => Value::Blob(Vec::new()),
        // A C string, as Turbine stores it: its terminating NUL counts in
        // the blob's size, and a string read from a blob ends at its first.
        Pure::BlobFromString => {
            let mut bytes = string(arg(0)?)?.as_bytes().to_vec();
            bytes.push(0);
            Value::Blob(bytes)
        }
        Pure::StringFromBlob => {
            let bytes = blob(arg(0)?)?;
            let text = bytes.split(|b| *b == 0).next().unwrap_or_default();
            Value::Str(String::from_utf8_lossy(text).into_owned())
        }
        Pure::BlobFromFloats => Value::Blob(
            members(arg(0)?)?
                .values()
                .map(|v| float(v).map(f64::to_ne_bytes))
                .collect::<Result<Vec<_>, _>>()?
                .concat(),
        ),
        Pure::BlobFromInts => Value::Blob(
            members(arg(0)?)?
                .values()
                .map(|v| int(v).map(i64::to_ne_bytes))
                .collect::<Result<Vec<_>, _>>()?
                .concat(),
        ),
        Pure::FloatsFromBlob => {
            array(words(name, blob(arg(0)?)?)?.map(|w| Value::Float(f64::from_ne_bytes(w))))
        }
        Pure::IntsFromBlob => {
            array(words(name, blob(arg(0)?)?)?.map(|w| Value::Int(i64::from_ne_bytes(w))))
        }
        Pure::BlobZeroesFloat => Value::Blob(vec![0; 8 * int(arg(0)?)?.max(0) as usize]),
    };
    Ok(vec![one])
}

pub(crate) fn wildcard(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => wildcard(&p[1..], s) || (!s.is_empty() && wildcard(p, &s[1..])),
        (Some(b'?'), Some(_)) => wildcard(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => wildcard(&p[1..], &s[1..]),
        _ => false,
    }
}

fn pseudo_random() -> f64 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// `argv_accept(keys…)`: every flag given is one of `keys`.
fn argv_accept(args: &CommandLine, keys: &[Value]) -> Result<(), RunError> {
    let keys: Vec<&str> = keys.iter().map(string).collect::<Result<_, _>>()?;
    match args.unknown_flag(&keys) {
        None => Ok(()),
        Some(key) if keys.is_empty() => Err(RunError::script(format!(
            "unknown flag: -{key} (no flags are accepted)"
        ))),
        Some(key) => Err(RunError::script(format!(
            "unknown flag: -{key}; accepted flags are: -{}",
            keys.join(" -")
        ))),
    }
}

/// Evaluates a builtin that produces no value; `Ok(Some(line))` is output
/// to print.
pub(crate) fn effect(op: Effect, a: &[Value], cx: &Context) -> Result<Option<String>, RunError> {
    let msg = |i: usize| a.get(i).map(Value::render).unwrap_or_default();
    match op {
        Effect::Trace => Ok(Some(trace(a))),
        Effect::Printf => {
            let fmt = a.first().map(string).transpose()?.unwrap_or("");
            Ok(Some(sprintf(fmt, &a[1.min(a.len())..])?))
        }
        Effect::Assert => match a.first() {
            Some(Value::Bool(true)) => Ok(None),
            _ => Err(RunError::script(format!("assertion failed: {}", msg(1)))),
        },
        Effect::AssertEqual => {
            if a.first() == a.get(1) {
                Ok(None)
            } else {
                Err(RunError::script(format!(
                    "assertEqual failed: {} != {}: {}",
                    msg(0),
                    msg(1),
                    msg(2)
                )))
            }
        }
        Effect::AssertLt | Effect::AssertLte => {
            let cmp = if op == Effect::AssertLt {
                BinOp::Lt
            } else {
                BinOp::Le
            };
            match binary(cmp, &a[0], &a[1])? {
                Value::Bool(true) => Ok(None),
                _ => Err(RunError::script(format!(
                    "{} failed: {} vs {}: {}",
                    op.name(),
                    msg(0),
                    msg(1),
                    msg(2)
                ))),
            }
        }
        Effect::ArgvAccept => argv_accept(cx.args, a).map(|()| None),
    }
}

/// What `trace(a…)` prints: a boolean as `1` or `0`, as Turbine, which
/// keeps booleans as integers, prints them (`toString` still says `true`).
pub(crate) fn trace(a: &[Value]) -> String {
    let shown: Vec<String> = a
        .iter()
        .map(|v| match v {
            Value::Bool(b) => u8::from(*b).to_string(),
            v => v.render(),
        })
        .collect();
    format!("trace: {}", shown.join(","))
}

/// Seconds since the epoch `t` (rounded, as Tcl's `clock format` takes an
/// int) in this host's time zone, formatted by strftime(3).
fn clock_format(format: &str, t: f64) -> Result<String, RunError> {
    let format_c = std::ffi::CString::new(format)
        .map_err(|_| RunError::script("clock_format: the format holds a NUL byte"))?;
    let secs = t.round() as libc::time_t;
    // SAFETY: a zeroed tm is a valid out-parameter.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to a time_t and a tm.
    if unsafe { libc::localtime_r(&secs, &mut tm) }.is_null() {
        return Err(RunError::script(format!(
            "clock_format: time {t} is out of range"
        )));
    }
    // Each conversion gives at most a few dozen bytes.
    let mut buf = vec![0u8; 64 + 64 * format.len()];
    // SAFETY: buf is writable for its length; format_c is NUL-terminated.
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), format_c.as_ptr(), &tm) };
    buf.truncate(n);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn since_epoch() -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_follows_swift_t() {
        assert_eq!(
            binary(BinOp::IntDiv, &Value::Int(-7), &Value::Int(2)).unwrap(),
            Value::Int(-3)
        );
        assert_eq!(
            binary(BinOp::Mod, &Value::Int(-7), &Value::Int(2)).unwrap(),
            Value::Int(-1)
        );
        assert_eq!(
            binary(BinOp::Mod, &Value::Int(7), &Value::Int(-2)).unwrap(),
            Value::Int(1)
        );
        assert!(binary(BinOp::IntDiv, &Value::Int(1), &Value::Int(0)).is_err());
        assert_eq!(
            binary(BinOp::Add, &Value::Str("a".into()), &Value::Str("b".into())).unwrap(),
            Value::Str("ab".into())
        );
        assert!(
            wildcard(b"*.txt", b"a.txt") && !wildcard(b"*.txt", b"a.dat") && wildcard(b"f?", b"f1")
        );
    }
}
