//! `sluice-bench`: the measuring kit's command line.

use clap::{Parser, Subcommand};
use sluice_bench::matrix::{self, MatrixSpec};
use sluice_bench::{adversarial, hot_deploy, load, micro, payload, report, stats::Summary, stress};
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "sluice-bench", version, about = "Sluice's measuring kit")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The WSO2 benchmark matrix: Sluice's scenarios and the peers under every combination of users,
    /// sizes and back-end delays. Markdown on stdout; CSV, JSON, SVG charts and report.md in --out.
    /// Peers: `apt-get install -y nginx haproxy wrk` (missing ones are skipped and said so).
    Matrix(MatrixArgs),
    /// One closed-loop load run against a URL (like wrk, plus errors by kind and HdrHistogram
    /// percentiles).
    Load(LoadArgs),
    /// The CPU cost of the content scenarios' per-message work outside the network: the streaming
    /// XPath evaluator on the CBR proxies' expressions and the streaming XSLT on the WSO2 stylesheets,
    /// over the payload of each size (timing loops on one thread).
    Micro {
        /// Payload sizes in bytes.
        #[arg(long, value_delimiter = ',', default_value = "1024,10240,102400")]
        sizes: Vec<usize>,
        /// Seconds per case.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
        /// Exactly this many calls per case instead of a time, with no warm-up: for counting
        /// instructions per call under valgrind (`crates/bench/micro-instructions.sh`).
        #[arg(long)]
        calls: Option<u64>,
        /// Only the cases whose name contains this.
        #[arg(long)]
        only: Option<String>,
    },
    /// The CPU cost per KB of each reader Sluice owns (streaming XPath, streaming XSLT, JsonPath,
    /// config, the back-end response-head parser) on hostile inputs, as a request pays it (libxml2
    /// or libxslt where a streaming reader bails), and its ratio to the normal WSO2 payload of the
    /// same size. Each case runs in a child process, stopped at --cap. Markdown on stdout.
    Adversarial(AdversarialArgs),
    /// Resource figures under abuse, against a Sluice it starts (fresh for each scenario) on the
    /// WSO2 artifacts with the echo back-end: a. many keep-alive connections held, b. many users
    /// with a back-end delay, c. slow request bodies, d. a large body (Content-Length, chunked).
    /// Peak RSS and descriptors, errors by kind, RSS after idling. Markdown on stdout.
    Stress(StressArgs),
    /// Issue 34's hot-deployment run: users send to a proxy while its folder alternates between
    /// two versions; every answer one version's, every change deployed, descriptors and RSS
    /// before and after. Markdown on stdout.
    HotDeploy {
        /// The sluice binary (default: beside this one).
        #[arg(long)]
        sluice: Option<PathBuf>,
        #[arg(long, default_value_t = 200)]
        users: usize,
        #[arg(long, default_value_t = 20)]
        changes: usize,
        /// Seconds between two changes.
        #[arg(long, default_value_t = 3.0)]
        every: f64,
    },
    /// Prints a buyStocks SOAP payload of the given size (WSO2's shape).
    Payload {
        #[arg(long)]
        size: usize,
        /// First order's symbol IBM (the 2018 CAR's CBR regex) instead of N.
        #[arg(long)]
        ibm: bool,
    },
}

#[derive(clap::Args)]
struct MatrixArgs {
    /// A few seconds in all: 10 users, 1 KiB, no delay, 0.5 s warm-up, 1.5 s measured (the CI smoke
    /// test). Explicit flags still override.
    #[arg(long)]
    quick: bool,
    /// Comma-separated WSO2 scenarios (default: every one Sluice supports).
    #[arg(long, value_delimiter = ',')]
    scenarios: Option<Vec<String>>,
    /// Comma-separated peers among direct, haproxy, nginx (default: all).
    #[arg(long, value_delimiter = ',')]
    peers: Option<Vec<String>>,
    /// Concurrent users (default 100,200,500).
    #[arg(long, value_delimiter = ',')]
    users: Option<Vec<usize>>,
    /// Message sizes in bytes (default 1024,10240: WSO2's own payload files).
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<usize>>,
    /// Back-end delays in ms (default 0,1000).
    #[arg(long, value_delimiter = ',')]
    delays: Option<Vec<u64>>,
    /// Warm-up seconds per cell (default 10).
    #[arg(long)]
    warmup: Option<f64>,
    /// Measured seconds per cell (default 30).
    #[arg(long)]
    duration: Option<f64>,
    #[command(flatten)]
    target: SluiceUnderTest,
    /// Results folder (default: target/bench-results/<date-time>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Skip the wrk comparison.
    #[arg(long)]
    no_wrk: bool,
    /// Run cells with a back-end delay one target at a time (default: all targets at once).
    #[arg(long)]
    serial_delays: bool,
    /// Load generator threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Run the proxies under test on these CPUs only (taskset list: 0, 0-1, 0,2) and the load
    /// generator and echo back-end on the others, as WSO2 runs them on separate machines. CPU per
    /// request is then free of the measuring side's contention.
    #[arg(long, value_name = "CPUS")]
    pin: Option<String>,
    /// Measure each cell without a back-end delay this many times, the targets interleaved round by
    /// round, and report the median round (default 1).
    #[arg(long)]
    rounds: Option<usize>,
}

/// Which Sluice a command starts, and on which artifacts.
#[derive(clap::Args)]
struct SluiceUnderTest {
    /// The sluice binary (default: beside this one, i.e. target/release/sluice).
    #[arg(long)]
    sluice: Option<PathBuf>,
    /// An extra argument for `sluice run`, e.g. --sluice-arg=--workers=1 (repeatable).
    #[arg(long = "sluice-arg", allow_hyphen_values = true)]
    sluice_args: Vec<String>,
    /// The WSO2 artifacts (default: <reference>/performance-ei/capp).
    #[arg(long)]
    capp: Option<PathBuf>,
    /// WSO2's perf reference folder (default: ../shared/reference/wso2-perf from the repository).
    #[arg(long)]
    reference: Option<PathBuf>,
}

#[derive(clap::Args)]
struct AdversarialArgs {
    /// Input sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "10240,10485760")]
    sizes: Vec<usize>,
    /// Readers (default all): xpath-cbr, xpath-header, xslt, jsonpath, config, h1-head.
    #[arg(long, value_delimiter = ',')]
    readers: Option<Vec<String>>,
    /// Cases (default all; the baselines, normal, read-through, chunked and chunked-read-through,
    /// always run): attributes, namespaces, siblings, long-name, deep-200, deep-beyond, huge-text,
    /// charrefs, long-charrefs, chunked-siblings.
    #[arg(long, value_delimiter = ',')]
    cases: Option<Vec<String>>,
    /// Seconds of calls per case after the first call.
    #[arg(long, default_value_t = 0.5)]
    budget: f64,
    /// Seconds after which a case is stopped and reported over the cap.
    #[arg(long, default_value_t = 5.0)]
    cap: f64,
    /// Bytes per chunk in the chunked cases.
    #[arg(long, default_value_t = 16)]
    chunk: usize,
    /// The WSO2 artifacts (default: <reference>/performance-ei/capp).
    #[arg(long)]
    capp: Option<PathBuf>,
    /// WSO2's perf reference folder (default: ../shared/reference/wso2-perf from the repository).
    #[arg(long)]
    reference: Option<PathBuf>,
    /// One case in this process, its figure printed as JSON: READER,CASE,SIZE (what the command
    /// runs in each child; `crates/bench/adversarial-instructions.sh` runs one under cachegrind).
    #[arg(long)]
    cell: Option<String>,
    /// Exactly this many calls per case instead of `--budget`'s time (for counting instructions).
    #[arg(long)]
    calls: Option<u64>,
}

#[derive(clap::Args)]
struct StressArgs {
    /// Scenarios to run among a, b, c, d.
    #[arg(long, value_delimiter = ',', default_value = "a,b,c,d")]
    only: Vec<char>,
    #[command(flatten)]
    target: SluiceUnderTest,
    /// Seconds of idling sampled (each second) after every scenario.
    #[arg(long, default_value_t = 10)]
    idle: u64,
    /// a: keep-alive connections.
    #[arg(long, default_value_t = 10_000)]
    conns: usize,
    /// a: seconds the connections are held after the last answer.
    #[arg(long, default_value_t = 5.0)]
    hold: f64,
    /// b: users.
    #[arg(long, default_value_t = 500)]
    users: usize,
    /// b: body size in bytes.
    #[arg(long, default_value_t = 10_240)]
    size: usize,
    /// b: back-end delay in ms.
    #[arg(long, default_value_t = 1000)]
    delay_ms: u64,
    /// b: measured seconds.
    #[arg(long, default_value_t = 15.0)]
    duration: f64,
    /// c: slow clients.
    #[arg(long, default_value_t = 200)]
    slow_clients: usize,
    /// c: their Content-Length.
    #[arg(long, default_value_t = 1000)]
    slow_length: usize,
    /// c: shortest gap between two body bytes, seconds.
    #[arg(long, default_value_t = 2.0)]
    gap_min: f64,
    /// c: longest gap between two body bytes, seconds.
    #[arg(long, default_value_t = 5.0)]
    gap_max: f64,
    /// c: the longest the scenario runs, seconds.
    #[arg(long, default_value_t = 60.0)]
    slow_max: f64,
    /// d: the body in MiB.
    #[arg(long, default_value_t = 200)]
    large_mib: usize,
    /// d: the longest one request may take, seconds.
    #[arg(long, default_value_t = 60.0)]
    large_max: f64,
}

#[derive(clap::Args)]
struct LoadArgs {
    /// http://host:port/path
    url: String,
    /// Body file (default: a generated payload of --size bytes).
    #[arg(long)]
    body: Option<PathBuf>,
    #[arg(long, default_value_t = 1024)]
    size: usize,
    #[arg(short = 'c', long, default_value_t = 100)]
    users: usize,
    #[arg(short = 'd', long, default_value_t = 30.0)]
    duration: f64,
    #[arg(long, default_value_t = 5.0)]
    warmup: f64,
    /// Extra header "Name: value" (repeatable; default: WSO2's JMeter headers).
    #[arg(short = 'H', long = "header")]
    headers: Vec<String>,
    /// A substring every response body must contain.
    #[arg(long)]
    assert: Option<String>,
    #[arg(long)]
    threads: Option<usize>,
    /// Stop after this many requests (warm-up included); -d is then only an upper bound.
    #[arg(long)]
    requests: Option<u64>,
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Hundreds of users, and as many echo connections, in this one process.
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("sluice-bench: cannot raise the open-file limit: {e}");
    }
    let r = match cli.cmd {
        Cmd::Matrix(a) => run_matrix(a),
        Cmd::Load(a) => run_load(a),
        Cmd::Micro {
            sizes,
            seconds,
            calls,
            only,
        } => {
            let budget = match calls {
                Some(n) => micro::Budget::Calls(n),
                None => micro::Budget::Time(Duration::from_secs_f64(seconds)),
            };
            run_micro(&sizes, budget, only.as_deref())
        }
        Cmd::Adversarial(a) => run_adversarial(a),
        Cmd::Stress(a) => run_stress(a),
        Cmd::HotDeploy {
            sluice,
            users,
            changes,
            every,
        } => sluice_binary(sluice).and_then(|sluice| {
            let spec = hot_deploy::HotDeploySpec {
                sluice,
                users,
                changes,
                every: Duration::from_secs_f64(every),
            };
            let r = hot_deploy::run(&spec).map_err(|e| e.to_string())?;
            print!("{}", hot_deploy::table(&spec, &r));
            Ok(())
        }),
        Cmd::Payload { size, ibm } => {
            print!("{}", payload::generate(size, ibm));
            Ok(())
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sluice-bench: {e}");
            ExitCode::from(1)
        }
    }
}

fn run_micro(sizes: &[usize], budget: micro::Budget, only: Option<&str>) -> Result<(), String> {
    let reference = repo_root().join("../shared/reference/wso2-perf");
    let t = micro::run(
        &reference.join("performance-ei/capp"),
        Some(reference.as_path()).filter(|r| r.is_dir()),
        sizes,
        budget,
        only,
    )?;
    print!("{}", micro::table(&t));
    Ok(())
}

/// The WSO2 reference folder and capp folder from the flags or their defaults.
fn wso2_folders(
    capp: Option<PathBuf>,
    reference: Option<PathBuf>,
) -> Result<(PathBuf, Option<PathBuf>), String> {
    let reference = reference
        .or_else(|| Some(repo_root().join("../shared/reference/wso2-perf")))
        .filter(|p| p.is_dir());
    match (capp, &reference) {
        (Some(c), _) => Ok((c, reference)),
        (None, Some(r)) => Ok((r.join("performance-ei/capp"), reference)),
        (None, None) => Err("no WSO2 reference folder found; pass --capp or --reference".into()),
    }
}

/// The sluice binary: the flag's, else the one beside this program.
fn sluice_binary(flag: Option<PathBuf>) -> Result<PathBuf, String> {
    let sluice = flag.unwrap_or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.join("sluice")))
            .unwrap_or_else(|| PathBuf::from("sluice"))
    });
    if !sluice.exists() {
        return Err(format!(
            "{} not found: build it first (cargo build --release -p sluice) or pass --sluice",
            sluice.display()
        ));
    }
    Ok(sluice)
}

fn run_stress(a: StressArgs) -> Result<(), String> {
    let (capp, reference) = wso2_folders(a.target.capp, a.target.reference)?;
    let sluice = sluice_binary(a.target.sluice)?;
    let secs = Duration::from_secs_f64;
    let spec = stress::StressSpec {
        sluice_args: a.target.sluice_args,
        only: a.only,
        idle: Duration::from_secs(a.idle),
        conns: a.conns,
        hold: secs(a.hold),
        users: a.users,
        size: a.size,
        delay_ms: a.delay_ms,
        duration: secs(a.duration),
        slow_clients: a.slow_clients,
        slow_length: a.slow_length,
        gap_min: secs(a.gap_min),
        gap_max: secs(a.gap_max),
        slow_max: secs(a.slow_max),
        large_mib: a.large_mib,
        large_max: secs(a.large_max),
        ..stress::StressSpec::defaults(sluice, capp, reference)
    };
    let outcomes = stress::run(&spec).map_err(|e| e.to_string())?;
    print!("{}", stress::table(&outcomes));
    Ok(())
}

fn run_adversarial(a: AdversarialArgs) -> Result<(), String> {
    let (capp, reference) = wso2_folders(a.capp, a.reference)?;
    let readers = match a.readers {
        None => adversarial::Reader::ALL.to_vec(),
        Some(v) => v
            .iter()
            .map(|k| adversarial::Reader::from_key(k).ok_or(format!("unknown reader '{k}'")))
            .collect::<Result<_, _>>()?,
    };
    let cases = match a.cases {
        None => sluice_bench::hostile::Case::ALL.to_vec(),
        Some(v) => v
            .iter()
            .map(|k| sluice_bench::hostile::Case::from_key(k).ok_or(format!("unknown case '{k}'")))
            .collect::<Result<_, _>>()?,
    };
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let spec = adversarial::Spec {
        capp,
        reference,
        sizes: a.sizes,
        readers,
        cases,
        budget: Duration::from_secs_f64(a.budget),
        calls: a.calls,
        cap: Duration::from_secs_f64(a.cap),
        chunk: a.chunk,
        isolation: adversarial::Isolation::Process(exe),
        progress: true,
    };
    if let Some(cell) = a.cell {
        let parts: Vec<&str> = cell.split(',').collect();
        let [reader, case, size] = parts[..] else {
            return Err(format!("--cell {cell}: want READER,CASE,SIZE"));
        };
        let reader = adversarial::Reader::from_key(reader).ok_or("unknown reader")?;
        let case = sluice_bench::hostile::Case::from_key(case).ok_or("unknown case")?;
        let size = size
            .parse()
            .map_err(|_| format!("--cell {cell}: bad size"))?;
        return adversarial::cell_main(&spec, reader, case, size);
    }
    let figs = adversarial::run(&spec)?;
    print!("{}", adversarial::table(&figs));
    Ok(())
}

fn run_matrix(a: MatrixArgs) -> Result<(), String> {
    let q = a.quick;
    let (capp, reference) = wso2_folders(a.target.capp, a.target.reference)?;
    let sluice = sluice_binary(a.target.sluice)?;
    let mut spec = MatrixSpec::defaults(q, sluice, capp, reference);
    if let Some(v) = a.scenarios {
        spec.scenarios = v;
    }
    if let Some(v) = a.peers {
        spec.peers = v;
    }
    if let Some(v) = a.users {
        spec.users = v;
    }
    if let Some(v) = a.sizes {
        spec.sizes = v;
    }
    if let Some(v) = a.delays {
        spec.delays_ms = v;
    }
    if let Some(v) = a.warmup {
        spec.warmup = Duration::from_secs_f64(v);
    }
    if let Some(v) = a.duration {
        spec.duration = Duration::from_secs_f64(v);
    }
    if let Some(v) = a.threads {
        spec.threads = v;
    }
    if let Some(list) = &a.pin {
        let p = matrix::Pinning::split(list, cores())?;
        p.bind_self().map_err(|e| e.to_string())?;
        if a.threads.is_none() {
            spec.threads = p.bench_cpus;
        }
        spec.echo_threads = p.bench_cpus;
        spec.pin = Some(p);
    }
    spec.sluice_args = a.target.sluice_args;
    if let Some(r) = a.rounds {
        spec.rounds = r.max(1);
    }
    spec.wrk_compare &= !a.no_wrk;
    spec.concurrent_delayed &= !a.serial_delays;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let rep = matrix::run(&spec, &command).map_err(|e| e.to_string())?;
    let out = a.out.unwrap_or_else(|| {
        let stamp = rep.date.replace([' ', ':'], "-");
        repo_root().join("target/bench-results").join(stamp)
    });
    let md = report::write_all(&rep, &out).map_err(|e| e.to_string())?;
    println!("{md}");
    eprintln!("results in {}", out.display());
    Ok(())
}

fn run_load(a: LoadArgs) -> Result<(), String> {
    let rest = a
        .url
        .strip_prefix("http://")
        .ok_or("only http:// URLs are supported")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let addr = authority
        .to_socket_addrs()
        .map_err(|e| format!("{authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("{authority} resolves to nothing"))?;
    let body = match &a.body {
        Some(p) => std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?,
        None => payload::generate(a.size, false).into_bytes(),
    };
    let headers = if a.headers.is_empty() {
        matrix::request_headers(0)
    } else {
        a.headers
            .iter()
            .map(|h| {
                h.split_once(':')
                    .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                    .ok_or_else(|| format!("bad header '{h}' (want 'Name: value')"))
            })
            .collect::<Result<_, _>>()?
    };
    let spec = load::LoadSpec {
        addr,
        path: if path.is_empty() {
            "/".into()
        } else {
            path.into()
        },
        headers,
        body,
        more_bodies: Vec::new(),
        users: a.users,
        warmup: Duration::from_secs_f64(a.warmup),
        duration: Duration::from_secs_f64(a.duration),
        timeout: Duration::from_secs(60),
        assert_contains: a.assert.into_iter().collect(),
        threads: a.threads.unwrap_or_else(cores),
        requests: a.requests,
    };
    let r = load::run(&spec, &mut load::NoObserver).map_err(|e| e.to_string())?;
    let s = Summary::of(&r.latency_us);
    println!(
        "{} users, {:.1} s measured: {} ok, {:.0} req/s, errors {:.2} % {:?}\nlatency ms: mean {:.3} sd {:.3} p50 {:.3} p90 {:.3} p99 {:.3} p99.9 {:.3} max {:.3}",
        spec.users,
        r.measured.as_secs_f64(),
        r.ok,
        r.throughput(),
        r.error_pct(),
        r.errors,
        s.mean_ms,
        s.stddev_ms,
        s.p50_ms,
        s.p90_ms,
        s.p99_ms,
        s.p999_ms,
        s.max_ms
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_flags_parse_as_lists() {
        let cli = Cli::try_parse_from([
            "sluice-bench",
            "matrix",
            "--scenarios",
            "DirectProxy,CBRProxy",
            "--users",
            "100,200",
            "--sizes",
            "1024",
            "--delays",
            "0,1000",
        ])
        .unwrap();
        let Cmd::Matrix(a) = cli.cmd else {
            panic!("not matrix")
        };
        assert_eq!(a.scenarios.unwrap(), ["DirectProxy", "CBRProxy"]);
        assert_eq!(a.users.unwrap(), [100, 200]);
        assert_eq!(a.delays.unwrap(), [0, 1000]);
        assert!(Cli::try_parse_from(["sluice-bench", "matrix", "--users", "x"]).is_err());
    }
}
