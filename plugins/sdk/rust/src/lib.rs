//! Write a wasmsched plugin in Rust.
//!
//! Implement [`Plugin`] (every method has a default; say which points you
//! implement in [`Plugin::points`]) and export it:
//!
//! ```ignore
//! use wasmsched_plugin::{Plugin, Points, Pod, Nodes};
//!
//! #[derive(Default)]
//! struct Cheapest { key: String }
//!
//! impl Plugin for Cheapest {
//!     const NAME: &'static str = "cheapest";
//!     fn points() -> Points { Points::SCORE }
//!     fn configure(args: &serde_json::Value) -> Result<Self, String> {
//!         Ok(Cheapest { key: args["annotation"].as_str().unwrap_or("price").into() })
//!     }
//!     fn score(&self, _pod: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
//!         Ok(nodes.annotation_numbers(&self.key).iter().map(|p| p.map_or(0, |p| (100.0 - p * 100.0).max(0.0) as i64)).collect())
//!     }
//! }
//! wasmsched_plugin::export!(Cheapest);
//! ```
//!
//! Build for `wasm32-unknown-unknown` and turn the module into a component
//! (`plugins/build.sh rust DIR` does both). The SDK builds against contract
//! 0.7 (`wit/plugin.wit`); each minor added to what a plugin can do:
//!
//! - 0.2: [`Nodes::pod_counts`], [`Nodes::domain_counts`] and
//!   [`Nodes::domains`] count the cluster's pods by [`PodSelector`], and
//!   [`Plugin::events`] declares the changes a rejected pod waits for;
//! - 0.3: [`Nodes::metrics`] reads a live metric source per node
//!   ([`Metric`]: the value, its age, and what was placed on the node
//!   since);
//! - 0.4: [`Plugin::metric_sources`] declares the sources read, checked
//!   against the scheduler's configuration when the plugin loads;
//! - 0.5: packed columns and packed scores, for interpreted guests (this
//!   SDK returns scores as values; nothing changes in a plugin's code);
//! - 0.6: devices (Dynamic Resource Allocation), below;
//! - 0.7: the rest of the framework, state and the pods waiting at Permit,
//!   below, and [`Nodes::cluster_pod_count`], the selected pods of the whole
//!   cluster in one call.
//!
//! Devices (Dynamic Resource Allocation, contract 0.6): [`Pod::claims`]
//! lists the pod's resource claims ([`PodClaim`]: its requests, the devices
//! of a claim allocated already, whom it is reserved for),
//! [`Nodes::devices`] the devices a node can use ([`Device`]: driver, pool,
//! name, attributes, capacity, `taken`), and [`Nodes::allocation`] what
//! kube-scheduler's DynamicResources allocated for the pod on a node in
//! this cycle (at PreScore and Score, for every feasible node).
//! [`Nodes::allocated_devices`] joins the two, [`Device::attribute`] and
//! [`Device::capacity_of`] read a device's attribute or capacity by name
//! (`memory` or `gpu.example.com/memory`).
//!
//! The rest of the framework (contract 0.7): [`Plugin::post_filter`] when
//! the pod fits nowhere (it may nominate a node and name victims:
//! [`PostFilterResult`]), [`Plugin::reserve`] and [`Plugin::unreserve`],
//! [`Plugin::permit`] ([`Permit`]: allow, reject, or hold the pod for a
//! while), [`Plugin::pre_bind`] and [`Plugin::post_bind`]; declare them
//! with [`Points::POST_FILTER`], [`Points::RESERVE`] (Reserve and
//! Unreserve), [`Points::PERMIT`], [`Points::PRE_BIND`],
//! [`Points::POST_BIND`]. A plugin's instances are pooled and may run
//! concurrently, so what must outlive a call lives in the host:
//! [`state`] is the plugin's store, shared by its instances and kept
//! across pods ([`state::add`] counts atomically;
//! [`Plugin::KEEP_STATE`] keeps it when a new version replaces this one),
//! and the pod's cycle state from PreFilter to PostBind
//! ([`state::cycle_get`], [`state::cycle_set`]). [`waiting`] lists the pods
//! waiting at Permit ([`WaitingPod`]) and allows or rejects those this
//! plugin holds. [`Nodes::pods`] lists the pods on a node ([`PlacedPod`]),
//! what a custom preemption picks its victims from.

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "scheduler-plugin",
        path: "../../../wit",
        pub_export_macro: true,
        export_macro_name: "__export_scheduler_plugin",
        default_bindings_module: "wasmsched_plugin::bindings",
    });
}

pub use bindings::exports::wasmsched::plugin::plugin::{
    ClusterEvent, Code, EventActions, EventResource, NodeStatus, Points, PostFilterResult, Rejection, Status,
};
pub use bindings::wasmsched::plugin::cluster::{
    AllocatedDevice, AttributeValue, ClaimRequest, Condition, Device, DeviceAttribute, DeviceCapacity, Image,
    LabelRequirement, Metric, Nodes, PlacedPod, Pod, PodClaim, PodSelector, Quantity, Taint, Toleration,
};
pub use bindings::wasmsched::plugin::waiting::WaitingPod;
pub use serde_json;

use std::borrow::Cow;
use std::time::Duration;

impl Device {
    /// `name` as the host names a device's attributes and capacities:
    /// fully qualified. A name without a domain (`memory`) is the driver's
    /// (`gpu.example.com/memory`), as ResourceSlices and CEL's
    /// `device.capacity` read it; a qualified one is kept.
    pub fn qualify<'a>(&self, name: &'a str) -> Cow<'a, str> {
        if name.contains('/') {
            Cow::Borrowed(name)
        } else {
            Cow::Owned(format!("{}/{name}", self.driver))
        }
    }

    /// The value of the attribute `name` (qualified, or the driver's when
    /// it has no domain: `model` is `gpu.example.com/model` on that
    /// driver's devices), if the device has it.
    pub fn attribute(&self, name: &str) -> Option<&AttributeValue> {
        let name = self.qualify(name);
        self.attributes.iter().find(|a| a.name == name).map(|a| &a.value)
    }

    /// The capacity `name` (qualified, or the driver's when it has no
    /// domain: `memory` is `gpu.example.com/memory` on that driver's
    /// devices), if the device publishes it: `.value` is the integer
    /// (bytes for `80Gi`), `.quantity` the quantity as written.
    pub fn capacity_of(&self, name: &str) -> Option<&DeviceCapacity> {
        let name = self.qualify(name);
        self.capacity.iter().find(|c| c.name == name)
    }
}

impl AllocatedDevice {
    /// Whether `device` is the one chosen (same driver, pool and name).
    pub fn is(&self, device: &Device) -> bool {
        self.device == device.name && self.pool == device.pool && self.driver == device.driver
    }
}

impl AttributeValue {
    /// The integer of an `int` attribute.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            AttributeValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The value of a `bool` attribute.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            AttributeValue::Boolean(b) => Some(*b),
            _ => None,
        }
    }

    /// The text of a `string` attribute, or a `version` as written.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttributeValue::Text(s) | AttributeValue::Version(s) => Some(s),
            _ => None,
        }
    }
}

impl Nodes {
    /// The devices DynamicResources allocated for the pod on node `index`
    /// in this cycle ([`Nodes::allocation`]), each with its attributes and
    /// capacity (from [`Nodes::devices`]), in allocation order; none when
    /// the allocation is none (the pod has no claim to allocate, or the
    /// node was not allocated for). Two host calls, the second only when
    /// there is an allocation.
    pub fn allocated_devices(&self, index: u32) -> Option<Vec<Device>> {
        let chosen = self.allocation(index)?;
        if chosen.is_empty() {
            return Some(Vec::new());
        }
        let devices = self.devices(index);
        Some(
            chosen
                .iter()
                .filter_map(|a| devices.iter().find(|d| a.is(d)).cloned())
                .collect(),
        )
    }
}

impl PodSelector {
    /// The pods of the scheduled pod's namespace that carry every label of
    /// `labels` (none: every pod of the namespace).
    pub fn labels<K: Into<String>, V: Into<String>>(labels: impl IntoIterator<Item = (K, V)>) -> Self {
        PodSelector {
            namespaces: Vec::new(),
            all_namespaces: false,
            match_labels: labels.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            match_expressions: Vec::new(),
        }
    }

    /// Also requires `key <operator> values` (`In`, `NotIn`, `Exists`,
    /// `DoesNotExist`).
    pub fn expression(mut self, key: impl Into<String>, operator: &str, values: &[&str]) -> Self {
        self.match_expressions.push(LabelRequirement {
            key: key.into(),
            operator: operator.into(),
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        });
        self
    }

    /// Counts the pods of these namespaces instead.
    pub fn in_namespaces(mut self, namespaces: &[&str]) -> Self {
        self.namespaces = namespaces.iter().map(|n| (*n).to_owned()).collect();
        self
    }

    /// Counts the pods of every namespace instead.
    pub fn all_namespaces(mut self) -> Self {
        self.all_namespaces = true;
        self
    }
}

impl PlacedPod {
    /// The value of the label `key`, if set.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Its effective request of the resource `name` (0 if none).
    pub fn request(&self, name: &str) -> i64 {
        self.requests.iter().find(|q| q.name == name).map_or(0, |q| q.amount)
    }
}

impl WaitingPod {
    /// The value of the label `key`, if set.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Whether it still waits for the plugin `name` (this plugin's:
    /// [`Plugin::NAME`]).
    pub fn waits_for(&self, name: &str) -> bool {
        self.plugins.iter().any(|p| p == name)
    }

    /// How long it has waited.
    pub fn waited(&self) -> Duration {
        Duration::from_millis(self.waited_ms)
    }
}

impl PostFilterResult {
    /// This plugin made no room: the pod stays unschedulable, `reason`
    /// joining its failure message (empty: nothing to add).
    pub fn unschedulable(reason: impl Into<String>) -> Self {
        PostFilterResult { status: unschedulable(reason), nominated_node: None, victims: Vec::new() }
    }

    /// The pod is nominated to `node`, where evicting `victims`
    /// (`namespace/name`, none when there is room already) makes room for
    /// it; the PostFilter plugins after this one do not run.
    pub fn nominate(node: impl Into<String>, victims: Vec<String>) -> Self {
        PostFilterResult { status: success(), nominated_node: Some(node.into()), victims }
    }
}

/// Permit's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Permit {
    /// Bind (once every other Permit plugin allows too).
    Allow,
    /// Do not bind: the pod's Reserve is undone and it is retried later.
    Reject(String),
    /// Hold the pod, with its node's resources, for at most this long (at
    /// most 15 minutes; it crosses in milliseconds, rounded down, and
    /// clamped to `u32::MAX`): until this plugin allows it
    /// ([`waiting::allow`], from any instance, typically on another pod's
    /// call) or rejects it; at the deadline it is rejected. The scheduler
    /// goes on with other pods meanwhile.
    Wait(Duration),
}

impl Permit {
    /// [`Permit::Wait`] for `seconds`.
    pub fn wait_secs(seconds: u64) -> Self {
        Permit::Wait(Duration::from_secs(seconds))
    }
}

impl From<Permit> for bindings::exports::wasmsched::plugin::plugin::PermitVerdict {
    fn from(p: Permit) -> Self {
        use bindings::exports::wasmsched::plugin::plugin::PermitVerdict;
        match p {
            Permit::Allow => PermitVerdict::Allow,
            Permit::Reject(reason) => PermitVerdict::Reject(reason),
            Permit::Wait(d) => PermitVerdict::Wait(u32::try_from(d.as_millis()).unwrap_or(u32::MAX)),
        }
    }
}

pub mod state {
    //! State the host keeps for the plugin (contract 0.7).
    //!
    //! The plugin's instances are pooled and may run concurrently: memory inside
    //! one instance is neither kept nor shared, so what must outlive a call (a
    //! quota's usage, a gang's members) goes here. The plugin's store
    //! ([`get`], [`set`], [`remove`], [`keys`], [`add`]) is shared by every
    //! instance of the plugin and kept across calls and pods, as long as the
    //! scheduler runs; a new version starts with it empty unless it declares
    //! [`Plugin::KEEP_STATE`](crate::Plugin::KEEP_STATE). It is bounded (at
    //! most 65 536 keys of at most 1 KiB, and keys and values together at most
    //! a quarter of the plugin's memory cap): a write past a bound is an error
    //! and changes nothing. The cycle's state ([`cycle_get`], [`cycle_set`])
    //! belongs to one attempt of one pod: what PreFilter wrote, Filter, Score,
    //! Reserve, Permit, PreBind and PostBind (or Unreserve) of the same attempt
    //! read; it is dropped when the attempt ends (at most 1 MiB).

    use crate::bindings::wasmsched::plugin::state as host;

    /// The value stored under `key`, if any.
    pub fn get(key: &str) -> Option<Vec<u8>> {
        host::get(key)
    }

    /// Stores `value` under `key`.
    pub fn set(key: &str, value: &[u8]) -> Result<(), String> {
        host::set(key, value)
    }

    /// Removes `key`; whether it was there.
    pub fn remove(key: &str) -> bool {
        host::remove(key)
    }

    /// The keys that start with `prefix`, sorted (at most 10 000).
    pub fn keys(prefix: &str) -> Vec<String> {
        host::keys(prefix)
    }

    /// Adds `delta` to the counter under `key` (an `i64` stored as 8 bytes,
    /// little-endian; none counts as 0) and returns its new value, in one
    /// step however many instances call it at once. An error when the value
    /// there is not 8 bytes, or the sum overflows.
    pub fn add(key: &str, delta: i64) -> Result<i64, String> {
        host::add(key, delta)
    }

    /// The `i64` under `key` (8 bytes, little-endian, as [`add`] and
    /// [`set_i64`] write it); none when there is none, or it is not 8
    /// bytes.
    pub fn get_i64(key: &str) -> Option<i64> {
        get(key).and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok()).map(i64::from_le_bytes)
    }

    /// Stores `value` under `key` as 8 bytes, little-endian (what [`add`]
    /// counts on).
    pub fn set_i64(key: &str, value: i64) -> Result<(), String> {
        set(key, &value.to_le_bytes())
    }

    /// The value the pod's cycle holds under `key`, if any.
    pub fn cycle_get(key: &str) -> Option<Vec<u8>> {
        host::cycle_get(key)
    }

    /// Stores `value` under `key` for the rest of the pod's cycle. An error
    /// outside a pod's cycle (in `configure`).
    pub fn cycle_set(key: &str, value: &[u8]) -> Result<(), String> {
        host::cycle_set(key, value)
    }
}

pub mod waiting {
    //! The pods waiting at Permit (contract 0.7): placed and holding their
    //! node's resources, not bound until every plugin that answered
    //! [`Permit::Wait`](crate::Permit::Wait) allows them.

    pub use crate::WaitingPod;
    use crate::bindings::wasmsched::plugin::waiting as host;

    /// Every pod waiting at Permit (of every profile), longest waiting
    /// first.
    pub fn pods() -> Vec<WaitingPod> {
        host::pods()
    }

    /// Allows the pod of `uid` for this plugin: it stops waiting for this
    /// plugin (and is bound when no plugin is left). False when it does not
    /// wait for this plugin: a plugin releases only the pods it holds.
    pub fn allow(uid: &str) -> bool {
        host::allow(uid)
    }

    /// Rejects the pod of `uid`, which this plugin holds, with `reason`: it
    /// is not bound, its Reserve is undone, and it is retried later. False
    /// when it does not wait for this plugin.
    pub fn reject(uid: &str, reason: &str) -> bool {
        host::reject(uid, reason)
    }
}

/// A registration for changes of `resource` of the kinds in `actions`.
pub fn event(resource: EventResource, actions: EventActions) -> ClusterEvent {
    ClusterEvent { resource, actions }
}

/// Writes a line to the scheduler's log, attributed to the plugin.
pub mod log {
    use crate::bindings::wasmsched::plugin::host::{Level, log};
    /// Debug level.
    pub fn debug(msg: &str) {
        log(Level::Debug, msg);
    }
    /// Info level.
    pub fn info(msg: &str) {
        log(Level::Info, msg);
    }
    /// Warning level.
    pub fn warn(msg: &str) {
        log(Level::Warn, msg);
    }
    /// Error level.
    pub fn error(msg: &str) {
        log(Level::Error, msg);
    }
}

/// A verdict that lets the pod go on.
pub fn success() -> Status {
    Status { code: Code::Success, reason: String::new() }
}

/// A verdict that skips this plugin's Filter (from PreFilter) or Score (from PreScore).
pub fn skip() -> Status {
    Status { code: Code::Skip, reason: String::new() }
}

/// A verdict that the pod does not fit now (preemption or a cluster change
/// may help), with the reason shown to users.
pub fn unschedulable(reason: impl Into<String>) -> Status {
    Status { code: Code::Unschedulable, reason: reason.into() }
}

/// A verdict that the pod will not fit whatever happens to other pods.
pub fn unschedulable_and_unresolvable(reason: impl Into<String>) -> Status {
    Status { code: Code::UnschedulableAndUnresolvable, reason: reason.into() }
}

/// Rejects node `index` of the batch, as not fitting now.
pub fn reject(index: u32, reason: impl Into<String>) -> Rejection {
    Rejection { index, code: Code::Unschedulable, reason: reason.into() }
}

/// Rejects node `index` of the batch for good (preemption would not help).
pub fn reject_unresolvable(index: u32, reason: impl Into<String>) -> Rejection {
    Rejection { index, code: Code::UnschedulableAndUnresolvable, reason: reason.into() }
}

/// A scheduling plugin. The host calls only the points in [`Plugin::points`].
pub trait Plugin: Sized + 'static {
    /// The name the scheduler configuration enables the plugin by.
    const NAME: &'static str;
    /// The plugin's version.
    const VERSION: &'static str = "0.1.0";
    /// Keep the plugin's store ([`state`]) when this version replaces
    /// another of the same name (a quota's usage survives an upgrade);
    /// `false`, the default: the new version starts with it empty.
    const KEEP_STATE: bool = false;
    /// The extension points implemented (`Points::SCORE | Points::NORMALIZE_SCORE`).
    fn points() -> Points;

    /// The cluster changes after which a pod this plugin rejected may fit
    /// (kube-scheduler's `EventsToRegister`); such a pod is retried only
    /// then (or after five minutes). `None`, the default: every change.
    ///
    /// ```ignore
    /// fn events() -> Option<Vec<ClusterEvent>> {
    ///     Some(vec![event(EventResource::Pod, EventActions::ADD | EventActions::DELETE)])
    /// }
    /// ```
    fn events() -> Option<Vec<ClusterEvent>> {
        None
    }

    /// Builds the plugin from its args (the profile's `pluginConfig[].args`,
    /// `{}` when none). An error rejects this version of the plugin.
    fn configure(args: &serde_json::Value) -> Result<Self, String>;

    /// The metric sources (`metrics.sources[].name`) this configured plugin
    /// reads with [`Nodes::metrics`]. The scheduler refuses the plugin at
    /// load when its configuration defines none of that name, instead of
    /// failing every pod. Default: none.
    fn metric_sources(&self) -> Vec<String> {
        Vec::new()
    }

    /// PreFilter: once per pod. `skip()` skips Filter for this pod.
    fn pre_filter(&self, _pod: &Pod) -> Result<Status, String> {
        Ok(success())
    }

    /// Filter: the nodes of the batch that do not fit, by index.
    fn filter(&self, _pod: &Pod, _nodes: &Nodes) -> Result<Vec<Rejection>, String> {
        Ok(Vec::new())
    }

    /// PreScore: once per pod with the feasible nodes. `skip()` skips Score.
    fn pre_score(&self, _pod: &Pod, _nodes: &Nodes) -> Result<Status, String> {
        Ok(success())
    }

    /// Score: one score per node of the batch, 0..=100 unless
    /// NormalizeScore maps them.
    fn score(&self, _pod: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        Ok(vec![0; nodes.len() as usize])
    }

    /// NormalizeScore: maps every feasible node's raw score into 0..=100.
    fn normalize_score(&self, _pod: &Pod, scores: Vec<i64>) -> Result<Vec<i64>, String> {
        Ok(scores)
    }

    /// PostFilter ([`Points::POST_FILTER`]): the pod fits on no node.
    /// `statuses` says why on each node Filter rejected, and `nodes` holds
    /// those nodes in the same order. Runs only if the PostFilter plugins
    /// before it (DefaultPreemption by default) did not succeed. Default:
    /// [`PostFilterResult::unschedulable`] with no reason (no room made).
    fn post_filter(&self, _pod: &Pod, _nodes: &Nodes, _statuses: &[NodeStatus]) -> Result<PostFilterResult, String> {
        Ok(PostFilterResult::unschedulable(""))
    }

    /// Reserve ([`Points::RESERVE`]): the pod was placed on the one node
    /// of `nodes` and its resources are about to be held for it. Anything
    /// but `success()`, or an error, fails the attempt and undoes the
    /// Reserve of every plugin that reserved.
    fn reserve(&self, _pod: &Pod, _nodes: &Nodes) -> Result<Status, String> {
        Ok(success())
    }

    /// Unreserve ([`Points::RESERVE`]): undo this plugin's Reserve for the
    /// pod on `node` (a later point failed, Permit rejected or timed out,
    /// the binding failed, or the pod was deleted while waiting). Called at
    /// most once per Reserve; it cannot fail.
    fn unreserve(&self, _pod: &Pod, _node: &str) {}

    /// Permit ([`Points::PERMIT`]): after Reserve, whether the pod may be
    /// bound on the one node of `nodes`, whose pod views count the pods
    /// bound or assumed in the cluster before this one (those waiting at
    /// Permit included, this pod not).
    fn permit(&self, _pod: &Pod, _nodes: &Nodes) -> Result<Permit, String> {
        Ok(Permit::Allow)
    }

    /// PreBind ([`Points::PRE_BIND`]): before the binding to `node` is
    /// written. Anything but `success()`, an error, or no answer within the
    /// plugin's time limit fails the binding: the pod is unreserved and
    /// retried.
    fn pre_bind(&self, _pod: &Pod, _node: &str) -> Result<Status, String> {
        Ok(success())
    }

    /// PostBind ([`Points::POST_BIND`]): the pod is bound to `node`
    /// (informational).
    fn post_bind(&self, _pod: &Pod, _node: &str) {}
}

#[doc(hidden)]
pub mod __private {
    use std::cell::RefCell;

    thread_local! {
        static INSTANCE: RefCell<Option<Box<dyn std::any::Any>>> = const { RefCell::new(None) };
    }

    pub fn configure<P: crate::Plugin>(args: String) -> Result<(), String> {
        let v: serde_json::Value = if args.trim().is_empty() {
            serde_json::Value::Object(Default::default())
        } else {
            serde_json::from_str(&args).map_err(|e| format!("args are not valid JSON: {e}"))?
        };
        let p = P::configure(&v)?;
        INSTANCE.with(|i| *i.borrow_mut() = Some(Box::new(p)));
        Ok(())
    }

    /// NormalizeScore's input as values, whichever form it crossed in.
    pub fn unpack(scores: crate::bindings::exports::wasmsched::plugin::plugin::Scores) -> Result<Vec<i64>, String> {
        use crate::bindings::exports::wasmsched::plugin::plugin::Scores;
        match scores {
            Scores::Values(v) => Ok(v),
            Scores::Packed(b) if b.len() % 8 == 0 => Ok(b
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("chunks of 8")))
                .collect()),
            Scores::Packed(b) => Err(format!("{} packed bytes are not 8 per score", b.len())),
        }
    }

    pub fn with<P: crate::Plugin, R>(f: impl FnOnce(&P) -> Result<R, String>) -> Result<R, String> {
        INSTANCE.with(|i| {
            let b = i.borrow();
            let p = b
                .as_ref()
                .and_then(|p| p.downcast_ref::<P>())
                .ok_or_else(|| "the plugin was not configured".to_owned())?;
            f(p)
        })
    }
}

/// Exports a [`Plugin`] as the component's `wasmsched:plugin/plugin`.
#[macro_export]
macro_rules! export {
    ($plugin:ty) => {
        const _: () = {
            use $crate::bindings::exports::wasmsched::plugin::plugin as __g;
            struct __Export;
            impl __g::Guest for __Export {
                fn metadata() -> __g::PluginMetadata {
                    __g::PluginMetadata {
                        name: <$plugin as $crate::Plugin>::NAME.into(),
                        version: <$plugin as $crate::Plugin>::VERSION.into(),
                        points: <$plugin as $crate::Plugin>::points(),
                        events: <$plugin as $crate::Plugin>::events(),
                        keep_state: <$plugin as $crate::Plugin>::KEEP_STATE,
                    }
                }
                fn configure(args: String) -> Result<(), String> {
                    $crate::__private::configure::<$plugin>(args)
                }
                fn metric_sources() -> Vec<String> {
                    $crate::__private::with::<$plugin, _>(|p| Ok($crate::Plugin::metric_sources(p))).unwrap_or_default()
                }
                fn pre_filter(pod: &$crate::Pod) -> Result<__g::Status, String> {
                    $crate::__private::with::<$plugin, _>(|p| $crate::Plugin::pre_filter(p, pod))
                }
                fn filter(pod: &$crate::Pod, nodes: &$crate::Nodes) -> Result<Vec<__g::Rejection>, String> {
                    $crate::__private::with::<$plugin, _>(|p| $crate::Plugin::filter(p, pod, nodes))
                }
                fn pre_score(pod: &$crate::Pod, nodes: &$crate::Nodes) -> Result<__g::Status, String> {
                    $crate::__private::with::<$plugin, _>(|p| $crate::Plugin::pre_score(p, pod, nodes))
                }
                fn score(pod: &$crate::Pod, nodes: &$crate::Nodes) -> Result<__g::Scores, String> {
                    $crate::__private::with::<$plugin, _>(|p| $crate::Plugin::score(p, pod, nodes)).map(__g::Scores::Values)
                }
                fn normalize_score(pod: &$crate::Pod, scores: __g::Scores) -> Result<__g::Scores, String> {
                    let scores = $crate::__private::unpack(scores)?;
                    $crate::__private::with::<$plugin, _>(|p| $crate::Plugin::normalize_score(p, pod, scores))
                        .map(__g::Scores::Values)
                }
                fn post_filter(
                    pod: &$crate::Pod,
                    nodes: &$crate::Nodes,
                    statuses: Vec<__g::NodeStatus>,
                ) -> Result<__g::PostFilterResult, String> {
                    $crate::__private::with::<$plugin, _>(|p| $crate::Plugin::post_filter(p, pod, nodes, &statuses))
                }
                fn reserve(pod: &$crate::Pod, nodes: &$crate::Nodes) -> Result<__g::Status, String> {
                    $crate::__private::with::<$plugin, _>(|p| $crate::Plugin::reserve(p, pod, nodes))
                }
                fn unreserve(pod: &$crate::Pod, node: String) {
                    // Unreserve cannot fail: an unconfigured instance has nothing to undo.
                    let _ = $crate::__private::with::<$plugin, _>(|p| {
                        $crate::Plugin::unreserve(p, pod, &node);
                        Ok(())
                    });
                }
                fn permit(pod: &$crate::Pod, nodes: &$crate::Nodes) -> Result<__g::PermitVerdict, String> {
                    $crate::__private::with::<$plugin, _>(|p| $crate::Plugin::permit(p, pod, nodes)).map(Into::into)
                }
                fn pre_bind(pod: &$crate::Pod, node: String) -> Result<__g::Status, String> {
                    $crate::__private::with::<$plugin, _>(|p| $crate::Plugin::pre_bind(p, pod, &node))
                }
                fn post_bind(pod: &$crate::Pod, node: String) {
                    let _ = $crate::__private::with::<$plugin, _>(|p| {
                        $crate::Plugin::post_bind(p, pod, &node);
                        Ok(())
                    });
                }
            }
            $crate::bindings::__export_scheduler_plugin!(__Export with_types_in $crate::bindings);
        };
    };
}
