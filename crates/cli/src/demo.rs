//! `wasmsched demo`: the production path on a machine with no cluster. Starts
//! the API server double with the bundled example cluster, runs the real
//! daemon against it over HTTP, creates the pending pods, and prints where
//! each went and why.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, PostParams};
use wasmsched_apiserver_sim::{ApiServer, Config as SimConfig};
use wasmsched_core::fixture::{Objects, parse_objects};
use wasmsched_kube::{LeaderElection, Options};

use crate::simulate::EXAMPLE_CLUSTER;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Nodes and pods to use instead of the bundled example cluster.
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// Scheduler configuration (KubeSchedulerConfiguration YAML).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Directory of WebAssembly plugins to run beside the built-ins.
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// Seconds to wait for every pod to be bound or found unschedulable.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Keep the API server and the scheduler running afterwards (for
    /// kubectl and the web view) until Ctrl-C.
    #[arg(long)]
    keep: bool,
    /// Address of the scheduler's admin port, whose `/ui` is the web view:
    /// a loopback address, served as plain HTTP without authentication
    /// (default: a free port on 127.0.0.1).
    #[arg(long)]
    admin_address: Option<std::net::SocketAddr>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let text = match &args.cluster {
        Some(p) => crate::read_file(p)?,
        None => EXAMPLE_CLUSTER.to_owned(),
    };
    let objs = parse_objects(&text).context("cannot read the cluster")?;
    let mut config = crate::load_config(args.config.as_deref())?;
    crate::plugin::refuse_shadow(&config, "demo")?;
    let (registry, plugins) = crate::plugin::registry(
        &mut config,
        args.plugins.as_deref(),
        0,
        crate::plugin::FirstScan::Now,
        wasmsched_wasm::Tiering::Off,
        &[],
    )?;
    let ours: Vec<String> = config.profiles.iter().map(|p| p.scheduler_name.clone()).collect();
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        // The cluster as it stands: nodes and the pods already running.
        let server = ApiServer::start("127.0.0.1:0".parse()?, SimConfig::default()).await?;
        let (bound, pending): (Vec<Pod>, Vec<Pod>) = objs
            .pods
            .iter()
            .cloned()
            .partition(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some());
        server.load(&Objects { nodes: objs.nodes.clone(), pods: bound, namespaces: objs.namespaces.clone(), workloads: objs.workloads.clone(), storage: objs.storage.clone(), priority_classes: objs.priority_classes.clone(), claim_templates: objs.claim_templates.clone(), pod_groups: objs.pod_groups.clone(), ignored: Vec::new() })?;
        println!("API server double on {} ({} nodes)", server.url(), objs.nodes.len());
        let client = kube::Client::try_from(kube::Config::new(server.url().parse()?))?;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let admin = match args.admin_address {
            Some(a) => a,
            None => std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?,
        };
        println!("web view: http://{admin}/ui");
        let opts = Options {
            config,
            registry,
            plugins,
            seed: 0,
            identity: crate::run::default_identity(),
            leader_election: LeaderElection::default(),
            bind_concurrency: 16,
            api_timeout: Duration::from_secs(10),
            admin: Some(wasmsched_kube::AdminOptions::loopback(admin)),
            review_client: None,
            lease_client: None,
            events_client: None,
            drain_timeout: std::time::Duration::from_secs(10),
            stall_timeout: std::time::Duration::from_secs(30),
            null_placement: false,
            shadow: None,
        };
        let daemon = tokio::spawn(wasmsched_kube::run(client.clone(), opts, async move {
            let _ = stop_rx.await;
        }));
        // New pods arrive, as `kubectl apply` would create them.
        let t0 = Instant::now();
        for p in &pending {
            let ns = p.metadata.namespace.clone().unwrap_or_else(|| "default".into());
            let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
            let mut p = p.clone();
            p.metadata.resource_version = None;
            p.metadata.uid = None;
            api.create(&PostParams::default(), &p).await.with_context(|| format!("creating pod {ns}/{}", p.metadata.name.as_deref().unwrap_or("")))?;
        }
        println!("created {} pending pods; scheduling with profiles {ours:?}\n", pending.len());
        let is_ours = |p: &Pod| ours.iter().any(|o| p.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()) == Some(o.as_str()));
        let gates = |p: &Pod| -> Vec<String> {
            p.spec.as_ref().and_then(|s| s.scheduling_gates.as_ref()).into_iter().flatten().map(|g| g.name.clone()).collect()
        };
        let settled = |p: &Pod| {
            p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
                || !gates(p).is_empty()
                || p.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|cs| {
                    cs.iter().any(|c| c.type_ == "PodScheduled" && c.status == "False")
                })
        };
        let deadline = Instant::now() + Duration::from_secs(args.timeout);
        loop {
            let pods = server.list::<Pod>();
            let waiting = pods.iter().filter(|p| is_ours(p) && !settled(p)).count();
            if waiting == 0 || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let took = t0.elapsed();
        let events = server.list::<Event>();
        println!("{:<26} {:<11} RESULT", "POD", "NODE");
        let mut bound_n = 0;
        for p in &pending {
            let ns = p.metadata.namespace.as_deref().unwrap_or("default");
            let name = p.metadata.name.as_deref().unwrap_or_default();
            let now = server.get::<Pod>(ns, name).unwrap_or_else(|| p.clone());
            let node = now.spec.as_ref().and_then(|s| s.node_name.clone());
            let result = if !is_ours(&now) {
                format!("left alone (schedulerName {})", now.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()).unwrap_or("default-scheduler"))
            } else if node.is_some() {
                bound_n += 1;
                let devices = allocated_devices(&server, &now);
                if devices.is_empty() { "bound".to_owned() } else { format!("bound with devices {}", devices.join(", ")) }
            } else if !gates(&now).is_empty() {
                format!("gated: waiting for scheduling gates: [{}]", gates(&now).join(" "))
            } else {
                now.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"))
                    .and_then(|c| c.message.clone())
                    .map_or("still pending".into(), |m| format!("unschedulable: {m}"))
            };
            println!("{:<26} {:<11} {result}", format!("{ns}/{name}"), node.as_deref().unwrap_or("-"));
        }
        // Groups that state spreading or anti-affinity: where they went, per node and zone.
        let mut groups: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for p in &pending {
            let spec = p.spec.as_ref();
            let constrained = spec.is_some_and(|s| {
                s.topology_spread_constraints.as_ref().is_some_and(|c| !c.is_empty())
                    || s.affinity.as_ref().is_some_and(|a| a.pod_anti_affinity.is_some() || a.pod_affinity.is_some())
            });
            let app = p.metadata.labels.as_ref().and_then(|l| l.get("app"));
            let (Some(app), true) = (app, constrained) else { continue };
            let ns = p.metadata.namespace.as_deref().unwrap_or("default");
            let now = server.get::<Pod>(ns, p.metadata.name.as_deref().unwrap_or_default());
            if let Some(node) = now.and_then(|n| n.spec.and_then(|s| s.node_name)) {
                groups.entry(format!("{ns}/{app}")).or_default().push(node);
            }
        }
        for (group, nodes) in &groups {
            let mut zones: std::collections::BTreeMap<String, usize> = Default::default();
            for n in nodes {
                let zone = objs
                    .nodes
                    .iter()
                    .find(|x| x.metadata.name.as_deref() == Some(n.as_str()))
                    .and_then(|x| x.metadata.labels.as_ref()?.get("topology.kubernetes.io/zone").cloned())
                    .unwrap_or_else(|| "-".into());
                *zones.entry(zone).or_default() += 1;
            }
            let distinct: std::collections::BTreeSet<&String> = nodes.iter().collect();
            let per_zone: Vec<String> = zones.iter().map(|(z, c)| format!("{z} {c}")).collect();
            println!("\n{group}: {} pods on {} nodes; per zone: {}", nodes.len(), distinct.len(), per_zone.join(", "));
        }
        // PodGroups: how many of each group's pods are bound, and its
        // PodGroupScheduled condition as the scheduler set it.
        for g in &objs.pod_groups {
            let ns = g.metadata.namespace.as_deref().unwrap_or("default");
            let name = g.metadata.name.as_deref().unwrap_or_default();
            let members: Vec<Pod> = server
                .list::<Pod>()
                .into_iter()
                .filter(|p| {
                    p.metadata.namespace.as_deref() == Some(ns)
                        && p.spec.as_ref().and_then(|s| s.scheduling_group.as_ref()).and_then(|s| s.pod_group_name.as_deref()) == Some(name)
                })
                .collect();
            let bound = members.iter().filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()).count();
            let condition = server
                .get::<k8s_openapi::api::scheduling::v1alpha2::PodGroup>(ns, name)
                .and_then(|g| g.status?.conditions?.into_iter().find(|c| c.type_ == "PodGroupScheduled"))
                .map_or("no condition yet".to_owned(), |c| format!("PodGroupScheduled {} ({})", c.status, c.reason));
            let policy = match &g.spec.scheduling_policy.gang {
                Some(gang) => format!("gang, minCount {}", gang.min_count),
                None => "basic".into(),
            };
            println!("\npod group {ns}/{name} ({policy}): {bound} of {} pods bound; {condition}", members.len());
        }
        let scheduled = events.iter().filter(|e| e.reason.as_deref() == Some("Scheduled")).count();
        let failed = events.iter().filter(|e| e.reason.as_deref() == Some("FailedScheduling")).count();
        println!(
            "\n{bound_n} pods bound in {:.2} s; events: {scheduled} Scheduled, {failed} FailedScheduling. Bindings went through POST pods/NAME/binding over HTTP.",
            took.as_secs_f64()
        );
        if args.keep {
            println!(
                "the API server and the scheduler keep running: kubectl --server {} get pods -A -o wide, the web view at http://{admin}/ui (Ctrl-C to stop)",
                server.url()
            );
            tokio::signal::ctrl_c().await?;
        }
        let _ = stop_tx.send(());
        daemon.await??;
        server.shutdown().await;
        Ok(())
    })
}

/// The devices allocated to a pod's claims, as the API shows them:
/// `claim: request=driver/pool/device`.
fn allocated_devices(server: &ApiServer, pod: &Pod) -> Vec<String> {
    use k8s_openapi::api::resource::v1::ResourceClaim;
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let generated = pod.status.as_ref().and_then(|s| s.resource_claim_statuses.as_ref());
    let names = pod
        .spec
        .iter()
        .flat_map(|s| s.resource_claims.iter().flatten())
        .filter_map(|c| {
            c.resource_claim_name.clone().or_else(|| {
                generated?
                    .iter()
                    .find(|g| g.name == c.name)?
                    .resource_claim_name
                    .clone()
            })
        });
    names
        .filter_map(|n| server.get::<ResourceClaim>(ns, &n))
        .flat_map(|c| {
            let name = c.metadata.name.clone().unwrap_or_default();
            let allocation = c.status.and_then(|s| s.allocation);
            allocation
                .iter()
                .flat_map(|a| wasmsched_core::dra::devices::describe(&name, a))
                .collect::<Vec<_>>()
        })
        .collect()
}
