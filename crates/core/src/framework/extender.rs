//! The framework as an extender of kube-scheduler runs it: kube-scheduler
//! has chosen the candidate nodes (and sampled them), so Filter runs on
//! exactly those, and Score on exactly those it sends to `prioritize`.

use std::sync::Arc;

use super::cycle::ScheduleError;
use super::{CycleState, Framework, Status};
use crate::cache::Snapshot;
use crate::node::NodeInfo;
use crate::pod::PodInfo;

/// The verdicts of an extender's `filter`.
#[derive(Debug, Default)]
pub struct ExtenderVerdicts {
    /// Snapshot positions of the nodes that passed, in request order.
    pub feasible: Vec<usize>,
    /// Nodes rejected: snapshot position and the status (its plugin set).
    pub rejected: Vec<(usize, Status)>,
}

impl Framework {
    /// PreFilter, then Filter on the nodes at snapshot positions `idx`, all
    /// of them. A PreFilter rejection rejects every node with its status; a
    /// PreFilter node subset rejects the nodes outside it. An error of a
    /// plugin (under its failure policy) is the request's error.
    pub fn filter_for_extender(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        idx: &[usize],
    ) -> Result<ExtenderVerdicts, ScheduleError> {
        self.start_cycle(state, snapshot);
        if let Err(e) = self.run_pre_filter(state, pod, snapshot) {
            return match e {
                ScheduleError::Unschedulable(fit) => {
                    let st = fit.diagnosis.node_statuses.first().map(|(_, st)| st.clone());
                    let st = st.unwrap_or_else(|| {
                        Status::unresolvable(fit.diagnosis.pre_filter_msg.clone().unwrap_or_default())
                    });
                    Ok(ExtenderVerdicts {
                        feasible: Vec::new(),
                        rejected: idx.iter().map(|&i| (i, st.clone())).collect(),
                    })
                }
                other => Err(other),
            };
        }
        let mut out = ExtenderVerdicts::default();
        let mut candidates: Vec<usize> = idx.to_vec();
        if let Some((mut plugins, names)) = state.node_subset.take() {
            plugins.sort();
            plugins.dedup();
            let st = Status::unresolvable(format!("node(s) didn't satisfy plugin(s) [{}]", plugins.join(" ")))
                .with_plugin(plugins[0].clone());
            candidates.retain(|&i| {
                let inside = names.iter().any(|n| n == snapshot.nodes[i].name());
                if !inside {
                    out.rejected.push((i, st.clone()));
                }
                inside
            });
        }
        let (feasible, rejected, _) = self.filter_subset(state, pod, snapshot, &candidates)?;
        out.feasible = feasible;
        out.rejected.extend(
            rejected
                .into_iter()
                .map(|(i, fi, st)| (i, st.with_plugin(self.filter[fi].plugin.name().to_owned()))),
        );
        Ok(out)
    }

    /// PreScore, Score, NormalizeScore and weights on the nodes at snapshot
    /// positions `idx`: each node's weighted total, and the highest total
    /// possible (100 times the sum of the weights of the Score plugins
    /// that ran), for mapping onto the extender's range.
    pub fn prioritize_for_extender(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        idx: &[usize],
    ) -> Result<(Vec<i64>, i64), ScheduleError> {
        self.start_cycle(state, snapshot);
        let nodes: Vec<&Arc<NodeInfo>> = idx.iter().map(|&i| &snapshot.nodes[i]).collect();
        if nodes.is_empty() {
            return Ok((Vec::new(), 0));
        }
        self.run_pre_score(state, pod, snapshot, &nodes)?;
        let totals = self.weighted_scores(state, pod, &nodes, None)?;
        let max = self
            .score
            .iter()
            .enumerate()
            .filter(|(j, _)| !state.skip_score[*j])
            .map(|(_, e)| e.weight * super::MAX_NODE_SCORE)
            .sum();
        Ok((totals, max))
    }
}
