//! The back-end client's HTTP/1.1 against scripted back-ends on raw TCP: response framings (length,
//! chunked, to the end of the connection), interim responses, connection reuse, connections the
//! back-end closes while idle, chunked request bodies, and invalid responses.

mod common;
use common::*;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BODY: &str = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><a>1</a></soapenv:Body></soapenv:Envelope>";

/// The test body posted to the proxy `Plain`, its answer.
async fn plain(c: &mut Conn) -> Reply {
    c.soap("/services/Plain", BODY).await
}

/// What a scripted back-end saw and did.
#[derive(Default)]
struct Log {
    /// Every request, raw (head and body as they came on the wire).
    requests: Mutex<Vec<Vec<u8>>>,
    connections: AtomicUsize,
}

/// A back-end on raw TCP. Each request on a connection is answered with what `answer` gives for the
/// raw request: the response bytes, and whether to close the connection after them.
async fn scripted<F>(answer: F) -> (SocketAddr, Arc<Log>)
where
    F: Fn(&[u8]) -> (Vec<u8>, bool) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Arc::new(Log::default());
    let answer = Arc::new(answer);
    let log2 = log.clone();
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else {
                continue;
            };
            log2.connections.fetch_add(1, Ordering::SeqCst);
            let (log, answer) = (log2.clone(), answer.clone());
            tokio::spawn(async move {
                let mut s = s;
                let mut buf = Vec::new();
                while let Some(req) = read_request(&mut s, &mut buf).await {
                    let (resp, close) = answer(&req);
                    log.requests.lock().unwrap().push(req);
                    if s.write_all(&resp).await.is_err() || close {
                        return;
                    }
                }
            });
        }
    });
    (addr, log)
}

/// Sluice on the `failures` config in front of a [`scripted`] back-end, a connection to it, and
/// the back-end's log.
async fn behind_sluice<F>(answer: F) -> (Sluice, Conn, Arc<Log>)
where
    F: Fn(&[u8]) -> (Vec<u8>, bool) + Send + Sync + 'static,
{
    let (addr, log) = scripted(answer).await;
    let s = Sluice::failures_config(addr);
    let c = Conn::open(s.addr).await;
    (s, c, log)
}

/// One whole request from `s` (bytes after it stay in `buf`), or None at the end of the connection.
async fn read_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut chunk = [0u8; 16384];
    loop {
        if let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4) {
            let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
            let end = if head.contains("transfer-encoding: chunked") {
                buf[head_end..]
                    .windows(5)
                    .position(|w| w == b"0\r\n\r\n")
                    .map(|p| head_end + p + 5)
            } else {
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                (buf.len() >= head_end + len).then_some(head_end + len)
            };
            if let Some(end) = end {
                return Some(buf.drain(..end).collect());
            }
        }
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn ok_with_length(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_response_is_decoded_and_the_connection_reused() {
    let (_s, mut c, log) = behind_sluice(|_| {
        let resp = "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nTransfer-Encoding: chunked\r\nX-Back: 1\r\n\r\n\
                    4;ext=1\r\n<ok>\r\n\
                    1A\r\nabcdefghijklmnopqrstuvwxyz\r\n\
                    5\r\n</ok>\r\n\
                    0\r\nX-Trailer: t\r\n\r\n";
        (resp.as_bytes().to_vec(), false)
    })
    .await;
    for _ in 0..3 {
        let r = plain(&mut c).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), "<ok>abcdefghijklmnopqrstuvwxyz</ok>");
        assert_eq!(r.header("x-back"), "1");
    }
    assert_eq!(log.requests.lock().unwrap().len(), 3);
    assert_eq!(
        log.connections.load(Ordering::SeqCst),
        1,
        "one kept-alive connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_ending_with_the_connection_is_relayed_whole() {
    let (_s, mut c, log) = behind_sluice(|_| {
        let mut resp =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nConnection: close\r\n\r\n".to_vec();
        resp.extend(std::iter::repeat_n(b'x', 200_000));
        (resp, true)
    })
    .await;
    for _ in 0..2 {
        let r = plain(&mut c).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), 200_000);
        assert!(r.body.iter().all(|b| *b == b'x'));
    }
    assert_eq!(log.connections.load(Ordering::SeqCst), 2, "not reused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_backend_closes_after_each_response_are_not_errors() {
    // Keep-alive is implied (HTTP/1.1, no Connection: close), yet the back-end closes after every
    // response: the next request finds the pooled connection closed and must not fail.
    let (addr, log) = scripted(|_| (ok_with_length("<done/>"), true)).await;
    let s = Sluice::failures_config(addr);
    let baseline = s.fd_count();
    let mut c = Conn::open(s.addr).await;
    for i in 0..20 {
        let r = plain(&mut c).await;
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
        assert_eq!(r.text(), "<done/>");
    }
    assert_eq!(log.requests.lock().unwrap().len(), 20);
    // The last pooled connection, closed by the back-end, is closed by the pool's sweep (once a
    // second) without waiting for another request: no socket left in CLOSE_WAIT.
    drop(c);
    s.assert_fds_back_to(baseline, std::time::Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interim_responses_are_skipped() {
    let (_s, mut c, _log) = behind_sluice(|_| {
        let mut resp =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n".to_vec();
        resp.extend(ok_with_length("<final/>"));
        (resp, false)
    })
    .await;
    let r = plain(&mut c).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "<final/>");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_responses_give_502_naming_the_problem() {
    let (addr, _log) = scripted(|req| {
        let resp: &[u8] = if req.windows(4).any(|w| w == b"bad1") {
            b"HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n"
        } else {
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n"
        };
        (resp.to_vec(), false)
    })
    .await;
    let s = Sluice::failures_config(addr);
    let baseline = s.fd_count();
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/services/Plain", "<bad1/>").await;
    assert_eq!(r.status, 502);
    assert!(
        r.text().contains("invalid HTTP response") && r.text().contains("Content-Length"),
        "{}",
        r.text()
    );
    // A broken body after a good head: the head was relayed, so the client's response is cut.
    let mut c2 = Conn::open(s.addr).await;
    assert!(c2
        .post("/services/Plain", SOAP_HEADERS, "<bad2/>".into())
        .await
        .is_err());
    drop((c, c2));
    s.assert_fds_back_to(baseline, std::time::Duration::from_secs(5));
}

/// A back-end that reads a whole request on a new connection and then closes it without a word may
/// have acted on it: the request is not sent again (a POST would be duplicated), and the client gets
/// a 502 naming the closed connection. (A new connection reset before the request was read, and a
/// pooled one the back-end closed while idle, are still sent again: nothing acted on them.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_read_then_left_unanswered_is_not_sent_again() {
    let (_s, mut c, log) = behind_sluice(|_| (Vec::new(), true)).await;
    let r = plain(&mut c).await.assert_status(502);
    assert!(r.text().contains("closed the connection"), "{}", r.text());
    assert_eq!(
        log.requests.lock().unwrap().len(),
        1,
        "the request reached the back-end again"
    );
    assert_eq!(log.connections.load(Ordering::SeqCst), 1);
}

/// A new connection the back-end resets with the request unread (it closes the socket with the
/// bytes still waiting, as an overloaded server does) did not take the request: it is sent again on
/// another connection, which answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_reset_unread_is_sent_again() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let seen = requests.clone();
    tokio::spawn(async move {
        let mut first = true;
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                continue;
            };
            if std::mem::take(&mut first) {
                // Closing with unread bytes resets the connection: wait until the request's first
                // bytes are there (peek leaves them unread), then close.
                let _ = s.peek(&mut [0u8; 1]).await;
                drop(s);
                continue;
            }
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while read_request(&mut s, &mut buf).await.is_some() {
                    seen.fetch_add(1, Ordering::SeqCst);
                    if s.write_all(&ok_with_length("<done/>")).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let s = Sluice::failures_config(addr);
    let mut c = Conn::open(s.addr).await;
    let r = plain(&mut c).await.assert_status(200);
    assert_eq!(r.text(), "<done/>");
    assert_eq!(requests.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_request_body_is_relayed_chunked() {
    let (addr, log) = scripted(|_| (ok_with_length("<fine/>"), false)).await;
    let s = Sluice::failures_config(addr);
    let mut raw = TcpStream::connect(s.addr).await.unwrap();
    let parts = [
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">",
        "<soapenv:Body><a>",
        "chunked</a></soapenv:Body>",
        "</soapenv:Envelope>",
    ];
    let mut req = format!(
        "POST /services/Plain HTTP/1.1\r\nHost: {}\r\nContent-Type: text/xml\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        s.addr
    )
    .into_bytes();
    for p in parts {
        req.extend(format!("{:x}\r\n{p}\r\n", p.len()).into_bytes());
    }
    req.extend(b"0\r\n\r\n");
    raw.write_all(&req).await.unwrap();
    let mut resp = Vec::new();
    raw.read_to_end(&mut resp).await.unwrap();
    let resp = String::from_utf8_lossy(&resp);
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.ends_with("<fine/>"), "{resp}");
    let seen = log.requests.lock().unwrap();
    let seen = String::from_utf8_lossy(&seen[0]).into_owned();
    let (head, body) = seen.split_once("\r\n\r\n").unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    assert!(
        !head.to_ascii_lowercase().contains("content-length"),
        "{head}"
    );
    // Decode what the back-end got and compare with what the client sent.
    let mut rest = body;
    let mut got = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let n = usize::from_str_radix(size, 16).unwrap();
        if n == 0 {
            break;
        }
        got.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
    assert_eq!(got, parts.concat());
}
