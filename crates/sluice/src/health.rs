//! WSO2 MI's health probes, on MI's internal HTTP API port (9201 by default: MI's 9191 and its
//! default port offset of 10), for Kubernetes and load balancers.
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /liveness` | 200 `{"server" : "started"}`, as MI, once the process serves |
//! | `GET /healthz`, every artifact deployed, serving | 200 `{"version":…, "update_level":…, "status" : "ready"}` |
//! | `GET /healthz`, an artifact left out | 500, `"status": "not ready, faulty CAPPs detected"` and their names under `"Faulty CAPPs"`, as MI |
//! | `GET /healthz`, workers still starting, or draining after SIGTERM | 503, `"status": "not ready"` (MI has no drain; a load balancer should stop sending) |
//! | another path | 404; another method, 405 |
//!
//! The bodies are MI's, `application/json`; `version` is Sluice's. The listener runs on a thread
//! of its own, so a busy worker never delays a probe, and it answers until the workers have
//! finished draining.

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// What the probes report.
pub struct Health {
    state: AtomicU8,
    /// The names of the artifacts that were not deployed.
    faulty: Vec<String>,
}

const STARTING: u8 = 0;
const SERVING: u8 = 1;
const DRAINING: u8 = 2;

impl Health {
    pub fn new(faulty: Vec<String>) -> Arc<Health> {
        Arc::new(Health {
            state: AtomicU8::new(STARTING),
            faulty,
        })
    }

    /// Every worker is serving.
    pub fn serving(&self) {
        self.state.store(SERVING, Ordering::Release);
    }

    /// Shutdown began: in-flight requests finish, new ones should go elsewhere.
    pub fn draining(&self) {
        self.state.store(DRAINING, Ordering::Release);
    }

    /// The answer to `method` on `path`.
    fn answer(&self, method: &Method, path: &str) -> (StatusCode, String) {
        if path != "/liveness" && path != "/healthz" {
            return (StatusCode::NOT_FOUND, r#"{"error":"not found"}"#.to_owned());
        }
        if method != Method::GET {
            return (
                StatusCode::METHOD_NOT_ALLOWED,
                r#"{"error":"method not allowed"}"#.to_owned(),
            );
        }
        if path == "/liveness" {
            return (StatusCode::OK, r#"{"server" : "started"}"#.to_owned());
        }
        let head = format!(
            r#"{{"version":"{}", "update_level":"0", "#,
            env!("CARGO_PKG_VERSION")
        );
        if !self.faulty.is_empty() {
            let names = serde_json::to_string(&self.faulty).unwrap_or_default();
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

/// Serves the probes on `listener` from a thread of its own until `stop` turns true. Returns once
/// that thread is set up (its runtime and listener: what it holds open is held from then on).
pub fn spawn(
    listener: std::net::TcpListener,
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
                let _ = ready.send(());
                let Ok(listener) = listener else {
                    return;
                };
                loop {
                    let conn = tokio::select! {
                        c = listener.accept() => c,
                        _ = stop.wait_for(|s| *s) => return,
                    };
                    let Ok((stream, _)) = conn else { continue };
                    let health = health.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req: Request<_>| {
                            let (status, body) = health.answer(req.method(), req.uri().path());
                            let resp = Response::builder()
                                .status(status)
                                .header(http::header::CONTENT_TYPE, "application/json")
                                .body(Full::new(Bytes::from(body)))
                                .expect("a valid response");
                            async move { Ok::<_, Infallible>(resp) }
                        });
                        let io = hyper_util::rt::TokioIo::new(stream);
                        let _ = hyper::server::conn::http1::Builder::new()
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(std::time::Duration::from_secs(10))
                            .serve_connection(io, service)
                            .await;
                    });
                }
            });
            rt.shutdown_background();
        })?;
    let _ = set_up.recv();
    Ok(thread)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_answer_as_mi_and_readiness_follows_the_state() {
        let h = Health::new(Vec::new());
        assert_eq!(
            h.answer(&Method::GET, "/liveness"),
            (StatusCode::OK, r#"{"server" : "started"}"#.to_owned())
        );
        assert_eq!(
            h.answer(&Method::GET, "/healthz").0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        h.serving();
        let (status, body) = h.answer(&Method::GET, "/healthz");
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
        let bad = Health::new(vec!["Bad\"Proxy".into()]);
        bad.serving();
        let (status, body) = bad.answer(&Method::GET, "/healthz");
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            body.ends_with(
                r#""status": "not ready, faulty CAPPs detected", "Faulty CAPPs" : ["Bad\"Proxy"]}"#
            ),
            "{body}"
        );
    }
}
