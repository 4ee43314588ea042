//! `wasmsched bench --json` prints one JSON object on its last line with the
//! documented fields (a small run: figures are measured by the benchmark
//! itself, never asserted here).

use std::process::Command;

#[test]
fn json_summary_on_last_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(["bench", "--nodes", "300", "--pods", "500", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let last = text.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    for key in [
        "nodes",
        "pods",
        "scheduled",
        "unschedulable",
        "pods_per_sec",
        "p50_ms",
        "p99_ms",
        "peak_rss_mb",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {last}");
    }
    assert_eq!(v["nodes"], 300);
    assert_eq!(
        v["scheduled"].as_u64().unwrap() + v["unschedulable"].as_u64().unwrap(),
        500
    );
    assert!(v["pods_per_sec"].as_f64().unwrap() > 0.0);
}
