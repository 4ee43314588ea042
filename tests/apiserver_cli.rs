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
        // A kubeconfig that does not exist: kubectl reads nothing but the
        // flags, whatever the machine's own configuration (or /dev/null) holds.
        .env("KUBECONFIG", cache.join("no-kubeconfig"))
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
    let (ok, _, err) = kubectl(&s, &["create", "-f", pod.to_str().unwrap()]);
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

/// A scratch directory for manifests, removed when dropped.
struct Dir(std::path::PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("wasmsched-kubectl-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let f = self.0.join(name);
        std::fs::write(&f, text).unwrap();
        f.to_str().unwrap().to_owned()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const WEB: &str = "apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - {name: app, image: nginx:1, env: [{name: A, value: '1'}]}
  - {name: sidecar, image: busybox:1}
";

/// kubectl's default validation reads the OpenAPI v3 documents: it finds
/// `fieldValidation` on the PATCH path of the kind and leaves validation to
/// the server (`fieldValidation=Strict`), and `apply` computes its strategic
/// merge patch from the schemas' merge keys. No OpenAPI v2 is asked for.
#[test]
fn kubectl_creates_and_applies_with_default_validation() {
    let dir = Dir::new("apply");
    let s = start(&["--empty"]);
    let pod = dir.file(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: hello}\nspec: {containers: [{name: c, image: nginx}]}\n",
    );
    let (ok, out, err) = kubectl(&s, &["create", "-f", &pod, "-v=6"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "pod/hello created");
    assert!(err.contains("/openapi/v3/api/v1?hash="), "{err}");
    assert!(err.contains("fieldValidation=Strict"), "{err}");
    assert!(!err.contains("/openapi/v2"), "{err}");

    // apply creates, then changes an existing object with a strategic merge patch
    let web = dir.file("web.yaml", WEB);
    let (ok, out, err) = kubectl(&s, &["apply", "-f", &web]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "pod/web created");
    let changed = WEB
        .replace("nginx:1", "nginx:2")
        .replace("{app: web}", "{app: web, tier: front}");
    let web = dir.file("web.yaml", &changed);
    let (ok, out, err) = kubectl(&s, &["apply", "-f", &web, "-v=8"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "pod/web configured");
    assert!(err.contains("application/strategic-merge-patch+json"), "{err}");
    // the merge key of containers (name) comes from the v3 schema
    assert!(err.contains("$setElementOrder/containers"), "{err}");
    assert!(!err.contains("/openapi/v2"), "{err}");
    assert!(!err.contains("does not exist"), "{err}");
    let (ok, out, _) = kubectl(
        &s,
        &[
            "get",
            "pod",
            "web",
            "-o",
            "jsonpath={.metadata.labels.tier} {.spec.containers[*].image} {.spec.containers[0].env[0].value}",
        ],
    );
    assert!(ok);
    assert_eq!(out, "front nginx:2 busybox:1 1");
    let (ok, out, err) = kubectl(&s, &["apply", "-f", &web]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "pod/web unchanged");
}

#[test]
fn kubectl_explains_from_the_served_schemas() {
    let s = start(&["--empty"]);
    let (ok, out, err) = kubectl(&s, &["explain", "pod.spec"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("KIND:       Pod\nVERSION:    v1\n\nFIELD: spec <PodSpec>"),
        "{out}"
    );
    assert!(out.contains("PodSpec is a description of a pod."), "{out}");
    assert!(out.contains("  containers\t<[]Container> -required-\n"), "{out}");
    assert!(out.contains("  schedulerName\t<string>\n"), "{out}");
    let (ok, out, err) = kubectl(&s, &["explain", "leases.spec.holderIdentity"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("GROUP:      coordination.k8s.io\nKIND:       Lease\n"),
        "{out}"
    );
    assert!(out.contains("FIELD: holderIdentity <string>"), "{out}");
    let (ok, _, err) = kubectl(&s, &["explain", "pod.spec.nope"]);
    assert!(!ok);
    assert!(err.contains("field \"nope\" does not exist"), "{err}");
}

/// kube-apiserver's field validation: `Strict` (what kubectl sends by
/// default) refuses unknown fields with the strict decoder's message,
/// `Warn` accepts the object and returns a `Warning`, `Ignore` is silent.
#[test]
fn kubectl_strict_validation_refuses_unknown_fields() {
    let dir = Dir::new("strict");
    let s = start(&["--empty"]);
    let typo = "apiVersion: v1\nkind: Pod\nmetadata: {name: typo}\nspec: {containers: [{name: c, image: nginx, imagePullPolice: Always}]}\n";
    let bad = dir.file("bad.yaml", typo);
    let (ok, _, err) = kubectl(&s, &["create", "-f", &bad]);
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "Error from server (BadRequest): error when creating \"{bad}\": Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.containers[0].imagePullPolice\""
        )),
        "{err}"
    );
    let (ok, _, _) = kubectl(&s, &["get", "pod", "typo"]);
    assert!(!ok, "nothing was created");

    let (ok, out, err) = kubectl(&s, &["create", "--validate=warn", "-f", &bad]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "pod/typo created");
    assert!(
        err.contains("Warning: unknown field \"spec.containers[0].imagePullPolice\""),
        "{err}"
    );

    // a patch is checked on the patched object: 422 naming the patch
    let bad = dir.file("bad.yaml", &typo.replace("image: nginx,", "image: nginx:2,"));
    let (ok, _, err) = kubectl(&s, &["apply", "-f", &bad]);
    assert!(!ok);
    assert!(err.contains("The request is invalid: patch: Invalid value: \"map[metadata:map[annotations:map[kubectl.kubernetes.io/last-applied-configuration:"), "{err}");
    assert!(
        err.ends_with(": strict decoding error: unknown field \"spec.containers[0].imagePullPolice\"\n"),
        "{err}"
    );
    let (_, out, _) = kubectl(
        &s,
        &["get", "pod", "typo", "-o", "jsonpath={.spec.containers[0].image}"],
    );
    assert_eq!(out, "nginx");
    let (ok, _, err) = kubectl(&s, &["apply", "--validate=false", "-f", &bad]);
    assert!(ok, "{err}");
    assert!(!err.contains("unknown field"), "{err}");
    let (_, out, _) = kubectl(
        &s,
        &["get", "pod", "typo", "-o", "jsonpath={.spec.containers[0].image}"],
    );
    assert_eq!(out, "nginx:2");
}

const RBAC: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: metrics-reader}
rules:
- nonResourceURLs: [/metrics]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: prom-metrics}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: metrics-reader}
subjects:
- {kind: ServiceAccount, name: prom, namespace: monitoring}
";

/// What a component's secure port asks of kube-apiserver, set up with
/// kubectl: `create serviceaccount` and `create token` (protobuf bodies, as
/// kubectl's typed clients send them; the `token` subresource, with kube's
/// errors), `apply` of RBAC manifests, then a TokenReview and a
/// SubjectAccessReview created from files (`--validate=false`: kubectl
/// validates create-only kinds with OpenAPI v2, which the double does not
/// serve).
#[test]
fn kubectl_creates_tokens_and_applies_rbac() {
    let dir = Dir::new("auth");
    let s = start(&["--empty"]);
    let (ok, out, err) = kubectl(&s, &["create", "serviceaccount", "prom", "-n", "monitoring"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "serviceaccount/prom created");
    let (ok, token, err) = kubectl(&s, &["create", "token", "prom", "-n", "monitoring"]);
    assert!(ok, "{err}");
    let token = token.trim().to_owned();
    assert!(token.len() >= 32 && !token.contains(char::is_whitespace), "{token}");
    let (ok, _, err) = kubectl(&s, &["create", "token", "ghost", "-n", "monitoring"]);
    assert!(!ok);
    assert!(err.contains("serviceaccounts \"ghost\" not found"), "{err}");
    let (ok, _, err) = kubectl(&s, &["create", "token", "prom", "-n", "monitoring", "--duration", "1m"]);
    assert!(!ok);
    assert!(
        err.contains("spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"),
        "{err}"
    );

    let rbac = dir.file("rbac.yaml", RBAC);
    let (ok, out, err) = kubectl(&s, &["apply", "-f", &rbac]);
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        "clusterrole.rbac.authorization.k8s.io/metrics-reader created\nclusterrolebinding.rbac.authorization.k8s.io/prom-metrics created"
    );
    let (ok, out, err) = kubectl(&s, &["apply", "-f", &rbac]);
    assert!(ok, "{err}");
    assert!(
        out.contains("clusterrolebinding.rbac.authorization.k8s.io/prom-metrics unchanged"),
        "{out}"
    );

    let review = dir.file(
        "review.yaml",
        &format!("apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec: {{token: {token}}}\n"),
    );
    let (ok, out, err) = kubectl(
        &s,
        &[
            "create",
            "-f",
            &review,
            "--validate=false",
            "-o",
            "jsonpath={.status.authenticated} {.status.user.username}",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "true system:serviceaccount:monitoring:prom");
    let sar = dir.file(
        "sar.yaml",
        "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  user: system:serviceaccount:monitoring:prom\n  nonResourceAttributes: {path: /metrics, verb: get}\n",
    );
    let (ok, out, err) = kubectl(
        &s,
        &[
            "create",
            "-f",
            &sar,
            "--validate=false",
            "-o",
            "jsonpath={.status.allowed} {.status.reason}",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "true RBAC: allowed by ClusterRoleBinding \"prom-metrics\" of ClusterRole \"metrics-reader\" to ServiceAccount \"prom/monitoring\""
    );

    // kubectl's imperative RBAC commands send protobuf: read as the
    // objects they encode, and the review follows them.
    for args in [
        &[
            "create",
            "clusterrole",
            "viewer:ui",
            "--verb=get",
            "--non-resource-url=/ui,/ui/*",
        ][..],
        &[
            "create",
            "clusterrolebinding",
            "alice-views",
            "--clusterrole=viewer:ui",
            "--user=alice",
            "--group=devs",
        ],
        &[
            "create",
            "role",
            "pod-reader",
            "-n",
            "shop",
            "--verb=get,list",
            "--resource=pods",
            "--resource-name=web-1",
        ],
        &[
            "create",
            "rolebinding",
            "bob-reads",
            "-n",
            "shop",
            "--role=pod-reader",
            "--serviceaccount=shop:bob",
        ],
    ] {
        let (ok, _, err) = kubectl(&s, args);
        assert!(ok, "kubectl {args:?}: {err}");
    }
    let (ok, out, err) = kubectl(
        &s,
        &[
            "get",
            "clusterrole/viewer:ui",
            "clusterrolebinding/alice-views",
            "-o",
            "jsonpath={.items[0].rules[0].nonResourceURLs} {.items[0].rules[0].verbs} {.items[1].roleRef.name} {.items[1].subjects[*].kind}",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out, r#"["/ui","/ui/*"] ["get"] viewer:ui User Group"#);
    let (ok, out, err) = kubectl(
        &s,
        &[
            "get",
            "role/pod-reader",
            "rolebinding/bob-reads",
            "-n",
            "shop",
            "-o",
            "jsonpath={.items[0].rules[0].resourceNames} {.items[1].subjects[0].kind} {.items[1].subjects[0].namespace}",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out, r#"["web-1"] ServiceAccount shop"#);
    let alice = dir.file(
        "alice.yaml",
        "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  user: alice\n  nonResourceAttributes: {path: /ui/cluster, verb: get}\n",
    );
    let (ok, out, err) = kubectl(
        &s,
        &[
            "create",
            "-f",
            &alice,
            "--validate=false",
            "-o",
            "jsonpath={.status.allowed}",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "true");
}

/// `bench --e2e --master` on a cluster that is not the bench's own (the
/// double as a separate process, holding the example cluster): the bench
/// makes its nodes and pods beside what is there, measures, and leaves
/// the cluster as it found it. `--null` binds only to the bench's nodes.
#[test]
fn the_end_to_end_bench_runs_on_any_cluster_and_cleans_up() {
    let s = start(&[]);
    let state = || {
        let (ok, out, err) = kubectl(
            &s,
            &[
                "get",
                "nodes,pods,namespaces,leases,events,priorityclasses",
                "-A",
                "-o",
                "custom-columns=KIND:.kind,NS:.metadata.namespace,NAME:.metadata.name,NODE:.spec.nodeName",
            ],
        );
        assert!(ok, "kubectl failed: {err}");
        out
    };
    let before = state();
    for null in [false, true] {
        let mut args = vec![
            "bench", "--e2e", "--master", &s.url, "--nodes", "20", "--pods", "200", "--json",
        ];
        if null {
            args.push("--null");
        }
        let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
            .args(&args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(
            (v["bound"].as_u64(), v["events_after_stop"].as_u64()),
            (Some(200), Some(200)),
            "{text}"
        );
        if !null {
            assert_eq!(v["overcommitted_nodes"], 0, "{text}");
        }
        let ns = v["namespace"].as_str().unwrap();
        assert!(ns.starts_with("wasmsched-bench-"), "{text}");
        let removed = &v["removed"];
        assert_eq!(
            (removed["pods"].as_u64(), removed["nodes"].as_u64()),
            (Some(200), Some(20)),
            "{text}"
        );
        assert!(removed["events"].as_u64() >= Some(200), "{text}");
        assert_eq!(state(), before, "the cluster is as the bench found it");
    }
}

/// On a server where no controller makes a namespace's `default`
/// ServiceAccount, the bench's pods are refused for its absence: the bench
/// waits for it (here made by hand while it waits), then runs; where the
/// account is there at once it does not wait at all.
#[test]
fn the_end_to_end_bench_waits_for_the_service_account_only_when_refused() {
    let s = start(&["--empty", "--no-default-service-accounts"]);
    let mut bench = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args([
            "bench", "--e2e", "--master", &s.url, "--nodes", "20", "--pods", "20", "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let ns = loop {
        let (_, out, _) = kubectl(&s, &["get", "namespaces", "-o", "name"]);
        if let Some(ns) = out.lines().find_map(|l| l.strip_prefix("namespace/wasmsched-bench-")) {
            break format!("wasmsched-bench-{ns}");
        }
        assert!(std::time::Instant::now() < deadline, "the bench made no namespace");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (_, pods, _) = kubectl(&s, &["get", "pods", "-n", &ns, "-o", "name"]);
    assert!(pods.trim().is_empty(), "pods were admitted without an account: {pods}");
    assert!(
        bench.try_wait().unwrap().is_none(),
        "the bench gave up instead of waiting"
    );
    let (ok, _, err) = kubectl(&s, &["create", "serviceaccount", "default", "-n", &ns]);
    assert!(ok, "{err}");
    let out = bench.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(v["bound"].as_u64(), Some(20), "{text}");
}

/// The requests a real kube-apiserver v1.36.2 answered
/// (`tests/data/apiserver-answers`), replayed by their own script against
/// a fresh double: every pod, PriorityClass, binding, event, Dynamic
/// Resource Allocation, PodGroup and Workload request is answered the same
/// way (status, and the refusal's words), and each object created is
/// stored as the real server stored it (its defaults, the priority
/// admission computed, a PodGroup's finalizer and the fields its feature
/// gates drop).
#[test]
fn the_double_answers_as_a_real_api_server_answered() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/apiserver-answers");
    let server = start(&["--empty"]);
    let out = Command::new("python3")
        .arg(dir.join("replay.py"))
        .args([&server.url, "-v"])
        .output()
        .expect("python3 runs the replay");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("65/65"), "{said}");

    let read = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap()
    };
    let (requests, answers) = (read("requests.json"), read("answers.json"));
    let mut compared = 0;
    for (q, a) in requests.as_array().unwrap().iter().zip(answers.as_array().unwrap()) {
        let name = q["name"].as_str().unwrap();
        if a["status"] != 201 || a["stored"].is_null() {
            continue;
        }
        let path = format!(
            "{}/{}",
            q["path"].as_str().unwrap(),
            q["body"]["metadata"]["name"].as_str().unwrap()
        );
        let (_, body, _) = kubectl(&server, &["get", "--raw", &path]);
        let have: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let mut differences = Vec::new();
        stored_as(&a["stored"], &have, String::new(), &mut differences);
        // A node's status is its kubelet's; the real server's empty
        // `nodeInfo` strings are Go's zero values, not defaults.
        differences.retain(|d| !(name == "node" && (d.starts_with(".status") || d.starts_with(".spec"))));
        assert!(differences.is_empty(), "{name}: stored differently: {differences:#?}");
        compared += 1;
    }
    assert_eq!(compared, 26, "stored objects compared");
}

/// Where `have` differs from `want` in the fields `want` has (a field the
/// real server's answer leaves out, as timestamps, is not compared; one it
/// has as `null` may be left out, but an empty object, as a PodGroup's
/// `status`, must be there).
fn stored_as(want: &serde_json::Value, have: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match want {
        serde_json::Value::Object(m) if m.is_empty() && !have.is_object() => {
            out.push(format!("{at}: the real server stored {{}}, the double {have}"));
        }
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                stored_as(
                    v,
                    have.get(k).unwrap_or(&serde_json::Value::Null),
                    format!("{at}.{k}"),
                    out,
                );
            }
        }
        w if w == "TIME" || w == have => {}
        w => out.push(format!("{at}: the real server stored {w}, the double {have}")),
    }
}

/// PriorityClasses as a user makes them with kubectl (`create priorityclass`
/// sends protobuf), and a pod's priority computed from its class when
/// `kubectl apply` creates it; what admission refuses reaches kubectl in
/// kube-apiserver's words.
#[test]
fn kubectl_creates_priority_classes_that_pods_take_their_priority_from() {
    let dir = Dir::new("priority");
    let s = start(&["--empty"]);
    let (ok, out, err) = kubectl(
        &s,
        &[
            "create",
            "priorityclass",
            "batch",
            "--value=5",
            "--preemption-policy=Never",
            "--global-default",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "priorityclass.scheduling.k8s.io/batch created");
    let (ok, _, err) = kubectl(
        &s,
        &["create", "priorityclass", "other", "--value=6", "--global-default"],
    );
    assert!(!ok);
    assert!(
        err.contains("PriorityClass batch is already marked as default. Only one default can exist"),
        "{err}"
    );
    let (ok, out, err) = kubectl(&s, &["get", "priorityclasses", "-o", "name"]);
    assert!(ok, "{err}");
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        [
            "priorityclass.scheduling.k8s.io/batch",
            "priorityclass.scheduling.k8s.io/system-cluster-critical",
            "priorityclass.scheduling.k8s.io/system-node-critical"
        ]
    );
    let pod = dir.file(
        "pod.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: {containers: [{name: c, image: nginx}]}\n",
    );
    let (ok, _, err) = kubectl(&s, &["apply", "-f", &pod]);
    assert!(ok, "{err}");
    let (ok, out, err) = kubectl(
        &s,
        &[
            "get",
            "pod",
            "p",
            "-n",
            "default",
            "-o",
            "jsonpath={.spec.priorityClassName} {.spec.priority} {.spec.preemptionPolicy}",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "batch 5 Never");
    let gpu = dir.file(
        "gpu.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: g, namespace: default}\nspec: {containers: [{name: c, image: nginx, resources: {requests: {nvidia.com/gpu: 1}}}]}\n",
    );
    let (ok, _, err) = kubectl(&s, &["apply", "-f", &gpu]);
    assert!(!ok);
    assert!(
        err.contains(
            "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
        ),
        "{err}"
    );
}

/// Dynamic Resource Allocation's kinds with kubectl: applied, defaulted as
/// a real API server defaults them, explained from the served schemas, and
/// refused in its words.
#[test]
fn kubectl_applies_and_explains_device_classes_slices_and_claims() {
    let dir = Dir::new("dra");
    let s = start(&["--empty"]);
    let objects = dir.file(
        "dra.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec: {selectors: [{cel: {expression: 'device.driver == \"gpu.example.com\"'}}]}\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: n1-gpu}\nspec: {driver: gpu.example.com, nodeName: n1, pool: {name: n1, generation: 1, resourceSliceCount: 1}, devices: [{name: gpu-0, attributes: {model: {string: a100}}, capacity: {memory: {value: 80Gi}}}]}\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: one, namespace: ml}\nspec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}\n",
    );
    let (ok, out, err) = kubectl(&s, &["apply", "-f", &objects]);
    assert!(ok, "{err}");
    assert!(out.contains("resourceclaim.resource.k8s.io/one created"), "{out}");
    let (ok, out, err) = kubectl(
        &s,
        &[
            "get",
            "resourceclaim",
            "one",
            "-n",
            "ml",
            "-o",
            "jsonpath={.spec.devices.requests[0].exactly.allocationMode} {.spec.devices.requests[0].exactly.count}",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "ExactCount 1");
    let (ok, out, err) = kubectl(&s, &["explain", "resourceslices.spec.devices.attributes"]);
    assert!(ok, "{err}");
    assert!(out.contains("FIELD: attributes <map[string]DeviceAttribute>"), "{out}");
    let bad = dir.file(
        "bad.yaml",
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: both}\nspec: {driver: gpu.example.com, nodeName: n1, allNodes: true, pool: {name: n1, generation: 1, resourceSliceCount: 1}}\n",
    );
    let (ok, _, err) = kubectl(&s, &["apply", "-f", &bad]);
    assert!(!ok);
    assert!(
        err.contains("exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"),
        "{err}"
    );
}

/// PodGroups and Workloads (`scheduling.k8s.io/v1alpha2`) with kubectl:
/// applied, printed with kube-apiserver's columns, their status patched as
/// the scheduler patches it, refused in its words, and deleted once no pod
/// uses them (the podgroup-protection controller removes the finalizer
/// kubectl's `delete` waits for).
#[test]
fn kubectl_applies_prints_and_deletes_pod_groups() {
    let dir = Dir::new("podgroups");
    let s = start(&["--empty"]);
    let objects = dir.file(
        "groups.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n---\n\
         apiVersion: scheduling.k8s.io/v1alpha2\nkind: Workload\nmetadata: {name: job, namespace: ml}\nspec: {podGroupTemplates: [{name: workers, schedulingPolicy: {gang: {minCount: 2}}}]}\n---\n\
         apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: train, namespace: ml}\nspec: {podGroupTemplateRef: {workload: {workloadName: job, podGroupTemplateName: workers}}, schedulingPolicy: {gang: {minCount: 2}}}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: w0, namespace: ml}\nspec: {schedulingGroup: {podGroupName: train}, containers: [{name: c, image: app:1}]}\n",
    );
    let (ok, out, err) = kubectl(&s, &["apply", "-f", &objects]);
    assert!(ok, "{err}");
    assert!(out.contains("podgroup.scheduling.k8s.io/train created"), "{out}");
    let (ok, out, err) = kubectl(&s, &["get", "podgroups", "-n", "ml"]);
    assert!(ok, "{err}");
    let columns: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(columns[0], ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"], "{out}");
    assert_eq!(columns[1][..4], ["train", "Gang", "job", "Pending"], "{out}");
    let scheduled = r#"{"status":{"conditions":[{"type":"PodGroupScheduled","status":"True","reason":"Scheduled","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#;
    let (ok, _, err) = kubectl(
        &s,
        &[
            "patch",
            "podgroup",
            "train",
            "-n",
            "ml",
            "--subresource=status",
            "-p",
            scheduled,
        ],
    );
    assert!(ok, "{err}");
    let (_, out, _) = kubectl(&s, &["get", "podgroup", "train", "-n", "ml", "--no-headers"]);
    assert!(out.contains("Scheduled"), "{out}");
    let (ok, _, err) = kubectl(
        &s,
        &[
            "patch",
            "podgroup",
            "train",
            "-n",
            "ml",
            "--type=merge",
            "-p",
            r#"{"spec":{"schedulingPolicy":{"basic":{}}}}"#,
        ],
    );
    assert!(!ok);
    assert!(
        err.contains("spec.schedulingPolicy: Invalid value: null: field is immutable"),
        "{err}"
    );
    // The pod still uses the group: deleted, it is only marked.
    // Explained from the served schemas; a group stating both policies is
    // refused as kube-apiserver refuses it.
    let (ok, out, err) = kubectl(&s, &["explain", "podgroups.spec.schedulingPolicy.gang"]);
    assert!(ok, "{err}");
    assert!(out.contains("minCount"), "{out}");
    let bad = dir.file(
        "both.yaml",
        "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: both, namespace: ml}\nspec: {schedulingPolicy: {basic: {}, gang: {minCount: 2}}}\n",
    );
    let (ok, _, err) = kubectl(&s, &["apply", "-f", &bad]);
    assert!(!ok);
    assert!(err.contains("must specify exactly one of: `basic`, `gang`"), "{err}");
    let (ok, _, err) = kubectl(&s, &["delete", "podgroup", "train", "-n", "ml", "--wait=false"]);
    assert!(ok, "{err}");
    let (ok, out, _) = kubectl(
        &s,
        &[
            "get",
            "podgroup",
            "train",
            "-n",
            "ml",
            "-o",
            "jsonpath={.metadata.finalizers}",
        ],
    );
    assert!(ok && out.contains("scheduling.k8s.io/podgroup-protection"), "{out}");
    let (ok, _, err) = kubectl(&s, &["delete", "pod", "w0", "-n", "ml"]);
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl(&s, &["get", "podgroup", "train", "-n", "ml"]);
    assert!(!ok && err.contains("not found"), "{err}");
}
