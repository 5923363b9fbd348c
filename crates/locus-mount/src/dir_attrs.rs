//! Directories' records as this mount last learned them, trusted for as
//! long as the kernel trusts attributes. The kernel forgets a directory's
//! attributes whenever a name in it changes, and with permission checks on
//! it asks for them before the next create there: answered from here, a
//! create in a directory costs no round trip to its daemon for them.

use locus_proto::fs::{Kind, Record};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Entries kept before the expired ones are dropped.
const PRUNE_AT: usize = 4096;

pub(crate) struct DirAttrs {
    ttl: Duration,
    known: HashMap<u64, (Instant, Record)>,
}

impl DirAttrs {
    pub(crate) fn new(ttl: Duration) -> DirAttrs {
        DirAttrs {
            ttl,
            known: HashMap::new(),
        }
    }

    /// Remembers `rec` of inode `ino` learned at `now`, if it is a directory.
    pub(crate) fn learned(&mut self, ino: u64, rec: &Record, now: Instant) {
        if rec.kind != Kind::Dir {
            return;
        }
        if self.known.len() >= PRUNE_AT {
            let ttl = self.ttl;
            self.known
                .retain(|_, (at, _)| now.duration_since(*at) < ttl);
        }
        self.known.insert(ino, (now, rec.clone()));
    }

    /// The record of directory `ino` if learned less than the TTL ago, and
    /// how much of the TTL is left (so what the kernel then caches is never
    /// older than one TTL in all).
    pub(crate) fn fresh(&self, ino: u64, now: Instant) -> Option<(Record, Duration)> {
        let (at, rec) = self.known.get(&ino)?;
        let left = self.ttl.checked_sub(now.duration_since(*at))?;
        (!left.is_zero()).then(|| (rec.clone(), left))
    }

    /// Forgets `ino` (its attributes were changed, or it was removed).
    pub(crate) fn changed(&mut self, ino: u64) {
        self.known.remove(&ino);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_trusted_for_what_is_left_of_the_ttl() {
        let mut d = DirAttrs::new(Duration::from_secs(1));
        let t = Instant::now();
        d.learned(5, &Record::new(Kind::Dir, 0o755, 1), t);
        let (rec, left) = d.fresh(5, t + Duration::from_millis(300)).unwrap();
        assert_eq!((rec.kind, rec.mode), (Kind::Dir, 0o755));
        assert_eq!(left, Duration::from_millis(700));
        assert!(d.fresh(5, t + Duration::from_secs(1)).is_none());
        assert!(d.fresh(6, t).is_none());
    }

    #[test]
    fn files_are_not_kept_and_a_change_forgets() {
        let mut d = DirAttrs::new(Duration::from_secs(1));
        let t = Instant::now();
        d.learned(7, &Record::new(Kind::File, 0o644, 1), t);
        assert!(d.fresh(7, t).is_none());
        d.learned(8, &Record::new(Kind::Dir, 0o755, 1), t);
        d.changed(8);
        assert!(d.fresh(8, t).is_none());
    }

    #[test]
    fn expired_entries_are_dropped_once_many_are_kept() {
        let mut d = DirAttrs::new(Duration::from_secs(1));
        let t = Instant::now();
        for ino in 0..PRUNE_AT as u64 {
            d.learned(ino, &Record::new(Kind::Dir, 0o755, 1), t);
        }
        let later = t + Duration::from_secs(2);
        d.learned(u64::MAX, &Record::new(Kind::Dir, 0o755, 1), later);
        assert_eq!(d.known.len(), 1);
    }
}
