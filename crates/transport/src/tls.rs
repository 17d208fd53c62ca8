//! TLS (rustls, ring provider): the client configuration Sluice trusts https back-ends with, the byte
//! stream a pooled back-end connection is (plain or encrypted), and the server configuration of the
//! https listener.
//!
//! Trust is the system's roots (Debian's ca-certificates, as rustls-native-certs finds them) plus any
//! PEM CA files given with `--trust-ca`, the way WSO2 MI trusts what its client trust store holds.
//! Host names are verified (as MI's default verifier does); there is no switch to turn that off.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
pub use rustls::ClientConfig;
use rustls::{RootCertStore, ServerConfig};
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// The ring provider, so that no process-wide default has to be installed.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates in a PEM file given with `flag`: at least one, else an error naming the file.
fn pem_certs(flag: &str, f: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(f)
        .map_err(|e| format!("{flag} {}: {e}", f.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{flag} {}: {e}", f.display()))?;
    if certs.is_empty() {
        return Err(format!("{flag} {}: no PEM certificate in it", f.display()));
    }
    Ok(certs)
}

/// The CA certificates of `files` (given with `flag`) added to `roots`.
fn add_cas(
    roots: &mut RootCertStore,
    flag: &str,
    files: &[impl AsRef<Path>],
) -> Result<(), String> {
    for f in files {
        let f = f.as_ref();
        for c in pem_certs(flag, f)? {
            roots
                .add(c)
                .map_err(|e| format!("{flag} {}: {e}", f.display()))?;
        }
    }
    Ok(())
}

/// A certificate chain (the holder's certificate first) and its private key, from PEM files (the
/// key PKCS#8, PKCS#1 or SEC1), given with `cert_flag` and `key_flag`.
pub struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    /// How the two files were named, for errors.
    named: String,
}

impl Identity {
    pub fn load(cert_flag: &str, cert: &Path, key_flag: &str, key: &Path) -> Result<Self, String> {
        Ok(Identity {
            chain: pem_certs(cert_flag, cert)?,
            key: PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("{key_flag} {}: {e}", key.display()))?,
            named: format!(
                "{cert_flag} {} with {key_flag} {}",
                cert.display(),
                key.display()
            ),
        })
    }
}

impl Identity {
    /// A self-signed certificate for `names` (DNS names or IP addresses) and its new key: for a
    /// listener that must speak TLS when no certificate is given (MI's management API, whose
    /// clients are told to skip the check, as with MI's own self-signed `wso2carbon`).
    /// A key (PKCS#8 DER) and its certificate chain (DER, the key's first), as a key store holds
    /// them; `named` says where they came from, for errors.
    pub fn from_der(chain: Vec<Vec<u8>>, pkcs8: Vec<u8>, named: String) -> Self {
        Identity {
            chain: chain.into_iter().map(CertificateDer::from).collect(),
            key: PrivateKeyDer::Pkcs8(pkcs8.into()),
            named,
        }
    }

    pub fn self_signed(names: &[String]) -> Result<Self, String> {
        let made = rcgen::generate_simple_self_signed(names.to_vec())
            .map_err(|e| format!("a self-signed certificate: {e}"))?;
        Ok(Identity {
            chain: vec![made.cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(made.key_pair.serialize_der().into()),
            named: format!("a self-signed certificate for {}", names.join(", ")),
        })
    }
}

/// The system's trusted roots. Certificates the system store holds but rustls cannot parse are
/// skipped, as every TLS client skips them.
fn system_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for e in &found.errors {
        tracing::debug!("system trust store: {e}");
    }
    let (added, ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        tracing::warn!(
            "no trusted root certificates found on this system (install ca-certificates): https back-ends are trusted only through --trust-ca"
        );
    }
    tracing::debug!("system trust store: {added} roots, {ignored} not usable");
    roots
}

/// The back-end client configuration: the system's roots and the CA certificates in `ca_files`
/// (`--trust-ca`, PEM, one or more each), and the certificate Sluice shows a back-end that asks
/// for one (`--backend-cert`, `--backend-key`; none: Sluice shows none). An unreadable file, or one
/// without a usable certificate or key, is an error naming it.
pub fn client_config(
    ca_files: &[impl AsRef<Path>],
    identity: Option<Identity>,
) -> Result<Arc<ClientConfig>, String> {
    if ca_files.is_empty() && identity.is_none() {
        return Ok(default_client_config());
    }
    let mut roots = system_roots();
    add_cas(&mut roots, "--trust-ca", ca_files)?;
    let builder = client_builder(roots)?;
    let cfg = match identity {
        None => builder.with_no_client_auth(),
        Some(id) => builder
            .with_client_auth_cert(id.chain, id.key)
            .map_err(|e| format!("{}: {e}", id.named))?,
    };
    Ok(Arc::new(cfg))
}

/// A client configuration trusting `roots`, ring provider, safe protocol versions; the client
/// certificate (or none) still to choose.
fn client_builder(
    roots: RootCertStore,
) -> Result<rustls::ConfigBuilder<ClientConfig, rustls::client::WantsClientCert>, String> {
    Ok(ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots))
}

/// The configuration with the system's roots alone, made once per process.
pub fn default_client_config() -> Arc<ClientConfig> {
    static DEFAULT: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    DEFAULT
        .get_or_init(|| {
            // The ring provider with safe defaults and no client certificate cannot fail to build.
            let cfg = client_builder(system_roots())
                .unwrap_or_else(|e| panic!("{e}"))
                .with_no_client_auth();
            Arc::new(cfg)
        })
        .clone()
}

/// The https listener's configuration: its certificate and key (`--tls-cert`, `--tls-key`), HTTP/1.1
/// only. With `client_cas` (`--tls-client-ca`), every client must show a certificate one of them
/// issued (mutual TLS); else none is asked for. Errors name the file and what is wrong with it,
/// including a key that does not match the certificate.
pub fn server_config(
    identity: Identity,
    client_cas: &[impl AsRef<Path>],
) -> Result<Arc<ServerConfig>, String> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = if client_cas.is_empty() {
        builder.with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        add_cas(&mut roots, "--tls-client-ca", client_cas)?;
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| format!("--tls-client-ca: {e}"))?;
        builder.with_client_cert_verifier(verifier)
    };
    let mut cfg = builder
        .with_single_cert(identity.chain, identity.key)
        .map_err(|e| format!("{}: {e}", identity.named))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// The name a back-end's certificate must hold: the URI's host (an IP address without brackets).
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned())
        .map_err(|e| format!("'{host}' is not a TLS server name: {e}"))
}

/// Runs the TLS handshake over `tcp`.
pub async fn connect(
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    tcp: TcpStream,
) -> io::Result<Io> {
    let tls = TlsConnector::from(config).connect(name, tcp).await?;
    Ok(Io::Tls(Box::new(tls)))
}

/// A back-end connection's byte stream.
pub enum Io {
    Tcp(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Io {
    /// The socket under the stream.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Io::Tcp(s) => s,
            Io::Tls(s) => s.get_ref().0,
        }
    }
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Tcp(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Tcp(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names() {
        assert!(server_name("example.com").is_ok());
        assert!(server_name("127.0.0.1").is_ok());
        assert!(server_name("[::1]").is_ok());
        assert!(server_name("bad name").is_err());
    }

    #[test]
    fn ca_files_are_checked() {
        let dir = std::env::temp_dir().join(format!("sluice-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let e = client_config(&[&empty], None).err().unwrap();
        assert!(e.contains("no PEM certificate"), "{e}");
        let missing = dir.join("missing.pem");
        let e = client_config(&[&missing], None).err().unwrap();
        assert!(e.contains("missing.pem"), "{e}");
        let ca = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let good = dir.join("ca.pem");
        std::fs::write(&good, ca.cert.pem()).unwrap();
        assert!(client_config(&[&good], None).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
