// A UsernameToken-over-HTTPS client built on Apache WSS4J, for Sluice's interop test
// (tests/wss4j_interop.rs): MI's "UsernameToken" security scenario (sp:TransportBinding with
// sp:HttpsToken, a Timestamp, a UsernameToken as a signed supporting token).
//
// It sends buyStocks requests over HTTPS (any server certificate taken, as a test against a
// self-signed one) with a Timestamp and a UsernameToken, its password as text and as a digest,
// checks each answer's security header with WSS4J (its Timestamp), then sends a wrong password
// and a request without a token and checks each fault code; last, the plain request with HTTP
// Basic credentials (MI's POX security), right and wrong.
//
//   java -cp 'lib/*:classes' WssUsernameToken URL USER PASSWORD
//
// Prints one line per case; exits 1 when any case did not go as it should. Posting and the
// fault checks are WssInterop's.

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import javax.xml.parsers.DocumentBuilderFactory;
import org.apache.wss4j.dom.WSConstants;
import org.apache.wss4j.dom.engine.WSSConfig;
import org.apache.wss4j.dom.engine.WSSecurityEngine;
import org.apache.wss4j.dom.handler.RequestData;
import org.apache.wss4j.dom.handler.WSHandlerResult;
import org.apache.wss4j.dom.message.WSSecHeader;
import org.apache.wss4j.dom.message.WSSecTimestamp;
import org.apache.wss4j.dom.message.WSSecUsernameToken;
import org.w3c.dom.Document;

public final class WssUsernameToken {
    static final String REQUEST =
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">"
            + "<soapenv:Header/><soapenv:Body><m:buyStocks xmlns:m=\"http://services.samples/xsd\">"
            + "<order><symbol>IBM</symbol><volume>2000</volume></order></m:buyStocks>"
            + "</soapenv:Body></soapenv:Envelope>";

    public static void main(String[] args) throws Exception {
        WSSConfig.init();
        WssInterop.url = args[0];
        String user = args[1];
        String password = args[2];
        trustAnyServer();
        good("text", user, password, WSConstants.PASSWORD_TEXT);
        good("digest", user, password, WSConstants.PASSWORD_DIGEST);
        WssInterop.expectFault("wrong-password",
            "FailedAuthentication", post(request(user, password + "x", WSConstants.PASSWORD_TEXT)));
        WssInterop.expectFault("unknown-user",
            "FailedAuthentication", post(request("nobody", password, WSConstants.PASSWORD_TEXT)));
        WssInterop.expectFault("no-token", "InvalidSecurity", post(request(null, null, null)));
        // MI's POX security: no security header, HTTP Basic credentials instead.
        basic("basic", user + ":" + password, "200");
        basic("basic-wrong-password", user + ":" + password + "x", "401");
        System.exit(WssInterop.failures == 0 ? 0 : 1);
    }

    /** A test server's self-signed certificate is taken (the check here is WS-Security's). */
    static void trustAnyServer() throws Exception {
        TrustManager[] any = {new X509TrustManager() {
            public void checkClientTrusted(X509Certificate[] c, String a) {}
            public void checkServerTrusted(X509Certificate[] c, String a) {}
            public X509Certificate[] getAcceptedIssuers() {
                return new X509Certificate[0];
            }
        }};
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(null, any, null);
        HttpsURLConnection.setDefaultSSLSocketFactory(tls.getSocketFactory());
        HttpsURLConnection.setDefaultHostnameVerifier((host, session) -> true);
    }

    /** The request with a Timestamp and, unless `user` is null, a UsernameToken. */
    static Document request(String user, String password, String type) throws Exception {
        Document doc = parse(REQUEST);
        WSSecHeader header = new WSSecHeader(doc);
        header.insertSecurityHeader();
        WSSecTimestamp ts = new WSSecTimestamp(header);
        ts.setTimeToLive(300);
        ts.build();
        if (user != null) {
            WSSecUsernameToken ut = new WSSecUsernameToken(header);
            ut.setUserInfo(user, password);
            ut.setPasswordType(type);
            if (WSConstants.PASSWORD_DIGEST.equals(type)) {
                ut.addNonce();
                ut.addCreated();
            }
            ut.build();
        }
        return doc;
    }

    static void good(String name, String user, String password, String type) throws Exception {
        String[] r = post(request(user, password, type));
        if (!r[0].equals("200")) {
            fail(name, "status " + r[0] + ": " + r[1]);
            return;
        }
        String why = checkAnswer(r[1]);
        if (why != null) {
            fail(name, why);
            return;
        }
        System.out.println(name + "\t200\tanswer's Timestamp verified");
    }

    /** Why WSS4J refuses the answer's security header, or null when its Timestamp is good. */
    static String checkAnswer(String answer) throws Exception {
        Document doc = parse(answer);
        RequestData data = new RequestData();
        data.setWssConfig(WSSConfig.getNewInstance());
        WSHandlerResult results;
        try {
            results = new WSSecurityEngine().processSecurityHeader(doc, data);
        } catch (Exception e) {
            return "WSS4J refuses the answer: " + e;
        }
        if (results == null || !results.getActionResults().containsKey(WSConstants.TS)) {
            return "the answer has no Timestamp";
        }
        if (!answer.contains("IBM")) {
            return "the answer is not the request echoed: " + answer;
        }
        return null;
    }

    static Document parse(String xml) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        return f.newDocumentBuilder()
            .parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));
    }

    /** The plain request (no security header) with Basic `credentials`: `status` is due; a 401
     * must carry a Basic challenge. */
    static void basic(String name, String credentials, String status) throws Exception {
        java.net.HttpURLConnection c =
            (java.net.HttpURLConnection) new java.net.URL(WssInterop.url).openConnection();
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setRequestProperty("Content-Type", "text/xml; charset=UTF-8");
        c.setRequestProperty("SOAPAction", "urn:buyStocks");
        c.setRequestProperty("Authorization", "Basic " + java.util.Base64.getEncoder()
            .encodeToString(credentials.getBytes(StandardCharsets.UTF_8)));
        try (java.io.OutputStream o = c.getOutputStream()) {
            o.write(REQUEST.getBytes(StandardCharsets.UTF_8));
        }
        String got = Integer.toString(c.getResponseCode());
        String challenge = c.getHeaderField("WWW-Authenticate");
        if (!got.equals(status)) {
            fail(name, "status " + got + " where " + status + " was due");
        } else if (status.equals("401") && (challenge == null || !challenge.startsWith("BASIC"))) {
            fail(name, "401 without a Basic challenge: " + challenge);
        } else {
            System.out.println(name + "\t" + got);
        }
    }

    /** POSTs `doc` (over HTTPS here): {status, body}. */
    static String[] post(Document doc) throws Exception {
        return WssInterop.post(doc);
    }

    static void fail(String name, String why) {
        WssInterop.fail(name, why);
    }
}
