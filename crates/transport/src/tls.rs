//! TLS (rustls, ring provider): the client configuration Sluice trusts https back-ends with, the byte
//! stream a pooled back-end connection is (plain or encrypted), and the server configuration of the
//! https listener.
//!
//! Trust is the system's roots (Debian's ca-certificates, as rustls-native-certs finds them) plus any
//! PEM CA files given with `--trust-ca`, the way WSO2 MI trusts what its client trust store holds.
//! Host names are verified (as MI's default verifier does); there is no switch to turn that off.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
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

/// A client configuration trusting `roots` (and nothing else).
fn config_with(roots: RootCertStore) -> Result<Arc<ClientConfig>, String> {
    let cfg = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
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
    tracing::debug!("system trust store: {added} roots, {ignored} not usable");
    roots
}

/// The back-end client configuration: the system's roots and the CA certificates in `ca_files`
/// (PEM, one or more each). An unreadable file, or one without a usable certificate, is an error
/// naming it.
pub fn client_config(ca_files: &[impl AsRef<Path>]) -> Result<Arc<ClientConfig>, String> {
    if ca_files.is_empty() {
        return Ok(default_client_config());
    }
    let mut roots = system_roots();
    for f in ca_files {
        let f = f.as_ref();
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(f)
            .map_err(|e| format!("--trust-ca {}: {e}", f.display()))?
            .collect::<Result<_, _>>()
            .map_err(|e| format!("--trust-ca {}: {e}", f.display()))?;
        if certs.is_empty() {
            return Err(format!(
                "--trust-ca {}: no PEM certificate in it",
                f.display()
            ));
        }
        for c in certs {
            roots
                .add(c)
                .map_err(|e| format!("--trust-ca {}: {e}", f.display()))?;
        }
    }
    config_with(roots)
}

/// The configuration with the system's roots alone, made once per process.
pub fn default_client_config() -> Arc<ClientConfig> {
    static DEFAULT: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    DEFAULT
        .get_or_init(|| {
            // The ring provider with safe defaults cannot fail to build.
            config_with(system_roots()).unwrap_or_else(|e| panic!("{e}"))
        })
        .clone()
}

/// The https listener's configuration: the certificate chain in `cert` (PEM, the server's own
/// certificate first) and its private key in `key` (PEM: PKCS#8, PKCS#1 or SEC1), HTTP/1.1 only.
/// Errors name the file and what is wrong with it, including a key that does not match the
/// certificate.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "--tls-cert {}: no PEM certificate in it",
            cert.display()
        ));
    }
    let private = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            format!(
                "--tls-cert {} with --tls-key {}: {e}",
                cert.display(),
                key.display()
            )
        })?;
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
        let e = client_config(&[&empty]).err().unwrap();
        assert!(e.contains("no PEM certificate"), "{e}");
        let missing = dir.join("missing.pem");
        let e = client_config(&[&missing]).err().unwrap();
        assert!(e.contains("missing.pem"), "{e}");
        let ca = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let good = dir.join("ca.pem");
        std::fs::write(&good, ca.cert.pem()).unwrap();
        assert!(client_config(&[&good]).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
