//! `python(code, expr)`: one persistent Python interpreter per worker (a
//! `python3` process kept for the worker's life), so state set by one call
//! is seen by the next on that worker, as in Swift/T. Each call runs `code`,
//! then evaluates `expr` and returns its `str()`; a Python exception fails
//! the task with its traceback. Requests and answers are JSON lines on a
//! descriptor of their own: what the code prints goes to the worker's
//! stderr and cannot corrupt them.

use serde::{Deserialize, Serialize};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The interpreter's side: answers go to a duplicate of the original
/// stdout; stdout itself then points at stderr.
const DRIVER: &str = r#"
import json, os, sys, traceback
answers = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr
scope = {"__name__": "__main__"}
for line in sys.stdin:
    request = json.loads(line)
    try:
        exec(request["code"], scope)
        expr = request["expr"]
        answer = {"value": str(eval(expr, scope)) if expr.strip() else ""}
    except BaseException:
        answer = {"error": traceback.format_exc().rstrip()}
    answers.write(json.dumps(answer) + "\n")
    answers.flush()
"#;

#[derive(Serialize)]
struct Request<'a> {
    code: &'a str,
    expr: &'a str,
}

#[derive(Deserialize)]
struct Answer {
    value: Option<String>,
    error: Option<String>,
}

pub struct Interpreter {
    _child: Child,
    requests: ChildStdin,
    answers: BufReader<ChildStdout>,
}

impl Interpreter {
    pub fn start() -> Result<Interpreter, String> {
        let program = std::env::var("LOCUS_PYTHON").unwrap_or_else(|_| "python3".into());
        let mut child = Command::new(&program)
            .args(["-u", "-c", DRIVER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("python: cannot start {program}: {e} (install python3)"))?;
        let requests = child.stdin.take().expect("piped");
        let answers = BufReader::new(child.stdout.take().expect("piped"));
        Ok(Interpreter {
            _child: child,
            requests,
            answers,
        })
    }

    /// Runs `code`, then returns `str(expr)` (empty for an empty `expr`).
    pub async fn eval(&mut self, code: &str, expr: &str) -> Result<String, String> {
        let mut line = serde_json::to_string(&Request { code, expr }).map_err(|e| e.to_string())?;
        line.push('\n');
        let lost = |e: std::io::Error| format!("python: the interpreter stopped: {e}");
        self.requests
            .write_all(line.as_bytes())
            .await
            .map_err(lost)?;
        self.requests.flush().await.map_err(lost)?;
        let mut answer = String::new();
        if self.answers.read_line(&mut answer).await.map_err(lost)? == 0 {
            return Err("python: the interpreter exited".into());
        }
        let answer: Answer = serde_json::from_str(&answer).map_err(|e| format!("python: {e}"))?;
        match (answer.value, answer.error) {
            (_, Some(traceback)) => Err(format!("python: {traceback}")),
            (Some(v), None) => Ok(v),
            (None, None) => Err("python: an empty answer".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn state_persists_and_exceptions_carry_their_traceback() {
        let Ok(mut py) = Interpreter::start() else {
            eprintln!("skipped: no python3");
            return;
        };
        assert_eq!(py.eval("x = 20", "x + 1").await.unwrap(), "21");
        assert_eq!(py.eval("print('to stderr')", "x * 2").await.unwrap(), "40");
        let err = py.eval("1 / 0", "").await.unwrap_err();
        assert!(err.contains("ZeroDivisionError"), "{err}");
        assert!(err.contains("Traceback"), "{err}");
        assert_eq!(py.eval("", "x").await.unwrap(), "20");
    }
}
