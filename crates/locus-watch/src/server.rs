//! The live page's HTTP server: the page, its updates as server-sent
//! events, the latest update as JSON, and the run's full report once it
//! ended. A poller thread reads the run directory and publishes each
//! update; the server only hands the latest one out, so any number of
//! pages costs the run nothing more.

use crate::live::{Ending, FsNode, Live};
use crate::tail::{stderr_tail, Tail};
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use locus_launch::{hold_run_dir, rank_options, RunHold};
use locus_runtime::record::now_us;
use locus_runtime::{read_tally, RunSummary};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often the run directory is read: a task's end shows on the page
/// within this (and the workers' record flush) of its end.
const POLL: Duration = Duration::from_millis(250);
/// How often the file system's daemons are asked how they stand, and
/// whether a run without a summary still lives.
const SLOW_POLL: Duration = Duration::from_secs(2);
/// The poller's niceness (`nice`), below the run's ranks.
const POLL_NICE: libc::c_int = 10;
/// How long `settle` waits for the run's end to be shown.
const SETTLE: Duration = Duration::from_secs(3);
/// How long a daemon is given to answer.
const FS_TIMEOUT: Duration = Duration::from_secs(1);

/// What to watch and where to serve it.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// The run's directory (`locus run --run-dir`).
    pub run_dir: PathBuf,
    /// Loopback by default; any other address needs the run's token
    /// (`?token=`, printed in the URL).
    pub listen: SocketAddr,
}

/// Why the page could not be served.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The address cannot be listened on (taken, or not this host's).
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The run's secret, which its token is made from, cannot be read or
    /// made.
    #[error("{dir}: no token for a page served beyond loopback: {source}")]
    Token {
        /// The run's directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A thread or runtime of the server could not be started.
    #[error("watch server: {0}")]
    Runtime(std::io::Error),
}

/// A page being served; dropping it stops the server and its poller.
pub struct Watching {
    /// The page's address (with its token when it needs one).
    pub url: String,
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// A view of the ended run was published.
    shown_end: Arc<AtomicBool>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Watching {
    /// Waits (a few seconds at most) until the page was sent the run's end,
    /// for a caller that stops serving when the run ends.
    pub fn settle(&self) {
        let until = Instant::now() + SETTLE;
        while !self.shown_end.load(Ordering::Acquire) && Instant::now() < until {
            std::thread::sleep(POLL / 5);
        }
        // The server's thread writes it to the pages' connections.
        std::thread::sleep(POLL);
    }

    /// Serves until the process is stopped.
    pub fn wait(mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

struct Shared {
    latest: watch::Receiver<Arc<str>>,
    token: Option<String>,
    run_dir: PathBuf,
}

/// The token a page of the run in `run_dir` served beyond loopback asks
/// for: made from the run's secret, which it does not reveal.
pub fn watch_token(run_dir: &Path) -> std::io::Result<String> {
    Ok(locus_fs::shared_secret(run_dir)?.token("locus watch"))
}

/// Starts serving the page of the run in `run_dir` (which may not have
/// begun yet); returns once it listens.
pub fn watch(opts: WatchOptions) -> Result<Watching, WatchError> {
    let token = match opts.listen.ip().is_loopback() {
        true => None,
        false => Some(
            watch_token(&opts.run_dir).map_err(|source| WatchError::Token {
                dir: opts.run_dir.clone(),
                source,
            })?,
        ),
    };
    let listener = std::net::TcpListener::bind(opts.listen)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|source| WatchError::Listen {
            addr: opts.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(WatchError::Runtime)?;
    let (tx, rx) = watch::channel(Arc::<str>::from("{}"));
    let stop = Arc::new(AtomicBool::new(false));
    let shown_end = Arc::new(AtomicBool::new(false));
    let poller = {
        let (run_dir, stop, end) = (opts.run_dir.clone(), stop.clone(), shown_end.clone());
        std::thread::Builder::new()
            .name("watch-poll".into())
            .spawn(move || poll(&run_dir, &tx, &stop, &end))
            .map_err(WatchError::Runtime)?
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(WatchError::Runtime)?;
    let shared = Arc::new(Shared {
        latest: rx,
        token: token.clone(),
        run_dir: opts.run_dir,
    });
    let (shutdown, down) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::Builder::new()
        .name("watch-http".into())
        .spawn(move || {
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let served = axum::serve(listener, router(shared))
                    .with_graceful_shutdown(async {
                        let _ = down.await;
                    })
                    .await;
                if let Err(e) = served {
                    tracing::warn!("watch server: {e}");
                }
            });
        })
        .map_err(WatchError::Runtime)?;
    let url = match &token {
        None => format!("http://{addr}/"),
        Some(t) => format!("http://{addr}/?token={t}"),
    };
    Ok(Watching {
        url,
        addr,
        stop,
        shown_end,
        shutdown: Some(shutdown),
        threads: vec![poller, server],
    })
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/events", get(events))
        .route("/view.json", get(view))
        .route("/report", get(report))
        .layer(middleware::from_fn_with_state(shared.clone(), with_token))
        .with_state(shared)
}

#[derive(serde::Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

/// Refuses a request without the run's token when the page needs one.
async fn with_token(
    State(w): State<Arc<Shared>>,
    Query(q): Query<TokenQuery>,
    req: Request,
    next: Next,
) -> Response {
    let shown = q.token.unwrap_or_default();
    match &w.token {
        Some(t) if !same(t.as_bytes(), shown.as_bytes()) => (
            StatusCode::FORBIDDEN,
            "this page needs the run's token (?token=…)\n",
        )
            .into_response(),
        _ => next.run(req).await,
    }
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |d, (x, y)| d | (x ^ y)) == 0
}

async fn page() -> Html<&'static str> {
    Html(include_str!("page.html"))
}

async fn view(State(w): State<Arc<Shared>>) -> Response {
    let latest = w.latest.borrow().clone();
    ([("content-type", "application/json")], latest.to_string()).into_response()
}

async fn events(
    State(w): State<Arc<Shared>>,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    let mut rx = w.latest.clone();
    rx.mark_changed();
    let updates = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.changed().await.ok()?;
        let latest = rx.borrow_and_update().clone();
        Some((Ok(Event::default().data(&*latest)), rx))
    });
    Sse::new(updates).keep_alive(KeepAlive::default())
}

async fn report(State(w): State<Arc<Shared>>) -> Response {
    use locus_runtime::report::{html, Report};
    let dir = w.run_dir.clone();
    let made = tokio::task::spawn_blocking(move || {
        Report::load(&dir).map(|r| html::run(&dir.display().to_string(), &r))
    })
    .await;
    match made {
        Ok(Ok(page)) => Html(page).into_response(),
        Ok(Err(e)) => (StatusCode::NOT_FOUND, format!("no report yet: {e}\n")).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Reads the run directory until `stop`, publishing each new view.
fn poll(run_dir: &Path, tx: &watch::Sender<Arc<str>>, stop: &AtomicBool, shown_end: &AtomicBool) {
    // Reading a fast run's records takes a fifth of a core at 200,000
    // tasks a second: where the run's ranks share this host, they come
    // first, and the page catches up when they leave it a core.
    // SAFETY: sets this thread's own priority (a Linux thread is a
    // process to setpriority).
    unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, POLL_NICE) };
    let mut live = Live::new(now_us());
    let mut tail = Tail::new(run_dir);
    let mut fs = FsAsker::default();
    let mut slow = Instant::now() - SLOW_POLL;
    let mut last = String::new();
    while !stop.load(Ordering::Acquire) {
        let now = now_us();
        let more = tail.next(|r| {
            let stderr = live
                .wants_stderr(&r)
                .then(|| stderr_tail(run_dir, &r))
                .flatten();
            live.record(&r, stderr, now);
        });
        if let Some(t) = read_tally(run_dir) {
            live.tally(t);
        }
        if !live.has_ended() {
            if let Ok(s) = RunSummary::load(run_dir) {
                live.ended(Ending {
                    end_us: s.end_us,
                    error: s.error,
                });
            }
        }
        if slow.elapsed() >= SLOW_POLL {
            slow = Instant::now();
            if let Some(nodes) = fs.ask(run_dir) {
                live.fs(nodes);
            }
            // Begun (its leader counted), never ended, and nothing holds
            // its directory: its launcher was killed.
            if live.began() && !live.has_ended() {
                if let Ok(RunHold::Ended(_) | RunHold::NotARun) = hold_run_dir(run_dir) {
                    live.stopped();
                }
            }
        }
        live.sample(now);
        let view = live.view(now);
        let json = serde_json::to_string(&view).unwrap_or_default();
        if json != last {
            tx.send_replace(Arc::from(json.as_str()));
            last = json;
        }
        if !view.run.is_live() && !more {
            shown_end.store(true, Ordering::Release);
        }
        if !more {
            std::thread::sleep(POLL);
        }
    }
}

/// Asks the run's file-system daemons how they stand.
#[derive(Default)]
struct FsAsker {
    rt: Option<tokio::runtime::Runtime>,
    client: Option<locus_fs::Client>,
}

impl FsAsker {
    fn ask(&mut self, run_dir: &Path) -> Option<Vec<FsNode>> {
        if self.client.is_none() {
            let fs_dir = rank_options(run_dir).ok()?.fs_dir?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            let scratch = std::env::temp_dir();
            let client = rt.block_on(async {
                locus_fs::Client::on_this_host(&fs_dir, None, scratch, Default::default())
            });
            self.client = Some(client.ok()?);
            self.rt = Some(rt);
        }
        let (rt, client) = (self.rt.as_ref()?, self.client.as_ref()?);
        // All at once: a node cut off costs the page one time-out, not one
        // per node.
        let asks = (0..client.node_count() as u32).map(|id| async move {
            let name = client
                .endpoint(id)
                .map(|e| e.name.clone())
                .unwrap_or_default();
            match tokio::time::timeout(FS_TIMEOUT, client.status(id)).await {
                Ok(Ok(s)) => FsNode {
                    node: id,
                    name,
                    up: true,
                    files: s.stored_files,
                    bytes: s.stored_bytes,
                    free: s.free_bytes,
                    error: s.meta_error,
                },
                Ok(Err(e)) => FsNode::down(id, name, e.to_string()),
                Err(_) => FsNode::down(id, name, format!("no answer in {FS_TIMEOUT:?}")),
            }
        });
        Some(rt.block_on(futures_util::future::join_all(asks)))
    }
}

impl FsNode {
    fn down(node: u32, name: String, why: String) -> FsNode {
        FsNode {
            node,
            name,
            up: false,
            files: 0,
            bytes: 0,
            free: 0,
            error: Some(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use tower::ServiceExt;

    fn shared(token: Option<&str>) -> Arc<Shared> {
        let (_tx, rx) = watch::channel(Arc::<str>::from(r#"{"done":3}"#));
        Arc::new(Shared {
            latest: rx,
            token: token.map(String::from),
            run_dir: PathBuf::from("/nonexistent"),
        })
    }

    async fn get(app: Router, uri: &str) -> (StatusCode, String) {
        let req = Request::builder().uri(uri).body(Body::empty()).unwrap();
        let res = app.oneshot(req).await.unwrap();
        let status = res.status();
        let body = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn the_page_and_its_latest_view_are_served() {
        let app = router(shared(None));
        let (status, page) = get(app.clone(), "/").await;
        assert_eq!(status, StatusCode::OK);
        assert!(page.contains("EventSource") && !page.contains("<script src"));
        assert_eq!(get(app.clone(), "/view.json").await.1, r#"{"done":3}"#);
        assert_eq!(get(app, "/report").await.0, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn beyond_loopback_every_request_needs_the_token() {
        let app = router(shared(Some("abc")));
        for uri in [
            "/",
            "/view.json",
            "/events",
            "/report",
            "/?token=abd",
            "/?token=ab",
        ] {
            assert_eq!(
                get(app.clone(), uri).await.0,
                StatusCode::FORBIDDEN,
                "{uri}"
            );
        }
        assert_eq!(
            get(app.clone(), "/view.json?token=abc").await.0,
            StatusCode::OK
        );
    }

    #[test]
    fn a_token_is_made_from_the_secret_and_differs_per_run() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let t = watch_token(a.path()).unwrap();
        assert_eq!(t, watch_token(a.path()).unwrap());
        assert_ne!(t, watch_token(b.path()).unwrap());
        let secret = std::fs::read_to_string(a.path().join("secret")).unwrap();
        assert!(!secret.contains(&t) && !t.contains(secret.trim()));
    }
}
