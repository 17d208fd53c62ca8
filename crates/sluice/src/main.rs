//! The `sluice` command: run or validate Synapse / WSO2 MI artifacts.

use clap::{Parser, Subcommand};
use deploy::{
    fingerprint, left_out, load, overrides, print_diagnostics, read_wsdls, report_plan,
    LoadOptions, Processors, Reloader, Reloading, Signals, Source,
};
use sluice_config::{Diagnostics, Severity};
use sluice_mediation::{CompileOptions, Plan};
use sluice_transport::metrics::{Buckets, Listeners, Metrics};
use sluice_transport::{tls, Deployment, EngineOptions, ServerOptions, TlsListener, WorkerEngine};

mod deploy;
mod health;
mod management;
use health::Health;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::TlsAcceptor;

mod settings;
use settings::Settings;

/// mimalloc: per-thread free lists suit one runtime per core; measured faster than glibc malloc here
/// (docs/benchmarks/HISTORY.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DEFAULT_CONFIG: &str = include_str!("../../../examples/default/synapse.xml");

#[derive(Parser)]
#[command(
    name = "sluice",
    version,
    about = "A streaming service bus for Synapse / WSO2 MI artifacts.\n\nWith no command, serves the embedded example configuration with a built-in echo service."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    listen: Listen,
}

#[derive(clap::Args, Clone)]
struct Listen {
    /// Synapse's SYNAPSE_HOME, MI's MI_HOME: where relative `file:` paths in the configuration are
    /// read from (a `<registry>` root, a local entry's `src`). Default: the MI home of an MI
    /// deployment folder (`.../repository/deployment/server/synapse-configs/default`), else the
    /// working directory.
    #[arg(long, env = "SLUICE_HOME", global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    /// Port to serve on (0 picks a free one; the chosen address is printed). Default: 8290, MI's
    /// 8280 with the `--config` file's `[server] offset` (10 unless it says otherwise).
    #[arg(long, env = "SLUICE_PORT", global = true)]
    port: Option<u16>,
    /// Address to bind.
    #[arg(long, env = "SLUICE_HOST", default_value = "0.0.0.0", global = true)]
    host: String,
    /// Worker threads, each with its own event loop (default: one per CPU this process may use).
    #[arg(long, env = "SLUICE_WORKERS", global = true, value_parser = clap::value_parser!(u16).range(1..))]
    workers: Option<u16>,
    /// Also serve https on this port (0 picks a free one), with --tls-cert and --tls-key: proxies
    /// whose transports list https, every REST API and the service listing.
    #[arg(long, env = "SLUICE_HTTPS_PORT", global = true, requires_all = ["tls_cert", "tls_key"])]
    https_port: Option<u16>,
    /// The https listener's certificate chain (PEM, the server's certificate first).
    #[arg(
        long,
        env = "SLUICE_TLS_CERT",
        global = true,
        value_name = "PEM",
        requires = "https_port"
    )]
    tls_cert: Option<PathBuf>,
    /// The https listener's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(
        long,
        env = "SLUICE_TLS_KEY",
        global = true,
        value_name = "PEM",
        requires = "https_port"
    )]
    tls_key: Option<PathBuf>,
    /// Mutual TLS on the https listener: every client must show a certificate one of these CAs
    /// issued (PEM files, repeatable).
    #[arg(
        long = "tls-client-ca",
        env = "SLUICE_TLS_CLIENT_CA",
        global = true,
        value_name = "PEM",
        requires = "https_port"
    )]
    tls_client_ca: Vec<PathBuf>,
    /// WSO2 MI's health probes (`GET /liveness`, `GET /healthz`) on this port (0 picks a free one;
    /// the chosen address is printed). Default: the config's `[mediation] internal_http_api_port`,
    /// else 9201 as MI; `internal_http_api_enable = false` there turns them off.
    #[arg(long = "internal-port", env = "SLUICE_INTERNAL_PORT", global = true)]
    internal_port: Option<u16>,
    /// The same over TLS (MI's management API port): default the config's `[mediation]
    /// internal_https_api_port`, else 9164 as MI. Its certificate is `--tls-cert`'s, else a
    /// self-signed one made at start.
    #[arg(
        long = "internal-https-port",
        env = "SLUICE_INTERNAL_HTTPS_PORT",
        global = true
    )]
    internal_https_port: Option<u16>,
    /// Limits and timeouts (TOML, under MI's `deployment.toml` section names: `[transport.http]`,
    /// `[mediation]`; see docs/ARCHITECTURE.md for every key and its default).
    #[arg(long, env = "SLUICE_CONFIG", global = true, value_name = "TOML")]
    config: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the artifacts under PATH: a file, a folder tree, a .car file or an unpacked CAR folder.
    Run {
        path: PathBuf,
        /// Re-point a named endpoint: --endpoint RealService=http://127.0.0.1:9000/service/EchoService
        /// (for an <http> endpoint the value is its new uri-template)
        #[arg(long = "endpoint", value_name = "NAME=URI")]
        endpoints: Vec<String>,
        /// Refuse to start when any artifact has an error. Without it, as in WSO2 MI, an artifact
        /// with an error is reported and left out, and the others deploy.
        #[arg(long)]
        strict: bool,
        /// Seconds in-flight requests get to finish after SIGINT/SIGTERM.
        #[arg(long, default_value_t = 30)]
        grace: u64,
        /// Trust https back-ends whose certificates these CAs issued (PEM files, repeatable), besides
        /// the system's trusted roots: what WSO2 MI's client trust store holds.
        #[arg(long = "trust-ca", value_name = "PEM", env = "SLUICE_TRUST_CA")]
        trust_ca: Vec<PathBuf>,
        /// The certificate chain Sluice shows https back-ends that ask for one (mutual TLS; PEM,
        /// its own certificate first), with --backend-key.
        #[arg(
            long,
            value_name = "PEM",
            env = "SLUICE_BACKEND_CERT",
            requires = "backend_key"
        )]
        backend_cert: Option<PathBuf>,
        /// The private key of --backend-cert (PEM: PKCS#8, PKCS#1 or SEC1).
        #[arg(
            long,
            value_name = "PEM",
            env = "SLUICE_BACKEND_KEY",
            requires = "backend_cert"
        )]
        backend_key: Option<PathBuf>,
    },
    /// Load and check the artifacts under PATH without serving; print every problem; exit 1 if any.
    Validate {
        path: PathBuf,
        #[arg(long = "endpoint", value_name = "NAME=URI")]
        endpoints: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    management::logging::install();
    let settings = match &cli.listen.config {
        Some(p) => match Settings::read(p) {
            Ok((s, unused)) => {
                for u in unused {
                    tracing::warn!("{u}");
                }
                s
            }
            Err(e) => {
                eprintln!("sluice: {e}");
                return ExitCode::from(2);
            }
        },
        None => Settings::default(),
    };
    if let Some(t) = settings.tracing() {
        if let Err(e) = sluice_transport::otel::init(&t) {
            eprintln!("sluice: {e}");
            return ExitCode::from(2);
        }
        tracing::info!("OpenTelemetry traces go to {}", t.url);
    }
    let code = match cli.cmd {
        Some(Cmd::Validate { path, endpoints }) => validate(
            path,
            cli.listen.home.as_deref(),
            &endpoints,
            settings.security_keys(),
        ),
        Some(Cmd::Run {
            path,
            endpoints,
            strict,
            grace,
            trust_ca,
            backend_cert,
            backend_key,
        }) => {
            let identity = match (&backend_cert, &backend_key) {
                (Some(c), Some(k)) => {
                    match tls::Identity::load("--backend-cert", c, "--backend-key", k) {
                        Ok(id) => Some(id),
                        Err(e) => {
                            eprintln!("sluice: {e}");
                            return ExitCode::from(2);
                        }
                    }
                }
                _ => None,
            };
            let backend_tls = match tls::client_config(&trust_ca, identity) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("sluice: {e}");
                    return ExitCode::from(2);
                }
            };
            let source = Source::Path(path, cli.listen.home.clone());
            let how = LoadOptions {
                endpoints,
                strict,
                correlation_header: settings.correlation_header().map(str::to_owned),
                security_keys: Some(settings.security_keys()),
            };
            // Taken before the files are read: a change made while Sluice starts is seen.
            let loaded = fingerprint(&source);
            let Some((plan, diags)) = load(&source, &how) else {
                return ExitCode::from(2);
            };
            read_wsdls(&plan, &backend_tls);
            let faulty = left_out(&plan, &diags);
            let internal = match internal_api(&settings, &cli.listen, faulty) {
                Ok(i) => i,
                Err(e) => {
                    eprintln!("sluice: {e}");
                    return ExitCode::from(2);
                }
            };
            let access_log = match settings.access_log() {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("sluice: {e}");
                    return ExitCode::from(2);
                }
            };
            let reload = Reloader {
                source,
                how,
                backend_tls: backend_tls.clone(),
                watch: settings.hot_deployment(),
                https: false,
                loaded,
            };
            let engine = settings.engine(EngineOptions {
                backend_tls,
                access_log,
                ..EngineOptions::default()
            });
            let server = settings.server(ServerOptions {
                grace: Duration::from_secs(grace),
                ..ServerOptions::default()
            });
            let http_port = settings.http_port();
            let reload = Some((reload, diags));
            serve(
                (plan, reload),
                cli.listen,
                http_port,
                server,
                engine,
                internal,
                None,
            )
        }
        None => serve_default(cli.listen, &settings),
    };
    // The spans still queued go out before the process ends.
    sluice_transport::otel::shutdown();
    code
}

fn validate(
    path: PathBuf,
    home: Option<&Path>,
    endpoints: &[String],
    keys: sluice_security::KeySource,
) -> ExitCode {
    let opts = match overrides(endpoints) {
        Ok(o) => CompileOptions {
            endpoint_overrides: o,
            security_keys: Some(keys),
            ..CompileOptions::default()
        },
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let (config, mut diags) = sluice_config::load_path_in(&path, home);
    let plan = sluice_mediation::compile(&config, &opts, &mut diags);
    print_diagnostics(&diags);
    let mut deployed: Vec<&str> = plan.proxies.keys().map(String::as_str).collect();
    deployed.sort_unstable();
    let (e, u, w) = (
        diags.count(Severity::Error),
        diags.count(Severity::Unsupported),
        diags.count(Severity::Warning),
    );
    let apis: Vec<&str> = plan.apis.iter().map(|a| &*a.name).collect();
    println!(
        "{e} error(s), {u} unsupported, {w} warning(s); {} proxy service(s) would deploy: {}{}",
        deployed.len(),
        deployed.join(", "),
        if apis.is_empty() {
            String::new()
        } else {
            format!("; {} API(s): {}", apis.len(), apis.join(", "))
        }
    );
    if e + u > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn raise_fd_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => tracing::info!("open-file limit: {n}"),
        Err(e) => tracing::warn!("could not raise the open-file limit: {e}"),
    }
}

/// Binds with a deep accept backlog, so a burst of thousands of connects is not refused.
fn bind(host: &str, port: u16) -> std::io::Result<std::net::TcpListener> {
    use std::net::ToSocketAddrs;
    let addr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{host} resolves to no address")))?;
    // The same deep-backlog listener as the echo back-end's.
    sluice_echo::bind(addr)
}

/// The https listening socket and TLS acceptor, when `--https-port` is set.
fn https_listener(listen: &Listen) -> Result<Option<(std::net::TcpListener, TlsAcceptor)>, String> {
    let (Some(port), Some(cert), Some(key)) =
        (listen.https_port, &listen.tls_cert, &listen.tls_key)
    else {
        return Ok(None);
    };
    let identity = tls::Identity::load("--tls-cert", cert, "--tls-key", key)?;
    let config = tls::server_config(identity, &listen.tls_client_ca)?;
    let l = bind(&listen.host, port)
        .map_err(|e| format!("cannot listen on {}:{port} (https): {e}", listen.host))?;
    Ok(Some((l, TlsAcceptor::from(config))))
}

/// Serves on one single-threaded runtime per core, all accepting on the same socket; the accepted
/// connections are spread evenly over them (`sluice_balance`). Each thread has its own back-end
/// connection pool, so a request never changes thread and nothing is shared but the
/// immutable plan (the model nginx and HAProxy use).
#[allow(clippy::too_many_arguments)]
fn serve(
    (plan, reload): (Plan, Option<(Reloader, Diagnostics)>),
    listen: Listen,
    http_port: u16,
    opts: ServerOptions,
    mut engine_opts: EngineOptions,
    internal: Option<Internal>,
    banner: Option<&dyn Fn(SocketAddr)>,
) -> ExitCode {
    raise_fd_limit();
    let port = listen.port.unwrap_or(http_port);
    let listener = match bind(&listen.host, port) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("sluice: cannot listen on {}:{port}: {e}", listen.host);
            return ExitCode::from(2);
        }
    };
    let addr = listener.local_addr().expect("bound address");
    let https = match https_listener(&listen) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("sluice: {e}");
            return ExitCode::from(2);
        }
    };
    let threads = listen.workers.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    let mut https_seats = match &https {
        Some(_) => sluice_balance::seats(threads),
        None => Vec::new(),
    };
    report_plan(&plan, https.is_some());
    let https_port = https.as_ref().and_then(|(l, _)| l.local_addr().ok());
    let deployment = Deployment::new(Arc::new(plan));
    let log = engine_opts.access_log.clone();
    let addrs = (addr, https_port);
    let reloads = Arc::new(deploy::Reloads::default());
    let follow = (log, reloads.clone());
    engine_opts.metrics = operations(&deployment, &listen, addrs, internal.as_ref(), follow);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut workers = Vec::with_capacity(threads);
    // Each worker reports once its runtime and listener are set up; "listening" is printed after all.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let seats = sluice_balance::seats(threads);
    watch_connections(engine_opts.metrics.as_deref(), &seats, &https_seats);
    for (i, seat) in seats.into_iter().enumerate() {
        let l = match listener.try_clone() {
            Ok(l) => l,
            Err(e) => {
                eprintln!("sluice: {e}");
                return ExitCode::from(2);
            }
        };
        let (plan, stop, opts, engine_opts, ready) = (
            deployment.clone(),
            stop_rx.clone(),
            opts.clone(),
            engine_opts.clone(),
            ready_tx.clone(),
        );
        let tls = match (&https, https_seats.pop()) {
            (Some((l, acceptor)), Some(seat)) => match l.try_clone() {
                Ok(l) => Some((l, acceptor.clone(), seat)),
                Err(e) => {
                    eprintln!("sluice: {e}");
                    return ExitCode::from(2);
                }
            },
            _ => None,
        };
        let w = spawn_worker(i, l, seat, tls, plan, stop, opts, engine_opts, ready);
        match w {
            Ok(w) => workers.push(w),
            Err(e) => {
                eprintln!("sluice: cannot start a worker thread: {e}");
                return ExitCode::from(2);
            }
        }
    }
    drop(listener);
    drop(ready_tx);
    let mut processors = Processors::new(deployment.clone(), engine_opts.clone(), stop_rx);
    processors.start_if_due();
    let mut signals = Signals::install();
    let probes = internal.and_then(|i| {
        let ports = (i.port, i.https_port);
        start_health(&listen, ports, i.health, i.identity)
    });
    if ready_rx.iter().take(threads).count() < threads {
        eprintln!("sluice: a worker thread failed to start");
        let _ = stop_tx.send(true);
        return ExitCode::from(2);
    }
    announce(addr, https_port, probes.as_ref());
    if let Some(b) = banner {
        b(addr);
    }
    let faulty = probes.as_ref().map(|p| p.health.clone());
    let mut reload = reload.map(|(mut r, diags)| {
        r.https = https.is_some();
        let follow = (engine_opts.metrics.clone(), faulty);
        Reloading::new(r, (deployment.clone(), reloads.clone()), follow, &diags)
    });
    signals.serve(reload.as_mut(), &mut processors);
    // The probes say "not ready" while in-flight requests finish, and answer until they have.
    if let Some(p) = &probes {
        p.health.draining();
    }
    let _ = stop_tx.send(true);
    let mut code = ExitCode::SUCCESS;
    for w in workers {
        match w.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("sluice: {e}");
                code = ExitCode::from(1);
            }
            Err(_) => code = ExitCode::from(1),
        }
    }
    processors.join();
    if let Some(p) = probes {
        let _ = p.stop.send(true);
        let _ = p.thread.join();
    }
    code
}

/// Says where Sluice listens, on stdout (the first line is what tests and scripts wait for); the
/// probes say ready from then on.
fn announce(addr: SocketAddr, https: Option<SocketAddr>, probes: Option<&Probes>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "sluice listening on http://{addr}");
    if let Some(a) = https {
        let _ = writeln!(out, "sluice listening on https://{a}");
    }
    if let Some(p) = probes {
        p.health.serving();
        let _ = writeln!(out, "sluice health on http://{}", p.addr);
        if let Some(a) = p.https {
            let _ = writeln!(out, "sluice management on https://{a}");
        }
    }
    let _ = out.flush();
}

/// MI's internal HTTP API: its port, the probes' state, and the metrics' buckets (`None`: requests
/// are not counted).
struct Internal {
    port: u16,
    /// Over TLS too, on this port.
    https_port: Option<u16>,
    health: Arc<Health>,
    metrics: Option<Buckets>,
    /// The management API's users.
    users: Vec<management::auth::UserEntry>,
    /// `[keystore.primary]`'s key, served over TLS when `--tls-cert` is not given.
    identity: Option<tls::Identity>,
}

/// The internal API the settings and the command line ask for (`None`: off); `faulty`: what the
/// readiness probe reports left out.
fn internal_api(
    settings: &Settings,
    listen: &Listen,
    faulty: Vec<String>,
) -> Result<Option<Internal>, String> {
    let Some(port) = settings.internal_api(listen.internal_port) else {
        return Ok(None);
    };
    Ok(Some(Internal {
        port,
        https_port: settings.internal_https_api(listen.internal_https_port),
        health: Health::new(faulty),
        metrics: settings.metrics(),
        users: settings.users(),
        // A key store that cannot be read is reported; the TLS port then makes its own certificate.
        identity: settings.primary_identity().unwrap_or_else(|e| {
            tracing::warn!("{e}; the management API's TLS port uses a self-signed certificate");
            None
        }),
    }))
}

/// The request counters the workers write and the internal API serves, when it counts them.
fn metrics(
    plan: &Plan,
    host: String,
    (http, https): (SocketAddr, Option<SocketAddr>),
    internal: &Internal,
) -> Option<Arc<Metrics>> {
    let listeners = Listeners {
        host,
        http_port: http.port(),
        https_port: https.map(|a| a.port()),
    };
    let m = Metrics::new(&plan.services, internal.metrics.as_ref()?, listeners);
    m.watch_endpoints(deploy::endpoint_states(plan));
    internal.health.set_metrics(m.clone());
    Some(m)
}

/// The internal API's metrics (returned, for the workers to count into) and management API.
fn operations(
    deployment: &Arc<Deployment>,
    listen: &Listen,
    addrs: (SocketAddr, Option<SocketAddr>),
    internal: Option<&Internal>,
    (access_log, reloads): (
        Option<Arc<sluice_transport::access_log::AccessLog>>,
        Arc<deploy::Reloads>,
    ),
) -> Option<Arc<Metrics>> {
    let i = internal?;
    let host = host_label(&listen.host);
    let m = management_for(deployment, listen, &host, addrs, i).with_access_log(access_log);
    i.health.set_management(Arc::new(m.with_reloads(reloads)));
    metrics(&deployment.current(), host, addrs, i)
}

/// The metrics page reports the balance's open connections per worker.
fn watch_connections(
    metrics: Option<&Metrics>,
    seats: &[sluice_balance::Seat],
    https: &[sluice_balance::Seat],
) {
    let Some(m) = metrics else { return };
    for (listener, seats) in [("http", seats), ("https", https)] {
        if let Some(seat) = seats.first() {
            m.watch_connections(listener, seat.occupancy());
        }
    }
}

/// The management API for `plan`, with the internal API's users; `addrs`: where services are
/// reached (http, https).
fn management_for(
    deployment: &Arc<Deployment>,
    listen: &Listen,
    host: &str,
    (http, https): (SocketAddr, Option<SocketAddr>),
    internal: &Internal,
) -> management::Management {
    let home = listen
        .home
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let at = (host.to_owned(), http.port(), https.map(|a| a.port()));
    management::Management::new(deployment.clone(), &internal.users, at, home)
}

/// The host in the metrics' labels (MI's `host` and `invocation_url`): the address Sluice listens
/// on, or the machine's name when that is every address.
fn host_label(listen: &str) -> String {
    if !matches!(listen, "0.0.0.0" | "::" | "[::]" | "") {
        return listen.to_owned();
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// The health probes' listener, serving on a thread of its own.
struct Probes {
    health: Arc<Health>,
    addr: SocketAddr,
    https: Option<SocketAddr>,
    stop: tokio::sync::watch::Sender<bool>,
    thread: std::thread::JoinHandle<()>,
}

/// Starts the internal API (probes, metrics, management) on `host:port`, and over TLS on the
/// second port. A port that cannot be bound is reported and left off: serving goes on (a probe that
/// cannot connect fails, which shows it).
fn start_health(
    listen: &Listen,
    (port, https): (u16, Option<u16>),
    health: Arc<Health>,
    primary: Option<tls::Identity>,
) -> Option<Probes> {
    let host = &listen.host;
    let tls = https.and_then(|p| match internal_tls(listen, p, primary) {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::error!("management API over TLS off: {e}");
            None
        }
    });
    let tls_addr = tls.as_ref().and_then(|(l, _)| l.local_addr().ok());
    let started = bind(host, port).and_then(|l| {
        let addr = l.local_addr()?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let thread = health::spawn(l, tls, health.clone(), stopped)?;
        Ok(Probes {
            health,
            addr,
            https: tls_addr,
            stop,
            thread,
        })
    });
    match started {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::error!("health probes off: cannot listen on {host}:{port}: {e}");
            None
        }
    }
}

/// The internal API's TLS listener on `port`: `--tls-cert`'s certificate, else a self-signed one.
fn internal_tls(
    listen: &Listen,
    port: u16,
    primary: Option<tls::Identity>,
) -> Result<health::TlsInternal, String> {
    let identity = match (&listen.tls_cert, &listen.tls_key, primary) {
        (Some(c), Some(k), _) => tls::Identity::load("--tls-cert", c, "--tls-key", k)?,
        (_, _, Some(primary)) => primary,
        _ => {
            let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
            names.push(host_label(&listen.host));
            names.dedup();
            tls::Identity::self_signed(&names)?
        }
    };
    let config = tls::server_config(identity, &[] as &[PathBuf])?;
    let l = bind(&listen.host, port)
        .map_err(|e| format!("cannot listen on {}:{port}: {e}", listen.host))?;
    Ok((l, TlsAcceptor::from(config)))
}

/// One worker: a single-threaded runtime serving the shared listener (and the https one) until
/// `stop`, with an engine of its own.
#[allow(clippy::too_many_arguments)]
fn spawn_worker(
    i: usize,
    l: std::net::TcpListener,
    seat: sluice_balance::Seat,
    tls: Option<(std::net::TcpListener, TlsAcceptor, sluice_balance::Seat)>,
    deployment: Arc<Deployment>,
    mut stop: tokio::sync::watch::Receiver<bool>,
    opts: ServerOptions,
    engine_opts: EngineOptions,
    ready: std::sync::mpsc::Sender<()>,
) -> std::io::Result<std::thread::JoinHandle<std::io::Result<()>>> {
    std::thread::Builder::new()
        .name(format!("sluice-{i}"))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            let served = rt.block_on(async move {
                let l = tokio::net::TcpListener::from_std(l)?;
                let tls = match tls {
                    Some((l, acceptor, seat)) => Some(TlsListener {
                        listener: tokio::net::TcpListener::from_std(l)?,
                        acceptor,
                        seat,
                    }),
                    None => None,
                };
                let engine = WorkerEngine::new(deployment, engine_opts);
                let _ = ready.send(());
                let stopped = async move {
                    let _ = stop.wait_for(|s| *s).await;
                };
                sluice_transport::serve(l, engine, stopped, opts, seat, tls).await
            });
            // Every connection is done: what is left (a mediation thread past its deadline,
            // idle back-end connections) must not hold the exit.
            rt.shutdown_background();
            served
        })
}

/// `sluice` with no command: the embedded example with the built-in echo service behind it.
fn serve_default(listen: Listen, settings: &Settings) -> ExitCode {
    // The measuring kit's echo back-end, on one thread of its own.
    let echo = match sluice_echo::EchoServer::bind_and_start(
        ([127, 0, 0, 1], 0).into(),
        1,
        sluice_echo::EchoOptions::default(),
    ) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("sluice: cannot start the built-in echo service: {e}");
            return ExitCode::from(2);
        }
    };
    let echo_addr = echo.addr();
    let echo_uri = format!("EchoService=http://{echo_addr}/service/EchoService");
    let how = LoadOptions {
        endpoints: vec![echo_uri],
        strict: true,
        correlation_header: settings.correlation_header().map(str::to_owned),
        security_keys: None,
    };
    let Some((plan, _)) = load(&Source::Embedded, &how) else {
        return ExitCode::from(2);
    };
    let banner = |addr: SocketAddr| {
        let port = addr.port();
        eprintln!(
            "\nSluice is serving its embedded example (examples/default/synapse.xml) with a built-in echo service at http://{echo_addr}.\n\
             Services: http://localhost:{port}/services/\n\
             Try:\n  curl -s http://localhost:{port}/services/EchoProxy -H 'Content-Type: text/xml' -H 'SOAPAction: urn:echo' \\\n    -d '<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><hello>world</hello></soapenv:Body></soapenv:Envelope>'\n  curl -s http://localhost:{port}/services/HeaderRoutingProxy -H 'Content-Type: text/xml' -H 'routing: gold' -d '<a/>'\n  curl -s http://localhost:{port}/services/HeaderRoutingProxy -H 'Content-Type: text/xml' -d '<a/>'\n  curl -s http://localhost:{port}/orders/42\n  curl -s http://localhost:{port}/orders -H 'Content-Type: application/xml' -d '<order><id>7</id></order>'\n"
        );
    };
    let server = settings.server(ServerOptions {
        grace: Duration::from_secs(5),
        ..ServerOptions::default()
    });
    let access_log = match settings.access_log() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("sluice: {e}");
            return ExitCode::from(2);
        }
    };
    let internal = match internal_api(settings, &listen, Vec::new()) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("sluice: {e}");
            return ExitCode::from(2);
        }
    };
    let code = serve(
        (plan, None),
        listen,
        settings.http_port(),
        server,
        settings.engine(EngineOptions {
            access_log,
            ..EngineOptions::default()
        }),
        internal,
        Some(&banner),
    );
    echo.stop();
    code
}
