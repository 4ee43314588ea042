//! `coscheduling`: gang scheduling (contract 0.7). The pods of a gang are
//! bound together or not at all: each member is held at Permit, keeping
//! its node's resources, until enough of the gang is placed, and then the
//! whole gang is released at once.
//!
//! A pod is a member of the gang NAME when it has the label
//! `example.com/gang: NAME`; the gang's size is its annotation
//! `example.com/gang-size` (a positive integer).
//!
//! - PreFilter: a member without a valid size is unschedulable for good.
//! - Permit: counts the gang's members placed in the cluster (bound or
//!   assumed, those waiting at Permit included, this pod not). When this
//!   pod completes the gang, every waiting member is allowed and the pod
//!   goes on; otherwise it waits, at most `timeoutSeconds`.
//! - Reserve does nothing; it is declared for Unreserve: when a member is
//!   rejected, times out or fails to bind, the other waiting members are
//!   rejected too, so that they give their nodes back.
//! - PostFilter: when a member fits nowhere, the waiting members are
//!   rejected, for the same reason.
//!
//! Args (optional): `{"timeoutSeconds": 60}` (an integer from 1 to 900).

use std::time::Duration;

use wasmsched_plugin::serde_json::Value;
use wasmsched_plugin::{
    NodeStatus, Nodes, Permit, Plugin, Pod, PodSelector, Points, PostFilterResult, Status, WaitingPod, success,
    unschedulable_and_unresolvable, waiting,
};

/// The label naming a pod's gang.
const GANG: &str = "example.com/gang";
/// The annotation giving the gang's size.
const GANG_SIZE: &str = "example.com/gang-size";

struct Coscheduling {
    timeout: Duration,
}

/// The gang's size as the annotation gives it: a decimal integer of at
/// least 1 (an optional sign, then digits).
fn gang_size(value: Option<&str>) -> Option<i64> {
    value?.parse::<i64>().ok().filter(|n| *n >= 1)
}

/// Whether `w` is a member of the gang `name` of `namespace`.
fn same_gang(w: &WaitingPod, namespace: &str, name: &str) -> bool {
    w.namespace == namespace && w.label(GANG) == Some(name)
}

impl Plugin for Coscheduling {
    const NAME: &'static str = "coscheduling";
    const VERSION: &'static str = "1.0.0";

    fn points() -> Points {
        Points::PRE_FILTER | Points::POST_FILTER | Points::RESERVE | Points::PERMIT
    }

    fn configure(args: &Value) -> Result<Self, String> {
        let args = match args {
            Value::Object(m) => m,
            // `null` is no args.
            Value::Null => {
                return Ok(Coscheduling {
                    timeout: Duration::from_secs(60),
                });
            }
            _ => return Err("args must be a JSON object".into()),
        };
        if let Some(key) = args.keys().find(|k| *k != "timeoutSeconds") {
            return Err(format!("unknown field {key}"));
        }
        let seconds = match args.get("timeoutSeconds") {
            None => 60,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=900).contains(n))
                .ok_or("timeoutSeconds must be an integer from 1 to 900")?,
        };
        Ok(Coscheduling {
            timeout: Duration::from_secs(seconds),
        })
    }

    /// A member whose gang has no valid size can never be placed.
    fn pre_filter(&self, pod: &Pod) -> Result<Status, String> {
        let Some(gang) = pod.label(GANG) else {
            return Ok(success());
        };
        if gang_size(pod.annotation(GANG_SIZE).as_deref()).is_none() {
            return Ok(unschedulable_and_unresolvable(format!(
                "gang {gang}: annotation {GANG_SIZE} must be a positive integer"
            )));
        }
        Ok(success())
    }

    /// Waits until the gang is complete; the member that completes it
    /// releases the others.
    fn permit(&self, pod: &Pod, nodes: &Nodes) -> Result<Permit, String> {
        let Some(gang) = pod.label(GANG) else {
            return Ok(Permit::Allow);
        };
        let Some(size) = gang_size(pod.annotation(GANG_SIZE).as_deref()) else {
            // PreFilter rejects such a pod first.
            return Ok(Permit::Reject(format!(
                "gang {gang}: annotation {GANG_SIZE} must be a positive integer"
            )));
        };
        // The gang's pods bound or assumed anywhere in the cluster (those
        // waiting at Permit included, this one not).
        let selector = PodSelector::labels([(GANG, gang.as_str())]);
        let placed = i64::from(nodes.cluster_pod_count(&selector)?);
        if placed + 1 < size {
            return Ok(Permit::Wait(self.timeout));
        }
        let namespace = pod.namespace();
        for w in waiting::pods().iter().filter(|w| same_gang(w, &namespace, &gang)) {
            waiting::allow(&w.uid);
        }
        Ok(Permit::Allow)
    }

    /// Holds nothing: declared so that Unreserve is called.
    fn reserve(&self, _: &Pod, _: &Nodes) -> Result<Status, String> {
        Ok(success())
    }

    /// This member will not be bound now: the others stop holding their
    /// nodes for a gang that cannot complete.
    fn unreserve(&self, pod: &Pod, _node: &str) {
        let Some(gang) = pod.label(GANG) else {
            return;
        };
        let (namespace, uid) = (pod.namespace(), pod.uid());
        let reason = format!("gang {gang}: member {namespace}/{} was rejected", pod.name());
        for w in waiting::pods()
            .iter()
            .filter(|w| same_gang(w, &namespace, &gang) && w.uid != uid)
        {
            waiting::reject(&w.uid, &reason);
        }
    }

    /// This member fits nowhere: the waiting members give their nodes back.
    fn post_filter(&self, pod: &Pod, _: &Nodes, _: &[NodeStatus]) -> Result<PostFilterResult, String> {
        let Some(gang) = pod.label(GANG) else {
            return Ok(PostFilterResult::unschedulable(""));
        };
        let namespace = pod.namespace();
        let reason = format!("gang {gang}: member {namespace}/{} does not fit", pod.name());
        let rejected = waiting::pods()
            .iter()
            .filter(|w| same_gang(w, &namespace, &gang))
            .filter(|w| waiting::reject(&w.uid, &reason))
            .count();
        Ok(PostFilterResult::unschedulable(format!(
            "gang {gang}: rejected {rejected} waiting member(s)"
        )))
    }
}

wasmsched_plugin::export!(Coscheduling);
