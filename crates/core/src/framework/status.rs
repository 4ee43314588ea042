//! The result of running a plugin at an extension point.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Cuts a message to at most `max` bytes the way kube-scheduler's
/// `truncateMessage` does: the first `max - 4` bytes (on a character
/// boundary) and ` ...`. Shorter messages are returned as they are.
/// Longest message of a failed attempt kept: what goes into the pod's
/// `PodScheduled` condition and its event (the API server takes event notes
/// of at most 1024 bytes). kube-scheduler's message is bounded by the number
/// of distinct reasons; a plugin that gives every node a reason of its own
/// would make it grow with the cluster, so it is cut here.
pub const MAX_MESSAGE_BYTES: usize = 1024;

pub fn truncate_message(mut s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mut end = max.saturating_sub(4);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push_str(" ...");
    s
}

/// One reason of a status: a static string, or a shared one (cloning is a
/// reference count, never a copy), so rejecting a node allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// A fixed message.
    Static(&'static str),
    /// A computed message, shared.
    Shared(Arc<str>),
}

impl Deref for Reason {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Reason::Static(s) => s,
            Reason::Shared(s) => s,
        }
    }
}

impl From<&'static str> for Reason {
    fn from(s: &'static str) -> Self {
        Reason::Static(s)
    }
}

impl From<String> for Reason {
    fn from(s: String) -> Self {
        Reason::Shared(s.into())
    }
}

impl From<Arc<str>> for Reason {
    fn from(s: Arc<str>) -> Self {
        Reason::Shared(s)
    }
}

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
    /// Permit: hold the pod until released (kube-scheduler's `Wait`).
    Wait,
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
            Code::Wait => "Wait",
        }
    }
}

/// A status: a code, the reasons (each counted separately in the failure
/// explanation) and the plugin that returned it. A success allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    code: Code,
    // The first reason inline: one reason (the common case) needs no vector.
    first: Option<Reason>,
    more: Option<Box<[Reason]>>,
    plugin: Option<Arc<str>>,
}

impl Status {
    /// A status with a code and reasons.
    pub fn new(code: Code, reasons: impl IntoIterator<Item = Reason>) -> Self {
        let mut it = reasons.into_iter();
        let first = it.next();
        let more: Vec<Reason> = it.collect();
        Status {
            code,
            first,
            more: (!more.is_empty()).then(|| more.into_boxed_slice()),
            plugin: None,
        }
    }

    /// The same reasons under another code.
    pub fn with_code(mut self, code: Code) -> Self {
        self.code = code;
        self
    }

    /// Adds a reason.
    pub fn push_reason(&mut self, reason: impl Into<Reason>) {
        match self.first {
            None => self.first = Some(reason.into()),
            // Several reasons are rare (NodeResourcesFit): a boxed slice keeps
            // Status small, at the cost of a copy here.
            Some(_) => {
                let mut v = self.more.take().map(Vec::from).unwrap_or_default();
                v.push(reason.into());
                self.more = Some(v.into_boxed_slice());
            }
        }
    }

    /// Whether it has any reason.
    pub fn has_reasons(&self) -> bool {
        self.first.is_some()
    }

    /// Success.
    #[inline]
    pub const fn success() -> Self {
        Status {
            code: Code::Success,
            first: None,
            more: None,
            plugin: None,
        }
    }

    /// Skip.
    pub const fn skip() -> Self {
        Status {
            code: Code::Skip,
            first: None,
            more: None,
            plugin: None,
        }
    }

    /// A status with one reason: what a filter returns for each node it
    /// rejects, so built without collecting anything.
    #[inline]
    fn one(code: Code, reason: Reason) -> Self {
        Status {
            code,
            first: Some(reason),
            more: None,
            plugin: None,
        }
    }

    /// Unschedulable with one reason.
    #[inline]
    pub fn unschedulable(reason: impl Into<Reason>) -> Self {
        Self::one(Code::Unschedulable, reason.into())
    }

    /// UnschedulableAndUnresolvable with one reason.
    #[inline]
    pub fn unresolvable(reason: impl Into<Reason>) -> Self {
        Self::one(Code::UnschedulableAndUnresolvable, reason.into())
    }

    /// An error.
    pub fn error(message: impl Into<Reason>) -> Self {
        Self::one(Code::Error, message.into())
    }

    /// Records which plugin returned this status.
    pub fn with_plugin(mut self, plugin: impl Into<Arc<str>>) -> Self {
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

    /// Whether `other` is this very status: the same code, and one reason
    /// that is the same string (the same static text, or the same shared
    /// one), no plugin named. Cheaper than `==`, which compares the text;
    /// false for statuses that are equal but built apart.
    #[inline]
    pub(crate) fn is_same(&self, other: &Status) -> bool {
        let same = match (&self.first, &other.first) {
            (Some(Reason::Static(a)), Some(Reason::Static(b))) => std::ptr::eq(*a, *b),
            (Some(Reason::Shared(a)), Some(Reason::Shared(b))) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same && self.code == other.code
            && self.more.is_none()
            && other.more.is_none()
            && self.plugin.is_none()
            && other.plugin.is_none()
    }

    /// Whether the pod was rejected (Unschedulable or UnschedulableAndUnresolvable).
    pub fn is_rejected(&self) -> bool {
        matches!(self.code, Code::Unschedulable | Code::UnschedulableAndUnresolvable)
    }

    /// The reasons.
    pub fn reasons(&self) -> impl Iterator<Item = &str> {
        self.first
            .iter()
            .chain(self.more.iter().flat_map(|m| m.iter()))
            .map(|r| &**r)
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
        if self.has_reasons() {
            write!(f, ": {}", self.message())?;
        }
        Ok(())
    }
}
