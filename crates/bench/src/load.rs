//! The load generator: a closed loop of N users, each on its own keep-alive connection, no think time
//! (JMeter's thread group in WSO2's plan). A thin HTTP/1.1 client of its own (one write per request,
//! responses parsed in place) so the generator costs less CPU than the proxies it measures.

use crate::stats::{histogram, Phase, Window};
use bytes::{Buf, BytesMut};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What to send, to whom, for how long.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    pub addr: SocketAddr,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Other bodies sent in turn with `body` (each user steps through them): messages that must
    /// differ, such as WS-Security requests with fresh keys.
    pub more_bodies: Vec<Vec<u8>>,
    pub users: usize,
    pub warmup: Duration,
    pub duration: Duration,
    /// Per request, connect included.
    pub timeout: Duration,
    /// Substrings one of which every response body must contain (JMeter's response assertion);
    /// none: no assertion.
    pub assert_contains: Vec<String>,
    /// Generator threads (each a single-threaded runtime).
    pub threads: usize,
    /// Stop once this many requests (all users together, warm-up included) have been sent; the
    /// duration is then only an upper bound. For counts per request that must not depend on speed.
    pub requests: Option<u64>,
}

/// Errors by kind, counted in the measured window.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Errors {
    pub connect: u64,
    pub timeout: u64,
    pub io: u64,
    pub non_2xx: u64,
    pub assertion: u64,
}

impl Errors {
    pub fn total(&self) -> u64 {
        self.connect + self.timeout + self.io + self.non_2xx + self.assertion
    }
    fn add(&mut self, o: &Errors) {
        self.connect += o.connect;
        self.timeout += o.timeout;
        self.io += o.io;
        self.non_2xx += o.non_2xx;
        self.assertion += o.assertion;
    }
}

/// A run's outcome: latencies of the successful requests completed in the measured window.
#[derive(Debug)]
pub struct LoadResult {
    pub latency_us: Histogram<u64>,
    pub ok: u64,
    pub errors: Errors,
    pub measured: Duration,
}

impl LoadResult {
    pub fn throughput(&self) -> f64 {
        self.ok as f64 / self.measured.as_secs_f64()
    }
    pub fn error_pct(&self) -> f64 {
        let all = self.ok + self.errors.total();
        if all == 0 {
            // Nothing completed at all is a total failure, not 0 %.
            100.0
        } else {
            self.errors.total() as f64 * 100.0 / all as f64
        }
    }
}

/// Called by the coordinating thread at the window's edges and every `tick` inside it, so callers can
/// sample a process's CPU time and memory over exactly the measured window.
pub trait Observer {
    fn window_start(&mut self) {}
    fn tick(&mut self) {}
    fn window_end(&mut self) {}
}

pub struct NoObserver;
impl Observer for NoObserver {}

const TICK: Duration = Duration::from_millis(100);

/// Runs the closed loop and blocks until it is over.
pub fn run(spec: &LoadSpec, observer: &mut dyn Observer) -> std::io::Result<LoadResult> {
    let request: Arc<Vec<Vec<u8>>> = Arc::new(
        std::iter::once(&spec.body)
            .chain(&spec.more_bodies)
            .map(|b| build_request(spec, b))
            .collect(),
    );
    let assert: Arc<Vec<Vec<u8>>> = Arc::new(
        (spec.assert_contains.iter())
            .map(|a| a.clone().into_bytes())
            .collect(),
    );
    let threads = spec.threads.clamp(1, spec.users.max(1));
    let window = Window::new(Instant::now(), spec.warmup, spec.duration);
    let budget = Arc::new(AtomicU64::new(spec.requests.unwrap_or(u64::MAX)));
    let mut handles = Vec::new();
    for t in 0..threads {
        // Users spread evenly: thread t runs users t, t+threads, ...
        let users = (spec.users + threads - 1 - t) / threads;
        let (request, assert, addr, timeout, budget) = (
            request.clone(),
            assert.clone(),
            spec.addr,
            spec.timeout,
            budget.clone(),
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        handles.push(
            std::thread::Builder::new()
                .name(format!("load-{t}"))
                .spawn(move || {
                    let local = tokio::task::LocalSet::new();
                    let acc = Rc::new(RefCell::new(Acc::new()));
                    local.block_on(&rt, async {
                        let mut tasks = Vec::new();
                        for k in 0..users {
                            let u = User {
                                addr,
                                request: request.clone(),
                                turn: Cell::new(t + k * threads),
                                assert: assert.clone(),
                                timeout,
                                window,
                                budget: budget.clone(),
                                acc: acc.clone(),
                            };
                            tasks.push(tokio::task::spawn_local(u.run()));
                        }
                        for t in tasks {
                            let _ = t.await;
                        }
                    });
                    Rc::try_unwrap(acc)
                        .map(RefCell::into_inner)
                        .unwrap_or_else(|rc| rc.borrow().clone())
                })?,
        );
    }
    // Coordinate: the window's edges and ticks, on this (non-runtime) thread.
    sleep_until(window.warm_end);
    observer.window_start();
    let done = || handles.iter().all(|h| h.is_finished());
    while Instant::now() + TICK < window.end && !done() {
        std::thread::sleep(TICK);
        observer.tick();
    }
    if !done() {
        sleep_until(window.end);
    }
    let measured = (Instant::now().min(window.end)).saturating_duration_since(window.warm_end);
    observer.window_end();
    let mut total = Acc::new();
    for h in handles {
        let a = h
            .join()
            .map_err(|_| std::io::Error::other("a load thread panicked"))?;
        total.merge(&a);
    }
    Ok(LoadResult {
        latency_us: total.hist,
        ok: total.ok,
        errors: total.errors,
        measured: if spec.requests.is_some() {
            measured
        } else {
            window.measured()
        },
    })
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// The whole request, head and body, built once and written with one call per request.
fn build_request(spec: &LoadSpec, body: &[u8]) -> Vec<u8> {
    let mut r = format!("POST {} HTTP/1.1\r\nHost: {}\r\n", spec.path, spec.addr);
    for (k, v) in &spec.headers {
        r.push_str(k);
        r.push_str(": ");
        r.push_str(v);
        r.push_str("\r\n");
    }
    r.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut r = r.into_bytes();
    r.extend_from_slice(body);
    r
}

#[derive(Clone)]
struct Acc {
    hist: Histogram<u64>,
    ok: u64,
    errors: Errors,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            hist: histogram(),
            ok: 0,
            errors: Errors::default(),
        }
    }
    fn merge(&mut self, o: &Acc) {
        let _ = self.hist.add(&o.hist);
        self.ok += o.ok;
        self.errors.add(&o.errors);
    }
}

struct User {
    addr: SocketAddr,
    /// The request, or the requests sent in turn ([`LoadSpec::more_bodies`]).
    request: Arc<Vec<Vec<u8>>>,
    /// Which of them goes next.
    turn: Cell<usize>,
    assert: Arc<Vec<Vec<u8>>>,
    timeout: Duration,
    window: Window,
    /// Requests left to send, shared by all users.
    budget: Arc<AtomicU64>,
    acc: Rc<RefCell<Acc>>,
}

/// Why one exchange failed.
enum Fail {
    Connect,
    Io,
    Status,
    Assertion,
}

impl User {
    async fn run(self) {
        let mut conn: Option<Conn> = None;
        // One timer per user, re-armed at most once a second (not per request: the timer wheel would
        // cost more than the request parsing). Armed at R for R + timeout + 1 s, it covers every request
        // starting before R + 1 s with at least the full timeout.
        let slack = Duration::from_secs(1);
        let mut armed = Instant::now();
        let deadline = tokio::time::sleep(self.timeout + slack);
        tokio::pin!(deadline);
        loop {
            let start = Instant::now();
            if start >= self.window.end || !self.take_one() {
                return;
            }
            if start > armed + slack {
                armed = start;
                deadline
                    .as_mut()
                    .reset((start + self.timeout + slack).into());
            }
            let r = tokio::select! {
                biased;
                r = self.exchange(&mut conn) => r,
                () = &mut deadline => {
                    conn = None;
                    Err(None)
                }
            };
            let done = Instant::now();
            if r.is_err() && !matches!(r, Err(Some(Fail::Status | Fail::Assertion))) {
                conn = None;
            }
            if self.window.phase(done) == Phase::Measured {
                let mut acc = self.acc.borrow_mut();
                match r {
                    Ok(()) => {
                        acc.ok += 1;
                        let us = (done - start).as_micros().max(1) as u64;
                        let _ = acc.hist.record(us);
                    }
                    Err(None) => acc.errors.timeout += 1,
                    Err(Some(Fail::Connect)) => acc.errors.connect += 1,
                    Err(Some(Fail::Io)) => acc.errors.io += 1,
                    Err(Some(Fail::Status)) => acc.errors.non_2xx += 1,
                    Err(Some(Fail::Assertion)) => acc.errors.assertion += 1,
                }
            }
            if matches!(r, Err(Some(Fail::Connect))) {
                // A refused connect fails at once: pace retries instead of spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }

    /// Takes one request from the shared budget; false once it is spent.
    fn take_one(&self) -> bool {
        self.budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    async fn exchange(&self, conn: &mut Option<Conn>) -> Result<(), Option<Fail>> {
        if conn.is_none() {
            let s = TcpStream::connect(self.addr)
                .await
                .map_err(|_| Some(Fail::Connect))?;
            let _ = s.set_nodelay(true);
            *conn = Some(Conn {
                s,
                buf: BytesMut::with_capacity(64 * 1024),
            });
        }
        let c = conn.as_mut().expect("connected above");
        let turn = self.turn.get();
        self.turn.set(turn.wrapping_add(1));
        c.s.write_all(&self.request[turn % self.request.len()])
            .await
            .map_err(|_| Some(Fail::Io))?;
        let res = c
            .read_response(&self.assert)
            .await
            .map_err(|_| Some(Fail::Io))?;
        if !res.keep_alive {
            *conn = None;
        }
        if !(200..300).contains(&res.status) {
            return Err(Some(Fail::Status));
        }
        if !res.assert_ok {
            return Err(Some(Fail::Assertion));
        }
        Ok(())
    }
}

struct Conn {
    s: TcpStream,
    buf: BytesMut,
}

#[derive(Debug, PartialEq, Eq)]
struct Response {
    status: u16,
    keep_alive: bool,
    assert_ok: bool,
}

/// Whether `body` passes the assertion: it holds one of `assert`, or there is none.
fn holds(assert: &[Vec<u8>], body: &[u8]) -> bool {
    assert.is_empty() || (assert.iter()).any(|a| memchr::memmem::find(body, a).is_some())
}

/// How a response's body is delimited.
pub enum Framing {
    Length(usize),
    Chunked,
    Close,
}

impl Conn {
    async fn fill(&mut self) -> std::io::Result<()> {
        if self.buf.capacity() - self.buf.len() < 16 * 1024 {
            self.buf.reserve(64 * 1024);
        }
        let n = self.s.read_buf(&mut self.buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }

    async fn read_response(&mut self, assert: &[Vec<u8>]) -> std::io::Result<Response> {
        let (status, framing, keep_alive, head_len) = loop {
            if let Some(h) = parse_head(&self.buf)? {
                break h;
            }
            self.fill().await?;
        };
        self.buf.advance(head_len);
        let assert_ok = match framing {
            Framing::Length(n) => {
                while self.buf.len() < n {
                    self.fill().await?;
                }
                let ok = holds(assert, &self.buf[..n]);
                self.buf.advance(n);
                ok
            }
            Framing::Chunked => {
                let mut body = Vec::new();
                loop {
                    match chunk(&self.buf)? {
                        Some((0, used)) => {
                            self.buf.advance(used);
                            break;
                        }
                        Some((size, used)) => {
                            if !assert.is_empty() {
                                body.extend_from_slice(&self.buf[used - size - 2..used - 2]);
                            }
                            self.buf.advance(used);
                        }
                        None => self.fill().await?,
                    }
                }
                holds(assert, &body)
            }
            Framing::Close => {
                while self.fill().await.is_ok() {}
                let ok = holds(assert, &self.buf);
                self.buf.clear();
                return Ok(Response {
                    status,
                    keep_alive: false,
                    assert_ok: ok,
                });
            }
        };
        Ok(Response {
            status,
            keep_alive,
            assert_ok,
        })
    }
}

/// A parsed response head: status, body framing, keep-alive, head length.
pub type Head = (u16, Framing, bool, usize);

/// Parses a response head if complete: status, body framing, keep-alive, head length.
pub fn parse_head(buf: &[u8]) -> std::io::Result<Option<Head>> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut r = httparse::Response::new(&mut headers);
    let n = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(std::io::Error::other(e)),
    };
    let status = r.code.unwrap_or(0);
    let mut framing = Framing::Close;
    let mut keep_alive = r.version == Some(1);
    for h in r.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let len = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| std::io::Error::other("bad content-length"))?;
            framing = Framing::Length(len);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding")
            && h.value.eq_ignore_ascii_case(b"chunked")
        {
            framing = Framing::Chunked;
        } else if h.name.eq_ignore_ascii_case("connection") {
            if h.value.eq_ignore_ascii_case(b"close") {
                keep_alive = false;
            } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                keep_alive = true;
            }
        }
    }
    // 1xx, 204 and 304 have no body.
    if status < 200 || status == 204 || status == 304 {
        framing = Framing::Length(0);
    }
    Ok(Some((status, framing, keep_alive, n)))
}

/// One chunk if complete: (size, bytes used including its CRLFs). The last chunk (size 0) also takes
/// the trailer section's final CRLF (trailers are not expected and are rejected).
pub fn chunk(buf: &[u8]) -> std::io::Result<Option<(usize, usize)>> {
    let Some(eol) = memchr::memmem::find(buf, b"\r\n") else {
        return Ok(None);
    };
    let line = &buf[..eol];
    let hex = line.split(|&b| b == b';').next().unwrap_or(line);
    let size = std::str::from_utf8(hex)
        .ok()
        .and_then(|h| usize::from_str_radix(h.trim(), 16).ok())
        .ok_or_else(|| std::io::Error::other("bad chunk size"))?;
    // A size near usize::MAX must not wrap the sum round to a small, "complete" chunk.
    let used = size
        .checked_add(eol + 4)
        .ok_or_else(|| std::io::Error::other("bad chunk size"))?;
    if buf.len() < used {
        return Ok(None);
    }
    if &buf[used - 2..used] != b"\r\n" {
        return Err(std::io::Error::other("chunk not followed by CRLF"));
    }
    Ok(Some((size, used)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_framing_and_keep_alive() {
        let (s, f, ka, n) = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            .unwrap()
            .unwrap();
        assert_eq!((s, ka, n), (200, true, 38));
        assert!(matches!(f, Framing::Length(5)));
        let (s, f, ka, _) = parse_head(
            b"HTTP/1.1 500 X\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!((s, ka), (500, false));
        assert!(matches!(f, Framing::Chunked));
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le")
            .unwrap()
            .is_none());
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
        let (_, f, _, _) = parse_head(b"HTTP/1.1 204 No\r\n\r\n").unwrap().unwrap();
        assert!(matches!(f, Framing::Length(0)));
    }

    #[test]
    fn chunks() {
        assert_eq!(chunk(b"5\r\nhello\r\n0\r\n").unwrap(), Some((5, 10)));
        assert_eq!(chunk(b"0\r\n\r\n").unwrap(), Some((0, 5)));
        assert_eq!(chunk(b"a;ext=1\r\n0123").unwrap(), None);
        assert!(chunk(b"zz\r\n").is_err());
        assert!(chunk(b"1\r\nabc").is_err());
        // The largest size: refused, not wrapped round to a short chunk (or a panic).
        assert!(chunk(b"ffffffffffffffff\r\nab\r\n").is_err());
    }

    #[test]
    fn request_is_built_once_with_length() {
        let spec = LoadSpec {
            addr: "127.0.0.1:9".parse().unwrap(),
            path: "/services/P".into(),
            headers: vec![("SOAPAction".into(), "urn:x".into())],
            body: b"<a/>".to_vec(),
            more_bodies: Vec::new(),
            users: 1,
            warmup: Duration::ZERO,
            duration: Duration::from_millis(1),
            timeout: Duration::from_secs(1),
            assert_contains: Vec::new(),
            threads: 1,
            requests: None,
        };
        let r = String::from_utf8(build_request(&spec, &spec.body)).unwrap();
        assert_eq!(
            r,
            "POST /services/P HTTP/1.1\r\nHost: 127.0.0.1:9\r\nSOAPAction: urn:x\r\nContent-Length: 4\r\n\r\n<a/>"
        );
    }

    #[test]
    fn drives_the_echo_and_counts_assertions_and_refusals() {
        let echo = sluice_echo::EchoServer::local(Duration::ZERO).unwrap();
        let mut spec = LoadSpec {
            addr: echo.addr(),
            path: "/".into(),
            headers: vec![("Content-Type".into(), "text/xml".into())],
            body: b"<buyStocks/>".to_vec(),
            more_bodies: Vec::new(),
            users: 4,
            warmup: Duration::from_millis(100),
            duration: Duration::from_millis(400),
            timeout: Duration::from_secs(5),
            assert_contains: vec!["buyStocks".into()],
            threads: 2,
            requests: None,
        };
        let r = run(&spec, &mut NoObserver).unwrap();
        assert!(r.ok > 10, "{r:?}");
        assert_eq!(r.errors, Errors::default());
        assert_eq!(r.latency_us.len(), r.ok);
        assert_eq!(r.error_pct(), 0.0);
        // A fixed count: exactly that many, and the run ends when they are done, not at the duration.
        let counted = LoadSpec {
            warmup: Duration::ZERO,
            duration: Duration::from_secs(120),
            requests: Some(50),
            ..spec.clone()
        };
        let r = run(&counted, &mut NoObserver).unwrap();
        assert_eq!((r.ok, r.errors.total()), (50, 0), "{r:?}");
        assert!(r.measured < Duration::from_secs(120), "{r:?}");
        // A response missing the asserted text counts as an assertion error, every time.
        spec.assert_contains = vec!["sellStocks".into()];
        let r = run(&spec, &mut NoObserver).unwrap();
        assert_eq!(r.ok, 0);
        assert!(r.errors.assertion > 10, "{r:?}");
        // Nobody listening: connect errors, paced.
        let addr = echo.addr();
        echo.stop();
        spec.addr = addr;
        let r = run(&spec, &mut NoObserver).unwrap();
        assert_eq!(r.ok, 0);
        assert!(r.errors.connect > 0, "{r:?}");
        assert_eq!(r.error_pct(), 100.0);
    }
}
