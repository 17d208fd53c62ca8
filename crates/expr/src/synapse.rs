//! Synapse's variables and `get-property()` inside a larger XPath, made plain XPath 1.0 at load.
//!
//! `$ctx:NAME`, `$trp:NAME`, `$axis2:NAME`, `$url:NAME` and `get-property(...)` with literal arguments
//! become variables `$sluice.pN` that [`crate::Expr`] resolves per evaluation from the message's
//! properties (the table of what each stands for is kept beside the compiled XPath). `$body` and
//! `$header` become paths to the SOAP Body and Header elements; a message that is not a SOAP envelope
//! (plain XML) has no Header, and its `$body` is the document node, so `$body/order` is its root
//! element `order` (Synapse wraps such a payload in an envelope's Body).

use crate::date::DateFormat;
use crate::{
    invalid, is_scope, literal, scope_by_name, unsupported, ExprError, LoadScope, PropScope,
    Registry,
};

/// What a rewritten variable stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Var {
    Property(PropScope, String),
    UrlParam(String),
    /// A value known at load (`get-property('registry' | 'file', KEY)`).
    Const(String),
    /// `get-property('SYSTEM_DATE'[, FORMAT])`: the time of the evaluation.
    SystemDate(DateFormat),
    /// `get-property('SYSTEM_TIME')`, in any scope: milliseconds since 1970 at the evaluation.
    SystemTime,
}

impl Var {
    /// The time now, for the two variables that read the clock (`None` for the others).
    pub(crate) fn time(&self) -> Option<String> {
        match self {
            Var::SystemDate(format) => Some(format.now()),
            Var::SystemTime => Some(crate::system_time()),
            _ => None,
        }
    }
}

/// The prefix of the variables the rewrite makes; their names are this and an index.
pub(crate) const VAR_PREFIX: &str = "sluice.p";

const SOAP_NS: &str = "(namespace-uri()='http://schemas.xmlsoap.org/soap/envelope/' or namespace-uri()='http://www.w3.org/2003/05/soap-envelope')";

fn body_path() -> String {
    format!(
        "(/*[local-name()='Envelope' and {SOAP_NS}]/*[local-name()='Body' and {SOAP_NS}] | /*[not(local-name()='Envelope' and {SOAP_NS})]/..)"
    )
}

fn header_path() -> String {
    format!("(/*[local-name()='Envelope' and {SOAP_NS}]/*[local-name()='Header' and {SOAP_NS}])")
}

pub(crate) fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.') || !c.is_ascii()
}

/// The NCName at the start of `s` (possibly empty).
fn ncname(s: &str) -> &str {
    let end = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
    &s[..end]
}

/// `text` with Synapse's variables and `get-property()` calls replaced, and what each new variable
/// stands for. `None` when there is nothing of Synapse's in it.
pub(crate) fn rewrite(
    text: &str,
    registry: Registry<'_>,
) -> Result<Option<(String, Vec<Var>)>, ExprError> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut vars: Vec<Var> = Vec::new();
    let mut changed = false;
    let mut rest = text;
    // The character before `rest`, to tell a function name from the end of another name.
    let mut prev: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        if c == '\'' || c == '"' {
            let Some((lit, after)) = literal(rest) else {
                return Err(invalid(format!("'{text}': unterminated string literal")));
            };
            out.push(c);
            out.push_str(lit);
            out.push(c);
            rest = after;
            prev = Some(c);
            continue;
        }
        if c == '$' {
            let after = &rest[1..];
            let name = ncname(after);
            let tail = &after[name.len()..];
            let (var, used) = match (name, tail.strip_prefix(':')) {
                ("ctx" | "trp" | "axis2" | "func" | "url", Some(t)) => {
                    let local = ncname(t);
                    if local.is_empty() {
                        return Err(invalid(format!("'{text}': ${name}: needs a property name")));
                    }
                    let var = match name {
                        "ctx" => Var::Property(PropScope::Default, local.to_owned()),
                        "trp" => Var::Property(PropScope::Transport, local.to_owned()),
                        "axis2" => Var::Property(PropScope::Axis2, local.to_owned()),
                        "func" => Var::Property(PropScope::Func, local.to_owned()),
                        _ => Var::UrlParam(local.to_owned()),
                    };
                    let used = 1 + name.len() + 1 + local.len();
                    if rest[used..].trim_start().starts_with(['/', '[']) {
                        return Err(unsupported(format!(
                            "'{text}': a path into ${name}:{local} (a property holding XML) is not supported yet"
                        )));
                    }
                    (Some(var), used)
                }
                ("body", None) => {
                    out.push_str(&body_path());
                    (None, 1 + name.len())
                }
                ("header", None) => {
                    out.push_str(&header_path());
                    (None, 1 + name.len())
                }
                // The SOAP envelope (the document's element).
                ("env", None) => {
                    out.push_str("(/*)");
                    (None, 1 + name.len())
                }
                _ => {
                    return Err(unsupported(format!(
                        "'{text}': ${name} is not one of Synapse's variables ($body, $header, $env, $ctx:, $trp:, $axis2:, $func:, $url:)"
                    )))
                }
            };
            if let Some(var) = var {
                push_var(&mut out, &mut vars, var);
            }
            changed = true;
            rest = &rest[used..];
            prev = Some(')'); // what was written ends like a call: a name may follow
            continue;
        }
        let boundary = prev.is_none_or(|p| !is_name_char(p) && p != ':' && p != '$' && p != '@');
        // `fn:concat(...)`, `syn:get-property(...)`: Synapse's XPath engine finds functions by their
        // local name whatever the prefix (libxml2 would look for them in the prefix's namespace).
        if boundary {
            let prefix = ncname(rest);
            if let Some(after) = rest[prefix.len()..].strip_prefix(':') {
                let name = ncname(after);
                let call = after[name.len()..].trim_start().starts_with('(');
                if !prefix.is_empty()
                    && call
                    && (prefix == "fn"
                        || name == "get-property"
                        || crate::functions::is_function(name))
                {
                    rest = after;
                    changed = true;
                    continue;
                }
            }
        }
        if boundary && rest.starts_with("get-property") {
            let after = rest["get-property".len()..].trim_start();
            if let Some(args) = after.strip_prefix('(') {
                let (var, after) = get_property(args, text, registry)?;
                push_var(&mut out, &mut vars, var);
                changed = true;
                rest = after;
                prev = Some(')');
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
        prev = Some(c);
    }
    Ok(changed.then_some((out, vars)))
}

/// Adds the variable for `var` to `out`, reusing an index when the same property is read twice.
fn push_var(out: &mut String, vars: &mut Vec<Var>, var: Var) {
    let k = match vars.iter().position(|v| *v == var) {
        Some(k) => k,
        None => {
            vars.push(var);
            vars.len() - 1
        }
    };
    // In parentheses: a name character right after it (`get-property('n')-1`) must not join its name.
    out.push_str("($");
    out.push_str(VAR_PREFIX);
    out.push_str(&k.to_string());
    out.push(')');
}

/// `get-property(` arguments from just after the parenthesis: the property and what follows the call.
/// A registry key is read through `registry` now.
pub(crate) fn get_property<'t>(
    args: &'t str,
    whole: &str,
    registry: Registry<'_>,
) -> Result<(Var, &'t str), ExprError> {
    let mut parts = Vec::new();
    let mut rest = args.trim_start();
    let after = loop {
        let Some((lit, r)) = literal(rest) else {
            return Err(unsupported(format!(
                "'{whole}': get-property arguments must be string literals"
            )));
        };
        parts.push(lit);
        let r = r.trim_start();
        if let Some(r) = r.strip_prefix(',') {
            rest = r.trim_start();
            continue;
        }
        match r.strip_prefix(')') {
            Some(after) => break after,
            None => return Err(invalid(format!("'{whole}': expected ')'"))),
        }
    };
    let date = |format: Option<&str>| -> Result<Var, ExprError> {
        let f = match format {
            Some(f) => DateFormat::parse(f).map_err(|e| invalid(format!("'{whole}': {e}")))?,
            None => DateFormat::java_default(),
        };
        Ok(Var::SystemDate(f))
    };
    let read = |scope: LoadScope, key: &str| -> Result<Var, ExprError> {
        registry(scope, key)
            .map(Var::Const)
            .map_err(|why| invalid(format!("'{whole}': {why}")))
    };
    // As Synapse reads the arguments: (name), (scope, name) or (name, date format) when the first
    // is not a scope, (scope, name, date format); the format only matters to SYSTEM_DATE.
    let var = match parts.as_slice() {
        // Synapse answers these two before it looks at the scope.
        ["SYSTEM_TIME"] => Var::SystemTime,
        [scope, "SYSTEM_TIME", ..] if is_scope(scope) => Var::SystemTime,
        ["SYSTEM_DATE"] => date(None)?,
        [name] => Var::Property(PropScope::Default, (*name).to_owned()),
        [scope, "SYSTEM_DATE"] if is_scope(scope) => date(None)?,
        ["registry", key] | ["registry", key, _] => read(LoadScope::Registry, key)?,
        ["file", key] | ["file", key, _] => read(LoadScope::File, key)?,
        ["SYSTEM_DATE", format] => date(Some(format))?,
        [name, _] if !is_scope(name) => Var::Property(PropScope::Default, (*name).to_owned()),
        [scope, name] => Var::Property(scope_by_name(scope)?, (*name).to_owned()),
        [_, "SYSTEM_DATE", format] => date(Some(format))?,
        [scope, name, _] => Var::Property(scope_by_name(scope)?, (*name).to_owned()),
        _ => {
            return Err(invalid(format!(
                "'{whole}': get-property takes one to three arguments"
            )))
        }
    };
    Ok((var, after))
}

/// Node tests written like function calls and functions that read the document whatever their
/// arguments, then functions that read the context node when called without arguments.
const NODE_TESTS: &[&str] = &[
    "text",
    "node",
    "comment",
    "processing-instruction",
    "id",
    "lang",
];
const CONTEXT_FUNCTIONS: &[&str] = &[
    "string",
    "name",
    "local-name",
    "namespace-uri",
    "normalize-space",
    "string-length",
    "number",
    "last",
    "position",
];

/// Whether an XPath (already rewritten) reads no node of the message: only literals, numbers,
/// variables, operators and calls of functions on those. Conservative: anything that could be a
/// location path counts as reading.
pub(crate) fn reads_no_nodes(xpath: &str) -> bool {
    let mut rest = xpath;
    while let Some(c) = rest.chars().next() {
        if c == '\'' || c == '"' {
            match literal(rest) {
                Some((_, after)) => rest = after,
                None => return false,
            }
            continue;
        }
        if c == '$' {
            let name = ncname(&rest[1..]);
            let after = &rest[1 + name.len()..];
            rest = match after.strip_prefix(':') {
                Some(t) => &t[ncname(t).len()..],
                None => after,
            };
            continue;
        }
        if c.is_ascii_digit() {
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            rest = &rest[end..];
            continue;
        }
        if is_name_char(c) && c != '.' && c != '-' {
            let mut name = ncname(rest);
            let mut after = &rest[name.len()..];
            // A prefixed function name (`fn:concat`).
            if let Some(t) = after.strip_prefix(':') {
                let local = ncname(t);
                if !local.is_empty() {
                    name = local;
                    after = &t[local.len()..];
                }
            }
            let call = after.trim_start();
            if matches!(name, "and" | "or" | "div" | "mod") {
                rest = after;
                continue;
            }
            let Some(args) = call.strip_prefix('(') else {
                return false; // a name test
            };
            if NODE_TESTS.contains(&name)
                || (CONTEXT_FUNCTIONS.contains(&name) && args.trim_start().starts_with(')'))
            {
                return false;
            }
            rest = after;
            continue;
        }
        match c {
            '(' | ')' | ',' | '=' | '!' | '<' | '>' | '+' | '-' | ' ' | '\t' | '\n' | '\r' => {
                rest = &rest[1..];
            }
            _ => return false, // `/`, `@`, `.`, `*`, `|`, `[`, ...
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_registry(_: LoadScope, key: &str) -> Result<String, String> {
        Err(format!("no '{key}'"))
    }

    fn rewrite(t: &str) -> Result<Option<(String, Vec<Var>)>, ExprError> {
        super::rewrite(t, &no_registry)
    }

    fn rw(t: &str) -> (String, Vec<Var>) {
        rewrite(t).unwrap().unwrap()
    }

    #[test]
    fn variables_and_get_property_become_indexed_variables() {
        let (x, v) = rw("concat(get-property('a'), '-', $trp:Content-Type, $ctx:a, $url:q)");
        assert_eq!(
            x,
            "concat(($sluice.p0), '-', ($sluice.p1), ($sluice.p0), ($sluice.p2))"
        );
        assert_eq!(
            v,
            vec![
                Var::Property(PropScope::Default, "a".into()),
                Var::Property(PropScope::Transport, "Content-Type".into()),
                Var::UrlParam("q".into()),
            ]
        );
        let (x, v) = rw("fn:concat(get-property( 'transport' , \"SOAPAction\" ),'x')");
        assert_eq!(x, "concat(($sluice.p0),'x')");
        assert_eq!(
            v,
            vec![Var::Property(PropScope::Transport, "SOAPAction".into())]
        );
        let (_, v) = rw("$axis2:HTTP_SC = '200'");
        assert_eq!(v, vec![Var::Property(PropScope::Axis2, "HTTP_SC".into())]);
    }

    #[test]
    fn literals_and_other_names_are_left_alone() {
        assert_eq!(rewrite("//a[b='$ctx:x get-property(1)']").unwrap(), None);
        assert_eq!(rewrite("//my-get-property").unwrap(), None);
        assert_eq!(rewrite("//m:get-property").unwrap(), None);
        assert_eq!(rewrite("//fn:a").unwrap(), None);
        assert_eq!(rw("fn:string-length(//a)").0, "string-length(//a)");
        assert_eq!(rw("syn:get-property('a')").0, "($sluice.p0)");
        assert_eq!(rw("s:base64Encode('a')").0, "base64Encode('a')");
        assert_eq!(rewrite("m:concat('a')").unwrap(), None);
        // A name character after a call does not join the variable's name.
        assert_eq!(rw("get-property('n')-1").0, "($sluice.p0)-1");
    }

    #[test]
    fn body_and_header_become_paths() {
        let (x, v) = rw("$body/m:order");
        assert!(v.is_empty());
        assert!(x.starts_with("(/*[local-name()='Envelope'"), "{x}");
        assert!(x.ends_with(")/m:order"), "{x}");
        let (x, _) = rw("count($header/*)");
        assert!(x.contains("local-name()='Header'"), "{x}");
    }

    #[test]
    fn what_is_refused() {
        let e = rewrite("concat($foo, 'x')").unwrap_err();
        assert_eq!(e.kind, crate::ExprErrorKind::Unsupported);
        let e = rewrite("concat(get-property(//a), 'x')").unwrap_err();
        assert_eq!(e.kind, crate::ExprErrorKind::Unsupported);
        let e = rewrite("concat(get-property('a', 'b', 'c'), 'x')").unwrap_err();
        assert_eq!(e.kind, crate::ExprErrorKind::Invalid);
        let e = rewrite("concat(get-property('registry', 'conf:/a.txt'), 'x')").unwrap_err();
        assert!(e.message.contains("no 'conf:/a.txt'"), "{e}");
        assert_eq!(
            rewrite("concat($ctx:, 'x')").unwrap_err().kind,
            crate::ExprErrorKind::Invalid
        );
        for t in ["$ctx:xml/a", "count($trp:x [1])"] {
            assert_eq!(
                rewrite(t).unwrap_err().kind,
                crate::ExprErrorKind::Unsupported,
                "{t}"
            );
        }
    }

    #[test]
    fn which_expressions_read_no_nodes() {
        for t in [
            "concat($sluice.p0, '-', $sluice.p1)",
            "fn:concat('a', 'b')",
            "$sluice.p0 = 'x' and string-length($sluice.p1) > 2.5",
            "number($sluice.p0) + 1",
            "translate($sluice.p0, 'a', 'b')",
        ] {
            assert!(reads_no_nodes(t), "{t}");
        }
        for t in [
            "concat(//a, 'b')",
            "string()",
            "concat(name(), 'x')",
            "text()",
            "foo",
            "concat($sluice.p0, .)",
            "count(*)",
            "@id",
            "$sluice.p0 | /a",
            "count(id($sluice.p0))",
            "lang('en')",
        ] {
            assert!(!reads_no_nodes(t), "{t}");
        }
    }
}
