//! Synapse template libraries (`<import name package>`): a library is a `.zip` (or the folder it
//! unpacks to) in `SYNAPSE_HOME/repository/conf/synapse-libs` (Synapse) or
//! `repository/deployment/server/synapse-libs` (MI). Its `artifacts.xml` names it and its package
//! and lists its template groups (`<dependency artifact="GROUP"/>`); each group's `artifact.xml`
//! lists its templates' files. An imported library's templates are deployed as `PACKAGE.NAME`.
//! Java classes a library carries are not run: a template that uses one is reported where it is
//! called.

use crate::diag::{Diagnostics, Location, Severity};
use crate::load::{read_tree, unzip, Tree};
use crate::model::{Config, Import};
use crate::parse::{parse_text, Expect};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where libraries are looked for below the home.
const LIBRARY_DIRS: [&str; 2] = [
    "repository/conf/synapse-libs",
    "repository/deployment/server/synapse-libs",
];

/// Reads the templates of every library `cfg` imports.
pub(crate) fn load_imports(home: &Path, cfg: &mut Config, diags: &mut Diagnostics) {
    for import in cfg.imports.clone() {
        match find(home, &import, diags) {
            Some((display, tree, groups)) => deploy(&display, &tree, &groups, &import, cfg, diags),
            None => {
                let dirs = LIBRARY_DIRS.map(|d| home.join(d).display().to_string());
                let why = format!(
                    "no library {} of package {} in {} or {}",
                    import.name, import.package, dirs[0], dirs[1]
                );
                diags.push(
                    Severity::Unsupported,
                    import.loc.clone(),
                    "import",
                    why,
                    None,
                );
                cfg.key_sources
                    .push(("import".to_owned(), import.loc.clone()));
            }
        }
    }
}

/// The library `import` names: where it is, its files, and its template groups.
fn find(
    home: &Path,
    import: &Import,
    diags: &mut Diagnostics,
) -> Option<(Arc<str>, Tree, Vec<String>)> {
    for dir in LIBRARY_DIRS.map(|d| home.join(d)) {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            let tree = if p.is_dir() {
                let mut t = Tree::new();
                read_tree(&p, &p, &mut t, diags);
                t
            } else if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("zip")) {
                match std::fs::read(&p)
                    .map_err(|e| e.to_string())
                    .and_then(|b| unzip(&b))
                {
                    Ok(t) => t,
                    Err(e) => {
                        let loc = Location::file_only(&p.display().to_string().into());
                        diags.push(
                            Severity::Warning,
                            loc,
                            "import",
                            format!("not a readable library: {e}"),
                            None,
                        );
                        continue;
                    }
                }
            } else {
                continue;
            };
            if let Some(groups) = groups_of(&tree, import) {
                return Some((p.display().to_string().into(), tree, groups));
            }
        }
    }
    None
}

/// The template groups of the library `tree` holds, when it is the one `import` names.
fn groups_of(tree: &Tree, import: &Import) -> Option<Vec<String>> {
    let text = std::str::from_utf8(tree.get("artifacts.xml")?).ok()?;
    let doc = roxmltree::Document::parse(text).ok()?;
    let a = doc.root_element().children().find(|a| {
        a.has_tag_name("artifact")
            && a.attribute("name") == Some(&import.name)
            && a.attribute("package") == Some(&import.package)
    })?;
    Some(
        a.children()
            .filter(|d| d.has_tag_name("dependency"))
            .filter_map(|d| d.attribute("artifact").map(str::to_owned))
            .collect(),
    )
}

/// Each template of each group, parsed and named `PACKAGE.NAME`.
fn deploy(
    display: &Arc<str>,
    tree: &Tree,
    groups: &[String],
    import: &Import,
    cfg: &mut Config,
    diags: &mut Diagnostics,
) {
    for (path, bytes) in tree {
        let Some(dir) = path
            .strip_suffix("artifact.xml")
            .filter(|d| d.is_empty() || d.ends_with('/'))
        else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(bytes) else {
            continue;
        };
        let Ok(doc) = roxmltree::Document::parse(text) else {
            continue;
        };
        let root = doc.root_element();
        if !root
            .attribute("name")
            .is_some_and(|n| groups.iter().any(|g| g == n))
        {
            continue;
        }
        let files = root
            .descendants()
            .filter(|f| f.has_tag_name("file"))
            .filter_map(|f| f.text().map(|t| format!("{dir}{}", t.trim())));
        for file in files {
            let Some(bytes) = tree.get(&file) else {
                let loc = Location::file_only(display);
                diags.push(
                    Severity::Warning,
                    loc,
                    "import",
                    format!("library file {file} is missing"),
                    None,
                );
                continue;
            };
            let Ok(text) = std::str::from_utf8(bytes) else {
                continue;
            };
            let before = cfg.templates.len();
            let shown: Arc<str> = format!("{display}/{file}").into();
            // A library template Sluice cannot run (one using a Java class) is reported where it
            // is called; here only as a note.
            let mut own = Diagnostics::default();
            parse_text(shown, text, Expect::Any, cfg, &mut own);
            for d in own.items {
                let severity = d.severity.min(Severity::Note);
                diags.push(
                    severity,
                    d.location,
                    &d.element,
                    d.message,
                    d.artifact.as_deref(),
                );
            }
            for t in &mut cfg.templates[before..] {
                t.name = format!("{}.{}", import.package, t.name);
            }
        }
    }
}
