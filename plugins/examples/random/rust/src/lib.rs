//! `random`: uniform random placement among the feasible nodes, from the
//! host's seeded random numbers (so `simulate --seed` stays reproducible).
//! Each node scores `random % 101`.

use wasmsched_plugin::{Nodes, Plugin, Pod, Points, serde_json::Value};

struct Random;

impl Plugin for Random {
    const NAME: &'static str = "random";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    fn points() -> Points {
        Points::SCORE
    }

    fn configure(_: &Value) -> Result<Self, String> {
        Ok(Random)
    }

    fn score(&self, _: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        Ok(nodes.randoms().into_iter().map(|r| (r % 101) as i64).collect())
    }
}

wasmsched_plugin::export!(Random);
