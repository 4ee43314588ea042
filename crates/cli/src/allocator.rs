//! The binary's memory allocator: mimalloc, except in a process that asks
//! for the C allocator.
//!
//! A scheduling cycle allocates and frees small vectors and statuses by
//! the thousand, and the API client, the watchers and the API server
//! double parse and build objects for every pod. With glibc's malloc a
//! tenth to a quarter of each thread's time went to allocating and freeing
//! (`malloc_consolidate`, `_int_free`, arena locks); at 50 000 nodes its
//! heaps gave each cycle's memory back to the kernel and faulted it in
//! again. mimalloc's thread-local free lists do neither (figures in
//! `docs/benchmarks.md`, "mimalloc, now inside the memory targets").
//!
//! The compiler process (`wasmsched compile-plugin`) keeps the C
//! allocator: its memory cap (`RLIMIT_DATA`) counts every private writable
//! mapping, and mimalloc reserves and commits its arenas in large steps
//! that a cap of a few tens of MiB does not admit.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// Set (to any value) in the environment of a process of this binary that
/// must use the C allocator.
pub const SYSTEM_ALLOCATOR: &str = match SYSTEM_ALLOCATOR_C.to_str() {
    Ok(name) => name,
    Err(_) => panic!("the variable's name is ASCII"),
};
/// The same name, for `getenv` (which must not allocate).
const SYSTEM_ALLOCATOR_C: &std::ffi::CStr = c"WASMSCHED_SYSTEM_ALLOCATOR";

const UNDECIDED: u8 = 0;
const MIMALLOC: u8 = 1;
const C_ALLOCATOR: u8 = 2;

/// Which allocator this process uses, decided at its first allocation
/// (before `main`, on one thread) and never changed after: a block is
/// always freed by the allocator that gave it.
static CHOICE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// mimalloc, or the C allocator where [`SYSTEM_ALLOCATOR`] is set.
pub struct Allocator;

#[global_allocator]
static GLOBAL: Allocator = Allocator;

/// The allocator this process chose.
#[inline]
fn chosen() -> &'static dyn GlobalAlloc {
    let c = match CHOICE.load(Ordering::Relaxed) {
        MIMALLOC => false,
        C_ALLOCATOR => true,
        _ => decide(),
    };
    if c { &System } else { &mimalloc::MiMalloc }
}

#[cold]
#[allow(unsafe_code)]
fn decide() -> bool {
    // SAFETY: getenv reads the environment and allocates nothing; no
    // thread changes the environment this early.
    let c = unsafe { !libc::getenv(SYSTEM_ALLOCATOR_C.as_ptr()).is_null() };
    CHOICE.store(if c { C_ALLOCATOR } else { MIMALLOC }, Ordering::Relaxed);
    c
}

// SAFETY: every call goes to the one allocator the process chose (a block
// is freed or resized by the allocator that gave it), which upholds
// GlobalAlloc's contract itself; the callers' guarantees are passed on.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { chosen().alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { chosen().alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { chosen().dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe { chosen().realloc(ptr, layout, new_size) }
    }
}
