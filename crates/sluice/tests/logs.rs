//! Correlation IDs as WSO2 MI gives them (`activityid`: the client's, or a new UUID the back-end
//! gets too; an API's client gets it back; in the log lines a request causes) and the access log
//! (`[access_log]`, MI's pattern or JSON).

mod common;
use common::setup::*;
use common::*;
use std::time::{Duration, Instant};

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// A config file with `text`, removed on drop.
struct Toml(std::path::PathBuf);

impl Toml {
    fn new(name: &str, text: &str) -> Toml {
        let p =
            std::env::temp_dir().join(format!("sluice-logs-{}-{name}.toml", std::process::id()));
        std::fs::write(&p, text).unwrap();
        Toml(p)
    }
}

impl Drop for Toml {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_has_a_correlation_id_the_back_end_gets() {
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let mut c = Conn::open(s.addr).await;
    let body = payload("1000B_buyStocks.xml");
    c.post("/services/DirectProxy", SOAP_HEADERS, body.clone())
        .await
        .unwrap();
    let mut headers = SOAP_HEADERS.to_vec();
    headers.push(("activityid", "client-42"));
    c.post("/services/DirectProxy", &headers, body.clone())
        .await
        .unwrap();
    let api = c.post("/directApi", SOAP_HEADERS, body).await.unwrap();
    assert_eq!(be.wait_seen(3, Duration::from_secs(10)).await, 3);
    let ids: Vec<String> = be
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|x| {
            x.headers
                .get("activityid")
                .expect("the back-end gets activityid")
                .to_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(is_uuid(&ids[0]), "{ids:?}");
    assert_eq!(ids[1], "client-42");
    assert!(is_uuid(&ids[2]) && ids[2] != ids[0], "{ids:?}");
    // An API's client gets its ID back, as from MI.
    assert_eq!(api.headers.get("activityid").unwrap(), ids[2].as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_lines_name_the_request() {
    let s = Sluice::failures_endpoint("Backend", format!("127.0.0.1:{}", closed_port()));
    let mut c = Conn::open(s.addr).await;
    let mut headers = SOAP_HEADERS.to_vec();
    headers.push(("activityid", "client-9"));
    let body = payload("1000B_buyStocks.xml");
    let r = c.post("/services/Plain", &headers, body).await.unwrap();
    assert!(r.status >= 500, "{}", r.status);
    // The field is written `correlation_id=client-9` (with colour codes around the `=`).
    let log = s.stderr_with("client-9", Duration::from_secs(10));
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains("correlation_id") && l.contains("client-9")),
        "{log}"
    );
}

/// The file's lines once there are `n`.
fn lines(path: &std::path::Path, n: usize) -> Vec<String> {
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{n} lines wanted, the file has:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_access_log_has_a_line_per_request() {
    let be = backend().await;
    let mi_line = regex::Regex::new(
        r#"^- 127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d\.\d{3} [+-]\d{4}\] "POST /services/DirectProxy HTTP/1\.1" 200 \S+ "-" "logs-test/1"$"#,
    )
    .unwrap();
    for format in ["mi", "json"] {
        let file =
            std::env::temp_dir().join(format!("sluice-access-{}-{format}.log", std::process::id()));
        let _ = std::fs::remove_file(&file);
        let config = Toml::new(
            format,
            &format!(
                "[access_log]\nenable = true\nformat = \"{format}\"\nfile = \"{}\"\n",
                file.display()
            ),
        );
        let s = start_on_capp(&capp(), be.addr, &["--config", config.0.to_str().unwrap()]);
        let mut c = Conn::open(s.addr).await;
        let mut headers = SOAP_HEADERS.to_vec();
        headers.push(("user-agent", "logs-test/1"));
        headers.push(("activityid", "client-7"));
        let body = payload("1000B_buyStocks.xml");
        c.post("/services/DirectProxy", &headers, body)
            .await
            .unwrap();
        c.get("/services/NoSuchProxy").await.unwrap();
        let got = tokio::task::block_in_place(|| lines(&file, 2));
        if format == "mi" {
            assert!(mi_line.is_match(&got[0]), "{}", got[0]);
            assert!(
                got[1].contains("\"GET /services/NoSuchProxy HTTP/1.1\" 404 "),
                "{}",
                got[1]
            );
        } else {
            let first: serde_json::Value = serde_json::from_str(&got[0]).unwrap();
            assert_eq!(first["status"], 200);
            assert_eq!(first["method"], "POST");
            assert_eq!(first["uri"], "/services/DirectProxy");
            assert_eq!(first["correlation_id"], "client-7");
            assert_eq!(first["user_agent"], "logs-test/1");
            assert!(first["duration_ms"].as_f64().unwrap() >= 0.0);
            let second: serde_json::Value = serde_json::from_str(&got[1]).unwrap();
            assert_eq!(second["status"], 404);
            assert!(
                is_uuid(second["correlation_id"].as_str().unwrap()),
                "{second}"
            );
        }
        drop(s);
        let _ = std::fs::remove_file(&file);
    }
}
