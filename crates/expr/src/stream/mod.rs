//! The streaming XPath reader: answers the XPath forms content-based routing uses most straight
//! from the message's bytes, without a libxml2 tree. It stops as soon as the answer is known.
//!
//! # What it answers
//!
//! [`StreamPath::compile`] accepts a small subset ([`compile`] has the details):
//!
//! - child paths, with an optional leading `//`: `/a/p:b[2]/c`, `//c[1]/d`;
//! - the predicates `[n]`, `[child='x']` and `[@a='x']`;
//! - `text()` and `@a` as the last step;
//! - around such a path: comparisons with a literal, `boolean`, `not`, `count`, `string` and
//!   `normalize-space`.
//!
//! Other expressions go to libxml2 on a parsed tree. So does any message the reader cannot decide
//! for certain (the answer is then `None`): a DOCTYPE, a processing instruction, an encoding other
//! than UTF-8, a document malformed or too deep before the answer, an element with more attributes
//! than Sluice's parse accepts, or more namespace declarations in scope (1,000 each:
//! `sluice_xml::Limits`). Up to those limits, reading stays linear in attributes and declarations.
//!
//! Otherwise the answer is exactly what [`crate::Expr::eval_string`] and
//! [`crate::Expr::eval_bool`] give through libxml2. Two exceptions are deliberate:
//!
//! - Content after the answer is not read, so a fault there goes unseen. Likewise, the insides of
//!   siblings read by name ([`needle`]) are not checked, their UTF-8 included.
//! - Under a SOAP `Envelope` there is one `Header` and then one `Body`, as Synapse's SOAP builder
//!   requires. So `/soapenv:Envelope/soapenv:Header/...` is answered when the `Body` starts, and
//!   `/soapenv:Envelope/soapenv:Body/...` when the `Body` ends.
//!
//! # Two tokenizers and a referee
//!
//! - The fast reader ([`fast`]): a memchr-based tokenizer written for what routing sees. Elements,
//!   attributes, text with the predefined and character references, comments, CDATA sections and
//!   an XML declaration.
//! - The general reader ([`run`]): quick-xml's tokenizer, for anything the fast one is not sure of.
//!   The fast reader hands the document over (`Halt::Bail`) and the general one starts again.
//! - libxml2, for anything neither can decide (`Halt::Refuse`, or `None` from the general reader).
//!   A document that ends inside a tag, an end tag, a comment or a CDATA section is undecided
//!   at once (the transport's head probe tries starts of bodies cut anywhere).
//!
//! Both tokenizers drive one reading state ([`run::Run`]) and check bytes with the same strict
//! pieces ([`scan`]). Differential tests hold both to the same answers, and both to libxml2's. The
//! fuzz target `xpath_stream`
//! reads any bytes: it never panics, and a reading from a memo answers as one without.
//!
//! # Reading less
//!
//! The reader's cost is mostly the bytes it must look at. Three ways let it look at fewer, each
//! keeping libxml2's answer on a well-formed document:
//!
//! - inert elements, which no step can match, read in bulk ([`bulk`]);
//! - later siblings named as the first step of a `//` path, found by a search for that name
//!   ([`needle`]);
//! - the memo of the envelope: the reader's state after a beginning that messages from one client
//!   share ([`memo`]).
//!
//! # The files
//!
//! | File | What it holds |
//! |---|---|
//! | `compile` | the subset: tokens, steps, predicates, [`StreamPath::compile`] |
//! | `scan` | strict scanning: byte classes, words, names, text ends, references, end-of-line handling, attributes, namespace bindings |
//! | `attr_run` | a long run of attributes read from AVX2 bitmasks, 64 bytes at a time |
//! | `tag_run` | the attributes of an inert span's tags, from the same masks, one window for several tags |
//! | `fast` | the fast reader: a loop with one handler per token, the UTF-8 window, the names seen |
//! | `run` | the reading state both tokenizers drive, and the general reader on quick-xml |
//! | `bulk` | inert spans and sibling patterns |
//! | `needle` | siblings read by name, with AVX2 or AVX-512 where the CPU has them |
//! | `memo` | the memo of the envelope, and how a reading makes it |
//! | `kept` | what a thread keeps between readings |
//! | `tests` | the tests, by topic |

mod attr_run;
mod bulk;
mod compile;
mod fast;
mod kept;
mod memo;
mod needle;
mod run;
mod scan;
mod tag_run;
#[cfg(test)]
mod tests;

/// The comparison operators, shared with `${...}` expressions.
pub(crate) use compile::Cmp;
use compile::{Form, Path};
use needle::NameFinder;

/// libxml2's nesting limit as Sluice parses (`sluice_xml::Limits::default().max_depth`).
const MAX_DEPTH: usize = 256;

/// The most nodes one streaming evaluation keeps as selected (each costs about 60 bytes, and an
/// element can be as short as `<a/>`): past it the evaluation gives up and the general reader,
/// whose tree counts against the process's memory budget, answers.
const MAX_RESULTS: usize = 1 << 18;

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
/// [`PrefixIndex`](sluice_xml::names::PrefixIndex).
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
    ///
    /// [`Memo`]: memo::Memo
    id: u64,
}

impl StreamPath {
    /// [`Path::decisive_names`](compile::Path::decisive_names).
    pub(crate) fn decisive_names(&self, out: &mut Vec<String>) -> bool {
        self.path.decisive_names(out)
    }

    /// The string value as [`crate::Expr::eval_string`] gives it, or `None` when libxml2 must decide.
    pub fn eval_string(&self, xml: &[u8]) -> Option<String> {
        self.eval_string_checked(xml).ok().flatten()
    }

    /// The boolean value as [`crate::Expr::eval_bool`] gives it, or `None` when libxml2 must decide.
    pub fn eval_bool(&self, xml: &[u8]) -> Option<bool> {
        self.eval_bool_checked(xml).ok().flatten()
    }

    /// [`StreamPath::eval_string`], or the error Sluice's parse gives a document it is sure to
    /// refuse ([`Refused`]).
    pub fn eval_string_checked(&self, xml: &[u8]) -> Result<Option<String>, sluice_xml::XmlError> {
        Ok(self
            .run_checked(xml, Mode::String, false)?
            .map(|out| match out {
                Out::Str(s) => s,
                Out::Bool(b) => if b { "true" } else { "false" }.to_owned(),
            }))
    }

    /// [`StreamPath::eval_bool`], or the error Sluice's parse gives a document it is sure to
    /// refuse ([`Refused`]).
    pub fn eval_bool_checked(&self, xml: &[u8]) -> Result<Option<bool>, sluice_xml::XmlError> {
        Ok(self
            .run_checked(xml, Mode::Bool, false)?
            .map(|out| match out {
                Out::Bool(b) => b,
                Out::Str(s) => !s.is_empty(),
            }))
    }

    /// Evaluates; `exhaustive` reads the whole document even when the answer is known (tests use it to
    /// check that stopping early never changes an answer).
    #[cfg(test)]
    fn run(&self, xml: &[u8], mode: Mode, exhaustive: bool) -> Option<Out> {
        self.run_checked(xml, mode, exhaustive).ok().flatten()
    }

    /// The answer, `None` when libxml2 must decide, or the error of a document Sluice's parse is
    /// sure to refuse.
    fn run_checked(
        &self,
        xml: &[u8],
        mode: Mode,
        exhaustive: bool,
    ) -> Result<Option<Out>, sluice_xml::XmlError> {
        if xml.len() > MAX_BYTES {
            return Ok(None);
        }
        match self.run_fast(xml, mode, exhaustive) {
            Ok(out) => Ok(Some(out)),
            Err(Halt::Refuse) => Ok(None),
            Err(Halt::Bail) => Ok(self.run_slow(xml, mode, exhaustive)),
            Err(Halt::Refused(r)) => Err(r.error(xml)),
        }
    }
}

/// Why the fast reader stopped without an answer.
enum Halt {
    /// The answer is `None`: libxml2 must decide (the general reader would say the same).
    Refuse,
    /// Outside what the fast reader handles: read again with the general reader.
    Bail,
    /// Sluice's parse refuses the document whatever else it holds.
    Refused(Refused),
}

/// What makes Sluice's parse refuse a document, found by the fast reader with everything before it
/// read: the caller answers with the parse's own error instead of handing libxml2 a document it
/// will refuse (which costs more than reading up to here: up to 10x on a 10 KiB message). Where
/// content the reader skips unchecked ([`needle`]) holds an earlier fault, the parse would name that
/// one: the message is refused either way.
#[derive(Clone, Copy, Debug)]
enum Refused {
    /// An element deeper than [`MAX_DEPTH`]; its start tag ends at `at`.
    Deep { at: usize },
    /// An element with more than [`MAX_ATTRS`] attributes (`count` read), from `at`.
    Attributes { at: usize, count: usize },
}

impl Refused {
    /// The error Sluice's parse gives (`sluice_xml::parse_untrusted`), with its line.
    fn error(self, xml: &[u8]) -> sluice_xml::XmlError {
        let line = |at: usize| {
            let lines = memchr::memchr_iter(b'\n', &xml[..at.min(xml.len())]).count();
            u32::try_from(lines + 1).ok()
        };
        match self {
            Refused::Deep { at } => sluice_xml::XmlError::too_deep(MAX_DEPTH, line(at)),
            Refused::Attributes { at, count } => {
                sluice_xml::XmlError::too_many_attributes(count, MAX_ATTRS, line(at))
            }
        }
    }
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
