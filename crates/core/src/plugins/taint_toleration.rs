//! TaintToleration: a node's NoSchedule and NoExecute taints must be
//! tolerated (filter); untolerated PreferNoSchedule taints lower the score.
//! Nodes the node controller taints `not-ready` or `unreachable` are thus
//! avoided by every pod that does not tolerate those taints.

use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, Plugin, Points, Status, default_normalize_score};
use crate::node::{NodeData, NodeInfo, Taint, TaintEffect};
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
