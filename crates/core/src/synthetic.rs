//! Synthetic clusters for benchmarks: heterogeneous nodes (sizes, zones,
//! architectures, GPU nodes behind a taint, spot nodes with a soft taint)
//! and pods with varied requests, some with selectors, affinities and
//! tolerations. Deterministic for a given seed.

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};

use crate::rng::Rng;

const SIZES: [(&str, &str, &str); 5] = [
    ("4", "16Gi", "m6i.xlarge"),
    ("8", "32Gi", "m6i.2xlarge"),
    ("16", "64Gi", "m6i.4xlarge"),
    ("32", "128Gi", "m6i.8xlarge"),
    ("64", "256Gi", "m6i.16xlarge"),
];
const ZONES: usize = 5;
const IMAGES: [(&str, i64); 6] = [
    ("registry.local/web:1.4", 180_000_000),
    ("registry.local/api:2.1", 250_000_000),
    ("registry.local/worker:0.9", 420_000_000),
    ("registry.local/ml:3.0", 2_400_000_000),
    ("nginx:1.27", 70_000_000),
    ("redis:7", 45_000_000),
];

/// The PriorityClass of the bench's high-priority pods.
pub const HIGH_PRIORITY_CLASS: &str = "wasmsched-bench-high";
/// The PriorityClass of the preemption workload's measured pods.
pub const PREEMPTOR_CLASS: &str = "wasmsched-bench-preemptor";

/// The PriorityClasses the bench's pods name (each pod states the value
/// too, which the API server's Priority admission accepts as it equals the
/// class's). Pods of priority 0 name none.
pub fn priority_classes() -> Vec<Value> {
    [(HIGH_PRIORITY_CLASS, 1000), (PREEMPTOR_CLASS, 10)]
        .into_iter()
        .map(|(name, value)| {
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value, "description": "wasmsched bench pods"})
        })
        .collect()
}

/// `n` nodes.
pub fn nodes(n: usize, seed: u64) -> Vec<Node> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            let (cpu, mem, itype) = SIZES[rng.below(SIZES.len() as u64) as usize];
            let zone = format!("zone-{}", i % ZONES);
            let name = format!("node-{i:05}");
            let gpu = rng.below(10) == 0;
            let spot = !gpu && rng.below(20) == 0;
            let arch = if rng.below(10) == 0 { "arm64" } else { "amd64" };
            let mut taints = Vec::new();
            let mut alloc = json!({"cpu": cpu, "memory": mem, "pods": "110", "ephemeral-storage": "100Gi"});
            if gpu {
                taints.push(json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}));
                alloc["nvidia.com/gpu"] = json!("8");
            }
            if spot {
                taints.push(json!({"key": "spot", "value": "true", "effect": "PreferNoSchedule"}));
            }
            let images: Vec<Value> = IMAGES
                .iter()
                .filter(|_| rng.below(3) == 0)
                .map(|(img, size)| json!({"names": [img], "sizeBytes": size}))
                .collect();
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/arch": arch,
                    "topology.kubernetes.io/zone": zone,
                    "node.kubernetes.io/instance-type": itype,
                }, "annotations": {"price": format!("{:.3}", 0.05 + rng.below(1000) as f64 / 1000.0)}},
                "spec": {"taints": taints},
                "status": {"allocatable": alloc.clone(), "capacity": alloc, "images": images,
                    "conditions": [{"type": "Ready", "status": "True"}]}
            }))
            .expect("synthetic node is valid")
        })
        .collect()
}

/// `n` pending pods for `scheduler_name`.
pub fn pods(n: usize, scheduler_name: &str, seed: u64) -> Vec<Pod> {
    pod_stream(n, scheduler_name, seed).collect()
}

/// The pods of [`pods`], made one at a time (a bench that hands each over
/// at once never holds them all twice).
pub fn pod_stream(n: usize, scheduler_name: &str, seed: u64) -> impl Iterator<Item = Pod> + use<> {
    let scheduler_name = scheduler_name.to_owned();
    let mut rng = Rng::new(seed ^ 0x5eed);
    let cpus = ["100m", "250m", "500m", "1", "2"];
    let mems = ["128Mi", "256Mi", "512Mi", "1Gi", "4Gi"];
    (0..n).map(move |i| {
            let (img, _) = IMAGES[rng.below(IMAGES.len() as u64) as usize];
            let mut requests = json!({"cpu": cpus[rng.below(5) as usize], "memory": mems[rng.below(5) as usize]});
            let mut spec = json!({"schedulerName": scheduler_name});
            if rng.below(10) == 0 {
                spec["priorityClassName"] = json!(HIGH_PRIORITY_CLASS);
                spec["priority"] = json!(1000);
            }
            let mut limits = json!({});
            match rng.below(10) {
                0 | 1 => spec["nodeSelector"] = json!({"topology.kubernetes.io/zone": format!("zone-{}", rng.below(ZONES as u64))}),
                2 => {
                    spec["tolerations"] = json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]);
                    if rng.below(2) == 0 {
                        // An extended resource is not overcommitted: its
                        // limit is required and equals the request.
                        requests["nvidia.com/gpu"] = json!("1");
                        limits["nvidia.com/gpu"] = json!("1");
                    }
                }
                3 => spec["affinity"] = json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "preference": {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.8xlarge", "m6i.16xlarge"]}]}}
                ]}}),
                4 => spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["arm64"]}]}
                ]}}}),
                _ => {}
            }
            let resources = if limits.as_object().is_some_and(|l| l.is_empty()) {
                json!({"requests": requests})
            } else {
                json!({"requests": requests, "limits": limits})
            };
            spec["containers"] = json!([{"name": "main", "image": img, "resources": resources}]);
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("pod-{i:06}"), "namespace": "bench", "uid": format!("uid-{i}")},
                "spec": spec,
                "status": {"phase": "Pending"}
            }))
            .expect("synthetic pod is valid")
    })
}

/// Pods that state inter-pod or spreading constraints, shaped like
/// kube-scheduler's scheduler_perf workloads of the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// `pods`: varied requests, node selectors, affinities, tolerations.
    Plain,
    /// SchedulingPodAntiAffinity: required anti-affinity to each other by
    /// hostname (one per node).
    PodAntiAffinity,
    /// SchedulingPodAffinity: required affinity to each other by zone.
    PodAffinity,
    /// SchedulingPreferredPodAffinity: preferred affinity by zone.
    PreferredPodAffinity,
    /// SchedulingPreferredPodAntiAffinity: preferred anti-affinity by hostname.
    PreferredPodAntiAffinity,
    /// TopologySpreading: `DoNotSchedule`, zone, maxSkew 5.
    TopologySpreading,
    /// PreferredTopologySpreading: `ScheduleAnyway`, zone, maxSkew 5.
    PreferredTopologySpreading,
    /// PreemptionBasic: identical nodes (4 CPUs) filled by the initial
    /// pods (900m, priority 0); each measured pod (3 CPUs, priority 10)
    /// preempts three of them.
    Preemption,
    /// SchedulingWithResourceClaimTemplate: nodes of 4 CPUs whose test
    /// driver publishes 10 devices each (`DRA_DEVICES_PER_NODE`), and pods
    /// each with a claim for one device of the class that selects them
    /// by CEL (made already, as the resourceclaim controller would have).
    Dra,
    /// Gangs of [`GANG_SIZE`] pods (label `example.com/gang`, annotation
    /// `example.com/gang-size`), for a gang-scheduling plugin such as the
    /// coscheduling example, which holds each gang at Permit until it is
    /// whole.
    Gangs,
    /// Gangs of [`GANG_SIZE`] pods as v1.36 states them: a
    /// `scheduling.k8s.io/v1alpha2` PodGroup each (`gang`, `minCount`
    /// [`GANG_SIZE`]) that its pods name in `spec.schedulingGroup`
    /// (GangScheduling, built in).
    PodGroups,
}

/// Pods per gang of the `gangs` and `podgroups` workloads.
pub const GANG_SIZE: usize = 8;

/// Devices the `dra` workload's driver publishes per node
/// (scheduler_perf's `maxClaimsPerNode`).
pub const DRA_DEVICES_PER_NODE: usize = 10;

impl Workload {
    /// Every workload with its command-line name.
    pub const ALL: &'static [(&'static str, Workload)] = &[
        ("plain", Workload::Plain),
        ("pod-anti-affinity", Workload::PodAntiAffinity),
        ("pod-affinity", Workload::PodAffinity),
        ("preferred-pod-affinity", Workload::PreferredPodAffinity),
        ("preferred-pod-anti-affinity", Workload::PreferredPodAntiAffinity),
        ("topology-spreading", Workload::TopologySpreading),
        ("preferred-topology-spreading", Workload::PreferredTopologySpreading),
        ("preemption", Workload::Preemption),
        ("dra", Workload::Dra),
        ("gangs", Workload::Gangs),
        ("podgroups", Workload::PodGroups),
    ];

    /// The nodes this workload runs on: scheduler_perf's default node for
    /// preemption (so the initial pods fill every node), else [`nodes`].
    pub fn nodes(self, n: usize, seed: u64) -> Vec<Node> {
        if !matches!(self, Workload::Preemption | Workload::Dra) {
            return nodes(n, seed);
        }
        (0..n)
            .map(|i| {
                let name = format!("node-{i:05}");
                let alloc = json!({"cpu": "4", "memory": "32Gi", "pods": "110"});
                serde_json::from_value(json!({
                    "apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                        "topology.kubernetes.io/zone": format!("zone-{}", i % ZONES)}},
                    "status": {"allocatable": alloc.clone(), "capacity": alloc,
                        "conditions": [{"type": "Ready", "status": "True"}]}
                }))
                .expect("synthetic node is valid")
            })
            .collect()
    }
}

/// The objects the workload needs beside nodes and pods, for nodes
/// `node-00000` on: the `dra` workload's DeviceClass and one ResourceSlice
/// per node, as scheduler_perf's test driver publishes them.
pub fn workload_objects(workload: Workload, nodes: usize) -> Vec<Value> {
    if workload != Workload::Dra {
        return Vec::new();
    }
    let mut out = vec![json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "test-class"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"test-driver.cdi.k8s.io\""}}]}})];
    for i in 0..nodes {
        let node = format!("node-{i:05}");
        let devices: Vec<Value> = (0..DRA_DEVICES_PER_NODE)
            .map(|d| {
                json!({"name": format!("instance-{d}"),
                    "attributes": {"model": {"string": "A100"}, "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"}, "dra.example.com/numa": {"int": d}},
                    "capacity": {"memory": {"value": "1Gi"}}})
            })
            .collect();
        out.push(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": node},
            "spec": {"driver": "test-driver.cdi.k8s.io", "nodeName": node,
                "pool": {"name": node, "generation": 0, "resourceSliceCount": 1}, "devices": devices}}));
    }
    out
}

/// The PodGroups of the workload's pods `0 ..pods` (the `podgroups`
/// workload's: one per [`GANG_SIZE`] pods), to be known before the pods.
pub fn workload_pod_groups(workload: Workload, pods: usize) -> Vec<k8s_openapi::api::scheduling::v1alpha2::PodGroup> {
    if workload != Workload::PodGroups {
        return Vec::new();
    }
    (0..pods.div_ceil(GANG_SIZE))
        .map(|g| {
            serde_json::from_value(json!({
                "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                "metadata": {"name": format!("gang-{g:05}"), "namespace": "bench", "uid": format!("group-uid-{g}")},
                "spec": {"schedulingPolicy": {"gang": {"minCount": GANG_SIZE}}}
            }))
            .expect("synthetic PodGroup is valid")
        })
        .collect()
}

/// The claims of the workload's pods `first ..first + n` (the `dra`
/// workload's: one per pod, as its template makes them), to be known before
/// the pods.
pub fn workload_claims(workload: Workload, first: usize, n: usize) -> impl Iterator<Item = Value> {
    let n = if workload == Workload::Dra { n } else { 0 };
    (first..first + n).map(|i| {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": format!("pod-{i:06}-resource"), "namespace": "bench", "uid": format!("claim-uid-{i}"),
                "resourceVersion": "1"},
            "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class",
                "allocationMode": "ExactCount", "count": 1}}]}}})
    })
}

/// `n` pending pods of `workload` for `scheduler_name`, named from
/// `first` on (so an initial batch and a measured one do not collide).
pub fn workload_pods(workload: Workload, first: usize, n: usize, scheduler_name: &str, seed: u64) -> Vec<Pod> {
    workload_stream(workload, first, n, scheduler_name, seed).collect()
}

/// The pods of [`workload_pods`], made one at a time.
pub fn workload_stream(
    workload: Workload,
    first: usize,
    n: usize,
    scheduler_name: &str,
    seed: u64,
) -> Box<dyn Iterator<Item = Pod>> {
    if workload == Workload::Plain {
        return Box::new(pod_stream(first + n, scheduler_name, seed).skip(first));
    }
    let scheduler_name = scheduler_name.to_owned();
    if workload == Workload::Dra {
        return Box::new((first..first + n).map(move |i| {
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("pod-{i:06}"), "namespace": "bench", "uid": format!("uid-{i}")},
                "spec": {"schedulerName": scheduler_name,
                    "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
                        "resources": {"claims": [{"name": "resource"}]}}],
                    "resourceClaims": [{"name": "resource", "resourceClaimName": format!("pod-{i:06}-resource")}]},
                "status": {"phase": "Pending"}
            }))
            .expect("synthetic pod is valid")
        }));
    }
    if workload == Workload::PodGroups {
        return Box::new((first..first + n).map(move |i| {
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("pod-{i:06}"), "namespace": "bench", "uid": format!("uid-{i}")},
                "spec": {"schedulerName": scheduler_name,
                    "schedulingGroup": {"podGroupName": format!("gang-{:05}", i / GANG_SIZE)},
                    "containers": [{"name": "train", "image": "registry.local/ml/trainer:2.0",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
                "status": {"phase": "Pending"}
            }))
            .expect("synthetic pod is valid")
        }));
    }
    if workload == Workload::Gangs {
        return Box::new((first..first + n).map(move |i| {
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("pod-{i:06}"), "namespace": "bench", "uid": format!("uid-{i}"),
                    "labels": {"example.com/gang": format!("gang-{:05}", i / GANG_SIZE)},
                    "annotations": {"example.com/gang-size": GANG_SIZE.to_string()}},
                "spec": {"schedulerName": scheduler_name,
                    "containers": [{"name": "train", "image": "registry.local/ml/trainer:2.0",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
                "status": {"phase": "Pending"}
            }))
            .expect("synthetic pod is valid")
        }));
    }
    if workload == Workload::Preemption {
        // The initial batch (from 0) is the low-priority filler.
        let (preemptor, cpu) = if first == 0 { (false, "900m") } else { (true, "3") };
        return Box::new((first..first + n).map(move |i| {
                let mut spec = json!({"schedulerName": scheduler_name, "containers": [{"name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}, "limits": {"cpu": cpu, "memory": "500Mi"}}}]});
                if preemptor {
                    spec["priorityClassName"] = json!(PREEMPTOR_CLASS);
                    spec["priority"] = json!(10);
                }
                serde_json::from_value(json!({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": format!("pod-{i:06}"), "namespace": "bench", "uid": format!("uid-{i}")},
                    "spec": spec,
                    "status": {"phase": "Pending"}
                }))
                .expect("synthetic pod is valid")
        }));
    }
    let term = |key: &str, value: &str, topology: &str| json!({"labelSelector": {"matchLabels": {key: value}}, "topologyKey": topology});
    const HOST: &str = "kubernetes.io/hostname";
    const ZONE: &str = "topology.kubernetes.io/zone";
    let (labels, extra) = match workload {
        Workload::Plain | Workload::Preemption | Workload::Dra | Workload::Gangs | Workload::PodGroups => {
            unreachable!()
        }
        Workload::PodAntiAffinity => (
            json!({"color": "green"}),
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("color", "green", HOST)]}}}),
        ),
        Workload::PodAffinity => (
            json!({"foo": "bar"}),
            json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("foo", "bar", ZONE)]}}}),
        ),
        Workload::PreferredPodAffinity => (
            json!({"foo": "bar"}),
            json!({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term("foo", "bar", ZONE)}]}}}),
        ),
        Workload::PreferredPodAntiAffinity => (
            json!({"color": "green"}),
            json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term("color", "green", HOST)}]}}}),
        ),
        Workload::TopologySpreading | Workload::PreferredTopologySpreading => {
            let when = if workload == Workload::TopologySpreading {
                "DoNotSchedule"
            } else {
                "ScheduleAnyway"
            };
            (
                json!({"app": "spread"}),
                json!({"topologySpreadConstraints": [{"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": when,
                    "labelSelector": {"matchLabels": {"app": "spread"}}}]}),
            )
        }
    };
    Box::new((first..first + n).map(move |i| {
            let mut spec = json!({"schedulerName": scheduler_name, "containers": [{"name": "main", "image": "registry.local/web:1.4",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]});
            if let Value::Object(m) = &extra {
                for (k, v) in m {
                    spec[k] = v.clone();
                }
            }
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("pod-{i:06}"), "namespace": "bench", "uid": format!("uid-{i}"), "labels": labels},
                "spec": spec,
                "status": {"phase": "Pending"}
            }))
            .expect("synthetic pod is valid")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NodeData, PodInfo};

    #[test]
    fn deterministic_and_valid() {
        let a = nodes(50, 3);
        assert_eq!(a, nodes(50, 3));
        assert!(a.iter().all(|n| NodeData::from_node(n).is_ok()));
        assert!(
            a.iter()
                .any(|n| n.spec.as_ref().unwrap().taints.as_ref().is_some_and(|t| !t.is_empty()))
        );
        let p = pods(100, "s", 3);
        assert!(p.iter().all(|p| PodInfo::from_pod(p).is_ok()));
        for (name, w) in Workload::ALL {
            let p = workload_pods(*w, 10, 20, "s", 3);
            assert_eq!(p.len(), 20, "{name}");
            assert_eq!(p[0].metadata.name.as_deref(), Some("pod-000010"));
            assert!(p.iter().all(|p| PodInfo::from_pod(p).is_ok()), "{name}");
        }
    }
}
