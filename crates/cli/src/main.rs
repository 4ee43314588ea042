//! `wasmsched`: a Kubernetes scheduler whose policy is WebAssembly.
//!
//! The binary is thin: it parses flags, sets up logging and calls into the
//! library crates.

mod allocator;
mod apiserver;
mod bench;
mod bench_e2e;
mod bench_e2e_cluster;
mod bench_extender;
mod bench_first_load;
mod bench_startup;
mod demo;
mod extender;
mod plugin;
mod plugin_diff;
mod run;
mod simulate;
mod ui;

use std::path::Path;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "wasmsched",
    version,
    about = "A Kubernetes scheduler whose policy is WebAssembly"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log filter (tracing `EnvFilter` syntax), e.g. `info` or `wasmsched=debug`.
    #[arg(long, env = "WASMSCHED_LOG", default_value = "info", global = true)]
    log: String,
    /// Log format.
    #[arg(long, env = "WASMSCHED_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the scheduler against a Kubernetes API server (in a cluster, or through kubectl proxy).
    Run(run::Args),
    /// Start an API server double with the example cluster, run the real daemon against it, show where pods went.
    Demo(demo::Args),
    /// Place pods on a cluster snapshot offline and show why (no cluster needed).
    Simulate(simulate::Args),
    /// Schedule a synthetic cluster through the real framework and report throughput.
    Bench(bench::Args),
    /// Serve a Kubernetes API server double on 127.0.0.1 (plain HTTP, no auth) for kubectl or a scheduler.
    Apiserver(apiserver::Args),
    /// Serve kube-scheduler's extender protocol (filter, prioritize) with the same profiles and plugins.
    Extender(extender::Args),
    /// Open a scheduler's web view from this machine: serve it on localhost, forwarding to its admin port with a token.
    Ui(ui::Args),
    /// Inspect and try WebAssembly plugins.
    #[command(subcommand)]
    Plugin(plugin::Command),
    /// Compile one plugin component (stdin) into an artifact (stdout), with
    /// capped memory: the compiler process of the other commands.
    #[command(hide = true)]
    CompilePlugin {
        /// The memory cap, in MiB.
        #[arg(long)]
        memory_mib: u64,
        /// Compile with the baseline compiler (Winch) instead of Cranelift.
        #[arg(long)]
        baseline: bool,
        /// Run at a lower priority (an optimising compile while the
        /// scheduler serves on baseline code).
        #[arg(long)]
        background: bool,
    },
}

fn init_logging(filter: &str, format: LogFormat) -> anyhow::Result<()> {
    // Noisy dependencies stay quiet unless asked for by name.
    let filter = format!("warn,{filter}").replace("warn,info", "info");
    let filter =
        tracing_subscriber::EnvFilter::try_new(&filter).with_context(|| format!("invalid --log filter {filter:?}"))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour_logs(
            std::io::IsTerminal::is_terminal(&std::io::stderr()),
            std::env::var_os("NO_COLOR").as_deref(),
        ))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
    Ok(())
}

/// Logs are coloured only on a terminal, and never when `NO_COLOR` is set
/// to anything but the empty string (no-color.org): a file or a pipe gets
/// plain text.
fn colour_logs(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// The scheduler configuration of `--config`, or the defaults.
pub(crate) fn load_config(path: Option<&Path>) -> anyhow::Result<wasmsched_core::config::Config> {
    match path {
        Some(p) => wasmsched_core::config::Config::from_yaml(&read_file(p)?)
            .with_context(|| format!("invalid config {}", p.display())),
        None => Ok(wasmsched_core::config::Config::default()),
    }
}

/// Reads a file, saying which one when it fails.
pub(crate) fn read_file(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// A metric snapshot file (`--metrics`), parsed.
pub(crate) struct Metrics {
    pub path: String,
    pub sources: wasmsched_core::metrics::snapshot::Sources,
}

/// Reads `--metrics FILE`; values without a timestamp are taken now.
impl Metrics {
    /// The sources it has values of.
    pub(crate) fn names(&self) -> Vec<String> {
        self.sources.keys().cloned().collect()
    }
}

pub(crate) fn read_metrics(path: &Path) -> anyhow::Result<Metrics> {
    let now = wasmsched_wasm::unix_ms();
    let sources = wasmsched_core::metrics::snapshot::parse(&read_file(path)?, now)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("invalid metrics {}", path.display()))?;
    Ok(Metrics {
        path: path.display().to_string(),
        sources,
    })
}

/// Warns about a snapshot's series that reached no node.
pub(crate) fn warn_unmatched(path: &str, source: &str, r: &wasmsched_core::metrics::InstallReport) {
    if !r.unmatched.is_empty() {
        eprintln!("warning: {path}: {source}: no node matches {}", r.unmatched.join(", "));
    }
    for (node, n) in &r.ambiguous {
        eprintln!("warning: {path}: {source}: {n} values for node {node}; none is used");
    }
    if !r.not_finite.is_empty() {
        eprintln!(
            "warning: {path}: {source}: values that are not finite numbers are dropped (for {})",
            r.not_finite.join(", ")
        );
    }
}

fn main() -> std::process::ExitCode {
    // A user's error is a message (with its causes), not a crash report:
    // no backtrace, whatever RUST_BACKTRACE says.
    match run_command() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // Output piped into `head` that closed: nothing more to say.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("Error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run_command() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging(&cli.log, cli.log_format)?;
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Apiserver(args) => apiserver::run(args),
        Command::Extender(args) => extender::run(args),
        Command::Ui(args) => ui::run(args),
        Command::Plugin(cmd) => plugin::run(cmd),
        Command::CompilePlugin {
            memory_mib,
            baseline,
            background,
        } => plugin::compile_plugin(
            memory_mib,
            if baseline {
                wasmsched_wasm::Tier::Baseline
            } else {
                wasmsched_wasm::Tier::Optimized
            },
            background,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_are_coloured_only_on_a_terminal_without_no_color() {
        assert!(colour_logs(true, None));
        assert!(colour_logs(true, Some("".as_ref())));
        assert!(!colour_logs(true, Some("1".as_ref())));
        assert!(!colour_logs(false, None));
    }
}
