//! The plugin directory: scanned at start, watched for changes, each
//! changed file compiled and validated off the scheduling path and swapped
//! into the slots that use it.
//!
//! Works with a Kubernetes ConfigMap volume (visible names are symlinks into
//! a `..data` directory that is replaced atomically) and with tools that
//! write a file in several steps: events only trigger a debounced rescan,
//! and a file counts as changed when its content hash changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use wasmsched_core::plugins::Registry;

use crate::LoadError;
use crate::engine::{Compiled, Tier, WasmEngine};
use crate::host::exports::wasmsched::plugin::plugin::PluginMetadata;
use crate::plugin::{FailurePolicy, Limits, Loaded, PluginSlot, PluginStats, probe};
use wasmsched_core::Plugin as _;

/// Per-plugin settings in the configuration; absent fields take the defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Deadline per call in milliseconds (default 10).
    pub timeout_ms: Option<u64>,
    /// Memory cap per instance in MiB (default 64).
    pub memory_mib: Option<u64>,
    /// `fail` (default) or `ignore`.
    pub failure_policy: Option<FailurePolicy>,
}

/// One plugin named in the configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginEntry {
    /// The name the plugin reports in its metadata.
    pub name: String,
    /// Deadline per call in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Memory cap per instance in MiB.
    pub memory_mib: Option<u64>,
    /// `fail` or `ignore`.
    pub failure_policy: Option<FailurePolicy>,
}

/// The `wasmPlugins` section of the scheduler configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WasmConfig {
    /// Directory of `.wasm` components, or gzip-compressed `.wasm.gz` ones
    /// (a ConfigMap volume in a cluster, or an image volume).
    pub directory: Option<PathBuf>,
    /// Where compiled artifacts are kept between restarts.
    pub cache_directory: Option<PathBuf>,
    /// Watch the directory and reload changed plugins (default true).
    pub watch: Option<bool>,
    /// The memory every plugin instance together may hold, in MiB (default:
    /// half the container's memory limit, else 2048). An instance that would
    /// pass it fails to grow: an error of that plugin.
    pub memory_budget_mib: Option<u64>,
    /// Largest plugin file read, in MiB (default 64): a bigger one is
    /// refused with a message.
    pub max_file_mib: Option<u64>,
    /// Longest the compilation of one file may take, in seconds (default
    /// 60): a file that takes longer is refused and its plugin's previous
    /// version keeps serving.
    pub compile_timeout_seconds: Option<u64>,
    /// Most memory (heap) the compilation of one file may use, in MiB
    /// (default 1024, or three quarters of the container's memory limit
    /// when that is less), where compilation runs in a process of its own
    /// (`wasmsched` does that): a file that needs more is refused.
    pub compile_memory_mib: Option<u64>,
    /// Components of at least this many MiB (decompressed; default 8) start
    /// on baseline code where the scheduler runs (`wasmsched run`,
    /// `wasmsched extender`): Winch compiles them in about a quarter of
    /// Cranelift's time, they serve at once, and Cranelift's optimised code
    /// replaces them when it is ready (then cached, so a restart loads it).
    /// 0: every component; above `maxFileMib`: never.
    pub baseline_min_mib: Option<u64>,
    /// Defaults for every plugin.
    #[serde(default)]
    pub defaults: Settings,
    /// Plugins with their own settings; naming a plugin here also lets a
    /// profile enable it before its file exists.
    #[serde(default)]
    pub plugins: Vec<PluginEntry>,
    /// New plugin versions tried on live traffic beside the serving ones,
    /// never deciding a placement.
    pub shadow: Option<ShadowConfig>,
    /// The metric sources plugins may read (`metrics.sources[].name`, set
    /// by the caller, not read from `wasmPlugins`): a version declaring a
    /// source not among them (contract 0.4's `metric-sources`) is refused
    /// at load. None: not checked.
    #[serde(skip)]
    pub metric_sources: Option<std::collections::BTreeSet<String>>,
}

/// `wasmPlugins.shadow`: a second directory whose components shadow the
/// serving plugins of the same names. On a sample of the scheduling cycles
/// of every profile that enables such a plugin, the profile runs again off
/// the scheduling thread with the shadow version in the serving version's
/// place, on the same snapshot and nodes, and the two outcomes are
/// compared. Promoting a shadow is moving its file into `directory`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShadowConfig {
    /// Directory of shadow components (`.wasm`, `.wasm.gz`), watched like
    /// `wasmPlugins.directory`; it must not be that directory.
    pub directory: PathBuf,
    /// Percent of the cycles of a shadowed profile that the shadow runs
    /// too (default 10; 100: every cycle).
    pub sample_percent: Option<u32>,
}

/// Default of `wasmPlugins.shadow.samplePercent`.
pub const DEFAULT_SHADOW_SAMPLE_PERCENT: u32 = 10;

impl ShadowConfig {
    /// `samplePercent`, or its default.
    pub fn sample_percent(&self) -> u32 {
        self.sample_percent.unwrap_or(DEFAULT_SHADOW_SAMPLE_PERCENT)
    }
}

impl WasmConfig {
    /// Reads the `wasmPlugins` value of a configuration; errors name the field.
    pub fn from_value(v: Option<&serde_json::Value>) -> Result<Self, String> {
        let Some(v) = v else { return Ok(Self::default()) };
        let cfg: Self = serde_path_to_error::deserialize(v).map_err(|e| {
            let path = e.path().to_string();
            if path == "." {
                format!("wasmPlugins: {}", e.inner())
            } else {
                format!("wasmPlugins.{path}: {}", e.inner())
            }
        })?;
        if cfg.compile_timeout_seconds == Some(0) {
            return Err("wasmPlugins.compileTimeoutSeconds: must be positive".into());
        }
        if cfg.compile_memory_mib.is_some_and(|m| m < 16) {
            return Err("wasmPlugins.compileMemoryMib: must be at least 16".into());
        }
        if cfg.memory_budget_mib == Some(0) {
            return Err("wasmPlugins.memoryBudgetMib: must be positive".into());
        }
        if let Some(sh) = &cfg.shadow {
            if !(1..=100).contains(&sh.sample_percent()) {
                return Err(format!(
                    "wasmPlugins.shadow.samplePercent: must be between 1 and 100, not {}",
                    sh.sample_percent()
                ));
            }
            if cfg.directory.as_ref().is_some_and(|d| same_directory(d, &sh.directory)) {
                return Err(
                    "wasmPlugins.shadow.directory: must not be wasmPlugins.directory (a directory holds one version of each plugin)".into(),
                );
            }
        }
        for (i, p) in cfg.plugins.iter().enumerate() {
            if p.timeout_ms == Some(0) {
                return Err(format!("wasmPlugins.plugins[{i}].timeoutMs: must be positive"));
            }
            if p.memory_mib == Some(0) {
                return Err(format!("wasmPlugins.plugins[{i}].memoryMib: must be positive"));
            }
        }
        Ok(cfg)
    }

    /// The configuration of the shadow directory: this one's, with the
    /// shadow directory in place of the serving one (the same limits for
    /// the same plugin names, the same cache); `None` without `shadow`.
    pub fn shadow_host_config(&self) -> Option<WasmConfig> {
        let sh = self.shadow.as_ref()?;
        Some(WasmConfig {
            directory: Some(sh.directory.clone()),
            shadow: None,
            ..self.clone()
        })
    }

    /// The limits of `defaults` (what a plugin gets before its name is known).
    pub fn default_limits(&self) -> Limits {
        self.limits("")
    }

    /// The limits of the plugin `name`.
    pub fn limits(&self, name: &str) -> Limits {
        let d = Limits::default();
        let entry = self.plugins.iter().find(|p| p.name == name);
        let pick = |e: Option<u64>, def: Option<u64>| e.or(def);
        Limits {
            timeout: pick(entry.and_then(|e| e.timeout_ms), self.defaults.timeout_ms)
                .map_or(d.timeout, Duration::from_millis),
            memory_bytes: pick(entry.and_then(|e| e.memory_mib), self.defaults.memory_mib)
                .map_or(d.memory_bytes, |m| (m as usize) << 20),
            failure_policy: entry
                .and_then(|e| e.failure_policy)
                .or(self.defaults.failure_policy)
                .unwrap_or_default(),
        }
    }
}

/// Whether two paths name one directory (after resolving links, when they
/// exist).
fn same_directory(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

struct FileEntry {
    sha256: String,
    /// The plugin it provides, when accepted.
    plugin: Option<(Arc<Compiled>, PluginMetadata)>,
    /// Why its current content was refused, if it was: retried when
    /// anything else in the directory changes (a clash may be gone).
    rejected: Option<String>,
}

/// Most plugin files a directory may hold; those past it (in name order)
/// are refused unread.
pub const MAX_DIRECTORY_FILES: usize = 128;

/// Most bytes (as decompressed) the files of a directory may hold
/// together, in files of the largest size (`wasmPlugins.maxFileMib`): 1
/// GiB by default. Files past it (in name order) are refused unread.
pub const MAX_DIRECTORY_FILES_OF_MAX_SIZE: u64 = 16;

/// How a file refused for its compile time is refused (such a file is
/// compiled again only when it changes).
const COMPILE_TOO_LONG: &str = "compiling it took longer than wasmPlugins.compileTimeoutSeconds";

/// Default of `wasmPlugins.compileTimeoutSeconds`.
pub const DEFAULT_COMPILE_TIMEOUT_SECONDS: u64 = 60;

impl WasmConfig {
    /// `compileTimeoutSeconds`, or its default.
    pub fn compile_timeout(&self) -> Duration {
        Duration::from_secs(self.compile_timeout_seconds.unwrap_or(DEFAULT_COMPILE_TIMEOUT_SECONDS))
    }

    /// `compileMemoryMib`, or its default: 1024, or three quarters of the
    /// container's memory limit when that is less (the compiler process
    /// counts against the same limit as the scheduler, and the kernel would
    /// rather kill a process that passes it than fail its allocation).
    pub fn compile_memory_mib(&self) -> u64 {
        self.compile_memory_mib.unwrap_or_else(|| {
            let most = crate::limits::container_memory_limit().map_or(u64::MAX, |l| (l / 4 * 3) as u64 >> 20);
            most.clamp(16, 1024)
        })
    }
}

/// Default of `wasmPlugins.maxFileMib`.
pub const DEFAULT_MAX_FILE_MIB: u64 = 64;

/// Default of `wasmPlugins.baselineMinMib`: interpreters' components
/// (Python ~18 MiB, JavaScript ~13 MiB) start on baseline code; compiled
/// languages' (Rust, C, Zig: tens of KiB; Go: ~4 MiB) take Cranelift a
/// second or less.
pub const DEFAULT_BASELINE_MIN_MIB: u64 = 8;

#[derive(Default)]
struct Inner {
    files: BTreeMap<PathBuf, FileEntry>,
    /// The slots made, held weakly: a slot lives as long as a registry
    /// uses it (a shadow rebuilt drops its old ones, and with them their
    /// instances and their claim on the budget).
    slots: Vec<std::sync::Weak<PluginSlot>>,
    stats: BTreeMap<String, Arc<PluginStats>>,
}

impl Inner {
    /// The file providing plugin `name` now, with its code and metadata.
    fn provider(&self, name: &str) -> Option<(&PathBuf, &Arc<Compiled>, &PluginMetadata)> {
        self.files.iter().find_map(|(path, f)| {
            f.plugin
                .as_ref()
                .filter(|(_, m)| m.name == name)
                .map(|(c, m)| (path, c, m))
        })
    }

    /// The slots still in use.
    fn live_slots(&self) -> Vec<Arc<PluginSlot>> {
        self.slots.iter().filter_map(std::sync::Weak::upgrade).collect()
    }
}

/// What a scan did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ScanReport {
    /// `(file, plugin, version)` of new or changed files accepted.
    pub loaded: Vec<(String, String, String)>,
    /// `(file, reason)` of files rejected.
    pub rejected: Vec<(String, String)>,
    /// Plugins whose file disappeared.
    pub removed: Vec<String>,
    /// Files not compiled by this scan, whose compiles had run out of their
    /// time (the next scan takes them).
    pub deferred: Vec<String>,
}

/// Which compilers a [`PluginHost`] loads files with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tiering {
    /// Cranelift alone (`simulate`, `plugin test`: a one-shot run whose
    /// code should not change midway).
    #[default]
    Off,
    /// A component of at least `wasmPlugins.baselineMinMib` with no
    /// optimised code in the cache serves first on baseline code while
    /// Cranelift compiles it in the background (a scheduler, an extender).
    BaselineFirst,
    /// Baseline code alone, whatever the size (`bench --baseline-code`, to
    /// measure what calls cost on it).
    BaselineOnly,
}

/// The plugins of a directory and the slots the frameworks hold.
pub struct PluginHost {
    /// Tells this host's plugins from another's in the shared budget.
    id: u64,
    engine: WasmEngine,
    config: WasmConfig,
    seed: u64,
    inner: Mutex<Inner>,
    scan_lock: Mutex<()>,
    /// Each file's metadata and digest when it was last read: a file whose
    /// metadata is unchanged is not read again to be hashed.
    seen: Mutex<BTreeMap<PathBuf, (FileStamp, String, u64)>>,
    scans: AtomicU64,
    compiling: Arc<std::sync::atomic::AtomicUsize>,
    /// Bumped whenever a plugin's serving version changes (loaded,
    /// replaced, unloaded).
    changes: AtomicU64,
    /// Per plugin name, how many times its serving version (or why it has
    /// none) changed.
    changes_by_plugin: Mutex<BTreeMap<String, u64>>,
    /// Whether the directory has been scanned once (until then a missing
    /// plugin is one still being compiled).
    first_scan_done: std::sync::atomic::AtomicBool,
    /// Plugin names profiles enable before any file was compiled.
    expected: Mutex<Vec<String>>,
    /// Called after each change of a serving version.
    on_change: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// Which compilers load files ([`PluginHost::set_tiering`]).
    tiering: Mutex<Tiering>,
    /// Files rejected (any plugin).
    pub load_errors: AtomicU64,
    /// Files waiting for Cranelift's code (content digest by path), and
    /// whether the one thread that compiles them runs.
    optimizing: Mutex<(BTreeMap<PathBuf, String>, bool)>,
    /// Every compile at a lower priority ([`PluginHost::set_low_priority`]).
    low_priority: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for PluginHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHost")
            .field("directory", &self.config.directory)
            .finish()
    }
}

impl PluginHost {
    /// A host for `config`; `seed` feeds the plugins' random numbers.
    pub fn new(engine: WasmEngine, config: WasmConfig, seed: u64) -> Arc<Self> {
        // 0 is `Budget::set_plugins`'s own.
        static HOSTS: AtomicU64 = AtomicU64::new(1);
        Arc::new(Self {
            id: HOSTS.fetch_add(1, Ordering::Relaxed),
            engine,
            config,
            seed,
            inner: Mutex::new(Inner::default()),
            scan_lock: Mutex::new(()),
            seen: Mutex::new(BTreeMap::new()),
            scans: AtomicU64::new(0),
            compiling: Arc::default(),
            changes: AtomicU64::new(0),
            changes_by_plugin: Mutex::default(),
            first_scan_done: std::sync::atomic::AtomicBool::new(false),
            expected: Mutex::new(Vec::new()),
            tiering: Mutex::new(Tiering::Off),
            on_change: Mutex::new(None),
            load_errors: AtomicU64::new(0),
            optimizing: Mutex::default(),
            low_priority: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Compiles every file at a lower priority (nice 10), the first scan's
    /// too: for a directory nothing waits on, as a shadow's.
    pub fn set_low_priority(&self, low: bool) {
        self.low_priority.store(low, Ordering::Relaxed);
    }

    /// Which compilers load the directory's files (by default
    /// [`Tiering::Off`]).
    pub fn set_tiering(&self, tiering: Tiering) {
        *self.tiering.lock().unwrap_or_else(|p| p.into_inner()) = tiering;
    }

    fn tiering(&self) -> Tiering {
        *self.tiering.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tier a file's first compile uses.
    fn first_tier(&self, bytes: &[u8], sha256: &str) -> Tier {
        let min = self.config.baseline_min_mib.unwrap_or(DEFAULT_BASELINE_MIN_MIB) << 20;
        let baseline = self.engine.has_baseline()
            && match self.tiering() {
                Tiering::Off => false,
                Tiering::BaselineFirst => bytes.len() as u64 >= min && !self.engine.is_cached(sha256),
                Tiering::BaselineOnly => true,
            };
        if baseline { Tier::Baseline } else { Tier::Optimized }
    }

    /// The engine.
    pub fn engine(&self) -> &WasmEngine {
        &self.engine
    }

    /// The plugins' memory budget.
    pub fn budget(&self) -> &crate::limits::Budget {
        self.engine.budget()
    }

    /// Calls `f` after each change [`PluginHost::changes`] counts (from the
    /// thread that made it): a scheduler that sleeps wakes to retry.
    pub fn on_change(&self, f: Box<dyn Fn() + Send + Sync>) {
        *self.on_change.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
    }

    /// Counts a change of the serving versions of `plugins` and says so.
    fn changed<'a>(&self, plugins: impl IntoIterator<Item = &'a str>) {
        {
            let mut by = self.changes_by_plugin.lock().unwrap_or_else(|p| p.into_inner());
            for p in plugins {
                *by.entry(p.to_owned()).or_default() += 1;
            }
        }
        self.changes.fetch_add(1, Ordering::AcqRel);
        if let Some(f) = &*self.on_change.lock().unwrap_or_else(|p| p.into_inner()) {
            f();
        }
    }

    /// Per plugin name, how many times its serving version (or, while it
    /// has none, the reason) changed so far: a scheduler compares two of
    /// these to learn which plugins a move of [`PluginHost::changes`] was
    /// about.
    pub fn changes_by_plugin(&self) -> BTreeMap<String, u64> {
        self.changes_by_plugin.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many times a plugin's serving version changed so far. A
    /// scheduler retries the pods parked unschedulable when it moves: a
    /// plugin that was missing may now accept them (and a replaced one may
    /// judge them otherwise), which no cluster event would tell.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// The configuration.
    pub fn config(&self) -> &WasmConfig {
        &self.config
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Declares plugin names the profiles enable, before the directory is
    /// compiled: they can be registered (and their slots made, waiting)
    /// at once, and scheduling need not wait for compilation.
    pub fn expect(&self, names: impl IntoIterator<Item = String>) {
        let mut expected = self.expected.lock().unwrap_or_else(|p| p.into_inner());
        for n in names {
            if !expected.contains(&n) {
                expected.push(n);
            }
        }
    }

    /// Whether the directory has been scanned at least once.
    pub fn scanned(&self) -> bool {
        self.first_scan_done.load(Ordering::Acquire)
    }

    /// Plugin names available: from files, declared in the configuration,
    /// and expected by profiles ([`PluginHost::expect`]).
    pub fn names(&self) -> Vec<String> {
        let expected = self.expected.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let inner = self.lock();
        let mut names: Vec<String> = inner
            .files
            .values()
            .filter_map(|f| f.plugin.as_ref().map(|(_, m)| m.name.clone()))
            .chain(self.config.plugins.iter().map(|p| p.name.clone()))
            .chain(expected)
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// `(file, plugin, version)` of every file loaded now.
    pub fn versions(&self) -> Vec<(String, String, String)> {
        self.lock()
            .files
            .iter()
            .filter_map(|(path, f)| {
                let (_, m) = f.plugin.as_ref()?;
                Some((file_name(path), m.name.clone(), m.version.clone()))
            })
            .collect()
    }

    /// The slots created so far (one per profile that enables a plugin).
    pub fn slots(&self) -> Vec<Arc<PluginSlot>> {
        self.lock().live_slots()
    }

    /// Registers a factory for every plugin name, so profiles can enable
    /// them like built-ins.
    pub fn register(self: &Arc<Self>, registry: &mut Registry) {
        self.register_names(registry, self.names());
    }

    /// Registers a factory for each plugin a file of the directory
    /// provides now, replacing what `registry` had under its name (a
    /// shadow directory's plugins over the serving ones).
    pub fn register_loaded(self: &Arc<Self>, registry: &mut Registry) {
        let mut names: Vec<String> = self.versions().into_iter().map(|(_, n, _)| n).collect();
        names.sort();
        names.dedup();
        self.register_names(registry, names);
    }

    fn register_names(self: &Arc<Self>, registry: &mut Registry, names: Vec<String>) {
        for name in names {
            let host = Arc::clone(self);
            let n = name.clone();
            registry.register(
                name,
                Arc::new(move |args| {
                    let args = args.map_or_else(|| "{}".to_owned(), |a| a.to_string());
                    host.slot(&n, args).map(|s| s as _)
                }),
            );
        }
    }

    fn stats_for(inner: &mut Inner, name: &str) -> Arc<PluginStats> {
        inner.stats.entry(name.to_owned()).or_default().clone()
    }

    /// A slot for `name` configured with `args`, serving the current file's
    /// version if there is one. Its instance is made outside the host's lock
    /// (instantiating and `configure` run the guest, up to the load
    /// deadline), so `/readyz`, `/metrics` and the web view do not wait.
    pub fn slot(&self, name: &str, args: String) -> Result<Arc<PluginSlot>, String> {
        let missing = self.missing_reason(name);
        let limits = self.config.limits(name);
        loop {
            let (stats, source) = {
                let mut inner = self.lock();
                // Counted among the enabled plugins before its first
                // instance draws from its share.
                self.share_budget_with(&inner, std::iter::empty(), Some(name));
                let stats = Self::stats_for(&mut inner, name);
                let source = inner
                    .provider(name)
                    .map(|(path, c, m)| (path.clone(), c.clone(), m.clone()));
                (stats, source)
            };
            let initial = match &source {
                Some((path, compiled, meta)) => {
                    match Loaded::new(
                        compiled.clone(),
                        meta,
                        file_name(path),
                        args.clone(),
                        limits,
                        self.seed,
                        stats.clone(),
                        self.config.metric_sources.as_ref(),
                    ) {
                        // The scan counted this version's load; a slot (one
                        // per profile or extender verb) only instantiates it.
                        Ok(loaded) => Ok(Some(Arc::new(loaded))),
                        Err(e) => Err(format!("{} was refused: {e}", file_name(path))),
                    }
                }
                // Before the first scan every plugin is missing: not worth a
                // warning (the scan's end says which are still missing).
                None if !self.scanned() => Ok(None),
                None => {
                    tracing::warn!(
                        plugin = name,
                        policy = ?limits.failure_policy,
                        "no file provides this plugin yet; until one does, failurePolicy fail makes every pod of the profile unschedulable, ignore skips the plugin"
                    );
                    Ok(None)
                }
            };
            let mut inner = self.lock();
            // A scan that replaced the file meanwhile swapped its version
            // into the slots it saw, not this one: start again.
            let same = match (&source, inner.provider(name)) {
                (Some((_, a, _)), Some((_, b, _))) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            };
            if !same {
                continue;
            }
            let slot = match initial {
                Ok(initial) => {
                    let slot = Arc::new(PluginSlot::new(name.to_owned(), args, limits, initial, stats));
                    slot.set_missing(missing);
                    slot
                }
                Err(why) => {
                    // Not loaded, not fatal: the failure policy decides
                    // what the profile's pods get (see `not_loaded`).
                    stats.load_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(plugin = name, reason = %why, policy = ?limits.failure_policy, "plugin not loaded");
                    let slot = Arc::new(PluginSlot::new(name.to_owned(), args, limits, None, stats));
                    slot.set_missing(why);
                    slot
                }
            };
            inner.slots.retain(|w| w.strong_count() > 0);
            inner.slots.push(Arc::downgrade(&slot));
            self.share_budget(&inner, std::iter::empty());
            return Ok(slot);
        }
    }

    /// Why no version of `name` is loaded, in the words of the directory.
    fn missing_reason(&self, name: &str) -> String {
        if !self.scanned() {
            return "the plugin directory is still being compiled".to_owned();
        }
        let inner = self.lock();
        let dir = self.config.directory.as_ref().map_or_else(
            || "no plugin directory is configured".to_owned(),
            |d| d.display().to_string(),
        );
        // A file that names this plugin but was refused says why.
        let refused = inner.files.iter().find_map(|(p, f)| {
            let ours = f.plugin.as_ref().is_some_and(|(_, m)| m.name == name) || file_stem(p) == name;
            f.rejected
                .as_ref()
                .filter(|_| ours)
                .map(|why| format!("{} was refused: {why}", file_name(p)))
        });
        refused.unwrap_or_else(|| format!("no file in {dir} provides it"))
    }

    /// Compiles and probes a file on a thread of its own, waiting at most
    /// `wasmPlugins.compileTimeoutSeconds`: a file that takes longer is
    /// refused, so one slow file cannot hold the scan of every other
    /// plugin. A compiler process is killed at the limit; an in-process
    /// compile finishes in the background and is dropped. `tier` is the
    /// compiler tried first: a component the baseline compiler cannot
    /// compile (a proposal Winch lacks) is compiled by Cranelift.
    fn compile_within(
        &self,
        path: &Path,
        bytes: Arc<Vec<u8>>,
        tier: Tier,
    ) -> Result<(Arc<Compiled>, PluginMetadata), LoadError> {
        let limit = self.config.compile_timeout();
        // The first scan's compiles are what the scheduler waits for to
        // start; a later scan's (a hot reload) and a shadow directory's run
        // behind the scheduling threads, at nice 10.
        let background = self.low_priority.load(Ordering::Relaxed) || self.first_scan_done.load(Ordering::Acquire);
        let (tx, rx) = std::sync::mpsc::channel();
        let engine = self.engine.clone();
        let limits = self.config.default_limits();
        let compiling = self.compiling.clone();
        let file = file_name(path);
        compiling.fetch_add(1, Ordering::Relaxed);
        let spawned = std::thread::Builder::new()
            .name(format!("wasm-compile-{file}"))
            .spawn(move || {
                let outcome = match engine.compile(&bytes, limit, tier, background) {
                    Err(LoadError::Invalid(why)) if tier == Tier::Baseline => {
                        tracing::info!(%file, reason = %why, "the baseline compiler cannot compile it; compiling with Cranelift");
                        engine.compile(&bytes, limit, Tier::Optimized, background)
                    }
                    other => other,
                };
                let outcome = outcome.and_then(|c| probe(&c, &limits).map(|m| (Arc::new(c), m)));
                compiling.fetch_sub(1, Ordering::Relaxed);
                let _ = tx.send(outcome);
            });
        if let Err(e) = spawned {
            self.compiling.fetch_sub(1, Ordering::Relaxed);
            return Err(LoadError::Engine(format!("cannot start a compile thread: {e}")));
        }
        // A compiler process is killed at the limit and says so; the wait
        // here is the backstop of an in-process compile (and of the second
        // compile a baseline failure leads to).
        let slack = match self.engine.compiler() {
            crate::engine::Compiler::Process { .. } => Duration::from_secs(5),
            crate::engine::Compiler::InProcess => Duration::ZERO,
        };
        let attempts = if tier == Tier::Baseline { 2 } else { 1 };
        match rx.recv_timeout(limit * attempts + slack) {
            Ok(outcome) => outcome,
            Err(_) => Err(LoadError::Refused(format!("{COMPILE_TOO_LONG} ({}s)", limit.as_secs()))),
        }
    }

    /// Queues the file `path` (content `sha`) for Cranelift's code, compiled
    /// in the background, one file at a time, at a lower priority (the
    /// thread and its compiler process run at nice 10), and swapped into
    /// every slot its baseline version serves unless the file changed
    /// meanwhile. A failure leaves the baseline version serving. The file is
    /// read again when its turn comes: a scan holds no file's bytes.
    fn optimize_later(self: &Arc<Self>, path: PathBuf, sha: String) {
        let mut q = self.optimizing.lock().unwrap_or_else(|p| p.into_inner());
        q.0.insert(path, sha);
        if q.1 {
            return;
        }
        q.1 = true;
        drop(q);
        let host = Arc::downgrade(self);
        let spawned = std::thread::Builder::new().name("wasm-optimize".into()).spawn(move || {
            let _ = crate::engine::lower_priority();
            loop {
                let Some(host) = host.upgrade() else { return };
                let next = {
                    let mut q = host.optimizing.lock().unwrap_or_else(|p| p.into_inner());
                    let next = q.0.pop_first();
                    if next.is_none() {
                        q.1 = false;
                    }
                    next
                };
                let Some((path, sha)) = next else { return };
                host.optimize(&path, &sha);
            }
        });
        if let Err(e) = spawned {
            self.optimizing.lock().unwrap_or_else(|p| p.into_inner()).1 = false;
            tracing::warn!(error = %e, "cannot start the optimising compiles; the baseline code keeps serving");
        }
    }

    /// Compiles `path` with Cranelift if it still holds `sha`, and installs
    /// the code.
    fn optimize(&self, path: &Path, sha: &str) {
        let Some(dir) = &self.config.directory else { return };
        let bytes = match read_in(dir, path, self.max_file_bytes()) {
            Ok(b) if crate::sha256_hex(&b) == sha => b,
            // Changed or gone: the scan that saw it deals with it.
            _ => return,
        };
        self.compiling.fetch_add(1, Ordering::Relaxed);
        let started = std::time::Instant::now();
        let outcome = self
            .engine
            .compile(&bytes, self.config.compile_timeout(), Tier::Optimized, true);
        drop(bytes);
        self.compiling.fetch_sub(1, Ordering::Relaxed);
        match outcome {
            Ok(c) => self.install_optimized(path, sha, Arc::new(c), started.elapsed()),
            Err(e) => tracing::warn!(
                file = %file_name(path),
                error = %e,
                "cannot compile the optimised code; the baseline code keeps serving"
            ),
        }
    }

    /// Swaps `compiled` (Cranelift's code of `path` at content `sha`) into
    /// the slots its baseline version serves. The plugin's behaviour does
    /// not change, so nothing is retried for it.
    fn install_optimized(&self, path: &Path, sha: &str, compiled: Arc<Compiled>, took: Duration) {
        let mut inner = self.lock();
        let Some((baseline, meta)) = inner
            .files
            .get(path)
            .filter(|f| f.sha256 == sha)
            .and_then(|f| f.plugin.clone())
            .filter(|(c, _)| c.tier == Tier::Baseline)
        else {
            return;
        };
        let stats = Self::stats_for(&mut inner, &meta.name);
        let slots: Vec<Arc<PluginSlot>> = inner
            .live_slots()
            .into_iter()
            .filter(|s| s.current().is_some_and(|l| Arc::ptr_eq(l.compiled(), &baseline)))
            .collect();
        // Instantiating runs the guest: not under the host's lock.
        drop(inner);
        let versions = self.versions_for(&slots, &compiled, &meta, path, &stats);
        let mut inner = self.lock();
        // The file changed meanwhile: its scan deals with it.
        if inner.files.get(path).is_none_or(|f| f.sha256 != sha) {
            return;
        }
        let versions = match versions {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(file = %file_name(path), plugin = %meta.name, error = %e, "the optimised code does not load; the baseline code keeps serving");
                return;
            }
        };
        for (slot, v) in slots.iter().zip(versions) {
            slot.swap(Some(v));
        }
        if let Some(f) = inner.files.get_mut(path) {
            f.plugin = Some((compiled, meta.clone()));
        }
        tracing::info!(file = %file_name(path), plugin = %meta.name, compile_ms = took.as_millis() as u64, "plugin optimised: Cranelift's code replaces the baseline code");
    }

    /// `compiled` loaded once for each of `slots`, with the slot's args and
    /// limits; the first that fails (its `configure` refusing those args)
    /// fails them all.
    fn versions_for(
        &self,
        slots: &[Arc<PluginSlot>],
        compiled: &Arc<Compiled>,
        meta: &PluginMetadata,
        path: &Path,
        stats: &Arc<PluginStats>,
    ) -> Result<Vec<Arc<Loaded>>, LoadError> {
        slots
            .iter()
            .map(|slot| {
                Loaded::new(
                    compiled.clone(),
                    meta,
                    file_name(path),
                    slot.args.clone(),
                    slot.limits,
                    self.seed,
                    stats.clone(),
                    self.config.metric_sources.as_ref(),
                )
                .map(Arc::new)
            })
            .collect()
    }

    fn max_file_bytes(&self) -> u64 {
        self.config.max_file_mib.unwrap_or(DEFAULT_MAX_FILE_MIB) << 20
    }

    /// Compilations running now, abandoned ones (past their time limit)
    /// included.
    pub fn compiling(&self) -> usize {
        self.compiling.load(Ordering::Relaxed)
    }

    /// Scans done so far (each reads the directory and hashes every file).
    pub fn scans(&self) -> u64 {
        self.scans.load(Ordering::Relaxed)
    }

    /// Loads one file for inspection (`plugin check`, `plugin test`),
    /// configured with `args`.
    pub fn load_file(&self, path: &Path, args: &str) -> Result<Loaded, LoadError> {
        self.load_file_with(path, args, Tier::Optimized)
    }

    /// [`PluginHost::load_file`] with `tier`'s compiler.
    pub fn load_file_with(&self, path: &Path, args: &str, tier: Tier) -> Result<Loaded, LoadError> {
        let bytes = read(path, self.max_file_bytes())?;
        let compiled = Arc::new(
            self.engine
                .compile(&bytes, self.config.compile_timeout(), tier, false)?,
        );
        let meta = probe(&compiled, &self.config.default_limits())?;
        let limits = self.config.limits(&meta.name);
        Loaded::new(
            compiled,
            &meta,
            file_name(path),
            args.to_owned(),
            limits,
            self.seed,
            Arc::default(),
            self.config.metric_sources.as_ref(),
        )
    }

    /// Reads the directory: compiles new and changed files, swaps their
    /// versions into the slots, unloads plugins whose file is gone. A file
    /// that fails leaves the version serving untouched.
    pub fn scan(self: &Arc<Self>) -> ScanReport {
        let report = self.scan_directory();
        if !self.first_scan_done.swap(true, Ordering::AcqRel) {
            // Slots made while the directory was being compiled: a plugin
            // still missing now says why.
            let mut missing = Vec::new();
            for slot in self.slots() {
                if slot.current().is_none() {
                    slot.set_missing(self.missing_reason(slot.name()));
                    missing.push(slot.name().to_owned());
                }
            }
            self.changed(missing.iter().map(String::as_str));
        }
        report
    }

    fn scan_directory(self: &Arc<Self>) -> ScanReport {
        let _one_at_a_time = self.scan_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.scans.fetch_add(1, Ordering::Relaxed);
        let mut report = ScanReport::default();
        let Some(dir) = &self.config.directory else {
            return report;
        };
        // Each file's digest, one file in memory at a time: a directory of
        // gzip bombs is never decompressed all at once.
        let mut present: BTreeMap<PathBuf, Result<String, LoadError>> = BTreeMap::new();
        let mut files = Vec::new();
        match std::fs::read_dir(dir) {
            Ok(entries) => {
                for e in entries.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with('.') || !(name.ends_with(".wasm") || name.ends_with(GZ_SUFFIX)) {
                        continue;
                    }
                    let path = e.path();
                    if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                        continue;
                    }
                    files.push(path);
                }
            }
            Err(e) => {
                tracing::error!(directory = %dir.display(), error = %e, "cannot read the plugin directory");
                return report;
            }
        }
        // In name order, up to the directory's limits: what passes them is
        // refused, named, and not read.
        files.sort();
        let count = files.len();
        let max_bytes = MAX_DIRECTORY_FILES_OF_MAX_SIZE * self.max_file_bytes();
        let mut total: u64 = 0;
        for (i, path) in files.into_iter().enumerate() {
            if i >= MAX_DIRECTORY_FILES {
                present.insert(
                    path,
                    Err(LoadError::Refused(format!(
                        "the directory holds {count} plugin files, more than the host reads ({MAX_DIRECTORY_FILES}); files are read in name order"
                    ))),
                );
                continue;
            }
            if total >= max_bytes {
                present.insert(
                    path,
                    Err(LoadError::Refused(format!(
                        "the files before it in name order already hold {} MiB, as much as the host reads from a directory ({} MiB: {MAX_DIRECTORY_FILES_OF_MAX_SIZE} times wasmPlugins.maxFileMib)",
                        total >> 20,
                        max_bytes >> 20
                    ))),
                );
                continue;
            }
            let digest = self.digest(dir, &path).map(|(sha, len)| {
                total += len;
                sha
            });
            present.insert(path, digest);
        }
        // Removals first: a renamed file (or ConfigMap key) must not clash
        // with its own old entry.
        let removed_files: Vec<PathBuf> = self
            .lock()
            .files
            .keys()
            .filter(|p| !present.contains_key(*p))
            .cloned()
            .collect();
        {
            let mut inner = self.lock();
            for path in &removed_files {
                let Some(entry) = inner.files.remove(path) else {
                    continue;
                };
                let Some((_, meta)) = entry.plugin else { continue };
                for slot in inner.live_slots().iter().filter(|s| s.name() == meta.name) {
                    slot.swap(None);
                    slot.set_missing(format!("its file {} was removed", file_name(path)));
                }
                self.changed([meta.name.as_str()]);
                tracing::info!(file = %file_name(path), plugin = %meta.name, "plugin file removed; plugin unloaded");
                report.removed.push(meta.name);
            }
        }
        // Changed or new files: compile outside the lock. A refused file is
        // tried again when anything in the directory changed.
        // Per file: its digest, and whether it was refused for a reason a
        // change elsewhere may lift (a name clash may be gone; a file that
        // took too long to compile takes as long again: only its own change
        // retries it).
        let known: BTreeMap<PathBuf, (String, bool)> = self
            .lock()
            .files
            .iter()
            .map(|(p, f)| {
                let retry = f.rejected.as_ref().is_some_and(|why| !why.contains(COMPILE_TOO_LONG));
                (p.clone(), (f.sha256.clone(), retry))
            })
            .collect();
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p, _| present.contains_key(p));
        let hashes: BTreeMap<PathBuf, String> = present
            .iter()
            .filter_map(|(p, sha)| sha.as_ref().ok().map(|sha| (p.clone(), sha.clone())))
            .collect();
        let dir_changed =
            !removed_files.is_empty() || hashes.iter().any(|(p, sha)| known.get(p).is_none_or(|(k, _)| k != sha));
        let mut changed = Vec::new();
        // A new version of a file already served is compiled before new
        // files; once the scan has compiled for twice the compile time
        // limit, the files left wait for the next scan (a directory of slow
        // files does not hold back the fix of another plugin for hours).
        let mut present: Vec<(PathBuf, Result<String, LoadError>)> = present.into_iter().collect();
        present.sort_by_key(|(p, _)| !known.contains_key(p));
        let budget = self.config.compile_timeout() * 2;
        let started = std::time::Instant::now();
        for (path, sha) in present {
            let unreadable = |this: &Self, report: &mut ScanReport, path: PathBuf, e: LoadError| {
                if known.get(&path).is_none_or(|(_, rejected)| !rejected) {
                    this.reject(report, &path, &e.to_string());
                }
                Self::refused(&mut this.lock(), path, String::new(), e.to_string());
            };
            let sha = match sha {
                Ok(s) => s,
                Err(e) => {
                    unreadable(self, &mut report, path, e);
                    continue;
                }
            };
            if let Some((k, rejected)) = known.get(&path)
                && *k == sha
                && !(*rejected && dir_changed)
            {
                continue;
            }
            if started.elapsed() > budget {
                report.deferred.push(file_name(&path));
                continue;
            }
            // Read again to compile (it may have changed since it was
            // hashed: its digest is the one compiled).
            let bytes = match read_in(dir, &path, self.max_file_bytes()) {
                Ok(b) => b,
                Err(e) => {
                    unreadable(self, &mut report, path, e);
                    continue;
                }
            };
            let sha = crate::sha256_hex(&bytes);
            let tier = self.first_tier(&bytes, &sha);
            let outcome = self.compile_within(&path, Arc::new(bytes), tier);
            // No file's bytes outlive its compile: Cranelift's later
            // compile of code served on baseline reads the file again.
            changed.push((path, sha, tier, outcome));
        }
        let mut inner = self.lock();
        // The budget is shared among the plugins about to serve before any
        // of them is instantiated, and again once the scan has settled.
        let coming = changed
            .iter()
            .filter_map(|(_, _, _, o)| o.as_ref().ok().map(|(_, m)| m.name.clone()));
        self.share_budget(&inner, coming);
        let mut to_optimize = Vec::new();
        for (path, sha, tier, outcome) in changed {
            match outcome {
                Err(e) => {
                    self.reject(&mut report, &path, &e.to_string());
                    // Remember the hash so an unchanged bad file is not retried
                    // until something changes; the previous version (if any)
                    // keeps serving.
                    Self::refused(&mut inner, path, sha, e.to_string());
                }
                Ok((compiled, meta)) => {
                    let clash = inner
                        .files
                        .iter()
                        .find(|(p, f)| **p != path && f.plugin.as_ref().is_some_and(|(_, m)| m.name == meta.name));
                    if let Some((other, _)) = clash {
                        let why = format!(
                            "plugin name {:?} is already provided by {}",
                            meta.name,
                            file_name(other)
                        );
                        self.reject(&mut report, &path, &why);
                        inner.files.insert(
                            path,
                            FileEntry {
                                sha256: sha,
                                plugin: None,
                                rejected: Some(why),
                            },
                        );
                        continue;
                    }
                    let mut slots: Vec<Arc<PluginSlot>> = inner
                        .live_slots()
                        .into_iter()
                        .filter(|s| s.name() == meta.name)
                        .collect();
                    let stats = Self::stats_for(&mut inner, &meta.name);
                    // Instantiating runs the guest (up to its load
                    // deadline): not under the lock `/readyz`, `/metrics`
                    // and new slots take.
                    drop(inner);
                    let mut versions = self.versions_for(&slots, &compiled, &meta, &path, &stats);
                    inner = self.lock();
                    // A slot made meanwhile gets the new version too.
                    let late: Vec<Arc<PluginSlot>> = inner
                        .live_slots()
                        .into_iter()
                        .filter(|s| s.name() == meta.name && !slots.iter().any(|o| Arc::ptr_eq(o, s)))
                        .collect();
                    if !late.is_empty()
                        && let Ok(v) = &mut versions
                    {
                        match self.versions_for(&late, &compiled, &meta, &path, &stats) {
                            Ok(more) => v.extend(more),
                            Err(e) => versions = Err(e),
                        }
                        slots.extend(late);
                    }
                    let versions = match versions {
                        Ok(v) => v,
                        Err(e) => {
                            let why = e.to_string();
                            stats.load_errors.fetch_add(1, Ordering::Relaxed);
                            self.reject(&mut report, &path, &why);
                            if !Self::refused(&mut inner, path.clone(), sha, why.clone()) {
                                for slot in &slots {
                                    slot.set_missing(format!("{} was refused: {why}", file_name(&path)));
                                }
                            }
                            continue;
                        }
                    };
                    // Every slot accepted the new version: swap them all.
                    for (slot, v) in slots.iter().zip(versions) {
                        slot.swap(Some(v));
                    }
                    self.changed([meta.name.as_str()]);
                    stats.loads.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(file = %file_name(&path), plugin = %meta.name, version = %meta.version, sha256 = %compiled.sha256, cached = compiled.cached, compiler = compiled.tier.compiler(), "plugin loaded");
                    report
                        .loaded
                        .push((file_name(&path), meta.name.clone(), meta.version.clone()));
                    if compiled.tier == Tier::Baseline
                        && tier == Tier::Baseline
                        && self.tiering() == Tiering::BaselineFirst
                    {
                        to_optimize.push((path.clone(), sha.clone()));
                    }
                    inner.files.insert(
                        path,
                        FileEntry {
                            sha256: sha,
                            plugin: Some((compiled, meta)),
                            rejected: None,
                        },
                    );
                }
            }
        }
        self.share_budget(&inner, std::iter::empty());
        drop(inner);
        for (path, sha) in to_optimize {
            self.optimize_later(path, sha);
        }
        report
    }

    /// Divides the memory budget among the plugins profiles enable (those
    /// with a slot, or expected by [`PluginHost::expect`]): a file no
    /// profile enables makes no instance and takes no share, so unused
    /// files cannot shrink the serving plugins' shares. With none enabled
    /// yet, among the plugins loaded and `coming`.
    fn share_budget(&self, inner: &Inner, coming: impl Iterator<Item = String>) {
        self.share_budget_with(inner, coming, None);
    }

    /// [`PluginHost::share_budget`], counting `slot_for` as enabled too (a
    /// slot about to be made).
    fn share_budget_with(&self, inner: &Inner, coming: impl Iterator<Item = String>, slot_for: Option<&str>) {
        let mut enabled: std::collections::BTreeSet<String> =
            inner.live_slots().iter().map(|s| s.name().to_owned()).collect();
        enabled.extend(slot_for.map(str::to_owned));
        enabled.extend(self.expected.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned());
        let n = if enabled.is_empty() {
            let mut names: std::collections::BTreeSet<String> = inner
                .files
                .values()
                .filter_map(|f| f.plugin.as_ref().map(|(_, m)| m.name.clone()))
                .collect();
            names.extend(coming);
            names.len()
        } else {
            enabled.len()
        };
        self.budget().set_plugins_of(self.id, n);
    }

    /// Records that the content `sha` of `path` was refused, keeping the
    /// plugin version the file provided before (it keeps serving); true when
    /// there was one.
    /// The digest of a file of the directory: read (and dropped) unless its
    /// metadata is what it was when last read.
    fn digest(&self, dir: &Path, path: &Path) -> Result<(String, u64), LoadError> {
        let stamp = FileStamp::of(path);
        if let Some(stamp) = &stamp
            && let Some((seen, sha, len)) = self.seen.lock().unwrap_or_else(|p| p.into_inner()).get(path)
            && seen == stamp
        {
            return Ok((sha.clone(), *len));
        }
        let bytes = read_in(dir, path, self.max_file_bytes())?;
        let (sha, len) = (crate::sha256_hex(&bytes), bytes.len() as u64);
        if let Some(stamp) = stamp {
            self.seen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(path.to_owned(), (stamp, sha.clone(), len));
        }
        Ok((sha, len))
    }

    fn refused(inner: &mut Inner, path: PathBuf, sha: String, why: String) -> bool {
        let prev = inner.files.remove(&path).and_then(|f| f.plugin);
        let had = prev.is_some();
        inner.files.insert(
            path,
            FileEntry {
                sha256: sha,
                plugin: prev,
                rejected: Some(why),
            },
        );
        had
    }

    fn reject(&self, report: &mut ScanReport, path: &Path, why: &str) {
        self.load_errors.fetch_add(1, Ordering::Relaxed);
        tracing::error!(file = %path.display(), reason = %why, "plugin file rejected; the previous version (if any) keeps serving");
        report.rejected.push((file_name(path), why.to_owned()));
    }

    /// Watches the directory and rescans after changes settle (and every
    /// `resync` as a safety net). Stops when the returned handle is dropped.
    pub fn watch(self: &Arc<Self>, debounce: Duration, resync: Duration) -> Result<Watch, String> {
        use notify::Watcher as _;
        let dir = self.config.directory.clone().ok_or("no plugin directory configured")?;
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let events = tx.clone();
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            // Only changes count: the scan's own reads of the directory
            // (open, read, close without write) would otherwise trigger
            // the next scan, forever.
            use notify::EventKind as K;
            use notify::event::{AccessKind, AccessMode, ModifyKind};
            let change = match res {
                Ok(ev) => matches!(
                    ev.kind,
                    K::Create(_)
                        | K::Remove(_)
                        | K::Modify(ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any)
                        | K::Access(AccessKind::Close(AccessMode::Write))
                        | K::Any
                ),
                Err(_) => true,
            };
            if change {
                let _ = events.send(());
            }
        })
        .map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
        watcher
            .watch(&dir, notify::RecursiveMode::NonRecursive)
            .map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
        let host = Arc::downgrade(self);
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("wasm-plugin-watch".into())
            .spawn(move || {
                loop {
                    let first = rx.recv_timeout(resync);
                    if matches!(
                        stop_rx.try_recv(),
                        Ok(()) | Err(std::sync::mpsc::TryRecvError::Disconnected)
                    ) {
                        return;
                    }
                    if let Err(std::sync::mpsc::RecvTimeoutError::Disconnected) = first {
                        return;
                    }
                    // Debounce: wait until no event for `debounce`.
                    while rx.recv_timeout(debounce).is_ok() {}
                    let Some(host) = host.upgrade() else { return };
                    // Files deferred for time are taken by the next scan,
                    // at once.
                    while !host.scan().deferred.is_empty() {
                        if stop_rx.try_recv().is_ok() {
                            return;
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start the watch thread: {e}"))?;
        Ok(Watch {
            _watcher: watcher,
            stop: Some((stop_tx, tx)),
            thread: Some(thread),
        })
    }
}

/// A running directory watch; dropping it stops the watch.
pub struct Watch {
    _watcher: notify::RecommendedWatcher,
    stop: Option<(std::sync::mpsc::Sender<()>, std::sync::mpsc::Sender<()>)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some((stop, wake)) = self.stop.take() {
            let _ = stop.send(());
            let _ = wake.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn file_stem(p: &Path) -> String {
    let name = file_name(p);
    let name = name
        .strip_suffix(GZ_SUFFIX)
        .map_or(name.as_str(), |n| n.strip_suffix(".wasm").unwrap_or(n));
    Path::new(name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What says a file changed without reading it: the file a path leads to
/// (device and inode: a ConfigMap update links the name to a new file), its
/// size, and its modification and change times.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    #[cfg(unix)]
    fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    #[cfg(not(unix))]
    fn of(_: &Path) -> Option<Self> {
        None
    }
}

/// The suffix of a gzip-compressed component.
pub const GZ_SUFFIX: &str = ".wasm.gz";

/// Reads a plugin file given by path (`plugin check`, `plugin test`):
/// a regular file (links followed) of at most `max` bytes.
fn read(path: &Path, max: u64) -> Result<Vec<u8>, LoadError> {
    let target = std::fs::canonicalize(path).map_err(|e| LoadError::Io(e.to_string()))?;
    read_regular(path, &target, max)
}

/// Reads a file of the plugin directory: a regular file inside `dir`
/// (ConfigMap volumes link each name into `..data`, which is inside), of at
/// most `max` bytes. A link out of the directory, a FIFO, a device are refused.
fn read_in(dir: &Path, path: &Path, max: u64) -> Result<Vec<u8>, LoadError> {
    let io = |e: std::io::Error| LoadError::Io(e.to_string());
    let link = std::fs::symlink_metadata(path).map_err(io)?;
    let root = std::fs::canonicalize(dir).map_err(io)?;
    // The file opened is the link's target (checked to be inside), reached
    // from the directory one component at a time without following links:
    // a name, or a directory on the way (a ConfigMap's `..data`), swapped
    // for a link out between the check and the open is refused, not
    // followed.
    let target = if link.file_type().is_symlink() {
        let target = std::fs::canonicalize(path).map_err(io)?;
        if !target.starts_with(&root) {
            return Err(LoadError::Refused(format!(
                "it is a link to {}, outside the plugin directory",
                target.display()
            )));
        }
        target
    } else {
        root.join(path.file_name().unwrap_or_default())
    };
    let rel = target
        .strip_prefix(&root)
        .map_err(|_| LoadError::Refused(format!("{} is not inside the plugin directory", target.display())))?;
    read_opened(path, open_beneath(&root, rel), max)
}

/// Opens `rel` (plain components) beneath the directory `root`, one
/// component at a time, following no link on the way: each is opened
/// inside the directory opened before it (through `/proc/self/fd`, so the
/// directory is the one already open whatever its name leads to now).
#[cfg(target_os = "linux")]
pub(crate) fn open_beneath(root: &Path, rel: &Path) -> Result<(std::fs::File, std::fs::Metadata), OpenError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    use std::os::unix::io::AsRawFd as _;
    let mut dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(root)
        .map_err(OpenError::Io)?;
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            std::path::Component::Normal(n) => Ok(n),
            _ => Err(OpenError::Io(std::io::Error::other("not a plain relative path"))),
        })
        .collect::<Result<_, _>>()?;
    let Some((last, on_the_way)) = parts.split_last() else {
        return Err(OpenError::NotRegular);
    };
    let inside = |dir: &std::fs::File, name: &std::ffi::OsStr| {
        Path::new("/proc/self/fd").join(dir.as_raw_fd().to_string()).join(name)
    };
    for name in on_the_way {
        dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(inside(&dir, name))
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP | libc::ENOTDIR) => OpenError::Link,
                _ => OpenError::Io(e),
            })?;
    }
    open_regular(&inside(&dir, last))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn open_beneath(root: &Path, rel: &Path) -> Result<(std::fs::File, std::fs::Metadata), OpenError> {
    open_regular(&root.join(rel))
}

/// Why a file could not be opened as a regular file ([`open_regular`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    #[error("{0}")]
    Io(std::io::Error),
    #[error("it changed into a link while it was read")]
    Link,
    #[error("it is not a regular file")]
    NotRegular,
}

/// Opens `target` for reading without following a link and without
/// waiting (a FIFO swapped in would block the reader), and checks what was
/// opened, not what the path named a moment before: the plugin directory's
/// files and the compiled cache's are read through it.
pub(crate) fn open_regular(target: &Path) -> Result<(std::fs::File, std::fs::Metadata), OpenError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    let file = options.open(target).map_err(|e| match e.raw_os_error() {
        #[cfg(unix)]
        Some(libc::ELOOP) => OpenError::Link,
        _ => OpenError::Io(e),
    })?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if !meta.is_file() {
        return Err(OpenError::NotRegular);
    }
    Ok((file, meta))
}

/// Reads the regular file `target` (`path` names it: a `.wasm.gz` name is
/// decompressed).
fn read_regular(path: &Path, target: &Path, max: u64) -> Result<Vec<u8>, LoadError> {
    read_opened(path, open_regular(target), max)
}

/// Reads the regular file `opened` (`path` names it: a `.wasm.gz` name is
/// decompressed).
fn read_opened(
    path: &Path,
    opened: Result<(std::fs::File, std::fs::Metadata), OpenError>,
    max: u64,
) -> Result<Vec<u8>, LoadError> {
    use std::io::Read as _;
    let (file, meta) = opened.map_err(|e| match e {
        OpenError::Io(e) => LoadError::Io(e.to_string()),
        refused => LoadError::Refused(refused.to_string()),
    })?;
    let too_big = |n: u64| {
        LoadError::Refused(format!(
            "it is {:.1} MiB, more than wasmPlugins.maxFileMib ({} MiB)",
            n as f64 / (1 << 20) as f64,
            max >> 20
        ))
    };
    if meta.len() > max {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LoadError::Io(e.to_string()))?;
    if bytes.len() as u64 > max {
        return Err(too_big(bytes.len() as u64));
    }
    if path.to_string_lossy().ends_with(GZ_SUFFIX) {
        return gunzip(&bytes, max);
    }
    Ok(bytes)
}

/// A `.wasm.gz` file's component. The limit applies to what it
/// decompresses to too (a small file may decompress to gigabytes).
fn gunzip(compressed: &[u8], max: u64) -> Result<Vec<u8>, LoadError> {
    use std::io::Read as _;
    let mut out = Vec::with_capacity(compressed.len().saturating_mul(3).min(max as usize));
    flate2::read::GzDecoder::new(compressed)
        .take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| LoadError::Refused(format!("it is not valid gzip: {e}")))?;
    if out.len() as u64 > max {
        return Err(LoadError::Refused(format!(
            "it decompresses to more than wasmPlugins.maxFileMib ({} MiB)",
            max >> 20
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shadow_needs_its_own_directory_and_a_percent_in_range() {
        let read = |v: serde_json::Value| WasmConfig::from_value(Some(&v));
        let ok = read(serde_json::json!({"directory": "/p", "shadow": {"directory": "/p/shadow"}})).unwrap();
        let shadow = ok.shadow_host_config().unwrap();
        assert_eq!(shadow.directory.as_deref(), Some(Path::new("/p/shadow")));
        assert!(shadow.shadow.is_none());
        assert_eq!(ok.shadow.unwrap().sample_percent(), DEFAULT_SHADOW_SAMPLE_PERCENT);
        for (v, field) in [
            (
                serde_json::json!({"directory": "/p", "shadow": {"directory": "/p"}}),
                "wasmPlugins.shadow.directory: must not be wasmPlugins.directory",
            ),
            (
                serde_json::json!({"shadow": {"directory": "/s", "samplePercent": 0}}),
                "wasmPlugins.shadow.samplePercent: must be between 1 and 100, not 0",
            ),
            (
                serde_json::json!({"shadow": {"directory": "/s", "samplePercent": 101}}),
                "wasmPlugins.shadow.samplePercent",
            ),
            (
                serde_json::json!({"shadow": {"dir": "/s"}}),
                "wasmPlugins.shadow.dir: unknown field `dir`",
            ),
        ] {
            let e = read(v.clone()).unwrap_err();
            assert!(e.starts_with(field), "{v}: {e}");
        }
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wasmsched-dir-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A directory on the way to a plugin file that is (or became) a link
    /// is not followed, even to a file inside: a swapped `..data` ends the
    /// open instead of leading elsewhere.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_link_on_the_way_to_a_file_is_not_followed() {
        let d = scratch("beneath");
        std::fs::create_dir_all(d.join("v1")).unwrap();
        std::fs::write(d.join("v1/a.wasm"), b"x").unwrap();
        std::os::unix::fs::symlink(d.join("v1"), d.join("data")).unwrap();
        assert!(open_beneath(&d, Path::new("v1/a.wasm")).is_ok());
        assert!(matches!(
            open_beneath(&d, Path::new("data/a.wasm")),
            Err(OpenError::Link)
        ));
        std::os::unix::fs::symlink(d.join("v1/a.wasm"), d.join("b.wasm")).unwrap();
        assert!(matches!(open_beneath(&d, Path::new("b.wasm")), Err(OpenError::Link)));
        // Through its link name the file is read (ConfigMap volumes): the
        // link resolved once, inside, then opened link by link.
        assert_eq!(read_in(&d, &d.join("b.wasm"), 1 << 20).unwrap(), b"x");
    }
}
