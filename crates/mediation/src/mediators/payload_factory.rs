//! `<payloadFactory>` (media-type xml, json or text): the format, cut at its `$n` placeholders at
//! load, filled with the arguments' values; the result replaces the payload (or the whole message
//! when the format is a SOAP Envelope).

use crate::fault;
use crate::mediators::prelude::*;
use sluice_config::PayloadMedia;
use sluice_xml::Fragment;

/// `payloadFactory` (media-type xml, json or text): the format cut at its `$n` placeholders at load.
#[derive(Debug)]
pub struct PayloadPlan {
    pub segments: Vec<Segment>,
    pub args: Vec<PayloadArg>,
    /// The format's root is a SOAP Envelope: the result replaces the whole message.
    pub envelope: bool,
    /// What the format is and the result becomes (`media-type`).
    pub media: cfg::PayloadMedia,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    /// Zero-based argument index.
    Arg(usize),
}

#[derive(Debug)]
pub enum PayloadArg {
    /// A literal, already escaped (or kept as is when it is XML or JSON), as Synapse prepares it.
    Ready(String),
    /// `literal="true"`: the value goes in as a string, never as XML or JSON.
    Expr { expr: Expr, literal: bool },
}

pub(crate) fn compile(c: &mut Compiler, p: &cfg::PayloadFactory, el: &str) -> Option<Step> {
    Some(Step::PayloadFactory(c.payload(p, el)?))
}

impl Compiler<'_> {
    pub(crate) fn payload(&mut self, p: &cfg::PayloadFactory, el: &str) -> Option<PayloadPlan> {
        let format = match &p.format {
            // As Synapse builds the format element: white space alone between tags is no text.
            cfg::PayloadFormat::Inline(t) if p.media == cfg::PayloadMedia::Xml => {
                between_tags_dropped(t)
            }
            cfg::PayloadFormat::Inline(t) => t.clone(),
            cfg::PayloadFormat::Key(k) => self.keyed_text(k, &p.format_loc, el)?.0,
        };
        let segments = payload_segments(&format, p.args.len());
        if let Some(n) = payload_max_arg(&format) {
            if n > p.args.len() {
                self.report(
                    Severity::Warning,
                    &p.format_loc,
                    el,
                    format!("the format uses ${n} but only {} argument(s) are given; Synapse stops substituting at the first missing one", p.args.len()),
                );
            }
        }
        // JSON and text formats are kept as text (WSO2 checks neither the format nor the result);
        // static values are XML-escaped as WSO2 does for every format.
        let literal: Option<fn(&str, bool) -> String> = match p.media {
            cfg::PayloadMedia::Json => Some(json_literal_arg),
            cfg::PayloadMedia::Text => Some(|s, _| escape_xml(s)),
            cfg::PayloadMedia::Xml => None,
        };
        if let Some(literal) = literal {
            return Some(PayloadPlan {
                segments,
                args: self.payload_args(p, el, literal)?,
                envelope: false,
                media: p.media,
            });
        }
        // The format must be well-formed XML whatever the arguments are.
        let probe: String = segments
            .iter()
            .map(|s| match s {
                Segment::Text(t) => t.as_str(),
                Segment::Arg(_) => "",
            })
            .collect();
        let envelope = match sluice_xml::Fragment::parse(&probe) {
            Ok(f) => {
                let first = f.elements().next();
                first.is_some_and(|e| {
                    e.name() == "Envelope"
                        && matches!(
                            e.namespace_uri(),
                            Some(fault::SOAP11_ENV) | Some(fault::SOAP12_ENV)
                        )
                })
            }
            Err(e) => {
                self.report(
                    Severity::Error,
                    &p.format_loc,
                    el,
                    format!("the payloadFactory format is not well-formed XML: {e}"),
                );
                return None;
            }
        };
        let xml_literal = |s: &str, literal: bool| {
            if literal {
                escape_xml(s)
            } else {
                prepare_payload_arg(s.to_owned())
            }
        };
        Some(PayloadPlan {
            segments,
            args: self.payload_args(p, el, xml_literal)?,
            envelope,
            media: p.media,
        })
    }

    /// A payloadFactory's arguments: values prepared at load by `literal_value` (from the text and
    /// `literal="true"`), expressions, and (`evaluator="json"`) JsonPaths.
    pub(crate) fn payload_args(
        &mut self,
        p: &cfg::PayloadFactory,
        el: &str,
        literal_value: impl Fn(&str, bool) -> String,
    ) -> Option<Vec<PayloadArg>> {
        let mut args = Vec::with_capacity(p.args.len());
        for a in &p.args {
            let value = match &a.value {
                cfg::ValueSrc::Expr(e) if a.json_path => self
                    .compiled(Expr::json(&e.text), &e.loc, el)
                    .map(Value::Expr),
                v => self.value(v, el),
            };
            args.push(match value? {
                Value::Literal(s) => PayloadArg::Ready(literal_value(&s, a.literal)),
                Value::Expr(expr) => PayloadArg::Expr {
                    expr,
                    literal: a.literal,
                },
            });
        }
        Some(args)
    }
}

/// `xml` without the runs of white space that stand alone between a `>` and a `<` (the
/// indentation of an inline format: Synapse's payloadFactory answers without it).
fn between_tags_dropped(xml: &str) -> String {
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml.trim();
    while let Some(gt) = rest.find('>') {
        out.push_str(&rest[..=gt]);
        rest = &rest[gt + 1..];
        let text = rest.trim_start_matches([' ', '\t', '\r', '\n']);
        if text.starts_with('<') {
            rest = text;
        }
    }
    out.push_str(rest);
    out
}

/// Cuts a payloadFactory format at `$n` (one or more digits, 1-based). Like Synapse, substitution
/// stops at the first placeholder without an argument: it and the rest stay as written.
pub(crate) fn payload_segments(format: &str, nargs: usize) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut text = String::new();
    let b = format.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            let n: usize = format[start..end].parse().unwrap_or(usize::MAX);
            if n == 0 || n > nargs {
                text.push_str(&format[i..]);
                break;
            }
            if !text.is_empty() {
                out.push(Segment::Text(std::mem::take(&mut text)));
            }
            out.push(Segment::Arg(n - 1));
            i = end;
            continue;
        }
        let ch = format[i..].chars().next().expect("in bounds");
        text.push(ch);
        i += ch.len_utf8();
    }
    if !text.is_empty() {
        out.push(Segment::Text(text));
    }
    out
}

fn payload_max_arg(format: &str) -> Option<usize> {
    let b = format.as_bytes();
    let mut max = None;
    for (i, _) in format.match_indices('$') {
        let digits: String = b[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .map(|&c| c as char)
            .collect();
        if let Ok(n) = digits.parse::<usize>() {
            max = max.max(Some(n));
        }
    }
    max
}

impl Mediator for PayloadPlan {
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        payload_factory(self, cx.msg, cx.doc)?;
        Ok(None)
    }
}

/// Synapse's preparation of a payloadFactory argument for an XML format: a value that is XML
/// (ends with '>', parses) goes in as is; anything else is XML-escaped (`escapeXml10`).
pub fn prepare_payload_arg(v: String) -> String {
    if is_xml_value(&v) {
        return v;
    }
    escape_xml(&v)
}

/// Whether a value is XML to WSO2's payloadFactory (starts with `<`, ends with `>`, parses).
fn is_xml_value(v: &str) -> bool {
    let t = v.trim();
    t.len() >= 4 && t.starts_with('<') && t.ends_with('>') && Fragment::parse(t).is_ok()
}

/// `v` as a JSON string's content, as WSO2's payloadFactory escapes it: backslash, quote, and
/// `\b \f \n \r \t` (no other control character).
fn escape_json(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 8);
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            _ => out.push(c),
        }
    }
    out
}

/// A text value for a JSON format: as JSON when it starts with `{` or `[` (and is not
/// `literal`), else escaped as a string's content (the format's quotes stay as written).
fn json_text_arg(v: String, literal: bool) -> String {
    let t = v.trim_start();
    if !literal && (t.starts_with('{') || t.starts_with('[')) {
        v
    } else {
        escape_json(&v)
    }
}

/// A literal `value` argument for a JSON format, prepared at load as WSO2 does: XML-escaped first
/// (WSO2 passes every static value through `escapeXml10`, for JSON formats too), then as any text.
pub(crate) fn json_literal_arg(v: &str, literal: bool) -> String {
    json_text_arg(escape_xml(v), literal)
}

/// An expression argument's value as it goes into the format: for JSON formats, a JsonPath's
/// objects, arrays, numbers, booleans and null as JSON and its strings escaped; for XML formats,
/// a JsonPath's objects and arrays as XML elements (WSO2's JSON to XML mapping), anything else
/// escaped unless it is XML.
fn payload_arg_value(
    expr: &Expr,
    literal: bool,
    media: PayloadMedia,
    view: &View<'_>,
) -> Result<String, Error> {
    let json_format = media == PayloadMedia::Json;
    if let Expr::Json(_) = expr {
        let (values, definite) = expr.json_values(view).map_err(expr_error)?;
        let text = || sluice_expr::json_string_value(&values, definite).map_err(json_xml_error);
        // Text goes in as it is.
        if media == PayloadMedia::Text {
            return text();
        }
        let one = if definite {
            values.first().map(|v| &**v)
        } else {
            None
        };
        return match (json_format, literal, one) {
            (true, true, _) => Ok(escape_json(&text()?)),
            (true, false, Some(serde_json::Value::String(s))) => {
                Ok(json_text_arg(s.clone(), false))
            }
            (true, false, _) => text(),
            (false, true, _) | (false, false, Some(serde_json::Value::String(_))) => {
                Ok(escape_xml(&text()?))
            }
            (false, false, Some(v)) if !(v.is_object() || v.is_array()) => text(),
            (false, false, Some(v)) => crate::json::json_to_xml(v).map_err(json_xml_error),
            (false, false, None) if definite => Ok(String::new()),
            (false, false, None) => {
                let all =
                    serde_json::Value::Array(values.into_iter().map(Cow::into_owned).collect());
                crate::json::json_to_xml(&all).map_err(json_xml_error)
            }
        };
    }
    if media == PayloadMedia::Text {
        return expr
            .eval_string(view)
            .map(Cow::into_owned)
            .map_err(expr_error);
    }
    let v = expr
        .eval_xml_aware(view)
        .map(Cow::into_owned)
        .map_err(expr_error)?;
    if !json_format {
        return Ok(if literal {
            escape_xml(&v)
        } else {
            prepare_payload_arg(v)
        });
    }
    if !literal && is_xml_value(&v) {
        // As WSO2 does: the XML under a `jsonObject`, written as JSON (`<name>x</name>` is
        // `{"name":"x"}`).
        let wrapped = format!("<jsonObject>{}</jsonObject>", v.trim());
        let bad = |m: String| {
            Error::new(
                ErrorKind::Mediation,
                format!("payloadFactory: the XML argument as JSON: {m}"),
            )
        };
        let d = sluice_xml::Document::parse(wrapped.as_bytes()).map_err(|e| bad(e.to_string()))?;
        let root = d
            .root_element()
            .ok_or_else(|| bad("no element".to_owned()))?;
        return crate::json::xml_to_json(root).map_err(bad);
    }
    Ok(json_text_arg(v, literal))
}

fn json_xml_error(m: String) -> Error {
    Error::new(
        ErrorKind::BadRequest,
        format!("payloadFactory argument: {m}"),
    )
}

fn payload_factory(p: &PayloadPlan, msg: &mut Message, doc: &mut DocCache) -> Result<(), Error> {
    let what = "payloadFactory";
    let mut values = Vec::with_capacity(p.args.len());
    for a in &p.args {
        values.push(match a {
            PayloadArg::Ready(s) => Cow::Borrowed(s.as_str()),
            PayloadArg::Expr { expr, literal } => Cow::Owned(payload_arg_value(
                expr,
                *literal,
                p.media,
                &View { msg, doc },
            )?),
        });
    }
    let mut text = String::new();
    for s in &p.segments {
        match s {
            Segment::Text(t) => text.push_str(t),
            Segment::Arg(i) => text.push_str(&values[*i]),
        }
    }
    let made = match p.media {
        // As WSO2 does: the JSON trimmed and not checked; the message is JSON from here.
        PayloadMedia::Json => Some(("application/json", text.trim().to_owned())),
        // Plain text, as it came out.
        PayloadMedia::Text => Some(("text/plain", std::mem::take(&mut text))),
        PayloadMedia::Xml => None,
    };
    if let Some((media, body)) = made {
        crate::exec::made_body(msg, media, body.into());
        *doc = DocCache::new();
        return Ok(());
    }
    let was_json = crate::json::is_json_headers(&msg.headers);
    let invalid = |e: sluice_xml::XmlError| {
        Error::new(
            ErrorKind::Mediation,
            format!("{what}: unable to create a valid XML payload: {e}"),
        )
    };
    if p.envelope {
        let d = sluice_xml::Document::parse(text.trim().as_bytes()).map_err(invalid)?;
        if was_json {
            json_becomes_xml(msg);
        }
        return put_doc(msg, doc, d, what);
    }
    let frag = Fragment::parse(&text).map_err(invalid)?;
    if was_json {
        json_becomes_xml(msg);
    }
    let mut d = match &msg.body {
        // A JSON body has no XML to put the payload in: it is a new message.
        _ if was_json => new_message_doc(msg, &frag)?,
        Body::Empty => new_message_doc(msg, &frag)?,
        _ => take_doc(msg, doc)?,
    };
    d.replace_payload(&frag).map_err(|e| xml_error(what, e))?;
    put_doc(msg, doc, d, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_formats_indentation_is_dropped() {
        let f =
            "\n  <m:a xmlns:m=\"urn:m\">\n    <m:b> $1 </m:b>\n    <m:c>x\n y</m:c>\n  </m:a>\n";
        assert_eq!(
            between_tags_dropped(f),
            "<m:a xmlns:m=\"urn:m\"><m:b> $1 </m:b><m:c>x\n y</m:c></m:a>"
        );
    }

    #[test]
    fn text_goes_into_json_formats_as_wso2_escapes_it() {
        assert_eq!(
            escape_json("a\\b \"q\" \n\r\t\u{8}\u{c}\u{1}"),
            "a\\\\b \\\"q\\\" \\n\\r\\t\\b\\f\u{1}"
        );
        // Static values: XML-escaped first (WSO2 does it for JSON formats too); JSON kept.
        assert_eq!(
            json_literal_arg("a&b \"c\"", false),
            "a&amp;b &quot;c&quot;"
        );
        assert_eq!(json_literal_arg("{\"a\":1}", false), "{&quot;a&quot;:1}");
        assert_eq!(json_literal_arg("[1,2]", false), "[1,2]");
        assert_eq!(json_literal_arg("[1,2]", true), "[1,2]");
        assert_eq!(json_text_arg("[\"x\"]".to_owned(), true), "[\\\"x\\\"]");
    }

    #[test]
    fn payload_arguments_are_escaped_unless_xml() {
        assert_eq!(
            prepare_payload_arg("a<b & 'c' \"d\"".into()),
            "a&lt;b &amp; &apos;c&apos; &quot;d&quot;"
        );
        assert_eq!(prepare_payload_arg("<x>1</x>".into()), "<x>1</x>");
        assert_eq!(prepare_payload_arg("<x>".into()), "&lt;x&gt;");
        assert_eq!(prepare_payload_arg("<a/>".into()), "<a/>");
    }

    #[test]
    fn payload_formats_are_cut_at_placeholders() {
        use Segment::*;
        assert_eq!(
            payload_segments("<a>$1</a><b x=\"$2\">$10</b>", 10),
            vec![
                Text("<a>".into()),
                Arg(0),
                Text("</a><b x=\"".into()),
                Arg(1),
                Text("\">".into()),
                Arg(9),
                Text("</b>".into())
            ]
        );
        // Substitution stops at the first missing argument, like Synapse's.
        assert_eq!(
            payload_segments("<a>$1 $3 $1</a>", 1),
            vec![Text("<a>".into()), Arg(0), Text(" $3 $1</a>".into())]
        );
        assert_eq!(
            payload_segments("<a>$ $x</a>", 0),
            vec![Text("<a>$ $x</a>".into())]
        );
        assert_eq!(payload_max_arg("$2 $12 $"), Some(12));
    }
}
