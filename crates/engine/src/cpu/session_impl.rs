//! The CPU engine on this thread as an [`EngineSession`].

use super::CpuSession;
use crate::engine_session::{EngineSession, Kind};
use crate::error::Result;
use crate::kv_policy::KvPolicy;
use crate::model::Config;
use crate::step::{DeviceFigures, Inspection, KvBytes, Look, StepStats, Wanted};
use crate::storage::format::Format;

impl EngineSession for CpuSession {
    fn kind(&self) -> Kind {
        Kind::Cpu
    }
    fn config(&self) -> &Config {
        CpuSession::config(self)
    }
    fn pos(&self) -> usize {
        CpuSession::pos(self)
    }
    fn policy(&self) -> KvPolicy {
        CpuSession::policy(self)
    }
    fn under(self, policy: KvPolicy) -> Result<Self> {
        Ok(self.with_policy(policy))
    }
    async fn slots(&self) -> Result<(Vec<usize>, Vec<f32>)> {
        Ok((self.held().to_vec(), self.mass().to_vec()))
    }
    async fn prefill_inspected(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        look: Look,
    ) -> Result<Inspection> {
        CpuSession::prefill_inspected(self, tokens, wanted, look).await
    }
    async fn decode(&mut self, token: u32) -> Result<Vec<f32>> {
        self.forward(&[token], Wanted::Last)
    }
    fn rewind(&mut self, to: usize) -> Result<()> {
        CpuSession::rewind(self, to)
    }
    fn fork(&self) -> Result<Self> {
        Ok(self.clone())
    }
    fn copy_from(&mut self, src: &Self) -> Result<u64> {
        CpuSession::copy_from(self, src)
    }
    fn last_stats(&self) -> StepStats {
        CpuSession::last_stats(self)
    }
    async fn kv_bytes(&self) -> Result<KvBytes> {
        Ok(CpuSession::kv_bytes(self))
    }
    fn decode_bytes(&self) -> u64 {
        self.model().weights.decode_bytes()
    }
    fn weights(&self) -> (Format, u64) {
        (self.model().format(), self.model().weights.bytes())
    }
    async fn device_figures(&self) -> Result<DeviceFigures> {
        Ok(CpuSession::device_figures(self).await)
    }
    fn backend_name(&self) -> String {
        "cpu".into()
    }
    async fn pause(&self) {
        CpuSession::pause(self).await
    }
}
