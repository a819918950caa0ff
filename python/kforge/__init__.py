"""kforge's stored kernels as PyTorch operators.

Loading a folder of workloads installs each workload's stored winner for this device as an operator,
``torch.ops.kforge.<workload>`` (dashes become underscores), with the spec's inputs as its arguments::

    import torch, kforge
    kforge.load("workloads", device="cpu")             # or KFORGE_WORKLOADS=workloads at import
    y = torch.ops.kforge.gpt2_gelu_tanh(x)              # the stored kernel where it covers the call
    model = kforge.patch(model)                         # modules whose forward is a loaded workload's graph
    compiled = kforge.compile(model)                    # torch.compile with the workloads' patterns rewritten
    kforge.left_to_inductor(compiled)                   # what its policy left to inductor, and why
    fast = kforge.rewrite_eager(model, inputs)          # the same rewrite of the ATen graph, run eagerly
    fast, how = kforge.rewrite_best(model, inputs)      # patch-then-rewrite or rewrite-first, whichever covers more

An operator runs its kernel when the call is what the kernel was verified on (the spec's dtypes, ranks and sizes;
contiguous inputs), and the workload's eager graph otherwise, with a warning once per shape. It has a Meta
implementation, so it works under torch.compile and inside CUDA graphs. The kernels are compiled when they are
loaded (kforge's compile cache keeps them), never inside a call. docs/design.md "The stored kernels as PyTorch
operators" has the details.
"""
import json
import os
import pathlib

import torch

from .modules import MODULE_RULES, Step, patch, patched_modules, unpatch
from .rewrite import compile, left_to_inductor, rewrite_backend, rewritten
from .eager_rewrite import EagerRewrite, rewrite_eager
from .coverage import covered, operator_calls, replaced_cases, rewrite_best

__all__ = ["library_path", "load_library", "load", "loaded", "describe", "op", "op_name", "patch", "unpatch",
           "patched_modules", "MODULE_RULES", "Step", "compile", "rewrite_backend", "rewritten", "left_to_inductor",
           "rewrite_eager", "EagerRewrite", "operator_calls", "covered", "rewrite_best", "replaced_cases"]

_library = None
_descriptions = {}


def library_path():
    """Where libkforge_ops.so is: $KFORGE_OPS_LIBRARY, beside this package, or a build folder of the checkout."""
    env = os.environ.get("KFORGE_OPS_LIBRARY")
    if env:
        return env
    here = pathlib.Path(__file__).resolve().parent
    repo = here.parents[1]
    tries = [here / "libkforge_ops.so", repo / "build" / "libkforge_ops.so", repo / "build-gpu" / "libkforge_ops.so"]
    for t in tries:
        if t.is_file():
            return str(t)
    raise FileNotFoundError("libkforge_ops.so not found (looked in: " + ", ".join(map(str, tries)) +
                            "); build it (ci/build cpu kforge_ops) or set KFORGE_OPS_LIBRARY")


def load_library(path=None):
    """Loads libkforge_ops.so into torch (once) and returns its path."""
    global _library
    if _library is None:
        path = path or library_path()
        torch.ops.load_library(path)
        _library = path
    return _library


def load(workloads_dir=None, device="auto", cache_dir=None, names=None):
    """Compiles and installs the stored winners of the workloads in `workloads_dir` (default $KFORGE_WORKLOADS).

    device: "auto" (the current GPU where there is one, else cpu), "cpu", "cuda", "cuda:N", or several joined by
    commas. cache_dir: the compile cache (default $KFORGE_CACHE_DIR, else the checkout's .kforge/cache beside the
    workloads folder where it can be written, else ~/.cache/kforge). names: only these workloads.
    Returns the report: {"loaded": [{"workload", "op", "schema", "kernels": {"cpu": ..., "cuda": ...}, ...}],
    "skipped": [{"spec", "why"}], ...}. A workload without a kernel for the device still becomes an operator that
    runs its eager graph.
    """
    load_library()
    text = torch.ops.kforge._load(str(workloads_dir or ""), str(device), str(cache_dir or ""),
                                  [str(n) for n in (names or [])])
    report = json.loads(text)
    for entry in report["loaded"]:
        _descriptions[entry["op"]] = entry
    return report


def loaded():
    """The operators installed so far, by name."""
    if _library is None:
        return []
    return list(torch.ops.kforge._loaded())


def op_name(workload):
    """The operator's name for a workload: "gpt2-gelu-tanh" -> "gpt2_gelu_tanh"."""
    name = workload.replace("-", "_")
    return "w" + name if name[:1].isdigit() else name


def describe(workload):
    """What an installed operator is: its schema, the spec (as kforge's JSON) and each device kind's kernel."""
    name = op_name(workload)
    if name not in _descriptions:
        load_library()
        _descriptions[name] = json.loads(torch.ops.kforge._describe(name))
    return _descriptions[name]


def op(workload):
    """The operator of a workload (torch.ops.kforge.<name>)."""
    load_library()
    return getattr(torch.ops.kforge, op_name(workload))


def _op_table():
    load_library()
    return json.loads(torch.ops.kforge._op_table())


if os.environ.get("KFORGE_WORKLOADS"):
    load(os.environ["KFORGE_WORKLOADS"], os.environ.get("KFORGE_DEVICE") or "auto")
