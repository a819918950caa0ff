"""kforge.compile (kforge.rewrite): the loaded workloads' operators in place of their patterns inside a
torch.compile'd graph, written anywhere in a forward (inline or not)::

    kforge.load("workloads", device="cuda")
    compiled = kforge.compile(model)                     # torch.compile(model, backend=<inductor after the rewrite>)
    compiled = kforge.compile(model, backend="eager")    # the rewritten graph run op by op (no inductor)
    kforge.rewritten(compiled)                           # [{"workload", "count"}]: what the rewrite replaced
    kforge.left_to_inductor(compiled)                    # [{"workload", "count", "why"}]: what its policy did not
    compiled = kforge.compile(model, pointwise=True)     # elementwise-only workloads replaced too
    compiled = kforge.compile(model, fused=True)         # calls whose input inductor would fuse in, replaced too

What it rewrites: each loaded workload's graph (its spec's ``graph`` steps, interpreted as the torch calls the spec
reference names: ``scale`` is ``x * factor``, ``softmax`` with a dtype is ``torch.softmax(x, dim, dtype=...)``,
``cast`` is ``.to(dtype)``, ...) is traced to ATen and becomes a pattern of torch's own pattern matcher
(``torch._inductor.pattern_matcher.register_replacement``, ``fwd_only``); a subgraph of the model's ATen graph
(after Dynamo and aot_autograd, forward only) equal to it, its intermediate results used nowhere else, becomes one
call of ``torch.ops.kforge.<workload>``. With backend "inductor" the pass runs as inductor's
``post_grad_custom_pre_pass`` on the graph inductor decomposed (the patterns are traced with inductor's
decompositions, so they decompose alike) and inductor compiles the rest around the operator; with "eager" or
"aot_eager" (the same here) aot_autograd gives the ATen graph without decompositions (the patterns are traced
without them too), the pass rewrites it and it runs op by op, as eager would with the operators in place.

The policy (kforge.policy, with backend "inductor" only): a workload whose graph is only elementwise ops is left to
inductor, which fuses it into the kernels beside it (``pointwise=True`` or a list of names replaces it), and so is
one whose stored kernel's record is slower than torch.compile on the call's case (``slower=True`` or names), and a
call whose input is an elementwise op's result nothing else reads, which inductor fuses in (``fused=True`` or
names); the operator calls patched modules put in the graph are held to it too (put back as the workload's ops).

A match is replaced only when the call is one the workload's spec covers: every input's dtype and rank as the
spec has them, its sizes binding the spec's shape (its symbols consistently, its fixed sizes equal), on a device
with a kernel loaded, each input laid out as the kernel takes it (contiguous or channels_last as the spec says,
16-byte aligned within its storage: a transposed or chunked view would make the operator run its eager graph)
(``require_kernel=False`` rewrites where the operator would only run its eager graph, for tests and for workloads
not yet tuned). A constant of the graph (a scale factor, a softmax dim, an eps, a dtype)
must equal the spec's exactly. A workload with several outputs (``add`` ``as: h`` then ``rms_norm``) is replaced
when all of its outputs are found in the graph.

An ``rms_norm`` is matched in the two ways models write it (``RMS_NORM_FORMS``): as ``F.rms_norm`` decomposes
(16-bit input upcast, pow, mean over the normalized dims, + eps in float32, rsqrt, the weight in float32, cast back)
and as Hugging Face's LlamaRMSNorm (the same statistics, cast back, then ``weight * y``), each traced on the cpu and,
where there is one, the GPU (the non-decomposed graph's casts name their device).

Operand order: an add or a mul of two tensors matches either way round (``mask + x`` as ``x + mask``, ``up *
silu(gate)`` as ``silu(gate) * up``): each traced pattern is registered once per order of its commutative calls
(``operand_orders``: all of them up to 4 such calls, 16 patterns; beyond, each call swapped alone and all swapped).
Sub, div and an add with alpha keep their order, as does a tensor and a Python number (Python puts the tensor first).

Limits: only what torch.compile traces (a graph break leaves two graphs, each rewritten on its own); a pattern
written differently from the spec's reference and its forms (another order of an RMSNorm's casts and weight, a
GemmaRMSNorm's 1 + weight) is a different ATen graph and is not matched (kforge.patch's matching by behaviour takes
such modules); symbolic sizes (``dynamic=True``) are not matched (the spec's sizes are checked on concrete ints); a
float constant must be the spec's bit for bit. Tested: softmax, log_softmax, scale, add_mask, cast, silu, mul, add,
an add then rms_norm (two outputs) written either way, adds and muls with their operands swapped, and a
group_norm with its silu (a module, any channels the groups divide). Workloads of one graph that differ in
what a pattern does not see (dtypes, layouts, sizes) share its pattern; a match goes to the first whose spec
covers the call. The same
patterns rewrite a graph captured without compiling: kforge.rewrite_eager (kforge.eager_rewrite).
Inference only: the operators have no backward, so a match whose inputs require grad is refused. The pass replaces inductor's ``post_grad_custom_pre_pass`` for the compile it is given to, and turns off
inductor's FX graph cache for it (a cached graph would not run the pass, so what it replaced would go uncounted).
"""
import inspect

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from .behaviour import _bind
from .modules import _DTYPES, kernel_flags
from .policy import fusible_producers

_SMALL = 8  # the size given to a spec's shape symbol when tracing its pattern (any size binds)

# The ATen calls whose two tensor operands may come in either order (``mask + x`` is ``x + mask``, bit for bit, in
# value, dtype and shape); not sub or div, and not add with an alpha.
_COMMUTATIVE = (torch.ops.aten.add.Tensor, torch.ops.aten.mul.Tensor)
# A traced pattern with k such calls is registered once per operand order: every order while k <= 4 (at most 16
# patterns per form), else the traced order, each call swapped alone and all of them swapped (k + 2), so that a graph
# with many of them stays at a few dozen patterns. Beyond 4, a model writing two of the calls the other way round
# (and not all of them) is not matched.
_ALL_ORDERS_UP_TO = 4


# The ways a model writes an RMSNorm, each a pattern of its own (a spec's rms_norm is any of them, as capture lifts
# them all to rms_norm): "aten", F.rms_norm as ATen decomposes it (16-bit inputs upcast, pow, mean over the
# normalized dims, + eps, rsqrt, the weight multiplied in float32, cast back); "weight_first", Hugging Face's
# LlamaRMSNorm (the same statistics, cast back, then weight * y).
RMS_NORM_FORMS = ("aten", "weight_first")


def _rms_norm(x, normalized_shape, w, eps, form):
    low = x.dtype in (torch.float16, torch.bfloat16)
    if eps is None:
        eps = torch.finfo(torch.float32 if low else x.dtype).eps
    xf = x.to(torch.float32) if low else x
    if form == "aten":
        # As the decomposition writes it: positive dims, eps rounded to float32, the cast with its layout and device.
        dims = [x.dim() - len(normalized_shape) + i for i in range(len(normalized_shape))]
        eps32 = torch.tensor(eps, dtype=torch.float32).item()
        y = xf * torch.rsqrt(torch.ops.aten.add.Scalar(xf.pow(2).mean(dims, keepdim=True), eps32))
        if w is not None:
            y = y * w
        return torch.ops.aten._to_copy.default(y, dtype=x.dtype, layout=torch.strided, device=x.device) if low else y
    dims = -1 if len(normalized_shape) == 1 else [-i for i in range(len(normalized_shape), 0, -1)]
    y = xf * torch.rsqrt(xf.pow(2).mean(dims, keepdim=True) + eps)
    y = y.to(x.dtype) if low else y
    return w * y if w is not None else y


def _reference(op, x, args, values, form="aten"):
    """One spec op as the torch calls docs/workload-spec.md names (`form`: which of RMS_NORM_FORMS an rms_norm is)."""
    t = lambda name: values[args[name]] if args.get(name) is not None else None  # noqa: E731
    if op == "scale":
        return x * args["factor"]
    if op == "softcap":
        return torch.tanh(x / args["cap"]) * args["cap"]
    if op == "add_mask":
        return x + t("mask")
    if op == "masked_fill":
        return x.masked_fill(t("mask"), float(args["value"]))
    if op == "where":
        return torch.where(t("condition"), x, float(args["value"]))
    if op in ("softmax", "log_softmax"):
        fn = torch.softmax if op == "softmax" else torch.log_softmax
        dtype = args.get("dtype")
        return fn(x, args["dim"], dtype=_DTYPES[dtype]) if dtype else fn(x, args["dim"])
    if op == "topk":
        return torch.topk(x, args["k"], dim=args.get("dim", -1), largest=args.get("largest", True),
                          sorted=args.get("sorted", True))
    if op == "group_norm":
        return F.group_norm(x, args["num_groups"], t("weight"), t("bias"), args.get("eps", 1e-5))
    if op == "layer_norm":
        return F.layer_norm(x, list(args["normalized_shape"]), t("weight"), t("bias"), args.get("eps", 1e-5))
    if op == "rms_norm":
        return _rms_norm(x, list(args["normalized_shape"]), t("weight"), args.get("eps"), form)
    if op == "silu":
        return F.silu(x)
    if op == "gelu":
        return F.gelu(x, approximate=args.get("approximate", "none"))
    if op in ("sigmoid", "tanh", "relu", "exp", "rsqrt", "neg"):
        return getattr(torch, op)(x)
    if op in ("hardswish", "hardsigmoid"):
        return getattr(F, op)(x)
    if op == "clamp":
        return torch.clamp(x, args.get("min"), args.get("max"))
    if op in ("add", "sub", "mul", "div"):  # other: an input, or a number (x + 1.0)
        other = args["other"]
        return getattr(torch, op)(x, other if isinstance(other, (int, float)) else t("other"))
    if op == "adaptive_avg_pool2d":
        return F.adaptive_avg_pool2d(x, args["output_size"])
    if op in ("avg_pool2d", "max_pool2d"):
        stride = args.get("stride") or None  # none or [] means the kernel's
        if op == "max_pool2d":
            return F.max_pool2d(x, args["kernel_size"], stride, args.get("padding", 0), ceil_mode=args.get("ceil_mode", False))
        return F.avg_pool2d(x, args["kernel_size"], stride, args.get("padding", 0), args.get("ceil_mode", False),
                            args.get("count_include_pad", True), args.get("divisor_override"))
    if op == "flatten":
        return torch.flatten(x, args.get("start_dim", 0), args.get("end_dim", -1))
    if op == "cast":
        return x.to(_DTYPES[args["dtype"]])
    if op == "linear":
        return F.linear(x, t("weight"), t("bias"))
    if op == "matmul":
        return torch.matmul(x, t("other"))
    raise NotImplementedError(f"kforge.rewrite: no reference for spec op {op!r}")


class _Ordered(TorchDispatchMode):
    """Swaps the operands of the commutative calls (_COMMUTATIVE, two distinct tensors) whose bit is set in `swaps`,
    counting them in call order; `tally` (a one-element list) keeps the most calls one run saw."""

    def __init__(self, swaps, tally=None):
        super().__init__()
        self.swaps, self.seen, self.tally = swaps, 0, tally

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _COMMUTATIVE and len(args) == 2 and not kwargs and args[0] is not args[1] and \
                all(isinstance(a, torch.Tensor) for a in args):
            if self.swaps >> self.seen & 1:
                args = (args[1], args[0])
            self.seen += 1
            if self.tally is not None:
                self.tally[0] = max(self.tally[0], self.seen)
        return func(*args, **kwargs)


def in_order(fn, swaps, tally=None):
    """`fn` (a pattern function) with the operands of its commutative calls swapped where `swaps` has a bit set
    (bit i: the i-th such call it makes); traced, it gives the pattern of a model writing them that way round."""

    def ordered(*tensors):
        with _Ordered(swaps, tally):
            return fn(*tensors)

    ordered.__signature__ = inspect.signature(fn)
    ordered.__name__ = fn.__name__
    return ordered


def operand_orders(k):
    """The `swaps` masks registered for a pattern with k commutative calls (see _ALL_ORDERS_UP_TO); 0 first."""
    if k <= _ALL_ORDERS_UP_TO:
        return list(range(1 << k))
    return [0] + [1 << i for i in range(k)] + [(1 << k) - 1]


def reference_function(spec, form="aten"):
    """A function of the spec's inputs (named as they are) computing its graph with torch ops: the pattern."""
    names = [i["name"] for i in spec["inputs"]]
    graph = spec["graph"]
    refs = spec.get("output_refs") or [{"step": len(graph) - 1, "index": 0}]

    def fn(*tensors):
        values = dict(zip(names, tensors))
        results, prev = [], None
        for step in graph:
            args = step["args"]
            x = values[args["input"]] if args.get("input") is not None else prev
            out = _reference(step["op"], x, args, values, form)
            outs = list(out) if isinstance(out, tuple) else [out]
            results.append(outs)
            name = step.get("as")
            if isinstance(name, str):
                values[name] = outs[0]
            elif isinstance(name, list):
                values.update(zip(name, outs))
            prev = outs[0]
        got = [results[r["step"]][r["index"]] for r in refs]
        return got[0] if len(got) == 1 else tuple(got)

    fn.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                          for n in names])
    fn.__name__ = "kforge_pattern"
    return fn


def _operator_function(description, opname=None):
    """A function of the description's inputs (named as they are) calling its operator, or the one `opname()`
    names at the call."""
    names = [i["name"] for i in description["spec"]["inputs"]]
    opname = opname or (lambda: description["op"])

    def fn(*tensors):
        return getattr(torch.ops.kforge, opname())(*tensors)

    fn.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                          for n in names])
    fn.__name__ = "kforge_" + description["op"]
    return fn


def _example_sizes(spec):
    """The shape symbols' sizes to trace a spec's pattern at: those of its smallest case, so that an op that checks
    its sizes (group_norm's channels divisible by its groups) traces; _SMALL where no case binds a symbol. Any case
    does: the pattern matcher ignores the traced sizes (ints) in its first match and re-traces each candidate match
    at its own sizes."""
    def elements(case):
        b = dict(case.get("bindings", []))
        n = 1
        for i in spec["inputs"]:
            for s in i["shape"]:
                n *= s if isinstance(s, int) else b.get(s, _SMALL)
        return n

    cases = spec.get("cases") or []
    return dict(min(cases, key=elements).get("bindings", [])) if cases else {}


def _example_inputs(spec, device):
    """Fake tensors of the spec's inputs' dtypes and ranks for tracing its pattern, at its smallest case's sizes
    (fake: a case may be gigabytes, and tracing needs only shapes)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    sizes = _example_sizes(spec)
    with FakeTensorMode(allow_non_fake_inputs=True):
        return [torch.empty([s if isinstance(s, int) else sizes.get(s, _SMALL) for s in i["shape"]],
                            dtype=_DTYPES[i["dtype"]], device=device) for i in spec["inputs"]]


def bindings(spec, values):
    """The spec's shape symbols as the match's input values (fake tensors, in the spec's input order) bind them,
    {symbol: size}, or None when their sizes are not concrete or do not bind the spec's shape."""
    symbols = {}
    for i, v in zip(spec["inputs"], values):
        if not isinstance(v, torch.Tensor) or not all(isinstance(size, int) for size in v.shape):
            return None  # symbolic: the spec's sizes cannot be checked
        symbols = _bind(i["shape"], tuple(v.shape), symbols)
        if symbols is None:
            return None
    return symbols


def covers(spec, values, kernels=None):
    """Whether the match's input values (fake tensors, in the spec's input order) are a call the spec covers:
    dtypes, ranks, sizes binding the shape, no gradient; and, given `kernels` ({device kind: bool}), a call the
    kernel takes: a kernel loaded for their device, each input laid out as the spec says (contiguous, or
    channels_last) and starting 16-byte aligned within its storage, as the operator checks before it launches (a
    view such as a transpose's or a chunk's would make it run its eager graph, slower than leaving the match be)."""
    device = None
    for i, v in zip(spec["inputs"], values):
        if not isinstance(v, torch.Tensor) or v.dtype != _DTYPES[i["dtype"]] or v.dim() != len(i["shape"]):
            return False
        if v.requires_grad:
            return False
        if kernels is not None:
            layout = torch.channels_last if i.get("memory_format") == "channels_last" else torch.contiguous_format
            if not v.is_contiguous(memory_format=layout) or v.storage_offset() * v.element_size() % 16:
                return False
        if device is None:
            device = v.device
        elif v.device != device:
            return False
    if bindings(spec, values) is None:
        return False
    if kernels is not None and not kernels.get(device.type, False):
        return False
    return True


class _Slot:
    """One registered pattern and the workloads whose graph it is (several when their specs differ only in what the
    pattern does not see: dtypes, layouts, sizes). The check takes the first that accepts the match and the
    replacement calls its operator (the pattern matcher traces the replacement right after the check passes)."""

    def __init__(self, rewrite, d):
        self.rewrite, self.candidates, self.chosen = rewrite, [d], d
        self.replace = _operator_function(d, lambda: self.chosen["op"])

    def check(self, match):
        for d in self.candidates:
            if self.rewrite._accepts(d, match):
                self.chosen = d
                # the pass replaces the match now (the check is the last step before it)
                self.rewrite.matches.append((d["workload"], [n.name for n in match.nodes]))
                return True
        return False


class Rewrite:
    """The rewrite pass of the loaded workloads (or `names`): a PatternMatcherPass with one replacement per
    workload whose graph traces (per form and device, and per operand order of its commutative calls:
    operand_orders). `counts` says how many matches of each workload it replaced so far; `matches` the nodes of
    each match, [(workload, [node names])], and `replacements` the operator nodes put in their place, {workload:
    [node names]}, in the graphs rewritten so far; `patterns` how many patterns were registered; `skipped` which
    workloads have no pattern, and why. With a `policy` (kforge.policy.CompilePolicy, kforge.compile's), a match it
    declines is left as it is and an operator call already in the graph (a patched module's) that it declines is put
    back as the workload's reference ops; `left` counts them, {workload: {why: count}}."""

    def __init__(self, descriptions, decompositions="inductor", require_kernel=True, policy=None):
        from torch._inductor import pattern_matcher as pm

        self.descriptions = descriptions
        self.require_kernel = require_kernel
        self.policy = policy
        self.counts = {}
        self.matches = []
        self.replacements = {}
        self.patterns = 0
        self.skipped = []
        self.left = {}
        self._declined = set()  # the matches declined so far: several patterns of a workload may find one match
        self.pass_ = pm.PatternMatcherPass(pass_name="kforge_rewrite")
        decomp = None if decompositions == "inductor" else (lambda: decompositions)
        self._decomp = decomp

        def trace(fn, args):
            gm = pm.fwd_only(fn, args, get_decomp_fn=decomp)
            if decompositions == "inductor":
                # The graph inductor's custom passes see has been through its joint-graph passes (a chain of
                # casts between float types is one cast: GroupNorm's bfloat16 output upcast again by the SiLU
                # after it becomes a float32-to-float32 cast, which stays until after the custom passes) and
                # view_to_reshape (a decomposed group_norm's views are reshapes): the pattern must be the same.
                from torch._inductor.fx_passes.joint_graph import joint_graph_passes
                from torch._inductor.fx_passes.post_grad import view_to_reshape

                joint_graph_passes(gm)
                view_to_reshape(gm)
            return gm
        self._trace = trace
        self._slots = {}  # a traced pattern's graph -> its _Slot: the workloads sharing it, tried in order
        # The longest graphs first: a workload containing another one's graph wins where both match.
        for d in sorted(descriptions, key=lambda d: -len(d["spec"]["graph"])):
            spec = d["spec"]
            forms = RMS_NORM_FORMS if any(s["op"] == "rms_norm" for s in spec["graph"]) else RMS_NORM_FORMS[:1]
            # Traced on each device a model may run on: a cast's device is part of the non-decomposed ATen graph.
            devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
            for form, device in [(f, dev) for f in forms for dev in devices]:
                try:
                    search = reference_function(spec, form)
                    example = _example_inputs(spec, device)
                    tally = [0]  # the commutative calls, counted while the traced order's pattern traces
                    with torch.no_grad():
                        self._register(in_order(search, 0, tally), example, d)
                        for swaps in operand_orders(tally[0])[1:]:
                            self._register(in_order(search, swaps), example, d)
                except Exception as e:  # an op without a reference, a graph that does not trace
                    self.skipped.append({"workload": d["workload"], "why": f"{type(e).__name__}: {e}"})

    def _register(self, search, example, d):
        """Registers `search` (traced at `example`) as a pattern of workload `d`. A pattern already registered (the
        same graph: another workload of the same ops in another dtype or layout, or an order of `d`'s own operands
        giving the same graph, x * x) gets `d` as one more workload to try, in order, where a match is found."""
        from torch._inductor import pattern_matcher as pm

        key = str(self._trace(search, example).graph)
        slot = self._slots.get(key)
        if slot is not None:
            if d not in slot.candidates:
                slot.candidates.append(d)
            return
        slot = self._slots[key] = _Slot(self, d)
        self.patterns += pm.register_replacement(search, slot.replace, example, self._trace, self.pass_,
                                                 extra_check=slot.check, skip_duplicates=True) is not False

    def _accepts(self, d, match):
        """Whether the pass replaces `match` by workload `d`'s operator: a call its spec covers, with a kernel
        (unless not required), that the policy does not decline (recorded in `left` once per match)."""
        spec, workload = d["spec"], d["workload"]
        inputs = [match.kwargs.get(i["name"]) for i in spec["inputs"]]
        values = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in inputs]
        if not covers(spec, values, kernel_flags(d, self.require_kernel)):
            return False
        if self.policy is not None:
            why = self.policy.why_not(d, bindings(spec, values), values[0].device.type,
                                      fusible_producers(inputs, match.nodes))
            if why:
                key = (workload, id(match.nodes[0].graph), frozenset(n.name for n in match.nodes))
                if key not in self._declined:
                    self._declined.add(key)
                    self._leave(workload, why)
                return False
        return True

    def _leave(self, workload, why):
        by_why = self.left.setdefault(workload, {})
        by_why[why] = by_why.get(why, 0) + 1

    def __call__(self, graph):
        """Rewrites `graph` (a torch.fx.Graph) in place; returns the number of replacements."""
        before = self._calls(graph)
        seen = set(before)
        n = self.pass_.apply(graph)
        for node in self._calls(graph):
            if node not in seen:  # an operator call the pass put in (not one a patched module makes)
                op = node.target._opname
                w = next((d["workload"] for d in self.descriptions if d["op"] == op), op)
                self.counts[w] = self.counts.get(w, 0) + 1
                self.replacements.setdefault(w, []).append(node.name)
        if self.policy is not None:
            for node in before:  # a patched module's calls: the policy holds for them too
                self._apply_policy(graph, node)
        return n

    def _apply_policy(self, graph, node):
        """Puts a patched module's operator call the policy declines back as the workload's reference ops."""
        op = node.target._opname
        d = next((d for d in self.descriptions if d["op"] == op), None)
        if d is None:
            import kforge
            try:
                d = kforge.describe(op)
            except RuntimeError:
                return
        spec = d["spec"]
        values = [a.meta.get("val") if isinstance(a, torch.fx.Node) else None for a in node.args]
        b = bindings(spec, values) if len(values) == len(spec["inputs"]) and not node.kwargs else None
        if b is None:
            return
        why = self.policy.why_not(d, b, values[0].device.type, fusible_producers(node.args, [node]))
        if not why:
            return
        if _inline_reference(graph, node, spec, values, self._decomp):
            self._leave(d["workload"], why)
        else:
            import warnings
            warnings.warn(f"kforge.compile: {d['workload']}'s call in {node.name} stays: its policy would leave it to "
                          f"inductor ({why}), but it could not be put back as the workload's ops")

    @staticmethod
    def _calls(graph):
        return [node for node in graph.nodes if node.op == "call_function" and
                isinstance(node.target, torch._ops.OpOverload) and node.target.namespace == "kforge"]



def _inline_reference(graph, node, spec, values, decomp):
    """Replaces the operator call `node` in `graph` by the spec's graph as ATen ops (traced on the call's fake input
    values, with the rewrite's decompositions), for inductor to compile; False when that cannot be done (a traced
    constant, or outputs that are not the call's)."""
    import contextlib
    import operator

    from torch._inductor import pattern_matcher as pm
    from torch._inductor.virtualized import NullHandler, V

    fake_mode = V.fake_mode  # inductor's, while its passes run
    if fake_mode is None or isinstance(fake_mode, NullHandler):
        fake_mode = torch._guards.detect_fake_mode(values)
    try:
        with fake_mode if fake_mode is not None else contextlib.nullcontext(), torch.no_grad():
            gm = pm.fwd_only(reference_function(spec), values, get_decomp_fn=decomp)
    except Exception:
        return False
    if any(n.op == "get_attr" for n in gm.graph.nodes):
        return False  # a constant the traced graph holds, which `graph`'s module does not
    users = list(node.users)
    many = len(spec.get("output_refs") or [None]) > 1
    if many and not all(u.target is operator.getitem and isinstance(u.args[1], int) for u in users):
        return False
    env = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(node.args):
        return False
    env.update(zip(placeholders, node.args))
    out = None
    with graph.inserting_before(node):
        for n in gm.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                out = torch.fx.map_arg(n.args[0], lambda a: env[a])
                break
            env[n] = graph.node_copy(n, lambda a: env[a])
    if many:
        for u in users:
            u.replace_all_uses_with(out[u.args[1]])
            graph.erase_node(u)
    else:
        node.replace_all_uses_with(out[0] if isinstance(out, (tuple, list)) else out)
    graph.erase_node(node)
    return True


def _custom_pass(rewrite):
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class _Pass(CustomGraphPass):
        def __call__(self, graph):
            rewrite(graph)

        def uuid(self):
            # None bypasses inductor's FX graph cache: a cached graph would skip the pass, and `counts` (what
            # kforge.rewritten and e2e report) would miss what it replaced.
            return None

    return _Pass()


def rewrite_backend(backend="inductor", names=None, require_kernel=True, pointwise=False, slower=False, fused=False):
    """A torch.compile backend that replaces the loaded workloads' patterns (or only `names`') with their operators,
    then compiles with inductor ("inductor") or runs the rewritten ATen graph ("eager", "aot_eager"). The backend's
    ``kforge_rewrite`` attribute is the pass (``.counts``: the replacements so far, by workload; ``.left``: what
    the policy left to inductor, and why). With "inductor", kforge.compile's policy (kforge.policy) leaves to
    inductor the workloads whose graphs are elementwise only (unless `pointwise`: True, or the workloads' names)
    and those whose stored kernel's record is slower than torch.compile on the call's case (unless `slower`: True,
    or names), and calls whose input is an elementwise op's result nothing else uses, which inductor would fuse in
    (unless `fused`: True, or names); the other backends fuse nothing and replace every match."""
    from .modules import _descriptions
    from .policy import CompilePolicy
    import kforge

    descriptions = _descriptions(names)
    if backend == "inductor":
        rewrite = Rewrite(descriptions, "inductor", require_kernel, CompilePolicy(pointwise, slower, fused))

        def compiler(gm, example_inputs):
            from torch._inductor.compile_fx import compile_fx
            return compile_fx(gm, example_inputs, config_patches={"post_grad_custom_pre_pass": _custom_pass(rewrite)})
    elif backend in ("eager", "aot_eager"):
        from torch._dynamo.backends.common import aot_autograd
        from torch._functorch.aot_autograd import make_boxed_func

        rewrite = Rewrite(descriptions, {}, require_kernel)

        def forward(gm, example_inputs):
            if rewrite(gm.graph):
                gm.graph.lint()
                gm.recompile()
            return make_boxed_func(gm)

        compiler = aot_autograd(fw_compiler=forward, decompositions={})
    else:
        raise ValueError(f"kforge.rewrite_backend: backend {backend!r} (expected inductor, eager or aot_eager)")
    del kforge

    def kforge_backend(gm, example_inputs):
        return compiler(gm, example_inputs)

    kforge_backend.kforge_rewrite = rewrite
    return kforge_backend


def compile(model, backend="inductor", names=None, require_kernel=True, pointwise=False, slower=False, fused=False,
            **kwargs):
    """torch.compile(model, backend=rewrite_backend(backend, names, require_kernel, pointwise, slower, fused),
    **kwargs):
    the model compiled with the loaded workloads' patterns replaced by their operators, where the policy
    (kforge.policy; with backend "inductor") does not leave them to inductor: a workload whose graph is elementwise
    only is left to inductor, which fuses it (``pointwise=True``, or a list of workload names, replaces it), and so
    is one whose stored kernel's record is slower than torch.compile on the call's case (``slower=True`` or names),
    and a call whose input is an elementwise op's result used by nothing else, which inductor fuses into the kernel
    (``fused=True`` or names).
    ``rewritten(result)`` says what was replaced and ``left_to_inductor(result)`` what was not, and why (after the
    first call compiles it)."""
    b = rewrite_backend(backend, names, require_kernel, pointwise, slower, fused)
    compiled = torch.compile(model, backend=b, **kwargs)
    try:
        compiled._kforge_rewrite = b.kforge_rewrite
    except AttributeError:
        pass
    return compiled


def _pass_of(compiled):
    return getattr(compiled, "_kforge_rewrite", None) or getattr(compiled, "kforge_rewrite", None)


def rewritten(compiled):
    """[{"workload", "count"}]: the workloads whose patterns the rewrite of `compiled` (kforge.compile's result, a
    backend of rewrite_backend, or kforge.rewrite_eager's result) replaced, and how many times, in the graphs
    compiled (or captured) so far."""
    r = _pass_of(compiled)
    if r is None:
        return []
    return [{"workload": w, "count": n} for w, n in sorted(r.counts.items())]


def left_to_inductor(compiled):
    """[{"workload", "count", "why"}]: the operator calls kforge.compile's policy left to inductor in `compiled`'s
    graphs so far (matches of the rewrite left as they were, patched modules' calls put back as the workload's
    ops), by workload and reason; [] for a rewrite without the policy (kforge.rewrite_eager, the eager backends)."""
    r = _pass_of(compiled)
    if r is None:
        return []
    return [{"workload": w, "count": n, "why": why} for w, by_why in sorted(r.left.items())
            for why, n in by_why.items()]
