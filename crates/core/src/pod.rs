//! Pods as the scheduler sees them: everything the plugins read, parsed once
//! when the pod enters the cache or the queue.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::ModelError;
use crate::constraints::{PodAffinity, SpreadConstraint};
use crate::node::{Taint, TaintEffect};
use crate::resources::{PodRequests, pod_requests};
use crate::selector::Term;

/// `namespace/name`.
pub type PodKey = String;

/// The operator of a toleration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TolerationOperator {
    /// The taint's value must equal the toleration's.
    Equal,
    /// Any value.
    Exists,
}

/// A pod toleration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    /// Key; empty with `Exists` tolerates every taint.
    pub key: String,
    /// Operator.
    pub operator: TolerationOperator,
    /// Value for `Equal`.
    pub value: String,
    /// Effect; `None` matches every effect.
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// Whether this toleration tolerates the taint (Kubernetes'
    /// `Toleration.ToleratesTaint`).
    #[inline]
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Exists => true,
            TolerationOperator::Equal => self.value == taint.value,
        }
    }
}

/// Whether any toleration tolerates the taint.
#[inline]
pub fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| t.tolerates(taint))
}

/// A transport protocol of a host port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// TCP (the default).
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
}

/// A host port a pod binds on its node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// Host IP; `0.0.0.0` (the default) means every address.
    pub ip: String,
    /// Protocol.
    pub protocol: Protocol,
    /// Port number.
    pub port: i32,
}

impl HostPort {
    /// Whether two host ports cannot both be bound on one node: same
    /// protocol and port, and the same IP or either is `0.0.0.0`.
    #[inline]
    pub fn conflicts(&self, other: &HostPort) -> bool {
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip || self.ip == "0.0.0.0" || other.ip == "0.0.0.0")
    }
}

/// A pod, parsed for scheduling.
#[derive(Debug, Clone)]
pub struct PodInfo {
    /// `namespace/name`.
    pub key: PodKey,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `spec.schedulerName` (`default-scheduler` when unset).
    pub scheduler_name: String,
    /// `spec.priority` (0 when unset): what the API server resolved from
    /// the pod's PriorityClass.
    pub priority: i32,
    /// `spec.preemptionPolicy: Never`: the pod waits rather than preempt.
    pub preempt_never: bool,
    /// `status.nominatedNodeName`: the node a preemption made room on,
    /// which the pod waits for.
    pub nominated_node: Option<String>,
    /// `status.startTime` in nanoseconds since the epoch (from 1677 to
    /// 2262, clamped), if it started (preemption spares pods that have run
    /// longer).
    pub start_time: Option<i64>,
    /// Whether a scheduler's preemption marked it (the `DisruptionTarget`
    /// condition with reason `PreemptionByScheduler`).
    pub preempted: bool,
    /// `spec.nodeName`, when the pod is bound (or asks for a node).
    pub node_name: Option<String>,
    /// Whether the pod has terminated (`Succeeded`/`Failed`): it uses nothing.
    pub terminal: bool,
    /// Whether it is being deleted (`metadata.deletionTimestamp`): a
    /// pending pod that is being deleted is not scheduled.
    pub deleting: bool,
    /// Requests.
    pub requests: PodRequests,
    /// `spec.nodeSelector`.
    pub node_selector: Vec<(String, String)>,
    /// Required node affinity terms (ORed), if any.
    pub required_affinity: Option<Vec<Term>>,
    /// Preferred node affinity terms with their weights.
    pub preferred_affinity: Vec<(i64, Term)>,
    /// Tolerations.
    pub tolerations: Vec<Toleration>,
    /// Host ports of its containers.
    pub host_ports: Vec<HostPort>,
    /// Images of init and app containers, normalised (`:latest` added).
    pub images: Vec<String>,
    /// Images of its image volumes (`spec.volumes[].image.reference`),
    /// normalised: ImageLocality counts them beside the containers'.
    pub volume_images: Vec<String>,
    /// Number of init and app containers.
    pub containers: usize,
    /// `metadata.labels`.
    pub labels: crate::node::Labels,
    /// `spec.affinity.podAffinity` and `podAntiAffinity`, if any term.
    pub pod_affinity: Option<Box<PodAffinity>>,
    /// `spec.topologySpreadConstraints`.
    pub spread_constraints: Vec<SpreadConstraint>,
    /// Its controller (`apiVersion`, `kind`, `name` of the owner reference
    /// with `controller: true`), for PodTopologySpread's default selector.
    pub controller: Option<Box<(String, String, String)>>,
    /// `spec.schedulingGates`, by name: while any remains the pod is not
    /// scheduled.
    pub scheduling_gates: Vec<String>,
    /// `spec.schedulingGroup.podGroupName`: the PodGroup of its namespace
    /// the pod is scheduled with (GangScheduling).
    pub scheduling_group: Option<Arc<str>>,
    /// The first field of the spec that constrains placement in a way the
    /// engine does not implement (a volume source this version does not
    /// know): such a pod is refused, never placed as if the field were
    /// absent.
    pub unsupported: Option<String>,
    /// Its volumes, as the volume plugins read them.
    pub volumes: crate::storage::PodVolumes,
    /// `spec.resourceClaims`, each with the ResourceClaim it names
    /// (DynamicResources).
    pub resource_claims: Vec<PodResourceClaim>,
    /// The object as received, packed (see [`PodObject`]).
    pub object: PodObject,
}

/// A pod's object as received, kept as its JSON: a few hundred bytes where
/// the parsed `Pod` takes several kilobytes (its 2.4 KB struct and the
/// strings, maps and vectors under it). Everything the engine reads of a
/// pod is parsed into [`PodInfo`] once; the object itself is read seldom
/// (a plugin asking for the pod's JSON or a field the contract passes as
/// is, an update compared with the version before, a failure's condition),
/// and a cluster can hold tens of thousands of pending pods at once.
/// Cloning shares the text.
#[derive(Clone)]
pub struct PodObject(Arc<str>);

impl PodObject {
    /// Packs a pod.
    pub fn pack(pod: &Pod) -> Self {
        // A `Pod` serializes infallibly (strings, numbers, maps with string
        // keys): this cannot fail.
        PodObject(serde_json::to_string(pod).expect("a Pod serializes to JSON").into())
    }

    /// `{}`, shared: a placeholder until the object is packed.
    fn empty() -> Self {
        static EMPTY: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
        PodObject(EMPTY.get_or_init(|| Arc::from("{}")).clone())
    }

    /// The pod, parsed again from its JSON.
    pub fn pod(&self) -> Pod {
        // The text is what `pack` wrote: k8s-openapi's types read back what
        // they write.
        serde_json::from_str(&self.0).expect("a packed Pod parses")
    }

    /// The object's JSON, as the API server would send it.
    pub fn json(&self) -> &str {
        &self.0
    }

    /// Whether both are the same packed object (not only equal text).
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl std::fmt::Debug for PodObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PodObject({} bytes)", self.0.len())
    }
}

/// Adds `:latest` to an image name without a tag, as kube-scheduler's
/// ImageLocality does before comparing with node images.
pub fn normalized_image_name(name: &str) -> String {
    if name.rfind(':').map_or(-1, |i| i as isize) <= name.rfind('/').map_or(-1, |i| i as isize) {
        format!("{name}:latest")
    } else {
        name.to_owned()
    }
}

impl PodInfo {
    /// What is kept of a bound or finished pod's object: what names the
    /// pod (name, namespace, UID, labels). Nothing reads more of it: its
    /// spec and status are parsed into the fields above, and the object is
    /// most of its memory (a cluster's bound pods far outnumber its pending
    /// ones).
    fn slim_object(&self) -> Pod {
        let labels =
            (!self.labels.is_empty()).then(|| self.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                uid: (!self.uid.is_empty()).then(|| self.uid.clone()),
                labels,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// [`PodInfo::from_pod`] as the scheduler keeps a pod: a bound or
    /// finished pod keeps of its object only what names it.
    pub fn for_cache(pod: &Pod) -> Result<Self, ModelError> {
        let mut info = Self::parse(pod)?;
        info.object = if info.node_name.is_some() || info.terminal {
            PodObject::pack(&info.slim_object())
        } else {
            PodObject::pack(pod)
        };
        Ok(info)
    }

    /// Parses a Pod. A malformed field is an error naming the pod and field.
    pub fn from_pod(pod: &Pod) -> Result<Self, ModelError> {
        let mut info = Self::parse(pod)?;
        info.object = PodObject::pack(pod);
        Ok(info)
    }

    /// Parses everything but the object, which is left empty.
    fn parse(pod: &Pod) -> Result<Self, ModelError> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name = pod.metadata.name.clone().unwrap_or_default();
        if name.is_empty() {
            return Err(ModelError::new(
                format!("Pod in {namespace}"),
                "metadata.name",
                "is empty",
            ));
        }
        let object = format!("Pod {namespace}/{name}");
        let default_spec = Default::default();
        let spec = pod.spec.as_ref().unwrap_or(&default_spec);
        // A bound pod counts what an in-place resize left it; a pending pod
        // its spec (kube-scheduler does the same).
        let bound = spec.node_name.as_deref().is_some_and(|n| !n.is_empty());
        let requests = pod_requests(spec, pod.status.as_ref().filter(|_| bound), &object)?;
        let affinity = spec.affinity.as_ref().and_then(|a| a.node_affinity.as_ref());
        let required_affinity = match affinity.and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref()) {
            Some(sel) => Some(
                sel.node_selector_terms
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        Term::parse(t, &object, &format!("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let preferred_affinity = affinity
            .and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref())
            .into_iter()
            .flatten()
            .enumerate()
            .filter(|(_, p)| p.weight != 0)
            .map(|(i, p)| {
                let t = Term::parse(
                    &p.preference,
                    &object,
                    &format!(
                        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference"
                    ),
                )?;
                Ok((i64::from(p.weight), t))
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        let mut tolerations = Vec::new();
        for (i, t) in spec.tolerations.iter().flatten().enumerate() {
            let field = format!("spec.tolerations[{i}]");
            let operator = match t.operator.as_deref().unwrap_or("Equal") {
                "Equal" | "" => TolerationOperator::Equal,
                "Exists" => TolerationOperator::Exists,
                // Operators this version does not know tolerate nothing.
                _ => continue,
            };
            let effect = match t.effect.as_deref().unwrap_or("") {
                "" => None,
                e => Some(TaintEffect::parse(e).ok_or_else(|| {
                    ModelError::new(&object, format!("{field}.effect"), format!("unknown effect {e:?}"))
                })?),
            };
            tolerations.push(Toleration {
                key: t.key.clone().unwrap_or_default(),
                operator,
                value: t.value.clone().unwrap_or_default(),
                effect,
            });
        }
        let mut host_ports = Vec::new();
        let sidecars = spec
            .init_containers
            .iter()
            .flatten()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"));
        for c in spec.containers.iter().chain(sidecars) {
            for p in c.ports.iter().flatten() {
                let port = p.host_port.unwrap_or(0);
                if port <= 0 {
                    continue;
                }
                let protocol = match p.protocol.as_deref().unwrap_or("TCP") {
                    "UDP" => Protocol::Udp,
                    "SCTP" => Protocol::Sctp,
                    _ => Protocol::Tcp,
                };
                let ip = match p.host_ip.as_deref() {
                    None | Some("") => "0.0.0.0".to_owned(),
                    Some(ip) => ip.to_owned(),
                };
                host_ports.push(HostPort { ip, protocol, port });
            }
        }
        let containers = spec.init_containers.iter().flatten().chain(&spec.containers);
        let images: Vec<String> = containers
            .clone()
            .filter_map(|c| c.image.as_deref())
            .map(normalized_image_name)
            .collect();
        let volume_images: Vec<String> = spec
            .volumes
            .iter()
            .flatten()
            .filter_map(|v| v.image.as_ref())
            .map(|i| normalized_image_name(i.reference.as_deref().unwrap_or_default()))
            .collect();
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        let labels: crate::node::Labels = crate::node::labels_of(pod.metadata.labels.as_ref());
        let pod_affinity = PodAffinity::parse(spec, &namespace, &labels, &object)?.map(Box::new);
        let spread_constraints = SpreadConstraint::parse_all(spec, &labels, &object)?;
        let volumes = crate::storage::PodVolumes::parse(spec, &name);
        Ok(PodInfo {
            key: format!("{namespace}/{name}"),
            namespace,
            name,
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            scheduler_name: spec
                .scheduler_name
                .clone()
                .unwrap_or_else(|| "default-scheduler".into()),
            priority: spec.priority.unwrap_or(0),
            preempt_never: spec.preemption_policy.as_deref() == Some("Never"),
            nominated_node: pod
                .status
                .as_ref()
                .and_then(|s| s.nominated_node_name.clone())
                .filter(|n| !n.is_empty()),
            start_time: pod.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| {
                let ns = t.0.as_nanosecond();
                i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN } else { i64::MAX })
            }),
            preempted: pod
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| {
                    c.type_ == "DisruptionTarget"
                        && c.status == "True"
                        && c.reason.as_deref() == Some("PreemptionByScheduler")
                }),
            node_name: spec.node_name.clone().filter(|n| !n.is_empty()),
            terminal: matches!(phase, Some("Succeeded" | "Failed")),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            requests,
            node_selector: spec
                .node_selector
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            required_affinity,
            preferred_affinity,
            tolerations,
            host_ports,
            images,
            volume_images,
            containers: containers.count(),
            labels,
            pod_affinity,
            spread_constraints,
            controller: pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
                .map(|o| Box::new((o.api_version.clone(), o.kind.clone(), o.name.clone()))),
            scheduling_gates: spec.scheduling_gates.iter().flatten().map(|g| g.name.clone()).collect(),
            scheduling_group: spec
                .scheduling_group
                .as_ref()
                .and_then(|g| g.pod_group_name.as_deref())
                .map(Arc::from),
            unsupported: unsupported_field(&volumes),
            resource_claims: spec
                .resource_claims
                .iter()
                .flatten()
                .map(|c| PodResourceClaim::parse(c, pod.status.as_ref()))
                .collect(),
            volumes: volumes.unwrap_or_default(),
            object: PodObject::empty(),
        })
    }
}

/// One entry of a pod's `spec.resourceClaims`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodResourceClaim {
    /// `name`, as containers refer to it.
    pub name: String,
    /// The ResourceClaim it names.
    pub claim: ClaimName,
}

/// The ResourceClaim a pod's claim names (`resourceclaim.Name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimName {
    /// `resourceClaimName`: an existing claim, shared or not.
    Named(String),
    /// Generated from `resourceClaimTemplateName`, named in
    /// `status.resourceClaimStatuses`: it must be owned by the pod.
    Generated(String),
    /// From a template, with a status entry that names no claim (none was
    /// needed): nothing to allocate.
    NotNeeded,
    /// From a template, not created yet (no status entry).
    NotCreated,
    /// Neither field set.
    Unsupported,
}

impl PodResourceClaim {
    fn parse(
        c: &k8s_openapi::api::core::v1::PodResourceClaim,
        status: Option<&k8s_openapi::api::core::v1::PodStatus>,
    ) -> Self {
        let claim = match (&c.resource_claim_name, &c.resource_claim_template_name) {
            (Some(n), _) => ClaimName::Named(n.clone()),
            (None, Some(_)) => match status
                .and_then(|s| s.resource_claim_statuses.as_ref())
                .and_then(|l| l.iter().find(|s| s.name == c.name))
            {
                Some(s) => match &s.resource_claim_name {
                    Some(n) => ClaimName::Generated(n.clone()),
                    None => ClaimName::NotNeeded,
                },
                None => ClaimName::NotCreated,
            },
            (None, None) => ClaimName::Unsupported,
        };
        Self {
            name: c.name.clone(),
            claim,
        }
    }
}

/// The first field of the spec that kube-scheduler would act on and this
/// engine does not implement: a volume source this version does not know
/// (`volumes` holds that error). Resource claims and scheduling groups are
/// plugins' (DynamicResources, GangScheduling), which a profile may
/// disable: the framework refuses them then.
fn unsupported_field(volumes: &Result<crate::storage::PodVolumes, String>) -> Option<String> {
    volumes.as_ref().err().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The packed object reads back as the pod it was made from, and its
    /// text is the pod's JSON; a bound pod keeps only what names it.
    #[test]
    fn the_object_is_kept_packed() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "a"},
                "annotations": {"note": "x"}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}],
                "tolerations": [{"key": "k", "operator": "Exists"}]},
            "status": {"phase": "Pending"}
        }))
        .unwrap();
        let info = PodInfo::from_pod(&pod).unwrap();
        assert_eq!(info.object.pod(), pod);
        assert_eq!(info.object.json(), serde_json::to_string(&pod).unwrap());
        assert!(PodObject::ptr_eq(&info.object, &info.clone().object));
        assert!(!PodObject::ptr_eq(
            &info.object,
            &PodInfo::from_pod(&pod).unwrap().object
        ));
        let mut bound = pod.clone();
        bound.spec.as_mut().unwrap().node_name = Some("n1".into());
        let kept = PodInfo::for_cache(&bound).unwrap();
        assert_eq!(kept.requests.requests.milli_cpu, 1000, "parsed from the whole object");
        let slim = kept.object.pod();
        assert!(slim.spec.is_none() && slim.status.is_none() && slim.metadata.annotations.is_none());
        assert_eq!(slim.metadata.labels, pod.metadata.labels);
        assert_eq!(
            (slim.metadata.name, slim.metadata.uid),
            (Some("p".into()), Some("u".into()))
        );
        let pending = PodInfo::for_cache(&pod).unwrap();
        assert_eq!(pending.object.pod(), pod);
    }

    fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint::new(key, value, effect)
    }

    fn tol(v: serde_json::Value) -> Toleration {
        let pod: Pod =
            serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [], "tolerations": [v]}}))
                .unwrap();
        PodInfo::from_pod(&pod).unwrap().tolerations.remove(0)
    }

    #[test]
    fn toleration_matching() {
        let t = taint("dedicated", "gpu", TaintEffect::NoSchedule);
        let cases = [
            (json!({"operator": "Exists"}), true), // empty key + Exists tolerates everything
            (json!({"key": "dedicated", "operator": "Exists"}), true),
            (json!({"key": "dedicated", "value": "gpu"}), true),
            (json!({"key": "dedicated", "operator": "Equal", "value": "cpu"}), false),
            (
                json!({"key": "dedicated", "value": "gpu", "effect": "NoExecute"}),
                false,
            ),
            (
                json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}),
                true,
            ),
            (json!({"key": "other", "operator": "Exists"}), false),
            (json!({"operator": "Exists", "effect": "PreferNoSchedule"}), false),
        ];
        for (v, want) in cases {
            assert_eq!(tol(v.clone()).tolerates(&t), want, "{v}");
        }
    }

    #[test]
    fn host_port_conflicts() {
        let p = |ip: &str, proto, port| HostPort {
            ip: ip.into(),
            protocol: proto,
            port,
        };
        assert!(p("0.0.0.0", Protocol::Tcp, 80).conflicts(&p("10.0.0.1", Protocol::Tcp, 80)));
        assert!(p("10.0.0.1", Protocol::Tcp, 80).conflicts(&p("10.0.0.1", Protocol::Tcp, 80)));
        assert!(!p("10.0.0.1", Protocol::Tcp, 80).conflicts(&p("10.0.0.2", Protocol::Tcp, 80)));
        assert!(!p("0.0.0.0", Protocol::Tcp, 80).conflicts(&p("0.0.0.0", Protocol::Udp, 80)));
        assert!(!p("0.0.0.0", Protocol::Tcp, 80).conflicts(&p("0.0.0.0", Protocol::Tcp, 81)));
    }

    #[test]
    fn image_names() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.25"), "nginx:1.25");
        assert_eq!(normalized_image_name("localhost:5000/app"), "localhost:5000/app:latest");
        assert_eq!(normalized_image_name("localhost:5000/app:v1"), "localhost:5000/app:v1");
    }

    #[test]
    fn parses_pod() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "schedulerName": "wasm-scheduler",
                "priority": 10,
                "nodeSelector": {"disk": "ssd"},
                "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}, {"containerPort": 81}]}]
            },
            "status": {"phase": "Pending"}
        }))
        .unwrap();
        let p = PodInfo::from_pod(&pod).unwrap();
        assert_eq!(p.key, "ns/p");
        assert_eq!(p.scheduler_name, "wasm-scheduler");
        assert_eq!(p.priority, 10);
        assert_eq!(
            p.host_ports,
            vec![HostPort {
                ip: "0.0.0.0".into(),
                protocol: Protocol::Udp,
                port: 8080
            }]
        );
        assert_eq!(p.images, vec!["nginx:latest".to_owned()]);
        assert!(!p.terminal);
    }
}
