//! A benchmark's scratch directory and the local cluster running in it,
//! stopped and removed when the benchmark ends.

use locus_fs::{Client, ClientOptions, Placement};
use locus_launch::daemons::{self, Daemons};
use std::path::{Path, PathBuf};

pub(crate) struct Workspace {
    pub root: PathBuf,
    /// Where baselines run: `root/raw`, or a scratch directory elsewhere.
    pub raw_root: PathBuf,
    keep: bool,
}

impl Workspace {
    /// Creates `root` (which must not exist) and starts `nodes` daemons in it.
    pub(crate) fn start(
        root: &Path,
        nodes: u32,
        daemons: &Daemons,
        keep: bool,
    ) -> anyhow::Result<Workspace> {
        if root.exists() {
            anyhow::bail!("{} already exists; give a new --dir", root.display());
        }
        std::fs::create_dir_all(root)?;
        daemons.create(&root.join("cluster"), nodes, Placement::Local)?;
        Ok(Workspace {
            root: root.to_path_buf(),
            raw_root: root.join("raw"),
            keep,
        })
    }

    pub(crate) fn client(&self, node: u32) -> anyhow::Result<Client> {
        let opts = ClientOptions {
            node,
            ..ClientOptions::default()
        };
        Ok(Client::open(&self.root.join("cluster"), opts)?)
    }

    /// A client of `node` that fetches over TCP even from holders on this
    /// host (the network path).
    pub(crate) fn client_over_tcp(&self, node: u32) -> anyhow::Result<Client> {
        let opts = ClientOptions {
            node,
            same_host_copy: false,
            ..ClientOptions::default()
        };
        Ok(Client::open(&self.root.join("cluster"), opts)?)
    }

    /// Runs baselines in a new scratch directory under `dir` instead of
    /// beside the stores (e.g. on tmpfs).
    pub(crate) fn raw_under(&mut self, dir: &Path) {
        self.raw_root = dir.join(format!("locus-bench-raw-{}", std::process::id()));
    }

    /// A scratch directory for baselines.
    pub(crate) fn raw_dir(&self, name: &str) -> anyhow::Result<PathBuf> {
        let d = self.raw_root.join(name);
        std::fs::create_dir_all(&d)?;
        Ok(d)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = daemons::stop(&self.root.join("cluster"), false);
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.raw_root);
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

/// A fresh default location for a benchmark's workspace.
pub(crate) fn default_root(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("locus-bench-{name}-{}", std::process::id()))
}

/// Runs `measure` in a new scratch directory (`dir`, else one named for the
/// benchmark `name`), removed afterwards unless `keep`.
pub(crate) fn in_scratch(
    dir: Option<PathBuf>,
    name: &str,
    keep: bool,
    measure: impl FnOnce(&Path) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let root = dir.unwrap_or_else(|| default_root(name));
    if root.exists() {
        anyhow::bail!("{} exists; give a new directory", root.display());
    }
    std::fs::create_dir_all(&root)?;
    let measured = measure(&root);
    if !keep {
        let _ = std::fs::remove_dir_all(&root);
    }
    measured
}
