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
//! 0.6 (`wit/plugin.wit`; its packed columns and packed scores are for
//! interpreted guests, and this SDK returns scores as values): [`Nodes::pod_counts`], [`Nodes::domain_counts`]
//! and [`Nodes::domains`] count the cluster's pods by [`PodSelector`],
//! [`Plugin::events`] declares the changes a rejected pod waits for,
//! [`Nodes::metrics`] reads a live metric source per node ([`Metric`]: the
//! value, its age, and what was placed on the node since), and
//! [`Plugin::metric_sources`] declares the sources read, checked against
//! the scheduler's configuration when the plugin loads.
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
    ClusterEvent, Code, EventActions, EventResource, Points, Rejection, Status,
};
pub use bindings::wasmsched::plugin::cluster::{
    AllocatedDevice, AttributeValue, ClaimRequest, Condition, Device, DeviceAttribute, DeviceCapacity, Image,
    LabelRequirement, Metric, Nodes, Pod, PodClaim, PodSelector, Quantity, Taint, Toleration,
};
pub use serde_json;

use std::borrow::Cow;

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
            }
            $crate::bindings::__export_scheduler_plugin!(__Export with_types_in $crate::bindings);
        };
    };
}
