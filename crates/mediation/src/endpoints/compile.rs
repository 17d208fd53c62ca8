//! Endpoints from the configuration model: each kind's plan, checked at load.

use super::*;
use crate::compile::Compiler;

impl Compiler<'_> {
    pub(crate) fn endpoint_ref(&mut self, e: &cfg::EndpointRef) -> Option<Arc<EndpointPlan>> {
        match e {
            cfg::EndpointRef::Key { key, loc } => self.named_endpoint(key, Some(loc)),
            cfg::EndpointRef::Inline(ep) => self.endpoint(ep, None),
        }
    }
    pub(crate) fn named_endpoint(
        &mut self,
        key: &str,
        from: Option<&Location>,
    ) -> Option<Arc<EndpointPlan>> {
        if let Some(r) = self.ep_cache.get(key) {
            return self.dependency(r.clone(), "endpoint", key, from);
        }
        let ep = (self.endpoints.get(key).copied()).or_else(|| {
            let k = crate::compile::registry_form(key)?;
            self.endpoints.get(k.as_str()).copied()
        });
        let Some(ep) = ep else {
            let loc = from?;
            self.left_for_run("endpoint", key, loc, "endpoint").ok()?;
            return Some(Arc::new(EndpointPlan::missing(key)));
        };
        if !self.in_progress.insert(format!("endpoint:{key}")) {
            if let Some(loc) = from {
                self.report(
                    Severity::Error,
                    loc,
                    "endpoint",
                    format!("endpoint '{key}' refers to itself (cycle)"),
                );
            }
            return None;
        }
        let override_uri = self.opts.endpoint_overrides.get(key).cloned();
        let (plan, failed) = self.nested(format!("endpoint {key}"), |c| {
            c.endpoint(ep, override_uri.as_deref())
        });
        self.in_progress.remove(&format!("endpoint:{key}"));
        let r = match plan {
            Some(p) if !failed => Ok(p),
            _ => Err(format!("endpoint '{key}' is not deployed")),
        };
        self.ep_cache.insert(key.to_owned(), r.clone());
        self.dependency(r, "endpoint", key, from)
    }
    /// `<endpoint template="..">`: the template's endpoint with the arguments put in, compiled as
    /// if written there, under the name of the endpoint that uses it.
    pub(crate) fn template_endpoint(
        &mut self,
        ep: &cfg::Endpoint,
        template: &str,
        args: &[(String, String)],
        override_uri: Option<&str>,
    ) -> Option<Arc<EndpointPlan>> {
        let Some(t) = self.endpoint_templates.get(template).copied() else {
            self.report(
                Severity::Error,
                &ep.loc,
                "endpoint",
                format!("no endpoint template named '{template}'"),
            );
            return None;
        };
        let guard = format!("endpoint-template:{template}");
        if !self.in_progress.insert(guard.clone()) {
            self.report(
                Severity::Error,
                &ep.loc,
                "endpoint",
                format!("endpoint template '{template}' uses itself (cycle)"),
            );
            return None;
        }
        let user = match &ep.name {
            Some(n) => format!("endpoint {n}"),
            None => format!("the endpoint at {}", ep.loc),
        };
        // `None` when anything in it was reported as an error or unsupported.
        let made = cfg::parse::instantiate_endpoint(t, args, &user, self.diags);
        let plan = made.and_then(|mut inner| {
            inner.name = ep.name.clone().or(inner.name);
            self.endpoint(&inner, override_uri)
        });
        self.in_progress.remove(&guard);
        if plan.is_none() {
            self.failed = true;
        }
        plan
    }
    pub(crate) fn endpoint(
        &mut self,
        ep: &cfg::Endpoint,
        override_uri: Option<&str>,
    ) -> Option<Arc<EndpointPlan>> {
        let name = ep
            .name
            .clone()
            .unwrap_or_else(|| format!("anonymous endpoint at {}", ep.loc));
        // Endpoint properties: an <http> endpoint's template variables, the weights a load-balance
        // endpoint reads, and the rest set on each message sent.
        let template_kind =
            matches!(&ep.kind, cfg::EndpointKind::Address(a) if a.kind == cfg::AddressKind::Http);
        let mut template_vars = Vec::new();
        let mut props = Vec::new();
        for p in &ep.properties {
            if template_kind && p.expression.is_none() && is_template_variable(&p.name) {
                template_vars.push((p.name.clone(), p.value.clone()));
            } else if LOADBALANCE_PROPERTIES.contains(&p.name.as_str()) {
                // Read by the load-balance endpoint around it (or ignored, as in Synapse).
            } else {
                let value = match &p.expression {
                    Some(e) => crate::plan::Value::Expr(self.expr(e, "property")?),
                    None => crate::plan::Value::Literal(p.value.clone()),
                };
                props.push(EndpointProp {
                    name: p.name.clone(),
                    value,
                    scope: p.scope,
                });
            }
        }
        if !props.is_empty() && !matches!(&ep.kind, cfg::EndpointKind::Address(_)) {
            self.report(
                Severity::Warning,
                &ep.loc,
                "property",
                "the properties of a failover, load-balance or recipient-list endpoint are not applied yet (its children's are); ignored",
            );
        }
        let a = match &ep.kind {
            cfg::EndpointKind::Address(a) => a,
            cfg::EndpointKind::Rejected => {
                self.failed = true;
                return None;
            }
            // The definition itself: a failure seen through one reference suspends it for all.
            cfg::EndpointKind::Indirect(key) => return self.named_endpoint(key, Some(&ep.loc)),
            cfg::EndpointKind::ByKey(x) => {
                let key = self.expr(x, "endpoint")?;
                let mut plan = EndpointPlan::new(
                    name,
                    http::Uri::from_static("http://by-key.invalid/"),
                    http::HeaderValue::from_static("by-key.invalid"),
                    None,
                    cfg::TimeoutAction::Fault,
                    crate::health::SuspendPolicy::never(),
                );
                plan.address = super::Address::ByKey(Arc::new(super::ByKey {
                    key,
                    all: self.endpoints_by_name.clone(),
                }));
                return Some(Arc::new(plan));
            }
            cfg::EndpointKind::Template { template, args } => {
                return self.template_endpoint(ep, template, args, override_uri);
            }
            cfg::EndpointKind::Failover { dynamic, children } => {
                let kind = GroupKind::Failover { dynamic: *dynamic };
                return self.group(ep, name, kind, children, override_uri);
            }
            cfg::EndpointKind::RecipientList { children, list } => {
                return self.recipient_list(ep, name, children, list.as_ref(), override_uri);
            }
            cfg::EndpointKind::Loadbalance {
                failover,
                children,
                weighted: false,
                session,
            } => {
                let kind = GroupKind::RoundRobin {
                    failover: *failover,
                };
                let g = self.group(ep, name, kind, children, override_uri)?;
                return Some(match session {
                    None => g,
                    Some(s) => {
                        let mut plan = Arc::try_unwrap(g).ok()?;
                        if let Some(group) = plan.group.as_mut() {
                            group.sessions = Some(session::Sessions::new(s));
                        }
                        Arc::new(plan)
                    }
                });
            }
            cfg::EndpointKind::Loadbalance {
                failover,
                children,
                weighted: true,
                session,
            } => {
                if session.is_some() {
                    let why = "session affinity with WeightedRoundRobin is not supported yet";
                    self.report(Severity::Unsupported, &ep.loc, "session", why);
                    self.failed = true;
                    return None;
                }
                let weights = self.weights(children)?;
                let kind = GroupKind::RoundRobin {
                    failover: *failover,
                };
                let g = self.group(ep, name.clone(), kind, children, override_uri)?;
                let plans = g.group.as_ref()?.children.clone();
                return Some(Arc::new(EndpointPlan::weighted(
                    name, *failover, plans, &weights,
                )));
            }
        };
        let plan = self.address(ep, a, name, template_vars, override_uri)?;
        if props.is_empty() {
            return Some(plan);
        }
        let mut plan = Arc::try_unwrap(plan).ok()?;
        plan.properties = props.into();
        Some(Arc::new(plan))
    }

    /// The `<http>` endpoint's URI template, parsed (`None` for the other kinds); `Err` when it
    /// is reported.
    fn uri_template(
        &mut self,
        a: &cfg::AddressEndpoint,
        uri_text: &str,
    ) -> Result<Option<Arc<UriTemplate>>, ()> {
        if a.kind != cfg::AddressKind::Http {
            return Ok(None);
        }
        // As Synapse: a template that starts with a variable holds a whole URL, expanded with
        // reserved characters kept.
        // Other operators there are kept (Synapse would turn `{/x}` into the invalid `{+/x}`).
        let text = match uri_text.strip_prefix('{') {
            Some(rest) if !rest.starts_with(['+', '#', '.', '/', ';', '?', '&']) => {
                format!("{{+{rest}")
            }
            _ => uri_text.to_owned(),
        };
        match UriTemplate::parse(&text) {
            Ok(t) => Ok(Some(Arc::new(t))),
            Err(e) => {
                self.report(Severity::Error, &a.uri_loc, "http", e);
                Err(())
            }
        }
    }

    /// The timeout and what to do on it, read as Synapse 3.0.1's `EndpointDefinitionFactory`
    /// reads them: a duration of 0 or less sets no timeout of the endpoint's own (the default
    /// applies), except that a `<responseAction>` (fault or discard) without a positive duration
    /// means 30 s. Without a `<responseAction>`, Synapse drops the late response and the
    /// transport's timeout faults the call; Sluice answers in every case (see docs), so a missing
    /// one reads as fault. (WSO2 MI reads 0 as a timeout of 0 ms that its timeout handler applies
    /// at its next sweep, up to 15 s later: an accident of its code, not followed here.)
    fn timeout(&mut self, a: &cfg::AddressEndpoint) -> (Option<Duration>, cfg::TimeoutAction) {
        const WITH_ACTION_MS: u64 = 30_000;
        let Some(t) = &a.timeout else {
            return (None, cfg::TimeoutAction::Fault);
        };
        let own = t
            .duration_ms
            .and_then(|ms| u64::try_from(ms).ok())
            .filter(|&ms| ms > 0);
        let ms = match (own, t.action) {
            (Some(ms), _) => Some(ms),
            (None, Some(cfg::TimeoutAction::Fault | cfg::TimeoutAction::Discard)) => {
                Some(WITH_ACTION_MS)
            }
            (None, _) => None,
        };
        (
            ms.map(Duration::from_millis),
            t.action.unwrap_or(cfg::TimeoutAction::Fault),
        )
    }

    /// An address, `<http>` or default endpoint.
    /// A `<wsdl>` endpoint's address: known now (the WSDL written inside, or a `file:`), or read
    /// when Sluice starts (`Err`, with what will read it). `None` when reported.
    fn wsdl_address(
        &mut self,
        a: &cfg::AddressEndpoint,
        w: &cfg::WsdlPort,
    ) -> Option<Result<String, Arc<LazyWsdl>>> {
        let text = match (&w.inline, a.uri.as_str()) {
            (Some(t), _) => t.clone(),
            (None, u) if u.starts_with("http://") || u.starts_with("https://") => {
                let lazy = Arc::new(LazyWsdl {
                    uri: u.to_owned(),
                    service: w.service.clone(),
                    port: w.port.clone(),
                    address: std::sync::OnceLock::new(),
                });
                self.wsdls.push(lazy.clone());
                return Some(Err(lazy));
            }
            (None, u) => {
                let read = cfg::load::file_url_path(self.home, u)
                    .ok_or_else(|| {
                        format!("a WSDL at '{u}' is not read (only http, https and file: URLs)")
                    })
                    .and_then(|p| {
                        std::fs::read_to_string(&p)
                            .map_err(|e| format!("cannot read the WSDL {}: {e}", p.display()))
                    });
                match read {
                    Ok(t) => t,
                    Err(why) => {
                        self.report(Severity::Error, &a.uri_loc, "wsdl", why);
                        return None;
                    }
                }
            }
        };
        match cfg::wsdl::address(&text, w.service.as_deref(), w.port.as_deref()) {
            Ok(at) => Some(Ok(at)),
            Err(why) => {
                self.report(Severity::Error, &a.uri_loc, "wsdl", why);
                None
            }
        }
    }

    fn address(
        &mut self,
        ep: &cfg::Endpoint,
        a: &cfg::AddressEndpoint,
        name: String,
        template_vars: Vec<(String, String)>,
        override_uri: Option<&str>,
    ) -> Option<Arc<EndpointPlan>> {
        let mut lazy = None;
        let from_wsdl = match (&a.wsdl, override_uri) {
            (Some(w), None) => match self.wsdl_address(a, w)? {
                Ok(at) => Some(at),
                Err(l) => {
                    lazy = Some(l);
                    None
                }
            },
            _ => None,
        };
        let uri_text = override_uri.or(from_wsdl.as_deref()).unwrap_or(&a.uri);
        let template = self.uri_template(a, uri_text).ok()?;
        // What can be checked at load: the address, or the template with no variable set when its
        // scheme and host are written out before any variable (each message's URI is checked again
        // when expanded).
        let checked = match &template {
            Some(t) => t.expand(|_| None),
            None => uri_text.to_owned(),
        };
        let to_address = a.kind == cfg::AddressKind::Default;
        if to_address && override_uri.is_some() {
            self.report(
                Severity::Error,
                &ep.loc,
                "default",
                format!("--endpoint {name}=...: {name} is a default endpoint, which sends to each message's To address"),
            );
            return None;
        }
        let fixed_host = !to_address
            && template.as_ref().is_none_or(|t| {
                let head = t.literal_head();
                let whole = head.len() == uri_text.len();
                head.find("://")
                    .is_some_and(|i| whole || head[i + 3..].contains(['/', '?']))
            });
        let (uri, host) = if !fixed_host {
            (
                Uri::from_static("http://uri-template.invalid/"),
                HeaderValue::from_static("uri-template.invalid"),
            )
        } else if checked.trim().is_empty() {
            // MI deploys it; each message sent to it fails (its onError or fault sequence runs).
            let why = "an empty uri: every message sent to it fails, as in MI";
            self.report(Severity::Warning, &a.uri_loc, a.kind.element(), why);
            let mut plan = EndpointPlan::missing(&name);
            plan.label = format!("endpoint {name} (empty uri)").into();
            plan.address = Address::Invalid("the endpoint's uri is empty: nowhere to send".into());
            return Some(Arc::new(plan));
        } else {
            match http_uri(&checked) {
                Ok(u) => u,
                Err((sev, msg)) => {
                    self.report(sev, &a.uri_loc, a.kind.element(), msg);
                    return None;
                }
            }
        };
        let format = Format::named(a.format.as_deref());
        if format.is_none() {
            self.report(
                Severity::Unsupported,
                &a.uri_loc,
                "address",
                format!(
                    "format '{}' is not supported yet (message conversion)",
                    a.format.as_deref().unwrap_or_default()
                ),
            );
        }
        let (timeout, timeout_action) = self.timeout(a);
        let mut plan = EndpointPlan::new(
            name,
            uri,
            host,
            timeout,
            timeout_action,
            SuspendPolicy::new(&a.suspend_on_failure, &a.mark_for_suspension),
        );
        plan.retry = a.retry.clone();
        plan.address = match (template, lazy) {
            (_, Some(w)) => Address::Wsdl(w),
            (None, None) if a.kind == cfg::AddressKind::Member => Address::Member(uri_text.into()),
            (Some(t), None) => Address::Template(t),
            (None, None) if to_address => Address::To,
            (None, None) => Address::Fixed,
        };
        plan.template_vars = template_vars;
        plan.addressing = a.addressing;
        if let Some(sec) = &a.security {
            plan.security = Some(self.endpoint_security(sec)?);
        }
        if let Some(d) = a.timeout.as_ref().and_then(|t| t.dynamic.as_ref()) {
            plan.timeout_expr = Some(Arc::new(self.expr(d, "duration")?));
        }
        plan.method = a.method.as_deref().and_then(|m| m.parse().ok());
        plan.format = format.unwrap_or(Format::AsIs);
        Some(Arc::new(plan))
    }
    /// A failover or load-balance endpoint; None (all problems reported) when a child is not
    /// deployable.
    /// Each child's `loadbalance.weight` property (default 1), as Synapse's `WeightedRoundRobin`
    /// reads it: a whole number above zero, else the endpoint does not deploy.
    fn weights(&mut self, children: &[cfg::Endpoint]) -> Option<Vec<u32>> {
        let mut weights = Vec::with_capacity(children.len());
        for c in children {
            let Some(p) = c.properties.iter().find(|p| p.name == "loadbalance.weight") else {
                weights.push(1);
                continue;
            };
            match p.value.trim().parse::<u32>() {
                Ok(w) if w > 0 => weights.push(w),
                _ => {
                    self.report(
                        Severity::Error,
                        &p.loc,
                        "property",
                        format!(
                            "loadbalance.weight '{}' is not a whole number above zero",
                            p.value
                        ),
                    );
                    return None;
                }
            }
        }
        Some(weights)
    }

    /// A `recipientlist`: its child endpoints, or the addresses `<endpoints value>` lists. An
    /// expression known at load (a literal, `get-property('registry', KEY)`) gives them now; any
    /// other is kept, and each message's `send` builds its list from it.
    fn recipient_list(
        &mut self,
        ep: &cfg::Endpoint,
        name: String,
        children: &[cfg::Endpoint],
        list: Option<&cfg::ValueSrc>,
        override_uri: Option<&str>,
    ) -> Option<Arc<EndpointPlan>> {
        let text = match list {
            None => return self.group(ep, name, GroupKind::RecipientList, children, override_uri),
            Some(cfg::ValueSrc::Literal(t)) => t.clone(),
            Some(cfg::ValueSrc::Expr(e)) => match self.expr(e, "endpoints")? {
                sluice_expr::Expr::Literal(t) => t,
                x => {
                    let g = self.group(ep, name, GroupKind::RecipientList, &[], None)?;
                    let mut plan = Arc::try_unwrap(g).ok()?;
                    if let Some(group) = plan.group.as_mut() {
                        group.listed_per_message = Some(x);
                    }
                    return Some(Arc::new(plan));
                }
            },
        };
        let listed = self.listed_recipients(ep, &text)?;
        self.group(ep, name, GroupKind::RecipientList, &listed, override_uri)
    }

    /// `<endpoints value>`'s comma-separated addresses, as address endpoints.
    fn listed_recipients(&mut self, ep: &cfg::Endpoint, text: &str) -> Option<Vec<cfg::Endpoint>> {
        let children: Vec<cfg::Endpoint> = text
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(|uri| cfg::Endpoint {
                name: None,
                loc: ep.loc.clone(),
                kind: cfg::EndpointKind::Address(Box::new(cfg::AddressEndpoint::plain(
                    uri.to_owned(),
                    ep.loc.clone(),
                ))),
                properties: Vec::new(),
            })
            .collect();
        if children.is_empty() {
            self.report(
                Severity::Error,
                &ep.loc,
                "endpoints",
                "the recipient list is empty",
            );
            self.failed = true;
            return None;
        }
        Some(children)
    }

    pub(crate) fn group(
        &mut self,
        ep: &cfg::Endpoint,
        name: String,
        kind: GroupKind,
        children: &[cfg::Endpoint],
        override_uri: Option<&str>,
    ) -> Option<Arc<EndpointPlan>> {
        if override_uri.is_some() {
            self.report(
                Severity::Error,
                &ep.loc,
                "endpoint",
                format!("--endpoint {name}=...: {name} is a failover or load-balance endpoint, which has no address; point its children instead"),
            );
            return None;
        }
        let plans: Vec<Option<Arc<EndpointPlan>>> =
            children.iter().map(|c| self.endpoint(c, None)).collect();
        let plans: Option<Vec<Arc<EndpointPlan>>> = plans.into_iter().collect();
        Some(Arc::new(EndpointPlan::group(name, kind, plans?)))
    }
}
