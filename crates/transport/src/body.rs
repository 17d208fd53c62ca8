//! The one body type Sluice sends, both ways: nothing, bytes made in memory, or another message's stream
//! relayed frame by frame (bounded by hyper's buffers, never collected).

use crate::client::BackendBody;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use sluice_mediation::error::BoxError;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::time::Sleep;

/// Last time a relayed stream made progress, for idle timeouts that must not fire while a large body is
/// still moving, and whether it has ended (a timeout after that is the receiver's, not the sender's).
#[derive(Debug)]
pub struct Activity {
    origin: Instant,
    last_nanos: AtomicU64,
    ended: AtomicBool,
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Activity {
            origin: Instant::now(),
            last_nanos: AtomicU64::new(0),
            ended: AtomicBool::new(false),
        })
    }
    /// Whether the whole stream went through.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::Relaxed)
    }
    pub fn touch(&self) {
        self.last_nanos
            .store(self.origin.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
    pub fn last(&self) -> Instant {
        self.origin + Duration::from_nanos(self.last_nanos.load(Ordering::Relaxed))
    }
}

/// Fails a stream that makes no progress for `limit`. The timer is only made when the stream first has
/// to wait, so a body that is ready at once costs no timer.
pub struct IdleTimeout {
    limit: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    /// Whether the timer counts from the current wait (reset after every frame).
    armed: bool,
    what: Arc<str>,
}

impl IdleTimeout {
    pub fn new(limit: Duration, what: Arc<str>) -> Self {
        IdleTimeout {
            limit,
            sleep: None,
            armed: false,
            what,
        }
    }
}

#[derive(Debug)]
pub struct StalledError(pub String);

impl std::fmt::Display for StalledError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for StalledError {}

/// A body arriving from one side: a client's request or a back-end's response.
pub enum Inbound {
    Client(Incoming),
    Backend(BackendBody),
}

impl Body for Inbound {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            Inbound::Client(b) => Pin::new(b)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(Into::into))),
            Inbound::Backend(b) => Pin::new(b).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Inbound::Client(b) => b.is_end_stream(),
            Inbound::Backend(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Inbound::Client(b) => b.size_hint(),
            Inbound::Backend(b) => b.size_hint(),
        }
    }
}

pub struct Stream {
    /// Bytes already read from `inner`, sent first.
    head: Option<Bytes>,
    inner: Inbound,
    idle: Option<IdleTimeout>,
    activity: Option<Arc<Activity>>,
}

pub enum RelayBody {
    Empty,
    Full(Option<Bytes>),
    Stream(Box<Stream>),
}

impl RelayBody {
    pub fn full(b: Bytes) -> Self {
        if b.is_empty() {
            RelayBody::Empty
        } else {
            RelayBody::Full(Some(b))
        }
    }

    pub fn stream(inner: Inbound) -> Self {
        RelayBody::Stream(Box::new(Stream {
            head: None,
            inner,
            idle: None,
            activity: None,
        }))
    }

    /// `head` (bytes already read from the stream), then the rest of `inner`.
    pub fn stream_after(
        head: Bytes,
        inner: Inbound,
        idle: Option<IdleTimeout>,
        activity: Option<Arc<Activity>>,
    ) -> Self {
        RelayBody::Stream(Box::new(Stream {
            head: (!head.is_empty()).then_some(head),
            inner,
            idle,
            activity,
        }))
    }

    pub fn stream_with(
        inner: Inbound,
        idle: Option<IdleTimeout>,
        activity: Option<Arc<Activity>>,
    ) -> Self {
        RelayBody::Stream(Box::new(Stream {
            head: None,
            inner,
            idle,
            activity,
        }))
    }

    /// The stream a relayed body reads from, taken back unread (bytes already read before it, which
    /// the message still holds, are dropped).
    pub fn into_inbound(self) -> Option<Inbound> {
        match self {
            RelayBody::Stream(s) => Some(s.inner),
            _ => None,
        }
    }
}

impl Body for RelayBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            RelayBody::Empty => Poll::Ready(None),
            RelayBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            RelayBody::Stream(s) => {
                let s = &mut **s;
                if let Some(h) = s.head.take() {
                    return Poll::Ready(Some(Ok(Frame::data(h))));
                }
                match Pin::new(&mut s.inner).poll_frame(cx) {
                    Poll::Ready(r) => {
                        if let Some(a) = &s.activity {
                            a.touch();
                            if r.is_none() || s.inner.is_end_stream() {
                                a.ended.store(true, Ordering::Relaxed);
                            }
                        }
                        if let Some(idle) = &mut s.idle {
                            idle.armed = false;
                        }
                        Poll::Ready(r)
                    }
                    Poll::Pending => {
                        if let Some(idle) = &mut s.idle {
                            let limit = idle.limit;
                            let sleep = idle
                                .sleep
                                .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                            if !idle.armed {
                                sleep.as_mut().reset(tokio::time::Instant::now() + limit);
                                idle.armed = true;
                            }
                            if sleep.as_mut().poll(cx).is_ready() {
                                let msg =
                                    format!("{} sent nothing for {:?}", idle.what, idle.limit);
                                s.idle = None;
                                return Poll::Ready(Some(Err(Box::new(StalledError(msg)))));
                            }
                        }
                        Poll::Pending
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RelayBody::Empty => true,
            RelayBody::Full(b) => b.is_none(),
            RelayBody::Stream(s) => s.head.is_none() && s.inner.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RelayBody::Empty => SizeHint::with_exact(0),
            RelayBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            RelayBody::Stream(s) => {
                let head = s.head.as_ref().map_or(0, |h| h.len() as u64);
                let inner = s.inner.size_hint();
                let mut hint = SizeHint::new();
                hint.set_lower(inner.lower() + head);
                if let Some(u) = inner.upper() {
                    hint.set_upper(u + head);
                }
                hint
            }
        }
    }
}

use std::future::Future;
