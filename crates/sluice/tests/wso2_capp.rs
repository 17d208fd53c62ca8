//! The WSO2 performance-test Carbon Application, loaded unchanged, against a real back-end.

mod common;
use common::setup::*;
use common::*;
use std::time::Duration;

/// Posts `body` to `path`: the answer must be a 500 SOAP fault whose faultstring is `reason`.
async fn expect_fault(c: &mut Conn, path: &str, body: bytes::Bytes, reason: &str) {
    let f = c.soap(path, body).await;
    assert_eq!(f.status, 500);
    let want = format!("<faultstring>{reason}</faultstring>");
    assert!(f.text().contains(&want), "{}", f.text());
}

/// The routing header the CBR proxies look for, with the value they route on.
const ROUTED: &[(&str, &str)] = &[
    SOAP_HEADERS[0],
    SOAP_HEADERS[1],
    ("routing", "xadmin;server1;community#1.0##"),
];

/// Sluice on the 2018 CAR, its RealService at `backend`.
fn on_car_of_2018(backend: std::net::SocketAddr) -> Sluice {
    start_on_capp(
        &reference().join("performance-ei/capp-2018-01-car"),
        backend,
        &[],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_proxy_relays_payloads_and_headers_unchanged() {
    let (be, _s, mut c) = on_capp().await;
    for name in ["1000B_buyStocks.xml", "10000B_buyStocks.xml"] {
        let body = payload(name);
        let r = c
            .posted("/services/DirectProxy", ROUTED, body.clone())
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.body, body, "{name} must come back byte-identical");
        assert_eq!(r.header("content-type"), "text/xml; charset=UTF-8");
    }
    // The 2019 payloads of exactly 1 KiB and 10 KiB too.
    for name in ["1024B_buyStocks.xml", "10240B_buyStocks.xml"] {
        let body = request_file(&format!("2019-04_to_2020-08/{name}"));
        let r = c.soap("/services/DirectProxy", body.clone()).await;
        assert_eq!(r.body, body);
    }
    let seen = be.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    let first = &seen[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/service/EchoService");
    assert_eq!(first.headers["soapaction"], "urn:buyStocks");
    assert_eq!(first.headers["routing"], "xadmin;server1;community#1.0##");
    assert_eq!(first.headers["content-type"], "text/xml; charset=UTF-8");
    assert_eq!(first.headers["host"], be.addr.to_string().as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cbr_transport_header_proxy_routes_or_faults() {
    let (be, _s, mut c) = on_capp().await;
    let body = payload("1000B_buyStocks.xml");
    let ok = c
        .posted("/services/CBRTransportHeaderProxy", ROUTED, body.clone())
        .await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body, body);
    // Without the header: the SOAP 1.1 fault, on the same keep-alive connection.
    let bad = c
        .soap("/services/CBRTransportHeaderProxy", body.clone())
        .await;
    assert_eq!(bad.status, 500);
    assert!(
        bad.header("content-type").starts_with("text/xml"),
        "{:?}",
        bad.headers
    );
    let t = bad.text();
    assert!(
        t.contains("<faultstring>Invalid routing header</faultstring>"),
        "{t}"
    );
    // The code as the CAR writes it, its prefix kept and declared (as Synapse and MI answer).
    assert!(
        t.contains(
            "<faultcode xmlns:soap11Env=\"http://schemas.xmlsoap.org/soap/envelope/\">soap11Env:Server</faultcode>"
        ),
        "{t}"
    );
    assert!(
        t.contains("http://schemas.xmlsoap.org/soap/envelope/"),
        "{t}"
    );
    // A wrong value is refused too (full match, not substring).
    let partial = c
        .posted(
            "/services/CBRTransportHeaderProxy",
            &[
                SOAP_HEADERS[0],
                ("routing", "xadmin;server1;community#1.0##extra"),
            ],
            body.clone(),
        )
        .await;
    assert_eq!(partial.status, 500);
    assert_eq!(
        be.seen.lock().unwrap().len(),
        1,
        "only the matching request reaches the back-end"
    );
    // And the connection still works after a fault.
    let again = c.soap("/services/DirectProxy", body.clone()).await;
    assert_eq!(again.body, body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_proxies_are_reported_and_the_rest_serve() {
    let (_be, s, mut c) = on_capp().await;
    let list = c.get("/services/").await.unwrap();
    let t = list.text();
    assert!(
        t.contains("DirectProxy") && t.contains("CBRTransportHeaderProxy"),
        "{t}"
    );
    assert!(
        t.contains("Not deployed: SecureProxy"),
        "SecureProxy (no key store given) must be listed as not deployed:\n{t}"
    );
    let err = s.stderr_with("SecureProxy-1.0.0.xml:", Duration::from_secs(10));
    assert!(
        err.contains("SecureProxy-1.0.0.xml:"),
        "diagnostics name the file: {err}"
    );
    assert!(err.contains("unsupported"), "{err}");
    // An undeployed proxy answers 404 naming what is deployed.
    let r = c
        .soap("/services/SecureProxy", payload("1000B_buyStocks.xml"))
        .await;
    assert_eq!(r.status, 404);
    assert!(r.text().contains("DirectProxy"), "{}", r.text());
}

/// DatamapperProxy: the mapping's XSLT form on the whole envelope (every symbol becomes XYZ),
/// then, as MI's `messageType` application/xml, the Body's first element to the back-end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datamapper_proxy_maps_through_its_stylesheet() {
    let (be, _s, mut c) = on_capp().await;
    let r = c
        .soap("/services/DatamapperProxy", payload("1000B_buyStocks.xml"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let sent = String::from_utf8_lossy(&be.last_body()).into_owned();
    assert!(sent.starts_with("<m:buyStocks"), "{sent}");
    assert!(
        !sent.contains("MSFT") && sent.contains("<symbol>XYZ</symbol>"),
        "{sent}"
    );
    assert!(
        sent.contains("<buyerID>indika</buyerID><price>14.56</price>"),
        "{sent}"
    );
    let seen = be.seen.lock().unwrap().last().unwrap().headers.clone();
    assert!(seen["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/xml"));
}

/// The artifacts that use `call` and `respond`, and WSO2's DirectAPI: each round trip's answer, and
/// what reached the back-end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_proxies_and_the_direct_api_run_unchanged() {
    let (be, _s, mut c) = on_capp().await;
    let body = payload("1000B_buyStocks.xml");
    // DirectAPI: call then respond, the body streamed both ways.
    let r = c.soap("/directApi", body.clone()).await.assert_status(200);
    assert_eq!(r.body, body);
    let seen = be.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        seen.path, "/service/EchoService",
        "no postfix for the context itself"
    );
    assert_eq!(seen.body.as_deref(), Some(&body[..]));
    // GET is not one of its methods.
    let r = c.get("/directApi").await.unwrap();
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), "POST");
    // EnrichBackAndForthProxy: the back-end gets <hello>world</hello>; the client gets its own
    // request back, restored from the property after the call.
    let r = c
        .soap("/services/EnrichBackAndForthProxy", body.clone())
        .await
        .assert_status(200);
    let seen = be.seen.lock().unwrap().last().cloned().unwrap();
    let sent = String::from_utf8_lossy(seen.body.as_deref().unwrap()).into_owned();
    assert!(sent.contains("<hello xmlns=\"\">world</hello>"), "{sent}");
    assert!(!sent.contains("buyStocks"), "{sent}");
    let back = r.text();
    assert!(
        back.contains("<m:buyStocks") && back.contains("<symbol>SUN</symbol>"),
        "{back}"
    );
    assert!(!back.contains("hello"), "{back}");
    // XSLTTransformProxy: the back-end gets the transformed request, the client the echo of it.
    let r = c
        .soap("/services/XSLTTransformProxy", body.clone())
        .await
        .assert_status(200);
    let seen = be.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(seen.body.as_deref(), Some(&r.body[..]));
    assert_ne!(r.body, body, "the stylesheet changed the request");
    // MessageBuildingProxy: a payload built from the body goes out, and its echo comes back.
    let r = c
        .soap("/services/MessageBuildingProxy", body.clone())
        .await
        .assert_status(200);
    assert!(r.text().contains("<payload"), "{}", r.text());
    // JsonToSOAPProxy: WSO2's JSON payload goes out as XML in a SOAP 1.2 envelope, as
    // application/xml with the Action it sets, and the echo comes back.
    let json = payload("1000B_JSONPayload.json");
    let r = c
        .posted(
            "/services/JsonToSOAPProxy",
            &[("content-type", "application/json")],
            json,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = be.seen.lock().unwrap().last().cloned().unwrap();
    let sent = String::from_utf8_lossy(seen.body.as_deref().unwrap()).into_owned();
    assert!(
        sent.contains("<payload><symbol>json</symbol><symbol>json</symbol>")
            && sent.contains("</payload>\n                        </soapenv:Body>"),
        "{sent}"
    );
    assert!(
        sent.contains("http://www.w3.org/2003/05/soap-envelope"),
        "{sent}"
    );
    assert_eq!(
        seen.headers["content-type"],
        "application/xml; charset=UTF-8"
    );
    assert_eq!(seen.headers["soapaction"], "dummy");
    assert_eq!(r.body, seen.body.unwrap());
    assert_eq!(be.seen.lock().unwrap().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wsdl_is_served_with_sluice_address() {
    let (_be, s, mut c) = on_capp().await;
    let r = c.get("/services/DirectProxy?wsdl").await.unwrap();
    assert_eq!(r.status, 200);
    let t = r.text();
    assert!(
        t.contains(&format!(
            "location=\"http://{}/services/DirectProxy\"",
            s.addr
        )),
        "{t}"
    );
    assert!(
        t.contains("<definitions") && !t.contains("localhost:18181"),
        "{t}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn car_of_2018_loads_and_routes() {
    let be = backend().await;
    let s = on_car_of_2018(be.addr);
    let mut c = Conn::open(s.addr).await;
    let body = payload("1000B_buyStocks.xml");
    let r = c.soap("/services/DirectProxy", body.clone()).await;
    assert_eq!(r.body, body);
}

const IBM_FIRST: &str = "2018-01_initial/1K_buyStocks.xml";

/// The same payload with its first order's symbol changed.
fn with_first_symbol(body: &bytes::Bytes, symbol: &str) -> bytes::Bytes {
    let s = String::from_utf8(body.to_vec()).unwrap();
    let start = s.find("<symbol>").unwrap() + "<symbol>".len();
    let end = start + s[start..].find("</symbol>").unwrap();
    bytes::Bytes::from(format!("{}{symbol}{}", &s[..start], &s[end..]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cbr_proxy_routes_on_xpath_over_the_body() {
    let be = backend().await;
    // Current artifacts: regex ".*", so any well-formed order routes; a body that is not XML is refused.
    let s = start_on_capp(&capp(), be.addr, &[]);
    let mut c = Conn::open(s.addr).await;
    for name in ["1000B_buyStocks.xml", "10000B_buyStocks.xml"] {
        let body = payload(name);
        let r = c.soap("/services/CBRProxy", body.clone()).await;
        assert_eq!((r.status, &r.body), (200, &body), "{name}");
    }
    let bad = c
        .soap("/services/CBRProxy", "<soapenv:Envelope><unclosed>")
        .await
        .assert_status(400);
    assert!(
        bad.text().contains("not acceptable XML") && bad.text().contains("soapenv:Client"),
        "{}",
        bad.text()
    );
    assert_eq!(be.seen.lock().unwrap().len(), 2);
    drop(s);

    // The 2018 CAR: the first order must be IBM.
    let s = on_car_of_2018(be.addr);
    let mut c = Conn::open(s.addr).await;
    let ibm = request_file(IBM_FIRST);
    let r = c.soap("/services/CBRProxy", ibm.clone()).await;
    assert_eq!((r.status, &r.body), (200, &ibm));
    let not_ibm = with_first_symbol(&ibm, "MSFT");
    expect_fault(
        &mut c,
        "/services/CBRProxy",
        not_ibm,
        "First order must be for the symbol IBM",
    )
    .await;
    // "IBM" must be the whole value (Java matches()), not a substring.
    let f2 = c
        .soap("/services/CBRProxy", with_first_symbol(&ibm, "IBMX"))
        .await;
    assert_eq!(f2.status, 500);
    assert_eq!(
        be.seen.lock().unwrap().len(),
        3,
        "only the IBM order reached the back-end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cbr_soap_header_proxy_routes_on_the_soap_header() {
    let (be, _s, mut c) = on_capp().await;
    let body = payload("1000B_buyStocks.xml");
    let r = c.soap("/services/CBRSOAPHeaderProxy", body.clone()).await;
    assert_eq!((r.status, &r.body), (200, &body));
    let text = String::from_utf8(body.to_vec()).unwrap();
    let wrong = text.replace("xadmin;server1;community#1.0##", "guest");
    // The fault carries the request's header blocks, as Synapse moves them, read from the start
    // of the message (the rest is drained: `streaming.rs` sends this proxy more than the
    // buffering limit); with a large body too.
    let orders = wrong.find("<order>").unwrap();
    let padding = "<!-- padding -->".repeat(128 * 1024);
    for body in [
        wrong.clone(),
        format!("{}{padding}{}", &wrong[..orders], &wrong[orders..]),
    ] {
        let f = c
            .soap("/services/CBRSOAPHeaderProxy", bytes::Bytes::from(body))
            .await;
        assert_eq!(f.status, 500);
        let t = f.text();
        assert!(
            t.contains("<faultstring>Invalid routing header</faultstring>")
                && t.contains("<soapenv:Header><routing xmlns=\"http://someuri\">guest</routing></soapenv:Header>"),
            "{t}"
        );
    }
    let start_h = text.find("<soapenv:Header>").unwrap();
    let end_h = text.find("</soapenv:Header>").unwrap() + "</soapenv:Header>".len();
    let no_header = bytes::Bytes::from(format!("{}{}", &text[..start_h], &text[end_h..]));
    let f = c.soap("/services/CBRSOAPHeaderProxy", no_header).await;
    assert_eq!(f.status, 500);
    assert!(f.text().contains("<soapenv:Header/>"), "{}", f.text());
    assert_eq!(be.seen.lock().unwrap().len(), 1);
}

/// WSO2's clone-and-aggregate scenarios: each copy reaches the back-end, and the client gets one
/// answer holding every response's payload inside the `Aggregated` element the out-sequence sets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clone_and_aggregate_proxies_gather_every_copy() {
    let (be, _s, mut c) = on_capp().await;
    let body = payload("1000B_buyStocks.xml");
    for (proxy, copies) in [
        ("CloneAndAggregateWithTwoBackendProxy", 2),
        ("CloneAndAggregateWithFourBackendProxy", 4),
        ("CloneAndAggregateWithEightBackendProxy", 8),
    ] {
        let before = be.seen.lock().unwrap().len();
        let r = c.soap(&format!("/services/{proxy}"), body.clone()).await;
        assert_eq!(r.status, 200, "{proxy}: {}", r.text());
        let t = r.text();
        assert!(
            t.contains("<Aggregated") && t.contains("</Aggregated>"),
            "{proxy}: {t}"
        );
        assert_eq!(t.matches("<m:buyStocks").count(), copies, "{proxy}: {t}");
        assert_eq!(be.seen.lock().unwrap().len() - before, copies, "{proxy}");
    }
}

/// WSO2's IterateAndAggregateProxy: a back-end call per `order` of the payload, every response's
/// `order` gathered in the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iterate_and_aggregate_proxy_calls_once_per_order() {
    let (be, _s, mut c) = on_capp().await;
    let body = payload("1000B_buyStocks.xml");
    let orders = String::from_utf8_lossy(&body).matches("<order>").count();
    assert!(orders > 1);
    let r = c
        .soap("/services/IterateAndAggregateProxy", body)
        .await
        .assert_status(200);
    let t = r.text();
    assert!(
        t.contains("<Aggregated") && t.contains("</Aggregated>"),
        "{t}"
    );
    assert_eq!(t.matches("<order>").count(), orders, "{t}");
    let seen = be.seen.lock().unwrap();
    assert_eq!(seen.len(), orders);
    // Each call carried one order as its payload.
    for s in seen.iter() {
        let b = String::from_utf8_lossy(s.body.as_deref().unwrap_or_default()).into_owned();
        assert_eq!(b.matches("<order>").count(), 1, "{b}");
    }
}
