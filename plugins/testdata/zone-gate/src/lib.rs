//! `zone-gate`, a test plugin in two versions built from this one source:
//! built plainly it is version 1.0.0 and accepts every node; built with
//! `ZONE_GATE_REJECT=ZONE` in the environment it is version 2.0.0 and
//! rejects the nodes of that zone (`topology.kubernetes.io/zone`). The pair
//! is what `wasmsched plugin diff` and shadow mode compare. Built with
//! `ZONE_GATE_HOSTILE=1` it is version 3.0.0-hostile, whose filter traps,
//! loops until stopped, or floods the log, by the pod's name: a shadow that
//! must be contained.

use wasmsched_plugin::{Nodes, Plugin, Pod, Points, Rejection, reject, serde_json::Value};

const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
const REJECT: Option<&str> = option_env!("ZONE_GATE_REJECT");
const HOSTILE: bool = option_env!("ZONE_GATE_HOSTILE").is_some();

struct ZoneGate;

impl Plugin for ZoneGate {
    const NAME: &'static str = "zone-gate";
    const VERSION: &'static str = if HOSTILE {
        "3.0.0-hostile"
    } else if REJECT.is_some() {
        "2.0.0"
    } else {
        "1.0.0"
    };
    fn points() -> Points {
        Points::FILTER
    }

    fn configure(_args: &Value) -> Result<Self, String> {
        Ok(ZoneGate)
    }

    fn filter(&self, pod: &Pod, nodes: &Nodes) -> Result<Vec<Rejection>, String> {
        if HOSTILE {
            // By the name, not a count: a trap starts a fresh instance.
            let name = pod.name();
            match name.bytes().map(u32::from).sum::<u32>() % 3 {
                0 => panic!("zone-gate 3.0.0-hostile traps on purpose"),
                1 => loop {
                    std::hint::black_box(&name);
                },
                _ => {
                    for i in 0..10_000 {
                        wasmsched_plugin::log::info(&format!("zone-gate floods the log: line {i}"));
                    }
                }
            }
        }
        let Some(zone) = REJECT else { return Ok(Vec::new()) };
        Ok(nodes
            .label_values(ZONE_LABEL)
            .iter()
            .enumerate()
            .filter(|(_, v)| v.as_deref() == Some(zone))
            .map(|(i, _)| reject(i as u32, format!("node(s) were in zone {zone}")))
            .collect())
    }
}

wasmsched_plugin::export!(ZoneGate);
