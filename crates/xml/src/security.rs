//! XML Signature and XML Encryption through xmlsec1 and its OpenSSL back-end, for WS-Security.
//!
//! The C side (`csrc/xmlsec_shim.c`) makes xmlsec's contexts and locks each operation down:
//!
//! | Rule | Why |
//! |---|---|
//! | References and cipher data only in the same document | no file or network read from a message |
//! | Only listed algorithms (C14N, RSA-SHA1/256/512, SHA-1/256/512, RSA-OAEP, RSA 1.5, AES-CBC/GCM) | no XSLT or XPath transforms in a signature |
//! | The key is always the caller's | a message never picks the key it is checked with |
//! | An ID on two elements is refused ([`Document::register_ids`]) | the element verified is the element used (wrapping attacks) |
//!
//! What WS-Security does with these (header layout, token references, policy) is the caller's.

use crate::document::{Document, Node, NodeId};
use crate::error::{Capture, XmlError, XmlErrorKind};
use libxml::bindings::{xmlDocPtr, xmlGetID, xmlNodePtr};
use std::ffi::{c_char, c_int, CStr, CString};
use std::ptr::NonNull;
use std::sync::Once;

/// Opaque `xmlSecKey`.
#[repr(C)]
struct XmlSecKey {
    _opaque: [u8; 0],
}

extern "C" {
    fn sluice_xmlsec_init() -> c_int;
    fn sluice_xmlsec_last_error() -> *const c_char;
    fn sluice_xmlsec_key(der: *const u8, len: usize, format: c_int) -> *mut XmlSecKey;
    fn sluice_xmlsec_key_destroy(key: *mut XmlSecKey);
    fn sluice_xmlsec_decrypt_key(
        node: xmlNodePtr,
        key: *mut XmlSecKey,
        out: *mut u8,
        cap: usize,
        out_len: *mut usize,
    ) -> c_int;
    fn sluice_xmlsec_decrypt(node: xmlNodePtr, key: *mut XmlSecKey) -> c_int;
    fn sluice_xmlsec_verify(node: xmlNodePtr, key: *mut XmlSecKey, valid: *mut c_int) -> c_int;
    fn sluice_xmlsec_sign(node: xmlNodePtr, key: *mut XmlSecKey) -> c_int;
    fn sluice_xmlsec_encrypt(tmpl: xmlNodePtr, target: xmlNodePtr, key: *mut XmlSecKey) -> c_int;
    fn sluice_xmlsec_encrypt_key(
        tmpl: xmlNodePtr,
        data: *const u8,
        len: usize,
        key: *mut XmlSecKey,
    ) -> c_int;
    fn sluice_xmlsec_register_ids(doc: xmlDocPtr, node: xmlNodePtr, name: *const c_char) -> c_int;
    fn sluice_x509_issuer_serial(
        der: *const u8,
        len: usize,
        issuer: *mut c_char,
        icap: usize,
        serial: *mut c_char,
        scap: usize,
    ) -> c_int;
}

/// A DER certificate's issuer (RFC 2253, as Java writes it: `CN=localhost,O=WSO2,...`) and serial
/// number (decimal): what an `X509IssuerSerial` reference names it by.
pub fn certificate_issuer_serial(der: &[u8]) -> Result<(String, String), XmlError> {
    init()?;
    let mut issuer = vec![0u8; 4096];
    let mut serial = vec![0u8; 128];
    // SAFETY: `der` is live for the call; the shim writes NUL-terminated strings of at most the
    // buffers' sizes into them and reads nothing else.
    let rc = unsafe {
        sluice_x509_issuer_serial(
            der.as_ptr(),
            der.len(),
            issuer.as_mut_ptr().cast(),
            issuer.len(),
            serial.as_mut_ptr().cast(),
            serial.len(),
        )
    };
    if rc != 0 {
        return Err(XmlError::new(
            XmlErrorKind::Security,
            "not a DER X.509 certificate",
        ));
    }
    let text = |b: &[u8]| {
        CStr::from_bytes_until_nul(b)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    Ok((text(&issuer), text(&serial)))
}

/// xmlsec1 and OpenSSL, once, after libxml2.
fn init() -> Result<(), XmlError> {
    static INIT: Once = Once::new();
    static mut OK: bool = false;
    crate::init();
    INIT.call_once(|| {
        // SAFETY: runs once, under `Once`, after libxml2's initialisation; installs xmlsec's error
        // callback (thread-local buffer in the shim) and initialises xmlsec and its OpenSSL
        // back-end. `OK` is written only here, before `call_once` returns to any caller.
        unsafe { OK = sluice_xmlsec_init() == 0 };
    });
    // SAFETY: written once above, under `Once`, which orders the write before this read.
    if unsafe { OK } {
        Ok(())
    } else {
        Err(XmlError::new(
            XmlErrorKind::Security,
            "xmlsec1 could not be initialised (a library of another version?)",
        ))
    }
}

/// Runs an xmlsec1 call with libxml2's diagnostics collected (a decrypted part that does not
/// parse is reported by libxml2, not by xmlsec): its status, 0 for success, else the error `what`
/// with the thread's last xmlsec1 reason or libxml2's first error.
fn run(what: &str, call: impl FnOnce() -> c_int) -> Result<(), XmlError> {
    let capture = Capture::start();
    let rc = call();
    let diagnostics = capture.finish();
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: the shim returns its thread-local NUL-terminated buffer, alive for the thread.
    let last = unsafe { CStr::from_ptr(sluice_xmlsec_last_error()) }.to_string_lossy();
    let reason = match diagnostics.iter().find(|d| d.is_error) {
        Some(d) if last.is_empty() || last.contains("xmlsec library function failed") => {
            d.message.trim().to_owned()
        }
        _ => last.trim().to_owned(),
    };
    let message = if reason.is_empty() {
        what.to_owned()
    } else {
        format!("{what}: {reason}")
    };
    Err(XmlError::new(XmlErrorKind::Security, message))
}

/// A key for XML Signature or XML Encryption: an RSA private key, the public key of a
/// certificate, or an AES key. Shared between threads: every operation works on its own copy
/// (xmlsec duplicates the key into its context).
pub struct SecurityKey {
    ptr: NonNull<XmlSecKey>,
}

// SAFETY: a key is never changed after it is made: operations duplicate it (for OpenSSL keys an
// atomic reference count on the EVP_PKEY, for AES a copy of its bytes), which reads it only, and
// it is freed once, by Drop, when no reference is left.
unsafe impl Send for SecurityKey {}
// SAFETY: as for Send: concurrent operations only read the key to duplicate it.
unsafe impl Sync for SecurityKey {}

impl SecurityKey {
    fn load(bytes: &[u8], format: c_int, what: &str) -> Result<SecurityKey, XmlError> {
        init()?;
        let mut ptr = std::ptr::null_mut();
        run(what, || {
            // SAFETY: `bytes` is live for the call and xmlsec copies what it keeps; a NULL result
            // is a failure.
            ptr = unsafe { sluice_xmlsec_key(bytes.as_ptr(), bytes.len(), format) };
            if ptr.is_null() {
                -1
            } else {
                0
            }
        })?;
        let ptr = NonNull::new(ptr).ok_or_else(|| XmlError::new(XmlErrorKind::Security, what))?;
        Ok(SecurityKey { ptr })
    }

    /// A private key from PKCS#8 DER (what a JKS or PKCS#12 store holds).
    pub fn private_pkcs8(der: &[u8]) -> Result<SecurityKey, XmlError> {
        SecurityKey::load(der, 0, "the private key does not load")
    }

    /// The public key of an X.509 certificate in DER.
    pub fn certificate(der: &[u8]) -> Result<SecurityKey, XmlError> {
        SecurityKey::load(der, 1, "the certificate does not load")
    }

    /// An AES key from its 16, 24 or 32 bytes.
    pub fn aes(raw: &[u8]) -> Result<SecurityKey, XmlError> {
        if ![16, 24, 32].contains(&raw.len()) {
            return Err(XmlError::new(
                XmlErrorKind::Security,
                format!("an AES key of {} bytes", raw.len()),
            ));
        }
        SecurityKey::load(raw, 2, "the AES key does not load")
    }

    fn as_ptr(&self) -> *mut XmlSecKey {
        self.ptr.as_ptr()
    }
}

impl Drop for SecurityKey {
    fn drop(&mut self) {
        // SAFETY: the key was made by the shim and is freed once, here.
        unsafe { sluice_xmlsec_key_destroy(self.ptr.as_ptr()) }
    }
}

/// The most bytes an EncryptedKey may carry (an AES-256 key is 32; HMAC keys are larger).
const MAX_CARRIED_KEY: usize = 512;

impl Document {
    /// Registers every attribute named `name` in any namespace (`Id`: `wsu:Id` and the `Id` of
    /// XML Signature and Encryption) as an ID, so that `#id` references find their element.
    /// Refused when two elements carry the same value. Run it again after a decryption: what
    /// was registered stays, the decrypted elements' IDs join.
    pub fn register_ids(&mut self, name: &str) -> Result<(), XmlError> {
        init()?;
        let name = CString::new(name)
            .map_err(|_| XmlError::new(XmlErrorKind::InvalidArgument, "NUL in an ID name"))?;
        let Some(root) = self.root_element().map(|r| r.as_ptr()) else {
            return Ok(());
        };
        // SAFETY: `root` is this document's live root element; the shim walks its subtree and
        // adds entries to the document's ID table, which `&mut self` lets it change.
        run("IDs could not be registered", || unsafe {
            sluice_xmlsec_register_ids(self.doc_ptr(), root, name.as_ptr())
        })
    }

    /// The element whose registered ID ([`Document::register_ids`]) is `id`.
    pub fn element_by_id(&self, id: &str) -> Option<Node<'_>> {
        let id = CString::new(id).ok()?;
        // SAFETY: looks `id` up in this document's ID table; the attribute found is a live node of
        // this document, and its parent its element.
        unsafe {
            let attr = xmlGetID(self.doc_ptr(), id.as_ptr().cast());
            if attr.is_null() {
                return None;
            }
            Node::from_raw((*attr).parent)
        }
    }

    /// The key an `EncryptedKey` element carries, decrypted with `key` (the recipient's private
    /// key).
    pub fn decrypt_key(
        &self,
        encrypted_key: Node<'_>,
        key: &SecurityKey,
    ) -> Result<Vec<u8>, XmlError> {
        init()?;
        let mut out = vec![0u8; MAX_CARRIED_KEY];
        let mut len = 0usize;
        // SAFETY: the node is a live element of this document (borrowed with it); `out` has
        // `MAX_CARRIED_KEY` writable bytes and the shim writes at most that many; the key is live.
        run("the encrypted key could not be decrypted", || unsafe {
            sluice_xmlsec_decrypt_key(
                encrypted_key.as_ptr(),
                key.as_ptr(),
                out.as_mut_ptr(),
                out.len(),
                &mut len,
            )
        })?;
        out.truncate(len);
        Ok(out)
    }

    /// Decrypts the `EncryptedData` element `encrypted_data` with `key`, which it is replaced by
    /// (an element, or the content of the element it was in).
    pub fn decrypt(&mut self, encrypted_data: NodeId, key: &SecurityKey) -> Result<(), XmlError> {
        init()?;
        let node = self.element(encrypted_data)?;
        // SAFETY: `node` is a live element of this document, which `&mut self` lets the shim
        // change (it replaces the node; no handle to it can exist); the key is live.
        run("the encrypted data could not be decrypted", || unsafe {
            sluice_xmlsec_decrypt(node, key.as_ptr())
        })
    }

    /// Whether the `Signature` element `signature` holds for `key` (the signer's public key):
    /// every reference's digest and the signature value. `Err` when it cannot be checked at all
    /// (an algorithm or reference that is not allowed, a reference to no element).
    pub fn verify_signature(
        &self,
        signature: Node<'_>,
        key: &SecurityKey,
    ) -> Result<bool, XmlError> {
        init()?;
        let mut valid: c_int = 0;
        // SAFETY: the node is a live element of this document; verifying reads the tree only; the
        // key is live; `valid` is written once.
        run("the signature could not be checked", || unsafe {
            sluice_xmlsec_verify(signature.as_ptr(), key.as_ptr(), &mut valid)
        })?;
        Ok(valid == 1)
    }

    /// Signs the `Signature` template `signature` (SignedInfo, its references, empty DigestValue
    /// and SignatureValue) in place with `key` (a private key).
    pub fn sign(&mut self, signature: NodeId, key: &SecurityKey) -> Result<(), XmlError> {
        init()?;
        let node = self.element(signature)?;
        // SAFETY: `node` is a live element of this document, which `&mut self` lets the shim fill
        // in; the key is live.
        run("the signature could not be made", || unsafe {
            sluice_xmlsec_sign(node, key.as_ptr())
        })
    }

    /// Encrypts `target` with `key` into the `EncryptedData` template `template` (its `Type`
    /// says whether the element or its content), which is moved from wherever it stands to take
    /// the encrypted part's place (it is removed when encryption fails).
    pub fn encrypt(
        &mut self,
        template: NodeId,
        target: NodeId,
        key: &SecurityKey,
    ) -> Result<(), XmlError> {
        init()?;
        let (tmpl, target) = (self.element(template)?, self.element(target)?);
        // SAFETY: both are live elements of this document, which `&mut self` lets the shim
        // change; the key is live.
        run("the data could not be encrypted", || unsafe {
            sluice_xmlsec_encrypt(tmpl, target, key.as_ptr())
        })
    }

    /// Encrypts `data` (a key's bytes) with `key` (the recipient's public key) into the
    /// `EncryptedKey` template `template`.
    pub fn encrypt_key(
        &mut self,
        template: NodeId,
        data: &[u8],
        key: &SecurityKey,
    ) -> Result<(), XmlError> {
        init()?;
        let tmpl = self.element(template)?;
        // SAFETY: `tmpl` is a live element of this document, which `&mut self` lets the shim
        // fill in; `data` is live for the call; the key is live.
        run("the key could not be encrypted", || unsafe {
            sluice_xmlsec_encrypt_key(tmpl, data.as_ptr(), data.len(), key.as_ptr())
        })
    }

    /// The live node behind `id`, which must be an element of this document.
    fn element(&self, id: NodeId) -> Result<xmlNodePtr, XmlError> {
        self.find(id).ok_or_else(|| {
            XmlError::new(
                XmlErrorKind::InvalidArgument,
                "the node is not an element of this document",
            )
        })
    }
}
