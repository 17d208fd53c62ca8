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
    let call = c.call_template(target, params, &m.loc, &m.element)?;
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
        for (name, _) in args {
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
        let template = self.template(t, Some(loc), el)?;
        Some(Arc::new(TemplateCall {
            name: target.to_owned(),
            template,
            params,
            missing,
        }))
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
