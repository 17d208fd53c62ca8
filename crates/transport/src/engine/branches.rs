//! MI 4.4's `foreach` and `scatter-gather` ([`sluice_mediation::branches`]): each branch runs to
//! its end here, a `call` in it made and the rest run on its response; then the mediator gathers
//! the ends into the message, which goes on where the mediator was.

use super::*;
use sluice_mediation::branches::{branch_left, Branches};

impl Engine {
    /// Runs `b`'s branches, gathers them into `msg`, and goes on with `k`.
    pub(super) async fn branches_then(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        mut stream: Option<Inbound>,
        b: Branches,
        k: Continuation,
        depth: Depth,
    ) -> Response<RelayBody> {
        if let Err(e) = self.read_whole(&mut msg, &mut stream).await {
            return self.default_fault(msg.soap, &e);
        }
        let flow = match self.gathered(proxy, &mut msg, b, depth).await {
            Ok(()) => mediate!(self, msg, Work::Resume(k)),
            Err(e) => Err(e),
        };
        match flow {
            Ok(flow) => Box::pin(self.request_decided(proxy, msg, None, flow, depth)).await,
            Err(e) => Box::pin(self.send_failed(proxy, msg, NotSent::plain(e), depth)).await,
        }
    }

    /// Runs `b`'s branches (at once, or in order) and gathers their ends into `msg`.
    async fn gathered(
        &self,
        proxy: &Arc<ProxyPlan>,
        msg: &mut Message,
        b: Branches,
        depth: Depth,
    ) -> Result<(), Error> {
        let mut runs = Vec::with_capacity(b.runs.len());
        let until = b.deadline.map(|d| (tokio::time::Instant::now() + d, d));
        for (mut m, steps) in b.runs {
            // Each branch's calls count with the message's.
            m.calls = msg.calls;
            let run = self.branch(proxy, m, steps, depth);
            runs.push(Box::pin(async move {
                let Some((at, d)) = until else {
                    return run.await;
                };
                match tokio::time::timeout_at(at, run).await {
                    Ok(end) => end,
                    Err(_) => Err(Error::new(
                        ErrorKind::Stopped,
                        format!("the branch did not end within {} ms", d.as_millis()),
                    )),
                }
            }));
        }
        let ends = if b.parallel {
            join_all(runs).await
        } else {
            let mut ends = Vec::with_capacity(runs.len());
            for r in runs {
                ends.push(r.await);
            }
            ends
        };
        let calls = ends.iter().flatten().map(|m| m.calls).max();
        msg.calls = msg.calls.max(calls.unwrap_or(0));
        b.gather.gather(msg, ends)
    }

    /// One branch to its end: the message it ends with.
    async fn branch(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        steps: sluice_mediation::plan::Steps,
        depth: Depth,
    ) -> Result<Message, Error> {
        let mut flow = mediate!(self, msg, Work::Resume(Continuation::from_steps(steps)))?;
        loop {
            flow = match flow {
                Flow::Continue => return Ok(msg),
                Flow::Call(ep, k) => {
                    msg = self.branch_call(proxy, msg, ep).await?;
                    mediate!(self, msg, Work::Resume(k))?
                }
                Flow::Branches(b, k) => {
                    Box::pin(self.gathered(proxy, &mut msg, *b, depth)).await?;
                    mediate!(self, msg, Work::Resume(k))?
                }
                Flow::Send(_) => return Err(branch_left("send")),
                Flow::Respond => return Err(branch_left("respond")),
                Flow::Loopback => return Err(branch_left("loopback")),
                Flow::Drop | Flow::Absorbed => return Err(branch_left("drop")),
                Flow::Clone(_) | Flow::ForkThen(..) => return Err(branch_left("clone")),
                Flow::Iterate(..) => return Err(branch_left("iterate")),
                Flow::Enqueue(_) => return Err(branch_left("enqueue")),
            };
        }
    }

    /// A `call` in a branch: the response, its body read (the gather reads what a branch ends
    /// with).
    async fn branch_call(
        &self,
        proxy: &Arc<ProxyPlan>,
        mut msg: Message,
        ep: Option<Arc<EndpointPlan>>,
    ) -> Result<Message, Error> {
        if msg.calls >= self.opts.max_hops {
            return Err(Error::new(
                ErrorKind::Mediation,
                format!(
                    "more than {} back-end calls for one request",
                    self.opts.max_hops
                ),
            ));
        }
        msg.calls += 1;
        let ep = self.destination(proxy, &msg, ep)?;
        let (resp, leaf) =
            (self.send_routed(&mut msg, None, &ep, false).await).map_err(|n| n.error)?;
        let (parts, body) = resp.into_parts();
        let mut rmsg = msg.into_response(parts.status, parts.headers);
        let stream = Some(Inbound::Backend(body));
        let b = self.buffer(stream, "response").await?;
        rmsg.body = read_body(b);
        // Checked or taken in as the answer of a plain send is (the body is in memory now).
        self.take_in(&leaf, &mut rmsg, &mut None).await?;
        Ok(rmsg)
    }
}
