//! `<throttle>`'s parser: its `id`, `<policy>` (by key or written inside), and `onAccept` /
//! `onReject` (a sequence key as an attribute, or the mediators of a child element).

use super::super::{child, elements};
use super::FileParser;
use crate::diag::Severity;
use crate::model::{SequenceRef, Throttle, ThrottlePolicySrc};
use roxmltree::Node;

impl FileParser<'_, '_> {
    pub(super) fn throttle(&mut self, n: Node) -> Option<Throttle> {
        let id = self.required_attr(n, "id")?;
        let policy = match child(n, "policy") {
            None => None,
            Some(p) => match (p.attribute("key"), elements(p).next()) {
                (Some(key), _) => Some(ThrottlePolicySrc::Key(key.to_owned())),
                (None, Some(inline)) => {
                    Some(ThrottlePolicySrc::Inline(self.serialize_element(inline)))
                }
                (None, None) => {
                    self.report(
                        Severity::Error,
                        p,
                        "a throttle <policy> needs a key or a policy inside",
                    );
                    return None;
                }
            },
        };
        let on = |p: &mut Self, name: &str| -> Option<SequenceRef> {
            p.sequence_key(n, name)
                .or_else(|| child(n, name).map(|c| SequenceRef::Inline(p.sequence(c))))
        };
        let on_accept = on(self, "onAccept");
        let on_reject = on(self, "onReject");
        for c in elements(n) {
            if !matches!(c.tag_name().name(), "policy" | "onAccept" | "onReject") {
                self.unknown_child(c, "throttle");
            }
        }
        Some(Throttle {
            id,
            policy,
            on_accept,
            on_reject,
            loc: self.loc(n),
        })
    }
}
