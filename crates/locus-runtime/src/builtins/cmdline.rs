//! The script's command line, read as Turbine reads it (`argv_init` in its
//! `sys.tcl`): an argument starting with `-` is a flag — `-key`, `--key`,
//! `-key=value`, `--key=value`, a flag without `=` having the value "" and
//! a flag given twice its last value — and any other is positional.
//! `argp(0)` is the program, `argp(1)`… the positional arguments, `argc()`
//! counts them, `args()` is the whole line.

/// A run's script arguments.
#[derive(Debug, Clone, Default)]
pub struct CommandLine {
    program: String,
    positional: Vec<String>,
    flags: Vec<(String, String)>,
    all: String,
}

impl CommandLine {
    /// The command line of `program` given `args`.
    pub fn new(program: impl Into<String>, args: &[String]) -> CommandLine {
        let mut line = CommandLine {
            program: program.into(),
            all: args.join(" "),
            ..CommandLine::default()
        };
        for arg in args {
            let (token, value) = arg.split_once('=').unwrap_or((arg, ""));
            match token.strip_prefix('-') {
                Some(key) => {
                    let key = key.strip_prefix('-').unwrap_or(key);
                    line.flags.retain(|(k, _)| k != key);
                    line.flags.push((key.to_string(), value.to_string()));
                }
                None => line.positional.push(arg.clone()),
            }
        }
        line
    }

    /// How many positional arguments were given.
    pub fn argc(&self) -> usize {
        self.positional.len()
    }

    /// Positional argument `i` (`0`: the program), if given.
    pub fn argp(&self, i: i64) -> Option<&str> {
        match usize::try_from(i).ok()? {
            0 => Some(&self.program),
            i => self.positional.get(i - 1).map(String::as_str),
        }
    }

    /// The value of flag `key`, if given.
    pub fn flag(&self, key: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every argument, joined by spaces.
    pub fn args(&self) -> &str {
        &self.all
    }

    /// The first flag given that is not one of `accepted` (a negative
    /// number, `-5`, is not taken for a flag here, as in Turbine).
    pub fn unknown_flag(&self, accepted: &[&str]) -> Option<&str> {
        self.flags
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| k.parse::<i64>().is_err())
            .find(|k| !accepted.contains(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> CommandLine {
        let args: Vec<String> = args.iter().map(std::string::ToString::to_string).collect();
        CommandLine::new("prog.swift", &args)
    }

    #[test]
    fn flags_take_one_or_two_dashes_and_positional_arguments_count_from_one() {
        let l = line(&["-a=1", "x", "--b=two=2", "-c", "--d", "y", "-a=3"]);
        assert_eq!(l.argc(), 2);
        assert_eq!(l.argp(0), Some("prog.swift"));
        assert_eq!(l.argp(1), Some("x"));
        assert_eq!(l.argp(2), Some("y"));
        assert_eq!(l.argp(3), None);
        assert_eq!(l.argp(-1), None);
        assert_eq!(l.flag("a"), Some("3"), "the last value given");
        assert_eq!(l.flag("b"), Some("two=2"));
        assert_eq!(l.flag("c"), Some(""));
        assert_eq!(l.flag("d"), Some(""));
        assert_eq!(l.flag("x"), None);
        assert_eq!(l.args(), "-a=1 x --b=two=2 -c --d y -a=3");
    }

    #[test]
    fn an_unknown_flag_is_named_and_numbers_are_not_flags() {
        let l = line(&["-5", "--n=1", "-v"]);
        assert_eq!(l.unknown_flag(&["n", "v"]), None);
        assert_eq!(l.unknown_flag(&["n"]), Some("v"));
        assert_eq!(l.argc(), 0);
    }
}
