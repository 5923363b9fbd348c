//! Scrubbing a node's store: every copy of a current version it holds is
//! read and checked against the version's record, at a bounded rate, so
//! that bytes changed on disk are found before a reader needs them. A bad
//! copy is set aside and made again from a good holder (checked as any
//! fetch is); a version with no good copy left is reported lost.

use crate::daemon::repair::Judged;
use crate::data::sums::Mismatch;
use crate::meta::now_ns;
use crate::Client;
use locus_proto::fs::ScrubReport;
use locus_proto::FsResult;
use std::time::{Duration, Instant};

/// What a scrub of one node's store found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scrubbed {
    /// Copies of current versions read and checked, and their bytes.
    pub checked: usize,
    /// The bytes of those checked copies.
    pub bytes: u64,
    /// Bad copies made again from a good holder.
    pub repaired: Vec<(String, Mismatch)>,
    /// Files with no good copy left.
    pub lost: Vec<Lost>,
    /// Copies whose record could not be read (not checked).
    pub unsure: usize,
}

/// A file with no good copy left: what was wrong with the copy here, and
/// the run's task that made it, if one did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// The file's path.
    pub path: String,
    /// What was wrong with its last copy.
    pub why: Mismatch,
    /// The task that made it (`made_by_note`), if a run's task did.
    pub made_by: Option<String>,
}

/// How a lost file's line ends: what made it, where a run's task did.
pub fn made_by_note(made_by: Option<&str>) -> String {
    made_by.map_or(String::new(), |m| format!(" (made by {m})"))
}

impl Client {
    /// Checks every copy of a current version this client's node stores,
    /// reading at most `rate` bytes a second (unbounded if `None`).
    pub async fn scrub(&self, rate: Option<u64>) -> FsResult<Scrubbed> {
        let me = self.node();
        let store = self.store().clone();
        let copies = crate::client::blocking(move || Ok(store.stored())).await?;
        let mut done = Scrubbed::default();
        let started = Instant::now();
        for c in copies {
            let rec = match self.judge(&c).await {
                Judged::Current(rec) => rec,
                // Not the current version: the orphan scan's.
                Judged::Orphan => continue,
                Judged::Unsure => {
                    done.unsure += 1;
                    continue;
                }
            };
            let file = self.store().data_path(&c.path, c.stamp);
            let verdict = self.check_copy(&c.path, &rec, &file).await?;
            done.checked += 1;
            done.bytes += c.size;
            if let Err(why) = verdict {
                self.set_aside(&c.path, &rec, me, why).await;
                let mut others = rec.clone();
                others.holders.retain(|&h| h != me);
                match self.local_copy_from(&c.path, Some(&others)).await {
                    Ok(_) => done.repaired.push((c.path.clone(), why)),
                    Err(e) => {
                        tracing::warn!("{}: {e}", c.path);
                        done.lost.push(Lost {
                            path: c.path.clone(),
                            why,
                            made_by: rec.made_by.clone(),
                        });
                    }
                }
            }
            if let Some(rate) = rate.filter(|r| *r > 0) {
                let due = Duration::from_secs_f64(done.bytes as f64 / rate as f64);
                if let Some(wait) = due.checked_sub(started.elapsed()) {
                    tokio::time::sleep(wait).await;
                }
            }
        }
        let report = ScrubReport {
            at_ns: now_ns(),
            checked: done.checked as u64,
            bytes: done.bytes,
            repaired: done.repaired.len() as u64,
            lost: done
                .lost
                .iter()
                .map(|l| (l.path.clone(), l.made_by.clone()))
                .collect(),
        };
        let store = self.store().clone();
        if let Err(e) = crate::client::blocking(move || {
            store
                .save_scrub(&report)
                .map_err(|e| locus_proto::FsError::io("scrub.json", &e))
        })
        .await
        {
            tracing::warn!("the scrub's report is not kept: {e}");
        }
        Ok(done)
    }
}
