// A WS-Security client built on Apache WSS4J, for Sluice's interop test (tests/wss4j_interop.rs).
//
// It secures buyStocks requests as WSO2's SecureProxy policy asks (Timestamp, Body signed with
// RSA-SHA1 and exclusive C14N, the signer's certificate as a BinarySecurityToken, Body content
// encrypted with a fresh AES-256 key sent RSA-OAEP-encrypted to the service's certificate), sends
// them, and checks each answer with WSS4J (decryption, signature, Timestamp, SignatureConfirmation
// of the request's signature value). Then it sends tampered requests and checks each fault code.
//
//   java -cp 'lib/*:classes' WssInterop URL SERVICE_JKS OTHER_JKS COUNT [sign-only]
//
// With sign-only, the service's policy signs only: COUNT requests signed (not encrypted), each
// answer checked as signed and in the clear, then one with a changed signature.
//
// SERVICE_JKS: the service's store (wso2carbon, password wso2carbon), whose key also signs the
// good requests; OTHER_JKS: a store of keys the service does not trust (Synapse's sample
// store.jks, alias alice, password password). Prints one line per case; exits 1 when any case
// did not go as it should.

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamResult;
import org.apache.wss4j.common.crypto.Crypto;
import org.apache.wss4j.common.crypto.CryptoFactory;
import org.apache.wss4j.dom.WSConstants;
import org.apache.wss4j.dom.engine.WSSConfig;
import org.apache.wss4j.dom.engine.WSSecurityEngineResult;
import org.apache.wss4j.dom.handler.WSHandlerResult;
import org.apache.wss4j.dom.message.WSSecHeader;
import org.apache.wss4j.dom.message.WSSecSignature;
import org.apache.wss4j.dom.message.WSSecTimestamp;
import org.apache.wss4j.dom.message.token.SignatureConfirmation;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

public final class WssInterop {
    static final String SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/";
    static final String XENC = "http://www.w3.org/2001/04/xmlenc#";
    static final String DS = "http://www.w3.org/2000/09/xmldsig#";
    static final String REQUEST =
        "<soapenv:Envelope xmlns:soapenv=\"" + SOAP11 + "\"><soapenv:Header/><soapenv:Body>"
            + "<m:buyStocks xmlns:m=\"http://services.samples/xsd\"><order><symbol>IBM</symbol>"
            + "<buyerID>asankha</buyerID><price>140.34</price><volume>2000</volume></order>"
            + "</m:buyStocks></soapenv:Body></soapenv:Envelope>";

    static String url;
    static Crypto service;
    static Crypto other;
    static int failures;
    /** Whether requests are encrypted and answers must be (not with a sign-only policy). */
    static boolean encrypt = true;

    public static void main(String[] args) throws Exception {
        WSSConfig.init();
        url = args[0];
        service = crypto(args[1], "wso2carbon");
        other = crypto(args[2], "password");
        int count = Integer.parseInt(args[3]);
        if (args.length > 4 && args[4].equals("sign-only")) {
            // A policy that signs only: nothing encrypted either way.
            encrypt = false;
            for (int i = 1; i <= count; i++) {
                good("sign-only-" + i, WSConstants.BST_DIRECT_REFERENCE);
            }
            tampered("signature-changed", "FailedCheck", s -> flipText(s.doc, DS, "SignatureValue"));
            System.exit(failures == 0 ? 0 : 1);
        }
        for (int i = 1; i <= count; i++) {
            good("fresh-" + i, WSConstants.BST_DIRECT_REFERENCE);
        }
        // WSS4J's default reference to the signer: issuer and serial number.
        good("issuer-serial", WSConstants.ISSUER_SERIAL);
        tampered("body-flipped", "FailedCheck", s -> flipCipher(s.doc, "Body"));
        tampered("signature-changed", "FailedCheck", s -> flipText(s.doc, DS, "SignatureValue"));
        tampered("wrapped", "FailedCheck", s -> wrap(s.doc));
        expired();
        otherCa();
        System.exit(failures == 0 ? 0 : 1);
    }

    static Crypto crypto(String file, String password) throws Exception {
        Properties p = new Properties();
        p.put("org.apache.wss4j.crypto.provider", "org.apache.wss4j.common.crypto.Merlin");
        p.put("org.apache.wss4j.crypto.merlin.keystore.type", "jks");
        p.put("org.apache.wss4j.crypto.merlin.keystore.password", password);
        p.put("org.apache.wss4j.crypto.merlin.keystore.file", file);
        return CryptoFactory.getInstance(p);
    }

    /** A request secured as the policy asks, and what its checks of the answer need. */
    static final class Secured {
        Document doc;
        byte[] signatureValue;
    }

    static Secured secure(Crypto signer, String alias, String password, Instant now)
            throws Exception {
        return secure(signer, alias, password, now, WSConstants.BST_DIRECT_REFERENCE);
    }

    static Secured secure(Crypto signer, String alias, String password, Instant now, int reference)
            throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        Document doc = f.newDocumentBuilder()
            .parse(new ByteArrayInputStream(REQUEST.getBytes(StandardCharsets.UTF_8)));
        WSSecHeader header = new WSSecHeader(doc);
        header.insertSecurityHeader();
        WSSecTimestamp ts = new WSSecTimestamp(header);
        ts.setTimeToLive(300);
        if (now != null) {
            ts.setWsTimeSource(() -> now);
        }
        ts.build();
        WSSecSignature sign = Wss.sign(header, signer, alias, password, reference, ts.getId());
        Secured s = new Secured();
        s.doc = doc;
        s.signatureValue = sign.getSignatureValue();
        if (!encrypt) {
            return s;
        }
        Wss.encryptBody(header, service, "wso2carbon", WSConstants.THUMBPRINT_IDENTIFIER);
        return s;
    }

    /** A fresh request: answered 200, and the answer passes WSS4J's checks. */
    static void good(String name, int reference) throws Exception {
        Secured s = secure(service, "wso2carbon", "wso2carbon", null, reference);
        String[] r = post(s.doc);
        if (!r[0].equals("200")) {
            fail(name, "status " + r[0] + ": " + r[1]);
            return;
        }
        String why = checkAnswer(r[1], s.signatureValue);
        if (why != null) {
            fail(name, why);
            return;
        }
        System.out.println(name + "\t200\tanswer verified");
    }

    /** Why WSS4J refuses an answer, or null when it takes it and it confirms `sent`. */
    static String checkAnswer(String answer, byte[] sent) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        Document doc = f.newDocumentBuilder()
            .parse(new ByteArrayInputStream(answer.getBytes(StandardCharsets.UTF_8)));
        WSHandlerResult results;
        try {
            results = Wss.process(doc, service, "wso2carbon");
        } catch (Exception e) {
            return "WSS4J refuses the answer: " + e;
        }
        if (results == null) {
            return "the answer has no security header";
        }
        for (int action : new int[] {WSConstants.ENCR, WSConstants.SIGN, WSConstants.TS}) {
            boolean due = action != WSConstants.ENCR || encrypt;
            if (due != results.getActionResults().containsKey(action)) {
                return "the answer " + (due ? "lacks" : "has") + " action " + action;
            }
        }
        List<WSSecurityEngineResult> sc = results.getActionResults().get(WSConstants.SC);
        if (sc == null || sc.isEmpty()) {
            return "the answer has no SignatureConfirmation";
        }
        SignatureConfirmation c = (SignatureConfirmation)
            sc.get(0).get(WSSecurityEngineResult.TAG_SIGNATURE_CONFIRMATION);
        if (!Arrays.equals(c.getSignatureValue(), sent)) {
            return "the SignatureConfirmation is not of the request's signature";
        }
        String body = doc.getElementsByTagNameNS(SOAP11, "Body").item(0).getTextContent();
        if (!body.contains("IBM")) {
            return "the decrypted answer is not the request echoed: " + body;
        }
        return null;
    }

    interface Change {
        void apply(Secured s) throws Exception;
    }

    /** A good request changed after it was secured: refused with `code`. */
    static void tampered(String name, String code, Change change) throws Exception {
        Secured s = secure(service, "wso2carbon", "wso2carbon", null);
        change.apply(s);
        expectFault(name, code, post(s.doc));
    }

    /** A request whose Timestamp expired long ago (created in 2020, five minutes to live). */
    static void expired() throws Exception {
        Secured s = secure(service, "wso2carbon", "wso2carbon", Instant.parse("2020-01-01T00:00:00Z"));
        expectFault("expired", "MessageExpired", post(s.doc));
    }

    /** A request signed with a key the service does not trust. */
    static void otherCa() throws Exception {
        Secured s = secure(other, "alice", "password", null);
        expectFault("other-ca", "FailedAuthentication", post(s.doc));
    }

    static void expectFault(String name, String code, String[] r) {
        if (r[0].equals("500") && r[1].contains("wsse:" + code)) {
            System.out.println(name + "\t500\twsse:" + code);
        } else {
            fail(name, "status " + r[0] + " where wsse:" + code + " was due: " + r[1]);
        }
    }

    static void fail(String name, String why) {
        failures++;
        System.out.println(name + "\tFAILED\t" + why);
    }

    /** One character changed in the CipherValue of the EncryptedData inside `parent`. */
    static void flipCipher(Document doc, String parent) {
        Element p = (Element) doc.getElementsByTagNameNS(SOAP11, parent).item(0);
        Element cv = (Element) p.getElementsByTagNameNS(XENC, "CipherValue").item(0);
        cv.setTextContent(flipAt(cv.getTextContent(), 40));
    }

    static void flipText(Document doc, String ns, String local) {
        Element e = (Element) doc.getElementsByTagNameNS(ns, local).item(0);
        e.setTextContent(flipAt(e.getTextContent(), 20));
    }

    static String flipAt(String s, int at) {
        char c = s.charAt(at) == 'A' ? 'B' : 'A';
        return s.substring(0, at) + c + s.substring(at + 1);
    }

    /** The signed Body moved into a header wrapper, an attacker's Body in its place. */
    static void wrap(Document doc) {
        Element envelope = doc.getDocumentElement();
        Element header = (Element) doc.getElementsByTagNameNS(SOAP11, "Header").item(0);
        Element body = (Element) doc.getElementsByTagNameNS(SOAP11, "Body").item(0);
        Element wrapper = doc.createElementNS("urn:wrapper", "w:Wrapper");
        header.appendChild(wrapper);
        wrapper.appendChild(body);
        Element evil = doc.createElementNS(SOAP11, "soapenv:Body");
        Element sell = doc.createElementNS("urn:evil", "e:sellEverything");
        evil.appendChild(sell);
        envelope.appendChild(evil);
    }

    /** POSTs `doc`: {status, body}. */
    static String[] post(Document doc) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        TransformerFactory.newInstance().newTransformer()
            .transform(new DOMSource(doc), new StreamResult(out));
        HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setRequestProperty("Content-Type", "text/xml; charset=UTF-8");
        c.setRequestProperty("SOAPAction", "urn:buyStocks");
        try (OutputStream o = c.getOutputStream()) {
            o.write(out.toByteArray());
        }
        int status = c.getResponseCode();
        InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream();
        String body = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
        return new String[] {Integer.toString(status), body};
    }

}
