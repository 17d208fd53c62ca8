//! The fast reader: a tokenizer written for what routing sees, straight over the bytes.

use super::bulk::InertScratch;
use super::compile::Form;
use super::kept::{Buffers, Kept, SpareBox, Tags};
use super::memo::{copy_frames, Memo, Place, Recording, State, MEMO_PAYS, MEMO_SLOTS, MEMO_WAIT};
#[cfg(test)]
use super::memo::{MEMO_HITS, MEMO_MAKINGS};
use super::needle::Bang;
use super::scan::{
    ascii_qname, attr_value_classed, bind, bound, byte_in_word, has_nonchar, index_all, is_qname,
    is_ws, leaf_end, plain_tag, read_attributes, repeated, resolve_ref, same_name, split_colon,
    text_end, unbind_deeper, valid_chars, word_at, xml_decl_ok, AMP, UNPLAIN, V_AMP, V_CTRL,
    V_HIGH, V_LT, V_QNAME, V_WS, XML_NS,
};
use super::{Halt, Mode, Out, StreamPath, FEW_ATTRS, FEW_BINDINGS, MAX_ATTRS, MAX_BINDINGS};
use sluice_xml::names::PrefixIndex;

impl StreamPath {
    /// A start tag without attributes at `from` (just after `<`), recognised through the cache of
    /// names seen before (one word comparison) or read and added to it: (index of `>`, empty element,
    /// end of the name, colon offset or 0, [`Path::step_mask`] of the local name).
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
        // Kept where the lookup finds it first: unprefixed (or with a prefix too long for the key)
        // by the first byte.
        if colon == 0 || from + colon + 1 != key {
            slot = usize::from(xml[from] & 63);
        }
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
        Some((gt, empty, name_end, colon, mask))
    }

    /// The fast reader: a tokenizer written for the documents routing sees (elements, attributes, text
    /// with the predefined and character references, comments, CDATA, an XML declaration), straight
    /// over the bytes with `memchr`. Anything else, or anything it is not sure of, is handed back
    /// (`Halt::Bail`) to [`StreamPath::run_slow`], which starts over; so it only has to be right on what
    /// it accepts, and as strict as libxml2 on what it reads.
    pub(super) fn run_fast(&self, xml: &[u8], mode: Mode, exhaustive: bool) -> Result<Out, Halt> {
        use Halt::{Bail, Refuse};
        // UTF-8 is checked over a window of the document at a time (cheaper than piece by piece),
        // the window doubling as the reading goes past it: an answer decided early (a SOAP header)
        // pays for a few hundred bytes, not for the whole, and what is read is checked at most twice
        // over. Where the reading skips a stretch (later siblings found by name, see the module
        // doc), the next window starts after it. When the answer is the text of every node a `//`
        // path selects and nothing is skipped, the whole document is read anyway: it is checked at
        // once.
        let reads_all = self.path.descendant
            && matches!(self.form, Form::Nodes)
            && mode == Mode::String
            && self.needle.is_none();
        let checked = std::cell::Cell::new((
            0,
            if reads_all {
                simdutf8::basic::from_utf8(xml).map_err(|_| Bail)?
            } else {
                ""
            },
        ));
        let text = |a: usize, b: usize| -> Result<&str, Halt> {
            let (mut from, mut s) = checked.get();
            if a < from || b > from + s.len() {
                (from, s) = longer_window(xml, &checked, a, b)?;
            }
            s.get(a - from..b - from).ok_or(Bail)
        };
        let mut kept = SpareBox::take();
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
        let mut run = self.new_run(mode, vectors);
        let mut tags = Tags::take();
        let Tags {
            names,
            bindings,
            raw_attrs,
            attrs,
        } = &mut tags;
        // Where the innermost binding of each prefix is, once there are many (see `bind`).
        let mut index = PrefixIndex::default();
        let mut known = KnownNames {
            slots: known,
            valid: 0,
        };
        let mut scratch = InertScratch {
            stack,
            bang: Bang::default(),
            sibling,
        };
        let mut inert_before = false;
        let mut span_stop = usize::MAX;
        let n = xml.len();
        let mut i = 0;
        if xml.starts_with(b"<?xml") && xml.get(5).is_some_and(|&c| is_ws(c)) {
            let end = memchr::memmem::find(xml, b"?>").ok_or(Bail)?;
            if !xml_decl_ok(text(2, end)?) {
                return Err(Bail);
            }
            i = end + 2;
        }
        // This path's memo (read from when the document begins with its prefix), and whether this
        // reading makes it again (`record`, see `Recording`).
        let key = (self.id, Some(mode), exhaustive);
        if memos.is_empty() {
            memos.resize_with(MEMO_SLOTS, Memo::default);
        }
        let slot = Memo::slot(key);
        let mut record = true;
        let mut recording = Recording::default();
        let m = &mut memos[slot];
        if m.key != key {
            // Another path's (or none yet): this path's from now on, empty until this reading
            // makes it.
            (m.key, m.usable, m.hits, m.misses, m.wait) = (key, false, 0, 0, 1);
        } else {
            let p = m.prefix.len();
            if m.usable && xml.get(..p) == Some(&m.prefix[..]) {
                record = false;
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
                names.extend_from_slice(&m.names);
                let piece = |start: usize, len: usize| match len {
                    0 => Ok(""),
                    _ => text(start, start + len),
                };
                for &[ps, pl, us, ul, depth] in &m.bindings {
                    bindings.push((piece(ps, pl)?, piece(us, ul)?, depth));
                }
                if bindings.len() > FEW_BINDINGS {
                    index_all(bindings, &mut index);
                }
                for &(k, entry) in &m.known {
                    known.set(k, entry);
                }
                (inert_before, span_stop) = (m.place.inert_before, m.place.span_stop);
                i = p;
            } else {
                m.misses = m.misses.saturating_add(1);
                record = m.misses >= m.wait;
                if record {
                    m.wait = if m.hits >= MEMO_PAYS * m.misses {
                        1
                    } else {
                        (m.wait * 2).min(MEMO_WAIT)
                    };
                    (m.hits, m.misses) = (0, 0);
                }
            }
        }
        #[cfg(test)]
        MEMO_MAKINGS.set(MEMO_MAKINGS.get() + u64::from(record));
        // The reading's state as `Recording` reads it, at `$at`.
        macro_rules! recorded {
            ($at:expr) => {
                (
                    State {
                        xml,
                        run: &run,
                        names,
                        bindings,
                        known: &known,
                    },
                    Place {
                        lt: $at,
                        inert_before,
                        span_stop,
                    },
                )
            };
        }
        loop {
            if record && recording.pending {
                let (st, place) = recorded!(i);
                record = recording.after(&st, place, &mut memos[slot]);
            }
            // The text up to the next `<`, noting in the same pass what the checks need to know.
            // Markup right after markup (no text between) is the usual case: nothing to classify.
            let (lt, seen) = match xml.get(i) {
                Some(b'<') => (i, 0u8),
                _ => text_end(xml, i),
            };
            if lt > i && seen & AMP == 0 {
                let t = text(i, lt)?;
                run.text_seen(t, seen).ok_or(Refuse)?;
            } else if lt > i {
                let mut t = text(i, lt)?;
                // References split the text into pieces, as quick-xml reports them.
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
            }
            if lt == n {
                break;
            }
            let rest = &xml[lt + 1..];
            match rest.first() {
                Some(b'/') => {
                    let (start, len) = *names.last().ok_or(Bail)?;
                    let open = &xml[start..start + len];
                    let at = lt + 2 + len;
                    let gt = if xml.get(at) == Some(&b'>') && same_name(xml, lt + 2, start, len) {
                        at // `</name>`, the usual end tag
                    } else {
                        let gt = lt + 2 + memchr::memchr(b'>', &rest[1..]).ok_or(Bail)?;
                        let mut name = &xml[lt + 2..gt];
                        while let [head @ .., last] = name {
                            if !is_ws(*last) {
                                break;
                            }
                            name = head;
                        }
                        if name != open {
                            return Err(Bail);
                        }
                        gt
                    };
                    run.end().ok_or(Refuse)?;
                    names.pop();
                    unbind_deeper(bindings, &mut index, run.depth);
                    run.advance();
                    i = gt + 1;
                }
                Some(b'!') if rest.starts_with(b"!--") => {
                    let from = lt + 4;
                    let len = memchr::memmem::find(&xml[from..], b"-->").ok_or(Bail)?;
                    let c = text(from, from + len)?;
                    if !valid_chars(c) || c.ends_with('-') || c.contains("--") {
                        return Err(Bail);
                    }
                    run.end_text_run();
                    i = from + len + 3;
                }
                Some(b'!') if rest.starts_with(b"![CDATA[") => {
                    let from = lt + 9;
                    let len = memchr::memmem::find(&xml[from..], b"]]>").ok_or(Bail)?;
                    let c = text(from, from + len)?;
                    if run.depth == 0 || !valid_chars(c) {
                        return Err(Bail);
                    }
                    run.cdata(c);
                    i = from + len + 3;
                }
                Some(b'!' | b'?') | None => return Err(Bail),
                Some(_) => {
                    if record {
                        let (st, place) = recorded!(lt);
                        record = recording.at(self, &st, place, &mut memos[slot]);
                    }
                    // After an inert element, the next is likely inert too: read them in bulk.
                    // Not again where it last stopped: a child it gave up on is the general reading's.
                    if inert_before && lt != span_stop && run.quiet() {
                        let (j, open) = self.inert_span(
                            xml,
                            lt,
                            &run,
                            &mut known,
                            &mut scratch,
                            (bindings, &index),
                        );
                        if open > 0 {
                            run.open_handed(names, &scratch.stack[..open]);
                        }
                        if j > lt {
                            i = j;
                            span_stop = j;
                            continue;
                        }
                        inert_before = false;
                    }
                    let from = lt + 1;
                    let plain = self.known_tag(xml, from, &mut known);
                    // An element no step can match, named without attributes: tracked for depth only.
                    if let Some((gt, empty, name_end, colon, mask)) = plain {
                        if run.inert_child(mask) {
                            inert_before = true;
                            if colon > 0 {
                                let prefix = text(from, from + colon)?;
                                if prefix == "xml"
                                    || prefix == "xmlns"
                                    || bound(bindings, &index, prefix).is_none()
                                {
                                    return Err(Bail);
                                }
                            }
                            // `<name>text</name>` with plain ASCII text and nothing collecting it: the
                            // whole element at once, opened and closed without a frame.
                            let leaf = if !empty && run.v.captures.is_empty() {
                                leaf_end(xml, gt + 1, from, name_end - from)
                                    .filter(|&(_, seen)| seen & UNPLAIN == 0)
                            } else {
                                None
                            };
                            if let Some((end, _)) = leaf {
                                run.end_text_run();
                                i = end + 1;
                            } else {
                                run.open_inert();
                                i = gt + 1;
                                if empty {
                                    run.end().ok_or(Refuse)?;
                                } else {
                                    names.push((from, name_end - from));
                                    // Its content: nothing in it can match (its frame is fresh).
                                    if run.quiet() {
                                        let open;
                                        (i, open) = self.inert_span(
                                            xml,
                                            i,
                                            &run,
                                            &mut known,
                                            &mut scratch,
                                            (bindings, &index),
                                        );
                                        if open > 0 {
                                            run.open_handed(names, &scratch.stack[..open]);
                                        }
                                        // Where it stopped is the general reading's.
                                        span_stop = i;
                                    }
                                }
                            }
                            if !exhaustive
                                && (run.sink.done || (!self.path.descendant && run.decided()))
                            {
                                return Ok(std::mem::take(&mut run.sink).finish(&self.form, mode));
                            }
                            continue;
                        }
                    }
                    // `checked`: the name is an ASCII QName (else `is_qname` checks it below).
                    // `exact`: the tag's end was found quote by quote (see below).
                    let mut exact = false;
                    let (gt, empty, name_end, raw) = loop {
                        let (gt, empty, name_end, checked) = match plain {
                            Some((gt, empty, name_end, _, _)) => (gt, empty, name_end, true),
                            None => {
                                // The tag ends at the first `>` outside quotes: first taken to be the
                                // first `>` (no attribute value holds one), which reading the
                                // attributes confirms (a `>` inside a value leaves it unquoted);
                                // else found quote by quote.
                                let gt = if exact {
                                    let mut j = lt + 1;
                                    loop {
                                        let p = j + memchr::memchr3(b'>', b'"', b'\'', &xml[j..])
                                            .ok_or(Bail)?;
                                        let q = xml[p];
                                        if q == b'>' {
                                            break p;
                                        }
                                        j = p + 2 + memchr::memchr(q, &xml[p + 1..]).ok_or(Bail)?;
                                    }
                                } else {
                                    lt + 1 + memchr::memchr(b'>', &xml[lt + 1..]).ok_or(Bail)?
                                };
                                let empty = xml[gt - 1] == b'/';
                                let inner = if empty { gt - 1 } else { gt };
                                match ascii_qname(xml, lt + 1) {
                                    Some((end, _)) if end < inner && is_ws(xml[end]) => {
                                        (gt, empty, end, true)
                                    }
                                    _ => {
                                        let name_end = xml[lt + 1..inner]
                                            .iter()
                                            .position(|&c| is_ws(c))
                                            .map_or(inner, |k| lt + 1 + k);
                                        (gt, empty, name_end, false)
                                    }
                                }
                            }
                        };
                        let inner = if empty { gt - 1 } else { gt };
                        let raw = text(lt + 1, name_end)?;
                        if !(checked || is_qname(raw)) || raw.starts_with("xmlns:") {
                            return Err(Bail);
                        }
                        raw_attrs.clear();
                        if name_end < inner && !read_attributes(text(name_end, inner)?, raw_attrs) {
                            if plain.is_none() && !exact {
                                exact = true;
                                continue;
                            }
                            return Err(Bail);
                        }
                        break (gt, empty, name_end, raw);
                    };
                    if raw_attrs.len() > MAX_ATTRS {
                        return Err(Refuse);
                    }
                    let depth = run.depth + 1;
                    attrs.clear();
                    let few = raw_attrs.len() <= FEW_ATTRS;
                    for (k, &(key, value, class)) in raw_attrs.iter().enumerate() {
                        if (class & V_QNAME == 0 && !is_qname(key))
                            || (few && raw_attrs[..k].iter().any(|(other, _, _)| *other == key))
                        {
                            return Err(Bail);
                        }
                        let prefix = match split_colon(key) {
                            None if key == "xmlns" => Some(""),
                            Some(("xmlns", p)) => Some(p),
                            _ => None,
                        };
                        if let Some(prefix) = prefix {
                            if class & (V_AMP | V_LT | V_WS | V_CTRL) != 0
                                || (class & V_HIGH != 0 && has_nonchar(value))
                                || (!prefix.is_empty() && value.is_empty())
                                || prefix == "xml"
                                || prefix == "xmlns"
                            {
                                return Err(Bail);
                            }
                            bind(bindings, &mut index, (prefix, value, depth));
                            if bindings.len() > MAX_BINDINGS {
                                return Err(Refuse);
                            }
                        }
                    }
                    if !few && repeated(raw_attrs.len(), |k| raw_attrs[k].0) {
                        return Err(Bail);
                    }
                    for &(key, value, class) in raw_attrs.iter() {
                        let (ns, local) = match split_colon(key) {
                            _ if key == "xmlns" => continue,
                            Some(("xmlns", _)) => continue,
                            Some(("xml", local)) => (Some(XML_NS), local),
                            Some((prefix, local)) => {
                                (bound(bindings, &index, prefix).ok_or(Bail)?, local)
                            }
                            None => (None, key),
                        };
                        if few && attrs.iter().any(|(an, al, _)| *an == ns && *al == local) {
                            return Err(Bail);
                        }
                        attrs.push((ns, local, attr_value_classed(value, class).ok_or(Bail)?));
                    }
                    if !few && repeated(attrs.len(), |k| (attrs[k].0, attrs[k].1)) {
                        return Err(Bail);
                    }
                    let (ns, local) = match split_colon(raw) {
                        Some(("xml", _)) => return Err(Bail),
                        Some((prefix, local)) => {
                            (bound(bindings, &index, prefix).ok_or(Bail)?, local)
                        }
                        None => (bound(bindings, &index, "").unwrap_or(None), raw),
                    };
                    run.open(ns, local, attrs).ok_or(Refuse)?;
                    run.advance();
                    names.push((lt + 1, name_end - lt - 1));
                    if empty {
                        if !exhaustive && (run.sink.done || run.decided()) {
                            return Ok(std::mem::take(&mut run.sink).finish(&self.form, mode));
                        }
                        run.end().ok_or(Refuse)?;
                        names.pop();
                        unbind_deeper(bindings, &mut index, run.depth);
                        run.advance();
                    }
                    i = gt + 1;
                }
            }
            // A `//` path is never decided inside the root element: any element may still match.
            if !exhaustive
                && (run.sink.done || (run.depth > 0 && !self.path.descendant && run.decided()))
            {
                return Ok(std::mem::take(&mut run.sink).finish(&self.form, mode));
            }
        }
        if run.depth != 0 || !run.root_seen {
            return Err(Refuse);
        }
        run.advance();
        Ok(std::mem::take(&mut run.sink).finish(&self.form, mode))
    }
}

/// The first window of a document whose UTF-8 the fast reader checks (it doubles from there).
pub(super) const UTF8_PREFIX: usize = 512;

/// The checked window (its start, its text) grown past `b`, for the fast reader's `text(a, b)`:
/// doubled at least, from where it starts when `a` is inside it or just past it, else (the reading
/// skipped a stretch) a new one from `a`.
#[cold]
#[inline(never)]
fn longer_window<'x>(
    xml: &'x [u8],
    checked: &std::cell::Cell<(usize, &'x str)>,
    a: usize,
    b: usize,
) -> Result<(usize, &'x str), Halt> {
    let (from, s) = checked.get();
    let (from, len) = if from <= a && a <= from + s.len() {
        (from, 2 * s.len())
    } else {
        (a, 0)
    };
    let s = utf8_prefix(&xml[from..], (b - from).max(len).max(UTF8_PREFIX)).ok_or(Halt::Bail)?;
    checked.set((from, s));
    Ok((from, s))
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
type KnownTag = (usize, bool, usize, usize, u64);

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
