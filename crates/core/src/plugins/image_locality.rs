//! ImageLocality: prefer nodes that already hold the pod's images (its
//! containers' and its image volumes'), weighted by image size and by how
//! many nodes hold them (images everywhere count for little, to avoid
//! piling pods onto a few nodes).

use crate::framework::{CycleState, MAX_NODE_SCORE, Plugin, Points, Status};
use crate::node::{ImageHolders, NodeInfo, NodeRow};
use crate::pod::PodInfo;
use rustc_hash::FxHashMap;
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
        Ok(score_of(&spreads(state, pod), pod.containers, node))
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let spreads = spreads(state, pod);
        if by_bits(&spreads, pod.containers, rows, out) {
            return Ok(());
        }
        // Most nodes that hold the pod's images report the same sizes:
        // their sum repeats, and its score is computed once per run.
        let mut last = (None, 0);
        for ((o, n), r) in out.iter_mut().zip(nodes).zip(rows) {
            let sum = sum_of(&spreads, r.id, || &n.node.images);
            *o = match last {
                (Some(s), score) if s == sum => score,
                _ => {
                    let score = scale(sum, pod.containers);
                    last = (Some(sum), score);
                    score
                }
            };
        }
        Ok(())
    }
}

/// Each of the pod's images some node holds: its table of sizes by node,
/// and the fraction of nodes that hold it.
type Spread<'s> = (&'s str, &'s ImageHolders, f64);

/// The pod's images that some node holds, with the share of nodes holding
/// each (computed once per batch, not per node). Image volumes add to the
/// sum, not to the container count the thresholds scale with, as in
/// kube-scheduler.
fn spreads<'s>(state: &'s CycleState, pod: &'s PodInfo) -> Vec<Spread<'s>> {
    let total = state.total_nodes.max(1) as f64;
    pod.images
        .iter()
        .chain(&pod.volume_images)
        .filter_map(|img| {
            state
                .image_nodes
                .get(img)
                .map(|on| (img.as_str(), &**on, on.len() as f64 / total))
        })
        .collect()
}

/// The sum of the sizes of the spread images a node holds, each scaled by
/// its spread: a node of the cache is found by its id in each image's
/// holders (for an image many nodes hold, a bit per node: read for every
/// node, so in the processor's cache); one made elsewhere (id 0) by its
/// own images, which `images` gives.
///
/// The node itself is read only when it has no id: taken as a reference,
/// the compiler read it for every node ahead of the test (a reference is
/// known to be readable), a cache miss per node at thousands of nodes.
#[inline]
fn sum_of<'n>(spreads: &[Spread], id: u32, images: impl FnOnce() -> &'n FxHashMap<String, i64>) -> i64 {
    if id != 0 {
        spreads
            .iter()
            .filter_map(|(_, on, sp)| on.get(id).map(|size| scaled(size, *sp)))
            .sum()
    } else {
        let images = images();
        spreads
            .iter()
            .filter_map(|(img, _, sp)| images.get(*img).map(|&size| scaled(size, *sp)))
            .sum()
    }
}

/// An image's size weighted by the share of nodes holding it.
#[inline]
fn scaled(size: i64, spread: f64) -> i64 {
    (size as f64 * spread) as i64
}

/// Scores the nodes of `rows` when every spread image is a bit per node
/// with one size, and there are at most four: a node's score is then one
/// of 16 at most, by which of the images it holds, computed once per cycle
/// and looked up per node with no branch on the bits. False (nothing
/// written) otherwise, or for a node made outside the cache (id 0).
fn by_bits(spreads: &[Spread], containers: usize, rows: &[&NodeRow], out: &mut [i64]) -> bool {
    const MAX: usize = 4;
    if spreads.len() > MAX || rows.iter().any(|r| r.id == 0) {
        return false;
    }
    let mut bits: [&[u64]; MAX] = [&[]; MAX];
    let mut scaled = [0i64; MAX];
    for (k, (_, on, sp)) in spreads.iter().enumerate() {
        let Some((b, size)) = on.uniform() else {
            return false;
        };
        bits[k] = b;
        scaled[k] = self::scaled(size, *sp);
    }
    let k = spreads.len();
    let mut table = [0i64; 1 << MAX];
    for (mask, t) in table.iter_mut().enumerate().take(1 << k) {
        let sum = (0..k).filter(|b| mask & (1 << b) != 0).map(|b| scaled[b]).sum();
        *t = scale(sum, containers);
    }
    for (o, r) in out.iter_mut().zip(rows) {
        let mut mask = 0;
        for (b, bits) in bits[..k].iter().enumerate() {
            mask |= (ImageHolders::bit(bits, r.id) as usize) << b;
        }
        *o = table[mask];
    }
    true
}

/// The score of a node whose spread images sum to `sum` (0 below the
/// threshold, as when the pod has no image some node holds).
#[inline]
fn scale(sum: i64, containers: usize) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD * containers as i64;
    if max <= MIN_THRESHOLD {
        return 0;
    }
    MAX_NODE_SCORE * (sum.clamp(MIN_THRESHOLD, max) - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

/// The score of `node`.
fn score_of(spreads: &[Spread], containers: usize, node: &NodeInfo) -> i64 {
    scale(sum_of(spreads, node.node.id, || &node.node.images), containers)
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
        // Held by 2 and 4 of the cluster's nodes (these test nodes, id 0,
        // are read by their own images).
        let on = |n: u32| Arc::new((1..=n).map(|id| (id, MB)).collect());
        st.image_nodes = Arc::new(
            [("app:1".to_owned(), on(2)), ("sidecar:latest".to_owned(), on(4))]
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

    /// kube-scheduler v1.36's `TestImageLocalityPriority` cases, through the
    /// cache (which counts the nodes holding each image name).
    #[test]
    fn kube_scheduler_cases() {
        let img = |names: &[&str], mb: i64| json!({"names": names, "sizeBytes": mb * MB});
        let n = |name: &str, images: Vec<serde_json::Value>| -> Node {
            serde_json::from_value(json!({"metadata": {"name": name}, "status": {"images": images}})).unwrap()
        };
        let n403002000 = || {
            n(
                "403002000",
                vec![
                    img(&["gcr.io/40:latest", "gcr.io/40:v1"], 40),
                    img(&["gcr.io/300:latest", "gcr.io/300:v1"], 300),
                    img(&["gcr.io/2000:latest"], 2000),
                ],
            )
        };
        let n25010 = || {
            n(
                "25010",
                vec![
                    img(&["gcr.io/250:latest"], 250),
                    img(&["gcr.io/10:latest", "gcr.io/10:v1"], 10),
                ],
            )
        };
        let n60040900 = || {
            n(
                "60040900",
                vec![
                    img(&["gcr.io/600:latest"], 600),
                    img(&["gcr.io/40:latest"], 40),
                    img(&["gcr.io/900:latest"], 900),
                ],
            )
        };
        let n300600900 = || {
            n(
                "300600900",
                vec![
                    img(&["gcr.io/300:latest"], 300),
                    img(&["gcr.io/600:latest"], 600),
                    img(&["gcr.io/900:latest"], 900),
                ],
            )
        };
        let n400030 = || {
            n(
                "400030",
                vec![img(&["gcr.io/4000:latest"], 4000), img(&["gcr.io/30:latest"], 30)],
            )
        };
        let n203040 = || {
            n(
                "203040",
                vec![
                    img(&["gcr.io/20:latest"], 20),
                    img(&["gcr.io/30:latest"], 30),
                    img(&["gcr.io/40:latest"], 40),
                ],
            )
        };
        let bare = || n("none", vec![]);
        let containers = |images: &[&str]| json!({"containers": images.iter().map(|i| json!({"name": "c", "image": i})).collect::<Vec<_>>()});
        let cases: Vec<(&str, serde_json::Value, Vec<Node>, Vec<i64>)> = vec![
            (
                "two images spread on two nodes, prefer the larger image one",
                containers(&["gcr.io/40", "gcr.io/250"]),
                vec![n403002000(), n25010()],
                vec![0, 5],
            ),
            (
                "two images on one node, prefer this node",
                containers(&["gcr.io/40", "gcr.io/300"]),
                vec![n403002000(), n25010()],
                vec![7, 0],
            ),
            (
                "if exceed limit, use limit",
                containers(&["gcr.io/10", "gcr.io/4000"]),
                vec![n400030(), n25010()],
                vec![100, 0],
            ),
            (
                "if exceed limit, use limit (with node which has no images present)",
                containers(&["gcr.io/10", "gcr.io/4000"]),
                vec![n400030(), n25010(), bare()],
                vec![66, 0, 0],
            ),
            (
                "pod with multiple large images, node2 is preferred",
                containers(&["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
                vec![n60040900(), n300600900(), bare()],
                vec![32, 36, 0],
            ),
            (
                "pod with multiple small images",
                containers(&["gcr.io/30", "gcr.io/40"]),
                vec![n203040(), n400030()],
                vec![1, 0],
            ),
            (
                "pod with an image volume",
                json!({"containers": [{"name": "c", "image": "gcr.io/30"}],
                       "volumes": [{"name": "v", "image": {"reference": "gcr.io/300"}}]}),
                vec![n300600900(), n400030()],
                vec![12, 0],
            ),
            (
                "init containers count",
                json!({"initContainers": [{"name": "i", "image": "gcr.io/300"}],
                       "containers": [{"name": "c", "image": "gcr.io/30"}]}),
                vec![n403002000(), n203040()],
                vec![6, 0],
            ),
        ];
        for (name, spec, nodes, want) in cases {
            let mut cache = crate::cache::Cache::new();
            for node in &nodes {
                cache.upsert_node(NodeData::from_node(node).unwrap());
            }
            let snap = cache.snapshot();
            let mut st = CycleState::default();
            st.total_nodes = snap.nodes.len();
            st.image_nodes = snap.image_nodes.clone();
            let p = pod(spec);
            let got: Vec<i64> = nodes
                .iter()
                .map(|node| {
                    let i = snap.position(node.metadata.name.as_deref().unwrap()).unwrap();
                    ImageLocality.score(&st, &p, &snap.nodes[i]).unwrap()
                })
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    /// A cluster large enough that images are kept as bits: the batch path
    /// (by the images a node holds, or node by node when one image's sizes
    /// differ) scores every node as the node-by-node score does.
    #[test]
    fn batch_scores_match_node_scores_on_a_large_cluster() {
        let mut cache = crate::cache::Cache::new();
        for i in 0..300u32 {
            let mut images = Vec::new();
            if i % 2 == 0 {
                images.push(json!({"names": ["a:1"], "sizeBytes": 600 * MB}));
            }
            if i % 3 == 0 {
                images.push(json!({"names": ["b:1"], "sizeBytes": 300 * MB}));
            }
            if i % 5 == 0 {
                // Sizes that differ from node to node: not one size.
                images.push(json!({"names": ["c:1"], "sizeBytes": (200 + i as i64) * MB}));
            }
            let n: Node =
                serde_json::from_value(json!({"metadata": {"name": format!("n{i}")}, "status": {"images": images}}))
                    .unwrap();
            cache.upsert_node(NodeData::from_node(&n).unwrap());
        }
        let snap = cache.snapshot();
        let mut st = CycleState::default();
        st.total_nodes = snap.nodes.len();
        st.image_nodes = snap.image_nodes.clone();
        let (nodes, rows) = snap.at(0..snap.nodes.len());
        for images in [
            vec![],
            vec!["a:1"],
            vec!["a:1", "b:1"],
            vec!["b:1", "a:1", "x:9"],
            vec!["a:1", "c:1"],
        ] {
            let p =
                pod(json!({"containers": images.iter().map(|i| json!({"name": "c", "image": i})).collect::<Vec<_>>()}));
            let mut got = vec![-1; nodes.len()];
            ImageLocality.score_nodes(&st, &p, &nodes, &rows, &mut got).unwrap();
            let want: Vec<i64> = nodes.iter().map(|n| ImageLocality.score(&st, &p, n).unwrap()).collect();
            assert_eq!(got, want, "{images:?}");
            assert!(images.is_empty() || want.iter().any(|&s| s > 0), "{images:?}");
        }
    }
}
