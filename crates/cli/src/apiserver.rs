//! `wasmsched apiserver`: the Kubernetes API server double on a local port,
//! for pointing `kubectl` or a scheduler at a cluster that is not there.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use wasmsched_apiserver_sim::{ApiServer, Config};

use crate::simulate::EXAMPLE_CLUSTER;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Nodes and pods to start with (YAML or JSON); default: the bundled example cluster.
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// Start empty instead of with the example cluster.
    #[arg(long, conflicts_with = "cluster")]
    empty: bool,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8001)]
    port: u16,
    /// Changes kept for watches to resume from; older versions get 410 Expired.
    #[arg(long, default_value_t = 100_000)]
    history: usize,
    /// Seconds between watch bookmarks.
    #[arg(long, default_value_t = 1.0)]
    bookmark_interval: f64,
    /// Seed for UIDs, generated names and fractional faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Behave as a server with no controller manager: new namespaces get no
    /// `default` ServiceAccount, so their pods are refused until one is made.
    #[arg(long)]
    no_default_service_accounts: bool,
    /// Behave as a server with no controller manager's resourceclaim
    /// controller: pods' ResourceClaimTemplates make no claims, and claims
    /// are not released when their pods go.
    #[arg(long)]
    no_resourceclaim_controller: bool,
    /// Behave as a server with no controller manager's podgroup-protection
    /// controller: deleted PodGroups stay until their finalizer is removed.
    #[arg(long)]
    no_podgroup_protection_controller: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let text = match (&args.cluster, args.empty) {
        (Some(p), _) => Some(crate::read_file(p)?),
        (None, true) => None,
        (None, false) => Some(EXAMPLE_CLUSTER.to_owned()),
    };
    let config = Config {
        history_window: args.history,
        bookmark_interval: Duration::try_from_secs_f64(args.bookmark_interval)
            .ok()
            .filter(|d| !d.is_zero())
            .context("--bookmark-interval must be a positive number of seconds")?,
        seed: args.seed,
        default_service_accounts: !args.no_default_service_accounts,
        resourceclaim_controller: !args.no_resourceclaim_controller,
        podgroup_protection_controller: !args.no_podgroup_protection_controller,
        ..Config::default()
    };
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(async move {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
        let server = ApiServer::start(addr, config)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        if let Some(text) = text {
            let what = args
                .cluster
                .as_ref()
                .map_or("the bundled example cluster".to_owned(), |p| p.display().to_string());
            let n = server.load_text(&text).with_context(|| format!("cannot load {what}"))?;
            tracing::info!(objects = n, from = %what, "loaded");
        }
        // The first line is what a script waits for; a closed stdout is no
        // reason to stop serving.
        let mut out = std::io::stdout();
        let _ = writeln!(out, "serving the Kubernetes API on {}", server.url());
        let _ = writeln!(out, "try: kubectl --server {} get nodes,pods -A", server.url());
        let _ = out.flush();
        tokio::signal::ctrl_c().await.context("cannot wait for Ctrl-C")?;
        server.shutdown().await;
        Ok(())
    })
}
