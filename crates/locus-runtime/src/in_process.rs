//! A run inside one process: the script's ranks as threads (servers and
//! workers meeting through the run directory, on loopback), its apps
//! answered by closures instead of processes. What the engine, the servers
//! and the workers do together is tested (and simulated, `locus-sim`)
//! without spawning anything.

use crate::exec::apps::{Apps, Running};
use crate::exec::process::{Ended, Stream, Usage};
use crate::ranks::rank::{run_rank_with, RankOptions, RankParts, RunSummary};
use crate::ranks::rendezvous::RankEnv;
use crate::records::record::{self, TaskRecord};
use locus_lang::ir::Program;
#[cfg(test)]
use locus_lang::Source;
use locus_proto::run::RunError;
use std::collections::HashMap;
use std::fs::File;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An app's program in a test: given its command line and its stdout when
/// the script redirects it, returns its exit code, or `None` for a program
/// that never ends.
type AppFn = Box<dyn Fn(&[String], Option<&mut File>) -> Option<i32> + Send + Sync>;

/// What to do once this many apps started (on any rank): cut a rank, crash
/// a daemon.
type Trigger = (usize, Box<dyn FnOnce() + Send>);

/// Apps answered by closures, named by their command's first word.
#[derive(Default)]
pub struct FakeApps {
    programs: HashMap<String, AppFn>,
    /// Apps started so far.
    started: Mutex<usize>,
    triggers: Mutex<Vec<Trigger>>,
}

impl FakeApps {
    /// Answers the app `name` with `program` (its exit code).
    pub fn with(
        self,
        name: &str,
        program: impl Fn(&[String], Option<&mut File>) -> i32 + Send + Sync + 'static,
    ) -> FakeApps {
        self.with_hanging(name, move |argv, out| Some(program(argv, out)))
    }

    /// `with`, for a program that may never end (`None`).
    pub fn with_hanging(
        mut self,
        name: &str,
        program: impl Fn(&[String], Option<&mut File>) -> Option<i32> + Send + Sync + 'static,
    ) -> FakeApps {
        self.programs.insert(name.to_string(), Box::new(program));
        self
    }

    /// Does `then` as the `after`-th app starts (on any rank), before that
    /// app runs.
    pub fn once_started(self, after: usize, then: impl FnOnce() + Send + 'static) -> FakeApps {
        self.triggers.lock().unwrap().push((after, Box::new(then)));
        self
    }
}

impl Apps for FakeApps {
    fn run<'a>(
        &'a self,
        argv: &'a [String],
        streams: [Stream; 3],
        _timeout: Option<Duration>,
        _alone: bool,
    ) -> Running<'a> {
        let started = {
            let mut started = self.started.lock().unwrap();
            *started += 1;
            *started
        };
        let due: Vec<Trigger> = {
            let mut triggers = self.triggers.lock().unwrap();
            let (due, later) = triggers.drain(..).partition(|(after, _)| started >= *after);
            *triggers = later;
            due
        };
        for (_, then) in due {
            then();
        }
        let [_, mut stdout, _] = streams;
        let stdout = match &mut stdout {
            Stream::File(f) => Some(f),
            _ => None,
        };
        // A program nobody gave is what a shell says of it.
        let code = match self.programs.get(&argv[0]) {
            Some(program) => program(argv, stdout),
            None => Some(127),
        };
        Box::pin(async move {
            let Some(code) = code else {
                return std::future::pending().await;
            };
            Ok(Ended {
                code: Some(code),
                usage: Usage::default(),
                kept: [None, None],
            })
        })
    }
}

/// How long a run inside a test may take.
#[cfg(test)]
const RUN_DEADLINE: Duration = Duration::from_secs(60);

/// What a run inside the process left.
pub struct Finished {
    /// The leader's answer: the run's.
    pub result: Result<(), RunError>,
    /// What the script printed.
    pub out: String,
    /// The run directory, removed with it.
    pub run_dir: tempfile::TempDir,
}

impl Finished {
    /// Its tasks' records.
    pub fn records(&self) -> std::io::Result<Vec<TaskRecord>> {
        record::load(self.run_dir.path())
    }

    /// Its `run.json`.
    pub fn summary(&self) -> std::io::Result<RunSummary> {
        RunSummary::load(self.run_dir.path())
    }
}

/// A run that did not end within its deadline: it waited silently.
#[derive(Debug, thiserror::Error)]
#[error("the run did not end within {deadline:?}; ranks {running:?} were still running")]
pub struct NeverEnded {
    /// The deadline it was given.
    pub deadline: Duration,
    /// The ranks that had not ended.
    pub running: Vec<u32>,
}

/// Runs `script` on `workers` workers and `servers` servers, its apps
/// answered by `apps`, with the options `tweak` sets.
#[cfg(test)]
pub(crate) fn run(
    script: &str,
    shape: (u32, u32),
    apps: FakeApps,
    tweak: impl FnOnce(&mut RankOptions),
) -> Finished {
    run_cutting(script, shape, apps, tweak, None)
}

/// `run`, cutting a rank as `cut` says.
#[cfg(test)]
pub(crate) fn run_cutting(
    script: &str,
    shape: (u32, u32),
    apps: FakeApps,
    tweak: impl FnOnce(&mut RankOptions),
    cut: Option<Cut>,
) -> Finished {
    let program = locus_lang::compile(&Source::new("test.swift", script))
        .unwrap_or_else(|d| panic!("{}", locus_lang::diag::report(&d, &Source::new("", script))));
    let run = InProcess {
        shape,
        deadline: RUN_DEADLINE,
        cut,
        nodes: Vec::new(),
    };
    run.run(program, apps, tweak)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A rank to cut (as a kill ends its process) once this many apps started.
#[derive(Debug, Clone, Copy)]
pub struct Cut {
    /// The rank cut.
    pub rank: u32,
    /// Apps started (on any rank) before it is cut.
    pub after_runs: usize,
}

/// How a run inside the process is laid out and bounded.
#[derive(Debug, Clone)]
pub struct InProcess {
    /// Workers, then servers.
    pub shape: (u32, u32),
    /// How long it may take before it is a silent wait.
    pub deadline: Duration,
    /// A rank cut as a kill ends its process.
    pub cut: Option<Cut>,
    /// The node each rank is on (workers, then servers), as a launcher
    /// tells it; every rank on this machine when empty.
    pub nodes: Vec<String>,
}

impl InProcess {
    /// Runs `program` (compiled from `test.swift`), its apps answered by
    /// `apps`, with the options `tweak` sets. A run still going at the
    /// deadline is left to its threads and answered `NeverEnded`.
    pub fn run(
        &self,
        program: Program,
        apps: FakeApps,
        tweak: impl FnOnce(&mut RankOptions),
    ) -> Result<Finished, NeverEnded> {
        let (workers, servers) = self.shape;
        let run_dir = tempfile::tempdir().expect("a temporary run directory");
        let mut opts = RankOptions::new("test.swift".into(), run_dir.path().to_path_buf());
        opts.servers = servers;
        tweak(&mut opts);
        let out = Arc::new(Mutex::new(Vec::new()));
        let size = workers + servers;
        // The rank to cut gets the receiver; the apps fire it.
        let (apps, mut cut_rx) = match self.cut {
            Some(Cut { rank, after_runs }) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let apps = apps.once_started(after_runs, move || {
                    let _ = tx.send(());
                });
                (apps, Some((rank, rx)))
            }
            None => (apps, None),
        };
        let apps: Arc<dyn Apps> = Arc::new(apps);
        let (done_tx, done) = std::sync::mpsc::channel();
        for rank in 0..size {
            let (opts, program) = (opts.clone(), program.clone());
            let parts = RankParts {
                apps: Some(apps.clone()),
                listen: Some(([127, 0, 0, 1], 0).into()),
                out: out.clone(),
                cut: cut_rx.take_if(|(r, _)| *r == rank).map(|(_, rx)| rx),
                stop_on_signal: false,
                node: self.nodes.get(rank as usize).cloned(),
            };
            let done_tx = done_tx.clone();
            std::thread::spawn(move || {
                let env = RankEnv { rank, size };
                let result = run_rank_with(env, opts, move || Ok(program), None, parts);
                let _ = done_tx.send((rank, result));
            });
        }
        // A run that never ends fails its test rather than hanging it.
        let deadline = std::time::Instant::now() + self.deadline;
        let mut results: Vec<Option<Result<(), RunError>>> = vec![None; size as usize];
        for _ in 0..size {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Ok((rank, result)) = done.recv_timeout(left) else {
                let running = (0..size).filter(|r| results[*r as usize].is_none());
                return Err(NeverEnded {
                    deadline: self.deadline,
                    running: running.collect(),
                });
            };
            results[rank as usize] = Some(result);
        }
        let out = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        Ok(Finished {
            result: results[workers as usize]
                .take()
                .expect("the leader's answer"),
            out,
            run_dir,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locus_proto::run::ErrorKind;
    use std::io::Write;

    /// `sum` writes the sum of its arguments to its stdout.
    fn adder() -> FakeApps {
        FakeApps::default().with("sum", |argv, out| {
            let sum: i64 = argv[1..].iter().map(|a| a.parse::<i64>().unwrap()).sum();
            writeln!(out.unwrap(), "{sum}").unwrap();
            0
        })
    }

    #[test]
    fn a_map_over_apps_runs_every_task_once_spread_over_the_workers() {
        let script = "import files;\nimport string;\nimport sys;\n\
                      app (file o) sum(int a, int b) { \"sum\" a b @stdout=o }\n\
                      foreach i in [0:19] {\n\
                        file o<sprintf(\"%s/%i.txt\", argv(\"out\"), i)> = sum(i, 100);\n\
                        trace(read(o));\n\
                      }\n";
        let out = tempfile::tempdir().unwrap();
        let run = run(script, (3, 2), adder(), |o| {
            o.args = vec![format!("--out={}", out.path().display())];
        });
        run.result.as_ref().unwrap();
        for i in 0..20 {
            let written = std::fs::read_to_string(out.path().join(format!("{i}.txt"))).unwrap();
            assert_eq!(written.trim(), (i + 100).to_string());
        }
        let records = run.records().unwrap();
        assert_eq!(records.len(), 20, "each task once");
        let mut ranks: Vec<u32> = records.iter().map(|r| r.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        assert!(ranks.len() > 1, "all on one worker: {ranks:?}");
        let mut traced: Vec<i64> = (run.out.lines())
            .filter_map(|l| l.strip_prefix("trace: "))
            .map(|n| n.parse().unwrap())
            .collect();
        traced.sort_unstable();
        assert_eq!(traced, (100..120).collect::<Vec<i64>>(), "{}", run.out);
    }

    #[test]
    fn an_app_that_fails_ends_the_run_as_a_task_failure_naming_it() {
        let apps = adder().with("broken", |_, _| 3);
        let script = "app (void v) broken() { \"broken\" }\nbroken();\n";
        let run = run(script, (2, 1), apps, |_| {});
        let e = run.result.clone().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Task, "{e}");
        assert!(e.message.contains("app 'broken' failed"), "{e}");
        assert!(e.message.contains("exited with code 3"), "{e}");
        let summary = run.summary().unwrap();
        assert_eq!(summary.error_kind, Some(ErrorKind::Task));
        let records = run.records().unwrap();
        assert_eq!(records[0].error_kind, Some(ErrorKind::Task));
    }

    #[test]
    fn calls_nested_past_the_depth_bound_fail_at_the_call_naming_the_first_ones() {
        // Without a base case, on two servers (calls cross between them);
        // a recursion with one, just within the bound, is fine.
        let endless = "(int o) f(int n) { o = f(n + 1); }\ntrace(f(0));\n";
        let failed = run(endless, (1, 2), FakeApps::default(), |o| o.max_depth = 500);
        let e = failed.result.clone().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Depth, "{e}");
        assert!(
            e.message.starts_with(
                "test.swift:1:24: calls nest deeper than 500 (--max-depth): \
                 'f' at test.swift:2:7, then 'f' at test.swift:1:24, then"
            ),
            "{e}"
        );
        let summary = failed.summary().unwrap();
        assert_eq!(summary.error_kind, Some(ErrorKind::Depth));
        let ended = "(int o) s(int n) { if (n == 0) { o = 0; } else { o = n + s(n - 1); } }\n\
                     trace(s(499));\n";
        let fine = run(ended, (1, 2), FakeApps::default(), |o| o.max_depth = 500);
        fine.result.as_ref().unwrap();
        assert_eq!(fine.out.trim(), "trace: 124750");
    }

    #[test]
    fn with_keep_going_a_failed_task_stops_only_what_depends_on_it() {
        // 50 tasks, one failing; an app over the whole array depends on it
        // (the array must not close short), a statement beside does not.
        let apps = FakeApps::default()
            .with("work", |argv, out| match argv[1].as_str() {
                "7" => 1,
                i => {
                    write!(out.unwrap(), "{i}").unwrap();
                    0
                }
            })
            .with("total", |_, _| 0);
        let script = "app (file o) work(int i) { \"work\" i @stdout=o }\n\
                      app (file o) total(file parts[]) { \"total\" parts @stdout=o }\n\
                      file outs[];\n\
                      foreach i in [0:49] { outs[i] = work(i); }\n\
                      file whole = total(outs);\n\
                      trace(1 + 1);\n";
        let run = run(script, (2, 2), apps, |o| o.keep_going = true);
        let e = run.result.clone().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Task, "{e}");
        assert!(
            e.message.starts_with(
                "1 task(s) failed; everything that did not depend on them ran (--keep-going): \
                 test.swift:4:33: app 'work' failed on "
            ),
            "{e}"
        );
        assert!(
            e.message
                .contains("`work 7` exited with code 1; waiting on them: test.swift:2:25: parts"),
            "{e}"
        );
        let records = run.records().unwrap();
        let done = records.iter().filter(|r| r.error.is_none()).count();
        let failed = records.iter().filter(|r| r.error.is_some()).count();
        assert_eq!((done, failed), (49, 1), "{records:?}");
        assert!(records.iter().all(|r| r.func == "work"), "total ran");
        assert_eq!(run.out.trim(), "trace: 2");
        let summary = run.summary().unwrap();
        assert_eq!(summary.error_kind, Some(ErrorKind::Task));
    }

    #[test]
    fn a_failed_attempt_is_run_again_up_to_the_retries() {
        let tries = Arc::new(Mutex::new(0));
        let counted = tries.clone();
        let apps = FakeApps::default().with("flaky", move |_, _| {
            let mut n = counted.lock().unwrap();
            *n += 1;
            if *n < 3 {
                1
            } else {
                0
            }
        });
        let script = "app (void v) flaky() { \"flaky\" }\nflaky();\n";
        let run = run(script, (1, 1), apps, |o| o.retries = 2);
        run.result.as_ref().unwrap();
        assert_eq!(*tries.lock().unwrap(), 3);
        assert_eq!(run.records().unwrap()[0].attempts, 3);
    }

    #[test]
    fn a_failed_assertion_is_a_script_failure_naming_its_place() {
        let apps = adder();
        let script = "import assert;\n\n\
                      assert(1 == 2, \"one is not two\");\n";
        let run = run(script, (1, 1), apps, |_| {});
        let e = run.result.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Script, "{e}");
        assert!(e.message.contains("one is not two"), "{e}");
        assert!(e.message.starts_with("test.swift:3:"), "{e}");
    }

    #[test]
    fn a_worker_cut_mid_run_costs_only_its_tasks_which_run_elsewhere() {
        // Each app takes a while, so the cut finds the workers busy.
        let out = tempfile::tempdir().unwrap();
        let apps = FakeApps::default().with("work", |argv, _| {
            std::thread::sleep(Duration::from_millis(20));
            std::fs::write(&argv[1], "done").unwrap();
            0
        });
        let script = "import string;\nimport sys;\n\
                      app (file o) work() { \"work\" o }\n\
                      foreach i in [0:11] {\n\
                        file o<sprintf(\"%s/%i.txt\", argv(\"out\"), i)> = work();\n\
                      }\n";
        let cut = Cut {
            rank: 0,
            after_runs: 3,
        };
        let run = run_cutting(
            script,
            (2, 1),
            apps,
            |o| o.args = vec![format!("--out={}", out.path().display())],
            Some(cut),
        );
        run.result.as_ref().unwrap();
        for i in 0..12 {
            let written = std::fs::read_to_string(out.path().join(format!("{i}.txt")));
            assert_eq!(written.unwrap(), "done", "output {i}");
        }
        let gone = run.summary().unwrap().workers_gone;
        assert_eq!(gone.len(), 1, "{gone:?}");
        assert!(gone[0].starts_with("worker rank 0 "), "{gone:?}");
    }
}
