//! OpenTelemetry traces to a real collector: Jaeger (built from source by `.ci/run`, pinned by
//! `tools/jaeger/go.mod`) receives Sluice's spans over OTLP/HTTP, and its query API returns the
//! trace: the request's span under the client's `traceparent`, the sequences' spans, and the
//! back-end call's span, whose ID the back-end got in its `traceparent`.

mod common;
use common::setup::*;
use common::*;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free port on loopback (bound, then let go for the collector to take).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Jaeger with in-memory storage, OTLP/HTTP in and its query API out, killed on drop.
struct Jaeger {
    child: Child,
    otlp: u16,
    query: u16,
    dir: PathBuf,
}

impl Jaeger {
    fn start() -> Jaeger {
        let tool = std::env::var("JAEGER").map_or_else(
            |_| workspace_root().join("target/tools/jaeger/jaeger"),
            PathBuf::from,
        );
        assert!(
            tool.exists(),
            "no {} (bash .ci/run builds Jaeger; JAEGER=path names another)",
            tool.display()
        );
        let (otlp, query, grpc) = (free_port(), free_port(), free_port());
        let dir = std::env::temp_dir().join(format!("sluice-jaeger-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("jaeger.yaml");
        std::fs::write(
            &config,
            format!(
                "service:\n  extensions: [jaeger_storage, jaeger_query]\n  pipelines:\n    traces:\n      receivers: [otlp]\n      processors: [batch]\n      exporters: [jaeger_storage_exporter]\n  telemetry:\n    metrics:\n      level: none\n    logs:\n      level: warn\n\
                 extensions:\n  jaeger_query:\n    storage:\n      traces: memstore\n    http:\n      endpoint: \"127.0.0.1:{query}\"\n    grpc:\n      endpoint: \"127.0.0.1:{grpc}\"\n  jaeger_storage:\n    backends:\n      memstore:\n        memory:\n          max_traces: 1000\n\
                 receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: \"127.0.0.1:{otlp}\"\n\
                 processors:\n  batch:\n    timeout: 100ms\n\
                 exporters:\n  jaeger_storage_exporter:\n    trace_storage: memstore\n"
            ),
        )
        .unwrap();
        let child = Command::new(tool)
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("jaeger starts");
        Jaeger {
            child,
            otlp,
            query,
            dir,
        }
    }

    /// GET on the query API, once it answers (within 30 s).
    async fn get(&self, path: &str) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let addr: std::net::SocketAddr = ([127, 0, 0, 1], self.query).into();
            if let Ok(s) = tokio::net::TcpStream::connect(addr).await {
                drop(s);
                let mut c = Conn::open(addr).await;
                if let Ok(r) = c.get(path).await {
                    return serde_json::from_slice(&r.body).unwrap_or(serde_json::Value::Null);
                }
            }
            assert!(
                Instant::now() < deadline,
                "Jaeger's query API never answered"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The spans of trace `id`, once Jaeger holds at least `n` (within 30 s).
    async fn spans(&self, id: &str, n: usize) -> Vec<serde_json::Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let v = self.get(&format!("/api/traces/{id}")).await;
            let spans: Vec<serde_json::Value> = v["data"]
                .as_array()
                .and_then(|d| d.first())
                .and_then(|t| t["spans"].as_array().cloned())
                .unwrap_or_default();
            if spans.len() >= n {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "trace {id} has {} span(s) after 30 s: {v}",
                spans.len()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Jaeger {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn tag<'a>(span: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    span["tags"]
        .as_array()?
        .iter()
        .find(|t| t["key"] == key)
        .map(|t| &t["value"])
}

fn parent(span: &serde_json::Value) -> Option<&str> {
    span["references"].as_array()?.first()?["spanID"].as_str()
}

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN: &str = "b7ad6b7169203331";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jaeger_gets_the_request_its_sequences_and_the_back_end_call() {
    let jaeger = Jaeger::start();
    jaeger.get("/api/services").await;
    let be = backend().await;
    let toml = std::env::temp_dir().join(format!("sluice-traces-{}.toml", std::process::id()));
    std::fs::write(
        &toml,
        format!(
            "[opentelemetry]\nenable = true\ntype = \"otlp\"\nprotocol = \"http\"\nurl = \"http://127.0.0.1:{}\"\n",
            jaeger.otlp
        ),
    )
    .unwrap();
    let s = start_on_capp(&capp(), be.addr, &["--config", toml.to_str().unwrap()]);
    let mut c = Conn::open(s.addr).await;
    let mut headers = SOAP_HEADERS.to_vec();
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    headers.push(("traceparent", &traceparent));
    let r = c
        .post(
            "/services/DirectProxy",
            &headers,
            payload("1000B_buyStocks.xml"),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    // The back-end gets the trace, under a span of Sluice's.
    assert_eq!(be.wait_seen(1, Duration::from_secs(10)).await, 1);
    let sent = be.seen.lock().unwrap()[0].headers.clone();
    let sent = sent
        .get("traceparent")
        .expect("a traceparent")
        .to_str()
        .unwrap()
        .to_owned();
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!(parts.len(), 4, "{sent}");
    assert_eq!(parts[1], TRACE, "{sent}");
    assert_ne!(parts[2], CLIENT_SPAN, "{sent}");
    // Jaeger holds the request, the in- and out-sequence and the call.
    let spans = jaeger.spans(TRACE, 4).await;
    let named = |name: &str| {
        spans
            .iter()
            .find(|s| s["operationName"] == name)
            .unwrap_or_else(|| panic!("no span {name} among {spans:#?}"))
    };
    let request = named("DirectProxy");
    assert_eq!(parent(request), Some(CLIENT_SPAN));
    assert_eq!(tag(request, "span.kind").unwrap(), "server");
    assert_eq!(tag(request, "http.response.status_code").unwrap(), 200);
    let request_id = request["spanID"].as_str().unwrap();
    for seq in ["inSequence", "outSequence"] {
        assert_eq!(parent(named(seq)), Some(request_id), "{seq}");
    }
    let call = spans
        .iter()
        .find(|s| tag(s, "span.kind").is_some_and(|k| k == "client"))
        .unwrap_or_else(|| panic!("no client span among {spans:#?}"));
    assert_eq!(call["spanID"].as_str(), Some(parts[2]));
    assert_eq!(parent(call), Some(request_id));
    let url = tag(call, "url.full").unwrap().as_str().unwrap();
    assert!(url.contains(&be.addr.to_string()), "{url}");
    let _ = std::fs::remove_file(&toml);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_by_default_no_trace_reaches_the_back_end() {
    let (be, _s, mut c) = on_capp().await;
    let mut headers = SOAP_HEADERS.to_vec();
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    headers.push(("traceparent", &traceparent));
    c.post(
        "/services/DirectProxy",
        SOAP_HEADERS,
        payload("1000B_buyStocks.xml"),
    )
    .await
    .unwrap();
    c.post(
        "/services/DirectProxy",
        &headers,
        payload("1000B_buyStocks.xml"),
    )
    .await
    .unwrap();
    assert_eq!(be.wait_seen(2, Duration::from_secs(10)).await, 2);
    let seen = be.seen.lock().unwrap();
    assert!(seen[0].headers.get("traceparent").is_none());
    // A client's own traceparent passes through untouched, as any header.
    assert_eq!(
        seen[1].headers.get("traceparent").unwrap(),
        traceparent.as_str()
    );
}
