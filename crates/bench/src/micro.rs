//! `sluice-bench micro`: the CPU cost of the per-message work the content scenarios add, outside any
//! network: the streaming XPath evaluator on the CBR proxies' expressions and the streaming XSLT on
//! the WSO2 stylesheets, over the payload of each size, and two expressions outside the streaming
//! subset that libxml2 evaluates (over the parsed payload, and over no message at all), and the
//! script mediator's JavaScript runs.
//! Single-threaded timing loops; the figures are per call and per byte (on a shared machine, compare
//! runs taken back to back). A loop keeps the code and data of its case in the caches, which a
//! server's other work does not: one case times the CBR reading with the caches cooled between calls
//! (in the server it costs more still, see docs/benchmarks/content-routing.md).

use crate::payload;
use sluice_expr::{Env, Expr, ExprError, PropScope, StreamPath};
use sluice_stx::StreamSheet;
use std::borrow::Cow;
use std::path::Path;
use std::time::{Duration, Instant};

const SOAPENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";

/// One timed case's result.
pub struct Timing {
    pub name: String,
    pub size: usize,
    pub ns_per_call: f64,
}

impl Timing {
    pub fn ns_per_byte(&self) -> f64 {
        self.ns_per_call / self.size.max(1) as f64
    }
}

/// How long each case runs.
#[derive(Clone, Copy, Debug)]
pub enum Budget {
    /// About this long, after a tenth of it as warm-up.
    Time(Duration),
    /// Exactly this many calls, no warm-up: for counting instructions per call under valgrind
    /// (total over calls, less a run with `Calls(0)`).
    Calls(u64),
}

/// Calls `f` as `budget` says and returns ns per call.
fn time(budget: Budget, mut f: impl FnMut()) -> f64 {
    let budget = match budget {
        Budget::Calls(n) => {
            let start = Instant::now();
            for _ in 0..n {
                f();
            }
            return start.elapsed().as_nanos() as f64 / n.max(1) as f64;
        }
        Budget::Time(t) => t,
    };
    let warm = Instant::now();
    while warm.elapsed() < budget / 10 {
        f();
    }
    let (start, mut n) = (Instant::now(), 0u64);
    while start.elapsed() < budget {
        for _ in 0..16 {
            f();
        }
        n += 16;
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// Nanoseconds per call of `f`, each call after one of `cool` (untimed): the calls alone are timed,
/// and the cost of reading the clock around one (timed around nothing) is taken off.
fn time_cooled(budget: Budget, mut cool: impl FnMut() -> bool, mut f: impl FnMut() -> bool) -> f64 {
    let clock = {
        let (start, mut spent) = (Instant::now(), Duration::ZERO);
        for _ in 0..10_000 {
            let t = Instant::now();
            spent += std::hint::black_box(t).elapsed();
        }
        std::hint::black_box(start);
        spent.as_nanos() as f64 / 10_000.0
    };
    let (start, mut spent, mut n) = (Instant::now(), Duration::ZERO, 0u64);
    loop {
        let done = match budget {
            Budget::Calls(calls) => n >= calls,
            Budget::Time(t) => start.elapsed() >= t && n > 0,
        };
        if done {
            break;
        }
        cool();
        let t = Instant::now();
        f();
        spent += t.elapsed();
        n += 1;
    }
    (spent.as_nanos() as f64 / n.max(1) as f64 - clock).max(0.0)
}

/// The `xsl:stylesheet` element's text in a CAR local entry file.
pub(crate) fn sheet_text(capp: &Path, entry: &str) -> Result<String, String> {
    let file = capp.join(format!("{entry}_1.0.0/{entry}-1.0.0.xml"));
    let s = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    s.find("<xsl:stylesheet")
        .and_then(|a| {
            let close = "</xsl:stylesheet>";
            s.rfind(close).map(|b| s[a..b + close.len()].to_owned())
        })
        .ok_or_else(|| format!("{}: no xsl:stylesheet", file.display()))
}

/// The stylesheet of a CAR local entry, compiled for the streaming XSLT.
fn sheet(capp: &Path, entry: &str) -> Result<StreamSheet, String> {
    StreamSheet::compile(sheet_text(capp, entry)?.as_bytes())
        .ok_or_else(|| format!("{entry}: outside the streaming XSLT subset"))
}

/// The buyStocks payload as clients that prefix every element write it: `order` and its children
/// under the `m` prefix `buyStocks` already declares.
fn prefix_orders(body: &str) -> String {
    let mut b = body.to_owned();
    for n in ["order", "symbol", "buyerID", "price", "volume"] {
        b = b
            .replace(&format!("<{n}>"), &format!("<m:{n}>"))
            .replace(&format!("</{n}>"), &format!("</m:{n}>"));
    }
    b
}

/// The payload a streaming XPath case reads.
#[derive(Clone, Copy)]
enum Body {
    Plain,
    /// With every order and its children prefixed `m:`.
    Prefixed,
    /// Two messages in turn, alike but for their first bytes.
    Alternating,
}

/// A message for the libxml2 cases: its parsed payload and two properties.
struct Parsed(sluice_xml::Document);

impl Env for Parsed {
    fn property(&self, _: PropScope, name: &str) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(if name == "user" {
            "alice"
        } else {
            "secret"
        }))
    }
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        Ok(&self.0)
    }
}

/// The cooled-caches case's name (it has no `CBRProxy //` in it: `--only 'CBRProxy //'` is the plain
/// case alone).
const COOLED: &str = "CBRProxy with caches cooled by a libxml2 parse, //order[1]/symbol";

/// Times every case over the payload of each size.
pub fn run(
    capp: &Path,
    reference: Option<&Path>,
    sizes: &[usize],
    budget: Budget,
    only: Option<&str>,
) -> Result<Vec<Timing>, String> {
    let wanted = |name: &str| only.is_none_or(|o| name.contains(o));
    let ns = [
        ("soapenv".to_owned(), SOAPENV.to_owned()),
        ("t".to_owned(), "http://someuri".to_owned()),
        ("m".to_owned(), "http://services.samples/xsd".to_owned()),
    ];
    // (case, expression, payload)
    let paths = [
        (
            "CBRProxy //order[1]/symbol",
            "//order[1]/symbol",
            Body::Plain,
        ),
        (
            "CBRProxy, no two envelopes alike, //order[1]/symbol",
            "//order[1]/symbol",
            Body::Alternating,
        ),
        (
            "CBRSOAPHeaderProxy header",
            "/soapenv:Envelope/soapenv:Header/t:routing",
            Body::Plain,
        ),
        (
            "CBR prefixed body //m:order[1]/m:symbol",
            "//m:order[1]/m:symbol",
            Body::Prefixed,
        ),
    ];
    let reverse = sheet(capp, "xslt_transform_reverse")?;
    let forward = sheet(capp, "xslt_transform")?;
    let fast_reverse = sheet(capp, "fastxslt_transform_reverse")?;
    let mut out = Vec::new();
    for &size in sizes {
        let (body, _) = payload::for_size(size, reference);
        let prefixed = prefix_orders(&body).into_bytes();
        // The same message under another SOAP prefix (of the same length): it differs from the
        // first from its third byte on, so the evaluator's memo of the envelope never serves.
        let other = body.replace("soapenv", "soapenw").into_bytes();
        let plain = body.into_bytes();
        for (name, text, kind) in paths {
            if !wanted(name) {
                continue;
            }
            let bodies = match kind {
                Body::Plain => [&plain, &plain],
                Body::Prefixed => [&prefixed, &prefixed],
                Body::Alternating => [&plain, &other],
            };
            let p = StreamPath::compile(text, &ns).ok_or(format!("{text}: not streamable"))?;
            if bodies.iter().any(|b| p.eval_string(b).is_none()) {
                return Err(format!(
                    "{text}: no streaming answer on the {size} B payload"
                ));
            }
            let mut k = 0;
            let ns_per_call = time(budget, || {
                k ^= 1;
                std::hint::black_box(p.eval_string(std::hint::black_box(bodies[k])));
            });
            let body = bodies[0];
            out.push(Timing {
                name: name.to_owned(),
                size: body.len(),
                ns_per_call,
            });
        }
        // The same reading with the caches cooled between calls, as a server's other work (its
        // network stack, HTTP, the other messages) cools them: a libxml2 parse of the payload
        // before each call, only the call timed. Its instructions under `--calls` include the
        // parses'.
        if wanted(COOLED) {
            let p = StreamPath::compile("//order[1]/symbol", &ns).ok_or("//order[1]/symbol")?;
            let limits = sluice_xml::Limits::default();
            let ns_per_call = time_cooled(
                budget,
                || std::hint::black_box(sluice_xml::parse_untrusted(&plain, &limits).is_ok()),
                || std::hint::black_box(p.eval_string(std::hint::black_box(&plain)).is_some()),
            );
            out.push(Timing {
                name: COOLED.to_owned(),
                size: plain.len(),
                ns_per_call,
            });
        }
        libxml2_cases(&plain, size, budget, &wanted, &ns, &mut out)?;
        let sheets = [&reverse, &forward, &fast_reverse];
        xslt_cases(&plain, size, budget, &wanted, sheets, &mut out)?;
        script_cases(&plain, budget, &wanted, &mut out)?;
    }
    Ok(out)
}

/// The `script` mediator's own cost (`sluice-script`, QuickJS): a run that sets one property (a
/// fresh context and `mc`: the floor of any script), and Synapse sample 350's E4X transform over the
/// payload (parsed by the script's XML objects, a literal built and written back).
fn script_cases(
    plain: &[u8],
    budget: Budget,
    wanted: &dyn Fn(&str) -> bool,
    out: &mut Vec<Timing>,
) -> Result<(), String> {
    use sluice_script::{Script, Snapshot};
    let payload = String::from_utf8_lossy(plain).into_owned();
    let cases = [
        ("script: one property", "mc.setProperty('a', '1');", None),
        (
            "script: sample 350's E4X transform",
            "var s = mc.getPayloadXML()..*::symbol[0].toString();\n\
             mc.setPayloadXML(<m:getQuote xmlns:m=\"http://services.samples\"><m:request><m:symbol>{s}</m:symbol></m:request></m:getQuote>);",
            Some(payload.clone()),
        ),
    ];
    for (name, source, xml) in cases {
        if !wanted(name) {
            continue;
        }
        let script = Script::compile(source, vec![], None).map_err(|e| format!("{name}: {e}"))?;
        let snap = Snapshot {
            xml,
            ..Snapshot::default()
        };
        script
            .run(&snap, None)
            .map_err(|e| format!("{name}: {e}"))?;
        let ns_per_call = time(budget, || {
            std::hint::black_box(script.run(std::hint::black_box(&snap), None).is_ok());
        });
        out.push(Timing {
            name: name.to_owned(),
            size: payload.len(),
            ns_per_call,
        });
    }
    Ok(())
}

/// Outside the streaming subset: libxml2's XPath over the tree (parsed once, outside the loop),
/// and an expression that reads no node (a credential header built from properties).
fn libxml2_cases(
    plain: &[u8],
    size: usize,
    budget: Budget,
    wanted: &dyn Fn(&str) -> bool,
    ns: &[(String, String)],
    out: &mut Vec<Timing>,
) -> Result<(), String> {
    let libxml2 = [
        (
            "libxml2 XPath over the tree sum(//order[symbol='IBM']/volume)",
            "sum(//order[symbol='IBM']/volume)",
        ),
        (
            "libxml2 XPath without the message concat(base64Encode(...))",
            "concat('Basic ', base64Encode(concat($ctx:user, ':', $ctx:pass)))",
        ),
    ];
    if libxml2.iter().any(|(name, _)| wanted(name)) {
        let env = Parsed(
            sluice_xml::Document::parse(plain)
                .map_err(|e| format!("the {size} B payload does not parse: {e}"))?,
        );
        for (name, text) in libxml2 {
            if !wanted(name) {
                continue;
            }
            let e = Expr::compile(text, ns).map_err(|e| format!("{text}: {e}"))?;
            if e.streams() {
                return Err(format!("{text}: meant for libxml2, but it streams"));
            }
            e.eval_string(&env).map_err(|e| format!("{text}: {e}"))?;
            let ns_per_call = time(budget, || {
                std::hint::black_box(e.eval_string(&env).is_ok());
            });
            out.push(Timing {
                name: name.to_owned(),
                size: plain.len(),
                ns_per_call,
            });
        }
    }
    Ok(())
}

/// The XSLT proxies' stylesheets in the streaming subset, over the payload (the response one over
/// the reversed payload).
fn xslt_cases(
    plain: &[u8],
    size: usize,
    budget: Budget,
    wanted: &dyn Fn(&str) -> bool,
    [reverse, forward, fast_reverse]: [&StreamSheet; 3],
    out: &mut Vec<Timing>,
) -> Result<(), String> {
    let mut reversed = Vec::new();
    reverse
        .transform_soap_body_child(plain, &mut reversed)
        .map_err(|_| format!("xslt_transform_reverse: fell back on the {size} B payload"))?;
    let mut buf = Vec::with_capacity(plain.len() * 2);
    let sheets: [(&str, &StreamSheet, &[u8], bool); 3] = [
        ("XSLTProxy request (reverse)", reverse, plain, true),
        ("XSLTProxy response (forward)", forward, &reversed, true),
        ("XSLTEnhancedProxy request", fast_reverse, plain, false),
    ];
    for (name, s, input, body_child) in sheets {
        if !wanted(name) {
            continue;
        }
        let r = if body_child {
            s.transform_soap_body_child(input, &mut buf)
        } else {
            s.transform(input, &mut buf)
        };
        r.map_err(|_| format!("{name}: fell back on the {size} B payload"))?;
        let ns_per_call = time(budget, || {
            buf.clear();
            let r = if body_child {
                s.transform_soap_body_child(input, &mut buf)
            } else {
                s.transform(input, &mut buf)
            };
            std::hint::black_box(r.is_ok());
        });
        out.push(Timing {
            name: name.to_owned(),
            size: input.len(),
            ns_per_call,
        });
    }
    Ok(())
}

/// A markdown table of `timings`.
pub fn table(timings: &[Timing]) -> String {
    let mut s =
        String::from("| Case | Input bytes | µs per call | ns per byte |\n|---|---:|---:|---:|\n");
    for t in timings {
        s.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} |\n",
            t.name,
            t.size,
            t.ns_per_call / 1000.0,
            t.ns_per_byte()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Smoke: every case answers on the streaming paths (`run` refuses a case that falls back), over
    /// the WSO2 payload and the prefixed one, in a few milliseconds; the scripts run without error.
    #[test]
    fn every_case_runs_on_the_fast_paths() {
        let reference =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/wso2-perf");
        let t = run(
            &reference.join("performance-ei/capp"),
            Some(&reference),
            &[1024],
            Budget::Time(Duration::from_millis(2)),
            None,
        )
        .unwrap();
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names.len(), 12, "{names:?}");
        assert!(names.contains(&"script: sample 350's E4X transform"));
        assert!(names.contains(&"CBR prefixed body //m:order[1]/m:symbol"));
        assert!(names.contains(&"CBRProxy, no two envelopes alike, //order[1]/symbol"));
        assert!(names.contains(&COOLED));
        assert!(t.iter().all(|t| t.ns_per_call > 0.0 || t.name == COOLED));
        // A fixed number of calls (what micro-instructions.sh counts) runs every case as well.
        let t = run(
            &reference.join("performance-ei/capp"),
            Some(&reference),
            &[1024],
            Budget::Calls(3),
            Some("CBRProxy //"),
        )
        .unwrap();
        assert_eq!(t.len(), 1);
        assert!(t[0].ns_per_call > 0.0);
    }
}
