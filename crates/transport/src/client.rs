//! The back-end client: keep-alive HTTP/1.1 connections pooled per host. Each serving thread has its own
//! engine and so its own pool: the lock below is never contended. Errors map to the error taxonomy.

use crate::body::RelayBody;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use sluice_mediation::{EndpointPlan, Error, ErrorKind};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpStream;

/// Idle connections kept per back-end host, at most.
const MAX_IDLE_PER_HOST: usize = 1024;

#[derive(Clone)]
pub struct BackendClient {
    inner: Arc<Inner>,
}

struct Inner {
    connect_timeout: Duration,
    /// "host:port" -> connections, ready or still finishing a response.
    pool: Mutex<HashMap<String, Vec<SendRequest<RelayBody>>>>,
}

impl BackendClient {
    pub fn new(connect_timeout: Duration) -> Self {
        BackendClient {
            inner: Arc::new(Inner {
                connect_timeout,
                pool: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// A pooled connection that can take a request now, if any. Closed ones are dropped on the way.
    fn checkout(&self, key: &str) -> Option<SendRequest<RelayBody>> {
        let mut pool = self.inner.pool.lock().unwrap_or_else(|p| p.into_inner());
        let conns = pool.get_mut(key)?;
        let mut i = 0;
        while i < conns.len() {
            if conns[i].is_closed() {
                conns.swap_remove(i);
            } else if conns[i].is_ready() {
                return Some(conns.swap_remove(i));
            } else {
                i += 1;
            }
        }
        None
    }

    /// Returns a connection to the pool as soon as the response head is in: it becomes ready again when
    /// the response body has been relayed, and `checkout` only hands out ready ones.
    fn checkin(&self, key: &str, conn: SendRequest<RelayBody>) {
        let mut pool = self.inner.pool.lock().unwrap_or_else(|p| p.into_inner());
        // get_mut first: the key String is only allocated the first time a host is seen.
        match pool.get_mut(key) {
            Some(conns) if conns.len() < MAX_IDLE_PER_HOST => conns.push(conn),
            Some(_) => {}
            None => {
                pool.insert(key.to_owned(), vec![conn]);
            }
        }
    }

    async fn connect(&self, ep: &EndpointPlan, key: &str) -> Result<SendRequest<RelayBody>, Error> {
        let stream =
            match tokio::time::timeout(self.inner.connect_timeout, TcpStream::connect(key)).await {
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
        let _ = stream.set_nodelay(true);
        let (send, conn) = http1::Builder::new()
            .writev(false)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| Error::new(ErrorKind::ConnectFailed, ep.describe()).with_source(e))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("back-end connection ended: {e}");
            }
        });
        Ok(send)
    }

    pub async fn send(
        &self,
        mut req: http::Request<RelayBody>,
        ep: &EndpointPlan,
    ) -> Result<http::Response<Incoming>, Error> {
        let key = ep.authority.as_str();
        // hyper's client connection wants origin-form.
        if let Some(pq) = ep.uri.path_and_query() {
            *req.uri_mut() = http::Uri::from(pq.clone());
        }
        // A pooled connection may have been closed by the back-end meanwhile: a request that was not
        // written to it is retried on another, then on a new connection.
        for _ in 0..3 {
            let Some(mut conn) = self.checkout(key) else {
                break;
            };
            match conn.try_send_request(req).await {
                Ok(resp) => {
                    self.checkin(key, conn);
                    return Ok(resp);
                }
                Err(mut e) => match e.take_message() {
                    Some(r) => req = r,
                    None => return Err(map_error(e.into_error(), ep)),
                },
            }
        }
        let mut conn = self.connect(ep, key).await?;
        match conn.send_request(req).await {
            Ok(resp) => {
                self.checkin(key, conn);
                Ok(resp)
            }
            Err(e) => Err(map_error(e, ep)),
        }
    }
}

fn map_error(e: hyper::Error, ep: &EndpointPlan) -> Error {
    let kind = if e.is_parse() || e.is_parse_status() || e.is_parse_too_large() {
        ErrorKind::BackendProtocol
    } else if e.is_timeout() {
        ErrorKind::ResponseTimeout
    } else {
        ErrorKind::ConnectionClosed
    };
    Error::new(kind, ep.describe()).with_source(e)
}
