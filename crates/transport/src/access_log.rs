//! One line per request in an access log, written by a thread of its own so that a worker never
//! waits on the disk. Two formats:
//!
//! | Format | Line |
//! |---|---|
//! | `mi` | WSO2 MI's default pattern, `%{X-Forwarded-For}i %h %l %u %t "%r" %s %b "%{Referer}i" "%{User-Agent}i"`, request and response on one line: `- 127.0.0.1 - - [28/Nov/2026:07:40:00.123 +0000] "POST /services/P HTTP/1.1" 200 1234 "-" "curl/8.5.0"` |
//! | `json` | `{"time":…,"remote":…,"method":…,"uri":…,"protocol":…,"status":…,"bytes":…,"duration_ms":…,"referer":…,"user_agent":…,"forwarded_for":…,"correlation_id":…}` |
//!
//! `%b` and `bytes` are the response's Content-Length (`-` / null when it streams). MI writes the
//! request and the response on two lines (and the back-end legs too); Sluice writes one line per
//! client request, with the time taken. A line is written once the answer's head is ready.

use http::{HeaderMap, Request, Response};
use std::io::Write;
use std::sync::mpsc;
use std::time::Instant;

/// How a line is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Mi,
    Json,
}

/// Where the lines go (a file, appended to).
#[derive(Debug)]
pub struct AccessLog {
    lines: mpsc::Sender<String>,
    format: Format,
    path: std::path::PathBuf,
    /// Whether lines are written (the management API turns it off and on: MI's correlation logs).
    on: std::sync::atomic::AtomicBool,
}

/// What is kept of a request for its line.
pub struct Entry {
    start: Instant,
    time: chrono::DateTime<chrono::Local>,
    remote: Option<std::net::IpAddr>,
    method: http::Method,
    uri: String,
    version: http::Version,
    forwarded_for: Option<String>,
    from: Option<String>,
    referer: Option<String>,
    user_agent: Option<String>,
    correlation: Option<String>,
}

impl AccessLog {
    /// Appends to `path` from a thread of its own.
    pub fn open(path: &std::path::Path, format: Format) -> std::io::Result<AccessLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let (lines, rx) = mpsc::channel::<String>();
        std::thread::Builder::new()
            .name("sluice-access-log".into())
            .spawn(move || write_lines(file, &rx))?;
        Ok(AccessLog {
            lines,
            format,
            path: path.to_owned(),
            on: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// The file it appends to.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Whether lines are written now.
    pub fn enabled(&self) -> bool {
        self.on.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes lines from now on, or stops writing them.
    pub fn set_enabled(&self, on: bool) {
        self.on.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// What the line needs of a request, taken as it arrives (its correlation ID given).
    pub fn entry<B>(&self, req: &Request<B>, remote: Option<std::net::IpAddr>) -> Box<Entry> {
        let h = req.headers();
        Box::new(Entry {
            start: Instant::now(),
            time: chrono::Local::now(),
            remote,
            method: req.method().clone(),
            uri: req.uri().to_string(),
            version: req.version(),
            forwarded_for: header(h, "x-forwarded-for"),
            from: header(h, "from"),
            referer: header(h, "referer"),
            user_agent: header(h, "user-agent"),
            correlation: header(h, crate::correlation::header().as_str()),
        })
    }

    /// Writes the line of `entry`, answered with `response`.
    pub fn write<B>(&self, entry: &Entry, response: &Response<B>) {
        if !self.enabled() {
            return;
        }
        let line = self.line(entry, response);
        let _ = self.lines.send(line);
    }

    fn line<B>(&self, e: &Entry, response: &Response<B>) -> String {
        let status = response.status().as_u16();
        let bytes = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        match self.format {
            Format::Mi => {
                let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
                format!(
                    "{} {} - {} [{}] \"{} {} {:?}\" {} {} \"{}\" \"{}\"\n",
                    or_dash(&e.forwarded_for),
                    e.remote.map_or_else(|| "-".to_owned(), |a| a.to_string()),
                    or_dash(&e.from),
                    e.time.format("%d/%b/%Y:%H:%M:%S%.3f %z"),
                    e.method,
                    e.uri,
                    e.version,
                    status,
                    bytes.map_or_else(|| "-".to_owned(), |b| b.to_string()),
                    or_dash(&e.referer),
                    or_dash(&e.user_agent),
                )
            }
            Format::Json => {
                let v = serde_json::json!({
                    "time": e.time.to_rfc3339_opts(chrono::SecondsFormat::Millis, false),
                    "remote": e.remote.map(|a| a.to_string()),
                    "method": e.method.as_str(),
                    "uri": e.uri,
                    "protocol": format!("{:?}", e.version),
                    "status": status,
                    "bytes": bytes,
                    "duration_ms": e.start.elapsed().as_secs_f64() * 1e3,
                    "referer": e.referer,
                    "user_agent": e.user_agent,
                    "forwarded_for": e.forwarded_for,
                    "correlation_id": e.correlation,
                });
                format!("{v}\n")
            }
        }
    }
}

fn header(h: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<&str> = h
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(" - "))
}

/// The writing thread: each line as it comes, flushed whenever no more are waiting; ends when
/// every sender is gone.
fn write_lines(file: std::fs::File, rx: &mpsc::Receiver<String>) {
    let mut out = std::io::BufWriter::new(file);
    while let Ok(line) = rx.recv() {
        let _ = out.write_all(line.as_bytes());
        while let Ok(more) = rx.try_recv() {
            let _ = out.write_all(more.as_bytes());
        }
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(format: Format) -> AccessLog {
        let (lines, _rx) = mpsc::channel();
        AccessLog {
            lines,
            format,
            path: "access.log".into(),
            on: true.into(),
        }
    }

    #[test]
    fn lines_follow_mi_pattern_and_json() {
        let req = Request::builder()
            .method("POST")
            .uri("/services/P?x=1")
            .header("user-agent", "curl/8.5.0")
            .header("x-forwarded-for", "10.0.0.1")
            .header("activityid", "abc")
            .body(())
            .unwrap();
        let e = log(Format::Mi).entry(&req, Some([127, 0, 0, 1].into()));
        let resp = Response::builder()
            .status(502)
            .header("content-length", "12")
            .body(())
            .unwrap();
        let line = log(Format::Mi).line(&e, &resp);
        let re = regex::Regex::new(
            r#"^10\.0\.0\.1 127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d\.\d{3} [+-]\d{4}\] "POST /services/P\?x=1 HTTP/1\.1" 502 12 "-" "curl/8\.5\.0"\n$"#,
        )
        .unwrap();
        assert!(re.is_match(&line), "{line}");
        let json: serde_json::Value =
            serde_json::from_str(&log(Format::Json).line(&e, &resp)).unwrap();
        assert_eq!(json["status"], 502);
        assert_eq!(json["bytes"], 12);
        assert_eq!(json["uri"], "/services/P?x=1");
        assert_eq!(json["correlation_id"], "abc");
        assert_eq!(json["referer"], serde_json::Value::Null);
        let streamed = Response::new(());
        assert!(log(Format::Mi).line(&e, &streamed).contains("\" 200 - \""));
    }
}
