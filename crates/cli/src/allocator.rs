//! The C allocator's settings for a long-running scheduler.

/// Above this a block is its own mapping (glibc: 128 KiB at first, raised
/// by itself up to 32 MiB as large blocks are freed).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 8 << 20;

/// Free memory at the top of a heap beyond this goes back to the kernel.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 16 << 20;

/// Keeps the memory a scheduling cycle frees for the next cycle.
///
/// glibc gives the free top of each thread's heap back to the kernel once
/// it exceeds its trim threshold, which starts at 128 KiB. A cycle at tens
/// of thousands of nodes allocates and frees vectors of that size on the
/// threads that filter and score; depending on what else lies at the top of
/// the heap, each cycle's memory was given back and faulted in again, page
/// by page, in the next one (2.6–2.9× the page faults and half again the
/// system time at 50 000 nodes, `docs/benchmarks.md`). Fixed thresholds of
/// a few megabytes keep that memory, whatever the layout; setting them
/// turns glibc's own adjustment off, so both are set. An operator's own
/// settings (`GLIBC_TUNABLES`, `MALLOC_*_` variables) are left as they are.
#[allow(unsafe_code)]
pub fn keep_freed_memory() {
    let own = std::env::vars_os().any(|(k, _)| {
        let k = k.to_string_lossy();
        k == "GLIBC_TUNABLES" || (k.starts_with("MALLOC_") && k.ends_with('_'))
    });
    if own {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's parameters; it is called
    // before any other thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}
