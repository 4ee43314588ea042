//! End-to-end tests of `wasmsched extender`, the real binary: the API
//! server double feeds its cache, and this test plays kube-scheduler's
//! extender client (the same verbs, the same JSON, a per-request
//! `httpTimeout`). Every answer is checked against what `simulate` says for
//! the same pod, cluster and plugins.

#[path = "support/certs.rs"]
mod certs;
mod guest;
mod support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use wasmsched_apiserver_sim::{ApiServer, Config as SimConfig};

/// kube-scheduler's `httpTimeout` for the extender in `deploy/extender/`.
const HTTP_TIMEOUT: Duration = Duration::from_secs(5);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data(name: &str) -> PathBuf {
    repo().join("tests/data/extender").join(name)
}

struct Extender {
    child: Child,
    addr: SocketAddr,
    admin: SocketAddr,
    /// How to reach the verbs over TLS (none: plain HTTP).
    tls: Option<std::sync::Arc<tokio_rustls::rustls::ClientConfig>>,
}

impl Drop for Extender {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The example plugins (prebuilt) in a directory of their own.
fn plugin_dir(tag: &str) -> PathBuf {
    guest::prebuilt_dir(&format!("extender-{tag}"), &["node-price", "label-gate"])
}

/// Starts `wasmsched extender` with `args` and waits until it is ready.
async fn extender(args: &[&str]) -> Extender {
    let child = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args([
            "extender",
            "--listen",
            "127.0.0.1:0",
            "--admin-address",
            "127.0.0.1:0",
            "--admin-plain-http",
        ])
        .args(args)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Killed on drop from here on, whatever happens.
    let unknown: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let mut ext = Extender {
        child,
        addr: unknown,
        admin: unknown,
        tls: None,
    };
    let mut lines = BufReader::new(ext.child.stderr.take().unwrap()).lines();
    let (addr, admin) = loop {
        let line = lines.next().expect("the extender exited before listening").unwrap();
        if let Some(rest) = line
            .strip_prefix("extender listening on http://")
            .or_else(|| line.strip_prefix("extender listening on https://"))
        {
            let (a, b) = rest.split_once(" (admin http://").unwrap();
            break (a.parse().unwrap(), b.trim_end_matches(')').parse().unwrap());
        }
    };
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (ext.addr, ext.admin) = (addr, admin);
    for _ in 0..200 {
        if support::http(admin, "GET", "/readyz", None, None).await.status == 200 {
            return ext;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the extender never became ready");
}

/// One extender call as kube-scheduler makes it: POST, JSON, within
/// `httpTimeout`, over TLS when the extender serves it; anything but 200
/// is an error.
async fn call(e: &Extender, verb: &str, body: &Value) -> Value {
    let body = body.to_string();
    let raw = match &e.tls {
        None => tokio::time::timeout(
            HTTP_TIMEOUT,
            support::http(
                e.addr,
                "POST",
                &format!("/{verb}"),
                Some("application/json"),
                Some(&body),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("{verb} took longer than httpTimeout")),
        Some(config) => {
            let (status, text) = https_post(config.clone(), e.addr, &format!("/{verb}"), &body)
                .await
                .unwrap_or_else(|err| panic!("{verb}: {err}"));
            assert_eq!(status, 200, "{verb}: {text}");
            return serde_json::from_str(&text).unwrap();
        }
    };
    assert_eq!(raw.status, 200, "{verb}: {}", String::from_utf8_lossy(&raw.body));
    raw.json()
}

/// POST `body` to `path` over TLS with `config`: the status and body, or
/// why there is none (a handshake refused).
async fn https_post(
    config: std::sync::Arc<tokio_rustls::rustls::ClientConfig>,
    addr: SocketAddr,
    path: &str,
    body: &str,
) -> Result<(u16, String), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let connector = tokio_rustls::TlsConnector::from(config);
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = rustls_pki_types::ServerName::IpAddress(addr.ip().into());
    let mut tls = connector.connect(name, tcp).await.map_err(|e| e.to_string())?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: extender\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    tokio::time::timeout(HTTP_TIMEOUT, tls.read_to_end(&mut raw))
        .await
        .map_err(|_| "no answer within httpTimeout".to_owned())?
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or(format!("not HTTP: {text}"))?;
    Ok((
        status,
        text.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default(),
    ))
}

/// A CA, the extender's certificate for 127.0.0.1 and a client certificate
/// (kube-scheduler's), all signed by the CA.
struct Certs(certs::Pki);

impl Certs {
    fn make(tag: &str) -> Certs {
        let pki = certs::Pki::new(&format!("extender-{tag}"));
        pki.ca("ca")
            .issue("server", "/CN=wasmsched-extender", "ca", true)
            .issue("client", "/CN=kube-scheduler", "ca", false);
        Certs(pki)
    }

    /// The extender's arguments: its certificate, and with `clients`
    /// the CA its callers' certificates must be signed by.
    fn server_args(&self, clients: bool) -> Vec<String> {
        let mut a = vec![
            "--tls-cert".into(),
            self.0.path("server.pem"),
            "--tls-key".into(),
            self.0.path("server.key"),
        ];
        if clients {
            a.extend(["--client-ca-file".into(), self.0.path("ca.pem")]);
        }
        a
    }

    /// A client that trusts the CA, presenting the client certificate when
    /// `present`.
    fn client(&self, present: bool) -> std::sync::Arc<tokio_rustls::rustls::ClientConfig> {
        self.0.client("ca", present.then_some("client"))
    }
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect()
}

fn node_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn scores(list: &Value) -> Vec<(String, i64)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|h| (h["Host"].as_str().unwrap().to_owned(), h["Score"].as_i64().unwrap()))
        .collect()
}

/// kube-scheduler asks the extender about the pods `simulate` places on
/// the same cluster with the same plugins: the nodes that pass are as many
/// as simulate found feasible, the node simulate picks scores highest, a
/// pod no node fits fails everywhere with the plugin's reason; full-node
/// requests get the same answers as node-name requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extender_answers_as_simulate_places() {
    let server = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    server
        .load_text(&std::fs::read_to_string(data("cluster.yaml")).unwrap())
        .unwrap();
    let plugins = plugin_dir("e2e");
    let (config, plugins_arg) = (data("config.yaml"), plugins.to_str().unwrap().to_owned());
    // The bind verb is served only to kube-scheduler's client certificate.
    let certs = Certs::make("e2e");
    let tls = certs.server_args(true);
    let url = server.url();
    let mut args: Vec<&str> = vec![
        "--master",
        &url,
        "--config",
        config.to_str().unwrap(),
        "--plugins",
        &plugins_arg,
        "--bind",
    ];
    args.extend(tls.iter().map(String::as_str));
    let mut ext = extender(&args).await;
    ext.tls = Some(certs.client(true));

    let sim = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(["simulate", "-o", "json", "--cluster"])
        .arg(data("cluster.yaml"))
        .arg("--config")
        .arg(&config)
        .args(["--plugins", &plugins_arg])
        .output()
        .unwrap();
    assert!(sim.status.success(), "{}", String::from_utf8_lossy(&sim.stderr));
    let sim: Value = serde_json::from_slice(&sim.stdout).unwrap();

    let nodes = support::http(server.addr(), "GET", "/api/v1/nodes", None, None)
        .await
        .json();
    let all = node_names(&nodes);
    assert_eq!(all.len(), 6);
    let mut checked = 0;
    for placement in sim["placements"].as_array().unwrap() {
        let key = placement["pod"].as_str().unwrap();
        let (ns, name) = key.split_once('/').unwrap();
        let pod = support::http(
            server.addr(),
            "GET",
            &format!("/api/v1/namespaces/{ns}/pods/{name}"),
            None,
            None,
        )
        .await
        .json();
        let by_name = call(&ext, "filter", &json!({"Pod": pod, "NodeNames": all, "Nodes": null})).await;
        assert_eq!(by_name["Error"], "", "{key}");
        let feasible = names(&by_name["NodeNames"]);
        assert_eq!(
            feasible.len() as u64,
            placement["feasibleNodes"].as_u64().unwrap(),
            "{key}: {by_name}"
        );
        // The same request with whole nodes (an extender that is not
        // nodeCacheCapable) gets the same answer, as whole nodes.
        let whole = call(&ext, "filter", &json!({"Pod": pod, "Nodes": {"items": nodes["items"]}})).await;
        assert_eq!(node_names(&whole["Nodes"]), feasible, "{key}");
        assert_eq!(whole["NodeNames"], Value::Null);
        assert_eq!(
            whole["FailedAndUnresolvableNodes"],
            by_name["FailedAndUnresolvableNodes"]
        );

        match placement["node"].as_str() {
            None => {
                // label-gate rejects every node for good, with its reason;
                // simulate counts the same reason on every node.
                let failed = by_name["FailedAndUnresolvableNodes"].as_object().unwrap();
                assert_eq!(failed.len(), 6, "{key}");
                let reason = failed["pi-0"].as_str().unwrap();
                assert_eq!(reason, "node(s) were not of the requested cluster.type mainframe");
                assert!(
                    placement["reason"].as_str().unwrap().contains(&format!("6 {reason}")),
                    "{placement}"
                );
            }
            Some(chosen) => {
                let s = scores(&call(&ext, "prioritize", &json!({"Pod": pod, "NodeNames": feasible})).await);
                assert_eq!(s.len(), feasible.len());
                let best = s.iter().map(|(_, v)| *v).max().unwrap();
                assert!(s.iter().all(|(_, v)| (0..=10).contains(v)), "{s:?}");
                assert!(
                    s.contains(&(chosen.to_owned(), best)),
                    "{key}: simulate chose {chosen}; {s:?}"
                );
                let whole = call(
                    &ext,
                    "prioritize",
                    &json!({"Pod": pod, "Nodes": {"items": whole["Nodes"]["items"]}}),
                )
                .await;
                assert_eq!(scores(&whole), s, "{key}");
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 3);

    // Payloads shaped as kube-scheduler marshals them (a pod with init
    // containers, nodes with every status field).
    let args: Value = serde_json::from_str(&std::fs::read_to_string(data("args-names.json")).unwrap()).unwrap();
    let r = call(&ext, "filter", &args).await;
    assert_eq!(names(&r["NodeNames"]), ["pi-0", "pi-1", "pi-2"]);
    assert_eq!(r["FailedNodes"], json!({}));
    let s = scores(
        &call(
            &ext,
            "prioritize",
            &json!({"Pod": args["Pod"], "NodeNames": r["NodeNames"]}),
        )
        .await,
    );
    // Cheapest first: 0.05 → 10, 0.07 → 9, 0.30 → 0.
    assert_eq!(s, [("pi-0".into(), 10), ("pi-1".into(), 9), ("pi-2".into(), 0)]);
    let args: Value = serde_json::from_str(&std::fs::read_to_string(data("args-nodes.json")).unwrap()).unwrap();
    let r = call(&ext, "filter", &args).await;
    assert_eq!(node_names(&r["Nodes"]), ["pi-1"]);
    assert_eq!(
        r["FailedAndUnresolvableNodes"],
        json!({"x86-2": "node(s) were not of the requested cluster.type raspberry"})
    );

    let metrics = support::http(ext.admin, "GET", "/metrics", None, None).await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains("wasmsched_extender_requests_total{verb=\"filter\",result=\"ok\"} 8"),
        "{text}"
    );
    assert!(text.contains("wasmsched_extender_request_duration_seconds_count{verb=\"prioritize\",result=\"ok\"}"));
    // Each file loaded once, however many verbs use its plugin; one request
    // in ten timed per plugin, as the daemon samples its cycles.
    assert!(
        text.contains("wasmsched_plugin_loads_total{plugin=\"label-gate\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "scheduler_plugin_execution_duration_seconds_count{extension_point=\"Filter\",plugin=\"label-gate\""
        ),
        "{text}"
    );

    // The web view on the admin port: the cluster from the extender's
    // cache, a tile per node; the queue is kube-scheduler's.
    let ui = support::http(ext.admin, "GET", "/ui", None, None).await;
    let html = String::from_utf8_lossy(&ui.body);
    let nodes = server.list::<k8s_openapi::api::core::v1::Node>().len();
    assert_eq!(html.matches(" data-node=").count(), nodes, "{html}");
    let queue = support::http(ext.admin, "GET", "/ui/queue", None, None).await;
    assert!(
        String::from_utf8_lossy(&queue.body).contains("kube-scheduler holds the queue"),
        "{queue:?}"
    );

    // preempt: of the nodes kube-scheduler would preempt on, those where
    // the plugins accept the pod once the victims are gone (label-gate
    // still refuses the x86 node for a Raspberry Pi pod), victims as sent.
    let pi = support::http(server.addr(), "GET", "/api/v1/namespaces/edge/pods/pi", None, None)
        .await
        .json();
    let db = support::http(server.addr(), "GET", "/api/v1/namespaces/shop/pods/db-0", None, None)
        .await
        .json();
    let db0 = db["metadata"]["uid"].as_str().unwrap().to_owned();
    let r = call(
        &ext,
        "preempt",
        &json!({"Pod": pi, "NodeNameToMetaVictims": {
            "x86-0": {"Pods": [{"UID": db0}], "NumPDBViolations": 0},
            "pi-1": {"Pods": [], "NumPDBViolations": 1}}}),
    )
    .await;
    assert_eq!(
        r,
        json!({"NodeNameToMetaVictims": {"pi-1": {"Pods": [], "NumPDBViolations": 1}}})
    );
    // Whole victims (an extender that is not nodeCacheCapable): by UID.
    let r = call(
        &ext,
        "preempt",
        &json!({"Pod": pi, "NodeNameToVictims": {"pi-0": {"Pods": [db], "NumPDBViolations": 0}}}),
    )
    .await;
    assert_eq!(
        r,
        json!({"NodeNameToMetaVictims": {"pi-0": {"Pods": [{"UID": db0}], "NumPDBViolations": 0}}})
    );

    // bind: through the API server, as the daemon binds; binding a bound
    // pod elsewhere is refused with the server's reason.
    let any = support::http(server.addr(), "GET", "/api/v1/namespaces/shop/pods/any", None, None)
        .await
        .json();
    let uid = any["metadata"]["uid"].as_str().unwrap();
    let bind = |node: &str| json!({"PodName": "any", "PodNamespace": "shop", "PodUID": uid, "Node": node});
    assert_eq!(call(&ext, "bind", &bind("x86-0")).await, json!({"Error": ""}));
    let bound = support::http(server.addr(), "GET", "/api/v1/namespaces/shop/pods/any", None, None)
        .await
        .json();
    assert_eq!(bound["spec"]["nodeName"], "x86-0");
    let again = call(&ext, "bind", &bind("pi-0")).await;
    assert!(again["Error"].as_str().unwrap().contains("already assigned"), "{again}");
}

/// Without an API server the extender answers from what each request
/// holds: a list of 500 whole nodes is filtered and scored from the
/// request alone; a request of node names, which it cannot resolve, and
/// a malformed one get the extender's `Error`, not a failed call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_extender_answers_from_the_request() {
    let plugins = plugin_dir("stateless");
    let ext = extender(&[
        "--stateless",
        "--config",
        data("config.yaml").to_str().unwrap(),
        "--plugins",
        plugins.to_str().unwrap(),
    ])
    .await;
    let nodes: Vec<Value> = (0..500)
        .map(|i| {
            json!({
                "metadata": {"name": format!("n-{i:03}"), "creationTimestamp": null,
                             "labels": {"cluster.type": if i % 2 == 0 { "raspberry" } else { "x86" }},
                             "annotations": {"price": format!("0.{:03}", 500 - i)}},
                "spec": {},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True"}]}
            })
        })
        .collect();
    let args: Value = serde_json::from_str(&std::fs::read_to_string(data("args-names.json")).unwrap()).unwrap();
    let pod = &args["Pod"];
    let r = call(
        &ext,
        "filter",
        &json!({"Pod": pod, "Nodes": {"items": nodes}, "NodeNames": null}),
    )
    .await;
    assert_eq!(r["Error"], "");
    let passed = node_names(&r["Nodes"]);
    assert_eq!(passed.len(), 250);
    assert!(passed.iter().all(|n| n[2..].parse::<u32>().unwrap() % 2 == 0));
    assert_eq!(r["FailedAndUnresolvableNodes"].as_object().unwrap().len(), 250);
    let s = scores(&call(&ext, "prioritize", &json!({"Pod": pod, "Nodes": r["Nodes"]})).await);
    // The last raspberry node is the cheapest.
    assert_eq!(s.iter().max_by_key(|(_, v)| *v).unwrap(), &("n-498".to_owned(), 10));

    let r = call(&ext, "filter", &args).await;
    assert!(r["Error"].as_str().unwrap().contains("nodeCacheCapable: false"), "{r}");
    let raw = support::http(
        ext.addr,
        "POST",
        "/filter",
        Some("application/json"),
        Some("{\"Pod\": "),
    )
    .await;
    assert_eq!(raw.status, 200);
    assert!(
        raw.json()["Error"]
            .as_str()
            .unwrap()
            .starts_with("cannot read the request (ExtenderArgs)")
    );
}

/// With `--tls-cert` and `--tls-key` the extender serves HTTPS (for
/// kube-scheduler's `enableHTTPS: true`): a client that trusts the
/// certificate gets its answers; plain HTTP gets none. With
/// `--client-ca-file`, only a caller presenting a certificate that CA
/// signed (kube-scheduler's `tlsConfig.certFile`) gets an answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extender_serves_https_and_requires_the_client_certificate() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let certs = Certs::make("tls");
    let plugins = plugin_dir("tls");
    let body = json!({"Pod": {"metadata": {"name": "p", "namespace": "d", "annotations": {"cluster.type": "x86"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}},
                      "Nodes": {"items": [{"metadata": {"name": "a", "labels": {"cluster.type": "x86"}}},
                                          {"metadata": {"name": "b", "labels": {"cluster.type": "arm"}}}]}})
    .to_string();
    for clients in [false, true] {
        let mut args = vec![
            "--stateless".to_owned(),
            "--plugins".into(),
            plugins.to_str().unwrap().into(),
        ];
        args.extend(certs.server_args(clients));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let ext = extender(&args).await;
        let (status, text) = https_post(certs.client(true), ext.addr, "/filter", &body)
            .await
            .unwrap();
        assert_eq!(status, 200, "{text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(node_names(&answer["Nodes"]), ["a"]);
        assert_eq!(answer["Error"], "");
        let anonymous = https_post(certs.client(false), ext.addr, "/filter", &body).await;
        if clients {
            assert!(
                anonymous.is_err(),
                "a caller without the certificate was answered: {anonymous:?}"
            );
        } else {
            assert_eq!(anonymous.unwrap().0, 200);
        }
        // Plain HTTP on the HTTPS port gets no answer.
        let mut plain = tokio::net::TcpStream::connect(ext.addr).await.unwrap();
        let request = format!(
            "POST /filter HTTP/1.1\r\nHost: extender\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        plain.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        let _ = tokio::time::timeout(HTTP_TIMEOUT, plain.read_to_end(&mut raw)).await;
        assert!(!raw.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&raw));
    }
}

/// The bind verb binds any pod anywhere for whoever calls it: the
/// extender refuses to serve it without a client CA.
#[test]
fn bind_is_refused_without_a_client_certificate_authority() {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args([
            "extender",
            "--master",
            "http://127.0.0.1:1",
            "--bind",
            "--admin-address",
            "127.0.0.1:0",
            "--admin-plain-http",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--client-ca-file"), "{err}");
}

/// A request's body is read only up to what the nodes the extender knows
/// can need: with an API server and a few nodes, a 6 MiB post is refused
/// with 413 by its length, before it is read, and the extender answers the
/// next request as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_request_is_refused_by_what_the_nodes_can_need() {
    let server = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    server
        .load_text(&std::fs::read_to_string(data("cluster.yaml")).unwrap())
        .unwrap();
    let plugins = plugin_dir("limits");
    let ext = extender(&[
        "--master",
        &server.url(),
        "--config",
        data("config.yaml").to_str().unwrap(),
        "--plugins",
        plugins.to_str().unwrap(),
    ])
    .await;
    // Six nodes: 2 MiB and 100 nodes' worth (the floor) is about 5.1 MiB.
    // The headers alone get the answer: the body is never sent.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut c = tokio::net::TcpStream::connect(ext.addr).await.unwrap();
    c.write_all(
        format!(
            "POST /filter HTTP/1.1\r\nHost: extender\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            6 << 20
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = vec![0; 4096];
    let n = tokio::time::timeout(HTTP_TIMEOUT, c.read(&mut raw))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&raw[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("6 nodes known"), "{text}");
    // A body that says nothing of its length is cut where it passes.
    let mut c = tokio::net::TcpStream::connect(ext.addr).await.unwrap();
    c.write_all(b"POST /filter HTTP/1.1\r\nHost: extender\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, "x".repeat(1 << 20));
    for _ in 0..8 {
        if c.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(HTTP_TIMEOUT, c.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 413"), "{}", &text[..text.len().min(200)]);
    let args: Value = serde_json::from_str(&std::fs::read_to_string(data("args-names.json")).unwrap()).unwrap();
    assert_eq!(call(&ext, "filter", &args).await["Error"], "");
}

/// A plugin that fails follows its failure policy: under `fail` the filter
/// answer carries the error (a 200 with `Error`, which kube-scheduler
/// reports, or skips if the extender is `ignorable`); under `ignore` the
/// plugin is skipped and the nodes pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_plugin_follows_its_failure_policy() {
    let dir = std::env::temp_dir().join(format!("wasmsched-extender-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(guest::misbehave(), dir.join("misbehave.wasm")).unwrap();
    let body = json!({"Pod": {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
                      "Nodes": {"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}});
    for policy in ["fail", "ignore"] {
        let config = dir.join(format!("{policy}.yaml"));
        std::fs::write(
            &config,
            format!(
                "profiles:\n- schedulerName: wasm-extender\n  plugins:\n    multiPoint:\n      enabled: [{{name: misbehave}}]\n  pluginConfig:\n  - name: misbehave\n    args: {{mode: trap}}\nwasmPlugins:\n  plugins: [{{name: misbehave, failurePolicy: {policy}}}]\n"
            ),
        )
        .unwrap();
        let ext = extender(&[
            "--stateless",
            "--config",
            config.to_str().unwrap(),
            "--plugins",
            dir.to_str().unwrap(),
        ])
        .await;
        let r = call(&ext, "filter", &body).await;
        match policy {
            "fail" => {
                let e = r["Error"].as_str().unwrap();
                assert!(e.contains("plugin misbehave: trapped"), "{r}");
                assert_eq!(r["Nodes"], Value::Null);
            }
            _ => {
                assert_eq!(r["Error"], "", "{r}");
                assert_eq!(node_names(&r["Nodes"]), ["a", "b"]);
            }
        }
    }
}
