#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Turns one bench/run folder into its report.

Reads machine.txt, host.json (aic100-host-bench) and guest-CONFIG.json
(aic100-datapath-bench, one per configuration); prints Markdown tables, one
per configuration and named by what the guest saw (driver, kernel, MSI
vectors, IOMMU), every figure with its baseline from the same run and the
ratio; writes bench.json (all of it, ratios included) and bench.svg (DMA
bandwidth and request rate against transfer size: the card end to end, the
card's own copy, host memcpy as the limit, QEMU's NVMe as the request-rate
baseline).

    bench/report.py DIR
"""
import json
import os
import subprocess
import sys

import inference_report

SIZES_SHOWN = (4096, 1 << 20, 16 << 20, 64 << 20)


def size_name(n):
    if n >= 1 << 20:
        return f"{n >> 20} MiB"
    return f"{n >> 10} KiB"


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(v, unit="", digits=1):
    if v is None:
        return "–"
    return f"{v:.{digits}f}{unit}"


def fmt_ratio(r):
    return "–" if r is None else f"{r:.3g}"


def config_name(c):
    msi = c.get("msi_vectors", 0)
    return (f"driver {c.get('driver')}, kernel {c.get('kernel')}, "
            f"{msi} MSI vector{'s' if msi != 1 else ''}, IOMMU {'on' if c.get('iommu') else 'off'}")


def guest_rows(g, host):
    """Rows (benchmark, card, baseline, ratio) and their JSON of one guest run."""
    rows, figures = [], []
    memcpy = {r["size"]: r["MBps"] for r in host.get("memcpy", [])}
    for b in g.get("bulk", []):
        s = b["size"]
        mc = memcpy.get(s)
        for d, label in (("to_card", "to card"), ("from_card", "from card")):
            e2e = b.get(f"{d}_MBps")
            dev = b.get(f"{d}_device_copy_MBps")
            fig = {"what": f"bulk DMA {label}", "size": s, "MBps": e2e, "device_copy_MBps": dev,
                   "host_us": b.get(f"{d}_host_us"), "device_us": b.get(f"{d}_device_us"),
                   "host_memcpy_MBps": mc, "ratio_to_memcpy": ratio(e2e, mc),
                   "device_ratio_to_memcpy": ratio(dev, mc), "payload_ok": b.get("payload_ok")}
            figures.append(fig)
            if s not in SIZES_SHOWN:
                continue
            rows.append((f"bulk DMA {label}, {size_name(s)}, end to end "
                         f"({fmt(b.get(f'{d}_host_us'), ' µs')} per EXECUTE_BO + WAIT_BO)",
                         fmt(e2e, " MB/s"), f"host memcpy {fmt(mc, ' MB/s')}", fmt_ratio(ratio(e2e, mc))))
            rows.append((f"… the card's own copy ({fmt(b.get(f'{d}_device_us'), ' µs')} per DMA request on the card)",
                         fmt(dev, " MB/s"), f"host memcpy {fmt(mc, ' MB/s')}", fmt_ratio(ratio(dev, mc))))
    small = g.get("small", {})
    for r in small.get("card", []):
        n = r["dbcs"]
        rate = r["req_per_s"]
        # The baseline: the NVMe with as many submitting threads (a run
        # from before that had only one thread of it: that one).
        nvme = r.get("nvme_req_per_s", small.get("nvme_req_per_s") if n == 1 else None)
        nvme_us = n / nvme * 1e6 if nvme else None
        label = ("1 DBC, one at a time" if n == 1 else
                 f"{n} DBCs in parallel, a thread each (in all; {r['req_per_s_per_dbc']:.0f} per DBC)")
        parts = [r.get("submit_us"), r.get("doorbell_us"), r.get("device_us")]
        # The rate is the best window's (bench/datapath_bench.cc); the
        # times per request are averages over every window, so they add
        # up against the mean of all windows.
        # The card's doorbell wait and its work overlap EXECUTE_BO's
        # return: they are shown, not subtracted.
        mean = r.get("mean_req_per_s")
        mean_us = n / mean * 1e6 if mean else r["us"]
        rest = mean_us - parts[0] if parts[0] is not None else None
        rows.append((f"4 KiB requests, {label}; best window, {fmt(r['us'], ' µs')} each per DBC. Over all windows "
                     f"{fmt(mean_us, ' µs')} each: EXECUTE_BO {fmt(parts[0], ' µs')}, then WAIT_BO and the loop "
                     f"{fmt(rest, ' µs')}; on the card's clock, doorbell to fetch {fmt(parts[1], ' µs')} and "
                     f"{fmt(parts[2], ' µs')} of work",
                     f"{rate:.0f} req/s",
                     f"NVMe (null-co), {n} thread{'s' if n > 1 else ''}, {fmt(nvme, ' req/s', 0)}, "
                     f"{fmt(nvme_us, ' µs')} each per thread",
                     fmt_ratio(ratio(rate, nvme))))
        figures.append({"what": "4 KiB requests", "dbcs": n, "req_per_s_per_dbc": r["req_per_s_per_dbc"],
                        "req_per_s": rate, "us": r["us"], "device_us": r.get("device_us"),
                        "submit_us": r.get("submit_us"), "doorbell_us": r.get("doorbell_us"),
                        "after_execute_us": rest, "nvme_threads": n if nvme else None,
                        "nvme_req_per_s": nvme, "ratio_to_nvme": ratio(rate, nvme),
                        "payload_ok": r.get("payload_ok")})
    blas = {e["name"]: e["openblas_inf_per_s"] for e in host.get("examples", [])}
    for w in g.get("workloads", []):
        b = blas.get(w["name"])
        rows.append((f"{w['name']} (example workload, pipelined; outputs {'right' if w['outputs_ok'] else 'WRONG'})",
                     fmt(w["inf_per_s"], " inf/s"), f"OpenBLAS, 1 thread {fmt(b, ' inf/s')}",
                     fmt_ratio(ratio(w["inf_per_s"], b))))
        figures.append({"what": "example workload", "name": w["name"], "inf_per_s": w["inf_per_s"],
                        "openblas_inf_per_s": b, "ratio_to_openblas": ratio(w["inf_per_s"], b),
                        "outputs_ok": w["outputs_ok"]})
    rec = g.get("recovery", {})
    if rec.get("ssr_ms") or rec.get("reset_ms"):
        rows.append(("crashed workload back to a correct inference", f"SSR {fmt(rec.get('ssr_ms'), ' ms')}",
                     f"card reset + reload {fmt(rec.get('reset_ms'), ' ms')}",
                     fmt_ratio(ratio(rec.get("reset_ms"), rec.get("ssr_ms"))) + " (reset / SSR)"))
        figures.append({"what": "recovery", **rec, "ratio_reset_to_ssr": ratio(rec.get("reset_ms"), rec.get("ssr_ms"))})
    return rows, figures


def side_by_side(guests, host):
    """One row per key figure, one column per configuration: value (ratio)."""
    memcpy = {r["size"]: r["MBps"] for r in host.get("memcpy", [])}
    blas = {e["name"]: e["openblas_inf_per_s"] for e in host.get("examples", [])}
    cells = {}

    def put(row, name, v, r):
        cells.setdefault(row, {})[name] = f"{v} ({fmt_ratio(r)})"

    for name, g in guests.items():
        for b in g.get("bulk", []):
            if b["size"] not in (1 << 20, 16 << 20):
                continue
            mc = memcpy.get(b["size"])
            sz = size_name(b["size"])
            put(f"DMA to card {sz}, end to end, MB/s (× host memcpy)", name, fmt(b.get("to_card_MBps")),
                ratio(b.get("to_card_MBps"), mc))
            put(f"DMA to card {sz}, the card's copy, MB/s (× host memcpy)", name,
                fmt(b.get("to_card_device_copy_MBps")), ratio(b.get("to_card_device_copy_MBps"), mc))
        small = g.get("small", {})
        for r in small.get("card", []):
            n = r["dbcs"]
            nvme = r.get("nvme_req_per_s", small.get("nvme_req_per_s") if n == 1 else None)
            put(f"4 KiB requests, {n} DBC(s) from {n} thread(s), req/s in all (× NVMe null-co, {n} thread(s))",
                name, f"{r['req_per_s']:.0f}", ratio(r["req_per_s"], nvme))
        for w in g.get("workloads", []):
            put(f"{w['name']}, inf/s (× OpenBLAS, 1 thread)", name, fmt(w["inf_per_s"]),
                ratio(w["inf_per_s"], blas.get(w["name"])))
        rec = g.get("recovery", {})
        put("crashed workload back: SSR ms (card reset / SSR)", name, fmt(rec.get("ssr_ms")),
            ratio(rec.get("reset_ms"), rec.get("ssr_ms")))
    names = list(guests)
    out = ["| figure | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for row, byname in cells.items():
        out.append(f"| {row} | " + " | ".join(byname.get(n, "–") for n in names) + " |")
    return "\n".join(out)


def scaling_figures(g):
    """4 KiB requests from 1, 2, 4 submitters: the card (a DBC each) and the
    NVMe (a thread each), each against its own single submitter, and the
    card against the NVMe with as many. None without such figures."""
    small = g.get("small", {})
    card = {r["dbcs"]: r["req_per_s"] for r in small.get("card", [])}
    nvme = {r["threads"]: r["req_per_s"] for r in small.get("nvme", [])}
    if not nvme or 1 not in card:
        return None
    runs = []
    for n in sorted(set(card) | set(nvme)):
        c, v = card.get(n), nvme.get(n)
        runs.append({"submitters": n, "card_req_per_s": c, "card_scaling": ratio(c, card.get(1)),
                     "nvme_req_per_s": v, "nvme_scaling": ratio(v, nvme.get(1)), "card_to_nvme": ratio(c, v)})
    return {"guest_cpus": small.get("guest_cpus"), "threads_pinned": small.get("threads_pinned"), "runs": runs}


def scaling_rows(f):
    cpus = f.get("guest_cpus")
    pinned = "pinned" if f.get("threads_pinned") else "not pinned"
    out = [f"4 KiB requests from N submitting threads ({pinned}; {cpus or '?'} guest CPUs), one request "
           "outstanding each: the card with a DBC per thread, QEMU's NVMe (null-co, a queue per CPU) with as "
           "many threads; best windows, requests/s in all:\n",
           "| threads | card | × 1 DBC | NVMe | × 1 thread | card / NVMe |", "|---|---|---|---|---|---|"]
    for r in f["runs"]:
        out.append(f"| {r['submitters']} | {fmt(r['card_req_per_s'], ' req/s', 0)} | {fmt_ratio(r['card_scaling'])} | "
                   f"{fmt(r['nvme_req_per_s'], ' req/s', 0)} | {fmt_ratio(r['nvme_scaling'])} | "
                   f"{fmt_ratio(r['card_to_nvme'])} |")
    return "\n".join(out)


def network_figures(net):
    """The network on 1..N NSPs: rates, scaling against one NSP, ratio to OpenBLAS on as many threads."""
    runs = net["runs"]
    one = next((r["inf_per_s"] for r in runs if r["nsps"] == 1), None)
    blas_one = next((r["openblas_inf_per_s"] for r in runs if r["openblas_threads"] == 1), None)
    figures = []
    for r in runs:
        figures.append({"nsps": r["nsps"], "inf_per_s": r["inf_per_s"], "scaling_to_1_nsp": ratio(r["inf_per_s"], one),
                        "openblas_threads": r["openblas_threads"], "openblas_inf_per_s": r["openblas_inf_per_s"],
                        "openblas_scaling": ratio(r["openblas_inf_per_s"], blas_one),
                        "ratio_to_openblas": ratio(r["inf_per_s"], r["openblas_inf_per_s"]),
                        "cpu_ms_per_inf": r.get("cpu_ms_per_inf"), "nsp_threads": r.get("nsp_threads"),
                        "switches_per_inf": r.get("switches_per_inf"),
                        "openblas_cpu_ms_per_inf": r.get("openblas_cpu_ms_per_inf"),
                        "barriers": r.get("barriers"), "outputs_ok": r.get("outputs_ok")})
    return {"name": net.get("name"), "macs": net.get("macs"), "host_threads": net.get("host_threads"),
            "runs": figures}


def network_rows(f):
    """Markdown for the network on NSPs."""
    out = [f"Network {f['name']} ({fmt(f['macs'] / 1e9 if f['macs'] else None, '', 2)} G MACs) on N NSPs, "
           f"the card's NSPs being host threads ({f['host_threads']} on this host); the baseline is the same "
           "network with OpenBLAS on N threads (dgemm on the int8 values); inferences/s of wall time:\n",
           "| NSPs (threads) | card (interpreter) | × 1 NSP | CPU per inference | context switches per inference | "
           "OpenBLAS, N threads | × 1 thread | card / OpenBLAS | outputs |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in f["runs"]:
        threads = f" ({r['nsp_threads']})" if r.get("nsp_threads") is not None else ""
        out.append(f"| {r['nsps']}{threads} | {fmt(r['inf_per_s'], ' inf/s', 2)} | "
                   f"{fmt_ratio(r['scaling_to_1_nsp'])} | {fmt(r['cpu_ms_per_inf'], ' ms')} | "
                   f"{fmt(r.get('switches_per_inf'), '', 0)} | "
                   f"{fmt(r['openblas_inf_per_s'], ' inf/s', 2)} | {fmt_ratio(r['openblas_scaling'])} | "
                   f"{fmt_ratio(r['ratio_to_openblas'])} | {'right' if r['outputs_ok'] else 'WRONG'} |")
    return "\n".join(out)


def table(rows, measured="card"):
    out = [f"| benchmark | {measured} | baseline (same run) | ratio |", "|---|---|---|---|"]
    out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(out)


def plot(d, host, guests):
    """bench.svg through gnuplot, from .dat files next to it."""
    with open(os.path.join(d, "memcpy.dat"), "w") as f:
        f.write("# size MB/s copies/s\n")
        for r in host.get("memcpy", []):
            f.write(f"{r['size']} {r['MBps']} {r['MBps'] * 1e6 / r['size']}\n")
    bw, rate = [], []
    bw.append(f"'memcpy.dat' using 1:2 with linespoints lw 2 dt 2 title 'host memcpy (limit)'")
    rate.append(f"'memcpy.dat' using 1:3 with linespoints lw 2 dt 2 title 'host memcpy (limit)'")
    for name, g in guests.items():
        dat = f"dma-{name}.dat"
        with open(os.path.join(d, dat), "w") as f:
            f.write("# size to_MBps from_MBps to_device_copy_MBps from_device_copy_MBps to_req_s from_req_s\n")
            for b in g.get("bulk", []):
                s = b["size"]
                vals = [b.get("to_card_MBps"), b.get("from_card_MBps"), b.get("to_card_device_copy_MBps"),
                        b.get("from_card_device_copy_MBps")]
                vals += [vals[0] * 1e6 / s if vals[0] else None, vals[1] * 1e6 / s if vals[1] else None]
                f.write(f"{s} " + " ".join("NaN" if v is None else f"{v}" for v in vals) + "\n")
        bw.append(f"'{dat}' using 1:2 with linespoints title 'to card, {name}'")
        bw.append(f"'{dat}' using 1:3 with linespoints title 'from card, {name}'")
        bw.append(f"'{dat}' using 1:4 with linespoints dt 3 title 'to card, card-side copy, {name}'")
        rate.append(f"'{dat}' using 1:6 with linespoints title 'to card, {name}'")
        nvme = g.get("small", {}).get("nvme_req_per_s")
        if nvme:
            pdat = f"nvme-{name}.dat"
            with open(os.path.join(d, pdat), "w") as f:
                f.write(f"4096 {nvme}\n")
            rate.append(f"'{pdat}' using 1:2 with points pt 7 ps 1.5 title 'NVMe null-co 4 KiB, {name}'")
    script = f"""set terminal svg size 1400,760 dynamic font 'sans,11'
set output 'bench.svg'
set multiplot layout 1,2
set logscale xy
set grid
set key below font ',9'
set xlabel 'transfer size (bytes)'
set xtics ('4K' 4096, '16K' 16384, '64K' 65536, '256K' 262144, '1M' 1048576, '4M' 4194304, '16M' 16777216, '64M' 67108864)
set title 'DMA bandwidth (MB/s)'
plot {', '.join(bw)}
set title 'requests (copies) per second'
plot {', '.join(rate)}
unset multiplot
"""
    with open(os.path.join(d, "bench.gp"), "w") as f:
        f.write(script)
    subprocess.run(["gnuplot", "bench.gp"], cwd=d, check=True)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench/report.py DIR")
    d = sys.argv[1]
    machine = {}
    with open(os.path.join(d, "machine.txt")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            machine[k] = v
    with open(os.path.join(d, "host.json")) as f:
        host = json.load(f)
    guests = {}
    for name in sorted(os.listdir(d)):
        if name.startswith("guest-") and name.endswith(".json"):
            with open(os.path.join(d, name)) as f:
                guests[name[len("guest-"):-len(".json")]] = json.load(f)

    print(f"Run of {machine.get('date')} on {machine.get('cpus')} CPUs ({machine.get('cpu')}), "
          f"{machine.get('memory_gib')} GiB, load average at the start {machine.get('load')}"
          f"{'; --quick' if machine.get('quick') == '1' else ''}. The host is shared: figures are noisy, "
          "ratios are from this one run.\n")
    g = host.get("gemm", {})
    if g:
        print(f"NSP GEMM {g['m']}×{g['n']}×{g['k']} on the host, one thread (thread CPU time, the best of at least "
              "five windows of ~20 ms, OpenBLAS and NSP alike):\n")
        rows = [
            ("MMF32 instruction (interpreter)", g["nsp_mmf32_GOPs"], "OpenBLAS sgemm", g["openblas_sgemm_GOPs"]),
            ("gemm_f32 kernel", g["nsp_gemm_f32_GOPs"], "OpenBLAS sgemm", g["openblas_sgemm_GOPs"]),
            ("MMI8 instruction (interpreter)", g["nsp_mmi8_GOPs"], "OpenBLAS sgemm on the int8 values (no int8 GEMM in OpenBLAS)",
             g["openblas_sgemm_on_int8_GOPs"]),
            ("gemm_i8 kernel", g["nsp_gemm_i8_GOPs"], "OpenBLAS sgemm on the int8 values",
             g["openblas_sgemm_on_int8_GOPs"]),
        ]
        print(table([(a, f"{b:.1f} GOP/s", f"{c} {e:.1f} GOP/s", fmt_ratio(ratio(b, e))) for a, b, c, e in rows], "NSP interpreter"))
        print()
    nets = [network_figures(n) for n in inference_report.networks(host)]
    for net in nets:
        print(network_rows(net))
        print()
    inference = inference_report.figures(d, host, guests)
    if inference:
        print(inference_report.rows(inference))
        print()
    if guests:
        print("Side by side (configurations named below):\n")
        print(side_by_side(guests, host))
        print()
    report = {"machine": machine, "host": host, "networks": nets, "inference": inference, "configurations": {}}
    ok = host.get("outputs_ok", False)
    for name, gj in guests.items():
        rows, figures = guest_rows(gj, host)
        print(f"**{name}**: {config_name(gj.get('configuration', {}))}\n")
        print(table(rows))
        print()
        scaling = scaling_figures(gj)
        if scaling:
            print(scaling_rows(scaling))
            print()
        report["configurations"][name] = {"configuration": gj.get("configuration"), "figures": figures,
                                          "scaling": scaling, "outputs_ok": gj.get("outputs_ok")}
        ok = ok and gj.get("outputs_ok", False)
    report["outputs_ok"] = ok
    report["targets"] = inference_report.targets(
        inference, guests, {n: c["scaling"] for n, c in report["configurations"].items()},
        int(machine.get("cpus") or 0))
    print("Targets (docs/benchmarks.md):\n")
    print(inference_report.target_rows(report["targets"]))
    print()
    print(f"Every output and payload checked: {'all right' if ok else 'SOME WRONG (see the logs)'}.")
    with open(os.path.join(d, "bench.json"), "w") as f:
        json.dump(report, f, indent=1)
    plot(d, host, guests)


if __name__ == "__main__":
    main()
