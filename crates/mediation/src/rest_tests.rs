use super::*;
use http::{HeaderValue, Method, StatusCode};

const ENV: &str = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><m:a xmlns:m=\"urn:m\">1</m:a></soapenv:Body></soapenv:Envelope>";

fn request(ct: &str, soap_action: Option<&str>, body: &str) -> Message {
    let mut h = HeaderMap::new();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_str(ct).unwrap(),
    );
    if let Some(a) = soap_action {
        h.insert("soapaction", HeaderValue::from_str(a).unwrap());
    }
    let mut m = Message::request("P".into(), Method::POST, "/services/P".into(), h);
    m.body = Body::Bytes(Bytes::copy_from_slice(body.as_bytes()));
    m
}

fn text(m: &Message) -> String {
    match &m.body {
        Body::Bytes(b) => String::from_utf8(b.to_vec()).unwrap(),
        Body::Empty => String::new(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_text_xml_without_a_soapaction_header_is_rest() {
    let rest = |ct: &str, a: Option<&str>| request(ct, a, "<a/>").rest.is_rest();
    assert!(rest("text/xml", None));
    assert!(rest("text/xml; charset=UTF-8", None));
    // Present, even empty, is a SOAPAction (Axis2 tests for null).
    assert!(!rest("text/xml", Some("")));
    assert!(!rest("text/xml", Some("\"\"")));
    assert!(!rest("text/xml", Some("urn:x")));
    assert!(!rest("application/soap+xml", None));
    assert!(!rest("application/xml", None));
    assert!(!rest("application/json", None));
}

#[test]
fn a_held_request_is_the_document_in_a_soap_body_and_leaves_as_the_bytes_received() {
    let body = format!("<?xml version='1.0' encoding='UTF-8'?>{ENV}");
    let mut m = request("text/xml", None, &body);
    enter(&mut m);
    assert!(m.rest.is_held());
    assert_eq!(
        text(&m),
        format!("<?xml version='1.0' encoding='UTF-8'?>{OPEN}{ENV}{CLOSE}")
    );
    // What XPath sees: the wrapper's Body holds the whole envelope received.
    let doc = sluice_xml::parse_untrusted(text(&m).as_bytes(), &Default::default()).unwrap();
    let first = doc.soap_body_first_child().unwrap();
    assert_eq!(first.name(), "Envelope");
    // A second run finds it held: not wrapped twice.
    enter(&mut m);
    assert_eq!(text(&m).matches("Envelope xmlns").count(), 2);
    outgoing(&mut m, false);
    assert_eq!(text(&m), body);
    assert!(!m.rest.is_held());
    // Held again by a later run (a fault sequence after the send failed).
    enter(&mut m);
    assert!(m.rest.is_held());
}

#[test]
fn a_byte_order_mark_and_declaration_stay_first() {
    assert_eq!(prolog_end(b"<a/>"), 0);
    assert_eq!(prolog_end(b"\xEF\xBB\xBF<a/>"), 3);
    assert_eq!(prolog_end(b"<?xml version=\"1.0\"?><a/>"), 21);
    assert_eq!(prolog_end(b"\xEF\xBB\xBF<?xml version=\"1.0\"?><a/>"), 24);
    // A processing instruction named otherwise is content.
    assert_eq!(prolog_end(b"<?xml-stylesheet href=\"x\"?><a/>"), 0);
    let decl = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>";
    let w = wrap(format!("{decl}<a/>").as_bytes());
    assert_eq!(w, format!("{decl}{OPEN}<a/>{CLOSE}").as_bytes());
}

#[test]
fn a_changed_held_request_leaves_as_its_first_body_element() {
    let mut m = request("text/xml", None, ENV);
    enter(&mut m);
    // As payloadFactory leaves it: the wrapper's Body holds the new payload.
    m.body = Body::Bytes(Bytes::from(format!(
        "{OPEN}<r:x xmlns:r=\"urn:r\"><soapenv:y/></r:x><after/>{CLOSE}"
    )));
    outgoing(&mut m, false);
    // Alone, declaring the namespaces it uses; what follows it stays behind.
    assert_eq!(
        text(&m),
        "<r:x xmlns:r=\"urn:r\" xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:y/></r:x>"
    );
    // An empty Body: no body.
    let mut m = request("text/xml", None, ENV);
    enter(&mut m);
    m.body = Body::Bytes(Bytes::from(format!("{OPEN}{CLOSE}")));
    outgoing(&mut m, true);
    assert!(matches!(m.body, Body::Empty));
}

#[test]
fn text_xml_that_is_no_envelope_is_read_as_plain_xml() {
    let mut m = request("text/xml", None, "<a>1</a>");
    enter(&mut m);
    let doc = sluice_xml::parse_untrusted(text(&m).as_bytes(), &Default::default()).unwrap();
    assert_eq!(doc.soap_body_first_child().unwrap().name(), "a");
    outgoing(&mut m, true);
    assert_eq!(text(&m), "<a>1</a>");
}

#[test]
fn soap_requests_and_unread_ones_are_left_alone() {
    for (ct, a) in [
        ("text/xml", Some("urn:x")),
        ("application/soap+xml", None),
        ("application/xml", None),
    ] {
        let mut m = request(ct, a, ENV);
        enter(&mut m);
        outgoing(&mut m, true);
        assert_eq!(text(&m), ENV, "{ct} {a:?}");
    }
    let mut m = request("text/xml", None, ENV);
    m.body = Body::Stream;
    enter(&mut m);
    assert!(!m.rest.is_held());
    outgoing(&mut m, true);
    assert!(matches!(m.body, Body::Stream));
}

#[test]
fn a_built_response_to_a_rest_request_leaves_as_its_payload() {
    let m = request("text/xml", None, ENV);
    let mut r = m.into_response(StatusCode::OK, HeaderMap::new());
    r.body = Body::Bytes(Bytes::from_static(ENV.as_bytes()));
    // Relayed unread: as it came.
    outgoing(&mut r.clone(), true);
    let mut unread = r.clone();
    outgoing(&mut unread, true);
    assert_eq!(text(&unread), ENV);
    // Read by the out-sequence: the payload, not wrapped.
    enter(&mut r);
    assert_eq!(text(&r), ENV);
    outgoing(&mut r, true);
    assert_eq!(text(&r), "<m:a xmlns:m=\"urn:m\">1</m:a>");
    // A response that is no envelope stays as it is.
    let mut r = request("text/xml", None, ENV).into_response(StatusCode::OK, HeaderMap::new());
    r.body = Body::Bytes(Bytes::from_static(b"<pox/>"));
    enter(&mut r);
    outgoing(&mut r, true);
    assert_eq!(text(&r), "<pox/>");
    // The response to a SOAP request is never REST.
    let mut r =
        request("text/xml", Some("urn:x"), ENV).into_response(StatusCode::OK, HeaderMap::new());
    r.body = Body::Bytes(Bytes::from_static(ENV.as_bytes()));
    enter(&mut r);
    outgoing(&mut r, true);
    assert_eq!(text(&r), ENV);
}

fn fault11(inner: &str) -> String {
    format!("<soapenv:Envelope xmlns:soapenv=\"{SOAP11_ENV}\"><soapenv:Body><soapenv:Fault><faultcode>soapenv:Client</faultcode>{inner}</soapenv:Fault></soapenv:Body></soapenv:Envelope>")
}

fn answered(fault: &str, to_client: bool) -> String {
    let mut m = request("text/xml", None, ENV);
    enter(&mut m);
    m.body = Body::Bytes(Bytes::from(fault.to_owned()));
    m.is_fault = true;
    outgoing(&mut m, to_client);
    text(&m)
}

#[test]
fn a_soap_fault_answered_to_a_rest_client_is_an_exception() {
    assert_eq!(
        answered(&fault11("<faultstring>no &lt;IBM&gt;</faultstring>"), true),
        "<Exception>no &lt;IBM&gt;</Exception>"
    );
    // The detail's own text wins; as XML when it is an element, else as text.
    assert_eq!(
        answered(
            &fault11("<faultstring>r</faultstring><detail>d &amp; e</detail>"),
            true
        ),
        "<Exception>d &amp; e</Exception>"
    );
    assert_eq!(
        answered(
            &fault11("<faultstring>r</faultstring><detail>&lt;x a=\"1\"&gt;t&lt;/x&gt;</detail>"),
            true
        ),
        "<Exception><x a=\"1\">t</x></Exception>"
    );
    // Elements in the detail are not its text: the reason then.
    assert_eq!(
        answered(
            &fault11("<faultstring>r</faultstring><detail><x/></detail>"),
            true
        ),
        "<Exception>r</Exception>"
    );
    assert_eq!(answered(&fault11(""), true), "<Exception/>");
    let f12 = format!("<e:Envelope xmlns:e=\"{SOAP12_ENV}\"><e:Body><e:Fault><e:Code><e:Value>e:Sender</e:Value></e:Code><e:Reason><e:Text xml:lang=\"en\">why</e:Text></e:Reason></e:Fault></e:Body></e:Envelope>");
    assert_eq!(answered(&f12, true), "<Exception>why</Exception>");
    // Sent to a back-end, a fault is a payload like any other.
    assert_eq!(
        answered(&fault11("<faultstring>r</faultstring>"), false),
        "<soapenv:Fault xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><faultcode>soapenv:Client</faultcode><faultstring>r</faultstring></soapenv:Fault>"
    );
    // A fault made on a request nothing read is converted too.
    let mut m = request("text/xml", None, ENV);
    m.body = Body::Bytes(Bytes::from(fault11("<faultstring>r</faultstring>")));
    m.is_fault = true;
    outgoing(&mut m, true);
    assert_eq!(text(&m), "<Exception>r</Exception>");
}

#[test]
fn json_made_from_the_message_goes_out_instead() {
    let mut m = request("text/xml", None, ENV);
    enter(&mut m);
    m.body = Body::Bytes(Bytes::from(format!("{OPEN}<x/>{CLOSE}")));
    m.json_out = Some((
        Bytes::from_static(b"{}"),
        HeaderValue::from_static("application/json"),
    ));
    outgoing(&mut m, true);
    assert_eq!(text(&m), format!("{OPEN}<x/>{CLOSE}"));
}

#[test]
fn a_body_made_in_place_of_one_nothing_read_is_built_too() {
    // payloadFactory with literal arguments: the body received was never read.
    let mut m = request("text/xml", None, ENV);
    m.body = Body::Stream;
    enter(&mut m);
    m.body = Body::Bytes(Bytes::from(format!(
        "{OPEN}<r:x xmlns:r=\"urn:r\"/>{CLOSE}"
    )));
    leave_run(&mut m);
    assert!(m.rest.is_held());
    outgoing(&mut m, true);
    assert_eq!(text(&m), "<r:x xmlns:r=\"urn:r\"/>");
    // A body read by the transport for another reason (a failover's retries) and not run
    // through a sequence is not built: it leaves as it came.
    let mut m = request("text/xml", None, ENV);
    outgoing(&mut m, false);
    assert_eq!(text(&m), ENV);
    // The same on the response path.
    let mut r = request("text/xml", None, ENV).into_response(StatusCode::OK, HeaderMap::new());
    enter(&mut r);
    r.body = Body::Bytes(Bytes::from_static(ENV.as_bytes()));
    leave_run(&mut r);
    outgoing(&mut r, true);
    assert_eq!(text(&r), "<m:a xmlns:m=\"urn:m\">1</m:a>");
}
