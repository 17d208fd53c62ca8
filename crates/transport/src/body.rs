//! The one body type Sluice sends, both ways: nothing, bytes made in memory, or another message's stream
//! relayed frame by frame (bounded by hyper's buffers, never collected).

use crate::client::BackendBody;
use crate::error::{Fault, FaultKind};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use sluice_mediation::error::BoxError;
use sluice_mediation::ErrorSource;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// What every body here yields when polled: a frame of bytes, an error, or the end.
pub(crate) type Polled = Poll<Option<Result<Frame<Bytes>, BoxError>>>;
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

/// How slowly a client may send its request body. A slow mobile client passes with room; a client
/// that trickles bytes to hold a connection (and the back-end connection its body is relayed on) does
/// not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyPace {
    /// No rate is asked for before this much time has passed since the body was first waited for.
    pub grace: Duration,
    /// After the grace period, the bytes received must average at least this many per second.
    pub min_rate: u64,
    /// The whole body must have come within this time of the first wait for it.
    pub deadline: Duration,
}

impl Default for BodyPace {
    fn default() -> Self {
        BodyPace {
            grace: Duration::from_secs(10),
            min_rate: 1024,
            deadline: Duration::from_secs(300),
        }
    }
}

impl BodyPace {
    /// Why a body of which `read` bytes came in `took` is too slow, if it is.
    fn too_slow(&self, read: u64, took: Duration) -> Option<String> {
        if took >= self.deadline {
            return Some(format!(
                "the request body did not arrive within {} s",
                self.deadline.as_secs()
            ));
        }
        let owed = (u128::from(self.min_rate) * took.as_millis()) / 1000;
        (took >= self.grace && u128::from(read) < owed).then(|| {
            format!(
                "the request body came slower than {} bytes/s ({read} bytes in {} ms)",
                self.min_rate,
                took.as_millis()
            )
        })
    }

    /// How long after the first wait a body of which `read` bytes came is too slow, if nothing
    /// more comes. Rounded up, so that a timer set to it always finds the body too slow when it
    /// fires (never a wake-up with nothing to do).
    fn next_check(&self, read: u64) -> Duration {
        let paid = match self.min_rate {
            0 => self.deadline,
            r => Duration::from_millis(read.saturating_add(1).saturating_mul(1000).div_ceil(r)),
        };
        paid.max(self.grace).min(self.deadline)
    }
}

/// A client's request body sent slower than its [`BodyPace`] allows: answered 408.
fn too_slow(why: String) -> Fault {
    Fault::new(FaultKind::TooSlow, ErrorSource::Client, why)
}

/// What a failure to read the client's request body means: [`FaultKind::TooSlow`] is the client's
/// timeout (408), anything else a bad request (400).
pub fn request_body_error(e: BoxError, context: String) -> sluice_mediation::Error {
    use sluice_mediation::ErrorKind;
    let kind = if Fault::is(e.as_ref(), FaultKind::TooSlow) {
        ErrorKind::ClientTimeout
    } else {
        ErrorKind::BadRequest
    };
    sluice_mediation::Error::new(kind, context).with_source(e)
}

/// A client's request body, held to a [`BodyPace`]. The clock is read only once the body has to be
/// waited for: a body that is there at once (the usual case) costs no clock read and no timer.
pub struct ClientBody {
    inner: Incoming,
    pace: BodyPace,
    /// When the body was first waited for.
    since: Option<tokio::time::Instant>,
    read: u64,
    timer: Option<Pin<Box<Sleep>>>,
}

impl ClientBody {
    pub fn new(inner: Incoming, pace: BodyPace) -> Self {
        ClientBody {
            inner,
            pace,
            since: None,
            read: 0,
            timer: None,
        }
    }

    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Polled {
        // Twice at most: a timer that fired is checked once more, and then the body is too slow
        // (see `next_check`).
        for _ in 0..2 {
            let now = tokio::time::Instant::now();
            let since = *self.since.get_or_insert(now);
            if let Some(why) = self
                .pace
                .too_slow(self.read, now.saturating_duration_since(since))
            {
                self.timer = None;
                return Poll::Ready(Some(Err(Box::new(too_slow(why)))));
            }
            let at = since + self.pace.next_check(self.read);
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if timer.deadline() != at {
                timer.as_mut().reset(at);
            }
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        Poll::Ready(Some(Err(Box::new(too_slow(
            "the request body came too slowly".into(),
        )))))
    }
}

impl Body for ClientBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(f))) => {
                if let Some(d) = f.data_ref() {
                    this.read += d.len() as u64;
                }
                Poll::Ready(Some(Ok(f)))
            }
            Poll::Ready(r) => Poll::Ready(r.map(|r| r.map_err(Into::into))),
            Poll::Pending => this.poll_pending(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A body arriving from one side: a client's request or a back-end's response.
pub enum Inbound {
    Client(ClientBody),
    Backend(BackendBody),
}

impl Body for Inbound {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        match self.get_mut() {
            Inbound::Client(b) => Pin::new(b).poll_frame(cx),
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

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
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
                                let stalled =
                                    Fault::new(FaultKind::Stalled, ErrorSource::Backend, msg);
                                return Poll::Ready(Some(Err(Box::new(stalled))));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_too_slow_exactly_when_its_next_check_comes() {
        for pace in [
            BodyPace::default(),
            BodyPace {
                grace: Duration::from_secs(1),
                min_rate: 100,
                deadline: Duration::from_secs(60),
            },
            BodyPace {
                grace: Duration::ZERO,
                min_rate: 3,
                deadline: Duration::from_secs(5),
            },
            BodyPace {
                grace: Duration::from_secs(2),
                min_rate: 0,
                deadline: Duration::from_secs(7),
            },
        ] {
            for read in [0, 1, 2, 7, 999, 1000, 1001, 12_345, 1 << 20, 1 << 30] {
                let at = pace.next_check(read);
                assert!(
                    pace.too_slow(read, at).is_some(),
                    "{pace:?}: {read} bytes at {at:?}"
                );
                if let Some(before) = at.checked_sub(Duration::from_millis(1)) {
                    assert!(
                        pace.too_slow(read, before).is_none(),
                        "{pace:?}: {read} bytes at {before:?}, before {at:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_slow_mobile_client_passes_and_a_trickle_does_not() {
        let pace = BodyPace::default();
        // 20 KiB/s for a 1 MiB upload: 51 s, within the rate all along.
        for s in 1..=51u64 {
            assert!(pace
                .too_slow(s * 20 * 1024, Duration::from_secs(s))
                .is_none());
        }
        // A byte every 5 s is cut at the end of the grace period.
        assert!(pace.too_slow(2, Duration::from_secs(10)).is_some());
        assert!(pace.too_slow(1, Duration::from_secs(9)).is_none());
        // Fast enough, but not done within the deadline.
        assert!(pace.too_slow(u64::MAX, Duration::from_secs(300)).is_some());
    }
}
