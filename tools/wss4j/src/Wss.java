// What Sluice's WSS4J tools share: processing a message's security header with one store.

import javax.crypto.KeyGenerator;
import javax.security.auth.callback.Callback;
import org.apache.wss4j.common.WSEncryptionPart;
import org.apache.wss4j.common.crypto.Crypto;
import org.apache.wss4j.common.ext.WSPasswordCallback;
import org.apache.wss4j.dom.engine.WSSConfig;
import org.apache.wss4j.dom.engine.WSSecurityEngine;
import org.apache.wss4j.dom.handler.RequestData;
import org.apache.wss4j.dom.WSConstants;
import org.apache.wss4j.dom.handler.WSHandlerResult;
import org.apache.wss4j.dom.message.WSSecEncrypt;
import org.apache.wss4j.dom.message.WSSecHeader;
import org.apache.wss4j.dom.message.WSSecSignature;
import org.w3c.dom.Document;

final class Wss {
    static final String SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/";

    private Wss() {}

    /** Signs the Body and the Timestamp `timestampId` with `alias`'s key (RSA-SHA1, SHA-1
     *  digests, exclusive C14N: policy_3's and WSO2's Basic256), naming it by `reference`. */
    static WSSecSignature sign(WSSecHeader header, Crypto store, String alias, String password,
            int reference, String timestampId) throws Exception {
        WSSecSignature sign = new WSSecSignature(header);
        sign.setUserInfo(alias, password);
        sign.setKeyIdentifierType(reference);
        sign.setSignatureAlgorithm(WSConstants.RSA_SHA1);
        sign.setDigestAlgo(WSConstants.SHA1);
        sign.setSigCanonicalization(WSConstants.C14N_EXCL_OMIT_COMMENTS);
        sign.getParts().add(new WSEncryptionPart("Body", SOAP11, ""));
        sign.getParts().add(new WSEncryptionPart(timestampId));
        sign.build(store);
        return sign;
    }

    /** Encrypts the Body's content with a fresh AES-256 key sent RSA-OAEP-encrypted to `alias`,
     *  named by `reference`. */
    static void encryptBody(WSSecHeader header, Crypto store, String alias, int reference)
            throws Exception {
        WSSecEncrypt enc = new WSSecEncrypt(header);
        enc.setUserInfo(alias);
        enc.setKeyIdentifierType(reference);
        enc.setSymmetricEncAlgorithm(WSConstants.AES_256);
        enc.setKeyEncAlgo(WSConstants.KEYTRANSPORT_RSAOAEP);
        enc.getParts().add(new WSEncryptionPart("Body", SOAP11, "Content"));
        KeyGenerator keys = KeyGenerator.getInstance("AES");
        keys.init(256);
        enc.build(store, keys.generateKey());
    }

    /** WSS4J's processing of `doc`'s security header: `store` decrypts and verifies, every key
     *  opened with `password`. Null when there is no header. */
    static WSHandlerResult process(Document doc, Crypto store, String password) throws Exception {
        RequestData data = new RequestData();
        data.setWssConfig(WSSConfig.getNewInstance());
        data.setDecCrypto(store);
        data.setSigVerCrypto(store);
        data.setCallbackHandler(callbacks -> {
            for (Callback c : callbacks) {
                ((WSPasswordCallback) c).setPassword(password);
            }
        });
        return new WSSecurityEngine().processSecurityHeader(doc, data);
    }
}
