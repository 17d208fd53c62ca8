//! Reading the WSDLs of `<wsdl>` endpoints when Sluice starts (WSO2 MI reads them when it deploys
//! the endpoint): one GET each, at most [`WSDL_LIMIT`] bytes, over http or https (trusted as the
//! back-ends are). An endpoint whose WSDL cannot be read stays deployed; messages to it fail with
//! the reason.

use crate::tls::{self, Io};
use bytes::Bytes;
use http::{header, Request, Uri};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use sluice_mediation::endpoints::LazyWsdl;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

/// The largest WSDL read.
pub const WSDL_LIMIT: usize = 8 * 1024 * 1024;

/// Reads every WSDL, all at once, each within `limit`; says what each gave.
pub async fn read_all(wsdls: &[Arc<LazyWsdl>], tls: Arc<ClientConfig>, limit: Duration) {
    let reads = wsdls.iter().map(|w| {
        let tls = tls.clone();
        async move {
            let text = match tokio::time::timeout(limit, get_text(&w.uri, tls)).await {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {} ms", limit.as_millis())),
            };
            match &text {
                Ok(_) => tracing::info!("read the WSDL at {}", w.uri),
                Err(why) => tracing::warn!(
                    "cannot read the WSDL at {}: {why}; messages to its endpoint fail",
                    w.uri
                ),
            }
            w.read(text);
        }
    });
    futures_util::future::join_all(reads).await;
}

/// The body of a GET of `uri`, as text.
async fn get_text(uri: &str, tls: Arc<ClientConfig>) -> Result<String, String> {
    let u: Uri = uri.parse().map_err(|e| format!("not a URI: {e}"))?;
    let https = match u.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err("only http and https WSDLs are read".into()),
    };
    let host = u.host().ok_or("the URI has no host")?.to_owned();
    let port = u.port_u16().unwrap_or(if https { 443 } else { 80 });
    let tcp = TcpStream::connect((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let io = if https {
        let name = tls::server_name(&host)?;
        tls::connect(tls, name, tcp)
            .await
            .map_err(|e| format!("TLS: {e}"))?
    } else {
        Io::Tcp(tcp)
    };
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let target = u.path_and_query().map_or("/", |p| p.as_str());
    let authority = u.authority().map_or(host.as_str(), |a| a.as_str());
    let req = Request::get(target)
        .header(header::HOST, authority)
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let resp = send.send_request(req).await.map_err(|e| e.to_string())?;
    if !resp.status().is_success() {
        return Err(format!("status {}", resp.status()));
    }
    let body = Limited::new(resp.into_body(), WSDL_LIMIT)
        .collect()
        .await
        .map_err(|e| format!("the body: {e}"))?
        .to_bytes();
    String::from_utf8(body.to_vec()).map_err(|_| "the WSDL is not UTF-8".to_owned())
}
