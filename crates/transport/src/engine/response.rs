//! The answer to the client: a back-end's response relayed, a fault, a plain-text status, an
//! acknowledgement.

use super::*;

impl Engine {
    pub(super) fn default_fault(&self, soap: FaultVersion, e: &Error) -> Response<RelayBody> {
        let mut r = error_response(
            soap,
            e,
            StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        );
        r.extensions_mut().insert(crate::metrics::Faulted);
        r
    }
}

/// The answer to the client for a message. On the response path the back-end's end-to-end headers are
/// relayed; on the request path (respond, makefault + send) only the content headers of the message.
pub(super) fn client_response(
    mut msg: Message,
    stream: Option<Inbound>,
    idle: Option<IdleTimeout>,
) -> Response<RelayBody> {
    // A REST text/xml message read for mediation leaves as plain XML, a SOAP fault as POX.
    sluice_mediation::rest::outgoing(&mut msg, true);
    let status = msg.status.unwrap_or(if msg.is_fault {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    });
    let mut headers = if msg.direction == Direction::Response {
        let mut h = msg.headers;
        strip_hop_by_hop(&mut h);
        h
    } else {
        let mut h = HeaderMap::new();
        if let Some(ct) = msg.headers.get(header::CONTENT_TYPE) {
            h.insert(header::CONTENT_TYPE, ct.clone());
        }
        for name in &msg.set_headers {
            if REQUEST_ONLY.contains(name) {
                continue;
            }
            if let Some(v) = msg.headers.get(name) {
                h.insert(name.clone(), v.clone());
            }
        }
        strip_hop_by_hop(&mut h);
        if matches!(msg.body, Body::Stream | Body::Head(_)) {
            if let Some(cl) = msg.headers.get(header::CONTENT_LENGTH) {
                h.insert(header::CONTENT_LENGTH, cl.clone());
            }
        }
        h
    };
    apply_content_type_props(&msg.axis2, &mut headers);
    let json_out = msg.json_out;
    if let Some((_, ct)) = &json_out {
        headers.insert(header::CONTENT_TYPE, ct.clone());
    }
    let body = if msg.axis2.is_true("NO_ENTITY_BODY") {
        headers.remove(header::CONTENT_LENGTH);
        RelayBody::Empty
    } else {
        match msg.body {
            // Written as JSON (the XML it was made from stays with the message).
            Body::Bytes(b) => {
                let j = json_out.map_or(b, |(j, _)| j);
                set_length(&mut headers, j.len());
                RelayBody::full(j)
            }
            Body::Stream => match stream {
                Some(s) => RelayBody::stream_with(s, idle, None),
                None => RelayBody::Empty,
            },
            Body::Head(b) => match stream {
                Some(s) => RelayBody::stream_after(b, s, idle, None),
                None => {
                    set_length(&mut headers, b.len());
                    RelayBody::full(b)
                }
            },
            Body::Empty => {
                headers.remove(header::CONTENT_LENGTH);
                RelayBody::Empty
            }
        }
    };
    let mut r = Response::new(body);
    *r.status_mut() = status;
    *r.headers_mut() = headers;
    r
}

pub(super) fn fault_version(headers: &HeaderMap) -> FaultVersion {
    sluice_mediation::message::soap_version(headers)
}

pub(super) fn text_response(status: StatusCode, s: String) -> Response<RelayBody> {
    let mut r = Response::new(RelayBody::full(Bytes::from(s)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=UTF-8"),
    );
    r
}

/// Headers a mediator may set for the back-end that never go back to the client (credentials).
pub(super) const REQUEST_ONLY: [header::HeaderName; 5] = [
    header::AUTHORIZATION,
    header::PROXY_AUTHORIZATION,
    header::COOKIE,
    header::HOST,
    header::EXPECT,
];

pub(super) fn accepted() -> Response<RelayBody> {
    let mut r = Response::new(RelayBody::Empty);
    *r.status_mut() = StatusCode::ACCEPTED;
    r.extensions_mut().insert(NoAnswer);
    r
}

/// Sets a response's `Content-Length` to `len`, leaving one header that already says so as it is (a
/// body relayed unchanged keeps the back-end's: no formatting, no new value). Requests need none:
/// the back-end client writes their framing itself.
pub(super) fn set_length(headers: &mut HeaderMap, len: usize) {
    let mut values = headers.get_all(header::CONTENT_LENGTH).iter();
    let same = match (values.next(), values.next()) {
        (Some(v), None) => {
            h1::parse_length(v.as_bytes()).is_ok_and(|n| u64::try_from(len) == Ok(n))
        }
        _ => false,
    };
    if !same {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
}

/// A fault for an error, in the given SOAP version, with a status.
pub fn error_response(soap: FaultVersion, e: &Error, status: StatusCode) -> Response<RelayBody> {
    let code = fault::server_or_client(soap, e.kind.is_client_fault());
    let body = fault::build(
        soap,
        &FaultParts {
            code: Some(code),
            reason: &e.reason(),
            ..Default::default()
        },
    );
    let mut r = Response::new(RelayBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(fault::content_type(soap)),
    );
    if e.kind == ErrorKind::Overloaded {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_length_keeps_one_matching_header_and_replaces_the_rest() {
        let length = |h: &HeaderMap| {
            h.get_all(header::CONTENT_LENGTH)
                .iter()
                .map(|v| v.to_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        let mut h = HeaderMap::new();
        set_length(&mut h, 12);
        assert_eq!(length(&h), ["12"]);
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("012"));
        set_length(&mut h, 12);
        assert_eq!(
            length(&h),
            ["012"],
            "the same length, as the client wrote it"
        );
        set_length(&mut h, 13);
        assert_eq!(length(&h), ["13"]);
        h.append(header::CONTENT_LENGTH, HeaderValue::from_static("13"));
        set_length(&mut h, 13);
        assert_eq!(length(&h), ["13"], "two headers become one");
        for wrong in ["x", "+13", "", "1 3", "00000000000000000013"] {
            h.insert(header::CONTENT_LENGTH, HeaderValue::from_static(wrong));
            set_length(&mut h, 13);
            assert_eq!(length(&h), ["13"]);
        }
    }
}
