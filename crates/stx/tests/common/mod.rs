//! Shared helpers: libxslt (through sluice-xml) as the reference.

#![allow(dead_code)]

use sluice_xml::{canonicalize, Document, Stylesheet};
use std::path::PathBuf;

pub fn perf_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/wso2-perf/performance-ei")
}

pub fn read(rel: &str) -> Vec<u8> {
    let p = perf_dir().join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// libxslt's serialised output, `None` when the input does not parse or the transform fails.
pub fn reference(sheet: &Stylesheet, input: &[u8]) -> Option<Vec<u8>> {
    let d = Document::parse(input).ok()?;
    sheet.transform_to_bytes(&d, &[]).ok()
}

/// Canonical form of a serialised document, `None` when it does not parse as one.
pub fn c14n(bytes: &[u8]) -> Option<Vec<u8>> {
    let d = Document::parse(bytes).ok()?;
    canonicalize(&d).ok()
}

pub fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A small deterministic PRNG (xorshift64*), so the generated cases are the same on every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() >> 33) as usize % n
    }

    /// True with probability `pct` percent.
    pub fn pct(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }

    pub fn pick<'x, T>(&mut self, items: &'x [T]) -> &'x T {
        &items[self.below(items.len())]
    }
}
