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

/// A point method with a misspelt name (`scores` for `score`) leaves the
/// plugin implementing nothing: it is refused, loudly, where it is loaded
/// (`plugin check` fails naming the mistake), never run as a silent no-op.
#[test]
fn a_plugin_that_implements_no_point_is_refused() {
    let bin = env!("CARGO_BIN_EXE_wasmsched");
    let name = format!("t{}-misspelt", std::process::id());
    let dir = std::env::temp_dir().join(format!("wasmsched-scaffold-misspelt-{}", std::process::id()));
    run(Command::new(bin)
        .current_dir(repo())
        .args(["plugin", "new", &name, "--lang", "python", "--kind", "score", "--dir"])
        .arg(&dir));
    let src = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "py"))
        .expect("the scaffold's Python file");
    let text = std::fs::read_to_string(&src).unwrap();
    assert!(text.contains("def score("), "{text}");
    std::fs::write(&src, text.replace("def score(", "def scores(")).unwrap();
    let wasm = dir.join("misspelt.wasm");
    let built = Command::new(repo().join("plugins/build.sh"))
        .arg("python")
        .arg(&dir)
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let check = Command::new(bin)
        .arg("plugin")
        .arg("check")
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(!check.status.success());
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(
        err.contains(&format!("plugin {name} implements no extension point")),
        "{err}"
    );
    assert!(!err.contains("stack backtrace"), "{err}");
}
