// A secured stock quote service built on Apache WSS4J, for Sluice's interop test of WS-Security
// towards back-ends (tests/wss4j_interop.rs, Synapse's samples 100 and 432). It plays Synapse's
// SecureStockQuoteService as its Rampart policy (policy_3.xml) has it: a request must carry a
// Timestamp, a signature (the signer's certificate as a BinarySecurityToken, trusted because the
// store holds it) and an encrypted Body, and is opened with whichever key of the store it names;
// the answer is signed by alice (subject key identifier) and its Body encrypted to bob (subject
// key identifier, AES-256, RSA-OAEP), with a Timestamp, as Rampart's recipient answers.
//
//   java -cp 'lib/*:classes' SecureStockQuotePeer STORE_JKS
//
// STORE_JKS holds alice and bob (password "password" for the store and both keys). Prints
// "listening PORT" on 127.0.0.1, then one line per request it takes or refuses; stops when its
// standard input closes.
//
// The request's first payload element's text picks what the answer is (to drive the caller's
// error paths): "clear" answers in the clear, "wsse-fault" with an unsecured wsse:InvalidSecurity
// fault, "tampered" with a secured answer whose encrypted Body was changed; anything else gets
// the secured getQuoteResponse, which names the request's payload element. Requests to a path
// ending in /SimpleStockQuoteService get a plain, dearer quote (sample 156's second service).

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamResult;
import org.apache.wss4j.common.crypto.Crypto;
import org.apache.wss4j.common.crypto.CryptoFactory;
import org.apache.wss4j.dom.WSConstants;
import org.apache.wss4j.dom.engine.WSSConfig;
import org.apache.wss4j.dom.handler.WSHandlerResult;
import org.apache.wss4j.dom.message.WSSecHeader;
import org.apache.wss4j.dom.message.WSSecTimestamp;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

public final class SecureStockQuotePeer {
    static final String SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/";
    static final String XENC = "http://www.w3.org/2001/04/xmlenc#";
    static Crypto store;

    public static void main(String[] args) throws Exception {
        WSSConfig.init();
        Properties p = new Properties();
        p.put("org.apache.wss4j.crypto.provider", "org.apache.wss4j.common.crypto.Merlin");
        p.put("org.apache.wss4j.crypto.merlin.keystore.type", "jks");
        p.put("org.apache.wss4j.crypto.merlin.keystore.password", "password");
        p.put("org.apache.wss4j.crypto.merlin.keystore.file", args[0]);
        store = CryptoFactory.getInstance(p);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", SecureStockQuotePeer::serve);
        server.start();
        System.out.println("listening " + server.getAddress().getPort());
        System.out.flush();
        // Until the caller closes our standard input.
        while (System.in.read() >= 0) {
        }
        server.stop(0);
        System.exit(0);
    }

    static void serve(HttpExchange x) {
        try {
            byte[] request = x.getRequestBody().readAllBytes();
            Document doc = parse(request);
            // SimpleStockQuoteService beside it (sample 156): plain, and a dearer quote.
            if (x.getRequestURI().getPath().endsWith("/SimpleStockQuoteService")) {
                Element payload = firstElement(body(doc));
                String name = payload == null ? "" : payload.getLocalName();
                System.out.println("plain\t" + name);
                answer(x, 200, quote(name, "150.00"));
                return;
            }
            String why = check(doc);
            if (why != null) {
                System.out.println("refused\t" + why);
                answer(x, 500, fault("wsse:InvalidSecurity", why));
                return;
            }
            Element payload = firstElement(body(doc));
            String name = payload == null ? "" : payload.getLocalName();
            String mode = payload == null ? "" : payload.getTextContent().trim();
            System.out.println("taken\t" + name);
            switch (mode) {
                case "clear":
                    answer(x, 200, serialize(parse(quote(name).getBytes(StandardCharsets.UTF_8))));
                    return;
                case "wsse-fault":
                    answer(x, 500, fault("wsse:InvalidSecurity", "refused on purpose"));
                    return;
                default:
                    Document out = parse(quote(name).getBytes(StandardCharsets.UTF_8));
                    secure(out);
                    if (mode.equals("tampered")) {
                        Element cv = (Element) body(out).getElementsByTagNameNS(XENC, "CipherValue").item(0);
                        String t = cv.getTextContent();
                        char c = t.charAt(40) == 'A' ? 'B' : 'A';
                        cv.setTextContent(t.substring(0, 40) + c + t.substring(41));
                    }
                    answer(x, 200, serialize(out));
            }
        } catch (Exception e) {
            System.out.println("error\t" + e);
            try {
                answer(x, 500, fault("soapenv:Server", String.valueOf(e)));
            } catch (Exception ignored) {
                x.close();
            }
        } finally {
            System.out.flush();
        }
    }

    /** Why the request fails policy_3 as Rampart checks it, or null. */
    static String check(Document doc) {
        WSHandlerResult results;
        try {
            results = Wss.process(doc, store, "password");
        } catch (Exception e) {
            return "WSS4J refuses it: " + e.getMessage();
        }
        if (results == null) {
            return "no security header";
        }
        for (int action : new int[] {WSConstants.TS, WSConstants.SIGN, WSConstants.ENCR, WSConstants.BST}) {
            if (!results.getActionResults().containsKey(action)) {
                return "no result for WSS4J action " + action;
            }
        }
        return null;
    }

    /** Timestamp, alice's signature over Body and Timestamp, the Body's content to bob. */
    static void secure(Document doc) throws Exception {
        WSSecHeader header = new WSSecHeader(doc);
        header.insertSecurityHeader();
        WSSecTimestamp ts = new WSSecTimestamp(header);
        ts.setTimeToLive(300);
        ts.build();
        Wss.sign(header, store, "alice", "password", WSConstants.SKI_KEY_IDENTIFIER, ts.getId());
        Wss.encryptBody(header, store, "bob", WSConstants.SKI_KEY_IDENTIFIER);
    }

    static String quote(String received) {
        return quote(received, "140.34");
    }

    static String quote(String received, String last) {
        return "<soapenv:Envelope xmlns:soapenv=\"" + SOAP11 + "\"><soapenv:Body>"
            + "<ns:getQuoteResponse xmlns:ns=\"http://services.samples\"><ns:return>"
            + "<ns:symbol>IBM</ns:symbol><ns:last>" + last + "</ns:last>"
            + "<ns:received>" + received + "</ns:received>"
            + "</ns:return></ns:getQuoteResponse></soapenv:Body></soapenv:Envelope>";
    }

    static String fault(String code, String why) {
        String text = why.replace("&", "&amp;").replace("<", "&lt;");
        return "<soapenv:Envelope xmlns:soapenv=\"" + SOAP11 + "\"><soapenv:Body><soapenv:Fault"
            + " xmlns:wsse=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd\">"
            + "<faultcode>" + code + "</faultcode><faultstring>" + text + "</faultstring>"
            + "</soapenv:Fault></soapenv:Body></soapenv:Envelope>";
    }

    static Document parse(byte[] bytes) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        return f.newDocumentBuilder().parse(new ByteArrayInputStream(bytes));
    }

    static Element body(Document doc) {
        return (Element) doc.getElementsByTagNameNS(SOAP11, "Body").item(0);
    }

    static Element firstElement(Element e) {
        for (org.w3c.dom.Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element) {
                return (Element) n;
            }
        }
        return null;
    }

    static String serialize(Document doc) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        TransformerFactory.newInstance().newTransformer()
            .transform(new DOMSource(doc), new StreamResult(out));
        return out.toString(StandardCharsets.UTF_8);
    }

    static void answer(HttpExchange x, int status, String body) throws Exception {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        x.getResponseHeaders().set("Content-Type", "text/xml; charset=UTF-8");
        x.sendResponseHeaders(status, bytes.length);
        try (OutputStream o = x.getResponseBody()) {
            o.write(bytes);
        }
    }
}
