//! NodeUnschedulable: cordoned nodes (`spec.unschedulable`) take only pods
//! that tolerate the `node.kubernetes.io/unschedulable:NoSchedule` taint.

use std::sync::Arc;

use crate::events::{Change, ClusterEvent, QueueingHint};
use crate::framework::{CycleState, Plugin, Points, Status};
use crate::node::{NodeInfo, NodeRow, TAINT_NODE_UNSCHEDULABLE, Taint, TaintEffect};
use crate::pod::{PodInfo, tolerated};

/// The reason, in kube-scheduler's words.
pub const ERR_REASON: &str = "node(s) were unschedulable";

/// The NodeUnschedulable filter.
#[derive(Debug)]
pub struct NodeUnschedulable {
    taint: Taint,
}

impl Default for NodeUnschedulable {
    fn default() -> Self {
        NodeUnschedulable {
            taint: Taint::new(TAINT_NODE_UNSCHEDULABLE, "", TaintEffect::NoSchedule),
        }
    }
}

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &str {
        super::names::NODE_UNSCHEDULABLE
    }

    fn points(&self) -> Points {
        Points::FILTER
    }

    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !node.node.unschedulable || tolerated(&pod.tolerations, &self.taint) {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON)
        }
    }

    /// The first filter to read each node: one flag of its row, and nothing
    /// at all for a pod that tolerates the cordon.
    fn filter_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        _: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        if tolerated(&pod.tolerations, &self.taint) {
            return;
        }
        for (i, r) in rows.iter().enumerate() {
            if r.unschedulable {
                rejected.push((i, Status::unresolvable(ERR_REASON)));
            }
        }
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        super::taint_toleration::TAINT_EVENTS.to_vec()
    }

    /// A node that is (or became) schedulable, or the pod now tolerating
    /// the cordon taint.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let queue = match change {
            Change::NodeAdded(n) => !n.unschedulable,
            Change::NodeUpdated { old, new, .. } => old.unschedulable && !new.unschedulable,
            Change::PodUpdated { new, .. } => new.uid == pod.uid && tolerated(&new.tolerations, &self.taint),
            _ => false,
        };
        if queue { QueueingHint::Queue } else { QueueingHint::Skip }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{filter_batch, node, pod};
    use serde_json::json;

    #[test]
    fn filter() {
        let cordoned = node("a", json!({}), json!({"unschedulable": true}), json!({}));
        let open = node("b", json!({}), json!({}), json!({}));
        let plain = pod(json!({"containers": []}));
        let tolerant = pod(
            json!({"containers": [], "tolerations": [{"key": TAINT_NODE_UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"}]}),
        );
        let p = NodeUnschedulable::default();
        let st = CycleState::default();
        assert_eq!(p.filter(&st, &plain, &cordoned), Status::unresolvable(ERR_REASON));
        assert!(p.filter(&st, &plain, &open).is_success());
        assert!(p.filter(&st, &tolerant, &cordoned).is_success());
        // A batch rejects what single nodes reject.
        let nodes = [Arc::new(open.clone()), Arc::new(cordoned.clone())];
        let refs: Vec<&Arc<NodeInfo>> = nodes.iter().collect();
        assert_eq!(
            filter_batch(&p, &st, &plain, &refs),
            [(1, Status::unresolvable(ERR_REASON))]
        );
        assert!(filter_batch(&p, &st, &tolerant, &refs).is_empty());
    }

    #[test]
    fn queueing_hint_a_node_uncordoned() {
        let p = NodeUnschedulable::default();
        let plain = pod(json!({"containers": []}));
        let cordoned = node("a", json!({}), json!({"unschedulable": true}), json!({}));
        let open = node("a", json!({}), json!({}), json!({}));
        let upd = |old: &NodeInfo, new: &NodeInfo| {
            p.queueing_hint(
                &plain,
                &Change::NodeUpdated {
                    old: &old.node,
                    new: &new.node,
                    action: crate::events::Action::UPDATE_NODE_TAINT,
                },
            )
        };
        assert_eq!(upd(&cordoned, &open), QueueingHint::Queue);
        assert_eq!(upd(&open, &cordoned), QueueingHint::Skip);
        assert_eq!(
            p.queueing_hint(&plain, &Change::NodeAdded(&cordoned.node)),
            QueueingHint::Skip
        );
    }
}
