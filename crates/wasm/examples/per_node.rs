//! Per-node cost of a WebAssembly score plugin against its native Rust twin,
//! on the same nodes through the same `core` plugin interface.
//!
//! ```sh
//! plugins/build.sh c plugins/examples/node-price/c /tmp/np-c.wasm
//! cargo run --release -p wasmsched-wasm --example per_node -- /tmp/np-c.wasm [NODES]
//! ```
//!
//! The native twin is `node-price` written as a built-in: read the `price`
//! annotation of each node, parse it, scale it (NormalizeScore excluded on
//! both sides).

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;
use wasmsched_core::framework::{CycleState, Status};
use wasmsched_core::node::NodeRow;
use wasmsched_core::{Cache, NodeData, NodeInfo, Plugin, PodInfo, Points};
use wasmsched_wasm::{PluginHost, WasmConfig, WasmEngine};

/// `node-price`, native.
struct NativeNodePrice;

impl Plugin for NativeNodePrice {
    fn name(&self) -> &str {
        "native-node-price"
    }
    fn points(&self) -> Points {
        Points::SCORE
    }
    fn score_nodes(
        &self,
        _: &CycleState,
        _: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        _: &[&NodeRow],
        out: &mut [i64],
    ) -> Result<(), Status> {
        for (o, n) in out.iter_mut().zip(nodes) {
            *o = n
                .node
                .object
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("price"))
                .and_then(|p| p.trim().parse::<f64>().ok())
                .filter(|p| p.is_finite() && *p >= 0.0)
                .map_or(-1, |p| (p * 1000.0).round() as i64);
        }
        Ok(())
    }
}

fn main() {
    let file = std::env::args().nth(1).expect("usage: per_node COMPONENT.wasm [NODES]");
    let n: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(5000);
    let mut cache = Cache::new();
    for i in 0..n {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": format!("n{i:05}"), "labels": {"zone": "a"}, "annotations": {"price": format!("0.{:02}", i % 97)}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
        }))
        .unwrap();
        cache.upsert_node(NodeData::from_node(&node).unwrap());
    }
    let snapshot = cache.snapshot();
    let nodes: Vec<&Arc<NodeInfo>> = snapshot.nodes.iter().collect();
    let rows: Vec<&NodeRow> = snapshot.rows().iter().collect();
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "d", "uid": "u"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})).unwrap();
    let pod = PodInfo::from_pod(&pod).unwrap();
    let host = PluginHost::new(WasmEngine::new(None).unwrap(), WasmConfig::default(), 1);
    let loaded = host
        .load_file(std::path::Path::new(&file), "{}")
        .expect("load the component");
    let dir = std::env::temp_dir().join(format!("per-node-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&file, dir.join("plugin.wasm")).unwrap();
    let host = PluginHost::new(
        WasmEngine::new(None).unwrap(),
        WasmConfig {
            directory: Some(dir),
            ..Default::default()
        },
        1,
    );
    host.scan();
    let wasm = host.slot(&loaded.name, "{}".into()).unwrap();
    let native = NativeNodePrice;
    let state = CycleState::default();
    let mut a = vec![0; n];
    let mut b = vec![0; n];
    let time = |p: &dyn Plugin, out: &mut [i64]| {
        // warm up, then the best of 20 rounds (the machine is shared)
        p.score_nodes(&state, &pod, &nodes, &rows, out).unwrap();
        (0..20)
            .map(|_| {
                let t = Instant::now();
                p.score_nodes(&state, &pod, &nodes, &rows, out).unwrap();
                t.elapsed().as_secs_f64() * 1e9 / n as f64
            })
            .fold(f64::INFINITY, f64::min)
    };
    let native_ns = time(&native, &mut a);
    let wasm_ns = time(&*wasm, &mut b);
    assert_eq!(a, b, "the plugin and its native twin disagree");
    println!(
        "{}",
        json!({"component": file, "plugin": loaded.name, "nodes": n, "native_ns_per_node": (native_ns * 10.0).round() / 10.0,
               "wasm_ns_per_node": (wasm_ns * 10.0).round() / 10.0, "ratio": (wasm_ns / native_ns * 100.0).round() / 100.0})
    );
}
