//! Hostile XML sent to a proxy that reads the body: each gets a fault, memory stays bounded, nothing leaks.

mod common;
use common::*;

fn start(be: std::net::SocketAddr) -> Sluice {
    let ep = format!("RealService=http://{be}/service/EchoService");
    Sluice::start(&["run", capp().to_str().unwrap(), "--endpoint", &ep])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entity_bombs_external_entities_and_deep_nesting_get_faults() {
    let be = backend().await;
    let s = start(be.addr);
    let mut c = Conn::open(s.addr).await;
    let rss_before = s.status_kb("VmHWM");

    let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><order><symbol>&lol9;</symbol></order></soapenv:Body></soapenv:Envelope>"#;
    let r = c
        .post("/services/CBRProxy", SOAP_HEADERS, laughs.into())
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());

    let xxe = r#"<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><order><symbol>&x;</symbol></order></soapenv:Body></soapenv:Envelope>"#;
    let r = c
        .post("/services/CBRProxy", SOAP_HEADERS, xxe.into())
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        !r.text().contains("root:"),
        "file content must never appear: {}",
        r.text()
    );

    let deep = format!(
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body>{}{}</soapenv:Body></soapenv:Envelope>",
        "<a>".repeat(10_000),
        "</a>".repeat(10_000)
    );
    let r = c
        .post("/services/CBRProxy", SOAP_HEADERS, deep.into())
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());

    // None of them reached the back-end, the connection still serves, and memory stayed bounded.
    assert!(be.seen.lock().unwrap().is_empty());
    let ok = c
        .post(
            "/services/CBRProxy",
            SOAP_HEADERS,
            payload("1000B_buyStocks.xml"),
        )
        .await
        .unwrap();
    assert_eq!(ok.status, 200);
    let growth = s.status_kb("VmHWM").saturating_sub(rss_before);
    assert!(
        growth < 20 * 1024,
        "peak RSS grew {growth} kB on hostile documents"
    );
}
