//! `gpu-memory`: prefer the node where the pod's GPU would have the most
//! memory. Dynamic Resource Allocation (contract 0.6): for each feasible
//! node, kube-scheduler's DynamicResources has chosen devices for the pod's
//! claims there (`nodes.allocation`); the raw score is the sum, in bytes,
//! of those devices' capacity `memory` (qualified by each device's driver,
//! `gpu.example.com/memory`, as capacities are published), read from the
//! node's devices (`nodes.devices`). NormalizeScore maps the largest to
//! 100 and the others in proportion. A node without an allocation, or
//! whose devices publish no such capacity, scores 0; a pod without claims
//! is skipped at PreScore.
//!
//! Args (optional): `{"capacity": "memory"}` (the default), the capacity
//! to compare: a name without a domain is the driver's, a qualified one
//! (`gpu.example.com/memory`) is taken as is. The twin of
//! ../python/gpu_memory.py.

use wasmsched_plugin::serde_json::Value;
use wasmsched_plugin::{
    ClusterEvent, EventActions, EventResource, Nodes, Plugin, Pod, Points, Status, event, skip, success,
};

struct GpuMemory {
    capacity: String,
}

impl Plugin for GpuMemory {
    const NAME: &'static str = "gpu-memory";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn points() -> Points {
        Points::PRE_SCORE | Points::SCORE | Points::NORMALIZE_SCORE
    }

    /// New or changed devices change what a node offers.
    fn events() -> Option<Vec<ClusterEvent>> {
        Some(vec![event(
            EventResource::ResourceSlice,
            EventActions::ADD | EventActions::UPDATE,
        )])
    }

    fn configure(args: &Value) -> Result<Self, String> {
        // `null` is no args, as in the Python SDK.
        if !args.is_object() && !args.is_null() {
            return Err("args: must be a JSON object".into());
        }
        let capacity = match args.get("capacity") {
            None => "memory".to_owned(),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err("args.capacity: must be a non-empty string".into()),
        };
        Ok(GpuMemory { capacity })
    }

    /// Nothing to compare for a pod without claims.
    fn pre_score(&self, pod: &Pod, _: &Nodes) -> Result<Status, String> {
        Ok(if pod.claims().is_empty() { skip() } else { success() })
    }

    /// Raw score: the bytes of the capacity of the devices allocated for
    /// the pod on the node; 0 without an allocation.
    fn score(&self, _: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        Ok((0..nodes.len())
            .map(|i| {
                nodes.allocated_devices(i).map_or(0, |devices| {
                    devices
                        .iter()
                        .filter_map(|d| d.capacity_of(&self.capacity))
                        .fold(0i64, |sum, c| sum.saturating_add(c.value.max(0)))
                })
            })
            .collect())
    }

    /// The most memory → 100, the others in proportion; 0 stays 0.
    fn normalize_score(&self, _: &Pod, scores: Vec<i64>) -> Result<Vec<i64>, String> {
        let max = scores.iter().copied().max().unwrap_or(0);
        if max <= 0 {
            return Ok(vec![0; scores.len()]);
        }
        Ok(scores
            .iter()
            .map(|&s| (i128::from(s.max(0)) * 100 / i128::from(max)) as i64)
            .collect())
    }
}

wasmsched_plugin::export!(GpuMemory);
