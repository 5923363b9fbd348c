//! Whether a daemon may act for another (apply writes to keys it owns).
//! A pure state machine, time passed in.
//!
//! Clients send a write to a replica when they could not reach the owner —
//! which may be dead, or alive and slow to answer them. A write the replica
//! applied for an owner that is alive would never reach the owner, so the
//! replica acts only once it found the owner unreachable itself, and then
//! until the owner announces its return. A restarted owner takes its keys
//! back from the replica before it serves; a write the replica accepted
//! after that copy would be lost, so from the announcement (`Returning`)
//! until the owner serves, the replica refuses writes to its keys.

use locus_proto::fs::NodeId;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a return announced and not followed by `serving` fences the
/// owner's keys: longer than a take-back takes; an owner that died during
/// its return is then asked whether it is there.
pub(crate) const RETURN_BOUND: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Found unreachable: acted for until it announces its return.
    Lost,
    /// Taking its keys back, until the given time at most.
    Returning(Instant),
}

/// What to do with a write to keys of an owner this daemon is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// The owner was found unreachable: act for it.
    Apply,
    /// The owner is taking its keys back: the client tries again (`EAGAIN`).
    Refuse,
    /// Act for the owner only if it cannot be reached now.
    AskOwner,
}

#[derive(Debug, Default)]
pub(crate) struct Fences {
    owners: HashMap<NodeId, State>,
}

impl Fences {
    /// `owner` announced it is coming back (`serving: false`) or serves.
    pub(crate) fn announced(&mut self, owner: NodeId, serving: bool, now: Instant) {
        match serving {
            false => self
                .owners
                .insert(owner, State::Returning(now + RETURN_BOUND)),
            true => self.owners.remove(&owner),
        };
    }

    pub(crate) fn admit(&self, owner: NodeId, now: Instant) -> Admit {
        match self.owners.get(&owner) {
            Some(State::Lost) => Admit::Apply,
            Some(State::Returning(until)) if now < *until => Admit::Refuse,
            _ => Admit::AskOwner,
        }
    }

    /// `owner` could not be reached: act for it until it announces a return
    /// (one announced meanwhile stands).
    pub(crate) fn lost(&mut self, owner: NodeId, now: Instant) {
        if self.admit(owner, now) == Admit::AskOwner {
            self.owners.insert(owner, State::Lost);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_acts_for_an_owner_it_found_lost_until_the_owner_returns() {
        let mut f = Fences::default();
        let t0 = Instant::now();
        assert_eq!(f.admit(3, t0), Admit::AskOwner, "never found lost");
        f.lost(3, t0);
        assert_eq!(f.admit(3, t0), Admit::Apply);
        assert_eq!(f.admit(2, t0), Admit::AskOwner, "other owners unaffected");
        f.announced(3, false, t0);
        assert_eq!(f.admit(3, t0 + Duration::from_secs(1)), Admit::Refuse);
        f.lost(3, t0);
        assert_eq!(f.admit(3, t0), Admit::Refuse, "a return stands");
        assert_eq!(
            f.admit(3, t0 + RETURN_BOUND),
            Admit::AskOwner,
            "died returning"
        );
        f.announced(3, false, t0);
        f.announced(3, true, t0);
        assert_eq!(f.admit(3, t0), Admit::AskOwner);
    }
}
