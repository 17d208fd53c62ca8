//! `<send>`: the message goes to the endpoint (without one: a response to the client, a request to
//! its `To`, else the proxy's target), and the sequence ends. With `receive="SEQ"` the response goes
//! through that sequence instead of the out-sequence (it is then a call whose continuation is that
//! sequence).

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct SendPlan {
    pub endpoint: Option<Arc<EndpointPlan>>,
    /// `receive`: the sequence for the response.
    pub receive: Option<Arc<SeqPlan>>,
    /// A `<recipientlist>` endpoint: a copy to each of its children, as a clone (each response
    /// goes through the out-sequence, where an aggregate may gather them), as Synapse's
    /// RecipientListEndpoint sends.
    pub recipients: Option<Arc<crate::mediators::clone::ClonePlan>>,
    /// A recipient list whose addresses each message gives (`<endpoints value="{...}">`).
    pub listed: Option<Arc<EndpointPlan>>,
}

pub(crate) fn compile(
    c: &mut Compiler,
    endpoint: Option<&cfg::EndpointRef>,
    receive: Option<&cfg::SequenceRef>,
) -> Option<Step> {
    let endpoint = match endpoint {
        Some(e) => Some(c.endpoint_ref(e)?),
        None => None,
    };
    let receive = match receive {
        Some(r) => Some(c.sequence_ref(r, "send receive")?),
        None => None,
    };
    let recipients = endpoint
        .as_ref()
        .and_then(|e| e.recipients())
        .map(|children| {
            let targets = children
                .iter()
                .map(|child| crate::mediators::clone::CloneTargetPlan {
                    sequence: None,
                    endpoint: Some(child.clone()),
                    to: None,
                    soap_action: None,
                })
                .collect();
            Arc::new(crate::mediators::clone::ClonePlan {
                targets,
                sequential: false,
                continue_parent: false,
            })
        });
    let listed = endpoint
        .as_ref()
        .filter(|e| e.recipients_per_message().is_some())
        .cloned();
    Some(Step::Send(SendPlan {
        endpoint,
        receive,
        recipients,
        listed,
    }))
}

impl Mediator for SendPlan {
    fn reads(&self, _json: bool) -> Reads {
        match self
            .listed
            .as_ref()
            .and_then(|e| e.recipients_per_message())
        {
            Some(x) => Reads::of(x.body_need()),
            None => Reads::NOTHING,
        }
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        match self
            .listed
            .as_ref()
            .and_then(|e| e.recipients_per_message())
        {
            Some(x) => (x.body_need() == BodyNeed::None || f(x)).into(),
            None => ByHead::Yes,
        }
    }

    fn leaves(&self) -> Option<&'static str> {
        Some("send")
    }

    fn ends_sequence(&self) -> bool {
        true
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        if let Some(r) = &self.recipients {
            return Ok(Some(Flow::Clone(r.clone())));
        }
        if let Some(ep) = &self.listed {
            return listed_per_message(ep, cx).map(Some);
        }
        Ok(Some(match &self.receive {
            None => Flow::Send(self.endpoint.clone()),
            Some(seq) => Flow::Call(
                self.endpoint.clone(),
                Continuation::from_steps(seq.steps.clone()),
            ),
        }))
    }
}

/// A copy of the message to each address the message gives the recipient list, as a clone.
fn listed_per_message(ep: &EndpointPlan, cx: &mut Cx<'_>) -> Result<Flow, Error> {
    let Some(x) = ep.recipients_per_message() else {
        return Ok(Flow::Send(None));
    };
    let text = eval_expr(x, cx.msg, cx.doc)?;
    let urls = || text.split(',').map(str::trim).filter(|u| !u.is_empty());
    within_parts_cap("recipientlist", urls().count())?;
    let mut targets = Vec::new();
    for url in urls() {
        targets.push(crate::mediators::clone::CloneTargetPlan {
            sequence: None,
            endpoint: Some(EndpointPlan::for_url(ep.describe(), url)?),
            to: None,
            soap_action: None,
        });
    }
    if targets.is_empty() {
        return Err(Error::new(
            ErrorKind::Mediation,
            format!("{}: the message gives no recipients", ep.describe()),
        ));
    }
    Ok(Flow::Clone(Arc::new(crate::mediators::clone::ClonePlan {
        targets,
        sequential: false,
        continue_parent: false,
    })))
}

#[cfg(test)]
mod tests {
    use crate::mediators::Step;

    /// The send steps of sequence `main` in `xml` (how many recipients each clones to), and the
    /// diagnostics.
    fn sends(xml: &str) -> (Vec<usize>, sluice_config::Diagnostics) {
        let (mut cfg, mut diags) = sluice_config::load_str("t.xml", xml);
        cfg.resources.push(sluice_config::model::Resource {
            key: "conf:/EP_LIST".into(),
            loc: sluice_config::Location::file_only(&"registry".into()),
            bytes: b"http://a/x, http://b/y,http://c/z".as_slice().into(),
            properties: Vec::new(),
        });
        let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
        let counts = plan
            .main
            .as_ref()
            .map(|m| {
                m.in_seq
                    .steps
                    .iter()
                    .filter_map(|st| match st {
                        // usize::MAX: a recipient list built per message.
                        Step::Send(p) if p.listed.is_some() => Some(usize::MAX),
                        Step::Send(p) => Some(p.recipients.as_ref().map_or(0, |r| r.targets.len())),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        (counts, diags)
    }

    #[test]
    fn recipient_lists_known_at_load_are_clones_and_others_are_built_per_message() {
        const NS: &str = "xmlns=\"http://ws.apache.org/ns/synapse\"";
        let (n, d) = sends(&format!(
            r#"<definitions {NS}><sequence name="main"><send><endpoint><recipientlist><endpoints value="http://a/x,http://b/y"/></recipientlist></endpoint></send></sequence></definitions>"#
        ));
        assert!(!d.has_errors(), "{d:?}");
        assert_eq!(n, [2]);
        // An expression known at load: a registry resource's text.
        let (n, d) = sends(&format!(
            r#"<definitions {NS}><sequence name="main"><send><endpoint><recipientlist><endpoints value="{{get-property('registry', 'conf:/EP_LIST')}}"/></recipientlist></endpoint></send></sequence></definitions>"#
        ));
        assert!(!d.has_errors(), "{d:?}");
        assert_eq!(n, [3]);
        // Known only per message: no clone at load, the send keeps the expression.
        let (n, d) = sends(&format!(
            r#"<definitions {NS}><sequence name="main"><send><endpoint><recipientlist><endpoints value="{{//to}}"/></recipientlist></endpoint></send></sequence></definitions>"#
        ));
        assert!(!d.has_errors() && d.items.is_empty(), "{d:?}");
        assert_eq!(n, [usize::MAX]);
    }
}
