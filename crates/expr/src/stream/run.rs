//! The reading's state, which both tokenizers drive, and the general reader on quick-xml.
//!
//! [`Run`] is told of each element's start and end and of each piece of text. It keeps one
//! [`Frame`] per open element: the steps the element matches, the counters of its children's
//! position predicates, its `[child='x']` conditions. An element's match may wait on conditions
//! known only at a child's end. Matches of the last step become results, in document order. The
//! results whose conditions hold, and whose text is complete, go to the [`Sink`], which decides
//! the answer ([`Run::decided`]).
//!
//! An element no step can match from where it stands is inert ([`Run::inert_child`]): it is only
//! counted for depth. Under `//order[1]`, every `order` after the first is inert.
//!
//! [`StreamPath::run_slow`] is the general reader: quick-xml's `NsReader`, for documents the fast
//! reader hands back. It checks what quick-xml does not, with the pieces in
//! [`scan`](super::scan).

use super::compile::{Cmp, Form, Path, Pred, SoapPart, Step, Tail, SOAP11_ENV, SOAP12_ENV};
use super::kept::{Spare, SpareBox};
use super::scan::{
    attr_value, is_qname, is_ws, normalize_eol, read_attributes, repeated, resolve_ref,
    valid_chars, xml_decl_ok, BYTE_CLASS, CR, CTRL, GT, HIGH,
};
use super::{Mode, Out, StreamPath, FEW_ATTRS, MAX_ATTRS, MAX_DEPTH, MAX_RESULTS};
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;
use std::borrow::Cow;

impl StreamPath {
    fn need_text(&self, mode: Mode) -> bool {
        match self.form {
            Form::Nodes => mode == Mode::String,
            Form::Compare { .. } | Form::StringOf | Form::NormalizeSpace => true,
            Form::Boolean { .. } | Form::Count(_) => false,
        }
    }

    /// A run over the vectors `v` (the thread's, see [`Kept`](super::kept::Kept)).
    pub(super) fn new_run<'a>(&'a self, mode: Mode, v: &'a mut Spare) -> Run<'a> {
        // The frames were sized for another path: none counts as clean.
        if v.frames.is_empty() {
            v.frames.push(Frame::default());
        }
        for f in &mut v.frames {
            f.clean = false;
        }
        v.frames[0].reset(&self.path);
        Run {
            p: self,
            need_text: self.need_text(mode),
            sink: Sink::default(),
            mode,
            v,
            depth: 0,
            next: 0,
            root_seen: false,
        }
    }

    /// The general reader, on quick-xml's `NsReader`.
    pub(super) fn run_slow(&self, xml: &[u8], mode: Mode, exhaustive: bool) -> Option<Out> {
        let mut reader = NsReader::from_reader(xml);
        {
            let c = reader.config_mut();
            c.expand_empty_elements = true;
            c.check_comments = true;
            c.check_end_names = true;
            c.trim_text(false);
        }
        let mut kept = SpareBox::take();
        let mut run = self.new_run(mode, &mut kept.get().run);
        let mut first = true;
        loop {
            let ev = reader.read_event().ok()?;
            match ev {
                Event::Decl(d) => {
                    if !first || !xml_decl_ok(&d) {
                        return None;
                    }
                }
                Event::Start(e) => {
                    run.start(&reader, &e)?;
                    run.advance();
                }
                Event::End(_) => {
                    run.end()?;
                    run.advance();
                }
                Event::Text(t) => run.text(&t)?,
                Event::GeneralRef(r) => {
                    let c = resolve_ref(&r)?;
                    if run.depth == 0 {
                        return None;
                    }
                    let mut buf = [0u8; 4];
                    run.chars(c.encode_utf8(&mut buf));
                }
                Event::CData(c) => {
                    let s: &str = &c;
                    if run.depth == 0 || !valid_chars(s) {
                        return None;
                    }
                    run.cdata(s);
                }
                Event::Comment(c) => {
                    let s: &str = &c;
                    if !valid_chars(s) || s.ends_with('-') {
                        return None;
                    }
                    run.end_text_run();
                }
                Event::Eof => break,
                // Processing instructions and DTDs are rare in messages: libxml2 judges them.
                Event::PI(_) | Event::DocType(_) | Event::Empty(_) => return None,
            }
            first = false;
            // Once the root element has ended, the rest is read anyway: it is short, and libxml2 refuses
            // anything but comments and white space there.
            // A `//` path is never decided inside the root element: any element may still match.
            if !exhaustive
                && (run.sink.done || (run.depth > 0 && !self.path.descendant && run.decided()))
            {
                return Some(std::mem::take(&mut run.sink).finish(&self.form, mode));
            }
        }
        if run.depth != 0 || !run.root_seen {
            return None;
        }
        run.advance();
        Some(std::mem::take(&mut run.sink).finish(&self.form, mode))
    }
}

/// Receives the selected nodes' string values in document order and decides the answer.
#[derive(Clone, Default)]
pub(super) struct Sink {
    pub(super) text: String,
    pub(super) first: Option<String>,
    pub(super) count: u64,
    pub(super) found: bool,
    pub(super) done: bool,
}

impl Sink {
    /// One selected node's string value, in document order. Taken by value: the first one becomes
    /// the answer's string as it is, without a copy.
    fn feed(&mut self, form: &Form, mode: Mode, value: String) {
        self.count += 1;
        match form {
            Form::Nodes => {
                if mode == Mode::String {
                    if self.text.is_empty() {
                        self.text = value;
                    } else {
                        self.text.push_str(&value);
                    }
                } else {
                    self.found = true;
                    self.done = true;
                }
            }
            Form::Boolean { .. } => {
                self.found = true;
                self.done = true;
            }
            Form::Compare { value: lit, ne } => {
                if (value == *lit) != *ne {
                    self.found = true;
                    self.done = true;
                }
            }
            Form::Count(None) => self.done = mode == Mode::Bool,
            Form::Count(Some((op, n))) => {
                // The count only grows: stop once more nodes cannot change the comparison.
                let c = self.count as f64;
                self.done = match op {
                    Cmp::Gt | Cmp::Le | Cmp::Eq | Cmp::Ne => c > *n,
                    Cmp::Ge | Cmp::Lt => c >= *n,
                };
            }
            Form::StringOf | Form::NormalizeSpace => {
                self.first = Some(value);
                self.done = true;
            }
        }
    }

    pub(super) fn finish(self, form: &Form, mode: Mode) -> Out {
        match form {
            Form::Nodes if mode == Mode::String => Out::Str(self.text),
            Form::Nodes => Out::Bool(self.found),
            Form::Boolean { negate } => Out::Bool(self.found != *negate),
            Form::Compare { .. } => Out::Bool(self.found),
            Form::Count(Some((op, n))) => Out::Bool(op.holds(self.count as f64, *n)),
            // As Synapse writes a number: `3.0`.
            Form::Count(None) if mode == Mode::String => {
                Out::Str(sluice_xml::java_double(self.count as f64))
            }
            Form::Count(None) => Out::Bool(self.count != 0),
            Form::StringOf => Out::Str(self.first.unwrap_or_default()),
            Form::NormalizeSpace => {
                let s = self.first.unwrap_or_default();
                let words: Vec<&str> = s
                    .split([' ', '\t', '\n', '\r'])
                    .filter(|w| !w.is_empty())
                    .collect();
                Out::Str(words.join(" "))
            }
        }
    }
}

/// An attribute other than a namespace declaration: namespace, local name, normalised value.
pub(super) type Attr<'a> = (Option<&'a str>, &'a str, Cow<'a, str>);

/// An element as it starts: its namespace, local name and attributes (other than namespace
/// declarations).
struct Element<'e> {
    ns: Option<&'e str>,
    local: &'e str,
    attrs: &'e [Attr<'e>],
}

/// Where an element that matches the last step puts what it selects.
struct Selected<'v> {
    need_text: bool,
    results: &'v mut Vec<Res>,
    captures: &'v mut Vec<Capture>,
}

impl Selected<'_> {
    /// The element `el` at depth `d`, whose frame is `f`, matches the last step: it is selected
    /// (its text collected when the answer needs it), or the attributes the tail names are.
    #[inline]
    fn push(self, path: &Path, d: usize, f: &Frame, el: &Element<'_>) {
        let conds = f.conds(path.steps.len() - 1);
        match &path.tail {
            Tail::Element => {
                let idx = self.results.len();
                self.results.push(Res {
                    text: String::new(),
                    done: !self.need_text,
                    conds: conds.to_vec(),
                });
                if self.need_text {
                    self.captures.push(Capture {
                        depth: d,
                        buf: String::new(),
                        target: Target::Result(idx),
                    });
                }
            }
            Tail::Attr(test) => {
                for (an, al, av) in el.attrs {
                    if test.matches(*an, al) {
                        self.results.push(Res {
                            text: av.to_string(),
                            done: true,
                            conds: conds.to_vec(),
                        });
                    }
                }
            }
            Tail::Text => {}
        }
    }
}

/// One open element (index 0: the document node).
#[derive(Default)]
pub(super) struct Frame {
    /// The steps this element matches (bit i for step i), each provided that its conditions turn
    /// out true.
    matched: u64,
    /// Per step this element matches, the child-predicate conditions (indexes into `Run::conds`)
    /// that must all turn out true for it to match; kept only for paths with such predicates
    /// ([`Path::conds`]), empty otherwise.
    pub(super) conds: Vec<Vec<u32>>,
    /// Positional predicate counters for this element's children (`Step::slot`).
    counters: Vec<u32>,
    /// Some counter is not zero (most elements count nothing: no memset to reset them).
    counted: bool,
    /// This element's own `[child='x']` conditions: (condition, step, predicate).
    own: Vec<(u32, usize, usize)>,
    /// The result index of the text node being read directly inside this element (`text()` paths).
    text_run: Option<usize>,
    /// The SOAP namespace, when this is a SOAP Envelope root element.
    soap_env: Option<&'static str>,
    seen_header: bool,
    seen_body: bool,
    /// Nothing written since the last reset (an element no step matched, with no matched child): the
    /// next reset has nothing to do.
    pub(super) clean: bool,
}

impl Frame {
    #[inline]
    fn reset(&mut self, path: &Path) {
        if self.clean {
            return;
        }
        self.clean = true;
        self.matched = 0;
        // A frame is reused for every element at its depth: clear in place (no reallocation).
        let (steps, slots) = (path.steps.len(), path.slots);
        if path.conds {
            if self.conds.len() == steps {
                for c in &mut self.conds {
                    c.clear();
                }
            } else {
                self.conds.clear();
                self.conds.resize(steps, Vec::new());
            }
        } else if !self.conds.is_empty() {
            // Left by a reading of another path, on this thread.
            self.conds.clear();
        }
        if self.counters.len() == slots {
            if self.counted {
                self.counters.fill(0);
            }
        } else {
            self.counters.clear();
            self.counters.resize(slots, 0);
        }
        self.counted = false;
        self.own.clear();
        self.text_run = None;
        self.soap_env = None;
        self.seen_header = false;
        self.seen_body = false;
    }

    /// `self` becomes `o`, reusing its vectors' allocations.
    #[inline]
    pub(super) fn copy_from(&mut self, o: &Frame) {
        // (Most are empty on both sides: not even a call then.)
        fn copy<T: Clone>(to: &mut Vec<T>, from: &Vec<T>) {
            if !(to.is_empty() && from.is_empty()) {
                to.clone_from(from);
            }
        }
        self.matched = o.matched;
        copy(&mut self.conds, &o.conds);
        copy(&mut self.counters, &o.counters);
        self.counted = o.counted;
        copy(&mut self.own, &o.own);
        self.text_run = o.text_run;
        self.soap_env = o.soap_env;
        self.seen_header = o.seen_header;
        self.seen_body = o.seen_body;
        self.clean = o.clean;
    }

    /// Whether this element matches step `i` (its conditions aside).
    #[inline(always)]
    fn matches(&self, i: usize) -> bool {
        self.matched >> i & 1 != 0
    }

    /// The conditions of this element's match of step `i` (none for paths without child
    /// predicates).
    #[inline(always)]
    pub(super) fn conds(&self, i: usize) -> &[u32] {
        self.conds.get(i).map_or(&[], |c| c.as_slice())
    }

    /// The steps a child of this element at depth `d` matches (bit i for step i, each provided
    /// that its conditions turn out true), counted for the position predicates it gets to.
    /// `mask`: the steps whose test its local name passes ([`Path::step_mask`]).
    #[inline]
    fn child_matches(&mut self, path: &Path, d: usize, mask: u64, el: &Element<'_>) -> u64 {
        let mut matched = 0u64;
        // The steps whose test the local name passes (`step_mask`; every bit past 63 steps).
        let mut todo = mask & (u64::MAX >> (64 - path.steps.len().min(64)));
        while todo != 0 {
            let i = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            let step = &path.steps[i];
            let named = if mask == u64::MAX {
                step.test.matches(el.ns, el.local)
            } else {
                step.test.ns_matches(el.ns)
            };
            let live = if i == 0 {
                path.descendant || d == 1
            } else {
                self.matches(i - 1)
            };
            if !(named && live) {
                continue;
            }
            if let (Some(part), Some(_)) = (step.soap_once, self.soap_env) {
                if (part == SoapPart::Header && self.seen_header)
                    || (part == SoapPart::Body && self.seen_body)
                {
                    continue;
                }
            }
            if self.passes(step, el) {
                matched |= 1 << i;
            }
        }
        matched
    }

    /// Whether a child passes `step`'s predicates (its `[child='x']` ones aside: they are known at
    /// its end), counted for its position predicates up to the first it fails.
    #[inline]
    fn passes(&mut self, step: &Step, el: &Element<'_>) -> bool {
        let mut slot = step.slot;
        for pred in &step.preds {
            match pred {
                Pred::Pos(want) => {
                    self.counted = true;
                    let c = &mut self.counters[slot];
                    *c = c.saturating_add(1);
                    slot += 1;
                    if *c != *want {
                        return false;
                    }
                }
                Pred::Attr {
                    ns: pns,
                    local: pl,
                    value,
                } => {
                    if !el
                        .attrs
                        .iter()
                        .any(|(an, al, av)| *an == pns.as_deref() && al == pl && av == value)
                    {
                        return false;
                    }
                }
                Pred::Child { .. } => {}
            }
        }
        true
    }

    /// The conditions of each step this element matches: its parent's for the step before, and a
    /// new condition (in `conds`) for each of the step's own `[child='x']` predicates.
    #[inline]
    fn own_conds(
        &mut self,
        path: &Path,
        parent: &Frame,
        conds: &mut Vec<Option<bool>>,
    ) -> Option<()> {
        let mut todo = self.matched;
        while todo != 0 {
            let i = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            let mut mine = if i == 0 {
                Vec::new()
            } else {
                parent.conds(i - 1).to_vec()
            };
            for (k, pred) in path.steps[i].preds.iter().enumerate() {
                if let Pred::Child { .. } = pred {
                    let id = u32::try_from(conds.len()).ok()?;
                    conds.push(None);
                    self.own.push((id, i, k));
                    mine.push(id);
                }
            }
            self.conds[i] = mine;
        }
        Some(())
    }

    /// A child named `ns`:`local` starts: under a SOAP Envelope, the Header or the Body is seen (and
    /// the Header's place with the Body).
    #[inline]
    fn saw(&mut self, ns: Option<&str>, local: &str) {
        if let Some(env) = self.soap_env {
            if ns == Some(env) {
                match local {
                    "Body" => {
                        self.seen_body = true;
                        self.seen_header = true;
                    }
                    "Header" => self.seen_header = true,
                    _ => {}
                }
            }
        }
    }
}

#[derive(Clone)]
enum Target {
    Result(usize),
    /// The string value of a child for condition `.0`, compared with step `.1`'s predicate `.2`.
    Check(u32, usize, usize),
}

/// An element whose string value is being collected.
#[derive(Clone)]
pub(super) struct Capture {
    pub(super) depth: usize,
    buf: String,
    target: Target,
}

/// A selected node, in document order.
#[derive(Clone)]
pub(super) struct Res {
    pub(super) text: String,
    /// The string value is complete.
    pub(super) done: bool,
    pub(super) conds: Vec<u32>,
}

impl Res {
    /// A result whose string value starts with (or, `done`, is) the text `s`, kept only when the
    /// answer needs `text`.
    #[inline]
    fn of_text(s: &str, text: bool, done: bool, conds: Vec<u32>) -> Res {
        Res {
            text: if text { s.to_owned() } else { String::new() },
            done,
            conds,
        }
    }
}

pub(super) struct Run<'p> {
    pub(super) p: &'p StreamPath,
    need_text: bool,
    pub(super) sink: Sink,
    pub(super) mode: Mode,
    /// The open elements' frames, the captures, results and conditions, a scratch string.
    pub(super) v: &'p mut Spare,
    pub(super) depth: usize,
    /// The first result not yet handed to the sink.
    pub(super) next: usize,
    pub(super) root_seen: bool,
}

impl Run<'_> {
    pub(super) fn start(&mut self, reader: &NsReader<&[u8]>, e: &BytesStart<'_>) -> Option<()> {
        let raw: &str = e.name().0;
        if !is_qname(raw) || raw.starts_with("xmlns:") {
            return None;
        }
        let (res, local) = reader.resolver().resolve_element(e.name());
        let ns = resolved(res)?;
        let local: &str = local.into_inner();
        let mut attrs: Vec<Attr<'_>> = Vec::new();
        if !attributes_syntax_ok(e.attributes_raw()) {
            return None;
        }
        // quick-xml checks names for repeats itself (by hash past 32 attributes); namespace
        // declarations in scope it holds to 128 (more: an error, and libxml2 decides).
        for (n, a) in e.attributes().enumerate() {
            if n >= MAX_ATTRS {
                return None;
            }
            let a = a.ok()?;
            let qkey = a.key;
            let key: &str = qkey.0;
            if !is_qname(key) {
                return None;
            }
            if key == "xmlns" || key.starts_with("xmlns:") {
                // quick-xml binds the raw value: keep to values that need no unescaping or normalising.
                let v: &str = &a.value;
                if v.contains(['&', '<', '\t', '\n', '\r'])
                    || !valid_chars(v)
                    || (key != "xmlns" && v.is_empty())
                {
                    return None;
                }
                continue;
            }
            let (r, l) = reader.resolver().resolve_attribute(qkey);
            let ans = resolved(r)?;
            let l: &str = l.into_inner();
            let v = match a.value {
                Cow::Borrowed(s) => attr_value(s)?,
                Cow::Owned(s) => Cow::Owned(attr_value(&s)?.into_owned()),
            };
            if attrs.len() < FEW_ATTRS && attrs.iter().any(|(n, al, _)| *n == ans && *al == l) {
                return None;
            }
            attrs.push((ans, l, v));
        }
        if attrs.len() > FEW_ATTRS && repeated(attrs.len(), |k| (attrs[k].0, attrs[k].1)) {
            return None;
        }
        self.open(ns, local, &attrs)
    }

    /// An element starts: `ns` and `local` name it, `attrs` are its attributes other than namespace
    /// declarations (namespace, local name, normalised value).
    pub(super) fn open(&mut self, ns: Option<&str>, local: &str, attrs: &[Attr<'_>]) -> Option<()> {
        if self.depth == 0 && self.root_seen {
            return None; // a second root element
        }
        let mask = self.p.path.step_mask(local.as_bytes());
        if self.inert_child(mask) {
            self.open_inert();
            return Some(());
        }
        let p: &StreamPath = self.p;
        let path = &p.path;
        self.end_text_run();
        let d = self.depth + 1;
        if d > MAX_DEPTH {
            return None;
        }
        let Spare {
            frames,
            captures,
            results,
            conds,
            ..
        } = &mut *self.v;
        if frames.len() <= d {
            frames.push(Frame::default());
        }
        let (lower, upper) = frames.split_at_mut(d);
        let parent = &mut lower[d - 1];
        let f = &mut upper[0];
        f.reset(path);
        f.clean = false;
        parent.clean = false;
        let el = Element { ns, local, attrs };
        f.matched = parent.child_matches(path, d, mask, &el);
        if path.conds {
            f.own_conds(path, parent, conds)?;
        }
        parent.saw(ns, local);
        if d == 1 {
            self.root_seen = true;
            if local == "Envelope" {
                f.soap_env = match ns {
                    Some(SOAP11_ENV) => Some(SOAP11_ENV),
                    Some(SOAP12_ENV) => Some(SOAP12_ENV),
                    _ => None,
                };
            }
        }
        // Children compared by the parent's `[child='x']` predicates.
        for &(cond, i, k) in &parent.own {
            if conds[cond as usize].is_some() {
                continue;
            }
            if let Pred::Child { test, .. } = &path.steps[i].preds[k] {
                if test.matches(ns, local) {
                    captures.push(Capture {
                        depth: d,
                        buf: String::new(),
                        target: Target::Check(cond, i, k),
                    });
                }
            }
        }
        if f.matches(path.steps.len() - 1) {
            let selected = Selected {
                need_text: self.need_text,
                results,
                captures,
            };
            selected.push(path, d, f, &el);
            if self.v.results.len() > MAX_RESULTS {
                return None;
            }
        }
        self.depth = d;
        Some(())
    }

    /// Whether a child of the current element named `local` is one no step can match, so that
    /// [`Run::open_inert`] opens it: not the root, not under a SOAP Envelope, not compared by the
    /// current element's `[child='x']` predicates, and for every step that tests its name, a step the
    /// current element cannot lead to (a later step whose previous one the current element did not
    /// match, a first step of a path without `//`, or a step whose position predicate the current
    /// element's children have passed: `//order[1]` after the first order). Attributes do not matter: no step matches the
    /// element to test them. `mask`: the steps whose test the child's local name passes
    /// ([`Path::step_mask`]).
    #[inline(always)]
    pub(super) fn inert_child(&self, mut mask: u64) -> bool {
        let d = self.depth + 1;
        if d <= 1 || d > MAX_DEPTH || mask == u64::MAX {
            return false;
        }
        let parent = &self.v.frames[self.depth];
        if parent.soap_env.is_some() || !parent.own.is_empty() {
            return false;
        }
        let path = &self.p.path;
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            let live = if i == 0 {
                path.descendant
            } else {
                parent.matches(i - 1)
            };
            if live && !exhausted(&path.steps[i], parent) {
                return false;
            }
            mask &= mask - 1;
        }
        true
    }

    /// Nothing collects the text or elements inside the current element: no capture is open, and
    /// its text nodes are not selected (it matches no last step of a `text()` path).
    #[inline]
    pub(super) fn quiet(&self) -> bool {
        self.v.captures.is_empty()
            && (self.p.path.tail != Tail::Text
                || !self.v.frames[self.depth].matches(self.p.path.steps.len() - 1))
    }

    /// What [`Run::open`] does for an element [`Run::inert_child`] accepts: track its depth.
    #[inline]
    pub(super) fn open_inert(&mut self) {
        self.end_text_run();
        let d = self.depth + 1;
        if self.v.frames.len() <= d {
            self.v.frames.push(Frame::default());
        }
        self.v.frames[d].reset(&self.p.path);
        self.depth = d;
    }

    /// Opens the elements [`StreamPath::inert_span`] hands over (their names' start and length,
    /// outermost first), as the general reading would have opened them.
    #[cold]
    pub(super) fn open_handed(&mut self, names: &mut Vec<(usize, usize)>, open: &[(usize, usize)]) {
        for &name in open {
            self.open_inert();
            names.push(name);
        }
    }

    pub(super) fn end(&mut self) -> Option<()> {
        if self.depth == 0 {
            return None;
        }
        self.end_text_run();
        let d = self.depth;
        while self.v.captures.last().is_some_and(|c| c.depth == d) {
            let Some(c) = self.v.captures.pop() else {
                break;
            };
            match c.target {
                Target::Result(i) => {
                    self.v.results[i].text = c.buf;
                    self.v.results[i].done = true;
                }
                Target::Check(cond, i, k) => {
                    if let Pred::Child { value, .. } = &self.p.path.steps[i].preds[k] {
                        if c.buf == *value {
                            self.v.conds[cond as usize] = Some(true);
                        }
                    }
                }
            }
        }
        for &(cond, _, _) in &self.v.frames[d].own {
            let c = &mut self.v.conds[cond as usize];
            if c.is_none() {
                *c = Some(false);
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// Whether character data directly inside the current element would be kept by [`Run::chars`]:
    /// a capture is open, or the path ends in `text()` and this element is one of its steps.
    #[inline]
    pub(super) fn wants_chars(&self) -> bool {
        if !self.v.captures.is_empty() {
            return true;
        }
        self.p.path.tail == Tail::Text
            && self.v.frames[self.depth].matches(self.p.path.steps.len() - 1)
    }

    /// Character data (already unescaped and normalised) directly inside the current element.
    #[inline]
    pub(super) fn chars(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        for c in &mut self.v.captures {
            c.buf.push_str(s);
        }
        if self.p.path.tail != Tail::Text {
            return;
        }
        let n = self.p.path.steps.len();
        let f = &mut self.v.frames[self.depth];
        if !f.matches(n - 1) {
            return;
        }
        let conds = f.conds(n - 1);
        match f.text_run {
            Some(r) => {
                if self.need_text {
                    self.v.results[r].text.push_str(s);
                }
            }
            None => {
                let conds = conds.to_vec();
                f.clean = false;
                f.text_run = Some(self.v.results.len());
                let res = Res::of_text(s, self.need_text, false, conds);
                self.v.results.push(res);
            }
        }
    }

    pub(super) fn text(&mut self, t: &str) -> Option<()> {
        let mut seen = 0;
        for &c in t.as_bytes() {
            seen |= BYTE_CLASS[usize::from(c)];
        }
        self.text_seen(t, seen)
    }

    /// Character data `t` (no references in it), where `seen` is every [`BYTE_CLASS`] of its bytes
    /// or'd together.
    pub(super) fn text_seen(&mut self, t: &str, seen: u8) -> Option<()> {
        if seen & CTRL != 0
            || (seen & HIGH != 0 && t.contains(['\u{FFFE}', '\u{FFFF}']))
            || (seen & GT != 0 && t.contains("]]>"))
        {
            return None;
        }
        if self.depth == 0 {
            return t.bytes().all(is_ws).then_some(());
        }
        if seen & CR == 0 {
            self.chars(t);
            return Some(());
        }
        let mut s = std::mem::take(&mut self.v.scratch);
        s.clear();
        normalize_eol(t, &mut s);
        self.chars(&s);
        self.v.scratch = s;
        Some(())
    }

    /// A CDATA section: its own text node in libxml2 (never merged with the text around it).
    pub(super) fn cdata(&mut self, s: &str) {
        self.end_text_run();
        let mut norm = String::new();
        let s = if s.contains('\r') {
            normalize_eol(s, &mut norm);
            norm.as_str()
        } else {
            s
        };
        for c in &mut self.v.captures {
            c.buf.push_str(s);
        }
        if self.p.path.tail == Tail::Text {
            let n = self.p.path.steps.len();
            let f = &self.v.frames[self.depth];
            if f.matches(n - 1) {
                let res = Res::of_text(s, self.need_text, true, f.conds(n - 1).to_vec());
                self.v.results.push(res);
            }
        }
    }

    #[inline(always)]
    pub(super) fn end_text_run(&mut self) {
        if let Some(r) = self.v.frames[self.depth].text_run.take() {
            self.v.results[r].done = true;
        }
    }

    /// Hands the results whose membership and string value are known, in document order, to the sink.
    #[inline]
    pub(super) fn advance(&mut self) {
        if self.next < self.v.results.len() && !self.sink.done {
            self.advance_results();
        }
    }

    fn advance_results(&mut self) {
        while self.next < self.v.results.len() && !self.sink.done {
            let r = &mut self.v.results[self.next];
            let mut state = Some(true);
            for &c in &r.conds {
                match self.v.conds[c as usize] {
                    Some(false) => {
                        state = Some(false);
                        break;
                    }
                    None => state = None,
                    Some(true) => {}
                }
            }
            match state {
                None => break,
                Some(false) => {}
                Some(true) => {
                    if !r.done {
                        break;
                    }
                    let text = std::mem::take(&mut r.text);
                    self.sink.feed(&self.p.form, self.mode, text);
                }
            }
            self.next += 1;
        }
    }

    /// Nothing selected, collected or compared yet (what a [`Recording`] may stop at).
    ///
    /// [`Recording`]: super::memo::Recording
    pub(super) fn nothing_selected(&self) -> bool {
        self.v.results.is_empty()
            && self.v.captures.is_empty()
            && self.v.conds.is_empty()
            && !self.sink.done
    }

    /// Every result is known and no element still to come can be selected.
    pub(super) fn decided(&self) -> bool {
        self.next == self.v.results.len() && !self.more_possible()
    }

    fn more_possible(&self) -> bool {
        let path = &self.p.path;
        if !self.root_seen {
            return true;
        }
        if path.descendant {
            return self.depth > 0;
        }
        let n = path.steps.len();
        // Without `//`, an element at depth j can only match step j-1; the document node (j = 0) has had
        // its one root element.
        for j in 1..=self.depth {
            let f = &self.v.frames[j];
            if !f.matches(j - 1) {
                continue;
            }
            if j < n && !exhausted(&path.steps[j], f) {
                return true;
            }
            if j == n && path.tail == Tail::Text {
                return true;
            }
        }
        false
    }
}

/// No further child of `f` can match `step`: a positional predicate has had its n-th sibling, or the
/// SOAP Header / Body has been seen.
fn exhausted(step: &Step, f: &Frame) -> bool {
    if let (Some(part), Some(_)) = (step.soap_once, f.soap_env) {
        if (part == SoapPart::Header && f.seen_header) || (part == SoapPart::Body && f.seen_body) {
            return true;
        }
    }
    let mut slot = step.slot;
    for p in &step.preds {
        if let Pred::Pos(n) = p {
            if f.counters[slot] >= *n {
                return true;
            }
            slot += 1;
        }
    }
    false
}

/// The attribute part of a start tag (after the name): `S name S? = S? quoted` repeated, then `S?`.
/// quick-xml also accepts attributes that are not separated by white space; XML does not.
fn attributes_syntax_ok(raw: &str) -> bool {
    read_attributes(raw, &mut Vec::new())
}

fn resolved(r: ResolveResult<'_>) -> Option<Option<&str>> {
    match r {
        ResolveResult::Bound(n) if !n.0.is_empty() => Some(Some(n.0)),
        ResolveResult::Unbound => Some(None),
        _ => None,
    }
}
