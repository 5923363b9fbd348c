//! Futures: single-assignment slots that tasks wait on. Scalars close when
//! set; containers (arrays, structs) gather members and close when their
//! writers are done. Waiters register before checking, so no wake-up is lost.
//! Each server's engine keeps the futures it created; a future's id names
//! its owner (`owner`), so any server knows whom to ask about it.

use crate::engine::ids;
use crate::engine::value::{Key, Value};
use locus_proto::run::RunError;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

pub(crate) type FutureId = u64;

/// The index of the server whose engine keeps future `id`.
pub(crate) fn owner(id: FutureId) -> u32 {
    ids::server_of(id)
}

/// One future. A run makes several per statement it runs, most of them
/// scalars, and keeps them all: what only containers and files need is
/// kept apart (`More`), so a scalar costs 56 bytes, not 120.
#[derive(Default)]
struct Slot {
    value: Option<Value>,
    /// Made when a task first waits on the slot.
    notify: Option<Arc<Notify>>,
    more: Option<Box<More>>,
    container: bool,
    closed: bool,
}

#[derive(Default)]
struct More {
    /// A container's members so far.
    members: BTreeMap<Key, Value>,
    /// Members that are inner containers made by writes into them
    /// (`A[i][j] = v`): complete only when this container closes.
    nested: BTreeSet<Key>,
    /// The path a file future's data goes to, once known.
    path: Option<String>,
}

impl Slot {
    fn wake(&self) {
        if let Some(n) = &self.notify {
            n.notify_waiters();
        }
    }

    fn more(&mut self) -> &mut More {
        self.more.get_or_insert_with(Box::default)
    }

    fn member(&self, key: &Key) -> Option<&Value> {
        self.more.as_ref()?.members.get(key)
    }

    fn is_nested(&self, key: &Key) -> bool {
        self.more.as_ref().is_some_and(|m| m.nested.contains(key))
    }
}

/// Slots per chunk of the store.
const CHUNK: usize = 1 << 16;

/// One server's futures; below the owner bits, ids are indexes handed out
/// in order. Kept in chunks of `CHUNK` made as needed: one vector would
/// copy them all each time it doubled, and hold up to twice their room.
pub(crate) struct Store {
    owner: u32,
    chunks: Mutex<Vec<Vec<Slot>>>,
}

impl Store {
    pub(crate) fn new(owner: u32) -> Store {
        Store {
            owner,
            chunks: Mutex::default(),
        }
    }

    pub(crate) fn is_local(&self, id: FutureId) -> bool {
        owner(id) == self.owner
    }

    pub(crate) fn create(&self, container: bool) -> FutureId {
        let mut chunks = self.chunks.lock().expect("store");
        if chunks.last().is_none_or(|c| c.len() == CHUNK) {
            chunks.push(Vec::with_capacity(CHUNK));
        }
        let full = (chunks.len() - 1) * CHUNK;
        let last = chunks.last_mut().expect("a chunk with room");
        last.push(Slot {
            container,
            ..Slot::default()
        });
        ids::tagged(self.owner, (full + last.len() - 1) as u64)
    }

    fn with<T>(&self, id: FutureId, f: impl FnOnce(&mut Slot) -> T) -> T {
        let n = ids::number(id) as usize;
        let mut chunks = self.chunks.lock().expect("store");
        f(&mut chunks[n / CHUNK][n % CHUNK])
    }

    /// Closes `id` with `v`: a scalar is set, a container gets `v`'s
    /// members and closes.
    pub(crate) fn assign(&self, id: FutureId, v: Value) -> Result<(), RunError> {
        if !self.is_container(id) {
            return self.set(id, v);
        }
        let Value::Container(m) = v else {
            return Err(RunError::script(format!(
                "an array was given {}",
                v.render()
            )));
        };
        for (k, v) in m {
            self.insert(id, &[k], v)?;
        }
        self.close(id);
        Ok(())
    }

    /// Closes scalar `id` with `v`; a second assignment is an error.
    pub(crate) fn set(&self, id: FutureId, v: Value) -> Result<(), RunError> {
        self.with(id, |s| {
            if s.value.is_some() {
                return Err("a variable was assigned twice".to_string());
            }
            s.value = Some(v);
            s.closed = true;
            s.wake();
            Ok(())
        })
        .map_err(RunError::script)
    }

    pub(crate) fn set_path(&self, id: FutureId, path: String) {
        self.with(id, |s| {
            s.more().path = Some(path);
            s.wake();
        });
    }

    /// Adds the member at `path` to container `id`: `[k]` is a member of
    /// its own, `[i, j, …]` a member of inner containers made on the way.
    pub(crate) fn insert(&self, id: FutureId, path: &[Key], v: Value) -> Result<(), RunError> {
        let shown = || path.iter().map(|k| format!("[{k}]")).collect::<String>();
        self.with(id, |s| {
            if s.closed {
                return Err(format!(
                    "an element {} was added to a closed array",
                    shown()
                ));
            }
            let Some((first, inner)) = path.split_first() else {
                return Err("an element without an index".into());
            };
            let both = || format!("element [{first}] was assigned whole and written into");
            let more = s.more();
            if inner.is_empty() {
                if more.nested.contains(first) {
                    return Err(both());
                }
                if more.members.contains_key(first) {
                    return Err(format!("element {} was assigned twice", shown()));
                }
                more.members.insert(first.clone(), v);
            } else {
                if more.members.contains_key(first) && !more.nested.contains(first) {
                    return Err(both());
                }
                more.nested.insert(first.clone());
                let mut slot = more
                    .members
                    .entry(first.clone())
                    .or_insert_with(|| Value::Container(BTreeMap::new()));
                for (n, k) in inner.iter().enumerate() {
                    let Value::Container(m) = slot else {
                        return Err(format!("element {} is not a container", shown()));
                    };
                    if n + 1 == inner.len() {
                        if m.contains_key(k) {
                            return Err(format!("element {} was assigned twice", shown()));
                        }
                        m.insert(k.clone(), v);
                        break;
                    }
                    slot = m
                        .entry(k.clone())
                        .or_insert_with(|| Value::Container(BTreeMap::new()));
                }
            }
            s.wake();
            Ok(())
        })
        .map_err(RunError::script)
    }

    /// Changes updateable `id` (its value is member 0) by `op` with `v`;
    /// waiters on member 0 see it changed.
    pub(crate) fn update(
        &self,
        id: FutureId,
        op: locus_lang::ir::UpdateOp,
        v: Value,
    ) -> Result<(), RunError> {
        let Value::Float(v) = v else {
            return Err(RunError::script(format!(
                "<{}> := {}: not a float",
                op.name(),
                v.render()
            )));
        };
        self.with(id, |s| {
            if s.closed {
                return Err(format!(
                    "an updateable_float was changed (<{}>) after it was final",
                    op.name()
                ));
            }
            match s.more().members.get_mut(&Key::Int(0)) {
                Some(Value::Float(x)) => *x = op.apply(*x, v),
                _ => return Err("an updateable_float was changed before its first value".into()),
            }
            s.wake();
            Ok(())
        })
        .map_err(RunError::script)
    }

    /// Closes container `id` (no more members); idempotent.
    pub(crate) fn close(&self, id: FutureId) {
        self.with(id, |s| {
            if s.container && !s.closed {
                s.closed = true;
                let members = s.more.as_mut().map(|m| std::mem::take(&mut m.members));
                s.value = Some(Value::Container(members.unwrap_or_default()));
                s.wake();
            }
        });
    }

    pub(crate) fn is_container(&self, id: FutureId) -> bool {
        self.with(id, |s| s.container)
    }

    pub(crate) fn is_closed(&self, id: FutureId) -> bool {
        self.with(id, |s| s.closed)
    }

    /// Waits until `check` on the slot gives an answer.
    async fn wait<T>(&self, id: FutureId, check: impl Fn(&Slot) -> Option<T>) -> T {
        loop {
            let notify = self.with(id, |s| match check(s) {
                Some(v) => Err(v),
                None => Ok(s.notify.get_or_insert_with(Arc::default).clone()),
            });
            let notify = match notify {
                Ok(n) => n,
                Err(v) => return v,
            };
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(v) = self.with(id, |s| check(s)) {
                return v;
            }
            notified.await;
        }
    }

    /// The value of `id` if it is closed.
    pub(crate) fn try_get(&self, id: FutureId) -> Option<Value> {
        self.with(id, |s| s.value.clone())
    }

    /// The value of `id` once closed.
    pub(crate) async fn get(&self, id: FutureId) -> Value {
        self.wait(id, |s| s.value.clone()).await
    }

    /// Member `key` of container `id` once present; `None` if the container
    /// closed without it.
    /// An inner container made by writes into it is present once this one
    /// closes.
    pub(crate) async fn member(&self, id: FutureId, key: &Key) -> Option<Value> {
        self.wait(id, |s| match &s.value {
            Some(Value::Container(m)) => Some(m.get(key).cloned()),
            _ if s.is_nested(key) => None,
            _ => s.member(key).map(|v| Some(v.clone())),
        })
        .await
    }

    /// The element at `keys` in container `id` (members of members) as
    /// soon as it is set, even while the containers are still being
    /// written; `None` if `id` closed without it.
    pub(crate) async fn member_path(&self, id: FutureId, keys: &[Key]) -> Option<Value> {
        let (first, rest) = keys.split_first()?;
        self.wait(id, |s| match &s.value {
            Some(Value::Container(m)) => Some(m.get(first).and_then(|v| walk(v, rest))),
            _ => s.member(first).and_then(|v| walk(v, rest)).map(Some),
        })
        .await
    }

    pub(crate) async fn path(&self, id: FutureId) -> String {
        self.wait(id, |s| s.more.as_ref()?.path.clone()).await
    }
}

/// The member of `v` at `keys`, if there.
pub(crate) fn walk(v: &Value, keys: &[Key]) -> Option<Value> {
    let mut v = v;
    for k in keys {
        match v {
            Value::Container(m) => v = m.get(k)?,
            _ => return None,
        }
    }
    Some(v.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_their_slots_across_chunks() {
        let store = Store::new(3);
        let ids: Vec<FutureId> = (0..CHUNK as i64 + 10)
            .map(|i| {
                let f = store.create(false);
                store.set(f, Value::Int(i)).unwrap();
                f
            })
            .collect();
        for (i, f) in ids.iter().enumerate() {
            assert_eq!(owner(*f), 3);
            assert_eq!(store.try_get(*f), Some(Value::Int(i as i64)));
        }
    }

    #[test]
    fn a_scalar_future_is_small() {
        assert!(
            std::mem::size_of::<Slot>() <= 56,
            "{}",
            std::mem::size_of::<Slot>()
        );
    }

    #[test]
    fn members_and_paths_are_kept_apart_and_still_read() {
        let store = Store::new(0);
        let (a, f) = (store.create(true), store.create(false));
        store.insert(a, &[Key::Int(1)], Value::Int(10)).unwrap();
        store
            .insert(a, &[Key::Int(2), Key::Int(3)], Value::Int(23))
            .unwrap();
        assert!(store.insert(a, &[Key::Int(1)], Value::Int(11)).is_err());
        store.set_path(f, "/locus/x".into());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            assert_eq!(store.member(a, &Key::Int(1)).await, Some(Value::Int(10)));
            let inner = [Key::Int(2), Key::Int(3)];
            assert_eq!(store.member_path(a, &inner).await, Some(Value::Int(23)));
            assert_eq!(store.path(f).await, "/locus/x");
            store.close(a);
            let Value::Container(m) = store.get(a).await else {
                panic!("not a container")
            };
            assert_eq!(m.len(), 2);
            assert_eq!(store.member(a, &Key::Int(9)).await, None);
        });
    }
}
