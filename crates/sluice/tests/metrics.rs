//! Prometheus metrics under WSO2 MI's names on the internal HTTP API port
//! (`/metric-service/metrics`): the counts a test sends are on the page, the page passes
//! `promtool check metrics`, and a real Prometheus (Debian's, installed by `.ci/run`) scrapes it
//! and answers a PromQL query with the count.

mod common;
use common::setup::*;
use common::*;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

async fn page(s: &Sluice) -> String {
    let mut c = Conn::open(s.health_addr()).await;
    let r = c.get("/metric-service/metrics").await.unwrap();
    assert_eq!(r.status, 200);
    r.text()
}

/// The value of the sample `name{labels}` on `page`.
fn sample(page: &str, series: &str) -> f64 {
    let line = page
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .unwrap_or_else(|| panic!("no {series} on the page:\n{page}"));
    line[series.len() + 1..].parse().unwrap()
}

/// The sum of the samples `{start}worker="N"}` over the workers on `page`.
fn over_workers(page: &str, start: &str) -> f64 {
    page.lines()
        .filter_map(|l| l.strip_prefix(start))
        .filter(|rest| rest.starts_with("worker="))
        .map(|rest| rest.rsplit_once(' ').unwrap().1.parse::<f64>().unwrap())
        .sum()
}

async fn send(s: &Sluice, path: &str, body: bytes::Bytes, n: usize) -> Vec<u16> {
    let mut c = Conn::open(s.addr).await;
    let mut statuses = Vec::new();
    for _ in 0..n {
        let r = c.post(path, SOAP_HEADERS, body.clone()).await.unwrap();
        statuses.push(r.status);
    }
    statuses
}

/// A Prometheus scraping `target` every second, killed (and its folder removed) on drop.
struct Prometheus {
    child: Child,
    addr: std::net::SocketAddr,
    dir: PathBuf,
}

impl Prometheus {
    fn start(target: std::net::SocketAddr) -> Prometheus {
        let dir = std::env::temp_dir().join(format!("sluice-prometheus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: sluice\n    \
                 metrics_path: /metric-service/metrics\n    static_configs:\n      \
                 - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        // A free port for its web API (taken back just before it binds it).
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (Debian's package; .ci/run installs it)");
        Prometheus { child, addr, dir }
    }

    /// The value of the instant query `promql`'s first series, once it has one.
    async fn query(&self, promql: &str) -> Option<f64> {
        // Not listening yet: no answer.
        tokio::net::TcpStream::connect(self.addr).await.ok()?;
        let mut c = Conn::open(self.addr).await;
        let q: String = url_encode(promql);
        let r = c.get(&format!("/api/v1/query?query={q}")).await.ok()?;
        let v: serde_json::Value = serde_json::from_str(&r.text()).ok()?;
        v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_counted_under_mi_names_and_prometheus_scrapes_them() {
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let ok = send(
        &s,
        "/services/DirectProxy",
        payload("1000B_buyStocks.xml"),
        7,
    )
    .await;
    assert!(ok.iter().all(|&st| st == 200), "{ok:?}");
    send(&s, "/services/CBRProxy", payload("1000B_buyStocks.xml"), 2).await;
    // Not XML: Sluice's own fault, an error.
    let bad = send(&s, "/services/CBRProxy", "<a><b></a>".into(), 1).await;
    assert_eq!(bad, [400]);
    // The REST API, over http.
    let mut c = Conn::open(s.addr).await;
    for _ in 0..3 {
        let r = c
            .post("/directApi", SOAP_HEADERS, payload("1000B_buyStocks.xml"))
            .await
            .unwrap();
        assert_eq!(r.status, 200);
    }

    let p = page(&s).await;
    let direct = "{service_name=\"DirectProxy\",service_type=\"proxy\"}";
    let cbr = "{service_name=\"CBRProxy\",service_type=\"proxy\"}";
    let count = "wso2_integration_proxy_request_count_total";
    let errors = "wso2_integration_proxy_request_count_error_total";
    assert_eq!(sample(&p, &format!("{count}{direct}")), 7.0);
    assert_eq!(sample(&p, &format!("{errors}{direct}")), 0.0);
    assert_eq!(sample(&p, &format!("{count}{cbr}")), 3.0);
    assert_eq!(sample(&p, &format!("{errors}{cbr}")), 1.0);
    let latency = "wso2_integration_proxy_latency_seconds";
    assert_eq!(sample(&p, &format!("{latency}_count{direct}")), 7.0);
    assert_eq!(
        sample(
            &p,
            &format!("{latency}_bucket{{service_name=\"DirectProxy\",service_type=\"proxy\",le=\"+Inf\"}}")
        ),
        7.0
    );
    let api = format!(
        "{{service_name=\"DirectAPI\",service_type=\"api\",invocation_url=\"http://127.0.0.1:{}/directApi\"}}",
        s.addr.port()
    );
    assert_eq!(
        sample(
            &p,
            &format!("wso2_integration_api_request_count_total{api}")
        ),
        3.0
    );
    // Not asked for yet: counted as 0 from deployment, as MI.
    assert_eq!(
        sample(
            &p,
            &format!("{count}{{service_name=\"XSLTProxy\",service_type=\"proxy\"}}")
        ),
        0.0
    );
    assert!(sample(&p, "process_resident_memory_bytes") > 1e6);
    // Sluice's own: what was read of the bodies (DirectProxy and DirectAPI stream, CBRProxy reads),
    // the connection still open (`c`), each worker's tasks.
    assert_eq!(
        sample(&p, "sluice_request_bodies_total{body=\"streamed\"}"),
        10.0
    );
    assert_eq!(
        sample(&p, "sluice_request_bodies_total{body=\"read\"}"),
        3.0
    );
    let open = over_workers(&p, "sluice_http_connections_open{listener=\"http\",");
    assert!(open >= 1.0, "{p}");
    assert!(over_workers(&p, "sluice_worker_tasks{") >= 1.0, "{p}");
    // Bytes on the client sockets: at least the 12 buyStocks bodies came in, and the answers went
    // out (heads included, so more than the bodies; the scrape's own port is not counted).
    let body = payload("1000B_buyStocks.xml").len() as f64;
    let received = sample(&p, "sluice_http_bytes_total{direction=\"in\"}");
    assert!(received >= 12.0 * body, "{received} < 12 x {body}");
    assert!(
        received < 12.0 * body + 12.0 * 1024.0,
        "{received}: heads of over 1 KiB?"
    );
    assert!(sample(&p, "sluice_http_bytes_total{direction=\"out\"}") >= 10.0 * body);
    drop(c);

    // Prometheus' own linter reads the page.
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package)");
    use std::io::Write;
    lint.stdin.take().unwrap().write_all(p.as_bytes()).unwrap();
    let out = lint.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A real Prometheus scrapes it; PromQL over the scraped series gives the counts sent.
    let prom = Prometheus::start(s.health_addr());
    let t = Instant::now();
    let query = "sum(wso2_integration_proxy_request_count_total{service_name=\"DirectProxy\"})";
    loop {
        if prom.query(query).await == Some(7.0) {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "Prometheus did not report 7 DirectProxy requests (last: {:?})",
            prom.query(query).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let errors = "wso2_integration_proxy_request_count_error_total{service_name=\"CBRProxy\"}";
    assert_eq!(prom.query(errors).await, Some(1.0));
    let api = "wso2_integration_api_request_count_total{service_name=\"DirectAPI\"}";
    assert_eq!(prom.query(api).await, Some(3.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_can_be_turned_off() {
    let be = backend().await;
    let config =
        std::env::temp_dir().join(format!("sluice-metrics-off-{}.toml", std::process::id()));
    std::fs::write(&config, "[metric_handler]\nenable = false\n").unwrap();
    let s = start_on_capp(&capp(), be.addr, &["--config", config.to_str().unwrap()]);
    send(
        &s,
        "/services/DirectProxy",
        payload("1000B_buyStocks.xml"),
        1,
    )
    .await;
    let mut c = Conn::open(s.health_addr()).await;
    assert_eq!(c.get("/metric-service/metrics").await.unwrap().status, 404);
    assert_eq!(c.get("/liveness").await.unwrap().status, 200);
    let _ = std::fs::remove_file(&config);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_endpoint_shows_on_the_page() {
    let s = Sluice::failures_endpoint("Suspending", format!("127.0.0.1:{}", closed_port()));
    let p = page(&s).await;
    assert_eq!(
        sample(&p, "sluice_endpoint_active{endpoint=\"Suspending\"}"),
        1.0
    );
    let mut c = Conn::open(s.addr).await;
    let body = payload("1000B_buyStocks.xml");
    let r = c
        .post("/services/Guarded", SOAP_HEADERS, body)
        .await
        .unwrap();
    assert_eq!(r.status, 502, "{}", r.text());
    let p = page(&s).await;
    assert_eq!(
        sample(&p, "sluice_endpoint_active{endpoint=\"Suspending\"}"),
        0.0
    );
    assert_eq!(
        sample(
            &p,
            "sluice_endpoint_suspensions_total{endpoint=\"Suspending\"}"
        ),
        1.0
    );
    // The other endpoint saw nothing.
    assert_eq!(
        sample(&p, "sluice_endpoint_active{endpoint=\"Backend\"}"),
        1.0
    );
    assert_eq!(
        sample(
            &p,
            "sluice_endpoint_suspensions_total{endpoint=\"Backend\"}"
        ),
        0.0
    );
    // The proxy's error count has it too (no fault sequence: Sluice's own fault).
    let guarded = "{service_name=\"Guarded\",service_type=\"proxy\"}";
    assert_eq!(
        sample(
            &p,
            &format!("wso2_integration_proxy_request_count_error_total{guarded}")
        ),
        1.0
    );
}
