#!/usr/bin/env python3
"""Writes kforge capture's test traces (tests/data/capture/*.json): tiny models below, traced on the cpu by
lib/capture/trace.py, with each operator's time replaced by a rule (1 us plus 1 us per 1000 elements of its first
output) so that the tests' shares and rankings do not depend on the machine that generated them.

    python3 tests/data/capture/generate.py      (from the repository root; needs torch)

Edit the models here and re-run; never edit the JSON by hand.
"""
import json
import math
import os
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.relpath(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.join(HERE, "..", "..", "..")


# ---- norm_two_sizes: LayerNorm + GELU at two sequence lengths, a Linear (a matmul: no spec) between ----

class NormTwoSizes(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(64)
        self.fc = nn.Linear(64, 64)

    def forward(self, a, b):
        a = self.fc(F.gelu(self.norm(a)))
        a = self.fc(F.gelu(self.norm(a)))
        return a, F.gelu(self.norm(b))


def norm_two_sizes():
    torch.manual_seed(0)
    return NormTwoSizes(), (torch.randn(2, 8, 64), torch.randn(2, 32, 64))


# ---- llama_block: two bfloat16 decoder layers, RMSNorm by hand and through F.rms_norm ----

class HandRMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
        return self.weight * x.to(dtype)


class TorchRMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.rms_norm(x, [x.shape[-1]], self.weight, 1e-5)


class Layer(nn.Module):
    def __init__(self, hidden=16, heads=2):
        super().__init__()
        self.heads = heads
        self.input_layernorm = HandRMSNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)
        self.post_attention_layernorm = TorchRMSNorm(hidden)
        self.gate = nn.Linear(hidden, 32, bias=False)
        self.up = nn.Linear(hidden, 32, bias=False)
        self.down = nn.Linear(32, hidden, bias=False)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.input_layernorm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        s = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(d // self.heads)) + mask
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        h = x + self.o_proj(torch.matmul(p, v).transpose(1, 2).reshape(b, t, d))
        y = self.post_attention_layernorm(h)
        return h + self.down(F.silu(self.gate(y)) * self.up(y))


class LlamaBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])
        self.norm = HandRMSNorm(16)
        self.lm_head = nn.Linear(16, 40, bias=False)

    def forward(self, x):
        t = x.shape[1]
        mask = torch.full((t, t), float("-inf"), dtype=x.dtype).triu(1)[None, None]
        for layer in self.layers:
            x = layer(x, mask)
        return torch.log_softmax(self.lm_head(self.norm(x)), dim=-1, dtype=torch.float32)


def llama_block():
    torch.manual_seed(0)
    return LlamaBlock().to(torch.bfloat16), (torch.randn(1, 6, 16, dtype=torch.bfloat16),)


# ---- resnet_tail: channels_last convolutions, in-place ReLU, identity adds, the pooling head ----

class Bottleneck(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


class ResNetTail(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(Bottleneck(8), Bottleneck(8))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.layer1(self.relu(self.stem(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet_tail():
    torch.manual_seed(0)
    model = ResNetTail().eval().to(memory_format=torch.channels_last)
    return model, (torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last),)


# ---- router_softcap: a MoE router's softmax and top-k; a softcapped softmax ----

class RouterSoftcap(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(16, 8, bias=False)

    def forward(self, x, scores):
        probs = F.softmax(self.router(x), dim=-1, dtype=torch.float32)
        values, indices = torch.topk(probs, 2, dim=-1)
        capped = torch.softmax(torch.tanh(scores / 30.0) * 30.0, dim=-1)
        return values, indices, capped


def router_softcap():
    torch.manual_seed(0)
    return RouterSoftcap(), (torch.randn(5, 16), torch.randn(2, 3, 7, 7))


# ---- pool_branches: a DenseNet transition (AvgPool2d(2) after a 1x1 conv), an Inception pool branch (after a
# subtraction of a number), ResNet's stem MaxPool2d(3, 2, 1) ----

class PoolBranches(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 4, 1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)
        self.stem_pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        t = self.pool(self.conv(F.relu(x)))
        b = F.avg_pool2d(x - 0.5, kernel_size=3, stride=1, padding=1, count_include_pad=False)
        m = self.stem_pool(x)
        return t, b, m


def pool_branches():
    torch.manual_seed(0)
    return PoolBranches(), (torch.randn(2, 8, 10, 10),)


# ---- mobilenet_se: MobileNetV3's activations: Hardswish after a conv, a squeeze-excite gate (Hardsigmoid), ReLU6 and a
# one-sided clamp ----

class MobileNetSE(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 1, bias=False)
        self.act = nn.Hardswish()
        self.fc1 = nn.Conv2d(8, 4, 1)
        self.fc2 = nn.Conv2d(4, 8, 1)
        self.gate = nn.Hardsigmoid()
        self.relu6 = nn.ReLU6()

    def forward(self, x):
        h = self.act(self.conv(x))
        s = self.gate(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(h, 1)))))
        return self.relu6(h * s), torch.clamp(x, max=0.5)


def mobilenet_se():
    torch.manual_seed(0)
    return MobileNetSE().eval(), (torch.randn(2, 8, 6, 6),)


MODELS = ["norm_two_sizes", "llama_block", "resnet_tail", "router_softcap", "pool_branches", "mobilenet_se"]


def main():
    for name in MODELS:
        out = os.path.join(HERE, name + ".json")
        subprocess.run([sys.executable, os.path.join(ROOT, "lib/capture/trace.py"), "--model",
                        os.path.join(HERE, "generate.py") + ":" + name, "--out", out, "--iters", "1"], check=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
        with open(out) as f:
            trace = json.load(f)
        for op in trace["ops"]:
            first = next((o for o in op["outputs"] if isinstance(o, dict)), None)
            numel = math.prod(first["shape"]) if first else 0
            op["time_us"] = round(1.0 + numel / 1000.0, 3)
        trace["forward_us"] = 0.0
        trace["torch"] = "2.11.0"
        with open(out, "w") as f:
            json.dump(trace, f, indent=None, separators=(",", ":"))
            f.write("\n")
        print(f"wrote {out}: {len(trace['ops'])} operators")


if __name__ == "__main__":
    main()
