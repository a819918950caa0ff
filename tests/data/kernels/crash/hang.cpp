// CRASH (expect: hang): never returns.
#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor*, int, kf_tensor*, int, void*) {
  volatile long spin = 0;
  for (;;) ++spin;
  return 0;
}
