# Times one family_bench case's implementations "hot" (per launch inside a CUDA graph of back-to-back launches)
# in the contexts a harness and kforge's gate put them in, to find out what the context does to a launch-bound
# kernel:
#   b2b50   25 replays of a 50-launch graph back to back (family_bench's hot_us)
#   b2b400  the same with 400 launches a graph (the gate's graph size for a ~2.5 us kernel)
#   gate_settled  the same with one untimed replay between the cold launch and the timed replay
#   gate_spin     the same with a 1 ms spinning kernel (no memory traffic) there instead
#   gate    each replay of the 400-launch graph right after an L2 flush and one cold launch (the gate's round:
#           measure/timing.cpp takes a cold sample, then a hot one, implementation after implementation)
# Usage: python3 hot_context.py CASE LABEL=SO [LABEL=SO ...] [--compile]
import ctypes, sys

import torch

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from family_bench import CASES, as_list, compiled, graph_of, launch, timed_us as timed  # noqa: E402

def median(xs):
    return sorted(xs)[len(xs) // 2]

def contexts(fn, flush):
    g50, g400 = graph_of(fn, 50), graph_of(fn, 400)

    def after_cold(between):
        """Median per launch of g400's replay after the gate's cold sample (flush, one launch) and `between`."""
        times = []
        for _ in range(25):
            flush.zero_()
            timed(fn)
            between()
            times.append(timed(g400.replay) / 400)
        return median(times)

    return {
        "b2b50": median([timed(g50.replay) / 50 for _ in range(25)]),
        "b2b400": median([timed(g400.replay) / 400 for _ in range(25)]),
        "gate": after_cold(lambda: None),
        "gate_settled": after_cold(g400.replay),
        # ~1 ms of an idle spinning kernel: neither L2 traffic nor memory writes
        "gate_spin": after_cold(lambda: torch.cuda._sleep(2_000_000)),
    }

def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    case = CASES[args[0]]
    ins = case["make"]()
    outs = [torch.empty_like(t) for t in as_list(case["eager"](*ins))]
    flush = torch.empty(8 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.float32, device="cuda")
    impls = [("eager", lambda: case["eager"](*ins))]
    if "--compile" in sys.argv:
        compiled_fn = compiled(case, "default")
        compiled_fn(*ins)
        impls.append(("compile", lambda: compiled_fn(*ins)))
    for spec in args[1:]:
        label, so = spec.split("=", 1)
        lib = ctypes.CDLL(so)
        lib.kf_launch.restype = ctypes.c_int
        impls.append((label, lambda lib=lib: launch(lib, ins, outs, torch.cuda.current_stream().cuda_stream)))
    for label, fn in impls:
        r = contexts(fn, flush)
        print(args[0], label, " ".join(f"{k} {v:.3f}" for k, v in r.items()), flush=True)

if __name__ == "__main__":
    main()
