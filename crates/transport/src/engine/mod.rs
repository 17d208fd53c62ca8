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
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use sluice_config::FaultVersion;
use sluice_expr::BodyNeed;
use sluice_mediation::api::{self, Miss};
use sluice_mediation::fault::{self, FaultParts};
use sluice_mediation::format::Format;
use sluice_mediation::health::{Change, Readiness};
use sluice_mediation::{
    exec, Body, Continuation, Direction, EndpointPlan, Error, ErrorKind, Flow, Message, Plan,
    ProxyPlan,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod dispatch;
mod read;
pub use read::{HeadProbe, HEAD_PROBE_ALWAYS};
mod response;
mod send;

pub use dispatch::MAX_METHOD_LEN;
pub use response::error_response;
use response::*;
use send::*;

/// Runs a [`Work`] on a message: here, or for a large message on the pool's thread ([`Offload`]).
/// A macro, not an async method: the usual run (here) then costs no future of its own.
macro_rules! mediate {
    ($engine:expr, $msg:expr, $work:expr) => {{
        let work = $work;
        if $engine.opts.offload.wants(&$msg) || work.heavy() {
            // Boxed: the hand-over's state stays out of every request's future.
            Box::pin(crate::offload::traced(
                &$engine.opts.offload,
                &mut $msg,
                work.owned(),
            ))
            .await
        } else {
            match crate::otel::enabled() {
                None => work.run(&mut $msg),
                Some(t) => {
                    let parent = $msg.trace.as_deref().copied();
                    t.phase(parent.as_ref(), work.name(&$msg), || work.run(&mut $msg))
                }
            }
        }
    }};
}

// After the macro, which it uses.
mod branches;
// After `mediate!`, which it uses.
mod initiator;
mod processor;
mod secured;

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
    /// Where requests are counted ([`crate::metrics`]); `None`: not counted.
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Where a line per request goes ([`crate::access_log`]); `None`: nowhere.
    pub access_log: Option<Arc<crate::access_log::AccessLog>>,
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
            body_budget: BodyBudget::new(sluice_mediation::budget::DEFAULT_CAP),
            metrics: None,
            access_log: None,
        }
    }
}

pub struct Engine {
    /// This engine, for work that outlives the request that started it (a clone's copies still
    /// running when its aggregate has answered).
    me: std::sync::Weak<Engine>,
    plan: Arc<Plan>,
    client: BackendClient,
    opts: EngineOptions,
    services: String,
    /// Where a message goes by its To address when the flow names no endpoint.
    to_address: Arc<EndpointPlan>,
    /// This worker's request counters.
    stats: Option<Arc<crate::metrics::Shard>>,
}

/// The services a 404 page lists.
fn services_text(plan: &Plan) -> String {
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
    services
}

/// How deep in fault handling a call is: a failure inside a fault sequence's own send is not handled again.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Depth {
    Normal,
    InFault,
}

/// Which listener a request came in on (a proxy's `transports` decide which serve it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Http,
    Https,
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
        let stats = opts.metrics.as_ref().map(|m| m.shard(&plan.services));
        Arc::new_cyclic(|me| Engine {
            me: me.clone(),
            client: BackendClient::new(opts.connect_timeout, opts.backend_tls.clone()),
            services: services_text(&plan),
            plan,
            opts,
            to_address: Arc::new(EndpointPlan::to_address()),
            stats,
        })
    }

    /// This engine for another plan (a reload's): the same back-end connections and options, the
    /// worker's counters for the new plan's services.
    pub fn renewed(&self, plan: Arc<Plan>) -> Arc<Self> {
        let stats = match (&self.opts.metrics, &self.stats) {
            (Some(m), Some(old)) => Some(m.renewed(old, &plan.services)),
            _ => None,
        };
        Arc::new_cyclic(|me| Engine {
            me: me.clone(),
            client: self.client.clone(),
            services: services_text(&plan),
            plan,
            opts: self.opts.clone(),
            to_address: self.to_address.clone(),
            stats,
        })
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// This worker's client traffic counters, when requests are counted.
    pub fn traffic(&self) -> Option<Arc<crate::metrics::Traffic>> {
        self.stats.as_ref().map(|s| s.traffic())
    }

    /// The access log, when requests are logged.
    pub fn access_log(&self) -> Option<Arc<crate::access_log::AccessLog>> {
        self.opts.access_log.clone()
    }

    /// A client's request body, held to the pace the options set.
    fn client_body(&self, body: hyper::body::Incoming) -> Inbound {
        Inbound::Client(ClientBody::new(body, self.opts.body_pace))
    }

    async fn request_flow(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        body: hyper::body::Incoming,
    ) -> Response<RelayBody> {
        let mut stream = Some(self.client_body(body));
        let need = proxy.request_body_need(&msg);
        if let Some(s) = &self.stats {
            s.body(need);
        }
        match need {
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
        let soap = msg.soap;
        let r = match mediate!(self, msg, Work::Seq(&proxy.in_seq)) {
            Ok(flow) => {
                self.request_decided(proxy, msg, stream, flow, Depth::Normal)
                    .await
            }
            Err(e) => Box::pin(self.fault_flow(proxy, msg, e, stream)).await,
        };
        typed_accepted(r, soap)
    }

    /// Carries out what a sequence decided for a message on its way in (the in-sequence, the rest
    /// after a one-way `call`).
    async fn request_decided(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        mut stream: Option<Inbound>,
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
        let explicit = matches!(flow, Flow::Send(None) | Flow::Call(None, _));
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
                return self
                    .clone_flow(proxy, msg, stream, Fanout::Clone(c), depth)
                    .await
            }
            Flow::Iterate(it, bodies) => {
                return self
                    .clone_flow(proxy, msg, stream, Fanout::Iterate(it, bodies), depth)
                    .await
            }
            Flow::ForkThen(fork, k) => {
                return Box::pin(self.fork_then(proxy, msg, stream, *fork, k, depth)).await
            }
            Flow::Branches(b, k) => {
                return Box::pin(self.branches_then(proxy, msg, stream, *b, k, depth)).await
            }
            Flow::Enqueue(q) => return Box::pin(self.enqueued(proxy, msg, stream, q, depth)).await,
            // A message marked as a response (RESPONSE, loopback) whose flow ends: the answer.
            Flow::Continue if msg.is_response() => return self.reply(msg, stream).await,
            // Synapse acknowledges a resource that sends nothing.
            Flow::Continue if proxy.api_resource && msg.to.is_none() => {
                discard(stream).await;
                return accepted();
            }
            // After a `store` (Synapse's RESPONSE_WRITTEN=SKIP), nowhere to send: the client
            // is answered (Synapse answers only with FORCE_SC_ACCEPTED).
            Flow::Continue
                if msg.to.is_none()
                    && proxy.target.is_none()
                    && msg.props.get("RESPONSE_WRITTEN") == Some("SKIP") =>
            {
                discard(stream).await;
                return accepted();
            }
            Flow::Continue | Flow::Send(None) => (None, None),
        };
        // A send or call that names no endpoint, with no To set and no target: the request's
        // own WS-Addressing To, as in Synapse (its samples route this way).
        if explicit && ep.is_none() && msg.to.is_none() && proxy.target.is_none() {
            if let Err(e) = self.read_whole(&mut msg, &mut stream).await {
                return self.default_fault(msg.soap, &e);
            }
            msg.to = sluice_mediation::addressing::received_to(&msg);
        }
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
            // Boxed: the rare path's state stays out of every request's future.
            return Box::pin(self.one_way(proxy, msg, stream, ep, after, depth)).await;
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
            // A plain XML request (not JSON), which an endpoint's format may send as SOAP.
            let pox = msg.soap == FaultVersion::Pox && !msg.is_response();
            let sent = self
                .send_routed(&mut msg, stream.take(), &ep, keep_headers)
                .await;
            let (resp, leaf) = match sent {
                Ok(r) => r,
                Err(failed) => return self.send_failed(proxy, msg, failed, depth).await,
            };
            let limit = leaf.timeout_for(&msg).unwrap_or(self.opts.default_timeout);
            // A call made on the request path: its response is not the answer yet (Synapse keeps
            // it a request), so a `loopback` in what follows takes it through the out-sequence.
            let call_on_request_path = after.is_some() && !msg.is_response();
            let (parts, body) = resp.into_parts();
            let mut rmsg = msg.into_response(parts.status, parts.headers);
            let mut rstream = Some(Inbound::Backend(body));
            rmsg.reply_pox = pox
                && matches!(leaf.format, Format::Soap11 | Format::Soap12)
                && !sluice_mediation::json::is_json_headers(&rmsg.headers);
            if leaf.security.is_some() || leaf.addressing.is_some() {
                if let Err(e) = self.take_in(&leaf, &mut rmsg, &mut rstream).await {
                    return self
                        .send_failed(proxy, rmsg, NotSent::plain(e), depth)
                        .await;
                }
            }
            let idle = IdleTimeout::new(limit, leaf.label.clone());
            // After a `call`, the rest of the sequences it was in; after a `send`, the out-sequence.
            let rest = match (after.take(), &proxy.out_seq) {
                (Some(k), _) => Ok(k),
                (None, Some(out)) => Err(out),
                (None, None) if rmsg.reply_pox => return self.reply(rmsg, rstream).await,
                (None, None) => return client_response(rmsg, rstream, Some(idle)),
            };
            let need = rest.as_ref().map_or_else(
                |out| out.need_for(&rmsg.headers),
                |k| k.body_need(sluice_mediation::json::is_json_headers(&rmsg.headers)),
            );
            // (An answer checked for WS-Security is in memory already.)
            if need != BodyNeed::None && rstream.is_some() {
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
                Ok(Flow::Continue | Flow::Send(None) | Flow::Respond | Flow::Loopback)
                    if rmsg.reply_pox =>
                {
                    return self.reply(rmsg, rstream).await
                }
                Ok(Flow::Continue | Flow::Send(None) | Flow::Respond | Flow::Loopback) => {
                    return client_response(rmsg, rstream, Some(idle))
                }
                Ok(Flow::Drop | Flow::Absorbed) => return accepted(),
                Ok(Flow::Clone(c)) => {
                    return self
                        .clone_flow(proxy, rmsg, rstream, Fanout::Clone(c), depth)
                        .await
                }
                Ok(Flow::Iterate(it, bodies)) => {
                    return self
                        .clone_flow(proxy, rmsg, rstream, Fanout::Iterate(it, bodies), depth)
                        .await
                }
                Ok(Flow::ForkThen(fork, k)) => {
                    return Box::pin(self.fork_then(proxy, rmsg, rstream, *fork, k, depth)).await
                }
                Ok(Flow::Branches(b, k)) => {
                    return Box::pin(self.branches_then(proxy, rmsg, rstream, *b, k, depth)).await
                }
                Ok(Flow::Enqueue(q)) => {
                    return Box::pin(self.enqueued(proxy, rmsg, rstream, q, depth)).await
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

    /// A one-way send or call (`OUT_ONLY`, `FORCE_SC_ACCEPTED`): the message goes to `ep` in the
    /// background; a `call` goes on at once with the message itself, its body in memory (what
    /// follows may answer or send it too), else the client gets a 202.
    async fn one_way(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        mut stream: Option<Inbound>,
        ep: Arc<EndpointPlan>,
        mut after: Option<Continuation>,
        depth: Depth,
    ) -> Response<RelayBody> {
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
        if ep.group.is_none() && (ep.format.converts(&msg) || ep.security.is_some()) {
            if let Err(failed) = self.in_format(&mut msg, &mut stream, &ep).await {
                return self.send_failed(proxy, msg, failed, depth).await;
            }
        }
        // WS-Security towards the back-end: the request leaves secured (no answer is checked).
        if ep.group.is_none() && ep.security.is_some() {
            if let Err(e) = Box::pin(self.secure_to_backend(&mut msg, &ep)).await {
                return self.send_failed(proxy, msg, NotSent::plain(e), depth).await;
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
            let limit = target.timeout_for(&msg);
            let made = crate::correlation::to_send(&msg.correlation);
            let (req, activity) = backend_request(&mut msg, &target, stream.take(), false);
            Some((target, req, activity, limit, made))
        };
        let (client, limit) = (self.client.clone(), self.opts.default_timeout);
        tokio::spawn(async move {
            let sent = match single {
                Some((target, req, activity, own, made)) => {
                    let limit = own.unwrap_or(limit);
                    send_with_timeout(&client, req, &target, activity, limit, made)
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

    /// `enqueue`: the message waits for a place in the priority executor, runs through the
    /// sequence in it, and what that decides is carried out once the place is given back (a
    /// send does not hold it while the back-end answers, as a Synapse worker thread does not).
    async fn enqueued(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        stream: Option<Inbound>,
        q: Arc<sluice_mediation::mediators::enqueue::Enqueued>,
        depth: Depth,
    ) -> Response<RelayBody> {
        let flow = match q.executor.enter(q.queue).await {
            Ok(place) => {
                let flow = mediate!(self, msg, Work::Seq(&q.seq));
                drop(place);
                flow
            }
            Err(e) => Err(e),
        };
        match flow {
            Ok(f) => self.request_decided(proxy, msg, stream, f, depth).await,
            Err(e) => self.fault_flow(proxy, msg, e, stream).await,
        }
    }

    /// `clone` and `iterate`: the whole message is read, and each target gets a copy (an
    /// iterate's copy its own part as payload), sharing one `Gather` for an `aggregate` to collect
    /// them, run through its sequence, else sent to its endpoint or `to` address, all at once
    /// within this request. The answer is the first copy's real answer (not a [`NoAnswer`]
    /// 202): the one that completed the aggregate, or a copy's fault. When no copy answered
    /// before the aggregate's count was reached (some were dropped or failed), the aggregate
    /// completes with what it has, and what its `onComplete` decides is carried out.
    ///
    /// A boxed `Send` future, not an `async fn`: a copy's flow may clone again, and its future,
    /// which must be `Send` to go on after the request ([`finish_unheard`]), holds this one.
    fn clone_flow<'a>(
        &'a self,
        proxy: &'a Arc<ProxyPlan>,
        msg: Message,
        stream: Option<Inbound>,
        fanout: Fanout,
        depth: Depth,
    ) -> Pin<Box<dyn Future<Output = Response<RelayBody>> + Send + 'a>> {
        Box::pin(self.clone_flow_inner(proxy, msg, stream, fanout, depth))
    }

    async fn clone_flow_inner(
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
        // Each copy's target (which of the plan's), and its own body (an iterate's part) or the
        // message's.
        let (plan, targets): (Targets, Vec<(usize, Option<Bytes>)>) = match fanout {
            Fanout::Clone(c) => {
                let n = c.targets.len();
                (Targets::Clone(c), (0..n).map(|i| (i, None)).collect())
            }
            Fanout::Iterate(it, bodies) => (
                Targets::Iterate(it),
                bodies.into_iter().map(|b| (0, Some(b))).collect(),
            ),
        };
        // Always there: every engine lives in the Arc `Engine::new` made, which `self` borrows.
        let Some(engine) = self.me.upgrade() else {
            let e = Error::new(ErrorKind::Internal, "the engine is gone".to_owned());
            return self.default_fault(msg.soap, &e);
        };
        if targets.is_empty() {
            // Nothing to send (an iterate over no element): nothing comes back to aggregate.
            return accepted();
        }
        let gather = Arc::new(sluice_mediation::message::Gather::new(targets.len()));
        msg.gather = Some(gather.clone());
        // Type-erased and `Send`: a copy's flow may clone again (the future is recursive), and
        // may go on after this request ([`finish_unheard`]).
        let mut copies: Vec<Pin<Box<dyn Future<Output = Response<RelayBody>> + Send>>> =
            Vec::with_capacity(targets.len());
        for (i, body) in targets {
            let (engine, proxy, plan) = (engine.clone(), proxy.clone(), plan.clone());
            let t = plan.target(i);
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
                let t = plan.target(i);
                let flow = match (&t.sequence, &t.endpoint) {
                    (Some(seq), _) => match mediate!(engine, copy, Work::Seq(seq)) {
                        Ok(Flow::Continue) => return accepted(),
                        Ok(f) => f,
                        Err(e) => return Box::pin(engine.fault_flow(&proxy, copy, e, None)).await,
                    },
                    (None, Some(ep)) => Flow::Send(Some(ep.clone())),
                    // Only a `to`: the copy goes to that address.
                    (None, None) if copy.to.is_some() => Flow::Send(None),
                    (None, None) => return accepted(),
                };
                engine
                    .request_decided(&proxy, copy, None, flow, depth)
                    .await
            }));
        }
        let sequential = match &plan {
            Targets::Clone(c) => c.sequential,
            Targets::Iterate(it) => it.sequential,
        };
        // An early answer: the completed aggregate's, not a failed copy's fault.
        let real = |r: &Response<RelayBody>| {
            r.extensions().get::<NoAnswer>().is_none() && !r.status().is_server_error()
        };
        let answers = copies_answered(copies, sequential, &gather, real).await;
        // The first real answer: not a copy an aggregate kept, nor one dropped or sent one-way.
        // (None: the aggregate's timeout came first.)
        if let Some(r) = answers
            .into_iter()
            .flatten()
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

    /// `clone` or `iterate` with `continueParent`: the copies go through their targets (as
    /// [`Engine::clone_flow`], their answers unused) while the original goes on with the rest of
    /// its sequences; the original's flow gives the answer, once the copies are done too.
    async fn fork_then(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        mut stream: Option<Inbound>,
        fork: Flow,
        k: Continuation,
        depth: Depth,
    ) -> Response<RelayBody> {
        if let Err(e) = self.read_whole(&mut msg, &mut stream).await {
            return self.default_fault(msg.soap, &e);
        }
        let fanout = match fork {
            Flow::Clone(c) => Fanout::Clone(c),
            Flow::Iterate(it, bodies) => Fanout::Iterate(it, bodies),
            other => {
                let e = Error::new(
                    ErrorKind::Internal,
                    format!("continueParent with a flow that is no fork: {other:?}"),
                );
                return self.default_fault(msg.soap, &e);
            }
        };
        let copies = self.clone_flow(proxy, msg.clone(), None, fanout, depth);
        let parent = async {
            let mut msg = msg;
            match mediate!(self, msg, Work::Resume(k)) {
                Ok(flow) => Box::pin(self.request_decided(proxy, msg, None, flow, depth)).await,
                Err(e) => {
                    let failed = NotSent::plain(e);
                    Box::pin(self.send_failed(proxy, msg, failed, depth)).await
                }
            }
        };
        let (_, answer) = tokio::join!(copies, parent);
        answer
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
    /// The answer is marked [`Faulted`](crate::metrics::Faulted): the request counts as an error.
    async fn fault_flow(
        &self,
        proxy: &Arc<ProxyPlan>,
        msg: Message,
        err: Error,
        stream: Option<Inbound>,
    ) -> Response<RelayBody> {
        let mut r = self.fault_sequence(proxy, msg, err, stream).await;
        r.extensions_mut().insert(crate::metrics::Faulted);
        r
    }

    async fn fault_sequence(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        err: Error,
        stream: Option<Inbound>,
    ) -> Response<RelayBody> {
        tracing::warn!(proxy = %proxy.name, correlation_id = %msg.correlation, kind = ?err.kind, source = ?err.kind.source(), "{}", err.reason());
        // A run stopped on its deadline left no message to run a fault sequence on.
        // Nor after an onError sequence handled it (Synapse runs the innermost handler only).
        // The onError sequence of the sequence that sent the message, else the proxy's.
        let handler = msg.fault_handler.take();
        let fs = (handler.as_ref().or(proxy.fault_seq.as_ref()))
            .filter(|_| err.kind != ErrorKind::Stopped && !err.handled);
        let Some(fs) = fs else {
            discard(stream).await;
            return self.default_fault(msg.soap, &err);
        };
        exec::set_error_props(&mut msg, &err);
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
            // A fault sequence that drops the message: Synapse answers 202, as for a drop anywhere.
            Ok(Flow::Drop) => {
                discard(stream).await;
                accepted()
            }
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
        tracing::warn!(proxy = %proxy.name, correlation_id = %msg.correlation, "{} ({why})", e.reason());
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

    async fn reply(
        &self,
        mut msg: Message,
        mut req_stream: Option<Inbound>,
    ) -> Response<RelayBody> {
        if msg.reply_pox && msg.is_response() {
            // Boxed: the rare path's state stays out of every answer's future.
            if let Err(e) = Box::pin(self.as_pox(&mut msg, &mut req_stream)).await {
                return self.default_fault(FaultVersion::Pox, &e);
            }
        }
        let stream = if matches!(msg.body, Body::Stream | Body::Head(_)) {
            req_stream
        } else {
            discard(req_stream).await;
            None
        };
        client_response(msg, stream, None)
    }
}

impl Engine {
    /// A SOAP response read and made plain XML, its Body's payload ([`Message::reply_pox`]). Its
    /// Content-Type stays the back-end's, as in Synapse.
    async fn as_pox(&self, msg: &mut Message, stream: &mut Option<Inbound>) -> Result<(), Error> {
        self.read_whole(msg, stream).await?;
        let kept = msg.headers.get(header::CONTENT_TYPE).cloned();
        Format::Pox.apply(msg)?;
        if let Some(ct) = kept {
            msg.headers.insert(header::CONTENT_TYPE, ct);
        }
        Ok(())
    }
}

/// Sluice's own 202 (nothing sent back, [`accepted`]) to a SOAP request carries the SOAP version's
/// type (`text/xml; charset=UTF-8`, `application/soap+xml; charset=UTF-8`), as Synapse's does (its
/// pass-through transport types the answer it makes by the request's message type); a back-end's
/// 202 is relayed as it came.
fn typed_accepted(mut r: Response<RelayBody>, soap: FaultVersion) -> Response<RelayBody> {
    let ct = match soap {
        FaultVersion::Soap11 => "text/xml; charset=UTF-8",
        FaultVersion::Soap12 => "application/soap+xml; charset=UTF-8",
        FaultVersion::Pox => return r,
    };
    if r.status() == StatusCode::ACCEPTED
        && r.extensions().get::<NoAnswer>().is_some()
        && !r.headers().contains_key(header::CONTENT_TYPE)
    {
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    r
}

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

/// Where a [`Fanout`]'s copies find their targets, shared by the copies (which may outlive the
/// request: [`copies_answered`]).
#[derive(Clone)]
enum Targets {
    Clone(Arc<sluice_mediation::plan::ClonePlan>),
    Iterate(Arc<sluice_mediation::plan::IteratePlan>),
}

impl Targets {
    /// Copy `i`'s target (an iterate has one for all).
    fn target(&self, i: usize) -> &sluice_mediation::plan::CloneTargetPlan {
        match self {
            Targets::Clone(c) => &c.targets[i],
            Targets::Iterate(it) => &it.target,
        }
    }
}

/// Marks a 202 that acknowledges rather than answers (a drop, a one-way send, a copy an
/// `aggregate` kept or whose target sequence sent nothing): among a clone's copies, not the
/// client's answer.
#[derive(Clone, Copy)]
struct NoAnswer;

/// Every future's output, in order, once all have ended: polled together, each only when it was
/// woken (`FuturesOrdered`), so many copies cost no more than their own wake-ups.
/// The copies' answers, in their order: all at once, or (`sequential`) each run whole before the
/// next starts. Once the aggregate they reach has a `completeCondition timeout` (known when a copy
/// it gathered ends), the copies not answered by then are dropped and `None` is returned. Once it
/// has completed and a copy gave a `real` answer (its onComplete's, not a failed copy's fault),
/// that is the only answer: the copies still running would only be dropped by it, and the client
/// need not wait for them.
async fn copies_answered<F>(
    copies: Vec<Pin<Box<F>>>,
    sequential: bool,
    gather: &sluice_mediation::message::Gather,
    real: impl Fn(&F::Output) -> bool,
) -> Option<Vec<F::Output>>
where
    F: Future + Send + 'static + ?Sized,
    F::Output: Send,
{
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let n = copies.len();
    let mut answers: Vec<(usize, F::Output)> = Vec::with_capacity(n);
    let mut rest = copies.into_iter().enumerate();
    let mut running = FuturesUnordered::new();
    let numbered = |(i, c): (usize, Pin<Box<F>>)| async move { (i, c.await) };
    loop {
        if running.is_empty() {
            match rest.next() {
                None => break,
                Some(c) => running.push(numbered(c)),
            }
            if !sequential {
                running.extend(rest.by_ref().map(numbered));
            }
        }
        let next = running.next();
        let answer = match gather.deadline() {
            None => next.await,
            Some(at) => tokio::select! {
                a = next => a,
                _ = tokio::time::sleep_until(at.into()) => {
                    finish_unheard(running, rest.map(|(_, c)| c).collect());
                    return None;
                }
            },
        };
        if let Some((_, a)) = &answer {
            if real(a) && gather.completed() {
                finish_unheard(running, rest.map(|(_, c)| c).collect());
                return Some(answer.into_iter().map(|(_, a)| a).collect());
            }
        }
        answers.extend(answer);
    }
    answers.sort_by_key(|(i, _)| *i);
    Some(answers.into_iter().map(|(_, a)| a).collect())
}

/// The copies of a clone or iterate still running, and those not started (a sequential one's),
/// once the request has its answer: they go on without it, their answers unheard, as Synapse
/// sends every copy whether or not its aggregate has completed.
fn finish_unheard<R, F>(mut running: R, rest: Vec<Pin<Box<F>>>)
where
    R: futures_util::Stream + Unpin + Send + 'static,
    F: Future + Send + 'static + ?Sized,
{
    use futures_util::StreamExt;
    if running.size_hint().1 == Some(0) && rest.is_empty() {
        return;
    }
    tokio::spawn(async move {
        while running.next().await.is_some() {}
        for copy in rest {
            copy.await;
        }
    });
}

async fn join_all<F: Future>(futures: Vec<Pin<Box<F>>>) -> Vec<F::Output> {
    use futures_util::stream::{FuturesOrdered, StreamExt};
    futures
        .into_iter()
        .collect::<FuturesOrdered<_>>()
        .collect()
        .await
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
