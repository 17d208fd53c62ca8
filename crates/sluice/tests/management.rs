//! WSO2 MI's management API on the internal port: the calls `apictl mi` makes (login, get
//! proxy-services / apis / endpoints / applications, activate and deactivate an endpoint and a
//! proxy, update a log level, get logs, logout), call by call as apictl's source shows them, with
//! MI's JSON shapes.

mod common;
use common::setup::*;
use common::*;
use serde_json::Value;
use std::sync::Arc;

/// `method path` on the management API with these headers and body: (status, JSON or Null).
async fn call(
    s: &Sluice,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: Option<&str>,
) -> (u16, Value) {
    let addr = s.health_addr();
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string());
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.unwrap_or("").to_owned(),
        )))
        .unwrap();
    let r = send.send_request(req).await.unwrap();
    let status = r.status().as_u16();
    use http_body_util::BodyExt;
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    let v = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| panic!("not JSON: {bytes:?}"))
    };
    (status, v)
}

/// Every value a string, as apictl's `map[string]string` needs.
fn all_strings(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| o.values().all(Value::is_string))
}

/// `apictl mi login`: GET with Basic credentials (MI's default admin/admin, on loopback); the
/// `Authorization` value for what follows.
async fn login(s: &Sluice) -> String {
    let basic = "Basic YWRtaW46YWRtaW4="; // admin:admin
    let (status, login) = call(s, "GET", "/management/login", Some(basic), None).await;
    assert_eq!(status, 200, "{login}");
    assert!(all_strings(&login), "{login}");
    format!("Bearer {}", login["AccessToken"].as_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_and_logout_as_mi() {
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let (status, root) = call(&s, "GET", "/management", None, None).await;
    assert_eq!(status, 200, "{root}");
    // Without a token: 401, empty, as MI.
    let none = call(&s, "GET", "/management/proxy-services", None, None).await;
    assert_eq!(none, (401, Value::Null));
    let wrong = "Basic YWRtaW46bm9wZQ=="; // admin:nope
    let refused = call(&s, "GET", "/management/login", Some(wrong), None).await;
    assert_eq!(refused.0, 401);
    let bearer = login(&s).await;
    let auth = Some(bearer.as_str());
    assert_eq!(call(&s, "GET", "/management/apis", auth, None).await.0, 200);
    // apictl mi logout: the token ends.
    assert_eq!(
        call(&s, "GET", "/management/logout", auth, None).await.0,
        200
    );
    assert_eq!(call(&s, "GET", "/management/apis", auth, None).await.0, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_read_as_apictl_gets_them() {
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let bearer = login(&s).await;
    let auth = Some(bearer.as_str());
    let port = s.addr.port();
    // get proxy-services [X]
    let (status, proxies) = call(&s, "GET", "/management/proxy-services", auth, None).await;
    assert_eq!(status, 200);
    let list = proxies["list"].as_array().unwrap();
    assert_eq!(proxies["count"], list.len());
    let direct = list
        .iter()
        .find(|p| p["name"] == "DirectProxy")
        .unwrap_or_else(|| panic!("{proxies}"));
    let wsdl = format!("http://127.0.0.1:{port}/services/DirectProxy?wsdl");
    assert_eq!(direct["wsdl1_1"], wsdl);
    let one = "/management/proxy-services?proxyServiceName=DirectProxy";
    let (status, one) = call(&s, "GET", one, auth, None).await;
    assert_eq!(status, 200);
    assert_eq!(one["isRunning"], true);
    let epr = format!("http://127.0.0.1:{port}/services/DirectProxy");
    assert_eq!(one["eprs"][0], epr);
    let missing = "/management/proxy-services?proxyServiceName=Nope";
    assert_eq!(call(&s, "GET", missing, auth, None).await.0, 404);
    // get apis [X]
    let (status, apis) = call(&s, "GET", "/management/apis", auth, None).await;
    assert_eq!(status, 200);
    let api = apis["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "DirectAPI")
        .unwrap_or_else(|| panic!("{apis}"));
    assert_eq!(api["url"], format!("http://127.0.0.1:{port}/directApi"));
    let (_, detail) = call(&s, "GET", "/management/apis?apiName=DirectAPI", auth, None).await;
    assert_eq!(detail["context"], "/directApi");
    let resources = detail["resources"].as_array();
    assert!(resources.is_some_and(|r| !r.is_empty()), "{detail}");
    // get composite-apps: WSO2's CAR is faulty, as in MI, for the two proxies it leaves out.
    let (status, apps) = call(&s, "GET", "/management/applications", auth, None).await;
    assert_eq!(status, 200);
    let counts = (apps["totalCount"].as_u64(), apps["faultyCount"].as_u64());
    assert_eq!(counts, (Some(1), Some(1)), "{apps}");
    let car = &apps["faultyList"][0];
    assert_eq!(car["name"], "ESBPerformanceTestArtifacts");
    let has = |name: &str, kind: &str| {
        let list = car["artifacts"].as_array().unwrap();
        list.iter().any(|a| a["name"] == name && a["type"] == kind)
    };
    assert!(
        has("DirectProxy", "proxy-service") && has("DirectAPI", "api"),
        "{car}"
    );
    let (_, entries) = call(&s, "GET", "/management/local-entries", auth, None).await;
    let list = entries["list"].as_array().unwrap();
    assert!(
        list.iter().any(|e| e["name"] == "security_policy"),
        "{entries}"
    );
    // The artifact kinds Sluice has none of yet.
    for kind in [
        "tasks",
        "message-stores",
        "inbound-endpoints",
        "data-services",
    ] {
        let (status, v) = call(&s, "GET", &format!("/management/{kind}"), auth, None).await;
        assert_eq!((status, v["count"].as_u64()), (200, Some(0)), "{kind}: {v}");
    }
    let (_, server) = call(&s, "GET", "/management/server", auth, None).await;
    assert_eq!(server["productName"], "Sluice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_and_proxies_switch_off_and_on() {
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let bearer = login(&s).await;
    let auth = Some(bearer.as_str());
    // get endpoints; deactivate RealService: DirectProxy's sends fail as to a suspended endpoint.
    let (_, eps) = call(&s, "GET", "/management/endpoints", auth, None).await;
    let real = eps["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "RealService")
        .unwrap_or_else(|| panic!("{eps}"));
    assert_eq!(
        (&real["isActive"], &real["type"]),
        (&Value::from(true), &Value::from("address"))
    );
    let off = r#"{"name":"RealService","status":"inactive"}"#;
    let (status, m) = call(&s, "POST", "/management/endpoints", auth, Some(off)).await;
    assert_eq!(
        (status, m["Message"].as_str()),
        (200, Some("RealService is switched Off"))
    );
    assert!(all_strings(&m));
    let mut c = Conn::open(s.addr).await;
    let body = payload("1000B_buyStocks.xml");
    let r = c
        .post("/services/DirectProxy", SOAP_HEADERS, body.clone())
        .await
        .unwrap();
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("switched off"), "{}", r.text());
    let one = "/management/endpoints?endpointName=RealService";
    assert_eq!(call(&s, "GET", one, auth, None).await.1["isActive"], false);
    let on = r#"{"name":"RealService","status":"active"}"#;
    let (_, m) = call(&s, "POST", "/management/endpoints", auth, Some(on)).await;
    assert_eq!(m["Message"], "RealService is switched On");
    let r = c
        .post("/services/DirectProxy", SOAP_HEADERS, body.clone())
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    // A deactivated proxy answers 503 until activated.
    let stop = r#"{"name":"DirectProxy","status":"inactive"}"#;
    let (_, m) = call(&s, "POST", "/management/proxy-services", auth, Some(stop)).await;
    assert_eq!(
        m["Message"],
        "Proxy service DirectProxy stopped successfully"
    );
    let r = c
        .post("/services/DirectProxy", SOAP_HEADERS, body.clone())
        .await
        .unwrap();
    assert_eq!(r.status, 503, "{}", r.text());
    let start = r#"{"name":"DirectProxy","status":"active"}"#;
    call(&s, "POST", "/management/proxy-services", auth, Some(start)).await;
    let r = c
        .post("/services/DirectProxy", SOAP_HEADERS, body)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    // Bad bodies: 400 with an Error string apictl can read; an unknown name 404.
    for bad in ["", "{}", r#"{"name":"RealService","status":"sideways"}"#] {
        let (status, e) = call(&s, "POST", "/management/endpoints", auth, Some(bad)).await;
        assert_eq!(status, 400, "{bad}: {e}");
        assert!(all_strings(&e), "{e}");
    }
    let unknown = r#"{"name":"Nope","status":"active"}"#;
    let (status, _) = call(&s, "POST", "/management/endpoints", auth, Some(unknown)).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_users_replace_admin() {
    let be = backend().await;
    let config = std::env::temp_dir().join(format!("sluice-mgmt-{}.toml", std::process::id()));
    std::fs::write(
        &config,
        "[[internal_apis.users]]\nuser.name = \"ops\"\nuser.password = \"pw\"\nuser.is_admin = true\n",
    )
    .unwrap();
    let s = start_on_capp(&capp(), be.addr, &["--config", config.to_str().unwrap()]);
    let admin = "Basic YWRtaW46YWRtaW4="; // admin:admin
    assert_eq!(
        call(&s, "GET", "/management/login", Some(admin), None)
            .await
            .0,
        401
    );
    let ops = "Basic b3BzOnB3"; // ops:pw
    assert_eq!(
        call(&s, "GET", "/management/login", Some(ops), None)
            .await
            .0,
        200
    );
    let _ = std::fs::remove_file(&config);
}

/// `apictl mi update log-level`: the level applies to the next lines at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_levels_change_at_run_time() {
    let be = backend().await;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/log");
    let s = Sluice::on_suite(&dir, &["Backend".to_owned()], be.addr, "info");
    let bearer = login(&s).await;
    let auth = Some(bearer.as_str());
    let (status, list) = call(&s, "GET", "/management/logging", auth, None).await;
    assert_eq!(status, 200);
    assert_eq!(list["list"][0]["loggerName"], "rootLogger");
    let one = "/management/logging?loggerName=sluice-log-mediator";
    assert_eq!(call(&s, "GET", one, auth, None).await.1["level"], "INFO");
    let mut c = Conn::open(s.addr).await;
    let body = bytes::Bytes::from_static(b"<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><a/></soapenv:Body></soapenv:Envelope>");
    c.post("/services/LogCategories", SOAP_HEADERS, body.clone())
        .await
        .unwrap();
    let log = s.stderr_with("category = ERROR", std::time::Duration::from_secs(10));
    assert!(!log.contains("category = DEBUG"), "{log}");
    // Up to DEBUG for the log mediator: its DEBUG line appears with the next message.
    let patch = r#"{"loggerName":"sluice-log-mediator","loggingLevel":"DEBUG"}"#;
    let (status, m) = call(&s, "PATCH", "/management/logging", auth, Some(patch)).await;
    assert_eq!(status, 200, "{m}");
    assert!(
        all_strings(&m) && m["message"].as_str().unwrap().contains("DEBUG"),
        "{m}"
    );
    c.post("/services/LogCategories", SOAP_HEADERS, body.clone())
        .await
        .unwrap();
    let log = s.stderr_with("category = DEBUG", std::time::Duration::from_secs(10));
    assert!(log.contains("category = DEBUG"), "{log}");
    let bad = r#"{"loggerName":"sluice-log-mediator","loggingLevel":"LOUD"}"#;
    let (status, e) = call(&s, "PATCH", "/management/logging", auth, Some(bad)).await;
    assert_eq!(
        (status, e["Error"].as_str()),
        (400, Some("Invalid log level LOUD"))
    );
    let unknown = "/management/logging?loggerName=nope";
    assert_eq!(call(&s, "GET", unknown, auth, None).await.0, 400);
}

/// Schemathesis (`.ci/run` installs it under `target/tools/schemathesis`; `SCHEMATHESIS` names
/// another), an independent client, generates requests from MI's own OpenAPI definition of the
/// API and checks every answer against it: no server error, every documented answer's body as the
/// schema says, its Content-Type and headers as declared. Left out: the status-code check (the
/// definition documents only 200, so MI itself fails it on each 401, 404 and 400), the checks of
/// what data the API accepts (its request schemas require nothing, and name no values, where MI
/// refuses unknown names), `/login`, `/logout` and PATCH (one bearer token serves the whole run;
/// `PATCH /server` stops the server), and the paths Sluice does not serve yet (registry resources,
/// users and roles, configs, transactions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_every_answer_in_the_contract() {
    let root = workspace_root();
    let tool = std::env::var("SCHEMATHESIS").map_or_else(
        |_| root.join("target/tools/schemathesis/bin/schemathesis"),
        std::path::PathBuf::from,
    );
    assert!(
        tool.exists(),
        "no {} (bash .ci/run installs Schemathesis; SCHEMATHESIS=path names another)",
        tool.display()
    );
    let spec = root.join("conformance/third_party/mi-management-api/management-api.yaml");
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let bearer = login(&s).await;
    let url = format!("http://{}/management", s.health_addr());
    let paths = "^/(proxy-services|apis|endpoints|sequences|applications|server|logging|templates|local-entries|tasks|message-stores|message-processors|inbound-endpoints|connectors|data-services|data-sources|registry-resources|registry-resources/properties|registry-resources/metadata|configs)$";
    // Schemathesis keeps a cache in `.schemathesis/` of its working folder: under target/.
    let work = root.join("target/schemathesis");
    std::fs::create_dir_all(&work).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(tool)
            .current_dir(work)
            .arg("run")
            .arg(spec)
            .args(["--url", &url])
            .args(["-H", &format!("Authorization: {bearer}")])
            .args(["--include-path-regex", paths, "--exclude-method", "PATCH"])
            .args(["--checks", "not_a_server_error,response_schema_conformance,content_type_conformance,response_headers_conformance"])
            .args(["--max-examples", "25", "--seed", "1"])
            .env("NO_COLOR", "1")
            .output()
            .expect("schemathesis runs")
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("passed"), "{text}");
}

/// MI's registry-resources over the registry Sluice read (MI's `registry/` folder beside the
/// deployment): folders and files by MI's paths, a resource's properties and metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_resources_as_mi_lists_them() {
    let home = workspace_root().join("crates/sluice/tests/configs/mi-home");
    let deployment = home.join("repository/deployment/server/synapse-configs/default");
    let s = Sluice::start(&["run", deployment.to_str().unwrap()]);
    let bearer = login(&s).await;
    let get = |path: &'static str| {
        let (s, bearer) = (&s, bearer.clone());
        async move { call(s, "GET", path, Some(&bearer), None).await }
    };
    let (status, root) = get("/management/registry-resources?path=registry").await;
    assert_eq!(status, 200, "{root}");
    assert_eq!(root["count"], 2, "{root}");
    let (status, xslt) = get("/management/registry-resources?path=registry/config/xslt").await;
    assert_eq!(status, 200, "{xslt}");
    assert_eq!(
        xslt["count"], 1,
        "the .properties file is the resource's, not one: {xslt}"
    );
    assert_eq!(xslt["list"][0]["name"], "upper.xslt");
    assert_eq!(xslt["list"][0]["mediaType"], "application/xml");
    assert_eq!(xslt["list"][0]["properties"][0]["name"], "description");
    let (status, meta) = get(
        "/management/registry-resources/metadata?path=registry/governance/sequences/answer.xml",
    )
    .await;
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["name"], "answer.xml");
    let (status, one) = get(
        "/management/registry-resources/properties?path=registry/config/xslt/upper.xslt&name=description",
    )
    .await;
    assert_eq!(
        (status, &one["value"]),
        (200, &Value::from("not a resource")),
        "{one}"
    );
    let (status, _) = get("/management/registry-resources?path=registry/config/nothing").await;
    assert_eq!(status, 404);
}

/// `apictl mi get logs` (the list, then a file downloaded) and MI's correlation-logs switch, over
/// Sluice's access log: lines stop while it is off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_files_and_the_correlation_switch() {
    let dir = std::env::temp_dir().join(format!("sluice-mgmt-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("access.log");
    let toml = dir.join("sluice.toml");
    std::fs::write(
        &toml,
        format!(
            "[access_log]\nenable = true\nfile = \"{}\"\n",
            file.display()
        ),
    )
    .unwrap();
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &["--config", toml.to_str().unwrap()]);
    let bearer = login(&s).await;
    let mut c = Conn::open(s.addr).await;
    let body = payload("1000B_buyStocks.xml");
    // A line per request, told apart by the query; the writer thread appends them in order.
    let until = |needle: String| {
        let file = file.clone();
        async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                if text.contains(&needle) {
                    return text;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "no {needle} in {text}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    c.post("/services/DirectProxy?n=1", SOAP_HEADERS, body.clone())
        .await
        .unwrap();
    until("n=1".into()).await;
    let (status, list) = call(&s, "GET", "/management/logs", Some(&bearer), None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["count"], 1, "{list}");
    assert_eq!(list["list"][0]["FileName"], "access.log");
    assert!(
        list["list"][0]["size"].as_str().unwrap().ends_with('B'),
        "{list}"
    );
    // The download is the file's bytes (not JSON).
    let mut m = Conn::open(s.health_addr()).await;
    let got = m
        .send_with(
            "GET",
            "/management/logs?file=access.log",
            &[("authorization", bearer.as_str())],
            bytes::Bytes::new(),
        )
        .await
        .unwrap();
    assert_eq!(got.status, 200);
    assert!(
        got.text().contains("POST /services/DirectProxy?n=1"),
        "{}",
        got.text()
    );
    let (status, _) = call(
        &s,
        "GET",
        "/management/logs?file=wso2carbon.log",
        Some(&bearer),
        None,
    )
    .await;
    assert_eq!(status, 404);
    // Correlation logs: on, then off (a request unlogged), then on again.
    let q = "/management/configs?configName=correlation";
    let (_, on) = call(&s, "GET", q, Some(&bearer), None).await;
    assert_eq!(on["configs"]["enabled"], "true", "{on}");
    let off = r#"{"configName":"correlation","configs":{"enabled":false}}"#;
    let (status, said) = call(&s, "PUT", "/management/configs", Some(&bearer), Some(off)).await;
    assert_eq!(status, 200, "{said}");
    let (_, now) = call(&s, "GET", q, Some(&bearer), None).await;
    assert_eq!(now["configs"]["enabled"], "false", "{now}");
    c.post("/services/DirectProxy?n=2", SOAP_HEADERS, body.clone())
        .await
        .unwrap();
    let on = r#"{"configName":"correlation","configs":{"enabled":true}}"#;
    call(&s, "PUT", "/management/configs", Some(&bearer), Some(on)).await;
    c.post("/services/DirectProxy?n=3", SOAP_HEADERS, body)
        .await
        .unwrap();
    let text = until("n=3".into()).await;
    assert!(!text.contains("n=2"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that takes any certificate, as `apictl -k` (Sluice's own is self-signed here).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// MI's 9164: the management API over TLS too, with a certificate made at start when none is given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_management_api_answers_over_tls() {
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let (mut send, _) = over_tls(&s).await;
    let req = http::Request::builder()
        .uri("/management/login")
        .header("host", "localhost")
        .header("authorization", "Basic YWRtaW46YWRtaW4=")
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let r = send.send_request(req).await.unwrap();
    assert_eq!(r.status(), 200);
    use http_body_util::BodyExt;
    let body = r.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert!(v["AccessToken"].is_string(), "{v}");
}

/// MI's `[keystore.primary]` (WSO2's own `wso2carbon.jks`, read as it is): the management API
/// serves its certificate over TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_primary_key_store_is_served_over_tls() {
    let jks = reference().join("keystores/wso2carbon.jks");
    let toml = keystore_settings("keystore", "wso2carbon");
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &["--config", toml.to_str().unwrap()]);
    let (_, served) = over_tls(&s).await;
    let store =
        sluice_transport::keystore::KeyStore::read_jks(&std::fs::read(&jks).unwrap(), "wso2carbon")
            .unwrap();
    assert_eq!(served, store.key("wso2carbon").unwrap().chain[0]);
    // A wrong password is reported, and the port makes its own certificate instead.
    let toml = keystore_settings("keystore-wrong", "nope");
    let s = start_on_capp(&capp(), be.addr, &["--config", toml.to_str().unwrap()]);
    let log = s.stderr_with("password is wrong", std::time::Duration::from_secs(5));
    assert!(log.contains("password is wrong"), "{log}");
    let (_, served) = over_tls(&s).await;
    assert_ne!(served, store.key("wso2carbon").unwrap().chain[0]);
}

/// An http/1.1 connection to the management API over TLS (any certificate taken, as `apictl -k`),
/// and the certificate the server sent (DER).
async fn over_tls(
    s: &Sluice,
) -> (
    hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>,
    Vec<u8>,
) {
    let addr = s.management_tls_addr();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    let served = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    let (send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    (send, served)
}
