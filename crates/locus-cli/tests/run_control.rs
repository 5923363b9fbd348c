//! Control work over several servers: every server's engine runs composite
//! calls and shares of large `foreach` loops, keeps the futures it creates,
//! and reads and writes the others' through them; failures and stalls
//! anywhere end the run with their message.

mod common;

use common::Run;
use locus_runtime::report::Report;

const TWO_SERVERS: &[&str] = &["-n", "4", "--servers", "2"];

#[test]
fn control_work_spreads_over_the_servers() {
    // Recursive composite calls (results flow back through futures kept by
    // the caller's server), a foreach large enough to be shared out writing
    // one array, and app calls put by whichever server runs their caller.
    let script = r#"
import files; import string;
(int o) fib(int n) {
  if (n < 2) { o = n; } else { o = fib(n - 1) + fib(n - 2); }
}
app (file o) echo(int i) { "sh" "-c" "echo $0" i @stdout=o; }
(int o) via_app(int i) { o = parseInt(trim(read(echo(i)))); }
int sq[];
foreach i in [0:999] { sq[i] = i * i; }
int e[];
foreach i in [0:19] { e[i] = via_app(i); }
trace("fib", fib(16));
trace("squares", sum_integer(sq));
trace("apps", sum_integer(e));
"#;
    let run = Run::new(TWO_SERVERS, script).ok();
    let out = run.stdout();
    for line in [
        "trace: fib,987",
        "trace: squares,332833500",
        "trace: apps,190",
    ] {
        assert!(out.lines().any(|l| l == line), "{line} missing:\n{out}");
    }
    let report = Report::load(&run.run_dir()).unwrap();
    let control = &report.run.control;
    assert_eq!(
        control.iter().map(|c| c.rank).collect::<Vec<_>>(),
        [2, 3],
        "{control:?}"
    );
    for c in control {
        assert!(
            c.statements > 1000 && c.received > 100 && c.sent > 100,
            "server {} did too little control work: {control:?}",
            c.rank
        );
    }
    let sent: u64 = control.iter().map(|c| c.sent).sum();
    let received: u64 = control.iter().map(|c| c.received).sum();
    assert_eq!(sent, received, "{control:?}");
    assert_eq!(run.records("echo").len(), 20);
    assert!(
        report.text().contains("control:\n  rank   2"),
        "{}",
        report.text()
    );
}

#[test]
fn one_server_keeps_all_control_work() {
    let script = "(int o) f(int x) { o = x + 1; }\nforeach i in [0:299] { trace(f(i)); }\n";
    let run = Run::new(&["-n", "3"], script).ok();
    let control = Report::load(&run.run_dir()).unwrap().run.control;
    assert_eq!(control.len(), 1);
    assert_eq!((control[0].sent, control[0].received), (0, 0));
    assert!(run.stdout().lines().any(|l| l == "trace: 300"));
}

#[test]
fn a_failure_on_another_server_fails_the_run_with_its_message() {
    // The calls alternate between the servers: f(3) and later run on both.
    let script = r#"
import assert;
(int o) f(int x) { assert(x < 3, "x too big in f"); o = x; }
foreach i in [0:9] { trace("r", f(i)); }
"#;
    let run = Run::new(TWO_SERVERS, script);
    assert!(!run.out.status.success());
    let err = String::from_utf8_lossy(&run.out.stderr);
    assert!(err.contains("assertion failed: x too big in f"), "{err}");
}

#[test]
fn a_stall_on_another_server_names_the_variable_there() {
    // f runs on the leader, g on the other server, where `never` is waited on.
    let script = r#"
(int o) f(int x) { o = x + 1; }
(int o) g(int x) { int never; o = x + never; }
int a = f(1);
int b = g(2);
trace(a, b);
"#;
    let run = Run::new(TWO_SERVERS, script);
    assert!(!run.out.status.success());
    let err = String::from_utf8_lossy(&run.out.stderr);
    assert!(
        err.contains("the run cannot progress") && err.contains(":3:24: never (1 waiting)"),
        "{err}"
    );
    let control = Report::load(&run.run_dir()).unwrap().run.control;
    assert_eq!(
        control[1].received, 1,
        "g did not run on rank 3: {control:?}"
    );
}

#[test]
fn a_long_foreach_keeps_a_bounded_number_of_tasks_released() {
    // The engine makes iterations faster than two workers run them: it
    // stops at the bound (a slice of iterations past it at most) and goes
    // on as tasks end, so a loop's memory does not grow with its length.
    let most = locus_runtime::RELEASED_MOST;
    let script = format!(
        "import sys;\nforeach i in [1:{}] {{ sleep(0.0); }}\n",
        3 * most
    );
    let run = Run::new(&["-n", "3"], &script).ok();
    let control = Report::load(&run.run_dir()).unwrap().run.control;
    let released = control[0].most_released as usize;
    assert!(released <= most + 64, "{released} released at once");
    assert!(
        released >= most / 2,
        "the bound was not reached: {released}"
    );
    assert_eq!(run.records("sleep").len(), 3 * most);
}
