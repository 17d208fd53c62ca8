//! The compile step: the configuration model to the executable plan, once at load. Expressions and
//! regexes are compiled, keys resolved, values checked; what each flow needs of the body is decided
//! here. Each mediator compiles in its own module (`crate::mediators`), endpoints in
//! `crate::endpoints`.

use crate::api::{ApiPlan, Pattern, ResourcePlan, Template};
use crate::endpoints::EndpointPlan;
use crate::mediators::xslt::Sheet;
use crate::plan::{CompileOptions, Plan, ProxyPlan, SeqPlan, Steps, Value, WsdlPlan};
use sluice_config::{self as cfg, Diagnostics, Location, Severity};
use sluice_expr::{Expr, ExprError, ExprErrorKind, FullRegex, LoadScope};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Compiles the model into a plan. Artifacts with errors or unsupported features are left out and
/// reported.
pub fn compile(config: &cfg::Config, opts: &CompileOptions, diags: &mut Diagnostics) -> Plan {
    let mut c = Compiler::new(config, opts, diags);
    c.check_overrides();
    // Named sequences, sequence templates and endpoints are compiled on first use and also on their
    // own, so that errors in unused ones are reported too (as MI refuses to deploy a template with
    // errors). An endpoint template is read only with a use's values, as in MI.
    for s in &config.sequences {
        c.named_sequence(&s.name, None);
    }
    for t in &config.templates {
        c.template(t, None, "call-template");
    }
    for e in &config.endpoints {
        if let Some(n) = &e.name {
            c.named_endpoint(n, None);
        }
    }
    let mut plan = Plan::default();
    for p in &config.proxies {
        match c.proxy(p) {
            Ok(mut pp) => {
                pp.stats_slot = Some(plan.services.len());
                plan.services.push(crate::plan::Service {
                    name: pp.name.clone(),
                    api_context: None,
                });
                plan.proxies.insert(p.name.clone(), Arc::new(pp));
            }
            Err(reason) => plan.not_deployed.push((p.name.clone(), reason)),
        }
    }
    for a in &config.apis {
        c.deploy_api(a, &mut plan);
    }
    if let Some(main) = config.sequences.iter().find(|s| s.name == "main") {
        c.deploy_main(main, &mut plan);
    }
    c.fill_sequences_by_name();
    if let Some(all) = c.sequences_by_name.get() {
        plan.sequences = all.keys().cloned().collect();
        plan.sequences.sort();
    }
    c.fill_endpoints_by_name();
    plan.endpoints = c.endpoints_by_name.clone();
    plan.processors = c.processors(&config.processors);
    plan.stores = c.stores_by_name.clone();
    plan.cars = config.cars.clone();
    plan.registry = (config.resources.iter())
        .map(|r| crate::plan::RegistryResource {
            key: r.key.clone(),
            properties: r.properties.clone(),
        })
        .collect();
    plan.local_entries = (config.local_entries.iter())
        .map(|l| {
            let kind = match l.value {
                cfg::LocalEntryValue::Text(_) => "Inline Text",
                cfg::LocalEntryValue::Xml { .. } => "Inline XML",
                cfg::LocalEntryValue::Src(_) => "Source URL",
            };
            (l.key.clone(), kind)
        })
        .collect();
    plan.templates = (config
        .templates
        .iter()
        .map(|t| (t.name.clone(), "sequence")))
    .chain(
        config
            .endpoint_templates
            .iter()
            .map(|t| (t.name.clone(), "endpoint")),
    )
    .collect();
    plan.wsdls = std::mem::take(&mut c.wsdls);
    plan
}

/// Each of `names` that compiles (in name order, so that what compiling reports comes in a stable
/// order), by name.
fn compiled_by_name<T>(
    mut names: Vec<String>,
    mut compile: impl FnMut(&str) -> Option<T>,
) -> HashMap<String, T> {
    names.sort_unstable();
    names
        .into_iter()
        .filter_map(|name| compile(&name).map(|t| (name, t)))
        .collect()
}

fn by_name<'a, T>(items: &'a [T], name: impl Fn(&'a T) -> &'a str) -> HashMap<&'a str, &'a T> {
    items.iter().map(|t| (name(t), t)).collect()
}

impl<'a> Compiler<'a> {
    /// Every named sequence (and sequence held by a local entry) that compiles, by name, for
    /// `<sequence key="{...}"/>`.
    fn fill_sequences_by_name(&mut self) {
        let names: Vec<String> = self.sequences.keys().map(|k| (*k).to_owned()).collect();
        let all = compiled_by_name(names, |name| match self.seq_cache.get(name) {
            Some(r) => r.as_ref().ok().cloned(),
            None => self.named_sequence(name, None),
        });
        let _ = self.sequences_by_name.set(all);
    }

    /// Every named endpoint (and endpoint held by a local entry) that compiles, by name, for
    /// `<endpoint key-expression>`.
    fn fill_endpoints_by_name(&mut self) {
        let names: Vec<String> = self.endpoints.keys().map(|k| (*k).to_owned()).collect();
        let all = compiled_by_name(names, |name| match self.ep_cache.get(name) {
            Some(r) => r.as_ref().ok().cloned(),
            None => self.named_endpoint(name, None),
        });
        let _ = self.endpoints_by_name.set(all);
    }

    fn new(config: &'a cfg::Config, opts: &'a CompileOptions, diags: &'a mut Diagnostics) -> Self {
        // A key names a named sequence or endpoint, else a local entry holding one, as Synapse
        // looks keys up.
        let mut sequences = by_name(&config.sequences, |s| s.name.as_str());
        let mut endpoints: HashMap<&str, &cfg::Endpoint> = config
            .endpoints
            .iter()
            .filter_map(|e| e.name.as_deref().map(|n| (n, e)))
            .collect();
        for le in &config.local_entries {
            match &le.artifact {
                Some(cfg::EntryArtifact::Sequence(s)) => {
                    sequences.entry(le.key.as_str()).or_insert(s);
                }
                Some(cfg::EntryArtifact::Endpoint(e)) => {
                    endpoints.entry(le.key.as_str()).or_insert(e);
                }
                None => {}
            }
        }
        let stores: HashMap<&str, _> = (config.stores.iter())
            .map(|s| {
                let store = (s.unsupported.is_none())
                    .then(|| crate::mediators::store::MessageStore::new(&s.name));
                (s.name.as_str(), store)
            })
            .collect();
        Compiler {
            opts,
            diags,
            sequences,
            endpoints,
            local_entries: by_name(&config.local_entries, |l| l.key.as_str()),
            seq_cache: HashMap::new(),
            sequences_by_name: Arc::default(),
            endpoints_by_name: Arc::default(),
            templates: by_name(&config.templates, |t| t.name.as_str()),
            endpoint_templates: by_name(&config.endpoint_templates, |t| t.name.as_str()),
            xslt_cache: HashMap::new(),
            schema_cache: HashMap::new(),
            resources: config
                .resources
                .iter()
                .map(|r| (normalize_registry_key(&r.key), r))
                .collect(),
            ep_cache: HashMap::new(),
            in_progress: HashSet::new(),
            throttles: HashMap::new(),
            executors: (config.executors.iter())
                .map(|e| (e.name.as_str(), crate::mediators::enqueue::Executor::new(e)))
                .collect(),
            stores_by_name: Arc::new(
                (stores.iter())
                    .filter_map(|(k, v)| Some(((*k).to_owned(), v.clone()?)))
                    .collect(),
            ),
            stores,
            func_exprs: Vec::new(),
            next_func_exprs: Vec::new(),
            wsdls: Vec::new(),
            home: &config.home,
            file_properties: config.file_properties.as_ref(),
            key_sources: &config.key_sources,
            artifact: String::new(),
            failed: false,
        }
    }

    /// Each `--endpoint NAME=URI` must name a loaded endpoint.
    fn check_overrides(&mut self) {
        for name in self.opts.endpoint_overrides.keys() {
            if !self.endpoints.contains_key(name.as_str()) {
                let loc = Location {
                    file: "--endpoint".into(),
                    line: 0,
                    col: 0,
                };
                self.diags.push(
                    Severity::Error,
                    loc,
                    "",
                    format!("--endpoint {name}=...: no endpoint named '{name}' is loaded"),
                    None,
                );
            }
        }
    }

    /// An API into the plan, unless it has errors or another API's context.
    fn deploy_api(&mut self, a: &cfg::Api, plan: &mut Plan) {
        let (r, failed) = self.nested(format!("api {}", a.name), |c| c.api(a));
        if let Some(other) = r
            .as_ref()
            .and_then(|api| plan.apis.iter().find(|o| o.context == api.context))
        {
            self.diags.push(
                Severity::Error,
                a.loc.clone(),
                "api",
                format!(
                    "API {} has the context {} of API {}: a request could go to either",
                    a.name, other.context, other.name
                ),
                Some(&format!("api {}", a.name)),
            );
            plan.not_deployed.push((
                a.name.clone(),
                format!("its context is API {}'s", other.name),
            ));
            return;
        }
        match r {
            Some(mut api) if !failed => {
                let slot = plan.services.len();
                for r in &mut api.resources {
                    if let Some(s) = Arc::get_mut(&mut r.service) {
                        s.stats_slot = Some(slot);
                    }
                }
                plan.services.push(crate::plan::Service {
                    name: api.name.clone(),
                    api_context: Some(api.context.clone()),
                });
                plan.apis.push(Arc::new(api))
            }
            _ => plan.not_deployed.push((
                a.name.clone(),
                format!(
                    "API {} has errors or unsupported features (see above)",
                    a.name
                ),
            )),
        }
    }

    /// Synapse's `main` sequence, as a service whose in- and out-sequence are both `main`.
    fn deploy_main(&mut self, main: &cfg::NamedSequence, plan: &mut Plan) {
        let main_ref = Some(cfg::SequenceRef::Key {
            key: "main".to_owned(),
            loc: main.sequence.loc.clone(),
        });
        let (r, failed) = self.nested("sequence main".to_owned(), |c| {
            c.service(
                "main".into(),
                &main.sequence.loc,
                [&main_ref, &main_ref, &None],
            )
        });
        match r {
            Some(m) if !failed => plan.main = Some(Arc::new(m)),
            _ => plan.not_deployed.push((
                "main".to_owned(),
                "the main sequence has errors or unsupported features (see above)".to_owned(),
            )),
        }
    }
}

pub(crate) type Failure = String;

pub(crate) struct Compiler<'a> {
    pub(crate) opts: &'a CompileOptions,
    pub(crate) diags: &'a mut Diagnostics,
    pub(crate) sequences: HashMap<&'a str, &'a cfg::NamedSequence>,
    pub(crate) endpoints: HashMap<&'a str, &'a cfg::Endpoint>,
    pub(crate) local_entries: HashMap<&'a str, &'a cfg::LocalEntry>,
    pub(crate) seq_cache: HashMap<String, Result<Arc<SeqPlan>, Failure>>,
    /// Every named sequence that compiled, for keys computed per message; filled at the end.
    pub(crate) sequences_by_name: crate::mediators::sequence::ByName,
    /// The same for endpoints (`<endpoint key-expression>`).
    pub(crate) endpoints_by_name: crate::endpoints::EndpointsByName,
    pub(crate) templates: HashMap<&'a str, &'a cfg::Template>,
    pub(crate) endpoint_templates: HashMap<&'a str, &'a cfg::EndpointTemplate>,
    /// Stylesheets by key, compiled once and shared by every mediator that names them.
    pub(crate) xslt_cache: HashMap<String, Option<Arc<Sheet>>>,
    /// XML and JSON Schemas by key, compiled once.
    pub(crate) schema_cache: HashMap<String, Option<crate::mediators::validate::SchemaPlan>>,
    pub(crate) resources: HashMap<String, &'a cfg::Resource>,
    pub(crate) ep_cache: HashMap<String, Result<Arc<EndpointPlan>, Failure>>,
    pub(crate) in_progress: HashSet<String>,
    /// `<wsdl>` endpoints to read when Sluice starts.
    pub(crate) wsdls: Vec<Arc<crate::endpoints::LazyWsdl>>,
    /// Where relative `file:` paths are read from.
    pub(crate) home: &'a std::path::Path,
    /// MI's `conf/file.properties` under the home, for `get-property('file', KEY)`.
    pub(crate) file_properties: Option<&'a Result<Vec<(String, String)>, String>>,
    /// The concurrency of each throttle `id`, shared by the throttles that name it.
    pub(crate) throttles: HashMap<String, Arc<crate::mediators::throttle::Concurrency>>,
    /// The `<priorityExecutor>`s by name, shared by the `enqueue`s that name them.
    pub(crate) executors: HashMap<&'a str, Arc<crate::mediators::enqueue::Executor>>,
    /// The `<messageStore>`s by name: `None` for a kind Sluice does not run.
    pub(crate) stores: HashMap<&'a str, Option<Arc<crate::mediators::store::MessageStore>>>,
    /// The in-memory ones, for a `<store>` naming its store per message.
    pub(crate) stores_by_name: crate::mediators::store::Stores,
    /// Where Synapse would also look up keys that name nothing here (`<registry>`, `<import>`).
    pub(crate) key_sources: &'a [(String, Location)],
    /// The template instance being compiled: its parameters passed as `{{expression}}`, which
    /// its expressions read in place of `$func:NAME` ([`crate::mediators::template`]).
    pub(crate) func_exprs: Vec<(String, cfg::ExprSrc)>,
    /// Those of the next sequence [`Compiler::compile_once`] compiles.
    pub(crate) next_func_exprs: Vec<(String, cfg::ExprSrc)>,
    /// The artifact being compiled, for diagnostics.
    pub(crate) artifact: String,
    /// Set when the current artifact cannot be deployed.
    pub(crate) failed: bool,
}

impl<'a> Compiler<'a> {
    pub(crate) fn report(
        &mut self,
        sev: Severity,
        loc: &Location,
        element: &str,
        msg: impl Into<String>,
    ) {
        if sev >= Severity::Unsupported {
            self.failed = true;
        }
        let artifact = if self.artifact.is_empty() {
            None
        } else {
            Some(self.artifact.as_str())
        };
        let artifact = artifact.map(str::to_owned);
        self.diags
            .push(sev, loc.clone(), element, msg, artifact.as_deref());
    }
    /// Runs `f` as the compile of a separate artifact, restoring the current one's state afterwards.
    pub(crate) fn nested<T>(
        &mut self,
        artifact: String,
        f: impl FnOnce(&mut Self) -> T,
    ) -> (T, bool) {
        let saved = (
            std::mem::replace(&mut self.artifact, artifact),
            std::mem::replace(&mut self.failed, false),
        );
        let r = f(self);
        let failed = self.failed;
        (self.artifact, self.failed) = saved;
        (r, failed)
    }
    pub(crate) fn proxy(&mut self, p: &cfg::Proxy) -> Result<ProxyPlan, Failure> {
        let (r, failed) = self.nested(format!("proxy {}", p.name), |c| c.proxy_inner(p));
        match r {
            Some(pp) if !failed => Ok(pp),
            _ => Err(format!(
                "proxy {} has errors or unsupported features (see above)",
                p.name
            )),
        }
    }
    pub(crate) fn proxy_inner(&mut self, p: &cfg::Proxy) -> Option<ProxyPlan> {
        // Problems found while parsing were reported then; they still keep the proxy from deploying.
        self.failed |= p.rejected;
        let security = p.security.as_ref().and_then(|s| self.security(s));
        let on_http = p.transports.iter().any(|t| t == "http");
        let on_https = p.transports.iter().any(|t| t == "https");
        if !on_http && !on_https {
            self.report(
                Severity::Unsupported,
                &p.loc,
                "proxy",
                format!(
                    "transports '{}': only http and https are served",
                    p.transports.join(" ")
                ),
            );
        }
        let t = &p.target;
        let service = self.service(
            p.name.as_str().into(),
            &p.loc,
            [&t.in_sequence, &t.out_sequence, &t.fault_sequence],
        );
        // Compiled (and their problems reported) even when a sequence failed.
        let target = t.endpoint.as_ref().map(|e| self.endpoint_ref(e));
        let wsdl = p.publish_wsdl.as_ref().and_then(|w| self.wsdl(w));
        Some(ProxyPlan {
            started: p.start_on_load,
            active: p.start_on_load.into(),
            target: target.flatten(),
            wsdl,
            on_http,
            on_https,
            security,
            ..service?
        })
    }
    /// A service's plan from its in-, out- and fault sequences (a proxy's target, an API resource):
    /// started, with no target, WSDL or API; `None` when the in-sequence does not compile.
    pub(crate) fn service(
        &mut self,
        name: Arc<str>,
        loc: &Location,
        [in_seq, out_seq, fault_seq]: [&Option<cfg::SequenceRef>; 3],
    ) -> Option<ProxyPlan> {
        let in_seq = match in_seq {
            Some(s) => self.sequence_ref(s, "inSequence"),
            None => Some(SeqPlan::empty()),
        };
        let out_seq = out_seq
            .as_ref()
            .map(|s| self.sequence_ref(s, "outSequence"));
        let fault_seq = self.fault_sequence(fault_seq, loc);
        Some(ProxyPlan {
            name,
            loc: loc.clone(),
            started: true,
            active: true.into(),
            in_seq: in_seq?,
            out_seq: out_seq.flatten(),
            fault_seq: fault_seq.flatten(),
            target: None,
            wsdl: None,
            api_resource: false,
            on_http: true,
            on_https: true,
            stats_slot: None,
            security: None,
        })
    }
    pub(crate) fn api(&mut self, a: &cfg::Api) -> Option<ApiPlan> {
        self.failed |= a.rejected;
        let name: Arc<str> = a.name.as_str().into();
        let mut resources = Vec::new();
        for r in &a.resources {
            let mut methods = Vec::new();
            for m in &r.methods {
                match m.as_str() {
                    "GET" | "POST" | "PUT" | "DELETE" | "OPTIONS" | "HEAD" | "PATCH" => {
                        methods.push(m.parse().unwrap_or(http::Method::GET));
                    }
                    other => self.report(
                        Severity::Error,
                        &r.loc,
                        "resource",
                        format!("unknown method '{other}' (GET, POST, PUT, DELETE, OPTIONS, HEAD or PATCH)"),
                    ),
                }
            }
            let pattern = match &r.pattern {
                cfg::ResourcePattern::Any => Pattern::Any,
                cfg::ResourcePattern::UrlMapping(m) => Pattern::mapping(m),
                cfg::ResourcePattern::UriTemplate(t) => match Template::parse(t) {
                    Ok(t) => Pattern::Template(t),
                    Err(e) => {
                        self.report(Severity::Error, &r.loc, "resource", e);
                        continue;
                    }
                },
            };
            let service = ProxyPlan {
                api_resource: true,
                ..self.service(
                    name.clone(),
                    &r.loc,
                    [&r.in_sequence, &r.out_sequence, &r.fault_sequence],
                )?
            };
            resources.push(ResourcePlan {
                methods,
                pattern,
                service: Arc::new(service),
            });
        }
        let context = match a.context.trim_end_matches('/') {
            "" => "/".to_owned(),
            c => c.to_owned(),
        };
        Some(ApiPlan {
            name,
            context,
            resources,
            host: a.host.clone(),
            port: a.port,
        })
    }
    /// A fault sequence as given, else Synapse's default: the sequence named "fault". That one
    /// always exists in Synapse (a built-in when the configuration defines none), so naming it
    /// without defining it means Sluice's own fault answer, as no fault sequence does.
    pub(crate) fn fault_sequence(
        &mut self,
        s: &Option<cfg::SequenceRef>,
        loc: &Location,
    ) -> Option<Option<Arc<SeqPlan>>> {
        match s {
            Some(cfg::SequenceRef::Key { key, .. })
                if key == "fault" && !self.sequences.contains_key("fault") =>
            {
                None
            }
            // As Synapse's ProxyServiceMessageReceiver: a fault sequence it cannot find leaves the
            // default one in charge.
            Some(cfg::SequenceRef::Key { key, loc })
                if !self.sequences.contains_key(key.as_str()) =>
            {
                let then = "as in Synapse, the default fault sequence handles errors instead";
                self.missing_key("sequence", key, loc, "faultSequence", then)
                    .ok()?;
                self.fault_sequence(&None, loc)
            }
            Some(s) => Some(self.sequence_ref(s, "faultSequence")),
            None if self.sequences.contains_key("fault") => {
                Some(self.named_sequence("fault", Some(loc)))
            }
            None => None,
        }
    }
    pub(crate) fn wsdl(&mut self, w: &cfg::PublishWsdl) -> Option<WsdlPlan> {
        let text = match &w.source {
            cfg::WsdlSource::Inline(t) => t.clone(),
            cfg::WsdlSource::Uri(u) => {
                self.report(Severity::Warning, &w.loc, "publishWSDL", format!("WSDL from '{u}' is not fetched (no network at load); ?wsdl will answer 404"));
                return None;
            }
            cfg::WsdlSource::Key(k) => match self.local_entries.get(k.as_str()).map(|l| &l.value) {
                Some(cfg::LocalEntryValue::Xml { text, .. }) => text.clone(),
                Some(_) => {
                    self.report(
                        Severity::Warning,
                        &w.loc,
                        "publishWSDL",
                        format!("local entry '{k}' is not inline XML; ?wsdl will answer 404"),
                    );
                    return None;
                }
                // A registry resource (MI's registry folder, a CAR's).
                None => match self.keyed(k) {
                    Ok((t, _)) => t.to_owned(),
                    Err((severity, why)) => {
                        self.report(severity, &w.loc, "publishWSDL", why);
                        return None;
                    }
                },
            },
        };
        Some(wsdl_template(&text))
    }
    pub(crate) fn sequence_ref(
        &mut self,
        s: &cfg::SequenceRef,
        what: &str,
    ) -> Option<Arc<SeqPlan>> {
        match s {
            cfg::SequenceRef::Key { key, loc } => {
                let _ = what;
                self.named_sequence(key, Some(loc))
            }
            cfg::SequenceRef::Inline(seq) => {
                let steps = self.steps(&seq.mediators);
                let plan = Arc::new(SeqPlan::new(None, steps));
                self.set_on_error(&plan, seq);
                Some(plan)
            }
        }
    }
    /// A sequence of one step that runs the named sequence `expression` names per message. The
    /// expression has no namespaces of its own (a key attribute holds no XPath prefixes Synapse
    /// could resolve either, beyond the usual functions).
    fn per_message_sequence(&mut self, expression: &str, loc: &Location) -> Option<Arc<SeqPlan>> {
        let src = cfg::ExprSrc {
            text: expression.trim().to_owned(),
            ns: Arc::default(),
            loc: loc.clone(),
        };
        let key = self.expr(&src, "sequence")?;
        let step = crate::mediators::sequence::per_message(key, self.sequences_by_name.clone());
        Some(Arc::new(SeqPlan::new(None, Arc::from([step]))))
    }

    /// A sequence's `onError="KEY"`: the named sequence that runs when a mediator in it fails.
    fn set_on_error(&mut self, plan: &Arc<SeqPlan>, seq: &cfg::Sequence) {
        if let Some(key) = &seq.on_error {
            if let Some(h) = self.named_sequence(key, Some(&seq.loc)) {
                let _ = plan.on_error.0.set(h);
            }
        }
    }

    /// A named sequence, compiled once. `from` is where it is referenced (None when compiled on its own).
    pub(crate) fn named_sequence(
        &mut self,
        key: &str,
        from: Option<&Location>,
    ) -> Option<Arc<SeqPlan>> {
        let seq = (self.sequences.get(key).copied())
            .or_else(|| self.sequences.get(registry_form(key)?.as_str()).copied());
        let Some(seq) = seq else {
            let loc = from?;
            if let Some(inner) = key.strip_prefix('{').and_then(|k| k.strip_suffix('}')) {
                // A key computed per message (`receive="{get-property('seq')}"`): the sequence it
                // names, looked up when a message gets there.
                return self.per_message_sequence(inner, loc);
            }
            self.left_for_run("sequence", key, loc, "sequence").ok()?;
            return Some(self.missing_sequence(format!("Sequence named {key} cannot be found")));
        };
        self.compile_once(
            "sequence",
            key,
            key.to_owned(),
            &seq.sequence,
            seq.rejected,
            from,
            "sequence",
            "refers to itself",
        )
    }
    /// A named sequence's or a template's steps, compiled once and kept under `cache_key`
    /// (a failure too), with a cycle reported at `from` as `element`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn compile_once(
        &mut self,
        kind: &str,
        name: &str,
        cache_key: String,
        seq: &cfg::Sequence,
        rejected: bool,
        from: Option<&Location>,
        element: &str,
        cycle: &str,
    ) -> Option<Arc<SeqPlan>> {
        if let Some(r) = self.seq_cache.get(&cache_key) {
            return self.dependency(r.clone(), kind, name, from);
        }
        if !self.in_progress.insert(cache_key.clone()) {
            if let Some(loc) = from {
                self.report(
                    Severity::Error,
                    loc,
                    element,
                    format!("{kind} '{name}' {cycle} (cycle)"),
                );
            }
            return None;
        }
        // Each sequence reads `$func:` as its own: a template instance's passed expressions, or
        // none (a named sequence, even one called from an instance, is compiled once for all).
        let func = std::mem::take(&mut self.next_func_exprs);
        let outer = std::mem::replace(&mut self.func_exprs, func);
        let (steps, failed) = self.nested(format!("{kind} {name}"), |c| {
            c.failed |= rejected;
            c.steps(&seq.mediators)
        });
        self.func_exprs = outer;
        self.in_progress.remove(&cache_key);
        let r = if failed {
            Err(format!("{kind} '{name}' is not deployed"))
        } else {
            Ok(Arc::new(SeqPlan::new(Some(cache_key.clone()), steps)))
        };
        self.seq_cache.insert(cache_key, r.clone());
        if let Ok(plan) = &r {
            // After the cache holds it: the onError sequence may name this one.
            self.set_on_error(plan, seq);
        }
        self.dependency(r, kind, name, from)
    }
    /// A sequence template's steps, compiled once (cached with the sequences under `template:NAME`);
    /// a cycle is reported at `from` as `element`.
    pub(crate) fn template(
        &mut self,
        t: &cfg::Template,
        from: Option<&Location>,
        element: &str,
    ) -> Option<Arc<SeqPlan>> {
        self.compile_once(
            "template",
            &t.name,
            format!("template:{}", t.name),
            &t.sequence,
            t.rejected,
            from,
            element,
            "calls itself",
        )
    }
    pub(crate) fn dependency<T>(
        &mut self,
        r: Result<T, Failure>,
        kind: &str,
        key: &str,
        from: Option<&Location>,
    ) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(reason) => {
                if let Some(loc) = from {
                    self.report(
                        Severity::Unsupported,
                        loc,
                        kind,
                        format!("depends on {kind} '{key}', which is not deployed ({reason})"),
                    );
                }
                None
            }
        }
    }
    pub(crate) fn expr(&mut self, e: &cfg::ExprSrc, element: &str) -> Option<Expr> {
        let passed;
        let e = if self.func_exprs.is_empty() || !e.text.contains("$func:") {
            e
        } else {
            passed = self.with_passed(e, element)?;
            &passed
        };
        // A key nothing holds reads as '' (Synapse and MI look it up per message and find
        // nothing), with a warning; unless a <registry> Sluice cannot read might hold it.
        let missing = std::cell::RefCell::new(Vec::new());
        let registry = |scope: LoadScope, key: &str| match scope {
            LoadScope::File => self.file_property(key).map(|v| {
                v.unwrap_or_else(|why| {
                    missing.borrow_mut().push((why, "file"));
                    String::new()
                })
            }),
            LoadScope::Registry => match self.registry_text(key) {
                Err(why) if self.key_sources.is_empty() => {
                    missing.borrow_mut().push((why, "registry"));
                    Ok(String::new())
                }
                r => r,
            },
        };
        let r = Expr::compile_with_registry(&e.text, &e.ns, &registry);
        for (why, scope) in missing.into_inner() {
            let why = format!("{why}: get-property('{scope}', ...) gives '' here, as in Synapse");
            self.report(Severity::Warning, &e.loc, element, why);
        }
        self.compiled(r, &e.loc, element)
    }
    /// A compiled expression, or its error reported (unsupported or an error).
    pub(crate) fn compiled(
        &mut self,
        r: Result<Expr, ExprError>,
        loc: &Location,
        element: &str,
    ) -> Option<Expr> {
        r.map_err(|err| self.report_expr_error(err, loc, element))
            .ok()
    }

    /// An expression or regex that did not compile: unsupported (Synapse has it, Sluice not yet)
    /// or an error.
    fn report_expr_error(&mut self, err: ExprError, loc: &Location, element: &str) {
        let sev = if err.kind == ExprErrorKind::Unsupported {
            Severity::Unsupported
        } else {
            Severity::Error
        };
        self.report(sev, loc, element, err.message);
    }
    pub(crate) fn value(&mut self, v: &cfg::ValueSrc, element: &str) -> Option<Value> {
        match v {
            cfg::ValueSrc::Literal(s) => Some(Value::Literal(s.clone())),
            cfg::ValueSrc::Expr(e) => self.expr(e, element).map(Value::Expr),
        }
    }
    pub(crate) fn regex(
        &mut self,
        pattern: &str,
        loc: &Location,
        element: &str,
    ) -> Option<FullRegex> {
        FullRegex::compile(pattern)
            .map_err(|err| self.report_expr_error(err, loc, element))
            .ok()
    }
    /// [`Compiler::steps`] of a sequence there may not be (none: no steps).
    pub(crate) fn steps_of(&mut self, seq: Option<&cfg::Sequence>) -> Steps {
        seq.map(|s| self.steps(&s.mediators)).unwrap_or_default()
    }

    pub(crate) fn steps(&mut self, ms: &[cfg::Mediator]) -> Steps {
        let mut out = Vec::with_capacity(ms.len());
        for (i, m) in ms.iter().enumerate() {
            if let Some(s) = self.step(m) {
                let terminal = s.mediator().ends_sequence();
                out.push(s);
                if terminal && i + 1 < ms.len() {
                    let next = &ms[i + 1];
                    self.report(
                        Severity::Warning,
                        &next.loc,
                        &next.element,
                        format!(
                            "mediators after <{}> in the same sequence are never run",
                            m.element
                        ),
                    );
                    break;
                }
            }
        }
        out.into()
    }
    /// The text of the local entry or registry resource with `key` and where it comes from, or the
    /// severity and message of why there is none. Formats, schemas and `get-property('registry',
    /// ...)` all read keyed text through this.
    pub(crate) fn keyed(&self, key: &str) -> Result<(&str, String), (Severity, String)> {
        if let Some(le) = self.local_entries.get(key) {
            let origin = format!("local entry '{key}' ({})", le.loc);
            return match &le.value {
                cfg::LocalEntryValue::Xml { text, .. } => Ok((text, origin)),
                cfg::LocalEntryValue::Text(t) => Ok((t, origin)),
                cfg::LocalEntryValue::Src(u) => Err((
                    Severity::Unsupported,
                    format!("local entry '{key}' refers to '{u}', which is not fetched (no network at load)"),
                )),
            };
        }
        let resource =
            (self.resources.get(key)).or_else(|| self.resources.get(registry_form(key)?.as_str()));
        if let Some(r) = resource {
            let origin = format!("registry resource '{key}' ({})", r.loc);
            return match std::str::from_utf8(&r.bytes) {
                Ok(t) => Ok((t, origin)),
                Err(_) => Err((Severity::Error, format!("{origin} is not UTF-8 text"))),
            };
        }
        Err(self.no_such_key(key))
    }
    /// The keys of every local entry and registry resource whose XML root element is one of
    /// `names` in `ns`, sorted: what a key computed per message may pick among (stylesheets,
    /// schemas).
    pub(crate) fn keys_of_documents(&self, ns: &str, names: &[&str]) -> Vec<String> {
        let rooted = |text: &[u8]| {
            sluice_xml::Document::parse(text)
                .ok()
                .and_then(|d| {
                    d.root_element()
                        .map(|r| r.namespace_uri() == Some(ns) && names.contains(&r.name()))
                })
                .unwrap_or(false)
        };
        let mut keys: Vec<String> = self
            .local_entries
            .iter()
            .filter(|(_, le)| matches!(&le.value, cfg::LocalEntryValue::Xml { root, .. } if names.contains(&root.as_str())))
            .map(|(k, _)| (*k).to_owned())
            .collect();
        keys.extend(
            self.resources
                .iter()
                .filter(|(_, r)| rooted(&r.bytes))
                .map(|(k, _)| k.clone()),
        );
        keys.sort_unstable();
        keys
    }

    /// Why no local entry or registry resource has `key`: an error, unless the configuration has
    /// a `<registry>` or `<import>` Synapse would look it up in (unsupported).
    pub(crate) fn no_such_key(&self, key: &str) -> (Severity, String) {
        match self.key_sources.first() {
            Some((what, loc)) => (
                Severity::Unsupported,
                format!("no local entry or registry resource '{key}' here: Synapse would look it up in the <{what}> at {loc}, which is not supported yet"),
            ),
            None => (
                Severity::Error,
                format!("no local entry or registry resource '{key}'"),
            ),
        }
    }
    /// `get-property('file', KEY)`: `Ok(Ok(value))`, `Ok(Err(why))` for a key the file does
    /// not hold (MI reads '' then), `Err(why)` when there is no file to read (MI fails every
    /// message then; Sluice refuses the artifact at load).
    fn file_property(&self, key: &str) -> Result<Result<String, String>, String> {
        let file = || self.home.join(sluice_config::load::FILE_PROPERTIES);
        match self.file_properties {
            None => Err(format!("no {} to read '{key}' from", file().display())),
            Some(Err(why)) => Err(why.clone()),
            Some(Ok(values)) => Ok(values
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| format!("{} has no '{key}'", file().display()))),
        }
    }

    /// What `get-property('registry', key)` reads: a registry resource's text, an XML one
    /// without its declaration. Only the registry: a local entry of that name is not read, as
    /// Synapse and MI ask the registry alone (and find nothing without one).
    pub(crate) fn registry_text(&self, key: &str) -> Result<String, String> {
        // `KEY@NAME` (also `KEY/@NAME`): the resource's property NAME, as Synapse's
        // get-property reads it; a resource or property that is not there is "" (Synapse: null).
        if let Some((path, name)) = key.split_once('@') {
            let path = path.trim_end_matches('/');
            let value = (self.resources.get(normalize_registry_key(path).as_str()))
                .and_then(|r| r.properties.iter().find(|(n, _)| n == name))
                .map(|(_, v)| v.clone());
            return Ok(value.unwrap_or_default());
        }
        let resource =
            (self.resources.get(key)).or_else(|| self.resources.get(registry_form(key)?.as_str()));
        match resource.map(|r| std::str::from_utf8(&r.bytes)) {
            Some(Ok(t)) => Ok(without_xml_declaration(t).to_owned()),
            Some(Err(_)) => Err(format!("registry resource '{key}' is not UTF-8 text")),
            None if self.local_entries.contains_key(key) => Err(format!(
                "no registry resource '{key}' (a local entry has that name, but get-property('registry', ...) reads the registry alone)"
            )),
            None => Err(self.no_such_key(key).1),
        }
    }
    /// The text of a local entry or registry resource, for formats and schemas.
    pub(crate) fn keyed_text(
        &mut self,
        key: &str,
        loc: &Location,
        el: &str,
    ) -> Option<(String, String)> {
        match self.keyed(key) {
            Ok((t, origin)) => Some((t.to_owned(), origin)),
            Err((severity, why)) => {
                self.report(severity, loc, el, why);
                None
            }
        }
    }
    /// The expression that splits a message into parts (iterate, foreach), compiled: XPath only,
    /// as splitting JSON is not done yet.
    pub(crate) fn xml_parts(
        &mut self,
        e: &cfg::ExprSrc,
        loc: &Location,
        el: &str,
        what: &str,
    ) -> Option<Expr> {
        let x = self.expr(e, el)?;
        if x.reads_json() {
            self.report(
                Severity::Unsupported,
                loc,
                el,
                format!("{what} JSON (a json-eval expression) is not supported yet"),
            );
            return None;
        }
        Some(x)
    }
}

/// A registry resource's text as Synapse's `get-property('registry', ...)` gives an XML resource: the
/// element, without the XML declaration and the white space around it; other text as it is.
pub(crate) fn without_xml_declaration(t: &str) -> &str {
    match t
        .trim_start()
        .strip_prefix("<?xml")
        .and_then(|r| r.split_once("?>"))
    {
        Some((_, rest)) => rest.trim(),
        None => t,
    }
}

/// `conf:/a/b`, `conf:a/b` and `conf://a/b` name the same resource.
/// The registry key MI reads `key` as, when that is another spelling: `gov:a` is `gov:/a`, a
/// key with no prefix a governance registry path (MI's `resolveRegistryURI`).
pub(crate) fn registry_form(key: &str) -> Option<String> {
    let k = match key.contains(':') {
        true => normalize_registry_key(key),
        false => format!("gov:/{}", key.trim_start_matches('/')),
    };
    (k != key).then_some(k)
}

pub(crate) fn normalize_registry_key(k: &str) -> String {
    match k.split_once(':') {
        // MI's `resources:` keys are files under the governance registry's `mi-resources`.
        Some(("resources", rest)) => format!("gov:/mi-resources/{}", rest.trim_start_matches('/')),
        Some((scheme, rest)) => format!("{scheme}:/{}", rest.trim_start_matches('/')),
        None => k.to_owned(),
    }
}

/// Splits a WSDL at its `location` attributes of `soap:address` / `soap12:address` elements.
fn wsdl_template(text: &str) -> WsdlPlan {
    let mut parts = Vec::new();
    let Ok(doc) = wsdl_scan::addresses(text) else {
        return WsdlPlan {
            parts: vec![text.to_owned()],
        };
    };
    let mut last = 0;
    for (start, end) in doc {
        parts.push(text[last..start].to_owned());
        last = end;
    }
    parts.push(text[last..].to_owned());
    WsdlPlan { parts }
}

/// Finds the byte ranges of the values of `location` attributes on `*:address` elements. The WSDL was
/// already parsed once by the config loader; this is a small scan over well-formed text.
mod wsdl_scan {
    pub fn addresses(text: &str) -> Result<Vec<(usize, usize)>, ()> {
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(p) = text[i..].find('<') {
            let start = i + p;
            let end = text[start..].find('>').map(|e| start + e).ok_or(())?;
            let tag = &text[start + 1..end];
            let name = tag
                .split(|c: char| c.is_whitespace() || c == '/')
                .next()
                .unwrap_or("");
            if name == "address" || name.ends_with(":address") {
                if let Some(a) = tag.find("location=") {
                    let q_at = start + 1 + a + "location=".len();
                    let q = text.as_bytes()[q_at];
                    if q == b'"' || q == b'\'' {
                        let vstart = q_at + 1;
                        let vend = text[vstart..]
                            .find(q as char)
                            .map(|e| vstart + e)
                            .ok_or(())?;
                        out.push((vstart, vend));
                    }
                }
            }
            i = end + 1;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_xml_loses_its_declaration() {
        assert_eq!(
            without_xml_declaration("<?xml version=\"1.0\"?>\n<a>1</a>\n"),
            "<a>1</a>"
        );
        assert_eq!(without_xml_declaration(" plain text\n"), " plain text\n");
        assert_eq!(without_xml_declaration("<a/>"), "<a/>");
    }

    #[test]
    fn wsdl_locations_are_cut_out() {
        let w = wsdl_template("<d><soap:address location=\"http://x:1/EchoProxy\"/><soap12:address location='y'/></d>");
        assert_eq!(
            w.render("U"),
            "<d><soap:address location=\"U\"/><soap12:address location='U'/></d>"
        );
    }
}

/// Keys resolved as Synapse resolves them: anything in the configuration, wherever it is defined,
/// a local entry holding one; what names nothing fails at run time, and what Synapse would look up
/// where Sluice does not is unsupported.
#[cfg(test)]
#[path = "compile_key_tests.rs"]
mod key_tests;
