//! Where a model's files come from: a folder address (`model=`: the bundled
//! model, a Hub repository, a course server, or `local-models/NAME/` for
//! files picked on this computer and kept in Cache Storage). The loader asks
//! it for a file's bytes by name, `None` when the folder lacks it, so every
//! check and message after that is shared.

use crate::load::cache::{evict, fetch_optional, head};

/// Where files picked in the Model menu are kept (Cache Storage):
/// `local-models/NAME/`, NAME being the picked folder's name (or `picked`
/// for loose files).
pub const LOCAL_PREFIX: &str = "local-models/";

/// The files of one model folder.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSource {
    /// A base address ending in `/` ([`contract::model_base`]).
    pub base: String,
}

impl ModelSource {
    /// Files picked on this computer (kept in this browser's Cache Storage).
    pub fn is_local(&self) -> bool {
        self.base.starts_with(LOCAL_PREFIX)
    }

    /// In words, for the header and for errors.
    pub fn label(&self) -> String {
        match self.base.strip_prefix(LOCAL_PREFIX) {
            Some(name) => format!("your folder {}", name.trim_end_matches('/')),
            None => self.base.clone(),
        }
    }

    /// Where `name` is, for messages.
    pub fn place(&self, name: &str) -> String {
        format!("{}{name}", self.base)
    }

    /// The bytes of `name`, `None` when the folder does not have it;
    /// `progress(loaded, total)` as they arrive. In the page's memory: for
    /// the small files.
    pub async fn get(
        &self,
        name: &str,
        progress: impl Fn(u64, Option<u64>),
    ) -> Result<Option<Vec<u8>>, String> {
        Ok(self.get_array(name, progress).await?.map(|bytes| bytes.to_vec()))
    }

    /// [`get`](Self::get), the bytes left in a JavaScript array outside the
    /// WebAssembly memory (`model.safetensors`, read a tensor at a time).
    pub async fn get_array(
        &self,
        name: &str,
        progress: impl Fn(u64, Option<u64>),
    ) -> Result<Option<js_sys::Uint8Array>, String> {
        fetch_optional(&self.place(name), progress).await
    }

    /// Whether the folder has `name` (nothing is downloaded), and its size
    /// in bytes when the server says.
    pub async fn size(&self, name: &str) -> Result<Option<Option<u64>>, String> {
        head(&self.place(name)).await
    }

    /// Whether `name` is in this browser's Cache Storage already (no download needed).
    pub async fn cached(&self, name: &str) -> bool {
        crate::load::cache::cached(&self.place(name)).await
    }

    /// Drops cached copies of `names` (after they turned out unusable), so a
    /// retry fetches them again. Picked files are kept: a retry could not
    /// fetch them again, and the message says which file to fix.
    pub async fn forget(&self, names: &[&str]) {
        if self.is_local() {
            return;
        }
        for name in names {
            evict(&self.place(name)).await;
        }
    }
}
