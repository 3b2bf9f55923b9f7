#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Turns `aic100-compile --run K --profile FILE.json` profiles into Markdown
and per-layer charts.

Prints one summary table over all the files (inferences per second, where
the host threads' time went, the GEMMs' GOP/s against the MMI8 ceiling),
then per configuration its threads and its layers (or stages, with
--by-stage), in ms per inference summed over the host threads. Writes one
SVG per configuration: layers down the side, ms per inference stacked by
kind of work. Standard library only.

    bench/engine_profile.py [--out DIR] [--by-stage] [--ceiling GOPS] FILE.json...
"""
import argparse
import json
import os
import sys

KINDS = ("gemm", "move", "elementwise", "wait", "other")
COLORS = {"gemm": "#4e79a7", "move": "#f28e2b", "elementwise": "#e15759", "wait": "#76b7b2", "other": "#bab0ac"}
CEILING_GOPS = 410.0  # MMI8 alone, one thread (docs/nsp.md)


def per_inference(d):
    return 1.0 / d["inferences"] if d["inferences"] else 0.0


def ms(d, t, kind):
    return t.get(kind, 0.0) * per_inference(d) * 1e3


def gops(d, macs, gemm_seconds):
    s = gemm_seconds * per_inference(d)
    return 2.0 * macs / s / 1e9 if s > 0 else None


def name_of(d):
    return f"{d['resolution']}×{d['resolution']}, {d['nsps']} NSP{'s' if d['nsps'] != 1 else ''}"


def stem_of(d):
    return f"profile-{d['resolution']}-{d['nsps']}nsp"


def stages(layers):
    """Layers merged by the part of their name before the first dot."""
    out = {}
    for layer in layers:
        key = layer["name"].split(".")[0]
        s = out.setdefault(key, {"name": key, "macs": 0, "gemm_macs": 0, **{k: 0.0 for k in KINDS}})
        for k in ("macs", "gemm_macs") + KINDS:
            s[k] += layer.get(k, 0)
    return list(out.values())


def fmt(v, digits=2):
    return "–" if v is None else f"{v:.{digits}f}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def summary(profiles, ceiling):
    rows = []
    for d in profiles:
        t = d["totals"]
        total = sum(t[k] for k in KINDS)
        share = {k: 100.0 * t[k] / total if total else 0.0 for k in KINDS}
        g = gops(d, t["gemm_macs"], t["gemm"])
        rows.append([name_of(d), d["host_threads"], fmt(d["inferences_per_s"], 1),
                     fmt(d["seconds"] / d["inferences"] * 1e3)]
                    + [f"{share[k]:.0f} %" for k in KINDS]
                    + [fmt(g, 0), fmt(100.0 * g / ceiling if g else None, 0) + " %"])
    return table(["configuration", "host threads", "inf/s", "ms/inf (wall)"] + list(KINDS)
                 + ["GEMM GOP/s per thread", f"of {ceiling:.0f}"], rows)


def threads_table(d):
    rows = []
    for t in d["threads"]:
        p = per_inference(d) * 1e3
        rows.append([t["thread"], " ".join(str(k) for k in t["nsps"]), fmt(t["wall"] * p), fmt(t["cpu"] * p),
                     fmt(t["idle"] * p)] + [fmt(ms(d, t, k)) for k in KINDS])
    return table(["thread", "NSPs", "wall", "on a CPU", "asleep, all cores blocked"] + list(KINDS), rows)


def layers_table(d, layers):
    rows = []
    for layer in layers:
        total = sum(layer[k] for k in KINDS)
        if total <= 0:
            continue
        g = gops(d, layer["gemm_macs"], layer["gemm"])
        rows.append([layer["name"], fmt(layer["macs"] / 1e6, 1)] + [fmt(ms(d, layer, k)) for k in KINDS]
                    + [fmt(total * per_inference(d) * 1e3), fmt(g, 0)])
    return table(["layer", "M MACs"] + list(KINDS) + ["total", "GEMM GOP/s"], rows)


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def nice_step(top):
    """The smallest of 1, 2, 5 × 10^e giving at most 10 ticks up to `top`."""
    for e in range(-6, 7):
        for m in (1, 2, 5):
            if top / (m * 10.0 ** e) <= 10:
                return m * 10.0 ** e
    return top


def svg(d, layers):
    """Horizontal stacked bars: one per layer, ms per inference by kind."""
    rows = [(layer["name"], [ms(d, layer, k) for k in KINDS]) for layer in layers
            if sum(layer[k] for k in KINDS) > 0]
    left, top, bar, width = 170, 60, 14, 620
    height = top + bar * len(rows) + 50
    biggest = max((sum(v) for _, v in rows), default=1.0) or 1.0
    scale = width / biggest
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="18" font-size="14">{esc(name_of(d))}: ms per inference, summed over '
           f'{d["host_threads"]} host thread{"s" if d["host_threads"] != 1 else ""} '
           f'({fmt(d["inferences_per_s"], 1)} inf/s)</text>']
    for i, k in enumerate(KINDS):
        out.append(f'<rect x="{left + i * 110}" y="30" width="12" height="12" fill="{COLORS[k]}"/>'
                   f'<text x="{left + i * 110 + 16}" y="40">{k}</text>')
    step = nice_step(biggest)
    tick = 0.0
    while tick <= biggest + 1e-12:
        x = left + tick * scale
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 40}" stroke="#ddd"/>'
                   f'<text x="{x:.1f}" y="{height - 26}" text-anchor="middle">{tick:g}</text>')
        tick += step
    out.append(f'<text x="{left + width / 2}" y="{height - 8}" text-anchor="middle">ms per inference</text>')
    for r, (name, vals) in enumerate(rows):
        y = top + r * bar
        out.append(f'<text x="{left - 6}" y="{y + bar - 3}" text-anchor="end">{esc(name)}</text>')
        x = float(left)
        for k, v in zip(KINDS, vals):
            if v > 0:
                out.append(f'<rect x="{x:.2f}" y="{y + 1}" width="{v * scale:.2f}" height="{bar - 2}" '
                           f'fill="{COLORS[k]}"><title>{esc(name)} {k}: {v:.3f} ms</title></rect>')
                x += v * scale
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", metavar="FILE.json")
    ap.add_argument("--out", help="folder of the SVGs (default: each JSON's own)")
    ap.add_argument("--by-stage", action="store_true", help="layers merged by the first part of their name")
    ap.add_argument("--ceiling", type=float, default=CEILING_GOPS, help="MMI8 GOP/s of one thread")
    a = ap.parse_args()
    profiles = []
    for path in a.files:
        with open(path) as f:
            d = json.load(f)
        d["_dir"] = a.out or os.path.dirname(os.path.abspath(path))
        profiles.append(d)
    profiles.sort(key=lambda d: (-d["resolution"], d["nsps"]))
    print("Where the host threads' time goes (shares of their summed time):\n")
    print(summary(profiles, a.ceiling))
    for d in profiles:
        layers = stages(d["layers"]) if a.by_stage else d["layers"]
        print(f"\n### {name_of(d)}\n\n{d['inferences']} inferences, {fmt(d['inferences_per_s'], 1)}/s; "
              "ms per inference.\n")
        print(threads_table(d))
        print()
        print(layers_table(d, layers))
        os.makedirs(d["_dir"], exist_ok=True)
        path = os.path.join(d["_dir"], stem_of(d) + ".svg")
        with open(path, "w") as f:
            f.write(svg(d, layers))
        print(f"\n![{name_of(d)}]({os.path.basename(path)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
