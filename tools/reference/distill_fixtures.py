#!/usr/bin/env python3
"""Reference fixtures for `gpt2c distill` (tests/test_distill.c), from PyTorch autograd.

The loss, per position (s, t: student and teacher logits over the vocabulary, y the target):

    alpha * tau^2 * KL(softmax(t/tau) || softmax(s/tau)) + (1 - alpha) * CE(s, y)

computed here with torch.nn.functional.kl_div(log_softmax(s/tau), log_softmax(t/tau),
log_target=True) and F.cross_entropy, in float64, and differentiated by autograd.

  rows.safetensors       per case k (tau, alpha in the metadata "case{k}"): student logits
                         case{k}.s (R, V), teacher logits case{k}.t (R, V), case{k}.y (R) int32,
                         per-row loss case{k}.loss (R) and its gradient w.r.t. the student
                         logits case{k}.grad (R, V).
  teacher.safetensors,   tiny GPT-2s (Hugging Face names, Conv1D layout; GPT2LMHeadModel with
  student.safetensors    gelu_new, eps 1e-5, no dropout, tied embeddings, random init + noise)
  reference.safetensors  a batch (tokens, targets (B, T)), the mean distillation loss of the
                         student on it (tau, alpha in the metadata), the gradient of every student
                         parameter (grad.<hf name>), and the losses of 3 AdamW steps on that batch
                         (train_losses; lr, betas, eps, weight decay 0, no clipping in the metadata).

Usage: pip install torch transformers safetensors
  python3 tools/reference/distill_fixtures.py tests/fixtures/distill
"""
import json
import os
import sys
import tempfile

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import GPT2Config, GPT2LMHeadModel

V_ROWS, R = 97, 4
CASES = [(1.0, 0.5, 3.0), (2.0, 0.5, 3.0), (4.5, 0.9, 3.0), (2.0, 0.0, 3.0), (2.0, 1.0, 3.0), (0.5, 0.3, 3.0),
         (3.0, 0.7, 25.0)]  # (tau, alpha, logit scale): the last with large logits
V, CTX, B, T = 97, 16, 2, 12
TAU, ALPHA = 2.0, 0.6
TRAIN = dict(steps=3, lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-8)


def distill_rows(s, t, y, tau, alpha):
    """Per-row loss (R,) of student logits s against teacher logits t."""
    kl = F.kl_div(F.log_softmax(s / tau, -1), F.log_softmax(t / tau, -1), log_target=True, reduction="none").sum(-1)
    ce = F.cross_entropy(s, y, reduction="none")
    return alpha * tau * tau * kl + (1 - alpha) * ce


def build(seed, n_layer, n_head, n_embd):
    torch.manual_seed(seed)
    cfg = GPT2Config(n_layer=n_layer, n_head=n_head, n_embd=n_embd, n_positions=CTX, vocab_size=V,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, activation_function="gelu_new",
                     layer_norm_epsilon=1e-5, tie_word_embeddings=True, bos_token_id=None, eos_token_id=None,
                     pad_token_id=None, attn_implementation="eager")
    m = GPT2LMHeadModel(cfg).to(torch.float32)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in m.named_parameters():
            std = 0.5 if name.endswith("wpe.weight") else 0.1 if p.dim() == 1 else 0.15
            p.add_(torch.randn(p.shape, generator=g) * std)
    return m


def save_model(m, path):
    with tempfile.TemporaryDirectory() as d:
        m.save_pretrained(d, safe_serialization=True)
        sd = load_file(os.path.join(d, "model.safetensors"))
    c = m.config  # the sizes gpt2c cannot infer from the shapes (n_head) in the metadata, as gpt2c saves them
    meta = {"format": "pt", "n_layer": str(c.n_layer), "n_head": str(c.n_head), "n_embd": str(c.n_embd),
            "n_positions": str(c.n_positions), "vocab_size": str(c.vocab_size)}
    save_file({k: v.contiguous() for k, v in sd.items()}, path, metadata=meta)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)

    # ---- the loss and its gradient, row by row
    g = torch.Generator().manual_seed(4242)
    rows, meta = {}, {}
    for k, (tau, alpha, scale) in enumerate(CASES):
        s = (torch.randn(R, V_ROWS, generator=g, dtype=torch.float64) * scale).requires_grad_(True)
        t = torch.randn(R, V_ROWS, generator=g, dtype=torch.float64) * scale
        y = torch.randint(0, V_ROWS, (R,), generator=g)
        s32, t32 = s.detach().float(), t.float()  # the C side reads float32: the reference uses those values
        s = s32.double().requires_grad_(True)
        loss = distill_rows(s, t32.double(), y, tau, alpha)
        loss.sum().backward()
        rows[f"case{k}.s"] = s32.contiguous()
        rows[f"case{k}.t"] = t32.contiguous()
        rows[f"case{k}.y"] = y.to(torch.int32)
        rows[f"case{k}.loss"] = loss.detach().float()
        rows[f"case{k}.grad"] = s.grad.float().contiguous()
        meta[f"case{k}"] = json.dumps({"tau": tau, "alpha": alpha})
    meta["cases"] = str(len(CASES))
    save_file(rows, os.path.join(out, "rows.safetensors"), metadata=meta)

    # ---- one tiny student against one tiny teacher
    teacher, student = build(2025, 2, 3, 24), build(77, 1, 2, 16)
    save_model(teacher, os.path.join(out, "teacher.safetensors"))
    save_model(student, os.path.join(out, "student.safetensors"))
    g = torch.Generator().manual_seed(99)
    seq = torch.randint(0, V, (B, T + 1), generator=g)
    tokens, targets = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
    with torch.no_grad():
        t_logits = teacher(input_ids=tokens).logits.reshape(-1, V)

    def batch_loss():
        s_logits = student(input_ids=tokens).logits.reshape(-1, V)
        return distill_rows(s_logits, t_logits, targets.reshape(-1), TAU, ALPHA).mean()

    loss = batch_loss()
    loss.backward()
    ref = {"tokens": tokens.to(torch.int32), "targets": targets.to(torch.int32),
           "loss": loss.detach().reshape(1).float()}
    for name, p in student.named_parameters():
        if name == "lm_head.weight":
            continue  # tied to transformer.wte.weight
        ref["grad." + name] = p.grad.detach().float().contiguous()
    student.zero_grad(set_to_none=True)
    opt = torch.optim.AdamW(student.parameters(), lr=TRAIN["lr"], betas=(TRAIN["beta1"], TRAIN["beta2"]),
                            eps=TRAIN["eps"], weight_decay=0.0)
    losses = []
    for _ in range(TRAIN["steps"]):
        opt.zero_grad(set_to_none=True)
        l = batch_loss()
        l.backward()
        opt.step()
        losses.append(l.item())
    ref["train_losses"] = torch.tensor(losses, dtype=torch.float32)
    meta = {"tau": str(TAU), "alpha": str(ALPHA), "vocab_size": str(V)}
    meta.update({k: str(v) for k, v in TRAIN.items()})
    save_file(ref, os.path.join(out, "reference.safetensors"), metadata=meta)
    print(f"loss {loss.item():.6f}, 3 AdamW steps {losses}")


if __name__ == "__main__":
    main()
