//! What the fast path refuses (stylesheets outside the subset, inputs it cannot reproduce exactly),
//! and malformed inputs never panicking.

mod common;

use common::{c14n, read, reference, show, Rng};
use sluice_stx::{Fallback, StreamSheet};
use sluice_xml::{canonicalize, Document, Stylesheet};

const XSL: &str = "xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\"";
const IDENTITY: &str = "<xsl:template match=\"@*|node()\"><xsl:copy><xsl:apply-templates select=\"@*|node()\"/></xsl:copy></xsl:template>";

fn sheet(top: &str) -> String {
    format!(
        "<xsl:stylesheet {XSL} xmlns:m=\"urn:m\" version=\"1.0\">{IDENTITY}{top}</xsl:stylesheet>"
    )
}

fn template(body: &str) -> String {
    sheet(&format!(
        "<xsl:template match=\"m:a\">{body}</xsl:template>"
    ))
}

#[test]
fn the_subset_compiles() {
    for s in [
        sheet(""),
        template("<b><xsl:value-of select=\"c/m:d\"/></b>"),
        template("<xsl:for-each select=\"c\"><x k=\"1\">t<xsl:text> </xsl:text></x></xsl:for-each>"),
        template("<xsl:value-of select=\".\"/>"),
        format!("<xsl:transform {XSL} version=\"2.0\"><xsl:output method=\"xml\" indent=\"yes\" omit-xml-declaration=\"yes\" encoding=\"UTF-8\"/><xsl:template match=\"a\"/></xsl:transform>"),
    ] {
        assert!(StreamSheet::compile(s.as_bytes()).is_some(), "{s}");
    }
}

#[test]
fn stylesheets_outside_the_subset_are_refused() {
    let refused = [
        template("<xsl:if test=\"c\">x</xsl:if>"),
        template("<xsl:choose><xsl:when test=\"c\">x</xsl:when></xsl:choose>"),
        sheet("<xsl:param name=\"p\"/>"),
        sheet("<xsl:variable name=\"v\" select=\"1\"/>"),
        template("<xsl:apply-templates select=\"c\"/>"),
        template("<xsl:apply-templates/>"),
        template("<xsl:copy-of select=\"c\"/>"),
        template("<xsl:value-of select=\"c[1]\"/>"),
        template("<xsl:value-of select=\"@k\"/>"),
        template("<xsl:value-of select=\"//c\"/>"),
        template("<xsl:value-of select=\"concat(c, 'x')\"/>"),
        template("<xsl:value-of select=\"c\" disable-output-escaping=\"yes\"/>"),
        template("<xsl:for-each select=\"c\"><xsl:sort select=\"d\"/></xsl:for-each>"),
        template("<xsl:element name=\"x\"/>"),
        template("<xsl:attribute name=\"x\">1</xsl:attribute>"),
        template("<xsl:copy/>"),
        template("<xsl:call-template name=\"t\"/>"),
        template("<b k=\"{c}\"/>"),
        template("<b xsl:use-attribute-sets=\"s\"/>"),
        template("<b m:k=\"1\"/>"),
        template("<xsl:comment>c</xsl:comment>"),
        template("<![CDATA[x]]>"),
        sheet("<xsl:key name=\"k\" match=\"a\" use=\"b\"/>"),
        sheet("<xsl:strip-space elements=\"*\"/>"),
        sheet("<xsl:include href=\"x.xsl\"/>"),
        sheet("<xsl:template match=\"m:a\" mode=\"x\"/>"),
        sheet("<xsl:template name=\"t\"/>"),
        sheet("<xsl:template match=\"m:a\" priority=\"2\"/>"),
        sheet("<xsl:template match=\"m:a\"/><xsl:template match=\"m:a\">x</xsl:template>"),
        sheet("<xsl:template match=\"a/b\"/>"),
        sheet("<xsl:template match=\"*\"/>"),
        sheet("<xsl:template match=\"/\"/>"),
        sheet("<xsl:template match=\"text()\"/>"),
        sheet("<xsl:template match=\"q:a\"/>"),
        sheet("<xsl:output method=\"html\"/>"),
        sheet("<xsl:output method=\"text\"/>"),
        sheet("<xsl:output encoding=\"ISO-8859-1\"/>"),
        sheet("<xsl:output indent=\"maybe\"/>"),
        sheet("<xsl:output cdata-section-elements=\"a\"/>"),
        sheet("<xsl:output doctype-system=\"a.dtd\"/>"),
        sheet("<xsl:output/><xsl:output/>"),
        sheet("<other xmlns=\"urn:o\"/>"),
        sheet(IDENTITY),
        sheet("<xsl:template match=\"node()\"><xsl:copy><xsl:apply-templates/></xsl:copy></xsl:template>"),
        format!("<xsl:stylesheet {XSL} version=\"1.0\" exclude-result-prefixes=\"m\" xmlns:m=\"urn:m\"/>"),
        format!("<xsl:stylesheet {XSL} version=\"1.0\" extension-element-prefixes=\"m\" xmlns:m=\"urn:m\"/>"),
        format!("<xsl:stylesheet {XSL}/>"),
        format!("<a xsl:version=\"1.0\" {XSL}/>"),
        format!("<xsl:stylesheet {XSL} version=\"1.0\">text</xsl:stylesheet>"),
        format!("<!DOCTYPE x><xsl:stylesheet {XSL} version=\"1.0\"/>"),
        "<not-xml".to_owned(),
    ];
    for s in &refused {
        assert!(
            StreamSheet::compile(s.as_bytes()).is_none(),
            "compiled: {s}"
        );
    }
}

#[test]
fn inputs_outside_what_we_reproduce_fall_back() {
    let s = StreamSheet::compile(sheet("").as_bytes()).unwrap();
    let html = StreamSheet::compile(
        format!("<xsl:stylesheet {XSL} version=\"1.0\">{IDENTITY}</xsl:stylesheet>").as_bytes(),
    )
    .unwrap();
    for input in [
        "<!DOCTYPE a><a/>",
        "<?pi x?><a/>",
        "<a><?pi x?></a>",
        "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>",
        "\u{FEFF}<a/>",
        "<a>&ent;</a>",
        "<é/>",
        "<a xmlns:p=\"u&amp;v\"/>",
        "<a><b/><![CDATA[]]><c/></a>",
    ] {
        let mut out = b"kept".to_vec();
        assert_eq!(
            s.transform(input.as_bytes(), &mut out),
            Err(Fallback),
            "{input}"
        );
        assert_eq!(out, b"kept", "output left as it was");
    }
    let mut out = Vec::new();
    assert_eq!(html.transform(b"<HTML/>", &mut out), Err(Fallback));
    assert!(html
        .transform(b"<x:html xmlns:x='urn:x'/>", &mut out)
        .is_ok());
}

#[test]
fn mutated_inputs_never_panic_and_agree_with_libxslt() {
    let sheets = [
        sheet("<xsl:template match=\"m:buyStocks\"><m:b><xsl:for-each select=\"order\"><o xmlns=\"\"><xsl:value-of select=\"symbol\"/></o></xsl:for-each></m:b></xsl:template>").replace("urn:m", "http://services.samples/xsd"),
        format!("<xsl:stylesheet {XSL} version=\"1.0\"><xsl:output indent=\"yes\"/><xsl:template match=\"x\"><y/></xsl:template></xsl:stylesheet>"),
    ];
    let bases = [
        read("requests/current/1000B_buyStocks.xml"),
        b"<?xml version='1.0'?><!--c--><r xmlns='urn:d' xmlns:p='urn:p' p:a='&lt;&#233;'>t&amp;<x>1</x><![CDATA[c]]><p:q/>\r\n</r>".to_vec(),
    ];
    const TOKENS: [&str; 22] = [
        "<",
        ">",
        "&",
        "&#0;",
        "\"",
        "'",
        "]]>",
        "<!--",
        "-->",
        "<?pi?>",
        "<!DOCTYPE a>",
        " xmlns:q='u'",
        " q:z='1'",
        "\u{0}",
        "\r",
        "&amp",
        "</x>",
        "<x>",
        "\u{FEFF}",
        " a='1'",
        "&#xD800;",
        "\u{e9}",
    ];
    let mut r = Rng::new(42);
    let (mut runs, mut accepted) = (0, 0);
    for text in &sheets {
        let fast = StreamSheet::compile(text.as_bytes()).unwrap();
        let slow = Stylesheet::compile(text.as_bytes(), None).unwrap();
        for base in &bases {
            for _ in 0..1500 {
                let mut m = base.clone();
                for _ in 0..1 + r.below(3) {
                    let at = r.below(m.len() + 1);
                    match r.below(4) {
                        0 => {
                            let end = (at + 1 + r.below(8)).min(m.len());
                            m.drain(at.min(end)..end);
                        }
                        1 => m.truncate(at),
                        2 => {
                            let t = r.pick(&TOKENS);
                            m.splice(at..at, t.bytes());
                        }
                        _ => {
                            if at < m.len() {
                                m[at] = m[at].wrapping_add(1 + r.below(3) as u8);
                            }
                        }
                    }
                }
                runs += 1;
                let mut out = Vec::new();
                let got = fast.transform(&m, &mut out);
                let want = reference(&slow, &m);
                match (got, want) {
                    (Ok(()), Some(w)) => {
                        accepted += 1;
                        assert_eq!(show(&out), show(&w), "input:\n{}", show(&m));
                    }
                    (Ok(()), None) => {
                        panic!("libxslt fails, the fast path does not:\n{}", show(&m))
                    }
                    (Err(Fallback), _) => assert!(out.is_empty()),
                }
            }
        }
    }
    eprintln!("{runs} mutated inputs, {accepted} accepted by the fast path");
    assert!(accepted > 0);
}

/// Literal result elements the fast path writes straight out (no namespace work) give libxslt's bytes,
/// and so do the ones next to them that still need the namespace fix-up: a value with markup
/// characters, an empty value, an element directly in the template (it gets the stylesheet's
/// namespaces), and one under a namespaced element while a default namespace is in scope (it must
/// undeclare it).
#[test]
fn plain_literal_elements_match_libxslt() {
    let a = "<m:a xmlns:m=\"urn:m\"><x>1 &lt; 2 &amp; 3 &gt; 4</x></m:a>";
    for (sheet, input) in [
        (
            template("<b><c><xsl:value-of select=\"x\"/></c></b>"),
            format!("<r>{a}</r>"),
        ),
        (
            template("<b><c><xsl:value-of select=\"y\"/></c><d>t</d><e/></b>"),
            format!("<r>{a}</r>"),
        ),
        (
            template("<c><xsl:value-of select=\"x\"/></c>"),
            format!("<r>{a}</r>"),
        ),
        (
            template("<m:b><c><xsl:value-of select=\"x\"/></c></m:b>"),
            "<r xmlns=\"urn:d\"><m:a xmlns:m=\"urn:m\"><x xmlns=\"\">1</x></m:a></r>".to_owned(),
        ),
    ] {
        let slow = Stylesheet::compile(sheet.as_bytes(), None).unwrap();
        let quick = StreamSheet::compile(sheet.as_bytes()).unwrap();
        let want = reference(&slow, input.as_bytes()).unwrap();
        let mut got = Vec::new();
        assert_eq!(
            quick.transform(input.as_bytes(), &mut got),
            Ok(()),
            "{sheet}"
        );
        assert_eq!(show(&got), show(&want), "{sheet}\n{input}");
    }
}

/// Elements with many attributes and namespace declarations (issue 30): the fast path gives
/// libxslt's bytes while libxml2 reads the input, and falls back past Sluice's limits (where
/// libxml2 refuses it) or on a repeat.
#[test]
fn many_attributes_and_declarations_match_libxslt_or_fall_back() {
    let identity = sheet("");
    let fast = StreamSheet::compile(identity.as_bytes()).unwrap();
    let slow = Stylesheet::compile(identity.as_bytes(), None).unwrap();
    let attrs = |n: usize| -> String { (0..n).map(|k| format!(" a{k}='{k}'")).collect() };
    let decls = |tag: &str, n: usize| -> String {
        (0..n)
            .map(|k| format!(" xmlns:{tag}{k}='urn:{tag}{k}'"))
            .collect()
    };
    let kids: String = (0..100)
        .map(|k| format!("<m:e m:k='{k}'><m:f/></m:e>"))
        .collect();
    let mut inputs: Vec<(String, bool)> = Vec::new();
    for n in [17, 200, 999, 1000, 1001, 5000, 1_000_000] {
        inputs.push((format!("<r{}><x/></r>", attrs(n)), n <= 1000));
        inputs.push((format!("<r><x{}>t</x></r>", attrs(n)), n <= 1000));
    }
    for n in [17, 999] {
        inputs.push((format!("<r{} a3='again'/>", attrs(n)), false));
    }
    inputs.push((
        format!("<r xmlns:m='urn:m'{}>{kids}</r>", decls("q", 990)),
        true,
    ));
    inputs.push((
        format!(
            "<r xmlns:m='urn:m'{}><s{}>{kids}</s>{kids}</r>",
            decls("q", 500),
            decls("t", 490)
        ),
        true,
    ));
    inputs.push((
        format!(
            "<r xmlns:m='urn:m'{}><s{}>{kids}</s></r>",
            decls("q", 600),
            decls("t", 600)
        ),
        false,
    ));
    for (input, within) in &inputs {
        let want = reference(&slow, input.as_bytes());
        assert_eq!(want.is_some(), *within, "libxslt: {}", &input[..80]);
        let mut got = Vec::new();
        match fast.transform(input.as_bytes(), &mut got) {
            Ok(()) => assert_eq!(Some(got), want, "{}", &input[..80]),
            Err(Fallback) => assert!(!within, "fell back: {}", &input[..80]),
        }
    }
    // The SOAP Body's child under many declarations: it takes in those in scope (by hash past a
    // few), as the element copied out into its own document declares them for libxslt.
    let soap = "http://schemas.xmlsoap.org/soap/envelope/";
    for (outer, own) in [
        (decls("q", 900), ""),
        (decls("q", 20), " xmlns:q3='urn:mine'"),
    ] {
        let child = format!("<m:c xmlns:m='urn:m'{own}>{kids}</m:c>");
        let envelope =
            format!("<s:Envelope xmlns:s='{soap}'{outer}><s:Body>{child}</s:Body></s:Envelope>");
        let mut spliced = Vec::new();
        fast.transform_soap_body_child(envelope.as_bytes(), &mut spliced)
            .unwrap_or_else(|_| panic!("fell back: {}", &envelope[..80]));
        let doc = Document::parse(envelope.as_bytes()).unwrap();
        let node = doc.root_element().unwrap().first_child_element().unwrap();
        let alone = node.first_child_element().unwrap().to_document().unwrap();
        let want = canonicalize(&slow.transform(&alone, &[]).unwrap()).unwrap();
        let body = show(&spliced);
        let from = body.find("<m:c").unwrap();
        let to = body.rfind("</s:Body>").unwrap();
        assert_eq!(
            c14n(&body.as_bytes()[from..to]).map(|c| show(&c)),
            Some(show(&want))
        );
    }
}
