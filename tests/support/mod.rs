//! Helpers shared by the end-to-end tests: the API server double with a
//! fixture, a kube-rs client for it, and a raw HTTP/1.1 client (so status
//! codes, headers and bodies are checked as bytes on the wire).
#![allow(dead_code)]

pub mod prometheus;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wasmsched_apiserver_sim::{ApiServer, Config};

/// A scheduler configuration for the daemon tests: a lease that changes
/// hands in two seconds, and no client-side rate limit to speak of.
pub const FAST_LEASE: &str = r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 2s
  renewDeadline: 1500ms
  retryPeriod: 200ms
  resourceNamespace: kube-system
  resourceName: wasm-scheduler
clientConnection:
  # kube-scheduler's scheduler_perf budget: the tests measure behaviour,
  # not the default 50 requests per second.
  qps: 5000
  burst: 5000
"#;

/// Three nodes (one cordoned) and four pods: two pending for
/// `wasm-scheduler`, one pending for another scheduler, one bound.
pub const FIXTURE: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {zone: a, disk: ssd}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, conditions: [{type: Ready, status: "True"}]}
- apiVersion: v1
  kind: Node
  metadata: {name: n2, labels: {zone: b}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, conditions: [{type: Ready, status: "True"}]}
- apiVersion: v1
  kind: Node
  metadata: {name: n3, labels: {zone: b}}
  spec: {unschedulable: true}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, conditions: [{type: Ready, status: "False"}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: web-1, namespace: shop, labels: {app: web}}
  spec: {schedulerName: wasm-scheduler, containers: [{name: c, image: nginx}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: web-2, namespace: shop, labels: {app: web}}
  spec: {schedulerName: wasm-scheduler, containers: [{name: c, image: nginx}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: other, namespace: default}
  spec: {schedulerName: other-scheduler, containers: [{name: c, image: busybox}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: db-0, namespace: shop, labels: {app: db}}
  spec: {nodeName: n1, containers: [{name: c, image: postgres}]}
  status: {phase: Running}
"#;

/// A server on a free port with [`FIXTURE`] loaded.
pub async fn server() -> ApiServer {
    server_with(Config::default()).await
}

/// A server with `config` and [`FIXTURE`] loaded.
pub async fn server_with(config: Config) -> ApiServer {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), config).await.unwrap();
    s.load_text(FIXTURE).unwrap();
    s
}

/// A kube-rs client for the server, over plain HTTP.
pub fn kube_client(server: &ApiServer) -> kube::Client {
    let config = kube::Config::new(server.url().parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

/// A raw HTTP response.
#[derive(Debug)]
pub struct Raw {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Raw {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The lines of a finished watch response, parsed.
    pub fn events(&self) -> Vec<Value> {
        self.body
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }
}

/// Sends one request (`Connection: close`) and reads the whole response.
pub async fn http(addr: SocketAddr, method: &str, path: &str, content_type: Option<&str>, body: Option<&str>) -> Raw {
    let mut conn = send(
        addr,
        method,
        path,
        &[("Content-Type", content_type.unwrap_or("application/json"))],
        body,
    )
    .await;
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), conn.read_to_end(&mut raw))
        .await
        .expect("response within 30 s")
        .unwrap();
    parse(&raw)
}

/// Same, with extra request headers.
pub async fn http_with(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Raw {
    let mut conn = send(addr, method, path, headers, None).await;
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).await.unwrap();
    parse(&raw)
}

async fn send(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> TcpStream {
    let mut conn = TcpStream::connect(addr).await.unwrap();
    let body = body.unwrap_or("");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    conn.write_all(req.as_bytes()).await.unwrap();
    conn
}

fn parse(raw: &[u8]) -> Raw {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete header");
    let head = std::str::from_utf8(&raw[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked { dechunk(rest).0 } else { rest.to_vec() };
    Raw { status, headers, body }
}

/// Decodes complete chunks; returns the data and how many input bytes were used.
fn dechunk(mut input: &[u8]) -> (Vec<u8>, usize) {
    let (mut out, mut used) = (Vec::new(), 0);
    while let Some(nl) = input.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&input[..nl]).unwrap().trim(), 16).unwrap();
        if size == 0 || input.len() < nl + 2 + size + 2 {
            break;
        }
        out.extend_from_slice(&input[nl + 2..nl + 2 + size]);
        input = &input[nl + 2 + size + 2..];
        used += nl + 2 + size + 2;
    }
    (out, used)
}

/// A watch read event by event as the server streams it.
pub struct Watch {
    conn: TcpStream,
    raw: Vec<u8>,
    data: Vec<u8>,
    header_done: bool,
    pub status: u16,
}

impl Watch {
    pub async fn open(addr: SocketAddr, path: &str) -> Watch {
        let conn = send(addr, "GET", path, &[], None).await;
        let mut w = Watch {
            conn,
            raw: Vec::new(),
            data: Vec::new(),
            header_done: false,
            status: 0,
        };
        while !w.header_done {
            w.fill().await;
        }
        w
    }

    async fn fill(&mut self) -> bool {
        let mut buf = [0u8; 65536];
        let n = self.conn.read(&mut buf).await.unwrap();
        if n == 0 {
            return false;
        }
        self.raw.extend_from_slice(&buf[..n]);
        if !self.header_done
            && let Some(end) = self.raw.windows(4).position(|w| w == b"\r\n\r\n")
        {
            let head = std::str::from_utf8(&self.raw[..end]).unwrap();
            self.status = head.split(' ').nth(1).unwrap().parse().unwrap();
            self.raw.drain(..end + 4);
            self.header_done = true;
        }
        if self.header_done {
            let (data, used) = dechunk(&self.raw);
            self.data.extend_from_slice(&data);
            self.raw.drain(..used);
        }
        true
    }

    /// The next event, or `None` when the stream ended or nothing came
    /// within `wait`.
    pub async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(nl) = self.data.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.data.drain(..=nl).collect();
                return Some(serde_json::from_slice(&line).unwrap());
            }
            match tokio::time::timeout_at(deadline, self.fill()).await {
                Ok(true) => {}
                Ok(false) | Err(_) => return None,
            }
        }
    }

    /// The next event that is not a bookmark.
    pub async fn next_object(&mut self, wait: Duration) -> Option<Value> {
        loop {
            let e = self.next(wait).await?;
            if e["type"] != "BOOKMARK" {
                return Some(e);
            }
        }
    }
}

/// The pods of `wasm-scheduler` not settled yet: neither bound, nor gated,
/// nor found unschedulable (a plugin they wait for loaded).
pub fn unsettled(s: &ApiServer) -> Vec<String> {
    use k8s_openapi::api::core::v1::Pod;
    s.list::<Pod>()
        .into_iter()
        .filter(|p| {
            let spec = p.spec.as_ref();
            spec.and_then(|s| s.scheduler_name.as_deref()) == Some("wasm-scheduler")
                && spec.and_then(|s| s.node_name.as_ref()).is_none()
                && spec.and_then(|s| s.scheduling_gates.as_ref()).is_none_or(Vec::is_empty)
        })
        .filter(|p| {
            !p.status
                .as_ref()
                .and_then(|st| st.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.type_ == "PodScheduled"
                            && c.status == "False"
                            && !c.message.as_deref().unwrap_or_default().contains("is not loaded")
                    })
                })
        })
        .map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.unwrap_or_default(),
                p.metadata.name.unwrap_or_default()
            )
        })
        .collect()
}

/// Waits until [`unsettled`] is empty.
pub async fn wait_settled(s: &ApiServer, within: Duration) {
    let deadline = std::time::Instant::now() + within;
    loop {
        let waiting = unsettled(s);
        if waiting.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not settled in {within:?}: {waiting:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
