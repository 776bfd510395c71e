#!/usr/bin/env python3
"""PyTorch CPU baseline for gpt2c's training step: the same GPT-2 124M
(bench_pytorch_gpu.py's model: pre-LN, tied wte/lm_head, tanh GELU, vocab
padded to 50304), the same optimizer settings (AdamW 0.9/0.95, eps 1e-8, wd
0.1 on 2-D weights, grad clip 1.0), random tokens, on the CPU.

--recipe tuned (the default) is the fastest honest PyTorch found on the AMD
Zen 4 this project runs on (tools/reference/README.md has every variant
tried and its time); --recipe plain is PyTorch as installed (eager, MKL as it
picks its own kernels).  Both always have:

  * torch.set_num_threads(--threads): intra-op threads (OpenMP); no inter-op pool;
  * F.scaled_dot_product_attention (the fused CPU flash kernel);
  * AdamW(fused=True) and clip_grad_norm_(foreach=True): one pass each;
  * zero_grad(set_to_none=True): no memset of the gradients;
  * bf16: fp32 master weights, torch.autocast("cpu", bfloat16) compute
    (oneDNN bf16 GEMMs with AVX512_BF16 where the CPU has it) -- the
    meaning of gpt2c's --precision bf16.

The knobs (each can be set alone; --recipe sets their defaults):

  --mkl-amd on|off (tuned: on where the CPU is not Intel's)
      MKL, which torch uses for fp32 matmuls, checks the CPU vendor and on
      AMD runs its generic AVX2 kernels (~55-65% of the FMA peak here, against
      85-90% on its AVX-512 path).  "on" builds a 2-line shared library (with
      cc, cached in ~/.cache/gpt2c/) whose mkl_serv_intel_cpu() and
      mkl_serv_intel_cpu_true() return 1 and re-runs this script with it in LD_PRELOAD, so MKL takes the path it takes
      on Intel CPUs; the arithmetic is the same IEEE fp32 (only the summation
      order differs, like any other BLAS).  Off on Intel CPUs (nothing to do).
  --linear aten|onednn (tuned: aten)
      onednn routes every nn.Linear and the LM head (forward, data and weight
      gradients) through torch.ops.mkldnn._linear_pointwise, oneDNN's fp32
      GEMM, which does not look at the vendor.  Faster than MKL's AMD path,
      not than MKL's AVX-512 path; fp32 only (bf16 already runs on oneDNN).
  --compile off|default|max-autotune (tuned: default)
      torch.compile (inductor, C++/OpenMP CPU backend) of the model's forward
      and backward: fuses the layernorm, GELU, residual, bias and loss passes
      into generated loops; the GEMMs stay calls to MKL (fp32) or oneDNN
      (bf16).  max-autotune also times inductor's C++ GEMM template against
      them per shape.  The warm-up step compiles (1-2.5 minutes on 2 cores,
      not in the timings); inductor caches the result on disk
      (/tmp/torchinductor_$USER), so later runs of the same shape take ~15 s.

One JSON object per run:
  python3 tools/reference/bench_pytorch_cpu.py --batch 4 --seq 64 --precision fp32 --threads 2
  python3 tools/reference/bench_pytorch_cpu.py --recipe plain ...     # PyTorch as installed
"""
import argparse
import json
import os
import subprocess
import sys
import time

# MKL asks these two (exported from torch's libtorch_cpu.so, so LD_PRELOAD overrides them) whether the
# CPU is Intel's; its sgemm dispatch uses the second one.
SHIM_SRC = ("int mkl_serv_intel_cpu(void) { return 1; }\n"
            "int mkl_serv_intel_cpu_true(void) { return 1; }\n")


def cpu_vendor():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def mkl_shim_path():
    """Builds (once; again if SHIM_SRC changed) the library that makes MKL take its Intel path; None if cc fails."""
    d = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "gpt2c")
    so, src = os.path.join(d, "libmkl_intel_path.so"), os.path.join(d, "mkl_intel_path.c")
    try:
        with open(src) as f:
            if f.read() == SHIM_SRC and os.path.exists(so):
                return so
    except OSError:
        pass
    os.makedirs(d, exist_ok=True)
    with open(src, "w") as f:
        f.write(SHIM_SRC)
    if subprocess.call([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", "-o", so, src]) != 0:
        return None
    return so


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gpt2")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3, help="timed steps")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps (compiling happens here)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--recipe", default="tuned", choices=["tuned", "plain"])
    ap.add_argument("--mkl-amd", choices=["on", "off"], help="MKL's Intel code path on a non-Intel CPU")
    ap.add_argument("--linear", choices=["aten", "onednn"], help="fp32 GEMMs of the linears through oneDNN")
    ap.add_argument("--compile", nargs="?", const="default", choices=["off", "default", "max-autotune"])
    args = ap.parse_args()
    tuned = args.recipe == "tuned"
    if args.mkl_amd is None:
        args.mkl_amd = "on" if tuned and cpu_vendor() != "GenuineIntel" else "off"
    if args.linear is None:
        args.linear = "aten"
    if args.compile is None:
        args.compile = "default" if tuned else "off"
    if args.compile != "off" and args.linear == "onednn":
        sys.exit("bench_pytorch_cpu: --linear onednn goes with --compile off (inductor would trace around it)")
    return args


def maybe_reexec_with_shim(args):
    """--mkl-amd on: LD_PRELOAD must be set before the process loads MKL, so re-run ourselves once."""
    if args.mkl_amd != "on" or os.environ.get("GPT2C_MKL_SHIM_ACTIVE") == "1":
        return
    so = mkl_shim_path()
    if so is None:
        sys.exit("bench_pytorch_cpu: --mkl-amd on: could not build the MKL shim (no C compiler?)")
    env = dict(os.environ, GPT2C_MKL_SHIM_ACTIVE="1")
    env["LD_PRELOAD"] = (so + " " + env.get("LD_PRELOAD", "")).strip()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def onednn_linear_fn(torch):
    """nn.Linear's three GEMMs on oneDNN's fp32 GEMM (torch.ops.mkldnn._linear_pointwise takes strided views)."""
    lp = torch.ops.mkldnn._linear_pointwise

    class OneDnnLinear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w)
            ctx.has_bias = b is not None
            y = lp(x.reshape(-1, x.shape[-1]), w, b, "none", [], "")
            return y.view(*x.shape[:-1], w.shape[0])

        @staticmethod
        def backward(ctx, dy):
            x, w = ctx.saved_tensors
            dy2 = dy.reshape(-1, dy.shape[-1])
            x2 = x.reshape(-1, x.shape[-1])
            dx = lp(dy2, w.t(), None, "none", [], "").view(x.shape)    # dY W
            dw = lp(dy2.t(), x2.t(), None, "none", [], "")               # dY^T X
            db = dy2.sum(0) if ctx.has_bias else None
            return dx, dw, db

    return OneDnnLinear.apply


def main():
    args = parse()
    maybe_reexec_with_shim(args)

    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_pytorch_gpu import GPT2, PRESETS  # the same model as the GPU baseline
    if args.model not in PRESETS:
        sys.exit("bench_pytorch_cpu: --model: one of " + ", ".join(sorted(PRESETS)))

    if args.linear == "onednn":
        if args.precision != "fp32":
            sys.exit("bench_pytorch_cpu: --linear onednn is for fp32 (bf16 GEMMs already run on oneDNN)")
        linear = onednn_linear_fn(torch)
        # nn.Linear.forward and the model's tied LM head both call torch.nn.functional.linear
        F.linear = lambda x, w, b=None: linear(x, w, b)

    torch.set_num_threads(args.threads)
    torch.manual_seed(1337)
    L, NH, C = PRESETS[args.model]
    model = GPT2(L, NH, C, maxT=max(1024, args.seq))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    try:
        opt = torch.optim.AdamW(groups, lr=3e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
        fused = True
    except (RuntimeError, TypeError):  # an older torch without the CPU fused kernel
        opt = torch.optim.AdamW(groups, lr=3e-4, betas=(0.9, 0.95), eps=1e-8, foreach=True)
        fused = False
    if args.compile == "off":
        fwd = model
    else:
        fwd = torch.compile(model, mode=None if args.compile == "default" else "max-autotune")
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

    t0 = time.perf_counter()
    for _ in range(args.warmup):
        step()
    warm_s = time.perf_counter() - t0
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
        "impl": "pytorch cpu " + args.recipe, "torch": torch.__version__, "cpu_vendor": cpu_vendor(),
        "mkl_amd": args.mkl_amd, "linear": args.linear, "compile": args.compile,
        "omp": {k: v for k, v in os.environ.items() if k.startswith(("OMP_", "KMP_", "MKL_", "DNNL_", "ONEDNN_"))},
        "threads": args.threads, "model": args.model, "precision": args.precision, "B": B, "T": T,
        "steps": args.steps, "fused_adamw": fused, "ms_per_step_median": round(times[len(times) // 2] * 1e3, 3),
        "ms_per_step_min": round(times[0] * 1e3, 3), "cpu_ms_per_step_median": round(cpu[len(cpu) // 2] * 1e3, 3),
        "warmup_s": round(warm_s, 1), "last_loss": round(losses[-1], 4),
    }), flush=True)


if __name__ == "__main__":
    main()
