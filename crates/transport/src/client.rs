//! The pooled back-end client: keep-alive connections per host, TCP_NODELAY, errors mapped to the error
//! taxonomy.

use crate::body::RelayBody;
use hyper::body::Incoming;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use sluice_mediation::{EndpointPlan, Error, ErrorKind};
use std::time::Duration;

#[derive(Clone)]
pub struct BackendClient {
    inner: Client<HttpConnector, RelayBody>,
}

impl BackendClient {
    pub fn new(connect_timeout: Duration) -> Self {
        let mut conn = HttpConnector::new();
        conn.set_nodelay(true);
        conn.set_connect_timeout(Some(connect_timeout));
        conn.set_keepalive(Some(Duration::from_secs(60)));
        conn.enforce_http(true);
        let inner = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .retry_canceled_requests(true)
            .set_host(false)
            .build(conn);
        BackendClient { inner }
    }

    pub async fn send(
        &self,
        req: http::Request<RelayBody>,
        ep: &EndpointPlan,
    ) -> Result<http::Response<Incoming>, Error> {
        self.inner.request(req).await.map_err(|e| map_error(e, ep))
    }
}

fn map_error(e: hyper_util::client::legacy::Error, ep: &EndpointPlan) -> Error {
    let kind = classify(&e);
    Error::new(kind, ep.describe()).with_source(e)
}

fn classify(e: &hyper_util::client::legacy::Error) -> ErrorKind {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let connect = e.is_connect();
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return if connect {
                    ErrorKind::ConnectTimeout
                } else {
                    ErrorKind::ResponseTimeout
                };
            }
        }
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_parse() || h.is_parse_status() || h.is_parse_too_large() {
                return ErrorKind::BackendProtocol;
            }
            if h.is_timeout() {
                return ErrorKind::ResponseTimeout;
            }
        }
        if s.to_string().contains("deadline has elapsed") || s.to_string().contains("timed out") {
            return if connect {
                ErrorKind::ConnectTimeout
            } else {
                ErrorKind::ResponseTimeout
            };
        }
        src = s.source();
    }
    if connect {
        ErrorKind::ConnectFailed
    } else {
        ErrorKind::ConnectionClosed
    }
}
