//! Log levels the management API reads and changes at run time (MI's `/management/logging`, `apictl
//! mi update log-level`): the root level and one level per logger, a logger being a `tracing` target
//! (MI's loggers are log4j2 names; Sluice's are its targets). A change rebuilds the filter and swaps
//! it in; lines already filtered are not affected.

use std::sync::{Arc, Mutex, OnceLock};
use tracing_subscriber::{reload, EnvFilter, Registry};

/// A logger: its name, what it logs, the target it filters, its level (MI's upper-case name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logger {
    pub name: String,
    pub component: String,
    pub target: String,
    pub level: String,
}

/// The loggers, and the handle that swaps the filter.
pub struct Logging {
    loggers: Mutex<Vec<Logger>>,
    reload: Option<reload::Handle<EnvFilter, Registry>>,
}

static INSTALLED: OnceLock<Arc<Logging>> = OnceLock::new();

/// The process's loggers, once [`install`] set them up.
pub fn installed() -> Option<Arc<Logging>> {
    INSTALLED.get().cloned()
}

/// Logs to stderr through a filter the management API can swap: `SLUICE_LOG`'s directives at start
/// (default `info`), its root level the one the loggers start at.
pub fn install() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let env = std::env::var("SLUICE_LOG").ok();
    let filter = env
        .as_deref()
        .and_then(|v| EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    // The root level: SLUICE_LOG when it is a bare level, else info.
    let root = env
        .as_deref()
        .filter(|v| LEVELS.iter().any(|(_, t)| t.eq_ignore_ascii_case(v)))
        .unwrap_or("info");
    let (filter, handle) = reload::Layer::new(filter);
    tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .init();
    let _ = INSTALLED.set(Arc::new(Logging::new(root, Some(handle))));
}

/// MI's levels, and `tracing`'s for each (`FATAL` is `error`).
const LEVELS: [(&str, &str); 7] = [
    ("OFF", "off"),
    ("TRACE", "trace"),
    ("DEBUG", "debug"),
    ("INFO", "info"),
    ("WARN", "warn"),
    ("ERROR", "error"),
    ("FATAL", "error"),
];

impl Logging {
    /// The loggers Sluice has, at `root` (an MI level name), swapping filters through `reload`
    /// (`None`: levels are kept but change nothing, as in tests).
    pub fn new(root: &str, reload: Option<reload::Handle<EnvFilter, Registry>>) -> Logging {
        let logger = |name: &str, component: &str, target: &str| Logger {
            name: name.into(),
            component: component.into(),
            target: target.into(),
            level: root.to_ascii_uppercase(),
        };
        Logging {
            loggers: Mutex::new(vec![
                logger("rootLogger", "", ""),
                logger(
                    "sluice-log-mediator",
                    "the log mediator's lines",
                    "sluice::log",
                ),
                logger(
                    "sluice-audit",
                    "changes made through the management API",
                    "sluice::audit",
                ),
                logger(
                    "sluice-transport",
                    "listeners, back-end calls, faults",
                    "sluice_transport",
                ),
                logger("sluice-mediation", "mediation", "sluice_mediation"),
            ]),
            reload,
        }
    }

    pub fn list(&self) -> Vec<Logger> {
        self.loggers.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub fn get(&self, name: &str) -> Option<Logger> {
        self.list().into_iter().find(|l| l.name == name)
    }

    /// Sets `name`'s level; with `class`, adds the logger first (its target is `class`). Returns
    /// MI's message, or MI's reason for a 400.
    pub fn set(&self, name: &str, level: &str, class: Option<&str>) -> Result<String, String> {
        let upper = level.to_ascii_uppercase();
        if !LEVELS.iter().any(|(l, _)| *l == upper) {
            return Err(format!("Invalid log level {level}"));
        }
        let mut loggers = self
            .loggers
            .lock()
            .map_err(|_| "logging state lost".to_owned())?;
        let known = loggers.iter().position(|l| l.name == name);
        let message = match (known, class) {
            (Some(_), Some(_)) => {
                return Err(format!(
                "Specified logger name ('{name}') already exists, try updating the level instead"
            ))
            }
            (Some(i), None) => {
                loggers[i].level = upper.clone();
                format!("Successfully added logger for ('{name}') with level {upper}")
            }
            (None, Some(c)) => {
                if !valid_target(c) {
                    return Err(format!("Invalid logger class {c}"));
                }
                loggers.push(Logger {
                    name: name.into(),
                    component: c.into(),
                    target: c.into(),
                    level: upper.clone(),
                });
                format!("Successfully added logger for ('{name}') with level {upper} for class {c}")
            }
            (None, None) => return Err(format!("Specified logger ('{name}') not found")),
        };
        if let Some(handle) = &self.reload {
            let filter = EnvFilter::try_new(directives(&loggers)).map_err(|e| e.to_string())?;
            handle.reload(filter).map_err(|e| e.to_string())?;
        }
        Ok(message)
    }
}

/// The `EnvFilter` directives of `loggers`: the root's level, then each target's.
fn directives(loggers: &[Logger]) -> String {
    let level = |l: &str| {
        LEVELS
            .iter()
            .find(|(m, _)| *m == l)
            .map_or("info", |(_, t)| *t)
    };
    loggers
        .iter()
        .map(|l| match l.target.as_str() {
            "" => level(&l.level).to_owned(),
            t => format!("{t}={}", level(&l.level)),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether `s` can be a target in a filter directive (a module path, or a name like Sluice's).
fn valid_target(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_change_and_loggers_are_added_as_mi_answers() {
        let l = Logging::new("info", None);
        assert_eq!(l.get("rootLogger").unwrap().level, "INFO");
        assert_eq!(
            l.set("sluice-log-mediator", "debug", None),
            Ok("Successfully added logger for ('sluice-log-mediator') with level DEBUG".into())
        );
        assert_eq!(
            l.set("nope", "INFO", None),
            Err("Specified logger ('nope') not found".into())
        );
        assert_eq!(
            l.set("rootLogger", "LOUD", None),
            Err("Invalid log level LOUD".into())
        );
        assert!(l.set("mine", "WARN", Some("my_crate::part")).is_ok());
        assert!(l.set("mine", "WARN", Some("my_crate::part")).is_err());
        assert_eq!(
            directives(&l.list()),
            "info,sluice::log=debug,sluice::audit=info,sluice_transport=info,sluice_mediation=info,my_crate::part=warn"
        );
        assert!(EnvFilter::try_new(directives(&l.list())).is_ok());
    }
}
