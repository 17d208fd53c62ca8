//! A streaming fast path for simple XSLT 1.0 stylesheets: the input is read as a stream of events (a memchr scanner) and
//! the output written as it goes, without building a tree, giving the bytes libxslt's
//! `xsltSaveResultToString` gives. libxslt stays the fallback for everything else.
//!
//! The streamable subset ([`StreamSheet::compile`] refuses everything else):
//!
//! * `xsl:stylesheet` / `xsl:transform` with any `version` (WSO2's say 2.0 and use 1.0 only) and
//!   namespace declarations; no other attribute (no `exclude-result-prefixes`, no extension prefixes);
//! * at most one `xsl:output` with `method="xml"`, `indent`, `omit-xml-declaration`, `encoding="UTF-8"`;
//! * an optional identity template: `match="@* | node()"` (either order) whose body is exactly
//!   `xsl:copy` around `xsl:apply-templates select="@* | node()"`; without it the built-in templates
//!   apply (text is copied, elements are walked);
//! * templates matching one QName (one per name, no `mode`, `name` or `priority`) whose bodies are
//!   trees of literal result elements (unprefixed literal attributes without `{`), literal text,
//!   `xsl:text`, `xsl:value-of select="."` or a child path `a/p:b`, and `xsl:for-each` over such a path.
//!
//! The input is refused at run time ([`Fallback`]) when it is anything libxml2 might read differently
//! or reject: a DOCTYPE, processing instructions, an encoding other than UTF-8, a byte order mark,
//! non-ASCII names, entity references other than the predefined ones, malformed or too deep input,
//! namespace URIs with characters libxml2 writes unescaped. Output that libxslt would produce with a
//! namespace fix-up we do not reproduce (prefix renaming) is also refused.
//!
//! Behaviour of libxslt 1.1.35 / libxml2 2.9.14 reproduced here (found by experiment):
//!
//! * `xsl:copy` copies an element's namespace declarations except those already in scope in the
//!   result; an element in no namespace under a namespaced one gets `xmlns=""` when a default
//!   namespace is in scope;
//! * a literal result element gets its own declarations (unless in scope), the one its name needs,
//!   and, only when it is directly in the template body, every namespace in scope on `xsl:template`
//!   (XSLT namespace excepted) that is not already in scope; `xmlns=""` on a literal element is
//!   written even when nothing needs undeclaring;
//! * without `encoding` in `xsl:output`, non-ASCII characters in attribute values are written as
//!   `&#xHEX;`; text escapes `<`, `>`, `&` and CR;
//! * the output ends with a newline, and a top-level comment followed by more gets one, unless
//!   `indent="no"` (an absent `indent` counts as "yes" here); `indent="yes"` indents elements by two
//!   spaces except inside any element that has a text child;
//! * an empty result tree serialises to nothing, not even the XML declaration;
//! * without `method`, a result whose root element is `html` (no namespace) is written as HTML (we
//!   fall back).

mod input;
mod run;
mod sheet;
mod soap;

use std::fmt;

/// The input (or its result) is outside what the fast path reproduces exactly: use libxslt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fallback;

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("outside the streaming XSLT subset")
    }
}

impl std::error::Error for Fallback {}

/// A stylesheet compiled into the streamable subset. Immutable, `Send + Sync`: compile once at load.
#[derive(Debug)]
pub struct StreamSheet {
    c: sheet::Compiled,
}

impl StreamSheet {
    /// `None` when the stylesheet is outside the streamable subset (the caller uses libxslt).
    pub fn compile(stylesheet: &[u8]) -> Option<StreamSheet> {
        sheet::compile(stylesheet).map(|c| StreamSheet { c })
    }

    /// Whether `xsl:output` asks for indentation.
    pub fn indent(&self) -> bool {
        self.c.output.indent == Some(true)
    }

    /// Whether the output of [`StreamSheet::transform`] starts with an XML declaration.
    pub fn xml_declaration(&self) -> bool {
        !self.c.output.omit_decl
    }

    /// Transforms a complete document into `out` (appended): the bytes libxslt's
    /// `xsltSaveResultToString` gives, `xsl:output` honoured. On `Err`, `out` is left as it was.
    pub fn transform(&self, input: &[u8], out: &mut Vec<u8>) -> Result<(), Fallback> {
        run::run(&self.c, input, &[], false, out).ok_or(Fallback)
    }

    /// Transforms one element taken out of a larger document: `input` is the element's source bytes,
    /// `inherited` the namespace bindings (prefix, "" for the default; URI) in scope from its
    /// ancestors, as the element copied out into its own document would declare them on its root.
    /// The output is the result tree as it would be spliced back: no XML declaration, no indentation,
    /// no trailing newline.
    pub fn transform_fragment(
        &self,
        input: &[u8],
        inherited: &[(&str, &str)],
        out: &mut Vec<u8>,
    ) -> Result<(), Fallback> {
        run::run(&self.c, input, inherited, true, out).ok_or(Fallback)
    }

    /// The xslt mediator's default: transforms the first element child of a SOAP Body (with the
    /// namespaces in scope there) and writes the whole message to `out` with the result in its place;
    /// the bytes around it are copied as they are. `Err` (and `out` as it was) when the message is not
    /// such an envelope or anything in it is outside what the fast path reads.
    pub fn transform_soap_body_child(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), Fallback> {
        run::run_body_child(&self.c, input, out).ok_or(Fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn sheet_is_send_sync() {
        assert_send_sync::<StreamSheet>();
    }
}
