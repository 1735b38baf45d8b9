//! A GPU session's cache as slots under its policy (`kv_policy`): the same
//! slots as the CPU engine's (`kv_slots`), so every token lands in the same
//! slot on both. A pass that fits the budget appends its rows; past it a
//! token takes the slot of the one the policy drops, so the buffers hold the
//! budget's rows and no more, and attention reads only the held slots. A
//! heavy-hitter session's totals stay on the GPU (`kv_mass`, added by every
//! block); they are read back only when the cache is full and one token must
//! leave. The pass itself is `pass.rs`.

use crate::error::{EngineError, Result};
use crate::gpu::ops::Totals;
use crate::gpu::plan::Place;
use crate::gpu::readback::{buffer, read_f32, STORAGE};
use crate::gpu::session::GpuSession;
use crate::gpu::GpuModel;
use crate::kv_policy::KvPolicy;
use crate::step::StepStats;

/// Most rows of a heavy-hitter pass: its attention weights (n_head × rows ×
/// slots) are kept for one pass, so a longer prompt goes in chunks of these.
pub const MASS_ROWS: usize = 64;

impl Totals {
    /// Zeroed totals for `slots` slots, and room for one pass's weights.
    pub fn new(gpu: &GpuModel, slots: usize) -> Result<Totals> {
        let c = gpu.config();
        let probs_bytes = (c.n_head * MASS_ROWS * slots * 4) as u64;
        gpu.ctx.check_binding("a heavy-hitter pass's attention weights", probs_bytes)?;
        let mass = buffer(&gpu.ctx, "mass", (slots * 4) as u64, STORAGE);
        gpu.ctx.queue.write_buffer(&mass, 0, bytemuck::cast_slice(&vec![0f32; slots]));
        Ok(Totals { probs: buffer(&gpu.ctx, "probs", probs_bytes, STORAGE), mass })
    }
}

impl GpuSession {
    /// The policy this session's cache follows.
    pub fn policy(&self) -> KvPolicy {
        self.slots.policy()
    }

    /// A new empty session of the same model whose cache keeps what
    /// `policy` keeps (this one must be empty: its cache is allocated anew).
    pub fn under(self, policy: KvPolicy) -> Result<GpuSession> {
        if self.pos != 0 {
            return Err(EngineError::Setting(
                "a cache policy is chosen before the first token".into(),
            ));
        }
        GpuSession::with_policy(self.shared().clone(), policy)
    }

    /// The position of the token in each cache slot (slot order).
    pub fn held(&self) -> &[usize] {
        self.slots.held()
    }

    /// (held) the attention each slot has received (heavy hitters only;
    /// else empty): read back from the GPU.
    pub async fn mass(&self) -> Result<Vec<f32>> {
        match &self.totals {
            Some(t) => self.read_mass(t).await,
            None => Ok(Vec::new()),
        }
    }

    async fn read_mass(&self, totals: &Totals) -> Result<Vec<f32>> {
        let ctx = &self.model().ctx;
        let bytes = (self.slots.held().len() * 4).max(4) as u64;
        let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let staging = buffer(ctx, "mass staging", bytes, read);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&totals.mass, 0, &staging, 0, bytes);
        ctx.queue.submit([enc.finish()]);
        let mass = read_f32(ctx, &staging, bytes).await;
        staging.destroy();
        Ok(mass?.into_iter().take(self.slots.held().len()).collect())
    }

    /// Where the next token would go if it fits (the bench's and the kernel
    /// timer's pass): after the held slots.
    pub(super) fn next_place(&self) -> Place {
        let held = self.slots.held().len() as u32;
        let turn0 = self.turn0(held);
        Place { pos0: self.pos as u32, slot0: held, keys0: held, turn0, renumbered: 0 }
    }

    /// The rotary position of a pass's first row, `keys0` the slots held
    /// before it (`Slots::turn0`).
    fn turn0(&self, keys0: u32) -> u32 {
        self.slots.turn0(self.pos, keys0 as usize) as u32
    }

    /// The slots the next `rows` tokens take (the policy drops a held token
    /// when they do not fit; a heavy-hitter session reads its totals first,
    /// and the newcomer's total starts again at 0).
    pub(super) async fn take_room(&mut self, rows: usize, stats: &mut StepStats) -> Result<Place> {
        let mass = match &self.totals {
            Some(t) if !self.slots.fits(rows) => {
                let mass = self.read_mass(t).await?;
                stats.submits += 1;
                stats.bytes_read += mass.len() * 4;
                mass
            }
            _ => Vec::new(),
        };
        let room = self.slots.take(self.pos, rows, &mass);
        let queue = &self.model().ctx.queue;
        if let (Some(t), true) = (&self.totals, room.reused) {
            let at = (room.slot0 * 4) as u64;
            queue.write_buffer(&t.mass, at, bytemuck::bytes_of(&0f32));
            stats.bytes_written += 4;
        }
        let renumbered: Vec<u32> = self.slots.renumbered(room).iter().map(|&s| s as u32).collect();
        if let (Some(list), false) = (&self.renumbered, renumbered.is_empty()) {
            queue.write_buffer(list, 0, bytemuck::cast_slice(&renumbered));
            stats.bytes_written += renumbered.len() * 4;
        }
        let (slot0, keys0) = (room.slot0 as u32, room.keys0 as u32);
        let (turn0, renumbered) = (self.turn0(keys0), renumbered.len() as u32);
        Ok(Place { pos0: self.pos as u32, slot0, keys0, turn0, renumbered })
    }

    /// The slot of this session's next token in a batched step (a batch
    /// has no heavy-hitter totals: `GpuBatch::new` refuses such a session).
    pub(super) fn take_slot(&mut self) -> Place {
        let room = self.slots.take(self.pos, 1, &[]);
        let (slot0, keys0) = (room.slot0 as u32, room.keys0 as u32);
        let turn0 = self.turn0(keys0);
        Place { pos0: self.pos as u32, slot0, keys0, turn0, renumbered: 0 }
    }

    /// Forgets the slots of positions `to..`: the held slots past the new
    /// length move into the holes below it (`Slots::rewind`), through a
    /// scratch buffer (a buffer cannot be copied into itself), in one submit.
    pub(super) fn rewind_slots(&mut self, to: usize) {
        let moves = self.slots.rewind(to);
        if moves.is_empty() {
            return;
        }
        let ctx = self.model().ctx.clone();
        let row = (self.config().kv_dim() * 4) as u64;
        let caches = self.caches();
        let mut rows: Vec<(&wgpu::Buffer, u64)> =
            caches.key_cache.iter().chain(caches.value_cache).map(|b| (b, row)).collect();
        if let Some(t) = &self.totals {
            rows.push((&t.mass, 4));
        }
        let n = moves.len() as u64;
        let scratch_bytes: u64 = rows.iter().map(|(_, r)| r * n).sum();
        let scratch = buffer(&ctx, "rewind scratch", scratch_bytes, STORAGE);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let mut at = 0;
        for &(b, r) in &rows {
            for (i, &(from, _)) in moves.iter().enumerate() {
                enc.copy_buffer_to_buffer(b, from as u64 * r, &scratch, at + i as u64 * r, r);
            }
            for (i, &(_, to)) in moves.iter().enumerate() {
                enc.copy_buffer_to_buffer(&scratch, at + i as u64 * r, b, to as u64 * r, r);
            }
            at += r * n;
        }
        ctx.queue.submit([enc.finish()]);
        scratch.destroy();
    }
}
