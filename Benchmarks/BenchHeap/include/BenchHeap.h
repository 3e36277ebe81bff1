#ifndef BENCH_HEAP_H
#define BENCH_HEAP_H
#include <stddef.h>

/// Bytes the process's heap has handed out and not yet taken back (glibc's mallinfo2: small
/// blocks plus mmapped ones); 0 where the C library does not say.
size_t bench_heap_in_use(void);

#endif
