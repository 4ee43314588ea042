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
    type Built = HashMap<(String, Option<String>), PathBuf>;
    static BUILT: OnceLock<Mutex<Built>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap();
    let key = (dir.to_owned(), target.map(str::to_owned));
    if let Some(p) = built.get(&key) {
        return p.clone();
    }
    let repo = repo();
    let out_dir = std::env::temp_dir().join(format!("wasmsched-test-plugins-{}", std::process::id()));
    let out = out_dir.join(format!(
        "{}-{}.wasm",
        dir.replace('/', "_"),
        target.unwrap_or("default")
    ));
    let mut cmd = Command::new(repo.join("plugins/build.sh"));
    cmd.arg("rust").arg(repo.join("plugins").join(dir)).arg(&out);
    if let Some(t) = target {
        cmd.env("RUST_TARGET", t);
    }
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

pub fn label_gate() -> PathBuf {
    build("examples/label-gate/rust", None)
}

pub fn misbehave() -> PathBuf {
    build("testdata/misbehave", None)
}
