//! Every process Locus starts, started one way: file-system daemons, a
//! run's ranks, benchmark clients, on this machine, on emulated hosts
//! (network namespaces with shaped links and CPU limits) or through a
//! site's launcher (`srun`, `mpiexec`). What a process is to be crosses
//! the process boundary as a typed configuration file (`role`); how the
//! binary is invoked on one is the embedder's (`Program`).

pub mod cgroup;
pub mod daemons;
pub mod emulate;
mod exits;
pub mod netns;
pub mod ranks;
pub mod role;
pub mod site;
pub mod supervise;

pub use daemons::{running_pid, stop, Daemons};
pub use emulate::{Emulation, FsMode, Host, Rate};
pub use ranks::{launch_ranks, On, RankLaunch};
pub use role::{Launched, Program, Role};
pub use site::{deploy, Deploy, Shape, Site, SiteLauncher};
pub use supervise::{ignore_failure_notices, supervise};
