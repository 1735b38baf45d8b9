//! The page's end of the CPU worker (`src/bin/cpu_worker/main.rs`): starts it,
//! hands it the model's files, and carries `engine::remote` requests to it
//! as messages. Answers come back in the order asked, so pending calls are a
//! queue; if the worker dies, every pending and later call gets the reason.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use engine::cpu::coworker;
use engine::model::Model;
use engine::remote::wire::{self, Answer, Reply, Request};
use engine::remote::Link;
use engine::storage::format::Format;
use engine::EngineError;
use futures_channel::oneshot;
use js_sys::{Array, ArrayBuffer, Float32Array, Object, Reflect, Uint8Array};
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

type Pending = RefCell<VecDeque<oneshot::Sender<Result<JsValue, String>>>>;

/// The worker's listeners, kept as long as it runs.
type OnMessage = Closure<dyn Fn(MessageEvent)>;
type OnError = Closure<dyn Fn(Event)>;

/// The last answer's buffer, read: handed back with the next request for
/// the worker to write its next answer into (no fresh 200 KB a token).
type Spare = Rc<RefCell<Option<ArrayBuffer>>>;

/// A running CPU worker.
pub struct CpuWorker {
    worker: Worker,
    pending: Rc<Pending>,
    /// Why the worker stopped, once it has.
    dead: Rc<RefCell<Option<String>>>,
    spare: Spare,
    /// The second worker that computes half of each big product (a
    /// cross-origin-isolated page on a machine of two cores or more), or
    /// why there is none.
    coworker: Result<Box<CpuWorker>, String>,
    _on_message: OnMessage,
    _on_error: OnError,
}

/// How a worker packs the model's matrices (as the page did its own copy).
#[derive(Clone, Copy)]
struct Packing {
    format: Format,
    /// Multiplying 8-bit activations (`activations=int8`).
    int8_activations: bool,
}

impl CpuWorker {
    /// Starts the worker and has it load the model from its files (the same
    /// bytes the page parsed into `model`, so both hold the same weights,
    /// packed in its format); then, where the page can share memory between
    /// workers and the model's products are big enough, a coworker for it.
    pub async fn start(
        config: &[u8],
        weights: &Uint8Array,
        model: &Model,
    ) -> Result<CpuWorker, String> {
        let packing =
            Packing { format: model.format(), int8_activations: model.weights.int8_activations() };
        let (mut link, _) = CpuWorker::spawn(config, weights, packing, "load")
            .await
            .map_err(|e| format!("the CPU worker could not load the model: {e}"))?;
        // The page's reason first: it holds for every model.
        let alone =
            no_coworker().or_else(|| coworker::buffer_floats(model).err().map(|e| e.to_string()));
        link.coworker = match alone {
            None => link.add_coworker(config, weights, packing).await.map(Box::new),
            Some(why) => Err(why),
        };
        Ok(link)
    }

    /// Workers computing the model's steps (1 or 2), and why not 2 when 1.
    pub fn workers(&self) -> (usize, Option<String>) {
        match &self.coworker {
            Ok(_) => (2, None),
            Err(why) => (1, Some(why.clone())),
        }
    }

    /// A coworker holding the other half of each big matrix, handed to this
    /// worker through a `SharedArrayBuffer`.
    async fn add_coworker(
        &self,
        config: &[u8],
        weights: &Uint8Array,
        packing: Packing,
    ) -> Result<CpuWorker, String> {
        let (helper, answer) = CpuWorker::spawn(config, weights, packing, "help")
            .await
            .map_err(|e| format!("the second CPU worker did not start: {e}"))?;
        let shared = Reflect::get(&answer, &"shared".into()).unwrap_or(JsValue::UNDEFINED);
        let message = Object::new();
        let _ = Reflect::set(&message, &"coworker".into(), &shared);
        let answer = self.post(&message, &Array::new(), true).map_err(|e| e.to_string())?;
        match answer.await.reply {
            Reply::Failed { message } => {
                Err(format!("the second CPU worker was refused: {message}"))
            }
            _ => Ok(helper),
        }
    }

    /// A worker running the script, sent the model's files as `{role: {config,
    /// format, int8_activations, weights}}` once it listens; its answer as it came.
    async fn spawn(
        config: &[u8],
        weights: &Uint8Array,
        packing: Packing,
        role: &str,
    ) -> Result<(CpuWorker, JsValue), String> {
        let script = script()?;
        let worker = Worker::new(&script).map_err(|e| format!("no Web Worker: {e:?}"))?;
        let pending: Rc<Pending> = Rc::default();
        let dead: Rc<RefCell<Option<String>>> = Rc::default();
        let (on_message, on_error) = listeners(&pending, &dead, &script);
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        let (ready, listening) = oneshot::channel();
        pending.borrow_mut().push_back(ready);
        let link = CpuWorker {
            worker,
            pending,
            dead,
            spare: Spare::default(),
            coworker: Err("not started".into()),
            _on_message: on_message,
            _on_error: on_error,
        };
        // A message sent before the worker's wasm has started would be lost.
        let (pending, dead) = (link.pending.clone(), link.dead.clone());
        let listened = within_start(&window()?, listening, pending, dead).await;
        match listened {
            Ok(Ok(data)) => read(&data, None)?,
            Ok(Err(why)) => return Err(why),
            Err(_) => return Err("the CPU worker went away".into()),
        };
        let (message, bytes) = files_message(config, weights, packing, role);
        let answer = link.post_raw(&message, &Array::of1(&bytes.buffer()));
        let data = answer.map_err(|e| e.to_string())?.await?;
        match read(&data, None)?.reply {
            Reply::Failed { message } => Err(message),
            _ => Ok((link, data)),
        }
    }

    /// Posts `message` (moving `transfer`'s buffers); when `awaited`, the answer.
    fn post(
        &self,
        message: &JsValue,
        transfer: &Array,
        awaited: bool,
    ) -> Result<impl Future<Output = Answer>, EngineError> {
        let answer = self.send_message(message, transfer, awaited)?;
        let spare = self.spare.clone();
        Ok(async move {
            match answer.await {
                Ok(Ok(data)) => read(&data, Some(&spare)).unwrap_or_else(|why| failed(&why)),
                Ok(Err(why)) => failed(&why),
                Err(_) => failed("the CPU worker went away"),
            }
        })
    }

    /// Posts `message`; its answer as it came.
    fn post_raw(
        &self,
        message: &JsValue,
        transfer: &Array,
    ) -> Result<impl Future<Output = Result<JsValue, String>>, EngineError> {
        let answer = self.send_message(message, transfer, true)?;
        Ok(async move { answer.await.unwrap_or_else(|_| Err("the CPU worker went away".into())) })
    }

    fn send_message(
        &self,
        message: &JsValue,
        transfer: &Array,
        awaited: bool,
    ) -> Result<oneshot::Receiver<Result<JsValue, String>>, EngineError> {
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
        Ok(rx)
    }

    fn request(&self, request: &Request) -> Result<impl Future<Output = Answer>, EngineError> {
        let message = Object::new();
        let _ = Reflect::set(&message, &"head".into(), &wire::encode(request).into());
        let transfer = Array::new();
        if let Some(spare) = self.spare.borrow_mut().take() {
            let _ = Reflect::set(&message, &"spare".into(), &spare);
            transfer.push(&spare);
        }
        self.post(&message, &transfer, request.awaited())
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

/// Why this page cannot give the CPU worker a coworker, if it cannot: it
/// needs a `SharedArrayBuffer` (a cross-origin-isolated page) and a second core.
pub fn no_coworker() -> Option<String> {
    let window = window().ok()?;
    let isolated = Reflect::get(&window, &"crossOriginIsolated".into());
    if !isolated.is_ok_and(|v| v.is_truthy()) {
        return Some("the page is not cross-origin isolated (its server sends no COOP and COEP headers), so a second worker cannot share the work".into());
    }
    (window.navigator().hardware_concurrency() < 2.0).then(|| "this machine has one core".into())
}

fn failed(why: &str) -> Answer {
    Answer::bare(Reply::Failed { message: why.into() })
}

fn window() -> Result<web_sys::Window, String> {
    web_sys::window().ok_or_else(|| "no window".into())
}

/// One answer off the wire; its floats' buffer, once copied, kept in `spare`.
fn read(data: &JsValue, spare: Option<&Spare>) -> Result<Answer, String> {
    if let Some(failed) = Reflect::get(data, &"failed".into()).ok().and_then(|f| f.as_string()) {
        return Err(format!("the CPU worker's wasm did not start: {failed}"));
    }
    let head = Reflect::get(data, &"head".into()).ok().and_then(|h| h.as_string());
    let reply = wire::decode::<Reply>(&head.unwrap_or_default()).map_err(|e| e.to_string())?;
    let floats =
        Reflect::get(data, &"floats".into()).ok().and_then(|f| f.dyn_into::<Float32Array>().ok());
    if let (Some(f), Some(spare)) = (&floats, spare) {
        *spare.borrow_mut() = Some(f.buffer());
    }
    Ok(Answer { reply, floats: floats.map(|f| f.to_vec()).unwrap_or_default() })
}

/// `{role: {config, format, int8_activations, weights}}`, and the weights' bytes (whose buffer
/// the message moves).
fn files_message(
    config: &[u8],
    weights: &Uint8Array,
    packing: Packing,
    role: &str,
) -> (Object, Uint8Array) {
    let Packing { format, int8_activations } = packing;
    let files = Object::new();
    // The worker's own copy, moved to it (the page keeps its array).
    let bytes = weights.slice(0, weights.length());
    let config = String::from_utf8_lossy(config).into_owned();
    let _ = Reflect::set(&files, &"config".into(), &config.into());
    let _ = Reflect::set(&files, &"format".into(), &format.name().into());
    let _ = Reflect::set(&files, &"int8_activations".into(), &int8_activations.into());
    let _ = Reflect::set(&files, &"weights".into(), &bytes);
    let message = Object::new();
    let _ = Reflect::set(&message, &role.into(), &files);
    (message, bytes)
}

/// The worker's first message, or why it has none: a worker that never
/// says it listens within [`START_MS`] (its wasm stuck loading) is given up
/// on, and the page runs the CPU engine itself.
async fn within_start(
    window: &web_sys::Window,
    listening: oneshot::Receiver<Result<JsValue, String>>,
    pending: Rc<Pending>,
    dead: Rc<RefCell<Option<String>>>,
) -> Result<Result<JsValue, String>, oneshot::Canceled> {
    let give_up = Closure::once_into_js(move || {
        let why = format!("the CPU worker did not start within {} s", START_MS / 1000);
        for waiting in pending.borrow_mut().drain(..) {
            let _ = waiting.send(Err(why.clone()));
        }
        dead.borrow_mut().get_or_insert(why);
    });
    let timer = window
        .set_timeout_with_callback_and_timeout_and_arguments_0(give_up.unchecked_ref(), START_MS)
        .ok();
    let listened = listening.await;
    if let Some(t) = timer {
        window.clear_timeout_with_handle(t);
    }
    listened
}

/// The worker's message listener (each message answers the oldest waiting
/// request) and error listener (every waiting request fails, and so does
/// every later one, with why).
fn listeners(
    pending: &Rc<Pending>,
    dead: &Rc<RefCell<Option<String>>>,
    script: &str,
) -> (OnMessage, OnError) {
    let on_message = {
        let pending = pending.clone();
        Closure::<dyn Fn(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(waiting) = pending.borrow_mut().pop_front() {
                let _ = waiting.send(Ok(event.data()));
            }
        })
    };
    let on_error = {
        let (pending, dead) = (pending.clone(), dead.clone());
        let script = script.to_string();
        Closure::<dyn Fn(Event)>::new(move |event: Event| {
            // A script that failed to load sends a plain Event, an
            // exception in the worker an ErrorEvent with a message.
            let message = Reflect::get(&event, &"message".into()).ok().and_then(|m| m.as_string());
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
    (on_message, on_error)
}
