//! PostFilter, and the checks that look at a node as it would be: with the
//! pods nominated to it (the room a preemption holds for a waiting pod),
//! or without some of its pods (preemption's victims).
//!
//! A what-if is checked by running PreFilter again on the changed snapshot
//! and then Filter on the one node, so every plugin sees the change the way
//! it sees the cluster: built-in inter-pod plugins through their
//! precomputed counts, WebAssembly plugins through their pod views.

use std::sync::Arc;

use super::cycle::{Diagnosis, FitError, ScheduleError, narrowed_out};
use super::{Code, CycleState, Framework, Status};
use crate::cache::Snapshot;
use crate::nominator::Nominator;
use crate::pod::PodInfo;
use crate::rng::Rng;
use crate::what_if::WhatIf;

/// What a PostFilter plugin gets besides the pod and the diagnosis.
pub struct PostFilterContext<'a> {
    /// The profile's framework, to check what-ifs with its plugins.
    pub framework: &'a Framework,
    /// The cycle's state.
    pub state: &'a CycleState,
    /// The cycle's snapshot.
    pub snapshot: &'a Arc<Snapshot>,
    /// The cycle's random source.
    pub rng: &'a mut Rng,
    /// Whether to record the search ([`PostFilterResult::search`]).
    pub explain: bool,
}

/// What a PostFilter plugin answers.
#[derive(Debug, Clone)]
pub struct PostFilterResult {
    /// Success when it made room; otherwise its message (if any) is added
    /// to the failure message.
    pub status: Status,
    /// What happens to the pod's nomination.
    pub nominating: Nominating,
    /// The nodes examined and what each would take (when explaining).
    pub search: Vec<PreemptionTry>,
    /// A resource claim to deallocate (its `status.allocation`,
    /// `reservedFor` and `devices` cleared), as DynamicResources' PostFilter
    /// asks for a claim allocated where the pod no longer fits; the daemon
    /// writes it.
    pub deallocate: Option<Arc<k8s_openapi::api::resource::v1::ResourceClaim>>,
}

impl PostFilterResult {
    /// Nothing done.
    pub fn none(status: Status) -> Self {
        PostFilterResult {
            status,
            nominating: Nominating::Keep,
            search: Vec::new(),
            deallocate: None,
        }
    }
}

/// The pod's nomination after PostFilter.
#[derive(Debug, Clone, Default)]
pub enum Nominating {
    /// Unchanged.
    #[default]
    Keep,
    /// Cleared: preemption cannot help (kube-scheduler clears
    /// `status.nominatedNodeName` then).
    Clear,
    /// Nominated to a node once its victims are gone.
    Node(Nomination),
}

/// A preemption decided: the node, and the pods to evict from it.
#[derive(Debug, Clone)]
pub struct Nomination {
    /// The node the preemptor is nominated to.
    pub node: String,
    /// The victims, most important first.
    pub victims: Vec<Arc<PodInfo>>,
    /// How many of them a PodDisruptionBudget protects.
    pub pdb_violations: usize,
}

/// One node of a victim search.
#[derive(Debug, Clone)]
pub struct PreemptionTry {
    /// The node.
    pub node: String,
    /// The victims it would take and their budget violations, or why
    /// preempting there does not help.
    pub outcome: Result<(Vec<Arc<PodInfo>>, usize), Status>,
}

impl Framework {
    /// Whether `pod` passes PreFilter and Filter on the node at `pos` of
    /// `snapshot` (a what-if): the rejecting status, or success.
    pub fn fits_on(&self, pod: &PodInfo, snapshot: &Arc<Snapshot>, pos: usize) -> Result<Status, ScheduleError> {
        let mut state = CycleState::default();
        state.set_snapshot(snapshot.clone());
        self.start_cycle(&mut state, snapshot);
        match self.run_pre_filter(&mut state, pod, snapshot) {
            Ok(()) => {}
            Err(ScheduleError::Unschedulable(fit)) => return Ok(first_status(&fit)),
            Err(e) => return Err(e),
        }
        if let Some((mut plugins, names)) = state.node_subset.take()
            && !names.iter().any(|n| n == snapshot.nodes[pos].name())
        {
            let st = narrowed_out(&mut plugins);
            return Ok(st.with_plugin(plugins.swap_remove(0)));
        }
        let (feasible, rejected, _) = self.filter_subset(&state, pod, snapshot, &[pos])?;
        Ok(match rejected.into_vec().into_iter().next() {
            Some((_, fi, st)) if feasible.is_empty() => st.with_plugin(self.filter[fi].plugin.name().to_owned()),
            _ => Status::success(),
        })
    }

    /// kube-scheduler's `RunFilterPluginsWithNominatedPods` on a what-if:
    /// the pod must fit on the node at `pos` both with the pods nominated
    /// there that it must leave room for (`nominated`) and without them.
    pub fn fits_with_nominated(
        &self,
        pod: &PodInfo,
        what_if: &mut WhatIf,
        pos: usize,
        nominated: &[Arc<PodInfo>],
    ) -> Result<Status, ScheduleError> {
        if !nominated.is_empty() {
            for p in nominated {
                what_if.add(pos, p);
            }
            let with = self.fits_on(pod, what_if.snapshot(), pos);
            for p in nominated {
                what_if.remove(pos, p);
            }
            let with = with?;
            if !with.is_success() {
                return Ok(with);
            }
        }
        self.fits_on(pod, what_if.snapshot(), pos)
    }

    /// Feasible nodes that hold room for nominated pods are checked again
    /// with those pods on them: the ones that no longer fit move to the
    /// rejected, with their status.
    pub(crate) fn recheck_nominated(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &mut Vec<usize>,
        rejected: &mut super::cycle::Rejected,
    ) -> Result<(), ScheduleError> {
        let Some(nominator) = state.nominator().filter(|n| !n.is_empty()) else {
            return Ok(());
        };
        let mut what_if: Option<WhatIf> = None;
        let mut keep = Vec::with_capacity(feasible.len());
        for &i in feasible.iter() {
            let room = nominator.holding_room(snapshot.nodes[i].name(), pod);
            if room.is_empty() {
                keep.push(i);
                continue;
            }
            let w = what_if.get_or_insert_with(|| WhatIf::new(snapshot));
            for p in &room {
                w.add(i, p);
            }
            let st = self.fits_on(pod, w.snapshot(), i)?;
            w.reset();
            if st.is_success() {
                keep.push(i);
            } else {
                let fi = self
                    .filter
                    .iter()
                    .position(|e| Some(e.plugin.name()) == st.plugin())
                    .unwrap_or(0);
                rejected.push((i, fi, st));
            }
        }
        *feasible = keep;
        Ok(())
    }

    /// Runs the PostFilter plugins on a pod that fits nowhere, until one
    /// succeeds; records what they said in `fit`.
    pub(crate) fn run_post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Arc<Snapshot>,
        rng: &mut Rng,
        fit: &mut FitError,
        explain: bool,
    ) {
        let mut reasons: Vec<String> = Vec::new();
        for e in &self.post_filter {
            let t = state.clock();
            let mut ctx = PostFilterContext {
                framework: self,
                state,
                snapshot,
                rng,
                explain,
            };
            let r = e.plugin.post_filter(&mut ctx, pod, &fit.diagnosis);
            state.record(&*e.plugin, "PostFilter", r.status.code(), t);
            if let Some(x) = &mut fit.explanation {
                x.preemption.extend(r.search);
            }
            if !matches!(r.nominating, Nominating::Keep) {
                fit.nominating = r.nominating;
            }
            if r.deallocate.is_some() {
                fit.deallocate = r.deallocate;
            }
            if r.status.is_success() {
                return;
            }
            // kube-scheduler's RunPostFilterPlugins: an unresolvable or
            // failed plugin ends the run with its own message; otherwise
            // every plugin's reasons are joined with ", ".
            if r.status.code() != Code::Unschedulable {
                let msg = r.status.message();
                fit.diagnosis.post_filter_msg = (!msg.is_empty()).then_some(msg);
                return;
            }
            reasons.extend(r.status.reasons().map(str::to_owned));
        }
        if !reasons.is_empty() {
            fit.diagnosis.post_filter_msg = Some(reasons.join(", "));
        }
    }
}

/// The status a PreFilter rejection gives every node.
fn first_status(fit: &FitError) -> Status {
    fit.diagnosis
        .node_statuses
        .first()
        .map(|(_, st)| st.clone())
        .or_else(|| fit.diagnosis.absent.as_ref().map(|(_, st)| st.clone()))
        .unwrap_or_else(|| Status::unresolvable(fit.diagnosis.pre_filter_msg.clone().unwrap_or_default()))
}

impl Diagnosis {
    /// The snapshot positions, in order, of the nodes whose status
    /// ([`Diagnosis::status_of`]) has `code`: one pass over the statuses,
    /// where asking node by node would compare every node's name with every
    /// rejected node's (quadratic in the nodes of a full cluster).
    pub fn nodes_with(&self, snapshot: &Snapshot, code: Code) -> Vec<usize> {
        let mut codes: rustc_hash::FxHashMap<&str, Code> = rustc_hash::FxHashMap::default();
        for (name, st) in &self.node_statuses {
            // The first status of a name is the one `status_of` gives.
            codes.entry(name.as_str()).or_insert(st.code());
        }
        let absent = self.absent.as_ref().map(|(_, st)| st.code());
        (0..snapshot.len())
            .filter(|&i| codes.get(snapshot.nodes[i].name()).copied().or(absent) == Some(code))
            .collect()
    }

    /// The status of node `name`: its rejection, the status of the nodes
    /// PreFilter left out, or `None` if the cycle did not reject it.
    pub fn status_of(&self, name: &str) -> Option<&Status> {
        self.node_statuses
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, st)| st)
            .or(self.absent.as_ref().map(|(_, st)| st))
    }
}

/// Shares the scheduler's nominations with a cycle.
impl CycleState {
    /// Shares the nominated pods with the cycle.
    pub fn set_nominator(&mut self, nominator: Arc<Nominator>) {
        self.nominator = Some(nominator);
    }

    /// The nominated pods, when the scheduler shared them.
    pub fn nominator(&self) -> Option<&Arc<Nominator>> {
        self.nominator.as_ref()
    }
}
