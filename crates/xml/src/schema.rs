//! W3C XML Schema (XSD 1.0) validation through libxml2.

use crate::document::{Document, Node};
use crate::error::{allocated, Capture, XmlError, XmlErrorKind};
use crate::parse::{parse_raw, Limits};
use libxml::bindings::{
    xmlSchema, xmlSchemaFree, xmlSchemaFreeParserCtxt, xmlSchemaFreeValidCtxt,
    xmlSchemaNewDocParserCtxt, xmlSchemaNewValidCtxt, xmlSchemaParse, xmlSchemaValidateDoc,
};
use std::fmt;
use std::ptr::NonNull;

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
/// libxml2 external entity loader refuses every load (see `crate::init`).
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
        let doc = parse_raw(xsd, &Limits::default(), None).map_err(|e| {
            XmlError::new(
                XmlErrorKind::SchemaCompile,
                format!("schema is not well-formed: {}", e.message()),
            )
            .at(e.line(), e.column())
        })?;
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
