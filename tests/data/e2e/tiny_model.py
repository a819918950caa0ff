"""A tiny model for kforge e2e's tests (tests/e2e/): a GELU (tanh) on a float16 [128, 3072] input, which the
stored gpt2-gelu-tanh workload's cpu kernel covers (kforge.patch swaps it), then a scale kforge does not patch.

make(device, width=3072); make_mismatch's patched copy computes something else; not_a_pair returns something that is not (model, inputs), for the bad-input tests; make_inline is an inline SwiGLU (no module to patch) for
the kforge variant's graph rewrite."""
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.act = nn.GELU(approximate="tanh")
        self.scale = nn.Parameter(torch.ones(width, dtype=torch.float16))

    def forward(self, x):
        return self.act(x) * self.scale


def make(device="cpu", width=3072):
    torch.manual_seed(0)
    model = Tiny(width).to(device)
    x = torch.randn(128, width, dtype=torch.float16, device=device)
    return model, (x,)


def make_mismatch(device="cpu"):
    """The tiny model whose GELU module computes a ReLU (its forward replaced on the instance): kforge.patch goes by
    the module's class and swaps in the GELU operator, so the patched model's outputs differ from eager's."""
    model, inputs = make(device)
    model.act.forward = torch.relu
    return model, inputs


def not_a_pair(device="cpu"):
    return 42


class InlineSwiGLU(nn.Module):
    """silu(x) * (x * scale) written inline in the forward: the stored llama3-8b-swiglu's graph (bfloat16 [T, 14336]),
    which no module computes, so only the graph rewrite replaces it."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.full((14336,), 0.5, dtype=torch.bfloat16))

    def forward(self, x):
        return torch.nn.functional.silu(x) * (x * self.scale)


def make_inline(device="cpu", tokens=4):
    torch.manual_seed(0)
    return InlineSwiGLU().to(device), (torch.randn(tokens, 14336, dtype=torch.bfloat16, device=device),)
