//! The operations a simulated workload is made of, drawn from a seeded
//! generator over a small namespace (so that they meet), and what each
//! returned.

use locus_proto::Errno;
use rand::seq::SliceRandom;
use rand::Rng;
use std::fmt;
use std::sync::Arc;

/// The directories every workload starts with.
pub(crate) const DIRS: [&str; 2] = ["/d0", "/d1"];
/// Names per directory.
const NAMES: usize = 3;

pub(crate) type Bytes = Arc<[u8]>;

#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// `create`, a write, `close`.
    Create {
        path: String,
        data: Bytes,
    },
    /// `put`: create or replace, whole.
    Put {
        path: String,
        data: Bytes,
    },
    /// `open_write` keeping the contents, a write at their end, `close`.
    Append {
        path: String,
        data: Bytes,
    },
    Rename {
        from: String,
        to: String,
    },
    Unlink {
        path: String,
    },
    Get {
        path: String,
    },
    List {
        dir: String,
    },
}

/// What an operation returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    Done,
    Read(Vec<u8>),
    Listed(Vec<String>),
    Failed(Errno),
    /// Failed naming a daemon it could not reach (a miss whose owner is
    /// down, too): it may or may not have happened.
    Unreachable(Errno),
}

/// How far an answer binds the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    /// It happened, or (for a definite error) it was refused, at one point.
    Definite,
    /// Refused for a writer in its way: nothing happened.
    Refused,
    /// A daemon could not be reached or gave up: it may or may not have
    /// happened.
    Unknown,
}

impl Seen {
    pub(crate) fn binding(&self) -> Binding {
        match self {
            Seen::Failed(Errno::EBUSY) => Binding::Refused,
            Seen::Failed(Errno::ENOENT | Errno::EEXIST) => Binding::Definite,
            Seen::Failed(_) | Seen::Unreachable(_) => Binding::Unknown,
            _ => Binding::Definite,
        }
    }
}

impl Op {
    /// Every path the operation reads or changes.
    pub(crate) fn paths(&self) -> Vec<&str> {
        match self {
            Op::Rename { from, to } => vec![from, to],
            Op::Create { path, .. }
            | Op::Put { path, .. }
            | Op::Append { path, .. }
            | Op::Unlink { path }
            | Op::Get { path } => vec![path],
            Op::List { dir } => vec![dir],
        }
    }

    /// Draws one operation; `tag` makes the bytes it writes its own.
    pub(crate) fn draw(rng: &mut impl Rng, tag: &str) -> Op {
        let path = |rng: &mut _| any_path(rng);
        match rng.gen_range(0..100) {
            0..=14 => Op::Create {
                path: path(rng),
                data: data(rng, tag),
            },
            15..=29 => Op::Put {
                path: path(rng),
                data: data(rng, tag),
            },
            30..=39 => Op::Append {
                path: path(rng),
                data: data(rng, tag),
            },
            40..=54 => {
                let from = path(rng);
                let mut to = path(rng);
                while to == from {
                    to = path(rng);
                }
                Op::Rename { from, to }
            }
            55..=64 => Op::Unlink { path: path(rng) },
            65..=89 => Op::Get { path: path(rng) },
            _ => Op::List {
                dir: DIRS.choose(rng).expect("dirs").to_string(),
            },
        }
    }
}

/// Every file name a workload uses.
pub(crate) fn all_paths() -> Vec<String> {
    DIRS.iter()
        .flat_map(|d| (0..NAMES).map(move |n| format!("{d}/f{n}")))
        .collect()
}

fn any_path(rng: &mut impl Rng) -> String {
    let d = DIRS.choose(rng).expect("dirs");
    format!("{d}/f{}", rng.gen_range(0..NAMES))
}

/// Bytes no other write makes: the tag, then filler of a drawn length
/// (sometimes more than a chunk's worth of a small file, sometimes none).
fn data(rng: &mut impl Rng, tag: &str) -> Bytes {
    let len = match rng.gen_range(0..10) {
        0 => 0,
        1 => rng.gen_range(64 << 10..256 << 10),
        _ => rng.gen_range(1..2048),
    };
    let mut bytes = format!("<{tag}>").into_bytes();
    bytes.extend((0..len).map(|i| b'a' + (i % 26) as u8));
    bytes.into()
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = |d: &Bytes| format!("{} bytes \"{}\"", d.len(), head(d));
        match self {
            Op::Create { path, data } => write!(f, "create {path} ({})", short(data)),
            Op::Put { path, data } => write!(f, "put {path} ({})", short(data)),
            Op::Append { path, data } => write!(f, "append {path} ({})", short(data)),
            Op::Rename { from, to } => write!(f, "rename {from} {to}"),
            Op::Unlink { path } => write!(f, "unlink {path}"),
            Op::Get { path } => write!(f, "get {path}"),
            Op::List { dir } => write!(f, "ls {dir}"),
        }
    }
}

impl fmt::Display for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seen::Done => write!(f, "ok"),
            Seen::Read(b) => write!(f, "{} bytes \"{}\"", b.len(), head(b)),
            Seen::Listed(names) => write!(f, "[{}]", names.join(" ")),
            Seen::Failed(e) => write!(f, "{e:?}"),
            Seen::Unreachable(e) => write!(f, "{e:?} (a daemon unreachable)"),
        }
    }
}

/// The start of `bytes`, which holds the tag of the write that made it.
pub(crate) fn head(bytes: &[u8]) -> String {
    let end = bytes.len().min(24);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
