//! `tokenizer.json` bytes: loading is a tokenizer or an error; a tokenizer
//! that loads encodes and decodes text without panicking.
#![no_main]

use engine::model::Tokenizer;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = Tokenizer::from_bytes(data) {
        if let Ok(ids) = t.encode("ROMEO: O, she doth teach the torches to burn bright! 🙂") {
            let _ = t.decode(&ids);
        }
        let _ = t.decode(&[0, 1, 2, u32::MAX]);
    }
});
