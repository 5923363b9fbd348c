//! How the ranks of a run find each other. Each rank learns its rank and
//! the run's size from the launcher's environment (ours, Slurm, MPICH/PMI,
//! Open MPI) and says where it is: through the launcher's key-value
//! exchange when it offers one (PMI, `exchange_pmi`), else in the run
//! directory (`publish`, `gather`); either way one rank gathers and the
//! others read what it gathered, so the cost grows with N, not N². The run
//! directory also holds the run's secret (made once, like a joined
//! cluster's: `locus_fs::shared_secret`).

use crate::ranks::pmi::Pmi;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as WORDS;
use base64::Engine as _;
use locus_proto::run::Rank;
use serde::{Deserialize, Serialize};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Rank and size as a launcher gave them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankEnv {
    pub rank: Rank,
    pub size: u32,
}

/// Why the ranks of a run did not meet.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireupError {
    /// Ranks that said nothing within the wait.
    #[error("ranks {} did not start within {timeout:?} (rendezvous in {})", list(missing), dir.display())]
    NotStarted {
        missing: Vec<Rank>,
        timeout: Duration,
        dir: PathBuf,
    },
    /// A rank failed before the ranks met, and said why.
    #[error("rank {rank} failed before the ranks met: {why}")]
    Failed { rank: Rank, why: String },
    /// The run directory holds the ranks of another run of another size.
    #[error("{} lists {listed} ranks, not {size}: give each run its own --run-dir", path.display())]
    SharedRunDir {
        path: PathBuf,
        listed: usize,
        size: u32,
    },
    /// The launcher's exchange lists another number of ranks.
    #[error("the launcher's PMI lists {listed} ranks, not {size}")]
    PmiSize { listed: usize, size: u32 },
    /// The launcher's key-value exchange failed.
    #[error("wire-up through the launcher's PMI: {0}")]
    Pmi(io::Error),
    /// A file of the rendezvous could not be written.
    #[error("{}: {cause}", path.display())]
    Write { path: PathBuf, cause: io::Error },
    /// What a rank published cannot be read (`what`: where it was).
    #[error("{what}: {detail}")]
    Unreadable { what: String, detail: String },
}

fn list(ranks: &[Rank]) -> String {
    let each: Vec<String> = ranks.iter().map(ToString::to_string).collect();
    each.join(",")
}

/// (rank variable, size variable, a variable one of which must be set
/// too), ours first. Slurm sets its rank variables in a batch script as
/// well, where nothing started the other ranks: only a job step's tasks
/// (`srun`) have a step id.
const LAUNCHERS: &[(&str, &str, &[&str])] = &[
    ("LOCUS_RANK", "LOCUS_SIZE", &[]),
    (
        "SLURM_PROCID",
        "SLURM_NTASKS",
        &["SLURM_STEP_ID", "SLURM_STEPID"],
    ),
    ("PMI_RANK", "PMI_SIZE", &[]),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", &[]),
    ("PMIX_RANK", "PMIX_SIZE", &[]),
];

impl RankEnv {
    /// The rank this process was started as, if a launcher started it as
    /// one of several.
    pub fn from_env() -> Option<RankEnv> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    fn from_vars(get: impl Fn(&str) -> Option<String>) -> Option<RankEnv> {
        LAUNCHERS.iter().find_map(|(r, s, step)| {
            if !step.is_empty() && !step.iter().any(|v| get(v).is_some()) {
                return None;
            }
            let rank = get(r)?.trim().parse().ok()?;
            let size: u32 = get(s)?.trim().parse().ok()?;
            (size > 1 && rank < size).then_some(RankEnv { rank, size })
        })
    }
}

/// This machine's name, or `LOCUS_NODE` when set (emulated nodes).
pub(crate) fn node_name() -> String {
    if let Ok(n) = std::env::var("LOCUS_NODE") {
        return n;
    }
    locus_fs::hostname()
}

/// What one rank publishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub rank: Rank,
    pub node: String,
    /// Where a server listens; workers do not listen.
    pub addr: Option<SocketAddr>,
    pub pid: u32,
    /// Random, drawn by the rank; the leader's names the run
    /// (`/locus/tmp/<run>/`) the same way on every server.
    pub nonce: u32,
}

/// Every rank's entry, written once by the gathering rank.
const ALL_FILE: &str = "all.json";

pub fn ranks_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("ranks")
}

/// The shared directory the ranks meet in. Every file operation of the
/// rendezvous goes through it, so its cost can be counted.
pub(crate) trait Board: Sync {
    /// Creates `name` holding `bytes`; an existing `name` is an error.
    fn create_new(&self, name: &str, bytes: &[u8]) -> io::Result<()>;
    fn read(&self, name: &str) -> io::Result<Vec<u8>>;
    /// Publishes `name` whole, unless something already is there.
    fn write_once(&self, name: &str, bytes: &[u8]) -> io::Result<()>;
    fn path(&self, name: &str) -> PathBuf;
}

/// A run directory's `ranks/`.
pub(crate) struct RanksDir(PathBuf);

impl RanksDir {
    pub(crate) fn of(run_dir: &Path) -> RanksDir {
        RanksDir(ranks_dir(run_dir))
    }
}

impl Board for RanksDir {
    /// One file created in place (not a temporary name linked into place):
    /// thousands of ranks publish at once, and every creation in one
    /// directory takes its lock.
    fn create_new(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        std::fs::create_dir_all(&self.0)?;
        let mut file = std::fs::File::create_new(self.path(name))?;
        io::Write::write_all(&mut file, bytes)
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.path(name))
    }

    fn write_once(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        locus_fs::write_once(&self.path(name), bytes).map(|_| ())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

fn entry_name(rank: u32) -> String {
    format!("{rank}.json")
}

fn failed_name(rank: u32) -> String {
    format!("failed-{rank}.txt")
}

/// Notes why rank `rank` failed, for the ranks and servers waiting for it
/// (best effort: a rank that cannot write it is waited for as before).
pub(crate) fn note_failed(board: &impl Board, rank: Rank, why: &str) {
    let _ = std::fs::create_dir_all(board.path(""));
    let _ = board.write_once(&failed_name(rank), why.as_bytes());
}

/// Why rank `rank` failed, if it said.
pub(crate) fn failed(board: &impl Board, rank: Rank) -> Option<String> {
    let why = board.read(&failed_name(rank)).ok()?;
    Some(String::from_utf8_lossy(&why).into_owned())
}

/// Publishes `e`; a rank's entry already there belongs to another run. The
/// gatherer reads an entry not yet whole as not yet there.
pub(crate) fn publish(board: &impl Board, e: &Entry) -> io::Result<()> {
    let name = entry_name(e.rank);
    match board.create_new(&name, &serde_json::to_vec(e)?) {
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Err(io::Error::other(format!(
            "{} is left from another run; give each run its own --run-dir",
            board.path(&name).display()
        ))),
        done => done,
    }
}

/// Waits until all `size` ranks have published, or `timeout` passes. Rank
/// `gatherer` reads each entry once and publishes them all in one file;
/// the others wait for that file alone, so a run of N ranks costs O(N) file
/// reads, not N per rank per poll (on a parallel file system that would be
/// a metadata storm). Polls back off from 2 ms to 50 ms.
pub(crate) fn gather(
    board: &impl Board,
    size: u32,
    me: Rank,
    gatherer: Rank,
    timeout: Duration,
) -> Result<Vec<Entry>, WireupError> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(2);
    let mut found: Vec<Option<Entry>> = vec![None; size as usize];
    let whole = |r: u32| -> Option<Entry> {
        // Not whole yet: read again next time.
        serde_json::from_slice(&board.read(&entry_name(r)).ok()?).ok()
    };
    loop {
        if me == gatherer {
            for (r, slot) in found.iter_mut().enumerate().filter(|(_, s)| s.is_none()) {
                let r = r as u32;
                *slot = whole(r);
                // One that failed is not waited for: the others learn it
                // from the gatherer's own note.
                if let Some(why) = slot.is_none().then(|| failed(board, r)).flatten() {
                    let err = WireupError::Failed { rank: r, why };
                    note_failed(board, me, &err.to_string());
                    return Err(err);
                }
            }
            if found.iter().all(Option::is_some) {
                let entries: Vec<Entry> = found.into_iter().flatten().collect();
                let bytes = serde_json::to_vec(&entries).expect("entries serialize");
                board
                    .write_once(ALL_FILE, &bytes)
                    .map_err(|cause| WireupError::Write {
                        path: board.path(ALL_FILE),
                        cause,
                    })?;
                return Ok(entries);
            }
        } else if let Ok(b) = board.read(ALL_FILE) {
            let path = board.path(ALL_FILE);
            let entries: Vec<Entry> =
                serde_json::from_slice(&b).map_err(|e| WireupError::Unreadable {
                    what: path.display().to_string(),
                    detail: e.to_string(),
                })?;
            if entries.len() != size as usize {
                return Err(WireupError::SharedRunDir {
                    path,
                    listed: entries.len(),
                    size,
                });
            }
            return Ok(entries);
        } else if let Some(why) = failed(board, gatherer) {
            return Err(WireupError::Failed {
                rank: gatherer,
                why,
            });
        }
        if Instant::now() > deadline {
            return Err(WireupError::NotStarted {
                missing: (0..size).filter(|&r| whole(r).is_none()).collect(),
                timeout,
                dir: board.path(""),
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Keeps the ranks that met through the launcher's exchange where a
/// gathering in the run directory would have put them: the launcher that
/// started the run reads them if the run is stopped before its leader
/// could write its summary (`met`).
pub(crate) fn keep_met(board: &impl Board, entries: &[Entry]) -> io::Result<()> {
    std::fs::create_dir_all(board.path(""))?;
    board.write_once(
        ALL_FILE,
        &serde_json::to_vec(entries).expect("entries serialize"),
    )
}

/// The ranks of the run in `run_dir`, once they met: where each runs.
pub fn met(run_dir: &Path) -> Option<Vec<Entry>> {
    let bytes = RanksDir::of(run_dir).read(ALL_FILE).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// How the ranks of a run met (said in `run.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wireup {
    /// The launcher's PMI key-value exchange: no file.
    Pmi,
    /// Files in the run directory.
    RunDir,
}

/// `v` as one PMI value word (postcard, then URL-safe base64: no space, no `=`).
fn to_word<T: Serialize>(v: &T) -> String {
    WORDS.encode(postcard::to_stdvec(v).expect("entries serialize"))
}

/// The value of word `w`, which the launcher's exchange held as `what`.
fn from_word<T: serde::de::DeserializeOwned>(w: &str, what: String) -> Result<T, WireupError> {
    let unreadable = |detail: String| WireupError::Unreadable {
        what: what.clone(),
        detail,
    };
    let bytes = WORDS.decode(w).map_err(|e| unreadable(e.to_string()))?;
    postcard::from_bytes(&bytes).map_err(|e| unreadable(e.to_string()))
}

/// The rendezvous through the launcher's PMI: every rank puts its entry;
/// after a fence the gatherer gets them all and puts the whole list in
/// pieces of what one value holds; after a second fence the others get the
/// pieces. N puts and N + (N - 1) × (pieces + 1) gets, no file.
pub(crate) fn exchange_pmi(
    pmi: &mut Pmi,
    me: &Entry,
    size: u32,
    gatherer: Rank,
) -> Result<Vec<Entry>, WireupError> {
    let pmi_err = WireupError::Pmi;
    pmi.put(&format!("locus-{}", me.rank), &to_word(me))
        .map_err(pmi_err)?;
    pmi.fence().map_err(pmi_err)?;
    let entries = if me.rank == gatherer {
        let entries = (0..size)
            .map(|r| {
                let word = pmi.get(&format!("locus-{r}")).map_err(pmi_err)?;
                from_word(&word, format!("rank {r}'s PMI entry"))
            })
            .collect::<Result<Vec<Entry>, WireupError>>()?;
        let all = to_word(&entries);
        // Sized for the longest piece key there could be.
        let piece = pmi.max_value(&format!("locus-all-{}", all.len())).max(1);
        let pieces: Vec<&str> = all
            .as_bytes()
            .chunks(piece)
            .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
            .collect();
        for (i, p) in pieces.iter().enumerate() {
            pmi.put(&format!("locus-all-{i}"), p).map_err(pmi_err)?;
        }
        pmi.put("locus-all", &pieces.len().to_string())
            .map_err(pmi_err)?;
        Some(entries)
    } else {
        None
    };
    pmi.fence().map_err(pmi_err)?;
    if let Some(entries) = entries {
        return Ok(entries);
    }
    let count = pmi.get("locus-all").map_err(pmi_err)?;
    let pieces: usize = count.parse().map_err(|e| WireupError::Unreadable {
        what: "PMI locus-all".into(),
        detail: format!("{e}"),
    })?;
    let mut all = String::new();
    for i in 0..pieces {
        all.push_str(&pmi.get(&format!("locus-all-{i}")).map_err(pmi_err)?);
    }
    let entries: Vec<Entry> = from_word(&all, "PMI locus-all".into())?;
    if entries.len() != size as usize {
        return Err(WireupError::PmiSize {
            listed: entries.len(),
            size,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn launcher_variables_are_recognised() {
        let vars: HashMap<&str, &str> = [("PMI_RANK", "2"), ("PMI_SIZE", "4")].into();
        let got = RankEnv::from_vars(|k| vars.get(k).map(std::string::ToString::to_string));
        assert_eq!(got, Some(RankEnv { rank: 2, size: 4 }));
        let single: HashMap<&str, &str> = [("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1")].into();
        assert_eq!(
            RankEnv::from_vars(|k| single.get(k).map(std::string::ToString::to_string)),
            None
        );
        // A batch script of a 6-task job is not rank 0 of 6; a task of a
        // step of it is.
        let mut batch: HashMap<&str, &str> = [("SLURM_PROCID", "0"), ("SLURM_NTASKS", "6")].into();
        let from = |vars: &HashMap<&str, &str>| {
            RankEnv::from_vars(|k| vars.get(k).map(std::string::ToString::to_string))
        };
        assert_eq!(from(&batch), None);
        batch.insert("SLURM_STEP_ID", "0");
        assert_eq!(from(&batch), Some(RankEnv { rank: 0, size: 6 }));
    }

    #[test]
    fn entries_gather_and_stale_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for rank in 0..2 {
            let e = Entry {
                rank,
                node: "n".into(),
                addr: None,
                pid: 1,
                nonce: 7,
            };
            publish(&RanksDir::of(dir.path()), &e).unwrap();
        }
        // The gatherer publishes them all; the others read that one file.
        let got = gather(
            &RanksDir::of(dir.path()),
            2,
            1,
            1,
            Duration::from_millis(10),
        )
        .unwrap();
        assert_eq!(got[1].rank, 1);
        std::fs::rename(
            dir.path().join("ranks/0.json"),
            dir.path().join("ranks/moved"),
        )
        .unwrap();
        let other = gather(
            &RanksDir::of(dir.path()),
            2,
            0,
            1,
            Duration::from_millis(10),
        )
        .unwrap();
        assert_eq!(other, got);
        std::fs::rename(
            dir.path().join("ranks/moved"),
            dir.path().join("ranks/0.json"),
        )
        .unwrap();
        let again = Entry {
            rank: 0,
            node: "n".into(),
            addr: None,
            pid: 2,
            nonce: 8,
        };
        assert!(publish(&RanksDir::of(dir.path()), &again).is_err());
        let err = gather(
            &RanksDir::of(dir.path()),
            3,
            0,
            1,
            Duration::from_millis(10),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                WireupError::SharedRunDir {
                    listed: 2,
                    size: 3,
                    ..
                }
            ),
            "{err}"
        );
        // An entry not yet whole is not there yet.
        let partial = tempfile::tempdir().unwrap();
        publish(&RanksDir::of(partial.path()), &again).unwrap();
        let one = partial.path().join("ranks/1.json");
        std::fs::write(&one, b"{\"rank\":1,").unwrap();
        let err = gather(
            &RanksDir::of(partial.path()),
            2,
            0,
            0,
            Duration::from_millis(10),
        )
        .unwrap_err();
        assert!(
            matches!(&err, WireupError::NotStarted { missing, .. } if missing == &[1]),
            "{err}"
        );
        let whole = Entry {
            rank: 1,
            ..again.clone()
        };
        std::fs::write(&one, serde_json::to_vec(&whole).unwrap()).unwrap();
        assert_eq!(
            gather(
                &RanksDir::of(partial.path()),
                2,
                0,
                0,
                Duration::from_millis(10)
            )
            .unwrap(),
            [again, whole]
        );
        let late = tempfile::tempdir().unwrap();
        let err = gather(
            &RanksDir::of(late.path()),
            3,
            2,
            2,
            Duration::from_millis(10),
        )
        .unwrap_err();
        assert!(
            matches!(&err, WireupError::NotStarted { missing, .. } if missing == &[0, 1, 2]),
            "{err}"
        );
        assert!(err
            .to_string()
            .starts_with("ranks 0,1,2 did not start within"));
    }

    /// A board that counts the file operations made on it.
    struct Counted(RanksDir, AtomicUsize);

    impl Board for Counted {
        fn create_new(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.create_new(name, bytes)
        }
        fn read(&self, name: &str) -> io::Result<Vec<u8>> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.read(name)
        }
        fn write_once(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.write_once(name, bytes)
        }
        fn path(&self, name: &str) -> PathBuf {
            self.0.path(name)
        }
    }

    /// File operations of a whole rendezvous of `size` ranks: every rank
    /// publishes, the gatherer gathers, then the others.
    fn operations(size: u32) -> usize {
        let dir = tempfile::tempdir().unwrap();
        let board = Counted(RanksDir::of(dir.path()), AtomicUsize::new(0));
        for rank in 0..size {
            let e = Entry {
                rank,
                node: format!("n{}", rank % 7),
                addr: None,
                pid: rank,
                nonce: rank,
            };
            publish(&board, &e).unwrap();
        }
        let gatherer = size - 1;
        let all = gather(&board, size, gatherer, gatherer, Duration::ZERO).unwrap();
        for rank in 0..gatherer {
            assert_eq!(
                gather(&board, size, rank, gatherer, Duration::ZERO).unwrap(),
                all
            );
        }
        board.1.into_inner()
    }

    #[test]
    fn a_rank_that_failed_is_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let board = RanksDir::of(dir.path());
        for rank in [0, 2] {
            let e = Entry {
                rank,
                node: "n".into(),
                addr: None,
                pid: rank,
                nonce: rank,
            };
            publish(&board, &e).unwrap();
        }
        note_failed(&board, 1, "cannot open its file system");
        // The gatherer names it (a wait that ended would be `NotStarted`);
        // the others learn it from the gatherer.
        let wait = Duration::from_secs(600);
        let err = gather(&board, 3, 2, 2, wait).unwrap_err();
        assert!(
            matches!(&err, WireupError::Failed { rank: 1, why } if why == "cannot open its file system"),
            "{err}"
        );
        let err = gather(&board, 3, 0, 2, wait).unwrap_err();
        assert!(matches!(&err, WireupError::Failed { rank: 2, .. }), "{err}");
        assert!(err.to_string().contains("rank 1 failed"), "{err}");
    }

    #[test]
    fn file_operations_grow_linearly_with_the_ranks() {
        // N creates, the gatherer's N reads and one write, one read by
        // each of the N - 1 others: 3N (each rank reading every entry
        // would be N²).
        for size in [2, 16, 256, 1024] {
            assert_eq!(operations(size), 3 * size as usize, "{size} ranks");
        }
    }

    #[test]
    fn ranks_meet_through_the_launchers_pmi_in_pieces() {
        // A small value limit: the gathered list takes many pieces.
        let size = 40;
        let socks = crate::ranks::pmi::tests::serve(size, 100);
        let ranks: Vec<_> = socks
            .into_iter()
            .enumerate()
            .map(|(r, s)| {
                std::thread::spawn(move || {
                    let mut pmi = Pmi::over(s, Duration::from_secs(20)).unwrap();
                    let e = Entry {
                        rank: r as u32,
                        node: format!("host-{}", r % 3),
                        addr: (r >= 38).then(|| SocketAddr::from(([10, 0, 0, 1], 4000 + r as u16))),
                        pid: 100 + r as u32,
                        nonce: r as u32 * 7,
                    };
                    exchange_pmi(&mut pmi, &e, size as u32, 38).unwrap()
                })
            })
            .collect();
        let all: Vec<Vec<Entry>> = ranks.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(all.iter().all(|a| *a == all[0]));
        assert_eq!(all[0].len(), size);
        assert_eq!(all[0][5].node, "host-2");
        assert_eq!(
            all[0][39].addr,
            Some(SocketAddr::from(([10, 0, 0, 1], 4039)))
        );
    }
}
