#!/usr/bin/env python3
"""Reference fixtures for gpt2c's q8 / q4 / nf4 formats (tests/test_quant_ref.c).

Written from implementations nobody on gpt2c wrote:
  q8, q4  llama.cpp's own Python quantizers (gguf-py: gguf.quants.Q8_0 / Q4_0,
          "bit-exact with ggml-quants.c"): the codes come from them.  gguf
          stores the scale as fp16; gpt2c keeps it fp32, so the fixture's scale
          is gguf's d before that rounding (same formula, fp32).
  nf4     bitsandbytes (pip wheel, no torch needed: its libbitsandbytes_cpu.so
          is called through ctypes):
            - codes and absmax: a transcription of bitsandbytes'
              default-backend quantize_4bit (bucketize against fp32 midpoints of
              the NF4 code), cross-checked by dequantizing them with
              bitsandbytes' own C cdequantize_blockwise_cpu_nf4_fp32;
            - double quantization of the absmax values: bitsandbytes' own C
              cquantize_blockwise_cpu_fp32 (blocks of 256, dynamic map) and
              cdequantize_blockwise_cpu_fp32.  The dynamic map is transcribed
              from create_dynamic_map (torch.linspace's scalar formula, fp32).

Usage: pip install numpy gguf; pip download bitsandbytes --no-deps; unzip it;
  python3 tools/reference/quant_fixtures.py --bnb DIR/bitsandbytes/libbitsandbytes_cpu.so \
      --out tests/fixtures/quant/quant_ref.bin

File layout (little-endian), read by tests/test_quant_ref.c:
  "GQF1", u32 rows, u32 cols, f32 W[rows*cols]
  q8:  i8 codes[rows*cols], f32 scales[rows*cols/32]
  q4:  u8 codes[rows*cols/2], f32 scales[rows*cols/32]
  nf4: u8 codes[rows*cols/2], f32 absmax[rows*cols/64], f32 dequant[rows*cols] (bitsandbytes C)
  dq:  u32 n, f32 absmax_in[n], f32 offset, u8 codes8[n], f32 absmax2[ceil(n/256)],
       f32 scales_out[n] (bitsandbytes C dequant + offset), f32 dynamic_map[256]
"""
import argparse
import ctypes as ct
import os
import struct

import numpy as np
from gguf import quants, GGMLQuantizationType

NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0], dtype=np.float32)


def linspace_f32(start, end, steps):
    start, end = np.float32(start), np.float32(end)
    step = np.float32((end - start) / np.float32(steps - 1))
    out = np.empty(steps, np.float32)
    for i in range(steps):
        out[i] = start + step * np.float32(i) if i < steps // 2 else end - step * np.float32(steps - i - 1)
    return out


def dynamic_map():
    data = []
    for i in range(7):
        b = linspace_f32(0.1, 1.0, 2 ** i + 1)
        means = (b[:-1] + b[1:]) / np.float32(2.0)
        scale = np.float32(10.0 ** (-6 + i))
        data += list(scale * means)
        data += list(np.float32(-scale) * means)
    data += [np.float32(0.0), np.float32(1.0)]
    assert len(data) == 256
    return np.array(sorted(data), dtype=np.float32)


def nf4_quantize(W, block=64):
    flat = W.reshape(-1).astype(np.float32)
    blocks = flat.reshape(-1, block)
    absmax = np.abs(blocks).max(axis=1).astype(np.float32)
    inv = (np.float32(1.0) / np.maximum(absmax, np.float32(1e-38))).astype(np.float32)
    scaled = np.clip(blocks * inv[:, None], -1, 1).reshape(-1).astype(np.float32)
    mids = ((NF4[:-1] + NF4[1:]) / np.float32(2.0)).astype(np.float32)
    q = np.searchsorted(mids, scaled, side="left").astype(np.uint8)  # == torch.bucketize(right=False)
    packed = (q[0::2] << 4) | q[1::2]
    return packed.astype(np.uint8), absmax


def ptr(a):
    return a.ctypes.data_as(ct.c_void_p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bnb", required=True, help="path of bitsandbytes' libbitsandbytes_cpu.so")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    lib = ct.CDLL(a.bnb)
    rng = np.random.default_rng(13)

    rows, cols = 4, 256
    W = (rng.standard_normal((rows, cols)) * 0.02).astype(np.float32)
    W[1, 5] = 0.5                     # an outlier
    W[1, 100] = -0.7                  # a negative maximum (q4's d = max / -8 > 0)
    W[2, 64:128] = 0.0                # an all-zero block
    W[2, 128:160] = np.float32(0.01)  # a constant block
    W[3] = rng.uniform(-1, 1, cols).astype(np.float32)

    # q8 / q4: llama.cpp's quantizers (codes), fp32 scales
    b32 = W.reshape(-1, 32)
    q8 = quants.quantize(W, GGMLQuantizationType.Q8_0).reshape(-1, 34)
    q8_codes = q8[:, 2:].view(np.int8).reshape(-1)
    q8_d = (np.abs(b32).max(axis=1) / np.float32(127)).astype(np.float32)
    assert np.array_equal(q8_d.astype(np.float16), q8[:, :2].copy().view(np.float16).reshape(-1))
    q4 = quants.quantize(W, GGMLQuantizationType.Q4_0).reshape(-1, 18)
    q4_codes = q4[:, 2:].reshape(-1)
    imax = np.abs(b32).argmax(axis=1)
    q4_d = (b32[np.arange(len(b32)), imax] / np.float32(-8)).astype(np.float32)
    assert np.array_equal(q4_d.astype(np.float16), q4[:, :2].copy().view(np.float16).reshape(-1))

    # nf4: transcription, cross-checked by bitsandbytes' C dequantizer
    nf4_codes, nf4_absmax = nf4_quantize(W)
    deq = np.empty(rows * cols, np.float32)
    lib.cdequantize_blockwise_cpu_nf4_fp32(ptr(nf4_codes), ptr(nf4_absmax), ptr(deq), ct.c_longlong(64),
                                           ct.c_longlong(rows), ct.c_longlong(cols))
    mine = NF4[np.stack([nf4_codes >> 4, nf4_codes & 15], 1).reshape(-1)] * np.repeat(nf4_absmax, 64)
    assert np.array_equal(mine.astype(np.float32), deq), "bitsandbytes' C dequantizer disagrees"

    # double quantization of absmax values: bitsandbytes' C blockwise quantizer
    n = 600  # two full blocks of 256 and a ragged one
    am = np.abs(rng.standard_normal(n) * 0.05 + 0.08).astype(np.float32)
    am[7] = 0.0
    offset = np.float32(np.mean(am.astype(np.float64)))
    code = dynamic_map()
    centred = (am - offset).astype(np.float32)
    nblk = (n + 255) // 256
    absmax2 = np.empty(nblk, np.float32)
    codes8 = np.empty(n, np.uint8)
    lib.cquantize_blockwise_cpu_fp32(ptr(code), ptr(centred), ptr(absmax2), ptr(codes8), ct.c_longlong(256),
                                     ct.c_longlong(n))
    print("dynamic map [0] after bitsandbytes quantize:", code[0], "min code used:", codes8.min())
    scales = np.empty(n, np.float32)
    lib.cdequantize_blockwise_cpu_fp32(ptr(code), ptr(codes8), ptr(absmax2), ptr(scales), ct.c_longlong(256),
                                       ct.c_longlong(n))
    scales = (scales + offset).astype(np.float32)

    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "wb") as f:
        f.write(b"GQF1" + struct.pack("<II", rows, cols))
        for arr in (W.reshape(-1), q8_codes, q8_d, q4_codes, q4_d, nf4_codes, nf4_absmax, deq):
            f.write(np.ascontiguousarray(arr).tobytes())
        f.write(struct.pack("<I", n))
        for arr in (am, np.array([offset], np.float32), codes8, absmax2, scales, code):
            f.write(np.ascontiguousarray(arr).tobytes())
    print(f"wrote {a.out}: {os.path.getsize(a.out)} bytes")


if __name__ == "__main__":
    main()
