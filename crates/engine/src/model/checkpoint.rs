//! A safetensors file read a tensor at a time: its header parsed and checked
//! first, then each tensor's bytes read when the loader asks for them. A
//! file in memory (a test's or the fuzzer's bytes) lends its own bytes; a
//! file on disk (the CLI) or in a JavaScript array outside the WebAssembly
//! memory (the page's download, the CPU worker's copy) is read one tensor
//! into its own buffer, so a load holds the model and one tensor's bytes,
//! never a second copy of the whole file (a 124M f16 checkpoint: 249 MB).

use std::borrow::Cow;
use std::ops::Range;

use safetensors::tensor::{Metadata, TensorInfo};
use safetensors::SafeTensorError;

use crate::error::{EngineError, Result};

/// A safetensors file's bytes, wherever they are.
pub trait FileBytes {
    /// The file's length in bytes.
    fn size(&self) -> u64;

    /// Bytes `range` of the file (within [`size`](Self::size)) into `out`
    /// (as long as `range`): read straight into memory that keeps them.
    fn read_into(&self, range: Range<u64>, out: &mut [u8]) -> Result<()>;

    /// Bytes `range` of the file (within [`size`](Self::size)): borrowed where
    /// the whole file is in memory, else read into their own buffer.
    fn read(&self, range: Range<u64>) -> Result<Cow<'_, [u8]>> {
        let mut out = vec![0; (range.end - range.start) as usize];
        self.read_into(range, &mut out)?;
        Ok(Cow::Owned(out))
    }
}

impl FileBytes for &[u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_into(&self, range: Range<u64>, out: &mut [u8]) -> Result<()> {
        out.copy_from_slice(&self[range.start as usize..range.end as usize]);
        Ok(())
    }

    fn read(&self, range: Range<u64>) -> Result<Cow<'_, [u8]>> {
        Ok(Cow::Borrowed(&self[range.start as usize..range.end as usize]))
    }
}

/// The longest header accepted: the safetensors crate's own limit.
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// One safetensors file: its checked header and where its bytes are.
pub struct Checkpoint<'a> {
    metadata: Metadata,
    /// Where the tensors' data starts: after the length and the header.
    start: u64,
    bytes: &'a dyn FileBytes,
}

impl<'a> Checkpoint<'a> {
    /// The file's header, checked as the safetensors crate checks a whole
    /// file (every tensor's offsets follow on from the last and fit its
    /// dtype and shape; the data ends where the file does), before any
    /// tensor is read.
    pub fn open(bytes: &'a dyn FileBytes) -> Result<Checkpoint<'a>> {
        let bad = |e: SafeTensorError| EngineError::Safetensors(e.to_string());
        let len = bytes.size();
        if len < 8 {
            return Err(bad(SafeTensorError::HeaderTooSmall));
        }
        let n = match <[u8; 8]>::try_from(bytes.read(0..8)?.as_ref()) {
            Ok(n) => u64::from_le_bytes(n),
            Err(_) => return Err(bad(SafeTensorError::HeaderTooSmall)),
        };
        if n > MAX_HEADER_BYTES {
            return Err(bad(SafeTensorError::HeaderTooLarge));
        }
        let start = 8 + n;
        if start > len {
            return Err(bad(SafeTensorError::InvalidHeaderLength));
        }
        let header = bytes.read(8..start)?;
        let text =
            std::str::from_utf8(&header).map_err(|e| bad(SafeTensorError::InvalidHeader(e)))?;
        // Deserialising checks the offsets, dtypes and shapes (`Metadata::validate`).
        let metadata: Metadata = serde_json::from_str(text)
            .map_err(|e| bad(SafeTensorError::InvalidHeaderDeserialization(e)))?;
        if start.checked_add(metadata.data_len() as u64) != Some(len) {
            return Err(bad(SafeTensorError::MetadataIncompleteBuffer));
        }
        Ok(Checkpoint { metadata, start, bytes })
    }

    /// The dtype, shape and offsets of the tensor stored under `name`.
    pub fn info(&self, name: &str) -> Option<&TensorInfo> {
        self.metadata.info(name)
    }

    /// The bytes of tensor `info` (one of this file's).
    pub fn data(&self, info: &TensorInfo) -> Result<Cow<'a, [u8]>> {
        self.bytes.read(self.range(info))
    }

    /// The bytes of tensor `info` (one of this file's) into `out`, as long.
    pub fn data_into(&self, info: &TensorInfo, out: &mut [u8]) -> Result<()> {
        self.bytes.read_into(self.range(info), out)
    }

    /// Where tensor `info`'s bytes are in the file.
    fn range(&self, info: &TensorInfo) -> Range<u64> {
        let (from, to) = info.data_offsets;
        self.start + from as u64..self.start + to as u64
    }
}

/// A file on disk, each range read when asked for (the CLI's checkpoints).
pub struct OnDisk {
    file: std::sync::Mutex<std::fs::File>,
    len: u64,
    path: std::path::PathBuf,
}

impl OnDisk {
    /// The regular file at `path`, of at most `max_bytes` (see [`super::read`]).
    pub fn open(path: &std::path::Path, max_bytes: u64) -> Result<OnDisk> {
        let len = super::checked_len(path, max_bytes)?;
        let file = std::fs::File::open(path).map_err(|e| super::io_error(path, e))?;
        Ok(OnDisk { file: file.into(), len, path: path.to_path_buf() })
    }
}

impl FileBytes for OnDisk {
    fn size(&self) -> u64 {
        self.len
    }

    fn read_into(&self, range: Range<u64>, out: &mut [u8]) -> Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // A file cut short after its header was read: an error, not a crash.
        file.seek(SeekFrom::Start(range.start))
            .and_then(|_| file.read_exact(out))
            .map_err(|e| super::io_error(&self.path, e))
    }
}

/// A file's bytes in a JavaScript `Uint8Array`, outside the WebAssembly
/// memory (a page's download, the file handed to the CPU worker): each range
/// read is copied in, so the memory holds the model and one tensor's bytes.
pub struct JsBytes(pub js_sys::Uint8Array);

impl FileBytes for JsBytes {
    fn size(&self) -> u64 {
        self.0.length().into()
    }

    fn read_into(&self, range: Range<u64>, out: &mut [u8]) -> Result<()> {
        // Within the array's length (the loader reads only inside `size`),
        // which a u32 holds.
        let (from, to) = (range.start as u32, range.end as u32);
        self.0.subarray(from, to).copy_to(out);
        Ok(())
    }
}
