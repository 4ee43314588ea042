//! The search (allocator_stable.go's `Allocate`, `validateDeviceRequest`,
//! `allocateOne`, `allocateDevice`, `isSelectable`): check the claims, then
//! try devices depth first, backtracking.

use std::cell::OnceCell;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use k8s_openapi::api::resource::v1::{
    AllocationResult, Device, DeviceClass, DeviceRequest, DeviceSelector, DeviceSubRequest, DeviceToleration,
    ExactDeviceRequest, ResourceClaim,
};
use rustc_hash::FxHashMap;

use super::constraints::{MatchAttribute, taint_prevents_allocation};
use super::pools::{Pool, counter_value, node_matches};
use super::{ALLOCATION_RESULTS_MAX_SIZE, AllocError, Allocator, kobj, results};
use crate::dra::cel::{CelError, Selector};
use crate::node::NodeData;

/// A compiled selector, as the CEL cache holds it.
type Program = Arc<Result<Selector, CelError>>;

/// A list of selectors, compiled; none for a selector without CEL.
type Programs = Vec<Option<Program>>;

/// A request or a subrequest (Go's `requestAccessor`).
#[derive(Clone, Copy)]
pub(super) enum Req<'c> {
    Exact(&'c str, &'c ExactDeviceRequest),
    Sub(&'c DeviceSubRequest),
}

impl<'c> Req<'c> {
    pub fn name(self) -> &'c str {
        match self {
            Req::Exact(name, _) => name,
            Req::Sub(s) => &s.name,
        }
    }

    fn class_name(self) -> &'c str {
        match self {
            Req::Exact(_, r) => &r.device_class_name,
            Req::Sub(s) => &s.device_class_name,
        }
    }

    /// `allocationMode`, `ExactCount` when absent (the API default).
    fn mode(self) -> &'c str {
        let mode = match self {
            Req::Exact(_, r) => r.allocation_mode.as_deref(),
            Req::Sub(s) => s.allocation_mode.as_deref(),
        };
        mode.unwrap_or("ExactCount")
    }

    /// `count`, 1 when absent (the API default).
    fn count(self) -> i64 {
        match self {
            Req::Exact(_, r) => r.count,
            Req::Sub(s) => s.count,
        }
        .unwrap_or(1)
    }

    fn admin_access(self) -> bool {
        matches!(self, Req::Exact(_, r) if r.admin_access == Some(true))
    }

    fn has_admin_access(self) -> bool {
        matches!(self, Req::Exact(_, r) if r.admin_access.is_some())
    }

    fn selectors(self) -> &'c [DeviceSelector] {
        match self {
            Req::Exact(_, r) => r.selectors.as_deref(),
            Req::Sub(s) => s.selectors.as_deref(),
        }
        .unwrap_or(&[])
    }

    pub fn tolerations(self) -> &'c [DeviceToleration] {
        match self {
            Req::Exact(_, r) => r.tolerations.as_deref(),
            Req::Sub(s) => s.tolerations.as_deref(),
        }
        .unwrap_or(&[])
    }
}

/// A device of a pool: indexes of the pool (in this call), the slice and
/// the device.
#[derive(Clone, Copy)]
pub(super) struct Candidate {
    pool: u32,
    slice: u32,
    device: u32,
}

/// What is known of a request or subrequest before the search (Go's
/// `requestData`).
pub(super) struct RequestData<'c> {
    pub request: Req<'c>,
    /// The request, when this is one of its subrequests.
    pub parent: Option<&'c str>,
    pub class: Arc<DeviceClass>,
    num_devices: usize,
    /// For `allocationMode: All`: the devices, known in advance.
    all_devices: Vec<Candidate>,
    /// The class's and the request's selectors, taken from the CEL cache
    /// on first use (then once per call, not once per device).
    programs: OnceCell<(Programs, Programs)>,
}

impl RequestData<'_> {
    /// `request` or `request/subrequest`, as results name it.
    pub fn request_name(&self) -> String {
        match self.parent {
            Some(parent) => format!("{parent}/{}", self.request.name()),
            None => self.request.name().to_owned(),
        }
    }
}

/// A claim's request: one, or its subrequests.
pub(super) enum Slot<'c> {
    One(RequestData<'c>),
    Subs(Vec<RequestData<'c>>),
}

/// A device picked for a request.
pub(super) struct Picked<'c> {
    pub request: Req<'c>,
    pub parent: Option<&'c str>,
    pub slice: u32,
    pub device: u32,
    pub admin_access: bool,
}

impl Picked<'_> {
    pub fn request_name(&self) -> String {
        match self.parent {
            Some(parent) => format!("{parent}/{}", self.request.name()),
            None => self.request.name().to_owned(),
        }
    }
}

/// What does not change during the search.
pub(super) struct Ctx<'s, 'a, 'c> {
    pub alloc: &'s Allocator<'a>,
    node: &'s NodeData,
    pub claims: &'s [&'c ResourceClaim],
    pools: Vec<Pool<'a>>,
    /// Per claim, per request.
    pub reqs: Vec<Vec<Slot<'c>>>,
    expired: &'s dyn Fn() -> bool,
}

impl<'c> Ctx<'_, '_, 'c> {
    fn data(&self, claim: usize, request: usize, sub: usize) -> &RequestData<'c> {
        match &self.reqs[claim][request] {
            Slot::One(d) => d,
            Slot::Subs(subs) => &subs[sub],
        }
    }
}

/// (slice, device, claim, request, subrequest).
type MatchKey = (u32, u32, u32, u32, u32);

/// What the search changes (and undoes).
pub(super) struct State<'a, 'c> {
    /// Whether a device matches a request: independent of what else is
    /// allocated, so checked once per call.
    matches: FxHashMap<MatchKey, bool>,
    constraints: Vec<Vec<MatchAttribute<'a, 'c>>>,
    /// Counters consumed by the devices picked so far, by (pool, counter
    /// set, counter).
    consumed: FxHashMap<(u32, &'a str, &'a str), i128>,
    /// The claims each device is being allocated for.
    allocating: FxHashMap<(u32, u32), Vec<u32>>,
    /// Per claim, the devices picked so far.
    pub picked: Vec<Vec<Picked<'c>>>,
    /// Per claim and request with subrequests, the subrequest that was used.
    pub selected: Vec<Vec<usize>>,
    /// Why the first device that matched but uses an unsupported field was
    /// not allocated.
    refused: Option<String>,
}

impl State<'_, '_> {
    fn allocating_for_claim(&self, dev: (u32, u32), claim: usize) -> bool {
        self.allocating.get(&dev).is_some_and(|c| c.contains(&(claim as u32)))
    }

    fn in_use(&self, alloc: &Allocator<'_>, dev: (u32, u32)) -> bool {
        alloc.is_allocated(dev.0, dev.1) || self.allocating.get(&dev).is_some_and(|c| !c.is_empty())
    }
}

/// Where the search is: which device of which (sub)request of which claim.
#[derive(Clone, Copy, Default)]
struct At {
    claim: usize,
    request: usize,
    sub: usize,
    device: usize,
}

/// Why a search step stopped without a solution.
enum Stop {
    /// Go's `errAllocationResultMaxSizeExceeded`: a claim would get more
    /// than [`ALLOCATION_RESULTS_MAX_SIZE`] devices; callers backtrack
    /// further.
    MaxSize,
    Fail(AllocError),
}

impl From<AllocError> for Stop {
    fn from(e: AllocError) -> Self {
        Stop::Fail(e)
    }
}

fn invalid(message: String) -> AllocError {
    AllocError::Invalid(message)
}

fn requests(claim: &ResourceClaim) -> &[DeviceRequest] {
    claim
        .spec
        .devices
        .as_ref()
        .and_then(|d| d.requests.as_deref())
        .unwrap_or(&[])
}

/// [`Allocator::allocate`].
pub(super) fn allocate<'a, 'c>(
    alloc: &Allocator<'a>,
    node: &NodeData,
    claims: &[&'c ResourceClaim],
    expired: &dyn Fn() -> bool,
) -> Result<Option<Vec<AllocationResult>>, AllocError> {
    let pools = alloc
        .gather_pools(node)
        .map_err(|e| invalid(format!("gather pool information: {e}")))?;
    let mut ctx = Ctx {
        alloc,
        node,
        claims,
        pools,
        reqs: Vec::with_capacity(claims.len()),
        expired,
    };
    let mut st = State {
        matches: FxHashMap::default(),
        constraints: Vec::with_capacity(claims.len()),
        consumed: FxHashMap::default(),
        allocating: FxHashMap::default(),
        picked: Vec::with_capacity(claims.len()),
        selected: Vec::with_capacity(claims.len()),
        refused: None,
    };
    let features = alloc.features;

    // Check what the claims ask for, and how many devices at least.
    for (ci, &claim) in claims.iter().enumerate() {
        let mut min_devices = 0usize;
        let mut slots = Vec::new();
        for (ri, request) in requests(claim).iter().enumerate() {
            let subs = request.first_available.as_deref().unwrap_or(&[]);
            if !features.prioritized_list && !subs.is_empty() {
                return Err(invalid(format!(
                    "claim {}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
                    kobj(claim),
                    request.name
                )));
            }
            if request.exactly.as_ref().is_some_and(|e| e.capacity.is_some()) {
                return Err(invalid(format!(
                    "claim {}, request {}: capacity requests (spec.devices.requests[{ri}].exactly.capacity) are not supported by wasmsched",
                    kobj(claim),
                    request.name
                )));
            }
            if let Some((si, sub)) = subs.iter().enumerate().find(|(_, s)| s.capacity.is_some()) {
                return Err(invalid(format!(
                    "claim {}, request {}/{}: capacity requests (spec.devices.requests[{ri}].firstAvailable[{si}].capacity) are not supported by wasmsched",
                    kobj(claim),
                    request.name,
                    sub.name
                )));
            }
            if !subs.is_empty() {
                // Only a lower bound: it depends on the subrequest chosen.
                let mut min_request = usize::MAX;
                let mut datas = Vec::with_capacity(subs.len());
                for (si, sub) in subs.iter().enumerate() {
                    let data = validate_request(&ctx, &mut st, (ci, ri, si), Req::Sub(sub), Some(&request.name))?;
                    min_request = min_request.min(data.num_devices);
                    datas.push(data);
                }
                min_devices = min_devices.saturating_add(min_request);
                slots.push(Slot::Subs(datas));
            } else {
                let Some(exactly) = &request.exactly else {
                    return Err(invalid(format!(
                        "claim {}, request {}: neither exactly nor firstAvailable is set (unsupported request type?)",
                        kobj(claim),
                        request.name
                    )));
                };
                let data = validate_request(&ctx, &mut st, (ci, ri, 0), Req::Exact(&request.name, exactly), None)?;
                min_devices = min_devices.saturating_add(data.num_devices);
                slots.push(Slot::One(data));
            }
        }
        // Only a lower bound, so the search checks again.
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
            return Err(invalid(format!(
                "claim {}: number of requested devices {min_devices} exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}",
                kobj(claim)
            )));
        }
        st.picked.push(Vec::with_capacity(min_devices));
        st.selected.push(vec![0; slots.len()]);
        ctx.reqs.push(slots);

        // Constraints are monotonic: once one fails, more devices do not
        // satisfy it again, so the search can stop early.
        let mut constraints = Vec::new();
        let claim_constraints = claim.spec.devices.as_ref().and_then(|d| d.constraints.as_deref());
        for (i, c) in claim_constraints.unwrap_or(&[]).iter().enumerate() {
            if c.distinct_attribute.is_some() {
                return Err(invalid(format!(
                    "claim {}, constraint #{i}: distinctAttribute constraints (spec.devices.constraints[{i}].distinctAttribute) are not supported by wasmsched",
                    kobj(claim)
                )));
            }
            let Some(attribute) = &c.match_attribute else {
                return Err(invalid(format!(
                    "claim {}, constraint #{i}: empty constraint (unsupported constraint type?)",
                    kobj(claim)
                )));
            };
            constraints.push(MatchAttribute::new(c.requests.as_deref().unwrap_or(&[]), attribute));
        }
        st.constraints.push(constraints);
    }

    let done = match allocate_one(&ctx, &mut st, At::default(), false) {
        Ok(done) => done,
        // Only the first claim can get here with this: no combination of
        // its subrequests fits. Go returns it as an error.
        Err(Stop::MaxSize) => return Err(invalid("allocation max size exceeded".to_owned())),
        Err(Stop::Fail(e)) => return Err(e),
    };
    if !done {
        // Only now: devices from valid pools might have done.
        if ctx.pools.iter().any(|p| p.invalid) {
            return Err(AllocError::FailedOnNode(
                "invalid resource pools were encountered".to_owned(),
            ));
        }
        if let Some(reason) = st.refused.take() {
            return Err(AllocError::FailedOnNode(reason));
        }
        return Ok(None);
    }
    results::build(&ctx, &st).map(Some)
}

/// Go's `validateDeviceRequest`: the request's class, the number of devices
/// and, for `All`, which ones.
fn validate_request<'c>(
    ctx: &Ctx<'_, '_, 'c>,
    st: &mut State<'_, 'c>,
    key: (usize, usize, usize),
    request: Req<'c>,
    parent: Option<&'c str>,
) -> Result<RequestData<'c>, AllocError> {
    let claim = ctx.claims[key.0];
    for (i, selector) in request.selectors().iter().enumerate() {
        if selector.cel.is_none() {
            return Err(invalid(format!(
                "claim {}, request {}, selector #{i}: CEL expression empty (unsupported selector type?)",
                kobj(claim),
                request.name()
            )));
        }
    }
    if !ctx.alloc.features.admin_access && request.has_admin_access() {
        return Err(invalid(format!(
            "claim {}, request {}: admin access is requested, but the feature is disabled",
            kobj(claim),
            request.name()
        )));
    }
    let class_name = request.class_name();
    if class_name.is_empty() {
        return Err(invalid(format!(
            "claim {}, request {}: missing device class name (unsupported request type?)",
            kobj(claim),
            request.name()
        )));
    }
    let Some(class) = ctx.alloc.classes.get(class_name) else {
        return Err(invalid(format!(
            "claim {}, request {}: could not retrieve device class {class_name}: deviceclass.resource.k8s.io \"{class_name}\" not found",
            kobj(claim),
            request.name()
        )));
    };
    let mut data = RequestData {
        request,
        parent,
        class,
        num_devices: 0,
        all_devices: Vec::new(),
        programs: OnceCell::new(),
    };
    match request.mode() {
        "ExactCount" => data.num_devices = usize::try_from(request.count()).unwrap_or(0),
        "All" => {
            for (p, pool) in ctx.pools.iter().enumerate() {
                if pool.incomplete {
                    return Err(invalid(format!(
                        "claim {}, request {}: asks for all devices, but resource pool {}/{} is currently being updated",
                        kobj(claim),
                        request.name(),
                        pool.driver,
                        pool.name
                    )));
                }
                if pool.invalid {
                    return Err(invalid(format!(
                        "claim {}, request {}: asks for all devices, but resource pool {}/{} is currently invalid",
                        kobj(claim),
                        request.name(),
                        pool.driver,
                        pool.name
                    )));
                }
                for &s in &pool.device_slices {
                    for d in 0..ctx.alloc.entry(s).devices.len() as u32 {
                        match is_selectable(ctx, st, key, &data, s, d)? {
                            Selectable::Yes => data.all_devices.push(Candidate {
                                pool: p as u32,
                                slice: s,
                                device: d,
                            }),
                            Selectable::No => {}
                            Selectable::Refused(reason) => {
                                // "All" without this device is not what
                                // kube-scheduler would allocate.
                                return Err(AllocError::FailedOnNode(format!(
                                    "claim {}, request {}: asks for all devices, but {reason}",
                                    kobj(claim),
                                    data.request_name()
                                )));
                            }
                        }
                    }
                }
            }
            data.num_devices = data.all_devices.len();
        }
        mode => {
            return Err(invalid(format!(
                "claim {}, request {}: unsupported count mode {mode}",
                kobj(claim),
                request.name()
            )));
        }
    }
    Ok(data)
}

/// Go's `allocateOne`: allocates the device at `at` and everything after
/// it. `in_sub` is set while one particular subrequest is being tried.
fn allocate_one<'a, 'c>(ctx: &Ctx<'_, 'a, 'c>, st: &mut State<'a, 'c>, at: At, in_sub: bool) -> Result<bool, Stop> {
    ctx.alloc.steps.fetch_add(1, Ordering::Relaxed);
    if (ctx.expired)() {
        return Err(Stop::Fail(AllocError::Aborted(
            "filter operation aborted: context deadline exceeded".to_owned(),
        )));
    }
    if at.claim >= ctx.claims.len() {
        // The first solution is the answer.
        return Ok(true);
    }
    let slots = &ctx.reqs[at.claim];
    if at.request >= slots.len() {
        // Done with this claim, on to the next.
        let next = At {
            claim: at.claim + 1,
            ..At::default()
        };
        return match allocate_one(ctx, st, next, false) {
            // Another choice for this claim (a subrequest with fewer
            // devices) may still make the next claim fit.
            Err(Stop::MaxSize) => Ok(false),
            other => other,
        };
    }
    if !in_sub && let Slot::Subs(subs) = &slots[at.request] {
        // One subrequest is enough: the first that works.
        let mut all_exceeded = true;
        for sub in 0..subs.len() {
            match allocate_one(ctx, st, At { sub, ..at }, true) {
                // One with fewer devices may fit.
                Err(Stop::MaxSize) => continue,
                Err(e) => return Err(e),
                Ok(true) => {
                    st.selected[at.claim][at.request] = sub;
                    return Ok(true);
                }
                Ok(false) => all_exceeded = false,
            }
        }
        // When every subrequest was too large, so is every choice made
        // before for this claim.
        return if all_exceeded { Err(Stop::MaxSize) } else { Ok(false) };
    }

    let data = ctx.data(at.claim, at.request, at.sub);
    let request = data.request;
    let all = request.mode() == "All";
    if all && data.all_devices.is_empty() {
        // "All" needs at least one device.
        return Ok(false);
    }
    if at.device >= data.num_devices {
        // Done with this request, on to the next.
        let next = At {
            claim: at.claim,
            request: at.request + 1,
            ..At::default()
        };
        return allocate_one(ctx, st, next, false);
    }
    // Would the devices still to be picked for this request be too many?
    if st.picked[at.claim].len() + data.num_devices - at.device > ALLOCATION_RESULTS_MAX_SIZE {
        return Err(Stop::MaxSize);
    }
    let next = At {
        device: at.device + 1,
        ..at
    };
    if all {
        // The devices are known; they must all be usable, in any order.
        let Some(undo) = allocate_device(ctx, st, at, data.all_devices[at.device], true)? else {
            return Ok(false);
        };
        let result = allocate_one(ctx, st, next, in_sub);
        if !matches!(result, Ok(true)) {
            deallocate(ctx, st, undo);
        }
        return result;
    }
    let key = (at.claim, at.request, at.sub);
    for (p, pool) in ctx.pools.iter().enumerate() {
        // Incomplete and invalid pools are not allocated from, but other
        // pools may do.
        if pool.incomplete || pool.invalid {
            continue;
        }
        for &s in &pool.device_slices {
            for d in 0..ctx.alloc.entry(s).devices.len() as u32 {
                // Being in use is cheap to check, so first.
                if request.admin_access() {
                    if st.allocating_for_claim((s, d), at.claim) {
                        continue;
                    }
                } else if st.in_use(ctx.alloc, (s, d)) {
                    continue;
                }
                if !matches!(is_selectable(ctx, st, key, data, s, d)?, Selectable::Yes) {
                    continue;
                }
                let candidate = Candidate {
                    pool: p as u32,
                    slice: s,
                    device: d,
                };
                let Some(undo) = allocate_device(ctx, st, at, candidate, false)? else {
                    continue;
                };
                let result = allocate_one(ctx, st, next, in_sub);
                if let Ok(true) = result {
                    return Ok(true);
                }
                deallocate(ctx, st, undo);
                result?;
            }
        }
    }
    Ok(false)
}

/// Whether a device matches a request.
enum Selectable {
    Yes,
    No,
    /// It matches, but uses a field wasmsched does not support: why.
    Refused(String),
}

/// Go's `isSelectable`: the class's and the request's selectors, and the
/// device's own node selection.
fn is_selectable(
    ctx: &Ctx<'_, '_, '_>,
    st: &mut State<'_, '_>,
    key: (usize, usize, usize),
    data: &RequestData<'_>,
    s: u32,
    d: u32,
) -> Result<Selectable, AllocError> {
    let match_key = (s, d, key.0 as u32, key.1 as u32, key.2 as u32);
    if let Some(&matches) = st.matches.get(&match_key) {
        return Ok(if matches { Selectable::Yes } else { Selectable::No });
    }
    let entry = ctx.alloc.entry(s);
    let device = &entry.devices[d as usize];
    let driver = entry.driver();
    let (class_programs, request_programs) = data.programs.get_or_init(|| {
        let compile = |selectors: &[DeviceSelector]| -> Programs {
            selectors
                .iter()
                .map(|s| s.cel.as_ref().map(|c| ctx.alloc.cel.get(&c.expression)))
                .collect()
        };
        (
            compile(data.class.spec.selectors.as_deref().unwrap_or(&[])),
            compile(data.request.selectors()),
        )
    });
    let selectable = eval_selectors(ctx, key.0, device, driver, Some(&data.class), class_programs)?
        && eval_selectors(ctx, key.0, device, driver, None, request_programs)?
        && (!entry.per_device_node_selection()
            || node_matches(
                ctx.node,
                device.node_name.as_deref(),
                device.all_nodes,
                entry.device_selector(d as usize),
            )
            .map_err(invalid)?);
    if !selectable {
        st.matches.insert(match_key, false);
        return Ok(Selectable::No);
    }
    if let Some((field, what)) = unsupported_field(device) {
        st.matches.insert(match_key, false);
        let reason = format!(
            "device {driver}/{}/{} cannot be allocated: {what} (ResourceSlice {}, spec.devices[{d}].{field}) {} not supported by wasmsched",
            entry.pool(),
            device.name,
            entry.name(),
            if what.ends_with('s') { "are" } else { "is" }
        );
        if st.refused.is_none() {
            st.refused = Some(reason.clone());
        }
        return Ok(Selectable::Refused(reason));
    }
    st.matches.insert(match_key, true);
    Ok(Selectable::Yes)
}

/// Go's `selectorsMatch`: every selector matches.
fn eval_selectors(
    ctx: &Ctx<'_, '_, '_>,
    claim: usize,
    device: &Device,
    driver: &str,
    class: Option<&DeviceClass>,
    programs: &[Option<Program>],
) -> Result<bool, AllocError> {
    let whose = || match class {
        Some(class) => format!("class {}", class.metadata.name.as_deref().unwrap_or("")),
        None => format!("claim {}", kobj(ctx.claims[claim])),
    };
    for (i, program) in programs.iter().enumerate() {
        let Some(program) = program else {
            return Err(invalid(format!(
                "{}: selector #{i}: CEL expression empty (unsupported selector type?)",
                whose()
            )));
        };
        let program = match &**program {
            Ok(program) => program,
            Err(e) => return Err(invalid(format!("{}: selector #{i}: CEL compile error: {e}", whose()))),
        };
        // Without DRAListTypeAttributes Go's CEL environment refuses a
        // device with a list-typed attribute, whatever the expression.
        if let Some(name) = list_attribute(device) {
            return Err(invalid(format!(
                "{}: selector #{i}: CEL runtime error: attribute {name}: unsupported attribute value",
                whose()
            )));
        }
        match program.matches(driver, device) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => return Err(invalid(format!("{}: selector #{i}: CEL runtime error: {e}", whose()))),
        }
    }
    Ok(true)
}

/// The first attribute with a list value.
fn list_attribute(device: &Device) -> Option<&str> {
    device.attributes.iter().flatten().find_map(|(name, a)| {
        (a.bools.is_some() || a.ints.is_some() || a.strings.is_some() || a.versions.is_some()).then_some(name.as_str())
    })
}

/// A field of the device that wasmsched cannot honour, and what it is.
fn unsupported_field(device: &Device) -> Option<(String, &'static str)> {
    if device.binding_conditions.as_ref().is_some_and(|c| !c.is_empty()) {
        return Some(("bindingConditions".to_owned(), "binding conditions"));
    }
    if device
        .binding_failure_conditions
        .as_ref()
        .is_some_and(|c| !c.is_empty())
    {
        return Some(("bindingFailureConditions".to_owned(), "binding failure conditions"));
    }
    if device.binds_to_node == Some(true) {
        return Some(("bindsToNode".to_owned(), "binding to a node"));
    }
    if device.allow_multiple_allocations == Some(true) {
        return Some(("allowMultipleAllocations".to_owned(), "multiple allocations"));
    }
    if let Some((name, _)) = device
        .capacity
        .iter()
        .flatten()
        .find(|(_, c)| c.request_policy.is_some())
    {
        return Some((format!("capacity[{name}].requestPolicy"), "capacity request policies"));
    }
    if let Some(name) = list_attribute(device) {
        return Some((format!("attributes[{name}]"), "list-typed attributes"));
    }
    None
}

/// What [`deallocate`] needs to undo [`allocate_device`].
struct Undo<'c> {
    claim: usize,
    candidate: Candidate,
    request: &'c str,
    sub: Option<&'c str>,
    picked: usize,
}

/// Go's `allocateDevice`: whether a (selectable) device can be picked now,
/// and if so, picks it. With `must` (`All`), a broken constraint is an
/// error.
fn allocate_device<'a, 'c>(
    ctx: &Ctx<'_, 'a, 'c>,
    st: &mut State<'a, 'c>,
    at: At,
    candidate: Candidate,
    must: bool,
) -> Result<Option<Undo<'c>>, Stop> {
    let data = ctx.data(at.claim, at.request, at.sub);
    let request = data.request;
    let dev = (candidate.slice, candidate.device);
    if request.admin_access() {
        if st.allocating_for_claim(dev, at.claim) {
            return Ok(None);
        }
    } else if st.in_use(ctx.alloc, dev) {
        return Ok(None);
    }
    let device = ctx.alloc.device(candidate.slice, candidate.device);
    let consumes = device.consumes_counters.as_ref().is_some_and(|c| !c.is_empty());
    if consumes && (!ctx.alloc.features.partitionable_devices || !reserve_counters(ctx, st, candidate.pool, device)) {
        return Ok(None);
    }
    // As in Go, counters reserved above stay reserved when the device is
    // turned down below.
    let (base, sub) = match data.parent {
        None => (request.name(), None),
        Some(parent) => (parent, Some(request.name())),
    };
    if ctx.alloc.features.device_taints && taint_prevents_allocation(device, request.tolerations()) {
        return Ok(None);
    }
    let entry = ctx.alloc.entry(candidate.slice);
    let constraints = &mut st.constraints[at.claim];
    for i in 0..constraints.len() {
        if !constraints[i].add(base, sub, device, entry.driver()) {
            if must {
                // A claim whose constraint keeps it from getting all its
                // devices makes no sense.
                return Err(Stop::Fail(invalid(format!(
                    "claim {}, request {}: cannot add device {}/{}/{} because a claim constraint would not be satisfied",
                    kobj(ctx.claims[at.claim]),
                    request.name(),
                    entry.driver(),
                    entry.pool(),
                    device.name
                ))));
            }
            for c in &mut constraints[..i] {
                c.remove(base, sub);
            }
            return Ok(None);
        }
    }
    st.allocating.entry(dev).or_default().push(at.claim as u32);
    let picked = st.picked[at.claim].len();
    st.picked[at.claim].push(Picked {
        request,
        parent: data.parent,
        slice: candidate.slice,
        device: candidate.device,
        admin_access: request.admin_access(),
    });
    Ok(Some(Undo {
        claim: at.claim,
        candidate,
        request: base,
        sub,
        picked,
    }))
}

/// Undoes an [`allocate_device`].
fn deallocate<'a>(ctx: &Ctx<'_, 'a, '_>, st: &mut State<'a, '_>, undo: Undo<'_>) {
    for c in &mut st.constraints[undo.claim] {
        c.remove(undo.request, undo.sub);
    }
    let dev = (undo.candidate.slice, undo.candidate.device);
    if let Some(claims) = st.allocating.get_mut(&dev)
        && let Some(i) = claims.iter().position(|&c| c == undo.claim as u32)
    {
        claims.swap_remove(i);
    }
    let device = ctx.alloc.device(dev.0, dev.1);
    if ctx.alloc.features.partitionable_devices && device.consumes_counters.as_ref().is_some_and(|c| !c.is_empty()) {
        release_counters(st, undo.candidate.pool, device);
    }
    st.picked[undo.claim].truncate(undo.picked);
}

/// Go's `checkAvailableCounters`: reserves the device's counters if its
/// pool has them left.
fn reserve_counters<'a>(ctx: &Ctx<'_, 'a, '_>, st: &mut State<'a, '_>, pool: u32, device: &'a Device) -> bool {
    let available = ctx.alloc.available_counters(&ctx.pools[pool as usize]);
    for cc in device.consumes_counters.iter().flatten() {
        for (name, c) in &cc.counters {
            *st.consumed
                .entry((pool, cc.counter_set.as_str(), name.as_str()))
                .or_insert(0) += counter_value(&c.value).unwrap_or(0);
        }
    }
    for (set, counters) in available.iter() {
        for (name, left) in counters {
            let used = st.consumed.get(&(pool, *set, *name)).copied().unwrap_or(0);
            if *left < used {
                release_counters(st, pool, device);
                return false;
            }
        }
    }
    true
}

/// Go's `deallocateCountersForDevice`.
fn release_counters<'a>(st: &mut State<'a, '_>, pool: u32, device: &'a Device) {
    for cc in device.consumes_counters.iter().flatten() {
        for (name, c) in &cc.counters {
            *st.consumed
                .entry((pool, cc.counter_set.as_str(), name.as_str()))
                .or_insert(0) -= counter_value(&c.value).unwrap_or(0);
        }
    }
}
