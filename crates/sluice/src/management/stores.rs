//! MI's `message-stores` and `message-processors`: the in-memory stores with how many messages
//! each holds, the processors with their state, and switching a processor on and off.
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /management/message-stores[?searchKey=k]` | `{"count","list":[{"name","type","size"}]}` (names holding `k`, any case) |
//! | `GET /management/message-stores?name=N` | `{"name","type","size"}`, or 404 "Specified message store ('N') not found" |
//! | `GET /management/message-processors[?searchKey=k]` | `{"count","list":[{"name","type","status"}]}`, status `active` or `inactive` |
//! | `GET /management/message-processors?name=N` | `{"name","type","messageStore","status"}`, or 404 |
//! | `POST /management/message-processors` `{"name","status"}` | `{"Message":"N : is activated"}` (or `deactivated`); an audit line |

use super::{error, listed, switch_request, Answer};
use hyper::StatusCode;
use serde_json::{json, Value};
use sluice_mediation::processors::ProcessorPlan;
use sluice_mediation::Plan;

/// Whether `name` holds `key`, any case (MI's `searchKey`).
fn matches(name: &str, key: Option<&str>) -> bool {
    key.is_none_or(|k| name.to_lowercase().contains(&k.to_lowercase()))
}

pub(super) fn stores(plan: &Plan, name: Option<String>, key: Option<String>) -> Answer {
    let shown = |n: &str, s: &sluice_mediation::mediators::store::MessageStore| json!({"name": n, "type": "in-memory-message-store", "size": s.len()});
    if let Some(n) = name {
        return match plan.stores.get(&n) {
            Some(s) => (StatusCode::OK, Some(shown(&n, s))),
            None => error(
                StatusCode::NOT_FOUND,
                &format!("Specified message store ('{n}') not found"),
            ),
        };
    }
    let mut list: Vec<(&String, Value)> = (plan.stores.iter())
        .filter(|(n, _)| matches(n, key.as_deref()))
        .map(|(n, s)| (n, shown(n, s)))
        .collect();
    list.sort_by(|a, b| a.0.cmp(b.0));
    (
        StatusCode::OK,
        Some(listed(list.into_iter().map(|(_, v)| v).collect())),
    )
}

fn status(p: &ProcessorPlan) -> &'static str {
    if p.is_active() {
        "active"
    } else {
        "inactive"
    }
}

pub(super) fn processors(plan: &Plan, name: Option<String>, key: Option<String>) -> Answer {
    if let Some(n) = name {
        return match plan.processors.iter().find(|p| p.name == n) {
            Some(p) => (
                StatusCode::OK,
                Some(
                    json!({"name": p.name, "type": p.type_name(), "messageStore": p.store.name, "status": status(p)}),
                ),
            ),
            None => error(
                StatusCode::NOT_FOUND,
                &format!("Specified message processor ('{n}') not found"),
            ),
        };
    }
    let list = (plan.processors.iter())
        .filter(|p| matches(&p.name, key.as_deref()))
        .map(|p| json!({"name": p.name, "type": p.type_name(), "status": status(p)}))
        .collect();
    (StatusCode::OK, Some(listed(list)))
}

pub(super) fn switch(plan: &Plan, body: &[u8]) -> Answer {
    let (name, on) = match switch_request(body) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let Some(p) = plan.processors.iter().find(|p| p.name == name) else {
        return error(StatusCode::NOT_FOUND, "Message processor does not exist");
    };
    p.set_active(on);
    tracing::info!(target: "sluice::audit", processor = %name, active = on, "message processor switched through the management API");
    let done = if on { "activated" } else { "deactivated" };
    (
        StatusCode::OK,
        Some(json!({ "Message": format!("{name} : is {done}") })),
    )
}
