//! WSO2 MI's file registry beside a deployment folder: `conf:` and `gov:` keys read from
//! `<MI_HOME>/registry`, a registry resource holding a `<sequence>` run by its key.

mod common;
use common::*;

#[tokio::test]
async fn a_deployment_folder_reads_the_registry_of_its_mi_home() {
    let home = workspace_root().join("crates/sluice/tests/configs/mi-home");
    let deployment = home.join("repository/deployment/server/synapse-configs/default");
    let s = Sluice::start(&["run", deployment.to_str().unwrap()]);
    let mut c = Conn::open(s.addr).await;
    let body = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><order><symbol>ibm</symbol></order></soapenv:Body></soapenv:Envelope>";
    let r = c
        .post("/services/RegistryProxy", SOAP_HEADERS, body.into())
        .await
        .unwrap();
    // The proxy runs gov:/sequences/answer.xml, whose xslt is conf:/xslt/upper.xslt.
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("<ORDER>IBM</ORDER>"), "{}", r.text());

    // A resource's properties (upper.xslt.properties): get-property('registry', 'KEY@NAME').
    let r = c
        .post("/services/RegistryPropertyProxy", SOAP_HEADERS, body.into())
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-desc"), "not a resource");
    assert_eq!(r.header("x-desc-slash"), "not a resource");
    assert_eq!(r.header("x-missing"), "[]");

    // MI's other key forms: `resources:` (gov:/mi-resources), a local entry file without the
    // Synapse namespace, a bare key (a governance path), a publishWSDL key in the registry.
    let tagged: &[(&str, &str)] = &[SOAP_HEADERS[0], SOAP_HEADERS[1], ("x-key", "resources")];
    let r = c
        .post("/services/RegistryKeysProxy", tagged, body.into())
        .await
        .unwrap();
    assert!(
        r.text()
            .contains(r#"<tagged from="mi-resources">ibm</tagged>"#),
        "{}",
        r.text()
    );
    let r = c
        .post("/services/RegistryKeysProxy", SOAP_HEADERS, body.into())
        .await
        .unwrap();
    assert!(r.text().contains("<plain>ibm</plain>"), "{}", r.text());
    let r = c
        .post("/services/BareKeyProxy", SOAP_HEADERS, body.into())
        .await
        .unwrap();
    assert!(r.text().contains("<ORDER>IBM</ORDER>"), "{}", r.text());
    // An inline enrich source from a registry file that starts with its XML declaration.
    let r = c
        .post(
            "/services/EnrichFromRegistryProxy",
            SOAP_HEADERS,
            body.into(),
        )
        .await
        .unwrap();
    assert!(
        r.text().contains(r#"<price xmlns="urn:price">42</price>"#),
        "{}",
        r.text()
    );
    let r = c.get("/services/RegistryKeysProxy?wsdl").await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("EchoFromRegistry"), "{}", r.text());

    // The same folder copied anywhere else has no registry: the key is unknown, and said so.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "validate",
            deployment.join("proxy-services").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("gov:/sequences/answer.xml"),
        "the missing sequence is reported: {text}"
    );
}
