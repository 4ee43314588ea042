//! NodeName: a pod that names a node in `spec.nodeName` fits only there.

use std::sync::Arc;

use crate::events::{Action, ClusterEvent, Resource};
use crate::framework::{CycleState, Plugin, Points, Status};
use crate::node::{NodeInfo, NodeRow};
use crate::pod::PodInfo;

/// The reason, in kube-scheduler's words.
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

/// The NodeName filter.
#[derive(Debug, Default)]
pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &str {
        super::names::NODE_NAME
    }

    fn points(&self) -> Points {
        Points::FILTER
    }

    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        match &pod.node_name {
            Some(n) if n != node.name() => Status::unresolvable(ERR_REASON),
            _ => Status::success(),
        }
    }

    /// A pod that names no node passes every node: nothing to visit.
    fn filter_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        _rows: &[&NodeRow],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        let Some(wanted) = &pod.node_name else {
            return;
        };
        let others = nodes.iter().enumerate().filter(|(_, n)| n.name() != wanted);
        rejected.extend(others.map(|(i, _)| (i, Status::unresolvable(ERR_REASON))));
    }

    /// Only a new node can be the one the pod names.
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent {
            resource: Resource::Node,
            action: Action::ADD,
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{filter_batch, node_alloc, pod};
    use serde_json::json;

    #[test]
    fn filter() {
        let n = node_alloc("a", "1", "1Gi");
        let st = CycleState::default();
        assert!(NodeName.filter(&st, &pod(json!({"containers": []})), &n).is_success());
        assert!(
            NodeName
                .filter(&st, &pod(json!({"nodeName": "a", "containers": []})), &n)
                .is_success()
        );
        let s = NodeName.filter(&st, &pod(json!({"nodeName": "b", "containers": []})), &n);
        assert_eq!(s, Status::unresolvable(ERR_REASON));
        let (a, b) = (Arc::new(n), Arc::new(node_alloc("b", "1", "1Gi")));
        let batch = filter_batch(&NodeName, &st, &pod(json!({"containers": []})), &[&a, &b]);
        assert!(batch.is_empty());
        let batch = filter_batch(
            &NodeName,
            &st,
            &pod(json!({"nodeName": "b", "containers": []})),
            &[&a, &b],
        );
        assert_eq!(batch, vec![(0, Status::unresolvable(ERR_REASON))]);
    }
}
