/*
 * XML Signature and XML Encryption through xmlsec1 (OpenSSL back-end), for the Rust layer in
 * src/security.rs.
 *
 * xmlsec's contexts are structs whose layout depends on its build flags (XMLSEC_NO_SIZE_T and
 * others that pkg-config gives): they are made and read here, where the compiler sees those
 * flags, and Rust sees only opaque keys and libxml2 nodes.
 *
 * Every operation is locked down the same way: references and cipher data only inside the same
 * document (no file, no network), and only the algorithms listed below (no XSLT or XPath
 * transforms, no retrieval methods). Keys are given by the caller, never looked up from KeyInfo.
 *
 * Errors: each function returns 0 on success and -1 on failure; the thread's last xmlsec error is
 * kept by the callback below and read with sluice_xmlsec_last_error().
 */
#include <stdio.h>
#include <string.h>

#include <libxml/tree.h>
#include <libxml/valid.h>
#include <xmlsec/xmlsec.h>
#include <xmlsec/xmltree.h>
#include <xmlsec/xmldsig.h>
#include <xmlsec/xmlenc.h>
#include <xmlsec/templates.h>
#include <xmlsec/crypto.h>
#include <xmlsec/errors.h>
#include <xmlsec/openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/bn.h>

static __thread char last_error[512];

static void record_error(const char *file, int line, const char *func, const char *object,
                         const char *subject, int reason, const char *msg) {
    (void) file;
    (void) line;
    (void) reason;
    /* The first error of an operation is the cause; the ones after it are its callers'. */
    if (last_error[0] != '\0')
        return;
    snprintf(last_error, sizeof(last_error), "%s%s%s%s%s",
             msg != NULL ? msg : "",
             subject != NULL ? " (" : "", subject != NULL ? subject : "",
             subject != NULL ? ")" : "",
             func != NULL && msg == NULL ? func : "");
    (void) object;
}

const char *sluice_xmlsec_last_error(void) {
    return last_error;
}

void sluice_xmlsec_clear_error(void) {
    last_error[0] = '\0';
}

/* Called once, after libxml2 is initialised (Rust's Once). */
int sluice_xmlsec_init(void) {
    if (xmlSecInit() < 0)
        return -1;
    if (xmlSecCheckVersion() != 1)
        return -1;
    if (xmlSecCryptoAppInit(NULL) < 0)
        return -1;
    if (xmlSecCryptoInit() < 0)
        return -1;
    /* Last: the initialisations install the default (printing) callback. */
    xmlSecErrorsSetCallback(record_error);
    return 0;
}

/* The public key of a DER certificate, without the certificate: xmlsec duplicates a key for
 * every operation, and a certificate kept in it would be copied each time (through OpenSSL 3's
 * decoders, costlier than the RSA operation itself). */
static xmlSecKeyPtr public_key_of(const unsigned char *der, size_t len) {
    const unsigned char *p = der;
    X509 *cert = d2i_X509(NULL, &p, (long) len);
    EVP_PKEY *pkey;
    xmlSecKeyDataPtr data;
    xmlSecKeyPtr key;
    if (cert == NULL) {
        snprintf(last_error, sizeof(last_error), "not a DER X.509 certificate");
        return NULL;
    }
    pkey = X509_get_pubkey(cert);
    X509_free(cert);
    if (pkey == NULL)
        return NULL;
    data = xmlSecOpenSSLEvpKeyAdopt(pkey);
    if (data == NULL) {
        EVP_PKEY_free(pkey);
        return NULL;
    }
    key = xmlSecKeyCreate();
    if (key == NULL || xmlSecKeySetValue(key, data) < 0) {
        xmlSecKeyDataDestroy(data);
        if (key != NULL)
            xmlSecKeyDestroy(key);
        return NULL;
    }
    return key;
}

/* A key from DER bytes: format 0 a PKCS#8 private key, 1 a certificate (its public key), 2 an
 * AES key's raw bytes. */
xmlSecKeyPtr sluice_xmlsec_key(const unsigned char *der, size_t len, int format) {
    switch (format) {
    case 0:
        /* Plain DER: OpenSSL reads an unencrypted PKCS#8 PrivateKeyInfo this way (the PKCS#8
         * formats are for encrypted ones). */
        return xmlSecCryptoAppKeyLoadMemory(der, (xmlSecSize) len, xmlSecKeyDataFormatDer,
                                            NULL, NULL, NULL);
    case 1:
        return public_key_of(der, len);
    case 2:
        return xmlSecKeyReadMemory(xmlSecKeyDataAesId, der, (xmlSecSize) len);
    default:
        return NULL;
    }
}

void sluice_xmlsec_key_destroy(xmlSecKeyPtr key) {
    if (key != NULL)
        xmlSecKeyDestroy(key);
}

/* The algorithms an encryption context may run (xmlsec keeps its classes in a list of
 * non-const pointers; it never writes through them). */
static int enable_cipher_transforms(xmlSecPtrListPtr list) {
    xmlSecTransformId ids[] = {xmlSecTransformBase64Id,     xmlSecTransformRsaOaepId,
                               xmlSecTransformRsaPkcs1Id,   xmlSecTransformAes128CbcId,
                               xmlSecTransformAes192CbcId,  xmlSecTransformAes256CbcId,
                               xmlSecTransformAes128GcmId,  xmlSecTransformAes256GcmId,
                               xmlSecTransformSha1Id,       xmlSecTransformSha256Id};
    size_t i;
    for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        if (xmlSecPtrListAdd(list, (xmlSecPtr) ids[i]) < 0)
            return -1;
    return 0;
}

static xmlSecEncCtxPtr cipher_context(xmlSecKeyPtr key, xmlEncCtxMode mode) {
    xmlSecEncCtxPtr ctx = xmlSecEncCtxCreate(NULL);
    if (ctx == NULL)
        return NULL;
    ctx->mode = mode;
    ctx->encKey = xmlSecKeyDuplicate(key);
    ctx->transformCtx.enabledUris = xmlSecTransformUriTypeEmpty | xmlSecTransformUriTypeSameDocument;
    if (ctx->encKey == NULL || enable_cipher_transforms(&ctx->transformCtx.enabledTransforms) < 0) {
        xmlSecEncCtxDestroy(ctx);
        return NULL;
    }
    return ctx;
}

/* Decrypts an EncryptedKey element with `key` (the recipient's private key): the carried key's
 * bytes into out[0..cap], their length in *out_len. */
int sluice_xmlsec_decrypt_key(xmlNodePtr node, xmlSecKeyPtr key, unsigned char *out, size_t cap,
                              size_t *out_len) {
    xmlSecBufferPtr result;
    xmlSecEncCtxPtr ctx;
    int rc = -1;
    sluice_xmlsec_clear_error();
    ctx = cipher_context(key, xmlEncCtxModeEncryptedKey);
    if (ctx == NULL)
        return -1;
    result = xmlSecEncCtxDecryptToBuffer(ctx, node);
    if (result != NULL) {
        size_t n = xmlSecBufferGetSize(result);
        if (n <= cap) {
            memcpy(out, xmlSecBufferGetData(result), n);
            *out_len = n;
            rc = 0;
        } else {
            snprintf(last_error, sizeof(last_error), "the encrypted key is %zu bytes, more than %zu",
                     n, cap);
        }
    }
    xmlSecEncCtxDestroy(ctx);
    return rc;
}

/* Decrypts an EncryptedData element with `key`, replacing it with what it holds. */
int sluice_xmlsec_decrypt(xmlNodePtr node, xmlSecKeyPtr key) {
    int rc = -1;
    xmlSecEncCtxPtr ctx;
    sluice_xmlsec_clear_error();
    ctx = cipher_context(key, xmlEncCtxModeEncryptedData);
    if (ctx == NULL)
        return -1;
    if (xmlSecEncCtxDecrypt(ctx, node) == 0 && ctx->result != NULL) {
        if (ctx->resultReplaced)
            rc = 0;
        else
            snprintf(last_error, sizeof(last_error), "the encrypted data is neither an element nor content");
    }
    xmlSecEncCtxDestroy(ctx);
    return rc;
}

/* The algorithms a signature may use, in SignedInfo and in its references. */
static int enable_signature_transforms(xmlSecDSigCtxPtr ctx) {
    xmlSecTransformId sig[] = {xmlSecTransformExclC14NId, xmlSecTransformExclC14NWithCommentsId,
                               xmlSecTransformInclC14NId, xmlSecTransformRsaSha1Id,
                               xmlSecTransformRsaSha256Id, xmlSecTransformRsaSha512Id};
    xmlSecTransformId ref[] = {xmlSecTransformExclC14NId, xmlSecTransformExclC14NWithCommentsId,
                               xmlSecTransformInclC14NId, xmlSecTransformEnvelopedId,
                               xmlSecTransformSha1Id, xmlSecTransformSha256Id,
                               xmlSecTransformSha512Id};
    size_t i;
    for (i = 0; i < sizeof(sig) / sizeof(sig[0]); i++)
        if (xmlSecDSigCtxEnableSignatureTransform(ctx, sig[i]) < 0)
            return -1;
    for (i = 0; i < sizeof(ref) / sizeof(ref[0]); i++)
        if (xmlSecDSigCtxEnableReferenceTransform(ctx, ref[i]) < 0)
            return -1;
    return 0;
}

static xmlSecDSigCtxPtr signature_context(xmlSecKeyPtr key) {
    xmlSecDSigCtxPtr ctx = xmlSecDSigCtxCreate(NULL);
    if (ctx == NULL)
        return NULL;
    ctx->signKey = xmlSecKeyDuplicate(key);
    ctx->enabledReferenceUris = xmlSecTransformUriTypeSameDocument;
    if (ctx->signKey == NULL || enable_signature_transforms(ctx) < 0) {
        xmlSecDSigCtxDestroy(ctx);
        return NULL;
    }
    return ctx;
}

/* Verifies a Signature element with `key` (the signer's public key): *valid 1 when every
 * reference's digest and the signature value hold, else 0. */
int sluice_xmlsec_verify(xmlNodePtr node, xmlSecKeyPtr key, int *valid) {
    int rc = -1;
    xmlSecDSigCtxPtr ctx;
    sluice_xmlsec_clear_error();
    ctx = signature_context(key);
    if (ctx == NULL)
        return -1;
    if (xmlSecDSigCtxVerify(ctx, node) == 0) {
        *valid = ctx->status == xmlSecDSigStatusSucceeded;
        rc = 0;
    }
    xmlSecDSigCtxDestroy(ctx);
    return rc;
}

/* Signs a Signature template (SignedInfo with its references, empty DigestValue and
 * SignatureValue) in place with `key`. */
int sluice_xmlsec_sign(xmlNodePtr node, xmlSecKeyPtr key) {
    int rc;
    xmlSecDSigCtxPtr ctx;
    sluice_xmlsec_clear_error();
    ctx = signature_context(key);
    if (ctx == NULL)
        return -1;
    rc = xmlSecDSigCtxSign(ctx, node) == 0 ? 0 : -1;
    xmlSecDSigCtxDestroy(ctx);
    return rc;
}

/* Encrypts `target` (its content when `content` is 1, else the element) with an EncryptedData
 * template `tmpl` and `key`; the template takes the target's place. */
int sluice_xmlsec_encrypt(xmlNodePtr tmpl, xmlNodePtr target, xmlSecKeyPtr key) {
    int rc;
    xmlSecEncCtxPtr ctx;
    sluice_xmlsec_clear_error();
    /* The template may stand anywhere in the document: it is taken out first, and put in the
     * target's place (or as its content) by xmlsec, or freed when that fails. */
    xmlUnlinkNode(tmpl);
    ctx = cipher_context(key, xmlEncCtxModeEncryptedData);
    if (ctx == NULL) {
        xmlFreeNode(tmpl);
        return -1;
    }
    rc = xmlSecEncCtxXmlEncrypt(ctx, tmpl, target) == 0 ? 0 : -1;
    if (rc != 0 && tmpl->parent == NULL)
        xmlFreeNode(tmpl);
    xmlSecEncCtxDestroy(ctx);
    return rc;
}

/* Encrypts `data` (a key's bytes) into the EncryptedKey template `tmpl` with `key` (the
 * recipient's public key). */
int sluice_xmlsec_encrypt_key(xmlNodePtr tmpl, const unsigned char *data, size_t len,
                              xmlSecKeyPtr key) {
    int rc;
    xmlSecEncCtxPtr ctx;
    sluice_xmlsec_clear_error();
    ctx = cipher_context(key, xmlEncCtxModeEncryptedKey);
    if (ctx == NULL)
        return -1;
    rc = xmlSecEncCtxBinaryEncrypt(ctx, tmpl, data, (xmlSecSize) len) == 0 ? 0 : -1;
    xmlSecEncCtxDestroy(ctx);
    return rc;
}

/* Registers every attribute named `name` (in any namespace: wsu:Id and Id) below `node` as an ID
 * of its document, so that `#id` references find their element; one registered before is passed
 * over (so that it can run again after a decryption). -1 when two elements carry the same value:
 * a reference must name exactly one element. */
int sluice_xmlsec_register_ids(xmlDocPtr doc, xmlNodePtr node, const char *name) {
    xmlNodePtr cur = node;
    sluice_xmlsec_clear_error();
    while (cur != NULL) {
        if (cur->type == XML_ELEMENT_NODE) {
            xmlAttrPtr attr;
            for (attr = cur->properties; attr != NULL; attr = attr->next) {
                if (xmlStrEqual(attr->name, (const xmlChar *) name)) {
                    xmlChar *value = xmlNodeListGetString(doc, attr->children, 1);
                    if (value == NULL)
                        continue;
                    xmlAttrPtr known = xmlGetID(doc, value);
                    if (known == attr) {
                        xmlFree(value);
                        continue;
                    }
                    if (known != NULL) {
                        snprintf(last_error, sizeof(last_error), "the ID %s is on two elements",
                                 (const char *) value);
                        xmlFree(value);
                        return -1;
                    }
                    if (xmlAddID(NULL, doc, value, attr) == NULL) {
                        xmlFree(value);
                        return -1;
                    }
                    xmlFree(value);
                }
            }
            if (cur->children != NULL) {
                cur = cur->children;
                continue;
            }
        }
        while (cur != NULL && cur->next == NULL && cur != node)
            cur = cur->parent;
        if (cur == NULL || cur == node)
            break;
        cur = cur->next;
    }
    return 0;
}

/* The issuer (RFC 2253, as Java's X500Principal writes it) and the serial number (decimal) of a DER
 * certificate, for IssuerSerial references; -1 when it is no certificate or a buffer is short. */
int sluice_x509_issuer_serial(const unsigned char *der, size_t len, char *issuer, size_t icap,
                              char *serial, size_t scap) {
    const unsigned char *p = der;
    X509 *cert = d2i_X509(NULL, &p, (long) len);
    BIO *bio;
    BIGNUM *bn;
    char *dec;
    int n, rc = -1;
    if (cert == NULL)
        return -1;
    bio = BIO_new(BIO_s_mem());
    bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
    dec = bn != NULL ? BN_bn2dec(bn) : NULL;
    if (bio != NULL && dec != NULL && strlen(dec) < scap &&
        X509_NAME_print_ex(bio, X509_get_issuer_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
        n = BIO_read(bio, issuer, (int) icap - 1);
        if (n >= 0 && (size_t) n < icap - 1) {
            issuer[n] = '\0';
            strcpy(serial, dec);
            rc = 0;
        }
    }
    OPENSSL_free(dec);
    BN_free(bn);
    BIO_free(bio);
    X509_free(cert);
    return rc;
}
