//! The kernel profile timed on this adapter, remembered in the browser
//! (localStorage), so a GPU's trial of the profiles runs once: per adapter,
//! model shape and weight format (a profile that wins on one shape need not
//! on another). A profile asked for by name, or the cpu profile of a software
//! adapter, is not stored: nothing was measured.

use engine::gpu::profile::{Chosen, Reason};
use engine::gpu::GpuContext;
use engine::kernels::Profile;
use engine::model::Model;

/// Where this adapter's choice for this model is kept.
pub struct Key(String);

impl Key {
    /// The key of `model` on `ctx`'s adapter.
    pub fn new(ctx: &GpuContext, model: &Model) -> Key {
        let c = &model.config;
        Key(format!(
            "decode-lab.kernels/{}/{}x{}x{}/{}",
            ctx.adapter_name(),
            c.n_layer,
            c.n_embd,
            c.vocab_size,
            model.format().name()
        ))
    }

    /// The profile timed here before, if any (and still a profile's name).
    pub fn get(&self) -> Option<Profile> {
        Profile::from_name(&storage()?.get_item(&self.0).ok()??)
    }

    /// Keeps `chosen` when it was timed here.
    pub fn keep(&self, chosen: &Chosen) {
        if chosen.reason == Reason::Timed {
            if let Some(s) = storage() {
                // A full or refused storage only means the trial runs again next time.
                let _ = s.set_item(&self.0, &chosen.profile.name());
            }
        }
    }
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}
