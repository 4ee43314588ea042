//! The result of running a plugin at an extension point.

use std::borrow::Cow;
use std::fmt;

/// Status codes, in kube-scheduler's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// The plugin ran and the pod may proceed.
    Success,
    /// An internal error: the cycle fails and the pod is retried with backoff.
    Error,
    /// The pod does not fit now; something may change that (e.g. a pod leaves).
    Unschedulable,
    /// The pod does not fit, and preemption would not help.
    UnschedulableAndUnresolvable,
    /// The plugin has nothing to do for this pod (PreFilter/PreScore).
    Skip,
}

impl Code {
    /// The name used in metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Skip => "Skip",
        }
    }
}

/// A status: a code, the reasons (each counted separately in the failure
/// explanation) and the plugin that returned it. A success allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    code: Code,
    reasons: Vec<Cow<'static, str>>,
    plugin: Option<Cow<'static, str>>,
}

impl Status {
    /// A status with a code and reasons.
    pub fn new(code: Code, reasons: Vec<Cow<'static, str>>) -> Self {
        Status { code, reasons, plugin: None }
    }

    /// Success.
    #[inline]
    pub const fn success() -> Self {
        Status { code: Code::Success, reasons: Vec::new(), plugin: None }
    }

    /// Skip.
    pub const fn skip() -> Self {
        Status { code: Code::Skip, reasons: Vec::new(), plugin: None }
    }

    /// Unschedulable with one reason.
    pub fn unschedulable(reason: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::Unschedulable, vec![reason.into()])
    }

    /// UnschedulableAndUnresolvable with one reason.
    pub fn unresolvable(reason: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::UnschedulableAndUnresolvable, vec![reason.into()])
    }

    /// An error.
    pub fn error(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::Error, vec![message.into()])
    }

    /// Records which plugin returned this status.
    pub fn with_plugin(mut self, plugin: impl Into<Cow<'static, str>>) -> Self {
        self.plugin = Some(plugin.into());
        self
    }

    /// The code.
    #[inline]
    pub fn code(&self) -> Code {
        self.code
    }

    /// Whether the code is Success.
    #[inline]
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    /// Whether the code is Skip.
    #[inline]
    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    /// Whether the pod was rejected (Unschedulable or UnschedulableAndUnresolvable).
    pub fn is_rejected(&self) -> bool {
        matches!(self.code, Code::Unschedulable | Code::UnschedulableAndUnresolvable)
    }

    /// The reasons.
    pub fn reasons(&self) -> impl Iterator<Item = &str> {
        self.reasons.iter().map(|r| r.as_ref())
    }

    /// The plugin that returned it, if recorded.
    pub fn plugin(&self) -> Option<&str> {
        self.plugin.as_deref()
    }

    /// All reasons joined with ", ".
    pub fn message(&self) -> String {
        self.reasons().collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code.as_str())?;
        if !self.reasons.is_empty() {
            write!(f, ": {}", self.message())?;
        }
        Ok(())
    }
}
