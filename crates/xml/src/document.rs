//! Documents, nodes, serialisation, SOAP helpers and C14N.

use crate::error::{allocated, Capture, XmlError, XmlErrorKind};
use libxml::bindings::{
    xmlAddNextSibling, xmlBufferContent, xmlBufferCreate, xmlBufferFree, xmlBufferLength,
    xmlBufferPtr, xmlC14NDocDumpMemory, xmlC14NMode_XML_C14N_1_0, xmlC14NMode_XML_C14N_1_1,
    xmlC14NMode_XML_C14N_EXCLUSIVE_1_0, xmlChar, xmlCopyDoc, xmlDoc, xmlDocCopyNode,
    xmlDocGetRootElement, xmlDocPtr, xmlDocSetRootElement, xmlElementType_XML_ATTRIBUTE_NODE,
    xmlElementType_XML_CDATA_SECTION_NODE, xmlElementType_XML_COMMENT_NODE,
    xmlElementType_XML_DOCUMENT_NODE, xmlElementType_XML_DOCUMENT_TYPE_NODE,
    xmlElementType_XML_DTD_NODE, xmlElementType_XML_ELEMENT_NODE,
    xmlElementType_XML_ENTITY_REF_NODE, xmlElementType_XML_HTML_DOCUMENT_NODE,
    xmlElementType_XML_PI_NODE, xmlElementType_XML_TEXT_NODE, xmlFree, xmlFreeDoc, xmlFreeNode,
    xmlGetLineNo, xmlGetNoNsProp, xmlGetNsList, xmlGetNsProp, xmlNewDoc, xmlNewNs, xmlNode,
    xmlNodeGetContent, xmlNodePtr, xmlReplaceNode, xmlSaveClose, xmlSaveDoc,
    xmlSaveOption_XML_SAVE_AS_XML, xmlSaveOption_XML_SAVE_FORMAT, xmlSaveOption_XML_SAVE_NO_DECL,
    xmlSaveToBuffer, xmlSaveTree,
};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

/// SOAP 1.1 envelope namespace.
pub(crate) const SOAP11_NS: &str = "http://schemas.xmlsoap.org/soap/envelope/";
/// SOAP 1.2 envelope namespace.
pub(crate) const SOAP12_NS: &str = "http://www.w3.org/2003/05/soap-envelope";

/// Frees memory allocated by libxml2's allocator.
///
/// # Safety
/// `p` must be NULL or a pointer returned by libxml2's allocator that nobody
/// else frees.
pub(crate) unsafe fn xml_free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    // SAFETY: `xmlFree` is libxml2's deallocator hook, set at library load and
    // never changed by this crate; reading the pointer value copies it.
    let free = unsafe { xmlFree };
    if let Some(free) = free {
        // SAFETY: per the function contract.
        unsafe { free(p) };
    }
}

/// Copies a libxml2-allocated string into Rust and frees it.
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string from libxml2's allocator that
/// the caller owns.
pub(crate) unsafe fn take_xml_string(p: *mut xmlChar) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: per the function contract.
    let s = unsafe { CStr::from_ptr(p as *const c_char) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: we own `p` and no longer use it.
    unsafe { xml_free(p as *mut c_void) };
    Some(s)
}

/// An owned raw `xmlDoc` (freed on drop unless released).
pub(crate) struct RawDoc(NonNull<xmlDoc>);

impl RawDoc {
    /// # Safety
    /// `p` must be NULL or a document that the caller owns exclusively.
    pub(crate) unsafe fn from_raw(p: xmlDocPtr) -> Option<RawDoc> {
        NonNull::new(p).map(RawDoc)
    }

    pub(crate) fn as_ptr(&self) -> xmlDocPtr {
        self.0.as_ptr()
    }

    /// Gives up ownership (e.g. to a stylesheet that now owns the document).
    pub(crate) fn into_raw(self) -> xmlDocPtr {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }

    pub(crate) fn into_document(self) -> Document {
        Document {
            inner: libxml::tree::Document::new_ptr(self.into_raw()),
        }
    }
}

impl Drop for RawDoc {
    fn drop(&mut self) {
        // SAFETY: we own the document exclusively and free it exactly once.
        unsafe { xmlFreeDoc(self.0.as_ptr()) };
    }
}

/// An XML document (a libxml2 tree, owned through the `libxml` crate).
///
/// `Document` is `!Send` and `!Sync`: use it on one thread and never hold it
/// across an `.await`. Node handles ([`Node`]) borrow the document, so the
/// tree cannot be changed (`&mut self` methods) while any handle exists.
pub struct Document {
    // Never exposed while we hand out raw-pointer-based `Node`s: the libxml
    // crate's own node cache must stay empty for `replace_node` to be sound.
    inner: libxml::tree::Document,
}

impl fmt::Debug for Document {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let root = self.root_element().map(|r| r.name().to_string());
        f.debug_struct("Document").field("root", &root).finish()
    }
}

/// Serialisation options for [`Document::to_bytes_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SerializeOptions {
    /// Emit `<?xml version="1.0" encoding="UTF-8"?>` (default `true`).
    pub xml_declaration: bool,
    /// Pretty-print (default `false`).
    pub indent: bool,
}

impl Default for SerializeOptions {
    fn default() -> Self {
        SerializeOptions {
            xml_declaration: true,
            indent: false,
        }
    }
}

/// SOAP version of an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SoapVersion {
    /// `http://schemas.xmlsoap.org/soap/envelope/`
    Soap11,
    /// `http://www.w3.org/2003/05/soap-envelope`
    Soap12,
}

impl SoapVersion {
    /// The envelope namespace URI.
    pub fn namespace(self) -> &'static str {
        match self {
            SoapVersion::Soap11 => SOAP11_NS,
            SoapVersion::Soap12 => SOAP12_NS,
        }
    }
}

/// Canonicalisation algorithm for [`canonicalize_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum C14nMode {
    /// Canonical XML 1.0 (inclusive).
    Inclusive,
    /// Exclusive XML Canonicalization 1.0.
    Exclusive,
    /// Canonical XML 1.1.
    Inclusive11,
}

impl Document {
    /// Parses untrusted bytes with the default [`crate::Limits`].
    pub fn parse(bytes: &[u8]) -> Result<Document, XmlError> {
        crate::parse_untrusted(bytes, &crate::Limits::default())
    }

    pub(crate) fn doc_ptr(&self) -> xmlDocPtr {
        self.inner.doc_ptr()
    }

    /// The document node itself (kind [`NodeKind::Document`]).
    pub fn as_node(&self) -> Node<'_> {
        // SAFETY: an xmlDoc starts with the same header as xmlNode and is a
        // valid node of type XML_DOCUMENT_NODE; non-null since we own it.
        unsafe { Node::from_raw(self.doc_ptr() as xmlNodePtr) }.expect("document pointer")
    }

    /// The root element, if any.
    pub fn root_element(&self) -> Option<Node<'_>> {
        // SAFETY: reads the root of our own live document.
        unsafe { Node::from_raw(xmlDocGetRootElement(self.doc_ptr())) }
    }

    /// Serialises as UTF-8 with an XML declaration.
    pub fn to_bytes(&self) -> Result<Vec<u8>, XmlError> {
        self.to_bytes_with(SerializeOptions::default())
    }

    /// Serialises as UTF-8 with the given options.
    pub fn to_bytes_with(&self, opts: SerializeOptions) -> Result<Vec<u8>, XmlError> {
        let mut flags = xmlSaveOption_XML_SAVE_AS_XML as c_int;
        if !opts.xml_declaration {
            flags |= xmlSaveOption_XML_SAVE_NO_DECL as c_int;
        }
        if opts.indent {
            flags |= xmlSaveOption_XML_SAVE_FORMAT as c_int;
        }
        save(flags, |sctx| {
            // SAFETY: `sctx` is a live save context and the document is ours.
            unsafe { xmlSaveDoc(sctx, self.doc_ptr()) }
        })
    }

    /// The SOAP version, if the root element is a SOAP 1.1 or 1.2 `Envelope`.
    pub fn soap_version(&self) -> Option<SoapVersion> {
        let root = self.root_element()?;
        if root.name() != "Envelope" {
            return None;
        }
        match root.namespace_uri()? {
            SOAP11_NS => Some(SoapVersion::Soap11),
            SOAP12_NS => Some(SoapVersion::Soap12),
            _ => None,
        }
    }

    fn soap_child(&self, local: &str) -> Option<Node<'_>> {
        let version = self.soap_version()?;
        self.root_element()?
            .child_elements()
            .find(|c| c.name() == local && c.namespace_uri() == Some(version.namespace()))
    }

    /// The SOAP `Header` element (SOAP 1.1 or 1.2), if present.
    pub fn soap_header(&self) -> Option<Node<'_>> {
        self.soap_child("Header")
    }

    /// The SOAP `Body` element (SOAP 1.1 or 1.2), if present.
    pub fn soap_body(&self) -> Option<Node<'_>> {
        self.soap_child("Body")
    }

    /// The first element child of the SOAP `Body` (the payload), if any.
    pub fn soap_body_first_child(&self) -> Option<Node<'_>> {
        self.soap_body()?.first_child_element()
    }

    /// A deep copy of this document.
    pub fn duplicate(&self) -> Result<Document, XmlError> {
        // SAFETY: copies our live document; the result is a new document we
        // own (or NULL on allocation failure).
        let copy = unsafe { RawDoc::from_raw(xmlCopyDoc(self.doc_ptr(), 1)) };
        copy.map(RawDoc::into_document)
            .ok_or_else(|| XmlError::new(XmlErrorKind::OutOfMemory, "xmlCopyDoc failed"))
    }

    /// Hands the document to the `libxml` crate's API.
    pub fn into_libxml(self) -> libxml::tree::Document {
        self.inner
    }

    /// Replaces the node identified by `target` with a copy of `replacement`'s
    /// content ("the XSLT result replaces the source"). When `target` is the
    /// root element, it is replaced by `replacement`'s root element; otherwise
    /// by all of `replacement`'s top-level nodes (elements, text, comments,
    /// processing instructions) in order. The replaced node is freed.
    ///
    /// `target` must identify a node currently in this document (checked by a
    /// walk of the tree); attributes and the document node are refused.
    pub fn replace_node(&mut self, target: NodeId, replacement: &Document) -> Result<(), XmlError> {
        let doc = self.doc_ptr();
        let target = self.find(target).ok_or_else(|| {
            XmlError::new(
                XmlErrorKind::InvalidArgument,
                "target node is not a replaceable node of this document",
            )
        })?;
        // SAFETY: `target` was found by walking this document's tree, so it is
        // a live element/text/CDATA/comment/PI node with a parent; `replacement`
        // is a distinct live document (borrowed shared while `self` is borrowed
        // mutably). Copies are made into `doc` (xmlDocCopyNode handles
        // dictionaries and namespace reconciliation) and freed if unused; the
        // target is unlinked by xmlReplaceNode before being freed, and no Node
        // handle can exist for it because we hold `&mut self`.
        unsafe {
            let parent = (*target).parent;
            let parent_is_doc = !parent.is_null()
                && ((*parent).type_ == xmlElementType_XML_DOCUMENT_NODE
                    || (*parent).type_ == xmlElementType_XML_HTML_DOCUMENT_NODE);
            let mut copies = Vec::new();
            if parent_is_doc {
                if (*target).type_ != xmlElementType_XML_ELEMENT_NODE {
                    return Err(XmlError::new(
                        XmlErrorKind::InvalidArgument,
                        "only the root element can be replaced at the document level",
                    ));
                }
                let root = xmlDocGetRootElement(replacement.doc_ptr());
                if root.is_null() {
                    return Err(XmlError::new(
                        XmlErrorKind::InvalidArgument,
                        "replacement has no root element to replace the root with",
                    ));
                }
                copies.push(root);
            } else {
                let mut cur = (*replacement.doc_ptr()).children;
                while !cur.is_null() {
                    if is_content_type((*cur).type_) {
                        copies.push(cur);
                    }
                    cur = (*cur).next;
                }
            }
            if copies.is_empty() {
                return Err(XmlError::new(
                    XmlErrorKind::InvalidArgument,
                    "replacement document is empty",
                ));
            }
            let mut made: Vec<xmlNodePtr> = Vec::with_capacity(copies.len());
            for src in copies {
                let copy = xmlDocCopyNode(src, doc, 1);
                if copy.is_null() {
                    for c in made {
                        xmlFreeNode(c);
                    }
                    return Err(XmlError::new(
                        XmlErrorKind::OutOfMemory,
                        "xmlDocCopyNode failed",
                    ));
                }
                made.push(copy);
            }
            // xmlReplaceNode never merges text nodes, so the first copy takes
            // the target's place exactly; later copies go after it (text may
            // merge into the preceding copy, which is fine).
            let mut prev = made[0];
            xmlReplaceNode(target, prev);
            for &copy in &made[1..] {
                prev = xmlAddNextSibling(prev, copy);
            }
            xmlFreeNode(target);
        }
        Ok(())
    }

    /// Finds the node with this id by walking the tree (never dereferences
    /// the id itself). Attributes, DTD content and entity content are not
    /// searched.
    /// The node behind `id`, while it is a node of this document's tree.
    pub fn node(&self, id: NodeId) -> Option<Node<'_>> {
        // SAFETY: `find` returns a live node of this document, borrowed with it.
        self.find(id).and_then(|p| unsafe { Node::from_raw(p) })
    }

    pub(crate) fn find(&self, id: NodeId) -> Option<xmlNodePtr> {
        let doc = self.doc_ptr() as xmlNodePtr;
        // SAFETY: iterative walk over our own live tree following
        // children/next/parent links, never entering DTDs or entity
        // references (whose children belong to declarations).
        unsafe {
            let mut cur = (*doc).children;
            while !cur.is_null() {
                if cur as usize == id.0 {
                    return is_content_type((*cur).type_).then_some(cur);
                }
                let t = (*cur).type_;
                let descend = t == xmlElementType_XML_ELEMENT_NODE && !(*cur).children.is_null();
                if descend {
                    cur = (*cur).children;
                    continue;
                }
                loop {
                    if !(*cur).next.is_null() {
                        cur = (*cur).next;
                        break;
                    }
                    cur = (*cur).parent;
                    if cur.is_null() || cur == doc {
                        return None;
                    }
                }
            }
        }
        None
    }
}

/// Node types that can be replaced or inserted by `replace_node`.
pub(crate) fn is_content_type(t: u32) -> bool {
    t == xmlElementType_XML_ELEMENT_NODE
        || t == xmlElementType_XML_TEXT_NODE
        || t == xmlElementType_XML_CDATA_SECTION_NODE
        || t == xmlElementType_XML_COMMENT_NODE
        || t == xmlElementType_XML_PI_NODE
}

/// Runs `f` with a save context writing to a memory buffer; returns the bytes.
pub(crate) fn save(
    flags: c_int,
    f: impl FnOnce(*mut libxml::bindings::xmlSaveCtxt) -> std::os::raw::c_long,
) -> Result<Vec<u8>, XmlError> {
    crate::init();
    struct Buf(xmlBufferPtr);
    impl Drop for Buf {
        fn drop(&mut self) {
            // SAFETY: created by xmlBufferCreate, freed once here.
            unsafe { xmlBufferFree(self.0) };
        }
    }
    // SAFETY: plain constructor, NULL-checked, freed by `Buf`.
    let buf = Buf(allocated(
        unsafe { xmlBufferCreate() },
        "xmlBufferCreate failed",
    )?);
    let capture = Capture::start();
    let utf8 = c"UTF-8";
    // SAFETY: `buf.0` is a live buffer; the save context is closed (which
    // flushes and frees it) before we read the buffer.
    let (rc, close_rc) = unsafe {
        let sctx = xmlSaveToBuffer(buf.0, utf8.as_ptr(), flags);
        if sctx.is_null() {
            return Err(XmlError::new(
                XmlErrorKind::Serialize,
                "xmlSaveToBuffer failed",
            ));
        }
        let rc = f(sctx);
        (rc, xmlSaveClose(sctx))
    };
    let diags = capture.finish();
    if rc < 0 || close_rc < 0 {
        return Err(XmlError::from_diagnostics(
            XmlErrorKind::Serialize,
            "serialisation failed",
            &diags,
        ));
    }
    // SAFETY: reads the live buffer's content pointer and length.
    unsafe {
        let content = xmlBufferContent(buf.0);
        let len = usize::try_from(xmlBufferLength(buf.0)).unwrap_or(0);
        if content.is_null() || len == 0 {
            return Ok(Vec::new());
        }
        Ok(std::slice::from_raw_parts(content, len).to_vec())
    }
}

/// Canonical XML 1.0 (inclusive, without comments) of a document.
pub fn canonicalize(doc: &Document) -> Result<Vec<u8>, XmlError> {
    canonicalize_with(doc, C14nMode::Inclusive, false)
}

/// Canonicalises a whole document with the given algorithm.
pub fn canonicalize_with(
    doc: &Document,
    mode: C14nMode,
    with_comments: bool,
) -> Result<Vec<u8>, XmlError> {
    crate::init();
    let mode = match mode {
        C14nMode::Inclusive => xmlC14NMode_XML_C14N_1_0,
        C14nMode::Exclusive => xmlC14NMode_XML_C14N_EXCLUSIVE_1_0,
        C14nMode::Inclusive11 => xmlC14NMode_XML_C14N_1_1,
    } as c_int;
    let capture = Capture::start();
    let mut out: *mut xmlChar = ptr::null_mut();
    // SAFETY: canonicalises our live document into a newly allocated buffer
    // that we copy and free; NULL node set means the whole document.
    let len = unsafe {
        xmlC14NDocDumpMemory(
            doc.doc_ptr(),
            ptr::null_mut(),
            mode,
            ptr::null_mut(),
            c_int::from(with_comments),
            &mut out,
        )
    };
    let diags = capture.finish();
    if len < 0 || out.is_null() {
        // SAFETY: `out` is NULL or ours to free.
        unsafe { xml_free(out as *mut c_void) };
        return Err(XmlError::from_diagnostics(
            XmlErrorKind::Serialize,
            "canonicalisation failed",
            &diags,
        ));
    }
    // SAFETY: libxml2 wrote `len` bytes at `out`, which we own.
    let bytes = unsafe { std::slice::from_raw_parts(out, len as usize).to_vec() };
    // SAFETY: we own `out` and no longer use it.
    unsafe { xml_free(out as *mut c_void) };
    Ok(bytes)
}

/// The kind of a [`Node`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// An element.
    Element,
    /// An attribute.
    Attribute,
    /// A text node.
    Text,
    /// A CDATA section.
    CData,
    /// An entity reference (only with `allow_entity_declarations`).
    EntityRef,
    /// A processing instruction.
    ProcessingInstruction,
    /// A comment.
    Comment,
    /// The document node.
    Document,
    /// A document type declaration.
    DocumentType,
    /// Anything else (libxml2's numeric node type).
    Other(u32),
}

/// An opaque identity of a node, used to name a node to a `&mut Document`
/// method (e.g. [`Document::replace_node`]) after the borrowing [`Node`] is
/// gone. It is only ever compared, never dereferenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeId(usize);

/// A borrowed handle to a node of a [`Document`]; `Copy`, `!Send`, `!Sync`.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    ptr: NonNull<xmlNode>,
    _doc: PhantomData<&'a Document>,
}

impl PartialEq for Node<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr == other.ptr
    }
}

impl Eq for Node<'_> {}

impl fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("kind", &self.kind())
            .field("name", &self.name())
            .finish()
    }
}

impl<'a> Node<'a> {
    /// # Safety
    /// `p` must be NULL or a live node (xmlNode, xmlAttr, xmlDoc or xmlDtd,
    /// all sharing xmlNode's leading fields) of a document borrowed for `'a`,
    /// not a namespace (`xmlNs`) item.
    pub(crate) unsafe fn from_raw(p: xmlNodePtr) -> Option<Node<'a>> {
        NonNull::new(p).map(|ptr| Node {
            ptr,
            _doc: PhantomData,
        })
    }

    pub(crate) fn as_ptr(&self) -> xmlNodePtr {
        self.ptr.as_ptr()
    }

    fn raw_type(&self) -> u32 {
        // SAFETY: `type` is in the header shared by every node struct.
        unsafe { (*self.ptr.as_ptr()).type_ }
    }

    /// Reads a header link (parent/children/next/...) as a Node.
    fn link(&self, f: impl FnOnce(&xmlNode) -> xmlNodePtr) -> Option<Node<'a>> {
        // SAFETY: the header fields are valid for every node struct and point
        // to nodes of the same document (or NULL).
        unsafe { Node::from_raw(f(&*self.ptr.as_ptr())) }
    }

    /// This node's identity.
    pub fn id(&self) -> NodeId {
        NodeId(self.ptr.as_ptr() as usize)
    }

    /// The node kind.
    pub fn kind(&self) -> NodeKind {
        match self.raw_type() {
            t if t == xmlElementType_XML_ELEMENT_NODE => NodeKind::Element,
            t if t == xmlElementType_XML_ATTRIBUTE_NODE => NodeKind::Attribute,
            t if t == xmlElementType_XML_TEXT_NODE => NodeKind::Text,
            t if t == xmlElementType_XML_CDATA_SECTION_NODE => NodeKind::CData,
            t if t == xmlElementType_XML_ENTITY_REF_NODE => NodeKind::EntityRef,
            t if t == xmlElementType_XML_PI_NODE => NodeKind::ProcessingInstruction,
            t if t == xmlElementType_XML_COMMENT_NODE => NodeKind::Comment,
            t if t == xmlElementType_XML_DOCUMENT_NODE
                || t == xmlElementType_XML_HTML_DOCUMENT_NODE =>
            {
                NodeKind::Document
            }
            t if t == xmlElementType_XML_DTD_NODE || t == xmlElementType_XML_DOCUMENT_TYPE_NODE => {
                NodeKind::DocumentType
            }
            t => NodeKind::Other(t),
        }
    }

    /// `true` for elements.
    pub fn is_element(&self) -> bool {
        self.kind() == NodeKind::Element
    }

    fn has_ns_field(&self) -> bool {
        matches!(self.kind(), NodeKind::Element | NodeKind::Attribute)
    }

    /// The local name (elements, attributes, PI targets); libxml2's internal
    /// name for other kinds (e.g. `text`), empty for the document node.
    pub fn name(&self) -> &'a str {
        if self.kind() == NodeKind::Document {
            return "";
        }
        // SAFETY: `name` is in the shared header; for non-document nodes it
        // is NULL or a NUL-terminated UTF-8 string owned by the document (or
        // its dictionary), which cannot change or be freed while `'a` borrows
        // the document immutably.
        unsafe {
            let n = (*self.ptr.as_ptr()).name;
            if n.is_null() {
                return "";
            }
            CStr::from_ptr(n as *const c_char).to_str().unwrap_or("")
        }
    }

    fn ns(&self) -> Option<&'a libxml::bindings::xmlNs> {
        if !self.has_ns_field() {
            return None;
        }
        // SAFETY: elements and attributes (xmlNode/xmlAttr) both have `ns`
        // at the same position; it is NULL or a namespace declared in this
        // document, live while the document is borrowed.
        unsafe { (*self.ptr.as_ptr()).ns.as_ref() }
    }

    /// The namespace URI of an element or attribute.
    pub fn namespace_uri(&self) -> Option<&'a str> {
        let ns = self.ns()?;
        // SAFETY: `href` is NULL or a NUL-terminated string owned by the ns.
        unsafe { opt_str(ns.href) }
    }

    /// The namespace prefix of an element or attribute.
    pub fn prefix(&self) -> Option<&'a str> {
        let ns = self.ns()?;
        // SAFETY: `prefix` is NULL or a NUL-terminated string owned by the ns.
        unsafe { opt_str(ns.prefix) }
    }

    /// The XPath string-value: concatenated text of all descendant text
    /// nodes for elements and the document, the value for attributes, the
    /// content for text, comments and PIs.
    pub fn text_content(&self) -> String {
        if self.kind() == NodeKind::DocumentType {
            return String::new();
        }
        // SAFETY: xmlNodeGetContent handles every node kind we create Nodes
        // for and returns a new string that `take_xml_string` frees.
        unsafe { take_xml_string(xmlNodeGetContent(self.ptr.as_ptr())) }.unwrap_or_default()
    }

    /// Value of the attribute `name` with no namespace (elements only).
    pub fn attribute(&self, name: &str) -> Option<String> {
        if !self.is_element() {
            return None;
        }
        let name = CString::new(name).ok()?;
        // SAFETY: element node; returns a new string we free.
        unsafe {
            take_xml_string(xmlGetNoNsProp(
                self.ptr.as_ptr(),
                name.as_ptr() as *const xmlChar,
            ))
        }
    }

    /// Value of the attribute `{ns_uri}name` (elements only).
    pub fn attribute_ns(&self, name: &str, ns_uri: &str) -> Option<String> {
        if !self.is_element() {
            return None;
        }
        let name = CString::new(name).ok()?;
        let ns = CString::new(ns_uri).ok()?;
        // SAFETY: element node; returns a new string we free.
        unsafe {
            take_xml_string(xmlGetNsProp(
                self.ptr.as_ptr(),
                name.as_ptr() as *const xmlChar,
                ns.as_ptr() as *const xmlChar,
            ))
        }
    }

    /// The attribute nodes of an element, in document order.
    pub fn attributes(&self) -> impl Iterator<Item = Node<'a>> + 'a {
        let first = if self.is_element() {
            // SAFETY: `properties` is a field of element nodes only; it is
            // NULL or the first xmlAttr (which shares the node header).
            unsafe { Node::from_raw((*self.ptr.as_ptr()).properties as xmlNodePtr) }
        } else {
            None
        };
        std::iter::successors(first, |n| n.next_sibling())
    }

    /// Parent node (an element, or the document node for the root).
    pub fn parent(&self) -> Option<Node<'a>> {
        self.link(|n| n.parent)
    }

    /// First child node. Entity references and doctypes report no children.
    pub fn first_child(&self) -> Option<Node<'a>> {
        match self.kind() {
            NodeKind::EntityRef | NodeKind::DocumentType => None,
            _ => self.link(|n| n.children),
        }
    }

    /// Next sibling node.
    pub fn next_sibling(&self) -> Option<Node<'a>> {
        self.link(|n| n.next)
    }

    /// Previous sibling node.
    pub fn prev_sibling(&self) -> Option<Node<'a>> {
        self.link(|n| n.prev)
    }

    /// All child nodes in order.
    pub fn children(&self) -> impl Iterator<Item = Node<'a>> + 'a {
        std::iter::successors(self.first_child(), |n| n.next_sibling())
    }

    /// Child elements in order.
    pub fn child_elements(&self) -> impl Iterator<Item = Node<'a>> + 'a {
        self.children().filter(|n| n.is_element())
    }

    /// First child element.
    pub fn first_child_element(&self) -> Option<Node<'a>> {
        self.child_elements().next()
    }

    /// The source line of an element, text, comment or PI, when known.
    pub fn line(&self) -> Option<u32> {
        match self.kind() {
            NodeKind::Element
            | NodeKind::Text
            | NodeKind::CData
            | NodeKind::Comment
            | NodeKind::ProcessingInstruction => {
                // SAFETY: xmlGetLineNo reads `line` of these node kinds.
                let l = unsafe { xmlGetLineNo(self.ptr.as_ptr()) };
                u32::try_from(l).ok().filter(|&l| l > 0)
            }
            _ => None,
        }
    }

    /// Serialises this node and its subtree (like `xmlNodeDump`: no XML
    /// declaration, and namespace declarations of ancestors are *not*
    /// repeated; use [`Node::to_document`] for a self-contained copy).
    pub fn to_bytes(&self) -> Result<Vec<u8>, XmlError> {
        if self.kind() == NodeKind::Document {
            return save(
                (xmlSaveOption_XML_SAVE_AS_XML | xmlSaveOption_XML_SAVE_NO_DECL) as c_int,
                // SAFETY: the node is a live document node.
                |sctx| unsafe { xmlSaveDoc(sctx, self.ptr.as_ptr() as xmlDocPtr) },
            );
        }
        save(
            (xmlSaveOption_XML_SAVE_AS_XML | xmlSaveOption_XML_SAVE_NO_DECL) as c_int,
            // SAFETY: the node is live in a live document.
            |sctx| unsafe { xmlSaveTree(sctx, self.ptr.as_ptr()) },
        )
    }

    /// Copies this element and its subtree into a new document whose root
    /// element also declares every namespace in scope here (so prefixes used
    /// in attribute values, e.g. XSLT `match="m0:x"`, stay bound).
    pub fn to_document(&self) -> Result<Document, XmlError> {
        if !self.is_element() {
            return Err(XmlError::new(
                XmlErrorKind::InvalidArgument,
                "only elements can be copied into a new document",
            ));
        }
        crate::init();
        let version = c"1.0";
        // SAFETY: creates a new document we own (RawDoc frees it on every
        // path); copies our live node into it; xmlGetNsList returns a
        // libxml2-allocated NULL-terminated array of namespaces of the source
        // tree (live while borrowed) that we free after use; xmlNewNs copies
        // the strings onto the new root.
        unsafe {
            let Some(new_doc) = RawDoc::from_raw(xmlNewDoc(version.as_ptr() as *const xmlChar))
            else {
                return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlNewDoc failed"));
            };
            let copy = xmlDocCopyNode(self.ptr.as_ptr(), new_doc.as_ptr(), 1);
            if copy.is_null() {
                return Err(XmlError::new(
                    XmlErrorKind::OutOfMemory,
                    "xmlDocCopyNode failed",
                ));
            }
            xmlDocSetRootElement(new_doc.as_ptr(), copy);
            let src = self.ptr.as_ref();
            let list = xmlGetNsList(src.doc, self.ptr.as_ptr());
            if !list.is_null() {
                let mut i = 0;
                loop {
                    let ns = *list.add(i);
                    if ns.is_null() {
                        break;
                    }
                    // Returns NULL (and does nothing) if the prefix is
                    // already declared on the copy.
                    xmlNewNs(copy, (*ns).href, (*ns).prefix);
                    i += 1;
                }
                xml_free(list as *mut c_void);
            }
            Ok(new_doc.into_document())
        }
    }
}

/// # Safety
/// `p` must be NULL or a NUL-terminated string valid for `'a`.
unsafe fn opt_str<'a>(p: *const xmlChar) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: per the function contract.
    unsafe { CStr::from_ptr(p as *const c_char) }.to_str().ok()
}
