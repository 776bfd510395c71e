#!/usr/bin/env python3
"""Independent checks of the fixtures written by make_fixtures.py.

- re-reads every safetensors file and prints names / shapes / dtypes / metadata;
- recomputes logits and loss with a plain float64 numpy GPT-2 from
  model.safetensors (HF Conv1D layout), from model_noprefix.safetensors and from
  the llm.c model_v3.bin (nn.Linear layout), and compares with reference logits;
- checks model_v5.bin is the bf16 round-to-nearest-even of model_v3.bin;
- replays the 10 training steps with hand-written grad clipping and AdamW
  (torch autograd only for the gradients) and compares train_losses/norms;
- decodes every tokenizer TSV row with a pure-Python byte decoder built from
  encoder.json and checks it gives back the input bytes.

Usage: python tools/reference/verify_fixtures.py [--data DIR] [--fixtures DIR]
"""

import argparse
import json
import math
import os
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file

REPO = Path(__file__).resolve().parents[2]


def ln(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def forward(P, tokens, n_head):
    """P: dict of float64 arrays with HF-like keys, weights in (in, out) layout."""
    B, T = tokens.shape
    x = P["wte"][tokens] + P["wpe"][:T][None]
    C = x.shape[-1]
    hd = C // n_head
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    for l in range(P["L"]):
        g = lambda n: P[f"h.{l}.{n}"]
        h = ln(x, g("ln_1.weight"), g("ln_1.bias"))
        qkv = h @ g("attn.c_attn.weight") + g("attn.c_attn.bias")
        q, k, v = np.split(qkv, 3, axis=-1)
        q, k, v = [t.reshape(B, T, n_head, hd).transpose(0, 2, 1, 3) for t in (q, k, v)]
        att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
        att = np.where(mask, -np.inf, att)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + y @ g("attn.c_proj.weight") + g("attn.c_proj.bias")
        h = ln(x, g("ln_2.weight"), g("ln_2.bias"))
        h = gelu_new(h @ g("mlp.c_fc.weight") + g("mlp.c_fc.bias"))
        x = x + h @ g("mlp.c_proj.weight") + g("mlp.c_proj.bias")
    x = ln(x, P["ln_f.weight"], P["ln_f.bias"])
    return x @ P["wte"].T


def mean_ce(logits, targets):
    m = logits.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(logits - m).sum(-1, keepdims=True)))[..., 0]
    picked = np.take_along_axis(logits, targets[..., None], -1)[..., 0]
    return float((lse - picked).mean())


def params_from_hf(sd, prefix, L):
    P = {"L": L}
    for k, v in sd.items():
        if not k.startswith(prefix) or k.endswith(".attn.bias"):
            continue
        P[k[len(prefix):].replace("wte.weight", "wte").replace("wpe.weight", "wpe")] = v.double().numpy()
    return P


def params_from_llmc(path, meta_L):
    raw = open(path, "rb").read()
    hdr = np.frombuffer(raw[:1024], dtype="<i4")
    magic, version, maxT, V, L, NH, C, Vp = [int(v) for v in hdr[:8]]
    assert magic == 20240326 and version in (3, 5) and L == meta_L
    if version == 3:
        flat = np.frombuffer(raw[1024:], dtype="<f4").astype(np.float64)
    else:
        u16 = np.frombuffer(raw[1024:], dtype="<u2").astype(np.uint32) << 16
        flat = u16.view(np.float32).astype(np.float64)
    shapes = [("wte", (Vp, C)), ("wpe", (maxT, C)), ("ln1w", (L, C)), ("ln1b", (L, C)),
              ("qkvw", (L, 3 * C, C)), ("qkvb", (L, 3 * C)), ("attprojw", (L, C, C)),
              ("attprojb", (L, C)), ("ln2w", (L, C)), ("ln2b", (L, C)), ("fcw", (L, 4 * C, C)),
              ("fcb", (L, 4 * C)), ("fcprojw", (L, C, 4 * C)), ("fcprojb", (L, C)),
              ("lnfw", (C,)), ("lnfb", (C,))]
    T_, off = {}, 0
    for name, shp in shapes:
        n = int(np.prod(shp))
        T_[name] = flat[off:off + n].reshape(shp)
        off += n
    assert off == flat.size, (off, flat.size)
    assert np.all(T_["wte"][V:] == 0), "pad rows of wte must be zero"
    P = {"L": L, "wte": T_["wte"][:V], "wpe": T_["wpe"], "ln_f.weight": T_["lnfw"], "ln_f.bias": T_["lnfb"]}
    for l in range(L):
        P[f"h.{l}.ln_1.weight"], P[f"h.{l}.ln_1.bias"] = T_["ln1w"][l], T_["ln1b"][l]
        P[f"h.{l}.ln_2.weight"], P[f"h.{l}.ln_2.bias"] = T_["ln2w"][l], T_["ln2b"][l]
        P[f"h.{l}.attn.c_attn.weight"], P[f"h.{l}.attn.c_attn.bias"] = T_["qkvw"][l].T, T_["qkvb"][l]
        P[f"h.{l}.attn.c_proj.weight"], P[f"h.{l}.attn.c_proj.bias"] = T_["attprojw"][l].T, T_["attprojb"][l]
        P[f"h.{l}.mlp.c_fc.weight"], P[f"h.{l}.mlp.c_fc.bias"] = T_["fcw"][l].T, T_["fcb"][l]
        P[f"h.{l}.mlp.c_proj.weight"], P[f"h.{l}.mlp.c_proj.bias"] = T_["fcprojw"][l].T, T_["fcprojb"][l]
    return P, flat, (magic, version, maxT, V, L, NH, C, Vp)


def replay_training(model_path, ref, meta):
    """Hand-written clip + AdamW (torch autograd only for gradients)."""
    from transformers import GPT2LMHeadModel
    import torch.nn.functional as F
    torch.use_deterministic_algorithms(True)
    model = GPT2LMHeadModel.from_pretrained(model_path, attn_implementation="eager").train()
    params = list(model.parameters())  # tied lm_head/wte appears once
    lr, b1, b2 = float(meta["lr"]), float(meta["beta1"]), float(meta["beta2"])
    eps, wd, clip = float(meta["eps"]), float(meta["weight_decay"]), float(meta["grad_clip"])
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    tokens, targets = ref["tokens"].long(), ref["targets"].long()
    losses, norms = [], []
    for step in range(1, int(meta["train_steps"]) + 1):
        model.zero_grad(set_to_none=True)
        logits = model(input_ids=tokens).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        with torch.no_grad():
            norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params)).float()
            coef = min(1.0, clip / (float(norm) + 1e-6))
            for i, p in enumerate(params):
                g = p.grad * coef
                if p.dim() >= 2:
                    p.mul_(1 - lr * wd)
                m[i].mul_(b1).add_(g, alpha=1 - b1)
                v[i].mul_(b2).addcmul_(g, g, value=1 - b2)
                bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
                denom = v[i].sqrt() / math.sqrt(bc2) + eps
                p.addcdiv_(m[i], denom, value=-lr / bc1)
        losses.append(float(loss.detach()))
        norms.append(float(norm))
    return np.array(losses), np.array(norms)


def byte_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("GPT2C_DATA", str(REPO.parent / "shared" / "data")))
    ap.add_argument("--fixtures", default=str(REPO / "tests" / "fixtures"))
    args = ap.parse_args()
    fx = Path(args.fixtures)
    torch.set_num_threads(1)

    for name in ("ref_tiny", "ref_small"):
        d = fx / name
        with safe_open(str(d / "reference.safetensors"), "pt") as f:
            meta = f.metadata()
        ref = load_file(str(d / "reference.safetensors"))
        hf = load_file(str(d / "model.safetensors"))
        print(f"== {name}: metadata {meta}")
        for k in sorted(ref):
            if not k.startswith("grad."):
                print(f"   {k:14s} {str(ref[k].dtype):14s} {tuple(ref[k].shape)}")
        assert set("grad." + k for k in hf) == {k for k in ref if k.startswith("grad.")}
        for k in hf:
            assert ref["grad." + k].shape == hf[k].shape and ref["grad." + k].dtype == torch.float32
        L, NH = int(meta["n_layer"]), int(meta["n_head"])
        tokens, targets = ref["tokens"].numpy().astype(np.int64), ref["targets"].numpy().astype(np.int64)
        want = ref["logits"].double().numpy()

        def check(label, P):
            lg = forward(P, tokens, NH)
            err = np.abs(lg - want).max()
            lerr = abs(mean_ce(lg, targets) - float(ref["loss"][0]))
            print(f"   numpy forward from {label}: max|dlogits|={err:.2e} |dloss|={lerr:.2e}")
            assert err < 1e-4 and lerr < 1e-5
            return lg

        check("model.safetensors", params_from_hf(hf, "transformer.", L))
        if (d / "model_noprefix.safetensors").exists():
            npf = load_file(str(d / "model_noprefix.safetensors"))
            masks = [k for k in npf if k.endswith(".attn.bias")]
            print(f"   model_noprefix: {len(npf)} tensors, legacy buffers {masks} shape {tuple(npf[masks[0]].shape)} {npf[masks[0]].dtype}")
            for k, v in npf.items():
                if not k.endswith(".attn.bias"):
                    assert torch.equal(v, hf["transformer." + k]), k
            check("model_noprefix.safetensors", params_from_hf(npf, "", L))
        if (d / "model_v3.bin").exists():
            P3, flat3, hdr = params_from_llmc(d / "model_v3.bin", L)
            print(f"   model_v3.bin header {hdr}")
            check("model_v3.bin", P3)
            P5, flat5, hdr5 = params_from_llmc(d / "model_v5.bin", L)
            print(f"   model_v5.bin header {hdr5}")
            assert hdr5[2:] == hdr[2:]
            rne = torch.from_numpy(flat3.astype(np.float32)).to(torch.bfloat16).float().double().numpy()
            assert np.array_equal(rne, flat5)
            lg5 = forward(P5, tokens, NH)
            print(f"   numpy forward from model_v5.bin (bf16 weights): max|dlogits|={np.abs(lg5 - want).max():.2e}")
        losses, norms = replay_training(d, ref, meta)
        dl = np.abs(losses - ref["train_losses"].double().numpy()).max()
        dn = np.abs(norms - ref["train_norms"].double().numpy()).max()
        print(f"   hand-written clip+AdamW replay: max|dloss|={dl:.2e} max|dnorm|={dn:.2e}")
        assert dl < 1e-5 and dn < 1e-5

    enc = json.loads((Path(args.data) / "gpt2-tokenizer" / "encoder.json").read_text(encoding="utf-8"))
    dec = {v: k for k, v in enc.items()}
    bd = byte_decoder()
    for fname in ("tokenizer_cases.tsv", "tokenizer_special.tsv", "tokenizer_bytes.tsv"):
        p = fx / fname
        if not p.exists():
            continue
        n = 0
        for line in p.read_text(encoding="ascii").split("\n"):
            if not line:
                continue
            name, hx, ids = line.split("\t")
            raw = bytes.fromhex(hx)
            ids = [int(t) for t in ids.split()] if ids else []
            got = b"".join(bytes(bd[ch] for ch in dec[i]) if i != 50256 else b"<|endoftext|>" for i in ids)
            assert got == raw, (fname, name)
            n += 1
        print(f"== {fname}: {n} rows decode back to their input bytes")
    print("ALL OK")


if __name__ == "__main__":
    main()
