//! `<switch>`: the first `<case>` whose regex matches the source's value runs, else `<default>`.

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct SwitchPlan {
    pub source: Expr,
    pub cases: Vec<(FullRegex, Steps)>,
    pub default: Steps,
}

pub(crate) fn compile(c: &mut Compiler, s: &cfg::Switch, el: &str) -> Option<Step> {
    let source = c.expr(&s.source, el);
    let mut cases = Vec::new();
    for case in &s.cases {
        let r = c.regex(&case.regex, &case.loc, "case");
        let steps = c.steps(&case.sequence.mediators);
        if let Some(r) = r {
            cases.push((r, steps));
        }
    }
    let default = c.steps_of(s.default.as_ref());
    Some(Step::Switch(SwitchPlan {
        source: source?,
        cases,
        default,
    }))
}

impl Mediator for SwitchPlan {
    fn reads(&self, json: bool) -> Reads {
        let mut n = self.source.body_need().max(need_of(&self.default, json));
        for (_, s) in &self.cases {
            n = n.max(need_of(s, json));
        }
        Reads::of(n)
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        ((self.source.body_need() == BodyNeed::None || f(&self.source))
            && body_exprs_all(&self.default, f)
            && self.cases.iter().all(|(_, s)| body_exprs_all(s, f)))
        .into()
    }

    fn leaves(&self) -> Option<&'static str> {
        self.cases
            .iter()
            .find_map(|(_, s)| leaves_message(s))
            .or_else(|| leaves_message(&self.default))
    }

    fn heavy(&self) -> bool {
        heavy(&self.default) || self.cases.iter().any(|(_, s)| heavy(s))
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let value = eval_expr(&self.source, cx.msg, cx.doc)?;
        let branch = self
            .cases
            .iter()
            .find(|(re, _)| re.matches(&value))
            .map(|(_, s)| s)
            .unwrap_or(&self.default);
        cx.branch(branch)
    }
}
