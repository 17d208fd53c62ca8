//! `<wsdl>` endpoints: the address the WSDL gives the port, the WSDL read over http when Sluice
//! starts, written inside, or unreadable (the endpoint stays; its messages fail with the reason).

mod common;
use common::*;
use tokio::io::AsyncWriteExt;

/// A WSDL 1.1 document whose two ports send to `addr` under different paths.
fn wsdl(addr: &str) -> String {
    format!(
        r#"<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:soap12="http://schemas.xmlsoap.org/wsdl/soap12/" targetNamespace="urn:t">
  <wsdl:service name="StockQuote">
    <wsdl:port name="Soap11" binding="b"><soap:address location="http://{addr}/services/StockQuote.Soap11"/></wsdl:port>
    <wsdl:port name="Soap12" binding="b"><soap12:address location="http://{addr}/services/StockQuote.Soap12"/></wsdl:port>
  </wsdl:service>
</wsdl:definitions>"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wsdl_endpoints_send_to_the_address_of_their_port() {
    let be = backend().await;
    let doc = wsdl(&be.addr.to_string());
    // Serves the WSDL to any GET.
    let served = doc.clone();
    let (wsdl_at, _h) = raw_backend(move |mut s| {
        let body = served.clone();
        async move {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(body.as_bytes()).await;
        }
    })
    .await;
    let dir = std::env::temp_dir().join(format!("sluice-wsdl-endpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let inline = doc
        .replace("Soap12\"", "Inline\"")
        .replace(".Soap12", ".Inline");
    let config = format!(
        r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <proxy name="ByUri"><target><inSequence><send><endpoint>
    <wsdl uri="http://{wsdl_at}/services/StockQuote?wsdl" service="StockQuote" port="Soap12"/>
  </endpoint></send></inSequence></target></proxy>
  <proxy name="Inline"><target><inSequence><send><endpoint>
    <wsdl service="StockQuote" port="Inline">{inline}</wsdl>
  </endpoint></send></inSequence></target></proxy>
  <proxy name="Unreadable"><target><inSequence><send><endpoint>
    <wsdl uri="http://127.0.0.1:{closed}/x?wsdl" service="StockQuote" port="Soap11"/>
  </endpoint></send></inSequence></target></proxy>
</definitions>"#,
        closed = closed_port()
    );
    std::fs::write(dir.join("synapse.xml"), config).unwrap();
    let s = Sluice::start(&["run", dir.to_str().unwrap()]);
    let mut c = Conn::open(s.addr).await;
    let env = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><ping/></soapenv:Body></soapenv:Envelope>";
    for (proxy, path) in [
        ("ByUri", "/services/StockQuote.Soap12"),
        ("Inline", "/services/StockQuote.Inline"),
    ] {
        let r = c
            .post(&format!("/services/{proxy}"), SOAP_HEADERS, env.into())
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{proxy}: {}", r.text());
        let seen = be.seen.lock().unwrap().last().unwrap().path.clone();
        assert_eq!(seen, path, "{proxy}");
    }
    // Deployed, but its WSDL could not be read: each message fails, saying why.
    let r = c
        .post("/services/Unreadable", SOAP_HEADERS, env.into())
        .await
        .unwrap();
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        r.text().contains("gave no address: cannot connect"),
        "{}",
        r.text()
    );
    assert_eq!(be.seen.lock().unwrap().len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}
