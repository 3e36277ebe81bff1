// NB: dladdr needs _GNU_SOURCE with glibc; it is in libc itself since glibc 2.34 and in
// libSystem on Apple platforms.
#define _GNU_SOURCE
#include <dlfcn.h>
#include "HabitatShims.h"

const char *habitat_image_path(const void *address) {
  Dl_info info;
  if (dladdr(address, &info) == 0) return 0;
  return info.dli_fname;
}
