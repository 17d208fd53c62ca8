//! `<respond>`: the current message goes back to the client.

#[derive(Debug)]
pub struct RespondPlan;

super::ends_with!(RespondPlan, crate::exec::Flow::Respond);
