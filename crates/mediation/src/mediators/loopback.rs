//! `<loopback>`: the message turns into a response and goes through the out-sequence; the rest
//! of the in-sequence is skipped.

#[derive(Debug)]
pub struct LoopbackPlan;

super::ends_with!(LoopbackPlan, crate::exec::Flow::Loopback);
