//! What one Score and one NormalizeScore call of a plugin cost, through the
//! same `core` plugin interface the scheduler calls, on 500 nodes with a
//! `price` annotation (the batch a 5000-node cluster samples).
//!
//! ```sh
//! plugins/build.sh python plugins/examples/node-price/python /tmp/np-py.wasm
//! cargo run --release -p wasmsched-wasm --example per_call -- /tmp/np-py.wasm [CALLS]
//! ```
//!
//! Prints the median and the least of `CALLS` (300 by default) back-to-back
//! calls, in µs: the plugin's own cost and the host's per call, with warm
//! caches (the scheduler's own work between calls, which `bench` includes,
//! is not there).

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use wasmsched_core::framework::CycleState;
use wasmsched_core::node::NodeRow;
use wasmsched_core::{NodeInfo, Plugin};

mod common;

fn main() {
    let file = std::env::args().nth(1).expect("usage: per_call COMPONENT.wasm [CALLS]");
    let calls: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(300);
    let n = 500;
    let snapshot = common::priced_nodes(n);
    let nodes: Vec<&Arc<NodeInfo>> = snapshot.nodes.iter().collect();
    let rows: Vec<&NodeRow> = snapshot.rows().iter().collect();
    let pod = common::pod();
    let (_host, plugin, dir) = common::slot(&file, "per-call");
    let state = CycleState::default();
    let mut out = vec![0; n];
    let (mut score, mut normalize) = (Vec::new(), Vec::new());
    for _ in 0..calls.max(1) {
        let t = Instant::now();
        plugin.score_nodes(&state, &pod, &nodes, &rows, &mut out).unwrap();
        score.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let st = plugin.normalize_scores(&state, &pod, &mut out);
        normalize.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(st.is_success(), "{st:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
    let stat = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        ((v[v.len() / 2] * 10.0).round() / 10.0, (v[0] * 10.0).round() / 10.0)
    };
    let ((s_med, s_min), (n_med, n_min)) = (stat(&mut score), stat(&mut normalize));
    println!(
        "{}",
        json!({"component": file, "plugin": plugin.name(), "nodes": n, "calls": calls,
               "score_us": {"median": s_med, "least": s_min}, "normalize_us": {"median": n_med, "least": n_min}})
    );
}
