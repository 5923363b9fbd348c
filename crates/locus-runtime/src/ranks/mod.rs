//! The ranks of a run and what passes between them: a rank finds the
//! others (`rendezvous`, `pmi`, `layout`), then serves (`server`, its
//! queues in `balancer`, its estimates in `cost`) or works (`worker`);
//! they talk over `wire`.

pub(crate) mod balancer;
#[cfg(test)]
mod balancer_sim;
pub(crate) mod cost;
pub(crate) mod layout;
pub(crate) mod pmi;
pub(crate) mod rank;
pub(crate) mod rendezvous;
pub(crate) mod reserve;
pub(crate) mod server;
pub(crate) mod wire;
pub(crate) mod worker;
