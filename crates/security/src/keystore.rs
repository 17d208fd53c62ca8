//! Key stores, as MI's `[keystore.primary]` and `[truststore]` name them: Java KeyStores (JKS,
//! `wso2carbon.jks`) read here, and PKCS#12 (`.p12`, `.pfx`, Java's default store type since 9)
//! through the `p12-keystore` crate, so that a user's key store works as it is (no `keytool`
//! conversion first). [`KeyStore::read`] tells them apart by their first bytes.
//!
//! The JKS format (Sun's `JavaKeyStore`, versions 1 and 2): the magic `FEEDFEED`, a version, a count,
//! then each entry: a tag (1 a private key, 2 a trusted certificate), its alias (Java's modified
//! UTF-8), a time, and either the protected key with its certificate chain or one certificate.
//! The last 20 bytes are the SHA-1 of the store password (UTF-16BE), the words
//! `Mighty Aphrodite`, and everything before. A private key is a PKCS#8 `PrivateKeyInfo` XORed
//! with a SHA-1 key stream from the key password and a 20-byte salt, followed by the SHA-1 of the
//! password and the plain key (Sun's `KeyProtector`).
//!
//! A PKCS#12 store is opened whole with its password (its MAC checked, its keys decrypted: PBES2
//! with AES as Java 17 and OpenSSL 3 write them, or the legacy 3DES and RC2 schemes); a key
//! password, which PKCS#12 stores share with the store in Java and MI, is then not asked again.
//! Its trusted certificates are those Java marks as trusted (what `keytool -importcert` writes).

use ring::digest::{Context, SHA1_FOR_LEGACY_USE_ONLY as SHA1};

/// A key store's entries.
#[derive(Debug, Default)]
pub struct KeyStore {
    pub keys: Vec<PrivateKeyEntry>,
    pub trusted: Vec<TrustedEntry>,
}

/// A private key and its certificate chain (the key's own first), each certificate DER.
#[derive(Debug)]
pub struct PrivateKeyEntry {
    pub alias: String,
    /// [`PrivateKeyEntry::key`] opens it.
    protected: Protected,
    pub chain: Vec<Vec<u8>>,
}

/// A private key as its store holds it.
#[derive(Debug)]
enum Protected {
    /// Still under Sun's protection: opened with the key password.
    Jks(Vec<u8>),
    /// PKCS#8 DER, decrypted when the PKCS#12 store was opened with its password.
    Open(Vec<u8>),
}

/// A trusted certificate, DER.
#[derive(Debug)]
pub struct TrustedEntry {
    pub alias: String,
    pub cert: Vec<u8>,
}

/// Why a key store or a key could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum KeyStoreError {
    /// Not a JKS file (a PKCS#12 one starts with a DER sequence instead).
    NotJks,
    /// Cut short or malformed at this byte.
    Malformed(usize),
    /// The store's digest does not match: a wrong store password, or the file was changed.
    Integrity,
    /// The key's check does not match: a wrong key password.
    KeyPassword,
    /// The key (or a PKCS#12 store's MAC) is protected by an algorithm Sluice does not read (a
    /// JCEKS store).
    KeyAlgorithm,
    /// A PKCS#12 store that is malformed, or holds what Sluice does not read.
    Pkcs12,
}

impl std::fmt::Display for KeyStoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyStoreError::NotJks => write!(f, "neither a JKS nor a PKCS#12 key store"),
            KeyStoreError::Malformed(at) => write!(f, "malformed key store at byte {at}"),
            KeyStoreError::Integrity => {
                write!(
                    f,
                    "the key store's password is wrong, or the file was changed"
                )
            }
            KeyStoreError::KeyPassword => write!(f, "the key's password is wrong"),
            KeyStoreError::KeyAlgorithm => {
                write!(
                    f,
                    "the key is protected by an algorithm Sluice does not read"
                )
            }
            KeyStoreError::Pkcs12 => write!(f, "a malformed or unsupported PKCS#12 key store"),
        }
    }
}

impl std::error::Error for KeyStoreError {}

/// The OID of Sun's JKS key protection, 1.3.6.1.4.1.42.2.17.1.1, DER-encoded.
const KEY_PROTECTOR: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x2a, 0x02, 0x11, 0x01, 0x01];

/// A password as Java hashes it: each UTF-16 unit big-endian.
fn utf16be(password: &str) -> Vec<u8> {
    password.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

/// Reads through a key store's bytes.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], KeyStoreError> {
        let out = self
            .b
            .get(
                self.at
                    ..self
                        .at
                        .checked_add(n)
                        .ok_or(KeyStoreError::Malformed(self.at))?,
            )
            .ok_or(KeyStoreError::Malformed(self.at))?;
        self.at += n;
        Ok(out)
    }

    fn u16(&mut self) -> Result<u16, KeyStoreError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, KeyStoreError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// `u32` length, then that many bytes.
    fn bytes(&mut self) -> Result<&'a [u8], KeyStoreError> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    /// Java's `writeUTF`: a `u16` length, then modified UTF-8 (read as UTF-8; aliases are ASCII
    /// in practice).
    fn utf(&mut self) -> Result<String, KeyStoreError> {
        let n = usize::from(self.u16()?);
        let at = self.at;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| KeyStoreError::Malformed(at))
    }

    /// A certificate: in version 2 its type's name first.
    fn cert(&mut self, version: u32) -> Result<Vec<u8>, KeyStoreError> {
        if version == 2 {
            self.utf()?;
        }
        Ok(self.bytes()?.to_vec())
    }
}

impl KeyStore {
    /// Whether a store `type` as MI names it (`JKS`, `PKCS12`; none given: JKS) is read here.
    pub fn reads_type(kind: Option<&str>) -> bool {
        kind.is_none_or(|k| k.eq_ignore_ascii_case("JKS") || k.eq_ignore_ascii_case("PKCS12"))
    }

    /// Reads a JKS or a PKCS#12 store (told apart by their first bytes) with `password`.
    pub fn read(b: &[u8], password: &str) -> Result<KeyStore, KeyStoreError> {
        match b.first() {
            // A DER SEQUENCE: PKCS#12's PFX.
            Some(0x30) => KeyStore::read_pkcs12(b, password),
            _ => KeyStore::read_jks(b, password),
        }
    }

    /// Reads a PKCS#12 store, checking its MAC and opening its keys with `password`.
    pub fn read_pkcs12(b: &[u8], password: &str) -> Result<KeyStore, KeyStoreError> {
        use p12_keystore::{error::Error, KeyStoreEntry};
        let opened = p12_keystore::KeyStore::from_pkcs12(b, password).map_err(|e| match e {
            Error::MacError(_) => KeyStoreError::Integrity,
            Error::UnpadError | Error::Pkcs5Error(_) => KeyStoreError::KeyPassword,
            Error::UnsupportedEncryptionScheme | Error::UnsupportedMacAlgorithm => {
                KeyStoreError::KeyAlgorithm
            }
            _ => KeyStoreError::Pkcs12,
        })?;
        let mut store = KeyStore::default();
        for (alias, entry) in opened.entries() {
            match entry {
                KeyStoreEntry::PrivateKeyChain(k) => store.keys.push(PrivateKeyEntry {
                    alias: alias.clone(),
                    protected: Protected::Open(k.key().to_vec()),
                    chain: k.chain().iter().map(|c| c.as_der().to_vec()).collect(),
                }),
                KeyStoreEntry::Certificate(c) => store.trusted.push(TrustedEntry {
                    alias: alias.clone(),
                    cert: c.as_der().to_vec(),
                }),
                KeyStoreEntry::Secret(_) => {}
            }
        }
        Ok(store)
    }

    /// Reads a JKS store, checking its digest with `password`.
    pub fn read_jks(b: &[u8], password: &str) -> Result<KeyStore, KeyStoreError> {
        if b.len() < 12 + 20 || b[..4] != [0xfe, 0xed, 0xfe, 0xed] {
            return Err(KeyStoreError::NotJks);
        }
        let (body, digest) = b.split_at(b.len() - 20);
        let mut check = Context::new(&SHA1);
        check.update(&utf16be(password));
        check.update(b"Mighty Aphrodite");
        check.update(body);
        if check.finish().as_ref() != digest {
            return Err(KeyStoreError::Integrity);
        }
        let mut r = Reader { b: body, at: 4 };
        let version = r.u32()?;
        if version != 1 && version != 2 {
            return Err(KeyStoreError::NotJks);
        }
        let count = r.u32()?;
        let mut store = KeyStore::default();
        for _ in 0..count {
            let at = r.at;
            let tag = r.u32()?;
            let alias = r.utf()?;
            r.take(8)?; // when it was added
            match tag {
                1 => {
                    let protected = r.bytes()?.to_vec();
                    let n = r.u32()?;
                    let chain = (0..n).map(|_| r.cert(version)).collect::<Result<_, _>>()?;
                    store.keys.push(PrivateKeyEntry {
                        alias,
                        protected: Protected::Jks(protected),
                        chain,
                    });
                }
                2 => {
                    let cert = r.cert(version)?;
                    store.trusted.push(TrustedEntry { alias, cert });
                }
                _ => return Err(KeyStoreError::Malformed(at)),
            }
        }
        if r.at != body.len() {
            return Err(KeyStoreError::Malformed(r.at));
        }
        Ok(store)
    }

    /// Every certificate the store vouches for, as WSS4J's Merlin reads a store: its trusted
    /// certificates and its keys' own.
    pub fn certificates(&self) -> Vec<Vec<u8>> {
        let keys = self.keys.iter().filter_map(|k| k.chain.first().cloned());
        self.trusted
            .iter()
            .map(|t| t.cert.clone())
            .chain(keys)
            .collect()
    }

    /// Every certificate with its alias: each key's own, then the trusted ones.
    pub fn named_certificates(&self) -> Vec<(String, Vec<u8>)> {
        let keys =
            (self.keys.iter()).filter_map(|k| Some((k.alias.clone(), k.chain.first()?.clone())));
        keys.chain(
            self.trusted
                .iter()
                .map(|t| (t.alias.clone(), t.cert.clone())),
        )
        .collect()
    }

    /// The certificate named `alias`: a key's own, else a trusted one.
    pub fn certificate(&self, alias: &str) -> Option<Vec<u8>> {
        self.key(alias)
            .and_then(|k| k.chain.first().cloned())
            .or_else(|| {
                (self.trusted.iter())
                    .find(|t| t.alias.eq_ignore_ascii_case(alias))
                    .map(|t| t.cert.clone())
            })
    }

    /// The private key entry named `alias` (Java's aliases are compared without case).
    pub fn key(&self, alias: &str) -> Option<&PrivateKeyEntry> {
        self.keys
            .iter()
            .find(|k| k.alias.eq_ignore_ascii_case(alias))
    }
}

impl PrivateKeyEntry {
    /// The key as PKCS#8 DER, opened with `password` (a PKCS#12 store's keys are open already).
    pub fn key(&self, password: &str) -> Result<Vec<u8>, KeyStoreError> {
        let protected = match &self.protected {
            Protected::Jks(p) => p,
            Protected::Open(pkcs8) => return Ok(pkcs8.clone()),
        };
        let sealed = protected_bytes(protected)?;
        if sealed.len() < 40 {
            return Err(KeyStoreError::Malformed(0));
        }
        let (salt, rest) = sealed.split_at(20);
        let (encrypted, check) = rest.split_at(rest.len() - 20);
        let password = utf16be(password);
        let mut key = Vec::with_capacity(encrypted.len());
        let mut block = salt.to_vec();
        for chunk in encrypted.chunks(20) {
            let mut d = Context::new(&SHA1);
            d.update(&password);
            d.update(&block);
            block = d.finish().as_ref().to_vec();
            key.extend(chunk.iter().zip(&block).map(|(c, k)| c ^ k));
        }
        let mut d = Context::new(&SHA1);
        d.update(&password);
        d.update(&key);
        if d.finish().as_ref() != check {
            return Err(KeyStoreError::KeyPassword);
        }
        Ok(key)
    }
}

/// The encrypted bytes of an `EncryptedPrivateKeyInfo` (a SEQUENCE of the algorithm's SEQUENCE
/// and an OCTET STRING), when the algorithm is Sun's.
fn protected_bytes(der: &[u8]) -> Result<&[u8], KeyStoreError> {
    let (outer, _) = der_item(der, 0x30)?;
    let (alg, rest) = der_item(outer, 0x30)?;
    let (oid, _) = der_item(alg, 0x06)?;
    if oid != KEY_PROTECTOR {
        return Err(KeyStoreError::KeyAlgorithm);
    }
    Ok(der_item(rest, 0x04)?.0)
}

/// The contents of the DER item with `tag` at the start of `b`, and what follows it.
fn der_item(b: &[u8], tag: u8) -> Result<(&[u8], &[u8]), KeyStoreError> {
    let bad = KeyStoreError::Malformed(0);
    if b.first() != Some(&tag) {
        return Err(bad);
    }
    let first = *b.get(1).ok_or(KeyStoreError::Malformed(1))?;
    let (len, head) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return Err(bad);
        }
        let digits = b.get(2..2 + n).ok_or(KeyStoreError::Malformed(2))?;
        (
            digits
                .iter()
                .fold(0usize, |a, d| (a << 8) | usize::from(*d)),
            2 + n,
        )
    };
    let end = head
        .checked_add(len)
        .ok_or(KeyStoreError::Malformed(head))?;
    let item = b.get(head..end).ok_or(KeyStoreError::Malformed(head))?;
    Ok((item, &b[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wso2carbon() -> Vec<u8> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
        std::fs::read(root.join("shared/reference/wso2-perf/keystores/wso2carbon.jks"))
            .expect("../shared/reference/wso2-perf/keystores/wso2carbon.jks")
    }

    /// WSO2's own store: its key opens with `wso2carbon`, is the RSA key of the first
    /// certificate of its chain (a signature made with it verifies with the certificate), and the
    /// trusted certificates are all there.
    #[test]
    fn wso2carbon_jks_opens_and_its_key_matches_its_certificate() {
        let store = KeyStore::read_jks(&wso2carbon(), "wso2carbon").unwrap();
        assert_eq!(store.keys.len() + store.trusted.len(), 37);
        let entry = store.key("WSO2CARBON").expect("the wso2carbon key");
        assert!(!entry.chain.is_empty());
        let pkcs8 = entry.key("wso2carbon").unwrap();
        let pair = ring::signature::RsaKeyPair::from_pkcs8(&pkcs8).expect("an RSA key");
        let mut sig = vec![0; pair.public().modulus_len()];
        let rng = ring::rand::SystemRandom::new();
        pair.sign(
            &ring::signature::RSA_PKCS1_SHA256,
            &rng,
            b"sluice",
            &mut sig,
        )
        .unwrap();
        let der = rustls::pki_types::CertificateDer::from(entry.chain[0].as_slice());
        let cert = webpki::EndEntityCert::try_from(&der).expect("an X.509 certificate");
        cert.verify_signature(webpki::ring::RSA_PKCS1_2048_8192_SHA256, b"sluice", &sig)
            .expect("the key is the certificate's");
    }

    #[test]
    fn wrong_passwords_and_changed_bytes_are_refused() {
        let bytes = wso2carbon();
        assert_eq!(
            KeyStore::read_jks(&bytes, "nope").unwrap_err(),
            KeyStoreError::Integrity
        );
        let mut changed = bytes.clone();
        changed[100] ^= 1;
        assert_eq!(
            KeyStore::read_jks(&changed, "wso2carbon").unwrap_err(),
            KeyStoreError::Integrity
        );
        let store = KeyStore::read_jks(&bytes, "wso2carbon").unwrap();
        assert_eq!(
            store.key("wso2carbon").unwrap().key("nope").unwrap_err(),
            KeyStoreError::KeyPassword
        );
        assert_eq!(
            KeyStore::read_jks(b"\x30\x82\x01\x00 a PKCS#12 file, not JKS...", "x").unwrap_err(),
            KeyStoreError::NotJks
        );
    }

    /// wso2carbon.jks converted by `keytool` ([`crate::testing::keytool_pkcs12`]).
    fn pkcs12_by_keytool(legacy: bool) -> Vec<u8> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
        let jks = root.join("shared/reference/wso2-perf/keystores/wso2carbon.jks");
        let out =
            std::env::temp_dir().join(format!("sluice-p12-{}-{legacy}.p12", std::process::id()));
        crate::testing::keytool_pkcs12(&jks, "wso2carbon", &out, legacy);
        let bytes = std::fs::read(&out).unwrap();
        let _ = std::fs::remove_file(&out);
        bytes
    }

    /// The same store as PKCS#12 holds the same key, chain and trusted certificates; a wrong
    /// password or a changed byte is refused.
    #[test]
    fn a_pkcs12_store_made_by_keytool_opens_as_its_jks_does() {
        let jks = KeyStore::read(&wso2carbon(), "wso2carbon").unwrap();
        let want = jks.key("wso2carbon").unwrap();
        let mut trusted: Vec<&Vec<u8>> = jks.trusted.iter().map(|t| &t.cert).collect();
        trusted.sort();
        for legacy in [false, true] {
            let bytes = pkcs12_by_keytool(legacy);
            let p12 = KeyStore::read(&bytes, "wso2carbon").unwrap();
            let got = p12.key("wso2carbon").expect("the wso2carbon key");
            assert_eq!(got.chain, want.chain, "legacy: {legacy}");
            assert_eq!(
                got.key("ignored").unwrap(),
                want.key("wso2carbon").unwrap(),
                "legacy: {legacy}"
            );
            let mut p12_trusted: Vec<&Vec<u8>> = p12.trusted.iter().map(|t| &t.cert).collect();
            p12_trusted.sort();
            assert_eq!(p12_trusted, trusted, "legacy: {legacy}");
            assert_eq!(
                KeyStore::read(&bytes, "nope").unwrap_err(),
                KeyStoreError::Integrity
            );
            let mut changed = bytes.clone();
            let at = changed.len() / 2;
            changed[at] ^= 1;
            assert!(KeyStore::read(&changed, "wso2carbon").is_err());
        }
    }
}
