//! What a run leaves: one record per task (`record`), what a resumed run
//! can skip (`resume`), and the report read from them (`report`).

pub mod record;
pub mod report;
pub(crate) mod resume;
