//! NodeResourcesBalancedAllocation: prefer nodes whose resource
//! utilisations (with the pod) are close to each other, scored
//! `(1 - std deviation of the fractions) * 100`.

use serde::Deserialize;
use std::sync::Arc;

use super::node_resources_fit::{ResourceSpec, default_resources, validate_resources};
use crate::cache::Snapshot;
use crate::framework::{CycleState, MAX_NODE_SCORE, Plugin, Points, Status};
use crate::node::NodeInfo;
use crate::pod::PodInfo;
use crate::resources::ResourceKey;

/// `NodeResourcesBalancedAllocationArgs`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BalancedAllocationArgs {
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub kind: Option<String>,
    /// Resources to balance (default cpu and memory).
    #[serde(default)]
    pub resources: Option<Vec<ResourceSpec>>,
}

/// The NodeResourcesBalancedAllocation score.
#[derive(Debug, Clone)]
pub struct BalancedAllocation {
    resources: Vec<ResourceKey>,
}

impl BalancedAllocation {
    /// Builds the plugin, validating the args.
    pub fn new(args: BalancedAllocationArgs) -> Result<Self, String> {
        let resources = args.resources.unwrap_or_else(default_resources);
        validate_resources(&resources, "resources")?;
        Ok(BalancedAllocation {
            resources: resources.iter().map(|r| ResourceKey::parse(&r.name)).collect(),
        })
    }
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &str {
        super::names::NODE_RESOURCES_BALANCED_ALLOCATION
    }

    fn points(&self) -> Points {
        Points::PRE_SCORE | Points::SCORE
    }

    fn pre_score(&self, _: &mut CycleState, pod: &PodInfo, _: &Snapshot, _: &[&Arc<NodeInfo>]) -> Status {
        // Best-effort pods (no request of any balanced resource): skip.
        if self.resources.iter().all(|k| pod.requests.requests.get_key(k) == 0) {
            Status::skip()
        } else {
            Status::success()
        }
    }

    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        // At most a handful of resources: keep the fractions on the stack.
        let mut fractions = [0f64; 8];
        let mut n = 0;
        let mut sum = 0.0;
        for key in &self.resources {
            let alloc = node.node.allocatable.get_key(key);
            if alloc == 0 || n == fractions.len() {
                continue;
            }
            let req = node.usage.requested.get_key(key) + pod.requests.requests.get_key(key);
            let f = (req as f64 / alloc as f64).min(1.0);
            fractions[n] = f;
            sum += f;
            n += 1;
        }
        let std = match n {
            0 | 1 => 0.0,
            2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
            _ => {
                let mean = sum / n as f64;
                (fractions[..n].iter().map(|f| (f - mean) * (f - mean)).sum::<f64>() / n as f64).sqrt()
            }
        };
        Ok(((1.0 - std) * MAX_NODE_SCORE as f64) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{node_alloc, pod, pod_req, with_pod};
    use serde_json::json;

    #[test]
    fn score() {
        let st = CycleState::default();
        let p = BalancedAllocation::new(BalancedAllocationArgs::default()).unwrap();
        let n = node_alloc("n", "4", "8Gi");
        // cpu 1/4 = .25, mem 2/8 = .25 → balanced → 100
        assert_eq!(p.score(&st, &pod_req("1", "2Gi"), &n).unwrap(), 100);
        // cpu 3/4 = .75, mem 2/8 = .25 → std .25 → 75
        assert_eq!(p.score(&st, &pod_req("3", "2Gi"), &n).unwrap(), 75);
        // existing usage counts; fractions cap at 1
        let busy = with_pod(node_alloc("b", "4", "8Gi"), &pod_req("4", "0"));
        assert_eq!(p.score(&st, &pod_req("1", "8Gi"), &busy).unwrap(), 100);
        let be = pod(json!({"containers": [{"name": "c"}]}));
        assert!(
            p.pre_score(&mut CycleState::default(), &be, &Snapshot::default(), &[])
                .is_skip()
        );
    }
}
