//! WS-Security towards a back-end (an endpoint's `<enableSec>`), as Rampart's initiator: the
//! request is secured before it leaves and the answer checked before anything reads it, each on a
//! blocking thread ([`Offload::blocking`]).
//!
//! | Step | What is done | On failure |
//! |---|---|---|
//! | the request, with an outbound policy | read whole; signed with the policy's `rampart:user`, its Body's content encrypted to `encryptionUser`, a Timestamp ([`sluice_security::outbound::secure_request`]) | not sent: the send fails (the fault sequence runs) |
//! | the answer, with an inbound policy | read whole; checked as a secured request is ([`sluice_security::inbound::check`]), its `wsse:Security` header then removed | `BackendSecurity` (MI's 101510), the fault sequence runs, as in MI |
//! | an answer that is a WS-Security fault without a security header | passed on unchecked, as Rampart does (a secured service's refusal comes back so) | |
//!
//! Apache Synapse's pass-through transport drops an answer that fails the checks and lets the
//! client wait; Sluice answers, as MI does.

use super::*;
use sluice_security::{Inbound as CheckWith, Outbound as SecureWith};

impl Engine {
    /// Secures the request's body (in memory: the caller read it) with the endpoint's outbound
    /// policy.
    pub(super) async fn secure_to_backend(
        &self,
        msg: &mut Message,
        ep: &EndpointPlan,
    ) -> Result<(), Error> {
        let Some(security) = ep.security.clone().filter(|s| s.outbound.is_some()) else {
            return Ok(());
        };
        let Body::Bytes(bytes) = &msg.body else {
            return Err(Error::new(
                ErrorKind::Mediation,
                format!("{}: a WS-Security request needs a SOAP body", ep.label),
            ));
        };
        let bytes = bytes.clone();
        let label = ep.label.clone();
        let secured = self
            .opts
            .offload
            .blocking("securing the request", move || {
                let Some(out): Option<&SecureWith> = security.outbound.as_ref() else {
                    return Err("no outbound policy".to_owned());
                };
                let mut doc = sluice_xml::parse_untrusted(&bytes, &Default::default())
                    .map_err(|e| format!("the request is not XML: {e}"))?;
                let now = chrono::Utc::now();
                sluice_security::outbound::secure_request(
                    &mut doc,
                    &out.policy,
                    &out.keys,
                    &out.to,
                    now,
                )
                .map_err(|e| e.to_string())?;
                doc.to_bytes().map_err(|e| e.to_string())
            })
            .await?;
        match secured {
            Ok(b) => {
                msg.body = Body::Bytes(Bytes::from(b));
                Ok(())
            }
            Err(why) => Err(Error::new(
                ErrorKind::Mediation,
                format!("{label}: the request could not be secured: {why}"),
            )),
        }
    }

    /// Checks a back-end's answer with its endpoint's inbound policy: the body read whole into
    /// `rmsg`, plain and without its security header once it passes.
    pub(super) async fn check_from_backend(
        &self,
        leaf: &EndpointPlan,
        rmsg: &mut Message,
        rstream: &mut Option<Inbound>,
    ) -> Result<(), Error> {
        let Some(security) = leaf.security.clone().filter(|s| s.inbound.is_some()) else {
            return Ok(());
        };
        let bytes = self.answer_bytes(rmsg, rstream).await?;
        // An answer with no body (a one-way service's 202): nothing to check.
        if bytes.is_empty() {
            rmsg.body = Body::Empty;
            return Ok(());
        }
        let checked = self
            .opts
            .offload
            .blocking("checking the back-end's answer", move || {
                let Some(with): Option<&CheckWith> = security.inbound.as_ref() else {
                    return Err("no inbound policy".to_owned());
                };
                let mut doc = sluice_xml::parse_untrusted(&bytes, &Default::default())
                    .map_err(|e| format!("the answer is not XML: {e}"))?;
                if security_fault(&doc) {
                    return Ok(bytes);
                }
                let now = chrono::Utc::now();
                sluice_security::inbound::check(&mut doc, &with.policy, &with.keys, now)
                    .map_err(|f| f.to_string())?;
                sluice_security::inbound::remove_headers(&mut doc).map_err(|e| e.to_string())?;
                doc.to_bytes().map(Bytes::from).map_err(|e| e.to_string())
            })
            .await?;
        match checked {
            Ok(plain) => {
                rmsg.body = read_body(plain);
                Ok(())
            }
            Err(why) => Err(Error::new(
                ErrorKind::BackendSecurity,
                format!(
                    "{}: Fault processing response message through Axis2: {why}",
                    leaf.label
                ),
            )),
        }
    }
}

impl Engine {
    /// What Synapse's Axis2 modules do with an endpoint's answer as it comes in: Rampart checks
    /// it ([`Engine::check_from_backend`]), the addressing module takes in its WS-Addressing
    /// headers ([`Engine::take_addressing`]).
    pub(super) async fn take_in(
        &self,
        leaf: &Arc<EndpointPlan>,
        rmsg: &mut Message,
        rstream: &mut Option<Inbound>,
    ) -> Result<(), Error> {
        if leaf.security.is_some() {
            self.check_from_backend(leaf, rmsg, rstream).await?;
        }
        if leaf.addressing.is_some() {
            self.take_addressing(leaf, rmsg, rstream).await?;
        }
        Ok(())
    }

    /// An answer's body, read whole (empty when it has none in bytes).
    async fn answer_bytes(
        &self,
        rmsg: &Message,
        rstream: &mut Option<Inbound>,
    ) -> Result<Bytes, Error> {
        Ok(match rstream.take() {
            Some(s) => self.buffer(Some(s), "response").await?,
            None => match &rmsg.body {
                Body::Bytes(b) => b.clone(),
                _ => Bytes::new(),
            },
        })
    }

    /// An answer from an endpoint with `<enableAddressing>`: its WS-Addressing header blocks are
    /// taken out, as Axis2's addressing module takes them in for Synapse (the answer is read
    /// whole for it; one with none goes on unchanged).
    async fn take_addressing(
        &self,
        leaf: &Arc<EndpointPlan>,
        rmsg: &mut Message,
        rstream: &mut Option<Inbound>,
    ) -> Result<(), Error> {
        let bytes = self.answer_bytes(rmsg, rstream).await?;
        if bytes.is_empty() {
            // The stream, if any, is read: the message holds what it had, nothing.
            rmsg.body = Body::Empty;
            return Ok(());
        }
        let ep = leaf.clone();
        let kept = bytes.clone();
        let taken = self
            .opts
            .offload
            .blocking("reading the answer's WS-Addressing headers", move || {
                ep.without_addressing(&kept)
            })
            .await?;
        rmsg.body = read_body(taken.map_or(bytes, Bytes::from));
        rmsg.headers.remove(http::header::CONTENT_LENGTH);
        Ok(())
    }
}

/// A SOAP fault with a WS-Security code and no security header: Rampart passes it unchecked
/// (`RampartUtil.isSecurityFault`). The code is recognised by its local name.
fn security_fault(doc: &sluice_xml::Document) -> bool {
    let has_security = doc.soap_header().is_some_and(|h| {
        h.child_elements().any(|c| {
            c.name() == "Security" && c.namespace_uri() == Some(sluice_security::inbound::WSSE)
        })
    });
    let Some(fault) = doc
        .soap_body()
        .and_then(|b| b.first_child_element())
        .filter(|f| f.name() == "Fault")
    else {
        return false;
    };
    if has_security {
        return false;
    }
    let code = fault
        .child_elements()
        .find(|c| c.name() == "faultcode" || c.name() == "Code")
        .map(|c| c.text_content())
        .unwrap_or_default();
    let local = code.trim().rsplit(':').next().unwrap_or_default();
    [
        "UnsupportedSecurityToken",
        "UnsupportedAlgorithm",
        "InvalidSecurity",
        "InvalidSecurityToken",
        "FailedAuthentication",
        "FailedCheck",
        "SecurityTokenUnavailable",
        "MessageExpired",
    ]
    .contains(&local)
}
