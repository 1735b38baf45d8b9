//! `config.json` text: any input is a validated config or an error naming the
//! field; a config that passes has sizes whose products do not overflow.
#![no_main]

use engine::model::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(c) = Config::from_json(text) {
        assert_eq!(c.head_size * c.n_head, c.n_embd);
        let _ = c.n_params();
        let _ = c.attn_scale(c.n_layer - 1);
    }
});
