"""kforge e2e's output check (lib/e2e/e2e.py imports it): is a variant's output eager's, for a whole model?

The default rule, per floating output, in float64 over the values finite in both (a value finite in one and not in
the other fails; integer and bool outputs must be equal):

- the whole output's relative error, ||got - eager|| / ||eager|| (2-norms), and
- its worst row's: the largest RMS error of a row (the output's last dim; dims before it joined in until a row holds
  at least ROW_MIN values) over the whole output's RMS,

each within a limit set by the model's compute dtype (LIMITS), the lowest-precision floating dtype among its
parameters, buffers, inputs and outputs: a bfloat16 Llama's float32 log-softmax is held to bfloat16's limits, not
float32's. float32 on cuda where TF32 is allowed (torch.backends.cudnn.allow_tf32, on by default for convolutions,
or cuda.matmul.allow_tf32) is "tfloat32", held to float16's limits (TF32 keeps float16's 10-bit mantissa).

An elementwise max over millions of values of a deep low-precision model reports its one unluckiest rounding; the
norms report the error. torch.compile's reordered roundings stay within the limits (bfloat16 models at a quarter of
their size on the cpu: the two-layer Llama's log-softmax 6e-4 whole and 7e-4 worst row; the SD3.5 VAE decoder's
image 0.031 and 0.044, as far from eager as eager is from a float32 recomputation, 0.026 and 0.036), while a
kernel that returns zeros or twice the value (whole 1), a tenth too much (0.1), or a row of zeros (that row about 1)
fails them.

``rtol``/``atol`` (kforge e2e --rtol/--atol, an e2e entry's tolerance) replace the rule by the elementwise one,
|got - eager| <= atol + rtol |eager| for every value.
"""
import math

import torch

# Compute dtype: (the whole output's relative error, the worst row's RMS error over the output's RMS).
LIMITS = {"float64": (1e-7, 1e-6), "float32": (1e-3, 5e-3), "tfloat32": (2e-2, 5e-2), "float16": (2e-2, 5e-2),
          "bfloat16": (8e-2, 0.2)}
LOOSEST = "bfloat16"  # the limits of a compute dtype not in LIMITS (float8)
ROW_MIN = 16


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def compute_dtype(model, inputs, outputs):
    """The name of the lowest-precision floating dtype (the largest epsilon) among the model's parameters and
    buffers, its inputs and its outputs (lists of tensors), "tfloat32" for float32 on cuda with TF32 allowed; None
    when there is no floating tensor."""
    tensors = list(inputs) + list(outputs)
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters()) + list(model.buffers())
    tensors = [t for t in tensors if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not tensors:
        return None
    dtype = max({t.dtype for t in tensors}, key=lambda d: (torch.finfo(d).eps, -torch.finfo(d).bits))
    tf32 = torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32
    if dtype == torch.float32 and tf32 and any(t.is_cuda for t in tensors):
        return "tfloat32"
    return dtype_name(dtype)


def limits(compute):
    """(whole, row) limits for a compute dtype's name (float32's for None)."""
    return LIMITS.get(compute or "float32", LIMITS[LOOSEST])


def _rows(t):
    """t as [rows, row length], the last dim joined with those before it until a row holds ROW_MIN values."""
    shape = list(t.shape) or [1]
    n = 1
    k = len(shape)
    while k > 0 and (n < ROW_MIN or k == len(shape)):
        k -= 1
        n *= shape[k]
    return t.reshape(-1, max(n, 1)) if t.numel() else t.reshape(0, 1)


def _norm_check(i, a, b, compute):
    """(why or None, ratio): output i against the norm rule."""
    whole_limit, row_limit = limits(compute)
    a64, b64 = _rows(a.detach().double()), _rows(b.detach().double())
    fin = torch.isfinite(b64)
    err = torch.where(fin, a64 - b64, 0.0)
    ref = torch.where(fin, b64, 0.0)
    del a64
    count = int(fin.sum())
    if count == 0:
        return None, 0.0
    err2, ref2 = err.pow(2), ref.pow(2)
    e_norm, r_norm = float(err2.sum().sqrt()), float(ref2.sum().sqrt())
    per_row = fin.sum(1).clamp_min(1)
    row_ms = err2.sum(1) / per_row
    worst = int(row_ms.argmax())
    r_rms = r_norm / math.sqrt(count)

    def ratio_of(x, y):
        return x / y if y > 0 else (0.0 if x == 0 else math.inf)

    whole = ratio_of(e_norm, r_norm)
    row = ratio_of(float(row_ms[worst].sqrt()), r_rms)
    ratio = max(whole / whole_limit, row / row_limit)
    if ratio <= 1:
        return None, ratio
    flat = err.abs()
    k = int(flat.argmax())
    name = compute or "float32"
    where = f"output {i} ({dtype_name(b.dtype)} {list(b.shape)}, the model computes in {name})"
    tail = f"; max |diff| {float(flat.view(-1)[k]):.3g} at flat index {k})"
    if r_norm == 0:
        return f"{where}: eager's values are all zero and these are not ({tail[2:]}", math.inf
    if whole / whole_limit >= row / row_limit:
        return (f"{where}: relative error ||got - eager|| / ||eager|| {whole:.3g} over {name}'s limit "
                f"{whole_limit:g} ({whole / whole_limit:.3g}x{tail}"), ratio
    return (f"{where}: worst row {worst} of {err.shape[0]} (rows of {err.shape[1]}) has RMS error {row:.3g} of the "
            f"output's RMS, over {name}'s limit {row_limit:g} ({row / row_limit:.3g}x{tail}"), ratio


def _elementwise_check(i, a, b, rtol, atol):
    """(why or None, ratio): output i against |got - eager| <= atol + rtol |eager| for every finite value."""
    a64, b64 = a.detach().double(), b.detach().double()
    fin = torch.isfinite(b64)
    err = (a64 - b64).abs()[fin]
    unit = (atol + rtol * b64.abs())[fin]
    if err.numel() == 0:
        return None, 0.0
    # A zero tolerance (rtol = atol = 0) allows exact equality only: 0/0 is no error, x/0 an infinite one.
    ratios = torch.where(unit > 0, err / unit.clamp_min(1e-300), torch.where(err > 0, math.inf, 0.0))
    ratio = ratios.max().item()
    if ratio <= 1:
        return None, ratio
    k = int(ratios.argmax())
    return (f"output {i} ({dtype_name(b.dtype)} {list(b.shape)}): max |diff| {err.max().item():.3g}, {ratio:.3g}x "
            f"the elementwise tolerance |got - eager| <= atol + rtol |eager| (rtol {rtol:g}, atol {atol:g}) at "
            f"flat index {k} of the finite values"), ratio


def compare(got, ref, compute=None, rtol=None, atol=None):
    """(None, ratio) when `got` matches `ref` (eager's outputs, both lists of tensors), else (a sentence saying
    which output, which statistic and which limit, ratio); ratio is the largest error as a share of its limit.
    `compute`: the model's compute dtype's name (compute_dtype); `rtol` and `atol`: the elementwise rule instead."""
    if len(got) != len(ref):
        return f"{len(got)} output tensors, eager gives {len(ref)}", math.inf
    worst = 0.0
    for i, (a, b) in enumerate(zip(got, ref)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {i}: {a.dtype} {list(a.shape)}, eager gives {b.dtype} {list(b.shape)}", math.inf
        if not b.is_floating_point():
            if not torch.equal(a, b):
                return f"output {i}: {int((a != b).sum())} of {a.numel()} values differ from eager", math.inf
            continue
        if not torch.isfinite(a).eq(torch.isfinite(b)).all():
            return f"output {i}: non-finite values where eager has finite ones (or the reverse)", math.inf
        if rtol is not None:
            why, ratio = _elementwise_check(i, a, b, rtol, atol)
        else:
            why, ratio = _norm_check(i, a, b, compute)
        if why:
            return why, ratio
        worst = max(worst, ratio)
    return None, worst
