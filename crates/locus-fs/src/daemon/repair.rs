//! `locus fs repair`: the stores against the metadata. Each copy names its
//! path and version (`data/<parent>/@<stamp>/<name>`), so
//! * a node whose metadata was lost (`--node K`, without replicas) gets its
//!   records back from the newest copy of each path it owns (its holders:
//!   the nodes storing that version), and the names its directories kept
//!   from every path under them; its directories' records come back with
//!   them;
//! * copies no record names any more (`--orphans`: of versions replaced or
//!   removed while a daemon was down, of writes that failed half way) are
//!   dropped once old enough that no write in progress can still name them,
//!   and names whose record is gone (a create that failed between naming
//!   the file in its directory and making its record) are removed.

use crate::meta::now_ns;
use crate::path::split;
use crate::Client;
use locus_proto::fs::{Kind, NodeId, Record, Request, Response, StoredCopy};
use locus_proto::{Errno, FsError, FsResult};
use std::collections::BTreeMap;
use std::time::Duration;

/// What a rebuild gave back, and what it could not look at.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rebuilt {
    /// Copies found in the stores that answered.
    pub copies: usize,
    /// File records made again on the node.
    pub files: usize,
    /// Directory records made again on the node.
    pub dirs: usize,
    /// Names put back in the node's directories.
    pub names: usize,
    /// Nodes whose store could not be read: what only they hold is not back.
    pub unread: Vec<NodeId>,
}

/// What a scan for orphaned copies did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Copies old enough to be looked at.
    pub checked: usize,
    /// Copies no record names, dropped, and their bytes.
    pub dropped: usize,
    /// The bytes of those dropped copies.
    pub bytes: u64,
    /// Copies or names whose record could not be read (kept).
    pub unsure: usize,
    /// Names without a record, removed from their directories.
    pub names: usize,
    /// Nodes whose store could not be read.
    pub unread: Vec<NodeId>,
}

/// What a stored copy is to its path's record.
pub(crate) enum Judged {
    /// The copy of the current version, whose record this is.
    Current(Record),
    /// No record names it (replaced, removed, or never named).
    Orphan,
    /// Its record could not be read (its owner down).
    Unsure,
}

/// The newest stored version of each path, with every node holding it.
fn newest(stored: Vec<(NodeId, Vec<StoredCopy>)>) -> BTreeMap<String, (StoredCopy, Vec<NodeId>)> {
    let mut found: BTreeMap<String, (StoredCopy, Vec<NodeId>)> = BTreeMap::new();
    for (node, copies) in stored {
        for c in copies {
            match found.get_mut(&c.path) {
                Some((have, holders)) if have.stamp == c.stamp => holders.push(node),
                Some((have, _)) if have.stored_ns >= c.stored_ns => {}
                _ => {
                    found.insert(c.path.clone(), (c, vec![node]));
                }
            }
        }
    }
    found
}

/// The directories above `path`, outermost first, without the root.
fn ancestors(path: &str) -> Vec<&str> {
    let mut dirs = Vec::new();
    let mut at = path;
    while let Ok((dir, _)) = split(at) {
        if dir == "/" {
            break;
        }
        dirs.push(dir);
        at = dir;
    }
    dirs.reverse();
    dirs
}

impl Client {
    /// The copies node `node`'s store holds.
    pub async fn stored(&self, node: NodeId) -> FsResult<Vec<StoredCopy>> {
        match self.call(node, Request::ListStored).await? {
            Response::Stored(copies) => Ok(copies),
            other => Err(FsError::new(Errno::EIO, format!("node {node}"))
                .with_detail(format!("unexpected answer {other:?}"))),
        }
    }

    /// Makes node `node`'s records and names again from the copies every
    /// store holds (its daemon serving an empty metadata store). What
    /// exists already is left as it is.
    pub async fn rebuild(&self, node: NodeId) -> FsResult<Rebuilt> {
        let mut done = Rebuilt::default();
        let mut stored = Vec::new();
        for n in 0..self.node_count() as NodeId {
            match self.stored(n).await {
                Ok(copies) => {
                    done.copies += copies.len();
                    stored.push((n, copies));
                }
                Err(e) if n == node => return Err(e),
                Err(_) => done.unread.push(n),
            }
        }
        let mut made_dirs = std::collections::HashSet::new();
        for (path, (copy, holders)) in newest(stored) {
            let (parent, name) = split(&path)?;
            for dir in ancestors(&path) {
                if made_dirs.insert(dir.to_string()) {
                    let (above, dir_name) = split(dir)?;
                    if self.owner(dir) == node {
                        let rec = Record::new(Kind::Dir, 0o755, copy.stored_ns);
                        done.dirs += self.put_back_record(node, dir, rec).await?;
                    }
                    if self.owner(above) == node {
                        done.names += self.put_back_name(node, above, dir_name, Kind::Dir).await?;
                    }
                }
            }
            if self.owner(&path) == node {
                let rec = Record {
                    size: copy.size,
                    version: 1,
                    stamp: copy.stamp,
                    holders,
                    ..Record::new(Kind::File, 0o644, copy.stored_ns)
                };
                done.files += self.put_back_record(node, &path, rec).await?;
            }
            if self.owner(parent) == node {
                done.names += self.put_back_name(node, parent, name, Kind::File).await?;
            }
        }
        Ok(done)
    }

    /// Drops every copy stored at least `min_age` ago that its path's
    /// record does not name as its current version (or whose name is gone);
    /// a copy whose record cannot be read is kept. Then removes the names
    /// whose record is gone.
    pub async fn reclaim_orphans(&self, min_age: Duration) -> FsResult<Reclaimed> {
        let mut done = Reclaimed::default();
        for n in 0..self.node_count() as NodeId {
            self.reclaim_copies(n, min_age, &mut done).await;
        }
        self.drop_nameless(&mut done).await;
        Ok(done)
    }

    /// [`Client::reclaim_orphans`] of node `node`'s copies only.
    pub async fn reclaim_copies_of(&self, node: NodeId, min_age: Duration) -> Reclaimed {
        let mut done = Reclaimed::default();
        self.reclaim_copies(node, min_age, &mut done).await;
        done
    }

    async fn reclaim_copies(&self, n: NodeId, min_age: Duration, done: &mut Reclaimed) {
        let before = now_ns().saturating_sub(min_age.as_nanos() as i64);
        let Ok(copies) = self.stored(n).await else {
            done.unread.push(n);
            return;
        };
        for c in copies.iter().filter(|c| c.stored_ns <= before) {
            done.checked += 1;
            match self.judge(c).await {
                Judged::Current(_) => continue,
                Judged::Unsure => {
                    done.unsure += 1;
                    continue;
                }
                Judged::Orphan => {}
            }
            let drop = Request::DropData {
                path: c.path.clone(),
                stamp: c.stamp,
            };
            if self.call(n, drop).await.is_ok() {
                done.dropped += 1;
                done.bytes += c.size;
            }
        }
    }

    /// What stored copy `c` is to its path's record.
    pub(crate) async fn judge(&self, c: &StoredCopy) -> Judged {
        match self.stat(&c.path).await {
            Ok(rec) if rec.kind == Kind::File && rec.stamp == c.stamp => Judged::Current(rec),
            Ok(_) => Judged::Orphan,
            Err(e) if e.code == Errno::ENOENT && !Client::owner_lost(&e) => Judged::Orphan,
            Err(_) => Judged::Unsure,
        }
    }

    /// Removes, walking the whole tree, every name whose record is gone (a
    /// look at it waits for a record being made: `stat`).
    async fn drop_nameless(&self, done: &mut Reclaimed) {
        let mut dirs = vec!["/".to_string()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = self.readdir(&dir).await else {
                done.unsure += 1;
                continue;
            };
            for e in entries {
                let path = crate::path::join(&dir, &e.name);
                match self.stat(&path).await {
                    Ok(rec) if rec.kind == Kind::Dir => dirs.push(path),
                    Ok(_) => {}
                    Err(err) if err.code == Errno::ENOENT && !Client::owner_lost(&err) => {
                        let req = Request::RemoveEntry {
                            parent: dir.clone(),
                            name: e.name,
                            kind: e.kind,
                            op: rand::random(),
                        };
                        if self.call(self.owner(&dir), req).await.is_ok() {
                            done.names += 1;
                        }
                    }
                    Err(_) => done.unsure += 1,
                }
            }
        }
    }

    /// Makes record `rec` of `path` on `node` unless it has one: 1 if made.
    async fn put_back_record(&self, node: NodeId, path: &str, rec: Record) -> FsResult<usize> {
        let req = Request::CreateRecord {
            path: path.to_string(),
            record: rec,
            lease: None,
        };
        self.put_back(node, req).await
    }

    /// Puts name `name` of `kind` back in `dir` on `node`: 1 if it was missing.
    async fn put_back_name(
        &self,
        node: NodeId,
        dir: &str,
        name: &str,
        kind: Kind,
    ) -> FsResult<usize> {
        let req = Request::AddEntry {
            parent: dir.to_string(),
            name: name.to_string(),
            kind,
            op: rand::random(),
        };
        self.put_back(node, req).await
    }

    /// Sends `req`, which makes something: 1 if made, 0 if it was there.
    async fn put_back(&self, node: NodeId, req: Request) -> FsResult<usize> {
        match self.call(node, req).await {
            Ok(_) => Ok(1),
            Err(e) if e.code == Errno::EEXIST => Ok(0),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(path: &str, stamp: u64, stored_ns: i64) -> StoredCopy {
        StoredCopy {
            path: path.into(),
            stamp,
            size: 1,
            stored_ns,
        }
    }

    #[test]
    fn the_newest_version_of_each_path_wins_with_every_node_holding_it() {
        let found = newest(vec![
            (0, vec![copy("/a", 1, 10), copy("/b", 7, 5)]),
            (1, vec![copy("/a", 2, 20), copy("/b", 7, 5)]),
            (2, vec![copy("/a", 1, 10)]),
        ]);
        assert_eq!(found["/a"].0.stamp, 2);
        assert_eq!(found["/a"].1, vec![1]);
        assert_eq!(found["/b"].1, vec![0, 1]);
    }

    #[test]
    fn ancestors_are_listed_outermost_first_without_the_root() {
        assert_eq!(ancestors("/x/y/z.txt"), vec!["/x", "/x/y"]);
        assert!(ancestors("/z.txt").is_empty());
    }
}
