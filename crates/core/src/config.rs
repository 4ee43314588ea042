//! The scheduler configuration: a YAML file shaped like kube-scheduler's
//! `KubeSchedulerConfiguration` (`kubescheduler.config.k8s.io/v1`), with
//! kube-scheduler's defaults, its rules for merging enabled/disabled plugin
//! sets and expanding `multiPoint`, and errors that name the bad field.
//!
//! ```
//! use wasmsched_core::{config::Config, plugins::Registry};
//! let cfg = Config::from_yaml(r#"
//! apiVersion: kubescheduler.config.k8s.io/v1
//! kind: KubeSchedulerConfiguration
//! profiles:
//! - schedulerName: bin-packer
//!   pluginConfig:
//!   - name: NodeResourcesFit
//!     args: {scoringStrategy: {type: MostAllocated}}
//! "#).unwrap();
//! assert_eq!(cfg.profiles[0].scheduler_name, "bin-packer");
//! // Plugin names are checked when the profiles are built from a registry.
//! let cfg = Config::from_yaml("profiles: [{schedulerName: a, plugins: {score: {enabled: [{name: Nope}]}}}]").unwrap();
//! let err = cfg.build_frameworks(&Registry::builtin()).unwrap_err();
//! assert!(err.to_string().starts_with("profiles[0].plugins.score.enabled[0].name: unknown plugin \"Nope\""));
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::framework::{Enabled, Framework, Plugin, Points};
use crate::plugins::{DEFAULT_PLUGINS, KNOWN_UNSUPPORTED, Registry};

/// Parses a Go duration as the configuration writes them (`15s`, `1m30s`,
/// `500ms`; Go's `time.ParseDuration`, through a port of it). Negative
/// durations are none.
pub fn parse_duration(s: &str) -> Option<std::time::Duration> {
    let nanos = go_parse_duration::parse_duration(s.trim()).ok()?;
    u64::try_from(nanos).ok().map(std::time::Duration::from_nanos)
}

/// The profile name used when the configuration names none.
pub const DEFAULT_SCHEDULER_NAME: &str = "wasm-scheduler";

/// A configuration error: the field path and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ConfigError {
    /// Path of the offending field, e.g. `profiles[0].plugins.score.enabled[1].weight`.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl ConfigError {
    pub(crate) fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// A plugin named in a plugin set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginRef {
    /// Plugin name (`*` in `disabled` means every default plugin).
    pub name: String,
    /// Score weight.
    #[serde(default)]
    pub weight: Option<i64>,
}

/// Enabled and disabled plugins of one extension point.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSet {
    /// Plugins enabled, in order (after the defaults that are not disabled).
    #[serde(default)]
    pub enabled: Vec<PluginRef>,
    /// Default plugins disabled.
    #[serde(default)]
    pub disabled: Vec<PluginRef>,
}

/// `profiles[].plugins`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Plugins {
    /// Plugins enabled at every extension point they implement.
    #[serde(default)]
    pub multi_point: PluginSet,
    /// PreFilter.
    #[serde(default)]
    pub pre_filter: PluginSet,
    /// Filter.
    #[serde(default)]
    pub filter: PluginSet,
    /// PostFilter.
    #[serde(default)]
    pub post_filter: PluginSet,
    /// PreScore.
    #[serde(default)]
    pub pre_score: PluginSet,
    /// Score.
    #[serde(default)]
    pub score: PluginSet,
    /// Reserve.
    #[serde(default)]
    pub reserve: PluginSet,
    /// kube-scheduler points wasmsched runs natively (`PrioritySort`,
    /// `DefaultBinder`, `SchedulingGates`); accepted when they name only those
    /// (`preEnqueue`, `queueSort`, `bind`).
    #[serde(default)]
    pub pre_enqueue: PluginSet,
    /// See `pre_enqueue`.
    #[serde(default)]
    pub queue_sort: PluginSet,
    /// Permit.
    #[serde(default)]
    pub permit: PluginSet,
    /// PreBind.
    #[serde(default)]
    pub pre_bind: PluginSet,
    /// See `pre_enqueue`.
    #[serde(default)]
    pub bind: PluginSet,
    /// PostBind.
    #[serde(default)]
    pub post_bind: PluginSet,
}

/// `profiles[].pluginConfig[]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// Plugin name.
    pub name: String,
    /// Args, passed to the plugin.
    #[serde(default)]
    pub args: Option<serde_json::Value>,
}

/// One scheduling profile.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Profile {
    /// The `spec.schedulerName` this profile serves.
    #[serde(default)]
    pub scheduler_name: String,
    /// Overrides the global `percentageOfNodesToScore`.
    #[serde(default)]
    pub percentage_of_nodes_to_score: Option<i64>,
    /// Plugins per extension point.
    #[serde(default)]
    pub plugins: Plugins,
    /// Args per plugin.
    #[serde(default)]
    pub plugin_config: Vec<PluginConfig>,
}

/// The whole configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    /// `kubescheduler.config.k8s.io/v1` (optional).
    #[serde(default)]
    pub api_version: Option<String>,
    /// `KubeSchedulerConfiguration` (optional).
    #[serde(default)]
    pub kind: Option<String>,
    /// Global percentage of nodes to score (0 = adaptive, as kube-scheduler).
    #[serde(default)]
    pub percentage_of_nodes_to_score: Option<i64>,
    /// Initial backoff of a pod that failed (default 1 s).
    #[serde(default = "default_initial_backoff")]
    pub pod_initial_backoff_seconds: i64,
    /// Maximum backoff (default 10 s).
    #[serde(default = "default_max_backoff")]
    pub pod_max_backoff_seconds: i64,
    /// Worker threads for filtering and scoring (default: the machine's cores).
    #[serde(default)]
    pub parallelism: Option<i64>,
    /// Profiles; one `wasm-scheduler` profile when empty.
    #[serde(default)]
    pub profiles: Vec<Profile>,
    /// Leader election settings, read by the daemon.
    #[serde(default)]
    pub leader_election: Option<serde_json::Value>,
    /// Client connection settings, read by the daemon.
    #[serde(default)]
    pub client_connection: Option<serde_json::Value>,
    /// The WebAssembly plugin settings, read by the WebAssembly host.
    #[serde(default)]
    pub wasm_plugins: Option<serde_json::Value>,
    /// Live metrics for plugins (a wasmsched extension).
    #[serde(default)]
    pub metrics: crate::metrics::config::MetricsConfig,
    /// kube-scheduler's HTTP extenders: refused when set (wasmsched calls
    /// none; its policy is WebAssembly plugins).
    #[serde(default)]
    pub extenders: Option<serde_json::Value>,
    /// kube-scheduler's `/debug/pprof`: refused when true (not served).
    #[serde(default)]
    pub enable_profiling: Option<bool>,
    /// Refused when true, as `enableProfiling`.
    #[serde(default)]
    pub enable_contention_profiling: Option<bool>,
    /// Start the caches only once leading: refused when true (replicas
    /// that wait keep their caches warm).
    #[serde(default)]
    pub delay_cache_until_active: Option<bool>,
}

fn default_initial_backoff() -> i64 {
    1
}

fn default_max_backoff() -> i64 {
    10
}

impl Default for Config {
    fn default() -> Self {
        Config::from_yaml("{}").expect("the empty configuration is valid")
    }
}

/// The extension points a profile's plugin lists are built for.
const POINTS: [(&str, Points); 9] = [
    ("preFilter", Points::PRE_FILTER),
    ("filter", Points::FILTER),
    ("postFilter", Points::POST_FILTER),
    ("preScore", Points::PRE_SCORE),
    ("score", Points::SCORE),
    ("reserve", Points::RESERVE),
    ("permit", Points::PERMIT),
    ("preBind", Points::PRE_BIND),
    ("postBind", Points::POST_BIND),
];

impl Plugins {
    /// `multiPoint` and the sets of the extension points plugins extend.
    fn sets(&self) -> [&PluginSet; 10] {
        [
            &self.multi_point,
            &self.pre_filter,
            &self.filter,
            &self.post_filter,
            &self.pre_score,
            &self.score,
            &self.reserve,
            &self.permit,
            &self.pre_bind,
            &self.post_bind,
        ]
    }

    fn point(&self, name: &str) -> &PluginSet {
        match name {
            "preFilter" => &self.pre_filter,
            "filter" => &self.filter,
            "postFilter" => &self.post_filter,
            "preScore" => &self.pre_score,
            "score" => &self.score,
            "permit" => &self.permit,
            "preBind" => &self.pre_bind,
            "postBind" => &self.post_bind,
            _ => &self.reserve,
        }
    }
}

impl Config {
    /// Parses and validates a configuration. Errors name the field.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        // serde_norway's messages already start with the field path.
        let mut cfg: Config = serde_norway::from_str(text).map_err(|e| {
            let msg = e.to_string();
            match msg.split_once(": ") {
                Some((path, reason)) if !path.contains(' ') => ConfigError::new(path, reason),
                _ => ConfigError::new("config", msg),
            }
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    fn validate(&mut self) -> Result<(), ConfigError> {
        if let Some(v) = &self.api_version
            && v != "kubescheduler.config.k8s.io/v1"
        {
            return Err(ConfigError::new(
                "apiVersion",
                format!("{v:?} is not kubescheduler.config.k8s.io/v1"),
            ));
        }
        if let Some(k) = &self.kind
            && k != "KubeSchedulerConfiguration"
        {
            return Err(ConfigError::new(
                "kind",
                format!("{k:?} is not KubeSchedulerConfiguration"),
            ));
        }
        if self
            .extenders
            .as_ref()
            .is_some_and(|e| !e.is_null() && e.as_array().is_none_or(|a| !a.is_empty()))
        {
            return Err(ConfigError::new(
                "extenders",
                "wasmsched does not call scheduler extenders: write the policy as a WebAssembly plugin (or run `wasmsched extender` as kube-scheduler's extender)",
            ));
        }
        for (field, on, what) in [
            (
                "enableProfiling",
                self.enable_profiling,
                "profiling endpoints are not served",
            ),
            (
                "enableContentionProfiling",
                self.enable_contention_profiling,
                "profiling endpoints are not served",
            ),
            (
                "delayCacheUntilActive",
                self.delay_cache_until_active,
                "every replica keeps its caches warm so that it can take over at once",
            ),
        ] {
            if on == Some(true) {
                return Err(ConfigError::new(field, format!("true is not supported: {what}")));
            }
        }
        check_percentage(self.percentage_of_nodes_to_score, "percentageOfNodesToScore")?;
        if self.pod_initial_backoff_seconds <= 0 {
            return Err(ConfigError::new("podInitialBackoffSeconds", "must be greater than 0"));
        }
        if self.pod_max_backoff_seconds < self.pod_initial_backoff_seconds {
            return Err(ConfigError::new(
                "podMaxBackoffSeconds",
                "must be at least podInitialBackoffSeconds",
            ));
        }
        if let Some(p) = self.parallelism
            && p <= 0
        {
            return Err(ConfigError::new("parallelism", "must be greater than 0"));
        }
        self.metrics.validate()?;
        if self.profiles.is_empty() {
            self.profiles.push(Profile::default());
        }
        for (i, p) in self.profiles.iter_mut().enumerate() {
            if p.scheduler_name.is_empty() {
                if i > 0 {
                    return Err(ConfigError::new(format!("profiles[{i}].schedulerName"), "is required"));
                }
                p.scheduler_name = DEFAULT_SCHEDULER_NAME.to_owned();
            }
        }
        for (i, p) in self.profiles.iter().enumerate() {
            let at = format!("profiles[{i}]");
            if self.profiles[..i].iter().any(|o| o.scheduler_name == p.scheduler_name) {
                return Err(ConfigError::new(
                    format!("{at}.schedulerName"),
                    format!("duplicate profile {:?}", p.scheduler_name),
                ));
            }
            check_percentage(
                p.percentage_of_nodes_to_score,
                &format!("{at}.percentageOfNodesToScore"),
            )?;
            for (j, pc) in p.plugin_config.iter().enumerate() {
                if p.plugin_config[..j].iter().any(|o| o.name == pc.name) {
                    return Err(ConfigError::new(
                        format!("{at}.pluginConfig[{j}].name"),
                        format!("duplicate config for plugin {:?}", pc.name),
                    ));
                }
            }
            let natively = ["PrioritySort", "DefaultBinder", "SchedulingGates"];
            let pl = &p.plugins;
            for (point, set) in [
                ("preEnqueue", &pl.pre_enqueue),
                ("queueSort", &pl.queue_sort),
                ("bind", &pl.bind),
            ] {
                for (j, e) in set.enabled.iter().enumerate() {
                    if !natively.contains(&e.name.as_str()) {
                        return Err(ConfigError::new(
                            format!("{at}.plugins.{point}.enabled[{j}].name"),
                            format!("plugin {:?}: the {point} extension point is not supported", e.name),
                        ));
                    }
                }
                if let Some((j, d)) = set.disabled.iter().enumerate().next() {
                    return Err(ConfigError::new(
                        format!("{at}.plugins.{point}.disabled[{j}].name"),
                        format!(
                            "plugin {:?}: wasmsched always runs {} at {point}; disabling it is not supported",
                            d.name,
                            natively.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Worker threads for filtering and scoring.
    pub fn parallelism(&self) -> usize {
        match self.parallelism {
            Some(p) => p as usize,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// Initial pod backoff.
    pub fn initial_backoff(&self) -> Duration {
        Duration::from_secs(self.pod_initial_backoff_seconds as u64)
    }

    /// Maximum pod backoff.
    pub fn max_backoff(&self) -> Duration {
        Duration::from_secs(self.pod_max_backoff_seconds as u64)
    }

    /// Enables `name` at every point it implements (`multiPoint`, weight 1)
    /// in each profile that does not mention it anywhere (enabled or
    /// disabled): how `--plugins DIR` adds a directory's plugins.
    pub fn enable_where_unmentioned(&mut self, name: &str) {
        for p in &mut self.profiles {
            let mentioned = p
                .plugins
                .sets()
                .iter()
                .any(|s| s.enabled.iter().chain(&s.disabled).any(|r| r.name == name));
            if !mentioned {
                p.plugins.multi_point.enabled.push(PluginRef {
                    name: name.to_owned(),
                    weight: None,
                });
            }
        }
    }

    /// Sets the score weight of plugin `name` wherever a profile enables it
    /// at multiPoint or score (`--plugin-weight`); false when none does.
    pub fn set_weight(&mut self, name: &str, weight: i64) -> bool {
        let mut found = false;
        for p in &mut self.profiles {
            for set in [&mut p.plugins.multi_point, &mut p.plugins.score] {
                for r in set.enabled.iter_mut().filter(|r| r.name == name) {
                    r.weight = Some(weight);
                    found = true;
                }
            }
        }
        found
    }

    /// Every plugin name a profile enables, at any extension point.
    pub fn enabled_plugin_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.profiles {
            for set in p.plugins.sets() {
                for r in &set.enabled {
                    if !out.contains(&r.name) {
                        out.push(r.name.clone());
                    }
                }
            }
        }
        out
    }

    /// Builds the framework of the profile at `index` alone, running on the
    /// calling thread (no worker pool): a shadow's.
    pub fn build_framework(&self, index: usize, registry: &Registry) -> Result<Framework, ConfigError> {
        let p = self
            .profiles
            .get(index)
            .ok_or_else(|| ConfigError::new("profiles", format!("no profile {index}")))?;
        let pct = p
            .percentage_of_nodes_to_score
            .or(self.percentage_of_nodes_to_score)
            .unwrap_or(0);
        build_profile(p, index, registry).map(|mut fw| {
            fw.percentage_of_nodes_to_score = pct as u32;
            fw
        })
    }

    /// Builds one framework per profile, instantiating plugins from `registry`.
    pub fn build_frameworks(&self, registry: &Registry) -> Result<Vec<Framework>, ConfigError> {
        let parallelism = self.parallelism();
        let pool = (parallelism > 1).then(|| {
            Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(parallelism)
                    .thread_name(|i| format!("sched-worker-{i}"))
                    .build()
                    .expect("cannot start scheduler worker threads"),
            )
        });
        (0..self.profiles.len())
            .map(|i| self.build_framework(i, registry).map(|fw| fw.with_pool(pool.clone())))
            .collect()
    }
}

fn check_percentage(p: Option<i64>, field: &str) -> Result<(), ConfigError> {
    match p {
        Some(v) if !(0..=100).contains(&v) => Err(ConfigError::new(field, format!("{v} is not in 0..=100"))),
        _ => Ok(()),
    }
}

/// kube-scheduler's `mergePluginSet`: defaults not disabled (all are with
/// `*`), a custom entry replacing its default in place, then the other
/// custom entries in order. Entries carry their config path for errors.
fn merge_plugin_set(defaults: &[PluginRef], custom: &PluginSet, at: &str) -> (Vec<(PluginRef, String)>, Vec<String>) {
    let disabled: Vec<String> = custom.disabled.iter().map(|d| d.name.clone()).collect();
    let mut replaced = vec![false; custom.enabled.len()];
    let mut out = Vec::new();
    if !disabled.iter().any(|d| d == "*") {
        for d in defaults {
            if disabled.contains(&d.name) {
                continue;
            }
            match custom.enabled.iter().position(|c| c.name == d.name) {
                Some(j) => {
                    replaced[j] = true;
                    out.push((custom.enabled[j].clone(), format!("{at}.enabled[{j}]")));
                }
                None => out.push((d.clone(), "default plugins".to_owned())),
            }
        }
    }
    for (j, c) in custom.enabled.iter().enumerate() {
        if !replaced[j] {
            out.push((c.clone(), format!("{at}.enabled[{j}]")));
        }
    }
    (out, disabled)
}

/// The name of `names` nearest to `name` by edit distance, if it is a
/// likely typo (at most two edits, and fewer than half its length).
fn closest<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                cur.push((prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1));
            }
            prev = cur;
        }
        prev[b.len()]
    }
    names
        .map(|n| (distance(&name.to_lowercase(), &n.to_lowercase()), n))
        .filter(|(d, _)| *d <= 2 && *d * 2 < name.len())
        .min()
        .map(|(_, n)| n)
}

fn build_profile(p: &Profile, i: usize, registry: &Registry) -> Result<Framework, ConfigError> {
    let at = format!("profiles[{i}]");
    // Names first: args given under a misspelt name would otherwise surface
    // as the real plugin's complaint about missing args.
    for (j, pc) in p.plugin_config.iter().enumerate() {
        if registry.get(&pc.name).is_none() {
            let hint = closest(&pc.name, registry.names()).map_or(String::new(), |n| format!(" (did you mean {n:?}?)"));
            return Err(ConfigError::new(
                format!("{at}.pluginConfig[{j}].name"),
                format!("unknown plugin {:?}{hint}", pc.name),
            ));
        }
    }
    let mut instances: BTreeMap<String, Arc<dyn Plugin>> = BTreeMap::new();
    let mut instantiate = |r: &PluginRef, field: &str| -> Result<Arc<dyn Plugin>, ConfigError> {
        if let Some(pl) = instances.get(&r.name) {
            return Ok(pl.clone());
        }
        let Some(factory) = registry.get(&r.name) else {
            let reason = if KNOWN_UNSUPPORTED.contains(&r.name.as_str()) {
                format!(
                    "plugin {:?} is a kube-scheduler plugin that wasmsched does not implement",
                    r.name
                )
            } else {
                format!(
                    "unknown plugin {:?} (known: {})",
                    r.name,
                    registry.names().collect::<Vec<_>>().join(", ")
                )
            };
            return Err(ConfigError::new(format!("{field}.name"), reason));
        };
        let args = p
            .plugin_config
            .iter()
            .find(|c| c.name == r.name)
            .and_then(|c| c.args.as_ref());
        let pl = factory(args).map_err(|e| {
            let j = p.plugin_config.iter().position(|c| c.name == r.name).unwrap_or(0);
            ConfigError::new(format!("{at}.pluginConfig[{j}].args"), format!("{}: {e}", r.name))
        })?;
        instances.insert(r.name.clone(), pl.clone());
        Ok(pl)
    };

    let defaults: Vec<PluginRef> = DEFAULT_PLUGINS
        .iter()
        .map(|(n, w)| PluginRef {
            name: (*n).to_owned(),
            weight: (*w > 0).then_some(*w),
        })
        .collect();
    let (multi, _) = merge_plugin_set(&defaults, &p.plugins.multi_point, &format!("{at}.plugins.multiPoint"));
    let mut fw = Framework::new(p.scheduler_name.clone());
    for (point_name, point) in POINTS {
        let field = format!("{at}.plugins.{point_name}");
        let (specific, disabled) = merge_plugin_set(&[], p.plugins.point(point_name), &field);
        let mut list: Vec<(Arc<dyn Plugin>, Option<i64>)> = Vec::new();
        // kube-scheduler's expandMultiPointPlugins: specific entries that also
        // appear in multiPoint keep their specific position first, then the
        // multiPoint plugins, then the other specific entries.
        let mut overrides = Vec::new();
        let mut from_multi: Vec<(Arc<dyn Plugin>, Option<i64>)> = Vec::new();
        if !disabled.iter().any(|d| d == "*") {
            for (r, f) in &multi {
                let pl = instantiate(r, f)?;
                if !pl.points().contains(point) || disabled.contains(&r.name) {
                    continue;
                }
                if specific.iter().any(|(s, _)| s.name == r.name) {
                    overrides.push(r.name.clone());
                    continue;
                }
                if from_multi.iter().any(|(x, _)| x.name() == r.name) {
                    return Err(ConfigError::new(
                        format!("{f}.name"),
                        format!("plugin {:?} already registered as {point_name} plugin", r.name),
                    ));
                }
                from_multi.push((pl, r.weight));
            }
        }
        let mut rest = Vec::new();
        for (r, f) in &specific {
            let pl = instantiate(r, f)?;
            if !pl.points().contains(point) {
                return Err(ConfigError::new(
                    format!("{f}.name"),
                    format!("plugin {:?} does not extend {point_name}", r.name),
                ));
            }
            if list
                .iter()
                .chain(&rest)
                .any(|(x, _): &(Arc<dyn Plugin>, Option<i64>)| x.name() == r.name)
            {
                return Err(ConfigError::new(
                    format!("{f}.name"),
                    format!("plugin {:?} is enabled twice", r.name),
                ));
            }
            // A specific weight wins; else the multiPoint one.
            let w = r
                .weight
                .or_else(|| multi.iter().find(|(m, _)| m.name == r.name).and_then(|(m, _)| m.weight));
            if overrides.contains(&r.name) {
                list.push((pl, w));
            } else {
                rest.push((pl, w));
            }
        }
        list.extend(from_multi);
        list.extend(rest);
        let mut enabled = Vec::with_capacity(list.len());
        for (pl, w) in list {
            let weight = match w {
                None | Some(0) => 1,
                Some(w) if w < 0 => {
                    return Err(ConfigError::new(
                        format!("{field}.enabled"),
                        format!("plugin {:?}: weight {w} is negative", pl.name()),
                    ));
                }
                Some(w) => w,
            };
            enabled.push(Enabled { plugin: pl, weight });
        }
        match point_name {
            "preFilter" => fw.pre_filter = enabled,
            "filter" => fw.filter = enabled,
            "postFilter" => fw.post_filter = enabled,
            "preScore" => fw.pre_score = enabled,
            "score" => fw.score = enabled,
            "permit" => fw.permit = enabled,
            "preBind" => fw.pre_bind = enabled,
            "postBind" => fw.post_bind = enabled,
            _ => fw.reserve = enabled,
        }
    }
    Ok(fw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        use std::time::Duration;
        assert_eq!(parse_duration("15s"), Some(Duration::from_secs(15)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_duration("-1s"), None);
        assert_eq!(parse_duration("15"), None);
        assert_eq!(parse_duration("x"), None);
    }

    fn names(list: &[Enabled]) -> Vec<String> {
        list.iter()
            .map(|e| format!("{}:{}", e.plugin.name(), e.weight))
            .collect()
    }

    fn build(yaml: &str) -> Result<Vec<Framework>, ConfigError> {
        Config::from_yaml(yaml)?.build_frameworks(&Registry::builtin())
    }

    #[test]
    fn defaults_match_kube_scheduler() {
        let cfg = Config::from_yaml("{}").unwrap();
        assert_eq!(cfg.profiles[0].scheduler_name, DEFAULT_SCHEDULER_NAME);
        assert_eq!(cfg.initial_backoff(), Duration::from_secs(1));
        assert_eq!(cfg.max_backoff(), Duration::from_secs(10));
        let fw = &cfg.build_frameworks(&Registry::builtin()).unwrap()[0];
        assert_eq!(
            names(&fw.filter),
            [
                "NodeUnschedulable:1",
                "NodeName:1",
                "TaintToleration:3",
                "NodeAffinity:2",
                "NodePorts:1",
                "NodeResourcesFit:1",
                "VolumeRestrictions:1",
                "NodeVolumeLimits:1",
                "VolumeBinding:1",
                "VolumeZone:1",
                "PodTopologySpread:2",
                "InterPodAffinity:2",
                "DynamicResources:2"
            ]
        );
        assert_eq!(
            names(&fw.score),
            [
                "TaintToleration:3",
                "NodeAffinity:2",
                "NodeResourcesFit:1",
                "PodTopologySpread:2",
                "InterPodAffinity:2",
                "DynamicResources:2",
                "NodeResourcesBalancedAllocation:1",
                "ImageLocality:1"
            ]
        );
        assert_eq!(
            names(&fw.pre_filter),
            [
                "NodeAffinity:2",
                "NodePorts:1",
                "VolumeRestrictions:1",
                "NodeVolumeLimits:1",
                "VolumeBinding:1",
                "VolumeZone:1",
                "PodTopologySpread:2",
                "InterPodAffinity:2",
                "DynamicResources:2"
            ]
        );
        assert_eq!(fw.percentage_of_nodes_to_score, 0);
    }

    #[test]
    fn enable_disable_and_weights() {
        let fws = build(
            r#"
percentageOfNodesToScore: 50
profiles:
- schedulerName: a
  plugins:
    score:
      disabled: [{name: ImageLocality}, {name: NodeResourcesBalancedAllocation}]
      enabled: [{name: NodeResourcesFit, weight: 5}]
    filter:
      disabled: [{name: "*"}]
      enabled: [{name: NodeResourcesFit}, {name: TaintToleration}]
- schedulerName: b
  percentageOfNodesToScore: 100
  plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: NodeResourcesFit}]
"#,
        )
        .unwrap();
        assert_eq!(
            names(&fws[0].score),
            [
                "NodeResourcesFit:5",
                "TaintToleration:3",
                "NodeAffinity:2",
                "PodTopologySpread:2",
                "InterPodAffinity:2",
                "DynamicResources:2"
            ]
        );
        assert_eq!(names(&fws[0].filter), ["NodeResourcesFit:1", "TaintToleration:3"]);
        assert_eq!(fws[0].percentage_of_nodes_to_score, 50);
        assert_eq!(names(&fws[1].filter), ["NodeResourcesFit:1"]);
        assert_eq!(names(&fws[1].score), ["NodeResourcesFit:1"]);
        assert_eq!(fws[1].percentage_of_nodes_to_score, 100);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (
                "profiles: [{schedulerName: a, plugins: {fliter: {}}}]",
                "profiles[0].plugins: unknown field `fliter`",
            ),
            (
                "percentageOfNodesToScore: 150",
                "percentageOfNodesToScore: 150 is not in 0..=100",
            ),
            (
                "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2",
                "podMaxBackoffSeconds: must be at least podInitialBackoffSeconds",
            ),
            (
                "profiles: [{schedulerName: a}, {schedulerName: a}]",
                "profiles[1].schedulerName: duplicate profile \"a\"",
            ),
            (
                "profiles: [{schedulerName: a, plugins: {score: {enabled: [{name: NodeName}]}}}]",
                "profiles[0].plugins.score.enabled[0].name: plugin \"NodeName\" does not extend score",
            ),
            (
                "profiles: [{schedulerName: a, plugins: {multiPoint: {enabled: [{name: DefaultBinder}]}}}]",
                "profiles[0].plugins.multiPoint.enabled[0].name: plugin \"DefaultBinder\" is a kube-scheduler plugin that wasmsched does not implement",
            ),
            (
                "profiles: [{schedulerName: a, pluginConfig: [{name: DynamicResources, args: {filterTimeout: soon}}]}]",
                "profiles[0].pluginConfig[0].args: DynamicResources: filterTimeout: \"soon\"",
            ),
            (
                "profiles: [{schedulerName: a, pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Fastest}}}]}]",
                "profiles[0].pluginConfig[0].args: NodeResourcesFit: scoringStrategy.type: unknown variant `Fastest`",
            ),
            (
                "profiles: [{schedulerName: a, pluginConfig: [{name: Mystery}]}]",
                "profiles[0].pluginConfig[0].name: unknown plugin \"Mystery\"",
            ),
            (
                // The typo is named before NodeResourcesFit's args are read.
                "profiles: [{schedulerName: a, pluginConfig: [{name: NodeResourceFit, args: {scoringStrategy: {type: Fastest}}}]}]",
                "profiles[0].pluginConfig[0].name: unknown plugin \"NodeResourceFit\" (did you mean \"NodeResourcesFit\"?)",
            ),
            (
                "profiles: [{schedulerName: a, plugins: {bind: {enabled: [{name: MyBinder}]}}}]",
                "profiles[0].plugins.bind.enabled[0].name: plugin \"MyBinder\": the bind extension point is not supported",
            ),
            (
                "apiVersion: kubescheduler.config.k8s.io/v1beta3",
                "apiVersion: \"kubescheduler.config.k8s.io/v1beta3\" is not kubescheduler.config.k8s.io/v1",
            ),
        ];
        for (yaml, want) in cases {
            let e = build(yaml).unwrap_err().to_string();
            assert!(e.starts_with(want), "{yaml}\n got: {e}\nwant: {want}");
        }
        // disabling kube-scheduler plugins we do not implement is fine
        build("profiles: [{schedulerName: a, plugins: {multiPoint: {disabled: [{name: DefaultBinder}]}}}]").unwrap();
    }
}
