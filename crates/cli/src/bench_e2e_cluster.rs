//! `wasmsched bench --e2e --master URL | --kubeconfig FILE`: the end-to-end
//! run on any cluster, as kube-scheduler's scheduler_perf does on its own.
//!
//! Everything the bench makes carries the label `wasmsched.dev/bench=ID`:
//! a namespace `wasmsched-bench-ID` (the pods, their events, the daemon's
//! lease), the PriorityClasses its pods name (`wasmsched-bench-ID-...`;
//! the API server computes a pod's priority from its class), fake nodes `wasmsched-bench-ID-node-NNNNN` made Ready through
//! their status subresource, each with a lease in `kube-node-lease` that
//! the bench renews (so a node lifecycle controller does not mark them
//! unreachable), and tainted `wasmsched.dev/bench=ID:NoSchedule` so that
//! no other scheduler places a pod on a node with no kubelet. The pods
//! select and tolerate those nodes only, and name a profile of their own
//! (the namespace's name), so a scheduler already serving the cluster does
//! not take them. At the end the bench checks that no node is
//! overcommitted and removes all it made, whether the run succeeded or
//! not.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use wasmsched_core::synthetic;

use crate::bench_e2e::{Cluster, Daemon, E2e, Place, Target, daemon_config, key, measure, overcommitted};

/// The label on everything the bench makes; its value is the run's id.
const LABEL: &str = "wasmsched.dev/bench";

/// Requests the bench has in flight at once (creating, renewing, deleting).
const IN_FLIGHT: usize = 32;

/// The daemon's lease, in the run's namespace.
const LEASE: &str = "wasmsched-bench";

/// How often the fake nodes' leases are renewed (a kubelet's default).
const RENEW_EVERY: Duration = Duration::from_secs(10);

/// Runs the bench on `target`: makes the nodes, runs the daemon, creates
/// the pods, measures, checks and removes what it made.
pub(crate) async fn run(e: &E2e, target: &Target) -> anyhow::Result<()> {
    let id = run_id();
    let ns = format!("wasmsched-bench-{id}");
    let connection = wasmsched_kube::ClientConnection::from_config(Some(&json!({"qps": 5000, "burst": 5000})))?;
    let client = crate::run::clients(
        target.kubeconfig.as_deref(),
        target.master.as_deref(),
        &format!("bench-{id}"),
        &connection,
    )
    .await?
    .main;
    let made = Made {
        client: client.clone(),
        ns: ns.clone(),
        id: id.clone(),
    };
    let renewer = tokio::spawn(made.clone().renew_node_leases());
    let outcome = made.bench(e, target).await;
    renewer.abort();
    let cleaned = made.remove().await;
    match (outcome, cleaned) {
        (Ok(mut summary), Ok(removed)) => {
            println!(
                "removed what the bench made: {} pods, {} events, {} nodes and their leases, the namespace {ns}",
                removed.pods, removed.events, removed.nodes
            );
            if e.json {
                summary["removed"] = json!({"pods": removed.pods, "events": removed.events, "nodes": removed.nodes});
                println!("{summary}");
            }
            Ok(())
        }
        (Err(e), Ok(_)) => Err(e),
        (Ok(_), Err(c)) => Err(c.context(format!("cannot remove what the bench made (label {LABEL}={id})"))),
        (Err(e), Err(c)) => Err(e.context(format!(
            "and what the bench made (label {LABEL}={id}) could not all be removed: {c:#}"
        ))),
    }
}

/// A run's id: short, and different for each run.
fn run_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut rng = wasmsched_core::rng::Rng::new(t.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32));
    format!("{:06x}", rng.next_u64() & 0xff_ffff)
}

/// What the bench makes in the cluster.
#[derive(Clone)]
struct Made {
    client: kube::Client,
    ns: String,
    id: String,
}

impl Made {
    fn selector(&self) -> ListParams {
        ListParams::default().labels(&format!("{LABEL}={}", self.id))
    }

    fn node_name(&self, synthetic: &str) -> String {
        format!("{}-{synthetic}", self.ns)
    }

    /// Makes the namespace and the nodes, runs the daemon and measures.
    async fn bench(&self, e: &E2e, target: &Target) -> anyhow::Result<serde_json::Value> {
        let labels = json!({LABEL: self.id});
        Api::<Namespace>::all(self.client.clone())
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": self.ns, "labels": labels}}))?,
            )
            .await
            .with_context(|| format!("cannot create the namespace {}", self.ns))?;
        let nodes: Vec<Node> = synthetic::nodes(e.nodes, e.seed)
            .into_iter()
            .map(|n| self.fake_node(n))
            .collect();
        futures::stream::iter(nodes.iter().map(|n| self.create_node(n)))
            .buffer_unordered(IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await?;
        let classes: Api<PriorityClass> = Api::all(self.client.clone());
        for pc in self.priority_classes() {
            let name = pc.metadata.name.clone().unwrap_or_default();
            classes
                .create(&PostParams::default(), &pc)
                .await
                .with_context(|| format!("cannot create the PriorityClass {name}"))?;
        }
        let pods: Vec<Pod> = synthetic::pods(e.pods, &self.ns, e.seed)
            .into_iter()
            .map(|p| self.bench_pod(p))
            .collect();
        let lease = (self.ns.as_str(), LEASE);
        let config = daemon_config(e, &self.ns, lease)?;
        let mut daemon = Daemon::start(e, &target.args(), &format!("bench-{}", self.id), &config)?;
        daemon.ready(e, &self.client, lease).await?;
        let mut cluster = Remote::watch(self.client.clone(), &self.ns, &self.selector()).await?;
        measure(
            e,
            &mut cluster,
            daemon,
            pods,
            &Place::Cluster {
                namespace: self.ns.clone(),
            },
        )
        .await
    }

    /// A synthetic node renamed for this run, labelled and tainted as the
    /// bench's, Ready.
    fn fake_node(&self, mut n: Node) -> Node {
        let name = self.node_name(n.metadata.name.as_deref().unwrap_or_default());
        let labels = n.metadata.labels.get_or_insert_default();
        labels.insert("kubernetes.io/hostname".into(), name.clone());
        labels.insert(LABEL.into(), self.id.clone());
        n.metadata.name = Some(name);
        n.spec.get_or_insert_default().taints.get_or_insert_default().push(
            serde_json::from_value(json!({"key": LABEL, "value": self.id, "effect": "NoSchedule"})).expect("a taint"),
        );
        n
    }

    /// Creates a node, then sets its status (an API server drops a
    /// node's status on create), Ready as of now, and its lease.
    async fn create_node(&self, n: &Node) -> anyhow::Result<()> {
        let name = n.metadata.name.clone().unwrap_or_default();
        let nodes: Api<Node> = Api::all(self.client.clone());
        let mut bare = n.clone();
        let mut status = serde_json::to_value(bare.status.take())?;
        nodes
            .create(&PostParams::default(), &bare)
            .await
            .with_context(|| format!("cannot create the node {name}"))?;
        let now = k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        status["conditions"] = json!([{
            "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "a node of wasmsched's bench (no kubelet)",
            "lastHeartbeatTime": now, "lastTransitionTime": now,
        }]);
        nodes
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
            .await
            .with_context(|| format!("cannot set the status of the node {name}"))?;
        let lease = json!({
            "metadata": {"name": name, "namespace": "kube-node-lease", "labels": {LABEL: self.id}},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": micro_now()},
        });
        Api::<Lease>::namespaced(self.client.clone(), "kube-node-lease")
            .create(&PostParams::default(), &serde_json::from_value(lease)?)
            .await
            .with_context(|| format!("cannot create the lease of the node {name}"))?;
        Ok(())
    }

    /// Renews the fake nodes' leases, as their kubelets would, until
    /// aborted.
    async fn renew_node_leases(self) {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
        loop {
            tokio::time::sleep(RENEW_EVERY).await;
            let Ok(list) = leases.list_metadata(&self.selector()).await else {
                continue;
            };
            let patch = Patch::Merge(json!({"spec": {"renewTime": micro_now()}}));
            futures::stream::iter(list.items.iter().filter_map(|l| l.metadata.name.clone()))
                .for_each_concurrent(IN_FLIGHT, |name| {
                    let (leases, patch) = (&leases, &patch);
                    async move {
                        let _ = leases.patch(&name, &PatchParams::default(), patch).await;
                    }
                })
                .await;
        }
    }

    /// The run's PriorityClasses: the synthetic ones, named for the run
    /// (classes are cluster-wide), labelled as all the bench makes.
    fn priority_classes(&self) -> Vec<PriorityClass> {
        synthetic::priority_classes()
            .into_iter()
            .filter_map(|mut pc| {
                let synthetic = pc["metadata"]["name"].as_str()?.to_owned();
                pc["metadata"]["name"] = json!(self.class_name(&synthetic));
                pc["metadata"]["labels"] = json!({LABEL: self.id});
                serde_json::from_value(pc).ok()
            })
            .collect()
    }

    fn class_name(&self, synthetic: &str) -> String {
        format!("{}-{synthetic}", self.ns)
    }

    /// A synthetic pod in the run's namespace that selects and tolerates
    /// the run's nodes only.
    fn bench_pod(&self, mut p: Pod) -> Pod {
        p.metadata.namespace = Some(self.ns.clone());
        p.metadata.uid = None;
        p.status = None;
        let spec = p.spec.get_or_insert_default();
        if let Some(class) = spec.priority_class_name.as_mut() {
            *class = self.class_name(class);
        }
        spec.node_selector
            .get_or_insert_default()
            .insert(LABEL.into(), self.id.clone());
        spec.tolerations.get_or_insert_default().push(
            serde_json::from_value(
                json!({"key": LABEL, "operator": "Equal", "value": self.id, "effect": "NoSchedule"}),
            )
            .expect("a toleration"),
        );
        p
    }

    /// Removes all the run made; says what.
    async fn remove(&self) -> anyhow::Result<Removed> {
        let now = DeleteParams::default().grace_period(0);
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let events: Api<Event> = Api::namespaced(self.client.clone(), &self.ns);
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node_leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), &self.ns);
        let pod_names = names(pods.list_metadata(&ListParams::default()).await)?;
        let event_names = names(events.list_metadata(&ListParams::default()).await)?;
        let node_names = names(nodes.list_metadata(&self.selector()).await)?;
        let lease_names = names(node_leases.list_metadata(&self.selector()).await)?;
        let counts = (pod_names.len(), event_names.len(), node_names.len());
        delete_all(&pods, pod_names, &now).await?;
        delete_all(&events, event_names, &now).await?;
        delete_all(&node_leases, lease_names, &now).await?;
        delete_all(&nodes, node_names, &now).await?;
        delete_all(&leases, vec![LEASE.to_owned()], &now).await?;
        let classes: Api<PriorityClass> = Api::all(self.client.clone());
        delete_all(&classes, names(classes.list_metadata(&self.selector()).await)?, &now).await?;
        delete_all(&Api::<Namespace>::all(self.client.clone()), vec![self.ns.clone()], &now).await?;
        let left = names(nodes.list_metadata(&self.selector()).await)?.len();
        anyhow::ensure!(left == 0, "{left} of the bench's nodes are still there");
        Ok(Removed {
            pods: counts.0,
            events: counts.1,
            nodes: counts.2,
        })
    }
}

/// What the bench removed at the end (beside its namespace).
struct Removed {
    pods: usize,
    events: usize,
    nodes: usize,
}

/// The names in a list.
fn names<K>(list: kube::Result<kube::core::ObjectList<K>>) -> anyhow::Result<Vec<String>>
where
    K: kube::Resource + Clone,
{
    Ok(list?.items.into_iter().filter_map(|o| o.meta().name.clone()).collect())
}

/// Deletes `names`, [`IN_FLIGHT`] at a time; one already gone is fine.
async fn delete_all<K>(api: &Api<K>, names: Vec<String>, params: &DeleteParams) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    futures::stream::iter(names)
        .map(|name| async move {
            match api.delete(&name, params).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
                Err(e) => Err(anyhow::Error::new(e).context(format!("cannot delete {name}"))),
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await
        .map(drop)
}

/// Creates a pod. Where the API server refuses it because the namespace's
/// service account does not exist yet (a controller makes it, where one
/// runs), waits for it: up to 60 s, then says what is missing.
async fn create_pod(pods: &Api<Pod>, pod: &Pod) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match pods.create(&PostParams::default(), pod).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 403 && s.message.contains("error looking up service account") => {
                anyhow::ensure!(
                    Instant::now() < deadline,
                    "the API server refuses the bench's pods for 60 s: {} (is a controller manager running?)",
                    s.message
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot create the pod {}", key(pod)))),
        }
    }
}

/// Now as a `MicroTime`.
fn micro_now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// The bench's pods in a cluster: created over HTTP, [`IN_FLIGHT`] at a
/// time, and watched.
struct Remote {
    pods: Api<Pod>,
    nodes: Api<Node>,
    node_selector: ListParams,
    events: Api<Event>,
    slots: Arc<tokio::sync::Semaphore>,
    creating: tokio::task::JoinSet<anyhow::Result<()>>,
    bound: tokio::sync::mpsc::UnboundedReceiver<(String, Instant)>,
    watch: tokio::task::JoinHandle<()>,
}

impl Remote {
    /// Starts watching the namespace's pods; returns once the watch has
    /// listed them.
    async fn watch(client: kube::Client, ns: &str, node_selector: &ListParams) -> anyhow::Result<Self> {
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        let (tx, bound) = tokio::sync::mpsc::unbounded_channel();
        let (listed_tx, listed) = tokio::sync::oneshot::channel();
        let stream = kube::runtime::watcher(pods.clone(), kube::runtime::watcher::Config::default());
        let watch = tokio::spawn(async move {
            let mut listed_tx = Some(listed_tx);
            let mut stream = std::pin::pin!(stream);
            while let Some(ev) = stream.next().await {
                use kube::runtime::watcher::Event as W;
                match ev {
                    Ok(W::Apply(p) | W::InitApply(p))
                        if p.spec
                            .as_ref()
                            .and_then(|s| s.node_name.as_deref())
                            .is_some_and(|n| !n.is_empty()) =>
                    {
                        let _ = tx.send((key(&p), Instant::now()));
                    }
                    Ok(W::InitDone) => {
                        if let Some(t) = listed_tx.take() {
                            let _ = t.send(());
                        }
                    }
                    _ => {}
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(30), listed)
            .await
            .context("the watch of the bench's pods did not list them in 30 s")?
            .context("the watch of the bench's pods ended")?;
        Ok(Self {
            pods,
            nodes: Api::all(client.clone()),
            node_selector: node_selector.clone(),
            events: Api::namespaced(client, ns),
            slots: Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT)),
            creating: tokio::task::JoinSet::new(),
            bound,
            watch,
        })
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

impl Cluster for Remote {
    async fn create(&mut self, pod: Pod, created: &mut HashMap<String, Instant>) -> anyhow::Result<()> {
        let slot = self.slots.clone().acquire_owned().await?;
        // A failed creation ends the run (the first one found).
        while let Some(done) = self.creating.try_join_next() {
            done??;
        }
        created.insert(key(&pod), Instant::now());
        let pods = self.pods.clone();
        self.creating.spawn(async move {
            let _slot = slot;
            create_pod(&pods, &pod).await
        });
        Ok(())
    }

    async fn created_all(&mut self) -> anyhow::Result<()> {
        while let Some(done) = self.creating.join_next().await {
            done??;
        }
        Ok(())
    }

    fn bound(&mut self, bound_at: &mut HashMap<String, Instant>) {
        while let Ok((k, at)) = self.bound.try_recv() {
            bound_at.entry(k).or_insert(at);
        }
    }

    async fn scheduled_events(&self) -> anyhow::Result<usize> {
        let list = self.events.list(&ListParams::default()).await?;
        Ok(list
            .items
            .iter()
            .filter(|e| e.reason.as_deref() == Some("Scheduled"))
            .count())
    }

    async fn overcommitted(&self) -> anyhow::Result<Vec<String>> {
        let nodes = self.nodes.list(&self.node_selector).await?.items;
        let pods = self.pods.list(&ListParams::default()).await?.items;
        overcommitted(&nodes, &pods)
    }
}
