#!/usr/bin/env python3
"""Does PEFT load an adapter that gpt2c wrote?  Loads BASE_DIR (a Hugging Face
GPT-2 directory, e.g. tests/fixtures/hf_dir) with transformers, puts the gpt2c
adapter ADAPTER_DIR on it with PeftModel.from_pretrained, and compares:

  - merge_and_unload()'s weights with MERGED (what `gpt2c merge` wrote from the same base and adapter);
  - the logits of the unmerged PEFT model with those of the merged file loaded as a plain GPT-2.

Usage:
  build/gpt2c train --model tests/fixtures/hf_dir --data D.bin --lora-rank 4 --lora-targets all --save /tmp/ad ...
  build/gpt2c merge --model tests/fixtures/hf_dir --adapter /tmp/ad --out /tmp/merged.safetensors
  python3 tools/reference/peft_load_check.py tests/fixtures/hf_dir /tmp/ad /tmp/merged.safetensors
Prints the largest differences and exits non-zero when they exceed 1e-5 (relative to the largest value).
"""

import sys

import torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import GPT2LMHeadModel


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    base_dir, adapter_dir, merged_path = sys.argv[1:]
    base = GPT2LMHeadModel.from_pretrained(base_dir).to(torch.float32).eval()
    peft_model = PeftModel.from_pretrained(base, adapter_dir).eval()
    n_lora = sum(1 for n, _ in peft_model.named_parameters() if "lora_" in n)
    ids = torch.arange(12).reshape(1, 12) % base.config.vocab_size
    with torch.no_grad():
        unmerged = peft_model(input_ids=ids).logits
    merged = peft_model.merge_and_unload()
    sd = merged.state_dict()
    mine = load_file(merged_path)
    worst = 0.0
    for name, t in mine.items():
        key = name if name in sd else "transformer." + name
        if key not in sd or sd[key].shape != t.shape:
            continue
        ref = sd[key].float()
        d = (t.float() - ref).abs().max().item() / max(ref.abs().max().item(), 1e-6)
        worst = max(worst, d)
    plain = GPT2LMHeadModel.from_pretrained(base_dir).to(torch.float32).eval()
    plain.load_state_dict({k: v for k, v in sd.items()}, strict=False)
    with torch.no_grad():
        for name, t in mine.items():
            key = name if name in sd else "transformer." + name
            if key in dict(plain.named_parameters()):
                dict(plain.named_parameters())[key].copy_(t)
        merged_logits = plain(input_ids=ids).logits
    dl = (merged_logits - unmerged).abs().max().item() / unmerged.abs().max().item()
    print(f"PEFT loaded {n_lora} LoRA matrices from {adapter_dir}")
    print(f"gpt2c merge vs PEFT merge_and_unload: max relative weight difference {worst:.3g}")
    print(f"logits of gpt2c's merged file vs PEFT's unmerged adapter: max relative difference {dl:.3g}")
    sys.exit(0 if worst <= 1e-5 and dl <= 1e-5 and n_lora > 0 else 1)


if __name__ == "__main__":
    main()
