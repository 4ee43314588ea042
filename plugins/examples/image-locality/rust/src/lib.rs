//! `image-locality`: prefer nodes that already hold the pod's images (the
//! classic scheduler extender's policy). A node scores one point per 10 MB
//! of the pod's images it holds, up to 100.

wit_bindgen::generate!({ world: "scheduler-plugin", path: "../../../../wit" });

use exports::wasmsched::plugin::plugin::{Guest, PluginMetadata, Points, Rejection, Status};
use wasmsched::plugin::cluster::{Nodes, Pod};

struct ImageLocality;

impl Guest for ImageLocality {
    fn metadata() -> PluginMetadata {
        PluginMetadata {
            name: "image-locality".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            points: Points::SCORE,
        }
    }

    fn configure(_: String) -> Result<(), String> {
        Ok(())
    }

    fn pre_filter(_: &Pod) -> Result<Status, String> {
        Err("not implemented".into())
    }

    fn filter(_: &Pod, _: &Nodes) -> Result<Vec<Rejection>, String> {
        Err("not implemented".into())
    }

    fn pre_score(_: &Pod, _: &Nodes) -> Result<Status, String> {
        Err("not implemented".into())
    }

    fn score(pod: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        let bytes = nodes.image_bytes(&pod.images());
        Ok(bytes.into_iter().map(|total| (total / 10_000_000).min(100)).collect())
    }

    fn normalize_score(_: &Pod, _: Vec<i64>) -> Result<Vec<i64>, String> {
        Err("not implemented".into())
    }
}

export!(ImageLocality);
