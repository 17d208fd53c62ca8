//! Hop-by-hop header handling (RFC 9110 section 7.6.1): these describe one connection and are never relayed.

use http::header::{self, HeaderMap, HeaderName};

const HOP_BY_HOP: [HeaderName; 7] = [
    header::CONNECTION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::PROXY_AUTHORIZATION,
    header::PROXY_AUTHENTICATE,
];

fn is_hop_by_hop(n: &HeaderName) -> bool {
    HOP_BY_HOP.contains(n) || n.as_str() == "keep-alive" || n.as_str() == "proxy-connection"
}

/// Removes hop-by-hop headers, including those the Connection header names.
pub fn strip_hop_by_hop(h: &mut HeaderMap) {
    // Most messages have none: one pass over the few names beats a hashed removal of each candidate.
    if !h.keys().any(is_hop_by_hop) {
        return;
    }
    if let Some(conn) = h.get(header::CONNECTION) {
        if conn.as_bytes().contains(&b',') || !is_plain_keep_alive_or_close(conn.as_bytes()) {
            let named: Vec<HeaderName> = conn
                .to_str()
                .unwrap_or("")
                .split(',')
                .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
                .collect();
            for n in named {
                h.remove(n);
            }
        }
    }
    for n in &HOP_BY_HOP {
        h.remove(n);
    }
    h.remove("keep-alive");
    h.remove("proxy-connection");
}

fn is_plain_keep_alive_or_close(v: &[u8]) -> bool {
    v.eq_ignore_ascii_case(b"keep-alive") || v.eq_ignore_ascii_case(b"close")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_listed_and_named() {
        let mut h = HeaderMap::new();
        h.insert("connection", "keep-alive, x-secret".parse().unwrap());
        h.insert("x-secret", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("transfer-encoding", "chunked".parse().unwrap());
        h.insert("soapaction", "urn:buyStocks".parse().unwrap());
        h.insert("routing", "r".parse().unwrap());
        strip_hop_by_hop(&mut h);
        let mut names: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, vec!["routing", "soapaction"]);
    }
}
