//! SOAP 1.1 / SOAP 1.2 / POX fault messages, built by `makefault` and for errors no fault sequence answered.

use bytes::Bytes;
use sluice_config::FaultVersion;

pub const SOAP11_ENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";
pub const SOAP12_ENV: &str = "http://www.w3.org/2003/05/soap-envelope";

/// The Header a fault is built with ([`FaultParts::header`]); makefault puts the message's
/// header blocks in its place.
pub const EMPTY_HEADER: &str = "<soapenv:Header/>";

pub const SOAP11_CONTENT_TYPE: &str = "text/xml; charset=UTF-8";
pub const SOAP12_CONTENT_TYPE: &str = "application/soap+xml; charset=UTF-8";
pub const POX_CONTENT_TYPE: &str = "application/xml; charset=UTF-8";

pub fn content_type(v: FaultVersion) -> &'static str {
    match v {
        FaultVersion::Soap11 => SOAP11_CONTENT_TYPE,
        FaultVersion::Soap12 => SOAP12_CONTENT_TYPE,
        FaultVersion::Pox => POX_CONTENT_TYPE,
    }
}

/// Escapes text for element content and attribute values.
pub fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct FaultParts<'a> {
    /// (namespace, local name); `None` gives Server / Receiver.
    pub code: Option<(&'a str, &'a str)>,
    /// The prefix the configuration wrote the code with (`tns:Receiver`): kept and declared on
    /// the code element, as Synapse does; else `soapenv` for the envelope's namespace, `c` for
    /// another.
    pub code_prefix: Option<&'a str>,
    pub reason: &'a str,
    pub role: Option<&'a str>,
    pub node: Option<&'a str>,
    /// Text (escaped here) or XML (inserted as is).
    pub detail: Option<Detail<'a>>,
    /// An empty SOAP Header before the Body, as Synapse's makefault writes one (Sluice's own
    /// faults have none).
    pub header: bool,
}

#[derive(Clone, Debug)]
pub enum Detail<'a> {
    Text(&'a str),
    Xml(&'a str),
}

fn push_code(out: &mut String, env_ns: &str, code: (&str, &str), prefix: Option<&str>, tag: &str) {
    let (ns, local) = code;
    // A code made per message (makefault's expression) may hold anything.
    if let Some(p) = prefix {
        out.push_str(&format!("<{tag} xmlns:{p}=\""));
        escape(ns, out);
        out.push_str(&format!("\">{p}:"));
    } else if ns == env_ns {
        out.push_str(&format!("<{tag}>soapenv:"));
    } else {
        out.push_str(&format!("<{tag} xmlns:c=\""));
        escape(ns, out);
        out.push_str("\">c:");
    }
    escape(local, out);
    out.push_str(&format!("</{tag}>"));
}

fn push_detail(out: &mut String, d: &Detail) {
    match d {
        Detail::Text(t) => escape(t, out),
        Detail::Xml(x) => out.push_str(x),
    }
}

/// `<tag>` around `text`, escaped; nothing without a text.
fn text_element(out: &mut String, tag: &str, text: Option<&str>) {
    if let Some(t) = text {
        element(out, tag, |out| escape(t, out));
    }
}

/// `<tag>` around the detail; nothing without one.
fn detail_element(out: &mut String, tag: &str, detail: Option<&Detail>) {
    if let Some(d) = detail {
        element(out, tag, |out| push_detail(out, d));
    }
}

/// `<tag>`, what `content` writes, `</tag>`.
fn element(out: &mut String, tag: &str, content: impl FnOnce(&mut String)) {
    out.push('<');
    out.push_str(tag);
    out.push('>');
    content(out);
    out.push_str("</");
    out.push_str(tag);
    out.push('>');
}

pub fn build(version: FaultVersion, f: &FaultParts) -> Bytes {
    let mut out = String::with_capacity(320 + f.reason.len());
    let ns = match version {
        FaultVersion::Soap11 => SOAP11_ENV,
        FaultVersion::Soap12 => SOAP12_ENV,
        FaultVersion::Pox => {
            out.push_str("<Exception>");
            escape(f.reason, &mut out);
            detail_element(&mut out, "detail", f.detail.as_ref());
            out.push_str("</Exception>");
            return Bytes::from(out);
        }
    };
    out.push_str("<soapenv:Envelope xmlns:soapenv=\"");
    out.push_str(ns);
    out.push_str("\">");
    if f.header {
        out.push_str(EMPTY_HEADER);
    }
    out.push_str("<soapenv:Body><soapenv:Fault>");
    if version == FaultVersion::Soap11 {
        let code = f.code.unwrap_or((ns, "Server"));
        push_code(&mut out, ns, code, f.code_prefix, "faultcode");
        text_element(&mut out, "faultstring", Some(f.reason));
        text_element(&mut out, "faultactor", f.role);
        detail_element(&mut out, "detail", f.detail.as_ref());
    } else {
        out.push_str("<soapenv:Code>");
        push_code(
            &mut out,
            ns,
            f.code.unwrap_or((ns, "Receiver")),
            f.code_prefix,
            "soapenv:Value",
        );
        out.push_str("</soapenv:Code><soapenv:Reason><soapenv:Text xml:lang=\"en\">");
        escape(f.reason, &mut out);
        out.push_str("</soapenv:Text></soapenv:Reason>");
        text_element(&mut out, "soapenv:Node", f.node);
        text_element(&mut out, "soapenv:Role", f.role);
        detail_element(&mut out, "soapenv:Detail", f.detail.as_ref());
    }
    out.push_str("</soapenv:Fault></soapenv:Body></soapenv:Envelope>");
    Bytes::from(out)
}

/// Maps a SOAP 1.1 code to its SOAP 1.2 equivalent and back, for faults answered in the request's version.
pub fn server_or_client(version: FaultVersion, client: bool) -> (&'static str, &'static str) {
    match (version, client) {
        (FaultVersion::Soap12, false) => (SOAP12_ENV, "Receiver"),
        (FaultVersion::Soap12, true) => (SOAP12_ENV, "Sender"),
        (_, false) => (SOAP11_ENV, "Server"),
        (_, true) => (SOAP11_ENV, "Client"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soap11_fault_shape() {
        let b = build(
            FaultVersion::Soap11,
            &FaultParts {
                code: Some((SOAP11_ENV, "Server")),
                code_prefix: None,
                reason: "Invalid <routing> header",
                ..Default::default()
            },
        );
        let s = std::str::from_utf8(&b).unwrap();
        assert!(s.contains("<faultcode>soapenv:Server</faultcode>"), "{s}");
        assert!(
            s.contains("<faultstring>Invalid &lt;routing&gt; header</faultstring>"),
            "{s}"
        );
    }

    #[test]
    fn soap12_and_foreign_code() {
        let b = build(
            FaultVersion::Soap12,
            &FaultParts {
                code: Some(("urn:x", "Oops")),
                code_prefix: None,
                reason: "r",
                detail: Some(Detail::Xml("<a/>")),
                ..Default::default()
            },
        );
        let s = std::str::from_utf8(&b).unwrap();
        assert!(
            s.contains("<soapenv:Value xmlns:c=\"urn:x\">c:Oops</soapenv:Value>"),
            "{s}"
        );
        assert!(s.contains("<soapenv:Detail><a/></soapenv:Detail>"), "{s}");
        assert!(s.starts_with(
            "<soapenv:Envelope xmlns:soapenv=\"http://www.w3.org/2003/05/soap-envelope\">"
        ));
    }
}
