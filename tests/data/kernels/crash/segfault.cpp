// CRASH (expect: crash, SIGSEGV): writes through a null pointer.
#include "kf_abi.h"
extern "C" int kf_launch(const kf_tensor*, int, kf_tensor*, int, void*) {
  volatile float* p = nullptr;
  *p = 1.0f;
  return 0;
}
