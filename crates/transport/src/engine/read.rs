//! Reading a request or response body when a mediator needs it: whole (within the limits), or
//! only as far as header-only expressions need (the head probe).

use super::*;
use sluice_expr::HeadNames;

impl Engine {
    /// Reads the request body only as far as the sequence's expressions need (they read nothing but
    /// the SOAP header): frame by frame until all of them are decided by what was read. Returns what was
    /// read and the rest of the stream (`None` when the whole body was read: it ended, or the start grew
    /// past [`HEAD_PROBE_LIMIT`] undecided, after which it is read whole like any body a mediator needs).
    pub(super) async fn read_head(
        &self,
        seq: &sluice_mediation::SeqPlan,
        stream: Option<Inbound>,
    ) -> Result<(Bytes, Option<Inbound>), Error> {
        let Some(mut s) = stream else {
            return Ok((Bytes::new(), None));
        };
        // Not sized by the announced length, nor refused by it: most of it is relayed, not read.
        let mut start = Gathered::default();
        let mut probe = HeadProbe::new(seq.head_names());
        while let Some(frame) = s.frame().await {
            let frame = frame
                .map_err(|e| request_body_error(e, "reading the request body failed".into()))?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers: not relayed, as for a buffered body
            };
            let before = start.bytes().len();
            start.push(data);
            start.count(&self.opts.body_budget)?;
            let head = start.bytes();
            if head.len() > self.opts.max_buffered_body {
                return Err(too_large("request", self.opts.max_buffered_body));
            }
            if hyper::body::Body::is_end_stream(&s) {
                break; // all of it is here: no need to relay a stream after it
            }
            if probe.due(head, before) && seq.decided_by_head(head) {
                return Ok((start.finish(), Some(s)));
            }
        }
        Ok((start.finish(), None))
    }

    pub(super) async fn buffer(&self, stream: Option<Inbound>, what: &str) -> Result<Bytes, Error> {
        self.buffer_after(Bytes::new(), stream, what).await
    }

    /// Where a body read into memory gathers: refused at once when it announces a length over the
    /// limit, else sized for the length it announces.
    pub(super) fn gathering(&self, s: &Inbound, what: &str) -> Result<Gathered, Error> {
        let limit = self.opts.max_buffered_body;
        let expect = http_body::Body::size_hint(s).exact().unwrap_or(0);
        if expect > limit as u64 {
            return Err(too_large(what, limit));
        }
        Ok(Gathered::expecting(expect as usize, limit))
    }

    /// `start` (already read) and then the rest of `stream`, read into memory within the limits:
    /// the body limit (413) and the process-wide budget of bodies in memory (503).
    pub(super) async fn buffer_after(
        &self,
        start: Bytes,
        stream: Option<Inbound>,
        what: &str,
    ) -> Result<Bytes, Error> {
        let Some(s) = stream else {
            return Ok(start);
        };
        let limit = self.opts.max_buffered_body;
        let mut body_bytes = self.gathering(&s, what)?;
        body_bytes.push(start);
        let mut body = http_body_util::Limited::new(s, limit);
        let failed = |e: Box<dyn std::error::Error + Send + Sync>| {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                too_large(what, limit)
            } else {
                request_body_error(e, format!("reading the {what} body failed"))
            }
        };
        while let Some(frame) = body.frame().await {
            // Trailers are not part of the message.
            if let Ok(data) = frame.map_err(failed)?.into_data() {
                body_bytes.push(data);
                body_bytes.count(&self.opts.body_budget)?;
            }
        }
        Ok(body_bytes.finish())
    }
}

/// When the head probe ([`Engine::read_head`]) tries the expressions again on the start of a body:
/// each try reads that start from its beginning.
///
/// | Rule | Why |
/// |---|---|
/// | Only while what came before the last piece is within [`HEAD_PROBE_LIMIT`] | a frame can be larger than the limit (hyper reads up to ~400 KiB at once) |
/// | Only once the start has at least doubled since the last look | a body in many small frames costs at most twice its length in tries, not its length times its frames |
/// | Past the first [`HEAD_PROBE_ALWAYS`] bytes, only when a name that can decide them ([`HeadNames`]) arrived since the last look | a large header of other elements, sent in small pieces, is read again once at its end, not at every doubling |
pub struct HeadProbe<'a> {
    names: Option<&'a HeadNames>,
    /// The length of the start at the last look.
    looked: usize,
}

/// The start of a body up to which every doubling is tried, whatever arrived: the envelope's
/// first tags (a root that is no envelope decides a header path at once, by a name no path holds).
pub const HEAD_PROBE_ALWAYS: usize = 1024;

impl<'a> HeadProbe<'a> {
    pub fn new(names: Option<&'a HeadNames>) -> HeadProbe<'a> {
        HeadProbe { names, looked: 0 }
    }

    /// Whether to try the expressions on `head`, all of the body so far, of which `before` bytes
    /// came before the last piece.
    pub fn due(&mut self, head: &[u8], before: usize) -> bool {
        if before > HEAD_PROBE_LIMIT || head.len() < 2 * self.looked {
            return false;
        }
        let since = std::mem::replace(&mut self.looked, head.len());
        match self.names {
            Some(names) if since >= HEAD_PROBE_ALWAYS => {
                // From a name's length back: one may have arrived in two pieces.
                names.any_in(&head[since.saturating_sub(names.longest().saturating_sub(1))..])
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lengths at which a body arriving `piece` bytes at a time is looked at.
    fn looks(names: Option<&HeadNames>, body: &[u8], piece: usize) -> Vec<usize> {
        let mut probe = HeadProbe::new(names);
        let mut at = Vec::new();
        let mut head = Vec::new();
        for p in body.chunks(piece) {
            let before = head.len();
            head.extend_from_slice(p);
            if probe.due(&head, before) {
                at.push(head.len());
            }
        }
        at
    }

    #[test]
    fn the_probe_looks_at_doublings_and_past_a_kilobyte_only_where_a_name_arrived() {
        let names = HeadNames::new(vec!["routing".into()]);
        let mut body = vec![b'x'; 64 * 1024];
        // Every doubling up to the first kilobyte, whatever arrived; none after without a name.
        let none: Vec<usize> = (4..=10).map(|k| 1 << k).collect();
        assert_eq!(looks(Some(&names), &body, 16), none);
        // Without names, every doubling.
        let all: Vec<usize> = (4..=16).map(|k| 1 << k).collect();
        assert_eq!(looks(None, &body, 16), all);
        // A name arriving split over two windows (`rout` by 8 KiB, `ing` after): looked at
        // the doubling after it.
        body[8192 - 4..8192 + 3].copy_from_slice(b"routing");
        assert_eq!(
            looks(Some(&names), &body, 16),
            [none.clone(), vec![16384]].concat()
        );
        // Past the limit no more looks, even when a name arrives.
        let mut big = vec![b'x'; 4 * HEAD_PROBE_LIMIT];
        big[3 * HEAD_PROBE_LIMIT..][..7].copy_from_slice(b"routing");
        assert_eq!(looks(Some(&names), &big, 4096), [4096]);
    }
}
