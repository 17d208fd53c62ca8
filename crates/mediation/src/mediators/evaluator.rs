//! Synapse's evaluator language, the conditions of `<rewrite>` rules and `<conditionalRouter>`
//! routes: `and`, `or`, `not`, `equal` and `match` over a URL (for a rewrite, as the rules before
//! have left it), the request's HTTP headers, the URL's query parameters and message properties.
//! A source that is missing makes `equal` and `match` false. Where Sluice differs on purpose: a
//! `header` condition finds its header whatever its case.

use crate::mediators::prelude::*;
use crate::mediators::rewrite::uri::{self, Parts};
use sluice_config::ConditionSource;

#[derive(Debug)]
pub(crate) enum Condition {
    And(Vec<Condition>),
    Or(Vec<Condition>),
    Not(Box<Condition>),
    /// The source's text equals the value, ignoring case (Java `equalsIgnoreCase`).
    Equal(ConditionSource, String),
    /// The whole of the source's text matches (Java `matches()`).
    Match(ConditionSource, FullRegex),
}

pub(crate) fn compile(c: &mut Compiler, cond: &cfg::Condition, el: &str) -> Option<Condition> {
    let all = |c: &mut Compiler, list: &[cfg::Condition]| -> Option<Vec<Condition>> {
        let mut out = Vec::with_capacity(list.len());
        for x in list {
            out.push(compile(c, x, el)?);
        }
        Some(out)
    };
    Some(match cond {
        cfg::Condition::And(list) => Condition::And(all(c, list)?),
        cfg::Condition::Or(list) => Condition::Or(all(c, list)?),
        cfg::Condition::Not(inner) => Condition::Not(Box::new(compile(c, inner, el)?)),
        cfg::Condition::Equal { source, value } => Condition::Equal(source.clone(), value.clone()),
        cfg::Condition::Match { source, regex, loc } => {
            Condition::Match(source.clone(), c.regex(regex, loc, el)?)
        }
    })
}

impl Condition {
    /// Whether it holds for the URI `parts` stand for, on `msg`. A URL that cannot be read again
    /// makes it false, as Synapse skips the rule.
    pub(crate) fn holds(&self, parts: &Parts, msg: &Message) -> bool {
        match self {
            Condition::And(list) => list.iter().all(|c| c.holds(parts, msg)),
            Condition::Or(list) => list.iter().any(|c| c.holds(parts, msg)),
            Condition::Not(c) => {
                // An error is no answer: `not` of it is false too.
                parts.to_uri().is_ok() && !c.holds(parts, msg)
            }
            Condition::Equal(source, value) => text(source, parts, msg)
                .is_some_and(|t| t == *value || t.to_lowercase() == value.to_lowercase()),
            Condition::Match(source, re) => {
                text(source, parts, msg).is_some_and(|t| re.matches(&t))
            }
        }
    }
}

/// The text a condition looks at; `None` when there is none.
fn text(source: &ConditionSource, parts: &Parts, msg: &Message) -> Option<String> {
    match source {
        ConditionSource::Header(name) => msg
            .headers
            .get(name.as_str())
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        ConditionSource::Property(name) => msg.props.get(name).map(str::to_owned),
        ConditionSource::Param(name) => param(&parts.to_uri().ok()?, name),
        ConditionSource::Url(None) => parts.to_uri().ok(),
        ConditionSource::Url(Some(part)) => {
            // The URL is read again, as Synapse reads the text it made of the parts.
            let again = Parts::parse(&parts.to_uri().ok()?).ok()?;
            again.text_of(*part)
        }
    }
}

/// A query parameter of `url` as Synapse's evaluators read it: the text after the first `?`
/// (a `#` reference included) split at `&`, then at `=`; the last one named wins; `%XX` and `+`
/// decoded.
fn param(url: &str, name: &str) -> Option<String> {
    let (_, query) = url.split_once('?')?;
    let mut found = None;
    for pair in query.split('&') {
        // Java's `split("=")`: trailing empty pieces dropped, so `id=` names no value.
        let mut pieces: Vec<&str> = pair.split('=').collect();
        while pieces.last() == Some(&"") {
            pieces.pop();
        }
        if let [k, v, ..] = pieces[..] {
            if k == name {
                found = Some(uri::decode(&v.replace('+', " ")));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_read_from_the_url_as_synapse_reads_them() {
        assert_eq!(
            param("http://h/p?id=42&x=a+b%21", "x").as_deref(),
            Some("a b!")
        );
        assert_eq!(param("http://h/p?id=42#x", "id").as_deref(), Some("42#x"));
        assert_eq!(param("http://h/p?id=1&id=2", "id").as_deref(), Some("2"));
        assert_eq!(param("http://h/p?id", "id"), None);
        assert_eq!(param("http://h/p?id=", "id"), None);
        assert_eq!(param("http://h/p?id==2", "id").as_deref(), Some(""));
    }
}
