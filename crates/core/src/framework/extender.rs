//! The framework as an extender of kube-scheduler runs it: kube-scheduler
//! has chosen the candidate nodes (and sampled them), so Filter runs on
//! exactly those, and Score on exactly those it sends to `prioritize`.

use super::cycle::ScheduleError;
use super::{CycleState, Framework, Status};
use crate::cache::Snapshot;
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
            let st = super::cycle::narrowed_out(&mut plugins).with_plugin(plugins[0].clone());
            let names: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
            candidates.retain(|&i| {
                let inside = names.contains(snapshot.nodes[i].name());
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
                .into_vec()
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
        let (nodes, rows) = snapshot.at(idx.iter().copied());
        if nodes.is_empty() {
            return Ok((Vec::new(), 0));
        }
        self.run_pre_score(state, pod, snapshot, &nodes)?;
        let totals = self.weighted_scores(state, pod, &nodes, &rows, None)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Cache;
    use crate::config::Config;
    use crate::framework::Code;
    use crate::node::NodeData;
    use crate::plugins::Registry;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;

    /// Filter runs on exactly the nodes of the request; a PreFilter node
    /// subset (NodeAffinity on `metadata.name`) rejects the nodes outside
    /// it for good, in kube-scheduler's words, naming the plugin.
    #[test]
    fn filter_runs_on_the_request_and_honours_node_subsets() {
        let fw = Config::default()
            .build_frameworks(&Registry::builtin())
            .unwrap()
            .remove(0);
        let mut cache = Cache::new();
        for name in ["n0", "n1", "n2", "n3"] {
            let n: Node = serde_json::from_value(json!({"metadata": {"name": name},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}))
            .unwrap();
            cache.upsert_node(NodeData::from_node(&n).unwrap());
        }
        let snapshot = cache.snapshot();
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "d", "uid": "u"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n3"]}]}]}}}}}))
        .unwrap();
        let pod = PodInfo::from_pod(&pod).unwrap();
        // n3 is not in the request: it is neither feasible nor rejected.
        let idx: Vec<usize> = ["n0", "n1", "n2"]
            .iter()
            .map(|n| snapshot.position(n).unwrap())
            .collect();
        let v = fw
            .filter_for_extender(&mut CycleState::default(), &pod, &snapshot, &idx)
            .unwrap();
        let name = |i: usize| snapshot.nodes[i].name().to_owned();
        assert_eq!(v.feasible.iter().map(|&i| name(i)).collect::<Vec<_>>(), ["n1"]);
        let mut rejected: Vec<(String, String, Code)> = v
            .rejected
            .iter()
            .map(|(i, st)| (name(*i), st.message(), st.code()))
            .collect();
        rejected.sort_by(|a, b| a.0.cmp(&b.0));
        let why = "node(s) didn't satisfy plugin(s) [NodeAffinity]".to_owned();
        assert_eq!(
            rejected,
            [
                ("n0".to_owned(), why.clone(), Code::UnschedulableAndUnresolvable),
                ("n2".to_owned(), why, Code::UnschedulableAndUnresolvable)
            ]
        );
    }
}
