#!/usr/bin/env python3
"""Compare two `gpt2c train --log` JSONL files (fp32, bf16): print a markdown
table (loss every 20 steps, 20-step means, validation losses, the largest
relative gaps) and write an SVG plot of both curves.  Standard library only.
Usage: bf16_loss_plot.py fp32.jsonl bf16.jsonl out.svg"""
import json
import sys


def read(path):
    train, val = {}, {}
    with open(path) as f:
        for line in f:
            o = json.loads(line)
            if "loss" in o:
                train[o["step"]] = o["loss"]
            elif "val_loss" in o:
                val[o["step"]] = o["val_loss"]
    return train, val


def means(d, w):
    steps = sorted(d)
    return {s: sum(d[t] for t in steps if s - w < t <= s) / min(w, s + 1) for s in steps if (s + 1) % w == 0}


def svg(curves, path, w=720, h=400, pad=50):
    allv = [v for _, d, _ in curves for v in d.values()]
    allx = [x for _, d, _ in curves for x in d]
    x0, x1, y0, y1 = min(allx), max(allx), min(allv), max(allv)
    sx = lambda x: pad + (x - x0) / (x1 - x0 or 1) * (w - 2 * pad)
    sy = lambda y: h - pad - (y - y0) / (y1 - y0 or 1) * (h - 2 * pad)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<line x1="{pad}" y1="{h-pad}" x2="{w-pad}" y2="{h-pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h-pad}" stroke="black"/>',
           f'<text x="{w/2}" y="{h-12}" text-anchor="middle">step</text>',
           f'<text x="14" y="{h/2}" transform="rotate(-90 14 {h/2})" text-anchor="middle">training loss</text>',
           f'<text x="{w/2}" y="22" text-anchor="middle">tinyshakespeare, 200 steps: fp32 vs bf16 (gpt2c --precision)</text>']
    for i in range(6):
        y = y0 + (y1 - y0) * i / 5
        out.append(f'<text x="{pad-6}" y="{sy(y)+4:.1f}" text-anchor="end">{y:.2f}</text>')
        x = x0 + (x1 - x0) * i / 5
        out.append(f'<text x="{sx(x):.1f}" y="{h-pad+16}" text-anchor="middle">{x:.0f}</text>')
    for k, (name, d, style) in enumerate(curves):
        pts = " ".join(f"{sx(x):.1f},{sy(d[x]):.1f}" for x in sorted(d))
        out.append(f'<polyline fill="none" points="{pts}" {style}/>')
        out.append(f'<line x1="{w-pad-150}" y1="{pad+10+18*k}" x2="{w-pad-120}" y2="{pad+10+18*k}" {style}/>')
        out.append(f'<text x="{w-pad-114}" y="{pad+14+18*k}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    (f32, v32), (b16, v16) = read(sys.argv[1]), read(sys.argv[2])
    steps = sorted(set(f32) & set(b16))
    rel = {s: abs(b16[s] - f32[s]) / f32[s] for s in steps}
    m32, m16 = means(f32, 20), means(b16, 20)
    mrel = {s: abs(m16[s] - m32[s]) / m32[s] for s in m32 if s in m16}
    print("| step | fp32 loss | bf16 loss | rel. gap | fp32 20-step mean | bf16 20-step mean | rel. gap |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for s in steps:
        if (s + 1) % 20 == 0 or s == 0:
            m = f"{m32[s]:.4f} | {m16[s]:.4f} | {100 * mrel[s]:.4f}%" if s in mrel else "| |"
            print(f"| {s + 1} | {f32[s]:.4f} | {b16[s]:.4f} | {100 * rel[s]:.4f}% | {m} |")
    for s in sorted(set(v32) & set(v16)):
        print(f"| val @ {s} | {v32[s]:.4f} | {v16[s]:.4f} | {100 * abs(v16[s] - v32[s]) / v32[s]:.4f}% | | | |")
    worst = max(rel, key=rel.get)
    print(f"\n{len(steps)} steps; largest per-step gap {100 * rel[worst]:.4f}% (step {worst + 1}), "
          f"largest 20-step-mean gap {100 * max(mrel.values()):.4f}%; "
          f"final loss fp32 {f32[steps[-1]]:.4f}, bf16 {b16[steps[-1]]:.4f}")
    svg([("fp32", f32, 'stroke="#1f77b4" stroke-width="1.5"'),
         ("bf16", b16, 'stroke="#d62728" stroke-width="1.5" stroke-dasharray="4,3"')], sys.argv[3])
    print(f"plot: {sys.argv[3]}")


if __name__ == "__main__":
    main()
