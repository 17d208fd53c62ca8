//! Finding the xslt mediator's default source, the first element child of the SOAP Body, in the
//! message bytes: the whole message is read by the strict tokenizer (so anything libxml2 would read
//! differently or reject is refused, and libxml2 decides), and the child's byte range and the
//! namespaces in scope around it are returned, so that the transformed child can be spliced between
//! the untouched bytes before and after it.

use crate::input::{Start, Tok, Tokenizer, FEW};
use std::collections::HashSet;

const SOAP11_ENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";
const SOAP12_ENV: &str = "http://www.w3.org/2003/05/soap-envelope";

/// The first element child of a SOAP 1.1 / 1.2 Body.
#[cfg(test)]
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BodyChild<'a> {
    /// Where its start tag begins.
    pub start: usize,
    /// Just after its end tag.
    pub end: usize,
    /// The bindings in scope from its ancestors, one per prefix ("" for the default), undeclarations
    /// left out.
    pub scope: Vec<(&'a str, &'a str)>,
}

/// Reads past the subtree of the element whose start was just read.
fn skip(tok: &mut Tokenizer<'_>) -> Option<()> {
    let depth = tok.depth();
    while tok.depth() >= depth {
        match tok.next_tok()? {
            Tok::Eof => return None,
            Tok::Start(_) | Tok::End | Tok::Text { .. } | Tok::Comment(_) => {}
        }
    }
    Some(())
}

/// Where the Body's first child starts, its start token, and the bindings in scope around it.
pub(crate) type Seek<'a> = (usize, Start<'a>, Vec<(&'a str, &'a str)>);

/// Reads up to the first element child of a SOAP Body: where its start tag begins, its start token
/// with the bindings in scope from its ancestors added to its own declarations (as the element copied
/// out into its own document would declare them), and those bindings.
pub(crate) fn seek_body_child<'a>(tok: &mut Tokenizer<'a>) -> Option<Seek<'a>> {
    let env = loop {
        match tok.next_tok()? {
            Tok::Comment(_) => {}
            Tok::Start(s)
                if s.local == "Envelope" && (s.uri == SOAP11_ENV || s.uri == SOAP12_ENV) =>
            {
                break s.uri;
            }
            _ => return None,
        }
    };
    // The Envelope's children, up to the Body.
    loop {
        match tok.next_tok()? {
            Tok::Text { .. } | Tok::Comment(_) => {}
            Tok::Start(s) if s.local == "Body" && s.uri == env => break,
            Tok::Start(_) => skip(tok)?,
            Tok::End | Tok::Eof => return None,
        }
    }
    // The Body's first element child.
    loop {
        match tok.next_tok()? {
            Tok::Text { .. } | Tok::Comment(_) => {}
            Tok::Start(mut s) => {
                let name = if s.prefix.is_empty() {
                    s.local
                } else {
                    s.prefix
                };
                let start = tok.offset(name)?.checked_sub(1)?;
                // The innermost binding of each prefix in scope; by hash past a few (the
                // pairwise checks would be quadratic in the declarations).
                let outer = tok.outer_scope();
                let many = outer.len() > FEW || s.decls.len() > FEW;
                let mut scope: Vec<(&str, &str)> = Vec::new();
                let mut seen: HashSet<&str> = HashSet::new();
                for &(p, u) in outer.iter().rev() {
                    let new = if many {
                        seen.insert(p)
                    } else {
                        !scope.iter().any(|(q, _)| *q == p)
                    };
                    if new {
                        scope.push((p, u));
                    }
                }
                scope.retain(|(_, u)| !u.is_empty());
                scope.reverse();
                let own: HashSet<&str> = if many {
                    s.decls.iter().map(|&(q, _)| q).collect()
                } else {
                    HashSet::new()
                };
                for &(p, u) in &scope {
                    let declared = if many {
                        own.contains(p)
                    } else {
                        s.decls.iter().any(|(q, _)| *q == p)
                    };
                    if !declared {
                        s.decls.push((p, u));
                    }
                }
                return Some((start, s, scope));
            }
            Tok::End | Tok::Eof => return None,
        }
    }
}

/// Reads the rest of the input, which must be as well-formed as the tree libxml2 would build.
pub(crate) fn finish(tok: &mut Tokenizer<'_>) -> Option<()> {
    loop {
        if let Tok::Eof = tok.next_tok()? {
            return Some(());
        }
    }
}

/// `None` when the message is not a SOAP envelope whose Body has an element child, or is anything
/// the tokenizer refuses.
#[cfg(test)]
pub(crate) fn body_child(input: &[u8]) -> Option<BodyChild<'_>> {
    let mut tok = Tokenizer::new(input, &[])?;
    let (start, _, scope) = seek_body_child(&mut tok)?;
    skip(&mut tok)?;
    let end = tok.position()?;
    finish(&mut tok)?;
    (input.get(start) == Some(&b'<')).then_some(BodyChild { start, end, scope })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(input: &str) -> Option<(&str, Vec<(&str, &str)>)> {
        body_child(input.as_bytes()).map(|c| (&input[c.start..c.end], c.scope))
    }

    #[test]
    fn finds_the_first_element_of_the_body() {
        let env = "<?xml version=\"1.0\"?>\n<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" \
                   xmlns=\"urn:d\"><s:Header><h>1</h><s:Body/></s:Header>\n<s:Body xmlns:m=\"urn:m\"> <!--c-->\
                   <m:a x=\"1\"><b/>t</m:a><m:second/></s:Body></s:Envelope>";
        let (el, scope) = child(env).unwrap();
        assert_eq!(el, "<m:a x=\"1\"><b/>t</m:a>");
        assert_eq!(
            scope,
            vec![
                ("s", "http://schemas.xmlsoap.org/soap/envelope/"),
                ("", "urn:d"),
                ("m", "urn:m")
            ]
        );
        let soap12 = "<e:Envelope xmlns:e=\"http://www.w3.org/2003/05/soap-envelope\"><e:Body><x xmlns=\"\"/></e:Body></e:Envelope>";
        assert_eq!(
            child(soap12).unwrap(),
            ("<x xmlns=\"\"/>", vec![("e", SOAP12_ENV)])
        );
    }

    #[test]
    fn an_undeclared_default_is_not_in_scope() {
        let env =
            "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns=\"urn:d\">\
                   <s:Body xmlns=\"\"><a/></s:Body></s:Envelope>";
        assert_eq!(child(env).unwrap(), ("<a/>", vec![("s", SOAP11_ENV)]));
    }

    #[test]
    fn anything_else_is_refused() {
        for input in [
            "<a/>",
            "<s:Envelope xmlns:s=\"urn:not-soap\"><s:Body><a/></s:Body></s:Envelope>",
            "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body> </s:Body></s:Envelope>",
            "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Header/></s:Envelope>",
            // Malformed or unusual after the child, or in the Header: libxml2 must see it.
            "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><a/></s:Body></s:Envelop>",
            "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><a/><b>&x;</b></s:Body></s:Envelope>",
            "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Header><?pi?></s:Header><s:Body><a/></s:Body></s:Envelope>",
            "<!DOCTYPE s:Envelope><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><a/></s:Body></s:Envelope>",
        ] {
            assert_eq!(body_child(input.as_bytes()), None, "{input}");
        }
    }
}
