//! WSO2's throttle policies (WS-Policy with the `http://www.wso2.org/products/wso2commons/throttle`
//! assertions), read into limits: Synapse's `ThrottleAssertion` form (`wsp:All` groups with an
//! `ID`, and an `ExactlyOne` of a control and `IsAllow`) and the `MediatorThrottleAssertion` form
//! (`Control`, `Allow`, `Deny`).
//!
//! | Assertion | Meaning |
//! |---|---|
//! | `MaximumConcurrentAccess` | requests at once under the throttle's `id` |
//! | `ID type="IP"`: `other`, an address, a range `a - b`, or `a.b.c.*` | whom the group's rule applies to (`other`: any caller no group names); the callers a rule applies to share its count, as in WSO2's throttle |
//! | `MaximumCount`, `UnitTime` (ms), `ProhibitTimePeriod` (ms) | at most that many requests per caller in a unit of time; past it refused until the unit ends, or for the prohibit period when one is given |
//! | `IsAllow false`, `Deny` | the caller is always refused |
//! | `IsAllow true` alone, `Allow` | the caller is never limited |

use std::net::IpAddr;

pub const THROTTLE_NS: &str = "http://www.wso2.org/products/wso2commons/throttle";

/// A throttle policy's limits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThrottlePolicy {
    pub max_concurrent: Option<u32>,
    pub callers: Vec<CallerRule>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CallerRule {
    pub who: Caller,
    pub access: Access,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Caller {
    /// `other`: every caller no other rule names.
    Other,
    Range(IpAddr, IpAddr),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Access {
    Allow,
    Deny,
    Limit {
        max: u64,
        unit_ms: u64,
        prohibit_ms: u64,
    },
}

impl ThrottlePolicy {
    /// The rule for a caller: the first that names its address, else `other`'s.
    pub fn rule_for(&self, ip: IpAddr) -> Option<(usize, &CallerRule)> {
        let named = self.callers.iter().enumerate().find(|(_, r)| match r.who {
            Caller::Range(a, b) => a <= ip && ip <= b,
            Caller::Other => false,
        });
        named.or_else(|| {
            self.callers
                .iter()
                .enumerate()
                .find(|(_, r)| r.who == Caller::Other)
        })
    }
}

/// Reads a policy document; `Err` says what Sluice cannot read in it (a `DOMAIN` caller needs the
/// caller's host name, which Sluice does not look up).
pub fn parse_policy(text: &str) -> Result<ThrottlePolicy, String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("not XML: {e}"))?;
    let is = |n: &roxmltree::Node, name: &str| {
        n.is_element()
            && n.tag_name().name() == name
            && n.tag_name().namespace() == Some(THROTTLE_NS)
    };
    let mut policy = ThrottlePolicy::default();
    let assertion = doc
        .descendants()
        .find(|n| is(n, "ThrottleAssertion") || is(n, "MediatorThrottleAssertion"))
        .ok_or("no ThrottleAssertion or MediatorThrottleAssertion")?;
    if let Some(m) = assertion
        .children()
        .find(|n| is(n, "MaximumConcurrentAccess"))
    {
        policy.max_concurrent = Some(number(m, "MaximumConcurrentAccess")? as u32);
    }
    for id in assertion.descendants().filter(|n| is(n, "ID")) {
        let group = id.parent().ok_or("an ID outside a group")?;
        let ty = id
            .attributes()
            .find(|a| a.name() == "type")
            .map_or("IP", |a| a.value());
        if !ty.eq_ignore_ascii_case("IP") {
            return Err(format!(
                "caller ID type '{ty}' (only IP: Sluice does not look up callers' host names)"
            ));
        }
        let who = caller(id.text().unwrap_or("").trim())?;
        let find = |name: &str| group.descendants().find(|n| is(n, name));
        let denied = find("Deny").is_some()
            || find("IsAllow").is_some_and(|n| n.text().is_some_and(|t| t.trim() == "false"));
        let access = match find("MaximumCount") {
            _ if denied => Access::Deny,
            Some(max) => Access::Limit {
                max: number(max, "MaximumCount")?,
                unit_ms: find("UnitTime")
                    .map(|n| number(n, "UnitTime"))
                    .transpose()?
                    .ok_or("a MaximumCount without a UnitTime")?,
                prohibit_ms: match find("ProhibitTimePeriod") {
                    Some(n) if n.text().is_some_and(|t| !t.trim().is_empty()) => {
                        number(n, "ProhibitTimePeriod")?
                    }
                    _ => 0,
                },
            },
            None => Access::Allow,
        };
        policy.callers.push(CallerRule { who, access });
    }
    Ok(policy)
}

fn number(n: roxmltree::Node, what: &str) -> Result<u64, String> {
    let t = n.text().unwrap_or("").trim();
    t.parse()
        .map_err(|_| format!("{what} '{t}' is not a whole number"))
}

/// `other`, an address, or `a - b`.
fn caller(t: &str) -> Result<Caller, String> {
    if t == "other" {
        return Ok(Caller::Other);
    }
    let ip = |s: &str| {
        s.trim()
            .parse::<IpAddr>()
            .map_err(|_| format!("caller ID '{t}' is not other, an IP address or a range"))
    };
    // `10.1.2.*`: the whole last octet.
    if let Some(net) = t.strip_suffix(".*") {
        return Ok(Caller::Range(
            ip(&format!("{net}.0"))?,
            ip(&format!("{net}.255"))?,
        ));
    }
    match t.split_once('-') {
        Some((a, b)) => Ok(Caller::Range(ip(a)?, ip(b)?)),
        None => {
            let a = ip(t)?;
            Ok(Caller::Range(a, a))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"<wsp:Policy xmlns:wsp="http://schemas.xmlsoap.org/ws/2004/09/policy" xmlns:throttle="http://www.wso2.org/products/wso2commons/throttle">"#;

    #[test]
    fn synapse_and_mediator_assertion_forms_read_the_same() {
        let synapse = format!(
            r#"{HEAD}<throttle:ThrottleAssertion><throttle:MaximumConcurrentAccess>10</throttle:MaximumConcurrentAccess>
  <wsp:All><throttle:ID throttle:type="IP">other</throttle:ID><wsp:ExactlyOne><wsp:All>
    <throttle:MaximumCount>4</throttle:MaximumCount><throttle:UnitTime>800000</throttle:UnitTime>
    <throttle:ProhibitTimePeriod wsp:Optional="true">10000
    </throttle:ProhibitTimePeriod></wsp:All><throttle:IsAllow>true</throttle:IsAllow></wsp:ExactlyOne></wsp:All>
  <wsp:All><throttle:ID throttle:type="IP">192.168.8.200-192.168.8.222</throttle:ID><wsp:ExactlyOne><wsp:All>
    <throttle:MaximumCount>8</throttle:MaximumCount><throttle:UnitTime>800000</throttle:UnitTime>
    <throttle:ProhibitTimePeriod wsp:Optional="true"></throttle:ProhibitTimePeriod></wsp:All>
    <throttle:IsAllow>true</throttle:IsAllow></wsp:ExactlyOne></wsp:All>
  <wsp:All><throttle:ID throttle:type="IP">192.168.8.201</throttle:ID><wsp:ExactlyOne><throttle:IsAllow>false</throttle:IsAllow></wsp:ExactlyOne></wsp:All>
</throttle:ThrottleAssertion></wsp:Policy>"#
        );
        let p = parse_policy(&synapse).unwrap();
        assert_eq!(p.max_concurrent, Some(10));
        assert_eq!(p.callers.len(), 3);
        assert_eq!(
            p.callers[0].access,
            Access::Limit {
                max: 4,
                unit_ms: 800000,
                prohibit_ms: 10000
            }
        );
        assert_eq!(p.callers[2].access, Access::Deny);
        // A named address wins over other; within a range the range's rule.
        let at = |s: &str| p.rule_for(s.parse().unwrap()).map(|(i, _)| i);
        assert_eq!(at("192.168.8.210"), Some(1));
        assert_eq!(at("10.0.0.1"), Some(0));
        let mediator = format!(
            r#"{HEAD}<throttle:MediatorThrottleAssertion><wsp:Policy><throttle:ID throttle:type="IP">other</throttle:ID>
  <wsp:Policy><throttle:Control><wsp:Policy><throttle:MaximumCount>4</throttle:MaximumCount><throttle:UnitTime>60000</throttle:UnitTime></wsp:Policy></throttle:Control></wsp:Policy></wsp:Policy>
  <wsp:Policy><throttle:ID throttle:type="IP">10.0.0.1 - 10.0.0.9</throttle:ID><wsp:Policy><throttle:Deny/></wsp:Policy></wsp:Policy>
</throttle:MediatorThrottleAssertion></wsp:Policy>"#
        );
        let p = parse_policy(&mediator).unwrap();
        assert_eq!(p.max_concurrent, None);
        assert_eq!(
            p.callers[0].access,
            Access::Limit {
                max: 4,
                unit_ms: 60000,
                prohibit_ms: 0
            }
        );
        assert_eq!(
            p.rule_for("10.0.0.5".parse().unwrap()).unwrap().1.access,
            Access::Deny
        );
    }

    #[test]
    fn what_it_cannot_apply_is_said() {
        let domain = format!(
            r#"{HEAD}<throttle:ThrottleAssertion><wsp:All><throttle:ID throttle:type="DOMAIN">example.org</throttle:ID></wsp:All></throttle:ThrottleAssertion></wsp:Policy>"#
        );
        assert!(parse_policy(&domain).unwrap_err().contains("DOMAIN"));
        assert!(parse_policy("<a/>")
            .unwrap_err()
            .contains("no ThrottleAssertion"));
        let bad = format!(
            r#"{HEAD}<throttle:ThrottleAssertion><throttle:MaximumConcurrentAccess>ten</throttle:MaximumConcurrentAccess></throttle:ThrottleAssertion></wsp:Policy>"#
        );
        assert!(parse_policy(&bad).unwrap_err().contains("'ten'"));
    }
}
