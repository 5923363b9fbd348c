//! What a server learns as a run goes, and the estimates a spill is decided
//! by: how long each function's tasks take (from their outcomes) and how
//! fast bytes move from node to node (from the fetches tasks made). Pure:
//! times are passed in.

use locus_proto::run::Held;
use std::collections::HashMap;
use std::time::Duration;

/// Bytes/s assumed between two nodes before the run has fetched anything
/// between any (1 Gbit/s Ethernet, the slowest link a cluster has).
pub(crate) const DEFAULT_RATE: f64 = 125e6;
/// A function whose runs so far averaged less than this is short.
const SHORT_TASK: Duration = Duration::from_millis(1);
/// Runs of a function seen before it can count as short.
const SHORT_AFTER: u64 = 4;

#[derive(Default, Clone, Copy)]
struct Total {
    n: u64,
    sum: f64,
}

/// Bytes and seconds of the fetches seen, whose ratio is the rate.
#[derive(Default, Clone, Copy)]
struct Moved {
    bytes: f64,
    secs: f64,
}

impl Moved {
    fn add(&mut self, bytes: u64, took: Duration) {
        self.bytes += bytes as f64;
        // A fetch faster than the clock's grain still took some time.
        self.secs += took.as_secs_f64().max(1e-6);
    }

    fn rate(&self) -> Option<f64> {
        (self.bytes > 0.0).then(|| self.bytes / self.secs)
    }
}

#[derive(Default)]
pub(crate) struct Costs {
    durations: HashMap<String, Total>,
    /// Per (from, to) node pair, and over all pairs.
    pairs: HashMap<(u32, u32), Moved>,
    all: Moved,
}

impl Costs {
    pub(crate) fn new() -> Costs {
        Costs::default()
    }

    /// A task of `func` ran for `took`.
    pub(crate) fn ran(&mut self, func: &str, took: Duration) {
        let t = match self.durations.get_mut(func) {
            Some(t) => t,
            None => self.durations.entry(func.to_string()).or_default(),
        };
        t.n += 1;
        t.sum += took.as_secs_f64();
    }

    /// A task on node `to` fetched `bytes` held on node `from` in `took`.
    pub(crate) fn fetched(&mut self, from: u32, to: u32, bytes: u64, took: Duration) {
        self.pairs.entry((from, to)).or_default().add(bytes, took);
        self.all.add(bytes, took);
    }

    /// How many tasks of `func` finished, and their mean duration.
    pub(crate) fn runs(&self, func: &str) -> (u64, Option<Duration>) {
        match self.durations.get(func) {
            Some(t) if t.n > 0 => (t.n, Some(Duration::from_secs_f64(t.sum / t.n as f64))),
            _ => (0, None),
        }
    }

    /// The mean duration of the function whose tasks are the shortest, of
    /// those with a task finished.
    pub(crate) fn shortest(&self) -> Option<Duration> {
        (self.durations.values())
            .filter(|t| t.n > 0)
            .map(|t| Duration::from_secs_f64(t.sum / t.n as f64))
            .min()
    }

    /// Whether `func`'s tasks are known to be short (a server may queue
    /// many of them at one worker).
    pub(crate) fn is_short(&self, func: &str) -> bool {
        match self.runs(func) {
            (n, Some(mean)) => n >= SHORT_AFTER && mean < SHORT_TASK,
            _ => false,
        }
    }

    /// The expected time left of a task of `func` that has run `elapsed`:
    /// its function's mean less `elapsed`; while no task of the function
    /// has finished, as long again as it has run (it is at least that long).
    pub(crate) fn left(&self, func: &str, elapsed: Duration) -> Duration {
        match self.runs(func).1 {
            Some(mean) => mean.saturating_sub(elapsed),
            None => elapsed,
        }
    }

    /// Bytes/s from `from` to `to`: measured between them, else over all
    /// the fetches seen, else `DEFAULT_RATE`.
    pub(crate) fn rate(&self, from: u32, to: u32) -> f64 {
        self.pairs
            .get(&(from, to))
            .and_then(Moved::rate)
            .or_else(|| self.all.rate())
            .unwrap_or(DEFAULT_RATE)
    }

    /// The time to bring the bytes of `inputs` not held on `to` there, each
    /// from its fastest holder.
    pub(crate) fn fetch_time(&self, inputs: &[Held], to: u32) -> Duration {
        let secs: f64 = inputs
            .iter()
            .filter(|h| !h.nodes.is_empty() && !h.nodes.contains(&to))
            .map(|h| {
                let best = h
                    .nodes
                    .iter()
                    .map(|&from| self.rate(from, to))
                    .fold(0.0, f64::max);
                h.bytes as f64 / best
            })
            .sum();
        Duration::from_secs_f64(secs)
    }
}

/// The node a task on `to` fetches most of its missing bytes from: where
/// what it learns of a fetch is counted.
pub(crate) fn source(inputs: &[Held], to: u32) -> Option<u32> {
    inputs
        .iter()
        .filter(|h| !h.nodes.contains(&to))
        .max_by_key(|h| h.bytes)
        .and_then(|h| h.nodes.first().copied())
}

/// Input bytes held per node, for the nodes holding any.
pub(crate) fn bytes_per_node(inputs: &[Held]) -> HashMap<u32, u64> {
    let mut per = HashMap::new();
    for h in inputs {
        for &n in &h.nodes {
            // An empty file still counts for where it is.
            *per.entry(n).or_default() += h.bytes.max(1);
        }
    }
    per
}

/// The nodes holding the most input bytes (ties all listed, lowest first).
pub(crate) fn heaviest(inputs: &[Held]) -> Vec<u32> {
    let per = bytes_per_node(inputs);
    let Some(&max) = per.values().max() else {
        return Vec::new();
    };
    let mut best: Vec<u32> = per
        .into_iter()
        .filter(|(_, b)| *b == max)
        .map(|(n, _)| n)
        .collect();
    best.sort_unstable();
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(bytes: u64, nodes: &[u32]) -> Held {
        Held {
            bytes,
            nodes: nodes.to_vec(),
        }
    }

    #[test]
    fn durations_are_learned_per_function() {
        let mut c = Costs::new();
        assert_eq!(c.runs("map"), (0, None));
        // Unknown: as long again as it ran.
        assert_eq!(
            c.left("map", Duration::from_secs(2)),
            Duration::from_secs(2)
        );
        c.ran("map", Duration::from_secs(1));
        c.ran("map", Duration::from_secs(3));
        assert_eq!(c.runs("map"), (2, Some(Duration::from_secs(2))));
        assert_eq!(
            c.left("map", Duration::from_millis(500)),
            Duration::from_millis(1500)
        );
        assert_eq!(c.left("map", Duration::from_secs(5)), Duration::ZERO);
        assert_eq!(c.runs("reduce").1, None);
    }

    #[test]
    fn rates_come_from_the_pair_then_all_pairs_then_the_default() {
        let mut c = Costs::new();
        assert_eq!(c.rate(0, 1), DEFAULT_RATE);
        c.fetched(0, 1, 100_000_000, Duration::from_secs(1));
        c.fetched(0, 1, 100_000_000, Duration::from_secs(3));
        assert_eq!(c.rate(0, 1), 50e6);
        // No fetch 2 → 1 yet: all pairs' rate.
        assert_eq!(c.rate(2, 1), 50e6);
        c.fetched(2, 1, 10_000_000, Duration::from_secs(1));
        assert_eq!(c.rate(2, 1), 10e6);
    }

    #[test]
    fn fetch_time_counts_only_missing_bytes_from_the_fastest_holder() {
        let mut c = Costs::new();
        c.fetched(0, 2, 100_000_000, Duration::from_secs(1)); // 100 MB/s
        c.fetched(1, 2, 100_000_000, Duration::from_secs(4)); // 25 MB/s
        let inputs = [
            held(50_000_000, &[0, 1]),
            held(7, &[2]),
            held(25_000_000, &[1]),
        ];
        assert_eq!(c.fetch_time(&inputs, 2), Duration::from_millis(1500));
        assert_eq!(c.fetch_time(&inputs[1..2], 2), Duration::ZERO);
        assert_eq!(source(&inputs, 2), Some(0));
        assert_eq!(source(&inputs[1..2], 2), None);
    }

    #[test]
    fn heaviest_lists_ties() {
        let inputs = [held(10, &[3]), held(10, &[1]), held(4, &[2]), held(0, &[2])];
        assert_eq!(heaviest(&inputs), vec![1, 3]);
        assert_eq!(heaviest(&[]), Vec::<u32>::new());
        assert_eq!(heaviest(&[held(0, &[5])]), vec![5]);
    }
}
