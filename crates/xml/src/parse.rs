//! Secure parsing of untrusted XML.

use crate::document::{Document, RawDoc};
use crate::error::{allocated, Capture, XmlError, XmlErrorKind};
use libxml::bindings::{
    endElementNsSAX2Func, entityDeclSAXFunc, startElementNsSAX2Func, unparsedEntityDeclSAXFunc,
    xmlChar, xmlCtxtReadMemory, xmlFreeParserCtxt, xmlNewParserCtxt, xmlParserCtxtPtr,
    xmlParserOption_XML_PARSE_NONET, xmlSAX2GetLineNumber, xmlStopParser,
};
use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr;

/// Limits applied by [`parse_untrusted`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Maximum input size in bytes (default 64 MiB).
    pub max_bytes: usize,
    /// Maximum element nesting depth (default 256). libxml2 independently
    /// refuses more than 256 levels (we never pass `XML_PARSE_HUGE`), so
    /// larger values behave like 256.
    pub max_depth: usize,
    /// Accept documents whose DTD declares entities (default `false`). Even
    /// when accepted, entities are never substituted and external entities
    /// and DTDs are never loaded.
    pub allow_entity_declarations: bool,
    /// Maximum attributes on one element, namespace declarations included
    /// (default [`DEFAULT_MAX_ATTRIBUTES`]). Checked by a linear scan before
    /// libxml2 sees the bytes: libxml2 2.9 checks an element's attributes for
    /// duplicates pairwise.
    pub max_attributes: usize,
    /// Maximum namespace declarations in scope at once (default
    /// [`DEFAULT_MAX_NAMESPACES`]). Checked with `max_attributes`: libxml2
    /// looks every prefixed name up through all of them.
    pub max_namespaces: usize,
}

/// [`Limits::max_attributes`] by default: what WSO2 MI allows, through Woodstox's
/// `ReaderConfig.DEFAULT_MAX_ATTRIBUTES_PER_ELEMENT = 1000`, enforced in its
/// `AttributeCollector` on attributes and namespace declarations together
/// (`mAttrCount + mNsCount`; FasterXML/woodstox, src/main/java/com/ctc/wstx/api/ReaderConfig.java
/// and src/main/java/com/ctc/wstx/sr/AttributeCollector.java). At the limit libxml2 2.9.14
/// parses a document of such elements about 4 times slower than a plain one of the same size.
pub const DEFAULT_MAX_ATTRIBUTES: usize = 1000;

/// [`Limits::max_namespaces`] by default. Woodstox has no such limit (it bounds declarations
/// per element only, within [`DEFAULT_MAX_ATTRIBUTES`]), but libxml2 pays for every declaration in
/// scope at each prefixed name: with 1,000 in scope and prefixed names using the outermost, it
/// parses about 3.5 times slower than with one. One element can declare that many anyway; real
/// documents have tens (SOAP) to a few hundred (XBRL instances). Sluice's streaming readers refuse
/// beyond it too, so the answer never depends on which reader read the message.
pub const DEFAULT_MAX_NAMESPACES: usize = 1000;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 64 * 1024 * 1024,
            max_depth: 256,
            allow_entity_declarations: false,
            max_attributes: DEFAULT_MAX_ATTRIBUTES,
            max_namespaces: DEFAULT_MAX_NAMESPACES,
        }
    }
}

/// libxml2 options for untrusted input: no network access. Deliberately
/// absent: `XML_PARSE_NOENT` (entity substitution), `XML_PARSE_DTDLOAD`,
/// `XML_PARSE_DTDATTR`, `XML_PARSE_DTDVALID`, `XML_PARSE_XINCLUDE`,
/// `XML_PARSE_HUGE` (so libxml2's built-in size/depth/amplification limits
/// stay on).
const SECURE_OPTIONS: c_int = xmlParserOption_XML_PARSE_NONET as c_int;

/// Per-parse state reached from the SAX hooks through `ctxt->_private`.
struct Guard {
    max_depth: usize,
    depth: usize,
    allow_entities: bool,
    violation: Option<XmlError>,
    start_ns: startElementNsSAX2Func,
    end_ns: endElementNsSAX2Func,
    entity_decl: entityDeclSAXFunc,
    unparsed_entity_decl: unparsedEntityDeclSAXFunc,
}

/// Returns the guard for a SAX callback's context (the parser context).
///
/// # Safety
/// `ctx` must be the parser context of a parse started by [`parse_raw`],
/// whose `_private` points to a live `Guard`.
unsafe fn guard_of<'g>(ctx: *mut c_void) -> (xmlParserCtxtPtr, &'g mut Guard) {
    let ctxt = ctx as xmlParserCtxtPtr;
    // SAFETY: per the function contract, `ctxt` is valid and `_private`
    // points to the Guard owned by `parse_raw`'s stack frame, which outlives
    // the parse; SAX callbacks run sequentially on the parsing thread.
    unsafe { (ctxt, &mut *((*ctxt)._private as *mut Guard)) }
}

/// [`guard_of`] while the parse goes on; `None` once it found a violation (the hooks then do
/// nothing more).
///
/// # Safety
/// As [`guard_of`].
unsafe fn live_guard<'g>(ctx: *mut c_void) -> Option<(xmlParserCtxtPtr, &'g mut Guard)> {
    // SAFETY: per the function contract.
    let (ctxt, guard) = unsafe { guard_of(ctx) };
    guard.violation.is_none().then_some((ctxt, guard))
}

/// For the hook of an entity declaration (of `name`): the guard, while the parse goes on and
/// such declarations are allowed. When they are not, the parse is stopped with `refusal` of the
/// name.
///
/// # Safety
/// As [`guard_of`]; `name` must be NULL or a valid NUL-terminated string.
unsafe fn declaration_guard<'g>(
    ctx: *mut c_void,
    name: *const xmlChar,
    refusal: impl FnOnce(String) -> String,
) -> Option<&'g mut Guard> {
    // SAFETY: per the function contract.
    let (ctxt, guard) = unsafe { live_guard(ctx) }?;
    if guard.allow_entities {
        return Some(guard);
    }
    // SAFETY: per the function contract.
    let name = unsafe { cstr_lossy(name) };
    stop(
        ctxt,
        guard,
        XmlError::new(XmlErrorKind::EntityDeclaration, refusal(name)),
    );
    None
}

/// Stops the parse with `error`, placed on the parser's current line.
fn stop(ctxt: xmlParserCtxtPtr, guard: &mut Guard, error: XmlError) {
    // SAFETY: `ctxt` is the live parser context of the running parse.
    let line = unsafe { xmlSAX2GetLineNumber(ctxt as *mut c_void) };
    let line = u32::try_from(line).ok().filter(|&l| l > 0);
    if guard.violation.is_none() {
        guard.violation = Some(error.at(line, None));
    }
    // SAFETY: stopping the parser from inside one of its callbacks is the
    // documented use of xmlStopParser.
    unsafe { xmlStopParser(ctxt) };
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn hook_start_element_ns(
    ctx: *mut c_void,
    localname: *const xmlChar,
    prefix: *const xmlChar,
    uri: *const xmlChar,
    nb_namespaces: c_int,
    namespaces: *mut *const xmlChar,
    nb_attributes: c_int,
    nb_defaulted: c_int,
    attributes: *mut *const xmlChar,
) {
    // SAFETY: only installed by `parse_raw`, which sets up `_private`.
    let Some((ctxt, guard)) = (unsafe { live_guard(ctx) }) else {
        return;
    };
    guard.depth += 1;
    if guard.depth > guard.max_depth {
        let error = XmlError::too_deep(guard.max_depth, None);
        stop(ctxt, guard, error);
        return;
    }
    if let Some(f) = guard.start_ns {
        // SAFETY: forwards the exact arguments libxml2 gave us to the
        // original SAX2 tree-building handler of this context.
        unsafe {
            f(
                ctx,
                localname,
                prefix,
                uri,
                nb_namespaces,
                namespaces,
                nb_attributes,
                nb_defaulted,
                attributes,
            )
        };
    }
}

unsafe extern "C" fn hook_end_element_ns(
    ctx: *mut c_void,
    localname: *const xmlChar,
    prefix: *const xmlChar,
    uri: *const xmlChar,
) {
    // SAFETY: only installed by `parse_raw`, which sets up `_private`.
    let Some((_, guard)) = (unsafe { live_guard(ctx) }) else {
        return;
    };
    guard.depth = guard.depth.saturating_sub(1);
    if let Some(f) = guard.end_ns {
        // SAFETY: forwards libxml2's arguments to the original handler.
        unsafe { f(ctx, localname, prefix, uri) };
    }
}

unsafe extern "C" fn hook_entity_decl(
    ctx: *mut c_void,
    name: *const xmlChar,
    type_: c_int,
    public_id: *const xmlChar,
    system_id: *const xmlChar,
    content: *mut xmlChar,
) {
    let refusal =
        |n: String| format!("entity declaration '{n}' refused (DTD entities are not allowed)");
    // SAFETY: only installed by `parse_raw`, which sets up `_private`; `name` is a NUL-terminated
    // string from the parser (or NULL).
    let guard = unsafe { declaration_guard(ctx, name, refusal) };
    if let Some(f) = guard.and_then(|g| g.entity_decl) {
        // SAFETY: forwards libxml2's arguments to the original handler.
        unsafe { f(ctx, name, type_, public_id, system_id, content) };
    }
}

unsafe extern "C" fn hook_unparsed_entity_decl(
    ctx: *mut c_void,
    name: *const xmlChar,
    public_id: *const xmlChar,
    system_id: *const xmlChar,
    notation_name: *const xmlChar,
) {
    let refusal = |n: String| format!("unparsed entity declaration '{n}' refused");
    // SAFETY: only installed by `parse_raw`, which sets up `_private`; `name` is a NUL-terminated
    // string from the parser (or NULL).
    let guard = unsafe { declaration_guard(ctx, name, refusal) };
    if let Some(f) = guard.and_then(|g| g.unparsed_entity_decl) {
        // SAFETY: forwards libxml2's arguments to the original handler.
        unsafe { f(ctx, name, public_id, system_id, notation_name) };
    }
}

/// # Safety
/// `s` must be NULL or a valid NUL-terminated string.
pub(crate) unsafe fn cstr_lossy(s: *const xmlChar) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: per the function contract.
    unsafe { std::ffi::CStr::from_ptr(s as *const c_char) }
        .to_string_lossy()
        .into_owned()
}

// Compile-time check that our hooks match libxml2's callback types.
const _: startElementNsSAX2Func = Some(hook_start_element_ns);
const _: endElementNsSAX2Func = Some(hook_end_element_ns);
const _: entityDeclSAXFunc = Some(hook_entity_decl);
const _: unparsedEntityDeclSAXFunc = Some(hook_unparsed_entity_decl);

struct ParserCtxt(xmlParserCtxtPtr);

impl Drop for ParserCtxt {
    fn drop(&mut self) {
        // SAFETY: the context was created by xmlNewParserCtxt and is freed
        // exactly once here; the document it produced (if any) was detached
        // by xmlCtxtReadMemory and is owned separately.
        unsafe { xmlFreeParserCtxt(self.0) };
    }
}

/// Parses untrusted bytes into a [`Document`] with the security defaults
/// described on [`Limits`]: no network, no entity substitution, no DTD
/// loading or validation, no XInclude, libxml2's built-in limits kept, and
/// our own size / depth limits and entity-declaration refusal, enforced while
/// parsing (the parse stops at the first violation, so memory stays bounded).
/// The attribute and namespace limits are checked before parsing, by a scan
/// linear in the input (see `guard.rs`).
///
/// Errors carry libxml2's message and the line (and column) it refers to.
pub fn parse_untrusted(bytes: &[u8], limits: &Limits) -> Result<Document, XmlError> {
    parse_raw(bytes, limits, None).map(RawDoc::into_document)
}

/// Like [`parse_untrusted`], recording `url` as the document's base URI.
pub(crate) fn parse_raw(
    bytes: &[u8],
    limits: &Limits,
    url: Option<&str>,
) -> Result<RawDoc, XmlError> {
    crate::init();
    if bytes.len() > limits.max_bytes {
        return Err(XmlError::new(
            XmlErrorKind::InputTooLarge,
            format!(
                "{} bytes exceeds the limit of {} bytes",
                bytes.len(),
                limits.max_bytes
            ),
        ));
    }
    let len = c_int::try_from(bytes.len())
        .map_err(|_| XmlError::new(XmlErrorKind::InputTooLarge, "input larger than 2 GiB"))?;
    crate::guard::check(bytes, limits)?;
    let url = url
        .map(CString::new)
        .transpose()
        .map_err(|_| XmlError::new(XmlErrorKind::InvalidArgument, "base URI contains NUL"))?;

    let capture = Capture::start();
    // SAFETY: plain constructor; checked for NULL below and owned by the
    // ParserCtxt guard, which frees it on every path.
    let ctxt = unsafe { xmlNewParserCtxt() };
    let ctxt = ParserCtxt(allocated(ctxt, "cannot allocate a parser context")?);

    let mut guard = Guard {
        max_depth: limits.max_depth,
        depth: 0,
        allow_entities: limits.allow_entity_declarations,
        violation: None,
        start_ns: None,
        end_ns: None,
        entity_decl: None,
        unparsed_entity_decl: None,
    };
    let guard_ptr: *mut Guard = &mut guard;

    // SAFETY: `ctxt.0` is a valid parser context whose `sax` handler block
    // it owns (set up by xmlNewParserCtxt with the SAX2 tree builders). We
    // wrap four handlers, keeping the originals in `guard`, and point
    // `_private` at `guard`, which lives on this frame until after the parse
    // returns. The input pointer/length describe `bytes`, borrowed for the
    // whole call. `_private` is cleared before the guard goes out of scope.
    let doc = unsafe {
        let sax = (*ctxt.0).sax;
        if sax.is_null() {
            return Err(XmlError::new(
                XmlErrorKind::OutOfMemory,
                "parser context has no SAX handler",
            ));
        }
        (*guard_ptr).start_ns = (*sax).startElementNs;
        (*guard_ptr).end_ns = (*sax).endElementNs;
        (*guard_ptr).entity_decl = (*sax).entityDecl;
        (*guard_ptr).unparsed_entity_decl = (*sax).unparsedEntityDecl;
        (*sax).startElementNs = Some(hook_start_element_ns);
        (*sax).endElementNs = Some(hook_end_element_ns);
        (*sax).entityDecl = Some(hook_entity_decl);
        (*sax).unparsedEntityDecl = Some(hook_unparsed_entity_decl);
        (*ctxt.0)._private = guard_ptr as *mut c_void;
        let doc = xmlCtxtReadMemory(
            ctxt.0,
            bytes.as_ptr() as *const c_char,
            len,
            url.as_ref().map_or(ptr::null(), |u| u.as_ptr()),
            ptr::null(),
            SECURE_OPTIONS,
        );
        (*ctxt.0)._private = ptr::null_mut();
        doc
    };
    drop(ctxt);
    let diags = capture.finish();
    // SAFETY: xmlCtxtReadMemory returns NULL or a new document we now own.
    let doc = unsafe { RawDoc::from_raw(doc) };

    if let Some(violation) = guard.violation.take() {
        drop(doc);
        return Err(violation.with_details(diags.iter().map(|d| d.to_string()).collect()));
    }
    match doc {
        Some(doc) => Ok(doc),
        None => {
            let mut err = XmlError::from_diagnostics(
                XmlErrorKind::Malformed,
                "document could not be parsed",
                &diags,
            );
            if err.message().contains("Excessive depth") {
                err = XmlError::new(XmlErrorKind::TooDeep, err.message().to_string())
                    .at(err.line(), err.column())
                    .with_details(err.details().to_vec());
            }
            Err(err)
        }
    }
}
