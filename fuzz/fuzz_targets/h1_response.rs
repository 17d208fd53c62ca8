//! A back-end's response as the transport reads it: any bytes through `parse_response_head`, then,
//! for a chunked body, through `ChunkedDecoder`. Never a panic or a loop without progress; the head
//! parses the same whether its bytes arrive at once or cut short; the body decodes to the same bytes
//! (or the same refusal) whether it arrives at once or in pieces of every size the input picks.
#![no_main]

use bytes::BytesMut;
use http::Method;
use libfuzzer_sys::fuzz_target;
use sluice_transport::h1::{parse_response_head, ChunkedDecoder, Decoded, ResponseFraming};

/// The decoded body and whether it ended, or None for a refusal. `pieces` sizes the reads (cycled,
/// at least 1 byte); `None` hands over the whole body at once.
fn decode(body: &[u8], pieces: Option<&[u8]>) -> Option<(Vec<u8>, bool)> {
    let mut dec = ChunkedDecoder::new();
    let mut buf = BytesMut::new();
    let (mut out, mut fed, mut k) = (Vec::new(), 0, 0);
    loop {
        match dec.decode(&mut buf).ok()? {
            Decoded::Data(d) => {
                assert!(!d.is_empty(), "empty data piece");
                out.extend_from_slice(&d);
            }
            Decoded::Done => return Some((out, true)),
            Decoded::NeedMore if fed == body.len() => return Some((out, false)),
            Decoded::NeedMore => {
                let n = match pieces {
                    None => body.len(),
                    Some(p) => usize::from(p.get(k % p.len().max(1)).copied().unwrap_or(1)).max(1),
                };
                k += 1;
                let end = (fed + n).min(body.len());
                buf.extend_from_slice(&body[fed..end]);
                fed = end;
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let method = match pick % 3 {
        0 => Method::GET,
        1 => Method::POST,
        _ => Method::HEAD,
    };
    let split = rest.len().min(usize::from(pick) * 4);
    let (pieces, input) = rest.split_at(split.min(rest.len() / 2));
    let Ok(Some((head, used))) = parse_response_head(input, &method) else {
        return;
    };
    assert!(used <= input.len());
    // Cut short, the same head is not complete yet (or is refused).
    if let Ok(Some((_, shorter))) = parse_response_head(&input[..used - 1], &method) {
        assert!(shorter < used, "a shorter input gave a longer head");
    }
    if matches!(head.framing, ResponseFraming::Chunked(_)) {
        let body = &input[used..];
        let whole = decode(body, None);
        let cut = decode(body, Some(pieces));
        // A refusal may come earlier or later with other cuts; what was decoded must agree.
        if let (Some(a), Some(b)) = (&whole, &cut) {
            assert_eq!(a, b, "pieces changed the body");
        }
    }
});
