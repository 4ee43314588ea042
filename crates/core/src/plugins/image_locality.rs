//! ImageLocality: prefer nodes that already hold the pod's images, weighted
//! by image size and by how many nodes hold them (images everywhere count
//! for little, to avoid piling pods onto a few nodes).

use crate::framework::{CycleState, MAX_NODE_SCORE, Plugin, Points, Status};
use crate::node::NodeInfo;
use crate::pod::PodInfo;
use std::sync::Arc;

const MB: i64 = 1024 * 1024;
/// Below this the score is 0 (kube-scheduler's `minThreshold`).
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container, above this the score is 100 (`maxContainerThreshold`).
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// The ImageLocality score.
#[derive(Debug, Default)]
pub struct ImageLocality;

impl Plugin for ImageLocality {
    fn name(&self) -> &str {
        super::names::IMAGE_LOCALITY
    }

    fn points(&self) -> Points {
        Points::SCORE
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(node_score(&spreads(state, pod), pod.containers, node))
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let spreads = spreads(state, pod);
        for (o, n) in out.iter_mut().zip(nodes) {
            *o = node_score(&spreads, pod.containers, n);
        }
        Ok(())
    }
}

/// The pod's images that some node holds, with the share of nodes holding
/// each (computed once per batch, not per node).
fn spreads<'p>(state: &CycleState, pod: &'p PodInfo) -> Vec<(&'p str, f64)> {
    let total = state.total_nodes.max(1) as f64;
    pod.images
        .iter()
        .filter_map(|img| state.image_nodes.get(img).map(|&n| (img.as_str(), n as f64 / total)))
        .collect()
}

fn node_score(spreads: &[(&str, f64)], containers: usize, node: &NodeInfo) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD * containers as i64;
    if spreads.is_empty() || max <= MIN_THRESHOLD {
        return 0;
    }
    let sum: i64 = spreads
        .iter()
        .filter_map(|(img, spread)| node.node.images.get(*img).map(|&size| (size as f64 * spread) as i64))
        .sum();
    MAX_NODE_SCORE * (sum.clamp(MIN_THRESHOLD, max) - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::NodeData;
    use crate::plugins::testutil::pod;
    use k8s_openapi::api::core::v1::Node;
    use serde_json::json;
    use std::sync::Arc;

    fn node_with_images(images: serde_json::Value) -> NodeInfo {
        let n: Node = serde_json::from_value(json!({"metadata": {"name": "n"}, "status": {"images": images}})).unwrap();
        NodeInfo {
            node: Arc::new(NodeData::from_node(&n).unwrap()),
            usage: Default::default(),
        }
    }

    #[test]
    fn score() {
        let p = pod(json!({"containers": [{"name": "a", "image": "app:1"}, {"name": "b", "image": "sidecar"}]}));
        let mut st = CycleState::default();
        st.total_nodes = 4;
        st.image_nodes = Arc::new(
            [("app:1".to_owned(), 2), ("sidecar:latest".to_owned(), 4)]
                .into_iter()
                .collect(),
        );
        let big = node_with_images(
            json!([{"names": ["app:1"], "sizeBytes": 800 * MB}, {"names": ["sidecar:latest"], "sizeBytes": 50 * MB}]),
        );
        let small = node_with_images(json!([{"names": ["sidecar:latest"], "sizeBytes": 20 * MB}]));
        let none = node_with_images(json!([]));
        // 800MB * 2/4 + 50MB * 4/4 = 450MB; (450-23)/(2000-23) * 100 = 21
        assert_eq!(ImageLocality.score(&st, &p, &big).unwrap(), 21);
        assert_eq!(ImageLocality.score(&st, &p, &small).unwrap(), 0);
        assert_eq!(ImageLocality.score(&st, &p, &none).unwrap(), 0);
    }
}
