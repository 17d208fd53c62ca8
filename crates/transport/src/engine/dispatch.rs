//! Which service takes a request: a proxy by name under `/services`, else a REST API's resource,
//! else the main sequence; the service list, WSDLs and what is refused before any of them.

use super::*;
use std::time::Instant;

impl Engine {
    /// A request that came in on `transport`'s listener.
    pub async fn handle(
        self: Arc<Self>,
        req: Request<hyper::body::Incoming>,
        transport: Transport,
        peer: Option<std::net::IpAddr>,
    ) -> Response<RelayBody> {
        let (parts, body) = req.into_parts();
        if let Some(refused) = refuse_head(&parts) {
            return refused;
        }
        // MI's correlation ID: the client's, or a new one the back-end gets too.
        let cid = crate::correlation::of(&parts.headers);
        let path = parts.uri.path();
        let rest = match path.strip_prefix("/services") {
            Some(r) if r.is_empty() || r == "/" => return self.listing(),
            Some(r) if r.starts_with('/') => &r[1..],
            _ => return self.api(parts, body, peer, transport, cid).await,
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
                None => return self.api(parts, body, peer, transport, cid).await,
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
        if !proxy.active.load(std::sync::atomic::Ordering::Relaxed) {
            let why = if proxy.started {
                "deactivated through the management API"
            } else {
                "deployed but not started (startOnLoad=\"false\")"
            };
            let e = Error::new(
                ErrorKind::NotFound,
                format!("proxy {} is {why}", proxy.name),
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
        let mut msg = Message::request(proxy.name.clone(), parts.method, pq, parts.headers);
        msg.remote = peer;
        msg.correlation = cid;
        let proxy = proxy.clone();
        let start = self.started();
        let span = traced(&mut msg, &proxy);
        let r = match &proxy.security {
            // Boxed: its state stays out of every other request's future.
            Some(sec) => {
                let https = matches!(transport, Transport::Https);
                Box::pin(self.secured_flow(&proxy, msg, (body, https), sec.clone())).await
            }
            None => self.request_flow(&proxy, msg, body).await,
        };
        self.counted(&proxy, transport, start, &r);
        if let Some(s) = span {
            s.end(&r);
        }
        r
    }

    /// When a request to a proxy or an API began, when this worker counts requests. Only the
    /// instant is held while the flow runs: the flow's future, moved whole on its way to hyper,
    /// grows by no more.
    #[inline]
    fn started(&self) -> Option<Instant> {
        self.stats.as_ref().map(|_| Instant::now())
    }

    /// Counts a request that began at `start` and is answered with `r` ([`crate::metrics`]).
    #[inline]
    fn counted(
        &self,
        service: &ProxyPlan,
        transport: Transport,
        start: Option<Instant>,
        r: &Response<RelayBody>,
    ) {
        if let (Some(stats), Some(slot), Some(start)) = (&self.stats, service.stats_slot, start) {
            stats.record(slot, transport == Transport::Https, start, r);
        }
    }

    /// A request for a REST API: the resource that takes it runs as a service, with the properties
    /// Synapse sets (`uri.var.*`, `query.param.*`, `REST_*`, and `REST_URL_POSTFIX` in the axis2
    /// scope). No API: 404 as for an unknown service; a path no resource takes: 404, or 405 with
    /// `Allow` when only the method differs; `OPTIONS` a resource does not list: 200 with `Allow`.
    pub(super) async fn api(
        &self,
        parts: http::request::Parts,
        body: hyper::body::Incoming,
        peer: Option<std::net::IpAddr>,
        transport: Transport,
        cid: sluice_mediation::message::Correlation,
    ) -> Response<RelayBody> {
        let pq = parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path(), |p| p.as_str());
        let host = (parts.headers.get(http::header::HOST)).and_then(|h| h.to_str().ok());
        let https = matches!(transport, Transport::Https);
        let route = match api::route_on(&self.plan.apis, &parts.method, pq, host, https) {
            Ok(r) => r,
            Err(miss) => {
                // No proxy or API takes it: Synapse's main sequence does, when there is one.
                if let (Miss::NoApi, Some(main)) = (&miss, &self.plan.main) {
                    let main = main.clone();
                    let mut msg = Message::request(
                        main.name.clone(),
                        parts.method,
                        pq.to_owned(),
                        parts.headers,
                    );
                    msg.remote = peer;
                    msg.correlation = cid;
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
        msg.remote = peer;
        msg.correlation = cid.clone();
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
        let start = self.started();
        let span = traced(&mut msg, &service);
        let mut r = self.request_flow(&service, msg, body).await;
        self.counted(&service, transport, start, &r);
        if let Some(s) = span {
            s.end(&r);
        }
        // MI answers an API's client with the correlation ID.
        let name = crate::correlation::header();
        if !r.headers().contains_key(name) {
            if let Some(v) = cid.header_value() {
                r.headers_mut().insert(name.clone(), v);
            }
        }
        r
    }

    pub(super) fn listing(&self) -> Response<RelayBody> {
        let mut s = format!("Deployed services: {}\n", self.services);
        for (name, why) in &self.plan.not_deployed {
            s.push_str(&format!("Not deployed: {name}: {why}\n"));
        }
        text_response(StatusCode::OK, s)
    }

    pub(super) fn not_found(
        &self,
        method: &Method,
        headers: &HeaderMap,
        path: &str,
    ) -> Response<RelayBody> {
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
    pub(super) fn wsdl(
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

/// The longest method Sluice takes (the longest registered HTTP method is 17 bytes).
pub const MAX_METHOD_LEN: usize = 32;

/// A request head RFC 9112 says to refuse with 400: HTTP/1.1 without exactly one Host, or a method
/// longer than [`MAX_METHOD_LEN`] (hyper has already refused one that is not a token, and a head
/// over the limit with 431).
pub(super) fn refuse_head(parts: &http::request::Parts) -> Option<Response<RelayBody>> {
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

/// With tracing on, the request's span for `service`; its message is traced under it.
#[inline]
fn traced(msg: &mut Message, service: &ProxyPlan) -> Option<Box<crate::otel::Request>> {
    let t = crate::otel::enabled()?;
    let span = t.request(
        &msg.method,
        &msg.path_and_query,
        &msg.headers,
        &service.name,
    );
    msg.trace = Some(span.parent());
    Some(span)
}
