//! `<cache>` (MI 4.x): responses kept in memory for identical requests.
//!
//! | Where | What it does |
//! |---|---|
//! | request path | The request's hash (SHA-256 of its method, path and query, the headers the `<protocol>` says, and its body). A fresh response cached for it answers at once: through `<onCacheHit>` when there is one, else straight back to the client, and nothing after the cache runs. Otherwise the hash goes with the message (property `sluice.cache.hash`). |
//! | response path (`collector="true"`) | The response (status, headers, body) is kept for that hash for `timeout` seconds, when its status matches `responseCodes` and it is no larger than `maxMessageSize`: the settings of the request-side cache that missed, which left them in the store with the hash (as MI leaves its placeholder). |
//!
//! With `<enableCacheControl>true</enableCacheControl>` (in `<protocol>`), as MI: a request with
//! `Cache-Control: no-cache` (or `no-store`) is not answered from the cache, a response with
//! `no-store` is not kept, and one with `max-age=N` is kept at most N seconds. With
//! `<includeAgeHeader>true</includeAgeHeader>` a cached answer carries `Age` (whole seconds since
//! it was kept).
//!
//! One store serves every cache mediator of the process (as MI's single mediator cache), in 16
//! shards each behind its own lock; a cache that misses makes room in its shard for its share of
//! its `maxSize`, expired entries going first, then the oldest. The request's body is read whole
//! (it is part of the hash), so a cached flow does not stream.

use crate::mediators::prelude::*;
use crate::message::Direction;
use http::{HeaderMap, HeaderName, StatusCode};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The property that carries a request's hash to the collector.
const HASH_PROPERTY: &str = "sluice.cache.hash";

const SHARDS: usize = 16;

/// Whether `headers`' Cache-Control holds `directive` (any case), and its value (`max-age=60`).
fn cache_directive<'h>(headers: &'h HeaderMap, directive: &str) -> Option<Option<&'h str>> {
    headers
        .get_all(http::header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .find_map(|d| {
            let (name, value) = match d.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
                None => (d, None),
            };
            name.eq_ignore_ascii_case(directive).then_some(value)
        })
}

#[derive(Debug)]
pub struct CachePlan {
    collector: bool,
    rules: Arc<Rules>,
    on_hit: Option<Arc<SeqPlan>>,
    methods: Option<Vec<http::Method>>,
    exclude: Vec<HeaderName>,
    include: Vec<HeaderName>,
    /// The correlation ID's header: never hashed (MI excludes it for good: it is new with every
    /// request).
    correlation: HeaderName,
    cache_control: bool,
    age_header: bool,
}

/// What a request-side cache says of the responses kept for it.
#[derive(Debug)]
struct Rules {
    timeout: Duration,
    max_message_size: Option<usize>,
    max_size: usize,
    response_codes: Option<FullRegex>,
    cache_control: bool,
}

pub(crate) fn compile(c: &mut Compiler, k: &cfg::Cache, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let on_hit = match &k.on_hit {
        Some(s) => Some(c.sequence_ref(s, "onCacheHit")?),
        None => None,
    };
    let response_codes = match &k.response_codes {
        Some(r) => Some(c.regex(r, &k.loc, el)?),
        None => None,
    };
    let headers = |names: &[String]| -> Vec<HeaderName> {
        names
            .iter()
            .filter_map(|n| HeaderName::from_bytes(n.as_bytes()).ok())
            .collect()
    };
    Some(Step::Cache(CachePlan {
        collector: k.collector,
        rules: Arc::new(Rules {
            timeout: Duration::from_secs(k.timeout_secs),
            max_message_size: k.max_message_size,
            max_size: k.max_size,
            response_codes,
            cache_control: k.cache_control,
        }),
        on_hit,
        methods: k.methods.as_ref().map(|ms| {
            ms.iter()
                .filter_map(|x| http::Method::from_bytes(x.to_ascii_uppercase().as_bytes()).ok())
                .collect()
        }),
        exclude: headers(&k.headers_exclude),
        include: headers(&k.headers_include),
        correlation: HeaderName::from_bytes(
            c.opts
                .correlation_header
                .as_deref()
                .unwrap_or("activityid")
                .as_bytes(),
        )
        .unwrap_or(HeaderName::from_static("activityid")),
        cache_control: k.cache_control,
        age_header: k.age_header,
    }))
}

/// What the store holds for a request's hash: the rules of the cache that missed it, and once the
/// collector has it, the response.
struct Entry {
    rules: Arc<Rules>,
    response: Option<Cached>,
    expires: Instant,
    stored: Instant,
}

/// A response kept.
#[derive(Clone)]
struct Cached {
    status: StatusCode,
    headers: HeaderMap,
    body: bytes::Bytes,
}

type Shard = Mutex<HashMap<[u8; 32], Entry>>;

fn store() -> &'static [Shard; SHARDS] {
    static STORE: OnceLock<[Shard; SHARDS]> = OnceLock::new();
    STORE.get_or_init(|| std::array::from_fn(|_| Mutex::new(HashMap::new())))
}

fn shard(hash: &[u8; 32]) -> std::sync::MutexGuard<'static, HashMap<[u8; 32], Entry>> {
    // A poisoned shard holds whole entries only: go on with it.
    store()[usize::from(hash[0]) % SHARDS]
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Mediator for CachePlan {
    fn heavy(&self) -> bool {
        self.on_hit.as_ref().is_some_and(|s| s.heavy)
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        if self.collector {
            self.collect(cx.msg);
            return Ok(None);
        }
        self.look_up(cx)
    }
}

impl CachePlan {
    /// The request's hash, or `None` when its method is not cached.
    fn hash(&self, msg: &Message) -> Option<[u8; 32]> {
        if let Some(ms) = &self.methods {
            if !ms.contains(&msg.method) {
                return None;
            }
        }
        let mut d = ring::digest::Context::new(&ring::digest::SHA256);
        let mut field = |b: &[u8]| {
            d.update(&(b.len() as u64).to_le_bytes());
            d.update(b);
        };
        field(msg.method.as_str().as_bytes());
        field(msg.path_and_query.as_bytes());
        let mut names: Vec<&HeaderName> = msg
            .headers
            .keys()
            .filter(|n| **n != self.correlation)
            .filter(|n| {
                if self.include.is_empty() {
                    !self.exclude.contains(n)
                } else {
                    self.include.contains(n)
                }
            })
            .collect();
        names.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        for n in names {
            for v in msg.headers.get_all(n) {
                field(n.as_str().as_bytes());
                field(v.as_bytes());
            }
        }
        if let Body::Bytes(b) = &msg.body {
            field(b);
        }
        d.finish().as_ref().try_into().ok()
    }

    /// The request path: a fresh cached response answers; else the hash goes with the message.
    fn look_up(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let Some(hash) = self.hash(cx.msg) else {
            return Ok(None);
        };
        // With Cache-Control obeyed, a request that asks for a fresh answer gets one (and the
        // collector keeps it in place of the old).
        let fresh_wanted = self.cache_control
            && (cache_directive(&cx.msg.headers, "no-cache").is_some()
                || cache_directive(&cx.msg.headers, "no-store").is_some());
        let now = Instant::now();
        let hit = {
            let mut s = shard(&hash);
            match s.get(&hash) {
                Some(Entry {
                    response: Some(r),
                    expires,
                    stored,
                    ..
                }) if *expires > now && !fresh_wanted => Some((r.clone(), *stored)),
                _ => {
                    // A miss: the rules wait for the collector, as MI's placeholder does.
                    let entry = Entry {
                        rules: self.rules.clone(),
                        response: None,
                        expires: now + self.rules.timeout,
                        stored: now,
                    };
                    make_room(&mut s, &hash, self.rules.max_size, now);
                    s.insert(hash, entry);
                    None
                }
            }
        };
        let Some((
            Cached {
                status,
                mut headers,
                body,
            },
            stored,
        )) = hit
        else {
            cx.msg.props.set(HASH_PROPERTY, hex(&hash));
            return Ok(None);
        };
        if self.age_header {
            let age = now.saturating_duration_since(stored).as_secs();
            headers.insert(http::header::AGE, http::HeaderValue::from(age));
        }
        let msg = &mut *cx.msg;
        msg.direction = Direction::Response;
        msg.status = Some(status);
        msg.headers = headers;
        msg.body = if body.is_empty() {
            Body::Empty
        } else {
            Body::Bytes(body)
        };
        msg.soap = crate::message::soap_version(&msg.headers);
        msg.json_out = None;
        msg.to = None;
        *cx.doc = DocCache::new();
        match &self.on_hit {
            // What follows the cache does not run: the onCacheHit sequence decides, and a
            // response it leaves is the answer.
            Some(seq) => Ok(Some(cx.branch(&seq.steps)?.unwrap_or(Flow::Respond))),
            None => Ok(Some(Flow::Respond)),
        }
    }

    /// The response path: the response kept for the request's hash, when the rules of the cache
    /// that missed it allow.
    fn collect(&self, msg: &Message) {
        let Some(hash) = msg.props.get(HASH_PROPERTY).and_then(unhex) else {
            return;
        };
        let body = match &msg.body {
            Body::Bytes(b) => b.clone(),
            Body::Empty => bytes::Bytes::new(),
            // Not read (the cache reads the body it collects): nothing to keep.
            Body::Stream | Body::Head(_) => return,
        };
        let status = msg.status.unwrap_or(StatusCode::OK);
        let now = Instant::now();
        let mut s = shard(&hash);
        let Some(e) = s.get_mut(&hash) else {
            return;
        };
        let rules = e.rules.clone();
        let refused = rules
            .response_codes
            .as_ref()
            .is_some_and(|codes| !codes.matches(status.as_str()))
            || rules.max_message_size.is_some_and(|m| body.len() > m)
            || (rules.cache_control && cache_directive(&msg.headers, "no-store").is_some());
        if refused {
            s.remove(&hash);
            return;
        }
        let mut headers = msg.headers.clone();
        headers.remove(http::header::CONTENT_LENGTH);
        e.response = Some(Cached {
            status,
            headers,
            body,
        });
        // With Cache-Control obeyed, the response's max-age shortens how long it is kept.
        let max_age = rules
            .cache_control
            .then(|| {
                cache_directive(&msg.headers, "max-age")
                    .flatten()?
                    .parse::<u64>()
                    .ok()
            })
            .flatten()
            .map(Duration::from_secs);
        e.expires = now + max_age.map_or(rules.timeout, |m| m.min(rules.timeout));
        e.stored = now;
    }
}

/// Room in a shard for one more entry than `hash`'s: expired entries go first, then the oldest.
fn make_room(s: &mut HashMap<[u8; 32], Entry>, hash: &[u8; 32], max_size: usize, now: Instant) {
    let room = max_size.div_ceil(SHARDS).max(1);
    if s.len() < room || s.contains_key(hash) {
        return;
    }
    s.retain(|_, e| e.expires > now);
    if s.len() >= room {
        if let Some(oldest) = s.iter().min_by_key(|(_, e)| e.stored).map(|(k, _)| *k) {
            s.remove(&oldest);
        }
    }
}

fn hex(b: &[u8; 32]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if s.len() != 64 {
        return None;
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_control_directives_are_read_in_any_case_and_order() {
        let mut h = HeaderMap::new();
        h.append(
            http::header::CACHE_CONTROL,
            "public, Max-Age=\"30\"".parse().unwrap(),
        );
        h.append(http::header::CACHE_CONTROL, "NO-STORE".parse().unwrap());
        assert_eq!(cache_directive(&h, "max-age"), Some(Some("30")));
        assert_eq!(cache_directive(&h, "no-store"), Some(None));
        assert_eq!(cache_directive(&h, "no-cache"), None);
    }

    #[test]
    fn hashes_travel_as_hex() {
        let h: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
        assert_eq!(unhex(&hex(&h)), Some(h));
        assert_eq!(unhex("zz"), None);
    }
}
