//! NodeAffinity: `spec.nodeSelector` and required node affinity filter
//! nodes; preferred node affinity terms add their weights to the score. The
//! profile's `addedAffinity` applies to every pod beside its own: its
//! required terms filter (as "scheduler-enforced node affinity"), its
//! preferred terms add to the score.

use serde::Deserialize;
use std::sync::Arc;

use crate::cache::{Domains, Snapshot};
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, Plugin, Points, Status, default_normalize_score, score_each};
use crate::node::{NodeData, NodeInfo, NodeRow};
use crate::pod::PodInfo;
use crate::selector::{Operator, Term};

/// Where the pre-filter leaves the pod's compiled constraints.
const PRE_FILTER_KEY: &str = "PreFilterNodeAffinity";
const PRE_SCORE_KEY: &str = "PreScoreNodeAffinity";

/// A label value no node has: equal to no domain id (nor to
/// [`Domains::NONE`]).
const NO_NODE_HAS_IT: u32 = u32::MAX - 1;

/// The pod's node selector and required terms, compiled against the
/// snapshot's label domains ([`Snapshot::domains`]): a node is checked by
/// reading small integers by its id instead of hashing its labels. A pod
/// with a zone selector visits most nodes before it finds enough that
/// fit (at 50 000 nodes, most of the cycle went to hashing label keys).
struct Compiled {
    /// `spec.nodeSelector`: each key's domains and the id of the value.
    selector: Vec<Check>,
    /// The required terms (ORed), each compiled when every expression is
    /// one of `In`, `NotIn`, `Exists`, `DoesNotExist` and no field is
    /// named; `None`: the term is matched on the labels.
    terms: Vec<Option<Vec<Check>>>,
}

/// One requirement on one label key, by domain id.
struct Check {
    key: String,
    domains: Arc<Domains>,
    op: Operator,
    /// The ids of the values named (those no node has left out).
    ids: Vec<u32>,
}

impl Check {
    fn new(snapshot: &Snapshot, key: &str, op: Operator, values: &[String]) -> Self {
        let domains = snapshot.domains(key);
        let ids = values.iter().filter_map(|v| domains.ids.get(v).copied()).collect();
        Check {
            key: key.to_owned(),
            domains,
            op,
            ids,
        }
    }

    #[inline]
    fn admits(&self, node: &NodeData) -> bool {
        self.admits_domain(self.domains.of(&self.key, node))
    }

    #[inline]
    fn admits_domain(&self, d: u32) -> bool {
        match self.op {
            Operator::In => d != Domains::NONE && self.ids.contains(&d),
            Operator::NotIn => d == Domains::NONE || !self.ids.contains(&d),
            Operator::Exists => d != Domains::NONE,
            Operator::DoesNotExist => d == Domains::NONE,
            // Not compiled (see `Compiled::terms`).
            Operator::Gt | Operator::Lt => unreachable!("Gt and Lt are matched on labels"),
        }
    }
}

/// A term's checks by domain ids, when every expression is one of `In`,
/// `NotIn`, `Exists`, `DoesNotExist` and no field is named; `None`: the
/// term is matched on the labels.
fn compile_term(snapshot: &Snapshot, t: &Term) -> Option<Vec<Check>> {
    let simple = t.fields.is_empty()
        && !t.expressions.is_empty()
        && t.expressions
            .iter()
            .all(|r| !matches!(r.op, Operator::Gt | Operator::Lt));
    simple.then(|| {
        t.expressions
            .iter()
            .map(|r| Check::new(snapshot, &r.key, r.op, &r.values))
            .collect()
    })
}

/// Whether every check admits the node of id `id` (a row's), by domain
/// ids; `None` when the node is not the snapshot's the checks were made
/// against.
#[inline]
fn admit_by_id(checks: &[Check], id: u32) -> Option<bool> {
    for c in checks {
        if !c.admits_domain(c.domains.of_id(id)?) {
            return Some(false);
        }
    }
    Some(true)
}

/// The pod's and the profile's preferred terms with their weights,
/// compiled at PreScore as the required ones are at PreFilter.
struct Preferred {
    terms: Vec<(i64, Option<Vec<Check>>)>,
}

impl Preferred {
    /// The score of the node of `row` (the sum of the weights of the terms
    /// it matches); `None` when a term must be matched on the labels or the
    /// node is not the snapshot's.
    #[inline]
    fn score_row(&self, row: &NodeRow) -> Option<i64> {
        let mut sum = 0;
        for (w, checks) in &self.terms {
            if admit_by_id(checks.as_ref()?, row.id)? {
                sum += w;
            }
        }
        Some(sum)
    }
}

impl Compiled {
    fn new(pod: &PodInfo, snapshot: &Snapshot) -> Self {
        let selector = pod
            .node_selector
            .iter()
            .map(|(k, v)| {
                let mut c = Check::new(snapshot, k, Operator::In, std::slice::from_ref(v));
                if c.ids.is_empty() {
                    c.ids.push(NO_NODE_HAS_IT);
                }
                c
            })
            .collect();
        let terms = pod
            .required_affinity
            .iter()
            .flatten()
            .map(|t| compile_term(snapshot, t))
            .collect();
        Compiled { selector, terms }
    }

    /// [`Compiled::matches`] from the node's row alone; `None` when a
    /// term must be matched on the labels or the node is not the
    /// snapshot's.
    #[inline]
    fn matches_row(&self, pod: &PodInfo, row: &NodeRow) -> Option<bool> {
        if !admit_by_id(&self.selector, row.id)? {
            return Some(false);
        }
        if pod.required_affinity.is_none() {
            return Some(true);
        }
        for checks in &self.terms {
            if admit_by_id(checks.as_ref()?, row.id)? {
                return Some(true);
            }
        }
        Some(false)
    }

    /// [`NodeAffinity::matches_node`] by domain ids.
    #[inline]
    fn matches(&self, pod: &PodInfo, node: &NodeData) -> bool {
        self.selector.iter().all(|c| c.admits(node))
            && pod.required_affinity.as_ref().is_none_or(|terms| {
                terms.iter().zip(&self.terms).any(|(t, c)| match c {
                    Some(checks) => checks.iter().all(|c| c.admits(node)),
                    None => t.matches(&node.labels, &node.name),
                })
            })
    }
}

/// The reason, in kube-scheduler's words.
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";

/// The reason when the profile's `addedAffinity` rejects a node.
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";

/// Every required term names nodes, and no name is in all of them.
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

/// The nodes required terms name (`metadata.name In (...)`), when every
/// term names some: the terms are ORed (union), a term's fields ANDed
/// (intersection). `None` when a term names none: any node may match it.
fn node_names(terms: &[crate::selector::Term]) -> Option<Vec<String>> {
    let mut all: Vec<String> = Vec::new();
    for t in terms {
        let mut term: Option<Vec<String>> = None;
        for r in t.fields.iter().filter(|r| r.op == crate::selector::Operator::In) {
            term = Some(match term {
                None => r.values.clone(),
                Some(before) => before.into_iter().filter(|n| r.values.contains(n)).collect(),
            });
        }
        for n in term? {
            if !all.contains(&n) {
                all.push(n);
            }
        }
    }
    Some(all)
}

/// NodeAffinity args.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeAffinityArgs {
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub kind: Option<String>,
    /// Node affinity every pod of the profile gets beside its own.
    #[serde(default)]
    pub added_affinity: Option<k8s_openapi::api::core::v1::NodeAffinity>,
}

/// The NodeAffinity filter and score.
#[derive(Debug, Default)]
pub struct NodeAffinity {
    /// `addedAffinity`'s required terms (ORed), if any.
    added_required: Option<Vec<Term>>,
    /// `addedAffinity`'s preferred terms with their weights.
    added_preferred: Vec<(i64, Term)>,
}

impl NodeAffinity {
    /// Builds the plugin from its args.
    pub fn new(args: NodeAffinityArgs) -> Result<Self, String> {
        let Some(added) = args.added_affinity else {
            return Ok(Self::default());
        };
        let field = "addedAffinity";
        let parse = |t, f: String| Term::parse(t, field, &f).map_err(|e| format!("{}: {}", e.field, e.reason));
        let added_required = match &added.required_during_scheduling_ignored_during_execution {
            None => None,
            Some(sel) if sel.node_selector_terms.is_empty() => {
                return Err(format!(
                    "{field}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term"
                ));
            }
            Some(sel) => Some(
                sel.node_selector_terms
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        parse(
                            t,
                            format!("{field}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"),
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let mut added_preferred = Vec::new();
        for (i, p) in added
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .enumerate()
        {
            let f = format!("{field}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
            if !(1..=100).contains(&p.weight) && p.weight != 0 {
                return Err(format!(
                    "{f}.weight: Invalid value: {}: must be in the range 1-100",
                    p.weight
                ));
            }
            // kube-scheduler drops terms of weight 0.
            if p.weight != 0 {
                added_preferred.push((i64::from(p.weight), parse(&p.preference, format!("{f}.preference"))?));
            }
        }
        Ok(NodeAffinity {
            added_required,
            added_preferred,
        })
    }

    /// Whether the node satisfies the pod's node selector and required affinity.
    pub fn matches(pod: &PodInfo, node: &NodeInfo) -> bool {
        Self::matches_node(pod, &node.node)
    }

    /// [`NodeAffinity::matches`] for a node's data.
    pub fn matches_node(pod: &PodInfo, node: &NodeData) -> bool {
        let labels = &node.labels;
        pod.node_selector.iter().all(|(k, v)| labels.get(k) == Some(v))
            && pod
                .required_affinity
                .as_ref()
                .is_none_or(|terms| terms.iter().any(|t| t.matches(labels, &node.name)))
    }

    /// Whether the profile's `addedAffinity` admits the node.
    fn enforced(&self, node: &NodeData) -> bool {
        self.added_required
            .as_ref()
            .is_none_or(|terms| terms.iter().any(|t| t.matches(&node.labels, &node.name)))
    }
}

/// Whether the node satisfies the pod's node selector and required
/// affinity: by the pre-filter's compiled constraints when there are some
/// (a cycle), by the labels otherwise.
#[inline]
fn matches_with(compiled: Option<&Compiled>, pod: &PodInfo, node: &NodeData) -> bool {
    match compiled {
        Some(c) => c.matches(pod, node),
        None => NodeAffinity::matches_node(pod, node),
    }
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &str {
        super::names::NODE_AFFINITY
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent {
            resource: Resource::Node,
            action: Action::ADD | Action::UPDATE_NODE_LABEL,
        }]
    }

    /// A node that matches now and did not before.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let queue = match change {
            Change::NodeAdded(n) => self.enforced(n) && Self::matches_node(pod, n),
            Change::NodeUpdated { old, new, .. } => {
                !(self.enforced(old) && Self::matches_node(pod, old))
                    && self.enforced(new)
                    && Self::matches_node(pod, new)
            }
            _ => false,
        };
        if queue { QueueingHint::Queue } else { QueueingHint::Skip }
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::PRE_SCORE | Points::SCORE
    }

    /// Skips pods without node constraints; when every required term names
    /// nodes (`matchFields` on `metadata.name`, as DaemonSet pods do),
    /// restricts the cycle to those nodes.
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        if pod.node_selector.is_empty() && pod.required_affinity.is_none() && self.added_required.is_none() {
            return Status::skip();
        }
        if let Some(names) = pod.required_affinity.as_deref().and_then(node_names) {
            if names.is_empty() {
                return Status::unresolvable(ERR_REASON_CONFLICT);
            }
            state.restrict_nodes(self.name(), names);
        }
        state.write(PRE_FILTER_KEY, Compiled::new(pod, snapshot));
        Status::success()
    }

    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        let compiled = state.read::<Compiled>(PRE_FILTER_KEY);
        for (i, (n, r)) in nodes.iter().zip(rows).enumerate() {
            // Without a profile's added affinity, most nodes are decided
            // by their row, without reading the node.
            let by_row = match compiled {
                Some(c) if self.added_required.is_none() => c.matches_row(pod, r),
                _ => None,
            };
            if by_row.is_none() && !self.enforced(&n.node) {
                rejected.push((i, Status::unresolvable(ERR_REASON_ENFORCED)));
            } else if !by_row.unwrap_or_else(|| matches_with(compiled, pod, &n.node)) {
                rejected.push((i, Status::unresolvable(ERR_REASON_POD)));
            }
        }
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !self.enforced(&node.node) {
            return Status::unresolvable(ERR_REASON_ENFORCED);
        }
        if matches_with(state.read::<Compiled>(PRE_FILTER_KEY), pod, &node.node) {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON_POD)
        }
    }

    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot, _: &[&Arc<NodeInfo>]) -> Status {
        if pod.preferred_affinity.is_empty() && self.added_preferred.is_empty() {
            return Status::skip();
        }
        let terms = pod
            .preferred_affinity
            .iter()
            .chain(&self.added_preferred)
            .map(|(w, t)| (*w, compile_term(snapshot, t)))
            .collect();
        state.write(PRE_SCORE_KEY, Preferred { terms });
        Status::success()
    }

    /// By the nodes' rows when the terms compiled, reading only the
    /// nodes that need their labels.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let Some(preferred) = state.read::<Preferred>(PRE_SCORE_KEY) else {
            return score_each(self, state, pod, nodes, out);
        };
        for ((o, n), r) in out.iter_mut().zip(nodes).zip(rows) {
            *o = match preferred.score_row(r) {
                Some(v) => v,
                None => self.score(state, pod, n)?,
            };
        }
        Ok(())
    }

    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(pod
            .preferred_affinity
            .iter()
            .chain(&self.added_preferred)
            .filter(|(_, t)| t.matches(&node.node.labels, node.name()))
            .map(|(w, _)| w)
            .sum())
    }

    fn normalize_scores(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) -> Status {
        default_normalize_score(scores, false);
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{filter_batch, node, pod};
    use serde_json::json;

    fn labeled(name: &str, labels: serde_json::Value) -> NodeInfo {
        node(name, labels, json!({}), json!({}))
    }

    /// The pre-filter's compiled constraints (domain ids by node) reject
    /// exactly the nodes the labels reject, for every operator, for values
    /// and keys no node has, for terms left to the labels (`Gt`, fields),
    /// and for an empty term (which matches nothing).
    #[test]
    fn compiled_constraints_agree_with_the_labels() {
        use crate::plugins::testutil::cluster;
        let labels = [
            json!({"zone": "a", "disk": "ssd", "gen": "5"}),
            json!({"zone": "b", "disk": "hdd"}),
            json!({"zone": "c"}),
            json!({}),
            json!({"zone": "a", "gen": "3"}),
        ];
        let nodes: Vec<(String, serde_json::Value, serde_json::Value)> = labels
            .iter()
            .enumerate()
            .map(|(i, l)| (format!("n{i}"), l.clone(), json!({})))
            .collect();
        let refs: Vec<(&str, serde_json::Value, serde_json::Value)> = nodes
            .iter()
            .map(|(n, l, s)| (n.as_str(), l.clone(), s.clone()))
            .collect();
        let snapshot = cluster(&refs, &[], &[]);
        let term = |exprs: serde_json::Value| json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": exprs}}});
        let pods = [
            json!({"nodeSelector": {"zone": "a"}}),
            json!({"nodeSelector": {"zone": "a", "disk": "ssd"}}),
            json!({"nodeSelector": {"zone": "nowhere"}}),
            json!({"nodeSelector": {"no-such-key": "x"}}),
            json!({"affinity": term(json!([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "c", "z"]}]}]))}),
            json!({"affinity": term(json!([{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a", "z"]}]}]))}),
            json!({"affinity": term(json!([{"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]))}),
            json!({"affinity": term(json!([{"matchExpressions": [{"key": "disk", "operator": "DoesNotExist"}]}]))}),
            json!({"affinity": term(json!([{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}]))}),
            json!({"affinity": term(json!([
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                {"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["4"]}, {"key": "zone", "operator": "Exists"}]},
                {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n3"]}], "matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}
            ]))}),
            json!({"nodeSelector": {"zone": "a"}, "affinity": term(json!([{}, {"matchExpressions": [{"key": "gen", "operator": "NotIn", "values": ["5"]}]}]))}),
        ];
        let plugin = NodeAffinity::default();
        let infos: Vec<&Arc<NodeInfo>> = snapshot.nodes.iter().collect();
        for spec in pods {
            let mut spec = spec.clone();
            spec["containers"] = json!([]);
            let p = pod(spec.clone());
            let mut state = CycleState::default();
            assert!(plugin.pre_filter(&mut state, &p, &snapshot).is_success(), "{spec}");
            assert!(state.read::<Compiled>(PRE_FILTER_KEY).is_some());
            let rejected = filter_batch(&plugin, &state, &p, &infos);
            let compiled: Vec<&str> = rejected.iter().map(|(i, _)| infos[*i].name()).collect();
            let by_labels: Vec<&str> = infos
                .iter()
                .filter(|n| !NodeAffinity::matches_node(&p, &n.node))
                .map(|n| n.name())
                .collect();
            assert_eq!(compiled, by_labels, "{spec}");
            for n in &infos {
                assert_eq!(
                    plugin.filter(&state, &p, n).is_success(),
                    NodeAffinity::matches_node(&p, &n.node),
                    "{spec} on {}",
                    n.name()
                );
            }
        }
        // Preferred terms, compiled at PreScore: the scores by rows are the
        // scores by labels.
        let rows: Vec<NodeRow> = infos.iter().map(|n| NodeRow::of(n)).collect();
        let rows: Vec<&NodeRow> = rows.iter().collect();
        let pref = |w: i64, exprs: serde_json::Value| json!({"weight": w, "preference": {"matchExpressions": exprs}});
        let prefs = [
            json!([pref(
                3,
                json!([{"key": "zone", "operator": "In", "values": ["a", "c"]}])
            )]),
            json!([
                pref(2, json!([{"key": "disk", "operator": "Exists"}])),
                pref(
                    5,
                    json!([{"key": "zone", "operator": "NotIn", "values": ["b"]}, {"key": "gen", "operator": "DoesNotExist"}])
                ),
            ]),
            json!([
                pref(7, json!([{"key": "gen", "operator": "Gt", "values": ["4"]}])),
                pref(1, json!([{"key": "zone", "operator": "Exists"}])),
            ]),
        ];
        for terms in prefs {
            let p = pod(
                json!({"containers": [], "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}),
            );
            let mut state = CycleState::default();
            assert!(plugin.pre_score(&mut state, &p, &snapshot, &infos).is_success());
            let mut by_rows = vec![0; infos.len()];
            plugin.score_nodes(&state, &p, &infos, &rows, &mut by_rows).unwrap();
            let by_labels: Vec<i64> = infos.iter().map(|n| plugin.score(&state, &p, n).unwrap()).collect();
            assert_eq!(by_rows, by_labels, "{terms}");
            assert!(by_labels.iter().any(|&s| s > 0), "{terms}");
        }
    }

    #[test]
    fn filter() {
        let st = CycleState::default();
        let ssd_a = labeled("n1", json!({"disk": "ssd", "zone": "a", "gen": "5"}));
        let hdd_b = labeled("n2", json!({"disk": "hdd", "zone": "b"}));
        let sel = pod(json!({"containers": [], "nodeSelector": {"disk": "ssd"}}));
        let req = |exprs: serde_json::Value| {
            pod(
                json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": exprs}}}}),
            )
        };
        let not_in = req(json!([{"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["true"]}]}]));
        let gt = req(json!([{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}]));
        let ored = req(json!([
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
        ]));
        let empty_terms = req(json!([]));
        let cases: [(&PodInfo, &NodeInfo, bool); 9] = [
            (&sel, &ssd_a, true),
            (&sel, &hdd_b, false),
            (&not_in, &hdd_b, true), // NotIn on a missing label matches
            (&gt, &ssd_a, true),
            (&gt, &hdd_b, false), // Gt on a missing label does not
            (&ored, &ssd_a, false),
            (&ored, &hdd_b, true),
            (&empty_terms, &ssd_a, false),
            (&pod(json!({"containers": []})), &hdd_b, true),
        ];
        for (i, (p, n, fits)) in cases.into_iter().enumerate() {
            let s = NodeAffinity::default().filter(&st, p, n);
            assert_eq!(s.is_success(), fits, "case {i}");
            if !fits {
                assert_eq!(s, Status::unresolvable(ERR_REASON_POD));
            }
        }
        let mut cs = CycleState::default();
        assert!(
            NodeAffinity::default()
                .pre_filter(&mut cs, &pod(json!({"containers": []})), &Snapshot::default())
                .is_skip()
        );
    }

    #[test]
    fn score_sums_matching_preferred_weights() {
        let st = CycleState::default();
        let p = pod(
            json!({"containers": [], "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
                {"weight": 30, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}
            ]}}}),
        );
        let nodes = [
            labeled("n1", json!({"zone": "a", "disk": "ssd"})),
            labeled("n2", json!({"zone": "a"})),
            labeled("n3", json!({})),
        ];
        let mut scores: Vec<i64> = nodes
            .iter()
            .map(|n| NodeAffinity::default().score(&st, &p, n).unwrap())
            .collect();
        assert_eq!(scores, [40, 10, 0]);
        NodeAffinity::default().normalize_scores(&st, &p, &mut scores);
        assert_eq!(scores, [100, 25, 0]);
    }

    #[test]
    fn queueing_hint_a_node_that_starts_matching() {
        let p = pod(json!({"containers": [], "nodeSelector": {"disk": "ssd"}}));
        let hdd = node("n", json!({"disk": "hdd"}), json!({}), json!({}));
        let ssd = node("n", json!({"disk": "ssd"}), json!({}), json!({}));
        let upd = |old: &NodeInfo, new: &NodeInfo| {
            NodeAffinity::default().queueing_hint(
                &p,
                &Change::NodeUpdated {
                    old: &old.node,
                    new: &new.node,
                    action: Action::UPDATE_NODE_LABEL,
                },
            )
        };
        assert_eq!(upd(&hdd, &ssd), QueueingHint::Queue);
        assert_eq!(upd(&ssd, &ssd), QueueingHint::Skip, "it matched before");
        assert_eq!(
            NodeAffinity::default().queueing_hint(&p, &Change::NodeAdded(&hdd.node)),
            QueueingHint::Skip
        );
        assert_eq!(
            NodeAffinity::default().queueing_hint(&p, &Change::NodeAdded(&ssd.node)),
            QueueingHint::Queue
        );
    }

    fn with_args(args: serde_json::Value) -> NodeAffinity {
        NodeAffinity::new(crate::plugins::parse_args(Some(&args)).unwrap()).unwrap()
    }

    fn preferred(terms: serde_json::Value) -> PodInfo {
        pod(
            json!({"containers": [], "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}),
        )
    }

    fn term(weight: i64, labels: &[(&str, &str)]) -> serde_json::Value {
        let exprs: Vec<_> = labels
            .iter()
            .map(|(k, v)| json!({"key": k, "operator": "In", "values": [v]}))
            .collect();
        json!({"weight": weight, "preference": {"matchExpressions": exprs}})
    }

    /// kube-scheduler v1.36's `TestNodeAffinityPriority` cases, normalized.
    #[test]
    fn kube_scheduler_score_cases() {
        let st = CycleState::default();
        let l1 = || labeled("node1", json!({"foo": "bar"}));
        let l2 = || labeled("node2", json!({"key": "value"}));
        let l3 = || labeled("node3", json!({"az": "az1"}));
        let l5 = || labeled("node5", json!({"foo": "bar", "key": "value", "az": "az1"}));
        let scores = |pl: &NodeAffinity, p: &PodInfo, nodes: &[NodeInfo]| {
            let mut s: Vec<i64> = nodes.iter().map(|n| pl.score(&st, p, n).unwrap()).collect();
            pl.normalize_scores(&st, p, &mut s);
            s
        };
        let plain = NodeAffinity::default();
        let none = pod(json!({"containers": []}));
        assert_eq!(scores(&plain, &none, &[l1(), l2(), l3()]), [0, 0, 0], "nil affinity");
        let a1 = preferred(json!([term(2, &[("foo", "bar")])]));
        let no_match = preferred(json!([term(2, &[("foo", "nope")])]));
        assert_eq!(scores(&plain, &no_match, &[l1(), l2(), l3()]), [0, 0, 0], "no match");
        assert_eq!(
            scores(&plain, &a1, &[l1(), l2(), l3()]),
            [100, 0, 0],
            "only node1 matches"
        );
        let a2 = preferred(json!([
            term(2, &[("foo", "bar")]),
            term(4, &[("key", "value")]),
            term(5, &[("foo", "bar"), ("key", "value"), ("az", "az1")])
        ]));
        assert_eq!(
            scores(&plain, &a2, &[l1(), l5(), l2()]),
            [18, 100, 36],
            "all match some"
        );
        let added = |t: serde_json::Value| {
            with_args(json!({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [t]}}))
        };
        assert_eq!(
            scores(&added(term(2, &[("foo", "bar")])), &none, &[l1(), l2()]),
            [100, 0],
            "added affinity"
        );
        assert_eq!(
            scores(&added(term(3, &[("key", "value")])), &a1, &[l1(), l2(), l5()]),
            [40, 60, 100],
            "added affinity and the pod's own"
        );
    }

    #[test]
    fn added_required_affinity_is_enforced_first() {
        let st = CycleState::default();
        let pl = with_args(
            json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["batch"]}]}]}}}),
        );
        let batch = labeled("b", json!({"pool": "batch"}));
        let web = labeled("w", json!({"pool": "web"}));
        let none = pod(json!({"containers": []}));
        assert!(pl.filter(&st, &none, &batch).is_success());
        assert_eq!(pl.filter(&st, &none, &web), Status::unresolvable(ERR_REASON_ENFORCED));
        assert!(
            !pl.pre_filter(&mut CycleState::default(), &none, &Snapshot::default())
                .is_skip()
        );
        assert_eq!(
            pl.queueing_hint(&none, &Change::NodeAdded(&web.node)),
            QueueingHint::Skip
        );
        assert_eq!(
            pl.queueing_hint(&none, &Change::NodeAdded(&batch.node)),
            QueueingHint::Queue
        );
        let e = NodeAffinity::new(
            crate::plugins::parse_args(Some(&json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}})))
                .unwrap(),
        )
        .unwrap_err();
        assert!(
            e.starts_with(
                "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value"
            ),
            "{e}"
        );
    }
}
