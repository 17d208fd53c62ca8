//! Runs the data-driven conformance suites in `conformance/` against the real binary.

mod common;
use common::suite::Req;
use common::*;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Deserialize)]
struct Suite {
    #[serde(default)]
    endpoints: Vec<String>,
    /// The Synapse sample this suite runs as shipped ([`common::suite::start`]).
    synapse_sample: Option<u32>,
    /// Sluice's `SLUICE_LOG` for this suite (default `info`), e.g. to see the log mediator's
    /// DEBUG and TRACE categories.
    log_filter: Option<String>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    request: Req,
    expect: Expect,
    backend: Option<BackendExpect>,
}

#[derive(Deserialize)]
struct Expect {
    status: u16,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    #[serde(default)]
    body_contains: Vec<String>,
    /// Text the body must not hold.
    #[serde(default)]
    body_absent: Vec<String>,
    #[serde(default)]
    echoed: bool,
    /// Headers the response must not have.
    #[serde(default)]
    absent: Vec<String>,
    /// Lines Sluice must write to stderr during the case, each whole, as [`log_text`] shows them.
    #[serde(default)]
    log: Vec<String>,
    /// Text that must not be in what Sluice wrote during the case. Checked once every `log` line
    /// is there, so one of those must be written after anything this could match.
    #[serde(default)]
    log_absent: Vec<String>,
}

#[derive(Deserialize)]
struct BackendExpect {
    count: Option<usize>,
    /// The path (and `?query`) the last request reached the back-end with.
    path: Option<String>,
    method: Option<String>,
    /// The request target of the last request as its request line had it; `{backend}` stands for
    /// the back-end's address (absolute-form, Synapse's `POST_TO_URI`).
    target: Option<String>,
    /// The last request's HTTP version, `HTTP/1.1` or `HTTP/1.0`.
    version: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    absent: Vec<String>,
    /// Texts the last request's body holds (a body with a Content-Length of at most 1 MiB).
    #[serde(default)]
    body_contains: Vec<String>,
}

async fn run_suite(dir: &std::path::Path) -> Vec<String> {
    let suite: Suite =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let filter = suite.log_filter.as_deref().unwrap_or("info");
    let (s, be) = common::suite::start(dir, &suite.endpoints, suite.synapse_sample, filter).await;
    let mut failures = Vec::new();
    assert!(!suite.cases.is_empty());
    for case in &suite.cases {
        let before = be.seen.lock().unwrap().len();
        let log_from = s.stderr().len();
        let mut c = Conn::open(s.addr).await;
        // `{backend}` in a request stands for the back-end's address (addresses a message gives).
        let backend_addr = be.addr.to_string();
        let values: Vec<String> = (case.request.headers.values())
            .map(|v| v.replace("{backend}", &backend_addr))
            .collect();
        let headers: Vec<(&str, &str)> = (case.request.headers.keys())
            .zip(&values)
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let body = match &case.request.body_file {
            Some(f) => bytes::Bytes::from(std::fs::read(dir.join(f)).unwrap()),
            None => bytes::Bytes::from(case.request.body.replace("{backend}", &backend_addr)),
        };
        let sent = c.send_with(
            &case.request.method,
            &case.request.path,
            &headers,
            body.clone(),
        );
        let r = match sent.await {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{}: request failed: {e}", case.name));
                continue;
            }
        };
        let mut why = Vec::new();
        if r.status != case.expect.status {
            why.push(format!(
                "status {} (want {}); body {}",
                r.status,
                case.expect.status,
                r.text()
            ));
        }
        for (k, v) in &case.expect.headers {
            if r.header(k) != v {
                why.push(format!("header {k}: {:?} (want {v:?})", r.header(k)));
            }
        }
        for k in &case.expect.absent {
            if r.headers.contains_key(k.as_str()) {
                why.push(format!("header {k}: {:?} (want none)", r.header(k)));
            }
        }
        if let Some(b) = &case.expect.body {
            if r.text() != *b {
                why.push(format!("body {:?}\n   want {b:?}", r.text()));
            }
        }
        for needle in &case.expect.body_contains {
            if !r.text().contains(needle) {
                why.push(format!("body lacks {needle:?}: {}", r.text()));
            }
        }
        for needle in &case.expect.body_absent {
            if r.text().contains(needle) {
                why.push(format!("body holds {needle:?}: {}", r.text()));
            }
        }
        if case.expect.echoed && r.body != body {
            why.push(format!("body {:?} is not the request body", r.text()));
        }
        why.extend(check_log(&s, log_from, &case.expect));
        if let Some(b) = &case.backend {
            // One-way sends may reach the back-end after the client's answer.
            if let Some(n) = b.count.filter(|&n| n > 0) {
                be.wait_seen(before + n, Duration::from_secs(5)).await;
            }
            let seen = be.seen.lock().unwrap()[before..].to_vec();
            why.extend(check_backend(b, &seen, &be.addr.to_string()));
        }
        if !why.is_empty() {
            failures.push(format!("{}:\n  {}", case.name, why.join("\n  ")));
        }
    }
    failures
}

/// What the case's `backend` expectations find wrong in the requests the back-end saw.
fn check_backend(b: &BackendExpect, seen: &[Seen], addr: &str) -> Vec<String> {
    let mut why = Vec::new();
    if let Some(n) = b.count {
        if seen.len() != n {
            why.push(format!("back-end saw {} requests (want {n})", seen.len()));
        }
    }
    if let Some(last) = seen.last() {
        let path = match &last.query {
            Some(q) => format!("{}?{q}", last.path),
            None => last.path.clone(),
        };
        if b.path.as_ref().is_some_and(|p| *p != path) {
            why.push(format!("back-end path {path:?} (want {:?})", b.path));
        }
        let target = b.target.as_ref().map(|t| t.replace("{backend}", addr));
        if target.as_ref().is_some_and(|t| *t != last.target) {
            why.push(format!(
                "back-end request target {:?} (want {target:?})",
                last.target
            ));
        }
        if b.version.as_ref().is_some_and(|v| *v != last.version) {
            why.push(format!(
                "back-end HTTP version {} (want {:?})",
                last.version, b.version
            ));
        }
        if b.method.as_ref().is_some_and(|m| *m != last.method) {
            why.push(format!(
                "back-end method {} (want {:?})",
                last.method, b.method
            ));
        }
        for (k, v) in &b.headers {
            let got = last
                .headers
                .get(k.as_str())
                .and_then(|x| x.to_str().ok())
                .unwrap_or("");
            if got != v {
                why.push(format!("back-end header {k}: {got:?} (want {v:?})"));
            }
        }
        for k in &b.absent {
            if last.headers.contains_key(k.as_str()) {
                why.push(format!(
                    "back-end got header {k}, which must have been removed"
                ));
            }
        }
        let body = String::from_utf8_lossy(last.body.as_deref().unwrap_or_default());
        for needle in &b.body_contains {
            if !body.contains(needle.as_str()) {
                why.push(format!("back-end body lacks {needle:?}: {body}"));
            }
        }
    } else if !b.headers.is_empty()
        || b.path.is_some()
        || b.target.is_some()
        || b.version.is_some()
        || b.method.is_some()
        || !b.absent.is_empty()
        || !b.body_contains.is_empty()
    {
        // An expectation on the request the back-end got fails when none came.
        why.push("back-end saw nothing".into());
    }
    why
}

/// What the case's `log` and `log_absent` find wrong in what Sluice wrote to stderr since
/// `from`. The lines come through a reader thread, so this waits (boundedly) for the expected ones.
fn check_log(s: &Sluice, from: usize, expect: &Expect) -> Vec<String> {
    if expect.log.is_empty() && expect.log_absent.is_empty() {
        return Vec::new();
    }
    if expect.log.is_empty() {
        // Without a line to wait for, an absent one could merely not have arrived yet.
        return vec!["log_absent needs a log line written after it".into()];
    }
    let sluice = s.addr.to_string();
    let has = |text: &str, line: &str| text.contains(&format!("\n{line}\n"));
    let raw = tokio::task::block_in_place(|| {
        s.stderr_until(Duration::from_secs(10), |all| {
            let text = log_text(&all[from..], &sluice);
            expect.log.iter().all(|l| has(&text, l))
        })
    });
    let text = log_text(&raw[from..], &sluice);
    let mut why = Vec::new();
    for line in &expect.log {
        if !has(&text, line) {
            why.push(format!("log lacks the line {line:?}; it has:{text}"));
        }
    }
    for needle in &expect.log_absent {
        if text.contains(needle.as_str()) {
            why.push(format!("log has {needle:?}; it has:{text}"));
        }
    }
    why
}

/// Sluice's stderr as cases state it: starting with a newline, without colour codes or each
/// line's timestamp (a line reads `INFO sluice::log: ... proxy=P`), with every message id
/// (`urn:uuid:sluice-<pid>-<n>`, new in each run) written `{id}`, the `correlation_id` field left
/// out, and Sluice's own address (`sluice`, as in a Host header) written `{sluice}`.
fn log_text(raw: &str, sluice: &str) -> String {
    let mut plain = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // An ANSI escape: ESC [ parameters, then one final byte from @ to ~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) && c != '[' {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    let mut out = String::with_capacity(plain.len() + 1);
    for line in plain.split_inclusive('\n') {
        out.push('\n');
        let line = match line.split_once(' ') {
            Some((ts, rest))
                if ts.ends_with('Z') && ts.starts_with(|c: char| c.is_ascii_digit()) =>
            {
                rest.trim_start()
            }
            _ => line,
        };
        out.push_str(line.strip_suffix('\n').unwrap_or(line));
    }
    out.push('\n');
    const ID: &str = "urn:uuid:sluice-";
    let mut text = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(at) = rest.find(ID) {
        text.push_str(&rest[..at]);
        text.push_str("{id}");
        rest =
            rest[at + ID.len()..].trim_start_matches(|c: char| c.is_ascii_hexdigit() || c == '-');
    }
    text.push_str(rest);
    // Each line's correlation ID (new in each run, or the client's) is not part of what cases
    // state: its field is dropped.
    const CID: &str = " correlation_id=";
    let mut plain = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(CID) {
        plain.push_str(&rest[..at]);
        rest = rest[at + CID.len()..].trim_start_matches(|c: char| !c.is_whitespace());
    }
    plain.push_str(rest);
    plain.replace(sluice, "{sluice}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suites() {
    let suites = common::suite::suites_with("cases.json");
    let mut failures = Vec::new();
    for dir in &suites {
        for f in run_suite(dir).await {
            failures.push(format!(
                "[{}] {f}",
                dir.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} conformance failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
