//! What the measuring examples share: nodes with a `price` annotation, a
//! pod, and a scheduler's plugin slot serving one component.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;
use wasmsched_core::{Cache, NodeData, PodInfo, Snapshot};
use wasmsched_wasm::{PluginHost, PluginSlot, WasmConfig, WasmEngine};

/// `n` nodes priced 0.00 to 0.96, in a snapshot.
pub fn priced_nodes(n: usize) -> Snapshot {
    let mut cache = Cache::new();
    for i in 0..n {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": format!("n{i:05}"), "labels": {"zone": "a"}, "annotations": {"price": format!("0.{:02}", i % 97)}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
        }))
        .unwrap();
        cache.upsert_node(NodeData::from_node(&node).unwrap());
    }
    cache.snapshot()
}

/// A pod with one container.
pub fn pod() -> PodInfo {
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "d", "uid": "u"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})).unwrap();
    PodInfo::from_pod(&pod).unwrap()
}

/// The component's plugin as a scheduler calls it (from a plugin
/// directory of its own, `tag`ged), with the host that serves it and the
/// directory to remove.
pub fn slot(file: &str, tag: &str) -> (Arc<PluginHost>, Arc<PluginSlot>, PathBuf) {
    let name = PluginHost::new(WasmEngine::new(None).unwrap(), WasmConfig::default(), 1)
        .load_file(Path::new(file), "{}")
        .expect("load the component")
        .name
        .clone();
    let dir = std::env::temp_dir().join(format!("{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(file, dir.join("plugin.wasm")).unwrap();
    let host = PluginHost::new(
        WasmEngine::new(None).unwrap(),
        WasmConfig {
            directory: Some(dir.clone()),
            ..Default::default()
        },
        1,
    );
    host.scan();
    let slot = host.slot(&name, "{}".into()).unwrap();
    (host, slot, dir)
}
