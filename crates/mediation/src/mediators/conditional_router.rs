//! `<conditionalRouter>`: each route whose condition holds ([`super::evaluator`]) sends the
//! message through its target, in order; a route with `breakRoute` (the default) ends the routing
//! when it matches. The conditions read the URL (the `To` address, else the request's path and
//! query), the headers, the query parameters and the properties; never the body.
//!
//! A target runs here, in order, as WSO2 MI runs a route that is not `asynchronous`: its SOAP
//! action and `to` are set, then its sequence runs, then its endpoint is sent to. A target that
//! sends ends the mediation there, so a later matching route does not run after it. Without
//! `continueAfter="true"` the sequence stops after the router; a message no target sent is
//! then answered 202, as after a `drop` (Synapse sends nothing).

use crate::mediators::clone::CloneTargetPlan;
use crate::mediators::evaluator::{self, Condition};
use crate::mediators::prelude::*;
use crate::mediators::rewrite::uri::Parts;
use crate::message::ActionChange;

#[derive(Debug)]
pub struct RouterPlan {
    continue_after: bool,
    routes: Vec<Route>,
}

#[derive(Debug)]
struct Route {
    break_route: bool,
    condition: Condition,
    target: CloneTargetPlan,
}

pub(crate) fn compile(c: &mut Compiler, r: &cfg::ConditionalRouter, el: &str) -> Option<Step> {
    let mut routes = Vec::with_capacity(r.routes.len());
    for route in &r.routes {
        let condition = evaluator::compile(c, &route.condition, el);
        let target = c.clone_target(&route.target);
        routes.push(Route {
            break_route: route.break_route,
            condition: condition?,
            target: target?,
        });
    }
    Some(Step::ConditionalRouter(RouterPlan {
        continue_after: r.continue_after,
        routes,
    }))
}

impl RouterPlan {
    fn sequences(&self) -> impl Iterator<Item = &Steps> {
        self.routes
            .iter()
            .filter_map(|r| r.target.sequence.as_ref().map(|s| &s.steps))
    }
}

impl Mediator for RouterPlan {
    fn heavy(&self) -> bool {
        self.sequences().any(|s| heavy(s))
    }

    fn reads(&self, json: bool) -> Reads {
        let need = self
            .sequences()
            .fold(BodyNeed::None, |n, s| n.max(need_of(s, json)));
        Reads::of(need)
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        self.sequences().all(|s| body_exprs_all(s, f)).into()
    }

    fn leaves(&self) -> Option<&'static str> {
        self.routes.iter().find_map(|r| match &r.target.endpoint {
            Some(_) => Some("send"),
            None => r
                .target
                .sequence
                .as_ref()
                .and_then(|s| leaves_message(&s.steps)),
        })
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let url = cx.msg.to.as_deref().unwrap_or(&cx.msg.path_and_query);
        let parts = Parts::parse(url).unwrap_or_else(|_| Parts::empty());
        for route in &self.routes {
            if !route.condition.holds(&parts, cx.msg) {
                continue;
            }
            if let Some(flow) = target(&route.target, cx)? {
                return Ok(Some(flow));
            }
            if route.break_route {
                break;
            }
        }
        Ok((!self.continue_after).then_some(Flow::Drop))
    }
}

/// A route's target: its action and address set, its sequence run, then its endpoint sent to.
fn target(t: &CloneTargetPlan, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
    if let Some(a) = &t.soap_action {
        cx.msg.action = Some(ActionChange::Set(a.clone()));
    }
    if let Some(to) = &t.to {
        cx.msg.to = Some(to.clone());
    }
    if let Some(seq) = &t.sequence {
        if let Some(flow) = cx.branch(&seq.steps)? {
            return Ok(Some(flow));
        }
    }
    Ok(t.endpoint.clone().map(|ep| Flow::Send(Some(ep))))
}
