//! WS-Security for Sluice: MI's key stores, and the checks a secured SOAP request passes before
//! any mediator runs (decryption, signature, timestamp, trust), with the secured response. XML
//! Signature and XML Encryption themselves are xmlsec1's, through `sluice-xml`.

pub mod fault;
pub mod inbound;
pub mod keystore;
pub mod outbound;
pub mod policy;

#[cfg(test)]
mod tests;
