//! Every command the user docs show (the ```sh blocks of README.md,
//! plugins/README.md and docs/live-metrics.md), run in order, as written,
//! on the example cluster (a command ending in `&` runs in the background
//! until the end, as in a shell):
//! the docs are the one place the commands live, so they cannot drift from
//! what the tools do. Usage synopses with placeholders are ```text blocks.
//!
//! The test gives the commands what a user would have: `wasmsched` on the
//! PATH (`cargo run --release --` runs the same program), the repository's
//! folders, the user's own files the docs name (`pod.yaml`, `new-pods.yaml`,
//! ...) made from the fixtures, and "a cluster": the API server double,
//! which `kubectl` reaches through a kubeconfig (and `127.0.0.1:8001` in a
//! command is its address). Commands that need a real cluster, that serve
//! until stopped, or that are the test suite itself are skipped, each with
//! the reason and the test that covers it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The commands of the ```sh blocks of a Markdown file: continuation lines
/// joined, comment lines and trailing comments dropped.
fn commands(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in markdown.lines() {
        if let Some(tag) = line.strip_prefix("```") {
            in_sh = !in_sh && tag.trim() == "sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = strip_comment(line);
        if code.trim().is_empty() {
            continue;
        }
        match code.trim_end().strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(code.trim_end());
                out.push(pending.split_whitespace().collect::<Vec<_>>().join(" "));
                pending.clear();
            }
        }
    }
    out
}

/// A line without its `# comment` (a `#` after whitespace, outside quotes).
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => return &line[..i],
            _ => {}
        }
        prev = c;
    }
    line
}

/// Why a command is not run here, and what runs it instead.
fn skipped(cmd: &str) -> Option<&'static str> {
    const SKIPS: &[(&str, &str)] = &[
        ("scripts/test.sh", "the test suite itself"),
        (".ci/run", "the test suite itself, after fmt and clippy"),
        (
            "cargo build --release",
            "a release build; the tests run the binary cargo builds for them",
        ),
        (
            "kubectl apply -k",
            "needs a cluster with RBAC and Deployments; tests/deploy.rs renders the kustomizations with kubectl and checks the objects",
        ),
        (
            "wasmsched run",
            "serves until stopped; tests/daemon.rs runs it against the API server double (in the background, `... &`, it runs here)",
        ),
        ("wasmsched extender", "serves until stopped; tests/extender.rs runs it"),
        (
            "wasmsched apiserver",
            "serves until stopped; it is already serving here as the commands' cluster",
        ),
    ];
    if cmd.ends_with('&') && !cmd.ends_with("&&") {
        return None;
    }
    SKIPS.iter().find(|(p, _)| cmd.starts_with(p)).map(|(_, why)| *why)
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn every_command_of_the_docs_runs() {
    let repo = repo();
    let work = std::env::temp_dir().join(format!("wasmsched-docs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("bin")).unwrap();
    // The repository, as a user's checkout.
    for d in ["plugins", "crates", "deploy", "tests", "scripts", "wit", "docs"] {
        std::os::unix::fs::symlink(repo.join(d), work.join(d)).unwrap();
    }
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_wasmsched"), work.join("bin/wasmsched")).unwrap();
    // The user's own files the docs name.
    let fixture = repo.join("plugins/testdata/fixture");
    std::fs::copy(fixture.join("pod-web.yaml"), work.join("pod.yaml")).unwrap();
    std::fs::copy(fixture.join("nodes.yaml"), work.join("nodes.yaml")).unwrap();
    std::fs::write(
        work.join("new-pods.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: extra-0, namespace: default}\nspec:\n  schedulerName: wasm-scheduler\n  containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]\n",
    )
    .unwrap();
    std::fs::copy(repo.join("tests/data/binpack-config.yaml"), work.join("scheduler.yaml")).unwrap();

    // The cluster: the API server double with the example cluster.
    let port = free_port();
    let _server = Server(
        Command::new(env!("CARGO_BIN_EXE_wasmsched"))
            .args(["apiserver", "--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the API server double did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let kubeconfig = work.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: double, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n\
             contexts: [{{name: double, context: {{cluster: double, user: me}}}}]\ncurrent-context: double\nusers: [{{name: me, user: {{}}}}]\n"
        ),
    )
    .unwrap();
    let path = format!(
        "{}:{}:{}",
        work.join("bin").display(),
        std::env::var("HOME")
            .map(|h| format!("{h}/.local/bin"))
            .unwrap_or_default(),
        std::env::var("PATH").unwrap_or_default()
    );

    // What the commands create in the checkout (`plugin new` scaffolds
    // into plugins/local): gone before and after.
    let scaffold = repo.join("plugins/local/my-plugin");
    let _ = std::fs::remove_dir_all(&scaffold);
    let mut ran = Vec::new();
    let mut skips = Vec::new();
    // What runs in the background (an exporter, Prometheus, the scheduler):
    // stopped at the end.
    let mut background: Vec<Server> = Vec::new();
    let _ = std::fs::remove_dir_all("/tmp/wasmsched-walkthrough-tsdb");
    for doc in ["README.md", "plugins/README.md", "docs/live-metrics.md"] {
        let text = std::fs::read_to_string(repo.join(doc)).unwrap();
        for cmd in commands(&text) {
            if let Some(why) = skipped(&cmd) {
                skips.push(format!("{doc}: `{cmd}`: {why}"));
                continue;
            }
            let line = cmd
                .replace("cargo run --release --", "wasmsched")
                .replace("127.0.0.1:8001", &format!("127.0.0.1:{port}"))
                .replace("localhost:8001", &format!("127.0.0.1:{port}"));
            // A shell as the user's: in the checkout, with the cluster.
            let shell = |script: String| {
                let mut c = Command::new("bash");
                c.args(["-c", &script])
                    .current_dir(&work)
                    .env("PATH", &path)
                    .env("KUBECONFIG", &kubeconfig)
                    .env("WASMSCHED_LOG", "warn")
                    .stdin(Stdio::null());
                c
            };
            if let Some(cmd) = line.strip_suffix('&') {
                let log = std::fs::File::create(work.join(format!("background-{}.log", background.len()))).unwrap();
                let child = shell(format!("exec {cmd}"))
                    .stdout(Stdio::null())
                    .stderr(log)
                    .spawn()
                    .unwrap();
                background.push(Server(child));
                ran.push(format!("{doc}: `{cmd}` (in the background)"));
                continue;
            }
            let started = Instant::now();
            let out = shell(format!("set -o pipefail; {line}")).output().unwrap();
            if !out.status.success() {
                // What the background processes said, to see why.
                let logs: String = (0..background.len())
                    .map(|i| {
                        let text =
                            std::fs::read_to_string(work.join(format!("background-{i}.log"))).unwrap_or_default();
                        format!("--- background {i}:\n{text}\n")
                    })
                    .collect();
                panic!(
                    "{doc}: `{cmd}` failed ({}):\n{}{}\n{logs}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            ran.push(format!("{doc}: `{cmd}` ({:.1} s)", started.elapsed().as_secs_f64()));
        }
    }
    drop(background);
    let _ = std::fs::remove_dir_all("/tmp/wasmsched-walkthrough-tsdb");
    eprintln!("ran:\n  {}\nskipped:\n  {}", ran.join("\n  "), skips.join("\n  "));
    assert!(ran.len() >= 15, "{ran:?}");
    let _ = std::fs::remove_dir_all(&scaffold);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn commands_are_read_as_a_shell_reads_them() {
    let md = "text\n```sh\n# a comment\nwasmsched simulate \\\n    --explain a/b   # why\ncurl -d '{\"a\": \"#1\"}' x\n```\n```text\nwasmsched plugin new NAME\n```\n";
    assert_eq!(
        commands(md),
        ["wasmsched simulate --explain a/b", "curl -d '{\"a\": \"#1\"}' x"]
    );
}
