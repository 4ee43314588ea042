//! The wasmtime host for wasmsched plugins.
//!
//! A plugin is a WebAssembly component built against `wit/plugin.wit`
//! (`wasmsched:plugin@0.7.0`; components built against 0.1.0 to 0.6.0 keep
//! loading).
//! This crate compiles it once (and keeps the compiled artifact on disk; a
//! big one serves first on baseline code while the optimised code compiles),
//! checks that it imports nothing but the plugin world, instantiates it with a memory cap, calls it with a deadline
//! per call, and wraps it as a `wasmsched_core::Plugin` so the framework runs
//! it beside the built-ins. [`PluginHost`] loads a directory and swaps in new
//! versions of its files while the scheduler runs.
//!
//! ```no_run
//! use wasmsched_wasm::{PluginHost, WasmConfig, WasmEngine};
//! let config = WasmConfig { directory: Some("plugins/out".into()), ..Default::default() };
//! let host = PluginHost::new(WasmEngine::new(None).unwrap(), config, 1);
//! let report = host.scan();
//! let mut registry = wasmsched_core::plugins::Registry::builtin();
//! host.register(&mut registry);
//! ```

mod dir;
mod engine;
mod host;
pub mod limits;
mod plugin;
mod post_filter;
pub mod shape;
pub mod state;
pub mod text;

pub use dir::{
    DEFAULT_SHADOW_SAMPLE_PERCENT, GZ_SUFFIX, PluginEntry, PluginHost, ScanReport, Settings, ShadowConfig, Tiering,
    WasmConfig, Watch,
};
pub use engine::{
    COMPILE_REFUSED, Compiler, EPOCH_TICK, Tier, WasmEngine, cap_memory, compile_to_artifact, lower_priority,
};
pub use host::exports::wasmsched::plugin::plugin::{
    Code as GuestCode, NodeStatus as GuestNodeStatus, PermitVerdict as GuestPermitVerdict, PluginMetadata,
    Points as GuestPoints, PostFilterResult as GuestPostFilterResult, Rejection, Status as GuestStatus,
};
pub use host::unix_ms;
pub use plugin::{
    CallError, CycleView, FailurePolicy, Limits, Loaded, MAX_METRIC_SOURCES, MAX_NAME_BYTES, MAX_SOURCE_NAME_BYTES,
    MAX_VERSION_BYTES, PluginSlot, PluginStats, off_the_record, warm_instances,
};

/// Why a plugin file was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    /// The engine could not start.
    #[error("engine: {0}")]
    Engine(String),
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(String),
    /// The file is not one the host reads: a link out of the directory,
    /// not a regular file, too large.
    #[error("refused: {0}")]
    Refused(String),
    /// Not a component.
    #[error("not a WebAssembly component: {0}")]
    NotAComponent(String),
    /// Not valid, or not the plugin world.
    #[error("invalid component: {0}")]
    Invalid(String),
    /// Imports something the world does not provide.
    #[error("forbidden import: {0}")]
    ForbiddenImport(String),
    /// Instantiation or `metadata` failed.
    #[error("cannot instantiate: {0}")]
    Instantiate(String),
    /// `configure` returned an error.
    #[error("configure failed: {0}")]
    Configure(String),
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
