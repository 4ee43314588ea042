//! Regenerates `openapi/*_schemas.json.gz`: the OpenAPI v3 component schemas
//! of every kind the double serves, one file per group-version, as
//! kube-apiserver publishes them under `/openapi/v3/<group-version>`.
//!
//! The schemas (fields, types, formats, descriptions) are k8s-openapi's. The
//! patch and list extensions kubectl needs to compute strategic merge patches
//! (`x-kubernetes-patch-merge-key` and friends) are not in k8s-openapi: they
//! come from the struct tags and markers of the Go types, as kube-openapi
//! takes them, so this reads the sources of `k8s.io/api` and
//! `k8s.io/apimachinery` at the release k8s-openapi's feature names:
//!
//! ```sh
//! cargo run -p wasmsched-apiserver-sim --features openapi-schemas --example openapi_schemas -- \
//!     K8S_IO_API_DIR K8S_IO_APIMACHINERY_DIR
//! ```
//!
//! See `openapi/README.md`.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::{
    apps, authentication, authorization, coordination, core, events, policy, rbac, resource, scheduling, storage,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings};
use serde_json::{Map, Value, json};
use wasmsched_apiserver_sim::resources::RESOURCES;

/// The Kubernetes release whose types k8s-openapi's enabled feature holds.
const RELEASE: &str = "v1.36.0";

/// One group-version's roots: kinds with their GVK, and the meta types
/// kube-apiserver's document always carries.
struct GroupVersion {
    group: &'static str,
    version: &'static str,
    roots: Vec<Root>,
}

struct Root {
    name: String,
    kind: Option<&'static str>,
    /// The kind's own group when it is not the document's: a subresource's
    /// body (`serviceaccounts/token` takes an `authentication.k8s.io`
    /// TokenRequest) is described in the document of the resource.
    group: Option<&'static str>,
}

fn root<T: JsonSchema + k8s_openapi::Resource>(gen_: &mut SchemaGenerator, roots: &mut Vec<Root>) {
    gen_.subschema_for::<T>();
    roots.push(Root {
        name: T::schema_name().into_owned(),
        kind: Some(T::KIND),
        group: None,
    });
}

fn foreign_root<T: JsonSchema + k8s_openapi::Resource>(gen_: &mut SchemaGenerator, roots: &mut Vec<Root>) {
    gen_.subschema_for::<T>();
    roots.push(Root {
        name: T::schema_name().into_owned(),
        kind: Some(T::KIND),
        group: Some(T::GROUP),
    });
}

fn meta_root<T: JsonSchema>(gen_: &mut SchemaGenerator, roots: &mut Vec<Root>) {
    gen_.subschema_for::<T>();
    roots.push(Root {
        name: T::schema_name().into_owned(),
        kind: None,
        group: None,
    });
}

/// Kinds that are only ever created (answered, not stored): no `XList`.
const CREATE_ONLY: &[&str] = &["Binding", "TokenRequest", "TokenReview", "SubjectAccessReview"];

macro_rules! kinds {
    ($group:expr, $version:expr, [$($t:ty),* $(,)?]) => {{
        let mut gen_ = SchemaGenerator::new(SchemaSettings::openapi3());
        let mut roots = Vec::new();
        $(root::<$t>(&mut gen_, &mut roots);)*
        meta_root::<meta::Status>(&mut gen_, &mut roots);
        meta_root::<meta::DeleteOptions>(&mut gen_, &mut roots);
        (GroupVersion { group: $group, version: $version, roots }, gen_)
    }};
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [api_dir, machinery_dir] = args.as_slice() else {
        return Err("usage: openapi_schemas K8S_IO_API_DIR K8S_IO_APIMACHINERY_DIR".into());
    };
    let mut go = GoTypes::default();
    go.read_tree(Path::new(api_dir), "io.k8s.api")?;
    go.read_dir(
        &Path::new(machinery_dir).join("pkg/apis/meta/v1"),
        "io.k8s.apimachinery.pkg.apis.meta.v1",
    )?;
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi");
    let mut gvs = [
        kinds!(
            "",
            "v1",
            [
                core::v1::Namespace,
                core::v1::Node,
                core::v1::Pod,
                core::v1::Binding,
                core::v1::Event,
                core::v1::ConfigMap,
                core::v1::Service,
                core::v1::ReplicationController,
                core::v1::PersistentVolumeClaim,
                core::v1::PersistentVolume,
                core::v1::ServiceAccount,
            ]
        ),
        kinds!("apps", "v1", [apps::v1::ReplicaSet, apps::v1::StatefulSet]),
        kinds!("policy", "v1", [policy::v1::PodDisruptionBudget]),
        kinds!(
            "storage.k8s.io",
            "v1",
            [storage::v1::StorageClass, storage::v1::CSINode]
        ),
        kinds!("coordination.k8s.io", "v1", [coordination::v1::Lease]),
        kinds!("events.k8s.io", "v1", [events::v1::Event]),
        kinds!("authentication.k8s.io", "v1", [authentication::v1::TokenReview]),
        kinds!("authorization.k8s.io", "v1", [authorization::v1::SubjectAccessReview]),
        kinds!(
            "rbac.authorization.k8s.io",
            "v1",
            [
                rbac::v1::ClusterRole,
                rbac::v1::ClusterRoleBinding,
                rbac::v1::Role,
                rbac::v1::RoleBinding,
            ]
        ),
        kinds!("scheduling.k8s.io", "v1", [scheduling::v1::PriorityClass]),
        kinds!(
            "scheduling.k8s.io",
            "v1alpha2",
            [scheduling::v1alpha2::PodGroup, scheduling::v1alpha2::Workload]
        ),
        kinds!(
            "resource.k8s.io",
            "v1",
            [
                resource::v1::DeviceClass,
                resource::v1::ResourceSlice,
                resource::v1::ResourceClaim,
                resource::v1::ResourceClaimTemplate,
            ]
        ),
    ];
    // serviceaccounts/token's body, in core/v1's document as kube-apiserver has it.
    {
        let (core_v1, gen_) = &mut gvs[0];
        foreign_root::<authentication::v1::TokenRequest>(gen_, &mut core_v1.roots);
    }
    for def in RESOURCES {
        let covered = gvs.iter().any(|(gv, _)| {
            gv.group == def.group && gv.version == def.version && gv.roots.iter().any(|r| r.kind == Some(def.kind))
        });
        assert!(covered, "{}/{} {} has no schema here", def.group, def.version, def.kind);
    }
    for (gv, mut gen_) in gvs {
        let mut schemas = gen_.take_definitions(true);
        for r in &gv.roots {
            let Some(kind) = r.kind else { continue };
            let group = r.group.unwrap_or(gv.group);
            let gvk = |kind: &str| json!([{"group": group, "kind": kind, "version": gv.version}]);
            schemas[&r.name]["x-kubernetes-group-version-kind"] = gvk(kind);
            if CREATE_ONLY.contains(&kind) {
                continue;
            }
            let list_name = format!("{}List", r.name);
            let list = go.list_schema(&list_name, &r.name, &schemas[&r.name], gvk(&format!("{kind}List")))?;
            schemas.insert(list_name, list);
        }
        for (name, schema) in schemas.iter_mut() {
            go.annotate(name, schema);
        }
        let doc = json!({"components": {"schemas": schemas}});
        let file = if gv.group.is_empty() {
            format!("api__{}_schemas.json.gz", gv.version)
        } else {
            format!("apis__{}__{}_schemas.json.gz", gv.group, gv.version)
        };
        let mut enc = flate2::GzBuilder::new().write(Vec::new(), flate2::Compression::best());
        serde_json::to_writer(&mut enc, &doc)?;
        std::fs::write(out.join(&file), enc.finish()?)?;
        eprintln!(
            "{file}: {} schemas",
            doc["components"]["schemas"].as_object().map_or(0, Map::len)
        );
    }
    eprintln!("from k8s-openapi's {RELEASE} types");
    Ok(())
}

/// What the Go sources say that k8s-openapi does not: per schema, its doc
/// comment and markers, and per field its doc comment, struct tags and
/// markers.
#[derive(Default)]
struct GoTypes {
    types: BTreeMap<String, GoType>,
}

#[derive(Default)]
struct GoType {
    doc: String,
    markers: Vec<String>,
    fields: BTreeMap<String, GoField>,
}

#[derive(Default)]
struct GoField {
    doc: String,
    markers: Vec<String>,
    tags: String,
}

impl GoTypes {
    /// Every `GROUP/VERSION/*.go` under `dir` (k8s.io/api's layout).
    fn read_tree(&mut self, dir: &Path, prefix: &str) -> std::io::Result<()> {
        for group in std::fs::read_dir(dir)? {
            let group = group?.path();
            if !group.is_dir() {
                continue;
            }
            for version in std::fs::read_dir(&group)? {
                let version = version?.path();
                if version.is_dir() {
                    let g = group.file_name().unwrap_or_default().to_string_lossy();
                    let v = version.file_name().unwrap_or_default().to_string_lossy();
                    self.read_dir(&version, &format!("{prefix}.{g}.{v}"))?;
                }
            }
        }
        Ok(())
    }

    fn read_dir(&mut self, dir: &Path, prefix: &str) -> std::io::Result<()> {
        for file in std::fs::read_dir(dir)? {
            let path = file?.path();
            let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
            if name.ends_with(".go")
                && !name.ends_with("_test.go")
                && !name.starts_with("zz_generated")
                && !name.starts_with("generated.")
            {
                self.read_file(&std::fs::read_to_string(&path)?, prefix);
            }
        }
        Ok(())
    }

    /// A line-based reading of `type X struct { ... }` blocks, enough for the
    /// regular layout of the API types (gofmt'ed, one field per line).
    fn read_file(&mut self, text: &str, prefix: &str) {
        let mut comment: Vec<&str> = Vec::new();
        let mut current: Option<(String, GoType)> = None;
        for line in text.lines() {
            let t = line.trim();
            if let Some(c) = t.strip_prefix("//") {
                comment.push(c.strip_prefix(' ').unwrap_or(c));
                continue;
            }
            if let Some((name, ty)) = current.as_mut() {
                if t == "}" {
                    let (name, ty) = (std::mem::take(name), std::mem::take(ty));
                    self.types.insert(format!("{prefix}.{name}"), ty);
                    current = None;
                } else if let Some((_, tags)) = t.split_once('`') {
                    let tags = tags.trim_end_matches('`');
                    let json_name = tag(tags, "json").and_then(|j| j.split(',').next()).unwrap_or("");
                    if !json_name.is_empty() && json_name != "-" {
                        let (doc, markers) = split_comment(&comment);
                        ty.fields.insert(
                            json_name.to_owned(),
                            GoField {
                                doc,
                                markers,
                                tags: tags.to_owned(),
                            },
                        );
                    }
                }
                comment.clear();
                continue;
            }
            if let Some(rest) = t.strip_prefix("type ")
                && let Some(name) = rest.strip_suffix(" struct {")
            {
                let (doc, markers) = split_comment(&comment);
                current = Some((
                    name.trim().to_owned(),
                    GoType {
                        doc,
                        markers,
                        fields: BTreeMap::new(),
                    },
                ));
            }
            comment.clear();
        }
    }

    /// Adds the extensions kube-openapi derives from tags and markers.
    fn annotate(&self, name: &str, schema: &mut Value) {
        let Some(ty) = self.types.get(name) else { return };
        if marker(&ty.markers, "structType") == Some("atomic") {
            schema["x-kubernetes-map-type"] = json!("atomic");
        }
        let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            return;
        };
        for (field, prop) in props.iter_mut() {
            let Some(f) = ty.fields.get(field) else { continue };
            let m = |k: &str| marker(&f.markers, k);
            if let Some(s) = tag(&f.tags, "patchStrategy").or(m("patchStrategy")) {
                prop["x-kubernetes-patch-strategy"] = json!(s);
            }
            if let Some(k) = tag(&f.tags, "patchMergeKey").or(m("patchMergeKey")) {
                prop["x-kubernetes-patch-merge-key"] = json!(k);
            }
            if let Some(t) = m("listType") {
                prop["x-kubernetes-list-type"] = json!(t);
            }
            let keys: Vec<&str> = f.markers.iter().filter_map(|x| x.strip_prefix("listMapKey=")).collect();
            if !keys.is_empty() {
                prop["x-kubernetes-list-map-keys"] = json!(keys);
            }
            if let Some(t) = m("mapType") {
                prop["x-kubernetes-map-type"] = json!(t);
            }
        }
    }

    /// `XList`: k8s-openapi has one generic list type, kube-apiserver a
    /// schema per kind, built here as openapi-gen builds it from the Go type.
    fn list_schema(&self, name: &str, item: &str, item_schema: &Value, gvk: Value) -> Result<Value, String> {
        let ty = self.types.get(name).ok_or(format!("no Go type for {name}"))?;
        let field = |f: &str| {
            ty.fields
                .get(f)
                .map(|f| f.doc.clone())
                .ok_or(format!("{name}.{f} not found"))
        };
        let reference = |r: &str| json!({"allOf": [{"$ref": format!("#/components/schemas/{r}")}]});
        let mut metadata = reference("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta");
        metadata["description"] = json!(field("metadata")?);
        Ok(json!({
            "description": ty.doc,
            "properties": {
                "apiVersion": item_schema["properties"]["apiVersion"],
                "items": {"description": field("items")?, "items": {"$ref": format!("#/components/schemas/{item}")}, "type": "array"},
                "kind": item_schema["properties"]["kind"],
                "metadata": metadata,
            },
            "required": ["items"],
            "type": "object",
            "x-kubernetes-group-version-kind": gvk,
        }))
    }
}

/// A struct tag's value: `patchMergeKey:"name"`.
fn tag<'a>(tags: &'a str, key: &str) -> Option<&'a str> {
    let start = tags.find(&format!("{key}:\""))? + key.len() + 2;
    let len = tags[start..].find('"')?;
    Some(&tags[start..start + len])
}

fn marker<'a>(markers: &'a [String], key: &str) -> Option<&'a str> {
    markers.iter().find_map(|m| m.strip_prefix(key)?.strip_prefix('='))
}

/// A doc comment as openapi-gen renders it (lines joined, blank lines
/// between paragraphs, nothing after `---`), and its `+markers`.
fn split_comment(lines: &[&str]) -> (String, Vec<String>) {
    let mut paragraphs: Vec<String> = vec![String::new()];
    let mut markers = Vec::new();
    let mut private = false;
    for line in lines {
        let l = line.trim_end();
        if let Some(m) = l.strip_prefix('+') {
            markers.push(m.to_owned());
        } else if private || l.starts_with("---") {
            private = true;
        } else if l.trim().is_empty() {
            if !paragraphs.last().is_some_and(String::is_empty) {
                paragraphs.push(String::new());
            }
        } else {
            let p = paragraphs.last_mut().expect("one paragraph at least");
            if !p.is_empty() {
                p.push(' ');
            }
            p.push_str(l.trim());
        }
    }
    let doc = paragraphs
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    (doc, markers)
}
