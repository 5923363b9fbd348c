//! Benchmark workloads. Each prints the machine, then every figure beside a
//! baseline measured in the same run, as a ratio: absolute times on shared
//! VMs drift, ratios much less.

pub mod check;
pub mod disturbed;
pub mod emulated;
pub mod filecopy;
pub mod frozen;
mod fuse_floor;
pub mod html;
pub mod io;
pub mod kills;
pub mod machine;
pub mod mapreduce;
pub mod meta;
pub mod meta_cluster;
pub mod mount;
pub mod node_loss;
pub mod outputs;
pub mod par;
pub mod replicas;
mod report;
pub mod resume;
pub mod runs_index;
pub mod scrub;
pub mod simulate;
pub mod tasks;
pub mod watch;
mod workspace;
