//! A benchmark's scratch directory and the local cluster running in it,
//! stopped and removed when the benchmark ends.

use locus_fs::launch::{self, Launch};
use locus_fs::{Client, ClientOptions, Placement};
use std::path::{Path, PathBuf};

pub struct Workspace {
    pub root: PathBuf,
    keep: bool,
}

impl Workspace {
    /// Creates `root` (which must not exist) and starts `nodes` daemons in it.
    pub fn start(
        root: &Path,
        nodes: u32,
        launch: &Launch,
        keep: bool,
    ) -> anyhow::Result<Workspace> {
        if root.exists() {
            anyhow::bail!("{} already exists; give a new --dir", root.display());
        }
        std::fs::create_dir_all(root)?;
        launch.create(&root.join("cluster"), nodes, Placement::Local)?;
        Ok(Workspace {
            root: root.to_path_buf(),
            keep,
        })
    }

    pub fn client(&self, node: u32) -> anyhow::Result<Client> {
        let opts = ClientOptions {
            node,
            ..ClientOptions::default()
        };
        Ok(Client::open(&self.root.join("cluster"), opts)?)
    }

    /// A scratch directory for baselines, on the same file system as the stores.
    pub fn raw_dir(&self, name: &str) -> anyhow::Result<PathBuf> {
        let d = self.root.join("raw").join(name);
        std::fs::create_dir_all(&d)?;
        Ok(d)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = launch::stop(&self.root.join("cluster"));
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

/// A fresh default location for a benchmark's workspace.
pub fn default_root(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("locus-bench-{name}-{}", std::process::id()))
}
