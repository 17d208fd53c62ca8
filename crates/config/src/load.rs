//! Finding the artifacts under a PATH: one file, a folder tree of them, a Carbon Application (`.car`) or its
//! unpacked folder.

use crate::diag::{Diagnostics, Location, Severity};
use crate::model::{Config, RegistryRoot, Resource};
use crate::parse::{parse_text, read_document, Expect};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// Files larger than this are not read (a configuration file this size is a mistake).
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Loads everything under `path`. Never fails: every problem is a diagnostic.
pub fn load_path(path: &Path) -> (Config, Diagnostics) {
    load_path_in(path, None)
}

/// [`load_path`], with `home` as Synapse's `SYNAPSE_HOME` (MI's `MI_HOME`): where relative `file:`
/// paths are read from (a `<registry>` root, a local entry's `src`). Without one: the MI home of an
/// MI deployment folder, else the working directory, as Synapse reads them.
pub fn load_path_in(path: &Path, home: Option<&Path>) -> (Config, Diagnostics) {
    let mut cfg = Config::default();
    let mut diags = Diagnostics::default();
    let display: Arc<str> = path.display().to_string().into();
    let mi_registry = mi_registry_home(path);
    match std::fs::metadata(path) {
        Err(e) => file_error(&mut diags, &display, format!("cannot read: {e}")),
        Ok(m) if m.is_dir() => {
            load_dir(path, &mut cfg, &mut diags);
            if let Some(r) = &mi_registry {
                load_mi_registry(r, &mut cfg, &mut diags);
            }
        }
        Ok(_) => load_file(path, &mut cfg, &mut diags),
    }
    let home = match (home, &mi_registry) {
        (Some(h), _) => h.to_path_buf(),
        (None, Some(r)) => r.parent().map(Path::to_path_buf).unwrap_or_default(),
        (None, None) => std::env::current_dir().unwrap_or_default(),
    };
    let bare = cfg.only_registries();
    load_registries(&home, &mut cfg, &mut diags);
    load_declared_mi_registries(&home, mi_registry.as_deref(), &mut cfg, &mut diags);
    if bare {
        load_from_registry(&home, &mut cfg, &mut diags);
    }
    load_entry_sources(&home, &mut cfg, &mut diags);
    crate::library::load_imports(&home, &mut cfg, &mut diags);
    cfg.file_properties = file_properties(&home);
    cfg.home = home;
    crate::check::check_duplicates(&cfg, &mut diags);
    (cfg, diags)
}

/// A `file:` URL as a path, a relative one from `home` (`file:repository/x`, `file:./x`,
/// `file:///abs/x`).
pub fn file_url_path(home: &Path, url: &str) -> Option<std::path::PathBuf> {
    let rest = url.strip_prefix("file:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let p = Path::new(rest);
    Some(if p.is_absolute() {
        p.to_path_buf()
    } else {
        home.join(p)
    })
}

/// The folder a registry's `file:` root names, or a warning that says where it was looked for.
fn registry_folder(
    home: &Path,
    reg: &RegistryRoot,
    what: &str,
    diags: &mut Diagnostics,
) -> Option<std::path::PathBuf> {
    let dir = file_url_path(home, &reg.root).filter(|d| d.is_dir());
    if dir.is_none() {
        diags.push(
            Severity::Warning,
            reg.loc.clone(),
            "registry",
            format!("{what} '{}' is no folder under {} (--home sets where relative roots are read from); keys it would hold are missing", reg.root, home.display()),
            None,
        );
    }
    dir
}

/// Each `<registry>` over a folder: every file below its root, a resource keyed by its path there.
fn load_registries(home: &Path, cfg: &mut Config, diags: &mut Diagnostics) {
    for reg in std::mem::take(&mut cfg.registries) {
        let Some(dir) = registry_folder(home, &reg, "the registry root", diags) else {
            continue;
        };
        let mut tree = BTreeMap::new();
        read_tree(&dir, &dir, &mut tree, diags);
        for (rel, bytes) in &tree {
            let file: Arc<str> = dir.join(rel).display().to_string().into();
            add_resource(rel.clone(), file, bytes, Vec::new(), cfg, diags);
        }
        cfg.registries.push(reg);
    }
}

/// MI's `<registry>`s: each folder in MI's layout, unless it is the one beside the deployment
/// folder, read already.
fn load_declared_mi_registries(
    home: &Path,
    beside: Option<&Path>,
    cfg: &mut Config,
    diags: &mut Diagnostics,
) {
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    for reg in cfg.mi_registries.clone() {
        let Some(dir) = registry_folder(home, &reg, "MI's registry folder", diags) else {
            continue;
        };
        if beside.is_some_and(|b| same(b, &dir)) {
            continue;
        }
        load_mi_registry(&dir, cfg, diags);
    }
}

/// Synapse's configuration kept in its registry (its sample 11): a configuration that is only a
/// `<registry>` is the one the registry holds under the key `synapse.xml`. The registries that one
/// names are read too.
fn load_from_registry(home: &Path, cfg: &mut Config, diags: &mut Diagnostics) {
    let Some(file) = (cfg.resources.iter())
        .find(|r| r.key == "synapse.xml")
        .map(|r| r.loc.file.to_string())
    else {
        return;
    };
    let outer = std::mem::take(&mut cfg.registries);
    load_file(Path::new(&file), cfg, diags);
    load_registries(home, cfg, diags);
    cfg.registries.splice(0..0, outer);
}

/// A resource, and the sequence or endpoint it holds, if any.
fn add_resource(
    key: String,
    file: Arc<str>,
    bytes: &Arc<[u8]>,
    properties: Vec<(String, String)>,
    cfg: &mut Config,
    diags: &mut Diagnostics,
) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        crate::parse::registry_artifact(file.clone(), &key, text, cfg, diags);
    }
    cfg.resources.push(Resource {
        key,
        loc: Location::file_only(&file),
        bytes: bytes.clone(),
        properties,
    });
}

/// Where MI reads `get-property('file', KEY)` from, under its home.
pub const FILE_PROPERTIES: &str = "conf/file.properties";

/// MI's [`FILE_PROPERTIES`] under `home`, read now (MI reads it once, at the first use): `None`
/// when there is none.
fn file_properties(home: &Path) -> Option<Result<Vec<(String, String)>, String>> {
    let path = home.join(FILE_PROPERTIES);
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(Ok(java_properties(&text))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(Err(format!("cannot read {}: {e}", path.display()))),
    }
}

/// A Java properties file's `name=value` (or `name: value`) lines; `#` and `!` start comments.
/// (Line continuations and escapes other than `\\` are not read.)
pub fn java_properties(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim_start)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| {
            let at = l.find(['=', ':'])?;
            let value = l[at + 1..].trim_start().replace("\\\\", "\\");
            Some((l[..at].trim_end().to_owned(), value))
        })
        .collect()
}

/// A local entry's `src` that is a `file:` URL is read now, as if its content were written inline.
/// Other URLs stay unread (Sluice uses no network at load).
fn load_entry_sources(home: &Path, cfg: &mut Config, diags: &mut Diagnostics) {
    for i in 0..cfg.local_entries.len() {
        let crate::model::LocalEntryValue::Src(url) = &cfg.local_entries[i].value else {
            continue;
        };
        let Some(path) = file_url_path(home, url) else {
            continue;
        };
        let e = &cfg.local_entries[i];
        let text = match read_limited(&path).map(String::from_utf8) {
            Ok(Ok(t)) => t,
            Ok(Err(_)) => {
                let why = format!(
                    "local entry '{}': {} is not UTF-8 text",
                    e.key,
                    path.display()
                );
                diags.push(Severity::Error, e.loc.clone(), "localEntry", why, None);
                continue;
            }
            Err(err) => {
                let why = format!("local entry '{}': cannot read {} ({err}; --home sets where relative paths are read from)", e.key, path.display());
                diags.push(Severity::Error, e.loc.clone(), "localEntry", why, None);
                continue;
            }
        };
        let file: Arc<str> = path.display().to_string().into();
        let read = crate::parse::entry_of_text(file, &e.key.clone(), &text, diags);
        let e = &mut cfg.local_entries[i];
        e.value = read.value;
        e.artifact = read.artifact;
    }
}

/// Loads one artifact from text (tests, the embedded default configuration).
pub fn load_str(display: &str, text: &str) -> (Config, Diagnostics) {
    let mut cfg = Config::default();
    let mut diags = Diagnostics::default();
    parse_text(display.into(), text, Expect::Any, &mut cfg, &mut diags);
    crate::check::check_duplicates(&cfg, &mut diags);
    (cfg, diags)
}

/// An error about a whole file (it cannot be read, is not UTF-8, ...).
fn file_error(diags: &mut Diagnostics, file: &Arc<str>, message: impl Into<String>) {
    diags.push(
        Severity::Error,
        Location::file_only(file),
        "",
        message,
        None,
    );
}

fn read_limited(path: &Path) -> std::io::Result<Vec<u8>> {
    let f = std::fs::File::open(path)?;
    let mut buf = Vec::new();
    f.take(MAX_FILE_BYTES + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_FILE_BYTES} bytes"
        )));
    }
    Ok(buf)
}

fn load_file(path: &Path, cfg: &mut Config, diags: &mut Diagnostics) {
    let display: Arc<str> = path.display().to_string().into();
    let bytes = match read_limited(path) {
        Ok(b) => b,
        Err(e) => {
            file_error(diags, &display, format!("cannot read: {e}"));
            return;
        }
    };
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("car"))
    {
        match unzip(&bytes) {
            Ok(tree) => load_car(&display, &tree, cfg, diags),
            Err(e) => file_error(
                diags,
                &display,
                format!("not a readable .car (zip) file: {e}"),
            ),
        }
        return;
    }
    parse_bytes(display, &bytes, Expect::Any, cfg, diags);
}

fn parse_bytes(
    display: Arc<str>,
    bytes: &[u8],
    expect: Expect,
    cfg: &mut Config,
    diags: &mut Diagnostics,
) {
    if let Some(text) = utf8(&display, bytes, diags) {
        parse_text(display, text, expect, cfg, diags);
    }
}

fn load_dir(dir: &Path, cfg: &mut Config, diags: &mut Diagnostics) {
    if is_car_descriptor(&dir.join("artifacts.xml")) {
        let display: Arc<str> = dir.display().to_string().into();
        let mut tree = BTreeMap::new();
        read_tree(dir, dir, &mut tree, diags);
        load_car(&display, &tree, cfg, diags);
        return;
    }
    let mut entries: Vec<_> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(Result::ok).map(|e| e.path()).collect(),
        Err(e) => {
            let display: Arc<str> = dir.display().to_string().into();
            file_error(diags, &display, format!("cannot list: {e}"));
            return;
        }
    };
    entries.sort();
    for p in entries {
        if p.is_dir() {
            load_dir(&p, cfg, diags);
        } else if p
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("xml") || e.eq_ignore_ascii_case("car"))
        {
            load_file(&p, cfg, diags);
        }
    }
}

/// Whether a folder's `artifacts.xml` is a Carbon Application descriptor (root `<artifacts>`), not just a
/// Synapse file that happens to have that name.
fn is_car_descriptor(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    roxmltree::Document::parse(&text).is_ok_and(|d| d.root_element().has_tag_name("artifacts"))
}

/// Relative path (with `/`) to bytes.
pub(crate) type Tree = BTreeMap<String, Arc<[u8]>>;

pub(crate) fn read_tree(root: &Path, dir: &Path, tree: &mut Tree, diags: &mut Diagnostics) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            read_tree(root, &p, tree, diags);
            continue;
        }
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .replace('\\', "/");
        match read_limited(&p) {
            Ok(b) => {
                tree.insert(rel, b.into());
            }
            Err(e) => {
                let display: Arc<str> = p.display().to_string().into();
                file_error(diags, &display, format!("cannot read: {e}"));
            }
        }
    }
}

pub(crate) fn unzip(bytes: &[u8]) -> Result<Tree, String> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| e.to_string())?;
    let mut tree = Tree::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).map_err(|e| e.to_string())?;
        if f.is_dir() {
            continue;
        }
        let name = f
            .name()
            .map_err(|e| e.to_string())?
            .trim_start_matches('/')
            .to_owned();
        if f.size() > MAX_FILE_BYTES {
            return Err(format!(
                "entry {name} is larger than {MAX_FILE_BYTES} bytes"
            ));
        }
        let mut buf = Vec::with_capacity(f.size() as usize);
        (&mut f)
            .take(MAX_FILE_BYTES)
            .read_to_end(&mut buf)
            .map_err(|e| e.to_string())?;
        tree.insert(name, buf.into());
    }
    Ok(tree)
}

/// `bytes` as text; `None` (reported) when they are not UTF-8.
fn utf8<'b>(display: &Arc<str>, bytes: &'b [u8], diags: &mut Diagnostics) -> Option<&'b str> {
    match std::str::from_utf8(bytes) {
        Ok(t) => Some(t),
        Err(e) => {
            file_error(diags, display, format!("not UTF-8 text: {e}"));
            None
        }
    }
}

fn xml_loc(display: &Arc<str>, doc: &roxmltree::Document, n: roxmltree::Node) -> Location {
    let pos = doc.text_pos_at(n.range().start);
    Location {
        file: display.clone(),
        line: pos.row,
        col: pos.col,
    }
}

/// A Carbon Application: `artifacts.xml` lists dependencies; each `<dir>/artifact.xml` says the type and
/// the file of one artifact.
fn load_car(root: &Arc<str>, tree: &Tree, cfg: &mut Config, diags: &mut Diagnostics) {
    let Some(top) = tree.get("artifacts.xml") else {
        diags.push(
            Severity::Error,
            Location::file_only(root),
            "",
            "Carbon Application without artifacts.xml",
            None,
        );
        return;
    };
    let top_disp: Arc<str> = format!("{root}/artifacts.xml").into();
    let Some(top_text) = utf8(&top_disp, top, diags) else {
        return;
    };
    let Some(top_doc) = read_document(&top_disp, top_text, diags) else {
        return;
    };
    let mut wanted = dependencies(&top_disp, &top_doc);
    let app = top_doc
        .descendants()
        .find(|n| n.has_tag_name("artifact") && n.attribute("type") == Some("carbon/application"));
    let mut car = crate::model::Car {
        name: app
            .and_then(|a| a.attribute("name"))
            .unwrap_or(root)
            .to_owned(),
        version: app
            .and_then(|a| a.attribute("version"))
            .unwrap_or_default()
            .to_owned(),
        artifacts: Vec::new(),
    };
    // Each artifact.xml one level down.
    for (rel, bytes) in tree
        .iter()
        .filter(|(k, _)| k.ends_with("/artifact.xml") && k.matches('/').count() == 1)
    {
        if let Some(a) = load_car_artifact(root, tree, (rel, bytes), &mut wanted, cfg, diags) {
            car.artifacts.push(a);
        }
    }
    car.artifacts.sort();
    cfg.cars.push(car);
    for ((a, v), loc) in wanted {
        diags.push(
            Severity::Error,
            loc,
            "dependency",
            format!("no artifact.xml for dependency {a} {v}"),
            None,
        );
    }
}

/// The dependencies `artifacts.xml` includes: (name, version) -> the place of the dependency line.
fn dependencies(
    display: &Arc<str>,
    doc: &roxmltree::Document,
) -> BTreeMap<(String, String), Location> {
    let mut wanted = BTreeMap::new();
    for d in doc.descendants().filter(|n| n.has_tag_name("dependency")) {
        if d.attribute("include") == Some("false") {
            continue;
        }
        let (Some(a), Some(v)) = (d.attribute("artifact"), d.attribute("version")) else {
            continue;
        };
        wanted.insert((a.to_owned(), v.to_owned()), xml_loc(display, doc, d));
    }
    wanted
}

/// What a CAR artifact type holds, for the Synapse artifact types Sluice reads.
fn expect_of(ty: &str) -> Option<Expect> {
    Some(match ty {
        "synapse/proxy-service" => Expect::Proxy,
        "synapse/endpoint" => Expect::Endpoint,
        "synapse/sequence" => Expect::Sequence,
        "synapse/local-entry" => Expect::LocalEntry,
        "synapse/api" => Expect::Api,
        "synapse/template" => Expect::Template,
        "synapse/message-store" => Expect::MessageStore,
        "synapse/message-processors" => Expect::MessageProcessor,
        _ => return None,
    })
}

/// One `<dir>/artifact.xml` (`rel`) of a CAR and the files it names, when `artifacts.xml` lists it
/// (taken out of `wanted`): its name and type (without the `synapse/` or `registry/` prefix).
fn load_car_artifact(
    root: &Arc<str>,
    tree: &Tree,
    (rel, bytes): (&str, &[u8]),
    wanted: &mut BTreeMap<(String, String), Location>,
    cfg: &mut Config,
    diags: &mut Diagnostics,
) -> Option<(String, String)> {
    let dir = &rel[..rel.len() - "/artifact.xml".len()];
    let adisp: Arc<str> = format!("{root}/{rel}").into();
    let text = utf8(&adisp, bytes, diags)?;
    let doc = read_document(&adisp, text, diags)?;
    let art = doc.root_element();
    let name = art.attribute("name").unwrap_or_default().to_owned();
    let version = art.attribute("version").unwrap_or_default().to_owned();
    let aloc = xml_loc(&adisp, &doc, art);
    if wanted.remove(&(name.clone(), version.clone())).is_none() {
        diags.push(
            Severity::Note,
            aloc,
            "artifact",
            format!("artifact {name} {version} is not listed in artifacts.xml; skipped"),
            None,
        );
        return None;
    }
    let ty = art.attribute("type").unwrap_or_default();
    let kind = ty.rsplit('/').next().unwrap_or(ty).to_owned();
    let files: Vec<String> = art
        .children()
        .filter(|n| n.has_tag_name("file"))
        .filter_map(|n| n.text().map(|t| t.trim().to_owned()))
        .collect();
    if ty == "registry/resource" {
        for f in &files {
            load_registry_info(root, tree, dir, f, cfg, diags);
        }
        return Some((name, kind));
    }
    let Some(expect) = expect_of(ty) else {
        diags.push(
            Severity::Unsupported,
            aloc,
            "artifact",
            format!("artifact type '{ty}' is not supported yet; not deployed"),
            Some(&name),
        );
        return Some((name, kind));
    };
    for f in files {
        let frel = format!("{dir}/{f}");
        match tree.get(&frel) {
            Some(b) => parse_bytes(format!("{root}/{frel}").into(), b, expect, cfg, diags),
            None => diags.push(
                Severity::Error,
                aloc.clone(),
                "file",
                format!("file '{frel}' is missing"),
                Some(&name),
            ),
        }
    }
    Some((name, kind))
}

fn load_registry_info(
    root: &Arc<str>,
    tree: &Tree,
    dir: &str,
    file: &str,
    cfg: &mut Config,
    diags: &mut Diagnostics,
) {
    let rel = format!("{dir}/{file}");
    let rdisp: Arc<str> = format!("{root}/{rel}").into();
    let Some(bytes) = tree.get(&rel) else {
        file_error(diags, &rdisp, "registry-info file is missing");
        return;
    };
    let Some(text) = utf8(&rdisp, bytes, diags) else {
        return;
    };
    let Some(doc) = read_document(&rdisp, text, diags) else {
        return;
    };
    for item in doc.descendants().filter(|n| n.has_tag_name("item")) {
        let get = |tag: &str| {
            item.children()
                .find(|c| c.has_tag_name(tag))
                .and_then(|c| c.text())
                .map(|t| t.trim().to_owned())
        };
        let loc = xml_loc(&rdisp, &doc, item);
        let (Some(fname), Some(path)) = (get("file"), get("path")) else {
            diags.push(
                Severity::Error,
                loc,
                "item",
                "registry item needs <file> and <path>",
                None,
            );
            continue;
        };
        let key = match registry_key(&path, &fname) {
            Some(k) => k,
            None => {
                diags.push(Severity::Warning, loc, "item", format!("registry path '{path}' is neither /_system/config nor /_system/governance; skipped"), None);
                continue;
            }
        };
        let res_rel = format!("{dir}/resources/{fname}");
        match tree.get(&res_rel) {
            Some(b) => {
                if let Ok(text) = std::str::from_utf8(b) {
                    let file: Arc<str> = format!("{root}/{res_rel}").into();
                    crate::parse::registry_artifact(file, &key, text, cfg, diags);
                }
                cfg.resources.push(Resource {
                    key,
                    loc,
                    bytes: b.clone(),
                    properties: Vec::new(),
                });
            }
            None => diags.push(
                Severity::Warning,
                loc,
                "item",
                format!("registry resource '{res_rel}' is missing from the application; '{key}' is not available"),
                None,
            ),
        }
    }
}

/// Where WSO2 MI keeps its file registry for a deployment folder: `PATH` is
/// `<MI_HOME>/repository/deployment/server/synapse-configs/default` and the registry is
/// `<MI_HOME>/registry`, its `config` folder holding the `conf:` keys and `governance` the `gov:`
/// ones. `None` for any other folder.
fn mi_registry_home(path: &Path) -> Option<std::path::PathBuf> {
    let tail = [
        "default",
        "synapse-configs",
        "server",
        "deployment",
        "repository",
    ];
    let full = std::fs::canonicalize(path).ok()?;
    let mut p = full.as_path();
    for name in tail {
        if p.file_name()? != name {
            return None;
        }
        p = p.parent()?;
    }
    Some(p.join("registry"))
}

/// Every file of MI's file registry beside a deployment folder, as a registry resource keyed by
/// its place (`registry/config/xslt/t.xslt` is `conf:/xslt/t.xslt`). A `NAME.properties` beside
/// `NAME` is MI's record of the resource's properties, not a resource.
fn load_mi_registry(registry: &Path, cfg: &mut Config, diags: &mut Diagnostics) {
    for (folder, prefix) in [("config", "conf:"), ("governance", "gov:")] {
        let root = registry.join(folder);
        if !root.is_dir() {
            continue;
        }
        let mut tree = BTreeMap::new();
        read_tree(&root, &root, &mut tree, diags);
        for (rel, bytes) in &tree {
            if rel
                .strip_suffix(".properties")
                .is_some_and(|r| tree.contains_key(r))
            {
                continue;
            }
            let file: Arc<str> = root.join(rel).display().to_string().into();
            let properties = (tree.get(&format!("{rel}.properties")))
                .map(|p| java_properties(&String::from_utf8_lossy(p)))
                .unwrap_or_default();
            add_resource(
                format!("{prefix}/{rel}"),
                file,
                bytes,
                properties,
                cfg,
                diags,
            );
        }
    }
}

/// `/_system/config/a` + `x.xslt` -> `conf:/a/x.xslt`.
pub fn registry_key(path: &str, file: &str) -> Option<String> {
    let path = path.trim_end_matches('/');
    let (prefix, rest) = if let Some(r) = path.strip_prefix("/_system/config") {
        ("conf:", r)
    } else if let Some(r) = path.strip_prefix("/_system/governance") {
        ("gov:", r)
    } else {
        return None;
    };
    Some(format!("{prefix}{rest}/{file}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn java_properties_read_names_and_values() {
        let p = super::java_properties(
            "# a comment\n! another\nname=value\n  spaced : x y \nno separator\npath=C:\\\\dir\n",
        );
        assert_eq!(
            p,
            [
                ("name".to_owned(), "value".to_owned()),
                ("spaced".to_owned(), "x y ".to_owned()),
                ("path".to_owned(), "C:\\dir".to_owned()),
            ]
        );
    }

    use super::*;

    #[test]
    fn registry_keys() {
        assert_eq!(
            registry_key("/_system/config", "a.xslt").as_deref(),
            Some("conf:/a.xslt")
        );
        assert_eq!(
            registry_key("/_system/governance/datamapper/", "d.dmc").as_deref(),
            Some("gov:/datamapper/d.dmc")
        );
        assert_eq!(registry_key("/elsewhere", "x"), None);
    }

    #[test]
    fn unpacked_car_loads_listed_artifacts_and_resources() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/reference/wso2-perf/performance-ei/capp");
        let (cfg, d) = load_path(&dir);
        assert!(
            !d.has_errors(),
            "{:?}",
            d.items
                .iter()
                .filter(|x| x.severity == Severity::Error)
                .collect::<Vec<_>>()
        );
        assert_eq!(cfg.proxies.len(), 19);
        assert!(cfg
            .endpoints
            .iter()
            .any(|e| e.name.as_deref() == Some("RealService")));
        assert!(cfg.local_entries.iter().any(|l| l.key == "xslt_transform"));
        assert!(cfg
            .resources
            .iter()
            .any(|r| r.key == "conf:/XSLT_Datatransform.xslt"));
        // The missing .dmc of the data mapper is a warning, not an error.
        assert!(d
            .items
            .iter()
            .any(|x| x.severity == Severity::Warning && x.message.contains("DMPerfTest.dmc")));
    }

    #[test]
    fn an_mi_deployment_folder_reads_the_registry_beside_it() {
        let home = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../sluice/tests/configs/mi-home");
        let deployment = home.join("repository/deployment/server/synapse-configs/default");
        let (cfg, d) = load_path(&deployment);
        assert!(!d.has_errors(), "{:?}", d.items);
        let mut keys: Vec<&str> = cfg.resources.iter().map(|r| r.key.as_str()).collect();
        keys.sort_unstable();
        // upper.xslt.properties is MI's record of upper.xslt's properties, not a resource.
        assert_eq!(
            keys,
            [
                "conf:/required/price.xml",
                "conf:/xslt/upper.xslt",
                "gov:/mi-resources/xslt/tagged.xslt",
                "gov:/sequences/answer.xml",
                "gov:/wsdls/echo.wsdl"
            ]
        );
        let entry = cfg
            .local_entries
            .iter()
            .find(|l| l.key == "gov:/sequences/answer.xml")
            .expect("the sequence resource is a sequence named by its key");
        assert!(matches!(
            entry.artifact,
            Some(crate::model::EntryArtifact::Sequence(_))
        ));
        // Any other folder has no registry.
        let (cfg, _) = load_path(&deployment.join("proxy-services"));
        assert!(cfg.resources.is_empty());
        assert!(mi_registry_home(&home).is_none());
    }

    /// MI's own `<registry>` (no `root`: `<MI_HOME>/registry`, or `RegRoot`) is read in MI's
    /// layout, once even when it is the one beside the deployment folder.
    #[test]
    fn mi_registry_declarations_read_mis_folder() {
        let home = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../sluice/tests/configs/mi-home");
        let dir = std::env::temp_dir().join(format!("sluice-mi-registry-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("synapse.xml");
        let declared = |params: &str| {
            format!(
                r#"<definitions xmlns="http://ws.apache.org/ns/synapse"><registry provider="org.wso2.carbon.mediation.registry.WSO2Registry"><parameter name="cachableDuration">15000</parameter>{params}</registry></definitions>"#
            )
        };
        std::fs::write(&conf, declared("")).unwrap();
        let (cfg, d) = load_path_in(&conf, Some(&home));
        assert!(d.items.is_empty(), "{:?}", d.items);
        assert!(cfg.key_sources.is_empty());
        assert!(cfg
            .resources
            .iter()
            .any(|r| r.key == "conf:/xslt/upper.xslt"));
        // RegRoot names the folder; one that is not there is said, and nothing is read.
        std::fs::write(
            &conf,
            declared(r#"<parameter name="RegRoot">file:nowhere</parameter>"#),
        )
        .unwrap();
        let (cfg, d) = load_path_in(&conf, Some(&home));
        assert_eq!(d.items.len(), 1, "{:?}", d.items);
        assert!(
            d.items[0].message.contains("'file:nowhere'"),
            "{:?}",
            d.items
        );
        assert!(cfg.resources.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
        // Beside an MI deployment folder: the same folder, read once.
        let deployment = home.join("repository/deployment/server/synapse-configs/default");
        let (mut cfg, mut d) = load_path(&deployment);
        let before = cfg.resources.len();
        cfg.mi_registries.push(RegistryRoot {
            root: "file:registry".to_owned(),
            loc: crate::Location::file_only(&Arc::from("registry.xml")),
        });
        load_declared_mi_registries(
            &home,
            mi_registry_home(&deployment).as_deref(),
            &mut cfg,
            &mut d,
        );
        assert_eq!(cfg.resources.len(), before);
    }

    #[test]
    fn a_file_registry_and_local_entry_sources_are_read_from_the_home() {
        let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../conformance/third_party/synapse-samples");
        let home = samples.join("home");
        // Sample 8: a <registry> over file:repository/conf/sample/resources/, and a local entry
        // whose src is a file there.
        let (cfg, d) = load_path_in(&samples.join("samples/synapse_sample_8.xml"), Some(&home));
        assert!(!d.has_errors(), "{:?}", d.items);
        assert!(cfg
            .resources
            .iter()
            .any(|r| r.key == "transform/transform_back.xslt"));
        let entry = cfg
            .local_entries
            .iter()
            .find(|l| l.key == "xslt-key-req")
            .unwrap();
        assert!(
            matches!(&entry.value, crate::model::LocalEntryValue::Xml { root, .. } if root == "stylesheet"),
            "{:?}",
            entry.value
        );
        // Sample 9: a sequence in the registry is a sequence named by its key.
        let (cfg, _) = load_path_in(&samples.join("samples/synapse_sample_9.xml"), Some(&home));
        let seq = cfg
            .local_entries
            .iter()
            .find(|l| l.key == "sequence/dynamic_seq_1.xml");
        assert!(matches!(
            seq.and_then(|s| s.artifact.as_ref()),
            Some(crate::model::EntryArtifact::Sequence(_))
        ));
        // Elsewhere the root is no folder: said where it was looked for, and nothing is read.
        let (cfg, d) = load_path_in(
            &samples.join("samples/synapse_sample_8.xml"),
            Some(&samples),
        );
        assert!(cfg.resources.is_empty());
        assert!(d
            .items
            .iter()
            .any(|x| x.severity == Severity::Warning && x.message.contains("is no folder under")));
        assert!(d
            .items
            .iter()
            .any(|x| x.severity == Severity::Error && x.message.contains("cannot read")));
    }

    #[test]
    fn missing_path_is_an_error() {
        let (_, d) = load_path(std::path::Path::new("/nonexistent/sluice/config"));
        assert!(d.has_errors());
    }
}
