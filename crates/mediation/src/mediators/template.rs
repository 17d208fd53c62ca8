//! `<call-template>`: a sequence template runs with its parameters' values as `$func:`.

use crate::mediators::prelude::*;

/// The two steps of a template call.
#[derive(Debug)]
pub enum TemplateStep {
    /// `<call-template>`: the template's steps with its parameters' values (`$func:`).
    Enter(Arc<TemplateCall>),
    /// Leaves the template run last (after a `call` inside it, the continuation's end of it).
    Leave,
}

/// A `<call-template>`: the template's compiled sequence, and each parameter's value (an
/// argument, else the default; a parameter with neither is not set). `missing`: a mandatory
/// parameter the call does not pass, an error when the call runs (as in WSO2 MI).
#[derive(Debug)]
pub struct TemplateCall {
    pub name: String,
    pub template: Arc<SeqPlan>,
    pub params: Vec<(String, Value)>,
    pub missing: Option<String>,
}

pub(crate) fn compile(
    c: &mut Compiler,
    target: &str,
    params: &[(String, cfg::ValueSrc)],
    passed: &[(String, cfg::ExprSrc)],
    m: &cfg::Mediator,
) -> Option<Step> {
    // As MI's InvokeMediator: a template it cannot find fails the message that reaches the call.
    // (Synapse 3.0.1's stops that message's mediation without a word.)
    if !c.templates.contains_key(target) {
        c.left_for_run("template", target, &m.loc, &m.element)
            .ok()?;
        return Some(Step::Missing(super::missing::MissingPlan {
            message: format!("Sequence template {target} cannot be found").into(),
        }));
    }
    let call = c.call_template(target, params, passed, &m.loc, &m.element)?;
    Some(Step::Template(TemplateStep::Enter(call)))
}

impl Compiler<'_> {
    /// A `<call-template>`: the template compiled once (cached with the sequences, under
    /// `template:NAME`), each argument checked against its parameters: an unknown one is ignored
    /// and a missing mandatory one fails the call when it runs (a warning each). The template must
    /// exist ([`compile`] leaves an unknown one for the run).
    pub(crate) fn call_template(
        &mut self,
        target: &str,
        args: &[(String, cfg::ValueSrc)],
        passed: &[(String, cfg::ExprSrc)],
        loc: &Location,
        el: &str,
    ) -> Option<Arc<TemplateCall>> {
        let Some(t) = self.templates.get(target).copied() else {
            self.report(
                Severity::Error,
                loc,
                el,
                format!("no template named '{target}'"),
            );
            return None;
        };
        // As WSO2 MI: an argument the template does not declare is ignored; a mandatory parameter
        // the call does not pass fails the call when it runs (a warning here).
        let names = args
            .iter()
            .map(|(n, _)| n)
            .chain(passed.iter().map(|(n, _)| n));
        for name in names {
            if !t.params.iter().any(|p| &p.name == name) {
                self.report(
                    Severity::Warning,
                    loc,
                    el,
                    format!("template '{target}' has no parameter '{name}'; ignored"),
                );
            }
        }
        let mut params = Vec::new();
        let mut missing = None;
        for p in &t.params {
            if let Some((_, e)) = passed.iter().find(|(n, _)| *n == p.name) {
                // Read as text (`get-property('func', NAME)`), it is the expression, as the
                // XPath object's text in Synapse.
                params.push((p.name.clone(), Value::Literal(e.text.clone())));
                continue;
            }
            match args.iter().find(|(n, _)| *n == p.name) {
                Some((_, v)) => params.push((p.name.clone(), self.value(v, el)?)),
                None if p.mandatory => {
                    self.report(
                        Severity::Warning,
                        loc,
                        el,
                        format!(
                            "template '{target}' needs its parameter '{}': the call fails when it runs",
                            p.name
                        ),
                    );
                    missing.get_or_insert_with(|| p.name.clone());
                }
                None => {
                    if let Some(d) = &p.default {
                        params.push((p.name.clone(), Value::Literal(d.clone())));
                    }
                }
            }
        }
        let template = if passed.is_empty() {
            self.template(t, Some(loc), el)?
        } else {
            self.template_instance(t, passed, loc, el)?
        };
        Some(Arc::new(TemplateCall {
            name: target.to_owned(),
            template,
            params,
            missing,
        }))
    }
}

impl Compiler<'_> {
    /// The template compiled for one call site whose `passed` parameters are expressions
    /// (`{{...}}`): its expressions read each in place of `$func:NAME` (cached under the site).
    fn template_instance(
        &mut self,
        t: &cfg::Template,
        passed: &[(String, cfg::ExprSrc)],
        loc: &Location,
        el: &str,
    ) -> Option<Arc<SeqPlan>> {
        let mut own = Vec::with_capacity(passed.len());
        for (name, e) in passed {
            let text = e.text.trim();
            if text.starts_with("json-eval(")
                || text.starts_with("${")
                || text.contains("get-property")
            {
                let why = "a with-param in double braces holding a JsonPath, a ${} expression or get-property (an expression that gives the expression) is not supported yet";
                self.report(Severity::Unsupported, &e.loc, el, why);
                return None;
            }
            // Passed on from an instance's own passed parameters: read in terms of those.
            let e = match self.func_exprs.is_empty() || !text.contains("$func:") {
                true => e.clone(),
                false => self.with_passed(e, el)?,
            };
            own.push((name.clone(), e));
        }
        self.next_func_exprs = own;
        self.compile_once(
            "template",
            &t.name,
            format!("template:{}@{loc}", t.name),
            &t.sequence,
            t.rejected,
            Some(loc),
            el,
            "calls itself",
        )
    }

    /// `e` with each `$func:NAME` of a passed parameter read as its expression (in parentheses
    /// within a larger one) and that expression's namespaces added. Synapse evaluates a passed
    /// expression against the envelope: a relative one gives the same only as the whole
    /// expression, so one inside a larger expression must be absolute (unsupported otherwise).
    pub(crate) fn with_passed(&mut self, e: &cfg::ExprSrc, el: &str) -> Option<cfg::ExprSrc> {
        let whole = e.text.trim();
        let mut text = String::with_capacity(e.text.len());
        let mut ns: Vec<(String, String)> = e.ns.as_ref().clone();
        let mut rest = e.text.as_str();
        while let Some(k) = rest.find("$func:") {
            text.push_str(&rest[..k]);
            let after = &rest[k + 6..];
            let end = after
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
                .unwrap_or(after.len());
            let name = &after[..end];
            rest = &after[end..];
            let Some((_, p)) = self.func_exprs.iter().find(|(n, _)| n == name) else {
                text.push_str("$func:");
                text.push_str(name);
                continue;
            };
            let p = p.clone();
            let inner = p.text.trim();
            if whole == format!("$func:{name}") {
                text.push_str(inner);
            } else if inner.starts_with('/') {
                text.push('(');
                text.push_str(inner);
                text.push(')');
            } else {
                let why = format!("the passed expression '{inner}' is relative: Synapse evaluates it against the envelope, which Sluice does only where it is the whole expression, not inside '{whole}'");
                self.report(Severity::Unsupported, &e.loc, el, why);
                return None;
            }
            for (prefix, uri) in p.ns.iter() {
                match ns.iter().find(|(q, _)| q == prefix) {
                    Some((_, u)) if u != uri => {
                        let why = format!("the prefix '{prefix}' means {u} here and {uri} in the passed expression '{inner}'");
                        self.report(Severity::Unsupported, &e.loc, el, why);
                        return None;
                    }
                    Some(_) => {}
                    None => ns.push((prefix.clone(), uri.clone())),
                }
            }
        }
        text.push_str(rest);
        Some(cfg::ExprSrc {
            text,
            ns: Arc::new(ns),
            loc: e.loc.clone(),
        })
    }
}

impl Mediator for TemplateStep {
    fn reads(&self, json: bool) -> Reads {
        let TemplateStep::Enter(t) = self else {
            return Reads::NOTHING;
        };
        let args = t
            .params
            .iter()
            .fold(BodyNeed::None, |n, (_, v)| n.max(v.body_need()));
        Reads {
            need: args.max(t.template.need(json)),
            then_response: calls(&t.template.steps),
        }
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        match self {
            TemplateStep::Enter(t) => (t.params.iter().all(|(_, v)| value_by_head(v, f))
                && body_exprs_all(&t.template.steps, f))
            .into(),
            TemplateStep::Leave => ByHead::Yes,
        }
    }

    fn leaves(&self) -> Option<&'static str> {
        match self {
            TemplateStep::Enter(t) => leaves_message(&t.template.steps),
            TemplateStep::Leave => None,
        }
    }

    fn calls(&self) -> bool {
        match self {
            TemplateStep::Enter(t) => calls(&t.template.steps),
            TemplateStep::Leave => false,
        }
    }

    fn heavy(&self) -> bool {
        matches!(self, TemplateStep::Enter(t) if t.template.heavy)
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        match self {
            TemplateStep::Enter(t) => enter(t, cx),
            TemplateStep::Leave => {
                cx.msg.func.pop();
                Ok(None)
            }
        }
    }
}

/// The arguments are evaluated where the template is called, then its sequence runs with them as
/// `$func:`; the template is left when its steps end, also after a `call` in it (the continuation
/// leaves it there).
fn enter(t: &TemplateCall, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
    if let Some(p) = &t.missing {
        return Err(Error::new(
            ErrorKind::Mediation,
            format!(
                "template {}: the mandatory parameter '{p}' was not given",
                t.name
            ),
        ));
    }
    let mut frame = Vec::with_capacity(t.params.len());
    for (name, v) in &t.params {
        frame.push((name.clone(), eval_value(v, cx.msg, cx.doc)?));
    }
    cx.msg.func.push(frame);
    match run_steps(&t.template.steps, 0, cx.msg, cx.doc) {
        Ok(Flow::Call(ep, mut k)) => {
            k.push_frame(Steps::from(vec![Step::Template(TemplateStep::Leave)]), 0);
            cx.continue_after_this(&mut k);
            Ok(Some(Flow::Call(ep, k)))
        }
        Ok(Flow::Continue) => {
            cx.msg.func.pop();
            Ok(None)
        }
        // As in MI, a template left otherwise (a send, an error) keeps its parameters for what
        // runs next.
        other => other.map(Some),
    }
}

#[cfg(test)]
mod tests {
    use sluice_config::Severity;

    /// What compiling `body` (inside `<definitions>`) reports as unsupported, and whether proxy P
    /// deploys.
    fn compile(body: &str) -> (Vec<String>, bool) {
        let xml =
            format!(r#"<definitions xmlns="http://ws.apache.org/ns/synapse">{body}</definitions>"#);
        let (cfg, mut diags) = sluice_config::load_str("t.xml", &xml);
        let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
        let unsupported = (diags.items.iter())
            .filter(|d| d.severity == Severity::Unsupported)
            .map(|d| d.message.clone())
            .collect();
        (unsupported, plan.proxies.contains_key("P"))
    }

    const TEMPLATE: &str = r#"<template name="T"><parameter name="e"/><sequence>
        <filter xmlns:a="urn:a" xpath="count($func:e) &gt; 0"><then><drop/></then></filter>
        <property name="x" expression="$func:e"/></sequence></template>"#;

    fn call(value: &str, ns: &str) -> String {
        format!(
            r#"{TEMPLATE}<proxy name="P"><target><inSequence><call-template target="T">
            <with-param {ns} name="e" value="{value}"/></call-template></inSequence></target></proxy>"#
        )
    }

    #[test]
    fn passed_expressions_compile_in_place_of_their_parameter() {
        let (u, deployed) = compile(&call("{{//b:x}}", r#"xmlns:b="urn:b""#));
        assert!(u.is_empty() && deployed, "{u:?}");
        // The same prefix for the same namespace is fine.
        let (u, deployed) = compile(&call("{{//a:x}}", r#"xmlns:a="urn:a""#));
        assert!(u.is_empty() && deployed, "{u:?}");
    }

    #[test]
    fn passed_expressions_that_would_read_otherwise_are_unsupported() {
        // Relative, inside a larger expression: Synapse reads it from the envelope.
        let (u, deployed) = compile(&call("{{b:x}}", r#"xmlns:b="urn:b""#));
        assert!(
            !deployed && u.iter().any(|m| m.contains("is relative")),
            "{u:?}"
        );
        // A prefix the template binds to another namespace.
        let (u, deployed) = compile(&call("{{//a:x}}", r#"xmlns:a="urn:other""#));
        assert!(
            !deployed && u.iter().any(|m| m.contains("prefix 'a'")),
            "{u:?}"
        );
        // An expression giving the expression.
        let (u, deployed) = compile(&call("{{get-property('E')}}", ""));
        assert!(
            !deployed && u.iter().any(|m| m.contains("get-property")),
            "{u:?}"
        );
    }
}
