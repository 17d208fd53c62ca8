//! `<filter>` (a regex over an expression's value, or an XPath's boolean) and `<in>` / `<out>`
//! (whether the message is a response): one branch or the other runs.

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct FilterPlan {
    pub cond: Cond,
    pub then: Steps,
    pub otherwise: Steps,
}

#[derive(Debug)]
pub enum Cond {
    Regex {
        source: Expr,
        regex: FullRegex,
    },
    XPath(Expr),
    /// `<out>` (true) or `<in>`: whether the message is a response (the response path, or
    /// `RESPONSE=true`), as Synapse's `isResponse`.
    Response(bool),
}

impl Cond {
    /// The expression the condition evaluates, if any.
    fn source(&self) -> Option<&Expr> {
        match self {
            Cond::Regex { source, .. } | Cond::XPath(source) => Some(source),
            Cond::Response(_) => None,
        }
    }
}

pub(crate) fn compile(c: &mut Compiler, f: &cfg::Filter, el: &str) -> Option<Step> {
    let cond = match &f.cond {
        cfg::FilterCond::Regex {
            source,
            regex,
            regex_loc,
        } => {
            let source = c.expr(source, el);
            let regex = c.regex(regex, regex_loc, el);
            Cond::Regex {
                source: source?,
                regex: regex?,
            }
        }
        cfg::FilterCond::XPath(x) => Cond::XPath(c.expr(x, el)?),
    };
    let then = c.steps(&f.then.mediators);
    let otherwise = c.steps_of(f.otherwise.as_ref());
    Some(Step::Filter(FilterPlan {
        cond,
        then,
        otherwise,
    }))
}

/// `<in>` (`response` false) or `<out>`: a filter on the direction.
pub(crate) fn compile_direction(
    c: &mut Compiler,
    response: bool,
    body: &cfg::Sequence,
) -> Option<Step> {
    Some(Step::Filter(FilterPlan {
        cond: Cond::Response(response),
        then: c.steps(&body.mediators),
        otherwise: Steps::default(),
    }))
}

impl Mediator for FilterPlan {
    fn reads(&self, json: bool) -> Reads {
        let c = self.cond.source().map_or(BodyNeed::None, Expr::body_need);
        Reads::of(
            c.max(need_of(&self.then, json))
                .max(need_of(&self.otherwise, json)),
        )
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        (self
            .cond
            .source()
            .is_none_or(|source| source.body_need() == BodyNeed::None || f(source))
            && body_exprs_all(&self.then, f)
            && body_exprs_all(&self.otherwise, f))
        .into()
    }

    fn leaves(&self) -> Option<&'static str> {
        leaves_message(&self.then).or_else(|| leaves_message(&self.otherwise))
    }

    fn heavy(&self) -> bool {
        heavy(&self.then) || heavy(&self.otherwise)
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let branch = if test(&self.cond, cx.msg, cx.doc)? {
            &self.then
        } else {
            &self.otherwise
        };
        cx.branch(branch)
    }
}

fn test(cond: &Cond, msg: &Message, doc: &DocCache) -> Result<bool, Error> {
    match cond {
        Cond::Regex { source, regex } => Ok(regex.matches(&eval_expr(source, msg, doc)?)),
        Cond::XPath(x) => x.eval_bool(&View { msg, doc }).map_err(expr_error),
        Cond::Response(response) => Ok(msg.is_response() == *response),
    }
}
