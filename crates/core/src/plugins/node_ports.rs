//! NodePorts: a pod's host ports must be free on the node (same protocol
//! and port conflict when the IPs are equal or either is `0.0.0.0`).

use crate::cache::Snapshot;
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, Plugin, Points, Status};
use crate::node::NodeInfo;
use crate::pod::PodInfo;

/// The reason, in kube-scheduler's words.
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The NodePorts filter.
#[derive(Debug, Default)]
pub struct NodePorts;

impl Plugin for NodePorts {
    fn name(&self) -> &str {
        super::names::NODE_PORTS
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER
    }

    fn pre_filter(&self, _: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> Status {
        if pod.host_ports.is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }

    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let used = &node.usage.ports;
        if pod.host_ports.iter().any(|p| used.iter().any(|u| u.conflicts(p))) {
            Status::unschedulable(ERR_REASON)
        } else {
            Status::success()
        }
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent {
                resource: Resource::AssignedPod,
                action: Action::DELETE,
            },
            ClusterEvent {
                resource: Resource::Node,
                action: Action::ADD,
            },
        ]
    }

    /// A new node, or a pod leaving that held a port this pod wants.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let queue = match change {
            Change::NodeAdded(_) => true,
            Change::AssignedPodDeleted(gone) => pod
                .host_ports
                .iter()
                .any(|p| gone.host_ports.iter().any(|g| g.conflicts(p))),
            _ => false,
        };
        if queue { QueueingHint::Queue } else { QueueingHint::Skip }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{node_alloc, pod, with_pod};
    use serde_json::json;

    fn port_pod(ip: &str, proto: &str, port: i32) -> PodInfo {
        pod(
            json!({"containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": port, "hostIP": ip, "protocol": proto}]}]}),
        )
    }

    #[test]
    fn conflicts_across_protocols_and_ips() {
        let cases = [
            // (existing, incoming, fits)
            (("", "TCP", 80), ("", "TCP", 80), false),
            (("", "TCP", 80), ("", "UDP", 80), true),
            (("127.0.0.1", "TCP", 80), ("127.0.0.2", "TCP", 80), true),
            (("127.0.0.1", "TCP", 80), ("0.0.0.0", "TCP", 80), false),
            (("0.0.0.0", "UDP", 53), ("10.0.0.1", "UDP", 53), false),
            (("10.0.0.1", "SCTP", 9), ("10.0.0.1", "SCTP", 9), false),
            (("", "TCP", 80), ("", "TCP", 8080), true),
        ];
        let st = CycleState::default();
        for (existing, incoming, fits) in cases {
            let n = with_pod(
                node_alloc("a", "1", "1Gi"),
                &port_pod(existing.0, existing.1, existing.2),
            );
            let p = port_pod(incoming.0, incoming.1, incoming.2);
            assert_eq!(
                NodePorts.filter(&st, &p, &n).is_success(),
                fits,
                "{existing:?} vs {incoming:?}"
            );
        }
        let none = pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}));
        assert!(
            NodePorts
                .pre_filter(&mut CycleState::default(), &none, &Snapshot::default())
                .is_skip()
        );
    }

    #[test]
    fn queueing_hint_a_pod_leaving_that_held_the_port() {
        let wants = pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}));
        let holder = pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}));
        let other = pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 9090}]}]}));
        assert_eq!(
            NodePorts.queueing_hint(&wants, &Change::AssignedPodDeleted(&holder)),
            QueueingHint::Queue
        );
        assert_eq!(
            NodePorts.queueing_hint(&wants, &Change::AssignedPodDeleted(&other)),
            QueueingHint::Skip
        );
    }
}
