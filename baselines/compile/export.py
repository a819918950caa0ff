#!/usr/bin/env python3
"""Exports one case of a kforge workload to an AOTInductor package (.pt2): the torch.compile baseline.

Reads the spec as JSON (kf::to_json), builds an nn.Module from the OPS table below (the same ops, names and
PyTorch eager semantics as lib/spec/ops_torch.cpp), exports it with torch.export.export for the case's
concrete shapes and compiles it with torch._inductor.aoti_compile_and_package. Prints one JSON line saying
what it did; on failure the last line is {"ok": false, "error": ...} and the exit code is 1.

usage: export.py --spec SPEC.json --case CASE --device cpu|cuda[:N] --mode default|max-autotune --out OUT.pt2
                 [--bench-lock FILE]

Exports run several at once on one GPU (export_cache.cpp). Inductor picks each kernel's launch configuration by
timing the candidates on that GPU, and a timing taken while another export's kernels run picks at random: on an
H200 the batch-1 ResNet pooling package came out at 1.62 us in one export and 2.42 us in another, 16 at once.
With --bench-lock, every timing inductor takes holds an exclusive lock on FILE (flock), so timings of concurrent
exports take turns; their code generation still overlaps.
"""
import argparse
import fcntl
import functools
import json
import os
import sys
import threading
import time
import traceback


def serialize_benchmarks(lock_path):
    """Makes inductor's benchmarker hold an exclusive flock on lock_path while it times anything (nested calls and
    threads of this process share one hold)."""
    from torch._inductor.runtime import benchmarking
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    guard = threading.Lock()
    holders = [0]

    def locked(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with guard:
                if holders[0] == 0:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                holders[0] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                with guard:
                    holders[0] -= 1
                    if holders[0] == 0:
                        fcntl.flock(fd, fcntl.LOCK_UN)
        return run

    wrapped = 0
    for cls in vars(benchmarking).values():
        if isinstance(cls, type) and issubclass(cls, benchmarking.Benchmarker):
            for name in ("benchmark", "benchmark_gpu", "benchmark_cpu"):
                if name in vars(cls):
                    setattr(cls, name, locked(vars(cls)[name]))
                    wrapped += 1
    if wrapped == 0:
        raise RuntimeError("torch._inductor.runtime.benchmarking has no Benchmarker methods to serialize")


def _dtype(torch, name):
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
            "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool}[name]


def make_ops(torch):
    F = torch.nn.functional

    def ints(v):
        return list(v) if isinstance(v, list) else [v]

    def pool(x, a, t):
        size = ints(a["output_size"])
        return (F.adaptive_avg_pool2d(x, size * 2 if len(size) == 1 else size),)

    def stride(a):  # none or [] means the kernel's, as torch's pooling reads None
        return a.get("stride") or None

    def avg_pool(x, a, t):
        return (F.avg_pool2d(x, a["kernel_size"], stride(a), a.get("padding", 0), a.get("ceil_mode", False),
                             a.get("count_include_pad", True), a.get("divisor_override")),)

    def max_pool(x, a, t):
        return (F.max_pool2d(x, a["kernel_size"], stride(a), a.get("padding", 0), ceil_mode=a.get("ceil_mode", False)),)

    def softmax_like(fn):
        def run(x, a, t):
            dt = a.get("dtype")
            return (fn(x, a["dim"], dtype=_dtype(torch, dt) if dt else None),)
        return run

    # name -> fn(x, args, tensors) -> tuple of outputs. Keep in step with lib/spec/ops_torch.cpp.
    return {
        "softcap": lambda x, a, t: (torch.tanh(x / a["cap"]) * a["cap"],),
        "scale": lambda x, a, t: (x * a["factor"],),
        "add_mask": lambda x, a, t: (x + t["mask"],),
        "masked_fill": lambda x, a, t: (x.masked_fill(t["mask"], float(a["value"])),),
        "where": lambda x, a, t: (torch.where(t["condition"], x, float(a["value"])),),
        "softmax": softmax_like(torch.softmax),
        "log_softmax": softmax_like(torch.log_softmax),
        "topk": lambda x, a, t: tuple(torch.topk(x, a["k"], dim=a.get("dim", -1), largest=a.get("largest", True),
                                                 sorted=a.get("sorted", True))),
        "group_norm": lambda x, a, t: (F.group_norm(x, a["num_groups"], t.get("weight"), t.get("bias"), a.get("eps", 1e-5)),),
        "layer_norm": lambda x, a, t: (F.layer_norm(x, ints(a["normalized_shape"]), t.get("weight"), t.get("bias"),
                                                    a.get("eps", 1e-5)),),
        "rms_norm": lambda x, a, t: (F.rms_norm(x, ints(a["normalized_shape"]), t.get("weight"), a.get("eps")),),
        "silu": lambda x, a, t: (F.silu(x),),
        "sigmoid": lambda x, a, t: (torch.sigmoid(x),),
        "tanh": lambda x, a, t: (torch.tanh(x),),
        "relu": lambda x, a, t: (torch.relu(x),),
        "exp": lambda x, a, t: (torch.exp(x),),
        "rsqrt": lambda x, a, t: (torch.rsqrt(x),),
        "neg": lambda x, a, t: (torch.neg(x),),
        "hardswish": lambda x, a, t: (F.hardswish(x),),
        "hardsigmoid": lambda x, a, t: (F.hardsigmoid(x),),
        "clamp": lambda x, a, t: (torch.clamp(x, a.get("min"), a.get("max")),),
        # other: an input, or a number (a Python scalar operand, as `x + 1.0` is written)
        "add": lambda x, a, t: (x + t.get("other", a["other"]),),
        "sub": lambda x, a, t: (x - t.get("other", a["other"]),),
        "mul": lambda x, a, t: (x * t.get("other", a["other"]),),
        "div": lambda x, a, t: (x / t.get("other", a["other"]),),
        "gelu": lambda x, a, t: (F.gelu(x, approximate=a.get("approximate", "none")),),
        "adaptive_avg_pool2d": pool,
        "avg_pool2d": avg_pool,
        "max_pool2d": max_pool,
        "flatten": lambda x, a, t: (torch.flatten(x, a.get("start_dim", 0), a.get("end_dim", -1)),),
        "cast": lambda x, a, t: (x.to(_dtype(torch, a["dtype"])),),
        "linear": lambda x, a, t: (F.linear(x, t["weight"], t.get("bias")),),
        "matmul": lambda x, a, t: (torch.matmul(x, t["other"]),),
    }


# Argument names that name inputs (tensor arguments), per op.
TENSOR_ARGS = {"add_mask": ["mask"], "masked_fill": ["mask"], "where": ["condition"],
               "group_norm": ["weight", "bias"], "layer_norm": ["weight", "bias"], "rms_norm": ["weight"],
               "linear": ["weight", "bias"], "matmul": ["other"],
               "add": ["other"], "sub": ["other"], "mul": ["other"], "div": ["other"]}


def build_module(torch, spec):
    ops = make_ops(torch)
    names = [i["name"] for i in spec["inputs"]]
    graph = spec["graph"]
    for step in graph:
        if step["op"] not in ops:
            raise ValueError(f"op `{step['op']}` has no Python counterpart in export.py's OPS table")

    class Graph(torch.nn.Module):
        def forward(self, *inputs):
            by_name = dict(zip(names, inputs))
            out, steps = None, []
            for i, step in enumerate(graph):
                args = step["args"]
                tensors = {k: by_name[args[k]] for k in TENSOR_ARGS.get(step["op"], []) if isinstance(args.get(k), str)}
                x = by_name[args["input"]] if i == 0 else out[0]
                out = ops[step["op"]](x, args, tensors)
                steps.append(out)
            # The spec's outputs as kf::to_json resolved them (`outputs`, `as`); older JSON: the last op's results.
            refs = spec.get("output_refs")
            return tuple(steps[r["step"]][r["index"]] for r in refs) if refs else out

    return Graph()


def example_inputs(torch, spec, case, device):
    bindings = dict(case["bindings"])
    out = []
    for i in spec["inputs"]:
        shape = [bindings[d] if isinstance(d, str) else d for d in i["shape"]]
        dt = _dtype(torch, i["dtype"])
        t = torch.randn(shape, dtype=dt) if dt.is_floating_point else torch.zeros(shape, dtype=dt)
        if i.get("memory_format") == "channels_last":
            t = t.contiguous(memory_format=torch.channels_last)
        out.append(t.to(device))
    return tuple(out)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec", required=True, help="the spec as JSON (kf::to_json)")
    p.add_argument("--case", required=True, help="the case name, e.g. B=1,H=8,S=2048")
    p.add_argument("--device", default="cuda", help="cpu or cuda[:N]")
    p.add_argument("--mode", default="default", choices=["default", "max-autotune"])
    p.add_argument("--out", required=True, help="where to write the .pt2 package")
    p.add_argument("--bench-lock", help="a file whose flock every inductor timing holds (concurrent exports)")
    a = p.parse_args(argv)
    report = {"ok": False, "case": a.case, "device": a.device, "mode": a.mode, "out": a.out}
    try:
        import torch
        report["torch"] = torch.__version__
        if a.bench_lock:
            serialize_benchmarks(a.bench_lock)
            report["bench_lock"] = a.bench_lock
        spec = json.load(open(a.spec))
        report["spec"] = spec.get("name")
        case = next((c for c in spec["cases"] if c["name"] == a.case), None)
        if case is None:
            raise ValueError(f"the spec has no case `{a.case}` (cases: {', '.join(c['name'] for c in spec['cases'])})")
        start = time.time()
        model = build_module(torch, spec).eval()
        inputs = example_inputs(torch, spec, case, a.device)
        with torch.no_grad():
            ep = torch.export.export(model, inputs, strict=False)
            # What torch.compile(mode=...) sets, less what does not apply ahead of time: max-autotune is
            # max-autotune-no-cudagraphs (a package runs without CUDA graphs), coordinate descent tuning included.
            py_mode = "max-autotune-no-cudagraphs" if a.mode == "max-autotune" else a.mode
            configs = dict(torch._inductor.list_mode_options(py_mode))
            # aoti_compile_and_package wants a name ending in .pt2; write beside --out, then rename into place.
            tmp = f"{a.out}.partial-{os.getpid()}.pt2"
            path = torch._inductor.aoti_compile_and_package(ep, package_path=tmp, inductor_configs=configs)
            os.replace(path, a.out)
        report.update(ok=True, seconds=round(time.time() - start, 3),
                      inputs=[{"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")} for t in inputs],
                      outputs=len(ep.graph_signature.user_outputs))
        print(json.dumps(report), flush=True)
        return 0
    except Exception as e:  # the parent records the reason as "skipped: ..." and carries on
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        report["error"] = f"{type(e).__name__}: {e}".replace("\n", " ")[:500]
        print(json.dumps(report), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
