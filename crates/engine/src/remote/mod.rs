//! The CPU engine behind a message boundary. In the browser the page's CPU
//! fallback runs in a Web Worker: a GPT-2-124M forward pass takes a few
//! hundred milliseconds there, which on the page's own thread would freeze
//! every slider and the Stop button. The page keeps a [`RemoteSession`] per
//! session, whose calls become [`wire::Request`]s through a [`Link`] (the app's
//! `postMessage`); the worker keeps a [`Host`] of plain CPU sessions. The
//! numbers are the CPU engine's own, bit for bit (the same weights, the same
//! code), so a remote run's text equals an in-page run's.
//!
//! Only what needs the cache crosses: positions are tracked on both sides,
//! and requests that only change state (rewind, copy, close) are sent
//! without waiting, handled in order, their errors kept for the session's
//! next awaited request.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::error::{EngineError, Result};
use crate::kv_policy::KvPolicy;
use crate::model::{Config, Model};
use crate::step::{DeviceFigures, Inspection, KvBytes, Look, StepStats, Wanted};
use crate::storage::format::Format;
pub use host::{cpu_model, Host};
use wire::{Answer, Reply, Request, SessionId};

mod host;
mod loopback;
pub mod pace;
mod session_impl;
pub mod wire;

pub use loopback::Loopback;

/// The page's end of the boundary.
pub trait Link {
    /// Sends a request and resolves to its answer (an error when the worker
    /// is gone).
    fn call(&self, request: Request) -> Pin<Box<dyn Future<Output = Result<Answer>>>>;
    /// Sends a request that answers nothing, in order with the others.
    fn send(&self, request: Request);
}

/// The model as the page sees it in the worker: its shape and format (the
/// page holds the same model, loaded from the same files) and the link.
pub struct RemoteModel {
    link: Rc<dyn Link>,
    config: Config,
    format: Format,
    /// Whether its int8 or int4 matrices multiply 8-bit activations.
    int8_activations: bool,
    weight_bytes: u64,
    /// Of those, what a decode step reads (`Weights::decode_bytes`).
    decode_bytes: u64,
    /// Shared by a model and its variants: one worker, one id space.
    next_id: Rc<Cell<SessionId>>,
}

impl RemoteModel {
    /// The worker's copy of `model` (which the caller has had it load).
    pub fn new(link: Rc<dyn Link>, model: &Model) -> Rc<RemoteModel> {
        Rc::new(RemoteModel {
            link,
            config: model.config.clone(),
            format: model.format(),
            int8_activations: model.weights.int8_activations(),
            weight_bytes: model.weights.bytes(),
            decode_bytes: model.weights.decode_bytes(),
            next_id: Rc::default(),
        })
    }

    /// The same worker's model with its matrices in `model`'s format (and
    /// multiplying 8-bit activations where `model`'s do): `model` is the
    /// page's variant of the loaded model (`Model::to_format` of it), and
    /// the worker makes the same one from its own copy.
    pub fn variant(&self, model: &Model) -> Rc<RemoteModel> {
        Rc::new(RemoteModel {
            link: self.link.clone(),
            config: model.config.clone(),
            format: model.format(),
            int8_activations: model.weights.int8_activations(),
            weight_bytes: model.weights.bytes(),
            decode_bytes: model.weights.decode_bytes(),
            next_id: self.next_id.clone(),
        })
    }

    /// A fresh session in the worker (empty KV cache).
    pub fn session(self: &Rc<Self>) -> RemoteSession {
        self.session_under(KvPolicy::Full)
    }

    /// A fresh session whose cache keeps what `policy` keeps.
    pub fn session_under(self: &Rc<Self>, policy: KvPolicy) -> RemoteSession {
        let id = self.fresh_id();
        let format = self.format.name().to_string();
        let (groups, layers) = (self.config.n_kv_head, self.config.n_layer);
        let (int8_activations, policy_name) = (self.int8_activations, policy.name());
        self.link.send(Request::Open {
            id,
            format,
            int8_activations,
            policy: policy_name,
            groups,
            layers,
        });
        RemoteSession { model: self.clone(), id, policy, pos: 0, last: StepStats::default() }
    }

    /// The worker's copy and read rates (the cost lessons' device figures).
    pub async fn device_figures(&self) -> Result<DeviceFigures> {
        match self.link.call(Request::DeviceFigures).await?.reply {
            Reply::Figures { figures } => Ok(figures),
            other => Err(unexpected(other)),
        }
    }

    /// Waits until the worker has chosen whether its decode steps run with
    /// the coworker (a trial of decode steps on a scratch session, once per
    /// worker), so that steps timed from now on all ran the same way.
    /// Returns the choice; `None` where the worker has no coworker.
    pub async fn settle(&self) -> Result<Option<bool>> {
        match self.link.call(Request::Settle).await?.reply {
            Reply::Settled { coworker } => Ok(coworker),
            other => Err(unexpected(other)),
        }
    }

    fn fresh_id(&self) -> SessionId {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        id
    }
}

/// A CPU session that lives in the worker.
pub struct RemoteSession {
    model: Rc<RemoteModel>,
    id: SessionId,
    /// What its cache keeps (the worker's session keeps the same).
    policy: KvPolicy,
    pos: usize,
    last: StepStats,
}

impl RemoteSession {
    /// The model's hyper-parameters.
    pub fn config(&self) -> &Config {
        &self.model.config
    }

    /// The model's weight format and the bytes its weights take.
    pub fn weights(&self) -> (Format, u64) {
        (self.model.format, self.model.weight_bytes)
    }

    /// Bytes of weights a decode step reads (`Weights::decode_bytes`).
    pub fn decode_bytes(&self) -> u64 {
        self.model.decode_bytes
    }

    /// The worker this session lives in.
    pub fn model(&self) -> &Rc<RemoteModel> {
        &self.model
    }

    /// Tokens in the cache.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// What its cache keeps.
    pub fn policy(&self) -> KvPolicy {
        self.policy
    }

    /// Cost of the last call: the worker's counts, and the wall time as the
    /// page saw it (the messages' round trip included).
    pub fn last_stats(&self) -> StepStats {
        self.last
    }

    /// The KV cache's bytes, as the worker's cache holds them.
    pub async fn kv_bytes(&self) -> Result<KvBytes> {
        match self.model.link.call(Request::KvBytes { id: self.id }).await?.reply {
            Reply::KvBytes { bytes } => Ok(bytes),
            other => Err(unexpected(other)),
        }
    }

    /// The position each cache slot holds and a heavy-hitter cache's
    /// attention totals, as the worker's cache holds them.
    pub async fn slots(&self) -> Result<(Vec<usize>, Vec<f32>)> {
        let answer = self.model.link.call(Request::Slots { id: self.id }).await?;
        match answer.reply {
            Reply::Slots { held } => Ok((held, answer.floats)),
            other => Err(unexpected(other)),
        }
    }

    /// `tokens` in one pass; what `look` asks for comes back too.
    pub async fn prefill_inspected(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        look: Look,
    ) -> Result<Inspection> {
        let start = web_time::Instant::now();
        let request = Request::Prefill { id: self.id, tokens: tokens.to_vec(), wanted, look };
        let Answer { reply, mut floats } = self.model.link.call(request).await?;
        let Reply::Inspected { stats, logits, residuals, attention } = reply else {
            return Err(unexpected(reply));
        };
        if floats.len() != logits + residuals.unwrap_or(0) + attention.unwrap_or(0) {
            return Err(EngineError::Remote("the CPU worker's answer was cut short".into()));
        }
        let attention = attention.map(|n| floats.split_off(floats.len() - n));
        let residuals = residuals.map(|n| floats.split_off(floats.len() - n));
        self.pos += tokens.len();
        self.last = StepStats { wall_ms: ms_since(start), ..stats };
        Ok(Inspection { logits: floats, residuals, attention })
    }

    /// One token through the cached context: its `(vocab_size)` logits.
    pub async fn decode(&mut self, token: u32) -> Result<Vec<f32>> {
        let start = web_time::Instant::now();
        let answer = self.model.link.call(Request::Decode { id: self.id, token }).await?;
        let Reply::Logits { stats } = answer.reply else { return Err(unexpected(answer.reply)) };
        self.pos += 1;
        self.last = StepStats { wall_ms: ms_since(start), ..stats };
        Ok(answer.floats)
    }

    /// Forgets everything from position `to` on.
    pub fn rewind(&mut self, to: usize) -> Result<()> {
        if to > self.pos {
            return Err(EngineError::Rewind { to, pos: self.pos });
        }
        self.model.link.send(Request::Rewind { id: self.id, to });
        self.pos = to;
        Ok(())
    }

    /// A second session in the worker with a copy of this one's KV cache.
    pub fn fork(&self) -> RemoteSession {
        let id = self.model.fresh_id();
        self.model.link.send(Request::Copy { id, from: self.id });
        let (model, policy, pos) = (self.model.clone(), self.policy, self.pos);
        RemoteSession { model, id, policy, pos, last: StepStats::default() }
    }

    /// Takes `src`'s KV cache rows and position. Returns the bytes copied.
    pub fn copy_from(&mut self, src: &RemoteSession) -> Result<u64> {
        if !Rc::ptr_eq(&self.model, &src.model) {
            return Err(EngineError::Batch(
                "a KV cache is copied only between sessions of one model".into(),
            ));
        }
        self.model.link.send(Request::Copy { id: self.id, from: src.id });
        self.pos = src.pos;
        let c = self.config();
        Ok((src.pos * c.n_embd * 4 * 2 * c.n_layer) as u64)
    }

    /// One batched pass: sequence `i` takes `tokens[i]` (`None`: it sits the
    /// step out). Returns the active sequences' `(active, vocab_size)` logits.
    pub async fn decode_batch(
        sessions: &mut [&mut RemoteSession],
        tokens: &[Option<u32>],
    ) -> Result<(Vec<f32>, StepStats)> {
        let Some(first) = sessions.first() else {
            return Err(EngineError::Batch("a batch needs at least one sequence".into()));
        };
        if sessions.iter().any(|s| !Rc::ptr_eq(&s.model, &first.model)) {
            return Err(EngineError::Batch("the sequences run on different models".into()));
        }
        let start = web_time::Instant::now();
        let link = first.model.link.clone();
        let ids = sessions.iter().map(|s| s.id).collect();
        let answer = link.call(Request::Batch { ids, tokens: tokens.to_vec() }).await?;
        let Reply::Logits { stats } = answer.reply else { return Err(unexpected(answer.reply)) };
        for (s, t) in sessions.iter_mut().zip(tokens) {
            s.pos += usize::from(t.is_some());
        }
        Ok((answer.floats, StepStats { wall_ms: ms_since(start), ..stats }))
    }
}

impl Drop for RemoteSession {
    fn drop(&mut self) {
        self.model.link.send(Request::Close { id: self.id });
    }
}

fn ms_since(start: web_time::Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// A failure's message, or a reply of the wrong kind.
fn unexpected(reply: Reply) -> EngineError {
    match reply {
        Reply::Failed { message } => EngineError::Remote(message),
        other => EngineError::Remote(format!("the CPU worker answered {other:?}")),
    }
}
