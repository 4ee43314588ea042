//! One wasmtime engine for every plugin: component model, Cranelift, epoch
//! interruption for deadlines; compiled artifacts cached on disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker, types::ComponentItem};
use wasmtime::{Config, Engine};

use crate::LoadError;
use crate::host::{HostState, SchedulerPlugin, SchedulerPluginPre};

/// How often the engine's epoch advances: the granularity of call deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// The interfaces a plugin may import (any 0.1.x).
const ALLOWED_IMPORTS: [&str; 2] = ["wasmsched:plugin/cluster@0.1.", "wasmsched:plugin/host@0.1."];

/// The engine, its linker and the compiled-artifact cache.
#[derive(Clone)]
pub struct WasmEngine {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    linker: Linker<HostState>,
    cache_dir: Option<PathBuf>,
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
    pub pre: SchedulerPluginPre<HostState>,
    pub sha256: String,
    /// Whether it came from the on-disk cache.
    pub cached: bool,
}

impl WasmEngine {
    /// An engine; `cache_dir` keeps compiled artifacts across restarts.
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Self, LoadError> {
        let mut cfg = Config::new();
        cfg.wasm_component_model(true);
        cfg.epoch_interruption(true);
        cfg.cranelift_opt_level(wasmtime::OptLevel::Speed);
        let engine = Engine::new(&cfg).map_err(|e| LoadError::Engine(e.to_string()))?;
        let mut linker = Linker::new(&engine);
        SchedulerPlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(|e| LoadError::Engine(e.to_string()))?;
        // Deadlines are counted in epochs; one thread advances them for all
        // stores, and stops when the engine is gone.
        let weak = engine.weak();
        std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                while let Some(engine) = weak.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(EPOCH_TICK);
                }
            })
            .map_err(|e| LoadError::Engine(format!("cannot start the epoch thread: {e}")))?;
        if let Some(dir) = &cache_dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| LoadError::Engine(format!("cache directory {}: {e}", dir.display())))?;
        }
        Ok(Self {
            inner: Arc::new(Inner {
                engine,
                linker,
                cache_dir,
            }),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
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
            None => {
                let c = Component::new(engine, bytes).map_err(|e| LoadError::Invalid(format!("{e:#}")))?;
                if let Some(path) = &cache_path {
                    store_cached(&c, path);
                }
                c
            }
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
        let pre = SchedulerPluginPre::new(pre).map_err(|e| {
            LoadError::Invalid(format!(
                "it does not export wasmsched:plugin/plugin@0.1.0 as the contract defines it: {e:#}"
            ))
        })?;
        Ok(Compiled { pre, sha256, cached })
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

#[allow(unsafe_code)]
fn load_cached(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: the file was written by `store_cached` from a component this
    // process compiled, under a name that includes the engine's
    // compatibility hash; wasmtime also checks its version and settings
    // header. A file planted by someone who can write the cache directory
    // could run native code, which is why the directory must be private to
    // the scheduler (as wasmtime's own cache requires).
    unsafe { Component::deserialize_file(engine, path) }
}

fn store_cached(c: &Component, path: &Path) {
    let result = c.serialize().map_err(|e| e.to_string()).and_then(|bytes| {
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| e.to_string())
    });
    if let Err(e) = result {
        tracing::warn!(path = %path.display(), error = %e, "cannot write the compiled-plugin cache");
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A component starts with the magic and a layer-1 version field.
fn wasmparser_is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes.starts_with(b"\0asm") && bytes[6..8] == [1, 0]
}
