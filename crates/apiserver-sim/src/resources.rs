//! The resources the double serves, and the discovery documents that describe
//! them (`/api`, `/api/v1`, `/apis`, `/apis/GROUP/VERSION`).

use serde_json::{Value, json};

/// One served resource.
#[derive(Debug)]
pub struct ResourceDef {
    /// API group, `""` for core.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Plural name in URLs.
    pub plural: &'static str,
    /// Singular name.
    pub singular: &'static str,
    /// Object kind.
    pub kind: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// `kubectl` short names.
    pub short_names: &'static [&'static str],
    /// Subresources (`status`, `binding`, `token`).
    pub subresources: &'static [&'static str],
    /// Stored: bindings are a verb on pods, and reviews are questions
    /// answered on create, not objects of their own.
    pub stored: bool,
}

impl ResourceDef {
    /// `v1` or `coordination.k8s.io/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const ALL_VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];

/// Everything served, in discovery order. Indexes into this table identify a
/// resource everywhere else.
pub static RESOURCES: &[ResourceDef] = &[
    ResourceDef {
        group: "",
        version: "v1",
        plural: "namespaces",
        singular: "namespace",
        kind: "Namespace",
        namespaced: false,
        short_names: &["ns"],
        subresources: &["status"],
        stored: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "nodes",
        singular: "node",
        kind: "Node",
        namespaced: false,
        short_names: &["no"],
        subresources: &["status"],
        stored: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "pods",
        singular: "pod",
        kind: "Pod",
        namespaced: true,
        short_names: &["po"],
        subresources: &["status", "binding"],
        stored: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "bindings",
        singular: "binding",
        kind: "Binding",
        namespaced: true,
        short_names: &[],
        subresources: &[],
        stored: false,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "configmaps",
        singular: "configmap",
        kind: "ConfigMap",
        namespaced: true,
        short_names: &["cm"],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "services",
        singular: "service",
        kind: "Service",
        namespaced: true,
        short_names: &["svc"],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "replicationcontrollers",
        singular: "replicationcontroller",
        kind: "ReplicationController",
        namespaced: true,
        short_names: &["rc"],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "apps",
        version: "v1",
        plural: "replicasets",
        singular: "replicaset",
        kind: "ReplicaSet",
        namespaced: true,
        short_names: &["rs"],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "apps",
        version: "v1",
        plural: "statefulsets",
        singular: "statefulset",
        kind: "StatefulSet",
        namespaced: true,
        short_names: &["sts"],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "policy",
        version: "v1",
        plural: "poddisruptionbudgets",
        singular: "poddisruptionbudget",
        kind: "PodDisruptionBudget",
        namespaced: true,
        short_names: &["pdb"],
        subresources: &["status"],
        stored: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "persistentvolumeclaims",
        singular: "persistentvolumeclaim",
        kind: "PersistentVolumeClaim",
        namespaced: true,
        short_names: &["pvc"],
        subresources: &["status"],
        stored: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "persistentvolumes",
        singular: "persistentvolume",
        kind: "PersistentVolume",
        namespaced: false,
        short_names: &["pv"],
        subresources: &["status"],
        stored: true,
    },
    ResourceDef {
        group: "storage.k8s.io",
        version: "v1",
        plural: "storageclasses",
        singular: "storageclass",
        kind: "StorageClass",
        namespaced: false,
        short_names: &["sc"],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "storage.k8s.io",
        version: "v1",
        plural: "csinodes",
        singular: "csinode",
        kind: "CSINode",
        namespaced: false,
        short_names: &[],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "coordination.k8s.io",
        version: "v1",
        plural: "leases",
        singular: "lease",
        kind: "Lease",
        namespaced: true,
        short_names: &[],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "",
        version: "v1",
        plural: "serviceaccounts",
        singular: "serviceaccount",
        kind: "ServiceAccount",
        namespaced: true,
        short_names: &["sa"],
        subresources: &["token"],
        stored: true,
    },
    ResourceDef {
        group: "authentication.k8s.io",
        version: "v1",
        plural: "tokenreviews",
        singular: "tokenreview",
        kind: "TokenReview",
        namespaced: false,
        short_names: &[],
        subresources: &[],
        stored: false,
    },
    ResourceDef {
        group: "authorization.k8s.io",
        version: "v1",
        plural: "subjectaccessreviews",
        singular: "subjectaccessreview",
        kind: "SubjectAccessReview",
        namespaced: false,
        short_names: &[],
        subresources: &[],
        stored: false,
    },
    ResourceDef {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterroles",
        singular: "clusterrole",
        kind: "ClusterRole",
        namespaced: false,
        short_names: &[],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterrolebindings",
        singular: "clusterrolebinding",
        kind: "ClusterRoleBinding",
        namespaced: false,
        short_names: &[],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "roles",
        singular: "role",
        kind: "Role",
        namespaced: true,
        short_names: &[],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "rolebindings",
        singular: "rolebinding",
        kind: "RoleBinding",
        namespaced: true,
        short_names: &[],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "scheduling.k8s.io",
        version: "v1",
        plural: "priorityclasses",
        singular: "priorityclass",
        kind: "PriorityClass",
        namespaced: false,
        short_names: &["pc"],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "resource.k8s.io",
        version: "v1",
        plural: "deviceclasses",
        singular: "deviceclass",
        kind: "DeviceClass",
        namespaced: false,
        short_names: &[],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "resource.k8s.io",
        version: "v1",
        plural: "resourceslices",
        singular: "resourceslice",
        kind: "ResourceSlice",
        namespaced: false,
        short_names: &[],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "resource.k8s.io",
        version: "v1",
        plural: "resourceclaims",
        singular: "resourceclaim",
        kind: "ResourceClaim",
        namespaced: true,
        short_names: &[],
        subresources: &["status"],
        stored: true,
    },
    ResourceDef {
        group: "resource.k8s.io",
        version: "v1",
        plural: "resourceclaimtemplates",
        singular: "resourceclaimtemplate",
        kind: "ResourceClaimTemplate",
        namespaced: true,
        short_names: &[],
        subresources: &[],
        stored: true,
    },
    ResourceDef {
        group: "scheduling.k8s.io",
        version: "v1alpha2",
        plural: "podgroups",
        singular: "podgroup",
        kind: "PodGroup",
        namespaced: true,
        short_names: &[],
        subresources: &["status"],
        stored: true,
    },
    ResourceDef {
        group: "scheduling.k8s.io",
        version: "v1alpha2",
        plural: "workloads",
        singular: "workload",
        kind: "Workload",
        namespaced: true,
        short_names: &[],
        subresources: &[],
        stored: true,
    },
];

/// Index of `pods` in [`RESOURCES`].
pub const PODS: usize = 2;
/// Index of `nodes` in [`RESOURCES`].
pub const NODES: usize = 1;
/// Index of `namespaces` in [`RESOURCES`].
pub const NAMESPACES: usize = 0;
/// Index of `bindings` in [`RESOURCES`].
pub const BINDINGS: usize = 3;
/// Index of `serviceaccounts` in [`RESOURCES`].
pub const SERVICE_ACCOUNTS: usize = 17;
/// Index of `tokenreviews` in [`RESOURCES`].
pub const TOKEN_REVIEWS: usize = 18;
/// Index of `subjectaccessreviews` in [`RESOURCES`].
pub const SUBJECT_ACCESS_REVIEWS: usize = 19;
/// Index of `clusterroles` in [`RESOURCES`].
pub const CLUSTER_ROLES: usize = 20;
/// Index of `clusterrolebindings` in [`RESOURCES`].
pub const CLUSTER_ROLE_BINDINGS: usize = 21;
/// Index of `roles` in [`RESOURCES`].
pub const ROLES: usize = 22;
/// Index of `rolebindings` in [`RESOURCES`].
pub const ROLE_BINDINGS: usize = 23;
/// Index of `priorityclasses` in [`RESOURCES`].
pub const PRIORITY_CLASSES: usize = 24;
/// Index of `deviceclasses` in [`RESOURCES`].
pub const DEVICE_CLASSES: usize = 25;
/// Index of `resourceslices` in [`RESOURCES`].
pub const RESOURCE_SLICES: usize = 26;
/// Index of `resourceclaims` in [`RESOURCES`].
pub const RESOURCE_CLAIMS: usize = 27;
/// Index of `resourceclaimtemplates` in [`RESOURCES`].
pub const RESOURCE_CLAIM_TEMPLATES: usize = 28;
/// Index of `podgroups` (`scheduling.k8s.io/v1alpha2`) in [`RESOURCES`].
pub const POD_GROUPS: usize = 29;
/// Index of `workloads` (`scheduling.k8s.io/v1alpha2`) in [`RESOURCES`].
pub const WORKLOADS: usize = 30;

/// The resource at `group/version/plural`.
pub fn find(group: &str, version: &str, plural: &str) -> Option<usize> {
    RESOURCES
        .iter()
        .position(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The stored resource of a kind in an `apiVersion`.
pub fn find_kind(api_version: &str, kind: &str) -> Option<usize> {
    RESOURCES
        .iter()
        .position(|r| r.stored && r.kind == kind && r.api_version() == api_version)
}

fn groups() -> Vec<&'static str> {
    let mut out: Vec<&str> = Vec::new();
    for r in RESOURCES {
        if !r.group.is_empty() && !out.contains(&r.group) {
            out.push(r.group);
        }
    }
    out
}

/// `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

/// The versions a group serves, in [`RESOURCES`] order: its stable `v1`
/// first, the preferred version, as kube-apiserver orders them by priority
/// (`scheduling.k8s.io`: `v1`, then `v1alpha2`).
fn versions(group: &str) -> Vec<&'static str> {
    let mut out: Vec<&str> = Vec::new();
    for r in RESOURCES.iter().filter(|r| r.group == group) {
        if !out.contains(&r.version) {
            out.push(r.version);
        }
    }
    out
}

/// An `APIGroup`'s fields: its name, versions and preferred version.
fn group_fields(group: &str) -> Value {
    let versions: Vec<Value> = versions(group)
        .into_iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"name": group, "versions": versions, "preferredVersion": versions[0]})
}

/// `/apis`.
pub fn group_list() -> Value {
    let groups: Vec<Value> = groups().into_iter().map(group_fields).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/GROUP`.
pub fn group(group: &str) -> Option<Value> {
    groups().contains(&group).then(|| {
        let mut g = group_fields(group);
        g["kind"] = json!("APIGroup");
        g["apiVersion"] = json!("v1");
        g
    })
}

/// `/api/v1` (group `""`) or `/apis/GROUP/VERSION`.
pub fn resource_list(group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for r in RESOURCES.iter().filter(|r| r.group == group && r.version == version) {
        let verbs: &[&str] = if r.stored { ALL_VERBS } else { &["create"] };
        resources.push(json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": verbs,
            "shortNames": r.short_names,
        }));
        for sub in r.subresources {
            let (kind, verbs): (&str, &[&str]) = match *sub {
                "binding" => ("Binding", &["create"]),
                "token" => ("TokenRequest", &["create"]),
                _ => (r.kind, &["get", "patch", "update"]),
            };
            let mut entry = json!({
                "name": format!("{}/{sub}", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": verbs,
            });
            // A subresource of another group's kind names it, as
            // kube-apiserver does for serviceaccounts/token.
            if *sub == "token" {
                entry["group"] = json!("authentication.k8s.io");
                entry["version"] = json!("v1");
            }
            resources.push(entry);
        }
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "36",
        "gitVersion": "v1.36.0-wasmsched-sim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "n/a",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_constants_name_their_resources() {
        for (index, group, plural) in [
            (NAMESPACES, "", "namespaces"),
            (NODES, "", "nodes"),
            (PODS, "", "pods"),
            (BINDINGS, "", "bindings"),
            (SERVICE_ACCOUNTS, "", "serviceaccounts"),
            (TOKEN_REVIEWS, "authentication.k8s.io", "tokenreviews"),
            (SUBJECT_ACCESS_REVIEWS, "authorization.k8s.io", "subjectaccessreviews"),
            (CLUSTER_ROLES, "rbac.authorization.k8s.io", "clusterroles"),
            (
                CLUSTER_ROLE_BINDINGS,
                "rbac.authorization.k8s.io",
                "clusterrolebindings",
            ),
            (ROLES, "rbac.authorization.k8s.io", "roles"),
            (ROLE_BINDINGS, "rbac.authorization.k8s.io", "rolebindings"),
            (PRIORITY_CLASSES, "scheduling.k8s.io", "priorityclasses"),
            (DEVICE_CLASSES, "resource.k8s.io", "deviceclasses"),
            (RESOURCE_SLICES, "resource.k8s.io", "resourceslices"),
            (RESOURCE_CLAIMS, "resource.k8s.io", "resourceclaims"),
            (RESOURCE_CLAIM_TEMPLATES, "resource.k8s.io", "resourceclaimtemplates"),
        ] {
            assert_eq!(find(group, "v1", plural), Some(index), "{plural}");
        }
        assert_eq!(find("scheduling.k8s.io", "v1alpha2", "podgroups"), Some(POD_GROUPS));
        assert_eq!(find("scheduling.k8s.io", "v1alpha2", "workloads"), Some(WORKLOADS));
    }

    #[test]
    fn scheduling_serves_v1_preferred_and_v1alpha2() {
        let g = group("scheduling.k8s.io").unwrap();
        assert_eq!(
            g["versions"],
            json!([
                {"groupVersion": "scheduling.k8s.io/v1", "version": "v1"},
                {"groupVersion": "scheduling.k8s.io/v1alpha2", "version": "v1alpha2"}
            ])
        );
        assert_eq!(g["preferredVersion"]["version"], "v1");
        let list = group_list();
        let listed = list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == "scheduling.k8s.io")
            .unwrap();
        assert_eq!(listed["versions"], g["versions"]);
        assert_eq!(group("apps").unwrap()["versions"].as_array().unwrap().len(), 1);
        let list = resource_list("scheduling.k8s.io", "v1alpha2").unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["podgroups", "podgroups/status", "workloads"]);
        assert!(resource_list("scheduling.k8s.io", "v1beta1").is_none());
    }
}
