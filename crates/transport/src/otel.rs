//! OpenTelemetry traces, exported over OTLP/HTTP (MI's `[opentelemetry]` with `type = "otlp"`).
//!
//! | Span | Kind | Name | Attributes |
//! |---|---|---|---|
//! | a request a proxy or API takes | server | the proxy or API | `http.request.method`, `url.path`, `http.response.status_code`, `sluice.service` |
//! | a sequence's run | internal | the sequence's name, else `inSequence` or `outSequence` (`... (off the event loop)` for a large message's) | |
//! | a call to a back-end | client | the endpoint's address | `http.request.method`, `url.full`, `http.response.status_code`, `error.type` |
//!
//! A client's W3C `traceparent` makes the request span its child; a back-end gets a `traceparent`
//! naming the call's span. The request's message carries the IDs its spans go under
//! ([`TraceParent`], copied to the response and to clones): no future is wrapped, nothing is kept
//! in a thread-local. Spans are exported in batches by the SDK's own thread, so a worker never
//! waits on the collector; when its queue is full, spans are dropped.
//!
//! Off by default. The switch is one process-wide cell read where a span could start.

use http::{HeaderMap, HeaderValue, Response};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    Span, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _, TracerProvider,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use sluice_mediation::message::TraceParent;
use std::sync::OnceLock;

/// Where spans go.
#[derive(Clone, Debug)]
pub struct TracingOptions {
    /// The OTLP/HTTP traces URL (`http://localhost:4318/v1/traces`).
    pub url: String,
    /// The `service.name` of the spans.
    pub service_name: String,
}

/// The tracer, once tracing is on.
pub struct Tracing {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

static TRACING: OnceLock<Tracing> = OnceLock::new();

/// Turns tracing on for the process (once; a second call changes nothing).
pub fn init(opts: &TracingOptions) -> Result<(), String> {
    use opentelemetry_otlp::WithExportConfig;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(&opts.url)
        .build()
        .map_err(|e| format!("OpenTelemetry exporter to {}: {e}", opts.url))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(opts.service_name.clone())
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("sluice");
    let _ = TRACING.set(Tracing { provider, tracer });
    Ok(())
}

/// The tracer, when tracing is on.
#[inline]
pub fn enabled() -> Option<&'static Tracing> {
    TRACING.get()
}

/// Sends the spans still queued, and stops the exporter (at exit).
pub fn shutdown() {
    if let Some(t) = enabled() {
        if let Err(e) = t.provider.shutdown() {
            tracing::warn!("OpenTelemetry: {e}");
        }
    }
}

impl Tracing {
    /// A request's server span for `service` (a proxy or an API), the child of the client's
    /// `traceparent` if it sent one.
    pub fn request(
        &self,
        method: &http::Method,
        path: &str,
        headers: &HeaderMap,
        service: &str,
    ) -> Box<Request> {
        let parent =
            TraceContextPropagator::new().extract(&opentelemetry_http::HeaderExtractor(headers));
        let span = self
            .tracer
            .span_builder(service.to_owned())
            .with_kind(SpanKind::Server)
            .with_attributes([
                KeyValue::new("http.request.method", method.to_string()),
                KeyValue::new("url.path", path.to_owned()),
                KeyValue::new("sluice.service", service.to_owned()),
            ])
            .start_with_context(&self.tracer, &parent);
        let under = parent_of(span.span_context());
        Box::new(Request { span, under })
    }

    /// A span named `name` under `parent` (none: a trace of its own), ended by the caller.
    pub fn span(&self, parent: Option<&TraceParent>, name: &str) -> opentelemetry_sdk::trace::Span {
        self.tracer
            .start_with_context(name.to_owned(), &context(parent))
    }

    /// Runs `run` (a sequence's, synchronous) inside a span named `name` under `parent`.
    pub fn phase<T>(&self, parent: Option<&TraceParent>, name: &str, run: impl FnOnce() -> T) -> T {
        let mut span = self.span(parent, name);
        let r = run();
        span.end();
        r
    }

    /// A client span under `parent` for a call to `url` with `method`, and the `traceparent` the
    /// back-end gets.
    pub fn call(
        &self,
        parent: Option<&TraceParent>,
        method: &http::Method,
        url: &str,
    ) -> (Call, HeaderValue) {
        let span = self
            .tracer
            .span_builder(url.to_owned())
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("http.request.method", method.to_string()),
                KeyValue::new("url.full", url.to_owned()),
            ])
            .start_with_context(&self.tracer, &context(parent));
        let c = span.span_context();
        let header = format!(
            "00-{}-{}-{:02x}",
            c.trace_id(),
            c.span_id(),
            c.trace_flags().to_u8()
        );
        let value = HeaderValue::from_str(&header).unwrap_or(HeaderValue::from_static(""));
        (Call(Box::new(span)), value)
    }
}

/// A request's server span: what its message is traced under, and the span to end.
pub struct Request {
    span: opentelemetry_sdk::trace::Span,
    under: TraceParent,
}

impl Request {
    /// What the request's sequences and calls are traced under.
    pub fn parent(&self) -> Box<TraceParent> {
        Box::new(self.under)
    }

    /// Ends the span with the answer's status.
    pub fn end<B>(mut self: Box<Self>, r: &Response<B>) {
        let status = r.status().as_u16();
        self.span.set_attribute(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
        if status >= 500 {
            self.span
                .set_status(Status::error(format!("answered {status}")));
        }
        self.span.end();
    }
}

fn parent_of(c: &SpanContext) -> TraceParent {
    TraceParent {
        trace_id: c.trace_id().to_bytes(),
        span_id: c.span_id().to_bytes(),
        flags: c.trace_flags().to_u8(),
    }
}

/// The context a span under `parent` starts in.
fn context(parent: Option<&TraceParent>) -> Context {
    match parent {
        None => Context::new(),
        Some(p) => Context::new().with_remote_span_context(SpanContext::new(
            TraceId::from_bytes(p.trace_id),
            SpanId::from_bytes(p.span_id),
            TraceFlags::new(p.flags),
            false,
            TraceState::default(),
        )),
    }
}

/// A back-end call's span (boxed: a future that holds one across its await grows by a pointer).
pub struct Call(Box<opentelemetry_sdk::trace::Span>);

impl Call {
    /// Ends the span: the back-end's status, or why there was none.
    pub fn end(mut self, outcome: Result<u16, String>) {
        match outcome {
            Ok(status) => {
                self.0.set_attribute(KeyValue::new(
                    "http.response.status_code",
                    i64::from(status),
                ));
                if status >= 500 {
                    self.0
                        .set_status(Status::error(format!("answered {status}")));
                }
            }
            Err(why) => {
                self.0
                    .set_attribute(KeyValue::new("error.type", why.clone()));
                self.0.set_status(Status::error(why));
            }
        }
        self.0.end();
    }
}
