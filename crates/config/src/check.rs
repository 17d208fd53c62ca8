//! Checks across files: names must be unique per kind.

use crate::diag::{Diagnostics, Location, Severity};
use crate::model::Config;
use std::collections::HashMap;

pub(crate) fn check_duplicates(cfg: &Config, diags: &mut Diagnostics) {
    fn dup<'a>(
        kind: &str,
        items: impl Iterator<Item = (&'a str, &'a Location)>,
        diags: &mut Diagnostics,
    ) {
        let mut seen: HashMap<&str, &Location> = HashMap::new();
        for (name, loc) in items {
            if let Some(first) = seen.get(name) {
                diags.push(
                    Severity::Error,
                    loc.clone(),
                    kind,
                    format!("duplicate {kind} '{name}' (first defined at {first})"),
                    None,
                );
            } else {
                seen.insert(name, loc);
            }
        }
    }
    dup(
        "proxy",
        cfg.proxies.iter().map(|p| (p.name.as_str(), &p.loc)),
        diags,
    );
    dup(
        "api",
        cfg.apis.iter().map(|a| (a.name.as_str(), &a.loc)),
        diags,
    );
    dup(
        "sequence",
        cfg.sequences
            .iter()
            .map(|s| (s.name.as_str(), &s.sequence.loc)),
        diags,
    );
    dup(
        "endpoint",
        cfg.endpoints
            .iter()
            .filter_map(|e| e.name.as_deref().map(|n| (n, &e.loc))),
        diags,
    );
    dup(
        "template",
        cfg.templates
            .iter()
            .map(|t| (t.name.as_str(), &t.loc))
            .chain(
                cfg.endpoint_templates
                    .iter()
                    .map(|t| (t.name.as_str(), &t.loc)),
            ),
        diags,
    );
    dup(
        "localEntry",
        cfg.local_entries.iter().map(|l| (l.key.as_str(), &l.loc)),
        diags,
    );
}
