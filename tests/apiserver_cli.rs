//! `wasmsched apiserver` as a user runs it, checked with the real `kubectl`
//! (installed by `scripts/install-test-tools.sh`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

struct Server {
    child: Child,
    url: String,
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(["apiserver", "--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start wasmsched apiserver");
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("serving the Kubernetes API on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    Server {
        child,
        url,
        _stdout: stdout,
    }
}

fn kubectl(server: &Server, args: &[&str]) -> (bool, String, String) {
    let cache = std::env::temp_dir().join(format!("wasmsched-kubectl-cache-{}", std::process::id()));
    let out = Command::new("kubectl")
        .arg("--server")
        .arg(&server.url)
        .arg("--cache-dir")
        .arg(&cache)
        .args(args)
        .env("KUBECONFIG", "/dev/null")
        .output()
        .expect("kubectl is installed (scripts/install-test-tools.sh)");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn kubectl_gets_nodes_and_pods_of_the_example_cluster() {
    let s = start(&[]);
    let (ok, out, err) = kubectl(&s, &["get", "nodes,pods", "-A"]);
    assert!(ok, "kubectl failed: {err}");
    assert!(out.contains("node/gpu-a-1"), "{out}");
    assert!(
        out.contains("Ready,SchedulingDisabled"),
        "the cordoned node shows: {out}"
    );
    assert!(out.contains("pod/api-1"), "{out}");
    let (ok, out, _) = kubectl(
        &s,
        &["get", "pods", "-A", "--field-selector", "spec.nodeName=", "-o", "name"],
    );
    assert!(ok);
    assert!(
        out.lines().count() > 5 && out.lines().all(|l| l.starts_with("pod/")),
        "{out}"
    );
}

#[test]
fn kubectl_creates_changes_and_deletes() {
    let dir = std::env::temp_dir().join(format!("wasmsched-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cluster = dir.join("cluster.yaml");
    std::fs::write(&cluster, "apiVersion: v1\nkind: Node\nmetadata: {name: only}\n").unwrap();
    let pod = dir.join("pod.yaml");
    std::fs::write(
        &pod,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: hello}\nspec: {schedulerName: wasm-scheduler, containers: [{name: c, image: nginx}]}\n",
    )
    .unwrap();
    let s = start(&["--cluster", cluster.to_str().unwrap()]);
    // No OpenAPI document is served, so client-side validation is off.
    let (ok, _, err) = kubectl(&s, &["create", "--validate=false", "-f", pod.to_str().unwrap()]);
    assert!(ok, "{err}");
    let (ok, out, _) = kubectl(
        &s,
        &[
            "get",
            "pod",
            "hello",
            "-o",
            "jsonpath={.spec.schedulerName} {.status.phase}",
        ],
    );
    assert!(ok);
    assert_eq!(out, "wasm-scheduler Pending");
    let (ok, _, err) = kubectl(&s, &["cordon", "only"]);
    assert!(ok, "{err}");
    let (_, out, _) = kubectl(&s, &["get", "node", "only"]);
    assert!(out.contains("SchedulingDisabled"), "{out}");
    let (ok, _, err) = kubectl(&s, &["label", "pod", "hello", "tier=web"]);
    assert!(ok, "{err}");
    let (_, out, _) = kubectl(&s, &["get", "pods", "-l", "tier=web", "-o", "name"]);
    assert_eq!(out.trim(), "pod/hello");
    let (ok, _, err) = kubectl(&s, &["delete", "pod", "hello", "--grace-period=0"]);
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl(&s, &["get", "pod", "hello"]);
    assert!(!ok);
    assert!(err.contains("pods \"hello\" not found"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}
