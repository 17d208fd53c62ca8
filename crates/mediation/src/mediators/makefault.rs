//! `<makefault>`: the message becomes a SOAP 1.1 / 1.2 (or POX) fault; with `response="true"` it
//! is marked as a response.

use crate::fault::{self, Detail, FaultParts};
use crate::mediators::prelude::*;
use bytes::Bytes;
use sluice_config::FaultVersion;

#[derive(Debug)]
pub struct FaultPlan {
    pub version: FaultVersion,
    pub response: bool,
    /// The whole fault when nothing in it is computed per message.
    pub fixed: Option<Bytes>,
    pub code: Option<(String, String)>,
    pub reason: Value,
    pub role: Option<String>,
    pub node: Option<String>,
    pub detail: Option<DetailPlan>,
}

#[derive(Debug)]
pub enum DetailPlan {
    Value(Value),
    Xml(String),
}

impl FaultPlan {
    pub fn render(&self, reason: &str, detail: Option<&str>) -> Bytes {
        let detail = match (&self.detail, detail) {
            (Some(DetailPlan::Xml(x)), _) => Some(Detail::Xml(x)),
            (Some(DetailPlan::Value(_)), Some(d)) => Some(Detail::Text(d)),
            _ => None,
        };
        fault::build(
            self.version,
            &FaultParts {
                code: self.code.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
                reason,
                role: self.role.as_deref(),
                node: self.node.as_deref(),
                detail,
            },
        )
    }
}

pub(crate) fn compile(c: &mut Compiler, f: &cfg::MakeFault, el: &str) -> Option<Step> {
    Some(Step::MakeFault(c.makefault(f, el)?))
}

impl Compiler<'_> {
    pub(crate) fn makefault(&mut self, f: &cfg::MakeFault, el: &str) -> Option<FaultPlan> {
        let reason = match &f.reason {
            Some(v) => self.value(v, el)?,
            None => Value::Literal(String::new()),
        };
        let detail = match &f.detail {
            None => None,
            Some(cfg::FaultDetail::Xml(x)) => Some(DetailPlan::Xml(x.clone())),
            Some(cfg::FaultDetail::Value(v)) => Some(DetailPlan::Value(self.value(v, el)?)),
        };
        let mut plan = FaultPlan {
            version: f.version,
            response: f.response,
            fixed: None,
            code: f.code.clone(),
            reason,
            role: f.role.clone(),
            node: f.node.clone(),
            detail,
        };
        let detail_literal = match &plan.detail {
            None | Some(DetailPlan::Xml(_)) => Some(None),
            Some(DetailPlan::Value(Value::Literal(d))) => Some(Some(d.as_str())),
            Some(DetailPlan::Value(Value::Expr(_))) => None,
        };
        if let (Value::Literal(r), Some(d)) = (&plan.reason, detail_literal) {
            plan.fixed = Some(plan.render(r, d));
        }
        Some(plan)
    }
}

impl Mediator for FaultPlan {
    fn reads(&self, _json: bool) -> Reads {
        Reads::of(self.reason.body_need())
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        value_by_head(&self.reason, f).into()
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        make_fault(self, cx.msg, cx.doc)?;
        // The body changed: a later XPath must see the fault, not the old parse.
        *cx.doc = DocCache::new();
        Ok(None)
    }
}

fn make_fault(f: &FaultPlan, msg: &mut Message, doc: &DocCache) -> Result<(), Error> {
    let body = match &f.fixed {
        Some(b) => b.clone(),
        None => {
            let reason = eval_value(&f.reason, msg, doc)?;
            let detail = match &f.detail {
                Some(DetailPlan::Value(v)) => Some(eval_value(v, msg, doc)?),
                _ => None,
            };
            f.render(&reason, detail.as_deref())
        }
    };
    msg.set_body(body, crate::fault::content_type(f.version));
    msg.is_fault = true;
    msg.soap = f.version;
    if f.response {
        msg.props.set("RESPONSE", "true".to_owned());
    }
    Ok(())
}
