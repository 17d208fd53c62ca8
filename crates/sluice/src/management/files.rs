//! What MI's management API says of log files and of its correlation logs, over what Sluice has of
//! them: the access log (`[access_log]`), whose lines carry each request's correlation ID and time.
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /management/logs` | `{"count","list":[{"FileName","size"}]}`: the access log's file, when there is one (`apictl mi get logs` lists the `.log` ones) |
//! | `GET /management/logs?file=NAME` | the file's bytes, `application/octet-stream` |
//! | `GET /management/configs?configName=correlation` | `{"configName":"correlation","configs":{"enabled":"true\|false"}}`: whether access-log lines are written |
//! | `PUT /management/configs` `{"configName":"correlation","configs":{"enabled":bool}}` | turns the access log's lines on or off at once; 400 when no access log is configured |

use super::{error, listed, Answer};
use hyper::StatusCode;
use serde_json::{json, Value};
use sluice_transport::access_log::AccessLog;

/// The log files: the access log's, when it is configured and written.
pub fn list(log: Option<&AccessLog>) -> Answer {
    let files = log
        .and_then(|l| {
            let size = std::fs::metadata(l.path()).ok()?.len();
            let name = l.path().file_name()?.to_string_lossy().into_owned();
            Some(json!({"FileName": name, "size": human(size)}))
        })
        .into_iter()
        .collect();
    (StatusCode::OK, Some(listed(files)))
}

/// A size as MI shows it (`12.3 KB`).
fn human(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KB", b / 1024.0),
        _ => format!("{:.1} MB", b / 1_048_576.0),
    }
}

/// The bytes of the log file named `name`, or why not.
pub fn download(log: Option<&AccessLog>, name: &str) -> Result<Vec<u8>, Answer> {
    let Some(l) = log.filter(|l| l.path().file_name().is_some_and(|f| f == name)) else {
        return Err(error(
            StatusCode::NOT_FOUND,
            &format!("Log file {name} not found"),
        ));
    };
    std::fs::read(l.path()).map_err(|e| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot read {name}: {e}"),
        )
    })
}

/// `GET /configs?configName=correlation`.
pub fn config(log: Option<&AccessLog>, name: Option<String>) -> Answer {
    match name.as_deref() {
        Some("correlation") => {
            let on = log.is_some_and(AccessLog::enabled);
            let v = json!({"configName": "correlation", "configs": {"enabled": on.to_string()}});
            (StatusCode::OK, Some(v))
        }
        Some(other) => error(
            StatusCode::BAD_REQUEST,
            &format!("Invalid config name: {other}"),
        ),
        None => error(StatusCode::BAD_REQUEST, "Missing configName"),
    }
}

/// `PUT /configs` with `{"configName":"correlation","configs":{"enabled":bool}}`.
pub fn set_config(log: Option<&AccessLog>, body: &[u8]) -> Answer {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return error(StatusCode::BAD_REQUEST, "JSON payload is missing");
    };
    if v.get("configName").and_then(Value::as_str) != Some("correlation") {
        return error(StatusCode::BAD_REQUEST, "Invalid or missing configName");
    }
    let on = match v.pointer("/configs/enabled") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => true,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => false,
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "configs.enabled must be true or false",
            )
        }
    };
    let Some(log) = log else {
        let why = "Sluice's correlation logs are its access log, and none is configured ([access_log] in the --config file)";
        return error(StatusCode::BAD_REQUEST, why);
    };
    log.set_enabled(on);
    tracing::info!(target: "sluice::audit", enabled = on, "access log (correlation logs) switched through the management API");
    let m = "Successfully Updated Correlation Logs Status";
    (StatusCode::OK, Some(json!({ "message": m })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_mi_shows_them() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(2048), "2.0 KB");
        assert_eq!(human(3 * 1_048_576), "3.0 MB");
    }

    #[test]
    fn correlation_logs_need_an_access_log() {
        let (status, v) = config(None, Some("correlation".into()));
        assert_eq!(status, StatusCode::OK);
        assert_eq!(v.unwrap()["configs"]["enabled"], "false");
        let body = br#"{"configName":"correlation","configs":{"enabled":true}}"#;
        assert_eq!(set_config(None, body).0, StatusCode::BAD_REQUEST);
        assert_eq!(
            config(None, Some("other".into())).0,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(list(None).1.unwrap()["count"], 0);
    }
}
