//! Fault injection: failing requests with 500/429, requests that hang,
//! requests served whose answer is lost, added latency (for every request, or for matching ones), pausing. (Dropping watches and compacting history act on
//! the store; see [`crate::ApiServer`].)

use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wasmsched_core::rng::Rng;

/// Which requests a failure rule applies to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Match {
    /// Only this HTTP method (`POST`, `GET`, ...).
    pub method: Option<String>,
    /// Only paths containing this text (`/binding`, `/leases/`).
    pub path_contains: Option<String>,
    /// Whether watch requests are included (default: yes).
    pub skip_watches: bool,
    /// Only requests whose `User-Agent` contains this text (one replica of
    /// several: wasmsched puts its identity there).
    pub user_agent_contains: Option<String>,
}

impl Match {
    /// Matches every request.
    pub fn any() -> Self {
        Self::default()
    }

    /// Matches requests whose path contains `text`.
    pub fn path(text: &str) -> Self {
        Self {
            path_contains: Some(text.to_owned()),
            ..Self::default()
        }
    }

    /// Narrows to requests whose `User-Agent` contains `text`.
    pub fn from_agent(mut self, text: &str) -> Self {
        self.user_agent_contains = Some(text.to_owned());
        self
    }

    fn applies(&self, req: &RequestInfo<'_>) -> bool {
        self.method
            .as_deref()
            .is_none_or(|m| m.eq_ignore_ascii_case(req.method))
            && self.path_contains.as_deref().is_none_or(|p| req.path.contains(p))
            && self
                .user_agent_contains
                .as_deref()
                .is_none_or(|a| req.user_agent.contains(a))
            && !(req.watch && self.skip_watches)
    }
}

/// What fault rules look at in a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestInfo<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub user_agent: &'a str,
    pub watch: bool,
}

/// What the faults make of a request ([`Faults::before`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Answer it with this HTTP status, without serving it.
    Fail(u16),
    /// Serve it; with `lose_answer`, never send the answer; with `stall`,
    /// send the headers and part of the body, then nothing more.
    Serve { lose_answer: bool, stall: bool },
}

/// A failure rule: answer matching requests with `code` (500, 429 with
/// `Retry-After`, 503, 504), either the next `count` of them or a `fraction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailRule {
    /// HTTP status to answer.
    pub code: u16,
    /// Fail this many matching requests, then stop.
    #[serde(default)]
    pub count: Option<u64>,
    /// Fail this share (0..=1) of matching requests.
    #[serde(default)]
    pub fraction: Option<f64>,
    /// Which requests.
    #[serde(default, flatten)]
    pub matching: Match,
}

/// A delay for matching requests only (a slow DELETE, a slow binding),
/// on top of the latency every request gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlowRule {
    /// Milliseconds each matching request waits before it is served.
    pub delay_ms: u64,
    /// Which requests.
    #[serde(default, flatten)]
    pub matching: Match,
}

/// Matching requests served, then never answered ([`Faults::lose_answers`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoseRule {
    /// Lose the answers of this many matching requests, then stop.
    pub count: u64,
    /// Which requests.
    #[serde(default, flatten)]
    pub matching: Match,
}

#[derive(Debug)]
struct State {
    rules: Vec<FailRule>,
    hangs: Vec<Match>,
    lose: Vec<LoseRule>,
    stall: Vec<LoseRule>,
    slow: Vec<SlowRule>,
    held: u64,
    latency: Duration,
    rng: Rng,
    injected: u64,
}

/// The fault switches of a running server. Cheap to consult on every request.
#[derive(Debug)]
pub struct Faults {
    state: Mutex<State>,
    paused: tokio::sync::watch::Sender<bool>,
}

impl Faults {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            state: Mutex::new(State {
                rules: Vec::new(),
                hangs: Vec::new(),
                lose: Vec::new(),
                stall: Vec::new(),
                slow: Vec::new(),
                held: 0,
                latency: Duration::ZERO,
                rng: Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15),
                injected: 0,
            }),
            paused: tokio::sync::watch::channel(false).0,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answers the next `count` requests with `code`.
    pub fn fail_next(&self, count: u64, code: u16) {
        self.add_rule(FailRule {
            code,
            count: Some(count),
            fraction: None,
            matching: Match::default(),
        });
    }

    /// Answers a `fraction` of all requests with `code`, until cleared.
    pub fn fail_fraction(&self, fraction: f64, code: u16) {
        self.add_rule(FailRule {
            code,
            count: None,
            fraction: Some(fraction),
            matching: Match::default(),
        });
    }

    /// Adds a failure rule; rules are consulted in order.
    pub fn add_rule(&self, rule: FailRule) {
        self.lock().rules.push(rule);
    }

    /// Holds every matching request without an answer, as a dead TCP
    /// connection or a wedged API server does: the request is neither
    /// answered nor applied, until the client gives up on it (or the server
    /// stops). Removing the rule ([`Faults::unhang`], [`Faults::clear`])
    /// lets new requests through; held ones stay held, as a dead
    /// connection stays dead.
    pub fn hang(&self, matching: Match) {
        self.lock().hangs.push(matching);
    }

    /// Serves the next `count` matching requests (a write is applied) and
    /// never answers them, as when the connection dies after the API
    /// server committed: the client cannot tell whether its write landed.
    pub fn lose_answers(&self, matching: Match, count: u64) {
        self.lock().lose.push(LoseRule { count, matching });
    }

    /// Answers the next `count` matching requests with their status and
    /// headers and the first half of their body (a watch: nothing after
    /// its headers), then sends nothing more while holding the connection
    /// open: a peer that went silent mid-answer, as behind a dead NAT entry
    /// or a wedged proxy. Only the client's read timeout ends it.
    pub fn stall(&self, matching: Match, count: u64) {
        self.lock().stall.push(LoseRule { count, matching });
    }

    /// Delays every matching request by `delay` (on top of the latency).
    pub fn slow(&self, matching: Match, delay: Duration) {
        self.lock().slow.push(SlowRule {
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            matching,
        });
    }

    /// Removes every hang rule (requests already held stay held).
    pub fn unhang(&self) {
        self.lock().hangs.clear();
    }

    /// Requests held by a hang rule so far.
    pub fn held(&self) -> u64 {
        self.lock().held
    }

    /// Removes every failure, hang, lost-answer and slow rule and the latency.
    pub fn clear(&self) {
        let mut s = self.lock();
        s.rules.clear();
        s.hangs.clear();
        s.lose.clear();
        s.stall.clear();
        s.slow.clear();
        s.latency = Duration::ZERO;
    }

    /// Delays every request by `latency`.
    pub fn set_latency(&self, latency: Duration) {
        self.lock().latency = latency;
    }

    /// Holds every request (and watch event delivery stays as is) until
    /// [`Faults::resume`].
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    /// Lets held requests through.
    pub fn resume(&self) {
        self.paused.send_replace(false);
    }

    /// Requests answered with an injected error so far.
    pub fn injected(&self) -> u64 {
        self.lock().injected
    }

    /// The current rules, latency and pause state.
    pub fn describe(&self) -> serde_json::Value {
        let s = self.lock();
        serde_json::json!({
            "rules": s.rules,
            "hang": s.hangs,
            "loseAnswer": s.lose,
            "stall": s.stall,
            "slow": s.slow,
            "held": s.held,
            "latencyMs": s.latency.as_millis() as u64,
            "paused": *self.paused.borrow(),
            "injected": s.injected,
        })
    }

    /// Consulted on every API request: waits out a pause, a hang and the
    /// latency, then says whether to fail it, with which code, or to serve
    /// it and whether to lose its answer.
    pub(crate) async fn before(&self, req: RequestInfo<'_>) -> Admit {
        let mut rx = self.paused.subscribe();
        let _ = rx.wait_for(|p| !*p).await;
        let verdict = {
            let mut s = self.lock();
            if s.hangs.iter().any(|m| m.applies(&req)) {
                s.held += 1;
                None
            } else {
                let (latency, fail) = Self::fail_or_pass(&mut s, &req);
                let admit = match fail {
                    Some(code) => Admit::Fail(code),
                    None => {
                        let lose_answer = !req.watch && Self::lose_answer(&mut s, &req);
                        let st: &mut State = &mut s;
                        let stall = !lose_answer && Self::take(&mut st.stall, &mut st.injected, &req);
                        Admit::Serve { lose_answer, stall }
                    }
                };
                Some((latency, admit))
            }
        };
        // A hung request is never answered: the client gives up, or the
        // server stops.
        let Some((latency, admit)) = verdict else {
            return std::future::pending().await;
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        admit
    }

    /// Whether a rule of `rules` takes `req` (counted against the first
    /// matching one).
    fn take(rules: &mut Vec<LoseRule>, injected: &mut u64, req: &RequestInfo<'_>) -> bool {
        let Some(rule) = rules.iter_mut().find(|r| r.count > 0 && r.matching.applies(req)) else {
            return false;
        };
        rule.count -= 1;
        rules.retain(|r| r.count > 0);
        *injected += 1;
        true
    }

    /// Whether the answer to `req`, once served, is to be lost.
    fn lose_answer(s: &mut State, req: &RequestInfo<'_>) -> bool {
        Self::take(&mut s.lose, &mut s.injected, req)
    }

    /// The latency and the failure code (if any) the rules give `req`.
    fn fail_or_pass(s: &mut State, req: &RequestInfo<'_>) -> (Duration, Option<u16>) {
        let mut fail = None;
        let State { rules, rng, .. } = &mut *s;
        for rule in rules.iter_mut() {
            if !rule.matching.applies(req) {
                continue;
            }
            if let Some(n) = &mut rule.count {
                if *n > 0 {
                    *n -= 1;
                    fail = Some(rule.code);
                    break;
                }
            } else if let Some(f) = rule.fraction
                && (rng.next_u64() as f64 / u64::MAX as f64) < f
            {
                fail = Some(rule.code);
                break;
            }
        }
        s.rules.retain(|r| r.count != Some(0));
        if fail.is_some() {
            s.injected += 1;
        }
        let slow: u64 = s
            .slow
            .iter()
            .filter(|r| r.matching.applies(req))
            .map(|r| r.delay_ms)
            .sum();
        (s.latency + Duration::from_millis(slow), fail)
    }
}

/// The body of `POST /_sim/faults`: every field optional, applied in this
/// order.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultRequest {
    /// Remove all rules and latency first.
    #[serde(default)]
    pub clear: bool,
    /// Rules to add.
    #[serde(default)]
    pub fail: Vec<FailRule>,
    /// Requests to hold without an answer (see [`Faults::hang`]).
    #[serde(default)]
    pub hang: Vec<Match>,
    /// Requests to serve without an answer (see [`Faults::lose_answers`]).
    #[serde(default)]
    pub lose_answer: Vec<LoseRule>,
    /// Requests to delay (see [`Faults::slow`]).
    #[serde(default)]
    pub slow: Vec<SlowRule>,
    /// Answers to stop sending mid-body (see [`Faults::stall`]).
    #[serde(default)]
    pub stall: Vec<LoseRule>,
    /// Latency for every request, in milliseconds.
    pub latency_ms: Option<u64>,
    /// Pause (`true`) or resume (`false`).
    pub paused: Option<bool>,
    /// Close every open watch.
    #[serde(default)]
    pub drop_watches: bool,
    /// Expire every resourceVersion before now.
    #[serde(default)]
    pub compact: bool,
}
