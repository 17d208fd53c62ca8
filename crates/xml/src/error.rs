//! Error type and per-call capture of libxml2/libxslt diagnostics.
//!
//! libxml2 keeps its error handlers in per-thread state (threaded builds, as
//! shipped by every distribution), libxslt keeps one process-wide generic
//! handler. We install, once, a libxslt handler that forwards to a
//! *thread-local* sink, and for each operation we temporarily install our own
//! libxml2 handlers on the calling thread. A [`Capture`] guard collects the
//! diagnostics raised on this thread while it is alive, so concurrent calls on
//! other threads never see each other's messages.

use libxml::bindings::{
    __xmlGenericError, __xmlGenericErrorContext, __xmlStructuredError, __xmlStructuredErrorContext,
    xmlErrorPtr, xmlGenericErrorFunc, xmlSetGenericErrorFunc, xmlSetStructuredErrorFunc,
    xmlStructuredErrorFunc,
};
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};
use std::fmt;

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum XmlErrorKind {
    /// The input is larger than [`crate::Limits::max_bytes`].
    InputTooLarge,
    /// Elements nest deeper than [`crate::Limits::max_depth`] (or libxml2's own limit).
    TooDeep,
    /// The document declares entities (DTD `<!ENTITY ...>`), which is refused.
    EntityDeclaration,
    /// An element carries more attributes (namespace declarations included) than
    /// [`crate::Limits::max_attributes`].
    TooManyAttributes,
    /// More namespace declarations would be in scope at once than
    /// [`crate::Limits::max_namespaces`].
    TooManyNamespaces,
    /// The input is not well-formed XML (or otherwise failed to parse).
    Malformed,
    /// An XSLT stylesheet failed to compile.
    XsltCompile,
    /// An XSLT transformation failed (including refused resource access).
    XsltTransform,
    /// An XML Schema failed to compile (or tried to load another document).
    SchemaCompile,
    /// An XPath expression failed to compile.
    XPathCompile,
    /// An XPath expression failed to evaluate.
    XPathEval,
    /// Serialisation or canonicalisation failed.
    Serialize,
    /// A caller-supplied argument was unusable (e.g. contains a NUL byte, or a
    /// node that does not belong to the document).
    InvalidArgument,
    /// libxml2/libxslt could not allocate what it needed.
    OutOfMemory,
    /// XML Signature or XML Encryption failed in xmlsec1: a key that does not load, a decryption
    /// that fails, an algorithm or a reference that is not allowed, an ID on two elements.
    Security,
}

/// An error from libxml2/libxslt, carrying the library's message and, where
/// known, the line (and column) it refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlError {
    kind: XmlErrorKind,
    message: String,
    line: Option<u32>,
    column: Option<u32>,
    details: Vec<String>,
}

/// `p` from a libxml2 constructor; the OutOfMemory error `what` where it is NULL.
pub(crate) fn allocated<T>(p: *mut T, what: &str) -> Result<*mut T, XmlError> {
    if p.is_null() {
        Err(XmlError::new(XmlErrorKind::OutOfMemory, what))
    } else {
        Ok(p)
    }
}

impl XmlError {
    pub(crate) fn new(kind: XmlErrorKind, message: impl Into<String>) -> Self {
        XmlError {
            kind,
            message: message.into(),
            line: None,
            column: None,
            details: Vec::new(),
        }
    }

    pub(crate) fn at(mut self, line: Option<u32>, column: Option<u32>) -> Self {
        self.line = line;
        self.column = column;
        self
    }

    /// What Sluice's parse says of a document whose elements nest deeper than `limit`, the first
    /// too deep on `line`: for a reader that finds it out before any parse.
    pub fn too_deep(limit: usize, line: Option<u32>) -> Self {
        XmlError::new(
            XmlErrorKind::TooDeep,
            format!("element nesting deeper than the limit of {limit}"),
        )
        .at(line, None)
    }

    /// What Sluice's parse says of a document with an element of more than `limit` attributes
    /// (`count` of them seen, namespace declarations included) on `line`: for a reader that finds
    /// it out before any parse.
    pub fn too_many_attributes(count: usize, limit: usize, line: Option<u32>) -> Self {
        XmlError::new(
            XmlErrorKind::TooManyAttributes,
            format!(
                "an element with {count} attributes (namespace declarations included); \
                 the limit is {limit}"
            ),
        )
        .at(line, None)
    }

    pub(crate) fn with_details(mut self, details: Vec<String>) -> Self {
        self.details = details;
        self
    }

    /// Builds an error from captured diagnostics: the first error-level
    /// diagnostic (or the first of any level) becomes the message and
    /// position; every diagnostic is kept in [`XmlError::details`].
    pub(crate) fn from_diagnostics(
        kind: XmlErrorKind,
        fallback: &str,
        diags: &[Diagnostic],
    ) -> Self {
        let primary = diags.iter().find(|d| d.is_error).or_else(|| diags.first());
        let (message, line, column) = match primary {
            Some(d) => (d.message.clone(), d.line, d.column),
            None => (fallback.to_string(), None, None),
        };
        // libxslt reports the position in a separate "context" message
        // ("... file X line N element Y"); use it when the primary has none.
        let line = line.or_else(|| diags.iter().find_map(|d| d.line));
        XmlError {
            kind,
            message,
            line,
            column,
            details: diags.iter().map(|d| d.to_string()).collect(),
        }
    }

    /// The category of the failure.
    pub fn kind(&self) -> XmlErrorKind {
        self.kind
    }

    /// The primary message (libxml2's or libxslt's own text where there is one).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// 1-based line in the input the error refers to, when known.
    pub fn line(&self) -> Option<u32> {
        self.line
    }

    /// 1-based column in the input the error refers to, when known.
    pub fn column(&self) -> Option<u32> {
        self.column
    }

    /// Every diagnostic the library raised during the failed operation, in order.
    pub fn details(&self) -> &[String] {
        &self.details
    }
}

impl fmt::Display for XmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            XmlErrorKind::InputTooLarge => "input too large",
            XmlErrorKind::TooDeep => "document too deep",
            XmlErrorKind::EntityDeclaration => "entity declarations are not allowed",
            XmlErrorKind::TooManyAttributes => "too many attributes",
            XmlErrorKind::TooManyNamespaces => "too many namespace declarations",
            XmlErrorKind::Malformed => "malformed XML",
            XmlErrorKind::XsltCompile => "XSLT compilation failed",
            XmlErrorKind::XsltTransform => "XSLT transformation failed",
            XmlErrorKind::SchemaCompile => "XML Schema compilation failed",
            XmlErrorKind::XPathCompile => "XPath compilation failed",
            XmlErrorKind::XPathEval => "XPath evaluation failed",
            XmlErrorKind::Serialize => "serialisation failed",
            XmlErrorKind::InvalidArgument => "invalid argument",
            XmlErrorKind::OutOfMemory => "out of memory",
            XmlErrorKind::Security => "XML security failed",
        };
        write!(f, "{what}")?;
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, " at line {l}, column {c}")?,
            (Some(l), None) => write!(f, " at line {l}")?,
            _ => {}
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for XmlError {}

/// One message raised by libxml2 or libxslt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diagnostic {
    pub(crate) message: String,
    pub(crate) line: Option<u32>,
    pub(crate) column: Option<u32>,
    pub(crate) is_error: bool,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

#[derive(Default)]
struct Sink {
    diags: Vec<Diagnostic>,
    /// Text of a libxslt message not yet terminated by a newline.
    partial: String,
    active: bool,
}

/// Bounds what a single operation can accumulate, so a pathological input
/// cannot make the diagnostics themselves the memory problem.
const MAX_DIAGNOSTICS: usize = 64;

thread_local! {
    static SINK: RefCell<Sink> = RefCell::new(Sink::default());
}

fn push(diag: Diagnostic) {
    let _ = SINK.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.active && s.diags.len() < MAX_DIAGNOSTICS {
                s.diags.push(diag);
            }
        }
    });
}

/// Receives messages formatted by the C shim (libxslt's generic/transform
/// error callbacks and libxml2's generic error callback). libxslt emits a
/// message in pieces; a piece ending in a newline completes it.
pub(crate) unsafe extern "C" fn text_sink(message: *const c_char) {
    if message.is_null() {
        return;
    }
    // SAFETY: the shim passes a NUL-terminated buffer that stays valid for
    // the duration of this call; we copy it out immediately.
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
    let _ = SINK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        if !s.active {
            return;
        }
        s.partial.push_str(&text);
        while let Some(pos) = s.partial.find('\n') {
            let line: String = s.partial.drain(..=pos).collect();
            let line = line.trim();
            if !line.is_empty() && s.diags.len() < MAX_DIAGNOSTICS {
                let d = Diagnostic {
                    message: line.to_string(),
                    line: parse_xslt_line(line),
                    column: None,
                    is_error: !line.to_ascii_lowercase().contains("warning"),
                };
                s.diags.push(d);
            }
        }
    });
}

/// libxslt's context lines look like
/// `compilation error: file foo.xsl line 12 element template`.
fn parse_xslt_line(msg: &str) -> Option<u32> {
    let idx = msg.find(" line ")?;
    let digits: String = msg[idx + 6..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok().filter(|&n| n > 0)
}

/// libxml2 structured error callback (`xmlStructuredErrorFunc`).
unsafe extern "C" fn structured_sink(_user: *mut c_void, err: xmlErrorPtr) {
    if err.is_null() {
        return;
    }
    // SAFETY: libxml2 passes a pointer to a valid xmlError for the duration
    // of the callback; we only read it and copy strings out.
    let e = unsafe { &*err };
    let message = if e.message.is_null() {
        format!("libxml2 error code {}", e.code)
    } else {
        // SAFETY: `message` is a NUL-terminated string owned by the xmlError.
        unsafe { CStr::from_ptr(e.message) }
            .to_string_lossy()
            .trim_end()
            .to_string()
    };
    let line = u32::try_from(e.line).ok().filter(|&l| l > 0);
    // For parser errors int2 holds the column.
    let column = u32::try_from(e.int2).ok().filter(|&c| c > 0);
    push(Diagnostic {
        message,
        line,
        column,
        is_error: e.level >= libxml::bindings::xmlErrorLevel_XML_ERR_ERROR,
    });
}

/// Collects libxml2/libxslt diagnostics raised on the current thread while
/// alive; restores the previous handlers and sink state on drop.
pub(crate) struct Capture {
    prev_structured: xmlStructuredErrorFunc,
    prev_structured_ctx: *mut c_void,
    prev_generic: xmlGenericErrorFunc,
    prev_generic_ctx: *mut c_void,
    prev_sink: Option<Sink>,
    finished: bool,
}

impl Capture {
    pub(crate) fn start() -> Capture {
        crate::init();
        // SAFETY: these accessors return pointers to the calling thread's
        // libxml2 global state (initialised by xmlInitParser in `init`); we
        // read the current handler values and then replace them with ours.
        // Our callbacks only copy data into a thread-local buffer.
        let (prev_structured, prev_structured_ctx, prev_generic, prev_generic_ctx) = unsafe {
            let saved = (
                *__xmlStructuredError(),
                *__xmlStructuredErrorContext(),
                *__xmlGenericError(),
                *__xmlGenericErrorContext(),
            );
            xmlSetStructuredErrorFunc(std::ptr::null_mut(), Some(structured_sink));
            xmlSetGenericErrorFunc(
                std::ptr::null_mut(),
                Some(crate::ffi::sluice_xml_generic_error),
            );
            saved
        };
        let prev_sink = SINK
            .try_with(|s| {
                let mut s = s.borrow_mut();
                let prev = std::mem::take(&mut *s);
                s.active = true;
                prev
            })
            .ok();
        Capture {
            prev_structured,
            prev_structured_ctx,
            prev_generic,
            prev_generic_ctx,
            prev_sink,
            finished: false,
        }
    }

    /// Stops collecting and returns what was collected.
    pub(crate) fn finish(mut self) -> Vec<Diagnostic> {
        self.restore()
    }

    fn restore(&mut self) -> Vec<Diagnostic> {
        if self.finished {
            return Vec::new();
        }
        self.finished = true;
        // SAFETY: restores the handler values saved in `start` on the same
        // thread (Capture is !Send because of its raw pointer fields).
        unsafe {
            xmlSetStructuredErrorFunc(self.prev_structured_ctx, self.prev_structured);
            xmlSetGenericErrorFunc(self.prev_generic_ctx, self.prev_generic);
        }
        let prev = self.prev_sink.take();
        SINK.try_with(|s| {
            let mut s = s.borrow_mut();
            let mut mine = std::mem::replace(&mut *s, prev.unwrap_or_default());
            let rest = mine.partial.trim();
            if !rest.is_empty() && mine.diags.len() < MAX_DIAGNOSTICS {
                mine.diags.push(Diagnostic {
                    message: rest.to_string(),
                    line: parse_xslt_line(rest),
                    column: None,
                    is_error: true,
                });
            }
            mine.diags
        })
        .unwrap_or_default()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xslt_line_is_parsed_from_context_message() {
        assert_eq!(
            parse_xslt_line("compilation error: file a.xsl line 12 element template"),
            Some(12)
        );
        assert_eq!(parse_xslt_line("no position here"), None);
    }

    #[test]
    fn display_includes_position_and_message() {
        let e = XmlError::new(XmlErrorKind::Malformed, "boom").at(Some(3), Some(7));
        assert_eq!(e.to_string(), "malformed XML at line 3, column 7: boom");
    }
}
