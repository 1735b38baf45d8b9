//! The page's end of the CPU worker (`src/bin/cpu_worker.rs`): starts it,
//! hands it the model's files, and carries `engine::remote` requests to it
//! as messages. Answers come back in the order asked, so pending calls are a
//! queue; if the worker dies, every pending and later call gets the reason.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use engine::kernels::format::Format;
use engine::remote::wire::{self, Answer, Reply, Request};
use engine::remote::Link;
use engine::EngineError;
use futures_channel::oneshot;
use js_sys::{Array, Float32Array, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use web_sys::{Event, MessageEvent, Worker};

/// Where the page names the worker's script (`www/cpu_worker_loader.js`,
/// renamed by its content at build time: `tools/post_build.mjs`).
const SCRIPT_META: &str = "meta[name=cpu-worker]";

/// The worker's script as the built page names it.
fn script() -> Result<String, String> {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector(SCRIPT_META).ok().flatten())
        .and_then(|m| m.get_attribute("content"))
        .ok_or_else(|| "the page does not name its CPU worker (<meta name=cpu-worker>)".into())
}

/// How long the worker may take to start its wasm (0.3 MB) before the page
/// gives up on it.
const START_MS: i32 = 15_000;

type Pending = RefCell<VecDeque<oneshot::Sender<Result<Answer, String>>>>;

/// A running CPU worker.
pub struct CpuWorker {
    worker: Worker,
    pending: Rc<Pending>,
    /// Why the worker stopped, once it has.
    dead: Rc<RefCell<Option<String>>>,
    _on_message: Closure<dyn Fn(MessageEvent)>,
    _on_error: Closure<dyn Fn(Event)>,
}

impl CpuWorker {
    /// Starts the worker and has it load the model from its files (the same
    /// bytes the page parsed, so both hold the same weights, packed in `format`).
    pub async fn start(config: &[u8], weights: &[u8], format: Format) -> Result<CpuWorker, String> {
        let script = script()?;
        let worker = Worker::new(&script).map_err(|e| format!("no Web Worker: {e:?}"))?;
        let pending: Rc<Pending> = Rc::default();
        let dead: Rc<RefCell<Option<String>>> = Rc::default();
        let on_message = {
            let pending = pending.clone();
            Closure::<dyn Fn(MessageEvent)>::new(move |event: MessageEvent| {
                if let Some(waiting) = pending.borrow_mut().pop_front() {
                    let _ = waiting.send(read(&event.data()));
                }
            })
        };
        let on_error = {
            let (pending, dead) = (pending.clone(), dead.clone());
            let script = script.clone();
            Closure::<dyn Fn(Event)>::new(move |event: Event| {
                // A script that failed to load sends a plain Event, an
                // exception in the worker an ErrorEvent with a message.
                let message =
                    Reflect::get(&event, &"message".into()).ok().and_then(|m| m.as_string());
                let why = format!(
                    "the CPU worker stopped: {}",
                    message.unwrap_or_else(|| format!("{script} could not be started"))
                );
                for waiting in pending.borrow_mut().drain(..) {
                    let _ = waiting.send(Err(why.clone()));
                }
                *dead.borrow_mut() = Some(why);
            })
        };
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        let (ready, listening) = oneshot::channel();
        pending.borrow_mut().push_back(ready);
        let link =
            CpuWorker { worker, pending, dead, _on_message: on_message, _on_error: on_error };
        // A message sent before the worker's wasm has started would be lost.
        // A worker that never says it listens (its wasm stuck loading) is
        // given up on, and the page runs the CPU engine itself.
        let (pending, dead) = (link.pending.clone(), link.dead.clone());
        let give_up = Closure::once_into_js(move || {
            let why = format!("the CPU worker did not start within {} s", START_MS / 1000);
            for waiting in pending.borrow_mut().drain(..) {
                let _ = waiting.send(Err(why.clone()));
            }
            dead.borrow_mut().get_or_insert(why);
        });
        let timer = web_sys::window().and_then(|w| {
            w.set_timeout_with_callback_and_timeout_and_arguments_0(
                give_up.unchecked_ref(),
                START_MS,
            )
            .ok()
        });
        let listened = listening.await;
        if let (Some(w), Some(t)) = (web_sys::window(), timer) {
            w.clear_timeout_with_handle(t);
        }
        match listened {
            Ok(Ok(_)) => {}
            Ok(Err(why)) => return Err(why),
            Err(_) => return Err("the CPU worker went away".into()),
        }
        let load = Object::new();
        let bytes = Uint8Array::from(weights);
        let config = String::from_utf8_lossy(config).into_owned();
        let _ = Reflect::set(&load, &"config".into(), &config.into());
        let _ = Reflect::set(&load, &"format".into(), &format.name().into());
        let _ = Reflect::set(&load, &"weights".into(), &bytes);
        let message = Object::new();
        let _ = Reflect::set(&message, &"load".into(), &load);
        let answer = link.post(&message, &Array::of1(&bytes.buffer()), true);
        match answer.map_err(|e| e.to_string())?.await.reply {
            Reply::Failed { message } => Err(message),
            _ => Ok(link),
        }
        .map_err(|e| format!("the CPU worker could not load the model: {e}"))
    }

    /// Posts `message` (moving `transfer`'s buffers); when `awaited`, the answer.
    fn post(
        &self,
        message: &JsValue,
        transfer: &Array,
        awaited: bool,
    ) -> Result<impl Future<Output = Answer>, EngineError> {
        if let Some(why) = self.dead.borrow().clone() {
            return Err(EngineError::Remote(why));
        }
        let (tx, rx) = oneshot::channel();
        if awaited {
            self.pending.borrow_mut().push_back(tx);
        }
        self.worker
            .post_message_with_transfer(message, transfer)
            .map_err(|e| EngineError::Remote(format!("could not message the CPU worker: {e:?}")))?;
        Ok(async move {
            match rx.await {
                Ok(Ok(answer)) => answer,
                Ok(Err(why)) => Answer::bare(Reply::Failed { message: why }),
                Err(_) => {
                    Answer::bare(Reply::Failed { message: "the CPU worker went away".into() })
                }
            }
        })
    }

    fn request(&self, request: &Request) -> Result<impl Future<Output = Answer>, EngineError> {
        let message = Object::new();
        let _ = Reflect::set(&message, &"head".into(), &wire::encode(request).into());
        self.post(&message, &Array::new(), request.awaited())
    }
}

impl Link for CpuWorker {
    fn call(&self, request: Request) -> Pin<Box<dyn Future<Output = engine::Result<Answer>>>> {
        let answer = self.request(&request);
        Box::pin(async move { Ok(answer?.await) })
    }

    fn send(&self, request: Request) {
        // Its error, if any, answers the session's next call.
        let _ = self.request(&request);
    }
}

impl Drop for CpuWorker {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}

/// One answer off the wire.
fn read(data: &JsValue) -> Result<Answer, String> {
    if let Some(failed) = Reflect::get(data, &"failed".into()).ok().and_then(|f| f.as_string()) {
        return Err(format!("the CPU worker's wasm did not start: {failed}"));
    }
    let head = Reflect::get(data, &"head".into()).ok().and_then(|h| h.as_string());
    let reply = wire::decode::<Reply>(&head.unwrap_or_default()).map_err(|e| e.to_string())?;
    let floats = Reflect::get(data, &"floats".into())
        .ok()
        .and_then(|f| f.dyn_into::<Float32Array>().ok())
        .map(|f| f.to_vec())
        .unwrap_or_default();
    Ok(Answer { reply, floats })
}
