//! A response as the load generator reads it: any bytes through `parse_head`, then, for a chunked
//! body, chunk after chunk. Never a panic; a complete chunk always takes bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_bench::load::{chunk, parse_head, Framing};

fuzz_target!(|data: &[u8]| {
    let Ok(Some((_, framing, _, used))) = parse_head(data) else {
        return;
    };
    assert!(used <= data.len());
    if !matches!(framing, Framing::Chunked) {
        return;
    }
    let mut at = used;
    while let Ok(Some((size, taken))) = chunk(&data[at..]) {
        assert!(taken > size && at + taken <= data.len());
        at += taken;
        if size == 0 {
            break;
        }
    }
});
