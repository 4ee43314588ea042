/* Minimal freestanding <stdlib.h> for the wit-bindgen C bindings
 * (wasm32-unknown-unknown / wasm32-freestanding have no libc).
 * Implemented in src/wasmsched.c over the per-call arena. */
#ifndef WASMSCHED_LIBC_STDLIB_H
#define WASMSCHED_LIBC_STDLIB_H
#include <stddef.h>
void *malloc(size_t size);
void *calloc(size_t n, size_t size);
void *realloc(void *ptr, size_t size);
void free(void *ptr);
_Noreturn void abort(void);
#endif
