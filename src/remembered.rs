//! The page's memory of timed kernel choices: the browser's localStorage, so
//! a GPU's trial of the profiles runs once per adapter, model shape, weight
//! format and build of the kernels (the rules and the key are
//! `engine::kernels::choose`'s, tested natively). A full or refused storage
//! only means the trial runs again next time.

use engine::gpu::profile::Memory;

/// localStorage, as the chooser's [`Memory`].
pub struct LocalStorage;

impl Memory for LocalStorage {
    fn get(&self, key: &str) -> Option<String> {
        storage()?.get_item(key).ok()?
    }

    fn set(&self, key: &str, value: &str) {
        if let Some(s) = storage() {
            let _ = s.set_item(key, value);
        }
    }
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}
