//! NodeResourcesFit: the pod's requests must fit in the node's allocatable
//! minus what its pods request (filter), and nodes are scored by a strategy:
//! `LeastAllocated` (default: spread), `MostAllocated` (bin-pack) or
//! `RequestedToCapacityRatio` (a piecewise-linear shape).

use serde::Deserialize;
use std::sync::Arc;

use super::node_resources_balanced_allocation::scored;
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{Code, CycleState, MAX_NODE_SCORE, Plugin, Points, Reason, Status, score_each};
use crate::node::{NodeData, NodeInfo, NodeRow};
use crate::pod::PodInfo;
use crate::resources::{ResourceKey, Resources, is_extended_resource_name};

/// A resource considered in scoring, with its weight.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    /// Resource name (`cpu`, `memory`, `nvidia.com/gpu`, ...).
    pub name: String,
    /// Weight (default 1).
    #[serde(default = "one")]
    pub weight: i64,
}

fn one() -> i64 {
    1
}

/// The default scored resources: cpu and memory, weight 1 each.
pub fn default_resources() -> Vec<ResourceSpec> {
    vec![
        ResourceSpec {
            name: "cpu".into(),
            weight: 1,
        },
        ResourceSpec {
            name: "memory".into(),
            weight: 1,
        },
    ]
}

/// A point of the `RequestedToCapacityRatio` shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UtilizationShapePoint {
    /// Utilization in percent, 0–100.
    pub utilization: i64,
    /// Score, 0–10.
    pub score: i64,
}

/// `scoringStrategy.requestedToCapacityRatio`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestedToCapacityRatioParam {
    /// The shape, by increasing utilization.
    pub shape: Vec<UtilizationShapePoint>,
}

/// The scoring strategy type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum StrategyType {
    /// Prefer the node with the most free resources (spread).
    #[default]
    LeastAllocated,
    /// Prefer the node with the least free resources (bin-pack).
    MostAllocated,
    /// Score by a configured utilization → score shape.
    RequestedToCapacityRatio,
}

/// `scoringStrategy`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScoringStrategy {
    /// Strategy type (required when `scoringStrategy` is given, as
    /// kube-scheduler requires it).
    #[serde(rename = "type", default)]
    pub kind: Option<StrategyType>,
    /// Scored resources (default cpu and memory, weight 1).
    #[serde(default)]
    pub resources: Option<Vec<ResourceSpec>>,
    /// The shape for `RequestedToCapacityRatio`.
    #[serde(default)]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

/// NodeResourcesFit args, as in `NodeResourcesFitArgs`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FitArgs {
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub kind: Option<String>,
    /// Extended resources the filter ignores.
    #[serde(default)]
    pub ignored_resources: Vec<String>,
    /// Extended resource groups (the part before `/`) the filter ignores.
    #[serde(default)]
    pub ignored_resource_groups: Vec<String>,
    /// How nodes are scored.
    #[serde(default)]
    pub scoring_strategy: Option<ScoringStrategy>,
}

/// The NodeResourcesFit filter and score.
#[derive(Debug, Clone)]
pub struct NodeResourcesFit {
    ignored: Vec<String>,
    ignored_groups: Vec<String>,
    strategy: StrategyType,
    resources: Vec<(ResourceKey, i64)>,
    /// Shape scaled to 0–100 scores.
    shape: Vec<UtilizationShapePoint>,
}

/// Defaults and checks a weighted resource list as kube-scheduler's v1
/// defaults and validation do: an empty list means cpu and memory, a
/// weight left out or 0 is 1, weights are in (0, 100].
pub fn validate_resources(resources: &mut Vec<ResourceSpec>, field: &str) -> Result<(), String> {
    if resources.is_empty() {
        *resources = default_resources();
    }
    for (i, r) in resources.iter_mut().enumerate() {
        if r.weight == 0 {
            r.weight = 1;
        }
        if !(1..=100).contains(&r.weight) {
            return Err(format!(
                "{field}[{i}].weight: Invalid value: {}: resource weight of {} not in valid range (0, 100]",
                r.weight, r.name
            ));
        }
    }
    Ok(())
}

impl NodeResourcesFit {
    /// Builds the plugin, validating the args.
    pub fn new(args: FitArgs) -> Result<Self, String> {
        let strategy = args.scoring_strategy.unwrap_or(ScoringStrategy {
            kind: Some(StrategyType::LeastAllocated),
            ..Default::default()
        });
        let kind = strategy.kind.ok_or(
            "scoringStrategy.type: Unsupported value: \"\": supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\"",
        )?;
        let mut resources = strategy.resources.unwrap_or_default();
        validate_resources(&mut resources, "scoringStrategy.resources")?;
        let mut shape = Vec::new();
        match (kind, strategy.requested_to_capacity_ratio) {
            (StrategyType::RequestedToCapacityRatio, Some(p)) => {
                if p.shape.is_empty() {
                    return Err("scoringStrategy.requestedToCapacityRatio.shape: must not be empty".into());
                }
                for (i, pt) in p.shape.iter().enumerate() {
                    let f = format!("scoringStrategy.requestedToCapacityRatio.shape[{i}]");
                    if !(0..=100).contains(&pt.utilization) {
                        return Err(format!("{f}.utilization: {} is not in 0..=100", pt.utilization));
                    }
                    if !(0..=10).contains(&pt.score) {
                        return Err(format!("{f}.score: {} is not in 0..=10", pt.score));
                    }
                    if i > 0 && pt.utilization <= p.shape[i - 1].utilization {
                        return Err(format!(
                            "{f}.utilization: points must be sorted by increasing utilization"
                        ));
                    }
                    shape.push(UtilizationShapePoint {
                        utilization: pt.utilization,
                        score: pt.score * (MAX_NODE_SCORE / 10),
                    });
                }
            }
            (StrategyType::RequestedToCapacityRatio, None) => {
                return Err(
                    "scoringStrategy.requestedToCapacityRatio: required for type RequestedToCapacityRatio".into(),
                );
            }
            (_, Some(_)) => {
                return Err(
                    "scoringStrategy.requestedToCapacityRatio: only valid with type RequestedToCapacityRatio".into(),
                );
            }
            _ => {}
        }
        Ok(NodeResourcesFit {
            ignored: args.ignored_resources,
            ignored_groups: args.ignored_resource_groups,
            strategy: kind,
            resources: resources
                .iter()
                .map(|r| (ResourceKey::parse(&r.name), r.weight))
                .collect(),
            shape,
        })
    }

    fn ignored(&self, name: &str) -> bool {
        is_extended_resource_name(name)
            && (self.ignored.iter().any(|i| i == name)
                || name
                    .split_once('/')
                    .is_some_and(|(g, _)| self.ignored_groups.iter().any(|i| i == g)))
    }

    /// Whether the pod would fit the node with nothing on it.
    fn fits_empty(&self, pod: &PodInfo, node: &Arc<NodeData>) -> bool {
        let empty = NodeInfo {
            node: node.clone(),
            usage: Default::default(),
        };
        self.fits(pod, &empty).is_success()
    }

    /// Whether the pod fits, with every reason it does not (kube-scheduler's
    /// `fitsRequest`). A fit allocates nothing.
    pub fn fits(&self, pod: &PodInfo, node: &NodeInfo) -> Status {
        self.fits_with(pod, &NodeRow::of(node), node, &self.scalar_asks(pod))
    }

    /// The pod's scalar requests this filter checks, with their
    /// `Insufficient <resource>` reasons: built once per batch, not per node.
    fn scalar_asks<'p>(&self, pod: &'p PodInfo) -> Vec<(&'p str, i64, Reason)> {
        pod.requests
            .requests
            .scalar
            .iter()
            .filter(|(name, q)| *q != 0 && !self.ignored(name))
            .map(|(name, q)| (name.as_str(), *q, Reason::from(format!("Insufficient {name}"))))
            .collect()
    }

    /// [`Self::fits`] from the node's row, with the pod's [`Self::scalar_asks`]:
    /// the node itself is read only for scalar resources, and only when it
    /// has some.
    fn fits_with(&self, pod: &PodInfo, r: &NodeRow, node: &NodeInfo, scalar_asks: &[(&str, i64, Reason)]) -> Status {
        let mut out: Option<Status> = None;
        let mut reject = |r: Reason| match &mut out {
            Some(st) => st.push_reason(r),
            None => out = Some(Status::unschedulable(r)),
        };
        let req = &pod.requests.requests;
        if r.pods >= r.alloc_pods {
            reject(Reason::Static("Too many pods"));
        }
        // A request beyond the node's whole allocatable cannot be helped by
        // removing pods (kube-scheduler's `Unresolvable`).
        let mut beyond = false;
        if !req.is_zero() {
            if short(req.milli_cpu, r.alloc_milli_cpu, r.used_milli_cpu) {
                reject(Reason::Static("Insufficient cpu"));
                beyond |= req.milli_cpu > r.alloc_milli_cpu;
            }
            if short(req.memory, r.alloc_memory, r.used_memory) {
                reject(Reason::Static("Insufficient memory"));
                beyond |= req.memory > r.alloc_memory;
            }
            if short(
                req.ephemeral_storage,
                r.alloc_ephemeral_storage,
                r.used_ephemeral_storage,
            ) {
                reject(Reason::Static("Insufficient ephemeral-storage"));
                beyond |= req.ephemeral_storage > r.alloc_ephemeral_storage;
            }
            for (name, q, reason) in scalar_asks {
                // A node with no scalar resource allocatable has none of
                // this one: a positive request is beyond it, whatever its
                // pods use.
                let (alloc, used) = if r.scalars || *q <= 0 {
                    scalar_amounts(node, name)
                } else {
                    (0, 0)
                };
                if *q > alloc.saturating_sub(used) {
                    reject(reason.clone());
                    beyond |= *q > alloc;
                }
            }
        }
        match out {
            None => Status::success(),
            Some(st) if beyond => st.with_code(Code::UnschedulableAndUnresolvable),
            Some(st) => st,
        }
    }

    /// (requested including the pod, allocatable) of a scored resource, with
    /// the non-zero defaults for CPU and memory; none for a resource that
    /// takes no part in the score ([`scored`]).
    #[inline]
    fn amounts(pod: &PodInfo, node: &NodeInfo, key: &ResourceKey) -> Option<(i64, i64)> {
        let req = match key {
            ResourceKey::Cpu => node.usage.non_zero_milli_cpu + pod.requests.fit_milli_cpu,
            ResourceKey::Memory => node.usage.non_zero_memory + pod.requests.fit_memory,
            _ => {
                let own = pod.requests.requests.get_key(key);
                if !scored(key, own) {
                    return None;
                }
                node.usage.requested.get_key(key) + own
            }
        };
        Some((req, node.node.allocatable.get_key(key)))
    }

    fn shape_score(&self, utilization: i64) -> i64 {
        let s = &self.shape;
        for i in 0..s.len() {
            if utilization <= s[i].utilization {
                if i == 0 {
                    return s[0].score;
                }
                return s[i - 1].score
                    + (s[i].score - s[i - 1].score) * (utilization - s[i - 1].utilization)
                        / (s[i].utilization - s[i - 1].utilization);
            }
        }
        s[s.len() - 1].score
    }
}

/// (allocatable, requested) of scalar resource `name` on `node`. Not
/// inlined: the compiler would otherwise read the node ahead of the loop
/// that needs it, for every node, at a cache miss each.
#[inline(never)]
fn scalar_amounts(node: &NodeInfo, name: &str) -> (i64, i64) {
    (
        node.node.allocatable.scalar_get(name),
        node.usage.requested.scalar_get(name),
    )
}

/// Whether `after` has more than `before` of some resource `req` asks for.
fn more_of_requested(req: &Resources, before: &Resources, after: &Resources) -> bool {
    (req.milli_cpu > 0 && after.milli_cpu > before.milli_cpu)
        || (req.memory > 0 && after.memory > before.memory)
        || (req.ephemeral_storage > 0 && after.ephemeral_storage > before.ephemeral_storage)
        || req
            .scalar
            .iter()
            .any(|(k, v)| *v > 0 && after.scalar_get(k) > before.scalar_get(k))
}

/// `(capacity - requested) * 100 / capacity`, 0 when over capacity.
pub fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

/// `requested * 100 / capacity`, capped at 100.
pub fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &str {
        super::names::NODE_RESOURCES_FIT
    }

    fn points(&self) -> Points {
        // No PreScore: kube-scheduler never skips this score, so nodes are
        // ranked by what they hold even for a pod that requests nothing.
        Points::FILTER | Points::SCORE
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent {
                resource: Resource::AssignedPod,
                action: Action::DELETE | Action::UPDATE_POD_SCALE_DOWN,
            },
            ClusterEvent {
                resource: Resource::Node,
                action: Action::ADD | Action::UPDATE_NODE_ALLOCATABLE,
            },
        ]
    }

    /// kube-scheduler's hints: a pod leaving or shrinking frees what this
    /// pod requests; a node helps if the pod would fit it empty and (for an
    /// update) something the pod requests grew.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let req = &pod.requests.requests;
        let queue = match change {
            Change::AssignedPodDeleted(_) => true,
            // The pod's usage shrank: room grew by old − new.
            Change::AssignedPodScaledDown { old, new } => {
                more_of_requested(req, &new.requests.requests, &old.requests.requests)
            }
            Change::NodeAdded(n) => self.fits_empty(pod, n),
            Change::NodeUpdated { old, new, .. } => {
                let (o, n) = (&old.allocatable, &new.allocatable);
                self.fits_empty(pod, new) && (n.pods > o.pods || more_of_requested(req, o, n))
            }
            Change::PodUpdated { .. }
            | Change::MetricsRefreshed { .. }
            | Change::AssignedPodAdded(_)
            | Change::AssignedPodRelabelled { .. }
            | Change::NamespaceChanged { .. }
            | Change::StorageChanged { .. } => false,
        };
        if queue { QueueingHint::Queue } else { QueueingHint::Skip }
    }

    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        self.fits(pod, node)
    }

    fn filter_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        let asks = self.scalar_asks(pod);
        let req = &pod.requests.requests;
        for (i, (n, r)) in nodes.iter().zip(rows).enumerate() {
            // Most nodes fit: decided from the row, no status built.
            if asks.is_empty() && fits_row(req, r) {
                continue;
            }
            let st = self.fits_with(pod, r, n, &asks);
            if !st.is_success() {
                rejected.push((i, st));
            }
        }
    }

    /// Scores a batch; `LeastAllocated` and `MostAllocated` over cpu and
    /// memory (the default) are computed inline.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let plain = matches!(
            self.strategy,
            StrategyType::LeastAllocated | StrategyType::MostAllocated
        );
        let [(ResourceKey::Cpu, wc), (ResourceKey::Memory, wm)] = self.resources.as_slice() else {
            return score_each(self, state, pod, nodes, out);
        };
        if !plain {
            return score_each(self, state, pod, nodes, out);
        }
        let pod = (pod.requests.fit_milli_cpu, pod.requests.fit_memory);
        // One loop per strategy, so the score of a resource is inlined
        // rather than called through a pointer for every node.
        match self.strategy {
            StrategyType::LeastAllocated => score_rows(rows, out, pod, (*wc, *wm), least_requested_score),
            _ => score_rows(rows, out, pod, (*wc, *wm), most_requested_score),
        }
        Ok(())
    }

    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let (mut total, mut weights) = (0i64, 0i64);
        for (key, weight) in &self.resources {
            let Some((req, alloc)) = Self::amounts(pod, node, key) else {
                continue;
            };
            if alloc == 0 {
                continue;
            }
            let s = match self.strategy {
                StrategyType::LeastAllocated => least_requested_score(req, alloc),
                StrategyType::MostAllocated => most_requested_score(req, alloc),
                StrategyType::RequestedToCapacityRatio => {
                    let utilization = if req > alloc { 100 } else { req * 100 / alloc };
                    let s = self.shape_score(utilization);
                    if s <= 0 {
                        continue;
                    }
                    s
                }
            };
            total += s * weight;
            weights += weight;
        }
        if weights == 0 {
            return Ok(0);
        }
        Ok(match self.strategy {
            StrategyType::RequestedToCapacityRatio => (total as f64 / weights as f64).round() as i64,
            _ => total / weights,
        })
    }
}

/// The cpu and memory score of each row, `one` scoring a resource
/// (requested with the pod, allocatable), weighted by `(wc, wm)`.
#[inline]
fn score_rows(
    rows: &[&NodeRow],
    out: &mut [i64],
    (cpu, mem): (i64, i64),
    (wc, wm): (i64, i64),
    one: impl Fn(i64, i64) -> i64,
) {
    for (o, r) in out.iter_mut().zip(rows) {
        let (mut total, mut weights) = (0, 0);
        if r.alloc_milli_cpu != 0 {
            total += one(r.non_zero_milli_cpu + cpu, r.alloc_milli_cpu) * wc;
            weights += wc;
        }
        if r.alloc_memory != 0 {
            total += one(r.non_zero_memory + mem, r.alloc_memory) * wm;
            weights += wm;
        }
        *o = if weights == 0 { 0 } else { total / weights };
    }
}

/// Whether a node with `alloc` of a resource, of which its pods use
/// `used`, lacks room for a request of `ask` (no request lacks nothing).
#[inline]
fn short(ask: i64, alloc: i64, used: i64) -> bool {
    ask > 0 && ask > alloc.saturating_sub(used)
}

/// Whether a pod with these requests and no scalar ones fits on the node
/// of row `r`: the tests of [`NodeResourcesFit::fits_with`], as one
/// expression, for the nodes that pass them.
#[inline]
fn fits_row(req: &Resources, r: &NodeRow) -> bool {
    (r.pods < r.alloc_pods)
        & !short(req.milli_cpu, r.alloc_milli_cpu, r.used_milli_cpu)
        & !short(req.memory, r.alloc_memory, r.used_memory)
        & !short(
            req.ephemeral_storage,
            r.alloc_ephemeral_storage,
            r.used_ephemeral_storage,
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{assert_batch_scores_as_single, node, node_alloc, pod, pod_req, with_pod};
    use serde_json::json;

    fn fit(args: serde_json::Value) -> NodeResourcesFit {
        NodeResourcesFit::new(crate::plugins::parse_args(Some(&args)).unwrap()).unwrap()
    }

    #[test]
    fn filter_reasons() {
        let p = NodeResourcesFit::new(FitArgs::default()).unwrap();
        let st = CycleState::default();
        let n = with_pod(node_alloc("n", "2", "4Gi"), &pod_req("1500m", "1Gi"));
        let cases = [
            (pod_req("500m", "1Gi"), Vec::<&str>::new()),
            (pod_req("600m", "1Gi"), vec!["Insufficient cpu"]),
            (pod_req("1", "4Gi"), vec!["Insufficient cpu", "Insufficient memory"]),
            // init container larger than the app container decides
            (
                pod(
                    json!({"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}], "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}),
                ),
                vec!["Insufficient cpu"],
            ),
            // pod overhead counts
            (
                pod(
                    json!({"overhead": {"cpu": "200m"}, "containers": [{"name": "c", "resources": {"requests": {"cpu": "400m"}}}]}),
                ),
                vec!["Insufficient cpu"],
            ),
            // extended resource absent from the node
            (
                pod(json!({"containers": [{"name": "c", "resources": {"requests": {"example.com/fpga": "1"}}}]})),
                vec!["Insufficient example.com/fpga"],
            ),
            // best-effort pods always fit resources
            (pod(json!({"containers": [{"name": "c"}]})), vec![]),
        ];
        for (i, (pd, want)) in cases.iter().enumerate() {
            let got: Vec<String> = p.fits(pd, &n).reasons().map(str::to_owned).collect();
            assert_eq!(got, *want, "case {i}");
            assert_eq!(p.filter(&st, pd, &n).is_success(), want.is_empty());
        }
        let full = node(
            "f",
            json!({}),
            json!({}),
            json!({"cpu": "2", "memory": "1Gi", "pods": "1"}),
        );
        let full = with_pod(full, &pod_req("0", "0"));
        assert_eq!(
            p.fits(&pod_req("0", "0"), &full).reasons().collect::<Vec<_>>(),
            ["Too many pods"]
        );
    }

    /// A request beyond what the node has at all is unresolvable (no pod
    /// leaving would help); one that only lacks free room is not.
    #[test]
    fn beyond_allocatable_is_unresolvable() {
        let p = NodeResourcesFit::new(FitArgs::default()).unwrap();
        let st = CycleState::default();
        let node = with_pod(node_alloc("n", "4", "8Gi"), &pod_req("3", "1Gi"));
        assert_eq!(p.filter(&st, &pod_req("2", "1Gi"), &node).code(), Code::Unschedulable);
        let big = p.filter(&st, &pod_req("8", "1Gi"), &node);
        assert_eq!(
            (big.code(), big.message()),
            (Code::UnschedulableAndUnresolvable, "Insufficient cpu".to_owned())
        );
    }

    #[test]
    fn ignored_extended_resources() {
        let p = fit(json!({"ignoredResources": ["example.com/fpga"], "ignoredResourceGroups": ["vendor.io"]}));
        let n = node_alloc("n", "2", "4Gi");
        let pd = pod(
            json!({"containers": [{"name": "c", "resources": {"requests": {"example.com/fpga": "1", "vendor.io/x": "2", "other.io/y": "1"}}}]}),
        );
        assert_eq!(
            p.fits(&pd, &n).reasons().collect::<Vec<_>>(),
            ["Insufficient other.io/y"]
        );
    }

    #[test]
    fn least_and_most_allocated() {
        let st = CycleState::default();
        let n = with_pod(node_alloc("n", "4", "8Gi"), &pod_req("1", "2Gi"));
        let pd = pod_req("1", "2Gi");
        // cpu: (4000-2000)*100/4000 = 50, mem: (8-4)*100/8 = 50
        assert_eq!(fit(json!({})).score(&st, &pd, &n).unwrap(), 50);
        let most = fit(json!({"scoringStrategy": {"type": "MostAllocated"}}));
        assert_eq!(most.score(&st, &pd, &n).unwrap(), 50);
        let weighted = fit(
            json!({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}}),
        );
        let pd2 = pod_req("3", "2Gi"); // cpu (1+3)/4 = 100, mem 4/8 = 50 → (300+50)/4 = 87
        assert_eq!(weighted.score(&st, &pd2, &n).unwrap(), 87);
        // zero requests count as 100m / 200Mi for scoring
        let be = pod(json!({"containers": [{"name": "c"}]}));
        let empty = node_alloc("e", "1", "1000Mi");
        assert_eq!(fit(json!({})).score(&st, &be, &empty).unwrap(), (90 + 80) / 2);
    }

    /// The batch gives what each node's score gives, for every strategy.
    #[test]
    fn batches_score_as_single_nodes() {
        for args in [
            json!({}),
            json!({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}]}}),
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}),
        ] {
            assert_batch_scores_as_single(
                &fit(args),
                &[
                    pod_req("1", "2Gi"),
                    pod(json!({"containers": [{"name": "c"}]})),
                    pod_req("3", "7Gi"),
                ],
            );
        }
    }

    #[test]
    fn requested_to_capacity_ratio() {
        let st = CycleState::default();
        let p = fit(
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}),
        );
        let n = node_alloc("n", "4", "8Gi");
        // cpu 1/4 = 25% → 25, mem 2/8 = 25% → 25
        assert_eq!(p.score(&st, &pod_req("1", "2Gi"), &n).unwrap(), 25);
        let bad = NodeResourcesFit::new(crate::plugins::parse_args(Some(&json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]}}}))).unwrap());
        assert!(bad.unwrap_err().contains("shape[1].utilization"));
    }

    #[test]
    fn args_errors_name_the_field() {
        let e = crate::plugins::parse_args::<FitArgs>(Some(&json!({"scoringStrategy": {"typo": 1}}))).unwrap_err();
        assert!(e.starts_with("scoringStrategy: unknown field `typo`"), "{e}");
        let new = |v: serde_json::Value| NodeResourcesFit::new(crate::plugins::parse_args(Some(&v)).unwrap());
        let e =
            new(json!({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}}))
                .unwrap_err();
        assert_eq!(
            e,
            "scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"
        );
        // kube-scheduler's v1 defaults: weight 0 is 1, no resources are cpu
        // and memory; a strategy without a type is refused.
        let p = new(json!({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}}))
            .unwrap();
        assert_eq!(p.resources, [(ResourceKey::Cpu, 1)]);
        let p = new(json!({"scoringStrategy": {"type": "MostAllocated", "resources": []}})).unwrap();
        assert_eq!(p.resources, [(ResourceKey::Cpu, 1), (ResourceKey::Memory, 1)]);
        let e = new(json!({"scoringStrategy": {"resources": [{"name": "cpu"}]}})).unwrap_err();
        assert!(e.starts_with("scoringStrategy.type: Unsupported value: \"\""), "{e}");
    }

    /// A pod of app containers, each requesting `r` (quantities as
    /// kube-scheduler's tests write them: millicores, bytes).
    fn ctrs(rs: &[serde_json::Value]) -> PodInfo {
        pod(
            json!({"containers": rs.iter().map(|r| json!({"name": "c", "resources": {"requests": r}})).collect::<Vec<_>>()}),
        )
    }

    fn sized(name: &str, alloc: serde_json::Value) -> NodeInfo {
        let mut a = alloc;
        a["pods"] = json!("32");
        node(name, json!({}), json!({}), a)
    }

    /// A case: its name, the plugin, the pod, the nodes, the scores wanted.
    type Case<'a> = (&'a str, &'a NodeResourcesFit, PodInfo, Vec<NodeInfo>, Vec<i64>);

    /// kube-scheduler v1.36's score cases (`least_allocated_test.go`,
    /// `most_allocated_test.go`, `TestFitScore`).
    #[test]
    fn kube_scheduler_score_cases() {
        let st = CycleState::default();
        let cm = |cpu: &str, mem: &str| json!({"cpu": cpu, "memory": mem});
        let two = || ctrs(&[cm("1000m", "2000"), cm("2000m", "3000")]);
        let none = || pod(json!({"containers": []}));
        let least = fit(json!({}));
        let most = fit(json!({"scoringStrategy": {"type": "MostAllocated"}}));
        let xyz = |ty: &str, xyz_weight: i64| {
            fit(json!({"scoringStrategy": {"type": ty, "resources": [
                {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "abc.com/xyz", "weight": xyz_weight}]}}))
        };
        let (least_xyz, least_xyz2, most_xyz) = (
            xyz("LeastAllocated", 1),
            xyz("LeastAllocated", 2),
            xyz("MostAllocated", 1),
        );
        let ratio = fit(
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}}}),
        );
        let n = |name: &str, cpu: &str, mem: &str| sized(name, cm(cpu, mem));
        let nx = |name: &str, cpu: &str, mem: &str, x: &str| {
            sized(name, json!({"cpu": cpu, "memory": mem, "abc.com/xyz": x}))
        };
        let on = |node: NodeInfo, pods: &[PodInfo]| pods.iter().fold(node, with_pod);
        let cases: Vec<Case<'_>> = vec![
            (
                "least: nothing scheduled, resources requested, differently sized nodes",
                &least,
                two(),
                vec![n("n1", "4000m", "10000"), n("n2", "6000m", "10000")],
                vec![37, 50],
            ),
            (
                "least: no resources requested, pods scheduled with resources",
                &least,
                none(),
                vec![
                    on(
                        n("n1", "10000m", "20000"),
                        &[ctrs(&[cm("3000m", "0")]), ctrs(&[cm("3000m", "0")])],
                    ),
                    on(
                        n("n2", "10000m", "20000"),
                        &[ctrs(&[cm("3000m", "0")]), ctrs(&[cm("3000m", "5000")])],
                    ),
                ],
                vec![70, 57],
            ),
            (
                "least: resources requested, pods scheduled with resources",
                &least,
                two(),
                vec![
                    on(n("n1", "10000m", "20000"), &[ctrs(&[cm("3000m", "0")])]),
                    on(n("n2", "10000m", "20000"), &[ctrs(&[cm("3000m", "5000")])]),
                ],
                vec![57, 45],
            ),
            (
                "least: bypass extended resource if the pod does not request",
                &least_xyz,
                two(),
                vec![n("n1", "6000m", "10000"), nx("n2", "6000m", "10000", "4")],
                vec![50, 50],
            ),
            (
                "least: honor extended resource if the pod requests",
                &least_xyz,
                ctrs(&[json!({"cpu": "3000m", "memory": "5000", "abc.com/xyz": "2"})]),
                vec![nx("n1", "6000m", "10000", "4"), nx("n2", "6000m", "10000", "10")],
                vec![50, 60],
            ),
            (
                "least: if the node doesn't have a resource",
                &least_xyz2,
                ctrs(&[cm("3000m", "4000")]),
                vec![n("n1", "6000m", "10000"), nx("n2", "6000m", "10000", "4")],
                vec![55, 55],
            ),
            (
                "most: no resources requested, pods scheduled with resources",
                &most,
                none(),
                vec![
                    on(
                        n("n1", "10000m", "20000"),
                        &[ctrs(&[cm("3000m", "0")]), ctrs(&[cm("3000m", "0")])],
                    ),
                    on(
                        n("n2", "10000m", "20000"),
                        &[ctrs(&[cm("3000m", "0")]), ctrs(&[cm("3000m", "5000")])],
                    ),
                ],
                vec![30, 42],
            ),
            (
                "most: resources requested equal node capacity",
                &most,
                ctrs(&[cm("2000m", "4000"), cm("3000m", "5000")]),
                vec![n("n1", "5000m", "10000"), n("n2", "10000m", "9000")],
                vec![95, 75],
            ),
            (
                "most: no resources requested, pods scheduled, nonzero request for resource",
                &most,
                pod(json!({"containers": [{"name": "c"}]})),
                vec![
                    on(
                        n("n1", "250m", "1000Mi"),
                        &[
                            pod(json!({"containers": [{"name": "c"}]})),
                            pod(json!({"containers": [{"name": "c"}]})),
                        ],
                    ),
                    n("n2", "250m", "1000Mi"),
                ],
                vec![80, 30],
            ),
            (
                "most: bypass extended resource if the pod does not request",
                &most_xyz,
                two(),
                vec![n("n1", "6000m", "10000"), nx("n2", "6000m", "10000", "4")],
                vec![50, 50],
            ),
            (
                "fit score: RequestedToCapacityRatio, over capacity drops the resource",
                &ratio,
                ctrs(&[cm("3000m", "5000")]),
                vec![
                    on(n("n1", "4000m", "10000"), &[ctrs(&[cm("2000m", "4000")])]),
                    on(n("n2", "6000m", "10000"), &[ctrs(&[cm("1000m", "2000")])]),
                ],
                vec![10, 32],
            ),
            (
                "fit score: MostAllocated with a sidecar container",
                &most,
                ctrs(&[cm("1000m", "2000")]),
                vec![
                    on(
                        n("n1", "4000m", "10000"),
                        &[pod(json!({
                            "initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"requests": cm("1000m", "2000")}}],
                            "containers": [{"name": "c", "resources": {"requests": cm("1000m", "2000")}}]}))],
                    ),
                    on(n("n2", "4000m", "10000"), &[ctrs(&[cm("1000m", "2000")])]),
                ],
                vec![67, 45],
            ),
            (
                // v1.36's Fit scorer reads the container aggregate for the
                // pod being placed, not its pod-level requests (100m and
                // 200Mi here, where pod level says 2 CPUs and 4Gi).
                "pod-level requests are not what Fit scores the pod by",
                &least,
                pod(json!({"resources": {"requests": {"cpu": "2", "memory": "4Gi"}}, "containers": [{"name": "c"}]})),
                vec![n("n1", "4", "8Gi")],
                vec![97],
            ),
        ];
        for (name, plugin, p, nodes, want) in cases {
            let got: Vec<i64> = nodes.iter().map(|n| plugin.score(&st, &p, n).unwrap()).collect();
            assert_eq!(got, want, "{name}");
        }
        assert!(!least.points().contains(Points::PRE_SCORE), "never skipped");
    }

    #[test]
    fn queueing_hints_ask_for_more_of_what_the_pod_requests() {
        let p = fit(json!({}));
        let pod = pod_req("2", "1Gi");
        let small = node_alloc("n", "1", "8Gi");
        let more_memory = node_alloc("n", "1", "16Gi");
        let more_cpu = node_alloc("n", "4", "8Gi");
        let hint = |old: &NodeInfo, new: &NodeInfo| {
            p.queueing_hint(
                &pod,
                &Change::NodeUpdated {
                    old: &old.node,
                    new: &new.node,
                    action: Action::UPDATE_NODE_ALLOCATABLE,
                },
            )
        };
        assert_eq!(hint(&small, &more_memory), QueueingHint::Skip, "still too little cpu");
        assert_eq!(hint(&small, &more_cpu), QueueingHint::Queue);
        assert_eq!(hint(&more_cpu, &small), QueueingHint::Skip, "shrank");
        let big = Arc::new(pod_req("3", "1Gi"));
        let smaller_mem = Arc::new(pod_req("3", "512Mi"));
        let smaller_cpu = Arc::new(pod_req("1", "1Gi"));
        let scaled = |old: &PodInfo, new: &PodInfo| p.queueing_hint(&pod, &Change::AssignedPodScaledDown { old, new });
        assert_eq!(scaled(&big, &smaller_cpu), QueueingHint::Queue);
        let cpu_only = pod_req("1", "0");
        assert_eq!(
            p.queueing_hint(
                &cpu_only,
                &Change::AssignedPodScaledDown {
                    old: &big,
                    new: &smaller_mem
                }
            ),
            QueueingHint::Skip,
            "freed memory the pod does not ask for"
        );
    }
}
