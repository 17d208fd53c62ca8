//! Heavy mediation leaves the event loop. A message whose body in memory is at least
//! [`OffloadOptions::above`] bytes, or whose run holds a script ([`Work::heavy`]), is mediated on a
//! blocking thread, at most
//! [`OffloadOptions::threads`] at once across the process; the event loop meanwhile serves its other
//! connections. Such a run has a deadline counted from when it was handed over (waiting for a thread
//! included): past it the client is answered with a fault, and the run is told to stop, which the
//! executor heeds between mediators (a libxml2 or libxslt call already under way runs to its end,
//! still holding its thread, so the number of such threads stays bounded). A client that goes away
//! stops its run the same way.

use sluice_mediation::{exec, Continuation, Error, ErrorKind, Flow, Message, SeqPlan};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

#[derive(Clone, Debug)]
pub struct OffloadOptions {
    /// Messages whose body in memory has at least this many bytes are mediated off the event loop.
    pub above: usize,
    /// How many such runs go at once, process-wide (each on its own blocking thread).
    pub threads: usize,
    /// How long such a run may take, from when it is handed over.
    pub deadline: Duration,
}

impl Default for OffloadOptions {
    fn default() -> Self {
        OffloadOptions {
            above: 128 * 1024,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            deadline: Duration::from_secs(5),
        }
    }
}

/// The process-wide pool of mediation threads: one per process, shared by every worker's engine.
#[derive(Clone, Debug)]
pub struct Offload {
    opts: OffloadOptions,
    permits: Arc<Semaphore>,
}

impl Offload {
    pub fn new(opts: OffloadOptions) -> Self {
        let permits = Arc::new(Semaphore::new(opts.threads.max(1)));
        Offload { opts, permits }
    }

    pub fn options(&self) -> &OffloadOptions {
        &self.opts
    }

    /// Whether `msg` is mediated off the event loop.
    pub fn wants(&self, msg: &Message) -> bool {
        matches!(&msg.body, sluice_mediation::Body::Bytes(b) if b.len() >= self.opts.above)
    }

    /// Runs `work` on `msg` on a blocking thread. On its deadline (or a failure of the thread), `msg`
    /// is left as an empty message of the same SOAP version and the error says why.
    pub async fn run(&self, msg: &mut Message, work: OwnedWork) -> Result<Flow, Error> {
        let stop = Arc::new(AtomicBool::new(false));
        // Stops the run when this future is dropped before it ends (the client went away) or when
        // the deadline passes.
        let _stop_on_drop = StopOnDrop(stop.clone());
        let soap = msg.soap;
        let mut taken = std::mem::replace(msg, placeholder(msg));
        taken.stop = Some(stop.clone());
        let done = self
            .blocking("mediation of a large message", move || {
                let r = work.run(&mut taken);
                taken.stop = None;
                // A large run's trees are gone: their memory goes back now, not when the thread
                // next allocates (it may idle until it exits).
                sluice_xml::release_free_memory();
                (taken, r)
            })
            .await;
        match done {
            Ok((back, r)) => {
                *msg = back;
                r
            }
            Err(e) => {
                msg.soap = soap;
                Err(e)
            }
        }
    }
}

impl Offload {
    /// Runs `work` on a blocking thread of the pool, within the deadline from now (the wait for a
    /// thread included), `what` naming it in the error: a large message's mediation
    /// ([`Offload::run`]), WS-Security's checks and signing.
    pub async fn blocking<T: Send + 'static>(
        &self,
        what: &str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Error> {
        let deadline = tokio::time::Instant::now() + self.opts.deadline;
        let late = || {
            Error::new(
                ErrorKind::Stopped,
                format!(
                    "{what} ran past its deadline of {} ms",
                    self.opts.deadline.as_millis()
                ),
            )
        };
        let permit =
            match tokio::time::timeout_at(deadline, self.permits.clone().acquire_owned()).await {
                Ok(Ok(p)) => p,
                Ok(Err(_)) => return Err(Error::new(ErrorKind::Internal, "mediation pool closed")),
                Err(_) => return Err(late()),
            };
        let job = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work()
        });
        match tokio::time::timeout_at(deadline, job).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                Err(Error::new(ErrorKind::Internal, format!("{what} failed")).with_source(e))
            }
            Err(_) => Err(late()),
        }
    }
}

/// [`Offload::run`], in a span of its own when tracing is on.
pub async fn traced(offload: &Offload, msg: &mut Message, work: OwnedWork) -> Result<Flow, Error> {
    let Some(t) = crate::otel::enabled() else {
        return offload.run(msg, work).await;
    };
    let name = match &work {
        OwnedWork::Seq(s) => s.name.as_deref().unwrap_or(unnamed(msg)).to_owned(),
        OwnedWork::Resume(_) => unnamed(msg).to_owned(),
    };
    let mut span = t.span(
        msg.trace.as_deref(),
        &format!("{name} (off the event loop)"),
    );
    let r = offload.run(msg, work).await;
    opentelemetry::trace::Span::end(&mut span);
    r
}

/// What a trace calls an anonymous sequence run on `msg`.
fn unnamed(msg: &Message) -> &'static str {
    match msg.direction {
        sluice_mediation::message::Direction::Request => "inSequence",
        sluice_mediation::message::Direction::Response => "outSequence",
    }
}

/// An empty stand-in for a message handed to a mediation thread, with what a fault needs.
fn placeholder(msg: &Message) -> Message {
    let mut m = Message::request(
        msg.service.clone(),
        msg.method.clone(),
        String::new(),
        http::HeaderMap::new(),
    );
    m.direction = msg.direction;
    m.soap = msg.soap;
    m.body = sluice_mediation::Body::Empty;
    m
}

struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What a run does: a sequence from its start, or the rest after a `call`.
pub enum Work<'a> {
    Seq(&'a Arc<SeqPlan>),
    Resume(Continuation),
}

/// [`Work`] that can move to another thread.
pub enum OwnedWork {
    Seq(Arc<SeqPlan>),
    Resume(Continuation),
}

impl<'a> Work<'a> {
    /// What a trace calls the run on `msg`: the sequence's name, else `inSequence` or
    /// `outSequence` by the message's direction.
    pub fn name(&self, msg: &Message) -> &'a str {
        match self {
            Work::Seq(s) => s.name.as_deref().unwrap_or(unnamed(msg)),
            Work::Resume(_) => unnamed(msg),
        }
    }

    pub fn run(self, msg: &mut Message) -> Result<Flow, Error> {
        match self {
            Work::Seq(s) => exec::run_seq(s, msg),
            Work::Resume(k) => exec::resume(k, msg),
        }
    }

    /// Whether the run leaves the event loop whatever the message's size (it holds a script).
    pub fn heavy(&self) -> bool {
        match self {
            Work::Seq(s) => s.heavy,
            Work::Resume(k) => k.heavy(),
        }
    }

    pub fn owned(self) -> OwnedWork {
        match self {
            Work::Seq(s) => OwnedWork::Seq(s.clone()),
            Work::Resume(k) => OwnedWork::Resume(k),
        }
    }
}

impl OwnedWork {
    fn run(self, msg: &mut Message) -> Result<Flow, Error> {
        match self {
            OwnedWork::Seq(s) => Work::Seq(&s).run(msg),
            OwnedWork::Resume(k) => Work::Resume(k).run(msg),
        }
    }
}
