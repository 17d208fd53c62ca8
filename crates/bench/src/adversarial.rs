//! `sluice-bench adversarial`: the CPU cost per KB of each reader Sluice owns on hostile input
//! ([`crate::hostile`]), next to its cost on the normal WSO2 payload of the same size.
//!
//! A reader is timed as a request pays for it: where the streaming XPath evaluator or the streaming
//! XSLT bails, libxml2 (or libxslt) does the work as the mediators would, and the streaming attempt
//! is timed on its own as well. Each case runs in a child process (this binary again, `--cell`) on a
//! thread with the 2 MiB stack of Sluice's workers, killed when it passes the time cap, so a reader
//! that takes minutes or overflows its stack ends the case, not the command.

use crate::hostile::{self, Case, Place};
use serde::{Deserialize, Serialize};
use sluice_expr::{Env, Expr, ExprError, ExprErrorKind, HeadNames, StreamPath};
use sluice_stx::StreamSheet;
use sluice_transport::engine::HeadProbe;
use std::borrow::Cow;
use std::cell::OnceCell;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The stack of Sluice's worker threads (Rust's default for a spawned thread).
const WORKER_STACK: usize = 2 * 1024 * 1024;

/// A parser Sluice owns, as a request uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// CBRProxy's `//order[1]/symbol`: streaming XPath, libxml2 where it bails.
    XPathCbr,
    /// CBRSOAPHeaderProxy's `/soapenv:Envelope/soapenv:Header/t:routing`, the same way; in chunks,
    /// the transport's head probe (`decided_by` on what has come, up to 256 KiB).
    XPathHeader,
    /// XSLTProxy's request stylesheet: `sluice-stx` on the Body's child, libxslt where it bails.
    Xslt,
    /// A JsonPath deep scan (`$..symbol`) as `json-eval` runs it: read from the text (serde_json
    /// building only what can hold an answer), else over the body parsed.
    JsonPath,
    /// The configuration reader (`sluice_config::load_str`) on a local entry holding the message.
    Config,
    /// The back-end client's response-head parser (`sluice_transport::h1`), fed as the client reads.
    H1Head,
}

impl Reader {
    pub const ALL: [Reader; 6] = [
        Reader::XPathCbr,
        Reader::XPathHeader,
        Reader::Xslt,
        Reader::JsonPath,
        Reader::Config,
        Reader::H1Head,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Reader::XPathCbr => "xpath-cbr",
            Reader::XPathHeader => "xpath-header",
            Reader::Xslt => "xslt",
            Reader::JsonPath => "jsonpath",
            Reader::Config => "config",
            Reader::H1Head => "h1-head",
        }
    }

    pub fn from_key(key: &str) -> Option<Reader> {
        Reader::ALL.into_iter().find(|r| r.key() == key)
    }

    pub fn label(self) -> &'static str {
        match self {
            Reader::XPathCbr => "XPath `//order[1]/symbol` (CBRProxy)",
            Reader::XPathHeader => "XPath SOAP header `t:routing` (CBRSOAPHeaderProxy)",
            Reader::Xslt => "XSLT reverse on the Body's child (XSLTProxy)",
            Reader::JsonPath => "JsonPath `$..symbol` (json-eval)",
            Reader::Config => "Config `load_str` (local entry holding the message)",
            Reader::H1Head => "HTTP/1.1 response head (back-end client)",
        }
    }

    /// Whether `case` has a form for this reader (chunks only where the reader takes chunks).
    pub fn takes(self, case: Case) -> bool {
        let chunked = case.chunked();
        match self {
            Reader::XPathHeader => true,
            Reader::XPathCbr | Reader::Xslt | Reader::Config => !chunked,
            Reader::JsonPath => hostile::json(case, 0).is_some(),
            Reader::H1Head => case == Case::Chunked || hostile::response_head(case, 0).is_some(),
        }
    }
}

/// The input of one case for `reader`, about `size` bytes.
pub fn input(reader: Reader, case: Case, size: usize, reference: Option<&Path>) -> Option<String> {
    if !reader.takes(case) {
        return None;
    }
    match reader {
        Reader::XPathCbr | Reader::Xslt => {
            Some(hostile::soap(case, Place::Payload, size, reference))
        }
        Reader::XPathHeader => Some(hostile::soap(case, Place::Header, size, reference)),
        Reader::Config => {
            let wrap = hostile::config("").len();
            let m = hostile::soap(case, Place::Payload, size.saturating_sub(wrap), reference);
            Some(hostile::config(&m))
        }
        Reader::JsonPath => hostile::json(case, size),
        Reader::H1Head => hostile::response_head(case, size),
    }
}

/// One case's figures.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Figure {
    pub reader: String,
    pub case: String,
    /// The size asked for.
    pub size: usize,
    /// The input's actual length.
    pub bytes: usize,
    /// What the reader did with it: streamed, handed to libxml2, refused (and why), or over the cap.
    pub outcome: String,
    /// Per call, as a request pays; `None` when over the cap or crashed.
    pub ns_per_call: Option<f64>,
    /// The streaming attempt alone, where it bailed and libxml2 or libxslt did the work.
    pub stream_ns_per_call: Option<f64>,
    pub calls: u64,
    /// The cap, in seconds, when the case was stopped there: its cost is at least that.
    #[serde(default)]
    pub over_cap_s: Option<f64>,
}

impl Figure {
    pub fn us_per_kb(&self) -> Option<f64> {
        self.ns_per_call.map(|ns| per_kb(ns, self.bytes))
    }
}

fn per_kb(ns: f64, bytes: usize) -> f64 {
    ns / 1000.0 / (bytes.max(1) as f64 / 1024.0)
}

/// A message as the mediators see it: its bytes, parsed by libxml2 on first use.
struct Raw<'a> {
    bytes: &'a [u8],
    doc: OnceCell<Result<sluice_xml::Document, ExprError>>,
}

impl<'a> Raw<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Raw {
            bytes,
            doc: OnceCell::new(),
        }
    }
}

impl Env for Raw<'_> {
    fn raw_xml(&self) -> Option<&[u8]> {
        Some(self.bytes)
    }
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        self.doc
            .get_or_init(|| {
                sluice_xml::parse_untrusted(self.bytes, &sluice_xml::Limits::default()).map_err(
                    |e| ExprError {
                        kind: ExprErrorKind::BadMessage,
                        message: e.to_string(),
                    },
                )
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// A JSON message as the mediators see it: its bytes, read by a JsonPath where it can, else
/// parsed by serde_json on first use (what `sluice_mediation`'s view of a message does, its
/// budget estimate included).
struct RawJson<'a> {
    bytes: &'a [u8],
    tree: OnceCell<Result<Option<serde_json::Value>, ExprError>>,
}

impl Env for RawJson<'_> {
    fn unparsed_json(&self) -> Result<Option<sluice_expr::UnparsedJson<'_>>, ExprError> {
        if self.tree.get().is_some() {
            return Ok(None);
        }
        std::hint::black_box(sluice_mediation::budget::json_estimate(self.bytes));
        Ok(Some((self.bytes, Box::new(()))))
    }
    fn json(&self) -> Result<Option<&serde_json::Value>, ExprError> {
        self.tree
            .get_or_init(|| {
                std::hint::black_box(sluice_mediation::budget::json_estimate(self.bytes));
                serde_json::from_slice(self.bytes)
                    .map(Some)
                    .map_err(|e| ExprError {
                        kind: ExprErrorKind::BadMessage,
                        message: e.to_string(),
                    })
            })
            .as_ref()
            .map(Option::as_ref)
            .map_err(Clone::clone)
    }
}

/// Every reader, compiled once.
pub struct Readers {
    cbr: Expr,
    cbr_stream: StreamPath,
    header: Expr,
    /// What can decide `header` on a message's start, as a sequence holding it has them.
    header_names: Option<HeadNames>,
    header_stream: StreamPath,
    sheet_stream: StreamSheet,
    sheet: sluice_xml::Stylesheet,
    json: Expr,
    /// Bytes a chunked case delivers at a time.
    chunk: usize,
}

/// What a call did, for the outcome column.
type Did = Cow<'static, str>;

fn refused(e: impl std::fmt::Display) -> Did {
    let mut m = e.to_string();
    if m.len() > 90 {
        let mut end = 90;
        while !m.is_char_boundary(end) {
            end -= 1;
        }
        m.truncate(end);
        m.push('…');
    }
    Cow::Owned(format!("refused: {}", m.replace(['|', '\n'], " ")))
}

impl Readers {
    pub fn new(capp: &Path, chunk: usize) -> Result<Readers, String> {
        let ns = [
            (
                "soapenv".to_owned(),
                "http://schemas.xmlsoap.org/soap/envelope/".to_owned(),
            ),
            ("t".to_owned(), "http://someuri".to_owned()),
        ];
        let xpath = |text: &str| -> Result<(Expr, StreamPath), String> {
            let e = Expr::compile(text, &ns).map_err(|e| format!("{text}: {e}"))?;
            let s = StreamPath::compile(text, &ns).ok_or(format!("{text}: not streamable"))?;
            Ok((e, s))
        };
        let (cbr, cbr_stream) = xpath("//order[1]/symbol")?;
        let (header, header_stream) = xpath("/soapenv:Envelope/soapenv:Header/t:routing")?;
        let text = crate::micro::sheet_text(capp, "xslt_transform_reverse")?;
        let sheet_stream = StreamSheet::compile(text.as_bytes())
            .ok_or("xslt_transform_reverse: outside the streaming subset")?;
        let sheet = sluice_xml::Stylesheet::compile(text.as_bytes(), None)
            .map_err(|e| format!("xslt_transform_reverse: {e}"))?;
        let json = Expr::json("$..symbol").map_err(|e| format!("$..symbol: {e}"))?;
        Ok(Readers {
            cbr,
            cbr_stream,
            header_names: HeadNames::of([&header]),
            header,
            header_stream,
            sheet_stream,
            sheet,
            json,
            chunk: chunk.max(1),
        })
    }

    /// One request's reading of `input`.
    fn call(&self, reader: Reader, case: Case, input: &[u8], out: &mut Vec<u8>) -> Did {
        let chunked = case.chunked();
        match reader {
            Reader::XPathCbr => xpath(&self.cbr, input),
            Reader::XPathHeader if chunked => self.head_probe(input),
            Reader::XPathHeader => xpath(&self.header, input),
            Reader::Xslt => self.xslt(input, out),
            Reader::JsonPath => {
                let env = RawJson {
                    bytes: input,
                    tree: OnceCell::new(),
                };
                match self.json.json_values(&env) {
                    Ok((found, _)) => {
                        std::hint::black_box(found.len());
                        match env.tree.get() {
                            Some(_) => Cow::Borrowed("parsed"),
                            None => Cow::Borrowed("read from the text"),
                        }
                    }
                    Err(e) => refused(e),
                }
            }
            Reader::Config => config(input),
            Reader::H1Head => h1_head(input, chunked.then_some(self.chunk)),
        }
    }

    /// The streaming attempt alone, for readers that fall back.
    fn stream_only(&self, reader: Reader, input: &[u8], out: &mut Vec<u8>) -> Option<bool> {
        match reader {
            Reader::XPathCbr => Some(self.cbr_stream.eval_string(input).is_some()),
            Reader::XPathHeader => Some(self.header_stream.eval_string(input).is_some()),
            Reader::Xslt => {
                out.clear();
                Some(
                    self.sheet_stream
                        .transform_soap_body_child(input, out)
                        .is_ok(),
                )
            }
            _ => None,
        }
    }

    /// The transport's head probe (`Engine::read_head`): the body arrives `chunk` bytes at a time;
    /// after a piece, when [`HeadProbe`] says so, the header expression is tried on everything so
    /// far; once decided the run evaluates it on those bytes. Undecided, the whole body is read
    /// and evaluated.
    fn head_probe(&self, input: &[u8]) -> Did {
        let mut probe = HeadProbe::new(self.header_names.as_ref());
        let mut got = Vec::new();
        let mut at = 0;
        while at < input.len() {
            let end = (at + self.chunk).min(input.len());
            let before = got.len();
            got.extend_from_slice(&input[at..end]);
            at = end;
            if at == input.len() {
                break;
            }
            if probe.due(&got, before) && self.header.decided_by(&got) {
                return match xpath(&self.header, &got) {
                    Cow::Borrowed("streamed") => Cow::Borrowed("decided from the first chunks"),
                    other => other,
                };
            }
        }
        match xpath(&self.header, &got) {
            Cow::Borrowed("streamed") => Cow::Borrowed("undecided in chunks, then streamed"),
            other => other,
        }
    }

    fn xslt(&self, input: &[u8], out: &mut Vec<u8>) -> Did {
        out.clear();
        if self
            .sheet_stream
            .transform_soap_body_child(input, out)
            .is_ok()
        {
            return Cow::Borrowed("streamed");
        }
        match libxslt(&self.sheet, input) {
            Ok(bytes) => {
                std::hint::black_box(bytes.len());
                Cow::Borrowed("libxslt (streaming bailed)")
            }
            Err(e) => refused(format!("by libxml2 or libxslt: {e}")),
        }
    }
}

fn xpath(e: &Expr, input: &[u8]) -> Did {
    let env = Raw::new(input);
    match e.eval_string(&env) {
        Ok(v) => {
            std::hint::black_box(v.len());
            if env.doc.get().is_some() {
                Cow::Borrowed("libxml2 (streaming bailed)")
            } else {
                Cow::Borrowed("streamed")
            }
        }
        Err(e) if env.doc.get().is_some() => refused(format!("by libxml2: {e}")),
        Err(e) => refused(format!("while streaming: {e}")),
    }
}

/// The xslt mediator's libxslt path: the message parsed, the Body's first child transformed, the
/// result put in its place and the message written out.
fn libxslt(sheet: &sluice_xml::Stylesheet, input: &[u8]) -> Result<Vec<u8>, String> {
    let e = |e: sluice_xml::XmlError| e.to_string();
    let mut d = sluice_xml::parse_untrusted(input, &sluice_xml::Limits::default()).map_err(e)?;
    let (target, source) = {
        let node = d
            .soap_body_first_child()
            .or_else(|| d.root_element())
            .ok_or("no element")?;
        (node.id(), node.to_document().map_err(e)?)
    };
    let result = sheet.transform(&source, &[]).map_err(e)?;
    d.replace_node(target, &result).map_err(e)?;
    d.to_bytes_with(sluice_xml::SerializeOptions {
        xml_declaration: false,
        indent: false,
    })
    .map_err(e)
}

fn config(input: &[u8]) -> Did {
    let Ok(text) = std::str::from_utf8(input) else {
        return Cow::Borrowed("refused: not UTF-8");
    };
    let (cfg, diags) = sluice_config::load_str("adversarial.xml", text);
    std::hint::black_box(cfg.local_entries.len());
    match diags
        .items
        .iter()
        .find(|d| d.severity == sluice_config::Severity::Error)
    {
        Some(d) => refused(&d.message),
        None => Cow::Borrowed("loaded"),
    }
}

/// The back-end client's reading of a response head (`client.rs`): the head is parsed over
/// everything read, again after a read that brought a blank line once a first parse found it
/// partial; the reads 8 KiB growing to 64 KiB as they fill, or `chunk` bytes each (a back-end
/// trickling its head).
fn h1_head(input: &[u8], chunk: Option<usize>) -> Did {
    let mut buf = Vec::new();
    let (mut at, mut read) = (0, 8 * 1024);
    let mut partial_at: Option<usize> = None;
    while at < input.len() {
        let end = (at + chunk.unwrap_or(read)).min(input.len());
        buf.extend_from_slice(&input[at..end]);
        at = end;
        read = (read * 2).min(64 * 1024);
        // As client.rs does: after a partial head, parse again only once a blank line came.
        let worth = match partial_at {
            None => true,
            Some(p) => {
                buf.len() > sluice_transport::h1::MAX_HEAD
                    || sluice_transport::h1::has_blank_line(&buf[p.saturating_sub(2)..])
            }
        };
        if !worth {
            partial_at = Some(buf.len());
            continue;
        }
        match sluice_transport::h1::parse_response_head(&buf, &http::Method::POST) {
            Ok(Some((head, _))) => {
                std::hint::black_box(head.headers.len());
                return Cow::Borrowed("parsed");
            }
            Ok(None) => partial_at = Some(buf.len()),
            Err(e) => return refused(format!("{e} (after {} KiB read)", buf.len() >> 10)),
        }
    }
    Cow::Borrowed("refused: closed before a full head")
}

/// How many calls a case gets.
#[derive(Clone, Copy, Debug)]
pub enum Calls {
    /// As many as fit in this time after the first (see [`time_calls`]).
    Timed(Duration),
    /// Exactly these (at least one): for counting instructions, where a time would make the count
    /// depend on the machine's speed.
    Exactly(u64),
}

/// Calls `f` (on two variants of the input in turn) in batches of about 2 ms until `budget` has
/// passed after the first call, and at least three batches when that call took under a second:
/// ns per call (the median batch's mean, so that a batch the scheduler interrupted on a busy machine
/// does not count; the first call alone when it took a second or more), the calls, what the first
/// call did. With [`Calls::Exactly`], that many calls and their mean.
fn time_calls(calls: Calls, mut f: impl FnMut(usize) -> Did) -> (f64, u64, Did) {
    let t = Instant::now();
    let did = f(0);
    let first = t.elapsed();
    let budget = match calls {
        Calls::Timed(b) => b,
        Calls::Exactly(n) => {
            for k in 1..n.max(1) {
                std::hint::black_box(f((k % 2) as usize));
            }
            let ns = t.elapsed().as_nanos() as f64 / n.max(1) as f64;
            return (ns, n.max(1), did);
        }
    };
    let per_batch = (2_000_000 / first.as_nanos().max(1)).clamp(1, 1 << 20) as u64;
    let min_batches = if first < Duration::from_secs(1) { 3 } else { 0 };
    let start = Instant::now();
    let (mut batches, mut n) = (Vec::new(), 0u64);
    while batches.len() < min_batches || start.elapsed() < budget.saturating_sub(first) {
        let b = Instant::now();
        for _ in 0..per_batch {
            std::hint::black_box(f((n as usize + 1) % 2));
            n += 1;
        }
        batches.push(b.elapsed().as_nanos() as f64 / per_batch as f64);
    }
    if batches.is_empty() {
        return (first.as_nanos() as f64, 1, did);
    }
    batches.sort_by(f64::total_cmp);
    (batches[batches.len() / 2], n + 1, did)
}

/// Measures one case in this thread; `None` when the case has no form for the reader.
pub fn measure(
    readers: &Readers,
    reader: Reader,
    case: Case,
    size: usize,
    reference: Option<&Path>,
    calls: Calls,
) -> Option<Figure> {
    let one = input(reader, case, size, reference)?;
    // Two messages alike but for their prefix, in turn: the XPath evaluator's memo of the
    // envelope never serves (an attacker varies the first bytes), for the normal payload as well.
    let other = one.replace("soapenv", "soapenw");
    let inputs = [one.into_bytes(), other.into_bytes()];
    let mut out = Vec::with_capacity(inputs[0].len() * 2);
    let (ns, made, did) = time_calls(calls, |k| readers.call(reader, case, &inputs[k], &mut out));
    let fell_back = did.contains("libxml2") || did.contains("libxslt");
    // Counted calls are the reader's whole reading: no second pass to count with them.
    let stream_ns = if fell_back && matches!(calls, Calls::Timed(_)) {
        let (ns, _, _) = time_calls(calls, |k| {
            readers.stream_only(reader, &inputs[k], &mut out);
            Cow::Borrowed("")
        });
        Some(ns)
    } else {
        None
    };
    Some(Figure {
        reader: reader.key().to_owned(),
        case: case.key().to_owned(),
        size,
        bytes: inputs[0].len(),
        outcome: did.into_owned(),
        ns_per_call: Some(ns),
        stream_ns_per_call: stream_ns,
        calls: made,
        over_cap_s: None,
    })
}

/// What to run and how.
#[derive(Clone, Debug)]
pub struct Spec {
    pub capp: PathBuf,
    pub reference: Option<PathBuf>,
    pub sizes: Vec<usize>,
    pub readers: Vec<Reader>,
    pub cases: Vec<Case>,
    /// Time spent calling per case (after the first call).
    pub budget: Duration,
    /// Exactly this many calls per case instead (`--calls`, for counting instructions).
    pub calls: Option<u64>,
    /// A case still running after this is stopped and reported over the cap.
    pub cap: Duration,
    /// Bytes per chunk in the chunked cases.
    pub chunk: usize,
    pub isolation: Isolation,
    pub progress: bool,
}

/// Where a case runs.
#[derive(Clone, Debug)]
pub enum Isolation {
    /// In a child process (this binary, `adversarial --cell`), killed at the cap.
    Process(PathBuf),
    /// On a thread of this process (tests: tiny sizes that never reach the cap; one that does is
    /// left running).
    Thread,
}

/// Runs one case on a thread with a worker's stack; `Err` when it could not start.
fn on_worker(
    spec: &Spec,
    reader: Reader,
    case: Case,
    size: usize,
) -> std::io::Result<std::sync::mpsc::Receiver<Result<Option<Figure>, String>>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let calls = spec.calls.map_or(Calls::Timed(spec.budget), Calls::Exactly);
    let (capp, reference, chunk) = (spec.capp.clone(), spec.reference.clone(), spec.chunk);
    std::thread::Builder::new()
        .name("adversarial".into())
        .stack_size(WORKER_STACK)
        .spawn(move || {
            let r = Readers::new(&capp, chunk)
                .map(|rs| measure(&rs, reader, case, size, reference.as_deref(), calls));
            let _ = tx.send(r);
        })?;
    Ok(rx)
}

/// The child's side of `--cell`: measures the case on a worker-sized thread and prints its figure
/// as one JSON line.
pub fn cell_main(spec: &Spec, reader: Reader, case: Case, size: usize) -> Result<(), String> {
    let rx = on_worker(spec, reader, case, size).map_err(|e| e.to_string())?;
    let fig = rx
        .recv()
        .map_err(|_| "the measuring thread ended without a figure".to_owned())??;
    let fig = fig.ok_or_else(|| format!("{}: no {} case", reader.key(), case.key()))?;
    println!(
        "{}",
        serde_json::to_string(&fig).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// A figure for a case that gave no measurement.
fn without_time(reader: Reader, case: Case, size: usize, outcome: String) -> Figure {
    Figure {
        reader: reader.key().to_owned(),
        case: case.key().to_owned(),
        size,
        bytes: size,
        outcome,
        ns_per_call: None,
        stream_ns_per_call: None,
        calls: 0,
        over_cap_s: None,
    }
}

/// A figure for a case stopped at the cap (about `size` bytes: the input is made in the child).
fn over_cap(reader: Reader, case: Case, size: usize, cap: Duration) -> Figure {
    let s = cap.as_secs_f64();
    Figure {
        over_cap_s: Some(s),
        ..without_time(reader, case, size, format!("over the cap: > {s} s"))
    }
}

/// Runs `exe adversarial --cell ...` and waits for it, killing it at the cap.
fn in_child(spec: &Spec, exe: &Path, reader: Reader, case: Case, size: usize) -> Figure {
    let mut cmd = Command::new(exe);
    cmd.arg("adversarial")
        .arg("--cell")
        .arg(format!("{},{},{size}", reader.key(), case.key()))
        .arg("--budget")
        .arg(spec.budget.as_secs_f64().to_string())
        .arg("--chunk")
        .arg(spec.chunk.to_string())
        .arg("--capp")
        .arg(&spec.capp);
    if let Some(n) = spec.calls {
        cmd.arg("--calls").arg(n.to_string());
    }
    if let Some(r) = &spec.reference {
        cmd.arg("--reference").arg(r);
    }
    let mut child = match cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => return without_time(reader, case, size, format!("not run: {e}")),
    };
    let deadline = Instant::now() + spec.cap;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return without_time(reader, case, size, format!("not run: {e}")),
        }
    };
    let Some(status) = status else {
        return over_cap(reader, case, size, spec.cap);
    };
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    match serde_json::from_str::<Figure>(out.trim()) {
        Ok(f) if status.success() => f,
        _ => {
            let why = err
                .lines()
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("no message");
            without_time(reader, case, size, format!("crashed ({status}): {why}"))
        }
    }
}

/// Runs every case of every reader at every size, each reader's normal case first.
pub fn run(spec: &Spec) -> Result<Vec<Figure>, String> {
    let mut out = Vec::new();
    for &reader in &spec.readers {
        for &size in &spec.sizes {
            let mut cases: Vec<Case> = Case::ALL.into_iter().filter(|&c| cases_first(c)).collect();
            cases.extend(spec.cases.iter().filter(|&&c| !cases_first(c)));
            for case in cases {
                if !reader.takes(case) {
                    continue;
                }
                if spec.progress {
                    eprint!("{} {} {size} ... ", reader.key(), case.key());
                }
                let fig = match &spec.isolation {
                    Isolation::Process(exe) => in_child(spec, exe, reader, case, size),
                    Isolation::Thread => {
                        let rx = on_worker(spec, reader, case, size).map_err(|e| e.to_string())?;
                        match rx.recv_timeout(spec.cap) {
                            Ok(r) => match r? {
                                Some(f) => f,
                                None => continue,
                            },
                            Err(_) => over_cap(reader, case, size, spec.cap),
                        }
                    }
                };
                if spec.progress {
                    eprintln!("{}", fig.outcome);
                }
                out.push(fig);
            }
        }
    }
    Ok(out)
}

/// The cases every reader runs first: the yardsticks.
fn cases_first(c: Case) -> bool {
    matches!(
        c,
        Case::Normal | Case::ReadThrough | Case::Chunked | Case::ChunkedReadThrough
    )
}

/// The `case` figure of `f`'s reader and size.
fn case_of<'a>(figs: &'a [Figure], f: &Figure, case: Case) -> Option<&'a Figure> {
    figs.iter()
        .find(|n| n.reader == f.reader && n.size == f.size && n.case == case.key())
}

/// What `f` is held to: its reader's cost on ordinary XML it reads through. That is the slower per
/// KB of the normal and the read-through cases of the same size: a reader that stops early on the
/// normal payload reads the read-through one to its end; one that reads everything reads both. A
/// case delivered in pieces is held to the same two delivered in pieces.
fn baseline_of<'a>(figs: &'a [Figure], f: &Figure) -> Option<&'a Figure> {
    let pieces = Case::from_key(&f.case).is_some_and(Case::chunked);
    let (normal, through) = match pieces {
        true => (Case::Chunked, Case::ChunkedReadThrough),
        false => (Case::Normal, Case::ReadThrough),
    };
    let normal = case_of(figs, f, normal);
    match (normal, case_of(figs, f, through)) {
        (Some(n), Some(r)) if r.us_per_kb() > n.us_per_kb() => Some(r),
        (None, r) => r,
        (n, _) => n,
    }
}

/// Each figure's µs per KB over its reader's baseline ([`baseline_of`]).
pub fn ratio(figs: &[Figure], f: &Figure) -> Option<f64> {
    let n = baseline_of(figs, f)?.us_per_kb()?;
    f.us_per_kb().map(|u| u / n.max(f64::MIN_POSITIVE))
}

fn fmt_num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else if x >= 0.001 {
        format!("{x:.4}")
    } else {
        format!("{x:.1e}")
    }
}

/// A markdown table: one row per case, the ratio to the baseline over 3 in bold.
pub fn table(figs: &[Figure]) -> String {
    let mut s = String::from(
        "| Reader | Case | Size | Outcome | µs per KB | × normal | × baseline | streaming attempt µs per KB |\n\
         |---|---|---:|---|---:|---:|---:|---:|\n",
    );
    for f in figs {
        let label = match Reader::from_key(&f.reader) {
            Some(r) => r.label(),
            None => f.reader.as_str(),
        };
        // Stopped at the cap: at least the cap's worth per call.
        let (us, at_least) = match (f.us_per_kb(), f.over_cap_s) {
            (Some(u), _) => (Some(u), ""),
            (None, Some(cap)) => (Some(per_kb(cap * 1e9, f.bytes)), "≥ "),
            (None, None) => (None, ""),
        };
        let over = |base: Option<&Figure>, bold: bool| match (us, base.and_then(Figure::us_per_kb))
        {
            (Some(u), Some(n)) if bold && u / n > 3.0 => {
                format!("**{at_least}{}**", fmt_num(u / n))
            }
            (Some(u), Some(n)) => format!("{at_least}{}", fmt_num(u / n)),
            _ => "–".to_owned(),
        };
        let normal = over(case_of(figs, f, Case::Normal), false);
        let ratio = over(baseline_of(figs, f), true);
        let us = us.map_or("–".to_owned(), |u| format!("{at_least}{}", fmt_num(u)));
        let stream = f
            .stream_ns_per_call
            .map_or(String::new(), |ns| fmt_num(per_kb(ns, f.bytes)));
        s.push_str(&format!(
            "| {label} | {} | {} | {} | {us} | {normal} | {ratio} | {stream} |\n",
            f.case,
            crate::payload::size_label(f.size),
            f.outcome
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/wso2-perf")
    }

    /// Every case of every reader runs on tiny inputs and gives a figure (the streaming readers
    /// answer the normal payload themselves).
    #[test]
    fn every_case_runs_and_gives_a_figure() {
        let r = reference();
        let spec = Spec {
            capp: r.join("performance-ei/capp"),
            reference: Some(r),
            sizes: vec![4096],
            readers: Reader::ALL.to_vec(),
            cases: Case::ALL.to_vec(),
            budget: Duration::from_millis(1),
            calls: None,
            cap: Duration::from_secs(60),
            chunk: 16,
            isolation: Isolation::Thread,
            progress: false,
        };
        let figs = run(&spec).unwrap();
        let expected: usize = Reader::ALL
            .iter()
            .map(|r| Case::ALL.iter().filter(|&&c| r.takes(c)).count())
            .sum();
        assert_eq!(figs.len(), expected);
        assert!(expected > 50, "{expected}");
        for f in &figs {
            assert!(
                f.ns_per_call.is_some_and(|ns| ns > 0.0),
                "{} {}: {}",
                f.reader,
                f.case,
                f.outcome
            );
            assert!(ratio(&figs, f).is_some(), "{} {}", f.reader, f.case);
        }
        let normal = |reader: Reader| {
            figs.iter()
                .find(|f| f.reader == reader.key() && f.case == "normal")
                .unwrap()
                .outcome
                .clone()
        };
        assert_eq!(normal(Reader::XPathCbr), "streamed");
        assert_eq!(normal(Reader::XPathHeader), "streamed");
        assert_eq!(normal(Reader::Xslt), "streamed");
        assert_eq!(normal(Reader::JsonPath), "read from the text");
        assert_eq!(normal(Reader::Config), "loaded");
        assert_eq!(normal(Reader::H1Head), "parsed");
        // Deeper than libxml2's limit: refused, not crashed.
        let deep = figs
            .iter()
            .find(|f| f.reader == "xpath-cbr" && f.case == "deep-beyond")
            .unwrap();
        assert!(!deep.outcome.contains("crashed"), "{}", deep.outcome);
        let t = table(&figs);
        assert_eq!(t.lines().count(), figs.len() + 2);
    }

    #[test]
    fn a_figure_survives_the_trip_through_json() {
        let f = over_cap(Reader::Xslt, Case::HugeText, 10_240, Duration::from_secs(5));
        let back: Figure = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        assert_eq!(back, f);
        let normal = Figure {
            ns_per_call: Some(10_000_000.0),
            ..without_time(Reader::Xslt, Case::Normal, 10_240, "streamed".into())
        };
        // 5 s over 10 KiB is 500,000 µs per KB: 500 times the normal case's 1,000.
        let t = table(&[normal, f]);
        assert!(t.contains("| 1000 | 1.00 | 1.00 |"), "{t}");
        assert!(t.contains("| ≥ 500000 | ≥ 500 | **≥ 500** |"), "{t}");
        assert_eq!(Reader::from_key("h1-head"), Some(Reader::H1Head));
        assert_eq!(Case::from_key("long-charrefs"), Some(Case::LongCharRefs));
    }

    #[test]
    fn the_head_parser_is_fed_as_the_client_reads() {
        let head = hostile::response_head(Case::Normal, 10_240).unwrap();
        assert_eq!(h1_head(head.as_bytes(), None), "parsed");
        assert_eq!(h1_head(head.as_bytes(), Some(16)), "parsed");
        let big = hostile::response_head(Case::HugeText, 1 << 20).unwrap();
        assert!(h1_head(big.as_bytes(), None).contains("larger than"));
        assert!(h1_head(b"HTTP/1.1 200 OK\r\n", None).contains("closed before"));
    }
}
