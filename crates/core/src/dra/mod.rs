//! Dynamic Resource Allocation with structured parameters, as kube-scheduler
//! v1.36 has it: devices published in ResourceSlices, asked for by
//! ResourceClaims, chosen by the allocator of
//! `k8s.io/dynamic-resource-allocation/structured`.
//!
//! - [`cel`]: the device selectors' CEL, with Kubernetes' DRA environment.
//! - [`allocator`]: the allocator (its stable path), over the cluster's
//!   slices and the devices already allocated.
//! - [`devices`]: the classes, slices and claims the scheduler keeps, with
//!   the allocations assumed for pods whose binding is in flight.

pub mod allocator;
pub mod cel;
pub mod devices;

pub use devices::{DRA_PLAN, Devices, DraPlan, PlannedClaim};

/// One device: its driver, pool and name, as allocation results name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    /// The driver (`spec.driver` of its slice).
    pub driver: String,
    /// The pool (`spec.pool.name` of its slice).
    pub pool: String,
    /// The device (`spec.devices[].name`).
    pub device: String,
}

impl DeviceId {
    /// Builds an id.
    pub fn new(driver: impl Into<String>, pool: impl Into<String>, device: impl Into<String>) -> Self {
        Self {
            driver: driver.into(),
            pool: pool.into(),
            device: device.into(),
        }
    }
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}
