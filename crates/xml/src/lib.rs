//! sluice-xml: a thin, safe layer over libxml2 and libxslt.
//!
//! * [`parse_untrusted`]: secure parsing (no network, no external entities,
//!   no DTD loading, no XInclude, entity declarations refused, size and depth
//!   limits).
//! * [`Stylesheet`]: XSLT 1.0 through libxslt, with file and network access
//!   forbidden; compiled stylesheets are `Send + Sync`.
//! * [`XPath`]: XPath 1.0 compiled once, evaluated with per-call contexts;
//!   compiled expressions are `Send + Sync`.
//! * [`Document`] / [`Node`]: tree access, serialisation, SOAP helpers, C14N.
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
#![allow(unsafe_code)]

mod document;
mod error;
mod ffi;
mod parse;
mod xpath;
mod xslt;

pub use document::{
    canonicalize, canonicalize_with, C14nMode, Document, Node, NodeId, NodeKind, SerializeOptions,
    SoapVersion,
};
pub use error::{XmlError, XmlErrorKind};
pub use parse::{parse_untrusted, Limits};
pub use xpath::{VariableResolver, XPath, XPathValue};
pub use xslt::Stylesheet;

use std::sync::Once;

/// Process-wide one-time initialisation of libxml2 and libxslt, and of the
/// libxslt settings this crate relies on (error routing, security defaults).
/// Every public entry point calls it; calling it again is cheap.
pub(crate) fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // Runs xmlInitParser() exactly once (libxml's own Once).
        libxml::init_parser();
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
    });
}
