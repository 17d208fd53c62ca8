//! Reading a request or response body when a mediator needs it: whole (within the limits), or
//! only as far as header-only expressions need (the head probe).

use super::*;

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
        let mut probed = 0;
        while let Some(frame) = s.frame().await {
            let frame = frame
                .map_err(|e| request_body_error(e, "reading the request body failed".into()))?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers: not relayed, as for a buffered body
            };
            // Whether to look again: the start read so far was within the probe limit. A frame can
            // be larger than the limit (hyper reads up to ~400 KiB at once), so the check is on what
            // came before this frame, not on the total.
            let before = start.bytes().len();
            // And at least twice what was looked at last: each look reads the start again from
            // its beginning, so a body in many small frames costs at most twice its length in
            // looks, not its length times its frames.
            let probe = before <= HEAD_PROBE_LIMIT && before + data.len() >= 2 * probed;
            start.push(data);
            start.count(&self.opts.body_budget)?;
            let head = start.bytes();
            if head.len() > self.opts.max_buffered_body {
                return Err(too_large("request", self.opts.max_buffered_body));
            }
            if hyper::body::Body::is_end_stream(&s) {
                break; // all of it is here: no need to relay a stream after it
            }
            if probe {
                probed = head.len();
                if seq.decided_by_head(head) {
                    return Ok((start.finish(), Some(s)));
                }
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
