//! How deep calls of composite functions nest: a run whose calls go past
//! its bound (`--max-depth`) fails at the call that would pass it, naming
//! the first calls of the chain (a recursion without a base case shows
//! where it starts), before its state takes the node's memory.

use locus_proto::run::{ErrorKind, RunError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How many calls of a chain an error names.
const SHOWN: usize = 4;

/// The calls that led to a function's activation: how many, and the first
/// ones (the function called, where). Shared by the frames of the
/// activation; travels with work shipped to another server.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Chain {
    depth: u32,
    /// Shared by every deeper chain once full.
    first: Arc<Vec<(String, String)>>,
}

impl Chain {
    /// The chain of a call of `func` at `at` from this one; an error if it
    /// would be deeper than `bound`.
    pub(super) fn deeper(&self, func: &str, at: &str, bound: u32) -> Result<Chain, RunError> {
        let mut first = self.first.clone();
        if first.len() < SHOWN {
            Arc::make_mut(&mut first).push((func.to_string(), at.to_string()));
        }
        let chain = Chain {
            depth: self.depth + 1,
            first,
        };
        if chain.depth > bound {
            return Err(chain.too_deep(bound));
        }
        Ok(chain)
    }

    fn too_deep(&self, bound: u32) -> RunError {
        let calls: Vec<String> = self
            .first
            .iter()
            .map(|(f, at)| format!("'{f}' at {at}"))
            .collect();
        RunError::new(
            ErrorKind::Depth,
            format!(
                "calls nest deeper than {bound} (--max-depth): {}, … (a recursion without a base case calls without end)",
                calls.join(", then ")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_past_its_bound_names_its_first_calls() {
        let mut chain = Chain::default();
        for i in 0..5 {
            chain = chain.deeper("f", &format!("t.swift:{i}:1"), 5).unwrap();
        }
        let e = chain.deeper("f", "t.swift:9:1", 5).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Depth);
        assert!(e.message.starts_with("calls nest deeper than 5 (--max-depth): 'f' at t.swift:0:1, then 'f' at t.swift:1:1, then 'f' at t.swift:2:1, then 'f' at t.swift:3:1, …"), "{}", e.message);
    }
}
