/*===- CAPIFromC.c - the C API header compiles as C and is callable ------===*/

#include "mlagen-c/Runtime.h"

#include <string.h>

/* Called by CAPITest.cpp: a compile-only runtime refuses a kernel with
 * NO_BACKEND and says why. Returns 0 when all went as expected. */
int mlagen_test_c_api_round_trip(void) {
  mlagen_runtime *runtime = NULL;
  mlagen_kernel *kernel = NULL;
  char canonical[256];
  if (mlagen_signature_canonicalize(
          "prefill qk=192 v=128 hq=16 hkv=16 mask=causal window=-1,-1 "
          "softcap=0 lse=1 q=bf16 kv=bf16 out=bf16 layout=varlen tile_q=0 "
          "arch=sm_90a",
          canonical, sizeof(canonical)) != MLAGEN_OK)
    return 1;
  if (mlagen_runtime_create(NULL,
                            MLAGEN_RUNTIME_COMPILE_ONLY |
                                MLAGEN_RUNTIME_NO_DISK_CACHE,
                            &runtime) != MLAGEN_OK)
    return 2;
  if (mlagen_get_kernel(runtime, canonical, &kernel) != MLAGEN_NO_BACKEND ||
      kernel != NULL || strlen(mlagen_last_error()) == 0) {
    mlagen_runtime_destroy(runtime);
    return 3;
  }
  mlagen_runtime_destroy(runtime);
  return 0;
}
