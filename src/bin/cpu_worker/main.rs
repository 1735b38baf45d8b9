//! The page's CPU engine in a Web Worker (`cpu_worker_loader.js`, built by
//! Trunk beside the app). The page posts the model's files once, then
//! requests (`engine::remote::wire`); this thread runs them on plain CPU
//! sessions, so a GPT-2-sized forward pass never holds the page's thread.
//!
//! Out first: a bare reply once it listens. Messages in: `{load: {config,
//! format, weights: Uint8Array}}`, then `{head: JSON request, spare?:
//! ArrayBuffer}`. Out, for `load` and every awaited request, in order:
//! `{head: JSON reply, floats: Float32Array}`. The page hands each answer's
//! buffer back as the next request's `spare` once it has read it, and the
//! next answer is written into it: a fresh 200 KB buffer a token (GPT-2's
//! logits) cost 0.25 ms to allocate and fault in, the copy itself 0.01.
//!
//! The same script is also the worker's coworker (`exchange.rs`): sent
//! `{help: {config, format, weights}}` instead of `load`, it keeps the model
//! (to make the worker's variants of it too) and its half of each big
//! matrix, answers `{head, shared: SharedArrayBuffer}` and
//! serves products through that buffer from then on; the worker, sent
//! `{coworker: SharedArrayBuffer}`, hands it half of each product.

#[cfg(target_arch = "wasm32")]
fn main() {
    worker::start();
}

/// Nothing to run natively: the native CLI holds its sessions in-thread.
#[cfg(not(target_arch = "wasm32"))]
fn main() {}

#[cfg(target_arch = "wasm32")]
mod exchange;

#[cfg(target_arch = "wasm32")]
mod worker {
    use std::cell::RefCell;
    use std::sync::Arc;

    use engine::cpu::coworker::{self, Panels, Side};
    use engine::model::{JsBytes, Model};
    use engine::remote::wire::{self, Answer, Reply, Request};
    use engine::remote::{cpu_model, Host};
    use engine::storage::format::Format;
    use js_sys::{ArrayBuffer, Float32Array, Object, Reflect, Uint8Array};

    use crate::exchange::Exchange;
    use wasm_bindgen::prelude::*;
    use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

    thread_local! {
        static HOST: RefCell<Option<Host>> = const { RefCell::new(None) };
        /// Buffers the page handed back, for the next answers' floats.
        static SPARE: RefCell<Vec<ArrayBuffer>> = const { RefCell::new(Vec::new()) };
    }

    /// Spare buffers kept at most (the page returns one per answer).
    const SPARE_MAX: usize = 2;

    pub fn start() {
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let on_message = Closure::<dyn Fn(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(answer) = answer(&event.data()) {
                post(&answer);
            }
        });
        scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        // The handler lives as long as the worker.
        on_message.forget();
        // Messages that came before the handler was set were dropped: the
        // page waits for this one before it sends any.
        post(&Answer::bare(Reply::Logits { stats: Default::default() }));
    }

    /// The answer to one message, if it wants one.
    fn answer(data: &JsValue) -> Option<Answer> {
        let get = |key: &str| Reflect::get(data, &key.into()).ok().filter(|v| !v.is_undefined());
        let done = |r: Result<(), String>| {
            r.map_or_else(
                |message| Answer::bare(Reply::Failed { message }),
                |()| Answer::bare(Reply::Logits { stats: Default::default() }),
            )
        };
        if let Some(load) = get("load") {
            return Some(done(self::load(&load)));
        }
        if let Some(help) = get("help") {
            match self::help(&help) {
                Ok(never) => match never {},
                Err(message) => return Some(Answer::bare(Reply::Failed { message })),
            }
        }
        if let Some(shared) = get("coworker") {
            return Some(done(self::take_coworker(&shared)));
        }
        if let Some(spare) = get("spare").and_then(|b| b.dyn_into::<ArrayBuffer>().ok()) {
            SPARE.with_borrow_mut(|pool| {
                pool.push(spare);
                // The largest kept: an inspected prefill's answer outgrows logits.
                pool.sort_by_key(|b| std::cmp::Reverse(b.byte_length()));
                pool.truncate(SPARE_MAX);
            });
        }
        let head = get("head").and_then(|h| h.as_string()).unwrap_or_default();
        let request = match wire::decode::<Request>(&head) {
            Ok(r) => r,
            Err(e) => return Some(Answer::bare(Reply::Failed { message: e.to_string() })),
        };
        let awaited = request.awaited();
        let answer = HOST.with_borrow_mut(|host| match host {
            Some(host) => host.handle(request),
            None => Some(Answer::bare(Reply::Failed {
                message: "the CPU worker has no model yet".into(),
            })),
        });
        answer.filter(|_| awaited)
    }

    /// The model in a message's files (config.json's text, the weight
    /// format, whether 8-bit activations, the safetensors bytes), laid out
    /// as the CPU worker runs it (`remote::cpu_model`): the worker and its
    /// coworker load the same way, so the coworker's parts are the worker's words.
    fn model(message: &JsValue) -> Result<Model, String> {
        let get = |key: &str| Reflect::get(message, &key.into()).unwrap_or(JsValue::UNDEFINED);
        let config = get("config").as_string().ok_or("no config.json given")?;
        let format = get("format").as_string().unwrap_or_default();
        let format = Format::from_name(&format).ok_or(format!("no weight format {format}"))?;
        let acts8 = get("int8_activations").as_bool().unwrap_or(false);
        let weights = get("weights").dyn_into::<Uint8Array>().map_err(|_| "no weights given")?;
        // Read a tensor at a time from outside this thread's memory: it holds
        // the model and one tensor's bytes, never the whole file as well.
        cpu_model(&config, &JsBytes(weights), format, acts8).map_err(|e| e.to_string())
    }

    /// Parses the model's files and packs the matrices in `format`.
    fn load(load: &JsValue) -> Result<(), String> {
        let host = Host::new(Arc::new(model(load)?));
        HOST.with_borrow_mut(|h| *h = Some(host));
        Ok(())
    }

    /// The coworker's start: its half of the model, the shared buffer posted
    /// to the page, then products served until the page ends this worker.
    fn help(help: &JsValue) -> Result<std::convert::Infallible, String> {
        let model = model(help)?;
        let floats = coworker::buffer_floats(&model).map_err(|e| e.to_string())?;
        let panels = Panels::new(&model, Side::Theirs).map_err(|e| e.to_string())?;
        // The model is kept: the worker's variants of it are made here too.
        let (buffer, exchange) = Exchange::create(floats)?;
        let message = Object::new();
        let reply = Reply::Logits { stats: Default::default() };
        let _ = Reflect::set(&message, &"head".into(), &wire::encode(&reply).into());
        let _ = Reflect::set(&message, &"shared".into(), &buffer);
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        scope.post_message(&message).map_err(|e| format!("{e:?}"))?;
        exchange.serve(&model, panels)
    }

    /// Hands half of each big product of the loaded model to the coworker
    /// whose buffer is `shared`.
    fn take_coworker(shared: &JsValue) -> Result<(), String> {
        HOST.with_borrow(|host| {
            let model = host.as_ref().ok_or("the CPU worker has no model yet")?.model();
            let floats = coworker::buffer_floats(model).map_err(|e| e.to_string())?;
            let exchange = Exchange::over(shared, floats)?;
            coworker::install(model, Box::new(exchange)).map_err(|e| e.to_string())
        })
    }

    fn post(answer: &Answer) {
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let message = Object::new();
        let floats = floats_of(&answer.floats);
        let _ = Reflect::set(&message, &"head".into(), &wire::encode(&answer.reply).into());
        let _ = Reflect::set(&message, &"floats".into(), &floats);
        let transfer = js_sys::Array::of1(&floats.buffer());
        let _ = scope.post_message_with_transfer(&message, &transfer);
    }

    /// `floats` in a spare buffer big enough, or a new one.
    fn floats_of(floats: &[f32]) -> Float32Array {
        let bytes = 4 * floats.len() as u32;
        let spare = SPARE.with_borrow_mut(|pool| {
            let at = pool.iter().rposition(|b| b.byte_length() >= bytes)?;
            Some(pool.remove(at))
        });
        let Some(buffer) = spare else { return Float32Array::from(floats) };
        let view = Float32Array::new_with_byte_offset_and_length(&buffer, 0, floats.len() as u32);
        view.copy_from(floats);
        view
    }
}
