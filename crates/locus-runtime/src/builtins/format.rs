//! `printf`/`sprintf` formatting with Swift/T's conversions: those of Tcl's
//! `format`, which are C's (`%d %i %u %o %x %X %b %c %s %f %e %E %g %G
//! %%`, flags `- + space 0 #`, width, precision, `h`/`l`/`ll` accepted).

use crate::engine::value::Value;
use locus_proto::run::RunError;

/// Formats `args` by `fmt`.
pub(crate) fn sprintf(fmt: &str, args: &[Value]) -> Result<String, RunError> {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut next = args.iter();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = it.peek() {
            match f {
                '-' => spec.left = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                '#' => spec.alt = true,
                _ => break,
            }
            it.next();
        }
        spec.width = digits(&mut it).unwrap_or(0);
        if it.peek() == Some(&'.') {
            it.next();
            spec.precision = Some(digits(&mut it).unwrap_or(0));
        }
        while matches!(it.peek(), Some('h' | 'l' | 'L' | 'q' | 'j' | 'z' | 't')) {
            it.next();
        }
        let conv = it
            .next()
            .ok_or_else(|| RunError::script(format!("format '{fmt}' ends inside a conversion")))?;
        if conv == '%' {
            out.push('%');
            continue;
        }
        let arg = next.next().ok_or_else(|| {
            RunError::script(format!(
                "format '{fmt}' needs more arguments than the {} given",
                args.len()
            ))
        })?;
        out.push_str(&spec.convert(conv, arg)?);
    }
    if next.next().is_some() {
        return Err(RunError::script(format!(
            "format '{fmt}' has fewer conversions than arguments"
        )));
    }
    Ok(out)
}

fn digits(it: &mut std::iter::Peekable<std::str::Chars>) -> Option<usize> {
    let mut n: Option<usize> = None;
    while let Some(d) = it.peek().and_then(|c| c.to_digit(10)) {
        n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
        it.next();
    }
    n
}

/// One conversion's flags, width and precision.
#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    zero: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
}

impl Spec {
    fn convert(&self, conv: char, arg: &Value) -> Result<String, RunError> {
        let wrong = || RunError::script(format!("format '%{conv}' does not take {}", arg.render()));
        // A boolean is an int to Swift/T's (Tcl's) format: 1 or 0.
        let int = || match arg {
            Value::Int(i) => Ok(*i),
            Value::Bool(b) => Ok(i64::from(*b)),
            _ => Err(wrong()),
        };
        let float = || match arg {
            Value::Float(x) => Ok(*x),
            Value::Int(i) => Ok(*i as f64),
            _ => Err(wrong()),
        };
        // (sign, prefix such as 0x, digits): padding goes between.
        let (sign, prefix, body): (&str, &str, String) = match conv {
            'd' | 'i' => {
                let i = int()?;
                (
                    self.sign(i < 0),
                    "",
                    self.min_digits(i.unsigned_abs().to_string()),
                )
            }
            'u' => ("", "", self.min_digits((int()? as u64).to_string())),
            'o' | 'x' | 'X' | 'b' => {
                let u = int()? as u64;
                let (text, prefix) = match conv {
                    'o' => (format!("{u:o}"), "0"),
                    'x' => (format!("{u:x}"), "0x"),
                    'X' => (format!("{u:X}"), "0X"),
                    _ => (format!("{u:b}"), "0b"),
                };
                let prefix = if self.alt && u != 0 { prefix } else { "" };
                ("", prefix, self.min_digits(text))
            }
            'c' => {
                let c = u32::try_from(int()?)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(wrong)?;
                return Ok(self.pad("", "", c.to_string(), false));
            }
            's' => {
                let text = arg.render();
                let text = match self.precision {
                    Some(p) => text.chars().take(p).collect(),
                    None => text,
                };
                return Ok(self.pad("", "", text, false));
            }
            'f' | 'F' | 'e' | 'E' | 'g' | 'G' => {
                let x = float()?;
                let text = if x.is_nan() {
                    "nan".to_string()
                } else if x.is_infinite() {
                    "inf".to_string()
                } else {
                    let p = self.precision.unwrap_or(6);
                    match conv {
                        'f' | 'F' => format!("{:.*}", p, x.abs()),
                        'e' | 'E' => exponent(x.abs(), p),
                        _ => general(x.abs(), p, self.alt),
                    }
                };
                let text = if conv.is_ascii_uppercase() {
                    text.to_uppercase()
                } else {
                    text
                };
                let finite = x.is_finite();
                let sign = self.sign(x.is_sign_negative() && !x.is_nan());
                return Ok(self.pad(sign, "", text, finite));
            }
            _ => {
                return Err(RunError::script(format!(
                    "format '%{conv}' is not a conversion"
                )))
            }
        };
        // C: a precision turns zero padding off for integers.
        Ok(self.pad(sign, prefix, body, self.precision.is_none()))
    }

    fn sign(&self, negative: bool) -> &'static str {
        match (negative, self.plus, self.space) {
            (true, _, _) => "-",
            (false, true, _) => "+",
            (false, false, true) => " ",
            _ => "",
        }
    }

    /// An integer's digits with at least the precision's count.
    fn min_digits(&self, text: String) -> String {
        match self.precision {
            Some(0) if text == "0" => String::new(),
            Some(p) if text.len() < p => format!("{}{text}", "0".repeat(p - text.len())),
            _ => text,
        }
    }

    /// Pads to the width: left-aligned, zero-filled after the sign and
    /// prefix (numbers only), or right-aligned.
    fn pad(&self, sign: &str, prefix: &str, body: String, zero_ok: bool) -> String {
        let len = sign.len() + prefix.len() + body.chars().count();
        let fill = self.width.saturating_sub(len);
        if self.left {
            format!("{sign}{prefix}{body}{}", " ".repeat(fill))
        } else if self.zero && zero_ok {
            format!("{sign}{prefix}{}{body}", "0".repeat(fill))
        } else {
            format!("{}{sign}{prefix}{body}", " ".repeat(fill))
        }
    }
}

/// C's `%e` of a non-negative finite `x`: `d.ddde±XX`.
fn exponent(x: f64, precision: usize) -> String {
    let text = format!("{x:.precision$e}");
    let (mantissa, exp) = text.split_once('e').expect("Rust's {:e} has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// C's `%g` of a non-negative finite `x`: `precision` significant digits,
/// `%e` style when the exponent is below -4 or not below the precision,
/// trailing zeros removed unless `alt`.
fn general(x: f64, precision: usize, alt: bool) -> String {
    let p = precision.max(1);
    let e = exponent(x, p - 1);
    let exp: i32 = e[e.find('e').expect("has an exponent") + 1..]
        .parse()
        .expect("an integer exponent");
    let text = if exp < -4 || exp >= p as i32 {
        e
    } else {
        format!("{x:.*}", (p as i32 - 1 - exp).max(0) as usize)
    };
    if alt {
        return text;
    }
    let trim = |m: &str| -> String {
        if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            m.to_string()
        }
    };
    match text.split_once('e') {
        Some((m, rest)) => format!("{}e{rest}", trim(m)),
        None => trim(&text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, args: &[Value]) -> String {
        sprintf(fmt, args).unwrap()
    }

    #[test]
    fn conversions() {
        let args = [Value::Int(7), Value::Str("x".into()), Value::Float(1.5)];
        assert_eq!(f("%i %s %.2f %%", &args), "7 x 1.50 %");
        assert_eq!(
            f("%3i|%-3s|", &[Value::Int(5), Value::Str("a".into())]),
            "  5|a  |"
        );
        assert_eq!(
            f("%05.1f|%03i", &[Value::Float(3.5), Value::Int(-4)]),
            "003.5|-04"
        );
        assert!(sprintf("%i %i", &[Value::Int(1)]).is_err());
        assert!(sprintf("%i", &[Value::Str("a".into())]).is_err());
        assert!(sprintf("%y", &[Value::Int(1)]).is_err());
    }

    /// The figures C's printf (and so Tcl's format) gives.
    #[test]
    fn as_c_gives_them() {
        let i = |n| Value::Int(n);
        let x = |v| Value::Float(v);
        assert_eq!(f("%c%c", &[i(65), i(0x3bb)]), "Aλ");
        let yes = Value::Bool(true);
        assert_eq!(f("%b %i", &[yes.clone(), Value::Bool(false)]), "1 0");
        assert_eq!(
            f("%x %X %#x %#o %b", &[i(255), i(255), i(255), i(8), i(5)]),
            "ff FF 0xff 010 101"
        );
        assert_eq!(
            f("%u %x", &[i(-1), i(-1)]),
            "18446744073709551615 ffffffffffffffff"
        );
        assert_eq!(
            f("%+d % d %+d %.3d %5.3d", &[i(5), i(5), i(-5), i(7), i(7)]),
            "+5  5 -5 007   007"
        );
        assert_eq!(
            f("%e %.2E %e", &[x(1.5), x(12345.678), x(0.0)]),
            "1.500000e+00 1.23E+04 0.000000e+00"
        );
        assert_eq!(f("%e", &[x(1e-300)]), "1.000000e-300");
        assert_eq!(
            f(
                "%g %g %g %g %g %G",
                &[
                    x(1.5),
                    x(0.0001),
                    x(0.00001),
                    x(123456.0),
                    x(1234567.0),
                    x(1e-10)
                ]
            ),
            "1.5 0.0001 1e-05 123456 1.23457e+06 1E-10"
        );
        assert_eq!(
            f("%.3g %#g %g", &[x(1.23456), x(1.5), x(100.0)]),
            "1.23 1.50000 100"
        );
        assert_eq!(
            f(
                "%.2s|%-4c|%08.3f|%-+6d|",
                &[Value::Str("abc".into()), i(98), x(-1.23456), i(3)]
            ),
            "ab|b   |-001.235|+3    |"
        );
        assert_eq!(
            f("%ld %lld %hd %lf", &[i(1), i(2), i(3), x(0.5)]),
            "1 2 3 0.500000"
        );
        assert_eq!(
            f("%5.1f|%f", &[x(f64::INFINITY), x(-f64::INFINITY)]),
            "  inf|-inf"
        );
        assert_eq!(f("%#x %08.3x", &[i(0), i(10)]), "0      00a");
    }
}
