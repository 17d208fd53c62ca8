//! XSLT 1.0 through libxslt.

use crate::document::{xml_free, Document, RawDoc};
use crate::error::{Capture, XmlError, XmlErrorKind};
use crate::ffi;
use crate::parse::{parse_raw, Limits};
use libxml::bindings::xmlChar;
use std::ffi::{c_int, c_void, CString};
use std::fmt;
use std::ptr::{self, NonNull};
use std::sync::OnceLock;

/// The process-wide "forbid everything" security preferences.
struct SecurityPrefs(NonNull<ffi::XsltSecurityPrefs>);

// SAFETY: the prefs object is fully configured inside `init` (under Once)
// before it is published, and afterwards only read by libxslt (its
// xsltCheckRead/Write functions look up the configured callbacks). It is
// never freed (process lifetime).
unsafe impl Send for SecurityPrefs {}
// SAFETY: see `Send`; all post-publication access is read-only.
unsafe impl Sync for SecurityPrefs {}

static SECURITY: OnceLock<SecurityPrefs> = OnceLock::new();

/// Creates the security preferences forbidding file read/write, directory
/// creation and network read/write, and makes them libxslt's default (which
/// also governs `xsl:include`/`xsl:import` at compile time). Called from
/// `crate::init` only.
pub(crate) fn install_default_security() {
    SECURITY.get_or_init(|| {
        // SAFETY: runs once inside `crate::init`'s Once, before any transform.
        // xsltSecurityForbid is libxslt's own "always deny" check function.
        unsafe {
            let sec = ffi::xsltNewSecurityPrefs();
            let sec = NonNull::new(sec).expect("xsltNewSecurityPrefs returned NULL");
            for option in [
                ffi::XSLT_SECPREF_READ_FILE,
                ffi::XSLT_SECPREF_WRITE_FILE,
                ffi::XSLT_SECPREF_CREATE_DIRECTORY,
                ffi::XSLT_SECPREF_READ_NETWORK,
                ffi::XSLT_SECPREF_WRITE_NETWORK,
            ] {
                let rc = ffi::xsltSetSecurityPrefs(
                    sec.as_ptr(),
                    option,
                    Some(ffi::xsltSecurityForbid as ffi::XsltSecurityCheck),
                );
                assert_eq!(rc, 0, "xsltSetSecurityPrefs failed");
            }
            ffi::xsltSetDefaultSecurityPrefs(sec.as_ptr());
            SecurityPrefs(sec)
        }
    });
}

/// A compiled XSLT 1.0 stylesheet.
///
/// `Send + Sync`: compile once and share (e.g. in an `Arc`) across threads;
/// every transformation uses its own transform context.
pub struct Stylesheet {
    style: NonNull<ffi::XsltStylesheet>,
    warnings: Vec<String>,
}

// SAFETY: libxslt documents compiled stylesheets as read-only during
// transformations: xsltNewTransformContext/xsltApplyStylesheetUser keep all
// mutable state in the per-call transform context, whose dictionary is a
// sub-dictionary of the stylesheet's (reference-counted under libxml2's
// global dict mutex, otherwise only read). The stylesheet is freed only in
// Drop, which requires exclusive ownership.
unsafe impl Send for Stylesheet {}
// SAFETY: see `Send`; concurrent transforms only read the stylesheet.
unsafe impl Sync for Stylesheet {}

impl Drop for Stylesheet {
    fn drop(&mut self) {
        // SAFETY: created by xsltParseStylesheetDoc; frees it and the
        // stylesheet document it owns, exactly once.
        unsafe { ffi::xsltFreeStylesheet(self.style.as_ptr()) };
    }
}

impl fmt::Debug for Stylesheet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stylesheet")
            .field("warnings", &self.warnings)
            .finish()
    }
}

struct TransformCtxt(NonNull<ffi::XsltTransformContext>);

impl Drop for TransformCtxt {
    fn drop(&mut self) {
        // SAFETY: created by xsltNewTransformContext, freed exactly once; the
        // security prefs it points to are process-lifetime and not freed by it.
        unsafe { ffi::xsltFreeTransformContext(self.0.as_ptr()) };
    }
}

impl Stylesheet {
    /// Parses `xslt_bytes` securely (see [`crate::parse_untrusted`]) and
    /// compiles it. `base_uri` becomes the stylesheet's base URI (only used
    /// for messages and `document('')`, since every file and network access
    /// is forbidden). Stylesheets declaring a version other than 1.0 (e.g.
    /// `version="2.0"`) run in XSLT 1.0 forwards-compatible mode.
    pub fn compile(xslt_bytes: &[u8], base_uri: Option<&str>) -> Result<Stylesheet, XmlError> {
        let doc = parse_raw(xslt_bytes, &Limits::default(), base_uri).map_err(|e| {
            XmlError::new(
                XmlErrorKind::XsltCompile,
                format!("stylesheet is not well-formed: {}", e.message()),
            )
            .at(e.line(), e.column())
            .with_details(e.details().to_vec())
        })?;
        Self::compile_raw(doc)
    }

    /// Compiles a stylesheet from an already parsed document (copied, so
    /// `doc` stays usable).
    pub fn from_document(doc: &Document) -> Result<Stylesheet, XmlError> {
        let copy = doc.duplicate()?;
        let bytes = copy.to_bytes()?;
        // Re-parse rather than hand over the copy, so the stylesheet document
        // gets its own dictionary (which libxslt adopts) and our parse limits.
        Self::compile(&bytes, None)
    }

    fn compile_raw(doc: RawDoc) -> Result<Stylesheet, XmlError> {
        let capture = Capture::start();
        // SAFETY: `doc` is a live document we own. On success libxslt takes
        // ownership of it (freed by xsltFreeStylesheet); on failure it leaves
        // it to us (libxslt 1.1.x detaches it before freeing the partial
        // stylesheet), so we release ownership only on success.
        let style = unsafe { ffi::xsltParseStylesheetDoc(doc.as_ptr()) };
        let diags = capture.finish();
        match NonNull::new(style) {
            Some(style) => {
                let _ = doc.into_raw();
                Ok(Stylesheet {
                    style,
                    warnings: diags.iter().map(|d| d.to_string()).collect(),
                })
            }
            None => {
                drop(doc);
                Err(XmlError::from_diagnostics(
                    XmlErrorKind::XsltCompile,
                    "not a valid XSLT stylesheet",
                    &diags,
                ))
            }
        }
    }

    /// Messages libxslt raised while compiling (e.g. the forwards-compatible
    /// mode notice for `version="2.0"`).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Applies the stylesheet to `doc`; `params` are top-level `xsl:param`
    /// values passed as literal strings (no XPath evaluation, no quoting
    /// needed). Returns the result tree.
    ///
    /// Note: like every libxslt transform this updates some bookkeeping in
    /// `doc` itself (document-order indexes; a DTD node is unlinked from the
    /// child list while kept as the internal subset).
    pub fn transform(&self, doc: &Document, params: &[(&str, &str)]) -> Result<Document, XmlError> {
        self.apply(doc, params).map(RawDoc::into_document)
    }

    /// Applies the stylesheet and serialises the result honouring
    /// `xsl:output` (method, encoding, declaration, indentation).
    pub fn transform_to_bytes(
        &self,
        doc: &Document,
        params: &[(&str, &str)],
    ) -> Result<Vec<u8>, XmlError> {
        let result = self.apply(doc, params)?;
        let mut out: *mut xmlChar = ptr::null_mut();
        let mut len: c_int = 0;
        let capture = Capture::start();
        // SAFETY: serialises the live result document with our stylesheet's
        // output settings into a new buffer that we copy and free.
        let rc = unsafe {
            ffi::xsltSaveResultToString(&mut out, &mut len, result.as_ptr(), self.style.as_ptr())
        };
        let diags = capture.finish();
        if rc != 0 {
            // SAFETY: `out` is NULL or ours to free.
            unsafe { xml_free(out as *mut c_void) };
            return Err(XmlError::from_diagnostics(
                XmlErrorKind::Serialize,
                "xsltSaveResultToString failed",
                &diags,
            ));
        }
        if out.is_null() || len <= 0 {
            // An empty result tree serialises to nothing.
            // SAFETY: `out` is NULL or ours to free.
            unsafe { xml_free(out as *mut c_void) };
            return Ok(Vec::new());
        }
        // SAFETY: libxslt wrote `len` bytes at `out`, which we own.
        let bytes = unsafe { std::slice::from_raw_parts(out, len as usize).to_vec() };
        // SAFETY: we own `out` and no longer use it.
        unsafe { xml_free(out as *mut c_void) };
        Ok(bytes)
    }

    fn apply(&self, doc: &Document, params: &[(&str, &str)]) -> Result<RawDoc, XmlError> {
        crate::init();
        let sec = SECURITY.get().expect("initialised by crate::init");
        let params = params
            .iter()
            .map(|(k, v)| Ok((CString::new(*k)?, CString::new(*v)?)))
            .collect::<Result<Vec<_>, std::ffi::NulError>>()
            .map_err(|_| XmlError::new(XmlErrorKind::InvalidArgument, "parameter contains NUL"))?;
        let capture = Capture::start();
        // SAFETY: the stylesheet is live and only read; `doc` is a live
        // document borrowed for the call (libxslt updates only bookkeeping in
        // it, and `Document` is !Sync so nobody else is looking). The
        // transform context is created and freed here (TransformCtxt), the
        // security prefs are process-lifetime, parameter strings outlive the
        // calls that copy them, and the result document (if any) becomes ours.
        let result = unsafe {
            let ctxt = ffi::xsltNewTransformContext(self.style.as_ptr(), doc.doc_ptr());
            let Some(ctxt) = NonNull::new(ctxt).map(TransformCtxt) else {
                return Err(XmlError::new(
                    XmlErrorKind::OutOfMemory,
                    "xsltNewTransformContext failed",
                ));
            };
            if ffi::xsltSetCtxtSecurityPrefs(sec.0.as_ptr(), ctxt.0.as_ptr()) != 0 {
                return Err(XmlError::new(
                    XmlErrorKind::XsltTransform,
                    "cannot apply security preferences",
                ));
            }
            ffi::xsltSetTransformErrorFunc(
                ctxt.0.as_ptr(),
                ptr::null_mut(),
                Some(ffi::sluice_xml_generic_error),
            );
            for (name, value) in &params {
                if ffi::xsltQuoteOneUserParam(
                    ctxt.0.as_ptr(),
                    name.as_ptr() as *const xmlChar,
                    value.as_ptr() as *const xmlChar,
                ) != 0
                {
                    drop(ctxt);
                    let diags = capture.finish();
                    return Err(XmlError::from_diagnostics(
                        XmlErrorKind::XsltTransform,
                        &format!("invalid parameter '{}'", name.to_string_lossy()),
                        &diags,
                    ));
                }
            }
            let res = ffi::xsltApplyStylesheetUser(
                self.style.as_ptr(),
                doc.doc_ptr(),
                ptr::null(),
                ptr::null(),
                ptr::null_mut(),
                ctxt.0.as_ptr(),
            );
            drop(ctxt);
            RawDoc::from_raw(res)
        };
        let diags = capture.finish();
        result.ok_or_else(|| {
            XmlError::from_diagnostics(XmlErrorKind::XsltTransform, "transformation failed", &diags)
        })
    }
}
