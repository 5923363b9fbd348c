//! How a worker runs an app's program: a process started with the rank's
//! environment (`process::Launcher`), or, for a run inside a test, whatever
//! the test gives in its place.

use crate::exec::process::{self, Ended, Launcher, Stream};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::time::Duration;

/// An app's program running, to its end.
pub(crate) type Running<'a> = Pin<Box<dyn Future<Output = io::Result<Ended>> + Send + 'a>>;

/// Runs an app's command line.
pub(crate) trait Apps: Send + Sync {
    /// Runs `argv` with `streams` as its stdin, stdout and stderr, for at
    /// most `timeout`; `alone` when nothing else waits on this thread.
    fn run<'a>(
        &'a self,
        argv: &'a [String],
        streams: [Stream; 3],
        timeout: Option<Duration>,
        alone: bool,
    ) -> Running<'a>;
}

impl Apps for Launcher {
    fn run<'a>(
        &'a self,
        argv: &'a [String],
        streams: [Stream; 3],
        timeout: Option<Duration>,
        alone: bool,
    ) -> Running<'a> {
        Box::pin(process::run(self, argv, streams, timeout, alone))
    }
}
