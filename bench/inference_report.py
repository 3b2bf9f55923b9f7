# SPDX-License-Identifier: GPL-2.0-or-later
"""ResNet-50 int8 in one bench/run folder, and the targets of
docs/benchmarks.md: the card's engine (host.json's networks) against ONNX
Runtime on as many host threads (ort-RES.json), the same network through
the driver in each guest (inference-CONFIG.txt), the 4 KiB request
targets from the guests' JSON. Used by bench/report.py."""
import json
import os
import re

# Targets of issues 26 and 40 (docs/benchmarks.md): (resolution, engine /
# ONNX Runtime on the same threads), and the share of MMI8's ceiling the
# engine reaches (at 64 reported only).
ENGINE_TO_ORT = {224: 0.8, 64: 1.0}
MMI8_CEILING = {224: 0.70}
GUEST_TO_ENGINE = 0.8
FOUR_DBCS_TO_ONE = 1.5
ONE_MSI_TO_NVME = 2.0


def _ratio(a, b):
    return a / b if a is not None and b else None


def _fmt(v, digits=2):
    return "–" if v is None else f"{v:.{digits}f}"


def networks(host):
    """host.json's ResNet-50 runs, one entry per resolution (older runs
    had one network under "network")."""
    nets = host.get("networks")
    if nets is None:
        nets = [host["network"]] if host.get("network") else []
    return [n for n in nets if n.get("runs")]


def resolution_of(name):
    m = re.search(r"(\d+)$", name or "")
    return int(m.group(1)) if m else None


def load_ort(d, resolution):
    path = os.path.join(d, f"ort-{resolution}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def guest_rates(d):
    """{config: {resolution: figures}} from the guests' aic100-run lines and
    the engine alone on the host right after each guest."""
    out = {}
    for name in sorted(os.listdir(d)):
        m = re.fullmatch(r"inference-(.+)\.txt", name)
        if not m:
            continue
        with open(os.path.join(d, name)) as f:
            for line in f:
                r = re.search(r"^(\S+)\s+(ok|FAIL) \(qpc\).*\(([\d.]+)/s\)", line)
                if r:
                    res = 64 if r.group(1).endswith("-r64") else 224
                    out.setdefault(m.group(1), {}).setdefault(res, {}).update(
                        inf_per_s=float(r.group(3)), outputs_ok=r.group(2) == "ok")
                e = re.search(r"^engine alone, \S+, (\d+): interpreter: .*\(([\d.]+)/s\)", line)
                if e:
                    out.setdefault(m.group(1), {}).setdefault(int(e.group(1)), {})["engine_after"] = \
                        float(e.group(2))
    return out


def figures(d, host, guests):
    """Every ResNet-50 figure of the run, per resolution."""
    mmi8 = host.get("gemm", {}).get("nsp_mmi8_GOPs")
    by_guest = guest_rates(d)
    out = []
    for net in networks(host):
        res = resolution_of(net.get("name"))
        ort = load_ort(d, res) or {}
        ort_by_threads = {r["threads"]: r for r in ort.get("runs", [])}
        four = next((r for r in net["runs"] if r["nsps"] == 4), None)
        engine = []
        for r in net["runs"]:
            threads = r.get("nsp_threads") or min(r["nsps"], net.get("host_threads") or r["nsps"])
            o = ort_by_threads.get(threads, {})
            gops = 2 * net["macs"] * r["inf_per_s"] / 1e9
            engine.append({"nsps": r["nsps"], "threads": threads, "inf_per_s": r["inf_per_s"],
                           "ort_inf_per_s": o.get("inf_per_s"), "ratio_to_ort": _ratio(r["inf_per_s"], o.get("inf_per_s")),
                           "GOPs": gops, "mmi8_ceiling_GOPs": mmi8 * threads if mmi8 else None,
                           "fraction_of_mmi8": _ratio(gops, mmi8 * threads if mmi8 else None),
                           "outputs_ok": r.get("outputs_ok")})
        guest = {}
        for c, v in by_guest.items():
            g = v.get(res)
            if not g or "inf_per_s" not in g:
                continue
            # Against the engine measured right after the guest when the
            # run has it (the same load), else the host bench's.
            alone = g.get("engine_after") or (four and four["inf_per_s"])
            guest[c] = {**g, "engine_4_nsps": alone, "ratio_to_engine_4_nsps": _ratio(g["inf_per_s"], alone)}
        out.append({"resolution": res, "name": net.get("name"), "macs": net["macs"], "engine": engine,
                    "onnxruntime": ort.get("onnxruntime"), "ort": ort.get("runs", []),
                    "ort_layer_by_layer": ort.get("layer_by_layer"), "guest": guest})
    return out


def _outputs(o):
    if not o:
        return "–"
    top1 = all(x["top1_equal"] for x in o["outputs"])
    worst = max(x["max_diff"] for x in o["outputs"])
    return f"top-1 {'same' if top1 else 'DIFFERENT'}, logits ≤ {worst} apart"


def rows(figs):
    """Markdown: one table per resolution."""
    out = []
    for f in figs:
        lbl = f.get("ort_layer_by_layer")
        out.append(f"ResNet-50 int8 at {f['resolution']}×{f['resolution']} ({f['macs'] / 1e9:.2f} G MACs): the card's "
                   f"engine (its NSPs are host threads) against ONNX Runtime {f.get('onnxruntime') or '(not run)'} on "
                   "as many threads, and through the driver in each guest; inferences/s, best window:\n")
        out.append("| runs on | threads | inf/s | ratio | GOP/s (of the MMI8 ceiling) | outputs |")
        out.append("|---|---|---|---|---|---|")
        for e in f["engine"]:
            out.append(f"| card's engine, {e['nsps']} NSP(s) | {e['threads']} | {_fmt(e['inf_per_s'])} | "
                       f"{_fmt(e['ratio_to_ort'])} × ONNX Runtime | {_fmt(e['GOPs'], 0)} "
                       f"({_fmt(100 * e['fraction_of_mmi8'] if e['fraction_of_mmi8'] else None, 0)} %) | "
                       f"{'equal to the reference' if e['outputs_ok'] else 'WRONG'} |")
        for o in f["ort"]:
            out.append(f"| ONNX Runtime | {o['threads']} | {_fmt(o['inf_per_s'])} | 1 | "
                       f"{_fmt(2 * f['macs'] * o['inf_per_s'] / 1e9, 0)} | {_outputs(o)} |")
        for c, g in f["guest"].items():
            out.append(f"| guest ({c}), aic100-run, 4 NSPs | – | {_fmt(g['inf_per_s'])} | "
                       f"{_fmt(g['ratio_to_engine_4_nsps'])} × the engine alone "
                       f"({_fmt(g['engine_4_nsps'])}{', right after' if g.get('engine_after') else ''}) | – | "
                       f"{'checked, right' if g['outputs_ok'] else 'WRONG'} |")
        if lbl:
            out.append(f"\nEach layer fed the reference's own inputs, ONNX Runtime's outputs are at most "
                       f"{lbl['max_diff']} apart from the card's ({lbl['differing']} of {lbl['values']} values): "
                       "float32 scales and rounding half to even against the card's integer multiply, shift and "
                       "round half up (bench/ort_baseline.py).\n")
    return "\n".join(out)


def _target(what, value, goal):
    met = None if value is None or goal is None else value >= goal
    return {"target": what, "value": value, "goal": goal, "met": met}


def _engine_targets(f, host_threads):
    t = []
    goal = ENGINE_TO_ORT.get(f["resolution"])
    by_threads = {}
    for e in f["engine"]:
        if e["ratio_to_ort"] is not None:
            by_threads[e["threads"]] = max(by_threads.get(e["threads"], 0), e["ratio_to_ort"])
    for threads, r in sorted(by_threads.items()):
        t.append(_target(f"engine at {f['resolution']} / ONNX Runtime, {threads} thread(s) (best NSP count)", r, goal))
    rate = {e["nsps"]: e["inf_per_s"] for e in f["engine"]}
    if 4 in rate and 2 in rate and host_threads == 2:
        t.append(_target(f"engine at {f['resolution']}: 4 NSPs / 2 NSPs on this 2-thread host",
                         _ratio(rate[4], rate[2]), 1.0))
    for c, g in f["guest"].items():
        t.append(_target(f"guest ({c}) at {f['resolution']}: aic100-run / the engine alone, 4 NSPs",
                         g["ratio_to_engine_4_nsps"], GUEST_TO_ENGINE))
    best = max((e["fraction_of_mmi8"] for e in f["engine"] if e["fraction_of_mmi8"]), default=None)
    share = MMI8_CEILING.get(f["resolution"])
    t.append({**_target(f"engine at {f['resolution']}: fraction of the MMI8 ceiling"
                        + ("" if share else " (reported)"), best, share), "percent": True})
    return t


def targets(figs, guests, scaling, host_threads):
    t = []
    for f in figs:
        t += _engine_targets(f, host_threads)
    for c, s in scaling.items():
        four = next((r["card_scaling"] for r in (s or {}).get("runs", []) if r["submitters"] == 4), None)
        if four is not None:
            t.append(_target(f"4 KiB, {c}: 4 DBCs from 4 threads / 1 DBC", four, FOUR_DBCS_TO_ONE))
    for c, g in guests.items():
        if g.get("configuration", {}).get("msi_vectors") == 1:
            one = next((r for r in g.get("small", {}).get("card", []) if r["dbcs"] == 1), None)
            nvme = one and one.get("nvme_req_per_s", g["small"].get("nvme_req_per_s"))
            t.append(_target(f"4 KiB, {c}: one MSI, 1 DBC / QEMU's NVMe", _ratio(one and one["req_per_s"], nvme),
                             ONE_MSI_TO_NVME))
    return t


def target_rows(t):
    out = ["| target | measured | goal | |", "|---|---|---|---|"]
    for x in t:
        v, goal = x["value"], x["goal"]
        as_text = (lambda r: f"{100 * r:.0f} %") if x.get("percent") else (lambda r: f"{r:.2f}")
        shown = "–" if v is None else as_text(v)
        state = "reported" if goal is None else ("not measured" if x["met"] is None else
                                                 "met" if x["met"] else "**not met**")
        wanted = "–" if goal is None else "≥ " + (as_text(goal) if x.get("percent") else str(goal))
        out.append(f"| {x['target']} | {shown} | {wanted} | {state} |")
    return "\n".join(out)
