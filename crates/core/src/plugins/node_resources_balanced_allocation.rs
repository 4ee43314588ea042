//! NodeResourcesBalancedAllocation: prefer nodes the pod leaves better
//! balanced. A node's balance is `(1 - std deviation of its utilisation
//! fractions) * 100`, in [50, 100]; as kube-scheduler v1.36 does, the score
//! is the change the pod brings, mapped back into [50, 100]:
//! `50 + (50 + with - without) / 2` (75 when the pod changes nothing).

use serde::Deserialize;
use std::sync::Arc;

use super::node_resources_fit::{ResourceSpec, validate_resources};
use crate::cache::Snapshot;
use crate::framework::{CycleState, MAX_NODE_SCORE, Plugin, Points, Status, score_each};
use crate::node::{NodeInfo, NodeRow};
use crate::pod::PodInfo;
use crate::resources::{ResourceKey, is_scalar_resource_name};

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
    /// Builds the plugin, validating the args as kube-scheduler does: an
    /// empty list means cpu and memory, a weight left out (or 0) is 1, and
    /// any other weight is refused (the score is unweighted).
    pub fn new(args: BalancedAllocationArgs) -> Result<Self, String> {
        let mut resources = args.resources.unwrap_or_default();
        validate_resources(&mut resources, "resources")?;
        for (i, r) in resources.iter().enumerate() {
            if r.weight != 1 {
                return Err(format!("resources[{i}].weight: Invalid value: {}: must be 1", r.weight));
            }
            if resources[..i].iter().any(|o| o.name == r.name) {
                return Err(format!("resources[{i}].name: Duplicate value: {:?}", r.name));
            }
        }
        Ok(BalancedAllocation {
            resources: resources.iter().map(|r| ResourceKey::parse(&r.name)).collect(),
        })
    }
}

/// `(1 - std deviation of the fractions) * 100`, truncated (the fractions
/// are capped at 1, so this is in [50, 100]).
fn balance(fractions: &[f64]) -> i64 {
    let std = match fractions.len() {
        0 | 1 => 0.0,
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        n => {
            let mean = fractions.iter().sum::<f64>() / n as f64;
            (fractions.iter().map(|f| (f - mean) * (f - mean)).sum::<f64>() / n as f64).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

/// The score: the change the pod brings to the node's balance, mapped back
/// into [50, 100] (both balances are in [50, 100], so the sum is never
/// negative).
#[inline]
fn change_in_balance(with: &[f64], without: &[f64]) -> i64 {
    let half = MAX_NODE_SCORE / 2;
    half + (half + balance(with) - balance(without)) / 2
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

    /// Scores a batch: the pod's side is read once; with the default
    /// resources (cpu and memory) each node's score is computed inline.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
        out: &mut [i64],
    ) -> Result<(), Status> {
        if self.resources != [ResourceKey::Cpu, ResourceKey::Memory] {
            return score_each(self, state, pod, nodes, out);
        }
        let (cpu, mem) = (pod.requests.requests.milli_cpu, pod.requests.requests.memory);
        for (o, r) in out.iter_mut().zip(rows) {
            *o = match (r.alloc_milli_cpu, r.alloc_memory) {
                // One fraction or none: no deviation, with the pod or without.
                (0, _) | (_, 0) => change_in_balance(&[], &[]),
                (ac, am) => {
                    let (ac, am) = (ac as f64, am as f64);
                    let f = |u: i64, a: f64| (u as f64 / a).min(1.0);
                    change_in_balance(
                        &[f(r.used_milli_cpu + cpu, ac), f(r.used_memory + mem, am)],
                        &[f(r.used_milli_cpu, ac), f(r.used_memory, am)],
                    )
                }
            };
        }
        Ok(())
    }

    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        // At most a handful of resources: keep the fractions on the stack.
        let (mut with, mut without) = ([0f64; 8], [0f64; 8]);
        let mut n = 0;
        for key in &self.resources {
            let req = pod.requests.requests.get_key(key);
            if !scored(key, req) {
                continue;
            }
            let alloc = node.node.allocatable.get_key(key);
            if alloc == 0 || n == with.len() {
                continue;
            }
            let used = node.usage.requested.get_key(key);
            with[n] = ((used + req) as f64 / alloc as f64).min(1.0);
            without[n] = (used as f64 / alloc as f64).min(1.0);
            n += 1;
        }
        Ok(change_in_balance(&with[..n], &without[..n]))
    }
}

/// Whether a resource takes part in a node's score, as kube-scheduler
/// decides it: `pods` never does, and a scalar resource (extended,
/// hugepages) only when the pod requests some, so a pod that needs no GPU
/// is not drawn to nodes by their idle GPUs.
pub(crate) fn scored(key: &ResourceKey, pod_request: i64) -> bool {
    match key {
        ResourceKey::Pods => false,
        ResourceKey::Scalar(name) => pod_request != 0 || !is_scalar_resource_name(name),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{assert_batch_scores_as_single, node, node_alloc, pod, pod_req, with_pod};
    use serde_json::{Value, json};

    #[test]
    fn scores_the_change_in_balance() {
        let st = CycleState::default();
        let p = BalancedAllocation::new(BalancedAllocationArgs::default()).unwrap();
        let n = node_alloc("n", "4", "8Gi");
        // cpu 1/4 = mem 2/8: balanced with the pod as without it → 75
        assert_eq!(p.score(&st, &pod_req("1", "2Gi"), &n).unwrap(), 75);
        // cpu 3/4, mem 2/8 → 75 with the pod, 100 without → 62
        assert_eq!(p.score(&st, &pod_req("3", "2Gi"), &n).unwrap(), 62);
        // existing usage counts; fractions cap at 1: 50 → 100
        let busy = with_pod(node_alloc("b", "4", "8Gi"), &pod_req("4", "0"));
        assert_eq!(p.score(&st, &pod_req("1", "8Gi"), &busy).unwrap(), 100);
        let be = pod(json!({"containers": [{"name": "c"}]}));
        assert!(
            p.pre_score(&mut CycleState::default(), &be, &Snapshot::default(), &[])
                .is_skip()
        );
    }

    /// A container requesting `r` (`cpu`, `memory`, extended resources;
    /// quantities as kube-scheduler's tests write them).
    fn ctr(r: Value) -> Value {
        json!({"name": "c", "resources": {"requests": r}})
    }

    fn containers(cs: &[Value]) -> PodInfo {
        pod(json!({"containers": cs.iter().map(|r| ctr(r.clone())).collect::<Vec<_>>()}))
    }

    fn sized(name: &str, cpu: &str, mem: &str, gpu: Option<&str>) -> NodeInfo {
        let mut a = json!({"cpu": cpu, "memory": mem, "pods": "32"});
        if let Some(g) = gpu {
            a["nvidia.com/gpu"] = json!(g);
        }
        node(name, json!({}), json!({}), a)
    }

    /// A case: its name, the plugin, the pod, the nodes, the scores wanted.
    type Case<'a> = (&'a str, &'a BalancedAllocation, PodInfo, Vec<NodeInfo>, Vec<i64>);

    /// kube-scheduler v1.36's `TestNodeResourcesBalancedAllocation` cases
    /// (quantities as there: CPU in millicores, memory in bytes).
    #[test]
    fn kube_scheduler_cases() {
        let st = CycleState::default();
        let cpu_mem = || {
            containers(&[
                json!({"cpu": "1000m", "memory": "2000"}),
                json!({"cpu": "2000m", "memory": "3000"}),
            ])
        };
        let cpu_only = || containers(&[json!({"cpu": "1000m"}), json!({"cpu": "2000m"})]);
        let fit = BalancedAllocation::new(BalancedAllocationArgs::default()).unwrap();
        let gpu = BalancedAllocation::new(BalancedAllocationArgs {
            resources: Some(
                ["cpu", "memory", "nvidia.com/gpu"]
                    .iter()
                    .map(|n| ResourceSpec {
                        name: (*n).into(),
                        weight: 1,
                    })
                    .collect(),
            ),
            ..Default::default()
        })
        .unwrap();
        let cases: Vec<Case<'_>> = vec![
            (
                "nothing scheduled, resources requested, differently sized nodes",
                &fit,
                cpu_mem(),
                vec![sized("n1", "4000m", "10000", None), sized("n2", "6000m", "10000", None)],
                vec![68, 75],
            ),
            (
                "resources requested, pods scheduled with resources",
                &fit,
                cpu_mem(),
                vec![
                    with_pod(sized("n1", "10000m", "20000", None), &cpu_only()),
                    with_pod(sized("n2", "10000m", "20000", None), &cpu_mem()),
                ],
                vec![73, 74],
            ),
            (
                "resources requested, pods scheduled with resources, differently sized nodes",
                &fit,
                cpu_mem(),
                vec![
                    with_pod(sized("n1", "10000m", "20000", None), &cpu_only()),
                    with_pod(sized("n2", "10000m", "50000", None), &cpu_mem()),
                ],
                vec![73, 70],
            ),
            (
                "resources requested, pods scheduled with resources, nodes to reach min and max score",
                &fit,
                containers(&[json!({"memory": "2000"}), json!({"memory": "3000"})]),
                vec![
                    with_pod(sized("n1", "3000m", "5000", None), &cpu_only()),
                    sized("n2", "3000m", "5000", None),
                ],
                vec![100, 50],
            ),
            (
                "requested resources at node capacity",
                &fit,
                cpu_only(),
                vec![
                    with_pod(sized("n1", "6000m", "10000", None), &cpu_only()),
                    with_pod(sized("n2", "6000m", "10000", None), &cpu_mem()),
                ],
                vec![62, 62],
            ),
            (
                "a scalar resource is scored when the pod requests it",
                &gpu,
                containers(&[json!({"cpu": "0", "memory": "0", "nvidia.com/gpu": "1"})]),
                vec![
                    with_pod(
                        sized("n1", "3500m", "40000", Some("8")),
                        &containers(&[
                            json!({"cpu": "1000m", "memory": "2000"}),
                            json!({"cpu": "2000m", "memory": "3000", "nvidia.com/gpu": "3"}),
                        ]),
                    ),
                    with_pod(sized("n2", "3500m", "40000", Some("8")), &cpu_mem()),
                ],
                vec![75, 76],
            ),
            (
                "a scalar resource is not scored when the pod does not request it",
                &gpu,
                cpu_mem(),
                vec![
                    sized("n1", "3500m", "40000", Some("8")),
                    sized("n2", "3500m", "40000", None),
                ],
                vec![56, 56],
            ),
        ];
        for (name, plugin, p, nodes, want) in cases {
            let got: Vec<i64> = nodes.iter().map(|n| plugin.score(&st, &p, n).unwrap()).collect();
            assert_eq!(got, want, "{name}");
        }
    }

    /// The batch gives what each node's score gives.
    #[test]
    fn batches_score_as_single_nodes() {
        let p = BalancedAllocation::new(BalancedAllocationArgs::default()).unwrap();
        assert_batch_scores_as_single(&p, &[pod_req("1", "2Gi"), pod_req("100m", "0"), pod_req("3", "7Gi")]);
    }

    #[test]
    fn args_are_defaulted_and_checked_as_kube_scheduler_does() {
        let args = |v: Value| BalancedAllocation::new(serde_json::from_value(v).unwrap());
        let keys = |p: BalancedAllocation| p.resources;
        assert_eq!(
            keys(args(json!({"resources": []})).unwrap()),
            [ResourceKey::Cpu, ResourceKey::Memory]
        );
        assert!(args(json!({"resources": [{"name": "cpu", "weight": 0}, {"name": "memory"}]})).is_ok());
        assert_eq!(
            args(json!({"resources": [{"name": "cpu", "weight": 2}]})).unwrap_err(),
            "resources[0].weight: Invalid value: 2: must be 1"
        );
    }
}
