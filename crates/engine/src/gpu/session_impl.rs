//! The GPU engine as an [`EngineSession`].

use super::GpuSession;
use crate::engine_session::{EngineSession, Kind};
use crate::error::Result;
use crate::kernels::{Cost, Kernel};
use crate::kv_policy::KvPolicy;
use crate::model::Config;
use crate::step::{DeviceFigures, Inspection, KvBytes, Look, StepStats, Wanted};
use crate::storage::format::Format;

impl EngineSession for GpuSession {
    fn kind(&self) -> Kind {
        Kind::Gpu
    }
    fn config(&self) -> &Config {
        GpuSession::config(self)
    }
    fn pos(&self) -> usize {
        GpuSession::pos(self)
    }
    fn policy(&self) -> KvPolicy {
        GpuSession::policy(self)
    }
    fn under(self, policy: KvPolicy) -> Result<Self> {
        GpuSession::under(self, policy)
    }
    async fn slots(&self) -> Result<(Vec<usize>, Vec<f32>)> {
        Ok((self.held().to_vec(), self.mass().await?))
    }
    async fn prefill_inspected(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        look: Look,
    ) -> Result<Inspection> {
        GpuSession::prefill_inspected(self, tokens, wanted, look).await
    }
    async fn prefill(&mut self, tokens: &[u32], wanted: Wanted) -> Result<Vec<f32>> {
        GpuSession::prefill(self, tokens, wanted).await
    }
    async fn decode(&mut self, token: u32) -> Result<Vec<f32>> {
        GpuSession::decode(self, token).await
    }
    async fn decode_greedy(&mut self, token: u32) -> Result<u32> {
        GpuSession::decode_greedy(self, token).await
    }
    fn rewind(&mut self, to: usize) -> Result<()> {
        GpuSession::rewind(self, to)
    }
    fn fork(&self) -> Result<Self> {
        GpuSession::fork(self)
    }
    fn copy_from(&mut self, src: &Self) -> Result<u64> {
        GpuSession::copy_from(self, src)
    }
    fn last_stats(&self) -> StepStats {
        GpuSession::last_stats(self)
    }
    async fn kv_bytes(&self) -> Result<KvBytes> {
        Ok(GpuSession::kv_bytes(self))
    }
    fn decode_bytes(&self) -> u64 {
        self.model().model.weights.decode_bytes()
    }
    fn weights(&self) -> (Format, u64) {
        (self.model().format(), self.model().weight_bytes())
    }
    async fn device_figures(&self) -> Result<DeviceFigures> {
        crate::gpu::device_probe::measure(self.model()).await
    }
    fn backend_name(&self) -> String {
        format!("gpu ({})", self.adapter_name())
    }
    fn pipeline_compile_ms(&self) -> Option<f64> {
        Some(self.model().pipelines.compile_ms)
    }
    fn decode_costs(&self) -> Option<Vec<(Kernel, Cost)>> {
        Some(GpuSession::decode_costs(self))
    }
}
