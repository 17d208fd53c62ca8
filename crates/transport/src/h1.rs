//! HTTP/1.1 wire format for the back-end client (RFC 9112): the request head, the response head and its
//! body framing, and a streaming chunked decoder. Pure functions over bytes, so every piece is tested and
//! fuzzed without sockets.

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode, Version};

use crate::error::{Fault, Protocol};

/// Most response header fields accepted.
const MAX_HEADERS: usize = 128;
/// Largest response head accepted: a back-end sending more is broken or hostile.
pub const MAX_HEAD: usize = 64 * 1024;
/// Longest chunk-size line (size, extensions) accepted, and longest trailer section.
const MAX_CHUNK_LINE: usize = 4 * 1024;
const MAX_TRAILERS: usize = 16 * 1024;

/// Why a back-end's bytes are not HTTP/1.1.
fn proto(part: Protocol, s: impl Into<String>) -> Fault {
    Fault::protocol(part, s)
}

/// How a request body is delimited on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFraming {
    /// No body at all.
    Empty,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// Writes a request head. `headers` must already be free of hop-by-hop fields; the framing header is
/// written from `framing` and any `Content-Length` / `Transfer-Encoding` in `headers` is skipped.
/// `made`: a correlation ID Sluice made and its header, written unless `headers` hold that header
/// (looked for as they are written: no lookup of its own).
pub fn write_request_head(
    (method, path_and_query, version): (&Method, &str, Version),
    headers: &HeaderMap,
    framing: RequestFraming,
    made: Option<(&http::HeaderName, sluice_mediation::message::Id)>,
    out: &mut BytesMut,
) {
    let target = if path_and_query.is_empty() {
        "/"
    } else {
        path_and_query
    };
    out.reserve(32 + target.len() + headers.len() * 32);
    out.put_slice(method.as_str().as_bytes());
    out.put_u8(b' ');
    out.put_slice(target.as_bytes());
    out.put_slice(if version == Version::HTTP_10 {
        b" HTTP/1.0\r\n"
    } else {
        b" HTTP/1.1\r\n"
    });
    let mut made = made;
    for (name, value) in headers {
        if name == header::CONTENT_LENGTH || name == header::TRANSFER_ENCODING {
            continue;
        }
        if made.is_some_and(|(n, _)| n == name) {
            made = None;
        }
        out.put_slice(name.as_str().as_bytes());
        out.put_slice(b": ");
        out.put_slice(value.as_bytes());
        out.put_slice(b"\r\n");
    }
    if let Some((name, id)) = made {
        out.put_slice(name.as_str().as_bytes());
        out.put_slice(b": ");
        out.put_slice(&sluice_mediation::message::uuid_text(id));
        out.put_slice(b"\r\n");
    }
    match framing {
        RequestFraming::Empty => {
            // A request that may carry a body says it has none, as hyper did.
            if matches!(*method, Method::POST | Method::PUT | Method::PATCH) {
                out.put_slice(b"content-length: 0\r\n");
            }
        }
        RequestFraming::Length(n) => {
            out.put_slice(b"content-length: ");
            out.put_slice(itoa::Buffer::new().format(n).as_bytes());
            out.put_slice(b"\r\n");
        }
        RequestFraming::Chunked => out.put_slice(b"transfer-encoding: chunked\r\n"),
    }
    out.put_slice(b"\r\n");
}

/// The chunk-size line for a chunk of `len` bytes.
pub fn chunk_header(len: usize, out: &mut BytesMut) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 16];
    let mut i = buf.len();
    let mut n = len;
    loop {
        i -= 1;
        buf[i] = HEX[n & 15];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.put_slice(&buf[i..]);
    out.put_slice(b"\r\n");
}

/// How a response body is delimited on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseFraming {
    /// No body (HEAD request, 204, 304).
    Empty,
    Length(u64),
    Chunked(ChunkedDecoder),
    /// Until the back-end closes the connection.
    Close,
}

#[derive(Debug)]
pub struct ResponseHead {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub framing: ResponseFraming,
    /// Whether the connection can carry another request after this response.
    pub keep_alive: bool,
}

/// Whether `buf` holds the blank line that ends a head: a line feed followed by a line feed, or
/// by a carriage return and a line feed.
pub fn has_blank_line(buf: &[u8]) -> bool {
    memchr::memchr_iter(b'\n', buf)
        .any(|i| matches!(&buf[i + 1..], [b'\n', ..] | [b'\r', b'\n', ..]))
}

/// Parses a response head from the start of `buf`: `Ok(None)` when more bytes are needed, else the head
/// and the number of bytes it took. Interim (1xx) responses are skipped: the count includes them.
pub fn parse_response_head(
    buf: &[u8],
    request_method: &Method,
) -> Result<Option<(ResponseHead, usize)>, Fault> {
    let mut offset = 0;
    loop {
        // Left uninitialised: zeroing the array would cost more than parsing a short head.
        let mut fields =
            [const { std::mem::MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut resp,
            &buf[offset..],
            &mut fields,
        );
        let n = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if buf.len() - offset > MAX_HEAD {
                    return Err(proto(
                        Protocol::HeadTooLarge,
                        format!("response head larger than {MAX_HEAD} bytes"),
                    ));
                }
                return Ok(None);
            }
            Err(e) => return Err(proto(Protocol::Head, format!("invalid response head: {e}"))),
        };
        let code = resp.code.unwrap_or(0);
        let status = StatusCode::from_u16(code)
            .map_err(|_| proto(Protocol::Status, format!("invalid status code {code}")))?;
        if status.is_informational() {
            if code == 101 {
                return Err(proto(
                    Protocol::Status,
                    "101 Switching Protocols: upgrades are not relayed",
                ));
            }
            offset += n;
            continue;
        }
        let version_11 = resp.version == Some(1);
        let mut headers = HeaderMap::with_capacity(resp.headers.len());
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut has_te = false;
        let mut conn_close = !version_11;
        for f in resp.headers.iter() {
            let name = HeaderName::from_bytes(f.name.as_bytes()).map_err(|_| {
                proto(
                    Protocol::Header,
                    format!("invalid header name {:?}", f.name),
                )
            })?;
            let value = HeaderValue::from_bytes(f.value).map_err(|_| {
                proto(
                    Protocol::Header,
                    format!("invalid value for header {}", f.name),
                )
            })?;
            if name == header::CONTENT_LENGTH {
                let n = parse_length(f.value)?;
                if length.is_some_and(|l| l != n) {
                    return Err(proto(
                        Protocol::ContentLength,
                        "conflicting Content-Length values",
                    ));
                }
                length = Some(n);
            } else if name == header::TRANSFER_ENCODING {
                has_te = true;
                // Only the last coding decides whether the body is chunked.
                chunked = f
                    .value
                    .rsplit(|b| *b == b',')
                    .next()
                    .is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if name == header::CONNECTION {
                for token in f.value.split(|b| *b == b',') {
                    let t = token.trim_ascii();
                    if t.eq_ignore_ascii_case(b"close") {
                        conn_close = true;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") && !version_11 {
                        conn_close = false;
                    }
                }
            }
            headers.append(name, value);
        }
        let bodiless = *request_method == Method::HEAD
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED;
        let framing = if bodiless {
            ResponseFraming::Empty
        } else if has_te {
            // RFC 9112 6.3: Transfer-Encoding overrides Content-Length; a non-chunked coding last
            // means the body runs to the end of the connection.
            if chunked {
                ResponseFraming::Chunked(ChunkedDecoder::new())
            } else {
                ResponseFraming::Close
            }
        } else if let Some(n) = length {
            ResponseFraming::Length(n)
        } else {
            ResponseFraming::Close
        };
        if has_te && length.is_some() {
            // A message with both may be an attempt at request smuggling: never reuse the connection.
            conn_close = true;
            headers.remove(header::CONTENT_LENGTH);
        }
        let keep_alive = !conn_close && framing != ResponseFraming::Close;
        return Ok(Some((
            ResponseHead {
                status,
                headers,
                framing,
                keep_alive,
            },
            offset + n,
        )));
    }
}

pub(crate) fn parse_length(v: &[u8]) -> Result<u64, Fault> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return Err(proto(
            Protocol::ContentLength,
            format!("invalid Content-Length {:?}", String::from_utf8_lossy(v)),
        ));
    }
    Ok(v.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

/// What the chunked decoder made of the bytes it was given.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    /// Body bytes (never empty).
    Data(Bytes),
    /// The buffer holds no complete piece: read more.
    NeedMore,
    /// The last chunk and the trailers are consumed: the body is complete.
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ChunkState {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data, this many bytes left.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: trailer fields, up to an empty line. Holds bytes of trailers seen.
    Trailers(usize),
    Done,
}

/// A streaming decoder of `Transfer-Encoding: chunked` (RFC 9112 7.1). Data is handed out as slices of
/// the read buffer, never copied. Chunk extensions and trailer fields are read and dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedDecoder {
    state: ChunkState,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkedDecoder {
    pub fn new() -> Self {
        ChunkedDecoder {
            state: ChunkState::Size,
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Consumes from the front of `buf` what it can. Bytes after the end of the body are left in `buf`.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Decoded, Fault> {
        loop {
            match self.state {
                ChunkState::Done => return Ok(Decoded::Done),
                ChunkState::Size => {
                    let Some(eol) = memchr::memchr(b'\n', buf) else {
                        if buf.len() > MAX_CHUNK_LINE {
                            return Err(proto(Protocol::Chunked, "chunk-size line too long"));
                        }
                        return Ok(Decoded::NeedMore);
                    };
                    if eol == 0 || buf[eol - 1] != b'\r' {
                        return Err(proto(
                            Protocol::Chunked,
                            "chunk-size line not ended by CRLF",
                        ));
                    }
                    let line = &buf[..eol - 1];
                    let digits_end = line
                        .iter()
                        .position(|b| !b.is_ascii_hexdigit())
                        .unwrap_or(line.len());
                    let rest = &line[digits_end..];
                    if digits_end == 0 || digits_end > 15 {
                        return Err(proto(Protocol::Chunked, "invalid chunk size"));
                    }
                    // After the digits: optional whitespace, then extensions, which are ignored.
                    let rest = rest.trim_ascii_start();
                    if !rest.is_empty() && rest[0] != b';' {
                        return Err(proto(Protocol::Chunked, "invalid chunk size"));
                    }
                    let size = line[..digits_end].iter().fold(0u64, |n, d| {
                        n * 16 + u64::from((*d as char).to_digit(16).unwrap_or(0))
                    });
                    let _ = buf.split_to(eol + 1);
                    self.state = if size == 0 {
                        ChunkState::Trailers(0)
                    } else {
                        ChunkState::Data(size)
                    };
                }
                ChunkState::Data(left) => {
                    if buf.is_empty() {
                        return Ok(Decoded::NeedMore);
                    }
                    let take = (left.min(buf.len() as u64)) as usize;
                    let data = buf.split_to(take).freeze();
                    self.state = if take as u64 == left {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left - take as u64)
                    };
                    return Ok(Decoded::Data(data));
                }
                ChunkState::DataEnd => {
                    if buf.len() < 2 {
                        return Ok(Decoded::NeedMore);
                    }
                    if &buf[..2] != b"\r\n" {
                        return Err(proto(Protocol::Chunked, "chunk data not followed by CRLF"));
                    }
                    let _ = buf.split_to(2);
                    self.state = ChunkState::Size;
                }
                ChunkState::Trailers(seen) => {
                    let Some(eol) = memchr::memchr(b'\n', buf) else {
                        if seen + buf.len() > MAX_TRAILERS {
                            return Err(proto(Protocol::Chunked, "trailer section too long"));
                        }
                        return Ok(Decoded::NeedMore);
                    };
                    if eol == 0 || buf[eol - 1] != b'\r' {
                        return Err(proto(Protocol::Chunked, "trailer line not ended by CRLF"));
                    }
                    let empty = eol == 1;
                    let _ = buf.split_to(eol + 1);
                    if empty {
                        self.state = ChunkState::Done;
                    } else if seen + eol + 1 > MAX_TRAILERS {
                        return Err(proto(Protocol::Chunked, "trailer section too long"));
                    } else {
                        self.state = ChunkState::Trailers(seen + eol + 1);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_line_is_found_wherever_it_ends() {
        for (buf, want) in [
            (&b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n"[..], true),
            (b"HTTP/1.1 200 OK\nA: b\n\n", true),
            (b"\r\n", false),
            (b"HTTP/1.1 200 OK\r\nA: b\r\n", false),
            (b"HTTP/1.1 200 OK\r\nA: b\r\n\r", false),
            (b"\n\r\n", true),
            (b"", false),
        ] {
            assert_eq!(
                has_blank_line(buf),
                want,
                "{:?}",
                String::from_utf8_lossy(buf)
            );
        }
    }

    fn decode_all(input: &[u8], splits: &[usize]) -> Result<(Vec<u8>, bool, Vec<u8>), Fault> {
        let mut dec = ChunkedDecoder::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut pos = 0;
        let mut cuts = splits.iter().copied().chain(std::iter::once(input.len()));
        loop {
            match dec.decode(&mut buf)? {
                Decoded::Data(d) => {
                    assert!(!d.is_empty());
                    out.extend_from_slice(&d)
                }
                Decoded::Done => return Ok((out, true, buf.to_vec())),
                Decoded::NeedMore => {
                    let Some(cut) = cuts.next() else {
                        return Ok((out, false, buf.to_vec()));
                    };
                    let cut = cut.clamp(pos, input.len());
                    buf.extend_from_slice(&input[pos..cut]);
                    pos = cut;
                    if cut == input.len() && buf.is_empty() {
                        return Ok((out, dec.is_done(), Vec::new()));
                    }
                }
            }
        }
    }

    fn encode(data: &[u8], piece: usize) -> Vec<u8> {
        let mut out = BytesMut::new();
        for c in data.chunks(piece.max(1)) {
            chunk_header(c.len(), &mut out);
            out.extend_from_slice(c);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out.to_vec()
    }

    #[test]
    fn decodes_chunks_extensions_and_trailers() {
        let input = b"5;name=v\r\nhello\r\n7 \r\n, world\r\n0\r\nx-sum: 1\r\n\r\nNEXT";
        let (out, done, rest) = decode_all(input, &[]).unwrap();
        assert_eq!(out, b"hello, world");
        assert!(done);
        assert_eq!(rest, b"NEXT");
    }

    #[test]
    fn rejects_broken_framing() {
        for bad in [
            &b"zz\r\n"[..],
            b"5\nhello\r\n0\r\n\r\n",
            b"5\r\nhelloXX0\r\n\r\n",
            b"\r\n",
            b"5x\r\nhello\r\n",
            b"1234567890abcdef0\r\n",
            b"0\r\nbad trailer\n\r\n",
        ] {
            assert!(
                decode_all(bad, &[]).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn any_split_gives_the_same_body() {
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
        for piece in [1, 7, 100, 4096] {
            let enc = encode(&data, piece);
            for step in [1, 2, 3, 5, 64, 1000, enc.len()] {
                let splits: Vec<usize> = (step..enc.len()).step_by(step).collect();
                let (out, done, rest) = decode_all(&enc, &splits).unwrap();
                assert!(done);
                assert!(rest.is_empty());
                assert_eq!(out, data, "piece {piece} step {step}");
            }
        }
    }

    /// Deterministic mutation fuzzing: byte flips, deletions and insertions in valid encodings, split at
    /// varying points, must give a result or an error, never a panic, a loop, or more data than the input.
    #[test]
    fn mutated_encodings_never_panic() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let data: Vec<u8> = (0..600u32)
            .map(|i| b"0123456789abcdef\r\n;"[i as usize % 19])
            .collect();
        for round in 0..4000 {
            let mut enc = encode(&data, 1 + (round % 90));
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % enc.len();
                match next() % 3 {
                    0 => enc[at] = next() as u8,
                    1 => {
                        enc.remove(at);
                    }
                    _ => enc.insert(at, b"\r\n;0aF \t"[(next() % 8) as usize]),
                }
                if enc.is_empty() {
                    enc.push(b'0');
                }
            }
            let step = 1 + (next() as usize % 50);
            let splits: Vec<usize> = (step..enc.len()).step_by(step).collect();
            if let Ok((out, _, _)) = decode_all(&enc, &splits) {
                assert!(out.len() <= enc.len());
            }
        }
    }

    #[test]
    fn response_heads_and_framing() {
        let get = Method::GET;
        let (h, n) = parse_response_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSOAPAction: x\r\n\r\nhello",
            &get,
        )
        .unwrap()
        .unwrap();
        assert_eq!(n, 53);
        assert_eq!(h.status, 200);
        assert_eq!(h.framing, ResponseFraming::Length(5));
        assert!(h.keep_alive);
        assert_eq!(h.headers["soapaction"], "x");

        let (h, _) = parse_response_head(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 E\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            &get,
        )
        .unwrap()
        .unwrap();
        assert_eq!(h.status, 500);
        assert!(matches!(h.framing, ResponseFraming::Chunked(_)));

        let (h, _) = parse_response_head(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", &get)
            .unwrap()
            .unwrap();
        assert!(!h.keep_alive, "HTTP/1.0 without keep-alive closes");
        let (h, _) = parse_response_head(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n",
            &get,
        )
        .unwrap()
        .unwrap();
        assert!(h.keep_alive);
        let (h, _) = parse_response_head(b"HTTP/1.1 200 OK\r\n\r\n", &get)
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, ResponseFraming::Close);
        assert!(!h.keep_alive);
        let (h, _) = parse_response_head(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            &get,
        )
        .unwrap()
        .unwrap();
        assert!(!h.keep_alive);
        let (h, _) = parse_response_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n",
            &Method::HEAD,
        )
        .unwrap()
        .unwrap();
        assert_eq!(h.framing, ResponseFraming::Empty);
        let (h, _) = parse_response_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n",
            &get,
        )
        .unwrap()
        .unwrap();
        assert!(matches!(h.framing, ResponseFraming::Chunked(_)));
        assert!(!h.keep_alive && !h.headers.contains_key("content-length"));

        assert!(parse_response_head(b"HTTP/1.1 200 OK\r\nContent-Le", &get)
            .unwrap()
            .is_none());
        for bad in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 101 Switching\r\n\r\n",
            b"SMTP ready\r\n\r\n",
        ] {
            assert!(parse_response_head(bad, &get).is_err());
        }
    }

    #[test]
    fn request_heads() {
        let mut h = HeaderMap::new();
        h.insert("host", "b:80".parse().unwrap());
        h.insert("content-length", "99".parse().unwrap());
        h.insert("soapaction", "\"urn:x\"".parse().unwrap());
        let mut out = BytesMut::new();
        write_request_head(
            (&Method::POST, "/s?a=1", Version::HTTP_11),
            &h,
            RequestFraming::Length(1234),
            None,
            &mut out,
        );
        assert_eq!(
            &out[..],
            b"POST /s?a=1 HTTP/1.1\r\nhost: b:80\r\nsoapaction: \"urn:x\"\r\ncontent-length: 1234\r\n\r\n"
        );
        out.clear();
        write_request_head(
            (&Method::GET, "", Version::HTTP_11),
            &HeaderMap::new(),
            RequestFraming::Empty,
            None,
            &mut out,
        );
        assert_eq!(&out[..], b"GET / HTTP/1.1\r\n\r\n");
        out.clear();
        write_request_head(
            (&Method::PUT, "/", Version::HTTP_11),
            &HeaderMap::new(),
            RequestFraming::Chunked,
            None,
            &mut out,
        );
        assert_eq!(
            &out[..],
            b"PUT / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        out.clear();
        chunk_header(0x1a2b, &mut out);
        chunk_header(0, &mut out);
        assert_eq!(&out[..], b"1a2b\r\n0\r\n");
        out.clear();
        write_request_head(
            (&Method::POST, "/", Version::HTTP_11),
            &HeaderMap::new(),
            RequestFraming::Length(u64::MAX),
            None,
            &mut out,
        );
        assert!(out.ends_with(b"content-length: 18446744073709551615\r\n\r\n"));
        out.clear();
        write_request_head(
            (&Method::GET, "http://b:80/s", Version::HTTP_10),
            &HeaderMap::new(),
            RequestFraming::Empty,
            None,
            &mut out,
        );
        assert_eq!(&out[..], b"GET http://b:80/s HTTP/1.0\r\n\r\n");
        // A made correlation ID: written when the headers hold none, else theirs stands.
        let name = http::HeaderName::from_static("activityid");
        let id = sluice_mediation::message::Id(0x0123_4567_89ab_4def, 0x8123_4567_89ab_cdef);
        out.clear();
        write_request_head(
            (&Method::GET, "/", Version::HTTP_11),
            &HeaderMap::new(),
            RequestFraming::Empty,
            Some((&name, id)),
            &mut out,
        );
        assert_eq!(
            &out[..],
            b"GET / HTTP/1.1\r\nactivityid: 01234567-89ab-4def-8123-456789abcdef\r\n\r\n"
        );
        out.clear();
        let mut theirs = HeaderMap::new();
        theirs.insert(&name, "set-by-a-mediator".parse().unwrap());
        write_request_head(
            (&Method::GET, "/", Version::HTTP_11),
            &theirs,
            RequestFraming::Empty,
            Some((&name, id)),
            &mut out,
        );
        assert_eq!(
            &out[..],
            b"GET / HTTP/1.1\r\nactivityid: set-by-a-mediator\r\n\r\n"
        );
    }
}
