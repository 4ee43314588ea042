//! Resource amounts as integers, and the request of a pod as kube-scheduler
//! computes it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::ModelError;
use crate::quantity;

/// CPU request assumed for scoring a container that requests none (100m),
/// as kube-scheduler's `DefaultMilliCPURequest`.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Memory request assumed for scoring a container that requests none
/// (200 MiB), as kube-scheduler's `DefaultMemoryRequest`.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Amounts of resources: CPU in millicores, memory and storage in bytes, a
/// pod count, and the scalar resources (hugepages, extended resources such as
/// `nvidia.com/gpu`) by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[repr(C)] // the amounts first, in this order: see `NodeInfo`
pub struct Resources {
    /// CPU in millicores.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Number of pods (meaningful for node allocatable).
    pub pods: i64,
    /// Scalar resources, sorted by name, no duplicates.
    pub scalar: Vec<(String, i64)>,
}

/// Whether kube-scheduler accounts a resource of this name as a scalar
/// resource: hugepages, extended resources (`example.com/foo`) and
/// `kubernetes.io/`-prefixed native resources, attachable volume counts.
/// Other unprefixed names are ignored, as the scheduler ignores them.
pub fn is_scalar_resource_name(name: &str) -> bool {
    name.starts_with("hugepages-") || name.contains('/') || name.starts_with("attachable-volumes-")
}

/// Whether a resource is an extended resource (`vendor.com/name`, outside
/// the `kubernetes.io/` namespace).
pub fn is_extended_resource_name(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// A resource name resolved once (plugin args), so hot paths compare no strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceKey {
    /// `cpu`.
    Cpu,
    /// `memory`.
    Memory,
    /// `ephemeral-storage`.
    EphemeralStorage,
    /// `pods`.
    Pods,
    /// Any scalar resource.
    Scalar(String),
}

impl ResourceKey {
    /// Resolves a resource name.
    pub fn parse(name: &str) -> Self {
        match name {
            "cpu" => Self::Cpu,
            "memory" => Self::Memory,
            "ephemeral-storage" => Self::EphemeralStorage,
            "pods" => Self::Pods,
            other => Self::Scalar(other.to_owned()),
        }
    }
}

impl Resources {
    /// Amount of a resolved resource.
    #[inline]
    pub fn get_key(&self, key: &ResourceKey) -> i64 {
        match key {
            ResourceKey::Cpu => self.milli_cpu,
            ResourceKey::Memory => self.memory,
            ResourceKey::EphemeralStorage => self.ephemeral_storage,
            ResourceKey::Pods => self.pods,
            ResourceKey::Scalar(n) => self.scalar_get(n),
        }
    }

    /// Amount of the named resource (`cpu` in millicores).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            "cpu" => self.milli_cpu,
            "memory" => self.memory,
            "ephemeral-storage" => self.ephemeral_storage,
            "pods" => self.pods,
            _ => self.scalar_get(name),
        }
    }

    /// Amount of a scalar resource, 0 when absent.
    pub fn scalar_get(&self, name: &str) -> i64 {
        self.scalar
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .map(|i| self.scalar[i].1)
            .unwrap_or(0)
    }

    fn scalar_entry(&mut self, name: &str) -> &mut i64 {
        let i = match self.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) => i,
            Err(i) => {
                self.scalar.insert(i, (name.to_owned(), 0));
                i
            }
        };
        &mut self.scalar[i].1
    }

    /// Sets the named resource.
    pub fn set(&mut self, name: &str, v: i64) {
        match name {
            "cpu" => self.milli_cpu = v,
            "memory" => self.memory = v,
            "ephemeral-storage" => self.ephemeral_storage = v,
            "pods" => self.pods = v,
            _ => *self.scalar_entry(name) = v,
        }
    }

    /// Adds `other` to `self`, saturating: a node's usage that would pass
    /// `i64::MAX` stays there (more than any node has, so the node is full)
    /// instead of wrapping to a negative amount that fits anything.
    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.saturating_add(other.ephemeral_storage);
        self.pods = self.pods.saturating_add(other.pods);
        for (n, v) in &other.scalar {
            let e = self.scalar_entry(n);
            *e = e.saturating_add(*v);
        }
    }

    /// Adds `other` to `self`; on overflow, the name of the resource that
    /// overflowed (and `self` is left partly added).
    pub fn checked_add(&mut self, other: &Resources) -> Result<(), String> {
        fn add(a: &mut i64, b: i64, name: &str) -> Result<(), String> {
            *a = a.checked_add(b).ok_or_else(|| name.to_owned())?;
            Ok(())
        }
        add(&mut self.milli_cpu, other.milli_cpu, "cpu")?;
        add(&mut self.memory, other.memory, "memory")?;
        add(
            &mut self.ephemeral_storage,
            other.ephemeral_storage,
            "ephemeral-storage",
        )?;
        add(&mut self.pods, other.pods, "pods")?;
        for (n, v) in &other.scalar {
            add(self.scalar_entry(n), *v, n)?;
        }
        Ok(())
    }

    /// Subtracts `other` from `self`, saturating (see [`Resources::add`]).
    pub fn sub(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_sub(other.milli_cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.saturating_sub(other.ephemeral_storage);
        self.pods = self.pods.saturating_sub(other.pods);
        for (n, v) in &other.scalar {
            let e = self.scalar_entry(n);
            *e = e.saturating_sub(*v);
        }
        self.scalar.retain(|(_, v)| *v != 0);
    }

    /// Raises every amount of `self` to at least `other`'s.
    pub fn max_with(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.pods = self.pods.max(other.pods);
        for (n, v) in &other.scalar {
            let e = self.scalar_entry(n);
            *e = (*e).max(*v);
        }
    }

    /// Whether nothing is requested.
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.iter().all(|(_, v)| *v == 0)
    }

    /// Parses a Kubernetes resource list (`requests`, `allocatable`, ...).
    /// `field` names the list in errors, e.g. `status.allocatable`.
    pub fn from_list(list: &BTreeMap<String, Quantity>, object: &str, field: &str) -> Result<Self, ModelError> {
        let mut r = Resources::default();
        for (name, q) in list {
            r.set_quantity(name, q, object, field)?;
        }
        Ok(r)
    }

    fn set_quantity(&mut self, name: &str, q: &Quantity, object: &str, field: &str) -> Result<(), ModelError> {
        let known = matches!(name, "cpu" | "memory" | "ephemeral-storage" | "pods");
        if !known && !is_scalar_resource_name(name) {
            return Ok(());
        }
        let parsed = if name == "cpu" {
            quantity::parse_milli(&q.0)
        } else {
            quantity::parse_value(&q.0)
        };
        let v = parsed.map_err(|e| ModelError::new(object, format!("{field}[{name}]"), e))?;
        self.set(name, v);
        Ok(())
    }
}

/// What a pod requests: the exact request used by the fit filter, and the
/// "non-zero" CPU and memory used for scoring (missing container requests
/// count as 100m CPU / 200 MiB).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodRequests {
    /// The request accounted on the node.
    pub requests: Resources,
    /// Millicores for scoring.
    pub non_zero_milli_cpu: i64,
    /// Memory bytes for scoring.
    pub non_zero_memory: i64,
    /// Millicores NodeResourcesFit's score counts for the pod being
    /// placed: the container aggregate with the defaults, plus overhead.
    /// kube-scheduler v1.36's Fit scorer does not read pod-level
    /// `spec.resources` for that pod (its BalancedAllocation and the
    /// accounting on nodes do); the same as `non_zero_milli_cpu` without
    /// pod-level requests.
    pub fit_milli_cpu: i64,
    /// Memory bytes, as [`PodRequests::fit_milli_cpu`].
    pub fit_memory: i64,
}

/// A container's requests, with requests defaulted from limits where only a
/// limit is set (as the API server defaults them on create).
fn container_requests(c: &Container, object: &str, field: &str) -> Result<(Resources, bool, bool), ModelError> {
    let mut r = Resources::default();
    let (mut has_cpu, mut has_mem) = (false, false);
    let res = c.resources.as_ref();
    let requests = res.and_then(|r| r.requests.as_ref());
    let limits = res.and_then(|r| r.limits.as_ref());
    if let Some(limits) = limits {
        for (name, q) in limits {
            if requests.is_none_or(|req| !req.contains_key(name)) {
                r.set_quantity(name, q, object, &format!("{field}.resources.limits"))?;
                has_cpu |= name == "cpu";
                has_mem |= name == "memory";
            }
        }
    }
    if let Some(requests) = requests {
        for (name, q) in requests {
            r.set_quantity(name, q, object, &format!("{field}.resources.requests"))?;
            has_cpu |= name == "cpu";
            has_mem |= name == "memory";
        }
    }
    Ok((r, has_cpu, has_mem))
}

/// What the kubelet reports of a running pod's resources, for in-place
/// resize: a bound container counts the larger of its spec and its status
/// (`containerStatuses[].resources.requests`, `allocatedResources`), or its
/// status alone while a resize is `Infeasible` (kube-scheduler's
/// `determineEffectiveRequests`), so a pending scale-down frees nothing early.
struct ResizeStatus<'a> {
    status: &'a PodStatus,
    infeasible: bool,
}

impl<'a> ResizeStatus<'a> {
    fn of(status: Option<&'a PodStatus>) -> Option<Self> {
        let status = status?;
        let infeasible = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "PodResizePending")
            .is_some_and(|c| c.reason.as_deref() == Some("Infeasible"));
        Some(Self { status, infeasible })
    }

    /// The effective request of container `name`, given its spec request.
    fn effective(
        &self,
        name: &str,
        spec: (Resources, bool, bool),
        object: &str,
    ) -> Result<(Resources, bool, bool), ModelError> {
        let statuses = self
            .status
            .container_statuses
            .iter()
            .flatten()
            .chain(self.status.init_container_statuses.iter().flatten());
        let Some((i, cs)) = statuses.enumerate().find(|(_, cs)| cs.name == name) else {
            return Ok(spec);
        };
        let Some(resources) = &cs.resources else {
            return Ok(spec);
        };
        let field = format!("status.containerStatuses[{i}]");
        let empty = BTreeMap::new();
        let actuated = resources.requests.as_ref().unwrap_or(&empty);
        let allocated = cs.allocated_resources.as_ref().unwrap_or(&empty);
        let (mut r, mut has_cpu, mut has_mem) = if self.infeasible {
            (Resources::default(), false, false)
        } else {
            spec
        };
        for (list, what) in [(actuated, "resources.requests"), (allocated, "allocatedResources")] {
            r.max_with(&Resources::from_list(list, object, &format!("{field}.{what}"))?);
            has_cpu |= list.contains_key("cpu");
            has_mem |= list.contains_key("memory");
        }
        Ok((r, has_cpu, has_mem))
    }

    /// The effective pod-level request, given the spec's: what an in-place
    /// resize at pod level left (`status.resources.requests`,
    /// `status.allocatedResources`), as kube-scheduler v1.36 counts it;
    /// none when the status reports no pod-level resources.
    fn pod_level(&self, spec: &Resources, object: &str) -> Result<Option<Resources>, ModelError> {
        let Some(resources) = &self.status.resources else {
            return Ok(None);
        };
        let empty = BTreeMap::new();
        let mut r = if self.infeasible {
            Resources::default()
        } else {
            spec.clone()
        };
        for (list, field) in [
            (
                resources.requests.as_ref().unwrap_or(&empty),
                "status.resources.requests",
            ),
            (
                self.status.allocated_resources.as_ref().unwrap_or(&empty),
                "status.allocatedResources",
            ),
        ] {
            r.max_with(&Resources::from_list(list, object, field)?);
        }
        Ok(Some(r))
    }
}

/// Adds one container's request to an aggregate, naming the field that
/// makes the sum overflow.
fn add_checked(sum: &mut Resources, r: &Resources, object: &str, field: &str) -> Result<(), ModelError> {
    sum.checked_add(r).map_err(|res| {
        ModelError::new(
            object,
            format!("{field}.resources.requests[{res}]"),
            "the pod's total request overflows",
        )
    })
}

fn add_nz(nz: &mut (i64, i64), add: (i64, i64), object: &str, field: &str) -> Result<(), ModelError> {
    let overflow = |res: &str| {
        ModelError::new(
            object,
            format!("{field}.resources.requests[{res}]"),
            "the pod's total request overflows",
        )
    };
    nz.0 = nz.0.checked_add(add.0).ok_or_else(|| overflow("cpu"))?;
    nz.1 = nz.1.checked_add(add.1).ok_or_else(|| overflow("memory"))?;
    Ok(())
}

fn non_zero(r: &Resources, has_cpu: bool, has_mem: bool) -> (i64, i64) {
    (
        if has_cpu {
            r.milli_cpu
        } else {
            DEFAULT_MILLI_CPU_REQUEST
        },
        if has_mem { r.memory } else { DEFAULT_MEMORY_REQUEST },
    )
}

/// Computes a pod's request as kube-scheduler does: the larger of the sum of
/// the app containers (plus restartable "sidecar" init containers, which keep
/// running) and the peak of the init containers run in order, plus the pod
/// overhead. Pod-level `spec.resources.requests`, where set, replace the
/// container aggregate for those resources.
///
/// `status` is given for a bound pod: its app and sidecar containers then
/// count what an in-place resize left them (see [`ResizeStatus`]). A sum
/// that overflows is an error naming the container's field.
pub fn pod_requests(spec: &PodSpec, status: Option<&PodStatus>, object: &str) -> Result<PodRequests, ModelError> {
    let resize = ResizeStatus::of(status);
    let effective = |c: &Container, field: &str| -> Result<(Resources, bool, bool), ModelError> {
        let r = container_requests(c, object, field)?;
        match &resize {
            Some(s) => s.effective(&c.name, r, object),
            None => Ok(r),
        }
    };
    // Two aggregates in one pass: the exact one, and one where missing CPU and
    // memory requests count as the scoring defaults.
    let mut reqs = Resources::default();
    let mut nz = (0i64, 0i64);
    // Whether any container names CPU (memory) among its requests.
    let (mut any_cpu, mut any_mem) = (false, false);
    for (i, c) in spec.containers.iter().enumerate() {
        let field = format!("spec.containers[{i}]");
        let (r, has_cpu, has_mem) = effective(c, &field)?;
        (any_cpu, any_mem) = (any_cpu || has_cpu, any_mem || has_mem);
        add_nz(&mut nz, non_zero(&r, has_cpu, has_mem), object, &field)?;
        add_checked(&mut reqs, &r, object, &field)?;
    }
    let mut sidecars = Resources::default();
    let mut sidecars_nz = (0i64, 0i64);
    let mut init_peak = Resources::default();
    let mut init_peak_nz = (0i64, 0i64);
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let field = format!("spec.initContainers[{i}]");
        let sidecar = c.restart_policy.as_deref() == Some("Always");
        let (r, has_cpu, has_mem) = if sidecar {
            effective(c, &field)?
        } else {
            container_requests(c, object, &field)?
        };
        (any_cpu, any_mem) = (any_cpu || has_cpu, any_mem || has_mem);
        let c_nz = non_zero(&r, has_cpu, has_mem);
        let (during, during_nz) = if sidecar {
            add_checked(&mut reqs, &r, object, &field)?;
            add_nz(&mut nz, c_nz, object, &field)?;
            add_checked(&mut sidecars, &r, object, &field)?;
            add_nz(&mut sidecars_nz, c_nz, object, &field)?;
            (sidecars.clone(), sidecars_nz)
        } else {
            let mut t = r;
            add_checked(&mut t, &sidecars, object, &field)?;
            let mut t_nz = c_nz;
            add_nz(&mut t_nz, sidecars_nz, object, &field)?;
            (t, t_nz)
        };
        init_peak.max_with(&during);
        init_peak_nz = (init_peak_nz.0.max(during_nz.0), init_peak_nz.1.max(during_nz.1));
    }
    reqs.max_with(&init_peak);
    nz = (nz.0.max(init_peak_nz.0), nz.1.max(init_peak_nz.1));

    let overhead = match &spec.overhead {
        Some(o) => Some(Resources::from_list(o, object, "spec.overhead")?),
        None => None,
    };
    let mut fit = nz;
    let supported = |name: &str| name == "cpu" || name == "memory" || name.starts_with("hugepages-");
    if let Some(pod_level) = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .filter(|r| r.keys().any(|k| supported(k)))
    {
        let mut p = Resources::from_list(pod_level, object, "spec.resources.requests")?;
        if let Some(effective) = resize
            .as_ref()
            .map(|rs| rs.pod_level(&p, object))
            .transpose()?
            .flatten()
        {
            p = effective;
        }
        for name in pod_level.keys() {
            if supported(name) {
                reqs.set(name, p.get(name));
            }
        }
        // With pod-level requests, the scoring defaults apply only to a
        // resource no container, the pod level nor the overhead names
        // (kube-scheduler's `getNonMissingContainerRequests`).
        let in_overhead = |name: &str| spec.overhead.as_ref().is_some_and(|o| o.contains_key(name));
        if pod_level.contains_key("cpu") || any_cpu || in_overhead("cpu") {
            nz.0 = reqs.milli_cpu;
        }
        if pod_level.contains_key("memory") || any_mem || in_overhead("memory") {
            nz.1 = reqs.memory;
        }
    }

    if let Some(o) = &overhead {
        add_checked(&mut reqs, o, object, "spec.overhead")
            .map_err(|e| ModelError::new(object, "spec.overhead", e.reason))?;
        for n in [&mut nz, &mut fit] {
            add_nz(n, (o.milli_cpu, o.memory), object, "spec.overhead")
                .map_err(|e| ModelError::new(object, "spec.overhead", e.reason))?;
        }
    }
    Ok(PodRequests {
        requests: reqs,
        non_zero_milli_cpu: nz.0,
        non_zero_memory: nz.1,
        fit_milli_cpu: fit.0,
        fit_memory: fit.1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> PodSpec {
        serde_json::from_value(v).unwrap()
    }

    fn req(cpu: &str, mem: &str) -> serde_json::Value {
        json!({"requests": {"cpu": cpu, "memory": mem}})
    }

    #[test]
    fn sums_app_containers() {
        let s = spec(json!({"containers": [
            {"name": "a", "resources": req("100m", "1Gi")},
            {"name": "b", "resources": req("250m", "512Mi")},
        ]}));
        let r = pod_requests(&s, None, "p").unwrap();
        assert_eq!(r.requests.milli_cpu, 350);
        assert_eq!(r.requests.memory, (1 << 30) + (512 << 20));
        assert_eq!(r.non_zero_milli_cpu, 350);
    }

    #[test]
    fn init_container_larger_than_app_containers_wins() {
        let s = spec(json!({
            "initContainers": [{"name": "init", "resources": req("2", "100Mi")}],
            "containers": [{"name": "a", "resources": req("500m", "1Gi")}],
        }));
        let r = pod_requests(&s, None, "p").unwrap();
        assert_eq!(r.requests.milli_cpu, 2000);
        assert_eq!(r.requests.memory, 1 << 30);
    }

    #[test]
    fn sidecars_add_to_app_and_to_later_init_containers() {
        // sidecar 200m runs alongside; init-2 (1 cpu) runs after it: peak 1.2.
        let s = spec(json!({
            "initContainers": [
                {"name": "sidecar", "restartPolicy": "Always", "resources": req("200m", "64Mi")},
                {"name": "init-2", "resources": req("1", "64Mi")},
            ],
            "containers": [{"name": "a", "resources": req("500m", "128Mi")}],
        }));
        let r = pod_requests(&s, None, "p").unwrap();
        assert_eq!(r.requests.milli_cpu, 1200);
        assert_eq!(r.requests.memory, 192 << 20);
    }

    #[test]
    fn overhead_and_extended_resources() {
        let s = spec(json!({
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "2", "hugepages-2Mi": "4Mi", "storage": "1Gi"}}}],
            "overhead": {"cpu": "250m", "memory": "120Mi"},
        }));
        let r = pod_requests(&s, None, "p").unwrap();
        assert_eq!(r.requests.milli_cpu, 1250);
        assert_eq!(r.requests.memory, 120 << 20);
        assert_eq!(r.requests.scalar_get("nvidia.com/gpu"), 2);
        assert_eq!(r.requests.scalar_get("hugepages-2Mi"), 4 << 20);
        assert_eq!(r.requests.scalar.len(), 2, "unprefixed `storage` is ignored");
        // memory was not requested by the container: scoring counts 200Mi + overhead
        assert_eq!(r.non_zero_memory, DEFAULT_MEMORY_REQUEST + (120 << 20));
    }

    #[test]
    fn limits_default_requests_and_missing_requests_default_for_scoring() {
        let s = spec(json!({"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}},
            {"name": "b"},
        ]}));
        let r = pod_requests(&s, None, "p").unwrap();
        assert_eq!(r.requests.milli_cpu, 2000);
        assert_eq!(r.non_zero_milli_cpu, 2000 + DEFAULT_MILLI_CPU_REQUEST);
        assert_eq!(r.non_zero_memory, (1 << 30) + DEFAULT_MEMORY_REQUEST);
    }

    #[test]
    fn pod_level_requests_replace_container_aggregate() {
        let s = spec(json!({
            "resources": {"requests": {"cpu": "3"}},
            "containers": [{"name": "a", "resources": req("1", "1Gi")}],
        }));
        let r = pod_requests(&s, None, "p").unwrap();
        assert_eq!(r.requests.milli_cpu, 3000);
        assert_eq!(r.requests.memory, 1 << 30);
    }

    /// The scoring amounts with pod-level requests, as kube-scheduler
    /// v1.36's `TestPodInfoCalculateResources` has them (and what its Fit
    /// scorer counts for the pod being placed: the containers').
    #[test]
    fn scoring_amounts_with_pod_level_requests() {
        let amounts = |v| {
            let r = pod_requests(&spec(v), None, "p").unwrap();
            (r.non_zero_milli_cpu, r.non_zero_memory, r.fit_milli_cpu, r.fit_memory)
        };
        let plain = || json!({"name": "c"});
        // Memory at pod level; no CPU anywhere: the default.
        assert_eq!(
            amounts(json!({"resources": {"requests": {"memory": "1200M"}},
                "initContainers": [plain()], "containers": [plain()]})),
            (100, 1_200_000_000, 100, DEFAULT_MEMORY_REQUEST)
        );
        assert_eq!(
            amounts(json!({"resources": {"requests": {"cpu": "500m"}}, "containers": [plain()]})),
            (500, DEFAULT_MEMORY_REQUEST, 100, DEFAULT_MEMORY_REQUEST)
        );
        assert_eq!(
            amounts(json!({"resources": {"requests": {"cpu": "1200m", "memory": "1200M"}},
                "initContainers": [{"name": "s", "restartPolicy": "Always", "resources": req("100m", "100M")}],
                "containers": [plain()]})),
            (1200, 1_200_000_000, 200, 100_000_000 + DEFAULT_MEMORY_REQUEST)
        );
        // A container names CPU: with pod-level requests the CPU is exact,
        // the other container gets no default (without them it would).
        assert_eq!(
            amounts(json!({"resources": {"requests": {"memory": "1Gi"}},
                "containers": [{"name": "a", "resources": {"requests": {"cpu": "200m"}}}, plain()]})),
            (200, 1 << 30, 300, 2 * DEFAULT_MEMORY_REQUEST)
        );
    }

    /// A bound pod resized in place at pod level counts the larger of its
    /// spec, what the kubelet actuated and what it allocated; after an
    /// infeasible resize, not the spec.
    #[test]
    fn pod_level_resize_counts_the_larger_request() {
        let s = spec(json!({"nodeName": "n", "resources": {"requests": {"cpu": "2"}}, "containers": [{"name": "c"}]}));
        let status = |reason: Option<&str>| -> PodStatus {
            let mut v = json!({"resources": {"requests": {"cpu": "3"}}, "allocatedResources": {"cpu": "1"}});
            if let Some(r) = reason {
                v["conditions"] = json!([{"type": "PodResizePending", "status": "True", "reason": r}]);
            }
            serde_json::from_value(v).unwrap()
        };
        let cpu = |st: Option<&PodStatus>| pod_requests(&s, st, "p").unwrap().requests.milli_cpu;
        assert_eq!(cpu(None), 2000);
        assert_eq!(cpu(Some(&status(None))), 3000);
        let shrunk: PodStatus = serde_json::from_value(json!({"resources": {"requests": {"cpu": "1"}}})).unwrap();
        assert_eq!(
            cpu(Some(&shrunk)),
            2000,
            "the spec asks more than the kubelet has actuated"
        );
        let infeasible: PodStatus = serde_json::from_value(json!({
            "resources": {"requests": {"cpu": "1500m"}},
            "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]}))
        .unwrap();
        assert_eq!(cpu(Some(&infeasible)), 1500);
        assert_eq!(cpu(Some(&status(Some("Deferred")))), 3000);
    }

    #[test]
    fn bad_quantity_names_object_and_field() {
        let s = spec(json!({"containers": [{"name": "a", "resources": req("lots", "1Gi")}]}));
        let e = pod_requests(&s, None, "Pod default/web").unwrap_err().to_string();
        assert_eq!(
            e,
            "Pod default/web: spec.containers[0].resources.requests[cpu]: quantity \"lots\" has no valid number"
        );
    }

    #[test]
    fn requests_that_overflow_name_the_field() {
        // Two containers asking 5Ei each: 2 × 5·2^60 passes i64::MAX.
        let s = spec(json!({"containers": [
            {"name": "a", "resources": {"requests": {"memory": "5Ei"}}},
            {"name": "b", "resources": {"requests": {"memory": "5Ei"}}},
        ]}));
        let e = pod_requests(&s, None, "Pod default/huge").unwrap_err().to_string();
        assert_eq!(
            e,
            "Pod default/huge: spec.containers[1].resources.requests[memory]: the pod's total request overflows"
        );
        // Node usage saturates instead of wrapping to a negative amount.
        let mut u = Resources {
            memory: i64::MAX - 1,
            ..Default::default()
        };
        u.add(&Resources {
            memory: 10,
            ..Default::default()
        });
        assert_eq!(u.memory, i64::MAX);
    }

    fn bound(status: serde_json::Value) -> PodStatus {
        serde_json::from_value(status).unwrap()
    }

    #[test]
    fn bound_pods_count_the_larger_of_spec_and_status_while_resizing() {
        let s = spec(json!({"containers": [{"name": "a", "resources": req("1", "1Gi")}]}));
        // A scale-down to 1 cpu is pending: the kubelet still runs 2.
        let st = bound(json!({"containerStatuses": [{
            "name": "a", "image": "x", "imageID": "", "ready": true, "restartCount": 0,
            "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
            "allocatedResources": {"cpu": "2", "memory": "1Gi"},
        }]}));
        let r = pod_requests(&s, Some(&st), "p").unwrap();
        assert_eq!(r.requests.milli_cpu, 2000);
        assert_eq!(r.requests.memory, 1 << 30);
        // A scale-up the node cannot take (Infeasible): status alone.
        let s = spec(json!({"containers": [{"name": "a", "resources": req("8", "1Gi")}]}));
        let mut st = st;
        st.conditions = Some(vec![
            serde_json::from_value(json!({"type": "PodResizePending", "status": "True", "reason": "Infeasible"}))
                .unwrap(),
        ]);
        let r = pod_requests(&s, Some(&st), "p").unwrap();
        assert_eq!(r.requests.milli_cpu, 2000);
        // No status for the container: the spec.
        let r = pod_requests(&s, Some(&bound(json!({}))), "p").unwrap();
        assert_eq!(r.requests.milli_cpu, 8000);
    }
}
