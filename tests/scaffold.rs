//! `wasmsched plugin new` in every language and kind: the scaffold builds
//! unchanged with `plugins/build.sh` and passes `plugin check` and `plugin
//! test`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn scaffolds_build_and_load_in_every_language() {
    let bin = env!("CARGO_BIN_EXE_wasmsched");
    let out = std::env::temp_dir().join(format!("wasmsched-scaffold-{}", std::process::id()));
    for lang in ["rust", "c", "zig", "go", "python", "js", "ts"] {
        for kind in ["score", "filter"] {
            let name = format!("t{}-{lang}-{kind}", std::process::id());
            run(Command::new(bin)
                .current_dir(repo())
                .args(["plugin", "new", &name, "--lang", lang, "--kind", kind]));
            let dir = repo().join("plugins/local").join(&name);
            let wasm = out.join(format!("{name}.wasm"));
            let built = Command::new(repo().join("plugins/build.sh"))
                .arg(lang)
                .arg(dir.join(lang))
                .arg(&wasm)
                .output()
                .unwrap();
            let _ = std::fs::remove_dir_all(&dir);
            assert!(
                built.status.success(),
                "{lang} {kind}: {}",
                String::from_utf8_lossy(&built.stderr)
            );
            let check = run(Command::new(bin).arg("plugin").arg("check").arg(&wasm));
            assert!(check.contains(&format!("plugin:   {name} 0.1.0")), "{check}");
            let fixture = repo().join("plugins/testdata/fixture");
            let test = run(Command::new(bin)
                .args(["plugin", "test", "--json"])
                .arg(&wasm)
                .arg("--pod")
                .arg(fixture.join("pod-web.yaml"))
                .arg("--nodes")
                .arg(fixture.join("nodes.yaml")));
            let v: serde_json::Value = serde_json::from_str(&test).unwrap();
            assert_eq!(v["errors"], serde_json::json!([]), "{lang} {kind}: {v}");
            let want_points = if kind == "score" {
                serde_json::json!(["Score"])
            } else {
                serde_json::json!(["Filter"])
            };
            assert_eq!(v["points"], want_points, "{lang} {kind}");
        }
    }
}
