//! The buffer the CPU worker and its coworker (a second worker holding the
//! other half of every big matrix, `engine::cpu::coworker`) share: a
//! `SharedArrayBuffer`, so a product's x and the coworker's part cross
//! without a message, and each side blocks on `Atomics.wait` until the other
//! is done (a worker may block; a message would need its event loop). Only a
//! cross-origin-isolated page has `SharedArrayBuffer`.
//!
//! Layout: `ctrl` (8 × i32: state, job, floats of x, floats of the part,
//! then a model variant's code), then x `(ROWS_MAX, widest input)`, then
//! the part `(ROWS_MAX, widest part)`.

use engine::cpu::coworker::{self, Panels};
use engine::fast::coworker::Coworker;
use engine::model::Model;
use engine::storage::matrix::Matrix;
use js_sys::{Atomics, Float32Array, Int32Array, Reflect, SharedArrayBuffer};
use wasm_bindgen::{JsCast, JsValue};

/// `ctrl[STATE]`: what the buffer holds now.
const STATE: u32 = 0;
const JOB: u32 = 1;
const X_LEN: u32 = 2;
const PART_LEN: u32 = 3;
/// `ctrl[VARIANT..VARIANT + 4]`: the variant asked (`model::Variant::code`).
const VARIANT: u32 = 4;
const CTRL_INTS: u32 = 8;
const CTRL_BYTES: u32 = 4 * CTRL_INTS;

/// Nothing asked (the coworker sleeps).
const IDLE: i32 = 0;
/// A job's x is in place: the coworker's turn.
const ASKED: i32 = 1;
/// Its part is in place: the worker's turn.
const DONE: i32 = 2;
/// The coworker could not run the job.
const FAILED: i32 = 3;
/// A variant's code is in place (its first job in `JOB`): the coworker's
/// turn to make it; it answers `DONE` or `FAILED` as for a job.
const MAKE: i32 = 4;

/// How long the worker waits for a part before it takes the coworker for
/// dead and computes the rest of its products alone.
const PATIENCE_MS: f64 = 10_000.0;
/// How long the worker waits for the coworker to make a variant (a large
/// model converted to another format) before it makes do without its part.
const MAKING_MS: f64 = 120_000.0;

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
            ctrl: Int32Array::new_with_byte_offset_and_length(buffer, 0, CTRL_INTS),
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

    /// The coworker's loop: sleep until a job or a variant is asked, run
    /// it on `panels` or make it from `model` (its loaded model), answer,
    /// forever (the page ends the worker).
    pub fn serve(&self, model: &Model, mut panels: Panels) -> ! {
        let room = (self.x.length() as usize, self.part.length() as usize);
        // Parts held in place are read from these (a variant's are copies).
        let matrices = coworker::job_matrices(model);
        loop {
            let state = self.get(STATE);
            let done = match state {
                ASKED => self.run(&panels, &matrices),
                MAKE => {
                    let code = [0, 1, 2, 3].map(|i| self.get(VARIANT + i));
                    let first_job = self.get(JOB).max(0) as usize;
                    match coworker::their_variant(model, code, room) {
                        Ok(more) => {
                            panels.hold_at(first_job, more);
                            DONE
                        }
                        Err(_) => FAILED,
                    }
                }
                _ => {
                    // Returns at once if the state changed since it was read.
                    let _ = Atomics::wait(&self.ctrl, STATE, state);
                    continue;
                }
            };
            self.set(STATE, done);
            let _ = Atomics::notify(&self.ctrl, STATE);
        }
    }

    /// The asked job's part, put in place: `DONE`, or `FAILED`.
    fn run(&self, panels: &Panels, matrices: &[&Matrix]) -> i32 {
        let mut x = vec![0.0; self.get(X_LEN).max(0) as usize]; // (rows, k)
        self.x.subarray(0, x.len() as u32).copy_to(&mut x);
        let job = self.get(JOB).max(0) as usize;
        match panels.run(job, matrices.get(job).copied(), &x) {
            Ok(part) if part.len() <= self.part.length() as usize => {
                self.part.subarray(0, part.len() as u32).copy_from(&part);
                self.set(PART_LEN, part.len() as i32);
                DONE
            }
            _ => FAILED,
        }
    }

    /// Hands the coworker the turn: `asked` (a job's or a variant's, whose
    /// other fields are in place) for job `job`.
    fn ask(&self, asked: i32, job: usize) -> bool {
        self.set(JOB, job as i32);
        self.set(STATE, asked);
        Atomics::notify(&self.ctrl, STATE).is_ok()
    }

    /// Waits up to `patience_ms` while the coworker has the turn (`asked`);
    /// whether it answered `DONE`. The buffer is idle again after, unless
    /// the coworker is still at it.
    fn wait(&self, asked: i32, patience_ms: f64) -> bool {
        let started = web_time::Instant::now();
        while self.get(STATE) == asked {
            let waited = started.elapsed().as_secs_f64() * 1e3;
            if waited >= patience_ms {
                return false;
            }
            let _ = Atomics::wait_with_timeout(&self.ctrl, STATE, asked, patience_ms - waited);
        }
        let done = self.get(STATE) == DONE;
        self.set(STATE, IDLE);
        done
    }
}

impl Coworker for Exchange {
    fn start(&mut self, job: usize, x: &[f32]) -> bool {
        if x.len() > self.x.length() as usize || self.get(STATE) != IDLE {
            return false;
        }
        self.x.subarray(0, x.len() as u32).copy_from(x);
        self.set(X_LEN, x.len() as i32);
        self.ask(ASKED, job)
    }

    fn finish(&mut self, out: &mut [f32]) -> bool {
        // The coworker writes the part only when asked, so it stays put
        // once the buffer is idle again.
        let ok = self.wait(ASKED, PATIENCE_MS) && self.get(PART_LEN) as usize == out.len();
        if ok {
            self.part.subarray(0, out.len() as u32).copy_to(out);
        }
        ok
    }

    fn begin_variant(&mut self, first_job: usize, code: [i32; 4]) -> bool {
        if self.get(STATE) != IDLE {
            return false;
        }
        for (i, c) in (0..).zip(code) {
            self.set(VARIANT + i, c);
        }
        self.ask(MAKE, first_job)
    }

    fn end_variant(&mut self) -> bool {
        self.wait(MAKE, MAKING_MS)
    }
}
