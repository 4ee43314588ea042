//! The pending-pod queue, as kube-scheduler's: an *active* queue ordered by
//! priority then age, a *backoff* queue of pods waiting out an exponential
//! backoff after a failed attempt, and an *unschedulable* set of pods that
//! fit nowhere and wait for the cluster to change.
//!
//! Time is passed in (`now`), so the queue is pure and testable.

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
    }

    fn remove_entry(&mut self, key: &str) {
        if let Some(e) = self.entries.remove(key) {
            self.counts[slot(e.loc)] -= 1;
            if e.loc == Location::Unschedulable {
                self.unschedulable.remove(key);
            }
        }
    }

    /// Adds a pending pod, or updates one already queued. An updated pod
    /// that was unschedulable is retried (the update may make it fit).
    pub fn add(&mut self, pod: Arc<PodInfo>, now: Instant) {
        let key = pod.key.clone();
        match self.entries.get_mut(&key) {
            Some(e) => {
                e.qp.pod = pod;
                if e.loc == Location::Unschedulable {
                    let (ts, attempts) = (e.qp.timestamp, e.qp.attempts);
                    let backing_off = ts + self.backoff_duration(attempts) > now;
                    self.place(
                        &key,
                        if backing_off {
                            Location::Backoff
                        } else {
                            Location::Active
                        },
                        now,
                    );
                }
            }
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
                    },
                );
                self.counts[slot(Location::InFlight)] += 1;
                self.place(&key, Location::Active, now);
            }
        }
    }

    /// Removes a pod (deleted, or bound by someone). A pod in flight is
    /// marked so its outcome is dropped.
    pub fn delete(&mut self, key: &str) {
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

    fn requeue(&mut self, key: &str, now: Instant, unschedulable: bool) {
        let Some(e) = self.entries.get_mut(key) else { return };
        if e.deleted_in_flight {
            self.remove_entry(key);
            return;
        }
        e.qp.timestamp = now;
        // A cluster change during the cycle may have made room: back off
        // instead of waiting for the next change.
        let loc = if unschedulable && self.move_request_cycle < e.qp.cycle {
            Location::Unschedulable
        } else {
            Location::Backoff
        };
        self.place(key, loc, now);
    }

    /// The pod fit nowhere: park it until the cluster changes.
    pub fn add_unschedulable(&mut self, key: &str, now: Instant) {
        self.requeue(key, now, true);
    }

    /// The attempt failed with an error (or binding failed): retry after backoff.
    pub fn add_backoff(&mut self, key: &str, now: Instant) {
        self.requeue(key, now, false);
    }

    /// The pod is placed (or dropped): forget it.
    pub fn done(&mut self, key: &str) {
        self.remove_entry(key);
    }

    /// The cluster changed (node added or updated, a pod deleted): move every
    /// unschedulable pod to the active queue, or to backoff if its backoff
    /// has not expired.
    pub fn move_all_to_active_or_backoff(&mut self, now: Instant) {
        self.move_request_cycle = self.scheduling_cycle;
        let keys: Vec<PodKey> = self.unschedulable.iter().cloned().collect();
        for k in keys {
            let e = &self.entries[&k];
            let backing_off = e.qp.timestamp + self.backoff_duration(e.qp.attempts) > now;
            self.place(
                &k,
                if backing_off {
                    Location::Backoff
                } else {
                    Location::Active
                },
                now,
            );
        }
    }

    /// When the next backoff expires, if any pod is backing off.
    pub fn next_backoff_expiry(&self) -> Option<Instant> {
        self.backoff.iter().map(|b| b.expiry).min()
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
        q.add_backoff(&p.pod.key, t);
        assert_eq!(q.location("default/p"), Some(Location::Backoff));
        assert!(q.pop(t + Duration::from_millis(999)).is_none());
        let p = q.pop(t + Duration::from_secs(1)).unwrap();
        assert_eq!(p.attempts, 2);
        q.add_backoff(&p.pod.key, t + Duration::from_secs(1));
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
        q.add_unschedulable(&p.pod.key, t);
        assert_eq!(q.location("default/p"), Some(Location::Unschedulable));
        assert!(q.pop(t + Duration::from_secs(60)).is_none());
        // a node is added: backoff (1 s) already expired at t+2 → active
        q.move_all_to_active_or_backoff(t + Duration::from_secs(2));
        assert_eq!(q.location("default/p"), Some(Location::Active));
        let p = q.pop(t + Duration::from_secs(2)).unwrap();
        q.add_unschedulable(&p.pod.key, t + Duration::from_secs(2));
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
        q.add_unschedulable(&p.pod.key, t);
        assert_eq!(q.location("default/p"), Some(Location::Backoff));
    }

    #[test]
    fn delete_in_flight_drops_outcome() {
        let mut q = q();
        let t = Instant::now();
        q.add(pod("p", 0), t);
        let p = q.pop(t).unwrap();
        q.delete(&p.pod.key);
        q.add_unschedulable(&p.pod.key, t);
        assert!(q.location("default/p").is_none());
        assert!(q.is_empty());
        assert_eq!(q.len(Location::Unschedulable) + q.len(Location::InFlight), 0);
    }
}
