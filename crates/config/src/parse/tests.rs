//! The parser as a whole: shared pieces, positions, and what spans the families.

use super::*;

pub(super) fn parse(text: &str) -> (Config, Diagnostics) {
    let mut cfg = Config::default();
    let mut d = Diagnostics::default();
    parse_text("t.xml".into(), text, Expect::Any, &mut cfg, &mut d);
    (cfg, d)
}

pub(super) const NS: &str = r#"xmlns="http://ws.apache.org/ns/synapse""#;

/// The first mediator `pick` takes in a sequence holding `xml`, and the diagnostics, as text.
pub(super) fn mediator_of<T>(
    xml: &str,
    pick: impl Fn(&MediatorKind) -> Option<T>,
) -> (Option<T>, Vec<String>) {
    let (cfg, diags) = parse(&format!(r#"<sequence {NS} name="s">{xml}</sequence>"#));
    let found = cfg
        .sequences
        .first()
        .and_then(|s| s.sequence.mediators.iter().find_map(|m| pick(&m.kind)));
    (found, diags.items.iter().map(|d| d.to_string()).collect())
}

#[test]
fn start_tag_declarations() {
    assert_eq!(
        declared_in_start_tag(
            r#"<m:a xmlns:m="urn:m" b='x xmlns:q="1"' xmlns = "d"><c xmlns:z="z"/></m:a>"#
        ),
        ["m", ""]
    );
    assert!(declared_in_start_tag("<a>").is_empty());
    // Inline XML redeclaring what an ancestor declares keeps one declaration.
    let (cfg, d) = parse(&format!(
        r#"<sequence name="S" {NS} xmlns:m="urn:m"><enrich><source type="inline"><m:q xmlns:m="urn:m"><m:r/></m:q></source><target type="body"/></enrich></sequence>"#
    ));
    assert!(d.items.is_empty(), "{:?}", d.items);
    let MediatorKind::Enrich(e) = &cfg.sequences[0].sequence.mediators[0].kind else {
        panic!()
    };
    let EnrichSourceKind::InlineXml(x) = &e.source.kind else {
        panic!()
    };
    assert_eq!(x, r#"<m:q xmlns:m="urn:m"><m:r/></m:q>"#);
}

#[test]
fn every_problem_is_reported_with_its_position() {
    let (cfg, d) = parse(&format!(
        r#"<definitions {NS}>
  <proxy name="A"><target><inSequence><event/><bogus/></inSequence></target></proxy>
  <endpoint name="E"><address uri="http://h/x"><timeout><duration>soon</duration></timeout></address></endpoint>
  <sequence name="S"><property name="p" type="NUMBER" value="1"/></sequence>
</definitions>"#
    ));
    let msgs: Vec<String> = d.items.iter().map(|x| x.to_string()).collect();
    for start in [
        "t.xml:2:39: unsupported: <event>",
        "t.xml:2:47: error: <bogus>: unknown mediator",
    ] {
        assert!(msgs.iter().any(|m| m.starts_with(start)), "{msgs:#?}");
    }
    for part in [
        "expected a number, found 'soon'",
        "unknown property type 'NUMBER'",
    ] {
        assert!(msgs.iter().any(|m| m.contains(part)), "{msgs:#?}");
    }
    assert!(
        cfg.proxies[0].rejected,
        "a proxy with a rejected mediator must not deploy"
    );
    assert!(cfg.sequences[0].rejected);
}

#[test]
fn malformed_xml_and_foreign_roots() {
    let (_, d) = parse("<proxy name='x'>\n<target></proxy>");
    assert_eq!(d.items[0].severity, Severity::Error);
    assert_eq!(d.items[0].location.line, 2);
    let (cfg, d) =
        parse("<xsl:stylesheet xmlns:xsl='http://www.w3.org/1999/XSL/Transform' version='1.0'/>");
    assert_eq!(d.items[0].severity, Severity::Note);
    assert!(cfg.proxies.is_empty());
}

#[test]
fn inline_xml_keeps_only_the_namespaces_it_uses() {
    let (cfg, d) = parse(&format!(
        r#"<localEntry key="k" {NS} xmlns:unused="urn:u" xmlns:m="urn:m" xmlns:x="urn:x"><xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0"><xsl:template match="x:a"><m:b/></xsl:template></xsl:stylesheet></localEntry>"#
    ));
    assert!(d.items.is_empty());
    let LocalEntryValue::Xml { text, root } = &cfg.local_entries[0].value else {
        panic!()
    };
    assert_eq!(root, "stylesheet");
    assert!(
        text.contains(r#"xmlns:m="urn:m""#),
        "used by an element: {text}"
    );
    assert!(
        text.contains(r#"xmlns:x="urn:x""#),
        "used inside an attribute value: {text}"
    );
    assert!(
        !text.contains("urn:u") && !text.contains("ws.apache.org"),
        "unused ones dropped: {text}"
    );
}

/// Deterministic mutation fuzzing of the parser over the real WSO2 artifacts: byte flips, deletions
/// and truncations must give diagnostics, never a panic.
#[test]
fn mutated_artifacts_never_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/wso2-perf/performance-ei/capp");
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for d in std::fs::read_dir(&dir)
        .expect("reference artifacts")
        .filter_map(Result::ok)
    {
        for f in std::fs::read_dir(d.path())
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            if f.path().extension().is_some_and(|e| e == "xml") {
                seeds.push(std::fs::read(f.path()).unwrap());
            }
        }
    }
    assert!(seeds.len() > 20);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let specials = b"<>/=\"'&:;![]? \n";
    for i in 0..3000 {
        let mut b = seeds[i % seeds.len()].clone();
        for _ in 0..(1 + next() % 4) {
            if b.is_empty() {
                break;
            }
            let at = (next() as usize) % b.len();
            match next() % 3 {
                0 => b[at] = specials[(next() as usize) % specials.len()],
                1 => {
                    b.remove(at);
                }
                _ => b.truncate(at),
            }
        }
        let text = String::from_utf8_lossy(&b);
        let _ = parse(&text);
    }
}

/// Children Synapse's factories pass over are ignored with a warning (a `<description>` silently),
/// not refused; ones Synapse or MI act on are unsupported.
#[test]
fn children_synapse_ignores_are_warnings_and_ones_it_acts_on_unsupported() {
    let (cfg, d) = parse(&format!(
        r#"<definitions {NS}>
  <description>the configuration</description>
  <proxy name="P"><description/><parameter name="x">1</parameter>
    <target><description/><outSequenc/><inSequence><log><description/></log></inSequence></target></proxy>
  <endpoint name="E"><description/><foo/><address uri="http://h/x"><description/>
    <timeout><duration>5</duration><action>fault</action></timeout></address></endpoint>
  <endpoint name="F"><failover><description/><bar/><endpoint key="E"/></failover></endpoint>
  <api name="A" context="/a"><resource><respond/><inSequence><validate><property name="f" value="true"/><schema key="s"/><on-fail><drop/></on-fail></validate><filter xpath="//a"><then/><drop/></filter><call-template target="T"><x/></call-template></inSequence></resource></api>
  <endpoint name="D"><dynamicLoadbalance/></endpoint>
  <endpoint name="K" key-expression="//k"/>
  <endpoint name="H"><http uri-template="http://h/x"><authentication/></http></endpoint>
  <sequence name="S"><eventPublisher eventSourceName="x"/></sequence>
  <sequence name="C"><clone><log/><target><log/><sequence><drop/></sequence></target></clone></sequence>
  <sequence name="L"><xquery key="x"/></sequence>
  <taskManager provider="p"/>
</definitions>"#
    ));
    let got: Vec<(&str, Severity)> = d
        .items
        .iter()
        .map(|x| (x.element.as_str(), x.severity))
        .collect();
    use Severity::{Unsupported as U, Warning as W};
    assert_eq!(
        got,
        [
            ("outSequenc", W),
            ("foo", W),
            ("action", W),
            ("bar", W),
            ("respond", W),
            ("property", W),
            ("drop", W),
            ("x", W),
            ("dynamicLoadbalance", U),
            ("authentication", U),
            ("eventPublisher", U),
            ("log", W),
            ("log", W),
            ("xquery", U),
            ("taskManager", U),
        ],
        "{:#?}",
        d.items
    );
    assert!(!cfg.proxies[0].rejected && !cfg.apis[0].rejected);
    assert_eq!(cfg.endpoints.len(), 5);
    assert!(matches!(cfg.endpoints[0].kind, EndpointKind::Address(_)));
    assert!(matches!(
        cfg.endpoints[1].kind,
        EndpointKind::Failover { .. }
    ));
}

#[test]
fn text_past_the_guard_is_refused_at_its_place() {
    let attrs: String = (0..200).map(|k| format!(" a{k}=\"1\"")).collect();
    let (cfg, d) = parse(&format!(
        "<definitions {NS}>\n<sequence name=\"S\">\n  <log{attrs}/>\n</sequence>\n</definitions>"
    ));
    assert!(cfg.sequences.is_empty());
    let e = &d.items[0];
    assert_eq!(
        (e.severity, e.location.line, e.location.col),
        (Severity::Error, 3, 3)
    );
    assert!(
        e.message.contains(
            "an element with 200 attributes (namespace declarations included); the limit is 128"
        ),
        "{}",
        e.message
    );
}
