//! One wasmtime engine for every plugin: component model, Cranelift, epoch
//! interruption for deadlines; compiled artifacts cached on disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker, types::ComponentItem};
use wasmtime::{Config, Engine};

use crate::LoadError;
use crate::host::{BindingsPre, HostState, v0_1, v0_2};
use crate::limits::Budget;

/// How often the engine's epoch advances: the granularity of call deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// The interfaces a plugin may import (any 0.1.x).
const ALLOWED_IMPORTS: [&str; 4] = [
    "wasmsched:plugin/cluster@0.1.",
    "wasmsched:plugin/host@0.1.",
    "wasmsched:plugin/cluster@0.2.",
    "wasmsched:plugin/host@0.2.",
];

/// The engine, its linker and the compiled-artifact cache.
#[derive(Clone)]
pub struct WasmEngine {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    linker: Linker<HostState>,
    cache_dir: Option<PathBuf>,
    budget: Arc<Budget>,
    /// The engine's epoch as the epoch thread advances it, readable by host
    /// functions (wasmtime does not expose its own counter).
    epochs: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for WasmEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmEngine")
            .field("cache_dir", &self.inner.cache_dir)
            .finish()
    }
}

/// A component compiled and linked, ready to instantiate.
pub(crate) struct Compiled {
    pub pre: BindingsPre,
    pub sha256: String,
    /// Whether it came from the on-disk cache.
    pub cached: bool,
    /// The host's memory budget its instances draw from.
    pub budget: Arc<Budget>,
    /// The engine's epoch counter (see [`WasmEngine`]).
    pub epochs: Arc<std::sync::atomic::AtomicU64>,
}

impl WasmEngine {
    /// An engine; `cache_dir` keeps compiled artifacts across restarts.
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Self, LoadError> {
        let mut cfg = Config::new();
        cfg.wasm_component_model(true);
        cfg.epoch_interruption(true);
        cfg.cranelift_opt_level(wasmtime::OptLevel::Speed);
        // Proposals the contract does not need are off: several memories in
        // one module and 64-bit memories (shared memories need the threads
        // feature, which is not compiled in).
        cfg.wasm_multi_memory(false);
        cfg.wasm_memory64(false);
        let engine = Engine::new(&cfg).map_err(|e| LoadError::Engine(e.to_string()))?;
        let mut linker = Linker::new(&engine);
        // Every minor of the contract is served: a component imports one.
        v0_1::SchedulerPlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(|e| LoadError::Engine(e.to_string()))?;
        v0_2::SchedulerPlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(|e| LoadError::Engine(e.to_string()))?;
        // Deadlines are counted in epochs; one thread advances them for all
        // stores, and stops when the engine is gone.
        let weak = engine.weak();
        let epochs = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let ticks = epochs.clone();
        std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                while let Some(engine) = weak.upgrade() {
                    engine.increment_epoch();
                    ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    drop(engine);
                    std::thread::sleep(EPOCH_TICK);
                }
            })
            .map_err(|e| LoadError::Engine(format!("cannot start the epoch thread: {e}")))?;
        let cache_dir = match cache_dir {
            Some(dir) => Some(prepare_cache_dir(&dir)?),
            None => None,
        };
        Ok(Self {
            inner: Arc::new(Inner {
                engine,
                linker,
                cache_dir,
                budget: Arc::new(Budget::new(Budget::default_limit())),
                epochs,
            }),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The total memory every plugin instance together may hold (by default
    /// half the container's memory limit, else 2 GiB).
    pub fn budget(&self) -> &Budget {
        &self.inner.budget
    }

    /// Validates and compiles a component (or loads it from the cache):
    /// checks that it is a component, that it imports nothing but the
    /// plugin world's interfaces, and links it.
    pub(crate) fn compile(&self, bytes: &[u8]) -> Result<Compiled, LoadError> {
        let sha256 = hex(&Sha256::digest(bytes));
        if !wasmparser_is_component(bytes) {
            return Err(LoadError::NotAComponent(if bytes.starts_with(b"\0asm") {
                "it is a core WebAssembly module, not a component (build it with `wasm-tools component new`, or target wasm32-wasip2)".into()
            } else {
                "it is not WebAssembly".into()
            }));
        }
        let engine = &self.inner.engine;
        let cache_path = self.cache_path(&sha256);
        let mut cached = false;
        let mut component = None;
        if let Some(path) = &cache_path
            && path.exists()
        {
            match load_cached(engine, path) {
                Ok(c) => {
                    component = Some(c);
                    cached = true;
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "ignoring an unusable compiled-plugin cache entry")
                }
            }
        }
        let component = match component {
            Some(c) => c,
            None => Component::new(engine, bytes).map_err(|e| LoadError::Invalid(format!("{e:#}")))?,
        };
        let ty = component.component_type();
        for (name, item) in ty.imports(engine) {
            if !ALLOWED_IMPORTS.iter().any(|a| name.starts_with(a)) {
                let what = match item.ty {
                    ComponentItem::ComponentInstance(_) => "interface",
                    ComponentItem::ComponentFunc(_) => "function",
                    _ => "item",
                };
                return Err(LoadError::ForbiddenImport(format!(
                    "it imports the {what} `{name}`; plugins may import only wasmsched:plugin/cluster and wasmsched:plugin/host (no WASI: no filesystem, network, clocks or environment)"
                )));
            }
        }
        let pre = self
            .inner
            .linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::Invalid(format!("{e:#}")))?;
        // The minor is the one of the plugin interface it exports (0.2
        // unless it says 0.1).
        let v0_1 = ty
            .exports(engine)
            .any(|(name, _)| name.starts_with("wasmsched:plugin/plugin@0.1."));
        let pre = if v0_1 {
            v0_1::SchedulerPluginPre::new(pre).map(BindingsPre::V0_1)
        } else {
            v0_2::SchedulerPluginPre::new(pre).map(BindingsPre::V0_2)
        }
        .map_err(|e| {
            let version = if v0_1 { "0.1.0" } else { "0.2.0 (or 0.1.0, the earlier contract)" };
            LoadError::Invalid(format!(
                "it does not export wasmsched:plugin/plugin@{version} as the contract defines it: {e:#}"
            ))
        })?;
        // Only a component that passed every check is cached.
        if !cached && let Some(path) = &cache_path {
            store_cached(&component, path);
            if let Some(dir) = &self.inner.cache_dir {
                prune_cache(dir, CACHE_CAP_BYTES);
            }
        }
        Ok(Compiled {
            pre,
            sha256,
            cached,
            budget: self.inner.budget.clone(),
            epochs: self.inner.epochs.clone(),
        })
    }

    fn cache_path(&self, sha256: &str) -> Option<PathBuf> {
        let dir = self.inner.cache_dir.as_ref()?;
        // The compatibility hash covers wasmtime's version and every engine
        // setting that affects the compiled code.
        let mut h = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(&self.inner.engine.precompile_compatibility_hash(), &mut h);
        let compat = std::hash::Hasher::finish(&h);
        Some(dir.join(format!("{sha256}-wasmtime{}-{compat:016x}.cwasm", wasmtime_version())))
    }
}

fn wasmtime_version() -> &'static str {
    "48.0.8"
}

/// The compiled cache holds native code, so only this process's user may
/// write where it is kept: the directory is created 0700; one that others may
/// write (an `emptyDir` is 0777) is used through a private subdirectory,
/// `private`, created 0700 and owned by this user; anything else is refused.
/// Returns the directory to use.
fn prepare_cache_dir(dir: &Path) -> Result<PathBuf, LoadError> {
    let err = |d: &Path, e: std::io::Error| LoadError::Engine(format!("cache directory {}: {e}", d.display()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
        let private = |d: &Path| -> Result<bool, LoadError> {
            if !d.exists() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(d)
                    .map_err(|e| err(d, e))?;
            }
            let m = std::fs::metadata(d).map_err(|e| err(d, e))?;
            let mine = own_uid().is_none_or(|uid| m.uid() == uid);
            Ok(m.permissions().mode() & 0o022 == 0 && mine)
        };
        if private(dir)? {
            return Ok(dir.to_owned());
        }
        let sub = dir.join("private");
        if private(&sub)? {
            return Ok(sub);
        }
        Err(LoadError::Engine(format!(
            "cache directory {}: others may write it, and so may they {}; compiled plugins are native code: give the scheduler a private directory (chmod 700)",
            dir.display(),
            sub.display()
        )))
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
        Ok(dir.to_owned())
    }
}

/// This process's real user id (Linux), for the cache directory's owner check.
fn own_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Most bytes the compiled cache keeps; the least recently used entries go first.
const CACHE_CAP_BYTES: u64 = 1 << 30;

fn digest_path(path: &Path) -> PathBuf {
    path.with_extension("cwasm.sha256")
}

#[allow(unsafe_code)]
fn load_cached(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // The artifact must match the digest written beside it when it was
    // stored: a flipped byte or a swapped file is recompiled, not run.
    let bytes = std::fs::read(path)?;
    let want = std::fs::read_to_string(digest_path(path))?;
    if hex(&Sha256::digest(&bytes)) != want.trim() {
        wasmtime::bail!("its sha256 does not match {}", digest_path(path).display());
    }
    // Touch it: pruning keeps what is in use.
    let _ = std::fs::File::options()
        .append(true)
        .open(path)
        .and_then(|f| f.set_modified(std::time::SystemTime::now()));
    // SAFETY: the bytes are those `store_cached` wrote from a component this
    // process compiled and validated (the digest beside them matches), under
    // a name that includes the engine's compatibility hash; wasmtime also
    // checks its version and settings header. Someone able to write the cache
    // directory could still plant both, which is why it must be private to
    // the scheduler (it is created 0700 and refused when others may write it).
    unsafe { Component::deserialize(engine, &bytes) }
}

fn store_cached(c: &Component, path: &Path) {
    use std::io::Write as _;
    let result = c.serialize().map_err(|e| e.to_string()).and_then(|bytes| {
        let digest = hex(&Sha256::digest(&bytes));
        let unique = format!(
            "tmp-{}-{:x}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        );
        let write = |target: &Path, data: &[u8]| -> std::io::Result<()> {
            let tmp = target.with_extension(&unique);
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(data)?;
            f.sync_all()?;
            std::fs::rename(&tmp, target)
        };
        write(&digest_path(path), digest.as_bytes())
            .and_then(|()| write(path, &bytes))
            .map_err(|e| e.to_string())
    });
    if let Err(e) = result {
        tracing::warn!(path = %path.display(), error = %e, "cannot write the compiled-plugin cache");
    }
}

/// Removes the least recently used artifacts past `cap` bytes.
fn prune_cache(dir: &Path, cap: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    for (_, len, path) in files {
        if total <= cap {
            break;
        }
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(digest_path(&path));
        total = total.saturating_sub(len);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A component starts with the magic and a layer-1 version field.
fn wasmparser_is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes.starts_with(b"\0asm") && bytes[6..8] == [1, 0]
}
