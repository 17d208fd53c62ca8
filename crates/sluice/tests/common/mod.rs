//! Shared harness for the integration tests: the real `sluice` binary as a child process, a capturing
//! back-end, and a plain HTTP/1.1 client on real sockets.
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
pub mod setup;
pub mod suite;

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `xml` written as `synapse.xml` in a folder of the temporary directory named for `name` and this
/// process: the path of the file (its folder is the caller's to remove).
pub fn synapse_xml(name: &str, xml: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("synapse.xml");
    std::fs::write(&config, xml).unwrap();
    config
}

pub fn reference() -> PathBuf {
    let p = workspace_root().join("../shared/reference/wso2-perf");
    assert!(
        p.is_dir(),
        "the WSO2 reference artifacts must be at {} (shared/ beside the repository)",
        p.display()
    );
    p
}

pub fn capp() -> PathBuf {
    reference().join("performance-ei/capp")
}

/// A settings file (MI's `deployment.toml`) in a folder of its own named after `test`, naming
/// WSO2's `wso2carbon.jks` as `[keystore.primary]` with `password` (store and key).
pub fn keystore_settings(test: &str, password: &str) -> PathBuf {
    let jks = reference().join("keystores/wso2carbon.jks");
    let dir = std::env::temp_dir().join(format!("sluice-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let toml = dir.join("deployment.toml");
    std::fs::write(
        &toml,
        format!(
            "[keystore.primary]\nfile_name = \"{}\"\npassword = \"{password}\"\nalias = \"wso2carbon\"\nkey_password = \"{password}\"\n",
            jks.display()
        ),
    )
    .unwrap();
    toml
}

/// A request of WSO2's performance tests by its path under `requests/`.
pub fn request_file(rel: &str) -> Bytes {
    Bytes::from(std::fs::read(reference().join("performance-ei/requests").join(rel)).unwrap())
}

pub fn payload(name: &str) -> Bytes {
    Bytes::from(
        std::fs::read(
            reference()
                .join("performance-ei/requests/current")
                .join(name),
        )
        .unwrap(),
    )
}

pub fn test_config(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/configs")
        .join(name)
}

/// A running `sluice` process; killed on drop.
pub struct Sluice {
    pub child: Child,
    pub addr: SocketAddr,
    /// What Sluice wrote to stderr so far, appended line by line by a reader thread.
    pub stderr: Arc<(Mutex<String>, Condvar)>,
    /// The lines Sluice writes to stdout after the first.
    pub stdout: Mutex<std::sync::mpsc::Receiver<String>>,
    health: std::sync::OnceLock<SocketAddr>,
    management_tls: std::sync::OnceLock<SocketAddr>,
}

impl Sluice {
    /// Sluice on the `failures` test config, its `Backend` endpoint pointed at `backend`
    /// (`host:port`).
    pub fn failures_config(backend: impl std::fmt::Display) -> Sluice {
        Sluice::failures_endpoint("Backend", backend)
    }

    /// Sluice on the `failures` test config, its endpoint `name` pointed at `backend`.
    pub fn failures_endpoint(name: &str, backend: impl std::fmt::Display) -> Sluice {
        Sluice::with_endpoints("failures", &[format!("{name}=http://{backend}/service")])
    }

    /// Sluice on a test config with endpoints re-pointed (`NAME=URL` each).
    pub fn with_endpoints(config: &str, endpoints: &[String]) -> Sluice {
        let config = test_config(config);
        let mut args = vec!["run", config.to_str().unwrap()];
        for e in endpoints {
            args.extend(["--endpoint", e.as_str()]);
        }
        Sluice::start(&args)
    }

    pub fn start(args: &[&str]) -> Sluice {
        Sluice::start_logging(args, "info")
    }

    /// `sluice run CONFIG --home HOME` (SYNAPSE_HOME: where a configuration's relative files are).
    pub fn run_at_home(config: &std::path::Path, home: &std::path::Path) -> Sluice {
        let (config, home) = (config.to_str().unwrap(), home.to_str().unwrap());
        Sluice::start(&["run", config, "--home", home])
    }

    /// Sluice with `filter` as its `SLUICE_LOG` (e.g. `info,sluice::log=trace`).
    pub fn start_logging(args: &[&str], filter: &str) -> Sluice {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(args)
            .args(["--port", "0", "--host", "127.0.0.1"])
            // The health probes on a free port too (MI's 9201 would be shared by every test).
            .args(["--internal-port", "0", "--internal-https-port", "0"])
            .env("SLUICE_LOG", filter)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sluice");
        let stderr = Arc::new((Mutex::new(String::new()), Condvar::new()));
        let err_pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err_pipe).lines().map_while(Result::ok) {
                let (text, grew) = &*sink;
                let mut s = text.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
                grew.notify_all();
            }
        });
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let line = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(l) => l,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "sluice did not report listening; stderr:\n{}",
                    stderr.0.lock().unwrap()
                );
            }
        };
        let addr = line
            .strip_prefix("sluice listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        Sluice {
            addr: addr.parse().unwrap(),
            child,
            stderr,
            stdout: Mutex::new(rx),
            health: std::sync::OnceLock::new(),
            management_tls: std::sync::OnceLock::new(),
        }
    }

    /// Where the health probes listen (the `sluice health on` line).
    pub fn health_addr(&self) -> SocketAddr {
        *self
            .health
            .get_or_init(|| self.printed("sluice health on http://"))
    }

    /// Where the internal API listens over TLS (the `sluice management on` line, after the health
    /// one).
    pub fn management_tls_addr(&self) -> SocketAddr {
        self.health_addr();
        *self
            .management_tls
            .get_or_init(|| self.printed("sluice management on https://"))
    }

    /// The address of the next stdout line that starts with `prefix` (the lines before it are
    /// passed over).
    /// Where the https listener listens (the line after the http one; ask before the others).
    pub fn https_addr(&self) -> SocketAddr {
        self.printed("sluice listening on https://")
    }

    fn printed(&self, prefix: &str) -> SocketAddr {
        let rx = self.stdout.lock().unwrap();
        loop {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no line {prefix}ADDR"));
            if let Some(a) = line.strip_prefix(prefix) {
                return a.parse().unwrap();
            }
        }
    }

    /// Sluice on a conformance suite's `synapse/` folder, each endpoint named in `endpoints`
    /// re-pointed at `backend` (`http://BACKEND/backend`, as the suites' cases expect).
    pub fn on_suite(
        dir: &std::path::Path,
        endpoints: &[String],
        backend: SocketAddr,
        log_filter: &str,
    ) -> Sluice {
        let mut args = vec![
            "run".to_owned(),
            dir.join("synapse").to_str().unwrap().to_owned(),
        ];
        for e in endpoints {
            args.push("--endpoint".into());
            args.push(format!("{e}=http://{backend}/backend"));
        }
        // A suite's server settings (MI's deployment.toml), when it has them.
        let settings = dir.join("deployment.toml");
        if settings.is_file() {
            args.push("--config".into());
            args.push(settings.to_str().unwrap().to_owned());
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        Sluice::start_logging(&argv, log_filter)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM: in-flight requests finish, then the process exits.
    pub fn terminate(&self) {
        let kill = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
    }

    pub fn stderr(&self) -> String {
        self.stderr.0.lock().unwrap().clone()
    }

    /// Sluice's stderr once it holds `needle`, or as it is after `within`. Lines reach
    /// [`Sluice::stderr`] through a reader thread, so one written just before a response (or just
    /// after the listening line) may not be there yet when the test looks.
    pub fn stderr_with(&self, needle: &str, within: Duration) -> String {
        self.stderr_until(within, |s| s.contains(needle))
    }

    /// Sluice's stderr once `done` holds for it, or as it is after `within`.
    pub fn stderr_until(&self, within: Duration, mut done: impl FnMut(&str) -> bool) -> String {
        let (text, grew) = &*self.stderr;
        let s = text.lock().unwrap();
        let (s, _) = grew.wait_timeout_while(s, within, |s| !done(s)).unwrap();
        s.clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Open file descriptors of the process.
    pub fn fd_count(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// What each open descriptor is (for failure messages).
    pub fn fd_listing(&self) -> String {
        let mut out = String::new();
        if let Ok(d) = std::fs::read_dir(format!("/proc/{}/fd", self.pid())) {
            for e in d.filter_map(Result::ok) {
                let target = std::fs::read_link(e.path())
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{} -> {}\n",
                    e.file_name().to_string_lossy(),
                    target
                ));
            }
        }
        if let Ok(tcp) = std::fs::read_to_string(format!("/proc/{}/net/tcp", self.pid())) {
            out.push_str(&tcp);
        }
        out
    }

    /// A field of /proc/PID/status in kB (VmRSS, VmHWM).
    pub fn status_kb(&self, field: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        s.lines()
            .find_map(|l| {
                l.strip_prefix(field).and_then(|r| {
                    r.trim_start_matches(':')
                        .split_whitespace()
                        .next()?
                        .parse()
                        .ok()
                })
            })
            .unwrap_or(0)
    }

    /// Waits (bounded) until the fd count is at most `n`; returns the last count seen.
    /// Waits (up to `limit`) for Sluice's descriptors to come back to `baseline`, and fails the
    /// test, listing them, when they do not.
    pub fn assert_fds_back_to(&self, baseline: usize, limit: Duration) {
        let fds = self.wait_fds_at_most(baseline, limit);
        assert!(
            fds <= baseline,
            "descriptors: {fds}, not back to {baseline}:\n{}",
            self.fd_listing()
        );
    }

    pub fn wait_fds_at_most(&self, n: usize, limit: Duration) -> usize {
        let start = Instant::now();
        loop {
            let c = self.fd_count();
            if c <= n || start.elapsed() > limit {
                return c;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Sluice {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the capturing back-end saw of one request.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// The request target as the request line had it (absolute-form when so).
    pub target: String,
    /// The request line's version: `HTTP/1.1`, `HTTP/1.0`.
    pub version: String,
    pub headers: http::HeaderMap,
    /// The body, for requests of at most 1 MiB with a Content-Length (larger ones stream back).
    pub body: Option<Bytes>,
}

/// A back-end that records request heads and echoes the body (streaming) with its Content-Type.
/// Header `x-test-delay-ms` delays the answer; `x-test-status` is its status (200 without).
pub struct Backend {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Notified at each request recorded in `seen`.
    arrived: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Backend {
    /// Waits until the back-end has seen at least `n` requests in all, or `within` has passed
    /// (requests sent one-way may arrive after their client was answered); the number seen.
    /// The paths of the requests seen so far, in the order they came.
    pub fn paths(&self) -> Vec<String> {
        (self.seen.lock().unwrap().iter())
            .map(|x| x.path.clone())
            .collect()
    }

    pub async fn wait_seen(&self, n: usize, within: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.arrived.notified();
            let count = self.seen.lock().unwrap().len();
            if count >= n || tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.seen.lock().unwrap().len();
            }
        }
    }

    /// The body of the last request the back-end saw.
    pub fn last_body(&self) -> Bytes {
        let seen = self.seen.lock().unwrap();
        let last = seen.last().expect("the back-end saw no request");
        last.body.clone().expect("the last request had no body")
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn backend() -> Backend {
    backend_answering(Vec::new()).await
}

/// A canned answer of the capturing back-end (`conformance/stockquote.json`, as
/// `differential/echo.py` serves it): given to a request whose body holds every `match` string,
/// its `{name}`s filled with what `fill[name]`'s first group catches in the request.
#[derive(serde::Deserialize)]
pub struct Canned {
    #[serde(rename = "match")]
    pub matches: Vec<String>,
    #[serde(default = "ok")]
    pub status: u16,
    pub content_type: Option<String>,
    #[serde(default, deserialize_with = "patterns")]
    pub fill: Vec<(String, regex::Regex)>,
    #[serde(default)]
    pub body: String,
}

fn ok() -> u16 {
    200
}

/// A canned answer's `fill`, each pattern compiled once.
fn patterns<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, regex::Regex)>, D::Error> {
    let raw: std::collections::BTreeMap<String, String> = serde::Deserialize::deserialize(d)?;
    raw.into_iter()
        .map(|(name, p)| {
            Ok((
                name,
                regex::Regex::new(&p).map_err(serde::de::Error::custom)?,
            ))
        })
        .collect()
}

impl Canned {
    /// The canned answers of a file such as `conformance/stockquote.json`.
    pub fn load(path: &std::path::Path) -> Vec<Canned> {
        #[derive(serde::Deserialize)]
        struct File {
            answers: Vec<Canned>,
        }
        let text = std::fs::read_to_string(path).unwrap();
        let file: File = serde_json::from_str(&text).unwrap();
        file.answers
    }

    /// (status, Content-Type, body) of the first of `answers` that `request` matches.
    fn pick<'a>(answers: &'a [Canned], request: &[u8]) -> Option<(u16, Option<&'a str>, String)> {
        let text = String::from_utf8_lossy(request);
        let a = answers
            .iter()
            .find(|a| a.matches.iter().all(|m| text.contains(m.as_str())))?;
        let mut body = a.body.clone();
        for (name, re) in &a.fill {
            let caught = re
                .captures(&text)
                .and_then(|c| c.get(1))
                .map_or("", |m| m.as_str());
            body = body.replace(&format!("{{{name}}}"), caught);
        }
        Some((a.status, a.content_type.as_deref(), body))
    }
}

/// [`backend`], answering the requests one of `answers` matches with it instead of an echo.
pub async fn backend_answering(answers: Vec<Canned>) -> Backend {
    let answers = Arc::new(answers);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let arrived = Arc::new(tokio::sync::Notify::new());
    let (seen2, arrived2) = (seen.clone(), arrived.clone());
    let task = tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else {
                continue;
            };
            let _ = s.set_nodelay(true);
            let (seen, arrived) = (seen2.clone(), arrived2.clone());
            let answers = answers.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    let (seen, arrived) = (seen.clone(), arrived.clone());
                    let answers = answers.clone();
                    async move {
                        // A back-end with canned answers reads every body: they answer by it.
                        let small = !answers.is_empty()
                            || req
                                .headers()
                                .get("content-length")
                                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                                .is_some_and(|n| n <= 1 << 20);
                        let (parts, body) = req.into_parts();
                        let mut record = Seen {
                            method: parts.method.to_string(),
                            path: parts.uri.path().to_owned(),
                            query: parts.uri.query().map(str::to_owned),
                            target: parts.uri.to_string(),
                            version: format!("{:?}", parts.version),
                            headers: parts.headers.clone(),
                            body: None,
                        };
                        let reply = if small {
                            let bytes = body
                                .collect()
                                .await
                                .map(|c| c.to_bytes())
                                .unwrap_or_default();
                            record.body = Some(bytes.clone());
                            http_body_util::Either::Left(Full::new(bytes))
                        } else {
                            http_body_util::Either::Right(body)
                        };
                        let canned = record.body.as_ref().and_then(|b| Canned::pick(&answers, b));
                        seen.lock().unwrap().push(record);
                        arrived.notify_waiters();
                        if let Some(ms) = parts
                            .headers
                            .get("x-test-delay-ms")
                            .and_then(|v| v.to_str().ok()?.parse().ok())
                        {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                        }
                        if let Some((status, ctype, text)) = canned {
                            let mut b = Response::builder().status(status);
                            if let Some(ct) = ctype {
                                b = b.header("content-type", ct);
                            }
                            let body = http_body_util::Either::Left(Full::new(Bytes::from(text)));
                            return Ok(b.body(body).unwrap());
                        }
                        let status = (parts.headers.get("x-test-status"))
                            .and_then(|v| v.to_str().ok()?.parse::<u16>().ok())
                            .unwrap_or(200);
                        let mut b = Response::builder().status(status);
                        if let Some(ct) = parts.headers.get("content-type") {
                            b = b.header("content-type", ct.clone());
                        }
                        if let Some(cl) = parts.headers.get("content-length") {
                            b = b.header("content-length", cl.clone());
                        }
                        Ok::<_, std::convert::Infallible>(b.body(reply).unwrap())
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    Backend {
        addr,
        seen,
        arrived,
        task,
    }
}

/// A back-end on raw TCP that reads a request head and then does `f` with the socket.
pub async fn raw_backend<F, Fut>(f: F) -> (SocketAddr, tokio::task::JoinHandle<()>)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let f = Arc::new(f);
    let h = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                continue;
            };
            let f = f.clone();
            tokio::spawn(async move {
                use tokio::io::AsyncReadExt;
                let mut buf = vec![0u8; 65536];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                f(s).await;
            });
        }
    });
    (addr, h)
}

/// A port nothing listens on: one below 1024 that refuses a connection now. A port the system hands
/// out for `bind(0)` and gives back is no good: tests running at the same time bind their back-ends
/// the same way and can get it next, so a "down" endpoint would reach another test's back-end.
pub fn closed_port() -> u16 {
    (1..1024)
        .find(|p| {
            std::net::TcpStream::connect(("127.0.0.1", *p))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
        })
        .expect("a port below 1024 that refuses connections")
}

/// One keep-alive client connection.
pub struct Conn {
    send: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    pub host: String,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).await.unwrap();
        let _ = s.set_nodelay(true);
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s))
            .await
            .unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Conn {
            send,
            host: addr.to_string(),
        }
    }

    pub async fn post(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, String> {
        self.send_with("POST", path, headers, body).await
    }

    /// A request with any method (a GET with an empty body sends no Content-Length).
    pub async fn send_with(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, String> {
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.host);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        self.request(b.body(Full::new(body)).unwrap()).await
    }

    pub async fn get(&mut self, path: &str) -> Result<Reply, String> {
        let req = Request::builder()
            .method("GET")
            .uri(path)
            .header("host", &self.host)
            .body(Full::new(Bytes::new()))
            .unwrap();
        self.request(req).await
    }

    async fn request(&mut self, req: Request<Full<Bytes>>) -> Result<Reply, String> {
        self.send.ready().await.map_err(|e| e.to_string())?;
        let resp = self
            .send
            .send_request(req)
            .await
            .map_err(|e| e.to_string())?;
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        Ok(Reply {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        })
    }
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

pub const SOAP_HEADERS: &[(&str, &str)] = &[
    ("content-type", "text/xml; charset=UTF-8"),
    ("soapaction", "urn:buyStocks"),
];

/// `GET path` on the management API of `s` as MI's default admin (from loopback): the JSON answer.
pub async fn management_get(s: &Sluice, path: &str) -> serde_json::Value {
    management_call(s, "GET", path, Bytes::new()).await
}

/// `method path` with a JSON `body` on the management API of `s`, as [`management_get`].
pub async fn management_call(
    s: &Sluice,
    method: &str,
    path: &str,
    body: Bytes,
) -> serde_json::Value {
    let mut c = Conn::open(s.health_addr()).await;
    let basic = [("authorization", "Basic YWRtaW46YWRtaW4=")];
    let login = c
        .send_with("GET", "/management/login", &basic, Bytes::new())
        .await
        .unwrap();
    let token: serde_json::Value = serde_json::from_slice(&login.body).unwrap();
    let bearer = format!("Bearer {}", token["AccessToken"].as_str().unwrap());
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    let r = c.send_with(method, path, &headers, body).await.unwrap();
    serde_json::from_slice(&r.body).unwrap()
}
