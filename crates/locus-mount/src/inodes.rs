//! Inode numbers for Locus files: the kernel names files by number, Locus by
//! path, and a file's versions are immutable. A number stands for one
//! version of one path (directories have one version), so the kernel's
//! cached pages and sizes of a number are always right, and a program still
//! reading an older version keeps it while the name moves on to the next.
//! A number handed out by a lookup stays bound (through renames) until the
//! kernel forgets it; it moves on to a newer version only when opened while
//! no program has it open (what the kernel kept of the older one is then
//! read past).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

pub(crate) const ROOT: u64 = 1;
/// Numbers at and above this are only shown in directory listings of names
/// never looked up; they are never bound.
const UNBOUND: u64 = 1 << 63;

struct Node {
    path: String,
    /// The version (`Record::stamp`) this number stands for.
    stamp: u64,
    lookups: u64,
}

pub(crate) struct Inodes {
    by_ino: HashMap<u64, Node>,
    /// The number of each path's newest version looked up.
    by_path: HashMap<String, u64>,
    next: u64,
}

impl Default for Inodes {
    fn default() -> Self {
        let mut t = Inodes {
            by_ino: HashMap::new(),
            by_path: HashMap::new(),
            next: ROOT + 1,
        };
        t.by_ino.insert(
            ROOT,
            Node {
                path: "/".into(),
                stamp: 0,
                // The root is never forgotten.
                lookups: u64::MAX / 2,
            },
        );
        t.by_path.insert("/".into(), ROOT);
        t
    }
}

impl Inodes {
    pub(crate) fn path(&self, ino: u64) -> Option<&str> {
        self.by_ino.get(&ino).map(|n| n.path.as_str())
    }

    /// The version `ino` stands for.
    pub(crate) fn stamp(&self, ino: u64) -> Option<u64> {
        self.by_ino.get(&ino).map(|n| n.stamp)
    }

    /// The number of version `stamp` of `path`, bound (and counted) for a
    /// lookup the kernel will later forget.
    pub(crate) fn looked_up(&mut self, path: &str, stamp: u64) -> u64 {
        if let Some(&ino) = self.by_path.get(path) {
            let node = self.by_ino.get_mut(&ino).expect("bound both ways");
            if node.stamp == stamp {
                node.lookups += 1;
                return ino;
            }
        }
        let ino = self.next;
        self.next += 1;
        self.by_ino.insert(
            ino,
            Node {
                path: path.to_string(),
                stamp,
                lookups: 1,
            },
        );
        self.by_path.insert(path.to_string(), ino);
        ino
    }

    /// `ino` now stands for version `stamp` (written here, or opened while
    /// nothing had the version before open).
    pub(crate) fn published(&mut self, ino: u64, stamp: u64) {
        if let Some(node) = self.by_ino.get_mut(&ino) {
            node.stamp = stamp;
        }
    }

    /// The next lookup of `ino`'s name gets a new number: the kernel's
    /// opens of `ino` stay as they are, new ones go to the new number.
    pub(crate) fn retire(&mut self, ino: u64) {
        if let Some(node) = self.by_ino.get(&ino) {
            if self.by_path.get(&node.path) == Some(&ino) {
                self.by_path.remove(&node.path);
            }
        }
    }

    /// The number to show for `path` in a listing: its bound number, or a
    /// stable unbound one (listings do not count as lookups).
    pub(crate) fn listed(&self, path: &str) -> u64 {
        if let Some(&ino) = self.by_path.get(path) {
            return ino;
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        path.hash(&mut h);
        h.finish() | UNBOUND
    }

    /// Drops `n` lookups of `ino`; whether it is now unbound.
    pub(crate) fn forget(&mut self, ino: u64, n: u64) -> bool {
        let Some(node) = self.by_ino.get_mut(&ino) else {
            return true;
        };
        node.lookups = node.lookups.saturating_sub(n);
        if node.lookups > 0 {
            return false;
        }
        let node = self.by_ino.remove(&ino).expect("present");
        if self.by_path.get(&node.path) == Some(&ino) {
            self.by_path.remove(&node.path);
        }
        true
    }

    /// The name `path` is gone; its number (still open or cached by the
    /// kernel) no longer answers for a new file of that name.
    pub(crate) fn removed(&mut self, path: &str) {
        self.by_path.remove(path);
    }

    /// `from` (and everything under it) is now called `to`.
    pub(crate) fn renamed(&mut self, from: &str, to: &str) {
        self.removed(to);
        let under = format!("{from}/");
        let moved: Vec<(String, u64)> = self
            .by_path
            .iter()
            .filter(|(p, _)| p.as_str() == from || p.starts_with(&under))
            .map(|(p, &i)| (p.clone(), i))
            .collect();
        for (old, ino) in moved {
            let new = format!("{to}{}", &old[from.len()..]);
            self.by_path.remove(&old);
            self.by_path.insert(new.clone(), ino);
            self.by_ino.get_mut(&ino).expect("bound both ways").path = new;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_follows_its_file_until_forgotten() {
        let mut t = Inodes::default();
        let d = t.looked_up("/d", 0);
        let f = t.looked_up("/d/f", 7);
        assert_eq!(t.looked_up("/d/f", 7), f);
        t.renamed("/d", "/e");
        assert_eq!(t.path(d), Some("/e"));
        assert_eq!(t.path(f), Some("/e/f"));
        assert_eq!(t.listed("/e/f"), f);
        assert!(!t.forget(f, 1), "looked up twice");
        assert_eq!(t.path(f), Some("/e/f"));
        assert!(t.forget(f, 1));
        assert_eq!(t.path(f), None);
        assert!(t.listed("/e/f") >= UNBOUND);
        assert_eq!(t.path(ROOT), Some("/"));
    }

    #[test]
    fn each_version_has_its_own_number() {
        let mut t = Inodes::default();
        let v1 = t.looked_up("/f", 1);
        let v2 = t.looked_up("/f", 2);
        assert_ne!(v1, v2);
        assert_eq!((t.stamp(v1), t.stamp(v2)), (Some(1), Some(2)));
        assert_eq!(t.listed("/f"), v2);
        // The older version's reader forgets it; the name keeps the newer.
        assert!(t.forget(v1, 1));
        assert_eq!(t.looked_up("/f", 2), v2);
        // A version written here keeps its number once published.
        t.published(v2, 3);
        assert_eq!(t.looked_up("/f", 3), v2);
        // A retired number keeps its file; the name gets a new one.
        t.retire(v2);
        assert_eq!(t.path(v2), Some("/f"));
        assert_ne!(t.looked_up("/f", 3), v2);
    }

    #[test]
    fn a_removed_name_gets_a_new_number() {
        let mut t = Inodes::default();
        let a = t.looked_up("/a", 0);
        t.removed("/a");
        assert_eq!(t.path(a), Some("/a"), "open files keep their number");
        let b = t.looked_up("/a", 0);
        assert_ne!(a, b);
        t.forget(a, 1);
        assert_eq!(t.path(b), Some("/a"));
        // Renaming over a name unbinds the replaced file's number.
        let c = t.looked_up("/c", 5);
        t.renamed("/c", "/a");
        assert_eq!(t.looked_up("/a", 5), c);
    }
}
