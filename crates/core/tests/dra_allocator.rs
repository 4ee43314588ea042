//! The allocator's shared test table of kube-scheduler v1.36
//! (`k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting`),
//! ported case by case (all 215, the Go comments left out), with Go's
//! builders, run against the stable path as Go runs it: cases needing a
//! feature the path does not support are skipped, and must be exactly
//! [`SKIPPED_FOR_FEATURES`]. One expectation differs from Go's, where
//! wasmsched says why a device was not allocated
//! (`binding-conditions-without-feature-gate`). Then the refusals wasmsched
//! adds, interruption, and sharing one allocator between nodes and threads.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{AllocationResult, DeviceClass, ResourceClaim, ResourceSlice};
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Value, json};
use wasmsched_core::NodeData;
use wasmsched_core::dra::DeviceId;
use wasmsched_core::dra::allocator::{AllocError, Allocator, Features};
use wasmsched_core::dra::cel::CelCache;

const REGION1: &str = "region-1";
const REGION2: &str = "region-2";
const NODE1: &str = "node-1";
const NODE2: &str = "node-2";
const CLASS_A: &str = "class-a";
const CLASS_B: &str = "class-b";
const DRIVER_A: &str = "driver-a";
const DRIVER_B: &str = "driver-b";
const POOL1: &str = "pool-1";
const POOL2: &str = "pool-2";
const POOL3: &str = "pool-3";
const POOL4: &str = "pool-4";
const REQ0: &str = "req-0";
const REQ1: &str = "req-1";
const REQ2: &str = "req-2";
const REQ3: &str = "req-3";
const SUB_REQ0: &str = "subReq-0";
const SUB_REQ1: &str = "subReq-1";
const REQ0_SUB_REQ0: &str = "req-0/subReq-0";
const REQ0_SUB_REQ1: &str = "req-0/subReq-1";
const REQ1_SUB_REQ0: &str = "req-1/subReq-0";
const REQ1_SUB_REQ1: &str = "req-1/subReq-1";
const REQ2_SUB_REQ0: &str = "req-2/subReq-0";
const REQ2_SUB_REQ1: &str = "req-2/subReq-1";
const CLAIM0: &str = "claim-0";
const CLAIM1: &str = "claim-1";
const SLICE1: &str = "slice-1";
const SLICE2: &str = "slice-2";
const SLICE3: &str = "slice-3";
const SLICE4: &str = "slice-4";
const DEVICE0: &str = "device-0";
const DEVICE1: &str = "device-1";
const DEVICE2: &str = "device-2";
const DEVICE3: &str = "device-3";
const DEVICE4: &str = "device-4";
const COUNTER_SET1: &str = "counter-set-1";
const COUNTER_SET2: &str = "counter-set-2";
const CAPACITY0: &str = "capacity-0";
const CAPACITY1: &str = "capacity-1";
const FIXED_SHARE_ID: &str = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa";

const FIELD_NAME_KEY: &str = "metadata.name";
const REGION_KEY: &str = "region";
const PLANET_KEY: &str = "planet";
const PLANET_VALUE_EARTH: &str = "earth";
const FROM_COUNTERS: &str = "fromCounters";
const NODE_SELECTION_ALL: &str = "nodeSelectionAll";
const NODE_SELECTION_PER_DEVICE: &str = "nodeSelectionPerDevice";

const NON_EXISTENT_ATTRIBUTE: &str = "driver-a/NonExistentAttribute";
const BOOL_ATTRIBUTE: &str = "driver-a/boolAttribute";
const STRING_ATTRIBUTE: &str = "driver-a/stringAttribute";
const VERSION_ATTRIBUTE: &str = "driver-a/driverVersion";
const INT_ATTRIBUTE: &str = "driver-a/numa";

const TAINT_KEY: &str = "taint-key";
const TAINT_VALUE: &str = "taint-value";
const TAINT_VALUE2: &str = "taint-value-2";

fn zero() -> Value {
    json!("0")
}
fn one() -> Value {
    json!("1")
}
fn two() -> Value {
    json!("2")
}
fn three() -> Value {
    json!("3")
}
fn four() -> Value {
    json!("4")
}

fn taint_none() -> Value {
    json!({"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "None"})
}
fn taint_no_schedule() -> Value {
    json!({"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"})
}
fn taint_no_execute() -> Value {
    json!({"key": TAINT_KEY, "value": TAINT_VALUE2, "effect": "NoExecute"})
}
fn toleration_no_schedule() -> Value {
    json!({"operator": "Exists", "key": TAINT_KEY, "effect": "NoSchedule"})
}
fn toleration_no_execute() -> Value {
    json!({"operator": "Equal", "key": TAINT_KEY, "value": TAINT_VALUE2, "effect": "NoExecute"})
}
fn toleration_no_schedule_key1() -> Value {
    json!({"operator": "Exists", "key": "key1", "effect": "NoSchedule"})
}

// ---------------------------------------------------------------- builders

/// Go's wrappers' `with...` methods and field assignments, on objects
/// built as JSON.
trait Obj: Sized {
    fn at(&mut self, path: &str) -> &mut Value;
    fn set(&mut self, path: &str, v: impl Into<Value>);
    fn incr(&mut self, path: &str);
    fn append_str(&mut self, path: &str, s: &str);
    fn push_all(self, path: &str, items: Vec<Value>) -> Self;
    fn with(self, path: &str, v: impl Into<Value>) -> Self;

    fn with_requests(self, requests: Vec<Value>) -> Self {
        self.with("/spec/devices/requests", requests)
    }
    fn with_constraints(self, constraints: Vec<Value>) -> Self {
        self.with("/spec/devices/constraints", constraints)
    }
    fn with_configs(self, configs: Vec<Value>) -> Self {
        self.with("/spec/devices/config", configs)
    }
    fn with_tolerations(self, tolerations: Vec<Value>) -> Self;
    fn with_selectors(self, selectors: Vec<Value>) -> Self {
        self.with("/exactly/selectors", selectors)
    }
    fn with_allocation_mode(self, mode: &str) -> Self {
        self.with("/allocationMode", mode)
    }
    fn with_capacity_request(self, quantity: impl Into<Value>) -> Self;
    fn with_taints(self, taints: Vec<Value>) -> Self {
        self.push_all("/taints", taints)
    }
    fn with_device_counter_consumption(self, consumption: Vec<Value>) -> Self;
    fn with_node_selection(self, selection: impl Into<Value>) -> Self;
    fn with_binding_conditions(self, conditions: Vec<&str>, failure_conditions: Vec<&str>) -> Self {
        self.with("/bindingConditions", conditions)
            .with("/bindingFailureConditions", failure_conditions)
    }
    fn with_binds_to_node(self, binds: bool) -> Self {
        self.with("/bindsToNode", binds)
    }
    fn with_allow_multiple_allocations(self) -> Self {
        self.with("/allowMultipleAllocations", true)
    }
    fn with_capacity_request_policy_range(self, capacity: Value) -> Self;
    fn with_capacity_request_policy_valid_values(self, default: Value, capacity: Value, more: Value) -> Self;
    fn with_consumed_capacity(self, share_id: &str, consumed: Value) -> Value;
}

impl Obj for Value {
    fn at(&mut self, path: &str) -> &mut Value {
        let mut v = self;
        for seg in path.split('/').skip(1) {
            if let Value::Array(a) = v {
                v = &mut a[seg.parse::<usize>().expect("index")];
                continue;
            }
            if !v.is_object() {
                *v = json!({});
            }
            v = v.as_object_mut().unwrap().entry(seg).or_insert(Value::Null);
        }
        v
    }
    fn set(&mut self, path: &str, v: impl Into<Value>) {
        *self.at(path) = v.into();
    }
    fn incr(&mut self, path: &str) {
        let v = self.at(path);
        *v = json!(v.as_i64().unwrap_or(0) + 1);
    }
    fn append_str(&mut self, path: &str, s: &str) {
        let v = self.at(path);
        *v = json!(format!("{}{s}", v.as_str().unwrap_or("")));
    }
    fn push_all(mut self, path: &str, items: Vec<Value>) -> Self {
        let v = self.at(path);
        if !v.is_array() {
            *v = json!([]);
        }
        v.as_array_mut().unwrap().extend(items);
        self
    }
    fn with(mut self, path: &str, v: impl Into<Value>) -> Self {
        self.set(path, v);
        self
    }
    fn with_tolerations(mut self, tolerations: Vec<Value>) -> Self {
        let n = self.at("/spec/devices/requests").as_array().map_or(0, Vec::len);
        for i in 0..n {
            self = self.push_all(
                &format!("/spec/devices/requests/{i}/exactly/tolerations"),
                tolerations.clone(),
            );
        }
        self
    }
    fn with_capacity_request(self, quantity: impl Into<Value>) -> Self {
        let capacity = json!({"requests": {CAPACITY0: quantity.into()}});
        if self.get("exactly").is_some() {
            self.with("/exactly/capacity", capacity)
        } else {
            self.with("/capacity", capacity)
        }
    }
    fn with_device_counter_consumption(self, consumption: Vec<Value>) -> Self {
        let mut d = self.push_all("/consumesCounters", consumption);
        let from_counters = d.as_object_mut().unwrap().remove("__fromCounters").is_some();
        if from_counters {
            let mut capacity = serde_json::Map::new();
            for c in d["consumesCounters"].as_array().unwrap() {
                for (name, counter) in c["counters"].as_object().unwrap() {
                    capacity.insert(name.clone(), json!({"value": counter["value"]}));
                }
            }
            d["capacity"] = Value::Object(capacity);
        }
        d
    }
    fn with_node_selection(self, selection: impl Into<Value>) -> Self {
        match selection.into() {
            Value::String(s) if s == NODE_SELECTION_ALL => self.with("/allNodes", true),
            Value::String(s) if s == NODE_SELECTION_PER_DEVICE => panic!("nodeSelectionPerDevice is not for devices"),
            Value::String(s) => self.with("/nodeName", s),
            selector => self.with("/nodeSelector", selector),
        }
    }
    fn with_capacity_request_policy_range(mut self, capacity: Value) -> Self {
        for (name, q) in capacity.as_object().unwrap() {
            self.set(
                &format!("/capacity/{name}"),
                json!({
                    "value": q,
                    "requestPolicy": {"default": two(), "validRange": {"min": two(), "step": two(), "max": four()}},
                }),
            );
        }
        self
    }
    fn with_capacity_request_policy_valid_values(mut self, default: Value, capacity: Value, more: Value) -> Self {
        for (name, q) in capacity.as_object().unwrap() {
            let mut valid = vec![default.clone()];
            valid.extend(more.as_array().into_iter().flatten().cloned());
            self.set(
                &format!("/capacity/{name}"),
                json!({"value": q, "requestPolicy": {"default": default, "validValues": valid}}),
            );
        }
        self
    }
    fn with_consumed_capacity(self, share_id: &str, consumed: Value) -> Value {
        self.with("/shareID", share_id).with("/consumedCapacity", consumed)
    }
}

fn merge(mut a: Value, b: Value) -> Value {
    if let Value::Object(b) = b {
        a.as_object_mut().unwrap().extend(b);
    }
    a
}

/// A CEL device selector.
fn cel(expression: &str) -> Value {
    json!({"cel": {"expression": expression}})
}

fn node(name: &str, region: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {REGION_KEY: region, PLANET_KEY: PLANET_VALUE_EARTH}}})
}

fn class(name: &str, driver: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"selectors": [
        {"cel": {"expression": format!(r#"device.driver == "{driver}""#)}}
    ]}})
}

fn class_with_allow_multiple_allocations(name: &str, driver: &str, multi: bool) -> Value {
    json!({"metadata": {"name": name}, "spec": {"selectors": [
        {"cel": {"expression": format!(r#"device.driver == "{driver}" && device.allowMultipleAllocations == {multi}"#)}}
    ]}})
}

fn device_configuration(driver: &str, attribute: &str) -> Value {
    json!({"opaque": {"driver": driver, "parameters": {attribute: format!("{attribute}Value")}}})
}

fn class_with_config(name: &str, driver: &str, attribute: &str) -> Value {
    class(name, driver).with("/spec/config", json!([device_configuration(driver, attribute)]))
}

fn claim_with_requests(name: &str, constraints: impl Into<Value>, requests: Vec<Value>) -> Value {
    let mut devices = json!({"requests": requests});
    let constraints = constraints.into();
    if !constraints.is_null() {
        devices["constraints"] = constraints;
    }
    json!({"metadata": {"name": name}, "spec": {"devices": devices}})
}

fn request(name: &str, class: &str, count: i64, selectors: Vec<Value>) -> Value {
    let mut r =
        json!({"name": name, "exactly": {"count": count, "allocationMode": "ExactCount", "deviceClassName": class}});
    if !selectors.is_empty() {
        r["exactly"]["selectors"] = json!(selectors);
    }
    r
}

fn device_request(name: &str, class: &str, count: i64) -> Value {
    request(name, class, count, vec![])
}

fn all_device_request(name: &str, class: &str) -> Value {
    json!({"name": name, "exactly": {"allocationMode": "All", "deviceClassName": class}})
}

/// Go's `subRequest`: the extra fields are selectors or tolerations.
fn sub_request(name: &str, class: &str, count: i64, fields: Vec<Value>) -> Value {
    let mut r = json!({"name": name, "count": count, "allocationMode": "ExactCount", "deviceClassName": class});
    for f in fields {
        let list = if f.get("cel").is_some() {
            "/selectors"
        } else {
            "/tolerations"
        };
        r = r.push_all(list, vec![f]);
    }
    r
}

fn request_with_prioritized_list(name: &str, subs: Vec<Value>) -> Value {
    json!({"name": name, "firstAvailable": subs})
}

fn claim_with_request(name: &str, req: &str, class: &str, constraints: Vec<Value>) -> Value {
    let constraints = if constraints.is_empty() {
        Value::Null
    } else {
        json!(constraints)
    };
    claim_with_requests(name, constraints, vec![request(req, class, 1, vec![])])
}

fn claim(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {}})
}

fn claim_with_device_config(name: &str, request: &str, class: &str, driver: &str, attribute: &str) -> Value {
    claim_with_request(name, request, class, vec![])
        .with("/spec/devices/config", json!([device_configuration(driver, attribute)]))
}

fn device_claim_config(requests: Vec<&str>, config: Value) -> Value {
    merge(json!({"requests": requests}), config)
}

/// Go's `device`: capacity is null, quantities by name, or
/// [`FROM_COUNTERS`] (taken from the counters consumed, when set).
fn device(name: &str, capacity: impl Into<Value>, attributes: impl Into<Value>) -> Value {
    let mut d = json!({"name": name});
    match capacity.into() {
        Value::Null => {}
        Value::String(s) if s == FROM_COUNTERS => d["__fromCounters"] = json!(true),
        Value::Object(m) => {
            d["capacity"] = m.into_iter().map(|(k, q)| (k, json!({"value": q}))).collect();
        }
        other => panic!("unexpected capacity {other}"),
    }
    let attributes = attributes.into();
    if !attributes.is_null() {
        d["attributes"] = attributes;
    }
    d
}

fn device_counter_consumption(counter_set: &str, counters: impl Into<Value>) -> Value {
    json!({"counterSet": counter_set, "counters": to_counters(counters.into())})
}

fn counter_set(name: &str, counters: impl Into<Value>) -> Value {
    json!({"name": name, "counters": to_counters(counters.into())})
}

fn to_counters(counters: Value) -> Value {
    match counters {
        Value::Object(m) => m.into_iter().map(|(k, q)| (k, json!({"value": q}))).collect(),
        _ => json!({}),
    }
}

/// Go's `slice`: node selection is a node name, [`NODE_SELECTION_ALL`],
/// [`NODE_SELECTION_PER_DEVICE`] or a node selector; the pool a name (one
/// slice, generation 1) or a [`resource_pool`].
fn slice(name: &str, node_selection: impl Into<Value>, pool: impl Into<Value>, driver: &str) -> Value {
    let pool = match pool.into() {
        Value::String(p) => json!({"name": p, "resourceSliceCount": 1, "generation": 1}),
        p => p,
    };
    let mut s = json!({"metadata": {"name": name}, "spec": {"driver": driver, "pool": pool}});
    match node_selection.into() {
        Value::String(n) if n == NODE_SELECTION_ALL => s["spec"]["allNodes"] = json!(true),
        Value::String(n) if n == NODE_SELECTION_PER_DEVICE => s["spec"]["perDeviceNodeSelection"] = json!(true),
        Value::String(n) => s["spec"]["nodeName"] = json!(n),
        selector => s["spec"]["nodeSelector"] = selector,
    }
    s
}

fn slice_with_devices(
    name: &str,
    node_selection: impl Into<Value>,
    pool: impl Into<Value>,
    driver: &str,
    devices: Vec<Value>,
) -> Value {
    let mut s = slice(name, node_selection, pool, driver);
    let devices: Vec<Value> = devices
        .into_iter()
        .map(|mut d| {
            d.as_object_mut().unwrap().remove("__fromCounters");
            d
        })
        .collect();
    if !devices.is_empty() {
        s["spec"]["devices"] = json!(devices);
    }
    s
}

fn slice_with_counter_sets(
    name: &str,
    node_selection: impl Into<Value>,
    pool: impl Into<Value>,
    driver: &str,
    counter_sets: Vec<Value>,
) -> Value {
    slice(name, node_selection, pool, driver).with("/spec/sharedCounters", counter_sets)
}

fn resource_pool(name: &str, count: i64) -> Value {
    json!({"name": name, "resourceSliceCount": count, "generation": 1})
}

fn slice_with_no_devices(name: &str, node_selection: impl Into<Value>, pool: impl Into<Value>, driver: &str) -> Value {
    slice_with_devices(name, node_selection, pool, driver, vec![])
}

fn slice_with_one_device(name: &str, node_selection: impl Into<Value>, pool: impl Into<Value>, driver: &str) -> Value {
    slice_with_devices(
        name,
        node_selection,
        pool,
        driver,
        vec![device(DEVICE1, Value::Null, Value::Null)],
    )
}

fn slice_with_multiple_devices(
    name: &str,
    node_selection: impl Into<Value>,
    pool: impl Into<Value>,
    driver: &str,
    count: usize,
) -> Value {
    let devices = (0..count)
        .map(|i| device(&format!("device-{i}"), Value::Null, Value::Null))
        .collect();
    slice_with_devices(name, node_selection, pool, driver, devices)
}

fn id(driver: &str, pool: &str, device: &str) -> DeviceId {
    DeviceId::new(driver, pool, device)
}

fn device_allocation_result(
    request: &str,
    driver: &str,
    pool: &str,
    device: &str,
    admin_access: bool,
    tolerations: Vec<Value>,
) -> Value {
    let mut r = json!({"request": request, "driver": driver, "pool": pool, "device": device});
    if admin_access {
        r["adminAccess"] = json!(true);
    }
    if !tolerations.is_empty() {
        r["tolerations"] = json!(tolerations);
    }
    r
}

fn device_request_allocation_result(request: &str, driver: &str, pool: &str, device: &str) -> Value {
    json!({"request": request, "driver": driver, "pool": pool, "device": device})
}

fn device_request_allocation_result_with_binding_conditions(
    request: &str,
    driver: &str,
    pool: &str,
    device: &str,
    binding_conditions: impl Into<Value>,
    binding_failure_conditions: impl Into<Value>,
    tolerations: Vec<Value>,
) -> Value {
    let mut r = device_request_allocation_result(request, driver, pool, device);
    r["bindingConditions"] = binding_conditions.into();
    r["bindingFailureConditions"] = binding_failure_conditions.into();
    if !tolerations.is_empty() {
        r["tolerations"] = json!(tolerations);
    }
    r
}

fn multiple_device_allocation_results(
    request: &str,
    driver: &str,
    pool: &str,
    count: usize,
    start: usize,
) -> Vec<Value> {
    (start..start + count)
        .map(|i| device_allocation_result(request, driver, pool, &format!("device-{i}"), false, vec![]))
        .collect()
}

fn node_label_selector(key: &str, value: &str) -> Value {
    json!({"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]})
}

fn local_node_selector(node: &str) -> Value {
    json!({"nodeSelectorTerms": [{"matchFields": [{"key": FIELD_NAME_KEY, "operator": "In", "values": [node]}]}]})
}

/// An expected allocation result.
enum Expect {
    /// Go's `allocationResult` matcher: results in any order, no config, the
    /// node selector with terms, requirements and values in any order, no
    /// timestamp.
    Loose { selector: Value, results: Vec<Value> },
    /// An `AllocationResult` compared as it is (Go's `Equal`).
    Exact(Value),
}

fn allocation_result(selector: Value, results: Vec<Value>) -> Expect {
    Expect::Loose { selector, results }
}

fn exact(result: Value) -> Expect {
    Expect::Exact(result)
}

fn allocation_result_with_config(
    selector: Value,
    driver: &str,
    source: &str,
    attribute: &str,
    results: Vec<Value>,
) -> Expect {
    let config = merge(json!({"source": source}), device_configuration(driver, attribute));
    exact(json!({"devices": {"results": results, "config": [config]}, "nodeSelector": selector}))
}

fn allocation_result_with_configs(selector: Value, results: Vec<Value>, configs: Value) -> Expect {
    exact(json!({"devices": {"results": results, "config": configs}, "nodeSelector": selector}))
}

// ---------------------------------------------------------------- runner

/// Go's `AllocatorTestCase`.
#[derive(Default)]
struct Case {
    name: &'static str,
    features: Features,
    claims: Vec<Value>,
    allocated: Vec<DeviceId>,
    /// DRAConsumableCapacity's state (only in skipped cases).
    allocated_shared_device_ids: Value,
    allocated_capacity_devices: Value,
    classes: Vec<Value>,
    slices: Vec<Value>,
    node: Option<Value>,
    expect: Vec<Expect>,
    /// A part of the expected error's message.
    error: Option<&'static str>,
    /// Go's `expectNumAllocateOneInvocations` for the stable path.
    steps: Option<u64>,
}

fn parse<T: serde::de::DeserializeOwned>(what: &str, v: &Value) -> Result<T, String> {
    serde_json::from_value(v.clone()).map_err(|e| format!("{what}: {e}: {v}"))
}

/// Drops nulls, empty lists and empty maps: Go's nil and empty are alike
/// here.
fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), normalize(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        v => v.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// A node selector with its terms, requirements and values sorted: equal
/// when Go's order-insensitive matcher matches.
fn canonical_selector(v: &Value) -> Value {
    let v = normalize(v);
    let Some(terms) = v.get("nodeSelectorTerms").and_then(Value::as_array) else {
        return v;
    };
    let mut terms: Vec<Value> = terms
        .iter()
        .map(|t| {
            let mut t = t.clone();
            for list in ["matchExpressions", "matchFields"] {
                if let Some(reqs) = t.get_mut(list).and_then(Value::as_array_mut) {
                    for r in reqs.iter_mut() {
                        if let Some(values) = r.get_mut("values").and_then(Value::as_array_mut) {
                            values.sort_by_key(|x| x.to_string());
                        }
                    }
                    reqs.sort_by_key(|x| x.to_string());
                }
            }
            t
        })
        .collect();
    terms.sort_by_key(|x| x.to_string());
    json!({"nodeSelectorTerms": terms})
}

fn sorted(values: &[Value]) -> Vec<String> {
    let mut s: Vec<String> = values.iter().map(|v| normalize(v).to_string()).collect();
    s.sort();
    s
}

fn matches(expect: &Expect, actual: &Value) -> bool {
    match expect {
        Expect::Exact(want) => normalize(want) == normalize(actual),
        Expect::Loose { selector, results } => {
            let devices = actual.get("devices").cloned().unwrap_or(Value::Null);
            let got_results = devices
                .get("results")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            sorted(results) == sorted(&got_results)
                && devices.get("config").is_none_or(is_empty)
                && canonical_selector(selector)
                    == canonical_selector(actual.get("nodeSelector").unwrap_or(&Value::Null))
                && actual.get("allocationTimestamp").is_none_or(Value::is_null)
        }
    }
}

fn describe(expect: &Expect) -> String {
    match expect {
        Expect::Exact(v) => normalize(v).to_string(),
        Expect::Loose { selector, results } => {
            format!(
                "results (any order) {:?}, nodeSelector {}",
                sorted(results),
                canonical_selector(selector)
            )
        }
    }
}

/// Go's `RunTestAllocator` for one case: Ok, or what went wrong.
fn run(case: &Case) -> Result<(), String> {
    // DRAConsumableCapacity's state has no place in this allocator.
    if !case.allocated_shared_device_ids.is_null() || !case.allocated_capacity_devices.is_null() {
        return Err("the case needs DRAConsumableCapacity".to_owned());
    }
    let claims: Vec<ResourceClaim> = case
        .claims
        .iter()
        .map(|c| parse("claim", c))
        .collect::<Result<_, _>>()?;
    let classes: FxHashMap<String, Arc<DeviceClass>> = case
        .classes
        .iter()
        .map(|c| {
            let class: DeviceClass = parse("class", c)?;
            Ok((class.metadata.name.clone().unwrap_or_default(), Arc::new(class)))
        })
        .collect::<Result<_, String>>()?;
    let slices: Vec<Arc<ResourceSlice>> = case
        .slices
        .iter()
        .map(|s| parse("slice", s).map(Arc::new))
        .collect::<Result<_, _>>()?;
    let node: Node = parse("node", case.node.as_ref().unwrap_or(&node(NODE1, REGION1)))?;
    let node = NodeData::from_node(&node).map_err(|e| e.to_string())?;
    let allocated: FxHashSet<DeviceId> = case.allocated.iter().cloned().collect();
    let cel = CelCache::new(1);
    let allocator =
        Allocator::new(case.features, &allocated, &classes, &slices, &cel).map_err(|e| format!("new: {e}"))?;
    let claim_refs: Vec<&ResourceClaim> = claims.iter().collect();
    let outcome = allocator.allocate(&node, &claim_refs, &|| false);

    let results: Vec<AllocationResult> = match (&outcome, case.error) {
        (Ok(results), None) => results.clone().unwrap_or_default(),
        (Err(e), None) => return Err(format!("unexpected error: {e:?}")),
        (Ok(_), Some(want)) => return Err(format!("expected an error containing {want:?}, got {outcome:?}")),
        (Err(e), Some(want)) => {
            if !e.message().contains(want) {
                return Err(format!("expected an error containing {want:?}, got {e:?}"));
            }
            // Only invalid pools and refused devices are this node's alone.
            let on_node = want.contains("invalid resource pools") || want.contains("wasmsched");
            if matches!(e, AllocError::FailedOnNode(_)) != on_node {
                return Err(format!("error of the wrong kind: {e:?}"));
            }
            Vec::new()
        }
    };
    let actual: Vec<Value> = results.iter().map(|r| serde_json::to_value(r).unwrap()).collect();
    // ConsistOf: each expectation matched by a different result.
    let mut used = vec![false; actual.len()];
    for want in &case.expect {
        let found = (0..actual.len()).find(|&i| !used[i] && matches(want, &actual[i]));
        match found {
            Some(i) => used[i] = true,
            None => {
                return Err(format!(
                    "no result matches {}\ngot: {}",
                    describe(want),
                    actual
                        .iter()
                        .map(|a| normalize(a).to_string())
                        .collect::<Vec<_>>()
                        .join("\n     ")
                ));
            }
        }
    }
    if used.iter().any(|u| !u) {
        return Err(format!(
            "unexpected results: {}",
            actual
                .iter()
                .map(|a| normalize(a).to_string())
                .collect::<Vec<_>>()
                .join("\n     ")
        ));
    }
    if let Some(steps) = case.steps
        && allocator.steps() != steps
    {
        return Err(format!("expected {steps} search steps, got {}", allocator.steps()));
    }
    Ok(())
}

#[test]
fn allocator_test_table() {
    let cases = cases();
    let mut names = FxHashSet::default();
    let mut failed = Vec::new();
    let mut skipped = Vec::new();
    let mut passed = 0;
    for case in &cases {
        assert!(names.insert(case.name), "duplicate case {}", case.name);
        if !case.features.unsupported().is_empty() {
            skipped.push(case.name);
            continue;
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(case))) {
            Ok(Ok(())) => passed += 1,
            Ok(Err(e)) => failed.push(format!("{}: {e}", case.name)),
            Err(_) => failed.push(format!("{}: panicked", case.name)),
        }
    }
    for f in &failed {
        eprintln!("FAILED {f}\n");
    }
    eprintln!(
        "{} cases: {passed} passed, {} failed, {} skipped for features",
        cases.len(),
        failed.len(),
        skipped.len()
    );
    let mut want_skipped: Vec<&str> = SKIPPED_FOR_FEATURES.to_vec();
    want_skipped.sort_unstable();
    skipped.sort_unstable();
    assert_eq!(skipped, want_skipped, "cases skipped for features");
    assert!(failed.is_empty(), "{} of {} cases failed", failed.len(), cases.len());
}

const SKIPPED_FOR_FEATURES: &[&str] = &[
    "device-binding-conditions",
    "binding-conditions-multiple-devices",
    "binding-conditions-with-and-without",
    "node-restriction",
    "partitionable-devices-with-binding-conditions",
    "partitionable-devices-with-binding-conditions-multiple",
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions",
    "partitionable-devices-with-binding-conditions-multi-slices",
    "partitionable-devices-with-binding-conditions-and-taints",
    "partitionable-devices-with-binding-conditions-and-taints-tolerated",
    "consumable-capacity-disabled-feature",
    "consumable-capacity-disabled-feature-with-prioritized-list",
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request",
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request",
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request",
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block",
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request",
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request",
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy",
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy",
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request",
    "consumable-capacity-multi-allocatable-device-with-range-policy-step",
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy",
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up",
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request",
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy",
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining",
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device",
    "consumable-capacity-with-multi-allocatable-device-backtrack",
    "consumable-capacity-multi-allocatable-device-with-subrequest",
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient",
    "consumable-capacity-dedicated-device-with-consumable-capacity-request",
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request",
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector",
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated",
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable",
    "allow-multiple-allocations-with-partitionable-device",
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle",
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools",
    "with-distinct-constraints",
    "with-distinct-constraints-attribute-not-set",
    "with-distinct-constraints-unknown-type-attribute",
    "with-distinct-constraints-with-subrequests",
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint",
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint",
    "list-attributes-match-constaint-scalar-string-values",
    "list-attributes-match-constaint-list-of-string-values-with-common-elements",
    "list-attributes-match-constaint-list-of-string-values-with-partially-common-elements",
    "list-attributes-match-constaint-list-of-string-values-without-common-elements",
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-common-elements",
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-partially-common-elements",
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-without-common-elements",
    "list-attributes-match-constaint-list-of-int-values-with-common-elements",
    "list-attributes-match-constaint-list-of-bool-values-with-common-elements",
    "list-attributes-match-constaint-list-of-version-values-with-common-elements",
    "list-attributes-match-constaint-with-empty-or-unknown-type",
    "list-attributes-distinct-constraint-scalar-string-values-all-distinct",
    "list-attributes-distinct-constraint-scalar-string-values-not-distinct",
    "list-attributes-distinct-constraint-list-of-string-values-all-distinct",
    "list-attributes-distinct-constraint-list-of-string-values-with-common-elements",
    "list-attributes-distinct-constraint-mixed-scalar-and-list-all-distinct",
    "list-attributes-distinct-constraint-mixed-scalar-and-list-with-common-elements",
    "list-attributes-distinct-constraint-list-of-int-values-all-distinct",
    "list-attributes-distinct-constraint-list-of-bool-values-all-distinct",
    "list-attributes-distinct-constraint-list-of-version-values-all-distinct",
    "list-attributes-distinct-constaint-with-empty-or-unknown-type",
    "list-attributes-disabled-distinct-constraint-with-lists",
    "check-combinations-with-backtracking-across-slices-and-pools",
];

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "empty",
            ..Case::default()
        },
        Case {
            name: "simple",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "other-node",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
                slice_with_one_device(SLICE2, NODE2, POOL2, DRIVER_A),
            ],
            node: Some(node(NODE2, REGION2)),
            expect: vec![allocation_result(
                local_node_selector(NODE2),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "small-and-large",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![
                    request(
                        REQ0,
                        CLASS_A,
                        1,
                        vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0"#,
                        )],
                    ),
                    request(
                        REQ1,
                        CLASS_A,
                        1,
                        vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0"#,
                        )],
                    ),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, json!({"memory": "1Gi"}), Value::Null),
                    device(DEVICE2, json!({"memory": "2Gi"}), Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "small-and-large-backtrack-requests",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![
                    request(
                        REQ0,
                        CLASS_A,
                        1,
                        vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0"#,
                        )],
                    ),
                    request(
                        REQ1,
                        CLASS_A,
                        1,
                        vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0"#,
                        )],
                    ),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE2, json!({"memory": "2Gi"}), Value::Null),
                    device(DEVICE1, json!({"memory": "1Gi"}), Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "small-and-large-backtrack-claims",
            claims: vec![
                claim_with_requests(
                    CLAIM0,
                    Value::Null,
                    vec![request(
                        REQ0,
                        CLASS_A,
                        1,
                        vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0"#,
                        )],
                    )],
                ),
                claim_with_requests(
                    CLAIM1,
                    Value::Null,
                    vec![request(
                        REQ1,
                        CLASS_A,
                        1,
                        vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0"#,
                        )],
                    )],
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE2, json!({"memory": "2Gi"}), Value::Null),
                    device(DEVICE1, json!({"memory": "1Gi"}), Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, false, vec![])],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "devices-split-across-different-slices",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({
                    "name": REQ0,
                    "exactly": {"count": 2, "allocationMode": "ExactCount", "deviceClassName": CLASS_A},
                })],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_A),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "obsolete-slice",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    "slice-1-obsolete",
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, Value::Null)],
                ),
                {
                    let mut slice = slice_with_devices(
                        "slice-1-obsolete",
                        NODE1,
                        resource_pool(POOL1, 2),
                        DRIVER_A,
                        vec![device(DEVICE2, Value::Null, Value::Null)],
                    );
                    slice.incr("/spec/pool/generation");
                    slice
                },
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "duplicate-slice",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: {
                let mut slice_a = slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A);
                slice_a.set("/spec/pool/resourceSliceCount", 2);
                let mut slice_b = slice_a.clone();
                slice_b.append_str("/metadata/name", "-2");
                vec![slice_a, slice_b]
            },
            node: Some(node(NODE1, REGION1)),
            error: Some("invalid resource pools were encountered"),
            ..Case::default()
        },
        Case {
            name: "no-slices",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "not-enough-suitable-devices",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]),
                claim_with_request(CLAIM0, REQ1, CLASS_A, vec![]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "no-classes",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some("could not retrieve device class class-a"),
            ..Case::default()
        },
        Case {
            name: "unknown-class",
            claims: vec![claim_with_request(CLAIM0, REQ0, "unknown-class", vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some("could not retrieve device class unknown-class"),
            ..Case::default()
        },
        Case {
            name: "empty-class",
            claims: vec![claim_with_request(CLAIM0, REQ0, "", vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some("claim claim-0, request req-0: missing device class name (unsupported request type?)"),
            ..Case::default()
        },
        Case {
            name: "no-claims-to-allocate",
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-single",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "all-devices-with-consumed-counters",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "all-devices-many",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "all-devices-of-the-incomplete-pool",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({
                    "name": REQ0,
                    "exactly": {"allocationMode": "All", "count": 1, "deviceClassName": CLASS_A},
                })],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![{
                let mut slice = slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A);
                slice.incr("/spec/pool/resourceSliceCount");
                slice
            }],
            node: Some(node(NODE1, REGION1)),
            error: Some(
                "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated",
            ),
            ..Case::default()
        },
        Case {
            name: "all-devices-plus-another",
            claims: vec![
                claim_with_requests(
                    CLAIM0,
                    Value::Null,
                    vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
                ),
                claim_with_requests(
                    CLAIM1,
                    Value::Null,
                    vec![json!({
                        "name": REQ0,
                        "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": CLASS_B},
                    })],
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1, false, vec![])],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "all-devices-plus-another-reversed",
            claims: vec![
                claim_with_requests(
                    CLAIM1,
                    Value::Null,
                    vec![json!({
                        "name": REQ0,
                        "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": CLASS_B},
                    })],
                ),
                claim_with_requests(
                    CLAIM0,
                    Value::Null,
                    vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1, false, vec![])],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "all-devices-many-plus-another",
            claims: vec![
                claim_with_requests(
                    CLAIM0,
                    Value::Null,
                    vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
                ),
                claim_with_requests(
                    CLAIM1,
                    Value::Null,
                    vec![json!({
                        "name": REQ0,
                        "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": CLASS_B},
                    })],
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null),
                        device(DEVICE2, Value::Null, Value::Null),
                    ],
                ),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                        device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                    ],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1, false, vec![])],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "all-devices-many-plus-another-reversed",
            claims: vec![
                claim_with_requests(
                    CLAIM1,
                    Value::Null,
                    vec![json!({
                        "name": REQ0,
                        "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": CLASS_B},
                    })],
                ),
                claim_with_requests(
                    CLAIM0,
                    Value::Null,
                    vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null),
                        device(DEVICE2, Value::Null, Value::Null),
                    ],
                ),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1, false, vec![])],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                        device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                    ],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "all-devices-no-solution",
            claims: vec![
                claim_with_requests(
                    CLAIM1,
                    Value::Null,
                    vec![json!({
                        "name": REQ0,
                        "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": CLASS_A},
                    })],
                ),
                claim_with_requests(
                    CLAIM0,
                    Value::Null,
                    vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-no-solution-reversed",
            claims: vec![
                claim_with_requests(
                    CLAIM0,
                    Value::Null,
                    vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
                ),
                claim_with_requests(
                    CLAIM1,
                    Value::Null,
                    vec![json!({
                        "name": REQ0,
                        "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": CLASS_A},
                    })],
                ),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-slice-without-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_no_devices(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-no-slices",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-some-allocated",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
            )],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "all-devices-some-allocated-admin-access",
            features: Features {
                admin_access: true,
                ..Default::default()
            },
            claims: {
                let mut c = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                c.set("/spec/devices/requests/0/exactly/adminAccess", true);
                c.set("/spec/devices/requests/0/exactly/allocationMode", "All");
                vec![c]
            },
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, true, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, true, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "all-devices-some-allocating-admin-access",
            features: Features {
                admin_access: true,
                ..Default::default()
            },
            claims: {
                let mut c = claim_with_requests(
                    CLAIM0,
                    Value::Null,
                    vec![request(REQ0, CLASS_A, 1, vec![]), request(REQ1, CLASS_A, 1, vec![])],
                );
                c.set("/spec/devices/requests/0/exactly/adminAccess", true);
                c.set("/spec/devices/requests/1/exactly/adminAccess", true);
                c.set("/spec/devices/requests/1/exactly/allocationMode", "All");
                vec![c]
            },
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "count-devices-some-allocated-admin-access",
            features: Features {
                admin_access: true,
                ..Default::default()
            },
            claims: {
                let mut c = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                c.set("/spec/devices/requests/0/exactly/adminAccess", true);
                c.set("/spec/devices/requests/0/exactly/allocationMode", "ExactCount");
                c.set("/spec/devices/requests/0/exactly/count", 2);
                vec![c]
            },
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, true, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, true, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "separate-claims-share-device-admin-access",
            features: Features {
                admin_access: true,
                ..Default::default()
            },
            claims: {
                let mut c1 = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                c1.set("/spec/devices/requests/0/exactly/adminAccess", true);
                let mut c2 = claim_with_request(CLAIM1, REQ0, CLASS_A, vec![]);
                c2.set("/spec/devices/requests/0/exactly/adminAccess", true);
                vec![c1, c2]
            },
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, true, vec![])],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, true, vec![])],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "admin-access-claims-device-allocating-for-non-admin-access",
            features: Features {
                admin_access: true,
                ..Default::default()
            },
            claims: {
                let mut admin = claim_with_request(CLAIM1, REQ0, CLASS_A, vec![]);
                admin.set("/spec/devices/requests/0/exactly/adminAccess", true);
                vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]), admin]
            },
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, true, vec![])],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "all-devices-slice-without-devices-prioritized-list",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![{
                let mut claim = claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                    REQ0,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 1, vec![]),
                        sub_request(SUB_REQ1, CLASS_B, 1, vec![]),
                    ],
                )]);
                claim.set("/spec/devices/requests/0/firstAvailable/0/allocationMode", "All");
                claim.set("/spec/devices/requests/0/firstAvailable/0/count", 0);
                claim
            }],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_no_devices(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_B,
                    POOL2,
                    DEVICE1,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "all-devices-no-slices-prioritized-list",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![{
                let mut claim = claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                    REQ0,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 1, vec![]),
                        sub_request(SUB_REQ1, CLASS_B, 1, vec![]),
                    ],
                )]);
                claim.set("/spec/devices/requests/0/firstAvailable/0/allocationMode", "All");
                claim.set("/spec/devices/requests/0/firstAvailable/0/count", 0);
                claim
            }],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_B,
                    POOL2,
                    DEVICE1,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "all-devices-some-allocated-prioritized-list",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![{
                let mut claim = claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                    REQ0,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 1, vec![]),
                        sub_request(SUB_REQ1, CLASS_B, 1, vec![]),
                    ],
                )]);
                claim.set("/spec/devices/requests/0/firstAvailable/0/allocationMode", "All");
                claim.set("/spec/devices/requests/0/firstAvailable/0/count", 0);
                claim
            }],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null),
                        device(DEVICE2, Value::Null, Value::Null),
                    ],
                ),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_B,
                    POOL2,
                    DEVICE1,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "network-attached-device",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(
                SLICE1,
                node_label_selector(REGION_KEY, REGION1),
                POOL1,
                DRIVER_A,
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                node_label_selector(REGION_KEY, REGION1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "unsuccessful-allocation-network-attached-device",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(
                SLICE1,
                node_label_selector(REGION_KEY, REGION1),
                POOL1,
                DRIVER_A,
            )],
            node: Some(node(NODE2, REGION2)),
            ..Case::default()
        },
        Case {
            name: "many-network-attached-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 4, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE_SELECTION_ALL, POOL2, DRIVER_A),
                slice_with_one_device(
                    SLICE1,
                    node_label_selector(PLANET_KEY, PLANET_VALUE_EARTH),
                    POOL3,
                    DRIVER_A,
                ),
                slice_with_one_device(SLICE1, local_node_selector(NODE1), POOL4, DRIVER_A),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                json!({
                    "nodeSelectorTerms": [{
                        "matchExpressions": [
                            {"key": REGION_KEY, "operator": "In", "values": [REGION1]},
                            {"key": PLANET_KEY, "operator": "In", "values": [PLANET_VALUE_EARTH]},
                        ],
                        "matchFields": [{"key": FIELD_NAME_KEY, "operator": "In", "values": [NODE1]}],
                    }],
                }),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL3, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL4, DEVICE1, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "local-and-network-attached-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "several-different-drivers",
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]),
                claim_with_request(CLAIM0, REQ0, CLASS_B, vec![]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null),
                        device(DEVICE2, Value::Null, Value::Null),
                    ],
                ),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1, false, vec![])],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "already-allocated-devices",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1), id(DRIVER_A, POOL1, DEVICE2)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "admin-access-disabled",
            features: Features {
                admin_access: false,
                ..Default::default()
            },
            claims: {
                let mut c = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                c.set("/spec/devices/requests/0/exactly/adminAccess", true);
                vec![c]
            },
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some("claim claim-0, request req-0: admin access is requested, but the feature is disabled"),
            ..Case::default()
        },
        Case {
            name: "admin-access-enabled",
            features: Features {
                admin_access: true,
                ..Default::default()
            },
            claims: {
                let mut c = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                c.set("/spec/devices/requests/0/exactly/adminAccess", true);
                vec![c]
            },
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1), id(DRIVER_A, POOL1, DEVICE2)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, true, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "with-constraint",
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([
                    {"matchAttribute": INT_ATTRIBUTE},
                    {"matchAttribute": VERSION_ATTRIBUTE},
                    {"matchAttribute": STRING_ATTRIBUTE},
                    {"matchAttribute": BOOL_ATTRIBUTE},
                ]),
                vec![request(REQ0, CLASS_A, 1, vec![]), request(REQ1, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({
                            "driverVersion": {"version": "1.0.0"},
                            "numa": {"int": 1},
                            "stringAttribute": {"string": "stringAttributeValue"},
                            "boolAttribute": {"bool": true},
                        }),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({
                            "driverVersion": {"version": "1.0.0"},
                            "numa": {"int": 1},
                            "stringAttribute": {"string": "stringAttributeValue"},
                            "boolAttribute": {"bool": true},
                        }),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "with-constraint-non-existent-attribute",
            claims: vec![claim_with_request(
                CLAIM0,
                REQ0,
                CLASS_A,
                vec![json!({"matchAttribute": NON_EXISTENT_ATTRIBUTE})],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-constraint-not-matching-int-attribute",
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": INT_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"numa": {"int": 1}})),
                    device(DEVICE2, Value::Null, json!({"numa": {"int": 2}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-constraint-not-matching-int-attribute-all-devices",
            claims: vec![{
                let mut claim = claim_with_requests(
                    CLAIM0,
                    json!([{"matchAttribute": INT_ATTRIBUTE}]),
                    vec![request(REQ0, CLASS_A, 0, vec![])],
                );
                claim.set("/spec/devices/requests/0/exactly/allocationMode", "All");
                claim
            }],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"numa": {"int": 1}})),
                    device(DEVICE2, Value::Null, json!({"numa": {"int": 2}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            error: Some(
                "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied",
            ),
            ..Case::default()
        },
        Case {
            name: "with-constraint-not-matching-string-attribute",
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"stringAttribute": {"string": "stringAttributeValue"}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"string": "stringAttributeValue2"}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-constraint-not-matching-bool-attribute",
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": BOOL_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"boolAttribute": {"bool": true}})),
                    device(DEVICE2, Value::Null, json!({"boolAttribute": {"bool": false}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-constraint-not-matching-version-attribute",
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": VERSION_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"driverVersion": {"version": "1.0.0"}})),
                    device(DEVICE2, Value::Null, json!({"driverVersion": {"version": "2.0.0"}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "with-constraint-for-request",
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"requests": [REQ0], "matchAttribute": VERSION_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 1, vec![]), request(REQ1, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"driverVersion": {"version": "1.0.0"}})),
                    device(DEVICE2, Value::Null, json!({"driverVersion": {"version": "2.0.0"}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "with-constraint-for-request-retry",
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([
                    {"requests": [REQ0], "matchAttribute": VERSION_ATTRIBUTE},
                    {"matchAttribute": STRING_ATTRIBUTE},
                ]),
                vec![request(REQ0, CLASS_A, 1, vec![]), request(REQ1, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"driverVersion": {"version": "1.0.0"}, "stringAttribute": {"string": "a"}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"driverVersion": {"version": "2.0.0"}, "stringAttribute": {"string": "b"}}),
                    ),
                    device(
                        DEVICE3,
                        Value::Null,
                        json!({"driverVersion": {"version": "3.0.0"}, "stringAttribute": {"string": "b"}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "with-class-device-config",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class_with_config(CLASS_A, DRIVER_A, "classAttribute")],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result_with_configs(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
                json!([merge(
                    json!({"source": "FromClass", "requests": [REQ0]}),
                    device_configuration(DRIVER_A, "classAttribute"),
                ),]),
            )],
            ..Case::default()
        },
        Case {
            name: "with-class-device-config-with-multiple-request-and-configs",
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([]),
                vec![
                    request(REQ0, CLASS_A, 1, vec![]),
                    request(REQ1, CLASS_A, 1, vec![]),
                    request(REQ2, CLASS_B, 1, vec![]),
                ],
            )],
            classes: vec![
                class_with_config(CLASS_A, DRIVER_A, "classAttribute-A"),
                class_with_config(CLASS_B, DRIVER_B, "classAttribute-B"),
            ],
            slices: vec![
                slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2),
                slice_with_one_device(SLICE2, NODE1, POOL1, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result_with_configs(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE0, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ2, DRIVER_B, POOL1, DEVICE1, false, vec![]),
                ],
                json!([
                    merge(
                        json!({"source": "FromClass", "requests": [REQ0, REQ1]}),
                        device_configuration(DRIVER_A, "classAttribute-A"),
                    ),
                    merge(
                        json!({"source": "FromClass", "requests": [REQ2]}),
                        device_configuration(DRIVER_B, "classAttribute-B"),
                    ),
                ]),
            )],
            ..Case::default()
        },
        Case {
            name: "claim-with-device-config",
            claims: vec![claim_with_device_config(
                CLAIM0,
                REQ0,
                CLASS_A,
                DRIVER_A,
                "deviceAttribute",
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result_with_config(
                local_node_selector(NODE1),
                DRIVER_A,
                "FromClaim",
                "deviceAttribute",
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "unknown-selector",
            claims: vec![{
                let mut claim = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                claim.set("/spec/devices/requests/0/exactly/selectors", json!([{}]));
                claim
            }],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some("CEL expression empty (unsupported selector type?)"),
            ..Case::default()
        },
        Case {
            name: "unknown-allocation-mode",
            claims: vec![{
                let mut claim = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                claim.set("/spec/devices/requests/0/exactly/allocationMode", "future-mode");
                claim
            }],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some("unsupported count mode future-mode"),
            ..Case::default()
        },
        Case {
            name: "unknown-constraint",
            claims: vec![{
                let mut claim = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                claim.set("/spec/devices/constraints", json!([{}]));
                claim
            }],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some("empty constraint (unsupported constraint type?)"),
            ..Case::default()
        },
        Case {
            name: "invalid-CEL-one-device",
            claims: vec![{
                let mut claim = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                claim.set("/spec/devices/requests/0/exactly/selectors", json!([cel("noSuchVar")]));
                claim
            }],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some("undeclared reference"),
            ..Case::default()
        },
        Case {
            name: "invalid-CEL-one-device-class",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![{
                let mut c = class(CLASS_A, DRIVER_A);
                c.set("/spec/selectors/0/cel/expression", "noSuchVar");
                c
            }],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some("undeclared reference"),
            ..Case::default()
        },
        Case {
            name: "invalid-CEL-all-devices",
            claims: vec![{
                let mut claim = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                claim.set("/spec/devices/requests/0/exactly/selectors", json!([cel("noSuchVar")]));
                claim.set("/spec/devices/requests/0/exactly/allocationMode", "All");
                claim
            }],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some("undeclared reference"),
            ..Case::default()
        },
        Case {
            name: "too-many-devices-single-request",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 500, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            error: Some("exceeds the claim limit"),
            ..Case::default()
        },
        Case {
            name: "many-devices-okay",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 32, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            ..Case::default()
        },
        Case {
            name: "too-many-devices-total",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 32, vec![]), request(REQ1, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 32 + 1)],
            node: Some(node(NODE1, REGION1)),
            error: Some("exceeds the claim limit"),
            ..Case::default()
        },
        Case {
            name: "all-devices-invalid-CEL",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 500, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            error: Some("exceeds the claim limit"),
            ..Case::default()
        },
        Case {
            name: "prioritized-list-first-unavailable",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_B, 1, vec![]),
                    sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-non-available",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_B, 2, vec![]),
                    sub_request(SUB_REQ1, CLASS_A, 2, vec![]),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "prioritized-list-device-config",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0)
                    .with_requests(vec![request_with_prioritized_list(
                        REQ0,
                        vec![
                            sub_request(SUB_REQ0, CLASS_A, 1, vec![]),
                            sub_request(SUB_REQ1, CLASS_B, 2, vec![]),
                        ],
                    )])
                    .with_configs(vec![
                        device_claim_config(vec![REQ0_SUB_REQ0], device_configuration(DRIVER_A, "foo")),
                        device_claim_config(vec![REQ0_SUB_REQ1], device_configuration(DRIVER_B, "bar")),
                    ]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_B,
                vec![
                    device(DEVICE1, Value::Null, json!({})),
                    device(DEVICE2, Value::Null, json!({})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result_with_configs(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE2, false, vec![]),
                ],
                json!([merge(
                    json!({"source": "FromClaim", "requests": [REQ0_SUB_REQ1]}),
                    device_configuration(DRIVER_B, "bar"),
                ),]),
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-class-config",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 2, vec![]),
                    sub_request(SUB_REQ1, CLASS_B, 2, vec![]),
                ],
            )])],
            classes: vec![
                class_with_config(CLASS_A, DRIVER_A, "foo"),
                class_with_config(CLASS_B, DRIVER_B, "bar"),
            ],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_B,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null),
                        device(DEVICE2, Value::Null, Value::Null),
                    ],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    POOL2,
                    DRIVER_A,
                    vec![device(DEVICE3, Value::Null, Value::Null)],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result_with_configs(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_B, POOL1, DEVICE2, false, vec![]),
                ],
                json!([merge(
                    json!({"source": "FromClass", "requests": [REQ0_SUB_REQ1]}),
                    device_configuration(DRIVER_B, "bar"),
                ),]),
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-subrequests-with-expressions",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                device_request(REQ0, CLASS_A, 1).with_selectors(vec![cel(
                    r#"device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0"#,
                )]),
                request_with_prioritized_list(
                    REQ1,
                    vec![
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0"#,
                            )],
                        ),
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            2,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0"#,
                            )],
                        ),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, json!({"memory": "2Gi"}), Value::Null),
                    device(DEVICE2, json!({"memory": "2Gi"}), Value::Null),
                    device(DEVICE3, json!({"memory": "1Gi"}), Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                    device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-subrequests-with-constraints-ref-parent-request",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0)
                    .with_constraints(vec![
                        json!({"requests": [REQ0, REQ1], "matchAttribute": VERSION_ATTRIBUTE}),
                    ])
                    .with_requests(vec![
                        device_request(REQ0, CLASS_A, 1).with_selectors(vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0"#,
                        )]),
                        request_with_prioritized_list(
                            REQ1,
                            vec![
                                sub_request(
                                    SUB_REQ0,
                                    CLASS_A,
                                    1,
                                    vec![cel(
                                        r#"device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0"#,
                                    )],
                                ),
                                sub_request(
                                    SUB_REQ1,
                                    CLASS_A,
                                    1,
                                    vec![cel(
                                        r#"device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0"#,
                                    )],
                                ),
                            ],
                        ),
                    ]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![device(
                        DEVICE1,
                        json!({"memory": "8Gi"}),
                        json!({"driverVersion": {"version": "1.0.0"}}),
                    )],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    POOL2,
                    DRIVER_A,
                    vec![
                        device(
                            DEVICE2,
                            json!({"memory": "2Gi"}),
                            json!({"driverVersion": {"version": "2.0.0"}}),
                        ),
                        device(
                            DEVICE3,
                            json!({"memory": "1Gi"}),
                            json!({"driverVersion": {"version": "1.0.0"}}),
                        ),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL2, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-subrequests-with-constraints-ref-sub-request",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0)
                    .with_constraints(vec![
                        json!({"requests": [REQ0, REQ1_SUB_REQ0], "matchAttribute": VERSION_ATTRIBUTE}),
                    ])
                    .with_requests(vec![
                        device_request(REQ0, CLASS_A, 1).with_selectors(vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0"#,
                        )]),
                        request_with_prioritized_list(
                            REQ1,
                            vec![
                                sub_request(
                                    SUB_REQ0,
                                    CLASS_A,
                                    1,
                                    vec![cel(
                                        r#"device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0"#,
                                    )],
                                ),
                                sub_request(
                                    SUB_REQ1,
                                    CLASS_A,
                                    1,
                                    vec![cel(
                                        r#"device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0"#,
                                    )],
                                ),
                            ],
                        ),
                    ]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![device(
                        DEVICE1,
                        json!({"memory": "8Gi"}),
                        json!({"driverVersion": {"version": "1.0.0"}}),
                    )],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    POOL2,
                    DRIVER_A,
                    vec![device(
                        DEVICE2,
                        json!({"memory": "2Gi"}),
                        json!({"driverVersion": {"version": "2.0.0"}}),
                    )],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL2, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-subrequests-with-allocation-mode-all",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![{
                let mut claim = claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                    REQ0,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 1, vec![]),
                        sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                    ],
                )]);
                claim.set("/spec/devices/requests/0/firstAvailable/0/allocationMode", "All");
                claim.set("/spec/devices/requests/0/firstAvailable/0/count", 0);
                claim
            }],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null),
                ],
            )],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE2,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-allocation-mode-all-multiple-requests",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                device_request(REQ0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ1,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 0, vec![]).with_allocation_mode("All"),
                        sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-disabled",
            features: Features {
                prioritized_list: false,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![sub_request(SUB_REQ0, CLASS_A, 1, vec![])],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some(
                "claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled",
            ),
            ..Case::default()
        },
        Case {
            name: "prioritized-list-multi-request",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                device_request(REQ1, CLASS_A, 1).with_selectors(vec![cel(
                    r#"device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0"#,
                )]),
                request_with_prioritized_list(
                    REQ0,
                    vec![
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0"#,
                            )],
                        ),
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0"#,
                            )],
                        ),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![device(DEVICE1, json!({"memory": "8Gi"}), json!({}))],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    POOL2,
                    DRIVER_A,
                    vec![device(DEVICE2, json!({"memory": "4Gi"}), json!({}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL2, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-with-backtracking",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                request_with_prioritized_list(
                    REQ0,
                    vec![
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0"#,
                            )],
                        ),
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0"#,
                            )],
                        ),
                    ],
                ),
                device_request(REQ1, CLASS_A, 1).with_selectors(vec![cel(
                    r#"device.capacity["driver-a"].memory.compareTo(quantity("8Gi")) >= 0"#,
                )]),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![device(DEVICE1, json!({"memory": "8Gi"}), json!({}))],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    POOL2,
                    DRIVER_A,
                    vec![device(DEVICE2, json!({"memory": "4Gi"}), json!({}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL2, DEVICE2, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-too-many-in-first-subrequest",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_B, 500, vec![]),
                    sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-single-device",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-prioritized-list",
            features: Features {
                prioritized_list: true,
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                device_request(REQ0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ1,
                    vec![
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("6Gi")) >= 0"#,
                            )],
                        ),
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0"#,
                            )],
                        ),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "6Gi"})),
                        ]),
                        device(DEVICE3, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-multiple-devices",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![]), request(REQ1, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "6Gi"})),
                        ]),
                        device(DEVICE3, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-multiple-capacity-pools",
            features: Features {
                prioritized_list: true,
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                device_request(REQ0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ1,
                    vec![
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("6Gi")) >= 0"#,
                            )],
                        ),
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0"#,
                            )],
                        ),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                            device_counter_consumption(COUNTER_SET2, json!({"cpus": "4"})),
                        ]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "6Gi"})),
                            device_counter_consumption(COUNTER_SET2, json!({"cpus": "6"})),
                        ]),
                        device(DEVICE3, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                            device_counter_consumption(COUNTER_SET2, json!({"cpus": "4"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        counter_set(COUNTER_SET1, json!({"memory": "18Gi"})),
                        counter_set(COUNTER_SET2, json!({"cpus": "8"})),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-multiple-counters",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![]), request(REQ1, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi", "cpus": "6"})),
                            device_counter_consumption(COUNTER_SET2, json!({"cpus": "4", "memory": "2Gi"})),
                        ]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "6Gi", "cpus": "4"})),
                            device_counter_consumption(COUNTER_SET2, json!({"cpus": "6", "memory": "6Gi"})),
                        ]),
                        device(DEVICE3, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi", "cpus": "4"})),
                            device_counter_consumption(COUNTER_SET2, json!({"cpus": "4", "memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        counter_set(COUNTER_SET1, json!({"cpus": "8", "memory": "18Gi"})),
                        counter_set(COUNTER_SET2, json!({"cpus": "12", "memory": "18Gi"})),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-multiple-pools",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![]), request(REQ1, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"cpus": "6", "memory": "4Gi"})),
                        ]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"cpus": "4", "memory": "6Gi"})),
                        ]),
                        device(DEVICE3, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"cpus": "4", "memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"cpus": "8", "memory": "18Gi"}))],
                ),
                slice_with_devices(
                    SLICE3,
                    NODE1,
                    resource_pool(POOL2, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"cpus": "6", "memory": "4Gi"})),
                        ]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"cpus": "1", "memory": "7Gi"})),
                        ]),
                        device(DEVICE3, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"cpus": "1", "memory": "7Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE4,
                    NODE1,
                    resource_pool(POOL2, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"cpus": "8", "memory": "18Gi"}))],
                ),
            ],
            allocated: vec![
                id(DRIVER_A, POOL1, DEVICE2),
                id(DRIVER_A, POOL1, DEVICE3),
                id(DRIVER_A, POOL2, DEVICE1),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE2, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL2, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-unused-counters-in-counter-set",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "5Gi"})),
                        ]),
                        device(DEVICE2, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                        device(DEVICE3, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi", "unused": "1Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-no-capacity-available",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "16Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "18Gi"}))],
                ),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE2)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-overallocated-capacity-pool",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "20Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "18Gi"}))],
                ),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE2)],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-disabled-device-consumes-counters",
            features: Features {
                partitionable_devices: false,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "18Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-disabled-other-device-do-not-consume-counters",
            features: Features {
                partitionable_devices: false,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                        device(DEVICE2, Value::Null, Value::Null),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "18Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-disabled-per-device-node-selection",
            features: Features {
                partitionable_devices: false,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE_SELECTION_PER_DEVICE,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE2, Value::Null, Value::Null).with_node_selection(NODE1)],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-per-device-node-selection-nodename",
            features: Features {
                partitionable_devices: true,
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("6Gi")) >= 0"#,
                        )],
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0"#,
                        )],
                    ),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE_SELECTION_PER_DEVICE,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_node_selection(NODE1),
                        device(DEVICE2, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "6Gi"}),
                            )])
                            .with_node_selection(NODE2),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE_SELECTION_PER_DEVICE,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "18Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-per-device-node-selection-node-selector",
            features: Features {
                partitionable_devices: true,
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE_SELECTION_PER_DEVICE,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_node_selection(node_label_selector(REGION_KEY, REGION1)),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE_SELECTION_PER_DEVICE,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "18Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                json!({
                    "nodeSelectorTerms": [{
                        "matchExpressions": [{"key": REGION_KEY, "operator": "In", "values": [REGION1]}],
                    }],
                }),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-per-device-node-selection-node-selector-multiple-devices",
            features: Features {
                partitionable_devices: true,
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 3, vec![]), request(REQ1, CLASS_B, 3, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE_SELECTION_PER_DEVICE,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_node_selection(node_label_selector(REGION_KEY, REGION1)),
                        device(DEVICE2, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_node_selection(NODE1),
                        device(DEVICE3, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_node_selection(NODE_SELECTION_ALL),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE_SELECTION_PER_DEVICE,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "18Gi"}))],
                ),
                slice_with_devices(
                    SLICE3,
                    NODE1,
                    resource_pool(POOL2, 2),
                    DRIVER_B,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET2, json!({"memory": "4Gi"})),
                        ]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET2, json!({"memory": "4Gi"})),
                        ]),
                        device(DEVICE3, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET2, json!({"memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE4,
                    NODE1,
                    resource_pool(POOL2, 2),
                    DRIVER_B,
                    vec![counter_set(COUNTER_SET2, json!({"memory": "12Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                json!({
                    "nodeSelectorTerms": [{
                        "matchFields": [{"key": FIELD_NAME_KEY, "operator": "In", "values": [NODE1]}],
                    }],
                }),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_B, POOL2, DEVICE1, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_B, POOL2, DEVICE2, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_B, POOL2, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "tainted-two-devices",
            features: Features {
                device_taints: true,
                ..Default::default()
            },
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null).with_taints(vec![taint_no_schedule()]),
                    device(DEVICE2, Value::Null, Value::Null).with_taints(vec![taint_no_execute()]),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "tainted-one-device-two-taints",
            features: Features {
                device_taints: true,
                ..Default::default()
            },
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_taints(vec![taint_no_schedule(), taint_no_execute()]),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "tainted-two-devices-tolerated",
            features: Features {
                device_taints: true,
                ..Default::default()
            },
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]).with_tolerations(vec![toleration_no_execute()]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null).with_taints(vec![taint_no_schedule()]),
                    device(DEVICE2, Value::Null, Value::Null).with_taints(vec![taint_no_execute()]),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0,
                    DRIVER_A,
                    POOL1,
                    DEVICE2,
                    false,
                    vec![toleration_no_execute()],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "tainted-two-devices-prioritized-list-tolerated",
            features: Features {
                device_taints: true,
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 1, vec![]),
                    sub_request(SUB_REQ1, CLASS_A, 1, vec![toleration_no_execute()]),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null).with_taints(vec![taint_no_schedule()]),
                    device(DEVICE2, Value::Null, Value::Null).with_taints(vec![taint_no_execute()]),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE2,
                    false,
                    vec![toleration_no_execute()],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "tainted-no-effect",
            features: Features {
                device_taints: true,
                ..Default::default()
            },
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null).with_taints(vec![taint_none()])],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "tainted-one-device-two-taints-both-tolerated",
            features: Features {
                device_taints: true,
                ..Default::default()
            },
            claims: vec![
                claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])
                    .with_tolerations(vec![toleration_no_schedule(), toleration_no_execute()]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_taints(vec![taint_no_schedule(), taint_no_execute()]),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    false,
                    vec![toleration_no_schedule(), toleration_no_execute()],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "tainted-disabled",
            features: Features {
                device_taints: false,
                ..Default::default()
            },
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_taints(vec![taint_no_schedule(), taint_no_execute()]),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "tainted-prioritized-list",
            features: Features {
                device_taints: true,
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_B, 1, vec![]),
                    sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null).with_taints(vec![taint_no_schedule()])],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "tainted-prioritized-list-disabled",
            features: Features {
                device_taints: false,
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_B, 1, vec![]),
                    sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null).with_taints(vec![taint_no_schedule()])],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "tainted-admin-access",
            features: Features {
                device_taints: true,
                admin_access: true,
                ..Default::default()
            },
            claims: {
                let mut c = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                c.set("/spec/devices/requests/0/exactly/adminAccess", true);
                vec![c]
            },
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1), id(DRIVER_A, POOL1, DEVICE2)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null).with_taints(vec![taint_no_schedule()])],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "tainted-admin-access-disabled",
            features: Features {
                device_taints: false,
                admin_access: true,
                ..Default::default()
            },
            claims: {
                let mut c = claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]);
                c.set("/spec/devices/requests/0/exactly/adminAccess", true);
                vec![c]
            },
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1), id(DRIVER_A, POOL1, DEVICE2)],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null).with_taints(vec![taint_no_schedule()])],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, true, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "tainted-all-devices-single",
            features: Features {
                device_taints: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null).with_taints(vec![taint_no_schedule()])],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "tainted-all-devices-single-disabled",
            features: Features {
                device_taints: false,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null).with_taints(vec![taint_no_schedule()])],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-allocation-mode-all",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 0, vec![]).with_allocation_mode("All"),
                    sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null),
                ],
            )],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE2)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-allocation-mode-all-with-selectors",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                                sub_request(
                                    SUB_REQ0,
                                    CLASS_A,
                                    0,
                                    vec![cel(r#"device.attributes["driver-a"].generation == "v6""#)],
                                ).with_allocation_mode("All"),
                                sub_request(
                                    SUB_REQ1,
                                    CLASS_A,
                                    0,
                                    vec![cel(r#"device.attributes["driver-a"].generation == "v5""#)],
                                ).with_allocation_mode("All"),
                            ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, json!({"generation": {"string": "v5"}}))],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-allocation-mode-all-with-selectors-multiple-pools",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                                sub_request(
                                    SUB_REQ0,
                                    CLASS_A,
                                    0,
                                    vec![cel(r#"device.attributes["driver-a"].generation == "v6""#)],
                                ).with_allocation_mode("All"),
                                sub_request(
                                    SUB_REQ1,
                                    CLASS_A,
                                    0,
                                    vec![cel(r#"device.attributes["driver-a"].generation == "v5""#)],
                                ).with_allocation_mode("All"),
                            ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, json!({"generation": {"string": "v5"}}))],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    POOL2,
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, json!({"generation": {"string": "v5"}}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL2, DEVICE1, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                                sub_request(
                                    SUB_REQ0,
                                    CLASS_A,
                                    0,
                                    vec![cel(r#"device.attributes["driver-a"].generation == "v6""#)],
                                ).with_allocation_mode("All"),
                                sub_request(
                                    SUB_REQ1,
                                    CLASS_A,
                                    0,
                                    vec![cel(r#"device.attributes["driver-a"].generation == "v5""#)],
                                ).with_allocation_mode("All"),
                            ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, json!({"generation": {"string": "v5"}}))],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE2,
                    POOL2,
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, json!({"generation": {"string": "v5"}})),
                        device(DEVICE2, Value::Null, json!({"generation": {"string": "v6"}})),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                                sub_request(
                                    SUB_REQ0,
                                    CLASS_A,
                                    0,
                                    vec![cel(r#"device.attributes["driver-a"].generation == "v6""#)],
                                ).with_allocation_mode("All"),
                                sub_request(
                                    SUB_REQ1,
                                    CLASS_A,
                                    0,
                                    vec![cel(r#"device.attributes["driver-a"].generation == "v5""#)],
                                ).with_allocation_mode("All"),
                            ],
            )])],
            classes: vec![json!({
                "metadata": {"name": CLASS_A},
                "spec": {
                    "selectors": [cel(r#"device.driver == "driver-a" && device.attributes["driver-a"].selected"#)],
                },
            })],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"generation": {"string": "v6"}, "selected": {"bool": false}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"generation": {"string": "v5"}, "selected": {"bool": false}}),
                    ),
                    device(
                        DEVICE3,
                        Value::Null,
                        json!({"generation": {"string": "v5"}, "selected": {"bool": true}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE3,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "max-number-devices",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 32, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 32)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                multiple_device_allocation_results(REQ0, DRIVER_A, POOL1, 32, 0),
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-attribute-selector",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![
                    request(REQ0, CLASS_A, 2, vec![]),
                    request(REQ1, CLASS_A, 1, vec![cel(r#"device.attributes["driver-a"].special"#)]),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, json!({"special": {"bool": true}}))
                            .with_device_counter_consumption(vec![
                                device_counter_consumption(COUNTER_SET1, json!({"cpu1": "1"})),
                                device_counter_consumption(COUNTER_SET2, json!({"mem": "10Gi"})),
                            ]),
                        device(DEVICE2, Value::Null, json!({"special": {"bool": false}}))
                            .with_device_counter_consumption(vec![
                                device_counter_consumption(COUNTER_SET1, json!({"cpu2": "1"})),
                                device_counter_consumption(COUNTER_SET2, json!({"mem": "10Gi"})),
                            ]),
                        device(DEVICE3, Value::Null, json!({"special": {"bool": false}}))
                            .with_device_counter_consumption(vec![
                                device_counter_consumption(COUNTER_SET1, json!({"cpu3": "1"})),
                                device_counter_consumption(COUNTER_SET2, json!({"mem": "10Gi"})),
                            ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        counter_set(COUNTER_SET1, json!({"cpu1": "1", "cpu2": "1", "cpu3": "1"})),
                        counter_set(COUNTER_SET2, json!({"mem": "30Gi"})),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "prioritized-list-max-allocation-limit-request",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                request_with_prioritized_list(
                    REQ0,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 32, vec![]),
                        sub_request(SUB_REQ1, CLASS_A, 32 / 2, vec![]),
                    ],
                ),
                request_with_prioritized_list(
                    REQ1,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 32, vec![]),
                        sub_request(SUB_REQ1, CLASS_A, 32 / 2, vec![]),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 32 * 2)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                [
                    multiple_device_allocation_results(REQ0_SUB_REQ1, DRIVER_A, POOL1, 32 / 2, 0),
                    multiple_device_allocation_results(REQ1_SUB_REQ1, DRIVER_A, POOL1, 32 / 2, 32 / 2),
                ]
                .concat(),
            )],
            steps: Some(75),
            ..Case::default()
        },
        Case {
            name: "prioritized-list-max-allocation-allocation-mode-all",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                request_with_prioritized_list(
                    REQ0,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 0, vec![]).with_allocation_mode("All"),
                        sub_request(SUB_REQ1, CLASS_A, 2, vec![]),
                    ],
                ),
                device_request(REQ1, CLASS_B, 2),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)],
            slices: vec![
                slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 32 - 1),
                slice_with_multiple_devices(SLICE2, NODE1, POOL2, DRIVER_B, 2),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, "device-0", false, vec![]),
                    device_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, "device-1", false, vec![]),
                    device_allocation_result(REQ1, DRIVER_B, POOL2, "device-0", false, vec![]),
                    device_allocation_result(REQ1, DRIVER_B, POOL2, "device-1", false, vec![]),
                ],
            )],
            steps: Some(42),
            ..Case::default()
        },
        Case {
            name: "device-binding-conditions",
            features: Features {
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_binding_conditions(vec!["IsPrepare"], vec!["BindingFailed"]),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![exact(json!({
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE1,
                            vec!["IsPrepare"],
                            vec!["BindingFailed"],
                            vec![],
                        ),
                    ],
                },
                "nodeSelector": local_node_selector(NODE1),
            }))],
            ..Case::default()
        },
        Case {
            name: "binding-conditions-multiple-devices",
            features: Features {
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 2, vec![]), request(REQ1, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_binding_conditions(vec!["IsPrepare"], vec!["BindingFailed"]),
                    device(DEVICE2, Value::Null, Value::Null)
                        .with_binding_conditions(vec!["IsPrepare2"], vec!["BindingFailed2"]),
                    device(DEVICE3, Value::Null, Value::Null)
                        .with_binding_conditions(vec!["IsPrepare3"], vec!["BindingFailed3"]),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![exact(json!({
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE1,
                            vec!["IsPrepare"],
                            vec!["BindingFailed"],
                            vec![],
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE2,
                            vec!["IsPrepare2"],
                            vec!["BindingFailed2"],
                            vec![],
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ1,
                            DRIVER_A,
                            POOL1,
                            DEVICE3,
                            vec!["IsPrepare3"],
                            vec!["BindingFailed3"],
                            vec![],
                        ),
                    ],
                },
                "nodeSelector": local_node_selector(NODE1),
            }))],
            ..Case::default()
        },
        Case {
            name: "binding-conditions-with-and-without",
            features: Features {
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![]), request(REQ1, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null)
                        .with_binding_conditions(vec!["IsPrepare"], vec!["BindingFailed"]),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![exact(json!({
                "devices": {
                    "results": [
                        device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                        device_request_allocation_result_with_binding_conditions(
                            REQ1,
                            DRIVER_A,
                            POOL1,
                            DEVICE2,
                            vec!["IsPrepare"],
                            vec!["BindingFailed"],
                            vec![],
                        ),
                    ],
                },
                "nodeSelector": local_node_selector(NODE1),
            }))],
            ..Case::default()
        },
        Case {
            name: "binding-conditions-without-feature-gate",
            features: Features {
                device_binding_and_status: false,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_binding_conditions(vec!["IsPrepare"], vec!["BindingFailed"]),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            // Go answers nil, nil; wasmsched says why the device was not allocated.
            error: Some(
                "binding conditions (ResourceSlice slice-1, spec.devices[0].bindingConditions) are not supported by wasmsched",
            ),
            ..Case::default()
        },
        Case {
            name: "node-restriction",
            features: Features {
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                node_label_selector(PLANET_KEY, PLANET_VALUE_EARTH),
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null).with_binds_to_node(true)],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-binding-conditions",
            features: Features {
                partitionable_devices: true,
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_binding_conditions(vec!["IsPrepare"], vec!["BindingFailed"]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![exact(json!({
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE1,
                            vec!["IsPrepare"],
                            vec!["BindingFailed"],
                            vec![],
                        ),
                    ],
                },
                "nodeSelector": local_node_selector(NODE1),
            }))],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-binding-conditions-multiple",
            features: Features {
                partitionable_devices: true,
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_binding_conditions(vec!["IsPrepare"], vec!["BindingFailed"]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_binding_conditions(vec!["IsPrepare2"], vec!["BindingFailed2"]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![exact(json!({
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE1,
                            vec!["IsPrepare"],
                            vec!["BindingFailed"],
                            vec![],
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE2,
                            vec!["IsPrepare2"],
                            vec!["BindingFailed2"],
                            vec![],
                        ),
                    ],
                },
                "nodeSelector": local_node_selector(NODE1),
            }))],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-binding-conditions-some-devices-no-conditions",
            features: Features {
                partitionable_devices: true,
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 3, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "2Gi"}),
                            )])
                            .with_binding_conditions(vec!["IsPrepare"], vec!["BindingFailed"]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "2Gi"})),
                        ]),
                        device(DEVICE3, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_binding_conditions(vec!["IsReady"], vec!["BindingTimeout"]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![exact(json!({
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE1,
                            vec!["IsPrepare"],
                            vec!["BindingFailed"],
                            vec![],
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE2,
                            Value::Null,
                            Value::Null,
                            vec![],
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE3,
                            vec!["IsReady"],
                            vec!["BindingTimeout"],
                            vec![],
                        ),
                    ],
                },
                "nodeSelector": local_node_selector(NODE1),
            }))],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-binding-conditions-multi-slices",
            features: Features {
                partitionable_devices: true,
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE4,
                    NODE1,
                    resource_pool(POOL1, 4),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_binding_conditions(vec!["IsPrepare"], vec!["BindingFailed"]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE3,
                    NODE1,
                    resource_pool(POOL1, 4),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 4),
                    DRIVER_A,
                    vec![
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET2, json!({"memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 4),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET2, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![exact(json!({
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE2,
                            Value::Null,
                            Value::Null,
                            vec![],
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE1,
                            vec!["IsPrepare"],
                            vec!["BindingFailed"],
                            vec![],
                        ),
                    ],
                },
                "nodeSelector": local_node_selector(NODE1),
            }))],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-binding-conditions-and-taints",
            features: Features {
                partitionable_devices: true,
                device_binding_and_status: true,
                device_taints: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_binding_conditions(vec!["IsPrepare"], vec!["BindingFailed"])
                            .with_taints(vec![json!({"key": "key1", "value": "value1", "effect": "NoSchedule"})]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-with-binding-conditions-and-taints-tolerated",
            features: Features {
                partitionable_devices: true,
                device_binding_and_status: true,
                device_taints: true,
                ..Default::default()
            },
            claims: vec![
                claim_with_requests(CLAIM0, Value::Null, vec![request(REQ0, CLASS_A, 2, vec![])])
                    .with_tolerations(vec![toleration_no_schedule_key1()]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_binding_conditions(vec!["IsPrepare"], vec!["BindingFailed"])
                            .with_taints(vec![json!({"key": "key1", "value": "value1", "effect": "NoSchedule"})]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "4Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![exact(json!({
                "devices": {
                    "results": [
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE1,
                            vec!["IsPrepare"],
                            vec!["BindingFailed"],
                            vec![toleration_no_schedule_key1()],
                        ),
                        device_request_allocation_result_with_binding_conditions(
                            REQ0,
                            DRIVER_A,
                            POOL1,
                            DEVICE2,
                            Value::Null,
                            Value::Null,
                            vec![toleration_no_schedule_key1()],
                        ),
                    ],
                },
                "nodeSelector": local_node_selector(NODE1),
            }))],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-disabled-feature",
            features: Features {
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some(
                "claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is disabled",
            ),
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-disabled-feature-with-prioritized-list",
            features: Features {
                prioritized_list: true,
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 1, vec![]).with_capacity_request(one()),
                    sub_request(SUB_REQ1, CLASS_A, 1, vec![]).with_capacity_request(one()),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            node: Some(node(NODE1, REGION1)),
            error: Some(
                "claim claim-0, subrequest subReq-0: has capacity requests, but the DRAConsumableCapacity feature is disabled",
            ),
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-missing-capacity-request",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, json!({CAPACITY1: one()}), Value::Null).with_allow_multiple_allocations()],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![all_device_request(REQ0, CLASS_A).with_capacity_request(one())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, json!({CAPACITY1: one()}), Value::Null).with_allow_multiple_allocations()],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1)]),
                claim(CLAIM1).with_requests(vec![device_request(REQ0, CLASS_A, 1)]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null).with_allow_multiple_allocations()],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, Value::Null),
                    ],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, Value::Null),
                    ],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1)]),
                claim(CLAIM1).with_requests(vec![device_request(REQ0, CLASS_A, 1)]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, json!({CAPACITY0: one()}), Value::Null).with_allow_multiple_allocations(),
                    device(DEVICE2, json!({CAPACITY0: one()}), Value::Null).with_allow_multiple_allocations(),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one()})),
                    ],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one()})),
                    ],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1)]),
                claim(CLAIM1).with_requests(vec![device_request(REQ0, CLASS_A, 1)]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, json!({CAPACITY0: two()}), Value::Null).with_allow_multiple_allocations()],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
                claim(CLAIM1).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, json!({CAPACITY0: two()}), Value::Null).with_allow_multiple_allocations()],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one()})),
                    ],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one()})),
                    ],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim_with_requests(CLAIM0, Value::Null, vec![request(REQ0, CLASS_A, 1, vec![])]),
                claim_with_requests(CLAIM1, Value::Null, vec![request(REQ0, CLASS_A, 1, vec![])]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: four()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                    ],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                    ],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-zero-request-policy",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim_with_requests(CLAIM0, Value::Null, vec![request(REQ0, CLASS_A, 1, vec![])]),
                claim_with_requests(CLAIM1, Value::Null, vec![request(REQ0, CLASS_A, 1, vec![])]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_valid_values(zero(), json!({CAPACITY0: one()}), Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: zero()})),
                    ],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: zero()})),
                    ],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-violates-zero-request-policy",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_valid_values(zero(), json!({CAPACITY0: one()}), Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
                claim(CLAIM1).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: four()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                    ],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                    ],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-range-policy-step",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request("3")]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: four()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: four()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-valid-values-policy",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request("2")]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_valid_values(one(), json!({CAPACITY0: four()}), json!([two()])),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request("2")]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_valid_values(
                            one(),
                            json!({CAPACITY0: three()}),
                            json!([three()]),
                        ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: three()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
                claim(CLAIM1).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(two())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: two()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request("6")]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: "10"})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(two())]),
            ],
            allocated_capacity_devices: json!({(id(DRIVER_A, POOL1, DEVICE1).to_string()): {"capacity0": two()}}),
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: four()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(two())]),
            ],
            allocated_capacity_devices: json!({(id(DRIVER_A, POOL1, DEVICE1).to_string()): {"capacity0": two()}}),
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: two()})),
                    device(DEVICE2, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: two()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-with-multi-allocatable-device-backtrack",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0)
                    .with_constraints(vec![json!({"matchAttribute": STRING_ATTRIBUTE})])
                    .with_requests(vec![
                        device_request(REQ0, CLASS_A, 1).with_capacity_request(two()),
                        device_request(REQ1, CLASS_A, 1).with_capacity_request(two()),
                    ]),
                claim(CLAIM1).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(two())]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"string": "stringAttributeValue1"}}),
                    )
                    .with_allow_multiple_allocations()
                    .with_capacity_request_policy_range(json!({CAPACITY0: two()})),
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"stringAttribute": {"string": "stringAttributeValue2"}}),
                    )
                    .with_allow_multiple_allocations()
                    .with_capacity_request_policy_range(json!({CAPACITY0: four()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                        device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                    ],
                ),
                allocation_result(
                    local_node_selector(NODE1),
                    vec![
                        device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2)
                            .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                    ],
                ),
            ],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-subrequest",
            features: Features {
                consumable_capacity: true,
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(SUB_REQ0, CLASS_A, 1, vec![]).with_capacity_request(four()),
                    sub_request(SUB_REQ1, CLASS_A, 1, vec![]).with_capacity_request(two()),
                    sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                ],
            )])],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: two()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0_SUB_REQ1, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(two())]),
            ],
            allocated_capacity_devices: json!({(id(DRIVER_A, POOL1, DEVICE1).to_string()): {"capacity0": two()}}),
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: two()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![all_device_request(REQ0, CLASS_A).with_capacity_request(two())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, json!({CAPACITY0: two()}), Value::Null).with_allow_multiple_allocations(),
                    device(DEVICE2, Value::Null, Value::Null).with_allow_multiple_allocations(),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![all_device_request(REQ0, CLASS_A).with_capacity_request(two())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, json!({CAPACITY0: two()}), Value::Null).with_allow_multiple_allocations(),
                    device(DEVICE2, json!({CAPACITY0: one()}), Value::Null).with_allow_multiple_allocations(),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                device_request(REQ0, CLASS_A, 1).with_capacity_request(one()),
                all_device_request(REQ1, CLASS_A).with_capacity_request(one()),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, json!({CAPACITY0: two()}), Value::Null).with_allow_multiple_allocations(),
                    device(DEVICE2, json!({CAPACITY0: one()}), Value::Null).with_allow_multiple_allocations(),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one()})),
                    device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one()})),
                    device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            allocated_capacity_devices: json!({(id(DRIVER_A, POOL1, DEVICE1).to_string()): {"capacity0": one()}}),
            claims: vec![
                claim(CLAIM0).with_requests(vec![all_device_request(REQ0, CLASS_A).with_capacity_request(one())]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, json!({CAPACITY0: two()}), Value::Null).with_allow_multiple_allocations(),
                    device(DEVICE2, json!({CAPACITY0: one()}), Value::Null).with_allow_multiple_allocations(),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one()})),
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                device_request(REQ0, CLASS_A, 1).with_capacity_request(one()),
                all_device_request(REQ1, CLASS_A).with_capacity_request(one()),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, json!({CAPACITY0: one()}), Value::Null).with_allow_multiple_allocations(),
                    device(DEVICE2, json!({CAPACITY0: one()}), Value::Null).with_allow_multiple_allocations(),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            allocated_capacity_devices: json!({(id(DRIVER_A, POOL1, DEVICE1).to_string()): {"capacity0": one()}}),
            claims: vec![
                claim(CLAIM0).with_requests(vec![all_device_request(REQ0, CLASS_A).with_capacity_request(one())]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, json!({CAPACITY0: one()}), Value::Null).with_allow_multiple_allocations(),
                    device(DEVICE2, json!({CAPACITY0: one()}), Value::Null).with_allow_multiple_allocations(),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-dedicated-device-with-consumable-capacity-request",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, false)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, json!({CAPACITY0: one()}), Value::Null)],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
                claim(CLAIM1).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, false)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_capacity_request_policy_range(json!({CAPACITY0: two()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, false)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, json!({CAPACITY0: one()}), Value::Null).with_allow_multiple_allocations()],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            allocated: vec![id(DRIVER_A, POOL1, DEVICE1)],
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: two()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]),
            ],
            allocated_capacity_devices: json!({(id(DRIVER_A, POOL1, DEVICE1).to_string()): {"capacity0": one()}}),
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null)
                        .with_capacity_request_policy_range(json!({CAPACITY0: two()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "allow-multiple-allocations-with-partitionable-device",
            features: Features {
                prioritized_list: true,
                partitionable_devices: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                device_request(REQ0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ1,
                    vec![
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("6Gi")) >= 0"#,
                            )],
                        ),
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            1,
                            vec![cel(
                                r#"device.capacity["driver-a"].memory.compareTo(quantity("4Gi")) >= 0"#,
                            )],
                        ),
                    ],
                ),
            ])],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_allow_multiple_allocations(),
                        device(DEVICE2, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "6Gi"}),
                            )])
                            .with_allow_multiple_allocations(),
                        device(DEVICE3, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({"memory": "4Gi"}),
                            )])
                            .with_allow_multiple_allocations(),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({"memory": "4Gi"})),
                    device_request_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({"memory": "4Gi"})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "allow-multiple-allocations-with-shared-device-counter-cross-cycle",
            features: Features {
                partitionable_devices: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                        device_request(REQ0, CLASS_A, 1)
                            .with_capacity_request(one())
                            .with_selectors(vec![cel(r#"device.attributes["driver-a"].mode == "b""#)]),
                    ])],
            allocated_shared_device_ids: json!([format!("{}/{}", id(DRIVER_A, POOL1, DEVICE1), FIXED_SHARE_ID)]),
            allocated_capacity_devices: json!({(id(DRIVER_A, POOL1, DEVICE1).to_string()): {"capacity0": one()}}),
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, json!({"mode": {"string": "a"}}))
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({CAPACITY0: one()}),
                            )])
                            .with_allow_multiple_allocations(),
                        device(DEVICE2, FROM_COUNTERS, json!({"mode": {"string": "b"}}))
                            .with_device_counter_consumption(vec![device_counter_consumption(
                                COUNTER_SET1,
                                json!({CAPACITY0: one()}),
                            )])
                            .with_allow_multiple_allocations(),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({CAPACITY0: one()}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "consumable-capacity-with-partitionable-device-multiple-capacity-pools",
            features: Features {
                prioritized_list: true,
                partitionable_devices: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                device_request(REQ0, CLASS_A, 1).with_capacity_request(one()),
                device_request(REQ2, CLASS_A, 1).with_capacity_request(two()),
                request_with_prioritized_list(
                    REQ1,
                    vec![
                                sub_request(
                                    SUB_REQ0,
                                    CLASS_A,
                                    1,
                                    vec![
                                        cel(
                                            r#"device.capacity["driver-a"]["capacity-0"].compareTo(quantity("4")) >= 0"#
                                        ),
                                    ],
                                ).with_capacity_request(one()),
                                sub_request(
                                    SUB_REQ1,
                                    CLASS_A,
                                    1,
                                    vec![
                                        cel(
                                            r#"device.capacity["driver-a"]["capacity-0"].compareTo(quantity("2")) >= 0"#
                                        ),
                                    ],
                                ).with_capacity_request(one()),
                            ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![
                                device_counter_consumption(COUNTER_SET1, json!({CAPACITY0: two()})),
                                device_counter_consumption(COUNTER_SET2, json!({CAPACITY1: four()})),
                            ])
                            .with_allow_multiple_allocations()
                            .with_capacity_request_policy_range(json!({CAPACITY1: four()})),
                        device(DEVICE2, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![
                                device_counter_consumption(COUNTER_SET1, json!({CAPACITY0: four()})),
                                device_counter_consumption(COUNTER_SET2, json!({CAPACITY1: four()})),
                            ])
                            .with_allow_multiple_allocations()
                            .with_capacity_request_policy_range(json!({CAPACITY1: four()})),
                        device(DEVICE3, FROM_COUNTERS, Value::Null)
                            .with_device_counter_consumption(vec![
                                device_counter_consumption(COUNTER_SET1, json!({CAPACITY0: two()})),
                                device_counter_consumption(COUNTER_SET2, json!({CAPACITY1: four()})),
                            ])
                            .with_allow_multiple_allocations()
                            .with_capacity_request_policy_range(json!({CAPACITY1: four()})),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        counter_set(COUNTER_SET1, json!({CAPACITY0: four()})),
                        counter_set(COUNTER_SET2, json!({CAPACITY1: "8"})),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one(), CAPACITY1: two()})),
                    device_request_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE3)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two(), CAPACITY1: two()})),
                    device_request_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: one(), CAPACITY1: two()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "with-distinct-constraints",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0)
                    .with_constraints(vec![
                        json!({"distinctAttribute": BOOL_ATTRIBUTE, "requests": [REQ0, REQ1]}),
                        json!({"distinctAttribute": VERSION_ATTRIBUTE, "requests": [REQ0, REQ1, REQ2]}),
                        json!({"distinctAttribute": INT_ATTRIBUTE, "requests": [REQ0, REQ1, REQ2, REQ3]}),
                    ])
                    .with_requests(vec![
                        device_request(REQ0, CLASS_A, 1),
                        device_request(REQ1, CLASS_A, 1),
                        device_request(REQ2, CLASS_A, 1),
                        device_request(REQ3, CLASS_A, 1),
                    ]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({
                            "driverVersion": {"version": "1.0.0"},
                            "numa": {"int": 0},
                            "boolAttribute": {"bool": true},
                        }),
                    )
                    .with_allow_multiple_allocations(),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({
                            "driverVersion": {"version": "1.0.1"},
                            "numa": {"int": 1},
                            "boolAttribute": {"bool": false},
                        }),
                    )
                    .with_allow_multiple_allocations(),
                    device(
                        DEVICE3,
                        Value::Null,
                        json!({
                            "driverVersion": {"version": "1.0.2"},
                            "numa": {"int": 2},
                            "boolAttribute": {"bool": true},
                        }),
                    )
                    .with_allow_multiple_allocations(),
                    device(
                        DEVICE4,
                        Value::Null,
                        json!({
                            "driverVersion": {"version": "1.0.0"},
                            "numa": {"int": 3},
                            "boolAttribute": {"bool": true},
                        }),
                    )
                    .with_allow_multiple_allocations(),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, Value::Null),
                    device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2)
                        .with_consumed_capacity(FIXED_SHARE_ID, Value::Null),
                    device_request_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE3)
                        .with_consumed_capacity(FIXED_SHARE_ID, Value::Null),
                    device_request_allocation_result(REQ3, DRIVER_A, POOL1, DEVICE4)
                        .with_consumed_capacity(FIXED_SHARE_ID, Value::Null),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "with-distinct-constraints-attribute-not-set",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0)
                    .with_constraints(vec![json!({"distinctAttribute": BOOL_ATTRIBUTE, "requests": [REQ0]})])
                    .with_requests(vec![device_request(REQ0, CLASS_A, 1)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null).with_allow_multiple_allocations()],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "with-distinct-constraints-unknown-type-attribute",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0)
                    .with_constraints(vec![json!({"distinctAttribute": BOOL_ATTRIBUTE, "requests": [REQ0]})])
                    .with_requests(vec![device_request(REQ0, CLASS_A, 1)]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, json!({"boolAttribute": {}})).with_allow_multiple_allocations()],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            error: Some("unsupported attribute value"),
            ..Case::default()
        },
        Case {
            name: "with-distinct-constraints-with-subrequests",
            features: Features {
                consumable_capacity: true,
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0)
                    .with_constraints(vec![
                        json!({"distinctAttribute": BOOL_ATTRIBUTE, "requests": [REQ0, REQ1]}),
                    ])
                    .with_requests(vec![
                        request_with_prioritized_list(
                            REQ0,
                            vec![
                                sub_request(
                                    SUB_REQ0,
                                    CLASS_A,
                                    1,
                                    vec![cel(r#"device.attributes["driver-a"].boolAttribute"#)],
                                ),
                                sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                            ],
                        ),
                        request_with_prioritized_list(
                            REQ1,
                            vec![
                                sub_request(
                                    SUB_REQ0,
                                    CLASS_A,
                                    1,
                                    vec![cel(r#"device.attributes["driver-a"].boolAttribute"#)],
                                ),
                                sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                            ],
                        ),
                        request_with_prioritized_list(
                            REQ2,
                            vec![
                                sub_request(
                                    SUB_REQ0,
                                    CLASS_A,
                                    1,
                                    vec![cel(r#"device.attributes["driver-a"].boolAttribute"#)],
                                ),
                                sub_request(SUB_REQ1, CLASS_A, 1, vec![]),
                            ],
                        ),
                    ]),
            ],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"boolAttribute": {"bool": true}}))
                        .with_allow_multiple_allocations(),
                    device(DEVICE2, Value::Null, json!({"boolAttribute": {"bool": false}}))
                        .with_allow_multiple_allocations(),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0_SUB_REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, Value::Null),
                    device_request_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2)
                        .with_consumed_capacity(FIXED_SHARE_ID, Value::Null),
                    device_request_allocation_result(REQ2_SUB_REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, Value::Null),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0)
                    .with_constraints(vec![json!({"distinctAttribute": STRING_ATTRIBUTE})])
                    .with_requests(vec![
                        device_request(REQ0, CLASS_A, 1).with_capacity_request(one()),
                        device_request(REQ1, CLASS_A, 1).with_capacity_request(one()),
                    ]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"stringAttribute": {"string": "stringAttributeValue"}}),
                    )
                    .with_allow_multiple_allocations()
                    .with_capacity_request_policy_range(json!({CAPACITY0: two()})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            ..Case::default()
        },
        Case {
            name: "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint",
            features: Features {
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![
                claim(CLAIM0)
                    .with_constraints(vec![json!({"distinctAttribute": STRING_ATTRIBUTE})])
                    .with_requests(vec![
                        device_request(REQ0, CLASS_A, 1).with_capacity_request(two()),
                        device_request(REQ1, CLASS_A, 1).with_capacity_request(two()),
                    ]),
            ],
            classes: vec![class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, true)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(
                            DEVICE1,
                            Value::Null,
                            json!({"stringAttribute": {"string": "stringAttributeValue1"}}),
                        )
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: four()})),
                    ],
                ),
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(
                            DEVICE2,
                            Value::Null,
                            json!({"stringAttribute": {"string": "stringAttributeValue2"}}),
                        )
                        .with_allow_multiple_allocations()
                        .with_capacity_request_policy_range(json!({CAPACITY0: four()})),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_request_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                    device_request_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2)
                        .with_consumed_capacity(FIXED_SHARE_ID, json!({CAPACITY0: two()})),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-scalar-string-values",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"stringAttribute": {"string": "value1"}})),
                    device(DEVICE2, Value::Null, json!({"stringAttribute": {"string": "value1"}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-list-of-string-values-with-common-elements",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2", "value3"]}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value2", "value3", "value4"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-list-of-string-values-with-partially-common-elements",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 3, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2"]}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value2", "value3"]}}),
                    ),
                    device(
                        DEVICE3,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value3", "value1"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-list-of-string-values-without-common-elements",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 1, vec![]), request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2"]}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value3", "value4"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-common-elements",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"stringAttribute": {"string": "value1"}})),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-partially-common-elements",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 3, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"stringAttribute": {"string": "value1"}})),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2"]}}),
                    ),
                    device(
                        DEVICE3,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value2", "value3"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-without-common-elements",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"stringAttribute": {"string": "value1"}})),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value2", "value3"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-list-of-int-values-with-common-elements",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": INT_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"numa": {"ints": [0, 1, 2]}})),
                    device(DEVICE2, Value::Null, json!({"numa": {"ints": [1, 2, 3]}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-list-of-bool-values-with-common-elements",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": BOOL_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"boolAttribute": {"bools": [true, false]}})),
                    device(DEVICE2, Value::Null, json!({"boolAttribute": {"bools": [true]}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-list-of-version-values-with-common-elements",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": VERSION_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"driverVersion": {"versions": ["1.0.0", "1.1.0", "2.0.0"]}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"driverVersion": {"versions": ["1.1.0", "2.0.0", "2.1.0"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-match-constaint-with-empty-or-unknown-type",
            features: Features {
                list_type_attributes: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"stringAttribute": {}})),
                    device(DEVICE2, Value::Null, json!({"stringAttribute": {"strings": []}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            error: Some("unsupported attribute value"),
            ..Case::default()
        },
        Case {
            name: "list-attributes-disabled-match-constraint-with-lists",
            features: Features {
                list_type_attributes: false,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"matchAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2", "value3"]}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value2", "value3", "value4"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            error: Some("unsupported attribute value"),
            ..Case::default()
        },
        Case {
            name: "list-attributes-distinct-constraint-scalar-string-values-all-distinct",
            features: Features {
                list_type_attributes: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"stringAttribute": {"string": "value1"}})),
                    device(DEVICE2, Value::Null, json!({"stringAttribute": {"string": "value2"}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-distinct-constraint-scalar-string-values-not-distinct",
            features: Features {
                list_type_attributes: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"stringAttribute": {"string": "value1"}})),
                    device(DEVICE2, Value::Null, json!({"stringAttribute": {"string": "value1"}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "list-attributes-distinct-constraint-list-of-string-values-all-distinct",
            features: Features {
                list_type_attributes: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2"]}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value2", "value3"]}}),
                    ),
                    device(
                        DEVICE3,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value3", "value4"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-distinct-constraint-list-of-string-values-with-common-elements",
            features: Features {
                list_type_attributes: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2", "value3"]}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value2", "value4", "value5"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "list-attributes-distinct-constraint-mixed-scalar-and-list-all-distinct",
            features: Features {
                list_type_attributes: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"stringAttribute": {"string": "value1"}})),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2"]}}),
                    ),
                    device(
                        DEVICE3,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value2", "value3"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-distinct-constraint-mixed-scalar-and-list-with-common-elements",
            features: Features {
                list_type_attributes: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"stringAttribute": {"string": "value1"}})),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "list-attributes-distinct-constraint-list-of-int-values-all-distinct",
            features: Features {
                list_type_attributes: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": INT_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"numa": {"ints": [0, 1]}})),
                    device(DEVICE2, Value::Null, json!({"numa": {"ints": [1, 2]}})),
                    device(DEVICE3, Value::Null, json!({"numa": {"ints": [2, 3]}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-distinct-constraint-list-of-bool-values-all-distinct",
            features: Features {
                list_type_attributes: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": BOOL_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"boolAttribute": {"bools": [true]}})),
                    device(DEVICE2, Value::Null, json!({"boolAttribute": {"bools": [true, false]}})),
                    device(DEVICE3, Value::Null, json!({"boolAttribute": {"bools": [false]}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-distinct-constraint-list-of-version-values-all-distinct",
            features: Features {
                list_type_attributes: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": VERSION_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"driverVersion": {"versions": ["1.0.0", "1.1.0"]}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"driverVersion": {"versions": ["1.1.0", "2.0.0"]}}),
                    ),
                    device(
                        DEVICE3,
                        Value::Null,
                        json!({"driverVersion": {"versions": ["2.0.0", "2.1.0"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                    device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                ],
            )],
            ..Case::default()
        },
        Case {
            name: "list-attributes-distinct-constaint-with-empty-or-unknown-type",
            features: Features {
                list_type_attributes: true,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": VERSION_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"driverVersion": {"versions": []}})),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"driverVersion": {"versions": Value::Null}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            error: Some("unsupported attribute value"),
            ..Case::default()
        },
        Case {
            name: "list-attributes-disabled-distinct-constraint-with-lists",
            features: Features {
                list_type_attributes: false,
                consumable_capacity: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                json!([{"distinctAttribute": STRING_ATTRIBUTE}]),
                vec![request(REQ0, CLASS_A, 2, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(
                        DEVICE1,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value1", "value2", "value3"]}}),
                    ),
                    device(
                        DEVICE2,
                        Value::Null,
                        json!({"stringAttribute": {"strings": ["value2", "value3", "value4"]}}),
                    ),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![],
            error: Some("unsupported attribute value"),
            ..Case::default()
        },
        Case {
            name: "allocation-mode-all-with-multi-host-resource-pool",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![json!({"name": REQ0, "exactly": {"allocationMode": "All", "deviceClassName": CLASS_A}})],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE2,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE2, Value::Null, Value::Null)],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "multi-host-resource-pool-with-stale-slice-for-current-node",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                {
                    let mut s = slice_with_devices(
                        SLICE1,
                        NODE1,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE1, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 1);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE2,
                        NODE2,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE2, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 2);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "multi-host-resource-pool-complete-update-from-node-1-to-node-2",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                {
                    let mut s = slice_with_devices(
                        SLICE1,
                        NODE1,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE1, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 1);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE1,
                        NODE1,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE2, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 1);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE2,
                        NODE2,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE1, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 2);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE2,
                        NODE2,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE2, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 2);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "multi-host-resource-pool-complete-update-from-node-2-to-node-1",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                {
                    let mut s = slice_with_devices(
                        SLICE1,
                        NODE2,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE1, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 1);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE1,
                        NODE2,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE2, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 1);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE2,
                        NODE1,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE1, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 2);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE2,
                        NODE1,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE2, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 2);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                {
                    let mut s = slice_with_devices(
                        SLICE1,
                        NODE1,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE1, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 1);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE1,
                        NODE1,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE2, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 1);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE2,
                        NODE2,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE1, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 2);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1",
            claims: vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                {
                    let mut s = slice_with_devices(
                        SLICE1,
                        NODE2,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE1, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 1);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE1,
                        NODE2,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE2, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 1);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
                {
                    let mut s = slice_with_devices(
                        SLICE2,
                        NODE1,
                        POOL1,
                        DRIVER_A,
                        vec![device(DEVICE1, Value::Null, Value::Null)],
                    );
                    s.set("/spec/pool/generation", 2);
                    s.set("/spec/pool/resourceSliceCount", 2);
                    s
                },
            ],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-same-counter-set-name-in-different-resource-slices",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 4),
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, Value::Null)],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 4),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, Value::Null)],
                ),
                slice_with_devices(
                    SLICE3,
                    NODE1,
                    resource_pool(POOL1, 4),
                    DRIVER_A,
                    vec![device(DEVICE2, Value::Null, Value::Null)],
                ),
                slice_with_counter_sets(
                    SLICE4,
                    NODE1,
                    resource_pool(POOL1, 4),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, Value::Null)],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            error: Some("invalid resource pools were encountered"),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-device-counter-consumption-references-unknown-counter-set",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET2, Value::Null),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, Value::Null)],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            error: Some("invalid resource pools were encountered"),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "8Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"other-memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            error: Some("invalid resource pools were encountered"),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1)])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "8Gi"})),
                        ]),
                    ],
                ),
                slice_with_counter_sets(
                    SLICE2,
                    NODE1,
                    POOL2,
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            error: Some("invalid resource pools were encountered"),
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-devices-on-different-nodes-consume-same-counter-set",
            features: Features {
                partitionable_devices: true,
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![request_with_prioritized_list(
                REQ0,
                vec![
                    sub_request(
                        SUB_REQ0,
                        CLASS_A,
                        1,
                        vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("6Gi")) >= 0"#,
                        )],
                    ),
                    sub_request(
                        SUB_REQ1,
                        CLASS_A,
                        1,
                        vec![cel(
                            r#"device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0"#,
                        )],
                    ),
                ],
            )])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_counter_sets(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 3),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 3),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "6Gi"})),
                        ]),
                        device(DEVICE2, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "2Gi"})),
                        ]),
                    ],
                ),
                slice_with_devices(
                    SLICE3,
                    NODE2,
                    resource_pool(POOL1, 3),
                    DRIVER_A,
                    vec![
                        device(DEVICE3, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "6Gi"})),
                        ]),
                    ],
                ),
            ],
            allocated: vec![id(DRIVER_A, POOL1, DEVICE3)],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(
                    REQ0_SUB_REQ1,
                    DRIVER_A,
                    POOL1,
                    DEVICE2,
                    false,
                    vec![],
                )],
            )],
            ..Case::default()
        },
        Case {
            name: "partitionable-devices-validation-error-on-non-targeting-slice",
            features: Features {
                partitionable_devices: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_counter_sets(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 3),
                    DRIVER_A,
                    vec![counter_set(COUNTER_SET1, json!({"memory": "8Gi"}))],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 3),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, FROM_COUNTERS, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET1, json!({"memory": "6Gi"})),
                        ]),
                    ],
                ),
                slice_with_devices(
                    SLICE3,
                    NODE2,
                    resource_pool(POOL1, 3),
                    DRIVER_A,
                    vec![
                        device(DEVICE3, Value::Null, Value::Null).with_device_counter_consumption(vec![
                            device_counter_consumption(COUNTER_SET2, json!({"memory": "6Gi"})),
                        ]),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            error: Some("invalid resource pools were encountered"),
            ..Case::default()
        },
        Case {
            name: "different-resourceslices-in-pool-can-target-different-nodes",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE2,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE2, Value::Null, Value::Null)],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "invalid-pool-is-ok-if-devices-can-be-allocated-from-other",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE3,
                    NODE1,
                    resource_pool(POOL2, 1),
                    DRIVER_A,
                    vec![device(DEVICE2, Value::Null, Value::Null)],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE2, false, vec![])],
            )],
            ..Case::default()
        },
        Case {
            name: "invalid-pool-is-error-if-no-other-device-can-be-allocated",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE3,
                    NODE1,
                    resource_pool(POOL2, 1),
                    DRIVER_A,
                    vec![device(DEVICE2, Value::Null, Value::Null)],
                ),
            ],
            allocated: vec![id(DRIVER_A, POOL2, DEVICE2)],
            node: Some(node(NODE1, REGION1)),
            error: Some("invalid resource pools were encountered"),
            ..Case::default()
        },
        Case {
            name: "no-allocation-from-incomplete-pools",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 1, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                vec![device(DEVICE1, Value::Null, Value::Null)],
            )],
            node: Some(node(NODE1, REGION1)),
            ..Case::default()
        },
        Case {
            name: "check-combinations-within-single-request-single-pool-single-slice",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 5, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, Value::Null),
                    device(DEVICE2, Value::Null, Value::Null),
                    device(DEVICE3, Value::Null, Value::Null),
                    device(DEVICE4, Value::Null, Value::Null),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            steps: Some(65),
            ..Case::default()
        },
        Case {
            name: "check-combinations-within-single-request-single-pool-multiple-slices",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 5, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE1, Value::Null, Value::Null),
                        device(DEVICE2, Value::Null, Value::Null),
                    ],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![
                        device(DEVICE3, Value::Null, Value::Null),
                        device(DEVICE4, Value::Null, Value::Null),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            steps: Some(65),
            ..Case::default()
        },
        Case {
            name: "check-combinations-within-single-request-multiple-pools-multiple-slices",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 5, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE2, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE3,
                    NODE1,
                    POOL2,
                    DRIVER_A,
                    vec![
                        device(DEVICE3, Value::Null, Value::Null),
                        device(DEVICE4, Value::Null, Value::Null),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            steps: Some(65),
            ..Case::default()
        },
        Case {
            name: "check-combinations-within-single-request-many-pools",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![request(REQ0, CLASS_A, 5, vec![])],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    POOL2,
                    DRIVER_A,
                    vec![device(DEVICE2, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE3,
                    NODE1,
                    POOL3,
                    DRIVER_A,
                    vec![device(DEVICE3, Value::Null, Value::Null)],
                ),
                slice_with_devices(
                    SLICE4,
                    NODE1,
                    POOL4,
                    DRIVER_A,
                    vec![device(DEVICE4, Value::Null, Value::Null)],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            steps: Some(65),
            ..Case::default()
        },
        Case {
            name: "check-combinations-with-backtracking",
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![
                    request(REQ1, CLASS_A, 2, vec![]),
                    request(
                        REQ2,
                        CLASS_A,
                        1,
                        vec![cel(r#"device.attributes["driver-a"].type == "X""#)],
                    ),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"type": {"string": "X"}})),
                    device(DEVICE2, Value::Null, json!({"type": {"string": "Y"}})),
                    device(DEVICE3, Value::Null, json!({"type": {"string": "Y"}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                    device_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                ],
            )],
            steps: Some(14),
            ..Case::default()
        },
        Case {
            name: "check-combinations-with-backtracking-across-slices-and-pools",
            features: Features {
                device_binding_and_status: true,
                ..Default::default()
            },
            claims: vec![claim_with_requests(
                CLAIM0,
                Value::Null,
                vec![
                    request(REQ1, CLASS_A, 2, vec![]),
                    request(
                        REQ2,
                        CLASS_A,
                        1,
                        vec![cel(r#"device.attributes["driver-a"].type == "X""#)],
                    ),
                ],
            )],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE1, Value::Null, json!({"type": {"string": "X"}}))],
                ),
                slice_with_devices(
                    SLICE2,
                    NODE1,
                    resource_pool(POOL1, 2),
                    DRIVER_A,
                    vec![device(DEVICE2, Value::Null, json!({"type": {"string": "Y"}}))],
                ),
                slice_with_devices(
                    SLICE3,
                    NODE1,
                    POOL2,
                    DRIVER_A,
                    vec![
                        device(DEVICE3, Value::Null, json!({"type": {"string": "Y"}}))
                            .with_binding_conditions(vec!["IsPrepare"], vec![]),
                    ],
                ),
            ],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                    device_request_allocation_result_with_binding_conditions(
                        REQ1,
                        DRIVER_A,
                        POOL2,
                        DEVICE3,
                        vec!["IsPrepare"],
                        Vec::<&str>::new(),
                        vec![],
                    ),
                    device_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                ],
            )],
            steps: Some(14),
            ..Case::default()
        },
        Case {
            name: "check-combinations-with-prioritized-list",
            features: Features {
                prioritized_list: true,
                ..Default::default()
            },
            claims: vec![claim(CLAIM0).with_requests(vec![
                request_with_prioritized_list(
                    REQ1,
                    vec![
                        sub_request(
                            SUB_REQ0,
                            CLASS_A,
                            3,
                            vec![cel(r#"device.attributes["driver-a"].type == "Y""#)],
                        ),
                        sub_request(SUB_REQ1, CLASS_A, 2, vec![]),
                    ],
                ),
                request_with_prioritized_list(
                    REQ2,
                    vec![
                        sub_request(SUB_REQ0, CLASS_A, 2, vec![]),
                        sub_request(
                            SUB_REQ1,
                            CLASS_A,
                            1,
                            vec![cel(r#"device.attributes["driver-a"].type == "X""#)],
                        ),
                    ],
                ),
            ])],
            classes: vec![class(CLASS_A, DRIVER_A)],
            slices: vec![slice_with_devices(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                vec![
                    device(DEVICE1, Value::Null, json!({"type": {"string": "X"}})),
                    device(DEVICE2, Value::Null, json!({"type": {"string": "Y"}})),
                    device(DEVICE3, Value::Null, json!({"type": {"string": "Y"}})),
                ],
            )],
            node: Some(node(NODE1, REGION1)),
            expect: vec![allocation_result(
                local_node_selector(NODE1),
                vec![
                    device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE2, false, vec![]),
                    device_allocation_result(REQ1_SUB_REQ1, DRIVER_A, POOL1, DEVICE3, false, vec![]),
                    device_allocation_result(REQ2_SUB_REQ1, DRIVER_A, POOL1, DEVICE1, false, vec![]),
                ],
            )],
            steps: Some(32),
            ..Case::default()
        },
    ]
}

// ---------------------------------------------------------------- beyond Go's table

/// One allocation of `claims` on node-1, with the supported features.
fn allocate_on(
    node_name: &str,
    claims: Vec<Value>,
    classes: Vec<Value>,
    slices: Vec<Value>,
) -> Result<Option<Vec<AllocationResult>>, AllocError> {
    let claims: Vec<ResourceClaim> = claims.iter().map(|c| parse("claim", c).unwrap()).collect();
    let classes: FxHashMap<String, Arc<DeviceClass>> = classes
        .iter()
        .map(|c| {
            let class: DeviceClass = parse("class", c).unwrap();
            (class.metadata.name.clone().unwrap(), Arc::new(class))
        })
        .collect();
    let slices: Vec<Arc<ResourceSlice>> = slices.iter().map(|s| Arc::new(parse("slice", s).unwrap())).collect();
    let node = NodeData::from_node(&parse::<Node>("node", &node(node_name, REGION1)).unwrap()).unwrap();
    let allocated = FxHashSet::default();
    let cel = CelCache::new(10);
    let allocator = Allocator::new(Features::SUPPORTED, &allocated, &classes, &slices, &cel).unwrap();
    let claims: Vec<&ResourceClaim> = claims.iter().collect();
    allocator.allocate(&node, &claims, &|| false)
}

fn allocate(
    claims: Vec<Value>,
    classes: Vec<Value>,
    slices: Vec<Value>,
) -> Result<Option<Vec<AllocationResult>>, AllocError> {
    allocate_on(NODE1, claims, classes, slices)
}

fn in_ns(claim: Value) -> Value {
    claim.with("/metadata/namespace", "ns")
}

fn devices_of(results: &[AllocationResult]) -> Vec<String> {
    results
        .iter()
        .flat_map(|r| r.devices.iter().flat_map(|d| d.results.iter().flatten()))
        .map(|r| format!("{}/{}/{}", r.driver, r.pool, r.device))
        .collect()
}

#[test]
fn refuses_capacity_requests() {
    let exact = in_ns(claim(CLAIM0).with_requests(vec![device_request(REQ0, CLASS_A, 1).with_capacity_request(one())]));
    let err = allocate(
        vec![exact],
        vec![class(CLASS_A, DRIVER_A)],
        vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    );
    assert_eq!(
        err,
        Err(AllocError::Invalid(
            "claim ns/claim-0, request req-0: capacity requests (spec.devices.requests[0].exactly.capacity) are not supported by wasmsched"
                .to_owned()
        ))
    );

    let sub = in_ns(claim(CLAIM0).with_requests(vec![
        device_request(REQ0, CLASS_A, 1),
        request_with_prioritized_list(
            REQ1,
            vec![
                sub_request(SUB_REQ0, CLASS_A, 1, vec![]),
                sub_request(SUB_REQ1, CLASS_A, 1, vec![]).with_capacity_request(one()),
            ],
        ),
    ]));
    let err = allocate(
        vec![sub],
        vec![class(CLASS_A, DRIVER_A)],
        vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    );
    assert_eq!(
        err,
        Err(AllocError::Invalid(
            "claim ns/claim-0, request req-1/subReq-1: capacity requests (spec.devices.requests[1].firstAvailable[1].capacity) are not supported by wasmsched"
                .to_owned()
        ))
    );
}

#[test]
fn refuses_distinct_attribute_constraints() {
    let c = in_ns(claim_with_request(
        CLAIM0,
        REQ0,
        CLASS_A,
        vec![json!({"distinctAttribute": INT_ATTRIBUTE})],
    ));
    let err = allocate(
        vec![c],
        vec![class(CLASS_A, DRIVER_A)],
        vec![slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    );
    assert_eq!(
        err,
        Err(AllocError::Invalid(
            "claim ns/claim-0, constraint #0: distinctAttribute constraints (spec.devices.constraints[0].distinctAttribute) are not supported by wasmsched"
                .to_owned()
        ))
    );
}

#[test]
fn refuses_devices_using_unsupported_fields() {
    let plain = || device(DEVICE1, Value::Null, Value::Null);
    let cases = [
        (
            plain().with_binding_conditions(vec!["Ready"], vec!["Failed"]),
            "binding conditions (ResourceSlice slice-1, spec.devices[0].bindingConditions) are",
        ),
        (
            plain().with_binds_to_node(true),
            "binding to a node (ResourceSlice slice-1, spec.devices[0].bindsToNode) is",
        ),
        (
            plain().with_allow_multiple_allocations(),
            "multiple allocations (ResourceSlice slice-1, spec.devices[0].allowMultipleAllocations) are",
        ),
        (
            plain().with_capacity_request_policy_range(json!({CAPACITY0: "10"})),
            "capacity request policies (ResourceSlice slice-1, spec.devices[0].capacity[capacity-0].requestPolicy) are",
        ),
    ];
    for (dev, what) in cases {
        let slices = vec![slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, vec![dev.clone()])];
        let claims = vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])];
        assert_eq!(
            allocate(claims.clone(), vec![class(CLASS_A, DRIVER_A)], slices),
            Err(AllocError::FailedOnNode(format!(
                "device driver-a/pool-1/device-1 cannot be allocated: {what} not supported by wasmsched"
            ))),
            "{dev}"
        );

        // Another device does: no error.
        let slices = vec![slice_with_devices(
            SLICE1,
            NODE1,
            POOL1,
            DRIVER_A,
            vec![dev.clone(), device(DEVICE2, Value::Null, Value::Null)],
        )];
        let results = allocate(claims.clone(), vec![class(CLASS_A, DRIVER_A)], slices)
            .unwrap()
            .unwrap();
        assert_eq!(devices_of(&results), ["driver-a/pool-1/device-2"], "{dev}");

        // A device the request does not select is no reason.
        let slices = vec![slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_B, vec![dev.clone()])];
        assert_eq!(
            allocate(claims.clone(), vec![class(CLASS_A, DRIVER_A)], slices),
            Ok(None),
            "{dev}"
        );

        // "All" does not leave it out.
        let all = in_ns(claim_with_requests(
            CLAIM0,
            Value::Null,
            vec![all_device_request(REQ0, CLASS_A)],
        ));
        let slices = vec![slice_with_devices(
            SLICE1,
            NODE1,
            POOL1,
            DRIVER_A,
            vec![device(DEVICE0, Value::Null, Value::Null), dev.clone()],
        )];
        assert_eq!(
            allocate(vec![all], vec![class(CLASS_A, DRIVER_A)], slices),
            Err(AllocError::FailedOnNode(format!(
                "claim ns/claim-0, request req-0: asks for all devices, but device driver-a/pool-1/device-1 cannot be allocated: {} not supported by wasmsched",
                what.replace("devices[0]", "devices[1]")
            ))),
            "{dev}"
        );
    }
}

#[test]
fn refuses_list_typed_attributes() {
    let dev = device(DEVICE1, Value::Null, json!({"models": {"strings": ["a", "b"]}}));
    let slices = vec![slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, vec![dev])];
    let claims = vec![claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])];
    // A selector reads the device: Go's error, for the pod.
    assert_eq!(
        allocate(claims.clone(), vec![class(CLASS_A, DRIVER_A)], slices.clone()),
        Err(AllocError::Invalid(
            "class class-a: selector #0: CEL runtime error: attribute models: unsupported attribute value".to_owned()
        ))
    );
    // None does: refused on the node.
    let no_selectors = json!({"metadata": {"name": CLASS_A}, "spec": {}});
    assert_eq!(
        allocate(claims, vec![no_selectors], slices),
        Err(AllocError::FailedOnNode(
            "device driver-a/pool-1/device-1 cannot be allocated: list-typed attributes (ResourceSlice slice-1, spec.devices[0].attributes[models]) are not supported by wasmsched"
                .to_owned()
        ))
    );
}

#[test]
fn refuses_unsupported_features() {
    let allocated = FxHashSet::default();
    let classes: FxHashMap<String, Arc<DeviceClass>> = FxHashMap::default();
    let cel = CelCache::new(1);
    for features in [
        Features {
            consumable_capacity: true,
            ..Features::SUPPORTED
        },
        Features {
            device_binding_and_status: true,
            ..Features::default()
        },
        Features {
            list_type_attributes: true,
            ..Features::default()
        },
    ] {
        let err = Allocator::new(features, &allocated, &classes, &[], &cel)
            .err()
            .expect("refused");
        assert!(matches!(err, AllocError::Invalid(_)), "{err:?}");
        assert!(err.message().contains(features.unsupported()[0]), "{err:?}");
    }
    assert!(Allocator::new(Features::SUPPORTED, &allocated, &classes, &[], &cel).is_ok());
}

/// Go's "interrupt" test: a search that takes many steps (six devices out
/// of five), stopped by the time limit.
#[test]
fn interrupt() {
    let classes: FxHashMap<String, Arc<DeviceClass>> = [(
        CLASS_A.to_owned(),
        Arc::new(parse::<DeviceClass>("class", &class(CLASS_A, DRIVER_A)).unwrap()),
    )]
    .into_iter()
    .collect();
    let claim: ResourceClaim = parse(
        "claim",
        &claim_with_requests(CLAIM0, Value::Null, vec![request(REQ0, CLASS_A, 6, vec![])]),
    )
    .unwrap();
    let devices = [DEVICE1, DEVICE2, DEVICE3, DEVICE4, "device-5"]
        .map(|d| device(d, Value::Null, Value::Null))
        .to_vec();
    let slices = vec![Arc::new(
        parse::<ResourceSlice>("slice", &slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, devices)).unwrap(),
    )];
    let node = NodeData::from_node(&parse::<Node>("node", &node(NODE1, REGION1)).unwrap()).unwrap();
    let allocated = FxHashSet::default();
    let cel = CelCache::new(1);
    let run = |expired: &dyn Fn() -> bool| {
        let allocator = Allocator::new(Features::default(), &allocated, &classes, &slices, &cel).unwrap();
        (allocator.allocate(&node, &[&claim], expired), allocator.steps())
    };

    let (outcome, all_steps) = run(&|| false);
    assert_eq!(outcome, Ok(None));
    assert!(all_steps > 100, "{all_steps}");

    let aborted = Err(AllocError::Aborted(
        "filter operation aborted: context deadline exceeded".to_owned(),
    ));
    assert_eq!(run(&|| true), (aborted.clone(), 1));

    let asked = std::cell::Cell::new(0);
    let later = || {
        asked.set(asked.get() + 1);
        asked.get() > 10
    };
    assert_eq!(run(&later), (aborted, 11));
}

/// One node's call reads the slices of that node and the shared ones; a
/// pool's devices keep the order of its slices in the input either way.
#[test]
fn slices_by_node() {
    let mut slices = Vec::new();
    for n in 0..50 {
        let node = format!("node-{n}");
        slices.push(slice_with_devices(
            &format!("local-{n}"),
            node.as_str(),
            format!("pool-{n}").as_str(),
            DRIVER_A,
            vec![device(DEVICE1, Value::Null, Value::Null)],
        ));
    }
    // A pool of two slices, one for all nodes, one for node-7, in that
    // order.
    slices.push(slice_with_devices(
        "shared",
        NODE_SELECTION_ALL,
        resource_pool("mixed", 2),
        DRIVER_B,
        vec![device(DEVICE1, Value::Null, Value::Null)],
    ));
    slices.push(slice_with_devices(
        "mixed-7",
        "node-7",
        resource_pool("mixed", 2),
        DRIVER_B,
        vec![device(DEVICE2, Value::Null, Value::Null)],
    ));
    let claims = vec![
        claim_with_request(CLAIM0, REQ0, CLASS_A, vec![]),
        claim_with_requests(CLAIM1, Value::Null, vec![request(REQ0, CLASS_B, 2, vec![])]),
    ];
    let classes = vec![class(CLASS_A, DRIVER_A), class(CLASS_B, DRIVER_B)];
    let results = allocate_on("node-7", claims.clone(), classes.clone(), slices.clone())
        .unwrap()
        .unwrap();
    assert_eq!(
        devices_of(&results),
        [
            "driver-a/pool-7/device-1",
            "driver-b/mixed/device-1",
            "driver-b/mixed/device-2"
        ]
    );
    assert_eq!(
        serde_json::to_value(&results[1].node_selector).unwrap(),
        local_node_selector("node-7")
    );
    // On node-3 the pool is complete, but only its shared slice is
    // usable: one device of class B, not two.
    assert_eq!(allocate_on("node-3", claims, classes, slices).unwrap(), None);
}

/// One allocator answers for many nodes at once, as the scheduler asks it.
#[test]
fn shared_between_threads() {
    let slices: Vec<Arc<ResourceSlice>> = (0..16)
        .map(|n| {
            let s = slice_with_one_device(&format!("slice-{n}"), format!("node-{n}").as_str(), POOL1, DRIVER_A)
                .with("/spec/pool/name", format!("pool-{n}"));
            Arc::new(parse("slice", &s).unwrap())
        })
        .collect();
    let classes: FxHashMap<String, Arc<DeviceClass>> = [(
        CLASS_A.to_owned(),
        Arc::new(parse::<DeviceClass>("class", &class(CLASS_A, DRIVER_A)).unwrap()),
    )]
    .into_iter()
    .collect();
    let claim: ResourceClaim = parse("claim", &claim_with_request(CLAIM0, REQ0, CLASS_A, vec![])).unwrap();
    let allocated = FxHashSet::default();
    let cel = CelCache::new(10);
    let allocator = Allocator::new(Features::SUPPORTED, &allocated, &classes, &slices, &cel).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (allocator, claim) = (&allocator, &claim);
            scope.spawn(move || {
                for n in (t..16).step_by(4) {
                    let name = format!("node-{n}");
                    let node = NodeData::from_node(&parse::<Node>("node", &node(&name, REGION1)).unwrap()).unwrap();
                    let results = allocator.allocate(&node, &[claim], &|| false).unwrap().unwrap();
                    assert_eq!(devices_of(&results), [format!("driver-a/pool-{n}/device-1")]);
                }
            });
        }
    });
}
