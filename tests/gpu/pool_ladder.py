# Where batch-1 pooling's time goes: hand-written kernels from an empty launch up to a whole [1, 2048, 7, 7] fp16
# average pool, each timed per launch inside a CUDA graph (family_bench.hot_us), in one process next to
# torch.compile's kernel and eager, three rounds. Differences between rungs place the time (launch, the store, one
# L2 round trip, shared-memory staging, the reduction); docs/kernel-notes.md "pool_cuda" has an H200's numbers.
#   python3 tests/gpu/pool_ladder.py        (ci/gpu-tune phase `ladder`)
import ctypes, os, subprocess, sys, tempfile
import torch
import torch.nn.functional as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from family_bench import hot_us  # noqa: E402
here = os.path.dirname(os.path.abspath(__file__))
so = os.path.join(tempfile.mkdtemp(prefix="pool_ladder"), "pool_ladder.so")
subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", so,
                os.path.join(here, "pool_ladder.cu")], check=True)
lib = ctypes.CDLL(so)
x = torch.randn(1, 2048, 7, 7, device="cuda", dtype=torch.float16)
y = torch.empty(2048, device="cuda", dtype=torch.float16)
ref = x.float().mean((2, 3)).flatten()
names = ["empty 64x32", "empty 64x256", "empty 1x32", "store 64x32", "store 64x256", "load1 (16B/thread, shfl)",
         "load1 smem+sync", "staged hw runtime", "staged hw=49 const", "warp 64x32 hw runtime",
         "warp 64x32 hw=49 const",
         "empty 128x256"]
def go(i):
    return lib.run(i, ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(y.data_ptr()),
                   ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
pool = lambda t: torch.flatten(F.adaptive_avg_pool2d(t, 1), 1)
comp = torch.compile(pool)
for _ in range(3): comp(x)
torch.cuda.synchronize()
for rep in range(3):
    row = []
    for i, n in enumerate(names):
        assert go(i) == 0
        if i in (7, 8, 9, 10):
            torch.cuda.synchronize()
            err = float((y.float() - ref).abs().max())
            assert err < 2e-3, (n, err)
        row.append((n, hot_us(lambda: go(i), n=100)))
    row.append(("torch.compile", hot_us(lambda: comp(x), n=100)))
    row.append(("eager", hot_us(lambda: pool(x), n=100)))
    print(f"rep {rep}: " + "; ".join(f"{n} {t:.3f}" for n, t in row), flush=True)

