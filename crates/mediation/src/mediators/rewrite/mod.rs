//! `<rewrite>`: rewrites a URI part by part, as Synapse's URL rewrite mediator does. The URI is
//! the message's `To` (or the property `inProperty` names); its parts ([`uri::Parts`]) go through
//! each `<rewriterule>` in order, a rule whose `<condition>` holds running its actions in order;
//! the result is the new `To` (or goes into the property `outProperty`).
//!
//! | action `fragment` | what `type` does |
//! |---|---|
//! | `full` (the default) | any type sets the whole URI to the value |
//! | `port` | any type sets the port to the value (a number); `remove` without a value drops it |
//! | the others | `set`, `append`, `prepend` (a `&` between two queries, as MI), `replace` (every match of `regex`, `$1` for a group), `remove` |
//!
//! Where Sluice differs on purpose: a `replace` regex that does not compile is refused at load
//! (Synapse fails each message), and a `header` condition finds its header whatever its case
//! (Synapse needs the case the client sent).

pub(crate) mod uri;

use crate::mediators::evaluator::{self as condition, Condition};
use crate::mediators::prelude::*;
use sluice_config::{RewriteKind, UriPart};
use uri::{Malformed, Parts};

#[derive(Debug)]
pub struct RewritePlan {
    in_property: Option<String>,
    out_property: Option<String>,
    rules: Vec<RulePlan>,
}

#[derive(Debug)]
struct RulePlan {
    condition: Option<Condition>,
    actions: Vec<ActionPlan>,
}

#[derive(Debug)]
struct ActionPlan {
    kind: RewriteKind,
    part: UriPart,
    /// `None` only for `remove` without a value.
    value: Option<Value>,
    /// `replace`: the pattern (found anywhere, every match replaced).
    replace: Option<regex::Regex>,
}

pub(crate) fn compile(c: &mut Compiler, r: &cfg::Rewrite, el: &str) -> Option<Step> {
    let mut rules = Vec::with_capacity(r.rules.len());
    for rule in &r.rules {
        let condition = match &rule.condition {
            Some(cond) => Some(condition::compile(c, cond, el)?),
            None => None,
        };
        let mut actions = Vec::with_capacity(rule.actions.len());
        for a in &rule.actions {
            actions.push(action(c, a, el)?);
        }
        rules.push(RulePlan { condition, actions });
    }
    Some(Step::Rewrite(RewritePlan {
        in_property: r.in_property.clone(),
        out_property: r.out_property.clone(),
        rules,
    }))
}

fn action(c: &mut Compiler, a: &cfg::RewriteAction, el: &str) -> Option<ActionPlan> {
    let value = match &a.value {
        Some(v) => Some(c.value(v, el)?),
        None => None,
    };
    let replace = match (&a.kind, &a.regex) {
        (RewriteKind::Replace, Some(pattern)) => match regex::Regex::new(pattern) {
            Ok(re) => Some(re),
            Err(e) => {
                c.report(
                    Severity::Error,
                    &a.loc,
                    el,
                    format!("the replace regex '{pattern}' does not compile: {e}"),
                );
                return None;
            }
        },
        _ => None,
    };
    Some(ActionPlan {
        kind: a.kind,
        part: a.fragment,
        value,
        replace,
    })
}

impl Mediator for RewritePlan {
    fn reads(&self, _json: bool) -> Reads {
        // Without an inProperty it rewrites the To, which may be the request's WS-Addressing To.
        let to = match self.in_property {
            None => BodyNeed::Full,
            Some(_) => BodyNeed::None,
        };
        let need = self.values().fold(to, |n, v| n.max(v.body_need()));
        Reads::of(need)
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        self.values().all(|v| value_by_head(v, f)).into()
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let to;
        let input = match self.in_property.as_deref() {
            Some(p) => cx.msg.props.get(p),
            None if cx.msg.is_response() => cx.msg.to.as_deref(),
            None => {
                to = cx.msg.to_address();
                Some(to.as_ref())
            }
        };
        let mut parts = match input {
            Some(text) => Parts::parse(text).map_err(|Malformed(m)| {
                Error::new(
                    ErrorKind::Mediation,
                    format!("rewrite: malformed input URI {m}"),
                )
            })?,
            None => Parts::empty(),
        };
        for rule in &self.rules {
            if let Some(cond) = &rule.condition {
                if !cond.holds(&parts, cx.msg) {
                    continue;
                }
            }
            for a in &rule.actions {
                let value = match &a.value {
                    Some(v) => Some(eval_value(v, cx.msg, cx.doc)?),
                    None => None,
                };
                apply(a, value, &mut parts)?;
            }
        }
        let result = parts.to_uri().map_err(|Malformed(m)| {
            Error::new(
                ErrorKind::Mediation,
                format!("rewrite: the rewritten parts make no URI: {m}"),
            )
        })?;
        match &self.out_property {
            Some(p) => cx.msg.props.set(p, result),
            None => cx.msg.to = Some(result),
        }
        Ok(None)
    }
}

impl RewritePlan {
    fn values(&self) -> impl Iterator<Item = &Value> {
        self.rules
            .iter()
            .flat_map(|r| r.actions.iter().filter_map(|a| a.value.as_ref()))
    }
}

/// One action on the parts.
fn apply(a: &ActionPlan, value: Option<String>, parts: &mut Parts) -> Result<(), Error> {
    let failed = |m: String| Error::new(ErrorKind::Mediation, format!("rewrite: {m}"));
    match a.part {
        UriPart::Full => {
            *parts = match value {
                Some(v) => Parts::parse(&v).map_err(|Malformed(m)| failed(m))?,
                None => Parts::empty(),
            };
        }
        UriPart::Port => {
            parts.port = match value {
                None => -1,
                Some(v) => {
                    java_int(&v).ok_or_else(|| failed(format!("port '{v}' is not a number")))?
                }
            };
        }
        part => {
            let is_query = part == UriPart::Query;
            let Some(slot) = parts.text_mut(part) else {
                return Ok(());
            };
            let current = slot.take().unwrap_or_default();
            let v = value.unwrap_or_default();
            *slot = match a.kind {
                RewriteKind::Set => Some(v),
                RewriteKind::Append if is_query && !current.is_empty() => {
                    Some(format!("{current}&{v}"))
                }
                RewriteKind::Append => Some(current + &v),
                RewriteKind::Prepend if is_query && !current.is_empty() => {
                    Some(format!("{v}&{current}"))
                }
                RewriteKind::Prepend => Some(v + &current),
                RewriteKind::Replace => Some(match &a.replace {
                    Some(re) => re
                        .replace_all(&current, java_replacement(&v, re).as_str())
                        .into_owned(),
                    None => current,
                }),
                RewriteKind::Remove => None,
            };
        }
    }
    Ok(())
}

/// `Integer.parseInt`: an optional sign, then decimal digits, within 32 bits.
fn java_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i32>().ok().map(i64::from)
}

/// A Java `replaceAll` replacement as the regex crate reads one: `$n` (the longest number that
/// is a group of `re`) becomes `${n}`, `\x` the character x, and a literal `$` `$$`.
fn java_replacement(java: &str, re: &regex::Regex) -> String {
    let groups = re.captures_len();
    let mut out = String::with_capacity(java.len() + 4);
    let mut chars = java.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(x) => out.push(x),
                None => {}
            },
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                let mut n = chars.next().and_then(|d| d.to_digit(10)).unwrap_or(0) as usize;
                while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                    if n * 10 + d as usize >= groups {
                        break;
                    }
                    n = n * 10 + d as usize;
                    chars.next();
                }
                out.push_str(&format!("${{{n}}}"));
            }
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(
        kind: RewriteKind,
        part: UriPart,
        value: Option<&str>,
        regex: Option<&str>,
    ) -> ActionPlan {
        ActionPlan {
            kind,
            part,
            value: value.map(|v| Value::Literal(v.into())),
            replace: regex.map(|r| regex::Regex::new(r).unwrap()),
        }
    }

    fn rewrite(uri: &str, actions: &[ActionPlan]) -> Result<String, Error> {
        let mut parts = Parts::parse(uri).unwrap();
        for a in actions {
            let v = a.value.as_ref().map(|v| match v {
                Value::Literal(s) => s.clone(),
                Value::Expr(_) => unreachable!(),
            });
            apply(a, v, &mut parts)?;
        }
        Ok(parts.to_uri().unwrap())
    }

    #[test]
    fn actions_change_parts_as_synapse_does() {
        use RewriteKind::*;
        use UriPart::*;
        let r = |uri, a: &[ActionPlan]| rewrite(uri, a).unwrap();
        assert_eq!(
            r(
                "http://localhost:9000/soap/SimpleStockQuoteService",
                &[act(Replace, Path, Some("services"), Some("soap"))]
            ),
            "http://localhost:9000/services/SimpleStockQuoteService"
        );
        // Without a fragment (full) the type does not matter: the value is the whole URI.
        assert_eq!(
            r("http://h/p", &[act(Append, Full, Some("/x"), None)]),
            "/x"
        );
        assert_eq!(
            r(
                "http://h:8080/p?a=1#top",
                &[
                    act(Remove, Port, None, None),
                    act(Remove, Query, None, None)
                ]
            ),
            "http://h/p#top"
        );
        assert_eq!(
            r("http://h/p", &[act(Set, Query, Some(""), None)]),
            "http://h/p?"
        );
        assert_eq!(
            r(
                "http://h/soap/A/B",
                &[act(
                    Replace,
                    Path,
                    Some("/services/$1"),
                    Some("^/soap/(.*)$")
                )]
            ),
            "http://h/services/A/B"
        );
        assert_eq!(
            r("http://h/p?a=1", &[act(Append, Query, Some("b=2"), None)]),
            "http://h/p?a=1&b=2"
        );
        assert_eq!(
            r(
                "http://test.com/SimpleStockQuoteService",
                &[
                    act(Set, Host, Some("localhost"), None),
                    act(Prepend, Path, Some("/services"), None),
                    act(Set, Port, Some("9000"), None)
                ]
            ),
            "http://localhost:9000/services/SimpleStockQuoteService"
        );
        assert!(rewrite("http://h/p", &[act(Set, Port, Some("abc"), None)]).is_err());
    }

    #[test]
    fn java_replacements_read_as_java_reads_them() {
        let re = regex::Regex::new("(a)(b)").unwrap();
        assert_eq!(java_replacement("$1x", &re), "${1}x");
        assert_eq!(java_replacement("$21", &re), "${2}1");
        assert_eq!(java_replacement("\\$1 costs $", &re), "$$1 costs $$");
        assert_eq!(
            re.replace_all("abab", java_replacement("[$2$1]", &re).as_str()),
            "[ba][ba]"
        );
    }
}
