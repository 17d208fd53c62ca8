//! The address a WSDL gives a service's port: what a `<wsdl service port>` endpoint sends to.
//! WSDL 1.1 (`definitions/service/port/*:address/@location`) and WSDL 2.0
//! (`description/service/endpoint/@address`). Without `service` or `port` the first one.

fn elements<'a, 'i>(n: roxmltree::Node<'a, 'i>, local: &str) -> Vec<roxmltree::Node<'a, 'i>> {
    n.children()
        .filter(|c| c.is_element() && c.tag_name().name() == local)
        .collect()
}

/// The address of `port` of `service` in the WSDL `text`.
pub fn address(text: &str, service: Option<&str>, port: Option<&str>) -> Result<String, String> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: false,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opts)
        .map_err(|e| format!("the WSDL is not XML: {e}"))?;
    let root = doc.root_element();
    let named = |n: &roxmltree::Node, want: Option<&str>| {
        want.is_none_or(|w| n.attribute("name") == Some(w))
    };
    let svc = elements(root, "service")
        .into_iter()
        .find(|s| named(s, service))
        .ok_or_else(|| format!("the WSDL has no service {}", service.unwrap_or("at all")))?;
    let (port_element, wsdl2) = match root.tag_name().name() {
        "description" => ("endpoint", true),
        _ => ("port", false),
    };
    let p = elements(svc, port_element)
        .into_iter()
        .find(|p| named(p, port))
        .ok_or_else(|| {
            format!(
                "service {} has no {port_element} {}",
                svc.attribute("name").unwrap_or(""),
                port.unwrap_or("at all")
            )
        })?;
    let location = if wsdl2 {
        p.attribute("address")
    } else {
        p.children()
            .find(|c| c.is_element() && c.tag_name().name() == "address")
            .and_then(|a| a.attribute("location"))
    };
    location.map(str::to_owned).ok_or_else(|| {
        format!(
            "{port_element} {} has no address",
            p.attribute("name").unwrap_or("")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const WSDL11: &str = r#"<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:soap12="http://schemas.xmlsoap.org/wsdl/soap12/">
  <wsdl:service name="SimpleStockQuoteService">
    <wsdl:port name="SimpleStockQuoteServiceHttpSoap11Endpoint" binding="b"><soap:address location="http://localhost:9000/services/SimpleStockQuoteService.SimpleStockQuoteServiceHttpSoap11Endpoint"/></wsdl:port>
    <wsdl:port name="SimpleStockQuoteServiceHttpSoap12Endpoint" binding="b"><soap12:address location="http://localhost:9000/services/SimpleStockQuoteService.SimpleStockQuoteServiceHttpSoap12Endpoint"/></wsdl:port>
  </wsdl:service>
</wsdl:definitions>"#;

    #[test]
    fn the_port_of_the_service_gives_the_address() {
        let a = address(
            WSDL11,
            Some("SimpleStockQuoteService"),
            Some("SimpleStockQuoteServiceHttpSoap12Endpoint"),
        );
        assert_eq!(a.unwrap(), "http://localhost:9000/services/SimpleStockQuoteService.SimpleStockQuoteServiceHttpSoap12Endpoint");
        assert!(address(WSDL11, None, None)
            .unwrap()
            .ends_with("Soap11Endpoint"));
        assert!(address(WSDL11, Some("Other"), None)
            .unwrap_err()
            .contains("no service Other"));
        assert!(address(WSDL11, None, Some("P"))
            .unwrap_err()
            .contains("no port P"));
        let wsdl2 = r#"<description xmlns="http://www.w3.org/ns/wsdl"><service name="S"><endpoint name="E" address="http://h/s"/></service></description>"#;
        assert_eq!(address(wsdl2, Some("S"), Some("E")).unwrap(), "http://h/s");
        assert!(address("<!DOCTYPE x [<!ENTITY e 'x'>]><x/>", None, None).is_err());
    }
}
