"""kforge.compile's graph rewrite (python/kforge/rewrite.py), run by ctest's kforge_ops_python through
ops_python_test (which imports these classes): workloads written to a temp folder as `kforge capture` writes them,
a small model whose forward has them inline (a scaled, masked softmax in float32 cast back, a SwiGLU; either way
round), compiled on the cpu. It asserts what was rewritten (the pass's count and the profiler's
record of kforge operator calls), that outputs match the model's, and that calls the spec does not cover (another
dtype, another size, no kernel) are left alone."""
import json
import pathlib
import shutil
import tempfile
import unittest

import torch
import torch.nn.functional as F
from torch import nn

import kforge

SPECS = {
    "rw-smax": """
inputs:
  x: {shape: [B, H, S, S], dtype: bfloat16, init: {normal: {std: 1.0}}}
  mask: {shape: [1, 1, S, S], dtype: bfloat16, init: causal_mask}
graph:
  - scale: {input: x, factor: 0.25}
  - add_mask: {mask: mask}
  - softmax: {dim: -1, dtype: float32}
  - cast: {dtype: bfloat16}
cases:
  - {B: 1, H: 4, S: 16, gate: true}
""",
    "rw-swiglu": """
inputs:
  x: {shape: [B, T, 64], dtype: bfloat16, init: {normal: {std: 1.0}}}
  z: {shape: [B, T, 64], dtype: bfloat16, init: {normal: {std: 1.0}}}
graph:
  - silu: {input: x}
  - mul: {other: z}
cases:
  - {B: 1, T: 16, gate: true}
""",
}
NAMES = list(SPECS)
# A residual add then an RMSNorm (two outputs), matched however a model writes the norm; loaded beside SPECS, named
# only by the tests of it (width 48: no other model here has it).
NORM_SPECS = {
    "rw-addnorm": """
inputs:
  x: {shape: [B, T, 48], dtype: bfloat16, init: {normal: {std: 1.0}}}
  z: {shape: [B, T, 48], dtype: bfloat16, init: {normal: {std: 1.0}}}
  w: {shape: [48], dtype: bfloat16, init: {normal: {mean: 1.0, std: 0.1}}}
graph:
  - add: {input: x, other: z, as: h}
  - rms_norm: {normalized_shape: [48], weight: w, eps: 1.0e-6}
outputs: [out, h]
cases:
  - {B: 1, T: 16, gate: true}
""",
    # A GroupNorm with its SiLU, channels symbolic: the pattern traces at a case's sizes (group_norm checks them),
    # and inductor's decomposition of it reshapes where the traced pattern viewed.
    "rw-gnsilu": """
inputs:
  x: {shape: [N, C, H, W], dtype: float32, init: {normal: {std: 1.0}}}
  w: {shape: [C], dtype: float32, init: {normal: {mean: 1.0, std: 0.1}}}
  b: {shape: [C], dtype: float32, init: {normal: {std: 0.1}}}
graph:
  - group_norm: {input: x, num_groups: 16, weight: w, bias: b, eps: 1.0e-6}
  - silu
cases:
  - {N: 1, C: 128, H: 16, W: 16, gate: true}
""",
    # The same graph in bfloat16: one pattern for both, each call replaced by the workload whose spec covers it.
    "rw-gnsilu-bf16": """
inputs:
  x: {shape: [N, C, H, W], dtype: bfloat16, init: {normal: {std: 1.0}}}
  w: {shape: [C], dtype: bfloat16, init: {normal: {mean: 1.0, std: 0.1}}}
  b: {shape: [C], dtype: bfloat16, init: {normal: {std: 0.1}}}
graph:
  - group_norm: {input: x, num_groups: 16, weight: w, bias: b, eps: 1.0e-6}
  - silu
cases:
  - {N: 1, C: 128, H: 16, W: 16, gate: true}
""",
}
# kforge.compile's policy (kforge.policy): an elementwise-only workload (add + relu) and one with a reduction
# (softmax), float32 [B, 64], named only by the policy's tests.
POLICY_SPECS = {
    "rw-addrelu": """
inputs:
  x: {shape: [B, 64], dtype: float32, init: {normal: {std: 1.0}}}
  z: {shape: [B, 64], dtype: float32, init: {normal: {std: 1.0}}}
graph:
  - add: {input: x, other: z}
  - relu
cases:
  - {B: 8, gate: true}
""",
    "rw-softmax": """
inputs:
  x: {shape: [B, 64], dtype: float32, init: {normal: {std: 1.0}}}
graph:
  - softmax: {input: x, dim: -1}
cases:
  - {B: 8, gate: true}
""",
}
POLICY = list(POLICY_SPECS)
# A softmax with a stored cpu kernel (the bundled qwen-router-softmax's, copied) whose record says it is slower than
# torch.compile on case T=7,E=257 and across its cases (speedup 0.5), for the policy's second rule.
SLOW = "rw-slow-softmax"
SLOW_RECORD = {"results": {"case_us": {"T=7,E=257": 2.0, "T=1000,E=256": 1.0},
                           "baselines": {"compile": {"T=7,E=257": 1.0, "T=1000,E=256": 2.0}},
                           "speedup": {"compile": 0.5}}}
TMP = None


def setUpModule():
    global TMP
    TMP = tempfile.TemporaryDirectory(prefix="kf-rewrite-")
    for name, body in {**SPECS, **NORM_SPECS, **POLICY_SPECS}.items():
        (pathlib.Path(TMP.name) / f"{name}.yaml").write_text(f"version: 1\nname: {name}\n{body}")
    report = kforge.load(TMP.name, device="cpu")
    assert not report["skipped"], report["skipped"]
    repo = pathlib.Path(__file__).resolve().parents[2]
    kforge.load(repo / "workloads", device="cpu", names=["llama3-8b-swiglu", "gpt2-gelu-tanh"])
    slow = pathlib.Path(TMP.name) / "slow"
    (slow / SLOW / "kernels").mkdir(parents=True)
    spec = (repo / "workloads/qwen-router-softmax.yaml").read_text().replace("name: qwen-router-softmax", f"name: {SLOW}")
    (slow / f"{SLOW}.yaml").write_text(spec)
    shutil.copy(repo / "workloads/qwen-router-softmax/kernels/cpu-x86-64.cpp", slow / SLOW / "kernels")
    (slow / SLOW / "kernels/cpu-x86-64.json").write_text(json.dumps(SLOW_RECORD))
    report = kforge.load(slow, device="cpu")
    assert not report["skipped"], report["skipped"]


def tearDownModule():
    TMP.cleanup()


class Block(nn.Module):
    """Attention and an MLP written inline, as Hugging Face's eager Llama is (heads of 16)."""

    def __init__(self, width=64, swapped=False):
        super().__init__()
        self.width, self.heads = width, width // 16  # heads of 16: the scale is 0.25 at any width
        self.swapped = swapped  # mask + scores and up * silu(gate): the other way round from the specs
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.gate, self.up = nn.Linear(width, width, bias=False), nn.Linear(width, width, bias=False)
        self.norm_weight = nn.Parameter(1 + torch.randn(width) / 10)

    def forward(self, x, mask):
        b, t, _ = x.shape
        d = self.width // self.heads
        q, k, v = (y.view(b, t, self.heads, d).transpose(1, 2) for y in self.qkv(x).chunk(3, dim=-1))
        scores = torch.matmul(q, k.transpose(2, 3)) * (1.0 / d ** 0.5)
        scores = mask + scores if self.swapped else scores + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        attn = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, -1)
        h = x + attn
        n = F.rms_norm(h, [self.width], self.norm_weight, 1e-6)
        if self.swapped:
            return h + self.up(n) * F.silu(self.gate(n))
        return h + F.silu(self.gate(n)) * self.up(n)


def inputs(dtype, width=64, t=16):
    torch.manual_seed(1)
    x = torch.randn(1, t, width, dtype=dtype)
    mask = torch.full((t, t), float("-inf")).triu(1)[None, None].to(dtype)
    return x, mask


def model(dtype, width=64, swapped=False):
    torch.manual_seed(0)
    return Block(width, swapped).to(dtype).eval()


def kforge_calls(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        result = fn()
    return result, sorted({e.name for e in prof.events() if e.name.startswith("kforge::")})


def run(m, args, backend, **kw):
    """The model's eager output, the compiled one's, what the rewrite replaced and the kforge operators called."""
    torch._dynamo.reset()
    with torch.no_grad():
        ref = m(*args)
        compiled = kforge.compile(m, backend=backend, names=kw.pop("names", NAMES), **kw)
        compiled(*args)  # compiles
        got, calls = kforge_calls(lambda: compiled(*args))
    return ref, got, {r["workload"]: r["count"] for r in kforge.rewritten(compiled)}, calls


class ResidualNorm(nn.Module):
    """h = x + z, then an RMSNorm of h written as F.rms_norm ("aten") or as Hugging Face's LlamaRMSNorm."""

    def __init__(self, form, eps=1e-6):
        super().__init__()
        self.form, self.eps = form, eps
        self.weight = nn.Parameter((1 + torch.randn(48) / 10).to(torch.bfloat16))

    def forward(self, x, z):
        h = x + z
        if self.form == "aten":
            n = F.rms_norm(h, [48], self.weight, self.eps)
        else:
            f = h.to(torch.float32)
            n = self.weight * (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + self.eps)).to(h.dtype)
        return n * 2, h


class GraphRewrite(unittest.TestCase):
    def assertClose(self, got, ref, rtol, atol):
        self.assertEqual((got.shape, got.dtype), (ref.shape, ref.dtype))
        torch.testing.assert_close(got.float(), ref.float(), rtol=rtol, atol=atol)

    def test_inline_patterns_become_operators_with_the_eager_backend(self):
        m, args = model(torch.bfloat16), inputs(torch.bfloat16)
        ref, got, replaced, calls = run(m, args, "eager", require_kernel=False)
        self.assertEqual(replaced, {"rw-smax": 1, "rw-swiglu": 1})
        self.assertEqual(calls, ["kforge::rw_smax", "kforge::rw_swiglu"])
        self.assertClose(got, ref, 1.6e-2, 1e-2)

    def test_an_add_or_mul_written_the_other_way_round_is_matched(self):
        m, args = model(torch.bfloat16, swapped=True), inputs(torch.bfloat16)
        for backend in ("eager", "inductor"):
            with self.subTest(backend=backend):
                # pointwise=True: the SwiGLU is elementwise only, which inductor's policy otherwise leaves alone.
                ref, got, replaced, calls = run(m, args, backend, require_kernel=False, pointwise=True)
                self.assertEqual(replaced, {"rw-smax": 1, "rw-swiglu": 1})
                self.assertEqual(calls, ["kforge::rw_smax", "kforge::rw_swiglu"])
                self.assertClose(got, ref, 1.6e-2, 1e-2)

    def test_the_rewritten_graph_holds_one_operator_call_per_match(self):
        seen = []
        backend = kforge.rewrite_backend("eager", names=NAMES, require_kernel=False)

        def recording(gm, example_inputs):
            seen.append(gm)
            return backend(gm, example_inputs)

        torch._dynamo.reset()
        m, args = model(torch.bfloat16), inputs(torch.bfloat16)
        with torch.no_grad():
            torch.compile(m, backend=recording)(*args)
        self.assertEqual(len(seen), 1)  # one Dynamo graph, no break
        self.assertEqual(backend.kforge_rewrite.counts, {"rw-smax": 1, "rw-swiglu": 1})
        self.assertEqual(backend.kforge_rewrite.skipped, [])

    def test_a_dtype_or_size_the_spec_does_not_cover_is_left_alone(self):
        # float32: the SwiGLU has the bfloat16 spec's ATen graph, but not its dtype; the softmax is a different
        # graph (no casts).
        m, args = model(torch.float32), inputs(torch.float32)
        ref, got, replaced, calls = run(m, args, "eager", require_kernel=False)
        self.assertEqual((replaced, calls), ({}, []))
        self.assertClose(got, ref, 1e-5, 1e-6)
        # bfloat16 at width 32: the softmax's sizes are symbols (rewritten); the others' 64 is not 32.
        m, args = model(torch.bfloat16, width=32), inputs(torch.bfloat16, width=32)
        ref, got, replaced, calls = run(m, args, "eager", require_kernel=False)
        self.assertEqual((replaced, calls), ({"rw-smax": 1}, ["kforge::rw_smax"]))
        self.assertClose(got, ref, 1.6e-2, 1e-2)

    def test_without_a_kernel_for_the_device_nothing_is_rewritten_by_default(self):
        m, args = model(torch.bfloat16), inputs(torch.bfloat16)
        _, _, replaced, calls = run(m, args, "eager")
        self.assertEqual((replaced, calls), ({}, []))

    def test_a_stored_cpu_kernel_replaces_an_inline_swiglu(self):
        # llama3-8b-swiglu (bundled, a cpu winner; ops_python_test loads it): silu(gate) * up, bf16 [T, 14336].
        def mlp(gate, up):
            return (F.silu(gate) * up) * 2

        gate, up = torch.randn(3, 14336).bfloat16(), torch.randn(3, 14336).bfloat16()
        if not kforge.describe("llama3-8b-swiglu")["kernels"]["cpu"].get("kernel"):
            self.skipTest("llama3-8b-swiglu has no cpu kernel loaded")
        ref, got, replaced, calls = run(mlp, (gate, up), "eager", names=["llama3-8b-swiglu"])
        self.assertEqual((replaced, calls), ({"llama3-8b-swiglu": 1}, ["kforge::llama3_8b_swiglu"]))
        self.assertClose(got, ref, 1.6e-2, 1e-2)

    def test_an_rms_norm_written_either_way_is_rewritten_with_its_residual_add(self):
        args = (torch.randn(1, 16, 48, dtype=torch.bfloat16), torch.randn(1, 16, 48, dtype=torch.bfloat16))
        for form in ("aten", "weight_first"):
            for backend in ("eager", "inductor"):
                with self.subTest(form=form, backend=backend):
                    m = ResidualNorm(form).eval()
                    ref, got, replaced, calls = run(m, args, backend, names=["rw-addnorm"], require_kernel=False)
                    self.assertEqual(replaced, {"rw-addnorm": 1})
                    self.assertEqual(calls, ["kforge::rw_addnorm"])
                    for g, r in zip(got, ref):
                        self.assertClose(g, r, 1.6e-2, 1e-2)
        # Another eps is another computation: left alone.
        ref, got, replaced, calls = run(ResidualNorm("aten", eps=1e-5).eval(), args, "eager", names=["rw-addnorm"],
                                        require_kernel=False)
        self.assertEqual((replaced, calls), ({}, []))

    def test_a_group_norm_module_and_its_silu_are_rewritten_at_sizes_no_case_has(self):
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = nn.GroupNorm(16, 96, eps=1e-6)
                self.conv = nn.Conv2d(96, 96, 3, padding=1)

            def forward(self, x):
                return self.conv(F.silu(self.norm(x)))

        torch.manual_seed(0)
        m = Block().eval()
        args = (torch.randn(2, 96, 8, 8),)
        for backend in ("eager", "inductor"):
            with self.subTest(backend=backend):
                ref, got, replaced, calls = run(m, args, backend, names=["rw-gnsilu"], require_kernel=False)
                self.assertEqual((replaced, calls), ({"rw-gnsilu": 1}, ["kforge::rw_gnsilu"]))
                self.assertClose(got, ref, 1e-4, 1e-4)
        # Two workloads of one graph (float32 and bfloat16): each dtype's call goes to its own workload's operator.
        # Under inductor, bfloat16's norm output rounded and upcast again for the SiLU is one cast after inductor's
        # joint-graph passes, in the model's graph as in the pattern.
        names = ["rw-gnsilu", "rw-gnsilu-bf16"]
        for dtype, workload in ((torch.float32, "rw-gnsilu"), (torch.bfloat16, "rw-gnsilu-bf16")):
            for backend in ("eager", "inductor"):
                with self.subTest(dtype=dtype, backend=backend):
                    ref, got, replaced, calls = run(m.to(dtype), (args[0].to(dtype),), backend, names=names,
                                                    require_kernel=False)
                    self.assertEqual((replaced, calls), ({workload: 1}, ["kforge::" + workload.replace("-", "_")]))

    def test_inductor_compiles_around_the_operators(self):
        m, args = model(torch.bfloat16), inputs(torch.bfloat16)
        # The SwiGLU (elementwise only) is left to inductor by default; pointwise=True replaces it too.
        ref, got, replaced, calls = run(m, args, "inductor", require_kernel=False)
        self.assertEqual((replaced, calls), ({"rw-smax": 1}, ["kforge::rw_smax"]))
        self.assertClose(got, ref, 1.6e-2, 1e-2)
        ref, got, replaced, calls = run(m, args, "inductor", require_kernel=False, pointwise=True)
        self.assertEqual(replaced, {"rw-smax": 1, "rw-swiglu": 1})
        self.assertEqual(calls, ["kforge::rw_smax", "kforge::rw_swiglu"])
        self.assertClose(got, ref, 1.6e-2, 1e-2)


class AddReluSoftmax(nn.Module):
    """relu(x + z) (rw-addrelu's graph) then a linear layer and a softmax (rw-softmax's)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.proj = nn.Linear(64, 64)

    def forward(self, x, z):
        return torch.softmax(self.proj(torch.relu(x + z)), dim=-1)


class Policy(unittest.TestCase):
    """kforge.compile's policy: elementwise-only workloads and kernels recorded slower than torch.compile are left to
    inductor, each with its reason (kforge.left_to_inductor); explicit opt-ins replace them."""

    def compiled(self, m, args, backend="inductor", **kw):
        torch._dynamo.reset()
        with torch.no_grad():
            ref = m(*args)
            c = kforge.compile(m, backend=backend, **kw)
            c(*args)
            got, calls = kforge_calls(lambda: c(*args))
        torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)
        return {r["workload"]: r["count"] for r in kforge.rewritten(c)}, calls, kforge.left_to_inductor(c)

    def test_the_softmax_is_replaced_and_the_add_relu_left_to_inductor_with_the_reason(self):
        args = (torch.randn(8, 64), torch.randn(8, 64))
        replaced, calls, left = self.compiled(AddReluSoftmax().eval(), args, names=POLICY, require_kernel=False)
        self.assertEqual((replaced, calls), ({"rw-softmax": 1}, ["kforge::rw_softmax"]))
        self.assertEqual([(x["workload"], x["count"]) for x in left], [("rw-addrelu", 1)])
        self.assertEqual(left[0]["why"], "elementwise only (add, relu): inductor fuses it into the kernels beside it, "
                                         "an operator would be one kernel more (pointwise=True replaces it)")

    def test_asked_for_explicitly_the_add_relu_is_replaced_too(self):
        args = (torch.randn(8, 64), torch.randn(8, 64))
        for pointwise in (True, ["rw-addrelu"]):
            with self.subTest(pointwise=pointwise):
                replaced, calls, left = self.compiled(AddReluSoftmax().eval(), args, names=POLICY,
                                                      require_kernel=False, pointwise=pointwise)
                self.assertEqual(replaced, {"rw-addrelu": 1, "rw-softmax": 1})
                self.assertEqual(calls, ["kforge::rw_addrelu", "kforge::rw_softmax"])
                self.assertEqual(left, [])

    def test_without_inductor_and_in_eager_every_match_is_replaced(self):
        args = (torch.randn(8, 64), torch.randn(8, 64))
        replaced, calls, left = self.compiled(AddReluSoftmax().eval(), args, backend="eager", names=POLICY,
                                              require_kernel=False)
        self.assertEqual((replaced, left), ({"rw-addrelu": 1, "rw-softmax": 1}, []))
        m = AddReluSoftmax().eval()
        fast = kforge.rewrite_eager(m, args, names=POLICY, require_kernel=False)
        self.assertEqual({r["workload"]: r["count"] for r in kforge.rewritten(fast)}, {"rw-addrelu": 1, "rw-softmax": 1})
        self.assertEqual(kforge.left_to_inductor(fast), [])

    def test_a_softmax_of_a_relu_nothing_else_reads_is_left_for_inductor_to_fuse(self):
        class ReluSoftmax(nn.Module):
            def forward(self, x, z):
                h = torch.relu(x)  # read only by the softmax: inductor fuses it in
                return torch.softmax(h, dim=-1), torch.softmax(z, dim=-1)

        args = (torch.randn(8, 64), torch.randn(8, 64))
        replaced, calls, left = self.compiled(ReluSoftmax().eval(), args, names=["rw-softmax"], require_kernel=False)
        self.assertEqual((replaced, calls), ({"rw-softmax": 1}, ["kforge::rw_softmax"]))  # the graph input's
        self.assertEqual([(x["workload"], x["count"]) for x in left], [("rw-softmax", 1)])
        self.assertEqual(left[0]["why"], "its input is the result of relu, used by nothing else: inductor fuses that "
                                         "into the kernel, an operator would write it and read it back (fused=True "
                                         "replaces it)")
        for fused in (True, ["rw-softmax"]):
            with self.subTest(fused=fused):
                replaced, _, left = self.compiled(ReluSoftmax().eval(), args, names=["rw-softmax"],
                                                  require_kernel=False, fused=fused)
                self.assertEqual((replaced, left), ({"rw-softmax": 2}, []))

        class ReluUsedTwice(nn.Module):  # the relu's result is written anyway: the softmax is replaced
            def forward(self, x):
                h = torch.relu(x)
                return torch.softmax(h, dim=-1), h * 2

        replaced, _, left = self.compiled(ReluUsedTwice().eval(), args[:1], names=["rw-softmax"], require_kernel=False)
        self.assertEqual((replaced, left), ({"rw-softmax": 1}, []))

    def test_a_kernel_recorded_slower_than_compile_on_the_case_is_left_to_inductor(self):
        def router(x):
            return torch.softmax(x, dim=-1, dtype=torch.float32) * 2

        x = torch.randn(7, 257).bfloat16()
        replaced, calls, left = self.compiled(router, (x,), names=[SLOW])
        self.assertEqual((replaced, calls), ({}, []))
        self.assertEqual([(y["workload"], y["count"]) for y in left], [(SLOW, 1)])
        self.assertEqual(left[0]["why"], "its stored kernel (cpu-x86-64) is slower than torch.compile on case "
                                         "T=7,E=257: 2 us against 1 us, 0.50x (slower=True replaces it)")
        # A recorded case where the kernel is faster: replaced.
        replaced, calls, left = self.compiled(router, (torch.randn(1000, 256).bfloat16(),), names=[SLOW])
        self.assertEqual((replaced, left), ({SLOW: 1}, []))
        # Sizes of no recorded case: the record's speedup across its cases (0.5) decides.
        _, _, left = self.compiled(router, (torch.randn(5, 257).bfloat16(),), names=[SLOW])
        self.assertIn("slower than torch.compile across its recorded cases, 0.50x (T=5,E=257 is none of them",
                      left[0]["why"])
        # Asked for explicitly: replaced.
        replaced, calls, left = self.compiled(router, (x,), names=[SLOW], slower=True)
        self.assertEqual((replaced, calls, left), ({SLOW: 1}, ["kforge::rw_slow_softmax"], []))

    def test_a_patched_modules_call_the_policy_declines_is_put_back_for_inductor(self):
        # gpt2-gelu-tanh (bundled, a cpu winner; ops_python_test loads it): kforge.patch swaps the GELU module for
        # its operator; kforge.compile puts the call back as the workload's ops (elementwise only).
        if not kforge.describe("gpt2-gelu-tanh")["kernels"]["cpu"].get("kernel"):
            self.skipTest("gpt2-gelu-tanh has no cpu kernel loaded")
        m = kforge.patch(nn.Sequential(nn.Linear(3072, 3072), nn.GELU(approximate="tanh")).half().eval())
        self.assertEqual([p.workloads for p in kforge.patched_modules(m)], [["gpt2-gelu-tanh"]])
        x = torch.randn(4, 3072).half()
        torch._dynamo.reset()
        with torch.no_grad():
            ref = m(x)
            for pointwise, want in ((False, []), (True, ["kforge::gpt2_gelu_tanh"])):
                c = kforge.compile(m, names=["gpt2-gelu-tanh"], pointwise=pointwise)
                c(x)
                got, calls = kforge_calls(lambda: c(x))
                self.assertEqual(calls, want)
                torch.testing.assert_close(got.float(), ref.float(), rtol=1e-2, atol=1e-2)
                left = kforge.left_to_inductor(c)
                self.assertEqual([(y["workload"], y["count"]) for y in left], [] if pointwise else [("gpt2-gelu-tanh", 1)])
                torch._dynamo.reset()


if __name__ == "__main__":
    unittest.main()
