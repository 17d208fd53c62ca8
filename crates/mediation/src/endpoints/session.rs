//! Session affinity of a load-balance endpoint (`<session type>`): a client stays on the child it
//! was first sent to, as Synapse's session dispatchers keep it.
//!
//! | `type` | The session is | Bound |
//! |---|---|---|
//! | `simpleClientSession` | the text of the request's `syn:ClientID` SOAP header block (`http://ws.apache.org/ns/synapse`) | when its first request is sent |
//! | `http` | a cookie (`name=value`) | when a child's response sets it (`Set-Cookie`); later requests that send it back go to that child |
//!
//! A session unused for `sessionTimeout` ms is forgotten; at most [`MAX_SESSIONS`] are kept (when
//! full, expired ones are dropped, and a new one is not bound if none had expired). A bound child
//! that is not ready (suspended) gives way: the message goes round robin, and the session moves.

use crate::message::{Body, Message};
use sluice_config as cfg;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most sessions one endpoint keeps.
pub const MAX_SESSIONS: usize = 100_000;

const SYNAPSE_NS: &str = "http://ws.apache.org/ns/synapse";

#[derive(Debug)]
pub struct Sessions {
    kind: cfg::SessionKind,
    timeout: Option<Duration>,
    /// Session id to (child index, last use).
    bound: Mutex<HashMap<String, (usize, Instant)>>,
}

impl Sessions {
    pub fn new(s: &cfg::Session) -> Sessions {
        Sessions {
            kind: s.kind,
            timeout: s.timeout_ms.map(Duration::from_millis),
            bound: Mutex::new(HashMap::new()),
        }
    }

    /// The session ids `msg` carries.
    pub(super) fn ids_of(&self, msg: &Message) -> Vec<String> {
        match self.kind {
            cfg::SessionKind::ClientId => client_id(msg).into_iter().collect(),
            cfg::SessionKind::Http => msg
                .headers
                .get_all(http::header::COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(';'))
                .map(str::trim)
                .filter(|c| c.contains('='))
                .map(str::to_owned)
                .collect(),
        }
    }

    fn fresh(&self, last: Instant, now: Instant) -> bool {
        self.timeout
            .is_none_or(|t| now.saturating_duration_since(last) < t)
    }

    /// The child the first of `ids` that is bound and fresh is on (its use noted).
    pub(super) fn child_of(&self, ids: &[String], now: Instant) -> Option<usize> {
        let mut map = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        for id in ids {
            if let Some((child, last)) = map.get_mut(id) {
                if self.fresh(*last, now) {
                    *last = now;
                    return Some(*child);
                }
            }
        }
        None
    }

    /// Binds `id` to `child`.
    pub(super) fn bind(&self, id: String, child: usize, now: Instant) {
        let mut map = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_SESSIONS && !map.contains_key(&id) {
            map.retain(|_, (_, last)| self.fresh(*last, now));
            if map.len() >= MAX_SESSIONS {
                return;
            }
        }
        map.insert(id, (child, now));
    }

    /// Whether sessions are bound when the first request is sent (not by a response).
    pub(super) fn bound_by_request(&self) -> bool {
        self.kind == cfg::SessionKind::ClientId
    }

    /// After `child` answered: an `http` session binds the cookies its response set.
    pub(super) fn after_response(&self, headers: &http::HeaderMap, child: usize, now: Instant) {
        if self.kind != cfg::SessionKind::Http {
            return;
        }
        for v in headers.get_all(http::header::SET_COOKIE) {
            let Some(pair) = v.to_str().ok().and_then(|c| c.split(';').next()) else {
                continue;
            };
            let pair = pair.trim();
            if pair.contains('=') {
                self.bind(pair.to_owned(), child, now);
            }
        }
    }
}

/// The text of the request's `syn:ClientID` SOAP header block (the body is in memory: a group's
/// send reads it first).
fn client_id(msg: &Message) -> Option<String> {
    let Body::Bytes(b) = &msg.body else {
        return None;
    };
    let doc = sluice_xml::Document::parse(b).ok()?;
    let header = doc.soap_header()?;
    let id = header
        .child_elements()
        .find(|e| e.name() == "ClientID" && e.namespace_uri() == Some(SYNAPSE_NS))?;
    Some(id.text_content().trim().to_owned()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_session_is_the_cookie_a_child_set_and_ends_unused_after_its_timeout() {
        let s = Sessions::new(&cfg::Session {
            kind: cfg::SessionKind::Http,
            timeout_ms: Some(1000),
        });
        let now = Instant::now();
        let mut set = http::HeaderMap::new();
        set.append(
            http::header::SET_COOKIE,
            "JSESSIONID=x1; Path=/".parse().unwrap(),
        );
        s.after_response(&set, 1, now);
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::COOKIE,
            "theme=dark; JSESSIONID=x1".parse().unwrap(),
        );
        let msg = Message::request("P".into(), http::Method::POST, "/".into(), h);
        let ids = s.ids_of(&msg);
        assert_eq!(ids, ["theme=dark", "JSESSIONID=x1"]);
        assert_eq!(s.child_of(&ids, now + Duration::from_millis(500)), Some(1));
        // Used at 500 ms: still fresh at 1,400, gone 1 s after its last use.
        assert_eq!(s.child_of(&ids, now + Duration::from_millis(1400)), Some(1));
        assert_eq!(s.child_of(&ids, now + Duration::from_millis(2500)), None);
        assert!(!s.bound_by_request());
    }
}
