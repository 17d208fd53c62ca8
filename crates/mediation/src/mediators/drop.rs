//! `<drop>`: mediation of this message stops (a request gets an empty 202 from the transport).

#[derive(Debug)]
pub struct DropPlan;

super::ends_with!(DropPlan, crate::exec::Flow::Drop);
