#!/usr/bin/env python3
"""PyTorch 2.x baseline for gpt2c's CUDA backend: the same GPT-2 on the same GPU.

Trains (forward + backward + AdamW) or runs forward-only on random tokens (or
an llm.c token shard) and reports tokens/s, ms/step, peak memory and MFU, one
JSON object per line, so `gpt2c bench train --backend cuda` can be compared
number for number.  The model is written here (pre-LN GPT-2, tied wte/lm_head,
tanh GELU, vocab padded to 50304 like gpt2c) and trained with the settings
gpt2c uses: AdamW(0.9, 0.95, eps 1e-8, wd 0.1 on 2-D weights), grad clip 1.0.

  python3 tools/reference/bench_pytorch_gpu.py --model d12 --batch 8 --seq 1024 \
      --precision bf16 --compile            # the headline baseline
  python3 tools/reference/bench_pytorch_gpu.py --precision fp32 --no-compile
  python3 tools/reference/bench_pytorch_gpu.py --mode forward --precision bf16

Precision: fp32 (no TF32 anywhere), tf32 (fp32 weights, TF32 matmuls), bf16
(fp32 master weights, autocast bf16 compute) -- the meanings of gpt2c's
--precision.  Needs torch >= 2.1 with CUDA.
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {  # layers, heads, channels
    "d12": (12, 12, 768), "gpt2": (12, 12, 768),
    "d24": (24, 16, 1024), "gpt2-medium": (24, 16, 1024),
    "d36": (36, 20, 1280), "gpt2-large": (36, 20, 1280),
    "d48": (48, 25, 1600), "gpt2-xl": (48, 25, 1600),
}

# Dense peak TFLOP/s per precision (no sparsity), for MFU.
PEAKS = {
    "H100": {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4},   # SXM5
    "H200": {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4},
    "A100": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0},
}


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.nh = NH
        self.ln_1 = nn.LayerNorm(C)
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.nh, C // self.nh).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # flash / memory-efficient kernel
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, L, NH, C, Vp=50304, maxT=1024):
        super().__init__()
        self.wte = nn.Embedding(Vp, C)
        self.wpe = nn.Embedding(maxT, C)
        self.h = nn.ModuleList(Block(C, NH) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        self.L = L
        self.apply(self._init)

    def _init(self, m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for blk in self.h:
            x = blk(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied lm_head
        if targets is None:
            return logits
        return F.cross_entropy(logits[..., :50257].float().view(-1, 50257), targets.view(-1))


def model_flops_per_token(n_params, L, C, T):
    # 6N for the matmuls of forward + backward plus attention's 12 L C T (PaLM appendix B)
    return 6 * n_params + 12 * L * C * T


def load_tokens(path, B, T, device):
    """Reads an llm.c .bin shard (256 int32 header, then uint16 tokens)."""
    import numpy as np
    with open(path, "rb") as f:
        header = np.frombuffer(f.read(256 * 4), dtype=np.int32)
        tokens = np.frombuffer(f.read(), dtype=np.uint16)
    if header[0] != 20240520:
        sys.exit(f"{path}: not an llm.c token shard")
    need = B * T + 1
    buf = torch.from_numpy(tokens[:need].astype("int64")).to(device)
    return buf[:-1].view(B, T), buf[1:].view(B, T)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="d12", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=30, help="timed steps")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps (compilation happens here)")
    ap.add_argument("--precision", default="bf16", choices=["fp32", "tf32", "bf16"])
    ap.add_argument("--compile", dest="compile", action="store_true", default=True)
    ap.add_argument("--no-compile", dest="compile", action="store_false")
    ap.add_argument("--mode", default="train", choices=["train", "forward"])
    ap.add_argument("--data", help="llm.c token shard (.bin); default random tokens")
    ap.add_argument("--peak-tflops", type=float, help="override the GPU's dense peak for MFU")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        sys.exit("bench_pytorch_gpu: no CUDA device")
    dev = "cuda"
    torch.manual_seed(1337)
    tf32 = args.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")

    L, NH, C = PRESETS[args.model]
    model = GPT2(L, NH, C, maxT=max(1024, args.seq)).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    fwd = torch.compile(model) if args.compile else model
    B, T = args.batch, args.seq
    if args.data:
        x, y = load_tokens(args.data, B, T, dev)
    else:
        x = torch.randint(0, 50257, (B, T), device=dev)
        y = torch.randint(0, 50257, (B, T), device=dev)
    amp = torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.precision == "bf16")

    def step():
        if args.mode == "forward":
            with torch.no_grad(), amp:
                return fwd(x, y)
        with amp:
            loss = fwd(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times, losses = [], []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    times.sort()
    med = times[len(times) // 2]
    tok_s = B * T / med
    flops_tok = model_flops_per_token(n_params, L, C, T) / (3 if args.mode == "forward" else 1)
    name = torch.cuda.get_device_name()
    peak = args.peak_tflops
    if peak is None:
        peak = next((v[args.precision] for k, v in PEAKS.items() if k in name), float("nan"))
    print(json.dumps({
        "impl": "pytorch" + (" compiled" if args.compile else " eager"), "torch": torch.__version__,
        "gpu": name, "model": args.model, "params": n_params, "mode": args.mode, "precision": args.precision,
        "B": B, "T": T, "steps": args.steps, "ms_per_step_median": round(med * 1e3, 3),
        "ms_per_step_min": round(times[0] * 1e3, 3), "tokens_per_s": round(tok_s, 1),
        "tflops": round(flops_tok * tok_s / 1e12, 2), "mfu": round(flops_tok * tok_s / (peak * 1e12), 4)
        if not math.isnan(peak) else None,
        "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3), "last_loss": round(losses[-1], 4),
    }))


if __name__ == "__main__":
    main()
