//! `<makefault>`: the message becomes a SOAP 1.1 / 1.2 (or POX) fault; with `response="true"` it
//! is marked as a response. A SOAP fault has a Header, as Synapse's: the message's header blocks
//! move into it, else it is empty. So a SOAP fault reads the message's SOAP Header: only the
//! start of the message, up to the Header's end (or the Body's start when it has none), as a
//! `filter` on a header block does; the rest is never read.

use crate::fault::{self, Detail, FaultParts};
use crate::mediators::prelude::*;
use bytes::Bytes;
use sluice_config::FaultVersion;
use sluice_xml::{Document, Fragment};
use std::sync::LazyLock;

#[derive(Debug)]
pub struct FaultPlan {
    pub version: FaultVersion,
    pub response: bool,
    /// The whole fault when nothing in it is computed per message.
    pub fixed: Option<Bytes>,
    pub code: Option<CodePlan>,
    pub reason: Value,
    pub role: Option<String>,
    pub node: Option<String>,
    pub detail: Option<DetailPlan>,
}

#[derive(Debug)]
pub enum CodePlan {
    /// (namespace uri, local name, the configuration's prefix or "").
    QName(String, String, String),
    /// Per message: the local name of a code in the fault's envelope namespace. Synapse takes the
    /// whole string as the local name, so a value with a prefix (`soapenv:Server`) keeps it inside
    /// (`soapenv:soapenv:Server`), as there.
    Expr(Expr),
}

#[derive(Debug)]
pub enum DetailPlan {
    Value(Value),
    Xml(String),
}

impl FaultPlan {
    /// The fault with the parts computed for this message: the code's local name when the code is
    /// an expression, the reason, the detail when it is a value.
    pub fn render(&self, code: Option<&str>, reason: &str, detail: Option<&str>) -> Bytes {
        let detail = match (&self.detail, detail) {
            (Some(DetailPlan::Xml(x)), _) => Some(Detail::Xml(x)),
            (Some(DetailPlan::Value(_)), Some(d)) => Some(Detail::Text(d)),
            _ => None,
        };
        let env = match self.version {
            FaultVersion::Soap12 => fault::SOAP12_ENV,
            _ => fault::SOAP11_ENV,
        };
        let (code, code_prefix) = match (&self.code, code) {
            (Some(CodePlan::QName(ns, local, prefix)), _) => (
                Some((ns.as_str(), local.as_str())),
                Some(prefix.as_str()).filter(|p| !p.is_empty()),
            ),
            (Some(CodePlan::Expr(_)), Some(local)) => (Some((env, local)), None),
            _ => (None, None),
        };
        fault::build(
            self.version,
            &FaultParts {
                code,
                code_prefix,
                reason,
                role: self.role.as_deref(),
                node: self.node.as_deref(),
                detail,
                header: true,
            },
        )
    }
}

pub(crate) fn compile(c: &mut Compiler, f: &cfg::MakeFault, el: &str) -> Option<Step> {
    Some(Step::MakeFault(c.makefault(f, el)?))
}

impl Compiler<'_> {
    pub(crate) fn makefault(&mut self, f: &cfg::MakeFault, el: &str) -> Option<FaultPlan> {
        let reason = match &f.reason {
            Some(v) => self.value(v, el)?,
            None => Value::Literal(String::new()),
        };
        let detail = match &f.detail {
            None => None,
            Some(cfg::FaultDetail::Xml(x)) => Some(DetailPlan::Xml(x.clone())),
            Some(cfg::FaultDetail::Value(v)) => Some(DetailPlan::Value(self.value(v, el)?)),
        };
        let code = match &f.code {
            None => None,
            Some(cfg::FaultCode::QName(ns, local, prefix)) => {
                Some(CodePlan::QName(ns.clone(), local.clone(), prefix.clone()))
            }
            Some(cfg::FaultCode::Expr(e)) => Some(CodePlan::Expr(self.expr(e, el)?)),
        };
        let mut plan = FaultPlan {
            version: f.version,
            response: f.response,
            fixed: None,
            code,
            reason,
            role: f.role.clone(),
            node: f.node.clone(),
            detail,
        };
        let detail_literal = match &plan.detail {
            None | Some(DetailPlan::Xml(_)) => Some(None),
            Some(DetailPlan::Value(Value::Literal(d))) => Some(Some(d.as_str())),
            Some(DetailPlan::Value(Value::Expr(_))) => None,
        };
        let code_fixed = !matches!(plan.code, Some(CodePlan::Expr(_)));
        if let (Value::Literal(r), Some(d), true) = (&plan.reason, detail_literal, code_fixed) {
            plan.fixed = Some(plan.render(None, r, d));
        }
        Some(plan)
    }
}

impl Mediator for FaultPlan {
    /// The reason, a detail value and a code expression, whichever read the body.
    fn reads(&self, _json: bool) -> Reads {
        let mut need = match self.version {
            FaultVersion::Pox => BodyNeed::None,
            _ => BodyNeed::Headers,
        };
        need = need.max(self.reason.body_need());
        if let Some(DetailPlan::Value(v)) = &self.detail {
            need = need.max(v.body_need());
        }
        if let Some(CodePlan::Expr(e)) = &self.code {
            need = need.max(e.body_need());
        }
        Reads::of(need)
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        if self.version != FaultVersion::Pox && !HEADERS.iter().all(&mut *f) {
            return ByHead::No;
        }
        let detail = match &self.detail {
            Some(DetailPlan::Value(v)) => value_by_head(v, f),
            _ => true,
        };
        let code = match &self.code {
            Some(CodePlan::Expr(e)) => e.body_need() == BodyNeed::None || f(e),
            _ => true,
        };
        (value_by_head(&self.reason, f) && detail && code).into()
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        make_fault(self, cx.msg, cx.doc)?;
        // The body changed: a later XPath must see the fault, not the old parse.
        *cx.doc = DocCache::new();
        Ok(None)
    }
}

fn make_fault(f: &FaultPlan, msg: &mut Message, doc: &DocCache) -> Result<(), Error> {
    let body = match &f.fixed {
        Some(b) => b.clone(),
        None => {
            let reason = eval_value(&f.reason, msg, doc)?;
            let detail = match &f.detail {
                Some(DetailPlan::Value(v)) => Some(eval_value(v, msg, doc)?),
                _ => None,
            };
            let code = match &f.code {
                Some(CodePlan::Expr(e)) => Some(eval_expr(e, msg, doc)?),
                _ => None,
            };
            f.render(code.as_deref(), &reason, detail.as_deref())
        }
    };
    let body = match f.version {
        FaultVersion::Pox => body,
        _ => with_header_blocks(body, msg, doc)?,
    };
    if f.version == FaultVersion::Pox && msg.rest.is_rest() {
        // A REST message keeps its Content-Type (text/xml): MI writes the POX fault with the
        // formatter that Content-Type picks.
        msg.body = crate::message::Body::Bytes(body);
        msg.headers.remove(http::header::CONTENT_LENGTH);
    } else {
        msg.set_body(body, crate::fault::content_type(f.version));
    }
    msg.is_fault = true;
    msg.soap = f.version;
    if f.response {
        msg.props.set("RESPONSE", "true".to_owned());
    }
    Ok(())
}

/// `fault` with the message's SOAP header blocks in its Header, as Synapse moves them; as it is
/// when the message has none (or is not a SOAP envelope). WS-Addressing blocks stay out: Synapse
/// moves them too, but its addressing module replaces them with the answer's own.
fn with_header_blocks(fault: Bytes, msg: &Message, doc: &DocCache) -> Result<Bytes, Error> {
    let start;
    let d = match &msg.body {
        Body::Head(head) => match head_document(head) {
            Some(d) => {
                start = d;
                &start
            }
            None => return Ok(fault),
        },
        _ => match doc.tree(msg) {
            Ok(d) => d,
            Err(_) => return Ok(fault),
        },
    };
    let blocks: Vec<_> = match d.soap_header() {
        Some(h) => h
            .child_elements()
            .filter(|b| {
                b.namespace_uri()
                    .is_none_or(|ns| !crate::addressing::NAMESPACES.contains(&ns))
            })
            .collect(),
        None => return Ok(fault),
    };
    if blocks.is_empty() {
        return Ok(fault);
    }
    let xml = Fragment::from_nodes(&blocks)
        .and_then(|f| f.to_xml_string())
        .map_err(|e| xml_error("makefault", e))?;
    // The empty Header `fault::build` wrote (before the Body, so the first one) takes them.
    let text = String::from_utf8_lossy(&fault).replacen(
        fault::EMPTY_HEADER,
        &format!("<soapenv:Header>{xml}</soapenv:Header>"),
        1,
    );
    Ok(Bytes::from(text))
}

/// The SOAP 1.1 and 1.2 Headers: what a SOAP fault reads of the message, decided by its start.
static HEADERS: LazyLock<[Expr; 2]> = LazyLock::new(|| {
    let ns = [
        ("s11".to_owned(), fault::SOAP11_ENV.to_owned()),
        ("s12".to_owned(), fault::SOAP12_ENV.to_owned()),
    ];
    ["/s11:Envelope/s11:Header", "/s12:Envelope/s12:Header"]
        .map(|p| Expr::compile(p, &ns).expect("a fixed XPath"))
});

/// The envelope whose start `head` is (read up to its Header's end, [`HEADERS`]), cut after the
/// Header and closed: `None` when it has no Header or the cut is not well-formed. The first few
/// `</P:Header>` are tried, in case a block holds that text in a comment or CDATA section.
fn head_document(head: &[u8]) -> Option<Document> {
    let from = head
        .windows(2)
        .position(|w| w[0] == b'<' && w[1] != b'?' && w[1] != b'!')?;
    let len = head[from + 1..]
        .iter()
        .position(|&b| b.is_ascii_whitespace() || b == b'>' || b == b'/')?;
    let root = &head[from + 1..from + 1 + len];
    let close = match root.iter().position(|&b| b == b':') {
        Some(c) => [b"</", &root[..c], b":Header>"].concat(),
        None => b"</Header>".to_vec(),
    };
    let mut at = 0;
    for _ in 0..4 {
        at += memchr::memmem::find(&head[at..], &close)? + close.len();
        let text = [&head[..at], b"</", root, b">"].concat();
        if let Ok(d) = Document::parse(&text) {
            return Some(d);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::exec::{run, Flow};
    use crate::message::{Body, Message};
    use sluice_expr::BodyNeed;

    /// Proxy `P` with `makefault` as its in-sequence, compiled; that in-sequence reads `need` of
    /// the body.
    fn compiled(makefault: &str, need: BodyNeed) -> crate::Plan {
        let text = format!(
            r#"<definitions xmlns="http://ws.apache.org/ns/synapse"><proxy name="P"><target><inSequence>{makefault}</inSequence></target></proxy></definitions>"#
        );
        let (cfg, mut diags) = sluice_config::load_str("t.xml", &text);
        let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
        assert!(diags.items.is_empty(), "{diags:?}");
        assert_eq!(plan.proxies["P"].in_seq.body_need, need);
        plan
    }

    /// The body `P` makes of a message with `body` and the property `c`.
    fn fault_of(plan: &crate::Plan, body: &'static [u8], c: &str) -> String {
        let mut msg = Message::request(
            "P".into(),
            http::Method::POST,
            "/services/P".into(),
            http::HeaderMap::new(),
        );
        msg.props.set("c", c.into());
        msg.body = Body::Bytes(bytes::Bytes::from_static(body));
        assert!(matches!(
            run(&plan.proxies["P"].in_seq.steps, &mut msg),
            Ok(Flow::Continue)
        ));
        let Body::Bytes(b) = &msg.body else { panic!() };
        String::from_utf8(b.to_vec()).unwrap()
    }

    /// As Synapse's FaultMediator: a code expression's string value is the local name of a code in
    /// the fault's envelope namespace, taken whole; a reason over the body has the body read first.
    #[test]
    fn code_expressions_name_a_code_per_message() {
        let cases: [(&str, BodyNeed, &[u8], &str, &str); 2] = [
            (
                r#"<makefault version="soap11">
<code expression="get-property('c')"/><reason expression="//why"/></makefault>"#,
                BodyNeed::Full,
                b"<r><why>boom</why></r>",
                "101503",
                "<faultcode>soapenv:101503</faultcode><faultstring>boom</faultstring>",
            ),
            (
                r#"<makefault version="soap12">
<code expression="$ctx:c"/><reason value="r"/></makefault>"#,
                BodyNeed::Headers,
                b"<r/>",
                "Receiver<",
                "<soapenv:Code><soapenv:Value>soapenv:Receiver&lt;</soapenv:Value></soapenv:Code>",
            ),
        ];
        for (mediator, need, body, code, want) in cases {
            let f = fault_of(&compiled(mediator, need), body, code);
            assert!(f.contains(want), "{f}");
        }
    }

    /// As Synapse's: a SOAP fault has a Header, empty, or with the message's header blocks moved
    /// into it (elements only, their namespaces declared where they land, WS-Addressing's left
    /// out).
    #[test]
    fn soap_faults_carry_the_messages_header_blocks() {
        let plan = compiled(
            r#"<makefault version="soap11"><code value="soap11Env:Client" xmlns:soap11Env="http://schemas.xmlsoap.org/soap/envelope/"/><reason value="r"/></makefault>"#,
            BodyNeed::Headers,
        );
        let plain = fault_of(&plan, b"<r/>", "");
        assert!(
            plain.contains("><soapenv:Header/><soapenv:Body>"),
            "{plain}"
        );
        let soap = fault_of(
            &plan,
            b"<e:Envelope xmlns:e=\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns:a=\"urn:a\"><e:Header>\n <a:One>1</a:One>\n <b:Two xmlns:b=\"urn:b\"/>\n <w:To xmlns:w=\"http://www.w3.org/2005/08/addressing\">t</w:To></e:Header><e:Body><x/></e:Body></e:Envelope>",
            "",
        );
        assert!(
            soap.contains("<soapenv:Header><a:One xmlns:a=\"urn:a\">1</a:One><b:Two xmlns:b=\"urn:b\"/></soapenv:Header><soapenv:Body><soapenv:Fault>"),
            "{soap}"
        );
        assert!(!soap.contains("<x/>"), "{soap}");
        // Only the start read (the transport relays the rest): the blocks come from it.
        let start = b"<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Header><a:One xmlns:a=\"urn:a\"><!-- </s:Header> --></a:One></s:Header><s:Body><big";
        let mut msg = Message::request(
            "P".into(),
            http::Method::POST,
            "/services/P".into(),
            http::HeaderMap::new(),
        );
        msg.body = Body::Head(bytes::Bytes::from_static(start));
        run(&plan.proxies["P"].in_seq.steps, &mut msg).unwrap();
        let Body::Bytes(b) = &msg.body else { panic!() };
        let head = String::from_utf8(b.to_vec()).unwrap();
        assert!(
            head.contains("<soapenv:Header><a:One xmlns:a=\"urn:a\"><!-- </s:Header> --></a:One></soapenv:Header>"),
            "{head}"
        );
        // A start with no Header: the empty one.
        assert!(super::head_document(b"<s:Envelope xmlns:s=\"x\"><s:Body>").is_none());
    }

    /// A detail from an expression over the body is counted in what the step reads.
    #[test]
    fn detail_expressions_read_the_body() {
        let plan = compiled(
            r#"<makefault version="pox">
<reason value="r"/><detail expression="//d"/></makefault>"#,
            BodyNeed::Full,
        );
        assert_eq!(
            fault_of(&plan, b"<r><d>x</d></r>", ""),
            "<Exception>r<detail>x</detail></Exception>"
        );
    }
}
