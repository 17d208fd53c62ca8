//! Pass-through streaming: a body far larger than memory bounds goes through without Sluice buffering it.

mod common;
use bytes::Bytes;
use common::*;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};
use hyper_util::rt::TokioIo;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A request body generated on the fly: `chunks` copies of one chunk.
struct Generated {
    chunk: Bytes,
    left: u64,
}

impl Body for Generated {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(Frame::data(self.chunk.clone()))))
    }
    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left * self.chunk.len() as u64)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_512_mib_post_streams_through_with_bounded_memory() {
    const CHUNK: usize = 64 * 1024;
    const TOTAL: u64 = 512 * 1024 * 1024;
    let be = backend().await;
    let ep = format!("RealService=http://{}/service/EchoService", be.addr);
    let s = Sluice::start(&["run", capp().to_str().unwrap(), "--endpoint", &ep]);

    let stream = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let post = |n_chunks: u64, send: &mut hyper::client::conn::http1::SendRequest<Generated>| {
        let chunk = Bytes::from(vec![b'x'; CHUNK]);
        let req = hyper::Request::post("/services/DirectProxy")
            .header("host", "sluice")
            .header("content-type", "text/xml")
            .body(Generated {
                chunk,
                left: n_chunks,
            })
            .unwrap();
        send.send_request(req)
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
