//! The CPU engine in a worker, reached through messages, as an [`EngineSession`].

use super::RemoteSession;
use crate::engine_session::{EngineSession, Kind};
use crate::error::Result;
use crate::kv_policy::KvPolicy;
use crate::model::Config;
use crate::step::{DeviceFigures, Inspection, KvBytes, Look, StepStats, Wanted};
use crate::storage::format::Format;

impl EngineSession for RemoteSession {
    fn kind(&self) -> Kind {
        Kind::Worker
    }
    fn config(&self) -> &Config {
        RemoteSession::config(self)
    }
    fn pos(&self) -> usize {
        RemoteSession::pos(self)
    }
    fn policy(&self) -> KvPolicy {
        RemoteSession::policy(self)
    }
    fn under(self, policy: KvPolicy) -> Result<Self> {
        Ok(self.model().session_under(policy))
    }
    async fn slots(&self) -> Result<(Vec<usize>, Vec<f32>)> {
        RemoteSession::slots(self).await
    }
    async fn prefill_inspected(
        &mut self,
        tokens: &[u32],
        wanted: Wanted,
        look: Look,
    ) -> Result<Inspection> {
        RemoteSession::prefill_inspected(self, tokens, wanted, look).await
    }
    async fn decode(&mut self, token: u32) -> Result<Vec<f32>> {
        RemoteSession::decode(self, token).await
    }
    fn rewind(&mut self, to: usize) -> Result<()> {
        RemoteSession::rewind(self, to)
    }
    fn fork(&self) -> Result<Self> {
        Ok(RemoteSession::fork(self))
    }
    fn copy_from(&mut self, src: &Self) -> Result<u64> {
        RemoteSession::copy_from(self, src)
    }
    fn last_stats(&self) -> StepStats {
        RemoteSession::last_stats(self)
    }
    async fn kv_bytes(&self) -> Result<KvBytes> {
        RemoteSession::kv_bytes(self).await
    }
    fn decode_bytes(&self) -> u64 {
        RemoteSession::decode_bytes(self)
    }
    fn weights(&self) -> (Format, u64) {
        RemoteSession::weights(self)
    }
    async fn device_figures(&self) -> Result<DeviceFigures> {
        self.model().device_figures().await
    }
    fn backend_name(&self) -> String {
        "cpu (worker)".into()
    }
    async fn settle(&self) -> Result<()> {
        self.model().settle().await.map(|_| ())
    }
}
