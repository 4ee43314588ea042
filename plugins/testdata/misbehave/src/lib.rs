//! A plugin that misbehaves on purpose, to prove the host contains it.
//!
//! Args: `{"mode": "..."}` with mode
//! - `ok`: filters nothing out, scores every node 50;
//! - `trap`: Filter and Score trap (`unreachable`);
//! - `loop`: Filter and Score never return;
//! - `oom`: Filter and Score allocate until memory runs out;
//! - `error`: Filter and Score return an error;
//! - `leak`: Filter and Score behave but never free 1 MiB each (a guest
//!   whose heap only grows);
//! - `range`: Score returns 1000, outside 0..=100 (no NormalizeScore);
//! - `bad-config`: `configure` fails.
//! Modes may be suffixed with `-after-N`: the first N Filter/Score calls
//! behave, later ones misbehave.

use std::sync::Mutex;

wit_bindgen::generate!({ world: "scheduler-plugin", path: "../../../wit" });

use exports::wasmsched::plugin::plugin::{Guest, PluginMetadata, Points, Rejection, Status};
use wasmsched::plugin::cluster::{Nodes, Pod};
use wasmsched::plugin::host::{Level, log};

static MODE: Mutex<(String, u64)> = Mutex::new((String::new(), 0));

struct Misbehave;

fn act(nodes: usize) -> Result<(), String> {
    let mut m = MODE.lock().unwrap();
    let (mode, calls) = &mut *m;
    *calls += 1;
    let (what, after) = match mode.split_once("-after-") {
        Some((w, n)) => (w.to_owned(), n.parse::<u64>().unwrap_or(0)),
        None => (mode.clone(), 0),
    };
    if *calls <= after {
        return Ok(());
    }
    drop(m);
    match what.as_str() {
        "trap" => core::arch::wasm32::unreachable(),
        "loop" => {
            let mut x: u64 = nodes as u64;
            loop {
                x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        "oom" => {
            let mut hog: Vec<Vec<u8>> = Vec::new();
            loop {
                hog.push(vec![1u8; 1 << 20]);
                core::hint::black_box(&hog);
            }
        }
        "error" => Err(format!("refusing {nodes} nodes on purpose")),
        "leak" => {
            std::mem::forget(core::hint::black_box(vec![1u8; 1 << 20]));
            Ok(())
        }
        _ => Ok(()),
    }
}

impl Guest for Misbehave {
    fn metadata() -> PluginMetadata {
        PluginMetadata {
            name: "misbehave".into(),
            version: "0.1.0".into(),
            points: Points::FILTER | Points::SCORE,
        }
    }

    fn configure(args: String) -> Result<(), String> {
        let mode = args
            .split("\"mode\"")
            .nth(1)
            .and_then(|r| r.split('"').nth(1))
            .unwrap_or("ok")
            .to_owned();
        if mode == "bad-config" {
            return Err("mode bad-config: refusing to start".into());
        }
        log(Level::Info, &format!("misbehave configured in mode {mode}"));
        *MODE.lock().unwrap() = (mode, 0);
        Ok(())
    }

    fn pre_filter(_: &Pod) -> Result<Status, String> {
        Err("not implemented".into())
    }

    fn filter(_: &Pod, nodes: &Nodes) -> Result<Vec<Rejection>, String> {
        act(nodes.len() as usize)?;
        Ok(Vec::new())
    }

    fn pre_score(_: &Pod, _: &Nodes) -> Result<Status, String> {
        Err("not implemented".into())
    }

    fn score(_: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        act(nodes.len() as usize)?;
        let score = if MODE.lock().unwrap().0 == "range" { 1000 } else { 50 };
        Ok(vec![score; nodes.len() as usize])
    }

    fn normalize_score(_: &Pod, _: Vec<i64>) -> Result<Vec<i64>, String> {
        Err("not implemented".into())
    }
}

export!(Misbehave);
