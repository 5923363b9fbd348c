//! What the namespace may hold: every state some order of the operations
//! seen so far allows. A step's operations ran at once; the order chosen
//! must keep what real time says (an operation that answered before
//! another began comes first), and it must explain every answer: what a
//! read returned, what a listing held, which definite error came back.
//! An operation whose daemon could not be reached may have happened in
//! part or not at all, so any prefix of its effects counts. When no order
//! explains a step, the file system broke a promise.

use crate::ops::{head, Binding, Bytes, Op, Seen};
use locus_proto::Errno;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// The possible states this many at most; past it the workload is too
/// uncertain to judge (a harness limit, reported as such).
const MAX_STATES: usize = 512;

/// One operation of a step, with what it returned and when it ran.
#[derive(Debug, Clone)]
pub(crate) struct Done {
    pub op: Op,
    pub seen: Seen,
    pub start: Duration,
    pub end: Duration,
}

/// A file's contents, interned.
type Id = u32;
/// Every file's contents by path (directories are fixed).
type Namespace = BTreeMap<String, Id>;

pub(crate) struct Model {
    states: Vec<Namespace>,
    contents: Contents,
}

/// Every content the model has met, by id (appends make new ones while
/// orders are explored).
#[derive(Default)]
struct Contents {
    bytes: RefCell<Vec<Bytes>>,
    ids: RefCell<HashMap<Bytes, Id>>,
}

/// The empty file's id (interned first).
const EMPTY: Id = 0;
/// A name listed without a record (interned second, as bytes no write
/// makes: every write starts with its tag).
const NAMELESS: Id = 1;
const NAMELESS_BYTES: &[u8] = b"\0nameless";
/// An empty record without a name: a create whose record's daemon died
/// after applying it, its name then taken back (interned third). Not
/// listed; read by its path as an empty file; the next create of the name
/// replaces it.
const UNNAMED: Id = 2;
const UNNAMED_BYTES: &[u8] = b"\0unnamed";

impl Contents {
    fn intern(&self, b: &[u8]) -> Id {
        if let Some(id) = self.ids.borrow().get(b) {
            return *id;
        }
        let mut bytes = self.bytes.borrow_mut();
        let id = bytes.len() as Id;
        let b: Bytes = b.into();
        bytes.push(b.clone());
        self.ids.borrow_mut().insert(b, id);
        id
    }

    fn get(&self, id: Id) -> Bytes {
        self.bytes.borrow()[id as usize].clone()
    }
}

/// Why a step could not be judged or was judged wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No order of the operations explains their answers.
    NoOrder,
    /// More possible states than the model follows.
    TooUncertain(usize),
}

/// One effect (or check) of an operation, taken at one point of the order.
#[derive(Debug, Clone)]
enum Event {
    /// `create`'s name: new, empty.
    NewName(String),
    /// `put` of a new name may show it empty before its bytes.
    MaybeEmpty(String),
    Set(String, Id),
    Append(String, Id),
    /// A rename's decided step: the target names the source's bytes.
    Link(String, String),
    /// An unlink, and a rename's last step: the name goes.
    Remove(String),
    /// The first step of a removal where two daemons keep the entry and the
    /// record: the record goes, the name stays (left so when a daemon
    /// crashed then; documented).
    RemoveRecord(String),
    /// `RemoveRecord`, or nothing yet: a removal that goes on to remove
    /// the name.
    MayRemoveRecordFirst(String),
    /// An unlink's `ENOENT`: there is no name.
    IsUnnamed(String),
    IsAbsent(String),
    IsPresent(String),
    Reads(String, Id),
    Lists(String, Vec<String>),
    /// A failed create, put or rename may leave its (target) name listed
    /// without a record, or an empty record without its name (its daemons
    /// crashed, or an answer was lost, between the two steps; documented).
    MaybeLeftover(String),
    /// A failed create or put takes back the name it claimed (leaving the
    /// empty record it may have made): operations running beside it may
    /// have seen the name meanwhile (documented).
    MaybeTakenBack(String),
    IsNameless(String),
    /// A rename's `ENOENT`: no source, or a target left without a record.
    RenameRefused(String, String),
    /// An answer this operation never gives.
    Never,
}

/// `made`, preceded for an operation whose outcome is unknown by the name it
/// may have left without a record, and may have taken back.
fn unknown_may_leave_nameless(unknown: bool, path: &str, made: [Event; 2]) -> Vec<Event> {
    let leftover = unknown.then(|| {
        let p = path.to_string();
        [Event::MaybeLeftover(p.clone()), Event::MaybeTakenBack(p)]
    });
    leftover.into_iter().flatten().chain(made).collect()
}

/// A removal's two steps: for an operation whose outcome is unknown it may
/// stop between them; for one that answered, operations beside it may see
/// the name without its record in between (where two daemons keep them).
fn may_stop_halfway(unknown: bool, [record, name]: [Event; 2]) -> Vec<Event> {
    match (unknown, record) {
        (true, record) => vec![record, name],
        (false, Event::RemoveRecord(p)) => vec![Event::MayRemoveRecordFirst(p), name],
        (false, _) => vec![name],
    }
}

/// An operation's effects in order; one that may have stopped anywhere
/// (`partial`) counts with any prefix done.
struct Effects {
    events: Vec<Event>,
    partial: bool,
    /// Operations that must be done before this one's first effect.
    after: Vec<usize>,
}

impl Model {
    pub(crate) fn new() -> Model {
        let contents = Contents::default();
        contents.intern(b"");
        contents.intern(NAMELESS_BYTES);
        contents.intern(UNNAMED_BYTES);
        Model {
            states: vec![Namespace::new()],
            contents,
        }
    }

    /// How many states the operations so far allow.
    pub(crate) fn uncertainty(&self) -> usize {
        self.states.len()
    }

    /// Takes in one step's operations: the states they may have left.
    pub(crate) fn step(&mut self, done: &[Done]) -> Result<(), Verdict> {
        let mut effects: Vec<Effects> = done.iter().map(|d| self.effects(d)).collect();
        for (b, e) in effects.iter_mut().enumerate() {
            e.after = done
                .iter()
                .enumerate()
                .filter(|(a, d)| {
                    *a != b && d.end < done[b].start && d.seen.binding() != Binding::Unknown
                })
                .map(|(a, _)| a)
                .collect();
        }
        let mut out = HashSet::new();
        let mut seen = HashSet::new();
        for ns in &self.states {
            let pos = vec![0usize; effects.len()];
            self.explore(ns.clone(), pos, &effects, &mut seen, &mut out);
            if out.len() > MAX_STATES {
                return Err(Verdict::TooUncertain(out.len()));
            }
        }
        if out.is_empty() {
            return Err(Verdict::NoOrder);
        }
        let mut states: Vec<Namespace> = out.into_iter().collect();
        states.sort();
        self.states = states;
        Ok(())
    }

    /// What a path may hold now, described: `absent`, `nameless`, or the
    /// start of its bytes.
    pub(crate) fn possible(&self, path: &str) -> Vec<String> {
        let mut ids: Vec<Option<Id>> = self.states.iter().map(|ns| ns.get(path).copied()).collect();
        ids.sort();
        ids.dedup();
        ids.into_iter()
            .map(|id| match id {
                None => "absent".into(),
                Some(NAMELESS) => "nameless".into(),
                Some(UNNAMED) => "unnamed".into(),
                Some(id) => head(&self.contents.get(id)),
            })
            .collect()
    }

    fn intern(&self, b: &[u8]) -> Id {
        self.contents.intern(b)
    }

    fn effects(&self, d: &Done) -> Effects {
        use Event::*;
        let binding = d.seen.binding();
        let unknown = binding == Binding::Unknown;
        let done = d.seen == Seen::Done || unknown;
        let events = match (&d.op, &d.seen) {
            _ if binding == Binding::Refused => vec![],
            (Op::Get { .. } | Op::List { .. }, _) if unknown => vec![],
            (Op::Create { path, .. }, Seen::Failed(Errno::EEXIST)) => vec![IsPresent(path.clone())],
            (Op::Create { path, data }, _) if done => {
                let made = [NewName(path.clone()), Set(path.clone(), self.intern(data))];
                unknown_may_leave_nameless(unknown, path, made)
            }
            (Op::Put { path, data }, _) if done => {
                let made = [
                    MaybeEmpty(path.clone()),
                    Set(path.clone(), self.intern(data)),
                ];
                unknown_may_leave_nameless(unknown, path, made)
            }
            (Op::Put { path, .. }, Seen::Failed(Errno::ENOENT)) => vec![IsNameless(path.clone())],
            (Op::Append { path, .. } | Op::Get { path }, Seen::Failed(Errno::ENOENT)) => {
                vec![IsAbsent(path.clone())]
            }
            (Op::Unlink { path }, Seen::Failed(Errno::ENOENT)) => vec![IsUnnamed(path.clone())],
            (Op::Append { path, data }, _) if done => vec![Append(path.clone(), self.intern(data))],
            (Op::Rename { from, to }, Seen::Failed(Errno::ENOENT)) => {
                vec![RenameRefused(from.clone(), to.clone())]
            }
            (Op::Rename { from, to }, _) if done => {
                // Its target is made as a create's name is (the documented
                // leftovers too), then takes the source's record.
                let link = Link(from.clone(), to.clone());
                let removed = [RemoveRecord(from.clone()), Remove(from.clone())];
                let leftover =
                    unknown.then(|| [MaybeLeftover(to.clone()), MaybeTakenBack(to.clone())]);
                leftover
                    .into_iter()
                    .flatten()
                    .chain(std::iter::once(link))
                    .chain(may_stop_halfway(unknown, removed))
                    .collect()
            }
            (Op::Unlink { path }, _) if done => {
                may_stop_halfway(unknown, [RemoveRecord(path.clone()), Remove(path.clone())])
            }
            (Op::Get { path }, Seen::Read(b)) => vec![Reads(path.clone(), self.intern(b))],
            (Op::List { dir }, Seen::Listed(names)) => vec![Lists(dir.clone(), names.clone())],
            // An answer this operation never gives.
            _ => vec![Never],
        };
        Effects {
            events,
            partial: unknown,
            after: vec![],
        }
    }

    fn explore(
        &self,
        ns: Namespace,
        pos: Vec<usize>,
        effects: &[Effects],
        seen: &mut HashSet<(Vec<usize>, Namespace)>,
        out: &mut HashSet<Namespace>,
    ) {
        if !seen.insert((pos.clone(), ns.clone())) || out.len() > MAX_STATES {
            return;
        }
        let complete = |i: usize, pos: &[usize]| pos[i] == effects[i].events.len();
        if (0..effects.len()).all(|i| complete(i, &pos) || effects[i].partial) {
            out.insert(ns.clone());
        }
        for (i, e) in effects.iter().enumerate() {
            if complete(i, &pos) || (pos[i] == 0 && !e.after.iter().all(|a| complete(*a, &pos))) {
                continue;
            }
            for next in self.apply(&ns, &e.events[pos[i]]) {
                let mut p = pos.clone();
                p[i] += 1;
                self.explore(next, p, effects, seen, out);
            }
        }
    }

    /// The states `ev` may lead to from `ns` (none: it cannot happen there).
    fn apply(&self, ns: &Namespace, ev: &Event) -> Vec<Namespace> {
        let with = |f: &dyn Fn(&mut Namespace)| {
            let mut n = ns.clone();
            f(&mut n);
            vec![n]
        };
        let written = |p: &String| {
            ns.get(p)
                .is_some_and(|id| ![NAMELESS, UNNAMED].contains(id))
        };
        let nameless = |p: &String| ns.get(p) == Some(&NAMELESS);
        let listed = |p: &String| ns.get(p).is_some_and(|id| *id != UNNAMED);
        // `ns`, or `p` showing one of `ids` instead.
        let showing = |p: &String, ids: &[Id]| {
            let mut all = vec![ns.clone()];
            all.extend(ids.iter().map(|id| {
                let mut n = ns.clone();
                n.insert(p.clone(), *id);
                n
            }));
            all
        };
        match ev {
            // A create may take a name a failed operation left without a
            // record (documented).
            Event::NewName(p) if !listed(p) || nameless(p) => with(&|n| {
                n.insert(p.clone(), EMPTY);
            }),
            Event::MaybeEmpty(p) if !listed(p) => showing(p, &[EMPTY]),
            Event::MaybeLeftover(p) if !listed(p) => showing(p, &[NAMELESS, UNNAMED]),
            Event::MaybeTakenBack(p) if nameless(p) => {
                let mut gone = ns.clone();
                gone.remove(p);
                let mut all = showing(p, &[UNNAMED]);
                all.push(gone);
                all
            }
            Event::MaybeEmpty(_) | Event::MaybeLeftover(_) | Event::MaybeTakenBack(_) => {
                vec![ns.clone()]
            }
            Event::Set(p, id) => with(&|n| {
                n.insert(p.clone(), *id);
            }),
            Event::Append(p, id) if written(p) => {
                let joined = [self.contents.get(ns[p]), self.contents.get(*id)].concat();
                let j = self.intern(&joined);
                with(&|n| {
                    n.insert(p.clone(), j);
                })
            }
            Event::Link(from, to) if written(from) => {
                let id = ns[from];
                with(&|n| {
                    n.insert(to.clone(), id);
                })
            }
            // An empty record without a name is read by its path as an
            // empty file, and renamed by it as one (documented).
            Event::Link(from, to) if ns.get(from) == Some(&UNNAMED) => with(&|n| {
                n.insert(to.clone(), EMPTY);
            }),
            Event::RemoveRecord(p) if written(p) => with(&|n| {
                n.insert(p.clone(), NAMELESS);
            }),
            // A name left without its record: a removal takes the name
            // alone (an unlink's answer lost after it did: seed 2243).
            Event::RemoveRecord(p) if nameless(p) => vec![ns.clone()],
            Event::MayRemoveRecordFirst(p) if written(p) => showing(p, &[NAMELESS]),
            Event::MayRemoveRecordFirst(_) => vec![ns.clone()],
            Event::Remove(p) if ns.contains_key(p) => with(&|n| {
                n.remove(p);
            }),
            Event::IsPresent(p) if listed(p) => vec![ns.clone()],
            Event::IsAbsent(p) if !written(p) => vec![ns.clone()],
            Event::IsUnnamed(p) if !listed(p) => vec![ns.clone()],
            Event::IsNameless(p) if nameless(p) => vec![ns.clone()],
            Event::RenameRefused(from, to) if !written(from) || nameless(to) => vec![ns.clone()],
            Event::Reads(p, id) if ns.get(p) == Some(id) => vec![ns.clone()],
            Event::Reads(p, EMPTY) if ns.get(p) == Some(&UNNAMED) => vec![ns.clone()],
            Event::Lists(dir, names) if listing(ns, dir) == *names => vec![ns.clone()],
            _ => vec![],
        }
    }
}

/// The names in `dir`, in byte order.
fn listing(ns: &Namespace, dir: &str) -> Vec<String> {
    let prefix = format!("{dir}/");
    ns.iter()
        .filter(|(_, id)| **id != UNNAMED)
        .filter_map(|(p, _)| p.strip_prefix(&prefix))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Op, Seen};

    /// One operation alone in its step, at time `t` (ms).
    fn alone(model: &mut Model, t: u64, op: Op, seen: Seen) -> Result<(), Verdict> {
        let at = Duration::from_millis(t);
        let done = Done {
            op,
            seen,
            start: at,
            end: at + Duration::from_millis(1),
        };
        model.step(&[done])
    }

    #[test]
    fn an_unlink_of_a_name_left_without_its_record_may_take_the_name_though_its_answer_was_lost() {
        let (path, dir) = (|| "/d/f".to_string(), || "/d".to_string());
        let lost = || Seen::Unreachable(Errno::EIO);
        let mut m = Model::new();
        let put = Op::Put {
            path: path(),
            data: b"x".as_slice().into(),
        };
        alone(&mut m, 0, put, Seen::Done).unwrap();
        // An unlink stopped between its steps: the name without its record.
        alone(&mut m, 10, Op::Unlink { path: path() }, lost()).unwrap();
        alone(
            &mut m,
            20,
            Op::Get { path: path() },
            Seen::Failed(Errno::ENOENT),
        )
        .unwrap();
        alone(
            &mut m,
            30,
            Op::List { dir: dir() },
            Seen::Listed(vec!["f".into()]),
        )
        .unwrap();
        // Another, whose answer was lost, removed the name.
        alone(&mut m, 40, Op::Unlink { path: path() }, lost()).unwrap();
        alone(&mut m, 50, Op::List { dir: dir() }, Seen::Listed(vec![])).unwrap();
    }
}
