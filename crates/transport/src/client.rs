//! The back-end client: HTTP/1.1 over keep-alive connections pooled per host, run inside the request's
//! own task. The request is written and the response read by the future and body the engine polls, with
//! no connection task and no channel between them (hyper's client connection cost about 2.5 µs of CPU
//! per request in those). Each serving thread has its own engine and so its own pool: the lock below is
//! never contended. Errors map to the error taxonomy.
//!
//! A request body still being written when the response head arrives (an echo answers while it reads)
//! goes on being written by [`BackendBody`], which reads the response and writes the request in the same
//! poll, so neither side can stall the other.

use crate::body::{Polled, RelayBody};
use crate::error::{Fault, FaultKind};
use crate::h1::{self, Decoded, RequestFraming, ResponseFraming};
use crate::tls::{self, Io};
use bytes::{Buf, Bytes, BytesMut};
use http::header::{self, HeaderMap};
use http::{Method, Request, Response};
use http_body::{Body, Frame, SizeHint};
use rustls::ClientConfig;
use sluice_mediation::error::BoxError;
use sluice_mediation::{EndpointPlan, Error, ErrorKind};
use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;
use tokio::io::AsyncWrite;
use tokio::net::TcpStream;

/// Idle connections kept per back-end host, at most.
const MAX_IDLE_PER_HOST: usize = 1024;
/// Request bytes kept for sending again when a reused connection turns out to be closed.
const REPLAY_LIMIT: usize = 64 * 1024;
/// Body frames are taken ahead of writing while fewer bytes than this wait.
const COALESCE_LIMIT: usize = 16 * 1024;
/// Pieces up to this size are copied into the gathering buffer; larger ones are written in place, by a
/// vectored write together with whatever was gathered before them.
const COPY_LIMIT: usize = 2 * 1024;
/// Read sizes: the first read of a response, and the largest a long response grows to.
const READ_MIN: usize = 8 * 1024;
const READ_MAX: usize = 64 * 1024;
/// Pooled connections tried before a new one is opened.
const POOLED_TRIES: usize = 3;
/// Times a request is sent again after a new connection was reset (not closed) before any response
/// byte.
const FRESH_RETRIES: usize = 2;

/// A request the back-end did not answer: why, and the request's body when none of it was read.
pub struct Unsent {
    pub error: Error,
    pub body: Option<RelayBody>,
}

#[derive(Clone)]
pub struct BackendClient {
    inner: Arc<Inner>,
}

struct Inner {
    connect_timeout: Duration,
    /// Whom https back-ends are trusted by.
    tls: Arc<ClientConfig>,
    /// "host:port" -> idle connections, the most recently used last: plain ones first, TLS ones
    /// second (a host may serve both on one port).
    pool: Mutex<[HashMap<Arc<str>, Vec<Conn>>; 2]>,
    /// Sweeps of the pool so far ([`BackendClient::sweep`]): idle connections are stamped with it when
    /// checked in, which costs no clock read per request.
    sweeps: AtomicU64,
}

impl Inner {
    /// Puts an idle connection back in the pool (dropped when the host already has the most allowed).
    fn check_in(&self, key: &Arc<str>, mut conn: Conn) {
        conn.idle_since = self.sweeps.load(Ordering::Relaxed);
        let mut pools = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        let pool = &mut pools[usize::from(conn.is_tls())];
        match pool.get_mut(&**key) {
            Some(conns) if conns.len() < MAX_IDLE_PER_HOST => conns.push(conn),
            Some(_) => {}
            None => {
                pool.insert(key.clone(), vec![conn]);
            }
        }
    }
}

struct Conn {
    io: Io,
    /// Bytes read and not yet used. Empty whenever the connection is idle in the pool.
    rbuf: BytesMut,
    read_size: usize,
    /// The sweep count when the connection was last checked in.
    idle_since: u64,
}

impl Conn {
    fn new(io: Io) -> Self {
        Conn {
            io,
            rbuf: BytesMut::new(),
            read_size: READ_MIN,
            idle_since: 0,
        }
    }

    /// Whether an idle connection can take a request: the back-end has sent nothing since the last
    /// response (no end of stream, no stray bytes). A plain connection costs no system call unless
    /// the socket became readable, which for an idle connection means it is closing. A TLS one is
    /// read through the TLS layer (no system call either while the socket is not readable): usable
    /// when neither data (held by rustls or new) nor an end comes of it; a record that is not data
    /// (a TLS 1.3 session ticket) is taken in on the way.
    fn is_usable(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        match &mut self.io {
            Io::Tcp(s) => match s.poll_read_ready(&mut cx) {
                Poll::Pending => true,
                Poll::Ready(Err(_)) => false,
                Poll::Ready(Ok(())) => {
                    let mut probe = [0u8; 1];
                    matches!(s.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
                }
            },
            Io::Tls(s) => {
                let mut probe = [0u8; 1];
                let mut buf = tokio::io::ReadBuf::new(&mut probe);
                let polled =
                    tokio::io::AsyncRead::poll_read(Pin::new(s.as_mut()), &mut cx, &mut buf);
                matches!(polled, Poll::Pending)
            }
        }
    }

    fn is_tls(&self) -> bool {
        matches!(self.io, Io::Tls(_))
    }

    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.rbuf.capacity() - self.rbuf.len() < self.read_size / 2 {
            self.rbuf.reserve(self.read_size);
        }
        let spare = self.rbuf.capacity() - self.rbuf.len();
        let n = ready!(tokio_util::io::poll_read_buf(
            Pin::new(&mut self.io),
            cx,
            &mut self.rbuf
        ))?;
        // A read that filled the buffer: the response is long, read more at a time.
        if n == spare && self.read_size < READ_MAX {
            self.read_size *= 2;
        }
        Poll::Ready(Ok(n))
    }
}

impl BackendClient {
    pub fn new(connect_timeout: Duration, tls: Arc<ClientConfig>) -> Self {
        BackendClient {
            inner: Arc::new(Inner {
                connect_timeout,
                tls,
                pool: Mutex::new([HashMap::new(), HashMap::new()]),
                sweeps: AtomicU64::new(0),
            }),
        }
    }

    /// Closes the idle connections the back-end has closed (they would sit in CLOSE_WAIT until a
    /// request came for that host) and those idle through more than `max_idle` sweeps. Called at a
    /// fixed interval by the serving loop.
    pub fn sweep(&self, max_idle: u64) {
        let now = self.inner.sweeps.fetch_add(1, Ordering::Relaxed) + 1;
        let mut pools = self.inner.pool.lock().unwrap_or_else(|p| p.into_inner());
        for pool in pools.iter_mut() {
            pool.retain(|_, conns| {
                conns.retain_mut(|c| {
                    // Idle through a whole sweep: its read buffer goes back to the allocator (a
                    // connection in steady use keeps it, and reads with no allocation).
                    if now > c.idle_since {
                        c.rbuf = BytesMut::new();
                        c.read_size = READ_MIN;
                    }
                    now - c.idle_since <= max_idle && c.is_usable()
                });
                !conns.is_empty()
            });
        }
    }

    /// Idle connections in the pool, over every host.
    #[cfg(test)]
    fn idle_connections(&self) -> usize {
        let pools = self.inner.pool.lock().unwrap_or_else(|p| p.into_inner());
        pools.iter().flat_map(|p| p.values()).map(Vec::len).sum()
    }

    /// The most recently used idle connection that is still open. Closed ones are dropped on the way.
    fn checkout(&self, key: &str, tls: bool) -> Option<Conn> {
        let mut pools = self.inner.pool.lock().unwrap_or_else(|p| p.into_inner());
        let conns = pools[usize::from(tls)].get_mut(key)?;
        while let Some(mut c) = conns.pop() {
            if c.is_usable() {
                return Some(c);
            }
        }
        None
    }

    /// A new connection, through the TLS handshake for an https endpoint; both within the connect
    /// timeout.
    async fn connect(&self, ep: &EndpointPlan) -> Result<Conn, Error> {
        let key = &*ep.authority;
        let open = async {
            let tcp = TcpStream::connect(key).await?;
            let _ = tcp.set_nodelay(true);
            if !is_https(ep) {
                return Ok(Io::Tcp(tcp));
            }
            let name =
                tls::server_name(ep.uri.host().unwrap_or_default()).map_err(io::Error::other)?;
            tls::connect(self.inner.tls.clone(), name, tcp).await
        };
        let io = match tokio::time::timeout(self.inner.connect_timeout, open).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                return Err(Error::new(ErrorKind::ConnectFailed, ep.describe()).with_source(e))
            }
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::ConnectTimeout,
                    format!(
                        "{} (no connection within {} ms)",
                        ep.describe(),
                        self.inner.connect_timeout.as_millis()
                    ),
                ))
            }
        };
        Ok(Conn::new(io))
    }

    /// Sends a request and returns the response once its head is in; the body is read as it is polled.
    /// `correlation`: a correlation ID Sluice made, written as its header.
    /// On failure, the request's body comes back when none of it was read (the connection failed
    /// first), so that a fault sequence can still read it or send it elsewhere.
    pub async fn send(
        &self,
        req: Request<RelayBody>,
        ep: &EndpointPlan,
        correlation: Option<sluice_mediation::message::Id>,
    ) -> Result<Response<BackendBody>, Unsent> {
        let (parts, body) = req.into_parts();
        let framing = request_framing(&parts.headers, &body);
        let wire = parts.extensions.get::<Wire>().copied().unwrap_or_default();
        let absolute;
        let target = if wire.absolute_target {
            absolute = ep.uri.to_string();
            absolute.as_str()
        } else {
            ep.uri.path_and_query().map_or("/", |p| p.as_str())
        };
        let version = if wire.http10 {
            http::Version::HTTP_10
        } else {
            http::Version::HTTP_11
        };
        let mut head = BytesMut::with_capacity(512);
        let line = (&parts.method, target, version);
        let made = correlation.map(|id| (crate::correlation::header(), id));
        h1::write_request_head(line, &parts.headers, framing, made, &mut head);
        let mut writer = Writer::new(head, body, framing);
        match self.exchange_retried(&mut writer, &parts.method, ep).await {
            Ok((mut head, conn)) => {
                head.keep_alive &= !wire.close;
                Ok(self.response(head, conn, writer, ep))
            }
            Err(error) => Err(Unsent {
                error,
                body: writer.unread_body(),
            }),
        }
    }

    /// Writes the request on a pooled or new connection and reads the response head, sending the
    /// request again on another connection where that is safe.
    async fn exchange_retried(
        &self,
        writer: &mut Writer,
        method: &Method,
        ep: &EndpointPlan,
    ) -> Result<(h1::ResponseHead, Conn), Error> {
        let (mut pooled_tries, mut fresh_tries) = (0, 0);
        loop {
            let pooled = if pooled_tries < POOLED_TRIES {
                self.checkout(&ep.authority, is_https(ep))
            } else {
                None
            };
            let reused = pooled.is_some();
            let mut conn = match pooled {
                Some(c) => c,
                // Boxed: the TLS handshake's state is large, and new connections are rare next
                // to pooled ones; unboxed it would enlarge every request's future.
                None => Box::pin(self.connect(ep)).await?,
            };
            match exchange(&mut conn, writer, method).await {
                Ok(head) => return Ok((head, conn)),
                // The connection ended before any byte of a response: a kept-alive one the back-end
                // closed as the request went out, or a new one it reset with the request unread (a
                // full accept queue does that). Neither took the request: send it again, on another
                // connection. A new connection closed without a reset may have had the request read
                // and acted on: sending it again could duplicate a POST.
                Err(Failure::Closed {
                    any_bytes: false,
                    reset,
                }) if (reused || (reset && fresh_tries < FRESH_RETRIES)) && writer.rewind() => {
                    if reused {
                        pooled_tries += 1;
                    } else {
                        fresh_tries += 1;
                    }
                    continue;
                }
                Err(f) => return Err(f.into_error(ep)),
            }
        }
    }

    fn response(
        &self,
        head: h1::ResponseHead,
        conn: Conn,
        writer: Writer,
        ep: &EndpointPlan,
    ) -> Response<BackendBody> {
        let mut body = BackendBody {
            conn: Some(conn),
            writer: (!writer.is_done()).then(|| Box::new(writer)),
            framing: head.framing,
            keep_alive: head.keep_alive,
            pool: self.inner.clone(),
            key: ep.authority.clone(),
        };
        // A response without body bytes ends here: the connection goes back at once, since nobody
        // may poll the body.
        if body.is_end_stream() {
            body.finish();
        }
        let mut r = Response::new(body);
        *r.status_mut() = head.status;
        *r.headers_mut() = head.headers;
        r
    }
}

/// How a request goes on the wire when the message asks for more than the usual (Synapse's
/// `POST_TO_URI`, `FORCE_HTTP_1.0`, `NO_KEEPALIVE`): carried in the request's extensions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wire {
    /// The request line names the whole URI (`POST http://host/path HTTP/1.1`), as to a proxy.
    pub absolute_target: bool,
    /// The request line says HTTP/1.0.
    pub http10: bool,
    /// The connection is closed after the response, never pooled.
    pub close: bool,
}

fn is_https(ep: &EndpointPlan) -> bool {
    ep.uri.scheme() == Some(&http::uri::Scheme::HTTPS)
}

/// How the request body goes on the wire: its `Content-Length` when the message has one (the client's,
/// relayed with the stream, or the length of bytes made in memory), else chunked; a relayed stream
/// that is known to be empty (a GET without a body) goes without any body, as it came.
fn request_framing(headers: &HeaderMap, body: &RelayBody) -> RequestFraming {
    match body {
        RelayBody::Empty => RequestFraming::Empty,
        RelayBody::Full(b) => RequestFraming::Length(b.as_ref().map_or(0, |b| b.len() as u64)),
        RelayBody::Stream(_) => match headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| h1::parse_length(v.as_bytes()).ok())
        {
            Some(n) => RequestFraming::Length(n),
            None if body.is_end_stream() => RequestFraming::Empty,
            None => RequestFraming::Chunked,
        },
    }
}

/// Why an exchange failed.
enum Failure {
    Io(io::Error),
    /// The back-end ended the connection; `any_bytes` if it had sent part of a response, `reset` if
    /// it reset the connection (data it never read was left) rather than closing it.
    Closed {
        any_bytes: bool,
        reset: bool,
    },
    Protocol(Fault),
    /// The request body (from the client) failed.
    Body(BoxError),
    /// The request body did not match its declared length.
    Length(Fault),
}

impl Failure {
    fn into_error(self, ep: &EndpointPlan) -> Error {
        match self {
            Failure::Io(e) => Error::new(ErrorKind::ConnectionClosed, ep.describe()).with_source(e),
            Failure::Closed { .. } => Error::new(ErrorKind::ConnectionClosed, ep.describe()),
            Failure::Protocol(e) => {
                Error::new(ErrorKind::BackendProtocol, ep.describe()).with_source(e)
            }
            Failure::Body(e) => crate::body::request_body_error(
                e,
                format!("reading the request body for {} failed", ep.describe()),
            ),
            Failure::Length(f) => Error::new(ErrorKind::Internal, f.to_string()),
        }
    }
}

impl From<Failure> for BoxError {
    fn from(f: Failure) -> BoxError {
        match f {
            Failure::Io(e) => Box::new(e),
            Failure::Closed { .. } => Box::new(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the back-end closed the connection before the end of the response",
            )),
            Failure::Protocol(e) => Box::new(e),
            Failure::Body(e) => e,
            Failure::Length(f) => Box::new(f),
        }
    }
}

/// A request body Sluice relays that does not match the length it declared (Sluice's fault: it
/// chose the framing).
fn length_fault(detail: String) -> Failure {
    Failure::Length(Fault::new(
        FaultKind::BodyLength,
        sluice_mediation::ErrorSource::Sluice,
        detail,
    ))
}

/// Writes the request head and body, framing the body as it goes. Small pieces are gathered into one
/// buffer so that the head and a small body leave in one write (one TCP segment); large ones are
/// written from where they are, without a copy.
struct Writer {
    body: RelayBody,
    framing: RequestFraming,
    /// Small framed pieces not yet written, gathered.
    buf: BytesMut,
    /// Framed bytes not yet written, in order, before `buf`.
    out: VecDeque<Bytes>,
    /// Body bytes still expected under `Content-Length` framing.
    left: u64,
    /// The body has ended and its end is framed.
    body_done: bool,
    /// Every piece framed so far, while they are few bytes: what a retry sends again.
    sent: Option<Vec<Bytes>>,
    sent_len: usize,
    /// Whether anything was taken from `body` (a frame or its end).
    pulled: bool,
    /// The whole request is written and flushed: [`Writer::poll_write`] said so. (TLS takes bytes
    /// before it has written them out: an empty queue is not enough.)
    finished: bool,
}

impl Writer {
    fn new(head: BytesMut, mut body: RelayBody, framing: RequestFraming) -> Self {
        let left = match framing {
            RequestFraming::Length(n) => n,
            _ => 0,
        };
        let mut w = Writer {
            body: RelayBody::Empty,
            framing,
            buf: BytesMut::new(),
            out: VecDeque::new(),
            left,
            body_done: matches!(body, RelayBody::Empty),
            sent: Some(Vec::new()),
            sent_len: 0,
            pulled: false,
            finished: false,
        };
        w.push(head.freeze());
        if let RelayBody::Full(b) = &mut body {
            if let Some(b) = b.take() {
                w.left = 0;
                w.push(b);
            }
            w.body_done = true;
        } else {
            w.body = body;
        }
        w
    }

    fn push(&mut self, b: Bytes) {
        if let Some(sent) = &mut self.sent {
            self.sent_len += b.len();
            if self.sent_len <= REPLAY_LIMIT {
                sent.push(b.clone());
            } else {
                self.sent = None;
            }
        }
        self.queue(b);
    }

    fn queue(&mut self, b: Bytes) {
        if b.len() <= COPY_LIMIT {
            if self.buf.is_empty() && self.out.is_empty() && self.buf.capacity() < b.len() + 2048 {
                self.buf.reserve(b.len() + 2048);
            }
            self.buf.extend_from_slice(&b);
        } else {
            self.seal();
            self.out.push_back(b);
        }
    }

    /// Moves the gathered small pieces into the write queue.
    fn seal(&mut self) {
        if !self.buf.is_empty() {
            self.out.push_back(self.buf.split().freeze());
        }
    }

    fn buffered(&self) -> usize {
        self.buf.len() + self.out.iter().map(Bytes::len).sum::<usize>()
    }

    fn is_done(&self) -> bool {
        self.finished
    }

    /// Prepares to send everything again from the start. False when too much was sent to replay.
    fn rewind(&mut self) -> bool {
        let Some(sent) = self.sent.take() else {
            return false;
        };
        self.buf.clear();
        self.out.clear();
        self.finished = false;
        for b in &sent {
            self.queue(b.clone());
        }
        self.sent = Some(sent);
        true
    }

    /// The request's streamed body, when nothing was read from it yet.
    fn unread_body(&mut self) -> Option<RelayBody> {
        (!self.pulled && matches!(self.body, RelayBody::Stream(_)))
            .then(|| std::mem::replace(&mut self.body, RelayBody::Empty))
    }

    /// Takes the body frames that are ready (while few bytes wait), and frames them.
    fn pull(&mut self, cx: &mut Context<'_>) -> Result<(), Failure> {
        while !self.body_done && self.buffered() < COALESCE_LIMIT {
            let polled = Pin::new(&mut self.body).poll_frame(cx);
            self.pulled |= polled.is_ready();
            match polled {
                Poll::Pending => break,
                Poll::Ready(None) => {
                    self.body_done = true;
                    match self.framing {
                        RequestFraming::Length(n) if self.left != 0 => {
                            return Err(length_fault(format!(
                                "the request body ended {} bytes short of its Content-Length {n}",
                                self.left
                            )))
                        }
                        RequestFraming::Chunked => self.push(Bytes::from_static(b"0\r\n\r\n")),
                        _ => {}
                    }
                }
                Poll::Ready(Some(Err(e))) => return Err(Failure::Body(e)),
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        continue; // trailers are not relayed
                    };
                    if data.is_empty() {
                        continue;
                    }
                    match self.framing {
                        RequestFraming::Length(n) => {
                            if data.len() as u64 > self.left {
                                return Err(length_fault(format!(
                                    "the request body is longer than its Content-Length {n}"
                                )));
                            }
                            self.left -= data.len() as u64;
                            self.push(data);
                        }
                        RequestFraming::Chunked => {
                            let mut h = BytesMut::with_capacity(20);
                            h1::chunk_header(data.len(), &mut h);
                            self.push(h.freeze());
                            self.push(data);
                            self.push(Bytes::from_static(b"\r\n"));
                        }
                        RequestFraming::Empty => {
                            return Err(length_fault(
                                "a request declared without body produced bytes".into(),
                            ))
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes what is framed, pulling more of the body as the socket takes it. Ready(Ok) once the whole
    /// request is written.
    fn poll_write(&mut self, io: &mut Io, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        loop {
            if let Err(f) = self.pull(cx) {
                return Poll::Ready(Err(f));
            }
            self.seal();
            if self.out.is_empty() {
                // Nothing to write: done, or waiting for the body (its waker is registered); in
                // both cases once TLS has written out what it holds (a no-op for TCP).
                let flushed = match Pin::new(&mut *io).poll_flush(cx) {
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(Failure::Io(e))),
                    p => p.is_ready(),
                };
                return if self.body_done && flushed {
                    self.finished = true;
                    Poll::Ready(Ok(()))
                } else {
                    Poll::Pending
                };
            }
            let n = if self.out.len() == 1 {
                ready!(Pin::new(&mut *io).poll_write(cx, &self.out[0])).map_err(Failure::Io)?
            } else {
                let mut slices = [IoSlice::new(&[]); 8];
                let k = self.out.len().min(slices.len());
                for (s, b) in slices.iter_mut().zip(self.out.iter()) {
                    *s = IoSlice::new(b);
                }
                ready!(Pin::new(&mut *io).poll_write_vectored(cx, &slices[..k]))
                    .map_err(Failure::Io)?
            };
            if n == 0 {
                return Poll::Ready(Err(Failure::Io(io::ErrorKind::WriteZero.into())));
            }
            let mut n = n;
            while n > 0 {
                let front = &mut self.out[0];
                if n >= front.len() {
                    n -= front.len();
                    self.out.pop_front();
                } else {
                    front.advance(n);
                    n = 0;
                }
            }
        }
    }
}

/// Writes the request and reads until the response head is in. Writing goes on while reading: a back-end
/// may answer before it has read the whole request. A write that fails does not end the exchange at
/// once: the back-end may have answered (an early error) and its answer is read first.
async fn exchange(
    conn: &mut Conn,
    writer: &mut Writer,
    method: &Method,
) -> Result<h1::ResponseHead, Failure> {
    let mut write_failed: Option<io::Error> = None;
    // After a partial head: how much of it was read then. The head is parsed again only once a
    // blank line has come after that (a back-end that trickles its head byte by byte would
    // otherwise cost the square of its length).
    let mut partial_at: Option<usize> = None;
    poll_fn(|cx| {
        if write_failed.is_none() && !writer.is_done() {
            match writer.poll_write(&mut conn.io, cx) {
                Poll::Ready(Err(Failure::Io(e))) => write_failed = Some(e),
                Poll::Ready(Err(f)) => return Poll::Ready(Err(f)),
                Poll::Ready(Ok(())) | Poll::Pending => {}
            }
        }
        loop {
            let worth_parsing = match partial_at {
                None => !conn.rbuf.is_empty(),
                Some(at) => {
                    conn.rbuf.len() > h1::MAX_HEAD
                        || h1::has_blank_line(&conn.rbuf[at.saturating_sub(2)..])
                }
            };
            if worth_parsing {
                match h1::parse_response_head(&conn.rbuf, method) {
                    Ok(Some((head, n))) => {
                        conn.rbuf.advance(n);
                        return Poll::Ready(Ok(head));
                    }
                    Ok(None) => partial_at = Some(conn.rbuf.len()),
                    Err(e) => return Poll::Ready(Err(Failure::Protocol(e))),
                }
            } else if partial_at.is_some() {
                partial_at = Some(conn.rbuf.len());
            }
            match ready!(conn.poll_read(cx)) {
                Ok(0) => {
                    return Poll::Ready(Err(Failure::Closed {
                        any_bytes: !conn.rbuf.is_empty(),
                        reset: false,
                    }))
                }
                Ok(_) => {}
                Err(e)
                    if conn.rbuf.is_empty()
                        && matches!(
                            e.kind(),
                            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
                        ) =>
                {
                    return Poll::Ready(Err(Failure::Closed {
                        any_bytes: false,
                        reset: true,
                    }))
                }
                // TLS closed without close_notify before any response byte: closed, as `Ok(0)`
                // is for plain TCP (rustls reports it as an unexpected end).
                Err(e) if conn.rbuf.is_empty() && e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Poll::Ready(Err(Failure::Closed {
                        any_bytes: false,
                        reset: false,
                    }))
                }
                Err(e) => return Poll::Ready(Err(Failure::Io(e))),
            }
        }
    })
    .await
}

/// A back-end response body, read from the connection as it is polled. It also finishes writing the
/// request body if the back-end answered before all of it was sent. At the end of a response the
/// connection goes back to the pool if it can carry another request.
pub struct BackendBody {
    /// None once the response is complete (or failed).
    conn: Option<Conn>,
    /// The rest of the request, still being written.
    writer: Option<Box<Writer>>,
    framing: ResponseFraming,
    keep_alive: bool,
    pool: Arc<Inner>,
    key: Arc<str>,
}

impl BackendBody {
    /// The response is complete: the connection is reused if the request was written whole and nothing
    /// follows the response, else closed.
    fn finish(&mut self) {
        self.framing = ResponseFraming::Empty;
        let Some(conn) = self.conn.take() else { return };
        if !self.keep_alive || self.writer.is_some() || !conn.rbuf.is_empty() {
            return;
        }
        self.pool.check_in(&self.key, conn);
    }

    fn fail(&mut self, f: Failure) -> Polled {
        self.conn = None;
        self.writer = None;
        self.framing = ResponseFraming::Empty;
        Poll::Ready(Some(Err(f.into())))
    }
}

impl Body for BackendBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = self.get_mut();
        let Some(conn) = this.conn.as_mut() else {
            return Poll::Ready(None);
        };
        if let Some(w) = this.writer.as_mut() {
            match w.poll_write(&mut conn.io, cx) {
                Poll::Ready(Ok(())) => this.writer = None,
                // The client's own body failed (it stopped, or came too slowly): the back-end waits
                // for the rest of it, so its answer would never end. The relay ends here, and the
                // back-end connection is closed.
                Poll::Ready(Err(Failure::Body(e))) => return this.fail(Failure::Body(e)),
                // The request could not be sent whole: the response may still be, but the connection
                // is not reused (`writer` stays, so `finish` closes it).
                Poll::Ready(Err(_)) => {
                    this.keep_alive = false;
                    w.body = RelayBody::Empty;
                    w.body_done = true;
                    w.out.clear();
                    w.buf.clear();
                }
                Poll::Pending => {}
            }
        }
        loop {
            let conn = this.conn.as_mut().expect("checked above");
            match &mut this.framing {
                ResponseFraming::Empty | ResponseFraming::Length(0) => {
                    this.finish();
                    return Poll::Ready(None);
                }
                ResponseFraming::Length(left) => {
                    if !conn.rbuf.is_empty() {
                        let take = (*left).min(conn.rbuf.len() as u64) as usize;
                        let data = conn.rbuf.split_to(take).freeze();
                        *left -= take as u64;
                        if *left == 0 {
                            // The caller may stop polling after the last byte: hand the
                            // connection back now.
                            this.finish();
                        }
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                }
                ResponseFraming::Chunked(dec) => match dec.decode(&mut conn.rbuf) {
                    Ok(Decoded::Data(d)) => return Poll::Ready(Some(Ok(Frame::data(d)))),
                    Ok(Decoded::Done) => {
                        this.finish();
                        return Poll::Ready(None);
                    }
                    Ok(Decoded::NeedMore) => {}
                    Err(e) => return this.fail(Failure::Protocol(e)),
                },
                ResponseFraming::Close => {
                    if !conn.rbuf.is_empty() {
                        let data = conn.rbuf.split().freeze();
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                }
            }
            match conn.poll_read(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => {
                    if this.framing == ResponseFraming::Close {
                        this.keep_alive = false;
                        this.finish();
                        return Poll::Ready(None);
                    }
                    return this.fail(Failure::Closed {
                        any_bytes: true,
                        reset: false,
                    });
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return this.fail(Failure::Io(e)),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(
            self.framing,
            ResponseFraming::Empty | ResponseFraming::Length(0)
        ) || matches!(&self.framing, ResponseFraming::Chunked(d) if d.is_done())
    }

    fn size_hint(&self) -> SizeHint {
        match self.framing {
            ResponseFraming::Empty => SizeHint::with_exact(0),
            ResponseFraming::Length(n) => SizeHint::with_exact(n),
            _ => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_sweep_closes_idle_and_closed_connections() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = BackendClient::new(Duration::from_secs(1), tls::default_client_config());
        let key: Arc<str> = addr.to_string().into();
        let open = TcpStream::connect(addr).await.unwrap();
        let (_kept, _) = listener.accept().await.unwrap();
        client.inner.check_in(&key, Conn::new(Io::Tcp(open)));
        // Idle through at most two sweeps: kept for two, closed at the third.
        client.sweep(2);
        client.sweep(2);
        assert_eq!(client.idle_connections(), 1);
        client.sweep(2);
        assert_eq!(client.idle_connections(), 0);
        // The back-end closes a pooled connection: the next sweep to see it closes ours.
        let open = TcpStream::connect(addr).await.unwrap();
        let (peer, _) = listener.accept().await.unwrap();
        client.inner.check_in(&key, Conn::new(Io::Tcp(open)));
        client.sweep(100);
        assert_eq!(client.idle_connections(), 1);
        drop(peer);
        // The end of stream reaches the runtime's reactor asynchronously: bounded wait for it.
        let mut left = 1;
        for _ in 0..2000 {
            client.sweep(100);
            left = client.idle_connections();
            if left == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(
            left, 0,
            "a connection the back-end closed stayed in the pool"
        );
    }
}

#[cfg(test)]
mod tls_tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A TLS connection pair on loopback: Sluice's side as a pooled connection, the server's side
    /// (TLS 1.3, which sends session tickets after the handshake) to act on.
    async fn pair() -> (Conn, tokio_rustls::server::TlsStream<TcpStream>) {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into()),
            )
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.cert.der().clone()).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accept = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            tokio_rustls::TlsAcceptor::from(Arc::new(server))
                .accept(tcp)
                .await
                .unwrap()
        });
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = tls::server_name("localhost").unwrap();
        let io = tls::connect(Arc::new(client), name, tcp).await.unwrap();
        (Conn::new(io), accept.await.unwrap())
    }

    /// Waits until the socket under `c` has something to read (no sleep: readiness).
    async fn readable(c: &Conn) {
        c.io.tcp().readable().await.unwrap();
    }

    #[tokio::test]
    async fn an_idle_tls_connection_with_session_tickets_is_usable() {
        let (mut c, _server) = pair().await;
        // The server's session tickets arrive after the handshake: records, but no data.
        readable(&c).await;
        assert!(c.is_usable());
        assert!(c.is_usable());
    }

    /// Whether `c` turns unusable once what the server sent has arrived (session tickets may come
    /// first; each wait is for more to read, bounded).
    async fn turns_unusable(c: &mut Conn) -> bool {
        for _ in 0..20 {
            let more = tokio::time::timeout(Duration::from_secs(5), readable(c)).await;
            if more.is_err() {
                return false;
            }
            if !c.is_usable() {
                return true;
            }
        }
        false
    }

    #[tokio::test]
    async fn close_notify_a_bare_close_and_stray_bytes_make_it_unusable() {
        let (mut c, mut server) = pair().await;
        server.shutdown().await.unwrap();
        assert!(turns_unusable(&mut c).await, "close_notify");

        let (mut c, server) = pair().await;
        // The TCP connection closed under TLS, without close_notify.
        let (tcp, _) = server.into_inner();
        drop(tcp);
        assert!(turns_unusable(&mut c).await, "closed without close_notify");

        let (mut c, mut server) = pair().await;
        server.write_all(b"x").await.unwrap();
        server.flush().await.unwrap();
        assert!(turns_unusable(&mut c).await, "a stray byte");
    }
}
