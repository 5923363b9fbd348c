//! Typed configuration crossing process boundaries: a process Locus starts
//! learns what to be from a file holding its role's name and configuration
//! (JSON, readable when something goes wrong), never from a command line a
//! library assembled. The embedding binary says how it is started on such a
//! file (`Program`) and dispatches on the role's name (`Launched`).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;
use std::process::Command;

/// A configuration some process is started with.
pub trait Role: Serialize + DeserializeOwned {
    /// Names the role in its file, for the embedder's dispatch.
    const NAME: &'static str;
}

/// How the embedding binary is started as the process a role file
/// describes (e.g. `locus launched FILE`).
pub trait Program: Send + Sync {
    /// The command that runs the role written in `role_file`.
    fn command(&self, role_file: &Path) -> Command;
}

/// The `locus` binary at this path, started as `locus launched FILE` (what
/// its `launched` command dispatches): the program of the CLI itself and
/// of other embedders (the Python package) that start Locus's processes.
pub struct LocusBinary(pub std::path::PathBuf);

impl Program for LocusBinary {
    fn command(&self, role_file: &Path) -> Command {
        let mut cmd = Command::new(&self.0);
        cmd.arg("launched").arg(role_file);
        cmd
    }
}

#[derive(Serialize, Deserialize)]
struct Envelope<C> {
    role: String,
    config: C,
}

/// Writes `config` as role file `path` (atomically: a process started on
/// it never reads half a file).
pub fn write<R: Role>(path: &Path, config: &R) -> io::Result<()> {
    let envelope = Envelope {
        role: R::NAME.to_string(),
        config,
    };
    locus_fs::write_json(path, &envelope)
}

/// A role file as read by the started process.
pub struct Launched {
    /// The role's name (`Role::NAME`).
    pub role: String,
    config: serde_json::Value,
    path: std::path::PathBuf,
}

impl Launched {
    /// Reads the role file at `path`.
    pub fn load(path: &Path) -> io::Result<Launched> {
        let bad = |e: &dyn std::fmt::Display| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        };
        let bytes = std::fs::read(path).map_err(|e| bad(&e))?;
        let e: Envelope<serde_json::Value> = serde_json::from_slice(&bytes).map_err(|e| bad(&e))?;
        Ok(Launched {
            role: e.role,
            config: e.config,
            path: path.to_path_buf(),
        })
    }

    /// The configuration, as role `R`.
    pub fn config<R: Role>(self) -> io::Result<R> {
        serde_json::from_value(self.config).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: not a {} configuration: {e}",
                    self.path.display(),
                    R::NAME
                ),
            )
        })
    }
}

impl Role for locus_fs::ServeConfig {
    const NAME: &'static str = "fs-daemon";
}

impl Role for locus_runtime::RankOptions {
    const NAME: &'static str = "rank";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Probe {
        n: u32,
    }
    impl Role for Probe {
        const NAME: &'static str = "probe";
    }

    #[test]
    fn a_role_file_round_trips_and_names_its_role() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("probe.json");
        write(&f, &Probe { n: 7 }).unwrap();
        let l = Launched::load(&f).unwrap();
        assert_eq!(l.role, "probe");
        assert_eq!(l.config::<Probe>().unwrap(), Probe { n: 7 });
        std::fs::write(&f, b"{\"role\":\"probe\",\"config\":{\"m\":1}}").unwrap();
        let err = Launched::load(&f).unwrap().config::<Probe>().unwrap_err();
        assert!(
            err.to_string().contains("not a probe configuration"),
            "{err}"
        );
    }
}
