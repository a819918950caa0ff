"""kforge e2e's output check (lib/e2e/output_check.py), run by ctest as e2e_output_check_python (PYTHONPATH has
lib/e2e), or alone: `python3 -m unittest -v output_check_python_test` in tests/e2e with PYTHONPATH=lib/e2e.

A small bfloat16 model (convolutions, group norms, SiLU: an SD3.5 VAE decoder's blocks, and a float32 log-softmax
head, as the Llama example's) on the cpu: its outputs recomputed in float32, or by torch.compile, pass the default
rule (the norms, with bfloat16's limits), where the old elementwise rule at the output's dtype (float32's) failed
them; outputs with a wrong scale, zeros or one corrupted row fail, saying which statistic and limit. The explicit
--rtol/--atol path checks every value, and `kforge e2e --help` states the limits (KFORGE_BINARY, default
build/kforge). Skips without torch."""
import os
import pathlib
import re
import subprocess
import unittest

try:
    import torch
    from torch import nn
    import torch.nn.functional as F

    import output_check
    MISSING = ""
except ImportError as e:
    torch = nn = None
    MISSING = f"cannot import torch or output_check ({e})"

REPO = pathlib.Path(__file__).resolve().parents[2]


class Decoder(nn.Module if nn else object):
    """Convolutions, group norms and SiLU, six blocks deep, then a float32 log-softmax over the channels of each
    pixel row and the image itself: two outputs."""

    def __init__(self, width=32, depth=6, out=64):
        super().__init__()
        self.inp = nn.Conv2d(4, width, 3, padding=1)
        self.blocks = nn.ModuleList(nn.Sequential(nn.GroupNorm(8, width), nn.SiLU(), nn.Conv2d(width, width, 3, padding=1))
                                    for _ in range(depth))
        self.head = nn.Linear(width, out)

    def forward(self, z):
        h = self.inp(z)
        for b in self.blocks:
            h = h + b(h)
        logits = self.head(h.mean(dim=(2, 3)))
        return torch.log_softmax(logits, dim=-1, dtype=torch.float32), h


def make(dtype=None):
    torch.manual_seed(0)
    model = Decoder().eval()
    z = torch.randn(2, 4, 32, 32)
    if dtype is not None:
        model, z = model.to(dtype), z.to(dtype)
    return model, (z,)


def setUpModule():
    if MISSING:
        raise unittest.SkipTest(MISSING)


class ComputeDtype(unittest.TestCase):
    def test_the_lowest_precision_floating_dtype_of_weights_inputs_and_outputs(self):
        model, inputs = make(torch.bfloat16)
        with torch.no_grad():
            out = list(model(*inputs))
        self.assertEqual(out[0].dtype, torch.float32)  # the head's log-softmax
        self.assertEqual(output_check.compute_dtype(model, inputs, out), "bfloat16")
        f32, f32_inputs = make()
        self.assertEqual(output_check.compute_dtype(f32, f32_inputs, []), "float32")
        self.assertEqual(output_check.compute_dtype(f32, [torch.ones(2, dtype=torch.float16)], []), "float16")
        self.assertEqual(output_check.compute_dtype(None, [torch.ones(2, dtype=torch.int64)], []), None)


class NormRule(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model, cls.inputs = make(torch.bfloat16)
        with torch.no_grad():
            cls.eager = list(cls.model(*cls.inputs))
            f32, f32_inputs = make()
            cls.f32 = [t.to(e.dtype) for t, e in zip(f32(*f32_inputs), cls.eager)]
        cls.compute = output_check.compute_dtype(cls.model, cls.inputs, cls.eager)

    def check(self, got, **kw):
        return output_check.compare(got, self.eager, self.compute, **kw)

    def test_a_float32_recomputation_passes_where_the_elementwise_rule_at_the_outputs_dtype_failed(self):
        why, ratio = self.check(self.f32)
        self.assertIsNone(why)
        self.assertLess(ratio, 1)
        # The elementwise rule at float32's old default tolerance (rtol 1e-4, atol 1e-5) fails the same outputs.
        why, _ = self.check(self.f32, rtol=1e-4, atol=1e-5)
        self.assertIn("elementwise tolerance", why)

    def test_torch_compile_passes(self):
        torch._dynamo.reset()
        with torch.no_grad():
            compiled = torch.compile(self.model)
            got = list(compiled(*self.inputs))
        why, ratio = self.check(got)
        self.assertIsNone(why)
        self.assertLess(ratio, 1)

    def test_a_wrong_scale_fails_on_the_whole_outputs_relative_error(self):
        for factor in (2.0, 1.1, 0.5):
            with self.subTest(factor=factor):
                got = [self.f32[0], self.f32[1] * factor]
                why, ratio = self.check(got)
                self.assertIsNotNone(why)
                self.assertGreater(ratio, 1)
                self.assertIn("output 1 (bfloat16 [2, 32, 32, 32], the model computes in bfloat16): relative error "
                              "||got - eager|| / ||eager||", why)
                self.assertIn("over bfloat16's limit 0.08", why)

    def test_zeros_fail(self):
        why, ratio = self.check([torch.zeros_like(self.eager[0]), self.eager[1]])
        self.assertIn("output 0 (float32 [2, 64], the model computes in bfloat16): relative error", why)
        self.assertGreater(ratio, 10)

    def test_one_corrupted_row_fails_on_the_worst_row(self):
        for how in ("zeros", "noise", "another row"):
            with self.subTest(how=how):
                bad = self.f32[1].clone()
                row = bad[1, 7, 13]  # one row of the last dim (32 values) among 2048
                if how == "zeros":
                    row.zero_()
                elif how == "noise":
                    row.copy_(torch.randn_like(row) * row.float().std())
                else:
                    row.copy_(bad[0, 3, 5])
                why, ratio = self.check([self.f32[0], bad])
                self.assertIsNotNone(why)
                self.assertIn("worst row", why)
                self.assertIn(f"worst row {(1 * 32 + 7) * 32 + 13} of 2048 (rows of 32)", why)
                self.assertIn("over bfloat16's limit 0.2", why)

    def test_non_finite_values_and_integer_outputs(self):
        bad = self.eager[0].clone()
        bad[0, 0] = float("nan")
        why, _ = self.check([bad, self.eager[1]])
        self.assertIn("non-finite", why)
        ints = [torch.arange(6)]
        self.assertIsNone(output_check.compare(ints, [torch.arange(6)], None)[0])
        self.assertIn("1 of 6 values differ", output_check.compare([torch.tensor([0, 1, 2, 3, 4, 9])], ints, None)[0])


class ExplicitTolerance(unittest.TestCase):
    def test_rtol_and_atol_check_every_value(self):
        ref = [torch.linspace(-1, 1, 1000)]
        close = [ref[0] + 1e-3]
        self.assertIsNone(output_check.compare(close, ref, "bfloat16", rtol=0.0, atol=2e-3)[0])
        why, ratio = output_check.compare(close, ref, "bfloat16", rtol=0.0, atol=5e-4)
        self.assertIn("max |diff| 0.001, 2x the elementwise tolerance |got - eager| <= atol + rtol |eager| (rtol 0, "
                      "atol 0.0005)", why)
        self.assertAlmostEqual(ratio, 2.0, places=3)
        # One value off by 1e-2 fails elementwise while the norms (bfloat16's limits) let it pass.
        spike = ref[0].clone()
        spike[500] += 1e-2
        self.assertIsNone(output_check.compare([spike], ref, "bfloat16")[0])
        self.assertIn("elementwise", output_check.compare([spike], ref, "bfloat16", rtol=1e-3, atol=1e-3)[0])


class HelpText(unittest.TestCase):
    def test_kforge_e2e_help_states_the_limits(self):
        kforge = pathlib.Path(os.environ.get("KFORGE_BINARY") or REPO / "build" / "kforge")
        if not kforge.exists():
            self.skipTest(f"no {kforge}")
        text = subprocess.run([str(kforge), "e2e", "--help"], capture_output=True, text=True, timeout=60).stdout
        text = " ".join(text.split())
        for dtype in ("bfloat16", "float16", "float32", "float64"):
            found = re.search(rf"\b{dtype} ([0-9.e-]+) and ([0-9.e-]+)", text)
            self.assertIsNotNone(found, f"{dtype}'s limits in: {text}")
            self.assertEqual((float(found[1]), float(found[2])), output_check.LIMITS[dtype])


if __name__ == "__main__":
    unittest.main()
