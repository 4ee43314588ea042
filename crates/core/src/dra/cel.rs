//! The CEL of device selectors (`selectors[].cel.expression` of
//! DeviceClasses, ResourceClaims and their templates), with the environment
//! Kubernetes v1.36 gives them (`k8s.io/dynamic-resource-allocation/cel`,
//! `compile.go`): one variable, `device`, and the Kubernetes CEL libraries.
//!
//! Parsing and evaluation are the `cel` crate's (cel-rust); this module adds
//! what cel-rust lacks for the DRA environment: the `device` value, the
//! `quantity` and `semver` libraries, `cel.bind`, a small static check
//! standing in for cel-go's type checker, and a cost bound.
//!
//! # The environment
//!
//! - `device.driver` (string), `device.allowMultipleAllocations` (bool,
//!   false when the device does not say), `device.attributes` (domain → name
//!   → value) and `device.capacity` (domain → name → quantity). An attribute
//!   or capacity named `domain/name` is `device.attributes["domain"].name`;
//!   a bare `name` belongs to the driver's domain. Looking up a domain the
//!   device has nothing in yields an empty map (as `compile.go`'s
//!   `mapper.Find` does), so `device.attributes["x"].y` fails at evaluation
//!   with `no such key: y`, and `has(device.attributes["x"].y)` is false.
//! - Attribute values are `int`, `bool`, `string` or a semantic version
//!   (`version`); list values (`ints`, `strings`, ...) are refused at
//!   evaluation with `attribute <name>: unsupported attribute value`, as
//!   Kubernetes v1.36 does with its default gates (`DRAListTypeAttributes`
//!   off). An attribute that is not a valid version fails the evaluation
//!   (`attribute <name>: parse semantic version: ...`), whatever the
//!   expression reads, as in Kubernetes.
//! - Libraries: the CEL standard library (with `matches`, optionals and the
//!   `has`/`all`/`exists`/`exists_one`/`map`/`filter` macros), the strings
//!   extension (`charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`,
//!   `upperAscii`, `replace`, `split`, `substring`, `trim`, `join`,
//!   `format`, `strings.quote`), the lists extension (`slice`, `flatten`,
//!   `distinct`, `reverse`, `sort`, `sortBy`, `lists.range`), the sets
//!   extension (`sets.contains`, `sets.equivalent`, `sets.intersects`),
//!   Kubernetes' list library (`isSorted`, `sum`, `min`, `max`, `indexOf`,
//!   `lastIndexOf`), Kubernetes' `quantity` library (`quantity`,
//!   `isQuantity`, `sign`, `isGreaterThan`, `isLessThan`, `compareTo`,
//!   `add`, `sub`, `asInteger`, `isInteger`, `asApproximateFloat`; exact
//!   decimal comparisons), Kubernetes' `semver` library (`semver` and
//!   `isSemver`, with the optional normalizing argument, `major`, `minor`,
//!   `patch`, `isGreaterThan`, `isLessThan`, `compareTo`) and `cel.bind`.
//! - Not covered: the URL, IP, CIDR, regex (`find`, `findAll`), format and
//!   authorizer libraries, the two-variable comprehensions, timestamps and
//!   durations, `first`/`last`. Their names are known to the static check
//!   (an expression using them compiles, as Kubernetes accepts it) but their
//!   evaluation fails with `undeclared reference to '<name>'`.
//!
//! # Errors
//!
//! Compile errors are what kube-apiserver answers, `compilation failed:
//! ERROR: <input>:1:7: undefined field 'vendor'` with the source line and a
//! caret under it. cel-rust's parser is generated from the same ANTLR grammar
//! as cel-go's, so syntax errors read the same. cel-rust has no type checker:
//! a static check over the parsed expression reports what cel-go's checker
//! refuses for this environment, when it is sure: a reference to an unknown
//! identifier or function (`undeclared reference to 'x' (in container '')`),
//! a field of `device` other than its four (`undefined field 'x'`), a field
//! selected on a scalar, a scalar as the range of a comprehension, an
//! arithmetic or ordering operator on operands of known, incompatible types
//! (`found no matching overload for '_+_' applied to '(int, string)'`), and
//! an expression whose result is known not to be a bool (`must evaluate to
//! bool or the unknown type, not string`). What it cannot tell (say, a
//! function applied to arguments of the wrong type) fails at evaluation
//! instead. Evaluation errors are the CEL error's text (`no such key: model`).
//!
//! # Cost
//!
//! Kubernetes bounds a selector's cost twice: the API server refuses an
//! expression whose cel-go estimated worst-case cost exceeds
//! [`MAX_COST`] (`CELSelectorExpressionMaxCost`), and evaluation stops at
//! that actual cost. cel-rust counts nothing while it evaluates, so the bound
//! here is all at compile time, over the parsed expression:
//!
//! - the text is at most [`MAX_EXPRESSION_LENGTH`] bytes
//!   (`CELSelectorExpressionMaxLength`);
//! - nesting is at most 96 levels (cel-rust's parser limit) and, before
//!   parsing, the text's chains of operators, selections and indexes are
//!   measured: along any path, chain lengths plus nesting at most
//!   [`MAX_RECURSION_DEPTH`] (cel-go's parser limit, which cel-go counts per
//!   grammar rule, so this is stricter for deeply nested calls); the parsed
//!   tree is at most twice that deep. This bounds the recursion of the
//!   parser, the check and the evaluator: compiling runs on a thread of its
//!   own with a 64 MiB stack (reserved, not committed), evaluating on the
//!   caller's, where the deepest expression accepted needs under 1 MiB
//!   even in an unoptimized build;
//! - a worst-case cost is estimated in the manner of cel-go's estimator: one
//!   unit per variable, field selection and call, string functions by the
//!   maximum length of their operands (a device's strings are bounded: 63
//!   bytes for a domain or driver, 32 for a name, 64 for an attribute value,
//!   32 attributes or capacities per device), list and map literals by their
//!   size, and comprehensions by the maximum size of their range times the
//!   cost of one step. An expression over [`MAX_COST`] is refused with
//!   `too complex, exceeds cost limit`.
//!
//! The estimate follows cel-go's in shape, not number for number: it is
//! coarser for some functions (both are upper bounds), so an expression near
//! the limit may be accepted by one and refused by the other. There is no
//! runtime limit and no cancellation: evaluation ends because every
//! comprehension's range is bounded at compile time (`lists.range` of a
//! computed size counts as its maximum, 1 000 000 elements). cel-rust
//! compiles a `matches` pattern at each call, which the estimate charges by
//! the pattern's length. Panics inside cel-rust, were there any, are caught
//! and returned as errors.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue, SourceInfo, operators};
use cel::common::traits::{Container, Indexer, Iterable, Sizer};
use cel::common::types::{
    BOOL_TYPE, CelBool, CelDouble, CelInt, CelMap, CelMapKey, CelString, INT_TYPE, LIST_TYPE, MAP_TYPE, STRING_TYPE,
    Type,
};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::parser::{Macro, MacroExprHelper, ParseError, ParseErrors};
use cel::{Context, Env, ExecutionError, Value};
use k8s_openapi::api::resource::v1::{Device, DeviceAttribute};

/// The longest expression accepted, in bytes (`CELSelectorExpressionMaxLength`).
pub const MAX_EXPRESSION_LENGTH: usize = 10 * 1024;

/// The highest estimated cost accepted (`CELSelectorExpressionMaxCost`).
pub const MAX_COST: u64 = 1_000_000;

/// The longest chain of operators, selections and indexes (cel-go's default
/// parser recursion limit).
pub const MAX_RECURSION_DEPTH: usize = 250;

/// The deepest nesting of parentheses, brackets and calls (cel-rust's parser
/// recursion limit).
const MAX_NESTING: u16 = 96;

/// A parsed expression deeper than this is refused before evaluation (the
/// text scan keeps real expressions well below it).
const MAX_AST_DEPTH: usize = 2 * MAX_RECURSION_DEPTH;

/// `resourceapi.DeviceMaxDomainLength`, `DriverNameMaxLength`.
const MAX_DOMAIN_LENGTH: u64 = 63;
/// `resourceapi.DeviceMaxIDLength`.
const MAX_ID_LENGTH: u64 = 32;
/// `resourceapi.DeviceAttributeMaxValueLength`.
const MAX_ATTRIBUTE_VALUE_LENGTH: u64 = 64;
/// `resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice`.
const MAX_ATTRIBUTES_PER_DEVICE: u64 = 32;
/// The most elements `lists.range` makes (cel-rust's and cel-go's limit).
const MAX_RANGE_SIZE: u64 = 1_000_000;

const DEVICE: &str = "device";
const DRIVER: &str = "driver";
const ATTRIBUTES: &str = "attributes";
const CAPACITY: &str = "capacity";
const MULTI_ALLOC: &str = "allowMultipleAllocations";

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Why an expression does not compile, or did not evaluate. Its text is
/// Kubernetes' (see the [module documentation](self)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CelError {
    kind: CelErrorKind,
    message: String,
}

/// What a [`CelError`] is about: what kube-apiserver's validation makes of
/// it depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CelErrorKind {
    /// The text is longer than [`MAX_EXPRESSION_LENGTH`] (validation:
    /// `field.TooLong`).
    TooLong,
    /// The expression does not compile (validation: `field.Invalid` with the
    /// message).
    Invalid,
    /// The estimated cost exceeds [`MAX_COST`] (validation:
    /// `field.Forbidden`, `too complex, exceeds cost limit`).
    TooComplex,
    /// The evaluation against a device failed.
    Evaluation,
}

impl CelError {
    fn new(kind: CelErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> Self {
        Self::new(CelErrorKind::Invalid, message)
    }

    fn evaluation(message: impl Into<String>) -> Self {
        Self::new(CelErrorKind::Evaluation, message)
    }

    /// What the error is about.
    pub fn kind(&self) -> CelErrorKind {
        self.kind
    }

    /// The message, as [`Display`](std::fmt::Display) shows it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

// ---------------------------------------------------------------------------
// Cache and selector
// ---------------------------------------------------------------------------

type Compiled = Arc<Result<Selector, CelError>>;

/// Compiled selectors by expression text, as kube-scheduler's `cel.Cache`:
/// bounded, the least recently used entry going first, and shared between
/// threads. An expression is compiled once while it stays in the cache, even
/// when several threads ask for it at the same time.
pub struct CelCache {
    max_entries: usize,
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    entries: HashMap<String, CacheSlot>,
    tick: u64,
}

struct CacheSlot {
    compiled: Arc<OnceLock<Compiled>>,
    used: u64,
}

impl CelCache {
    /// A cache of at most `max_entries` expressions (none are kept for 0).
    pub fn new(max_entries: usize) -> Self {
        Self {
            max_entries,
            state: Mutex::new(CacheState::default()),
        }
    }

    /// The compiled `expression`: compiled on first use, the same `Arc`
    /// afterwards while it stays in the cache.
    pub fn get(&self, expression: &str) -> Arc<Result<Selector, CelError>> {
        // Too long to compile, it is not kept either.
        if self.max_entries == 0 || expression.len() > MAX_EXPRESSION_LENGTH {
            return Arc::new(Selector::compile(expression));
        }
        let slot = {
            let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            state.tick += 1;
            let tick = state.tick;
            if let Some(slot) = state.entries.get_mut(expression) {
                slot.used = tick;
                Arc::clone(&slot.compiled)
            } else {
                if state.entries.len() >= self.max_entries {
                    let oldest = state
                        .entries
                        .iter()
                        .min_by_key(|(_, slot)| slot.used)
                        .map(|(text, _)| text.clone());
                    if let Some(oldest) = oldest {
                        state.entries.remove(&oldest);
                    }
                }
                let compiled = Arc::new(OnceLock::new());
                state.entries.insert(
                    expression.to_owned(),
                    CacheSlot {
                        compiled: Arc::clone(&compiled),
                        used: tick,
                    },
                );
                compiled
            }
        };
        Arc::clone(slot.get_or_init(|| Arc::new(Selector::compile(expression))))
    }

    /// How many expressions the cache holds.
    pub fn len(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entries
            .len()
    }

    /// Whether the cache holds no expression.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for CelCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelCache")
            .field("max_entries", &self.max_entries)
            .field("len", &self.len())
            .finish()
    }
}

/// A compiled device selector.
#[derive(Debug)]
pub struct Selector {
    expression: IdedExpr,
    cost: u64,
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Selector>();
    send_sync::<CelCache>();
};

impl Selector {
    /// Compiles `expression` for the DRA environment: parsed, checked, its
    /// cost estimated (see the [module documentation](self)).
    pub fn compile(expression: &str) -> Result<Self, CelError> {
        compile(expression)
    }

    /// The estimated worst-case cost of one evaluation, at most [`MAX_COST`].
    pub fn estimated_cost(&self) -> u64 {
        self.cost
    }

    /// Evaluates against one device of a slice whose `spec.driver` is
    /// `driver`: whether the device matches, or why the evaluation failed.
    pub fn matches(&self, driver: &str, device: &Device) -> Result<bool, CelError> {
        let input = device_value(driver, device)?;
        let env = Arc::clone(&ENV);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut context = Context::with_env(env);
            context.add_variable_as_val(DEVICE, Box::new(input));
            // `Value::resolve` is compiled in the `cel` crate with its
            // optimizations, which keeps the recursion's frames small.
            match Value::resolve(&self.expression, &context) {
                Ok(Value::Bool(b)) => Ok(b),
                // `@dra_result` lets nothing else through.
                Ok(_) => Err(CelError::evaluation("CEL result could not be converted to bool")),
                Err(e) => Err(CelError::evaluation(runtime_message(&e))),
            }
        }));
        outcome.unwrap_or_else(|_| Err(CelError::evaluation("internal error: the CEL evaluation failed")))
    }
}

/// An evaluation error in cel-go's words where they differ.
fn runtime_message(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::UndeclaredReference(name) => format!("undeclared reference to '{name}'"),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        other => other.to_string(),
    }
}

// ---------------------------------------------------------------------------
// The `device` variable
// ---------------------------------------------------------------------------

/// `device` for one evaluation, borrowing the device's strings.
fn device_value<'v>(driver: &'v str, device: &'v Device) -> Result<CelMap<'v>, CelError> {
    type Inner<'v> = HashMap<CelMapKey<'v>, Box<dyn Val + 'v>>;
    let mut attributes: BTreeMap<&'v str, Inner<'v>> = BTreeMap::new();
    for (name, attribute) in device.attributes.iter().flatten() {
        let value = attribute_value(attribute).map_err(|e| CelError::evaluation(format!("attribute {name}: {e}")))?;
        let (domain, id) = qualified(name, driver);
        attributes.entry(domain).or_default().insert(CelMapKey::from(id), value);
    }
    let mut capacity: BTreeMap<&'v str, Inner<'v>> = BTreeMap::new();
    for (name, c) in device.capacity.iter().flatten() {
        let q = Quantity::parse(&c.value.0).map_err(|e| CelError::evaluation(format!("capacity {name}: {e}")))?;
        let (domain, id) = qualified(name, driver);
        capacity
            .entry(domain)
            .or_default()
            .insert(CelMapKey::from(id), Box::new(q));
    }
    let domains = |maps: BTreeMap<&'v str, Inner<'v>>| -> Box<dyn Val + 'v> {
        let outer: Inner<'v> = maps
            .into_iter()
            .map(|(domain, inner)| {
                (
                    CelMapKey::from(domain),
                    Box::new(CelMap::from(inner)) as Box<dyn Val + 'v>,
                )
            })
            .collect();
        Box::new(Domains {
            map: CelMap::from(outer),
            empty: CelMap::default(),
        })
    };
    let mut fields: Inner<'v> = HashMap::with_capacity(4);
    fields.insert(CelMapKey::from(DRIVER), Box::new(CelString::from(driver)));
    fields.insert(
        CelMapKey::from(MULTI_ALLOC),
        Box::new(CelBool::from(device.allow_multiple_allocations.unwrap_or(false))),
    );
    fields.insert(CelMapKey::from(ATTRIBUTES), domains(attributes));
    fields.insert(CelMapKey::from(CAPACITY), domains(capacity));
    Ok(CelMap::from(fields))
}

/// `domain/id`, or the driver's domain for a bare `id`.
fn qualified<'a>(name: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    name.split_once('/').unwrap_or((driver, name))
}

/// An attribute's one value, as `getAttributeValue` takes it (list values
/// are not supported while `DRAListTypeAttributes` is off).
fn attribute_value<'v>(a: &'v DeviceAttribute) -> Result<Box<dyn Val + 'v>, String> {
    if let Some(i) = a.int {
        Ok(Box::new(CelInt::from(i)))
    } else if let Some(b) = a.bool {
        Ok(Box::new(CelBool::from(b)))
    } else if let Some(s) = &a.string {
        Ok(Box::new(CelString::from(s.as_str())))
    } else if let Some(v) = &a.version {
        semver::Version::parse(v)
            .map(|v| Box::new(Semver(v)) as Box<dyn Val + 'v>)
            .map_err(|e| format!("parse semantic version: {e}"))
    } else {
        Err("unsupported attribute value".to_owned())
    }
}

/// `device.attributes` and `device.capacity`: maps by domain in which a
/// domain without entries is an empty map rather than a missing key.
#[derive(Debug, Clone)]
struct Domains<'v> {
    map: CelMap<'v>,
    empty: CelMap<'v>,
}

impl<'v> Val for Domains<'v> {
    fn get_type(&self) -> &Type {
        &MAP_TYPE
    }

    fn cel_type() -> &'static Type {
        &MAP_TYPE
    }

    fn as_container(&self) -> Option<&dyn Container> {
        Some(self)
    }

    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_iterable<'b, 'w>(&'b self) -> Option<&'b (dyn Iterable + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        Some(self)
    }

    fn equals(&self, other: &dyn Val) -> bool {
        match other.downcast_ref::<CelMap>() {
            Some(other) => Val::equals(&self.map, other),
            None => false,
        }
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(self.clone())
    }
}

impl Container for Domains<'_> {
    fn contains(&self, value: &dyn Val) -> Result<bool, ExecutionError> {
        Container::contains(&self.map, value)
    }
}

impl<'v> Indexer for Domains<'v> {
    fn get<'b, 'w>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'w>, ExecutionError>
    where
        Self: 'w,
    {
        Ok(Indexer::get(&self.map, idx).unwrap_or(CowVal::Borrowed(&self.empty)))
    }

    fn steal<'w>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'w>, ExecutionError>
    where
        Self: 'w,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

impl<'v> Iterable for Domains<'v> {
    fn iter<'b, 'w>(&'b self) -> Box<dyn cel::common::traits::Iterator<'b, 'w> + 'b>
    where
        Self: 'w,
    {
        Iterable::iter(&self.map)
    }
}

impl Sizer for Domains<'_> {
    fn size(&self) -> CelInt {
        Sizer::size(&self.map)
    }
}

// ---------------------------------------------------------------------------
// Quantities
// ---------------------------------------------------------------------------

static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");

/// `resource.ErrFormatWrong`.
const QUANTITY_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// `resource.ErrSuffix`.
const QUANTITY_SUFFIX: &str = "unable to parse quantity's suffix";

/// The most digits `add` and `sub` write out: beyond, they fail (Go's
/// big decimals would go on).
const MAX_QUANTITY_DIGITS: usize = 4096;

/// A Kubernetes quantity's exact value: `±digits × 10^exponent`, the
/// digits (most significant first) with no leading or trailing zero; zero
/// has none.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Quantity {
    negative: bool,
    digits: Vec<u8>,
    exponent: i64,
}

impl Quantity {
    fn zero() -> Self {
        Self {
            negative: false,
            digits: Vec::new(),
            exponent: 0,
        }
    }

    /// `±digits × 10^exponent`, normalized.
    fn new(negative: bool, mut digits: Vec<u8>, mut exponent: i64) -> Self {
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..leading);
        while digits.last() == Some(&0) {
            digits.pop();
            exponent = exponent.saturating_add(1);
        }
        if digits.is_empty() {
            return Self::zero();
        }
        Self {
            negative,
            digits,
            exponent,
        }
    }

    fn from_u128(negative: bool, value: u128, exponent: i64) -> Self {
        Self::new(
            negative,
            value.to_string().bytes().map(|b| b - b'0').collect(),
            exponent,
        )
    }

    fn from_int(i: i64) -> Self {
        Self::from_u128(i < 0, u128::from(i.unsigned_abs()), 0)
    }

    /// 2^63-1, `maxAllowed`.
    fn max_allowed(negative: bool) -> Self {
        Self::from_u128(negative, i64::MAX as u128, 0)
    }

    /// `resource.ParseQuantity`: exact, except that a value taking Go's
    /// slow path (more than 18 digits, a fraction below nano, a fractional
    /// binary value) is rounded up to a nano, and a binary one capped at
    /// 2^63-1, as Go does.
    fn parse(s: &str) -> Result<Self, &'static str> {
        if s.is_empty() {
            return Err(QUANTITY_FORMAT);
        }
        if s == "0" {
            return Ok(Self::zero());
        }
        let parts = quantity_parts(s)?;
        let (base, exponent) = quantity_suffix(parts.suffix).ok_or(QUANTITY_SUFFIX)?;
        let (num, denom) = (parts.num, parts.denom);
        let digits_len = i64::try_from(num.len() + denom.len()).unwrap_or(i64::MAX);
        let denom_len = i64::try_from(denom.len()).unwrap_or(i64::MAX);
        // The int64 fast path of ParseQuantity: exact, never rounded nor capped.
        let (precision, mut scale, multiplier) = if base == 10 {
            (18 - digits_len, i64::from(exponent), 1u128)
        } else if denom.is_empty() {
            let precision = 15 - i64::try_from(num.len()).unwrap_or(i64::MAX) - i64::from(exponent * 3 / 10) - 1;
            (precision, 0, 1u128 << exponent)
        } else {
            (-1, 0, 1)
        };
        if precision >= 0 {
            scale -= denom_len;
            if scale >= -9 {
                let value: u128 = format!("{num}{denom}").parse().map_err(|_| QUANTITY_FORMAT)?;
                let result = value * multiplier;
                if result <= i64::MAX as u128 {
                    return Ok(Self::from_u128(!parts.positive, result, scale));
                }
            }
        }
        // The inf.Dec slow path.
        let scale10 = if base == 10 { i64::from(exponent) } else { 0 };
        let two_power = if base == 2 { exponent.unsigned_abs() } else { 0 };
        Ok(slow_quantity(!parts.positive, num, denom, scale10, two_power))
    }

    fn sign(&self) -> i64 {
        match (self.digits.is_empty(), self.negative) {
            (true, _) => 0,
            (_, true) => -1,
            _ => 1,
        }
    }

    /// The exact order of two quantities.
    fn cmp(&self, other: &Self) -> Ordering {
        match self.sign().cmp(&other.sign()) {
            Ordering::Equal if self.sign() == 0 => Ordering::Equal,
            Ordering::Equal if self.negative => cmp_magnitude(self, other).reverse(),
            Ordering::Equal => cmp_magnitude(self, other),
            unequal => unequal,
        }
    }

    /// `self + other`, exact; `None` past [`MAX_QUANTITY_DIGITS`] digits.
    fn add(&self, other: &Self) -> Option<Self> {
        if self.digits.is_empty() {
            return Some(other.clone());
        }
        if other.digits.is_empty() {
            return Some(self.clone());
        }
        let exponent = self.exponent.min(other.exponent);
        // Both as little-endian digit vectors of the same power of ten.
        let spread = |q: &Quantity| -> Option<Vec<u8>> {
            let shift = usize::try_from(q.exponent - exponent).ok()?;
            if shift.saturating_add(q.digits.len()) > MAX_QUANTITY_DIGITS {
                return None;
            }
            let mut v = vec![0u8; shift];
            v.extend(q.digits.iter().rev());
            Some(v)
        };
        let (a, b) = (spread(self)?, spread(other)?);
        let (negative, sum) = if self.negative == other.negative {
            (self.negative, add_digits(&a, &b))
        } else if cmp_magnitude(self, other) != Ordering::Less {
            (self.negative, sub_digits(&a, &b))
        } else {
            (other.negative, sub_digits(&b, &a))
        };
        Some(Self::new(negative, sum.into_iter().rev().collect(), exponent))
    }

    fn negated(&self) -> Self {
        Self::new(!self.negative, self.digits.clone(), self.exponent)
    }

    /// `AsInt64`: the value when it is an integer within an `i64`.
    fn as_integer(&self) -> Option<i64> {
        if self.digits.is_empty() {
            return Some(0);
        }
        let exponent = usize::try_from(self.exponent).ok()?;
        if self.digits.len().saturating_add(exponent) > 19 {
            return None;
        }
        let magnitude = self.digits.iter().fold(0u128, |m, &d| m * 10 + u128::from(d)) * 10u128.pow(exponent as u32);
        if self.negative {
            if magnitude == 1u128 << 63 {
                Some(i64::MIN)
            } else {
                i64::try_from(magnitude).ok().map(|m| -m)
            }
        } else {
            i64::try_from(magnitude).ok()
        }
    }

    fn as_float(&self) -> f64 {
        if self.digits.is_empty() {
            return 0.0;
        }
        let digits: String = self.digits.iter().map(|d| char::from(b'0' + d)).collect();
        let sign = if self.negative { "-" } else { "" };
        format!("{sign}{digits}e{}", self.exponent).parse().unwrap_or(0.0)
    }
}

/// Little-endian digit sums.
fn add_digits(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let mut carry = 0u8;
    for i in 0..a.len().max(b.len()) {
        let d = a.get(i).copied().unwrap_or(0) + b.get(i).copied().unwrap_or(0) + carry;
        out.push(d % 10);
        carry = d / 10;
    }
    if carry > 0 {
        out.push(carry);
    }
    out
}

/// Little-endian `a - b`, `a >= b`.
fn sub_digits(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i8;
    for (i, &x) in a.iter().enumerate() {
        let mut d = x as i8 - b.get(i).copied().unwrap_or(0) as i8 - borrow;
        borrow = 0;
        if d < 0 {
            d += 10;
            borrow = 1;
        }
        out.push(d as u8);
    }
    out
}

/// The order of `|a|` and `|b|`, both non-zero.
fn cmp_magnitude(a: &Quantity, b: &Quantity) -> Ordering {
    let magnitude = |q: &Quantity| {
        i64::try_from(q.digits.len())
            .unwrap_or(i64::MAX)
            .saturating_add(q.exponent)
    };
    magnitude(a).cmp(&magnitude(b)).then_with(|| {
        // Same magnitude: digit by digit; with no trailing zeros, the longer
        // of two equal prefixes is the larger.
        a.digits.cmp(&b.digits)
    })
}

/// What `parseQuantityString` splits a quantity into.
struct QuantityParts<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// `parseQuantityString`, ported.
fn quantity_parts(s: &str) -> Result<QuantityParts<'_>, &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(QuantityParts {
            positive,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    if pos >= end {
        return Ok(QuantityParts {
            positive,
            num,
            denom: "",
            suffix: "",
        });
    }
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
        if pos >= end {
            return Ok(QuantityParts {
                positive,
                num,
                denom,
                suffix: "",
            });
        }
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QUANTITY_FORMAT);
    }
    Ok(QuantityParts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// `quantitySuffixer.interpret`: the base and exponent of a suffix.
fn quantity_suffix(suffix: &str) -> Option<(u32, i32)> {
    let known = match suffix {
        "" => (10, 0),
        "n" => (10, -9),
        "u" => (10, -6),
        "m" => (10, -3),
        "k" => (10, 3),
        "M" => (10, 6),
        "G" => (10, 9),
        "T" => (10, 12),
        "P" => (10, 15),
        "E" => (10, 18),
        "Ki" => (2, 10),
        "Mi" => (2, 20),
        "Gi" => (2, 30),
        "Ti" => (2, 40),
        "Pi" => (2, 50),
        "Ei" => (2, 60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E'])?;
            // strconv.ParseInt(.., 10, 64), then int32(): Go truncates.
            let parsed: i64 = go_parse_int(rest)?;
            return Some((10, parsed as i32));
        }
    };
    Some(known)
}

/// `strconv.ParseInt(s, 10, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// ParseQuantity's inf.Dec path: `num.denom × 10^scale10 × 2^two_power`,
/// rounded up (away from zero) to a nano; a binary value (`two_power` > 0)
/// capped at 2^63-1.
fn slow_quantity(negative: bool, num: &str, denom: &str, scale10: i64, two_power: u32) -> Quantity {
    let mut digits: Vec<u8> = num.bytes().chain(denom.bytes()).map(|b| b - b'0').collect();
    let mut exponent = scale10.saturating_sub(i64::try_from(denom.len()).unwrap_or(i64::MAX));
    let leading = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..leading);
    if digits.is_empty() {
        return Quantity::zero();
    }
    if two_power > 0 {
        // × 2^two_power, digit by digit from the least significant.
        let multiplier = 1u128 << two_power;
        let mut carry = 0u128;
        for d in digits.iter_mut().rev() {
            let v = u128::from(*d) * multiplier + carry;
            *d = (v % 10) as u8;
            carry = v / 10;
        }
        let mut head: Vec<u8> = carry.to_string().bytes().map(|b| b - b'0').collect();
        if carry == 0 {
            head.clear();
        }
        head.extend_from_slice(&digits);
        digits = head;
    }
    if exponent < -9 {
        // Round up to a nano: drop what is below, adding one if any was not 0.
        let drop = usize::try_from(-9 - exponent).unwrap_or(usize::MAX);
        let keep = digits.len().saturating_sub(drop);
        let round_up = digits[keep..].iter().any(|&d| d != 0);
        digits.truncate(keep);
        exponent = -9;
        if round_up {
            let mut little: Vec<u8> = digits.into_iter().rev().collect();
            little = add_digits(&little, &[1]);
            digits = little.into_iter().rev().collect();
        }
    }
    let q = Quantity::new(negative, digits, exponent);
    let cap = Quantity::max_allowed(negative);
    if two_power > 0 && cmp_magnitude(&q, &cap) == Ordering::Greater {
        cap
    } else {
        q
    }
}

impl Val for Quantity {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }

    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<Quantity>()
            .is_some_and(|o| self.cmp(o) == Ordering::Equal)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl StaticVal for Quantity {}

// ---------------------------------------------------------------------------
// Semantic versions
// ---------------------------------------------------------------------------

static SEMVER_TYPE: Type = Type::new_unspecified_type("kubernetes.Semver");

/// A semantic version; equal and ordered by precedence (build metadata
/// ignored), as blang/semver compares.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Semver(semver::Version);

impl Val for Semver {
    fn get_type(&self) -> &Type {
        &SEMVER_TYPE
    }

    fn cel_type() -> &'static Type {
        &SEMVER_TYPE
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<Semver>()
            .is_some_and(|o| self.0.cmp_precedence(&o.0) == Ordering::Equal)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl StaticVal for Semver {}

/// `normalizeAndParse` of Kubernetes' semver library: no leading `v`,
/// missing minor and patch filled with 0, leading zeros dropped.
fn normalize_semver(s: &str) -> Result<semver::Version, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_owned).collect();
    for p in &mut parts {
        if p.len() > 1 {
            let trimmed = p.trim_start_matches('0');
            *p = if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                format!("0{trimmed}")
            } else {
                trimmed.to_owned()
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_owned());
        }
        while parts.len() < 3 {
            parts.push("0".to_owned());
        }
    }
    semver::Version::parse(&parts.join(".")).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------
// The environment's functions
// ---------------------------------------------------------------------------

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(build_env()));

fn build_env() -> Env {
    let mut env = Env::stdlib();
    let built = (|| -> Result<(), cel::DeclarationError> {
        env.add_extension(cel::extensions::strings)?;
        env.add_extension(cel::extensions::lists)?;
        env.add_macro(Macro::receiver("bind", 3, bind_macro))?;
        let q = || QUANTITY_TYPE.to_owned();
        let v = || SEMVER_TYPE.to_owned();
        env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], string_to_quantity)?;
        env.add_overload("isQuantity", "is_quantity_string", vec![STRING_TYPE], is_quantity)?;
        env.add_overload("sign", "quantity_sign", vec![q()], quantity_sign)?;
        env.add_member_overload("sign", "quantity_sign_member", q(), vec![], quantity_sign)?;
        env.add_member_overload("isGreaterThan", "quantity_is_greater_than", q(), vec![q()], quantity_gt)?;
        env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], quantity_lt)?;
        env.add_member_overload("compareTo", "quantity_compare_to", q(), vec![q()], quantity_compare)?;
        env.add_member_overload("asApproximateFloat", "quantity_get_float", q(), vec![], quantity_float)?;
        env.add_member_overload("asInteger", "quantity_get_int", q(), vec![], quantity_int)?;
        env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], quantity_is_int)?;
        env.add_member_overload("add", "quantity_add", q(), vec![q()], quantity_add)?;
        env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], quantity_add)?;
        env.add_member_overload("sub", "quantity_sub", q(), vec![q()], quantity_sub)?;
        env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], quantity_sub)?;
        env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], string_to_semver)?;
        env.add_overload(
            "semver",
            "string_bool_to_semver",
            vec![STRING_TYPE, BOOL_TYPE],
            string_to_semver,
        )?;
        env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
        env.add_overload(
            "isSemver",
            "is_semver_string_bool",
            vec![STRING_TYPE, BOOL_TYPE],
            is_semver,
        )?;
        env.add_member_overload("isGreaterThan", "semver_is_greater_than", v(), vec![v()], semver_gt)?;
        env.add_member_overload("isLessThan", "semver_is_less_than", v(), vec![v()], semver_lt)?;
        env.add_member_overload("compareTo", "semver_compare_to", v(), vec![v()], semver_compare)?;
        env.add_member_overload("major", "semver_major", v(), vec![], semver_major)?;
        env.add_member_overload("minor", "semver_minor", v(), vec![], semver_minor)?;
        env.add_member_overload("patch", "semver_patch", v(), vec![], semver_patch)?;
        env.add_overload(
            "sets.contains",
            "list_sets_contains_list",
            vec![LIST_TYPE, LIST_TYPE],
            sets_contains,
        )?;
        env.add_overload(
            "sets.equivalent",
            "list_sets_equivalent_list",
            vec![LIST_TYPE, LIST_TYPE],
            sets_equivalent,
        )?;
        env.add_overload(
            "sets.intersects",
            "list_sets_intersects_list",
            vec![LIST_TYPE, LIST_TYPE],
            sets_intersects,
        )?;
        env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], list_is_sorted)?;
        env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], list_sum)?;
        env.add_member_overload("min", "list_min", LIST_TYPE, vec![], list_min)?;
        env.add_member_overload("max", "list_max", LIST_TYPE, vec![], list_max)?;
        let dyn_type = cel::common::types::DYN_TYPE;
        env.add_overload(RESULT, "dra_result_dyn", vec![dyn_type.to_owned()], dra_result)?;
        env.add_member_overload(
            "indexOf",
            "list_index_of",
            LIST_TYPE,
            vec![dyn_type.to_owned()],
            list_index_of,
        )?;
        env.add_member_overload(
            "lastIndexOf",
            "list_last_index_of",
            LIST_TYPE,
            vec![dyn_type],
            list_last_index_of,
        )?;
        Ok(())
    })();
    if let Err(e) = built {
        // A declaration conflict is a bug of this module, never of an input;
        // the environment stays usable with what was declared.
        tracing::error!("building the DRA CEL environment: {e}");
    }
    env
}

/// `cel.bind(name, init, expr)`: `expr` with `name` bound to `init`, as a
/// comprehension over an empty list (cel-go's `ext.Bindings`).
fn bind_macro(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(name)) if name == "cel") || args.len() != 3 {
        return Ok(None);
    }
    let Expr::Ident(variable) = &args[0].expr else {
        return Err(helper.new_error(args[0].id, "cel.bind() variable names must be simple identifiers"));
    };
    let variable = variable.clone();
    let result = args.pop().unwrap_or_default();
    let init = args.pop().unwrap_or_default();
    let step = helper.next_expr(Expr::Ident(variable.clone()));
    let bind = ComprehensionExpr {
        iter_range: helper.next_expr(Expr::List(ListExpr::new(Vec::new()))),
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        accu_var: variable,
        accu_init: init,
        loop_cond: helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into()))),
        loop_step: step,
        result,
    };
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(bind)))))
}

/// The function every compiled selector is wrapped in: its result, when a
/// bool. Its name cannot be written in an expression.
const RESULT: &str = "@dra_result";

fn dra_result<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    match args.into_iter().next() {
        Some(v) if v.downcast_ref::<CelBool>().is_some() => Ok(v),
        Some(v) => Err(ExecutionError::function_error(
            RESULT,
            format!(
                "CEL result of type {} could not be converted to bool",
                v.get_type().name()
            ),
        )),
        None => Err(ExecutionError::missing_argument_or_target()),
    }
}

fn arg<'a, 'b, 'v, T: StaticVal>(
    args: &'a [CowVal<'b, 'v>],
    i: usize,
    function: &str,
) -> Result<&'a T, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<T>())
        .ok_or_else(|| ExecutionError::function_error(function, "unexpected argument type"))
}

fn string_arg<'a>(args: &'a [CowVal<'_, '_>], i: usize, function: &str) -> Result<&'a str, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelString>())
        .map(|s| s.inner())
        .ok_or_else(|| ExecutionError::function_error(function, "unexpected argument type"))
}

fn bool_arg(args: &[CowVal<'_, '_>], i: usize) -> bool {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelBool>())
        .is_some_and(|b| *b.inner())
}

fn owned<'b, 'v>(v: impl Val + 'v) -> Ret<'b, 'v> {
    Ok(CowVal::owned(v))
}

fn string_to_quantity<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = string_arg(&args, 0, "quantity")?;
    match Quantity::parse(s) {
        Ok(q) => owned(q),
        Err(e) => Err(ExecutionError::function_error("quantity", e)),
    }
}

fn is_quantity<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = string_arg(&args, 0, "isQuantity")?;
    owned(CelBool::from(Quantity::parse(s).is_ok()))
}

fn quantity_sign<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    owned(CelInt::from(arg::<Quantity>(&args, 0, "sign")?.sign()))
}

fn quantity_pair<'a>(
    args: &'a [CowVal<'_, '_>],
    function: &str,
) -> Result<(&'a Quantity, &'a Quantity), ExecutionError> {
    Ok((arg::<Quantity>(args, 0, function)?, arg::<Quantity>(args, 1, function)?))
}

fn quantity_gt<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = quantity_pair(&args, "isGreaterThan")?;
    owned(CelBool::from(a.cmp(b) == Ordering::Greater))
}

fn quantity_lt<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = quantity_pair(&args, "isLessThan")?;
    owned(CelBool::from(a.cmp(b) == Ordering::Less))
}

fn ordering_int(o: Ordering) -> CelInt {
    CelInt::from(match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    })
}

fn quantity_compare<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = quantity_pair(&args, "compareTo")?;
    owned(ordering_int(a.cmp(b)))
}

fn quantity_float<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    owned(CelDouble::from(
        arg::<Quantity>(&args, 0, "asApproximateFloat")?.as_float(),
    ))
}

fn quantity_int<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    match arg::<Quantity>(&args, 0, "asInteger")?.as_integer() {
        Some(i) => owned(CelInt::from(i)),
        None => Err(ExecutionError::function_error(
            "asInteger",
            "cannot convert value to integer",
        )),
    }
}

fn quantity_is_int<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    owned(CelBool::from(
        arg::<Quantity>(&args, 0, "isInteger")?.as_integer().is_some(),
    ))
}

/// The second operand of `add`/`sub`: a quantity or an int.
fn quantity_operand(args: &[CowVal<'_, '_>], function: &str) -> Result<Quantity, ExecutionError> {
    if let Some(i) = args.get(1).and_then(|a| a.downcast_ref::<CelInt>()) {
        return Ok(Quantity::from_int(*i.inner()));
    }
    arg::<Quantity>(args, 1, function).cloned()
}

fn quantity_add<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = arg::<Quantity>(&args, 0, "add")?;
    let b = quantity_operand(&args, "add")?;
    a.add(&b)
        .map(CowVal::owned)
        .ok_or_else(|| ExecutionError::function_error("add", "quantity overflow"))
}

fn quantity_sub<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = arg::<Quantity>(&args, 0, "sub")?;
    let b = quantity_operand(&args, "sub")?;
    a.add(&b.negated())
        .map(CowVal::owned)
        .ok_or_else(|| ExecutionError::function_error("sub", "quantity overflow"))
}

fn parse_semver(args: &[CowVal<'_, '_>], function: &str) -> Result<Result<semver::Version, String>, ExecutionError> {
    let s = string_arg(args, 0, function)?;
    Ok(if bool_arg(args, 1) {
        normalize_semver(s)
    } else {
        semver::Version::parse(s).map_err(|e| e.to_string())
    })
}

fn string_to_semver<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    match parse_semver(&args, "semver")? {
        Ok(v) => owned(Semver(v)),
        Err(e) => Err(ExecutionError::function_error("semver", e)),
    }
}

fn is_semver<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    owned(CelBool::from(parse_semver(&args, "isSemver")?.is_ok()))
}

fn semver_pair<'a>(args: &'a [CowVal<'_, '_>], function: &str) -> Result<(&'a Semver, &'a Semver), ExecutionError> {
    Ok((arg::<Semver>(args, 0, function)?, arg::<Semver>(args, 1, function)?))
}

fn semver_gt<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = semver_pair(&args, "isGreaterThan")?;
    owned(CelBool::from(a.0.cmp_precedence(&b.0) == Ordering::Greater))
}

fn semver_lt<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = semver_pair(&args, "isLessThan")?;
    owned(CelBool::from(a.0.cmp_precedence(&b.0) == Ordering::Less))
}

fn semver_compare<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = semver_pair(&args, "compareTo")?;
    owned(ordering_int(a.0.cmp_precedence(&b.0)))
}

fn semver_major<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    owned(CelInt::from(arg::<Semver>(&args, 0, "major")?.0.major as i64))
}

fn semver_minor<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    owned(CelInt::from(arg::<Semver>(&args, 0, "minor")?.0.minor as i64))
}

fn semver_patch<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    owned(CelInt::from(arg::<Semver>(&args, 0, "patch")?.0.patch as i64))
}

/// The elements of a list argument.
fn elements<'a, 'v>(
    args: &'a [CowVal<'_, 'v>],
    i: usize,
    function: &str,
) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let iterable = args
        .get(i)
        .and_then(|a| a.as_iterable())
        .ok_or_else(|| ExecutionError::function_error(function, "unexpected argument type"))?;
    let mut iter = iterable.iter();
    let mut out = Vec::new();
    while let Some(v) = iter.next() {
        out.push(v);
    }
    Ok(out)
}

fn contains_all(a: &[&dyn Val], b: &[&dyn Val]) -> bool {
    b.iter().all(|x| a.iter().any(|y| y.equals(*x)))
}

fn sets_contains<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = (
        elements(&args, 0, "sets.contains")?,
        elements(&args, 1, "sets.contains")?,
    );
    owned(CelBool::from(contains_all(&a, &b)))
}

fn sets_equivalent<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = (
        elements(&args, 0, "sets.equivalent")?,
        elements(&args, 1, "sets.equivalent")?,
    );
    owned(CelBool::from(contains_all(&a, &b) && contains_all(&b, &a)))
}

fn sets_intersects<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = (
        elements(&args, 0, "sets.intersects")?,
        elements(&args, 1, "sets.intersects")?,
    );
    owned(CelBool::from(b.iter().any(|x| a.iter().any(|y| y.equals(*x)))))
}

fn compare(function: &str, a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    a.as_comparer()
        .ok_or_else(|| ExecutionError::function_error(function, format!("{} is not comparable", a.get_type().name())))?
        .compare(b)
}

fn list_is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let list = elements(&args, 0, "isSorted")?;
    for pair in list.windows(2) {
        if compare("isSorted", pair[0], pair[1])? == Ordering::Greater {
            return owned(CelBool::from(false));
        }
    }
    owned(CelBool::from(true))
}

fn list_sum<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let list = elements(&args, 0, "sum")?;
    let Some((first, rest)) = list.split_first() else {
        return owned(CelInt::from(0));
    };
    let mut total: Box<dyn Val + 'v> = first.clone_as_boxed();
    for x in rest {
        let adder = total
            .as_adder()
            .ok_or_else(|| ExecutionError::function_error("sum", "elements cannot be added"))?;
        let next = adder.add(*x)?.into_owned();
        total = next;
    }
    Ok(CowVal::Owned(total))
}

fn extreme<'b, 'v>(args: Args<'b, 'v>, function: &str, want: Ordering) -> Ret<'b, 'v> {
    let list = elements(&args, 0, function)?;
    let Some((first, rest)) = list.split_first() else {
        return Err(ExecutionError::function_error(
            function,
            format!("{function} called on empty list"),
        ));
    };
    let mut best = *first;
    for x in rest {
        if compare(function, *x, best)? == want {
            best = *x;
        }
    }
    Ok(CowVal::Owned(best.clone_as_boxed()))
}

fn list_min<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    extreme(args, "min", Ordering::Less)
}

fn list_max<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    extreme(args, "max", Ordering::Greater)
}

fn list_index_of<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let list = elements(&args, 0, "indexOf")?;
    let x = args
        .get(1)
        .map(|a| &**a)
        .ok_or_else(ExecutionError::missing_argument_or_target)?;
    let i = list.iter().position(|e| e.equals(x)).map_or(-1, |i| i as i64);
    owned(CelInt::from(i))
}

fn list_last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let list = elements(&args, 0, "lastIndexOf")?;
    let x = args
        .get(1)
        .map(|a| &**a)
        .ok_or_else(ExecutionError::missing_argument_or_target)?;
    let i = list.iter().rposition(|e| e.equals(x)).map_or(-1, |i| i as i64);
    owned(CelInt::from(i))
}

// ---------------------------------------------------------------------------
// Compiling
// ---------------------------------------------------------------------------

/// The stack of the thread that compiles: parsing and checking recurse
/// once per level of the expression, with large frames in unoptimized builds.
/// Reserved, not committed: only what is used is.
const COMPILE_STACK: usize = 64 << 20;

/// Compiles on a thread of its own, whose stack fits the deepest expression
/// the limits let through, whatever the caller's stack (a runtime's worker
/// has 2 MiB). Compiling is rare: selectors are cached.
fn compile(expression: &str) -> Result<Selector, CelError> {
    if expression.len() > MAX_EXPRESSION_LENGTH {
        return Err(CelError::new(
            CelErrorKind::TooLong,
            format!("may not be more than {MAX_EXPRESSION_LENGTH} bytes"),
        ));
    }
    let guarded = || {
        catch_unwind(AssertUnwindSafe(|| compile_here(expression))).unwrap_or_else(|_| {
            Err(CelError::invalid(
                "compilation failed: internal error: the CEL compiler failed",
            ))
        })
    };
    let outcome = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("cel-compile".to_owned())
            .stack_size(COMPILE_STACK)
            .spawn_scoped(scope, guarded)
            .map(|handle| handle.join())
    });
    match outcome {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(CelError::invalid(
            "compilation failed: internal error: the CEL compiler failed",
        )),
        // No thread to be had: compile here, on the caller's stack.
        Err(_) => guarded(),
    }
}

fn compile_here(expression: &str) -> Result<Selector, CelError> {
    if scan_depth(expression) > MAX_RECURSION_DEPTH {
        return Err(recursion_error(MAX_RECURSION_DEPTH));
    }
    let parsed = catch_unwind(AssertUnwindSafe(|| {
        ENV.parser()
            .max_recursion_depth(MAX_NESTING)
            .parse_with_source_info(expression)
    }));
    let (expr, info) = match parsed {
        Ok(Ok(parsed)) => parsed,
        Ok(Err(errors)) => return Err(parse_error(expression, &errors)),
        Err(_) => {
            return Err(CelError::invalid(
                "compilation failed: internal error: the CEL parser failed",
            ));
        }
    };
    if ast_depth(&expr) > MAX_AST_DEPTH {
        return Err(recursion_error(MAX_RECURSION_DEPTH));
    }
    let mut checker = Checker {
        source: expression,
        info: &info,
        scopes: Vec::new(),
        errors: Vec::new(),
    };
    let node = checker.visit(&expr);
    if !checker.errors.is_empty() {
        let mut errors = checker.errors;
        errors.sort_by_key(|(position, _)| *position);
        let shown: Vec<String> = errors
            .iter()
            .map(|((line, column), message)| display_error(expression, *line, *column, message))
            .collect();
        return Err(CelError::invalid(format!("compilation failed: {}", shown.join("\n"))));
    }
    if !matches!(node.info.ty, Ty::Bool | Ty::Dyn | Ty::Any) {
        return Err(CelError::invalid(format!(
            "must evaluate to bool or the unknown type, not {}",
            node.info.ty.name()
        )));
    }
    if node.cost > MAX_COST {
        return Err(CelError::new(
            CelErrorKind::TooComplex,
            "too complex, exceeds cost limit",
        ));
    }
    let expression = IdedExpr {
        id: u64::MAX,
        expr: Expr::Call(cel::common::ast::CallExpr {
            func_name: RESULT.to_owned(),
            target: None,
            args: vec![expr],
        }),
    };
    Ok(Selector {
        expression,
        cost: node.cost,
    })
}

fn recursion_error(limit: usize) -> CelError {
    CelError::invalid(format!(
        "compilation failed: ERROR: <input>:-1:0: expression recursion limit exceeded: {limit}"
    ))
}

/// cel-go's rendering of parse errors: `ERROR: <input>:line:column: message`,
/// the source line and a caret.
fn parse_error(source: &str, errors: &ParseErrors) -> CelError {
    if errors.errors.iter().any(|e| e.msg.contains("Recursion limit of")) {
        return recursion_error(usize::from(MAX_NESTING));
    }
    let shown: Vec<String> = errors
        .errors
        .iter()
        .map(|e| {
            let (line, column) = (
                i64::try_from(e.pos.0).unwrap_or(-1),
                i64::try_from(e.pos.1).unwrap_or(0),
            );
            display_error(source, line, column - 1, &e.msg)
        })
        .collect();
    CelError::invalid(format!("compilation failed: {}", shown.join("\n")))
}

/// `common.Error.ToDisplayString`: `column` counts code points from 0.
fn display_error(source: &str, line: i64, column: i64, message: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{}: {message}", column + 1);
    let snippet = usize::try_from(line - 1).ok().and_then(|l| source.split('\n').nth(l));
    if let Some(snippet) = snippet.filter(|s| s.len() <= 16384) {
        let snippet = snippet.replace('\t', " ");
        out.push_str("\n | ");
        out.push_str(&snippet);
        out.push_str("\n | ");
        let mut chars = snippet.chars();
        for _ in 0..column.max(0) {
            match chars.next() {
                Some(c) if c.len_utf8() > 1 => out.push('\u{ff0e}'),
                Some(_) => out.push('.'),
                None => break,
            }
        }
        out.push(if chars.next().is_some_and(|c| c.len_utf8() > 1) {
            '\u{ff3e}'
        } else {
            '^'
        });
    }
    out
}

/// The (line, 0-based column in code points) of a byte offset, as cel-rust
/// records nodes' offsets.
fn line_column(source: &str, offset: u32) -> (i64, i64) {
    let (mut line, mut column) = (1i64, 0i64);
    let before = source
        .char_indices()
        .take_while(|(i, _)| *i < offset as usize)
        .map(|(_, c)| c);
    for c in before {
        if c == '\n' {
            line += 1;
            column = 0;
        } else {
            column += 1;
        }
    }
    (line, column)
}

/// An upper bound, taken on the text, of how deep the parser recurses for
/// chains of operators, selections and indexes: per open bracket, the chain
/// lengths in force where it opens plus one.
fn scan_depth(text: &str) -> usize {
    #[derive(Clone, Copy, Default)]
    struct Level {
        base: usize,
        chain: usize,
        member: usize,
    }
    let chars: Vec<char> = text.chars().collect();
    let mut levels = vec![Level::default()];
    let mut deepest = 0;
    // Whether the last token ends an operand (so `-` is binary, `(` a call).
    let mut after_operand = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let level = levels.last_mut().map_or(Level::default(), |l| *l);
        let mut now = level;
        match c {
            ' ' | '\t' | '\n' | '\r' | '\x0c' => {
                i += 1;
                continue;
            }
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '"' | '\'' => {
                i = skip_string(&chars, i, false);
                after_operand = true;
                continue;
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let prefix = word.len() <= 2 && word.chars().all(|c| "rRbB".contains(c));
                if prefix && matches!(chars.get(i), Some('"' | '\'')) {
                    let raw = word.contains(['r', 'R']);
                    i = skip_string(&chars, i, raw);
                    after_operand = true;
                } else if word == "in" {
                    now.chain += 1;
                    now.member = 0;
                    after_operand = false;
                } else {
                    after_operand = true;
                }
                if let Some(l) = levels.last_mut() {
                    *l = now;
                }
                deepest = deepest.max(now.base + now.chain + now.member);
                continue;
            }
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    let exp = matches!(chars[i], 'e' | 'E') && !matches!(chars.get(i.wrapping_sub(1)), Some('x' | 'X'));
                    i += 1;
                    if exp && matches!(chars.get(i), Some('+' | '-')) {
                        i += 1;
                    }
                }
                after_operand = true;
                continue;
            }
            '(' | '[' | '{' => {
                // `a[i]` is one more step of a member chain; a call's step
                // was counted at its `.` (or it is a global call).
                if after_operand && c == '[' {
                    now.member += 1;
                }
                if let Some(l) = levels.last_mut() {
                    *l = now;
                }
                levels.push(Level {
                    base: now.base + now.chain + now.member + 1,
                    chain: 0,
                    member: 0,
                });
                after_operand = false;
                i += 1;
                let top = levels.last().map_or(0, |l| l.base);
                deepest = deepest.max(top);
                continue;
            }
            ')' | ']' | '}' => {
                if levels.len() > 1 {
                    levels.pop();
                }
                after_operand = true;
                i += 1;
                continue;
            }
            '.' => {
                now.member += 1;
                after_operand = false;
                i += 1;
            }
            '+' | '-' | '*' | '/' | '%' => {
                if after_operand {
                    now.chain += 1;
                    now.member = 0;
                }
                after_operand = false;
                i += 1;
            }
            '<' | '>' | '=' | '!' => {
                let two = next == Some('=');
                if c != '!' || two {
                    now.chain += 1;
                    now.member = 0;
                }
                after_operand = false;
                i += if two { 2 } else { 1 };
            }
            '&' | '|' | '?' | ':' | ',' => {
                now.chain = 0;
                now.member = 0;
                after_operand = false;
                i += 1;
            }
            _ => {
                after_operand = false;
                i += 1;
            }
        }
        if let Some(l) = levels.last_mut() {
            *l = now;
        }
        deepest = deepest.max(now.base + now.chain + now.member);
    }
    deepest
}

/// The index just past the string literal starting at `start` (a quote).
fn skip_string(chars: &[char], start: usize, raw: bool) -> usize {
    let quote = chars[start];
    let triple = chars.get(start + 1) == Some(&quote) && chars.get(start + 2) == Some(&quote);
    let mut i = start + if triple { 3 } else { 1 };
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && !raw {
            i += 2;
            continue;
        }
        if c == quote {
            if !triple {
                return i + 1;
            }
            if chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote) {
                return i + 3;
            }
        }
        if c == '\n' && !triple {
            return i + 1;
        }
        i += 1;
    }
    chars.len()
}

/// The depth of the expression tree, walked without recursion.
fn ast_depth(root: &IdedExpr) -> usize {
    let mut deepest = 0;
    let mut stack: Vec<(&IdedExpr, usize)> = vec![(root, 1)];
    while let Some((e, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        if depth > MAX_AST_DEPTH {
            break;
        }
        for child in children(e) {
            stack.push((child, depth + 1));
        }
    }
    deepest
}

fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Expr::Call(call) => call.target.as_deref().into_iter().chain(call.args.iter()).collect(),
        Expr::Comprehension(c) => vec![&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => map
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(m) => vec![&m.key, &m.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect(),
        Expr::Struct(s) => s
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(m) => vec![&m.key, &m.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect(),
        Expr::Select(select) => vec![&*select.operand],
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}

// ---------------------------------------------------------------------------
// The static check and the cost estimate
// ---------------------------------------------------------------------------

/// What the static check knows of a value's type.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    /// Unknown (cel-go's `dyn`).
    Dyn,
    /// An attribute's value (declared `any` in Kubernetes).
    Any,
    /// After a reported error: suppresses errors that would follow from it.
    Error,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Type,
    List(Box<Info>),
    Map(Box<Info>, Box<Info>),
    Quantity,
    Semver,
    Device,
}

impl Ty {
    /// cel-go's `FormatCELType`.
    fn name(&self) -> String {
        match self {
            Ty::Dyn | Ty::Error => "dyn".to_owned(),
            Ty::Any => "any".to_owned(),
            Ty::Bool => "bool".to_owned(),
            Ty::Int => "int".to_owned(),
            Ty::Uint => "uint".to_owned(),
            Ty::Double => "double".to_owned(),
            Ty::String => "string".to_owned(),
            Ty::Bytes => "bytes".to_owned(),
            Ty::Null => "null_type".to_owned(),
            Ty::Type => "type".to_owned(),
            Ty::List(e) => format!("list({})", e.ty.name()),
            Ty::Map(k, v) => format!("map({}, {})", k.ty.name(), v.ty.name()),
            Ty::Quantity => "kubernetes.Quantity".to_owned(),
            Ty::Semver => "kubernetes.Semver".to_owned(),
            Ty::Device => "kubernetes.DRADevice".to_owned(),
        }
    }

    fn unknown(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Any | Ty::Error)
    }

    /// A type with no fields, that cannot be a comprehension's range.
    fn scalar(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes | Ty::Null
        )
    }

    fn numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }
}

/// A type and the largest size of its values (a string's length, a list's
/// or map's entries; 1 for scalars).
#[derive(Debug, Clone, PartialEq)]
struct Info {
    ty: Ty,
    size: u64,
}

impl Info {
    fn new(ty: Ty, size: u64) -> Self {
        Self { ty, size }
    }

    fn scalar(ty: Ty) -> Self {
        Self::new(ty, 1)
    }

    fn dyn_sized(size: u64) -> Self {
        Self::new(Ty::Dyn, size)
    }

    fn string(size: u64) -> Self {
        Self::new(Ty::String, size)
    }

    fn list(elem: Info, size: u64) -> Self {
        Self::new(Ty::List(Box::new(elem)), size)
    }

    fn map(key: Info, value: Info, size: u64) -> Self {
        Self::new(Ty::Map(Box::new(key), Box::new(value)), size)
    }

    /// What iterating over it yields (a list's elements, a map's keys).
    fn element(&self) -> Info {
        match &self.ty {
            Ty::List(e) => (**e).clone(),
            Ty::Map(k, _) => (**k).clone(),
            _ => Info::dyn_sized(self.size),
        }
    }

    fn device_field(field: &str) -> Option<Info> {
        let domains = |value: Info| {
            Info::map(
                Info::string(MAX_DOMAIN_LENGTH),
                Info::map(Info::string(MAX_ID_LENGTH), value, MAX_ATTRIBUTES_PER_DEVICE),
                MAX_ATTRIBUTES_PER_DEVICE,
            )
        };
        match field {
            DRIVER => Some(Info::string(MAX_DOMAIN_LENGTH)),
            MULTI_ALLOC => Some(Info::scalar(Ty::Bool)),
            ATTRIBUTES => Some(domains(Info::new(Ty::Any, MAX_ATTRIBUTE_VALUE_LENGTH))),
            CAPACITY => Some(domains(Info::scalar(Ty::Quantity))),
            _ => None,
        }
    }
}

/// The outcome of checking a node: its type and the cost of evaluating it.
struct Node {
    info: Info,
    cost: u64,
}

impl Node {
    fn new(info: Info, cost: u64) -> Self {
        Self { info, cost }
    }
}

/// Identifiers that name types.
#[rustfmt::skip]
const TYPE_NAMES: &[&str] = &[
    "bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type", "optional_type",
];

/// The functions Kubernetes' CEL environment declares for selectors, all
/// libraries (those not implemented here included), by name.
#[rustfmt::skip]
const FUNCTIONS: &[&str] = &[
    // standard
    "size", "int", "uint", "double", "string", "bytes", "bool", "type", "dyn", "duration", "timestamp",
    "matches", "contains", "startsWith", "endsWith", "getFullYear", "getMonth", "getDayOfYear",
    "getDayOfMonth", "getDate", "getDayOfWeek", "getHours", "getMinutes", "getSeconds", "getMilliseconds",
    // optionals
    "value", "hasValue", "or", "orValue", "optMap", "optFlatMap", "unwrapOpt",
    // strings
    "charAt", "indexOf", "lastIndexOf", "lowerAscii", "upperAscii", "replace", "split", "substring", "trim",
    "join", "format",
    // Kubernetes lists, ext lists
    "isSorted", "sum", "min", "max", "slice", "flatten", "distinct", "reverse", "sort", "sortBy", "first",
    "last",
    // regex, URLs
    "find", "findAll", "url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath",
    "getQuery",
    // authorizer
    "path", "group", "serviceAccount", "resource", "subresource", "namespace", "name", "check", "allowed",
    "reason", "errored", "error", "fieldSelector", "labelSelector",
    // quantity, semver
    "quantity", "isQuantity", "sign", "isGreaterThan", "isLessThan", "compareTo", "asApproximateFloat",
    "asInteger", "isInteger", "add", "sub", "semver", "isSemver", "major", "minor", "patch",
    // IP, CIDR, format
    "ip", "isIP", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
    "isGlobalUnicast", "cidr", "isCIDR", "containsIP", "containsCIDR", "masked", "prefixLength", "validate",
    // two-variable comprehensions (macros in cel-go)
    "all", "exists", "existsOne", "exists_one", "transformList", "transformMap", "transformMapEntry",
    // what cel-rust's macros expand to
    "@sortByAssociatedKeys",
];

/// Namespaced functions (`ns.name(...)`); `format.<name>()` as well.
#[rustfmt::skip]
const NAMESPACED: &[&str] = &[
    "optional.of", "optional.ofNonZeroValue", "optional.none", "optional.unwrap", "strings.quote",
    "sets.contains", "sets.equivalent", "sets.intersects", "lists.range", "ip.isCanonical", "format.named",
];

struct Checker<'a> {
    source: &'a str,
    info: &'a SourceInfo,
    /// Variables bound by comprehensions and `cel.bind`, innermost last.
    scopes: Vec<(String, Info)>,
    errors: Vec<((i64, i64), String)>,
}

impl Checker<'_> {
    fn error(&mut self, id: u64, message: String) -> Node {
        let position = self
            .info
            .offset_for(id)
            .map_or((-1, -1), |(start, _)| line_column(self.source, start));
        self.errors.push((position, message));
        Node::new(Info::scalar(Ty::Error), 1)
    }

    fn lookup(&self, name: &str) -> Option<Info> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, info)| info.clone())
            .or_else(|| (name == DEVICE).then(|| Info::scalar(Ty::Device)))
    }

    fn visit(&mut self, e: &IdedExpr) -> Node {
        match &e.expr {
            Expr::Unspecified => Node::new(Info::dyn_sized(1), 0),
            Expr::Literal(l) => Node::new(literal(l), 0),
            Expr::Ident(name) => match self.lookup(name) {
                Some(info) => Node::new(info, 1),
                None if TYPE_NAMES.contains(&name.as_str()) => Node::new(Info::scalar(Ty::Type), 1),
                None => self.error(e.id, format!("undeclared reference to '{name}' (in container '')")),
            },
            Expr::Select(select) => {
                let operand = self.visit(&select.operand);
                let info = self.select(e.id, &operand.info, &select.field);
                let mut node = Node::new(info.info, operand.cost.saturating_add(1).saturating_add(info.cost));
                if select.test {
                    node.info = Info::scalar(if node.info.ty == Ty::Error { Ty::Error } else { Ty::Bool });
                }
                node
            }
            Expr::List(list) => {
                let mut cost = 10u64;
                let mut elem: Option<Info> = None;
                for element in &list.elements {
                    let n = self.visit(element);
                    cost = cost.saturating_add(n.cost);
                    elem = Some(match elem {
                        None => n.info,
                        Some(prev) => join(prev, n.info),
                    });
                }
                let size = list.elements.len() as u64;
                Node::new(Info::list(elem.unwrap_or(Info::dyn_sized(1)), size), cost)
            }
            Expr::Map(map) => {
                let mut cost = 30u64;
                let (mut key, mut value): (Option<Info>, Option<Info>) = (None, None);
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(m) => {
                            let (k, v) = (self.visit(&m.key), self.visit(&m.value));
                            cost = cost.saturating_add(k.cost).saturating_add(v.cost);
                            key = Some(key.map_or(k.info.clone(), |p| join(p, k.info)));
                            value = Some(value.map_or(v.info.clone(), |p| join(p, v.info)));
                        }
                        EntryExpr::StructField(f) => {
                            cost = cost.saturating_add(self.visit(&f.value).cost);
                        }
                    }
                }
                let size = map.entries.len() as u64;
                Node::new(
                    Info::map(
                        key.unwrap_or(Info::dyn_sized(1)),
                        value.unwrap_or(Info::dyn_sized(1)),
                        size,
                    ),
                    cost,
                )
            }
            Expr::Struct(s) => {
                let mut cost = 40u64;
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        cost = cost.saturating_add(self.visit(&f.value).cost);
                    }
                }
                Node::new(Info::dyn_sized(1), cost)
            }
            Expr::Comprehension(c) => self.comprehension(e.id, c),
            Expr::Call(call) => self.call(e, call),
        }
    }

    /// `operand.field`, or `has(operand.field)`: the field's type and the
    /// extra cost of the selection.
    fn select(&mut self, id: u64, operand: &Info, field: &str) -> Node {
        match &operand.ty {
            Ty::Device => match Info::device_field(field) {
                Some(info) => Node::new(info, 0),
                None => self.error(id, format!("undefined field '{field}'")),
            },
            Ty::Map(_, value) => Node::new((**value).clone(), 0),
            ty if ty.scalar() => self.error(id, format!("type '{}' does not support field selection", ty.name())),
            Ty::Error => Node::new(Info::scalar(Ty::Error), 0),
            _ => Node::new(Info::dyn_sized(operand.size.max(MAX_ATTRIBUTE_VALUE_LENGTH)), 0),
        }
    }

    fn comprehension(&mut self, id: u64, c: &ComprehensionExpr) -> Node {
        let range = self.visit(&c.iter_range);
        if range.info.ty.scalar() {
            return self.error(
                id,
                format!(
                    "expression of type '{}' cannot be range of a comprehension (must be list, map, or dynamic)",
                    range.info.ty.name()
                ),
            );
        }
        let n = range.info.size;
        let init = self.visit(&c.accu_init);
        let mut element = range.info.element();
        let value = match &range.info.ty {
            Ty::Map(_, v) => (**v).clone(),
            _ => element.clone(),
        };
        if let (Ty::List(_), Some(_)) = (&range.info.ty, &c.iter_var2) {
            // Two variables over a list: the index, then the element.
            element = Info::scalar(Ty::Int);
        }
        let base = self.scopes.len();
        self.scopes.push((c.accu_var.clone(), init.info.clone()));
        self.scopes.push((c.iter_var.clone(), element));
        if let Some(v2) = &c.iter_var2 {
            self.scopes.push((v2.clone(), value));
        }
        let cond = self.visit(&c.loop_cond);
        let step = self.visit(&c.loop_step);
        self.scopes.truncate(base);
        // The accumulator after the last step: a list growing by each step.
        let accu = match (&step.info.ty, &init.info.ty) {
            (Ty::List(_), _) if step.info.size > init.info.size => Info::new(
                step.info.ty.clone(),
                init.info
                    .size
                    .saturating_add(n.saturating_mul(step.info.size - init.info.size)),
            ),
            _ if init.info.ty.unknown() || step.info.ty.unknown() => init.info.clone(),
            _ => step.info.clone(),
        };
        self.scopes.push((c.accu_var.clone(), accu));
        let result = self.visit(&c.result);
        self.scopes.truncate(base);
        let cost = range
            .cost
            .saturating_add(init.cost)
            .saturating_add(n.saturating_mul(cond.cost.saturating_add(step.cost)))
            .saturating_add(result.cost);
        Node::new(result.info, cost)
    }

    fn call(&mut self, e: &IdedExpr, call: &cel::common::ast::CallExpr) -> Node {
        let name = call.func_name.as_str();
        // `ns.f(...)`: a namespaced function, unless `ns` is a variable.
        let mut qualified = None;
        if let Some(Expr::Ident(ns)) = call.target.as_deref().map(|t| &t.expr)
            && self.lookup(ns).is_none()
        {
            let full = format!("{ns}.{name}");
            if NAMESPACED.contains(&full.as_str()) || (ns == "format" && call.args.is_empty()) {
                qualified = Some(full);
            }
        }
        let target = match (&qualified, call.target.as_deref()) {
            (None, Some(t)) => Some(self.visit(t)),
            _ => None,
        };
        let args: Vec<Node> = call.args.iter().map(|a| self.visit(a)).collect();
        let mut cost = target
            .iter()
            .chain(args.iter())
            .fold(1u64, |c, n| c.saturating_add(n.cost));
        let function = qualified.as_deref().unwrap_or(name);
        let is_operator =
            function.starts_with('_') || function.starts_with('@') || function == "!_" || function == "-_";
        if !is_operator && !FUNCTIONS.contains(&function) && !NAMESPACED.contains(&function) {
            return self.error(e.id, format!("undeclared reference to '{function}' (in container '')"));
        }
        let infos: Vec<&Info> = target.iter().chain(args.iter()).map(|n| &n.info).collect();
        if infos.iter().any(|i| i.ty == Ty::Error) {
            return Node::new(Info::scalar(Ty::Error), cost);
        }
        if let Some(message) = operator_mismatch(function, &infos) {
            return self.error(e.id, message);
        }
        let (info, extra) = result_of(function, &infos, &call.args);
        if function == operators::CONDITIONAL && args.len() == 3 {
            // Only one branch is evaluated: the dearer one counts.
            cost = 1u64
                .saturating_add(args[0].cost)
                .saturating_add(args[1].cost.max(args[2].cost));
        }
        Node::new(info, cost.saturating_add(extra))
    }
}

/// The literal's type and size.
fn literal(l: &LiteralValue) -> Info {
    match l {
        LiteralValue::Boolean(_) => Info::scalar(Ty::Bool),
        LiteralValue::Int(_) => Info::scalar(Ty::Int),
        LiteralValue::UInt(_) => Info::scalar(Ty::Uint),
        LiteralValue::Double(_) => Info::scalar(Ty::Double),
        LiteralValue::Null => Info::scalar(Ty::Null),
        LiteralValue::String(s) => Info::string(s.inner().chars().count() as u64),
        LiteralValue::Bytes(b) => Info::new(Ty::Bytes, b.inner().len() as u64),
    }
}

/// The type of two values that may be either: the same type, else unknown;
/// the larger size.
fn join(a: Info, b: Info) -> Info {
    let size = a.size.max(b.size);
    let ty = match (a.ty, b.ty) {
        (Ty::List(x), Ty::List(y)) => Ty::List(Box::new(join(*x, *y))),
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => Ty::Map(Box::new(join(*k1, *k2)), Box::new(join(*v1, *v2))),
        (x, y) if x == y => x,
        _ => Ty::Dyn,
    };
    Info::new(ty, size)
}

/// The same type as both, when both are known.
fn same(a: &Ty, b: &Ty) -> bool {
    a.name() == b.name()
}

/// cel-go's checker error for an arithmetic or ordering operator applied to
/// operands of known types no overload takes.
fn operator_mismatch(function: &str, infos: &[&Info]) -> Option<String> {
    let [a, b] = infos else { return None };
    let (a, b) = (&a.ty, &b.ty);
    let known = |t: &Ty| !t.unknown() && !matches!(t, Ty::List(_) | Ty::Map(..));
    if !known(a) || !known(b) {
        return None;
    }
    let ok = match function {
        operators::ADD => same(a, b) && matches!(a, Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes),
        operators::SUBSTRACT | operators::MULTIPLY | operators::DIVIDE => same(a, b) && a.numeric(),
        operators::MODULO => same(a, b) && matches!(a, Ty::Int | Ty::Uint),
        operators::LESS | operators::LESS_EQUALS | operators::GREATER | operators::GREATER_EQUALS => {
            (a.numeric() && b.numeric()) || (same(a, b) && matches!(a, Ty::Bool | Ty::String | Ty::Bytes))
        }
        _ => true,
    };
    (!ok).then(|| {
        format!(
            "found no matching overload for '{function}' applied to '({}, {})'",
            a.name(),
            b.name()
        )
    })
}

/// The result of a function or operator applied to operands of these types,
/// and the cost of the call beyond its operands.
fn result_of(function: &str, infos: &[&Info], args: &[IdedExpr]) -> (Info, u64) {
    let first = infos.first().map(|i| (*i).clone()).unwrap_or(Info::dyn_sized(1));
    let second = infos.get(1).map(|i| (*i).clone()).unwrap_or(Info::dyn_sized(1));
    let total: u64 = infos.iter().fold(0u64, |t, i| t.saturating_add(i.size));
    let tenth = |size: u64| size.div_ceil(10);
    let strings = |info: &Info| matches!(info.ty, Ty::String | Ty::Bytes | Ty::List(_) | Ty::Dyn | Ty::Any);
    let boolean = Info::scalar(Ty::Bool);
    let int = Info::scalar(Ty::Int);
    match function {
        operators::LOGICAL_AND | operators::LOGICAL_OR | operators::LOGICAL_NOT | operators::NOT_STRICTLY_FALSE => {
            (boolean, 0)
        }
        operators::EQUALS
        | operators::NOT_EQUALS
        | operators::LESS
        | operators::LESS_EQUALS
        | operators::GREATER
        | operators::GREATER_EQUALS => {
            let extra = if strings(&first) || strings(&second) {
                tenth(first.size.min(second.size))
            } else {
                0
            };
            (boolean, extra)
        }
        operators::IN => {
            let extra = match second.ty {
                Ty::Map(..) => 1,
                _ => second.size,
            };
            (boolean, extra)
        }
        operators::ADD => {
            let size = first.size.saturating_add(second.size);
            let ty = match (&first.ty, &second.ty) {
                // An element type unifies with an unknown one (`[] + [1]`).
                (Ty::List(x), Ty::List(y)) if x.ty.unknown() => Ty::List(y.clone()),
                (Ty::List(x), Ty::List(y)) if y.ty.unknown() => Ty::List(x.clone()),
                (Ty::List(_), Ty::List(_)) => join(first.clone(), second.clone()).ty,
                (x, _) if !x.unknown() => x.clone(),
                (_, y) if !y.unknown() => y.clone(),
                _ => Ty::Dyn,
            };
            let extra = if strings(&first) || strings(&second) {
                tenth(size)
            } else {
                0
            };
            (
                Info::new(
                    ty,
                    if matches!(first.ty, Ty::Int | Ty::Uint | Ty::Double) {
                        1
                    } else {
                        size
                    },
                ),
                extra,
            )
        }
        operators::SUBSTRACT | operators::MULTIPLY | operators::DIVIDE | operators::MODULO => {
            let ty = match (&first.ty, &second.ty) {
                (x, _) if !x.unknown() => x.clone(),
                (_, y) if !y.unknown() => y.clone(),
                _ => Ty::Dyn,
            };
            (Info::scalar(ty), 0)
        }
        operators::NEGATE => (
            Info::scalar(if first.ty.unknown() { Ty::Dyn } else { first.ty.clone() }),
            0,
        ),
        operators::CONDITIONAL => (
            join(second, infos.get(2).map(|i| (*i).clone()).unwrap_or(Info::dyn_sized(1))),
            0,
        ),
        operators::INDEX | operators::OPT_INDEX | operators::OPT_SELECT => {
            let info = match &first.ty {
                Ty::List(e) => (**e).clone(),
                Ty::Map(_, v) => (**v).clone(),
                _ => Info::dyn_sized(first.size.max(MAX_ATTRIBUTE_VALUE_LENGTH)),
            };
            if function == operators::INDEX {
                (info, 0)
            } else {
                (Info::dyn_sized(info.size), 0)
            }
        }
        "size" => (int, 1),
        "int" | "compareTo" | "major" | "minor" | "patch" | "asInteger" | "sign" => (int, 1),
        "uint" => (Info::scalar(Ty::Uint), 1),
        "double" | "asApproximateFloat" => (Info::scalar(Ty::Double), 1),
        "bool" => (boolean, 1),
        "bytes" => (Info::new(Ty::Bytes, first.size), tenth(first.size)),
        "string" => (Info::string(first.size.max(32)), tenth(first.size)),
        "type" => (Info::scalar(Ty::Type), 1),
        "dyn" => (Info::dyn_sized(first.size), 0),
        "matches" | "find" => {
            let (text, regex) = if infos.len() == 2 {
                (first.size, second.size)
            } else {
                (second.size, first.size)
            };
            let info = if function == "find" {
                Info::string(text)
            } else {
                boolean
            };
            (info, tenth(text).saturating_add(regex))
        }
        "findAll" => (
            Info::list(Info::string(first.size), first.size),
            tenth(first.size).saturating_add(second.size),
        ),
        "contains" | "startsWith" | "endsWith" => (boolean, tenth(total)),
        "isQuantity" | "isSemver" | "isGreaterThan" | "isLessThan" | "isInteger" | "isURL" | "isIP" | "isCIDR" => {
            (boolean, tenth(total))
        }
        "quantity" => (Info::scalar(Ty::Quantity), tenth(total)),
        "semver" => (Info::scalar(Ty::Semver), tenth(total)),
        "add" | "sub" if first.ty == Ty::Quantity => (Info::scalar(Ty::Quantity), 1),
        "lowerAscii" | "upperAscii" | "trim" | "reverse" if first.ty == Ty::String => {
            (first.clone(), tenth(first.size))
        }
        "substring" => (Info::string(first.size), tenth(first.size)),
        "charAt" => (Info::string(1), tenth(first.size)),
        "replace" => {
            let replacement = infos.get(2).map_or(1, |i| i.size.max(1));
            (
                Info::string(first.size.saturating_mul(replacement)),
                tenth(first.size.saturating_mul(replacement)),
            )
        }
        "split" => (
            Info::list(Info::string(first.size), first.size.saturating_add(1)),
            tenth(first.size.saturating_add(second.size)),
        ),
        "join" => {
            let element = first.element();
            let size =
                first.size.saturating_mul(
                    element
                        .size
                        .saturating_add(if infos.len() > 1 { second.size } else { 0 }),
                );
            (Info::string(size), tenth(size))
        }
        "format" => {
            let size = first
                .size
                .saturating_add(second.size.saturating_mul(second.element().size.max(32)));
            (Info::string(size), tenth(size))
        }
        "strings.quote" => (
            Info::string(first.size.saturating_mul(2).saturating_add(2)),
            tenth(first.size),
        ),
        "indexOf" | "lastIndexOf" => {
            let extra = if matches!(first.ty, Ty::List(_)) {
                first.size
            } else {
                tenth(total)
            };
            (int, extra)
        }
        "sets.contains" | "sets.equivalent" | "sets.intersects" => {
            (boolean, first.size.saturating_mul(second.size).saturating_mul(2))
        }
        "isSorted" => (boolean, first.size),
        "sum" | "min" | "max" => (first.element(), first.size),
        "slice" | "distinct" | "reverse" | "sort" | "@sortByAssociatedKeys" => {
            let extra = match function {
                "distinct" | "sort" | "@sortByAssociatedKeys" => first.size.saturating_mul(first.size),
                _ => first.size,
            };
            (first.clone(), extra)
        }
        "flatten" => {
            let inner = first.element();
            let size = first.size.saturating_mul(inner.size.max(1));
            (Info::list(inner.element(), size), size)
        }
        "lists.range" => {
            let n = match args.first().map(|a| &a.expr) {
                Some(Expr::Literal(LiteralValue::Int(i))) => u64::try_from(*i.inner()).unwrap_or(0),
                _ => MAX_RANGE_SIZE,
            }
            .min(MAX_RANGE_SIZE);
            (Info::list(int, n), n)
        }
        _ => (
            Info::dyn_sized(infos.iter().map(|i| i.size).max().unwrap_or(1)),
            tenth(total),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device from its JSON form (`spec.devices[]` of a slice).
    fn device(json: serde_json::Value) -> Device {
        serde_json::from_value(json).expect("a device")
    }

    fn no_device() -> Device {
        device(serde_json::json!({"name": "d"}))
    }

    fn compiled(expression: &str) -> Selector {
        Selector::compile(expression).unwrap_or_else(|e| panic!("{expression}: {e}"))
    }

    fn eval(expression: &str, driver: &str, d: &Device) -> Result<bool, CelError> {
        compiled(expression).matches(driver, d)
    }

    fn compile_error(expression: &str) -> CelError {
        match Selector::compile(expression) {
            Ok(_) => panic!("{expression}: compiled"),
            Err(e) => e,
        }
    }

    const DRIVER: &str = "dra.example.com";

    fn attrs(attributes: serde_json::Value) -> Device {
        device(serde_json::json!({"name": "d", "attributes": attributes}))
    }

    #[test]
    fn constants_and_compile_errors() {
        assert_eq!(eval("true", "", &no_device()), Ok(true));
        assert_eq!(eval("false", "", &no_device()), Ok(false));
        let e = compile_error("?!");
        assert!(
            e.message()
                .starts_with("compilation failed: ERROR: <input>:1:1: Syntax error:"),
            "{e}"
        );
        assert_eq!(e.kind(), CelErrorKind::Invalid);
        assert_eq!(
            compile_error("1").message(),
            "must evaluate to bool or the unknown type, not int"
        );
        assert_eq!(
            compile_error("device.attributes[\"a\"]").message(),
            "must evaluate to bool or the unknown type, not map(string, any)"
        );
        assert_eq!(
            compile_error("device").message(),
            "must evaluate to bool or the unknown type, not kubernetes.DRADevice"
        );
        assert_eq!(
            compile_error("device.capacity[\"a\"].b").message(),
            "must evaluate to bool or the unknown type, not kubernetes.Quantity"
        );
        assert_eq!(
            compile_error("device.attributes[\"a\"].b + 1").message(),
            "must evaluate to bool or the unknown type, not int"
        );
        assert_eq!(
            compile_error("[1, 2].map(x, x * 2)").message(),
            "must evaluate to bool or the unknown type, not list(int)"
        );
        assert_eq!(
            compile_error("'a' + 'b'").message(),
            "must evaluate to bool or the unknown type, not string"
        );
        // A bool attribute is a fine result.
        compiled("device.attributes[\"a\"].b");
        compiled("cel.bind(x, device.attributes[\"a\"], x.b)");
    }

    /// The four CEL refusals kube-apiserver v1.36.2 answered
    /// (tests/data/apiserver-answers), word for word.
    #[test]
    fn compile_errors_read_as_kube_apiserver_answered() {
        assert_eq!(
            compile_error("device.driver == ").message(),
            "compilation failed: ERROR: <input>:1:18: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | device.driver == \n | .................^"
        );
        assert_eq!(
            compile_error("device.attributes[\"gpu.example.com\"].model ==").message(),
            "compilation failed: ERROR: <input>:1:46: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | device.attributes[\"gpu.example.com\"].model ==\n | .............................................^"
        );
        assert_eq!(
            compile_error("device.vendor == \"x\"").message(),
            "compilation failed: ERROR: <input>:1:7: undefined field 'vendor'\n | device.vendor == \"x\"\n | ......^"
        );
        assert_eq!(
            compile_error("device.driver").message(),
            "must evaluate to bool or the unknown type, not string"
        );
        compiled("device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0");
        compiled("device.driver == \"gpu.example.com\"");
    }

    #[test]
    fn undeclared_references_and_type_errors() {
        assert_eq!(
            compile_error("x").message(),
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n | x\n | ^"
        );
        assert_eq!(
            compile_error("a && device.foo").message(),
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'a' (in container '')\n | a && device.foo\n | ^\nERROR: <input>:1:12: undefined field 'foo'\n | a && device.foo\n | ...........^"
        );
        let e = compile_error("device.attributes[\"dra.example.com\"].name.includes(\"fish\")");
        assert!(e.message().contains("undeclared reference to 'includes'"), "{e}");
        let e = compile_error("has(device.vendor)");
        assert!(e.message().contains("undefined field 'vendor'"), "{e}");
        let e = compile_error("1 + 'a' == 2");
        assert!(
            e.message()
                .contains("found no matching overload for '_+_' applied to '(int, string)'"),
            "{e}"
        );
        let e = compile_error("device.driver.x == 1");
        assert!(
            e.message().contains("type 'string' does not support field selection"),
            "{e}"
        );
        let e = compile_error("1.exists(x, true)");
        assert!(e.message().contains("cannot be range of a comprehension"), "{e}");
        // Wide characters are marked as cel-go marks them.
        let e = compile_error("'é' == device.vendor");
        assert_eq!(
            e.message(),
            "compilation failed: ERROR: <input>:1:14: undefined field 'vendor'\n | 'é' == device.vendor\n | .．...........^"
        );
        let e = compile_error("'é' == ");
        assert!(
            e.message()
                .starts_with("compilation failed: ERROR: <input>:1:8: Syntax error:"),
            "{e}"
        );
        assert!(e.message().ends_with("\n | 'é' == \n | .．.....^"), "{e}");
        // Known functions compile; variables shadow nothing they should not.
        compiled("device.attributes.all(d, device.attributes[d].all(k, k != ''))");
        compiled("sets.contains([1, 2], [1]) && [3, 1].sort() == [1, 3]");
        compiled("optional.of(1).hasValue()");
        compiled("type(device.driver) == string");
    }

    #[test]
    fn attributes_qualified_and_not() {
        let d = attrs(serde_json::json!({
            "name": {"bool": true},
            "other.example.com/name": {"string": "fish"},
            "count": {"int": 3},
        }));
        for (expression, want) in [
            ("device.attributes[\"dra.example.com\"].name", true),
            ("device.attributes[\"dra.example.com\"][\"name\"]", true),
            ("cel.bind(dra, device.attributes[\"dra.example.com\"], dra.name)", true),
            ("device.attributes[\"other.example.com\"].name == \"fish\"", true),
            ("device.attributes[\"dra.example.com\"].count > 2", true),
            (
                "device.attributes[\"dra.example.com\"].count == 3 && device.driver == \"dra.example.com\"",
                true,
            ),
            ("\"dra.example.com\" in device.attributes", true),
            ("\"no-such-domain\" in device.attributes", false),
            ("has(device.attributes[\"other.example.com\"].name)", true),
            ("has(device.attributes[\"x\"].name)", false),
            ("device.attributes.exists_one(x, x == \"dra.example.com\")", true),
            (
                "device.attributes[\"dra.example.com\"].exists_one(x, x == \"count\")",
                true,
            ),
            ("size(device.attributes) == 2", true),
            ("device.attributes[\"x\"].size() == 0", true),
            ("device.allowMultipleAllocations == false", true),
        ] {
            assert_eq!(eval(expression, DRIVER, &d), Ok(want), "{expression}");
        }
        assert_eq!(eval("device.driver == \"\"", "", &no_device()), Ok(true));
    }

    #[test]
    fn missing_keys_fail_at_evaluation() {
        for expression in [
            "device.attributes[\"no-such-domain\"].noSuchAttr.isGreaterThan(quantity(\"0\"))",
            "device.attributes[\"no-such-domain\"][\"noSuchAttr\"].isGreaterThan(quantity(\"0\"))",
        ] {
            let e = eval(expression, DRIVER, &no_device()).unwrap_err();
            assert_eq!(e.message(), "no such key: noSuchAttr", "{expression}");
            assert_eq!(e.kind(), CelErrorKind::Evaluation);
        }
        let d = attrs(serde_json::json!({"s": {"string": "x"}}));
        let e = eval("device.attributes[\"dra.example.com\"].s", DRIVER, &d).unwrap_err();
        assert_eq!(e.message(), "CEL result of type string could not be converted to bool");
    }

    #[test]
    fn unsupported_attributes_fail_whatever_is_read() {
        let d = attrs(serde_json::json!({"names": {"strings": ["fish", "bird"]}}));
        let e = eval("device.attributes[\"dra.example.com\"].names", DRIVER, &d).unwrap_err();
        assert_eq!(e.message(), "attribute names: unsupported attribute value");
        let d = attrs(serde_json::json!({"v": {"version": "1.0"}}));
        let e = eval("true", DRIVER, &d).unwrap_err();
        assert!(e.message().starts_with("attribute v: parse semantic version: "), "{e}");
    }

    #[test]
    fn allow_multiple_allocations() {
        let yes = device(serde_json::json!({"name": "d", "allowMultipleAllocations": true}));
        let no = device(serde_json::json!({"name": "d", "allowMultipleAllocations": false}));
        assert_eq!(eval("device.allowMultipleAllocations == true", DRIVER, &yes), Ok(true));
        assert_eq!(eval("device.allowMultipleAllocations == false", DRIVER, &no), Ok(true));
        assert_eq!(
            eval("device.allowMultipleAllocations == false", DRIVER, &no_device()),
            Ok(true)
        );
        assert_eq!(eval("device.allowMultipleAllocations", DRIVER, &yes), Ok(true));
    }

    #[test]
    fn capacity_and_quantities() {
        let d = device(serde_json::json!({"name": "d", "capacity": {
            "memory": {"value": "1Mi"},
            "other.example.com/cores": {"value": "1500m"},
        }}));
        for expression in [
            "device.capacity[\"dra.example.com\"].memory.isGreaterThan(quantity(\"1Ki\"))",
            "\"memory\" in device.capacity[\"dra.example.com\"] && device.capacity[\"dra.example.com\"].memory.isGreaterThan(quantity(\"1Ki\"))",
            "device.capacity[\"dra.example.com\"].memory.compareTo(quantity(\"1048576\")) == 0",
            "device.capacity[\"dra.example.com\"][\"memory\"] == quantity(\"1024Ki\")",
            "device.capacity[\"other.example.com\"].cores.isLessThan(quantity(\"2\"))",
            "device.capacity[\"other.example.com\"].cores.compareTo(quantity(\"1.5\")) == 0",
            "device.capacity.exists_one(x, x == \"dra.example.com\")",
            "device.capacity[\"dra.example.com\"].exists_one(x, x == \"memory\")",
        ] {
            assert_eq!(eval(expression, DRIVER, &d), Ok(true), "{expression}");
        }
        assert_eq!(
            eval(
                "!(\"name\" in device.capacity[\"dra.example.com\"]) || device.capacity[\"dra.example.com\"].name.isGreaterThan(quantity(\"1Ki\"))",
                DRIVER,
                &no_device()
            ),
            Ok(true)
        );
        for expression in [
            "quantity(\"1Gi\") == quantity(\"1073741824\")",
            "quantity(\"1Gi\").compareTo(quantity(\"1073741824\")) == 0",
            "quantity(\"1500m\").isLessThan(quantity(\"2\"))",
            "quantity(\"1500m\").compareTo(quantity(\"2\")) == -1",
            "quantity(\"2\").compareTo(quantity(\"1500m\")) == 1",
            "quantity(\"0.1\") == quantity(\"100m\")",
            "quantity(\"1e3\") == quantity(\"1k\")",
            "quantity(\"-1\").isLessThan(quantity(\"0\"))",
            "quantity(\"-2\").isLessThan(quantity(\"-1\"))",
            "quantity(\"1e1000\").isGreaterThan(quantity(\"9e999\"))",
            "quantity(\"0.0000000001\") == quantity(\"1n\")",
            "quantity(\"99999999999999999999\").isGreaterThan(quantity(\"9223372036854775807\"))",
            "quantity(\"99999999999999999999Ki\") == quantity(\"9223372036854775807\")",
            "quantity(\"1e1000\").add(quantity(\"1\")).isGreaterThan(quantity(\"1e1000\"))",
            "quantity(\"1\").sub(quantity(\"1.000000001\")) == quantity(\"-1n\")",
            "quantity(\"50k\").add(quantity(\"20\")) == quantity(\"50.02k\")",
            "quantity(\"50k\").add(20).isLessThan(quantity(\"50021\"))",
            "quantity(\"50k\").sub(quantity(\"20\")) == quantity(\"49.98k\")",
            "quantity(\"50k\").sub(20) == quantity(\"49980\")",
            "quantity(\"50k\").add(20).sub(quantity(\"100k\")).asInteger() == -49980",
            "quantity(\"50k\").add(20).sub(quantity(\"100k\")).sub(-50000).asInteger() == 20",
            "quantity(\"1.5\").isInteger() == false && quantity(\"2k\").isInteger()",
            "quantity(\"1.5Ki\").asInteger() == 1536",
            "quantity(\"500m\").asApproximateFloat() == 0.5",
            "sign(quantity(\"-5\")) == -1 && quantity(\"0\").sign() == 0 && quantity(\"3m\").sign() == 1",
            "isQuantity(\"1Ki\") && !isQuantity(\"1KK\") && !isQuantity(\"\") && !isQuantity(\"1 \")",
        ] {
            assert_eq!(eval(expression, DRIVER, &no_device()), Ok(true), "{expression}");
        }
        let e = eval("quantity(\"x\").sign() == 0", DRIVER, &no_device()).unwrap_err();
        assert_eq!(e.message(), QUANTITY_FORMAT);
        let e = eval(
            "quantity(\"99999999999999999999G\").asInteger() == 0",
            DRIVER,
            &no_device(),
        )
        .unwrap_err();
        assert_eq!(e.message(), "cannot convert value to integer");
        let e = eval("quantity(\"1e100000\").add(1).sign() == 1", DRIVER, &no_device()).unwrap_err();
        assert_eq!(e.message(), "quantity overflow");
    }

    #[test]
    fn quantities_parse_as_kubernetes_does() {
        let q = |s: &str| Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        let n = |negative: bool, v: u128, e: i64| Quantity::from_u128(negative, v, e);
        assert_eq!(q("1Gi"), n(false, 1 << 30, 0));
        assert_eq!(q("."), Quantity::zero());
        assert_eq!(q("-0"), Quantity::zero());
        assert_eq!(q("+"), Quantity::zero());
        assert_eq!(q("1.G"), n(false, 1, 9));
        assert_eq!(q("0.1Ki"), n(false, 1024, -1));
        assert_eq!(q("-1.5n"), n(true, 2, -9));
        assert_eq!(q("1e-12"), n(false, 1, -9));
        assert_eq!(q("10e18"), n(false, 1, 19));
        assert_eq!(q("100E"), n(false, 1, 20));
        // Decimal values are not capped, binary ones are.
        assert_eq!(q("-12345678901234567890"), n(true, 12345678901234567890, 0));
        assert_eq!(q("16Ei"), n(false, i64::MAX as u128, 0));
        assert_eq!(q("0.5Ki"), n(false, 512, 0));
        let long = format!("1{}", "0".repeat(100));
        assert_eq!(q(&long), n(false, 1, 100));
        assert_eq!(q(&format!("{long}1")).cmp(&q(&format!("{long}0"))), Ordering::Greater);
        for bad in ["", "1 ", "a", "1KK", "1e", "1e+", "1.5.5", "--1"] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Quantity::parse("1Q"), Err(QUANTITY_FORMAT));
        assert_eq!(Quantity::parse("1ee3"), Err(QUANTITY_SUFFIX));
    }

    #[test]
    fn semantic_versions() {
        let d = attrs(serde_json::json!({"v": {"version": "1.2.3-rc.1+build"}}));
        for expression in [
            "device.attributes[\"dra.example.com\"].v.isGreaterThan(semver(\"0.0.1\"))",
            "device.attributes[\"dra.example.com\"].v.isLessThan(semver(\"1.2.3\"))",
            "device.attributes[\"dra.example.com\"].v == semver(\"1.2.3-rc.1\")",
            "device.attributes[\"dra.example.com\"].v.compareTo(semver(\"1.2.3-rc.1+other\")) == 0",
            "device.attributes[\"dra.example.com\"].v.major() == 1",
            "device.attributes[\"dra.example.com\"].v.minor() == 2",
            "device.attributes[\"dra.example.com\"].v.patch() == 3",
            "semver(\"1.0.0\").compareTo(semver(\"2.0.0\")) == -1",
            "device.attributes[\"dra.example.com\"].v.isGreaterThan(semver(\"v0.0.1\", true)) && isSemver(\"v1.0.0\", true)",
            "semver(\"01.01\", true) == semver(\"1.1.0\")",
            "!isSemver(\"v1.0\") && !isSemver(\"1.0\") && isSemver(\"1.0.0\")",
        ] {
            assert_eq!(eval(expression, DRIVER, &d), Ok(true), "{expression}");
        }
        assert!(eval("semver(\"Three\").major() == 3", DRIVER, &d).is_err());
    }

    #[test]
    fn strings_lists_and_sets() {
        let d = attrs(serde_json::json!({"services": {"string": "some_example_value"}, "s": {"string": "asymetric"}}));
        for expression in [
            "device.attributes[\"dra.example.com\"].services.split(\"example\").size() >= 2",
            "device.attributes[\"dra.example.com\"].s.matches(\"[^a]?sym\")",
            "device.attributes[\"dra.example.com\"].s.upperAscii() == \"ASYMETRIC\"",
            "device.attributes[\"dra.example.com\"].s.startsWith(\"asy\") && device.attributes[\"dra.example.com\"].s.contains(\"met\")",
            "[\"a\", \"b\"].join(\",\") == \"a,b\"",
            "sets.contains([1, 2, 3], [1, 3]) && sets.equivalent([1, 2], [2, 1]) && !sets.intersects([1], [2])",
            "[1, 2, 3].isSorted() && [3, 1, 2].sum() == 6 && [3, 1, 2].min() == 1 && [3, 1, 2].max() == 3",
            "[1, 2, 3].indexOf(2) == 1 && [1, 2, 1].lastIndexOf(1) == 2",
            "lists.range(3) == [0, 1, 2] && [[1], [2]].flatten() == [1, 2]",
            "[1, 2, 3].filter(x, x > 1).map(x, x * 2) == [4, 6]",
        ] {
            assert_eq!(eval(expression, DRIVER, &d), Ok(true), "{expression}");
        }
    }

    #[test]
    fn everything_at_once() {
        let d = device(serde_json::json!({"name": "d",
            "attributes": {
                "bool": {"bool": true},
                "int": {"int": 1},
                "string": {"string": "fish"},
                "version": {"version": "1.0.0"},
            },
            "capacity": {"quantity": {"value": "1Mi"}},
        }));
        let expression = r#"
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"#;
        assert_eq!(eval(expression, DRIVER, &d), Ok(true));
        let selector = compiled(expression);
        assert!(selector.estimated_cost() < 1000, "{}", selector.estimated_cost());
    }

    #[test]
    fn cost_is_bounded_at_compile_time() {
        let l = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
        let expensive = format!(
            "{l}.all(x, {l}.all(y, {l}.all(z, {l}.all(z2, {l}.all(z3, {l}.all(z4, {l}.all(z5, int('1'.find('[0-9]*')) < 100)))))))"
        );
        let e = compile_error(&expensive);
        assert_eq!(e.kind(), CelErrorKind::TooComplex);
        assert_eq!(e.message(), "too complex, exceeds cost limit");
        // Growing strings are counted by their size.
        let mut doubling = "'xxxxxxxxxx'".to_owned();
        for i in 0..40 {
            doubling = format!("cel.bind(v{i}, {doubling}, v{i} + v{i})");
        }
        let e = compile_error(&format!("{doubling}.size() > 0"));
        assert_eq!(e.kind(), CelErrorKind::TooComplex, "{e}");
        assert_eq!(
            compile_error("lists.range(device.attributes['a'].n).size() > 0 && lists.range(1000000).all(x, x > 0)")
                .kind(),
            CelErrorKind::TooComplex
        );
        // Typical selectors are cheap.
        let nested = compiled("device.attributes.all(d, device.attributes[d].all(k, k.size() < 100))");
        assert!(nested.estimated_cost() < 10_000, "{}", nested.estimated_cost());
        let long = format!("device.driver == '{}'", "x".repeat(MAX_EXPRESSION_LENGTH));
        assert_eq!(compile_error(&long).kind(), CelErrorKind::TooLong);
    }

    /// Nothing a user can write panics or exhausts the stack of a test
    /// thread (2 MiB).
    #[test]
    fn pathological_expressions_are_refused_not_fatal() {
        let max = MAX_EXPRESSION_LENGTH;
        let fit = |unit: &str, tail: &str| {
            let n = (max - tail.len()) / unit.len();
            format!("{}{tail}", unit.repeat(n))
        };
        let cases = [
            fit("1+", "1"),
            fit("1*", "1"),
            fit("1<", "1"),
            fit("a.b", ""),
            format!("a{}", "[0]".repeat((max - 1) / 3)),
            format!("a{}", ".f()".repeat((max - 1) / 4)),
            format!("{}1{}", "(".repeat(max / 2 - 1), ")".repeat(max / 2 - 1)),
            format!("{}1{}", "[".repeat(max / 2 - 1), "]".repeat(max / 2 - 1)),
            format!("{}1{}", "int(".repeat(max / 5 - 1), ")".repeat(max / 5 - 1)),
            fit("true ? 1 : ", "1"),
            fit("-", "1"),
            fit("!", "true"),
            fit("true && ", "true"),
            fit("a || ", "a"),
            fit("'a' + ", "'a'"),
            format!("[{}1]", "1, ".repeat((max - 3) / 3)),
            "ma[[[[[[[[[[[[[[[[[[[[[[[[[[[[\x0c\0\0\0[[[[putTo?[[[[[[ep".to_owned(),
            "\"unterminated".to_owned(),
            "'''".to_owned(),
            "{1: 2, 1: 3}[1] == 2".to_owned(),
            "[1][5] == 1".to_owned(),
            "1 / 0 == 1".to_owned(),
            "9223372036854775807 + 1 > 0".to_owned(),
        ];
        for case in &cases {
            // Refused or not, it must come back.
            let result = Selector::compile(case);
            if let Ok(selector) = result {
                let _ = selector.matches(DRIVER, &no_device());
            }
        }
        // The deepest expressions accepted evaluate on a 1 MiB stack.
        let deep = [
            format!("{} == 249", vec!["1"; 249].join(" + ")),
            format!(
                "{}{}{} == 150",
                "(".repeat(94),
                vec!["1"; 150].join(" + "),
                ")".repeat(94)
            ),
            format!("{}true{}", "(".repeat(95), ")".repeat(95)),
            format!(
                "{}1{} == {}1{}",
                "[".repeat(95),
                "]".repeat(95),
                "[".repeat(95),
                "]".repeat(95)
            ),
            format!(
                "{}true{}",
                (0..60)
                    .map(|i| format!("[1].exists(x{i}, x{i} == 1 && "))
                    .collect::<String>(),
                ")".repeat(60)
            ),
            format!(
                "{}1{}.size() == 1",
                (0..45).map(|i| format!("[1].map(x{i}, ")).collect::<String>(),
                ")".repeat(45)
            ),
            format!("{}true{}", "false ? false : ".repeat(95), ""),
        ];
        for expression in &deep {
            let selector = compiled(expression);
            let d = no_device();
            let outcome = std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .stack_size(1 << 20)
                    .spawn_scoped(scope, || selector.matches(DRIVER, &d))
                    .expect("a thread")
                    .join()
                    .expect("no overflow")
            });
            assert_eq!(outcome, Ok(true), "{expression}");
        }
        let e = compile_error(&fit("1+", "1"));
        assert!(e.message().contains("expression recursion limit exceeded"), "{e}");
    }

    #[test]
    fn the_cache_compiles_once() {
        let cache = CelCache::new(2);
        let a = cache.get("device.driver == 'a'");
        let again = cache.get("device.driver == 'a'");
        assert!(Arc::ptr_eq(&a, &again));
        assert!(a.is_ok());
        let bad = cache.get("device.vendor");
        assert!(Arc::ptr_eq(&bad, &cache.get("device.vendor")));
        assert!(bad.is_err());
        // A third expression evicts the least recently used one.
        let _ = cache.get("device.driver == 'a'");
        let _ = cache.get("device.driver == 'c'");
        assert_eq!(cache.len(), 2);
        assert!(Arc::ptr_eq(&a, &cache.get("device.driver == 'a'")));
        assert!(!Arc::ptr_eq(&bad, &cache.get("device.vendor")));
        let none = CelCache::new(0);
        assert!(none.get("true").is_ok());
        assert!(none.is_empty());
        // Shared between threads.
        let shared = Arc::new(CelCache::new(8));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || shared.get("device.driver == 'x'"))
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().expect("no panic")).collect();
        assert!(results.windows(2).all(|w| Arc::ptr_eq(&w[0], &w[1])));
    }
}
