//! Whether a daemon may act for another (apply writes to keys it owns) while
//! that owner comes back. A pure state machine, time passed in.
//!
//! Clients send a write to a replica only when they could not reach the
//! owner. A restarted owner takes its keys back from the replica before it
//! serves; a write the replica accepted after that copy would be lost. So
//! the owner announces its return first (`Returning`): the replica then
//! refuses writes to its keys until the owner serves, and afterwards acts
//! for it again only once it found the owner unreachable itself.

use locus_proto::fs::NodeId;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a return announced and not followed by `serving` fences the
/// owner's keys: longer than a take-back takes; an owner that died during
/// its return is then asked whether it is there.
pub const RETURN_BOUND: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Taking its keys back, until the given time at most.
    Returning(Instant),
    /// Serving again: clients that reach it write there.
    Back,
}

/// What to do with a write to keys of an owner this daemon is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// The owner was lost and did not announce a return: act for it.
    Apply,
    /// The owner is taking its keys back: the client tries again (`EAGAIN`).
    Refuse,
    /// The owner came back: act for it only if it cannot be reached now.
    AskOwner,
}

#[derive(Debug, Default)]
pub struct Fences {
    owners: HashMap<NodeId, State>,
}

impl Fences {
    /// `owner` announced it is coming back (`serving: false`) or serves.
    pub fn announced(&mut self, owner: NodeId, serving: bool, now: Instant) {
        let state = match serving {
            false => State::Returning(now + RETURN_BOUND),
            true => State::Back,
        };
        self.owners.insert(owner, state);
    }

    pub fn admit(&self, owner: NodeId, now: Instant) -> Admit {
        match self.owners.get(&owner) {
            None => Admit::Apply,
            Some(State::Returning(until)) if now < *until => Admit::Refuse,
            Some(_) => Admit::AskOwner,
        }
    }

    /// `owner` could not be reached: act for it until it announces a return.
    pub fn lost(&mut self, owner: NodeId) {
        self.owners.remove(&owner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returning_owner_is_fenced_until_it_serves_or_its_bound_ends() {
        let mut f = Fences::default();
        let t0 = Instant::now();
        assert_eq!(f.admit(3, t0), Admit::Apply, "lost, never returned");
        f.announced(3, false, t0);
        assert_eq!(f.admit(3, t0 + Duration::from_secs(1)), Admit::Refuse);
        assert_eq!(f.admit(2, t0), Admit::Apply, "other owners unaffected");
        assert_eq!(f.admit(3, t0 + RETURN_BOUND), Admit::AskOwner);
        f.announced(3, false, t0);
        f.announced(3, true, t0);
        assert_eq!(f.admit(3, t0), Admit::AskOwner);
        f.lost(3);
        assert_eq!(f.admit(3, t0), Admit::Apply);
    }
}
