//! JSON and XML written as each other, as WSO2 MI does.
//!
//! XML leaving as JSON (WSO2's JSON formatter, `JsonUtil.writeAsJson` over its staxon writer,
//! default settings): when a run ends with `messageType` (else `ContentType`, else the Content-Type)
//! JSON and the body in memory XML, the first child of the SOAP Body (the root of a plain XML
//! message) is what goes out, as JSON. The mapping: the element's name is the top-level key
//! (`jsonObject` and `jsonArray` roots, which JSON-to-XML made, are unwrapped, and so is an element
//! holding only a `jsonArray` or `jsonObject`); child elements are members, consecutive siblings of
//! one name (or one an `<?xml-multiple?>` instruction names or precedes) an array; attributes are
//! `"@name"` strings and an element's text beside them `"$"`; text is a number
//! (`-?(0|[1-9][0-9]*)(.d+)?([eE][+-]?d+)?`, printed as Java's `BigDecimal` prints it), `true`,
//! `false`, `null` or a string; an empty element is `null`; whitespace-only text is dropped, text
//! mixed with elements is refused; prefixes and namespace declarations are dropped; comments are
//! ignored; the names JSON-to-XML renamed get their JSON names back.
//!
//! JSON going into XML ([`json_to_xml`]) is the other direction, for payloadFactory arguments.

use crate::error::{Error, ErrorKind};
use crate::message::{Body, Message};
use sluice_xml::{Node, NodeKind};
use std::borrow::Cow;

/// What goes out instead of the body when the message leaves as JSON (`messageType`, else
/// `ContentType`, else its Content-Type, is `application/json` or `+json`) while its body in memory
/// is XML: the JSON text and its Content-Type (with the charset WSO2 adds). `None` for a JSON body
/// or one that was not read, which go as they are. The message itself keeps its XML, for whatever
/// runs next (a fault sequence, the rest after a one-way call). `tree` is the body already parsed,
/// when the run has it.
pub(crate) fn json_out(
    msg: &Message,
    tree: Option<&sluice_xml::Document>,
) -> Result<Option<(bytes::Bytes, http::HeaderValue)>, Error> {
    // Cheapest first: a streamed body (every pass-through) is never converted.
    let Body::Bytes(b) = &msg.body else {
        return Ok(None);
    };
    if !looks_like_xml(b) {
        return Ok(None);
    }
    let ct = match msg
        .axis2
        .get("messageType")
        .or_else(|| msg.axis2.get("ContentType"))
    {
        Some(c) => c,
        None => match msg
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
        {
            Some(c) => c,
            None => return Ok(None),
        },
    };
    if !is_json_type(ct) {
        return Ok(None);
    }
    let fail = |m: String| {
        Error::new(
            ErrorKind::Mediation,
            format!("writing the message as JSON: {m}"),
        )
    };
    let parsed;
    let _held;
    let doc = match tree {
        Some(d) => d,
        None => {
            _held = crate::budget::xml_guard(b)?;
            parsed = sluice_xml::parse_untrusted(b, &sluice_xml::Limits::default())
                .map_err(|e| fail(e.to_string()))?;
            &parsed
        }
    };
    let payload = match doc.soap_body() {
        Some(_) => doc.soap_body_first_child(),
        None => doc.root_element(),
    }
    .ok_or_else(|| fail("the message has no payload element".to_owned()))?;
    let text = xml_to_json(payload).map_err(fail)?;
    // WSO2 adds the charset it wrote in.
    let ct = if ct.to_ascii_lowercase().contains("charset") {
        ct.to_owned()
    } else {
        format!("{ct}; charset=UTF-8")
    };
    let ct = http::HeaderValue::from_str(&ct)
        .map_err(|_| fail(format!("'{ct}' is not a valid Content-Type")))?;
    Ok(Some((text.into(), ct)))
}

/// Whether body bytes are XML rather than JSON: the first byte after a BOM and white space is `<`
/// (JSON never starts so).
pub(crate) fn looks_like_xml(b: &[u8]) -> bool {
    let start = b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(b);
    start.trim_ascii_start().first() == Some(&b'<')
}

/// Whether a message's Content-Type says JSON.
pub fn is_json_headers(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json_type)
}

/// Whether a Content-Type is JSON.
pub fn is_json_type(ct: &str) -> bool {
    // Header values are ASCII: their media type is found and trimmed byte by byte (`split` and
    // `trim` cost a few hundred instructions on every message that leaves a sequence).
    let m = if ct.is_ascii() {
        let b = ct.as_bytes();
        b[..b.iter().position(|&c| c == b';').unwrap_or(b.len())].trim_ascii()
    } else {
        ct.split(';').next().unwrap_or("").trim().as_bytes()
    };
    m.eq_ignore_ascii_case(b"application/json")
        || (m.len() > 5 && m[m.len() - 5..].eq_ignore_ascii_case(b"+json"))
}

/// How XML is written as JSON: WSO2's `synapse.commons.json.*` output settings that MI's
/// `jsontransform` mediator can set for one conversion ([`Opts::default`]: MI's defaults).
#[derive(Debug, Clone)]
pub struct Opts {
    /// `output.autoPrimitive`: numbers, `true`, `false` and `null` as such (else all text is a
    /// string).
    pub auto_primitive: bool,
    /// `output.disableAutoPrimitive.regex`: text it matches whole stays a string.
    pub keep_string: Option<regex::Regex>,
    /// `enableXmlNullForEmptyElement`: an empty element is `null` (else `""`).
    pub empty_null: bool,
    /// `enableXmlNilReadWrite`: an element with `xsi:nil="true"` is `null`, the attribute dropped.
    pub nil: bool,
    /// `buildValidNCNames`: `_JsonReader_<code>_` in a name is that character.
    pub valid_ncnames: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            auto_primitive: true,
            keep_string: None,
            empty_null: true,
            nil: false,
            valid_ncnames: false,
        }
    }
}

/// The JSON text for `e` (see the module's mapping).
pub fn xml_to_json(e: Node<'_>) -> Result<String, String> {
    xml_to_json_with(e, &Opts::default())
}

/// [`xml_to_json`] with other output settings.
pub fn xml_to_json_with(e: Node<'_>, o: &Opts) -> Result<String, String> {
    let mut out = String::new();
    match e.name() {
        "jsonObject" => value(e, o, &mut out)?,
        "jsonArray" => array_of(e, o, &mut out)?,
        name => {
            out.push('{');
            key_with(name, o, &mut out);
            value(e, o, &mut out)?;
            out.push('}');
        }
    }
    Ok(out)
}

/// A member's key: the element's name, with the JSON name JSON-to-XML renamed given back.
fn key(name: &str, out: &mut String) {
    out.push('"');
    if let Some(rest) = name.strip_prefix("_JsonReader_PS_") {
        out.push('$');
        out.push_str(rest);
    } else {
        out.push_str(name.strip_prefix("_JsonReader_PD_").unwrap_or(name));
    }
    out.push_str("\":");
}

/// [`key`], with `buildValidNCNames` decoding `_JsonReader_<code>_` back into its character.
fn key_with(name: &str, o: &Opts, out: &mut String) {
    if !o.valid_ncnames || !name.contains("_JsonReader_") {
        return key(name, out);
    }
    let mut decoded = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(k) = rest.find("_JsonReader_") {
        decoded.push_str(&rest[..k]);
        let after = &rest[k + 12..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let ch = (digits > 0 && after[digits..].starts_with('_'))
            .then(|| after[..digits].parse::<u32>().ok().and_then(char::from_u32))
            .flatten();
        match ch {
            Some(c) => {
                decoded.push(c);
                rest = &after[digits + 1..];
            }
            None => {
                decoded.push_str("_JsonReader_");
                rest = after;
            }
        }
    }
    decoded.push_str(rest);
    key(&decoded, out)
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
                if !t.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n')) {
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
fn value(e: Node<'_>, o: &Opts, out: &mut String) -> Result<(), String> {
    let (text, elements) = own_text(e)?;
    const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";
    let is_nil = |a: &Node<'_>| {
        a.name() == "nil"
            && matches!(a.namespace_uri(), Some(XSI) | None)
            && a.text_content() == "true"
    };
    if o.nil && e.attributes().any(|a| is_nil(&a)) {
        out.push_str("null");
        return Ok(());
    }
    let mut attrs = e.attributes().filter(|a| !(o.nil && is_nil(a))).peekable();
    let multiple = e
        .children()
        .any(|c| c.kind() == NodeKind::ProcessingInstruction && c.name() == "xml-multiple");
    if attrs.peek().is_none() && !elements && !multiple {
        match text {
            Some(t) => primitive_with(&t, o, out),
            None if o.empty_null => out.push_str("null"),
            None => out.push_str("\"\""),
        }
        return Ok(());
    }
    // An element holding only a wrapper JSON-to-XML made (an array inside an array) is its value.
    if attrs.peek().is_none() {
        let mut kids = e.child_elements();
        if let (Some(only), None) = (kids.next(), kids.next()) {
            match only.name() {
                "jsonArray" => return array_of(only, o, out),
                "jsonObject" => return value(only, o, out),
                _ => {}
            }
        }
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
        primitive_with(&t, o, out);
    }
    // Consecutive children of one name are an array. So is the name an `<?xml-multiple name?>`
    // instruction gives (written at once, `[]` when no such element follows), or the next
    // element after an `<?xml-multiple?>` without a name.
    let mut unnamed_pi = false;
    let mut c = e.first_child();
    while let Some(n) = c {
        let (name, array) = match n.kind() {
            NodeKind::ProcessingInstruction if n.name() == "xml-multiple" => {
                let named = n.text_content().trim().to_owned();
                if named.is_empty() {
                    unnamed_pi = true;
                    c = n.next_sibling();
                    continue;
                }
                sep(out);
                key_with(&named, o, out);
                out.push('[');
                c = group(n.next_sibling(), &named, o, out)?;
                out.push(']');
                continue;
            }
            NodeKind::Element => (n.name().to_owned(), std::mem::take(&mut unnamed_pi)),
            _ => {
                c = n.next_sibling();
                continue;
            }
        };
        sep(out);
        key_with(&name, o, out);
        // Known before the run is written: a `[` put in after it would move all it wrote, once
        // for every level of nested runs.
        let array = array || another_in_run(n, &name);
        if array {
            out.push('[');
        }
        c = group(Some(n), &name, o, out)?;
        if array {
            out.push(']');
        }
    }
    out.push('}');
    Ok(())
}

/// Whether the run of elements named `name` that element `n` begins (as [`group`] reads it) has
/// more than `n`.
fn another_in_run(n: Node<'_>, name: &str) -> bool {
    let mut c = n.next_sibling();
    while let Some(s) = c {
        match s.kind() {
            NodeKind::Element => return s.name() == name,
            NodeKind::ProcessingInstruction if s.name() == "xml-multiple" => return false,
            _ => {}
        }
        c = s.next_sibling();
    }
    false
}

/// The values of the consecutive elements named `name` from `c` on (whitespace and comments
/// between them do not break the run), comma-separated: where the run ends.
fn group<'a>(
    mut c: Option<Node<'a>>,
    name: &str,
    o: &Opts,
    out: &mut String,
) -> Result<Option<Node<'a>>, String> {
    let mut first = true;
    while let Some(n) = c {
        match n.kind() {
            NodeKind::Element if n.name() == name => {
                if !std::mem::take(&mut first) {
                    out.push(',');
                }
                value(n, o, out)?;
            }
            NodeKind::Element => break,
            // Another instruction starts its own array.
            NodeKind::ProcessingInstruction if n.name() == "xml-multiple" => break,
            _ => {}
        }
        c = n.next_sibling();
    }
    Ok(c)
}

/// A `jsonArray` element's children as a JSON array.
fn array_of(a: Node<'_>, o: &Opts, out: &mut String) -> Result<(), String> {
    out.push('[');
    for (k, c) in a.child_elements().enumerate() {
        if k > 0 {
            out.push(',');
        }
        value(c, o, out)?;
    }
    out.push(']');
    Ok(())
}

/// [`primitive`] under the settings: all text a string without auto-primitive, and text the
/// `disableAutoPrimitive` regex matches whole.
fn primitive_with(t: &str, o: &Opts, out: &mut String) {
    let keep = !o.auto_primitive
        || o.keep_string.as_ref().is_some_and(|r| {
            r.find(t)
                .is_some_and(|m| m.start() == 0 && m.end() == t.len())
        });
    if keep {
        string(t, out)
    } else {
        primitive(t, out)
    }
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
            // Java's BigDecimal takes an int exponent.
            (&rest[..k], i64::from(e.parse::<i32>().ok()?))
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

/// WSO2's mapping of a JSON value to XML (staxon, without processing instructions), as
/// payloadFactory arguments take it: an object's members become elements, an array under a name
/// repeats that element, `null` is an empty element; the outer object or array is not wrapped (a
/// top-level array's items are `jsonElement`s). A name starting with a digit gets
/// `_JsonReader_PD_` before it, one starting with `$` has it replaced by `_JsonReader_PS_`; a name
/// that is still not an XML name is refused (the JSON comes from the client: it must not make
/// markup), and so is XML past 64 MiB.
pub fn json_to_xml(v: &serde_json::Value) -> Result<String, String> {
    to_xml(v, false)
}

/// [`json_to_xml`] with an `<?xml-multiple name?>` instruction before each array's elements (empty
/// arrays too), as WSO2 builds a JSON message's XML form: written back as JSON ([`xml_to_json`]),
/// a one-element or empty array stays an array.
pub(crate) fn json_to_xml_marked(v: &serde_json::Value) -> Result<String, String> {
    to_xml(v, true)
}

fn to_xml(v: &serde_json::Value, pis: bool) -> Result<String, String> {
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
    fn element(n: &str, v: &Value, pis: bool, out: &mut String) -> Result<(), String> {
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
                    element("jsonElement", i, pis, out)?;
                }
                out.push_str(&format!("</jsonArray></{n}>"));
            }
            _ => {
                out.push('<');
                out.push_str(n);
                out.push('>');
                match v {
                    Value::Object(m) => members(m, pis, out)?,
                    other => scalar(other, out),
                }
                out.push_str("</");
                out.push_str(n);
                out.push('>');
            }
        }
        Ok(())
    }
    fn members(
        m: &serde_json::Map<String, Value>,
        pis: bool,
        out: &mut String,
    ) -> Result<(), String> {
        for (k, v) in m {
            let n = name(k)?;
            match v {
                Value::Array(items) => {
                    if pis {
                        out.push_str(&format!("<?xml-multiple {n}?>"));
                    }
                    for i in items {
                        element(&n, i, pis, out)?;
                    }
                }
                other => element(&n, other, pis, out)?,
            }
        }
        Ok(())
    }
    let mut out = String::new();
    match v {
        Value::Object(m) => members(m, pis, &mut out)?,
        Value::Array(items) => {
            for i in items {
                element("jsonElement", i, pis, &mut out)?;
            }
        }
        other => scalar(other, &mut out),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_expr::testing::Rng;

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
    fn json_goes_into_xml_as_wso2_maps_it_and_comes_back() {
        use serde_json::json;
        // Top-level object and array: no wrapper; names that cannot start an element renamed.
        let v = json!({"1st": "a<b", "$ref": 2, "k": [[1, 2], {"x": null}], "e": []});
        let xml = json_to_xml(&v).unwrap();
        assert_eq!(
            xml,
            "<_JsonReader_PD_1st>a&lt;b</_JsonReader_PD_1st><_JsonReader_PS_ref>2</_JsonReader_PS_ref>\
             <k><jsonArray><jsonElement>1</jsonElement><jsonElement>2</jsonElement></jsonArray></k>\
             <k><x/></k>"
        );
        // And back, as WSO2's writer gives it: names restored, the nested array unwrapped (the
        // empty array has no element to come back from).
        assert_eq!(
            json(&format!("<jsonObject>{xml}</jsonObject>")),
            r#"{"1st":"a<b","$ref":2,"k":[[1,2],{"x":null}]}"#
        );
        // Marked, as a JSON message's XML form: one-element and empty arrays stay arrays.
        let v = json!({"one": [1], "none": [], "o": {"k": [{"x": "y"}]}});
        let marked = json_to_xml_marked(&v).unwrap();
        assert_eq!(
            json(&format!("<jsonObject>{marked}</jsonObject>")),
            r#"{"one":[1],"none":[],"o":{"k":[{"x":"y"}]}}"#
        );
        // A name that is not an XML name is refused, never written as markup.
        for bad in ["a/></item><role>admin</role><item><b", "a b", "", "x\"y"] {
            let e = json_to_xml(&json!({ bad: null })).unwrap_err();
            assert!(e.contains("cannot be an XML element name"), "{e}");
        }
        assert_eq!(
            json_to_xml(&json!([55, "x"])).unwrap(),
            "<jsonElement>55</jsonElement><jsonElement>x</jsonElement>"
        );
    }

    #[test]
    fn xml_multiple_instructions_make_arrays() {
        // Named: written at once, so an array with nothing in it is [].
        assert_eq!(json("<r><?xml-multiple a?></r>"), r#"{"r":{"a":[]}}"#);
        assert_eq!(
            json("<r><?xml-multiple a?><a>1</a><b>2</b></r>"),
            r#"{"r":{"a":[1],"b":2}}"#
        );
        // Without a name: the next element.
        assert_eq!(
            json("<r><?xml-multiple?><b>2</b><c/></r>"),
            r#"{"r":{"b":[2],"c":null}}"#
        );
        // Comments and whitespace do not break a run of siblings; another name does.
        assert_eq!(
            json("<r><a>1</a> <!-- c --> <a>2</a><b/><a>3</a></r>"),
            r#"{"r":{"a":[1,2],"b":null,"a":3}}"#
        );
        // A no-break space is text, not indentation.
        assert_eq!(json("<r>\u{a0}</r>"), "{\"r\":\"\u{a0}\"}");
    }

    /// The mapping written the plain way, as the reference for `xml_to_json_writes_as_it_did`:
    /// each element's JSON is a string of its own, and an element's members are gathered (a
    /// run's values in one list) before any is written, so that a run is an array once it is seen
    /// to hold more than one value. Leaves (keys, strings, numbers, mixed text) are written by the
    /// module's own functions, which have tests of their own; what this checks is the structure.
    fn plain_xml_to_json(e: Node<'_>) -> Result<String, String> {
        Ok(match e.name() {
            "jsonObject" => plain_value(e)?,
            "jsonArray" => plain_array(e)?,
            name => format!("{{{}{}}}", written(|o| key(name, o)), plain_value(e)?),
        })
    }

    /// What `write` writes into an empty string.
    fn written(write: impl FnOnce(&mut String)) -> String {
        let mut s = String::new();
        write(&mut s);
        s
    }

    fn is_multiple(n: Node<'_>) -> bool {
        n.kind() == NodeKind::ProcessingInstruction && n.name() == "xml-multiple"
    }

    fn plain_array(a: Node<'_>) -> Result<String, String> {
        let items = a
            .child_elements()
            .map(plain_value)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(format!("[{}]", items.join(",")))
    }

    fn plain_value(e: Node<'_>) -> Result<String, String> {
        let (text, elements) = own_text(e)?;
        let attrs: Vec<Node<'_>> = e.attributes().collect();
        let kids: Vec<Node<'_>> = e.children().collect();
        if attrs.is_empty() && !elements && !kids.iter().any(|&k| is_multiple(k)) {
            return Ok(text.map_or_else(|| "null".to_owned(), |t| written(|o| primitive(&t, o))));
        }
        let only: Vec<Node<'_>> = e.child_elements().collect();
        if let ([], [only]) = (&attrs[..], &only[..]) {
            match only.name() {
                "jsonArray" => return plain_array(*only),
                "jsonObject" => return plain_value(*only),
                _ => {}
            }
        }
        // (key written with its colon, the values, whether an array however many there are)
        let mut members: Vec<(String, Vec<String>, bool)> = Vec::new();
        for a in attrs {
            let v = written(|o| string(&a.text_content(), o));
            members.push((format!("\"@{}\":", a.name()), vec![v], false));
        }
        if let Some(t) = text {
            members.push((
                written(|o| key("$", o)),
                vec![written(|o| primitive(&t, o))],
                false,
            ));
        }
        let mut unnamed_pi = false;
        let mut i = 0;
        while i < kids.len() {
            let n = kids[i];
            let (name, from, array) = if is_multiple(n) {
                let named = n.text_content().trim().to_owned();
                if named.is_empty() {
                    unnamed_pi = true;
                    i += 1;
                    continue;
                }
                (named, i + 1, true)
            } else if n.kind() == NodeKind::Element {
                (n.name().to_owned(), i, std::mem::take(&mut unnamed_pi))
            } else {
                i += 1;
                continue;
            };
            // The run: the elements of that name from `from` on, until another element or an
            // `<?xml-multiple?>`.
            let mut values = Vec::new();
            i = from;
            while let Some(&k) = kids.get(i) {
                if is_multiple(k) || (k.kind() == NodeKind::Element && k.name() != name) {
                    break;
                }
                if k.kind() == NodeKind::Element {
                    values.push(plain_value(k)?);
                }
                i += 1;
            }
            members.push((written(|o| key(&name, o)), values, array));
        }
        let members: Vec<String> = members
            .into_iter()
            .map(|(k, v, array)| match (array, &v[..]) {
                (false, [one]) => format!("{k}{one}"),
                _ => format!("{k}[{}]", v.join(",")),
            })
            .collect();
        Ok(format!("{{{}}}", members.join(",")))
    }

    /// Content for a generated element `depth` deep: runs of one name (of one, two or more,
    /// nested or not), runs broken by whitespace, comments or another name, `<?xml-multiple?>`
    /// instructions (named, for a name that follows or not, and unnamed), `jsonArray` and
    /// `jsonObject` wrappers, attributes, text of every kind, now and then text beside elements
    /// (refused).
    fn gen_content(r: &mut Rng, s: &mut String, depth: usize) {
        const NAMES: &[&str] = &["a", "b", "c", "_JsonReader_PD_1", "jsonElement"];
        const TEXT: &[&str] = &[
            "1",
            "-2.50",
            "1e3",
            "007",
            "true",
            "null",
            "x",
            "a&amp;b",
            "\"q\"",
            " ",
            "\t\\",
            "<![CDATA[<c>]]>",
            "",
        ];
        const GAP: &[&str] = &["", "", "\n  ", " ", "<!-- c -->", "<?other x?>"];
        if depth >= 6 || r.below(4) == 0 {
            s.push_str(r.pick(TEXT));
            return;
        }
        if r.below(300) == 0 {
            s.push_str("mixed");
        }
        for _ in 0..r.below(5) {
            s.push_str(r.pick(GAP));
            match r.below(10) {
                0 => {
                    let name = r.pick(NAMES);
                    s.push_str(&format!("<?xml-multiple {name}?>"));
                }
                1 => s.push_str("<?xml-multiple?>"),
                2 if depth > 0 => {
                    let w = r.pick(&["jsonArray", "jsonObject"]);
                    s.push_str(&format!("<{w}>"));
                    gen_content(r, s, depth + 1);
                    s.push_str(&format!("</{w}>"));
                }
                _ => {
                    // A run of one name.
                    let name = r.pick(NAMES);
                    for _ in 0..1 + r.below(3) {
                        s.push_str(r.pick(GAP));
                        s.push('<');
                        s.push_str(name);
                        if r.below(5) == 0 {
                            s.push_str(" id=\"7\" m:k='x' xmlns:m='urn:m'");
                        }
                        if r.below(6) == 0 {
                            s.push_str("/>");
                            continue;
                        }
                        s.push('>');
                        gen_content(r, s, depth + 1);
                        s.push_str(&format!("</{name}>"));
                    }
                }
            }
        }
        s.push_str(r.pick(GAP));
    }

    /// The conversion, on generated nested documents (and their roots unwrapped when they are
    /// JSON-to-XML's), writes what the plain reference writes, and refuses what it refuses.
    #[test]
    fn xml_to_json_writes_as_it_did() {
        let mut r = Rng(0x1f83_d9ab_fb41_bd6b);
        let (mut written, mut arrays, mut refused) = (0, 0, 0);
        for k in 0..3000 {
            let root = ["r", "jsonObject", "jsonArray"][k % 3];
            let mut doc = format!("<{root}>");
            gen_content(&mut r, &mut doc, 0);
            doc.push_str(&format!("</{root}>"));
            let d = sluice_xml::Document::parse(doc.as_bytes())
                .unwrap_or_else(|e| panic!("{doc}: {e}"));
            let e = d.root_element().unwrap();
            let got = xml_to_json(e);
            assert_eq!(got, plain_xml_to_json(e), "{doc}");
            match got {
                Ok(j) => {
                    written += 1;
                    arrays += usize::from(j.contains("[{") || j.contains(":["));
                    serde_json::from_str::<serde_json::Value>(&j)
                        .unwrap_or_else(|e| panic!("{doc}\n{j}: {e}"));
                }
                Err(_) => refused += 1,
            }
        }
        eprintln!("{written} written ({arrays} with an array), {refused} refused");
        assert!(
            written >= 2000 && arrays >= 1000 && refused >= 20,
            "{written} {arrays} {refused}"
        );
    }

    /// Repeated elements nested as deep as libxml2 reads (each level a run of two), around a
    /// payload: written as the plain reference writes it (which copies the payload once for every
    /// level, as the conversion did when it inserted each `[` after the fact).
    #[test]
    fn deeply_nested_runs() {
        let (depth, payload) = (250, 2000);
        let doc = nested_runs(depth, payload, 0);
        let d = sluice_xml::Document::parse(doc.as_bytes()).unwrap();
        let got = xml_to_json(d.root_element().unwrap()).unwrap();
        assert_eq!(got, plain_xml_to_json(d.root_element().unwrap()).unwrap());
        // (Deeper than serde_json reads: spelled out.)
        let inner: Vec<String> = (0..payload)
            .map(|k| format!(r#"{{"q":{k},"s":"text {k}"}}"#))
            .collect();
        let want = format!(
            r#"{{"r":{}{{"p":[{}]}}{}}}"#,
            r#"{"a":["#.repeat(depth),
            inner.join(","),
            r#",{"z":null}]}"#.repeat(depth)
        );
        assert!(got == want, "{got}");
    }

    /// `depth` levels of a run of two `a`s (the first holding the next level), around `payload`
    /// `p`s, each with a text `long` bytes longer than `text {k}`.
    fn nested_runs(depth: usize, payload: usize, long: usize) -> String {
        let mut doc = String::from("<r>");
        doc.push_str(&"<a>".repeat(depth));
        let pad = "x".repeat(long);
        for k in 0..payload {
            doc.push_str(&format!("<p><q>{k}</q><s>text {k}{pad}</s></p>"));
        }
        doc.push_str(&"</a><a><z/></a>".repeat(depth));
        doc.push_str("</r>");
        doc
    }

    /// How long nested runs take to convert (a measurement to read, not an assertion; run with
    /// `--ignored --nocapture`).
    #[test]
    #[ignore]
    fn nested_runs_timings() {
        for (depth, payload, long) in [
            (50, 20_000, 0),
            (250, 20_000, 0),
            (250, 100_000, 0),
            (50, 1_000, 10_000),
            (250, 1_000, 10_000),
        ] {
            let doc = nested_runs(depth, payload, long);
            let d = sluice_xml::Document::parse(doc.as_bytes()).unwrap();
            let e = d.root_element().unwrap();
            let t = std::time::Instant::now();
            let n = xml_to_json(e).unwrap().len();
            let new = t.elapsed();
            let t = std::time::Instant::now();
            plain_xml_to_json(e).unwrap();
            let plain = t.elapsed();
            eprintln!(
                "depth {depth}, {n} bytes of JSON: {new:?} (the plain reference, which copies \
                 the payload into every level above it: {plain:?})"
            );
        }
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
            ("12e9223372036854775807", None),
            ("1e2147483647", Some("1E+2147483647")),
        ] {
            assert_eq!(big_decimal(t).as_deref(), want, "{t}");
        }
    }
}
