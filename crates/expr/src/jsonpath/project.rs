//! A JsonPath answered from the JSON text without the whole tree.
//!
//! For a path of names, deep-scanned names, wildcards and indexes (`$.a.b`, `$..symbol`,
//! `$.orders[*].id`, `$.a[0].b`, a function last), the text is read once by serde_json and only
//! what can hold an answer is built: the values at the path's end whole, and the objects and
//! arrays on the way to them (an indexed array's elements up to the last index in their places,
//! as `null` where they hold nothing). Everything else is read by the same parser calls a full
//! parse makes (so the same faults are found, with the same messages) but not kept. The path then
//! runs over that smaller tree and gives what it gives over the whole one: every value a step can
//! reach is there, in the same order.
//!
//! | Left to the whole tree | Why |
//! |---|---|
//! | Slices, filters, indexes from the end, deep scans of anything but names | they depend on an array's length, on values left out, or on every node |
//! | An object with a key twice, one of them left out | the whole tree keeps the last value in the first place |
//! | Text serde_json refuses | the whole parse names the fault, and keeps it for what reads the body next |
//!
//! The price of a miss is one more read of the text, at most.

use super::{JsonPath, Step};
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher;

/// One step as the projection reads it.
#[derive(Clone, Debug)]
enum Move {
    /// `.name`, `['a','b']`, or `..name` (a deep scan: see [`Plan::deep`]).
    Names(Vec<String>),
    /// `[n]`, `[n,m]`: an array's elements at those places (none from the end).
    Indexes(Vec<usize>),
    /// `.*`, `[*]`: every member or element.
    Wild,
}

/// What [`JsonPath::evaluate_text`] runs on: the steps, and as bits of their positions (a value
/// "at" a position is one the step there applies to) which are deep scans and so on.
#[derive(Clone, Debug)]
pub(super) struct Plan {
    steps: Vec<Move>,
    /// The deep scans (`..name`): a value at one also puts its members and elements there.
    deep: u64,
    /// The position before a last step of several names: an object there is kept even when
    /// empty, since the step makes an object of its members.
    merge: u64,
    /// The index steps.
    indexed: u64,
}

impl Plan {
    /// The plan of `steps`, or `None` when a step is of a kind the projection leaves to the tree
    /// (or there are none, or too many for a word of positions).
    pub(super) fn of(steps: &[Step]) -> Option<Plan> {
        if steps.is_empty() || steps.len() > 62 {
            return None;
        }
        let mut plan = Plan {
            steps: Vec::with_capacity(steps.len()),
            deep: 0,
            merge: 0,
            indexed: 0,
        };
        for (i, step) in steps.iter().enumerate() {
            let bit = 1 << i;
            let m = match step {
                Step::Names(n) => {
                    if n.len() > 1 && i + 1 == steps.len() {
                        plan.merge |= bit;
                    }
                    Move::Names(n.clone())
                }
                Step::Deep(inner) => match &**inner {
                    Step::Names(n) => {
                        plan.deep |= bit;
                        Move::Names(n.clone())
                    }
                    _ => return None,
                },
                Step::Indexes(ix) => {
                    plan.indexed |= bit;
                    let ix: Option<Vec<usize>> =
                        ix.iter().map(|&k| usize::try_from(k).ok()).collect();
                    Move::Indexes(ix?)
                }
                Step::Wild => Move::Wild,
                Step::Slice(..) | Step::Filter(_) => return None,
            };
            plan.steps.push(m);
        }
        Some(plan)
    }

    /// The bit of the path's end: a value at it is an answer.
    fn end(&self) -> u64 {
        1 << self.steps.len()
    }

    /// The positions a member named `key` of an object at `at` is at.
    fn member(&self, at: u64, key: &str) -> u64 {
        let mut next = at & self.deep;
        for i in bits(at) {
            match self.steps.get(i) {
                Some(Move::Names(names)) if names.iter().any(|n| n == key) => next |= 2 << i,
                Some(Move::Wild) => next |= 2 << i,
                _ => {}
            }
        }
        next
    }

    /// The positions element `j` of an array at `at` is at.
    fn element(&self, at: u64, j: usize) -> u64 {
        let mut next = at & self.deep;
        for i in bits(at & !self.deep) {
            match self.steps.get(i) {
                Some(Move::Indexes(ix)) if ix.contains(&j) => next |= 2 << i,
                Some(Move::Wild) => next |= 2 << i,
                _ => {}
            }
        }
        next
    }

    /// The last element an index step at `at` names: the elements up to it keep their places
    /// (those that hold nothing as `null`s); `None` where no index step applies.
    fn last_indexed(&self, at: u64) -> Option<usize> {
        bits(at & self.indexed)
            .filter_map(|i| match &self.steps[i] {
                Move::Indexes(ix) => ix.iter().copied().max(),
                _ => None,
            })
            .max()
    }
}

/// The positions of the bits set in `at`.
fn bits(mut at: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (at != 0).then(|| {
            let i = at.trailing_zeros() as usize;
            at &= at - 1;
            i
        })
    })
}

impl JsonPath {
    /// Whether [`JsonPath::evaluate_text`] can answer for this path (over the body; a path over a
    /// property reads that property).
    pub fn reads_text(&self) -> bool {
        self.plan.is_some() && self.over.is_none()
    }

    /// What [`JsonPath::evaluate`] gives over `text` parsed, read without building the whole tree;
    /// `None` where the projection cannot say (see the module's table): then the tree must.
    pub fn evaluate_text(&self, text: &[u8]) -> Option<(Vec<Value>, bool)> {
        let plan = self.plan.as_ref()?;
        let mut read = Read {
            plan,
            omitted: Vec::new(),
        };
        let mut de = serde_json::Deserializer::from_slice(text);
        let kept = Project {
            read: &mut read,
            at: 1,
        }
        .deserialize(&mut de)
        .ok()?;
        de.end().ok()?;
        let mut root = kept.unwrap_or(Value::Null);
        let (found, definite) = self.evaluate(&root);
        // The answers are moved out of the tree, not copied, where each is a value of its own:
        // none twice, none inside another.
        let mut slots: Vec<Result<Value, *const Value>> = found
            .into_iter()
            .map(|c| match c {
                Cow::Owned(v) => Ok(v),
                Cow::Borrowed(v) => Err(v as *const Value),
            })
            .collect();
        let mut wanted: HashMap<*const Value, usize> = HashMap::new();
        let mut distinct = true;
        for (k, s) in slots.iter().enumerate() {
            if let Err(at) = s {
                distinct &= wanted.insert(*at, k).is_none();
            }
        }
        if !wanted.is_empty() {
            if !distinct || nested(&root, &wanted, false) {
                let (found, _) = self.evaluate(&root);
                return Some((found.into_iter().map(Cow::into_owned).collect(), definite));
            }
            take(&mut root, &wanted, &mut slots);
        }
        let values = slots
            .into_iter()
            .map(|s| s.unwrap_or(Value::Null))
            .collect();
        Some((values, definite))
    }
}

/// Whether a value whose address `wanted` holds lies inside another (`inside`: `v` is below one).
fn nested(v: &Value, wanted: &HashMap<*const Value, usize>, inside: bool) -> bool {
    let here = wanted.contains_key(&(v as *const Value));
    if here && inside {
        return true;
    }
    let below = inside || here;
    match v {
        Value::Object(m) => m.values().any(|c| nested(c, wanted, below)),
        Value::Array(a) => a.iter().any(|c| nested(c, wanted, below)),
        _ => false,
    }
}

/// The values of `v` (and below) whose addresses `wanted` holds moved into their `slots` (none of
/// them inside another).
fn take(
    v: &mut Value,
    wanted: &HashMap<*const Value, usize>,
    slots: &mut [Result<Value, *const Value>],
) {
    if let Some(&k) = wanted.get(&(v as *const Value)) {
        slots[k] = Ok(std::mem::take(v));
        return;
    }
    match v {
        Value::Object(m) => m.values_mut().for_each(|c| take(c, wanted, slots)),
        Value::Array(a) => a.iter_mut().for_each(|c| take(c, wanted, slots)),
        _ => {}
    }
}

/// One reading of a text: the plan, and the hashes of the keys left out of the objects being read
/// (a key kept and also left out in one object leaves the answer to the tree).
struct Read<'p> {
    plan: &'p Plan,
    omitted: Vec<u64>,
}

fn key_hash(key: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0).hash_one(key)
}

/// A visitor's methods for the scalars (booleans, numbers, strings, null): each read (so its
/// faults are found) and answered with `$v`.
macro_rules! scalars {
    ($v:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($v)
        }
    };
}

/// A value at the positions `at` (never the end): what of it can hold an answer, `None` when
/// nothing.
struct Project<'r, 'p> {
    read: &'r mut Read<'p>,
    at: u64,
}

impl<'de> DeserializeSeed<'de> for Project<'_, '_> {
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Project<'_, '_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    // A scalar holds no answer.
    scalars!(None);

    /// An array's elements that can hold an answer, in order; up to the last an index step names,
    /// every element in its place.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let read = self.read;
        let placed = read.plan.last_indexed(self.at);
        let mut kept = Vec::new();
        let mut any = false;
        let mut j = 0;
        loop {
            let next = read.plan.element(self.at, j);
            let in_place = placed.is_some_and(|last| j <= last);
            if next == 0 && !in_place {
                // Past the places kept, and no step reaches the rest.
                while seq.next_element_seed(Skip)?.is_some() {}
                break;
            }
            let got = if next & read.plan.end() != 0 {
                seq.next_element::<Value>()?.map(Some)
            } else if next != 0 {
                seq.next_element_seed(Project {
                    read: &mut *read,
                    at: next,
                })?
            } else {
                seq.next_element_seed(Skip)?.map(|()| None)
            };
            let Some(v) = got else { break };
            any |= v.is_some();
            match v {
                Some(v) => kept.push(v),
                None if in_place => kept.push(Value::Null),
                None => {}
            }
            j += 1;
        }
        Ok(any.then_some(Value::Array(kept)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let read = self.read;
        let from = read.omitted.len();
        let mut kept = Map::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let next = read.plan.member(self.at, &key);
            let value = if next & read.plan.end() != 0 {
                Some(map.next_value::<Value>()?)
            } else if next != 0 {
                map.next_value_seed(Project {
                    read: &mut *read,
                    at: next,
                })?
            } else {
                map.next_value_seed(Skip)?;
                None
            };
            match value {
                Some(v) => {
                    kept.insert(key.into_owned(), v);
                }
                None => read.omitted.push(key_hash(&key)),
            }
        }
        if !kept.is_empty() {
            let mut hashes: Vec<u64> = kept.keys().map(|k| key_hash(k)).collect();
            hashes.sort_unstable();
            if read.omitted[from..]
                .iter()
                .any(|h| hashes.binary_search(h).is_ok())
            {
                return Err(A::Error::custom("a key both kept and left out"));
            }
        }
        read.omitted.truncate(from);
        let keep = !kept.is_empty() || self.at & read.plan.merge != 0;
        Ok(keep.then_some(Value::Object(kept)))
    }
}

/// A member's name, borrowed from the text where it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_owned()))
    }
}

/// A value read and dropped, by the calls a full parse makes (`deserialize_any`, not serde_json's
/// lighter skip, which lets numbers out of range pass).
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    scalars!(());
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(KeySeed)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
}
