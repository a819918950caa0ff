"""kforge_ops from Python (ctest runs it as kforge_ops_python, with KFORGE_OPS_LIBRARY and PYTHONPATH set): the
bundled workloads' cpu winners as torch.ops.kforge operators, their eager fallback, the operators inside
torch.compile, and kforge.patch on small models (by the rule table, and by behaviour on example inputs), each
compared with the unpatched model within the verifier's tolerance. The GPU tests skip without a GPU."""
import copy
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest
import warnings

import torch
import torch._dynamo.testing
import torch.nn.functional as F
from torch import nn

import kforge
from rewrite_python_test import GraphRewrite, Policy  # noqa: F401  (kforge.compile: rewrite, policy; own setUpModule)
from eager_rewrite_python_test import Coverage, E2eKforgeVariant, EagerRewrite, RewriteBest  # noqa: F401  (rewrite_eager, rewrite_best; ditto)

REPO = pathlib.Path(__file__).resolve().parents[2]
WORKLOADS = REPO / "workloads"
CPU_WORKLOADS = ["gpt2-gelu-tanh", "llama3-8b-swiglu", "qwen25-7b-rmsnorm", "bert-base-layernorm",
                 "qwen3-32b-add-rmsnorm", "sd35-vae-groupnorm-silu", "resnet50-avgpool", "resnet50-avgpool-cl"]
HAVE_GPU = os.path.exists("/dev/nvidiactl")
REPORT = None


def setUpModule():
    global REPORT
    REPORT = kforge.load(WORKLOADS, device="cpu", names=CPU_WORKLOADS)


def with_warnings(fn):
    """fn()'s result and the kforge warnings it gave. An operator's TORCH_WARN reaches Python's warnings only where
    torch buffers them (its own bindings); a torch.ops call leaves them to c10's handler, which writes stderr, so
    both are read."""
    with tempfile.TemporaryFile(mode="w+b") as err, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            result = fn()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        lines = err.read().decode(errors="replace").splitlines()
    found = [line for line in lines if "kforge." in line] + [str(w.message) for w in caught if "kforge." in str(w.message)]
    return result, found


def kforge_calls(fn):
    """fn()'s result and the kforge operators it called (the profiler's record of the dispatcher's calls)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        result = fn()
    return result, sorted({e.name for e in prof.events() if e.name.startswith("kforge::")})


class Tolerance:
    """The verifier's rule (verify/tolerance.h): |got - ref| <= atol + rtol |ref| against the float64 reference,
    the dtype's default widened to 4x eager's own error."""

    def __init__(self, dtype):
        self.rtol, self.atol = {torch.float32: (1e-5, 1e-7), torch.float16: (2e-3, 1e-5),
                                torch.bfloat16: (1.6e-2, 1e-4), torch.float64: (1e-12, 1e-14)}[dtype]

    def check(self, test, got, eager, ref, what):
        ref = ref.double()
        unit = self.atol + self.rtol * ref.abs()
        eager_ratio = ((eager.double() - ref).abs() / unit).max().item()
        ratio = ((got.double() - ref).abs() / (unit * max(1.0, 4 * eager_ratio))).max().item()
        test.assertEqual(got.shape, eager.shape, what)
        test.assertEqual(got.dtype, eager.dtype, what)
        test.assertLessEqual(ratio, 1.0, f"{what}: max error {ratio:.3g} of the tolerance")


class Operators(unittest.TestCase):
    def test_the_cpu_winners_are_loaded(self):
        self.assertEqual(REPORT["skipped"], [])
        ops = {e["op"]: e for e in REPORT["loaded"]}
        for w in CPU_WORKLOADS:
            self.assertTrue(ops[kforge.op_name(w)]["kernels"]["cpu"]["kernel"], ops[kforge.op_name(w)]["kernels"])
        self.assertEqual(ops["qwen3_32b_add_rmsnorm"]["schema"],
                         "qwen3_32b_add_rmsnorm(Tensor x, Tensor r, Tensor w) -> (Tensor y, Tensor h)")
        self.assertTrue(set(kforge.op_name(w) for w in CPU_WORKLOADS) <= set(kforge.loaded()))

    def test_operators_match_eager_within_the_tolerance(self):
        torch.manual_seed(0)
        x = torch.randn(128, 3072).half()
        y, warned = with_warnings(lambda: torch.ops.kforge.gpt2_gelu_tanh(x))
        self.assertEqual(warned, [])
        Tolerance(torch.float16).check(self, y, F.gelu(x, approximate="tanh"), F.gelu(x.double(), approximate="tanh"),
                                       "gpt2_gelu_tanh")
        gate, up = torch.randn(64, 14336).bfloat16(), torch.randn(64, 14336).bfloat16()
        y, warned = with_warnings(lambda: kforge.op("llama3-8b-swiglu")(gate, up))
        self.assertEqual(warned, [])
        Tolerance(torch.bfloat16).check(self, y, F.silu(gate) * up, F.silu(gate.double()) * up.double(), "swiglu")
        x, r, w = torch.randn(3, 5120).bfloat16(), torch.randn(3, 5120).bfloat16(), (1 + torch.randn(5120) / 10).bfloat16()
        (out, h), warned = with_warnings(lambda: torch.ops.kforge.qwen3_32b_add_rmsnorm(x, r, w))
        self.assertEqual(warned, [])
        h_eager = x + r
        Tolerance(torch.bfloat16).check(self, h, h_eager, x.double() + r.double(), "residual sum")
        Tolerance(torch.bfloat16).check(self, out, F.rms_norm(h_eager, [5120], w, 1e-6),
                                        F.rms_norm(h_eager.double(), [5120], w.double(), 1e-6), "rms_norm")

    def test_a_call_the_kernel_does_not_cover_runs_eager_and_warns_once(self):
        x = torch.randn(3072, 9).half().t()  # not contiguous
        (a, b), warned = with_warnings(lambda: (torch.ops.kforge.gpt2_gelu_tanh(x), torch.ops.kforge.gpt2_gelu_tanh(x)))
        self.assertEqual(len(warned), 1, warned)
        self.assertIn("x is not contiguous", warned[0])
        self.assertTrue(torch.equal(a, F.gelu(x, approximate="tanh")))
        self.assertTrue(torch.equal(a, b))

    def test_a_backward_through_an_operator_fails_saying_so(self):
        x = torch.randn(3, 3584).bfloat16().requires_grad_()
        y = torch.ops.kforge.qwen25_7b_rmsnorm(x, torch.ones(3584).bfloat16())
        with self.assertRaisesRegex(RuntimeError, "derivative for kforge::qwen25_7b_rmsnorm is not implemented"):
            y.float().sum().backward()

    def test_meta_gives_shapes_and_dtypes(self):
        y, h = torch.ops.kforge.qwen3_32b_add_rmsnorm(*(torch.empty(s, dtype=torch.bfloat16, device="meta")
                                                        for s in [(9, 5120), (9, 5120), (5120,)]))
        self.assertEqual((y.shape, y.dtype, y.device.type), (torch.Size([9, 5120]), torch.bfloat16, "meta"))
        self.assertEqual(h.shape, torch.Size([9, 5120]))


class Compiled(unittest.TestCase):
    def setUp(self):
        torch._dynamo.reset()

    def test_an_operator_inside_a_compiled_graph(self):
        def f(x, w):
            return torch.ops.kforge.qwen25_7b_rmsnorm(x * 2, w) + 1

        compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
        x, w = torch.randn(5, 3584).bfloat16(), (1 + torch.randn(3584) / 10).bfloat16()
        (got, calls), warned = with_warnings(lambda: kforge_calls(lambda: compiled(x, w)))
        self.assertEqual(warned, [])
        self.assertIn("kforge::qwen25_7b_rmsnorm", calls)
        self.assertTrue(torch.equal(got, f(x, w)))

    def test_dynamic_shapes_reach_the_meta_kernel_symbolically(self):
        def f(x, w):
            return torch.ops.kforge.qwen25_7b_rmsnorm(x, w).float().sum(dim=-1)

        counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
        compiled = torch.compile(f, backend=counter, dynamic=True, fullgraph=True)
        w = (1 + torch.randn(3584) / 10).bfloat16()
        for t in (3, 11, 17):
            x = torch.randn(t, 3584).bfloat16()
            self.assertTrue(torch.equal(compiled(x, w), f(x, w)), t)
        self.assertEqual(counter.frame_count, 1)  # one graph for every length: the Meta kernel's sizes stayed symbolic


class LayerNormLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(768, eps=1e-12)
        self.proj = nn.Linear(768, 64)

    def forward(self, x):
        return self.proj(self.norm(x))


class RMSNormMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.RMSNorm(3584, eps=1e-6)
        self.proj = nn.Linear(3584, 32)

    def forward(self, x):
        return self.proj(self.norm(x)).float()


class Patch(unittest.TestCase):
    def patched_twin(self, model):
        original = copy.deepcopy(model)
        return kforge.patch(model), original

    def expect_same(self, model, original, x, dtype, workload):
        with torch.no_grad():
            (got, calls), warned = with_warnings(lambda: kforge_calls(lambda: model(x)))
            eager = original(x)
            ref = copy.deepcopy(original).double()(x.double())
        self.assertEqual(warned, [])
        self.assertIn("kforge::" + kforge.op_name(workload), calls)
        Tolerance(dtype).check(self, got, eager, ref, workload)

    def test_layer_norm_then_linear(self):
        torch.manual_seed(0)
        model, original = self.patched_twin(LayerNormLinear().half())
        self.assertEqual(kforge.patched_modules(model), [("norm", ["bert-base-layernorm"])])
        self.assertEqual(list(model.state_dict()), list(original.state_dict()))
        self.expect_same(model, original, torch.randn(2, 512, 768).half(), torch.float16, "bert-base-layernorm")

    def test_rms_norm(self):
        torch.manual_seed(1)
        model, original = self.patched_twin(RMSNormMLP().bfloat16())
        self.assertEqual(kforge.patched_modules(model), [("norm", ["qwen25-7b-rmsnorm"])])
        self.expect_same(model, original, torch.randn(7, 3584).bfloat16(), torch.bfloat16, "qwen25-7b-rmsnorm")

    def test_group_norm_then_silu_in_a_sequential_is_one_operator(self):
        torch.manual_seed(2)
        model, original = self.patched_twin(nn.Sequential(nn.GroupNorm(32, 96, eps=1e-6), nn.SiLU()).bfloat16())
        self.assertEqual(kforge.patched_modules(model), [("0", ["sd35-vae-groupnorm-silu"])])
        self.assertIsInstance(model[1], nn.Identity)
        self.expect_same(model, original, torch.randn(2, 96, 7, 7).bfloat16(), torch.bfloat16,
                         "sd35-vae-groupnorm-silu")
        kforge.unpatch(model)
        self.assertEqual(kforge.patched_modules(model), [])
        self.assertIsInstance(model[1], nn.SiLU)
        x = torch.randn(2, 96, 7, 7).bfloat16()
        (_, calls) = kforge_calls(lambda: model(x))
        self.assertEqual(calls, [])

    def test_pool_then_flatten_in_either_layout(self):
        torch.manual_seed(4)
        model, original = self.patched_twin(nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 10)).half())
        self.assertEqual(kforge.patched_modules(model), [("0", ["resnet50-avgpool", "resnet50-avgpool-cl"])])
        x = torch.randn(3, 2048, 7, 7).half()
        self.expect_same(model, original, x, torch.float16, "resnet50-avgpool")
        self.expect_same(model, original, x.to(memory_format=torch.channels_last), torch.float16,
                         "resnet50-avgpool-cl")

    def test_a_module_unlike_the_spec_is_left_alone(self):
        model = nn.Sequential(nn.LayerNorm(768), nn.GroupNorm(32, 96, eps=1e-6)).half()  # eps 1e-5; no SiLU after
        kforge.patch(model)
        self.assertEqual(kforge.patched_modules(model), [])

    def test_a_call_the_spec_does_not_describe_takes_the_modules_own_forward(self):
        model, original = self.patched_twin(LayerNormLinear().half())
        with torch.no_grad():
            for x in (torch.randn(2, 100, 768).half(), torch.randn(2, 512, 768)):  # another length; float32
                if x.dtype == torch.float32:
                    model.float()
                    original.float()
                (got, calls), warned = with_warnings(lambda: kforge_calls(lambda: model(x)))
                self.assertEqual((calls, warned), ([], []))
                self.assertTrue(torch.equal(got, original(x)))

    def test_with_gradients_the_module_runs_its_own_forward(self):
        model, original = self.patched_twin(LayerNormLinear().half())
        x = torch.randn(1, 512, 768).half()
        got, calls = kforge_calls(lambda: model(x))
        self.assertEqual(calls, [])
        self.assertTrue(torch.equal(got, original(x)))

    def test_a_patched_model_compiles(self):
        torch._dynamo.reset()
        torch.manual_seed(3)
        model, original = self.patched_twin(LayerNormLinear().half())
        compiled = torch.compile(model, backend="aot_eager")
        self.expect_same(compiled, original, torch.randn(2, 512, 768).half(), torch.float16, "bert-base-layernorm")


class ModuleRules(unittest.TestCase):
    def test_activation_rules_compute_the_modules_forward(self):
        """MobileNetV3's modules read by rule: their steps, run as the spec's ops, give the module's own output."""
        from kforge.rewrite import _reference
        x = torch.randn(4, 37) * 4
        for m in (nn.Hardswish(), nn.Hardsigmoid(), nn.ReLU6(), nn.Hardtanh(-2.0, 3.0)):
            y = x
            for step in kforge.MODULE_RULES[type(m)](m):
                y = _reference(step.op, y, step.args, {})
            torch.testing.assert_close(y, m(x), rtol=0, atol=0, msg=type(m).__name__)
        for m in (nn.Hardswish(inplace=True), nn.ReLU6(inplace=True)):  # in place: left to the module
            self.assertIsNone(kforge.MODULE_RULES[type(m)](m))


class LlamaRMSNorm(nn.Module):
    """An RMSNorm written as Hugging Face's Llama writes it: not a module of the rule table."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + torch.randn(dim) / 10)
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(dtype)


class GemmaRMSNorm(LlamaRMSNorm):
    """Gemma's: the same normalization, scaled by 1 + weight."""

    def forward(self, x):
        out = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return (out * (1.0 + self.weight.float())).type_as(x)


class NormDropout(LlamaRMSNorm):
    def __init__(self, dim):
        super().__init__(dim)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(super().forward(x))


class NoisyNorm(LlamaRMSNorm):
    """Random in eval mode too: never patched."""

    def forward(self, x):
        return F.dropout(super().forward(x), 0.1, training=True)


class Wrapper(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


class NormThenLinear(nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.norm = norm
        self.proj = nn.Linear(3584, 32)

    def forward(self, x):
        return self.proj(self.norm(x))


class PoolHead(nn.Module):
    """ResNet's head: the pool a module, the flatten inline in the forward."""

    def __init__(self):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2048, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.avgpool(x), 1))


class PatchByBehaviour(unittest.TestCase):
    """kforge.patch(model, example_inputs=...): modules matched on their recorded calls (kforge/behaviour.py)."""

    expect_same = Patch.expect_same

    def patched_twin(self, model, x):
        model.eval()
        original = copy.deepcopy(model)
        return kforge.patch(model, example_inputs=(x,)), original

    def test_a_models_own_rms_norm_class_is_patched(self):
        torch.manual_seed(5)
        x = torch.randn(7, 3584).bfloat16()
        model, original = self.patched_twin(NormThenLinear(LlamaRMSNorm(3584)).bfloat16(), x)
        self.assertEqual(kforge.patched_modules(model), [("norm", ["qwen25-7b-rmsnorm"])])
        self.assertEqual([p.how for p in kforge.patched_modules(model)], ["behaviour"])
        self.assertIs(type(model.norm), LlamaRMSNorm)
        self.assertEqual(list(model.state_dict()), list(original.state_dict()))
        self.expect_same(model, original, x, torch.bfloat16, "qwen25-7b-rmsnorm")
        self.expect_same(model, original, torch.randn(3, 3584).bfloat16(), torch.bfloat16, "qwen25-7b-rmsnorm")
        kforge.unpatch(model)
        self.assertEqual(kforge.patched_modules(model), [])
        self.assertNotIn("forward", model.norm.__dict__)
        with torch.no_grad():
            got, calls = kforge_calls(lambda: model(x))
            self.assertEqual(calls, [])
            self.assertTrue(torch.equal(got, original(x)))

    def test_without_example_inputs_it_is_left_alone(self):
        model = kforge.patch(NormThenLinear(LlamaRMSNorm(3584)).bfloat16().eval())
        self.assertEqual(kforge.patched_modules(model), [])

    def test_gemmas_rms_norm_is_not_patched(self):
        torch.manual_seed(6)
        model, _ = self.patched_twin(NormThenLinear(GemmaRMSNorm(3584)).bfloat16(), torch.randn(7, 3584).bfloat16())
        self.assertEqual(kforge.patched_modules(model), [])

    def test_pool_then_an_inline_flatten_is_patched_through_a_view(self):
        torch.manual_seed(7)
        x = torch.randn(3, 2048, 7, 7).half()
        model, original = self.patched_twin(PoolHead().half(), x)
        self.assertEqual(kforge.patched_modules(model), [("avgpool", ["resnet50-avgpool"])])
        self.assertEqual(kforge.patched_modules(model)[0].how, "behaviour")
        with torch.no_grad():
            self.assertEqual(model.avgpool(x).shape, torch.Size([3, 2048, 1, 1]))
        self.expect_same(model, original, x, torch.float16, "resnet50-avgpool")
        self.expect_same(model, original, torch.randn(1, 2048, 7, 7).half(), torch.float16, "resnet50-avgpool")
        torch._dynamo.reset()
        self.expect_same(torch.compile(model, backend="aot_eager"), original, x, torch.float16, "resnet50-avgpool")

    def test_training_mode_with_dropout_is_not_patched(self):
        torch.manual_seed(8)
        x = torch.randn(7, 3584).bfloat16()
        model = NormThenLinear(NormDropout(3584)).bfloat16().train()
        kforge.patch(model, example_inputs=x)
        self.assertEqual(kforge.patched_modules(model), [])
        model.eval()  # the dropout is the identity now: the norm's forward is the workload's
        kforge.patch(model, example_inputs=x)
        self.assertEqual(kforge.patched_modules(model), [("norm", ["qwen25-7b-rmsnorm"])])

    def test_a_random_forward_is_not_patched(self):
        torch.manual_seed(9)
        model, _ = self.patched_twin(NormThenLinear(NoisyNorm(3584)).bfloat16(), torch.randn(7, 3584).bfloat16())
        self.assertEqual(kforge.patched_modules(model), [])

    def test_the_outer_module_is_patched_and_never_one_holding_a_patched_module(self):
        torch.manual_seed(10)
        x = torch.randn(7, 3584).bfloat16()
        model, original = self.patched_twin(NormThenLinear(Wrapper(LlamaRMSNorm(3584))).bfloat16(), x)
        self.assertEqual(kforge.patched_modules(model), [("norm", ["qwen25-7b-rmsnorm"])])  # not norm.inner
        self.expect_same(model, original, x, torch.bfloat16, "qwen25-7b-rmsnorm")
        model, _ = self.patched_twin(NormThenLinear(Wrapper(nn.RMSNorm(3584, eps=1e-6))).bfloat16(), x)
        self.assertEqual([(p.name, p.how) for p in kforge.patched_modules(model)], [("norm.inner", "rule")])


class Environment(unittest.TestCase):
    def test_kforge_workloads_is_loaded_at_import(self):
        env = dict(os.environ, KFORGE_WORKLOADS=str(REPO / "tests" / "data" / "ops" / "workloads"), KFORGE_DEVICE="cpu")
        out = subprocess.run([sys.executable, "-c", "import kforge; print(sorted(kforge.loaded()))"], env=env,
                             capture_output=True, text=True, timeout=600)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "['ops_declines', 'ops_no_kernel']")


    def test_processes_loading_into_one_cold_cache_at_once_all_load(self):
        # Both compile the same kernels and race to put them in place; the loser cleans up its copy, which once
        # crashed a process with torch loaded (std::filesystem::remove_all bound to torch's copy).
        script = ("import kforge, sys; r = kforge.load(sys.argv[1], device='cpu', names=['gpt2-gelu-tanh']); "
                  "sys.exit(0 if r['loaded'] and r['loaded'][0]['kernels']['cpu']['kernel'] else 3)")
        for attempt in range(2):
            with tempfile.TemporaryDirectory(prefix="kf-cold-") as cache:
                env = dict(os.environ, KFORGE_CACHE_DIR=cache)
                procs = [subprocess.Popen([sys.executable, "-c", script, str(WORKLOADS)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
                for p in procs:
                    out, err = p.communicate(timeout=600)
                    self.assertEqual(p.returncode, 0, f"attempt {attempt}: {err[-2000:]}")


@unittest.skipUnless(HAVE_GPU, "no GPU (/dev/nvidiactl absent): the CUDA operators run on the GPU machine")
class Cuda(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.report = kforge.load(WORKLOADS, device="cuda", names=CPU_WORKLOADS)

    def test_the_gpu_winners_are_loaded(self):
        for e in self.report["loaded"]:
            if e["workload"] in ("gpt2-gelu-tanh", "llama3-8b-swiglu", "qwen25-7b-rmsnorm"):
                self.assertTrue(e["kernels"]["cuda"]["kernel"], e["kernels"]["cuda"])
                self.assertTrue(e["kernels"]["cpu"]["kernel"])  # kept from the cpu load

    def test_an_operator_on_the_gpu_and_in_a_cuda_graph(self):
        x = torch.randn(8192, 3072, device="cuda").half()
        y, warned = with_warnings(lambda: torch.ops.kforge.gpt2_gelu_tanh(x))
        self.assertEqual(warned, [])
        Tolerance(torch.float16).check(self, y, F.gelu(x, approximate="tanh"),
                                       F.gelu(x.double(), approximate="tanh"), "cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            torch.ops.kforge.gpt2_gelu_tanh(x)  # warm-up
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = torch.ops.kforge.gpt2_gelu_tanh(x)
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        Tolerance(torch.float16).check(self, out, F.gelu(x, approximate="tanh"),
                                       F.gelu(x.double(), approximate="tanh"), "cuda graph")

    def test_a_patched_model_on_the_gpu_compiled_with_cuda_graphs(self):
        torch._dynamo.reset()
        model = RMSNormMLP().bfloat16().cuda()
        original = copy.deepcopy(model)
        kforge.patch(model)
        compiled = torch.compile(model, mode="reduce-overhead")
        x = torch.randn(4096, 3584, device="cuda").bfloat16()
        with torch.no_grad():
            for _ in range(3):
                got = compiled(x)
            eager = original(x)
            ref = copy.deepcopy(original).double()(x.double())
        Tolerance(torch.bfloat16).check(self, got, eager, ref, "compiled, cuda graphs")


if __name__ == "__main__":
    unittest.main()
