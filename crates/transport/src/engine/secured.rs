//! A secured proxy's request and response (WS-Security, `sluice_security`): the request is read
//! whole and checked off the event loop before the in-sequence sees it; what the flow answers is
//! secured on its way out.
//!
//! | Step | Where | On failure |
//! |---|---|---|
//! | read the body whole | here, within the body limits | the usual 413 / 408 / 503 |
//! | decrypt, verify, timestamp, policy (a transport binding: HTTPS, Timestamp, UsernameToken) | a blocking thread ([`Offload::blocking`]) | 500 with the `wsse:` fault code, logged; the back-end never sees it |
//! | the in-sequence and the rest of the flow | as for any proxy, on the plain envelope without its `wsse:Security` header (Synapse removes processed headers when it sends; mediators here cannot read it) | as for any proxy |
//! | sign and encrypt a 2xx SOAP answer (a transport binding: a Timestamp only) | a blocking thread | 500 fault: the answer is never sent in the clear |
//!
//! Answers that are not 2xx (faults of the flow, errors of the back-end) go out as they are.
//! A UsernameToken proxy takes `Authorization: Basic` credentials where the request has no
//! security header (MI's POX security handler); refused, they get 401 with MI's challenge.

use super::*;
use sluice_security::{Guard, Secured};

/// What a request's checks found, for its answer.
enum Passed {
    X509(sluice_security::inbound::Checked),
    /// A UsernameToken's user (or none asked for), over HTTPS.
    User,
}

impl Engine {
    pub(super) async fn secured_flow(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        (body, https): (hyper::body::Incoming, bool),
        sec: Arc<Secured>,
    ) -> Response<RelayBody> {
        let soap = msg.soap;
        let bytes = match self.buffer(Some(self.client_body(body)), "request").await {
            Ok(b) => b,
            Err(e) => return self.default_fault(soap, &e),
        };
        let now = chrono::Utc::now();
        // MI's POX security: Basic credentials stand for a UsernameToken the request lacks.
        let basic = match &sec.guard {
            Guard::Users(_) => (msg.headers.get(header::AUTHORIZATION))
                .and_then(|v| v.to_str().ok())
                .and_then(sluice_security::username::basic_credentials),
            Guard::X509 { .. } => None,
        };
        let basic_sent = basic.is_some();
        let checker = sec.clone();
        let checked = self
            .opts
            .offload
            .blocking("the WS-Security check", move || {
                let mut doc = match sluice_xml::parse_untrusted(&bytes, &Default::default()) {
                    Ok(d) => d,
                    Err(e) => {
                        return Err(sluice_security::fault::Fault::new(
                            sluice_security::fault::FaultCode::InvalidSecurity,
                            format!("the request is not XML: {e}"),
                        ))
                    }
                };
                let c = match &checker.guard {
                    Guard::X509 { keys, .. } => Passed::X509(sluice_security::inbound::check(
                        &mut doc,
                        &checker.policy,
                        keys,
                        now,
                    )?),
                    Guard::Users(users) => {
                        let how = (https, basic.as_ref());
                        sluice_security::username::check(&doc, &checker.policy, users, how, now)?;
                        Passed::User
                    }
                };
                // Processed: not sent on (Synapse removes processed headers when it sends).
                let invalid = |e: sluice_xml::XmlError| {
                    sluice_security::fault::Fault::new(
                        sluice_security::fault::FaultCode::InvalidSecurity,
                        e.to_string(),
                    )
                };
                sluice_security::inbound::remove_headers(&mut doc).map_err(invalid)?;
                let plain = doc.to_bytes().map_err(invalid)?;
                Ok((Bytes::from(plain), c))
            })
            .await;
        let checked = match checked {
            Ok(Ok(c)) => c,
            Ok(Err(fault)) => {
                tracing::warn!(proxy = %proxy.name, "secured request refused: {fault}");
                let mut r = security_fault(soap, &fault);
                // Basic credentials refused: 401 and the challenge, as MI answers.
                if basic_sent
                    && fault.code == sluice_security::fault::FaultCode::FailedAuthentication
                {
                    *r.status_mut() = StatusCode::UNAUTHORIZED;
                    let challenge = HeaderValue::from_static("BASIC realm=\"WSO2 Carbon\"");
                    r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
                }
                return r;
            }
            Err(e) => return self.default_fault(soap, &e),
        };
        let (plain, mut request) = checked;
        // Answers go to the policy's encryptionUser when it names one, else to the signer.
        if let (
            Guard::X509 {
                encrypt_to: Some(to),
                ..
            },
            Passed::X509(c),
        ) = (&sec.guard, &mut request)
        {
            c.signer = to.clone();
        }
        msg.body = read_body(plain);
        let answer = match mediate!(self, msg, Work::Seq(&proxy.in_seq)) {
            Ok(flow) => {
                self.request_decided(proxy, msg, None, flow, Depth::Normal)
                    .await
            }
            Err(e) => Box::pin(self.fault_flow(proxy, msg, e, None)).await,
        };
        if !answer.status().is_success() {
            return answer;
        }
        self.secure_answer(answer, soap, sec, request).await
    }

    /// Signs and encrypts a successful answer for the requester (a transport binding: gives it a
    /// Timestamp).
    async fn secure_answer(
        &self,
        answer: Response<RelayBody>,
        soap: FaultVersion,
        sec: Arc<Secured>,
        request: Passed,
    ) -> Response<RelayBody> {
        let (mut parts, body) = answer.into_parts();
        // Within the body limit, as any body read into memory.
        let limit = self.opts.max_buffered_body;
        let bytes = match http_body_util::Limited::new(body, limit).collect().await {
            Ok(c) => c.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                return self.default_fault(soap, &too_large("response", limit));
            }
            Err(e) => {
                let e = Error::new(
                    ErrorKind::BackendProtocol,
                    format!("reading the answer failed: {e}"),
                );
                return self.default_fault(soap, &e);
            }
        };
        let now = chrono::Utc::now();
        let secured = self
            .opts
            .offload
            .blocking("securing the answer", move || {
                let mut doc = sluice_xml::parse_untrusted(&bytes, &Default::default())
                    .map_err(|e| format!("the answer is not XML: {e}"))?;
                match (&sec.guard, &request) {
                    (Guard::X509 { keys, .. }, Passed::X509(r)) => {
                        sluice_security::outbound::secure(&mut doc, &sec.policy, keys, r, now)
                            .map_err(|e| e.to_string())?;
                    }
                    _ => sluice_security::username::answer(&mut doc, &sec.policy, now)
                        .map_err(|e| e.to_string())?,
                }
                doc.to_bytes().map_err(|e| e.to_string())
            })
            .await;
        let secured = match secured {
            Ok(Ok(b)) => b,
            Ok(Err(why)) => {
                tracing::warn!("a secured proxy's answer could not be secured: {why}");
                let e = Error::new(ErrorKind::Internal, why);
                return self.default_fault(soap, &e);
            }
            Err(e) => return self.default_fault(soap, &e),
        };
        parts.headers.remove(header::TRANSFER_ENCODING);
        parts
            .headers
            .insert(header::CONTENT_LENGTH, HeaderValue::from(secured.len()));
        Response::from_parts(parts, RelayBody::full(Bytes::from(secured)))
    }
}

/// A WS-Security fault to the client: status 500, the fault in the request's SOAP version.
fn security_fault(
    soap: FaultVersion,
    fault: &sluice_security::fault::Fault,
) -> Response<RelayBody> {
    let soap12 = soap == FaultVersion::Soap12;
    let mut r = Response::new(RelayBody::full(Bytes::from(fault.to_soap(soap12))));
    *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    let content_type = if soap12 {
        "application/soap+xml; charset=UTF-8"
    } else {
        "text/xml; charset=UTF-8"
    };
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.extensions_mut().insert(crate::metrics::Faulted);
    r
}
