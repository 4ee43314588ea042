//! TaintToleration: a node's NoSchedule and NoExecute taints must be
//! tolerated (filter); untolerated PreferNoSchedule taints lower the score.
//! Nodes the node controller taints `not-ready` or `unreachable` are thus
//! avoided by every pod that does not tolerate those taints.

use std::sync::Arc;

use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, Plugin, Points, Status, default_normalize_score};
use crate::node::{NodeData, NodeInfo, NodeRow, Taint, TaintEffect};
use crate::pod::{PodInfo, tolerated};

/// The reason, as kube-scheduler v1.36 words it: no taint key or value
/// (those are not for the pod's owner to read; they are logged instead).
pub const ERR_REASON_UNTOLERATED: &str = "node(s) had untolerated taint(s)";

/// The TaintToleration filter and score.
#[derive(Debug, Default)]
pub struct TaintToleration;

impl Plugin for TaintToleration {
    fn name(&self) -> &str {
        super::names::TAINT_TOLERATION
    }

    fn points(&self) -> Points {
        Points::FILTER | Points::SCORE
    }

    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        match untolerated(pod, &node.node) {
            None => Status::success(),
            Some(_) => Status::unresolvable(ERR_REASON_UNTOLERATED),
        }
    }

    /// Most nodes have no `NoSchedule` or `NoExecute` taint: their rows
    /// say so. The others share a few lists of taints: the verdict is
    /// taken once per list in a batch, the node read only when its list
    /// has no id.
    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        let mut by_set = BySet::default();
        for (i, (n, r)) in nodes.iter().zip(rows).enumerate() {
            if r.hard_taints && !by_set.get(r.taint_set, || self.filter(state, pod, n).is_success()) {
                rejected.push((i, Status::unresolvable(ERR_REASON_UNTOLERATED)));
            }
        }
    }

    /// Nodes without a `PreferNoSchedule` taint score 0 by their rows; the
    /// others once per list of taints, as Filter.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let mut by_set = BySet::default();
        for ((o, n), r) in out.iter_mut().zip(nodes).zip(rows) {
            *o = if r.soft_taints {
                by_set.get(r.taint_set, || self.score(state, pod, n).unwrap_or(0))
            } else {
                0
            };
        }
        Ok(())
    }

    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(node
            .node
            .taints
            .iter()
            .filter(|t| t.effect == TaintEffect::PreferNoSchedule && !tolerated(&pod.tolerations, t))
            .count() as i64)
    }

    fn normalize_scores(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) -> Status {
        default_normalize_score(scores, true);
        Status::success()
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        TAINT_EVENTS.to_vec()
    }

    /// A node whose taints the pod now tolerates (and did not before), or
    /// the pod's own tolerations changed.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let queue = match change {
            Change::NodeAdded(n) => untolerated(pod, n).is_none(),
            Change::NodeUpdated { old, new, .. } => untolerated(pod, old).is_some() && untolerated(pod, new).is_none(),
            Change::PodUpdated { new, .. } => new.uid == pod.uid,
            _ => false,
        };
        if queue { QueueingHint::Queue } else { QueueingHint::Skip }
    }
}

/// What may help a pod rejected for a taint (here or by NodeUnschedulable):
/// a new node, a node whose taints (or cordon) changed, the pod's own
/// tolerations changing.
pub const TAINT_EVENTS: &[ClusterEvent] = &[
    ClusterEvent {
        resource: Resource::Node,
        action: Action::ADD.union(Action::UPDATE_NODE_TAINT),
    },
    ClusterEvent {
        resource: Resource::AssignedPod,
        action: Action::UPDATE_POD_TOLERATION,
    },
];

/// What a batch found for each list of taints ([`NodeData::taint_set`]).
#[derive(Default)]
struct BySet<T> {
    seen: Vec<(u32, T)>,
}

impl<T: Copy> BySet<T> {
    /// Lists remembered at most: a cluster has a handful; past this the
    /// rest are decided node by node.
    const MAX: usize = 16;

    /// The value for list `set`, computed by `f` (reading the node) the
    /// first time, or every time for a list without an id.
    #[inline]
    fn get(&mut self, set: u32, f: impl FnOnce() -> T) -> T {
        if set == 0 {
            return f();
        }
        if let Some((_, v)) = self.seen.iter().find(|(s, _)| *s == set) {
            return *v;
        }
        let v = f();
        if self.seen.len() < Self::MAX {
            self.seen.push((set, v));
        }
        v
    }
}

/// The first NoSchedule/NoExecute taint of the node the pod does not tolerate.
fn untolerated<'a>(pod: &PodInfo, node: &'a NodeData) -> Option<&'a Taint> {
    node.taints
        .iter()
        .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        .find(|t| !tolerated(&pod.tolerations, t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::{node, pod};
    use serde_json::{Value, json};

    fn tainted(taints: Value) -> NodeInfo {
        node("n", json!({}), json!({"taints": taints}), json!({}))
    }

    #[test]
    fn filter() {
        let st = CycleState::default();
        let gpu = tainted(json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]));
        let not_ready = tainted(json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]));
        let prefer = tainted(json!([{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]));
        let none = pod(json!({"containers": []}));
        let exists_all = pod(json!({"containers": [], "tolerations": [{"operator": "Exists"}]}));
        let gpu_tol = pod(
            json!({"containers": [], "tolerations": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}),
        );
        let cases: [(&PodInfo, &NodeInfo, Option<&str>); 7] = [
            (&none, &gpu, Some(ERR_REASON_UNTOLERATED)),
            (&none, &not_ready, Some(ERR_REASON_UNTOLERATED)),
            (&none, &prefer, None),
            (&exists_all, &gpu, None),
            (&exists_all, &not_ready, None),
            (&gpu_tol, &gpu, None),
            (&gpu_tol, &not_ready, Some(ERR_REASON_UNTOLERATED)),
        ];
        for (i, (p, n, want)) in cases.into_iter().enumerate() {
            let s = TaintToleration.filter(&st, p, n);
            match want {
                None => assert!(s.is_success(), "case {i}: {s}"),
                Some(r) => assert_eq!(
                    (s.code(), s.message()),
                    (Code::UnschedulableAndUnresolvable, r.to_owned()),
                    "case {i}"
                ),
            }
        }
    }

    /// Nodes of a cache share an id per list of taints: a batch decides
    /// once per list, and must decide as node by node.
    #[test]
    fn batches_by_list_of_taints_agree_with_each_node() {
        use crate::node::NodeRow;
        use crate::plugins::testutil::{cluster, filter_batch};
        let gpu = json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]});
        let spot = json!({"taints": [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]});
        let both = json!({"taints": [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]});
        let specs = [&gpu, &spot, &json!({}), &gpu, &both, &spot, &both, &json!({})];
        let nodes: Vec<(String, Value, Value)> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("n{i}"), json!({}), (*s).clone()))
            .collect();
        let refs: Vec<(&str, Value, Value)> = nodes
            .iter()
            .map(|(n, l, s)| (n.as_str(), l.clone(), s.clone()))
            .collect();
        let snapshot = cluster(&refs, &[], &[]);
        let infos: Vec<&Arc<NodeInfo>> = snapshot.nodes.iter().collect();
        let sets: Vec<u32> = infos.iter().map(|n| n.node.taint_set).collect();
        assert!(sets.iter().all(|&s| s != 0));
        assert_eq!(
            sets.iter().collect::<std::collections::BTreeSet<_>>().len(),
            4,
            "{sets:?}"
        );
        let rows: Vec<NodeRow> = infos.iter().map(|n| NodeRow::of(n)).collect();
        let rows: Vec<&NodeRow> = rows.iter().collect();
        let st = CycleState::default();
        let plugin = TaintToleration;
        for tolerations in [
            json!([]),
            json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
            json!([{"key": "spot", "operator": "Exists"}]),
            json!([{"operator": "Exists"}]),
        ] {
            let p = pod(json!({"containers": [], "tolerations": tolerations}));
            let batch: Vec<usize> = filter_batch(&plugin, &st, &p, &infos).iter().map(|(i, _)| *i).collect();
            let each: Vec<usize> = (0..infos.len())
                .filter(|&i| !plugin.filter(&st, &p, infos[i]).is_success())
                .collect();
            assert_eq!(batch, each, "{tolerations}");
            let mut scores = vec![0; infos.len()];
            plugin.score_nodes(&st, &p, &infos, &rows, &mut scores).unwrap();
            let each: Vec<i64> = infos.iter().map(|n| plugin.score(&st, &p, n).unwrap()).collect();
            assert_eq!(scores, each, "{tolerations}");
        }
    }

    #[test]
    fn score_counts_untolerated_prefer_no_schedule_and_reverses() {
        let st = CycleState::default();
        let p = pod(
            json!({"containers": [], "tolerations": [{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}]}),
        );
        let n0 = tainted(json!([]));
        let n1 =
            tainted(json!([{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"}]));
        let n2 = tainted(
            json!([{"key": "b", "effect": "PreferNoSchedule"}, {"key": "c", "effect": "PreferNoSchedule"}, {"key": "d", "effect": "NoSchedule"}]),
        );
        let mut scores: Vec<i64> = [&n0, &n1, &n2]
            .iter()
            .map(|n| TaintToleration.score(&st, &p, n).unwrap())
            .collect();
        assert_eq!(scores, [0, 1, 2]);
        TaintToleration.normalize_scores(&st, &p, &mut scores);
        assert_eq!(scores, [100, 50, 0]);
    }

    /// kube-scheduler v1.36's `TestTaintTolerationScore` cases (the
    /// numeric `Gt`/`Lt` ones are behind an alpha gate, off by default).
    #[test]
    fn kube_scheduler_score_cases() {
        let st = CycleState::default();
        let taint = |k: &str, v: &str, e: &str| json!({"key": k, "value": v, "effect": e});
        let tol = |k: &str, v: &str, e: &str| json!({"key": k, "operator": "Equal", "value": v, "effect": e});
        let with = |tols: Vec<Value>| pod(json!({"containers": [], "tolerations": tols}));
        let (arm, ssd) = (("cpu-type", "arm64"), ("disk-type", "ssd"));
        let p = "PreferNoSchedule";
        let cases: Vec<(&str, PodInfo, Vec<Value>, Vec<i64>)> = vec![
            (
                "node with taints tolerated by the pod scores higher than one with intolerable taints",
                with(vec![tol("foo", "bar", p)]),
                vec![json!([taint("foo", "bar", p)]), json!([taint("foo", "blah", p)])],
                vec![100, 0],
            ),
            (
                "nodes whose taints are all tolerated score the same, however many",
                with(vec![tol(arm.0, arm.1, p), tol(ssd.0, ssd.1, p)]),
                vec![
                    json!([]),
                    json!([taint(arm.0, arm.1, p)]),
                    json!([taint(arm.0, arm.1, p), taint(ssd.0, ssd.1, p)]),
                ],
                vec![100, 100, 100],
            ),
            (
                "the more intolerable taints a node has, the lower its score",
                with(vec![tol("foo", "bar", p)]),
                vec![
                    json!([]),
                    json!([taint(arm.0, arm.1, p)]),
                    json!([taint(arm.0, arm.1, p), taint(ssd.0, ssd.1, p)]),
                ],
                vec![100, 50, 0],
            ),
            (
                "only PreferNoSchedule taints and tolerations count",
                with(vec![tol(arm.0, arm.1, "NoSchedule"), tol(ssd.0, ssd.1, "NoSchedule")]),
                vec![
                    json!([]),
                    json!([taint(arm.0, arm.1, "NoSchedule")]),
                    json!([taint(arm.0, arm.1, p), taint(ssd.0, ssd.1, p)]),
                ],
                vec![100, 100, 0],
            ),
            (
                "no taints and tolerations: the node without taints",
                with(vec![]),
                vec![json!([]), json!([taint(arm.0, arm.1, p)])],
                vec![100, 0],
            ),
        ];
        for (name, pod, taints, want) in cases {
            let nodes: Vec<NodeInfo> = taints.into_iter().map(tainted).collect();
            let mut got: Vec<i64> = nodes
                .iter()
                .map(|n| TaintToleration.score(&st, &pod, n).unwrap())
                .collect();
            TaintToleration.normalize_scores(&st, &pod, &mut got);
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn queueing_hint_a_taint_removed() {
        let p = pod(json!({"containers": []}));
        let tainted = node(
            "a",
            json!({}),
            json!({"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}),
            json!({}),
        );
        let soft = node(
            "a",
            json!({}),
            json!({"taints": [{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]}),
            json!({}),
        );
        let upd = |old: &NodeInfo, new: &NodeInfo| {
            TaintToleration.queueing_hint(
                &p,
                &Change::NodeUpdated {
                    old: &old.node,
                    new: &new.node,
                    action: Action::UPDATE_NODE_TAINT,
                },
            )
        };
        assert_eq!(upd(&tainted, &soft), QueueingHint::Queue);
        assert_eq!(upd(&soft, &tainted), QueueingHint::Skip);
        assert_eq!(
            TaintToleration.queueing_hint(&p, &Change::NodeAdded(&tainted.node)),
            QueueingHint::Skip
        );
    }
}
