//! TLS both ways. https back-ends: Sluice verifies the back-end's certificate against the system's
//! roots and the CAs given with `--trust-ca`, checks the host name, pools the TLS connections, and
//! answers 502 naming the certificate problem when the back-end cannot be trusted. The https listener
//! (`--https-port`): proxies are served on the listeners their `transports` name. The TLS peers here
//! are real servers and clients on loopback with a CA and certificate made for each test.

mod common;
use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

const BODY: &str = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><a>tls</a></soapenv:Body></soapenv:Envelope>";

/// A CA, and a server certificate for `localhost` it issued (with its PKCS#8 key).
struct Pki {
    ca_pem: String,
    server_cert: CertificateDer<'static>,
    server_key: Vec<u8>,
    server_cert_pem: String,
    server_key_pem: String,
}

fn pki() -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    Pki {
        ca_pem: ca.pem(),
        server_cert: cert.der().clone(),
        server_key: key.serialize_der(),
        server_cert_pem: cert.pem(),
        server_key_pem: key.serialize_pem(),
    }
}

/// A TLS back-end that echoes the body; counts the TCP connections it accepted.
async fn tls_echo(pki: &Pki) -> (SocketAddr, Arc<AtomicUsize>) {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![pki.server_cert.clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.server_key.clone())),
    )
    .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that does not trust us ends the handshake: nothing to serve then.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = service_fn(|req: Request<Incoming>| async move {
                    let ct = req.headers().get("content-type").cloned();
                    let body = req.into_body().collect().await.map(|c| c.to_bytes());
                    let mut b = Response::builder().status(200);
                    if let Some(ct) = ct {
                        b = b.header("content-type", ct);
                    }
                    Ok::<_, std::convert::Infallible>(
                        b.body(Full::new(body.unwrap_or_default())).unwrap(),
                    )
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    (addr, accepted)
}

/// `text` in a new file of the test's temporary folder.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-tls-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join(format!("{}-{name}", rand_suffix()));
    std::fs::write(&f, text).unwrap();
    f
}

fn ca_file(pki: &Pki) -> PathBuf {
    temp_file("ca.pem", &pki.ca_pem)
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn start(endpoint: &str, trust: Option<&PathBuf>) -> Sluice {
    let config = test_config("failures");
    let ep = format!("Backend={endpoint}");
    let mut args = vec!["run", config.to_str().unwrap(), "--endpoint", ep.as_str()];
    if let Some(t) = trust {
        args.extend(["--trust-ca", t.to_str().unwrap()]);
    }
    Sluice::start(&args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_https_backend_is_reached_and_its_connection_pooled() {
    let pki = pki();
    let (addr, accepted) = tls_echo(&pki).await;
    let ca = ca_file(&pki);
    let s = start(
        &format!("https://localhost:{}/service", addr.port()),
        Some(&ca),
    );
    let mut c = Conn::open(s.addr).await;
    for _ in 0..3 {
        let r = c
            .post("/services/Plain", SOAP_HEADERS, BODY.into())
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.text(), BODY);
    }
    // A large body streams through the TLS connection both ways.
    let big: String = std::iter::repeat_n("<v>0123456789abcdef</v>", 20_000).collect();
    let big = format!("<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><a>{big}</a></soapenv:Body></soapenv:Envelope>");
    let r = c
        .post("/services/Plain", SOAP_HEADERS, Bytes::from(big.clone()))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), big.len());
    assert!(r.body == big.as_bytes());
    // One worker served this client connection: one TLS connection to the back-end, reused.
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    let _ = std::fs::remove_file(ca);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_or_misnamed_certificate_gives_502_naming_the_problem() {
    let pki = pki();
    let (addr, _) = tls_echo(&pki).await;
    // The system's roots alone do not hold the test CA.
    let s = start(&format!("https://localhost:{}/service", addr.port()), None);
    let mut c = Conn::open(s.addr).await;
    let r = c
        .post("/services/Plain", SOAP_HEADERS, BODY.into())
        .await
        .unwrap();
    assert_eq!(r.status, 502, "{}", r.text());
    let t = r.text();
    assert!(
        t.contains("endpoint Backend") && t.contains("UnknownIssuer"),
        "{t}"
    );
    drop(s);
    // Trusted CA, but the address is not the name the certificate holds.
    let ca = ca_file(&pki);
    let s = start(
        &format!("https://127.0.0.1:{}/service", addr.port()),
        Some(&ca),
    );
    let mut c = Conn::open(s.addr).await;
    let r = c
        .post("/services/Plain", SOAP_HEADERS, BODY.into())
        .await
        .unwrap();
    assert_eq!(r.status, 502, "{}", r.text());
    let t = r.text();
    assert!(t.contains("not valid for name"), "{t}");
    let _ = std::fs::remove_file(ca);
}

#[test]
fn a_bad_trust_file_stops_sluice_with_its_name() {
    let config = test_config("failures");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "run",
            config.to_str().unwrap(),
            "--trust-ca",
            "/nonexistent/ca.pem",
            "--port",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--trust-ca /nonexistent/ca.pem"), "{err}");
}

/// Sluice with an https listener on the `tls` config: (process, http address, https address).
fn start_https(pki: &Pki, backend: SocketAddr) -> (std::process::Child, SocketAddr, SocketAddr) {
    use std::io::BufRead;
    let cert = temp_file("cert.pem", &pki.server_cert_pem);
    let key = temp_file("key.pem", &pki.server_key_pem);
    let config = test_config("tls");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", config.to_str().unwrap(), "--endpoint"])
        .arg(format!("Backend=http://{backend}/service"))
        .args(["--host", "127.0.0.1", "--port", "0", "--https-port", "0"])
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut addr = |scheme: &str| -> SocketAddr {
        let l = lines.next().unwrap().unwrap();
        l.strip_prefix(&format!("sluice listening on {scheme}://"))
            .unwrap_or_else(|| panic!("unexpected line {l:?}"))
            .parse()
            .unwrap()
    };
    let (http, https) = (addr("http"), addr("https"));
    std::thread::spawn(move || for _ in lines {});
    (child, http, https)
}

/// A keep-alive HTTP/1.1 client over TLS to `addr`, trusting the test CA, asking for `localhost`.
async fn https_client(
    pki: &Pki,
    addr: SocketAddr,
) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki_ca_der(pki)).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    send
}

fn pki_ca_der(pki: &Pki) -> CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_slice(pki.ca_pem.as_bytes()).unwrap()
}

async fn post_on(
    send: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    path: &str,
    body: &str,
) -> (u16, String) {
    send.ready().await.unwrap();
    let req = Request::builder()
        .method("POST")
        .uri(path)
        .header("host", "localhost")
        .header("content-type", "text/xml; charset=UTF-8")
        .header("soapaction", "urn:test")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let r = send.send_request(req).await.unwrap();
    let status = r.status().as_u16();
    let body = r.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_https_listener_serves_proxies_by_their_transports() {
    let pki = pki();
    let echo = backend().await;
    let (mut child, http, https) = start_https(&pki, echo.addr);
    // Something that is not TLS on the https port is turned away; serving goes on.
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut raw = tokio::net::TcpStream::connect(https).await.unwrap();
        raw.write_all(b"POST /services/Both HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        let _ = raw.read_to_end(&mut buf).await;
        assert!(!String::from_utf8_lossy(&buf).contains("HTTP/1.1 200"));
    }
    let mut c = https_client(&pki, https).await;
    for proxy in ["Both", "HttpsOnly"] {
        let (status, text) = post_on(&mut c, &format!("/services/{proxy}"), BODY).await;
        assert_eq!((status, text.as_str()), (200, BODY), "{proxy} over https");
    }
    let (status, text) = post_on(&mut c, "/services/HttpOnly", BODY).await;
    assert_eq!(status, 404, "{text}");
    assert!(
        text.contains("proxy HttpOnly is not served on https"),
        "{text}"
    );
    // A flow that reads the body and answers by itself, over TLS.
    let (status, text) = post_on(
        &mut c,
        "/services/Answer",
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><who>tls</who></soapenv:Body></soapenv:Envelope>",
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(">secure tls</answer>"), "{text}");
    // The plain listener serves by the same rule.
    let mut p = Conn::open(http).await;
    let r = p
        .post("/services/HttpsOnly", SOAP_HEADERS, BODY.into())
        .await
        .unwrap();
    assert_eq!(r.status, 404);
    assert!(r.text().contains("not served on http"), "{}", r.text());
    let r = p
        .post("/services/Both", SOAP_HEADERS, BODY.into())
        .await
        .unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, BODY));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_key_that_does_not_match_the_certificate_stops_sluice() {
    let (a, b) = (pki(), pki());
    let cert = temp_file("cert.pem", &a.server_cert_pem);
    let key = temp_file("key.pem", &b.server_key_pem);
    let config = test_config("tls");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "run",
            config.to_str().unwrap(),
            "--port",
            "0",
            "--https-port",
            "0",
        ])
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--tls-cert") && err.contains("--tls-key"),
        "{err}"
    );
}
