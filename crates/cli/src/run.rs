//! `wasmsched run`: the scheduler daemon against a Kubernetes API server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;
use wasmsched_core::config::Config;
use wasmsched_kube::{LeaderElection, Options, parse_duration};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scheduler configuration (KubeSchedulerConfiguration YAML); default: one `wasm-scheduler` profile.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Kubeconfig file (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// API server URL, overriding the kubeconfig (e.g. `kubectl proxy`'s http://127.0.0.1:8001).
    #[arg(long)]
    master: Option<String>,
    /// Directory of WebAssembly plugins (overrides `wasmPlugins.directory`).
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// Address of /healthz, /readyz and /metrics.
    #[arg(long, default_value = "0.0.0.0:10251")]
    admin_address: SocketAddr,
    /// Identity in the lease and in events (default: hostname and a random suffix).
    #[arg(long)]
    identity: Option<String>,
    /// Binding requests in flight at most.
    #[arg(long, default_value_t = 16)]
    bind_concurrency: usize,
    /// Seed of tie-breaking between equally scored nodes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Longest an API request (event, condition) may take, in seconds; a
    /// binding is also bounded by what is left of the lease.
    #[arg(long, default_value_t = 10)]
    api_timeout: u64,
}

/// `leaderElection` of the configuration (kube-scheduler's field names).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LeaderElectionConfig {
    leader_elect: Option<bool>,
    lease_duration: Option<String>,
    renew_deadline: Option<String>,
    retry_period: Option<String>,
    resource_lock: Option<String>,
    resource_name: Option<String>,
    resource_namespace: Option<String>,
}

/// The leader election settings of a configuration; errors name the field.
pub fn leader_election(config: &Config) -> anyhow::Result<LeaderElection> {
    let mut le = LeaderElection::default();
    let Some(v) = &config.leader_election else {
        return Ok(le);
    };
    let c: LeaderElectionConfig = serde_path_to_error::deserialize(v)
        .map_err(|e| anyhow::anyhow!("leaderElection.{}: {}", e.path(), e.inner()))?;
    if let Some(lock) = &c.resource_lock
        && lock != "leases"
    {
        anyhow::bail!("leaderElection.resourceLock: only \"leases\" is supported, not {lock:?}");
    }
    let dur = |field: &str, v: &Option<String>, d: Duration| -> anyhow::Result<Duration> {
        match v {
            None => Ok(d),
            Some(s) => parse_duration(s)
                .filter(|d| !d.is_zero())
                .with_context(|| format!("leaderElection.{field}: {s:?} is not a duration like \"15s\"")),
        }
    };
    le.enabled = c.leader_elect.unwrap_or(true);
    le.lease_duration = dur("leaseDuration", &c.lease_duration, le.lease_duration)?;
    le.renew_deadline = dur("renewDeadline", &c.renew_deadline, le.renew_deadline)?;
    le.retry_period = dur("retryPeriod", &c.retry_period, le.retry_period)?;
    if le.renew_deadline >= le.lease_duration {
        anyhow::bail!("leaderElection.renewDeadline must be shorter than leaseDuration");
    }
    if let Some(n) = c.resource_name {
        le.name = n;
    }
    if let Some(n) = c.resource_namespace {
        le.namespace = n;
    }
    Ok(le)
}

/// `hostname_xxxxxxxx`, as client-go builds identities.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "wasmsched".into());
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{host}_{:08x}", (t.subsec_nanos() ^ std::process::id().rotate_left(16)))
}

/// A client of the API server of `--master` (over the kubeconfig's
/// credentials, if one is given), else of `--kubeconfig`, else in-cluster.
pub async fn client(
    kubeconfig: Option<&std::path::Path>,
    master: Option<&str>,
    identity: &str,
) -> anyhow::Result<kube::Client> {
    let config = if let Some(url) = master {
        let mut c = match kubeconfig {
            Some(p) => {
                let kc = kube::config::Kubeconfig::read_from(p)
                    .with_context(|| format!("cannot read kubeconfig {}", p.display()))?;
                kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?
            }
            None => kube::Config::new(url.parse().with_context(|| format!("--master {url:?} is not a URL"))?),
        };
        c.cluster_url = url.parse().with_context(|| format!("--master {url:?} is not a URL"))?;
        c
    } else if let Some(p) = kubeconfig {
        let kc = kube::config::Kubeconfig::read_from(p)
            .with_context(|| format!("cannot read kubeconfig {}", p.display()))?;
        kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?
    } else {
        kube::Config::infer()
            .await
            .context("no in-cluster service account and no kubeconfig (use --kubeconfig or --master)")?
    };
    // The identity in the User-Agent tells replicas apart in the API
    // server's audit log (and in the test double's fault rules).
    let agent = format!("wasmsched/{} ({identity})", env!("CARGO_PKG_VERSION"));
    let mut config = config;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_str(&agent).context("the identity cannot be sent in a User-Agent header")?,
    ));
    Ok(kube::Client::try_from(config)?)
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut config = crate::load_config(args.config.as_deref())?;
    let le = leader_election(&config)?;
    let (registry, plugins) = crate::plugin::registry(
        &mut config,
        args.plugins.as_deref(),
        args.seed,
        crate::plugin::FirstScan::Later,
        wasmsched_wasm::Tiering::BaselineFirst,
    )?;
    // The directory is compiled in the background: scheduling starts at
    // once, and the pods of profiles whose plugins are not compiled yet
    // wait (`plugin X is not loaded: the plugin directory is still being
    // compiled`) and are retried when they load.
    if let Some(h) = &plugins {
        let h = h.clone();
        std::thread::Builder::new()
            .name("wasm-plugin-first-scan".into())
            .spawn(move || {
                let report = h.scan();
                for (file, why) in &report.rejected {
                    tracing::warn!(file = %file, reason = %why, "plugin rejected");
                }
                if let Some(d) = h.config().directory.as_deref()
                    && crate::plugin::no_components(d)
                {
                    tracing::warn!("{}", crate::plugin::empty_directory_warning(d));
                }
            })
            .context("cannot start the plugin compiler thread")?;
    }
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    rt.block_on(async move {
        let client = client(args.kubeconfig.as_deref(), args.master.as_deref(), &identity).await?;
        let _watch = match &plugins {
            Some(h) if h.config().watch.unwrap_or(true) => Some(
                h.watch(Duration::from_millis(300), Duration::from_secs(30))
                    .map_err(anyhow::Error::msg)?,
            ),
            _ => None,
        };
        let opts = Options {
            config,
            registry,
            plugins,
            seed: args.seed,
            identity,
            leader_election: le,
            bind_concurrency: args.bind_concurrency,
            api_timeout: Duration::from_secs(args.api_timeout.max(1)),
            admin: Some(args.admin_address),
        };
        tracing::info!(identity = %opts.identity, "starting");
        wasmsched_kube::run(client, opts, shutdown_signal()).await?;
        tracing::info!("stopped");
        Ok(())
    })
}
