//! `wasmsched extender`: the same profiles and plugins behind
//! kube-scheduler's extender protocol.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use wasmsched_kube::extender::{ExtenderOptions, serve};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to serve the verbs (`{prefix}/filter`, `{prefix}/prioritize`).
    #[arg(long, default_value = "0.0.0.0:8888")]
    listen: SocketAddr,
    /// The path the verbs hang under (the path of kube-scheduler's `urlPrefix`).
    #[arg(long, default_value = "/")]
    prefix: String,
    /// Scheduler configuration (KubeSchedulerConfiguration YAML); default: one `wasm-scheduler` profile.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The profile whose plugins answer (default: the first).
    #[arg(long)]
    profile: Option<String>,
    /// Also run the profile's built-in plugins (by default only its WebAssembly plugins: kube-scheduler runs its own built-ins).
    #[arg(long)]
    builtins: bool,
    /// Kubeconfig file (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// API server URL, overriding the kubeconfig.
    #[arg(long)]
    master: Option<String>,
    /// No API server: answer from what each request holds (full `Nodes`; requests with node names only are refused).
    #[arg(long, conflicts_with_all = ["kubeconfig", "master"])]
    stateless: bool,
    /// Directory of WebAssembly plugins (overrides `wasmPlugins.directory`).
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    #[command(flatten)]
    admin: crate::run::AdminArgs,
    /// Largest request read, in MiB (whole nodes are ~1–5 KiB each); a larger one is refused with 413.
    /// With an API server, a request is further bounded by what the nodes of the cache can need
    /// (2 MiB and 32 KiB a node).
    #[arg(long, default_value_t = 64)]
    max_request_mib: usize,
    /// Requests read and answered at once, at most; more wait, unread, for one to end.
    #[arg(long, default_value_t = 8)]
    max_requests_inflight: usize,
    /// Serve the bind verb: bind pods through the API server as `wasmsched run` does (kube-scheduler's `bindVerb`).
    #[arg(long, conflicts_with = "stateless")]
    bind: bool,
    /// Longest a binding request may take, in seconds.
    #[arg(long, default_value_t = 10)]
    api_timeout: u64,
    /// Serve HTTPS with this certificate chain (PEM), for kube-scheduler's `enableHTTPS: true`.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Require of every caller a client certificate signed by this CA (PEM), as kube-scheduler presents
    /// with `tlsConfig.certFile`; needs --tls-cert. --bind requires it.
    #[arg(long, requires = "tls_cert")]
    client_ca_file: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let tls = args
        .tls_cert
        .clone()
        .zip(args.tls_key.clone())
        .map(|(cert, key)| wasmsched_kube::tls::CertFiles { cert, key });
    // The admin port serves the verbs' certificate, when one is given.
    let admin = args.admin.options(tls.clone())?;
    let mut config = crate::load_config(args.config.as_deref())?;
    let connection = wasmsched_kube::ClientConnection::from_config(config.client_connection.as_ref())?;
    // Every plugin is compiled before the first answer: an extender that
    // answered without one would let kube-scheduler place pods the plugin
    // would have refused.
    crate::plugin::refuse_shadow(&config, "extender")?;
    let (registry, plugins) = crate::plugin::registry(
        &mut config,
        args.plugins.as_deref(),
        0,
        crate::plugin::FirstScan::Now,
        wasmsched_wasm::Tiering::BaselineFirst,
        &[],
    )?;
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(async move {
        let client = match args.stateless {
            true => None,
            false => Some(
                crate::run::clients(
                    args.kubeconfig.as_deref(),
                    args.master.as_deref(),
                    &crate::run::default_identity(),
                    &connection,
                )
                .await
                .context("no cluster to watch (or run with --stateless to answer whole-node requests alone)")?
                .main,
            ),
        };
        let _watch = match &plugins {
            Some(h) if h.config().watch.unwrap_or(true) => Some(
                h.watch(Duration::from_millis(300), Duration::from_secs(30))
                    .map_err(anyhow::Error::msg)?,
            ),
            _ => None,
        };
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let running = serve(
            ExtenderOptions {
                config,
                registry,
                plugins,
                profile: args.profile,
                builtins: args.builtins,
                listen: args.listen,
                prefix: args.prefix,
                admin: Some(admin),
                max_request_bytes: args.max_request_mib << 20,
                max_in_flight: args.max_requests_inflight,
                bind: args.bind,
                api_timeout: Duration::from_secs(args.api_timeout.max(1)),
                tls,
                client_ca: args.client_ca_file,
            },
            client,
            stop_rx,
        )
        .await?;
        let scheme = if running.tls { "https" } else { "http" };
        match running.admin {
            Some(admin) => eprintln!(
                "extender listening on {scheme}://{} (admin {})",
                running.addr,
                admin.url()
            ),
            None => eprintln!("extender listening on {scheme}://{}", running.addr),
        }
        crate::run::shutdown_signal().await;
        let _ = stop_tx.send(true);
        let _ = running.server.await;
        tracing::info!("stopped");
        Ok(())
    })
}
