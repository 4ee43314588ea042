//! `image-locality`: prefer nodes that already hold the pod's images (the
//! classic scheduler extender's policy). A node scores one point per 10 MB
//! of the pod's images it holds, up to 100.

use wasmsched_plugin::{Nodes, Plugin, Pod, Points, serde_json::Value};

struct ImageLocality;

impl Plugin for ImageLocality {
    const NAME: &'static str = "image-locality";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    fn points() -> Points {
        Points::SCORE
    }

    fn configure(_: &Value) -> Result<Self, String> {
        Ok(ImageLocality)
    }

    fn score(&self, pod: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        let bytes = nodes.image_bytes(&pod.images());
        Ok(bytes.into_iter().map(|total| (total / 10_000_000).min(100)).collect())
    }
}

wasmsched_plugin::export!(ImageLocality);
