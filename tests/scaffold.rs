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
        for kind in ["score", "filter", "permit"] {
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
            match kind {
                "score" => assert_eq!(v["points"], serde_json::json!(["Score"]), "{lang} {kind}"),
                "filter" => assert_eq!(v["points"], serde_json::json!(["Filter"]), "{lang} {kind}"),
                _ => {
                    let points = v["points"].as_array().unwrap();
                    for p in ["Reserve", "Permit"] {
                        assert!(points.contains(&serde_json::json!(p)), "{lang} {kind}: {v}");
                    }
                    // The pod of the fixture is no gang's: Reserve, then Permit allows.
                    let steps: Vec<&str> = v["binding"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s["point"].as_str().unwrap())
                        .collect();
                    assert!(
                        steps.contains(&"Reserve") && steps.contains(&"Permit"),
                        "{lang} {kind}: {v}"
                    );
                }
            }
        }
    }
}

/// A scaffold of `lang` and `kind` in a fresh directory, with `from`
/// replaced by `to` in its source (which must contain it): the plugin's
/// directory, its source file, and the 1-based line where `to` now is.
fn scaffold_with(lang: &str, kind: &str, tag: &str, from: &str, to: &str) -> (PathBuf, PathBuf, usize) {
    let bin = env!("CARGO_BIN_EXE_wasmsched");
    let name = format!("t{}-{tag}", std::process::id());
    let dir = std::env::temp_dir().join(format!("wasmsched-mistake-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    run(Command::new(bin)
        .current_dir(repo())
        .args(["plugin", "new", &name, "--lang", lang, "--kind", kind, "--dir"])
        .arg(&dir));
    let ext = match lang {
        "python" => "py",
        "js" => "js",
        "ts" => "ts",
        "go" => "go",
        "c" => "c",
        "zig" => "zig",
        other => panic!("no source extension for {other}"),
    };
    let src = dir.join(format!("main.{ext}"));
    let text = std::fs::read_to_string(&src).unwrap();
    assert!(text.contains(from), "{lang} {kind} scaffold without {from:?}: {text}");
    let text = text.replacen(from, to, 1);
    let line = text[..text.find(to).unwrap()].matches('\n').count() + 1;
    std::fs::write(&src, text).unwrap();
    (dir, src, line)
}

/// `plugins/build.sh LANG DIR DIR/out.wasm`: the exit status, the first line
/// of its errors, and all of them.
fn build_fails(lang: &str, dir: &Path) -> (String, String) {
    let o = Command::new(repo().join("plugins/build.sh"))
        .arg(lang)
        .arg(dir)
        .arg(dir.join("out.wasm"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "{lang}: the build should fail:\n{err}");
    assert!(
        !dir.join("out.wasm").exists(),
        "{lang}: a failed build wrote a component"
    );
    let first = err
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .to_string();
    (first, err)
}

/// A misspelt point (`scores` for `score`) would leave a Python plugin
/// without it, running as a silent no-op: the SDK checks the class when it
/// is defined, at build time, and the build fails, first naming the line of
/// the mistake and the point it was probably meant to be.
#[test]
fn a_misspelt_python_point_fails_the_build() {
    let (dir, src, line) = scaffold_with("python", "score", "py", "def score(", "def scores(");
    let (first, err) = build_fails("python", &dir);
    assert_eq!(
        first,
        format!(
            "{}:{line}: Scaffold.scores is not an extension point of wasmsched.Plugin; did you mean score? (name a helper _scores)",
            src.display()
        ),
        "{err}"
    );
    assert!(!err.contains("Stack backtrace"), "{err}");
    assert!(!err.contains("Traceback"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// In JavaScript, `definePlugin` rejects a key it does not know when the
/// module is evaluated, at build time, naming the line of the key.
#[test]
fn an_unknown_javascript_key_fails_the_build() {
    let (dir, src, line) = scaffold_with("js", "score", "js", "  score(pod, nodes) {", "  scores(pod, nodes) {");
    let (first, err) = build_fails("js", &dir);
    assert_eq!(
        first,
        format!(
            "{}:{line}:3: definePlugin: unknown key \"scores\"; did you mean \"score\"?",
            src.display()
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A JavaScript syntax error is reported at its line of the plugin's file,
/// not in the bundle componentize makes of it.
#[test]
fn a_javascript_syntax_error_names_the_plugins_line() {
    let (dir, src, line) = scaffold_with(
        "js",
        "filter",
        "jssyntax",
        "  filter(pod, nodes) {",
        "  filter(pod, nodes {",
    );
    let (first, err) = build_fails("js", &dir);
    assert!(first.starts_with(&format!("{}:{line}:", src.display())), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// In TypeScript, `wasmsched.d.ts` takes only the keys of a plugin: tsc
/// rejects a misspelt point in the object literal (and any type error) at
/// its line of `main.ts`.
#[test]
fn typescript_mistakes_name_the_line_of_main_ts() {
    let (dir, src, line) = scaffold_with("ts", "score", "tskey", "  score(_pod: Pod", "  scores(_pod: Pod");
    let (first, err) = build_fails("ts", &dir);
    assert!(
        first.starts_with(&format!("{}:{line}:3: error TS", src.display())),
        "{err}"
    );
    assert!(
        first.contains("'scores' does not exist in type 'PluginDefinition'"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);

    let (dir, src, line) = scaffold_with("ts", "filter", "tstype", "let label = ", "let label: number = ");
    let (first, err) = build_fails("ts", &dir);
    assert!(
        first.starts_with(&format!("{}:{line}:", src.display())) && first.contains("error TS2322"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A misspelt Go point (`FilterNodes`) is no Go error: the SDK's check of
/// the source fails the build, naming the method's line.
#[test]
fn a_misspelt_go_point_fails_the_build() {
    let (dir, src, line) = scaffold_with("go", "filter", "go", ") Filter(", ") FilterNodes(");
    let (first, err) = build_fails("go", &dir);
    assert_eq!(
        first,
        format!(
            "{}:{line}:18: plugin.FilterNodes is not an extension point of wasmsched; did you mean Filter? (a helper: unexport it, filterNodes)",
            src.display()
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Go point with another signature than the point's is not the point to
/// Go: the SDK finds it when the plugin registers, and the host refuses the
/// plugin where it is loaded, after the SDK's log line.
#[test]
fn a_go_point_with_the_wrong_signature_is_refused_at_load() {
    let (dir, _, _) = scaffold_with(
        "go",
        "score",
        "gosig",
        "nodes wasmsched.Nodes) ([]int64, error) {",
        "nodes wasmsched.Nodes) ([]int32, error) {",
    );
    let src = dir.join("main.go");
    let text = std::fs::read_to_string(&src).unwrap();
    std::fs::write(
        &src,
        text.replace("make([]int64, len(values))", "make([]int32, len(values))")
            .replace("scores[i] = int64(", "scores[i] = int32("),
    )
    .unwrap();
    let wasm = dir.join("out.wasm");
    run(Command::new(repo().join("plugins/build.sh"))
        .arg("go")
        .arg(&dir)
        .arg(&wasm));
    let check = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .arg("plugin")
        .arg("check")
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(!check.status.success());
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(
        err.contains("plugin.Score has the wrong signature for wasmsched: want Score(wasmsched.Pod, wasmsched.Nodes) ([]int64, error)"),
        "{err}"
    );
    assert!(err.contains("implements no extension point"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// C: a point declared in WS_PLUGIN whose hook is not defined (misspelt)
/// does not link, and the build says so at the line of WS_PLUGIN; a hook
/// defined for a point WS_PLUGIN does not declare is refused at load.
#[test]
fn c_points_and_hooks_must_agree() {
    let (dir, src, _) = scaffold_with("c", "score", "c", "const char *ws_score(", "const char *ws_scores(");
    let (first, err) = build_fails("c", &dir);
    let at = std::fs::read_to_string(&src)
        .unwrap()
        .lines()
        .position(|l| l.starts_with("WS_PLUGIN("))
        .unwrap()
        + 1;
    assert_eq!(
        first,
        format!(
            "{}:{at}: WS_PLUGIN declares WS_SCORE but ws_score is not defined (misspelt? not hooks: ws_scores)",
            src.display()
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);

    let (dir, _, _) = scaffold_with(
        "c",
        "score",
        "chook",
        "WS_PLUGIN(",
        "const char *ws_normalize_score(ws_pod pod, int64_t *scores, size_t n) { return NULL; }\nWS_PLUGIN(",
    );
    let wasm = dir.join("out.wasm");
    run(Command::new(repo().join("plugins/build.sh"))
        .arg("c")
        .arg(&dir)
        .arg(&wasm));
    let check = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .arg("plugin")
        .arg("check")
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(!check.status.success());
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(
        err.contains("ws_normalize_score is defined but WS_PLUGIN does not declare WS_NORMALIZE_SCORE"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Zig: the SDK checks the hooks at compile time; a misspelt one fails the
/// build at its line.
#[test]
fn a_misspelt_zig_hook_fails_the_build() {
    let (dir, src, line) = scaffold_with("zig", "score", "zig", "pub fn score(", "pub fn Score(");
    let (first, err) = build_fails("zig", &dir);
    assert_eq!(
        first,
        format!(
            "{}:{line}: error: pub fn Score is not a hook of wasmsched; did you mean score?",
            src.display()
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The component names its language in its producers section.
#[test]
fn components_name_their_language() {
    let bin = env!("CARGO_BIN_EXE_wasmsched");
    for (lang, want) in [("c", "C"), ("ts", "TypeScript")] {
        let dir = std::env::temp_dir().join(format!("wasmsched-language-{}-{lang}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        run(Command::new(bin)
            .current_dir(repo())
            .args(["plugin", "new", "lang", "--lang", lang, "--dir"])
            .arg(&dir));
        let wasm = dir.join("out.wasm");
        run(Command::new(repo().join("plugins/build.sh"))
            .arg(lang)
            .arg(&dir)
            .arg(&wasm));
        let tools = std::env::var("HOME")
            .map(|h| format!("{h}/.local/bin:"))
            .unwrap_or_default();
        let shown = run(Command::new("wasm-tools")
            .env("PATH", format!("{tools}{}", std::env::var("PATH").unwrap_or_default()))
            .args(["metadata", "show", "--json"])
            .arg(&wasm));
        let v: serde_json::Value = serde_json::from_str(&shown).unwrap();
        let producers = &v["component"]["metadata"]["producers"];
        let languages = producers
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[0] == "language")
            .map(|p| p[1].clone())
            .unwrap_or_default();
        assert!(languages.get(want).is_some(), "{lang}: {producers}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Without an output path, `plugins/build.sh` names the component after the
/// name the plugin declares (not after its folder), and prints it: two
/// plugins kept side by side in one folder do not overwrite each other.
#[test]
fn default_output_is_named_after_the_plugin() {
    let bin = env!("CARGO_BIN_EXE_wasmsched");
    let folder = std::env::temp_dir().join(format!("wasmsched-side-by-side-{}", std::process::id()));
    let mut outs = Vec::new();
    for (sub, lang) in [("first", "c"), ("second", "python")] {
        let name = format!("t{}-{sub}", std::process::id());
        run(Command::new(bin)
            .current_dir(repo())
            .args(["plugin", "new", &name, "--lang", lang, "--dir"])
            .arg(folder.join(sub)));
        let printed = run(Command::new(repo().join("plugins/build.sh"))
            .arg(lang)
            .arg(folder.join(sub)));
        let out = repo().join("plugins/out").join(format!("{name}.wasm"));
        assert_eq!(printed.trim(), out.to_str().unwrap(), "{lang}");
        let check = run(Command::new(bin).arg("plugin").arg("check").arg(&out));
        assert!(check.contains(&format!("plugin:   {name} 0.1.0")), "{check}");
        outs.push(out);
    }
    for o in outs {
        let _ = std::fs::remove_file(o);
    }
    let _ = std::fs::remove_dir_all(&folder);
}
