//! sluice-xml: a thin, safe layer over libxml2 and libxslt.
//!
//! * [`parse_untrusted`]: secure parsing (no network, no external entities,
//!   no DTD loading, no XInclude, entity declarations refused, size and depth
//!   limits, and a linear pre-scan refusing elements with too many attributes
//!   and too many namespace declarations in scope).
//! * [`Stylesheet`]: XSLT 1.0 through libxslt, with file and network access
//!   forbidden; compiled stylesheets are `Send + Sync`.
//! * [`XPath`]: XPath 1.0 compiled once, evaluated in a context each thread keeps;
//!   compiled expressions are `Send + Sync`.
//! * [`Document`] / [`Node`]: tree access, serialisation, SOAP helpers, C14N.
//! * [`SecurityKey`] and the `Document` methods beside it: XML Signature and XML Encryption
//!   through xmlsec1, same-document references only.
//!
//! ```
//! use sluice_xml::{Document, Stylesheet, XPath};
//!
//! let doc = Document::parse(br#"<r><v>1</v><v>2</v></r>"#)?;
//! let xp = XPath::compile("//v", &[])?;
//! assert_eq!(xp.eval_string(&doc, &())?, "12"); // every node, in document order
//!
//! let xsl = Stylesheet::compile(
//!     br#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
//!           <xsl:output method="text"/>
//!           <xsl:template match="/">sum=<xsl:value-of select="sum(//v)"/></xsl:template>
//!         </xsl:stylesheet>"#,
//!     None,
//! )?;
//! assert_eq!(xsl.transform_to_bytes(&doc, &[])?, b"sum=3");
//! # Ok::<(), sluice_xml::XmlError>(())
//! ```
//!
//! # Thread-safety contract
//!
//! [`Document`] and [`Node`] wrap raw libxml2 trees and are deliberately
//! `!Send` and `!Sync`: a document is used by one thread and must not be held
//! across an `.await` in a multi-threaded runtime (serialise it to bytes
//! instead). [`Stylesheet`] and [`XPath`] are immutable after compilation and
//! may be shared freely between threads.
//!
//! ```compile_fail
//! fn needs_send<T: Send>(_: T) {}
//! let doc = sluice_xml::parse_untrusted(b"<a/>", &sluice_xml::Limits::default()).unwrap();
//! needs_send(doc); // Document is !Send
//! ```
//!
//! ```compile_fail
//! fn needs_sync<T: Sync>(_: &T) {}
//! let doc = sluice_xml::parse_untrusted(b"<a/>", &sluice_xml::Limits::default()).unwrap();
//! needs_sync(&doc); // Document is !Sync
//! ```

pub mod chars;
mod document;
mod edit;
mod error;
mod ffi;
mod guard;
pub mod names;
mod parse;
mod schema;
mod security;
pub mod testing;
mod xpath;
mod xslt;

pub use document::{
    canonicalize, canonicalize_with, C14nMode, Document, Node, NodeId, NodeKind, SerializeOptions,
    SoapVersion,
};
pub use edit::{Fragment, Placement};
pub use error::{XmlError, XmlErrorKind};
pub use parse::{parse_untrusted, Limits, DEFAULT_MAX_ATTRIBUTES, DEFAULT_MAX_NAMESPACES};
pub use schema::{Invalid, Schema};
pub use security::{certificate_issuer_serial, SecurityKey};
pub use xpath::{java_double, java_float, VariableResolver, XPath, XPathValue};
pub use xslt::Stylesheet;

use std::sync::Once;

/// Process-wide one-time initialisation of libxml2 and libxslt, and of the
/// libxslt settings this crate relies on (error routing, security defaults).
/// Every public entry point calls it; calling it again is cheap.
/// Allocation functions handed to libxml2 (see `init`).
mod mem {
    use std::os::raw::{c_char, c_void};

    pub(super) unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
        // SAFETY: plain allocation; NULL on failure, as libxml2 expects.
        unsafe { libmimalloc_sys::mi_malloc(size) }
    }

    pub(super) unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: `p` is NULL or a block from `malloc`/`realloc`/`strdup` here (libxml2 only frees and
        // reallocates what its own functions allocated).
        unsafe { libmimalloc_sys::mi_realloc(p, size) }
    }

    pub(super) unsafe extern "C" fn free(p: *mut c_void) {
        // SAFETY: as for `realloc`; NULL is allowed.
        unsafe { libmimalloc_sys::mi_free(p) }
    }

    pub(super) unsafe extern "C" fn strdup(s: *const c_char) -> *mut c_char {
        if s.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: libxml2 passes a NUL-terminated string; the copy includes the terminator and fits
        // the block just allocated.
        unsafe {
            let len = std::ffi::CStr::from_ptr(s).to_bytes_with_nul().len();
            let p = libmimalloc_sys::mi_malloc(len) as *mut c_char;
            if !p.is_null() {
                std::ptr::copy_nonoverlapping(s, p, len);
            }
            p
        }
    }
}

/// Lets mimalloc (the allocator of the sluice binary and, through `init`, of libxml2) return the
/// calling thread's free memory to the system. It does so on its own only while the thread
/// allocates: a worker that went idle after a peak would keep the peak's pages resident. Cheap
/// enough to call once a second from each event loop.
pub fn release_free_memory() {
    // SAFETY: takes no arguments and touches only the calling thread's heap and mimalloc's own
    // thread-safe arena state.
    unsafe { libmimalloc_sys::mi_collect(false) }
}

/// As [`release_free_memory`], at once: memory freed a moment ago goes back too, not only what
/// mimalloc's purge delay has let go. For after a large buffer was given up.
pub fn release_free_memory_now() {
    // SAFETY: as for `mi_collect(false)` above.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

pub(crate) fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // libxml2 and libxslt allocate through xmlMalloc & co. Routed to mimalloc (the allocator the
        // sluice binary uses) they allocate several times faster than through glibc malloc, which was
        // the largest cost in XSLT and XPath profiles (docs/benchmarks/HISTORY.md).
        // SAFETY: xmlMemSetup must run before any other libxml2 call, so no block allocated by the
        // previous functions can reach the new free function: this is the first libxml2 call of the
        // process (every entry point of this crate passes through `init`, and nothing else in Sluice
        // calls libxml2). The four functions are valid for the process lifetime and thread-safe.
        let rc = unsafe {
            libxml::bindings::xmlMemSetup(
                Some(mem::free),
                Some(mem::malloc),
                Some(mem::realloc),
                Some(mem::strdup),
            )
        };
        debug_assert_eq!(rc, 0, "xmlMemSetup");
        // Runs xmlInitParser() exactly once (libxml's own Once).
        libxml::init_parser();
        // SAFETY: builds libxml2's table of XML Schema built-in types, once, under `Once`, after
        // xmlInitParser. libxml2 2.9 builds it lazily on the first schema parse without a lock, so
        // two threads compiling schemas at once could find it half built (seen in a test run:
        // "xs:positiveInteger does not resolve to a type definition").
        unsafe { libxml::bindings::xmlSchemaInitTypes() };
        // SAFETY: called once, before any other libxslt use by this crate, on
        // a thread that has initialised libxml2. The sink and error function
        // are valid for the whole process lifetime; the globals they set are
        // written here only, under `Once`, which orders these writes before
        // any later call that passes through `init`.
        unsafe {
            ffi::xsltInit();
            ffi::sluice_xml_install_sink(error::text_sink);
            ffi::xsltSetGenericErrorFunc(std::ptr::null_mut(), Some(ffi::sluice_xml_generic_error));
        }
        xslt::install_default_security();
        // Nothing in Sluice loads external resources: no DTDs, entities, XInclude, or schema
        // imports by location. Refusing every load here also covers paths that bypass the parse
        // options (xs:import / xs:include in XML Schemas).
        // SAFETY: sets libxml2's process-wide loader once, under Once, before any parse that could
        // call it; the function is valid for the process lifetime and thread-safe.
        unsafe { libxml::bindings::xmlSetExternalEntityLoader(Some(refuse_external_load)) };
    });
}

/// The external entity loader: refuses every URL (no file, no network), but for the documents a
/// schema set being compiled on this thread names ([`schema::Schema::compile_set`]), read from
/// memory.
unsafe extern "C" fn refuse_external_load(
    url: *const std::os::raw::c_char,
    _id: *const std::os::raw::c_char,
    ctxt: libxml::bindings::xmlParserCtxtPtr,
) -> libxml::bindings::xmlParserInputPtr {
    if url.is_null() || ctxt.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: libxml2 passes a NUL-terminated URL, live for the call.
    let url = unsafe { std::ffi::CStr::from_ptr(url) };
    match schema::loadable(url.to_bytes()) {
        // SAFETY: `text` ends with a NUL byte and stays alive, unchanged, until the schema set's
        // compile returns (it is held by the thread's table `compile_set` installs and takes
        // down after `xmlSchemaParse`); the stream reads it in place and never frees it; `ctxt`
        // is the live parser context libxml2 gave us.
        Some(text) => unsafe { libxml::bindings::xmlNewStringInputStream(ctxt, text) },
        None => std::ptr::null_mut(),
    }
}
