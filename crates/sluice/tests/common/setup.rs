//! The set-ups the integration tests share: Sluice on the WSO2 performance CAR in front of the
//! echo back-end, and SOAP requests to it.

use super::*;
use std::path::Path;

/// The `--endpoint` that points the CAR's RealService at `backend`'s EchoService.
pub fn real_service(backend: SocketAddr) -> String {
    format!("RealService=http://{backend}/service/EchoService")
}

/// Sluice on the CAR at `capp` (a folder or a .car), its RealService at `backend`, with `more`
/// arguments after.
pub fn start_on_capp(capp: &Path, backend: SocketAddr, more: &[&str]) -> Sluice {
    let ep = real_service(backend);
    let mut args = vec!["run", capp.to_str().unwrap(), "--endpoint", &ep];
    args.extend(more);
    Sluice::start(&args)
}

/// The echo back-end, Sluice on WSO2's current CAR in front of it, and a connection to Sluice.
pub async fn on_capp() -> (Backend, Sluice, Conn) {
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let c = Conn::open(s.addr).await;
    (be, s, c)
}

impl Conn {
    /// Posts `body` to `path` with `headers`: the answer (a failed exchange fails the test).
    pub async fn posted(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Reply {
        self.post(path, headers, body.into())
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    /// [`Conn::posted`] with [`SOAP_HEADERS`].
    pub async fn soap(&mut self, path: &str, body: impl Into<Bytes>) -> Reply {
        self.posted(path, SOAP_HEADERS, body).await
    }
}

impl Reply {
    /// The reply, once it is seen to have `status` (else the test fails, showing the body).
    #[track_caller]
    pub fn assert_status(self, status: u16) -> Reply {
        assert_eq!(self.status, status, "{}", self.text());
        self
    }
}

/// The `sluice` binary run with `args`, which must refuse to start (exit status 2): what it wrote
/// to stderr.
pub fn refused_start(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    err
}

/// [`refused_start`] for `sluice run` on the test config `config`, on any port, with `more`.
pub fn refused_run(config: &str, more: &[&str]) -> String {
    let config = test_config(config);
    let mut args = vec!["run", config.to_str().unwrap(), "--port", "0"];
    args.extend(more);
    refused_start(&args)
}
