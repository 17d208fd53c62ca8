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

/// What a `call` with a property target keeps of the message before it and puts back after: the
/// message is then the one from before the call again (a request stays a request, answered as
/// one), with the properties set since.
#[derive(Clone, Debug)]
pub struct Saved {
    pub direction: Direction,
    pub body: Body,
    pub headers: HeaderMap,
    pub status: Option<StatusCode>,
    pub soap: FaultVersion,
    pub set_headers: Few<HeaderName>,
    pub is_fault: bool,
    pub rest: crate::rest::Rest,
}

impl Message {
    /// Keeps the message aside ([`Message::saved`]).
    pub fn save(&mut self) {
        self.saved.push(Saved {
            direction: self.direction,
            body: self.body.clone(),
            headers: self.headers.clone(),
            status: self.status,
            soap: self.soap,
            set_headers: self.set_headers.clone(),
            is_fault: self.is_fault,
            rest: self.rest.clone(),
        });
    }

    /// The message kept aside last is the message again; `false` when there is none.
    pub fn restore(&mut self) -> bool {
        let Some(s) = self.saved.pop() else {
            return false;
        };
        self.direction = s.direction;
        self.body = s.body;
        self.headers = s.headers;
        self.status = s.status;
        self.soap = s.soap;
        self.set_headers = s.set_headers;
        self.is_fault = s.is_fault;
        self.rest = s.rest;
        self.json_out = None;
        true
    }
}

static MESSAGE_IDS: AtomicU64 = AtomicU64::new(1);

/// What an `aggregate` has gathered of the copies one `clone` made.
pub struct Gather {
    /// How many copies the clone made.
    pub copies: usize,
    pub state: std::sync::Mutex<Gathered>,
}

#[derive(Default)]
pub struct Gathered {
    /// What the aggregate's expression selected in each response so far, in arrival order.
    pub parts: Vec<String>,
    /// The aggregate has completed: later copies are dropped.
    pub done: bool,
    /// The aggregate the copies reached, and the first message it gathered: what the merged
    /// message is made from, also when the engine completes it because every copy has ended.
    pub plan: Option<std::sync::Arc<crate::plan::AggregatePlan>>,
    pub first: Option<Box<Message>>,
    /// When the first message was gathered (a `completeCondition timeout` counts from it).
    pub first_at: Option<std::time::Instant>,
}

impl Gather {
    pub fn new(copies: usize) -> Self {
        Gather {
            copies,
            state: std::sync::Mutex::new(Gathered::default()),
        }
    }

    /// Whether the aggregate the copies reached has completed.
    pub fn completed(&self) -> bool {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).done
    }

    /// When the aggregate the copies reached completes with what it has (its `completeCondition
    /// timeout` after the first message it gathered), once it has gathered one.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let t = st.plan.as_ref()?.timeout?;
        if st.done {
            return None;
        }
        Some(st.first_at? + t)
    }
}

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
    /// What `<header name="Action">` did to the action (`None`: it is the one received).
    pub action: Option<ActionChange>,
    /// What goes out instead of the body, and its Content-Type, when the last run made the message
    /// JSON while its body is XML ([`crate::json::json_out`]); the body keeps the XML.
    pub json_out: Option<(Bytes, HeaderValue)>,
    pub body: Body,
    /// The SOAP version of the request, from its Content-Type.
    pub soap: FaultVersion,
    /// The body is a fault made by `makefault` or by Sluice.
    pub is_fault: bool,
    /// A `text/xml` request without SOAPAction, or the response to one: plain XML to Synapse and
    /// MI ([`crate::rest`]).
    pub rest: crate::rest::Rest,
    /// Transport headers a mediator set while this was the request: when the request itself is the
    /// answer (`respond`), these go to the client with it (the client's own headers do not).
    pub set_headers: Few<HeaderName>,
    /// Back-end calls made for this request so far (sends, calls, one-way ones), request and
    /// response side: the transport bounds them.
    pub calls: usize,
    /// The parameters of the templates being run, innermost last (`$func:`).
    pub func: Few<Vec<(String, String)>>,
    /// The copies of one request a `clone` made share this: where `aggregate` gathers them.
    pub gather: Option<std::sync::Arc<Gather>>,
    /// Messages kept aside by `call`s whose response goes into a property, innermost last:
    /// restored once the response is in it.
    pub saved: Few<Saved>,
    /// MI 4.4's variables (the `variable` mediator; `${vars.NAME}` reads them).
    pub vars: Vars,
    /// The client's address (Axis2's `REMOTE_ADDR`), when known.
    pub remote: Option<std::net::IpAddr>,
    /// Places this request holds under throttle ids ([`crate::mediators::throttle`]).
    pub permits: crate::mediators::throttle::Permits,
    /// Set when the request's mediation must stop (its deadline passed, or its client went away):
    /// the executor checks it between mediators and fails with [`crate::ErrorKind::Stopped`].
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The request's correlation ID (MI's `activityid` header, taken from the client or made),
    /// for the log lines the message causes.
    pub correlation: Correlation,
    /// The span its work is traced under, when tracing is on (boxed: off, it costs a word).
    pub trace: Option<Box<TraceParent>>,
    message_id: Option<String>,
    /// The `onError` sequence of the innermost sequence that sent the message on (Synapse's
    /// fault handler stack at the send): it handles the back-end's failure instead of the
    /// proxy's fault sequence.
    pub fault_handler: Option<std::sync::Arc<crate::plan::SeqPlan>>,
    /// A response to a plain XML (REST) request that an endpoint's `format` sent as SOAP: it goes
    /// back to the client as plain XML, its Body's payload, as Synapse answers a REST client.
    pub reply_pox: bool,
}

/// A span as W3C trace context names it: what a message's sequences and back-end calls are traced
/// under (the transport's OpenTelemetry spans).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub flags: u8,
}

/// A request's correlation ID (MI's `activityid`): the client's header, or one Sluice made. A
/// made one is not put among the headers mediation sees: it is written into the back-end request as
/// it leaves (a header map that grows costs more than the rest of a pass-through), and shown in
/// log lines.
/// A made correlation ID's 128 bits, as two words (a `u128` would align every future holding a
/// message to 16 bytes, and make them dearer to move).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Id(pub u64, pub u64);

#[derive(Clone, Debug, Default)]
pub enum Correlation {
    #[default]
    None,
    Client(HeaderValue),
    Made(Id),
}

impl Correlation {
    /// Its text as a header value.
    pub fn header_value(&self) -> Option<HeaderValue> {
        match self {
            Correlation::None => None,
            Correlation::Client(v) => Some(v.clone()),
            Correlation::Made(id) => HeaderValue::from_bytes(&uuid_text(*id)).ok(),
        }
    }
}

impl std::fmt::Display for Correlation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Correlation::None => f.write_str("-"),
            Correlation::Client(v) => f.write_str(v.to_str().unwrap_or("-")),
            Correlation::Made(id) => {
                f.write_str(std::str::from_utf8(&uuid_text(*id)).unwrap_or("-"))
            }
        }
    }
}

/// A 128-bit ID in a UUID's text form (8-4-4-4-12 lower-case hex digits).
pub fn uuid_text(id: Id) -> [u8; 36] {
    let mut out = [b'-'; 36];
    let bytes = [id.0.to_be_bytes(), id.1.to_be_bytes()];
    // Where each byte's two digits go: the dashes sit at 8, 13, 18 and 23.
    const AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
    for (i, at) in AT.iter().enumerate() {
        let [hi, lo] = HEX_PAIRS[usize::from(bytes[i / 8][i % 8])];
        out[*at] = hi;
        out[at + 1] = lo;
    }
    out
}

/// Each byte's two lower-case hex digits.
static HEX_PAIRS: [[u8; 2]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX[i >> 4], HEX[i & 15]];
        i += 1;
    }
    t
};

impl Message {
    pub fn request(
        service: std::sync::Arc<str>,
        method: Method,
        path_and_query: String,
        headers: HeaderMap,
    ) -> Self {
        let soap = soap_version(&headers);
        let rest = crate::rest::Rest::of_request(soap, &headers);
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
            action: None,
            json_out: None,
            body: Body::Stream,
            soap,
            is_fault: false,
            rest,
            set_headers: Few::default(),
            calls: 0,
            func: Few::default(),
            gather: None,
            saved: Few::default(),
            vars: Vars::default(),
            remote: None,
            permits: Default::default(),
            stop: None,
            correlation: Correlation::None,
            trace: None,
            message_id: None,
            fault_handler: None,
            reply_pox: false,
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
        let rest = self.rest.for_response();
        Message {
            direction: Direction::Response,
            status: Some(status),
            headers,
            props,
            axis2,
            to: None,
            action: None,
            json_out: None,
            body: Body::Stream,
            is_fault: false,
            rest,
            set_headers: Few::default(),
            // A response's failures are its own sequence's, not the request's send's.
            fault_handler: None,
            ..self
        }
    }

    /// The copy a message store keeps (`<store>`): everything a later send or sequence reads, a
    /// message ID of its own, and nothing tied to the request being served (its deadline, its
    /// throttle places, its aggregate, its trace).
    pub fn stored_copy(&self) -> Message {
        Message {
            stop: None,
            gather: None,
            saved: Few::default(),
            trace: None,
            calls: 0,
            message_id: None,
            ..self.clone()
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

    /// A request's To, as Synapse has it ([`crate::addressing`]): the one a header mediator set,
    /// else the request's WS-Addressing `To` (when its body is in memory: read here, so for a
    /// step that asks once, as `rewrite`), else the request line's URI.
    pub fn to_address(&self) -> Cow<'_, str> {
        if let Some(to) = &self.to {
            return Cow::Borrowed(to);
        }
        if matches!(self.body, Body::Bytes(_)) {
            if let Some(to) = crate::addressing::received_to(self) {
                return Cow::Owned(to);
            }
        }
        Cow::Borrowed(&self.path_and_query)
    }

    /// `RESPONSE=true` was set: `send` without an endpoint answers the client.
    pub fn is_response(&self) -> bool {
        self.direction == Direction::Response || self.props.is_true("RESPONSE")
    }

    /// The message's action, as Synapse keeps it (one field for the SOAP action and the WS-Addressing
    /// action): the one `<header name="Action">` set, none after it removed it, else the request's
    /// SOAPAction header or SOAP 1.2 `action` Content-Type parameter.
    pub fn soap_action(&self) -> Option<&str> {
        match &self.action {
            Some(ActionChange::Set(a)) => return Some(a),
            Some(ActionChange::Removed) => return None,
            None => {}
        }
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

    /// Writes an action `<header name="Action">` changed into an outgoing request's headers, as
    /// Synapse's HTTP sender does once the Content-Type is final: SOAP 1.2 carries it as the
    /// Content-Type's `action` parameter (left out after a remove); otherwise a set action that is
    /// not empty replaces the SOAPAction header, quoted for SOAP 1.1 and bare for other content.
    /// A removed action leaves a SOAPAction header as the client sent it (Synapse copies the
    /// client's transport headers and only overrides them with an action it has).
    pub fn apply_action(&self, headers: &mut HeaderMap) {
        let Some(change) = &self.action else {
            return;
        };
        let set = match change {
            ActionChange::Set(a) if !a.is_empty() => Some(a.as_str()),
            _ => None,
        };
        let version = soap_version(headers);
        let value = match version {
            FaultVersion::Soap12 => {
                let ct = headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or(crate::fault::SOAP12_CONTENT_TYPE);
                let mut parts: Vec<String> = ct
                    .split(';')
                    .map(str::trim)
                    .filter(|p| {
                        !p.is_empty()
                            && !p
                                .split('=')
                                .next()
                                .is_some_and(|k| k.trim().eq_ignore_ascii_case("action"))
                    })
                    .map(str::to_owned)
                    .collect();
                if let Some(a) = set {
                    parts.push(format!("action=\"{a}\""));
                }
                HeaderValue::from_str(&parts.join("; ")).map(|v| (http::header::CONTENT_TYPE, v))
            }
            FaultVersion::Soap11 | FaultVersion::Pox => {
                let Some(a) = set else {
                    return;
                };
                let quoted;
                let a = if version == FaultVersion::Soap11 {
                    quoted = format!("\"{a}\"");
                    quoted.as_str()
                } else {
                    a
                };
                HeaderValue::from_str(a).map(|v| (HeaderName::from_static("soapaction"), v))
            }
        };
        // The value was checked when the action was set; a Content-Type that was not valid text
        // is left as it is.
        if let Ok((name, v)) = value {
            headers.insert(name, v);
        }
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

/// What `<header name="Action">` did to a message's action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionChange {
    Set(String),
    Removed,
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
                    "To" if self.is_response() => self.to.as_deref().map(Cow::Borrowed),
                    // Not the request's wsa:To, which would mean reading the body again at each
                    // call (an XPath predicate calls this once per node): the header mediator's,
                    // else the request URI.
                    "To" => Some(Cow::Borrowed(
                        self.to.as_deref().unwrap_or(&self.path_and_query),
                    )),
                    "Action" => self.soap_action().map(Cow::Borrowed),
                    "MessageID" => self.message_id.as_deref().map(Cow::Borrowed),
                    "SYSTEM_TIME" => Some(Cow::Owned(sluice_expr::system_time())),
                    "PROXY_NAME" => Some(Cow::Borrowed(&self.service)),
                    _ => None,
                }
            }
            PropScope::Func => self
                .func
                .last()?
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| Cow::Borrowed(v.as_str())),
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
                    "REMOTE_ADDR" => self.remote.map(|ip| Cow::Owned(ip.to_string())),
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

    fn with_action(ct: &str, soap_action: Option<&str>, change: Option<ActionChange>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::CONTENT_TYPE, ct.parse().unwrap());
        if let Some(a) = soap_action {
            h.insert("soapaction", a.parse().unwrap());
        }
        let mut m = Message::request("P".into(), Method::POST, "/services/P".into(), h);
        assert_eq!(
            m.soap_action().map(str::to_owned),
            soap_action
                .map(|a| a.trim_matches('"').to_owned())
                .or_else(|| ct
                    .split("action=")
                    .nth(1)
                    .map(|a| a.trim_matches('"').to_owned()))
        );
        m.action = change;
        let mut out = m.headers.clone();
        m.apply_action(&mut out);
        out
    }

    #[test]
    fn a_changed_action_goes_out_as_synapse_sends_it() {
        let set = |a: &str| Some(ActionChange::Set(a.to_owned()));
        let get = |h: &HeaderMap, n: &str| h.get(n).map(|v| v.to_str().unwrap().to_owned());
        // SOAP 1.1: a quoted SOAPAction replaces the client's.
        let h = with_action("text/xml", Some("\"urn:orig\""), set("urn:buy"));
        assert_eq!(get(&h, "soapaction").as_deref(), Some("\"urn:buy\""));
        let h = with_action("text/xml; charset=UTF-8", None, set("urn:buy"));
        assert_eq!(get(&h, "soapaction").as_deref(), Some("\"urn:buy\""));
        // Plain XML: bare.
        let h = with_action("application/xml", None, set("urn:buy"));
        assert_eq!(get(&h, "soapaction").as_deref(), Some("urn:buy"));
        // Removed, or set empty: the client's header stays as it came.
        let h = with_action("text/xml", Some("urn:orig"), Some(ActionChange::Removed));
        assert_eq!(get(&h, "soapaction").as_deref(), Some("urn:orig"));
        let h = with_action("text/xml", Some("urn:orig"), set(""));
        assert_eq!(get(&h, "soapaction").as_deref(), Some("urn:orig"));
        // Unchanged: nothing written.
        let h = with_action("text/xml", None, None);
        assert_eq!(get(&h, "soapaction"), None);
        // SOAP 1.2: the Content-Type's action parameter, replaced, added or dropped.
        let ct = "application/soap+xml; charset=UTF-8; action=\"urn:orig\"";
        let h = with_action(ct, None, set("urn:buy"));
        assert_eq!(
            get(&h, "content-type").as_deref(),
            Some("application/soap+xml; charset=UTF-8; action=\"urn:buy\"")
        );
        assert_eq!(get(&h, "soapaction"), None);
        let h = with_action("application/soap+xml", None, set("urn:buy"));
        assert_eq!(
            get(&h, "content-type").as_deref(),
            Some("application/soap+xml; action=\"urn:buy\"")
        );
        let h = with_action(ct, None, Some(ActionChange::Removed));
        assert_eq!(
            get(&h, "content-type").as_deref(),
            Some("application/soap+xml; charset=UTF-8")
        );
    }

    #[test]
    fn get_property_action_reads_the_changed_action() {
        let mut h = HeaderMap::new();
        h.insert(http::header::CONTENT_TYPE, "text/xml".parse().unwrap());
        h.insert("soapaction", "\"urn:orig\"".parse().unwrap());
        let mut m = Message::request("P".into(), Method::POST, "/services/P".into(), h);
        assert_eq!(
            m.property(PropScope::Default, "Action").as_deref(),
            Some("urn:orig")
        );
        m.action = Some(ActionChange::Set("urn:buy".into()));
        assert_eq!(
            m.property(PropScope::Default, "Action").as_deref(),
            Some("urn:buy")
        );
        m.action = Some(ActionChange::Removed);
        assert_eq!(m.property(PropScope::Default, "Action"), None);
        // The client's header is still there, in the transport scope.
        assert_eq!(
            m.property(PropScope::Transport, "SOAPAction").as_deref(),
            Some("\"urn:orig\"")
        );
        // The response starts with the back-end's action, not the request's.
        let r = m.into_response(StatusCode::OK, HeaderMap::new());
        assert_eq!(r.action, None);
    }

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

/// A message's variables (MI 4.4): none until the first is set, so a message without any carries
/// one empty pointer.
// Boxed: a message is moved whole between the awaits, and one pointer costs less there than a map.
#[allow(clippy::box_collection)]
#[derive(Clone, Debug, Default)]
pub struct Vars(Option<Box<std::collections::BTreeMap<String, serde_json::Value>>>);

impl Vars {
    pub fn get(&self, name: &str) -> Option<&serde_json::Value> {
        self.0.as_ref()?.get(name)
    }

    pub fn set(&mut self, name: &str, v: serde_json::Value) {
        self.0
            .get_or_insert_with(Default::default)
            .insert(name.to_owned(), v);
    }

    pub fn remove(&mut self, name: &str) {
        if let Some(m) = self.0.as_mut() {
            m.remove(name);
        }
    }
}

/// A list most messages leave empty: one pointer until the first item (a message is moved whole
/// between the awaits, so what it carries empty should be small).
#[allow(clippy::box_collection)]
#[derive(Clone, Debug)]
pub struct Few<T>(Option<Box<Vec<T>>>);

impl<T> Default for Few<T> {
    fn default() -> Self {
        Few(None)
    }
}

impl<T> std::ops::Deref for Few<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl<T> Few<T> {
    pub fn push(&mut self, item: T) {
        self.0.get_or_insert_with(Default::default).push(item);
    }

    pub fn pop(&mut self) -> Option<T> {
        self.0.as_mut()?.pop()
    }
}

impl<'a, T> IntoIterator for &'a Few<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
