# Launches one family candidate once on a family_bench case, for a profiler to watch:
#   ncu --clock-control none -k regex:kfk python3 tests/gpu/profile_one.py SO CASE
import ctypes, os, sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from family_bench import CASES, as_list, launch  # noqa: E402

so, name = sys.argv[1], sys.argv[2]
case = CASES[name]
ins = case["make"]()
outs = [torch.empty_like(t) for t in as_list(case["eager"](*ins))]
lib = ctypes.CDLL(so)
lib.kf_launch.restype = ctypes.c_int
torch.cuda.synchronize()
rc = launch(lib, ins, outs, torch.cuda.current_stream().cuda_stream)
torch.cuda.synchronize()
print("kf_launch returned", rc)
