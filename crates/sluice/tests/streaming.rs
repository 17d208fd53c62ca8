//! Pass-through streaming: a body far larger than memory bounds goes through without Sluice buffering it.

mod common;
use bytes::Bytes;
use common::setup::*;
use common::*;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};
use hyper_util::rt::TokioIo;
use std::iter::{Chain, RepeatN};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A request body whose frames come from an iterator as they are polled: sent with Content-Length
/// `len`, or chunked (a chunk a frame) without one.
struct Frames<I> {
    frames: I,
    len: Option<u64>,
}

impl<I: Iterator<Item = Bytes> + Unpin> Body for Frames<I> {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.frames.next().map(|b| Ok(Frame::data(b))))
    }
    fn size_hint(&self) -> SizeHint {
        self.len.map(SizeHint::with_exact).unwrap_or_default()
    }
}

/// `n` copies of one chunk, generated as they are sent.
type Generated = Frames<RepeatN<Bytes>>;

fn generated(chunk: Bytes, n: u64) -> Generated {
    let len = n * chunk.len() as u64;
    Frames {
        frames: std::iter::repeat_n(chunk, usize::try_from(n).unwrap()),
        len: Some(len),
    }
}

/// The echo back-end, Sluice on the WSO2 CAR configuration in front of it, and one client connection
/// to Sluice sending request bodies of type `B`.
async fn capp_with_client<B>() -> (Backend, Sluice, hyper::client::conn::http1::SendRequest<B>)
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let stream = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    (be, s, send)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_512_mib_post_streams_through_with_bounded_memory() {
    const CHUNK: usize = 64 * 1024;
    const TOTAL: u64 = 512 * 1024 * 1024;
    let (_be, s, mut send) = capp_with_client().await;
    let post = |n_chunks: u64, send: &mut hyper::client::conn::http1::SendRequest<Generated>| {
        let chunk = Bytes::from(vec![b'x'; CHUNK]);
        let body = generated(chunk, n_chunks);
        send.send_request(xml_post("/services/DirectProxy", None, body))
    };
    // Warm up (pools, buffers) with 1 MiB, then take the peak RSS as the baseline.
    let r = post(16, &mut send)
        .await
        .unwrap_or_else(|e| panic!("warm-up request: {e:?}; sluice stderr: {}", s.stderr()));
    assert_eq!(
        r.into_body().collect().await.unwrap().to_bytes().len(),
        16 * CHUNK
    );
    let hwm_before = s.status_kb("VmHWM");

    send.ready().await.unwrap();
    let resp = post(TOTAL / CHUNK as u64, &mut send).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-length"], TOTAL.to_string().as_str());
    let mut body = resp.into_body();
    let mut got = 0u64;
    while let Some(f) = body.frame().await {
        if let Ok(d) = f.unwrap().into_data() {
            assert!(d.iter().all(|&b| b == b'x'));
            got += d.len() as u64;
        }
    }
    assert_eq!(got, TOTAL, "every byte came back");
    let hwm_after = s.status_kb("VmHWM");
    let growth_kb = hwm_after.saturating_sub(hwm_before);
    eprintln!("sluice peak RSS {hwm_before} kB before, {hwm_after} kB after 512 MiB: growth {growth_kb} kB");
    assert!(
        growth_kb < 20 * 1024,
        "peak RSS grew by {growth_kb} kB streaming 512 MiB; must stay under 20 MB"
    );
}

/// A SOAP request of chunks of orders after a `routing` SOAP header, generated as it is sent.
type Envelope =
    Frames<Chain<Chain<std::iter::Once<Bytes>, RepeatN<Bytes>>, std::iter::Once<Bytes>>>;

const HEAD: &str = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">\
<soapenv:Header><routing xmlns=\"http://someuri\">xadmin;server1;community#1.0##</routing></soapenv:Header>\
<soapenv:Body><m:buyStocks xmlns:m=\"http://services.samples/xsd\">";
const TAIL: &str = "</m:buyStocks></soapenv:Body></soapenv:Envelope>";

/// An [`Envelope`] of `chunks` chunks of `orders_per_chunk` orders each, and its length.
fn envelope(orders_per_chunk: usize, chunks: u64) -> (Envelope, u64) {
    let order = "<order><symbol>IBM</symbol><buyerID>a</buyerID><price>1.0</price><volume>1</volume></order>"
        .repeat(orders_per_chunk);
    let len = (HEAD.len() + TAIL.len()) as u64 + chunks * order.len() as u64;
    // The first frame carries the header and several chunks at once (over 256 KiB, more than
    // the transport probes frame by frame), as a fast client on a kept-alive connection does.
    let first = chunks.min(5);
    let mut start = HEAD.as_bytes().to_vec();
    for _ in 0..first {
        start.extend_from_slice(order.as_bytes());
    }
    let rest = std::iter::repeat_n(Bytes::from(order), usize::try_from(chunks - first).unwrap());
    let frames = std::iter::once(Bytes::from(start))
        .chain(rest)
        .chain(std::iter::once(Bytes::from_static(TAIL.as_bytes())));
    (
        Frames {
            frames,
            len: Some(len),
        },
        len,
    )
}

/// Routing on a SOAP header reads only up to the header and relays the rest: a message larger than
/// the buffering limit (64 MiB) goes through CBRSOAPHeaderProxy whole, with bounded memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soap_header_routing_streams_the_rest_of_a_96_mib_message() {
    const ORDERS: usize = 700; // about 64 KiB a chunk
    const CHUNKS: u64 = 1500;
    let (_be, s, mut send) = capp_with_client().await;
    let post = |chunks: u64, send: &mut hyper::client::conn::http1::SendRequest<Envelope>| {
        let body = envelope(ORDERS, chunks).0;
        send.send_request(xml_post(
            "/services/CBRSOAPHeaderProxy",
            Some("urn:buy"),
            body,
        ))
    };
    // Warm up (pools, buffers) with about 1 MiB, then take the peak RSS as the baseline.
    let small = post(16, &mut send).await.unwrap();
    assert_eq!(small.status(), 200, "{}", s.stderr());
    let body = small.into_body().collect().await.unwrap().to_bytes();
    assert!(body.starts_with(HEAD.as_bytes()) && body.ends_with(TAIL.as_bytes()));
    let hwm_before = s.status_kb("VmHWM");

    send.ready().await.unwrap();
    let expected = envelope(ORDERS, CHUNKS).1;
    assert!(
        expected > 64 * 1024 * 1024,
        "larger than the buffering limit"
    );
    let resp = post(CHUNKS, &mut send).await.unwrap();
    assert_eq!(resp.status(), 200, "{}", s.stderr());
    assert_eq!(
        resp.headers()["content-length"],
        expected.to_string().as_str()
    );
    let mut body = resp.into_body();
    let (mut got, mut first, mut last) = (0u64, Vec::new(), Vec::new());
    while let Some(f) = body.frame().await {
        if let Ok(d) = f.unwrap().into_data() {
            if first.len() < HEAD.len() {
                first.extend_from_slice(&d[..d.len().min(HEAD.len() - first.len())]);
            }
            last.extend_from_slice(&d);
            let keep = last.len().saturating_sub(TAIL.len());
            last.drain(..keep);
            got += d.len() as u64;
        }
    }
    assert_eq!(got, expected, "every byte came back");
    assert_eq!(first, HEAD.as_bytes());
    assert_eq!(last, TAIL.as_bytes());
    let growth_kb = s.status_kb("VmHWM").saturating_sub(hwm_before);
    eprintln!("CBRSOAPHeaderProxy, {expected} bytes: peak RSS growth {growth_kb} kB");
    assert!(
        growth_kb < 20 * 1024,
        "peak RSS grew by {growth_kb} kB; the body must not be buffered"
    );
}

/// A SOAP POST to `service` of `message` sent chunked, `size` bytes a frame.
fn chunked_post(
    service: &str,
    message: &[u8],
    size: usize,
) -> hyper::Request<Frames<std::vec::IntoIter<Bytes>>> {
    let pieces: Vec<Bytes> = message.chunks(size).map(Bytes::copy_from_slice).collect();
    let body = Frames {
        frames: pieces.into_iter(),
        len: None,
    };
    xml_post(&format!("/services/{service}"), Some("urn:buy"), body)
}

/// A POST of `body` to `path` as text/xml, with a SOAPAction when `action` is one.
fn xml_post<B>(path: &str, action: Option<&str>, body: B) -> hyper::Request<B> {
    let mut req = hyper::Request::post(path)
        .header("host", "sluice")
        .header("content-type", "text/xml");
    if let Some(a) = action {
        req = req.header("soapaction", a);
    }
    req.body(body).unwrap()
}

/// The SOAP header arriving over many body frames (16-byte chunks): the start is gathered across
/// frames until the header is decided, and the back-end gets the whole message unchanged after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soap_header_split_over_many_frames_is_gathered_and_relayed_whole() {
    let (_be, s, mut send) = capp_with_client().await;
    let body = payload("1000B_buyStocks.xml");
    let wrong = Bytes::from(
        String::from_utf8(body.to_vec())
            .unwrap()
            .replace("xadmin;server1;community#1.0##", "guest"),
    );
    for (message, status) in [(body.clone(), 200), (wrong, 500)] {
        let req = chunked_post("CBRSOAPHeaderProxy", &message, 16);
        send.ready().await.unwrap();
        let resp = send.send_request(req).await.unwrap();
        assert_eq!(resp.status(), status, "{}", s.stderr());
        let got = resp.into_body().collect().await.unwrap().to_bytes();
        if status == 200 {
            assert_eq!(got, message);
        } else {
            assert!(String::from_utf8_lossy(&got).contains("Invalid routing header"));
        }
    }
}

/// A body the flow reads whole (CBRProxy's `//order[1]/symbol`) arriving in pieces or in one frame:
/// the pieces are joined in order and the back-end gets the message as sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_read_whole_is_joined_from_its_frames() {
    let (_be, s, mut send) = capp_with_client().await;
    let body = payload("1000B_buyStocks.xml");
    for size in [7, 100, body.len()] {
        let req = chunked_post("CBRProxy", &body, size);
        send.ready().await.unwrap();
        let resp = send.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 200, "{}", s.stderr());
        let got = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(got, body, "pieces of {size} bytes");
    }
}
