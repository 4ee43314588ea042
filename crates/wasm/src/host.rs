//! The host side of the contract: bindings generated from `wit/` (the
//! current minor, 0.7) and from `wit/0.6.0/` down to `wit/0.1.0/` (so that
//! plugins built against earlier minors keep loading), and the read-only
//! views of the pod, the node batch, the cluster's pods and the live
//! metrics a plugin call receives. Every minor's imports are served by the
//! same code: the accessors they share are written once, in macros
//! expanded for each minor's types.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use wasmsched_core::node::{TaintEffect, number};
use wasmsched_core::pod::PodObject;
use wasmsched_core::resources::Resources;
use wasmsched_core::{NodeInfo, PodInfo, Snapshot};
use wasmtime::component::Resource;
use wasmtime::format_err;

use crate::limits::{Budget, Limiter};
use crate::plugin::PluginStats;

/// The bindings of one minor of the contract, generated from its WIT
/// directory, with the pod and node batch as this host's handles.
macro_rules! minor {
    ($(#[$doc:meta])* $name:ident, $path:tt) => {
        $(#[$doc])*
        pub mod $name {
            wasmtime::component::bindgen!({
                world: "scheduler-plugin",
                path: $path,
                imports: { default: trappable },
                with: {
                    "wasmsched:plugin/cluster.pod": super::PodHandle,
                    "wasmsched:plugin/cluster.nodes": super::NodesHandle,
                },
            });
        }
    };
}

minor!(
    /// Contract 0.7 (`wit/plugin.wit`): what the SDKs build against.
    v0_7,
    "../../wit"
);
minor!(
    /// Contract 0.6 (`wit/0.6.0/plugin.wit`), served unchanged.
    v0_6,
    "../../wit/0.6.0"
);
minor!(
    /// Contract 0.5 (`wit/0.5.0/plugin.wit`), served unchanged.
    v0_5,
    "../../wit/0.5.0"
);
minor!(
    /// Contract 0.4 (`wit/0.4.0/plugin.wit`), served unchanged.
    v0_4,
    "../../wit/0.4.0"
);
minor!(
    /// Contract 0.3 (`wit/0.3.0/plugin.wit`), served unchanged.
    v0_3,
    "../../wit/0.3.0"
);
minor!(
    /// Contract 0.2 (`wit/0.2.0/plugin.wit`), served unchanged.
    v0_2,
    "../../wit/0.2.0"
);
minor!(
    /// Contract 0.1 (`wit/0.1.0/plugin.wit`), served unchanged.
    v0_1,
    "../../wit/0.1.0"
);

pub use v0_7::exports;

/// An instance's exports, whichever minor it was built against; calls
/// return 0.7's types (earlier minors' are subsets).
pub(crate) enum Bindings {
    V0_1(v0_1::SchedulerPlugin),
    V0_2(v0_2::SchedulerPlugin),
    V0_3(v0_3::SchedulerPlugin),
    V0_4(v0_4::SchedulerPlugin),
    V0_5(v0_5::SchedulerPlugin),
    V0_6(v0_6::SchedulerPlugin),
    V0_7(v0_7::SchedulerPlugin),
}

/// A component made ready to instantiate, for its minor.
#[derive(Clone)]
pub(crate) enum BindingsPre {
    V0_1(v0_1::SchedulerPluginPre<HostState>),
    V0_2(v0_2::SchedulerPluginPre<HostState>),
    V0_3(v0_3::SchedulerPluginPre<HostState>),
    V0_4(v0_4::SchedulerPluginPre<HostState>),
    V0_5(v0_5::SchedulerPluginPre<HostState>),
    V0_6(v0_6::SchedulerPluginPre<HostState>),
    V0_7(v0_7::SchedulerPluginPre<HostState>),
}

use exports::wasmsched::plugin::plugin as guest;

/// Conversions of an earlier minor's export types into the current ones
/// (the same shapes under other Rust types).
macro_rules! from_minor {
    ($name:ident, $old:path) => {
        mod $name {
            use super::guest;
            use $old as old;

            pub(super) fn code(c: old::Code) -> guest::Code {
                match c {
                    old::Code::Success => guest::Code::Success,
                    old::Code::Unschedulable => guest::Code::Unschedulable,
                    old::Code::UnschedulableAndUnresolvable => guest::Code::UnschedulableAndUnresolvable,
                    old::Code::Skip => guest::Code::Skip,
                }
            }

            pub(super) fn points(p: old::Points) -> guest::Points {
                [
                    (old::Points::PRE_FILTER, guest::Points::PRE_FILTER),
                    (old::Points::FILTER, guest::Points::FILTER),
                    (old::Points::PRE_SCORE, guest::Points::PRE_SCORE),
                    (old::Points::SCORE, guest::Points::SCORE),
                    (old::Points::NORMALIZE_SCORE, guest::Points::NORMALIZE_SCORE),
                ]
                .into_iter()
                .filter(|(o, _)| p.contains(*o))
                .fold(guest::Points::empty(), |acc, (_, new)| acc | new)
            }

            pub(super) fn status(s: old::Status) -> guest::Status {
                guest::Status {
                    code: code(s.code),
                    reason: s.reason,
                }
            }

            pub(super) fn rejections(rs: Vec<old::Rejection>) -> Vec<guest::Rejection> {
                rs.into_iter()
                    .map(|r| guest::Rejection {
                        index: r.index,
                        code: code(r.code),
                        reason: r.reason,
                    })
                    .collect()
            }
        }
    };
}

from_minor!(from_v0_1, super::v0_1::exports::wasmsched::plugin::plugin);
from_minor!(from_v0_2, super::v0_2::exports::wasmsched::plugin::plugin);
from_minor!(from_v0_3, super::v0_3::exports::wasmsched::plugin::plugin);
from_minor!(from_v0_4, super::v0_4::exports::wasmsched::plugin::plugin);
from_minor!(from_v0_5, super::v0_5::exports::wasmsched::plugin::plugin);
from_minor!(from_v0_6, super::v0_6::exports::wasmsched::plugin::plugin);

/// An earlier minor's event registration, as the current one's.
macro_rules! events_from {
    ($name:ident, $minor:ident $(, $more:ident)*) => {
        fn $name(
            events: Option<Vec<$minor::exports::wasmsched::plugin::plugin::ClusterEvent>>,
        ) -> Option<Vec<guest::ClusterEvent>> {
            use guest::EventActions as A;
            use old::EventActions as O;
            use $minor::exports::wasmsched::plugin::plugin as old;
            let actions = |a: O| {
                [
                    (O::ADD, A::ADD),
                    (O::DELETE, A::DELETE),
                    (O::UPDATE, A::UPDATE),
                    (O::UPDATE_NODE_ALLOCATABLE, A::UPDATE_NODE_ALLOCATABLE),
                    (O::UPDATE_NODE_LABEL, A::UPDATE_NODE_LABEL),
                    (O::UPDATE_NODE_TAINT, A::UPDATE_NODE_TAINT),
                    (O::UPDATE_NODE_CONDITION, A::UPDATE_NODE_CONDITION),
                    (O::UPDATE_NODE_ANNOTATION, A::UPDATE_NODE_ANNOTATION),
                    (O::UPDATE_POD_LABEL, A::UPDATE_POD_LABEL),
                    (O::UPDATE_POD_SCALE_DOWN, A::UPDATE_POD_SCALE_DOWN),
                    (O::UPDATE_POD_TOLERATION, A::UPDATE_POD_TOLERATION),
                ]
                .into_iter()
                .filter(|(o, _)| a.contains(*o))
                .fold(A::empty(), |acc, (_, new)| acc | new)
            };
            events.map(|es| {
                es.into_iter()
                    .map(|e| guest::ClusterEvent {
                        resource: match e.resource {
                            old::EventResource::Node => guest::EventResource::Node,
                            old::EventResource::Pod => guest::EventResource::Pod,
                            old::EventResource::Namespace => guest::EventResource::Namespace,
                            $(old::EventResource::$more => guest::EventResource::$more,)*
                        },
                        actions: actions(e.actions),
                    })
                    .collect()
            })
        }
    };
}

events_from!(events_v0_2, v0_2);
events_from!(events_v0_3, v0_3);
events_from!(events_v0_4, v0_4);
events_from!(events_v0_5, v0_5);
events_from!(events_v0_6, v0_6, ResourceClaim, ResourceSlice, DeviceClass);

/// An earlier minor's scores as the current one's (the same variant), and
/// back.
macro_rules! scores_from {
    ($from:ident, $to:ident, $minor:ident) => {
        fn $from(s: $minor::exports::wasmsched::plugin::plugin::Scores) -> guest::Scores {
            use $minor::exports::wasmsched::plugin::plugin::Scores as Old;
            match s {
                Old::Values(v) => guest::Scores::Values(v),
                Old::Packed(b) => guest::Scores::Packed(b),
            }
        }

        fn $to(s: guest::Scores) -> $minor::exports::wasmsched::plugin::plugin::Scores {
            use $minor::exports::wasmsched::plugin::plugin::Scores as Old;
            match s {
                guest::Scores::Values(v) => Old::Values(v),
                guest::Scores::Packed(b) => Old::Packed(b),
            }
        }
    };
}

scores_from!(scores_from_v0_5, scores_to_v0_5, v0_5);
scores_from!(scores_from_v0_6, scores_to_v0_6, v0_6);

impl BindingsPre {
    /// The minor of the contract, as `0.x`.
    pub(crate) fn minor(&self) -> &'static str {
        match self {
            BindingsPre::V0_1(_) => "0.1",
            BindingsPre::V0_2(_) => "0.2",
            BindingsPre::V0_3(_) => "0.3",
            BindingsPre::V0_4(_) => "0.4",
            BindingsPre::V0_5(_) => "0.5",
            BindingsPre::V0_6(_) => "0.6",
            BindingsPre::V0_7(_) => "0.7",
        }
    }

    pub(crate) fn engine(&self) -> &wasmtime::Engine {
        match self {
            BindingsPre::V0_1(p) => p.engine(),
            BindingsPre::V0_2(p) => p.engine(),
            BindingsPre::V0_3(p) => p.engine(),
            BindingsPre::V0_4(p) => p.engine(),
            BindingsPre::V0_5(p) => p.engine(),
            BindingsPre::V0_6(p) => p.engine(),
            BindingsPre::V0_7(p) => p.engine(),
        }
    }

    pub(crate) fn instantiate(&self, store: &mut wasmtime::Store<HostState>) -> wasmtime::Result<Bindings> {
        Ok(match self {
            BindingsPre::V0_1(p) => Bindings::V0_1(p.instantiate(store)?),
            BindingsPre::V0_2(p) => Bindings::V0_2(p.instantiate(store)?),
            BindingsPre::V0_3(p) => Bindings::V0_3(p.instantiate(store)?),
            BindingsPre::V0_4(p) => Bindings::V0_4(p.instantiate(store)?),
            BindingsPre::V0_5(p) => Bindings::V0_5(p.instantiate(store)?),
            BindingsPre::V0_6(p) => Bindings::V0_6(p.instantiate(store)?),
            BindingsPre::V0_7(p) => Bindings::V0_7(p.instantiate(store)?),
        })
    }
}

type Store<'a> = &'a mut wasmtime::Store<HostState>;
type Call<T> = wasmtime::Result<Result<T, String>>;

impl Bindings {
    pub(crate) fn metadata(&self, s: Store<'_>) -> wasmtime::Result<guest::PluginMetadata> {
        match self {
            Bindings::V0_1(b) => {
                let m = b.wasmsched_plugin_plugin().call_metadata(s)?;
                Ok(guest::PluginMetadata {
                    name: m.name,
                    version: m.version,
                    points: from_v0_1::points(m.points),
                    events: None,
                    keep_state: false,
                })
            }
            Bindings::V0_2(b) => {
                let m = b.wasmsched_plugin_plugin().call_metadata(s)?;
                Ok(guest::PluginMetadata {
                    name: m.name,
                    version: m.version,
                    points: from_v0_2::points(m.points),
                    events: events_v0_2(m.events),
                    keep_state: false,
                })
            }
            Bindings::V0_3(b) => {
                let m = b.wasmsched_plugin_plugin().call_metadata(s)?;
                Ok(guest::PluginMetadata {
                    name: m.name,
                    version: m.version,
                    points: from_v0_3::points(m.points),
                    events: events_v0_3(m.events),
                    keep_state: false,
                })
            }
            Bindings::V0_4(b) => {
                let m = b.wasmsched_plugin_plugin().call_metadata(s)?;
                Ok(guest::PluginMetadata {
                    name: m.name,
                    version: m.version,
                    points: from_v0_4::points(m.points),
                    events: events_v0_4(m.events),
                    keep_state: false,
                })
            }
            Bindings::V0_5(b) => {
                let m = b.wasmsched_plugin_plugin().call_metadata(s)?;
                Ok(guest::PluginMetadata {
                    name: m.name,
                    version: m.version,
                    points: from_v0_5::points(m.points),
                    events: events_v0_5(m.events),
                    keep_state: false,
                })
            }
            Bindings::V0_6(b) => {
                let m = b.wasmsched_plugin_plugin().call_metadata(s)?;
                Ok(guest::PluginMetadata {
                    name: m.name,
                    version: m.version,
                    points: from_v0_6::points(m.points),
                    events: events_v0_6(m.events),
                    keep_state: false,
                })
            }
            Bindings::V0_7(b) => b.wasmsched_plugin_plugin().call_metadata(s),
        }
    }

    pub(crate) fn configure(&self, s: Store<'_>, args: &str) -> Call<()> {
        match self {
            Bindings::V0_1(b) => b.wasmsched_plugin_plugin().call_configure(s, args),
            Bindings::V0_2(b) => b.wasmsched_plugin_plugin().call_configure(s, args),
            Bindings::V0_3(b) => b.wasmsched_plugin_plugin().call_configure(s, args),
            Bindings::V0_4(b) => b.wasmsched_plugin_plugin().call_configure(s, args),
            Bindings::V0_5(b) => b.wasmsched_plugin_plugin().call_configure(s, args),
            Bindings::V0_6(b) => b.wasmsched_plugin_plugin().call_configure(s, args),
            Bindings::V0_7(b) => b.wasmsched_plugin_plugin().call_configure(s, args),
        }
    }

    /// The metric sources the configured plugin reads (none declared
    /// before 0.4: those plugins are checked when they read one).
    pub(crate) fn metric_sources(&self, s: Store<'_>) -> wasmtime::Result<Option<Vec<String>>> {
        match self {
            Bindings::V0_4(b) => Ok(Some(b.wasmsched_plugin_plugin().call_metric_sources(s)?)),
            Bindings::V0_5(b) => Ok(Some(b.wasmsched_plugin_plugin().call_metric_sources(s)?)),
            Bindings::V0_6(b) => Ok(Some(b.wasmsched_plugin_plugin().call_metric_sources(s)?)),
            Bindings::V0_7(b) => Ok(Some(b.wasmsched_plugin_plugin().call_metric_sources(s)?)),
            _ => Ok(None),
        }
    }

    pub(crate) fn pre_filter(&self, s: Store<'_>) -> Call<guest::Status> {
        let pod = Resource::new_borrow(0);
        match self {
            Bindings::V0_1(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_filter(s, pod)?
                .map(from_v0_1::status)),
            Bindings::V0_2(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_filter(s, pod)?
                .map(from_v0_2::status)),
            Bindings::V0_3(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_filter(s, pod)?
                .map(from_v0_3::status)),
            Bindings::V0_4(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_filter(s, pod)?
                .map(from_v0_4::status)),
            Bindings::V0_5(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_filter(s, pod)?
                .map(from_v0_5::status)),
            Bindings::V0_6(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_filter(s, pod)?
                .map(from_v0_6::status)),
            Bindings::V0_7(b) => b.wasmsched_plugin_plugin().call_pre_filter(s, pod),
        }
    }

    pub(crate) fn filter(&self, s: Store<'_>) -> Call<Vec<guest::Rejection>> {
        let (pod, nodes) = (Resource::new_borrow(0), Resource::new_borrow(0));
        match self {
            Bindings::V0_1(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_filter(s, pod, nodes)?
                .map(from_v0_1::rejections)),
            Bindings::V0_2(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_filter(s, pod, nodes)?
                .map(from_v0_2::rejections)),
            Bindings::V0_3(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_filter(s, pod, nodes)?
                .map(from_v0_3::rejections)),
            Bindings::V0_4(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_filter(s, pod, nodes)?
                .map(from_v0_4::rejections)),
            Bindings::V0_5(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_filter(s, pod, nodes)?
                .map(from_v0_5::rejections)),
            Bindings::V0_6(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_filter(s, pod, nodes)?
                .map(from_v0_6::rejections)),
            Bindings::V0_7(b) => b.wasmsched_plugin_plugin().call_filter(s, pod, nodes),
        }
    }

    pub(crate) fn pre_score(&self, s: Store<'_>) -> Call<guest::Status> {
        let (pod, nodes) = (Resource::new_borrow(0), Resource::new_borrow(0));
        match self {
            Bindings::V0_1(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_score(s, pod, nodes)?
                .map(from_v0_1::status)),
            Bindings::V0_2(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_score(s, pod, nodes)?
                .map(from_v0_2::status)),
            Bindings::V0_3(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_score(s, pod, nodes)?
                .map(from_v0_3::status)),
            Bindings::V0_4(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_score(s, pod, nodes)?
                .map(from_v0_4::status)),
            Bindings::V0_5(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_score(s, pod, nodes)?
                .map(from_v0_5::status)),
            Bindings::V0_6(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_pre_score(s, pod, nodes)?
                .map(from_v0_6::status)),
            Bindings::V0_7(b) => b.wasmsched_plugin_plugin().call_pre_score(s, pod, nodes),
        }
    }

    /// Score's raw scores, and whether the plugin returned them packed.
    pub(crate) fn score(&self, s: Store<'_>) -> Call<(Vec<i64>, bool)> {
        let (pod, nodes) = (Resource::new_borrow(0), Resource::new_borrow(0));
        let values = |r: Result<Vec<i64>, String>| r.map(|v| (v, false));
        Ok(match self {
            Bindings::V0_1(b) => values(b.wasmsched_plugin_plugin().call_score(s, pod, nodes)?),
            Bindings::V0_2(b) => values(b.wasmsched_plugin_plugin().call_score(s, pod, nodes)?),
            Bindings::V0_3(b) => values(b.wasmsched_plugin_plugin().call_score(s, pod, nodes)?),
            Bindings::V0_4(b) => values(b.wasmsched_plugin_plugin().call_score(s, pod, nodes)?),
            Bindings::V0_5(b) => b
                .wasmsched_plugin_plugin()
                .call_score(s, pod, nodes)?
                .and_then(|scores| unpack_scores(scores_from_v0_5(scores), "score")),
            Bindings::V0_6(b) => b
                .wasmsched_plugin_plugin()
                .call_score(s, pod, nodes)?
                .and_then(|scores| unpack_scores(scores_from_v0_6(scores), "score")),
            Bindings::V0_7(b) => b
                .wasmsched_plugin_plugin()
                .call_score(s, pod, nodes)?
                .and_then(|scores| unpack_scores(scores, "score")),
        })
    }

    /// NormalizeScore, handing the scores in the form Score returned them.
    pub(crate) fn normalize_score(&self, s: Store<'_>, scores: &[i64], packed: bool) -> Call<Vec<i64>> {
        let pod = Resource::new_borrow(0);
        match self {
            Bindings::V0_1(b) => b.wasmsched_plugin_plugin().call_normalize_score(s, pod, scores),
            Bindings::V0_2(b) => b.wasmsched_plugin_plugin().call_normalize_score(s, pod, scores),
            Bindings::V0_3(b) => b.wasmsched_plugin_plugin().call_normalize_score(s, pod, scores),
            Bindings::V0_4(b) => b.wasmsched_plugin_plugin().call_normalize_score(s, pod, scores),
            Bindings::V0_5(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_normalize_score(s, pod, &scores_to_v0_5(pack(scores, packed)))?
                .and_then(|out| unpack_scores(scores_from_v0_5(out), "normalize-score").map(|(v, _)| v))),
            Bindings::V0_6(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_normalize_score(s, pod, &scores_to_v0_6(pack(scores, packed)))?
                .and_then(|out| unpack_scores(scores_from_v0_6(out), "normalize-score").map(|(v, _)| v))),
            Bindings::V0_7(b) => Ok(b
                .wasmsched_plugin_plugin()
                .call_normalize_score(s, pod, &pack(scores, packed))?
                .and_then(|out| unpack_scores(out, "normalize-score").map(|(v, _)| v))),
        }
    }

    /// The 0.7 bindings, for the points only 0.7 has (the host calls them
    /// only on plugins that declare them).
    fn v0_7(&self) -> Result<&v0_7::SchedulerPlugin, String> {
        match self {
            Bindings::V0_7(b) => Ok(b),
            _ => Err("the plugin's contract has no such point".into()),
        }
    }

    pub(crate) fn post_filter(&self, s: Store<'_>, statuses: &[guest::NodeStatus]) -> Call<guest::PostFilterResult> {
        let (pod, nodes) = (Resource::new_borrow(0), Resource::new_borrow(0));
        match self.v0_7() {
            Ok(b) => b.wasmsched_plugin_plugin().call_post_filter(s, pod, nodes, statuses),
            Err(e) => Ok(Err(e)),
        }
    }

    pub(crate) fn reserve(&self, s: Store<'_>) -> Call<guest::Status> {
        let (pod, nodes) = (Resource::new_borrow(0), Resource::new_borrow(0));
        match self.v0_7() {
            Ok(b) => b.wasmsched_plugin_plugin().call_reserve(s, pod, nodes),
            Err(e) => Ok(Err(e)),
        }
    }

    pub(crate) fn unreserve(&self, s: Store<'_>, node: &str) -> Call<()> {
        let pod = Resource::new_borrow(0);
        match self.v0_7() {
            Ok(b) => b.wasmsched_plugin_plugin().call_unreserve(s, pod, node).map(Ok),
            Err(e) => Ok(Err(e)),
        }
    }

    pub(crate) fn permit(&self, s: Store<'_>) -> Call<guest::PermitVerdict> {
        let (pod, nodes) = (Resource::new_borrow(0), Resource::new_borrow(0));
        match self.v0_7() {
            Ok(b) => b.wasmsched_plugin_plugin().call_permit(s, pod, nodes),
            Err(e) => Ok(Err(e)),
        }
    }

    pub(crate) fn pre_bind(&self, s: Store<'_>, node: &str) -> Call<guest::Status> {
        let pod = Resource::new_borrow(0);
        match self.v0_7() {
            Ok(b) => b.wasmsched_plugin_plugin().call_pre_bind(s, pod, node),
            Err(e) => Ok(Err(e)),
        }
    }

    pub(crate) fn post_bind(&self, s: Store<'_>, node: &str) -> Call<()> {
        let pod = Resource::new_borrow(0);
        match self.v0_7() {
            Ok(b) => b.wasmsched_plugin_plugin().call_post_bind(s, pod, node).map(Ok),
            Err(e) => Ok(Err(e)),
        }
    }
}

/// Scores in the form the plugin's Score returned them.
fn pack(scores: &[i64], packed: bool) -> guest::Scores {
    if packed {
        guest::Scores::Packed(scores.iter().flat_map(|v| v.to_le_bytes()).collect())
    } else {
        guest::Scores::Values(scores.to_vec())
    }
}

/// Scores as the host keeps them, and whether they came packed; packed
/// bytes that are not 8 per score are the plugin's error.
fn unpack_scores(scores: guest::Scores, point: &str) -> Result<(Vec<i64>, bool), String> {
    match scores {
        guest::Scores::Values(v) => Ok((v, false)),
        guest::Scores::Packed(bytes) => {
            let chunks = bytes.chunks_exact(8);
            if !chunks.remainder().is_empty() {
                return Err(format!(
                    "{point} returned {} packed bytes, not 8 per score",
                    bytes.len()
                ));
            }
            Ok((
                chunks
                    .map(|c| i64::from_le_bytes(c.try_into().expect("chunks of 8")))
                    .collect(),
                true,
            ))
        }
    }
}

/// The type behind `resource pod`: the pod of the current call lives in the
/// store's [`HostState`], so the handle carries nothing.
pub struct PodHandle;

/// The type behind `resource nodes`: the batch of the current call lives in
/// the store's [`HostState`].
pub struct NodesHandle;

/// The call's deadline passed while the guest was in a host function (a
/// component may call host functions back to back with no guest code in
/// between, where the epoch never interrupts it).
#[derive(Debug, thiserror::Error)]
#[error("deadline exceeded in a host call")]
pub struct DeadlineExceeded;

/// A host call's input is larger than the contract allows.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InputTooLarge(pub String);

/// Longest key (label, annotation, resource or image name) a host call takes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Most image names one `image-bytes` call takes.
pub const MAX_IMAGE_NAMES: usize = 64;
/// Log lines one plugin may write per second (the rest are counted and dropped).
pub const LOG_LINES_PER_SECOND: u32 = 100;

fn key(what: &str, k: &str) -> wasmtime::Result<()> {
    if k.len() > MAX_KEY_BYTES {
        return Err(InputTooLarge(format!(
            "{what} of {} bytes is longer than the host takes ({MAX_KEY_BYTES})",
            k.len()
        ))
        .into());
    }
    Ok(())
}

/// A per-plugin log rate limit, shared by the plugin's instances.
#[derive(Debug, Default)]
pub struct LogLimit {
    window: std::sync::Mutex<(Option<std::time::Instant>, u32)>,
}

impl LogLimit {
    fn allow(&self) -> bool {
        let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        match w.0 {
            Some(start) if now.duration_since(start) < std::time::Duration::from_secs(1) => {
                w.1 += 1;
                w.1 <= LOG_LINES_PER_SECOND
            }
            _ => {
                *w = (Some(now), 1);
                true
            }
        }
    }
}

/// What a plugin's store holds: its limits and the data of the call in
/// progress.
pub struct HostState {
    pub(crate) limits: Limiter,
    pub(crate) plugin: Arc<str>,
    pub(crate) seed: u64,
    pub(crate) pod: Option<Arc<PodInfo>>,
    /// The pod's object, unpacked at the first call that reads it.
    pod_object: std::cell::OnceCell<Pod>,
    pub(crate) nodes: Vec<Arc<NodeInfo>>,
    /// The cycle's snapshot, for the pod views (none outside a cycle).
    pub(crate) snapshot: Option<Arc<Snapshot>>,
    /// The cluster's storage and device objects (the snapshot's), for
    /// `pod.claims` and `nodes.devices` (also at PreFilter).
    pub(crate) storage: Option<Arc<wasmsched_core::storage::Storage>>,
    /// What DynamicResources allocated for the pod on each node this cycle.
    pub(crate) allocations: Option<wasmsched_core::plugins::dynamic_resources::NodeAllocations>,
    /// The plugin's store (contract 0.7's `state`).
    pub(crate) store: Option<Arc<crate::state::PluginStore>>,
    /// What plugins keep for the pod's cycle in progress.
    pub(crate) cycle: Option<Arc<wasmsched_core::framework::PluginData>>,
    /// The pods waiting at Permit.
    pub(crate) waiting: Option<Arc<wasmsched_core::framework::WaitingPods>>,
    /// The engine's epoch after which the call in progress must end: the
    /// same clock as wasmtime's epoch interruption, so guest code and host
    /// functions are held to one deadline.
    pub(crate) deadline: Option<u64>,
    pub(crate) epochs: Arc<std::sync::atomic::AtomicU64>,
    /// Host calls since the clock was last read.
    since_check: std::cell::Cell<u32>,
    stats: Arc<PluginStats>,
}

impl HostState {
    pub(crate) fn new(
        plugin: Arc<str>,
        memory_cap: usize,
        budget: Arc<Budget>,
        seed: u64,
        stats: Arc<PluginStats>,
        epochs: Arc<std::sync::atomic::AtomicU64>,
    ) -> Self {
        Self {
            limits: Limiter::new(memory_cap, budget, stats.share.clone()),
            plugin,
            seed,
            pod: None,
            pod_object: std::cell::OnceCell::new(),
            nodes: Vec::new(),
            snapshot: None,
            storage: None,
            allocations: None,
            store: None,
            cycle: None,
            waiting: None,
            deadline: None,
            epochs,
            since_check: std::cell::Cell::new(0),
            stats,
        }
    }

    /// Fails once the call's deadline has passed: every host function
    /// checks it, so a guest calling the host in a loop is stopped too. The
    /// epoch is read every 16th cheap call (each does bounded work) and on
    /// every call whose work grows with the batch ([`HostState::check_now`]).
    fn check(&self) -> wasmtime::Result<()> {
        let n = self.since_check.get() + 1;
        if n < 16 {
            self.since_check.set(n);
            return Ok(());
        }
        self.check_now()
    }

    /// Whether the call's deadline has passed (a call that ends past it
    /// without entering the guest again failed all the same).
    pub(crate) fn late(&self) -> bool {
        self.check_now().is_err()
    }

    fn check_now(&self) -> wasmtime::Result<()> {
        self.since_check.set(0);
        match self.deadline {
            Some(d) if self.epochs.load(std::sync::atomic::Ordering::Relaxed) > d => Err(DeadlineExceeded.into()),
            _ => Ok(()),
        }
    }

    /// Makes `pod` the call's pod (kept as it is when it is the same pod).
    pub(crate) fn set_pod(&mut self, pod: &PodInfo) {
        if !self
            .pod
            .as_ref()
            .is_some_and(|p| PodObject::ptr_eq(&p.object, &pod.object))
        {
            self.pod = Some(Arc::new(pod.clone()));
            self.pod_object = std::cell::OnceCell::new();
        }
    }

    /// The call's pod object, unpacked once per pod.
    fn pod_object(&self) -> wasmtime::Result<&Pod> {
        let p = self.pod()?;
        Ok(self.pod_object.get_or_init(|| p.object.pod()))
    }

    fn pod(&self) -> wasmtime::Result<&PodInfo> {
        self.check()?;
        self.pod.as_deref().ok_or_else(|| format_err!("no pod in this call"))
    }

    fn nodes(&self) -> wasmtime::Result<&[Arc<NodeInfo>]> {
        self.check_now()?;
        Ok(&self.nodes)
    }

    fn node(&self, index: u32) -> wasmtime::Result<&NodeInfo> {
        self.check()?;
        self.nodes
            .get(index as usize)
            .map(|n| &**n)
            .ok_or_else(|| format_err!("node index {index} out of range (batch of {})", self.nodes.len()))
    }
}

/// Parsed labels as the contract gives them: sorted by key, as the
/// object's map is.
fn sorted_labels(labels: &wasmsched_core::node::Labels) -> Vec<(String, String)> {
    let mut l: Vec<(String, String)> = labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    l.sort_unstable();
    l
}

fn pairs(map: Option<&std::collections::BTreeMap<String, String>>) -> Vec<(String, String)> {
    map.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// Every non-zero amount, as (name, amount), made into a minor's record by `mk`.
fn quantities<Q>(r: &Resources, mk: impl Fn(String, i64) -> Q) -> Vec<Q> {
    let mut out = Vec::with_capacity(4 + r.scalar.len());
    for (name, amount) in [
        ("cpu", r.milli_cpu),
        ("memory", r.memory),
        ("ephemeral-storage", r.ephemeral_storage),
        ("pods", r.pods),
    ] {
        if amount != 0 {
            out.push(mk(name.into(), amount));
        }
    }
    out.extend(r.scalar.iter().filter(|(_, a)| *a != 0).map(|(n, a)| mk(n.clone(), *a)));
    out
}

/// What the pods on a node request of one resource (`pods`: how many).
fn requested(n: &NodeInfo, name: &str) -> i64 {
    if name == "pods" {
        n.usage.pods
    } else {
        n.usage.requested.get(name)
    }
}

fn annotation<'a>(n: &'a NodeInfo, key: &str) -> Option<&'a str> {
    n.node
        .object
        .metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

fn node_object(n: &NodeInfo) -> &Node {
    &n.node.object
}

/// SplitMix64 finalizer over a running hash: a cheap, well-mixed,
/// reproducible number for a (seed, pod, node) triple.
fn mix(mut h: u64, bytes: &[u8]) -> u64 {
    for chunk in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h ^= u64::from_le_bytes(w);
        h = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 31;
    }
    h
}

/// Most namespaces, and most requirements (labels and expressions), one
/// pod selector may hold; most values one requirement may list.
pub const MAX_SELECTOR_ITEMS: usize = 64;

/// A guest's pod selector, checked.
struct ParsedSelector {
    namespaces: Vec<String>,
    all_namespaces: bool,
    labels: wasmsched_core::selector::LabelSelector,
}

/// Checks a selector as Kubernetes checks a label selector; the error names
/// the field, in the contract's terms.
fn parse_selector(s: &SelectorV0_2) -> Result<ParsedSelector, String> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
    let too_many =
        |field: &str, n: usize| format!("selector.{field}: {n} items, more than the host takes ({MAX_SELECTOR_ITEMS})");
    if s.namespaces.len() > MAX_SELECTOR_ITEMS {
        return Err(too_many("namespaces", s.namespaces.len()));
    }
    let requirements = s.match_labels.len() + s.match_expressions.len();
    if requirements > MAX_SELECTOR_ITEMS {
        return Err(too_many("match-labels and match-expressions", requirements));
    }
    let long = |field: String, v: &str| {
        (v.len() > MAX_KEY_BYTES).then(|| {
            format!(
                "{field}: {} bytes, longer than the host takes ({MAX_KEY_BYTES})",
                v.len()
            )
        })
    };
    for (i, n) in s.namespaces.iter().enumerate() {
        if let Some(e) = long(format!("selector.namespaces[{i}]"), n) {
            return Err(e);
        }
    }
    for (k, v) in &s.match_labels {
        if let Some(e) = long(format!("selector.match-labels[{k:.32}]"), k)
            .or_else(|| long(format!("selector.match-labels[{k:.32}]"), v))
        {
            return Err(e);
        }
    }
    let mut expressions = Vec::with_capacity(s.match_expressions.len());
    for (i, r) in s.match_expressions.iter().enumerate() {
        let field = format!("selector.match-expressions[{i}]");
        if let Some(e) = long(format!("{field}.key"), &r.key) {
            return Err(e);
        }
        if r.values.len() > MAX_SELECTOR_ITEMS {
            return Err(too_many(&format!("match-expressions[{i}].values"), r.values.len()));
        }
        if let Some(e) = r.values.iter().find_map(|v| long(format!("{field}.values"), v)) {
            return Err(e);
        }
        match (r.operator.as_str(), r.values.is_empty()) {
            ("In" | "NotIn", true) => return Err(format!("{field}.values: must be non-empty for In and NotIn")),
            ("Exists" | "DoesNotExist", false) => {
                return Err(format!("{field}.values: must be empty for Exists and DoesNotExist"));
            }
            ("In" | "NotIn" | "Exists" | "DoesNotExist", _) => {}
            (other, _) => {
                return Err(format!(
                    "{field}.operator: {other:?} is not one of In, NotIn, Exists, DoesNotExist"
                ));
            }
        }
        expressions.push(meta::LabelSelectorRequirement {
            key: r.key.clone(),
            operator: r.operator.clone(),
            values: Some(r.values.clone()),
        });
    }
    let selector = meta::LabelSelector {
        match_labels: Some(s.match_labels.iter().cloned().collect()),
        match_expressions: Some(expressions),
    };
    let labels = wasmsched_core::selector::LabelSelector::parse(Some(&selector), "pod selector", "selector")
        .map_err(|e| e.to_string())?;
    Ok(ParsedSelector {
        namespaces: s.namespaces.clone(),
        all_namespaces: s.all_namespaces,
        labels,
    })
}

/// The pods of a snapshot a selector selects, by shape (pods of one
/// namespace with the same labels share a shape: the selector is matched
/// once per shape, not once per pod).
struct PodView<'a> {
    snapshot: &'a Snapshot,
    /// By shape id.
    selected: Vec<bool>,
}

impl PodView<'_> {
    /// Selected pods on one node.
    fn on_node(&self, n: &NodeInfo) -> u32 {
        n.usage
            .shapes
            .iter()
            .filter(|(id, _)| self.selected.get(*id as usize).copied().unwrap_or(false))
            .map(|(_, c)| *c)
            .fold(0u32, u32::saturating_add)
    }
}

/// Shapes a pod view goes through between two reads of the call's
/// deadline (a selector of 64 requirements over 256 shapes is well under
/// a millisecond).
const SHAPES_PER_CHECK: usize = 256;

/// A count as the contract's `u32`.
fn saturate(c: i64) -> u32 {
    u32::try_from(c.max(0)).unwrap_or(u32::MAX)
}

// The accessors both minors share, written once: each macro expands into
// an impl block of the minor whose records (`Quantity`, `Taint`, ...) are in
// scope where it is invoked.

macro_rules! pod_accessors {
    () => {
        fn name(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<String> {
            Ok(self.pod()?.name.clone())
        }

        fn namespace(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<String> {
            Ok(self.pod()?.namespace.clone())
        }

        fn uid(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<String> {
            Ok(self.pod()?.uid.clone())
        }

        fn label(&mut self, _: Resource<PodHandle>, key: String) -> wasmtime::Result<Option<String>> {
            self::key("a label key", &key)?;
            Ok(self.pod()?.labels.get(&key).cloned())
        }

        fn labels(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<(String, String)>> {
            Ok(sorted_labels(&self.pod()?.labels))
        }

        fn annotation(&mut self, _: Resource<PodHandle>, key: String) -> wasmtime::Result<Option<String>> {
            self::key("an annotation key", &key)?;
            Ok(self
                .pod_object()?
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(&key).cloned()))
        }

        fn annotations(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<(String, String)>> {
            Ok(pairs(self.pod_object()?.metadata.annotations.as_ref()))
        }

        fn request(&mut self, _: Resource<PodHandle>, name: String) -> wasmtime::Result<i64> {
            self::key("a resource name", &name)?;
            Ok(self.pod()?.requests.requests.get(&name))
        }

        fn requests(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<Quantity>> {
            Ok(quantities(&self.pod()?.requests.requests, |name, amount| {
                Quantity { name, amount }
            }))
        }

        fn tolerations(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<Toleration>> {
            let spec = self.pod_object()?.spec.as_ref();
            Ok(spec
                .and_then(|s| s.tolerations.as_ref())
                .map(|ts| {
                    ts.iter()
                        .map(|t| Toleration {
                            key: t.key.clone().unwrap_or_default(),
                            operator: t.operator.clone().unwrap_or_else(|| "Equal".into()),
                            value: t.value.clone().unwrap_or_default(),
                            effect: t.effect.clone().unwrap_or_default(),
                        })
                        .collect()
                })
                .unwrap_or_default())
        }

        fn images(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<String>> {
            Ok(self.pod()?.images.clone())
        }

        fn node_selector(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<(String, String)>> {
            // Parsed in the object's (key) order.
            Ok(self.pod()?.node_selector.clone())
        }

        fn priority(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<i32> {
            Ok(self.pod()?.priority)
        }

        fn scheduler_name(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<String> {
            Ok(self.pod()?.scheduler_name.clone())
        }

        fn owner_kind(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Option<String>> {
            Ok(self.pod()?.controller.as_ref().map(|c| c.1.clone()))
        }

        fn json(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<String> {
            Ok(self.pod()?.object.json().to_owned())
        }

        fn drop(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<()> {
            Ok(())
        }
    };
}

macro_rules! node_accessors {
    () => {
        fn len(&mut self, _: Resource<NodesHandle>) -> wasmtime::Result<u32> {
            Ok(self.nodes()?.len() as u32)
        }

        fn name(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<String> {
            Ok(self.node(i)?.node.name.clone())
        }

        fn label(&mut self, _: Resource<NodesHandle>, i: u32, key: String) -> wasmtime::Result<Option<String>> {
            self::key("a label key", &key)?;
            Ok(self.node(i)?.node.labels.get(&key).cloned())
        }

        fn labels(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<(String, String)>> {
            Ok(sorted_labels(&self.node(i)?.node.labels))
        }

        fn annotation(&mut self, _: Resource<NodesHandle>, i: u32, key: String) -> wasmtime::Result<Option<String>> {
            self::key("an annotation key", &key)?;
            Ok(annotation(self.node(i)?, &key).map(str::to_owned))
        }

        fn annotations(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<(String, String)>> {
            Ok(pairs(node_object(self.node(i)?).metadata.annotations.as_ref()))
        }

        fn allocatable(&mut self, _: Resource<NodesHandle>, i: u32, name: String) -> wasmtime::Result<i64> {
            self::key("a resource name", &name)?;
            Ok(self.node(i)?.node.allocatable.get(&name))
        }

        fn allocatables(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<Quantity>> {
            Ok(quantities(&self.node(i)?.node.allocatable, |name, amount| {
                Quantity { name, amount }
            }))
        }

        fn requested(&mut self, _: Resource<NodesHandle>, i: u32, name: String) -> wasmtime::Result<i64> {
            self::key("a resource name", &name)?;
            Ok(requested(self.node(i)?, &name))
        }

        fn requesteds(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<Quantity>> {
            let n = self.node(i)?;
            let mut r = n.usage.requested.clone();
            r.pods = n.usage.pods;
            Ok(quantities(&r, |name, amount| Quantity { name, amount }))
        }

        fn pod_count(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<i64> {
            Ok(self.node(i)?.usage.pods)
        }

        fn unschedulable(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<bool> {
            Ok(self.node(i)?.node.unschedulable)
        }

        fn taints(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<Taint>> {
            Ok(self
                .node(i)?
                .node
                .taints
                .iter()
                .map(|t| Taint {
                    key: t.key.clone(),
                    value: t.value.clone(),
                    effect: match t.effect {
                        TaintEffect::NoSchedule => "NoSchedule",
                        TaintEffect::PreferNoSchedule => "PreferNoSchedule",
                        TaintEffect::NoExecute => "NoExecute",
                    }
                    .into(),
                })
                .collect())
        }

        fn conditions(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<Condition>> {
            Ok(node_object(self.node(i)?)
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .map(|cs| {
                    cs.iter()
                        .map(|c| Condition {
                            type_: c.type_.clone(),
                            status: c.status.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default())
        }

        fn image_size(&mut self, _: Resource<NodesHandle>, i: u32, name: String) -> wasmtime::Result<Option<i64>> {
            self::key("an image name", &name)?;
            let n = self.node(i)?;
            Ok(n.node
                .images
                .get(&name)
                .or_else(|| n.node.images.get(&format!("{name}:latest")))
                .copied())
        }

        fn images(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<Image>> {
            Ok(node_object(self.node(i)?)
                .status
                .as_ref()
                .and_then(|s| s.images.as_ref())
                .map(|imgs| {
                    imgs.iter()
                        .map(|im| Image {
                            names: im.names.clone().unwrap_or_default(),
                            size_bytes: im.size_bytes.unwrap_or(0),
                        })
                        .collect()
                })
                .unwrap_or_default())
        }

        fn random(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<u64> {
            let node = self.node(i)?.node.name.as_bytes();
            let pod = mix(mix(self.seed, self.pod()?.uid.as_bytes()), b"/");
            Ok(mix(pod, node))
        }

        fn json(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<String> {
            Ok(serde_json::to_string(node_object(self.node(i)?))?)
        }

        fn names(&mut self, _: Resource<NodesHandle>) -> wasmtime::Result<Vec<String>> {
            Ok(self.nodes()?.iter().map(|n| n.node.name.clone()).collect())
        }

        fn label_values(&mut self, _: Resource<NodesHandle>, key: String) -> wasmtime::Result<Vec<Option<String>>> {
            self::key("a label key", &key)?;
            Ok(self
                .nodes()?
                .iter()
                .map(|n| n.node.labels.get(&key).cloned())
                .collect())
        }

        fn annotation_values(
            &mut self,
            _: Resource<NodesHandle>,
            key: String,
        ) -> wasmtime::Result<Vec<Option<String>>> {
            self::key("an annotation key", &key)?;
            Ok(self
                .nodes()?
                .iter()
                .map(|n| annotation(n, &key).map(str::to_owned))
                .collect())
        }

        fn label_numbers(&mut self, _: Resource<NodesHandle>, key: String) -> wasmtime::Result<Vec<Option<f64>>> {
            self::key("a label key", &key)?;
            Ok(self
                .nodes()?
                .iter()
                .map(|n| n.node.labels.get(&key).and_then(|v| number(v)))
                .collect())
        }

        fn annotation_numbers(&mut self, _: Resource<NodesHandle>, key: String) -> wasmtime::Result<Vec<Option<f64>>> {
            self::key("an annotation key", &key)?;
            // Each node's data for every node first, then their numbers
            // (`Numbers::of_each`): misses in flight together.
            let data: Vec<&wasmsched_core::node::NodeData> = self.nodes()?.iter().map(|n| &*n.node).collect();
            Ok(wasmsched_core::node::Numbers::of_each(&data, &key))
        }

        fn allocatable_all(&mut self, _: Resource<NodesHandle>, name: String) -> wasmtime::Result<Vec<i64>> {
            self::key("a resource name", &name)?;
            Ok(self
                .nodes()?
                .iter()
                .map(|n| n.node.allocatable.get(&name))
                .collect())
        }

        fn requested_all(&mut self, _: Resource<NodesHandle>, name: String) -> wasmtime::Result<Vec<i64>> {
            self::key("a resource name", &name)?;
            Ok(self.nodes()?.iter().map(|n| requested(n, &name)).collect())
        }

        fn image_bytes(&mut self, _: Resource<NodesHandle>, names: Vec<String>) -> wasmtime::Result<Vec<i64>> {
            // The work is names × nodes: both are bounded.
            if names.len() > MAX_IMAGE_NAMES {
                return Err(InputTooLarge(format!(
                    "image-bytes takes at most {MAX_IMAGE_NAMES} image names, not {}",
                    names.len()
                ))
                .into());
            }
            for n in &names {
                self::key("an image name", n)?;
            }
            let wanted: Vec<String> = names
                .iter()
                .map(|n| {
                    if n.contains(':') || n.contains('@') {
                        n.clone()
                    } else {
                        format!("{n}:latest")
                    }
                })
                .collect();
            Ok(self
                .nodes()?
                .iter()
                .map(|n| wanted.iter().filter_map(|w| n.node.images.get(w)).sum())
                .collect())
        }

        fn randoms(&mut self, _: Resource<NodesHandle>) -> wasmtime::Result<Vec<u64>> {
            let pod = mix(mix(self.seed, self.pod()?.uid.as_bytes()), b"/");
            Ok(self
                .nodes()?
                .iter()
                .map(|n| mix(pod, n.node.name.as_bytes()))
                .collect())
        }

        fn drop(&mut self, _: Resource<NodesHandle>) -> wasmtime::Result<()> {
            Ok(())
        }
    };
}

macro_rules! log_function {
    () => {
        fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
            self.check_now()?;
            if !self.stats.log_limit.allow() {
                self.stats
                    .logs_dropped
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Ok(());
            }
            let message = crate::text::guest_text(&message, crate::text::MAX_LOG_BYTES);
            let plugin = &*self.plugin;
            match level {
                Level::Trace => tracing::trace!(plugin, "{message}"),
                Level::Debug => tracing::debug!(plugin, "{message}"),
                Level::Info => tracing::info!(plugin, "{message}"),
                Level::Warn => tracing::warn!(plugin, "{message}"),
                Level::Error => tracing::error!(plugin, "{message}"),
            }
            Ok(())
        }
    };
}

/// Contract 0.1's imports.
mod serve_v0_1 {
    use super::v0_1::wasmsched::plugin::cluster::{self, Condition, Image, Quantity, Taint, Toleration};
    use super::v0_1::wasmsched::plugin::host::{self, Level};
    use super::*;

    impl cluster::Host for HostState {}

    impl cluster::HostPod for HostState {
        pod_accessors!();
    }

    impl cluster::HostNodes for HostState {
        node_accessors!();
    }

    impl host::Host for HostState {
        log_function!();
    }
}

// The pod views of 0.2 and later, written once: `$selector` turns the
// minor's `pod-selector` into 0.2's, which the host parses.
macro_rules! pod_views {
    ($selector:expr) => {
        fn pod_counts(
            &mut self,
            _: Resource<NodesHandle>,
            selector: PodSelector,
        ) -> wasmtime::Result<Result<Vec<u32>, String>> {
            let view = match self.pod_view(&$selector(selector))? {
                Ok(v) => v,
                Err(why) => return Ok(Err(why)),
            };
            let mut out = Vec::with_capacity(self.nodes.len());
            for (i, n) in self.nodes.iter().enumerate() {
                // The work grows with the batch: the deadline is read as it goes.
                if i % 64 == 63 {
                    self.check_now()?;
                }
                out.push(view.on_node(n));
            }
            Ok(Ok(out))
        }

        fn domain_counts(
            &mut self,
            _: Resource<NodesHandle>,
            topology_key: String,
            selector: PodSelector,
        ) -> wasmtime::Result<Result<Vec<Option<u32>>, String>> {
            Ok(self
                .per_domain(&topology_key, &$selector(selector))?
                .map(|counts| {
                    self.nodes
                        .iter()
                        .map(|n| counts.at(&topology_key, &n.node).map(saturate))
                        .collect()
                }))
        }

        fn domains(
            &mut self,
            _: Resource<NodesHandle>,
            topology_key: String,
            selector: PodSelector,
        ) -> wasmtime::Result<Result<Vec<(String, u32)>, String>> {
            Ok(self
                .per_domain(&topology_key, &$selector(selector))?
                .map(|counts| {
                    let mut out: Vec<(String, u32)> = counts
                        .domains
                        .ids
                        .iter()
                        .map(|(value, &id)| (value.clone(), saturate(counts.counts[id as usize])))
                        .collect();
                    out.sort_unstable();
                    out
                }))
        }
    };
}

type SelectorV0_2 = v0_2::wasmsched::plugin::cluster::PodSelector;

/// Contract 0.2's imports: 0.1's, and the pod views.
mod serve_v0_2 {
    use super::v0_2::wasmsched::plugin::cluster::{self, Condition, Image, PodSelector, Quantity, Taint, Toleration};
    use super::v0_2::wasmsched::plugin::host::{self, Level};
    use super::*;

    impl cluster::Host for HostState {}

    impl cluster::HostPod for HostState {
        pod_accessors!();
    }

    impl cluster::HostNodes for HostState {
        node_accessors!();
        pod_views!(std::convert::identity);
    }

    impl host::Host for HostState {
        log_function!();
    }

    impl HostState {
        /// The selected pods per domain of `key`, or why the selector is invalid.
        pub(super) fn per_domain(
            &self,
            key: &str,
            selector: &PodSelector,
        ) -> wasmtime::Result<Result<wasmsched_core::cache::DomainCounts, String>> {
            self::key("a topology key", key)?;
            let view = match self.pod_view(selector)? {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
            // A key no built-in plugin uses gets a table for this call only
            // (the snapshot's cache would keep one per key a plugin names),
            // made within the call's deadline like the rest of the view.
            self.check_now()?;
            let mut counts = wasmsched_core::cache::DomainCounts::of(view.snapshot.domains_uncached(key));
            self.check_now()?;
            for (i, (id, shape)) in view.snapshot.shapes().enumerate() {
                if i % SHAPES_PER_CHECK == SHAPES_PER_CHECK - 1 {
                    self.check_now()?;
                }
                if view.selected[id as usize] {
                    for (pos, c) in view.snapshot.positions(shape) {
                        counts.add(pos, c);
                    }
                }
            }
            Ok(Ok(counts))
        }

        /// The shapes `selector` selects, or why it is invalid. The call's
        /// deadline is checked first: the work grows with the cluster.
        pub(super) fn pod_view(&self, selector: &PodSelector) -> wasmtime::Result<Result<PodView<'_>, String>> {
            self.check_now()?;
            let (Some(pod), Some(snapshot)) = (self.pod.as_deref(), self.snapshot.as_deref()) else {
                return Err(format_err!(
                    "pod views are available only in Filter, PreScore, Score, PostFilter, Reserve and Permit"
                ));
            };
            let selector = match parse_selector(selector) {
                Ok(s) => s,
                Err(e) => return Ok(Err(e)),
            };
            let namespaces: Option<Vec<&str>> = if selector.all_namespaces {
                None
            } else if selector.namespaces.is_empty() {
                Some(vec![pod.namespace.as_str()])
            } else {
                Some(selector.namespaces.iter().map(String::as_str).collect())
            };
            let mut selected = vec![false; snapshot.shape_ids()];
            for (i, (id, shape)) in snapshot.shapes().enumerate() {
                // StatefulSet and indexed Job pods each form a shape: the
                // matching is bounded by the deadline, not by one check.
                if i % SHAPES_PER_CHECK == SHAPES_PER_CHECK - 1 {
                    self.check_now()?;
                }
                let rep = &shape.rep;
                selected[id as usize] = !rep.deleting
                    && namespaces
                        .as_ref()
                        .is_none_or(|ns| ns.contains(&rep.namespace.as_str()))
                    && selector.labels.matches(&rep.labels);
            }
            Ok(Ok(PodView { snapshot, selected }))
        }
    }
}

/// Milliseconds since the Unix epoch, the clock metric samples carry.
pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Contract 0.3's imports (0.2's, and live metrics), which 0.4 and 0.5
/// serve unchanged (0.5 adds its packed columns): expanded for each minor's
/// types.
macro_rules! serve_metrics_minor {
    ($name:ident, $minor:ident $(, pod: $pod_more:ident)? $(, nodes: $more:ident)*) => {
        mod $name {
            use super::$minor::wasmsched::plugin::cluster::{
                self, Condition, Image, LabelRequirement, Metric, PodSelector, Quantity, Taint, Toleration,
            };
            use super::$minor::wasmsched::plugin::host::{self, Level};
            use super::*;

            /// The selector as 0.2's (the same record).
            fn selector(s: PodSelector) -> SelectorV0_2 {
                use super::v0_2::wasmsched::plugin::cluster::LabelRequirement as Old;
                SelectorV0_2 {
                    namespaces: s.namespaces,
                    all_namespaces: s.all_namespaces,
                    match_labels: s.match_labels,
                    match_expressions: s
                        .match_expressions
                        .into_iter()
                        .map(
                            |LabelRequirement {
                                 key,
                                 operator,
                                 values,
                             }| Old {
                                key,
                                operator,
                                values,
                            },
                        )
                        .collect(),
                }
            }

            impl cluster::Host for HostState {}

            impl cluster::HostPod for HostState {
                pod_accessors!();
                $($pod_more!();)?
            }

            impl cluster::HostNodes for HostState {
                node_accessors!();
                pod_views!(selector);

                fn metrics(
                    &mut self,
                    _: Resource<NodesHandle>,
                    source: String,
                ) -> wasmtime::Result<Result<Vec<Option<Metric>>, String>> {
                    self::key("a metric source", &source)?;
                    self.check_now()?;
                    let Some(snapshot) = self.snapshot.as_deref() else {
                        return Err(format_err!(
                            "metrics are available only in Filter, PreScore and Score"
                        ));
                    };
                    let Some(values) = snapshot.metrics.source(&source) else {
                        return Ok(Err(snapshot.metrics.unknown(&source)));
                    };
                    // Pods this plugin rejects are retried when metrics refresh.
                    self.stats
                        .reads_metrics
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                    let now = unix_ms();
                    Ok(Ok(self
                        .nodes
                        .iter()
                        .map(|n| {
                            values.reading(n, now).map(|r| Metric {
                                value: r.value,
                                age_ms: r.age_ms,
                                pods_since: saturate(r.since.pods),
                                cpu_since: r.since.milli_cpu,
                                memory_since: r.since.memory,
                            })
                        })
                        .collect()))
                }

                $($more!();)*
            }

            impl host::Host for HostState {
                log_function!();
            }
        }
    };
}

/// Contract 0.5's packed columns: the numeric columns as little-endian
/// bytes, which an interpreter's bindings take in one copy.
macro_rules! packed_columns {
    () => {
        fn label_numbers_packed(&mut self, r: Resource<NodesHandle>, key: String) -> wasmtime::Result<Vec<u8>> {
            let v = <Self as cluster::HostNodes>::label_numbers(self, r, key)?;
            Ok(v.into_iter()
                .flat_map(|x| x.unwrap_or(f64::NAN).to_le_bytes())
                .collect())
        }

        fn annotation_numbers_packed(&mut self, r: Resource<NodesHandle>, key: String) -> wasmtime::Result<Vec<u8>> {
            let v = <Self as cluster::HostNodes>::annotation_numbers(self, r, key)?;
            Ok(v.into_iter()
                .flat_map(|x| x.unwrap_or(f64::NAN).to_le_bytes())
                .collect())
        }

        fn allocatable_all_packed(&mut self, r: Resource<NodesHandle>, name: String) -> wasmtime::Result<Vec<u8>> {
            let v = <Self as cluster::HostNodes>::allocatable_all(self, r, name)?;
            Ok(v.into_iter().flat_map(i64::to_le_bytes).collect())
        }

        fn requested_all_packed(&mut self, r: Resource<NodesHandle>, name: String) -> wasmtime::Result<Vec<u8>> {
            let v = <Self as cluster::HostNodes>::requested_all(self, r, name)?;
            Ok(v.into_iter().flat_map(i64::to_le_bytes).collect())
        }

        fn randoms_packed(&mut self, r: Resource<NodesHandle>) -> wasmtime::Result<Vec<u8>> {
            let v = <Self as cluster::HostNodes>::randoms(self, r)?;
            Ok(v.into_iter().flat_map(u64::to_le_bytes).collect())
        }
    };
}

/// Most devices `nodes.devices` lists for one node.
pub const MAX_NODE_DEVICES: usize = 4096;

/// A device attribute's or capacity's name, qualified with the driver's
/// domain when the slice wrote it without one.
fn qualified(driver: &str, name: &str) -> String {
    if name.contains('/') {
        name.to_owned()
    } else {
        format!("{driver}/{name}")
    }
}

/// The devices of one allocation, in the contract's terms.
macro_rules! allocated_devices {
    ($a:expr) => {
        $a.devices
            .iter()
            .flat_map(|d| d.results.iter().flatten())
            .map(|r| cluster::AllocatedDevice {
                request: r.request.clone(),
                driver: r.driver.clone(),
                pool: r.pool.clone(),
                device: r.device.clone(),
            })
    };
}

/// Contract 0.6's pod accessor for devices.
macro_rules! pod_devices {
    () => {
        fn claims(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<cluster::PodClaim>> {
            use wasmsched_core::pod::ClaimName;
            self.check_now()?;
            let pod = self.pod()?;
            let devices = self.storage.as_deref().map(|s| s.devices());
            let mut out = Vec::with_capacity(pod.resource_claims.len());
            for c in &pod.resource_claims {
                let name = match &c.claim {
                    ClaimName::Named(n) | ClaimName::Generated(n) => Some(n.clone()),
                    _ => None,
                };
                let claim = name
                    .as_ref()
                    .and_then(|n| devices?.claim(&format!("{}/{n}", pod.namespace)));
                let mut requests = Vec::new();
                let mut allocated = Vec::new();
                let mut reserved_for = Vec::new();
                if let Some(claim) = claim {
                    let request = |name: String,
                                   class: &str,
                                   mode: Option<&String>,
                                   count: Option<i64>,
                                   selectors: Option<&Vec<k8s_openapi::api::resource::v1::DeviceSelector>>,
                                   admin: Option<bool>| cluster::ClaimRequest {
                        name,
                        device_class: class.to_owned(),
                        allocation_mode: mode.cloned().unwrap_or_else(|| "ExactCount".into()),
                        count: count.map_or(1, |c| c.max(0) as u64),
                        selectors: selectors
                            .into_iter()
                            .flatten()
                            .filter_map(|s| s.cel.as_ref().map(|c| c.expression.clone()))
                            .collect(),
                        admin_access: admin == Some(true),
                    };
                    for r in claim
                        .spec
                        .devices
                        .iter()
                        .flat_map(|d| d.requests.iter().flatten())
                    {
                        if let Some(e) = &r.exactly {
                            requests.push(request(
                                r.name.clone(),
                                &e.device_class_name,
                                e.allocation_mode.as_ref(),
                                e.count,
                                e.selectors.as_ref(),
                                e.admin_access,
                            ));
                        }
                        for sub in r.first_available.iter().flatten() {
                            requests.push(request(
                                format!("{}/{}", r.name, sub.name),
                                &sub.device_class_name,
                                sub.allocation_mode.as_ref(),
                                sub.count,
                                sub.selectors.as_ref(),
                                None,
                            ));
                        }
                    }
                    if let Some(a) = claim.status.as_ref().and_then(|s| s.allocation.as_ref()) {
                        allocated.extend(allocated_devices!(a));
                    }
                    reserved_for.extend(
                        claim
                            .status
                            .iter()
                            .flat_map(|s| s.reserved_for.iter().flatten())
                            .map(|r| format!("{}/{}", pod.namespace, r.name)),
                    );
                }
                out.push(cluster::PodClaim {
                    name: c.name.clone(),
                    claim: name,
                    requests,
                    allocated,
                    reserved_for,
                });
            }
            Ok(out)
        }
    };
}

/// Contract 0.6's node accessors for devices.
macro_rules! node_devices {
    () => {
        fn devices(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<cluster::Device>> {
            self.check_now()?;
            let node = self.node(i)?;
            let Some(storage) = self.storage.as_deref() else {
                return Ok(Vec::new());
            };
            let devices = storage.devices();
            let mut out = Vec::new();
            for (slice, d) in devices
                .node_devices(&node.node)
                .into_iter()
                .take(MAX_NODE_DEVICES)
            {
                let driver = &slice.spec.driver;
                let pool = &slice.spec.pool.name;
                let attributes = d
                    .attributes
                    .iter()
                    .flatten()
                    .filter_map(|(name, a)| {
                        let value = if let Some(v) = a.int {
                            cluster::AttributeValue::Int(v)
                        } else if let Some(v) = a.bool {
                            cluster::AttributeValue::Boolean(v)
                        } else if let Some(v) = &a.string {
                            cluster::AttributeValue::Text(v.clone())
                        } else {
                            cluster::AttributeValue::Version(a.version.clone()?)
                        };
                        Some(cluster::DeviceAttribute {
                            name: qualified(driver, name),
                            value,
                        })
                    })
                    .collect();
                let capacity = d
                    .capacity
                    .iter()
                    .flatten()
                    .map(|(name, c)| cluster::DeviceCapacity {
                        name: qualified(driver, name),
                        quantity: c.value.0.clone(),
                        value: wasmsched_core::quantity::parse_value(&c.value.0).unwrap_or(0),
                    })
                    .collect();
                out.push(cluster::Device {
                    driver: driver.clone(),
                    pool: pool.clone(),
                    name: d.name.clone(),
                    attributes,
                    capacity,
                    taken: devices
                        .allocated()
                        .contains(&wasmsched_core::dra::DeviceId::new(driver, pool, &d.name)),
                });
            }
            Ok(out)
        }

        fn allocation(
            &mut self,
            _: Resource<NodesHandle>,
            i: u32,
        ) -> wasmtime::Result<Option<Vec<cluster::AllocatedDevice>>> {
            let node = self.node(i)?.node.name.clone();
            let Some(found) = self
                .allocations
                .as_ref()
                .and_then(|m| m.lock().ok().and_then(|m| m.get(&node).cloned()))
            else {
                return Ok(None);
            };
            Ok(Some(found.iter().flat_map(|a| allocated_devices!(a)).collect()))
        }
    };
}

/// Contract 0.7's `nodes.pods` and `nodes.cluster-pod-count`.
macro_rules! node_pods {
    () => {
        fn cluster_pod_count(
            &mut self,
            _: Resource<NodesHandle>,
            sel: PodSelector,
        ) -> wasmtime::Result<Result<u32, String>> {
            let view = match self.pod_view(&selector(sel))? {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
            let mut total: i64 = 0;
            for (i, (id, shape)) in view.snapshot.shapes().enumerate() {
                if i % SHAPES_PER_CHECK == SHAPES_PER_CHECK - 1 {
                    self.check_now()?;
                }
                if view.selected[id as usize] {
                    total += view.snapshot.positions(shape).map(|(_, c)| c).sum::<i64>();
                }
            }
            Ok(Ok(saturate(total)))
        }

        fn pods(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<cluster::PlacedPod>> {
            self.check_now()?;
            let n = self.node(i)?;
            Ok(n.usage
                .pod_infos
                .iter()
                .take(MAX_PLACED_PODS)
                .map(|p| cluster::PlacedPod {
                    namespace: p.namespace.clone(),
                    name: p.name.clone(),
                    uid: p.uid.clone(),
                    priority: p.priority,
                    labels: sorted_labels(&p.labels),
                    requests: quantities(&p.requests.requests, |name, amount| Quantity { name, amount }),
                    deleting: p.deleting,
                })
                .collect())
        }
    };
}

/// Pods `nodes.pods` lists per node at most.
const MAX_PLACED_PODS: usize = 1000;

/// Contract 0.7's `state` and `waiting`: what the host keeps for the
/// plugin, and the pods held at Permit.
mod serve_v0_7_state {
    use super::v0_7::wasmsched::plugin::{state, waiting};
    use super::*;

    impl HostState {
        fn store(&self) -> wasmtime::Result<&crate::state::PluginStore> {
            self.store
                .as_deref()
                .ok_or_else(|| format_err!("the plugin's state is not available here"))
        }

        fn waiting_pods(&self) -> wasmtime::Result<&wasmsched_core::framework::WaitingPods> {
            self.waiting
                .as_deref()
                .ok_or_else(|| format_err!("waiting pods are not available here"))
        }
    }

    impl state::Host for HostState {
        fn get(&mut self, key: String) -> wasmtime::Result<Option<Vec<u8>>> {
            self.check()?;
            Ok(self.store()?.get(&key))
        }

        fn set(&mut self, key: String, value: Vec<u8>) -> wasmtime::Result<Result<(), String>> {
            self.check()?;
            Ok(self.store()?.set(&key, value))
        }

        fn remove(&mut self, key: String) -> wasmtime::Result<bool> {
            self.check()?;
            Ok(self.store()?.remove(&key))
        }

        fn keys(&mut self, prefix: String) -> wasmtime::Result<Vec<String>> {
            self.check_now()?;
            Ok(self.store()?.keys(&prefix))
        }

        fn add(&mut self, key: String, delta: i64) -> wasmtime::Result<Result<i64, String>> {
            self.check()?;
            Ok(self.store()?.add(&key, delta))
        }

        fn cycle_get(&mut self, key: String) -> wasmtime::Result<Option<Vec<u8>>> {
            self.check()?;
            Ok(self.cycle.as_ref().and_then(|d| d.get(&self.plugin, &key)))
        }

        fn cycle_set(&mut self, key: String, value: Vec<u8>) -> wasmtime::Result<Result<(), String>> {
            self.check()?;
            Ok(match &self.cycle {
                Some(d) => d.set(&self.plugin, &key, value),
                None => Err("no pod's cycle is in progress".into()),
            })
        }
    }

    impl waiting::Host for HostState {
        fn pods(&mut self) -> wasmtime::Result<Vec<waiting::WaitingPod>> {
            self.check_now()?;
            let now = std::time::Instant::now();
            Ok(self
                .waiting_pods()?
                .list(now)
                .into_iter()
                .map(|w| waiting::WaitingPod {
                    namespace: w.pod.namespace.clone(),
                    name: w.pod.name.clone(),
                    uid: w.pod.uid.clone(),
                    node: w.node,
                    labels: sorted_labels(&w.pod.labels),
                    plugins: w.plugins,
                    waited_ms: u64::try_from(w.waited.as_millis()).unwrap_or(u64::MAX),
                })
                .collect())
        }

        fn allow(&mut self, uid: String) -> wasmtime::Result<bool> {
            self.check()?;
            let plugin = self.plugin.clone();
            Ok(self.waiting_pods()?.allow(&uid, &plugin))
        }

        fn reject(&mut self, uid: String, reason: String) -> wasmtime::Result<bool> {
            self.check()?;
            let plugin = self.plugin.clone();
            let reason = crate::text::guest_text(&reason, wasmsched_core::framework::MAX_MESSAGE_BYTES);
            Ok(self.waiting_pods()?.reject(&uid, &plugin, &reason))
        }
    }
}

serve_metrics_minor!(serve_v0_3, v0_3);
serve_metrics_minor!(serve_v0_4, v0_4);
serve_metrics_minor!(serve_v0_5, v0_5, nodes: packed_columns);
serve_metrics_minor!(serve_v0_6, v0_6, pod: pod_devices, nodes: packed_columns, nodes: node_devices);
serve_metrics_minor!(serve_v0_7, v0_7, pod: pod_devices, nodes: packed_columns, nodes: node_devices, nodes: node_pods);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_cannot_forge_lines_or_flood() {
        let limit = LogLimit::default();
        let allowed = (0..1000).filter(|_| limit.allow()).count();
        assert_eq!(allowed, LOG_LINES_PER_SECOND as usize);
    }
}
