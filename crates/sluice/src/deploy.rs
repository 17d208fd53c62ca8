//! Loading the artifacts, and loading them again while serving (hot deployment).
//!
//! A reload reads and compiles everything again on the main thread, off the serving path, then
//! publishes the new plan ([`Deployment::publish`]): each worker's connections take it at their
//! next request, and requests in flight finish on the old one. It happens on `SIGHUP`, and, when
//! `[server] hot_deployment` is on (the default, as in MI), when the files Sluice was started on
//! change: their names, sizes and modification times are looked at every second, and a change is
//! deployed once they have held still for a look.
//!
//! A reload whose artifacts hold an error the serving plan did not have is refused as a whole:
//! the serving plan stays, and the diagnostics go to the log. (At start an artifact with an error
//! is left out and the others deploy, as in MI; a change is refused instead, so that a typo
//! never takes a running service away.)

use crate::health::Health;
use sluice_config::{Diagnostics, Severity};
use sluice_mediation::{CompileOptions, Plan};
use sluice_transport::metrics::Metrics;
use sluice_transport::Deployment;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

/// How often the deployed files are looked at.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// How the artifacts are loaded, the same each time.
#[derive(Clone, Default)]
pub struct LoadOptions {
    /// `--endpoint NAME=URI`.
    pub endpoints: Vec<String>,
    /// `--strict`: any error refuses everything.
    pub strict: bool,
    /// The correlation ID's header name, which a cache leaves out of its hashes.
    pub correlation_header: Option<String>,
    /// WS-Security's keys (the settings' `[keystore.primary]`), read when a secured proxy needs
    /// them.
    pub security_keys: Option<sluice_security::KeySource>,
}

/// Reads the WSDLs of `<wsdl>` endpoints before serving (as WSO2 MI reads them when it deploys),
/// each within 10 s; an endpoint whose WSDL cannot be read stays, and its messages fail.
pub fn read_wsdls(plan: &Plan, tls: &Arc<sluice_transport::tls::ClientConfig>) {
    if plan.wsdls.is_empty() {
        return;
    }
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(sluice_transport::wsdl::read_all(
            &plan.wsdls,
            tls.clone(),
            Duration::from_secs(10),
        )),
        Err(e) => eprintln!("sluice: cannot read the WSDLs of wsdl endpoints: {e}"),
    }
}

#[derive(Clone)]
pub enum Source {
    /// A PATH, and the home its relative `file:` paths are read from.
    Path(PathBuf, Option<PathBuf>),
    Embedded,
}

pub fn overrides(endpoints: &[String]) -> Result<HashMap<String, String>, String> {
    endpoints
        .iter()
        .map(|e| match e.split_once('=') {
            Some((n, u)) if !n.is_empty() && !u.is_empty() => Ok((n.to_owned(), u.to_owned())),
            _ => Err(format!("--endpoint '{e}': expected NAME=URI")),
        })
        .collect()
}

pub fn print_diagnostics(d: &Diagnostics) {
    let mut err = std::io::stderr().lock();
    for x in d.sorted() {
        let _ = writeln!(err, "{x}");
    }
}

/// Loads and compiles; prints every diagnostic. An artifact with an error is not deployed and the
/// others are, as in WSO2 MI; `None` (nothing starts) when `strict` and there are errors, or when
/// the command line itself is wrong (`--endpoint`).
pub fn load(source: &Source, how: &LoadOptions) -> Option<(Plan, Diagnostics)> {
    let opts = match overrides(&how.endpoints) {
        Ok(o) => CompileOptions {
            endpoint_overrides: o,
            correlation_header: how.correlation_header.clone(),
            security_keys: how.security_keys.clone(),
        },
        Err(e) => {
            eprintln!("error: {e}");
            return None;
        }
    };
    let (config, mut diags) = match source {
        Source::Path(p, home) => sluice_config::load_path_in(p, home.as_deref()),
        Source::Embedded => {
            sluice_config::load_str("<embedded>/synapse.xml", crate::DEFAULT_CONFIG)
        }
    };
    let plan = sluice_mediation::compile(&config, &opts, &mut diags);
    print_diagnostics(&diags);
    let errors = diags.count(Severity::Error);
    let command_line = diags
        .items
        .iter()
        .any(|d| d.severity == Severity::Error && &*d.location.file == "--endpoint");
    if errors > 0 && (how.strict || command_line) {
        eprintln!("sluice: {errors} error(s) in the configuration; nothing was started");
        return None;
    }
    if errors > 0 {
        eprintln!(
            "sluice: {errors} error(s) in the configuration: what they are in is not deployed, the rest is (--strict refuses to start instead)"
        );
    }
    Some((plan, diags))
}

/// SIGINT and SIGTERM (stop) and SIGHUP (reload), installed before Sluice says it is ready (so
/// they are handled from then on).
pub struct Signals {
    rt: tokio::runtime::Runtime,
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
    hup: Option<tokio::signal::unix::Signal>,
}

/// What the main thread is woken for.
enum Event {
    Stop,
    /// `SIGHUP`.
    Reload,
    /// Time to look at the files again.
    Look,
}

impl Signals {
    pub fn install() -> Signals {
        use tokio::signal::unix::{signal, SignalKind};
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let _guard = rt.enter();
        let (term, int, hup) = (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::hangup()).ok(),
        );
        drop(_guard);
        Signals { rt, term, int, hup }
    }

    /// Serves until SIGINT or SIGTERM, reloading on SIGHUP and, when the files are watched, when
    /// they change; `processors` start once a served plan has some.
    pub fn serve(&mut self, mut reload: Option<&mut Reloading>, processors: &mut Processors) {
        loop {
            processors.start_if_due();
            let look = (reload.as_ref())
                .filter(|r| r.watching())
                .map(|_| WATCH_INTERVAL);
            match (self.next(look), reload.as_deref_mut()) {
                (Event::Stop, _) => return,
                (Event::Reload, Some(r)) => r.reload("SIGHUP"),
                (Event::Look, Some(r)) => r.look(),
                (_, None) => tracing::info!("SIGHUP: nothing to reload (the embedded example)"),
            }
        }
    }

    /// Waits for a signal, or `look` to pass.
    fn next(&mut self, look: Option<Duration>) -> Event {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        let Signals { rt, term, int, hup } = self;
        rt.block_on(async {
            let tick = async {
                match look {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = recv(term) => Event::Stop,
                _ = recv(int) => Event::Stop,
                _ = recv(hup) => Event::Reload,
                _ = tick => Event::Look,
            }
        })
    }
}

/// The message processors' thread (`transport/processors.rs`), started the first time the served
/// plan has processors (at start or after a reload) and run until `stop`.
pub struct Processors {
    deployment: Arc<Deployment>,
    opts: sluice_transport::EngineOptions,
    stop: tokio::sync::watch::Receiver<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Said it could not start (said once).
    failed: bool,
}

impl Processors {
    pub fn new(
        deployment: Arc<Deployment>,
        opts: sluice_transport::EngineOptions,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Processors {
        Processors {
            deployment,
            opts,
            stop,
            thread: None,
            failed: false,
        }
    }

    /// Starts the thread when the served plan has processors and it has not started.
    pub fn start_if_due(&mut self) {
        if self.thread.is_some() || self.failed || self.deployment.current().processors.is_empty() {
            return;
        }
        let (d, o, s) = (
            self.deployment.clone(),
            self.opts.clone(),
            self.stop.clone(),
        );
        match sluice_transport::processors::spawn(d, o, s) {
            Ok(t) => self.thread = Some(t),
            Err(e) => {
                self.failed = true;
                eprintln!("sluice: message processors off: cannot start their thread: {e}");
            }
        }
    }

    /// Waits for the thread (once `stop` is sent).
    pub fn join(self) {
        if let Some(t) = self.thread {
            let _ = t.join();
        }
    }
}

/// What was left out, for the readiness probe: the proxies not deployed and the files holding
/// errors or unsupported features (MI lists its faulty CAR files).
pub fn left_out(plan: &Plan, diags: &Diagnostics) -> Vec<String> {
    let mut out: Vec<String> = plan.not_deployed.iter().map(|(n, _)| n.clone()).collect();
    for d in &diags.items {
        if matches!(d.severity, Severity::Error | Severity::Unsupported) {
            out.push(d.location.file.to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// What was deployed and what was not, in the log.
pub fn report_plan(plan: &Plan, https: bool) {
    let mut names: Vec<String> = plan.proxies.keys().cloned().collect();
    names.sort();
    for (n, why) in &plan.not_deployed {
        tracing::warn!("not deployed: {n}: {why}");
    }
    let only_https: Vec<&str> = plan
        .proxies
        .values()
        .filter(|p| !p.on_http)
        .map(|p| &*p.name)
        .collect();
    if !https && !only_https.is_empty() {
        tracing::warn!(
            "served on https only, and no --https-port is set: {}",
            only_https.join(", ")
        );
    }
    tracing::info!(
        "deployed {} proxy service(s): {}",
        names.len(),
        names.join(", ")
    );
}

/// What a reload needs: where the artifacts are and how they are loaded, and what follows the plan
/// besides the workers (the metrics page, the readiness probe).
pub struct Reloader {
    pub source: Source,
    pub how: LoadOptions,
    pub backend_tls: Arc<sluice_transport::tls::ClientConfig>,
    /// Whether the files are watched (`[server] hot_deployment`); `SIGHUP` reloads either way.
    pub watch: bool,
    /// Whether an https listener serves (a proxy on https only is warned of otherwise).
    pub https: bool,
    /// The files' [`fingerprint`] taken before the serving plan was read from them.
    pub loaded: u64,
}

/// The last reload's outcome, for the management API (`GET /management/server`: `lastReload`).
#[derive(Default)]
pub struct Reloads(std::sync::Mutex<Option<LastReload>>);

#[derive(Clone, Debug)]
pub struct LastReload {
    /// When it ended (Unix seconds).
    pub at: u64,
    /// What asked for it.
    pub why: String,
    pub deployed: bool,
    /// The new errors that refused it (`FILE: MESSAGE`).
    pub errors: Vec<String>,
}

impl Reloads {
    pub fn last(&self) -> Option<LastReload> {
        self.0.lock().ok()?.clone()
    }

    fn record(&self, why: &str, errors: Vec<String>) {
        let at = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if let Ok(mut last) = self.0.lock() {
            *last = Some(LastReload {
                at,
                why: why.to_owned(),
                deployed: errors.is_empty(),
                errors,
            });
        }
    }
}

/// A running deployment that reloads: what it serves and what was read to make it.
pub struct Reloading {
    r: Reloader,
    deployment: Arc<Deployment>,
    reloads: Arc<Reloads>,
    metrics: Option<Arc<Metrics>>,
    health: Option<Arc<Health>>,
    /// The errors of the serving plan (file and message): a reload with another is refused.
    errors: HashSet<(String, String)>,
    /// The files' fingerprint when the serving plan (or the last refused one) was read, and at the
    /// last look.
    loaded: u64,
    seen: u64,
}

impl Reloading {
    /// `diags`: the serving plan's diagnostics.
    pub fn new(
        r: Reloader,
        (deployment, reloads): (Arc<Deployment>, Arc<Reloads>),
        (metrics, health): (Option<Arc<Metrics>>, Option<Arc<Health>>),
        diags: &Diagnostics,
    ) -> Reloading {
        // Not taken now: the files may have changed since they were read (a client can be
        // served, and change them, before this runs).
        let print = r.loaded;
        Reloading {
            r,
            deployment,
            reloads,
            metrics,
            health,
            errors: errors(diags),
            loaded: print,
            seen: print,
        }
    }

    /// Whether the files are watched (then [`Reloading::look`] is due every [`WATCH_INTERVAL`]).
    pub fn watching(&self) -> bool {
        self.r.watch
    }

    /// Looks at the files: reloads when they changed since the serving plan was read and have
    /// held still since the last look.
    pub fn look(&mut self) {
        let now = fingerprint(&self.r.source);
        if now != self.loaded && now == self.seen {
            self.reload_read("the deployed files changed", now);
        }
        self.seen = now;
    }

    /// Loads everything again and serves it, unless it holds a new error.
    pub fn reload(&mut self, why: &str) {
        self.reload_read(why, fingerprint(&self.r.source));
    }

    /// [`Reloading::reload`] of the files whose fingerprint is `print`, read before loading: a
    /// change made during the load is seen at the next look.
    fn reload_read(&mut self, why: &str, print: u64) {
        let began = Instant::now();
        self.loaded = print;
        self.seen = print;
        tracing::info!("reloading: {why}");
        let Some((plan, diags)) = load(&self.r.source, &self.r.how) else {
            tracing::error!("reload refused: the configuration has errors; the serving one stays");
            let why = "the configuration has errors (--strict, or a wrong --endpoint)";
            self.reloads.record(why, vec![why.to_owned()]);
            return;
        };
        let errors = errors(&diags);
        let new: Vec<&(String, String)> = errors.difference(&self.errors).collect();
        if !new.is_empty() {
            for (file, message) in &new {
                tracing::error!("reload refused: {file}: {message}");
            }
            tracing::error!(
                "reload refused: {} new error(s); the serving configuration stays",
                new.len()
            );
            let mut said: Vec<String> = new.iter().map(|(f, m)| format!("{f}: {m}")).collect();
            said.sort();
            self.reloads.record(why, said);
            return;
        }
        read_wsdls(&plan, &self.r.backend_tls);
        report_plan(&plan, self.r.https);
        if let Some(h) = &self.health {
            h.set_faulty(left_out(&plan, &diags));
        }
        if let Some(m) = &self.metrics {
            m.serve(&plan.services);
            m.watch_endpoints(endpoint_states(&plan));
        }
        self.errors = errors;
        self.deployment.publish(Arc::new(plan));
        self.reloads.record(why, Vec::new());
        tracing::info!("reloaded in {:?}", began.elapsed());
    }
}

/// The named endpoints' states, sorted by name (for the metrics page).
pub fn endpoint_states(
    plan: &Plan,
) -> Vec<(String, Arc<sluice_mediation::health::EndpointHealth>)> {
    let mut endpoints: Vec<_> = plan
        .endpoints
        .get()
        .map(|all| {
            all.iter()
                .map(|(n, e)| (n.clone(), e.health.clone()))
                .collect()
        })
        .unwrap_or_default();
    endpoints.sort_by(|a, b| a.0.cmp(&b.0));
    endpoints
}

/// The errors among `diags`, by file and message (a line that moved is the same error).
fn errors(diags: &Diagnostics) -> HashSet<(String, String)> {
    diags
        .items
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| (d.location.file.to_string(), d.message.clone()))
        .collect()
}

/// A hash of the names, sizes and modification times of every file under the source (the file
/// itself when it is one); 0 for the embedded configuration. Each file's hash is added up, so the
/// order the folder lists them in does not matter and nothing is sorted.
pub fn fingerprint(source: &Source) -> u64 {
    let Source::Path(path, _) = source else {
        return 0;
    };
    let mut sum = 0u64;
    walk(path, 16, &mut sum);
    sum
}

/// Adds the hash of every file under `path` (followed through links, `depth` folders down) to
/// `sum`.
fn walk(path: &Path, depth: usize, sum: &mut u64) {
    use std::hash::{Hash, Hasher};
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.is_dir() {
        if let (Some(below), Ok(entries)) = (depth.checked_sub(1), std::fs::read_dir(path)) {
            for e in entries.flatten() {
                walk(&e.path(), below, sum);
            }
        }
        return;
    }
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (path.as_os_str().as_encoded_bytes(), meta.len(), modified).hash(&mut h);
    *sum = sum.wrapping_add(h.finish());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_moves_with_a_file_and_only_then() {
        let dir = std::env::temp_dir().join(format!("sluice-fingerprint-{}", std::process::id()));
        let inner = dir.join("proxy-services");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(inner.join("a.xml"), "<a/>").unwrap();
        let source = Source::Path(dir.clone(), None);
        let first = fingerprint(&source);
        assert_eq!(fingerprint(&source), first, "nothing changed");
        // A file added deep down, then its content grown, then a rename: each moves it.
        std::fs::write(inner.join("b.xml"), "<b/>").unwrap();
        let added = fingerprint(&source);
        assert_ne!(added, first);
        std::fs::write(inner.join("b.xml"), "<bb/>").unwrap();
        let grown = fingerprint(&source);
        assert_ne!(grown, added);
        std::fs::rename(inner.join("b.xml"), inner.join("c.xml")).unwrap();
        assert_ne!(fingerprint(&source), grown);
        std::fs::remove_file(inner.join("c.xml")).unwrap();
        // Back to the first files (a.xml untouched): the first fingerprint again.
        assert_eq!(fingerprint(&source), first);
        assert_eq!(fingerprint(&Source::Embedded), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
