# Launches one family candidate once on a family_bench case, for a profiler to watch, and with --compile the
# torch.compile kernels of the same case next to it (compiled and autotuned before the profiled range):
#   ncu --profile-from-start off --clock-control none -k regex:'_kernel|triton' \
#       python3 tests/gpu/profile_one.py SO CASE [--compile default,max-autotune-no-cudagraphs]
# With --compile, inductor's generated code is printed, so the profile can be read against its source.
import ctypes, os, sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from family_bench import CASES, as_list, compile_modes, compiled, launch  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
so, name = args[0], args[1]
modes = compile_modes(sys.argv[1:])
case = CASES[name]
ins = case["make"]()
outs = [torch.empty_like(t) for t in as_list(case["eager"](*ins))]
lib = ctypes.CDLL(so)
lib.kf_launch.restype = ctypes.c_int
fns = []
for mode in modes:
    from torch._inductor.utils import run_and_get_code
    fn = compiled(case, mode)
    _, code = run_and_get_code(fn, *ins)
    print(f"==== inductor code, mode {mode} ====")
    for c in code:
        print(c)
    for _ in range(3):
        fn(*ins)
    fns.append((mode, fn))
torch.cuda.synchronize()
torch.cuda.profiler.start()
rc = launch(lib, ins, outs, torch.cuda.current_stream().cuda_stream)
for mode, fn in fns:
    fn(*ins)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print("kf_launch returned", rc, "; then torch.compile modes:", ", ".join(m for m, _ in fns) or "none")
