//! PodTopologySpread: `DoNotSchedule` constraints filter nodes whose
//! domain would exceed `maxSkew`; `ScheduleAnyway` constraints score nodes
//! by how few matching pods their domains hold. kube-scheduler's
//! semantics, messages and defaults, including its quirks (a
//! `labelSelector: {}` counts no pods, as v1.36 does).
//!
//! Counts are kept per constraint in vectors indexed by the snapshot's
//! domain ids ([`Snapshot::domains`]).

use std::sync::Arc;

use serde::Deserialize;

use crate::cache::{DomainCounts, Domains, Snapshot};
use crate::constraints::{SpreadConstraint, WhenUnsatisfiable};
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, MAX_NODE_SCORE, Plugin, Points, Status};
use crate::node::{Labels, NodeData, NodeInfo, TaintEffect};
use crate::plugins::node_affinity::NodeAffinity;
use crate::pod::{PodInfo, tolerated};
use crate::selector::LabelSelector;

/// A node's domain would exceed `maxSkew`.
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str = "node(s) didn't match pod topology spread constraints";
/// A node lacks a constraint's topology key.
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

const PRE_FILTER_KEY: &str = "PreFilterPodTopologySpread";
const PRE_SCORE_KEY: &str = "PreScorePodTopologySpread";
const HOSTNAME: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

/// A default constraint from the plugin's args (no selector: it is
/// derived for each pod from the workloads that select it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DefaultConstraint {
    /// `maxSkew`.
    pub max_skew: i32,
    /// `topologyKey`.
    pub topology_key: String,
    /// `whenUnsatisfiable`.
    pub when_unsatisfiable: String,
    /// Must be absent.
    #[serde(default)]
    pub label_selector: Option<serde_json::Value>,
    /// `minDomains`.
    #[serde(default)]
    pub min_domains: Option<i32>,
    /// `nodeAffinityPolicy`.
    #[serde(default)]
    pub node_affinity_policy: Option<String>,
    /// `nodeTaintsPolicy`.
    #[serde(default)]
    pub node_taints_policy: Option<String>,
    /// `matchLabelKeys`.
    #[serde(default)]
    pub match_label_keys: Option<Vec<String>>,
}

/// `PodTopologySpreadArgs`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodTopologySpreadArgs {
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub kind: Option<String>,
    /// Constraints for pods that state none (`defaultingType: List`).
    #[serde(default)]
    pub default_constraints: Vec<DefaultConstraint>,
    /// `System` (the default: hostname maxSkew 3 and zone maxSkew 5,
    /// ScheduleAnyway) or `List`.
    #[serde(default)]
    pub defaulting_type: Option<String>,
}

/// The PodTopologySpread filter and score.
#[derive(Debug)]
pub struct PodTopologySpread {
    defaults: Vec<SpreadConstraint>,
    system_defaulted: bool,
}

impl Default for PodTopologySpread {
    fn default() -> Self {
        Self::new(PodTopologySpreadArgs::default()).expect("defaults are valid")
    }
}

fn system_default(key: &str, max_skew: i64) -> SpreadConstraint {
    SpreadConstraint {
        max_skew,
        topology_key: key.to_owned(),
        when_unsatisfiable: WhenUnsatisfiable::ScheduleAnyway,
        selector: LabelSelector::nothing(),
        min_domains: 1,
        honor_node_affinity: true,
        honor_node_taints: false,
    }
}

impl PodTopologySpread {
    /// Builds the plugin from its args, validated as kube-scheduler does.
    pub fn new(args: PodTopologySpreadArgs) -> Result<Self, String> {
        match args.defaulting_type.as_deref().unwrap_or("System") {
            "System" => {
                if !args.default_constraints.is_empty() {
                    return Err("defaultConstraints: Invalid value: when .defaultingType is \"System\"".into());
                }
                Ok(PodTopologySpread {
                    defaults: vec![system_default(HOSTNAME, 3), system_default(ZONE, 5)],
                    system_defaulted: true,
                })
            }
            "List" => {
                let mut defaults: Vec<SpreadConstraint> = Vec::new();
                for (i, c) in args.default_constraints.iter().enumerate() {
                    let at = format!("defaultConstraints[{i}]");
                    if c.label_selector.is_some() {
                        return Err(format!(
                            "{at}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
                        ));
                    }
                    let spec = k8s_openapi::api::core::v1::PodSpec {
                        topology_spread_constraints: Some(vec![k8s_openapi::api::core::v1::TopologySpreadConstraint {
                            max_skew: c.max_skew,
                            topology_key: c.topology_key.clone(),
                            when_unsatisfiable: c.when_unsatisfiable.clone(),
                            label_selector: Some(Default::default()),
                            min_domains: c.min_domains,
                            node_affinity_policy: c.node_affinity_policy.clone(),
                            node_taints_policy: c.node_taints_policy.clone(),
                            match_label_keys: c.match_label_keys.clone(),
                        }]),
                        ..Default::default()
                    };
                    let mut parsed = SpreadConstraint::parse_all(&spec, &Labels::default(), "PodTopologySpreadArgs")
                        .map_err(|e| {
                            let field = e.field.trim_start_matches("spec.topologySpreadConstraints[0]");
                            format!("{at}{field}: {}", e.reason)
                        })?;
                    let c = parsed.remove(0);
                    if defaults
                        .iter()
                        .any(|d| d.topology_key == c.topology_key && d.when_unsatisfiable == c.when_unsatisfiable)
                    {
                        return Err(format!(
                            "{at}: Duplicate value: {{{:?}, {:?}}}",
                            c.topology_key, c.when_unsatisfiable
                        ));
                    }
                    defaults.push(c);
                }
                Ok(PodTopologySpread {
                    defaults,
                    system_defaulted: false,
                })
            }
            other => Err(format!(
                "defaultingType: Unsupported value: {other:?}: supported values: \"System\", \"List\""
            )),
        }
    }

    /// The constraints of `kind` that apply to `pod`: its own, or the
    /// defaults when it states none (with the selector of the workloads
    /// that select it, when known).
    fn constraints(&self, pod: &PodInfo, kind: WhenUnsatisfiable, snapshot: &Snapshot) -> Vec<SpreadConstraint> {
        if !pod.spread_constraints.is_empty() {
            return pod
                .spread_constraints
                .iter()
                .filter(|c| c.when_unsatisfiable == kind)
                .cloned()
                .collect();
        }
        if !self.defaults.iter().any(|c| c.when_unsatisfiable == kind) {
            return Vec::new();
        }
        let Some(selector) = snapshot.workloads.default_selector(pod) else {
            return Vec::new();
        };
        self.defaults
            .iter()
            .filter(|c| c.when_unsatisfiable == kind)
            .map(|c| SpreadConstraint {
                selector: selector.clone(),
                ..c.clone()
            })
            .collect()
    }
}

/// Whether the pods of a shape count for a constraint: same namespace,
/// not terminating, selected (none for an empty selector, as
/// kube-scheduler v1.36 counts).
fn counts(selector: &LabelSelector, ns: &str, p: &PodInfo) -> bool {
    !selector.is_everything() && !p.deleting && p.namespace == ns && selector.matches(&p.labels)
}

/// Per shape id, whether its pods count for `selector` in `ns`.
fn counting_shapes(snapshot: &Snapshot, selector: &LabelSelector, ns: &str) -> Vec<bool> {
    let mut out = vec![false; snapshot.shape_ids()];
    for (id, shape) in snapshot.shapes() {
        out[id as usize] = counts(selector, ns, &shape.rep);
    }
    out
}

/// Whether the node counts for the constraint (`nodeAffinityPolicy`,
/// `nodeTaintsPolicy`).
fn included(c: &SpreadConstraint, pod: &PodInfo, node: &NodeData) -> bool {
    if c.honor_node_affinity && !NodeAffinity::matches_node(pod, node) {
        return false;
    }
    if c.honor_node_taints
        && node.taints.iter().any(|t| {
            matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute) && !tolerated(&pod.tolerations, t)
        })
    {
        return false;
    }
    true
}

fn has_all_keys(constraints: &[SpreadConstraint], labels: &Labels) -> bool {
    constraints.iter().all(|c| labels.contains_key(&c.topology_key))
}

/// One constraint's counts per domain.
struct Counted {
    c: SpreadConstraint,
    /// Matching pods per domain of the constraint's key.
    counts: DomainCounts,
    /// Whether a domain has an eligible node (PreFilter) or a feasible one
    /// (PreScore).
    present: Vec<bool>,
    /// Per shape id: whether its pods count.
    shapes: Vec<bool>,
}

impl Counted {
    fn new(c: &SpreadConstraint, pod: &PodInfo, snapshot: &Snapshot) -> Self {
        let counts = DomainCounts::new(snapshot, &c.topology_key);
        Counted {
            present: vec![false; counts.domains.len()],
            shapes: counting_shapes(snapshot, &c.selector, &pod.namespace),
            counts,
            c: c.clone(),
        }
    }

    /// Adds the counted pods of every shape on the nodes `eligible` says
    /// yes to (by snapshot position) whose domain is present.
    fn count(&mut self, snapshot: &Snapshot, eligible: &[bool]) {
        for (id, shape) in snapshot.shapes() {
            if !self.shapes[id as usize] {
                continue;
            }
            for (pos, n) in snapshot.positions(shape) {
                let d = self.counts.domains.of_node[pos];
                if eligible[pos] && d != Domains::NONE && self.present[d as usize] {
                    self.counts.counts[d as usize] += n;
                }
            }
        }
    }
}

/// Whether the node at `pos` has every constraint's key.
fn has_all_domains(counted: &[Counted], pos: usize) -> bool {
    counted.iter().all(|k| k.counts.domains.of_node[pos] != Domains::NONE)
}

/// Per snapshot position, whether the node counts for constraint `k`:
/// it has every constraint's key (when `require_all`) and passes the
/// constraint's node inclusion policies.
fn eligible(counted: &[Counted], k: usize, require_all: bool, pod: &PodInfo, snapshot: &Snapshot) -> Vec<bool> {
    let c = &counted[k].c;
    let policies = policies_apply(c, pod);
    (0..snapshot.len())
        .map(|pos| {
            (!require_all || has_all_domains(counted, pos))
                && (!policies || included(c, pod, &snapshot.nodes[pos].node))
        })
        .collect()
}

/// Whether node inclusion policies need each node looked at (otherwise
/// every node is included).
fn policies_apply(c: &SpreadConstraint, pod: &PodInfo) -> bool {
    (c.honor_node_affinity && (!pod.node_selector.is_empty() || pod.required_affinity.is_some())) || c.honor_node_taints
}

struct PreFilterState {
    constraints: Vec<Counted>,
    /// Per constraint: the global minimum (0 below `minDomains`).
    min: Vec<i64>,
}

struct PreScoreState {
    constraints: Vec<Counted>,
    weights: Vec<f64>,
    require_all: bool,
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &str {
        super::names::POD_TOPOLOGY_SPREAD
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::PRE_SCORE | Points::SCORE
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent {
                resource: Resource::AssignedPod,
                action: Action::ADD | Action::UPDATE_POD_LABEL | Action::UPDATE_POD_TOLERATION | Action::DELETE,
            },
            ClusterEvent {
                resource: Resource::Node,
                action: Action::ADD | Action::DELETE | Action::UPDATE_NODE_LABEL | Action::UPDATE_NODE_TAINT,
            },
        ]
    }

    /// kube-scheduler's hints: a bound pod of the same namespace that
    /// starts or stops being counted; a node that gains or loses the
    /// topology keys, or changes their values or its taints.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        // The pod's own hard constraints (a default one, whose selector
        // depends on the cluster's workloads, retries on every change).
        if pod.spread_constraints.is_empty()
            && self
                .defaults
                .iter()
                .any(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
        {
            return QueueingHint::Queue;
        }
        let cs: Vec<SpreadConstraint> = pod
            .spread_constraints
            .iter()
            .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
            .cloned()
            .collect();
        let selects = |p: &PodInfo| p.namespace == pod.namespace && cs.iter().any(|c| c.selector.matches(&p.labels));
        let queue = match change {
            Change::AssignedPodAdded(p) | Change::AssignedPodDeleted(p) => selects(p),
            Change::AssignedPodRelabelled { old, new } => {
                old.namespace == pod.namespace
                    && cs
                        .iter()
                        .any(|c| c.selector.matches(&old.labels) != c.selector.matches(&new.labels))
            }
            Change::PodUpdated { old, new, .. } => {
                old.tolerations != new.tolerations && cs.iter().any(|c| c.honor_node_taints)
            }
            Change::NodeAdded(n) => has_all_keys(&cs, &n.labels),
            Change::NodeUpdated { old, new, .. } => {
                let (o, n) = (has_all_keys(&cs, &old.labels), has_all_keys(&cs, &new.labels));
                o != n
                    || (n
                        && (cs
                            .iter()
                            .any(|c| old.labels.get(&c.topology_key) != new.labels.get(&c.topology_key))
                            || old.taints != new.taints))
            }
            _ => false,
        };
        if queue { QueueingHint::Queue } else { QueueingHint::Skip }
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        let cs = self.constraints(pod, WhenUnsatisfiable::DoNotSchedule, snapshot);
        if cs.is_empty() {
            return Status::skip();
        }
        let mut counted: Vec<Counted> = cs.iter().map(|c| Counted::new(c, pod, snapshot)).collect();
        for k in 0..counted.len() {
            let eligible = eligible(&counted, k, true, pod, snapshot);
            let k = &mut counted[k];
            for (pos, ok) in eligible.iter().enumerate() {
                if *ok {
                    k.present[k.counts.domains.of_node[pos] as usize] = true;
                }
            }
            k.count(snapshot, &eligible);
        }
        let min = counted
            .iter()
            .map(|k| {
                let domains = k.present.iter().filter(|p| **p).count() as i64;
                if domains < k.c.min_domains {
                    return 0;
                }
                k.counts
                    .counts
                    .iter()
                    .zip(&k.present)
                    .filter(|(_, p)| **p)
                    .map(|(c, _)| *c)
                    .min()
                    .unwrap_or(0)
            })
            .collect();
        state.write(
            PRE_FILTER_KEY,
            PreFilterState {
                constraints: counted,
                min,
            },
        );
        Status::success()
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_KEY) else {
            return Status::error(format!("reading {PRE_FILTER_KEY:?} from cycleState: not found"));
        };
        for (k, min) in s.constraints.iter().zip(&s.min) {
            let d = k.counts.domains.of(&k.c.topology_key, &node.node);
            if d == Domains::NONE {
                return Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
            }
            let d = d as usize;
            let matched = if k.present[d] { k.counts.counts[d] } else { 0 };
            let self_match = i64::from(k.c.selector.matches(&pod.labels));
            if matched + self_match - min > k.c.max_skew {
                return Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nodes: &[&Arc<NodeInfo>],
    ) -> Status {
        if snapshot.is_empty() {
            return Status::skip();
        }
        let cs = self.constraints(pod, WhenUnsatisfiable::ScheduleAnyway, snapshot);
        if cs.is_empty() {
            return Status::skip();
        }
        let require_all = !pod.spread_constraints.is_empty() || !self.system_defaulted;
        let mut counted: Vec<Counted> = cs.iter().map(|c| Counted::new(c, pod, snapshot)).collect();
        // Domains are those of the feasible nodes (a node without the key,
        // allowed under system defaults, makes one more, empty-valued,
        // domain for the weight).
        let mut ignored = 0usize;
        let mut keyless = vec![false; counted.len()];
        for n in nodes {
            let labels = &n.node.labels;
            if require_all && !has_all_keys(&cs, labels) {
                ignored += 1;
                continue;
            }
            for (i, k) in counted.iter_mut().enumerate() {
                match k.counts.domains.of(&k.c.topology_key, &n.node) {
                    Domains::NONE => keyless[i] = true,
                    d => k.present[d as usize] = true,
                }
            }
        }
        let weights = counted
            .iter()
            .zip(&keyless)
            .map(|(k, keyless)| {
                let size = if k.c.topology_key == HOSTNAME {
                    nodes.len() - ignored
                } else {
                    k.present.iter().filter(|p| **p).count() + usize::from(*keyless)
                };
                ((size + 2) as f64).ln()
            })
            .collect();
        // Counts over every node of those domains, feasible or not.
        for k in 0..counted.len() {
            if counted[k].c.topology_key == HOSTNAME {
                continue; // counted per node in Score
            }
            let eligible = eligible(&counted, k, require_all, pod, snapshot);
            counted[k].count(snapshot, &eligible);
        }
        state.write(
            PRE_SCORE_KEY,
            PreScoreState {
                constraints: counted,
                weights,
                require_all,
            },
        );
        Status::success()
    }

    /// The raw score: lower is better; −1 marks a node ignored for lacking
    /// a key (NormalizeScore gives it 0).
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_KEY) else {
            return Err(Status::error(format!(
                "reading {PRE_SCORE_KEY:?} from cycleState: not found"
            )));
        };
        let labels = &node.node.labels;
        if s.require_all && !s.constraints.iter().all(|k| labels.contains_key(&k.c.topology_key)) {
            return Ok(-1);
        }
        let mut score = 0f64;
        for (k, w) in s.constraints.iter().zip(&s.weights) {
            let d = k.counts.domains.of(&k.c.topology_key, &node.node);
            if d == Domains::NONE {
                continue;
            }
            let count = if k.c.topology_key == HOSTNAME {
                node.usage
                    .shapes
                    .iter()
                    .filter(|(id, _)| k.shapes.get(*id as usize).copied().unwrap_or(false))
                    .map(|(_, c)| i64::from(*c))
                    .sum()
            } else {
                k.counts.counts[d as usize]
            };
            score += count as f64 * w + (k.c.max_skew - 1) as f64;
        }
        Ok(score.round() as i64)
    }

    /// `100 × (max + min − score) / max`; ignored nodes 0; all 100 when
    /// every score is 0.
    fn normalize_scores(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) -> Status {
        let valid = || scores.iter().copied().filter(|s| *s >= 0);
        let min = valid().min().unwrap_or(0);
        let max = valid().max().unwrap_or(0).max(0);
        for s in scores.iter_mut() {
            *s = if *s < 0 {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *s) / max
            };
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    //! Cases ported from kube-scheduler's PodTopologySpread tests (the
    //! situations and expected answers; the code is this crate's).
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::{cluster, spec_pod};
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::{Value, json};

    const T: &str = "node.kubernetes.io/unschedulable";

    /// `[maxSkew, key, DoNotSchedule|ScheduleAnyway, selector]` plus extra fields.
    fn c(max_skew: i32, key: &str, when: &str, selector: Value, extra: Value) -> Value {
        let mut v = json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when});
        if !selector.is_null() {
            v["labelSelector"] = selector;
        }
        if let Value::Object(m) = extra {
            for (k, x) in m {
                v[k] = x;
            }
        }
        v
    }
    fn exists(k: &str) -> Value {
        json!({"matchExpressions": [{"key": k, "operator": "Exists"}]})
    }
    fn dns(max_skew: i32, key: &str, sel: Value) -> Value {
        c(max_skew, key, "DoNotSchedule", sel, json!({}))
    }
    fn sa(max_skew: i32, key: &str, sel: Value) -> Value {
        c(max_skew, key, "ScheduleAnyway", sel, json!({}))
    }

    /// Existing pods: `(name, node, labels)` in `default`.
    fn pods(list: &[(&str, &str, Value)]) -> Vec<Pod> {
        list.iter()
            .map(|(n, node, l)| spec_pod(n, "default", l.clone(), node, json!({})))
            .collect()
    }
    fn foo(n: &str, node: &str) -> (String, String, Value) {
        (n.into(), node.into(), json!({"foo": ""}))
    }
    /// `counts[i]` pods labelled foo on node `names[i]`.
    fn foo_pods(names: &[&str], counts: &[usize]) -> Vec<Pod> {
        let mut out = Vec::new();
        for (node, n) in names.iter().zip(counts) {
            for i in 0..*n {
                let (name, node, l) = foo(&format!("p-{node}-{i}"), node);
                out.push(spec_pod(&name, "default", l, &node, json!({})));
            }
        }
        out
    }

    type N = (&'static str, Value, Value);
    fn z4() -> Vec<N> {
        ["node-a", "node-b", "node-x", "node-y"]
            .iter()
            .map(|n| {
                let zone = if n.ends_with('a') || n.ends_with('b') {
                    "zone1"
                } else {
                    "zone2"
                };
                (*n, json!({"zone": zone, "node": n}), json!({}))
            })
            .collect()
    }
    fn by(key: &str, names: &[&'static str]) -> Vec<N> {
        names.iter().map(|n| (*n, json!({key: n}), json!({}))).collect()
    }

    fn incoming(labels: Value, spec: Value) -> PodInfo {
        PodInfo::from_pod(&spec_pod("p", "default", labels, "", spec)).unwrap()
    }

    /// Filter verdicts: `S`, `U`, `UU` per node, or `skip`.
    fn filter(nodes: &[N], existing: &[Pod], pod: &PodInfo) -> Vec<&'static str> {
        let snap = cluster(nodes, existing, &[]);
        let pl = PodTopologySpread::default();
        let mut st = CycleState::default();
        if pl.pre_filter(&mut st, pod, &snap).is_skip() {
            return vec!["skip"; nodes.len()];
        }
        nodes
            .iter()
            .map(|(name, ..)| {
                let n = snap.nodes.iter().find(|n| n.name() == *name).unwrap();
                let s = pl.filter(&st, pod, n);
                match s.code() {
                    Code::Success => "S",
                    Code::Unschedulable => {
                        assert_eq!(s.message(), ERR_REASON_CONSTRAINTS_NOT_MATCH);
                        "U"
                    }
                    Code::UnschedulableAndUnresolvable => {
                        assert_eq!(s.message(), ERR_REASON_NODE_LABEL_NOT_MATCH);
                        "UU"
                    }
                    other => panic!("{other:?}: {}", s.message()),
                }
            })
            .collect()
    }

    fn spread(cs: Vec<Value>) -> Value {
        json!({"topologySpreadConstraints": cs})
    }

    #[test]
    fn single_constraint_filter() {
        let f = || json!({"foo": ""});
        let zone_foo = || spread(vec![dns(1, "zone", exists("foo"))]);
        let node_foo = |skew| spread(vec![dns(skew, "node", exists("foo"))]);
        let abxy = ["node-a", "node-b", "node-x", "node-y"];
        assert_eq!(filter(&z4(), &[], &incoming(f(), zone_foo())), ["S"; 4]);
        assert_eq!(
            filter(&z4(), &[], &incoming(f(), spread(vec![dns(1, "zone", exists("bar"))]))),
            ["S"; 4]
        );
        // Pods of other namespaces do not count: zone1 0, zone2 2.
        let mut e = vec![
            spec_pod("a1", "ns1", f(), "node-a", json!({})),
            spec_pod("b1", "ns2", f(), "node-a", json!({})),
        ];
        e.extend(pods(&[("x1", "node-x", f()), ("y1", "node-y", f())]));
        assert_eq!(filter(&z4(), &e, &incoming(f(), zone_foo())), ["S", "S", "U", "U"]);
        // An absent selector counts nothing and selects nothing.
        let e = pods(&[("x1", "node-x", f()), ("y1", "node-y", f())]);
        assert_eq!(
            filter(&z4(), &e, &incoming(f(), spread(vec![dns(1, "zone", Value::Null)]))),
            ["S"; 4]
        );
        assert_eq!(
            filter(&z4(), &foo_pods(&abxy, &[2, 1, 0, 3]), &incoming(f(), zone_foo())),
            ["S"; 4]
        );
        // node-b lacks the key: unresolvable there, and not counted.
        let mut nodes = z4();
        nodes[1].1 = json!({"zon": "zone1", "node": "node-b"});
        assert_eq!(
            filter(&nodes, &foo_pods(&abxy, &[1, 1, 1, 1]), &incoming(f(), zone_foo())),
            ["S", "UU", "U", "U"]
        );
        let two = [z4()[0].clone(), z4()[2].clone()];
        assert_eq!(
            filter(&two, &[], &incoming(f(), spread(vec![dns(1, "rack", exists("foo"))]))),
            ["UU", "UU"]
        );
        // Per node: 2/1/0/3.
        let e = foo_pods(&abxy, &[2, 1, 0, 3]);
        assert_eq!(filter(&z4(), &e, &incoming(f(), node_foo(1))), ["U", "U", "S", "U"]);
        assert_eq!(filter(&z4(), &e, &incoming(f(), node_foo(2))), ["U", "S", "S", "U"]);
        assert_eq!(
            filter(&z4(), &e, &incoming(json!({"bar": ""}), node_foo(1))),
            ["U", "S", "S", "U"]
        );
        // Node affinity: only node-a (2) and node-y (3) count, min 2.
        let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node", "operator": "In", "values": ["node-a", "node-y"]}]}]}}});
        let mut spec = node_foo(1);
        spec["affinity"] = affinity;
        assert_eq!(filter(&z4(), &e, &incoming(f(), spec)), ["S", "S", "S", "U"]);
        // A terminating pod does not count.
        let mut terminating = spec_pod("p-a", "default", f(), "node-a", json!({}));
        terminating.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        let e = vec![terminating, spec_pod("p-b", "default", f(), "node-b", json!({}))];
        assert_eq!(
            filter(&by("node", &["node-a", "node-b"]), &e, &incoming(f(), node_foo(1))),
            ["S", "U"]
        );
        // minDomains: 3 domains < 4, the global minimum is 0.
        let abc = ["node-a", "node-b", "node-c"];
        let e = foo_pods(&abc, &[2, 2, 1]);
        let md = |m| {
            spread(vec![c(
                2,
                "node",
                "DoNotSchedule",
                exists("foo"),
                json!({"minDomains": m}),
            )])
        };
        assert_eq!(filter(&by("node", &abc), &e, &incoming(f(), md(4))), ["U", "U", "S"]);
        assert_eq!(filter(&by("node", &abc), &e, &incoming(f(), md(2))), ["S", "S", "S"]);
        let e = foo_pods(&abxy, &[1, 1, 0, 1]);
        let zmd = |m| {
            spread(vec![c(
                2,
                "zone",
                "DoNotSchedule",
                exists("foo"),
                json!({"minDomains": m}),
            )])
        };
        assert_eq!(filter(&z4(), &e, &incoming(f(), zmd(3))), ["U", "U", "S", "S"]);
        assert_eq!(filter(&z4(), &e, &incoming(f(), zmd(1))), ["S"; 4]);
        // nodeAffinityPolicy: Honor leaves node-y (no foo label) out of the count; Ignore counts it.
        let labelled: Vec<N> = abxy
            .iter()
            .map(|n| {
                (
                    *n,
                    if *n == "node-y" {
                        json!({"node": n})
                    } else {
                        json!({"node": n, "foo": ""})
                    },
                    json!({}),
                )
            })
            .collect();
        let e = foo_pods(&abxy, &[1, 1, 0, 1]);
        let mut honor = node_foo(1);
        honor["nodeSelector"] = json!({"foo": ""});
        assert_eq!(filter(&labelled, &e, &incoming(f(), honor)), ["U", "U", "S", "S"]);
        let mut ignore = spread(vec![c(
            1,
            "node",
            "DoNotSchedule",
            exists("foo"),
            json!({"nodeAffinityPolicy": "Ignore"}),
        )]);
        ignore["nodeSelector"] = json!({"foo": ""});
        assert_eq!(filter(&labelled, &e, &incoming(f(), ignore)), ["U", "U", "S", "U"]);
        // nodeTaintsPolicy: Honor leaves the tainted node-y out; Ignore (default) counts it.
        let mut tainted = labelled.clone();
        tainted[3].2 = json!({"taints": [{"key": T, "effect": "NoSchedule"}]});
        let honor = spread(vec![c(
            1,
            "node",
            "DoNotSchedule",
            exists("foo"),
            json!({"nodeTaintsPolicy": "Honor"}),
        )]);
        assert_eq!(filter(&tainted, &e, &incoming(f(), honor)), ["U", "U", "S", "S"]);
        assert_eq!(filter(&tainted, &e, &incoming(f(), node_foo(1))), ["U", "U", "S", "U"]);
    }

    #[test]
    fn multiple_constraints_filter() {
        let abxy = ["node-a", "node-b", "node-x", "node-y"];
        let fb = |f: bool, b: bool| {
            let mut l = json!({});
            if f {
                l["foo"] = json!("");
            }
            if b {
                l["bar"] = json!("");
            }
            l
        };
        let both = spread(vec![dns(1, "zone", exists("foo")), dns(1, "node", exists("foo"))]);
        assert_eq!(
            filter(
                &z4(),
                &foo_pods(&abxy, &[2, 1, 0, 3]),
                &incoming(fb(true, false), both.clone())
            ),
            ["U", "U", "S", "U"]
        );
        assert_eq!(
            filter(
                &z4(),
                &foo_pods(&abxy, &[2, 1, 0, 4]),
                &incoming(fb(true, false), both.clone())
            ),
            ["U"; 4]
        );
        let zone_node = spread(vec![dns(1, "zone", exists("foo")), dns(1, "node", exists("bar"))]);
        let e = pods(&[("a1", "node-a", fb(true, false)), ("y1", "node-y", fb(false, true))]);
        assert_eq!(
            filter(&z4(), &e, &incoming(fb(true, true), zone_node.clone())),
            ["U", "U", "S", "U"]
        );
        let e = pods(&[
            ("a1", "node-a", fb(true, false)),
            ("x1", "node-x", fb(false, true)),
            ("y1", "node-y", fb(false, true)),
        ]);
        assert_eq!(
            filter(&z4(), &e, &incoming(fb(true, true), zone_node.clone())),
            ["U"; 4]
        );
        assert_eq!(
            filter(&z4(), &e, &incoming(fb(false, true), zone_node)),
            ["S", "S", "U", "U"]
        );
        // node-x lacks the `node` key.
        let mut nodes = z4();
        nodes[2].1 = json!({"zone": "zone2"});
        let e = pods(&[("a1", "node-a", fb(true, false)), ("y3", "node-y", fb(true, false))]);
        assert_eq!(
            filter(&nodes, &e, &incoming(fb(true, false), both)),
            ["U", "S", "UU", "U"]
        );
    }

    #[test]
    fn match_label_keys_are_merged() {
        // Selector "foo exists, bar=a": zone1 1, zone2 1.
        let e = pods(&[
            ("a1", "node-a", json!({"foo": ""})),
            ("a2", "node-a", json!({"foo": "", "bar": "a"})),
            ("b1", "node-b", json!({"foo": ""})),
            ("y1", "node-y", json!({"foo": "", "bar": "a"})),
            ("y2", "node-y", json!({"bar": "a"})),
        ]);
        let with_keys = spread(vec![c(
            1,
            "zone",
            "DoNotSchedule",
            exists("foo"),
            json!({"matchLabelKeys": ["bar"]}),
        )]);
        assert_eq!(
            filter(&z4(), &e, &incoming(json!({"foo": "", "bar": "a"}), with_keys)),
            ["S"; 4]
        );
        // An empty selector with a key counts pods with foo=a: zone1 3, zone2 2.
        let e = pods(&[
            ("a1", "node-a", json!({"foo": "a"})),
            ("a2", "node-a", json!({"foo": "a"})),
            ("b1", "node-b", json!({"foo": "a"})),
            ("y1", "node-y", json!({"foo": "a"})),
            ("y2", "node-y", json!({"foo": "a"})),
        ]);
        let empty_keyed = spread(vec![c(
            1,
            "zone",
            "DoNotSchedule",
            json!({}),
            json!({"matchLabelKeys": ["foo"]}),
        )]);
        assert_eq!(
            filter(&z4(), &e, &incoming(json!({"foo": "a"}), empty_keyed)),
            ["U", "U", "S", "S"]
        );
        // A bare empty selector counts nothing (kube-scheduler v1.36).
        let empty = spread(vec![dns(1, "zone", json!({}))]);
        assert_eq!(filter(&z4(), &e, &incoming(json!({"foo": "a"}), empty)), ["S"; 4]);
    }

    /// Normalized scores of the feasible nodes (`feasible` names) with the
    /// snapshot holding `nodes`.
    fn scores(nodes: &[N], feasible: &[&str], existing: &[Pod], pod: &PodInfo) -> Option<Vec<i64>> {
        let snap = cluster(nodes, existing, &[]);
        let pl = PodTopologySpread::default();
        let mut st = CycleState::default();
        let fs: Vec<&Arc<NodeInfo>> = feasible
            .iter()
            .map(|name| snap.nodes.iter().find(|n| n.name() == *name).unwrap())
            .collect();
        if pl.pre_score(&mut st, pod, &snap, &fs).is_skip() {
            return None;
        }
        let mut s: Vec<i64> = fs.iter().map(|n| pl.score(&st, pod, n).unwrap()).collect();
        assert!(pl.normalize_scores(&st, pod, &mut s).is_success());
        Some(s)
    }

    #[test]
    fn scores_like_kube_scheduler() {
        let f = || json!({"foo": ""});
        let h = "kubernetes.io/hostname";
        let host_foo = |skew| spread(vec![sa(skew, h, exists("foo"))]);
        let abcd = ["node-a", "node-b", "node-c", "node-d"];
        let h4 = by(h, &abcd);
        let h2 = by(h, &["node-a", "node-b"]);
        assert_eq!(
            scores(&h2, &["node-a", "node-b"], &[], &incoming(f(), host_foo(1))),
            Some(vec![100, 100])
        );
        assert_eq!(
            scores(
                &h2,
                &["node-a"],
                &foo_pods(&["node-a", "node-b"], &[2, 1]),
                &incoming(f(), host_foo(1))
            ),
            Some(vec![100])
        );
        let e = foo_pods(&abcd, &[2, 1, 0, 3]);
        assert_eq!(
            scores(&h4, &abcd, &e, &incoming(f(), host_foo(1))),
            Some(vec![20, 60, 100, 0])
        );
        assert_eq!(
            scores(&h4, &abcd, &e, &incoming(f(), spread(vec![sa(1, h, Value::Null)]))),
            Some(vec![100; 4])
        );
        assert_eq!(
            scores(&h4, &abcd, &e, &incoming(f(), host_foo(2))),
            Some(vec![33, 66, 100, 16])
        );
        let e = foo_pods(&abcd, &[4, 3, 2, 1]);
        assert_eq!(
            scores(&h4, &abcd, &e, &incoming(f(), host_foo(3))),
            Some(vec![44, 66, 77, 100])
        );
        // A failed node's pods do not count by hostname.
        let abxy = ["node-a", "node-b", "node-x", "node-y"];
        let e = foo_pods(&abxy, &[4, 2, 1, 3]);
        assert_eq!(
            scores(
                &by(h, &abxy),
                &["node-a", "node-b", "node-x"],
                &e,
                &incoming(f(), host_foo(1))
            ),
            Some(vec![33, 83, 100])
        );
        let mut nodes = by(h, &abxy);
        nodes[1].1 = json!({"n": "node-b"});
        assert_eq!(
            scores(&nodes, &["node-a", "node-b", "node-x"], &e, &incoming(f(), host_foo(1))),
            Some(vec![16, 0, 100])
        );
        // By zone, a failed node's pods count in its zone.
        let zoned: Vec<N> = abxy
            .iter()
            .map(|n| {
                (
                    *n,
                    json!({"zone": if *n < "node-c" { "zone1" } else { "zone2" }, h: n}),
                    json!({}),
                )
            })
            .collect();
        assert_eq!(
            scores(
                &zoned,
                &["node-a", "node-b", "node-x"],
                &e,
                &incoming(f(), spread(vec![sa(1, "zone", exists("foo"))]))
            ),
            Some(vec![75, 75, 100])
        );
        let e = foo_pods(&abxy, &[2, 1, 2, 4]);
        let zone_and_host = spread(vec![sa(1, "zone", exists("foo")), sa(1, h, exists("foo"))]);
        assert_eq!(
            scores(&zoned, &["node-a", "node-x"], &e, &incoming(f(), zone_and_host)),
            Some(vec![100, 63])
        );
        // Two constraints with their own selectors.
        let zone_host_bar = spread(vec![sa(1, "zone", exists("foo")), sa(1, h, exists("bar"))]);
        let fb = json!({"foo": "", "bar": ""});
        let e = pods(&[
            ("a1", "node-a", f()),
            ("b1", "node-b", fb.clone()),
            ("y1", "node-y", f()),
            ("y2", "node-y", json!({"bar": ""})),
        ]);
        assert_eq!(
            scores(&zoned, &abxy, &e, &incoming(fb.clone(), zone_host_bar.clone())),
            Some(vec![60, 20, 100, 60])
        );
        assert_eq!(
            scores(
                &zoned,
                &["node-a", "node-b", "node-x"],
                &e,
                &incoming(fb.clone(), zone_host_bar.clone())
            ),
            Some(vec![50, 25, 100])
        );
        let e = pods(&[
            ("b1", "node-b", json!({"bar": ""})),
            ("x1", "node-x", f()),
            ("y1", "node-y", fb.clone()),
        ]);
        assert_eq!(
            scores(&zoned, &abxy, &e, &incoming(fb, zone_host_bar)),
            Some(vec![100, 60, 40, 0])
        );
        // Other namespaces and terminating pods do not count.
        let mut e = vec![spec_pod("a0", "ns1", f(), "node-a", json!({}))];
        e.extend(foo_pods(&["node-a", "node-b"], &[1, 2]));
        assert_eq!(
            scores(&h2, &["node-a", "node-b"], &e, &incoming(f(), host_foo(1))),
            Some(vec![100, 33])
        );
        // minDomains plays no part in scoring.
        let abc = ["node-a", "node-b", "node-c"];
        let e = foo_pods(&abc, &[2, 2, 1]);
        let md = spread(vec![c(
            2,
            "node",
            "ScheduleAnyway",
            exists("foo"),
            json!({"minDomains": 10}),
        )]);
        // (minDomains with ScheduleAnyway is refused by the API; the
        // scoring ignores it, so the plain constraint scores the same.)
        assert!(PodInfo::from_pod(&spec_pod("p", "default", f(), "", md)).is_err());
        assert_eq!(
            scores(
                &by("node", &abc),
                &abc,
                &e,
                &incoming(f(), spread(vec![sa(2, "node", exists("foo"))]))
            ),
            Some(vec![75, 75, 100])
        );
        // Node inclusion policies.
        let labelled: Vec<N> = abc
            .iter()
            .map(|n| {
                (
                    *n,
                    if *n == "node-c" {
                        json!({"node": n})
                    } else {
                        json!({"node": n, "foo": ""})
                    },
                    json!({}),
                )
            })
            .collect();
        let e = foo_pods(&abc, &[2, 1, 1]);
        let mut honor = spread(vec![sa(1, "node", exists("foo"))]);
        honor["nodeSelector"] = json!({"foo": ""});
        assert_eq!(
            scores(&labelled, &abc, &e, &incoming(f(), honor)),
            Some(vec![0, 33, 100])
        );
        let mut ignore = spread(vec![c(
            1,
            "node",
            "ScheduleAnyway",
            exists("foo"),
            json!({"nodeAffinityPolicy": "Ignore"}),
        )]);
        ignore["nodeSelector"] = json!({"foo": ""});
        assert_eq!(
            scores(&labelled, &abc, &e, &incoming(f(), ignore)),
            Some(vec![66, 100, 100])
        );
        let mut tainted = by("node", &abc);
        tainted[2].2 = json!({"taints": [{"key": T, "effect": "NoSchedule"}]});
        let honor = spread(vec![c(
            1,
            "node",
            "ScheduleAnyway",
            exists("foo"),
            json!({"nodeTaintsPolicy": "Honor"}),
        )]);
        assert_eq!(
            scores(&tainted, &abc, &e, &incoming(f(), honor)),
            Some(vec![0, 33, 100])
        );
        assert_eq!(
            scores(
                &tainted,
                &abc,
                &e,
                &incoming(f(), spread(vec![sa(1, "node", exists("foo"))]))
            ),
            Some(vec![66, 100, 100])
        );
        // No soft constraint, no known workload selector: no scoring.
        assert_eq!(scores(&h4, &abcd, &[], &incoming(f(), json!({}))), None);
    }

    /// System defaults (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway)
    /// apply to a pod without constraints of its own, with the selector of
    /// the Service that selects it or of its controller.
    #[test]
    fn system_defaults_use_the_workloads_selector() {
        let h = "kubernetes.io/hostname";
        let abcd = ["node-a", "node-b", "node-c", "node-d"];
        let e = foo_pods(&abcd, &[4, 3, 2, 1]);
        let pl = PodTopologySpread::default();
        let run = |pod: &PodInfo, workloads: &[Value]| {
            let mut snap = cluster(&by(h, &abcd), &e, &[]);
            let mut w = crate::workloads::Workloads::default();
            for v in workloads {
                w.upsert(crate::workloads::Workload::from_value(v).unwrap().unwrap());
            }
            snap.workloads = Arc::new(w);
            let nodes: Vec<&Arc<NodeInfo>> = snap.nodes.iter().collect();
            let mut st = CycleState::default();
            if pl.pre_score(&mut st, pod, &snap, &nodes).is_skip() {
                return None;
            }
            let mut out: Vec<i64> = nodes.iter().map(|n| pl.score(&st, pod, n).unwrap()).collect();
            pl.normalize_scores(&st, pod, &mut out);
            // In the order of `abcd`.
            Some(
                abcd.iter()
                    .map(|name| out[snap.position(name).unwrap()])
                    .collect::<Vec<_>>(),
            )
        };
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"foo": ""}}});
        let plain = incoming(json!({"foo": ""}), json!({}));
        // The zone constraint adds nothing: no node has a zone.
        assert_eq!(run(&plain, std::slice::from_ref(&svc)), Some(vec![44, 66, 77, 100]));
        // Nothing selects the pod: no default spreading.
        assert_eq!(run(&plain, &[]), None);
        let other_ns = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "x"}, "spec": {"selector": {"foo": ""}}});
        assert_eq!(run(&plain, &[other_ns]), None);
        // A ReplicaSet that controls the pod.
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs1", "namespace": "default"},
            "spec": {"selector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}});
        let mut owned = spec_pod("p", "default", json!({"foo": ""}), "", json!({}));
        owned.metadata.owner_references =
            Some(vec![serde_json::from_value(
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs1", "uid": "u", "controller": true}),
        )
        .unwrap()]);
        let owned = PodInfo::from_pod(&owned).unwrap();
        assert_eq!(run(&owned, &[rs]), Some(vec![44, 66, 77, 100]));
        assert_eq!(run(&owned, &[]), None, "the ReplicaSet is not known");
        // A pod with its own (hard) constraints gets no soft defaults.
        let own = incoming(json!({"foo": ""}), spread(vec![dns(1, h, exists("foo"))]));
        assert_eq!(run(&own, &[svc]), None);
    }

    #[test]
    fn args_are_validated() {
        let parse = |v: Value| PodTopologySpread::new(serde_json::from_value(v).unwrap());
        assert!(parse(json!({})).unwrap().system_defaulted);
        assert!(parse(json!({"defaultingType": "List"})).unwrap().defaults.is_empty());
        assert_eq!(
            parse(json!({"defaultingType": "System", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})).unwrap_err(),
            "defaultConstraints: Invalid value: when .defaultingType is \"System\""
        );
        assert!(
            parse(json!({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]}))
                .unwrap_err()
                .contains("must not define a selector")
        );
        assert!(
            parse(json!({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}))
                .unwrap_err()
                .contains("maxSkew")
        );
    }
}
