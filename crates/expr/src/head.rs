//! What can decide an expression that reads only a message's start ([`HeadNames`]), for the
//! transport's head probe.
//!
//! The transport reads a body that only SOAP-header expressions read frame by frame, and tries
//! them on what has arrived each time it has doubled (`sluice_transport::engine::HeadProbe`). Each
//! try reads the start again from its beginning. A streaming path is decided only at a start or
//! end tag of an element it names (a step, a child predicate), or at a SOAP envelope's `Header` or
//! `Body`. So past its first kilobyte the probe tries again only when one of those names has
//! arrived since the last try: a header of many other elements, sent in small pieces, is read
//! once more at its end instead of at every doubling.

use memchr::memmem::Finder;

use crate::Expr;

/// The local names whose tags can decide some expressions on a message's start, searched for in
/// the bytes that arrive.
#[derive(Debug)]
pub struct HeadNames {
    finders: Vec<Finder<'static>>,
    longest: usize,
}

impl HeadNames {
    /// The names of `exprs`, or `None` when one of them may be decided by any element (a `*`
    /// step), so that every doubling must be tried.
    pub fn of<'a>(exprs: impl IntoIterator<Item = &'a Expr>) -> Option<HeadNames> {
        let mut names = Vec::new();
        for e in exprs {
            if !e.head_names(&mut names) {
                return None;
            }
        }
        Some(HeadNames::new(names))
    }

    /// The names gathered by [`Expr::head_names`].
    pub fn new(mut names: Vec<String>) -> HeadNames {
        names.sort_unstable();
        names.dedup();
        HeadNames {
            longest: names.iter().map(String::len).max().unwrap_or(0),
            finders: names
                .iter()
                .map(|n| Finder::new(n.as_bytes()).into_owned())
                .collect(),
        }
    }

    /// Whether `bytes` hold one of the names.
    pub fn any_in(&self, bytes: &[u8]) -> bool {
        self.finders.iter().any(|f| f.find(bytes).is_some())
    }

    /// The longest name's length: bytes searched again before new ones, for a name that arrived
    /// in two pieces.
    pub fn longest(&self) -> usize {
        self.longest
    }
}

impl Expr {
    /// Adds to `out` the local names whose tags can decide this expression on a message's start
    /// (see [`HeadNames`]): none for one that reads no body or that a start never decides. False
    /// when any element's tag may decide it.
    pub fn head_names(&self, out: &mut Vec<String>) -> bool {
        match self {
            Expr::XPath(x) if !x.no_nodes => match &x.stream {
                Some(s) => s.decisive_names(out),
                None => true,
            },
            _ => true,
        }
    }
}
