"""The Stable Diffusion 3.5 VAE decoder for `kforge capture` (issue #23): the real decoder's layout and channel
counts (diffusers' AutoencoderKL for SD3.5: 16 latent channels, block_out_channels 128, 256, 512, 512, three
resnet blocks per up block, GroupNorm(32, eps 1e-6) + SiLU before every 3x3 convolution, one attention block in
the middle), with random weights; nothing is downloaded.

    kforge capture --model examples/models/sd35_vae_decoder.py:make
    kforge capture --model examples/models/sd35_vae_decoder.py:make --device cpu --model-args scale=0.05

make(device, scale=1.0, image=1024, batch=1) decodes a 1024x1024 image's latents (128x128). scale < 1 shrinks
the channels (to multiples of the 32 groups) and the latent (KFORGE_SMALL=1 makes 0.05 the default), so tests
build it in a moment. bfloat16 on cuda, float32 on cpu.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

GROUPS = 32
EPS = 1e-6


class ResnetBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1 = nn.GroupNorm(GROUPS, cin, eps=EPS)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2 = nn.GroupNorm(GROUPS, cout, eps=EPS)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.conv_shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        if self.conv_shortcut is not None:
            x = self.conv_shortcut(x)
        return x + h


class AttentionBlock(nn.Module):
    """One head over every pixel, as diffusers' VAE mid-block attention (SDPA, as diffusers calls it)."""

    def __init__(self, channels):
        super().__init__()
        self.group_norm = nn.GroupNorm(GROUPS, channels, eps=EPS)
        self.to_q = nn.Linear(channels, channels)
        self.to_k = nn.Linear(channels, channels)
        self.to_v = nn.Linear(channels, channels)
        self.to_out = nn.Linear(channels, channels)

    def forward(self, x):
        n, c, h, w = x.shape
        t = self.group_norm(x).view(n, c, h * w).transpose(1, 2)
        q, k, v = (p(t).unsqueeze(1) for p in (self.to_q, self.to_k, self.to_v))
        a = F.scaled_dot_product_attention(q, k, v).squeeze(1)
        a = self.to_out(a).transpose(1, 2).reshape(n, c, h, w)
        return x + a


class Upsample(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class UpBlock(nn.Module):
    def __init__(self, cin, cout, upsample):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock(cin, cout), ResnetBlock(cout, cout), ResnetBlock(cout, cout)])
        self.upsamplers = nn.ModuleList([Upsample(cout)]) if upsample else nn.ModuleList()

    def forward(self, x):
        for r in self.resnets:
            x = r(x)
        for u in self.upsamplers:
            x = u(x)
        return x


class MidBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock(channels, channels), ResnetBlock(channels, channels)])
        self.attentions = nn.ModuleList([AttentionBlock(channels)])

    def forward(self, x):
        x = self.resnets[0](x)
        x = self.attentions[0](x)
        return self.resnets[1](x)


class Decoder(nn.Module):
    def __init__(self, latent_channels, block_out_channels):
        super().__init__()
        rev = list(reversed(block_out_channels))
        self.conv_in = nn.Conv2d(latent_channels, rev[0], 3, padding=1)
        self.mid_block = MidBlock(rev[0])
        blocks, cin = [], rev[0]
        for i, cout in enumerate(rev):
            blocks.append(UpBlock(cin, cout, upsample=i < len(rev) - 1))
            cin = cout
        self.up_blocks = nn.ModuleList(blocks)
        self.conv_norm_out = nn.GroupNorm(GROUPS, rev[-1], eps=EPS)
        self.conv_out = nn.Conv2d(rev[-1], 3, 3, padding=1)

    def forward(self, z):
        x = self.mid_block(self.conv_in(z))
        for b in self.up_blocks:
            x = b(x)
        return self.conv_out(F.silu(self.conv_norm_out(x)))


def make(device="cpu", scale=None, image=1024, batch=1):
    if scale is None:
        scale = 0.05 if os.environ.get("KFORGE_SMALL") == "1" else 1.0
    channels = [max(GROUPS, round(c * scale / GROUPS) * GROUPS) for c in (128, 256, 512, 512)]
    latent = max(4, round(image // 8 * scale))
    dtype = torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    torch.manual_seed(0)
    model = Decoder(16, channels).to(device=device, dtype=dtype)
    z = torch.randn(batch, 16, latent, latent, device=device, dtype=dtype)
    return model, (z,)
