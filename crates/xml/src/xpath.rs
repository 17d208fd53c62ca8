//! XPath 1.0: compile once, evaluate in a context each thread keeps.
//!
//! libxml2's `xmlXPathNewContext` registers every core function in a new hash table: about 2.5 µs,
//! five times the evaluation of a short path over a small document. So each thread creates one
//! context and every evaluation on that thread borrows it, setting the document, the context node,
//! the expression's namespaces and the resolver's callbacks, and clearing them again afterwards, as
//! libxslt does with its transformation's context. An evaluation started from inside another one's
//! callbacks (the context is taken) gets a context of its own.

use crate::document::{take_xml_string, Document, Node};
use crate::error::{Capture, XmlError, XmlErrorKind};
use crate::parse::cstr_lossy;
use libxml::bindings::{
    valuePush, xmlChar, xmlElementType_XML_NAMESPACE_DECL, xmlHashLookup2, xmlNodeGetContent,
    xmlNodePtr, xmlNs, xmlXPathCastToBoolean, xmlXPathCastToNumber, xmlXPathCompExpr,
    xmlXPathCompile, xmlXPathCompiledEval, xmlXPathContextPtr, xmlXPathErr,
    xmlXPathError_XPATH_EXPR_ERROR, xmlXPathFreeCompExpr, xmlXPathFreeContext, xmlXPathFreeObject,
    xmlXPathFunction, xmlXPathNewContext, xmlXPathNewString, xmlXPathNodeSetSort,
    xmlXPathObjectPtr, xmlXPathObjectType_XPATH_BOOLEAN, xmlXPathObjectType_XPATH_NODESET,
    xmlXPathObjectType_XPATH_NUMBER, xmlXPathObjectType_XPATH_STRING,
    xmlXPathObjectType_XPATH_XSLT_TREE, xmlXPathParserContextPtr, xmlXPathPopString,
    xmlXPathRegisterFuncLookup, xmlXPathRegisterVariableLookup,
};
use std::any::Any;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::hash::BuildHasher;
use std::os::raw::c_int;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};

/// Supplies values for XPath variables (`$name`), as strings, and extension functions over strings.
pub trait VariableResolver {
    /// The value of variable `name` (in namespace `ns_uri` for `$p:name`),
    /// or `None` if undefined (evaluation then fails).
    fn resolve(&self, name: &str, ns_uri: Option<&str>) -> Option<String>;

    /// Names (without a namespace) of the extension functions [`VariableResolver::call`] answers,
    /// looked up by libxml2 when an expression calls a function it does not know.
    fn functions(&self) -> &[&CStr] {
        &[]
    }

    /// Extension function `name` on its arguments' string values (XPath `string()` of each): the
    /// result, or why the evaluation fails.
    fn call(&self, name: &str, args: &[String]) -> Result<String, String> {
        let _ = args;
        Err(format!("unknown function {name}()"))
    }
}

/// No variables.
impl VariableResolver for () {
    fn resolve(&self, _name: &str, _ns_uri: Option<&str>) -> Option<String> {
        None
    }
}

impl<S: BuildHasher> VariableResolver for HashMap<String, String, S> {
    fn resolve(&self, name: &str, ns_uri: Option<&str>) -> Option<String> {
        ns_uri.is_none().then(|| self.get(name).cloned()).flatten()
    }
}

impl VariableResolver for BTreeMap<String, String> {
    fn resolve(&self, name: &str, ns_uri: Option<&str>) -> Option<String> {
        ns_uri.is_none().then(|| self.get(name).cloned()).flatten()
    }
}

impl VariableResolver for [(&str, &str)] {
    fn resolve(&self, name: &str, ns_uri: Option<&str>) -> Option<String> {
        if ns_uri.is_some() {
            return None;
        }
        self.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

impl<const N: usize> VariableResolver for [(&str, &str); N] {
    fn resolve(&self, name: &str, ns_uri: Option<&str>) -> Option<String> {
        self[..].resolve(name, ns_uri)
    }
}

impl<T: VariableResolver + ?Sized> VariableResolver for &T {
    fn resolve(&self, name: &str, ns_uri: Option<&str>) -> Option<String> {
        (**self).resolve(name, ns_uri)
    }
    fn functions(&self) -> &[&CStr] {
        (**self).functions()
    }
    fn call(&self, name: &str, args: &[String]) -> Result<String, String> {
        (**self).call(name, args)
    }
}

/// Makes any (possibly unsized) resolver usable as `&dyn VariableResolver`.
struct Unsized<'v, V: ?Sized>(&'v V);

impl<V: VariableResolver + ?Sized> VariableResolver for Unsized<'_, V> {
    fn resolve(&self, name: &str, ns_uri: Option<&str>) -> Option<String> {
        self.0.resolve(name, ns_uri)
    }
    fn functions(&self) -> &[&CStr] {
        self.0.functions()
    }
    fn call(&self, name: &str, args: &[String]) -> Result<String, String> {
        self.0.call(name, args)
    }
}

/// The result of an XPath evaluation.
#[derive(Debug, Clone, PartialEq)]
pub enum XPathValue<'a> {
    /// A node-set in document order. Namespace nodes (`namespace::*`) are
    /// not represented (libxml2 only has temporary copies of them).
    NodeSet(Vec<Node<'a>>),
    /// A string.
    String(String),
    /// A number.
    Number(f64),
    /// A boolean.
    Boolean(bool),
}

/// A compiled XPath 1.0 expression with its namespace bindings.
///
/// Compiled once, evaluated many times; `Send + Sync`, so one instance can
/// be shared by all threads.
pub struct XPath {
    comp: NonNull<xmlXPathCompExpr>,
    expr: String,
    /// The prefix and URI strings the namespace records point into.
    _strings: Vec<(CString, CString)>,
    /// The bindings as libxml2 reads them in a context's `namespaces` array (`xmlXPathNsLookup`
    /// looks there first): records that live as long as the expression...
    _records: Vec<xmlNs>,
    /// ...and the array of pointers to them.
    namespaces: Vec<*mut xmlNs>,
}

// SAFETY: after xmlXPathCompile returns, evaluation (xmlXPathCompiledEval
// builds a fresh parser context per call) only reads the compiled expression,
// with one exception: libxml2 2.9 stores the function it resolved for a call
// in that call's step (`op->cache`, `op->cacheURI`) on first evaluation.
// Threads racing there write the same values: a core function's fixed
// address, or, for the extension functions resolvers offer, always
// `call_function` (every name resolves to it; the name is read per call from
// the context; `function_lookup` never offers it for a core function's name). It is freed only in Drop, which needs exclusive ownership.
// The namespace records and the array of pointers to them are built in
// `compile` and never written again: libxml2 only reads them (prefix and
// href) through a context's `namespaces` field during an evaluation.
unsafe impl Send for XPath {}
// SAFETY: see `Send`: concurrent evaluations only read the compiled
// expression and its namespace records; every mutable structure is the
// evaluating thread's (its kept XPath context, or one made for the call).
unsafe impl Sync for XPath {}

impl Drop for XPath {
    fn drop(&mut self) {
        // SAFETY: created by xmlXPathCompile, freed exactly once here.
        unsafe { xmlXPathFreeCompExpr(self.comp.as_ptr()) };
    }
}

impl fmt::Debug for XPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XPath").field("expr", &self.expr).finish()
    }
}

/// An XPath context of our own (the thread's, or a nested evaluation's).
struct ContextGuard(xmlXPathContextPtr);

impl ContextGuard {
    fn new() -> Result<ContextGuard, XmlError> {
        // SAFETY: creates a context bound to no document (each evaluation sets its own); NULL
        // only when out of memory.
        let ctxt = unsafe { xmlXPathNewContext(ptr::null_mut()) };
        if ctxt.is_null() {
            return Err(XmlError::new(
                XmlErrorKind::OutOfMemory,
                "xmlXPathNewContext failed",
            ));
        }
        Ok(ContextGuard(ctxt))
    }
}

thread_local! {
    /// The context every evaluation on this thread borrows (created on first use).
    static CONTEXT: RefCell<Option<ContextGuard>> = const { RefCell::new(None) };
}

/// A context lent to one evaluation: on drop, every pointer the evaluation set in it is cleared,
/// so that nothing in a kept context points at a freed document, expression or resolver.
struct Lent(xmlXPathContextPtr);

impl Drop for Lent {
    fn drop(&mut self) {
        // SAFETY: a live context, used by no one else while lent.
        unsafe {
            let c = &mut *self.0;
            c.doc = ptr::null_mut();
            c.node = ptr::null_mut();
            c.namespaces = ptr::null_mut();
            c.nsNr = 0;
            c.userData = ptr::null_mut();
            c.varLookupFunc = None;
            c.varLookupData = ptr::null_mut();
            c.funcLookupFunc = None;
            c.funcLookupData = ptr::null_mut();
            c.function = ptr::null();
            c.functionURI = ptr::null();
        }
    }
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        // SAFETY: created by xmlXPathNewContext, freed exactly once here.
        unsafe { xmlXPathFreeContext(self.0) };
    }
}

struct ObjectGuard(xmlXPathObjectPtr);

impl Drop for ObjectGuard {
    fn drop(&mut self) {
        // SAFETY: returned by xmlXPathCompiledEval and owned by us.
        unsafe { xmlXPathFreeObject(self.0) };
    }
}

struct VarState<'r> {
    resolver: &'r dyn VariableResolver,
    /// The context evaluating (for its table of core functions).
    ctxt: xmlXPathContextPtr,
    panic: Option<Box<dyn Any + Send + 'static>>,
    /// Why an extension function failed.
    error: Option<String>,
}

/// Every extension function: calls [`VariableResolver::call`] of the evaluation's resolver (the
/// context's `userData`) by the name libxml2 is calling, with the arguments popped as strings.
unsafe extern "C" fn call_function(ctxt: xmlXPathParserContextPtr, nargs: c_int) {
    // SAFETY: libxml2 calls this with a live parser context during an evaluation that `evaluate`
    // set up: its XPath context's `userData` is that evaluation's VarState (alive for the whole
    // evaluation, touched only from this thread), and `function` is the name being called.
    unsafe {
        let context = (*ctxt).context;
        let state = &mut *((*context).userData as *mut VarState<'_>);
        let name = cstr_lossy((*context).function);
        let mut args = Vec::with_capacity(usize::try_from(nargs).unwrap_or(0));
        for _ in 0..nargs {
            // Popped last argument first; each string is ours to free.
            args.push(take_xml_string(xmlXPathPopString(ctxt)).unwrap_or_default());
        }
        if (*ctxt).error != 0 || state.panic.is_some() {
            return;
        }
        args.reverse();
        let resolver = state.resolver;
        let result = match catch_unwind(AssertUnwindSafe(|| resolver.call(&name, &args))) {
            Ok(r) => r,
            Err(payload) => {
                state.panic = Some(payload);
                Err(String::new())
            }
        };
        match result.map(CString::new) {
            // xmlXPathNewString copies the value; the stack takes the object.
            Ok(Ok(v)) => {
                valuePush(ctxt, xmlXPathNewString(v.as_ptr() as *const xmlChar));
            }
            Ok(Err(_)) => {
                state.error = Some(format!("{name}() gave a value with a NUL character"));
                xmlXPathErr(ctxt, xmlXPathError_XPATH_EXPR_ERROR as c_int);
            }
            Err(why) => {
                state.error.get_or_insert(why);
                xmlXPathErr(ctxt, xmlXPathError_XPATH_EXPR_ERROR as c_int);
            }
        }
    }
}

/// Resolves a function for libxml2, which asks this before its own table: [`call_function`] for
/// the names the evaluation's resolver offers (without a namespace) that are not core functions
/// (a resolver cannot shadow `concat`), else none (libxml2 then looks in its table, and reports an
/// unknown function when it is not there).
unsafe extern "C" fn function_lookup(
    data: *mut c_void,
    name: *const xmlChar,
    ns_uri: *const xmlChar,
) -> xmlXPathFunction {
    if !ns_uri.is_null() || name.is_null() {
        return None;
    }
    // SAFETY: `data` is the VarState registered by `evaluate`, alive for the whole evaluation and
    // only touched from this thread; libxml2 passes a NUL-terminated name.
    let (state, name) = unsafe {
        (
            &mut *(data as *mut VarState<'_>),
            CStr::from_ptr(name.cast()),
        )
    };
    if state.panic.is_some() {
        return None;
    }
    // SAFETY: `state.ctxt` is the live context of this evaluation; its function table holds the
    // core functions xmlXPathNewContext registered (by name, without a namespace).
    if unsafe {
        !xmlHashLookup2((*state.ctxt).funcHash, name.as_ptr().cast(), ptr::null()).is_null()
    } {
        return None;
    }
    let resolver = state.resolver;
    match catch_unwind(AssertUnwindSafe(|| resolver.functions().contains(&name))) {
        Ok(known) => known.then_some(call_function as unsafe extern "C" fn(_, _)),
        Err(payload) => {
            state.panic = Some(payload);
            None
        }
    }
}

unsafe extern "C" fn variable_lookup(
    data: *mut c_void,
    name: *const xmlChar,
    ns_uri: *const xmlChar,
) -> xmlXPathObjectPtr {
    // SAFETY: `data` is the VarState registered by `evaluate`, alive for the
    // whole evaluation, only touched from this (the evaluating) thread.
    let state = unsafe { &mut *(data as *mut VarState<'_>) };
    if state.panic.is_some() {
        return ptr::null_mut();
    }
    // SAFETY: libxml2 passes NUL-terminated strings (ns_uri may be NULL).
    let (name, ns) = unsafe {
        (
            cstr_lossy(name),
            (!ns_uri.is_null()).then(|| cstr_lossy(ns_uri)),
        )
    };
    let resolver = state.resolver;
    match catch_unwind(AssertUnwindSafe(|| resolver.resolve(&name, ns.as_deref()))) {
        Ok(Some(value)) => match CString::new(value) {
            // SAFETY: xmlXPathNewString copies the string; the returned
            // object is handed to (and freed by) libxml2.
            Ok(v) => unsafe { xmlXPathNewString(v.as_ptr() as *const xmlChar) },
            Err(_) => ptr::null_mut(),
        },
        Ok(None) => ptr::null_mut(),
        Err(payload) => {
            state.panic = Some(payload);
            ptr::null_mut()
        }
    }
}

impl XPath {
    /// Compiles `expr`; `namespaces` are `(prefix, uri)` bindings used when
    /// evaluating.
    pub fn compile(expr: &str, namespaces: &[(&str, &str)]) -> Result<XPath, XmlError> {
        crate::init();
        let c_expr = CString::new(expr)
            .map_err(|_| XmlError::new(XmlErrorKind::InvalidArgument, "expression contains NUL"))?;
        if let Some((p, _)) = namespaces.iter().find(|(p, _)| p.is_empty()) {
            return Err(XmlError::new(
                XmlErrorKind::InvalidArgument,
                format!("cannot bind namespace prefix '{p}'"),
            ));
        }
        let strings = namespaces
            .iter()
            .map(|(p, u)| Ok((CString::new(*p)?, CString::new(*u)?)))
            .collect::<Result<Vec<_>, std::ffi::NulError>>()
            .map_err(|_| {
                XmlError::new(
                    XmlErrorKind::InvalidArgument,
                    "namespace binding contains NUL",
                )
            })?;
        // The CStrings' bytes are on the heap: moving the vector into the XPath below does not
        // move them, so the records' pointers stay valid as long as the XPath.
        let mut records: Vec<xmlNs> = strings
            .iter()
            .map(|(prefix, uri)| xmlNs {
                next: ptr::null_mut(),
                type_: xmlElementType_XML_NAMESPACE_DECL,
                href: uri.as_ptr() as *const xmlChar,
                prefix: prefix.as_ptr() as *const xmlChar,
                _private: ptr::null_mut(),
                context: ptr::null_mut(),
            })
            .collect();
        // libxml2 takes the first record with the prefix; as with xmlXPathRegisterNs, the last
        // binding given for a prefix is the one that counts.
        let namespaces: Vec<*mut xmlNs> =
            records.iter_mut().rev().map(|r| r as *mut xmlNs).collect();
        if c_int::try_from(namespaces.len()).is_err() {
            return Err(XmlError::new(
                XmlErrorKind::InvalidArgument,
                "too many namespace bindings",
            ));
        }
        let capture = Capture::start();
        // SAFETY: compiles a NUL-terminated expression; returns NULL or a new
        // compiled expression that we own.
        let comp = unsafe { xmlXPathCompile(c_expr.as_ptr() as *const xmlChar) };
        let diags = capture.finish();
        match NonNull::new(comp) {
            Some(comp) => Ok(XPath {
                comp,
                expr: expr.to_string(),
                _strings: strings,
                _records: records,
                namespaces,
            }),
            None => {
                let e = XmlError::from_diagnostics(
                    XmlErrorKind::XPathCompile,
                    "invalid expression",
                    &diags,
                );
                let msg = format!("{} in '{}'", e.message(), expr);
                Err(XmlError::new(XmlErrorKind::XPathCompile, msg)
                    .with_details(e.details().to_vec()))
            }
        }
    }

    /// The source text of the expression.
    pub fn as_str(&self) -> &str {
        &self.expr
    }

    /// Evaluates with `context` as context node and hands the raw result to
    /// `f` (which must not keep it).
    fn evaluate<'a, R, V: VariableResolver + ?Sized>(
        &self,
        context: Node<'a>,
        vars: &V,
        f: impl FnOnce(xmlXPathObjectPtr) -> R,
    ) -> Result<R, XmlError> {
        let capture = Capture::start();
        let vars = Unsized(vars);
        let mut state = VarState {
            resolver: &vars,
            ctxt: ptr::null_mut(),
            panic: None,
            error: None,
        };
        let node = context.as_ptr();
        let state_ptr = &mut state as *mut VarState<'_> as *mut c_void;
        let mut f = Some(f);
        let mut run = |ctxt: xmlXPathContextPtr| {
            // SAFETY: `ctxt` is a live context that no other evaluation is using (this thread's,
            // borrowed through its RefCell, or one of this evaluation's own). `node` is a live
            // node of a document borrowed for 'a; its `doc` header field is that document. The
            // namespace array and records belong to `self` and outlive the evaluation (libxml2
            // only reads them); `state` outlives the evaluation that may call
            // `variable_lookup`, `function_lookup` and `call_function` with it. `Lent` clears
            // every pointer set here when the evaluation ends, also by unwinding.
            unsafe {
                let lent = Lent(ctxt);
                let c = &mut *ctxt;
                c.doc = (*node).doc;
                c.node = node;
                c.namespaces = self.namespaces.as_ptr() as *mut *mut xmlNs;
                // At most c_int::MAX records (checked in `compile`).
                c.nsNr = c_int::try_from(self.namespaces.len()).unwrap_or(0);
                // What xmlXPathNewContext starts with, in case an evaluation left them changed.
                c.contextSize = -1;
                c.proximityPosition = -1;
                c.depth = 0;
                c.opCount = 0;
                xmlXPathRegisterVariableLookup(ctxt, Some(variable_lookup), state_ptr);
                xmlXPathRegisterFuncLookup(ctxt, Some(function_lookup), state_ptr);
                c.userData = state_ptr;
                (*(state_ptr as *mut VarState<'_>)).ctxt = ctxt;
                let obj = xmlXPathCompiledEval(self.comp.as_ptr(), ctxt);
                // The object is freed before the context is given back (guards drop in reverse
                // order); `f` runs while both are alive.
                let obj = (!obj.is_null()).then_some(ObjectGuard(obj));
                let r = obj.and_then(|o| f.take().map(|f| f(o.0)));
                drop(lent);
                r
            }
        };
        let result = CONTEXT
            .try_with(|cell| match cell.try_borrow_mut() {
                Ok(mut slot) => {
                    if slot.is_none() {
                        *slot = Some(ContextGuard::new()?);
                    }
                    Ok(slot.as_ref().and_then(|c| run(c.0)))
                }
                // Called from inside another evaluation's callbacks on this thread.
                Err(_) => Ok(run(ContextGuard::new()?.0)),
            })
            .unwrap_or_else(|_| Ok(run(ContextGuard::new()?.0)))?;
        let diags = capture.finish();
        if let Some(payload) = state.panic.take() {
            resume_unwind(payload);
        }
        if let (None, Some(why)) = (&result, state.error.take()) {
            return Err(XmlError::new(
                XmlErrorKind::XPathEval,
                format!("{why} in '{}'", self.expr),
            ));
        }
        result.ok_or_else(|| {
            let e =
                XmlError::from_diagnostics(XmlErrorKind::XPathEval, "evaluation failed", &diags);
            let msg = format!("{} in '{}'", e.message(), self.expr);
            XmlError::new(XmlErrorKind::XPathEval, msg).with_details(e.details().to_vec())
        })
    }

    /// Evaluates against `doc` (the document node is the context node).
    pub fn eval<'a, V: VariableResolver + ?Sized>(
        &self,
        doc: &'a Document,
        vars: &V,
    ) -> Result<XPathValue<'a>, XmlError> {
        self.eval_at(doc.as_node(), vars)
    }

    /// Evaluates with `node` as the context node.
    pub fn eval_at<'a, V: VariableResolver + ?Sized>(
        &self,
        node: Node<'a>,
        vars: &V,
    ) -> Result<XPathValue<'a>, XmlError> {
        self.evaluate(node, vars, |obj| {
            // SAFETY: `obj` is a live result object; node pointers in its
            // node-set are nodes of the document borrowed for 'a (namespace
            // items, which are temporary copies, are skipped).
            unsafe { to_value::<'a>(obj) }
        })?
    }

    /// Evaluates to a string with Synapse's string-value rule: for a
    /// node-set, the text content of *every* node, concatenated in document
    /// order (not XPath `string()`, which takes the first node only);
    /// numbers as Java writes a double ([`java_double`]: `count(...)` is
    /// `3.0`); booleans `true`/`false`.
    pub fn eval_string<V: VariableResolver + ?Sized>(
        &self,
        doc: &Document,
        vars: &V,
    ) -> Result<String, XmlError> {
        self.eval_string_at(doc.as_node(), vars)
    }

    /// [`XPath::eval_string`] with `node` as the context node.
    pub fn eval_string_at<V: VariableResolver + ?Sized>(
        &self,
        node: Node<'_>,
        vars: &V,
    ) -> Result<String, XmlError> {
        self.evaluate(node, vars, |obj| {
            // SAFETY: `obj` is a live result object.
            unsafe { string_value(obj) }
        })
    }

    /// Evaluates to a boolean (XPath `boolean()` rules: non-empty node-set,
    /// non-empty string, non-zero number).
    pub fn eval_bool<V: VariableResolver + ?Sized>(
        &self,
        doc: &Document,
        vars: &V,
    ) -> Result<bool, XmlError> {
        self.eval_bool_at(doc.as_node(), vars)
    }

    /// [`XPath::eval_bool`] with `node` as the context node.
    pub fn eval_bool_at<V: VariableResolver + ?Sized>(
        &self,
        node: Node<'_>,
        vars: &V,
    ) -> Result<bool, XmlError> {
        self.evaluate(node, vars, |obj| {
            // SAFETY: `obj` is a live result object.
            unsafe { xmlXPathCastToBoolean(obj) != 0 }
        })
    }

    /// Evaluates to a number (XPath `number()` rules).
    pub fn eval_number<V: VariableResolver + ?Sized>(
        &self,
        doc: &Document,
        vars: &V,
    ) -> Result<f64, XmlError> {
        self.evaluate(doc.as_node(), vars, |obj| {
            // SAFETY: `obj` is a live result object.
            unsafe { xmlXPathCastToNumber(obj) }
        })
    }
}

/// A number as Synapse and WSO2 MI write an XPath's number result (`SynapseXPath.stringValueOf`
/// appends Java's `Double.toString`): `3.0` for `count(...)` where XPath's `string()` gives `3`,
/// `0.001` to `9999999.0` in plain digits, outside that `1.0E7`, `1.5E-4`; `NaN`, `Infinity`,
/// `-0.0`. The digits are the fewest that read back as the same number, as Java 19 and later
/// write them.
pub fn java_double(n: f64) -> String {
    java_number(n, || format!("{n}"), || format!("{n:e}"))
}

/// [`java_double`] for a Java `float` (Java's `Float.toString`, the fewest digits a float needs).
pub fn java_float(n: f32) -> String {
    java_number(f64::from(n), || format!("{n}"), || format!("{n:e}"))
}

/// Java's rules over Rust's shortest forms of the number, `plain` (no exponent) or `sci`: the one
/// it needs is written.
fn java_number(n: f64, plain: impl FnOnce() -> String, sci: impl FnOnce() -> String) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let a = n.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        let plain = plain();
        return if plain.contains('.') {
            plain
        } else {
            plain + ".0"
        };
    }
    let sci = sci();
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    if mantissa.contains('.') {
        format!("{mantissa}E{exp}")
    } else {
        format!("{mantissa}.0E{exp}")
    }
}

/// Node pointers of a node-set object, sorted in document order.
///
/// # Safety
/// `obj` must be a live XPath object.
unsafe fn node_set(obj: xmlXPathObjectPtr) -> Vec<xmlNodePtr> {
    // SAFETY: per the contract; the node set belongs to `obj` and sorting it
    // in place only reorders its pointer table.
    unsafe {
        let set = (*obj).nodesetval;
        if set.is_null() || (*set).nodeNr <= 0 || (*set).nodeTab.is_null() {
            return Vec::new();
        }
        xmlXPathNodeSetSort(set);
        std::slice::from_raw_parts((*set).nodeTab, (*set).nodeNr as usize).to_vec()
    }
}

fn is_namespace_item(p: xmlNodePtr) -> bool {
    // SAFETY: both xmlNode and xmlNs items of a node-set carry their type in
    // a field that libxml2 keeps at a position readable as `type_` for both
    // (xmlNs: next, type; xmlNode: _private, type), which is exactly how
    // libxml2 itself tells them apart.
    unsafe { (*p).type_ == xmlElementType_XML_NAMESPACE_DECL }
}

/// # Safety
/// `obj` must be a live XPath object whose nodes belong to a document
/// borrowed for `'a`.
unsafe fn to_value<'a>(obj: xmlXPathObjectPtr) -> Result<XPathValue<'a>, XmlError> {
    // SAFETY: per the contract.
    unsafe {
        let t = (*obj).type_;
        if t == xmlXPathObjectType_XPATH_NODESET || t == xmlXPathObjectType_XPATH_XSLT_TREE {
            let nodes = node_set(obj)
                .into_iter()
                .filter(|&p| !p.is_null() && !is_namespace_item(p))
                .filter_map(|p| Node::from_raw(p))
                .collect();
            Ok(XPathValue::NodeSet(nodes))
        } else if t == xmlXPathObjectType_XPATH_BOOLEAN {
            Ok(XPathValue::Boolean((*obj).boolval != 0))
        } else if t == xmlXPathObjectType_XPATH_NUMBER {
            Ok(XPathValue::Number((*obj).floatval))
        } else if t == xmlXPathObjectType_XPATH_STRING {
            Ok(XPathValue::String(cstr_lossy((*obj).stringval)))
        } else {
            Err(XmlError::new(
                XmlErrorKind::XPathEval,
                format!("unsupported XPath result type {t}"),
            ))
        }
    }
}

/// # Safety
/// `obj` must be a live XPath object.
unsafe fn string_value(obj: xmlXPathObjectPtr) -> String {
    // SAFETY: per the contract; node pointers are live nodes (or namespace
    // items, whose `href` we read through the xmlNs layout).
    unsafe {
        let t = (*obj).type_;
        if t == xmlXPathObjectType_XPATH_NODESET || t == xmlXPathObjectType_XPATH_XSLT_TREE {
            let mut out = String::new();
            for p in node_set(obj) {
                if p.is_null() {
                    continue;
                }
                if is_namespace_item(p) {
                    let ns = p as *const xmlNs;
                    out.push_str(&cstr_lossy((*ns).href));
                } else if let Some(s) = take_xml_string(xmlNodeGetContent(p)) {
                    out.push_str(&s);
                }
            }
            out
        } else if t == xmlXPathObjectType_XPATH_BOOLEAN {
            if (*obj).boolval != 0 { "true" } else { "false" }.to_string()
        } else if t == xmlXPathObjectType_XPATH_NUMBER {
            java_double((*obj).floatval)
        } else if t == xmlXPathObjectType_XPATH_STRING {
            cstr_lossy((*obj).stringval)
        } else {
            String::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{java_double, java_float, VariableResolver, XPath};
    use crate::Document;
    use std::ffi::CStr;

    /// `$n` is "3"; `twice(s)` repeats its argument, `fail()` fails.
    struct Funcs;
    impl VariableResolver for Funcs {
        fn resolve(&self, name: &str, _: Option<&str>) -> Option<String> {
            (name == "n").then(|| "3".to_owned())
        }
        fn functions(&self) -> &[&CStr] {
            &[c"twice", c"fail"]
        }
        fn call(&self, name: &str, args: &[String]) -> Result<String, String> {
            match (name, args) {
                ("twice", [a]) => Ok(format!("{a}{a}")),
                ("twice", _) => Err("twice() takes one argument".to_owned()),
                _ => Err("fail() always fails".to_owned()),
            }
        }
    }

    #[test]
    fn extension_functions_get_string_arguments() {
        let doc = Document::parse(b"<a><b>x</b><b>y</b></a>").unwrap();
        let eval = |e: &str| XPath::compile(e, &[]).unwrap().eval_string(&doc, &Funcs);
        // A node-set argument is its string(): the first node's text.
        assert_eq!(eval("twice(/a/b)").unwrap(), "xx");
        assert_eq!(
            eval("concat(twice($n), '-', twice(twice('z')))").unwrap(),
            "33-zzzz"
        );
        // The argument is XPath's string of 1.5; the number result is written as Java writes it.
        assert_eq!(eval("string-length(twice(1.5))").unwrap(), "6.0");
        let e = eval("concat('a', fail())").unwrap_err();
        assert!(e.to_string().contains("fail() always fails"), "{e}");
        let e = eval("twice('a', 'b')").unwrap_err();
        assert!(e.to_string().contains("takes one argument"), "{e}");
        // Without the resolver's functions, the name is unknown to libxml2.
        assert!(XPath::compile("twice('a')", &[])
            .unwrap()
            .eval_string(&doc, &())
            .is_err());
    }

    #[test]
    fn numbers_format_like_synapse() {
        // Java's Double.toString (JDK 19 and later, which writes the fewest digits).
        for (n, java) in [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (14.56, "14.56"),
            (-3.0, "-3.0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (0.001, "0.001"),
            (0.000_999, "9.99E-4"),
            (9_999_999.0, "9999999.0"),
            (10_000_000.0, "1.0E7"),
            (12_345_678.9, "1.23456789E7"),
            (3e20, "3.0E20"),
            (-1.5e-7, "-1.5E-7"),
            (1.0 / 3.0, "0.3333333333333333"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
        ] {
            assert_eq!(java_double(n), java, "{n}");
        }
        // Float.toString: a float's own fewest digits.
        assert_eq!(java_float(0.1), "0.1");
        assert_eq!(java_float(3.0), "3.0");
        assert_eq!(java_float(1.0e10), "1.0E10");
    }
}
