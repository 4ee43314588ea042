//! PodGroups (`scheduling.k8s.io/v1alpha2`), the groups pods name in
//! `spec.schedulingGroup.podGroupName`, and which pods each group has
//! (kube-scheduler's `PodGroupState`): what GangScheduling's PreEnqueue
//! and Permit, and the scheduler's pod group cycle, read.

use std::sync::Arc;

use k8s_openapi::api::scheduling::v1alpha2::PodGroup as PodGroupObject;
use rustc_hash::FxHashMap;

use crate::ModelError;
use crate::pod::PodKey;

/// The `apiVersion` of PodGroups.
pub const API_VERSION: &str = "scheduling.k8s.io/v1alpha2";

/// How a group's pods are scheduled (`spec.schedulingPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// `basic`: pod by pod, each on its own.
    Basic,
    /// `gang`: none binds unless `min_count` of them can.
    Gang {
        /// `gang.minCount`.
        min_count: u32,
    },
}

/// What the engine reads of a PodGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodGroup {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.generation` (a condition's `observedGeneration`).
    pub generation: i64,
    /// `spec.schedulingPolicy`.
    pub policy: Policy,
    /// The first field of the spec the engine does not implement: the
    /// group's pods are refused naming it, never placed as if it were
    /// absent.
    pub unsupported: Option<&'static str>,
    /// Its `PodGroupScheduled` condition is `True` (a later cycle for
    /// extra pods does not set it back to `False`).
    pub scheduled: bool,
}

impl PodGroup {
    /// Reads a PodGroup. A group without a name, or with a policy that is
    /// neither `basic` nor `gang` (or a `gang` whose `minCount` is not
    /// positive), is an error naming the field.
    pub fn parse(o: &PodGroupObject) -> Result<Self, ModelError> {
        let namespace = o.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name = o.metadata.name.clone().unwrap_or_default();
        let object = format!("PodGroup {namespace}/{name}");
        if name.is_empty() {
            return Err(ModelError::new(object, "metadata.name", "is empty"));
        }
        let policy = &o.spec.scheduling_policy;
        let policy = match (&policy.basic, &policy.gang) {
            (Some(_), None) => Policy::Basic,
            (None, Some(g)) => match u32::try_from(g.min_count) {
                Ok(n) if n > 0 => Policy::Gang { min_count: n },
                _ => {
                    return Err(ModelError::new(
                        object,
                        "spec.schedulingPolicy.gang.minCount",
                        format!("must be greater than zero, not {}", g.min_count),
                    ));
                }
            },
            _ => {
                return Err(ModelError::new(
                    object,
                    "spec.schedulingPolicy",
                    "must name exactly one of basic and gang",
                ));
            }
        };
        let spec = &o.spec;
        let unsupported = if spec
            .scheduling_constraints
            .as_ref()
            .and_then(|c| c.topology.as_ref())
            .is_some_and(|t| !t.is_empty())
        {
            Some("spec.schedulingConstraints.topology")
        } else if spec.priority_class_name.as_deref().is_some_and(|n| !n.is_empty()) {
            Some("spec.priorityClassName")
        } else if spec.priority.is_some() {
            Some("spec.priority")
        } else if spec.disruption_mode.as_deref().is_some_and(|m| m != "Pod") {
            Some("spec.disruptionMode")
        } else if spec.resource_claims.as_ref().is_some_and(|c| !c.is_empty()) {
            Some("spec.resourceClaims")
        } else {
            None
        };
        let scheduled = o
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == SCHEDULED_CONDITION && c.status == "True");
        Ok(PodGroup {
            namespace,
            name,
            uid: o.metadata.uid.clone().unwrap_or_default(),
            generation: o.metadata.generation.unwrap_or_default(),
            policy,
            unsupported,
            scheduled,
        })
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        group_key(&self.namespace, &self.name)
    }
}

/// The condition the scheduler sets on a PodGroup after each of its
/// cycles (`PodGroupScheduled`).
pub const SCHEDULED_CONDITION: &str = "PodGroupScheduled";

/// `namespace/name` of a group.
pub fn group_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// One pod of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The pod's `namespace/name`.
    pub key: PodKey,
    /// Its UID.
    pub uid: String,
}

/// A group: its object, when the API has it, and the pods that name it.
#[derive(Debug, Default, Clone)]
struct Group {
    object: Option<Arc<PodGroup>>,
    /// By `namespace/name`, with its UID: every pod that names the group
    /// and has not finished or been deleted, whatever its state (gated,
    /// queued, assumed, bound).
    pods: FxHashMap<PodKey, String>,
}

/// The PodGroups and their pods.
#[derive(Debug, Default, Clone)]
pub struct PodGroups {
    groups: FxHashMap<String, Group>,
    /// A member's `namespace/name` → its group's key.
    group_of: FxHashMap<PodKey, String>,
}

impl PodGroups {
    /// Adds or replaces a group's object; true if the group had none.
    pub fn upsert(&mut self, group: PodGroup) -> bool {
        let g = self.groups.entry(group.key()).or_default();
        let new = g.object.is_none();
        g.object = Some(Arc::new(group));
        new
    }

    /// Forgets a group's object (its pods stay members: they wait for it
    /// again).
    pub fn remove(&mut self, namespace: &str, name: &str) {
        let key = group_key(namespace, name);
        if let Some(g) = self.groups.get_mut(&key) {
            g.object = None;
            if g.pods.is_empty() {
                self.groups.remove(&key);
            }
        }
    }

    /// The group `namespace/name`, if the API has it.
    pub fn get(&self, key: &str) -> Option<&Arc<PodGroup>> {
        self.groups.get(key).and_then(|g| g.object.as_ref())
    }

    /// The keys of the groups whose object is known.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.groups.iter().filter(|(_, g)| g.object.is_some()).map(|(k, _)| k)
    }

    /// Records that the pod `key` (of `uid`) names the group `group`;
    /// false if it was a member already.
    pub fn add_pod(&mut self, group: &str, key: &PodKey, uid: &str) -> bool {
        if let Some(old) = self.group_of.get(key) {
            let same = old == group
                && self
                    .groups
                    .get(group)
                    .and_then(|g| g.pods.get(key))
                    .is_some_and(|u| u == uid);
            if same {
                return false;
            }
            let old = old.clone();
            self.remove_pod(&old, key);
        }
        self.group_of.insert(key.clone(), group.to_owned());
        self.groups
            .entry(group.to_owned())
            .or_default()
            .pods
            .insert(key.clone(), uid.to_owned());
        true
    }

    /// The pod `key` (of `uid`; empty: whichever) no longer counts
    /// (deleted, or finished).
    pub fn remove_pod_key(&mut self, key: &str, uid: &str) {
        let Some(group) = self.group_of.get(key).cloned() else {
            return;
        };
        let same = uid.is_empty()
            || self
                .groups
                .get(&group)
                .and_then(|g| g.pods.get(key))
                .is_some_and(|u| u == uid);
        if same {
            self.remove_pod(&group, key);
        }
    }

    fn remove_pod(&mut self, group: &str, key: &str) {
        self.group_of.remove(key);
        if let Some(g) = self.groups.get_mut(group) {
            g.pods.remove(key);
            if g.pods.is_empty() && g.object.is_none() {
                self.groups.remove(group);
            }
        }
    }

    /// The group of the member `key`.
    pub fn group_of(&self, key: &str) -> Option<&str> {
        self.group_of.get(key).map(String::as_str)
    }

    /// The group's pods, in no particular order.
    pub fn members(&self, group: &str) -> impl Iterator<Item = Member> + '_ {
        self.groups.get(group).into_iter().flat_map(|g| {
            g.pods.iter().map(|(key, uid)| Member {
                key: key.clone(),
                uid: uid.clone(),
            })
        })
    }

    /// How many pods name the group (kube-scheduler's `AllPodsCount`).
    pub fn all_pods(&self, group: &str) -> usize {
        self.groups.get(group).map_or(0, |g| g.pods.len())
    }

    /// Number of groups known (by object or by pods).
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Whether none is known.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn group(spec: serde_json::Value) -> Result<PodGroup, ModelError> {
        let o: PodGroupObject = serde_json::from_value(json!({
            "apiVersion": API_VERSION, "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns", "uid": "u", "generation": 2},
            "spec": spec,
        }))
        .unwrap();
        PodGroup::parse(&o)
    }

    #[test]
    fn policies_and_fields_are_read() {
        let g = group(json!({"schedulingPolicy": {"gang": {"minCount": 3}}})).unwrap();
        assert_eq!(g.policy, Policy::Gang { min_count: 3 });
        assert_eq!((g.generation, g.unsupported, g.key().as_str()), (2, None, "ns/g"));
        let g = group(json!({"schedulingPolicy": {"basic": {}}, "disruptionMode": "Pod"})).unwrap();
        assert_eq!((g.policy, g.unsupported), (Policy::Basic, None));
        for (spec, field) in [
            (
                json!({"schedulingPolicy": {"basic": {}}, "schedulingConstraints": {"topology": [{"key": "rack"}]}}),
                "spec.schedulingConstraints.topology",
            ),
            (
                json!({"schedulingPolicy": {"basic": {}}, "priorityClassName": "high"}),
                "spec.priorityClassName",
            ),
            (
                json!({"schedulingPolicy": {"basic": {}}, "priority": 5}),
                "spec.priority",
            ),
            (
                json!({"schedulingPolicy": {"basic": {}}, "disruptionMode": "PodGroup"}),
                "spec.disruptionMode",
            ),
        ] {
            assert_eq!(group(spec).unwrap().unsupported, Some(field));
        }
        let e = group(json!({"schedulingPolicy": {"gang": {"minCount": 0}}})).unwrap_err();
        assert!(e.to_string().contains("spec.schedulingPolicy.gang.minCount"), "{e}");
        let e = group(json!({"schedulingPolicy": {}})).unwrap_err();
        assert!(e.to_string().contains("spec.schedulingPolicy"), "{e}");
    }

    #[test]
    fn members_are_counted_until_they_leave() {
        let mut gs = PodGroups::default();
        let k = |n: &str| PodKey::from(format!("ns/{n}"));
        assert!(gs.add_pod("ns/g", &k("a"), "ua"));
        assert!(!gs.add_pod("ns/g", &k("a"), "ua"));
        gs.add_pod("ns/g", &k("b"), "ub");
        assert_eq!(gs.all_pods("ns/g"), 2);
        assert!(gs.get("ns/g").is_none());
        let g = group(json!({"schedulingPolicy": {"gang": {"minCount": 2}}})).unwrap();
        assert!(gs.upsert(g.clone()));
        assert!(!gs.upsert(g));
        gs.remove_pod_key("ns/a", "other");
        assert_eq!(gs.all_pods("ns/g"), 2, "another pod of that name");
        gs.remove_pod_key("ns/a", "ua");
        assert_eq!(gs.all_pods("ns/g"), 1);
        assert_eq!(gs.group_of("ns/b"), Some("ns/g"));
        gs.remove("ns", "g");
        assert!(gs.get("ns/g").is_none());
        assert_eq!(gs.all_pods("ns/g"), 1, "its pods wait for it again");
        gs.remove_pod_key("ns/b", "");
        assert!(gs.is_empty());
    }
}
