#!/usr/bin/env python3
"""PyTorch CPU baseline for gpt2c's training step: the same GPT-2 124M
(bench_pytorch_gpu.py's model: pre-LN, tied wte/lm_head, tanh GELU, vocab
padded to 50304), the same optimizer settings (AdamW 0.9/0.95, eps 1e-8, wd
0.1 on 2-D weights, grad clip 1.0), random tokens, on the CPU with the
settings that make PyTorch fastest there ("hand-tuned"):

  * torch.set_num_threads(--threads), intra-op only (no inter-op pool);
  * F.scaled_dot_product_attention (the fused CPU flash kernel);
  * AdamW(fused=True) and clip_grad_norm_(foreach=True): one pass each;
  * zero_grad(set_to_none=True): no memset of the gradients;
  * bf16: fp32 master weights, torch.autocast("cpu", bfloat16) compute
    (oneDNN bf16 GEMMs with AVX512_BF16 where the CPU has it);
  * --compile (off by default: inductor's C++ compile takes minutes on a
    small machine) wraps the model in torch.compile.

One JSON object per run:
  python3 tools/reference/bench_pytorch_cpu.py --batch 4 --seq 64 --precision fp32 --threads 2
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F  # noqa: F401  (the model module uses it)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_pytorch_gpu import GPT2, PRESETS  # noqa: E402  (the same model as the GPU baseline)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gpt2", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3, help="timed steps")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(1337)
    L, NH, C = PRESETS[args.model]
    model = GPT2(L, NH, C, maxT=max(1024, args.seq))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    try:
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=3e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
        fused = True
    except (RuntimeError, TypeError):  # an older torch without the CPU fused kernel
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=3e-4, betas=(0.9, 0.95), eps=1e-8, foreach=True)
        fused = False
    fwd = torch.compile(model) if args.compile else model
    B, T = args.batch, args.seq
    x = torch.randint(0, 50257, (B, T))
    y = torch.randint(0, 50257, (B, T))
    amp = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")

    def step():
        with amp:
            loss = fwd(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(args.warmup):
        step()
    times, cpu, losses = [], [], []
    for _ in range(args.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        loss = step()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        losses.append(loss.item())
    times.sort()
    cpu.sort()
    print(json.dumps({
        "impl": "pytorch cpu" + (" compiled" if args.compile else " eager"), "torch": torch.__version__,
        "threads": args.threads, "model": args.model, "precision": args.precision, "B": B, "T": T,
        "steps": args.steps, "fused_adamw": fused, "ms_per_step_median": round(times[len(times) // 2] * 1e3, 3),
        "ms_per_step_min": round(times[0] * 1e3, 3), "cpu_ms_per_step_median": round(cpu[len(cpu) // 2] * 1e3, 3),
        "last_loss": round(losses[-1], 4),
    }))


if __name__ == "__main__":
    main()
