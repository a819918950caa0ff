"""kforge.compile's policy (kforge.policy): which operator calls it leaves to Inductor, and why. Its target (issue
#23): torch.compile with kforge's operators is never slower than torch.compile alone. It is on by default for
kforge.compile's "inductor" backend and applies to every operator call in the graph Inductor compiles: the matches
of the graph rewrite (left as the model wrote them) and the calls of modules kforge.patch swapped (put back as the
workload's reference ops, the spec's graph, for Inductor to compile). kforge.rewrite_eager and the "eager" and
"aot_eager" backends replace every match: op by op nothing is fused, and each operator is one kernel among many.

1. **Elementwise only.** A workload whose graph is only elementwise ops (add, mul, relu, silu, casts, scale, masks:
   the op table's ``elementwise``, the pointwise family's rule) is left to Inductor, which fuses such a chain into
   the kernels beside it (a batch norm's, a matmul's epilogue): as an opaque operator it would be one kernel more
   and a round trip through memory (ResNet-50's add + relu on the H200: 0.64x torch.compile's forward).
   ``pointwise=True`` replaces them anyway, or a list of workload names replaces those. Workloads with a reduction
   (norms, softmax, log-softmax, pooling, topk) or a matmul are replaced.
2. **Recorded slower than torch.compile.** The stored winner's record (the ``.json`` beside the kernel the
   operator runs: ``results.case_us`` and ``results.baselines.compile``, as ``kforge run`` and ``kforge search``
   measured them) on the call's case (the spec's case whose bindings the call's sizes give) says the kernel took
   longer than torch.compile's: left to Inductor. A call whose sizes are none of the recorded cases goes by the
   record's overall speedup against compile (``results.speedup.compile``, across its cases), left to Inductor
   below 1. A record without compile's times says nothing: replaced. ``slower=True`` (or names) replaces anyway.

3. **A producer Inductor would fuse in.** A call whose input is the result of an elementwise op used by nothing
   else (ResNet-50's pooling of a relu) is left to Inductor, which fuses that op into the reduction's kernel: the
   producer's result is never written. As an operator, the producer runs as a kernel of its own and its result
   makes a round trip through memory, a cost the stored kernel's record (timed alone) does not see (ResNet-50 on
   the H200: its pooling replaced, 1571 us a forward against torch.compile's 1569). ``fused=True`` (or names)
   replaces it anyway.

Each call left alone is counted with its reason: ``kforge.left_to_inductor(compiled)``.
"""
import functools
import json
import pathlib


@functools.lru_cache(maxsize=None)
def _elementwise_ops():
    import kforge

    table = kforge._op_table()
    return frozenset(op for op, entry in table.items() if entry.get("elementwise"))


def elementwise_only(spec):
    """Whether every op of the spec's graph is elementwise (the op table's ``elementwise``)."""
    ops = _elementwise_ops()
    return bool(spec["graph"]) and all(step["op"] in ops for step in spec["graph"])


@functools.lru_cache(maxsize=None)
def _record(source):
    """The stored winner's record (the .json beside its source), {} when there is none or it does not parse."""
    try:
        return json.loads(pathlib.Path(source).with_suffix(".json").read_text())
    except (OSError, ValueError):
        return {}


def case_name(spec, bindings):
    """The name of the spec's case whose bindings are `bindings` ({symbol: size}), None when none is."""
    for case in spec.get("cases", []):
        if {k: v for k, v in case.get("bindings", [])} == bindings:
            return case.get("name")
    return None


def _opted_in(setting, workload):
    if isinstance(setting, bool):
        return setting
    return workload in set(setting or ())


class CompilePolicy:
    """The policy of one kforge.compile (see the module's docstring). `pointwise` and `slower`: True, False, or the
    workloads (names) that are replaced in spite of it."""

    def __init__(self, pointwise=False, slower=False, fused=False):
        if any(isinstance(x, str) for x in (pointwise, slower, fused)):
            raise TypeError("kforge.compile: pointwise, slower and fused take True, False or a list of workload names")
        self.pointwise, self.slower, self.fused = pointwise, slower, fused

    def why_not(self, description, bindings, device_type, producers=()):
        """Why a call of the workload's operator on inputs binding `bindings` on a `device_type` device is left to
        Inductor, or None when it is replaced. `producers`: the elementwise ops (names) whose results are the call's
        inputs and used by nothing else (fusible_producers)."""
        workload, spec = description["workload"], description["spec"]
        if not _opted_in(self.pointwise, workload) and elementwise_only(spec):
            ops = ", ".join(dict.fromkeys(step["op"] for step in spec["graph"]))
            return (f"elementwise only ({ops}): inductor fuses it into the kernels beside it, an operator would be "
                    f"one kernel more (pointwise=True replaces it)")
        if producers and not _opted_in(self.fused, workload):
            ops = ", ".join(dict.fromkeys(producers))
            return (f"its input is the result of {ops}, used by nothing else: inductor fuses that into the kernel, "
                    f"an operator would write it and read it back (fused=True replaces it)")
        if _opted_in(self.slower, workload):
            return None
        kernel = description.get("kernels", {}).get(device_type, {})
        if not kernel.get("kernel") or not kernel.get("source"):
            return None
        results = _record(kernel["source"]).get("results", {})
        key = kernel.get("key", device_type)
        case = case_name(spec, bindings)
        ours = results.get("case_us", {}).get(case)
        theirs = results.get("baselines", {}).get("compile", {}).get(case)
        if case is not None and ours is not None and theirs is not None:
            if ours > theirs:
                return (f"its stored kernel ({key}) is slower than torch.compile on case {case}: {ours:.3g} us "
                        f"against {theirs:.3g} us, {theirs / ours:.2f}x (slower=True replaces it)")
            return None
        overall = results.get("speedup", {}).get("compile")
        if overall is not None and overall < 1:
            call = ",".join(f"{k}={v}" for k, v in bindings.items()) or "this call"
            return (f"its stored kernel ({key}) is slower than torch.compile across its recorded cases, "
                    f"{overall:.2f}x ({call} is none of them; slower=True replaces it)")
        return None


def fusible_producers(nodes, call):
    """The elementwise ATen ops (names) among `nodes` (FX nodes: a call's inputs) whose result nothing but the call
    (`call`: its nodes, a match's) uses: those Inductor fuses into the call's kernel when it compiles the call
    itself."""
    import torch

    out, call = [], set(call)
    for n in nodes:
        if not isinstance(n, torch.fx.Node) or n.op != "call_function" or not set(n.users) <= call:
            continue
        if torch.Tag.pointwise in getattr(n.target, "tags", ()):
            out.append(str(n.target).split(".")[1] if str(n.target).startswith("aten.") else str(n.target))
    return out
