//! `wasmsched plugin check|test`, and loading a plugin directory for the
//! other subcommands.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use wasmsched_core::config::Config;
use wasmsched_core::fixture::parse_objects;
use wasmsched_core::plugins::Registry;
use wasmsched_core::{Cache, NodeData, PodInfo};
use wasmsched_wasm::{CallError, Compiler, Loaded, PluginHost, Tiering, WasmConfig, WasmEngine};

/// Languages `plugin new` scaffolds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    C,
    Zig,
    Go,
    Python,
    Js,
    Ts,
}

/// What the scaffold implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Filter,
    Score,
    /// Reserve, Unreserve and Permit, with the host's state (contract 0.7).
    Permit,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Create a ready-to-build plugin project from a template (in the checkout's plugins/local/NAME/LANG).
    New {
        /// Plugin name (lowercase letters, digits and dashes), as the configuration will enable it.
        name: String,
        /// Language.
        #[arg(long, value_enum)]
        lang: Lang,
        /// A filter, a score, or a permit plugin (Reserve, Unreserve and Permit).
        #[arg(long, value_enum, default_value_t = Kind::Score)]
        kind: Kind,
        /// Where to create it (default: plugins/local/NAME/LANG of the wasmsched checkout around the current directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Load a plugin component, validate it and print what it is.
    Check {
        /// The component (`.wasm`).
        file: PathBuf,
        /// Args passed to `configure` (JSON).
        #[arg(long, default_value = "{}")]
        args: String,
    },
    /// Run a plugin on one pod and a set of nodes: its verdict and score per node.
    Test {
        /// The component (`.wasm`).
        file: PathBuf,
        /// The pod (YAML or JSON).
        #[arg(long)]
        pod: PathBuf,
        /// The nodes (YAML or JSON; bound pods in the file count as usage).
        #[arg(long)]
        nodes: PathBuf,
        /// Args passed to `configure` (JSON).
        #[arg(long, default_value = "{}")]
        args: String,
        /// Seed of the host's random numbers.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Live metric values per node, for plugins that read metric
        /// sources (the format of `simulate --metrics`).
        #[arg(long, value_name = "FILE")]
        metrics: Option<PathBuf>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Place a cluster's pending pods with two versions of a plugin and print
    /// the pods placed differently, with each version's verdict on the nodes.
    Diff(crate::plugin_diff::Args),
}

/// Where compiled plugins are cached when the configuration names no place.
fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("wasmsched").join("compiled"))
}

fn engine(config: &WasmConfig) -> anyhow::Result<WasmEngine> {
    let cache = config.cache_directory.clone().or_else(default_cache_dir);
    let engine = WasmEngine::new(cache).context("cannot start the WebAssembly engine")?;
    if let Some(mib) = config.memory_budget_mib {
        engine.budget().set_limit((mib as usize) << 20);
    }
    // Components are compiled by a process of our own, whose memory is
    // capped and which is killed past the time limit: a component that
    // makes the compiler run away costs neither the scheduler's memory nor
    // a thread.
    let memory_mib = config.compile_memory_mib();
    let program = std::env::current_exe().context("cannot find this program to run its compiler process")?;
    engine.set_compiler(Compiler::Process {
        program,
        args: vec!["compile-plugin".into(), "--memory-mib".into(), memory_mib.to_string()],
        // Its memory cap counts what the C allocator maps, as it asks.
        env: vec![(crate::allocator::SYSTEM_ALLOCATOR.into(), "1".into())],
        memory_mib,
    });
    Ok(engine)
}

/// The compiler process: caps its memory, reads a component on stdin,
/// writes the compiled artifact of `tier` on stdout, at a lower priority
/// when `background`. Exits with [`wasmsched_wasm::COMPILE_REFUSED`]
/// (stderr saying why) when the component is not valid.
pub fn compile_plugin(memory_mib: u64, tier: wasmsched_wasm::Tier, background: bool) -> anyhow::Result<()> {
    use std::io::{Read as _, Write as _};
    wasmsched_wasm::cap_memory(memory_mib << 20).context("cannot cap the compiler's memory")?;
    if background {
        // Not fatal: the compile only competes with the scheduler for CPU.
        let _ = wasmsched_wasm::lower_priority();
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read the component")?;
    match wasmsched_wasm::compile_to_artifact(&bytes, tier) {
        Ok(artifact) => {
            let mut out = std::io::stdout().lock();
            out.write_all(&artifact).context("cannot write the artifact")?;
            out.flush()?;
            Ok(())
        }
        Err(why) => {
            eprintln!("{why}");
            std::process::exit(wasmsched_wasm::COMPILE_REFUSED);
        }
    }
}

/// How the plugin directory is first read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstScan {
    /// Compile every file before returning (`simulate`, `bench`, `demo`):
    /// the plugins of the directory are enabled where unmentioned.
    Now,
    /// Leave it to the caller, in the background (`run`): the plugins the
    /// profiles enable are registered at once and wait, unloaded, until
    /// their files are compiled, so scheduling starts without them.
    Later,
}

/// The registry for `config`: built-ins, plus the plugins of the configured
/// directory (or `dir`, which overrides it), read as `first_scan` says.
/// `tiering` says which compilers load the files (a scheduler or an
/// extender starts big components on baseline code; offline commands run
/// Cranelift's code from the start). A plugin declaring a metric source
/// that neither `metrics.sources` nor `more_sources` (a metrics file's, the
/// bench's synthetic ones) names is refused at load.
pub fn registry(
    config: &mut Config,
    dir: Option<&Path>,
    seed: u64,
    first_scan: FirstScan,
    tiering: Tiering,
    more_sources: &[String],
) -> anyhow::Result<(Registry, Option<Arc<PluginHost>>)> {
    let mut registry = Registry::builtin();
    let mut wasm = WasmConfig::from_value(config.wasm_plugins.as_ref()).map_err(anyhow::Error::msg)?;
    wasm.metric_sources = Some(
        config
            .metrics
            .sources
            .iter()
            .map(|s| s.name.clone())
            .chain(more_sources.iter().cloned())
            .collect(),
    );
    if let Some(d) = dir {
        if !d.is_dir() {
            bail!("plugin directory {} does not exist", d.display());
        }
        wasm.directory = Some(d.to_owned());
    }
    if wasm.directory.is_none() {
        if wasm.shadow.is_some() {
            bail!(
                "wasmPlugins.shadow: shadows a plugin directory, and none is configured (wasmPlugins.directory or --plugins)"
            );
        }
        return Ok((registry, None));
    }
    let host = PluginHost::new(engine(&wasm)?, wasm, seed);
    host.set_tiering(tiering);
    match first_scan {
        FirstScan::Now => {
            let report = host.scan();
            for (file, why) in &report.rejected {
                eprintln!("warning: plugin {file} rejected: {why}");
            }
            if let Some(d) = host.config().directory.as_deref()
                && no_components(d)
            {
                eprintln!("{}", empty_directory_warning(d));
            }
            host.register(&mut registry);
            for name in host.names() {
                config.enable_where_unmentioned(&name);
            }
        }
        FirstScan::Later => {
            // Names the profiles enable that nothing built in provides
            // must come from the directory.
            let expected: Vec<String> = config
                .enabled_plugin_names()
                .into_iter()
                .filter(|n| registry.get(n).is_none())
                // kube-scheduler plugins this engine lacks stay a
                // configuration error, not a plugin to wait for.
                .filter(|n| !wasmsched_core::plugins::KNOWN_UNSUPPORTED.contains(&n.as_str()))
                .collect();
            host.expect(expected);
            host.register(&mut registry);
        }
    }
    Ok((registry, Some(host)))
}

/// Refuses `wasmPlugins.shadow` in a command that does not run shadows
/// (only `run` and `bench` do; `plugin diff` compares two versions
/// offline).
pub fn refuse_shadow(config: &Config, command: &str) -> anyhow::Result<()> {
    let wasm = WasmConfig::from_value(config.wasm_plugins.as_ref()).map_err(anyhow::Error::msg)?;
    if wasm.shadow.is_some() {
        bail!(
            "wasmPlugins.shadow: `wasmsched {command}` does not run shadow versions (`wasmsched run` does; `wasmsched plugin diff OLD NEW` compares two versions offline)"
        );
    }
    Ok(())
}

/// The shadow of `wasmPlugins.shadow`, when the serving host's
/// configuration has one: the host of its directory, which shares the
/// serving engine (its cache and its memory budget, in which each shadow
/// plugin has a share of its own), not scanned yet, and its sampling.
pub fn shadow(
    serving: &PluginHost,
    seed: u64,
    tiering: Tiering,
) -> anyhow::Result<Option<wasmsched_kube::shadow::ShadowOptions>> {
    let (Some(settings), Some(config)) = (&serving.config().shadow, serving.config().shadow_host_config()) else {
        return Ok(None);
    };
    if !settings.directory.is_dir() {
        bail!(
            "wasmPlugins.shadow.directory: {} is not a directory",
            settings.directory.display()
        );
    }
    let host = PluginHost::new(serving.engine().clone(), config, seed);
    host.set_tiering(tiering);
    // Nothing waits on a shadow's compiles: they run behind serving's.
    host.set_low_priority(true);
    Ok(Some(wasmsched_kube::shadow::ShadowOptions {
        host,
        sample_percent: settings.sample_percent(),
    }))
}

/// Whether `dir` holds no component file (`.wasm`, `.wasm.gz`).
pub fn no_components(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        !entries.flatten().any(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.ends_with(".wasm") || n.ends_with(wasmsched_wasm::GZ_SUFFIX)
        })
    })
}

/// The warning for a plugin directory with no component in it.
pub fn empty_directory_warning(dir: &Path) -> String {
    format!(
        "warning: the plugin directory {} holds no .wasm or .wasm.gz file: no plugin runs (give the directory of built components, e.g. plugins/out or plugins/prebuilt, not a plugin's sources)",
        dir.display()
    )
}

pub fn run(cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::New { name, lang, kind, dir } => scaffold(&name, lang, kind, dir),
        Command::Check { file, args } => check(&file, &args),
        Command::Test {
            file,
            pod,
            nodes,
            args,
            seed,
            metrics,
            json,
        } => {
            let metrics = metrics.as_deref().map(crate::read_metrics).transpose()?;
            test(&file, &pod, &nodes, &args, seed, metrics.as_ref(), json)
        }
        Command::Diff(args) => crate::plugin_diff::run(args),
    }
}

fn load(file: &Path, args: &str, seed: u64) -> anyhow::Result<(Loaded, f64, Arc<PluginHost>)> {
    serde_json::from_str::<serde_json::Value>(args).context("--args is not valid JSON")?;
    let wasm = WasmConfig::default();
    let host = PluginHost::new(engine(&wasm)?, wasm, seed);
    let t = Instant::now();
    let loaded = host
        .load_file(file, args)
        .map_err(|e| anyhow::anyhow!("{} rejected: {e}", file.display()))?;
    Ok((loaded, t.elapsed().as_secs_f64() * 1000.0, host))
}

fn check(file: &Path, args: &str) -> anyhow::Result<()> {
    let (l, ms, host) = load(file, args, 1)?;
    println!("file:     {}", file.display());
    if file.to_string_lossy().ends_with(wasmsched_wasm::GZ_SUFFIX) {
        let size = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
        let compressed = std::fs::metadata(file).map_or(0, |m| m.len());
        println!(
            "format:   gzip-compressed component, {} ({} decompressed; accepted as .wasm.gz in a plugin directory)",
            size(compressed),
            size(l.component_bytes as u64)
        );
    }
    println!("plugin:   {} {}", l.name, l.version);
    println!("sha256:   {}", l.sha256);
    println!("points:   {}", l.point_names().join(", "));
    println!("contract: wasmsched:plugin {}", l.contract);
    println!("events:   {}", events_text(l.events.as_deref()));
    println!(
        "metrics:  {}",
        match l.metric_sources() {
            None => "not declared (contract before 0.4)".to_owned(),
            Some([]) => "none read".to_owned(),
            Some(names) => names.join(", "),
        }
    );
    let minor = l.contract.split('.').nth(1).and_then(|m| m.parse::<u32>().ok());
    if minor.is_some_and(|m| m >= 7) {
        println!(
            "state:    {}",
            if l.keep_state {
                "kept when this version replaces another (keep-state)"
            } else {
                "starts empty when this version replaces another"
            }
        );
    }
    println!("loaded:   {ms:.1} ms (compile or cache, instantiate, configure)");
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    if let Some(b) = l.memory_bytes() {
        // An instance is retired once its memory passes 3/4 of the cap.
        println!(
            "memory:   {:.1} MiB after configure, all memories together (cap {:.0} MiB per instance)",
            mib(b),
            mib(l.limits().memory_bytes)
        );
    }
    if let Some(t) = l.table_elements() {
        println!(
            "tables:   {t} elements (cap {} per instance)",
            wasmsched_wasm::limits::MAX_TABLE_ELEMENTS
        );
    }
    let shape = l.shape();
    println!(
        "instances: {} core instances, {:.0} KiB of host memory before any code runs (caps {} and {} KiB; largest {:.0} KiB, cap {} KiB)",
        shape.core_instances,
        shape.bytes as f64 / 1024.0,
        wasmsched_wasm::shape::MAX_INSTANCES,
        wasmsched_wasm::shape::MAX_COMPONENT_INSTANCE_BYTES >> 10,
        shape.largest as f64 / 1024.0,
        wasmsched_wasm::shape::MAX_CORE_INSTANCE_BYTES >> 10
    );
    if let Some(b) = l.memory_bytes() {
        let retire = l.limits().memory_bytes / 4 * 3;
        if b > retire {
            println!(
                "warning:  its memory after configure is past 3/4 of the cap ({:.0} MiB): every instance is retired after its first call, and the plugin backs off",
                mib(retire)
            );
        }
    }
    let budget = host.budget();
    println!(
        "budget:   {:.1} MiB of {:.0} MiB held by every plugin instance of the host",
        mib(budget.used()),
        mib(budget.limit())
    );
    Ok(())
}

/// The cluster changes a plugin registered for, as `plugin check` shows them.
fn events_text(events: Option<&[wasmsched_core::events::ClusterEvent]>) -> String {
    match events {
        None => "every change (none declared)".into(),
        Some([]) => "none (rejected pods wait for the periodic retry)".into(),
        Some(es) => es.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
    }
}

fn code_name(c: wasmsched_wasm::GuestCode) -> &'static str {
    use wasmsched_wasm::GuestCode as C;
    match c {
        C::Success => "success",
        C::Unschedulable => "unschedulable",
        C::UnschedulableAndUnresolvable => "unschedulable-and-unresolvable",
        C::Skip => "skip",
    }
}

/// A point's method in the plugin's own language (as its SDK names it),
/// when the component says which language it is.
fn method(language: Option<&str>, point: &str) -> Option<&'static str> {
    const POINTS: [&str; 5] = ["PreFilter", "Filter", "PreScore", "Score", "NormalizeScore"];
    let names: [&'static str; 5] = match language? {
        "Rust" | "Python" => ["pre_filter", "filter", "pre_score", "score", "normalize_score"],
        "C" => [
            "ws_pre_filter",
            "ws_filter",
            "ws_pre_score",
            "ws_score",
            "ws_normalize_score",
        ],
        "Zig" | "JavaScript" | "TypeScript" => ["preFilter", "filter", "preScore", "score", "normalizeScore"],
        "Go" => POINTS,
        _ => return None,
    };
    POINTS.iter().position(|p| *p == point).map(|i| names[i])
}

/// `NormalizeScore (normalize_score in Python)`: the point as the scheduler
/// names it, and as the plugin's author wrote it.
fn in_language(language: Option<&str>, point: &str) -> String {
    match (language, method(language, point)) {
        (Some(lang), Some(m)) if m != point => format!("{point} ({m} in {lang})"),
        _ => point.to_owned(),
    }
}

/// What DynamicResources allocates for `pod` on each node (none when the
/// pod has no claim to allocate), and each node's verdict: `feasible`, or
/// DynamicResources' reason when its devices do not fit.
fn dra_allocations(
    pod: &PodInfo,
    snapshot: &Arc<wasmsched_core::Snapshot>,
    nodes: &[&Arc<wasmsched_core::NodeInfo>],
) -> (
    Option<wasmsched_core::plugins::dynamic_resources::NodeAllocations>,
    Vec<String>,
) {
    use wasmsched_core::Plugin;
    use wasmsched_core::plugins::dynamic_resources::{self, DynamicResources};
    let mut verdicts: Vec<String> = vec!["feasible".into(); nodes.len()];
    if pod.resource_claims.is_empty() {
        return (None, verdicts);
    }
    let dra = DynamicResources::default();
    let mut state = wasmsched_core::CycleState::default();
    state.set_snapshot(snapshot.clone());
    let st = dra.pre_filter(&mut state, pod, snapshot);
    if !st.is_success() {
        verdicts.fill(format!("DynamicResources: {}", st.message()));
        return (None, verdicts);
    }
    for (i, n) in nodes.iter().enumerate() {
        let st = dra.filter(&state, pod, n);
        if !st.is_success() {
            verdicts[i] = format!("DynamicResources: {}", st.message());
        }
    }
    (dynamic_resources::allocations(&state), verdicts)
}

/// The points after Score (contract 0.7), as a cycle runs them: PostFilter
/// when no node passed Filter; else, on the best node, Reserve, Permit
/// (a wait runs to its timeout, as nothing allows the pod here, and is
/// rejected in kube-scheduler's words), Unreserve on a rejection, PreBind
/// and PostBind. Each step as `{point, outcome}`.
#[allow(clippy::too_many_arguments)]
fn binding_cycle(
    l: &wasmsched_wasm::Loaded,
    pod: &PodInfo,
    nodes: &[&Arc<wasmsched_core::NodeInfo>],
    verdicts: &[String],
    scores: &[Option<i64>],
    view: &wasmsched_wasm::CycleView<'_>,
    waiting: &wasmsched_core::framework::WaitingPods,
    log: &mut Vec<String>,
    errors: &mut Vec<String>,
) -> Vec<serde_json::Value> {
    use wasmsched_wasm::GuestPoints as P;
    let mut steps = Vec::new();
    let mut step = |log: &mut Vec<String>, point: &str, outcome: String| {
        log.push(format!("{point}: {outcome}"));
        steps.push(serde_json::json!({"point": point, "outcome": outcome}));
    };
    let feasible: Vec<usize> = (0..nodes.len()).filter(|&i| verdicts[i] == "feasible").collect();
    let Some(&best) = feasible
        .iter()
        .max_by_key(|&&i| (scores[i].unwrap_or(0), std::cmp::Reverse(i)))
    else {
        if l.implements(P::POST_FILTER) {
            let statuses: Vec<_> = nodes
                .iter()
                .zip(verdicts)
                .map(|(n, v)| {
                    // `DynamicResources: why`, or the plugin's own `code: why`.
                    let (head, reason) = v.split_once(": ").unwrap_or(("", v));
                    let (plugin, code) = match head {
                        "DynamicResources" => {
                            (head.to_owned(), wasmsched_wasm::GuestCode::UnschedulableAndUnresolvable)
                        }
                        "unschedulable-and-unresolvable" => {
                            (l.name.clone(), wasmsched_wasm::GuestCode::UnschedulableAndUnresolvable)
                        }
                        _ => (l.name.clone(), wasmsched_wasm::GuestCode::Unschedulable),
                    };
                    wasmsched_wasm::GuestNodeStatus {
                        node: n.name().to_owned(),
                        code,
                        reason: reason.to_owned(),
                        plugin,
                    }
                })
                .collect();
            match l.post_filter_in(pod, nodes, &statuses, view) {
                Ok(r) => step(
                    log,
                    "PostFilter",
                    format!(
                        "{} {} (nominated {:?}, victims {:?})",
                        code_name(r.status.code),
                        r.status.reason,
                        r.nominated_node,
                        r.victims
                    ),
                ),
                Err(e) => errors.push(format!("PostFilter: {e}")),
            }
        }
        return steps;
    };
    let node = nodes[best];
    let mut reserved = false;
    if l.implements(P::RESERVE) {
        match l.reserve_in(pod, node, view) {
            Ok(s) => {
                reserved = true;
                step(
                    log,
                    "Reserve",
                    format!("{} on {} {}", code_name(s.code), node.name(), s.reason),
                );
                if s.code != wasmsched_wasm::GuestCode::Success {
                    let _ = l.unreserve_in(pod, node.name(), view);
                    step(log, "Unreserve", format!("on {}", node.name()));
                    return steps;
                }
            }
            Err(e) => {
                errors.push(format!("Reserve: {e}"));
                return steps;
            }
        }
    }
    let mut allowed = true;
    if l.implements(P::PERMIT) {
        match l.permit_in(pod, node, view) {
            Ok(wasmsched_wasm::GuestPermitVerdict::Allow) => step(log, "Permit", "allow".into()),
            Ok(wasmsched_wasm::GuestPermitVerdict::Reject(why)) => {
                allowed = false;
                step(log, "Permit", format!("reject: {why}"));
            }
            Ok(wasmsched_wasm::GuestPermitVerdict::Wait(ms)) => {
                allowed = false;
                let wait = std::time::Duration::from_millis(u64::from(ms));
                step(log, "Permit", format!("wait {ms} ms"));
                // Nothing allows it here: the wait ends at its deadline.
                let t0 = Instant::now();
                let info = Arc::new(pod.clone());
                waiting.add(info, node.name(), &[(l.name.clone(), wait)], t0);
                waiting.expire(t0 + wait.min(wasmsched_core::framework::MAX_PERMIT_WAIT));
                let outcome = waiting.outcome(&pod.uid, || {});
                if let Some(Err(st)) = outcome {
                    step(log, "Permit", format!("timed out: {}", st.message()));
                }
            }
            Err(e) => {
                allowed = false;
                errors.push(format!("Permit: {e}"));
            }
        }
    }
    if !allowed {
        if reserved {
            match l.unreserve_in(pod, node.name(), view) {
                Ok(()) => step(log, "Unreserve", format!("on {}", node.name())),
                Err(e) => errors.push(format!("Unreserve: {e}")),
            }
        }
        return steps;
    }
    if l.implements(P::PRE_BIND) {
        match l.pre_bind_in(pod, node.name(), view) {
            Ok(s) => step(log, "PreBind", format!("{} {}", code_name(s.code), s.reason)),
            Err(e) => errors.push(format!("PreBind: {e}")),
        }
    }
    if l.implements(P::POST_BIND) {
        match l.post_bind_in(pod, node.name(), view) {
            Ok(()) => step(log, "PostBind", format!("bound to {}", node.name())),
            Err(e) => errors.push(format!("PostBind: {e}")),
        }
    }
    steps
}

fn test(
    file: &Path,
    pod: &Path,
    nodes: &Path,
    args: &str,
    seed: u64,
    metrics: Option<&crate::Metrics>,
    json: bool,
) -> anyhow::Result<()> {
    let pod_objs = parse_objects(&crate::read_file(pod)?).with_context(|| format!("cannot read {}", pod.display()))?;
    let [pod] = pod_objs.pods.as_slice() else {
        bail!(
            "{} must hold exactly one pod (found {})",
            pod.display(),
            pod_objs.pods.len()
        );
    };
    let pod = PodInfo::from_pod(pod)?;
    let node_objs =
        parse_objects(&crate::read_file(nodes)?).with_context(|| format!("cannot read {}", nodes.display()))?;
    let mut cache = Cache::new();
    for n in &node_objs.nodes {
        cache.upsert_node(NodeData::from_node(n)?);
    }
    for p in &node_objs.pods {
        if p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some() {
            cache.upsert_pod(Arc::new(PodInfo::from_pod(p)?));
        }
    }
    for (source, series) in metrics.iter().flat_map(|m| &m.sources) {
        let report = cache.install_metrics(source, series);
        crate::warn_unmatched(&metrics.expect("some").path, source, &report);
    }
    // Storage and device objects (claims, slices, classes) of either file.
    for o in node_objs.storage.iter().chain(&pod_objs.storage) {
        cache.storage_mut().upsert(o)?;
    }
    let snapshot = Arc::new(cache.snapshot());
    let mut nodes: Vec<_> = snapshot.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name().cmp(b.name()));
    // DynamicResources allocates the pod's claims on each node first, as a
    // cycle runs it before the plugin: `nodes.allocation` answers as there.
    let (allocations, dra_verdicts) = dra_allocations(&pod, &snapshot, &nodes);
    // What the host keeps for the plugin and its pod's cycle, and the pods
    // waiting at Permit (contract 0.7).
    let data = Arc::new(wasmsched_core::framework::PluginData::default());
    let waiting = Arc::new(wasmsched_core::framework::WaitingPods::default());
    let view = wasmsched_wasm::CycleView {
        snapshot: Some(&snapshot),
        storage: Some(&snapshot.storage),
        allocations,
        data: Some(&data),
        waiting: Some(&waiting),
    };
    let (l, load_ms, _host) = load(file, args, seed)?;
    l.use_store(Arc::new(wasmsched_wasm::state::PluginStore::new(
        l.limits().memory_bytes / 4,
    )));
    let mut log: Vec<String> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    log.push(format!(
        "{} {} ({}) on pod {}, {} nodes; loaded in {load_ms:.1} ms",
        l.name,
        l.version,
        l.point_names().join(", "),
        pod.key,
        nodes.len()
    ));
    let timed = |log: &mut Vec<String>, what: &str, t: Instant| {
        let us = t.elapsed().as_secs_f64() * 1e6;
        log.push(format!(
            "{what:<15} {us:>9.1} µs{}",
            if nodes.is_empty() {
                String::new()
            } else {
                format!("  ({:.0} ns/node)", us * 1000.0 / nodes.len() as f64)
            }
        ));
    };
    let language = l.language.as_deref();
    let point = |p: &str| in_language(language, p);
    let show_err = |errors: &mut Vec<String>, what: &str, e: &CallError| errors.push(format!("{}: {e}", point(what)));
    let mut verdicts: Vec<String> = dra_verdicts;
    let mut scores: Vec<Option<i64>> = vec![None; nodes.len()];
    let mut pre_filter: Option<&str> = None;
    use wasmsched_wasm::GuestPoints as P;
    if l.implements(P::PRE_FILTER) {
        let t = Instant::now();
        match l.pre_filter_in(&pod, &view) {
            Ok(s) => {
                pre_filter = Some(code_name(s.code));
                log.push(format!("PreFilter: {} {}", code_name(s.code), s.reason));
                // A rejection at PreFilter rejects the pod on every node.
                if matches!(
                    s.code,
                    wasmsched_wasm::GuestCode::Unschedulable | wasmsched_wasm::GuestCode::UnschedulableAndUnresolvable
                ) {
                    verdicts.fill(format!("{}: {}", code_name(s.code), s.reason));
                }
            }
            Err(e) => show_err(&mut errors, "PreFilter", &e),
        }
        timed(&mut log, "PreFilter", t);
    }
    if l.implements(P::FILTER) {
        let t = Instant::now();
        match l.filter_in(&pod, &nodes, &view) {
            Ok(rs) => {
                for r in rs {
                    if let Some(v) = verdicts.get_mut(r.index as usize) {
                        *v = format!("{}: {}", code_name(r.code), r.reason);
                    }
                }
            }
            Err(e) => show_err(&mut errors, "Filter", &e),
        }
        timed(&mut log, "Filter", t);
    }
    // PreScore sees the nodes that passed Filter, as in a cycle; its skip
    // spares Score.
    let mut pre_score: Option<&str> = None;
    if l.implements(P::PRE_SCORE) {
        let feasible: Vec<_> = nodes
            .iter()
            .zip(&verdicts)
            .filter(|(_, v)| *v == "feasible")
            .map(|(n, _)| *n)
            .collect();
        let t = Instant::now();
        match l.pre_score_in(&pod, &feasible, &view) {
            Ok(s) => {
                pre_score = Some(code_name(s.code));
                log.push(format!("PreScore: {} {}", code_name(s.code), s.reason));
            }
            Err(e) => show_err(&mut errors, "PreScore", &e),
        }
        timed(&mut log, "PreScore", t);
    }
    if l.implements(P::SCORE) && pre_score != Some("skip") {
        let t = Instant::now();
        match l.score_in(&pod, &nodes, &view) {
            Ok(raw) => {
                timed(&mut log, "Score", t);
                let mut out = raw.clone();
                // The checks the scheduler applies, with its messages.
                let outside = |s: &i64| !(0..=100).contains(s);
                if l.implements(P::NORMALIZE_SCORE) {
                    let t = Instant::now();
                    match l.normalize(&pod, &raw) {
                        Ok(n) => {
                            if let Some(s) = n.iter().find(|s| outside(s)) {
                                errors.push(format!(
                                    "{}: normalized score {s} is outside 0..=100",
                                    point("NormalizeScore")
                                ));
                            }
                            out = n;
                        }
                        Err(e) => show_err(&mut errors, "NormalizeScore", &e),
                    }
                    timed(&mut log, "NormalizeScore", t);
                } else if let Some((i, s)) = raw.iter().enumerate().find(|(_, s)| outside(s)) {
                    errors.push(format!(
                        "{}: score {s} for node {} is outside 0..=100 (implement {} to map raw scores)",
                        point("Score"),
                        nodes[i].name(),
                        method(language, "NormalizeScore").unwrap_or("normalize-score")
                    ));
                }
                scores = out.into_iter().map(Some).collect();
            }
            Err(e) => show_err(&mut errors, "Score", &e),
        }
    }
    let binding = binding_cycle(
        &l,
        &pod,
        &nodes,
        &verdicts,
        &scores,
        &view,
        &waiting,
        &mut log,
        &mut errors,
    );
    if json {
        let rows: Vec<serde_json::Value> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| serde_json::json!({"node": n.name(), "score": scores[i], "verdict": verdicts[i]}))
            .collect();
        let out = serde_json::json!({
            "plugin": l.name, "version": l.version, "points": l.point_names(),
            "metricSources": l.metric_sources(),
            "pod": pod.key.to_string(), "preFilter": pre_filter, "preScore": pre_score,
            "errors": errors, "nodes": rows, "binding": binding,
        });
        println!("{out}");
    } else {
        for line in log.iter().chain(&errors) {
            println!("{line}");
        }
        println!();
        println!("{:<24} {:>6}  VERDICT", "NODE", "SCORE");
        for (i, n) in nodes.iter().enumerate() {
            let s = scores[i].map_or("-".to_owned(), |s| s.to_string());
            println!("{:<24} {:>6}  {}", n.name(), s, verdicts[i]);
        }
    }
    // What the scheduler would refuse fails the test.
    if !errors.is_empty() {
        bail!(
            "plugin {} failed {} check(s): {}",
            l.name,
            errors.len(),
            errors.join("; ")
        );
    }
    Ok(())
}

/// The templates, shipped in the binary.
fn template(lang: Lang, kind: Kind) -> Vec<(&'static str, &'static str)> {
    let pick = |f, s, p| match kind {
        Kind::Filter => f,
        Kind::Score => s,
        Kind::Permit => p,
    };
    match lang {
        Lang::Rust => vec![
            ("Cargo.toml", include_str!("../templates/rust-Cargo.toml")),
            (
                "src/lib.rs",
                pick(
                    include_str!("../templates/rust-filter.rs"),
                    include_str!("../templates/rust-score.rs"),
                    include_str!("../templates/rust-permit.rs"),
                ),
            ),
        ],
        Lang::C => vec![(
            "main.c",
            pick(
                include_str!("../templates/c-filter.c"),
                include_str!("../templates/c-score.c"),
                include_str!("../templates/c-permit.c"),
            ),
        )],
        Lang::Zig => vec![(
            "main.zig",
            pick(
                include_str!("../templates/zig-filter.zig"),
                include_str!("../templates/zig-score.zig"),
                include_str!("../templates/zig-permit.zig"),
            ),
        )],
        Lang::Go => vec![
            ("go.mod", include_str!("../templates/go-go.mod")),
            (
                "main.go",
                pick(
                    include_str!("../templates/go-filter.go"),
                    include_str!("../templates/go-score.go"),
                    include_str!("../templates/go-permit.go"),
                ),
            ),
        ],
        Lang::Python => vec![(
            "main.py",
            pick(
                include_str!("../templates/python-filter.py"),
                include_str!("../templates/python-score.py"),
                include_str!("../templates/python-permit.py"),
            ),
        )],
        Lang::Js => vec![(
            "main.js",
            pick(
                include_str!("../templates/js-filter.js"),
                include_str!("../templates/js-score.js"),
                include_str!("../templates/js-permit.js"),
            ),
        )],
        Lang::Ts => vec![(
            "main.ts",
            pick(
                include_str!("../templates/ts-filter.ts"),
                include_str!("../templates/ts-score.ts"),
                include_str!("../templates/ts-permit.ts"),
            ),
        )],
    }
}

fn lang_name(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "rust",
        Lang::C => "c",
        Lang::Zig => "zig",
        Lang::Go => "go",
        Lang::Python => "python",
        Lang::Js => "js",
        Lang::Ts => "ts",
    }
}

/// The `plugins/` directory of the checkout around the current directory.
fn plugins_dir() -> anyhow::Result<PathBuf> {
    let mut d = std::env::current_dir()?;
    loop {
        if d.join("plugins/build.sh").is_file() && d.join("wit/plugin.wit").is_file() {
            return Ok(d.join("plugins"));
        }
        if !d.pop() {
            bail!(
                "not inside a wasmsched checkout (no plugins/build.sh above the current directory): pass --dir, next to plugins/sdk"
            );
        }
    }
}

fn scaffold(name: &str, lang: Lang, kind: Kind, dir: Option<PathBuf>) -> anyhow::Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !valid {
        bail!("plugin name {name:?}: use lowercase letters, digits and dashes (like node-price)");
    }
    let dir = match dir {
        Some(d) => d,
        None => plugins_dir()?.join("local").join(name).join(lang_name(lang)),
    };
    if dir.exists() && std::fs::read_dir(&dir)?.next().is_some() {
        bail!("{} exists and is not empty", dir.display());
    }
    for (file, text) in template(lang, kind) {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap_or(&dir))?;
        std::fs::write(&path, text.replace("{{name}}", name))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let l = lang_name(lang);
    println!(
        "created {} ({l} {} plugin {name})",
        dir.display(),
        match kind {
            Kind::Filter => "filter",
            Kind::Score => "score",
            Kind::Permit => "permit",
        }
    );
    println!("next:");
    println!("  plugins/build.sh {l} {} /tmp/{name}.wasm", dir.display());
    println!("  wasmsched plugin check /tmp/{name}.wasm");
    println!(
        "  wasmsched plugin test /tmp/{name}.wasm --pod plugins/testdata/fixture/pod-web.yaml --nodes plugins/testdata/fixture/nodes.yaml"
    );
    Ok(())
}
