//! What instantiating a component costs the host before any of its code
//! runs: every core instance wasmtime creates gets a `VMContext` (16 bytes
//! per defined global, 32 per function reference, ...) from its on-demand
//! allocator, outside any store limiter. A module of a million globals is a
//! few KB gzipped and 16 MiB per instance; a component may instantiate it
//! many times. This reads the component once, before it is compiled, and
//! bounds the number of core instances and the bytes they take; the bytes
//! are then drawn from the host's memory budget at every instantiation.
//!
//! The sizes follow wasmtime 48's `VMOffsets` (64-bit): within a few bytes
//! of what wasmtime allocates for every guest the SDKs build.

use wasmparser::{
    ComponentAlias, ComponentExternalKind, ComponentInstance, ComponentOuterAliasKind, ComponentTypeRef, ElementItems,
    Encoding, ExternalKind, Instance, Parser, Payload, TypeRef,
};

/// Core instances one component instance may create (the SDKs' components
/// create 3 or 4; Python's 38).
pub const MAX_INSTANCES: usize = 64;
/// Host memory one core instance may take before its code runs (Python's
/// largest takes 242 KB, JavaScript's 205 KB).
pub const MAX_CORE_INSTANCE_BYTES: usize = 1 << 20;
/// Host memory all core instances of one component instance may take
/// together (Python's take 422 KB).
pub const MAX_COMPONENT_INSTANCE_BYTES: usize = 4 << 20;

/// A component's cost at instantiation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// Core instances it creates.
    pub core_instances: usize,
    /// Bytes of its largest core instance.
    pub largest: usize,
    /// Bytes of all its core instances.
    pub bytes: usize,
}

impl Shape {
    /// Checks the shape against the limits, naming the one it passes.
    pub fn check(&self) -> Result<(), String> {
        if self.core_instances > MAX_INSTANCES {
            return Err(format!(
                "it creates {} core instances (limit {MAX_INSTANCES})",
                self.core_instances
            ));
        }
        if self.largest > MAX_CORE_INSTANCE_BYTES {
            return Err(format!(
                "one of its core instances takes {} KiB of host memory before it runs (limit {} KiB)",
                self.largest >> 10,
                MAX_CORE_INSTANCE_BYTES >> 10
            ));
        }
        if self.bytes > MAX_COMPONENT_INSTANCE_BYTES {
            return Err(format!(
                "its core instances take {} KiB of host memory before they run (limit {} KiB)",
                self.bytes >> 10,
                MAX_COMPONENT_INSTANCE_BYTES >> 10
            ));
        }
        Ok(())
    }
}

/// What sizes one core module's `VMContext`.
#[derive(Debug, Default)]
struct Module {
    imported_funcs: usize,
    imported_other: usize,
    memories: usize,
    tables: usize,
    globals: usize,
    /// Exported functions and those in element segments: each gets a
    /// function reference in the context.
    escaped: usize,
    data_segments: usize,
}

impl Module {
    fn bytes(&self) -> usize {
        // The instance's own header, the context's header, imports,
        // definitions, function references (imports have one too), a start
        // reference, passive data.
        128 + 48
            + 24 * self.imported_other
            + 32 * self.imported_funcs
            + 24 * self.memories
            + 16 * self.tables
            + 16 * self.globals
            + 32 * (self.escaped + self.imported_funcs)
            + 32
            + 12 * self.data_segments
    }
}

/// A component's index spaces as far as they matter here: the size of each
/// core module, and the shape of each component (instantiated once).
#[derive(Debug, Default)]
struct Scope {
    /// Bytes per core module index (none: not known, from an instance's
    /// export).
    modules: Vec<Option<usize>>,
    components: Vec<Shape>,
    /// What instantiating this component once creates.
    shape: Shape,
    /// Instantiations of modules of unknown size.
    unknown: usize,
}

impl Scope {
    fn add(&mut self, s: Shape) {
        self.shape.core_instances = self.shape.core_instances.saturating_add(s.core_instances);
        self.shape.bytes = self.shape.bytes.saturating_add(s.bytes);
        self.shape.largest = self.shape.largest.max(s.largest);
    }
}

enum Frame {
    Module(Module),
    Component(Scope),
}

/// Reads the shape of a component (a core module alone has one instance).
pub fn shape(bytes: &[u8]) -> Result<Shape, String> {
    let mut stack: Vec<Frame> = Vec::new();
    // The largest module anywhere, for modules whose size is not known where
    // they are instantiated.
    let mut largest_module = 0usize;
    let mut unknown = 0usize;
    let mut top = None;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| format!("it is not valid WebAssembly: {e}"))?;
        match payload {
            Payload::Version { encoding, .. } => stack.push(match encoding {
                Encoding::Module => Frame::Module(Module::default()),
                Encoding::Component => Frame::Component(Scope::default()),
            }),
            Payload::End(_) => match stack.pop() {
                Some(Frame::Module(m)) => {
                    let b = m.bytes();
                    largest_module = largest_module.max(b);
                    match stack.last_mut() {
                        Some(Frame::Component(c)) => c.modules.push(Some(b)),
                        _ => {
                            top = Some(Shape {
                                core_instances: 1,
                                largest: b,
                                bytes: b,
                            })
                        }
                    }
                }
                Some(Frame::Component(c)) => {
                    unknown = unknown.saturating_add(c.unknown);
                    match stack.last_mut() {
                        Some(Frame::Component(parent)) => parent.components.push(c.shape),
                        _ => top = Some(c.shape),
                    }
                }
                None => {}
            },
            other => match stack.last_mut() {
                Some(Frame::Module(m)) => module_section(m, other)?,
                Some(Frame::Component(_)) => component_section(&mut stack, other)?,
                None => {}
            },
        }
    }
    let mut s = top.unwrap_or_default();
    // Every module of unknown size counted as the largest there is.
    s.bytes = s.bytes.saturating_add(unknown.saturating_mul(largest_module));
    if unknown > 0 {
        s.largest = s.largest.max(largest_module);
    }
    Ok(s)
}

fn module_section(m: &mut Module, payload: Payload<'_>) -> Result<(), String> {
    let e = |e: wasmparser::BinaryReaderError| format!("it is not valid WebAssembly: {e}");
    match payload {
        Payload::ImportSection(r) => {
            for i in r.into_imports() {
                match i.map_err(e)?.ty {
                    TypeRef::Func(_) | TypeRef::FuncExact(_) => m.imported_funcs += 1,
                    _ => m.imported_other += 1,
                }
            }
        }
        Payload::TableSection(r) => m.tables += r.count() as usize,
        Payload::MemorySection(r) => m.memories += r.count() as usize,
        Payload::GlobalSection(r) => m.globals += r.count() as usize,
        Payload::ExportSection(r) => {
            for x in r {
                if matches!(x.map_err(e)?.kind, ExternalKind::Func | ExternalKind::FuncExact) {
                    m.escaped += 1;
                }
            }
        }
        Payload::ElementSection(r) => {
            for el in r {
                m.escaped += match el.map_err(e)?.items {
                    ElementItems::Functions(f) => f.count() as usize,
                    ElementItems::Expressions(_, x) => x.count() as usize,
                };
            }
        }
        Payload::DataSection(r) => m.data_segments += r.count() as usize,
        _ => {}
    }
    Ok(())
}

/// The component scope at `i` of the stack.
fn scope(stack: &mut [Frame], i: usize) -> &mut Scope {
    match &mut stack[i] {
        Frame::Component(c) => c,
        Frame::Module(_) => unreachable!("only component frames are looked up"),
    }
}

fn component_section(stack: &mut [Frame], payload: Payload<'_>) -> Result<(), String> {
    let e = |e: wasmparser::BinaryReaderError| format!("it is not valid WebAssembly: {e}");
    // The component frames, innermost last (an outer alias counts outwards).
    let outer = |stack: &[Frame], count: u32| -> Option<usize> {
        let scopes: Vec<usize> = (0..stack.len())
            .filter(|i| matches!(stack[*i], Frame::Component(_)))
            .collect();
        scopes.len().checked_sub(1 + count as usize).map(|i| scopes[i])
    };
    let Some(Frame::Component(_)) = stack.last() else {
        return Ok(());
    };
    let here = stack.len() - 1;
    match payload {
        Payload::InstanceSection(r) => {
            for i in r {
                if let Instance::Instantiate { module_index, .. } = i.map_err(e)? {
                    let c = scope(stack, here);
                    match c.modules.get(module_index as usize).copied().flatten() {
                        Some(b) => c.add(Shape {
                            core_instances: 1,
                            largest: b,
                            bytes: b,
                        }),
                        None => {
                            c.shape.core_instances = c.shape.core_instances.saturating_add(1);
                            c.unknown += 1;
                        }
                    }
                }
            }
        }
        Payload::ComponentInstanceSection(r) => {
            for i in r {
                if let ComponentInstance::Instantiate { component_index, .. } = i.map_err(e)? {
                    let c = scope(stack, here);
                    let s = c.components.get(component_index as usize).copied().unwrap_or_default();
                    c.add(s);
                }
            }
        }
        Payload::ComponentAliasSection(r) => {
            for a in r {
                match a.map_err(e)? {
                    ComponentAlias::Outer {
                        kind: ComponentOuterAliasKind::CoreModule,
                        count,
                        index,
                    } => {
                        let b = outer(stack, count)
                            .and_then(|o| scope(stack, o).modules.get(index as usize).copied().flatten());
                        scope(stack, here).modules.push(b);
                    }
                    ComponentAlias::Outer {
                        kind: ComponentOuterAliasKind::Component,
                        count,
                        index,
                    } => {
                        let s = outer(stack, count)
                            .and_then(|o| scope(stack, o).components.get(index as usize).copied())
                            .unwrap_or_default();
                        scope(stack, here).components.push(s);
                    }
                    ComponentAlias::InstanceExport {
                        kind: ComponentExternalKind::Module,
                        ..
                    } => scope(stack, here).modules.push(None),
                    ComponentAlias::InstanceExport {
                        kind: ComponentExternalKind::Component,
                        ..
                    } => scope(stack, here).components.push(Shape::default()),
                    _ => {}
                }
            }
        }
        Payload::ComponentImportSection(r) => {
            for i in r {
                match i.map_err(e)?.ty {
                    ComponentTypeRef::Module(_) => scope(stack, here).modules.push(None),
                    ComponentTypeRef::Component(_) => scope(stack, here).components.push(Shape::default()),
                    _ => {}
                }
            }
        }
        Payload::ComponentExportSection(r) => {
            // An export is a new index of the item it exports.
            for x in r {
                let x = x.map_err(e)?;
                let c = scope(stack, here);
                match x.kind {
                    ComponentExternalKind::Module => {
                        let b = c.modules.get(x.index as usize).copied().flatten();
                        c.modules.push(b);
                    }
                    ComponentExternalKind::Component => {
                        let s = c.components.get(x.index as usize).copied().unwrap_or_default();
                        c.components.push(s);
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_what_they_bound() {
        let s = Shape {
            core_instances: 65,
            largest: 10,
            bytes: 100,
        };
        assert_eq!(s.check().unwrap_err(), "it creates 65 core instances (limit 64)");
        let s = Shape {
            core_instances: 2,
            largest: 2 << 20,
            bytes: 4 << 20,
        };
        assert!(
            s.check()
                .unwrap_err()
                .starts_with("one of its core instances takes 2048 KiB")
        );
        let s = Shape {
            core_instances: 40,
            largest: 512 << 10,
            bytes: 5 << 20,
        };
        assert!(s.check().unwrap_err().starts_with("its core instances take 5120 KiB"));
    }

    /// A core module alone: one instance, its context sized by its globals.
    #[test]
    fn a_module_of_many_globals_is_sized_by_them() {
        // (module (global i32 (i32.const 0)) x 100000), encoded by hand.
        let n: u32 = 100_000;
        let mut globals = leb(n);
        for _ in 0..n {
            globals.extend([0x7f, 0x00, 0x41, 0x00, 0x0b]); // i32, immutable, i32.const 0, end
        }
        let mut bytes = b"\0asm\x01\0\0\0".to_vec();
        bytes.push(6); // the global section
        bytes.extend(leb(globals.len() as u32));
        bytes.extend(globals);
        let s = shape(&bytes).unwrap();
        assert_eq!(s.core_instances, 1);
        assert!(
            s.largest > 16 * n as usize && s.largest < 16 * n as usize + 1024,
            "{s:?}"
        );
    }

    fn leb(mut v: u32) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }
}
