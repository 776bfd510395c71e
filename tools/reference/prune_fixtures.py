#!/usr/bin/env python3
"""Reference fixtures for `gpt2c prune` (tests/test_prune.c), from PyTorch's own pruning.

  global unstructured  torch.nn.utils.prune.global_unstructured(..., pruning_method=L1Unstructured)
                       over the linear weights of every block (attn.c_attn, attn.c_proj,
                       mlp.c_fc, mlp.c_proj), then prune.remove;
  layer unstructured   torch.nn.utils.prune.l1_unstructured on each of those weights alone;
  2:4                  (PyTorch has no N:M pruner) a numpy transcription of the rule: in every
                       group of 4 consecutive weights along the input dimension, zero the 2
                       smallest |w| (np.argsort kind='stable': on a tie the lower index goes).

The base model is a tiny gpt2c checkpoint (HF names, Conv1D (in, out) layout):
  gpt2c convert / train ... --layers 2 --heads 2 --embd 16 --ctx 16 --vocab 64 -> base.safetensors
Each pruned model is the base file with the pruned weights' bytes replaced (same header), so
gpt2c loads it as it loads the base.  Pruned weights are written as +0.0.

Usage: pip install torch numpy
  python3 tools/reference/prune_fixtures.py tests/fixtures/prune/base.safetensors tests/fixtures/prune
"""
import json
import os
import re
import struct
import sys

import numpy as np
import torch
from torch.nn.utils import prune

TARGET = re.compile(r"^(transformer\.)?h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$")
CASES = [("global", 0.6), ("layer", 0.7), ("2:4", 0.5)]


def read_st(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    return raw, 8 + n, header


def main():
    base, outdir = sys.argv[1], sys.argv[2]
    raw, data0, header = read_st(base)
    names = [k for k in header if k != "__metadata__" and TARGET.match(k)]
    names.sort(key=lambda k: header[k]["data_offsets"][0])
    tensors = {}
    for k in names:
        h = header[k]
        assert h["dtype"] == "F32" and len(h["shape"]) == 2, k
        b, e = h["data_offsets"]
        tensors[k] = np.frombuffer(raw[data0 + b:data0 + e], dtype="<f4").reshape(h["shape"]).copy()
    for scope, amount in CASES:
        out = {}
        if scope == "2:4":
            for k, w in tensors.items():
                wt = w.T.copy()  # Conv1D (in, out) -> (out, in): groups run along the input dim
                g = wt.reshape(-1, 4)
                idx = np.argsort(np.abs(g), axis=1, kind="stable")[:, :2]
                np.put_along_axis(g, idx, 0.0, axis=1)
                out[k] = g.reshape(wt.shape).T
        else:
            mods = {}
            for k, w in tensors.items():
                mod = torch.nn.Module()
                mod.weight = torch.nn.Parameter(torch.from_numpy(w.copy()))
                mods[k] = mod
            if scope == "global":
                prune.global_unstructured([(m, "weight") for m in mods.values()],
                                          pruning_method=prune.L1Unstructured, amount=amount)
            else:
                for m in mods.values():
                    prune.l1_unstructured(m, "weight", amount=amount)
            for k, m in mods.items():
                prune.remove(m, "weight")
                w = m.weight.detach().numpy().copy()
                w[w == 0] = 0.0  # weight_orig * mask leaves -0.0 where w < 0
                out[k] = w
        buf = bytearray(raw)
        zeros = total = 0
        for k, w in out.items():
            b, e = header[k]["data_offsets"]
            buf[data0 + b:data0 + e] = np.ascontiguousarray(w, dtype="<f4").tobytes()
            zeros += int((w == 0).sum())
            total += w.size
        name = {"global": "global_0.6", "layer": "layer_0.7", "2:4": "2of4"}[scope]
        path = os.path.join(outdir, f"pruned_{name}.safetensors")
        open(path, "wb").write(bytes(buf))
        print(f"{path}: {zeros} of {total} linear weights zero (torch {torch.__version__})")


if __name__ == "__main__":
    main()
