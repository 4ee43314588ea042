//! Per-node cost of a WebAssembly score plugin against its native Rust twin,
//! on the same nodes through the same `core` plugin interface.
//!
//! ```sh
//! plugins/build.sh c plugins/examples/node-price/c /tmp/np-c.wasm
//! cargo run --release -p wasmsched-wasm --example per_node -- /tmp/np-c.wasm [NODES]
//! ```
//!
//! The native twin is `node-price` written as a built-in: read the `price`
//! annotation of each node as a number (parsed when the node was stored,
//! as plugins read it), scale it (NormalizeScore excluded on both sides).

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use wasmsched_core::framework::{CycleState, Status};
use wasmsched_core::node::NodeRow;
use wasmsched_core::{NodeInfo, Plugin, PodInfo, Points};

mod common;

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
                .annotation_numbers
                .get("price")
                .filter(|p| *p >= 0.0)
                .map_or(-1, |p| (p * 1000.0).round() as i64);
        }
        Ok(())
    }
}

fn main() {
    let file = std::env::args().nth(1).expect("usage: per_node COMPONENT.wasm [NODES]");
    let n: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(5000);
    let snapshot = common::priced_nodes(n);
    let nodes: Vec<&Arc<NodeInfo>> = snapshot.nodes.iter().collect();
    let rows: Vec<&NodeRow> = snapshot.rows().iter().collect();
    let pod = common::pod();
    let (_host, wasm, dir) = common::slot(&file, "per-node");
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
    let _ = std::fs::remove_dir_all(dir);
    println!(
        "{}",
        json!({"component": file, "plugin": wasm.name(), "nodes": n, "native_ns_per_node": (native_ns * 10.0).round() / 10.0,
               "wasm_ns_per_node": (wasm_ns * 10.0).round() / 10.0, "ratio": (wasm_ns / native_ns * 100.0).round() / 100.0})
    );
}
