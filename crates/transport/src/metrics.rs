//! Request counts and latencies per proxy and API, served in Prometheus' text format under WSO2
//! MI's metric names and labels, with the process's own figures beside them.
//!
//! | Metric | Type | Labels |
//! |---|---|---|
//! | `wso2_integration_proxy_request_count_total` | counter | `service_name`, `service_type="proxy"` |
//! | `wso2_integration_proxy_request_count_error_total` | counter | the same |
//! | `wso2_integration_proxy_latency_seconds` | histogram | the same |
//! | `wso2_integration_api_request_count_total`, `..._error_total`, `wso2_integration_api_latency_seconds` | as above | `service_name`, `service_type="api"`, `invocation_url` |
//! | `wso2_integration_service_up` | gauge: when it was deployed (Unix seconds) | `service_name`, `service_type` |
//! | `wso2_integration_server_up` | gauge: when Sluice started | `host`, `port`, `java_home`, `java_version` (empty) |
//! | `wso2_integration_server_version` | gauge: when Sluice started | `version`, `update_level` |
//! | `sluice_request_bodies_total` | counter: requests (the main sequence's too) by what was read of the body before the in-sequence | `body="streamed"` (nothing), `"head"` (up to the SOAP header), `"read"` (all) |
//! | `sluice_http_connections_open` | gauge: client connections open | `listener` (`http`, `https`), `worker` |
//! | `sluice_http_bytes_total` | counter: bytes client connections received and sent, as they crossed the sockets (heads, bodies, TLS records) | `direction` (`in`, `out`) |
//! | `sluice_worker_tasks` | gauge: tasks alive on a worker (a connection, a request's copies...) | `worker` |
//! | `sluice_worker_queue_depth` | gauge: tasks waiting in the worker's queue for it to take them | `worker` |
//! | `sluice_endpoint_active` | gauge: 1 while a named endpoint has had no failure since its last success, else 0 (marked or suspended) | `endpoint` |
//! | `sluice_endpoint_suspensions_total` | counter: times a failure suspended it | `endpoint` |
//! | `process_*` | the Prometheus client libraries' process metrics, read from `/proc` at scrape | |
//!
//! A request counts once its answer's head is ready (a client that goes away before is not
//! counted); it is an error when the fault sequence ran or Sluice answered with a fault of its own,
//! as MI counts one when its fault handler runs. The main sequence is not counted (MI neither).
//!
//! Each worker records into a [`Shard`] of its own: the counters are written by that thread only,
//! with plain loads and stores (no locked instruction, no cache line shared with another worker),
//! and a scrape adds the shards up.
//!
//! A shard counts for one plan: a reload gives each worker a new one for the new plan's services
//! ([`Metrics::renewed`]), and the page then lists the new plan's ([`Metrics::serve`]). A service
//! is known by its name and kind, so its counts go on across reloads: a scrape adds up every
//! shard an engine still holds and, once none does, folds a shard's counts into per-name totals.

use sluice_mediation::health::EndpointHealth;
use sluice_mediation::plan::Service;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// MI's default latency buckets, in seconds (`[metric_handler] proxy_latency_buckets` and
/// `api_latency_buckets` in its deployment.toml change them).
pub const DEFAULT_BUCKETS: [f64; 10] = [0.19, 0.20, 0.25, 0.30, 0.35, 0.40, 0.50, 0.60, 1.0, 5.0];

/// How Sluice is reached, for the labels MI puts on its metrics.
#[derive(Debug, Clone, Default)]
pub struct Listeners {
    /// The host name in `invocation_url` and `server_up`.
    pub host: String,
    pub http_port: u16,
    pub https_port: Option<u16>,
}

/// The upper bounds of latency buckets, in seconds, ascending.
#[derive(Debug, Clone)]
pub struct Buckets {
    pub proxy: Vec<f64>,
    pub api: Vec<f64>,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets {
            proxy: DEFAULT_BUCKETS.to_vec(),
            api: DEFAULT_BUCKETS.to_vec(),
        }
    }
}

/// Every worker's counters, and what the scrape page says of them.
pub struct Metrics {
    /// Latency bucket bounds in ns: proxies', APIs'.
    bounds: [Arc<[u64]>; 2],
    /// Cells per (service, listener): requests, errors, latency sum in ns, then one per bucket and
    /// one past the last.
    stride: usize,
    /// The services of the plan being served: what the page lists.
    services: Mutex<Vec<Service>>,
    listeners: Listeners,
    /// Every shard an engine may still count into.
    shards: Mutex<Vec<Arc<Shard>>>,
    /// The counts of shards no engine holds any more.
    retired: Mutex<Retired>,
    /// Each worker's runtime (for its task counts) and client traffic, by worker number.
    workers: Mutex<Vec<(Option<tokio::runtime::Handle>, Arc<Traffic>)>>,
    /// Each listener's connections per worker.
    connections: Mutex<Vec<(&'static str, sluice_balance::Occupancy)>>,
    /// The named endpoints' suspension states, by name.
    endpoints: Mutex<Vec<(String, Arc<EndpointHealth>)>>,
    /// When Sluice started serving the services (Unix seconds): MI's server and service up gauges.
    started: f64,
}

/// Counts folded in from shards no engine holds.
#[derive(Default)]
struct Retired {
    /// By (service name, is an API): both listeners' cells.
    cells: HashMap<(Arc<str>, bool), Vec<u64>>,
    bodies: [u64; 3],
}

/// Where a plan's services' counters are in a shard: a service's slot is its index in the plan's
/// [`Plan::services`](sluice_mediation::plan::Plan::services).
struct Layout {
    stride: usize,
    /// Per slot, its buckets' bounds in ns.
    bounds: Vec<Arc<[u64]>>,
    /// The slot of each service, by (name, is an API).
    slots: HashMap<(Arc<str>, bool), usize>,
}

const REQUESTS: usize = 0;
const ERRORS: usize = 1;
const SUM_NS: usize = 2;
const FIRST_BUCKET: usize = 3;

/// One worker's counters for one plan's services, written by that worker only.
pub struct Shard {
    layout: Layout,
    cells: Box<[AtomicU64]>,
    /// Requests by [`BodyNeed`]: none, the head, all.
    bodies: [AtomicU64; 3],
    /// Which worker writes it.
    worker: usize,
    /// That worker's client traffic.
    traffic: Arc<Traffic>,
}

/// A worker's client connections' bytes, as they crossed the sockets ([`crate::metered`]); written
/// by that worker's thread only.
#[derive(Default, Debug)]
pub struct Traffic {
    received: AtomicU64,
    sent: AtomicU64,
}

impl Traffic {
    #[inline(always)]
    pub fn received(&self, n: usize) {
        let c = &self.received;
        c.store(c.load(Relaxed).wrapping_add(n as u64), Relaxed);
    }

    #[inline(always)]
    pub fn sent(&self, n: usize) {
        let c = &self.sent;
        c.store(c.load(Relaxed).wrapping_add(n as u64), Relaxed);
    }
}

/// An answer made by a fault: the fault sequence's, or Sluice's own. Put in the response's
/// extensions, where [`Shard`]'s recording looks for it.
#[derive(Debug, Clone, Copy)]
pub struct Faulted;

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("shards", &self.shards.lock().map(|s| s.len()).unwrap_or(0))
            .finish_non_exhaustive()
    }
}

impl Metrics {
    pub fn new(services: &[Service], buckets: &Buckets, listeners: Listeners) -> Arc<Metrics> {
        let ns = |b: &[f64]| -> Arc<[u64]> { b.iter().map(|s| (s * 1e9) as u64).collect() };
        let widest = buckets.proxy.len().max(buckets.api.len());
        Arc::new(Metrics {
            bounds: [ns(&buckets.proxy), ns(&buckets.api)],
            stride: FIRST_BUCKET + widest + 1,
            services: Mutex::new(services.to_vec()),
            listeners,
            shards: Mutex::new(Vec::new()),
            retired: Mutex::new(Retired::default()),
            workers: Mutex::new(Vec::new()),
            connections: Mutex::new(Vec::new()),
            endpoints: Mutex::new(Vec::new()),
            started: unix_now(),
        })
    }

    /// A new worker's shard for `services` (its plan's), counted in every scrape from now on; made
    /// on the worker's runtime (its tasks are reported).
    pub fn shard(&self, services: &[Service]) -> Arc<Shard> {
        let (worker, traffic) = match self.workers.lock() {
            Ok(mut w) => {
                let traffic = Arc::new(Traffic::default());
                w.push((tokio::runtime::Handle::try_current().ok(), traffic.clone()));
                (w.len() - 1, traffic)
            }
            Err(_) => (0, Arc::new(Traffic::default())),
        };
        self.shard_for(services, worker, traffic)
    }

    /// The shard of `old`'s worker for a new plan's `services`.
    pub fn renewed(&self, old: &Shard, services: &[Service]) -> Arc<Shard> {
        self.shard_for(services, old.worker, old.traffic.clone())
    }

    fn shard_for(&self, services: &[Service], worker: usize, traffic: Arc<Traffic>) -> Arc<Shard> {
        let layout = Layout {
            stride: self.stride,
            bounds: services
                .iter()
                .map(|s| self.bounds[usize::from(s.api_context.is_some())].clone())
                .collect(),
            slots: services
                .iter()
                .enumerate()
                .map(|(i, s)| (key(s), i))
                .collect(),
        };
        let cells = services.len() * 2 * self.stride;
        let shard = Arc::new(Shard {
            layout,
            cells: (0..cells).map(|_| AtomicU64::new(0)).collect(),
            bodies: Default::default(),
            worker,
            traffic,
        });
        if let Ok(mut shards) = self.shards.lock() {
            shards.push(shard.clone());
        }
        shard
    }

    /// From now on the page lists these services (a new plan's).
    pub fn serve(&self, services: &[Service]) {
        if let Ok(mut s) = self.services.lock() {
            *s = services.to_vec();
        }
    }

    /// Reports `listener`'s open connections per worker from now on.
    pub fn watch_connections(&self, listener: &'static str, occupancy: sluice_balance::Occupancy) {
        if let Ok(mut c) = self.connections.lock() {
            c.push((listener, occupancy));
        }
    }

    /// Reports these endpoints' states (named, sorted by name) from now on.
    pub fn watch_endpoints(&self, endpoints: Vec<(String, Arc<EndpointHealth>)>) {
        if let Ok(mut e) = self.endpoints.lock() {
            *e = endpoints;
        }
    }

    /// Folds the shards no engine holds any more into the retired totals.
    fn retire(&self) {
        let (Ok(mut shards), Ok(mut retired)) = (self.shards.lock(), self.retired.lock()) else {
            return;
        };
        // Only this list holds a shard whose count is 1, and the lock keeps it from being cloned.
        shards.retain(|s| {
            if Arc::strong_count(s) > 1 {
                return true;
            }
            for (k, n) in s.bodies.iter().enumerate() {
                retired.bodies[k] = retired.bodies[k].wrapping_add(n.load(Relaxed));
            }
            let width = 2 * s.layout.stride;
            for (name, &slot) in &s.layout.slots {
                let sum = retired
                    .cells
                    .entry(name.clone())
                    .or_insert_with(|| vec![0; width]);
                for (t, c) in sum.iter_mut().zip(&s.cells[slot * width..][..width]) {
                    *t = t.wrapping_add(c.load(Relaxed));
                }
            }
            false
        });
    }

    /// The cells of service `s` on listener `l` (0 http, 1 https), added over every shard and
    /// what retired ones counted.
    fn totals(&self, s: &Service, l: usize) -> Vec<u64> {
        let stride = self.stride;
        let k = key(s);
        let mut sum = match self.retired.lock() {
            Ok(r) => r
                .cells
                .get(&k)
                .map_or_else(|| vec![0; stride], |c| c[l * stride..][..stride].to_vec()),
            Err(_) => vec![0; stride],
        };
        if let Ok(shards) = self.shards.lock() {
            for shard in shards.iter() {
                let Some(&slot) = shard.layout.slots.get(&k) else {
                    continue;
                };
                let at = (slot * 2 + l) * stride;
                for (t, c) in sum.iter_mut().zip(&shard.cells[at..at + stride]) {
                    *t = t.wrapping_add(c.load(Relaxed));
                }
            }
        }
        sum
    }

    /// The scrape page (Prometheus text format 0.0.4).
    pub fn render(&self) -> String {
        self.retire();
        let services = self.services.lock().map(|s| s.clone()).unwrap_or_default();
        let mut out = String::with_capacity(4096);
        let started = self.started;
        let host = escape(&self.listeners.host);
        family(
            &mut out,
            "wso2_integration_server_up",
            "gauge",
            "Server status",
        );
        let _ = writeln!(
            out,
            "wso2_integration_server_up{{host=\"{host}\",port=\"{}\",java_home=\"\",java_version=\"\"}} {started}",
            self.listeners.http_port
        );
        family(
            &mut out,
            "wso2_integration_server_version",
            "gauge",
            "Version and Update Level of Server",
        );
        let _ = writeln!(
            out,
            "wso2_integration_server_version{{version=\"{}\",update_level=\"0\"}} {started}",
            env!("CARGO_PKG_VERSION")
        );
        family(
            &mut out,
            "wso2_integration_service_up",
            "gauge",
            "Service status",
        );
        for s in &services {
            let _ = writeln!(
                out,
                "wso2_integration_service_up{{service_name=\"{}\",service_type=\"{}\"}} {}",
                escape(&s.name),
                kind(s),
                started
            );
        }
        for api in [false, true] {
            self.render_kind(&mut out, &services, api);
        }
        self.render_workers(&mut out);
        process_metrics(&mut out);
        out
    }

    /// Sluice's own: bodies, connections, the workers' tasks.
    fn render_workers(&self, out: &mut String) {
        let shards: Vec<Arc<Shard>> = self.shards.lock().map(|s| s.clone()).unwrap_or_default();
        let name = "sluice_request_bodies_total";
        let help = "Requests by what was read of the body before the in-sequence ran";
        family(out, name, "counter", help);
        let retired = self.retired.lock().map(|r| r.bodies).unwrap_or_default();
        for (k, body) in ["streamed", "head", "read"].iter().enumerate() {
            let n: u64 = shards.iter().map(|s| s.bodies[k].load(Relaxed)).sum();
            let n = n.wrapping_add(retired[k]);
            let _ = writeln!(out, "{name}{{body=\"{body}\"}} {n}");
        }
        let name = "sluice_http_connections_open";
        family(
            out,
            name,
            "gauge",
            "Client connections open, per listener and worker",
        );
        for (listener, occupancy) in self
            .connections
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default()
        {
            for (w, n) in occupancy.open().iter().enumerate() {
                let _ = writeln!(out, "{name}{{listener=\"{listener}\",worker=\"{w}\"}} {n}");
            }
        }
        let endpoints = self.endpoints.lock().map(|e| e.clone()).unwrap_or_default();
        let help = "1 while the endpoint has had no failure since its last success";
        family(out, "sluice_endpoint_active", "gauge", help);
        for (name, h) in &endpoints {
            let _ = writeln!(
                out,
                "sluice_endpoint_active{{endpoint=\"{}\"}} {}",
                escape(name),
                u8::from(h.is_active())
            );
        }
        let name = "sluice_endpoint_suspensions_total";
        family(
            out,
            name,
            "counter",
            "Times a failure suspended the endpoint",
        );
        for (ep, h) in &endpoints {
            let _ = writeln!(
                out,
                "{name}{{endpoint=\"{}\"}} {}",
                escape(ep),
                h.suspensions()
            );
        }
        let workers = self.workers.lock().map(|w| w.clone()).unwrap_or_default();
        let name = "sluice_http_bytes_total";
        let help = "Bytes client connections received and sent (heads, bodies, TLS records)";
        family(out, name, "counter", help);
        for (direction, pick) in [("in", true), ("out", false)] {
            let n: u64 = workers
                .iter()
                .map(|(_, t)| if pick { &t.received } else { &t.sent })
                .map(|c| c.load(Relaxed))
                .sum();
            let _ = writeln!(out, "{name}{{direction=\"{direction}\"}} {n}");
        }
        let runtimes: Vec<(usize, tokio::runtime::RuntimeMetrics)> = workers
            .iter()
            .enumerate()
            .filter_map(|(w, (rt, _))| Some((w, rt.as_ref()?.metrics())))
            .collect();
        family(
            out,
            "sluice_worker_tasks",
            "gauge",
            "Tasks alive on a worker",
        );
        for (w, m) in &runtimes {
            let _ = writeln!(
                out,
                "sluice_worker_tasks{{worker=\"{w}\"}} {}",
                m.num_alive_tasks()
            );
        }
        let help = "Tasks waiting in a worker's queue";
        family(out, "sluice_worker_queue_depth", "gauge", help);
        for (w, m) in &runtimes {
            let _ = writeln!(
                out,
                "sluice_worker_queue_depth{{worker=\"{w}\"}} {}",
                m.global_queue_depth()
            );
        }
    }

    /// The counters and histograms of the proxies, or of the APIs.
    fn render_kind(&self, out: &mut String, services: &[Service], api: bool) {
        let (what, noun) = if api {
            ("api", "an api")
        } else {
            ("proxy", "a proxy service")
        };
        // (service, its label set, its cells) for each that is counted: a proxy once, an API once
        // per listener (its invocation URL differs).
        let mut rows = Vec::new();
        for s in services {
            if s.api_context.is_some() != api {
                continue;
            }
            let name = escape(&s.name);
            if let Some(context) = &s.api_context {
                let ctx = context.trim_start_matches('/');
                let mut listeners = vec![(0, "http", self.listeners.http_port)];
                if let Some(p) = self.listeners.https_port {
                    listeners.push((1, "https", p));
                }
                for (l, scheme, port) in listeners {
                    let url = format!("{scheme}://{}:{port}/{ctx}", self.listeners.host);
                    let labels = format!(
                        "service_name=\"{name}\",service_type=\"api\",invocation_url=\"{}\"",
                        escape(&url)
                    );
                    rows.push((labels, self.totals(s, l)));
                }
            } else {
                let mut cells = self.totals(s, 0);
                for (t, c) in cells.iter_mut().zip(self.totals(s, 1)) {
                    *t = t.wrapping_add(c);
                }
                rows.push((
                    format!("service_name=\"{name}\",service_type=\"proxy\""),
                    cells,
                ));
            }
        }
        let total = format!("wso2_integration_{what}_request_count_total");
        family(
            out,
            &total,
            "counter",
            &format!("Total number of requests to {noun}"),
        );
        for (labels, cells) in &rows {
            let _ = writeln!(out, "{total}{{{labels}}} {}", cells[REQUESTS]);
        }
        let errors = format!("wso2_integration_{what}_request_count_error_total");
        let help = format!("Total number of error requests to {noun}");
        family(out, &errors, "counter", &help);
        for (labels, cells) in &rows {
            let _ = writeln!(out, "{errors}{{{labels}}} {}", cells[ERRORS]);
        }
        let latency = format!("wso2_integration_{what}_latency_seconds");
        let help = format!("Latency of requests to {noun}");
        family(out, &latency, "histogram", &help);
        // As MI, a service has a histogram once it has had a request.
        let bounds = &self.bounds[usize::from(api)];
        for (labels, cells) in rows.iter().filter(|r| r.1[REQUESTS] > 0) {
            let mut seen = 0;
            for (k, b) in bounds.iter().enumerate() {
                seen += cells[FIRST_BUCKET + k];
                let le = *b as f64 / 1e9;
                let _ = writeln!(out, "{latency}_bucket{{{labels},le=\"{le}\"}} {seen}");
            }
            seen += cells[FIRST_BUCKET + bounds.len()];
            let _ = writeln!(out, "{latency}_bucket{{{labels},le=\"+Inf\"}} {seen}");
            let _ = writeln!(out, "{latency}_count{{{labels}}} {seen}");
            let sum = cells[SUM_NS] as f64 / 1e9;
            let _ = writeln!(out, "{latency}_sum{{{labels}}} {sum}");
        }
    }
}

impl Shard {
    /// Its worker's client traffic, for the connections it serves.
    pub fn traffic(&self) -> Arc<Traffic> {
        self.traffic.clone()
    }

    /// Counts a request by what mediation reads of its body before the in-sequence.
    #[inline]
    pub fn body(&self, need: sluice_expr::BodyNeed) {
        let c = &self.bodies[match need {
            sluice_expr::BodyNeed::None => 0,
            sluice_expr::BodyNeed::Headers => 1,
            sluice_expr::BodyNeed::Full => 2,
        }];
        c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// Counts a request to service `slot`, on the https listener or not, that began at `start`
    /// and is answered with `response`: an error when a fault made the answer.
    #[inline]
    pub fn record<B>(
        &self,
        slot: usize,
        https: bool,
        start: Instant,
        response: &http::Response<B>,
    ) {
        let error = response.extensions().get::<Faulted>().is_some();
        let d = start.elapsed();
        let ns = d.as_secs().saturating_mul(1_000_000_000) + u64::from(d.subsec_nanos());
        let bounds = &self.layout.bounds[slot];
        let bucket = bounds.iter().position(|&b| ns <= b).unwrap_or(bounds.len());
        let at = (slot * 2 + usize::from(https)) * self.layout.stride;
        self.add(at + REQUESTS, 1);
        self.add(at + ERRORS, u64::from(error));
        self.add(at + SUM_NS, ns);
        self.add(at + FIRST_BUCKET + bucket, 1);
    }

    /// `cells[i] += n`, by the one thread that writes this shard.
    #[inline(always)]
    fn add(&self, i: usize, n: u64) {
        if let Some(c) = self.cells.get(i) {
            c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
        }
    }
}

/// A service's name and whether it is an API: what its counts are kept by across plans.
fn key(s: &Service) -> (Arc<str>, bool) {
    (s.name.clone(), s.api_context.is_some())
}

fn kind(s: &Service) -> &'static str {
    if s.api_context.is_some() {
        "api"
    } else {
        "proxy"
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A label value as the text format writes it: `\`, `"` and line feeds escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs_f64()
}

/// The process metrics every Prometheus client library exports, from `/proc/self` (Linux; left
/// out where it cannot be read).
fn process_metrics(out: &mut String) {
    let page = 4096.0;
    let ticks = 100.0; // USER_HZ, 100 on every Linux Sluice runs on
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // Fields after the command name, which is in parentheses and may hold spaces.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
        // Counted from field 3 (state) as 0: utime 13, stime 14, starttime 21, vsize 22, rss 23.
        if let (Some(u), Some(s)) = (num(11), num(12)) {
            family(
                out,
                "process_cpu_seconds_total",
                "counter",
                "Total user and system CPU time spent in seconds.",
            );
            let _ = writeln!(out, "process_cpu_seconds_total {}", (u + s) / ticks);
        }
        if let Some(v) = num(20) {
            family(
                out,
                "process_virtual_memory_bytes",
                "gauge",
                "Virtual memory size in bytes.",
            );
            let _ = writeln!(out, "process_virtual_memory_bytes {v}");
        }
        if let Some(r) = num(21) {
            family(
                out,
                "process_resident_memory_bytes",
                "gauge",
                "Resident memory size in bytes.",
            );
            let _ = writeln!(out, "process_resident_memory_bytes {}", r * page);
        }
        if let (Some(start), Some(boot)) = (num(19), boot_time()) {
            family(
                out,
                "process_start_time_seconds",
                "gauge",
                "Start time of the process since unix epoch in seconds.",
            );
            let _ = writeln!(out, "process_start_time_seconds {}", boot + start / ticks);
        }
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        family(
            out,
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
        );
        let _ = writeln!(out, "process_open_fds {}", fds.count());
    }
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    if let Some(max) = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse::<f64>().ok())
    {
        family(
            out,
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors.",
        );
        let _ = writeln!(out, "process_max_fds {max}");
    }
}

/// When the machine booted (Unix seconds), from `/proc/stat`.
fn boot_time() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn services() -> Vec<Service> {
        vec![
            Service {
                name: "StockQuote\"Proxy".into(),
                api_context: None,
            },
            Service {
                name: "Health".into(),
                api_context: Some("/healthcare".into()),
            },
        ]
    }

    #[test]
    fn shards_add_up_by_service_listener_and_bucket() {
        let listeners = Listeners {
            host: "h".into(),
            http_port: 8290,
            https_port: Some(8253),
        };
        let m = Metrics::new(&services(), &Buckets::default(), listeners);
        let (a, b) = (m.shard(&services()), m.shard(&services()));
        let faulted = {
            let mut r = http::Response::new(());
            r.extensions_mut().insert(Faulted);
            r
        };
        let ok = http::Response::new(());
        let now = Instant::now();
        a.record(0, false, now, &ok);
        b.record(0, true, now, &faulted);
        b.record(1, true, now, &ok);
        a.record(1, false, now, &faulted);
        let page = m.render();
        let line = |prefix: &str| {
            page.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no {prefix} in\n{page}"))
                .to_owned()
        };
        // The sample of `name{labels}`.
        let value = |name: &str, labels: &str| {
            let series = format!("{name}{{{labels}}} ");
            line(&series)[series.len()..].to_owned()
        };
        let proxy = "service_name=\"StockQuote\\\"Proxy\",service_type=\"proxy\"";
        let http = "service_name=\"Health\",service_type=\"api\",invocation_url=\"http://h:8290/healthcare\"";
        let https = "service_name=\"Health\",service_type=\"api\",invocation_url=\"https://h:8253/healthcare\"";
        let bucket = format!("{proxy},le=\"0.19\"");
        for (name, labels, want) in [
            ("wso2_integration_proxy_request_count_total", proxy, "2"),
            (
                "wso2_integration_proxy_request_count_error_total",
                proxy,
                "1",
            ),
            (
                "wso2_integration_proxy_latency_seconds_bucket",
                bucket.as_str(),
                "2",
            ),
            ("wso2_integration_proxy_latency_seconds_count", proxy, "2"),
            ("wso2_integration_api_request_count_total", http, "1"),
            ("wso2_integration_api_request_count_error_total", http, "1"),
            ("wso2_integration_api_request_count_total", https, "1"),
            ("wso2_integration_api_request_count_error_total", https, "0"),
        ] {
            assert_eq!(value(name, labels), want, "{name}{{{labels}}}");
        }
        assert!(
            line("wso2_integration_service_up{service_name=\"Health\",service_type=\"api\"}").len()
                > 10
        );
        assert!(line("process_resident_memory_bytes ").len() > 10);
        // Every sample line is `name{labels} value` or `name value`, the value a number.
        for l in page.lines().filter(|l| !l.starts_with('#')) {
            let v = l.rsplit_once(' ').map(|(_, v)| v).unwrap_or("");
            assert!(v.parse::<f64>().is_ok(), "{l}");
        }
    }

    #[test]
    fn a_latency_falls_in_the_first_bucket_that_holds_it() {
        let buckets = Buckets {
            proxy: vec![0.001, 10.0],
            api: vec![1.0],
        };
        let m = Metrics::new(&services(), &buckets, Listeners::default());
        let s = m.shard(&services());
        // 5 ms: past 0.001, within 10
        let start = Instant::now() - Duration::from_millis(5);
        s.record(0, false, start, &http::Response::new(()));
        let page = m.render();
        let q = "service_name=\"StockQuote\\\"Proxy\",service_type=\"proxy\"";
        assert!(
            page.contains(&format!("_bucket{{{q},le=\"0.001\"}} 0\n")),
            "{page}"
        );
        assert!(
            page.contains(&format!("_bucket{{{q},le=\"10\"}} 1\n")),
            "{page}"
        );
        assert!(
            page.contains(&format!("_bucket{{{q},le=\"+Inf\"}} 1\n")),
            "{page}"
        );
    }

    /// A reload: each worker's shard for the new plan; a service's counts go on by name, the page
    /// lists the new plan's services, and a shard no engine holds is folded in once.
    #[test]
    fn counts_go_on_by_name_across_plans() {
        let m = Metrics::new(&services(), &Buckets::default(), Listeners::default());
        let old = m.shard(&services());
        let ok = http::Response::new(());
        old.record(0, false, Instant::now(), &ok);
        old.body(sluice_expr::BodyNeed::Full);
        // The new plan: the API first, the proxy gone, a new proxy.
        let next = vec![
            services()[1].clone(),
            Service {
                name: "New".into(),
                api_context: None,
            },
        ];
        let new = m.renewed(&old, &next);
        m.serve(&next);
        new.record(1, false, Instant::now(), &ok);
        new.record(0, false, Instant::now(), &ok);
        old.record(1, false, Instant::now(), &ok); // an in-flight request of the old plan
        let count = |page: &str, who: &str| {
            page.lines()
                .find(|l| l.contains("request_count_total{") && l.contains(who))
                .map(|l| l.rsplit_once(' ').unwrap().1.to_owned())
        };
        let page = m.render();
        assert_eq!(count(&page, "\"Health\"").as_deref(), Some("2"), "{page}");
        assert_eq!(count(&page, "\"New\"").as_deref(), Some("1"), "{page}");
        assert_eq!(count(&page, "StockQuote"), None, "{page}");
        drop(old);
        let page = m.render();
        assert_eq!(m.shards.lock().unwrap().len(), 1);
        assert_eq!(count(&page, "\"Health\"").as_deref(), Some("2"), "{page}");
        assert!(
            page.contains("sluice_request_bodies_total{body=\"read\"} 1\n"),
            "{page}"
        );
        let page = m.render();
        assert_eq!(count(&page, "\"Health\"").as_deref(), Some("2"), "{page}");
    }
}
