"""What kforge's operators replace in a model (kforge.coverage): the operator calls one forward makes, by workload
and spec case, and how much of the captured model's time they stand for (the cases' ``share`` and ``calls`` that
``kforge capture`` writes), and the better of two ways of putting them in a model::

    calls = kforge.operator_calls(lambda: fast(*inputs))       # {(workload, case): calls}, kernel-covered only
    kforge.covered(calls)                                       # {"share": ..., "calls": ...}
    fast, how = kforge.rewrite_best(model, inputs)              # patch then rewrite, or rewrite first

kforge.patch swaps modules for operator calls, and kforge.rewrite_eager replaces patterns in the captured ATen graph.
Patching first hides a pattern that crosses a module's edge: a residual add before an RMSNorm module is no longer
an add and an rms_norm once the module is the rms_norm operator. rewrite_best tries both orders and keeps the one
whose operator calls cover more of the captured time (``share``; without shares, more calls, then more of the
specs' graph ops).
"""
import copy
import itertools

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .behaviour import _inputs
from .modules import _descriptions, kernel_flags, patch, patched_modules
from .policy import case_name
from .rewrite import bindings, covers


class _Recorder(TorchDispatchMode):
    """Counts the calls of kforge's operators that their kernels take ({(workload, case name or None): calls})."""

    def __init__(self, by_op, require_kernel):
        super().__init__()
        self.by_op, self.require_kernel, self.calls = by_op, require_kernel, {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        d = self.by_op.get(func._opname) if func.namespace == "kforge" else None
        if d is not None:
            spec = d["spec"]
            # Detached: a parameter passed under no_grad requires a gradient that the call does not need.
            values = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
            if covers(spec, values, kernel_flags(d, self.require_kernel)):
                key = (d["workload"], case_name(spec, bindings(spec, values)))
                self.calls[key] = self.calls.get(key, 0) + 1
        return func(*args, **(kwargs or {}))


def operator_calls(fn, require_kernel=True):
    """fn()'s result and the calls of the loaded workloads' operators it made that the operator's kernel takes
    (kforge.rewrite.covers: dtypes, sizes, layout, a kernel for the device; with require_kernel=False any call the
    spec covers), {(workload, spec case name or None): count}."""
    recorder = _Recorder({d["op"]: d for d in _descriptions()}, require_kernel)
    with recorder:
        out = fn()
    return out, recorder.calls


def case_shares():
    """{(workload, case name): (share, calls)} from the loaded specs' cases that kforge capture annotated."""
    out = {}
    for d in _descriptions():
        for c in d["spec"].get("cases", []):
            if c.get("share") is not None:
                out[(d["workload"], c["name"])] = (c["share"], c.get("calls"))
    return out


def covered(calls, shares=None):
    """How much of the captured model the operator `calls` (operator_calls') stand for: {"share": the sum over the
    called cases with a share of share x calls / captured calls (a call beyond the captured ones, the operator
    covering part of a larger captured pattern at the same sizes, at the same time each), "calls": every call,
    "shares": whether any called case had a share, "ops": the calls weighted by their spec graph's op count}."""
    shares = case_shares() if shares is None else shares
    graph_ops = {d["workload"]: len(d["spec"]["graph"]) for d in _descriptions()}
    share, any_share = 0.0, False
    for key, n in calls.items():
        if key in shares:
            s, captured = shares[key]
            share += s * n / captured if captured else s
            any_share = True
    return {"share": share, "calls": sum(calls.values()), "shares": any_share,
            "ops": sum(n * graph_ops.get(w, 1) for (w, _), n in calls.items())}


def _better(a, b):
    """Whether coverage `a` beats `b`: more of the captured time where shares say, else more calls, else (one
    add + rms_norm call against one rms_norm call) more of the specs' graph ops."""
    if (a["shares"] or b["shares"]) and abs(a["share"] - b["share"]) > 1e-12:
        return a["share"] > b["share"]
    if a["calls"] != b["calls"]:
        return a["calls"] > b["calls"]
    return a["ops"] > b["ops"]


def _device_type(model, tensors):
    """The device kind the model runs on: its first tensor input's, else its first parameter's or buffer's, else cpu."""
    for t in tensors:
        if isinstance(t, torch.Tensor):
            return t.device.type
    t = next(itertools.chain(model.parameters(), model.buffers()), None)
    return t.device.type if t is not None else "cpu"


def rewrite_best(model, example_inputs, names=None, require_kernel=True):
    """The better of kforge.rewrite_eager(kforge.patch(copy)) ("patch, then rewrite") and kforge.rewrite_eager of
    an unpatched copy, then patched for the workloads its rewrite did not replace ("rewrite first"), judged by the
    operator calls one forward makes (covered()). Returns (the rewritten model, {"how", "note", "patched",
    "coverage"}): "how" is "patch-then-rewrite" or "rewrite-first", "patched" the patched copy (the rewritten
    model's ``module``). On a tie, patch then rewrite. The model is not changed. With `require_kernel`, only
    workloads with a kernel loaded for the model's device patch modules: another's operator would run its eager
    graph, one dispatch more for nothing, and hide the module's ops from a workload that has a kernel."""
    from .eager_rewrite import rewrite_eager

    args, kwargs = _inputs(example_inputs)
    device = _device_type(model, list(args) + list(kwargs.values()))
    loaded = [d["workload"] for d in _descriptions(names)
              if not require_kernel or kernel_flags(d).get(device, False)]

    def build(how, patch_names, unless_unpatched=False):
        """The candidate, or None when `unless_unpatched` and patching changed nothing (the unpatched candidate)."""
        m = copy.deepcopy(model)
        if patch_names:
            patch(m, example_inputs=example_inputs, names=patch_names)
        if unless_unpatched and not patched_modules(m):
            return None
        fast = rewrite_eager(m, example_inputs, names=names, require_kernel=require_kernel)
        with torch.no_grad():
            _, calls = operator_calls(lambda: fast(*args, **kwargs), require_kernel)
        return {"how": how, "fast": fast, "coverage": covered(calls), "calls": calls,
                "modules": len(patched_modules(m))}

    from .rewrite import rewritten

    candidates = [build("patch-then-rewrite", loaded)]
    unpatched = build("rewrite-first", [])
    candidates.append(unpatched)
    # What the rewrite of the unpatched model did not replace, patched (its modules' operators are then in the graph
    # the rewrite sees): the workloads the rewrite found are left to it, so their modules stay whole.
    found = {r["workload"] for r in rewritten(unpatched["fast"])}
    rest = [w for w in loaded if w not in found]
    if found and rest:
        patched_rest = build("rewrite-first", rest, unless_unpatched=True)
        if patched_rest is not None:
            candidates.append(patched_rest)
    best = candidates[0]
    for c in candidates[1:]:
        if _better(c["coverage"], best["coverage"]):
            best = c

    def said(c):
        cov = c["coverage"]
        what = (f"{cov['share'] * 100:.1f}% of the captured time" if cov["shares"] else
                f"{cov['calls']} calls ({cov['ops']} graph ops)")
        then = f" (then {c['modules']} modules patched)" if c["how"] == "rewrite-first" and c["modules"] else ""
        return f"{c['how']}{then}: {what}"

    others = [said(c) for c in candidates if c is not best]
    note = f"{said(best)} replaced, chosen over {'; '.join(others)}"
    return best["fast"], {"how": best["how"], "note": note, "patched": best["fast"].module,
                          "coverage": best["coverage"], "calls": best["calls"]}


def replaced_cases(calls, device_type):
    """The facts of an Amdahl prediction from the capture's shares (kforge e2e's "replaced_cases"), one entry per
    (workload, case) of operator_calls' `calls`: {"workload", "case", "calls", "share" and "captured_calls" (the
    spec case's, None when it has none), "key" (the stored winner's GPU key), and from its record (the .json beside
    the kernel the operator runs) "record_eager_us" and "record_kernel_us" (that case's times, None when it was not
    timed) and "record_speedup" (results.speedup.eager across its cases, None without one)}."""
    from .policy import _record

    out = []
    for (workload, case), n in sorted(calls.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        d = next((x for x in _descriptions() if x["workload"] == workload), None)
        if d is None:
            continue
        spec_case = next((c for c in d["spec"].get("cases", []) if case is not None and c["name"] == case), {})
        kernel = d.get("kernels", {}).get(device_type, {})
        results = _record(kernel["source"]).get("results", {}) if kernel.get("source") else {}
        out.append({"workload": workload, "case": case, "calls": n, "share": spec_case.get("share"),
                    "captured_calls": spec_case.get("calls"), "key": kernel.get("key", ""),
                    "record_eager_us": results.get("baselines", {}).get("eager", {}).get(case),
                    "record_kernel_us": results.get("case_us", {}).get(case),
                    "record_speedup": results.get("speedup", {}).get("eager")})
    return out
