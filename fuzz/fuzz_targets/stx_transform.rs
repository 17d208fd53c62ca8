//! The streaming XSLT subset: the first byte picks whether the rest is a stylesheet to compile or a
//! message for a fixed stylesheet in the subset (the shape of WSO2's XSLTProxy one). Either way: an
//! answer or `Fallback` (libxslt decides), never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_stx::StreamSheet;
use std::sync::OnceLock;

const SHEET: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:m0="http://services.samples" xmlns:m1="http://services.samples/xsd">
  <xsl:output method="xml" omit-xml-declaration="yes" indent="yes"/>
  <xsl:template match="@*|node()">
    <xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy>
  </xsl:template>
  <xsl:template match="m1:buyStocks">
    <m0:placeOrders>
      <xsl:for-each select="order">
        <m0:order><m0:code><xsl:value-of select="symbol"/></m0:code></m0:order>
      </xsl:for-each>
    </m0:placeOrders>
  </xsl:template>
</xsl:stylesheet>"#;

fn sheet() -> Option<&'static StreamSheet> {
    static SHEET_COMPILED: OnceLock<Option<StreamSheet>> = OnceLock::new();
    SHEET_COMPILED
        .get_or_init(|| StreamSheet::compile(SHEET.as_bytes()))
        .as_ref()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mut out = Vec::new();
    if pick % 2 == 0 {
        if let Some(s) = StreamSheet::compile(rest) {
            let _ = s.transform(b"<a><b>x</b></a>", &mut out);
        }
    } else if let Some(s) = sheet() {
        let _ = s.transform(rest, &mut out);
    }
});
