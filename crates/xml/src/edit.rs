//! Changing a document: fragments of nodes copied in and out, removal, text, SOAP headers.

use crate::document::{save, Document, Node, NodeId, NodeKind, RawDoc};
use crate::error::{XmlError, XmlErrorKind};
use libxml::bindings::{
    xmlAddChild, xmlAddNextSibling, xmlAddPrevSibling, xmlChar, xmlDOMWrapReconcileNamespaces,
    xmlDocCopyNode, xmlDocGetRootElement, xmlDocSetRootElement, xmlElementType_XML_DOCUMENT_NODE,
    xmlElementType_XML_ELEMENT_NODE, xmlElementType_XML_TEXT_NODE, xmlFreeNode, xmlNewDoc,
    xmlNewDocNode, xmlNewDocText, xmlNewNs, xmlNodeGetSpacePreserve, xmlNodePtr, xmlNodeSetContent,
    xmlSaveOption_XML_SAVE_AS_XML, xmlSaveOption_XML_SAVE_NO_DECL, xmlSaveTree, xmlSearchNsByHref,
    xmlSetNsProp, xmlUnlinkNode,
};
use std::ffi::{c_int, CString};

/// libxml2's `XML_DOM_RECONNS_REMOVEREDUND`: drop namespace declarations an ancestor already makes.
const RECONNS_REMOVE_REDUNDANT: c_int = 1;

/// A sequence of nodes outside any message: copied out of a document, parsed from text, or a
/// single text. Elements carry the namespace declarations they use, so each stands alone.
///
/// Internally the nodes are the children of a private wrapper element of a document of their own.
pub struct Fragment {
    doc: Document,
}

impl std::fmt::Debug for Fragment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fragment")
            .field("xml", &self.to_xml_string().unwrap_or_default())
            .finish()
    }
}

/// Where [`Document::insert`] puts the copies, relative to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Before,
    After,
    LastChild,
}

const WRAPPER: &str = "sluice-fragment";

impl Fragment {
    /// An empty fragment.
    pub fn empty() -> Result<Fragment, XmlError> {
        Self::parse("")
    }

    /// Parses well-formed content (elements, text, comments; several top-level elements allowed),
    /// securely (see [`crate::parse_untrusted`]). An XML declaration or DOCTYPE is refused.
    pub fn parse(text: &str) -> Result<Fragment, XmlError> {
        let wrapped = format!("<{WRAPPER}>{text}</{WRAPPER}>");
        let doc = crate::parse_untrusted(wrapped.as_bytes(), &crate::Limits::default())?;
        Ok(Fragment { doc })
    }

    /// One text node.
    pub fn text(text: &str) -> Result<Fragment, XmlError> {
        let f = Self::empty()?;
        let c = CString::new(text)
            .map_err(|_| XmlError::new(XmlErrorKind::InvalidArgument, "text contains NUL"))?;
        let root = f.wrapper();
        // SAFETY: creates a text node in the fragment's own live document (content copied) and
        // links it under the wrapper element, which then owns it.
        unsafe {
            let t = xmlNewDocText(f.doc.doc_ptr(), c.as_ptr() as *const xmlChar);
            if t.is_null() {
                return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlNewDocText"));
            }
            xmlAddChild(root, t);
        }
        Ok(f)
    }

    /// Copies nodes of a document: elements deeply (declaring the namespaces they use), text and
    /// CDATA as text, attributes as their value as text. Other kinds are skipped.
    pub fn from_nodes(nodes: &[Node<'_>]) -> Result<Fragment, XmlError> {
        let f = Self::empty()?;
        let root = f.wrapper();
        for n in nodes {
            match n.kind() {
                NodeKind::Element => {
                    // SAFETY: `n` is a live element of a document borrowed by the caller; the copy
                    // is made into the fragment's document with no parent, so libxml2 declares
                    // every namespace it uses on the copy itself; linking it under the wrapper
                    // gives ownership to the fragment's tree.
                    unsafe {
                        let copy = xmlDocCopyNode(n.as_ptr(), f.doc.doc_ptr(), 1);
                        if copy.is_null() {
                            return Err(XmlError::new(
                                XmlErrorKind::OutOfMemory,
                                "xmlDocCopyNode failed",
                            ));
                        }
                        xmlAddChild(root, copy);
                    }
                }
                NodeKind::Text | NodeKind::CData | NodeKind::Attribute => {
                    let t = Self::text(&n.text_content())?;
                    f.append_from(&t)?;
                }
                _ => {}
            }
        }
        Ok(f)
    }

    fn append_from(&self, other: &Fragment) -> Result<(), XmlError> {
        let root = self.wrapper();
        for c in other.nodes() {
            // SAFETY: copies a live node of `other` into our document and links it under our
            // wrapper (xmlAddChild may merge text and free the copy, returning the survivor).
            unsafe {
                let copy = xmlDocCopyNode(c.as_ptr(), self.doc.doc_ptr(), 1);
                if copy.is_null() {
                    return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlDocCopyNode"));
                }
                xmlAddChild(root, copy);
            }
        }
        Ok(())
    }

    fn wrapper(&self) -> xmlNodePtr {
        // SAFETY: the fragment's document always has the wrapper as its root element.
        unsafe { xmlDocGetRootElement(self.doc.doc_ptr()) }
    }

    fn wrapper_node(&self) -> Node<'_> {
        self.doc.root_element().expect("fragment wrapper")
    }

    /// The nodes, in order.
    pub fn nodes(&self) -> impl Iterator<Item = Node<'_>> + '_ {
        self.wrapper_node().children()
    }

    /// The element nodes, in order.
    pub fn elements(&self) -> impl Iterator<Item = Node<'_>> + '_ {
        self.wrapper_node().child_elements()
    }

    /// The last text node's content, if there is one.
    pub fn last_text(&self) -> Option<String> {
        self.nodes()
            .filter(|n| matches!(n.kind(), NodeKind::Text | NodeKind::CData))
            .last()
            .map(|n| n.text_content())
    }

    pub fn is_empty(&self) -> bool {
        self.nodes().next().is_none()
    }

    /// The nodes serialised one after the other (no XML declaration).
    pub fn to_xml_string(&self) -> Result<String, XmlError> {
        let mut out = Vec::new();
        for n in self.nodes() {
            let bytes = save(
                (xmlSaveOption_XML_SAVE_AS_XML | xmlSaveOption_XML_SAVE_NO_DECL) as c_int,
                // SAFETY: the node is live in our live document.
                |sctx| unsafe { xmlSaveTree(sctx, n.as_ptr()) },
            )?;
            out.extend_from_slice(&bytes);
        }
        String::from_utf8(out)
            .map_err(|_| XmlError::new(XmlErrorKind::Serialize, "serialisation is not UTF-8"))
    }

    /// A document whose root is a copy of the first element.
    pub fn into_document(self) -> Result<Document, XmlError> {
        let first = self.elements().next().ok_or_else(|| {
            XmlError::new(XmlErrorKind::InvalidArgument, "the fragment has no element")
        })?;
        let version = c"1.0";
        // SAFETY: creates a document we own (RawDoc frees it on every path) and copies a live
        // element of the fragment into it as its root (namespaces it uses are declared on it).
        unsafe {
            let Some(doc) = RawDoc::from_raw(xmlNewDoc(version.as_ptr() as *const xmlChar)) else {
                return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlNewDoc failed"));
            };
            let copy = xmlDocCopyNode(first.as_ptr(), doc.as_ptr(), 1);
            if copy.is_null() {
                return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlDocCopyNode"));
            }
            xmlDocSetRootElement(doc.as_ptr(), copy);
            Ok(doc.into_document())
        }
    }
}

impl Document {
    fn found(&self, id: NodeId, what: &str) -> Result<xmlNodePtr, XmlError> {
        self.find(id).ok_or_else(|| {
            XmlError::new(
                XmlErrorKind::InvalidArgument,
                format!("{what}: the node is not a content node of this document"),
            )
        })
    }

    /// Copies the *elements* of `fragment` into this document, before or after `target` or as its
    /// last children, keeping their order. Namespace declarations that the new place already makes
    /// are dropped from the copies. Before/After need a target whose parent is an element.
    pub fn insert(
        &mut self,
        target: NodeId,
        fragment: &Fragment,
        at: Placement,
    ) -> Result<(), XmlError> {
        let doc = self.doc_ptr();
        let t = self.found(target, "insert")?;
        // SAFETY: `t` was found in this live document by walking it; we hold `&mut self`, so no
        // Node handle exists. Copies of the fragment's live elements are made into our document
        // and linked at once (the tree owns them); elements are never merged by the link
        // functions, so each returned pointer is the copy itself. Reconciliation only edits the
        // namespace declarations of the copy just linked.
        unsafe {
            let parent = (*t).parent;
            let parent_is_element =
                !parent.is_null() && (*parent).type_ == xmlElementType_XML_ELEMENT_NODE;
            match at {
                Placement::LastChild if (*t).type_ != xmlElementType_XML_ELEMENT_NODE => {
                    return Err(XmlError::new(
                        XmlErrorKind::InvalidArgument,
                        "only an element can take children",
                    ));
                }
                Placement::Before | Placement::After if !parent_is_element => {
                    return Err(XmlError::new(
                        XmlErrorKind::InvalidArgument,
                        "cannot add a sibling to the root element",
                    ));
                }
                _ => {}
            }
            let mut after = t;
            for e in fragment.elements() {
                let copy = xmlDocCopyNode(e.as_ptr(), doc, 1);
                if copy.is_null() {
                    return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlDocCopyNode"));
                }
                match at {
                    Placement::Before => {
                        xmlAddPrevSibling(t, copy);
                    }
                    Placement::After => {
                        after = xmlAddNextSibling(after, copy);
                    }
                    Placement::LastChild => {
                        xmlAddChild(t, copy);
                    }
                }
                xmlDOMWrapReconcileNamespaces(std::ptr::null_mut(), copy, RECONNS_REMOVE_REDUNDANT);
            }
        }
        Ok(())
    }

    /// Indents the tree as Java's serializer (JDK 9 and later) writes a result with
    /// `xsl:output indent="yes"`, `unit` per level: an element with element children loses its
    /// white-space-only text, and each child goes on a line of its own; an element with only
    /// text stays on one line; `xml:space="preserve"` keeps an element's content as it is.
    pub fn indent(&mut self, unit: &str) -> Result<(), XmlError> {
        let doc = self.doc_ptr();
        let mut lines: Vec<CString> = Vec::new();
        let mut line = |depth: usize| -> Result<*const xmlChar, XmlError> {
            while lines.len() <= depth {
                let text = format!("\n{}", unit.repeat(lines.len()));
                lines.push(CString::new(text).map_err(|_| {
                    XmlError::new(XmlErrorKind::InvalidArgument, "a NUL in the indentation")
                })?);
            }
            Ok(lines[depth].as_ptr().cast())
        };
        // SAFETY: we hold `&mut self`, so no Node handle exists. Every pointer is read from the
        // live tree as it is walked; a blank text node is unlinked before it is freed, and each
        // new text node is linked at once (the tree owns it; a merge into a neighbouring text
        // node frees it, and it is not used after).
        unsafe {
            let root = xmlDocGetRootElement(doc);
            let mut stack = if root.is_null() {
                vec![]
            } else {
                vec![(root, 0)]
            };
            while let Some((e, depth)) = stack.pop() {
                if xmlNodeGetSpacePreserve(e) == 1 {
                    continue;
                }
                let mut has_element = false;
                let mut c = (*e).children;
                while !c.is_null() {
                    has_element |= (*c).type_ == xmlElementType_XML_ELEMENT_NODE;
                    c = (*c).next;
                }
                if !has_element {
                    continue;
                }
                let mut c = (*e).children;
                while !c.is_null() {
                    let next = (*c).next;
                    if (*c).type_ == xmlElementType_XML_TEXT_NODE && blank((*c).content) {
                        xmlUnlinkNode(c);
                        xmlFreeNode(c);
                    } else {
                        if (*c).type_ == xmlElementType_XML_ELEMENT_NODE {
                            stack.push((c, depth + 1));
                        }
                        let t = xmlNewDocText(doc, line(depth + 1)?);
                        if t.is_null() {
                            return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlNewDocText"));
                        }
                        xmlAddPrevSibling(c, t);
                    }
                    c = next;
                }
                let t = xmlNewDocText(doc, line(depth)?);
                if t.is_null() {
                    return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlNewDocText"));
                }
                xmlAddChild(e, t);
            }
        }
        Ok(())
    }

    /// Sets the attribute `{ns_uri}name` of the element `target` to `value`, declaring `prefix`
    /// for `ns_uri` on the element when no prefix in scope is bound to it.
    pub fn set_attribute_ns(
        &mut self,
        target: NodeId,
        (ns_uri, prefix): (&str, &str),
        name: &str,
        value: &str,
    ) -> Result<(), XmlError> {
        let t = self.found(target, "set_attribute_ns")?;
        let c = |s: &str| {
            CString::new(s)
                .map_err(|_| XmlError::new(XmlErrorKind::InvalidArgument, "a NUL in a name"))
        };
        let (uri, pfx, name, value) = (c(ns_uri)?, c(prefix)?, c(name)?, c(value)?);
        // SAFETY: `t` is a live content node of this document (found by walking it) and no Node
        // handle exists (`&mut self`). The namespace found is in scope of `t`, or a new one is
        // declared on `t` (libxml2 copies the strings); the attribute's strings are copied.
        unsafe {
            if (*t).type_ != xmlElementType_XML_ELEMENT_NODE {
                return Err(XmlError::new(
                    XmlErrorKind::InvalidArgument,
                    "only an element has attributes",
                ));
            }
            let mut ns = xmlSearchNsByHref(self.doc_ptr(), t, uri.as_ptr().cast());
            if ns.is_null() || (*ns).prefix.is_null() {
                ns = xmlNewNs(t, uri.as_ptr().cast(), pfx.as_ptr().cast());
            }
            if ns.is_null() {
                return Err(XmlError::new(
                    XmlErrorKind::InvalidArgument,
                    format!("the prefix {prefix} is bound to another namespace here"),
                ));
            }
            if xmlSetNsProp(t, ns, name.as_ptr().cast(), value.as_ptr().cast()).is_null() {
                return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlSetNsProp"));
            }
        }
        Ok(())
    }

    /// Removes a node (and its subtree) from the document.
    pub fn remove(&mut self, target: NodeId) -> Result<(), XmlError> {
        let t = self.found(target, "remove")?;
        // SAFETY: `t` is a live content node of this document (found by walking it) and no Node
        // handle exists (`&mut self`); it is unlinked before being freed.
        unsafe {
            if !(*t).parent.is_null() && (*(*t).parent).type_ == xmlElementType_XML_DOCUMENT_NODE {
                return Err(XmlError::new(
                    XmlErrorKind::InvalidArgument,
                    "cannot remove the root element",
                ));
            }
            xmlUnlinkNode(t);
            xmlFreeNode(t);
        }
        Ok(())
    }

    /// Sets the text of an element (its children are replaced by one text node), of a text node,
    /// or the value of an attribute.
    pub fn set_text(&mut self, target: NodeId, text: &str) -> Result<(), XmlError> {
        let c = CString::new(text)
            .map_err(|_| XmlError::new(XmlErrorKind::InvalidArgument, "text contains NUL"))?;
        if let Some(t) = self.find(target) {
            // SAFETY: `t` is a live content node of this document, no Node handle exists. For an
            // element we free its children after unlinking each, then link a new text node
            // (content copied). For a text node xmlNodeSetContent copies the text as is.
            unsafe {
                if (*t).type_ == xmlElementType_XML_ELEMENT_NODE {
                    let mut c0 = (*t).children;
                    while !c0.is_null() {
                        let next = (*c0).next;
                        xmlUnlinkNode(c0);
                        xmlFreeNode(c0);
                        c0 = next;
                    }
                    let tn = xmlNewDocText(self.doc_ptr(), c.as_ptr() as *const xmlChar);
                    if tn.is_null() {
                        return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlNewDocText"));
                    }
                    xmlAddChild(t, tn);
                } else if (*t).type_ == xmlElementType_XML_TEXT_NODE {
                    xmlNodeSetContent(t, c.as_ptr() as *const xmlChar);
                } else {
                    return Err(XmlError::new(
                        XmlErrorKind::InvalidArgument,
                        "only elements, text and attributes take text",
                    ));
                }
            }
            return Ok(());
        }
        let attr = self.find_attribute(target).ok_or_else(|| {
            XmlError::new(
                XmlErrorKind::InvalidArgument,
                "set_text: the node is not part of this document",
            )
        })?;
        // xmlNodeSetContent on an attribute reads entity references in the value: escape '&'.
        let escaped = CString::new(text.replace('&', "&amp;"))
            .map_err(|_| XmlError::new(XmlErrorKind::InvalidArgument, "text contains NUL"))?;
        // SAFETY: `attr` is a live attribute of an element of this document.
        unsafe { xmlNodeSetContent(attr, escaped.as_ptr() as *const xmlChar) };
        Ok(())
    }

    fn find_attribute(&self, id: NodeId) -> Option<xmlNodePtr> {
        let root = self.root_element()?;
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            for a in n.attributes() {
                if a.id() == id {
                    return Some(a.as_ptr());
                }
            }
            stack.extend(n.child_elements());
        }
        None
    }

    /// The SOAP Header, created (empty, in the envelope's namespace and prefix, before the Body)
    /// when the envelope has none. `None` when the document is not a SOAP envelope.
    pub fn ensure_soap_header(&mut self) -> Result<Option<NodeId>, XmlError> {
        if let Some(h) = self.soap_header() {
            return Ok(Some(h.id()));
        }
        if self.soap_version().is_none() {
            return Ok(None);
        }
        let body = self.soap_body().map(|b| b.as_ptr());
        let root = self.root_element().map(|r| r.as_ptr());
        let Some(root) = root else { return Ok(None) };
        let name = c"Header";
        // SAFETY: `root` is the live Envelope element of this document and its `ns` is the
        // envelope namespace, declared on it or above, so in scope for a child. The new element
        // is linked at once (before the Body, or as the last child) and owned by the tree.
        unsafe {
            let h = xmlNewDocNode(
                self.doc_ptr(),
                (*root).ns,
                name.as_ptr() as *const xmlChar,
                std::ptr::null(),
            );
            if h.is_null() {
                return Err(XmlError::new(XmlErrorKind::OutOfMemory, "xmlNewDocNode"));
            }
            match body {
                Some(b) => {
                    xmlAddPrevSibling(b, h);
                }
                None => {
                    xmlAddChild(root, h);
                }
            }
        }
        Ok(self.soap_header().map(|h| h.id()))
    }

    /// Replaces the children of the SOAP Body (or, for a document that is not a SOAP envelope, the
    /// root element) with the elements of `fragment`. A plain document keeps only the first.
    pub fn replace_payload(&mut self, fragment: &Fragment) -> Result<(), XmlError> {
        if let Some(body) = self.soap_body().map(|b| b.id()) {
            let old: Vec<NodeId> = self
                .soap_body()
                .map(|b| b.children().map(|c| c.id()).collect())
                .unwrap_or_default();
            for c in old {
                if self.find(c).is_some() {
                    self.remove(c)?;
                }
            }
            return self.insert(body, fragment, Placement::LastChild);
        }
        let first = fragment.elements().next().ok_or_else(|| {
            XmlError::new(
                XmlErrorKind::InvalidArgument,
                "the new payload has no element",
            )
        })?;
        let replacement = Fragment::from_nodes(&[first])?.into_document()?;
        match self.root_element().map(|r| r.id()) {
            Some(root) => self.replace_node(root, &replacement),
            None => Err(XmlError::new(
                XmlErrorKind::InvalidArgument,
                "the document has no root element",
            )),
        }
    }
}

/// Whether a text node's content (NUL-terminated, or NULL) is white space only.
///
/// # Safety
/// `content` is NULL or a NUL-terminated string.
unsafe fn blank(content: *const xmlChar) -> bool {
    if content.is_null() {
        return true;
    }
    // SAFETY: the caller's.
    unsafe { std::ffi::CStr::from_ptr(content.cast()) }
        .to_bytes()
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SerializeOptions;

    fn s(d: &Document) -> String {
        String::from_utf8(
            d.to_bytes_with(SerializeOptions {
                xml_declaration: false,
                indent: false,
            })
            .unwrap(),
        )
        .unwrap()
        .trim_end()
        .to_owned()
    }

    const ENV: &str = r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><m:a xmlns:m="urn:m"><m:b>1</m:b></m:a></s:Body></s:Envelope>"#;

    /// As Java's serializer indents an XSLT result (the shape Synapse's samples answer with).
    #[test]
    fn indent_puts_each_child_on_a_line_of_its_own() {
        let cases = [
            (
                "<m:r xmlns:m=\"urn:m\"> <m:a>IBM</m:a>\n\t<m:b><c/><!--x--></m:b></m:r>",
                "<m:r xmlns:m=\"urn:m\">\n    <m:a>IBM</m:a>\n    <m:b>\n        <c/>\n        <!--x-->\n    </m:b>\n</m:r>",
            ),
            ("<r>text only</r>", "<r>text only</r>"),
            ("<r> </r>", "<r> </r>"),
            ("<r>t<a/>u</r>", "<r>\n    t\n    <a/>\n    u\n</r>"),
            (
                "<r><p xml:space=\"preserve\"> <a/> </p></r>",
                "<r>\n    <p xml:space=\"preserve\"> <a/> </p>\n</r>",
            ),
        ];
        for (input, want) in cases {
            let mut d = Document::parse(input.as_bytes()).unwrap();
            d.indent("    ").unwrap();
            assert_eq!(s(&d), want, "{input}");
        }
    }

    #[test]
    fn fragments_copy_only_the_namespaces_they_use() {
        let d = Document::parse(ENV.as_bytes()).unwrap();
        let b = d
            .soap_body_first_child()
            .unwrap()
            .first_child_element()
            .unwrap();
        let f = Fragment::from_nodes(&[b]).unwrap();
        assert_eq!(
            f.to_xml_string().unwrap(),
            r#"<m:b xmlns:m="urn:m">1</m:b>"#
        );
        let t = Fragment::text("a<b").unwrap();
        assert_eq!(t.to_xml_string().unwrap(), "a&lt;b");
        assert_eq!(t.last_text().as_deref(), Some("a<b"));
        let p = Fragment::parse("<x/>text<y/>").unwrap();
        assert_eq!(p.elements().count(), 2);
        assert!(Fragment::parse("<x>").is_err());
        assert!(Fragment::empty().unwrap().is_empty());
    }

    #[test]
    fn insert_remove_and_text() {
        let mut d = Document::parse(ENV.as_bytes()).unwrap();
        let a = d.soap_body_first_child().unwrap().id();
        let f = Fragment::parse(r#"<m:c xmlns:m="urn:m"/>"#).unwrap();
        d.insert(a, &f, Placement::LastChild).unwrap();
        assert!(s(&d).contains(r#"<m:b>1</m:b><m:c/></m:a>"#), "{}", s(&d));
        d.insert(a, &Fragment::parse("<z/>").unwrap(), Placement::After)
            .unwrap();
        d.insert(a, &Fragment::parse("<y/>").unwrap(), Placement::Before)
            .unwrap();
        assert!(s(&d).contains("<s:Body><y/><m:a"), "{}", s(&d));
        assert!(s(&d).contains("</m:a><z/></s:Body>"), "{}", s(&d));
        d.set_text(a, "x&y").unwrap();
        assert!(
            s(&d).contains(r#"<m:a xmlns:m="urn:m">x&amp;y</m:a>"#),
            "{}",
            s(&d)
        );
        d.remove(a).unwrap();
        assert!(!s(&d).contains("m:a"));
        let root = d.root_element().unwrap().id();
        assert!(d.remove(root).is_err());
        assert!(d.insert(root, &f, Placement::After).is_err());
    }

    #[test]
    fn soap_header_is_created_before_the_body_and_payload_replaced() {
        let mut d = Document::parse(ENV.as_bytes()).unwrap();
        let h = d.ensure_soap_header().unwrap().unwrap();
        assert_eq!(d.ensure_soap_header().unwrap(), Some(h));
        assert!(s(&d).contains("<s:Header/><s:Body>"), "{}", s(&d));
        d.replace_payload(&Fragment::parse("<p>1</p> <q/>").unwrap())
            .unwrap();
        assert!(
            s(&d).ends_with("<s:Body><p>1</p><q/></s:Body></s:Envelope>"),
            "{}",
            s(&d)
        );
        let mut pox = Document::parse(b"<a><b/></a>").unwrap();
        assert_eq!(pox.ensure_soap_header().unwrap(), None);
        pox.replace_payload(&Fragment::parse("<n>2</n><o/>").unwrap())
            .unwrap();
        assert_eq!(s(&pox), "<n>2</n>");
    }

    #[test]
    fn attribute_values_can_be_set() {
        let mut d = Document::parse(br#"<a k="1"/>"#).unwrap();
        let attr = d.root_element().unwrap().attributes().next().unwrap().id();
        d.set_text(attr, "a&b").unwrap();
        assert_eq!(s(&d), r#"<a k="a&amp;b"/>"#);
    }
}
