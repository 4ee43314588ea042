//! What a pod says about the pods around it: inter-pod affinity and
//! anti-affinity terms, and topology spread constraints, parsed once with
//! `matchLabelKeys` / `mismatchLabelKeys` merged into their selectors.

use k8s_openapi::api::core::v1::{PodAffinityTerm, PodSpec};

use crate::ModelError;
use crate::node::Labels;
use crate::pod::PodInfo;
use crate::selector::{LabelSelector, Requirement};

/// One pod (anti-)affinity term (kube-scheduler's `AffinityTerm`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AffinityTerm {
    /// The pods it selects, with the label keys merged in.
    pub selector: LabelSelector,
    /// Namespaces named by the term; the pod's own when the term names
    /// none and has no namespace selector.
    pub namespaces: Vec<String>,
    /// `namespaceSelector` (absent: selects nothing).
    pub namespace_selector: LabelSelector,
    /// `topologyKey`.
    pub topology_key: String,
}

impl AffinityTerm {
    fn parse(
        t: &PodAffinityTerm,
        pod_ns: &str,
        labels: &Labels,
        object: &str,
        field: &str,
    ) -> Result<Self, ModelError> {
        let mut selector = LabelSelector::parse(t.label_selector.as_ref(), object, &format!("{field}.labelSelector"))?;
        // As kube-scheduler (and, since 1.33, the API server) merges them:
        // a key the pod does not carry adds nothing.
        if !selector.is_nothing() {
            for k in t.match_label_keys.iter().flatten() {
                if let Some(v) = labels.get(k) {
                    selector.add(Requirement::equals(k, v));
                }
            }
            for k in t.mismatch_label_keys.iter().flatten() {
                if let Some(v) = labels.get(k) {
                    selector.add(Requirement::differs(k, v));
                }
            }
        }
        let namespace_selector = LabelSelector::parse(
            t.namespace_selector.as_ref(),
            object,
            &format!("{field}.namespaceSelector"),
        )?;
        let mut namespaces = t.namespaces.clone().unwrap_or_default();
        if namespaces.is_empty() && t.namespace_selector.is_none() {
            namespaces.push(pod_ns.to_owned());
        }
        if t.topology_key.is_empty() {
            return Err(ModelError::new(
                object,
                format!("{field}.topologyKey"),
                "must not be empty",
            ));
        }
        Ok(AffinityTerm {
            selector,
            namespaces,
            namespace_selector,
            topology_key: t.topology_key.clone(),
        })
    }

    /// Whether `pod` (whose namespace has `ns_labels`) is one of the pods
    /// this term selects (kube-scheduler's `AffinityTerm.Matches`).
    #[inline]
    pub fn matches(&self, pod: &PodInfo, ns_labels: &Labels) -> bool {
        (self.namespaces.contains(&pod.namespace) || self.namespace_selector.matches(ns_labels))
            && self.selector.matches(&pod.labels)
    }
}

/// A preferred term and its weight.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WeightedTerm {
    /// 1–100.
    pub weight: i64,
    /// The term.
    pub term: AffinityTerm,
}

/// A pod's `podAffinity` and `podAntiAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PodAffinity {
    /// `podAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_affinity: Vec<AffinityTerm>,
    /// `podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_anti_affinity: Vec<AffinityTerm>,
    /// `podAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_affinity: Vec<WeightedTerm>,
    /// `podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_anti_affinity: Vec<WeightedTerm>,
}

impl PodAffinity {
    /// Parses the pod's terms; `None` when it has none.
    pub fn parse(spec: &PodSpec, ns: &str, labels: &Labels, object: &str) -> Result<Option<Self>, ModelError> {
        let Some(a) = spec.affinity.as_ref() else {
            return Ok(None);
        };
        let required = |terms: Option<&Vec<PodAffinityTerm>>, field: &str| {
            terms
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, t)| AffinityTerm::parse(t, ns, labels, object, &format!("{field}[{i}]")))
                .collect::<Result<Vec<_>, _>>()
        };
        let preferred = |terms: Option<&Vec<k8s_openapi::api::core::v1::WeightedPodAffinityTerm>>, field: &str| {
            terms
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, t)| {
                    Ok(WeightedTerm {
                        weight: i64::from(t.weight),
                        term: AffinityTerm::parse(
                            &t.pod_affinity_term,
                            ns,
                            labels,
                            object,
                            &format!("{field}[{i}].podAffinityTerm"),
                        )?,
                    })
                })
                .collect::<Result<Vec<_>, ModelError>>()
        };
        let aff = a.pod_affinity.as_ref();
        let anti = a.pod_anti_affinity.as_ref();
        let out = PodAffinity {
            required_affinity: required(
                aff.and_then(|x| x.required_during_scheduling_ignored_during_execution.as_ref()),
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            )?,
            required_anti_affinity: required(
                anti.and_then(|x| x.required_during_scheduling_ignored_during_execution.as_ref()),
                "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            )?,
            preferred_affinity: preferred(
                aff.and_then(|x| x.preferred_during_scheduling_ignored_during_execution.as_ref()),
                "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution",
            )?,
            preferred_anti_affinity: preferred(
                anti.and_then(|x| x.preferred_during_scheduling_ignored_during_execution.as_ref()),
                "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution",
            )?,
        };
        Ok((!out.is_empty()).then_some(out))
    }

    /// Whether it has no term at all.
    pub fn is_empty(&self) -> bool {
        self.required_affinity.is_empty()
            && self.required_anti_affinity.is_empty()
            && self.preferred_affinity.is_empty()
            && self.preferred_anti_affinity.is_empty()
    }
}

/// `whenUnsatisfiable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnsatisfiable {
    /// A filter: nodes that would exceed the skew are rejected.
    DoNotSchedule,
    /// A score: nodes that reduce the skew are preferred.
    ScheduleAnyway,
}

/// One topology spread constraint (kube-scheduler's `topologySpreadConstraint`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpreadConstraint {
    /// `maxSkew` (≥ 1).
    pub max_skew: i64,
    /// `topologyKey`.
    pub topology_key: String,
    /// `whenUnsatisfiable`.
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// The pods counted, with `matchLabelKeys` merged in.
    pub selector: LabelSelector,
    /// `minDomains` (1 when unset).
    pub min_domains: i64,
    /// `nodeAffinityPolicy: Honor` (the default): only nodes matching the
    /// pod's node affinity and selector count.
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore): only nodes whose taints
    /// the pod tolerates count.
    pub honor_node_taints: bool,
}

impl SpreadConstraint {
    /// Parses `spec.topologySpreadConstraints`.
    pub fn parse_all(spec: &PodSpec, labels: &Labels, object: &str) -> Result<Vec<Self>, ModelError> {
        let mut out = Vec::new();
        for (i, c) in spec.topology_spread_constraints.iter().flatten().enumerate() {
            let field = format!("spec.topologySpreadConstraints[{i}]");
            if c.max_skew < 1 {
                return Err(ModelError::new(
                    object,
                    format!("{field}.maxSkew"),
                    "must be greater than zero",
                ));
            }
            if c.topology_key.is_empty() {
                return Err(ModelError::new(
                    object,
                    format!("{field}.topologyKey"),
                    "must not be empty",
                ));
            }
            let when_unsatisfiable = match c.when_unsatisfiable.as_str() {
                "DoNotSchedule" => WhenUnsatisfiable::DoNotSchedule,
                "ScheduleAnyway" => WhenUnsatisfiable::ScheduleAnyway,
                other => {
                    return Err(ModelError::new(
                        object,
                        format!("{field}.whenUnsatisfiable"),
                        format!("unsupported value {other:?}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\""),
                    ));
                }
            };
            let policy = |v: Option<&String>, name: &str, default: bool| match v.map(String::as_str) {
                None | Some("") => Ok(default),
                Some("Honor") => Ok(true),
                Some("Ignore") => Ok(false),
                Some(other) => Err(ModelError::new(
                    object,
                    format!("{field}.{name}"),
                    format!("unsupported value {other:?}: supported values: \"Honor\", \"Ignore\""),
                )),
            };
            let min_domains = match c.min_domains {
                None => 1,
                Some(m) if m >= 1 && c.when_unsatisfiable == "DoNotSchedule" => i64::from(m),
                Some(m) if m >= 1 => {
                    return Err(ModelError::new(
                        object,
                        format!("{field}.minDomains"),
                        format!("{m}: can only use minDomains if whenUnsatisfiable=DoNotSchedule"),
                    ));
                }
                Some(_) => {
                    return Err(ModelError::new(
                        object,
                        format!("{field}.minDomains"),
                        "must be greater than zero",
                    ));
                }
            };
            let mut selector =
                LabelSelector::parse(c.label_selector.as_ref(), object, &format!("{field}.labelSelector"))?;
            if !selector.is_nothing() {
                for k in c.match_label_keys.iter().flatten() {
                    if let Some(v) = labels.get(k) {
                        selector.add(Requirement::equals(k, v));
                    }
                }
            }
            out.push(SpreadConstraint {
                max_skew: i64::from(c.max_skew),
                topology_key: c.topology_key.clone(),
                when_unsatisfiable,
                selector,
                min_domains,
                honor_node_affinity: policy(c.node_affinity_policy.as_ref(), "nodeAffinityPolicy", true)?,
                honor_node_taints: policy(c.node_taints_policy.as_ref(), "nodeTaintsPolicy", false)?,
            });
        }
        Ok(out)
    }
}
