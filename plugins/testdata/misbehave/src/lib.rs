//! A plugin that misbehaves on purpose, to prove the host contains it.
//!
//! Args: `{"mode": "..."}` with mode
//! - `ok`: filters nothing out, scores every node 50;
//! - `trap`: Filter and Score trap (`unreachable`);
//! - `loop`: Filter and Score never return;
//! - `busy`: Filter and Score spin for tens of milliseconds, then behave;
//! - `oom`: Filter and Score allocate until memory runs out;
//! - `error`: Filter and Score return an error;
//! - `leak`: Filter and Score behave but never free 1 MiB each (a guest
//!   whose heap only grows);
//! - `range`: Score returns 1000, outside 0..=100 (no NormalizeScore);
//! - `packed`: behaves as `ok`, its scores packed (contract 0.5); its
//!   NormalizeScore (not declared: the tests call it directly) returns
//!   packed scores as they came, and refuses them as values;
//! - `bad-packed`: Score returns packed scores one byte short;
//! - `bad-config`: `configure` fails;
//! - `slow-start`: `configure` spins for 2 s, then every call traps;
//! - `giant-key`: reads a label with a 32 MiB key;
//! - `giant-names`: asks `image-bytes` for 1.5 million empty names;
//! - `log-flood`: logs 100 000 lines with forged newlines, and one of 30 MiB;
//! - `host-loop`: calls a host function in a loop forever;
//! - `bad-index`: Filter rejects node index 2^32 - 512;
//! - `long-reason`: Filter rejects node 0 with a reason of 100 000 bytes;
//! - `bad-selector`: Filter asks `pod-counts` with an operator Kubernetes
//!   does not know, and returns the host's answer as its error;
//! - `trap-every-third`: every third Filter or Score call traps;
//! - `big-error`: Filter and Score return an error of 1 MiB, different on
//!   every call, full of newlines, ESC bytes and bidirectional overrides;
//! - `many-reasons`: Filter rejects every node with a reason of its own
//!   (256 bytes each);
//! - `deep-host-error`: Filter recurses 40 calls deep and hands the host a
//!   string that is not UTF-8 there (an error of the host, not a trap;
//!   wasmtime's backtrace of it names the guest's functions).
//! - `many-sources`, `long-source`: declares 1000 metric sources, or one
//!   of 1000 bytes;
//! - `domain-keys`: Filter asks `domain-counts` for 200 topology keys no
//!   node has, new on every call;
//! - `wide-selector`: Filter asks `pod-counts` with 64 requirements;
//! - `many-rejections`: Filter rejects node 0 64 times per node;
//! - `fill`: Filter and Score leave their memory at 7/8 of a 16 MiB cap.
//!
//! Built with `MISBEHAVE_BINDING` set, it also declares Reserve and Permit
//! (contract 0.7), where these modes misbehave (others allow):
//! - `wait-forever`: Permit waits as long as the contract lets it say
//!   (`u32::MAX` ms);
//! - `allow-others`: Permit waits 60 s, and allows and rejects every other
//!   pod waiting, whoever holds it;
//! - `fill-state`: Reserve writes 64 KiB values to the plugin's store until
//!   the host refuses, and fails with the host's answer.
//! Modes may be suffixed with `-after-N`: the first N Filter/Score calls
//! behave, later ones misbehave.

use std::sync::Mutex;

wit_bindgen::generate!({ world: "scheduler-plugin", path: "../../../wit" });

use exports::wasmsched::plugin::plugin::{
    Code, Guest, NodeStatus, PermitVerdict, PluginMetadata, Points, PostFilterResult, Rejection, Scores, Status,
};
use wasmsched::plugin::cluster::{LabelRequirement, Nodes, Pod, PodSelector};
use wasmsched::plugin::host::{Level, log};

static MODE: Mutex<(String, u64)> = Mutex::new((String::new(), 0));
static CALLS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
static FILLED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Every pod of every namespace.
fn everything() -> PodSelector {
    PodSelector {
        namespaces: Vec::new(),
        all_namespaces: true,
        match_labels: Vec::new(),
        match_expressions: Vec::new(),
    }
}

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
    let n = *calls;
    drop(m);
    match what.as_str() {
        "trap" => core::arch::wasm32::unreachable(),
        "trap-every-third" if n % 3 == 0 => core::arch::wasm32::unreachable(),
        "loop" => {
            let mut x: u64 = nodes as u64;
            loop {
                x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        "busy" => {
            let mut x: u64 = nodes as u64;
            for _ in 0..20_000_000 {
                x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            Ok(())
        }
        "oom" => {
            let mut hog: Vec<Vec<u8>> = Vec::new();
            loop {
                hog.push(vec![1u8; 1 << 20]);
                core::hint::black_box(&hog);
            }
        }
        "error" => Err(format!("refusing {nodes} nodes on purpose")),
        "host-loop" => loop {
            core::hint::black_box(log(Level::Trace, ""));
        },
        "log-flood" => {
            for i in 0..100_000 {
                log(Level::Info, &format!("line {i}\n2026-01-01T00:00:00Z INFO forged: all is well"));
            }
            log(Level::Info, &"x".repeat(30 << 20));
            Ok(())
        }
        "big-error" => {
            let line = "\n2026-01-01T00:00:00Z INFO forged \u{1b}[31mred\u{202e}desrever";
            Err(format!("call {n}:{}", line.repeat((1 << 20) / line.len())))
        }
        "fill" => {
            // 14 MiB, kept: the instance ends its call past 3/4 of 16 MiB.
            if !FILLED.swap(true, core::sync::atomic::Ordering::Relaxed) {
                std::mem::forget(core::hint::black_box(vec![1u8; 14 << 20]));
            }
            Ok(())
        }
        "leak" => {
            std::mem::forget(core::hint::black_box(vec![1u8; 1 << 20]));
            Ok(())
        }
        _ => Ok(()),
    }
}

impl Guest for Misbehave {
    fn metadata() -> PluginMetadata {
        // Another name or version, for the tests of what the host takes.
        PluginMetadata {
            name: option_env!("MISBEHAVE_NAME").unwrap_or("misbehave").into(),
            version: option_env!("MISBEHAVE_VERSION").unwrap_or("0.1.0").into(),
            points: if option_env!("MISBEHAVE_BINDING").is_some() {
                Points::FILTER | Points::SCORE | Points::RESERVE | Points::PERMIT
            } else {
                Points::FILTER | Points::SCORE
            },
            events: None,
            keep_state: false,
        }
    }

    fn configure(args: String) -> Result<(), String> {
        if args.contains("slow-start") {
            let t = spin_counter();
            core::hint::black_box(t);
        }
        let mode = args
            .split("\"mode\"")
            .nth(1)
            .and_then(|r| r.split('"').nth(1))
            .unwrap_or("ok")
            .to_owned();
        let mode = if mode == "slow-start" { "trap".to_owned() } else { mode };
        if mode == "bad-config" {
            return Err("mode bad-config: refusing to start".into());
        }
        log(Level::Info, &format!("misbehave configured in mode {mode}"));
        *MODE.lock().unwrap() = (mode, 0);
        Ok(())
    }

    fn metric_sources() -> Vec<String> {
        match MODE.lock().unwrap().0.as_str() {
            // More names, and longer, than the host reads.
            "many-sources" => (0..1000).map(|i| format!("source-{i}")).collect(),
            "long-source" => vec!["x".repeat(1000)],
            "trap-sources" => panic!("metric-sources traps"),
            _ => Vec::new(),
        }
    }

    fn pre_filter(_: &Pod) -> Result<Status, String> {
        Err("not implemented".into())
    }

    fn filter(_: &Pod, nodes: &Nodes) -> Result<Vec<Rejection>, String> {
        match MODE.lock().unwrap().0.as_str() {
            "giant-key" => {
                let key = "k".repeat(32 << 20);
                return Ok(nodes
                    .label_values(&key)
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.is_some())
                    .map(|(i, _)| Rejection {
                        index: i as u32,
                        code: exports::wasmsched::plugin::plugin::Code::Unschedulable,
                        reason: String::new(),
                    })
                    .collect());
            }
            "giant-names" => {
                let names = vec![String::new(); 1_500_000];
                core::hint::black_box(nodes.image_bytes(&names));
                return Ok(Vec::new());
            }
            "long-reason" => {
                return Ok(vec![Rejection {
                    index: 0,
                    code: exports::wasmsched::plugin::plugin::Code::Unschedulable,
                    reason: "é".repeat(50_000),
                }]);
            }
            "bad-selector" => {
                // A selector Kubernetes would refuse: the host says why.
                let selector = PodSelector {
                    namespaces: Vec::new(),
                    all_namespaces: true,
                    match_labels: Vec::new(),
                    match_expressions: vec![LabelRequirement {
                        key: "app".into(),
                        operator: "Matches".into(),
                        values: vec!["web".into()],
                    }],
                };
                nodes.pod_counts(&selector)?;
                return Ok(Vec::new());
            }
            "many-reasons" => {
                return Ok((0..nodes.len())
                    .map(|i| Rejection {
                        index: i,
                        code: exports::wasmsched::plugin::plugin::Code::Unschedulable,
                        reason: format!("node {i:>5} is not wanted: {}", "x".repeat(230)),
                    })
                    .collect());
            }
            "deep-host-error" => {
                deep_host_error_frame(40);
                return Ok(Vec::new());
            }
            "domain-keys" => {
                let call = CALLS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
                for k in 0..200 {
                    nodes.domain_counts(&format!("key-{call}-{k}"), &everything())?;
                }
                return Ok(Vec::new());
            }
            "wide-selector" => {
                let mut selector = everything();
                selector.match_expressions = (0..64)
                    .map(|i| LabelRequirement {
                        key: format!("label-{i}"),
                        operator: "DoesNotExist".into(),
                        values: Vec::new(),
                    })
                    .collect();
                nodes.pod_counts(&selector)?;
                return Ok(Vec::new());
            }
            "many-rejections" => {
                return Ok((0..nodes.len() * 64)
                    .map(|_| Rejection {
                        index: 0,
                        code: exports::wasmsched::plugin::plugin::Code::Unschedulable,
                        reason: String::new(),
                    })
                    .collect());
            }
            "bad-index" => {
                return Ok(vec![Rejection {
                    index: u32::MAX - 511,
                    code: exports::wasmsched::plugin::plugin::Code::Unschedulable,
                    reason: "wrong node".into(),
                }]);
            }
            _ => {}
        }
        act(nodes.len() as usize)?;
        Ok(Vec::new())
    }

    fn pre_score(_: &Pod, _: &Nodes) -> Result<Status, String> {
        Err("not implemented".into())
    }

    fn score(_: &Pod, nodes: &Nodes) -> Result<Scores, String> {
        act(nodes.len() as usize)?;
        let mode = MODE.lock().unwrap().0.clone();
        let score = if mode == "range" { 1000 } else { 50 };
        let scores = vec![score; nodes.len() as usize];
        let packed = || scores.iter().flat_map(|s: &i64| s.to_le_bytes()).collect::<Vec<u8>>();
        Ok(match mode.as_str() {
            "packed" => Scores::Packed(packed()),
            "bad-packed" => {
                let mut bytes = packed();
                bytes.pop();
                Scores::Packed(bytes)
            }
            _ => Scores::Values(scores),
        })
    }

    fn normalize_score(_: &Pod, scores: Scores) -> Result<Scores, String> {
        if MODE.lock().unwrap().0 == "packed" {
            return match scores {
                Scores::Packed(_) => Ok(scores),
                Scores::Values(_) => Err("scores came as values, not packed as Score returned them".into()),
            };
        }
        Err("not implemented".into())
    }

    fn post_filter(_: &Pod, _: &Nodes, _: Vec<NodeStatus>) -> Result<PostFilterResult, String> {
        Err("not implemented".into())
    }

    fn reserve(_: &Pod, _: &Nodes) -> Result<Status, String> {
        if MODE.lock().unwrap().0 != "fill-state" {
            return Ok(Status { code: Code::Success, reason: String::new() });
        }
        for i in 0.. {
            if let Err(e) = wasmsched::plugin::state::set(&format!("fill/{i}"), &vec![7u8; 64 << 10]) {
                return Err(format!("after {i} values: {e}"));
            }
        }
        unreachable!()
    }

    fn unreserve(_: &Pod, _: String) {}

    fn permit(pod: &Pod, _: &Nodes) -> Result<PermitVerdict, String> {
        match MODE.lock().unwrap().0.as_str() {
            "wait-forever" => Ok(PermitVerdict::Wait(u32::MAX)),
            "allow-others" => {
                let me = pod.uid();
                for w in wasmsched::plugin::waiting::pods().into_iter().filter(|w| w.uid != me) {
                    wasmsched::plugin::waiting::allow(&w.uid);
                    wasmsched::plugin::waiting::reject(&w.uid, "rejected by a plugin that does not hold it");
                }
                Ok(PermitVerdict::Wait(60_000))
            }
            _ => Ok(PermitVerdict::Allow),
        }
    }

    fn pre_bind(_: &Pod, _: String) -> Result<Status, String> {
        Ok(Status { code: Code::Success, reason: String::new() })
    }

    fn post_bind(_: &Pod, _: String) {}
}

export!(Misbehave);

/// Recurses `depth` calls, then logs a string that is not UTF-8: lifting
/// it fails in the host, an error carrying wasmtime's backtrace of these
/// frames.
#[inline(never)]
fn deep_host_error_frame(depth: u32) -> u32 {
    if depth == 0 {
        // SAFETY: deliberately invalid, for the host to refuse.
        let bad = unsafe { String::from_utf8_unchecked(vec![0xff, 0xfe, b'\n']) };
        log(Level::Info, &bad);
        return 0;
    }
    core::hint::black_box(deep_host_error_frame(core::hint::black_box(depth - 1)) + 1)
}

/// About two seconds of busy work (no clock in the sandbox).
fn spin_counter() -> u64 {
    let mut x: u64 = 1;
    for _ in 0..2_000_000_000u64 {
        x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    x
}
