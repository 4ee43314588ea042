//! The allocation results, built from a solution as Go builds them: the
//! devices, the configuration of their classes and of the claim, and where
//! the devices can be used.

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceAllocationConfiguration, DeviceAllocationResult, DeviceRequestAllocationResult,
};

use super::AllocError;
use super::search::{Ctx, Picked, Slot, State};

/// One result per claim.
pub(super) fn build(ctx: &Ctx<'_, '_, '_>, st: &State<'_, '_>) -> Result<Vec<AllocationResult>, AllocError> {
    let mut out = Vec::with_capacity(ctx.claims.len());
    for (ci, picked) in st.picked.iter().enumerate() {
        let claim = ctx.claims[ci];
        let results = picked
            .iter()
            .map(|p| {
                let entry = ctx.alloc.entry(p.slice);
                let tolerations = p.request.tolerations();
                DeviceRequestAllocationResult {
                    request: p.request_name(),
                    driver: entry.driver().to_owned(),
                    pool: entry.pool().to_owned(),
                    device: entry.devices[p.device as usize].name.clone(),
                    admin_access: p.admin_access.then_some(true),
                    tolerations: (!tolerations.is_empty()).then(|| tolerations.to_vec()),
                    ..Default::default()
                }
            })
            .collect();

        // Each class's configuration once, for all the requests using it.
        let mut config: Vec<DeviceAllocationConfiguration> = Vec::new();
        let mut class_configs: Vec<(&str, usize, usize)> = Vec::new();
        for (ri, slot) in ctx.reqs[ci].iter().enumerate() {
            let data = match slot {
                Slot::One(data) => data,
                Slot::Subs(subs) => &subs[st.selected[ci][ri]],
            };
            let class = &data.class;
            let class_name = class.metadata.name.as_deref().unwrap_or("");
            let name = data.request_name();
            if let Some(&(_, start, end)) = class_configs.iter().find(|c| c.0 == class_name) {
                for c in &mut config[start..end] {
                    c.requests.get_or_insert_with(Vec::new).push(name.clone());
                }
                continue;
            }
            let start = config.len();
            for c in class.spec.config.iter().flatten() {
                config.push(DeviceAllocationConfiguration {
                    source: "FromClass".to_owned(),
                    requests: Some(vec![name.clone()]),
                    opaque: c.opaque.clone(),
                });
            }
            class_configs.push((class_name, start, config.len()));
        }
        let devices = claim.spec.devices.as_ref();
        let claim_requests = devices.and_then(|d| d.requests.as_deref()).unwrap_or(&[]);
        for c in devices.and_then(|d| d.config.as_deref()).unwrap_or(&[]) {
            let from_claim = || DeviceAllocationConfiguration {
                source: "FromClaim".to_owned(),
                requests: c.requests.clone(),
                opaque: c.opaque.clone(),
            };
            let names = c.requests.as_deref().unwrap_or(&[]);
            if names.is_empty() {
                // For all requests.
                config.push(from_claim());
                continue;
            }
            // As in Go: once per request (or chosen subrequest) it names.
            for (ri, request) in claim_requests.iter().enumerate() {
                if names.contains(&request.name) {
                    config.push(from_claim());
                    continue;
                }
                if let Some(Slot::Subs(subs)) = ctx.reqs[ci].get(ri) {
                    let sub = subs[st.selected[ci][ri]].request_name();
                    if names.contains(&sub) {
                        config.push(from_claim());
                    }
                }
            }
        }

        let node_selector = node_selector(ctx, picked).map_err(|e| {
            AllocError::Invalid(format!(
                "create NodeSelector for claim {}: {e}",
                claim.metadata.name.as_deref().unwrap_or("")
            ))
        })?;
        out.push(AllocationResult {
            devices: Some(DeviceAllocationResult {
                results: Some(results),
                config: (!config.is_empty()).then_some(config),
            }),
            node_selector,
            allocation_timestamp: None,
        });
    }
    Ok(out)
}

/// Go's `createNodeSelector`: the node of a node-local device, else all
/// requirements of the devices' one-term selectors, else none (available
/// everywhere).
fn node_selector(ctx: &Ctx<'_, '_, '_>, picked: &[Picked<'_>]) -> Result<Option<NodeSelector>, String> {
    let mut fields = Vec::new();
    let mut expressions = Vec::new();
    for p in picked {
        let entry = ctx.alloc.entry(p.slice);
        let (node_name, selector) = if entry.per_device_node_selection() {
            let device = &entry.devices[p.device as usize];
            (device.node_name.as_ref(), device.node_selector.as_ref())
        } else {
            let spec = &entry.slice.spec;
            (spec.node_name.as_ref(), spec.node_selector.as_ref())
        };
        if let Some(node_name) = node_name {
            // Local to one node: only there.
            return Ok(Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: Some(vec![NodeSelectorRequirement {
                        key: "metadata.name".to_owned(),
                        operator: "In".to_owned(),
                        values: Some(vec![node_name.clone()]),
                    }]),
                    match_expressions: None,
                }],
            }));
        }
        if let Some(selector) = selector {
            match selector.node_selector_terms.as_slice() {
                [] => {}
                [term] => {
                    add_new(term.match_fields.as_deref(), &mut fields);
                    add_new(term.match_expressions.as_deref(), &mut expressions);
                }
                terms => {
                    // Validation does not let such slices in.
                    return Err(format!(
                        "unsupported ResourceSlice.NodeSelector with {} terms",
                        terms.len()
                    ));
                }
            }
        }
    }
    if fields.is_empty() && expressions.is_empty() {
        return Ok(None);
    }
    Ok(Some(NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: (!expressions.is_empty()).then_some(expressions),
            match_fields: (!fields.is_empty()).then_some(fields),
        }],
    }))
}

/// Appends the requirements not there yet (same key, operator and set of
/// values).
fn add_new(from: Option<&[NodeSelectorRequirement]>, to: &mut Vec<NodeSelectorRequirement>) {
    for r in from.unwrap_or(&[]) {
        let values = r.values.as_deref().unwrap_or(&[]);
        let present = to.iter().any(|e| {
            let existing = e.values.as_deref().unwrap_or(&[]);
            e.key == r.key
                && e.operator == r.operator
                && existing.iter().all(|v| values.contains(v))
                && values.iter().all(|v| existing.contains(v))
        });
        if !present {
            to.push(r.clone());
        }
    }
}
