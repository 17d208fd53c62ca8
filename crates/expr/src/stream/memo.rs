//! The memo of the envelope.
//!
//! Messages from one client usually begin alike: the same envelope, namespace declarations and
//! headers. Each thread keeps, per compiled expression, a memo of the fast reader's state at one
//! place, with the bytes before that place ([`Memo`]).
//!
//! - **Where.** Just after the first start tag that selects something, before its content
//!   ([`Recording`]). For `/soapenv:Envelope/soapenv:Header/t:routing` that is inside the
//!   `routing` block. For `//order[1]/symbol` it is inside the first order's `symbol`.
//! - **Use.** A message that begins with those bytes is read from that place, after one
//!   comparison. Any other message is read from its start.
//! - **Why the answer cannot change.** The state there depends on the bytes before it alone. What
//!   the reader learned from bytes further on (names recognised ahead, a comment found ahead) is
//!   left out. Namespace bindings are kept as offsets and taken again from the new message. The
//!   content the answer depends on is read every time: no answer is cached.
//! - **When it is made again.** A message that begins otherwise is a miss. If the memo served four
//!   times as many messages as it missed, the next miss makes a new one (the client changed).
//!   Otherwise a new one is made after twice as many misses as last time, at most 64. Messages
//!   that never begin alike pay for a making now and then.
//! - **Where memos live.** A table of 256 slots per thread, four per compiled expression (its two
//!   modes, exhaustive or not).
//!
//! The test `readings_start_from_the_memo_of_a_shared_beginning` checks every kind of reading
//! against libxml2 on documents with shared beginnings. The fuzz target compares every answer
//! with the same expression compiled afresh, which has no memo.

use super::fast::KnownNames;
use super::run::{Capture, Frame, Res, Run, Sink};
use super::scan::ascii_qname;
use super::{Mode, StreamPath};

/// The fast reader's state just after the first start tag that selects something, or before any
/// content the answer depends on (inside the `routing` header under
/// `/soapenv:Envelope/soapenv:Header/t:routing`, inside the first order's `symbol` under
/// `//order[1]/symbol`; see [`Recording`]), as a reading of that path on this thread left it, with
/// the bytes before that place. Messages from one client usually begin with the same bytes (the
/// same envelope, namespaces and headers), so the next reading whose document begins with them
/// starts there instead (one comparison instead of reading the envelope tag by tag). The state
/// there depends on those bytes alone (what was learned from bytes further on, names recognised
/// ahead or a comment found ahead, is not kept); the content that follows, which the answer
/// depends on, is read every time.
#[derive(Default)]
pub(super) struct Memo {
    /// The path ([`StreamPath::id`]), the mode and whether the reading is exhaustive.
    pub(super) key: (u64, Option<Mode>, bool),
    /// A reading has made it (a memo is first made empty, and stays so while every start tag before
    /// a selection is nearer the start than [`MEMO_MIN`] or further than [`MEMO_MAX`]).
    pub(super) usable: bool,
    pub(super) prefix: Vec<u8>,
    /// Where the reading goes on (`lt`: the prefix's length).
    pub(super) place: Place,
    pub(super) depth: usize,
    pub(super) root_seen: bool,
    /// The open elements' frames, the document node's first.
    pub(super) frames: Vec<Frame>,
    /// What the start tag just before the place selected, when the memo is made just after it
    /// (see [`Recording`]): empty otherwise.
    pub(super) results: Vec<Res>,
    pub(super) captures: Vec<Capture>,
    pub(super) conds: Vec<Option<bool>>,
    pub(super) next: usize,
    pub(super) sink: Sink,
    pub(super) names: Vec<(usize, usize)>,
    /// The namespace bindings in scope: (prefix start, length, URI start, length, depth); a length
    /// of 0 stands for "".
    pub(super) bindings: Vec<[usize; 5]>,
    /// The [`Known`](super::fast::Known) names before the tag: (slot, entry).
    pub(super) known: Vec<(usize, (u32, u16, u16, u64))>,
    /// Readings that started from it, and readings whose document began otherwise, since a reading
    /// last set out to make it.
    pub(super) hits: u32,
    pub(super) misses: u32,
    /// How many misses the next making waits for: 1 after a memo that served [`MEMO_PAYS`] times
    /// as many readings as it missed (the messages changed for good), else twice the last wait (at
    /// most [`MEMO_WAIT`]). Messages that never begin alike then cost a making now and then, not
    /// every time, and two clients in turn settle on one of them instead of a making per message.
    pub(super) wait: u32,
}

/// How many times as many readings as it missed a memo must serve for the next one to be made at
/// the first miss.
pub(super) const MEMO_PAYS: u32 = 4;

/// The longest a making waits, in misses.
pub(super) const MEMO_WAIT: u32 = 64;

/// The [`Memo`]s a thread keeps, in a table where each compiled path has its own four (its modes,
/// exhaustive or not) until more than a quarter as many paths are read on the thread: then a newer
/// path takes an older one's slots ([`Memo::slot`]).
pub(super) const MEMO_SLOTS: usize = 256;

impl Memo {
    /// Where the memo of `key` is kept in the thread's table.
    pub(super) fn slot((id, mode, exhaustive): (u64, Option<Mode>, bool)) -> usize {
        let k = id << 2 | u64::from(mode == Some(Mode::Bool)) << 1 | u64::from(exhaustive);
        (k % MEMO_SLOTS as u64) as usize
    }
}

/// A memo's prefix is at least this long (shorter ones read faster than they compare) and at most
/// this long.
const MEMO_MIN: usize = 64;

const MEMO_MAX: usize = 4096;

#[cfg(test)]
thread_local! {
    /// Readings that started from a [`Memo`], and readings that set out to make one, for the tests.
    pub(super) static MEMO_HITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    pub(super) static MEMO_MAKINGS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Where a [`Memo`] is made (a start tag, or just after one), and the fast reader's bulk reading state there (whether the
/// element before was inert, where [`StreamPath::inert_span`] last stopped): kept so that a reading
/// from the memo goes on exactly as the reading that made it did.
#[derive(Clone, Copy, Default)]
pub(super) struct Place {
    pub(super) lt: usize,
    pub(super) inert_before: bool,
    pub(super) span_stop: usize,
}

/// The fast reader's state a [`Recording`] reads.
#[derive(Clone, Copy)]
pub(super) struct State<'s, 'x> {
    pub(super) xml: &'x [u8],
    pub(super) run: &'s Run<'s>,
    pub(super) names: &'s [(usize, usize)],
    pub(super) bindings: &'s [(&'x str, &'x str, usize)],
    pub(super) known: &'s KnownNames<'s>,
}

/// A reading making its path's [`Memo`] again.
///
/// It does so at each start tag and just after it, as long as nothing has been selected, and from
/// the first tag a step tests by name on only down that tag's first children (`Envelope`, `Header`,
/// `routing`; `order`, `symbol`): the memo stays at the last of those places, just after the tag
/// that selected something when one did. Further on, the bytes before the place would take in
/// content that differs from one message to the next (the selected element's text, a sibling's),
/// and the memo would serve none.
#[derive(Default)]
pub(super) struct Recording {
    /// The length of the prefix this reading has put in the memo so far.
    saved: Option<usize>,
    /// Once a tag a step tests has been passed: the depth the last such tag was opened at.
    pub(super) chain: Option<usize>,
    /// The last start tag was one of those: the memo is made again just after it, before the
    /// content that follows (the last one it is made at may have selected an element, whose
    /// content is the first thing the answer depends on).
    pub(super) pending: bool,
}

impl Recording {
    /// The start tag at `place.lt` (the reading's state just before it): makes `m` the memo of the
    /// state there when it may. Returns whether to go on at the next start tag.
    #[cold]
    pub(super) fn at(
        &mut self,
        p: &StreamPath,
        st: &State<'_, '_>,
        place: Place,
        m: &mut Memo,
    ) -> bool {
        let (xml, run, lt) = (st.xml, st.run, place.lt);
        if lt > MEMO_MAX
            || !run.nothing_selected()
            || self.chain.is_some_and(|d| run.depth != d + 1)
        {
            return false;
        }
        let tested = match ascii_qname(xml, lt + 1) {
            Some((end, colon)) => {
                let local = &xml[lt + 1 + colon + usize::from(colon > 0)..end];
                p.path.step_mask(local) != 0
            }
            None => true,
        };
        if tested || self.chain.is_some() {
            self.chain = Some(run.depth);
        }
        self.pending = true;
        if lt < MEMO_MIN {
            return true;
        }
        self.save(st, place, m)
    }

    /// Just after a start tag [`Recording::at`] took (`place.lt`: where the reading goes on):
    /// makes `m` the memo of the state there. Returns whether to go on at the next start tag (not
    /// once the tag has selected something).
    #[cold]
    pub(super) fn after(&mut self, st: &State<'_, '_>, place: Place, m: &mut Memo) -> bool {
        self.pending = false;
        let clean = st.run.nothing_selected();
        if place.lt > MEMO_MAX {
            return false;
        }
        if place.lt >= MEMO_MIN && !self.save(st, place, m) {
            return false;
        }
        clean
    }

    /// Makes `m` the memo of the state at `place`; `false` if it cannot hold it.
    fn save(&mut self, st: &State<'_, '_>, place: Place, m: &mut Memo) -> bool {
        let State {
            xml,
            run,
            names,
            bindings,
            known,
        } = *st;
        let lt = place.lt;
        let mut places = Vec::with_capacity(bindings.len());
        for &(prefix, uri, depth) in bindings {
            match (offset_in(xml, prefix, lt), offset_in(xml, uri, lt)) {
                (Some((ps, pl)), Some((us, ul))) => places.push([ps, pl, us, ul, depth]),
                _ => return false,
            }
        }
        match self.saved {
            Some(from) => m.prefix.extend_from_slice(&xml[from..lt]),
            None => {
                m.prefix.clear();
                m.prefix.extend_from_slice(&xml[..lt]);
            }
        }
        self.saved = Some(lt);
        m.usable = true;
        m.place = place;
        m.depth = run.depth;
        m.root_seen = run.root_seen;
        m.frames.truncate(run.depth + 1);
        copy_frames(&mut m.frames, &run.v.frames[..=run.depth]);
        m.results.clone_from(&run.v.results);
        m.captures.clone_from(&run.v.captures);
        m.conds.clone_from(&run.v.conds);
        m.next = run.next;
        m.sink.clone_from(&run.sink);
        m.names.clear();
        m.names.extend_from_slice(names);
        m.bindings = places;
        m.known.clear();
        let mut valid = known.valid;
        while valid != 0 {
            let slot = valid.trailing_zeros() as usize;
            valid &= valid - 1;
            let entry = known.slots[slot];
            if entry.0 as usize + usize::from(entry.1) <= lt {
                m.known.push((slot, entry));
            }
        }
        true
    }
}

/// The first frames of `to` become `from` (frames pushed as needed; those after are left).
pub(super) fn copy_frames(to: &mut Vec<Frame>, from: &[Frame]) {
    for (k, f) in from.iter().enumerate() {
        if to.len() <= k {
            to.push(Frame::default());
        }
        to[k].copy_from(f);
    }
}

/// Where `s` lies in `xml`, if within its first `limit` bytes: (start, length), (0, 0) for "".
fn offset_in(xml: &[u8], s: &str, limit: usize) -> Option<(usize, usize)> {
    if s.is_empty() {
        return Some((0, 0));
    }
    let start = (s.as_ptr() as usize).checked_sub(xml.as_ptr() as usize)?;
    (start + s.len() <= limit).then_some((start, s.len()))
}
