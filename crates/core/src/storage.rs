//! Storage objects as the volume plugins read them: PersistentVolumeClaims,
//! PersistentVolumes, StorageClasses and CSINodes, parsed once when they
//! arrive, plus the volume bindings this scheduler has decided but the API
//! does not show yet (kube-scheduler's assume cache).
//!
//! A pod placed with an unbound `WaitForFirstConsumer` claim carries a
//! [`VolumePlan`]: the PersistentVolume chosen for each claim (static
//! binding) or the node the claim is to be provisioned on (dynamic). The
//! scheduler assumes the plan at Reserve, so the next cycle does not hand the
//! same volume to another claim; the caller writes it to the API before
//! binding the pod (PreBind) and waits until the claims are bound. A newer
//! version of the claim or volume from the API replaces the assumption; a
//! failed binding forgets it.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::ModelError;
use crate::node::Labels;
use crate::pod::PodKey;
use crate::selector::{LabelSelector, Term};

/// The annotation kube-scheduler sets on a claim to be provisioned on the
/// node it chose.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The annotation the PersistentVolume controller sets once it has bound a
/// claim.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// The annotation set on a volume bound by a controller (or the scheduler).
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// The beta annotation that names a claim's or volume's StorageClass,
/// which takes precedence over `spec.storageClassName`.
pub const ANN_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// The provisioner of StorageClasses whose volumes are created by hand.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// The kinds of object the scheduler keeps beside pods, nodes and
/// workloads: storage for the volume plugins, devices for
/// DynamicResources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorageKind {
    /// `v1` PersistentVolumeClaim (namespaced).
    Claim,
    /// `v1` PersistentVolume.
    Volume,
    /// `storage.k8s.io/v1` StorageClass.
    Class,
    /// `storage.k8s.io/v1` CSINode.
    CsiNode,
    /// `resource.k8s.io/v1` DeviceClass.
    DeviceClass,
    /// `resource.k8s.io/v1` ResourceSlice.
    ResourceSlice,
    /// `resource.k8s.io/v1` ResourceClaim (namespaced).
    ResourceClaim,
}

impl StorageKind {
    /// The kind of an `apiVersion` and `kind`, if one of these.
    pub fn of(api_version: &str, kind: &str) -> Option<Self> {
        match (api_version, kind) {
            ("v1", "PersistentVolumeClaim") => Some(Self::Claim),
            ("v1", "PersistentVolume") => Some(Self::Volume),
            ("storage.k8s.io/v1", "StorageClass") => Some(Self::Class),
            ("storage.k8s.io/v1", "CSINode") => Some(Self::CsiNode),
            ("resource.k8s.io/v1", "DeviceClass") => Some(Self::DeviceClass),
            ("resource.k8s.io/v1", "ResourceSlice") => Some(Self::ResourceSlice),
            ("resource.k8s.io/v1", "ResourceClaim") => Some(Self::ResourceClaim),
            _ => None,
        }
    }

    /// Every kind (the daemon lists each before its first cycle).
    pub const ALL: [StorageKind; 7] = [
        Self::Claim,
        Self::Volume,
        Self::Class,
        Self::CsiNode,
        Self::DeviceClass,
        Self::ResourceSlice,
        Self::ResourceClaim,
    ];

    /// Whether the kind is one of DRA's (`resource.k8s.io`).
    pub const fn is_device(self) -> bool {
        matches!(self, Self::DeviceClass | Self::ResourceSlice | Self::ResourceClaim)
    }

    /// The resource's plural name.
    pub const fn plural(self) -> &'static str {
        match self {
            Self::Claim => "persistentvolumeclaims",
            Self::Volume => "persistentvolumes",
            Self::Class => "storageclasses",
            Self::CsiNode => "csinodes",
            Self::DeviceClass => "deviceclasses",
            Self::ResourceSlice => "resourceslices",
            Self::ResourceClaim => "resourceclaims",
        }
    }
}

/// An access mode of a claim or volume.
pub mod access {
    /// `ReadWriteOnce`.
    pub const RWO: &str = "ReadWriteOnce";
    /// `ReadOnlyMany`.
    pub const ROX: &str = "ReadOnlyMany";
    /// `ReadWriteMany`.
    pub const RWX: &str = "ReadWriteMany";
    /// `ReadWriteOncePod`.
    pub const RWOP: &str = "ReadWriteOncePod";
}

/// A PersistentVolumeClaim.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// Its StorageClass (the beta annotation, else `spec.storageClassName`;
    /// empty: none).
    pub class: String,
    /// `spec.volumeName`: the volume it is bound (or pre-bound) to.
    pub volume_name: Option<String>,
    /// Whether the PersistentVolume controller completed the binding.
    pub bind_completed: bool,
    /// `spec.accessModes`.
    pub access_modes: Vec<String>,
    /// `spec.resources.requests.storage`, in bytes.
    pub request: i64,
    /// `spec.volumeMode` (`Filesystem` when unset).
    pub volume_mode: String,
    /// `spec.selector` (absent: any volume).
    pub selector: Option<LabelSelector>,
    /// The node chosen for provisioning (`volume.kubernetes.io/selected-node`).
    pub selected_node: Option<String>,
    /// `status.phase` (`Lost`: its volume is gone).
    pub phase: String,
    /// Whether it is being deleted.
    pub deleting: bool,
    /// UIDs of its controller owners (a generic ephemeral volume's claim is
    /// owned by its pod).
    pub controller_uids: Vec<String>,
}

impl Claim {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether the PersistentVolume controller bound it (kube-scheduler's
    /// `isPVCFullyBound`): a volume named and the binding completed.
    pub fn fully_bound(&self) -> bool {
        self.volume_name.is_some() && self.bind_completed
    }

    /// Whether a generic ephemeral volume's claim belongs to the pod
    /// (kube-scheduler's `VolumeIsForPod`), or why not.
    pub fn check_for_pod(&self, pod: &crate::pod::PodInfo) -> Result<(), String> {
        if self.controller_uids.contains(&pod.uid) {
            Ok(())
        } else {
            Err(format!(
                "PVC {}/{} was not created for pod {}/{} (pod is not owner)",
                self.namespace, self.name, pod.namespace, pod.name
            ))
        }
    }

    /// Whether it asks for single-pod access.
    pub fn read_write_once_pod(&self) -> bool {
        self.access_modes.iter().any(|m| m == access::RWOP)
    }

    /// Parses a claim.
    pub fn from_object(o: &PersistentVolumeClaim) -> Result<Self, ModelError> {
        let namespace = o.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name = o.metadata.name.clone().unwrap_or_default();
        let object = format!("PersistentVolumeClaim {namespace}/{name}");
        let spec = o.spec.clone().unwrap_or_default();
        let ann = o.metadata.annotations.as_ref();
        let class = ann
            .and_then(|a| a.get(ANN_STORAGE_CLASS))
            .cloned()
            .or(spec.storage_class_name.clone())
            .unwrap_or_default();
        let request = match spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage"))
        {
            Some(q) => crate::quantity::parse_value(&q.0)
                .map_err(|e| ModelError::new(&object, "spec.resources.requests[storage]", e))?,
            None => 0,
        };
        let selector = match &spec.selector {
            Some(s) => Some(LabelSelector::parse(Some(s), &object, "spec.selector")?),
            None => None,
        };
        Ok(Claim {
            uid: o.metadata.uid.clone().unwrap_or_default(),
            class,
            volume_name: spec.volume_name.clone().filter(|v| !v.is_empty()),
            bind_completed: ann.is_some_and(|a| a.contains_key(ANN_BIND_COMPLETED)),
            access_modes: spec.access_modes.clone().unwrap_or_default(),
            request,
            volume_mode: spec.volume_mode.clone().unwrap_or_else(|| "Filesystem".into()),
            selector,
            selected_node: ann.and_then(|a| a.get(ANN_SELECTED_NODE)).cloned(),
            phase: o.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default(),
            deleting: o.metadata.deletion_timestamp.is_some(),
            controller_uids: o
                .metadata
                .owner_references
                .iter()
                .flatten()
                .filter(|r| r.controller == Some(true))
                .map(|r| r.uid.clone())
                .collect(),
            namespace,
            name,
        })
    }
}

/// Where a volume is claimed: `spec.claimRef`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRef {
    /// Namespace of the claim.
    pub namespace: String,
    /// Name of the claim.
    pub name: String,
    /// UID of the claim (empty: pre-bound by name only).
    pub uid: String,
}

/// A PersistentVolume.
#[derive(Debug, Clone, PartialEq)]
pub struct Volume {
    /// Name.
    pub name: String,
    /// Its StorageClass (empty: none).
    pub class: String,
    /// `spec.accessModes`.
    pub access_modes: Vec<String>,
    /// `spec.capacity.storage`, in bytes.
    pub capacity: i64,
    /// `spec.volumeMode` (`Filesystem` when unset).
    pub volume_mode: String,
    /// `spec.claimRef`.
    pub claim_ref: Option<ClaimRef>,
    /// `spec.nodeAffinity.required` terms (ORed); `None`: every node.
    pub node_affinity: Option<Vec<Term>>,
    /// `metadata.labels` (zone and region labels for VolumeZone).
    pub labels: Labels,
    /// What it counts against attach limits (a CSI source, or an in-tree
    /// source migrated to CSI).
    pub attachable: Option<Attachable>,
    /// `status.phase`.
    pub phase: String,
    /// Whether it is being deleted.
    pub deleting: bool,
}

impl Volume {
    /// Parses a volume.
    pub fn from_object(o: &PersistentVolume) -> Result<Self, ModelError> {
        let name = o.metadata.name.clone().unwrap_or_default();
        let object = format!("PersistentVolume {name}");
        let spec = o.spec.clone().unwrap_or_default();
        let class = o
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_STORAGE_CLASS))
            .cloned()
            .or(spec.storage_class_name.clone())
            .unwrap_or_default();
        let capacity = match spec.capacity.as_ref().and_then(|c| c.get("storage")) {
            Some(q) => {
                crate::quantity::parse_value(&q.0).map_err(|e| ModelError::new(&object, "spec.capacity[storage]", e))?
            }
            None => 0,
        };
        let node_affinity = match spec.node_affinity.as_ref().and_then(|a| a.required.as_ref()) {
            Some(sel) => Some(
                sel.node_selector_terms
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        Term::parse(
                            t,
                            &object,
                            &format!("spec.nodeAffinity.required.nodeSelectorTerms[{i}]"),
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let source = serde_json::to_value(&spec).unwrap_or_default();
        Ok(Volume {
            class,
            access_modes: spec.access_modes.clone().unwrap_or_default(),
            capacity,
            volume_mode: spec.volume_mode.clone().unwrap_or_else(|| "Filesystem".into()),
            claim_ref: spec.claim_ref.as_ref().map(|r| ClaimRef {
                namespace: r.namespace.clone().unwrap_or_default(),
                name: r.name.clone().unwrap_or_default(),
                uid: r.uid.clone().unwrap_or_default(),
            }),
            node_affinity,
            labels: crate::node::labels_of(o.metadata.labels.as_ref()),
            attachable: attachable_of_source(&source, true),
            phase: o.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default(),
            deleting: o.metadata.deletion_timestamp.is_some(),
            name,
        })
    }

    /// Whether its node affinity admits the node.
    pub fn admits(&self, labels: &Labels, node_name: &str) -> bool {
        self.node_affinity
            .as_ref()
            .is_none_or(|terms| terms.iter().any(|t| t.matches(labels, node_name)))
    }
}

/// In-tree volume sources that kube-scheduler counts against the attach
/// limit of the CSI driver they migrated to: (pod or PV source field,
/// in-tree plugin name, CSI driver, field that identifies the volume).
pub const MIGRATED_SOURCES: &[(&str, &str, &str, &str)] = &[
    (
        "awsElasticBlockStore",
        "kubernetes.io/aws-ebs",
        "ebs.csi.aws.com",
        "volumeID",
    ),
    (
        "gcePersistentDisk",
        "kubernetes.io/gce-pd",
        "pd.csi.storage.gke.io",
        "pdName",
    ),
    ("azureDisk", "kubernetes.io/azure-disk", "disk.csi.azure.com", "diskURI"),
    (
        "azureFile",
        "kubernetes.io/azure-file",
        "file.csi.azure.com",
        "shareName",
    ),
    ("cinder", "kubernetes.io/cinder", "cinder.csi.openstack.org", "volumeID"),
    (
        "vsphereVolume",
        "kubernetes.io/vsphere-volume",
        "csi.vsphere.vmware.com",
        "volumePath",
    ),
    (
        "portworxVolume",
        "kubernetes.io/portworx-volume",
        "pxd.portworx.com",
        "volumeID",
    ),
];

/// The CSINode annotation listing the in-tree plugins a node's drivers
/// took over; kube-scheduler counts a migrated volume only on such nodes.
pub const ANN_MIGRATED_PLUGINS: &str = "storage.alpha.kubernetes.io/migrated-plugins";

/// The CSI driver an in-tree provisioner (`kubernetes.io/aws-ebs`, ...)
/// migrated to, if it is one.
pub fn migrated_driver(in_tree_plugin: &str) -> Option<(&'static str, &'static str)> {
    MIGRATED_SOURCES
        .iter()
        .find(|(_, plugin, _, _)| *plugin == in_tree_plugin)
        .map(|(_, plugin, driver, _)| (*plugin, *driver))
}

/// A volume that counts against a CSI driver's attach limit on the node it
/// is used on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachable {
    /// The CSI driver.
    pub driver: String,
    /// The volume's handle (with the driver, what makes it unique).
    pub handle: String,
    /// For an in-tree source migrated to CSI, the in-tree plugin, which the
    /// node's CSINode must list as migrated for the volume to count.
    pub migrated_from: Option<&'static str>,
}

impl Attachable {
    /// Whether it counts on a node with this CSINode (kube-scheduler's
    /// `isCSIMigrationOn` for in-tree sources).
    pub fn counts_on(&self, csi_node: Option<&CsiNode>) -> bool {
        match self.migrated_from {
            None => true,
            Some(plugin) => csi_node.is_some_and(|n| n.migrated_plugins.iter().any(|p| p == plugin)),
        }
    }
}

/// The attachable volume of a PersistentVolume spec (or a pod volume)
/// given as JSON: its `csi` source, or an in-tree source migrated to CSI.
/// `with_csi`: whether a `csi` source counts (a PersistentVolume's does; a
/// pod's inline CSI volume is ephemeral and kube-scheduler does not count
/// it).
pub fn attachable_of_source(source: &Value, with_csi: bool) -> Option<Attachable> {
    if let Some(csi) = source.get("csi") {
        let text = |f: &str| csi.get(f).and_then(Value::as_str).unwrap_or_default().to_owned();
        return with_csi.then(|| Attachable {
            driver: text("driver"),
            handle: text("volumeHandle"),
            migrated_from: None,
        });
    }
    MIGRATED_SOURCES.iter().find_map(|(field, plugin, driver, id)| {
        let s = source.get(*field)?;
        Some(Attachable {
            driver: (*driver).to_owned(),
            handle: s.get(*id).and_then(Value::as_str).unwrap_or_default().to_owned(),
            migrated_from: Some(*plugin),
        })
    })
}

/// A StorageClass.
#[derive(Debug, Clone, PartialEq)]
pub struct Class {
    /// Name.
    pub name: String,
    /// `provisioner`.
    pub provisioner: String,
    /// `volumeBindingMode: WaitForFirstConsumer` (else `Immediate`).
    pub wait_for_first_consumer: bool,
    /// `allowedTopologies`, as node selector terms (ORed); empty: anywhere.
    pub allowed_topologies: Vec<Term>,
}

impl Class {
    /// Parses a StorageClass.
    pub fn from_object(o: &StorageClass) -> Result<Self, ModelError> {
        let name = o.metadata.name.clone().unwrap_or_default();
        let object = format!("StorageClass {name}");
        let allowed_topologies = o
            .allowed_topologies
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, t)| {
                let term = NodeSelectorTerm {
                    match_expressions: Some(
                        t.match_label_expressions
                            .iter()
                            .flatten()
                            .map(|e| k8s_openapi::api::core::v1::NodeSelectorRequirement {
                                key: e.key.clone(),
                                operator: "In".into(),
                                values: Some(e.values.clone()),
                            })
                            .collect(),
                    ),
                    match_fields: None,
                };
                Term::parse(&term, &object, &format!("allowedTopologies[{i}]"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let wait_for_first_consumer = match o.volume_binding_mode.as_deref() {
            None | Some("Immediate") => false,
            Some("WaitForFirstConsumer") => true,
            Some(m) => {
                return Err(ModelError::new(
                    object,
                    "volumeBindingMode",
                    format!("unknown mode {m:?} (Immediate or WaitForFirstConsumer)"),
                ));
            }
        };
        Ok(Class {
            provisioner: o.provisioner.clone(),
            wait_for_first_consumer,
            allowed_topologies,
            name,
        })
    }

    /// Whether a volume may be provisioned for a node with these labels
    /// (kube-scheduler: an empty `allowedTopologies` allows every node; a
    /// term with an empty requirement list matches nothing).
    pub fn allows(&self, labels: &Labels, node_name: &str) -> bool {
        self.allowed_topologies.is_empty() || self.allowed_topologies.iter().any(|t| t.matches(labels, node_name))
    }
}

/// A CSINode: the attach limit of each driver on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsiNode {
    /// Node name.
    pub name: String,
    /// Driver → `allocatable.count` (absent: no limit).
    pub limits: BTreeMap<String, Option<i64>>,
    /// In-tree plugins its drivers took over ([`ANN_MIGRATED_PLUGINS`]).
    pub migrated_plugins: Vec<String>,
}

impl CsiNode {
    /// Parses a CSINode.
    pub fn from_object(o: &CSINode) -> Self {
        CsiNode {
            name: o.metadata.name.clone().unwrap_or_default(),
            limits: o
                .spec
                .drivers
                .iter()
                .map(|d| {
                    (
                        d.name.clone(),
                        d.allocatable.as_ref().and_then(|a| a.count).map(i64::from),
                    )
                })
                .collect(),
            migrated_plugins: o
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANN_MIGRATED_PLUGINS))
                .map(|v| {
                    v.split(',')
                        .map(|p| p.trim().to_owned())
                        .filter(|p| !p.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// The cycle state key under which VolumeBinding leaves its
/// [`VolumePlan`] at Reserve, for the scheduler to assume and return.
pub const VOLUME_PLAN: &str = "VolumeBinding/plan";

/// The volume actions one pod's placement needs before the pod is bound
/// (kube-scheduler's `PodVolumes`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumePlan {
    /// The node chosen.
    pub node: String,
    /// Static bindings: claim (`namespace/name`) → volume chosen for it.
    pub bindings: Vec<(String, String)>,
    /// Claims to provision on the node (their `selected-node` annotation is
    /// set).
    pub provisions: Vec<String>,
    /// How long to wait for the claims to be bound before giving up
    /// (VolumeBinding's `bindTimeoutSeconds`).
    pub bind_timeout_seconds: u64,
}

impl VolumePlan {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty() && self.provisions.is_empty()
    }
}

/// The storage objects of a cluster, and the bindings assumed on top.
#[derive(Debug, Clone, Default)]
pub struct Storage {
    claims: FxHashMap<String, Arc<Claim>>,
    volumes: BTreeMap<String, Arc<Volume>>,
    classes: FxHashMap<String, Arc<Class>>,
    csi_nodes: FxHashMap<String, Arc<CsiNode>>,
    /// Assumed: volume → claim key, claim key → volume, claim key → node
    /// to provision on; and each pod's plan, to forget it.
    assumed_volume_claim: FxHashMap<String, String>,
    assumed_claim_volume: FxHashMap<String, String>,
    assumed_selected_node: FxHashMap<String, String>,
    plans: FxHashMap<PodKey, VolumePlan>,
    /// DRA's classes, slices and claims.
    devices: crate::dra::Devices,
}

/// `namespace/name` of a storage object given as JSON (`name` alone for
/// cluster-scoped kinds).
pub fn storage_key(kind: StorageKind, namespace: &str, name: &str) -> String {
    match kind {
        StorageKind::Claim | StorageKind::ResourceClaim => format!("{namespace}/{name}"),
        _ => name.to_owned(),
    }
}

/// The API's NotFound message for a claim, which kube-scheduler reports
/// as is.
pub fn claim_not_found(name: &str) -> String {
    format!("persistentvolumeclaim \"{name}\" not found")
}

/// The prefix of the stand-in handle for a claim not bound yet, counted
/// against its StorageClass's driver (no real handle can start with it).
const UNBOUND_HANDLE: &str = "\u{0}unbound";

impl Storage {
    /// The claim a pod's volume uses.
    pub fn pod_claim(&self, pod: &crate::pod::PodInfo, claim: &PodClaim) -> Option<&Arc<Claim>> {
        self.claims.get(&format!("{}/{}", pod.namespace, claim.claim))
    }

    /// What a claim counts against attach limits on a node with this
    /// CSINode (kube-scheduler's `getCSIDriverInfo`): its volume's CSI
    /// driver and handle; for a claim not bound yet, or bound to a volume
    /// not seen yet, its StorageClass's provisioner and a stand-in handle
    /// unique to the claim. `None`: it does not count.
    pub fn attachable_of_claim(&self, claim: &Claim, csi_node: Option<&CsiNode>) -> Option<(String, String)> {
        if let Some(pv) = self.volume_of(claim).and_then(|v| self.volumes.get(v)) {
            let a = pv.attachable.as_ref()?;
            return a.counts_on(csi_node).then(|| (a.driver.clone(), a.handle.clone()));
        }
        let class = self.classes.get(&claim.class)?;
        let handle = format!("{UNBOUND_HANDLE}-{}", claim.key());
        match migrated_driver(&class.provisioner) {
            Some((plugin, driver)) => {
                let a = Attachable {
                    driver: driver.to_owned(),
                    handle,
                    migrated_from: Some(plugin),
                };
                a.counts_on(csi_node).then_some((a.driver, a.handle))
            }
            None => Some((class.provisioner.clone(), handle)),
        }
    }

    /// Adds or replaces an object given as JSON; `Ok(None)` for other kinds,
    /// else its kind. A version from the API replaces what was assumed
    /// about it.
    pub fn upsert(&mut self, v: &Value) -> Result<Option<StorageKind>, ModelError> {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let Some(kind) = StorageKind::of(s("/apiVersion"), s("/kind")) else {
            return Ok(None);
        };
        if kind.is_device() {
            self.devices.upsert(kind, v)?;
            return Ok(Some(kind));
        }
        let object = format!("{} {}", s("/kind"), s("/metadata/name"));
        let bad = |e: serde_json::Error| ModelError::new(&object, "", e);
        match kind {
            StorageKind::Claim => {
                let c = Claim::from_object(&serde_json::from_value(v.clone()).map_err(bad)?)?;
                let key = c.key();
                if c.volume_name.is_some() {
                    self.assumed_claim_volume.remove(&key);
                }
                if c.selected_node.is_some() || c.volume_name.is_some() {
                    self.assumed_selected_node.remove(&key);
                }
                self.claims.insert(key, Arc::new(c));
            }
            StorageKind::Volume => {
                let pv = Volume::from_object(&serde_json::from_value(v.clone()).map_err(bad)?)?;
                if pv.claim_ref.is_some() {
                    self.assumed_volume_claim.remove(&pv.name);
                }
                self.volumes.insert(pv.name.clone(), Arc::new(pv));
            }
            StorageKind::Class => {
                let c = Class::from_object(&serde_json::from_value(v.clone()).map_err(bad)?)?;
                self.classes.insert(c.name.clone(), Arc::new(c));
            }
            StorageKind::CsiNode => {
                let n = CsiNode::from_object(&serde_json::from_value(v.clone()).map_err(bad)?);
                self.csi_nodes.insert(n.name.clone(), Arc::new(n));
            }
            StorageKind::DeviceClass | StorageKind::ResourceSlice | StorageKind::ResourceClaim => {}
        }
        Ok(Some(kind))
    }

    /// Removes an object.
    pub fn remove(&mut self, kind: StorageKind, namespace: &str, name: &str) {
        let key = storage_key(kind, namespace, name);
        match kind {
            StorageKind::Claim => {
                self.claims.remove(&key);
                self.assumed_claim_volume.remove(&key);
                self.assumed_selected_node.remove(&key);
            }
            StorageKind::Volume => {
                self.volumes.remove(&key);
                self.assumed_volume_claim.remove(&key);
            }
            StorageKind::Class => {
                self.classes.remove(&key);
            }
            StorageKind::CsiNode => {
                self.csi_nodes.remove(&key);
            }
            StorageKind::DeviceClass | StorageKind::ResourceSlice | StorageKind::ResourceClaim => {
                self.devices.remove(kind, &key);
            }
        }
    }

    /// Every key of a kind, for dropping what a relist no longer has.
    pub fn keys(&self, kind: StorageKind) -> Vec<String> {
        match kind {
            StorageKind::Claim => self.claims.keys().cloned().collect(),
            StorageKind::Volume => self.volumes.keys().cloned().collect(),
            StorageKind::Class => self.classes.keys().cloned().collect(),
            StorageKind::CsiNode => self.csi_nodes.keys().cloned().collect(),
            StorageKind::DeviceClass | StorageKind::ResourceSlice | StorageKind::ResourceClaim => {
                self.devices.keys(kind)
            }
        }
    }

    /// Whether an object of that kind and key is known.
    pub fn keys_contain(&self, kind: StorageKind, key: &str) -> bool {
        match kind {
            StorageKind::Claim => self.claims.contains_key(key),
            StorageKind::Volume => self.volumes.contains_key(key),
            StorageKind::Class => self.classes.contains_key(key),
            StorageKind::CsiNode => self.csi_nodes.contains_key(key),
            StorageKind::DeviceClass | StorageKind::ResourceSlice | StorageKind::ResourceClaim => {
                self.devices.contains(kind, key)
            }
        }
    }

    /// DRA's classes, slices and claims.
    pub fn devices(&self) -> &crate::dra::Devices {
        &self.devices
    }

    /// Changes DRA's objects (assumes and forgets plans).
    pub fn devices_mut(&mut self) -> &mut crate::dra::Devices {
        &mut self.devices
    }

    /// A claim by `namespace/name`.
    pub fn claim(&self, key: &str) -> Option<&Arc<Claim>> {
        self.claims.get(key)
    }

    /// A volume by name.
    pub fn volume(&self, name: &str) -> Option<&Arc<Volume>> {
        self.volumes.get(name)
    }

    /// Every volume, by name.
    pub fn volumes(&self) -> impl Iterator<Item = &Arc<Volume>> {
        self.volumes.values()
    }

    /// A StorageClass by name.
    pub fn class(&self, name: &str) -> Option<&Arc<Class>> {
        self.classes.get(name)
    }

    /// A node's CSINode.
    pub fn csi_node(&self, node: &str) -> Option<&Arc<CsiNode>> {
        self.csi_nodes.get(node)
    }

    /// The volume a claim is bound to, or assumed bound to.
    pub fn volume_of<'a>(&'a self, claim: &'a Claim) -> Option<&'a str> {
        claim
            .volume_name
            .as_deref()
            .or_else(|| self.assumed_claim_volume.get(&claim.key()).map(String::as_str))
    }

    /// Whether a volume is claimed: bound, pre-bound, or assumed for a
    /// claim.
    pub fn is_claimed(&self, volume: &Volume) -> bool {
        volume.claim_ref.is_some() || self.assumed_volume_claim.contains_key(&volume.name)
    }

    /// The node a claim is (or is assumed) to be provisioned on.
    pub fn selected_node_of<'a>(&'a self, claim: &'a Claim) -> Option<&'a str> {
        claim
            .selected_node
            .as_deref()
            .or_else(|| self.assumed_selected_node.get(&claim.key()).map(String::as_str))
    }

    /// Assumes a pod's plan until the API shows it or it is forgotten.
    pub fn assume(&mut self, pod: &str, plan: VolumePlan) {
        for (claim, pv) in &plan.bindings {
            self.assumed_claim_volume.insert(claim.clone(), pv.clone());
            self.assumed_volume_claim.insert(pv.clone(), claim.clone());
        }
        for claim in &plan.provisions {
            self.assumed_selected_node.insert(claim.clone(), plan.node.clone());
        }
        self.plans.insert(pod.to_owned(), plan);
    }

    /// Whether a pod's plan is assumed.
    pub fn has_plan(&self, pod: &str) -> bool {
        self.plans.contains_key(pod)
    }

    /// The plan of a pod was carried out: the API will show it.
    pub fn confirm(&mut self, pod: &str) {
        self.plans.remove(pod);
    }

    /// Forgets what a pod's plan assumed (its binding failed). Returns
    /// whether there was a plan.
    pub fn forget(&mut self, pod: &str) -> bool {
        let Some(plan) = self.plans.remove(pod) else {
            return false;
        };
        for (claim, pv) in &plan.bindings {
            if self.assumed_claim_volume.get(claim) == Some(pv) {
                self.assumed_claim_volume.remove(claim);
            }
            if self.assumed_volume_claim.get(pv) == Some(claim) {
                self.assumed_volume_claim.remove(pv);
            }
        }
        for claim in &plan.provisions {
            if self.assumed_selected_node.get(claim) == Some(&plan.node) {
                self.assumed_selected_node.remove(claim);
            }
        }
        true
    }
}

/// A claim a pod's volume uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodClaim {
    /// The claim's name (in the pod's namespace).
    pub claim: String,
    /// Whether it is a generic ephemeral volume's claim (`<pod>-<volume>`,
    /// which must be owned by the pod).
    pub ephemeral: bool,
}

/// An inline volume that two pods on one node may not share
/// (VolumeRestrictions' disk conflicts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InlineDisk {
    /// `gcePersistentDisk`: the same disk, unless both mount it read-only.
    Gce {
        /// `pdName`.
        pd_name: String,
        /// `readOnly`.
        read_only: bool,
    },
    /// `awsElasticBlockStore`: the same volume, read-only or not.
    Ebs {
        /// `volumeID`.
        volume_id: String,
    },
    /// `iscsi`: the same IQN, unless both read-only.
    Iscsi {
        /// `iqn`.
        iqn: String,
        /// `readOnly`.
        read_only: bool,
    },
    /// `rbd`: a shared monitor, the same pool and image, unless both
    /// read-only.
    Rbd {
        /// `monitors`.
        monitors: Vec<String>,
        /// `pool` (`rbd` when unset).
        pool: String,
        /// `image`.
        image: String,
        /// `readOnly`.
        read_only: bool,
    },
}

impl InlineDisk {
    /// Whether two pods using these on one node conflict (kube-scheduler's
    /// `isVolumeConflict`).
    pub fn conflicts(&self, other: &InlineDisk) -> bool {
        use InlineDisk::*;
        match (self, other) {
            (
                Gce {
                    pd_name: a,
                    read_only: ra,
                },
                Gce {
                    pd_name: b,
                    read_only: rb,
                },
            ) => a == b && !(*ra && *rb),
            (Ebs { volume_id: a }, Ebs { volume_id: b }) => a == b,
            (Iscsi { iqn: a, read_only: ra }, Iscsi { iqn: b, read_only: rb }) => a == b && !(*ra && *rb),
            (
                Rbd {
                    monitors: ma,
                    pool: pa,
                    image: ia,
                    read_only: ra,
                },
                Rbd {
                    monitors: mb,
                    pool: pb,
                    image: ib,
                    read_only: rb,
                },
            ) => ma.iter().any(|m| mb.contains(m)) && pa == pb && ia == ib && !(*ra && *rb),
            _ => false,
        }
    }
}

/// Every volume source of the pod API this version knows. Sources outside
/// this list make the pod refused (a field this engine cannot judge).
pub const KNOWN_VOLUME_SOURCES: &[&str] = &[
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "gitRepo",
    "glusterfs",
    "hostPath",
    "image",
    "iscsi",
    "nfs",
    "persistentVolumeClaim",
    "photonPersistentDisk",
    "portworxVolume",
    "projected",
    "quobyte",
    "rbd",
    "scaleIO",
    "secret",
    "storageos",
    "vsphereVolume",
];

/// What the volume plugins read of a pod's volumes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodVolumes {
    /// Claims (`persistentVolumeClaim` and generic `ephemeral` volumes).
    pub claims: Vec<PodClaim>,
    /// Inline disks that conflict when shared on a node.
    pub disks: Vec<InlineDisk>,
    /// Inline in-tree volumes migrated to CSI, which count against the
    /// driver's attach limit (inline CSI volumes do not).
    pub attachable: Vec<Attachable>,
}

impl PodVolumes {
    /// Whether `key` (`namespace/name`) is one of these claims, for a pod in
    /// `namespace`.
    pub fn uses_claim(&self, namespace: &str, key: &str) -> bool {
        key.split_once('/')
            .is_some_and(|(ns, name)| ns == namespace && self.claims.iter().any(|c| c.claim == name))
    }

    /// Reads a pod's volumes. A volume source this version does not know
    /// is returned as `Err(field)`, for the pod to be refused.
    pub fn parse(spec: &k8s_openapi::api::core::v1::PodSpec, pod_name: &str) -> Result<Self, String> {
        let mut out = PodVolumes::default();
        for (i, v) in spec.volumes.iter().flatten().enumerate() {
            let Ok(Value::Object(fields)) = serde_json::to_value(v) else {
                continue;
            };
            if let Some(source) = fields
                .keys()
                .find(|k| *k != "name" && !KNOWN_VOLUME_SOURCES.contains(&k.as_str()))
            {
                return Err(format!("spec.volumes[{i}].{source}"));
            }
            let source = Value::Object(fields);
            let text = |p: &str| source.pointer(p).and_then(Value::as_str).unwrap_or_default().to_owned();
            let flag = |p: &str| source.pointer(p).and_then(Value::as_bool).unwrap_or(false);
            if let Some(c) = &v.persistent_volume_claim {
                out.claims.push(PodClaim {
                    claim: c.claim_name.clone(),
                    ephemeral: false,
                });
            } else if v.ephemeral.is_some() {
                out.claims.push(PodClaim {
                    claim: format!("{pod_name}-{}", v.name),
                    ephemeral: true,
                });
            } else if let Some(a) = attachable_of_source(&source, false) {
                out.attachable.push(a);
            }
            if source.get("gcePersistentDisk").is_some() {
                out.disks.push(InlineDisk::Gce {
                    pd_name: text("/gcePersistentDisk/pdName"),
                    read_only: flag("/gcePersistentDisk/readOnly"),
                });
            } else if source.get("awsElasticBlockStore").is_some() {
                out.disks.push(InlineDisk::Ebs {
                    volume_id: text("/awsElasticBlockStore/volumeID"),
                });
            } else if source.get("iscsi").is_some() {
                out.disks.push(InlineDisk::Iscsi {
                    iqn: text("/iscsi/iqn"),
                    read_only: flag("/iscsi/readOnly"),
                });
            } else if let Some(rbd) = &v.rbd {
                out.disks.push(InlineDisk::Rbd {
                    monitors: rbd.monitors.clone(),
                    pool: rbd.pool.clone().unwrap_or_else(|| "rbd".into()),
                    image: rbd.image.clone(),
                    read_only: rbd.read_only.unwrap_or(false),
                });
            }
        }
        Ok(out)
    }
}
