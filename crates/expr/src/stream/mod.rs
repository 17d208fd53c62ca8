//! Streaming evaluation of the XPath forms content-based routing uses most, straight over the message
//! bytes (quick-xml), without building a libxml2 tree.
//!
//! [`StreamPath::compile`] accepts a small subset and refuses everything else (those expressions keep
//! using libxml2):
//!
//! * location paths `/a/p:b[2]/c` or `//c[1]/d`: child steps (a leading `//` only), name tests `QName` or
//!   `*`, predicates `[n]`, `[child='lit']` and `[@attr='lit']`, and a final `text()` or `@attr` step;
//! * around a path: `path = 'lit'`, `'lit' = path`, `path != 'lit'`, `boolean(path)`, `not(path)`,
//!   `count(path)` (alone or compared with a number), `string(path)`, `normalize-space(path)`.
//!
//! Evaluation gives exactly what [`crate::Expr::eval_string`] / [`crate::Expr::eval_bool`] give through
//! libxml2, or `None` ("use libxml2") whenever that is not certain: a DOCTYPE, a processing instruction, an
//! encoding other than UTF-8, anything malformed or deeper than libxml2's limit before the answer is known,
//! and an element with more attributes, or more namespace declarations in scope, than Sluice's parse
//! accepts (1,000 each: `sluice_xml::Limits`). Reading stays linear in the attributes and declarations
//! up to there: repeats are found by sorting past a few attributes, prefixes through a
//! [`PrefixIndex`] past a few bindings.
//! Reading stops as soon as the answer is decided, so malformed content *after* that point is not seen
//! (the libxml2 path would fault on it). Likewise, under a `//` path, the later siblings named as its
//! first step (every `order` after the first under `//order[1]/symbol`) are found by searching for
//! that name ([`StreamPath::needle_run`], with AVX2 where the CPU has it, through `pulp`): what is
//! inside them cannot change the answer for a well-formed document, and is not checked (nor is its
//! UTF-8, unless it falls in the window checked ahead of the reading). A thread keeps, per compiled
//! path, a [`Memo`] of the fast reader's state just after the first start tag that selects
//! something, with the bytes before that place: a document that begins with those bytes (the next
//! message from the same client, usually) is read from there. One
//! deliberate SOAP assumption: under a SOAP `Envelope` there is one `Header` and one `Body`, the
//! `Header` first, so `/soapenv:Envelope/soapenv:Header/...` is answered
//! when the `Body` starts and `/soapenv:Envelope/soapenv:Body/...` when the `Body` ends (Synapse's SOAP
//! builder does not accept other envelopes either).

mod bulk;
mod compile;
mod fast;
mod kept;
mod memo;
mod needle;
mod run;
mod scan;
#[cfg(test)]
mod tests;

use compile::{Form, Path};
use needle::NameFinder;

/// libxml2's nesting limit as Sluice parses (`sluice_xml::Limits::default().max_depth`).
const MAX_DEPTH: usize = 256;

/// How deep [`StreamPath::inert_span`] follows elements inside an inert child: as deep as a document
/// may go, so that a deep inert subtree is read in one span rather than a level at a time.
const INERT_STACK: usize = MAX_DEPTH;

/// `sluice_xml::Limits::default().max_bytes`.
const MAX_BYTES: usize = 64 * 1024 * 1024;

/// An element with more attributes (namespace declarations included) is left to libxml2
/// (`Halt::Refuse`), where Sluice's parse refuses it (`sluice_xml::Limits::max_attributes`).
const MAX_ATTRS: usize = sluice_xml::DEFAULT_MAX_ATTRIBUTES;

/// More namespace declarations in scope at once are left to libxml2, as [`MAX_ATTRS`] more
/// attributes (`sluice_xml::Limits::max_namespaces`).
const MAX_BINDINGS: usize = sluice_xml::DEFAULT_MAX_NAMESPACES;

/// Up to this many attributes on an element are checked for repeats pair by pair (the usual none to
/// three, where that is cheapest); more, by sorting.
const FEW_ATTRS: usize = 16;

/// Up to this many namespace bindings in scope are searched from the innermost; more, through a
/// [`PrefixIndex`].
const FEW_BINDINGS: usize = 16;

/// A compiled expression of the streaming subset.
#[derive(Debug)]
pub struct StreamPath {
    path: Path,
    form: Form,
    /// The first step's local name, for [`StreamPath::needle_run`]: set for `//` paths whose first
    /// step tests a name.
    needle: Option<NameFinder>,
    /// This compilation's own number (never reused in the process): the key of its [`Memo`]s.
    id: u64,
}

impl StreamPath {
    /// The string value as [`crate::Expr::eval_string`] gives it, or `None` when libxml2 must decide.
    pub fn eval_string(&self, xml: &[u8]) -> Option<String> {
        match self.run(xml, Mode::String, false)? {
            Out::Str(s) => Some(s),
            Out::Bool(b) => Some(if b { "true" } else { "false" }.to_owned()),
        }
    }

    /// The boolean value as [`crate::Expr::eval_bool`] gives it, or `None` when libxml2 must decide.
    pub fn eval_bool(&self, xml: &[u8]) -> Option<bool> {
        match self.run(xml, Mode::Bool, false)? {
            Out::Bool(b) => Some(b),
            Out::Str(s) => Some(!s.is_empty()),
        }
    }

    /// Evaluates; `exhaustive` reads the whole document even when the answer is known (tests use it to
    /// check that stopping early never changes an answer).
    fn run(&self, xml: &[u8], mode: Mode, exhaustive: bool) -> Option<Out> {
        if xml.len() > MAX_BYTES {
            return None;
        }
        match self.run_fast(xml, mode, exhaustive) {
            Ok(out) => Some(out),
            Err(Halt::Refuse) => None,
            Err(Halt::Bail) => self.run_slow(xml, mode, exhaustive),
        }
    }
}

/// Why the fast reader stopped without an answer.
enum Halt {
    /// The answer is `None`: libxml2 must decide (the general reader would say the same).
    Refuse,
    /// Outside what the fast reader handles: read again with the general reader.
    Bail,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    String,
    Bool,
}

enum Out {
    Str(String),
    Bool(bool),
}
