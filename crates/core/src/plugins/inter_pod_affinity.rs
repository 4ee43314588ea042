//! InterPodAffinity: required pod affinity and anti-affinity filter nodes
//! (with the symmetric rule: an existing pod's required anti-affinity
//! rejects an incoming pod it selects); preferred terms, and existing pods'
//! terms, score them. kube-scheduler's semantics and messages.
//!
//! Counts are kept per topology domain in vectors indexed by the
//! snapshot's domain ids ([`Snapshot::domains`]): PreFilter and PreScore
//! walk the pods once, Filter and Score cost one label lookup per key and
//! node.

use std::sync::Arc;

use serde::Deserialize;

use crate::cache::{DomainCounts, Snapshot};
use crate::constraints::AffinityTerm;
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, MAX_NODE_SCORE, Plugin, Points, Status};
use crate::node::{Labels, NodeData, NodeInfo, no_labels};
use crate::pod::PodInfo;
use crate::selector::LabelSelector;
use crate::shapes::ShapeEntry;

/// The incoming pod's required affinity is not satisfied.
pub const ERR_REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
/// The incoming pod's required anti-affinity is not satisfied.
pub const ERR_REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
/// An existing pod's required anti-affinity selects the incoming pod.
pub const ERR_REASON_EXISTING_ANTI_AFFINITY: &str = "node(s) didn't satisfy existing pods anti-affinity rules";

const PRE_FILTER_KEY: &str = "PreFilterInterPodAffinity";
const PRE_SCORE_KEY: &str = "PreScoreInterPodAffinity";

/// `InterPodAffinityArgs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InterPodAffinityArgs {
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub kind: Option<String>,
    /// The score weight of an existing pod's required affinity term that
    /// selects the incoming pod (0–100, default 1).
    #[serde(default = "default_hard_weight")]
    pub hard_pod_affinity_weight: i64,
    /// Score only by the incoming pod's preferred terms: pods without any
    /// skip scoring.
    #[serde(default)]
    pub ignore_preferred_terms_of_existing_pods: bool,
}

fn default_hard_weight() -> i64 {
    1
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        InterPodAffinityArgs {
            api_version: None,
            kind: None,
            hard_pod_affinity_weight: default_hard_weight(),
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

/// The InterPodAffinity filter and score.
#[derive(Debug)]
pub struct InterPodAffinity {
    hard_weight: i64,
    ignore_existing_preferred: bool,
}

impl Default for InterPodAffinity {
    fn default() -> Self {
        Self::new(InterPodAffinityArgs::default()).expect("defaults are valid")
    }
}

impl InterPodAffinity {
    /// Builds the plugin from its args.
    pub fn new(args: InterPodAffinityArgs) -> Result<Self, String> {
        if !(0..=100).contains(&args.hard_pod_affinity_weight) {
            return Err(format!(
                "hardPodAffinityWeight: Invalid value: {}: not in valid range [0, 100]",
                args.hard_pod_affinity_weight
            ));
        }
        Ok(InterPodAffinity {
            hard_weight: args.hard_pod_affinity_weight,
            ignore_existing_preferred: args.ignore_preferred_terms_of_existing_pods,
        })
    }
}

/// One [`DomainCounts`] per distinct topology key.
#[derive(Debug, Default)]
struct ByKey(Vec<(String, DomainCounts)>);

impl ByKey {
    /// The index of `key`'s counts, made on first use.
    fn slot(&mut self, key: &str, snapshot: &Snapshot) -> usize {
        match self.0.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.0.push((key.to_owned(), DomainCounts::new(snapshot, key)));
                self.0.len() - 1
            }
        }
    }

    /// Adds `weight` × the pods of `shape` to their nodes' domains of `key`;
    /// false when none of their nodes has the key.
    fn add_shape(&mut self, key: &str, snapshot: &Snapshot, shape: &ShapeEntry, weight: i64) -> bool {
        let k = self.slot(key, snapshot);
        let counts = &mut self.0[k].1;
        let mut any = false;
        for (pos, n) in snapshot.positions(shape) {
            any |= counts.add(pos, n * weight);
        }
        any
    }

    /// The count of a node's domain for `key` (`None`: the node lacks it).
    #[inline]
    fn get(&self, key: &str, node: &NodeData) -> Option<i64> {
        self.0.iter().find(|(k, _)| k == key)?.1.at(key, node)
    }

    /// The counts of a node's domains for every key it has.
    fn on<'a>(&'a self, node: &'a NodeData) -> impl Iterator<Item = i64> + 'a {
        self.0.iter().filter_map(move |(k, c)| c.at(k, node))
    }
}

/// The incoming pod's terms with their namespace selectors resolved to
/// namespace names, as kube-scheduler's PreFilter does.
fn resolved(terms: &[AffinityTerm], snapshot: &Snapshot) -> Vec<AffinityTerm> {
    terms
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if !t.namespace_selector.is_everything() {
                for (ns, labels) in snapshot.namespaces.iter() {
                    if t.namespace_selector.matches(labels) && !t.namespaces.contains(ns) {
                        t.namespaces.push(ns.clone());
                    }
                }
                t.namespace_selector = LabelSelector::nothing();
            }
            t
        })
        .collect()
}

/// Whether `pod` matches every term (false when there are none).
fn matches_all(terms: &[AffinityTerm], pod: &PodInfo, ns_labels: &Labels) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod, ns_labels))
}

struct PreFilterState {
    affinity: Vec<AffinityTerm>,
    anti: Vec<AffinityTerm>,
    existing_anti: ByKey,
    affinity_counts: ByKey,
    anti_counts: ByKey,
    /// Whether any existing pod matched all affinity terms anywhere.
    affinity_matched: bool,
    anti_matched: bool,
    existing_anti_matched: bool,
    /// The first-pod rule: the pod matches its own affinity terms.
    self_match: bool,
}

struct PreScoreState {
    scores: ByKey,
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &str {
        super::names::INTER_POD_AFFINITY
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::PRE_SCORE | Points::SCORE
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent {
                resource: Resource::AssignedPod,
                action: Action::ADD | Action::UPDATE_POD_LABEL | Action::DELETE,
            },
            ClusterEvent {
                resource: Resource::Node,
                action: Action::ADD | Action::UPDATE_NODE_LABEL,
            },
            ClusterEvent {
                resource: Resource::Namespace,
                action: Action::ALL,
            },
        ]
    }

    /// kube-scheduler's hints: a bound pod that starts matching all the
    /// pod's affinity terms, or stops matching its anti-affinity terms, or
    /// leaves (if it matched them, or its own anti-affinity selected the
    /// pod); a node that gains or changes a topology key of the terms; a
    /// namespace relabelled that a term's namespace selector may select.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let Some(a) = &pod.pod_affinity else {
            return QueueingHint::Skip;
        };
        let (aff, anti) = (&a.required_affinity, &a.required_anti_affinity);
        let none = no_labels();
        let queue = match change {
            Change::AssignedPodAdded(p) => matches_all(aff, p, none),
            Change::AssignedPodRelabelled { old, new } => {
                (!matches_all(aff, old, none) && matches_all(aff, new, none))
                    || (matches_all(anti, old, none) && !matches_all(anti, new, none))
            }
            // Beyond kube-scheduler's hint: the deleted pod's own required
            // anti-affinity may have been what rejected this pod.
            Change::AssignedPodDeleted(old) => {
                matches_all(anti, old, none)
                    || old
                        .pod_affinity
                        .as_ref()
                        .is_some_and(|o| !o.required_anti_affinity.is_empty())
            }
            Change::NodeAdded(n) => !anti.is_empty() || aff.iter().any(|t| n.labels.contains_key(&t.topology_key)),
            Change::NodeUpdated { old, new, .. } => {
                let changed = |k: &str| old.labels.get(k) != new.labels.get(k);
                aff.iter()
                    .any(|t| new.labels.contains_key(&t.topology_key) && changed(&t.topology_key))
                    || anti
                        .iter()
                        .any(|t| old.labels.contains_key(&t.topology_key) && changed(&t.topology_key))
            }
            Change::NamespaceChanged { name } => {
                *name == pod.namespace || aff.iter().chain(anti).any(|t| !t.namespace_selector.is_nothing())
            }
            _ => false,
        };
        if queue { QueueingHint::Queue } else { QueueingHint::Skip }
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        let (aff, anti) = match &pod.pod_affinity {
            Some(a) => (&a.required_affinity[..], &a.required_anti_affinity[..]),
            None => (&[][..], &[][..]),
        };
        if aff.is_empty() && anti.is_empty() && snapshot.pods_with_required_anti_affinity == 0 {
            return Status::skip();
        }
        let ns_labels = snapshot.namespace_labels(&pod.namespace);
        let mut s = PreFilterState {
            affinity: resolved(aff, snapshot),
            anti: resolved(anti, snapshot),
            existing_anti: ByKey::default(),
            affinity_counts: ByKey::default(),
            anti_counts: ByKey::default(),
            affinity_matched: false,
            anti_matched: false,
            existing_anti_matched: false,
            self_match: false,
        };
        s.self_match = matches_all(&s.affinity, pod, no_labels());
        // Every key of the pod's terms has its domains, matched or not: a
        // node lacking the key is told apart from a domain with no pods.
        for t in &s.affinity {
            s.affinity_counts.slot(&t.topology_key, snapshot);
        }
        for t in &s.anti {
            s.anti_counts.slot(&t.topology_key, snapshot);
        }
        let none = no_labels();
        // Once per shape of pods, not per pod: replicas share a shape.
        for (_, shape) in snapshot.shapes() {
            let p = &shape.rep;
            if let Some(pa) = &p.pod_affinity {
                for t in &pa.required_anti_affinity {
                    if t.matches(pod, ns_labels) {
                        s.existing_anti_matched |= s.existing_anti.add_shape(&t.topology_key, snapshot, shape, 1);
                    }
                }
            }
            if matches_all(&s.affinity, p, none) {
                for t in &s.affinity {
                    s.affinity_matched |= s.affinity_counts.add_shape(&t.topology_key, snapshot, shape, 1);
                }
            }
            for t in &s.anti {
                if t.matches(p, none) {
                    s.anti_matched |= s.anti_counts.add_shape(&t.topology_key, snapshot, shape, 1);
                }
            }
        }
        if !s.existing_anti_matched && s.affinity.is_empty() && s.anti.is_empty() {
            return Status::skip();
        }
        state.write(PRE_FILTER_KEY, s);
        Status::success()
    }

    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_KEY) else {
            return Status::error(format!("error reading {PRE_FILTER_KEY:?} from cycleState: not found"));
        };
        let n = &*node.node;
        // Required affinity; the first pod of a group that selects itself
        // may go wherever the topology keys exist.
        let mut pods_exist = true;
        for t in &s.affinity {
            match s.affinity_counts.get(&t.topology_key, n) {
                None => return Status::unresolvable(ERR_REASON_AFFINITY),
                Some(c) if c <= 0 => pods_exist = false,
                Some(_) => {}
            }
        }
        if !pods_exist && (s.affinity_matched || !s.self_match) {
            return Status::unresolvable(ERR_REASON_AFFINITY);
        }
        if s.anti_matched
            && s.anti
                .iter()
                .any(|t| s.anti_counts.get(&t.topology_key, n).is_some_and(|c| c > 0))
        {
            return Status::unschedulable(ERR_REASON_ANTI_AFFINITY);
        }
        if s.existing_anti_matched && s.existing_anti.on(n).any(|c| c > 0) {
            return Status::unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY);
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
        let (pref_aff, pref_anti) = match &pod.pod_affinity {
            Some(a) => (&a.preferred_affinity[..], &a.preferred_anti_affinity[..]),
            None => (&[][..], &[][..]),
        };
        let has_constraints = !pref_aff.is_empty() || !pref_anti.is_empty();
        if nodes.is_empty() || (self.ignore_existing_preferred && !has_constraints) {
            return Status::skip();
        }
        if !has_constraints && snapshot.pods_with_affinity == 0 {
            return Status::skip();
        }
        let ns_labels = snapshot.namespace_labels(&pod.namespace);
        let none = no_labels();
        let resolve = |terms: &[crate::constraints::WeightedTerm]| -> Vec<(i64, AffinityTerm)> {
            let plain: Vec<AffinityTerm> = terms.iter().map(|w| w.term.clone()).collect();
            terms.iter().map(|w| w.weight).zip(resolved(&plain, snapshot)).collect()
        };
        let (pref_aff, pref_anti) = (resolve(pref_aff), resolve(pref_anti));
        let mut scores = ByKey::default();
        let mut contributed = false;
        for (_, shape) in snapshot.shapes() {
            let p = &shape.rep;
            if !has_constraints && p.pod_affinity.is_none() {
                continue;
            }
            for (w, t) in &pref_aff {
                if t.matches(p, none) {
                    contributed |= scores.add_shape(&t.topology_key, snapshot, shape, *w);
                }
            }
            for (w, t) in &pref_anti {
                if t.matches(p, none) {
                    contributed |= scores.add_shape(&t.topology_key, snapshot, shape, -*w);
                }
            }
            let Some(pa) = &p.pod_affinity else { continue };
            if self.hard_weight > 0 {
                for t in &pa.required_affinity {
                    if t.matches(pod, ns_labels) {
                        contributed |= scores.add_shape(&t.topology_key, snapshot, shape, self.hard_weight);
                    }
                }
            }
            for w in &pa.preferred_affinity {
                if w.term.matches(pod, ns_labels) {
                    contributed |= scores.add_shape(&w.term.topology_key, snapshot, shape, w.weight);
                }
            }
            for w in &pa.preferred_anti_affinity {
                if w.term.matches(pod, ns_labels) {
                    contributed |= scores.add_shape(&w.term.topology_key, snapshot, shape, -w.weight);
                }
            }
        }
        if !contributed {
            return Status::skip();
        }
        state.write(PRE_SCORE_KEY, PreScoreState { scores });
        Status::success()
    }

    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_KEY) else {
            return Err(Status::error(format!(
                "error reading {PRE_SCORE_KEY:?} from cycleState: not found"
            )));
        };
        Ok(s.scores.on(&node.node).sum())
    }

    /// Min–max scaling to 0–100 (all 0 when every node scores the same).
    fn normalize_scores(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) -> Status {
        let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
            return Status::success();
        };
        let diff = max - min;
        for s in scores.iter_mut() {
            *s = if diff > 0 {
                (MAX_NODE_SCORE as f64 * ((*s - min) as f64 / diff as f64)) as i64
            } else {
                0
            };
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    //! Cases ported from kube-scheduler's InterPodAffinity tests (the
    //! situations and expected answers; the code is this crate's).
    use super::*;
    use crate::framework::Code;
    use crate::node::NodeData;
    use crate::plugins::testutil::{cluster, spec_pod};
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::{Value, json};

    const AFF: &str = "requiredDuringSchedulingIgnoredDuringExecution";

    fn exprs(key: &str, op: &str, values: &[&str]) -> Value {
        if values.is_empty() {
            json!({"key": key, "operator": op})
        } else {
            json!({"key": key, "operator": op, "values": values})
        }
    }

    /// A term selecting with `exprs` (ANDed) at `topology`.
    fn term(e: &[Value], topology: &str) -> Value {
        json!({"labelSelector": {"matchExpressions": e}, "topologyKey": topology})
    }

    fn weighted(w: i64, t: Value) -> Value {
        json!({"weight": w, "podAffinityTerm": t})
    }

    /// A pod in `ns` with `labels` on `node` (empty: pending) and `affinity`.
    fn pod(name: &str, ns: &str, labels: Value, node: &str, affinity: Value) -> Pod {
        let spec = if affinity.is_null() {
            json!({})
        } else {
            json!({"affinity": affinity})
        };
        spec_pod(name, ns, labels, node, spec)
    }

    fn info(p: &Pod) -> PodInfo {
        PodInfo::from_pod(p).unwrap()
    }

    fn snapshot(nodes: &[(&str, Value)], pods: &[Pod]) -> Snapshot {
        let nodes: Vec<(&str, Value, Value)> = nodes.iter().map(|(n, l)| (*n, l.clone(), json!({}))).collect();
        let team = |t: &str| json!({"team": t});
        cluster(
            &nodes,
            pods,
            &[
                ("subteam1.team1", team("team1")),
                ("subteam2.team1", team("team1")),
                ("subteam1.team2", team("team2")),
                ("subteam2.team2", team("team2")),
            ],
        )
    }

    /// Filter verdicts for each node in the order given: `ok`, `skip`
    /// (PreFilter skipped), or `U:`/`UU:` and the reason.
    fn filter(incoming: &Pod, existing: &[Pod], nodes: &[(&str, Value)]) -> Vec<String> {
        let snap = snapshot(nodes, existing);
        let pl = InterPodAffinity::default();
        let pod = info(incoming);
        let mut st = CycleState::default();
        let pre = pl.pre_filter(&mut st, &pod, &snap);
        if pre.is_skip() {
            return vec!["skip".into(); nodes.len()];
        }
        nodes
            .iter()
            .map(|(name, _)| {
                let n = snap.nodes.iter().find(|n| n.name() == *name).unwrap();
                let s = pl.filter(&st, &pod, n);
                match s.code() {
                    Code::Success => "ok".into(),
                    Code::Unschedulable => format!("U:{}", s.message()),
                    Code::UnschedulableAndUnresolvable => format!("UU:{}", s.message()),
                    c => format!("{c:?}:{}", s.message()),
                }
            })
            .collect()
    }

    const A: &str = ERR_REASON_AFFINITY;
    const N: &str = ERR_REASON_ANTI_AFFINITY;
    const X: &str = ERR_REASON_EXISTING_ANTI_AFFINITY;

    fn uu(r: &str) -> String {
        format!("UU:{r}")
    }
    fn u(r: &str) -> String {
        format!("U:{r}")
    }

    #[test]
    fn single_node_required_terms() {
        let node1 = [("node1", json!({"region": "r1", "zone": "z11"}))];
        let scan = |extra: Value| pod("e", "", json!({"service": "securityscan"}), "node1", extra);
        let s1 = json!({"security": "S1"});
        let aff = |t: Vec<Value>| json!({"podAffinity": {AFF: t}});
        let anti = |t: Vec<Value>| json!({"podAntiAffinity": {AFF: t}});
        let both = |a: Vec<Value>, n: Vec<Value>| json!({"podAffinity": {AFF: a}, "podAntiAffinity": {AFF: n}});
        let in_scan = || exprs("service", "In", &["securityscan", "value2"]);
        let cases: Vec<(&str, Pod, Vec<Pod>, &str)> = vec![
            (
                "no terms, no existing anti-affinity",
                pod("p", "", s1.clone(), "", Value::Null),
                vec![scan(Value::Null)],
                "skip",
            ),
            (
                "affinity In matches",
                pod("p", "", s1.clone(), "", aff(vec![term(&[in_scan()], "region")])),
                vec![scan(Value::Null)],
                "ok",
            ),
            (
                "affinity NotIn matches",
                pod(
                    "p",
                    "",
                    s1.clone(),
                    "",
                    aff(vec![term(
                        &[exprs("service", "NotIn", &["securityscan3", "value3"])],
                        "region",
                    )]),
                ),
                vec![scan(Value::Null)],
                "ok",
            ),
            (
                "affinity in another namespace does not match",
                pod(
                    "p",
                    "",
                    s1.clone(),
                    "",
                    json!({"podAffinity": {AFF: [{"labelSelector": {"matchExpressions": [in_scan()]}, "namespaces": ["DiffNameSpace"], "topologyKey": "region"}]}}),
                ),
                vec![pod("e", "ns", json!({"service": "securityscan"}), "node1", Value::Null)],
                A,
            ),
            (
                "expressions are ANDed",
                pod(
                    "p",
                    "",
                    s1.clone(),
                    "",
                    aff(vec![
                        term(
                            &[exprs("service", "Exists", &[]), exprs("wrongkey", "DoesNotExist", &[])],
                            "region",
                        ),
                        term(
                            &[
                                exprs("service", "In", &["securityscan2"]),
                                exprs("service", "NotIn", &["WrongValue"]),
                            ],
                            "region",
                        ),
                    ]),
                ),
                vec![scan(Value::Null)],
                A,
            ),
            (
                "affinity and anti-affinity both satisfied",
                pod(
                    "p",
                    "",
                    s1.clone(),
                    "",
                    both(
                        vec![term(&[in_scan()], "region")],
                        vec![term(&[exprs("service", "In", &["antivirusscan", "value2"])], "node")],
                    ),
                ),
                vec![scan(Value::Null)],
                "ok",
            ),
            (
                "anti-affinity on the zone fails",
                pod(
                    "p",
                    "",
                    s1.clone(),
                    "",
                    both(vec![term(&[in_scan()], "region")], vec![term(&[in_scan()], "zone")]),
                ),
                vec![scan(Value::Null)],
                N,
            ),
            (
                "existing pod's anti-affinity rejects (symmetry)",
                pod(
                    "p",
                    "",
                    json!({"service": "securityscan"}),
                    "",
                    both(
                        vec![term(&[in_scan()], "region")],
                        vec![term(&[exprs("service", "In", &["antivirusscan", "value2"])], "node")],
                    ),
                ),
                vec![scan(anti(vec![term(&[in_scan()], "zone")]))],
                X,
            ),
            (
                "first-pod rule needs the pod to match its own terms",
                pod(
                    "p",
                    "",
                    json!({"service": "securityscan"}),
                    "",
                    aff(vec![term(
                        &[exprs("service", "NotIn", &["securityscan", "value2"])],
                        "region",
                    )]),
                ),
                vec![pod("e", "", json!({"service": "securityscan"}), "node2", Value::Null)],
                A,
            ),
            (
                "existing anti-affinity alone rejects",
                pod("p", "", json!({"service": "securityscan"}), "", Value::Null),
                vec![scan(anti(vec![term(&[in_scan()], "zone")]))],
                X,
            ),
            (
                "existing anti-affinity that does not select the pod: skip",
                pod("p", "", json!({"service": "securityscan"}), "", Value::Null),
                vec![scan(anti(vec![term(
                    &[exprs("service", "NotIn", &["securityscan", "value2"])],
                    "zone",
                )]))],
                "skip",
            ),
            (
                "the pod's own anti-affinity is checked before the existing pods'",
                pod(
                    "p",
                    "",
                    json!({"service": "securityscan"}),
                    "",
                    anti(vec![
                        term(&[exprs("service", "Exists", &[])], "region"),
                        term(&[exprs("security", "Exists", &[])], "region"),
                    ]),
                ),
                vec![pod(
                    "e",
                    "",
                    s1.clone(),
                    "node1",
                    anti(vec![term(&[exprs("security", "Exists", &[])], "zone")]),
                )],
                N,
            ),
            (
                "existing pod's anti-affinity term selects the incoming pod",
                pod(
                    "p",
                    "",
                    s1.clone(),
                    "",
                    anti(vec![term(&[exprs("security", "Exists", &[])], "zone")]),
                ),
                vec![pod(
                    "e",
                    "",
                    json!({"service": "securityscan"}),
                    "node1",
                    anti(vec![
                        term(&[exprs("service", "Exists", &[])], "zone"),
                        term(&[exprs("security", "Exists", &[])], "zone"),
                    ]),
                )],
                X,
            ),
            (
                "namespace selector selects the existing pod's namespace",
                pod(
                    "p",
                    "",
                    s1.clone(),
                    "",
                    json!({"podAffinity": {AFF: [{"labelSelector": {"matchExpressions": [in_scan()]}, "namespaceSelector": {"matchExpressions": [exprs("team", "In", &["team1"])]}, "topologyKey": "region"}]}}),
                ),
                vec![pod(
                    "e",
                    "subteam1.team1",
                    json!({"service": "securityscan"}),
                    "node1",
                    Value::Null,
                )],
                "ok",
            ),
            (
                "namespace selector does not select it",
                pod(
                    "p",
                    "",
                    s1.clone(),
                    "",
                    json!({"podAffinity": {AFF: [{"labelSelector": {"matchExpressions": [in_scan()]}, "namespaceSelector": {"matchExpressions": [exprs("team", "In", &["team1"])]}, "topologyKey": "region"}]}}),
                ),
                vec![pod(
                    "e",
                    "subteam1.team2",
                    json!({"service": "securityscan"}),
                    "node1",
                    Value::Null,
                )],
                A,
            ),
            (
                "anti-affinity with a namespace selector",
                pod(
                    "p",
                    "subteam1.team1",
                    s1.clone(),
                    "",
                    json!({"podAntiAffinity": {AFF: [{"labelSelector": {"matchExpressions": [in_scan()]}, "namespaceSelector": {"matchExpressions": [exprs("team", "In", &["team1"])]}, "topologyKey": "zone"}]}}),
                ),
                vec![pod(
                    "e",
                    "subteam2.team1",
                    json!({"service": "securityscan"}),
                    "node1",
                    Value::Null,
                )],
                N,
            ),
            (
                "an empty namespace selector selects every namespace",
                pod(
                    "p",
                    "subteam1.team1",
                    s1.clone(),
                    "",
                    json!({"podAntiAffinity": {AFF: [{"labelSelector": {"matchExpressions": [in_scan()]}, "namespaceSelector": {}, "topologyKey": "zone"}]}}),
                ),
                vec![pod(
                    "e",
                    "subteam2.team1",
                    json!({"service": "securityscan"}),
                    "node1",
                    Value::Null,
                )],
                N,
            ),
            (
                "anti-affinity namespace selector excludes team2",
                pod(
                    "p",
                    "subteam1.team1",
                    s1.clone(),
                    "",
                    json!({"podAntiAffinity": {AFF: [{"labelSelector": {"matchExpressions": [in_scan()]}, "namespaceSelector": {"matchExpressions": [exprs("team", "In", &["team1"])]}, "topologyKey": "zone"}]}}),
                ),
                vec![pod(
                    "e",
                    "subteam1.team2",
                    json!({"service": "securityscan"}),
                    "node1",
                    Value::Null,
                )],
                "ok",
            ),
        ];
        for (name, incoming, existing, want) in cases {
            let got = filter(&incoming, &existing, &node1);
            let want = match want {
                "ok" | "skip" => want.to_owned(),
                w if w == A => uu(w),
                w => u(w),
            };
            assert_eq!(got, vec![want], "{name}");
        }
    }

    #[test]
    fn multiple_nodes() {
        let china = json!({"region": "China"});
        let china_az1 = json!({"region": "China", "az": "az1"});
        let india = json!({"region": "India"});
        let aff = |t: Vec<Value>| json!({"podAffinity": {AFF: t}});
        let anti = |t: Vec<Value>| json!({"podAntiAffinity": {AFF: t}});
        let ex = |k: &str| exprs(k, "Exists", &[]);
        let r1z = |z: &str| json!({"region": "r1", "zone": z});
        let ok = || "ok".to_string();

        // Nodes of the region where a matching pod runs pass; the other region fails.
        let got = filter(
            &pod(
                "p",
                "",
                json!({}),
                "",
                aff(vec![term(&[exprs("foo", "In", &["bar"])], "region")]),
            ),
            &[pod("p1", "", json!({"foo": "bar"}), "node1", Value::Null)],
            &[
                ("node1", china.clone()),
                ("node2", china_az1.clone()),
                ("node3", india.clone()),
            ],
        );
        assert_eq!(got, vec![ok(), ok(), uu(A)]);

        // First pod of a self-selecting group: anywhere the keys exist.
        let p = pod(
            "p",
            "",
            json!({"foo": "bar", "service": "securityscan"}),
            "",
            aff(vec![
                term(&[exprs("foo", "In", &["bar"])], "zone"),
                term(&[exprs("service", "In", &["securityscan"])], "zone"),
            ]),
        );
        let e = [pod("p1", "", json!({"foo": "bar"}), "nodeA", Value::Null)];
        let got = filter(
            &p,
            &e,
            &[
                ("nodeA", json!({"zone": "az1", "hostname": "h1"})),
                ("nodeB", json!({"zone": "az2", "hostname": "h2"})),
            ],
        );
        assert_eq!(got, vec![ok(), ok()]);
        // ... but never where a key is missing.
        let got = filter(
            &p,
            &e,
            &[
                ("nodeA", json!({"zoneLabel": "az1"})),
                ("nodeB", json!({"zoneLabel": "az2"})),
            ],
        );
        assert_eq!(got, vec![uu(A), uu(A)]);

        // Anti-affinity per region.
        let got = filter(
            &pod(
                "p",
                "",
                json!({}),
                "",
                anti(vec![term(&[exprs("foo", "In", &["abc"])], "region")]),
            ),
            &[pod("e", "", json!({"foo": "abc"}), "nodeA", Value::Null)],
            &[
                ("nodeA", china.clone()),
                ("nodeB", china_az1.clone()),
                ("nodeC", india.clone()),
            ],
        );
        assert_eq!(got, vec![u(N), u(N), ok()]);

        // An existing pod's term defaults to its own namespace.
        let got = filter(
            &pod(
                "p",
                "NS1",
                json!({"foo": "123"}),
                "",
                anti(vec![term(&[exprs("foo", "In", &["bar"])], "region")]),
            ),
            &[
                pod("e1", "NS1", json!({"foo": "bar"}), "nodeA", Value::Null),
                pod(
                    "e2",
                    "NS2",
                    json!({}),
                    "nodeC",
                    anti(vec![term(&[exprs("foo", "In", &["123"])], "region")]),
                ),
            ],
            &[
                ("nodeA", china.clone()),
                ("nodeB", china_az1.clone()),
                ("nodeC", india.clone()),
            ],
        );
        assert_eq!(got, vec![u(N), u(N), ok()]);

        // A topology key no node has: the existing term selects, but no domain.
        let nodes = [("nodeA", r1z("z1")), ("nodeB", r1z("z1"))];
        let got = filter(
            &pod("p", "", json!({"foo": ""}), "", Value::Null),
            &[pod(
                "e",
                "",
                json!({}),
                "nodeA",
                anti(vec![term(&[ex("foo")], "invalid-node-label")]),
            )],
            &nodes,
        );
        assert_eq!(got, vec!["skip", "skip"]);
        let got = filter(
            &pod(
                "p",
                "",
                json!({}),
                "",
                anti(vec![term(&[ex("foo")], "invalid-node-label")]),
            ),
            &[pod("e", "", json!({"foo": ""}), "nodeA", Value::Null)],
            &nodes,
        );
        assert_eq!(got, vec![ok(), ok()]);

        let zones = [("nodeA", r1z("z1")), ("nodeB", r1z("z2"))];
        // Existing anti-affinity on one key rejects only that zone.
        let got = filter(
            &pod("p", "", json!({"foo": "", "bar": ""}), "", Value::Null),
            &[pod(
                "e",
                "",
                json!({}),
                "nodeA",
                anti(vec![
                    term(&[ex("foo")], "invalid-node-label"),
                    term(&[ex("bar")], "zone"),
                ]),
            )],
            &zones,
        );
        assert_eq!(got, vec![u(X), ok()]);
        // Region-wide existing anti-affinity rejects both.
        let got = filter(
            &pod("p", "", json!({"foo": "", "bar": ""}), "", Value::Null),
            &[pod(
                "e",
                "",
                json!({}),
                "nodeA",
                anti(vec![term(&[ex("foo")], "region"), term(&[ex("bar")], "zone")]),
            )],
            &zones,
        );
        assert_eq!(got, vec![u(X), u(X)]);
        // Two existing pods with anti-affinity in two zones; the third zone is free.
        let got = filter(
            &pod("p", "", json!({"foo": "", "bar": ""}), "", Value::Null),
            &[
                pod(
                    "e1",
                    "",
                    json!({}),
                    "nodeA",
                    anti(vec![term(&[ex("foo")], "zone"), term(&[ex("labelA")], "zone")]),
                ),
                pod(
                    "e2",
                    "",
                    json!({}),
                    "nodeB",
                    anti(vec![term(&[ex("bar")], "zone"), term(&[ex("labelB")], "zone")]),
                ),
            ],
            &[("nodeA", r1z("z1")), ("nodeB", r1z("z2")), ("nodeC", r1z("z3"))],
        );
        assert_eq!(got, vec![u(X), u(X), ok()]);
        // One pod must match every affinity term.
        let p = pod(
            "p",
            "",
            json!({}),
            "",
            aff(vec![term(&[ex("foo")], "region"), term(&[ex("bar")], "zone")]),
        );
        let got = filter(
            &p,
            &[pod("e", "", json!({"foo": "", "bar": ""}), "nodeA", Value::Null)],
            &[("nodeA", r1z("z1")), ("nodeB", r1z("z1"))],
        );
        assert_eq!(got, vec![ok(), ok()]);
        let got = filter(
            &p,
            &[
                pod("e1", "", json!({"foo": ""}), "nodeA", Value::Null),
                pod("e2", "", json!({"bar": ""}), "nodeB", Value::Null),
            ],
            &zones,
        );
        assert_eq!(got, vec![uu(A), uu(A)]);
    }

    /// Normalized scores per node, or `None` when PreScore skips.
    fn scores(pl: &InterPodAffinity, incoming: &Pod, existing: &[Pod], nodes: &[(&str, Value)]) -> Option<Vec<i64>> {
        let snap = snapshot(nodes, existing);
        let pod = info(incoming);
        let mut st = CycleState::default();
        let ordered: Vec<&Arc<NodeInfo>> = nodes
            .iter()
            .map(|(name, _)| snap.nodes.iter().find(|n| n.name() == *name).unwrap())
            .collect();
        if pl.pre_score(&mut st, &pod, &snap, &ordered).is_skip() {
            return None;
        }
        let mut s: Vec<i64> = ordered.iter().map(|n| pl.score(&st, &pod, n).unwrap()).collect();
        assert!(pl.normalize_scores(&st, &pod, &mut s).is_success());
        Some(s)
    }

    #[test]
    fn preferred_terms_score() {
        let pl = InterPodAffinity::default();
        let china = json!({"region": "China"});
        let india = json!({"region": "India"});
        let az1 = json!({"az": "az1"});
        let az2 = json!({"az": "az2"});
        let china_az1 = json!({"region": "China", "az": "az1"});
        let s1 = || json!({"security": "S1"});
        let s2 = || json!({"security": "S2"});
        let sec = |v: &str| exprs("security", "In", &[v]);
        let pref_aff = |ts: Vec<Value>| json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": ts}});
        let pref_anti =
            |ts: Vec<Value>| json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": ts}});
        let stay_s1 = || pref_aff(vec![weighted(5, term(&[sec("S1")], "region"))]);
        let stay_s2 = || pref_aff(vec![weighted(6, term(&[sec("S2")], "region"))]);
        let away_s1 = || pref_anti(vec![weighted(5, term(&[sec("S1")], "az"))]);
        let away_s2 = || pref_anti(vec![weighted(5, term(&[sec("S2")], "az"))]);
        let stay_s1_away_s2 = || {
            json!({
                "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(8, term(&[sec("S1")], "region"))]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted(5, term(&[sec("S2")], "az"))]}
            })
        };
        let n = |names: &[(&'static str, &Value)]| names.iter().map(|(a, b)| (*a, (*b).clone())).collect::<Vec<_>>();
        let on = |name: &str, labels: Value, node: &str, aff: Value| pod(name, "", labels, node, aff);

        // No terms anywhere: skip.
        assert_eq!(
            scores(
                &pl,
                &on("p", s1(), "", Value::Null),
                &[],
                &n(&[("n1", &china), ("n2", &india), ("n3", &az1)])
            ),
            None
        );
        // The incoming pod's preferred affinity.
        assert_eq!(
            scores(
                &pl,
                &on("p", s1(), "", stay_s1()),
                &[
                    on("a", s1(), "n1", Value::Null),
                    on("b", s2(), "n2", Value::Null),
                    on("c", s1(), "n3", Value::Null)
                ],
                &n(&[("n1", &china), ("n2", &india), ("n3", &az1)])
            ),
            Some(vec![100, 0, 0])
        );
        assert_eq!(
            scores(
                &pl,
                &on("p", json!({}), "", stay_s1()),
                &[on("a", s1(), "n1", Value::Null)],
                &n(&[("n1", &china), ("n2", &china_az1), ("n3", &india)])
            ),
            Some(vec![100, 100, 0])
        );
        // Raw China 24, India 12.
        let pods = [
            on("a", s2(), "n1", Value::Null),
            on("b", s2(), "n1", Value::Null),
            on("c", s2(), "n2", Value::Null),
            on("d", s2(), "n3", Value::Null),
            on("e", s2(), "n4", Value::Null),
            on("f", s2(), "n5", Value::Null),
        ];
        assert_eq!(
            scores(
                &pl,
                &on("p", s1(), "", stay_s2()),
                &pods,
                &n(&[
                    ("n1", &china),
                    ("n2", &india),
                    ("n3", &china),
                    ("n4", &china),
                    ("n5", &india)
                ])
            ),
            Some(vec![100, 0, 100, 100, 0])
        );
        // Raw [2, 10, 0] → [20, 100, 0].
        let aff3 = pref_aff(vec![
            weighted(8, term(&[exprs("security", "NotIn", &["S1"]), sec("S2")], "region")),
            weighted(
                2,
                term(
                    &[exprs("security", "Exists", &[]), exprs("wrongkey", "DoesNotExist", &[])],
                    "region",
                ),
            ),
        ]);
        assert_eq!(
            scores(
                &pl,
                &on("p", s1(), "", aff3),
                &[
                    on("a", s1(), "n1", Value::Null),
                    on("b", s2(), "n2", Value::Null),
                    on("c", s1(), "n3", Value::Null)
                ],
                &n(&[("n1", &china), ("n2", &india), ("n3", &az1)])
            ),
            Some(vec![20, 100, 0])
        );
        // Symmetry: existing pods' preferred affinity.
        assert_eq!(
            scores(
                &pl,
                &on("p", s2(), "", Value::Null),
                &[on("a", s1(), "n1", stay_s1()), on("b", s2(), "n2", stay_s2())],
                &n(&[("n1", &china), ("n2", &india), ("n3", &az1)])
            ),
            Some(vec![0, 100, 0])
        );
        // Existing pods' namespace selectors read the incoming pod's namespace labels.
        let ns_term = |w| {
            weighted(
                w,
                json!({"labelSelector": {"matchExpressions": [sec("S1")]}, "namespaces": ["subteam2.team2"], "namespaceSelector": {"matchExpressions": [exprs("team", "In", &["team1"])]}, "topologyKey": "region"}),
            )
        };
        assert_eq!(
            scores(
                &pl,
                &pod("p", "subteam1.team1", s1(), "", Value::Null),
                &[
                    on("a", s1(), "n1", pref_aff(vec![ns_term(5)])),
                    on("b", s2(), "n2", stay_s2())
                ],
                &n(&[("n1", &china), ("n2", &india), ("n3", &az1)])
            ),
            Some(vec![100, 0, 0])
        );
        assert_eq!(
            scores(
                &pl,
                &pod("p", "subteam1.team1", s1(), "", Value::Null),
                &[
                    on("a", s1(), "n1", pref_anti(vec![ns_term(5)])),
                    on("b", s2(), "n2", stay_s2())
                ],
                &n(&[("n1", &china), ("n2", &india), ("n3", &az1)])
            ),
            Some(vec![0, 100, 100])
        );
        // Existing pods' required affinity, weighted by hardPodAffinityWeight.
        let hard = json!({"podAffinity": {AFF: [
            term(&[exprs("security", "In", &["S1", "value2"])], "region"),
            term(&[exprs("security", "Exists", &[]), exprs("wrongkey", "DoesNotExist", &[])], "region"),
        ]}});
        assert_eq!(
            scores(
                &pl,
                &on("p", s1(), "", Value::Null),
                &[on("a", s1(), "n1", hard.clone()), on("b", s2(), "n2", hard)],
                &n(&[("n1", &china), ("n2", &india), ("n3", &az1)])
            ),
            Some(vec![100, 100, 0])
        );
        // Preferred anti-affinity.
        assert_eq!(
            scores(
                &pl,
                &on("p", s1(), "", away_s1()),
                &[on("a", s1(), "n1", Value::Null), on("b", s2(), "n2", Value::Null)],
                &n(&[("n1", &az1), ("n2", &china)])
            ),
            Some(vec![0, 100])
        );
        assert_eq!(
            scores(
                &pl,
                &on("p", s1(), "", away_s1()),
                &[on("a", s1(), "n1", Value::Null), on("b", s1(), "n2", Value::Null)],
                &n(&[("n1", &az1), ("n2", &china)])
            ),
            Some(vec![0, 100])
        );
        assert_eq!(
            scores(
                &pl,
                &on("p", s2(), "", Value::Null),
                &[on("a", s1(), "n1", away_s2()), on("b", s2(), "n2", away_s1())],
                &n(&[("n1", &az1), ("n2", &az2)])
            ),
            Some(vec![0, 100])
        );
        // Affinity and anti-affinity together; raw [8, -5, 8, -5].
        assert_eq!(
            scores(
                &pl,
                &on("p", s1(), "", stay_s1_away_s2()),
                &[
                    on("a", s1(), "n1", Value::Null),
                    on("b", s2(), "n2", Value::Null),
                    on("c", json!({}), "n3", stay_s1_away_s2()),
                    on("d", json!({}), "n4", away_s1())
                ],
                &n(&[("n1", &china), ("n2", &az1), ("n3", &india), ("n4", &az2)])
            ),
            Some(vec![100, 0, 100, 0])
        );
        // Equal raw scores normalize to 0.
        assert_eq!(
            scores(
                &pl,
                &on("p", s1(), "", Value::Null),
                &[
                    on("a", s1(), "n1", Value::Null),
                    on("b", json!({}), "n2", stay_s1_away_s2())
                ],
                &n(&[("n1", &china), ("n2", &china)])
            ),
            Some(vec![0, 0])
        );
        // ignorePreferredTermsOfExistingPods.
        let ignoring = InterPodAffinity::new(InterPodAffinityArgs {
            ignore_preferred_terms_of_existing_pods: true,
            ..Default::default()
        })
        .unwrap();
        let existing = [on("a", s1(), "n1", stay_s1_away_s2()), on("b", s2(), "n2", stay_s2())];
        assert_eq!(
            scores(
                &ignoring,
                &on("p", s2(), "", Value::Null),
                &existing,
                &n(&[("n1", &china), ("n2", &india)])
            ),
            None
        );
        assert_eq!(
            scores(
                &pl,
                &on("p", s2(), "", Value::Null),
                &existing,
                &n(&[("n1", &china), ("n2", &india)])
            ),
            Some(vec![0, 100])
        );
    }

    #[test]
    fn hard_pod_affinity_weight() {
        let hard = json!({"podAffinity": {AFF: [{"labelSelector": {"matchExpressions": [exprs("service", "In", &["S1"])]}, "namespaces": ["", "subteam2.team2"], "namespaceSelector": {"matchExpressions": [exprs("team", "In", &["team1"])]}, "topologyKey": "region"}]}});
        let existing = [
            pod("a", "", json!({}), "n1", hard.clone()),
            pod("b", "", json!({}), "n2", hard),
        ];
        let nodes = [
            ("n1", json!({"region": "China"})),
            ("n2", json!({"region": "India"})),
            ("n3", json!({"az": "az1"})),
        ];
        let weight = |w| {
            InterPodAffinity::new(InterPodAffinityArgs {
                hard_pod_affinity_weight: w,
                ..Default::default()
            })
            .unwrap()
        };
        let incoming = |ns: &str| pod("p", ns, json!({"service": "S1"}), "", Value::Null);
        assert_eq!(
            scores(&weight(1), &incoming(""), &existing, &nodes),
            Some(vec![100, 100, 0])
        );
        assert_eq!(scores(&weight(0), &incoming(""), &existing, &nodes), None);
        assert_eq!(scores(&weight(1), &incoming("subteam1.team2"), &existing, &nodes), None);
        assert_eq!(
            scores(&weight(1), &incoming("subteam1.team1"), &existing, &nodes),
            Some(vec![100, 100, 0])
        );
        assert_eq!(
            scores(&weight(1), &incoming("subteam2.team2"), &existing, &nodes),
            Some(vec![100, 100, 0])
        );
        assert_eq!(
            InterPodAffinity::new(InterPodAffinityArgs {
                hard_pod_affinity_weight: 101,
                ..Default::default()
            })
            .unwrap_err(),
            "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"
        );
    }

    #[test]
    fn queueing_hints() {
        let pl = InterPodAffinity::default();
        let scan = || exprs("service", "In", &["securityscan", "value2"]);
        let target = info(&pod(
            "t",
            "",
            json!({}),
            "",
            json!({"podAffinity": {AFF: [term(&[scan()], "region")]}}),
        ));
        let anti_target = info(&pod(
            "t",
            "",
            json!({}),
            "",
            json!({"podAntiAffinity": {AFF: [term(&[scan()], "region")]}}),
        ));
        let bound = |labels: Value| info(&pod("x", "", labels, "n1", Value::Null));
        let q = |t: &PodInfo, c: Change<'_>| pl.queueing_hint(t, &c) == QueueingHint::Queue;
        let scanning = bound(json!({"service": "securityscan"}));
        let other = bound(json!({"aaa": "a"}));
        assert!(q(&target, Change::AssignedPodAdded(&scanning)));
        assert!(!q(&target, Change::AssignedPodAdded(&other)));
        assert!(q(
            &target,
            Change::AssignedPodRelabelled {
                old: &other,
                new: &scanning
            }
        ));
        assert!(!q(
            &target,
            Change::AssignedPodRelabelled {
                old: &scanning,
                new: &other
            }
        ));
        let value2 = bound(json!({"service": "value2"}));
        assert!(!q(
            &target,
            Change::AssignedPodRelabelled {
                old: &value2,
                new: &scanning
            }
        ));
        assert!(q(
            &anti_target,
            Change::AssignedPodRelabelled {
                old: &scanning,
                new: &bound(json!({"service": "aaaa"}))
            }
        ));
        assert!(!q(
            &anti_target,
            Change::AssignedPodRelabelled {
                old: &bound(json!({"service": "bbb"})),
                new: &scanning
            }
        ));
        assert!(q(&anti_target, Change::AssignedPodDeleted(&scanning)));
        assert!(!q(&anti_target, Change::AssignedPodDeleted(&other)));

        let node = |labels: Value| {
            let n: Node = serde_json::from_value(json!({"metadata": {"name": "n", "labels": labels}})).unwrap();
            Arc::new(NodeData::from_node(&n).unwrap())
        };
        let zone_aff = info(&pod(
            "t",
            "",
            json!({}),
            "",
            json!({"podAffinity": {AFF: [term(&[scan()], "zone")]}}),
        ));
        let zone_anti = info(&pod(
            "t",
            "",
            json!({}),
            "",
            json!({"podAntiAffinity": {AFF: [{"labelSelector": {"matchLabels": {"another": "label"}}, "topologyKey": "zone"}]}}),
        ));
        let upd = |t: &PodInfo, a: Value, b: Value| {
            let (o, n) = (node(a), node(b));
            q(
                t,
                Change::NodeUpdated {
                    old: &o,
                    new: &n,
                    action: Action::UPDATE_NODE_LABEL,
                },
            )
        };
        assert!(q(&zone_aff, Change::NodeAdded(&node(json!({"zone": "zone1"})))));
        assert!(!q(&target, Change::NodeAdded(&node(json!({"zone": "zone1"})))));
        assert!(!upd(&zone_aff, json!({"aaa": "a"}), json!({"aaa": "b"})));
        assert!(!upd(
            &zone_aff,
            json!({"zone": "zone1"}),
            json!({"zone": "zone1", "unrelated": "x"})
        ));
        assert!(upd(&zone_aff, json!({"zone": "zone1"}), json!({"zone": "zone2"})));
        assert!(upd(&zone_aff, json!({"aaa": "a"}), json!({"zone": "zone1"})));
        assert!(q(&zone_anti, Change::NodeAdded(&node(json!({})))));
        assert!(!upd(
            &zone_anti,
            json!({"zone": "zone1"}),
            json!({"zone": "zone1", "unrelated": "x"})
        ));
        assert!(upd(&zone_anti, json!({"zone": "zone1"}), json!({"zone": "zone2"})));
        assert!(!upd(&zone_anti, json!({"aaa": "a"}), json!({"zone": "zone1"})));
        assert!(upd(&zone_anti, json!({"zone": "zone1"}), json!({"aaa": "a"})));
    }
}
