//! The benchmark matrix: the echo back-end, Sluice on the WSO2 perf artifacts, and the peers (the
//! back-end direct, nginx and HAProxy as pass-through proxies), each measured under every combination of
//! users, message size and back-end delay in one run.

use crate::load::{self, Errors, LoadSpec, Observer};
use crate::payload;
use crate::procfs;
use crate::stats::Summary;
use serde::Serialize;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The WSO2 scenarios Sluice runs by default (`SecureProxy` and `SecureProxyFresh`,
/// [`crate::secure`], are asked for by name; the clone/aggregate and data-mapper scenarios need
/// later work).
pub const SCENARIOS: [&str; 7] = [
    "DirectProxy",
    "CBRProxy",
    "CBRSOAPHeaderProxy",
    "CBRTransportHeaderProxy",
    "XSLTProxy",
    "XSLTEnhancedProxy",
    "DirectAPI",
];

/// Where Sluice serves a scenario: a REST API under its context, a proxy under `/services/`.
pub fn sluice_path(scenario: &str) -> String {
    match scenario {
        "DirectAPI" => "/directApi".to_owned(),
        "SecureProxyFresh" => "/services/SecureProxy".to_owned(),
        s => format!("/services/{s}"),
    }
}

/// Peers measured beside Sluice, in table order.
pub const PEERS: [&str; 3] = ["direct", "haproxy", "nginx"];

#[derive(Clone, Debug)]
pub struct MatrixSpec {
    pub scenarios: Vec<String>,
    /// Subset of [`PEERS`]; those not installed are reported and skipped.
    pub peers: Vec<String>,
    pub users: Vec<usize>,
    pub sizes: Vec<usize>,
    pub delays_ms: Vec<u64>,
    pub warmup: Duration,
    pub duration: Duration,
    /// The `sluice` binary.
    pub sluice: PathBuf,
    /// Extra arguments for `sluice run` (`--workers=1`).
    pub sluice_args: Vec<String>,
    /// The artifacts Sluice serves (WSO2's capp folder); `RealService` is re-pointed at the echo.
    pub capp: PathBuf,
    /// `../shared/reference/wso2-perf`, for WSO2's own payload files.
    pub reference: Option<PathBuf>,
    /// Load generator threads.
    pub threads: usize,
    /// Echo back-end threads.
    pub echo_threads: usize,
    pub assert_contains: Option<String>,
    /// Also run wrk and the load generator side by side against the echo direct.
    pub wrk_compare: bool,
    /// Run the cells with a back-end delay for every target at once (they are latency-bound).
    pub concurrent_delayed: bool,
    pub progress: bool,
    /// Times each cell without a back-end delay is measured, the targets interleaved round by round
    /// (reversed every other round); the median round is reported (the machine's noise moves single
    /// cells by up to 25 %).
    pub rounds: usize,
    /// CPUs the proxies under test run on (`taskset -c`), the load generator and echo back-end on the
    /// others: WSO2's method (proxy, load and back-end on separate machines) on one machine. `None`: all
    /// share every CPU.
    pub pin: Option<Pinning>,
}

/// A split of the machine's CPUs between the proxy under test and the measuring side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pinning {
    /// CPU list for the proxies, in taskset's syntax (`0`, `0-1`, `0,2`).
    pub proxy: String,
    /// The remaining CPUs, for this process (load generator and echo back-end).
    pub bench: String,
    /// How many CPUs the proxies get (nginx's worker count).
    pub proxy_cpus: usize,
    /// How many the measuring side gets (its thread counts).
    pub bench_cpus: usize,
}

impl Pinning {
    /// Splits `0..cores` into the CPUs listed in `proxy` (`0`, `0-1`, `0,2`) and the rest; both sides
    /// must be non-empty.
    pub fn split(proxy: &str, cores: usize) -> Result<Pinning, String> {
        let mut mine = vec![false; cores];
        for part in proxy.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let parse = |x: &str| {
                x.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("bad CPU list '{proxy}' (want e.g. 0 or 0-1 or 0,2)"))
            };
            let (a, b) = (parse(a)?, parse(b)?);
            if a > b || b >= cores {
                return Err(format!(
                    "CPU list '{proxy}' is outside this machine's CPUs 0-{}",
                    cores - 1
                ));
            }
            mine[a..=b].iter_mut().for_each(|m| *m = true);
        }
        let list = |want: bool| {
            (0..cores)
                .filter(|&i| mine[i] == want)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
        };
        let (p, b) = (list(true), list(false));
        if b.is_empty() {
            return Err(format!(
                "CPU list '{proxy}' leaves no CPU for the load generator and echo back-end"
            ));
        }
        Ok(Pinning {
            proxy: p.join(","),
            bench: b.join(","),
            proxy_cpus: p.len(),
            bench_cpus: b.len(),
        })
    }

    /// Binds this process (every thread it has now, and so every thread it starts later) to the
    /// measuring side's CPUs.
    pub fn bind_self(&self) -> std::io::Result<()> {
        let st = Command::new("taskset")
            .args(["-a", "-p", "-c", &self.bench])
            .arg(std::process::id().to_string())
            .stdout(Stdio::null())
            .status()
            .map_err(|e| std::io::Error::other(format!("taskset (util-linux): {e}")))?;
        if st.success() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "taskset -a -p -c {} failed: {st}",
                self.bench
            )))
        }
    }
}

/// `program` as a command, started through `taskset -c <proxy CPUs>` when pinned (taskset execs it, so
/// the child's pid is the program's).
fn proxy_command(pin: Option<&Pinning>, program: impl AsRef<std::ffi::OsStr>) -> Command {
    match pin {
        Some(p) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &p.proxy]).arg(program);
            c
        }
        None => Command::new(program),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// `Sluice DirectProxy`, `Echo back-end direct`, `HAProxy 2.6`, ...
    pub target: String,
    /// The WSO2 scenario name, or the peer's key (direct, nginx, haproxy).
    pub scenario: String,
    pub users: usize,
    pub size: usize,
    pub delay_ms: u64,
    pub requests: u64,
    pub errors: Errors,
    pub error_pct: f64,
    pub throughput: f64,
    pub latency: Summary,
    /// Peak resident memory of the proxy's processes during the window (none for the direct row).
    pub peak_rss_mb: Option<f64>,
    /// The proxy's CPU time over the window divided by the requests completed in it.
    pub cpu_us_per_req: Option<f64>,
    /// With `--rounds` above 1: (throughput, CPU µs per request) of every round, in order; the row
    /// is the round with the median throughput.
    pub rounds: Vec<(f64, Option<f64>)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WrkRow {
    pub size: usize,
    pub users: usize,
    pub wrk_rps: Option<f64>,
    pub loadgen_rps: f64,
    pub loadgen_error_pct: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub date: String,
    pub machine: String,
    pub command: String,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub versions: Vec<(String, String)>,
    pub payloads: Vec<(usize, String)>,
    pub skipped: Vec<String>,
    /// Whether the delayed cells ran for every target at once.
    pub concurrent_delayed: bool,
    /// Rounds per cell without a back-end delay.
    pub rounds: usize,
    /// `(proxy CPUs, load and echo CPUs)` when pinned.
    pub pinned: Option<(String, String)>,
    pub rows: Vec<Row>,
    pub wrk: Vec<WrkRow>,
}

impl MatrixSpec {
    /// The defaults: the full matrix (users 100/200/500, 1 KiB and 10 KiB, delays 0 and 1000 ms, 10 s
    /// warm-up, 30 s measured, every scenario and peer, wrk comparison), or the quick one (10 users,
    /// 1 KiB, no delay, 0.5 s warm-up, 1.5 s measured, no wrk) that CI runs as a smoke test.
    pub fn defaults(
        quick: bool,
        sluice: PathBuf,
        capp: PathBuf,
        reference: Option<PathBuf>,
    ) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        MatrixSpec {
            scenarios: SCENARIOS.iter().map(|s| s.to_string()).collect(),
            peers: PEERS.iter().map(|s| s.to_string()).collect(),
            users: if quick { vec![10] } else { vec![100, 200, 500] },
            sizes: if quick { vec![1024] } else { vec![1024, 10240] },
            delays_ms: if quick { vec![0] } else { vec![0, 1000] },
            warmup: Duration::from_secs_f64(if quick { 0.5 } else { 10.0 }),
            duration: Duration::from_secs_f64(if quick { 1.5 } else { 30.0 }),
            sluice,
            sluice_args: Vec::new(),
            capp,
            reference,
            threads: cores,
            echo_threads: cores,
            assert_contains: Some("buyStocks".into()),
            wrk_compare: !quick,
            concurrent_delayed: true,
            progress: true,
            rounds: 1,
            pin: None,
        }
    }
}

/// A server under test: where to send requests and which processes to account.
pub(crate) struct Target {
    key: String,
    label: String,
    pub(crate) addr: SocketAddr,
    /// The path a peer is sent every scenario to (Sluice's depends on the scenario: [`sluice_path`]).
    path_prefix: String,
    child: Option<Child>,
}

impl Target {
    pub(crate) fn pids(&self) -> Vec<u32> {
        self.child
            .as_ref()
            .map(|c| procfs::tree(c.id()))
            .unwrap_or_default()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Samples the proxy's CPU time at the window's edges and its RSS at every tick.
struct ProcObserver {
    pids: Vec<u32>,
    cpu0: u64,
    cpu1: u64,
    peak_kib: u64,
}

impl Observer for ProcObserver {
    fn window_start(&mut self) {
        self.cpu0 = procfs::cpu_us(&self.pids);
        self.peak_kib = procfs::rss_kib(&self.pids);
    }
    fn tick(&mut self) {
        self.peak_kib = self.peak_kib.max(procfs::rss_kib(&self.pids));
    }
    fn window_end(&mut self) {
        self.cpu1 = procfs::cpu_us(&self.pids);
        self.tick();
    }
}

/// One cell of the matrix: a target, a scenario, the load.
struct Cell {
    target: usize,
    label: String,
    scenario: String,
    load: LoadSpec,
    pids: Vec<u32>,
}

/// Runs one cell. Returns its row (CPU per request not yet filled) and the proxy's CPU microseconds over
/// the measured window.
fn measure(c: &Cell, size: usize, delay: u64) -> std::io::Result<(Row, u64)> {
    let mut obs = ProcObserver {
        pids: c.pids.clone(),
        cpu0: 0,
        cpu1: 0,
        peak_kib: 0,
    };
    let r = load::run(&c.load, &mut obs)?;
    let accounted = !obs.pids.is_empty();
    Ok((
        Row {
            target: c.label.clone(),
            scenario: c.scenario.clone(),
            users: c.load.users,
            size,
            delay_ms: delay,
            requests: r.ok,
            error_pct: r.error_pct(),
            throughput: r.throughput(),
            latency: Summary::of(&r.latency_us),
            peak_rss_mb: accounted.then(|| obs.peak_kib as f64 / 1024.0),
            cpu_us_per_req: None,
            rounds: Vec::new(),
            errors: r.errors,
        },
        obs.cpu1.saturating_sub(obs.cpu0),
    ))
}

/// Cells measured at once on the same process (Sluice's scenarios) share its CPU time: each gets the
/// process's CPU over the window divided by all the requests the process served in it.
fn shared_cpu(group: &[Cell], out: Vec<(Row, u64)>) -> Vec<(Row, u64)> {
    let per_target = |t: usize| {
        let mine: Vec<&(Row, u64)> = group
            .iter()
            .zip(&out)
            .filter(|(c, _)| c.target == t)
            .map(|(_, o)| o)
            .collect();
        let reqs: u64 = mine.iter().map(|(r, _)| r.requests).sum();
        let cpu = mine.iter().map(|(_, c)| *c).sum::<u64>() / mine.len().max(1) as u64;
        (reqs > 0).then(|| cpu as f64 / reqs as f64)
    };
    group
        .iter()
        .zip(out.iter().cloned())
        .map(|(c, (mut row, cpu))| {
            if !c.pids.is_empty() {
                row.cpu_us_per_req = per_target(c.target);
            }
            (row, cpu)
        })
        .collect()
}

/// The order of a group's cells in round `round`: as listed in even rounds, reversed in odd ones
/// (A B, B A, A B, ...). No scenario always runs right after the same other one, and a drift of the
/// machine's speed across two rounds falls on every scenario alike instead of always on the later.
fn round_order(cells: usize, round: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cells).collect();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// The round with the median throughput (the lower middle one for an even count), carrying every
/// round's throughput and CPU when there was more than one.
fn median_round(mut runs: Vec<(Row, u64)>) -> (Row, u64) {
    let all: Vec<(f64, Option<f64>)> = runs
        .iter()
        .map(|(r, _)| (r.throughput, r.cpu_us_per_req))
        .collect();
    runs.sort_by(|a, b| a.0.throughput.total_cmp(&b.0.throughput));
    let mid = (runs.len() - 1) / 2;
    let (mut row, cpu) = runs.swap_remove(mid);
    if all.len() > 1 {
        row.rounds = all;
    }
    (row, cpu)
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits (bounded) until something accepts on `addr`.
fn wait_port(addr: SocketAddr, what: &str) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(std::io::Error::other(format!(
        "{what} did not start listening on {addr} within 10 s"
    )))
}

pub fn installed(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// `nginx -v` / `haproxy -v` / `wrk -v`: the first line naming a version.
fn version(cmd: &str) -> Option<String> {
    let o = Command::new(cmd).arg("-v").output().ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    text.lines().next().map(|l| l.trim().to_owned())
}

fn with_log(e: std::io::Error, log: &Path) -> std::io::Error {
    let log = std::fs::read_to_string(log).unwrap_or_default();
    std::io::Error::other(format!("{e}\n{log}"))
}

pub(crate) fn start_sluice(
    spec: &MatrixSpec,
    echo: SocketAddr,
    dir: &Path,
) -> std::io::Result<Target> {
    let log = std::fs::File::create(dir.join("sluice.log"))?;
    let mut child = proxy_command(spec.pin.as_ref(), &spec.sluice)
        .arg("run")
        .arg(&spec.capp)
        .args(["--host", "127.0.0.1", "--port", "0", "--endpoint"])
        .arg(format!("RealService=http://{echo}/services/EchoService"))
        .args(&spec.sluice_args)
        .env("SLUICE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .map_err(|e| {
            std::io::Error::other(format!("cannot start {}: {e}", spec.sluice.display()))
        })?;
    let out = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line)?;
    let addr = line
        .trim()
        .strip_prefix("sluice listening on http://")
        .and_then(|a| a.parse().ok());
    let Some(addr) = addr else {
        let _ = child.kill();
        let log = std::fs::read_to_string(dir.join("sluice.log")).unwrap_or_default();
        return Err(std::io::Error::other(format!(
            "sluice did not start: {line}{log}"
        )));
    };
    Ok(Target {
        key: "sluice".into(),
        label: "Sluice".into(),
        addr,
        path_prefix: "/services/".into(),
        child: Some(child),
    })
}

fn start_nginx(echo: SocketAddr, dir: &Path, pin: Option<&Pinning>) -> std::io::Result<Target> {
    let port = free_port()?;
    let d = dir.display();
    // `auto` counts the machine's CPUs, not the ones it is bound to.
    let workers = pin.map_or("auto".to_owned(), |p| p.proxy_cpus.to_string());
    let conf = format!(
        "worker_processes {workers};\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/nginx-error.log warn;\n\
         events {{ worker_connections 10000; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/nginx-body;\n  proxy_temp_path {d}/nginx-proxy;\n\
           upstream echo {{ server {echo}; keepalive 512; }}\n\
           server {{\n    listen 127.0.0.1:{port};\n    location / {{\n      proxy_pass http://echo/services/EchoService;\n\
                 proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n\
                 proxy_request_buffering off;\n      proxy_buffering off;\n    }}\n  }}\n}}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf)?;
    let child = proxy_command(pin, "nginx")
        .arg("-e")
        .arg(dir.join("nginx-error.log"))
        .arg("-c")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let t = Target {
        key: "nginx".into(),
        label: version("nginx")
            .and_then(|v| v.rsplit('/').next().map(|v| format!("nginx {v}")))
            .unwrap_or_else(|| "nginx".into()),
        addr,
        path_prefix: "/".into(),
        child: Some(child),
    };
    wait_port(addr, "nginx").map_err(|e| with_log(e, &dir.join("nginx-error.log")))?;
    Ok(t)
}

fn start_haproxy(echo: SocketAddr, dir: &Path, pin: Option<&Pinning>) -> std::io::Result<Target> {
    let port = free_port()?;
    let conf = format!(
        "global\n  maxconn 8000\ndefaults\n  mode http\n  timeout connect 10s\n  timeout client 120s\n  timeout server 120s\n\
         option http-keep-alive\nfrontend fe\n  bind 127.0.0.1:{port}\n  default_backend be\n\
         backend be\n  http-reuse always\n  http-request set-path /services/EchoService\n  server echo {echo}\n"
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, conf)?;
    // HAProxy starts one thread per CPU it is bound to.
    let child = proxy_command(pin, "haproxy")
        .arg("-f")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("haproxy.log"))?)
        .spawn()?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let label = version("haproxy")
        .and_then(|v| v.split_whitespace().nth(2).map(|v| format!("HAProxy {v}")))
        .unwrap_or_else(|| "HAProxy".into());
    let t = Target {
        key: "haproxy".into(),
        label,
        addr,
        path_prefix: "/".into(),
        child: Some(child),
    };
    wait_port(addr, "haproxy").map_err(|e| with_log(e, &dir.join("haproxy.log")))?;
    Ok(t)
}

/// The headers of WSO2's JMeter plan (ei-test.jmx), plus the back-end delay for the echo.
pub fn request_headers(delay_ms: u64) -> Vec<(String, String)> {
    let mut h = vec![
        ("Content-Type".to_owned(), "text/xml".to_owned()),
        ("SOAPAction".to_owned(), "urn:buyStocks".to_owned()),
        (
            "routing".to_owned(),
            "xadmin;server1;community#1.0##".to_owned(),
        ),
    ];
    if delay_ms > 0 {
        h.push((sluice_echo::DELAY_HEADER.to_owned(), delay_ms.to_string()));
    }
    h
}

/// Runs the whole matrix. `progress` lines go to stderr.
pub fn run(spec: &MatrixSpec, command: &str) -> std::io::Result<Report> {
    let dir = std::env::temp_dir().join(format!("sluice-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = run_in(spec, command, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(spec: &MatrixSpec, command: &str, dir: &Path) -> std::io::Result<Report> {
    let echo = sluice_echo::EchoServer::bind_and_start(
        "127.0.0.1:0".parse().expect("address"),
        spec.echo_threads,
        sluice_echo::EchoOptions::default(),
    )?;
    let echo_addr = echo.addr();
    let mut skipped = Vec::new();
    let mut versions = Vec::new();
    let mut targets: Vec<Target> = Vec::new();
    for p in &spec.peers {
        match p.as_str() {
            "direct" => targets.push(Target {
                key: "direct".into(),
                label: "Echo back-end direct".into(),
                addr: echo_addr,
                path_prefix: "/services/EchoService".into(),
                child: None,
            }),
            "nginx" | "haproxy" if !installed(p) => skipped.push(format!(
                "{p}: not installed (apt-get install -y {p}); its rows are missing"
            )),
            "nginx" => targets.push(start_nginx(echo_addr, dir, spec.pin.as_ref())?),
            "haproxy" => targets.push(start_haproxy(echo_addr, dir, spec.pin.as_ref())?),
            other => skipped.push(format!("{other}: unknown peer")),
        }
    }
    for t in &targets {
        if t.child.is_some() {
            versions.push((t.key.clone(), t.label.clone()));
        }
    }
    if !spec.scenarios.is_empty() {
        let s = start_sluice(&with_keys(spec, dir)?, echo_addr, dir)?;
        let v = Command::new(&spec.sluice)
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        versions.push(("sluice".into(), v));
        targets.push(s);
    }
    // (target index, scenario) in table order: peers first, then Sluice's scenarios.
    let mut cells: Vec<(usize, String)> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        if t.key == "sluice" {
            cells.extend(spec.scenarios.iter().map(|s| (i, s.clone())));
        } else {
            cells.push((i, t.key.clone()));
        }
    }
    let total = cells.len() * spec.sizes.len() * spec.delays_ms.len() * spec.users.len();
    let mut payloads = Vec::new();
    let mut rows = Vec::new();
    let mut n = 0;
    for &size in &spec.sizes {
        let (body, origin) = payload::for_size(size, spec.reference.as_deref());
        payloads.push((size, format!("{origin}, {} bytes", body.len())));
        for &delay in &spec.delays_ms {
            for &users in &spec.users {
                // With a back-end delay the cells are latency-bound (a few hundred requests a second, a
                // few % of a core): they run concurrently, every target at once, unless told otherwise.
                let concurrent = delay > 0 && spec.concurrent_delayed;
                let group = group_cells(spec, &targets, &cells, (&body, size), users, delay)?;
                let at = Progress {
                    n: &mut n,
                    total,
                    users,
                    size,
                    delay,
                };
                let measured = if concurrent {
                    measure_concurrent(spec, &group, at)?
                } else {
                    measure_rounds(spec, &group, at)?
                };
                rows.extend(measured.into_iter().map(|(r, _)| r));
            }
        }
    }
    let mut wrk = Vec::new();
    if spec.wrk_compare {
        if installed("wrk") {
            versions.push(("wrk".into(), version("wrk").unwrap_or_default()));
            let users = spec.users.first().copied().unwrap_or(100);
            for &size in &spec.sizes {
                let (body, _) = payload::for_size(size, spec.reference.as_deref());
                if spec.progress {
                    eprintln!(
                        "wrk vs load generator on the echo direct, {users} users, {}",
                        payload::size_label(size)
                    );
                }
                wrk.push(wrk_vs_loadgen(spec, echo_addr, &body, size, users, dir)?);
            }
        } else {
            skipped.push("wrk: not installed (apt-get install -y wrk); no comparison".into());
        }
    }
    drop(targets);
    echo.stop();
    Ok(Report {
        date: today(),
        machine: machine(),
        command: command.to_owned(),
        warmup_s: spec.warmup.as_secs_f64(),
        duration_s: spec.duration.as_secs_f64(),
        versions,
        payloads,
        skipped,
        concurrent_delayed: spec.concurrent_delayed,
        rounds: spec.rounds.max(1),
        pinned: spec
            .pin
            .as_ref()
            .map(|p| (p.proxy.clone(), p.bench.clone())),
        rows,
        wrk,
    })
}

/// `spec`, with WSO2's key store given to Sluice as `[keystore.primary]` when a secured scenario
/// needs it.
fn with_keys(spec: &MatrixSpec, dir: &Path) -> std::io::Result<MatrixSpec> {
    let mut with = spec.clone();
    if spec.scenarios.iter().any(|s| crate::secure::is_secure(s)) {
        let reference = spec.reference.as_deref().ok_or_else(|| {
            std::io::Error::other("the SecureProxy scenarios need ../shared/reference/wso2-perf")
        })?;
        let toml = crate::secure::settings(reference, dir)?;
        with.sluice_args.push("--config".into());
        with.sluice_args.push(toml.display().to_string());
    }
    Ok(with)
}

/// Where the matrix is, for the progress lines.
struct Progress<'a> {
    n: &'a mut usize,
    total: usize,
    users: usize,
    size: usize,
    delay: u64,
}

impl Progress<'_> {
    /// The start of a progress line: where the matrix is, `what` runs, and `more` after it.
    fn line(&self, what: &str, more: &str) -> String {
        let (n, total, users, delay) = (*self.n, self.total, self.users, self.delay);
        let size_l = payload::size_label(self.size);
        format!("[{n:>3}/{total}] {what}, {users} users, {size_l}, delay {delay} ms{more} ... ")
    }
}

/// One cell per (target, scenario) for this size, delay and user count.
fn group_cells(
    spec: &MatrixSpec,
    targets: &[Target],
    cells: &[(usize, String)],
    (body, size): (&str, usize),
    users: usize,
    delay: u64,
) -> std::io::Result<Vec<Cell>> {
    cells
        .iter()
        .map(|(ti, scenario)| {
            let t = &targets[*ti];
            // A secured scenario sends its own requests and gets encrypted answers.
            let (mut bodies, assert) = if t.key == "sluice" && crate::secure::is_secure(scenario) {
                let reference = spec.reference.as_deref().unwrap_or(Path::new("."));
                let b = crate::secure::bodies(scenario, size, reference)
                    .map_err(std::io::Error::other)?;
                (b, vec!["EncryptedData".to_owned()])
            } else {
                let assert = spec.assert_contains.iter().cloned().collect();
                (vec![body.as_bytes().to_vec()], assert)
            };
            let first = bodies.remove(0);
            Ok(Cell {
                target: *ti,
                label: if t.key == "sluice" {
                    format!("Sluice {scenario}")
                } else {
                    t.label.clone()
                },
                scenario: scenario.clone(),
                load: LoadSpec {
                    addr: t.addr,
                    path: if t.key == "sluice" {
                        sluice_path(scenario)
                    } else {
                        t.path_prefix.clone()
                    },
                    headers: request_headers(delay),
                    body: first,
                    more_bodies: bodies,
                    users,
                    warmup: spec.warmup,
                    duration: spec.duration,
                    timeout: Duration::from_secs(60) + Duration::from_millis(delay),
                    assert_contains: assert,
                    threads: spec.threads,
                    requests: None,
                },
                pids: t.pids(),
            })
        })
        .collect()
}

/// Each cell's row, and the CPU microseconds its target used over the measured window.
type Measured = std::io::Result<Vec<(Row, u64)>>;

/// Every cell of the group at once (latency-bound cells, a back-end delay).
fn measure_concurrent(spec: &MatrixSpec, group: &[Cell], at: Progress<'_>) -> Measured {
    *at.n += group.len();
    let (size, delay) = (at.size, at.delay);
    if spec.progress {
        eprint!(
            "{}",
            at.line(&format!("all {} targets at once", group.len()), "")
        );
        let _ = std::io::stderr().flush();
    }
    let out: Vec<std::io::Result<(Row, u64)>> = std::thread::scope(|sc| {
        let hs: Vec<_> = group
            .iter()
            .map(|c| sc.spawn(move || measure(c, size, delay)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a measuring thread panicked")))
            })
            .collect()
    });
    let out = out.into_iter().collect::<std::io::Result<Vec<_>>>()?;
    if spec.progress {
        let worst = out.iter().map(|(r, _)| r.error_pct).fold(0.0, f64::max);
        eprintln!("done, worst error rate {worst:.2} %");
    }
    Ok(shared_cpu(group, out))
}

/// Each cell alone, `rounds` times in a rotating order; the median round of each.
fn measure_rounds(spec: &MatrixSpec, group: &[Cell], at: Progress<'_>) -> Measured {
    let (size, delay) = (at.size, at.delay);
    let rounds = spec.rounds.max(1);
    let mut runs: Vec<Vec<(Row, u64)>> = vec![Vec::new(); group.len()];
    for round in 0..rounds {
        for k in round_order(group.len(), round) {
            let c = &group[k];
            if round == 0 {
                *at.n += 1;
            }
            if spec.progress {
                let r = if rounds > 1 {
                    format!(" (round {}/{rounds})", round + 1)
                } else {
                    String::new()
                };
                eprint!("{}", at.line(&c.label, &r));
                let _ = std::io::stderr().flush();
            }
            let (mut row, cpu) = measure(c, size, delay)?;
            row.cpu_us_per_req =
                (!c.pids.is_empty() && row.requests > 0).then(|| cpu as f64 / row.requests as f64);
            if spec.progress {
                eprintln!("{:.0} req/s, {:.2} % errors", row.throughput, row.error_pct);
            }
            runs[k].push((row, cpu));
        }
    }
    Ok(runs.into_iter().map(median_round).collect())
}

fn wrk_vs_loadgen(
    spec: &MatrixSpec,
    echo: SocketAddr,
    body: &str,
    size: usize,
    users: usize,
    dir: &Path,
) -> std::io::Result<WrkRow> {
    let body_path = dir.join(format!("body-{size}.xml"));
    std::fs::write(&body_path, body)?;
    let script = dir.join("post.lua");
    let mut lua = String::from("wrk.method = \"POST\"\n");
    lua.push_str(&format!(
        "local f = io.open(\"{}\", \"rb\"); wrk.body = f:read(\"*a\"); f:close()\n",
        body_path.display()
    ));
    for (k, v) in request_headers(0) {
        lua.push_str(&format!("wrk.headers[\"{k}\"] = \"{v}\"\n"));
    }
    std::fs::write(&script, lua)?;
    let url = format!("http://{echo}/services/EchoService");
    let secs = |d: Duration| format!("{}s", d.as_secs().max(1));
    let wrk = |d: Duration| {
        Command::new("wrk")
            .arg(format!("-t{}", spec.threads))
            .arg(format!("-c{users}"))
            .arg(format!("-d{}", secs(d)))
            .arg("-s")
            .arg(&script)
            .arg(&url)
            .output()
    };
    if !spec.warmup.is_zero() {
        wrk(spec.warmup)?;
    }
    let out = wrk(spec.duration)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let wrk_rps = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok());
    let r = load::run(
        &LoadSpec {
            addr: echo,
            path: "/services/EchoService".into(),
            headers: request_headers(0),
            body: body.as_bytes().to_vec(),
            more_bodies: Vec::new(),
            users,
            warmup: spec.warmup,
            duration: Duration::from_secs(spec.duration.as_secs().max(1)),
            timeout: Duration::from_secs(60),
            assert_contains: spec.assert_contains.iter().cloned().collect(),
            threads: spec.threads,
            requests: None,
        },
        &mut load::NoObserver,
    )?;
    Ok(WrkRow {
        size,
        users,
        wrk_rps,
        loadgen_rps: r.throughput(),
        loadgen_error_pct: r.error_pct(),
    })
}

fn today() -> String {
    Command::new("date")
        .args(["-u", "+%F %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    // The machine's CPUs, not this process's (it may be pinned to some of them).
    let cores = std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count())
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    format!("{cores} cores, {cpu}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_splits_the_cpus_in_two() {
        let p = Pinning::split("0", 2).unwrap();
        assert_eq!((p.proxy.as_str(), p.bench.as_str()), ("0", "1"));
        assert_eq!((p.proxy_cpus, p.bench_cpus), (1, 1));
        let p = Pinning::split("0-1,3", 6).unwrap();
        assert_eq!((p.proxy.as_str(), p.bench.as_str()), ("0,1,3", "2,4,5"));
        assert_eq!((p.proxy_cpus, p.bench_cpus), (3, 3));
        assert!(Pinning::split("0-1", 2).unwrap_err().contains("no CPU"));
        assert!(Pinning::split("2", 2).unwrap_err().contains("outside"));
        assert!(Pinning::split("1-0", 2).is_err());
        assert!(Pinning::split("x", 2).unwrap_err().contains("bad CPU list"));
    }

    #[test]
    fn proxies_are_under_services_and_the_api_under_its_context() {
        assert_eq!(sluice_path("CBRProxy"), "/services/CBRProxy");
        assert_eq!(sluice_path("DirectAPI"), "/directApi");
    }

    #[test]
    fn rounds_alternate_their_order() {
        assert_eq!(round_order(3, 0), [0, 1, 2]);
        assert_eq!(round_order(3, 1), [2, 1, 0]);
        assert_eq!(round_order(3, 2), [0, 1, 2]);
        assert!(round_order(0, 1).is_empty());
    }

    #[test]
    fn the_median_round_is_reported_with_every_round() {
        let row = |rps: f64, cpu: f64| Row {
            target: "t".into(),
            scenario: "s".into(),
            users: 1,
            size: 1024,
            delay_ms: 0,
            requests: 1,
            errors: Errors::default(),
            error_pct: 0.0,
            throughput: rps,
            latency: Summary::default(),
            peak_rss_mb: None,
            cpu_us_per_req: Some(cpu),
            rounds: Vec::new(),
        };
        let (r, cpu) = median_round(vec![
            (row(30.0, 3.0), 3),
            (row(10.0, 1.0), 1),
            (row(20.0, 2.0), 2),
        ]);
        assert_eq!((r.throughput, cpu), (20.0, 2));
        assert_eq!(
            r.rounds,
            [(30.0, Some(3.0)), (10.0, Some(1.0)), (20.0, Some(2.0))]
        );
        let (r, _) = median_round(vec![(row(10.0, 1.0), 1), (row(20.0, 2.0), 2)]);
        assert_eq!(r.throughput, 10.0);
        let (r, _) = median_round(vec![(row(5.0, 1.0), 1)]);
        assert!(r.rounds.is_empty());
    }
}
