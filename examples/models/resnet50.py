"""A ResNet-50 for `kforge capture` (issue #23), written with torch.nn alone (torchvision may not be installed):
the real network's layout and widths (bottleneck blocks 3, 4, 6, 3 of widths 64 to 512, expansion 4, BatchNorm
and in-place ReLU, the head's adaptive average pooling and flatten before the 1000-way classifier), random weights,
nothing downloaded.

    kforge capture --model examples/models/resnet50.py:make
    kforge capture --model examples/models/resnet50.py:make --device cpu --model-args scale=0.125

make(device, scale=1.0, batch=32, image=224): scale < 1 shrinks the widths, the image and the batch
(KFORGE_SMALL=1 makes 0.125 the default), so tests build it in a moment. float16 on cuda, float32 on cpu.
"""
import os

import torch
import torch.nn as nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride=1):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += identity
        return self.relu(out)


class ResNet50(nn.Module):
    def __init__(self, base=64, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, base, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        cin, layers = base, []
        for i, (blocks, width) in enumerate(zip((3, 4, 6, 3), (base, base * 2, base * 4, base * 8))):
            stage = []
            for j in range(blocks):
                stage.append(Bottleneck(cin, width, stride=2 if j == 0 and i > 0 else 1))
                cin = width * Bottleneck.expansion
            layers.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def make(device="cpu", scale=None, batch=32, image=224):
    if scale is None:
        scale = 0.125 if os.environ.get("KFORGE_SMALL") == "1" else 1.0
    base = max(4, round(64 * scale))
    image = max(32, round(image * scale))
    batch = max(1, round(batch * scale))
    dtype = torch.float16 if str(device).startswith("cuda") else torch.float32
    torch.manual_seed(0)
    model = ResNet50(base).to(device=device, dtype=dtype).eval()
    x = torch.randn(batch, 3, image, image, device=device, dtype=dtype)
    return model, (x,)
