//! A real Prometheus (Debian's `prometheus` package, installed by
//! `scripts/install-test-tools.sh`) for the tests that scrape or query one.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A real Prometheus (Debian's `prometheus`, which scripts/test.sh
/// installs) on a free port, scraping `targets` (job, address) every
/// second, with its data in `dir`. Killed on drop.
pub struct Prometheus {
    child: Child,
    addr: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Scraping `targets` (job, address) over plain HTTP.
    pub async fn start(dir: &std::path::Path, addr: &str, targets: &[(&str, &str)]) -> Prometheus {
        let jobs: String = targets
            .iter()
            .map(|(job, target)| format!("- job_name: {job}\n  static_configs: [{{targets: ['{target}']}}]\n"))
            .collect();
        Self::start_with(dir, addr, &jobs).await
    }

    /// With `jobs`, the `scrape_configs` list of its configuration.
    pub async fn start_with(dir: &std::path::Path, addr: &str, jobs: &str) -> Prometheus {
        let binary = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect(
                "prometheus is not installed: scripts/install-test-tools.sh installs Debian's prometheus package (apt-get install prometheus)",
            );
        std::fs::create_dir_all(dir).unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!("global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nscrape_configs:\n{jobs}"),
        )
        .unwrap();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let p = Prometheus {
            child,
            addr: addr.to_owned(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Ok(mut c)) =
                tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(&p.addr)).await
            {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let _ = c
                    .write_all(b"GET /-/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .await;
                let mut out = String::new();
                let _ = c.read_to_string(&mut out).await;
                if out.starts_with("HTTP/1.1 200") {
                    return p;
                }
            }
            assert!(Instant::now() < deadline, "prometheus did not become ready on {addr}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The value of the first sample `expr` selects now, if any.
    pub async fn query(&self, expr: &str) -> Option<f64> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let query: String = expr
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let mut c = tokio::net::TcpStream::connect(&self.addr).await.ok()?;
        c.write_all(
            format!(
                "GET /api/v1/query?query={query} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                self.addr
            )
            .as_bytes(),
        )
        .await
        .ok()?;
        let mut out = String::new();
        c.read_to_string(&mut out).await.ok()?;
        let body: serde_json::Value = serde_json::from_str(out.split_once("\r\n\r\n")?.1).ok()?;
        body["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }
}
