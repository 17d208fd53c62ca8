//! What a reference to a sequence or template the configuration does not define compiles to.
//! Synapse resolves such keys when a message reaches them, so the configuration deploys and that
//! message fails there: its fault sequence runs, with Synapse's message as `ERROR_MESSAGE`.
//! (A missing endpoint is an [`crate::endpoints::Address::Missing`] endpoint instead, so that a
//! failover group can go on past it as Synapse's does.)

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct MissingPlan {
    /// Synapse's words: `Sequence named X cannot be found`.
    pub message: Arc<str>,
}

impl Compiler<'_> {
    /// Whether a `kind` ("sequence", "template", "endpoint") named `key` that is not defined
    /// here may be left for the run, as Synapse leaves it: `Ok` when Synapse would find it
    /// nowhere either, with a warning at `from` that `then` says what happens instead; else
    /// reported at `from`, as unsupported when Synapse would look it up where Sluice does not (a
    /// `{...}` key, a registry, a local entry's URL), as an error when the key names something
    /// that is not a `kind`.
    pub(crate) fn missing_key(
        &mut self,
        kind: &str,
        key: &str,
        from: &Location,
        element: &str,
        then: &str,
    ) -> Result<(), ()> {
        let refused = if key.starts_with('{') && key.ends_with('}') {
            Some((
                Severity::Unsupported,
                format!("{kind}s named per message ({{...}} keys) are not supported yet"),
            ))
        } else if let Some(le) = self.local_entries.get(key) {
            Some(match &le.value {
                cfg::LocalEntryValue::Src(u) => (
                    Severity::Unsupported,
                    format!("local entry '{key}' refers to '{u}', which is not fetched (no network at load)"),
                ),
                _ => (
                    Severity::Error,
                    format!("local entry '{key}' ({}) does not hold a <{kind}>", le.loc),
                ),
            })
        } else if self
            .resources
            .contains_key(crate::compile::normalize_registry_key(key).as_str())
        {
            Some((
                Severity::Unsupported,
                format!("a {kind} read from registry resource '{key}' is not supported yet"),
            ))
        } else {
            self.key_sources.first().map(|(what, loc)| {
                (
                    Severity::Unsupported,
                    format!("no {kind} named '{key}' here: Synapse would look it up in the <{what}> at {loc}, which is not supported yet"),
                )
            })
        };
        match refused {
            Some((severity, why)) => {
                self.report(severity, from, element, why);
                Err(())
            }
            None => {
                self.report(
                    Severity::Warning,
                    from,
                    element,
                    format!("no {kind} named '{key}' in the configuration: {then}"),
                );
                Ok(())
            }
        }
    }

    /// [`Self::missing_key`], and when it may be left for the run, the warning that a message
    /// reaching it fails there.
    pub(crate) fn left_for_run(
        &mut self,
        kind: &str,
        key: &str,
        from: &Location,
        element: &str,
    ) -> Result<(), ()> {
        // Synapse 3.0.1's InvokeMediator stops the message without a word; MI's fails it.
        let like = if kind == "template" { "MI" } else { "Synapse" };
        let then = format!("as in {like}, which looks it up when a message reaches it, such a message fails there (fault sequence)");
        self.missing_key(kind, key, from, element, &then)
    }

    /// A sequence of one step that fails with `message` (Synapse's words for the missing key).
    pub(crate) fn missing_sequence(&mut self, message: String) -> Arc<SeqPlan> {
        let step = Step::Missing(MissingPlan {
            message: message.into(),
        });
        Arc::new(SeqPlan::new(None, Arc::from([step])))
    }
}

impl Mediator for MissingPlan {
    fn reads(&self, _json: bool) -> Reads {
        Reads::NOTHING
    }

    fn by_head(&self, _f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        ByHead::Yes
    }

    fn run(&self, _cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        Err(Error::new(ErrorKind::Mediation, &*self.message))
    }
}
