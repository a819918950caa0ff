"""kforge.rewrite_eager (python/kforge/eager_rewrite.py) and kforge e2e's kforge variant, which uses it, run by ctest's
kforge_ops_python through ops_python_test (which imports these classes), or alone (`python3 -m unittest
eager_rewrite_python_test` in tests/ops, with PYTHONPATH=python). Workloads are written to a temp folder as `kforge
capture` writes them (no kernels: require_kernel=False rewrites them anyway, the operators running their eager
graphs), beside the bundled llama3-8b-swiglu and gpt2-gelu-tanh, whose stored cpu kernels the default
(require_kernel=True) takes. Small models on the cpu whose forwards write the patterns inline; it asserts what was
replaced (the rewrite's count, the profiler's record of kforge operator calls), that outputs match the model's, and
what is left alone (another constant, an uncaptured forward, a call unlike the captured one). RewriteBest: kforge
e2e's choice between patching first and rewriting first (kforge.rewrite_best) on the example Llama-3 decoder, with
cpu winners searched for two captured-style specs. E2eKforgeVariant: what e2e.py and `kforge e2e` report, the
Amdahl prediction from a capture share included. Skips, saying why, without torch, libkforge_ops.so or (for those
that need it) the kforge binary."""
import copy
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest
import warnings

try:
    import torch
    import torch.nn.functional as F
    from torch import nn

    import kforge
    MISSING = ""
except ImportError as e:  # every test here skips, saying so
    torch = nn = None
    MISSING = f"cannot import torch or kforge ({e})"

REPO = pathlib.Path(__file__).resolve().parents[2]
SPECS = {
    "er-smax": """
inputs:
  x: {shape: [B, H, S, S], dtype: float32, init: {normal: {std: 1.0}}}
  mask: {shape: [1, 1, S, S], dtype: float32, init: causal_mask}
graph:
  - scale: {input: x, factor: 0.125}
  - add_mask: {mask: mask}
  - softmax: {dim: -1}
cases:
  - {B: 1, H: 2, S: 8, gate: true}
""",
    "er-addnorm": """
inputs:
  x: {shape: [B, T, 32], dtype: float32, init: {normal: {std: 1.0}}}
  z: {shape: [B, T, 32], dtype: float32, init: {normal: {std: 1.0}}}
  w: {shape: [32], dtype: float32, init: {normal: {mean: 1.0, std: 0.1}}}
graph:
  - add: {input: x, other: z, as: h}
  - rms_norm: {normalized_shape: [32], weight: w, eps: 1.0e-5}
outputs: [out, h]
cases:
  - {B: 1, T: 8, gate: true}
""",
    # Symbolic channels: group_norm refuses channels its groups do not divide, so the pattern traces at a case's sizes
    # (16 groups: the GroupNorm(32) models of ops_python_test are not its calls).
    "er-gnsilu": """
inputs:
  x: {shape: [N, C, H, W], dtype: float32, init: {normal: {std: 1.0}}}
  w: {shape: [C], dtype: float32, init: {normal: {mean: 1.0, std: 0.1}}}
  b: {shape: [C], dtype: float32, init: {normal: {std: 0.1}}}
graph:
  - group_norm: {input: x, num_groups: 16, weight: w, bias: b, eps: 1.0e-6}
  - silu
cases:
  - {N: 1, C: 128, H: 16, W: 16, gate: true}
  - {N: 1, C: 64, H: 8, W: 8}
""",
}
NAMES = list(SPECS)
TMP = None


def setUpModule():
    global TMP
    if MISSING:
        raise unittest.SkipTest(MISSING)
    try:
        kforge.load_library()
    except (FileNotFoundError, OSError) as e:
        raise unittest.SkipTest(f"libkforge_ops.so: {e}")
    TMP = tempfile.TemporaryDirectory(prefix="kf-eager-rewrite-")
    for name, body in SPECS.items():
        (pathlib.Path(TMP.name) / f"{name}.yaml").write_text(f"version: 1\nname: {name}\n{body}")
    report = kforge.load(TMP.name, device="cpu")
    assert not report["skipped"], report["skipped"]
    kforge.load(REPO / "workloads", device="cpu", names=["llama3-8b-swiglu", "gpt2-gelu-tanh"])


def tearDownModule():
    if TMP is not None:
        TMP.cleanup()


class Attention(nn.Module if nn else object):
    """A projection, then softmax(x * scale + mask) written inline (or `mask + x * scale` with mask_first)."""

    def __init__(self, scale=0.125, mask_first=False):
        super().__init__()
        self.scale, self.mask_first = scale, mask_first
        self.proj = nn.Linear(8, 8)

    def forward(self, x, mask):
        s = self.proj(x)
        s = mask + s * self.scale if self.mask_first else s * self.scale + mask
        return torch.softmax(s, -1) * 2


class ResidualNorm(nn.Module if nn else object):
    """h = z + x, then an RMSNorm written as Hugging Face's Llama but with rsqrt(...) * x, the other way round from
    both of kforge's RMS_NORM_FORMS."""

    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1 + torch.randn(32) / 10)

    def forward(self, x, z):
        h = z + x
        n = h.to(torch.float32)
        n = torch.rsqrt(n.pow(2).mean(-1, keepdim=True) + self.eps) * n
        return self.weight * n.to(h.dtype), h


def attention_inputs():
    torch.manual_seed(1)
    return torch.randn(1, 2, 8, 8), torch.full((8, 8), float("-inf")).triu(1)[None, None]


def kforge_calls(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        result = fn()
    return result, sorted({e.name for e in prof.events() if e.name.startswith("kforge::")})


def rewrite(m, args, **kw):
    """The model's output, the rewritten one's, what was replaced and the kforge operators called."""
    torch.manual_seed(0)
    with torch.no_grad():
        ref = m(*args)
        fast = kforge.rewrite_eager(m, args, names=kw.pop("names", NAMES), **kw)
        got, calls = kforge_calls(lambda: fast(*args))
    return ref, got, {r["workload"]: r["count"] for r in kforge.rewritten(fast)}, calls, fast


class EagerRewrite(unittest.TestCase):
    def assertClose(self, got, ref):
        for g, r in zip(got if isinstance(got, tuple) else (got,), ref if isinstance(ref, tuple) else (ref,)):
            self.assertEqual((g.shape, g.dtype), (r.shape, r.dtype))
            torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-6)

    def test_an_inline_scaled_masked_softmax_becomes_its_operator(self):
        torch.manual_seed(0)
        m = Attention().eval()
        ref, got, replaced, calls, fast = rewrite(m, attention_inputs(), require_kernel=False)
        self.assertEqual(fast.why, "")
        self.assertEqual((replaced, calls), ({"er-smax": 1}, ["kforge::er_smax"]))
        self.assertClose(got, ref)
        # The graph runs eagerly, op by op: the operator in it, no Dynamo.
        targets = {str(n.target) for n in fast.graph_module.graph.nodes if n.op == "call_function"}
        self.assertIn("kforge.er_smax.default", targets)
        self.assertNotIn("aten._softmax.default", targets)

    def test_the_mask_added_first_is_matched_too(self):
        torch.manual_seed(0)
        ref, got, replaced, calls, _ = rewrite(Attention(mask_first=True).eval(), attention_inputs(),
                                               require_kernel=False)
        self.assertEqual((replaced, calls), ({"er-smax": 1}, ["kforge::er_smax"]))
        self.assertClose(got, ref)

    def test_another_scale_or_eps_is_left_alone(self):
        torch.manual_seed(0)
        ref, got, replaced, calls, fast = rewrite(Attention(scale=0.25).eval(), attention_inputs(),
                                                  require_kernel=False)
        self.assertEqual((fast.why, replaced, calls), ("", {}, []))
        self.assertClose(got, ref)
        args = (torch.randn(1, 8, 32), torch.randn(1, 8, 32))
        ref, got, replaced, calls, _ = rewrite(ResidualNorm(eps=1e-6).eval(), args, require_kernel=False)
        self.assertEqual((replaced, calls), ({}, []))
        self.assertClose(got, ref)

    def test_a_residual_add_and_an_rms_norm_with_its_operands_swapped_become_one_operator(self):
        torch.manual_seed(0)
        args = (torch.randn(1, 8, 32), torch.randn(1, 8, 32))
        ref, got, replaced, calls, _ = rewrite(ResidualNorm().eval(), args, require_kernel=False)
        self.assertEqual((replaced, calls), ({"er-addnorm": 1}, ["kforge::er_addnorm"]))
        self.assertClose(got, ref)

    def test_a_group_norm_module_and_the_silu_after_it_become_one_operator_at_any_bound_size(self):
        # nn.GroupNorm's native_group_norm also returns its mean and rstd, which nothing reads: the capture drops them,
        # or they would stop the match. The call's sizes are no case's (C=96): the symbols bind them.
        class Block(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.norm = nn.GroupNorm(16, c, eps=1e-6)

            def forward(self, x):
                return F.silu(self.norm(x)) * 2

        torch.manual_seed(0)
        m = Block(96).eval()
        with torch.no_grad():
            m.norm.weight.normal_(1.0, 0.1)
            m.norm.bias.normal_(0.0, 0.1)
        ref, got, replaced, calls, _ = rewrite(m, (torch.randn(2, 96, 4, 4),), require_kernel=False)
        self.assertEqual((replaced, calls), ({"er-gnsilu": 1}, ["kforge::er_gnsilu"]))
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)

    def test_without_a_kernel_for_the_device_nothing_is_rewritten_by_default(self):
        torch.manual_seed(0)
        _, _, replaced, calls, fast = rewrite(Attention().eval(), attention_inputs())
        self.assertEqual((fast.why, replaced, calls), ("", {}, []))

    def test_a_stored_cpu_kernel_replaces_an_inline_swiglu_written_up_first(self):
        if not kforge.describe("llama3-8b-swiglu")["kernels"]["cpu"].get("kernel"):
            self.skipTest("llama3-8b-swiglu has no cpu kernel loaded")

        class MLP(nn.Module):
            def forward(self, gate, up):
                return (up * F.silu(gate)) * 2

        args = (torch.randn(3, 14336).bfloat16(), torch.randn(3, 14336).bfloat16())
        ref, got, replaced, calls, _ = rewrite(MLP(), args, names=["llama3-8b-swiglu"])
        self.assertEqual((replaced, calls), ({"llama3-8b-swiglu": 1}, ["kforge::llama3_8b_swiglu"]))
        torch.testing.assert_close(got.float(), ref.float(), rtol=1.6e-2, atol=1e-2)

    def test_an_input_the_kernel_cannot_take_leaves_the_match_alone(self):
        # A transposed gate (not contiguous) or a gate starting 2 bytes into its storage: the operator would run
        # its eager graph, so with require_kernel the rewrite leaves the ATen ops as they are.
        if not kforge.describe("llama3-8b-swiglu")["kernels"]["cpu"].get("kernel"):
            self.skipTest("llama3-8b-swiglu has no cpu kernel loaded")

        class MLP(nn.Module):
            def forward(self, gate, up):
                return F.silu(gate) * up

        up = torch.randn(3, 14336).bfloat16()
        for gate in (torch.randn(14336, 3).bfloat16().t(), torch.randn(3 * 14336 + 1).bfloat16()[1:].view(3, 14336)):
            ref, got, replaced, calls, _ = rewrite(MLP(), (gate, up), names=["llama3-8b-swiglu"])
            self.assertEqual((replaced, calls), ({}, []))
            torch.testing.assert_close(got, ref)

    def test_a_call_unlike_the_captured_one_runs_the_model(self):
        torch.manual_seed(0)
        m = Attention().eval()
        _, _, replaced, _, fast = rewrite(m, attention_inputs(), require_kernel=False)
        self.assertEqual(replaced, {"er-smax": 1})
        x, mask = torch.randn(1, 3, 8, 8), attention_inputs()[1]  # 3 heads, not 2
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got, calls = kforge_calls(lambda: fast(x, mask))
        self.assertEqual(calls, [])
        self.assertClose(got, m(x, mask).detach())
        self.assertTrue(any("a call unlike the captured one" in str(w.message) for w in caught))
        # A call that needs a gradient (the operators have none) runs the model too.
        got, calls = kforge_calls(lambda: fast(*attention_inputs()))
        self.assertEqual(calls, [])
        self.assertTrue(got.requires_grad)

    def test_a_forward_that_reads_a_tensors_values_is_not_captured_and_says_why(self):
        class Branchy(nn.Module):
            def forward(self, x, mask):
                return torch.softmax(x * 0.125 + mask, -1) if x.sum() > 0 else x

        args = attention_inputs()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ref, got, replaced, calls, fast = rewrite(Branchy(), args, require_kernel=False)
        self.assertIn("data-dependent", fast.why)
        self.assertIsNone(fast.graph_module)
        self.assertEqual((replaced, calls), ({}, []))
        self.assertClose(got, ref)
        self.assertTrue(any("was not captured" in str(w.message) for w in caught))

    def test_a_patched_module_is_captured_as_its_operator_call_and_a_rewrite_of_nothing_runs_the_model(self):
        # The e2e tiny model: an nn.GELU(tanh) that kforge.patch swaps for the stored gpt2-gelu-tanh cpu kernel. Its
        # patched forward traces as the operator call, which the rewrite leaves as it is; having replaced nothing,
        # the result runs the (patched) model itself, not its captured graph op by op.
        if not kforge.describe("gpt2-gelu-tanh")["kernels"]["cpu"].get("kernel"):
            self.skipTest("gpt2-gelu-tanh has no cpu kernel loaded")
        sys.path.insert(0, str(REPO / "tests/data/e2e"))
        import tiny_model

        m, args = tiny_model.make(width=3072)
        m = kforge.patch(m.eval())
        self.assertEqual(kforge.patched_modules(m), [("act", ["gpt2-gelu-tanh"])])
        ref, got, replaced, calls, fast = rewrite(m, args)
        self.assertEqual((fast.why, replaced, calls), ("", {}, ["kforge::gpt2_gelu_tanh"]))
        self.assertIsNone(fast.graph_module)
        self.assertIs(fast.module, m)
        from kforge.eager_rewrite import capture

        gm = capture(m, args, {})
        targets = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
        self.assertIn("kforge.gpt2_gelu_tanh.default", targets)
        torch.testing.assert_close(got.float(), ref.float(), rtol=1e-2, atol=1e-3)


LLAMA_SPECS = {
    # As kforge capture writes them for examples/models/llama3_decoder.py at scale 0.05 on the cpu (hidden 192, 102
    # tokens, float32), with the shares and calls of the H200 capture (examples/captured/llama3_decoder).
    "lt-add-rmsnorm": """
inputs:
  x: {shape: [1, 102, 192], dtype: float32, init: {normal: {std: 1.0}}}
  z: {shape: [1, 102, 192], dtype: float32, init: {normal: {std: 1.0}}}
  w: {shape: [192], dtype: float32, init: {normal: {mean: 1.0, std: 0.1}}}
graph:
  - add: {input: x, other: z, as: h}
  - rms_norm: {normalized_shape: [192], weight: w, eps: 1e-05}
outputs: [out, h]
cases:
  - {gate: true, share: 4.7%, calls: 4}
""",
    "lt-rmsnorm": """
inputs:
  x: {shape: [1, 102, 192], dtype: float32, init: {normal: {std: 1.0}}}
  w: {shape: [192], dtype: float32, init: {normal: {mean: 1.0, std: 0.1}}}
graph:
  - rms_norm: {input: x, normalized_shape: [192], weight: w, eps: 1e-05}
cases:
  - {gate: true, share: 1.1%, calls: 1}
""",
}


def kforge_binary():
    """The kforge command: $KFORGE_BINARY, else the cpu preset's build/kforge (None when neither exists)."""
    binary = pathlib.Path(os.environ.get("KFORGE_BINARY", REPO / "build" / "kforge"))
    return binary if binary.is_file() else None


class RewriteBest(unittest.TestCase):
    """kforge.rewrite_best on the example Llama-3 decoder at scale 0.05: patching its RMSNorm modules first (by
    behaviour, as the rms_norm operator) hides the residual add before four of them, which only the rewrite of the
    unpatched model finds (add + rms_norm, LlamaRMSNorm's form); the shares choose it. The two specs get cpu
    winners from a one-evaluation `kforge search` (the row_norm_cpu family's default) in a temp folder: a patched
    module calls its operator only where a kernel is loaded."""

    @classmethod
    def setUpClass(cls):
        binary = kforge_binary()
        if binary is None:
            raise unittest.SkipTest("no kforge binary (build/kforge or $KFORGE_BINARY) to search the cpu kernels")
        cls.dir = tempfile.TemporaryDirectory(prefix="kf-rewrite-best-")
        d = pathlib.Path(cls.dir.name)
        for name, body in LLAMA_SPECS.items():
            (d / f"{name}.yaml").write_text(f"version: 1\nname: {name}\n{body}")
            r = subprocess.run([str(binary), "search", name, "--device", "cpu", "--budget", "1", "--workloads", str(d),
                                "--db", str(d / "search.db"), "--baselines", "eager"],
                               capture_output=True, text=True, cwd=REPO, timeout=600)
            assert r.returncode == 0 and (d / name / "kernels/cpu-x86-64.json").is_file(), r.stdout + r.stderr
        report = kforge.load(cls.dir.name, device="cpu")
        assert not report["skipped"], report["skipped"]
        assert all(kforge.describe(n)["kernels"]["cpu"].get("kernel") for n in LLAMA_SPECS)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_an_add_and_rms_norm_across_a_module_edge_is_replaced_by_rewriting_first(self):
        sys.path.insert(0, str(REPO / "examples/models"))
        import llama3_decoder

        model, args = llama3_decoder.make("cpu", scale=0.05)
        model.eval()
        names = list(LLAMA_SPECS)
        with torch.no_grad():
            ref = model(*args)
            fast, chosen = kforge.rewrite_best(model, args, names=names)
            got, calls = kforge.operator_calls(lambda: fast(*args))
        self.assertEqual(chosen["how"], "rewrite-first", chosen["note"])
        self.assertEqual(calls, {("lt-add-rmsnorm", "default"): 4, ("lt-rmsnorm", "default"): 1})
        self.assertEqual({r["workload"]: r["count"] for r in kforge.rewritten(fast)},
                         {"lt-add-rmsnorm": 4, "lt-rmsnorm": 1})
        self.assertAlmostEqual(chosen["coverage"]["share"], 0.047 + 0.011)
        # Patching first, the five rms_norm calls count 1.1 % each (the case's captured time per call): the four
        # inside the add + rms_norm patterns miss their adds.
        self.assertIn("rewrite-first: 5.8% of the captured time replaced, chosen over patch-then-rewrite: 5.5%",
                      chosen["note"])
        self.assertEqual(kforge.patched_modules(model), [])  # the model itself is left as it was
        torch.testing.assert_close(got, ref, rtol=1e-3, atol=1e-3)
        # Patching first, the RMSNorm modules become rms_norm operator calls and the adds stay apart.
        patched = kforge.patch(copy.deepcopy(model), example_inputs=args, names=names)
        with torch.no_grad():
            first_fast = kforge.rewrite_eager(patched, args, names=names)
            _, first = kforge.operator_calls(lambda: first_fast(*args))
        self.assertEqual(first, {("lt-rmsnorm", "default"): 5})
        shares = kforge.replaced_cases(calls, "cpu")
        self.assertEqual([(c["workload"], c["case"], c["calls"], round(c["share"], 9), c["captured_calls"])
                          for c in shares],
                         [("lt-add-rmsnorm", "default", 4, 0.047, 4), ("lt-rmsnorm", "default", 1, 0.011, 1)])

    def test_a_workload_without_a_kernel_for_the_device_patches_no_module(self):
        # The RMSNorm spec again under another name, not searched: no cpu kernel. Its operator would run the eager
        # graph, so rewrite_best patches nothing with it (kforge.patch alone still would).
        sys.path.insert(0, str(REPO / "examples/models"))
        import llama3_decoder

        with tempfile.TemporaryDirectory(prefix="kf-rewrite-bare-") as d:
            (pathlib.Path(d) / "lt-rmsnorm-bare.yaml").write_text(
                "version: 1\nname: lt-rmsnorm-bare\n" + LLAMA_SPECS["lt-rmsnorm"])
            kforge.load(d, device="cpu")
            self.assertFalse(kforge.describe("lt-rmsnorm-bare")["kernels"]["cpu"].get("kernel"))
            model, args = llama3_decoder.make("cpu", scale=0.05)
            model.eval()
            names = ["lt-rmsnorm-bare"]
            with torch.no_grad():
                self.assertTrue(kforge.patched_modules(kforge.patch(copy.deepcopy(model), example_inputs=args,
                                                                    names=names)))
                fast, chosen = kforge.rewrite_best(model, args, names=names)
                _, calls = kforge.operator_calls(lambda: fast(*args))
            self.assertEqual(kforge.patched_modules(chosen["patched"]), [])
            self.assertEqual(calls, {})


class Coverage(unittest.TestCase):
    def test_calls_beyond_the_captured_ones_count_at_the_same_time_each(self):
        # kforge.covered, with the shares given: 6 calls of a case captured at 3 calls for 13.7 % (an operator also
        # covering part of a larger captured pattern at those sizes) count 27.4 %; a case without captured calls
        # counts its share; a call of no annotated case counts a call only.
        shares = {("gn-silu", "C=128"): (0.137, 3), ("smax", "default"): (0.1, None)}
        cov = kforge.covered({("gn-silu", "C=128"): 6, ("smax", "default"): 2, ("other", None): 1}, shares)
        self.assertAlmostEqual(cov["share"], 0.274 + 0.1)
        self.assertEqual((cov["calls"], cov["shares"]), (9, True))
        self.assertEqual(kforge.covered({("other", None): 1}, shares)["shares"], False)


class E2eKforgeVariant(unittest.TestCase):
    def test_an_inline_pattern_is_reported_patched_with_how_graph(self):
        # lib/e2e/e2e.py on tests/data/e2e/tiny_model.py:make_inline (an inline SwiGLU the stored llama3-8b-swiglu
        # cpu kernel covers), eager and kforge only, short series: what it reports, not which is faster.
        if not kforge.describe("llama3-8b-swiglu")["kernels"]["cpu"].get("kernel"):
            self.skipTest("llama3-8b-swiglu has no cpu kernel loaded")
        with tempfile.TemporaryDirectory(prefix="kf-e2e-inline-") as d:
            out = pathlib.Path(d) / "samples.json"
            env = dict(os.environ, OMP_NUM_THREADS="1")
            r = subprocess.run([sys.executable, str(REPO / "lib/e2e/e2e.py"), "--model",
                                str(REPO / "tests/data/e2e/tiny_model.py") + ":make_inline", "--device", "cpu",
                                "--out", str(out), "--workloads", str(REPO / "workloads"), "--names",
                                "llama3-8b-swiglu", "--variants", "eager,kforge", "--warmup", "1", "--min-samples", "3",
                                "--timeout", "0.1", "--min-seconds", "0", "--profile-passes", "2"],
                               capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            j = json.loads(out.read_text())
        self.assertEqual(j["patched"], [{"module": "(graph)", "workloads": ["llama3-8b-swiglu"], "how": "graph",
                                         "count": 1, "variant": "kforge"}])
        kf = next(v for v in j["variants"] if v["name"] == "kforge")
        self.assertEqual(kf["status"], "ok", kf)
        # Nothing to patch: both ways replace the one call, and patching first is kept on a tie.
        self.assertTrue(kf["note"].startswith("patch-then-rewrite: 1 calls (2 graph ops) replaced, chosen over rewrite-first"), kf)
        self.assertEqual(j["replaced_cases"][0]["workload"], "llama3-8b-swiglu")
        patterns = j["profile"]["patterns"]
        self.assertEqual([(p["module"], p["workloads"], p["count"]) for p in patterns],
                         [("(graph)", ["llama3-8b-swiglu"], 1)])
        self.assertEqual((len(patterns[0]["eager_us"]), len(patterns[0]["kforge_us"])), (2, 2))
        self.assertTrue(all(t > 0 for t in patterns[0]["eager_us"] + patterns[0]["kforge_us"]))


    def test_a_captured_spec_with_shares_yields_the_prediction(self):
        # `kforge e2e` on the inline SwiGLU at one token, with llama3-8b-swiglu's spec and stored cpu kernel copied
        # into a folder and its T=1 case given a capture's share (40 %, 1 call): the prediction is Amdahl's from that
        # share and the winner's recorded speedup on T=1 (eager / kernel in its .json), whatever the timings.
        binary = kforge_binary()
        if binary is None:
            self.skipTest("no kforge binary (build/kforge or $KFORGE_BINARY)")
        if not kforge.describe("llama3-8b-swiglu")["kernels"]["cpu"].get("kernel"):
            self.skipTest("llama3-8b-swiglu has no cpu kernel loaded")
        import shutil

        with tempfile.TemporaryDirectory(prefix="kf-e2e-shares-") as d:
            spec = (REPO / "workloads/llama3-8b-swiglu.yaml").read_text()
            self.assertIn("  - {T: 1, gate: true}", spec)
            spec = spec.replace("  - {T: 1, gate: true}", "  - {T: 1, gate: true, share: 40%, calls: 1}")
            (pathlib.Path(d) / "llama3-8b-swiglu.yaml").write_text(spec)
            shutil.copytree(REPO / "workloads/llama3-8b-swiglu/kernels", pathlib.Path(d) / "llama3-8b-swiglu/kernels")
            record = json.loads((pathlib.Path(d) / "llama3-8b-swiglu/kernels/cpu-x86-64.json").read_text())
            out = pathlib.Path(d) / "e2e.json"
            env = dict(os.environ, OMP_NUM_THREADS="1")
            r = subprocess.run([str(binary), "e2e", "--model", str(REPO / "tests/data/e2e/tiny_model.py") + ":make_inline",
                                "--model-args", "tokens=1", "--device", "cpu", "--workloads", d, "--variants",
                                "eager,kforge", "--warmup", "1", "--min-samples", "3", "--timeout", "0.1",
                                "--profile-passes", "1", "--json", str(out)],
                               capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
            self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
            j = json.loads(out.read_text())
        k = record["results"]["baselines"]["eager"]["T=1"] / record["results"]["case_us"]["T=1"]
        p = j["prediction"]
        self.assertTrue(p["has_shares"], p)
        self.assertEqual([(c["workload"], c["case"], c["calls"], c["speedup_from"]) for c in p["cases"]],
                         [("llama3-8b-swiglu", "T=1", 1, "case")])
        self.assertAlmostEqual(p["share"], 0.4)
        self.assertAlmostEqual(p["predicted_speedup"], 1 / (0.6 + 0.4 / k), places=6)
        self.assertAlmostEqual(p["measured_speedup"], j["speedups"]["kforge/eager"], places=6)
        self.assertIn("Amdahl from the capture's shares: the replaced cases take 40.0% of the captured time",
                      r.stdout)


if __name__ == "__main__":
    unittest.main()
