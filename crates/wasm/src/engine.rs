//! The wasmtime engines every plugin runs on: component model, epoch
//! interruption for deadlines; Cranelift's optimised code cached on disk,
//! and Winch, wasmtime's baseline compiler, for a fast first load of big
//! components (see [`Tier`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{Component, Linker, types::ComponentItem};
use wasmtime::{Config, Engine};

use crate::LoadError;
use crate::host::{BindingsPre, HostState, v0_1, v0_2, v0_3, v0_4, v0_5, v0_6, v0_7};
use crate::limits::Budget;

/// How often the engine's epoch advances: the granularity of call deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// The interfaces a plugin may import (of any minor the host serves).
const ALLOWED_IMPORTS: [&str; 16] = [
    "wasmsched:plugin/cluster@0.1.",
    "wasmsched:plugin/host@0.1.",
    "wasmsched:plugin/cluster@0.2.",
    "wasmsched:plugin/host@0.2.",
    "wasmsched:plugin/cluster@0.3.",
    "wasmsched:plugin/host@0.3.",
    "wasmsched:plugin/cluster@0.4.",
    "wasmsched:plugin/host@0.4.",
    "wasmsched:plugin/cluster@0.5.",
    "wasmsched:plugin/host@0.5.",
    "wasmsched:plugin/cluster@0.6.",
    "wasmsched:plugin/host@0.6.",
    "wasmsched:plugin/cluster@0.7.",
    "wasmsched:plugin/host@0.7.",
    "wasmsched:plugin/state@0.7.",
    "wasmsched:plugin/waiting@0.7.",
];

/// The engine, its linker and the compiled-artifact cache.
#[derive(Clone)]
pub struct WasmEngine {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    linker: Linker<HostState>,
    /// The baseline tier's engine and linker, where Winch supports the
    /// machine.
    baseline: Option<(Engine, Linker<HostState>)>,
    cache_dir: Option<PathBuf>,
    budget: Arc<Budget>,
    /// The engine's epoch as the epoch thread advances it, readable by host
    /// functions (wasmtime does not expose its own counter).
    epochs: Arc<std::sync::atomic::AtomicU64>,
    compiler: std::sync::RwLock<Compiler>,
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
    /// Size of the component, in bytes.
    pub len: usize,
    /// Whether it came from the on-disk cache.
    pub cached: bool,
    /// The compiler that made its code.
    pub tier: Tier,
    /// The source language the component says it was written in.
    pub language: Option<String>,
    /// The host's memory budget its instances draw from.
    pub budget: Arc<Budget>,
    /// What each instance takes before it runs ([`crate::shape`]).
    pub shape: crate::shape::Shape,
    /// The engine's epoch counter (see [`WasmEngine`]).
    pub epochs: Arc<std::sync::atomic::AtomicU64>,
}

/// The language the component's own producers section names
/// (`plugins/build.sh` stamps it; the modules inside name what built them,
/// which for an interpreter is the interpreter's language, so only the
/// root counts).
pub fn declared_language(bytes: &[u8]) -> Option<String> {
    use wasmparser::{KnownCustom, Payload};
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.ok()? {
            Payload::Version { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::CustomSection(c) if depth == 1 => {
                if let KnownCustom::Producers(fields) = c.as_known() {
                    for field in fields.into_iter().flatten() {
                        if field.name == "language" {
                            // A toolchain may list a language of its own
                            // without a version (ComponentizeJS says
                            // JavaScript for TypeScript too): the stamped
                            // one carries a version.
                            let values: Vec<_> = field.values.into_iter().flatten().collect();
                            let value = values.iter().find(|v| !v.version.is_empty()).or(values.first())?;
                            return Some(value.name.to_owned());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// Which compiler makes a component's native code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tier {
    /// Cranelift, optimising: the code plugins run on, cached on disk.
    #[default]
    Optimized,
    /// Winch, wasmtime's baseline compiler: a single pass, about four times
    /// faster to compile and slower to run. A big component serves on it
    /// while Cranelift compiles it in the background; never cached.
    Baseline,
}

impl Tier {
    /// The compiler's name (`cranelift`, `winch`), for logs and metrics.
    pub fn compiler(self) -> &'static str {
        match self {
            Tier::Optimized => "cranelift",
            Tier::Baseline => "winch",
        }
    }
}

/// The engine's settings for `tier`: the compiler process uses the same, so
/// that its artifacts load here. Both tiers enforce the same limits (epoch
/// deadlines, memory through the store's limiter, the stack); Winch lacks
/// a few proposals Cranelift has (tail calls, exceptions), and a component
/// using them is compiled by Cranelift alone.
fn engine_config(tier: Tier) -> Config {
    let mut cfg = Config::new();
    cfg.wasm_component_model(true);
    cfg.epoch_interruption(true);
    match tier {
        Tier::Optimized => {
            cfg.strategy(wasmtime::Strategy::Cranelift);
            cfg.cranelift_opt_level(wasmtime::OptLevel::Speed);
        }
        Tier::Baseline => {
            cfg.strategy(wasmtime::Strategy::Winch);
            // This tier exists to serve soon: Cranelift still compiles
            // its trampolines, unoptimised here, and no map from native
            // to wasm offsets is built (a trap's message is unchanged;
            // only a backtrace's wasm offsets go). Together about 10% off
            // a big component's first load (docs/benchmarks.md); calls run
            // as fast.
            cfg.cranelift_opt_level(wasmtime::OptLevel::None);
            cfg.generate_address_map(false);
        }
    }
    // Proposals the contract does not need are off: several memories in
    // one module and 64-bit memories (shared memories need the threads
    // feature, which is not compiled in).
    cfg.wasm_multi_memory(false);
    cfg.wasm_memory64(false);
    cfg
}

/// Where components are compiled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Compiler {
    /// In this process (a library's default, and tests'): a compile past its
    /// time limit is abandoned, not stopped, and its memory is not capped.
    #[default]
    InProcess,
    /// In a child process, `program args...`, which reads the component on
    /// stdin and writes the compiled artifact on stdout
    /// ([`compile_to_artifact`], capped by [`cap_memory`]): a compile past
    /// its time limit is killed, and one past its memory cap fails alone.
    Process {
        /// The program (`wasmsched`).
        program: PathBuf,
        /// Its arguments (`compile-plugin --memory-mib N`).
        args: Vec<String>,
        /// Variables set in its environment.
        env: Vec<(String, String)>,
        /// The memory cap the arguments set, for messages.
        memory_mib: u64,
    },
}

/// The compiler process's side: compiles the component `bytes` with the
/// settings of `tier`'s engine and returns the serialized artifact.
pub fn compile_to_artifact(bytes: &[u8], tier: Tier) -> Result<Vec<u8>, String> {
    let engine = Engine::new(&engine_config(tier)).map_err(|e| e.to_string())?;
    let component = Component::new(&engine, bytes).map_err(|e| format!("{e:#}"))?;
    component.serialize().map_err(|e| format!("{e:#}"))
}

/// Caps this process's data (heap and private writable mappings) at
/// `bytes`: an allocation past it fails, and the process aborts. For the
/// compiler process, before it reads its input.
#[cfg(unix)]
#[allow(unsafe_code)]
pub fn cap_memory(bytes: u64) -> std::io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct it is given, nothing else.
    if unsafe { libc::setrlimit(libc::RLIMIT_DATA, &limit) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Without setrlimit, the cap is not applied.
#[cfg(not(unix))]
pub fn cap_memory(_bytes: u64) -> std::io::Result<()> {
    Ok(())
}

/// Lowers this process's scheduling priority (nice 10): for a compiler
/// process working in the background while the scheduler serves on baseline
/// code, so that it takes the cores the scheduler leaves. Threads started
/// afterwards inherit it.
#[cfg(unix)]
#[allow(unsafe_code)]
pub fn lower_priority() -> std::io::Result<()> {
    // SAFETY: setpriority reads its three integer arguments, nothing else.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Without setpriority, the priority is left alone.
#[cfg(not(unix))]
pub fn lower_priority() -> std::io::Result<()> {
    Ok(())
}

/// The compiler process's arguments that select `tier` and, `background`,
/// a lower priority (read by `wasmsched compile-plugin`).
fn compiler_args(args: &[String], tier: Tier, background: bool) -> Vec<String> {
    let mut args = args.to_vec();
    if tier == Tier::Baseline {
        args.push("--baseline".into());
    }
    if background {
        args.push("--background".into());
    }
    args
}

/// Runs the compiler process on `bytes`, killing it at `limit`.
fn compile_in_compiler_process(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    memory_mib: u64,
    bytes: &[u8],
    limit: Duration,
) -> Result<Vec<u8>, LoadError> {
    use std::io::{Read as _, Write as _};
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .args(args)
        // Few malloc arenas: each reserves address space and touches some.
        .env("MALLOC_ARENA_MAX", "2")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LoadError::Engine(format!("cannot start the compiler process {}: {e}", program.display())))?;
    let (mut stdin, stdout, stderr) = (
        child.stdin.take().expect("piped"),
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
    );
    let input = bytes.to_vec();
    // The child reads all its input before it writes: feed it, and drain
    // its outputs, on threads of their own while this one keeps the time.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    // Compiled code is a few times the component; more is not an artifact.
    let most = (bytes.len() as u64).saturating_mul(16).max(256 << 20);
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.take(most + 1).read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.take(64 << 10).read_to_end(&mut v);
        v
    });
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(LoadError::Engine(format!("waiting for the compiler process: {e}"))),
        }
    };
    let _ = feeder.join();
    let artifact = out.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default())
        .trim()
        .to_owned();
    let Some(status) = status else {
        return Err(LoadError::Refused(format!(
            "compiling it took longer than wasmPlugins.compileTimeoutSeconds ({}s); the compiler was stopped",
            limit.as_secs()
        )));
    };
    if status.success() {
        if artifact.len() as u64 > most {
            let _ = child.kill();
            return Err(LoadError::Engine(format!(
                "the compiler process wrote more than {} MiB",
                most >> 20
            )));
        }
        return Ok(artifact);
    }
    if status.code() == Some(COMPILE_REFUSED) {
        return Err(LoadError::Invalid(stderr));
    }
    // An allocation past the cap aborts the process ("memory allocation of
    // N bytes failed").
    if stderr.contains("memory allocation") || stderr.contains("out of memory") {
        return Err(LoadError::Refused(format!(
            "compiling it needed more than wasmPlugins.compileMemoryMib ({memory_mib} MiB)"
        )));
    }
    Err(LoadError::Engine(format!(
        "the compiler process failed ({status}){}",
        if stderr.is_empty() {
            String::new()
        } else {
            format!(": {stderr}")
        }
    )))
}

/// The compiler process's exit code when the component is not valid (its
/// stderr says why).
pub const COMPILE_REFUSED: i32 = 3;

#[allow(unsafe_code)]
fn load_artifact(engine: &Engine, artifact: &[u8]) -> Result<Component, LoadError> {
    // SAFETY: the artifact was just made by our own compiler process with
    // this engine's settings, from the bytes being loaded (never from a
    // file others could write); wasmtime checks its version and settings.
    unsafe { Component::deserialize(engine, artifact) }
        .map_err(|e| LoadError::Engine(format!("the compiler process's artifact does not load: {e:#}")))
}

/// A linker serving every minor of the contract (a component imports one).
fn new_linker(engine: &Engine) -> Result<Linker<HostState>, LoadError> {
    let mut linker = Linker::new(engine);
    v0_1::SchedulerPlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
        .map_err(|e| LoadError::Engine(e.to_string()))?;
    v0_2::SchedulerPlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
        .map_err(|e| LoadError::Engine(e.to_string()))?;
    v0_3::SchedulerPlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
        .map_err(|e| LoadError::Engine(e.to_string()))?;
    v0_4::SchedulerPlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
        .map_err(|e| LoadError::Engine(e.to_string()))?;
    v0_5::SchedulerPlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
        .map_err(|e| LoadError::Engine(e.to_string()))?;
    v0_6::SchedulerPlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
        .map_err(|e| LoadError::Engine(e.to_string()))?;
    v0_7::SchedulerPlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
        .map_err(|e| LoadError::Engine(e.to_string()))?;
    Ok(linker)
}

impl WasmEngine {
    /// An engine; `cache_dir` keeps compiled artifacts across restarts.
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Self, LoadError> {
        let engine = Engine::new(&engine_config(Tier::Optimized)).map_err(|e| LoadError::Engine(e.to_string()))?;
        let linker = new_linker(&engine)?;
        // Winch compiles for x86-64 and (in part) AArch64; elsewhere every
        // component waits for Cranelift.
        let baseline = if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            match Engine::new(&engine_config(Tier::Baseline)) {
                Ok(e) => Some((e.clone(), new_linker(&e)?)),
                Err(e) => {
                    tracing::warn!(error = %e, "no baseline compiler on this machine; big plugins wait for Cranelift");
                    None
                }
            }
        } else {
            None
        };
        // Deadlines are counted in epochs; one thread advances them for all
        // stores of both engines, and stops when the engine is gone.
        let weak = engine.weak();
        let weak_baseline = baseline.as_ref().map(|(e, _)| e.weak());
        let epochs = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let ticks = epochs.clone();
        std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                while let Some(engine) = weak.upgrade() {
                    engine.increment_epoch();
                    if let Some(b) = weak_baseline.as_ref().and_then(|w| w.upgrade()) {
                        b.increment_epoch();
                    }
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
                baseline,
                cache_dir,
                budget: Arc::new(Budget::new(Budget::default_limit())),
                epochs,
                compiler: Default::default(),
            }),
        })
    }

    /// Compiles components with `compiler` from now on.
    pub fn set_compiler(&self, compiler: Compiler) {
        *self.inner.compiler.write().unwrap_or_else(|p| p.into_inner()) = compiler;
    }

    /// Where components are compiled.
    pub fn compiler(&self) -> Compiler {
        self.inner.compiler.read().unwrap_or_else(|p| p.into_inner()).clone()
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

    /// Whether a baseline compiler is available (see [`Tier::Baseline`]).
    pub fn has_baseline(&self) -> bool {
        self.inner.baseline.is_some()
    }

    /// Whether Cranelift's code for the component of content digest
    /// `sha256` (hex) is in the on-disk cache (a load then needs no
    /// compiler).
    pub(crate) fn is_cached(&self, sha256: &str) -> bool {
        self.cache_path(sha256).is_some_and(|p| p.exists())
    }

    /// Validates and compiles a component with `tier`'s compiler (for the
    /// optimising one, or loads it from the cache): checks that it is a
    /// component, that it imports nothing but the plugin world's
    /// interfaces, and links it. Compiling takes at most `limit` with a
    /// [`Compiler::Process`], at a lower priority when `background`.
    pub(crate) fn compile(
        &self,
        bytes: &[u8],
        limit: Duration,
        tier: Tier,
        background: bool,
    ) -> Result<Compiled, LoadError> {
        let sha256 = crate::sha256_hex(bytes);
        if !wasmparser_is_component(bytes) {
            return Err(LoadError::NotAComponent(if bytes.starts_with(b"\0asm") {
                "it is a core WebAssembly module, not a component (make it one with `wasm-tools component new`, as plugins/build.sh does; a wasm32-wasip2 build is a component but imports WASI, which the host refuses)".into()
            } else {
                "it is not WebAssembly".into()
            }));
        }
        // Before any compiling: what instantiating it would take from the
        // host outside the limiter (the core instances' contexts).
        let shape = crate::shape::shape(bytes).map_err(LoadError::Invalid)?;
        shape.check().map_err(LoadError::Refused)?;
        let (engine, linker) = match (tier, &self.inner.baseline) {
            (Tier::Baseline, Some((engine, linker))) => (engine, linker),
            (Tier::Baseline, None) => {
                return Err(LoadError::Engine("no baseline compiler on this machine".into()));
            }
            (Tier::Optimized, _) => (&self.inner.engine, &self.inner.linker),
        };
        // Only Cranelift's code is cached: baseline code is a stopgap.
        let cache_path = match tier {
            Tier::Optimized => self.cache_path(&sha256),
            Tier::Baseline => None,
        };
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
        let component = match (component, self.compiler()) {
            (Some(c), _) => c,
            (None, Compiler::InProcess) => {
                Component::new(engine, bytes).map_err(|e| LoadError::Invalid(format!("{e:#}")))?
            }
            (
                None,
                Compiler::Process {
                    program,
                    args,
                    env,
                    memory_mib,
                },
            ) => load_artifact(
                engine,
                &compile_in_compiler_process(
                    &program,
                    &compiler_args(&args, tier, background),
                    &env,
                    memory_mib,
                    bytes,
                    limit,
                )?,
            )?,
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
                    "it imports the {what} `{name}`; plugins may import only wasmsched:plugin/cluster, host, state and waiting (no WASI: no filesystem, network, clocks or environment)"
                )));
            }
        }
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::Invalid(format!("{e:#}")))?;
        // The minor is the one of the plugin interface it exports (the
        // current one unless it says an earlier one).
        let exports = |minor: &str| {
            ty.exports(engine)
                .any(|(name, _)| name.starts_with(&format!("wasmsched:plugin/plugin@{minor}.")))
        };
        let (pre, version) = if exports("0.1") {
            (v0_1::SchedulerPluginPre::new(pre).map(BindingsPre::V0_1), "0.1.0")
        } else if exports("0.2") {
            (v0_2::SchedulerPluginPre::new(pre).map(BindingsPre::V0_2), "0.2.0")
        } else if exports("0.3") {
            (v0_3::SchedulerPluginPre::new(pre).map(BindingsPre::V0_3), "0.3.0")
        } else if exports("0.4") {
            (v0_4::SchedulerPluginPre::new(pre).map(BindingsPre::V0_4), "0.4.0")
        } else if exports("0.5") {
            (v0_5::SchedulerPluginPre::new(pre).map(BindingsPre::V0_5), "0.5.0")
        } else if exports("0.6") {
            (v0_6::SchedulerPluginPre::new(pre).map(BindingsPre::V0_6), "0.6.0")
        } else {
            (
                v0_7::SchedulerPluginPre::new(pre).map(BindingsPre::V0_7),
                "0.7.0 (or 0.6.0 to 0.1.0, the earlier contracts)",
            )
        };
        let pre = pre.map_err(|e| {
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
            len: bytes.len(),
            sha256,
            cached,
            tier,
            language: declared_language(bytes),
            budget: self.inner.budget.clone(),
            shape,
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
        let create = |d: &Path| -> Result<(), LoadError> {
            if std::fs::symlink_metadata(d).is_err() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(d)
                    .map_err(|e| err(d, e))?;
            }
            Ok(())
        };
        let private = |d: &Path| -> Result<bool, LoadError> {
            create(d)?;
            // The directory itself, not what a link there leads to: a
            // `private` planted as a link to another of this user's
            // directories would have native code written there.
            let m = std::fs::symlink_metadata(d).map_err(|e| err(d, e))?;
            if !m.is_dir() {
                return Ok(false);
            }
            let mine = own_uid().is_none_or(|uid| m.uid() == uid);
            Ok(m.permissions().mode() & 0o022 == 0 && mine)
        };
        // The configured path is resolved once, here (the operator's
        // choice); every later open refuses a link in its place.
        create(dir)?;
        let dir = &std::fs::canonicalize(dir).map_err(|e| err(dir, e))?;
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

/// The compiled cache's directory, opened without following a link and
/// checked to be this user's and writable by no one else: reads, writes
/// and removals go through it, never through its name again.
struct CacheDir {
    #[cfg(target_os = "linux")]
    file: std::fs::File,
    #[cfg(not(target_os = "linux"))]
    path: PathBuf,
}

impl CacheDir {
    /// The directory holding `path`.
    fn open(path: &Path) -> std::io::Result<Self> {
        let refuse = |why: &str| std::io::Error::other(format!("the cache directory {why}"));
        let dir = path.parent().ok_or_else(|| refuse("has no parent"))?;
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
                .open(dir)?;
            let m = file.metadata()?;
            if m.mode() & 0o022 != 0 || own_uid().is_some_and(|uid| m.uid() != uid) {
                return Err(refuse("is no longer private to this user"));
            }
            Ok(Self { file })
        }
        #[cfg(not(target_os = "linux"))]
        {
            Ok(Self { path: dir.to_owned() })
        }
    }

    /// `name` inside the open directory.
    fn inside(&self, name: &std::ffi::OsStr) -> PathBuf {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::io::AsRawFd as _;
            Path::new("/proc/self/fd")
                .join(self.file.as_raw_fd().to_string())
                .join(name)
        }
        #[cfg(not(target_os = "linux"))]
        {
            self.path.join(name)
        }
    }
}

/// Creates `path` for writing, readable by this user only, failing if
/// anything (a link) is already there.
fn new_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        o.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    o.open(path)
}

/// Reads an artifact and its digest through the directory as it is now:
/// the directory is opened without following a link and checked to be
/// this user's and writable by no one else, and both files are opened
/// inside that very directory (a directory swapped in by someone who may
/// write its parent is refused, not read).
fn read_cached(path: &Path) -> std::io::Result<(Vec<u8>, String)> {
    #[cfg(target_os = "linux")]
    {
        use crate::dir::{OpenError, open_regular};
        use std::io::Read as _;
        let refuse = |why: &str| std::io::Error::other(format!("the cache directory {why}"));
        let Some(name) = path.file_name() else {
            return Err(refuse("has no parent"));
        };
        let d = CacheDir::open(path)?;
        // The open directory itself, whatever its name now leads to.
        let inside = |n: &std::ffi::OsStr| -> std::io::Result<Vec<u8>> {
            let p = d.inside(n);
            let (mut f, _) = open_regular(&p).map_err(|e| match e {
                OpenError::Io(e) => e,
                OpenError::NotRegular => refuse("holds something that is not a file"),
                link => std::io::Error::other(link.to_string()),
            })?;
            let mut v = Vec::new();
            f.read_to_end(&mut v)?;
            Ok(v)
        };
        let digest = digest_path(path);
        let want = inside(digest.file_name().unwrap_or_default())?;
        Ok((inside(name)?, String::from_utf8_lossy(&want).into_owned()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok((std::fs::read(path)?, std::fs::read_to_string(digest_path(path))?))
    }
}

#[allow(unsafe_code)]
fn load_cached(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // The artifact must match the digest written beside it when it was
    // stored: a flipped byte or a swapped file is recompiled, not run.
    let (bytes, want) = read_cached(path)?;
    if crate::sha256_hex(&bytes) != want.trim() {
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
        let digest = crate::sha256_hex(&bytes);
        let unique = format!(
            "tmp-{}-{:x}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        );
        // Inside the directory as opened now (a link in its place refused),
        // never through its name again.
        let d = CacheDir::open(path).map_err(|e| e.to_string())?;
        let write = |target: &Path, data: &[u8]| -> std::io::Result<()> {
            let name = target.file_name().unwrap_or_default();
            let tmp = d.inside(Path::new(name).with_extension(&unique).as_os_str());
            let mut f = new_private_file(&tmp)?;
            f.write_all(data)?;
            f.sync_all()?;
            std::fs::rename(&tmp, d.inside(name))
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
    // Listed and removed inside the directory as opened now.
    let Ok(d) = CacheDir::open(&dir.join("x")) else { return };
    let dir = &d.inside(std::ffi::OsStr::new(""));
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

/// A component starts with the magic and a layer-1 version field.
fn wasmparser_is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes.starts_with(b"\0asm") && bytes[6..8] == [1, 0]
}
