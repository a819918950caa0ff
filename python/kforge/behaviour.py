"""kforge.patch's matching by behaviour: the modules whose recorded calls computed what a loaded workload's operator
computes, whatever their class.

``patch(model, example_inputs=...)`` runs the model once on the example inputs (``torch.no_grad``) with a forward
hook on each module that the rule table left alone and that holds no patched module. A call is a candidate when
it has one tensor argument and nothing else, returns one tensor, does not modify its input in place, and the
module and every module inside it are in eval mode. For each loaded workload with one output and a first input
(the graph's ``input``) of the call's rank and dtype whose shape binds the spec's symbols:

1. The spec's other inputs are bound to the module's parameters and floating-point buffers (its own and its
   children's) by dtype and shape (the symbols bound so far must agree); where several fit, the one named as the
   graph's argument (``weight``, ``bias``) is taken, else the workload is refused. Every parameter and
   floating-point buffer of the module must be bound, so no tensor the forward reads is left out of the operator.
2. The operator runs on the recorded input (a call the patched module would make: contiguity, dtypes and sizes
   as the spec has them; without a kernel for the device it runs the workload's eager graph, warning once per
   shape, and the patched module, as a rule-table one, calls it only on devices with a kernel). Its result (its
   shape first, from the Meta kernel) must equal the recorded output within the workload's output tolerance (the
   spec's ``tolerance``, else the dtype's default, as the verifier uses): same dtype, and the same shape or, when
   the module keeps size-1 dims the operator does not (``[N, C, 1, 1]`` for ``[N, C]``), the operator's shape
   with those 1s inserted (a recorded operator shape with a size-1 dim of its own is ambiguous and refused).
3. Against coincidences, a second input of the same shape, dtype, device and layout is drawn (normal, with the
   recorded input's mean and std, from kforge's own generator) and run through the module's forward and the
   operator; they must match too, and that forward must change none of the module's parameters and buffers.

Of a module and a module inside it that both matched, the outer one is patched (its whole forward matched); a
module is never patched when a module inside it already is. Limits: a module is judged on its first call only (the
patched module still checks every call and falls back to its own forward); a forward that ignores a parameter
whose value makes the operator's use of it a no-op (a weight of ones) matches by coincidence; modules in training
mode are skipped, so patch an ``eval()`` model.
"""
import torch

from .modules import _DTYPES, _Binding, kernel_flags


def _bind(spec_shape, shape, symbols):
    """The symbols with `shape` bound to `spec_shape` (sizes and symbols), or None when it does not fit."""
    if len(spec_shape) != len(shape):
        return None
    out = dict(symbols)
    for want, size in zip(spec_shape, shape):
        if isinstance(want, str):
            if out.setdefault(want, size) != size:
                return None
        elif want != size:
            return None
    return out


def _primary(description):
    """The workload's spec input the module's input takes (the graph's first `input`), or None when the workload
    cannot be matched by behaviour (several outputs)."""
    spec = description["spec"]
    if len(description["outputs"]) != 1 or not spec["graph"]:
        return None
    name = spec["graph"][0]["args"].get("input")
    return next((i for i in spec["inputs"] if i["name"] == name), None)


def _argument_names(spec, name):
    """The graph's argument names that spec input `name` is passed as ("weight", "bias", ...)."""
    return {a for g in spec["graph"] for a, v in g["args"].items() if v == name and a != "input"}


def _sources(module, floating_buffers=False):
    """[(owner module, attribute name, qualified name, tensor)] of the module's parameters and buffers, each tensor
    once (tied ones under their first name); with `floating_buffers`, only the floating-point buffers."""
    out, seen = [], set()
    buffers = [(n, b) for n, b in module.named_buffers() if not floating_buffers or b.is_floating_point()]
    for qualified, t in list(module.named_parameters()) + buffers:
        if id(t) in seen:
            continue
        seen.add(id(t))
        owner_name, _, leaf = qualified.rpartition(".")
        out.append((module.get_submodule(owner_name) if owner_name else module, leaf, qualified, t))
    return out


def _binding(module, x, description, op):
    """The workload bound to the module's input and tensors, or None when they do not fit."""
    spec = description["spec"]
    primary = _primary(description)
    symbols = _bind(primary["shape"], x.shape, {})
    if symbols is None:
        return None
    tensors = _sources(module, floating_buffers=True)  # (owner, attribute, qualified name, tensor)
    used, inputs = set(), []
    for i in spec["inputs"]:
        if i is primary:
            inputs.append((i, None))
            continue
        fits = []
        for k, (owner, leaf, _, t) in enumerate(tensors):
            if k in used or t.dtype != _DTYPES[i["dtype"]]:
                continue
            bound = _bind(i["shape"], t.shape, symbols)
            if bound is not None:
                fits.append((k, bound))
        if len(fits) > 1:
            names = _argument_names(spec, i["name"])
            fits = [f for f in fits if tensors[f[0]][1] in names]
        if len(fits) != 1:
            return None  # nothing fits, or several and no name decides
        k, symbols = fits[0]
        used.add(k)
        inputs.append((i, (tensors[k][0], tensors[k][1])))
    if len(used) != len(tensors):
        return None  # a tensor of the module that the workload does not read
    return _Binding(description["workload"], op, inputs, kernel_flags(description))


def _view(op_shape, module_shape):
    """(True, None) when the shapes are equal, (True, template) when the module's is the operator's with size-1
    dims inserted (template: per module dim, the operator's dim index or None for a 1), else (False, None)."""
    op_shape, module_shape = list(op_shape), list(module_shape)
    if op_shape == module_shape:
        return True, None
    if 1 in op_shape:
        return False, None  # which of the module's 1s is the operator's own is ambiguous
    template, i = [], 0
    for size in module_shape:
        if i < len(op_shape) and size == op_shape[i]:
            template.append(i)
            i += 1
        elif size == 1:
            template.append(None)
        else:
            return False, None
    return (True, template) if i == len(op_shape) else (False, None)


def _close(got, want, tolerance):
    """Whether got equals want within |got - want| <= atol + rtol |want| (same dtype and shape; same NaNs)."""
    if not isinstance(want, torch.Tensor) or got.dtype != want.dtype or got.shape != want.shape:
        return False
    return torch.allclose(got.double(), want.double(), rtol=tolerance["rtol"], atol=tolerance["atol"], equal_nan=True)


def _versions(module):
    return [t._version for t in list(module.parameters()) + list(module.buffers())]


def _fresh_like(x, generator):
    """A new input of x's shape, dtype, device and layout: normal, with x's mean and std."""
    xf = x.double()
    mean, std = xf.mean().item(), xf.std().item() if x.numel() > 1 else 1.0
    if not (std == std and 0 < std < float("inf")):
        std = 1.0
    if mean != mean or abs(mean) == float("inf"):
        mean = 0.0
    z = torch.empty_like(x, dtype=torch.float32).normal_(generator=generator)
    return (z * std + mean).to(x.dtype)


class _Recorder:
    """The forward hooks of one run: each eligible module's first call is matched against the workloads as it
    returns, so no recorded tensor outlives its module's call."""

    def __init__(self, model, descriptions):
        import kforge
        self.candidates = []  # (description, primary spec input, operator)
        for d in descriptions:
            primary = _primary(d)
            if primary is not None:
                self.candidates.append((d, primary, kforge.op(d["workload"])))
        self.matched = {}   # id(module) -> [bindings]
        self.seen = set()
        self.pending = {}   # id(module) -> a stack of its calls: (input clone, its version, the input) or None
        self.busy = False   # inside a match: the modules' hooks stand aside
        self.generators = {}

    def workloads_for(self, x):
        return [(d, op) for d, primary, op in self.candidates
                if x.dtype == _DTYPES[primary["dtype"]] and _bind(primary["shape"], x.shape, {}) is not None]

    def pre(self, module, args, kwargs):
        if self.busy:
            return
        entry = None
        if id(module) not in self.seen:  # a module is judged on its first call
            self.seen.add(id(module))
            x = args[0] if len(args) == 1 and not kwargs else None
            if isinstance(x, torch.Tensor) and x.is_floating_point() and self.workloads_for(x):
                entry = (x.clone(), x._version, x)
        self.pending.setdefault(id(module), []).append(entry)

    def post(self, module, args, kwargs, output):
        if self.busy:
            return
        stack = self.pending.get(id(module))
        entry = stack.pop() if stack else None
        if entry is None:
            return
        x, version, original = entry
        if original._version != version or not isinstance(output, torch.Tensor):
            return  # modified its input in place, or returned something else than one tensor
        self.busy = True
        try:
            found = self.match(module, x, output.clone())
        finally:
            self.busy = False
        if found:
            self.matched[id(module)] = found

    def generator(self, device):
        if device not in self.generators:
            self.generators[device] = torch.Generator(device=device).manual_seed(0x6b66)
        return self.generators[device]

    def match(self, module, x, y):
        found, second = [], None
        for d, op in self.workloads_for(x):
            b = _binding(module, x, d, op)
            call = b.arguments(x, need_kernel=False) if b is not None else None
            if call is None:
                continue
            try:  # the result's shape from the Meta kernel first, without running
                meta = op(*[torch.empty_like(t, device="meta") for t in call])
                if meta.dtype != y.dtype or meta.numel() != y.numel() or not _view(meta.shape, y.shape)[0]:
                    continue
                got = op(*call)
            except RuntimeError:  # sizes the spec's checks refuse (a channel count no group divides, ...)
                continue
            tolerance = d["output_tolerance"][0]
            ok, b.view = _view(got.shape, y.shape)
            if not ok or not _close(b.output(got), y, tolerance):
                continue
            if second is None:
                x2 = _fresh_like(x, self.generator(x.device))
                before, version = _versions(module), x2._version
                try:
                    y2 = module.forward(x2)
                except Exception:  # the module's own code refused the new values: not a match we can check
                    return found
                if _versions(module) != before or x2._version != version or not isinstance(y2, torch.Tensor):
                    return found  # stateful, or in place: never patched
                second = (x2, y2)
            x2, y2 = second
            call2 = b.arguments(x2, need_kernel=False)
            try:
                if call2 is not None and _close(b.output(op(*call2)), y2, tolerance):
                    found.append(b)
            except RuntimeError:
                continue
        return found


def _inputs(example_inputs):
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,), {}
    if isinstance(example_inputs, dict):
        return (), dict(example_inputs)
    return tuple(example_inputs), {}


def match_behaviour(model, example_inputs, descriptions):
    """[(module, [bindings])]: the modules of `model` to patch by behaviour, outermost first (see the docstring)."""
    args, kwargs = _inputs(example_inputs)
    recorder = _Recorder(model, descriptions)
    if not recorder.candidates:
        return []
    eligible = [m for m in model.modules()
                if not any(hasattr(s, "_kforge_patch") or s.training for s in m.modules())]
    handles = []
    try:
        for m in eligible:
            handles.append(m.register_forward_pre_hook(recorder.pre, with_kwargs=True))
            handles.append(m.register_forward_hook(recorder.post, with_kwargs=True))
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    chosen, inside = [], set()
    for m in model.modules():  # parents before their children
        if id(m) in inside or id(m) not in recorder.matched:
            continue
        subtree = {id(s) for s in m.modules()}
        if any(id(c) in subtree for c, _ in chosen):
            continue  # holds a module already chosen (a shared one, reached first through another parent)
        chosen.append((m, recorder.matched[id(m)]))
        inside |= subtree
    return chosen
