//! `locus`: one binary for every role.

mod bench;
mod check;
mod cluster;
mod dry_run;
mod fs_ops;
mod graphviz;
mod launched;
mod local_cluster;
mod log;
mod mount;
mod run;
mod runs;
mod shown;
mod watch;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

// The runtime allocates and frees many small objects per task (futures,
// frames, messages); mimalloc does that faster than glibc's malloc, which
// fragments under this pattern.
// Built without transparent huge pages (`no_thp`): with them each of the
// hundreds of rank processes of a large run zeroed 2 MiB pages over and over
// as mimalloc returned and re-took memory (512 ranks: 8.2 s → 1.6 s).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "locus",
    version,
    about = "Run many-task workflows where their data lives"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The distributed node-local file system.
    #[command(subcommand)]
    Fs(FsCommand),
    /// An emulated cluster of network namespaces with shaped links.
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
    /// Run a Swift workflow: its ranks and file system on this machine, or
    /// one rank when started by srun/mpiexec.
    Run(run::RunArgs),
    /// Summarise a finished run from its directory: tasks, busy and idle
    /// workers, placement and locality.
    Report(ReportArgs),
    /// List the runs `locus run` made without --run-dir (how each ended, its
    /// tasks and bytes), or remove the finished ones.
    Runs(runs::RunsArgs),
    /// Serve the live page of a run from its directory (one started
    /// elsewhere, by sbatch or another terminal; or one that ended).
    Watch(watch::WatchArgs),
    /// A run's tasks, one line each; one task (or every failed one) in full:
    /// its command line, node, exit, time, stdout and stderr.
    Log(log::LogArgs),
    /// Check Swift scripts: every error as file:line:col, or the lowered IR.
    Check(check::CheckArgs),
    /// Benchmarks, each printed beside a baseline measured in the same run.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// A process Locus started, told what to be by a role file.
    #[command(hide = true)]
    Launched(launched::LaunchedArgs),
}

#[derive(clap::Args)]
struct ReportArgs {
    /// The run's directory (`locus run --run-dir`), or a benchmark's
    /// results directory (holding filecopy.json or mapreduce.json).
    dir: std::path::PathBuf,
    /// Also write a self-contained HTML page here.
    #[arg(long)]
    html: Option<std::path::PathBuf>,
    /// Print the executed task graph instead of the text: tasks filled by
    /// how they ended (green done, red failed, grey done by an earlier
    /// run), outlined by locality (green local, red fetched, orange
    /// spilled), an edge per file one task wrote and another read; past
    /// 3,000 tasks, one node per function.
    #[arg(long, value_name = "dot|svg")]
    graph: Option<graphviz::GraphFormat>,
}

#[derive(Subcommand)]
enum FsCommand {
    /// Run one storage daemon (normally started by `locus fs up`).
    Serve(local_cluster::ServeArgs),
    /// Start a file system: one daemon per node of a job (--launcher), or
    /// N on this machine each standing for a node; on an existing one,
    /// restart its stopped daemons.
    Up(local_cluster::UpArgs),
    /// Stop a file system's daemons (--purge: and remove their stores).
    Down(local_cluster::DownArgs),
    /// Remove the stores on this host that a job killed before its daemons
    /// could remove them left (for a Slurm epilog: --job ID).
    Purge(local_cluster::PurgeArgs),
    /// Show each node's daemon: address, process, records and stored data.
    Status(fs_ops::ClusterArgs),
    /// Make a node's damaged or lost metadata again (its daemon stopped):
    /// from its replicas, or from the copies every node stores.
    Repair(local_cluster::RepairArgs),
    /// Read every stored copy and check it against its record: bad copies
    /// are set aside and made again from a good one; files with no good
    /// copy left are listed (and the command fails).
    Scrub(local_cluster::ScrubArgs),
    /// Mount the file system (FUSE) so programs open its files by path.
    Mount(mount::MountArgs),
    /// Unmount a `locus fs mount`.
    Umount(mount::UmountArgs),
    #[command(flatten)]
    Op(fs_ops::FsOp),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("LOCUS_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colours for a terminal only, not as escape codes in a log file,
        // and never where NO_COLOR is set (no-color.org).
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        // A log that cannot be written (a daemon's log on a full disk) must
        // not panic the thread that logs: the message is dropped instead.
        .log_internal_errors(false)
        .init();
    let result = match cli.command {
        Command::Fs(FsCommand::Serve(a)) => local_cluster::serve(a),
        Command::Fs(FsCommand::Up(a)) => local_cluster::up(a),
        Command::Fs(FsCommand::Down(a)) => local_cluster::down(a),
        Command::Fs(FsCommand::Purge(a)) => local_cluster::purge(a),
        Command::Fs(FsCommand::Status(a)) => {
            let shown = local_cluster::status(a);
            fs_ops::remove_scratch();
            shown
        }
        Command::Fs(FsCommand::Repair(a)) => {
            let repaired = local_cluster::repair(a);
            fs_ops::remove_scratch();
            repaired
        }
        Command::Fs(FsCommand::Scrub(a)) => local_cluster::scrub(a),
        Command::Fs(FsCommand::Mount(a)) => mount::mount(a),
        Command::Fs(FsCommand::Umount(a)) => mount::umount(a),
        Command::Fs(FsCommand::Op(op)) => fs_ops::run(op),
        Command::Check(a) => check::run(a),
        Command::Cluster(c) => cluster::run(c),
        Command::Run(a) => run::run(a),
        Command::Report(a) => report(a),
        Command::Runs(a) => runs::run(a),
        Command::Log(a) => log::run(a),
        Command::Watch(a) => watch::run(a),
        Command::Bench(b) => bench::run(b),
        Command::Launched(a) => launched::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Its reader stopped reading (`| head`): end quietly, as `cat` does.
        Err(_) if stdout_closed() => ExitCode::from(128 + libc::SIGPIPE as u8),
        Err(e) => {
            eprintln!("locus: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether stdout is a pipe whose reading end is closed.
fn stdout_closed() -> bool {
    let mut p = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: polls one descriptor of this process, without waiting.
    unsafe { libc::poll(&mut p, 1, 0) == 1 && p.revents & libc::POLLERR != 0 }
}

/// `locus report`: a run's text summary, or a benchmark's; `--html` also
/// writes the page.
fn report(a: ReportArgs) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let (filecopy, mapreduce) = (a.dir.join("filecopy.json"), a.dir.join("mapreduce.json"));
    let meta = a.dir.join("meta-cluster.json");
    let mut out = std::io::stdout().lock();
    // A page is drawn only when asked for (a large run's takes seconds).
    let drawn = a.html.is_some();
    let page = if filecopy.exists() {
        let r: locus_bench::filecopy::Results =
            serde_json::from_slice(&std::fs::read(&filecopy)?).context("filecopy.json")?;
        writeln!(out, "filecopy results: {} step(s)", r.steps.len())?;
        drawn.then(|| locus_bench::html::filecopy(&r))
    } else if mapreduce.exists() {
        let r: locus_bench::mapreduce::Results =
            serde_json::from_slice(&std::fs::read(&mapreduce)?).context("mapreduce.json")?;
        writeln!(
            out,
            "mapreduce results: {} configuration(s)",
            r.outcomes.len()
        )?;
        drawn.then(|| locus_bench::html::mapreduce(&r))
    } else if meta.exists() {
        let r: locus_bench::meta_cluster::Results =
            serde_json::from_slice(&std::fs::read(&meta)?).context("meta-cluster.json")?;
        writeln!(out, "meta-cluster results: {} point(s)", r.points.len())?;
        drawn.then(|| locus_bench::html::meta_cluster(&r))
    } else {
        use locus_runtime::report::{html, Report};
        let r = Report::load(&a.dir)?;
        match a.graph {
            Some(format) => out.write_all(&format.drawn(r.graph_dot())?)?,
            None => write!(out, "{}", r.text())?,
        }
        drawn.then(|| html::run(&a.dir.display().to_string(), &r))
    };
    if let (Some(out), Some(page)) = (a.html, page) {
        std::fs::write(&out, page).with_context(|| out.display().to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_subcommand_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_command_and_argument_says_what_it_is_for() {
        fn undocumented(cmd: &clap::Command, path: &str, found: &mut Vec<String>) {
            let path = format!("{path} {}", cmd.get_name());
            if cmd.get_about().is_none() && !cmd.is_hide_set() {
                found.push(path.clone());
            }
            for arg in cmd.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && !arg.is_hide_set() && arg.get_help().is_none() {
                    found.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                undocumented(sub, &path, found);
            }
        }
        let mut found = Vec::new();
        undocumented(&Cli::command(), "", &mut found);
        assert!(found.is_empty(), "without help: {found:#?}");
    }
}
