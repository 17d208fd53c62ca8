//! Sending to a back-end: one endpoint, or a failover / load-balance group child by child, with
//! the endpoint's timeout and suspension, and the request as the back-end gets it. The engine's
//! way there ([`Engine::send_routed`]): a key resolved, the body read and converted or secured
//! when the endpoint needs it.

use super::*;
use crate::client::Wire;

/// Sends a message whose body is in memory through a failover or load-balance endpoint: to the
/// child [`EndpointPlan::pick`] chooses, then, after a back-end failure the child's `retryConfig`
/// allows, to the one [`EndpointPlan::pick_after_failure`] chooses (never one this message already
/// failed on). Returns the response and the endpoint that gave it.
pub(super) async fn send_to_group(
    client: &BackendClient,
    default_timeout: Duration,
    msg: &mut Message,
    ep: &Arc<EndpointPlan>,
) -> Result<(Response<BackendBody>, Arc<EndpointPlan>), NotSent> {
    // A load balancer with sessions keeps a client on its child.
    let Some(mut leaf) = ep.pick_for(msg, Instant::now()) else {
        return Err(NotSent::plain(no_ready_child(ep)));
    };
    let mut tried = Vec::new();
    loop {
        if leaf.security.is_some() {
            let why = format!(
                "{}: WS-Security on a failover or load-balance child is not supported yet",
                leaf.label
            );
            return Err(NotSent::plain(Error::new(ErrorKind::Mediation, why)));
        }
        // The body is in memory: nothing to hand over, and the headers are kept for the next try.
        let mut failed = match send_once(client, default_timeout, msg, &leaf, None, true).await {
            Ok(r) => {
                ep.answered(&r.1, r.0.headers());
                return Ok(r);
            }
            Err(f) => f,
        };
        let kind = failed.error.kind;
        if failed.skip_fault_sequence.is_some()
            || !kind.moves_to_next_child()
            || !leaf.retry_allows(kind.synapse_code())
        {
            return Err(failed);
        }
        tried.push(leaf.id());
        match ep.pick_after_failure(leaf.id(), Instant::now(), &tried) {
            Some(next) => {
                // The reason names the child (for an `<http>` one, with this message's URI).
                tracing::warn!(
                    "{}: {}; trying {}",
                    ep.describe(),
                    failed.error.reason(),
                    next.describe()
                );
                leaf = next;
            }
            // As in Synapse, the error is the last child's (its ERROR_CODE), not 303000: a child
            // was tried.
            None => {
                failed.error.context.push_str(&format!(
                    "; no other child endpoint of {} is ready",
                    ep.describe()
                ));
                return Err(failed);
            }
        }
    }
}

/// One send to an address endpoint (an `<http>` or `<default>` one at the address it gives this
/// message): the response and the endpoint that gave it, or why there is none. The child itself,
/// not the per-message endpoint, is what [`send_to_group`] counts as tried.
pub(super) async fn send_once(
    client: &BackendClient,
    default_timeout: Duration,
    msg: &mut Message,
    ep: &Arc<EndpointPlan>,
    stream: Option<Inbound>,
    keep_headers: bool,
) -> Result<(Response<BackendBody>, Arc<EndpointPlan>), NotSent> {
    let target = match ep.for_message(msg) {
        Ok(t) => t,
        Err(error) => return Err(NotSent::with_stream(error, stream)),
    };
    // A group's child: the body is in memory (a single endpoint's was converted before).
    if let Err(error) = target
        .format
        .apply(msg)
        .and_then(|()| target.add_addressing(msg))
    {
        return Err(NotSent::with_stream(error, stream));
    }
    // A REST text/xml message read for mediation leaves as plain XML.
    sluice_mediation::rest::outgoing(msg, false);
    let limit = target.timeout_for(msg).unwrap_or(default_timeout);
    let made = crate::correlation::to_send(&msg.correlation);
    let (mut req, activity) = backend_request(msg, &target, stream, keep_headers);
    let sent = match crate::otel::enabled() {
        None => send_with_timeout(client, req, &target, activity, limit, made).await,
        Some(t) => {
            let (call, parent) = t.call(msg.trace.as_deref(), req.method(), &req.uri().to_string());
            req.headers_mut().insert("traceparent", parent);
            let r = Box::pin(send_with_timeout(
                client, req, &target, activity, limit, made,
            ))
            .await;
            call.end(match &r {
                Ok(resp) => Ok(resp.status().as_u16()),
                Err(u) => Err(u.error.reason()),
            });
            r
        }
    };
    match sent {
        Ok(r) => Ok((r, target)),
        Err(u) => Err(NotSent::from_unsent(u, &target)),
    }
}

/// The HTTP request for a message to an address endpoint: its headers without hop-by-hop ones, the
/// endpoint's Host and URI, and the body (the stream, the start read and the stream, or bytes).
pub(super) fn backend_request(
    msg: &mut Message,
    ep: &EndpointPlan,
    stream: Option<Inbound>,
    keep_headers: bool,
) -> (Request<RelayBody>, Option<Arc<Activity>>) {
    if !ep.properties.is_empty() {
        ep.set_properties(msg);
    }
    let mut headers = if keep_headers {
        msg.headers.clone()
    } else {
        std::mem::take(&mut msg.headers)
    };
    strip_hop_by_hop(&mut headers);
    headers.insert(header::HOST, ep.host.clone());
    apply_content_type_props(&msg.axis2, &mut headers);
    if let Some((_, ct)) = &msg.json_out {
        headers.insert(header::CONTENT_TYPE, ct.clone());
    }
    with_charset(&mut headers);
    msg.apply_action(&mut headers);
    let method = outgoing_method(msg, ep);
    let wire = wire(msg, &mut headers);
    // A GET leaves without a body and its Content-Type, as in Synapse (whatever the message holds).
    let no_body = msg.axis2.is_true("NO_ENTITY_BODY") || method == Method::GET;
    if method == Method::GET {
        headers.remove(header::CONTENT_TYPE);
    }
    let mut activity = None;
    let body = if no_body {
        headers.remove(header::CONTENT_LENGTH);
        RelayBody::Empty
    } else {
        match &msg.body {
            Body::Stream => match stream {
                Some(s) => {
                    let a = Activity::new();
                    activity = Some(a.clone());
                    RelayBody::stream_with(s, None, Some(a))
                }
                None => RelayBody::Empty,
            },
            // Bytes in memory (or the JSON they are written as): the client writes their length
            // as the framing (any Content-Length in `headers` is skipped, `h1::write_request_head`).
            Body::Bytes(b) => RelayBody::full(
                msg.json_out
                    .as_ref()
                    .map_or_else(|| b.clone(), |(j, _)| j.clone()),
            ),
            // The start already read, then the rest of the stream: the client's length stands.
            Body::Head(b) => match stream {
                Some(s) => {
                    let a = Activity::new();
                    activity = Some(a.clone());
                    RelayBody::stream_after(b.clone(), s, None, Some(a))
                }
                None => RelayBody::full(b.clone()),
            },
            Body::Empty => {
                headers.remove(header::CONTENT_LENGTH);
                RelayBody::Empty
            }
        }
    };
    let mut req = Request::new(body);
    *req.method_mut() = method;
    *req.uri_mut() = ep.uri.clone();
    *req.headers_mut() = headers;
    if wire != Wire::default() {
        req.extensions_mut().insert(wire);
    }
    (req, activity)
}

/// The method a request leaves with: the `http` endpoint's, else the axis2 `HTTP_METHOD` a
/// mediator set (one that is no method is passed over), else the client's.
fn outgoing_method(msg: &Message, ep: &EndpointPlan) -> Method {
    ep.method
        .clone()
        .or_else(|| {
            let m = msg.axis2.get("HTTP_METHOD")?;
            Method::from_bytes(m.trim().to_ascii_uppercase().as_bytes()).ok()
        })
        .unwrap_or_else(|| msg.method.clone())
}

/// Synapse's axis2 properties about the wire: `POST_TO_URI` (the whole URI in the request line),
/// `FORCE_HTTP_1.0` (an HTTP/1.0 request line; the connection is then not kept) and
/// `NO_KEEPALIVE` (`Connection: close`, the connection not kept).
fn wire(msg: &Message, headers: &mut HeaderMap) -> Wire {
    let http10 = msg.axis2.is_true("FORCE_HTTP_1.0");
    let close = http10 || msg.axis2.is_true("NO_KEEPALIVE");
    if close {
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    Wire {
        absolute_target: msg.axis2.is_true("POST_TO_URI"),
        http10,
        close,
    }
}

/// A send that got no response: why, the request body if nothing read it, and why the fault sequence
/// is not to run, if it is not (the endpoint's `responseAction` is discard and it timed out, or the
/// body could not be read).
pub(super) struct NotSent {
    pub(super) error: Error,
    pub(super) stream: Option<Inbound>,
    pub(super) skip_fault_sequence: Option<&'static str>,
}

impl NotSent {
    pub(super) fn plain(error: Error) -> Self {
        NotSent::with_stream(error, None)
    }

    /// A failure before anything was sent: the body is still there for the fault sequence.
    pub(super) fn with_stream(error: Error, stream: Option<Inbound>) -> Self {
        NotSent {
            error,
            stream,
            skip_fault_sequence: None,
        }
    }

    /// The body could not be read into memory: nothing may send it, not even the fault sequence
    /// (it would go out empty).
    pub(super) fn unreadable(error: Error) -> Self {
        NotSent {
            error,
            stream: None,
            skip_fault_sequence: Some("the request body could not be read"),
        }
    }

    pub(super) fn from_unsent(u: Unsent, ep: &EndpointPlan) -> Self {
        let discard = u.error.kind == ErrorKind::ResponseTimeout
            && ep.timeout_action == sluice_config::TimeoutAction::Discard;
        NotSent {
            skip_fault_sequence: discard.then_some("responseAction discard"),
            error: u.error,
            stream: u.body.and_then(RelayBody::into_inbound),
        }
    }
}

/// Error 303000: no child of a failover or load-balance endpoint could be sent to.
pub(super) fn no_ready_child(ep: &EndpointPlan) -> Error {
    Error::new(
        ErrorKind::NoReadyChild,
        format!("{} has no ready child endpoint", ep.describe()),
    )
}

/// Sends to the endpoint unless it is suspended, and keeps its suspension state: any response makes
/// it active, a failure may mark or suspend it (`sluice_mediation::health`). `correlation`: a
/// correlation ID Sluice made, written into the request's head.
pub(super) async fn send_with_timeout(
    client: &BackendClient,
    req: Request<RelayBody>,
    ep: &EndpointPlan,
    activity: Option<Arc<Activity>>,
    limit: Duration,
    correlation: Option<sluice_mediation::message::Id>,
) -> Result<http::Response<BackendBody>, Unsent> {
    if let Readiness::Suspended(left) = ep.health.readiness(Instant::now()) {
        let why = if ep.health.is_off() {
            "switched off through the management API".to_owned()
        } else if ep.health.is_suspended() {
            format!("suspended for another {} ms", left.as_millis())
        } else {
            format!("marked for suspension for another {} ms", left.as_millis())
        };
        let error = Error::new(
            ErrorKind::EndpointSuspended,
            format!("{} is {why}", ep.describe()),
        );
        // Nothing was read from the body: the fault sequence may still read it or send it on.
        return Err(Unsent {
            error,
            body: Some(req.into_body()),
        });
    }
    let r = timed(client.send(req, ep, correlation), ep, activity, limit).await;
    match &r {
        Ok(_) => {
            if ep.health.on_success() {
                tracing::info!("{} answered: active again", ep.describe());
            }
        }
        // A client's broken or aborted request says nothing about the back-end.
        Err(Unsent { error, .. }) if !error.kind.is_backend_failure() => {}
        Err(Unsent { error, .. }) => {
            match ep
                .health
                .on_fault(error.kind.synapse_code(), Instant::now())
            {
                Change::None => {}
                Change::Marked(left) => tracing::warn!(
                    "{} marked for suspension after error {} ({left} more allowed)",
                    ep.describe(),
                    error.kind.synapse_code()
                ),
                Change::Suspended(d) => tracing::warn!(
                    "suspending {} for {} ms after error {}",
                    ep.describe(),
                    d.as_millis(),
                    error.kind.synapse_code()
                ),
            }
        }
    }
    r
}

/// A send to `ep`, given up after `limit` without an answer (counted from the request body's last
/// chunk while it is still moving).
async fn timed(
    fut: impl std::future::Future<Output = Result<http::Response<BackendBody>, Unsent>>,
    ep: &EndpointPlan,
    activity: Option<Arc<Activity>>,
    limit: Duration,
) -> Result<http::Response<BackendBody>, Unsent> {
    tokio::pin!(fut);
    let mut deadline = tokio::time::Instant::now() + limit;
    loop {
        tokio::select! {
            r = &mut fut => return r,
            _ = tokio::time::sleep_until(deadline) => {
                // A request body still moving is progress: the timeout counts from its last chunk.
                if let Some(a) = &activity {
                    let next = tokio::time::Instant::from_std(a.last()) + limit;
                    if next > tokio::time::Instant::now() {
                        deadline = next;
                        continue;
                    }
                }
                // A request body that stopped before its end is the client's doing, not the
                // back-end's (it must not count toward suspending the endpoint).
                let error = if activity.as_ref().is_some_and(|a| !a.ended()) {
                    Error::new(ErrorKind::ClientTimeout, format!("the request body for {} stopped coming for {} ms", ep.describe(), limit.as_millis()))
                } else {
                    Error::new(ErrorKind::ResponseTimeout, format!("{} did not answer within {} ms", ep.describe(), limit.as_millis()))
                };
                return Err(Unsent { error, body: None });
            }
        }
    }
}

/// The media types whose Content-Type Synapse writes with the character set (Axis2's SOAP, XML
/// and JSON formatters), each with its value when it has no other parameter (made when Sluice
/// is compiled: a request copies it, nothing is checked again).
static CHARSET_TYPES: [(&[u8], HeaderValue); 4] = [
    (
        b"text/xml",
        HeaderValue::from_static("text/xml; charset=UTF-8"),
    ),
    (
        b"application/soap+xml",
        HeaderValue::from_static("application/soap+xml; charset=UTF-8"),
    ),
    (
        b"application/xml",
        HeaderValue::from_static("application/xml; charset=UTF-8"),
    ),
    (
        b"application/json",
        HeaderValue::from_static("application/json; charset=UTF-8"),
    ),
];

/// A request leaves with its Content-Type's character set, `charset=UTF-8` when it names none,
/// as Synapse's pass-through writes the type from the message type and its encoding (UTF-8
/// unless the client named another): right after the media type, before any other parameter
/// (`application/soap+xml; charset=UTF-8; action="..."`). Other types leave as they came.
pub(super) fn with_charset(headers: &mut HeaderMap) {
    let Some(ct) = headers.get_mut(header::CONTENT_TYPE) else {
        return;
    };
    let b = ct.as_bytes();
    // The usual case first: the type alone, as written here.
    if let Some((_, plain)) = CHARSET_TYPES.iter().find(|t| t.0 == b) {
        *ct = plain.clone();
        return;
    }
    let end = b.iter().position(|&c| c == b';').unwrap_or(b.len());
    let media = b[..end].trim_ascii();
    let Some((_, plain)) = CHARSET_TYPES
        .iter()
        .find(|t| media.eq_ignore_ascii_case(t.0))
    else {
        return;
    };
    if end == b.len() {
        *ct = plain.clone();
        return;
    }
    if b[end..]
        .windows(7)
        .any(|w| w.eq_ignore_ascii_case(b"charset"))
    {
        return;
    }
    let mut v = Vec::with_capacity(b.len() + 15);
    v.extend_from_slice(media);
    v.extend_from_slice(b"; charset=UTF-8");
    v.extend_from_slice(&b[end..]);
    if let Ok(v) = HeaderValue::from_bytes(&v) {
        *ct = v;
    }
}

/// `ContentType` (else `messageType`) in the axis2 scope sets the outgoing Content-Type.
pub(super) fn apply_content_type_props(
    axis2: &sluice_mediation::message::Props,
    headers: &mut HeaderMap,
) {
    let ct = axis2
        .get("ContentType")
        .or_else(|| axis2.get("messageType"));
    if let Some(v) = ct.and_then(|c| HeaderValue::from_str(c).ok()) {
        headers.insert(header::CONTENT_TYPE, v);
    }
}

impl Engine {
    /// Sends the message to an address endpoint, or through a failover or load-balance endpoint to
    /// one of its ready children, trying the next one after a failure when the group fails over
    /// (never one this message already failed on). Returns the response and the endpoint that gave
    /// it.
    pub(super) async fn send_routed(
        &self,
        msg: &mut Message,
        mut stream: Option<Inbound>,
        ep: &Arc<EndpointPlan>,
        keep_headers: bool,
    ) -> Result<(Response<BackendBody>, Arc<EndpointPlan>), NotSent> {
        let named;
        let ep = if matches!(ep.address, sluice_mediation::endpoints::Address::ByKey(_)) {
            // Boxed: the rare path's state stays out of every plain send's future.
            named = Box::pin(self.named_by_key(msg, &mut stream, ep)).await?;
            &named
        } else {
            ep
        };
        if ep.group.is_none() {
            // A conversion, WS-Addressing headers or WS-Security need the body in memory.
            if ep.format.converts(msg) || ep.addressing.is_some() || ep.security.is_some() {
                // Boxed: the conversion's state stays out of every plain send's future.
                Box::pin(self.in_format(msg, &mut stream, ep)).await?;
            }
            if ep.security.is_some() {
                Box::pin(self.secure_to_backend(msg, ep))
                    .await
                    .map_err(NotSent::unreadable)?;
            }
            let limit = self.opts.default_timeout;
            return send_once(&self.client, limit, msg, ep, stream, keep_headers).await;
        }
        // Boxed: the group's state stays out of every plain send's future.
        Box::pin(async move {
            // The message may go out more than once: its body is read into memory first (Synapse
            // builds the message for the same reason). A body that cannot be read is not sent
            // anywhere, not even by the fault sequence: it would go out empty.
            if let Err(error) = self.read_whole(msg, &mut stream).await {
                return Err(NotSent::unreadable(error));
            }
            send_to_group(&self.client, self.opts.default_timeout, msg, ep).await
        })
        .await
    }

    /// An `<endpoint key-expression>`'s endpoint for `msg` (its body read first when the key
    /// reads it).
    async fn named_by_key(
        &self,
        msg: &mut Message,
        stream: &mut Option<Inbound>,
        ep: &Arc<EndpointPlan>,
    ) -> Result<Arc<EndpointPlan>, NotSent> {
        if ep.by_key_need() != BodyNeed::None {
            self.read_whole(msg, stream)
                .await
                .map_err(NotSent::unreadable)?;
        }
        match ep.by_key(msg) {
            Some(Ok(named)) => Ok(named),
            Some(Err(e)) => Err(NotSent::with_stream(e, stream.take())),
            None => Ok(ep.clone()),
        }
    }

    /// Reads the body and converts the message to the endpoint's `format`
    /// ([`sluice_mediation::format`]). A body that cannot be read or converted is not sent.
    pub(super) async fn in_format(
        &self,
        msg: &mut Message,
        stream: &mut Option<Inbound>,
        ep: &EndpointPlan,
    ) -> Result<(), NotSent> {
        self.read_whole(msg, stream)
            .await
            .and_then(|()| ep.format.apply(msg))
            .map_err(NotSent::unreadable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charset_of(ct: &str) -> String {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
        with_charset(&mut h);
        h[header::CONTENT_TYPE].to_str().unwrap().to_owned()
    }

    #[test]
    fn soap_xml_and_json_types_leave_with_their_charset() {
        assert_eq!(charset_of("text/xml"), "text/xml; charset=UTF-8");
        assert_eq!(
            charset_of("Application/JSON"),
            "application/json; charset=UTF-8"
        );
        assert_eq!(charset_of("text/xml;"), "text/xml; charset=UTF-8;");
        // Right after the media type, as Axis2's SOAP 1.2 formatter writes it.
        assert_eq!(
            charset_of("application/soap+xml; action=\"urn:a\""),
            "application/soap+xml; charset=UTF-8; action=\"urn:a\""
        );
        // A charset named stays as it is; other types are left alone.
        assert_eq!(
            charset_of("text/xml;charset=ISO-8859-1"),
            "text/xml;charset=ISO-8859-1"
        );
        assert_eq!(charset_of("text/plain"), "text/plain");
        assert_eq!(
            charset_of("application/octet-stream"),
            "application/octet-stream"
        );
    }
}
