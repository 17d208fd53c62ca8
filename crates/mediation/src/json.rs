//! JSON and XML, each written as the other as WSO2 MI does. An XML message written out as JSON, as WSO2 MI's JSON formatter does (`JsonUtil.writeAsJson`
//! over its staxon writer, default settings): when a flow sets `messageType` (or `ContentType`) to
//! JSON and the body it sends is XML, the first child of the SOAP Body (the root of a plain XML
//! message) becomes the JSON text.
//!
//! The mapping: the element's name is the top-level key (`jsonObject` and `jsonArray` roots, which
//! JSON-to-XML made, are unwrapped); child elements are members, consecutive siblings of one name
//! (or one named by an `<?xml-multiple name?>` instruction) an array; attributes are `"@name"`
//! strings and an element's text beside them `"$"`; text is a number (`-?(0|[1-9][0-9]*)(.d+)?
//! ([eE][+-]?d+)?`, printed as Java's `BigDecimal` prints it), `true`, `false`, `null` or a string;
//! an empty element is `null`; whitespace-only text is dropped, text mixed with elements is refused;
//! prefixes and namespace declarations are dropped; comments are ignored.

use crate::error::{Error, ErrorKind};
use crate::message::{Body, Message};
use sluice_xml::{Node, NodeKind};
use std::borrow::Cow;

/// Converts the message's body to JSON when it is leaving as JSON (its `ContentType` or
/// `messageType` property, else its Content-Type, is `application/json` or `+json`) and the body in
/// memory is XML. A JSON body, or one that was not read, goes as it is.
pub fn write_as_json(msg: &mut Message) -> Result<(), Error> {
    // Cheapest first: a streamed body (every pass-through) is never converted.
    let Body::Bytes(b) = &msg.body else {
        return Ok(());
    };
    if b.trim_ascii_start().first() != Some(&b'<') {
        return Ok(());
    }
    let ct = match msg
        .axis2
        .get("ContentType")
        .or_else(|| msg.axis2.get("messageType"))
    {
        Some(c) => c,
        None => match msg
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
        {
            Some(c) => c,
            None => return Ok(()),
        },
    };
    if !is_json_type(ct) {
        return Ok(());
    }
    let ct = ct.to_owned();
    let fail = |m: String| {
        Error::new(
            ErrorKind::Mediation,
            format!("writing the message as JSON: {m}"),
        )
    };
    let doc = sluice_xml::parse_untrusted(b, &sluice_xml::Limits::default())
        .map_err(|e| fail(e.to_string()))?;
    let payload = match doc.soap_body() {
        Some(_) => doc.soap_body_first_child(),
        None => doc.root_element(),
    }
    .ok_or_else(|| fail("the message has no payload element".to_owned()))?;
    let text = xml_to_json(payload).map_err(fail)?;
    msg.body = Body::Bytes(text.into());
    msg.headers.remove(http::header::CONTENT_LENGTH);
    // WSO2 adds the charset it wrote in.
    let ct = if ct.to_ascii_lowercase().contains("charset") {
        ct
    } else {
        format!("{ct}; charset=UTF-8")
    };
    if let Ok(v) = http::HeaderValue::from_str(&ct) {
        msg.headers.insert(http::header::CONTENT_TYPE, v);
    }
    if msg.axis2.get("ContentType").is_some() || msg.axis2.get("messageType").is_some() {
        msg.axis2.set("ContentType", ct);
    }
    Ok(())
}

/// Whether a Content-Type is JSON.
pub fn is_json_type(ct: &str) -> bool {
    let m = ct.split(';').next().unwrap_or("").trim().as_bytes();
    m.eq_ignore_ascii_case(b"application/json")
        || (m.len() > 5 && m[m.len() - 5..].eq_ignore_ascii_case(b"+json"))
}

/// The JSON text for `e` (see the module's mapping).
pub fn xml_to_json(e: Node<'_>) -> Result<String, String> {
    let mut out = String::new();
    match e.name() {
        "jsonObject" => value(e, &mut out)?,
        "jsonArray" => {
            out.push('[');
            for (k, c) in e.child_elements().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                value(c, &mut out)?;
            }
            out.push(']');
        }
        name => {
            out.push('{');
            key(name, &mut out);
            value(e, &mut out)?;
            out.push('}');
        }
    }
    Ok(out)
}

fn key(name: &str, out: &mut String) {
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

/// The text of `e` outside its child elements, whitespace-only pieces dropped, and whether it has
/// child elements. Text beside elements is refused, as WSO2's writer does.
fn own_text(e: Node<'_>) -> Result<(Option<String>, bool), String> {
    let mut text: Option<String> = None;
    let mut elements = false;
    for c in e.children() {
        match c.kind() {
            NodeKind::Element => elements = true,
            NodeKind::Text | NodeKind::CData => {
                let t = c.text_content();
                if !t.trim().is_empty() {
                    text.get_or_insert_with(String::new).push_str(&t);
                }
            }
            _ => {}
        }
    }
    if elements && text.is_some() {
        return Err(format!(
            "<{}> mixes text and elements, which JSON cannot hold",
            e.name()
        ));
    }
    Ok((text, elements))
}

/// The JSON value of element `e`.
fn value(e: Node<'_>, out: &mut String) -> Result<(), String> {
    let (text, elements) = own_text(e)?;
    let mut attrs = e.attributes().peekable();
    if attrs.peek().is_none() && !elements {
        match text {
            Some(t) => primitive(&t, out),
            None => out.push_str("null"),
        }
        return Ok(());
    }
    out.push('{');
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
    };
    for a in attrs {
        sep(out);
        out.push_str("\"@");
        out.push_str(a.name());
        out.push_str("\":");
        string(&a.text_content(), out);
    }
    if let Some(t) = text {
        sep(out);
        key("$", out);
        primitive(&t, out);
    }
    // Consecutive children of one name are an array, and so is a name an
    // `<?xml-multiple name?>` instruction before them gives.
    let mut forced: Option<String> = None;
    let mut c = e.first_child();
    while let Some(n) = c {
        match n.kind() {
            NodeKind::ProcessingInstruction if n.name() == "xml-multiple" => {
                forced = Some(n.text_content().trim().to_owned());
                c = n.next_sibling();
            }
            NodeKind::Element => {
                let name = n.name();
                let mut group = vec![n];
                let mut next = n.next_sibling();
                while let Some(m) = next {
                    match m.kind() {
                        NodeKind::Element if m.name() == name => group.push(m),
                        NodeKind::Element => break,
                        // Whitespace and comments between siblings do not break an array.
                        _ => {}
                    }
                    next = m.next_sibling();
                }
                sep(out);
                key(name, out);
                let array = group.len() > 1 || forced.as_deref() == Some(name);
                if array {
                    out.push('[');
                }
                for (k, g) in group.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    value(*g, out)?;
                }
                if array {
                    out.push(']');
                }
                forced = None;
                c = next;
            }
            _ => c = n.next_sibling(),
        }
    }
    out.push('}');
    Ok(())
}

/// Text as WSO2's auto-primitive writer gives it: a number, a boolean, `null`, or a string.
fn primitive(t: &str, out: &mut String) {
    match t {
        "true" | "false" | "null" => out.push_str(t),
        _ => match big_decimal(t) {
            Some(n) => out.push_str(&n),
            None => string(t, out),
        },
    }
}

/// `t` printed as Java's `new BigDecimal(t).toString()` when it matches WSO2's number pattern
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn big_decimal(t: &str) -> Option<String> {
    let (neg, rest) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(k) => {
            let e = &rest[k + 1..];
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (&rest[..k], e.parse::<i64>().ok()?)
        }
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let ok_int = int == "0" || (int.starts_with(|c: char| ('1'..='9').contains(&c)));
    if !ok_int
        || !int.bytes().all(|b| b.is_ascii_digit())
        || (mantissa.contains('.') && frac.is_empty())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    // The unscaled digits and the scale, as BigDecimal keeps them.
    let all = format!("{int}{frac}");
    let digits = all.trim_start_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let scale = frac.len() as i64 - exp;
    let adjusted = digits.len() as i64 - 1 - scale;
    let mut s = String::new();
    if neg && digits != "0" {
        s.push('-');
    }
    if scale >= 0 && adjusted >= -6 {
        let scale = scale as usize;
        if scale == 0 {
            s.push_str(digits);
        } else if digits.len() > scale {
            let (a, b) = digits.split_at(digits.len() - scale);
            s.push_str(a);
            s.push('.');
            s.push_str(b);
        } else {
            s.push_str("0.");
            s.push_str(&"0".repeat(scale - digits.len()));
            s.push_str(digits);
        }
    } else {
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        s.push('E');
        if adjusted >= 0 {
            s.push('+');
        }
        s.push_str(&adjusted.to_string());
    }
    Some(s)
}

/// A JSON string: `"` and `\` escaped, `\b \f \n \r \t`, other control characters as `\u00XX`.
fn string(t: &str, out: &mut String) {
    out.push('"');
    for c in t.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// WSO2's mapping of a JSON value to XML (staxon, without processing instructions): an object's
/// members become elements, an array under a name repeats that element, `null` is an empty
/// element; the outer object or array is not wrapped (a top-level array's items are
/// `jsonElement`s). A name starting with a digit gets `_JsonReader_PD_` before it, one starting
/// with `$` has it replaced by `_JsonReader_PS_`; a name that is still not an XML name is refused
/// (the JSON comes from the client: it must not make markup), and so is XML past 64 MiB.
pub fn json_to_xml(v: &serde_json::Value) -> Result<String, String> {
    use serde_json::Value;
    const MAX: usize = 64 * 1024 * 1024;
    fn name(k: &str) -> Result<Cow<'_, str>, String> {
        let n = if let Some(rest) = k.strip_prefix('$') {
            Cow::Owned(format!("_JsonReader_PS_{rest}"))
        } else if k.starts_with(|c: char| c.is_ascii_digit()) {
            Cow::Owned(format!("_JsonReader_PD_{k}"))
        } else {
            Cow::Borrowed(k)
        };
        if sluice_xml::names::is_ncname(&n) {
            Ok(n)
        } else {
            Err(format!("the JSON name '{k}' cannot be an XML element name"))
        }
    }
    fn scalar(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => out.push_str(&crate::exec::escape_xml(s)),
            Value::Null => {}
            other => out.push_str(&other.to_string()),
        }
    }
    fn element(n: &str, v: &Value, out: &mut String) -> Result<(), String> {
        if out.len() > MAX {
            return Err(format!(
                "the XML made from the JSON is larger than {MAX} bytes"
            ));
        }
        match v {
            Value::Null => {
                out.push('<');
                out.push_str(n);
                out.push_str("/>");
            }
            // An array right inside an array.
            Value::Array(items) => {
                out.push_str(&format!("<{n}><jsonArray>"));
                for i in items {
                    element("jsonElement", i, out)?;
                }
                out.push_str(&format!("</jsonArray></{n}>"));
            }
            _ => {
                out.push('<');
                out.push_str(n);
                out.push('>');
                match v {
                    Value::Object(m) => members(m, out)?,
                    other => scalar(other, out),
                }
                out.push_str("</");
                out.push_str(n);
                out.push('>');
            }
        }
        Ok(())
    }
    fn members(m: &serde_json::Map<String, Value>, out: &mut String) -> Result<(), String> {
        for (k, v) in m {
            let n = name(k)?;
            match v {
                Value::Array(items) => {
                    for i in items {
                        element(&n, i, out)?;
                    }
                }
                other => element(&n, other, out)?,
            }
        }
        Ok(())
    }
    let mut out = String::new();
    match v {
        Value::Object(m) => members(m, &mut out)?,
        Value::Array(items) => {
            for i in items {
                element("jsonElement", i, &mut out)?;
            }
        }
        other => scalar(other, &mut out),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(xml: &str) -> String {
        let d = sluice_xml::Document::parse(xml.as_bytes()).unwrap();
        xml_to_json(d.root_element().unwrap()).unwrap()
    }

    #[test]
    fn xml_becomes_json_as_wso2_writes_it() {
        assert_eq!(json("<order><id>5</id></order>"), r#"{"order":{"id":5}}"#);
        assert_eq!(
            json("<r><i>1</i>\n <i>2</i><n/><s> x </s><t>true</t><z>null</z></r>"),
            r#"{"r":{"i":[1,2],"n":null,"s":" x ","t":true,"z":null}}"#
        );
        // Attributes are strings, the text beside them "$"; prefixes and declarations go.
        assert_eq!(
            json(r#"<m:p xmlns:m="urn:m" cur="USD" m:id="7">10.50</m:p>"#),
            r#"{"p":{"@cur":"USD","@id":"7","$":10.50}}"#
        );
        // One child stays a value; an instruction makes it an array.
        assert_eq!(
            json("<r><?xml-multiple i?><i>1</i><j>a\"b\\c\t</j></r>"),
            r#"{"r":{"i":[1],"j":"a\"b\\c\t"}}"#
        );
        // Roots JSON-to-XML made are unwrapped.
        assert_eq!(
            json("<jsonObject><a>1</a><b>x</b></jsonObject>"),
            r#"{"a":1,"b":"x"}"#
        );
        assert_eq!(
            json("<jsonArray><jsonElement>1</jsonElement><jsonElement>y</jsonElement></jsonArray>"),
            r#"[1,"y"]"#
        );
        // Text mixed with elements cannot be JSON.
        let d = sluice_xml::Document::parse(b"<a>x<b/></a>").unwrap();
        assert!(xml_to_json(d.root_element().unwrap()).is_err());
    }

    #[test]
    fn numbers_print_as_big_decimal_does() {
        for (t, want) in [
            ("10", Some("10")),
            ("-3", Some("-3")),
            ("10.5", Some("10.5")),
            ("500.0", Some("500.0")),
            ("0.001", Some("0.001")),
            ("1e3", Some("1E+3")),
            ("1.5E3", Some("1.5E+3")),
            ("1e-3", Some("0.001")),
            ("12e-9", Some("1.2E-8")),
            ("-0", Some("0")),
            ("007", None),
            ("+1", None),
            (".5", None),
            ("1.", None),
            ("1e", None),
            ("TRUE", None),
            (" 10", None),
        ] {
            assert_eq!(big_decimal(t).as_deref(), want, "{t}");
        }
    }
}
