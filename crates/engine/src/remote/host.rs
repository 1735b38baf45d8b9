//! The worker's side: the model and the sessions the page opened, each a
//! plain [`CpuSession`] (no pauses: nothing else runs on the worker's thread).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use super::pace::Pace;
use super::wire::{Answer, Reply, Request, SessionId};
use crate::cpu::coworker::make_variant;
use crate::cpu::CpuSession;
use crate::error::{EngineError, Result};
use crate::fast::coworker;
use crate::model::{FileBytes, Model, Variant, WeightsChoice};
use crate::step::{Look, StepStats};
use crate::storage::format::Format;

/// The model from its files as the CPU worker lays it out: the matrices in
/// `format`, its int8 or int4 matrices multiplying 8-bit activations when
/// `int8_activations` (other weights: an error), in the CPU engine's layout.
/// The worker's host and its coworker both load this way, so the coworker's
/// parts are cut from the very words the host's matrices hold.
pub fn cpu_model(
    config_json: &str,
    safetensors: &dyn FileBytes,
    format: Format,
    int8_activations: bool,
) -> Result<Model> {
    let mut model = Model::from_file_as(config_json, safetensors, WeightsChoice::Exactly(format))?;
    if int8_activations && !model.weights.use_int8_activations() {
        return Err(EngineError::Setting(format!(
            "8-bit activations multiply int8 or int4 weights, not {}",
            format.name()
        )));
    }
    // The fast layout: this model never goes to a GPU.
    model.weights.use_cpu_layout();
    Ok(model)
}

/// What the worker holds.
pub struct Host {
    model: Arc<Model>,
    /// The loaded model in other forms, made on first use.
    variants: HashMap<Variant, Arc<Model>>,
    sessions: HashMap<SessionId, CpuSession>,
    /// An error met by a request nobody awaited, for the session's next awaited one.
    deferred: HashMap<SessionId, String>,
    /// Whether decode steps hand half their products to this thread's coworker.
    pace: Pace,
}

impl Host {
    /// The model from its files, with the matrices in `format`: the same
    /// steps as the page's load, so both hold the very same weight values
    /// (in the CPU engine's layout, [`Weights::use_cpu_layout`](crate::model::Weights::use_cpu_layout):
    /// the same values, read faster).
    pub fn load(config_json: &str, safetensors: &[u8], format: Format) -> Result<Host> {
        Ok(Host::new(Arc::new(cpu_model(config_json, &safetensors, format, false)?)))
    }

    /// A host over an already loaded model.
    pub fn new(model: Arc<Model>) -> Host {
        Host {
            model,
            variants: HashMap::new(),
            sessions: HashMap::new(),
            deferred: HashMap::new(),
            pace: Pace::default(),
        }
    }

    /// The model the sessions run.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// Handles one request. Requests the page does not await answer
    /// nothing; an error of theirs waits for the session's next request.
    pub fn handle(&mut self, request: Request) -> Option<Answer> {
        let awaited = request.awaited();
        let id = match &request {
            Request::Open { id, .. }
            | Request::Prefill { id, .. }
            | Request::Decode { id, .. }
            | Request::Rewind { id, .. }
            | Request::Copy { id, .. }
            | Request::Close { id } => Some(*id),
            Request::KvBytes { id } | Request::Slots { id } => Some(*id),
            Request::Batch { .. } | Request::DeviceFigures | Request::Settle => None,
        };
        let answer = self.run(request);
        match (awaited, answer) {
            (true, answer) => Some(answer.unwrap_or_else(failed)),
            (false, Err(e)) => {
                if let Some(id) = id {
                    self.deferred.entry(id).or_insert_with(|| e.to_string());
                }
                None
            }
            (false, Ok(_)) => None,
        }
    }

    fn run(&mut self, request: Request) -> Result<Answer> {
        match request {
            Request::Open { id, format, int8_activations, policy, groups, layers } => {
                let model = self.variant(&format, int8_activations, groups, layers)?;
                let policy = crate::kv_policy::KvPolicy::parse(&policy)?;
                policy.check(&model.config)?;
                self.sessions.insert(id, CpuSession::new(model).with_policy(policy));
                Ok(Answer::bare(Reply::Logits { stats: StepStats::default() }))
            }
            Request::Prefill { id, tokens, wanted, look } => {
                let session = self.session(id)?;
                let seen = ready(session.prefill_inspected(&tokens, wanted, look))??;
                let stats = session.last_stats();
                Ok(inspected(stats, seen, look))
            }
            Request::Decode { id, token } => self.decode(id, token),
            Request::Batch { ids, tokens } => self.batch(&ids, &tokens),
            Request::Rewind { id, to } => {
                self.session(id)?.rewind(to)?;
                Ok(Answer::bare(Reply::Logits { stats: StepStats::default() }))
            }
            Request::Copy { id, from } => self.copy(id, from),
            Request::Close { id } => {
                self.sessions.remove(&id);
                self.deferred.remove(&id);
                Ok(Answer::bare(Reply::Logits { stats: StepStats::default() }))
            }
            Request::DeviceFigures => {
                let figures = ready(crate::cpu::device_figures(None))?;
                Ok(Answer::bare(Reply::Figures { figures }))
            }
            Request::KvBytes { id } => {
                let bytes = self.session(id)?.kv_bytes();
                Ok(Answer::bare(Reply::KvBytes { bytes }))
            }
            Request::Slots { id } => {
                let session = self.session(id)?;
                let held = session.held().to_vec();
                Ok(Answer { reply: Reply::Slots { held }, floats: session.mass().to_vec() })
            }
            Request::Settle => {
                let coworker = match coworker::available() {
                    true => Some(self.settle()?),
                    false => None,
                };
                Ok(Answer::bare(Reply::Settled { coworker }))
            }
        }
    }

    /// One decode step of session `id`, paced as the page's are.
    fn decode(&mut self, id: SessionId, token: u32) -> Result<Answer> {
        let mut pace = std::mem::take(&mut self.pace);
        let stepped = self.session(id).and_then(|s| decode_paced(&mut pace, s, token));
        self.pace = pace;
        let (floats, stats) = stepped?;
        Ok(Answer { reply: Reply::Logits { stats }, floats })
    }

    /// Session `id` becomes a copy of session `from` (opened as one when it
    /// is not open), reporting the bytes copied.
    fn copy(&mut self, id: SessionId, from: SessionId) -> Result<Answer> {
        let src = self.session(from)?.clone();
        let bytes = match self.sessions.get_mut(&id) {
            Some(to) => to.copy_from(&src)?,
            None => {
                self.sessions.insert(id, src);
                0
            }
        };
        let stats = StepStats { bytes_written: bytes as usize, ..StepStats::default() };
        Ok(Answer::bare(Reply::Logits { stats }))
    }

    /// Decode steps on a scratch session, paced as the page's are, until
    /// the pace has chosen; returns the choice (with the coworker or not).
    fn settle(&mut self) -> Result<bool> {
        let mut scratch = CpuSession::new(self.model.clone());
        let room = self.model.config.n_positions;
        loop {
            if let Some(with) = self.pace.choice() {
                coworker::set_active(with);
                return Ok(with);
            }
            if scratch.pos() + 1 >= room {
                scratch.rewind(0)?;
            }
            decode_paced(&mut self.pace, &mut scratch, 0)?;
        }
    }

    /// The loaded model in format `name` with its K/V heads in `groups`
    /// groups and its first `layers` blocks, its int8 or int4 matrices
    /// multiplying 8-bit activations when `acts8`, made as the page makes
    /// it, in the CPU engine's layout (kept for the next session).
    fn variant(
        &mut self,
        name: &str,
        acts8: bool,
        groups: usize,
        layers: usize,
    ) -> Result<Arc<Model>> {
        let format = Format::from_name(name)
            .ok_or_else(|| EngineError::Remote(format!("no weight format {name}")))?;
        let c = &self.model.config;
        let (same_groups, same_layers) = (groups == c.n_kv_head, layers == c.n_layer);
        let same_format = format == self.model.format();
        let same_acts = acts8 == self.model.weights.int8_activations();
        if same_format && same_groups && same_layers && same_acts {
            return Ok(self.model.clone());
        }
        let variant = Variant { format, int8_activations: acts8, groups, layers };
        if let Some(model) = self.variants.get(&variant) {
            return Ok(model.clone());
        }
        if same_format && !same_acts {
            // Its matrices are already laid out for one way (the lesson's
            // variants are made from the checkpoint's f32 or f16 values).
            return Err(EngineError::Setting(format!(
                "8-bit activations or not are chosen at load for the loaded {name} weights"
            )));
        }
        // The coworker, if any, makes it too and shares its products.
        let model = Arc::new(make_variant(&self.model, &variant)?);
        self.variants.insert(variant, model.clone());
        Ok(model)
    }

    /// Session `id`, or the error an earlier unawaited request of it met.
    fn session(&mut self, id: SessionId) -> Result<&mut CpuSession> {
        if let Some(message) = self.deferred.remove(&id) {
            return Err(EngineError::Remote(message));
        }
        self.sessions
            .get_mut(&id)
            .ok_or_else(|| EngineError::Remote(format!("the CPU worker has no session {id}")))
    }

    /// One batched pass over sessions `ids` (taken out of the map for the
    /// pass, since it needs them all mutably at once, then put back).
    fn batch(&mut self, ids: &[SessionId], tokens: &[Option<u32>]) -> Result<Answer> {
        for &id in ids {
            self.session(id)?;
        }
        let mut taken: Vec<(SessionId, CpuSession)> = Vec::with_capacity(ids.len());
        for &id in ids {
            match self.sessions.remove(&id) {
                Some(s) => taken.push((id, s)),
                None => {
                    self.sessions.extend(taken);
                    return Err(EngineError::Batch(format!("session {id} is in the batch twice")));
                }
            }
        }
        let mut sessions: Vec<&mut CpuSession> = taken.iter_mut().map(|(_, s)| s).collect();
        let result = CpuSession::decode_batch(&mut sessions, tokens);
        self.sessions.extend(taken);
        let (floats, stats) = result?;
        Ok(Answer { reply: Reply::Logits { stats }, floats })
    }
}

/// One decode step with the coworker or alone, as `pace` says while it
/// chooses (then as it chose), timed for it.
fn decode_paced(
    pace: &mut Pace,
    session: &mut CpuSession,
    token: u32,
) -> Result<(Vec<f32>, StepStats)> {
    let with = pace.next_with();
    let paced = coworker::available();
    if paced {
        coworker::set_active(with);
    }
    let floats = session.forward(&[token], crate::step::Wanted::Last)?;
    let stats = session.last_stats();
    if paced {
        pace.record(with, stats.wall_ms);
    }
    Ok((floats, stats))
}

fn failed(e: EngineError) -> Answer {
    Answer::bare(Reply::Failed { message: e.to_string() })
}

fn inspected(stats: StepStats, seen: crate::step::Inspection, look: Look) -> Answer {
    let (logits, residuals, attention) = (seen.logits.len(), seen.residuals, seen.attention);
    let mut floats = seen.logits;
    let residuals = residuals.filter(|_| look.residuals).map(|r| {
        floats.extend(&r);
        r.len()
    });
    let attention = attention.filter(|_| look.attention).map(|a| {
        floats.extend(&a);
        a.len()
    });
    Answer { reply: Reply::Inspected { stats, logits, residuals, attention }, floats }
}

/// The value of a future that never waits: a CPU session without a pause
/// finishes its work in the first poll, so the worker needs no executor.
fn ready<T>(future: impl Future<Output = T>) -> Result<T> {
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => Ok(value),
        Poll::Pending => Err(EngineError::Remote("a CPU step waited on the worker".into())),
    }
}
