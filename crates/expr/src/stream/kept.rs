//! What a thread keeps from one reading to the next.
//!
//! Nothing is zeroed per reading. The vectors a reading needs ([`Spare`], [`Tags`]) and the fast
//! reader's arrays ([`Buffers`]) are the thread's. They sit in one box per thread ([`Kept`]), lent
//! to the reading and given back by moving one pointer ([`SpareBox`]). Vectors that grew large are
//! not kept. The table of names seen is not cleared: a 64-bit mask says which slots this reading
//! wrote ([`KnownNames`](super::fast::KnownNames)).

use super::bulk::{InertStack, Markup, Sibling, SIBLING_RUNS};
use super::fast::Known;
use super::memo::Memo;
use super::run::{Attr, Capture, Frame, Res};
use super::INERT_STACK;

/// The fast reader's vectors over the document: the open elements' names ((start, length) in it),
/// the namespace bindings in scope ((prefix, URI, depth)), and the current start tag's attributes
/// as read and as resolved. Dropped, they go back to the thread (emptied) for its next run.
pub(super) struct Tags<'x> {
    pub(super) names: Vec<(usize, usize)>,
    pub(super) bindings: Vec<(&'x str, &'x str, usize)>,
    pub(super) raw_attrs: Vec<(&'x str, &'x str, u8)>,
    pub(super) attrs: Vec<Attr<'x>>,
}

/// The fast reader's arrays, allocated with a thread's [`Kept`] and then kept: none is cleared
/// between readings (zeroing them cost more than the reading's own work, see [`KnownNames`]).
///
/// [`KnownNames`]: super::fast::KnownNames
pub(super) struct Buffers {
    pub(super) known: Known,
    /// An entry is written before it is read.
    pub(super) stack: InertStack,
    /// Only what [`Sibling::learn`] wrote in this reading is read.
    pub(super) sibling: Sibling,
}

/// [`Tags`] between runs: the same allocations, typed without the document's lifetime.
#[derive(Default)]
struct SpareTags {
    pub(super) names: Vec<(usize, usize)>,
    pub(super) bindings: Vec<[usize; 5]>,
    pub(super) raw_attrs: Vec<[usize; 5]>,
    pub(super) attrs: Vec<[usize; 7]>,
}

/// An emptied `v` as a vector of `U`. The standard library's in-place collection keeps the
/// allocation when the layouts allow (same size and alignment here, asserted below); it is an
/// optimisation it does not promise, so at worst this is a new vector. No element is converted.
fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    if v.capacity() > SPARE_LIMIT {
        return Vec::new();
    }
    v.clear();
    v.into_iter()
        .map(|_| unreachable!("the vector is empty"))
        .collect()
}

// The spare vectors' element types have the layouts of the ones they stand for.
const _: () = {
    use std::mem::{align_of, size_of};
    assert!(size_of::<[usize; 5]>() == size_of::<(&str, &str, usize)>());
    assert!(size_of::<[usize; 5]>() == size_of::<(&str, &str, u8)>());
    assert!(size_of::<[usize; 7]>() == size_of::<Attr<'_>>());
    assert!(align_of::<usize>() == align_of::<Attr<'_>>());
    assert!(align_of::<usize>() == align_of::<(&str, &str, u8)>());
};

thread_local! {
    static SPARE_TAGS: std::cell::Cell<SpareTags> = std::cell::Cell::new(SpareTags::default());
}

impl Tags<'_> {
    #[inline]
    pub(super) fn take() -> Self {
        let t = SPARE_TAGS.take();
        Tags {
            names: t.names,
            bindings: recycle(t.bindings),
            raw_attrs: recycle(t.raw_attrs),
            attrs: recycle(t.attrs),
        }
    }
}

impl Drop for Tags<'_> {
    #[inline]
    fn drop(&mut self) {
        SPARE_TAGS.set(SpareTags {
            names: spare(std::mem::take(&mut self.names)),
            bindings: recycle(std::mem::take(&mut self.bindings)),
            raw_attrs: recycle(std::mem::take(&mut self.raw_attrs)),
            attrs: recycle(std::mem::take(&mut self.attrs)),
        });
    }
}

/// A run's vectors: the thread's ([`Kept`]), lent to each run and kept for the next one.
#[derive(Default)]
pub(super) struct Spare {
    pub(super) frames: Vec<Frame>,
    pub(super) captures: Vec<Capture>,
    pub(super) results: Vec<Res>,
    pub(super) conds: Vec<Option<bool>>,
    pub(super) scratch: String,
}

/// Frames beyond this depth are not kept for the next run (a deep document's memory is given back).
const SPARE_FRAMES: usize = 64;

/// Vectors that grew past this many elements (or string bytes) are not kept for the next run.
const SPARE_LIMIT: usize = 4096;

/// `v` emptied, or a new vector when `v` grew past [`SPARE_LIMIT`].
pub(super) fn spare<T>(mut v: Vec<T>) -> Vec<T> {
    tidy(&mut v);
    v
}

/// [`spare`] in place.
fn tidy<T>(v: &mut Vec<T>) {
    if v.capacity() > SPARE_LIMIT {
        *v = Vec::new();
    }
    v.clear();
}

/// What a thread keeps from one reading to the next (beside [`Tags`], whose vectors are typed with
/// the document's lifetime): the run's vectors, the fast reader's arrays and its [`Memo`]s.
pub(super) struct Kept {
    pub(super) run: Spare,
    pub(super) buffers: Buffers,
    pub(super) memos: Vec<Memo>,
}

impl Kept {
    pub(super) fn new() -> Kept {
        Kept {
            run: Spare::default(),
            buffers: Buffers {
                known: [(0, 0, 0, 0); 64],
                stack: [(0, 0); INERT_STACK],
                sibling: Sibling {
                    runs: [Markup::default(); SIBLING_RUNS],
                    len: 0,
                    missed: 0,
                },
            },
            memos: Vec::new(),
        }
    }
}

thread_local! {
    static KEPT: std::cell::Cell<Option<Box<Kept>>> = const { std::cell::Cell::new(None) };
}

/// The thread's [`Kept`] while a reading has it: taken as one pointer and given back when the
/// reading is over, its vectors tidied (moving the vectors themselves in and out cost more than a
/// small document's reading: their words were copied through the stack and read back across two
/// stores, which stalls).
pub(super) struct SpareBox(Option<Box<Kept>>);

impl SpareBox {
    pub(super) fn take() -> SpareBox {
        SpareBox(KEPT.take())
    }

    #[inline]
    pub(super) fn get(&mut self) -> &mut Kept {
        self.0.get_or_insert_with(|| Box::new(Kept::new()))
    }
}

impl Drop for SpareBox {
    fn drop(&mut self) {
        let Some(mut kept) = self.0.take() else {
            return;
        };
        let v = &mut kept.run;
        v.frames.truncate(SPARE_FRAMES);
        v.scratch.clear();
        if v.scratch.capacity() > SPARE_LIMIT {
            v.scratch = String::new();
        }
        tidy(&mut v.captures);
        tidy(&mut v.results);
        tidy(&mut v.conds);
        KEPT.set(Some(kept));
    }
}
