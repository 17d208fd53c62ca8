//! `sluice-bench stress`: the resource figures of issue 30, against a Sluice this command starts on
//! the WSO2 artifacts (as the matrix does: [`crate::matrix`]) with the echo back-end in this process.
//! Each scenario gets a fresh Sluice and reports its peak RSS and open descriptors, the errors by
//! kind, and what stays resident after idling:
//!
//! - a: many keep-alive connections, each sends one DirectProxy request and holds the connection;
//!   then all close and RSS and descriptors are sampled each second.
//! - b: a closed loop of users with a back-end delay (load::run).
//! - c: slow bodies: clients trickle a DirectProxy body a byte at a time; when each got its
//!   answer, how many back-end connections Sluice holds, and a normal request's latency meanwhile.
//! - d: one large body to a proxy that reads it (CBRProxy), with Content-Length and chunked.
//!
//! The clients are in `stress_client`.

use crate::load::{self, LoadSpec};
use crate::matrix::{self, MatrixSpec};
use crate::payload;
use crate::procfs;
use crate::stress_client::{self as client, Kinds, SlowEnd};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
pub struct StressSpec {
    pub sluice: PathBuf,
    pub sluice_args: Vec<String>,
    pub capp: PathBuf,
    pub reference: Option<PathBuf>,
    /// Scenarios among a, b, c, d.
    pub only: Vec<char>,
    /// Seconds of idling sampled after a scenario (each second).
    pub idle: Duration,
    /// a: connections, and how long they are held after the last answer.
    pub conns: usize,
    pub hold: Duration,
    /// b: users, body size, back-end delay, measured time.
    pub users: usize,
    pub size: usize,
    pub delay_ms: u64,
    pub duration: Duration,
    /// c: clients, their Content-Length, the gaps between bytes (spread from `gap_min` to
    /// `gap_max` over the clients), the longest the scenario runs.
    pub slow_clients: usize,
    pub slow_length: usize,
    pub gap_min: Duration,
    pub gap_max: Duration,
    pub slow_max: Duration,
    /// d: the body's size in MiB and the longest one request may take.
    pub large_mib: usize,
    pub large_max: Duration,
}

impl StressSpec {
    /// The figures: 10,000 connections, 500 users x 10 KiB x 1 s for 15 s, 200 slow
    /// clients of 1,000 bytes at one byte every 2-5 s for at most 60 s, 200 MiB bodies.
    pub fn defaults(sluice: PathBuf, capp: PathBuf, reference: Option<PathBuf>) -> Self {
        StressSpec {
            sluice,
            sluice_args: Vec::new(),
            capp,
            reference,
            only: vec!['a', 'b', 'c', 'd'],
            idle: Duration::from_secs(10),
            conns: 10_000,
            hold: Duration::from_secs(5),
            users: 500,
            size: 10_240,
            delay_ms: 1000,
            duration: Duration::from_secs(15),
            slow_clients: 200,
            slow_length: 1000,
            gap_min: Duration::from_secs(2),
            gap_max: Duration::from_secs(5),
            slow_max: Duration::from_secs(60),
            large_mib: 200,
            large_max: Duration::from_secs(60),
        }
    }
}

/// One scenario's line in the summary table, and its details.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub scenario: String,
    pub result: String,
    pub errors: String,
    pub start_rss_kib: u64,
    pub peak_rss_kib: u64,
    pub peak_fds: usize,
    /// RSS and descriptors sampled each second while idle after the scenario, from its end.
    pub idle: Vec<Sample>,
    pub goal: String,
    /// Markdown with the scenario's details.
    pub detail: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub rss_kib: u64,
    pub fds: usize,
    /// Sluice's established connections to the echo back-end.
    pub echo_conns: usize,
}

/// Open descriptors of a process (0 when it is gone).
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// The process's established TCP connections to `port` on this machine: its socket inodes
/// (/proc/<pid>/fd) matched with the rows of /proc/<pid>/net/tcp whose remote port is `port`.
pub fn established_to(pid: u32, port: u16) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let inodes: std::collections::HashSet<String> = fds
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
                .map(str::to_owned)
        })
        .collect();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    count_established(&table, port, &inodes)
}

fn count_established(table: &str, port: u16, inodes: &std::collections::HashSet<String>) -> usize {
    let want = format!("{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 9
                && f[3] == "01"
                && f[2].rsplit(':').next() == Some(want.as_str())
                && inodes.contains(f[9])
        })
        .count()
}

/// The process's peak resident set so far (VmHWM), in KiB: with a fresh Sluice per scenario, the
/// scenario's peak, however briefly it lasted.
pub fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// RSS, descriptors and, with `echo_port`, the connections to the echo back-end.
fn sample(pid: u32, echo_port: Option<u16>) -> Sample {
    Sample {
        rss_kib: procfs::rss_kib(&[pid]),
        fds: fd_count(pid),
        echo_conns: echo_port.map_or(0, |p| established_to(pid, p)),
    }
}

/// Samples a process every 100 ms on its own thread, keeping the peaks, until stopped (or 30
/// minutes at most). Connections to the echo are counted only when asked (with thousands of
/// descriptors, reading every link costs a good part of a core).
struct Sampler {
    pid: u32,
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Sample>,
}

impl Sampler {
    fn start(pid: u32, echo_port: Option<u16>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(1800);
            let mut peak = Sample::default();
            while !flag.load(Ordering::Relaxed) && Instant::now() < end {
                let s = sample(pid, echo_port);
                peak.rss_kib = peak.rss_kib.max(s.rss_kib);
                peak.fds = peak.fds.max(s.fds);
                peak.echo_conns = peak.echo_conns.max(s.echo_conns);
                std::thread::sleep(Duration::from_millis(100));
            }
            peak
        });
        Sampler { pid, stop, handle }
    }

    /// The peaks: descriptors and connections as sampled, RSS the process's own high-water mark.
    fn finish(self) -> Sample {
        self.stop.store(true, Ordering::Relaxed);
        let mut peak = self.handle.join().unwrap_or_default();
        peak.rss_kib = peak.rss_kib.max(peak_rss_kib(self.pid));
        peak
    }
}

/// A sample at once and then each second for `idle`.
fn idle_series(pid: u32, echo_port: u16, idle: Duration) -> Vec<Sample> {
    let start = Instant::now();
    let mut out = vec![sample(pid, Some(echo_port))];
    for i in 1..=idle.as_secs() {
        let at = start + Duration::from_secs(i);
        if let Some(d) = at.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
        out.push(sample(pid, Some(echo_port)));
    }
    out
}

/// The echo back-end and a fresh Sluice serving the WSO2 artifacts with RealService pointed at it.
struct Rig {
    echo: sluice_echo::EchoServer,
    sluice: matrix::Target,
    pid: u32,
    dir: PathBuf,
}

impl Rig {
    fn start(spec: &StressSpec, dir: &Path) -> std::io::Result<Rig> {
        let echo = echo()?;
        let mut m = MatrixSpec::defaults(
            false,
            spec.sluice.clone(),
            spec.capp.clone(),
            spec.reference.clone(),
        );
        m.sluice_args = spec.sluice_args.clone();
        let sluice = matrix::start_sluice(&m, echo.addr(), dir)?;
        let pid = *sluice
            .pids()
            .first()
            .ok_or_else(|| std::io::Error::other("sluice started but has no process id"))?;
        Ok(Rig {
            echo,
            sluice,
            pid,
            dir: dir.to_owned(),
        })
    }

    fn addr(&self) -> SocketAddr {
        self.sluice.addr
    }

    fn echo_port(&self) -> u16 {
        self.echo.addr().port()
    }

    fn sample(&self) -> Sample {
        sample(self.pid, None)
    }

    /// The last lines of Sluice's log, for a scenario that went wrong.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("sluice.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    }
}

/// The echo back-end on loopback, a thread per core.
pub fn echo() -> std::io::Result<sluice_echo::EchoServer> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    sluice_echo::EchoServer::bind_and_start(
        "127.0.0.1:0".parse().expect("address"),
        cores,
        sluice_echo::EchoOptions::default(),
    )
}

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()
}

/// a: `conns` keep-alive connections, one DirectProxy 1 KiB request each, held; then closed.
fn keep_alive(spec: &StressSpec, rig: &Rig) -> std::io::Result<Outcome> {
    let start_rss = rig.sample().rss_kib;
    let sampler = Sampler::start(rig.pid, None);
    let body = payload::for_size(1024, spec.reference.as_deref()).0;
    let request = client::request(
        "/services/DirectProxy",
        rig.addr(),
        &matrix::request_headers(0),
        body.as_bytes(),
    );
    let t = Instant::now();
    let (kinds, held) = runtime()?.block_on(client::hold_many(
        rig.addr(),
        request,
        spec.conns,
        spec.hold,
        Duration::from_secs(60),
    ));
    let took = t.elapsed();
    let peak = sampler.finish();
    let idle = idle_series(rig.pid, rig.echo_port(), spec.idle);
    let mut detail = String::from(
        "| Seconds after all closed | RSS MB | fds | connections to the echo |\n|---:|---:|---:|---:|\n",
    );
    for (i, s) in idle.iter().enumerate() {
        detail.push_str(&format!(
            "| {i} | {:.1} | {} | {} |\n",
            mb(s.rss_kib),
            s.fds,
            s.echo_conns
        ));
    }
    Ok(Outcome {
        scenario: format!(
            "a. {} keep-alive connections, DirectProxy 1 KiB each, held {} s",
            spec.conns,
            spec.hold.as_secs()
        ),
        result: format!(
            "{held} held at once; {} answered 2xx; all made in {:.1} s",
            kinds.ok(),
            took.as_secs_f64()
        ),
        errors: kinds.to_string(),
        start_rss_kib: start_rss,
        peak_rss_kib: peak.rss_kib,
        peak_fds: peak.fds,
        idle,
        goal: "peak < 150 MB, < 50 MB within 10 s".into(),
        detail,
    })
}

/// b: a closed loop of `users` with a back-end delay.
fn delayed_users(spec: &StressSpec, rig: &Rig) -> std::io::Result<Outcome> {
    let start_rss = rig.sample().rss_kib;
    let sampler = Sampler::start(rig.pid, None);
    let body = payload::for_size(spec.size, spec.reference.as_deref()).0;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let r = load::run(
        &LoadSpec {
            addr: rig.addr(),
            path: "/services/DirectProxy".into(),
            headers: matrix::request_headers(spec.delay_ms),
            body: body.into_bytes(),
            more_bodies: Vec::new(),
            users: spec.users,
            warmup: Duration::from_millis(spec.delay_ms * 2),
            duration: spec.duration,
            timeout: Duration::from_secs(60) + Duration::from_millis(spec.delay_ms),
            assert_contains: vec!["buyStocks".into()],
            threads: cores,
            requests: None,
        },
        &mut load::NoObserver,
    )?;
    let peak = sampler.finish();
    let idle = idle_series(rig.pid, rig.echo_port(), spec.idle);
    let e = &r.errors;
    Ok(Outcome {
        scenario: format!(
            "b. {} users x {} x {} ms back-end delay, {} s",
            spec.users,
            payload::size_label(spec.size),
            spec.delay_ms,
            spec.duration.as_secs()
        ),
        result: format!("{:.0} req/s, {} ok", r.throughput(), r.ok),
        errors: format!(
            "connect {}, io {}, timeout {}, non-2xx {}, assertion {}",
            e.connect, e.io, e.timeout, e.non_2xx, e.assertion
        ),
        start_rss_kib: start_rss,
        peak_rss_kib: peak.rss_kib,
        peak_fds: peak.fds,
        idle,
        goal: "peak < 50 MB".into(),
        detail: String::new(),
    })
}

/// c: slow bodies, with a normal request now and then.
fn slow_bodies(spec: &StressSpec, rig: &Rig) -> std::io::Result<Outcome> {
    let start_rss = rig.sample().rss_kib;
    let rt = runtime()?;
    let normal = client::request(
        "/services/DirectProxy",
        rig.addr(),
        &matrix::request_headers(0),
        payload::for_size(1024, spec.reference.as_deref())
            .0
            .as_bytes(),
    );
    let before = rt.block_on(client::probe_latencies(
        rig.addr(),
        normal.clone(),
        10,
        Duration::ZERO,
    ));
    let sampler = Sampler::start(rig.pid, Some(rig.echo_port()));
    let (pid, port) = (rig.pid, rig.echo_port());
    let slow = client::SlowSpec {
        addr: rig.addr(),
        path: "/services/DirectProxy".into(),
        body: payload::generate(spec.slow_length, false).into_bytes(),
        clients: spec.slow_clients,
        gap_min: spec.gap_min,
        gap_max: spec.gap_max,
        max: spec.slow_max,
    };
    let (results, during, echo_series) =
        rt.block_on(client::slow_with_probes(slow, normal, move || {
            established_to(pid, port)
        }));
    let peak = sampler.finish();
    let idle = idle_series(rig.pid, rig.echo_port(), spec.idle);
    let detail = slow_detail(&results, &before, &during, &echo_series, &idle);
    let answered = results.iter().filter(|r| r.status.is_some()).count();
    let ended = results
        .iter()
        .filter(|r| !matches!(r.end, SlowEnd::StillOpen))
        .count();
    let mut statuses = std::collections::BTreeMap::new();
    for r in &results {
        *statuses
            .entry(r.status.map_or("none".to_owned(), |s| s.to_string()))
            .or_insert(0) += 1;
    }
    let statuses: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}×{n}")).collect();
    Ok(Outcome {
        scenario: format!(
            "c. {} slow bodies (Content-Length {}, 1 byte every {}-{} s), DirectProxy, at most {} s",
            spec.slow_clients,
            spec.slow_length,
            spec.gap_min.as_secs_f64(),
            spec.gap_max.as_secs_f64(),
            spec.slow_max.as_secs()
        ),
        result: format!(
            "status {}; {answered} got a status, {ended} ended; Sluice→echo connections peak {}, at the end {}",
            statuses.join(" "),
            peak.echo_conns,
            echo_series.last().map_or(0, |(_, n)| *n)
        ),
        errors: results
            .iter()
            .fold(Kinds::default(), |mut k, r| {
                k.add_end(&r.end);
                k
            })
            .to_string(),
        start_rss_kib: start_rss,
        peak_rss_kib: peak.rss_kib,
        peak_fds: peak.fds,
        idle,
        goal: "408 within the minimum-rate window, back-end connections released".into(),
        detail,
    })
}

fn secs(d: Option<Duration>) -> String {
    d.map_or("–".into(), |d| format!("{:.1}", d.as_secs_f64()))
}

/// Min / median / max of some durations.
fn spread(mut v: Vec<Duration>) -> String {
    if v.is_empty() {
        return "–".into();
    }
    v.sort();
    format!(
        "{:.3} / {:.3} / {:.3}",
        v[0].as_secs_f64(),
        v[v.len() / 2].as_secs_f64(),
        v[v.len() - 1].as_secs_f64()
    )
}

fn slow_detail(
    results: &[client::SlowResult],
    before: &[Result<Duration, String>],
    during: &[Result<Duration, String>],
    echo: &[(Duration, usize)],
    idle: &[Sample],
) -> String {
    let mut s = String::from("| Slow clients | count | status at (s) min / median / max | ended at (s) min / median / max | body bytes sent (median) |\n|---|---:|---|---|---:|\n");
    let mut groups: std::collections::BTreeMap<String, Vec<&client::SlowResult>> =
        Default::default();
    for r in results {
        let key = format!(
            "status {}, {}",
            r.status.map_or("none".into(), |s| s.to_string()),
            r.end
        );
        groups.entry(key).or_default().push(r);
    }
    for (k, rs) in &groups {
        let mut sent: Vec<usize> = rs.iter().map(|r| r.sent).collect();
        sent.sort_unstable();
        s.push_str(&format!(
            "| {k} | {} | {} | {} | {} |\n",
            rs.len(),
            spread(rs.iter().filter_map(|r| r.status_at).collect()),
            spread(rs.iter().filter_map(|r| r.ended_at).collect()),
            sent[sent.len() / 2]
        ));
    }
    let lat = |v: &[Result<Duration, String>]| {
        let errs = v.iter().filter(|r| r.is_err()).count();
        format!(
            "{} (of {}, {errs} failed)",
            spread(v.iter().filter_map(|r| r.as_ref().ok().copied()).collect()),
            v.len()
        )
    };
    s.push_str(&format!(
        "\nNormal DirectProxy request latency, s (min / median / max): before the slow clients {}; while they trickle {}\n",
        lat(before),
        lat(during)
    ));
    s.push_str("\nSluice's established connections to the echo back-end: ");
    let marks: Vec<String> = echo
        .iter()
        .map(|(t, n)| format!("{:.0} s: {n}", t.as_secs_f64()))
        .collect();
    s.push_str(&marks.join(", "));
    let after: Vec<String> = idle
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 5 == 0 || *i + 1 == idle.len())
        .map(|(i, x)| format!("{i} s: {} ({} fds)", x.echo_conns, x.fds))
        .collect();
    s.push_str(&format!(
        "; after the clients closed (seconds idle: connections, Sluice's descriptors): {}\n",
        after.join(", ")
    ));
    s
}

/// d: one body of `large_mib` MiB to CBRProxy, with Content-Length or chunked.
fn large_body(spec: &StressSpec, rig: &Rig, chunked: bool) -> std::io::Result<Outcome> {
    let start_rss = rig.sample().rss_kib;
    let sampler = Sampler::start(rig.pid, None);
    let r = runtime()?.block_on(client::large_post(
        rig.addr(),
        "/services/CBRProxy",
        spec.large_mib << 20,
        chunked,
        spec.large_max,
    ));
    let peak = sampler.finish();
    let idle = idle_series(rig.pid, rig.echo_port(), spec.idle);
    let mut errors = Kinds::default();
    errors.add_large(&r.end);
    Ok(Outcome {
        scenario: format!(
            "d. one {} MiB body to CBRProxy, {}",
            spec.large_mib,
            if chunked { "chunked" } else { "Content-Length" }
        ),
        result: format!(
            "status {} after {} s, {:.1} MiB sent; {}",
            r.status.map_or("none".into(), |s| s.to_string()),
            secs(r.status_at),
            r.sent as f64 / (1 << 20) as f64,
            r.end
        ),
        errors: errors.to_string(),
        start_rss_kib: start_rss,
        peak_rss_kib: peak.rss_kib,
        peak_fds: peak.fds,
        idle,
        goal: "413; peak at most about 1.5 x 64 MiB (96 MiB)".into(),
        detail: String::new(),
    })
}

/// Runs the chosen scenarios, each on a fresh Sluice. Progress on stderr.
pub fn run(spec: &StressSpec) -> std::io::Result<Vec<Outcome>> {
    let dir = std::env::temp_dir().join(format!("sluice-stress-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let r = run_in(spec, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn run_in(spec: &StressSpec, dir: &Path) -> std::io::Result<Vec<Outcome>> {
    let mut out = Vec::new();
    let mut steps: Vec<(char, bool)> = Vec::new();
    for &c in &spec.only {
        match c {
            'd' => steps.extend([('d', false), ('d', true)]),
            'a' | 'b' | 'c' => steps.push((c, false)),
            other => {
                return Err(std::io::Error::other(format!(
                    "unknown scenario '{other}' (want a, b, c, d)"
                )))
            }
        }
    }
    for (c, chunked) in steps {
        eprintln!(
            "stress: scenario {c}{} ...",
            if chunked { " (chunked)" } else { "" }
        );
        let rig = Rig::start(spec, dir)?;
        let r = match c {
            'a' => keep_alive(spec, &rig),
            'b' => delayed_users(spec, &rig),
            'c' => slow_bodies(spec, &rig),
            _ => large_body(spec, &rig, chunked),
        };
        let o = r.map_err(|e| std::io::Error::other(format!("{e}\n{}", rig.log_tail())))?;
        eprintln!("stress: {}: {}", o.scenario, o.result);
        out.push(o);
    }
    Ok(out)
}

/// The summary table, then each scenario's details.
pub fn table(outcomes: &[Outcome]) -> String {
    let mut s = String::from(
        "| Scenario | Result | Errors by kind | RSS at start MB | Peak RSS MB | Peak fds | RSS after idle MB (s) | fds after idle | Goal |\n\
         |---|---|---|---:|---:|---:|---:|---:|---|\n",
    );
    for o in outcomes {
        let last = o.idle.last().copied().unwrap_or_default();
        s.push_str(&format!(
            "| {} | {} | {} | {:.1} | {:.1} | {} | {:.1} ({}) | {} | {} |\n",
            o.scenario,
            o.result,
            o.errors,
            mb(o.start_rss_kib),
            mb(o.peak_rss_kib),
            o.peak_fds,
            mb(last.rss_kib),
            o.idle.len().saturating_sub(1),
            last.fds,
            o.goal
        ));
    }
    for o in outcomes.iter().filter(|o| !o.detail.is_empty()) {
        s.push_str(&format!("\n**{}**\n\n{}", o.scenario, o.detail));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn established_rows_are_matched_by_port_state_and_inode() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 0100007F:2328 01 00000000:00000000 00:00000000 00000000  1000        0 111 1 0000000000000000 20 4 30 10 -1\n\
   1: 0100007F:1F91 0100007F:2328 06 00000000:00000000 00:00000000 00000000  1000        0 112 1 0000000000000000 20 4 30 10 -1\n\
   2: 0100007F:1F92 0100007F:2328 01 00000000:00000000 00:00000000 00000000  1000        0 999 1 0000000000000000 20 4 30 10 -1\n\
   3: 0100007F:1F93 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 113 1 0000000000000000 20 4 30 10 -1\n";
        let inodes: std::collections::HashSet<String> = ["111", "112", "113"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // Port 9000 is 0x2328: row 0 counts; row 1 is TIME_WAIT, row 2 another process's.
        assert_eq!(count_established(table, 9000, &inodes), 1);
        assert_eq!(count_established(table, 8080, &inodes), 1);
    }

    #[test]
    fn own_descriptors_are_counted() {
        let me = std::process::id();
        assert!(fd_count(me) >= 3);
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let _c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert_eq!(established_to(me, l.local_addr().unwrap().port()), 1);
        assert_eq!(fd_count(u32::MAX), 0);
    }

    #[test]
    fn the_table_has_a_row_per_scenario_and_the_details() {
        let o = Outcome {
            scenario: "x".into(),
            idle: vec![Sample::default(); 3],
            detail: "details\n".into(),
            ..Outcome::default()
        };
        let t = table(&[
            o.clone(),
            Outcome {
                detail: String::new(),
                ..o
            },
        ]);
        assert_eq!(t.lines().filter(|l| l.starts_with("| x |")).count(), 2);
        assert!(t.contains("**x**\n\ndetails"));
        assert!(peak_rss_kib(std::process::id()) > 100);
        assert!(t.contains("| 0.0 (2) |"));
    }
}
