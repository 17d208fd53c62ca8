//! The keys a configuration names: artifacts defined later, local entries, registry and file
//! values read at load, and what Synapse would look up elsewhere.
use crate::exec::run;
use crate::message::Message;
use crate::{ErrorKind, Plan};
use sluice_config::{Diagnostics, Severity};

fn compiled(body: &str) -> (Plan, Diagnostics) {
    let text =
        format!(r#"<definitions xmlns="http://ws.apache.org/ns/synapse">{body}</definitions>"#);
    let (cfg, mut diags) = sluice_config::load_str("t.xml", &text);
    let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
    (plan, diags)
}

/// A POST to proxy P.
fn request() -> Message {
    Message::request(
        "P".into(),
        http::Method::POST,
        "/".into(),
        Default::default(),
    )
}

fn severities(d: &Diagnostics) -> Vec<Severity> {
    d.items.iter().map(|x| x.severity).collect()
}

#[test]
fn keys_name_artifacts_defined_later_and_local_entries_holding_them() {
    let (plan, d) = compiled(
        r#"<proxy name="P"><target endpoint="E"><inSequence><sequence key="S"/><sequence key="LS"/></inSequence></target></proxy>
<sequence name="S"><property name="s" value="1"/></sequence>
<localEntry key="LS"><sequence name="ignored"><property name="ls" value="1"/></sequence></localEntry>
<localEntry key="E"><endpoint><address uri="http://127.0.0.1:9/e"/></endpoint></localEntry>"#,
    );
    assert!(d.items.is_empty(), "{d:?}");
    let p = &plan.proxies["P"];
    assert_eq!(p.target.as_ref().unwrap().uri, "http://127.0.0.1:9/e");
    let mut msg = request();
    run(&p.in_seq.steps, &mut msg).unwrap();
    assert_eq!(
        (msg.props.get("s"), msg.props.get("ls")),
        (Some("1"), Some("1"))
    );
}

#[test]
fn keys_naming_nothing_fail_the_message_that_reaches_them() {
    let (plan, d) = compiled(
        r#"<proxy name="P"><target faultSequence="nope"><inSequence><sequence key="nothing"/></inSequence></target></proxy>
<proxy name="Q"><target endpoint="bogus"/></proxy>
<proxy name="T"><target><inSequence><call-template target="none"/></inSequence></target></proxy>"#,
    );
    assert_eq!(severities(&d), [Severity::Warning; 4], "{d:?}");
    // No fault sequence "nope": the default (none here) handles errors.
    assert!(plan.proxies["P"].fault_seq.is_none());
    let mut msg = request();
    let e = run(&plan.proxies["P"].in_seq.steps, &mut msg).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Mediation);
    assert!(
        e.context.contains("Sequence named nothing cannot be found"),
        "{e}"
    );
    let e = run(&plan.proxies["T"].in_seq.steps, &mut msg).unwrap_err();
    assert!(
        e.context.contains("Sequence template none cannot be found"),
        "{e}"
    );
    let bogus = plan.proxies["Q"].target.clone().unwrap();
    let e = bogus.for_message(&msg).unwrap_err();
    assert_eq!(
        (e.kind, e.kind.synapse_code()),
        (ErrorKind::EndpointNotFound, 305100)
    );
    assert_eq!(e.context, "Couldn't find the endpoint with the key : bogus");
}

/// As in Synapse and MI, which look the key up per message: `get-property('registry', KEY)`
/// for a key nothing holds is '' (a warning at load), not a configuration error.
#[test]
fn a_registry_key_nothing_holds_reads_as_empty() {
    let (plan, d) = compiled(
        r#"<proxy name="P"><target><inSequence><property name="v" expression="concat('[', get-property('registry', 'gov:/none.xml'), ']')"/></inSequence></target></proxy>"#,
    );
    assert_eq!(severities(&d), [Severity::Warning], "{d:?}");
    let mut msg = request();
    run(&plan.proxies["P"].in_seq.steps, &mut msg).unwrap();
    assert_eq!(msg.props.get("v"), Some("[]"));
}

/// MI's `get-property('file', KEY)` reads HOME/conf/file.properties: at load here. A key the
/// file does not hold is '' with a warning (as MI); no file refuses the artifact (MI fails
/// every message then).
#[test]
fn file_properties_are_read_at_load() {
    let text = r#"<definitions xmlns="http://ws.apache.org/ns/synapse"><proxy name="P"><target><inSequence><property name="v" expression="concat(get-property('file', 'testKey'), '|', get-property('file', 'none'))"/></inSequence></target></proxy></definitions>"#;
    let (mut cfg, mut d) = sluice_config::load_str("t.xml", text);
    cfg.file_properties = Some(Ok(sluice_config::load::java_properties(
        "# a comment\ntestKey = a value\n",
    )));
    let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut d);
    assert_eq!(severities(&d), [Severity::Warning], "{d:?}");
    assert!(d.items[0].message.contains("has no 'none'"), "{d:?}");
    let mut msg = request();
    run(&plan.proxies["P"].in_seq.steps, &mut msg).unwrap();
    assert_eq!(msg.props.get("v"), Some("a value|"));
    let (plan, d) = compiled(
        r#"<proxy name="P"><target><inSequence><log><property name="v" expression="get-property('file', 'testKey')"/></log></inSequence></target></proxy>"#,
    );
    assert_eq!(severities(&d), [Severity::Error], "{d:?}");
    assert!(d.items[0].message.contains("file.properties"), "{d:?}");
    assert!(plan.proxies.is_empty());
}

#[test]
fn keys_synapse_would_look_up_elsewhere_are_unsupported() {
    let (plan, d) = compiled(
        r#"<proxy name="D"><target><inSequence><sequence key="{//k}"/></inSequence></target></proxy>
<proxy name="U"><target endpoint="remote"/></proxy>
<localEntry key="remote" src="file:repository/conf/sample/resources/endpoint/dynamic_endpt_1.xml"/>
<localEntry key="text">plain</localEntry>
<proxy name="X"><target><inSequence><sequence key="text"/></inSequence></target></proxy>"#,
    );
    // A `{...}` key is an expression naming the sequence per message: D deploys.
    assert_eq!(
        severities(&d),
        [Severity::Unsupported, Severity::Error],
        "{d:?}"
    );
    assert_eq!(plan.proxies.keys().collect::<Vec<_>>(), ["D"]);
    // With a <registry>, a key naming nothing here may name something there.
    let (plan, d) = compiled(
        r#"<registry provider="org.apache.synapse.registry.url.SimpleURLRegistry"/>
<proxy name="R"><target><inSequence><sequence key="sequence/dynamic_seq_1.xml"/></inSequence></target></proxy>"#,
    );
    assert_eq!(severities(&d), [Severity::Unsupported; 2], "{d:?}");
    assert!(
        d.items[1].message.contains("<registry> at t.xml:1:"),
        "{d:?}"
    );
    assert!(plan.proxies.is_empty());
}

/// Stylesheets and other keyed text: a local entry's URL or a `<registry>` Synapse would read
/// is unsupported; a key naming nothing at all stays an error.
#[test]
fn keyed_text_synapse_would_fetch_is_unsupported() {
    let (_, d) = compiled(
        r#"<localEntry key="x" src="file:repository/conf/sample/resources/transform/t.xslt"/>
<proxy name="P"><target><inSequence><xslt key="x"/><xslt key="nothing"/></inSequence></target></proxy>"#,
    );
    assert_eq!(
        severities(&d),
        [Severity::Unsupported, Severity::Error],
        "{d:?}"
    );
    let (_, d) = compiled(
        r#"<registry provider="org.apache.synapse.registry.url.SimpleURLRegistry"/>
<proxy name="P"><target><inSequence><xslt key="t.xslt"/><validate><schema key="s.xsd"/><on-fail><drop/></on-fail></validate></inSequence></target></proxy>"#,
    );
    assert_eq!(severities(&d), [Severity::Unsupported; 3], "{d:?}");
}
