//! What a claim asks of its devices besides selectors: `matchAttribute`
//! constraints, and tolerations of device taints.

use k8s_openapi::api::resource::v1::{Device, DeviceAttribute, DeviceTaint, DeviceToleration};

/// A `matchAttribute` constraint (Go's `matchAttributeConstraint`): all
/// devices of the requests it names (all requests when it names none) have
/// the attribute, with one value. Only the first device's value and the
/// number of devices are kept: constraints are monotonic.
pub(super) struct MatchAttribute<'a, 'c> {
    requests: &'c [String],
    attribute_name: &'c str,
    attribute: Option<&'a DeviceAttribute>,
    devices: usize,
}

impl<'a, 'c> MatchAttribute<'a, 'c> {
    pub fn new(requests: &'c [String], attribute_name: &'c str) -> Self {
        MatchAttribute {
            requests,
            attribute_name,
            attribute: None,
            devices: 0,
        }
    }

    /// Whether the constraint concerns a device for `request` (its
    /// subrequest `sub`): named by the request or by `request/sub`.
    fn applies(&self, request: &str, sub: Option<&str>) -> bool {
        self.requests.is_empty()
            || self.requests.iter().any(|n| {
                n == request
                    || sub.is_some_and(|sub| {
                        n.len() == request.len() + 1 + sub.len()
                            && n.starts_with(request)
                            && n.ends_with(sub)
                            && n.as_bytes()[request.len()] == b'/'
                    })
            })
    }

    /// Adds a device about to be allocated; false when it breaks the
    /// constraint (then nothing changed).
    pub fn add(&mut self, request: &str, sub: Option<&str>, device: &'a Device, driver: &str) -> bool {
        if !self.applies(request, sub) {
            return true;
        }
        let Some(attribute) = lookup_attribute(device, driver, self.attribute_name) else {
            return false;
        };
        let Some(first) = self.attribute.filter(|_| self.devices > 0) else {
            // The first device can always be picked.
            self.attribute = Some(attribute);
            self.devices = 1;
            return true;
        };
        let same = if let Some(v) = &attribute.string {
            first.string.as_ref() == Some(v)
        } else if let Some(v) = attribute.int {
            first.int == Some(v)
        } else if let Some(v) = attribute.bool {
            first.bool == Some(v)
        } else if let Some(v) = &attribute.version {
            // Semantic versions are in their minimal form: equal as strings.
            first.version.as_ref() == Some(v)
        } else {
            // An unknown type of value matches nothing.
            false
        };
        if same {
            self.devices += 1;
        }
        same
    }

    /// Undoes one successful [`Self::add`] with the same request.
    pub fn remove(&mut self, request: &str, sub: Option<&str>) {
        if self.applies(request, sub) {
            self.devices = self.devices.saturating_sub(1);
        }
    }
}

/// Go's `lookupAttribute`: the attribute by its fully qualified name, or by
/// its bare name when the domain is the device's driver.
fn lookup_attribute<'a>(device: &'a Device, driver: &str, name: &str) -> Option<&'a DeviceAttribute> {
    let attributes = device.attributes.as_ref()?;
    if let Some(a) = attributes.get(name) {
        return Some(a);
    }
    let (domain, id) = name.split_once('/')?;
    if domain != driver {
        return None;
    }
    attributes.get(id)
}

/// Whether a taint that keeps devices from being allocated (NoSchedule,
/// NoExecute) is not tolerated.
pub(super) fn taint_prevents_allocation(device: &Device, tolerations: &[DeviceToleration]) -> bool {
    device.taints.iter().flatten().any(|taint| {
        matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute") && !tolerations.iter().any(|t| tolerates(t, taint))
    })
}

/// `resourceclaim.ToleratesTaint`.
fn tolerates(toleration: &DeviceToleration, taint: &DeviceTaint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        // Empty means Equal (the API server's default).
        "" | "Equal" => toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        "Exists" => true,
        _ => false,
    }
}
