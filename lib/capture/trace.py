#!/usr/bin/env python3
"""kforge capture's tracer: runs a user's model eagerly and writes every aten operator it dispatched, in order,
with its module path, arguments, tensor metadata and time, as JSON (lib/capture/trace.h reads it).

usage: trace.py --model FILE.py:FUNCTION --device cpu|cuda --out TRACE.json [--model-args k=v,...]
                [--warmup N] [--iters N]

FUNCTION returns (model, example_inputs); it is called with device=... when it takes that argument (and with the
--model-args), else the model and inputs are moved to the device. The model runs once to warm up, then --iters
times under a TorchDispatchMode (which records the operators of the first pass) and the profiler (each operator
inside a record_function range of its own, whose cpu time less an empty range's, or on cuda the device time of the
kernels it launched, is the operator's; the median over the passes is kept).
"""
import argparse
import ast
import importlib.util
import inspect
import json
import math
import os
import statistics
import sys
import time
import warnings

TRACE_VERSION = 1


def fail(message):
    print(f"trace.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def load_function(spec):
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        fail(f"--model {spec}: expected FILE.py:FUNCTION")
    if not os.path.isfile(path):
        fail(f"--model {spec}: {path} does not exist")
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    mod_name = "kforge_captured_" + os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    module_spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not callable(fn):
        fail(f"--model {spec}: {path} has no function {name}")
    return fn


def parse_model_args(text):
    kwargs = {}
    for item in filter(None, (text or "").split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            fail(f"--model-args {text}: expected KEY=VALUE,... (got {item!r})")
        try:
            kwargs[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            kwargs[key.strip()] = value.strip()
    return kwargs


def build(fn, device, kwargs):
    import torch

    params = inspect.signature(fn).parameters
    takes_device = "device" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
    if takes_device:
        kwargs = dict(kwargs, device=device)
    result = fn(**kwargs)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{fn.__name__} returned {type(result).__name__}: expected (model, example_inputs)")
    model, inputs = result
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if not isinstance(inputs, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in inputs):
        fail(f"{fn.__name__}'s example_inputs must be a tensor, or a tuple or list of tensors")
    if not takes_device:
        model = model.to(device)
        inputs = tuple(t.to(device) for t in inputs)
    return model.eval(), tuple(inputs)


class module_stack:
    """The qualified name of the innermost module running, through global forward hooks."""

    def __init__(self, model):
        import torch

        self.names = {id(m): name for name, m in model.named_modules()}
        self.stack = []
        nn = torch.nn.modules.module
        self.handles = [nn.register_module_forward_pre_hook(self.enter),
                        nn.register_module_forward_hook(self.leave, always_call=True)]

    def enter(self, module, args):
        self.stack.append(self.names.get(id(module), type(module).__name__))

    def leave(self, module, args, output):
        if self.stack:
            self.stack.pop()

    def current(self):
        return self.stack[-1] if self.stack else ""

    def close(self):
        for h in self.handles:
            h.remove()


def make_recorder(model, inputs, modules):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.weak import WeakIdKeyDictionary

    class recorder(TorchDispatchMode):
        """Records the operators of the first pass; wraps every call in a numbered profiler range."""

        def __init__(self):
            super().__init__()
            self.values = WeakIdKeyDictionary()  # tensor -> the id of the value it holds now
            self.origin = {}                     # value id -> what it is when it came from outside the ops
            self.next_value = 0
            self.ops = []
            self.index = 0
            self.recording = True
            for name, p in model.named_parameters():
                self.known(p, {"param": name})
            for name, b in model.named_buffers():
                self.known(b, {"buffer": name})
            for i, t in enumerate(inputs):
                self.known(t, {"input": i})

        def known(self, t, origin):
            vid = self.fresh(t)
            self.origin[vid] = origin
            return vid

        def fresh(self, t):
            vid = self.next_value
            self.next_value += 1
            self.values[t] = vid
            return vid

        def value_of(self, t):
            if t not in self.values:
                return self.known(t, {"external": True})
            return self.values[t]

        def tensor(self, t, vid):
            dt = str(t.dtype).replace("torch.", "")
            return {"value": vid, "shape": list(t.shape), "dtype": dt, "stride": list(t.stride()),
                    "device": t.device.type}

        def encode(self, a):
            if isinstance(a, torch.Tensor):
                return self.tensor(a, self.value_of(a))
            if isinstance(a, (list, tuple)):
                return [self.encode(x) for x in a]
            if isinstance(a, bool) or a is None or isinstance(a, (int, str)):
                return a
            if isinstance(a, float):
                return a if math.isfinite(a) else {"float": str(a)}
            if isinstance(a, torch.dtype):
                return {"dtype": str(a).replace("torch.", "")}
            return {"other": str(a)}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            index = self.index
            self.index += 1
            if not self.recording:
                with torch.profiler.record_function(f"kf#{index}"):
                    return func(*args, **kwargs)
            encoded_args = [self.encode(a) for a in args]
            encoded_kwargs = {k: self.encode(v) for k, v in kwargs.items()}
            with torch.profiler.record_function(f"kf#{index}"):
                out = func(*args, **kwargs)
            flat = out if isinstance(out, (tuple, list)) else [out]
            outputs = []
            for t in flat:
                if isinstance(t, torch.Tensor):
                    outputs.append(self.tensor(t, self.fresh(t)))  # in place: a new value of the same tensor
                else:
                    outputs.append(self.encode(t))
            self.ops.append({"index": index, "op": str(func), "module": modules.current(), "args": encoded_args,
                             "kwargs": encoded_kwargs, "outputs": outputs})
            return out

    return recorder()


def flat_tensors(out):
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat_tensors(o)]
    return []


def profiler(cuda):
    """Kineto on cuda, for the kernels' device times; the autograd profiler on the cpu, which gives the same cpu
    times without kineto's start-up (seconds, most of a small model's capture)."""
    import torch

    if cuda:
        from torch.profiler import ProfilerActivity, profile

        return profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    return torch.autograd.profiler.profile(use_kineto=False)


def sync(device):
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--out", required=True)
    p.add_argument("--model-args", default="")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--iters", type=int, default=3)
    a = p.parse_args(argv)

    import torch

    warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
    cuda = a.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        fail(f"--device {a.device}: torch sees no CUDA device")
    if not cuda and a.device != "cpu":
        fail(f"--device {a.device}: expected cpu, cuda or cuda:N")
    fn = load_function(a.model)
    with torch.no_grad():
        model, inputs = build(fn, a.device, parse_model_args(a.model_args))
        wall = []
        for _ in range(max(a.warmup, 0)):
            sync(a.device)
            start = time.perf_counter()
            model(*inputs)
            sync(a.device)
            wall.append(time.perf_counter() - start)

        modules = module_stack(model)
        rec = make_recorder(model, inputs, modules)
        counts = []
        outputs = []
        with profiler(cuda) as prof:
            for it in range(max(a.iters, 1)):
                rec.index = 0
                with rec:
                    out = model(*inputs)
                sync(a.device)
                if it == 0:
                    outputs = [rec.values[t] for t in flat_tensors(out) if t in rec.values]
                    rec.recording = False
                counts.append(rec.index)
            # What a range costs by itself, taken off each operator's time (on the cpu it is most of a view's).
            for _ in range(32):
                with torch.profiler.record_function("kf#empty"):
                    pass
        modules.close()
    if len(set(counts)) != 1:
        fail(f"the model dispatched a different number of operators on each pass ({counts}): it must be deterministic")

    from torch.autograd import DeviceType

    times = {}
    for e in prof.events() if cuda else prof.function_events:
        # The range as the cpu saw it (on cuda kineto also lists the range on the GPU's timeline, under one name).
        if e.name.startswith("kf#") and e.device_type == DeviceType.CPU:
            us = e.device_time_total if cuda else e.cpu_time_total
            times.setdefault(e.name[3:], []).append(us)
    overhead = 0.0 if cuda else statistics.median(times.get("empty", [0.0]))
    for op in rec.ops:
        op["time_us"] = max(0.0, statistics.median(times.get(str(op["index"]), [0.0])) - overhead)
    trace = {
        "version": TRACE_VERSION,
        "model": a.model,
        "device": "cuda" if cuda else "cpu",
        "torch": torch.__version__,
        "iterations": max(a.iters, 1),
        "forward_us": statistics.median(wall) * 1e6 if wall else 0.0,
        "range_overhead_us": overhead,
        "origins": {str(k): v for k, v in rec.origin.items()},
        "model_outputs": outputs,
        "ops": rec.ops,
    }
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(trace, f)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
