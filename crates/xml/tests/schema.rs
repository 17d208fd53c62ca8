//! XML Schema validation: compile once, validate documents and elements, never load anything.

use sluice_xml::{Document, Schema, XmlErrorKind};

const XSD: &str = r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"
    targetNamespace="urn:orders" xmlns="urn:orders" elementFormDefault="qualified">
  <xs:element name="order">
    <xs:complexType><xs:sequence>
      <xs:element name="symbol" type="xs:string"/>
      <xs:element name="qty" type="xs:positiveInteger"/>
    </xs:sequence></xs:complexType>
  </xs:element>
</xs:schema>"#;

#[test]
fn valid_and_invalid_documents() {
    let s = Schema::compile(XSD.as_bytes()).unwrap();
    let ok =
        Document::parse(br#"<order xmlns="urn:orders"><symbol>IBM</symbol><qty>3</qty></order>"#)
            .unwrap();
    assert_eq!(s.validate(&ok).unwrap(), Ok(()));
    let bad =
        Document::parse(br#"<order xmlns="urn:orders"><symbol>IBM</symbol><qty>-1</qty></order>"#)
            .unwrap();
    let why = s.validate(&bad).unwrap().unwrap_err();
    assert!(why.to_string().contains("qty"), "{why}");
    assert!(why.to_string().contains("positiveInteger"), "{why}");
}

#[test]
fn an_element_inside_an_envelope_is_validated_alone() {
    let s = Schema::compile(XSD.as_bytes()).unwrap();
    let env = Document::parse(
        br#"<e:Envelope xmlns:e="http://schemas.xmlsoap.org/soap/envelope/" xmlns:o="urn:orders"><e:Body><o:order><o:symbol>A</o:symbol><o:qty>1</o:qty></o:order></e:Body></e:Envelope>"#,
    )
    .unwrap();
    let order = env.soap_body_first_child().unwrap();
    assert_eq!(s.validate_element(order).unwrap(), Ok(()));
    // The envelope itself is not an `order`.
    assert!(s.validate(&env).unwrap().is_err());
}

#[test]
fn bad_schemas_fail_to_compile() {
    let e = Schema::compile(b"<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='a' type='xs:nope'/></xs:schema>").unwrap_err();
    assert_eq!(e.kind(), XmlErrorKind::SchemaCompile);
    assert!(Schema::compile(b"<not-closed>").is_err());
    assert!(Schema::compile(b"<a/>").is_err());
}

#[test]
fn schemas_never_load_other_documents() {
    // A schema that includes another by location must not read it (here: a file that exists).
    let dir = std::env::temp_dir().join(format!("sluice-xsd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let other = dir.join("other.xsd");
    std::fs::write(
        &other,
        r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="b"/></xs:schema>"#,
    )
    .unwrap();
    let xsd = format!(
        r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:include schemaLocation="{}"/><xs:element name="a"/></xs:schema>"#,
        other.display()
    );
    let result = Schema::compile(xsd.as_bytes());
    std::fs::remove_dir_all(&dir).ok();
    match result {
        Err(_) => {}
        Ok(s) => {
            // libxml2 treats an include it cannot load as a warning; then `b` must be unknown.
            let d = Document::parse(b"<b/>").unwrap();
            assert!(
                s.validate(&d).unwrap().is_err(),
                "the included schema was read"
            );
        }
    }
    // No external DTD or entity either.
    let with_dtd = br#"<!DOCTYPE xs:schema SYSTEM "http://127.0.0.1:9/x.dtd"><xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>"#;
    let _ = Schema::compile(with_dtd);
}

#[test]
fn compiled_schemas_are_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Schema>();
    let s = std::sync::Arc::new(Schema::compile(XSD.as_bytes()).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let s = s.clone();
            std::thread::spawn(move || {
                for j in 0..200 {
                    let qty = if (i + j) % 2 == 0 { "2" } else { "x" };
                    let d = Document::parse(
                        format!(r#"<order xmlns="urn:orders"><symbol>S</symbol><qty>{qty}</qty></order>"#)
                            .as_bytes(),
                    )
                    .unwrap();
                    assert_eq!(s.validate(&d).unwrap().is_ok(), qty == "2");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// Several schemas compile as one (Synapse's validate with several `<schema>`s): each element is
/// checked against the schema that declares it, schemas of one namespace are read together, and
/// `xs:import` / `xs:include` locations are served from the resources given, nothing else.
#[test]
fn schema_sets_read_their_resources_and_nothing_else() {
    let quotes = r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:quotes"
        xmlns:c="urn:common" elementFormDefault="qualified">
      <xs:import namespace="urn:common" schemaLocation="common.xsd"/>
      <xs:element name="quote" type="c:symbolType"/>
    </xs:schema>"#;
    let common = r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:common">
      <xs:simpleType name="symbolType"><xs:restriction base="xs:string"><xs:maxLength value="4"/></xs:restriction></xs:simpleType>
    </xs:schema>"#;
    // A second schema of the orders' namespace, and one without a namespace.
    let more_orders = r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:orders">
      <xs:element name="cancel" type="xs:int"/>
    </xs:schema>"#;
    let plain = r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="ping"/></xs:schema>"#;
    let s = Schema::compile_set(
        &[
            XSD.as_bytes(),
            quotes.as_bytes(),
            more_orders.as_bytes(),
            plain.as_bytes(),
        ],
        &[("common.xsd", common.as_bytes())],
    )
    .unwrap();
    let valid = |doc: &str| {
        s.validate(&Document::parse(doc.as_bytes()).unwrap())
            .unwrap()
    };
    assert_eq!(
        valid(r#"<order xmlns="urn:orders"><symbol>IBM</symbol><qty>3</qty></order>"#),
        Ok(())
    );
    assert_eq!(
        valid(r#"<q:quote xmlns:q="urn:quotes">IBM</q:quote>"#),
        Ok(())
    );
    assert_eq!(
        valid(r#"<o:cancel xmlns:o="urn:orders">7</o:cancel>"#),
        Ok(())
    );
    assert_eq!(valid("<ping/>"), Ok(()));
    // The imported type's facet holds.
    assert!(valid(r#"<q:quote xmlns:q="urn:quotes">TOOLONG</q:quote>"#).is_err());
    assert!(valid(r#"<o:cancel xmlns:o="urn:orders">x</o:cancel>"#).is_err());
    assert!(valid("<unknown/>").is_err());
    // Without the resource the import is not read: its type is unknown.
    let accepts = |s: Result<Schema, _>, doc: &[u8]| {
        s.is_ok_and(|s| s.validate(&Document::parse(doc).unwrap()).unwrap().is_ok())
    };
    let quote = br#"<q:quote xmlns:q="urn:quotes">IBM</q:quote>"#;
    assert!(!accepts(
        Schema::compile_set(&[quotes.as_bytes()], &[]),
        quote
    ));
    // And after a set, a lone schema reads nothing again.
    let lone = r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:x"
        xmlns:c="urn:common"><xs:import namespace="urn:common" schemaLocation="common.xsd"/>
        <xs:element name="q" type="c:symbolType"/></xs:schema>"#;
    let q = br#"<x:q xmlns:x="urn:x">IBM</x:q>"#;
    assert!(!accepts(Schema::compile(lone.as_bytes()), q));
}

#[test]
fn schema_sets_validate_elements_inside_an_envelope() {
    let more = r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:x"><xs:element name="x"/></xs:schema>"#;
    let s = Schema::compile_set(&[XSD.as_bytes(), more.as_bytes()], &[]).unwrap();
    let env = Document::parse(
        br#"<e:Envelope xmlns:e="http://schemas.xmlsoap.org/soap/envelope/" xmlns:o="urn:orders"><e:Body><o:order><o:symbol>A</o:symbol><o:qty>1</o:qty></o:order></e:Body></e:Envelope>"#,
    )
    .unwrap();
    let order = env.soap_body_first_child().unwrap();
    assert_eq!(s.validate_element(order).unwrap(), Ok(()));
}
