//! Endpoints: a reference by key or an inline definition, the kinds (address, http, default, failover,
//! loadbalance), their timeout, suspension and retry settings, and endpoint templates.

use super::{child, elements, in_scope_namespaces, loose_bool, text_of, FileParser};
use crate::diag::Severity;
use crate::model::*;
use roxmltree::Node;
use std::ops::Range;
use std::sync::Arc;

impl FileParser<'_, '_> {
    /// A top-level `<endpoint name>`. One with problems is kept as `Rejected`, so what uses it is not
    /// deployed either.
    pub(super) fn endpoint_artifact(&mut self, n: Node) -> Option<Endpoint> {
        let name = self.needed(
            n.attribute("name"),
            n,
            "a top-level endpoint needs a 'name'",
        )?;
        self.artifact = Some(format!("endpoint {name}"));
        match self.endpoint(n) {
            Some(e) if !self.failed => Some(e),
            _ => Some(Endpoint {
                name: Some(name.to_owned()),
                loc: self.loc(n),
                kind: EndpointKind::Rejected,
                properties: Vec::new(),
            }),
        }
    }

    /// A reference to a named endpoint in attribute `attr`, if there is one.
    pub(super) fn endpoint_key(&self, n: Node, attr: &str) -> Option<EndpointRef> {
        n.attribute(attr).map(|key| EndpointRef::Key {
            key: key.to_owned(),
            loc: self.attr_loc(n, attr),
        })
    }

    /// An `<endpoint key>` or an inline `<endpoint>`.
    pub(super) fn endpoint_ref(&mut self, n: Node) -> Option<EndpointRef> {
        if let Some(r) = self.endpoint_key(n, "key") {
            return Some(r);
        }
        self.endpoint(n).map(|e| EndpointRef::Inline(Box::new(e)))
    }

    /// An `<endpoint>`: one naming another (`key`), one made from a template, or a definition.
    pub(super) fn endpoint(&mut self, n: Node) -> Option<Endpoint> {
        let name = n.attribute("name").map(str::to_owned);
        let loc = self.loc(n);
        let (kind, properties) = if let Some(x) = self.expr_attr(n, "key-expression") {
            (EndpointKind::ByKey(x), Vec::new())
        } else if let Some(k) = n.attribute("key") {
            (EndpointKind::Indirect(k.to_owned()), Vec::new())
        } else if let Some(template) = n.attribute("template") {
            (self.template_use(n, template), Vec::new())
        } else {
            self.definition(n)?
        };
        Some(Endpoint {
            name,
            loc,
            kind,
            properties,
        })
    }

    /// An `<endpoint template>`: the template's name and the values given for its parameters (put in
    /// later, by [`super::instantiate_endpoint`]).
    fn template_use(&mut self, n: Node, template: &str) -> EndpointKind {
        // The endpoint's own `name` and `uri` are parameters too.
        let mut args: Vec<(String, String)> = ["name", "uri"]
            .into_iter()
            .filter_map(|a| n.attribute(a).map(|v| (a.to_owned(), v.to_owned())))
            .collect();
        for c in elements(n) {
            if !self.check_synapse_ns(c) {
                continue;
            }
            match c.tag_name().name() {
                "parameter" => {
                    let (Some(p), Some(v)) = (
                        self.required_attr(c, "name"),
                        c.attribute("value").map(str::to_owned),
                    ) else {
                        if c.attribute("value").is_none() {
                            self.report(Severity::Error, c, "missing required attribute 'value'");
                        }
                        continue;
                    };
                    args.push((p, v));
                }
                _ => self.unknown_child(c, "endpoint"),
            }
        }
        EndpointKind::Template {
            template: template.to_owned(),
            args,
        }
    }

    /// An endpoint defined in place: its kind and its properties. `None` when it has no valid kind
    /// (reported).
    fn definition(&mut self, n: Node) -> Option<(EndpointKind, Vec<EndpointProperty>)> {
        let mut kind = None;
        let mut properties = Vec::new();
        let mut session = None;
        // A definition was there but was reported (and rejected): nothing more to say.
        let mut defined = false;
        for c in elements(n) {
            if !self.check_synapse_ns(c) {
                continue;
            }
            match c.tag_name().name() {
                element @ ("address" | "http" | "default" | "failover" | "loadbalance"
                | "recipientlist" | "wsdl") => {
                    defined = true;
                    kind = self.endpoint_kind(c, element);
                }
                "property" => properties.extend(self.endpoint_property(c)),
                "parameter" => {}
                "session" => session = Some(self.session(c)?),
                k @ ("template" | "dynamicLoadbalance" | "serviceDynamicLoadbalance" | "class") => {
                    self.report(
                        Severity::Unsupported,
                        c,
                        format!("<{k}> endpoints are not supported yet"),
                    );
                    return None;
                }
                // Synapse's EndpointFactory picks the kind by the children it knows.
                _ => self.unknown_child(c, "endpoint"),
            }
        }
        if let Some(s) = session {
            match &mut kind {
                Some(EndpointKind::Loadbalance { session, .. }) => *session = Some(s),
                _ => self.report(
                    Severity::Warning,
                    n,
                    "a <session> applies to a <loadbalance> endpoint only; ignored",
                ),
            }
        }
        match kind {
            Some(kind) => Some((kind, properties)),
            None if defined => None,
            None => {
                self.report(
                    Severity::Error,
                    n,
                    "endpoint has no definition (expected <address>, <http>, <default>, <failover> or <loadbalance>)",
                );
                None
            }
        }
    }

    /// The kind `c`, an `<address>`, `<http>`, `<default>`, `<failover>` or `<loadbalance>`, defines.
    fn endpoint_kind(&mut self, c: Node, element: &str) -> Option<EndpointKind> {
        let flavor = match element {
            "address" => AddressKind::Address,
            "http" => AddressKind::Http,
            "default" => AddressKind::Default,
            "wsdl" => AddressKind::Wsdl,
            "failover" => return self.failover(c),
            "recipientlist" => return self.recipient_list(c),
            _ => return self.loadbalance(c),
        };
        self.address(c, flavor)
            .map(|a| EndpointKind::Address(Box::new(a)))
    }

    /// An endpoint's `<property name value>`.
    fn endpoint_property(&mut self, c: Node) -> Option<EndpointProperty> {
        let name = self.required_attr(c, "name")?;
        let scope = self.scope(c)?;
        let (value, expression) = match self.value_or_expr(c) {
            Some(ValueSrc::Literal(v)) => (v, None),
            Some(ValueSrc::Expr(e)) => (String::new(), Some(e)),
            None => {
                self.report(
                    Severity::Warning,
                    c,
                    "an endpoint property needs 'value' or 'expression'; ignored",
                );
                return None;
            }
        };
        Some(EndpointProperty {
            name,
            value,
            expression,
            scope,
            loc: self.loc(c),
        })
    }

    /// The child endpoints of a `<failover>` or `<loadbalance>`; None when one was rejected (the
    /// parent is not deployed) or there are none.
    fn children(&mut self, n: Node, what: &str) -> Option<Vec<Endpoint>> {
        let mut children = Vec::new();
        let mut ok = true;
        for c in elements(n) {
            if !self.check_synapse_ns(c) {
                continue;
            }
            match c.tag_name().name() {
                "endpoint" => match self.endpoint(c) {
                    Some(e) => children.push(e),
                    None => ok = false,
                },
                // A static member: the message's own path on that host (Synapse's
                // LoadbalanceEndpoint with members).
                "member" => match self.member(c) {
                    Some(e) => children.push(e),
                    None => ok = false,
                },
                _ => self.unknown_child(c, what),
            }
        }
        if ok && children.is_empty() {
            self.report(
                Severity::Error,
                n,
                format!("<{what}> has no child endpoints"),
            );
            ok = false;
        }
        ok.then_some(children)
    }

    /// `<member hostName httpPort httpsPort>`: an endpoint sending to the message's path (its To
    /// address's, else the request's) on that host, over http (https only when it has no http
    /// port).
    fn member(&mut self, c: Node) -> Option<Endpoint> {
        let host = self.required_attr(c, "hostName")?;
        let (scheme, port) = match (c.attribute("httpPort"), c.attribute("httpsPort")) {
            (Some(p), _) => ("http", p),
            (None, Some(p)) => ("https", p),
            (None, None) => {
                self.report(Severity::Error, c, "a <member> needs httpPort or httpsPort");
                return None;
            }
        };
        let loc = self.loc(c);
        let mut a = AddressEndpoint::plain(format!("{scheme}://{host}:{port}"), loc.clone());
        a.kind = AddressKind::Member;
        Some(Endpoint {
            name: None,
            loc,
            kind: EndpointKind::Address(Box::new(a)),
            properties: Vec::new(),
        })
    }

    fn failover(&mut self, n: Node) -> Option<EndpointKind> {
        let dynamic = loose_bool(n, "dynamic", true);
        let children = self.children(n, "failover")?;
        Some(EndpointKind::Failover { dynamic, children })
    }

    /// `<recipientlist>`: child endpoints, or `<endpoints value="a,b"/>` (in braces, an expression).
    fn recipient_list(&mut self, n: Node) -> Option<EndpointKind> {
        if let Some(e) = elements(n).find(|c| c.tag_name().name() == "endpoints") {
            let value = self.required_attr(e, "value")?;
            let list = match value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
                Some(expr) => ValueSrc::Expr(self.expr(e, "value", expr)),
                None => ValueSrc::Literal(value),
            };
            return Some(EndpointKind::RecipientList {
                children: Vec::new(),
                list: Some(list),
            });
        }
        let children = self.children(n, "recipientlist")?;
        Some(EndpointKind::RecipientList {
            children,
            list: None,
        })
    }

    /// `<session type><sessionTimeout>ms</sessionTimeout></session>`: how a load-balance endpoint
    /// keeps a client on one child.
    fn session(&mut self, c: Node) -> Option<Session> {
        let kinds = [
            ("http", SessionKind::Http),
            ("simpleClientSession", SessionKind::ClientId),
        ];
        let ty = c.attribute("type").unwrap_or("");
        if ty == "soap" {
            self.report(
                Severity::Unsupported,
                c,
                "SOAP sessions (WS-Addressing service group ids) are not supported yet",
            );
            return None;
        }
        let kind = self.one_of(c, "session type", ty, &kinds)?;
        let timeout_ms = match child(c, "sessionTimeout") {
            Some(t) => Some(self.number::<u64>(t)?),
            None => None,
        };
        Some(Session { kind, timeout_ms })
    }

    fn loadbalance(&mut self, n: Node) -> Option<EndpointKind> {
        const ROUND_ROBIN: &str = "org.apache.synapse.endpoints.algorithms.RoundRobin";
        const WEIGHTED: &str = "org.apache.synapse.endpoints.algorithms.WeightedRoundRobin";
        let weighted = match n.attribute("algorithm") {
            None | Some(ROUND_ROBIN) => false,
            Some(WEIGHTED) => true,
            Some(a) => {
                self.report(
                    Severity::Unsupported,
                    n,
                    format!("load-balance algorithm '{a}' is not supported yet (only {ROUND_ROBIN} and {WEIGHTED})"),
                );
                return None;
            }
        };
        let failover = loose_bool(n, "failover", true);
        let children = self.children(n, "loadbalance")?;
        Some(EndpointKind::Loadbalance {
            failover,
            children,
            weighted,
            session: None,
        })
    }

    fn retry_config(&mut self, n: Node) -> RetryConfig {
        let mut r = RetryConfig::default();
        for c in elements(n) {
            match c.tag_name().name() {
                "disabledErrorCodes" => r.disabled = self.error_codes(c),
                "enabledErrorCodes" => r.enabled = self.error_codes(c),
                _ => self.unknown_child(c, "retryConfig"),
            }
        }
        r
    }

    /// `<address uri>`, `<http uri-template method>` or `<default>` (the message's To address): the
    /// same settings inside.
    fn address(&mut self, n: Node, flavor: AddressKind) -> Option<AddressEndpoint> {
        let http = flavor == AddressKind::Http;
        let inline_wsdl =
            elements(n).find(|c| matches!(c.tag_name().name(), "definitions" | "description"));
        let (uri, uri_loc) = match flavor {
            AddressKind::Default => (String::new(), self.loc(n)),
            AddressKind::Wsdl if inline_wsdl.is_some() => (String::new(), self.loc(n)),
            _ => {
                let attr = if http { "uri-template" } else { "uri" };
                (self.required_attr(n, attr)?, self.attr_loc(n, attr))
            }
        };
        let format = n.attribute("format").map(str::to_owned);
        let method = match n.attribute("method").filter(|_| http) {
            Some(m) => self.http_method(n, m),
            None => None,
        };
        let mut a = AddressEndpoint {
            uri,
            uri_loc,
            format,
            kind: flavor,
            method,
            timeout: None,
            suspend_on_failure: SuspendOnFailure::default(),
            mark_for_suspension: MarkForSuspension::default(),
            retry: RetryConfig::default(),
            addressing: None,
            security: None,
            wsdl: (flavor == AddressKind::Wsdl).then(|| {
                Box::new(WsdlPort {
                    service: n.attribute("service").map(str::to_owned),
                    port: n.attribute("port").map(str::to_owned),
                    inline: inline_wsdl.map(|w| self.serialize_element(w)),
                })
            }),
        };
        for c in elements(n) {
            match c.tag_name().name() {
                "definitions" | "description" if flavor == AddressKind::Wsdl => {}
                "timeout" => a.timeout = Some(self.timeout(c)),
                "suspendOnFailure" => a.suspend_on_failure = self.suspend_on_failure(c),
                "markForSuspension" => a.mark_for_suspension = self.mark_for_suspension(c),
                // Synapse's older form: seconds, with no progression.
                "suspendDurationOnFailure" => {
                    if let Some(secs) = self.number::<i64>(c) {
                        a.suspend_on_failure.initial_duration_ms = Some(secs.saturating_mul(1000));
                        a.suspend_on_failure.progression_factor = Some(1.0);
                    }
                }
                "retryConfig" => a.retry = self.retry_config(c),
                "enableAddressing" => {
                    a.addressing = Some(match c.attribute("version") {
                        Some("submission") => WsaVersion::Submission,
                        _ => WsaVersion::Final,
                    });
                }
                "enableRM" | "property" => {
                    self.report(Severity::Warning, c, "not implemented yet; ignored");
                }
                // MI's <http> authentication (basic auth, OAuth): it sets headers Sluice would not.
                "authentication" => {
                    self.report(
                        Severity::Unsupported,
                        c,
                        "endpoint authentication (basic auth, OAuth) is not supported yet",
                    );
                    return None;
                }
                "enableSec" => a.security = self.endpoint_security(c),
                _ => self.unknown_child(c, flavor.element()),
            }
        }
        Some(a)
    }

    /// `<enableSec policy | inboundPolicy outboundPolicy>` (`policy` serves both flows and wins, as
    /// in Synapse). A bare `<enableSec/>` engages Rampart with no policy: nothing is done, with a
    /// warning.
    pub(crate) fn endpoint_security(&mut self, c: Node) -> Option<EndpointSecurity> {
        let key = |name: &str| c.attribute(name).map(str::trim).filter(|k| !k.is_empty());
        let (outbound, inbound) = match key("policy") {
            Some(p) => (Some(p.to_owned()), Some(p.to_owned())),
            None => (
                key("outboundPolicy").map(str::to_owned),
                key("inboundPolicy").map(str::to_owned),
            ),
        };
        if outbound.is_none() && inbound.is_none() {
            self.report(
                Severity::Warning,
                c,
                "<enableSec/> without a policy secures nothing (Rampart has no policy to apply); ignored",
            );
            return None;
        }
        Some(EndpointSecurity {
            outbound,
            inbound,
            loc: self.loc(c),
        })
    }

    /// An `<http method>`, upper-cased; `None` (with a warning) for one HTTP endpoints do not send.
    fn http_method(&mut self, n: Node, m: &str) -> Option<String> {
        let upper = m.to_ascii_uppercase();
        if matches!(
            upper.as_str(),
            "GET" | "POST" | "PUT" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS"
        ) {
            return Some(upper);
        }
        // As Synapse: an unknown method keeps the request's.
        self.report(
            Severity::Warning,
            n,
            format!("method '{m}' is not get, post, put, delete, patch, head or options; the request's method is kept"),
        );
        None
    }

    fn number<T: std::str::FromStr>(&mut self, n: Node) -> Option<T> {
        let t = text_of(n);
        match t.parse() {
            Ok(v) => Some(v),
            Err(_) => {
                self.report(
                    Severity::Error,
                    n,
                    format!("expected a number, found '{t}'"),
                );
                None
            }
        }
    }

    fn error_codes(&mut self, n: Node) -> Vec<i64> {
        let mut v = Vec::new();
        for part in text_of(n)
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            match part.parse() {
                Ok(c) => v.push(c),
                Err(_) => self.report(Severity::Error, n, format!("'{part}' is not an error code")),
            }
        }
        v
    }

    fn timeout(&mut self, n: Node) -> EndpointTimeout {
        let mut t = EndpointTimeout {
            loc: self.loc(n),
            duration_ms: None,
            dynamic: None,
            action: None,
        };
        for c in elements(n) {
            match c.tag_name().name() {
                // MI's duration per message, `{expression}`.
                "duration" if text_of(c).starts_with('{') => {
                    let text = text_of(c);
                    let inner = text.trim_start_matches('{').trim_end_matches('}');
                    t.dynamic = Some(self.expr(c, "duration", inner));
                }
                "duration" => t.duration_ms = self.number(c),
                "responseAction" => {
                    let actions = [
                        ("fault", TimeoutAction::Fault),
                        ("discard", TimeoutAction::Discard),
                        ("never", TimeoutAction::Never),
                    ];
                    t.action = self.one_of(c, "responseAction", &text_of(c), &actions);
                }
                _ => self.unknown_child(c, "timeout"),
            }
        }
        t
    }

    fn suspend_on_failure(&mut self, n: Node) -> SuspendOnFailure {
        let mut s = SuspendOnFailure::default();
        for c in elements(n) {
            match c.tag_name().name() {
                "errorCodes" => s.error_codes = self.error_codes(c),
                "initialDuration" => s.initial_duration_ms = self.number(c),
                "progressionFactor" => s.progression_factor = self.number(c),
                "maximumDuration" => s.maximum_duration_ms = self.number(c),
                _ => self.unknown_child(c, "suspendOnFailure"),
            }
        }
        s
    }

    fn mark_for_suspension(&mut self, n: Node) -> MarkForSuspension {
        let mut m = MarkForSuspension::default();
        for c in elements(n) {
            match c.tag_name().name() {
                "errorCodes" => m.error_codes = self.error_codes(c),
                "retriesBeforeSuspension" => m.retries_before_suspension = self.number(c),
                "retryDelay" => m.retry_delay_ms = self.number(c),
                _ => self.unknown_child(c, "markForSuspension"),
            }
        }
        m
    }

    /// An endpoint template: its parameters and its `<endpoint>`, kept as text with the places of
    /// its `$param`s (read only when an endpoint names it, with the values put in).
    pub(super) fn endpoint_template(&mut self, n: Node, name: String) -> Option<EndpointTemplate> {
        let mut params: Vec<String> = Vec::new();
        let mut endpoint = None;
        for c in elements(n) {
            if !self.check_synapse_ns(c) {
                continue;
            }
            match c.tag_name().name() {
                "parameter" => {
                    if let Some(p) = self.required_attr(c, "name") {
                        params.push(p.trim().to_owned());
                    }
                }
                "endpoint" if endpoint.is_none() => endpoint = Some(c),
                "description" => {}
                other => self.report(
                    Severity::Error,
                    c,
                    format!("<{other}> in an endpoint template: it holds <parameter>s and one <endpoint>"),
                ),
            }
        }
        let e = endpoint?;
        for implicit in ["name", "uri"] {
            if !params.iter().any(|p| p == implicit) {
                params.push(implicit.to_owned());
            }
        }
        let slots = param_slots(e, &params);
        Some(EndpointTemplate {
            name,
            loc: self.loc(n),
            params,
            source: Arc::from(&self.text[e.range()]),
            source_loc: self.loc(e),
            namespaces: in_scope_namespaces(e),
            slots,
        })
    }
}

/// Where a declared parameter stands in `e` as a whole value, in order: the byte range from the
/// start of `e`, the parameter, and whether it is an attribute value (else an element's text).
fn param_slots(e: Node, params: &[String]) -> Vec<(Range<usize>, String, bool)> {
    let base = e.range().start;
    let mut slots = Vec::new();
    let param_of = |v: &str| {
        v.strip_prefix('$')
            .filter(|p| params.iter().any(|d| d == p))
            .map(str::to_owned)
    };
    for d in e.descendants().filter(|d| d.is_element()) {
        for a in d.attributes() {
            if let Some(p) = param_of(a.value()) {
                let r = a.range_value();
                slots.push((r.start - base..r.end - base, p, true));
            }
        }
        // The whole text of an element with nothing else in it.
        let mut kids = d.children();
        if let (Some(t), None) = (kids.next(), kids.next()) {
            if let Some(p) = t.text().filter(|_| t.is_text()).and_then(param_of) {
                let r = t.range();
                slots.push((r.start - base..r.end - base, p, false));
            }
        }
    }
    slots.sort_by_key(|s| s.0.start);
    slots
}

#[cfg(test)]
mod tests {
    use crate::diag::Diagnostics;
    use crate::model::*;
    use crate::parse::instantiate_endpoint;
    use crate::parse::tests::{parse, NS};

    #[test]
    fn endpoint_templates_put_in_whole_values_only() {
        let (cfg, d) = parse(&format!(
            r#"<definitions {NS}>
<template name="T">
  <parameter name="codes"/>
  <parameter name="factor"/>
  <endpoint name="$name">
    <address uri="$uri" format="$fmt">
      <suspendOnFailure>
        <errorCodes>$codes</errorCodes>
        <progressionFactor>$factor</progressionFactor>
      </suspendOnFailure>
    </address>
  </endpoint>
</template>
<endpoint name="E" template="T" uri="http://h:1/a?x=1&amp;y=&quot;2&quot;">
  <parameter name="codes" value="101504,101505"/>
  <parameter name="factor" value="2.0"/>
  <parameter name="fmt" value="pox"/>
</endpoint>
<endpoint name="Bad" template="T" uri="http://h/">
  <parameter name="codes" value="x"/>
</endpoint>
</definitions>"#
        ));
        assert!(d.items.is_empty(), "{:?}", d.items);
        let t = &cfg.endpoint_templates[0];
        assert_eq!(t.params, ["codes", "factor", "name", "uri"]);
        // `$fmt` is not a declared parameter: not a slot.
        assert_eq!(t.slots.len(), 4);
        let use_of = |name: &str| {
            let e = cfg
                .endpoints
                .iter()
                .find(|e| e.name.as_deref() == Some(name));
            match &e.unwrap().kind {
                EndpointKind::Template { template, args } => {
                    assert_eq!(template, "T");
                    args.clone()
                }
                k => panic!("{k:?}"),
            }
        };
        let mut d = Diagnostics::default();
        let e = instantiate_endpoint(t, &use_of("E"), "endpoint E", &mut d).unwrap();
        assert!(d.items.is_empty(), "{:?}", d.items);
        assert_eq!(e.name.as_deref(), Some("E"));
        let EndpointKind::Address(a) = &e.kind else {
            panic!("{:?}", e.kind)
        };
        // Escaped on the way in, read back as the value given.
        assert_eq!(a.uri, "http://h:1/a?x=1&y=\"2\"");
        assert_eq!(a.format.as_deref(), Some("$fmt"));
        assert_eq!(a.suspend_on_failure.error_codes, [101504, 101505]);
        assert_eq!(a.suspend_on_failure.progression_factor, Some(2.0));
        // Mistakes are reported at their place in the template (`<errorCodes>`), for the use that
        // made them.
        let mut d = Diagnostics::default();
        assert!(instantiate_endpoint(t, &use_of("Bad"), "endpoint Bad", &mut d).is_none());
        let err = &d.items[0];
        let at = (&*err.location.file, err.location.line, err.location.col);
        assert_eq!(at, ("t.xml", 8, 9), "{err:?}");
    }

    #[test]
    fn endpoint_template_parameters_win_over_attributes_and_are_escaped() {
        let (cfg, d) = crate::load_str(
            "t.xml",
            &format!(
                r#"<definitions {NS}>
<template name="T"><endpoint><address uri='$uri'/></endpoint></template>
<endpoint name="E" template="T" uri="http://a/"><parameter name="uri" value="http://b/'q'&amp;&lt;"/></endpoint>
<template name="T"><endpoint><address uri="$uri"/></endpoint></template>
</definitions>"#
            ),
        );
        assert_eq!(d.items.len(), 1, "{:?}", d.items);
        assert!(d.items[0].message.contains("duplicate template 'T'"));
        let EndpointKind::Template { args, .. } = &cfg.endpoints[0].kind else {
            panic!()
        };
        let mut d = Diagnostics::default();
        let e = instantiate_endpoint(&cfg.endpoint_templates[0], args, "E", &mut d).unwrap();
        let EndpointKind::Address(a) = &e.kind else {
            panic!()
        };
        assert_eq!(a.uri, "http://b/'q'&<");
    }

    #[test]
    fn suspension_settings_as_wso2_tooling_writes_them() {
        // Integration Studio writes -1 for "unset"; Synapse reads these as signed numbers.
        let (cfg, d) = parse(&format!(
            r#"<definitions {NS}>
  <endpoint name="E"><address uri="http://h/x">
    <suspendOnFailure><errorCodes>101503, 101504</errorCodes><initialDuration>-1</initialDuration>
      <progressionFactor>-1</progressionFactor><maximumDuration>0</maximumDuration></suspendOnFailure>
    <markForSuspension><errorCodes>-1</errorCodes><retriesBeforeSuspension>0</retriesBeforeSuspension>
      <retryDelay>0</retryDelay></markForSuspension>
  </address></endpoint>
  <endpoint name="Old"><address uri="http://h/y"><suspendDurationOnFailure>5</suspendDurationOnFailure></address></endpoint>
</definitions>"#
        ));
        assert!(d.items.is_empty(), "{:?}", d.items);
        let EndpointKind::Address(a) = &cfg.endpoints[0].kind else {
            panic!()
        };
        assert_eq!(a.suspend_on_failure.error_codes, vec![101503, 101504]);
        assert_eq!(a.suspend_on_failure.initial_duration_ms, Some(-1));
        assert_eq!(a.suspend_on_failure.progression_factor, Some(-1.0));
        assert_eq!(a.suspend_on_failure.maximum_duration_ms, Some(0));
        assert_eq!(a.mark_for_suspension.error_codes, vec![-1]);
        assert_eq!(a.mark_for_suspension.retries_before_suspension, Some(0));
        let EndpointKind::Address(old) = &cfg.endpoints[1].kind else {
            panic!()
        };
        assert_eq!(old.suspend_on_failure.initial_duration_ms, Some(5000));
        assert_eq!(old.suspend_on_failure.progression_factor, Some(1.0));
    }

    #[test]
    fn failover_and_loadbalance_endpoints() {
        let (cfg, d) = parse(&format!(
            r#"<definitions {NS}>
  <endpoint name="F"><failover dynamic="false">
    <endpoint name="A"><address uri="http://a/x"><retryConfig><disabledErrorCodes>101504</disabledErrorCodes></retryConfig></address></endpoint>
    <endpoint key="B"/>
  </failover></endpoint>
  <endpoint name="L"><loadbalance algorithm="org.apache.synapse.endpoints.algorithms.RoundRobin" failover="False">
    <endpoint><address uri="http://c/x"/></endpoint><endpoint key="F"/>
  </loadbalance></endpoint>
  <endpoint name="W"><loadbalance algorithm="org.example.Weighted"><endpoint key="B"/></loadbalance></endpoint>
  <endpoint name="M"><loadbalance><member hostName="h" httpPort="80"/></loadbalance></endpoint>
  <endpoint name="E"><failover/></endpoint>
</definitions>"#
        ));
        let EndpointKind::Failover { dynamic, children } = &cfg.endpoints[0].kind else {
            panic!("{:?}", cfg.endpoints[0].kind)
        };
        assert!(!dynamic);
        assert_eq!(children.len(), 2);
        let EndpointKind::Address(a) = &children[0].kind else {
            panic!()
        };
        assert_eq!(a.retry.disabled, vec![101504]);
        assert!(matches!(&children[1].kind, EndpointKind::Indirect(k) if k == "B"));
        assert!(matches!(
            &cfg.endpoints[1].kind,
            EndpointKind::Loadbalance { failover: false, children, .. } if children.len() == 2
        ));
        let msgs: Vec<String> = d.items.iter().map(|x| x.to_string()).collect();
        assert_eq!(msgs.len(), 2, "{msgs:#?}");
        assert!(msgs[0].contains("t.xml:9:") && msgs[0].contains("org.example.Weighted"));
        assert!(msgs[1].contains("t.xml:11:") && msgs[1].contains("no child endpoints"));
        // A static member: the message's path on http://h:80.
        let EndpointKind::Loadbalance { children, .. } = &cfg.endpoints[3].kind else {
            panic!("{:?}", cfg.endpoints[3].kind)
        };
        assert!(matches!(&children[0].kind, EndpointKind::Address(a)
            if a.kind == AddressKind::Member && a.uri == "http://h:80"));
        for k in [2, 4] {
            assert!(matches!(cfg.endpoints[k].kind, EndpointKind::Rejected));
        }
    }

    #[test]
    fn http_endpoints() {
        let (cfg, d) = parse(&format!(
            r#"<definitions {NS}>
  <endpoint name="H"><http method="put" uri-template="http://h/o/{{uri.var.id}}"><timeout><duration>100</duration></timeout></http></endpoint>
  <endpoint name="Bad"><http method="fetch" uri-template="http://h/"/></endpoint>
</definitions>"#
        ));
        let EndpointKind::Address(a) = &cfg.endpoints[0].kind else {
            panic!()
        };
        assert_eq!(a.kind, AddressKind::Http);
        assert_eq!(a.uri, "http://h/o/{uri.var.id}");
        assert_eq!(a.method.as_deref(), Some("PUT"));
        assert_eq!(a.timeout.as_ref().and_then(|t| t.duration_ms), Some(100));
        let msgs: Vec<String> = d.items.iter().map(|x| x.to_string()).collect();
        assert_eq!(msgs.len(), 1, "{msgs:#?}");
        assert!(
            msgs[0].contains("t.xml:3:")
                && msgs[0].contains("warning")
                && msgs[0].contains("'fetch'"),
            "{msgs:#?}"
        );
        let EndpointKind::Address(bad) = &cfg.endpoints[1].kind else {
            panic!()
        };
        assert_eq!(bad.method, None);
    }
}
