// The atomic operations behind Habitat's AtomicWord and AtomicBox (Internal/Primitives).
//
// NB: Habitat supports systems older than the `Synchronization` module (macOS 15, iOS 18), so
// the few atomic operations the stack needs are the compiler's own builtins, which the thread
// sanitizer understands. Everything here is `static inline`, so it compiles into the caller.
#ifndef HABITAT_SHIMS_H
#define HABITAT_SHIMS_H

#include <stdint.h>
#include <stdbool.h>

static inline uint64_t habitat_atomic_load_acquire_u64(const uint64_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void habitat_atomic_store_release_u64(uint64_t *p, uint64_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline uint64_t habitat_atomic_fetch_add_u64(uint64_t *p, uint64_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}

static inline void *habitat_atomic_exchange_ptr(void **p, void *v) {
  return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
}

static inline bool habitat_atomic_cas_ptr(void **p, void *expected, void *desired) {
  return __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/// The path of the loaded image (executable or shared library) that holds `address`, or NULL:
/// to name the images that each hold a copy of Habitat. The string lives as long as the image.
const char *habitat_image_path(const void *address);

#endif
