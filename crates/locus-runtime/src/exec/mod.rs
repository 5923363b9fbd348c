//! Running a task's program: an app's process (`process`, started as
//! `spawn` starts it), the interpreters of `python()` and `R()`
//! (`interp`), a worker's view of the file system (`files`, `mount`).

pub(crate) mod apps;
pub(crate) mod files;
pub(crate) mod interp;
pub(crate) mod job;
pub(crate) mod mount;
pub(crate) mod process;
pub(crate) mod programs;
pub(crate) mod spawn;
