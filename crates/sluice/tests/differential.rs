//! Sluice against Apache Synapse itself. Each conformance suite with a `synapse-golden.json` (what
//! Synapse 3.0.1 answered to the suite's requests, recorded by `differential/record.sh`) runs on
//! Sluice, and every answer is compared with Synapse's: whether there was one, the status, the
//! headers the golden holds, the body (as XML or JSON when both are) and how many requests reached
//! the back-end. `differential/ignore.json` says what is left out of the comparison and why.
//!
//! Where the two differ, `synapse-differences.json` beside the golden must list the case and the
//! parts that differ, with the reason: `intentional` (the README's "Where Sluice differs from
//! Synapse") or `open` (not decided yet). A difference not listed fails the test, and so does a listed
//! one that is gone. Only the committed files are read: neither Java nor the network is needed.

mod common;
use common::suite::Req;
use common::*;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

#[derive(Deserialize)]
struct Suite {
    #[serde(default)]
    endpoints: Vec<String>,
    /// The Synapse sample this suite runs as shipped ([`common::suite::start`]).
    synapse_sample: Option<u32>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    request: Req,
    /// What the conformance test expects of the back-end (Sluice's own count).
    #[serde(default)]
    backend: Option<BackendCount>,
}

#[derive(Deserialize)]
struct BackendCount {
    count: Option<usize>,
}

/// `synapse-golden.json`, as differential/record.py writes it.
#[derive(Deserialize)]
struct Golden {
    recorded_with: String,
    cases: Vec<Answer>,
}

/// What Synapse did with one case's request.
#[derive(Deserialize)]
struct Answer {
    name: String,
    /// Set when Synapse gave no complete answer in time; then there is no status.
    no_answer: Option<String>,
    status: Option<u16>,
    /// The headers that matter, `null` where Synapse's answer had none.
    #[serde(default)]
    headers: BTreeMap<String, Option<String>>,
    #[serde(default)]
    body: String,
    backend_count: usize,
    /// Parts Synapse answered otherwise in another run (record.py runs each suite more than once),
    /// with the values seen; they are not compared.
    #[serde(default)]
    unstable: BTreeMap<String, serde_json::Value>,
}

/// One entry of `synapse-differences.json`: one cause, and the cases it makes differ.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Difference {
    /// Each case and the parts of it that differ: `answer` (one side gave none), `status`,
    /// `header NAME`, `body`, `backend_count`. A case under several causes differs in all their parts.
    cases: BTreeMap<String, BTreeSet<String>>,
    kind: Kind,
    synapse: String,
    sluice: String,
    reason: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    /// Sluice differs on purpose (README, "Where Sluice differs from Synapse").
    Intentional,
    /// Found by the differential test, not decided yet.
    Open,
}

#[derive(Deserialize)]
struct IgnoreFile {
    rules: Vec<Rule>,
}

#[derive(Deserialize)]
struct Rule {
    pattern: String,
    replace: String,
    reason: String,
}

/// The ignore rules, compiled.
struct Ignore(Vec<(regex::Regex, String)>);

impl Ignore {
    fn load() -> Ignore {
        let path = workspace_root().join("differential/ignore.json");
        let file: IgnoreFile = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
            .expect("differential/ignore.json");
        Ignore(
            file.rules
                .into_iter()
                .map(|r| {
                    assert!(!r.reason.trim().is_empty(), "{}: no reason", r.pattern);
                    (regex::Regex::new(&r.pattern).unwrap(), r.replace)
                })
                .collect(),
        )
    }

    fn apply(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (re, with) in &self.0 {
            out = re.replace_all(&out, with.as_str()).into_owned();
        }
        out
    }
}

/// What Sluice did with one case's request.
struct Outcome {
    reply: Option<Reply>,
    backend_count: usize,
}

/// A body as compared: an XML document in a canonical form (names with their namespace, not their
/// prefix; attributes sorted; no XML declaration), a JSON value, or the text itself.
#[derive(PartialEq, Debug)]
enum Body {
    Xml(String),
    Json(serde_json::Value),
    Text(String),
}

fn body(text: &str) -> Body {
    let t = text.trim_start();
    if t.starts_with('<') {
        if let Ok(doc) = roxmltree::Document::parse(text) {
            let mut out = String::new();
            canonical(doc.root(), &mut out);
            return Body::Xml(out);
        }
    } else if t.starts_with(['{', '[']) {
        if let Ok(v) = serde_json::from_str(text) {
            return Body::Json(v);
        }
    }
    Body::Text(text.to_owned())
}

fn canonical(node: roxmltree::Node, out: &mut String) {
    match node.node_type() {
        roxmltree::NodeType::Element => {
            let name = node.tag_name();
            out.push_str(&format!(
                "<{{{}}}{}",
                name.namespace().unwrap_or(""),
                name.name()
            ));
            let mut attrs: Vec<String> = node
                .attributes()
                .map(|a| {
                    let ns = a.namespace().unwrap_or("");
                    format!(" {{{ns}}}{}={:?}", a.name(), a.value())
                })
                .collect();
            attrs.sort();
            out.push_str(&attrs.concat());
            out.push('>');
            node.children().for_each(|c| canonical(c, out));
            out.push_str("</>");
        }
        roxmltree::NodeType::Text => out.push_str(node.text().unwrap_or("")),
        roxmltree::NodeType::Comment => {
            out.push_str(&format!("<!--{}-->", node.text().unwrap_or("")));
        }
        roxmltree::NodeType::PI | roxmltree::NodeType::Root => {
            node.children().for_each(|c| canonical(c, out));
        }
    }
}

/// A value for a failure message: at most 300 characters.
fn show(s: &str) -> String {
    let short: String = s.chars().take(300).collect();
    if short.len() < s.len() {
        format!("{short:?}...")
    } else {
        format!("{short:?}")
    }
}

/// The parts where Sluice's outcome differs from Synapse's answer, each with what each side did.
fn compare(syn: &Answer, got: &Outcome, ignore: &Ignore) -> BTreeMap<String, String> {
    let mut diff = BTreeMap::new();
    if syn.backend_count != got.backend_count {
        let what = format!("{} back-end requests", syn.backend_count);
        diff.insert("backend_count".into(), vs(&what, got.backend_count));
    }
    let r = match (&syn.no_answer, &got.reply) {
        (None, Some(r)) => r,
        (None, None) => {
            diff.insert("answer".into(), "Synapse answered, Sluice did not".into());
            return diff;
        }
        (Some(why), Some(r)) => {
            let what = format!("{why}; Sluice answered {}: {}", r.status, show(&r.text()));
            diff.insert("answer".into(), format!("Synapse gave {what}"));
            return diff;
        }
        (Some(_), None) => return diff,
    };
    if syn.status != Some(r.status) {
        diff.insert("status".into(), vs(&format!("{:?}", syn.status), r.status));
    }
    for (name, want) in &syn.headers {
        let have = r.headers.get(name.as_str()).and_then(|v| v.to_str().ok());
        let (want, have) = (
            want.as_deref().map(|w| ignore.apply(w)),
            have.map(|h| ignore.apply(h)),
        );
        if want != have {
            diff.insert(
                format!("header {name}"),
                vs(&format!("{want:?}"), format!("{have:?}")),
            );
        }
    }
    let (want, have) = (
        body(&ignore.apply(&syn.body)),
        body(&ignore.apply(&r.text())),
    );
    if want != have {
        diff.insert("body".into(), vs(&show(&syn.body), show(&r.text())));
    }
    diff
}

fn vs(synapse: &str, sluice: impl std::fmt::Display) -> String {
    format!("Synapse {synapse}, Sluice {sluice}")
}

/// Sluice's answer to `req`, and how many requests reached the back-end for it: a call Sluice makes
/// after answering (OUT_ONLY) may come a little later, so this waits (boundedly) for as many as
/// Synapse made.
async fn outcome(s: &Sluice, be: &Backend, req: &Req, want: usize) -> Outcome {
    let before = be.seen.lock().unwrap().len();
    let mut c = Conn::open(s.addr).await;
    // `{backend}` stands for the back-end's address, as record.py fills it in.
    let at = be.addr.to_string();
    let values: Vec<String> = (req.headers.values())
        .map(|v| v.replace("{backend}", &at))
        .collect();
    let headers: Vec<(&str, &str)> = (req.headers.keys())
        .zip(&values)
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let body = bytes::Bytes::from(req.body.replace("{backend}", &at));
    let sent = c.send_with(&req.method, &req.path, &headers, body);
    let reply = match tokio::time::timeout(Duration::from_secs(15), sent).await {
        Ok(Ok(r)) => Some(r),
        _ => None,
    };
    let count = || be.seen.lock().unwrap().len() - before;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while count() < want && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let backend_count = count();
    Outcome {
        reply,
        backend_count,
    }
}

fn read<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// How many cases agree, how many differ as listed, and how many have parts left out as unstable.
#[derive(Default)]
struct Tally {
    agree: usize,
    intentional: usize,
    open: usize,
    unstable: usize,
}

/// Runs one suite on Sluice; returns what does not agree with its golden and differences list.
async fn run_suite(dir: &Path, ignore: &Ignore, tally: &mut Tally) -> Vec<String> {
    let suite: Suite = read(&dir.join("cases.json"));
    let golden: Golden = read(&dir.join("synapse-golden.json"));
    let listed_path = dir.join("synapse-differences.json");
    let listed: Vec<Difference> = if listed_path.is_file() {
        read(&listed_path)
    } else {
        Vec::new()
    };
    let mut failures = Vec::new();
    for d in &listed {
        for case in d.cases.keys() {
            if !golden.cases.iter().any(|a| a.name == *case) {
                failures.push(format!("{case}: listed, but the golden has no such case"));
            }
        }
        if [&d.synapse, &d.sluice, &d.reason]
            .iter()
            .any(|t| t.trim().is_empty())
        {
            failures.push(format!(
                "{:?}: a listed difference says what each did, and why",
                d.synapse
            ));
        }
    }
    let (s, be) = common::suite::start(dir, &suite.endpoints, suite.synapse_sample, "info").await;
    for syn in &golden.cases {
        let Some(case) = suite.cases.iter().find(|c| c.name == syn.name) else {
            failures.push(format!(
                "{}: in the golden but not in cases.json; record again: {}",
                syn.name, golden.recorded_with
            ));
            continue;
        };
        // Waiting for as many calls as either side may make keeps a late call (one made after
        // the answer) in its own case, not counted in the next one's.
        let unstable_counts = match syn.unstable.get("backend_count") {
            Some(serde_json::Value::Array(seen)) => seen.iter().filter_map(|v| v.as_u64()).max(),
            _ => None,
        };
        let want = [
            Some(syn.backend_count),
            unstable_counts.map(|n| n as usize),
            case.backend.as_ref().and_then(|b| b.count),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0);
        let got = outcome(&s, &be, &case.request, want).await;
        let mut found = compare(syn, &got, ignore);
        if !syn.unstable.is_empty() {
            tally.unstable += 1;
            if syn.unstable.contains_key("answer") {
                found.clear();
            }
            found.retain(|part, _| !syn.unstable.contains_key(part));
        }
        let causes: Vec<&Difference> = listed
            .iter()
            .filter(|d| d.cases.contains_key(&syn.name))
            .collect();
        let expected: BTreeSet<String> = causes
            .iter()
            .flat_map(|d| d.cases[&syn.name].iter().cloned())
            .collect();
        let parts: BTreeSet<String> = found.keys().cloned().collect();
        if parts == expected {
            if causes.is_empty() {
                tally.agree += 1;
            } else if causes.iter().any(|d| matches!(d.kind, Kind::Open)) {
                tally.open += 1;
            } else {
                tally.intentional += 1;
            }
            continue;
        }
        let mut why = Vec::new();
        for (part, what) in &found {
            if !expected.contains(part) {
                why.push(format!("{part} differs, not listed: {what}"));
            }
        }
        for part in expected.difference(&parts) {
            why.push(format!(
                "{part} is listed as a difference, but Sluice now agrees"
            ));
        }
        failures.push(format!("{}:\n  {}", syn.name, why.join("\n  ")));
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sluice_answers_as_synapse_does() {
    let ignore = Ignore::load();
    let suites = common::suite::suites_with("synapse-golden.json");
    let mut failures = Vec::new();
    let mut tally = Tally::default();
    for dir in &suites {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        for f in run_suite(dir, &ignore, &mut tally).await {
            failures.push(format!("[{name}] {f}"));
        }
    }
    eprintln!(
        "differential: {} suites; {} cases answered as Synapse does, {} differ on purpose, \
         {} differ (open); {} with parts Synapse answers unstably",
        suites.len(),
        tally.agree,
        tally.intentional,
        tally.open,
        tally.unstable
    );
    assert!(
        failures.is_empty(),
        "{} case(s) where Sluice and Synapse disagree other than listed \
         (conformance/SUITE/synapse-differences.json):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The body comparison itself: what it must leave out, and what it must not.
#[test]
fn bodies_compare_as_documents() {
    let same = |a: &str, b: &str| body(a) == body(b);
    // The XML declaration and the prefix chosen for a namespace are not compared.
    assert!(same(
        "<?xml version='1.0' encoding='UTF-8'?><a:x xmlns:a=\"urn:n\" k=\"1\"/>",
        "<b:x xmlns:b=\"urn:n\" k=\"1\"></b:x>"
    ));
    assert!(same(r#"{"a": 1, "b": [2]}"#, r#"{"b":[2],"a":1}"#));
    // Names, namespaces, attributes, text and JSON values are.
    assert!(!same("<x xmlns=\"urn:n\"/>", "<x xmlns=\"urn:m\"/>"));
    assert!(!same("<x k=\"1\"/>", "<x k=\"2\"/>"));
    assert!(!same("<x>1</x>", "<x> 1</x>"));
    assert!(!same(r#"{"a": 1}"#, r#"{"a": "1"}"#));
    assert!(!same("abc", "abd"));
    let ignore = Ignore::load();
    assert_eq!(
        ignore.apply("urn:uuid:sluice-12-3 at 127.0.0.1:8280"),
        ignore.apply("urn:uuid:0f9e-77ab at 127.0.0.1:41000")
    );
}
