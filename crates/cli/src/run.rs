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
    #[command(flatten)]
    admin: AdminArgs,
    /// The admin port's certificate chain (PEM); default: a self-signed
    /// certificate made at start, as kube-scheduler makes one.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// The private key of --tls-cert-file (PEM).
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// A client certificate of the admin port signed by this CA (PEM) names
    /// its user (CN) and groups (O), authorized like a token's user, as
    /// kube-scheduler's flag of this name.
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
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
    /// On SIGTERM, how long queued events and conditions may take to be
    /// written, in seconds, after the bindings in flight (up to 10 s); what
    /// is left is counted and logged. Keep the two, plus 2 s for the lease,
    /// under the pod's terminationGracePeriodSeconds.
    #[arg(long, default_value_t = 15)]
    drain_timeout: u64,
    /// /healthz fails when the scheduling loop has not turned for this many
    /// seconds (it turns at least every half second when idle).
    #[arg(long, default_value_t = 30)]
    stall_timeout: u64,
    /// Bind each pod to the next node in turn, without scheduling (no
    /// filter, no score): what `bench --e2e --null` measures the API
    /// server's limit with. Never for a cluster.
    #[arg(long, hide = true)]
    null_placement: bool,
}

/// The admin port (`/healthz`, `/livez`, `/readyz`, `/metrics`, `/ui`,
/// `/debug/shadow`), served as kube-scheduler serves its secure port.
#[derive(Debug, clap::Args)]
pub struct AdminArgs {
    /// Address of the admin port: HTTPS, each request but the probes'
    /// authenticated (TokenReview) and authorized (SubjectAccessReview)
    /// by the API server.
    #[arg(long, default_value = "0.0.0.0:10259")]
    pub admin_address: SocketAddr,
    /// Serve the admin port as plain HTTP without authentication, for local
    /// runs: only on a loopback address, and only to requests for
    /// `localhost` or an IP address (no other site's page reaches it).
    #[arg(long)]
    pub admin_plain_http: bool,
    /// Paths served without authentication or authorization (exact, or a
    /// prefix ending in `*`), as kube-scheduler's flag of this name.
    #[arg(long, value_delimiter = ',', default_value = "/healthz,/readyz,/livez")]
    pub authorization_always_allow_paths: Vec<String>,
}

impl AdminArgs {
    /// The daemon's admin options, serving `cert` (none: self-signed).
    pub fn options(
        &self,
        cert: Option<wasmsched_kube::tls::CertFiles>,
    ) -> anyhow::Result<wasmsched_kube::AdminOptions> {
        let opts = wasmsched_kube::AdminOptions {
            addr: self.admin_address,
            plain_http: self.admin_plain_http,
            cert,
            always_allow: self
                .authorization_always_allow_paths
                .iter()
                .filter(|p| !p.is_empty())
                .cloned()
                .collect(),
            client_ca: None,
        };
        opts.check()?;
        Ok(opts)
    }
}

/// The clients a process uses: bindings and watches share `main`'s token
/// bucket; events, the lease and the admin port's reviews each have their
/// own, as kube-scheduler's do, so none waits behind the others.
pub struct Clients {
    /// Watches, bindings, status writes.
    pub main: kube::Client,
    /// Events.
    pub events: kube::Client,
    /// Lease renewals.
    pub lease: kube::Client,
    /// TokenReviews and SubjectAccessReviews of the admin port.
    pub reviews: kube::Client,
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

/// The API server's clients: the main one and the events' one, each with
/// its own token bucket of `clientConnection.qps`/`burst`, as
/// kube-scheduler makes them. The server is `--master`'s (over the
/// kubeconfig's credentials, if one is given), else the kubeconfig's
/// (`--kubeconfig`, else `clientConnection.kubeconfig`), else in-cluster.
pub async fn clients(
    kubeconfig: Option<&std::path::Path>,
    master: Option<&str>,
    identity: &str,
    connection: &wasmsched_kube::ClientConnection,
) -> anyhow::Result<Clients> {
    let kubeconfig = kubeconfig.or(connection.kubeconfig.as_deref());
    let read = |p: &std::path::Path| {
        kube::config::Kubeconfig::read_from(p).with_context(|| format!("cannot read kubeconfig {}", p.display()))
    };
    let config = if let Some(url) = master {
        let mut c = match kubeconfig {
            Some(p) => kube::Config::from_custom_kubeconfig(read(p)?, &Default::default()).await?,
            None => kube::Config::new(url.parse().with_context(|| format!("--master {url:?} is not a URL"))?),
        };
        c.cluster_url = url.parse().with_context(|| format!("--master {url:?} is not a URL"))?;
        c
    } else if let Some(p) = kubeconfig {
        kube::Config::from_custom_kubeconfig(read(p)?, &Default::default()).await?
    } else {
        kube::Config::infer().await.context(
            "no in-cluster service account and no kubeconfig (use --kubeconfig, --master or clientConnection.kubeconfig)",
        )?
    };
    // The identity in the User-Agent tells replicas apart in the API
    // server's audit log (and in the test double's fault rules).
    let agent = format!("wasmsched/{} ({identity})", env!("CARGO_PKG_VERSION"));
    let mut config = config;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_str(&agent).context("the identity cannot be sent in a User-Agent header")?,
    ));
    Ok(Clients {
        main: wasmsched_kube::client::build(config.clone(), connection)?,
        events: wasmsched_kube::client::build(config.clone(), connection)?,
        lease: wasmsched_kube::client::build(config.clone(), connection)?,
        reviews: wasmsched_kube::client::build(config, connection)?,
    })
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
    let connection = wasmsched_kube::ClientConnection::from_config(config.client_connection.as_ref())?;
    let (registry, plugins) = crate::plugin::registry(
        &mut config,
        args.plugins.as_deref(),
        args.seed,
        crate::plugin::FirstScan::Later,
        wasmsched_wasm::Tiering::BaselineFirst,
        &[],
    )?;
    let shadow = match &plugins {
        Some(h) => crate::plugin::shadow(h, args.seed, wasmsched_wasm::Tiering::BaselineFirst)?,
        None => None,
    };
    // The directory is compiled in the background: scheduling starts at
    // once, and the pods of profiles whose plugins are not compiled yet
    // wait (`plugin X is not loaded: the plugin directory is still being
    // compiled`) and are retried when they load.
    if let Some(h) = &plugins {
        let h = h.clone();
        let shadow = shadow.as_ref().map(|s| s.host.clone());
        std::thread::Builder::new()
            .name("wasm-plugin-first-scan".into())
            .spawn(move || {
                let report = h.scan();
                // Shadows after serving: they wait for nothing.
                if let Some(sh) = &shadow {
                    for (file, why) in &sh.scan().rejected {
                        tracing::warn!(file = %file, reason = %why, "shadow plugin rejected");
                    }
                }
                for (file, why) in &report.rejected {
                    tracing::warn!(file = %file, reason = %why, "plugin rejected");
                }
                // Once per plugin (a plugin has a slot per profile).
                let mut missing: Vec<String> = h.slots().iter().filter_map(|s| s.not_loaded()).collect();
                missing.sort();
                missing.dedup();
                for why in missing {
                    tracing::warn!(reason = %why, "plugin not loaded after the first scan: failurePolicy fail makes every pod of its profiles unschedulable until it loads, ignore skips it");
                }
                if let Some(d) = h.config().directory.as_deref()
                    && crate::plugin::no_components(d)
                {
                    tracing::warn!("{}", crate::plugin::empty_directory_warning(d));
                }
            })
            .context("cannot start the plugin compiler thread")?;
    }
    let cert = args
        .tls_cert_file
        .clone()
        .zip(args.tls_private_key_file.clone())
        .map(|(cert, key)| wasmsched_kube::tls::CertFiles { cert, key });
    let mut admin = args.admin.options(cert)?;
    admin.client_ca = args.client_ca_file.clone();
    if admin.client_ca.is_some() && admin.plain_http {
        anyhow::bail!(
            "--client-ca-file checks client certificates in the TLS handshake, which --admin-plain-http has none of"
        );
    }
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    rt.block_on(async move {
        let clients = clients(
            args.kubeconfig.as_deref(),
            args.master.as_deref(),
            &identity,
            &connection,
        )
        .await?;
        // The plugin directory and the shadow directory, each watched.
        let _watches = plugins
            .iter()
            .chain(shadow.iter().map(|s| &s.host))
            .filter(|h| h.config().watch.unwrap_or(true))
            .map(|h| {
                h.watch(Duration::from_millis(300), Duration::from_secs(30))
                    .map_err(anyhow::Error::msg)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let opts = Options {
            config,
            registry,
            plugins,
            seed: args.seed,
            identity,
            leader_election: le,
            bind_concurrency: args.bind_concurrency,
            api_timeout: Duration::from_secs(args.api_timeout.max(1)),
            admin: Some(admin),
            review_client: Some(clients.reviews),
            lease_client: Some(clients.lease),
            events_client: Some(clients.events),
            drain_timeout: Duration::from_secs(args.drain_timeout),
            stall_timeout: Duration::from_secs(args.stall_timeout.max(1)),
            null_placement: args.null_placement,
            shadow,
        };
        if args.null_placement {
            tracing::warn!("--null-placement: pods are bound to nodes in turn, without scheduling");
        }
        tracing::info!(identity = %opts.identity, "starting");
        wasmsched_kube::run(clients.main, opts, shutdown_signal()).await?;
        tracing::info!("stopped");
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmsched_core::plugins::Registry;
    use wasmsched_kube::ClientConnection;

    /// What a configuration becomes: the core's frameworks, the daemon's
    /// election and client settings; or the first error.
    struct Read {
        config: Config,
        le: LeaderElection,
        cc: ClientConnection,
    }

    fn read(yaml: &str) -> Result<Read, String> {
        let config = Config::from_yaml(yaml).map_err(|e| e.to_string())?;
        config
            .build_frameworks(&Registry::builtin())
            .map_err(|e| e.to_string())?;
        let le = leader_election(&config).map_err(|e| e.to_string())?;
        let cc = ClientConnection::from_config(config.client_connection.as_ref()).map_err(|e| e.to_string())?;
        Ok(Read { config, le, cc })
    }

    fn honoured(yaml: &str, check: impl FnOnce(&Read) -> bool) {
        let r = read(yaml).unwrap_or_else(|e| panic!("{yaml}: refused: {e}"));
        assert!(check(&r), "{yaml}: accepted but not honoured");
    }

    fn refused(yaml: &str, field: &str) {
        match read(yaml) {
            Ok(_) => panic!("{yaml}: accepted, neither honoured nor refused"),
            Err(e) => assert!(e.contains(field), "{yaml}: the error does not name {field}: {e}"),
        }
    }

    /// `clientConnection.kubeconfig` is the server when no flag names one.
    #[tokio::test]
    async fn the_configurations_kubeconfig_is_used_without_a_flag() {
        let s = wasmsched_apiserver_sim::ApiServer::start("127.0.0.1:0".parse().unwrap(), Default::default())
            .await
            .unwrap();
        let path = std::env::temp_dir().join(format!("wasmsched-kubeconfig-{}.yaml", std::process::id()));
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: \"{}\"}}}}]\nusers: [{{name: u, user: {{}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n",
                s.url()
            ),
        )
        .unwrap();
        let yaml = format!("clientConnection: {{kubeconfig: {}}}", path.display());
        let cc = read(&yaml).unwrap().cc;
        s.create(serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "from-the-double"}}))
            .unwrap();
        let client = clients(None, None, "t", &cc).await.unwrap().main;
        let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
        let names: Vec<String> = nodes
            .list(&Default::default())
            .await
            .unwrap()
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        assert_eq!(names, ["from-the-double"], "the kubeconfig's server answered");
        let _ = std::fs::remove_file(&path);
    }

    /// Every field of kube-scheduler v1.36's `KubeSchedulerConfiguration`
    /// (kubescheduler.config.k8s.io/v1 and component-base's types), each
    /// set to a value other than its default: honoured, with the behaviour
    /// it changes, or refused with a message that names it.
    #[test]
    fn every_field_of_the_configuration_is_honoured_or_refused() {
        let fw = |r: &Read, i: usize| r.config.build_frameworks(&Registry::builtin()).unwrap().remove(i);
        honoured("apiVersion: kubescheduler.config.k8s.io/v1", |_| true);
        refused("apiVersion: kubescheduler.config.k8s.io/v1beta3", "apiVersion");
        refused("kind: Policy", "kind");
        honoured("parallelism: 3", |r| r.config.parallelism() == 3);
        refused("parallelism: 0", "parallelism");
        honoured("percentageOfNodesToScore: 30", |r| {
            fw(r, 0).percentage_of_nodes_to_score == 30
        });
        refused("percentageOfNodesToScore: 130", "percentageOfNodesToScore");
        honoured("podInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 20", |r| {
            r.config.initial_backoff() == Duration::from_secs(2) && r.config.max_backoff() == Duration::from_secs(20)
        });
        refused("podInitialBackoffSeconds: 0", "podInitialBackoffSeconds");
        refused(
            "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2",
            "podMaxBackoffSeconds",
        );
        refused("enableProfiling: true", "enableProfiling");
        honoured("enableProfiling: false", |_| true);
        refused("enableContentionProfiling: true", "enableContentionProfiling");
        refused("delayCacheUntilActive: true", "delayCacheUntilActive");
        refused("extenders: [{urlPrefix: http://x, filterVerb: filter}]", "extenders");
        // leaderElection
        honoured("leaderElection: {leaderElect: false}", |r| !r.le.enabled);
        honoured(
            "leaderElection: {leaseDuration: 20s, renewDeadline: 12s, retryPeriod: 3s}",
            |r| {
                (r.le.lease_duration, r.le.renew_deadline, r.le.retry_period)
                    == (Duration::from_secs(20), Duration::from_secs(12), Duration::from_secs(3))
            },
        );
        refused(
            "leaderElection: {leaseDuration: 5s, renewDeadline: 10s}",
            "leaderElection.renewDeadline",
        );
        honoured("leaderElection: {resourceLock: leases}", |_| true);
        refused(
            "leaderElection: {resourceLock: endpoints}",
            "leaderElection.resourceLock",
        );
        honoured("leaderElection: {resourceName: s, resourceNamespace: ns}", |r| {
            (r.le.name.as_str(), r.le.namespace.as_str()) == ("s", "ns")
        });
        refused("leaderElection: {leaseDuraton: 5s}", "leaderElection");
        // clientConnection
        honoured("clientConnection: {kubeconfig: /etc/kc}", |r| {
            r.cc.kubeconfig.as_deref() == Some(std::path::Path::new("/etc/kc"))
        });
        honoured("clientConnection: {qps: 7, burst: 9}", |r| {
            (r.cc.qps, r.cc.burst) == (Some(7.0), 9)
        });
        refused("clientConnection: {burst: -1}", "clientConnection.burst");
        refused(
            "clientConnection: {contentType: application/vnd.kubernetes.protobuf}",
            "clientConnection.contentType",
        );
        honoured("clientConnection: {contentType: application/json}", |_| true);
        refused(
            "clientConnection: {acceptContentTypes: application/vnd.kubernetes.protobuf}",
            "clientConnection.acceptContentTypes",
        );
        // profiles[]
        honoured("profiles: [{schedulerName: a}, {schedulerName: b}]", |r| {
            fw(r, 1).profile == "b"
        });
        refused(
            "profiles: [{schedulerName: a}, {schedulerName: a}]",
            "profiles[1].schedulerName",
        );
        honoured("profiles: [{schedulerName: a, percentageOfNodesToScore: 40}]", |r| {
            fw(r, 0).percentage_of_nodes_to_score == 40
        });
        let names = |v: &[wasmsched_core::framework::Enabled]| -> Vec<String> {
            v.iter().map(|e| e.plugin.name().to_owned()).collect()
        };
        honoured(
            "profiles: [{schedulerName: a, plugins: {multiPoint: {disabled: [{name: ImageLocality}]}}}]",
            |r| !names(&fw(r, 0).score).contains(&"ImageLocality".to_owned()),
        );
        for point in ["preFilter", "filter", "postFilter", "preScore", "score", "reserve"] {
            honoured(
                &format!("profiles: [{{schedulerName: a, plugins: {{{point}: {{disabled: [{{name: '*'}}]}}}}}}]"),
                |r| {
                    let f = fw(r, 0);
                    let set = match point {
                        "preFilter" => &f.pre_filter,
                        "filter" => &f.filter,
                        "postFilter" => &f.post_filter,
                        "preScore" => &f.pre_score,
                        "score" => &f.score,
                        _ => &f.reserve,
                    };
                    set.is_empty()
                },
            );
        }
        honoured(
            "profiles: [{schedulerName: a, plugins: {score: {enabled: [{name: ImageLocality, weight: 7}]}}}]",
            |r| {
                fw(r, 0)
                    .score
                    .iter()
                    .any(|e| e.plugin.name() == "ImageLocality" && e.weight == 7)
            },
        );
        // Points of the framework's plugins: an unknown plugin, or one that
        // does not extend the point, is refused; disabling them all is
        // honoured (of the built-ins, GangScheduling extends Permit).
        for point in ["permit", "preBind", "postBind"] {
            refused(
                &format!(
                    "profiles: [{{schedulerName: a, plugins: {{{point}: {{enabled: [{{name: NodeResourcesFit}}]}}}}}}]"
                ),
                "does not extend",
            );
            honoured(
                &format!("profiles: [{{schedulerName: a, plugins: {{{point}: {{disabled: [{{name: '*'}}]}}}}}}]"),
                |r| {
                    let f = fw(r, 0);
                    let emptied = match point {
                        "permit" => f.permit.is_empty(),
                        "preBind" => f.pre_bind.is_empty(),
                        _ => f.post_bind.is_empty(),
                    };
                    emptied && f.pre_bind.is_empty() && f.post_bind.is_empty()
                },
            );
        }
        // By default GangScheduling is the one Permit plugin.
        honoured("profiles: [{schedulerName: a}]", |r| {
            let f = fw(r, 0);
            f.permit.len() == 1 && f.permit[0].plugin.name() == "GangScheduling"
        });
        for point in ["preEnqueue", "queueSort", "bind"] {
            refused(
                &format!("profiles: [{{schedulerName: a, plugins: {{{point}: {{enabled: [{{name: Other}}]}}}}}}]"),
                &format!("profiles[0].plugins.{point}.enabled[0].name"),
            );
            refused(
                &format!("profiles: [{{schedulerName: a, plugins: {{{point}: {{disabled: [{{name: '*'}}]}}}}}}]"),
                &format!("profiles[0].plugins.{point}.disabled[0].name"),
            );
        }
        for point in ["placementGenerate", "placementScore"] {
            refused(
                &format!("profiles: [{{schedulerName: a, plugins: {{{point}: {{enabled: [{{name: X}}]}}}}}}]"),
                point,
            );
        }
        honoured(
            "profiles: [{schedulerName: a, pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated}}}]}]",
            |r| fw(r, 0).score.iter().any(|e| e.plugin.name() == "NodeResourcesFit"),
        );
        refused(
            "profiles: [{schedulerName: a, pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Nope}}}]}]",
            "NodeResourcesFit",
        );
        refused(
            "profiles: [{schedulerName: a, pluginConfig: [{name: Nope, args: {}}]}]",
            "Nope",
        );
    }
}
