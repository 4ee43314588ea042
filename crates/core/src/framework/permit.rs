//! Permit, and what outlives a scheduling cycle: the pods waiting at
//! Permit ([`WaitingPods`], kube-scheduler's `waitingPodsMap`) and the
//! per-cycle data plugins hand from PreFilter to PostBind
//! ([`PluginData`]).
//!
//! A pod that a Permit plugin told to wait is assumed on its node (it holds
//! the node's resources) and handed to the binding cycle, which waits for
//! [`WaitingPods::outcome`]: allowed when every plugin it waits for has
//! allowed it, rejected at the first rejection or at a plugin's deadline.
//! Nothing here blocks: the scheduling thread registers and allows, the
//! binding cycle is woken through the waker it registered.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;

use super::{Code, CycleState, Framework, Status};
use crate::pod::PodInfo;

/// The longest a Permit plugin may hold a pod (kube-scheduler's
/// `maxTimeout`).
pub const MAX_PERMIT_WAIT: Duration = Duration::from_secs(15 * 60);

/// Bytes of per-cycle data one plugin may keep for one pod's cycle.
pub const MAX_PLUGIN_DATA_BYTES: usize = 1 << 20;

/// What a Permit plugin answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permit {
    /// The pod may be bound (as far as this plugin is concerned).
    Allow,
    /// It may not: its Reserve is undone and the attempt fails with this
    /// status (Unschedulable, or an error).
    Reject(Status),
    /// Hold it, at most this long, until the plugin allows or rejects it
    /// through [`WaitingPods`].
    Wait(Duration),
}

/// What the Permit plugins decided together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermitOutcome {
    /// Every plugin allowed the pod.
    Allowed,
    /// One rejected it (the status names the plugin).
    Rejected(Status),
    /// Some asked it to wait, none rejected it: it is in [`WaitingPods`].
    Waiting,
}

/// Data plugins keep for one pod's cycle, from PreFilter through the
/// binding cycle (PreBind, PostBind, Unreserve): per plugin, bytes by key,
/// at most [`MAX_PLUGIN_DATA_BYTES`] per plugin.
#[derive(Debug, Default)]
pub struct PluginData {
    by_plugin: Mutex<FxHashMap<String, OnePlugin>>,
}

/// One plugin's per-cycle data: its bytes, and the values by key.
type OnePlugin = (usize, BTreeMap<String, Vec<u8>>);

impl PluginData {
    /// The value `plugin` stored under `key`.
    pub fn get(&self, plugin: &str, key: &str) -> Option<Vec<u8>> {
        let m = self.by_plugin.lock().unwrap_or_else(|p| p.into_inner());
        m.get(plugin).and_then(|(_, kv)| kv.get(key).cloned())
    }

    /// Stores `value` under `key` for `plugin`; an error past the bound.
    pub fn set(&self, plugin: &str, key: &str, value: Vec<u8>) -> Result<(), String> {
        let mut m = self.by_plugin.lock().unwrap_or_else(|p| p.into_inner());
        let (used, kv) = m.entry(plugin.to_owned()).or_default();
        let old = kv.get(key).map_or(0, |v| key.len() + v.len());
        let new = key.len() + value.len();
        let total = *used - old + new;
        if total > MAX_PLUGIN_DATA_BYTES {
            return Err(format!(
                "the cycle's state would hold {total} bytes, over its limit of {MAX_PLUGIN_DATA_BYTES}"
            ));
        }
        *used = total;
        kv.insert(key.to_owned(), value);
        Ok(())
    }
}

/// One pod waiting at Permit, as plugins see it.
#[derive(Debug, Clone)]
pub struct WaitingPod {
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// The node it is assumed on.
    pub node: String,
    /// The plugins it still waits for.
    pub plugins: Vec<String>,
    /// How long it has waited.
    pub waited: Duration,
}

/// Wakes the binding cycle waiting for a pod's outcome.
type Waker = Box<dyn FnOnce() + Send>;

struct Entry {
    pod: Arc<PodInfo>,
    node: String,
    since: Instant,
    /// Plugin → its deadline.
    pending: BTreeMap<String, Instant>,
    /// Set once allowed (`Ok`) or rejected.
    outcome: Option<Result<(), Status>>,
    waker: Option<Waker>,
}

/// The pods waiting at Permit, by UID (kube-scheduler's `waitingPodsMap`),
/// shared by the scheduling thread, the binding cycles and the plugins'
/// host calls.
#[derive(Default)]
pub struct WaitingPods {
    pods: Mutex<FxHashMap<String, Entry>>,
}

impl std::fmt::Debug for WaitingPods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitingPods").field("len", &self.len()).finish()
    }
}

impl WaitingPods {
    fn lock(&self) -> std::sync::MutexGuard<'_, FxHashMap<String, Entry>> {
        self.pods.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds `pod` on `node` for the plugins of `waits` (each with its
    /// timeout, at most [`MAX_PERMIT_WAIT`]).
    pub fn add(&self, pod: Arc<PodInfo>, node: &str, waits: &[(String, Duration)], now: Instant) {
        let pending = waits
            .iter()
            .map(|(p, d)| (p.clone(), now + (*d).min(MAX_PERMIT_WAIT)))
            .collect();
        let entry = Entry {
            pod: pod.clone(),
            node: node.to_owned(),
            since: now,
            pending,
            outcome: None,
            waker: None,
        };
        self.lock().insert(pod.uid.clone(), entry);
    }

    /// Pods waiting (their outcome not decided yet).
    pub fn len(&self) -> usize {
        self.lock().values().filter(|e| e.outcome.is_none()).count()
    }

    /// Whether no pod waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pods waiting now, longest waiting first.
    pub fn list(&self, now: Instant) -> Vec<WaitingPod> {
        let m = self.lock();
        let mut out: Vec<(Instant, WaitingPod)> = m
            .values()
            .filter(|e| e.outcome.is_none())
            .map(|e| {
                (
                    e.since,
                    WaitingPod {
                        pod: e.pod.clone(),
                        node: e.node.clone(),
                        plugins: e.pending.keys().cloned().collect(),
                        waited: now.saturating_duration_since(e.since),
                    },
                )
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.pod.key.cmp(&b.1.pod.key)));
        out.into_iter().map(|(_, w)| w).collect()
    }

    /// `plugin` allows the pod of `uid`; false when the pod does not wait
    /// for it. The pod is allowed once no plugin is left.
    pub fn allow(&self, uid: &str, plugin: &str) -> bool {
        let waker = {
            let mut m = self.lock();
            let Some(e) = m.get_mut(uid) else { return false };
            if e.outcome.is_some() || e.pending.remove(plugin).is_none() {
                return false;
            }
            if !e.pending.is_empty() {
                return true;
            }
            e.outcome = Some(Ok(()));
            e.waker.take()
        };
        if let Some(w) = waker {
            w();
        }
        true
    }

    /// `plugin` rejects the pod of `uid` with `message`; false when the pod
    /// does not wait for it (or is decided already). An empty `plugin`
    /// rejects whatever the pod waits for (the pod was deleted).
    pub fn reject(&self, uid: &str, plugin: &str, message: &str) -> bool {
        let waker = {
            let mut m = self.lock();
            let Some(e) = m.get_mut(uid) else { return false };
            if e.outcome.is_some() || (!plugin.is_empty() && !e.pending.contains_key(plugin)) {
                return false;
            }
            let by = if plugin.is_empty() {
                e.pending.keys().next().cloned().unwrap_or_default()
            } else {
                plugin.to_owned()
            };
            e.outcome = Some(Err(Status::unschedulable(message.to_owned()).with_plugin(by)));
            e.waker.take()
        };
        if let Some(w) = waker {
            w();
        }
        true
    }

    /// Rejects the pods whose wait for some plugin ended by `now`, in
    /// kube-scheduler's words (`rejected due to timeout after waiting 5s at
    /// plugin Coscheduling`); returns their UIDs.
    pub fn expire(&self, now: Instant) -> Vec<String> {
        let expired: Vec<(String, String, Duration)> = {
            let m = self.lock();
            m.iter()
                .filter(|(_, e)| e.outcome.is_none())
                .filter_map(|(uid, e)| {
                    let (plugin, at) = e.pending.iter().min_by_key(|(_, at)| **at)?;
                    (*at <= now).then(|| (uid.clone(), plugin.clone(), at.saturating_duration_since(e.since)))
                })
                .collect()
        };
        expired
            .into_iter()
            .filter(|(uid, plugin, waited)| {
                let msg = format!(
                    "rejected due to timeout after waiting {} at plugin {plugin}",
                    go_duration(*waited)
                );
                self.reject(uid, plugin, &msg)
            })
            .map(|(uid, _, _)| uid)
            .collect()
    }

    /// The earliest deadline of the pod of `uid`, while it waits.
    pub fn deadline(&self, uid: &str) -> Option<Instant> {
        let m = self.lock();
        let e = m.get(uid)?;
        if e.outcome.is_some() {
            return None;
        }
        e.pending.values().min().copied()
    }

    /// The pod's outcome once decided (and forgets it), else registers
    /// `waker`, called once when it is decided, and answers `None`. A pod
    /// that is not held at all is allowed.
    pub fn outcome(&self, uid: &str, waker: impl FnOnce() + Send + 'static) -> Option<Result<(), Status>> {
        let mut m = self.lock();
        let Some(e) = m.get_mut(uid) else {
            return Some(Ok(()));
        };
        match e.outcome.clone() {
            Some(o) => {
                m.remove(uid);
                Some(o)
            }
            None => {
                e.waker = Some(Box::new(waker));
                None
            }
        }
    }

    /// Forgets the pod of `uid` (its binding cycle is over).
    pub fn remove(&self, uid: &str) {
        self.lock().remove(uid);
    }
}

/// Go's `time.Duration.String` for whole milliseconds and up (`5s`,
/// `1m30s`, `1.5s`, `250ms`).
fn go_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let (h, m) = (ms / 3_600_000, ms / 60_000 % 60);
    let s = (ms % 60_000) as f64 / 1000.0;
    let secs = format!("{s}s");
    match (h, m) {
        (0, 0) => secs,
        (0, m) => format!("{m}m{secs}"),
        (h, m) => format!("{h}h{m}m{secs}"),
    }
}

impl Framework {
    /// Runs the Permit plugins, as kube-scheduler's `RunPermitPlugins`: the
    /// first rejection (or error) wins; otherwise, when some plugins asked
    /// to wait, the pod is added to `waiting` with their timeouts (which
    /// [`WaitingPods::add`] caps at [`MAX_PERMIT_WAIT`]).
    pub fn run_permit(
        &self,
        state: &mut CycleState,
        pod: &Arc<PodInfo>,
        node: &str,
        waiting: &WaitingPods,
        now: Instant,
    ) -> PermitOutcome {
        let mut waits: Vec<(String, Duration)> = Vec::new();
        for e in &self.permit {
            let t = state.clock();
            let verdict = e.plugin.permit(state, pod, node);
            let code = match &verdict {
                Permit::Allow => Code::Success,
                Permit::Reject(st) => st.code(),
                Permit::Wait(_) => Code::Wait,
            };
            state.record(&*e.plugin, "Permit", code, t);
            match verdict {
                Permit::Allow => {}
                Permit::Wait(d) => waits.push((e.plugin.name().to_owned(), d)),
                Permit::Reject(st) if st.is_rejected() => {
                    return PermitOutcome::Rejected(st.with_plugin(e.plugin.name().to_owned()));
                }
                Permit::Reject(st) => {
                    return PermitOutcome::Rejected(
                        Status::error(format!("running Permit plugin {:?}: {}", e.plugin.name(), st.message()))
                            .with_plugin(e.plugin.name().to_owned()),
                    );
                }
            }
        }
        if waits.is_empty() {
            return PermitOutcome::Allowed;
        }
        waiting.add(pod.clone(), node, &waits, now);
        PermitOutcome::Waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> Arc<PodInfo> {
        let p: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"containers": [{"name": "c", "image": "i"}]}
        }))
        .unwrap();
        Arc::new(PodInfo::from_pod(&p).unwrap())
    }

    /// A pod waits for every plugin that asked; it is allowed when the last
    /// allows, and only a plugin it waits for counts.
    #[test]
    fn a_pod_is_allowed_when_every_plugin_it_waits_for_allows_it() {
        let w = WaitingPods::default();
        let now = Instant::now();
        let waits = [
            ("A".to_owned(), Duration::from_secs(5)),
            ("B".to_owned(), Duration::from_secs(9)),
        ];
        w.add(pod("p"), "n1", &waits, now);
        assert_eq!(w.list(now)[0].plugins, ["A", "B"]);
        assert!(!w.allow("uid-p", "Other"), "a plugin it does not wait for");
        let woken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = woken.clone();
        assert!(
            w.outcome("uid-p", move || flag.store(true, std::sync::atomic::Ordering::SeqCst))
                .is_none()
        );
        assert!(w.allow("uid-p", "A"));
        assert!(!woken.load(std::sync::atomic::Ordering::SeqCst), "B still holds it");
        assert!(w.allow("uid-p", "B"));
        assert!(woken.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(w.outcome("uid-p", || {}), Some(Ok(())));
        assert!(w.is_empty());
    }

    /// A deadline rejects the pod in kube-scheduler's words; a rejection is
    /// final.
    #[test]
    fn a_deadline_rejects_the_pod() {
        let w = WaitingPods::default();
        let now = Instant::now();
        w.add(pod("p"), "n1", &[("Gang".to_owned(), Duration::from_secs(5))], now);
        assert!(w.expire(now + Duration::from_secs(4)).is_empty());
        assert_eq!(w.expire(now + Duration::from_secs(5)), ["uid-p"]);
        assert!(!w.allow("uid-p", "Gang"), "decided already");
        let out = w.outcome("uid-p", || {}).unwrap().unwrap_err();
        assert_eq!(out.message(), "rejected due to timeout after waiting 5s at plugin Gang");
        assert_eq!(out.plugin(), Some("Gang"));
        assert_eq!(out.code(), Code::Unschedulable);
    }

    #[test]
    fn durations_read_as_go_prints_them() {
        assert_eq!(go_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
    }

    /// Per-cycle data is bounded per plugin.
    #[test]
    fn plugin_data_is_bounded() {
        let d = PluginData::default();
        d.set("p", "k", vec![1; 10]).unwrap();
        assert_eq!(d.get("p", "k"), Some(vec![1; 10]));
        assert_eq!(d.get("q", "k"), None);
        assert!(d.set("p", "big", vec![0; MAX_PLUGIN_DATA_BYTES]).is_err());
        d.set("p", "k", vec![2; 100]).unwrap();
        assert_eq!(d.get("p", "k").unwrap().len(), 100);
    }
}
