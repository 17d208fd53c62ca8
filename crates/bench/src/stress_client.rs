//! The clients of `sluice-bench stress` ([`crate::stress`]): connections held open, slow bodies,
//! a large body, and a normal request now and then. Responses are read with the load generator's
//! parsing ([`crate::load::parse_head`], [`crate::load::chunk`]). Every loop ends by itself: by count,
//! by the connection's end, or by a deadline.

use crate::load::{self, Framing};
use bytes::{Buf, BytesMut};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::{sleep_until, Instant};

/// A whole request, head and body.
pub fn request(
    path: &str,
    addr: SocketAddr,
    headers: &[(String, String)],
    body: &[u8],
) -> Arc<Vec<u8>> {
    let mut r = format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut r = r.into_bytes();
    r.extend_from_slice(body);
    Arc::new(r)
}

/// Outcomes by kind: statuses, and what went wrong otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kinds {
    pub status: BTreeMap<u16, u64>,
    pub connect: u64,
    pub io: u64,
    pub timeout: u64,
    /// Closed by Sluice before a complete response.
    pub closed: u64,
    pub reset: u64,
    pub write_failed: u64,
    /// Still open when the scenario's time was up.
    pub still_open: u64,
}

impl Kinds {
    pub fn ok(&self) -> u64 {
        self.status
            .iter()
            .filter(|(s, _)| (200..300).contains(*s))
            .map(|(_, n)| n)
            .sum()
    }

    pub fn add_end(&mut self, e: &SlowEnd) {
        match e {
            SlowEnd::Complete => {}
            SlowEnd::ConnectFailed => self.connect += 1,
            SlowEnd::Closed => self.closed += 1,
            SlowEnd::Reset => self.reset += 1,
            SlowEnd::BadResponse => self.io += 1,
            SlowEnd::StillOpen => self.still_open += 1,
        }
    }

    pub fn add_large(&mut self, e: &LargeEnd) {
        self.add_end(&e.end);
        if e.write_failed {
            self.write_failed += 1;
        }
    }
}

impl std::fmt::Display for Kinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = self
            .status
            .iter()
            .filter(|(s, _)| !(200..300).contains(*s))
            .map(|(s, n)| format!("status {s}: {n}"))
            .collect();
        for (name, n) in [
            ("connect", self.connect),
            ("io", self.io),
            ("timeout", self.timeout),
            ("closed early", self.closed),
            ("reset", self.reset),
            ("write failed", self.write_failed),
            ("still open", self.still_open),
        ] {
            if n > 0 {
                parts.push(format!("{name}: {n}"));
            }
        }
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

async fn fill(s: &mut TcpStream, buf: &mut BytesMut) -> std::io::Result<()> {
    if buf.capacity() - buf.len() < 8 * 1024 {
        buf.reserve(32 * 1024);
    }
    if s.read_buf(buf).await? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// Reads one whole response; its status.
async fn read_response(s: &mut TcpStream, buf: &mut BytesMut) -> std::io::Result<u16> {
    let (status, framing, _, head) = loop {
        if let Some(h) = load::parse_head(buf)? {
            break h;
        }
        fill(s, buf).await?;
    };
    buf.advance(head);
    match framing {
        Framing::Length(n) => {
            while buf.len() < n {
                fill(s, buf).await?;
            }
            buf.advance(n);
        }
        Framing::Chunked => loop {
            match load::chunk(buf)? {
                Some((0, used)) => {
                    buf.advance(used);
                    break;
                }
                Some((_, used)) => buf.advance(used),
                None => fill(s, buf).await?,
            }
        },
        Framing::Close => {
            while fill(s, buf).await.is_ok() {}
            buf.clear();
        }
    }
    Ok(status)
}

enum Fail {
    Connect,
    Io,
}

/// Connects, sends `request`, reads the answer: its status and the connection.
async fn exchange(addr: SocketAddr, request: &[u8]) -> Result<(u16, TcpStream), Fail> {
    let mut s = TcpStream::connect(addr).await.map_err(|_| Fail::Connect)?;
    let _ = s.set_nodelay(true);
    s.write_all(request).await.map_err(|_| Fail::Io)?;
    let mut buf = BytesMut::with_capacity(8 * 1024);
    let status = read_response(&mut s, &mut buf)
        .await
        .map_err(|_| Fail::Io)?;
    Ok((status, s))
}

/// Makes `n` connections (at most 256 being made at once), each sending `request` once and kept
/// open; holds them all for `hold` after the last answer, then closes them. The outcomes and how
/// many were held at once.
pub async fn hold_many(
    addr: SocketAddr,
    request: Arc<Vec<u8>>,
    n: usize,
    hold: Duration,
    timeout: Duration,
) -> (Kinds, usize) {
    let gate = Arc::new(tokio::sync::Semaphore::new(256));
    let mut set = JoinSet::new();
    let mut kinds = Kinds::default();
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let Ok(permit) = gate.clone().acquire_owned().await else {
            break;
        };
        let request = request.clone();
        set.spawn(async move {
            let r = tokio::time::timeout(timeout, exchange(addr, &request)).await;
            drop(permit);
            r
        });
        // Collect finished ones as we go, so the set stays small.
        while let Some(done) = set.try_join_next() {
            record(done, &mut kinds, &mut held);
        }
    }
    while let Some(done) = set.join_next().await {
        record(done, &mut kinds, &mut held);
    }
    let count = held.len();
    tokio::time::sleep(hold).await;
    drop(held);
    (kinds, count)
}

type Exchanged = Result<Result<(u16, TcpStream), Fail>, tokio::time::error::Elapsed>;

fn record(
    done: Result<Exchanged, tokio::task::JoinError>,
    kinds: &mut Kinds,
    held: &mut Vec<TcpStream>,
) {
    match done {
        Ok(Ok(Ok((status, s)))) => {
            *kinds.status.entry(status).or_insert(0) += 1;
            held.push(s);
        }
        Ok(Ok(Err(Fail::Connect))) => kinds.connect += 1,
        Ok(Ok(Err(Fail::Io))) | Err(_) => kinds.io += 1,
        Ok(Err(_)) => kinds.timeout += 1,
    }
}

/// One request on a new connection: its latency (connect included), or what went wrong.
async fn probe(addr: SocketAddr, request: &[u8]) -> Result<Duration, String> {
    let t = Instant::now();
    match tokio::time::timeout(Duration::from_secs(30), exchange(addr, request)).await {
        Ok(Ok((status, _))) if (200..300).contains(&status) => Ok(t.elapsed()),
        Ok(Ok((status, _))) => Err(format!("status {status}")),
        Ok(Err(Fail::Connect)) => Err("connect".into()),
        Ok(Err(Fail::Io)) => Err("io".into()),
        Err(_) => Err("timeout".into()),
    }
}

/// `n` requests one after another, `gap` apart.
pub async fn probe_latencies(
    addr: SocketAddr,
    request: Arc<Vec<u8>>,
    n: usize,
    gap: Duration,
) -> Vec<Result<Duration, String>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(probe(addr, &request).await);
        tokio::time::sleep(gap).await;
    }
    out
}

/// The slow-body clients.
#[derive(Clone, Debug)]
pub struct SlowSpec {
    pub addr: SocketAddr,
    pub path: String,
    pub body: Vec<u8>,
    pub clients: usize,
    pub gap_min: Duration,
    pub gap_max: Duration,
    /// The longest the scenario runs.
    pub max: Duration,
}

/// How a connection ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SlowEnd {
    /// The whole response came.
    Complete,
    ConnectFailed,
    /// Sluice closed the connection before a whole response.
    Closed,
    Reset,
    /// The response could not be parsed.
    BadResponse,
    /// Open when time was up.
    #[default]
    StillOpen,
}

impl std::fmt::Display for SlowEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SlowEnd::Complete => "response complete",
            SlowEnd::ConnectFailed => "connect failed",
            SlowEnd::Closed => "closed by Sluice",
            SlowEnd::Reset => "reset",
            SlowEnd::BadResponse => "bad response",
            SlowEnd::StillOpen => "still open at the end",
        })
    }
}

/// One slow client's story, times from the scenario's start.
#[derive(Clone, Debug, Default)]
pub struct SlowResult {
    pub status: Option<u16>,
    pub status_at: Option<Duration>,
    pub ended_at: Option<Duration>,
    pub end: SlowEnd,
    /// Body bytes written.
    pub sent: usize,
}

/// How the body of a response being read is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// The head has not come yet.
    Head,
    Length(usize),
    Chunked,
    Close,
}

/// What a read of the response brought: the end of the exchange when it ended (closed, complete,
/// unparseable, reset), else `None`. Notes when the status came.
fn response_read(
    n: std::io::Result<usize>,
    buf: &mut BytesMut,
    expect: &mut Expect,
    (status, status_at, start): (&mut Option<u16>, &mut Option<Duration>, Instant),
) -> Option<SlowEnd> {
    match n {
        Ok(0) => Some(SlowEnd::Closed),
        Ok(_) => {
            let done = take_response(buf, status, expect);
            if status.is_some() && status_at.is_none() {
                *status_at = Some(start.elapsed());
            }
            match done {
                Ok(true) => Some(SlowEnd::Complete),
                Ok(false) => None,
                Err(()) => Some(SlowEnd::BadResponse),
            }
        }
        Err(_) => Some(SlowEnd::Reset),
    }
}

/// Reads what came: the status once the head is complete, then the body as the head frames it
/// (chunks are consumed as they complete). Whether the response is complete; `Err` when it cannot
/// be parsed.
fn take_response(
    buf: &mut BytesMut,
    status: &mut Option<u16>,
    expect: &mut Expect,
) -> Result<bool, ()> {
    if *expect == Expect::Head {
        match load::parse_head(buf) {
            Ok(Some((s, framing, _, head))) => {
                *status = Some(s);
                buf.advance(head);
                *expect = match framing {
                    Framing::Length(n) => Expect::Length(n),
                    Framing::Chunked => Expect::Chunked,
                    Framing::Close => Expect::Close,
                };
            }
            Ok(None) => return Ok(false),
            Err(_) => return Err(()),
        }
    }
    match *expect {
        Expect::Length(n) => Ok(buf.len() >= n),
        Expect::Chunked => loop {
            match load::chunk(buf) {
                Ok(Some((0, used))) => {
                    buf.advance(used);
                    return Ok(true);
                }
                Ok(Some((_, used))) => buf.advance(used),
                Ok(None) => return Ok(false),
                Err(_) => return Err(()),
            }
        },
        Expect::Head | Expect::Close => Ok(false),
    }
}

/// Sends the head at once and the body one byte every `gap`, reading whatever comes back, until
/// the response is complete, the connection ends, or `deadline`.
async fn slow_one(
    addr: SocketAddr,
    head: Arc<Vec<u8>>,
    body: Arc<Vec<u8>>,
    gap: Duration,
    start: Instant,
    deadline: Instant,
) -> SlowResult {
    let mut r = SlowResult::default();
    let Ok(s) = TcpStream::connect(addr).await else {
        r.end = SlowEnd::ConnectFailed;
        return r;
    };
    let _ = s.set_nodelay(true);
    let (mut rd, mut wr) = s.into_split();
    let mut writing = wr.write_all(&head).await.is_ok();
    let mut buf = BytesMut::with_capacity(4096);
    let mut next = Instant::now() + gap;
    let mut expect = Expect::Head;
    r.end = loop {
        tokio::select! {
            () = sleep_until(next), if writing && r.sent < body.len() => {
                match wr.write_all(&body[r.sent..r.sent + 1]).await {
                    Ok(()) => r.sent += 1,
                    Err(_) => writing = false,
                }
                next += gap;
            }
            n = rd.read_buf(&mut buf) => {
                let at = (&mut r.status, &mut r.status_at, start);
                if let Some(end) = response_read(n, &mut buf, &mut expect, at) {
                    break end;
                }
            }
            () = sleep_until(deadline) => break SlowEnd::StillOpen,
        }
    };
    if r.end != SlowEnd::StillOpen {
        r.ended_at = Some(start.elapsed());
    }
    r
}

/// Runs the slow clients (their gaps spread evenly from `gap_min` to `gap_max`) and, every
/// second while they last, one normal request on a new connection; every 5 s `echo_conns()` is
/// sampled. The clients' stories, the normal requests' latencies, the samples (time, count).
pub async fn slow_with_probes(
    spec: SlowSpec,
    normal: Arc<Vec<u8>>,
    echo_conns: impl Fn() -> usize + Send + 'static,
) -> (
    Vec<SlowResult>,
    Vec<Result<Duration, String>>,
    Vec<(Duration, usize)>,
) {
    let start = Instant::now();
    let deadline = start + spec.max;
    let head = Arc::new(
        format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: text/xml\r\nSOAPAction: urn:buyStocks\r\nContent-Length: {}\r\n\r\n",
            spec.path,
            spec.addr,
            spec.body.len()
        )
        .into_bytes(),
    );
    let body = Arc::new(spec.body);
    let mut set = JoinSet::new();
    let span = spec.gap_max.saturating_sub(spec.gap_min);
    let last = spec.clients.saturating_sub(1).max(1) as u32;
    for i in 0..spec.clients {
        let gap = spec.gap_min + span * i as u32 / last;
        set.spawn(slow_one(
            spec.addr,
            head.clone(),
            body.clone(),
            gap,
            start,
            deadline,
        ));
    }
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    let addr = spec.addr;
    let probes = tokio::spawn(async move {
        let (mut lat, mut conns) = (Vec::new(), Vec::new());
        let mut tick = 0u64;
        while !flag.load(Ordering::Relaxed) && Instant::now() < deadline {
            if tick.is_multiple_of(5) {
                conns.push((start.elapsed(), echo_conns()));
            }
            lat.push(probe(addr, &normal).await);
            tick += 1;
            sleep_until(start + Duration::from_secs(tick)).await;
        }
        conns.push((start.elapsed(), echo_conns()));
        (lat, conns)
    });
    let mut results = Vec::with_capacity(spec.clients);
    while let Some(r) = set.join_next().await {
        results.push(r.unwrap_or_default());
    }
    done.store(true, Ordering::Relaxed);
    let (lat, conns) = probes.await.unwrap_or_default();
    (results, lat, conns)
}

/// How the large request ended.
#[derive(Clone, Debug, Default)]
pub struct LargeEnd {
    pub end: SlowEnd,
    /// Writing the body failed (Sluice stopped reading it and closed).
    pub write_failed: bool,
}

impl std::fmt::Display for LargeEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.end)?;
        if self.write_failed {
            f.write_str(", the body's writing failed")?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Default)]
pub struct LargeResult {
    pub status: Option<u16>,
    pub status_at: Option<Duration>,
    pub sent: usize,
    pub end: LargeEnd,
}

/// The large body in 64 KiB pieces (with their chunk framing when chunked), the last one cut to
/// the total.
fn pieces(total: usize, chunked: bool) -> impl Iterator<Item = Vec<u8>> {
    let block = crate::payload::generate(64 * 1024, false).into_bytes();
    let n = total.div_ceil(block.len());
    (0..n).map(move |i| {
        let len = block.len().min(total - i * block.len());
        let mut p = Vec::with_capacity(len + 16);
        if chunked {
            p.extend_from_slice(format!("{len:x}\r\n").as_bytes());
        }
        p.extend_from_slice(&block[..len]);
        if chunked {
            p.extend_from_slice(b"\r\n");
            if i + 1 == n {
                p.extend_from_slice(b"0\r\n\r\n");
            }
        }
        p
    })
}

/// POSTs `total` bytes as fast as Sluice takes them while reading its answer; stops writing when
/// the answer is complete, the connection ends or `max` has passed.
pub async fn large_post(
    addr: SocketAddr,
    path: &str,
    total: usize,
    chunked: bool,
    max: Duration,
) -> LargeResult {
    let start = Instant::now();
    let deadline = start + max;
    let mut r = LargeResult::default();
    let Ok(s) = TcpStream::connect(addr).await else {
        r.end.end = SlowEnd::ConnectFailed;
        return r;
    };
    let (mut rd, mut wr) = s.into_split();
    let framing = if chunked {
        "Transfer-Encoding: chunked".to_owned()
    } else {
        format!("Content-Length: {total}")
    };
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/xml\r\nSOAPAction: urn:buyStocks\r\n{framing}\r\n\r\n"
    );
    let mut writing = wr.write_all(head.as_bytes()).await.is_ok();
    let mut pieces = pieces(total, chunked);
    let (mut piece, mut at) = (pieces.next().unwrap_or_default(), 0);
    let (mut buf, mut expect) = (BytesMut::with_capacity(8192), Expect::Head);
    r.end.end = loop {
        tokio::select! {
            // One write at a time (cancel-safe: a write that loses the race wrote nothing).
            w = wr.write(&piece[at..]), if writing => match w {
                Ok(n) => {
                    at += n;
                    r.sent += n;
                    if at == piece.len() {
                        match pieces.next() {
                            Some(p) => (piece, at) = (p, 0),
                            None => writing = false,
                        }
                    }
                }
                Err(_) => {
                    writing = false;
                    r.end.write_failed = true;
                }
            },
            n = rd.read_buf(&mut buf) => {
                let at = (&mut r.status, &mut r.status_at, start);
                if let Some(end) = response_read(n, &mut buf, &mut expect, at) {
                    break end;
                }
            }
            () = sleep_until(deadline) => break SlowEnd::StillOpen,
        }
    };
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_name_what_went_wrong() {
        let mut k = Kinds::default();
        assert_eq!(k.to_string(), "none");
        k.status.insert(200, 3);
        k.status.insert(413, 1);
        k.add_end(&SlowEnd::Reset);
        k.add_large(&LargeEnd {
            end: SlowEnd::Complete,
            write_failed: true,
        });
        assert_eq!(k.ok(), 3);
        assert_eq!(k.to_string(), "status 413: 1, reset: 1, write failed: 1");
    }

    #[test]
    fn pieces_add_up_to_the_total() {
        let total = 4 * 64 * 1024 + 5;
        let plain: usize = pieces(total, false).map(|p| p.len()).sum();
        assert_eq!(plain, total);
        let chunked: Vec<u8> = pieces(total, true).flatten().collect();
        assert!(chunked.starts_with(b"10000\r\n"));
        assert!(chunked.ends_with(b"\r\n5\r\n<soap\r\n0\r\n\r\n"));
    }

    /// Against the in-process echo: held connections are answered 200, slow clients get their
    /// answer as the echo streams it back, and a large body is echoed whole.
    #[test]
    fn the_clients_against_the_echo() {
        let echo = sluice_echo::EchoServer::local(Duration::ZERO).unwrap();
        let addr = echo.addr();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let req = request("/x", addr, &[], b"<a/>");
        let (k, held) = rt.block_on(hold_many(
            addr,
            req.clone(),
            20,
            Duration::ZERO,
            Duration::from_secs(10),
        ));
        assert_eq!((k.ok(), held), (20, 20), "{k}");
        let slow = SlowSpec {
            addr,
            path: "/x".into(),
            body: b"abc".to_vec(),
            clients: 3,
            gap_min: Duration::from_millis(10),
            gap_max: Duration::from_millis(30),
            max: Duration::from_secs(10),
        };
        let (rs, lat, conns) = rt.block_on(slow_with_probes(slow, req, || 7));
        assert_eq!(rs.len(), 3);
        assert!(rs
            .iter()
            .all(|r| r.status == Some(200) && r.end == SlowEnd::Complete && r.sent == 3));
        assert!(lat.iter().all(Result::is_ok) && !lat.is_empty());
        assert_eq!(conns.last().map(|c| c.1), Some(7));
        for chunked in [false, true] {
            let r = rt.block_on(large_post(
                addr,
                "/x",
                300_000,
                chunked,
                Duration::from_secs(20),
            ));
            assert_eq!(r.status, Some(200), "chunked {chunked}");
            assert_eq!(r.sent > 300_000, chunked);
            assert_eq!(r.end.end, SlowEnd::Complete, "chunked {chunked}");
        }
        echo.stop();
    }
}
