//! https back-ends: Sluice verifies the back-end's certificate against the system's roots and the CAs
//! given with `--trust-ca`, checks the host name, pools the TLS connections, and answers 502 naming
//! the certificate problem when the back-end cannot be trusted. The back-end here is a real TLS server
//! on loopback with a CA and certificate made for the test.

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

fn ca_file(pki: &Pki) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-tls-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join(format!("ca-{}.pem", rand_suffix()));
    std::fs::write(&f, &pki.ca_pem).unwrap();
    f
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
