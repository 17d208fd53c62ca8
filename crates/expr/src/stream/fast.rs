//! The fast reader: a tokenizer written for what routing sees, straight over the bytes.
//!
//! It reads elements, attributes, text with the predefined and character references, comments,
//! CDATA sections and an XML declaration. It hands anything else back to the general reader
//! (`Halt::Bail`), which starts over. So it only has to be right on what it accepts, and as strict
//! as libxml2 on what it reads.
//!
//! # The loop
//!
//! [`StreamPath::run_fast`] reads one token a turn: the text up to the next `<`, then the markup
//! there. Each kind has its handler on [`Fast`]: text (and its references), an end tag, a comment
//! or CDATA section, a start tag. A start tag is one of three: a span of inert siblings
//! ([`bulk`](super::bulk)), an inert element, or an element that may match, read whole. After a
//! token, the loop checks whether the answer is decided.
//!
//! Every handler is `#[inline(always)]`: the compiled loop is as tight as one function. [`Fast`]
//! holds the reading's scalars, which stay in registers because nothing lends `Fast` itself.
//! [`Parts`] holds what lives in memory and is lent to the functions the handlers call.
//!
//! # UTF-8
//!
//! UTF-8 is checked over a window of the document at a time ([`Window`]), doubling as the reading
//! goes past it. An answer decided early pays for a few hundred bytes, not the whole document.
//! Where the reading skips a stretch, the next window starts after it.
//!
//! # Names seen
//!
//! Start-tag names repeat. A table of 64 names seen ([`KnownNames`]) recognises a plain start tag
//! (`<name>`, `<name/>`) usually with one word comparison, with its name's [`Path::step_mask`]. The table
//! is the thread's and is not cleared between readings: a 64-bit mask says which slots this
//! reading wrote.
//!
//! [`Path::step_mask`]: super::compile::Path::step_mask

use super::bulk::InertScratch;
use super::compile::Form;
use super::kept::{Buffers, Kept, SpareBox, Tags};
use super::memo::{copy_frames, Memo, Place, Recording, State, MEMO_PAYS, MEMO_SLOTS, MEMO_WAIT};
#[cfg(test)]
use super::memo::{MEMO_HITS, MEMO_MAKINGS};
use super::needle::Bang;
use super::run::Run;
use super::scan::{
    ascii_qname, attr_value_classed, bind, bound, byte_in_word, has_nonchar, index_all, is_qname,
    is_ws, leaf_end, plain_tag, read_attributes, repeated, resolve_ref, same_name, split_colon,
    text_end, unbind_deeper, valid_chars, word_at, xml_decl_ok, AMP, NAME_CLASS, UNPLAIN, V_AMP,
    V_CTRL, V_HIGH, V_LT, V_QNAME, V_WS, XML_NS,
};
use super::{
    Halt, Mode, Out, Refused, StreamPath, FEW_ATTRS, FEW_BINDINGS, MAX_ATTRS, MAX_BINDINGS,
    MAX_DEPTH,
};
use sluice_xml::chars::refs_valid;
use sluice_xml::names::{PrefixIndex, NAME_START};
use Halt::{Bail, Refuse};

impl StreamPath {
    /// The fast reader: a tokenizer written for the documents routing sees (elements, attributes, text
    /// with the predefined and character references, comments, CDATA, an XML declaration), straight
    /// over the bytes with `memchr`. Anything else, or anything it is not sure of, is handed back
    /// (`Halt::Bail`) to [`StreamPath::run_slow`], which starts over; so it only has to be right on what
    /// it accepts, and as strict as libxml2 on what it reads.
    ///
    /// One token a turn: the text up to the next `<`, then the markup there, each read by its
    /// handler on [`Fast`].
    pub(super) fn run_fast(&self, xml: &[u8], mode: Mode, exhaustive: bool) -> Result<Out, Halt> {
        let window = Window::new(xml, self.reads_all(mode))?;
        let mut kept = SpareBox::take();
        let mut tags = Tags::take();
        let Kept {
            run: vectors,
            buffers:
                Buffers {
                    known,
                    stack,
                    sibling,
                },
            memos,
        } = kept.get();
        if memos.is_empty() {
            memos.resize_with(MEMO_SLOTS, Memo::default);
        }
        let key = (self.id, Some(mode), exhaustive);
        let mut parts = Parts {
            window,
            run: self.new_run(mode, vectors),
            tags: &mut tags,
            // Where the innermost binding of each prefix is, once there are many (see `bind`).
            index: PrefixIndex::default(),
            known: KnownNames {
                slots: known,
                valid: 0,
            },
            scratch: InertScratch {
                stack,
                bang: Bang::default(),
                sibling,
            },
            memo: &mut memos[Memo::slot(key)],
            recording: Recording::default(),
        };
        let mut r = Fast {
            p: self,
            xml,
            mode,
            exhaustive,
            d: &mut parts,
            record: true,
            inert_before: false,
            span_stop: usize::MAX,
        };
        let mut i = r.begin(key)?;
        loop {
            if r.record && r.d.recording.pending {
                r.record_after(i);
            }
            let lt = r.text(i)?;
            if lt == xml.len() {
                return r.end();
            }
            i = match xml.get(lt + 1) {
                Some(b'/') => r.end_tag(lt)?,
                Some(b'!') => r.bang(lt)?,
                Some(b'?') => return Err(Bail),
                // The document ends in `<` (a body's start cut there): undecided.
                None => return Err(Refuse),
                Some(_) => match r.start_tag(lt)? {
                    Tag::Read(next) => next,
                    Tag::Skipped(next) => {
                        i = next;
                        continue;
                    }
                    Tag::Decided => return Ok(r.finish()),
                },
            };
            // A `//` path is never decided inside the root element: any element may still match.
            if !r.exhaustive
                && (r.d.run.sink.done
                    || (r.d.run.depth > 0 && !self.path.descendant && r.d.run.decided()))
            {
                return Ok(r.finish());
            }
        }
    }

    /// Whether the fast reader reads the whole document whatever it finds: the answer is the text
    /// of every node a `//` path selects, and no stretch is skipped (no siblings read by name).
    fn reads_all(&self, mode: Mode) -> bool {
        self.path.descendant
            && matches!(self.form, Form::Nodes)
            && mode == Mode::String
            && self.needle.is_none()
    }
}

/// The parts of a fast reading that live in memory: those the functions it calls are lent. (The
/// scalars of [`Fast`] stay in registers: every handler is inlined into the loop, and none of them
/// lends `Fast` itself.)
struct Parts<'a, 'x> {
    window: Window<'x>,
    run: Run<'a>,
    tags: &'a mut Tags<'x>,
    index: PrefixIndex<'x>,
    known: KnownNames<'a>,
    scratch: InertScratch<'a>,
    /// This path's memo (read from when the document begins with its prefix).
    memo: &'a mut Memo,
    recording: Recording,
}

/// In a [`Fast`] method, `$call` given the reading's state at `$at` as the [`Recording`] reads it
/// (`$st`, `$place`) with the recording and the memo; it says whether the reading goes on making
/// the memo. (A macro: as a function taking a closure, the loop compiled less tight.)
macro_rules! recorded {
    ($fast:ident, $at:expr, |$r:ident, $st:ident, $place:ident, $m:ident| $call:expr) => {{
        let $place = Place {
            lt: $at,
            inert_before: $fast.inert_before,
            span_stop: $fast.span_stop,
        };
        let Parts {
            run,
            tags,
            known,
            memo: $m,
            recording: $r,
            ..
        } = &mut *$fast.d;
        let $st = &State {
            xml: $fast.xml,
            run,
            names: &tags.names,
            bindings: &tags.bindings,
            known,
        };
        $fast.record = $call;
    }};
}

/// A fast reading: its handlers, one per kind of token, each returning where the reading goes on.
struct Fast<'r, 'a, 'x> {
    p: &'a StreamPath,
    xml: &'x [u8],
    mode: Mode,
    exhaustive: bool,
    d: &'r mut Parts<'a, 'x>,
    /// Whether this reading makes the memo again (see [`Recording`]).
    record: bool,
    /// The element before was inert: the next is likely inert too (see [`Fast::start_tag`]).
    inert_before: bool,
    /// Where [`StreamPath::inert_span`] last stopped.
    span_stop: usize,
}

/// What a start tag's handler leaves to the loop.
enum Tag {
    /// The reading goes on here, once the loop has checked whether the answer is decided.
    Read(usize),
    /// The reading goes on here at once: inert elements, whose handler checks what they decide.
    Skipped(usize),
    /// The answer is decided.
    Decided,
}

impl<'x> Fast<'_, '_, 'x> {
    /// Where the reading starts: after the XML declaration, if any; or, when the document begins
    /// with this path's memo's prefix, from the memo. Decides whether this reading makes the memo
    /// again.
    #[inline(always)]
    fn begin(&mut self, key: (u64, Option<Mode>, bool)) -> Result<usize, Halt> {
        let xml = self.xml;
        let mut i = 0;
        if xml.starts_with(b"<?xml") && xml.get(5).is_some_and(|&c| is_ws(c)) {
            let end = memchr::memmem::find(xml, b"?>").ok_or(Bail)?;
            if !xml_decl_ok(self.d.window.text(2, end)?) {
                return Err(Bail);
            }
            i = end + 2;
        }
        let m = &mut *self.d.memo;
        if m.key != key {
            // Another path's (or none yet): this path's from now on, empty until this reading
            // makes it.
            (m.key, m.usable, m.hits, m.misses, m.wait) = (key, false, 0, 0, 1);
        } else if m.usable && xml.get(..m.prefix.len()) == Some(&m.prefix[..]) {
            self.record = false;
            i = self.restore()?;
        } else {
            m.misses = m.misses.saturating_add(1);
            self.record = m.misses >= m.wait;
            if self.record {
                m.wait = if m.hits >= MEMO_PAYS * m.misses {
                    1
                } else {
                    (m.wait * 2).min(MEMO_WAIT)
                };
                (m.hits, m.misses) = (0, 0);
            }
        }
        #[cfg(test)]
        MEMO_MAKINGS.set(MEMO_MAKINGS.get() + u64::from(self.record));
        Ok(i)
    }

    /// The memo's state becomes the reading's. Returns where the reading goes on: the end of the
    /// memo's prefix.
    #[inline(always)]
    fn restore(&mut self) -> Result<usize, Halt> {
        let Parts {
            window,
            run,
            tags,
            index,
            known,
            memo: m,
            ..
        } = &mut *self.d;
        m.hits = m.hits.saturating_add(1);
        #[cfg(test)]
        MEMO_HITS.set(MEMO_HITS.get() + 1);
        copy_frames(&mut run.v.frames, &m.frames);
        run.depth = m.depth;
        run.root_seen = m.root_seen;
        if !(m.results.is_empty() && m.captures.is_empty() && m.conds.is_empty()) {
            run.v.results.clone_from(&m.results);
            run.v.captures.clone_from(&m.captures);
            run.v.conds.clone_from(&m.conds);
            run.next = m.next;
            run.sink.clone_from(&m.sink);
        }
        tags.names.extend_from_slice(&m.names);
        let mut piece = |start: usize, len: usize| match len {
            0 => Ok(""),
            _ => window.text(start, start + len),
        };
        for &[ps, pl, us, ul, depth] in &m.bindings {
            tags.bindings.push((piece(ps, pl)?, piece(us, ul)?, depth));
        }
        if tags.bindings.len() > FEW_BINDINGS {
            index_all(&tags.bindings, index);
        }
        for &(k, entry) in &m.known {
            known.set(k, entry);
        }
        (self.inert_before, self.span_stop) = (m.place.inert_before, m.place.span_stop);
        Ok(m.prefix.len())
    }

    /// A start tag at `lt`, for the [`Recording`].
    #[inline(always)]
    fn record_at(&mut self, lt: usize) {
        recorded!(self, lt, |recording, st, place, memo| recording
            .at(self.p, st, place, memo));
    }

    /// Just after the start tag [`Fast::record_at`] took, for the [`Recording`].
    #[inline(always)]
    fn record_after(&mut self, i: usize) {
        recorded!(self, i, |recording, st, place, memo| recording
            .after(st, place, memo));
    }

    /// The text from `i` up to the next `<` (or the end), checked and read. Returns where it ends.
    #[inline(always)]
    fn text(&mut self, i: usize) -> Result<usize, Halt> {
        // Noting in the same pass what the checks need to know. Markup right after markup (no
        // text between) is the usual case: nothing to classify.
        let (lt, seen) = match self.xml.get(i) {
            Some(b'<') => (i, 0u8),
            _ => text_end(self.xml, i),
        };
        if lt > i && seen & AMP == 0 {
            let t = self.d.window.text(i, lt)?;
            self.d.run.text_seen(t, seen).ok_or(Refuse)?;
        } else if lt > i {
            self.references(i, lt, seen)?;
        }
        Ok(lt)
    }

    /// Text with references: the references split it into pieces, as quick-xml reports them.
    #[inline(always)]
    fn references(&mut self, i: usize, lt: usize, seen: u8) -> Result<(), Halt> {
        let Parts { window, run, .. } = &mut *self.d;
        let mut t = window.text(i, lt)?;
        // Plain text and valid references that nothing keeps: checked, never resolved. Anything
        // else (a fault to name, text to keep) takes the general way below.
        if seen & UNPLAIN == AMP && run.depth > 0 && !run.wants_chars() && refs_valid(t.as_bytes())
        {
            return Ok(());
        }
        while let Some(a) = memchr::memchr(b'&', t.as_bytes()) {
            if a > 0 {
                run.text(&t[..a]).ok_or(Refuse)?;
            }
            let after = &t[a + 1..];
            let semi = memchr::memchr(b';', after.as_bytes()).ok_or(Bail)?;
            let c = resolve_ref(&after[..semi]).ok_or(Bail)?;
            if run.depth == 0 {
                return Err(Bail);
            }
            run.chars(c.encode_utf8(&mut [0u8; 4]));
            t = &after[semi + 1..];
        }
        if !t.is_empty() {
            run.text(t).ok_or(Refuse)?;
        }
        Ok(())
    }

    /// The end tag at `lt`. Returns the index after it.
    #[inline(always)]
    fn end_tag(&mut self, lt: usize) -> Result<usize, Halt> {
        let xml = self.xml;
        let (start, len) = *self.d.tags.names.last().ok_or(Bail)?;
        let at = lt + 2 + len;
        let gt = if xml.get(at) == Some(&b'>') && same_name(xml, lt + 2, start, len) {
            at // `</name>`, the usual end tag
        } else {
            // An end tag the document ends in: undecided.
            let gt = lt + 2 + memchr::memchr(b'>', &xml[lt + 2..]).ok_or(Refuse)?;
            let mut name = &xml[lt + 2..gt];
            while let [head @ .., last] = name {
                if !is_ws(*last) {
                    break;
                }
                name = head;
            }
            if name != &xml[start..start + len] {
                return Err(Bail);
            }
            gt
        };
        self.close()?;
        Ok(gt + 1)
    }

    /// The current element ends.
    #[inline(always)]
    fn close(&mut self) -> Result<(), Halt> {
        let Parts {
            run, tags, index, ..
        } = &mut *self.d;
        run.end().ok_or(Refuse)?;
        tags.names.pop();
        unbind_deeper(&mut tags.bindings, index, run.depth);
        run.advance();
        Ok(())
    }

    /// The markup at `lt` that starts `<!`: a comment or a CDATA section (the fast reader leaves
    /// anything else to the general one). Returns the index after it.
    #[inline(always)]
    fn bang(&mut self, lt: usize) -> Result<usize, Halt> {
        let rest = &self.xml[lt + 1..];
        if rest.starts_with(b"!--") {
            let from = lt + 4;
            let len = memchr::memmem::find(&self.xml[from..], b"-->").ok_or(Refuse)?;
            let c = self.d.window.text(from, from + len)?;
            if !valid_chars(c) || c.ends_with('-') || c.contains("--") {
                return Err(Bail);
            }
            self.d.run.end_text_run();
            Ok(from + len + 3)
        } else if rest.starts_with(b"![CDATA[") {
            let from = lt + 9;
            let len = memchr::memmem::find(&self.xml[from..], b"]]>").ok_or(Refuse)?;
            let c = self.d.window.text(from, from + len)?;
            if self.d.run.depth == 0 || !valid_chars(c) {
                return Err(Bail);
            }
            self.d.run.cdata(c);
            Ok(from + len + 3)
        } else {
            Err(Bail)
        }
    }

    /// The start tag at `lt`: in a span of inert siblings, an inert element, or an element read
    /// whole (its attributes and namespace declarations) and opened.
    #[inline(always)]
    fn start_tag(&mut self, lt: usize) -> Result<Tag, Halt> {
        if self.record {
            self.record_at(lt);
        }
        // After an inert element, the next is likely inert too: read them in bulk.
        // Not again where it last stopped: a child it gave up on is the general reading's.
        if self.inert_before && lt != self.span_stop && self.d.run.quiet() {
            let j = self.span(lt);
            if j > lt {
                self.span_stop = j;
                return Ok(Tag::Skipped(j));
            }
            self.inert_before = false;
        }
        let plain = self.p.known_tag(self.xml, lt + 1, &mut self.d.known);
        // An element no step can match, named without attributes or with a few that declare
        // nothing: tracked for depth only.
        let inert = match plain {
            Some(tag) => Some(tag),
            None => self.p.attributed_tag(
                self.xml,
                lt + 1,
                &mut self.d.known,
                (&self.d.tags.bindings, &self.d.index),
            ),
        };
        if let Some(tag) = inert {
            if self.d.run.inert_child(tag.4) {
                return self.inert(lt + 1, tag);
            }
        }
        self.element(lt, plain)
    }

    /// Inert children of the current element from `at`, read by [`StreamPath::inert_span`]; the
    /// elements it hands over open. Returns where the reading goes on.
    #[inline(always)]
    fn span(&mut self, at: usize) -> usize {
        let Parts {
            run,
            tags,
            index,
            known,
            scratch,
            ..
        } = &mut *self.d;
        let (j, open) =
            self.p
                .inert_span(self.xml, at, run, known, scratch, (&tags.bindings, index));
        if open > 0 {
            run.open_handed(&mut tags.names, &scratch.stack[..open]);
        }
        j
    }

    /// An inert element: the plain start tag `tag` from `from` (just after `<`).
    #[inline(always)]
    fn inert(&mut self, from: usize, tag: KnownTag) -> Result<Tag, Halt> {
        let (gt, empty, name_end, colon, _) = tag;
        self.inert_before = true;
        if colon > 0 {
            let prefix = &self.xml[from..from + colon];
            if prefix == b"xml"
                || prefix == b"xmlns"
                || bound(&self.d.tags.bindings, &self.d.index, prefix).is_none()
            {
                return Err(Bail);
            }
        }
        // `<name>text</name>` with plain ASCII text and nothing collecting it: the whole element
        // at once, opened and closed without a frame.
        let leaf = if !empty && self.d.run.v.captures.is_empty() {
            leaf_end(self.xml, gt + 1, from, name_end - from)
                .filter(|&(_, seen)| seen & UNPLAIN == 0)
        } else {
            None
        };
        let i = if let Some((end, _)) = leaf {
            self.d.run.end_text_run();
            end + 1
        } else {
            self.d.run.open_inert();
            if empty {
                self.d.run.end().ok_or(Refuse)?;
                gt + 1
            } else {
                self.d.tags.names.push((from, name_end - from));
                // Its content: nothing in it can match (its frame is fresh).
                if self.d.run.quiet() {
                    // Where it stopped is the general reading's.
                    self.span_stop = self.span(gt + 1);
                    self.span_stop
                } else {
                    gt + 1
                }
            }
        };
        let run = &self.d.run;
        if !self.exhaustive && (run.sink.done || (!self.p.path.descendant && run.decided())) {
            return Ok(Tag::Decided);
        }
        Ok(Tag::Skipped(i))
    }

    /// An element that may match: its start tag at `lt` read whole and checked, its namespace
    /// declarations bound, its attributes resolved; then it is opened (and closed, when empty).
    #[inline(always)]
    fn element(&mut self, lt: usize, plain: Option<KnownTag>) -> Result<Tag, Halt> {
        let (gt, empty, name_end, raw) = self.tag(lt, plain)?;
        if self.d.tags.raw_attrs.len() > MAX_ATTRS {
            let count = self.d.tags.raw_attrs.len();
            return Err(Halt::Refused(Refused::Attributes { at: lt, count }));
        }
        if self.d.run.depth >= MAX_DEPTH {
            return Err(Halt::Refused(Refused::Deep { at: gt }));
        }
        if self.declarations()? > 0 {
            self.attributes()?;
        } else {
            self.d.tags.attrs.clear();
        }
        let Parts {
            run, tags, index, ..
        } = &mut *self.d;
        let (ns, local) = match split_colon(raw) {
            Some(("xml", _)) => return Err(Bail),
            Some((prefix, local)) => (
                bound(&tags.bindings, index, prefix.as_bytes()).ok_or(Bail)?,
                local,
            ),
            None => (bound(&tags.bindings, index, b"").unwrap_or(None), raw),
        };
        run.open(ns, local, &tags.attrs).ok_or(Refuse)?;
        run.advance();
        tags.names.push((lt + 1, name_end - lt - 1));
        if empty {
            if !self.exhaustive && (run.sink.done || run.decided()) {
                return Ok(Tag::Decided);
            }
            self.close()?;
        }
        Ok(Tag::Read(gt + 1))
    }

    /// The start tag at `lt` (`plain` when [`StreamPath::known_tag`] read it): (index of `>`, empty
    /// element, end of the name, the name), its attributes read into `raw_attrs`.
    #[inline(always)]
    fn tag(
        &mut self,
        lt: usize,
        plain: Option<KnownTag>,
    ) -> Result<(usize, bool, usize, &'x str), Halt> {
        // `exact`: the tag's end was found quote by quote (see `tag_end`).
        let mut exact = false;
        loop {
            // `checked`: the name is an ASCII QName (else `is_qname` checks it below).
            let (gt, empty, name_end, checked) = match plain {
                Some((gt, empty, name_end, _, _)) => (gt, empty, name_end, true),
                None => tag_end(self.xml, lt, exact)?,
            };
            let inner = if empty { gt - 1 } else { gt };
            let Parts { window, tags, .. } = &mut *self.d;
            let raw = window.text(lt + 1, name_end)?;
            if !(checked || is_qname(raw)) || raw.starts_with("xmlns:") {
                return Err(Bail);
            }
            tags.raw_attrs.clear();
            if name_end < inner
                && !read_attributes(window.text(name_end, inner)?, &mut tags.raw_attrs)
            {
                if plain.is_none() && !exact {
                    exact = true;
                    continue;
                }
                return Err(Bail);
            }
            return Ok((gt, empty, name_end, raw));
        }
    }

    /// The namespace declarations among the start tag's attributes, checked and bound at the
    /// element's depth. Every attribute's name is checked here: a QName, and (among a few) not
    /// repeated. Returns how many attributes are not declarations.
    #[inline(always)]
    fn declarations(&mut self) -> Result<usize, Halt> {
        let Parts {
            run, tags, index, ..
        } = &mut *self.d;
        let Tags {
            bindings,
            raw_attrs,
            ..
        } = &mut **tags;
        let depth = run.depth + 1;
        let few = raw_attrs.len() <= FEW_ATTRS;
        // Attributes other than declarations (a repeated declaration is found as it is bound).
        let mut others = 0;
        for (k, &(key, value, class)) in raw_attrs.iter().enumerate() {
            if (class & V_QNAME == 0 && !is_qname(key))
                || (few && raw_attrs[..k].iter().any(|(other, _, _)| *other == key))
            {
                return Err(Bail);
            }
            // `xmlns` or `xmlns:p` (a QName: `p` has no colon).
            let prefix = match key.as_bytes().get(..6) {
                _ if key == "xmlns" => Some(""),
                Some(b"xmlns:") => Some(&key[6..]),
                _ => None,
            };
            let Some(prefix) = prefix else {
                others += 1;
                continue;
            };
            if class & (V_AMP | V_LT | V_WS | V_CTRL) != 0
                || (class & V_HIGH != 0 && has_nonchar(value))
                || (!prefix.is_empty() && value.is_empty())
                || prefix == "xml"
                || prefix == "xmlns"
                || !bind(bindings, index, (prefix, value, depth))
            {
                return Err(Bail);
            }
            if bindings.len() > MAX_BINDINGS {
                return Err(Refuse);
            }
        }
        if !few && others > 1 && repeated(raw_attrs.len(), |k| raw_attrs[k].0) {
            return Err(Bail);
        }
        Ok(others)
    }

    /// The start tag's other attributes, resolved and normalised into `attrs`.
    #[inline(always)]
    fn attributes(&mut self) -> Result<(), Halt> {
        let Parts { tags, index, .. } = &mut *self.d;
        let Tags {
            bindings,
            raw_attrs,
            attrs,
            ..
        } = &mut **tags;
        attrs.clear();
        let few = raw_attrs.len() <= FEW_ATTRS;
        // Two attributes of one expanded name have one raw name (checked by `declarations`)
        // unless both are prefixed.
        let mut prefixed = 0;
        for &(key, value, class) in raw_attrs.iter() {
            let (ns, local) = match split_colon(key) {
                _ if key == "xmlns" => continue,
                Some(("xmlns", _)) => continue,
                Some(("xml", local)) => {
                    prefixed += 1;
                    (Some(XML_NS), local)
                }
                Some((prefix, local)) => {
                    prefixed += 1;
                    (
                        bound(bindings, index, prefix.as_bytes()).ok_or(Bail)?,
                        local,
                    )
                }
                None => (None, key),
            };
            if few && attrs.iter().any(|(an, al, _)| *an == ns && *al == local) {
                return Err(Bail);
            }
            attrs.push((ns, local, attr_value_classed(value, class).ok_or(Bail)?));
        }
        if !few && prefixed > 1 && repeated(attrs.len(), |k| (attrs[k].0, attrs[k].1)) {
            return Err(Bail);
        }
        Ok(())
    }

    /// The answer.
    #[inline(always)]
    fn finish(self) -> Out {
        std::mem::take(&mut self.d.run.sink).finish(&self.p.form, self.mode)
    }

    /// The document's end: the answer, if the document was complete.
    #[inline(always)]
    fn end(self) -> Result<Out, Halt> {
        if self.d.run.depth != 0 || !self.d.run.root_seen {
            return Err(Refuse);
        }
        self.d.run.advance();
        Ok(self.finish())
    }
}

/// The end of a start tag from `lt` that [`StreamPath::known_tag`] does not read (attributes, white
/// space, a name that is not ASCII): (index of `>`, empty element, end of the name, whether the
/// name is known to be an ASCII QName). The tag ends at the first `>` outside quotes: first taken
/// to be the first `>` (no attribute value holds one), which reading the attributes confirms (a
/// `>` inside a value leaves it unquoted); else, `exact`, found quote by quote.
#[inline(always)]
fn tag_end(xml: &[u8], lt: usize, exact: bool) -> Result<(usize, bool, usize, bool), Halt> {
    // A tag the document ends in (a body's start, read before the rest arrives): undecided, as
    // the general reader would find after reading everything again.
    let gt = if exact {
        let mut j = lt + 1;
        loop {
            let p = j + memchr::memchr3(b'>', b'"', b'\'', &xml[j..]).ok_or(Refuse)?;
            let q = xml[p];
            if q == b'>' {
                break p;
            }
            j = p + 2 + memchr::memchr(q, &xml[p + 1..]).ok_or(Refuse)?;
        }
    } else {
        lt + 1 + memchr::memchr(b'>', &xml[lt + 1..]).ok_or(Refuse)?
    };
    let empty = xml[gt - 1] == b'/';
    let inner = if empty { gt - 1 } else { gt };
    Ok(match ascii_qname(xml, lt + 1) {
        Some((end, _)) if end < inner && is_ws(xml[end]) => (gt, empty, end, true),
        _ => {
            let name_end = xml[lt + 1..inner]
                .iter()
                .position(|&c| is_ws(c))
                .map_or(inner, |k| lt + 1 + k);
            (gt, empty, name_end, false)
        }
    })
}

/// The first window of a document whose UTF-8 the fast reader checks (it doubles from there).
pub(super) const UTF8_PREFIX: usize = 512;

/// The document's text as far as its UTF-8 is checked. UTF-8 is checked over a window of the
/// document at a time (cheaper than piece by piece), the window doubling as the reading goes past
/// it: an answer decided early (a SOAP header) pays for a few hundred bytes, not for the whole, and
/// what is read is checked at most twice over. Where the reading skips a stretch (later siblings
/// found by name, see [`needle`](super::needle)), the next window starts after it. When the reading
/// reads the whole document anyway ([`StreamPath::reads_all`]), it is checked at once.
struct Window<'x> {
    xml: &'x [u8],
    /// Where the window starts, and its text.
    from: usize,
    text: &'x str,
}

impl<'x> Window<'x> {
    fn new(xml: &'x [u8], whole: bool) -> Result<Window<'x>, Halt> {
        let text = if whole {
            simdutf8::basic::from_utf8(xml).map_err(|_| Bail)?
        } else {
            ""
        };
        Ok(Window { xml, from: 0, text })
    }

    /// `xml[a..b]` as text, or `Halt::Bail` when it is not UTF-8.
    #[inline(always)]
    fn text(&mut self, a: usize, b: usize) -> Result<&'x str, Halt> {
        if a < self.from || b > self.from + self.text.len() {
            self.grow(a, b)?;
        }
        self.text.get(a - self.from..b - self.from).ok_or(Bail)
    }

    /// The window grown past `b`: doubled at least, from where it starts when `a` is inside it or
    /// just past it, else (the reading skipped a stretch) a new one from `a`.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, a: usize, b: usize) -> Result<(), Halt> {
        let (from, len) = if self.from <= a && a <= self.from + self.text.len() {
            (self.from, 2 * self.text.len())
        } else {
            (a, 0)
        };
        let s = utf8_prefix(&self.xml[from..], (b - from).max(len).max(UTF8_PREFIX)).ok_or(Bail)?;
        (self.from, self.text) = (from, s);
        Ok(())
    }
}

impl StreamPath {
    /// A start tag without attributes at `from` (just after `<`), recognised through the cache of
    /// names seen before (one word comparison) or read and added to it: (index of `>`, empty element,
    /// end of the name, colon offset or 0, [`Path::step_mask`] of the local name).
    ///
    /// [`Path::step_mask`]: super::compile::Path::step_mask
    #[inline(always)]
    pub(super) fn known_tag(
        &self,
        xml: &[u8],
        from: usize,
        known: &mut KnownNames<'_>,
    ) -> Option<KnownTag> {
        // Names are kept by their first byte, prefixed ones by the first byte of their local part
        // (names under one prefix would all share a slot): looked up by the first byte, then, on a
        // miss, after the first colon near the start.
        let mut slot = usize::from(*xml.get(from)? & 63);
        if let Some(hit) = cached(xml, from, known.get(slot)) {
            return hit;
        }
        let key = name_key(xml, from);
        if key != from {
            slot = usize::from(*xml.get(key)? & 63);
            if let Some(hit) = cached(xml, from, known.get(slot)) {
                return hit;
            }
        }
        let (gt, empty, name_end, colon) = plain_tag(xml, from)?;
        let mask = self.learn_name(xml, (from, name_end, colon), key, known);
        Some((gt, empty, name_end, colon, mask))
    }

    /// The [`Path::step_mask`] of the name `xml[from..name_end]` (its colon at offset `colon`, or
    /// 0), kept in `known` where the lookups find it first: by the byte after the colon when that
    /// is its key (see [`name_key`]), else by its first byte.
    ///
    /// [`Path::step_mask`]: super::compile::Path::step_mask
    #[inline(always)]
    fn learn_name(
        &self,
        xml: &[u8],
        (from, name_end, colon): (usize, usize, usize),
        key: usize,
        known: &mut KnownNames<'_>,
    ) -> u64 {
        let slot = if colon == 0 || from + colon + 1 != key {
            usize::from(xml[from] & 63)
        } else {
            usize::from(xml[key] & 63)
        };
        let local = &xml[from + colon + usize::from(colon > 0)..name_end];
        let mask = self.path.step_mask(local);
        // Positions fit in 32 bits (at most MAX_BYTES); a name too long for 16 is not kept.
        if let (Ok(start), Ok(len), Ok(c)) = (
            u32::try_from(from),
            u16::try_from(name_end - from),
            u16::try_from(colon),
        ) {
            known.set(slot, (start, len, c, mask));
        }
        mask
    }

    /// The ASCII QName of a start tag at `from` (just after `<`) through the same cache as
    /// [`StreamPath::known_tag`], whatever follows it: (end of the name, colon offset or 0,
    /// [`Path::step_mask`] of the local name).
    ///
    /// [`Path::step_mask`]: super::compile::Path::step_mask
    #[inline(always)]
    pub(super) fn known_name(
        &self,
        xml: &[u8],
        from: usize,
        known: &mut KnownNames<'_>,
    ) -> Option<(usize, usize, u64)> {
        let key = name_key(xml, from);
        let slot = usize::from(*xml.get(key)? & 63);
        let (ks, kl, kc, km) = known.get(slot);
        let (ks, kl, kc) = (ks as usize, usize::from(kl), usize::from(kc));
        let ends = |end: usize| {
            xml.get(end)
                .is_some_and(|&c| NAME_CLASS[usize::from(c)] == 0)
        };
        // The cached name, ended here as there (by a byte no name holds).
        if kl > 0 && ends(from + kl) && same_name(xml, from, ks, kl) {
            return Some((from + kl, kc, km));
        }
        // The cached local part under another prefix (or none): the same steps match it. The
        // step mask depends on the local part alone, so only this prefix is read.
        let local = kc + usize::from(kc > 0);
        if kl > 0 && ends(key + kl - local) && same_name(xml, key, ks + local, kl - local) {
            let colon = key - from;
            if colon == 0 {
                return Some((key + kl - local, 0, km));
            }
            if ncname_prefix(xml, from, key - 1) {
                return Some((key + kl - local, colon - 1, km));
            }
        }
        let (name_end, colon) = ascii_qname(xml, from)?;
        let mask = self.learn_name(xml, (from, name_end, colon), key, known);
        Some((name_end, colon, mask))
    }
}

/// `xml[..len]` (at most the whole) as text, the end moved back to the start of a character when
/// `len` falls inside one; `None` when that prefix is not UTF-8.
pub(super) fn utf8_prefix(xml: &[u8], len: usize) -> Option<&str> {
    let mut end = len.min(xml.len());
    // A continuation byte at `end` means a character straddles it (at most three bytes back).
    for _ in 0..3 {
        if end > 0 && end < xml.len() && xml[end] & 0xC0 == 0x80 {
            end -= 1;
        }
    }
    simdutf8::basic::from_utf8(&xml[..end]).ok()
}

/// A plain start tag as [`StreamPath::known_tag`] reads it: (index of `>`, empty element, end of the
/// name, colon offset or 0, [`Path::step_mask`] of the local name).
///
/// [`Path::step_mask`]: super::compile::Path::step_mask
pub(super) type KnownTag = (usize, bool, usize, usize, u64);

/// A [`Known`] entry's answer for the start tag at `from` (just after `<`), if it holds that name:
/// `Some(None)` for a tag [`StreamPath::known_tag`] refuses (`<name/` not followed by `>`).
#[inline(always)]
fn cached(
    xml: &[u8],
    from: usize,
    (ks, kl, kc, km): (u32, u16, u16, u64),
) -> Option<Option<KnownTag>> {
    let (ks, kl, kc) = (ks as usize, usize::from(kl), usize::from(kc));
    if kl == 0 || !matches!(xml.get(from + kl), Some(b'>' | b'/')) || !same_name(xml, from, ks, kl)
    {
        return None;
    }
    Some(match xml[from + kl] {
        b'>' => Some((from + kl, false, from + kl, kc, km)),
        _ if xml.get(from + kl + 1) == Some(&b'>') => {
            Some((from + kl + 1, true, from + kl, kc, km))
        }
        _ => None,
    })
}

/// Whether `xml[from..colon]` (no colon in it: [`name_key`] found the first) is an ASCII NCName.
#[inline(always)]
fn ncname_prefix(xml: &[u8], from: usize, colon: usize) -> bool {
    from < colon
        && NAME_CLASS[usize::from(xml[from])] & NAME_START != 0
        && xml[from + 1..colon]
            .iter()
            .all(|&c| NAME_CLASS[usize::from(c)] != 0)
}

/// Where the byte that picks a prefixed name's [`Known`] slot is: just after the first colon in the
/// eight bytes at `from` (`m:order`, `ns1:order`, `soapenv:Body`), or `from` when there is none. Only
/// a hash: a colon in the text after a short name just picks another slot.
#[inline(always)]
fn name_key(xml: &[u8], from: usize) -> usize {
    match word_at(xml, from).and_then(|w| byte_in_word(w, b':')) {
        Some(k) => from + k + 1,
        None => from,
    }
}

/// The start-tag names seen so far, by their first byte: (start, length, colon offset or 0,
/// [`Path::step_mask`] of the local name). Names repeat, so a start tag is usually recognised by one
/// word comparison instead of a scan.
///
/// [`Path::step_mask`]: super::compile::Path::step_mask
pub(super) type Known = [(u32, u16, u16, u64); 64];

/// The [`Known`] slots of one reading. The array is the thread's ([`Buffers`]), left as the last
/// reading wrote it rather than cleared (a 1 KiB memset per reading): `valid` marks the slots this
/// reading has written, and the others read as empty.
pub(super) struct KnownNames<'a> {
    pub(super) slots: &'a mut Known,
    pub(super) valid: u64,
}

impl KnownNames<'_> {
    #[inline(always)]
    pub(super) fn get(&self, slot: usize) -> (u32, u16, u16, u64) {
        if self.valid >> slot & 1 != 0 {
            self.slots[slot]
        } else {
            (0, 0, 0, 0)
        }
    }

    #[inline(always)]
    pub(super) fn set(&mut self, slot: usize, entry: (u32, u16, u16, u64)) {
        self.slots[slot] = entry;
        self.valid |= 1 << slot;
    }
}
