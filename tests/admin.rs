//! The admin port of `wasmsched run`, the real binary, as a security
//! reviewer reads it: over TLS, every path but the probes' needs a bearer
//! token that the API server double reviews (TokenReview) and a user it
//! authorizes (SubjectAccessReview, through the RBAC of `deploy/`); plain
//! HTTP only on loopback, and only for requests naming this machine; the
//! web view behind a content security policy; a real Prometheus scrapes
//! `/metrics` with a service account token; `wasmsched ui` opens the view
//! for a person.

#[path = "support/certs.rs"]
mod certs;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wasmsched_apiserver_sim::ApiServer;

struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn free_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wasmsched-admin-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `wasmsched run` against `server`, its admin port on `admin`, with `extra` arguments.
fn run(server: &ApiServer, admin: &str, extra: &[&str]) -> Process {
    let child = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args([
            "run",
            "--master",
            &server.url(),
            "--identity",
            "replica-a",
            "--admin-address",
            admin,
        ])
        .args(extra)
        .env("WASMSCHED_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start wasmsched run");
    Process(child)
}

/// One answer: status, headers (names in lower case), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

fn parse(raw: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn request(path: &str, host: &str, token: Option<&str>) -> String {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n")
}

/// `GET path` over TLS (any certificate: the port's is self-signed), with
/// a bearer token or none; status 0 when nothing answers.
async fn https_get(addr: &str, path: &str, token: Option<&str>) -> Answer {
    let config = wasmsched_kube::tls::client_config(None).unwrap();
    let connector = tokio_rustls::TlsConnector::from(config);
    let Ok(tcp) = tokio::net::TcpStream::connect(addr).await else {
        return parse(b"");
    };
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let Ok(mut tls) = connector.connect(name, tcp).await else {
        return parse(b"");
    };
    tls.write_all(request(path, addr, token).as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), tls.read_to_end(&mut raw)).await;
    parse(&raw)
}

/// `GET path` over plain HTTP with the given `Host`.
async fn http_get(addr: &str, path: &str, host: &str) -> Answer {
    let Ok(mut c) = tokio::net::TcpStream::connect(addr).await else {
        return parse(b"");
    };
    c.write_all(request(path, host, None).as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), c.read_to_end(&mut raw)).await;
    parse(&raw)
}

/// Waits until `probe` answers something but "nothing".
async fn wait_serving<F, Fut>(what: &str, probe: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Answer>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    while probe().await.status == 0 {
        assert!(Instant::now() < deadline, "{what} never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A token of the service account `ns/name`, made by the API server
/// (`kubectl create token`).
async fn token(server: &ApiServer, ns: &str, name: &str) -> String {
    let addr = server.url().trim_start_matches("http://").parse().unwrap();
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}).to_string();
    let r = support::http(
        addr,
        "POST",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}/token"),
        None,
        Some(&body),
    )
    .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    r.json()["status"]["token"].as_str().unwrap().to_owned()
}

/// The double with the RBAC of `deploy/` (the scheduler's own, the
/// viewer and metrics-reader roles, Prometheus's binding), a person bound
/// to `wasmsched:viewer` and a service account bound to nothing.
async fn cluster() -> ApiServer {
    let s = support::server().await;
    let ours = r#"
{apiVersion: v1, kind: Namespace, metadata: {name: monitoring}}
---
{apiVersion: v1, kind: ServiceAccount, metadata: {name: prometheus-k8s, namespace: monitoring}}
---
{apiVersion: v1, kind: ServiceAccount, metadata: {name: alice, namespace: default}}
---
{apiVersion: v1, kind: ServiceAccount, metadata: {name: stranger, namespace: default}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-views-wasmsched}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "wasmsched:viewer"}
subjects: [{kind: ServiceAccount, name: alice, namespace: default}]
"#;
    let mut texts: Vec<(String, String)> = [
        "deploy/base/namespace.yaml",
        "deploy/base/rbac.yaml",
        "deploy/monitoring/rbac.yaml",
    ]
    .iter()
    .map(|f| ((*f).to_owned(), std::fs::read_to_string(repo().join(f)).unwrap()))
    .collect();
    texts.push(("the test's".into(), ours.into()));
    for (what, text) in texts {
        for doc in serde_norway::Deserializer::from_str(&text) {
            let v = <serde_json::Value as serde::Deserialize>::deserialize(doc).unwrap();
            if !v.is_null() {
                s.create(v).unwrap_or_else(|e| panic!("{what}: {e}"));
            }
        }
    }
    s
}

/// Without a token the web view, `/debug/*` and `/metrics` answer 401;
/// with a token the API server's SubjectAccessReview denies, 403; allowed,
/// 200; the probes' paths always 200. Plain HTTP gets no answer on the
/// TLS port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_port_serves_whom_the_api_server_allows() {
    let s = cluster().await;
    let admin = free_port();
    let _d = run(&s, &admin, &[]);
    wait_serving("the admin port", || https_get(&admin, "/healthz", None)).await;

    for probe in ["/healthz", "/livez"] {
        let a = https_get(&admin, probe, None).await;
        assert_eq!(a.status, 200, "{probe}: {}", a.body);
    }
    // Ready or not yet, but never asked who calls.
    assert!([200, 503].contains(&https_get(&admin, "/readyz", None).await.status));

    let guarded = [
        "/metrics",
        "/ui",
        "/ui/cluster",
        "/ui/decision?pod=shop/web-1",
        "/debug/shadow",
    ];
    for path in guarded {
        let a = https_get(&admin, path, None).await;
        assert_eq!(a.status, 401, "{path} without a token: {}", a.body);
        assert_eq!(a.header("www-authenticate"), Some("Bearer"), "{path}");
        let a = https_get(&admin, path, Some("not-a-token-the-server-made")).await;
        assert_eq!(a.status, 401, "{path} with a bogus token: {}", a.body);
    }

    let stranger = token(&s, "default", "stranger").await;
    let prometheus = token(&s, "monitoring", "prometheus-k8s").await;
    let alice = token(&s, "default", "alice").await;
    for path in guarded {
        let a = https_get(&admin, path, Some(&stranger)).await;
        assert_eq!(a.status, 403, "{path} for a user bound to nothing: {}", a.body);
        assert!(
            a.body.contains("system:serviceaccount:default:stranger") && a.body.contains("cannot get path"),
            "{}",
            a.body
        );
    }
    // metrics-reader: /metrics only.
    let a = https_get(&admin, "/metrics", Some(&prometheus)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body.contains("scheduler_schedule_attempts_total"), "{}", a.body);
    assert_eq!(https_get(&admin, "/ui", Some(&prometheus)).await.status, 403);
    // viewer: everything.
    let ui = https_get(&admin, "/ui", Some(&alice)).await;
    assert_eq!(ui.status, 200, "{}", ui.body);
    assert!(ui.body.contains("wasmsched"), "{}", ui.body);
    let csp = ui.header("content-security-policy").unwrap_or_default();
    assert!(
        csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'sha256-"),
        "{csp}"
    );
    assert_eq!(ui.header("x-frame-options"), Some("DENY"));
    assert_eq!(ui.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(https_get(&admin, "/metrics", Some(&alice)).await.status, 200);
    // Authorized; there is just no shadow to show.
    assert_eq!(https_get(&admin, "/debug/shadow", Some(&alice)).await.status, 404);

    // Plain HTTP on the TLS port gets no HTTP answer.
    let a = http_get(&admin, "/metrics", &admin).await;
    assert_ne!(a.status, 200);

    // A deleted service account's token names nobody any more (once the
    // review's 10 s cache has passed).
    let api = s.url().trim_start_matches("http://").parse().unwrap();
    let deleted = support::http(
        api,
        "DELETE",
        "/api/v1/namespaces/default/serviceaccounts/alice",
        None,
        None,
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", String::from_utf8_lossy(&deleted.body));
    let deadline = Instant::now() + Duration::from_secs(20);
    while https_get(&admin, "/ui", Some(&alice)).await.status != 401 {
        assert!(
            Instant::now() < deadline,
            "a deleted service account's token still reads the view"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Plain HTTP is refused anywhere but on loopback; on loopback it answers
/// only requests for `localhost` or an IP address, so a page that rebinds
/// its own name to 127.0.0.1 (or reaches a port-forward) reads nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_is_for_loopback_and_names_this_machine() {
    let s = cluster().await;
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args([
            "run",
            "--master",
            &s.url(),
            "--admin-address",
            "0.0.0.0:0",
            "--admin-plain-http",
        ])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--admin-plain-http") && err.contains("loopback"), "{err}");

    let admin = free_port();
    let _d = run(&s, &admin, &["--admin-plain-http"]);
    wait_serving("the admin port", || http_get(&admin, "/healthz", &admin)).await;
    let port = admin.rsplit_once(':').unwrap().1;
    for host in [admin.clone(), format!("localhost:{port}"), "127.0.0.1".to_owned()] {
        assert_eq!(http_get(&admin, "/metrics", &host).await.status, 200, "Host {host}");
    }
    for host in [
        format!("attacker.example:{port}"),
        format!("localhost.attacker.example:{port}"),
    ] {
        let a = http_get(&admin, "/ui", &host).await;
        assert_eq!(a.status, 403, "Host {host}: {}", a.body);
        assert!(!a.body.contains("<html"), "{}", a.body);
    }
}

/// A real Prometheus scrapes `/metrics` as `deploy/monitoring` sets it up:
/// HTTPS, the service account token of `prometheus-k8s` in a credentials
/// file. The same scrape with a token bound to nothing is refused (the
/// target is down with 403).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scrapes_with_a_service_account_token() {
    let s = cluster().await;
    let admin = free_port();
    let _d = run(&s, &admin, &[]);
    let dir = scratch("prometheus");
    std::fs::write(dir.join("allowed"), token(&s, "monitoring", "prometheus-k8s").await).unwrap();
    std::fs::write(dir.join("refused"), token(&s, "default", "stranger").await).unwrap();
    let job = |name: &str| {
        format!(
            "- job_name: {name}\n  scheme: https\n  tls_config: {{insecure_skip_verify: true}}\n  authorization: {{credentials_file: {}}}\n  static_configs: [{{targets: ['{admin}']}}]\n",
            dir.join(name).display()
        )
    };
    let prom_addr = free_port();
    let prom =
        support::prometheus::Prometheus::start_with(&dir, &prom_addr, &format!("{}{}", job("allowed"), job("refused")))
            .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let up = |job: &'static str| {
            let prom = &prom;
            async move { prom.query(&format!("up{{job=\"{job}\"}}")).await }
        };
        let scraped = prom.query("scheduler_schedule_attempts_total").await;
        if up("allowed").await == Some(1.0) && up("refused").await == Some(0.0) && scraped.is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "prometheus: up allowed {:?}, refused {:?}, scraped {scraped:?}",
            up("allowed").await,
            up("refused").await
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `wasmsched ui` serves the view to a browser on localhost with the
/// person's token: the page, its fragments and its headers come through;
/// a token the API server refuses gets the admin port's 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wasmsched_ui_opens_the_view_with_a_token() {
    let s = cluster().await;
    let admin = free_port();
    let _d = run(&s, &admin, &[]);
    wait_serving("the admin port", || https_get(&admin, "/healthz", None)).await;
    let dir = scratch("ui");
    let token_file = dir.join("token");
    std::fs::write(&token_file, token(&s, "default", "alice").await).unwrap();
    let listen = free_port();
    let _ui = Process(
        Command::new(env!("CARGO_BIN_EXE_wasmsched"))
            .args(["ui", "--admin", &format!("https://{admin}"), "--listen", &listen])
            .arg("--token-file")
            .arg(&token_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_serving("wasmsched ui", || http_get(&listen, "/ui", &listen)).await;
    let page = http_get(&listen, "/ui?view=queue", &listen).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.header("content-security-policy").is_some());
    assert_eq!(http_get(&listen, "/ui/cluster", &listen).await.status, 200);
    // The proxy guards its own loopback port as --admin-plain-http does.
    assert_eq!(http_get(&listen, "/ui", "attacker.example").await.status, 403);
    std::fs::write(&token_file, "not-a-token").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let a = http_get(&listen, "/metrics", &listen).await;
        if a.status == 401 {
            break;
        }
        assert!(Instant::now() < deadline, "a refused token still reads: {}", a.status);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `--client-ca-file`, a client certificate that CA signed names its
/// user (CN) and groups (O), authorized like a token's user; with
/// `--tls-cert-file` the port serves the cluster's certificate, which a
/// client verifies. A certificate of another CA ends in the handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_names_the_user() {
    let s = cluster().await;
    s.create(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "viewers-view-wasmsched"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "wasmsched:viewer"},
        "subjects": [{"kind": "Group", "name": "wasmsched-viewers"}]}),
    )
    .unwrap();
    let pki = certs::Pki::new("admin-x509");
    pki.ca("ca")
        .ca("other-ca")
        .issue("server", "/CN=wasmsched", "ca", true)
        .issue("carol", "/CN=carol/O=wasmsched-viewers", "ca", false)
        .issue("dave", "/CN=dave", "ca", false)
        .issue("mallory", "/CN=mallory/O=wasmsched-viewers", "other-ca", false);
    let admin = free_port();
    let _d = run(
        &s,
        &admin,
        &[
            "--tls-cert-file",
            &pki.path("server.pem"),
            "--tls-private-key-file",
            &pki.path("server.key"),
            "--client-ca-file",
            &pki.path("ca.pem"),
        ],
    );
    let get = |who: Option<&'static str>, path: &'static str| {
        let config = pki.client("ca", who);
        let admin = admin.clone();
        async move {
            let connector = tokio_rustls::TlsConnector::from(config);
            let Ok(tcp) = tokio::net::TcpStream::connect(&admin).await else {
                return parse(b"");
            };
            let ip = rustls_pki_types::ServerName::IpAddress(std::net::IpAddr::from([127, 0, 0, 1]).into());
            let Ok(mut tls) = connector.connect(ip, tcp).await else {
                return parse(b"");
            };
            if tls.write_all(request(path, &admin, None).as_bytes()).await.is_err() {
                return parse(b"");
            }
            let mut raw = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(30), tls.read_to_end(&mut raw)).await;
            parse(&raw)
        }
    };
    wait_serving("the admin port", || get(None, "/healthz")).await;
    assert_eq!(get(None, "/ui").await.status, 401, "no certificate, no token");
    let carol = get(Some("carol"), "/ui").await;
    assert_eq!(carol.status, 200, "{}", carol.body);
    let dave = get(Some("dave"), "/metrics").await;
    assert_eq!(dave.status, 403, "{}", dave.body);
    assert!(dave.body.contains("\"dave\""), "{}", dave.body);
    assert_eq!(
        get(Some("mallory"), "/ui").await.status,
        0,
        "another CA's certificate is refused in the handshake"
    );
    let _ = std::fs::remove_dir_all(&pki.dir);
}
