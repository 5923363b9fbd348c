//! The programs a task's command line runs, kept in its record so that
//! `--resume` runs a task again when one changed (Nextflow and Snakemake
//! do): the executable, resolved as it is started, and every script the
//! command line names (`python3 model.py`, `Rscript fit.R`, `sh run.sh`).

use super::process::find_in_path;
use locus_proto::run::Arg;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Extensions of the scripts interpreters take.
const SCRIPTS: &[&str] = &[
    "py", "R", "r", "sh", "bash", "pl", "rb", "jl", "lua", "tcl", "js", "awk", "m",
];

/// The host files `argv` runs: its first word (looked up in `PATH` unless
/// it names a path), then each literal word naming a script — a file with
/// a script's extension, one that starts with `#!`, or an executable one.
/// Relative paths are made absolute (against this process's directory,
/// where apps start).
pub(crate) fn run_by(argv: &[Arg]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Some(program) = argv.first().and_then(literal) {
        let path = match program.contains('/') {
            true => Some(PathBuf::from(program)),
            false => find_in_path(program),
        };
        found.extend(path.filter(|p| p.is_file()).map(absolute));
    }
    for word in argv.iter().skip(1).filter_map(literal) {
        let path = Path::new(word);
        if !word.is_empty() && is_script(path) {
            let path = absolute(path.to_path_buf());
            if !found.contains(&path) {
                found.push(path);
            }
        }
    }
    found
}

fn literal(a: &Arg) -> Option<&str> {
    match a {
        Arg::Lit(s) => Some(s),
        _ => None,
    }
}

fn is_script(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    let named = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SCRIPTS.contains(&e));
    let mut start = [0u8; 2];
    let shebang = std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut start))
        .is_ok_and(|()| start == *b"#!");
    named || shebang || meta.permissions().mode() & 0o111 != 0
}

fn absolute(path: PathBuf) -> PathBuf {
    std::path::absolute(&path).unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_and_the_scripts_named_not_data_or_options() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model.py");
        std::fs::write(&model, "print(1)\n").unwrap();
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        let data = dir.path().join("data.csv");
        std::fs::write(&data, "1,2\n").unwrap();
        let lit = |s: &std::path::Path| Arg::Lit(s.display().to_string());
        let argv = [
            Arg::Lit("sh".into()),
            lit(&model),
            Arg::Lit("-n".into()),
            lit(&data),
            lit(&tool),
            Arg::In(model.display().to_string()),
        ];
        let sh = find_in_path("sh").unwrap();
        assert_eq!(run_by(&argv), [sh, model, tool]);
    }
}
