//! A task record as the live page reads it: only the fields it shows, the
//! common strings borrowed from the line read, so that reading a record
//! allocates next to nothing (a page keeps up with a million tasks a few
//! seconds long on the cores the run itself uses).

use locus_proto::run::{ErrorKind, Rank, Spill};
use locus_runtime::record::EndedAs;
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::borrow::Cow;

#[derive(Debug, Deserialize)]
pub(crate) struct Ended<'a> {
    pub(crate) id: u64,
    #[serde(borrow)]
    pub(crate) func: Cow<'a, str>,
    pub(crate) rank: Rank,
    #[serde(borrow)]
    pub(crate) node: Cow<'a, str>,
    #[serde(default)]
    pub(crate) spill: Option<Spill>,
    pub(crate) start_us: u64,
    pub(crate) end_us: u64,
    #[serde(default)]
    pub(crate) local_bytes: u64,
    #[serde(default)]
    pub(crate) remote_bytes: u64,
    #[serde(default)]
    pub(crate) written_bytes: u64,
    #[serde(default)]
    pub(crate) exit: Option<i32>,
    #[serde(default)]
    pub(crate) error: Option<String>,
    #[serde(default)]
    pub(crate) error_kind: Option<ErrorKind>,
    #[serde(default, borrow)]
    pub(crate) at: Cow<'a, str>,
    #[serde(default)]
    pub(crate) argv: Vec<String>,
    #[serde(default)]
    pub(crate) resumed: bool,
    #[serde(default)]
    pub(crate) abandoned: bool,
    #[serde(default)]
    pub(crate) lost: Vec<IgnoredAny>,
    #[serde(default)]
    pub(crate) cpu_us: u64,
    #[serde(default)]
    pub(crate) max_rss_kib: u64,
    /// Where its stderr was kept, relative to the run directory.
    #[serde(default)]
    pub(crate) stderr: Option<String>,
    /// A parallel task's workers.
    #[serde(default, borrow)]
    pub(crate) job: Vec<JobWorker<'a>>,
}

/// One worker of a parallel task's job.
#[derive(Debug, Deserialize)]
pub(crate) struct JobWorker<'a> {
    pub(crate) rank: Rank,
    #[serde(borrow)]
    pub(crate) node: Cow<'a, str>,
}

impl Ended<'_> {
    /// The workers it kept busy (rank, node): its own, or its job's.
    pub(crate) fn workers(&self) -> impl Iterator<Item = (Rank, &str)> {
        let own = self
            .job
            .is_empty()
            .then_some((self.rank, self.node.as_ref()));
        own.into_iter()
            .chain(self.job.iter().map(|w| (w.rank, w.node.as_ref())))
    }

    pub(crate) fn ended_as(&self) -> EndedAs {
        EndedAs {
            errored: self.error.is_some(),
            abandoned: self.abandoned,
            lost_inputs: !self.lost.is_empty(),
            kind: self.error_kind,
        }
    }
}
