//! Issue 30's regressions: no request can stall a worker or exhaust memory. Strict request heads,
//! slow bodies cut, bodies in memory bounded, large messages mediated off the event loop with a
//! deadline, and a body-less GET relayed without a body.

mod common;
use common::setup::*;
use common::*;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A file for one test (a `--config` file), removed when the test is done with it.
struct Settings(PathBuf);

impl Drop for Settings {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes the settings `toml` to a file named for `name`.
fn settings(name: &str, toml: &str) -> Settings {
    let p = std::env::temp_dir().join(format!("sluice-limits-{}-{name}.toml", std::process::id()));
    std::fs::write(&p, toml).unwrap();
    Settings(p)
}

/// Sluice on the WSO2 CAR, its back-end at `backend`, with the settings file if any and `more`
/// arguments.
fn start(backend: SocketAddr, config: Option<&Settings>, more: &[&str]) -> Sluice {
    let mut args = Vec::new();
    if let Some(c) = config {
        args.extend(["--config", c.0.to_str().unwrap()]);
    }
    args.extend(more);
    start_on_capp(&capp(), backend, &args)
}

/// The echo back-end, and [`start`] in front of it with the settings `toml` (see [`settings`]).
async fn with_settings(name: &str, toml: &str, more: &[&str]) -> (Backend, Sluice, Settings) {
    let be = backend().await;
    let cfg = settings(name, toml);
    let s = start(be.addr, Some(&cfg), more);
    (be, s, cfg)
}

/// Sends DirectProxy requests one after the other until `heavy` has finished and then for `after`
/// more: how many were answered (each 200) and the slowest.
async fn serve_direct_while<T>(
    addr: SocketAddr,
    heavy: &tokio::task::JoinHandle<T>,
    after: Duration,
) -> (usize, Duration) {
    let mut c = Conn::open(addr).await;
    let (mut served, mut slowest) = (0, Duration::ZERO);
    let mut finished: Option<Instant> = None;
    while finished.is_none_or(|t| t.elapsed() < after) {
        let sent = Instant::now();
        let r = c
            .soap("/services/DirectProxy", payload("1000B_buyStocks.xml"))
            .await;
        assert_eq!(r.status, 200);
        slowest = slowest.max(sent.elapsed());
        served += 1;
        if finished.is_none() && heavy.is_finished() {
            finished = Some(Instant::now());
        }
        assert!(served < 100_000);
    }
    (served, slowest)
}

/// Sends `bytes` on a new connection and reads what comes back until the server closes it (or 20 s
/// pass, which fails the test).
async fn exchange(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
        .await
        .expect("the server answers and closes")
        .ok();
    String::from_utf8_lossy(&out).into_owned()
}

fn status_of(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_heads_are_held_to_rfc_9112() {
    let be = backend().await;
    let s = start(be.addr, None, &[]);
    let body = "<a/>";
    let post = |method: &str, headers: &str| {
        format!(
            "{method} /services/DirectProxy HTTP/1.1\r\n{headers}Content-Type: text/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let host = "Host: sluice\r\n";
    // What was fine stays fine: HTTP/1.1 with one Host, HTTP/1.0 without one.
    assert_eq!(
        status_of(&exchange(s.addr, post("POST", host).as_bytes()).await),
        200
    );
    let old = format!(
        "POST /services/DirectProxy HTTP/1.0\r\nContent-Type: text/xml\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(status_of(&exchange(s.addr, old.as_bytes()).await), 200);

    let no_host = exchange(s.addr, post("POST", "").as_bytes()).await;
    assert_eq!(status_of(&no_host), 400, "{no_host}");
    assert!(no_host.contains("without Host"), "{no_host}");
    let two = exchange(s.addr, post("POST", &format!("{host}{host}")).as_bytes()).await;
    assert_eq!(status_of(&two), 400, "{two}");
    assert!(two.contains("more than one Host"), "{two}");
    let long = exchange(s.addr, post(&"X".repeat(10_000), host).as_bytes()).await;
    assert_eq!(status_of(&long), 400, "{long}");
    let not_token = exchange(s.addr, post("PO(ST", host).as_bytes()).await;
    assert_eq!(status_of(&not_token), 400, "{not_token}");
    // One header of 420 KiB, and many that add up past 64 KiB.
    let big = format!("{host}X-Big: {}\r\n", "a".repeat(420 * 1024));
    assert_eq!(
        status_of(&exchange(s.addr, post("POST", &big).as_bytes()).await),
        431
    );
    let many: String = (0..90)
        .map(|i| format!("X-H{i}: {}\r\n", "b".repeat(1000)))
        .collect();
    let many = format!("{host}{many}");
    assert_eq!(
        status_of(&exchange(s.addr, post("POST", &many).as_bytes()).await),
        431
    );
    // Nothing refused reached the back-end.
    assert_eq!(be.seen.lock().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_without_a_body_is_relayed_without_one() {
    let be = backend().await;
    let s = start(be.addr, None, &[]);
    let mut c = Conn::open(s.addr).await;
    let r = c.get("/services/DirectProxy").await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c
        .send_with("DELETE", "/services/DirectProxy", &[], bytes::Bytes::new())
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = be.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for s in &seen {
        assert!(
            !s.headers.contains_key("transfer-encoding"),
            "{} went out with {:?}",
            s.method,
            s.headers
        );
        assert_eq!(s.body.as_deref(), None, "{} had a body", s.method);
    }
}

/// A client that sends its head and then one byte of its body at a time, slowly: answered 408 once
/// the grace period is over, and the back-end connection its body was relayed on is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_body_is_cut_and_its_backend_connection_released() {
    let (closed_tx, mut closed_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let (be, _h) = raw_backend(move |mut s| {
        let closed = closed_tx.clone();
        async move {
            // Reads what is relayed until Sluice closes the connection.
            let mut buf = [0u8; 4096];
            let mut n = 0;
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(k) => n += k,
                }
            }
            let _ = closed.send(n);
        }
    })
    .await;
    let cfg = settings(
        "trickle",
        "[transport.http]\nrequest_body_grace = 1\nrequest_body_min_rate = 100\n",
    );
    let s = start(be, Some(&cfg), &[]);
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    c.write_all(b"POST /services/DirectProxy HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Length: 1000\r\n\r\n<")
        .await
        .unwrap();
    let began = Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    // One byte every 200 ms: 5 bytes a second against the 100 asked for.
    loop {
        tokio::select! {
            r = c.read(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(k) => answer.extend_from_slice(&buf[..k]),
            },
            _ = tokio::time::sleep(Duration::from_millis(200)) => {
                if c.write_all(b"a").await.is_err() {
                    break;
                }
            }
        }
        assert!(began.elapsed() < Duration::from_secs(30), "never cut off");
    }
    let answer = String::from_utf8_lossy(&answer);
    assert_eq!(status_of(&answer), 408, "{answer}");
    assert!(answer.contains("slower than 100 bytes/s"), "{answer}");
    let relayed = tokio::time::timeout(Duration::from_secs(10), closed_rx.recv())
        .await
        .expect("the back-end connection is closed")
        .unwrap();
    assert!(relayed > 0, "the head went to the back-end before the cut");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_in_memory_are_bounded_per_message_and_in_all() {
    let (_be, s, _cfg) = with_settings(
        "budget",
        "[transport.http]\nmax_body_size = 500000\nmax_buffered_bytes = 50000\n",
        &[],
    )
    .await;
    // A length over the limit is refused before any of the body is read: only the head is sent.
    let head = "POST /services/CBRProxy HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Length: 200000000\r\n\r\n";
    let refused = exchange(s.addr, head.as_bytes()).await;
    assert_eq!(status_of(&refused), 413, "{refused}");
    // Within the message limit but past what all bodies may hold: 503 with Retry-After.
    let mut c = Conn::open(s.addr).await;
    let big = payload("100000B_buyStocks.xml");
    let r = c.soap("/services/CBRProxy", big).await.assert_status(503);
    assert_eq!(r.header("retry-after"), "1");
    // Small bodies are not counted, and a refused one left nothing held.
    let mut c = Conn::open(s.addr).await;
    let small = payload("1000B_buyStocks.xml");
    c.soap("/services/CBRProxy", small).await.assert_status(200);
}

/// A large message is mediated off the event loop, with a deadline: past it the client gets a
/// fault, and the worker serves others all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_mediation_has_a_deadline_and_others_are_served_meanwhile() {
    let (_be, s, _cfg) = with_settings(
        "deadline",
        "[mediation]\noffload_above = 65536\noffload_threads = 1\ndeadline = 100\n",
        &["--workers", "1"],
    )
    .await;
    // About 20 MB for XSLTProxy: libxslt takes far longer than 100 ms over it.
    let order = "<order><price>1.0</price><volume>10</volume><symbol>IBM</symbol></order>";
    let mut big = String::from("<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><buyStocks>");
    while big.len() < 20_000_000 {
        big.push_str(order);
    }
    big.push_str("</buyStocks></soapenv:Body></soapenv:Envelope>");
    let addr = s.addr;
    let heavy = tokio::spawn(async move {
        let mut c = Conn::open(addr).await;
        let r = c.soap("/services/XSLTProxy", big).await;
        (Instant::now(), r)
    });
    // The one worker keeps answering while the heavy message is mediated, and after its answer,
    // while libxslt still runs on the mediation thread (a run is stopped between mediators).
    let (served, slowest) = serve_direct_while(s.addr, &heavy, Duration::from_secs(1)).await;
    let (_, r) = heavy.await.unwrap();
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("deadline of 100 ms"), "{}", r.text());
    // A wide bound: mediated on the event loop, libxslt over 20 MB would hold it for seconds.
    assert!(
        slowest < Duration::from_millis(500),
        "a DirectProxy request waited {slowest:?} ({served} served)"
    );
}

/// A script runs off the event loop whatever its message's size: one that loops until its own time
/// limit does not hold the only worker, which serves others all along; the looping message ends in
/// the fault path with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_script_leaves_the_worker_free() {
    let be = backend().await;
    let config = synapse_xml(
        "limits-script",
        &format!(
            r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <proxy name="Loop"><target><inSequence>
    <script language="js">while (true) {{}}</script>
    <respond/>
  </inSequence></target></proxy>
  <proxy name="DirectProxy"><target>
    <endpoint><address uri="http://{}/services/SimpleStockQuoteService"/></endpoint>
    <outSequence><send/></outSequence>
  </target></proxy>
</definitions>"#,
            be.addr
        ),
    );
    let dir = config.parent().unwrap().to_owned();
    let s = Sluice::start(&["run", config.to_str().unwrap(), "--workers", "1"]);
    let addr = s.addr;
    let looping = tokio::spawn(async move {
        let mut c = Conn::open(addr).await;
        let body = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><a/></soapenv:Body></soapenv:Envelope>";
        c.post("/services/Loop", SOAP_HEADERS, body.into())
            .await
            .unwrap()
    });
    let (served, slowest) = serve_direct_while(s.addr, &looping, Duration::from_millis(200)).await;
    let r = looping.await.unwrap();
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("the script was stopped"), "{}", r.text());
    // A wide bound: on the event loop the script would hold the worker for its whole 2 s.
    assert!(
        slowest < Duration::from_millis(500),
        "a DirectProxy request waited {slowest:?} ({served} served)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The settings file's errors stop Sluice before it starts, with the line.
#[test]
fn a_bad_settings_file_is_refused_with_its_line() {
    let cfg = settings("bad", "[transport.http]\nmax_body_size = \"big\"\n");
    let err = refused_start(&["--config", cfg.0.to_str().unwrap(), "--port", "0"]);
    assert!(
        err.contains("max_body_size") && err.contains("line 2"),
        "{err}"
    );
}

/// An MI deployment.toml works as it is: what Sluice has no setting for (here `[server]
/// hostname` and a misspelt key) is named with its line, and Sluice starts with the settings it
/// has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mi_deployment_toml_starts_and_names_what_is_ignored() {
    let (_be, s, cfg) = with_settings(
        "mi",
        "[server]\nhostname = \"localhost\"\n[transport.http]\nmax_body_sise = 5\nmax_body_size = 1000\n",
        &[],
    )
    .await;
    let file = cfg.0.to_str().unwrap();
    let err = s.stderr_with("max_body_sise", Duration::from_secs(10));
    assert!(
        err.contains(&format!(
            "{file}:2: `server.hostname` is not a setting Sluice has: ignored"
        )) && err.contains(&format!(
            "{file}:4: `transport.http.max_body_sise` is not a setting"
        )),
        "{err}"
    );
    // max_body_size applies: a body over 1,000 bytes that a mediator reads is refused.
    let mut c = Conn::open(s.addr).await;
    c.soap("/services/CBRProxy", payload("10000B_buyStocks.xml"))
        .await
        .assert_status(413);
}

/// The attack of issue 30: one CBRProxy message whose element carries 1,000,000 attributes (12 MB).
/// It is answered by the readers (linear: the streaming reader refuses it with the error Sluice's
/// parse gives, as MI's Woodstox would), not by the mediation deadline, and the worker answers
/// DirectProxy requests all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_attributes_are_refused_and_the_worker_stays_responsive() {
    let be = backend().await;
    let s = start(be.addr, None, &["--workers", "1"]);
    let mut attrs = String::with_capacity(13_000_000);
    for i in 0..1_000_000 {
        attrs.push_str(&format!(" a{i}=\"1\""));
    }
    let body = format!(
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body>\
         <m:buyStocks xmlns:m=\"http://services.samples/xsd\"{attrs}><order><symbol>IBM</symbol>\
         </order></m:buyStocks></soapenv:Body></soapenv:Envelope>"
    );
    let addr = s.addr;
    let heavy = tokio::spawn(async move {
        let mut c = Conn::open(addr).await;
        c.soap("/services/CBRProxy", body).await
    });
    let (served, slowest) = serve_direct_while(s.addr, &heavy, Duration::ZERO).await;
    let r = heavy.await.unwrap();
    let text = r.text();
    assert_eq!(r.status, 400, "{text}");
    assert!(
        text.contains("attributes") && text.contains("the limit is 1000"),
        "{text}"
    );
    assert!(!text.contains("deadline"), "{text}");
    assert!(
        slowest < Duration::from_millis(500),
        "a DirectProxy request waited {slowest:?} ({served} served)"
    );
}

/// Parsed trees count against the budget of messages in memory, from an estimate made before
/// parsing: a JSON array of two million numbers (4 MB, about 270 MB as serde_json values) and a
/// million `<a/>` (4 MB, about 130 MB as libxml2 nodes) are refused 413 at once, the process
/// never growing by what they would have taken; an ordinary message of the same size is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parsed_trees_count_against_the_memory_budget() {
    let cfg = settings(
        "trees",
        "[transport.http]\nmax_buffered_bytes = 100000000\n",
    );
    let api = Settings(
        std::env::temp_dir().join(format!("sluice-limits-{}-trees.xml", std::process::id())),
    );
    std::fs::write(
        &api.0,
        r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <api name="T" context="/t">
    <resource methods="POST" uri-template="/json"><inSequence>
      <property name="first" expression="json-eval($.h[0])"/>
      <payloadFactory media-type="json"><format>{"first":"$1"}</format>
        <args><arg evaluator="xml" expression="$ctx:first"/></args></payloadFactory>
      <respond/></inSequence></resource>
    <resource methods="POST" uri-template="/xml"><inSequence>
      <property name="n" expression="count(//a)"/>
      <payloadFactory media-type="xml"><format><n xmlns="">$1</n></format>
        <args><arg expression="$ctx:n"/></args></payloadFactory>
      <respond/></inSequence></resource>
  </api>
</definitions>"#,
    )
    .unwrap();
    let s = Sluice::start(&[
        "run",
        api.0.to_str().unwrap(),
        "--config",
        cfg.0.to_str().unwrap(),
    ]);
    let json = [("content-type", "application/json")];
    let xml = [("content-type", "application/xml")];
    let mut dense_json = String::from("{\"h\":[1");
    dense_json.push_str(&",1".repeat(2_000_000));
    dense_json.push_str("]}");
    let dense_xml = format!("<r>{}</r>", "<a/>".repeat(1_000_000));
    let mut c = Conn::open(s.addr).await;
    for (path, headers, body) in [
        ("/t/json", &json, dense_json.clone()),
        // The same JSON read by an XPath: as WSO2 reads JSON, through its XML form.
        ("/t/xml", &json, dense_json),
        ("/t/xml", &xml, dense_xml),
    ] {
        let r = c.post(path, headers, body.into()).await.unwrap();
        assert_eq!(r.status, 413, "{path}: {}", r.text());
        assert!(r.text().contains("bytes parsed"), "{}", r.text());
    }
    let peak_mb = s.status_kb("VmHWM") / 1024;
    assert!(
        peak_mb < 120,
        "the refused trees took memory: peak {peak_mb} MB"
    );
    // Ordinary messages of the same size fit.
    let mut ordinary = String::from("{\"h\":[\"json\"");
    ordinary.push_str(&",\"json\"".repeat(500_000));
    ordinary.push_str("]}");
    let r = c.post("/t/json", &json, ordinary.into()).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), r#"{"first":"json"}"#);
    let orders = format!(
        "<r>{}</r>",
        "<order><symbol>IBM</symbol><price>140.34</price></order><a/>".repeat(60_000)
    );
    let r = c.post("/t/xml", &xml, orders.into()).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains(">60000.0</n>"), "{}", r.text());
}

/// `message` as a chunked POST to CBRSOAPHeaderProxy, one chunk (so one body frame) every 16 bytes
/// up to `small`, then every 4 KiB; the connection closes after the answer.
fn chunked_soap(message: &str, small: usize) -> Vec<u8> {
    let mut out =
        b"POST /services/CBRSOAPHeaderProxy HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\n\
SOAPAction: urn:buy\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            .to_vec();
    let (head, rest) = message.as_bytes().split_at(small.min(message.len()));
    for piece in head.chunks(16).chain(rest.chunks(4096)) {
        out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        out.extend_from_slice(piece);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// The body of a chunked answer.
fn dechunked(answer: &str) -> String {
    let (_, mut rest) = answer.split_once("\r\n\r\n").expect("a head");
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size, 16).expect("a chunk size");
        out.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
    out
}

/// A SOAP header of many other elements sent 16 bytes a frame, its `routing` block last: the head
/// probe, which past the first kilobyte looks again only once a name the header path holds has
/// arrived, still decides where `routing` arrives and streams the rest, a body larger than one
/// read whole may be. Without a Header, `Body` decides it (and the proxy answers its fault).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_header_in_small_frames_is_decided_where_its_names_arrive() {
    let (_be, s, _cfg) =
        with_settings("probe", "[transport.http]\nmax_body_size = 65536\n", &[]).await;
    let env = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">";
    let routing = "<routing xmlns=\"http://someuri\">xadmin;server1;community#1.0##</routing>";
    let order = "<order><symbol>IBM</symbol><price>1.0</price></order>";
    let body = format!(
        "<soapenv:Body><m:buyStocks xmlns:m=\"http://services.samples/xsd\">{}</m:buyStocks>\
</soapenv:Body></soapenv:Envelope>",
        order.repeat(4000)
    );
    let others = "<s>1</s>".repeat(1500);
    let with_header = format!("{env}<soapenv:Header>{others}{routing}</soapenv:Header>{body}");
    let without = format!("{env}{}{body}", " ".repeat(6000));
    assert!(body.len() > 3 * 65536);
    for (message, status) in [(with_header, 200), (without, 500)] {
        let small = message.find("<soapenv:Body>").unwrap() + 100;
        let answer = exchange(s.addr, &chunked_soap(&message, small)).await;
        assert_eq!(status_of(&answer), status, "{}", s.stderr());
        if status == 200 {
            assert_eq!(dechunked(&answer), message, "the whole message came back");
        } else {
            assert!(answer.contains("Invalid routing header"), "{answer}");
        }
    }
}
