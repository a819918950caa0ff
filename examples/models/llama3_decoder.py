"""A Llama-3-8B-shaped decoder for `kforge capture` (issue #23): the real model's dimensions, random weights,
nothing downloaded.

Two decoder layers at full width (hidden 4096, MLP 14336, 32 query heads and 8 key/value heads of 128, RMSNorm
eps 1e-5, rotary embeddings with theta 500000), written as Hugging Face's eager Llama is: RMSNorm by hand (upcast,
pow, mean, rsqrt, the weight after the cast back), a SwiGLU MLP, attention with the scaled, masked softmax written
out (matmul, scale, causal mask add, softmax in float32, cast back) rather than SDPA, and the vocabulary head's
log_softmax over 128256 tokens in float32.

    kforge capture --model examples/models/llama3_decoder.py:make
    kforge capture --model examples/models/llama3_decoder.py:make --device cpu --model-args scale=0.05

make(device, scale=1.0, seq_len=2048, layers=2): scale < 1 shrinks the widths, the vocabulary and the sequence
(KFORGE_SMALL=1 makes 0.05 the default) so tests build it in a moment. bfloat16 on cuda, float32 on cpu.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_dim):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        groups = self.heads // self.kv_heads
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(self.head_dim))
        scores = scores + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, hidden, intermediate, heads, kv_heads, head_dim, eps):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden, eps)
        self.self_attn = Attention(hidden, heads, kv_heads, head_dim)
        self.post_attention_layernorm = RMSNorm(hidden, eps)
        self.mlp = MLP(hidden, intermediate)

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class Decoder(nn.Module):
    def __init__(self, vocab, hidden, intermediate, heads, kv_heads, head_dim, layers, eps=1e-5, theta=500000.0):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(DecoderLayer(hidden, intermediate, heads, kv_heads, head_dim, eps) for _ in range(layers))
        self.norm = RMSNorm(hidden, eps)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.register_buffer("inv_freq", 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim),
                             persistent=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embed_tokens(tokens)
        freqs = torch.outer(torch.arange(t, device=tokens.device, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        mask = torch.full((t, t), float("-inf"), device=tokens.device, dtype=x.dtype).triu(1)[None, None]
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        logits = self.lm_head(self.norm(x))
        return torch.log_softmax(logits, dim=-1, dtype=torch.float32)


def make(device="cpu", scale=None, seq_len=2048, layers=2, batch=1):
    if scale is None:
        scale = 0.05 if os.environ.get("KFORGE_SMALL") == "1" else 1.0
    heads, kv_heads = 32, 8
    head_dim = max(2, round(128 * scale / 2) * 2)
    hidden = heads * head_dim
    intermediate = max(8, round(14336 * scale))
    vocab = max(16, round(128256 * scale))
    t = max(4, round(seq_len * scale))
    dtype = torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    torch.manual_seed(0)
    model = Decoder(vocab, hidden, intermediate, heads, kv_heads, head_dim, layers)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.02)
    model = model.to(device=device, dtype=dtype)
    tokens = torch.randint(0, vocab, (batch, t), device=device)
    return model, (tokens,)
