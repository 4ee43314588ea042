//! The scheduling engine of wasmsched.
//!
//! A pure library with the shape of kube-scheduler's framework: a cluster
//! model parsed once into integers ([`node`], [`pod`], [`resources`]), a
//! [`cache`] that assumes pods at Reserve, the pending-pod [`queue`] with
//! kube-scheduler's queueing hints ([`events`]), the
//! [`framework`] with its extension points, the built-in [`plugins`], the
//! [`config`] shaped like `KubeSchedulerConfiguration`, and the
//! [`scheduler`] that ties them together. It does no I/O: the Kubernetes
//! client, the WebAssembly host and the command line live in other crates.

pub mod cache;
pub mod config;
pub mod constraints;
pub mod dra;
pub mod events;
pub mod extender;
pub mod fixture;
pub mod framework;
pub mod metrics;
pub mod node;
pub mod nominator;
pub mod plugins;
pub mod pod;
pub mod pod_groups;
pub mod priority;
pub mod quantity;
pub mod queue;
pub mod resources;
pub mod rng;
pub mod scheduler;
pub mod selector;
pub mod shapes;
pub mod storage;
pub mod synthetic;
pub mod what_if;
pub mod workloads;

pub use cache::{Cache, Snapshot};
pub use framework::{Code, CycleState, Framework, Plugin, Points, Status};
pub use node::{NodeData, NodeInfo};
pub use pod::PodInfo;
pub use scheduler::Scheduler;

use std::fmt;

/// A Kubernetes object that cannot be used as it is: names the object, the
/// field, and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: {field}: {reason}")]
pub struct ModelError {
    /// `Pod ns/name` or `Node name`.
    pub object: String,
    /// The field path, e.g. `spec.containers[0].resources.requests[cpu]`.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl ModelError {
    /// Builds an error.
    pub fn new(object: impl Into<String>, field: impl Into<String>, reason: impl fmt::Display) -> Self {
        ModelError {
            object: object.into(),
            field: field.into(),
            reason: reason.to_string(),
        }
    }
}

/// Formats a deserialization error with the path of the offending field,
/// naming the object that holds an unknown field rather than the field itself
/// (`scoringStrategy: unknown field `typo``).
pub(crate) fn path_error<E: fmt::Display>(e: serde_path_to_error::Error<E>) -> String {
    let msg = e.inner().to_string();
    let mut path = e.path().to_string();
    if msg.starts_with("unknown field") {
        path = match path.rfind('.') {
            Some(i) => path[..i].to_owned(),
            None => ".".to_owned(),
        };
    }
    if path == "." { msg } else { format!("{path}: {msg}") }
}
