//! `<script>`: JavaScript run on the message, inline or from a key, as Synapse reads it.

use super::super::elements;
use super::FileParser;
use crate::diag::Severity;
use crate::model::{Script, ScriptSource};
use roxmltree::Node;

/// The JavaScript engines Synapse and MI name (`js` is Rhino in Synapse 3.0.1, GraalJS in MI 4.4).
const JAVASCRIPT: &[&str] = &["js", "graalJs", "rhinoJs", "nashornJs"];

/// Languages Synapse and MI run on the JVM that Sluice does not.
const JVM_LANGUAGES: &[&str] = &["groovy", "rb", "py"];

impl FileParser<'_, '_> {
    /// `<script language key function>` with the source inline (the element's text) or by key,
    /// and `<include key>` children.
    pub(super) fn script(&mut self, n: Node) -> Option<Script> {
        let Some(language) = n.attribute("language").filter(|l| !l.trim().is_empty()) else {
            self.report(
                Severity::Error,
                n,
                "The 'language' attribute is required for a script mediator",
            );
            return None;
        };
        if JVM_LANGUAGES.contains(&language) {
            self.report(
                Severity::Unsupported,
                n,
                format!(
                    "script language '{language}' runs on the JVM; Sluice runs JavaScript only"
                ),
            );
            return None;
        }
        if !JAVASCRIPT.contains(&language) {
            // Synapse finds no engine and the artifact does not deploy.
            self.report(
                Severity::Error,
                n,
                format!("No script engine found for language: {language}"),
            );
            return None;
        }
        if n.attribute("target").is_some() || elements(n).any(|c| c.tag_name().name() == "inputs") {
            self.report(
                Severity::Unsupported,
                n,
                "MI 4.4's script target and <inputs> are not supported yet",
            );
            return None;
        }
        let mut includes = Vec::new();
        for c in elements(n) {
            if c.tag_name().name() != "include" {
                self.unknown_child(c, "script");
                continue;
            }
            includes.push(
                self.static_script_key(c, "Cannot use 'include' element without 'key' attribute.")?,
            );
        }
        let source = match n.attribute("key") {
            Some(_) => ScriptSource::Key {
                key: self.static_script_key(n, "")?,
                function: n
                    .attribute("function")
                    .filter(|f| !f.trim().is_empty())
                    .unwrap_or("mediate")
                    .to_owned(),
            },
            None if n.attribute("function").is_some() => {
                self.report(
                    Severity::Error,
                    n,
                    "Cannot use 'function' attribute without 'key' attribute for a script mediator",
                );
                return None;
            }
            None => ScriptSource::Inline(n.children().filter_map(|c| c.text()).collect()),
        };
        Some(Script {
            language: language.to_owned(),
            source,
            includes,
        })
    }

    /// The `key` of a `<script>` or `<include>`: static; one in braces (chosen per message) is
    /// not supported yet.
    fn static_script_key(&mut self, n: Node, missing: &str) -> Option<String> {
        let key = match n.attribute("key").filter(|k| !k.trim().is_empty()) {
            Some(k) => k,
            None if !missing.is_empty() => {
                self.report(Severity::Error, n, missing);
                return None;
            }
            None => return self.required_attr(n, "key"),
        };
        if key.starts_with('{') && key.ends_with('}') {
            self.report(
                Severity::Unsupported,
                n,
                "dynamic script keys ({...}) are not supported yet",
            );
            return None;
        }
        Some(key.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use crate::model::*;
    use crate::parse::tests::mediator_of;

    fn parsed(xml: &str) -> (Option<Script>, String) {
        let (s, d) = mediator_of(xml, |m| match m {
            MediatorKind::Script(s) => Some(s.clone()),
            _ => None,
        });
        (s, d.join("\n"))
    }

    #[test]
    fn inline_and_keyed_scripts_are_read_as_synapse_reads_them() {
        let (s, _) =
            parsed(r#"<script language="js"><![CDATA[mc.setProperty("a", 1 < 2);]]></script>"#);
        match s.unwrap().source {
            ScriptSource::Inline(t) => assert_eq!(t, r#"mc.setProperty("a", 1 < 2);"#),
            other => panic!("{other:?}"),
        }
        let (s, _) = parsed(
            r#"<script language="js" key="conf:/script/t.js" function="transform"><include key="lib"/></script>"#,
        );
        let s = s.unwrap();
        assert_eq!(s.includes, ["lib"]);
        match s.source {
            ScriptSource::Key { key, function } => {
                assert_eq!(
                    (key.as_str(), function.as_str()),
                    ("conf:/script/t.js", "transform")
                )
            }
            other => panic!("{other:?}"),
        }
        let (s, _) = parsed(r#"<script language="js" key="t"/>"#);
        assert!(
            matches!(s.unwrap().source, ScriptSource::Key { function, .. } if function == "mediate")
        );
    }

    #[test]
    fn what_synapse_refuses_is_an_error_and_what_sluice_lacks_is_unsupported() {
        for (xml, says) in [
            (
                r#"<script>1;</script>"#,
                "error: <script>: The 'language' attribute is required",
            ),
            (
                r#"<script language="jh">1;</script>"#,
                "error: <script>: No script engine found for language: jh",
            ),
            (
                r#"<script language="js" function="f">1;</script>"#,
                "error: <script>: Cannot use 'function'",
            ),
            (
                r#"<script language="js" key="k"><include/></script>"#,
                "error: <include>: Cannot use 'include'",
            ),
            (
                r#"<script language="groovy">1</script>"#,
                "unsupported: <script>: script language 'groovy'",
            ),
            (
                r#"<script language="js" key="{get-property('k')}"/>"#,
                "unsupported: <script>: dynamic script keys",
            ),
        ] {
            let (s, diags) = parsed(xml);
            assert!(s.is_none(), "{xml}");
            assert!(diags.contains(says), "{xml}: {diags}");
        }
    }
}
