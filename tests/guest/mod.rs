//! Builds the plugins of `plugins/` from source with `plugins/build.sh` (the
//! real guest toolchain), once per test process.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The component built from `plugins/<dir>` (for Rust, with `target`:
/// `None` for the default wasm32-unknown-unknown).
pub fn build(dir: &str, target: Option<&str>) -> PathBuf {
    build_with(dir, target, &[])
}

/// [`build`] with `env` set for the compiler (a crate's `option_env!`):
/// another component from the same source.
pub fn build_with(dir: &str, target: Option<&str>, env: &[(&str, &str)]) -> PathBuf {
    type Built = HashMap<(String, Option<String>), PathBuf>;
    static BUILT: OnceLock<Mutex<Built>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap();
    let mut tag: String = env.iter().map(|(k, v)| format!("-{k}={v}")).collect();
    // A long or odd value (a test's hostile name) names its file by a hash.
    if tag.len() > 64 || !tag.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_=.".contains(&b)) {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        tag.hash(&mut h);
        tag = format!("-{:016x}", h.finish());
    }
    let key = (format!("{dir}{tag}"), target.map(str::to_owned));
    if let Some(p) = built.get(&key) {
        return p.clone();
    }
    let repo = repo();
    let out_dir = std::env::temp_dir().join(format!("wasmsched-test-plugins-{}", std::process::id()));
    let out = out_dir.join(format!(
        "{}-{}.wasm",
        key.0.replace(['/', '='], "_"),
        target.unwrap_or("default")
    ));
    let mut cmd = Command::new(repo.join("plugins/build.sh"));
    cmd.arg("rust").arg(repo.join("plugins").join(dir)).arg(&out);
    if let Some(t) = target {
        cmd.env("RUST_TARGET", t);
    }
    cmd.envs(env.iter().copied());
    let out_put = cmd.output().expect("run plugins/build.sh");
    assert!(
        out_put.status.success(),
        "plugins/build.sh rust {dir} failed: {}",
        String::from_utf8_lossy(&out_put.stderr)
    );
    built.insert(key, out.clone());
    out
}

pub fn node_price() -> PathBuf {
    build("examples/node-price/rust", None)
}

/// `zone-gate` 1.0.0 (accepts every node) and 2.0.0 (rejects the nodes
/// of `zone`).
pub fn zone_gate(reject: Option<&str>) -> PathBuf {
    match reject {
        None => build("testdata/zone-gate", None),
        Some(z) => build_with("testdata/zone-gate", None, &[("ZONE_GATE_REJECT", z)]),
    }
}

/// `zone-gate` 3.0.0-hostile: its filter calls trap, loop and flood the
/// log in turn.
pub fn zone_gate_hostile() -> PathBuf {
    build_with("testdata/zone-gate", None, &[("ZONE_GATE_HOSTILE", "1")])
}

pub fn label_gate() -> PathBuf {
    build("examples/label-gate/rust", None)
}

pub fn misbehave() -> PathBuf {
    build("testdata/misbehave", None)
}

/// Assembles WebAssembly text with wasm-tools into a file of a new
/// directory tagged `tag`.
pub fn assemble(tag: &str, text: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("wasmsched-{tag}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{tag}.wat"));
    let out = dir.join(format!("{tag}.wasm"));
    std::fs::write(&src, text).unwrap();
    let st = Command::new("wasm-tools")
        .arg("parse")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success(), "{tag}: wasm-tools parse");
    out
}

/// The misbehave component, printed as text by wasm-tools, edited by
/// `edit`, and assembled again: a real toolchain's component with one
/// hostile change.
pub fn hostile_component(tag: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let printed = Command::new("wasm-tools")
        .arg("print")
        .arg(misbehave())
        .output()
        .unwrap();
    assert!(printed.status.success());
    let text = String::from_utf8(printed.stdout).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text, "{tag}: the edit changed nothing");
    assemble(tag, &edited)
}

/// The misbehave component with one more function of `additions`
/// additions: slow to compile, fine to run.
pub fn slow_compiling(additions: usize) -> PathBuf {
    hostile_component("slow-compile", |t| {
        let body: String = (0..additions).map(|_| "local.get 0 i32.add ").collect();
        let func = format!("(func $slow (param i32) (result i32) local.get 0 {body})\n");
        // After the module's last function, so no index moves.
        let at = t.find("    (data (;0;)").unwrap();
        format!("{}{func}{}", &t[..at], &t[at..])
    })
}

pub fn label_spread() -> PathBuf {
    build("examples/label-spread/rust", None)
}

/// A component built against contract 0.1 (kept as built then, never
/// rebuilt): the host must keep loading it.
pub fn label_gate_v0_1() -> PathBuf {
    repo().join("plugins/testdata/contract-0.1/label-gate.wasm")
}

/// The same plugin built against contract 0.2, kept as built then.
pub fn label_gate_v0_2() -> PathBuf {
    repo().join("plugins/testdata/contract-0.2/label-gate.wasm")
}

/// label-gate and fastest-node built against contract 0.3, kept as built
/// then (0.3 declares no metric sources).
pub fn v0_3(name: &str) -> PathBuf {
    repo().join(format!("plugins/testdata/contract-0.3/{name}.wasm"))
}

/// label-gate and node-price built against contract 0.4, kept as built
/// then (their scores cross as a list, not as 0.5's `scores`).
pub fn v0_4(name: &str) -> PathBuf {
    repo().join(format!("plugins/testdata/contract-0.4/{name}.wasm"))
}

/// label-gate and node-price built against contract 0.5, kept as built
/// then (no devices).
pub fn v0_5(name: &str) -> PathBuf {
    repo().join(format!("plugins/testdata/contract-0.5/{name}.wasm"))
}

/// label-gate and node-price built against contract 0.6, kept as built
/// then (no Reserve, Permit or state).
pub fn v0_6(name: &str) -> PathBuf {
    repo().join(format!("plugins/testdata/contract-0.6/{name}.wasm"))
}

/// label-spread built against contract 0.2 (it declares its events).
pub fn label_spread_v0_2() -> PathBuf {
    repo().join("plugins/testdata/contract-0.2/label-spread.wasm")
}

/// A new directory (tagged `tag`) holding the committed prebuilt
/// components of `plugins` (`plugins/prebuilt/<name>.wasm`).
pub fn prebuilt_dir(tag: &str, plugins: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wasmsched-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for p in plugins {
        std::fs::copy(
            repo().join(format!("plugins/prebuilt/{p}.wasm")),
            dir.join(format!("{p}.wasm")),
        )
        .unwrap();
    }
    dir
}
