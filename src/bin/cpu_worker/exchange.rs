//! The buffer the CPU worker and its coworker (a second worker holding the
//! other half of every big matrix, `engine::cpu::coworker`) share: a
//! `SharedArrayBuffer`, so a product's x and the coworker's part cross
//! without a message, and each side blocks on `Atomics.wait` until the other
//! is done (a worker may block; a message would need its event loop). Only a
//! cross-origin-isolated page has `SharedArrayBuffer`.
//!
//! Layout: `ctrl` (4 × i32: state, job, floats of x, floats of the part),
//! then x `(ROWS_MAX, widest input)`, then the part `(ROWS_MAX, widest part)`.

use engine::cpu::coworker::Panels;
use engine::fast::coworker::Coworker;
use js_sys::{Atomics, Float32Array, Int32Array, Reflect, SharedArrayBuffer};
use wasm_bindgen::{JsCast, JsValue};

/// `ctrl[STATE]`: what the buffer holds now.
const STATE: u32 = 0;
const JOB: u32 = 1;
const X_LEN: u32 = 2;
const PART_LEN: u32 = 3;
const CTRL_BYTES: u32 = 16;

/// Nothing asked (the coworker sleeps).
const IDLE: i32 = 0;
/// A job's x is in place: the coworker's turn.
const ASKED: i32 = 1;
/// Its part is in place: the worker's turn.
const DONE: i32 = 2;
/// The coworker could not run the job.
const FAILED: i32 = 3;

/// How long the worker waits for a part before it takes the coworker for
/// dead and computes the rest of its products alone.
const PATIENCE_MS: f64 = 10_000.0;

pub struct Exchange {
    ctrl: Int32Array,
    x: Float32Array,
    part: Float32Array,
}

/// Whether this thread may make a `SharedArrayBuffer`.
pub fn isolated() -> bool {
    Reflect::get(&js_sys::global(), &"crossOriginIsolated".into()).is_ok_and(|v| v.is_truthy())
}

impl Exchange {
    /// A new buffer for `(x, part)` floats (the coworker makes it).
    pub fn create((x, part): (usize, usize)) -> Result<(SharedArrayBuffer, Exchange), String> {
        if !isolated() {
            return Err("the page is not cross-origin isolated (no SharedArrayBuffer)".into());
        }
        let bytes = CTRL_BYTES as usize + 4 * (x + part);
        let buffer = SharedArrayBuffer::new(bytes as u32);
        let exchange = Exchange::over(&buffer, (x, part))?;
        Ok((buffer, exchange))
    }

    /// Views of `buffer`, which must be a buffer for `(x, part)` floats.
    pub fn over(buffer: &JsValue, (x, part): (usize, usize)) -> Result<Exchange, String> {
        let buffer: &SharedArrayBuffer =
            buffer.dyn_ref().ok_or("the coworker's buffer is not a SharedArrayBuffer")?;
        let want = CTRL_BYTES as usize + 4 * (x + part);
        if buffer.byte_length() as usize != want {
            return Err(format!(
                "the coworker's buffer has {} bytes, this model needs {want}",
                buffer.byte_length()
            ));
        }
        let at = |offset: usize, len: usize| {
            Float32Array::new_with_byte_offset_and_length(buffer, offset as u32, len as u32)
        };
        Ok(Exchange {
            ctrl: Int32Array::new_with_byte_offset_and_length(buffer, 0, 4),
            x: at(CTRL_BYTES as usize, x),
            part: at(CTRL_BYTES as usize + 4 * x, part),
        })
    }

    fn get(&self, i: u32) -> i32 {
        Atomics::load(&self.ctrl, i).unwrap_or(FAILED)
    }

    fn set(&self, i: u32, v: i32) {
        let _ = Atomics::store(&self.ctrl, i, v);
    }

    /// The coworker's loop: sleep until a job is asked, run it on `panels`,
    /// hand its part back, forever (the page ends the worker).
    pub fn serve(&self, panels: &Panels) -> ! {
        loop {
            let state = self.get(STATE);
            if state != ASKED {
                // Returns at once if the state changed since it was read.
                let _ = Atomics::wait(&self.ctrl, STATE, state);
                continue;
            }
            let mut x = vec![0.0; self.get(X_LEN).max(0) as usize]; // (rows, k)
            self.x.subarray(0, x.len() as u32).copy_to(&mut x);
            let done = match panels.run(self.get(JOB).max(0) as usize, &x) {
                Ok(part) if part.len() <= self.part.length() as usize => {
                    self.part.subarray(0, part.len() as u32).copy_from(&part);
                    self.set(PART_LEN, part.len() as i32);
                    DONE
                }
                _ => FAILED,
            };
            self.set(STATE, done);
            let _ = Atomics::notify(&self.ctrl, STATE);
        }
    }
}

impl Coworker for Exchange {
    fn start(&mut self, job: usize, x: &[f32]) -> bool {
        if x.len() > self.x.length() as usize || self.get(STATE) != IDLE {
            return false;
        }
        self.x.subarray(0, x.len() as u32).copy_from(x);
        self.set(JOB, job as i32);
        self.set(X_LEN, x.len() as i32);
        self.set(STATE, ASKED);
        Atomics::notify(&self.ctrl, STATE).is_ok()
    }

    fn finish(&mut self, out: &mut [f32]) -> bool {
        let started = web_time::Instant::now();
        while self.get(STATE) == ASKED {
            let waited = started.elapsed().as_secs_f64() * 1e3;
            if waited >= PATIENCE_MS {
                return false;
            }
            let _ = Atomics::wait_with_timeout(&self.ctrl, STATE, ASKED, PATIENCE_MS - waited);
        }
        let ok = self.get(STATE) == DONE && self.get(PART_LEN) as usize == out.len();
        if ok {
            self.part.subarray(0, out.len() as u32).copy_to(out);
        }
        self.set(STATE, IDLE);
        ok
    }
}
