//! The pending-pod queue, as kube-scheduler's: an *active* queue ordered by
//! priority then age, a *backoff* queue of pods waiting out an exponential
//! backoff after a failed attempt, and an *unschedulable* set of pods that
//! fit nowhere and wait for the cluster to change.
//!
//! Time is passed in (`now`), so the queue is pure and testable.
//!
//! Entries are keyed by `namespace/name` but belong to one pod UID: a pod
//! deleted and re-created under the same name is a new entry, and the
//! outcome of the old one's attempt (given with its UID) leaves the new one
//! alone. Which cluster changes move an unschedulable pod is decided by the
//! caller from the plugins that rejected it ([`SchedulingQueue::move_matching`]).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::pod::{PodInfo, PodKey};

/// How long a pod stays unschedulable before it is retried anyway
/// (kube-scheduler's `podMaxInUnschedulablePodsDuration`).
pub const UNSCHEDULABLE_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// A pod in the queue with its scheduling history.
#[derive(Debug, Clone)]
pub struct QueuedPod {
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// Scheduling attempts so far (incremented when popped).
    pub attempts: u32,
    /// When it entered the queue, or its last attempt ended.
    pub timestamp: Instant,
    /// When it first entered the queue (for latency metrics).
    pub initial: Instant,
    /// The scheduling cycle in which it was popped last.
    pub cycle: u64,
}

/// Where a pod is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// Waiting to be scheduled.
    Active,
    /// Waiting out its backoff.
    Backoff,
    /// Fits nowhere; waiting for a cluster change.
    Unschedulable,
    /// Popped; its cycle (or binding) is in progress.
    InFlight,
}

#[derive(Debug)]
struct Entry {
    qp: QueuedPod,
    loc: Location,
    generation: u64,
    deleted_in_flight: bool,
    /// Plugins that rejected the pod in its last attempt.
    rejectors: Vec<String>,
}

#[derive(Debug, PartialEq, Eq)]
struct ActiveKey {
    priority: i32,
    timestamp: Instant,
    seq: u64,
    key: PodKey,
    generation: u64,
}

impl Ord for ActiveKey {
    fn cmp(&self, o: &Self) -> Ordering {
        // Max-heap: higher priority first, then older, then insertion order.
        self.priority
            .cmp(&o.priority)
            .then_with(|| o.timestamp.cmp(&self.timestamp))
            .then_with(|| o.seq.cmp(&self.seq))
    }
}

impl PartialOrd for ActiveKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

#[derive(Debug, PartialEq, Eq)]
struct BackoffKey {
    expiry: Instant,
    seq: u64,
    key: PodKey,
    generation: u64,
}

impl Ord for BackoffKey {
    fn cmp(&self, o: &Self) -> Ordering {
        // Min-heap on expiry.
        o.expiry.cmp(&self.expiry).then_with(|| o.seq.cmp(&self.seq))
    }
}

impl PartialOrd for BackoffKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// The scheduling queue.
#[derive(Debug)]
pub struct SchedulingQueue {
    entries: HashMap<PodKey, Entry>,
    active: BinaryHeap<ActiveKey>,
    backoff: BinaryHeap<BackoffKey>,
    /// Pods at `Location::Unschedulable`.
    unschedulable: HashSet<PodKey>,
    /// Unschedulable pods per plugin that rejected them, and those no
    /// plugin rejected: a cluster change no rejector registered for skips
    /// the scan of the unschedulable pods altogether.
    rejected_by: HashMap<String, usize>,
    unrejected: usize,
    /// When pods were parked unschedulable, oldest first (timestamps only
    /// grow, so arrival order is time order); stale entries are skipped.
    parked: VecDeque<(Instant, PodKey, u64)>,
    initial_backoff: Duration,
    max_backoff: Duration,
    seq: u64,
    scheduling_cycle: u64,
    move_request_cycle: u64,
    counts: [usize; 4],
}

/// Counts an unschedulable pod in (or out of) the per-rejector tallies.
fn tally(by: &mut HashMap<String, usize>, unrejected: &mut usize, rejectors: &[String], add: bool) {
    if rejectors.is_empty() {
        if add {
            *unrejected += 1;
        } else {
            *unrejected -= 1;
        }
        return;
    }
    for r in rejectors {
        if add {
            *by.entry(r.clone()).or_insert(0) += 1;
        } else if let Some(n) = by.get_mut(r) {
            *n -= 1;
            if *n == 0 {
                by.remove(r);
            }
        }
    }
}

fn slot(loc: Location) -> usize {
    match loc {
        Location::Active => 0,
        Location::Backoff => 1,
        Location::Unschedulable => 2,
        Location::InFlight => 3,
    }
}

impl SchedulingQueue {
    /// A queue with kube-scheduler's backoff settings.
    pub fn new(initial_backoff: Duration, max_backoff: Duration) -> Self {
        SchedulingQueue {
            rejected_by: HashMap::new(),
            unrejected: 0,
            entries: HashMap::new(),
            active: BinaryHeap::new(),
            backoff: BinaryHeap::new(),
            unschedulable: HashSet::new(),
            parked: VecDeque::new(),
            initial_backoff,
            max_backoff,
            seq: 0,
            scheduling_cycle: 0,
            move_request_cycle: 0,
            counts: [0; 4],
        }
    }

    /// The backoff after `attempts` attempts: initial, doubling, capped.
    pub fn backoff_duration(&self, attempts: u32) -> Duration {
        let mut d = self.initial_backoff;
        for _ in 1..attempts {
            d = d.saturating_mul(2);
            if d >= self.max_backoff {
                return self.max_backoff;
            }
        }
        d.min(self.max_backoff)
    }

    fn place(&mut self, key: &str, loc: Location, now: Instant) {
        self.seq += 1;
        let seq = self.seq;
        let expiry_base = self.entries.get(key).map(|e| (e.qp.timestamp, e.qp.attempts));
        let backoff = expiry_base.map(|(t, a)| t + self.backoff_duration(a));
        let e = self.entries.get_mut(key).expect("entry exists");
        self.counts[slot(e.loc)] -= 1;
        self.counts[slot(loc)] += 1;
        if e.loc == Location::Unschedulable && loc != Location::Unschedulable {
            self.unschedulable.remove(key);
            tally(&mut self.rejected_by, &mut self.unrejected, &e.rejectors, false);
        }
        if loc == Location::Unschedulable && e.loc != Location::Unschedulable {
            tally(&mut self.rejected_by, &mut self.unrejected, &e.rejectors, true);
        }
        e.loc = loc;
        e.generation += 1;
        let generation = e.generation;
        match loc {
            Location::Active => self.active.push(ActiveKey {
                priority: e.qp.pod.priority,
                timestamp: e.qp.timestamp,
                seq,
                key: key.to_owned(),
                generation,
            }),
            Location::Backoff => self.backoff.push(BackoffKey {
                expiry: backoff.unwrap_or(now),
                seq,
                key: key.to_owned(),
                generation,
            }),
            Location::Unschedulable => {
                self.unschedulable.insert(key.to_owned());
                self.parked.push_back((e.qp.timestamp, key.to_owned(), generation));
            }
            Location::InFlight => {}
        }
        self.compact();
    }

    fn remove_entry(&mut self, key: &str) {
        if let Some(e) = self.entries.remove(key) {
            self.counts[slot(e.loc)] -= 1;
            if e.loc == Location::Unschedulable {
                self.unschedulable.remove(key);
                tally(&mut self.rejected_by, &mut self.unrejected, &e.rejectors, false);
            }
        }
        self.compact();
    }

    /// Drops stale heap entries (of pods that moved or left) once they
    /// outnumber the live ones, so memory follows the pods queued, not the
    /// pods ever seen: a standby replica pops nothing, and without this its
    /// heaps would keep one entry per pod the leader bound.
    fn compact(&mut self) {
        let entries = &self.entries;
        let live = |key: &str, generation: u64, loc: Location| {
            entries
                .get(key)
                .is_some_and(|e| e.generation == generation && e.loc == loc)
        };
        if self.active.len() > 2 * self.counts[slot(Location::Active)] + 64 {
            self.active.retain(|k| live(&k.key, k.generation, Location::Active));
        }
        if self.backoff.len() > 2 * self.counts[slot(Location::Backoff)] + 64 {
            self.backoff.retain(|k| live(&k.key, k.generation, Location::Backoff));
        }
        if self.parked.len() > 2 * self.counts[slot(Location::Unschedulable)] + 64 {
            self.parked.retain(|(_, k, g)| live(k, *g, Location::Unschedulable));
        }
    }

    /// Heap and index entries held, live or stale (for tests of memory).
    pub fn held_entries(&self) -> usize {
        self.active.len() + self.backoff.len() + self.parked.len()
    }

    /// Whether the entry of `key` belongs to the pod with `uid` (an empty
    /// `uid` matches any).
    fn owns(&self, key: &str, uid: &str) -> bool {
        self.entries
            .get(key)
            .is_some_and(|e| uid.is_empty() || e.qp.pod.uid == uid)
    }

    /// The queued pod of `key`, if any.
    pub fn get(&self, key: &str) -> Option<&QueuedPod> {
        self.entries.get(key).map(|e| &e.qp)
    }

    /// Replaces the pod of an existing entry of the same UID (a newer
    /// version), wherever it is; false when there is no such entry.
    pub fn update(&mut self, pod: Arc<PodInfo>) -> bool {
        match self.entries.get_mut(&pod.key) {
            Some(e) if e.qp.pod.uid == pod.uid => {
                e.qp.pod = pod;
                true
            }
            _ => false,
        }
    }

    /// Adds a pending pod. A pod of the same name but another UID (deleted
    /// and re-created) replaces the old entry; the same pod is only updated
    /// (see [`SchedulingQueue::update`]: whether the update moves it is the
    /// caller's decision).
    pub fn add(&mut self, pod: Arc<PodInfo>, now: Instant) {
        let key = pod.key.clone();
        if self.entries.get(&key).is_some_and(|e| e.qp.pod.uid != pod.uid) {
            self.remove_entry(&key);
        }
        match self.entries.get_mut(&key) {
            Some(e) => e.qp.pod = pod,
            None => {
                self.entries.insert(
                    key.clone(),
                    Entry {
                        qp: QueuedPod {
                            pod,
                            attempts: 0,
                            timestamp: now,
                            initial: now,
                            cycle: 0,
                        },
                        loc: Location::InFlight,
                        generation: 0,
                        deleted_in_flight: false,
                        rejectors: Vec::new(),
                    },
                );
                self.counts[slot(Location::InFlight)] += 1;
                self.place(&key, Location::Active, now);
            }
        }
    }

    /// Removes a pod (deleted, or bound by someone) if the entry is the
    /// pod's with `uid` (empty: whatever its UID). A pod in flight is marked
    /// so its outcome is dropped.
    pub fn delete(&mut self, key: &str, uid: &str) {
        if !self.owns(key, uid) {
            return;
        }
        if let Some(e) = self.entries.get_mut(key) {
            if e.loc == Location::InFlight {
                e.deleted_in_flight = true;
            } else {
                self.remove_entry(key);
            }
        }
    }

    /// Where a pod is, if queued.
    pub fn location(&self, key: &str) -> Option<Location> {
        self.entries.get(key).map(|e| e.loc)
    }

    /// Moves pods whose backoff expired to the active queue, and pods
    /// unschedulable for longer than [`UNSCHEDULABLE_TIMEOUT`] back.
    pub fn flush(&mut self, now: Instant) {
        while let Some(top) = self.backoff.peek() {
            if top.expiry > now {
                break;
            }
            let top = self.backoff.pop().expect("peeked");
            if self
                .entries
                .get(&top.key)
                .is_some_and(|e| e.generation == top.generation && e.loc == Location::Backoff)
            {
                self.place(&top.key, Location::Active, now);
            }
        }
        while let Some((since, _, _)) = self.parked.front() {
            if now.saturating_duration_since(*since) < UNSCHEDULABLE_TIMEOUT {
                break;
            }
            let (_, key, generation) = self.parked.pop_front().expect("peeked");
            if self
                .entries
                .get(&key)
                .is_some_and(|e| e.generation == generation && e.loc == Location::Unschedulable)
            {
                self.place(&key, Location::Active, now);
            }
        }
    }

    /// Pops the next pod to schedule (after [`SchedulingQueue::flush`]).
    /// It stays tracked as in flight until it is requeued or [`done`](Self::done).
    pub fn pop(&mut self, now: Instant) -> Option<QueuedPod> {
        self.flush(now);
        while let Some(top) = self.active.pop() {
            let valid = self
                .entries
                .get(&top.key)
                .is_some_and(|e| e.generation == top.generation && e.loc == Location::Active);
            if !valid {
                continue;
            }
            self.scheduling_cycle += 1;
            let cycle = self.scheduling_cycle;
            self.place(&top.key, Location::InFlight, now);
            let e = self.entries.get_mut(&top.key).expect("valid");
            e.qp.attempts += 1;
            e.qp.cycle = cycle;
            return Some(e.qp.clone());
        }
        None
    }

    /// Takes the pod `key` (of `uid`) out of the queue wherever it waits
    /// (active, backoff or unschedulable), in the cycle of the last pod
    /// popped, as kube-scheduler's `PopSpecificPod` takes the other pods of
    /// a group into the group's cycle. None when it is not queued (in
    /// flight already, or unknown).
    pub fn pop_specific(&mut self, key: &str, uid: &str, now: Instant) -> Option<QueuedPod> {
        let e = self.entries.get(key)?;
        if e.loc == Location::InFlight || e.qp.pod.uid != uid {
            return None;
        }
        let cycle = self.scheduling_cycle;
        self.place(key, Location::InFlight, now);
        let e = self.entries.get_mut(key).expect("placed");
        e.qp.attempts += 1;
        e.qp.cycle = cycle;
        Some(e.qp.clone())
    }

    fn requeue(&mut self, key: &str, uid: &str, now: Instant, rejectors: Option<Vec<String>>) {
        if !self.owns(key, uid) {
            return;
        }
        let Some(e) = self.entries.get_mut(key) else { return };
        if e.deleted_in_flight {
            self.remove_entry(key);
            return;
        }
        e.qp.timestamp = now;
        let unschedulable = rejectors.is_some();
        e.rejectors = rejectors.unwrap_or_default();
        // A cluster change during the cycle may have made room: back off
        // instead of waiting for the next change.
        let loc = if unschedulable && self.move_request_cycle < e.qp.cycle {
            Location::Unschedulable
        } else {
            Location::Backoff
        };
        self.place(key, loc, now);
    }

    /// The pod (of `uid`) fit nowhere: park it until a cluster change that
    /// one of `rejectors`, the plugins that rejected it, says may help.
    pub fn add_unschedulable(&mut self, key: &str, uid: &str, rejectors: Vec<String>, now: Instant) {
        self.requeue(key, uid, now, Some(rejectors));
    }

    /// The attempt failed with an error (or binding failed): retry after backoff.
    pub fn add_backoff(&mut self, key: &str, uid: &str, now: Instant) {
        self.requeue(key, uid, now, None);
    }

    /// The pod (of `uid`) is placed (or dropped): forget it.
    pub fn done(&mut self, key: &str, uid: &str) {
        if self.owns(key, uid) {
            self.remove_entry(key);
        }
    }

    /// The cluster changed in a way that may help some pods: moves every
    /// unschedulable pod for which `worth(pod, rejectors)` holds to the
    /// active queue, or to backoff if its backoff has not expired. Pods in
    /// flight are sent to backoff rather than parked when their attempt
    /// fails, so the change is not missed.
    pub fn move_matching(&mut self, now: Instant, mut worth: impl FnMut(&QueuedPod, &[String]) -> bool) {
        self.move_request_cycle = self.scheduling_cycle;
        let keys: Vec<PodKey> = self
            .unschedulable
            .iter()
            .filter(|k| {
                let e = &self.entries[*k];
                worth(&e.qp, &e.rejectors)
            })
            .cloned()
            .collect();
        for k in keys {
            self.activate(&k, now);
        }
    }

    /// Moves every unschedulable pod a plugin `changed` says yes to rejected
    /// straight to the active queue, backoff or not: that plugin was
    /// replaced, or loaded after the pod met it missing, which is a retry's
    /// reason that comes once per version (no hot loop for backoff to
    /// damp). Other pods are left as they are.
    pub fn move_rejected_by_now(&mut self, now: Instant, changed: impl Fn(&str) -> bool) {
        let keys: Vec<PodKey> = self
            .unschedulable
            .iter()
            .filter(|k| self.entries[*k].rejectors.iter().any(|r| changed(r)))
            .cloned()
            .collect();
        for k in keys {
            self.place(&k, Location::Active, now);
        }
    }

    /// Moves one unschedulable pod back (its own update may make it fit).
    pub fn move_one(&mut self, key: &str, now: Instant) {
        if self.location(key) == Some(Location::Unschedulable) {
            self.activate(key, now);
        }
    }

    fn activate(&mut self, key: &str, now: Instant) {
        let e = &self.entries[key];
        let backing_off = e.qp.timestamp + self.backoff_duration(e.qp.attempts) > now;
        self.place(
            key,
            if backing_off {
                Location::Backoff
            } else {
                Location::Active
            },
            now,
        );
    }

    /// Every unschedulable pod moves back (any change, for callers without
    /// plugins to ask).
    pub fn move_all_to_active_or_backoff(&mut self, now: Instant) {
        self.move_matching(now, |_, _| true);
    }

    /// Whether some unschedulable pod was rejected by a plugin `matters`
    /// says yes to, or by none (all plugins then decide).
    pub fn unschedulable_rejected_by(&self, matters: impl Fn(&str) -> bool) -> bool {
        self.unrejected > 0 || self.rejected_by.keys().any(|p| matters(p))
    }

    /// The plugins that rejected a pod in its last attempt.
    pub fn rejectors(&self, key: &str) -> &[String] {
        self.entries.get(key).map_or(&[], |e| &e.rejectors)
    }

    /// When the next backoff expires, if any pod is backing off.
    pub fn next_backoff_expiry(&self) -> Option<Instant> {
        // The top may be stale (an earlier wake-up, harmless).
        self.backoff.peek().map(|b| b.expiry)
    }

    /// Number of pods per location.
    pub fn len(&self, loc: Location) -> usize {
        self.counts[slot(loc)]
    }

    /// Whether nothing is queued or in flight.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The number of scheduling cycles so far.
    pub fn scheduling_cycle(&self) -> u64 {
        self.scheduling_cycle
    }

    /// Keys of every pod the queue holds, in flight included.
    pub fn all_keys(&self) -> Vec<PodKey> {
        self.entries.keys().cloned().collect()
    }

    /// Keys of the pods at a location.
    pub fn keys(&self, loc: Location) -> Vec<PodKey> {
        self.entries
            .iter()
            .filter(|(_, e)| e.loc == loc)
            .map(|(k, _)| k.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    fn pod(name: &str, priority: i32) -> Arc<PodInfo> {
        let p: Pod = serde_json::from_value(
            json!({"metadata": {"name": name}, "spec": {"priority": priority, "containers": []}}),
        )
        .unwrap();
        Arc::new(PodInfo::from_pod(&p).unwrap())
    }

    fn q() -> SchedulingQueue {
        SchedulingQueue::new(Duration::from_secs(1), Duration::from_secs(10))
    }

    #[test]
    fn priority_then_age() {
        let mut q = q();
        let t = Instant::now();
        q.add(pod("old-low", 0), t);
        q.add(pod("high", 10), t + Duration::from_millis(1));
        q.add(pod("new-low", 0), t + Duration::from_millis(2));
        let order: Vec<String> = std::iter::from_fn(|| q.pop(t).map(|p| p.pod.name.clone())).collect();
        assert_eq!(order, ["high", "old-low", "new-low"]);
    }

    /// The per-rejector tallies follow pods into and out of the
    /// unschedulable set, whichever way they leave it.
    #[test]
    fn rejector_tallies_follow_unschedulable_pods() {
        let mut q = q();
        let t = Instant::now();
        for (name, rejectors) in [("a", vec!["Fit"]), ("b", vec!["Fit", "Spread"]), ("c", vec![])] {
            q.add(pod(name, 0), t);
            let p = q.pop(t).unwrap();
            q.add_unschedulable(&p.pod.key, "", rejectors.into_iter().map(String::from).collect(), t);
        }
        assert!(q.unschedulable_rejected_by(|p| p == "Spread"));
        q.delete("default/c", "");
        assert!(
            !q.unschedulable_rejected_by(|p| p == "Other"),
            "no pod without rejectors is left"
        );
        q.move_matching(t, |qp, _| qp.pod.name == "b");
        assert!(!q.unschedulable_rejected_by(|p| p == "Spread"));
        assert!(q.unschedulable_rejected_by(|p| p == "Fit"));
        q.move_all_to_active_or_backoff(t);
        assert!(!q.unschedulable_rejected_by(|_| true));
    }

    /// A pod a changed plugin rejected skips its backoff; the others wait
    /// it out.
    #[test]
    fn pods_a_changed_plugin_rejected_skip_their_backoff() {
        let mut q = q();
        let t = Instant::now();
        for (name, rejectors) in [("waited", vec!["my-plugin"]), ("other", vec!["Fit"])] {
            q.add(pod(name, 0), t);
            let p = q.pop(t).unwrap();
            q.add_unschedulable(&p.pod.key, "", rejectors.into_iter().map(String::from).collect(), t);
        }
        let soon = t + Duration::from_millis(10);
        q.move_rejected_by_now(soon, |p| p == "my-plugin");
        q.move_all_to_active_or_backoff(soon);
        assert_eq!(q.pop(soon).map(|p| p.pod.name.clone()).as_deref(), Some("waited"));
        assert!(q.pop(soon).is_none(), "the other pod is backing off");
        assert_eq!(q.len(Location::Backoff), 1);
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let q = q();
        let secs: Vec<u64> = (1..=6).map(|a| q.backoff_duration(a).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 10, 10]);
    }

    #[test]
    fn errors_back_off_then_return() {
        let mut q = q();
        let t = Instant::now();
        q.add(pod("p", 0), t);
        let p = q.pop(t).unwrap();
        q.add_backoff(&p.pod.key, "", t);
        assert_eq!(q.location("default/p"), Some(Location::Backoff));
        assert!(q.pop(t + Duration::from_millis(999)).is_none());
        let p = q.pop(t + Duration::from_secs(1)).unwrap();
        assert_eq!(p.attempts, 2);
        q.add_backoff(&p.pod.key, "", t + Duration::from_secs(1));
        assert!(
            q.pop(t + Duration::from_millis(2999)).is_none(),
            "second backoff is 2 s"
        );
        assert!(q.pop(t + Duration::from_secs(3)).is_some());
    }

    #[test]
    fn unschedulable_moves_on_cluster_change_and_timeout() {
        let mut q = q();
        let t = Instant::now();
        q.add(pod("p", 0), t);
        let p = q.pop(t).unwrap();
        q.add_unschedulable(&p.pod.key, "", vec![], t);
        assert_eq!(q.location("default/p"), Some(Location::Unschedulable));
        assert!(q.pop(t + Duration::from_secs(60)).is_none());
        // a node is added: backoff (1 s) already expired at t+2 → active
        q.move_all_to_active_or_backoff(t + Duration::from_secs(2));
        assert_eq!(q.location("default/p"), Some(Location::Active));
        let p = q.pop(t + Duration::from_secs(2)).unwrap();
        q.add_unschedulable(&p.pod.key, "", vec![], t + Duration::from_secs(2));
        // nothing changes for 5 minutes: retried anyway
        assert!(q.pop(t + Duration::from_secs(200)).is_none());
        assert!(q.pop(t + Duration::from_secs(2) + UNSCHEDULABLE_TIMEOUT).is_some());
    }

    #[test]
    fn change_during_cycle_sends_pod_to_backoff() {
        let mut q = q();
        let t = Instant::now();
        q.add(pod("p", 0), t);
        let p = q.pop(t).unwrap();
        q.move_all_to_active_or_backoff(t); // a node was added while p was being scheduled
        q.add_unschedulable(&p.pod.key, "", vec![], t);
        assert_eq!(q.location("default/p"), Some(Location::Backoff));
    }

    #[test]
    fn delete_in_flight_drops_outcome() {
        let mut q = q();
        let t = Instant::now();
        q.add(pod("p", 0), t);
        let p = q.pop(t).unwrap();
        q.delete(&p.pod.key, "");
        q.add_unschedulable(&p.pod.key, "", vec![], t);
        assert!(q.location("default/p").is_none());
        assert!(q.is_empty());
        assert_eq!(q.len(Location::Unschedulable) + q.len(Location::InFlight), 0);
    }

    fn pod_uid(name: &str, uid: &str) -> Arc<PodInfo> {
        let p: Pod =
            serde_json::from_value(json!({"metadata": {"name": name, "uid": uid}, "spec": {"containers": []}}))
                .unwrap();
        Arc::new(PodInfo::from_pod(&p).unwrap())
    }

    #[test]
    fn a_pod_recreated_under_the_same_name_is_not_dropped_by_the_old_outcome() {
        let mut q = q();
        let t = Instant::now();
        q.add(pod_uid("web-0", "old"), t);
        let p = q.pop(t).unwrap();
        // deleted and re-created (StatefulSet) while the old one's bind is in flight
        q.delete(&p.pod.key, "old");
        q.add(pod_uid("web-0", "new"), t);
        // the old binding's outcome arrives: 409/404 for uid "old"
        q.delete(&p.pod.key, "old");
        q.done(&p.pod.key, "old");
        q.add_backoff(&p.pod.key, "old", t);
        assert_eq!(q.location("default/web-0"), Some(Location::Active));
        let again = q.pop(t).unwrap();
        assert_eq!(again.pod.uid, "new");
        assert_eq!(again.attempts, 1, "a fresh entry");
    }

    #[test]
    fn stale_heap_entries_are_compacted() {
        let mut q = q();
        let t = Instant::now();
        // a standby: pods are queued, then bound by the leader; nothing is popped
        for i in 0..10_000 {
            let p = pod(&format!("p{i}"), 0);
            q.add(p, t);
            q.delete(&format!("default/p{i}"), "");
        }
        assert!(q.is_empty());
        assert!(q.held_entries() <= 64 + 1, "{} entries held", q.held_entries());
    }

    #[test]
    fn only_matching_changes_move_unschedulable_pods() {
        let mut q = q();
        let t = Instant::now();
        q.add(pod("a", 0), t);
        q.add(pod("b", 0), t);
        let a = q.pop(t).unwrap();
        let b = q.pop(t).unwrap();
        q.add_unschedulable(&a.pod.key, "", vec!["NodeResourcesFit".into()], t);
        q.add_unschedulable(&b.pod.key, "", vec!["NodeAffinity".into()], t);
        let later = t + Duration::from_secs(5);
        q.move_matching(later, |_, r| r.iter().any(|p| p == "NodeResourcesFit"));
        assert_eq!(q.location("default/a"), Some(Location::Active));
        assert_eq!(q.location("default/b"), Some(Location::Unschedulable));
    }
}
