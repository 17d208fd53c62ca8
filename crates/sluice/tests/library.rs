//! Synapse template libraries: `<import>` deploys a library's templates as `PACKAGE.NAME`, read
//! from SYNAPSE_HOME's `repository/conf/synapse-libs` (here Synapse's own EIP library, in the
//! samples' home: conformance/third_party/synapse-samples).

mod common;
use common::*;
use std::time::Duration;

#[tokio::test]
async fn an_imported_library_template_runs_with_its_package_name() {
    let be = backend().await;
    // Sample 857's shape, its recipients the test's back-end.
    let config = synapse_xml(
        "library",
        &format!(
            r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <import name="EipLibrary" package="synapse.lang.eip"/>
  <proxy name="P"><target><inSequence>
    <property name="OUT_ONLY" value="true"/>
    <property name="FORCE_SC_ACCEPTED" value="true" scope="axis2"/>
    <call-template target="synapse.lang.eip.recipient_list">
      <with-param name="recipient_list" value="http://{0}/one,http://{0}/two"/>
    </call-template>
    <drop/>
  </inSequence></target></proxy>
</definitions>"#,
            be.addr
        ),
    );
    let dir = config.parent().unwrap().to_owned();
    let home = workspace_root().join("conformance/third_party/synapse-samples/home");
    let s = Sluice::run_at_home(&config, &home);
    let mut c = Conn::open(s.addr).await;
    let body = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><ping/></soapenv:Body></soapenv:Envelope>";
    let r = c
        .post("/services/P", SOAP_HEADERS, body.into())
        .await
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(be.wait_seen(2, Duration::from_secs(10)).await, 2);
    let mut paths = be.paths();
    paths.sort();
    assert_eq!(paths, ["/one", "/two"]);

    // Without the library there, the import is reported and the call's template is unknown.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "validate",
            config.to_str().unwrap(),
            "--home",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("no library EipLibrary of package synapse.lang.eip"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
