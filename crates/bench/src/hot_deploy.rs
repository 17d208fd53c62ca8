//! `sluice-bench hot-deploy`: the hot-deployment run of issue 34. Sluice serves a folder holding
//! one proxy that sends to the echo back-end and answers with its version; a closed loop of users
//! ([`load::run`]) sends to it while the folder alternates between two versions of the proxy (the
//! second adds a header). Every answer must be one version's whole answer (the load's assertion),
//! every change must be deployed (counted in Sluice's log), and the process's descriptors and RSS
//! are sampled before the first change and after the last.

use crate::load::{self, Errors, LoadSpec, Observer};
use crate::procfs;
use crate::stress::fd_count;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
pub struct HotDeploySpec {
    pub sluice: PathBuf,
    pub users: usize,
    /// How many times the folder changes.
    pub changes: usize,
    /// Time between two changes (the watcher looks every second and deploys a change once it held
    /// still for a look: give it at least 3 s).
    pub every: Duration,
}

/// What came of it.
#[derive(Debug)]
pub struct HotDeployResult {
    pub ok: u64,
    pub errors: Errors,
    pub throughput: f64,
    pub p99_ms: f64,
    /// Reloads Sluice reported done, and refused.
    pub reloaded: usize,
    pub refused: usize,
    /// Open descriptors and RSS (KiB) under load at the first change, under load at the end
    /// (after the last change was served), and after 2 s without load.
    pub fds: (usize, usize, usize),
    pub rss_kib: (u64, u64, u64),
}

/// The proxy, version 1 or 2: it sends to the echo back-end and answers `<v>N</v>`; version 2
/// adds a header.
fn version(n: u32, echo: SocketAddr) -> String {
    let header = if n == 2 {
        r#"<header name="X-Added" scope="transport" value="2"/>"#
    } else {
        ""
    };
    format!(
        r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <proxy name="Versioned" transports="http">
    <target>
      <inSequence>
        <send><endpoint><address uri="http://{echo}/service/EchoService"/></endpoint></send>
      </inSequence>
      <outSequence>
        {header}
        <payloadFactory media-type="xml"><format><v xmlns="">{n}</v></format><args/></payloadFactory>
        <send/>
      </outSequence>
    </target>
  </proxy>
</definitions>"#
    )
}

/// Writes version `n` over the configuration, through a new file moved in place.
fn deploy(dir: &Path, n: u32, echo: SocketAddr) -> std::io::Result<()> {
    let tmp = dir.join(".synapse.xml.new");
    std::fs::write(&tmp, version(n, echo))?;
    std::fs::rename(&tmp, dir.join("synapse.xml"))
}

/// Sluice on `dir/synapse.xml`, its log in `dir/sluice.log`.
fn start(sluice: &Path, dir: &Path) -> std::io::Result<(Child, SocketAddr)> {
    let log = std::fs::File::create(dir.join("sluice.log"))?;
    let mut child = Command::new(sluice)
        .arg("run")
        .arg(dir.join("synapse.xml"))
        .args(["--host", "127.0.0.1", "--port", "0", "--internal-port", "0"])
        .args(["--internal-https-port", "0"])
        .env("SLUICE_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()?;
    let out = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no stdout"))?;
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line)?;
    let addr = line
        .trim()
        .strip_prefix("sluice listening on http://")
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("sluice said {line:?}")))?;
    Ok((child, addr))
}

/// Changes the folder every `every` inside the measured window, and samples the process at the
/// first change and after the last.
struct Changer {
    dir: PathBuf,
    echo: SocketAddr,
    pid: u32,
    every: Duration,
    left: usize,
    next: Option<Instant>,
    version: u32,
    /// (descriptors, RSS KiB) under load when the first change is made, and at the window's end.
    before: Option<(usize, u64)>,
    end: Option<(usize, u64)>,
}

impl Changer {
    fn sample(&self) -> (usize, u64) {
        (fd_count(self.pid), procfs::rss_kib(&[self.pid]))
    }
}

impl Observer for Changer {
    fn window_start(&mut self) {
        self.before = Some(self.sample());
        self.next = Some(Instant::now());
    }

    fn tick(&mut self) {
        let Some(at) = self.next else { return };
        if self.left == 0 || Instant::now() < at {
            return;
        }
        self.version = 3 - self.version;
        if let Err(e) = deploy(&self.dir, self.version, self.echo) {
            eprintln!("hot-deploy: cannot write the folder: {e}");
        }
        self.left -= 1;
        self.next = Some(at + self.every);
    }

    fn window_end(&mut self) {
        self.end = Some(self.sample());
    }
}

/// Runs it; Sluice is stopped at the end.
pub fn run(spec: &HotDeploySpec) -> std::io::Result<HotDeployResult> {
    let dir = std::env::temp_dir().join(format!("sluice-hot-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let echo = crate::stress::echo()?;
    deploy(&dir, 1, echo.addr())?;
    let (mut child, addr) = start(&spec.sluice, &dir)?;
    let mut changer = Changer {
        dir: dir.clone(),
        echo: echo.addr(),
        pid: child.id(),
        every: spec.every,
        left: spec.changes,
        next: None,
        version: 1,
        before: None,
        end: None,
    };
    let load = LoadSpec {
        addr,
        path: "/services/Versioned".into(),
        headers: vec![("Content-Type".into(), "text/xml".into())],
        body: b"<buyStocks><order><symbol>IBM</symbol></order></buyStocks>".to_vec(),
        more_bodies: Vec::new(),
        users: spec.users,
        warmup: Duration::from_secs(2),
        // The last change, then time for it to be deployed and served.
        duration: spec.every * u32::try_from(spec.changes).unwrap_or(u32::MAX)
            + Duration::from_secs(4),
        timeout: Duration::from_secs(10),
        assert_contains: vec![">1</v>".into(), ">2</v>".into()],
        threads: cores,
        requests: None,
    };
    let result = load::run(&load, &mut changer);
    // Idle a moment: what a reload leaves behind should be gone.
    std::thread::sleep(Duration::from_secs(2));
    let after = changer.sample();
    let _ = child.kill();
    let _ = child.wait();
    echo.stop();
    let log = std::fs::read_to_string(dir.join("sluice.log")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let r = result?;
    let before = changer.before.unwrap_or_default();
    let end = changer.end.unwrap_or_default();
    Ok(HotDeployResult {
        ok: r.ok,
        throughput: r.throughput(),
        p99_ms: r.latency_us.value_at_quantile(0.99) as f64 / 1000.0,
        errors: r.errors,
        reloaded: log.matches("reloaded in").count(),
        refused: log.matches("reload refused").count(),
        fds: (before.0, end.0, after.0),
        rss_kib: (before.1, end.1, after.1),
    })
}

/// The result as a Markdown table.
pub fn table(spec: &HotDeploySpec, r: &HotDeployResult) -> String {
    let mb = |k: u64| k as f64 / 1024.0;
    format!(
        "| Users | Changes | Reloaded | Refused | Requests | Errors | req/s | p99 ms | fds first change / end / idle | RSS MB first change / end / idle |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n\
         | {} | {} | {} | {} | {} | {} ({:?}) | {:.0} | {:.1} | {} / {} / {} | {:.1} / {:.1} / {:.1} |\n",
        spec.users,
        spec.changes,
        r.reloaded,
        r.refused,
        r.ok,
        r.errors.total(),
        r.errors,
        r.throughput,
        r.p99_ms,
        r.fds.0,
        r.fds.1,
        r.fds.2,
        mb(r.rss_kib.0),
        mb(r.rss_kib.1),
        mb(r.rss_kib.2),
    )
}
