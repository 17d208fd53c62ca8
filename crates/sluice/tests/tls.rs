//! TLS both ways. https back-ends: Sluice verifies the back-end's certificate against the system's
//! roots and the CAs given with `--trust-ca`, checks the host name, pools the TLS connections, and
//! answers 502 naming the certificate problem when the back-end cannot be trusted. The https listener
//! (`--https-port`): proxies are served on the listeners their `transports` name. The TLS peers here
//! are real servers and clients on loopback with a CA and certificate made for each test.

mod common;
use bytes::Bytes;
use common::setup::*;
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

/// A certificate a test CA issued, with its key, as DER and as PEM.
struct Issued {
    der: CertificateDer<'static>,
    key_der: Vec<u8>,
    cert_pem: String,
    key_pem: String,
}

impl Issued {
    fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }
}

/// A CA made for one test, and the certificate it issued to `localhost` for the TLS servers.
struct Pki {
    ca: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
    ca_pem: String,
    server: Issued,
}

impl Pki {
    fn new() -> Pki {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().unwrap();
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let server = issue(&ca, &ca_key, "localhost");
        Pki {
            ca_pem: ca.pem(),
            ca,
            ca_key,
            server,
        }
    }

    /// A certificate for `name` (a client's, for mutual TLS).
    fn issue(&self, name: &str) -> Issued {
        issue(&self.ca, &self.ca_key, name)
    }

    fn roots(&self) -> rustls::RootCertStore {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        roots
    }
}

fn issue(ca: &rcgen::Certificate, ca_key: &rcgen::KeyPair, name: &str) -> Issued {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
        .unwrap()
        .signed_by(&key, ca, ca_key)
        .unwrap();
    Issued {
        der: cert.der().clone(),
        key_der: key.serialize_der(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

fn ring() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A TLS back-end that echoes the body, asking clients for a certificate the test CA issued when
/// `client_auth`; counts the TCP connections it accepted.
async fn tls_echo(pki: &Pki, client_auth: bool) -> (SocketAddr, Arc<AtomicUsize>) {
    let builder = rustls::ServerConfig::builder_with_provider(ring())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if client_auth {
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(pki.roots()),
            ring(),
        )
        .build()
        .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder
        .with_single_cert(vec![pki.server.der.clone()], pki.server.key())
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
                // A peer that does not trust us, or that we do not trust, ends the handshake.
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

/// The test body to the Both proxy, on a new connection to `s`.
async fn post_both(s: &Sluice) -> Reply {
    let mut c = Conn::open(s.addr).await;
    c.soap("/services/Both", BODY).await
}

/// Sluice on the `tls` config with its Backend endpoint at `endpoint`, and more arguments.
fn start(endpoint: &str, more: &[&str]) -> Sluice {
    let config = test_config("tls");
    let ep = format!("Backend={endpoint}");
    let mut args = vec!["run", config.to_str().unwrap(), "--endpoint", ep.as_str()];
    args.extend(more);
    Sluice::start(&args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_https_backend_is_reached_and_its_connection_pooled() {
    let pki = Pki::new();
    let (addr, accepted) = tls_echo(&pki, false).await;
    let ca = ca_file(&pki);
    let s = start(
        &format!("https://localhost:{}/service", addr.port()),
        &["--trust-ca", ca.to_str().unwrap()],
    );
    let mut c = Conn::open(s.addr).await;
    for _ in 0..3 {
        let r = c.soap("/services/Both", BODY).await.assert_status(200);
        assert_eq!(r.text(), BODY);
    }
    // A large body streams through the TLS connection both ways.
    let big: String = std::iter::repeat_n("<v>0123456789abcdef</v>", 20_000).collect();
    let big = format!("<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><a>{big}</a></soapenv:Body></soapenv:Envelope>");
    let r = c.soap("/services/Both", Bytes::from(big.clone())).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), big.len());
    assert!(r.body == big.as_bytes());
    // One worker served this client connection: one TLS connection to the back-end, reused.
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    let _ = std::fs::remove_file(ca);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_or_misnamed_certificate_gives_502_naming_the_problem() {
    let pki = Pki::new();
    let (addr, _) = tls_echo(&pki, false).await;
    // The system's roots alone do not hold the test CA.
    let s = start(&format!("https://localhost:{}/service", addr.port()), &[]);
    let r = post_both(&s).await.assert_status(502);
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
        &["--trust-ca", ca.to_str().unwrap()],
    );
    let r = post_both(&s).await.assert_status(502);
    let t = r.text();
    assert!(t.contains("not valid for name"), "{t}");
    let _ = std::fs::remove_file(ca);
}

#[test]
fn a_bad_trust_file_stops_sluice_with_its_name() {
    let err = refused_run("failures", &["--trust-ca", "/nonexistent/ca.pem"]);
    assert!(err.contains("--trust-ca /nonexistent/ca.pem"), "{err}");
}

/// Sluice with an https listener on the `tls` config, and more arguments: (process, http address,
/// https address).
fn start_https(
    pki: &Pki,
    backend: SocketAddr,
    more: &[&str],
) -> (std::process::Child, SocketAddr, SocketAddr) {
    use std::io::BufRead;
    let cert = temp_file("cert.pem", &pki.server.cert_pem);
    let key = temp_file("key.pem", &pki.server.key_pem);
    let config = test_config("tls");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", config.to_str().unwrap(), "--endpoint"])
        .arg(format!("Backend=http://{backend}/service"))
        .args(["--host", "127.0.0.1", "--port", "0", "--https-port", "0"])
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .args(more)
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

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// A keep-alive HTTP/1.1 client over TLS to `addr`, trusting the test CA, asking for `localhost`,
/// showing `cert` if given; the handshake's error otherwise.
async fn https_client(
    pki: &Pki,
    addr: SocketAddr,
    cert: Option<&Issued>,
) -> Result<Sender, String> {
    let builder = rustls::ClientConfig::builder_with_provider(ring())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(pki.roots());
    let config = match cert {
        Some(c) => builder
            .with_client_auth_cert(vec![c.der.clone()], c.key())
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(send)
}

/// A POST over `send`: its status and body, or the error that ended it.
async fn try_post(send: &mut Sender, path: &str, body: &str) -> Result<(u16, String), String> {
    send.ready().await.map_err(|e| e.to_string())?;
    let req = Request::builder()
        .method("POST")
        .uri(path)
        .header("host", "localhost")
        .header("content-type", "text/xml; charset=UTF-8")
        .header("soapaction", "urn:test")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let r = send.send_request(req).await.map_err(|e| e.to_string())?;
    let status = r.status().as_u16();
    let body = r.into_body().collect().await.map_err(|e| e.to_string())?;
    Ok((
        status,
        String::from_utf8_lossy(&body.to_bytes()).into_owned(),
    ))
}

async fn post_on(send: &mut Sender, path: &str, body: &str) -> (u16, String) {
    try_post(send, path, body).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_https_listener_serves_proxies_by_their_transports() {
    let pki = Pki::new();
    let echo = backend().await;
    let (mut child, http, https) = start_https(&pki, echo.addr, &[]);
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
    let mut c = https_client(&pki, https, None).await.unwrap();
    for proxy in ["Both", "HttpsOnly"] {
        let (status, text) = post_on(&mut c, &format!("/services/{proxy}"), BODY).await;
        assert_eq!((status, text.as_str()), (200, BODY), "{proxy} over https");
    }
    // The WSDL gives the address of the listener it was asked on.
    c.ready().await.unwrap();
    let get = Request::builder()
        .uri("/services/Both?wsdl")
        .header("host", "localhost:8253")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let r = c.send_request(get).await.unwrap();
    let wsdl = r.into_body().collect().await.unwrap().to_bytes();
    let wsdl = String::from_utf8_lossy(&wsdl);
    assert!(
        wsdl.contains("location=\"https://localhost:8253/services/Both\""),
        "{wsdl}"
    );
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
    let r = p.soap("/services/HttpsOnly", BODY).await;
    assert_eq!(r.status, 404);
    assert!(r.text().contains("not served on http"), "{}", r.text());
    let r = p.soap("/services/Both", BODY).await;
    assert_eq!((r.status, r.text().as_str()), (200, BODY));
    let r = p.get("/services/Both?wsdl").await.unwrap();
    let want = format!("location=\"http://{http}/services/Both\"");
    assert!(r.text().contains(&want), "{}", r.text());
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_key_that_does_not_match_the_certificate_stops_sluice() {
    let (a, b) = (Pki::new(), Pki::new());
    let cert = temp_file("cert.pem", &a.server.cert_pem);
    let key = temp_file("key.pem", &b.server.key_pem);
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let err = refused_run(
        "tls",
        &["--https-port", "0", "--tls-cert", cert, "--tls-key", key],
    );
    assert!(
        err.contains("--tls-cert") && err.contains("--tls-key"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_on_the_listener_needs_a_client_certificate_the_ca_issued() {
    let pki = Pki::new();
    let echo = backend().await;
    let ca = ca_file(&pki);
    let (mut child, _, https) =
        start_https(&pki, echo.addr, &["--tls-client-ca", ca.to_str().unwrap()]);
    // No certificate: the handshake or the first request fails (TLS 1.3 reports the refusal
    // after the client's side of the handshake is done), and nothing is served.
    let refused = match https_client(&pki, https, None).await {
        Err(_) => true,
        Ok(mut c) => try_post(&mut c, "/services/Both", BODY).await.is_err(),
    };
    assert!(refused, "a client without a certificate was served");
    // A certificate from another CA is refused alike.
    let stranger = Pki::new().issue("client");
    let refused = match https_client(&pki, https, Some(&stranger)).await {
        Err(_) => true,
        Ok(mut c) => try_post(&mut c, "/services/Both", BODY).await.is_err(),
    };
    assert!(
        refused,
        "a client with a certificate from another CA was served"
    );
    // One the CA issued: served.
    let client = pki.issue("client");
    let mut c = https_client(&pki, https, Some(&client)).await.unwrap();
    assert_eq!(
        post_on(&mut c, "/services/Both", BODY).await,
        (200, BODY.to_owned())
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_that_asks_for_a_client_certificate_gets_sluices() {
    let pki = Pki::new();
    let (addr, _) = tls_echo(&pki, true).await;
    let ca = ca_file(&pki);
    let endpoint = format!("https://localhost:{}/service", addr.port());
    // Without --backend-cert Sluice shows none, and the back-end ends the handshake.
    let s = start(&endpoint, &["--trust-ca", ca.to_str().unwrap()]);
    let r = post_both(&s).await.assert_status(502);
    assert!(r.text().contains("endpoint Backend"), "{}", r.text());
    drop(s);
    let id = pki.issue("sluice");
    let cert = temp_file("client.pem", &id.cert_pem);
    let key = temp_file("client-key.pem", &id.key_pem);
    let s = start(
        &endpoint,
        &[
            "--trust-ca",
            ca.to_str().unwrap(),
            "--backend-cert",
            cert.to_str().unwrap(),
            "--backend-key",
            key.to_str().unwrap(),
        ],
    );
    let r = post_both(&s).await;
    assert_eq!((r.status, r.text().as_str()), (200, BODY));
}
