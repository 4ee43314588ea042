;; The WASI preview-1 functions the Go runtime and standard library import,
;; served inside the component so that it imports nothing but the plugin
;; world (the host gives plugins no WASI). wit-component uses this module as
;; the adapter for `wasi_snapshot_preview1` (plugins/lang/go.sh):
;; - clock_time_get: a counter that advances 1 us per call (the runtime only
;;   needs it monotonic; plugins get time from nowhere, by design);
;; - random_get: xorshift bytes (map hash seeds);
;; - fd_write: accepted and dropped (use wasmsched.Log to log);
;; - args, environment: empty; no preopened directories, no files;
;; - poll_oneoff (sleeping): ENOSYS; proc_exit: traps.
(module
  (import "env" "memory" (memory 0))
  (global $clock (mut i64) (i64.const 0))
  (global $seed (mut i64) (i64.const 0x9e3779b97f4a7c15))
  (func (export "sched_yield") (result i32) i32.const 0)
  (func (export "proc_exit") (param i32) unreachable)
  (func (export "args_get") (param i32 i32) (result i32) i32.const 0)
  (func (export "args_sizes_get") (param i32 i32) (result i32)
    (i32.store (local.get 0) (i32.const 0))
    (i32.store (local.get 1) (i32.const 0))
    i32.const 0)
  (func (export "environ_get") (param i32 i32) (result i32) i32.const 0)
  (func (export "environ_sizes_get") (param i32 i32) (result i32)
    (i32.store (local.get 0) (i32.const 0))
    (i32.store (local.get 1) (i32.const 0))
    i32.const 0)
  (func (export "clock_time_get") (param i32 i64 i32) (result i32)
    (global.set $clock (i64.add (global.get $clock) (i64.const 1000)))
    (i64.store (local.get 2) (global.get $clock))
    i32.const 0)
  (func (export "fd_write") (param $fd i32) (param $iovs i32) (param $n i32) (param $out i32) (result i32)
    (local $sum i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $sum (i32.add (local.get $sum) (i32.load offset=4 (local.get $iovs))))
        (local.set $iovs (i32.add (local.get $iovs) (i32.const 8)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (i32.store (local.get $out) (local.get $sum))
    i32.const 0)
  (func (export "random_get") (param $buf i32) (param $len i32) (result i32)
    (local $x i64)
    (local.set $x (global.get $seed))
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $len)))
        (local.set $x (i64.xor (local.get $x) (i64.shl (local.get $x) (i64.const 13))))
        (local.set $x (i64.xor (local.get $x) (i64.shr_u (local.get $x) (i64.const 7))))
        (local.set $x (i64.xor (local.get $x) (i64.shl (local.get $x) (i64.const 17))))
        (i32.store8 (local.get $buf) (i32.wrap_i64 (local.get $x)))
        (local.set $buf (i32.add (local.get $buf) (i32.const 1)))
        (local.set $len (i32.sub (local.get $len) (i32.const 1)))
        (br $next)))
    (global.set $seed (local.get $x))
    i32.const 0)
  (func (export "poll_oneoff") (param i32 i32 i32 i32) (result i32) i32.const 52)
  ;; EBADF (8): there are no files.
  (func (export "fd_close") (param i32) (result i32) i32.const 8)
  (func (export "fd_read") (param i32 i32 i32 i32) (result i32) i32.const 8)
  (func (export "fd_fdstat_set_flags") (param i32 i32) (result i32) i32.const 8)
  (func (export "fd_prestat_get") (param i32 i32) (result i32) i32.const 8)
  (func (export "fd_prestat_dir_name") (param i32 i32 i32) (result i32) i32.const 8)
  ;; stdin, stdout, stderr: character devices with no rights; others EBADF.
  (func (export "fd_fdstat_get") (param $fd i32) (param $buf i32) (result i32)
    (if (i32.gt_u (local.get $fd) (i32.const 2)) (then (return (i32.const 8))))
    (i64.store (local.get $buf) (i64.const 2))
    (i64.store offset=8 (local.get $buf) (i64.const 0))
    (i64.store offset=16 (local.get $buf) (i64.const 0))
    i32.const 0)
)
