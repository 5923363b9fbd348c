//! Which workers a parallel task's job runs on. A server gathers workers
//! for the most urgent parallel task only (one gathering at a time: two
//! jobs each holding half of the workers they need would wait for each
//! other for ever); the workers it holds meanwhile may run short work of
//! their own that ends before the job could start (backfill), so holding
//! idles them little.

use crate::ranks::cost;
use crate::ranks::layout::Layout;
use locus_proto::run::{Held, Rank};
use std::collections::HashMap;
use std::time::Duration;

/// `n` of the `free` workers for a job whose inputs are `inputs`: on the
/// fewest nodes (those with the most free workers first), among nodes
/// with as many free, the node of its `@location` (`prefer`), then those
/// holding most of its input bytes, then the lowest; the job's ranks are
/// in that order, by rank within a node. `None` when fewer than `n` are
/// free.
pub(crate) fn choose(
    layout: &Layout,
    free: &[Rank],
    n: u32,
    (inputs, prefer): (&[Held], Option<u32>),
) -> Option<Vec<Rank>> {
    if free.len() < n as usize {
        return None;
    }
    let mut by_node: HashMap<u32, Vec<Rank>> = HashMap::new();
    for &w in free {
        by_node.entry(layout.node_of(w)).or_default().push(w);
    }
    let bytes = cost::bytes_per_node(inputs);
    let mut nodes: Vec<(u32, Vec<Rank>)> = by_node.into_iter().collect();
    nodes.sort_by_key(|(node, ws)| {
        let held = bytes.get(node).copied().unwrap_or(0);
        let other = Some(*node) != prefer;
        (
            std::cmp::Reverse(ws.len()),
            other,
            std::cmp::Reverse(held),
            *node,
        )
    });
    let mut chosen = Vec::with_capacity(n as usize);
    for (_, mut ws) in nodes {
        ws.sort_unstable();
        let take = (n as usize - chosen.len()).min(ws.len());
        chosen.extend_from_slice(&ws[..take]);
        if chosen.len() == n as usize {
            break;
        }
    }
    Some(chosen)
}

/// How long until a job needing `more` workers beyond those held could
/// start: the `more`-th soonest time a busy worker is expected to be done
/// (`busy`, one per busy worker). A held worker may take work expected to
/// end by then.
pub(crate) fn until_gathered(mut busy: Vec<Duration>, more: usize) -> Duration {
    if more == 0 {
        return Duration::ZERO;
    }
    busy.sort_unstable();
    busy.get(more - 1).copied().unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let names: Vec<String> = ["a", "a", "b", "b", "b", "c", "c", "s"]
            .iter()
            .map(ToString::to_string)
            .collect();
        Layout::from_names(1, &names).unwrap()
    }

    fn held(bytes: u64, node: u32) -> Held {
        Held {
            bytes,
            nodes: vec![node],
        }
    }

    #[test]
    fn a_job_takes_the_fewest_nodes_and_then_the_nodes_with_its_data() {
        let l = layout();
        let all: Vec<Rank> = (0..7).collect();
        // Node b has three free workers: a job of three fits there alone.
        assert_eq!(choose(&l, &all, 3, (&[], None)), Some(vec![2, 3, 4]));
        // Two: a and c have two each; c holds the inputs.
        let on_c = [held(9, 2)];
        let ac = [0, 1, 5, 6];
        assert_eq!(choose(&l, &ac, 2, (&on_c, None)), Some(vec![5, 6]));
        assert_eq!(choose(&l, &ac, 2, (&[], None)), Some(vec![0, 1]));
        // Its location's node before its inputs'.
        assert_eq!(choose(&l, &ac, 2, (&on_c, Some(0))), Some(vec![0, 1]));
        // Five: b's three, then a or c by their data.
        let on_c = [held(1, 2)];
        assert_eq!(
            choose(&l, &all, 5, (&on_c, None)),
            Some(vec![2, 3, 4, 5, 6])
        );
        assert_eq!(choose(&l, &[0, 2], 3, (&[], None)), None);
    }

    #[test]
    fn a_gathering_job_waits_for_the_soonest_busy_workers() {
        let ms = Duration::from_millis;
        let busy = vec![ms(30), ms(10), ms(20)];
        assert_eq!(until_gathered(busy.clone(), 0), Duration::ZERO);
        assert_eq!(until_gathered(busy.clone(), 2), ms(20));
        assert_eq!(until_gathered(busy, 4), Duration::MAX);
    }
}
