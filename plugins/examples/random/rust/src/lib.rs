//! `random`: uniform random placement among the feasible nodes, from the
//! host's seeded random numbers (so `simulate --seed` stays reproducible).
//! Each node scores `random % 101`.

wit_bindgen::generate!({ world: "scheduler-plugin", path: "../../../../wit" });

use exports::wasmsched::plugin::plugin::{Guest, PluginMetadata, Points, Rejection, Status};
use wasmsched::plugin::cluster::{Nodes, Pod};

struct Random;

impl Guest for Random {
    fn metadata() -> PluginMetadata {
        PluginMetadata {
            name: "random".into(),
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

    fn score(_: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        Ok(nodes.randoms().into_iter().map(|r| (r % 101) as i64).collect())
    }

    fn normalize_score(_: &Pod, _: Vec<i64>) -> Result<Vec<i64>, String> {
        Err("not implemented".into())
    }
}

export!(Random);
