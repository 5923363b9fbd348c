//! Ids made by a server (task ids, future ids) and maps keyed by them. An
//! id carries the index of the server that made it above `SERVER_SHIFT`,
//! so any rank knows whom it belongs to. Below that, ids are distinct
//! integers from one counter, so a multiplicative hash spreads them well
//! without SipHash's cost, which shows at tens of thousands of tasks per
//! second.

use std::collections::HashMap;

const SERVER_SHIFT: u32 = 40;

/// Id number `n` of server `server`.
pub(crate) fn tagged(server: u32, n: u64) -> u64 {
    (u64::from(server) << SERVER_SHIFT) | n
}

/// The index of the server that made `id`.
pub(crate) fn server_of(id: u64) -> u32 {
    (id >> SERVER_SHIFT) as u32
}

/// `id`'s number among its server's ids.
pub(crate) fn number(id: u64) -> u64 {
    id & ((1 << SERVER_SHIFT) - 1)
}
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

const K: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(K);
    }
}

pub(crate) type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;
