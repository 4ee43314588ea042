//! NodeAffinity: `spec.nodeSelector` and required node affinity filter
//! nodes; preferred node affinity terms add their weights to the score.

use serde::Deserialize;
use std::sync::Arc;

use crate::cache::Snapshot;
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, Plugin, Points, Status, default_normalize_score};
use crate::node::{NodeData, NodeInfo};
use crate::pod::PodInfo;

/// The reason, in kube-scheduler's words.
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";

/// Every required term names nodes, and no name is in all of them.
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

/// The nodes required terms name (`metadata.name In (...)`), when every
/// term names some: the terms are ORed (union), a term's fields ANDed
/// (intersection). `None` when a term names none: any node may match it.
fn node_names(terms: &[crate::selector::Term]) -> Option<Vec<String>> {
    let mut all: Vec<String> = Vec::new();
    for t in terms {
        let mut term: Option<Vec<String>> = None;
        for r in t.fields.iter().filter(|r| r.op == crate::selector::Operator::In) {
            term = Some(match term {
                None => r.values.clone(),
                Some(before) => before.into_iter().filter(|n| r.values.contains(n)).collect(),
            });
        }
        for n in term? {
            if !all.contains(&n) {
                all.push(n);
            }
        }
    }
    Some(all)
}

/// NodeAffinity args. `addedAffinity` is not supported and is rejected.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeAffinityArgs {
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(rename = "apiVersion", default)]
    pub api_version: Option<String>,
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub kind: Option<String>,
}

/// The NodeAffinity filter and score.
#[derive(Debug, Default)]
pub struct NodeAffinity;

impl NodeAffinity {
    /// Builds the plugin from its args.
    pub fn new(_args: NodeAffinityArgs) -> Result<Self, String> {
        Ok(NodeAffinity)
    }

    /// Whether the node satisfies the pod's node selector and required affinity.
    pub fn matches(pod: &PodInfo, node: &NodeInfo) -> bool {
        Self::matches_node(pod, &node.node)
    }

    /// [`NodeAffinity::matches`] for a node's data.
    pub fn matches_node(pod: &PodInfo, node: &NodeData) -> bool {
        let labels = &node.labels;
        pod.node_selector.iter().all(|(k, v)| labels.get(k) == Some(v))
            && pod
                .required_affinity
                .as_ref()
                .is_none_or(|terms| terms.iter().any(|t| t.matches(labels, &node.name)))
    }
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &str {
        super::names::NODE_AFFINITY
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent {
            resource: Resource::Node,
            action: Action::ADD | Action::UPDATE_NODE_LABEL,
        }]
    }

    /// A node that matches now and did not before.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let queue = match change {
            Change::NodeAdded(n) => Self::matches_node(pod, n),
            Change::NodeUpdated { old, new, .. } => !Self::matches_node(pod, old) && Self::matches_node(pod, new),
            _ => false,
        };
        if queue { QueueingHint::Queue } else { QueueingHint::Skip }
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::PRE_SCORE | Points::SCORE
    }

    /// Skips pods without node constraints; when every required term names
    /// nodes (`matchFields` on `metadata.name`, as DaemonSet pods do),
    /// restricts the cycle to those nodes.
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> Status {
        if pod.node_selector.is_empty() && pod.required_affinity.is_none() {
            return Status::skip();
        }
        if let Some(names) = pod.required_affinity.as_deref().and_then(node_names) {
            if names.is_empty() {
                return Status::unresolvable(ERR_REASON_CONFLICT);
            }
            state.restrict_nodes(self.name(), names);
        }
        Status::success()
    }

    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if Self::matches(pod, node) {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON_POD)
        }
    }

    fn pre_score(&self, _: &mut CycleState, pod: &PodInfo, _: &Snapshot, _: &[&Arc<NodeInfo>]) -> Status {
        if pod.preferred_affinity.is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }

    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(pod
            .preferred_affinity
            .iter()
            .filter(|(_, t)| t.matches(&node.node.labels, node.name()))
            .map(|(w, _)| w)
            .sum())
    }

    fn normalize_scores(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) -> Status {
        default_normalize_score(scores, false);
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{node, pod};
    use serde_json::json;

    fn labeled(name: &str, labels: serde_json::Value) -> NodeInfo {
        node(name, labels, json!({}), json!({}))
    }

    #[test]
    fn filter() {
        let st = CycleState::default();
        let ssd_a = labeled("n1", json!({"disk": "ssd", "zone": "a", "gen": "5"}));
        let hdd_b = labeled("n2", json!({"disk": "hdd", "zone": "b"}));
        let sel = pod(json!({"containers": [], "nodeSelector": {"disk": "ssd"}}));
        let req = |exprs: serde_json::Value| {
            pod(
                json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": exprs}}}}),
            )
        };
        let not_in = req(json!([{"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["true"]}]}]));
        let gt = req(json!([{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}]));
        let ored = req(json!([
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
        ]));
        let empty_terms = req(json!([]));
        let cases: [(&PodInfo, &NodeInfo, bool); 9] = [
            (&sel, &ssd_a, true),
            (&sel, &hdd_b, false),
            (&not_in, &hdd_b, true), // NotIn on a missing label matches
            (&gt, &ssd_a, true),
            (&gt, &hdd_b, false), // Gt on a missing label does not
            (&ored, &ssd_a, false),
            (&ored, &hdd_b, true),
            (&empty_terms, &ssd_a, false),
            (&pod(json!({"containers": []})), &hdd_b, true),
        ];
        for (i, (p, n, fits)) in cases.into_iter().enumerate() {
            let s = NodeAffinity.filter(&st, p, n);
            assert_eq!(s.is_success(), fits, "case {i}");
            if !fits {
                assert_eq!(s, Status::unresolvable(ERR_REASON_POD));
            }
        }
        let mut cs = CycleState::default();
        assert!(
            NodeAffinity
                .pre_filter(&mut cs, &pod(json!({"containers": []})), &Snapshot::default())
                .is_skip()
        );
    }

    #[test]
    fn score_sums_matching_preferred_weights() {
        let st = CycleState::default();
        let p = pod(
            json!({"containers": [], "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
                {"weight": 30, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}
            ]}}}),
        );
        let nodes = [
            labeled("n1", json!({"zone": "a", "disk": "ssd"})),
            labeled("n2", json!({"zone": "a"})),
            labeled("n3", json!({})),
        ];
        let mut scores: Vec<i64> = nodes.iter().map(|n| NodeAffinity.score(&st, &p, n).unwrap()).collect();
        assert_eq!(scores, [40, 10, 0]);
        NodeAffinity.normalize_scores(&st, &p, &mut scores);
        assert_eq!(scores, [100, 25, 0]);
    }

    #[test]
    fn queueing_hint_a_node_that_starts_matching() {
        let p = pod(json!({"containers": [], "nodeSelector": {"disk": "ssd"}}));
        let hdd = node("n", json!({"disk": "hdd"}), json!({}), json!({}));
        let ssd = node("n", json!({"disk": "ssd"}), json!({}), json!({}));
        let upd = |old: &NodeInfo, new: &NodeInfo| {
            NodeAffinity.queueing_hint(
                &p,
                &Change::NodeUpdated {
                    old: &old.node,
                    new: &new.node,
                    action: Action::UPDATE_NODE_LABEL,
                },
            )
        };
        assert_eq!(upd(&hdd, &ssd), QueueingHint::Queue);
        assert_eq!(upd(&ssd, &ssd), QueueingHint::Skip, "it matched before");
        assert_eq!(
            NodeAffinity.queueing_hint(&p, &Change::NodeAdded(&hdd.node)),
            QueueingHint::Skip
        );
        assert_eq!(
            NodeAffinity.queueing_hint(&p, &Change::NodeAdded(&ssd.node)),
            QueueingHint::Queue
        );
    }
}
