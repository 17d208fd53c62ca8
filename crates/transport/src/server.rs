//! The HTTP/1.1 listener: accept loop, one task per connection, graceful shutdown.

use crate::access_log::AccessLog;
use crate::deploy::{ConnEngine, WorkerEngine};
use crate::engine::Transport;
use crate::metered::Metered;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use sluice_balance::{Counted, Seat};
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// The https listener beside the plain one: its socket, the TLS acceptor, and this worker's seat in
/// the balance of https connections.
pub struct TlsListener {
    pub listener: TcpListener,
    pub acceptor: TlsAcceptor,
    pub seat: Seat,
}

#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// How long in-flight requests may take to finish after shutdown starts.
    pub grace: Duration,
    /// A client must send its request head within this time.
    pub header_read_timeout: Duration,
    /// The largest request head (request line and headers): a larger one is answered 431.
    pub max_head: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            grace: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(30),
            max_head: 64 * 1024,
        }
    }
}

/// A connection's task and whether it has begun a request: at shutdown the ones that have not (a
/// client that connected and sent no complete head holds nothing in flight) are ended at once;
/// hyper's graceful shutdown would wait for their first head until the header read timeout.
struct Fresh {
    began: Arc<AtomicBool>,
    task: tokio::task::AbortHandle,
}

/// Whether an accept error means the process is out of file descriptors (or the system is): then
/// accepting pauses briefly instead of spinning or exiting.
fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23) | Some(24)) // ENFILE, EMFILE
}

/// The next https connection (never, without an https listener). Cancel-safe, as [`Seat::accept`].
async fn accept_tls(
    tls: &mut Option<TlsListener>,
) -> std::io::Result<(TcpStream, Counted, TlsAcceptor)> {
    match tls {
        Some(t) => t
            .seat
            .accept(&t.listener)
            .await
            .map(|(s, c)| (s, c, t.acceptor.clone())),
        None => std::future::pending().await,
    }
}

/// Serves until `shutdown` resolves, then stops accepting and waits up to `opts.grace` for open
/// connections to finish their requests. `seat` is this worker's place among the workers accepting on
/// the same socket ([`Seat::alone`] for one): a connection it accepts goes to the worker with the
/// fewest open ones, and it serves those the others hand it. `tls`, when given, is served alike, each
/// connection after its TLS handshake (which must end within the header read timeout).
pub async fn serve(
    listener: TcpListener,
    engine: Arc<WorkerEngine>,
    shutdown: impl Future<Output = ()>,
    opts: ServerOptions,
    mut seat: Seat,
    mut tls: Option<TlsListener>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(opts.header_read_timeout)
        // hyper answers 431 to a longer head (and closes the connection).
        .max_header_size(opts.max_head)
        .keep_alive(true)
        .writev(false);
    tokio::pin!(shutdown);
    let mut last_warning: Option<Instant> = None;
    let mut sweep = tokio::time::interval(crate::engine::BACKEND_SWEEP_INTERVAL);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Every connection's task until it ends (pruned at each sweep), for shutdown.
    let mut fresh: Vec<Fresh> = Vec::new();
    // A connection served here: its task holds the balance's count until it ends.
    let (log, traffic) = {
        let e = engine.current().1;
        (e.access_log(), e.traffic())
    };
    let start = |stream: TcpStream, count: Counted| {
        let peer = stream.peer_addr().ok().map(|a| a.ip());
        let stream = Metered::new(stream, traffic.clone());
        let t = Transport::Http;
        match &log {
            None => spawn_conn(
                &graceful,
                &builder,
                stream,
                service(&engine, t, peer),
                count,
            ),
            Some(log) => {
                let svc = logged_service(&engine, log.clone(), t, peer);
                spawn_conn(&graceful, &builder, stream, svc, count)
            }
        }
    };
    // An https connection: the handshake in its own task, then served as the others.
    let start_tls = |stream: TcpStream, count: Counted, acceptor: TlsAcceptor| {
        let peer = stream.peer_addr().ok().map(|a| a.ip());
        let stream = Metered::new(stream, traffic.clone());
        let t = Transport::Https;
        let at = (&graceful, &builder);
        let tls = (stream, acceptor, opts.header_read_timeout);
        match &log {
            None => spawn_tls(at, tls, service(&engine, t, peer), count),
            Some(log) => spawn_tls(
                at,
                tls,
                logged_service(&engine, log.clone(), t, peer),
                count,
            ),
        }
    };
    loop {
        let accepted = tokio::select! {
            _ = sweep.tick() => {
                engine.current().1.sweep_backends();
                fresh.retain(|f| !f.task.is_finished() && !f.began.load(Ordering::Relaxed));
                // Memory freed since the last tick goes back to the system, busy or idle.
                sluice_xml::release_free_memory();
                continue;
            }
            r = seat.accept(&listener) => r.map(|(s, c)| (s, c, None)),
            r = accept_tls(&mut tls) => r.map(|(s, c, a)| (s, c, Some(a))),
            _ = &mut shutdown => break,
        };
        match accepted {
            Ok((stream, count, acceptor)) => {
                let _ = stream.set_nodelay(true);
                fresh.push(match acceptor {
                    None => start(stream, count),
                    Some(a) => start_tls(stream, count, a),
                });
            }
            Err(e) => accept_failed(&e, &mut last_warning).await,
        }
    }
    drop(listener);
    // Connections another worker handed over just before: served like the rest.
    for (stream, count) in seat.close() {
        fresh.push(start(stream, count));
    }
    if let Some(mut t) = tls {
        drop(t.listener);
        for (stream, count) in t.seat.close() {
            fresh.push(start_tls(stream, count, t.acceptor.clone()));
        }
    }
    let idle = fresh
        .iter()
        .filter(|f| !f.began.load(Ordering::Relaxed))
        .inspect(|f| f.task.abort())
        .count();
    if idle > 0 {
        tracing::debug!("closed {idle} connection(s) that had not begun a request");
    }
    tracing::info!(
        "shutting down: no new connections; waiting up to {:?} for in-flight requests",
        opts.grace
    );
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("all connections closed"),
        _ = tokio::time::sleep(opts.grace) => tracing::warn!("grace period over; closing remaining connections"),
    }
    Ok(())
}

/// What a connection's service takes and gives.
type Request = http::Request<hyper::body::Incoming>;
type Answer = http::Response<crate::body::RelayBody>;

/// A connection's service: each request to `answer`, noting that the connection began one (a
/// connection that never did is closed at once on shutdown).
fn counting<F, Fut>(answer: F) -> (Arc<AtomicBool>, impl Service)
where
    F: Fn(Request) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Answer, Infallible>> + Send + 'static,
{
    let began = Arc::new(AtomicBool::new(false));
    let began_here = began.clone();
    let svc = service_fn(move |req| {
        began_here.store(true, Ordering::Relaxed);
        answer(req)
    });
    (began, svc)
}

/// Each request to the engine. `peer`: the client's address.
fn service(
    engine: &Arc<WorkerEngine>,
    transport: Transport,
    peer: Option<std::net::IpAddr>,
) -> (Arc<AtomicBool>, impl Service) {
    let conn = ConnEngine::new(engine);
    counting(move |req| {
        let engine = conn.get();
        async move { Ok(engine.handle(req, transport, peer).await) }
    })
}

/// [`service`] with a line per request in the access log: a type of its own, so that a server
/// without one pays nothing for it (a future able to log costs every request a larger move).
fn logged_service(
    engine: &Arc<WorkerEngine>,
    log: Arc<AccessLog>,
    transport: Transport,
    peer: Option<std::net::IpAddr>,
) -> (Arc<AtomicBool>, impl Service) {
    let conn = ConnEngine::new(engine);
    counting(move |mut req: Request| {
        let (engine, log) = (conn.get(), log.clone());
        // The line needs the correlation ID: made here, before the engine would.
        crate::correlation::ensure(req.headers_mut());
        let entry = log.entry(&req, peer);
        async move {
            let r = engine.handle(req, transport, peer).await;
            log.write(&entry, &r);
            Ok(r)
        }
    })
}

/// What a connection's service is.
trait Service:
    hyper::service::Service<Request, Response = Answer, Error = Infallible, Future: Send>
    + Send
    + 'static
{
}

impl<S> Service for S where
    S: hyper::service::Service<Request, Response = Answer, Error = Infallible, Future: Send>
        + Send
        + 'static
{
}

/// Serves a plain connection with `svc` on a task of its own; the balance's `count` is held until
/// it ends.
fn spawn_conn(
    graceful: &GracefulShutdown,
    builder: &http1::Builder,
    stream: Metered<TcpStream>,
    (began, svc): (Arc<AtomicBool>, impl Service),
    count: Counted,
) -> Fresh {
    let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), svc));
    let task = tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!("connection ended: {e}");
        }
        drop(count);
    });
    Fresh {
        began,
        task: task.abort_handle(),
    }
}

/// An https connection: the handshake on its own task, then served with `svc` as the others.
fn spawn_tls(
    (graceful, builder): (&GracefulShutdown, &http1::Builder),
    (stream, acceptor, handshake_timeout): (Metered<TcpStream>, TlsAcceptor, Duration),
    (began, svc): (Arc<AtomicBool>, impl Service),
    count: Counted,
) -> Fresh {
    let (watcher, builder) = (graceful.watcher(), builder.clone());
    let task = tokio::spawn(async move {
        match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => {
                let conn = watcher.watch(builder.serve_connection(TokioIo::new(tls), svc));
                if let Err(e) = conn.await {
                    tracing::debug!("https connection ended: {e}");
                }
            }
            Ok(Err(e)) => tracing::debug!("TLS handshake failed: {e}"),
            Err(_) => tracing::debug!("TLS handshake not done within {handshake_timeout:?}"),
        }
        drop(count);
    });
    Fresh {
        began,
        task: task.abort_handle(),
    }
}

/// An accept that failed: out of descriptors, a warning (at most every 5 s) and a pause before the
/// next accept instead of spinning; anything else is logged and the next accept goes on.
async fn accept_failed(e: &std::io::Error, last_warning: &mut Option<Instant>) {
    if !out_of_descriptors(e) {
        tracing::debug!("accept failed: {e}");
        return;
    }
    if last_warning.is_none_or(|t| t.elapsed() > Duration::from_secs(5)) {
        tracing::warn!("out of file descriptors ({e}); pausing accepts until connections close");
        *last_warning = Some(Instant::now());
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
}
