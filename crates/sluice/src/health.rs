//! WSO2 MI's health probes, on MI's internal HTTP API port (9201 by default: MI's 9191 and its
//! default port offset of 10), for Kubernetes and load balancers.
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /liveness` | 200 `{"server" : "started"}`, as MI, once the process serves |
//! | `GET /healthz`, every artifact deployed, serving | 200 `{"version":…, "update_level":…, "status" : "ready"}` |
//! | `GET /healthz`, an artifact left out | 500, `"status": "not ready, faulty CAPPs detected"` and their names under `"Faulty CAPPs"`, as MI |
//! | `GET /healthz`, workers still starting, or draining after SIGTERM | 503, `"status": "not ready"` (MI has no drain; a load balancer should stop sending) |
//! | `GET /metric-service/metrics` | 200, the request counts and latencies in Prometheus' text format, with MI's names ([`sluice_transport::metrics`]); 404 when `[metric_handler] enable = false` |
//! | `GET /dashboard` | the dashboard page: artifacts, live rates, p99, endpoints (activate and deactivate), log level; it logs in to the management API and reads the metrics page |
//! | another path | 404; another method, 405 |
//!
//! The probes' bodies are MI's, `application/json`; `version` is Sluice's. The listener runs on a thread
//! of its own, so a busy worker never delays a probe, and it answers until the workers have
//! finished draining.

use crate::management::{Call, Management};
use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use sluice_transport::metrics::Metrics;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// What the probes report.
pub struct Health {
    state: AtomicU8,
    /// The names of the artifacts that were not deployed (a reload's replace them).
    faulty: Mutex<Vec<String>>,
    /// The request counters, once the workers have them.
    metrics: OnceLock<Arc<Metrics>>,
    /// The management API, once the plan is served.
    management: OnceLock<Arc<Management>>,
}

/// The metrics page's path, MI's.
pub const METRICS_PATH: &str = "/metric-service/metrics";

/// The dashboard's path (Sluice's; MI's is a separate application, the Integration Control Plane).
pub const DASHBOARD_PATH: &str = "/dashboard";
const DASHBOARD: &str = include_str!("management/dashboard.html");
const HTML: &str = "text/html; charset=utf-8";

const JSON: &str = "application/json";
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

const STARTING: u8 = 0;
const SERVING: u8 = 1;
const DRAINING: u8 = 2;

impl Health {
    pub fn new(faulty: Vec<String>) -> Arc<Health> {
        Arc::new(Health {
            state: AtomicU8::new(STARTING),
            faulty: Mutex::new(faulty),
            metrics: OnceLock::new(),
            management: OnceLock::new(),
        })
    }

    /// The artifacts a reload left out, instead of those before.
    pub fn set_faulty(&self, faulty: Vec<String>) {
        if let Ok(mut f) = self.faulty.lock() {
            *f = faulty;
        }
    }

    /// Serves the management API under `/management` from now on.
    pub fn set_management(&self, m: Arc<Management>) {
        let _ = self.management.set(m);
    }

    /// Serves `metrics` at [`METRICS_PATH`] from now on.
    pub fn set_metrics(&self, metrics: Arc<Metrics>) {
        let _ = self.metrics.set(metrics);
    }

    /// Every worker is serving.
    pub fn serving(&self) {
        self.state.store(SERVING, Ordering::Release);
    }

    /// Shutdown began: in-flight requests finish, new ones should go elsewhere.
    pub fn draining(&self) {
        self.state.store(DRAINING, Ordering::Release);
    }

    /// The answer to a request on the internal port (`loopback`: it came from this machine).
    async fn respond(
        &self,
        req: Request<hyper::body::Incoming>,
        loopback: bool,
    ) -> Response<Full<Bytes>> {
        let path = req.uri().path();
        let management = path
            .strip_prefix("/management")
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .and(self.management.get());
        let Some(m) = management else {
            let (status, kind, body) = self.answer(req.method(), path);
            return reply(status, kind, Bytes::from(body));
        };
        let (parts, body) = req.into_parts();
        // A management request's body is small JSON; a larger one is refused.
        let body = match http_body_util::Limited::new(body, 64 * 1024)
            .collect()
            .await
        {
            Ok(b) => b.to_bytes(),
            Err(_) => {
                let e = br#"{"Error":"the request body is too large or was cut off"}"#;
                return reply(StatusCode::BAD_REQUEST, JSON, Bytes::from_static(e));
            }
        };
        let call = Call {
            method: &parts.method,
            path: &parts.uri.path()["/management".len()..],
            query: parts.uri.query(),
            authorization: parts
                .headers
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok()),
            body: &body,
            loopback,
        };
        if let Some(file) = m.download(&call) {
            return match file {
                Ok(bytes) => reply(
                    StatusCode::OK,
                    "application/octet-stream",
                    Bytes::from(bytes),
                ),
                Err((status, json)) => reply(
                    status,
                    JSON,
                    json.map_or_else(Bytes::new, |v| Bytes::from(v.to_string())),
                ),
            };
        }
        let (status, json) = m.answer(&call);
        let mut r = reply(
            status,
            JSON,
            json.map_or_else(Bytes::new, |v| Bytes::from(v.to_string())),
        );
        if status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Basic realm=\"Sluice\""),
            );
        }
        r
    }

    /// The answer to `method` on `path`: status, content type, body.
    fn answer(&self, method: &Method, path: &str) -> (StatusCode, &'static str, String) {
        // The dashboard: a page that reads the management API and the metrics, from this port.
        if path == DASHBOARD_PATH && method == Method::GET && self.management.get().is_some() {
            return (StatusCode::OK, HTML, DASHBOARD.to_owned());
        }
        let metrics = self.metrics.get().filter(|_| path == METRICS_PATH);
        if path != "/liveness" && path != "/healthz" && metrics.is_none() {
            return (
                StatusCode::NOT_FOUND,
                JSON,
                r#"{"error":"not found"}"#.to_owned(),
            );
        }
        if method != Method::GET {
            let body = r#"{"error":"method not allowed"}"#.to_owned();
            return (StatusCode::METHOD_NOT_ALLOWED, JSON, body);
        }
        if let Some(m) = metrics {
            return (StatusCode::OK, PROMETHEUS_TEXT, m.render());
        }
        let (status, body) = self.probe(path);
        (status, JSON, body)
    }

    /// A probe's answer (`/liveness` or `/healthz`).
    fn probe(&self, path: &str) -> (StatusCode, String) {
        if path == "/liveness" {
            return (StatusCode::OK, r#"{"server" : "started"}"#.to_owned());
        }
        let head = format!(
            r#"{{"version":"{}", "update_level":"0", "#,
            env!("CARGO_PKG_VERSION")
        );
        let faulty = self.faulty.lock().map(|f| f.clone()).unwrap_or_default();
        if !faulty.is_empty() {
            let names = serde_json::to_string(&faulty).unwrap_or_default();
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    r#"{head}"status": "not ready, faulty CAPPs detected", "Faulty CAPPs" : {names}}}"#
                ),
            );
        }
        match self.state.load(Ordering::Acquire) {
            SERVING => (StatusCode::OK, format!(r#"{head}"status" : "ready"}}"#)),
            _ => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(r#"{head}"status": "not ready"}}"#),
            ),
        }
    }
}

fn reply(status: StatusCode, kind: &'static str, body: Bytes) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, kind)
        .body(Full::new(body))
        .expect("a valid response")
}

/// A listener over TLS beside the plain one (MI's 9164 for the management API).
pub type TlsInternal = (std::net::TcpListener, tokio_rustls::TlsAcceptor);

/// Serves the probes (and metrics and the management API) on `listener`, and on `tls` when given,
/// from a thread of its own until `stop` turns true. Returns once that thread is set up (its
/// runtime and listeners: what it holds open is held from then on).
pub fn spawn(
    listener: std::net::TcpListener,
    tls: Option<TlsInternal>,
    health: Arc<Health>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let (ready, set_up) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("sluice-health".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener);
                let tls =
                    tls.and_then(|(l, a)| Some((tokio::net::TcpListener::from_std(l).ok()?, a)));
                let _ = ready.send(());
                let Ok(listener) = listener else {
                    return;
                };
                loop {
                    let (conn, secure) = tokio::select! {
                        c = listener.accept() => (c, false),
                        c = accept_tls(tls.as_ref()) => (c, true),
                        _ = stop.wait_for(|s| *s) => return,
                    };
                    let Ok((stream, peer)) = conn else { continue };
                    let health = health.clone();
                    let loopback = peer.ip().is_loopback();
                    let acceptor = tls.as_ref().map(|(_, a)| a.clone()).filter(|_| secure);
                    tokio::spawn(async move {
                        let Some(acceptor) = acceptor else {
                            return serve_conn(stream, health, loopback).await;
                        };
                        let handshake = std::time::Duration::from_secs(10);
                        if let Ok(Ok(s)) =
                            tokio::time::timeout(handshake, acceptor.accept(stream)).await
                        {
                            serve_conn(s, health, loopback).await;
                        }
                    });
                }
            });
            rt.shutdown_background();
        })?;
    let _ = set_up.recv();
    Ok(thread)
}

/// The next connection on the TLS listener; never, without one.
async fn accept_tls(
    tls: Option<&(tokio::net::TcpListener, tokio_rustls::TlsAcceptor)>,
) -> std::io::Result<(tokio::net::TcpStream, std::net::SocketAddr)> {
    match tls {
        Some((l, _)) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Serves one connection's requests.
async fn serve_conn<IO>(io: IO, health: Arc<Health>, loopback: bool)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req: Request<_>| {
        let health = health.clone();
        async move { Ok::<_, Infallible>(health.respond(req, loopback).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(std::time::Duration::from_secs(10))
        .serve_connection(hyper_util::rt::TokioIo::new(io), service)
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_answer_as_mi_and_readiness_follows_the_state() {
        let h = Health::new(Vec::new());
        assert_eq!(
            h.answer(&Method::GET, "/liveness"),
            (StatusCode::OK, JSON, r#"{"server" : "started"}"#.to_owned())
        );
        assert_eq!(
            h.answer(&Method::GET, "/healthz").0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        h.serving();
        let (status, _, body) = h.answer(&Method::GET, "/healthz");
        assert_eq!(status, StatusCode::OK);
        assert!(body.ends_with(r#""status" : "ready"}"#), "{body}");
        h.draining();
        assert_eq!(
            h.answer(&Method::GET, "/healthz").0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            h.answer(&Method::POST, "/healthz").0,
            StatusCode::METHOD_NOT_ALLOWED
        );
        assert_eq!(h.answer(&Method::GET, "/other").0, StatusCode::NOT_FOUND);
        // The metrics page once the workers count, not before.
        assert_eq!(
            h.answer(&Method::GET, METRICS_PATH).0,
            StatusCode::NOT_FOUND
        );
        let services = [sluice_mediation::plan::Service {
            name: "P".into(),
            api_context: None,
        }];
        let m = Metrics::new(&services, &Default::default(), Default::default());
        h.set_metrics(m);
        let (status, kind, page) = h.answer(&Method::GET, METRICS_PATH);
        assert_eq!((status, kind), (StatusCode::OK, PROMETHEUS_TEXT));
        assert!(page.contains("wso2_integration_proxy_request_count_total{service_name=\"P\",service_type=\"proxy\"} 0\n"), "{page}");
        let bad = Health::new(vec!["Bad\"Proxy".into()]);
        bad.serving();
        let (status, _, body) = bad.answer(&Method::GET, "/healthz");
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            body.ends_with(
                r#""status": "not ready, faulty CAPPs detected", "Faulty CAPPs" : ["Bad\"Proxy"]}"#
            ),
            "{body}"
        );
    }
}
