//! SOAP 1.1 / SOAP 1.2 / POX fault messages, built by `makefault` and for errors no fault sequence answered.

use bytes::Bytes;
use sluice_config::FaultVersion;

pub const SOAP11_ENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";
pub const SOAP12_ENV: &str = "http://www.w3.org/2003/05/soap-envelope";

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
    pub reason: &'a str,
    pub role: Option<&'a str>,
    pub node: Option<&'a str>,
    /// Text (escaped here) or XML (inserted as is).
    pub detail: Option<Detail<'a>>,
}

#[derive(Clone, Debug)]
pub enum Detail<'a> {
    Text(&'a str),
    Xml(&'a str),
}

fn push_code(out: &mut String, env_ns: &str, code: (&str, &str), tag: &str) {
    let (ns, local) = code;
    // A code made per message (makefault's expression) may hold anything.
    if ns == env_ns {
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

pub fn build(version: FaultVersion, f: &FaultParts) -> Bytes {
    let mut out = String::with_capacity(320 + f.reason.len());
    match version {
        FaultVersion::Soap11 => {
            out.push_str("<soapenv:Envelope xmlns:soapenv=\"");
            out.push_str(SOAP11_ENV);
            out.push_str("\"><soapenv:Body><soapenv:Fault>");
            push_code(
                &mut out,
                SOAP11_ENV,
                f.code.unwrap_or((SOAP11_ENV, "Server")),
                "faultcode",
            );
            out.push_str("<faultstring>");
            escape(f.reason, &mut out);
            out.push_str("</faultstring>");
            if let Some(r) = f.role {
                out.push_str("<faultactor>");
                escape(r, &mut out);
                out.push_str("</faultactor>");
            }
            if let Some(d) = &f.detail {
                out.push_str("<detail>");
                push_detail(&mut out, d);
                out.push_str("</detail>");
            }
            out.push_str("</soapenv:Fault></soapenv:Body></soapenv:Envelope>");
        }
        FaultVersion::Soap12 => {
            out.push_str("<soapenv:Envelope xmlns:soapenv=\"");
            out.push_str(SOAP12_ENV);
            out.push_str("\"><soapenv:Body><soapenv:Fault><soapenv:Code>");
            push_code(
                &mut out,
                SOAP12_ENV,
                f.code.unwrap_or((SOAP12_ENV, "Receiver")),
                "soapenv:Value",
            );
            out.push_str("</soapenv:Code><soapenv:Reason><soapenv:Text xml:lang=\"en\">");
            escape(f.reason, &mut out);
            out.push_str("</soapenv:Text></soapenv:Reason>");
            if let Some(n) = f.node {
                out.push_str("<soapenv:Node>");
                escape(n, &mut out);
                out.push_str("</soapenv:Node>");
            }
            if let Some(r) = f.role {
                out.push_str("<soapenv:Role>");
                escape(r, &mut out);
                out.push_str("</soapenv:Role>");
            }
            if let Some(d) = &f.detail {
                out.push_str("<soapenv:Detail>");
                push_detail(&mut out, d);
                out.push_str("</soapenv:Detail>");
            }
            out.push_str("</soapenv:Fault></soapenv:Body></soapenv:Envelope>");
        }
        FaultVersion::Pox => {
            out.push_str("<Exception>");
            escape(f.reason, &mut out);
            if let Some(d) = &f.detail {
                out.push_str("<detail>");
                push_detail(&mut out, d);
                out.push_str("</detail>");
            }
            out.push_str("</Exception>");
        }
    }
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
