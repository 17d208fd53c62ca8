//! Hostile inputs for `sluice-bench adversarial`: WSO2-shaped messages (and JSON bodies and response
//! heads) of a given size whose bulk is one shape an attacker controls (many attributes, many
//! namespaces, many siblings, long names, deep nesting, huge text, character references), placed
//! where the reader under test must read it.

use crate::payload;

/// One shape of hostile input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// The WSO2 payload as clients send it: what every other case is compared with.
    Normal,
    /// Ordinary XML where the hostile part of the other cases goes: WSO2 orders under another
    /// name, so that nothing matches until the reader has read through them. The yardstick for
    /// readers that stop early on the normal payload.
    ReadThrough,
    /// Many attributes on one element.
    Attributes,
    /// Many namespace declarations on one element, and elements and attributes using them.
    Namespaces,
    /// Many sibling elements.
    Siblings,
    /// One element with a very long name.
    LongName,
    /// Nesting 200 deep (within libxml2's 256), repeated.
    Deep200,
    /// Nesting as deep as the size allows (beyond libxml2's 256).
    DeepBeyond,
    /// One huge text node.
    HugeText,
    /// Text made of character references (`&#x41;` runs).
    CharRefs,
    /// Character references with long digit strings (`&#x000…041;`).
    LongCharRefs,
    /// The normal input delivered in small chunks to a reader that takes chunks.
    Chunked,
    /// Many siblings before what the reader looks for, delivered in small chunks.
    ChunkedSiblings,
    /// The read-through input delivered in small chunks: the yardstick for the chunked cases, which
    /// pay for gathering the pieces as it does.
    ChunkedReadThrough,
}

impl Case {
    pub const ALL: [Case; 14] = [
        Case::Normal,
        Case::ReadThrough,
        Case::Attributes,
        Case::Namespaces,
        Case::Siblings,
        Case::LongName,
        Case::Deep200,
        Case::DeepBeyond,
        Case::HugeText,
        Case::CharRefs,
        Case::LongCharRefs,
        Case::Chunked,
        Case::ChunkedSiblings,
        Case::ChunkedReadThrough,
    ];

    /// The name used on the command line and in tables.
    pub fn key(self) -> &'static str {
        match self {
            Case::Normal => "normal",
            Case::ReadThrough => "read-through",
            Case::Attributes => "attributes",
            Case::Namespaces => "namespaces",
            Case::Siblings => "siblings",
            Case::LongName => "long-name",
            Case::Deep200 => "deep-200",
            Case::DeepBeyond => "deep-beyond",
            Case::HugeText => "huge-text",
            Case::CharRefs => "charrefs",
            Case::LongCharRefs => "long-charrefs",
            Case::Chunked => "chunked",
            Case::ChunkedSiblings => "chunked-siblings",
            Case::ChunkedReadThrough => "chunked-read-through",
        }
    }

    /// Whether the input is delivered in small pieces (to the readers that take pieces).
    pub fn chunked(self) -> bool {
        matches!(
            self,
            Case::Chunked | Case::ChunkedSiblings | Case::ChunkedReadThrough
        )
    }

    pub fn from_key(key: &str) -> Option<Case> {
        Case::ALL.into_iter().find(|c| c.key() == key)
    }
}

/// Where the hostile part of a SOAP message goes: what the reader under test must read through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// On `soapenv:Header` and before the `routing` header block (the SOAP-header path reads no
    /// further than `routing`).
    Header,
    /// On `m:buyStocks` (the Body's first child, which XSLTProxy transforms) and before its first
    /// `order`.
    Payload,
}

/// The markup of a hostile part: attributes for the start tag it goes on, and content before what
/// the readers look for.
#[derive(Default)]
struct Part {
    attrs: String,
    content: String,
}

/// Appends `unit(i)` for i = 0, 1, ... while the result stays within `budget` bytes (at least once).
fn repeat_within(out: &mut String, budget: usize, mut unit: impl FnMut(usize) -> String) {
    let end = out.len() + budget;
    let mut i = 0;
    loop {
        let u = unit(i);
        if i > 0 && out.len() + u.len() > end {
            break;
        }
        out.push_str(&u);
        i += 1;
    }
}

/// `n` nested `<d>` elements around `1`.
fn nest(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n("<d>", n));
    out.push('1');
    out.extend(std::iter::repeat_n("</d>", n));
}

/// The hostile part of `case` taking about `budget` bytes.
fn part(case: Case, budget: usize) -> Part {
    let mut p = Part::default();
    match case {
        Case::Normal | Case::Chunked => {}
        Case::ReadThrough | Case::ChunkedReadThrough => {
            repeat_within(&mut p.content, budget, |_| {
                "<trade><symbol>N</symbol><buyerID>n</buyerID><price>1.0</price><volume>1</volume></trade>\n"
                .to_owned()
            })
        }
        Case::Attributes => repeat_within(&mut p.attrs, budget, |i| format!(" a{i}=\"1\"")),
        Case::Namespaces => {
            // Half declarations, half elements using them, each prefix looked up from far away.
            repeat_within(&mut p.attrs, budget / 2, |i| {
                format!(" xmlns:p{i}=\"urn:p:{i}\"")
            });
            let count = p.attrs.matches(" xmlns:").count();
            repeat_within(&mut p.content, budget / 2, |i| {
                let j = (i * 7919) % count;
                format!("<p{j}:e p{j}:a=\"1\"/>")
            });
        }
        Case::Siblings | Case::ChunkedSiblings => {
            repeat_within(&mut p.content, budget, |_| "<s>1</s>".to_owned())
        }
        Case::LongName => {
            let name = "n".repeat(budget.saturating_sub(5) / 2).max("n".into());
            p.content = format!("<{name}>1</{name}>");
        }
        Case::Deep200 => repeat_within(&mut p.content, budget, |_| {
            let mut s = String::new();
            nest(&mut s, 200);
            s
        }),
        Case::DeepBeyond => nest(&mut p.content, (budget / 7).max(300)),
        Case::HugeText => p.content = format!("<t>{}</t>", "x".repeat(budget.saturating_sub(7))),
        Case::CharRefs => {
            p.content.push_str("<t>");
            repeat_within(&mut p.content, budget.saturating_sub(7), |i| {
                format!("&#x{:X};", 0x41 + i % 26)
            });
            p.content.push_str("</t>");
        }
        Case::LongCharRefs => {
            p.content.push_str("<t>");
            repeat_within(&mut p.content, budget.saturating_sub(7), |i| {
                format!("&#x{}{:X};", "0".repeat(58), 0x41 + i % 26)
            });
            p.content.push_str("</t>");
        }
    }
    p
}

const ENV_OPEN: &str =
    "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">\n";
const ROUTING: &str =
    "<routing xmlns=\"http://someuri\">xadmin;server1;community#1.0##</routing></soapenv:Header>\n";
const BODY_OPEN: &str = "<soapenv:Body><m:buyStocks xmlns:m=\"http://services.samples/xsd\"";
const ORDER: &str =
    "<order><symbol>N</symbol><buyerID>n</buyerID><price>1.0</price><volume>1</volume></order>\n";
const TAIL: &str = "</m:buyStocks></soapenv:Body></soapenv:Envelope>\n";

/// A buyStocks SOAP message of about `size` bytes: for [`Case::Normal`] and [`Case::Chunked`] the
/// WSO2 payload ([`payload::for_size`]), else the WSO2 envelope with one order whose bulk is the
/// hostile part at `place`.
pub fn soap(case: Case, place: Place, size: usize, reference: Option<&std::path::Path>) -> String {
    if matches!(case, Case::Normal | Case::Chunked) {
        return payload::for_size(size, reference).0;
    }
    let skeleton = ENV_OPEN.len() + 16 + ROUTING.len() + BODY_OPEN.len() + 2 + ORDER.len();
    let p = part(case, size.saturating_sub(skeleton + TAIL.len()));
    let mut s = String::with_capacity(size + 256);
    s.push_str(ENV_OPEN);
    // The rest of a start tag, `end` (`>` and what follows it), with the hostile part when it goes
    // in this element.
    let close = |s: &mut String, here: Place, end: &str| {
        let hostile = place == here;
        if hostile {
            s.push_str(&p.attrs);
        }
        s.push_str(end);
        if hostile {
            s.push_str(&p.content);
        }
    };
    s.push_str("<soapenv:Header");
    close(&mut s, Place::Header, ">");
    s.push_str(ROUTING);
    s.push_str(BODY_OPEN);
    close(&mut s, Place::Payload, ">\n");
    s.push_str(ORDER);
    s.push_str(TAIL);
    s
}

/// A configuration file holding `message` as a local entry's inline XML (the config reader parses
/// it, and keeps it).
pub fn config(message: &str) -> String {
    let body = message.trim_end();
    format!("<localEntry key=\"adversarial\" xmlns=\"http://ws.apache.org/ns/synapse\">{body}</localEntry>\n")
}

/// The WSO2 JSON payload's shape (`{"payload": {"symbol": ["json", ...]}}`, one value a line) at
/// about `size` bytes, or with `hostile` before it at the top level.
fn json_document(size: usize, hostile: Option<&str>) -> String {
    let mut s = String::with_capacity(size + 64);
    s.push_str("{\n");
    if let Some(h) = hostile {
        s.push_str("    \"h\": ");
        s.push_str(h);
        s.push_str(",\n");
    }
    s.push_str("    \"payload\": {\n        \"symbol\": [\n            \"json\"");
    let tail = "\n        ]\n    }\n}\n";
    while s.len() + 21 + tail.len() <= size {
        s.push_str(",\n            \"json\"");
    }
    s.push_str(tail);
    s
}

/// A JSON body of about `size` bytes for `case`, or `None` where the shape has no JSON form
/// (namespaces, long digit strings in references: `\u` takes exactly four) or JSON is not read in
/// chunks.
pub fn json(case: Case, size: usize) -> Option<String> {
    let budget = size.saturating_sub(80);
    let mut h = String::new();
    match case {
        Case::Normal => return Some(json_document(size, None)),
        Case::ReadThrough
        | Case::Namespaces
        | Case::LongCharRefs
        | Case::Chunked
        | Case::ChunkedSiblings
        | Case::ChunkedReadThrough => return None,
        Case::Attributes => {
            h.push('{');
            repeat_within(&mut h, budget, |i| {
                format!("{}\"k{i}\":1", if i > 0 { "," } else { "" })
            });
            h.push('}');
        }
        Case::Siblings => {
            h.push('[');
            repeat_within(&mut h, budget, |i| {
                if i > 0 { ",1" } else { "1" }.to_owned()
            });
            h.push(']');
        }
        Case::LongName => h = format!("{{\"{}\":1}}", "n".repeat(budget)),
        Case::Deep200 => {
            h.push('[');
            repeat_within(&mut h, budget, |i| {
                let sep = if i > 0 { "," } else { "" };
                format!("{sep}{}1{}", "[".repeat(200), "]".repeat(200))
            });
            h.push(']');
        }
        Case::DeepBeyond => {
            let n = (budget / 2).max(300);
            h = format!("{}1{}", "[".repeat(n), "]".repeat(n));
        }
        Case::HugeText => h = format!("\"{}\"", "x".repeat(budget)),
        Case::CharRefs => {
            h.push('"');
            repeat_within(&mut h, budget, |i| format!("\\u{:04X}", 0x41 + i % 26));
            h.push('"');
        }
    }
    Some(json_document(0, Some(&h)))
}

/// The status line and the headers every response head starts with.
const HEAD_START: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=UTF-8\r\nContent-Length: 0\r\nDate: Fri, 27 Nov 2026 10:00:00 GMT\r\nServer: WSO2 Synapse\r\n";

/// A back-end's response head of about `size` bytes for `case`, or `None` where the shape has no
/// form in a head (namespaces, nesting, references). [`Case::Normal`]: ordinary fields of about 100
/// bytes (at most 100 of them, fewer than the client's 128), the rest in one long cookie value.
pub fn response_head(case: Case, size: usize) -> Option<String> {
    let mut s = String::from(HEAD_START);
    let budget = size.saturating_sub(s.len() + 2);
    match case {
        Case::Normal | Case::Chunked => {
            let end = s.len() + budget;
            let mut i = 0;
            while i < 100 && s.len() + 100 <= end {
                s.push_str(&format!("X-Trace-{i:03}: {}\r\n", "t".repeat(84)));
                i += 1;
            }
            let rest = end.saturating_sub(s.len() + 14);
            if rest > 0 {
                s.push_str(&format!("Set-Cookie: {}\r\n", "c".repeat(rest)));
            }
        }
        Case::Attributes => repeat_within(&mut s, budget, |_| "x: y\r\n".to_owned()),
        Case::LongName => s.push_str(&format!("{}: 1\r\n", "n".repeat(budget.saturating_sub(5)))),
        Case::HugeText => s.push_str(&format!(
            "X-Long: {}\r\n",
            "x".repeat(budget.saturating_sub(10))
        )),
        _ => return None,
    }
    s.push_str("\r\n");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soap_cases_have_about_the_size_and_are_well_formed() {
        for case in Case::ALL {
            for place in [Place::Header, Place::Payload] {
                for size in [10_240, 100_000] {
                    let s = soap(case, place, size, None);
                    assert!(
                        s.len() <= size + 64 && s.len() + 1024 > size,
                        "{case:?} {place:?} {size}: {} bytes",
                        s.len()
                    );
                    if case == Case::DeepBeyond {
                        continue; // deeper than libxml2 takes, on purpose
                    }
                    // More attributes on one element than Sluice's libxml2 layer takes, on purpose.
                    if !matches!(case, Case::Attributes | Case::Namespaces) {
                        sluice_xml::Document::parse(s.as_bytes())
                            .unwrap_or_else(|e| panic!("{case:?} {place:?} {size}: {e}"));
                    }
                    // roxmltree (the config reader's) also checks every prefix is declared; the
                    // config reader's guard refuses the many attributes on purpose.
                    let (_, d) = sluice_config::load_str("t.xml", &config(&s));
                    let refused = d
                        .items
                        .iter()
                        .all(|i| i.message.contains("refused before reading"));
                    assert!(
                        !d.has_errors()
                            || (matches!(case, Case::Attributes | Case::Namespaces) && refused),
                        "{case:?} {place:?} {size}: {:?}",
                        d.items
                    );
                }
            }
        }
        let deep = soap(Case::DeepBeyond, Place::Payload, 10_240, None);
        assert!(deep.matches("<d>").count() > 256);
    }

    #[test]
    fn json_cases_parse_except_the_too_deep() {
        for case in Case::ALL {
            let Some(j) = json(case, 20_000) else {
                continue;
            };
            assert!(
                j.len() <= 20_100 && j.len() > 15_000,
                "{case:?}: {}",
                j.len()
            );
            let parsed = serde_json::from_str::<serde_json::Value>(&j);
            // serde_json refuses nesting deeper than 128.
            assert_eq!(
                parsed.is_ok(),
                !matches!(case, Case::Deep200 | Case::DeepBeyond),
                "{case:?}"
            );
        }
    }

    #[test]
    fn heads_have_the_size_and_end_with_a_blank_line() {
        for case in [
            Case::Normal,
            Case::Attributes,
            Case::LongName,
            Case::HugeText,
        ] {
            let h = response_head(case, 10_240).unwrap();
            assert!(
                h.len() <= 10_240 && h.len() > 10_000,
                "{case:?}: {}",
                h.len()
            );
            assert!(h.ends_with("\r\n\r\n"));
        }
        let normal = response_head(Case::Normal, 10_240).unwrap();
        assert!(normal.matches("\r\n").count() < 128);
        assert!(response_head(Case::Namespaces, 10_240).is_none());
    }

    #[test]
    fn a_config_wraps_the_message() {
        let c = config("<a/>\n");
        assert!(c.starts_with("<localEntry key=\"adversarial\""));
        assert!(c.contains("><a/></localEntry>"));
    }
}
