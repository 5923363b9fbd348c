//! `python(code, expr)` and `R(code, expr)`: one persistent interpreter per
//! language per worker (a `python3` or `Rscript` process kept for the
//! worker's life), so state set by one call is seen by the next on that
//! worker, as in Swift/T. Each call runs `code`, then evaluates `expr` and
//! returns it as text (Python's `str()`, R's `toString()`); an error fails
//! the task with the interpreter's own report (Python's traceback).
//!
//! Requests and answers are length-prefixed frames, which both languages
//! read with their base libraries: `"<code bytes> <expr bytes>\n"` then the
//! two texts; `"value|error <bytes>\n"` then the text. What the code prints
//! goes to the worker's stderr and cannot corrupt the answers.

use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    R,
}

impl std::fmt::Display for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a call of an interpreter failed: the code's own error, or the
/// interpreter's (after which it is of no more use).
#[derive(Debug, thiserror::Error)]
pub(crate) enum InterpError {
    /// The code raised an error; the interpreter goes on.
    #[error("{lang}: {report}")]
    Raised { lang: Lang, report: String },
    #[error("{lang}: cannot start {program}: {cause} ({hint})")]
    Start {
        lang: Lang,
        program: String,
        hint: &'static str,
        cause: std::io::Error,
    },
    #[error("{0}: a temporary directory: {1}")]
    Temp(Lang, std::io::Error),
    /// It stopped reading or answering (`None`: it exited).
    #[error("{lang}: the interpreter {}", match .cause { Some(e) => format!("stopped: {e}"), None => "exited".into() })]
    Stopped {
        lang: Lang,
        cause: Option<std::io::Error>,
    },
    #[error("{lang}: a garbled answer: {head:?}")]
    Garbled { lang: Lang, head: String },
}

impl InterpError {
    /// Whether the interpreter can take the next call.
    pub(crate) fn leaves_it_usable(&self) -> bool {
        matches!(self, InterpError::Raised { .. })
    }
}

/// Python's side: answers go to a duplicate of the original stdout;
/// stdout itself then points at stderr.
const PYTHON: &str = r#"
import os, sys, traceback
answers = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
sys.stdout = sys.stderr
requests = sys.stdin.buffer
scope = {"__name__": "__main__"}
while True:
    head = requests.readline()
    if not head:
        break
    n, m = map(int, head.split())
    code, expr = requests.read(n).decode(), requests.read(m).decode()
    try:
        exec(code, scope)
        kind, text = "value", str(eval(expr, scope)) if expr.strip() else ""
    except BaseException:
        kind, text = "error", traceback.format_exc().rstrip()
    data = text.encode()
    answers.write(b"%s %d\n" % (kind.encode(), len(data)) + data)
    answers.flush()
"#;

/// R's side: printed output is sunk to stderr; answers are written to the
/// stdout connection itself.
const R: &str = r#"
requests <- file("stdin", "rb")
answers <- stdout()
sink(stderr())
repeat {
  head <- readLines(requests, n = 1)
  if (length(head) == 0) break
  n <- as.integer(strsplit(head, " ")[[1]])
  code <- if (n[1] > 0) rawToChar(readBin(requests, "raw", n[1])) else ""
  expr <- if (n[2] > 0) rawToChar(readBin(requests, "raw", n[2])) else ""
  answer <- tryCatch({
    eval(parse(text = code), envir = globalenv())
    value <- if (nzchar(trimws(expr))) eval(parse(text = expr), envir = globalenv()) else ""
    c("value", toString(value))
  }, error = function(e) c("error", paste0("Error: ", conditionMessage(e))))
  text <- enc2utf8(answer[2])
  cat(answer[1], " ", length(charToRaw(text)), "\n", text, sep = "", file = answers)
  flush(answers)
}
"#;

impl Lang {
    fn name(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::R => "R",
        }
    }

    /// The program (`LOCUS_PYTHON`/`LOCUS_RSCRIPT` choose another).
    fn program(self) -> String {
        let (var, default) = match self {
            Lang::Python => ("LOCUS_PYTHON", "python3"),
            Lang::R => ("LOCUS_RSCRIPT", "Rscript"),
        };
        std::env::var(var).unwrap_or_else(|_| default.into())
    }

    /// The program's arguments before the driver, and how to install it.
    fn args(self) -> ([&'static str; 2], &'static str) {
        match self {
            Lang::Python => (["-u", "-c"], "install python3"),
            Lang::R => (
                ["--vanilla", "-e"],
                "install R: apt-get install r-base-core",
            ),
        }
    }

    fn driver(self) -> &'static str {
        match self {
            Lang::Python => PYTHON,
            Lang::R => R,
        }
    }
}

pub(crate) struct Interpreter {
    lang: Lang,
    _child: Child,
    requests: ChildStdin,
    answers: BufReader<ChildStdout>,
    /// The interpreter's `TMPDIR`, removed after it is killed: R's session
    /// directory (`Rtmp*`) would otherwise stay behind, one per worker.
    _tmp: tempfile::TempDir,
}

impl Interpreter {
    pub(crate) fn start(lang: Lang) -> Result<Interpreter, InterpError> {
        Interpreter::spawn(lang, &lang.program())
    }

    fn spawn(lang: Lang, program: &str) -> Result<Interpreter, InterpError> {
        let (args, hint) = lang.args();
        let tmp = tempfile::Builder::new()
            .prefix("locus-interp-")
            .tempdir()
            .map_err(|e| InterpError::Temp(lang, e))?;
        let mut child = Command::new(program)
            .args(args)
            .arg(lang.driver())
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|cause| InterpError::Start {
                lang,
                program: program.to_string(),
                hint,
                cause,
            })?;
        let requests = child.stdin.take().expect("piped");
        let answers = BufReader::new(child.stdout.take().expect("piped"));
        Ok(Interpreter {
            lang,
            _child: child,
            requests,
            answers,
            _tmp: tmp,
        })
    }

    /// Runs `code`, then returns `expr` as text (empty for an empty `expr`).
    pub(crate) async fn eval(&mut self, code: &str, expr: &str) -> Result<String, InterpError> {
        let lang = self.lang;
        let lost = |e: std::io::Error| InterpError::Stopped {
            lang,
            cause: Some(e),
        };
        let head = format!("{} {}\n", code.len(), expr.len());
        for part in [head.as_str(), code, expr] {
            self.requests
                .write_all(part.as_bytes())
                .await
                .map_err(lost)?;
        }
        self.requests.flush().await.map_err(lost)?;
        let mut head = String::new();
        if self.answers.read_line(&mut head).await.map_err(lost)? == 0 {
            return Err(InterpError::Stopped { lang, cause: None });
        }
        let bad = || InterpError::Garbled {
            lang,
            head: head.clone(),
        };
        let (kind, len) = head.trim_end().split_once(' ').ok_or_else(bad)?;
        let len: usize = len.parse().map_err(|_| bad())?;
        let mut text = vec![0; len];
        self.answers.read_exact(&mut text).await.map_err(lost)?;
        let text = String::from_utf8_lossy(&text).into_owned();
        match kind {
            "value" => Ok(text),
            "error" => Err(InterpError::Raised { lang, report: text }),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn python_state_persists_and_exceptions_carry_their_traceback() {
        let mut py = Interpreter::start(Lang::Python).expect("python3 (scripts/setup.sh)");
        assert_eq!(py.eval("x = 20", "x + 1").await.unwrap(), "21");
        assert_eq!(py.eval("print('to stderr')", "x * 2").await.unwrap(), "40");
        let err = py.eval("1 / 0", "").await.unwrap_err();
        let InterpError::Raised { report, .. } = &err else {
            panic!("{err}");
        };
        assert!(report.contains("ZeroDivisionError"), "{err}");
        assert!(report.contains("Traceback"), "{err}");
        assert!(err.leaves_it_usable());
        assert_eq!(py.eval("", "x").await.unwrap(), "20");
        assert_eq!(py.eval("s = 'é\\n'", "s * 2").await.unwrap(), "é\né\n");
    }

    #[tokio::test]
    async fn r_state_persists_and_errors_are_reported() {
        let mut r = Interpreter::start(Lang::R).expect("Rscript (scripts/setup.sh)");
        assert_eq!(r.eval("x <- 20", "x + 1").await.unwrap(), "21");
        assert_eq!(
            r.eval("print('to stderr')", "c(x, 2)").await.unwrap(),
            "20, 2"
        );
        let err = r.eval("stop('bad input')", "").await.unwrap_err();
        assert!(
            matches!(&err, InterpError::Raised { report, .. } if report.contains("bad input")),
            "{err}"
        );
        assert_eq!(r.eval("", "x").await.unwrap(), "20");
        // Its session's directory goes with it (killed, R cannot remove it).
        let session = r.eval("", "tempdir()").await.unwrap();
        assert!(std::path::Path::new(&session).is_dir(), "{session}");
        drop(r);
        assert!(!std::path::Path::new(&session).exists(), "{session}");
    }

    #[tokio::test]
    async fn a_missing_interpreter_is_one_clear_error() {
        let err = Interpreter::spawn(Lang::R, "/nonexistent/Rscript")
            .err()
            .expect("no such program");
        assert!(matches!(err, InterpError::Start { .. }), "{err}");
        let err = err.to_string();
        assert!(
            err.starts_with("R: cannot start /nonexistent/Rscript"),
            "{err}"
        );
        assert!(err.contains("r-base-core"), "{err}");
    }

    #[tokio::test]
    async fn an_interpreter_that_exits_says_so_and_is_not_usable() {
        let mut py = Interpreter::start(Lang::Python).expect("python3 (scripts/setup.sh)");
        let err = py.eval("import os; os._exit(3)", "").await.unwrap_err();
        assert!(
            matches!(err, InterpError::Stopped { cause: None, .. }),
            "{err}"
        );
        assert_eq!(err.to_string(), "python: the interpreter exited");
        assert!(!err.leaves_it_usable());
    }
}
