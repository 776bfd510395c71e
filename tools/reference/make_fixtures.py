#!/usr/bin/env python3
"""Generate the reference fixtures that gpt2c's C tests compare against.

Usage (from the repository root):
    python tools/reference/make_fixtures.py [--data DIR] [--out DIR] [--only model|tokenizer|all]

DIR for --data defaults to $GPT2C_DATA, else <repo>/../shared/data; it must
contain gpt2-tokenizer/encoder.json and gpt2-tokenizer/vocab.bpe (those files are
read, never copied). Output goes to <repo>/tests/fixtures by default.

Everything is deterministic: fixed seeds, torch.use_deterministic_algorithms,
one CPU thread, float32, dropout 0. See tools/reference/README.md for the
layout of every file written.
"""

import argparse
import copy
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import regex
import safetensors
import tiktoken
import torch
import torch.nn.functional as F
import transformers
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from tiktoken.load import data_gym_to_mergeable_bpe_ranks
from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

REPO = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------
# Model fixtures
# --------------------------------------------------------------------------

CONFIGS = {
    "ref_tiny": dict(n_layer=2, n_head=4, n_embd=64, n_positions=32, vocab_size=100,
                     B=2, T=16, seed=1234, llmc=True, noprefix=False),
    "ref_small": dict(n_layer=3, n_head=3, n_embd=48, n_positions=64, vocab_size=301,
                      B=3, T=24, seed=5686, llmc=False, noprefix=True),
}

TRAIN = dict(steps=10, lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, grad_clip=1.0)
GEN_PROMPT_LEN = 5
GEN_NEW_TOKENS = 8
# Gaussian noise added to every parameter after HF's init so that biases
# (init 0) and layernorm params (init 1/0) are not trivial. wpe gets more, so
# that greedy generation depends on the position and does not just repeat one
# token (a random tied-embedding model tends to).
NOISE_STD_1D = 0.1
NOISE_STD_2D = 0.05
NOISE_STD_WPE = 0.5


def build_model(c):
    torch.manual_seed(c["seed"])
    config = GPT2Config(
        n_layer=c["n_layer"], n_head=c["n_head"], n_embd=c["n_embd"],
        n_positions=c["n_positions"], vocab_size=c["vocab_size"],
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        activation_function="gelu_new", layer_norm_epsilon=1e-5,
        tie_word_embeddings=True,
        # default 50256 would be outside these tiny vocabularies
        bos_token_id=None, eos_token_id=None, pad_token_id=None,
        attn_implementation="eager",
    )
    model = GPT2LMHeadModel(config).to(torch.float32)
    assert model.config._attn_implementation == "eager"
    assert model.lm_head.weight is model.transformer.wte.weight, "lm_head must be tied to wte"
    g = torch.Generator().manual_seed(c["seed"] + 1)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            std = NOISE_STD_WPE if pname.endswith("wpe.weight") else NOISE_STD_1D if p.dim() == 1 else NOISE_STD_2D
            p.add_(torch.randn(p.shape, generator=g, dtype=torch.float32) * std)
    model.eval()
    return model


def mean_ce(model, tokens, targets):
    logits = model(input_ids=tokens).logits
    V = logits.shape[-1]
    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction="mean")
    return logits, loss


def greedy_manual(model, prompt, n_new):
    """Greedy decoding by full recomputation (no KV cache); also returns the
    smallest top1-top2 logit gap seen (robustness of the argmax)."""
    ids = prompt.clone()
    min_gap = float("inf")
    with torch.no_grad():
        for _ in range(n_new):
            last = model(input_ids=ids).logits[0, -1]
            top2 = torch.topk(last, 2).values
            min_gap = min(min_gap, float(top2[0] - top2[1]))
            ids = torch.cat([ids, last.argmax().view(1, 1)], dim=1)
    return ids, min_gap


def write_llmc(model, path, dtype):
    """Write model in llm.c's checkpoint format (train_gpt2.py write_model).

    Header: 256 int32 (little endian): magic 20240326, version (3 fp32 / 5 bf16),
    max_seq_len, vocab_size, num_layers, num_heads, channels, padded_vocab_size.
    Then the parameters, nn.Linear layout (out, in), in llm.c's order.
    """
    assert dtype in ("float32", "bfloat16")
    cfg = model.config
    L, C, V, maxT = cfg.n_layer, cfg.n_embd, cfg.vocab_size, cfg.n_positions
    Vp = ((V + 127) // 128) * 128
    sd = {k: v.detach().to(torch.float32).cpu() for k, v in model.state_dict().items()}

    def h(i, name):
        return sd[f"transformer.h.{i}.{name}"]

    wte = torch.zeros(Vp, C, dtype=torch.float32)
    wte[:V] = sd["transformer.wte.weight"]
    tensors = [
        wte,                                                              # (Vp, C)
        sd["transformer.wpe.weight"],                                     # (maxT, C)
        torch.stack([h(i, "ln_1.weight") for i in range(L)]),             # (L, C)
        torch.stack([h(i, "ln_1.bias") for i in range(L)]),               # (L, C)
        torch.stack([h(i, "attn.c_attn.weight").t() for i in range(L)]),  # (L, 3C, C)
        torch.stack([h(i, "attn.c_attn.bias") for i in range(L)]),        # (L, 3C)
        torch.stack([h(i, "attn.c_proj.weight").t() for i in range(L)]),  # (L, C, C)
        torch.stack([h(i, "attn.c_proj.bias") for i in range(L)]),        # (L, C)
        torch.stack([h(i, "ln_2.weight") for i in range(L)]),             # (L, C)
        torch.stack([h(i, "ln_2.bias") for i in range(L)]),               # (L, C)
        torch.stack([h(i, "mlp.c_fc.weight").t() for i in range(L)]),     # (L, 4C, C)
        torch.stack([h(i, "mlp.c_fc.bias") for i in range(L)]),           # (L, 4C)
        torch.stack([h(i, "mlp.c_proj.weight").t() for i in range(L)]),   # (L, C, 4C)
        torch.stack([h(i, "mlp.c_proj.bias") for i in range(L)]),         # (L, C)
        sd["transformer.ln_f.weight"],                                    # (C,)
        sd["transformer.ln_f.bias"],                                      # (C,)
    ]
    expected_shapes = [(Vp, C), (maxT, C), (L, C), (L, C), (L, 3 * C, C), (L, 3 * C),
                       (L, C, C), (L, C), (L, C), (L, C), (L, 4 * C, C), (L, 4 * C),
                       (L, C, 4 * C), (L, C), (C,), (C,)]
    assert [tuple(t.shape) for t in tensors] == expected_shapes
    header = np.zeros(256, dtype="<i4")
    header[:8] = [20240326, 3 if dtype == "float32" else 5, maxT, V, L, cfg.n_head, C, Vp]
    n = 0
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for t in tensors:
            t = t.contiguous()
            if dtype == "float32":
                f.write(t.numpy().astype("<f4").tobytes())
            else:
                f.write(t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes())
            n += t.numel()
    return n, tensors


def check_llmc(path, dtype, n_params, tensors):
    raw = open(path, "rb").read()
    hdr = np.frombuffer(raw[:1024], dtype="<i4")
    esz = 4 if dtype == "float32" else 2
    assert hdr[0] == 20240326 and hdr[1] == (3 if dtype == "float32" else 5)
    assert len(raw) == 1024 + esz * n_params, (len(raw), n_params)
    flat = torch.cat([t.reshape(-1) for t in tensors])
    if dtype == "float32":
        got = torch.from_numpy(np.frombuffer(raw[1024:], dtype="<f4").copy())
        assert torch.equal(got, flat)
    else:
        got16 = torch.from_numpy(np.frombuffer(raw[1024:], dtype="<i2").copy())
        assert torch.equal(got16.view(torch.bfloat16), flat.to(torch.bfloat16))
        # cross-check round-to-nearest-even by hand on the bit patterns
        u = torch.from_numpy(flat.numpy().view("<u4").astype(np.int64))
        rne = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
        assert torch.equal(rne, got16.to(torch.int64) & 0xFFFF)


def canonicalize_safetensors_header(path):
    """safetensors writes __metadata__ in hash-map (random) order, so the bytes
    change from run to run. Rewrite the JSON header with sorted keys (same
    tensors, same data bytes, header padded with spaces to 8 bytes as
    safetensors does) so that regenerating gives byte-identical files."""
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    hb = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(len(hb).to_bytes(8, "little") + hb + data)


def make_model_fixtures(name, c, outroot):
    out = outroot / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    B, T, V = c["B"], c["T"], c["vocab_size"]
    print(f"== {name}: {c}")

    model = build_model(c)
    init_model = copy.deepcopy(model)  # pristine copy for training (no grads yet)

    g = torch.Generator().manual_seed(c["seed"] + 2)
    seq = torch.randint(0, V, (B, T + 1), generator=g, dtype=torch.int64)
    tokens, targets = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
    prompt = torch.randint(0, V, (1, GEN_PROMPT_LEN), generator=g, dtype=torch.int64)

    # forward + backward on the initial weights
    model.zero_grad(set_to_none=True)
    logits, loss = mean_ce(model, tokens, targets)
    loss.backward()
    grads = {}
    for pname, p in model.named_parameters():
        grads[pname] = p.grad.detach().clone().contiguous()
    grad_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(v) for v in grads.values()]))
    print(f"   loss={loss.item():.6f} grad_norm={grad_norm.item():.6f} params={sum(v.numel() for v in grads.values())}")

    # greedy generation on the initial weights
    with torch.no_grad():
        gen = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=GEN_NEW_TOKENS,
                             do_sample=False, pad_token_id=0)
    assert gen.shape == (1, GEN_PROMPT_LEN + GEN_NEW_TOKENS), gen.shape
    manual, min_gap = greedy_manual(model, prompt, GEN_NEW_TOKENS)
    assert torch.equal(gen, manual), (gen, manual)
    print(f"   greedy={gen.tolist()} min top1-top2 logit gap={min_gap:.3g}")
    assert min_gap > 5e-3, "greedy argmax too close to a tie; pick another seed"

    # save the HF checkpoint (initial weights)
    model.zero_grad(set_to_none=True)
    model.save_pretrained(out, safe_serialization=True)
    for extra in ("generation_config.json",):
        if (out / extra).exists():
            (out / extra).unlink()  # not needed; keep the fixture dir minimal
    st_path = out / "model.safetensors"
    saved = load_file(str(st_path))
    with safe_open(str(st_path), "pt") as f:
        st_meta = f.metadata()
    print(f"   model.safetensors tensors ({len(saved)}): {sorted(saved)}  metadata={st_meta}")
    assert set(saved) == set(grads), (set(saved) ^ set(grads))
    sd = model.state_dict()
    for k, v in saved.items():
        assert v.dtype == torch.float32 and torch.equal(v, sd[k]), k
    reloaded = GPT2LMHeadModel.from_pretrained(out, attn_implementation="eager").eval()
    with torch.no_grad():
        assert torch.equal(reloaded(input_ids=tokens).logits, logits.detach())

    if c["noprefix"]:
        npf = {}
        for k, v in saved.items():
            assert k.startswith("transformer."), k
            npf[k[len("transformer."):]] = v.contiguous()
        ctx = c["n_positions"]
        mask = torch.tril(torch.ones(ctx, ctx, dtype=torch.float32)).view(1, 1, ctx, ctx).contiguous()
        for i in range(c["n_layer"]):
            npf[f"h.{i}.attn.bias"] = mask.clone()
        save_file(npf, str(out / "model_noprefix.safetensors"), metadata={"format": "pt"})
        print(f"   model_noprefix.safetensors tensors ({len(npf)}): {sorted(npf)}")
        # check: loading it back (prefix restored, attn.bias skipped) gives the same logits
        back = load_file(str(out / "model_noprefix.safetensors"))
        m2 = build_model(c)
        sd2 = {"transformer." + k: v for k, v in back.items() if not k.endswith(".attn.bias")}
        missing, unexpected = m2.load_state_dict(sd2, strict=False)
        assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
        with torch.no_grad():
            assert torch.equal(m2(input_ids=tokens).logits, logits.detach())

    # training: 10 AdamW steps on the same batch, starting from the initial weights
    tm = init_model
    tm.train()  # dropout is 0, so identical to eval
    assert tm.lm_head.weight is tm.transformer.wte.weight
    decay = [p for _, p in tm.named_parameters() if p.dim() >= 2]
    no_decay = [p for _, p in tm.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": TRAIN["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=TRAIN["lr"], betas=(TRAIN["beta1"], TRAIN["beta2"]), eps=TRAIN["eps"],
        foreach=False, fused=False)
    losses, norms = [], []
    for step in range(TRAIN["steps"]):
        opt.zero_grad(set_to_none=True)
        _, l = mean_ce(tm, tokens, targets)
        losses.append(l.detach().clone())
        l.backward()
        n = torch.nn.utils.clip_grad_norm_(tm.parameters(), TRAIN["grad_clip"])
        norms.append(n.detach().clone().to(torch.float32))
        opt.step()
    train_losses = torch.stack(losses).to(torch.float32).contiguous()
    train_norms = torch.stack(norms).to(torch.float32).contiguous()
    assert torch.equal(train_losses[0], loss.detach()), (train_losses[0], loss)
    assert torch.allclose(train_norms[0], grad_norm, rtol=1e-5)
    print(f"   train_losses={[round(x, 6) for x in train_losses.tolist()]}")
    print(f"   train_norms ={[round(x, 6) for x in train_norms.tolist()]}")

    ref = {
        "tokens": tokens.to(torch.int32).contiguous(),
        "targets": targets.to(torch.int32).contiguous(),
        "logits": logits.detach().to(torch.float32).contiguous(),
        "loss": loss.detach().reshape(1).to(torch.float32).contiguous(),
        "train_losses": train_losses,
        "train_norms": train_norms,
        "gen_prompt": prompt.to(torch.int32).contiguous(),
        "gen_greedy": gen.to(torch.int32).contiguous(),
    }
    for k, v in grads.items():
        ref["grad." + k] = v.to(torch.float32).contiguous()
    meta = {
        "n_layer": c["n_layer"], "n_head": c["n_head"], "n_embd": c["n_embd"],
        "n_positions": c["n_positions"], "vocab_size": V, "B": B, "T": T,
        "lr": TRAIN["lr"], "beta1": TRAIN["beta1"], "beta2": TRAIN["beta2"], "eps": TRAIN["eps"],
        "weight_decay": TRAIN["weight_decay"], "grad_clip": TRAIN["grad_clip"],
        "train_steps": TRAIN["steps"], "gen_new_tokens": GEN_NEW_TOKENS,
        "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
        "tied_wte_name": "transformer.wte.weight", "seed": c["seed"],
        "torch_version": torch.__version__, "transformers_version": transformers.__version__,
    }
    meta = {k: str(v) for k, v in meta.items()}
    save_file(ref, str(out / "reference.safetensors"), metadata=meta)
    canonicalize_safetensors_header(out / "reference.safetensors")

    if c["llmc"]:
        for fname, dtype in (("model_v3.bin", "float32"), ("model_v5.bin", "bfloat16")):
            n, tensors = write_llmc(model, out / fname, dtype)
            check_llmc(out / fname, dtype, n, tensors)
            print(f"   {fname}: {n} params ({dtype})")

    # final re-read check of reference.safetensors
    with safe_open(str(out / "reference.safetensors"), "pt") as f:
        assert f.metadata() == meta
        keys = set(f.keys())
    assert keys == set(ref)
    back = load_file(str(out / "reference.safetensors"))
    for k, v in ref.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k], v), k


# --------------------------------------------------------------------------
# Tokenizer fixtures
# --------------------------------------------------------------------------

GPT2_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"

C_SNIPPET = """#include <stdio.h>

/* Compute the sum of an array. */
static int sum(const int *a, int n) {
    int s = 0;
    for (int i = 0; i < n; ++i) {
        s += a[i];  // accumulate
    }
    return s;
}

int main(void) {
\tint xs[] = {1, 2, 3, 42};
\tprintf("%d\\n", sum(xs, 4));
\treturn 0;
}
"""

PY_SNIPPET = '''import os


class Greeter:
    """Say hello."""

    def __init__(self, name: str = "world") -> None:
        self.name = name

    def greet(self):
        if self.name:
            return f"Hello, {self.name}!"
        else:
            raise ValueError('empty name')


if __name__ == "__main__":
    print(Greeter().greet())   
'''

LONG_PROSE = (
    "It was the best of times, it was the worst of times, it was the age of wisdom, "
    "it was the age of foolishness, it was the epoch of belief, it was the epoch of "
    "incredulity, it was the season of Light, it was the season of Darkness, it was "
    "the spring of hope, it was the winter of despair."
)


def tokenizer_cases():
    """(name, text) for plain encoding. Text is str (UTF-8 encoded for the file)."""
    cases = [
        ("empty", ""),
        ("single_byte_a", "a"),
        ("single_byte_nul", "\x00"),
        ("single_space", " "),
        ("single_newline", "\n"),
        ("hello_world", "Hello world"),
        ("hello_world_lower", "hello world"),
        ("hello_world_space_excl", " Hello World!"),
        ("two_newlines", "\n\n"),
        ("prose_fox", "The quick brown fox jumps over the lazy dog."),
        ("prose_punct", "“Well,” she said — pausing… (briefly) — ‘it’s fine; isn't it?’ [yes] {no} <maybe>"),
        ("prose_multiline", "First line.\nSecond line, with a comma.\n\nNew paragraph here!\n"),
        ("prose_long", LONG_PROSE),
        ("code_c", C_SNIPPET),
        ("code_python", PY_SNIPPET),
        ("code_makefile_tabs", "all: main\n\tcc -O2 -o main main.c\n\n\t\t@echo done\n"),
        ("code_json", '{"key": [1, 2, 3], "nested": {"a": null, "b": true}, "s": "x\\ty"}'),
        ("markdown", "# Title\n\n- item 1\n- item 2\n\n```\ncode  block\n```\n"),
        ("url_email", "https://example.com/path?q=1&x=y#frag user@example.org"),
    ]
    for n in range(1, 11):
        cases.append((f"spaces_only_{n}", " " * n))
    for n in range(1, 11):
        cases.append((f"spaces_between_{n}", "a" + " " * n + "b"))
    cases += [
        ("spaces_leading_word", "   leading spaces"),
        ("spaces_trailing", "trailing spaces   "),
        ("space_before_newline", "hello \nworld  \n  indented\n"),
        ("indent_8_return", "        return x"),
        ("crlf", "line1\r\nline2\r\n\r\nline4\r\n"),
        ("lone_cr", "a\rb\r\r c"),
        ("tabs", "\tx\t\ty\t"),
        ("tabs_spaces_mixed", " \t \t  x \t\n"),
        ("newline_runs", "a\n\n\nb\n\n\n\n\nc\n"),
        ("whitespace_only_mixed", " \n \n\t\n"),
        ("vt_ff", "a\x0bb\x0cc \x0b\x0c d"),
        ("ascii_controls", "\x01\x02\x1b[0m\x7f"),
        ("info_separators_1c_1f", "a\x1cb \x1dc\x1e\x1fd"),
        ("trailing_whitespace_end", "end\n\n\n   "),
        ("numbers_mixed", "In 2024, 3.14159 and 1,000,000 people; 42nd, 1st, -7e-3."),
        ("long_digits", "12345678901234567890123456789012345678901234567890"),
        ("digits_leading_zeros", " 007 0 00 000 0000"),
        ("contractions_lower", "don't we'll she'd I'm you're they've it's"),
        ("contractions_upper", "DON'T WE'LL SHE'D I'M YOU'RE THEY'VE IT'S"),
        ("contractions_mixed", "I'M She'd We'Ll You'Re dOn'T"),
        ("apostrophe_edges", "'s 's''ll ''' ' x' 'tis rock'n'roll"),
        ("accented_latin", "Café naïve résumé coöperate Ångström façade jalapeño Zürich Łódź ÆØÅ"),
        ("cyrillic", "Привет, мир! Съешь же ещё этих мягких французских булок."),
        ("greek", "Γειά σου Κόσμε· ξεσκεπάζω την ψυχοφθόρα βδελυγμία."),
        ("cjk_chinese", "你好，世界！我们今天去公园。"),
        ("cjk_japanese", "こんにちは世界、カタカナとひらがな。東京タワー"),
        ("korean", "안녕하세요 세계"),
        ("arabic", "مرحبا بالعالم، كيف حالك؟"),
        ("hebrew", "שלום עולם! מה שלומך?"),
        ("devanagari", "नमस्ते दुनिया, आप कैसे हैं?"),
        ("thai", "สวัสดีชาวโลก ภาษาไทย"),
        ("emoji_basic", "Hello 😀🎉🚀 world"),
        ("emoji_space_prefix", " 😀"),
        ("emoji_skin_tones", "👍🏽 👋🏿 🧑🏻‍💻"),
        ("emoji_flags", "🇺🇸🇫🇷🇯🇵 🏳️‍🌈"),
        ("emoji_zwj_family", "👨‍👩‍👧‍👦"),
        ("nbsp", "100\u00a0km and\u00a0more \u00a0x"),
        ("ideographic_space", "東京\u3000大阪 \u3000x"),
        ("thin_narrow_spaces", "1\u2009000 and 10\u202f000 \u2009y"),
        ("unicode_spaces_misc", "a\u2003b\u2002c\u205fd\u1680e"),
        ("unicode_line_separators", "a\u0085b\u2028c\u2029d"),
        ("zero_width", "a\u200bb\u200cc\u200dd\ufeffe"),
        ("combining_marks", "e\u0301 a\u0308 n\u0303o Z\u0324\u0308a\u032el\u0336g\u0337o"),
        ("mixed_scripts", "Hello мир 世界 123 αβγ! שלום"),
        ("math_alnum", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛 ∑∫√∞ ≠ ≤"),
        ("unicode_digits", "٣٤٥ ४५६ ①②③ ½ Ⅻ"),
        ("letter_modifiers", "ǅ ʰ ˈ ß ẞ ﬁ ŉ"),
        ("punct_runs", "!!!??? ... --- *** ### @@@ $$$ %%% ^^^ ~~~"),
        ("identifiers_versions", "GPT2 gpt-2 v1.0.3 x86_64 iPhone15Pro __init__"),
        ("repeated_char", "a" * 40),
        ("long_word", "Pneumonoultramicroscopicsilicovolcanoconiosis"),
        ("endoftext_in_prose", f"The end.{EOT}The beginning."),
        ("endoftext_alone", EOT),
        ("endoftext_spaced", f"a {EOT} b"),
    ]
    return cases


SPECIAL_CASES = [
    ("special_alone", EOT),
    ("special_in_prose", f"Hello{EOT}world"),
    ("special_spaced", f"a {EOT} b"),
    ("special_twice", EOT + EOT),
    ("special_newlines", f"text\n{EOT}\nmore"),
    ("special_doc_boundary", f"First document.\n\n{EOT}Second document."),
]

# Invalid UTF-8 (raw bytes). Only cases where tiktoken's _encode_bytes agrees
# with the "invalid byte behaves like a U+FFFD symbol" model below are used.
BYTES_CASES = [
    ("invalid_ff", b"\xff"),
    ("invalid_ff_prefix", b"\xff hello world"),
    ("invalid_ff_middle", b"hello \xff world"),
    ("invalid_ff_suffix", b"hello world \xff"),
    ("invalid_lone_continuation", b"hello\x80\x80 world"),
    ("invalid_truncated_2byte_end", b"hello world\xc3"),
    ("invalid_truncated_3byte_end", b"abc\xe2\x82"),
    ("invalid_truncated_emoji", b"x\xf0\x9f\x98y"),
    ("invalid_truncated_emoji_space", b"x \xf0\x9f\x98"),
    ("invalid_bad_continuation", b"\xc3( x"),
    ("invalid_surrogate", b"caf\xc3\xa9 \xed\xa0\x80 ok"),
    ("invalid_overlong", b"a\xc0\xafb"),
    ("invalid_above_max", b"x\xf4\x90\x80\x80 y"),
    ("invalid_all_bytes_80_ff", bytes(range(0x80, 0x100))),
]

_PAT_RE = regex.compile(GPT2_PAT)


def _valid_char_len(b, i):
    """Length of the valid UTF-8 character starting at b[i], or None."""
    for n in (1, 2, 3, 4):
        seg = b[i:i + n]
        if len(seg) < n:
            return None
        try:
            ch = seg.decode("utf-8")
        except UnicodeDecodeError:
            continue
        return n if len(ch) == 1 else None
    return None


def _lossy_spans(b):
    """Decode b as UTF-8, each maximal invalid subpart -> U+FFFD (as Python's
    'replace' / Rust's from_utf8_lossy). Returns (str, byte span per char)."""
    chars, spans, i = [], [], 0
    while i < len(b):
        n = _valid_char_len(b, i)
        if n is None:
            n = 1
            for k in (3, 2):
                if b[i:i + k].decode("utf-8", "replace") == "\ufffd":
                    n = k
                    break
            chars.append("\ufffd")
        else:
            chars.append(b[i:i + n].decode("utf-8"))
        spans.append((i, i + n))
        i += n
    return "".join(chars), spans


def model_encode_bytes(enc, b):
    s, spans = _lossy_spans(b)
    out = []
    for m in _PAT_RE.finditer(s):
        a, z = spans[m.start()][0], spans[m.end() - 1][1]
        out += enc._encode_single_piece(b[a:z])
    return out


def build_tokenizers(data):
    tokdir = data / "gpt2-tokenizer"
    enc_json, vocab_bpe = tokdir / "encoder.json", tokdir / "vocab.bpe"
    assert enc_json.is_file() and vocab_bpe.is_file(), f"missing GPT-2 BPE files under {tokdir}"
    ranks = data_gym_to_mergeable_bpe_ranks(vocab_bpe_file=str(vocab_bpe), encoder_json_file=str(enc_json))
    tk = tiktoken.Encoding(name="gpt2_local", pat_str=GPT2_PAT, mergeable_ranks=ranks,
                           special_tokens={EOT: 50256}, explicit_n_vocab=50257)
    # transformers 4.x: vocab_file/merges_file. transformers 5.x silently ignores
    # those (empty vocab) and wants vocab=/merges= instead.
    hf = GPT2TokenizerFast(vocab_file=str(enc_json), merges_file=str(vocab_bpe))
    how = "vocab_file/merges_file"
    if len(hf) != 50257 or hf.encode("Hello world", add_special_tokens=False) != [15496, 995]:
        vocab = json.loads(enc_json.read_text(encoding="utf-8"))
        lines = vocab_bpe.read_text(encoding="utf-8").split("\n")
        merges = [tuple(l.split(" ")) for l in lines[1:] if l.strip()]
        hf = GPT2TokenizerFast(vocab=vocab, merges=merges)
        how = "vocab=/merges= (vocab_file/merges_file ignored by this transformers)"
    assert len(hf) == 50257
    print(f"   HF tokenizer built with {how}")
    return tk, hf


def hf_encode(hf, text, special):
    return list(hf.encode(text, add_special_tokens=False, split_special_tokens=not special))


def write_tsv(path, rows):
    names = [r[0] for r in rows]
    assert len(names) == len(set(names)), "duplicate case names"
    with open(path, "w", encoding="ascii", newline="\n") as f:
        for name, raw, ids in rows:
            assert regex.fullmatch(r"[a-z0-9_]+", name), name
            f.write(f"{name}\t{raw.hex()}\t{' '.join(str(i) for i in ids)}\n")


def make_tokenizer_fixtures(data, outroot):
    print("== tokenizer")
    tk, hf = build_tokenizers(data)
    facts = [("Hello world", [15496, 995]), ("hello world", [31373, 995]),
             (" Hello World!", [18435, 2159, 0]), ("\n\n", [628])]
    for text, ids in facts:
        assert tk.encode_ordinary(text) == ids, (text, tk.encode_ordinary(text))
        assert hf_encode(hf, text, False) == ids, (text, hf_encode(hf, text, False))

    disagreements = []
    rows = []
    for name, text in tokenizer_cases():
        t_ids = tk.encode_ordinary(text)
        h_ids = hf_encode(hf, text, special=False)
        if t_ids != h_ids:
            disagreements.append((name, text, t_ids, h_ids))
        raw = text.encode("utf-8")
        assert tk.decode_bytes(t_ids) == raw, name
        assert 50256 not in t_ids, name
        rows.append((name, raw, t_ids))
    write_tsv(outroot / "tokenizer_cases.tsv", rows)
    print(f"   tokenizer_cases.tsv: {len(rows)} cases")

    srows = []
    for name, text in SPECIAL_CASES:
        t_ids = tk.encode(text, allowed_special="all")
        h_ids = hf_encode(hf, text, special=True)
        if t_ids != h_ids:
            disagreements.append((name, text, t_ids, h_ids))
        assert 50256 in t_ids and tk.decode_bytes(t_ids) == text.encode("utf-8")
        srows.append((name, text.encode("utf-8"), t_ids))
    write_tsv(outroot / "tokenizer_special.tsv", srows)
    print(f"   tokenizer_special.tsv: {len(srows)} cases")

    if hasattr(tk, "_encode_bytes"):
        brows = []
        for name, b in BYTES_CASES:
            try:
                b.decode("utf-8")
                raise AssertionError(f"{name} is valid UTF-8")
            except UnicodeDecodeError:
                pass
            t_ids = tk._encode_bytes(b)
            m_ids = model_encode_bytes(tk, b)
            assert t_ids == m_ids, (name, b, t_ids, m_ids)
            assert tk.decode_bytes(t_ids) == b, name
            brows.append((name, b, t_ids))
        write_tsv(outroot / "tokenizer_bytes.tsv", brows)
        print(f"   tokenizer_bytes.tsv: {len(brows)} cases")
    else:
        print("   tiktoken has no _encode_bytes: tokenizer_bytes.tsv skipped")

    if disagreements:
        print("   !! HF and tiktoken DISAGREE (tiktoken ids written):")
        for name, text, t_ids, h_ids in disagreements:
            print(f"      {name}: {text!r}\n         tiktoken={t_ids}\n         hf      ={h_ids}")
    else:
        print("   HF and tiktoken agree on every case")
    return disagreements


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("GPT2C_DATA", str(REPO.parent / "shared" / "data")))
    ap.add_argument("--out", default=str(REPO / "tests" / "fixtures"))
    ap.add_argument("--only", choices=("model", "tokenizer", "all"), default="all")
    args = ap.parse_args()

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"safetensors {safetensors.__version__}, tiktoken {tiktoken.__version__}, numpy {np.__version__}")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.only in ("model", "all"):
        for name, c in CONFIGS.items():
            make_model_fixtures(name, c, out)
    if args.only in ("tokenizer", "all"):
        make_tokenizer_fixtures(Path(args.data), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
