//! A cluster for the tests, its daemons inside the test process.

// Each test binary uses its own part of it.
#![allow(dead_code)]

use locus_fs::{Calling, Client, ClientOptions, Durability, Endpoint, Transport};
use locus_proto::fs::{NodeId, Request};
use locus_sim::{InProcess, Shape};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// An in-process cluster in a directory of its own, removed with it.
pub(crate) struct Cluster {
    pub(crate) c: InProcess,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// `nodes` daemons, one copy of everything.
    pub(crate) fn up(nodes: u32) -> Cluster {
        Cluster::with(nodes, 1)
    }

    /// `nodes` daemons keeping `replicas` copies.
    pub(crate) fn with(nodes: u32, replicas: u32) -> Cluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let shape = Shape {
            nodes,
            replicas,
            durability: Durability::Group,
        };
        let c = InProcess::start(dir.path(), shape).expect("in-process cluster");
        Cluster { c, _dir: dir }
    }

    pub(crate) fn client(&self, node: u32) -> Client {
        self.client_with(ClientOptions {
            node,
            ..ClientOptions::default()
        })
    }

    /// A client of `node` that fetches over TCP even from holders on this
    /// host.
    pub(crate) fn tcp_client(&self, node: u32) -> Client {
        self.client_with(ClientOptions {
            node,
            same_host_copy: false,
            ..ClientOptions::default()
        })
    }

    pub(crate) fn client_with(&self, opts: ClientOptions) -> Client {
        self.c.client(opts).expect("client")
    }

    pub(crate) fn node_dir(&self, node: u32) -> PathBuf {
        let spec = self.c.spec().expect("cluster file");
        spec.nodes[node as usize].dir.clone()
    }

    /// Where node `node` stores copy `stamp` of `path`.
    pub(crate) fn stored(&self, node: u32, path: &str, stamp: u64) -> PathBuf {
        locus_fs::Store::open(&self.node_dir(node))
            .expect("node store")
            .data_path(path, stamp)
    }
}

pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Waits up to 5 s for `cond` (for effects a daemon applies after answering).
pub(crate) fn eventually(what: &str, cond: impl Fn() -> bool) {
    let end = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < end {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("never happened within 5 s: {what}");
}

pub(crate) async fn names(client: &Client, dir: &str) -> Vec<String> {
    let entries = client.readdir(dir).await.unwrap();
    entries.into_iter().map(|e| e.name).collect()
}

/// Which requests a gate picks.
pub(crate) type Pick = Box<dyn Fn(&Request) -> bool + Send + Sync>;

/// A transport that holds back the requests `hold` picks until a request
/// `opens` picks is sent (by any client over a gate sharing `open`),
/// telling `held` when it holds one.
pub(crate) struct Gate {
    pub(crate) inner: Arc<dyn Transport>,
    pub(crate) hold: Pick,
    pub(crate) opens: Pick,
    pub(crate) held: Arc<Notify>,
    pub(crate) open: Arc<Notify>,
}

impl Transport for Gate {
    fn call(&self, node: NodeId, req: Request) -> Calling<'_> {
        let hold = (self.hold)(&req);
        if (self.opens)(&req) {
            self.open.notify_one();
        }
        Box::pin(async move {
            if hold {
                self.held.notify_one();
                self.open.notified().await;
            }
            self.inner.call(node, req).await
        })
    }

    fn endpoint(&self, node: NodeId) -> Option<&Endpoint> {
        self.inner.endpoint(node)
    }

    fn nodes(&self) -> usize {
        self.inner.nodes()
    }
}
