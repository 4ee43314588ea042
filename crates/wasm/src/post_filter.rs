//! What a WebAssembly plugin's PostFilter answers (contract 0.7), checked
//! before the framework acts on it: a nominated node must exist, and the
//! victims it names must all be bound to that node, of lower priority than
//! the pod, not being deleted, and not protected by a PodDisruptionBudget
//! that allows no more disruption. Anything else evicts nobody and says
//! why.

use std::sync::Arc;

use wasmsched_core::framework::{Nominating, Nomination, PostFilterResult, Status};
use wasmsched_core::{PodInfo, Snapshot};

use crate::host::exports::wasmsched::plugin::plugin as guest;

/// Victims one PostFilter may name at most.
pub const MAX_VICTIMS: usize = 1000;

/// The framework's result of `plugin`'s answer for `pod`.
pub(crate) fn result(
    plugin: &str,
    pod: &PodInfo,
    snapshot: &Arc<Snapshot>,
    r: guest::PostFilterResult,
) -> PostFilterResult {
    let status = crate::plugin::status_of(r.status);
    let refuse = |why: String| PostFilterResult::none(Status::error(format!("plugin {plugin}: PostFilter: {why}")));
    let Some(node) = r.nominated_node else {
        if !r.victims.is_empty() {
            return refuse(format!("{} victims named without a nominated node", r.victims.len()));
        }
        return PostFilterResult::none(status);
    };
    let Some(info) = snapshot.node(&node) else {
        return refuse(format!("nominated node {node:?} does not exist"));
    };
    if r.victims.len() > MAX_VICTIMS {
        return refuse(format!("{} victims named, more than {MAX_VICTIMS}", r.victims.len()));
    }
    let mut victims: Vec<Arc<PodInfo>> = Vec::with_capacity(r.victims.len());
    for key in &r.victims {
        let Some(v) = info.usage.pod_infos.iter().find(|p| p.key.as_str() == key.as_str()) else {
            return refuse(format!("victim {key} is not on node {node}"));
        };
        if v.priority >= pod.priority {
            return refuse(format!(
                "victim {key} has priority {}, not lower than the pod's {}",
                v.priority, pod.priority
            ));
        }
        if v.deleting {
            return refuse(format!("victim {key} is being deleted already"));
        }
        if !victims.iter().any(|p| p.uid == v.uid) {
            victims.push(v.clone());
        }
    }
    let budgets: Vec<_> = snapshot.workloads.budgets().collect();
    let (violating, _) = wasmsched_core::plugins::default_preemption::split_by_budget(victims.clone(), &budgets);
    if let Some(v) = violating.first() {
        return refuse(format!("evicting victim {} would violate a PodDisruptionBudget", v.key));
    }
    PostFilterResult {
        status,
        nominating: Nominating::Node(Nomination {
            node,
            victims,
            pdb_violations: 0,
        }),
        search: Vec::new(),
        deallocate: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;
    use wasmsched_core::{Cache, NodeData};

    fn pod(name: &str, priority: i32, node: Option<&str>) -> Arc<PodInfo> {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "labels": {"app": "db"}},
            "spec": {"priority": priority, "nodeName": node, "containers": [{"name": "c", "image": "i"}]}
        }))
        .unwrap();
        Arc::new(PodInfo::from_pod(&p).unwrap())
    }

    fn answer(node: Option<&str>, victims: &[&str]) -> guest::PostFilterResult {
        guest::PostFilterResult {
            status: guest::Status {
                code: guest::Code::Success,
                reason: String::new(),
            },
            nominated_node: node.map(str::to_owned),
            victims: victims.iter().map(|v| (*v).to_owned()).collect(),
        }
    }

    /// Victims are evicted only when every one is on the nominated node,
    /// of lower priority, and no PodDisruptionBudget forbids it.
    #[test]
    fn victims_are_checked_before_anyone_is_evicted() {
        let mut cache = Cache::new();
        for n in ["n1", "n2"] {
            let node: Node = serde_json::from_value(json!({"metadata": {"name": n},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}))
            .unwrap();
            cache.upsert_node(NodeData::from_node(&node).unwrap());
        }
        cache.upsert_pod(pod("low", 0, Some("n1")));
        cache.upsert_pod(pod("high", 100, Some("n1")));
        cache.upsert_pod(pod("elsewhere", 0, Some("n2")));
        let snapshot = Arc::new(cache.snapshot());
        let preemptor = pod("p", 10, None);
        let refused = |r: PostFilterResult| {
            assert!(matches!(r.nominating, Nominating::Keep));
            r.status.message()
        };
        let r = result("custom", &preemptor, &snapshot, answer(Some("n1"), &["ns/low"]));
        match r.nominating {
            Nominating::Node(n) => {
                assert_eq!(n.node, "n1");
                assert_eq!(
                    n.victims.iter().map(|v| v.key.to_string()).collect::<Vec<_>>(),
                    ["ns/low"]
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            refused(result(
                "custom",
                &preemptor,
                &snapshot,
                answer(Some("n1"), &["ns/high"])
            )),
            "plugin custom: PostFilter: victim ns/high has priority 100, not lower than the pod's 10"
        );
        assert_eq!(
            refused(result(
                "custom",
                &preemptor,
                &snapshot,
                answer(Some("n1"), &["ns/elsewhere"])
            )),
            "plugin custom: PostFilter: victim ns/elsewhere is not on node n1"
        );
        assert_eq!(
            refused(result("custom", &preemptor, &snapshot, answer(Some("n9"), &[]))),
            "plugin custom: PostFilter: nominated node \"n9\" does not exist"
        );
        assert_eq!(
            refused(result("custom", &preemptor, &snapshot, answer(None, &["ns/low"]))),
            "plugin custom: PostFilter: 1 victims named without a nominated node"
        );
        // A budget that allows no disruption protects the victim.
        let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "db", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}}, "status": {"disruptionsAllowed": 0}});
        let w = wasmsched_core::workloads::Workload::from_value(&pdb).unwrap().unwrap();
        cache.workloads_mut().upsert(w);
        let snapshot = Arc::new(cache.snapshot());
        assert_eq!(
            refused(result("custom", &preemptor, &snapshot, answer(Some("n1"), &["ns/low"]))),
            "plugin custom: PostFilter: evicting victim ns/low would violate a PodDisruptionBudget"
        );
    }
}
