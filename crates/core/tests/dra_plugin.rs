//! kube-scheduler v1.36's DynamicResources plugin test table
//! (`pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go`,
//! `TestPlugin`), ported case by case where wasmsched implements the
//! semantics, with Go's objects (node `worker`, driver `some-driver`, class
//! `my-resource-class`, pod `default/my-pod` with claim
//! `my-pod-my-resource`), driven through the public `Scheduler`: a gated
//! pod stands for PreEnqueue's verdict, the FitError for PreFilter's and
//! Filter's, the `DraPlan` for Reserve's (what PreBind writes), and the
//! cycle's explanation for Score and NormalizeScore. Each test names the Go
//! case it ports.
//!
//! Not ported (not applicable to wasmsched):
//! - extended resources backed by DRA (`extended-resource-*`,
//!   `implicit-extended-resource-*`, `empty-with-extended-resources-enabled`):
//!   refused by wasmsched;
//! - binding conditions (`bind-claim-with-binding-conditions`,
//!   `bound-claim-*`, `prebind-fail-with-binding-timeout`,
//!   `multi-claims-binding-conditions-*`): refused;
//! - workload/PodGroup claims (`podgroup-*`, `postfilter-*-podgroup*`,
//!   `reserved-okay-podgroup`, `bind-podgroup-failure`): off by default;
//! - node-allocatable resources (`node-allocatable-resource-*`);
//! - what calls the API client: PreBind's writes and their failures
//!   (`with-resources-has-finalizer`, `with-resources-finalizer-gets-*`,
//!   `bind-failure`, `bind-failure-concurrent-deallocation`,
//!   `*-allocation-timestamp*`), done by the daemon, not the engine;
//! - feature-gate toggles wasmsched does not have (`DRA-disabled`,
//!   `tainted-device-disabled`,
//!   `request-admin-access-without-DRAAdminAccess-featuregate`,
//!   `claim-with-prioritized-list-feature-disabled`), and the filter
//!   timeout cases (`canceled`, `timeout*`), which need a slow allocator;
//! - the other tables (`TestIsSchedulableAfter*`, `TestAllocatorSelection`,
//!   `Test_computesScore`, `TestNormalizeScore`, `TestGatherAllocatedState`)
//!   test internal functions; scoring is covered through the
//!   `*-prioritized-list-scoring` cases.

use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};
use wasmsched_core::config::Config;
use wasmsched_core::dra::DraPlan;
use wasmsched_core::framework::ScheduleError;
use wasmsched_core::plugins::Registry;
use wasmsched_core::scheduler::{Attempt, Responsibility, Scheduler};

const NODE: &str = "worker";
const NODE2: &str = "worker-2";
const NODE3: &str = "worker-3";
const DRIVER: &str = "some-driver";
const POD: &str = "my-pod";
const POD_UID: &str = "1234";
const RESOURCE: &str = "my-resource";
const CLAIM: &str = "my-pod-my-resource";
const CLAIM2: &str = "my-pod-my-resource-2";
const CLASS: &str = "my-resource-class";
const NS: &str = "default";
/// Go's `brokenSelector`: `healthy` is only on the other nodes' devices.
const BROKEN: &str = "device.attributes[\"some-driver\"].healthy";

/// DefaultPreemption's PostFilter message when every node is rejected as
/// unresolvable.
fn no_preemption(n: usize) -> String {
    format!("preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling.")
}

fn sched(nodes: &[&str]) -> Scheduler {
    let mut s = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::OwnProfiles).unwrap();
    for n in nodes {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}))
        .unwrap();
        s.on_node(&node, Instant::now()).unwrap();
    }
    s
}

fn add(s: &mut Scheduler, obj: Value) {
    s.on_storage(&obj, Instant::now()).unwrap();
}

/// `st.MakeResourceSlice(node, driver).Device(...)`: one slice, the pool
/// named after the node.
fn slice(node: &str, devices: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
           "metadata": {"name": format!("{node}-{DRIVER}")},
           "spec": {"driver": DRIVER, "nodeName": node,
                    "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
                    "devices": devices}})
}

/// A device of a slice; `healthy`: the attribute of Go's `workerNode2Slice`.
fn device(name: &str, healthy: Option<bool>) -> Value {
    match healthy {
        Some(b) => json!({"name": name, "attributes": {"healthy": {"bool": b}}}),
        None => json!({"name": name}),
    }
}

/// `workerNodeSlice`.
fn worker_node_slice() -> Value {
    slice(NODE, json!([device("instance-1", None)]))
}

/// `deviceClass`: no selectors.
fn device_class() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS}, "spec": {}})
}

/// `st.MakeResourceClaim().Name(name).Namespace(ns)` with `requests`.
fn claim_with(name: &str, requests: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"), "resourceVersion": "1"},
           "spec": {"devices": {"requests": requests}}})
}

/// `.Request(class)`: `req-1`, one device of the class.
fn exact(class: &str) -> Value {
    json!([{"name": "req-1", "exactly": {"deviceClassName": class, "allocationMode": "ExactCount", "count": 1}}])
}

/// `claim`.
fn claim() -> Value {
    claim_with(CLAIM, exact(CLASS))
}

/// `otherClaim`.
fn other_claim() -> Value {
    claim_with("not-my-claim", exact(CLASS))
}

/// `st.FromResourceClaim(c).OwnerReference(podName, podUID, podKind)`.
fn owned(mut c: Value) -> Value {
    c["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "Pod", "name": POD, "uid": POD_UID, "controller": true}]);
    c
}

/// `pendingClaim`.
fn pending_claim() -> Value {
    owned(claim())
}

fn node_selector_fields(node: &str) -> Value {
    json!({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]})
}

/// `allocationResult`: `instance-1` of `worker` for `req-1`.
fn allocation_result() -> Value {
    json!({"devices": {"results": [{"driver": DRIVER, "pool": NODE, "device": "instance-1", "request": "req-1"}]},
           "nodeSelector": node_selector_fields(NODE)})
}

/// `.Allocation(a)`: the allocation and the delete-protection finalizer.
fn allocated(mut c: Value, a: Value) -> Value {
    c["metadata"]["finalizers"] = json!(["resource.kubernetes.io/delete-protection"]);
    c["status"]["allocation"] = a;
    c
}

/// `.ReservedForPod(name, uid)`.
fn reserved_for(mut c: Value, name: &str, uid: &str) -> Value {
    let list = c["status"]["reservedFor"].as_array().cloned().unwrap_or_default();
    let mut list = list;
    list.push(json!({"resource": "pods", "name": name, "uid": uid}));
    c["status"]["reservedFor"] = Value::Array(list);
    c
}

/// `allocatedClaim`.
fn allocated_claim() -> Value {
    allocated(pending_claim(), allocation_result())
}

/// `otherAllocatedClaim`.
fn other_allocated_claim() -> Value {
    allocated(other_claim(), allocation_result())
}

/// `adminAccess(c)`: every request, and every result, with admin access.
fn admin_access(mut c: Value) -> Value {
    for r in c["spec"]["devices"]["requests"].as_array_mut().unwrap() {
        r["exactly"]["adminAccess"] = json!(true);
    }
    if let Some(results) = c
        .pointer_mut("/status/allocation/devices/results")
        .and_then(Value::as_array_mut)
    {
        for r in results {
            r["adminAccess"] = json!(true);
        }
    }
    c
}

/// `breakCELInClaim(c)`.
fn break_cel_in_claim(mut c: Value) -> Value {
    for r in c["spec"]["devices"]["requests"].as_array_mut().unwrap() {
        r["exactly"]["selectors"] = json!([{"cel": {"expression": BROKEN}}]);
    }
    c
}

fn pod_json(claims: Value, status: Value) -> Value {
    json!({"metadata": {"name": POD, "namespace": NS, "uid": POD_UID},
           "spec": {"schedulerName": "wasm-scheduler", "resourceClaims": claims, "containers": [{"name": "c"}]},
           "status": status})
}

fn pod(v: Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

/// `podWithClaimName`.
fn pod_with_claim_name() -> Pod {
    pod(pod_json(
        json!([{"name": RESOURCE, "resourceClaimName": CLAIM}]),
        json!({}),
    ))
}

/// `podWithTwoClaimNames`.
fn pod_with_two_claim_names() -> Pod {
    pod(pod_json(
        json!([{"name": RESOURCE, "resourceClaimName": CLAIM}, {"name": "my-resource-2", "resourceClaimName": CLAIM2}]),
        json!({}),
    ))
}

/// `podWithClaimTemplate`: no claim generated yet.
fn pod_with_claim_template() -> Pod {
    pod(pod_json(
        json!([{"name": RESOURCE, "resourceClaimTemplateName": CLAIM}]),
        json!({}),
    ))
}

/// `podWithClaimTemplateInStatus`.
fn pod_with_claim_template_in_status() -> Pod {
    pod(pod_json(
        json!([{"name": RESOURCE, "resourceClaimTemplateName": CLAIM}]),
        json!({"resourceClaimStatuses": [{"name": RESOURCE, "resourceClaimName": CLAIM}]}),
    ))
}

/// Queues the pod and runs one cycle for it (the pod must not be gated).
fn attempt(s: &mut Scheduler, p: &Pod) -> Attempt {
    let now = Instant::now();
    s.on_pod(p, now).unwrap();
    assert_eq!(s.gated_pods(), 0, "the pod is not held before the queue");
    let a = s.schedule_one(now, true).expect("a cycle");
    assert_eq!(a.pod.name, p.metadata.name.clone().unwrap());
    a
}

/// The pod placed: its node and the plan.
fn placed(a: Attempt) -> (String, Option<DraPlan>) {
    let r = a.result.unwrap_or_else(|e| panic!("placed: {e}"));
    (r.node, r.devices)
}

/// The pod's FitError (or error) text.
fn failed(a: &Attempt) -> String {
    match &a.result {
        Ok(r) => panic!("not placed, yet placed on {}", r.node),
        Err(e) => e.to_string(),
    }
}

/// The pod's PreEnqueue verdict: held out of the queue, and why.
fn gated(s: &mut Scheduler, p: &Pod) -> String {
    let now = Instant::now();
    s.on_pod(p, now).unwrap();
    assert!(s.schedule_one(now, false).is_none(), "no cycle for a held pod");
    assert_eq!(s.gated_pods(), 1);
    let (info, _) = s.gated().next().unwrap();
    s.gated_reason(info)
}

/// The plan's claims as (name, allocation as JSON).
fn plan_claims(plan: &DraPlan) -> Vec<(String, Option<Value>)> {
    plan.claims
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                c.allocation.as_ref().map(|a| serde_json::to_value(a).unwrap()),
            )
        })
        .collect()
}

/// The (driver, pool, device, request) of each result of an allocation.
fn results(a: &Value) -> Vec<(String, String, String, String)> {
    a["devices"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let f = |k: &str| r[k].as_str().unwrap().to_owned();
            (f("driver"), f("pool"), f("device"), f("request"))
        })
        .collect()
}

fn result(pool: &str, device: &str, request: &str) -> (String, String, String, String) {
    (DRIVER.into(), pool.into(), device.into(), request.into())
}

/// DynamicResources' (raw, normalized) score on each scored node.
fn dra_scores(a: &Attempt) -> Vec<(String, Option<i64>, i64)> {
    let r = a.result.as_ref().expect("placed");
    let ex = r.explanation.as_ref().expect("explained");
    ex.nodes
        .iter()
        .filter(|n| n.rejected.is_none())
        .map(|n| {
            let s = n
                .scores
                .iter()
                .find(|s| s.plugin == "DynamicResources")
                .expect("scored by DRA");
            (n.node.clone(), s.raw, s.normalized)
        })
        .collect()
}

// ---------------------------------------------------------------- cases

/// "empty": a pod without claims; PreFilter skips, nothing to write.
#[test]
fn empty() {
    let mut s = sched(&[NODE]);
    let p = pod(json!({"metadata": {"name": "foo", "namespace": NS, "uid": "foo"},
                       "spec": {"schedulerName": "wasm-scheduler", "containers": [{"name": "c"}]}}));
    let (node, plan) = placed(attempt(&mut s, &p));
    assert_eq!(node, NODE);
    assert!(plan.is_none_or(|p| p.is_empty()), "no claim to write");
}

/// "claim-reference": an allocated claim (not reserved) and another claim;
/// PreBind only reserves the claim for the pod.
#[test]
fn claim_reference() {
    let mut s = sched(&[NODE]);
    add(&mut s, allocated_claim());
    add(&mut s, other_claim());
    let (node, plan) = placed(attempt(&mut s, &pod_with_claim_name()));
    assert_eq!(node, NODE);
    let plan = plan.expect("a reservation to write");
    assert_eq!(plan_claims(&plan), [(CLAIM.to_owned(), None)]);
    assert_eq!((plan.pod_name.as_str(), plan.pod_uid.as_str()), (POD, POD_UID));
}

/// "claim-template": as `claim-reference`, the claim generated from a
/// template and named in the pod's status.
#[test]
fn claim_template() {
    let mut s = sched(&[NODE]);
    add(&mut s, allocated_claim());
    add(&mut s, other_claim());
    let (node, plan) = placed(attempt(&mut s, &pod_with_claim_template_in_status()));
    assert_eq!(node, NODE);
    assert_eq!(plan_claims(&plan.unwrap()), [(CLAIM.to_owned(), None)]);
}

/// "missing-claim": the template's claim is not created yet (no status).
#[test]
fn missing_claim() {
    let mut s = sched(&[NODE]);
    add(&mut s, allocated_claim());
    add(&mut s, other_claim());
    assert_eq!(
        gated(&mut s, &pod_with_claim_template()),
        "pod \"default/my-pod\": ResourceClaim not created yet"
    );
}

/// PreEnqueue of a pod naming a claim that does not exist (the informer's
/// NotFound, as `foreachPodResourceClaim` returns it); the claim's arrival
/// queues the pod.
#[test]
fn named_claim_not_found() {
    let mut s = sched(&[NODE]);
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    assert_eq!(
        gated(&mut s, &pod_with_claim_name()),
        "resourceclaim.resource.k8s.io \"my-pod-my-resource\" not found"
    );
    add(&mut s, pending_claim());
    assert_eq!(s.gated_pods(), 0);
    let a = s.schedule_one(Instant::now(), false).expect("queued");
    assert_eq!(placed(a).0, NODE);
}

/// "deleted-claim".
#[test]
fn deleted_claim() {
    let mut s = sched(&[NODE]);
    let mut c = allocated_claim();
    c["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    add(&mut s, c);
    assert_eq!(
        gated(&mut s, &pod_with_claim_template_in_status()),
        "resourceclaim \"my-pod-my-resource\" is being deleted"
    );
}

/// "wrong-claim": the generated claim's owner is another pod.
#[test]
fn wrong_claim() {
    let mut s = sched(&[NODE]);
    let mut c = allocated_claim();
    c["metadata"]["ownerReferences"][0]["uid"] = json!("1234123");
    add(&mut s, c);
    assert_eq!(
        gated(&mut s, &pod_with_claim_template_in_status()),
        "ResourceClaim default/my-pod-my-resource was not created for Pod default/my-pod (Pod is not owner)"
    );
}

/// "no-resources": no slice, so no device on the node.
#[test]
fn no_resources() {
    let mut s = sched(&[NODE]);
    add(&mut s, pending_claim());
    add(&mut s, device_class());
    let a = attempt(&mut s, &pod_with_claim_name());
    assert_eq!(
        failed(&a),
        format!(
            "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, {}",
            no_preemption(1)
        )
    );
}

/// "with-resources": allocated at Filter, the allocation and the
/// reservation left for PreBind.
#[test]
fn with_resources() {
    let mut s = sched(&[NODE]);
    add(&mut s, pending_claim());
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    let (node, plan) = placed(attempt(&mut s, &pod_with_claim_name()));
    assert_eq!(node, NODE);
    let plan = plan.unwrap();
    let claims = plan_claims(&plan);
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].0, CLAIM);
    let a = claims[0].1.as_ref().expect("allocated in the cycle");
    assert_eq!(results(a), [result(NODE, "instance-1", "req-1")]);
    assert_eq!(a["nodeSelector"], node_selector_fields(NODE));
    assert_eq!(plan.consumer().uid, POD_UID);
}

/// "skip-bind": Unreserve (here: the binding fails) gives the device back,
/// so the next cycle allocates it again.
#[test]
fn skip_bind() {
    let mut s = sched(&[NODE]);
    add(&mut s, pending_claim());
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    let (_, plan) = placed(attempt(&mut s, &pod_with_claim_name()));
    assert!(plan.unwrap().claims[0].allocation.is_some());
    let now = Instant::now();
    s.binding_finished("default/my-pod", POD_UID, false, now);
    s.on_pod_deleted("default/my-pod", POD_UID, now);
    let mut other = pod_with_claim_name();
    other.metadata.uid = Some(POD_UID.into());
    let (_, plan) = placed(attempt(&mut s, &other));
    let claims = plan_claims(&plan.unwrap());
    assert_eq!(
        results(claims[0].1.as_ref().unwrap()),
        [result(NODE, "instance-1", "req-1")]
    );
}

/// "exhausted-resources-in-informer-cache": the only device is allocated
/// to another claim.
#[test]
fn exhausted_resources_in_informer_cache() {
    let mut s = sched(&[NODE]);
    add(&mut s, pending_claim());
    add(&mut s, other_allocated_claim());
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    let a = attempt(&mut s, &pod_with_claim_name());
    assert_eq!(
        failed(&a),
        format!(
            "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, {}",
            no_preemption(1)
        )
    );
}

/// A pod `other` whose claim `not-my-claim` is allocated in this
/// scheduler's cycle and not yet written: the in-flight claim of Go's
/// `inFlightClaims`.
fn schedule_other(s: &mut Scheduler) {
    add(s, other_claim());
    let other = pod(
        json!({"metadata": {"name": "other", "namespace": NS, "uid": "other-uid"},
        "spec": {"schedulerName": "wasm-scheduler", "resourceClaims": [{"name": "r", "resourceClaimName": "not-my-claim"}],
                 "containers": [{"name": "c"}]}}),
    );
    let (_, plan) = placed(attempt(s, &other));
    assert!(plan.unwrap().claims[0].allocation.is_some());
}

/// "exhausted-resources-in-flight-claim": the only device is taken by an
/// in-flight allocation (assumed, its binding not finished).
#[test]
fn exhausted_resources_in_flight_claim() {
    let mut s = sched(&[NODE]);
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    schedule_other(&mut s);
    add(&mut s, pending_claim());
    let a = attempt(&mut s, &pod_with_claim_name());
    assert_eq!(
        failed(&a),
        format!(
            "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, {}",
            no_preemption(1)
        )
    );
}

/// "other-resources-in-flight-claim": the in-flight allocation holds
/// another device (Go's `instance-1-other`, here a device of the slice that
/// the other pod got first), so `instance-1` is allocated.
#[test]
fn other_resources_in_flight_claim() {
    let mut s = sched(&[NODE]);
    add(&mut s, device_class());
    add(
        &mut s,
        slice(
            NODE,
            json!([device("instance-1-other", None), device("instance-1", None)]),
        ),
    );
    schedule_other(&mut s);
    add(&mut s, pending_claim());
    let (_, plan) = placed(attempt(&mut s, &pod_with_claim_name()));
    let claims = plan_claims(&plan.unwrap());
    assert_eq!(
        results(claims[0].1.as_ref().unwrap()),
        [result(NODE, "instance-1", "req-1")]
    );
}

/// "tainted-device-enabled": a NoSchedule taint, not tolerated.
#[test]
fn tainted_device_enabled() {
    let mut s = sched(&[NODE]);
    add(&mut s, pending_claim());
    add(&mut s, device_class());
    add(
        &mut s,
        slice(
            NODE,
            json!([{"name": "instance-1", "taints": [{"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}]}]),
        ),
    );
    let a = attempt(&mut s, &pod_with_claim_name());
    assert_eq!(
        failed(&a),
        format!(
            "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, {}",
            no_preemption(1)
        )
    );
}

/// "request-admin-access-with-DRAAdminAccess-featuregate": admin access
/// allocates the device although another claim holds it.
#[test]
fn request_admin_access_with_dra_admin_access_featuregate() {
    let mut s = sched(&[NODE]);
    add(&mut s, admin_access(pending_claim()));
    add(&mut s, other_allocated_claim());
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    let (_, plan) = placed(attempt(&mut s, &pod_with_claim_name()));
    let claims = plan_claims(&plan.unwrap());
    let a = claims[0].1.as_ref().unwrap();
    assert_eq!(results(a), [result(NODE, "instance-1", "req-1")]);
    assert_eq!(a["devices"]["results"][0]["adminAccess"], json!(true));
}

/// "structured-ignore-allocated-admin-access": the other claim holds the
/// device with admin access, which does not make it unavailable.
#[test]
fn structured_ignore_allocated_admin_access() {
    let mut s = sched(&[NODE]);
    add(&mut s, pending_claim());
    add(&mut s, admin_access(other_allocated_claim()));
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    let (_, plan) = placed(attempt(&mut s, &pod_with_claim_name()));
    let claims = plan_claims(&plan.unwrap());
    let a = claims[0].1.as_ref().unwrap();
    assert_eq!(results(a), [result(NODE, "instance-1", "req-1")]);
    assert!(
        a["devices"]["results"][0]
            .get("adminAccess")
            .is_none_or(|v| v.is_null() || v == false)
    );
}

/// The scheduling error of a cycle that failed (not a FitError).
fn errored(a: &Attempt) -> String {
    match &a.result {
        Err(ScheduleError::Error(e)) => e.clone(),
        Err(e) => panic!("an error, not {e}"),
        Ok(r) => panic!("an error, yet placed on {}", r.node),
    }
}

/// "claim-parameters-CEL-runtime-error".
#[test]
fn claim_parameters_cel_runtime_error() {
    let mut s = sched(&[NODE]);
    add(&mut s, break_cel_in_claim(pending_claim()));
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    let a = attempt(&mut s, &pod_with_claim_name());
    let e = errored(&a);
    assert!(
        e.contains("claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: healthy"),
        "{e}"
    );
}

/// "class-parameters-CEL-runtime-error".
#[test]
fn class_parameters_cel_runtime_error() {
    let mut s = sched(&[NODE]);
    add(&mut s, pending_claim());
    let mut class = device_class();
    class["spec"]["selectors"] = json!([{"cel": {"expression": BROKEN}}]);
    add(&mut s, class);
    add(&mut s, worker_node_slice());
    let a = attempt(&mut s, &pod_with_claim_name());
    let e = errored(&a);
    assert!(
        e.contains("class my-resource-class: selector #0: CEL runtime error: no such key: healthy"),
        "{e}"
    );
}

/// "CEL-runtime-error-for-one-of-two-nodes": the selector works on
/// `worker-2`, yet the error on `worker` keeps the pod pending.
#[test]
fn cel_runtime_error_for_one_of_two_nodes() {
    let mut s = sched(&[NODE, NODE2]);
    add(&mut s, break_cel_in_claim(pending_claim()));
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    add(&mut s, slice(NODE2, json!([device("instance-1", Some(true))])));
    let a = attempt(&mut s, &pod_with_claim_name());
    let e = errored(&a);
    assert!(
        e.contains("claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: healthy"),
        "{e}"
    );
}

/// "CEL-runtime-error-for-one-of-three-nodes".
#[test]
fn cel_runtime_error_for_one_of_three_nodes() {
    let mut s = sched(&[NODE, NODE2, NODE3]);
    add(&mut s, break_cel_in_claim(pending_claim()));
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    add(&mut s, slice(NODE2, json!([device("instance-1", Some(true))])));
    add(&mut s, slice(NODE3, json!([device("instance-1", Some(true))])));
    let a = attempt(&mut s, &pod_with_claim_name());
    let e = errored(&a);
    assert!(
        e.contains("claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: healthy"),
        "{e}"
    );
}

/// "missing-class".
#[test]
fn missing_class() {
    let mut s = sched(&[NODE]);
    add(&mut s, pending_claim());
    let a = attempt(&mut s, &pod_with_claim_name());
    let e = failed(&a);
    assert!(
        e.starts_with("0/1 nodes are available: request req-1: device class my-resource-class does not exist. "),
        "{e}"
    );
}

fn wrong_topology_claim() -> Value {
    allocated(
        pending_claim(),
        json!({"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "no-such-label", "operator": "In", "values": ["no-such-value"]}]}]}}),
    )
}

/// The claim PostFilter asked the daemon to deallocate.
fn deallocated(a: &Attempt) -> Option<String> {
    match &a.result {
        Err(wasmsched_core::framework::ScheduleError::Unschedulable(fit)) => {
            fit.deallocate.as_ref().and_then(|c| c.metadata.name.clone())
        }
        _ => None,
    }
}

/// "wrong-topology": Filter finds the claim not available on the node,
/// PostFilter deallocates it (the daemon writes it).
#[test]
fn wrong_topology() {
    let mut s = sched(&[NODE]);
    add(&mut s, wrong_topology_claim());
    let a = attempt(&mut s, &pod_with_claim_name());
    let e = failed(&a);
    assert_eq!(
        e,
        format!(
            "0/1 nodes are available: 1 resourceclaim not available on the node. \
             deallocation of ResourceClaim completed, {}",
            no_preemption(1)
        )
    );
    assert_eq!(deallocated(&a).as_deref(), Some(CLAIM));
}

/// PostFilter leaves alone a claim reserved for another pod: deallocating
/// it would take the devices from under that pod.
#[test]
fn wrong_topology_reserved_for_another_pod_is_not_deallocated() {
    let mut s = sched(&[NODE]);
    add(&mut s, reserved_for(wrong_topology_claim(), "other", "other-uid"));
    let a = attempt(&mut s, &pod_with_claim_name());
    let e = failed(&a);
    assert!(
        e.starts_with("0/1 nodes are available: 1 resourceclaim not available on the node. still not schedulable, "),
        "{e}"
    );
    assert_eq!(deallocated(&a), None);
}

/// "good-topology": the allocation's node selector matches `worker`.
#[test]
fn good_topology() {
    let mut s = sched(&[NODE, NODE2]);
    add(
        &mut s,
        allocated(
            pending_claim(),
            json!({"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE]}]}]}}),
        ),
    );
    let a = attempt(&mut s, &pod_with_claim_name());
    let rejected: Vec<_> = a
        .result
        .as_ref()
        .unwrap()
        .explanation
        .as_ref()
        .unwrap()
        .nodes
        .iter()
        .filter_map(|n| n.rejected.as_ref().map(|r| (n.node.clone(), r.message())))
        .collect();
    assert_eq!(
        rejected,
        [(NODE2.to_owned(), "resourceclaim not available on the node".to_owned())]
    );
    let (node, plan) = placed(a);
    assert_eq!(node, NODE);
    assert_eq!(plan_claims(&plan.unwrap()), [(CLAIM.to_owned(), None)]);
}

/// "reserved-okay": allocated and reserved for the pod already: nothing to
/// write.
#[test]
fn reserved_okay() {
    let mut s = sched(&[NODE]);
    add(&mut s, reserved_for(allocated_claim(), POD, POD_UID));
    let (node, plan) = placed(attempt(&mut s, &pod_with_claim_name()));
    assert_eq!(node, NODE);
    assert!(plan.is_none_or(|p| p.is_empty()), "nothing to write");
}

/// Not a Go case (`resourceclaim in use` cannot happen in v1.36:
/// `CanBeReserved` is always true): a claim reserved for another pod is
/// shared, and reserved for this one too.
#[test]
fn claim_reserved_for_another_pod_is_shared() {
    let mut s = sched(&[NODE, NODE2]);
    add(&mut s, reserved_for(allocated_claim(), "other", "other-uid"));
    let (node, plan) = placed(attempt(&mut s, &pod_with_claim_name()));
    assert_eq!(node, NODE, "where the claim's devices are");
    let plan = plan.unwrap();
    assert_eq!(plan_claims(&plan), [(CLAIM.to_owned(), None)]);
    assert_eq!(plan.consumer().name, POD);
}

/// "claim-with-request-with-unknown-device-class".
#[test]
fn claim_with_request_with_unknown_device_class() {
    let mut s = sched(&[NODE]);
    add(&mut s, claim_with(CLAIM, exact("does-not-exist")));
    let a = attempt(&mut s, &pod_with_claim_name());
    let e = failed(&a);
    assert!(
        e.starts_with("0/1 nodes are available: request req-1: device class does-not-exist does not exist. "),
        "{e}"
    );
}

/// `st.SubRequest(name, class, count)`.
fn sub(name: &str, class: &str, count: i64) -> Value {
    json!({"name": name, "deviceClassName": class, "allocationMode": "ExactCount", "count": count})
}

/// `.RequestWithPrioritizedList(subs...)` for each list, `req-1`, `req-2`...
fn prioritized(lists: Vec<Vec<Value>>) -> Value {
    Value::Array(
        lists
            .into_iter()
            .enumerate()
            .map(|(i, subs)| json!({"name": format!("req-{}", i + 1), "firstAvailable": subs}))
            .collect(),
    )
}

/// "claim-with-prioritized-list-unknown-device-class".
#[test]
fn claim_with_prioritized_list_unknown_device_class() {
    let mut s = sched(&[NODE]);
    add(
        &mut s,
        claim_with(CLAIM, prioritized(vec![vec![sub("subreq-1", "does-not-exist", 1)]])),
    );
    let a = attempt(&mut s, &pod_with_claim_name());
    let e = failed(&a);
    assert!(
        e.starts_with("0/1 nodes are available: request req-1/subreq-1: device class does-not-exist does not exist. "),
        "{e}"
    );
}

/// "claim-with-prioritized-list".
#[test]
fn claim_with_prioritized_list() {
    let mut s = sched(&[NODE]);
    add(
        &mut s,
        owned(claim_with(CLAIM, prioritized(vec![vec![sub("subreq-1", CLASS, 1)]]))),
    );
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    let (_, plan) = placed(attempt(&mut s, &pod_with_claim_name()));
    let claims = plan_claims(&plan.unwrap());
    assert_eq!(
        results(claims[0].1.as_ref().unwrap()),
        [result(NODE, "instance-1", "req-1/subreq-1")]
    );
}

/// "single-claim-prioritized-list-scoring": the first choice on `worker`
/// (8), the second on `worker-2` (7); normalized 100 and 87.
#[test]
fn single_claim_prioritized_list_scoring() {
    let mut s = sched(&[NODE, NODE2]);
    let with_selector = json!({"name": "subreq-1", "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1,
                               "selectors": [{"cel": {"expression": BROKEN}}]});
    add(
        &mut s,
        owned(claim_with(
            CLAIM,
            prioritized(vec![vec![with_selector, sub("subreq-2", CLASS, 1)]]),
        )),
    );
    add(&mut s, device_class());
    add(&mut s, slice(NODE, json!([device("instance-1", Some(true))])));
    add(&mut s, slice(NODE2, json!([device("instance-1", Some(false))])));
    let a = attempt(&mut s, &pod_with_claim_name());
    let mut scores = dra_scores(&a);
    scores.sort();
    assert_eq!(
        scores,
        [(NODE.to_owned(), Some(8), 100), (NODE2.to_owned(), Some(7), 87)]
    );
    let (node, plan) = placed(a);
    assert_eq!(node, NODE);
    let claims = plan_claims(&plan.unwrap());
    assert_eq!(
        results(claims[0].1.as_ref().unwrap()),
        [result(NODE, "instance-1", "req-1/subreq-1")]
    );
}

fn devices(n: usize) -> Value {
    Value::Array((1..=n).map(|i| device(&format!("instance-{i}"), None)).collect())
}

/// "multiple-claims-prioritized-list-scoring".
#[test]
fn multiple_claims_prioritized_list_scoring() {
    let mut s = sched(&[NODE, NODE2, NODE3]);
    add(
        &mut s,
        owned(claim_with(CLAIM, prioritized(vec![vec![sub("subreq-1", CLASS, 1)]]))),
    );
    add(
        &mut s,
        owned(claim_with(
            CLAIM2,
            prioritized(vec![vec![
                sub("subreq-1", CLASS, 4),
                sub("subreq-2", CLASS, 3),
                sub("subreq-3", CLASS, 2),
                sub("subreq-4", CLASS, 1),
            ]]),
        )),
    );
    add(&mut s, device_class());
    add(&mut s, slice(NODE, devices(4)));
    add(&mut s, slice(NODE2, devices(2)));
    add(&mut s, slice(NODE3, devices(1)));
    let a = attempt(&mut s, &pod_with_two_claim_names());
    let ex = a.result.as_ref().unwrap().explanation.as_ref().unwrap();
    let rejected: Vec<_> = ex
        .nodes
        .iter()
        .filter_map(|n| n.rejected.as_ref().map(|r| (n.node.clone(), r.message())))
        .collect();
    assert_eq!(rejected, [(NODE3.to_owned(), "cannot allocate all claims".to_owned())]);
    let mut scores = dra_scores(&a);
    scores.sort();
    assert_eq!(
        scores,
        [(NODE.to_owned(), Some(15), 100), (NODE2.to_owned(), Some(13), 86)]
    );
    let (node, plan) = placed(a);
    assert_eq!(node, NODE);
    let claims = plan_claims(&plan.unwrap());
    assert_eq!(claims[0].0, CLAIM);
    assert_eq!(
        results(claims[0].1.as_ref().unwrap()),
        [result(NODE, "instance-1", "req-1/subreq-1")]
    );
    assert_eq!(claims[1].0, CLAIM2);
    assert_eq!(
        results(claims[1].1.as_ref().unwrap()),
        [
            result(NODE, "instance-2", "req-1/subreq-2"),
            result(NODE, "instance-3", "req-1/subreq-2"),
            result(NODE, "instance-4", "req-1/subreq-2"),
        ]
    );
}

/// "multiple-requests-prioritized-list-scoring".
#[test]
fn multiple_requests_prioritized_list_scoring() {
    let mut s = sched(&[NODE, NODE2, NODE3]);
    let list = vec![sub("subreq-1", CLASS, 2), sub("subreq-2", CLASS, 1)];
    add(&mut s, owned(claim_with(CLAIM, prioritized(vec![list.clone(), list]))));
    add(&mut s, device_class());
    add(&mut s, slice(NODE, devices(4)));
    add(&mut s, slice(NODE2, devices(3)));
    add(&mut s, slice(NODE3, devices(2)));
    let a = attempt(&mut s, &pod_with_claim_name());
    let mut scores = dra_scores(&a);
    scores.sort();
    assert_eq!(
        scores,
        [
            (NODE.to_owned(), Some(16), 100),
            (NODE2.to_owned(), Some(15), 93),
            (NODE3.to_owned(), Some(14), 87)
        ]
    );
    let (node, plan) = placed(a);
    assert_eq!(node, NODE);
    let claims = plan_claims(&plan.unwrap());
    assert_eq!(
        results(claims[0].1.as_ref().unwrap()),
        [
            result(NODE, "instance-1", "req-1/subreq-1"),
            result(NODE, "instance-2", "req-1/subreq-1"),
            result(NODE, "instance-3", "req-2/subreq-1"),
            result(NODE, "instance-4", "req-2/subreq-1"),
        ]
    );
}

// ------------------------------------------- whole messages

/// "no-resources", the whole FitError: in v1.36's default profile
/// DynamicResources runs at PostFilter before DefaultPreemption, and,
/// with no allocated claim to deallocate, says `still not schedulable`;
/// the PostFilter message joins both plugins' reasons with ", ".
#[test]
fn no_resources_full_fit_error() {
    let mut s = sched(&[NODE]);
    add(&mut s, pending_claim());
    add(&mut s, device_class());
    let a = attempt(&mut s, &pod_with_claim_name());
    assert_eq!(
        failed(&a),
        format!(
            "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, {}",
            no_preemption(1)
        )
    );
}

/// "missing-class", the whole FitError: DynamicResources' PostFilter says
/// `no new claims to deallocate` (PreFilter failed before recording the
/// claims), before DefaultPreemption's message.
#[test]
fn missing_class_full_fit_error() {
    let mut s = sched(&[NODE]);
    add(&mut s, pending_claim());
    let a = attempt(&mut s, &pod_with_claim_name());
    assert_eq!(
        failed(&a),
        format!(
            "0/1 nodes are available: request req-1: device class my-resource-class does not exist. \
             no new claims to deallocate, {}",
            no_preemption(1)
        )
    );
}

/// "claim-parameters-CEL-runtime-error", the cycle's error as
/// kube-scheduler's `RunFilterPlugins` wraps it.
#[test]
#[ignore = "diverges: wasmsched wraps a Filter error as `running Filter plugin \"X\" on node \"n\": ...`, kube-scheduler as `running \"X\" filter plugin: ...`"]
fn claim_parameters_cel_runtime_error_full_text() {
    let mut s = sched(&[NODE]);
    add(&mut s, break_cel_in_claim(pending_claim()));
    add(&mut s, device_class());
    add(&mut s, worker_node_slice());
    let a = attempt(&mut s, &pod_with_claim_name());
    assert_eq!(
        errored(&a),
        "running \"DynamicResources\" filter plugin: claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: healthy"
    );
}
