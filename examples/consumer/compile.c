/* A C host of libmlagen.so: canonicalize a signature and compile its kernel
 * without a GPU (the first run compiles, later runs hit the disk cache).
 *
 *   mlagen-consumer-c ["prefill qk=192 v=128 hq=16 hkv=16 mask=causal arch=sm_90a"]
 */
#include "mlagen-c/Runtime.h"

#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, int status) {
  fprintf(stderr, "%s: %s: %s\n", what, mlagen_status_name(status),
          mlagen_last_error());
  return 1;
}

int main(int argc, char **argv) {
  const char *signature =
      argc > 1 ? argv[1]
               : "prefill qk=192 v=128 hq=16 hkv=16 mask=causal arch=sm_90a";
  char canonical[512];
  int status = mlagen_signature_canonicalize(signature, canonical,
                                             sizeof(canonical));
  if (status != MLAGEN_OK)
    return fail("signature", status);

  mlagen_runtime *runtime = NULL;
  status = mlagen_runtime_create(NULL, MLAGEN_RUNTIME_COMPILE_ONLY, &runtime);
  if (status != MLAGEN_OK)
    return fail("runtime", status);
  printf("backend: %s\n", mlagen_runtime_backend(runtime));

  size_t size = 0;
  status = mlagen_compile(runtime, canonical, NULL, 0, &size);
  if (status != MLAGEN_OK) {
    mlagen_runtime_destroy(runtime);
    return fail("compile", status);
  }
  unsigned char *binary = malloc(size);
  status = mlagen_compile(runtime, canonical, binary, size, &size);
  if (status == MLAGEN_OK)
    printf("compiled '%s': %zu bytes, %s\n", canonical, size,
           size > 4 && binary[0] == 0x7f && binary[1] == 'E' ? "ELF" : "?");
  free(binary);
  mlagen_runtime_destroy(runtime);
  return status == MLAGEN_OK ? 0 : fail("compile", status);
}
