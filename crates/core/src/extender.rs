//! The wire types of kube-scheduler's extender protocol
//! (`k8s.io/kube-scheduler/extender/v1`), with serde.
//!
//! These Go types carry no JSON tags, so their keys are the Go field names
//! (`Pod`, `NodeNames`, `FailedNodes`, ...), and Go's decoder matches keys
//! case-insensitively: so does this one (`pod` and `POD` read as `Pod`).
//! Objects inside them (`v1.Pod`, `v1.NodeList`) keep Kubernetes' own JSON.
//! A nil pointer, map or slice is `null` on the wire and reads as empty here.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

/// kube-scheduler's `MaxExtenderPriority`: the highest score an extender
/// gives a node.
pub const MAX_EXTENDER_PRIORITY: i64 = 10;

/// Matches a key against a struct's Go field names, as Go does: exactly,
/// else ignoring ASCII case. Allocation-free.
struct FieldName(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for FieldName {
    type Value = Option<&'static str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for FieldName {
    type Value = Option<&'static str>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self
            .0
            .iter()
            .find(|n| **n == v)
            .or_else(|| self.0.iter().find(|n| n.eq_ignore_ascii_case(v)))
            .copied())
    }
}

/// A value that may be `null` (Go's nil): read as the type's default.
struct OrDefault<T>(T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for OrDefault<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(OrDefault(Option::<T>::deserialize(d)?.unwrap_or_default()))
    }
}

/// A Go struct of the protocol: fields serialized under their Go names,
/// read case-insensitively, unknown keys ignored, `null` as empty.
macro_rules! go_struct {
    (
        $(#[$m:meta])*
        pub struct $name:ident {
            $( $(#[$fm:meta])* $field:ident : $ty:ty = $go:literal, )*
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize)]
        pub struct $name {
            $( $(#[$fm])* #[serde(rename = $go)] pub $field: $ty, )*
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                const FIELDS: &[&str] = &[$($go),*];
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("an extender ", stringify!($name), " object"))
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        let mut out = $name::default();
                        while let Some(key) = map.next_key_seed(FieldName(FIELDS))? {
                            match key {
                                $( Some($go) => out.$field = map.next_value::<OrDefault<$ty>>()?.0, )*
                                _ => {
                                    map.next_value::<IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

/// `v1.NodeList` as the request carries it (Kubernetes JSON: `items`).
/// Each node is kept as the JSON it came as, decoded on demand: an
/// extender that knows the nodes needs only their names, and answers with
/// the nodes that passed as they were sent, without a round trip through
/// the object model.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NodeList {
    /// The nodes, as sent.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub items: Vec<Box<RawValue>>,
}

impl PartialEq for NodeList {
    fn eq(&self, other: &Self) -> bool {
        self.items.len() == other.items.len() && self.items.iter().zip(&other.items).all(|(a, b)| a.get() == b.get())
    }
}

impl NodeList {
    /// The name of each node (`metadata.name`, empty when absent), reading
    /// nothing else of it.
    pub fn names(&self) -> Result<Vec<String>, serde_json::Error> {
        #[derive(Deserialize)]
        struct Meta {
            #[serde(default)]
            name: Option<String>,
        }
        #[derive(Deserialize)]
        struct Named {
            #[serde(default)]
            metadata: Option<Meta>,
        }
        self.items
            .iter()
            .map(|raw| {
                let n: Named = serde_json::from_str(raw.get())?;
                Ok(n.metadata.and_then(|m| m.name).unwrap_or_default())
            })
            .collect()
    }

    /// The nodes, decoded.
    pub fn nodes(&self) -> Result<Vec<Node>, serde_json::Error> {
        self.items.iter().map(|raw| serde_json::from_str(raw.get())).collect()
    }
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Box<RawValue>>, D::Error> {
    Ok(Option::<Vec<Box<RawValue>>>::deserialize(d)?.unwrap_or_default())
}

go_struct! {
    /// `ExtenderArgs`: the body of `filter` and `prioritize`.
    pub struct ExtenderArgs {
        /// The pod being scheduled.
        pod: Option<Pod> = "Pod",
        /// The candidate nodes, whole, when the extender is not
        /// `nodeCacheCapable`.
        nodes: Option<NodeList> = "Nodes",
        /// The candidate nodes' names, when it is.
        node_names: Option<Vec<String>> = "NodeNames",
    }
}

go_struct! {
    /// `ExtenderFilterResult`: the answer to `filter`.
    pub struct ExtenderFilterResult {
        /// The nodes that passed, whole (when the request carried `Nodes`).
        nodes: Option<NodeList> = "Nodes",
        /// The names of the nodes that passed (when it carried `NodeNames`).
        node_names: Option<Vec<String>> = "NodeNames",
        /// Node → why it failed, for nodes preemption might help.
        failed_nodes: BTreeMap<String, String> = "FailedNodes",
        /// Node → why it failed, for nodes preemption cannot help.
        failed_and_unresolvable_nodes: BTreeMap<String, String> = "FailedAndUnresolvableNodes",
        /// An error of the extender itself (the whole call failed).
        error: String = "Error",
    }
}

go_struct! {
    /// `HostPriority`: one node's score in the answer to `prioritize` (a
    /// bare JSON array of these, `HostPriorityList`).
    pub struct HostPriority {
        /// The node's name.
        host: String = "Host",
        /// Its score, 0..=[`MAX_EXTENDER_PRIORITY`].
        score: i64 = "Score",
    }
}

go_struct! {
    /// `ExtenderBindingArgs`: the body of `bind`.
    pub struct ExtenderBindingArgs {
        /// The pod's name.
        pod_name: String = "PodName",
        /// The pod's namespace.
        pod_namespace: String = "PodNamespace",
        /// The pod's UID.
        pod_uid: String = "PodUID",
        /// The node to bind it to.
        node: String = "Node",
    }
}

go_struct! {
    /// `ExtenderBindingResult`: the answer to `bind`.
    pub struct ExtenderBindingResult {
        /// Why binding failed (empty: it succeeded).
        error: String = "Error",
    }
}

go_struct! {
    /// `MetaPod`: a victim named by its UID.
    pub struct MetaPod {
        /// The pod's UID.
        uid: String = "UID",
    }
}

go_struct! {
    /// `MetaVictims`: the victims on one node, by UID.
    pub struct MetaVictims {
        /// The pods to evict.
        pods: Vec<MetaPod> = "Pods",
        /// PodDisruptionBudgets their eviction violates.
        num_pdb_violations: i64 = "NumPDBViolations",
    }
}

go_struct! {
    /// `Victims`: the victims on one node, whole.
    pub struct Victims {
        /// The pods to evict.
        pods: Vec<Pod> = "Pods",
        /// PodDisruptionBudgets their eviction violates.
        num_pdb_violations: i64 = "NumPDBViolations",
    }
}

go_struct! {
    /// `ExtenderPreemptionArgs`: the body of `preempt`.
    pub struct ExtenderPreemptionArgs {
        /// The pod that would preempt.
        pod: Option<Pod> = "Pod",
        /// Node → victims, whole (extenders that are not `nodeCacheCapable`).
        node_name_to_victims: BTreeMap<String, Victims> = "NodeNameToVictims",
        /// Node → victims by UID (`nodeCacheCapable` extenders).
        node_name_to_meta_victims: BTreeMap<String, MetaVictims> = "NodeNameToMetaVictims",
    }
}

go_struct! {
    /// `ExtenderPreemptionResult`: the answer to `preempt`.
    pub struct ExtenderPreemptionResult {
        /// Node → victims by UID, for the nodes the extender agrees to.
        node_name_to_meta_victims: BTreeMap<String, MetaVictims> = "NodeNameToMetaVictims",
    }
}

/// A weighted total of the profile's scores (each 0..=100 times its
/// weight, at most `max`) on the extender's scale, 0..=10, rounded to the
/// nearest (halves up): `(total * 10 + max / 2) / max`.
pub fn extender_score(total: i64, max: i64) -> i64 {
    if max <= 0 {
        return 0;
    }
    let total = total.clamp(0, max);
    ((i128::from(total) * i128::from(MAX_EXTENDER_PRIORITY) + i128::from(max) / 2) / i128::from(max)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_go_field_names_read_case_insensitively() {
        let a: ExtenderArgs = serde_json::from_value(json!({
            "pod": {"metadata": {"name": "p"}},
            "NODENAMES": ["a", "b"],
            "Nodes": null,
            "Unknown": 1,
        }))
        .unwrap();
        assert_eq!(a.pod.unwrap().metadata.name.as_deref(), Some("p"));
        assert_eq!(a.node_names, Some(vec!["a".into(), "b".into()]));
        assert_eq!(a.nodes, None);
        let r = ExtenderFilterResult {
            node_names: Some(vec!["a".into()]),
            failed_nodes: BTreeMap::from([("b".into(), "no".into())]),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"Nodes": null, "NodeNames": ["a"], "FailedNodes": {"b": "no"}, "FailedAndUnresolvableNodes": {}, "Error": ""})
        );
        // nil maps and slices from Go read as empty
        let r: ExtenderFilterResult =
            serde_json::from_value(json!({"FailedNodes": null, "FailedAndUnresolvableNodes": null, "Error": ""}))
                .unwrap();
        assert!(r.failed_nodes.is_empty());
        let p: Vec<HostPriority> = serde_json::from_str(r#"[{"Host":"a","Score":7},{"host":"b","score":0}]"#).unwrap();
        assert_eq!(p[0].score + p[1].score, 7);
        let b: ExtenderBindingArgs =
            serde_json::from_str(r#"{"PodName":"p","PodNamespace":"d","PodUID":"u","Node":"n"}"#).unwrap();
        assert_eq!((b.pod_uid.as_str(), b.node.as_str()), ("u", "n"));
    }

    #[test]
    fn scores_map_to_the_extender_range_rounding_halves_up() {
        assert_eq!(extender_score(0, 100), 0);
        assert_eq!(extender_score(100, 100), 10);
        assert_eq!(extender_score(45, 100), 5);
        assert_eq!(extender_score(44, 100), 4);
        assert_eq!(extender_score(150, 300), 5);
        assert_eq!(extender_score(7, 0), 0);
    }
}
