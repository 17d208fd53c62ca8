//! Request payloads: WSO2's buyStocks SOAP messages, from their files or generated in the same shape.

use std::path::Path;

const HEAD: &str = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">\n\
<soapenv:Header><routing xmlns=\"http://someuri\">xadmin;server1;community#1.0##</routing></soapenv:Header>\n\
<soapenv:Body><m:buyStocks xmlns:m=\"http://services.samples/xsd\">\n";
const TAIL: &str = "</m:buyStocks></soapenv:Body></soapenv:Envelope>\n";
/// Orders after the first cycle through these, as WSO2's payload creator does.
const ORDERS: [(&str, &str, &str, &str); 4] = [
    ("SUN", "indika", "14.56", "500"),
    ("MSFT", "doe", "23.56", "8030"),
    ("IBM", "john", "140.34", "2000"),
    ("GOOG", "dilan", "60.24", "40000"),
];

fn order(out: &mut String, symbol: &str, buyer: &str, price: &str, volume: &str) {
    out.push_str("<order><symbol>");
    out.push_str(symbol);
    out.push_str("</symbol><buyerID>");
    out.push_str(buyer);
    out.push_str("</buyerID><price>");
    out.push_str(price);
    out.push_str("</price><volume>");
    out.push_str(volume);
    out.push_str("</volume></order>\n");
}

/// A buyStocks envelope of about `size` bytes (never more than `size` unless even one order does not
/// fit, then the smallest message): SOAP 1.1, the `routing` SOAP header the CBR proxies read, and
/// orders. The first order's symbol is `IBM` when `ibm` is set (the 2018 CAR's CBR regex), else `N`
/// (today's WSO2 payloads). Padding the last order's buyer keeps the size exact when it can.
pub fn generate(size: usize, ibm: bool) -> String {
    let mut s = String::with_capacity(size + 256);
    s.push_str(HEAD);
    let first = if ibm { "IBM" } else { "N" };
    order(&mut s, first, "n", "1.0", "1");
    let mut i = 0;
    loop {
        let mut next = String::new();
        let (sym, buyer, price, vol) = ORDERS[i % ORDERS.len()];
        order(&mut next, sym, buyer, price, vol);
        if s.len() + next.len() + TAIL.len() > size {
            break;
        }
        s.push_str(&next);
        i += 1;
    }
    // Pad to the exact size with a whitespace text node before the closing tags (still the same XML).
    let pad = size.saturating_sub(s.len() + TAIL.len());
    s.extend(std::iter::repeat_n(' ', pad));
    s.push_str(TAIL);
    s
}

/// The payload for `size` bytes: WSO2's own file for 1 KiB and 10 KiB when the reference folder has it
/// (`requests/current/1000B_buyStocks.xml`, `10000B_buyStocks.xml`), else generated. Returns the body
/// and where it came from.
pub fn for_size(size: usize, reference: Option<&Path>) -> (String, String) {
    let file = match size {
        1024 => Some("1000B_buyStocks.xml"),
        10240 => Some("10000B_buyStocks.xml"),
        _ => None,
    };
    if let (Some(f), Some(r)) = (file, reference) {
        let p = r.join("performance-ei/requests/current").join(f);
        if let Ok(body) = std::fs::read_to_string(&p) {
            return (body, format!("WSO2 {f}"));
        }
    }
    (generate(size, false), format!("generated {size} B"))
}

/// `1024` → `1 KiB`, `10240` → `10 KiB`, `1048576` → `1 MiB`, others in bytes.
pub fn size_label(size: usize) -> String {
    if size >= 1 << 20 && size.is_multiple_of(1 << 20) {
        format!("{} MiB", size >> 20)
    } else if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KiB", size >> 10)
    } else {
        format!("{size} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_payload_has_the_exact_size_and_shape() {
        for size in [1024, 10240, 102_400, 1 << 20] {
            let p = generate(size, false);
            assert_eq!(p.len(), size, "size {size}");
            assert!(p.starts_with("<soapenv:Envelope"));
            assert!(p.contains(
                "<routing xmlns=\"http://someuri\">xadmin;server1;community#1.0##</routing>"
            ));
            assert!(p.ends_with("</soapenv:Envelope>\n"));
            assert!(p.contains("<order><symbol>N</symbol>"));
            // Well-formed: every order closed.
            assert_eq!(p.matches("<order>").count(), p.matches("</order>").count());
            assert!(p.matches("<order>").count() > size / 150);
        }
    }

    #[test]
    fn first_symbol_is_chosen() {
        let ibm = generate(2048, true);
        let first = ibm.find("<symbol>").unwrap();
        assert_eq!(&ibm[first..first + 11], "<symbol>IBM");
        let n = generate(2048, false);
        let first = n.find("<symbol>").unwrap();
        assert_eq!(&n[first..first + 10], "<symbol>N<");
    }

    #[test]
    fn too_small_still_gives_one_order() {
        let p = generate(10, true);
        assert_eq!(p.matches("<order>").count(), 1);
        assert!(p.len() > 10);
    }

    #[test]
    fn labels() {
        assert_eq!(size_label(1024), "1 KiB");
        assert_eq!(size_label(10240), "10 KiB");
        assert_eq!(size_label(1 << 20), "1 MiB");
        assert_eq!(size_label(500), "500 B");
    }
}
