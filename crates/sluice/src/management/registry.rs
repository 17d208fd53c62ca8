//! MI's `registry-resources`: the registry resources Sluice read at load (MI's `registry/` folder
//! beside the deployment, a CAR's registry resources), by MI's paths: `registry/config/a/b.xslt`
//! is the resource `conf:/a/b.xslt`, `registry/governance/...` is `gov:/...`.
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /management/registry-resources?path=registry/config/a` | `{"count","list":[{"name","mediaType","properties":[{"name","value"}]}]}`: the files and folders in it (a folder's `mediaType` is `directory`) |
//! | `GET .../registry-resources/properties?path=...[&name=]` | `{"count","list":[{"name","value"}]}`, or one property's `{"name","value"}` |
//! | `GET .../registry-resources/metadata?path=...` | `{"name","mediaType"}` |
//!
//! Read only: the content of a resource and adding, changing or removing one are not served.

use super::{error, listed, Answer};
use hyper::StatusCode;
use serde_json::{json, Value};
use sluice_mediation::plan::RegistryResource;
use sluice_mediation::Plan;

/// A resource's key as written in the registry: `registry/config/a` is `conf:/a`. `None` for
/// another root.
fn key_of(path: &str) -> Option<String> {
    let path = path.trim_matches('/');
    for (root, prefix) in [
        ("registry/config", "conf:"),
        ("registry/governance", "gov:"),
    ] {
        if let Some(rest) = path.strip_prefix(root) {
            if rest.is_empty() || rest.starts_with('/') {
                return Some(format!("{prefix}{}", rest.trim_end_matches('/')));
            }
        }
    }
    None
}

/// MI's media type for a resource, by its extension.
fn media_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()) {
        Some(e) if matches!(e.as_str(), "xml" | "xsl" | "xslt") => "application/xml",
        Some(e) if e == "json" => "application/json",
        Some(e) if e == "wsdl" => "application/wsdl+xml",
        Some(e) if e == "xsd" => "application/x-xsd+xml",
        Some(e) if matches!(e.as_str(), "js" | "javascript") => "application/javascript",
        Some(e) if matches!(e.as_str(), "yaml" | "yml") => "application/yaml",
        Some(e) if e == "properties" => "text/x-java-properties",
        _ => "text/plain",
    }
}

fn properties(list: &[(String, String)]) -> Vec<Value> {
    list.iter()
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect()
}

/// The files and folders in the folder at `path`.
pub fn list(plan: &Plan, path: Option<String>) -> Answer {
    let Some(path) = path else {
        return error(
            StatusCode::BAD_REQUEST,
            "Registry path not found in the request",
        );
    };
    if path.trim_matches('/') == "registry" {
        let roots = [("config", "conf:/"), ("governance", "gov:/")]
            .into_iter()
            .filter(|(_, p)| plan.registry.iter().any(|r| r.key.starts_with(p)))
            .map(|(name, _)| json!({"name": name, "mediaType": "directory", "properties": []}))
            .collect();
        return (StatusCode::OK, Some(listed(roots)));
    }
    let Some(folder) = key_of(&path) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("Can not find the registry: {path}"),
        );
    };
    let under = format!("{folder}/");
    let mut seen = std::collections::BTreeMap::new();
    for RegistryResource {
        key,
        properties: props,
    } in &plan.registry
    {
        let Some(rest) = key.strip_prefix(&under) else {
            continue;
        };
        match rest.split_once('/') {
            Some((dir, _)) => {
                seen.entry(dir.to_owned()).or_insert_with(
                    || json!({"name": dir, "mediaType": "directory", "properties": []}),
                );
            }
            None => {
                seen.insert(
                    rest.to_owned(),
                    json!({"name": rest, "mediaType": media_type(rest), "properties": properties(props)}),
                );
            }
        }
    }
    if seen.is_empty() {
        return error(
            StatusCode::NOT_FOUND,
            &format!("Can not find the registry: {path}"),
        );
    }
    (StatusCode::OK, Some(listed(seen.into_values().collect())))
}

/// The resource at `path`, and its properties.
fn resource<'a>(plan: &'a Plan, path: &Option<String>) -> Result<&'a RegistryResource, Answer> {
    let Some(path) = path else {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "Registry path not found in the request",
        ));
    };
    let key = key_of(path);
    plan.registry
        .iter()
        .find(|r| Some(&r.key) == key.as_ref())
        .ok_or_else(|| {
            error(
                StatusCode::NOT_FOUND,
                &format!("Can not find the registry: {path}"),
            )
        })
}

/// The properties of the resource at `path` (one with `name`).
pub fn resource_properties(plan: &Plan, path: Option<String>, name: Option<String>) -> Answer {
    let props = match resource(plan, &path) {
        Ok(r) => &r.properties,
        Err(e) => return e,
    };
    match name {
        None => (StatusCode::OK, Some(listed(properties(props)))),
        Some(n) => match props.iter().find(|(k, _)| *k == n) {
            Some((k, v)) => (StatusCode::OK, Some(json!({"name": k, "value": v}))),
            None => error(
                StatusCode::NOT_FOUND,
                &format!("Property named {n} does not exist"),
            ),
        },
    }
}

/// The name and media type of the resource at `path`.
pub fn metadata(plan: &Plan, path: Option<String>) -> Answer {
    match resource(plan, &path).map(|r| r.key.rsplit('/').next().unwrap_or(&r.key)) {
        Ok(name) => (
            StatusCode::OK,
            Some(json!({"name": name, "mediaType": media_type(name)})),
        ),
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_and_files_by_mi_paths() {
        let entry = |key: &str, properties: Vec<(String, String)>| RegistryResource {
            key: key.into(),
            properties,
        };
        let plan = Plan {
            registry: vec![
                entry("conf:/xslt/t.xslt", vec![("owner".into(), "ops".into())]),
                entry("conf:/xslt/deep/u.xsd", vec![]),
                entry("gov:/endpoints/e.xml", vec![]),
            ],
            ..Plan::default()
        };
        let (status, v) = list(&plan, Some("registry/config/xslt".into()));
        assert_eq!(status, StatusCode::OK);
        let v = v.unwrap();
        assert_eq!(v["count"], 2, "{v}");
        assert_eq!(v["list"][0]["name"], "deep");
        assert_eq!(v["list"][0]["mediaType"], "directory");
        assert_eq!(v["list"][1]["name"], "t.xslt");
        assert_eq!(v["list"][1]["properties"][0]["value"], "ops");
        let (_, roots) = list(&plan, Some("registry".into()));
        assert_eq!(roots.unwrap()["count"], 2);
        assert_eq!(
            list(&plan, Some("registry/config/none".into())).0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(list(&plan, None).0, StatusCode::BAD_REQUEST);
        let (_, m) = metadata(&plan, Some("registry/governance/endpoints/e.xml".into()));
        assert_eq!(
            m.unwrap(),
            json!({"name": "e.xml", "mediaType": "application/xml"})
        );
        let (_, p) = resource_properties(
            &plan,
            Some("registry/config/xslt/t.xslt".into()),
            Some("owner".into()),
        );
        assert_eq!(p.unwrap(), json!({"name": "owner", "value": "ops"}));
    }
}
