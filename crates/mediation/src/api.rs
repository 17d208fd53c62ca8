//! REST APIs (`<api>`): which API and resource a request goes to, and what a resource's uri-template
//! binds. Compiled at load; a request is matched by comparing its path with each API's context and
//! each resource's pattern, in order, with no allocation but the bound variables.

use crate::message::percent_decoded as decoded;
use crate::plan::ProxyPlan;
use http::Method;
use std::sync::Arc;

/// One API: its resources, each run as a service (in-, out- and fault sequence, no target).
#[derive(Debug)]
pub struct ApiPlan {
    pub name: Arc<str>,
    /// Without a trailing `/` (`/` itself is kept).
    pub context: String,
    pub resources: Vec<ResourcePlan>,
    /// `hostname` and `port`: as Synapse, the API takes only requests whose Host header has
    /// that host and that port (without one: 80 over http, 443 over https).
    pub host: Option<String>,
    pub port: Option<u16>,
}

impl ApiPlan {
    /// Whether a request with this Host header, over https or not, may reach the API.
    fn takes(&self, host: Option<&str>, https: bool) -> bool {
        if self.host.is_none() && self.port.is_none() {
            return true;
        }
        let Some(h) = host else { return false };
        let (name, port) = match h.rsplit_once(':') {
            Some((n, p)) if p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty() => {
                (n, p.parse::<u16>().ok())
            }
            _ => (h, Some(if https { 443 } else { 80 })),
        };
        self.host.as_deref().is_none_or(|want| want == name)
            && self.port.is_none_or(|want| Some(want) == port)
    }
}

#[derive(Debug)]
pub struct ResourcePlan {
    /// Empty: every method.
    pub methods: Vec<Method>,
    pub pattern: Pattern,
    pub service: Arc<ProxyPlan>,
}

/// What request paths (the part after the context, without the query) a resource takes.
#[derive(Debug, PartialEq, Eq)]
pub enum Pattern {
    /// No uri-template or url-mapping.
    Any,
    /// `url-mapping="/path/*"` (the path itself too) or `"/*"`.
    Prefix(String),
    /// `url-mapping="*.ext"`.
    Suffix(String),
    /// `url-mapping="/exact"`.
    Exact(String),
    /// `uri-template="..."`.
    Template(Template),
}

impl Pattern {
    /// As the configuration wrote it (MI's management API shows `N/A` for none).
    pub fn text(&self) -> String {
        match self {
            Pattern::Any => "N/A".to_owned(),
            Pattern::Prefix(p) if p.is_empty() || p == "/" => "/*".to_owned(),
            Pattern::Prefix(p) => format!("{p}/*"),
            Pattern::Suffix(s) => format!("*{s}"),
            Pattern::Exact(e) => e.clone(),
            Pattern::Template(t) => t.text.clone(),
        }
    }
}

/// A uri-template for matching, as Synapse matches them: literal pieces, `{var}` (up to a reserved
/// character or the next literal's first character) and `{+var}` (up to the next literal's first
/// character, `/` and `?` included). A template with a `?` matches the path and query together
/// (`/s?a={a}&b={b}`: in that order, nothing more); one without matches the path, whatever query
/// follows. A final literal ending in `*` takes any rest.
#[derive(Debug, PartialEq, Eq)]
pub struct Template {
    parts: Vec<TPart>,
    with_query: bool,
    /// As written (the management API shows it).
    pub text: String,
}

#[derive(Debug, PartialEq, Eq)]
enum TPart {
    Literal(String),
    Segment(String),
    Rest(String),
    /// A final `*`.
    Any,
}

/// Characters a `{var}` value stops at (RFC 3986 reserved).
const RESERVED: &[char] = &[
    ':', '/', '?', '#', '[', ']', '@', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=',
];

impl Template {
    /// Parses a uri-template; `Err` says why it cannot be matched.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let trimmed = match text.strip_suffix('/') {
            Some(t) if !t.is_empty() => t,
            _ => text,
        };
        let mut rest = trimmed;
        let mut literal = String::new();
        while let Some(c) = rest.chars().next() {
            if c != '{' {
                literal.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            }
            let after = &rest[1..];
            let end = after
                .find('}')
                .ok_or_else(|| format!("'{{' without '}}' in '{text}'"))?;
            let inner = &after[..end];
            rest = &after[end + 1..];
            if !literal.is_empty() {
                parts.push(TPart::Literal(std::mem::take(&mut literal)));
            }
            if matches!(parts.last(), Some(TPart::Segment(_) | TPart::Rest(_))) {
                return Err(format!(
                    "two variables with nothing between them in '{text}'"
                ));
            }
            parts.push(match inner.strip_prefix('+') {
                Some(n) => TPart::Rest(var_name(n, text)?),
                None => TPart::Segment(var_name(inner, text)?),
            });
        }
        if let Some(l) = literal.strip_suffix('*') {
            if !l.is_empty() {
                parts.push(TPart::Literal(l.to_owned()));
            }
            parts.push(TPart::Any);
        } else if !literal.is_empty() {
            parts.push(TPart::Literal(literal));
        }
        Ok(Template {
            parts,
            with_query: trimmed.contains('?'),
            text: text.to_owned(),
        })
    }

    /// The `uri.var.*` values the sub-request path binds (percent-decoded, `+` kept), or `None`.
    fn matches(&self, path: &str, query: Option<&str>) -> Option<Vec<(String, String)>> {
        let joined;
        let mut rest = if self.with_query {
            joined = match query {
                Some(q) => format!("{path}?{q}"),
                None => path.to_owned(),
            };
            joined.as_str()
        } else {
            match path.strip_suffix('/') {
                Some(p) if !p.is_empty() => p,
                _ => path,
            }
        };
        let mut vars = Vec::new();
        for (i, part) in self.parts.iter().enumerate() {
            let stop = match self.parts.get(i + 1) {
                Some(TPart::Literal(l)) => l.chars().next(),
                _ => None,
            };
            match part {
                TPart::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                TPart::Any => return Some(vars),
                TPart::Segment(name) | TPart::Rest(name) => {
                    let end = rest
                        .find(|c: char| {
                            Some(c) == stop
                                || (matches!(part, TPart::Segment(_)) && RESERVED.contains(&c))
                        })
                        .unwrap_or(rest.len());
                    if end == 0 {
                        return None;
                    }
                    vars.push((name.clone(), decoded(&rest[..end]).into_owned()));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

fn var_name(n: &str, text: &str) -> Result<String, String> {
    let ok = !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(n.to_owned())
    } else {
        Err(format!("'{{{n}}}' in '{text}' is not supported (only {{name}} and {{+name}}; a query is written out: ?a={{a}}&b={{b}})"))
    }
}

/// Every query parameter as Synapse sets `query.param.NAME`: the value percent-decoded with `+` as
/// a space; a piece without `=` belongs to the value before it (joined with `&`).
pub fn query_params(query: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for piece in query.split('&') {
        match piece.split_once('=') {
            Some((k, v)) => out.push((k.to_owned(), decoded(&v.replace('+', " ")).into_owned())),
            // Appended as it is written, as Synapse does.
            None => match out.last_mut() {
                Some(last) => {
                    last.1.push('&');
                    last.1.push_str(piece);
                }
                None if !piece.is_empty() => out.push((piece.to_owned(), String::new())),
                None => {}
            },
        }
    }
    out
}

impl Pattern {
    /// From a resource's `url-mapping`.
    pub fn mapping(m: &str) -> Pattern {
        if m == "/*" || m == "/" {
            Pattern::Prefix(String::new())
        } else if let Some(p) = m.strip_suffix("/*") {
            Pattern::Prefix(p.to_owned())
        } else if let Some(ext) = m.strip_prefix("*.") {
            Pattern::Suffix(format!(".{ext}"))
        } else {
            Pattern::Exact(m.to_owned())
        }
    }

    fn matches(&self, path: &str, query: Option<&str>) -> Option<Vec<(String, String)>> {
        let ok = match self {
            Pattern::Any => true,
            Pattern::Template(t) => return t.matches(path, query),
            Pattern::Prefix(p) => {
                path.strip_prefix(p.as_str())
                    .is_some_and(|r| r.is_empty() || r.starts_with('/'))
                    || (p.is_empty() && path.is_empty())
            }
            Pattern::Suffix(ext) => path.ends_with(ext.as_str()),
            Pattern::Exact(e) => path == e || path.strip_suffix('/') == Some(e.as_str()),
        };
        ok.then(Vec::new)
    }
}

/// Where a request goes among the APIs.
#[derive(Debug)]
pub struct Route<'a> {
    pub api: &'a ApiPlan,
    pub resource: &'a ResourcePlan,
    /// `uri.var.*` the uri-template bound.
    pub vars: Vec<(String, String)>,
    /// The request path and query after the context (`REST_URL_POSTFIX`): `""` for the context itself.
    pub postfix: &'a str,
}

/// Why no resource's sequence takes a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Miss {
    /// No API's context is a prefix of the path.
    NoApi,
    /// An API answers under this path, but none of its resources takes it.
    NoResource,
    /// Resources take the path, but not with this method: the methods they take.
    Method(Vec<Method>),
    /// `OPTIONS` for a path whose resource does not list it: answered with these methods.
    Options(Vec<Method>),
}

/// The API whose context is the longest prefix of the path (whole segments), and the resource of it
/// that takes the request, chosen as Synapse does: url-mappings first (an exact path, then the
/// longest `/prefix/*`, then `*.ext`), then uri-templates in order, then a resource with neither.
pub fn route<'a>(
    apis: &'a [Arc<ApiPlan>],
    method: &Method,
    path_and_query: &'a str,
) -> Result<Route<'a>, Miss> {
    route_on(apis, method, path_and_query, None, false)
}

/// [`route`] for a request with this Host header, over https or not: an API bound to a host or
/// port takes only requests that name them.
pub fn route_on<'a>(
    apis: &'a [Arc<ApiPlan>],
    method: &Method,
    path_and_query: &'a str,
    host: Option<&str>,
    https: bool,
) -> Result<Route<'a>, Miss> {
    let path = path_and_query
        .split_once('?')
        .map_or(path_and_query, |(p, _)| p);
    let api = apis
        .iter()
        .filter(|a| under(path, &a.context) && a.takes(host, https))
        .max_by_key(|a| a.context.len())
        .ok_or(Miss::NoApi)?;
    let skip = if api.context == "/" {
        0
    } else {
        api.context.len()
    };
    let postfix = &path_and_query[skip..];
    let (sub, query) = match postfix.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (postfix, None),
    };
    let sub = if sub.is_empty() { "/" } else { sub };
    if *method == Method::OPTIONS {
        // Every resource takes OPTIONS; one that does not list it answers it itself.
        let (resource, vars) = pick(api.resources.iter(), sub, query).ok_or(Miss::NoResource)?;
        if !resource.methods.contains(&Method::OPTIONS) {
            let methods = if resource.methods.is_empty() {
                ALL_BUT_OPTIONS.to_vec()
            } else {
                resource.methods.clone()
            };
            return Err(Miss::Options(methods));
        }
        return Ok(Route {
            api,
            resource,
            vars,
            postfix,
        });
    }
    let takes = |r: &&ResourcePlan| r.methods.is_empty() || r.methods.contains(method);
    if let Some((resource, vars)) = pick(api.resources.iter().filter(takes), sub, query) {
        return Ok(Route {
            api,
            resource,
            vars,
            postfix,
        });
    }
    let methods = allowed(api, sub, query);
    Err(if methods.is_empty() {
        Miss::NoResource
    } else {
        Miss::Method(methods)
    })
}

/// What a resource without `methods` answers to OPTIONS (Synapse's `REST_ALL_SUPPORTED_METHODS`).
const ALL_BUT_OPTIONS: [Method; 4] = [Method::GET, Method::POST, Method::PUT, Method::DELETE];

/// The methods of the resources whose pattern takes the path.
fn allowed(api: &ApiPlan, sub: &str, query: Option<&str>) -> Vec<Method> {
    let mut methods: Vec<Method> = Vec::new();
    for r in &api.resources {
        if r.pattern.matches(sub, query).is_some() {
            for m in &r.methods {
                if !methods.contains(m) {
                    methods.push(m.clone());
                }
            }
        }
    }
    methods
}

fn pick<'a>(
    resources: impl Iterator<Item = &'a ResourcePlan> + Clone,
    sub: &str,
    query: Option<&str>,
) -> Option<(&'a ResourcePlan, Vec<(String, String)>)> {
    let found = |p: &Pattern| p.matches(sub, query).is_some();
    let exact = resources
        .clone()
        .find(|r| matches!(r.pattern, Pattern::Exact(_)) && found(&r.pattern));
    let prefix = || {
        let mut best: Option<(&ResourcePlan, usize)> = None;
        for r in resources.clone() {
            if let Pattern::Prefix(p) = &r.pattern {
                if found(&r.pattern) && best.is_none_or(|(_, n)| p.len() + 1 > n) {
                    best = Some((r, p.len() + 1));
                }
            }
        }
        best.map(|(r, _)| r)
    };
    let suffix = || {
        resources
            .clone()
            .find(|r| matches!(r.pattern, Pattern::Suffix(_)) && found(&r.pattern))
    };
    if let Some(r) = exact.or_else(prefix).or_else(suffix) {
        return Some((r, Vec::new()));
    }
    for r in resources.clone() {
        if let Pattern::Template(t) = &r.pattern {
            if let Some(vars) = t.matches(sub, query) {
                return Some((r, vars));
            }
        }
    }
    resources
        .clone()
        .find(|r| r.pattern == Pattern::Any)
        .map(|r| (r, Vec::new()))
}

/// `path` is `context` or below it.
fn under(path: &str, context: &str) -> bool {
    context == "/"
        || path
            .strip_prefix(context)
            .is_some_and(|r| r.is_empty() || r.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_expr::testing::{mutate, Rng};

    fn t(text: &str, path: &str, query: Option<&str>) -> Option<Vec<(String, String)>> {
        Template::parse(text).unwrap().matches(path, query)
    }

    fn pairs(v: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        )
    }

    #[test]
    fn templates_bind_segments_rests_and_written_out_queries() {
        assert_eq!(
            t("/orders/{id}", "/orders/42", None),
            pairs(&[("id", "42")])
        );
        assert_eq!(
            t("/orders/{id}", "/orders/42/", None),
            pairs(&[("id", "42")])
        );
        assert_eq!(
            t("/orders/{id}/", "/orders/42", Some("x=1")),
            pairs(&[("id", "42")])
        );
        assert_eq!(
            t("/orders/{id}", "/orders/4%202", None),
            pairs(&[("id", "4 2")])
        );
        assert_eq!(t("/orders/{id}", "/orders/a+b", None), None);
        assert_eq!(t("/orders/{id}", "/orders/4/2", None), None);
        assert_eq!(t("/orders/{id}", "/orders/", None), None);
        assert_eq!(t("/orders/{id}", "/order/1", None), None);
        assert_eq!(
            t("/o/{a}/items/{b}", "/o/x/items/y", None),
            pairs(&[("a", "x"), ("b", "y")])
        );
        assert_eq!(
            t("/files/{+path}", "/files/a/b.txt", None),
            pairs(&[("path", "a/b.txt")])
        );
        assert_eq!(t("/{id}.json", "/7.json", None), pairs(&[("id", "7")]));
        assert_eq!(
            t("/s?a={a}&b={b}", "/s", Some("a=1&b=x%20y")),
            pairs(&[("a", "1"), ("b", "x y")])
        );
        assert_eq!(t("/s?a={a}&b={b}", "/s", Some("b=1&a=2")), None);
        assert_eq!(t("/s?a={a}", "/s", Some("a=1&c=2")), None);
        assert_eq!(t("/*", "/any/thing", None), pairs(&[]));
        assert_eq!(t("/a/*", "/a/b/c", None), pairs(&[]));
        assert!(Template::parse("/a/{x}{y}").is_err());
        assert!(Template::parse("/a/{x").is_err());
        assert!(Template::parse("/a/{x:3}").is_err());
        assert!(Template::parse("/a{?q}").is_err());
    }

    #[test]
    fn query_parameters_as_synapse_sets_them() {
        let q = query_params("a=1&b=x+y%21&c%21&d=");
        let want: Vec<(String, String)> = [("a", "1"), ("b", "x y!&c%21"), ("d", "")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(q, want);
    }

    #[test]
    fn an_api_bound_to_a_host_and_port_takes_only_requests_naming_them() {
        let mut a = Arc::try_unwrap(api(vec![("", Pattern::mapping("/*"))])).unwrap();
        a.host = Some("localhost".into());
        a.port = Some(8082);
        let apis = [Arc::new(a)];
        let on = |host: Option<&str>, https: bool| {
            route_on(&apis, &Method::GET, "/shop/x", host, https).is_ok()
        };
        assert!(on(Some("localhost:8082"), false));
        assert!(!on(Some("localhost:8290"), false));
        assert!(!on(Some("example.com:8082"), false));
        assert!(!on(None, false));
        // Without a port in the Host header: 80 over http, 443 over https.
        let mut b = Arc::try_unwrap(api(vec![("", Pattern::mapping("/*"))])).unwrap();
        b.port = Some(443);
        let apis = [Arc::new(b)];
        assert!(route_on(&apis, &Method::GET, "/shop/x", Some("h"), true).is_ok());
        assert!(route_on(&apis, &Method::GET, "/shop/x", Some("h"), false).is_err());
    }

    fn api(resources: Vec<(&str, Pattern)>) -> Arc<ApiPlan> {
        let service = Arc::new(ProxyPlan::empty("A"));
        Arc::new(ApiPlan {
            name: "A".into(),
            context: "/shop".into(),
            host: None,
            port: None,
            resources: resources
                .into_iter()
                .map(|(m, pattern)| ResourcePlan {
                    methods: m
                        .split(' ')
                        .filter(|s| !s.is_empty())
                        .map(|s| s.parse().unwrap())
                        .collect(),
                    pattern,
                    service: service.clone(),
                })
                .collect(),
        })
    }

    #[test]
    fn resources_are_chosen_as_synapse_dispatches() {
        let apis = vec![api(vec![
            (
                "GET",
                Pattern::Template(Template::parse("/items/{id}").unwrap()),
            ),
            ("GET", Pattern::mapping("/items/*")),
            ("POST", Pattern::mapping("/items/new")),
            ("", Pattern::Any),
        ])];
        let at = |m: &str, p: &'static str| {
            route(&apis, &m.parse().unwrap(), p).map(|r| {
                let i = apis[0]
                    .resources
                    .iter()
                    .position(|x| std::ptr::eq(x, r.resource))
                    .unwrap();
                (i, r.vars, r.postfix)
            })
        };
        // A url-mapping beats a uri-template; an exact mapping beats a prefix.
        assert_eq!(at("GET", "/shop/items/7"), Ok((1, vec![], "/items/7")));
        assert_eq!(
            at("POST", "/shop/items/new?x=1"),
            Ok((2, vec![], "/items/new?x=1"))
        );
        assert_eq!(at("DELETE", "/shop/other"), Ok((3, vec![], "/other")));
        assert_eq!(at("PUT", "/shop"), Ok((3, vec![], "")));
        assert_eq!(at("GET", "/shopping").unwrap_err(), Miss::NoApi);
        assert_eq!(at("GET", "/elsewhere").unwrap_err(), Miss::NoApi);
        let only = vec![api(vec![("GET", Pattern::mapping("/items/*"))])];
        let miss = |m: &str, p: &str| route(&only, &m.parse().unwrap(), p).unwrap_err();
        assert_eq!(
            miss("POST", "/shop/items/1"),
            Miss::Method(vec![Method::GET])
        );
        assert_eq!(miss("GET", "/shop/other"), Miss::NoResource);
        assert_eq!(
            miss("OPTIONS", "/shop/items"),
            Miss::Options(vec![Method::GET])
        );
        assert_eq!(miss("OPTIONS", "/shop/other"), Miss::NoResource);
        // A resource without methods answers OPTIONS with every method but OPTIONS.
        assert_eq!(
            at("OPTIONS", "/shop/other").unwrap_err(),
            Miss::Options(ALL_BUT_OPTIONS.to_vec())
        );
        let listed = vec![api(vec![("GET OPTIONS", Pattern::mapping("/items/*"))])];
        assert!(route(&listed, &Method::OPTIONS, "/shop/items/1").is_ok());
    }

    #[test]
    fn url_mappings_take_prefixes_suffixes_and_exact_paths() {
        let m = |s: &str, p: &str| Pattern::mapping(s).matches(p, None).is_some();
        assert!(m("/*", "/anything/at/all"));
        assert!(m("/*", ""));
        assert!(m("/orders/*", "/orders"));
        assert!(m("/orders/*", "/orders/1"));
        assert!(!m("/orders/*", "/ordersx"));
        assert!(m("*.jsp", "/a/b.jsp"));
        assert!(!m("*.jsp", "/a/b.jspx"));
        assert!(m("/exact", "/exact"));
        assert!(m("/exact", "/exact/"));
        assert!(!m("/exact", "/exact/more"));
    }

    /// Deterministic mutation fuzzing of uri-templates, url-mappings and routing: each round
    /// mutates a template, a url-mapping and a request path (characters replaced, deleted,
    /// inserted: braces, `+`, `*`, `?`, `&`, `=`, `%`, `/`, multi-byte ones; spans duplicated;
    /// tails cut). Nothing panics; a template that compiles matches a path written from it (but for
    /// one ending in `/`), binding its variables in order; a request is routed only to the API whose context is the longest
    /// one holding its path (whole segments), with the rest after that context as its postfix, to
    /// a resource of that API that takes its method; and `NoApi` only when no context holds it.
    #[test]
    fn mutated_templates_and_paths_never_panic() {
        const ROUNDS: usize = 10_000;
        let templates = [
            "/orders/{id}",
            "/o/{a}/items/{b}/",
            "/files/{+path}",
            "/{id}.json",
            "/s?a={a}&b={b}",
            "/a/*",
            "/x/{uri.var-1}/y*",
        ];
        let mappings = ["/items/*", "/*", "*.jsp", "/exact", "/"];
        // Coprime lengths, so that the rounds meet every template with every path and method.
        let paths = [
            "/shop/orders/42",
            "/shop/o/x/items/y/",
            "/shop/admin/files/a/b.txt",
            "/orders/7.json?x=1",
            "/shop/s?a=1&b=x%20y",
            "/shop/a/b/c",
            "/shop/x/v/y/z",
            "/shop/items/new?x=1",
            "/shopping/x.jsp",
            "/shop/exact/",
            "/orders/é/%zz/",
        ];
        let methods = [Method::GET, Method::POST, Method::OPTIONS, Method::DELETE];
        let mut rng = Rng(0xbb67_ae85_84ca_a73b);
        let specials: Vec<char> = "{}+*?&=%/.#;: x7é\u{1F600}".chars().collect();
        let mut edit = |seed: &str| mutate(seed, &specials, &mut rng);
        let service = Arc::new(ProxyPlan::empty("A"));
        let (mut compiled, mut routed) = (0, 0);
        for round in 0..ROUNDS {
            let text = edit(templates[round % templates.len()]);
            let mapping = edit(mappings[round % mappings.len()]);
            // Every other path keeps its first five characters, so that more of them reach an API.
            let path = match paths[round % paths.len()].split_at(5) {
                (head, tail) if round % 2 == 1 => format!("{head}{}", edit(tail)),
                _ => edit(paths[round % paths.len()]),
            };
            let method = &methods[(round / 2) % methods.len()];
            if let Ok(t) = Template::parse(&text) {
                compiled += 1;
                // The template's own text with a value for each variable (one that stops at
                // neither a reserved character nor the text after it) and something for a final
                // `*` after a literal.
                let (mut written, mut values) = (String::new(), Vec::new());
                let mut rest = text.as_str();
                while let Some(open) = rest.find('{') {
                    written.push_str(&rest[..open]);
                    let after = &rest[open + rest[open..].find('}').unwrap() + 1..];
                    let v = if after.starts_with('7') { "q" } else { "7" };
                    written.push_str(v);
                    values.push(v.to_owned());
                    rest = after;
                }
                match rest.strip_suffix('*') {
                    Some(r) => {
                        written.push_str(r);
                        if !r.is_empty() || written.is_empty() {
                            written.push('x');
                        }
                    }
                    None => written.push_str(rest),
                }
                let names = t.parts.iter().filter_map(|p| match p {
                    TPart::Segment(n) | TPart::Rest(n) => Some(n.clone()),
                    _ => None,
                });
                let want: Vec<(String, String)> = names.zip(values).collect();
                let (p, q) = match written.split_once('?') {
                    Some((p, q)) => (p, Some(q)),
                    None => (written.as_str(), None),
                };
                // Not when it ends in `/`: the template drops one final `/` and the request path
                // (not its query) too, so `/a//` and `/s?q={q}/` do not take their own text.
                if !written.ends_with('/') {
                    assert_eq!(t.matches(p, q), Some(want), "{text} on {written}");
                }
            }
            let resources = || {
                let template = Template::parse(&text).map_or(Pattern::Any, Pattern::Template);
                let seeds = templates
                    .iter()
                    .map(|t| (vec![], Pattern::Template(Template::parse(t).unwrap())));
                [
                    (vec![Method::GET], template),
                    (vec![Method::POST], Pattern::mapping(&mapping)),
                    (vec![Method::DELETE], Pattern::mapping("/exact")),
                ]
                .into_iter()
                .chain(seeds)
                .map(|(methods, pattern)| ResourcePlan {
                    methods,
                    pattern,
                    service: service.clone(),
                })
                .collect()
            };
            let apis: Vec<Arc<ApiPlan>> = ["/shop", "/shop/admin", "/orders"]
                .into_iter()
                .map(|context| {
                    Arc::new(ApiPlan {
                        name: "A".into(),
                        context: context.into(),
                        host: None,
                        port: None,
                        resources: resources(),
                    })
                })
                .collect();
            // Written out here rather than with `under`, which `route` itself uses.
            let request_path = path.split_once('?').map_or(path.as_str(), |(p, _)| p);
            let holds = |context: &str| {
                request_path == context || request_path.starts_with(&format!("{context}/"))
            };
            let longest = apis
                .iter()
                .filter(|a| holds(&a.context))
                .map(|a| a.context.len())
                .max();
            match route(&apis, method, &path) {
                Ok(r) => {
                    routed += 1;
                    assert!(holds(&r.api.context), "{path} in {}", r.api.context);
                    assert_eq!(Some(r.api.context.len()), longest, "{path}");
                    assert_eq!(format!("{}{}", r.api.context, r.postfix), path);
                    assert!(r.api.resources.iter().any(|x| std::ptr::eq(x, r.resource)));
                    assert!(
                        r.resource.methods.is_empty() || r.resource.methods.contains(method),
                        "{method} {path} to {:?}",
                        r.resource.methods
                    );
                }
                Err(Miss::NoApi) => assert_eq!(longest, None, "{path}"),
                Err(_) => assert!(longest.is_some(), "{path}"),
            }
        }
        // Enough templates compile and requests reach a resource for the checks to mean something.
        assert!(
            compiled * 5 > ROUNDS && routed * 20 > ROUNDS,
            "{compiled} {routed}"
        );
    }
}
