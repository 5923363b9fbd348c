//! `printf`/`sprintf` formatting with Swift/T's conversions.

use crate::value::{format_float, Value};

/// Formats `args` by `fmt`: `%i %d %s %f %.Nf %e %g %x %o %%`.
pub fn sprintf(fmt: &str, args: &[Value]) -> Result<String, String> {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut next = args.iter();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&d) = it.peek() {
            if d.is_ascii_digit() || d == '.' || d == '-' {
                spec.push(d);
                it.next();
            } else {
                break;
            }
        }
        let conv = it
            .next()
            .ok_or_else(|| format!("format '{fmt}' ends inside a conversion"))?;
        if conv == '%' {
            out.push('%');
            continue;
        }
        let arg = next.next().ok_or_else(|| {
            format!(
                "format '{fmt}' needs more arguments than the {} given",
                args.len()
            )
        })?;
        let precision = spec
            .split_once('.')
            .and_then(|(_, p)| p.parse::<usize>().ok());
        let width: usize = spec
            .split('.')
            .next()
            .and_then(|w| w.trim_start_matches('-').parse().ok())
            .unwrap_or(0);
        let text = match (conv, arg) {
            ('i' | 'd', Value::Int(i)) => i.to_string(),
            ('x', Value::Int(i)) => format!("{i:x}"),
            ('o', Value::Int(i)) => format!("{i:o}"),
            ('f', Value::Float(x)) => format!("{x:.*}", precision.unwrap_or(6)),
            ('e', Value::Float(x)) => format!("{x:.*e}", precision.unwrap_or(6)),
            ('g', Value::Float(x)) => format_float(*x),
            ('f' | 'e' | 'g', Value::Int(i)) => format!("{:.*}", precision.unwrap_or(6), *i as f64),
            ('s', v) => v.render(),
            (c, v) => return Err(format!("format '%{c}' does not take {}", v.render())),
        };
        if spec.starts_with('-') {
            out.push_str(&format!("{text:<width$}"));
        } else if spec.starts_with('0') && matches!(conv, 'i' | 'd' | 'f' | 'e' | 'x' | 'o') {
            let (sign, digits) = text
                .strip_prefix('-')
                .map_or(("", text.as_str()), |d| ("-", d));
            let pad = width.saturating_sub(sign.len());
            out.push_str(&format!("{sign}{digits:0>pad$}"));
        } else {
            out.push_str(&format!("{text:>width$}"));
        }
    }
    if next.next().is_some() {
        return Err(format!(
            "format '{fmt}' has fewer conversions than arguments"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        let args = [Value::Int(7), Value::Str("x".into()), Value::Float(1.5)];
        assert_eq!(sprintf("%i %s %.2f %%", &args).unwrap(), "7 x 1.50 %");
        assert_eq!(
            sprintf("%3i|%-3s|", &[Value::Int(5), Value::Str("a".into())]).unwrap(),
            "  5|a  |"
        );
        assert_eq!(
            sprintf("%05.1f|%03i", &[Value::Float(3.5), Value::Int(-4)]).unwrap(),
            "003.5|-04"
        );
        assert!(sprintf("%i %i", &[Value::Int(1)]).is_err());
        assert!(sprintf("%i", &[Value::Str("a".into())]).is_err());
    }
}
