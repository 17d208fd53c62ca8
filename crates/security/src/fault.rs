//! WS-Security faults: the codes of the SOAP Message Security specification (section 12), as
//! `wsse:` qualified names in a SOAP fault the client gets with status 500.

use crate::inbound::WSSE;

/// Why a secured request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub code: FaultCode,
    pub reason: String,
}

/// The fault codes of WS-Security 1.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultCode {
    /// A token of a kind that is not supported.
    UnsupportedSecurityToken,
    /// An algorithm that is not supported or not the policy's.
    UnsupportedAlgorithm,
    /// The header is missing, malformed or not what the policy asks for.
    InvalidSecurity,
    /// A token that cannot be read.
    InvalidSecurityToken,
    /// A token that cannot be trusted.
    FailedAuthentication,
    /// A signature or decryption that fails.
    FailedCheck,
    /// A referenced token that cannot be found.
    SecurityTokenUnavailable,
    /// A Timestamp past its expiry.
    MessageExpired,
}

impl FaultCode {
    /// The code's local name (in the `wsse` namespace).
    pub fn local_name(self) -> &'static str {
        match self {
            FaultCode::UnsupportedSecurityToken => "UnsupportedSecurityToken",
            FaultCode::UnsupportedAlgorithm => "UnsupportedAlgorithm",
            FaultCode::InvalidSecurity => "InvalidSecurity",
            FaultCode::InvalidSecurityToken => "InvalidSecurityToken",
            FaultCode::FailedAuthentication => "FailedAuthentication",
            FaultCode::FailedCheck => "FailedCheck",
            FaultCode::SecurityTokenUnavailable => "SecurityTokenUnavailable",
            FaultCode::MessageExpired => "MessageExpired",
        }
    }
}

impl Fault {
    pub fn new(code: FaultCode, reason: impl Into<String>) -> Fault {
        Fault {
            code,
            reason: reason.into(),
        }
    }

    /// The SOAP fault for this (1.1, or 1.2 with `soap12`), the code as a subcode under Sender
    /// in 1.2.
    pub fn to_soap(&self, soap12: bool) -> String {
        let code = self.code.local_name();
        let reason = escape(&self.reason);
        if soap12 {
            format!(
                "<soapenv:Envelope xmlns:soapenv=\"http://www.w3.org/2003/05/soap-envelope\">\
                 <soapenv:Body><soapenv:Fault><soapenv:Code><soapenv:Value>soapenv:Sender</soapenv:Value>\
                 <soapenv:Subcode><soapenv:Value xmlns:wsse=\"{WSSE}\">wsse:{code}</soapenv:Value>\
                 </soapenv:Subcode></soapenv:Code><soapenv:Reason><soapenv:Text xml:lang=\"en\">{reason}\
                 </soapenv:Text></soapenv:Reason></soapenv:Fault></soapenv:Body></soapenv:Envelope>"
            )
        } else {
            format!(
                "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">\
                 <soapenv:Body><soapenv:Fault><faultcode xmlns:wsse=\"{WSSE}\">wsse:{code}</faultcode>\
                 <faultstring>{reason}</faultstring></soapenv:Fault></soapenv:Body></soapenv:Envelope>"
            )
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "wsse:{}: {}", self.code.local_name(), self.reason)
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
