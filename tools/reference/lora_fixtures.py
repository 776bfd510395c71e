#!/usr/bin/env python3
"""Write the LoRA fixtures that tests/test_lora.c checks gpt2c against, from
PyTorch + transformers + PEFT (no hub access: the base is the tiny seeded
model of tests/fixtures/hf_dir, loaded from disk).

    tests/fixtures/lora/peft_adapter/   what PeftModel.save_pretrained writes
                                        (adapter_config.json, adapter_model.safetensors):
                                        r=4, lora_alpha=8, target_modules c_attn + c_proj + c_fc
                                        (c_proj: both projections), B set to random values so
                                        the adapter is not a no-op
    tests/fixtures/lora/lora_ref.safetensors
        tokens, targets (I32, B x T)
        logits (B x T x V)  of base + adapter (unmerged), loss (mean cross-entropy)
        grad.<PEFT name>    d loss / d lora_A, lora_B of every adapter matrix
        step<k>.loss        loss of step k (k = 1..3, before update k)
        after.<PEFT name>   every adapter matrix after 3 AdamW steps
                            (lr 1e-2, betas (0.9, 0.95), eps 1e-8, weight_decay 0.1, no clipping)
        merged.<HF name>    merge_and_unload()'s weights for two layers (Conv1D layout, (in, out))
        pruned.<PEFT name>  the fixture adapter's matrices after
                            torch.nn.utils.prune.global_unstructured(L1Unstructured, amount=0.8) over all of them

Usage (from the repository root):  python tools/reference/lora_fixtures.py
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from safetensors.torch import save_file
from transformers import GPT2LMHeadModel

REPO = Path(__file__).resolve().parents[2]
B, T, SEED = 2, 12, 777
LR, BETAS, EPS, WD, STEPS = 1e-2, (0.9, 0.95), 1e-8, 0.1, 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(REPO / "tests" / "fixtures" / "lora"))
    args = ap.parse_args()
    out = Path(args.out)
    torch.manual_seed(SEED)
    base = GPT2LMHeadModel.from_pretrained(str(REPO / "tests" / "fixtures" / "hf_dir"),
                                           attn_implementation="eager").to(torch.float32)
    V = base.config.vocab_size
    cfg = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["c_attn", "c_proj", "c_fc"],
                     fan_in_fan_out=True, bias="none", task_type="CAUSAL_LM")
    model = get_peft_model(base, cfg)
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():  # B starts at zero: make the adapter do something
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    model.eval()  # no dropout anywhere (the configs have none either)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    model.save_pretrained(str(out / "peft_adapter"))
    (out / "peft_adapter" / "README.md").unlink(missing_ok=True)  # PEFT's model card template
    # the hub is unreachable: name the base by the fixture's path
    cfg_path = out / "peft_adapter" / "adapter_config.json"
    c = json.loads(cfg_path.read_text())
    c["base_model_name_or_path"] = "tests/fixtures/hf_dir"
    c["target_modules"] = sorted(c["target_modules"])  # a set in PEFT: fix the order
    cfg_path.write_text(json.dumps(c, indent=2, sort_keys=True) + "\n")

    gt = torch.Generator().manual_seed(SEED + 2)
    tokens = torch.randint(0, V, (B, T + 1), generator=gt)
    x, y = tokens[:, :T].contiguous(), tokens[:, 1:].contiguous()
    lora = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert lora and all("lora_" in n for n in lora)

    def peft_name(n):  # the name in adapter_model.safetensors (adapter name dropped)
        return n.replace(".default", "")

    ref = {"tokens": x.to(torch.int32), "targets": y.to(torch.int32)}
    logits = model(input_ids=x).logits
    loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
    loss.backward()
    ref["logits"] = logits.detach().contiguous()
    ref["loss"] = loss.detach().reshape(1)
    for n, p in lora.items():
        ref["grad." + peft_name(n)] = p.grad.detach().clone()
    model.zero_grad()

    opt = torch.optim.AdamW(list(lora.values()), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
    for k in range(1, STEPS + 1):
        opt.zero_grad()
        logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        ref[f"step{k}.loss"] = loss.detach().reshape(1)
        loss.backward()
        opt.step()
    for n, p in lora.items():
        ref["after." + peft_name(n)] = p.detach().clone()

    # merge the fixture adapter (as saved, before training) into the base
    from peft import PeftModel
    base2 = GPT2LMHeadModel.from_pretrained(str(REPO / "tests" / "fixtures" / "hf_dir")).to(torch.float32)
    merged = PeftModel.from_pretrained(base2, str(out / "peft_adapter")).merge_and_unload()
    sd = merged.state_dict()
    for name in ("transformer.h.0.attn.c_attn.weight", "transformer.h.1.mlp.c_proj.weight",
                 "transformer.h.1.attn.c_proj.weight", "transformer.h.0.mlp.c_fc.weight"):
        ref["merged." + name] = sd[name].detach().contiguous()
    # 80% global L1 pruning of the adapter matrices (as saved), as torch.nn.utils.prune does it
    import torch.nn.utils.prune as tprune
    base3 = GPT2LMHeadModel.from_pretrained(str(REPO / "tests" / "fixtures" / "hf_dir")).to(torch.float32)
    pm = PeftModel.from_pretrained(base3, str(out / "peft_adapter"))
    mods = [(mod, "weight") for name, mod in pm.named_modules()
            if (name.endswith("lora_A.default") or name.endswith("lora_B.default"))]
    tprune.global_unstructured(mods, pruning_method=tprune.L1Unstructured, amount=0.8)
    for name, mod in pm.named_modules():
        if name.endswith("lora_A.default") or name.endswith("lora_B.default"):
            ref["pruned." + peft_name(name) + ".weight"] = (mod.weight_orig * mod.weight_mask).detach().contiguous()
    save_file({k: v.contiguous() for k, v in ref.items()}, str(out / "lora_ref.safetensors"),
              metadata={"source": "tools/reference/lora_fixtures.py", "lr": str(LR), "betas": str(BETAS),
                        "eps": str(EPS), "weight_decay": str(WD), "steps": str(STEPS)})
    for f in out.rglob("*"):
        if f.is_file():
            f.chmod(0o644)
    print("wrote", out, "loss", float(ref["loss"][0]))


if __name__ == "__main__":
    main()
