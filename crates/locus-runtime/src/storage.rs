//! Builtins that need the run's layout or its file system, evaluated by the
//! engine: the storage-aware builtins of the seeds (`lookup`, `ip2rank`,
//! `get_rank`, `set_rank`), Swift/T's hostmap builtins, and the file
//! builtins (`read`, `write`, …) when their path is a Locus file.

use crate::builtins::{array, string, wildcard};
use crate::files::fs_path;
use crate::layout::Layout;
use crate::record::Seen;
use crate::value::{Location, Value};
use locus_fs::Client;
use locus_proto::fs::{Kind, NodeId};
use locus_proto::run::{Held, Rank};
use std::sync::Arc;

pub struct Storage {
    pub layout: Arc<Layout>,
    /// This server's node's file-system client, and the file system's node
    /// names by id, when the run has one.
    pub fs: Option<(Client, Vec<String>)>,
}

impl Storage {
    pub fn new(layout: Arc<Layout>, fs: Option<(Client, Vec<String>)>) -> Storage {
        Storage { layout, fs }
    }
}

/// Argument `i` as text (a string or a file's path).
fn text(a: &[Value], i: usize, name: &str) -> Result<String, String> {
    let v = a
        .get(i)
        .ok_or_else(|| format!("{name}: missing argument {}", i + 1))?;
    string(v)
        .map(str::to_string)
        .map_err(|e| format!("{name}: {e}"))
}

impl Storage {
    fn fs(&self, name: &str, path: &str) -> Result<&(Client, Vec<String>), String> {
        self.fs
            .as_ref()
            .ok_or_else(|| format!("{name}({path}): this run has no Locus file system"))
    }

    fn client(&self, name: &str, path: &str) -> Result<&Client, String> {
        self.fs(name, path).map(|(c, _)| c)
    }

    /// A Locus path's file-system path, or an error naming the builtin.
    fn locus<'p>(&self, name: &str, path: &'p str) -> Result<&'p str, String> {
        fs_path(path)
            .ok_or_else(|| format!("{name}({path}): not a Locus file (paths start /locus/)"))
    }

    /// The first worker on the node called `host`.
    fn worker_on(&self, name: &str, host: &str) -> Result<Rank, String> {
        self.layout
            .node_index(host)
            .and_then(|n| self.layout.workers_on(n).next())
            .ok_or_else(|| {
                format!(
                    "{name}({host}): no worker runs on {host} (nodes: {})",
                    self.layout.nodes.join(", ")
                )
            })
    }

    /// The name of the node holding a Locus file's data.
    async fn holder(&self, name: &str, path: &str) -> Result<String, String> {
        let fp = self.locus(name, path)?;
        let (client, names) = self.fs(name, path)?;
        let holders = client
            .locate(fp)
            .await
            .map_err(|e| format!("{name}({path}): {e}"))?;
        let first = holders
            .first()
            .ok_or_else(|| format!("{name}({path}): the file has no data yet"))?;
        Ok(names[*first as usize].clone())
    }

    /// The file-system node of the layout node called `host`.
    pub fn fs_node(&self, host: &str) -> Option<NodeId> {
        let (_, names) = self.fs.as_ref()?;
        names.iter().position(|n| n == host).map(|i| i as NodeId)
    }

    /// Evaluates `name` if it is one of this module's builtins.
    pub async fn call(&self, name: &str, a: &[Value]) -> Option<Result<Value, String>> {
        let is_locus = |i: usize| matches!(a.get(i), Some(Value::Str(s) | Value::File(s)) if fs_path(s).is_some());
        Some(match name {
            "lookup" => self.lookup(a).await,
            "ip2rank" => text(a, 0, name).and_then(|h| {
                Ok(Value::Location(Location {
                    rank: self.worker_on(name, &h)? as i64,
                    hard: true,
                    node: true,
                }))
            }),
            "get_rank" => self.get_rank(a).await,
            "hostmapOneWorker" => text(a, 0, name)
                .and_then(|h| self.worker_on(name, &h))
                .map(|r| Value::Int(r as i64)),
            "turbine_workers" => Ok(Value::Int(self.layout.workers() as i64)),
            // Every server runs an engine here.
            "adlb_servers" | "turbine_engines" => Ok(Value::Int(self.layout.servers as i64)),
            "hostmapList" => Ok(array(
                (0..self.layout.nodes.len() as u32)
                    .filter(|n| self.layout.workers_on(*n).next().is_some())
                    .map(|n| Value::Str(self.layout.nodes[n as usize].clone())),
            )),
            "randomWorker" => Ok(Value::Location(Location {
                rank: rand::random::<u32>() as i64 % self.layout.workers() as i64,
                hard: true,
                node: false,
            })),
            "read" | "file_lines" | "file_size" | "file_exists" | "file_type" | "file_mtime"
            | "glob"
                if is_locus(0) =>
            {
                self.file_builtin(name, a).await
            }
            _ => return None,
        })
    }

    async fn lookup(&self, a: &[Value]) -> Result<Value, String> {
        let path = text(a, 0, "lookup")?;
        self.holder("lookup", &path).await.map(Value::Str)
    }

    /// The first worker on the node holding a file, or for a file not
    /// written yet, on the node `set_rank` chose (kept by the file system,
    /// so every server sees it).
    async fn get_rank(&self, a: &[Value]) -> Result<Value, String> {
        let path = text(a, 0, "get_rank")?;
        let host = match self.holder("get_rank", &path).await {
            Ok(host) => host,
            Err(e) => {
                let (client, names) = self.fs("get_rank", &path)?;
                match client.hint(self.locus("get_rank", &path)?).await {
                    Ok(Some(node)) => names[node as usize].clone(),
                    _ => return Err(e),
                }
            }
        };
        Ok(Value::Int(self.worker_on("get_rank", &host)? as i64))
    }

    /// `set_rank(path, rank)`: new data of `path` goes to `rank`'s node.
    pub async fn set_rank(&self, a: &[Value]) -> Result<(), String> {
        let path = text(a, 0, "set_rank")?;
        let Some(Value::Int(rank)) = a.get(1) else {
            return Err("set_rank: the rank must be an int".into());
        };
        let rank = self
            .layout
            .check_target(*rank)
            .map_err(|e| format!("set_rank({path}, {rank}): {e}"))?;
        let fp = self.locus("set_rank", &path)?;
        let host = self.layout.node_name(rank);
        let node = self
            .fs_node(host)
            .ok_or_else(|| format!("set_rank({path}, {rank}): {host} has no file-system daemon"))?;
        let client = self.client("set_rank", &path)?;
        client
            .place(fp, node)
            .await
            .map_err(|e| format!("set_rank({path}, {rank}): {e}"))?;
        Ok(())
    }

    async fn file_builtin(&self, name: &str, a: &[Value]) -> Result<Value, String> {
        let path = text(a, 0, name)?;
        let fp = self.locus(name, &path)?;
        let client = self.client(name, &path)?;
        let err = |e: locus_proto::FsError| format!("{name}({path}): {e}");
        match name {
            "file_exists" => Ok(Value::Bool(client.stat(fp).await.is_ok())),
            "file_size" | "file_mtime" | "file_type" => {
                let rec = client.stat(fp).await.map_err(err)?;
                Ok(match name {
                    "file_size" => Value::Int(rec.size as i64),
                    "file_mtime" => Value::Int((rec.mtime_ns / 1_000_000_000) as i64),
                    _ => Value::Str(
                        if rec.kind == Kind::Dir {
                            "directory"
                        } else {
                            "file"
                        }
                        .into(),
                    ),
                })
            }
            "glob" => {
                let (dir, pattern) = fp.rsplit_once('/').unwrap_or(("", fp));
                let (swift_dir, _) = path.rsplit_once('/').unwrap_or(("", &path));
                let dir = if dir.is_empty() { "/" } else { dir };
                let mut out: Vec<String> = client
                    .readdir(dir)
                    .await
                    .map_err(err)?
                    .into_iter()
                    .filter(|e| {
                        e.kind == Kind::File && wildcard(pattern.as_bytes(), e.name.as_bytes())
                    })
                    .map(|e| format!("{swift_dir}/{}", e.name))
                    .collect();
                out.sort();
                Ok(array(out.into_iter().map(Value::File)))
            }
            _ => {
                let bytes = client.get(fp).await.map_err(err)?;
                let text = String::from_utf8_lossy(&bytes).to_string();
                Ok(if name == "read" {
                    Value::Str(text)
                } else {
                    array(text.lines().map(|l| Value::Str(l.to_string())))
                })
            }
        }
    }

    /// `write(s)` into the file at `path`: a Locus file through the file
    /// system, a host file directly.
    pub async fn write_file(&self, path: &str, data: &str) -> Result<(), String> {
        let fail = |e: &dyn std::fmt::Display| format!("write({path}): {e}");
        match fs_path(path) {
            Some(fp) => {
                self.client("write", path)?
                    .put(fp, data.as_bytes())
                    .await
                    .map_err(|e| fail(&e))?;
            }
            None => {
                if let Some(dir) = std::path::Path::new(path).parent() {
                    std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
                }
                std::fs::write(path, data).map_err(|e| fail(&e))?;
            }
        }
        Ok(())
    }

    /// The layout node holding most of the bytes of these Locus files, for
    /// automatic locality; `None` when none of them holds data.
    /// A Locus or host file as it is now, if it exists.
    pub async fn seen(&self, path: &str) -> Option<Seen> {
        match fs_path(path) {
            Some(fp) => {
                let (client, _) = self.fs.as_ref()?;
                let rec = client.stat(fp).await.ok()?;
                Some(Seen::locus(path, rec.stamp))
            }
            None => Seen::host(path),
        }
    }

    /// Where the Locus files among `paths` are, as the run's node indices
    /// (stat'ed concurrently); host files and files no node of the run
    /// holds are left out.
    pub async fn held(&self, paths: &[&str]) -> Vec<Held> {
        let Some((client, names)) = &self.fs else {
            return Vec::new();
        };
        let mut stats = tokio::task::JoinSet::new();
        for p in paths {
            if let Some(fp) = fs_path(p) {
                let (client, fp) = (client.clone(), fp.to_string());
                stats.spawn(async move { client.stat(&fp).await });
            }
        }
        let mut held = Vec::new();
        while let Some(stat) = stats.join_next().await {
            let Ok(Ok(rec)) = stat else { continue };
            let nodes: Vec<u32> = rec
                .holders
                .iter()
                .filter_map(|h| self.layout.node_index(names.get(*h as usize)?))
                .collect();
            if !nodes.is_empty() {
                held.push(Held {
                    bytes: rec.size,
                    nodes,
                });
            }
        }
        held
    }
}
