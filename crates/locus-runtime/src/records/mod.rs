//! What a run leaves: one record per task (`record`), what a resumed run
//! can skip (`resume`), the report read from them (`report`), and the
//! leader's counts while it goes (`progress`).

pub(crate) mod plan;
pub(crate) mod progress;
pub mod record;
pub mod report;
pub(crate) mod resume;
