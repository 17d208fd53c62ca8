//! MI's `<datamapper>`: the keys of its mapping (`config`, a `.dmc` script), its schemas and its
//! XSLT form, as MI's factory reads them. What runs is decided in the mediation crate.

use super::FileParser;
use crate::diag::Severity;
use crate::model::Datamapper;
use roxmltree::Node;

impl FileParser<'_, '_> {
    /// `<datamapper config inputSchema outputSchema inputType outputType xsltStyleSheet>`.
    pub(super) fn datamapper(&mut self, n: Node) -> Option<Datamapper> {
        let mut key = |attr: &str, missing: &str| match n.attribute(attr).map(str::trim) {
            Some(k) if !k.is_empty() => Some(k.to_owned()),
            _ => {
                self.report(Severity::Error, n, missing);
                None
            }
        };
        let config = key(
            "config",
            "The attribute config is required for the DataMapper mediator",
        );
        let input = key(
            "inputSchema",
            "The attribute inputSchema is required for the DataMapper mediator",
        );
        let output = key(
            "outputSchema",
            "The outputSchema attribute is required for the DataMapper mediator",
        );
        let (config, input_schema, output_schema) = (config?, input?, output?);
        let xslt = n
            .attribute("xsltStyleSheet")
            .map(str::trim)
            .filter(|k| !k.is_empty());
        let keys = [
            Some(config.as_str()),
            Some(&input_schema),
            Some(&output_schema),
            xslt,
        ];
        if keys.into_iter().flatten().any(|k| k.starts_with('{')) {
            let why = "datamapper keys computed per message are not supported yet";
            self.report(Severity::Unsupported, n, why);
            return None;
        }
        if n.attribute("target").is_some() || n.attribute("variable").is_some() {
            self.report(
                Severity::Unsupported,
                n,
                "the datamapper's target and variable attributes are not supported yet",
            );
            return None;
        }
        Some(Datamapper {
            config,
            input_schema,
            output_schema,
            input_type: n.attribute("inputType").map(str::to_owned),
            output_type: n.attribute("outputType").map(str::to_owned),
            xslt: xslt.map(str::to_owned),
        })
    }
}
