//! The echo back-end of the measuring kit (and of `sluice` with no arguments).
//!
//! Any method, any path: 200 with the request's own body and Content-Type. The body streams back as it
//! arrives (a request with Content-Length gets the same Content-Length; a chunked one a chunked reply), so
//! a 512 MiB request costs no memory. An optional delay, applied with a timer before answering, comes from
//! the process options or, per request, from the `X-Echo-Delay-Ms` header (the header wins). Connections
//! are kept alive. One single-threaded runtime per thread, all accepting on one socket, so the echo
//! outruns the proxies it serves.

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use sluice_balance::Seat;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

/// The per-request delay header, in milliseconds.
pub const DELAY_HEADER: &str = "x-echo-delay-ms";

/// Longest delay honoured, whatever a header asks for.
pub const MAX_DELAY: Duration = Duration::from_secs(600);

#[derive(Clone, Copy, Debug, Default)]
pub struct EchoOptions {
    /// Delay before every answer (a request's `X-Echo-Delay-Ms` header replaces it).
    pub delay: Duration,
}

/// The delay for one request: its header if it has a valid one, else the process default.
pub fn delay_for(headers: &hyper::HeaderMap, default: Duration) -> Duration {
    headers
        .get(DELAY_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(default, Duration::from_millis)
        .min(MAX_DELAY)
}

async fn echo(req: Request<Incoming>, opts: EchoOptions) -> Result<Response<Incoming>, Infallible> {
    let delay = delay_for(req.headers(), opts.delay);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let mut res = Response::builder();
    if let Some(ct) = req.headers().get(hyper::header::CONTENT_TYPE) {
        res = res.header(hyper::header::CONTENT_TYPE, ct.clone());
    }
    // hyper sets Content-Length from the body's exact size hint (the request's Content-Length).
    Ok(res
        .body(req.into_body())
        .expect("a status and one valid header always build"))
}

/// Serves echo on `listener` until `stop` completes (in-flight connections are then dropped). `seat`
/// is this worker's place among those accepting on the same socket ([`Seat::alone`] for one).
pub async fn serve(
    listener: tokio::net::TcpListener,
    opts: EchoOptions,
    stop: impl Future<Output = ()>,
    mut seat: Seat,
) -> std::io::Result<()> {
    let mut builder = http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .writev(false);
    tokio::pin!(stop);
    loop {
        let (sock, count) = tokio::select! {
            r = seat.accept(&listener) => match r {
                Ok(conn) => conn,
                Err(e) if is_transient(&e) => {
                    // Out of descriptors or a reset before accept: back off, never spin or die.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                Err(e) => return Err(e),
            },
            () = &mut stop => return Ok(()),
        };
        let _ = sock.set_nodelay(true);
        let conn =
            builder.serve_connection(TokioIo::new(sock), service_fn(move |req| echo(req, opts)));
        tokio::spawn(async move {
            let _ = conn.await;
            drop(count);
        });
    }
}

fn is_transient(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::Interrupted
    ) || e.raw_os_error().is_some_and(|c| c == 24 || c == 23) // EMFILE, ENFILE
}

/// Binds a listening socket with a deep backlog (bursts of thousands of connects are not refused).
pub fn bind(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let sock = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    sock.set_reuse_address(true)?;
    sock.bind(&addr.into())?;
    sock.listen(4096)?;
    sock.set_nonblocking(true)?;
    Ok(sock.into())
}

/// An echo server on its own threads, for the bench kit, tests and `sluice` with no arguments.
pub struct EchoServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl EchoServer {
    /// Starts `threads` single-threaded runtimes accepting on `listener`.
    pub fn start(
        listener: std::net::TcpListener,
        threads: usize,
        opts: EchoOptions,
    ) -> std::io::Result<EchoServer> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let (tx, rx) = tokio::sync::watch::channel(false);
        let mut handles = Vec::new();
        for (i, seat) in sluice_balance::seats(threads).into_iter().enumerate() {
            let l = listener.try_clone()?;
            let mut rx = rx.clone();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            handles.push(
                std::thread::Builder::new()
                    .name(format!("echo-{i}"))
                    .spawn(move || {
                        rt.block_on(async move {
                            let Ok(l) = tokio::net::TcpListener::from_std(l) else {
                                return;
                            };
                            let stop = async move {
                                let _ = rx.wait_for(|s| *s).await;
                            };
                            let _ = serve(l, opts, stop, seat).await;
                        });
                    })?,
            );
        }
        Ok(EchoServer {
            addr,
            stop: Some(tx),
            threads: handles,
        })
    }

    /// Binds `addr` (port 0 picks one) and starts.
    pub fn bind_and_start(
        addr: SocketAddr,
        threads: usize,
        opts: EchoOptions,
    ) -> std::io::Result<EchoServer> {
        EchoServer::start(bind(addr)?, threads, opts)
    }

    /// One thread on a free port of 127.0.0.1 answering after `delay`: the echo tests run against.
    pub fn local(delay: Duration) -> std::io::Result<EchoServer> {
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        EchoServer::bind_and_start(addr, 1, EchoOptions { delay })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and joins the threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(true);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Instant;

    fn start(delay_ms: u64) -> EchoServer {
        EchoServer::local(Duration::from_millis(delay_ms)).unwrap()
    }

    fn exchange(addr: SocketAddr, req: &[u8], reads: usize) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(req).unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        // Read until `reads` complete responses ended with the body "</x>".
        while out.windows(4).filter(|w| w == b"</x>").count() < reads {
            let n = s.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "echo closed early: {}",
                String::from_utf8_lossy(&out)
            );
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn echoes_body_content_type_and_length_on_a_kept_alive_connection() {
        let e = start(0);
        let one = "POST /any/path?q=1 HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml; charset=UTF-8\r\nContent-Length: 7\r\n\r\n<a></x>";
        let out = exchange(e.addr(), format!("{one}{one}").as_bytes(), 2);
        assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 2, "{out}");
        assert_eq!(
            out.matches("content-type: text/xml; charset=UTF-8").count(),
            2
        );
        assert_eq!(out.matches("content-length: 7\r\n").count(), 2, "{out}");
        assert!(!out.contains("connection: close"));
    }

    #[test]
    fn chunked_request_gets_a_chunked_echo() {
        let e = start(0);
        let req = "PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n<a>\r\n4\r\n</x>\r\n0\r\n\r\n";
        let out = exchange(e.addr(), req.as_bytes(), 1);
        assert!(out.contains("transfer-encoding: chunked"), "{out}");
    }

    #[test]
    fn delay_from_options_and_from_header() {
        let e = start(150);
        let req = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n</x>";
        let t = Instant::now();
        exchange(e.addr(), req.as_bytes(), 1);
        assert!(t.elapsed() >= Duration::from_millis(150));
        // The header replaces the process delay: 0 answers at once. A wide bound, not a tight one
        // (a busy machine can be slow): the process delay it replaces is 10 s.
        let req =
            "POST / HTTP/1.1\r\nHost: x\r\nX-Echo-Delay-Ms: 0\r\nContent-Length: 4\r\n\r\n</x>";
        let e = start(10_000);
        let t = Instant::now();
        exchange(e.addr(), req.as_bytes(), 1);
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn delay_header_parsing() {
        let mut h = hyper::HeaderMap::new();
        let d = Duration::from_millis(5);
        assert_eq!(delay_for(&h, d), d);
        h.insert(DELAY_HEADER, "1000".parse().unwrap());
        assert_eq!(delay_for(&h, d), Duration::from_secs(1));
        h.insert(DELAY_HEADER, "soon".parse().unwrap());
        assert_eq!(delay_for(&h, d), d);
        h.insert(DELAY_HEADER, "99999999".parse().unwrap());
        assert_eq!(delay_for(&h, d), MAX_DELAY);
    }
}
