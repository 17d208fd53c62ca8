//! The life of a request: dispatch to a proxy, in-sequence, endpoint, out-sequence, fault sequence, and
//! the answer to the client. Mediation runs synchronously between the awaits; bodies nobody reads are
//! relayed as streams.

use crate::body::{
    request_body_error, Activity, BodyPace, ClientBody, IdleTimeout, Inbound, RelayBody,
};
use crate::buffered::{BodyBudget, Gathered};
use crate::client::{BackendBody, BackendClient, Unsent};
use crate::h1;
use crate::headers::strip_hop_by_hop;
use crate::offload::{Offload, Work};
use crate::server::Transport;
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use sluice_config::FaultVersion;
use sluice_expr::BodyNeed;
use sluice_mediation::api::{self, Miss};
use sluice_mediation::fault::{self, FaultParts};
use sluice_mediation::health::{Change, Readiness};
use sluice_mediation::{
    exec, Body, Continuation, Direction, EndpointPlan, Error, ErrorKind, Flow, Message, Plan,
    ProxyPlan,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs a [`Work`] on a message: here, or for a large message on the pool's thread ([`Offload`]).
/// A macro, not an async method: the usual run (here) then costs no future of its own.
macro_rules! mediate {
    ($engine:expr, $msg:expr, $work:expr) => {{
        let work = $work;
        if $engine.opts.offload.wants(&$msg) {
            // Boxed: the hand-over's state stays out of every request's future.
            Box::pin($engine.opts.offload.run(&mut $msg, work.owned())).await
        } else {
            work.run(&mut $msg)
        }
    }};
}

/// How much of a body is read looking for the end of what header-only expressions need, before the
/// body is read whole instead (a SOAP header is rarely more than a few KiB).
pub const HEAD_PROBE_LIMIT: usize = 256 * 1024;

fn too_large(what: &str, limit: usize) -> Error {
    Error::new(
        ErrorKind::PayloadTooLarge,
        format!("the {what} body is larger than {limit} bytes and a mediator must read it"),
    )
}

#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Largest body read into memory when a mediator must see it.
    pub max_buffered_body: usize,
    /// Endpoint timeout when the endpoint sets none.
    pub default_timeout: Duration,
    pub connect_timeout: Duration,
    /// Most back-end calls one request may make (out-sequence sends to further endpoints).
    pub max_hops: usize,
    /// Idle back-end connections are closed after about this long unused.
    pub backend_idle_timeout: Duration,
    /// Whom https back-ends are trusted by ([`crate::tls::client_config`]).
    pub backend_tls: Arc<rustls::ClientConfig>,
    /// How slowly a client may send its request body before it is answered 408.
    pub body_pace: BodyPace,
    /// Where large messages are mediated (one pool shared by every worker's engine).
    pub offload: Offload,
    /// What bodies read into memory may hold at once, process-wide (shared by every engine).
    pub body_budget: Arc<BodyBudget>,
}

/// How often the serving loop calls [`Engine::sweep_backends`].
pub const BACKEND_SWEEP_INTERVAL: Duration = Duration::from_secs(1);

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            max_buffered_body: 64 * 1024 * 1024,
            default_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            max_hops: 8,
            backend_idle_timeout: Duration::from_secs(60),
            backend_tls: crate::tls::default_client_config(),
            body_pace: BodyPace::default(),
            offload: Offload::new(Default::default()),
            body_budget: BodyBudget::new(1024 * 1024 * 1024),
        }
    }
}

pub struct Engine {
    plan: Arc<Plan>,
    client: BackendClient,
    opts: EngineOptions,
    services: String,
    /// Where a message goes by its To address when the flow names no endpoint.
    to_address: Arc<EndpointPlan>,
}

/// How deep in fault handling a call is: a failure inside a fault sequence's own send is not handled again.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Depth {
    Normal,
    InFault,
}

impl Engine {
    /// Closes pooled back-end connections the back-end has closed, or left idle longer than
    /// [`EngineOptions::backend_idle_timeout`]. Called every [`BACKEND_SWEEP_INTERVAL`].
    pub fn sweep_backends(&self) {
        let sweeps =
            self.opts.backend_idle_timeout.as_millis() / BACKEND_SWEEP_INTERVAL.as_millis();
        self.client
            .sweep(u64::try_from(sweeps).unwrap_or(u64::MAX).max(1));
    }

    /// One engine per serving thread: the plan is shared, the back-end connection pool is the thread's own.
    pub fn new(plan: Arc<Plan>, opts: EngineOptions) -> Arc<Self> {
        let mut names: Vec<&str> = plan.proxies.keys().map(String::as_str).collect();
        names.sort_unstable();
        let mut services = names.join(", ");
        if !plan.apis.is_empty() {
            let apis: Vec<String> = plan
                .apis
                .iter()
                .map(|a| format!("{} at {}", a.name, a.context))
                .collect();
            services.push_str(&format!("; APIs: {}", apis.join(", ")));
        }
        if plan.main.is_some() {
            services.push_str("; the main sequence takes every other request");
        }
        Arc::new(Engine {
            client: BackendClient::new(opts.connect_timeout, opts.backend_tls.clone()),
            plan,
            opts,
            services,
            to_address: Arc::new(EndpointPlan::to_address()),
        })
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// A client's request body, held to the pace the options set.
    fn client_body(&self, body: hyper::body::Incoming) -> Inbound {
        Inbound::Client(ClientBody::new(body, self.opts.body_pace))
    }

    /// A request that came in on `transport`'s listener.
    pub async fn handle(
        self: Arc<Self>,
        req: Request<hyper::body::Incoming>,
        transport: Transport,
    ) -> Response<RelayBody> {
        let (parts, body) = req.into_parts();
        if let Some(refused) = refuse_head(&parts) {
            return refused;
        }
        let path = parts.uri.path();
        let rest = match path.strip_prefix("/services") {
            Some(r) if r.is_empty() || r == "/" => return self.listing(),
            Some(r) if r.starts_with('/') => &r[1..],
            _ => return self.api(parts, body).await,
        };
        let name = rest.split('/').next().unwrap_or(rest);
        let proxy = match self.plan.proxies.get(name) {
            Some(p) => p,
            // WSO2 MI also answers at /services/Name.NameHttpSoap11Endpoint and the like.
            None => match name
                .split_once('.')
                .and_then(|(n, _)| self.plan.proxies.get(n))
            {
                Some(p) => p,
                None => return self.api(parts, body).await,
            },
        };
        let served = match transport {
            Transport::Http => proxy.on_http,
            Transport::Https => proxy.on_https,
        };
        if !served {
            let (here, there) = match transport {
                Transport::Http => ("http", "https"),
                Transport::Https => ("https", "http"),
            };
            let e = Error::new(
                ErrorKind::NotFound,
                format!(
                    "proxy {} is not served on {here}: its transports list only {there}",
                    proxy.name
                ),
            );
            return error_response(fault_version(&parts.headers), &e, StatusCode::NOT_FOUND);
        }
        if !proxy.started {
            let e = Error::new(
                ErrorKind::NotFound,
                format!(
                    "proxy {} is deployed but not started (startOnLoad=\"false\")",
                    proxy.name
                ),
            );
            return error_response(
                fault_version(&parts.headers),
                &e,
                StatusCode::SERVICE_UNAVAILABLE,
            );
        }
        if parts.method == Method::GET
            && parts
                .uri
                .query()
                .is_some_and(|q| q.eq_ignore_ascii_case("wsdl") || q.starts_with("wsdl"))
        {
            return self.wsdl(proxy, &parts.headers, transport);
        }
        let pq = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default();
        let msg = Message::request(proxy.name.clone(), parts.method, pq, parts.headers);
        let proxy = proxy.clone();
        self.request_flow(&proxy, msg, body).await
    }

    /// A request for a REST API: the resource that takes it runs as a service, with the properties
    /// Synapse sets (`uri.var.*`, `query.param.*`, `REST_*`, and `REST_URL_POSTFIX` in the axis2
    /// scope). No API: 404 as for an unknown service; a path no resource takes: 404, or 405 with
    /// `Allow` when only the method differs; `OPTIONS` a resource does not list: 200 with `Allow`.
    async fn api(
        &self,
        parts: http::request::Parts,
        body: hyper::body::Incoming,
    ) -> Response<RelayBody> {
        let pq = parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path(), |p| p.as_str());
        let route = match api::route(&self.plan.apis, &parts.method, pq) {
            Ok(r) => r,
            Err(miss) => {
                // No proxy or API takes it: Synapse's main sequence does, when there is one.
                if let (Miss::NoApi, Some(main)) = (&miss, &self.plan.main) {
                    let main = main.clone();
                    let msg = Message::request(
                        main.name.clone(),
                        parts.method,
                        pq.to_owned(),
                        parts.headers,
                    );
                    return self.request_flow(&main, msg, body).await;
                }
                // Read and dropped, unless the client waits for 100 Continue to send it.
                if !parts.headers.contains_key(header::EXPECT) {
                    discard(Some(self.client_body(body))).await;
                }
                let allow = |status: StatusCode, methods: &[Method], text: String| {
                    let list: Vec<&str> = methods.iter().map(Method::as_str).collect();
                    let mut r = text_response(status, text);
                    if let Ok(v) = HeaderValue::from_str(&list.join(", ")) {
                        r.headers_mut().insert(header::ALLOW, v);
                    }
                    r
                };
                return match miss {
                    Miss::NoApi => self.not_found(&parts.method, &parts.headers, parts.uri.path()),
                    Miss::NoResource => text_response(
                        StatusCode::NOT_FOUND,
                        format!(
                            "no resource of the API under this path takes {} {pq}\n",
                            parts.method
                        ),
                    ),
                    Miss::Method(m) => allow(
                        StatusCode::METHOD_NOT_ALLOWED,
                        &m,
                        format!("{} is not allowed for {pq}\n", parts.method),
                    ),
                    Miss::Options(m) => allow(StatusCode::OK, &m, String::new()),
                };
            }
        };
        let mut msg = Message::request(
            route.api.name.clone(),
            parts.method.clone(),
            pq.to_owned(),
            parts.headers,
        );
        let sub = match route.postfix {
            "" => "/",
            p => p,
        };
        for (k, v) in [
            ("REST_API_CONTEXT", route.api.context.as_str()),
            ("SYNAPSE_REST_API", &route.api.name),
            ("REST_FULL_REQUEST_PATH", pq),
            ("REST_SUB_REQUEST_PATH", sub),
            ("REST_METHOD", parts.method.as_str()),
        ] {
            msg.props.set(k, v.to_owned());
        }
        for (k, v) in route.vars {
            msg.props.set(&format!("uri.var.{k}"), v);
        }
        if let Some(q) = parts.uri.query() {
            for (k, v) in api::query_params(q) {
                msg.props.set(&format!("query.param.{k}"), v);
            }
        }
        if !route.postfix.is_empty() {
            msg.axis2.set("REST_URL_POSTFIX", route.postfix.to_owned());
        }
        let service = route.resource.service.clone();
        self.request_flow(&service, msg, body).await
    }

    async fn request_flow(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        body: hyper::body::Incoming,
    ) -> Response<RelayBody> {
        let mut stream = Some(self.client_body(body));
        match proxy.request_body_need(&msg.headers) {
            BodyNeed::None => {}
            BodyNeed::Headers => match self.read_head(&proxy.in_seq, stream.take()).await {
                Ok((head, None)) => msg.body = Body::Bytes(head),
                Ok((head, rest)) => {
                    msg.body = Body::Head(head);
                    stream = rest;
                }
                Err(e) => return self.default_fault(msg.soap, &e),
            },
            BodyNeed::Full => match self.buffer(stream.take(), "request").await {
                Ok(b) => msg.body = read_body(b),
                Err(e) => return self.default_fault(msg.soap, &e),
            },
        }
        let flow = match mediate!(self, msg, Work::Seq(&proxy.in_seq)) {
            Ok(f) => f,
            Err(e) => return Box::pin(self.fault_flow(proxy, msg, e, stream)).await,
        };
        self.request_decided(proxy, msg, stream, flow, Depth::Normal)
            .await
    }

    /// Carries out what a sequence decided for a message on its way in (the in-sequence, the rest
    /// after a one-way `call`).
    async fn request_decided(
        &self,
        proxy: &Arc<ProxyPlan>,
        msg: Message,
        stream: Option<Inbound>,
        flow: Flow,
        depth: Depth,
    ) -> Response<RelayBody> {
        if msg.direction == Direction::Response
            && matches!(
                flow,
                Flow::Continue | Flow::Respond | Flow::Loopback | Flow::Send(None)
            )
        {
            // After a one-way call on the response path: the response is the answer, as when
            // the out-sequence or the rest after a call ends.
            return client_response(msg, stream, None);
        }
        let (ep, after) = match flow {
            Flow::Send(Some(ep)) => (Some(ep), None),
            Flow::Call(ep, k) => (ep, Some(k)),
            Flow::Respond => return self.reply(msg, stream).await,
            Flow::Loopback if msg.is_response() => return self.reply(msg, stream).await,
            // Boxed: its state stays out of every request's future.
            Flow::Loopback => return Box::pin(self.loopback(proxy, msg, stream, depth)).await,
            Flow::Send(None) if msg.is_response() => return self.reply(msg, stream).await,
            Flow::Drop | Flow::Absorbed => {
                discard(stream).await;
                return accepted();
            }
            Flow::Clone(c) => {
                return Box::pin(self.clone_flow(proxy, msg, stream, Fanout::Clone(c), depth)).await
            }
            Flow::Iterate(it, bodies) => {
                return Box::pin(self.clone_flow(
                    proxy,
                    msg,
                    stream,
                    Fanout::Iterate(it, bodies),
                    depth,
                ))
                .await
            }
            // A message marked as a response (RESPONSE, loopback) whose flow ends: the answer.
            Flow::Continue if msg.is_response() => return self.reply(msg, stream).await,
            // Synapse acknowledges a resource that sends nothing.
            Flow::Continue if proxy.api_resource && msg.to.is_none() => {
                discard(stream).await;
                return accepted();
            }
            Flow::Continue | Flow::Send(None) => (None, None),
        };
        match self.destination(proxy, &msg, ep) {
            Ok(ep) => self.call(proxy, msg, stream, ep, after, depth).await,
            Err(e) => {
                discard(stream).await;
                self.default_fault(msg.soap, &e)
            }
        }
    }

    /// Where a message goes: the endpoint the send or call named, else the WS-Addressing To set by
    /// a header mediator, else the proxy's target endpoint.
    fn destination(
        &self,
        proxy: &ProxyPlan,
        msg: &Message,
        named: Option<Arc<EndpointPlan>>,
    ) -> Result<Arc<EndpointPlan>, Error> {
        if let Some(ep) = named {
            return Ok(ep);
        }
        // Its address is the message's own, resolved when it is sent (EndpointPlan::for_message).
        if msg.to.is_some() {
            return Ok(self.to_address.clone());
        }
        proxy.target.clone().ok_or_else(|| {
            Error::new(
                ErrorKind::NoRoute,
                format!(
                    "{} has nowhere to send the message: the sequence ended, or a send or call named no endpoint; the message has no To address and there is no target endpoint",
                    if proxy.api_resource {
                        format!("a resource of API {}", proxy.name)
                    } else {
                        format!("proxy {}", proxy.name)
                    }
                ),
            )
        })
    }

    /// Sends the message to `ep`; the response goes through the rest after a `call` (`after`), else
    /// the out-sequence, each of which may send again.
    async fn call(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        mut stream: Option<Inbound>,
        mut ep: Arc<EndpointPlan>,
        mut after: Option<Continuation>,
        depth: Depth,
    ) -> Response<RelayBody> {
        if msg.props.is_true("OUT_ONLY") || msg.axis2.is_true("FORCE_SC_ACCEPTED") {
            if msg.calls >= self.opts.max_hops {
                discard(stream).await;
                return self.too_many_calls(&msg);
            }
            msg.calls += 1;
            // A one-way `call`: mediation goes on at once with the message itself, its body in
            // memory (what follows may answer or send it too).
            let go_on = after.take().filter(|_| msg.props.is_true("OUT_ONLY"));
            // Made ready here, so that what fails at once is answered: a group's body in memory
            // (its children are tried in the background as for any send) and at least one of them
            // ready, or an http endpoint's URI.
            if go_on.is_some() || ep.group.is_some() {
                if let Err(error) = self.read_whole(&mut msg, &mut stream).await {
                    let failed = NotSent::unreadable(error);
                    return self.send_failed(proxy, msg, failed, depth).await;
                }
            }
            let kept = go_on.as_ref().map(|_| msg.clone());
            let single = if ep.group.is_some() {
                if !ep.any_ready(Instant::now()) {
                    let failed = NotSent::plain(no_ready_child(&ep));
                    return self.send_failed(proxy, msg, failed, depth).await;
                }
                None
            } else {
                let target = match ep.for_message(&msg) {
                    Ok(t) => t,
                    Err(error) => {
                        let failed = NotSent::with_stream(error, stream);
                        return self.send_failed(proxy, msg, failed, depth).await;
                    }
                };
                let (req, activity) = backend_request(&mut msg, &target, stream.take(), false);
                Some((target, req, activity))
            };
            let (client, limit) = (self.client.clone(), self.opts.default_timeout);
            tokio::spawn(async move {
                let sent = match single {
                    Some((target, req, activity)) => {
                        let limit = target.timeout.unwrap_or(limit);
                        send_with_timeout(&client, req, &target, activity, limit)
                            .await
                            .map_err(|u| u.error)
                    }
                    None => send_to_group(&client, limit, &mut msg, &ep)
                        .await
                        .map(|(r, _)| r)
                        .map_err(|f| f.error),
                };
                match sent {
                    Ok(resp) => {
                        let _ = resp.into_body().collect().await;
                    }
                    Err(e) => {
                        tracing::warn!(proxy = %msg.service, "one-way send failed: {}", e.reason())
                    }
                }
            });
            let (Some(k), Some(mut msg)) = (go_on, kept) else {
                return accepted();
            };
            let flow = match mediate!(self, msg, Work::Resume(k)) {
                Ok(f) => f,
                Err(e) => return self.send_failed(proxy, msg, NotSent::plain(e), depth).await,
            };
            return Box::pin(self.request_decided(proxy, msg, None, flow, depth)).await;
        }
        // The request headers are only needed after the call by a fault sequence that has something in it.
        let keep_headers = proxy
            .fault_seq
            .as_ref()
            .is_some_and(|f| !f.steps.is_empty());
        loop {
            if msg.calls >= self.opts.max_hops {
                discard(stream).await;
                return self.too_many_calls(&msg);
            }
            msg.calls += 1;
            let sent = self
                .send_routed(&mut msg, stream.take(), &ep, keep_headers)
                .await;
            let (resp, leaf) = match sent {
                Ok(r) => r,
                Err(failed) => return self.send_failed(proxy, msg, failed, depth).await,
            };
            let limit = leaf.timeout.unwrap_or(self.opts.default_timeout);
            // A call made on the request path: its response is not the answer yet (Synapse keeps
            // it a request), so a `loopback` in what follows takes it through the out-sequence.
            let call_on_request_path = after.is_some() && !msg.is_response();
            let (parts, body) = resp.into_parts();
            let mut rmsg = msg.into_response(parts.status, parts.headers);
            let mut rstream = Some(Inbound::Backend(body));
            let idle = IdleTimeout::new(limit, leaf.label.clone());
            // After a `call`, the rest of the sequences it was in; after a `send`, the out-sequence.
            let rest = match (after.take(), &proxy.out_seq) {
                (Some(k), _) => Ok(k),
                (None, Some(out)) => Err(out),
                (None, None) => return client_response(rmsg, rstream, Some(idle)),
            };
            let need = rest.as_ref().map_or_else(
                |out| out.need_for(&rmsg.headers),
                |k| k.body_need(sluice_mediation::json::is_json_headers(&rmsg.headers)),
            );
            if need != BodyNeed::None {
                match self.buffer(rstream.take(), "response").await {
                    Ok(b) => rmsg.body = read_body(b),
                    Err(e) => return self.default_fault(rmsg.soap, &e),
                }
            }
            let flow = match rest {
                Ok(k) => mediate!(self, rmsg, Work::Resume(k)),
                Err(out) => mediate!(self, rmsg, Work::Seq(out)),
            };
            let next = match flow {
                Err(e) => {
                    return self
                        .send_failed(proxy, rmsg, NotSent::with_stream(e, rstream), depth)
                        .await
                }
                Ok(Flow::Loopback) if call_on_request_path && proxy.out_seq.is_some() => {
                    return Box::pin(self.loopback(proxy, rmsg, rstream, depth)).await
                }
                Ok(Flow::Continue | Flow::Send(None) | Flow::Respond | Flow::Loopback) => {
                    return client_response(rmsg, rstream, Some(idle))
                }
                Ok(Flow::Drop | Flow::Absorbed) => return accepted(),
                Ok(Flow::Clone(c)) => {
                    return Box::pin(self.clone_flow(proxy, rmsg, rstream, Fanout::Clone(c), depth))
                        .await
                }
                Ok(Flow::Iterate(it, bodies)) => {
                    return Box::pin(self.clone_flow(
                        proxy,
                        rmsg,
                        rstream,
                        Fanout::Iterate(it, bodies),
                        depth,
                    ))
                    .await
                }
                Ok(Flow::Send(Some(next))) => next,
                Ok(Flow::Call(next, k)) => {
                    after = Some(k);
                    match self.destination(proxy, &rmsg, next) {
                        Ok(ep) => ep,
                        Err(e) => {
                            discard(rstream).await;
                            return self.default_fault(rmsg.soap, &e);
                        }
                    }
                }
            };
            if rmsg.props.is_true("OUT_ONLY") || rmsg.axis2.is_true("FORCE_SC_ACCEPTED") {
                // A one-way send or call from the response path: the top of `call` handles it
                // (the count of calls goes with the message).
                let after = after.take();
                return Box::pin(self.call(proxy, rmsg, rstream, next, after, depth)).await;
            }
            msg = rmsg;
            stream = rstream;
            ep = next;
        }
    }

    /// `loopback` on the request path: the message becomes a response (Synapse's `RESPONSE`) and
    /// goes through the out-sequence, which reads its body if it needs to (a stream nothing read is
    /// read then); what that sequence decides is carried out as on any response path, and a flow
    /// that ends there answers the client with the message, as `respond` does. Without an
    /// out-sequence the message is the answer.
    async fn loopback(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        mut stream: Option<Inbound>,
        depth: Depth,
    ) -> Response<RelayBody> {
        msg.props.set("RESPONSE", "true".to_owned());
        msg.to = None;
        let Some(out) = proxy.out_seq.clone() else {
            return self.reply(msg, stream).await;
        };
        if out.need_for(&msg.headers) != BodyNeed::None {
            if let Err(e) = self.read_whole(&mut msg, &mut stream).await {
                return self.default_fault(msg.soap, &e);
            }
        }
        let flow = match mediate!(self, msg, Work::Seq(&out)) {
            Ok(f) => f,
            Err(e) => {
                return self
                    .send_failed(proxy, msg, NotSent::with_stream(e, stream), depth)
                    .await
            }
        };
        match flow {
            Flow::Continue | Flow::Send(None) | Flow::Respond | Flow::Loopback => {
                self.reply(msg, stream).await
            }
            other => Box::pin(self.request_decided(proxy, msg, stream, other, depth)).await,
        }
    }

    /// `clone` and `iterate`: the whole message is read, and each target gets a copy (an
    /// iterate's copy its own part as payload), sharing one `Gather` for an `aggregate` to collect
    /// them, run through its sequence, else sent to its endpoint or `to` address, all at once
    /// within this request. The answer is the first copy's real answer (not a [`NoAnswer`]
    /// 202): the one that completed the aggregate, or a copy's fault. When no copy answered
    /// before the aggregate's count was reached (some were dropped or failed), the aggregate
    /// completes with what it has, and what its `onComplete` decides is carried out.
    async fn clone_flow(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        mut stream: Option<Inbound>,
        fanout: Fanout,
        depth: Depth,
    ) -> Response<RelayBody> {
        if let Err(e) = self.read_whole(&mut msg, &mut stream).await {
            return self.default_fault(msg.soap, &e);
        }
        // Each copy's target, and its own body (an iterate's part) or the message's.
        let targets: Vec<(&sluice_mediation::plan::CloneTargetPlan, Option<Bytes>)> = match &fanout
        {
            Fanout::Clone(c) => c.targets.iter().map(|t| (t, None)).collect(),
            Fanout::Iterate(it, bodies) => bodies
                .iter()
                .map(|b| (&it.target, Some(b.clone())))
                .collect(),
        };
        if targets.is_empty() {
            // Nothing to send (an iterate over no element): nothing comes back to aggregate.
            return accepted();
        }
        let gather = Arc::new(sluice_mediation::message::Gather::new(targets.len()));
        msg.gather = Some(gather.clone());
        let mut copies = Vec::with_capacity(targets.len());
        for (t, body) in targets {
            let mut copy = msg.clone();
            if let Some(b) = body {
                copy.body = Body::Bytes(b);
                copy.headers.remove(header::CONTENT_LENGTH);
            }
            if let Some(to) = &t.to {
                copy.to = Some(to.clone());
            }
            if let Some(a) = &t.soap_action {
                copy.action = Some(sluice_mediation::message::ActionChange::Set(a.clone()));
            }
            copies.push(Box::pin(async move {
                // The target's sequence, or else its endpoint (Synapse's Target); a sequence that
                // ends without sending ends the copy, with no answer of its own.
                let flow = match (&t.sequence, &t.endpoint) {
                    (Some(seq), _) => match mediate!(self, copy, Work::Seq(seq)) {
                        Ok(Flow::Continue) => return accepted(),
                        Ok(f) => f,
                        Err(e) => return Box::pin(self.fault_flow(proxy, copy, e, None)).await,
                    },
                    (None, Some(ep)) => Flow::Send(Some(ep.clone())),
                    // Only a `to`: the copy goes to that address.
                    (None, None) if copy.to.is_some() => Flow::Send(None),
                    (None, None) => return accepted(),
                };
                self.request_decided(proxy, copy, None, flow, depth).await
            }));
        }
        let answers = join_all(copies).await;
        // The first real answer: not a copy an aggregate kept, nor one dropped or sent one-way.
        if let Some(r) = answers
            .into_iter()
            .find(|r| r.extensions().get::<NoAnswer>().is_none())
        {
            return r;
        }
        // What onComplete decided is carried out as on any response path.
        match exec::complete_gather(&gather) {
            None => accepted(),
            Some((m, Err(e))) => self.default_fault(m.soap, &e),
            Some((m, Ok(flow))) => {
                Box::pin(self.request_decided(proxy, m, None, flow, depth)).await
            }
        }
    }

    fn too_many_calls(&self, msg: &Message) -> Response<RelayBody> {
        let e = Error::new(
            ErrorKind::Mediation,
            format!(
                "more than {} back-end calls for one request",
                self.opts.max_hops
            ),
        );
        self.default_fault(msg.soap, &e)
    }

    /// Runs the fault sequence (the proxy's, else the sequence named "fault") for an error. If it answers,
    /// that is the answer; otherwise a fault in the request's SOAP version with the status of the error.
    async fn fault_flow(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        err: Error,
        stream: Option<Inbound>,
    ) -> Response<RelayBody> {
        tracing::warn!(proxy = %proxy.name, kind = ?err.kind, "{}", err.reason());
        // A run stopped on its deadline left no message to run a fault sequence on.
        let fs = proxy
            .fault_seq
            .as_ref()
            .filter(|_| err.kind != ErrorKind::Stopped);
        let Some(fs) = fs else {
            discard(stream).await;
            return self.default_fault(msg.soap, &err);
        };
        msg.props
            .set("ERROR_CODE", err.kind.synapse_code().to_string());
        msg.props.set("ERROR_MESSAGE", err.reason());
        msg.props.set("ERROR_DETAIL", err.reason());
        // A fault sequence that reads the body reads it now, from the stream nothing consumed (the
        // body a mediator needed before is already in the message).
        let mut stream = stream;
        if fs.need_for(&msg.headers) != BodyNeed::None {
            if let Err(e) = self.read_whole(&mut msg, &mut stream).await {
                return self.default_fault(msg.soap, &e);
            }
        }
        msg.direction = Direction::Request;
        let soap = msg.soap;
        // The body it would send is there: in memory, or the stream nothing consumed.
        let sendable = !matches!(msg.body, Body::Stream | Body::Head(_)) || stream.is_some();
        match mediate!(self, msg, Work::Seq(fs)) {
            // On the request path, loopback goes through the out-sequence (Synapse).
            Ok(Flow::Loopback) if !msg.is_response() && proxy.out_seq.is_some() => {
                Box::pin(self.loopback(proxy, msg, stream, Depth::InFault)).await
            }
            Ok(Flow::Respond | Flow::Loopback | Flow::Send(None))
                if !matches!(msg.body, Body::Stream | Body::Head(_)) =>
            {
                discard(stream).await;
                client_response(msg, None, None)
            }
            // A failure of this send or call is not handled by the fault sequence again.
            Ok(Flow::Send(Some(ep))) if sendable => {
                Box::pin(self.call(proxy, msg, stream, ep, None, Depth::InFault)).await
            }
            Ok(Flow::Call(ep, k)) if sendable => match self.destination(proxy, &msg, ep) {
                Ok(ep) => {
                    Box::pin(self.call(proxy, msg, stream, ep, Some(k), Depth::InFault)).await
                }
                Err(e) => {
                    discard(stream).await;
                    self.default_fault(soap, &e)
                }
            },
            Ok(_) => {
                discard(stream).await;
                self.default_fault(soap, &err)
            }
            Err(e2) => {
                tracing::warn!(proxy = %proxy.name, "fault sequence failed: {}", e2.reason());
                discard(stream).await;
                self.default_fault(soap, &err)
            }
        }
    }

    /// The answer when a send got no response, or mediation failed after one: the fault sequence
    /// (not for a failure inside one, which would loop, nor when the failure says to skip it), else
    /// Sluice's own fault.
    async fn send_failed(
        &self,
        proxy: &Arc<ProxyPlan>,
        msg: Message,
        failed: NotSent,
        depth: Depth,
    ) -> Response<RelayBody> {
        let NotSent {
            error: e,
            stream,
            skip_fault_sequence,
        } = failed;
        if depth == Depth::Normal && skip_fault_sequence.is_none() {
            // Boxed: the fault path's state stays out of every request's future.
            return Box::pin(self.fault_flow(proxy, msg, e, stream)).await;
        }
        let why = skip_fault_sequence.unwrap_or("in a fault sequence");
        tracing::warn!(proxy = %proxy.name, "{} ({why})", e.reason());
        discard(stream).await;
        self.default_fault(msg.soap, &e)
    }

    /// Reads the rest of a streamed body into the message (`Body::Bytes`): the stream, after the
    /// start a SOAP-header expression read (`Body::Head`). Nothing to do for a body in memory.
    async fn read_whole(
        &self,
        msg: &mut Message,
        stream: &mut Option<Inbound>,
    ) -> Result<(), Error> {
        if stream.is_none() {
            return Ok(());
        }
        let before = match std::mem::replace(&mut msg.body, Body::Empty) {
            Body::Stream => Bytes::new(),
            Body::Head(head) => head,
            other => {
                msg.body = other;
                return Ok(());
            }
        };
        let what = if msg.is_response() {
            "response"
        } else {
            "request"
        };
        msg.body = Body::Bytes(self.buffer_after(before, stream.take(), what).await?);
        Ok(())
    }

    /// Sends the message to an address endpoint, or through a failover or load-balance endpoint to
    /// one of its ready children, trying the next one after a failure when the group fails over
    /// (never one this message already failed on). Returns the response and the endpoint that gave
    /// it.
    async fn send_routed(
        &self,
        msg: &mut Message,
        mut stream: Option<Inbound>,
        ep: &Arc<EndpointPlan>,
        keep_headers: bool,
    ) -> Result<(Response<BackendBody>, Arc<EndpointPlan>), NotSent> {
        if ep.group.is_none() {
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

    async fn reply(&self, msg: Message, req_stream: Option<Inbound>) -> Response<RelayBody> {
        let stream = if matches!(msg.body, Body::Stream | Body::Head(_)) {
            req_stream
        } else {
            discard(req_stream).await;
            None
        };
        client_response(msg, stream, None)
    }

    /// Reads the request body only as far as the sequence's expressions need (they read nothing but
    /// the SOAP header): frame by frame until all of them are decided by what was read. Returns what was
    /// read and the rest of the stream (`None` when the whole body was read: it ended, or the start grew
    /// past [`HEAD_PROBE_LIMIT`] undecided, after which it is read whole like any body a mediator needs).
    async fn read_head(
        &self,
        seq: &sluice_mediation::SeqPlan,
        stream: Option<Inbound>,
    ) -> Result<(Bytes, Option<Inbound>), Error> {
        let Some(mut s) = stream else {
            return Ok((Bytes::new(), None));
        };
        // Not sized by the announced length, nor refused by it: most of it is relayed, not read.
        let mut start = Gathered::default();
        let mut probed = 0;
        while let Some(frame) = s.frame().await {
            let frame = frame
                .map_err(|e| request_body_error(e, "reading the request body failed".into()))?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers: not relayed, as for a buffered body
            };
            // Whether to look again: the start read so far was within the probe limit. A frame can
            // be larger than the limit (hyper reads up to ~400 KiB at once), so the check is on what
            // came before this frame, not on the total.
            let before = start.bytes().len();
            // And at least twice what was looked at last: each look reads the start again from
            // its beginning, so a body in many small frames costs at most twice its length in
            // looks, not its length times its frames.
            let probe = before <= HEAD_PROBE_LIMIT && before + data.len() >= 2 * probed;
            start.push(data);
            start.count(&self.opts.body_budget)?;
            let head = start.bytes();
            if head.len() > self.opts.max_buffered_body {
                return Err(too_large("request", self.opts.max_buffered_body));
            }
            if hyper::body::Body::is_end_stream(&s) {
                break; // all of it is here: no need to relay a stream after it
            }
            if probe {
                probed = head.len();
                if seq.decided_by_head(head) {
                    return Ok((start.finish(), Some(s)));
                }
            }
        }
        Ok((start.finish(), None))
    }

    async fn buffer(&self, stream: Option<Inbound>, what: &str) -> Result<Bytes, Error> {
        self.buffer_after(Bytes::new(), stream, what).await
    }

    /// Where a body read into memory gathers: refused at once when it announces a length over the
    /// limit, else sized for the length it announces.
    fn gathering(&self, s: &Inbound, what: &str) -> Result<Gathered, Error> {
        let limit = self.opts.max_buffered_body;
        let expect = http_body::Body::size_hint(s).exact().unwrap_or(0);
        if expect > limit as u64 {
            return Err(too_large(what, limit));
        }
        Ok(Gathered::expecting(expect as usize, limit))
    }

    /// `start` (already read) and then the rest of `stream`, read into memory within the limits:
    /// the body limit (413) and the process-wide budget of bodies in memory (503).
    async fn buffer_after(
        &self,
        start: Bytes,
        stream: Option<Inbound>,
        what: &str,
    ) -> Result<Bytes, Error> {
        let Some(s) = stream else {
            return Ok(start);
        };
        let limit = self.opts.max_buffered_body;
        let mut body_bytes = self.gathering(&s, what)?;
        body_bytes.push(start);
        let mut body = http_body_util::Limited::new(s, limit);
        let failed = |e: Box<dyn std::error::Error + Send + Sync>| {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                too_large(what, limit)
            } else {
                request_body_error(e, format!("reading the {what} body failed"))
            }
        };
        while let Some(frame) = body.frame().await {
            // Trailers are not part of the message.
            if let Ok(data) = frame.map_err(failed)?.into_data() {
                body_bytes.push(data);
                body_bytes.count(&self.opts.body_budget)?;
            }
        }
        Ok(body_bytes.finish())
    }

    fn default_fault(&self, soap: FaultVersion, e: &Error) -> Response<RelayBody> {
        error_response(
            soap,
            e,
            StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        )
    }

    fn listing(&self) -> Response<RelayBody> {
        let mut s = format!("Deployed services: {}\n", self.services);
        for (name, why) in &self.plan.not_deployed {
            s.push_str(&format!("Not deployed: {name}: {why}\n"));
        }
        text_response(StatusCode::OK, s)
    }

    fn not_found(&self, method: &Method, headers: &HeaderMap, path: &str) -> Response<RelayBody> {
        let msg = format!(
            "no service at {path}; deployed services (under /services/): {}",
            self.services
        );
        if method == Method::GET {
            return text_response(StatusCode::NOT_FOUND, msg + "\n");
        }
        error_response(
            fault_version(headers),
            &Error::new(ErrorKind::NotFound, msg),
            StatusCode::NOT_FOUND,
        )
    }

    /// The proxy's WSDL with its address on the listener (http or https) and Host it was asked on.
    fn wsdl(
        &self,
        proxy: &ProxyPlan,
        headers: &HeaderMap,
        transport: Transport,
    ) -> Response<RelayBody> {
        let Some(w) = &proxy.wsdl else {
            return text_response(
                StatusCode::NOT_FOUND,
                format!("proxy {} publishes no WSDL\n", proxy.name),
            );
        };
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost:8290");
        let scheme = match transport {
            Transport::Http => "http",
            Transport::Https => "https",
        };
        let url = format!("{scheme}://{host}/services/{}", proxy.name);
        let mut r = Response::new(RelayBody::full(Bytes::from(w.render(&url))));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/xml; charset=UTF-8"),
        );
        r
    }
}

/// Sends a message whose body is in memory through a failover or load-balance endpoint: to the
/// child [`EndpointPlan::pick`] chooses, then, after a back-end failure the child's `retryConfig`
/// allows, to the one [`EndpointPlan::pick_after_failure`] chooses (never one this message already
/// failed on). Returns the response and the endpoint that gave it.
async fn send_to_group(
    client: &BackendClient,
    default_timeout: Duration,
    msg: &mut Message,
    ep: &Arc<EndpointPlan>,
) -> Result<(Response<BackendBody>, Arc<EndpointPlan>), NotSent> {
    let Some(mut leaf) = ep.pick(Instant::now(), &[]) else {
        return Err(NotSent::plain(no_ready_child(ep)));
    };
    let mut tried = Vec::new();
    loop {
        // The body is in memory: nothing to hand over, and the headers are kept for the next try.
        let mut failed = match send_once(client, default_timeout, msg, &leaf, None, true).await {
            Ok(r) => return Ok(r),
            Err(f) => f,
        };
        let kind = failed.error.kind;
        if failed.skip_fault_sequence.is_some()
            || !kind.is_backend_failure()
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
async fn send_once(
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
    let (req, activity) = backend_request(msg, &target, stream, keep_headers);
    let limit = target.timeout.unwrap_or(default_timeout);
    match send_with_timeout(client, req, &target, activity, limit).await {
        Ok(r) => Ok((r, target)),
        Err(u) => Err(NotSent::from_unsent(u, &target)),
    }
}

/// The HTTP request for a message to an address endpoint: its headers without hop-by-hop ones, the
/// endpoint's Host and URI, and the body (the stream, the start read and the stream, or bytes).
fn backend_request(
    msg: &mut Message,
    ep: &EndpointPlan,
    stream: Option<Inbound>,
    keep_headers: bool,
) -> (Request<RelayBody>, Option<Arc<Activity>>) {
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
    msg.apply_action(&mut headers);
    let mut activity = None;
    let body = if msg.axis2.is_true("NO_ENTITY_BODY") {
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
    *req.method_mut() = ep.method.clone().unwrap_or_else(|| msg.method.clone());
    *req.uri_mut() = ep.uri.clone();
    *req.headers_mut() = headers;
    (req, activity)
}

/// A send that got no response: why, the request body if nothing read it, and why the fault sequence
/// is not to run, if it is not (the endpoint's `responseAction` is discard and it timed out, or the
/// body could not be read).
struct NotSent {
    error: Error,
    stream: Option<Inbound>,
    skip_fault_sequence: Option<&'static str>,
}

impl NotSent {
    fn plain(error: Error) -> Self {
        NotSent::with_stream(error, None)
    }

    /// A failure before anything was sent: the body is still there for the fault sequence.
    fn with_stream(error: Error, stream: Option<Inbound>) -> Self {
        NotSent {
            error,
            stream,
            skip_fault_sequence: None,
        }
    }

    /// The body could not be read into memory: nothing may send it, not even the fault sequence
    /// (it would go out empty).
    fn unreadable(error: Error) -> Self {
        NotSent {
            error,
            stream: None,
            skip_fault_sequence: Some("the request body could not be read"),
        }
    }

    fn from_unsent(u: Unsent, ep: &EndpointPlan) -> Self {
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
fn no_ready_child(ep: &EndpointPlan) -> Error {
    Error::new(
        ErrorKind::NoReadyChild,
        format!("{} has no ready child endpoint", ep.describe()),
    )
}

/// Sends to the endpoint unless it is suspended, and keeps its suspension state: any response makes
/// it active, a failure may mark or suspend it (`sluice_mediation::health`).
async fn send_with_timeout(
    client: &BackendClient,
    req: Request<RelayBody>,
    ep: &EndpointPlan,
    activity: Option<Arc<Activity>>,
    limit: Duration,
) -> Result<http::Response<BackendBody>, Unsent> {
    if let Readiness::Suspended(left) = ep.health.readiness(Instant::now()) {
        let state = if ep.health.is_suspended() {
            "suspended"
        } else {
            "marked for suspension"
        };
        let error = Error::new(
            ErrorKind::EndpointSuspended,
            format!(
                "{} is {state} for another {} ms",
                ep.describe(),
                left.as_millis()
            ),
        );
        // Nothing was read from the body: the fault sequence may still read it or send it on.
        return Err(Unsent {
            error,
            body: Some(req.into_body()),
        });
    }
    let r = send_timed(client, req, ep, activity, limit).await;
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

async fn send_timed(
    client: &BackendClient,
    req: Request<RelayBody>,
    ep: &EndpointPlan,
    activity: Option<Arc<Activity>>,
    limit: Duration,
) -> Result<http::Response<BackendBody>, Unsent> {
    let fut = client.send(req, ep);
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

/// `ContentType` (else `messageType`) in the axis2 scope sets the outgoing Content-Type.
fn apply_content_type_props(axis2: &sluice_mediation::message::Props, headers: &mut HeaderMap) {
    let ct = axis2
        .get("ContentType")
        .or_else(|| axis2.get("messageType"));
    if let Some(v) = ct.and_then(|c| HeaderValue::from_str(c).ok()) {
        headers.insert(header::CONTENT_TYPE, v);
    }
}

/// The answer to the client for a message. On the response path the back-end's end-to-end headers are
/// relayed; on the request path (respond, makefault + send) only the content headers of the message.
fn client_response(
    msg: Message,
    stream: Option<Inbound>,
    idle: Option<IdleTimeout>,
) -> Response<RelayBody> {
    let status = msg.status.unwrap_or(if msg.is_fault {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    });
    let mut headers = if msg.direction == Direction::Response {
        let mut h = msg.headers;
        strip_hop_by_hop(&mut h);
        h
    } else {
        let mut h = HeaderMap::new();
        if let Some(ct) = msg.headers.get(header::CONTENT_TYPE) {
            h.insert(header::CONTENT_TYPE, ct.clone());
        }
        for name in &msg.set_headers {
            if REQUEST_ONLY.contains(name) {
                continue;
            }
            if let Some(v) = msg.headers.get(name) {
                h.insert(name.clone(), v.clone());
            }
        }
        strip_hop_by_hop(&mut h);
        if matches!(msg.body, Body::Stream | Body::Head(_)) {
            if let Some(cl) = msg.headers.get(header::CONTENT_LENGTH) {
                h.insert(header::CONTENT_LENGTH, cl.clone());
            }
        }
        h
    };
    apply_content_type_props(&msg.axis2, &mut headers);
    let json_out = msg.json_out;
    if let Some((_, ct)) = &json_out {
        headers.insert(header::CONTENT_TYPE, ct.clone());
    }
    let body = if msg.axis2.is_true("NO_ENTITY_BODY") {
        headers.remove(header::CONTENT_LENGTH);
        RelayBody::Empty
    } else {
        match msg.body {
            // Written as JSON (the XML it was made from stays with the message).
            Body::Bytes(b) => {
                let j = json_out.map_or(b, |(j, _)| j);
                set_length(&mut headers, j.len());
                RelayBody::full(j)
            }
            Body::Stream => match stream {
                Some(s) => RelayBody::stream_with(s, idle, None),
                None => RelayBody::Empty,
            },
            Body::Head(b) => match stream {
                Some(s) => RelayBody::stream_after(b, s, idle, None),
                None => {
                    set_length(&mut headers, b.len());
                    RelayBody::full(b)
                }
            },
            Body::Empty => {
                headers.remove(header::CONTENT_LENGTH);
                RelayBody::Empty
            }
        }
    };
    let mut r = Response::new(body);
    *r.status_mut() = status;
    *r.headers_mut() = headers;
    r
}

/// The longest method Sluice takes (the longest registered HTTP method is 17 bytes).
pub const MAX_METHOD_LEN: usize = 32;

/// A request head RFC 9112 says to refuse with 400: HTTP/1.1 without exactly one Host, or a method
/// longer than [`MAX_METHOD_LEN`] (hyper has already refused one that is not a token, and a head
/// over the limit with 431).
fn refuse_head(parts: &http::request::Parts) -> Option<Response<RelayBody>> {
    let mut hosts = parts.headers.get_all(header::HOST).iter();
    let why = match (hosts.next(), hosts.next()) {
        (_, Some(_)) => "more than one Host header",
        (None, _) if parts.version == http::Version::HTTP_11 => "an HTTP/1.1 request without Host",
        _ if parts.method.as_str().len() > MAX_METHOD_LEN => "a method longer than 32 bytes",
        _ => return None,
    };
    let e = Error::new(ErrorKind::BadRequest, why);
    let mut r = error_response(fault_version(&parts.headers), &e, StatusCode::BAD_REQUEST);
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    Some(r)
}

fn fault_version(headers: &HeaderMap) -> FaultVersion {
    sluice_mediation::message::soap_version(headers)
}

/// A fault for an error, in the given SOAP version, with a status.
pub fn error_response(soap: FaultVersion, e: &Error, status: StatusCode) -> Response<RelayBody> {
    let code = fault::server_or_client(soap, e.kind.is_client_fault());
    let body = fault::build(
        soap,
        &FaultParts {
            code: Some(code),
            reason: &e.reason(),
            ..Default::default()
        },
    );
    let mut r = Response::new(RelayBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(fault::content_type(soap)),
    );
    if e.kind == ErrorKind::Overloaded {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

fn text_response(status: StatusCode, s: String) -> Response<RelayBody> {
    let mut r = Response::new(RelayBody::full(Bytes::from(s)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=UTF-8"),
    );
    r
}

/// Headers a mediator may set for the back-end that never go back to the client (credentials).
const REQUEST_ONLY: [header::HeaderName; 5] = [
    header::AUTHORIZATION,
    header::PROXY_AUTHORIZATION,
    header::COOKIE,
    header::HOST,
    header::EXPECT,
];

/// A body read whole: none at all is `Empty` (a GET, a 202), which mediators treat as a message
/// with no payload yet (payloadFactory makes one) rather than as malformed XML.
fn read_body(b: Bytes) -> Body {
    if b.is_empty() {
        Body::Empty
    } else {
        Body::Bytes(b)
    }
}

/// What `clone_flow` fans a message out for.
enum Fanout {
    Clone(Arc<sluice_mediation::plan::ClonePlan>),
    Iterate(Arc<sluice_mediation::plan::IteratePlan>, Vec<Bytes>),
}

/// Marks a 202 that acknowledges rather than answers (a drop, a one-way send, a copy an
/// `aggregate` kept or whose target sequence sent nothing): among a clone's copies, not the
/// client's answer.
#[derive(Clone, Copy)]
struct NoAnswer;

/// Every future's output, in order, once all have ended: polled together, each only when it was
/// woken (`FuturesOrdered`), so many copies cost no more than their own wake-ups.
async fn join_all<F: Future>(futures: Vec<Pin<Box<F>>>) -> Vec<F::Output> {
    use futures_util::stream::{FuturesOrdered, StreamExt};
    futures
        .into_iter()
        .collect::<FuturesOrdered<_>>()
        .collect()
        .await
}

fn accepted() -> Response<RelayBody> {
    let mut r = Response::new(RelayBody::Empty);
    *r.status_mut() = StatusCode::ACCEPTED;
    r.extensions_mut().insert(NoAnswer);
    r
}

/// Reads and drops a request body nobody will use, so the connection stays usable; gives up (and lets the
/// connection close) past a size or time bound.
async fn discard(stream: Option<Inbound>) {
    const MAX: usize = 4 * 1024 * 1024;
    let Some(mut s) = stream else { return };
    // Boxed: most calls have nothing to drain, and the drain's state stays out of their futures.
    let drain = Box::pin(async move {
        let mut n = 0usize;
        while let Some(Ok(frame)) = s.frame().await {
            if let Some(d) = frame.data_ref() {
                n += d.len();
                if n > MAX {
                    return;
                }
            }
        }
    });
    let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
}

/// Sets a response's `Content-Length` to `len`, leaving one header that already says so as it is (a
/// body relayed unchanged keeps the back-end's: no formatting, no new value). Requests need none:
/// the back-end client writes their framing itself.
fn set_length(headers: &mut HeaderMap, len: usize) {
    let mut values = headers.get_all(header::CONTENT_LENGTH).iter();
    let same = match (values.next(), values.next()) {
        (Some(v), None) => {
            h1::parse_length(v.as_bytes()).is_ok_and(|n| u64::try_from(len) == Ok(n))
        }
        _ => false,
    };
    if !same {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_length_keeps_one_matching_header_and_replaces_the_rest() {
        let length = |h: &HeaderMap| {
            h.get_all(header::CONTENT_LENGTH)
                .iter()
                .map(|v| v.to_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        let mut h = HeaderMap::new();
        set_length(&mut h, 12);
        assert_eq!(length(&h), ["12"]);
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("012"));
        set_length(&mut h, 12);
        assert_eq!(
            length(&h),
            ["012"],
            "the same length, as the client wrote it"
        );
        set_length(&mut h, 13);
        assert_eq!(length(&h), ["13"]);
        h.append(header::CONTENT_LENGTH, HeaderValue::from_static("13"));
        set_length(&mut h, 13);
        assert_eq!(length(&h), ["13"], "two headers become one");
        for wrong in ["x", "+13", "", "1 3", "00000000000000000013"] {
            h.insert(header::CONTENT_LENGTH, HeaderValue::from_static(wrong));
            set_length(&mut h, 13);
            assert_eq!(length(&h), ["13"]);
        }
    }
}
