"""kforge.patch (kforge.modules): the loaded workloads' operators in place of the modules that compute their graphs.

It matches modules two ways; ``patched_modules(model)`` says which (``how``: "rule" or "behaviour").

**By rule** (always): modules whose forward is, exactly, a loaded workload's graph with one input and one output,
the module's parameters being the spec's other inputs. The module types it reads are a table (``MODULE_RULES``),
each giving the module's forward as steps of the spec's op language:

- one module: nn.LayerNorm, nn.RMSNorm, nn.GroupNorm, nn.Linear, nn.SiLU, nn.GELU, nn.ReLU, nn.Sigmoid, nn.Tanh,
  nn.Hardswish, nn.Hardsigmoid, nn.ReLU6 and nn.Hardtanh (as clamp), nn.Softmax, nn.LogSoftmax (with a dim),
  nn.AdaptiveAvgPool2d, nn.AvgPool2d, nn.MaxPool2d (no dilation or indices), nn.Flatten;
- consecutive children of an nn.Sequential whose steps together are one workload's graph (GroupNorm then SiLU,
  AdaptiveAvgPool2d then Flatten, LayerNorm then GELU): the first child computes the whole run, the others become
  nn.Identity.

**By behaviour** (``patch(model, example_inputs=...)``, kforge.behaviour has the details): any other module, of any
class, whose call on the example inputs computed what a loaded workload's operator computes. The model runs once
(no gradient) with hooks on the modules the rule table left alone; a module whose first call took one tensor and
returned one, without changing its input, in eval mode, is tried against each workload whose first input binds the
call's dtype and shape: the spec's other inputs bound to the module's parameters and buffers by shape (by name,
weight or bias, where several fit; every one of them must be bound), the operator's result equal to the module's
within the workload's output tolerance, as is or viewed with the module's extra size-1 dims (a pool's [N, C, 1, 1]
for a pool-and-flatten workload's [N, C]), and again on a second, freshly drawn input of the same shape. That
patches a model's own RMSNorm class written as Llama's is (it rounds twice, within bfloat16's tolerance) and not
Gemma's (1 + weight), and the pool before an inline ``torch.flatten``. Of a module and one inside it that both
match, the outer one is patched; a module holding a patched module never is.

A patched module calls the operator when a call is what the workload describes (the input's and parameters'
dtypes, ranks, sizes and memory layout as the spec has them, a device with a kernel loaded, no gradient needed)
and its own forward otherwise, so a patched model computes what it did, on every input. The module keeps its class, its
parameters and its state_dict keys (its forward is replaced on the instance); ``unpatch`` restores it.

What it cannot patch: computation that is not a module, such as a SwiGLU written inline in an MLP's forward
(``down(silu(gate(x)) * up(x))``), a residual add before a norm, a softmax with its scale and mask (by rule, a
model's own RMSNorm class neither: matching by class name would change what Gemma's computes; pass example inputs,
or add a rule to ``MODULE_RULES`` for a class you know); workloads with several inputs besides parameters or several
outputs; modules in-place (``inplace=True``) or in training mode; and training, since the operators have no
backward. Inline patterns are kforge.compile's (kforge.rewrite): a rewrite of the torch.compile'd graph, which finds
a pattern in any forward, but only in what Dynamo traces; and kforge.rewrite_eager's, the same rewrite of the
forward captured as an ATen graph and run eagerly, for the call it was captured on. Module swapping works on any
model, on any call, in eager and under torch.compile, and keeps the model as it was. They compose:
kforge.compile(kforge.patch(model)), kforge.rewrite_eager(kforge.patch(model), inputs).
"""
import math
import types
from dataclasses import dataclass, field

import torch
from torch import nn

_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
    "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
}

# rms_norm's eps when a module gives none: ATen's default, the epsilon of the op's compute type (float32's for 16-bit
# and float32 inputs), as the spec parser fills it (spec/ops.h rms_norm_default_eps).
DTYPE_EPS = object()


@dataclass
class Step:
    """One op of a module's forward in the spec's op language."""
    op: str
    args: dict = field(default_factory=dict)     # its non-tensor arguments (the op registry's defaults fill the rest)
    tensors: dict = field(default_factory=dict)  # tensor argument -> the module's attribute holding it (None: absent)
    module: nn.Module = None                     # whose attributes `tensors` names


def _attr(m, name):
    return name if getattr(m, name, None) is not None else None


def _inplace(m):
    return getattr(m, "inplace", False)


MODULE_RULES = {
    nn.LayerNorm: lambda m: [Step("layer_norm", {"normalized_shape": list(m.normalized_shape), "eps": m.eps},
                                  {"weight": _attr(m, "weight"), "bias": _attr(m, "bias")}, m)],
    nn.RMSNorm: lambda m: [Step("rms_norm", {"normalized_shape": list(m.normalized_shape),
                                             "eps": DTYPE_EPS if m.eps is None else m.eps},
                                {"weight": _attr(m, "weight")}, m)],
    nn.GroupNorm: lambda m: [Step("group_norm", {"num_groups": m.num_groups, "eps": m.eps},
                                  {"weight": _attr(m, "weight"), "bias": _attr(m, "bias")}, m)],
    nn.Linear: lambda m: [Step("linear", {}, {"weight": "weight", "bias": _attr(m, "bias")}, m)],
    nn.SiLU: lambda m: None if _inplace(m) else [Step("silu", module=m)],
    nn.GELU: lambda m: [Step("gelu", {"approximate": m.approximate}, module=m)],
    nn.ReLU: lambda m: None if _inplace(m) else [Step("relu", module=m)],
    nn.Sigmoid: lambda m: [Step("sigmoid", module=m)],
    nn.Tanh: lambda m: [Step("tanh", module=m)],
    nn.Hardswish: lambda m: None if _inplace(m) else [Step("hardswish", module=m)],
    nn.Hardsigmoid: lambda m: None if _inplace(m) else [Step("hardsigmoid", module=m)],
    nn.ReLU6: lambda m: None if _inplace(m) else [Step("clamp", {"min": 0.0, "max": 6.0}, module=m)],
    nn.Hardtanh: lambda m: None if _inplace(m) else [Step("clamp", {"min": m.min_val, "max": m.max_val}, module=m)],
    nn.Softmax: lambda m: None if m.dim is None else [Step("softmax", {"dim": m.dim}, module=m)],
    nn.LogSoftmax: lambda m: None if m.dim is None else [Step("log_softmax", {"dim": m.dim}, module=m)],
    nn.AdaptiveAvgPool2d: lambda m: (None if m.output_size is None or
                                     (isinstance(m.output_size, (tuple, list)) and None in m.output_size) else
                                     [Step("adaptive_avg_pool2d", {"output_size": m.output_size}, module=m)]),
    nn.AvgPool2d: lambda m: [Step("avg_pool2d", {"kernel_size": m.kernel_size, "stride": m.stride, "padding": m.padding,
                                                 "ceil_mode": m.ceil_mode, "count_include_pad": m.count_include_pad,
                                                 "divisor_override": m.divisor_override}, module=m)],
    nn.MaxPool2d: lambda m: (None if m.return_indices or m.dilation not in (1, (1, 1), [1, 1]) else
                             [Step("max_pool2d", {"kernel_size": m.kernel_size, "stride": m.stride, "padding": m.padding,
                                                  "ceil_mode": m.ceil_mode}, module=m)]),
    nn.Flatten: lambda m: [Step("flatten", {"start_dim": m.start_dim, "end_dim": m.end_dim}, module=m)],
}


def _canonical(op, args):
    """avg_pool2d's and max_pool2d's stride as it runs: none (or []) is the kernel's."""
    if op in ("avg_pool2d", "max_pool2d") and args.get("stride") in (None, [], ()):
        return dict(args, stride=args.get("kernel_size"))
    return args


def _steps(m):
    rule = MODULE_RULES.get(type(m))
    return rule(m) if rule else None


def _as_list(op, name, v):
    v = [v] if isinstance(v, int) else list(v)
    if (op == "adaptive_avg_pool2d" and name == "output_size" or
            op in ("avg_pool2d", "max_pool2d") and name in ("kernel_size", "stride", "padding")) and len(v) == 1:
        return v * 2  # a size s or [s] is [s, s] (spec/ops.h pool_output_size, pool_window_of)
    return v


def _same(op, arg, kind, ours, theirs, spec_dtype):
    if ours is DTYPE_EPS:
        ours = torch.finfo(torch.float64 if spec_dtype == torch.float64 else torch.float32).eps
    if ours is None or theirs is None:
        return ours is None and theirs is None
    if kind in ("number", "fill"):  # a fill value may be "inf" / "-inf"
        return math.isclose(float(ours), float(theirs), rel_tol=1e-9, abs_tol=0.0)
    if kind == "int_list":
        return _as_list(op, arg, ours) == _as_list(op, arg, theirs)
    return ours == theirs


@dataclass
class _Binding:
    """How a matched workload's operator is called from a patched module: each spec input is the module's input
    (None) or a step module's attribute."""
    workload: str
    op: object
    inputs: list     # per spec input: (spec input dict, None | (module, attribute))
    kernels: dict    # device kind -> whether a kernel is loaded
    view: list = None  # behaviour matches only: the module's output as the operator's dims (an index) and 1s (None)

    def output(self, out):
        """The operator's result as the module returns it: viewed with the module's size-1 dims where it has them."""
        if self.view is None:
            return out
        return out.view([1 if i is None else out.shape[i] for i in self.view])

    def arguments(self, x, need_kernel=True):
        """The operator's arguments for input x, or None when the call is not what the workload describes (or, with
        need_kernel, no kernel is loaded for x's device)."""
        if not isinstance(x, torch.Tensor) or (need_kernel and not self.kernels.get(x.device.type, False)):
            return None
        args, symbols = [], {}
        grad = torch.is_grad_enabled()
        for spec_input, source in self.inputs:
            t = x if source is None else getattr(source[0], source[1])
            if not isinstance(t, torch.Tensor) or t.device != x.device or (grad and t.requires_grad):
                return None
            if t.dtype != _DTYPES[spec_input["dtype"]] or t.dim() != len(spec_input["shape"]):
                return None
            layout = torch.channels_last if spec_input.get("memory_format") == "channels_last" else torch.contiguous_format
            if not t.is_contiguous(memory_format=layout):
                return None
            for size, want in zip(t.shape, spec_input["shape"]):
                if isinstance(want, str):
                    if symbols.setdefault(want, size) != size:
                        return None
                elif size != want:
                    return None
            args.append(t)
        return args


def _match(steps, description, op_table):
    """The binding of `steps` (a module run) to a workload, or None when its graph is not exactly theirs."""
    spec = description["spec"]
    graph = spec["graph"]
    if len(graph) != len(steps) or len(description["outputs"]) != 1:
        return None
    last = graph[-1]
    if description["outputs"][0] != (last.get("as") or op_table[last["op"]]["outputs"][0]):
        return None
    inputs = {i["name"]: i for i in spec["inputs"]}
    primary = graph[0]["args"].get("input")
    spec_dtype = _DTYPES[inputs[primary]["dtype"]]
    sources = {primary: None}
    for step, g in zip(steps, graph):
        if step.op != g["op"]:
            return None
        g_args, step_args = _canonical(g["op"], g["args"]), _canonical(step.op, step.args)
        for a in op_table[g["op"]]["args"]:
            name, theirs = a["name"], g_args.get(a["name"], a["default"])
            if a["kind"] == "tensor":
                ours = step.tensors.get(name)
                if (ours is None) != (theirs is None):
                    return None
                if ours is not None:
                    if theirs in sources:
                        return None
                    sources[theirs] = (step.module, ours)
            elif not _same(g["op"], name, a["kind"], step_args.get(name, a["default"]), theirs, spec_dtype):
                return None
    if set(sources) != set(inputs):
        return None
    import kforge
    return _Binding(description["workload"], kforge.op(description["workload"]),
                    [(i, sources[i["name"]]) for i in spec["inputs"]], kernel_flags(description))


@dataclass
class _Patch:
    bindings: list                  # the workloads that compute this module's run, tried in order
    rest: list                      # the run's later modules (children of `parent`, replaced by nn.Identity)
    parent: nn.Module = None
    rest_keys: list = field(default_factory=list)
    previous_forward: object = None  # an instance-level forward the module had before
    how: str = "rule"               # "rule" (MODULE_RULES) or "behaviour" (its recorded calls matched the operator's)


def _patched_forward(self, *args, **kwargs):
    p = self._kforge_patch
    if len(args) == 1 and not kwargs:
        for b in p.bindings:
            call = b.arguments(args[0])
            if call is not None:
                return b.output(b.op(*call))
    out = p.previous_forward(*args, **kwargs) if p.previous_forward else type(self).forward(self, *args, **kwargs)
    for m in p.rest:
        out = m(out)
    return out


def _apply(module, bindings, parent=None, rest_keys=(), how="rule"):
    rest = [parent._modules[k] for k in rest_keys] if parent is not None else []
    p = _Patch(bindings, rest, parent, list(rest_keys), module.__dict__.get("forward"), how)
    object.__setattr__(module, "_kforge_patch", p)
    module.forward = types.MethodType(_patched_forward, module)
    for k in rest_keys:
        parent._modules[k] = nn.Identity()


def kernel_flags(description, require_kernel=True):
    """A workload's loaded kernels, {device kind: whether one is loaded} (kforge.rewrite.covers'
    `kernels`), or None when the call need not have one (require_kernel=False)."""
    return {k: v.get("kernel", False) for k, v in description["kernels"].items()} if require_kernel else None


def _descriptions(names=None):
    """The loaded workloads' descriptions; with `names`, only those named (by workload or operator name)."""
    import kforge
    out = [kforge.describe(n) for n in kforge.loaded()]
    return out if names is None else [d for d in out if d["workload"] in names or d["op"] in names]


def patch(model, workloads_dir=None, device="auto", example_inputs=None, names=None):
    """Makes the modules of `model` whose forward is a loaded workload's graph call its operator (see the module's
    docstring for what it can and cannot patch). Loads `workloads_dir` first when given. With `example_inputs` (a
    tensor, a tuple or list of the forward's positional arguments, or a dict of its keyword arguments), also runs
    the model once on them and patches the modules whose calls behaved as a loaded workload's operator
    (kforge.behaviour). names: only these loaded workloads (names or operator names). Returns `model`, patched in
    place; ``patched_modules(model)`` lists what was patched."""
    import kforge
    if workloads_dir is not None:
        kforge.load(workloads_dir, device=device)
    if not kforge.loaded():
        raise RuntimeError("kforge.patch: no workloads are loaded (kforge.load(dir) or KFORGE_WORKLOADS)")
    descriptions = _descriptions(names)
    if not descriptions:
        return model
    op_table = kforge._op_table()

    def bindings(steps):
        found = [b for d in descriptions for b in [_match(steps, d, op_table)] if b is not None]
        return found

    longest = max(len(d["spec"]["graph"]) for d in descriptions)
    for seq in [m for m in model.modules() if type(m).forward is nn.Sequential.forward]:
        keys = list(seq._modules)
        i = 0
        while i < len(keys):
            for n in range(min(longest, len(keys) - i), 1, -1):
                run = [seq._modules[k] for k in keys[i:i + n]]
                if any(hasattr(m, "_kforge_patch") or m is None for m in run):
                    continue
                parts = [_steps(m) for m in run]
                if any(s is None for s in parts):
                    continue
                found = bindings([s for part in parts for s in part])
                if found:
                    _apply(run[0], found, seq, keys[i + 1:i + n])
                    i += n - 1
                    break
            i += 1
    for m in list(model.modules()):
        if hasattr(m, "_kforge_patch"):
            continue
        steps = _steps(m)
        found = bindings(steps) if steps else []
        if found:
            _apply(m, found)
    if example_inputs is not None:
        from .behaviour import match_behaviour
        for m, found in match_behaviour(model, example_inputs, descriptions):
            _apply(m, found, how="behaviour")
    return model


class PatchedModule(tuple):
    """One entry of patched_modules(): a (module name, [workloads]) pair, with ``how`` it matched ("rule" or
    "behaviour") beside it (``name``, ``workloads``, ``how``; the pair unpacks and compares as before)."""

    def __new__(cls, name, workloads, how):
        t = super().__new__(cls, (name, workloads))
        t.how = how
        return t

    name = property(lambda self: self[0])
    workloads = property(lambda self: self[1])

    def __getnewargs__(self):
        return (self[0], self[1], self.how)

    def __repr__(self):
        return f"PatchedModule({self[0]!r}, {self[1]!r}, how={self.how!r})"


def patched_modules(model):
    """[PatchedModule(module name, [workloads], how)] for every patched module of `model`: each is a (name,
    [workloads]) pair with ``.how``, "rule" (MODULE_RULES) or "behaviour" (matched on the example inputs)."""
    return [PatchedModule(name, [b.workload for b in m._kforge_patch.bindings], m._kforge_patch.how)
            for name, m in model.named_modules() if hasattr(m, "_kforge_patch")]


def unpatch(model):
    """Undoes patch(): each module's own forward back, the runs' later modules back in their Sequential."""
    for m in list(model.modules()):
        p = getattr(m, "_kforge_patch", None)
        if p is None:
            continue
        if p.previous_forward is not None:
            m.forward = p.previous_forward
        else:
            del m.forward
        for k, original in zip(p.rest_keys, p.rest):
            p.parent._modules[k] = original
        del m._kforge_patch
    return model
