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
    Some(Step::Send(SendPlan {
        endpoint,
        receive,
        recipients,
    }))
}

impl Mediator for SendPlan {
    fn reads(&self, _json: bool) -> Reads {
        Reads::NOTHING
    }

    fn by_head(&self, _f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        ByHead::Yes
    }

    fn leaves(&self) -> Option<&'static str> {
        Some("send")
    }

    fn ends_sequence(&self) -> bool {
        true
    }

    #[inline]
    fn run(&self, _cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        if let Some(r) = &self.recipients {
            return Ok(Some(Flow::Clone(r.clone())));
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

#[cfg(test)]
mod tests {
    use crate::mediators::Step;

    /// The send steps of sequence `main` in `xml`, and the diagnostics.
    fn sends(xml: &str) -> (Vec<usize>, sluice_config::Diagnostics) {
        let (cfg, mut diags) = sluice_config::load_str("t.xml", xml);
        let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
        let counts = plan
            .main
            .as_ref()
            .map(|m| {
                m.in_seq
                    .steps
                    .iter()
                    .filter_map(|st| match st {
                        Step::Send(p) => Some(p.recipients.as_ref().map_or(0, |r| r.targets.len())),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        (counts, diags)
    }

    #[test]
    fn recipient_lists_known_at_load_are_clones_and_others_are_refused() {
        const NS: &str = "xmlns=\"http://ws.apache.org/ns/synapse\"";
        let (n, d) = sends(&format!(
            r#"<definitions {NS}><sequence name="main"><send><endpoint><recipientlist><endpoints value="http://a/x,http://b/y"/></recipientlist></endpoint></send></sequence></definitions>"#
        ));
        assert!(!d.has_errors(), "{d:?}");
        assert_eq!(n, [2]);
        // An expression known at load: a registry or local entry's text.
        let (n, d) = sends(&format!(
            r#"<definitions {NS}><localEntry key="EP_LIST">http://a/x, http://b/y,http://c/z</localEntry>
  <sequence name="main"><send><endpoint><recipientlist><endpoints value="{{get-property('registry', 'EP_LIST')}}"/></recipientlist></endpoint></send></sequence></definitions>"#
        ));
        assert!(!d.has_errors(), "{d:?}");
        assert_eq!(n, [3]);
        let (n, d) = sends(&format!(
            r#"<definitions {NS}><sequence name="main"><send><endpoint><recipientlist><endpoints value="{{//to}}"/></recipientlist></endpoint></send></sequence></definitions>"#
        ));
        assert!(n.is_empty());
        assert!(
            d.items
                .iter()
                .any(|x| x.severity == sluice_config::Severity::Unsupported
                    && x.message.contains("computed per message")),
            "{d:?}"
        );
    }
}
