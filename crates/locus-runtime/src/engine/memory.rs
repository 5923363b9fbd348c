//! The memory budget of a server rank: what the script's state (its
//! futures, kept for the whole run) may take of the node. A run whose
//! server passes it fails with one error naming what made most futures (a
//! loop, or a function called again and again, as a recursion without a
//! base case is) before the allocator aborts or the node's OOM killer picks
//! a victim. Futures are counted per block as blocks run: one atomic add
//! per block, not per future.

use super::plan::{BlockId, Site};
use super::*;

/// How often a server looks at its resident memory.
const EVERY: Duration = Duration::from_millis(200);

/// Futures made by the runs of each block, by block id.
pub(super) struct Made(Vec<AtomicU64>);

impl Made {
    pub(super) fn new(blocks: usize) -> Made {
        Made((0..blocks).map(|_| AtomicU64::new(0)).collect())
    }

    pub(super) fn add(&self, block: &Block) {
        self.0[block.id as usize].fetch_add(block.decls, Ordering::Relaxed);
    }
}

impl Engine {
    /// Resolves, with the run's error, once this rank's resident memory
    /// passes `budget`; never without one.
    pub(super) async fn over_budget(&self, budget: Option<u64>) -> RunError {
        let Some(budget) = budget else {
            return std::future::pending().await;
        };
        let rss = past(budget).await;
        self.memory_error(rss, budget)
    }

    /// The error of a run whose server uses `rss` bytes, over `budget`.
    fn memory_error(&self, rss: u64, budget: u64) -> RunError {
        let mut by_site: Vec<(Site, u64)> = Vec::new();
        for (id, made) in self.made.0.iter().enumerate() {
            let n = made.load(Ordering::Relaxed);
            let Some(block) = self.plans.block(id as BlockId).filter(|_| n > 0) else {
                continue;
            };
            match by_site.iter_mut().find(|(s, _)| *s == block.site) {
                Some((_, total)) => *total += n,
                None => by_site.push((block.site.clone(), n)),
            }
        }
        let grew = match by_site.into_iter().max_by_key(|(_, n)| *n) {
            Some((Site::Loop(at), n)) => {
                format!("{}: this loop made {n} values, all kept while the run goes", self.place(&at))
            }
            Some((Site::Function(f), n)) if f == "main" => {
                format!("the script's top level made {n} values")
            }
            Some((Site::Function(f), n)) => format!(
                "calls of '{f}' made {n} values (a recursion without a base case calls it without end)"
            ),
            None => "no statement of the script".into(),
        };
        RunError::new(
            ErrorKind::Memory,
            format!(
                "server rank {} uses {} of memory, over its budget of {} (--max-memory): {grew}",
                self.opts.first_server + self.opts.server,
                mib(rss),
                mib(budget)
            ),
        )
    }
}

/// Resolves, with this process's resident memory, once it passes `budget`.
pub(crate) async fn past(budget: u64) -> u64 {
    loop {
        tokio::time::sleep(EVERY).await;
        if let Some(rss) = resident_bytes().filter(|rss| *rss > budget) {
            return rss;
        }
    }
}

pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// This process's resident memory (`/proc/self/statm`).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// A server's default budget: half of what this node may use (its memory,
/// or the limit of the cgroup this runs in, as Slurm sets), shared by the
/// run's servers on it.
pub(crate) fn default_budget(servers_here: u32) -> Option<u64> {
    Some(node_memory()? / 2 / u64::from(servers_here.max(1)))
}

/// A worker's default budget: a quarter of what this node may use, shared
/// by the run's workers on it (their apps, processes of their own, use the
/// rest). A worker's own memory holds the values its tasks give back
/// (`system`'s output, an interpreter's answer) and what it is sent.
pub(crate) fn worker_budget(workers_here: u32) -> Option<u64> {
    Some(node_memory()? / 4 / u64::from(workers_here.max(1)))
}

/// What this node may use: its memory, or less if the cgroup this runs
/// in says so.
fn node_memory() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib << 10)
        })?;
    Some(cgroup_limit().map_or(total, |c| c.min(total)))
}

/// The memory limit of the cgroup this process runs in, if it sets one:
/// v2's `memory.max` (`max` when unlimited), or v1's memory controller's
/// `memory.limit_in_bytes` (as Slurm sites with cgroup v1 set it).
fn cgroup_limit() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    groups.lines().find_map(|line| {
        let (_, rest) = line.split_once(':')?;
        let (controllers, path) = rest.split_once(':')?;
        let path = path.trim_end_matches('/');
        let file = match controllers {
            "" => format!("/sys/fs/cgroup{path}/memory.max"),
            c if c.split(',').any(|c| c == "memory") => {
                format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
            }
            _ => return None,
        };
        std::fs::read_to_string(file).ok()?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_budgets_are_shares_of_the_node_for_servers_and_workers() {
        let one = default_budget(1).expect("this machine's memory");
        let four = default_budget(4).expect("this machine's memory");
        assert_eq!(four, one / 4);
        assert!(one > 0 && resident_bytes().is_some_and(|rss| rss < one * 2));
        // Workers share a quarter: their apps use the rest.
        let worker = worker_budget(1).expect("this machine's memory");
        assert_eq!(worker, one / 2);
        assert_eq!(worker_budget(8), Some(worker / 8));
    }
}
