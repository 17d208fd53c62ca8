//! Hand-written declarations for the few libxslt functions we use, plus the C
//! error shim (`csrc/error_shim.c`). libxml2 itself is reached through
//! `libxml::bindings`.

use libxml::bindings::{xmlChar, xmlDocPtr};
use std::ffi::{c_char, c_int, c_void};

/// Opaque `xsltStylesheet`.
#[repr(C)]
pub(crate) struct XsltStylesheet {
    _opaque: [u8; 0],
}

/// Opaque `xsltTransformContext`.
#[repr(C)]
pub(crate) struct XsltTransformContext {
    _opaque: [u8; 0],
}

/// Opaque `xsltSecurityPrefs`.
#[repr(C)]
pub(crate) struct XsltSecurityPrefs {
    _opaque: [u8; 0],
}

/// `xsltSecurityOption` values (security.h).
pub(crate) const XSLT_SECPREF_READ_FILE: c_int = 1;
pub(crate) const XSLT_SECPREF_WRITE_FILE: c_int = 2;
pub(crate) const XSLT_SECPREF_CREATE_DIRECTORY: c_int = 3;
pub(crate) const XSLT_SECPREF_READ_NETWORK: c_int = 4;
pub(crate) const XSLT_SECPREF_WRITE_NETWORK: c_int = 5;

/// `xsltSecurityCheck`.
pub(crate) type XsltSecurityCheck = unsafe extern "C" fn(
    sec: *mut XsltSecurityPrefs,
    ctxt: *mut XsltTransformContext,
    value: *const c_char,
) -> c_int;

/// `xmlGenericErrorFunc` (printf-style).
pub(crate) type GenericErrorFunc = unsafe extern "C" fn(ctx: *mut c_void, msg: *const c_char, ...);

#[link(name = "xslt")]
extern "C" {
    pub(crate) fn xsltInit();

    pub(crate) fn xsltParseStylesheetDoc(doc: xmlDocPtr) -> *mut XsltStylesheet;
    pub(crate) fn xsltFreeStylesheet(style: *mut XsltStylesheet);

    pub(crate) fn xsltNewTransformContext(
        style: *mut XsltStylesheet,
        doc: xmlDocPtr,
    ) -> *mut XsltTransformContext;
    pub(crate) fn xsltFreeTransformContext(ctxt: *mut XsltTransformContext);
    pub(crate) fn xsltApplyStylesheetUser(
        style: *mut XsltStylesheet,
        doc: xmlDocPtr,
        params: *const *const c_char,
        output: *const c_char,
        profile: *mut c_void,
        user_ctxt: *mut XsltTransformContext,
    ) -> xmlDocPtr;
    pub(crate) fn xsltQuoteOneUserParam(
        ctxt: *mut XsltTransformContext,
        name: *const xmlChar,
        value: *const xmlChar,
    ) -> c_int;

    pub(crate) fn xsltSaveResultToString(
        doc_txt_ptr: *mut *mut xmlChar,
        doc_txt_len: *mut c_int,
        result: xmlDocPtr,
        style: *mut XsltStylesheet,
    ) -> c_int;

    pub(crate) fn xsltNewSecurityPrefs() -> *mut XsltSecurityPrefs;
    pub(crate) fn xsltSetSecurityPrefs(
        sec: *mut XsltSecurityPrefs,
        option: c_int,
        func: Option<XsltSecurityCheck>,
    ) -> c_int;
    pub(crate) fn xsltSetDefaultSecurityPrefs(sec: *mut XsltSecurityPrefs);
    pub(crate) fn xsltSetCtxtSecurityPrefs(
        sec: *mut XsltSecurityPrefs,
        ctxt: *mut XsltTransformContext,
    ) -> c_int;
    pub(crate) fn xsltSecurityForbid(
        sec: *mut XsltSecurityPrefs,
        ctxt: *mut XsltTransformContext,
        value: *const c_char,
    ) -> c_int;

    pub(crate) fn xsltSetGenericErrorFunc(ctx: *mut c_void, handler: Option<GenericErrorFunc>);
    pub(crate) fn xsltSetTransformErrorFunc(
        ctxt: *mut XsltTransformContext,
        ctx: *mut c_void,
        handler: Option<GenericErrorFunc>,
    );
}

extern "C" {
    /// Installs the Rust sink that receives formatted messages (once).
    pub(crate) fn sluice_xml_install_sink(sink: unsafe extern "C" fn(message: *const c_char));
    /// printf-style callback usable wherever libxml2/libxslt want an
    /// `xmlGenericErrorFunc`.
    pub(crate) fn sluice_xml_generic_error(ctx: *mut c_void, msg: *const c_char, ...);
}
