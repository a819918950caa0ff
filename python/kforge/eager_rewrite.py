"""kforge.rewrite_eager (kforge.eager_rewrite): kforge.compile's graph rewrite without compiling. The model's forward
is captured as an ATen graph, the loaded workloads' patterns in it (written inline or not) are replaced by their
operators, and the graph runs op by op, as eager runs the model::

    kforge.load("workloads", device="cuda")
    fast = kforge.rewrite_eager(kforge.patch(model, example_inputs=inputs), inputs)
    fast(*inputs)           # the graph's ATen ops one by one, torch.ops.kforge.<workload> in place of each pattern
    kforge.rewritten(fast)  # [{"workload", "count"}]: what the rewrite replaced
    fast.why                # "" once captured; else why not (fast then runs the model as given)

Capture: make_fx traces one call on fake tensors shaped as the example inputs, below autograd, with no
decomposition table: each node is an op eager's dispatcher runs for that call (a composite op appears as what it
dispatches to: linear as t and mm, softmax as _softmax, matmul as expand, view and bmm), in-place ops stay in place
and views stay views (nothing is functionalized), and the parameters and buffers are inputs of the graph, read from
the model at every call. That is the graph kforge.compile's "eager" backend rewrites, without Dynamo, its guards or
functionalization, so the same patterns (kforge.rewrite.Rewrite: the specs' reference graphs in each rms_norm
form and each operand order of their adds and muls) and the same check (``covers``: dtypes, ranks, sizes, constants,
a kernel for the device unless ``require_kernel=False``) decide what is replaced.

A call runs the rewritten graph when it is the captured one (the same structure of arguments, each tensor's sizes,
strides, dtype and device, the other arguments equal; the parameters and buffers as they were) and needs no
gradient; any other call runs the model as given, with a warning once per kind of difference: the graph holds the
example's sizes and Python values, and the operators have no backward. Where capture fails (the forward reads a
tensor's values: data-dependent control flow, ``.item()``, a nonzero's size; or an op fake tensors cannot run), the
result says why (``.why``, and a warning) and runs the model as given, so kforge.patch's modules still call their
operators. Where the rewrite replaces nothing, the result runs the model as given too (``graph_module`` is None,
``why`` ""): its graph run op by op from Python would only add host time. The result is an nn.Module holding the
model as ``module`` (its state_dict keys start with "module.").
"""
import warnings

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .behaviour import _inputs, _sources
from .modules import _descriptions
from .rewrite import Rewrite


def _leaf(v):
    """What a call's argument must be for the captured graph to hold for it: a tensor's sizes, strides, dtype and
    device; any other value itself."""
    if isinstance(v, torch.Tensor):
        return ("tensor", tuple(v.shape), v.stride(), v.dtype, v.device)
    return v


def _why_not_captured(e):
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    why = f"{type(e).__name__}: {text}"[:400]
    if "DataDependent" in type(e).__name__ or "data-dependent" in str(e) or "data dependent" in str(e):
        why += (" (the forward reads a tensor's values: data-dependent control flow, .item(), .tolist() or a size "
                "that depends on values; the capture runs on fake tensors, which have none)")
    return why


def capture(model, args, kwargs):
    """The ATen graph of model(*args, **kwargs) (module's docstring), as a GraphModule called as gm(state, args,
    kwargs) with state the model's parameters and buffers (behaviour._sources) in order."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch.fx.experimental.proxy_tensor import make_fx

    sources = _sources(model)
    names = [q for _, _, q, _ in sources]

    def forward(state, args, kwargs):
        return torch.func.functional_call(model, dict(zip(names, state)), args, kwargs)

    state = [getattr(m, a).detach() for m, a, _, _ in sources]  # no gradient: the operators have no backward
    with torch.no_grad(), enable_python_dispatcher():
        return make_fx(forward, tracing_mode="fake", _allow_non_fake_inputs=True)(state, args, kwargs)


class EagerRewrite(nn.Module):
    """kforge.rewrite_eager's result: the rewritten graph where a call is the captured one, the model (``module``)
    otherwise. ``why``: "" when captured, else why not; ``graph_module``: the rewritten graph (None when not
    captured); ``captured_graph``: the graph before the rewrite, for profiling the replaced patterns."""

    def __init__(self, module, graph_module=None, captured_graph=None, rewrite=None, sources=(), signature=None,
                 why=""):
        super().__init__()
        self.module = module
        # Not submodules: their constants are the capture's, and the state_dict stays the model's.
        object.__setattr__(self, "graph_module", graph_module)
        object.__setattr__(self, "captured_graph", captured_graph)
        self._kforge_rewrite = rewrite
        self._sources = [(m, a) for m, a, *_ in sources]  # not the tensors: read from the model at each call
        self._signature = signature
        self.why = why
        self._warned = set()

    def state(self):
        """The model's parameters and buffers in the captured graph's order (its first argument)."""
        return [getattr(m, a) for m, a in self._sources]

    def graph_call(self, args, kwargs):
        """The captured graph's arguments for this call, or None with the reason when it must run the model."""
        if self.graph_module is None:
            return None, "not captured"
        state = self.state()
        leaves, spec = pytree.tree_flatten((args, kwargs))
        if spec != self._signature[0]:
            return None, "other arguments"
        if [_leaf(v) for v in leaves] != self._signature[1] or [_leaf(t) for t in state] != self._signature[2]:
            return None, "other sizes, strides, dtypes, devices or values"
        if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in leaves + state):
            return None, "a gradient is needed (the operators have no backward)"
        return (state, args, kwargs), ""

    def forward(self, *args, **kwargs):
        call, why = self.graph_call(args, kwargs)
        if call is not None:
            return self.graph_module(*call)
        if why not in self._warned and self.graph_module is not None:
            self._warned.add(why)
            warnings.warn(f"kforge.rewrite_eager: a call unlike the captured one ({why}): the model's own forward "
                          "runs (this warning is shown once per reason)")
        return self.module(*args, **kwargs)


def rewrite_eager(model, example_inputs, names=None, require_kernel=True):
    """`model` with the loaded workloads' patterns (or only `names`') replaced by their operators in its ATen graph,
    run eagerly (see the module's docstring). example_inputs: a tensor, a tuple or list of the forward's positional
    arguments, or a dict of its keyword arguments. ``kforge.rewritten(result)`` lists what was replaced;
    ``result.why`` says why the forward was not captured, if it was not (the result then runs `model` as given).
    Inference only: a call that needs a gradient runs the model."""
    args, kwargs = _inputs(example_inputs)
    descriptions = _descriptions(names)
    rewrite = Rewrite(descriptions, {}, require_kernel)
    try:
        gm = capture(model, args, kwargs)
    except Exception as e:  # data-dependent control flow, an op without a fake implementation, ...
        why = _why_not_captured(e)
        warnings.warn(f"kforge.rewrite_eager: the forward was not captured ({why}); the model runs as given")
        return EagerRewrite(model, rewrite=rewrite, why=why)
    # make_fx keeps results nothing reads (native_group_norm's mean and rstd): a pattern's intermediate node must
    # have no users but the pattern's, so they would stop every match. Mutating ops are impure and stay.
    if gm.graph.eliminate_dead_code():
        gm.recompile()
    captured_graph = torch.fx.GraphModule(gm, _copy_graph(gm.graph))
    if not rewrite(gm.graph):
        # Nothing replaced: the model runs as given. Its captured graph, run op by op from Python, would only add
        # host time (ResNet-50 on an H200, its pooling patched as a module: 13.1 ms a cold forward against 10.7).
        return EagerRewrite(model, rewrite=rewrite)
    gm.graph.lint()
    gm.recompile()
    sources = _sources(model)
    leaves, spec = pytree.tree_flatten((args, kwargs))
    signature = (spec, [_leaf(v) for v in leaves], [_leaf(getattr(m, a)) for m, a, _, _ in sources])
    return EagerRewrite(model, gm, captured_graph, rewrite, sources, signature)


def _copy_graph(graph):
    """A copy of `graph` with the same node names (and their meta), before the rewrite changes it."""
    new = torch.fx.Graph()
    out = new.graph_copy(graph, {})
    new.output(out)
    new._codegen = graph._codegen
    return new
