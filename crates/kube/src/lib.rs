//! wasmsched's daemon: runs the scheduling core against a Kubernetes API
//! server with kube-rs. Watches nodes and pods, schedules the pods whose
//! `spec.schedulerName` names a profile, binds them with `pods/binding` (after binding their volumes),
//! writes events and the `PodScheduled` condition, elects a leader on a
//! Lease, preempts (evicting victims) when a pod fits nowhere, and serves
//! health and metrics; queries the configured metric sources (Prometheus)
//! in the background for plugins that read live metrics. Or, as an extender of
//! kube-scheduler, answers its `filter` and `prioritize` requests with the
//! same plugins ([`extender`]).

pub mod admin;
mod admin_auth;
pub mod admin_proxy;
mod binder;
mod claims;
pub mod client;
pub mod daemon;
pub mod extender;
pub mod leader;
mod metric_sources;
pub mod metrics;
mod preempt;
mod reporter;
mod schedule;
pub mod shadow;
mod status;
pub mod tls;
mod volumes;
mod watch;
pub mod web;

pub use admin::AdminOptions;
pub use client::ClientConnection;
pub use daemon::{Options, run};
pub use leader::{LeaderElection, Leadership, parse_duration};
pub use status::Status;
