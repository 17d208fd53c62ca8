//! Source locations and diagnostics. Every problem found while loading carries the file, line, column and
//! the element at fault, and loading collects all of them instead of stopping at the first.

use std::fmt;
use std::sync::Arc;

/// A place in a loaded file. `file` is the display path (inside a `.car` it reads `app.car!/dir/file.xml`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
}

impl Location {
    pub fn file_only(file: &Arc<str>) -> Self {
        Location {
            file: file.clone(),
            line: 0,
            col: 0,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.col)
        }
    }
}

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Informational: something was skipped on purpose (for example a non-Synapse XML file in a folder).
    Note,
    /// Loaded, but probably not what the author meant.
    Warning,
    /// A feature Sluice does not support yet: the artifact holding it is not deployed, the rest is.
    Unsupported,
    /// The configuration is wrong: `validate` and `run` exit non-zero.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Unsupported => "unsupported",
            Severity::Error => "error",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub location: Location,
    /// The element at fault, as written (`<filter>`), or empty when the whole file is at fault.
    pub element: String,
    pub message: String,
    /// The artifact (proxy, sequence, endpoint ...) the problem belongs to, when known.
    pub artifact: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: ", self.location, self.severity)?;
        if !self.element.is_empty() {
            write!(f, "<{}>: ", self.element)?;
        }
        f.write_str(&self.message)?;
        if let Some(a) = &self.artifact {
            write!(f, " (in {a})")?;
        }
        Ok(())
    }
}

/// The diagnostics of one load, in the order found.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    pub items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn push(
        &mut self,
        severity: Severity,
        location: Location,
        element: impl Into<String>,
        message: impl Into<String>,
        artifact: Option<&str>,
    ) {
        self.items.push(Diagnostic {
            severity,
            location,
            element: element.into(),
            message: message.into(),
            artifact: artifact.map(str::to_owned),
        });
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    pub fn count(&self, severity: Severity) -> usize {
        self.items.iter().filter(|d| d.severity == severity).count()
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    /// Sorted by file, line, column, for stable output.
    pub fn sorted(&self) -> Vec<&Diagnostic> {
        let mut v: Vec<&Diagnostic> = self.items.iter().collect();
        v.sort_by(|a, b| {
            a.location
                .cmp(&b.location)
                .then(b.severity.cmp(&a.severity))
        });
        v
    }
}
