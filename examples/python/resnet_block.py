#!/usr/bin/env python3
"""A quantized ResNet bottleneck block in PyTorch, run by convtune.

    python3 resnet_block.py [--db DB] [--trials N] [--batch N] [--size S]

1. Builds a float bottleneck (1x1 reduce + ReLU, 3x3 + ReLU, 1x1 expand,
   shortcut add, ReLU) and calibrates one int8 scale per activation from a
   sample batch (symmetric: max |a| / 127).
2. Quantizes each conv with convtune.torch.QConv2d.from_float (per-channel
   int8 weights, int32 bias, the block's ReLUs and shortcut in the epilogue).
3. Tunes its three workloads with `convtune tune` (convtune.tune) into DB.
4. Runs the block through the custom op convtune::qconv2d on channels-last
   int8 tensors, and compares it
   - exactly with the library's integer CPU reference (convtune.reference_qconv),
     conv by conv: every element must be equal;
   - with PyTorch's float block: the error in output quantization steps
     (int8 activations between the convs make it a few steps at most).
Exit status 0 when the integer result is exact, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
from torch import nn

import convtune
import convtune.torch as ctt


class Bottleneck(nn.Module):
    def __init__(self, c: int, mid: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, mid, 1)
        self.conv2 = nn.Conv2d(mid, mid, 3, padding=1)
        self.conv3 = nn.Conv2d(mid, c, 1)

    def forward(self, x: torch.Tensor, keep: list | None = None) -> torch.Tensor:
        a1 = torch.relu(self.conv1(x))
        a2 = torch.relu(self.conv2(a1))
        y = torch.relu(self.conv3(a2) + x)
        if keep is not None:
            keep += [a1, a2, y]
        return y


class QBottleneck(nn.Module):
    """The block on int8 tensors: (N, C, H, W) in channels-last memory."""

    def __init__(self, f: Bottleneck, s_x: float, s1: float, s2: float, s_y: float, db: str) -> None:
        super().__init__()
        self.q1 = ctt.QConv2d.from_float(f.conv1, s_x, s1, relu=True, db=db)
        self.q2 = ctt.QConv2d.from_float(f.conv2, s1, s2, relu=True, db=db)
        # the shortcut's add and the ReLU after it, in conv3's epilogue
        self.q3 = ctt.QConv2d.from_float(f.conv3, s2, s_y, relu=True, residual_scale=s_x / s_y, db=db)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.q3(self.q2(self.q1(x)), residual=x)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--db", default="convtune-example.db", help="the tuning database")
    ap.add_argument("--trials", type=int, default=64, help="tuning trials per conv (0: no tuning)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=28, help="the input's height and width")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("resnet_block: no CUDA device", file=sys.stderr)
        return 77

    torch.manual_seed(0)
    f = Bottleneck(512, 128).eval()
    # a ReLU network's activations: non-negative inputs, here uniform
    x = torch.rand(args.batch, 512, args.size, args.size) * 4
    with torch.no_grad():
        acts: list = []
        yf = f(x, acts)
    s_x = float(x.abs().max()) / 127
    s1, s2, s_y = (float(a.abs().max()) / 127 for a in acts)
    q = QBottleneck(f, s_x, s1, s2, s_y, args.db).cuda()

    xq = ctt.quantize(x, s_x).cuda().contiguous(memory_format=torch.channels_last)
    convs = [q.q1, q.q2, q.q3]
    shapes = [xq.shape, (args.batch, 128, args.size, args.size), (args.batch, 128, args.size, args.size)]
    works = [m.workload(torch.empty(s, device="meta")) for m, s in zip(convs, shapes)]
    if args.trials:
        print(f"tuning {len(works)} workloads, {args.trials} trials each, into {args.db} ...")
        res = convtune.tune(works, db=args.db, trials=args.trials)
        for r in res:
            print(f"  {r['key']}: {r['template']} {r['best_us']:.2f} us after {r['trials']} trials")

    with torch.no_grad():
        yq = q(xq)
    torch.cuda.synchronize()
    ctx = ctt.context(args.db)
    for w in works:
        ex = ctx.explain(w)
        print(f"{w.key}: {ex.source}, {ex.template} ({ex.measured_us:.2f} us tuned)")

    # exact: the library's CPU reference, conv by conv, on the same integers
    h = xq.permute(0, 2, 3, 1).cpu().numpy()
    x0 = h
    for m, w, r in zip(convs, works, (None, None, x0)):
        h = convtune.reference_qconv(w, h, m.weight_plain, m.quant, r)
    got = yq.permute(0, 2, 3, 1).cpu().numpy()
    mismatches = int(np.count_nonzero(got != h))
    print(f"integer reference: {'exact' if mismatches == 0 else f'{mismatches} mismatches'} "
          f"({got.size} elements)")

    # against PyTorch's float block, in output steps
    steps = (ctt.dequantize(yq.cpu(), s_y) - yf).abs() / s_y
    print(f"float block: max error {float(steps.max()):.2f} output steps, mean {float(steps.mean()):.3f}; "
          f"{float((steps <= 1).float().mean()):.1%} of elements within one step")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
