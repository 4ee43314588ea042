//! Every manifest in `deploy/` parses into its k8s-openapi type with no
//! field lost (a typo in a field name fails here), the kustomization lists
//! files that exist, and the embedded scheduler configuration is valid.

use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::Deserialize;
use serde_json::Value;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml") {
            out.push(p);
        }
    }
}

/// Decodes into `T` and back; the result must equal the input.
fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &Value, what: &str) -> T {
    let typed: T = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(&back, doc, "{what}: a field was not recognised (typo?)");
    typed
}

#[test]
fn manifests_parse_into_kubernetes_types() {
    let mut files = Vec::new();
    yaml_files(&deploy_dir(), &mut files);
    files.sort();
    let mut kinds = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        if f.file_name().unwrap() == "kustomization.yaml" {
            let k: Value = serde_norway::from_str(&text).unwrap();
            for r in k["resources"].as_array().unwrap() {
                let path = f.parent().unwrap().join(r.as_str().unwrap());
                assert!(
                    path.exists(),
                    "{}: resource {} does not exist",
                    f.display(),
                    path.display()
                );
            }
            continue;
        }
        for (i, doc) in serde_norway::Deserializer::from_str(&text).enumerate() {
            let doc = Value::deserialize(doc).unwrap();
            if doc.is_null() {
                continue;
            }
            let what = format!("{} document {}", f.display(), i + 1);
            let kind = check_doc(&doc, &what, f);
            kinds.push(kind);
        }
    }
    for k in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "Role",
        "Deployment",
        "ConfigMap",
        "Pod",
    ] {
        assert!(kinds.iter().any(|x| x == k), "no {k} in deploy/");
    }
}

/// Checks one manifest document (from the file `f`); returns its kind.
fn check_doc(doc: &Value, what: &str, f: &Path) -> String {
    let kind = doc["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: no kind"))
        .to_owned();
    match kind.as_str() {
        "Namespace" => drop(round_trip::<Namespace>(doc, what)),
        "ServiceAccount" => drop(round_trip::<ServiceAccount>(doc, what)),
        "ClusterRole" => drop(round_trip::<ClusterRole>(doc, what)),
        "ClusterRoleBinding" => drop(round_trip::<ClusterRoleBinding>(doc, what)),
        "Role" => drop(round_trip::<Role>(doc, what)),
        "RoleBinding" => drop(round_trip::<RoleBinding>(doc, what)),
        "Pod" => drop(round_trip::<Pod>(doc, what)),
        "NetworkPolicy" => drop(round_trip::<NetworkPolicy>(doc, what)),
        // The Prometheus Operator's kind: a scrape over HTTPS that presents
        // the scraper's token, which the admin port reviews.
        "ServiceMonitor" => {
            let e = &doc["spec"]["endpoints"][0];
            assert_eq!(e["scheme"], "https", "{what}");
            assert_eq!(e["path"], "/metrics", "{what}");
            assert!(
                e["bearerTokenFile"].is_string() || e["authorization"].is_object(),
                "{what}: no token"
            );
        }
        "Deployment" => {
            let d = round_trip::<Deployment>(doc, what);
            let spec = d.spec.unwrap().template.spec.unwrap();
            let c = &spec.containers[0];
            // The admin port as kube-scheduler's secure port: HTTPS, the
            // probes on the paths served to anyone.
            let args = c.args.clone().unwrap_or_default();
            assert!(
                !args.iter().any(|a| a == "--admin-plain-http"),
                "{what}: plain HTTP in a cluster"
            );
            for probe in [&c.liveness_probe, &c.readiness_probe] {
                let get = probe.as_ref().and_then(|p| p.http_get.as_ref()).unwrap();
                assert_eq!(get.scheme.as_deref(), Some("HTTPS"), "{what}");
                assert!(
                    ["/healthz", "/livez", "/readyz"].contains(&get.path.as_deref().unwrap_or_default()),
                    "{what}"
                );
            }
            assert_eq!(
                c.security_context.as_ref().unwrap().read_only_root_filesystem,
                Some(true)
            );
            assert_eq!(spec.security_context.as_ref().unwrap().run_as_non_root, Some(true));
        }
        "Service" => drop(round_trip::<Service>(doc, what)),
        "ConfigMap" => {
            let cm = round_trip::<ConfigMap>(doc, what);
            if let Some(cfg) = cm.data.as_ref().and_then(|d| d.get("config.yaml")) {
                let c = wasmsched_core::config::Config::from_yaml(cfg).unwrap_or_else(|e| panic!("{what}: {e}"));
                wasmsched_wasm::WasmConfig::from_value(c.wasm_plugins.as_ref()).unwrap();
                // The daemon elects a leader; the extender binds nothing.
                if !f.to_string_lossy().contains("extender") {
                    assert!(c.leader_election.is_some());
                }
            }
            if let Some(cfg) = cm.data.as_ref().and_then(|d| d.get("scheduler-config.yaml")) {
                check_extender_entry(cfg, what);
            }
        }
        other => panic!("{what}: no check for kind {other}"),
    }
    kind
}

/// kube-scheduler's `extenders:` entry names the verbs `wasmsched
/// extender` serves, at the port its Service exposes, with the fields
/// kube-scheduler reads.
fn check_extender_entry(cfg: &str, what: &str) {
    let c: Value = serde_norway::from_str(cfg).unwrap_or_else(|e| panic!("{what}: {e}"));
    let e = &c["extenders"][0];
    let url = e["urlPrefix"].as_str().unwrap();
    assert!(
        url.ends_with(":8888/"),
        "{what}: urlPrefix {url} (the Service's port is 8888)"
    );
    assert_eq!(e["filterVerb"], "filter", "{what}");
    assert_eq!(e["prioritizeVerb"], "prioritize", "{what}");
    assert!(e["weight"].as_i64().unwrap() > 0, "{what}: weight");
    assert!(e["nodeCacheCapable"].is_boolean(), "{what}: nodeCacheCapable");
    assert!(e["ignorable"].is_boolean(), "{what}: ignorable");
    let timeout = e["httpTimeout"].as_str().unwrap();
    assert!(
        wasmsched_kube::parse_duration(timeout).is_some(),
        "{what}: httpTimeout {timeout}"
    );
    for key in e.as_object().unwrap().keys() {
        assert!(
            [
                "urlPrefix",
                "filterVerb",
                "prioritizeVerb",
                "preemptVerb",
                "bindVerb",
                "weight",
                "enableHTTPS",
                "tlsConfig",
                "httpTimeout",
                "nodeCacheCapable",
                "managedResources",
                "ignorable"
            ]
            .contains(&key.as_str()),
            "{what}: kube-scheduler's Extender has no field {key}"
        );
    }
}

/// Every kustomization renders with the real kubectl (its bundled
/// kustomize), into the objects the files hold, each in the `wasmsched`
/// namespace when namespaced, and each passing the same checks.
#[test]
fn every_kustomization_renders_with_kubectl() {
    let mut files = Vec::new();
    yaml_files(&deploy_dir(), &mut files);
    let mut rendered_dirs = 0;
    for k in files.iter().filter(|f| f.file_name().unwrap() == "kustomization.yaml") {
        let dir = k.parent().unwrap();
        let out = std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(dir)
            .output()
            .expect("kubectl (scripts/install-test-tools.sh installs it)");
        assert!(
            out.status.success(),
            "kubectl kustomize {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let mut rendered = 0;
        for (i, doc) in serde_norway::Deserializer::from_str(&text).enumerate() {
            let doc = Value::deserialize(doc).unwrap();
            let what = format!("kubectl kustomize {} document {}", dir.display(), i + 1);
            let kind = check_doc(&doc, &what, k);
            if !["Namespace", "ClusterRole", "ClusterRoleBinding"].contains(&kind.as_str()) {
                assert_eq!(doc["metadata"]["namespace"], "wasmsched", "{what}");
            }
            rendered += 1;
        }
        // As many objects as the files it lists hold.
        let listed: Value = serde_norway::from_str(&std::fs::read_to_string(k).unwrap()).unwrap();
        let in_files: usize = listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let t = std::fs::read_to_string(dir.join(r.as_str().unwrap())).unwrap();
                serde_norway::Deserializer::from_str(&t)
                    .map(|d| Value::deserialize(d).unwrap())
                    .filter(|v| !v.is_null())
                    .count()
            })
            .sum();
        assert_eq!(rendered, in_files, "{}", dir.display());
        rendered_dirs += 1;
    }
    assert!(rendered_dirs >= 2, "deploy/base and deploy/extender");
}
