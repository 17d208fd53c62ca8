//! The message context: what mediators read and change. It holds no I/O handles: the transport keeps the
//! body stream and looks at `body` to know whether the stream is still the message.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use sluice_config::FaultVersion;
use sluice_expr::{Env, PropScope};
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Request,
    Response,
}

/// The body as far as mediation knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// The original bytes, not read: the transport relays its stream.
    Stream,
    /// The whole message in memory: read from the stream, or made by a mediator.
    Bytes(Bytes),
    /// The start of the original bytes, read until every expression of the flow that reads the body
    /// was decided on them (only expressions over the SOAP header allow it); the transport relays the
    /// rest of its stream after them.
    Head(Bytes),
    /// No body (`NO_ENTITY_BODY`, GET).
    Empty,
}

/// Small ordered property map: a handful of entries is the norm, so a vector beats hashing.
/// A value is a string, or XML (Synapse's OM type: an element or nodes, kept serialised, each
/// element declaring the namespaces it uses).
#[derive(Clone, Debug, Default)]
pub struct Props {
    entries: Vec<(String, String)>,
    /// Names whose value is XML.
    xml: Vec<String>,
}

impl Props {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    fn put(&mut self, name: &str, value: String) {
        match self.entries.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value,
            None => self.entries.push((name.to_owned(), value)),
        }
    }
    /// Sets a string value.
    pub fn set(&mut self, name: &str, value: String) {
        self.put(name, value);
        if !self.xml.is_empty() {
            self.xml.retain(|k| k != name);
        }
    }
    /// Sets an XML value (serialised nodes).
    pub fn set_xml(&mut self, name: &str, xml: String) {
        self.put(name, xml);
        if !self.is_xml(name) {
            self.xml.push(name.to_owned());
        }
    }
    /// Whether the value is XML (type OM) rather than a string.
    pub fn is_xml(&self, name: &str) -> bool {
        self.xml.iter().any(|k| k == name)
    }
    pub fn remove(&mut self, name: &str) {
        self.entries.retain(|(k, _)| k != name);
        self.xml.retain(|k| k != name);
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
    pub fn is_true(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }
}

static MESSAGE_IDS: AtomicU64 = AtomicU64::new(1);

#[derive(Clone)]
pub struct Message {
    pub direction: Direction,
    pub service: std::sync::Arc<str>,
    pub method: Method,
    /// Request path and query as received (kept on the response for logging).
    pub path_and_query: String,
    /// Transport headers of the current message (the `transport` scope).
    pub headers: HeaderMap,
    /// Response status (response path), or the status to answer with (`HTTP_SC`).
    pub status: Option<StatusCode>,
    /// Synapse (`default` scope) properties.
    pub props: Props,
    /// Axis2 scope properties.
    pub axis2: Props,
    /// WS-Addressing To.
    pub to: Option<String>,
    pub body: Body,
    /// The SOAP version of the request, from its Content-Type.
    pub soap: FaultVersion,
    /// The body is a fault made by `makefault` or by Sluice.
    pub is_fault: bool,
    /// Transport headers a mediator set while this was the request: when the request itself is the
    /// answer (`respond`), these go to the client with it (the client's own headers do not).
    pub set_headers: Vec<HeaderName>,
    /// Back-end calls made for this request so far (sends, calls, one-way ones), request and
    /// response side: the transport bounds them.
    pub calls: usize,
    message_id: Option<String>,
}

impl Message {
    pub fn request(
        service: std::sync::Arc<str>,
        method: Method,
        path_and_query: String,
        headers: HeaderMap,
    ) -> Self {
        let soap = soap_version(&headers);
        Message {
            direction: Direction::Request,
            service,
            method,
            path_and_query,
            headers,
            status: None,
            props: Props::default(),
            axis2: Props::default(),
            to: None,
            body: Body::Stream,
            soap,
            is_fault: false,
            set_headers: Vec::new(),
            calls: 0,
            message_id: None,
        }
    }

    /// The response context: properties carry over from the request, headers and status are the back-end's.
    pub fn into_response(self, status: StatusCode, headers: HeaderMap) -> Message {
        let mut axis2 = self.axis2;
        // Per-message Axis2 settings of the request do not apply to the response.
        for k in [
            "HTTP_SC",
            "messageType",
            "ContentType",
            "NO_ENTITY_BODY",
            "FORCE_SC_ACCEPTED",
            "REST_URL_POSTFIX",
        ] {
            axis2.remove(k);
        }
        let mut props = self.props;
        props.remove("RESPONSE");
        Message {
            direction: Direction::Response,
            status: Some(status),
            headers,
            props,
            axis2,
            to: None,
            body: Body::Stream,
            is_fault: false,
            set_headers: Vec::new(),
            ..self
        }
    }

    pub fn message_id(&mut self) -> &str {
        self.message_id.get_or_insert_with(|| {
            format!(
                "urn:uuid:sluice-{:016x}-{:x}",
                std::process::id(),
                MESSAGE_IDS.fetch_add(1, Ordering::Relaxed)
            )
        })
    }

    /// `RESPONSE=true` was set: `send` without an endpoint answers the client.
    pub fn is_response(&self) -> bool {
        self.direction == Direction::Response || self.props.is_true("RESPONSE")
    }

    pub fn soap_action(&self) -> Option<&str> {
        if let Some(a) = self.headers.get("soapaction").and_then(|v| v.to_str().ok()) {
            return Some(a.trim_matches('"'));
        }
        // SOAP 1.2 carries the action as a Content-Type parameter.
        let ct = self
            .headers
            .get(http::header::CONTENT_TYPE)?
            .to_str()
            .ok()?;
        ct.split(';')
            .map(str::trim)
            .find_map(|p| p.strip_prefix("action="))
            .map(|a| a.trim_matches('"'))
    }

    /// Replaces the body with a message made here, with its content type.
    pub fn set_body(&mut self, body: Bytes, content_type: &'static str) {
        self.body = Body::Bytes(body);
        self.headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(content_type),
        );
        self.headers.remove(http::header::CONTENT_LENGTH);
    }

    pub fn set_header(&mut self, name: HeaderName, value: &str) -> Result<(), crate::Error> {
        let v = HeaderValue::from_str(value).map_err(|e| {
            crate::Error::new(
                crate::ErrorKind::Mediation,
                format!("invalid value for header {name}"),
            )
            .with_source(e)
        })?;
        if self.direction == Direction::Request && !self.set_headers.contains(&name) {
            self.set_headers.push(name.clone());
        }
        self.headers.insert(name, v);
        Ok(())
    }
}

/// SOAP version from the Content-Type: `application/soap+xml` is 1.2, `text/xml` 1.1, anything else POX.
/// Runs for every request: compares bytes, no string validation or splitting.
pub fn soap_version(headers: &HeaderMap) -> FaultVersion {
    let Some(ct) = headers.get(http::header::CONTENT_TYPE) else {
        return FaultVersion::Pox;
    };
    let b = ct.as_bytes();
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let b = &b[start..];
    let is = |mime: &[u8]| {
        b.len() >= mime.len()
            && b[..mime.len()].eq_ignore_ascii_case(mime)
            && b[mime.len()..]
                .first()
                .is_none_or(|c| *c == b';' || c.is_ascii_whitespace())
    };
    if is(b"application/soap+xml") {
        FaultVersion::Soap12
    } else if is(b"text/xml") {
        FaultVersion::Soap11
    } else {
        FaultVersion::Pox
    }
}

impl Env for Message {
    fn property(&self, scope: PropScope, name: &str) -> Option<Cow<'_, str>> {
        match scope {
            PropScope::Default | PropScope::Operation => {
                if let Some(v) = self.props.get(name) {
                    return Some(Cow::Borrowed(v));
                }
                match name {
                    "To" => self.to.as_deref().map(Cow::Borrowed),
                    "Action" => self.soap_action().map(Cow::Borrowed),
                    "MessageID" => self.message_id.as_deref().map(Cow::Borrowed),
                    "SYSTEM_TIME" => Some(Cow::Owned(sluice_expr::system_time())),
                    "PROXY_NAME" => Some(Cow::Borrowed(&self.service)),
                    _ => None,
                }
            }
            PropScope::Transport => self
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(Cow::Borrowed),
            PropScope::Axis2 => {
                if let Some(v) = self.axis2.get(name) {
                    return Some(Cow::Borrowed(v));
                }
                match name {
                    "HTTP_SC" => self.status.map(|s| Cow::Owned(s.as_u16().to_string())),
                    "HTTP_METHOD" => Some(Cow::Borrowed(self.method.as_str())),
                    "REST_URL_POSTFIX" => None,
                    _ => None,
                }
            }
            PropScope::System => std::env::var(name).ok().map(Cow::Owned),
        }
    }

    /// Synapse's `$url:NAME`: the first query parameter whose name matches ignoring case, its
    /// value percent-decoded (up to a second `=`, as Synapse splits the pair).
    fn url_param(&self, name: &str) -> Option<Cow<'_, str>> {
        let q = self.path_and_query.split_once('?')?.1;
        q.split('&').find_map(|kv| {
            let mut parts = kv.split('=');
            let k = parts.next()?;
            let v = parts.next().unwrap_or("");
            k.eq_ignore_ascii_case(name).then(|| percent_decoded(v))
        })
    }
}

/// `%XX` sequences decoded (as UTF-8, lossy); anything else, and a `%` not followed by two hex
/// digits, kept as it is.
pub(crate) fn percent_decoded(v: &str) -> Cow<'_, str> {
    if !v.contains('%') {
        return Cow::Borrowed(v);
    }
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| char::from(c).to_digit(16);
        match (
            b[i],
            b.get(i + 1).and_then(|&c| hex(c)),
            b.get(i + 2).and_then(|&c| hex(c)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_params_match_ignoring_case_and_are_percent_decoded() {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("text/xml"),
        );
        let m = Message::request(
            "P".into(),
            Method::GET,
            "/services/P?Symbol=IBM%20Corp&n=caf%C3%A9&bad=100%&pair=a=b&empty".to_owned(),
            h,
        );
        let p = |n: &str| m.url_param(n).map(Cow::into_owned);
        assert_eq!(p("symbol").as_deref(), Some("IBM Corp"));
        assert_eq!(p("n").as_deref(), Some("café"));
        assert_eq!(p("bad").as_deref(), Some("100%"));
        assert_eq!(p("pair").as_deref(), Some("a"));
        assert_eq!(p("empty").as_deref(), Some(""));
        assert_eq!(p("missing"), None);
    }

    #[test]
    fn soap_version_from_content_type() {
        let v = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert(http::header::CONTENT_TYPE, ct.parse().unwrap());
            soap_version(&h)
        };
        assert_eq!(v("text/xml; charset=UTF-8"), FaultVersion::Soap11);
        assert_eq!(v("TEXT/XML"), FaultVersion::Soap11);
        assert_eq!(
            v(" application/soap+xml;action=urn:x"),
            FaultVersion::Soap12
        );
        assert_eq!(v("text/xmlx"), FaultVersion::Pox);
        assert_eq!(v("application/json"), FaultVersion::Pox);
        assert_eq!(soap_version(&HeaderMap::new()), FaultVersion::Pox);
    }
}
