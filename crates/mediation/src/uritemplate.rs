//! URI templates (RFC 6570, level 3) for Synapse's `<http uri-template="...">` endpoints: compiled at
//! load, expanded per message from the `uri.var.*` and `query.param.*` properties.
//!
//! Literal text that a URI cannot hold (spaces, non-ASCII) is percent-encoded, as the RFC says.
//! Level 3 is every operator (`+ # . / ; ? &`) with lists of variables; the level 4 modifiers
//! (`{var:3}`, `{list*}`) are refused at load. An undefined variable expands to nothing, as the RFC
//! says (Synapse leaves the whole template unexpanded when no variable at all is set, which gives a
//! URL with braces in it).

use std::fmt::Write;

#[derive(Clone, Debug, PartialEq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Literal(String),
    Expr { op: Op, vars: Vec<String> },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    Param,
    Query,
    Continuation,
}

impl Op {
    fn from(c: char) -> Option<Op> {
        Some(match c {
            '+' => Op::Reserved,
            '#' => Op::Fragment,
            '.' => Op::Label,
            '/' => Op::Path,
            ';' => Op::Param,
            '?' => Op::Query,
            '&' => Op::Continuation,
            _ => return None,
        })
    }

    /// What comes before the first value, between values, whether values are named, what follows a
    /// name whose value is empty, and whether reserved characters pass unencoded.
    fn rules(self) -> (&'static str, &'static str, bool, &'static str, bool) {
        match self {
            Op::Simple => ("", ",", false, "", false),
            Op::Reserved => ("", ",", false, "", true),
            Op::Fragment => ("#", ",", false, "", true),
            Op::Label => (".", ".", false, "", false),
            Op::Path => ("/", "/", false, "", false),
            Op::Param => (";", ";", true, "", false),
            Op::Query => ("?", "&", true, "=", false),
            Op::Continuation => ("&", "&", true, "=", false),
        }
    }
}

impl UriTemplate {
    /// Compiles a template; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                Some(i) if rest.as_bytes()[i] == b'}' => {
                    return Err(format!("'}}' without '{{' in '{text}'"));
                }
                Some(i) => {
                    if i > 0 {
                        parts.push(literal(&rest[..i]));
                    }
                    let close = rest[i..]
                        .find('}')
                        .ok_or_else(|| format!("'{{' without '}}' in '{text}'"))?;
                    parts.push(expression(&rest[i + 1..i + close], text)?);
                    rest = &rest[i + close + 1..];
                }
                None => {
                    parts.push(literal(rest));
                    rest = "";
                }
            }
        }
        Ok(UriTemplate { parts })
    }

    /// The template with `value` giving each variable's value (None: undefined).
    pub fn expand<'a>(&self, value: impl Fn(&str) -> Option<&'a str>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(s) => out.push_str(s),
                Part::Expr { op, vars } => {
                    let (first, sep, named, if_empty, reserved) = op.rules();
                    let mut any = false;
                    for name in vars {
                        let Some(v) = value(name) else { continue };
                        out.push_str(if any { sep } else { first });
                        any = true;
                        if named {
                            out.push_str(name);
                            if v.is_empty() {
                                out.push_str(if_empty);
                                continue;
                            }
                            out.push('=');
                        }
                        encode(v, reserved, &mut out);
                    }
                }
            }
        }
        out
    }

    /// The text before its first expression.
    pub fn literal_head(&self) -> &str {
        match self.parts.first() {
            Some(Part::Literal(s)) => s,
            _ => "",
        }
    }

    /// The names of its variables.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts
            .iter()
            .flat_map(|p| match p {
                Part::Expr { vars, .. } => vars.as_slice(),
                Part::Literal(_) => &[],
            })
            .map(String::as_str)
    }
}

/// Literal text as RFC 6570 copies it: characters allowed in a URI as they are, others (spaces,
/// non-ASCII, `<`, ...) percent-encoded.
fn literal(text: &str) -> Part {
    let mut out = String::with_capacity(text.len());
    encode(text, true, &mut out);
    Part::Literal(out)
}

fn expression(body: &str, text: &str) -> Result<Part, String> {
    let mut chars = body.chars();
    let (op, list) = match chars.next().and_then(Op::from) {
        Some(op) => (op, chars.as_str()),
        None => (Op::Simple, body),
    };
    let mut vars = Vec::new();
    for name in list.split(',') {
        if name.ends_with('*') || name.contains(':') {
            return Err(format!(
                "'{{{body}}}' in '{text}': prefix and explode modifiers are not supported"
            ));
        }
        let ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'%'));
        if !ok {
            return Err(format!(
                "'{{{body}}}' in '{text}' is not a template expression"
            ));
        }
        vars.push(name.to_owned());
    }
    Ok(Part::Expr { op, vars })
}

/// Appends `v` percent-encoded: all but unreserved characters, or, with `reserved`, all but
/// unreserved and reserved ones and `%XX` triplets already there.
fn encode(v: &str, reserved: bool, out: &mut String) {
    let b = v.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let keep = c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'.' | b'_' | b'~')
            || (reserved && b":/?#[]@!$&'()*+,;=".contains(&c))
            || (reserved
                && c == b'%'
                && b.len() > i + 2
                && b[i + 1].is_ascii_hexdigit()
                && b[i + 2].is_ascii_hexdigit());
        if keep {
            out.push(char::from(c));
        } else {
            let _ = write!(out, "%{c:02X}");
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_expr::testing::mutation_rounds;

    /// RFC 6570's level 1 to 3 examples (section 1.2).
    #[test]
    fn expands_like_the_rfc_examples() {
        let vars = |n: &str| match n {
            "var" => Some("value"),
            "hello" => Some("Hello World!"),
            "path" => Some("/foo/bar"),
            "empty" => Some(""),
            "x" => Some("1024"),
            "y" => Some("768"),
            _ => None,
        };
        let cases = [
            ("{var}", "value"),
            ("{hello}", "Hello%20World%21"),
            ("{+var}", "value"),
            ("{+hello}", "Hello%20World!"),
            ("{+path}/here", "/foo/bar/here"),
            ("here?ref={+path}", "here?ref=/foo/bar"),
            ("map?{x,y}", "map?1024,768"),
            ("{x,hello,y}", "1024,Hello%20World%21,768"),
            ("{+x,hello,y}", "1024,Hello%20World!,768"),
            ("{+path,x}/here", "/foo/bar,1024/here"),
            ("{#x,hello,y}", "#1024,Hello%20World!,768"),
            ("{#path,x}/here", "#/foo/bar,1024/here"),
            ("X{.var}", "X.value"),
            ("X{.x,y}", "X.1024.768"),
            ("{/var}", "/value"),
            ("{/var,x}/here", "/value/1024/here"),
            ("{;x,y}", ";x=1024;y=768"),
            ("{;x,y,empty}", ";x=1024;y=768;empty"),
            ("{?x,y}", "?x=1024&y=768"),
            ("{?x,y,empty}", "?x=1024&y=768&empty="),
            ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
            ("{&x,y,empty}", "&x=1024&y=768&empty="),
            ("{undef}", ""),
            ("a{?undef,x}", "a?x=1024"),
        ];
        for (t, want) in cases {
            assert_eq!(UriTemplate::parse(t).unwrap().expand(vars), want, "{t}");
        }
    }

    #[test]
    fn synapse_variables_and_refusals() {
        let t = UriTemplate::parse("http://h:9000/orders/{uri.var.id}{?query.param.q}").unwrap();
        assert_eq!(
            t.variables().collect::<Vec<_>>(),
            ["uri.var.id", "query.param.q"]
        );
        let v = |n: &str| match n {
            "uri.var.id" => Some("a b/c"),
            "query.param.q" => Some("x&y"),
            _ => None,
        };
        assert_eq!(
            t.expand(v),
            "http://h:9000/orders/a%20b%2Fc?query.param.q=x%26y"
        );
        for bad in ["a{b", "a}b", "{}", "{x:3}", "{list*}", "{a b}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
        // Non-ASCII values are encoded as UTF-8, and so are literals a URI cannot hold.
        let t = UriTemplate::parse("/{v}").unwrap();
        assert_eq!(t.expand(|_| Some("é")), "/%C3%A9");
        let t = UriTemplate::parse("http://h/a b/é/%41/<x>?k=v&w").unwrap();
        assert_eq!(
            t.expand(|_| None),
            "http://h/a%20b/%C3%A9/%41/%3Cx%3E?k=v&w"
        );
    }

    /// Deterministic mutation fuzzing of the template compiler: templates with every operator, with
    /// characters replaced, deleted, inserted (braces, operators, modifiers, `%`, white space,
    /// multi-byte ones), spans duplicated and tails cut must compile or be refused, never panic. A
    /// compiled one expands without panicking to a URI: only unreserved and reserved characters and
    /// `%`, its literal head first, whatever the values (none, empty, plain, or full of characters
    /// to encode and `%` at the very end).
    #[test]
    fn mutated_templates_never_panic() {
        let seeds = [
            "http://h:9000/orders/{uri.var.id}{?query.param.q}",
            "http://h/{+path}/here{#frag}",
            "/items{/id,x}{;p,q}{.ext}",
            "/map?fixed=yes{&x,y,empty}",
            "{var}{+hello}{#x,hello,y}",
            "http://h/a b/é/%41/<x>?k=v&w",
            "/s/{uri.var.a}/t/{uri.var.b}?z={query.param.z}",
        ];
        let specials = "{}+#./;?&*:,%=_ x9é\u{1F600}";
        let (compiled, rounds) = mutation_rounds(&seeds, specials, 0x6a09_e667_f3bc_c908, |text| {
            let Ok(t) = UriTemplate::parse(text) else {
                return false;
            };
            for kind in 0..4 {
                let url = t.expand(|name| match kind {
                    0 => None,
                    1 => Some(""),
                    2 => (name.len() % 2 == 0).then_some("value"),
                    _ => Some("a b/c?d#e&f=g;h,é%4%zz%41\u{0}{}<>\"\\%"),
                });
                assert!(url.starts_with(t.literal_head()), "{text}: {url}");
                assert!(
                    url.bytes()
                        .all(|b| b.is_ascii_alphanumeric()
                            || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b)),
                    "{text}: {url}"
                );
            }
            true
        });
        assert!(compiled * 5 > rounds, "{compiled} of {rounds} compiled");
    }
}
