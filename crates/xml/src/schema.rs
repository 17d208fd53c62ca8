//! W3C XML Schema (XSD 1.0) validation through libxml2.

use crate::document::{Document, Node};
use crate::error::{allocated, Capture, XmlError, XmlErrorKind};
use crate::parse::{parse_raw, Limits};
use libxml::bindings::{
    xmlSchema, xmlSchemaFree, xmlSchemaFreeParserCtxt, xmlSchemaFreeValidCtxt,
    xmlSchemaNewDocParserCtxt, xmlSchemaNewValidCtxt, xmlSchemaParse, xmlSchemaValidateDoc,
};
use std::cell::RefCell;
use std::fmt;
use std::ptr::NonNull;

thread_local! {
    /// The documents the external entity loader serves on this thread while
    /// [`Schema::compile_set`] compiles: (location, text ending with a NUL byte).
    static LOADABLE: RefCell<Vec<(Vec<u8>, Vec<u8>)>> = const { RefCell::new(Vec::new()) };
}

/// The text (NUL-terminated) the schema set being compiled on this thread has for `url`. The
/// pointer stays valid until that compile returns: the table is only changed before and after it.
pub(crate) fn loadable(url: &[u8]) -> Option<*const u8> {
    LOADABLE.with(|t| {
        t.borrow()
            .iter()
            .find(|(location, _)| location == url)
            .map(|(_, text)| text.as_ptr())
    })
}

/// Takes the thread's table of loadable documents down when dropped (also on unwinding).
struct Served;

impl Served {
    fn install(table: Vec<(Vec<u8>, Vec<u8>)>) -> Served {
        LOADABLE.with(|t| *t.borrow_mut() = table);
        Served
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        LOADABLE.with(|t| t.borrow_mut().clear());
    }
}

/// `text` with a NUL byte after it (XML text has none of its own).
fn nul_terminated(text: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(text.len() + 1);
    v.extend_from_slice(text);
    v.push(0);
    v
}

/// `s` as the value of a double-quoted attribute.
fn attr_escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
}

/// A compiled XML Schema.
///
/// `Send + Sync`: compile once at load and share; every validation creates its own libxml2
/// validation context (`xmlSchemaNewValidCtxt`), which holds all per-run state (its own
/// dictionary, element stack, IDC tables, regex execution contexts). libxml2 only reads the
/// compiled `xmlSchema` while validating (lxml relies on the same property when it validates
/// with one schema from several threads); it is freed only in `Drop`, which needs exclusive
/// ownership.
///
/// Compilation never reads files or the network: the schema text is parsed with the secure parser,
/// and `xs:import` / `xs:include` / `xs:redefine` with a `schemaLocation` fail, because Sluice's
/// libxml2 external entity loader refuses every load (see `crate::init`), but for the documents
/// given to [`Schema::compile_set`], read from memory while it runs.
pub struct Schema {
    schema: NonNull<xmlSchema>,
}

// SAFETY: see the type's documentation: the compiled schema is read-only during validation, all
// mutable state lives in the per-call validation context, and it is freed only in Drop.
unsafe impl Send for Schema {}
// SAFETY: as for Send; concurrent validations only read the schema.
unsafe impl Sync for Schema {}

impl Drop for Schema {
    fn drop(&mut self) {
        // SAFETY: created by xmlSchemaParse, freed exactly once here.
        unsafe { xmlSchemaFree(self.schema.as_ptr()) };
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema").finish_non_exhaustive()
    }
}

/// Why a document is not valid: libxml2's messages, in order (at least one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub messages: Vec<String>,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.messages.first().map_or("invalid", String::as_str))
    }
}

struct ParserCtxt(*mut libxml::bindings::xmlSchemaParserCtxt);
impl Drop for ParserCtxt {
    fn drop(&mut self) {
        // SAFETY: created by xmlSchemaNewDocParserCtxt, freed once.
        unsafe { xmlSchemaFreeParserCtxt(self.0) };
    }
}

struct ValidCtxt(*mut libxml::bindings::xmlSchemaValidCtxt);
impl Drop for ValidCtxt {
    fn drop(&mut self) {
        // SAFETY: created by xmlSchemaNewValidCtxt, freed once.
        unsafe { xmlSchemaFreeValidCtxt(self.0) };
    }
}

impl Schema {
    /// Parses (securely) and compiles an XSD.
    pub fn compile(xsd: &[u8]) -> Result<Schema, XmlError> {
        let doc = parse_raw(xsd, &Limits::default(), None).map_err(not_well_formed)?;
        let capture = Capture::start();
        // SAFETY: `doc` is a live document we own and keep alive until after xmlSchemaParse and
        // the parser context are done with it (the parser context does not take ownership of a
        // document given to xmlSchemaNewDocParserCtxt; the compiled schema keeps no pointer into
        // it). Errors go to the thread's structured handler, which `capture` installed.
        let schema = unsafe {
            let pctxt = xmlSchemaNewDocParserCtxt(doc.as_ptr());
            let pctxt = ParserCtxt(allocated(pctxt, "xmlSchemaNewDocParserCtxt failed")?);
            let s = xmlSchemaParse(pctxt.0);
            drop(pctxt);
            s
        };
        drop(doc);
        let diags = capture.finish();
        match NonNull::new(schema) {
            Some(schema) => Ok(Schema { schema }),
            None => Err(XmlError::from_diagnostics(
                XmlErrorKind::SchemaCompile,
                "not a valid XML Schema",
                &diags,
            )),
        }
    }

    /// Compiles several schemas as one, as Java's `SchemaFactory.newSchema(Source[])` does for
    /// Synapse's `validate` with several `<schema>`s: an element is checked against whichever
    /// declares it, and schemas of one target namespace are read together. `resources` are the
    /// documents (location, text) their `xs:import` / `xs:include` `schemaLocation`s name
    /// (Synapse's `<resource location key>`); no other location is read. A generated schema
    /// imports each namespace's schemas (or includes those without one), each read from memory.
    pub fn compile_set(xsds: &[&[u8]], resources: &[(&str, &[u8])]) -> Result<Schema, XmlError> {
        if let ([one], []) = (xsds, resources) {
            return Schema::compile(one);
        }
        let mut table: Vec<(Vec<u8>, Vec<u8>)> = resources
            .iter()
            .map(|(location, text)| (location.as_bytes().to_vec(), nul_terminated(text)))
            .collect();
        // (target namespace, the schemas' locations), in the order first met.
        let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
        for (k, xsd) in xsds.iter().enumerate() {
            let tns = target_namespace(xsd)?;
            let location = format!("sluice-schema-{k}");
            table.push((location.clone().into_bytes(), nul_terminated(xsd)));
            match groups.iter_mut().find(|g| g.0 == tns) {
                Some(g) => g.1.push(location),
                None => groups.push((tns, vec![location])),
            }
        }
        const XS: &str = "http://www.w3.org/2001/XMLSchema";
        let includes = |locations: &[String]| -> String {
            locations
                .iter()
                .map(|l| format!("<xs:include schemaLocation=\"{l}\"/>"))
                .collect()
        };
        let mut top = format!("<xs:schema xmlns:xs=\"{XS}\">");
        for (g, (tns, locations)) in groups.iter().enumerate() {
            match (tns, locations.as_slice()) {
                (None, _) => top.push_str(&includes(locations)),
                (Some(ns), [one]) => top.push_str(&format!(
                    "<xs:import namespace=\"{}\" schemaLocation=\"{one}\"/>",
                    attr_escaped(ns)
                )),
                (Some(ns), _) => {
                    let ns = attr_escaped(ns);
                    let location = format!("sluice-namespace-{g}");
                    let wrapper = format!(
                        "<xs:schema xmlns:xs=\"{XS}\" targetNamespace=\"{ns}\">{}</xs:schema>",
                        includes(locations)
                    );
                    table.push((
                        location.clone().into_bytes(),
                        nul_terminated(wrapper.as_bytes()),
                    ));
                    top.push_str(&format!(
                        "<xs:import namespace=\"{ns}\" schemaLocation=\"{location}\"/>"
                    ));
                }
            }
        }
        top.push_str("</xs:schema>");
        let _served = Served::install(table);
        Schema::compile(top.as_bytes())
    }

    /// Validates a whole document. `Ok(Err(..))` when it is not valid; `Err` when validation could
    /// not run.
    pub fn validate(&self, doc: &Document) -> Result<Result<(), Invalid>, XmlError> {
        let capture = Capture::start();
        // SAFETY: the schema is live and only read; the validation context is created and freed
        // here; `doc` is a live document borrowed for the call (validation without the
        // XML_SCHEMA_VAL_VC_I_CREATE option does not change it). Errors go to the structured
        // handler `capture` installed for this thread.
        let rc = unsafe {
            let vctxt = xmlSchemaNewValidCtxt(self.schema.as_ptr());
            let vctxt = ValidCtxt(allocated(vctxt, "xmlSchemaNewValidCtxt failed")?);
            xmlSchemaValidateDoc(vctxt.0, doc.doc_ptr())
        };
        let diags = capture.finish();
        if rc == 0 {
            return Ok(Ok(()));
        }
        if rc < 0 {
            return Err(XmlError::from_diagnostics(
                XmlErrorKind::InvalidArgument,
                "schema validation could not run",
                &diags,
            ));
        }
        let mut messages: Vec<String> = diags
            .iter()
            .filter(|d| d.is_error)
            .map(|d| d.message.clone())
            .collect();
        if messages.is_empty() {
            messages.push(format!("not valid (libxml2 code {rc})"));
        }
        Ok(Err(Invalid { messages }))
    }

    /// Validates one element as the root of a document of its own (a copy declaring the namespaces
    /// it uses).
    pub fn validate_element(&self, node: Node<'_>) -> Result<Result<(), Invalid>, XmlError> {
        let copy = crate::Fragment::from_nodes(&[node])?.into_document()?;
        self.validate(&copy)
    }
}

/// The `targetNamespace` of a schema's text (`None`: no namespace).
fn target_namespace(xsd: &[u8]) -> Result<Option<String>, XmlError> {
    let doc = crate::parse_untrusted(xsd, &Limits::default()).map_err(not_well_formed)?;
    Ok(doc
        .root_element()
        .and_then(|r| r.attribute("targetNamespace"))
        .filter(|ns| !ns.is_empty()))
}

/// A schema's text the parser refused, as a compile error at the parser's place.
fn not_well_formed(e: XmlError) -> XmlError {
    XmlError::new(
        XmlErrorKind::SchemaCompile,
        format!("schema is not well-formed: {}", e.message()),
    )
    .at(e.line(), e.column())
}
