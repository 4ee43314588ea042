//! DefaultPreemption (PostFilter): when a pod fits nowhere, find nodes where
//! evicting pods of lower priority makes it fit, choose the one that costs
//! least, and nominate the pod there.
//!
//! kube-scheduler's semantics: only nodes that the filters rejected as
//! `Unschedulable` (not `UnschedulableAndUnresolvable`) are tried, from a
//! random offset, until enough candidates are found
//! (`minCandidateNodesPercentage`, `minCandidateNodesAbsolute`). On a node,
//! every pod of lower priority is removed and the filters rerun (every
//! plugin, WebAssembly ones included, sees the node without them); then the
//! victims are reprieved one by one, most important first and those a
//! PodDisruptionBudget protects before the others, as long as the pod
//! still fits. Candidates are compared by budget violations, the highest
//! victim priority, the sum of priorities, the number of victims and the
//! victims' start time.

use std::cmp::Ordering;
use std::sync::Arc;

use serde::Deserialize;

use crate::framework::{
    Code, Diagnosis, FitError, Nominating, Nomination, Plugin, Points, PostFilterContext, PostFilterResult,
    PreemptionTry, ScheduleError, Status,
};
use crate::pod::PodInfo;
use crate::what_if::WhatIf;
use crate::workloads::Budget;

/// `DefaultPreemptionArgs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefaultPreemptionArgs {
    /// Ignored (kube-scheduler's typed args carry it).
    #[serde(default)]
    pub api_version: Option<String>,
    /// Ignored.
    #[serde(default)]
    pub kind: Option<String>,
    /// Candidates to find, as a percentage of the nodes (default 10).
    #[serde(default = "default_percentage")]
    pub min_candidate_nodes_percentage: i32,
    /// Candidates to find at least (default 100).
    #[serde(default = "default_absolute")]
    pub min_candidate_nodes_absolute: i32,
}

fn default_percentage() -> i32 {
    10
}

fn default_absolute() -> i32 {
    100
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs {
            api_version: None,
            kind: None,
            min_candidate_nodes_percentage: default_percentage(),
            min_candidate_nodes_absolute: default_absolute(),
        }
    }
}

/// The DefaultPreemption plugin.
#[derive(Debug, Clone, Default)]
pub struct DefaultPreemption {
    args: DefaultPreemptionArgs,
}

impl DefaultPreemption {
    /// Builds the plugin, validating its args as kube-scheduler does.
    pub fn new(args: DefaultPreemptionArgs) -> Result<Self, String> {
        let (p, a) = (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute);
        if !(0..=100).contains(&p) {
            return Err(format!(
                "minCandidateNodesPercentage: Invalid value: {p}: not in valid range [0, 100]"
            ));
        }
        if a < 0 {
            return Err(format!(
                "minCandidateNodesAbsolute: Invalid value: {a}: not in valid range [0, inf)"
            ));
        }
        if p == 0 && a == 0 {
            return Err(
                "minCandidateNodesPercentage, minCandidateNodesAbsolute: Invalid value: both cannot be zero".to_owned(),
            );
        }
        Ok(DefaultPreemption { args })
    }

    /// How many candidates to find among `nodes` potential ones.
    fn num_candidates(&self, nodes: usize) -> usize {
        let n = nodes as i64 * i64::from(self.args.min_candidate_nodes_percentage) / 100;
        (n.max(i64::from(self.args.min_candidate_nodes_absolute)) as usize).min(nodes)
    }
}

/// Whether `a` is more important than `b` (kube-scheduler's
/// `MoreImportantPod`): higher priority, then earlier start (a pod that
/// has not started counts as starting now).
fn more_important(a: &PodInfo, b: &PodInfo) -> Ordering {
    b.priority.cmp(&a.priority).then_with(|| start(a).cmp(&start(b)))
}

fn start(p: &PodInfo) -> i64 {
    p.start_time.unwrap_or(i64::MAX)
}

/// What preempting on one node would take (victims, budget violations), or
/// why it does not help.
type Outcome = Result<(Vec<Arc<PodInfo>>, usize), Status>;

/// A node where preemption helps.
struct Candidate {
    pos: usize,
    victims: Vec<Arc<PodInfo>>,
    violations: usize,
}

/// Splits `pods` (order kept) into those whose eviction violates a
/// budget and the others, counting each budget's allowance down.
pub fn split_by_budget(pods: Vec<Arc<PodInfo>>, budgets: &[&Budget]) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i32> = budgets.iter().map(|b| b.disruptions_allowed).collect();
    let (mut violating, mut other) = (Vec::new(), Vec::new());
    for p in pods {
        let mut violated = false;
        if !p.labels.is_empty() {
            for (i, b) in budgets.iter().enumerate() {
                if !b.selects(&p) || b.disrupted.contains(&p.name) {
                    continue;
                }
                allowed[i] -= 1;
                violated |= allowed[i] < 0;
            }
        }
        if violated { violating.push(p) } else { other.push(p) }
    }
    (violating, other)
}

impl DefaultPreemption {
    /// Why `pod` may not preempt, if it may not.
    fn ineligible(&self, ctx: &PostFilterContext<'_>, pod: &PodInfo, diagnosis: &Diagnosis) -> Option<&'static str> {
        if pod.preempt_never {
            return Some("not eligible due to preemptionPolicy=Never.");
        }
        let nominator = ctx.state.nominator();
        let nominated = nominator
            .and_then(|n| n.node_of(&pod.key))
            .or(pod.nominated_node.as_deref())?;
        // The nominated node turned out unusable for good: preempt again.
        if diagnosis
            .status_of(nominated)
            .is_some_and(|st| st.code() == Code::UnschedulableAndUnresolvable)
        {
            return None;
        }
        let node = ctx.snapshot.position(nominated).map(|p| &ctx.snapshot.nodes[p])?;
        let terminating = node.usage.pod_infos.iter().any(|v| {
            v.priority < pod.priority
                && ((v.deleting && v.preempted) || nominator.is_some_and(|n| n.is_evicting(&v.uid)))
        });
        terminating.then_some("not eligible due to a terminating pod on the nominated node.")
    }

    /// kube-scheduler's `SelectVictimsOnNode` on the node at `pos`.
    fn select_victims(
        &self,
        ctx: &PostFilterContext<'_>,
        pod: &PodInfo,
        what_if: &mut WhatIf,
        pos: usize,
        budgets: &[&Budget],
    ) -> Result<Outcome, ScheduleError> {
        let node = &ctx.snapshot.nodes[pos];
        let mut potential: Vec<Arc<PodInfo>> = node
            .usage
            .pod_infos
            .iter()
            .filter(|p| p.priority < pod.priority)
            .cloned()
            .collect();
        if potential.is_empty() {
            return Ok(Err(Status::unresolvable(
                "No preemption victims found for incoming pod",
            )));
        }
        let room = ctx
            .state
            .nominator()
            .map(|n| n.holding_room(node.name(), pod))
            .unwrap_or_default();
        let fw = ctx.framework;
        for v in &potential {
            what_if.remove(pos, v);
        }
        let result = (|| {
            let st = fw.fits_with_nominated(pod, what_if, pos, &room)?;
            if !st.is_success() {
                return Ok(Err(st));
            }
            potential.sort_by(|a, b| more_important(a, b));
            let (violating, other) = split_by_budget(potential, budgets);
            let both = !violating.is_empty() && !other.is_empty();
            let mut victims = Vec::new();
            let mut violations = 0;
            for (group, counts) in [(violating, true), (other, false)] {
                for p in group {
                    what_if.add(pos, &p);
                    if !fw.fits_with_nominated(pod, what_if, pos, &room)?.is_success() {
                        what_if.remove(pos, &p);
                        violations += usize::from(counts);
                        victims.push(p);
                    }
                }
            }
            if both {
                victims.sort_by(|a, b| more_important(a, b));
            }
            Ok(Ok((victims, violations)))
        })();
        what_if.reset();
        result
    }
}

/// kube-scheduler's `pickOneNodeForPreemption`: fewest budget violations,
/// then the lowest highest-priority victim, the smallest sum of
/// priorities, the fewest victims, the latest start among the
/// highest-priority victims; then the first.
fn pick(candidates: &[Candidate]) -> usize {
    let keys: [&dyn Fn(&Candidate) -> i128; 5] = [
        &|c| -(c.violations as i128),
        &|c| -i128::from(c.victims[0].priority),
        &|c| {
            -c.victims
                .iter()
                .map(|v| i128::from(v.priority) + i128::from(i32::MAX) + 1)
                .sum::<i128>()
        },
        &|c| -(c.victims.len() as i128),
        &|c| {
            let top = c.victims.iter().map(|v| v.priority).max().unwrap_or(0);
            c.victims
                .iter()
                .filter(|v| v.priority == top)
                .map(|v| start(v))
                .min()
                .map_or(i128::MAX, i128::from)
        },
    ];
    let mut left: Vec<usize> = (0..candidates.len()).collect();
    for key in keys {
        let best = left.iter().map(|&i| key(&candidates[i])).max().unwrap_or(0);
        left.retain(|&i| key(&candidates[i]) == best);
        if left.len() == 1 {
            break;
        }
    }
    left[0]
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &str {
        super::names::DEFAULT_PREEMPTION
    }

    fn points(&self) -> Points {
        Points::POST_FILTER
    }

    fn post_filter(&self, ctx: &mut PostFilterContext<'_>, pod: &PodInfo, diagnosis: &Diagnosis) -> PostFilterResult {
        let unschedulable = |msg: String| Status::new(Code::Unschedulable, [format!("preemption: {msg}").into()]);
        if let Some(why) = self.ineligible(ctx, pod, diagnosis) {
            return PostFilterResult::none(unschedulable(why.to_owned()));
        }
        let snapshot = ctx.snapshot;
        let all = snapshot.len();
        // Nodes where removing pods may help: those the filters rejected
        // as Unschedulable, not UnschedulableAndUnresolvable.
        let potential = diagnosis.nodes_with(snapshot, Code::Unschedulable);
        let mut tried: Vec<(String, Status)> = Vec::new();
        let mut search = Vec::new();
        let mut candidates: (Vec<Candidate>, Vec<Candidate>) = (Vec::new(), Vec::new());
        if !potential.is_empty() {
            let budgets: Vec<&Budget> = snapshot.workloads.budgets().collect();
            let offset = ctx.rng.below(potential.len() as u64) as usize;
            let wanted = self.num_candidates(potential.len());
            let mut what_if = WhatIf::new(snapshot);
            for k in 0..potential.len() {
                let pos = potential[(offset + k) % potential.len()];
                let name = snapshot.nodes[pos].name().to_owned();
                let outcome = match self.select_victims(ctx, pod, &mut what_if, pos, &budgets) {
                    Ok(o) => o,
                    Err(e) => {
                        return PostFilterResult::none(Status::error(format!("preemption: {e}")));
                    }
                };
                if ctx.explain {
                    search.push(PreemptionTry {
                        node: name.clone(),
                        outcome: outcome.clone(),
                    });
                }
                match outcome {
                    Ok((victims, violations)) if !victims.is_empty() => {
                        let c = Candidate {
                            pos,
                            victims,
                            violations,
                        };
                        if violations == 0 {
                            candidates.0.push(c);
                        } else {
                            candidates.1.push(c);
                        }
                        if !candidates.0.is_empty() && candidates.0.len() + candidates.1.len() >= wanted {
                            break;
                        }
                    }
                    Ok(_) => {
                        let st = Status::error(format!("expected at least one victim pod on node {name:?}"));
                        tried.push((name, st));
                    }
                    Err(st) => tried.push((name, st)),
                }
            }
        }
        let (mut candidates, violating) = candidates;
        candidates.extend(violating);
        if candidates.is_empty() {
            let mut fit = FitError::new(
                all,
                Diagnosis {
                    absent: Some((
                        all - tried.len(),
                        Status::unresolvable("Preemption is not helpful for scheduling"),
                    )),
                    node_statuses: tried,
                    ..Default::default()
                },
            );
            fit.explanation = None;
            return PostFilterResult {
                status: unschedulable(fit.to_string()),
                nominating: Nominating::Clear,
                search,
                deallocate: None,
            };
        }
        let best = candidates.swap_remove(pick(&candidates));
        PostFilterResult {
            status: Status::success(),
            nominating: Nominating::Node(Nomination {
                node: snapshot.nodes[best.pos].name().to_owned(),
                victims: best.victims,
                pdb_violations: best.violations,
            }),
            search,
            deallocate: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::{Value, json};

    use crate::config::Config;
    use crate::framework::{Nomination, ScheduleError};
    use crate::plugins::Registry;
    use crate::scheduler::{Attempt, Responsibility, Scheduler};

    fn node(name: &str, cpu: &str) -> Node {
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}),
        )
        .unwrap()
    }

    /// A pod of `priority` asking for `cpu`, bound to `node` when given;
    /// `meta` and `spec` are merged into the object.
    fn pod(name: &str, priority: i32, cpu: &str, node: Option<&str>, meta: Value, spec: Value) -> Pod {
        let mut p = json!({"metadata": {"name": name, "namespace": "d", "uid": name},
            "spec": {"priority": priority, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {}});
        if let Some(n) = node {
            p["spec"]["nodeName"] = json!(n);
            p["status"]["phase"] = json!("Running");
        }
        for (k, v) in meta.as_object().into_iter().flatten() {
            p["metadata"][k] = v.clone();
        }
        for (k, v) in spec.as_object().into_iter().flatten() {
            p["spec"][k] = v.clone();
        }
        serde_json::from_value(p).unwrap()
    }

    fn sched(nodes: &[Node], pods: &[Pod]) -> Scheduler {
        let mut s = Scheduler::new(&Config::default(), &Registry::builtin(), 7, Responsibility::AllPods).unwrap();
        let now = Instant::now();
        for n in nodes {
            s.on_node(n, now).unwrap();
        }
        for p in pods {
            s.on_pod(p, now).unwrap();
        }
        s
    }

    /// The nodes preemption looks at are those whose status is
    /// Unschedulable, as `status_of` gives it node by node: the first
    /// status of a node, else the status of the nodes PreFilter left out.
    #[test]
    fn nodes_with_a_code_are_those_status_of_gives() {
        use crate::framework::{Code, Diagnosis, Status};
        let nodes: Vec<Node> = (0..6).map(|i| node(&format!("n{i}"), "1")).collect();
        let snapshot = sched(&nodes, &[]).snapshot_now();
        let un = || Status::new(Code::Unschedulable, ["no".into()]);
        let mut d = Diagnosis {
            node_statuses: vec![
                ("n1".into(), un()),
                ("n2".into(), Status::unresolvable("never")),
                ("n1".into(), Status::unresolvable("later, not the first")),
                ("n4".into(), un()),
            ],
            ..Default::default()
        };
        let by_name = |d: &Diagnosis| -> Vec<usize> {
            (0..snapshot.len())
                .filter(|&i| {
                    d.status_of(snapshot.nodes[i].name())
                        .is_some_and(|st| st.code() == Code::Unschedulable)
                })
                .collect()
        };
        let named = |v: Vec<usize>| -> Vec<String> { v.iter().map(|&i| snapshot.nodes[i].name().to_owned()).collect() };
        assert_eq!(named(d.nodes_with(&snapshot, Code::Unschedulable)), ["n1", "n4"]);
        assert_eq!(d.nodes_with(&snapshot, Code::Unschedulable), by_name(&d));
        d.absent = Some((2, un()));
        assert_eq!(
            named(d.nodes_with(&snapshot, Code::Unschedulable)),
            ["n0", "n1", "n3", "n4", "n5"]
        );
        assert_eq!(d.nodes_with(&snapshot, Code::Unschedulable), by_name(&d));
    }

    fn attempt(s: &mut Scheduler, p: &Pod) -> Attempt {
        s.on_pod(p, Instant::now()).unwrap();
        s.schedule_one(Instant::now(), false).expect("a pod was ready")
    }

    fn nomination(a: &Attempt) -> (String, Vec<String>, usize) {
        let n: &Nomination = a
            .nomination()
            .unwrap_or_else(|| panic!("no nomination: {:?}", a.result));
        let victims = n.victims.iter().map(|v| v.name.clone()).collect();
        (n.node.clone(), victims, n.pdb_violations)
    }

    fn message(a: &Attempt) -> String {
        match &a.result {
            Err(e @ ScheduleError::Unschedulable(_)) => e.to_string(),
            other => panic!("not unschedulable: {other:?}"),
        }
    }

    fn started(secs: u32) -> Value {
        json!(format!("2026-01-01T00:00:{secs:02}Z"))
    }

    /// Every pod of lower priority is removed, then the most important are
    /// reprieved while the pod still fits: higher priority first, then the
    /// one that started earlier.
    #[test]
    fn evicts_the_fewest_and_least_important_pods() {
        let bound = |name: &str, prio: i32, secs: u32| {
            let mut p = pod(name, prio, "1", Some("n1"), json!({}), json!({}));
            p.status.as_mut().unwrap().start_time = serde_json::from_value(started(secs)).ok();
            p
        };
        let mut s = sched(
            &[node("n1", "4")],
            &[
                bound("a", 1, 30),
                bound("b", 2, 10),
                bound("c", 3, 10),
                bound("d", 1, 20),
            ],
        );
        let a = attempt(&mut s, &pod("p", 10, "2", None, json!({}), json!({})));
        assert_eq!(nomination(&a), ("n1".into(), vec!["d".into(), "a".into()], 0));
        assert_eq!(s.nominator().node_of("d/p"), Some("n1"));
        assert!(s.nominator().is_evicting("d") && s.nominator().is_evicting("a"));
    }

    /// A victim a PodDisruptionBudget protects is spared when another node
    /// will do; when none will, it is still evicted (budgets are best
    /// effort) and the violation counted.
    #[test]
    fn budgets_steer_the_choice_but_do_not_block_it() {
        let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "db", "namespace": "d"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}}, "status": {"disruptionsAllowed": 0}});
        let pods = [
            pod(
                "db-0",
                0,
                "1500m",
                Some("n1"),
                json!({"labels": {"app": "db"}}),
                json!({}),
            ),
            pod(
                "web-0",
                0,
                "1500m",
                Some("n2"),
                json!({"labels": {"app": "web"}}),
                json!({}),
            ),
        ];
        let mut s = sched(&[node("n1", "2"), node("n2", "2")], &pods);
        s.on_workload(&pdb).unwrap();
        let a = attempt(&mut s, &pod("p", 10, "1", None, json!({}), json!({})));
        assert_eq!(nomination(&a), ("n2".into(), vec!["web-0".into()], 0));

        let mut s = sched(&[node("n1", "2")], &pods[..1]);
        s.on_workload(&pdb).unwrap();
        let a = attempt(&mut s, &pod("p", 10, "1", None, json!({}), json!({})));
        assert_eq!(nomination(&a), ("n1".into(), vec!["db-0".into()], 1));
    }

    /// The preemptor's anti-affinity to a victim is evaluated again without
    /// the victims: the node is a candidate only because of that.
    #[test]
    fn a_node_fits_once_affinity_is_evaluated_without_the_victims() {
        let anti = json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}});
        let x = json!({"labels": {"app": "x"}});
        let pods = [
            pod("low", 0, "100m", Some("n1"), x.clone(), json!({})),
            pod("high", 100, "100m", Some("n2"), x, json!({})),
        ];
        let mut s = sched(&[node("n1", "4"), node("n2", "4")], &pods);
        let a = attempt(&mut s, &pod("p", 10, "100m", None, json!({}), anti));
        assert_eq!(nomination(&a), ("n1".into(), vec!["low".into()], 0));
    }

    /// Room held for a nominated pod counts for pods of lower or equal
    /// priority, which cannot take it nor preempt for it; the nominated pod
    /// then lands on its node.
    #[test]
    fn a_nominated_pod_keeps_its_room_until_it_is_placed() {
        let pods = [
            pod("l1", 0, "2", Some("n1"), json!({}), json!({})),
            pod("l2", 0, "2", Some("n1"), json!({}), json!({})),
        ];
        let mut s = sched(&[node("n1", "4")], &pods);
        let h = pod("h", 10, "3", None, json!({}), json!({}));
        let a = attempt(&mut s, &h);
        assert_eq!(nomination(&a), ("n1".into(), vec!["l1".into(), "l2".into()], 0));
        let now = Instant::now();
        for v in ["d/l1", "d/l2"] {
            s.on_pod_deleted(v, "", now);
        }
        assert!(!s.nominator().is_evicting("l1"));
        // The queue takes higher priority first: hold `h` back to try `m`.
        let m = pod("m", 5, "2", None, json!({}), json!({}));
        s.queue.delete("d/h", "h");
        let a = attempt(&mut s, &m);
        assert_eq!(
            message(&a),
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        );
        let a = attempt(&mut s, &h);
        assert_eq!(a.result.as_ref().map(|r| r.node.as_str()).ok(), Some("n1"));
        assert_eq!(s.nominator().node_of("d/h"), None);
    }

    /// A higher-priority preemptor on a node where a lower-priority pod is
    /// nominated ignores that nomination and clears it.
    #[test]
    fn a_lower_priority_nomination_on_the_chosen_node_is_cleared() {
        let mut s = sched(
            &[node("n1", "4")],
            &[pod("l", 0, "3", Some("n1"), json!({}), json!({}))],
        );
        let m = pod("m", 5, "2", None, json!({}), json!({}));
        let a = attempt(&mut s, &m);
        assert_eq!(nomination(&a).0, "n1");
        let a = attempt(&mut s, &pod("h", 10, "4", None, json!({}), json!({})));
        assert_eq!(nomination(&a), ("n1".into(), vec!["l".into()], 0));
        let cleared: Vec<&str> = a.cleared_nominations.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(cleared, ["m"]);
        assert_eq!(s.nominator().node_of("d/m"), None);
    }

    /// Pods that may not preempt, or for which preemption cannot help, are
    /// told so in kube-scheduler's words.
    #[test]
    fn when_preemption_does_not_apply_the_message_says_why() {
        let pods = [pod("l", 0, "3", Some("n1"), json!({}), json!({}))];
        let mut s = sched(&[node("n1", "4"), node("n2", "1")], &pods);
        let never = pod("p", 10, "2", None, json!({}), json!({"preemptionPolicy": "Never"}));
        let a = attempt(&mut s, &never);
        assert_eq!(
            message(&a),
            "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
        );
        let equal = pod("q", 0, "2", None, json!({}), json!({}));
        let a = attempt(&mut s, &equal);
        assert_eq!(
            message(&a),
            "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
        );
        assert!(a.nomination().is_none());
    }

    #[test]
    fn args_are_validated_as_kube_scheduler_does() {
        let bad = |v: Value| {
            let r = Registry::builtin();
            let factory = r.get(super::super::names::DEFAULT_PREEMPTION).unwrap();
            factory(Some(&v)).err().unwrap_or_default()
        };
        assert!(bad(json!({"minCandidateNodesPercentage": 101})).contains("not in valid range [0, 100]"));
        assert!(
            bad(json!({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}))
                .contains("both cannot be zero")
        );
        assert!(bad(json!({"minCandidates": 1})).contains("unknown field"));
        let p = super::DefaultPreemption::new(super::DefaultPreemptionArgs::default()).unwrap();
        assert_eq!(
            (p.num_candidates(500), p.num_candidates(40), p.num_candidates(5000)),
            (100, 40, 500)
        );
    }
}
