#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The card's ResNet-50 on ONNX Runtime: the int8 baseline of bench/run.

Runs in the Debian 13 root of scripts/ort-root (python3-onnxruntime,
python3-onnx, numpy); DIR is what `aic100-compile --export DIR` wrote
(tools/compiler/export.h): the network, its int8 weights and per-channel
requantization, two test inputs and the reference's outputs, which the
card's program reproduces byte for byte.

    ort_baseline.py DIR --threads 1,2 [--count K] [--json OUT]

builds DIR/model.onnx (checked by onnx.checker), runs K inferences per
thread count with as many intra-op threads, and compares the outputs with
the reference's: the top-1 class and the largest difference of the int8
logits. DIR/model-layers.onnx is the same network with every layer fed
the reference's own input tensors (tensors-1.bin), which tells the
rounding of each layer from what earlier layers passed on.

The model uses ONNX Runtime's int8 operators (QLinearConv, QLinearAdd),
the form a quantized model takes after ONNX Runtime's QDQ fusion. Every
activation is uint8 with zero point 128, which is the card's int8 exactly
(the same values, the same saturation at -128 and 127); ReLU is a Clip at
the zero point. What differs is the rounding of requantization: the card
multiplies by an integer and shifts, rounding half up; ONNX Runtime
multiplies by a float32 scale (mult / 2^shift rounded to 24 bits) and
rounds half to even. So a value close to .5 can land one apart, and the
difference can travel to later layers.

Debian's onnxruntime 1.21 links the shared libonnx, and creating a session
registers every operator schema a second time, with a "Schema error" line
for each on stderr (hundreds; harmless, the schemas are the same): those
lines alone are dropped (without_schema_noise). For the same reason the
model is written by a child process, not by the one that runs it.
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ZERO = 128  # uint8 zero point: uint8 v stands for int8 v - 128
OPSET = 17


@contextlib.contextmanager
def without_schema_noise():
    """stderr of the C++ inside, minus libonnx's duplicate-schema lines."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            for line in tmp:
                if line.strip() and not line.startswith("Schema error: Trying to register schema"):
                    sys.stderr.write(line)


def session(path, options=None):
    import onnxruntime as ort
    with without_schema_noise():
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def onnx_modules():
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    return onnx, TensorProto, helper, numpy_helper


class Graph:
    """Nodes and initializers of the model, named as the network's tensors."""

    def __init__(self):
        _, _, self.helper, self.numpy_helper = onnx_modules()
        self.nodes, self.inits = [], []
        self.const("one", np.array(1.0, np.float32))
        self.const("zp", np.array(ZERO, np.uint8))
        self.const("axes_hw", np.array([2, 3], np.int64))

    def const(self, name, value):
        self.inits.append(self.numpy_helper.from_array(value, name))
        return name

    def node(self, op, inputs, output, domain="", **attrs):
        self.nodes.append(self.helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        return output

    def requantized(self, layer, out, make):
        """`make(name)` writes the layer's requantized output to name;
        with ReLU that is followed by a Clip at the zero point (below it
        is below int8 0: the card's ReLU after saturation)."""
        if not layer["relu"]:
            return make(out)
        make(out + ".pre")
        return self.node("Clip", [out + ".pre", "zp"], out)


def scales(layer):
    return np.array([m / 2.0 ** s for m, s in zip(layer["mult"], layer["shift"])], np.float32)


def conv(g, layer, weights, cin, x, out):
    """QLinearConv: int8 weights per output channel, int32 bias."""
    name, k = layer["name"], layer["k"]
    off, size = layer["weights"]
    # network.h's layout is [k][k][cin][cout]; ONNX wants [cout][cin][k][k].
    w = weights[off:off + size].reshape(k, k, cin, -1).transpose(3, 2, 0, 1)
    cout = w.shape[0]
    ins = [x, "one", "zp",
           g.const(name + ".w", np.ascontiguousarray(w)),
           g.const(name + ".w_scale", scales(layer)),
           g.const(name + ".w_zp", np.zeros(cout, np.int8)),
           "one", "zp",
           g.const(name + ".bias", np.array(layer["bias"], np.int32))]
    return g.requantized(layer, out, lambda o: g.node(
        "QLinearConv", ins, o, kernel_shape=[k, k], strides=[layer["stride"]] * 2, pads=[layer["pad"]] * 4))


def add(g, layer, x, y, out):
    p = layer["add"]
    sx = g.const(layer["name"] + ".sx", np.array(p["mx"] / 2.0 ** p["shift"], np.float32))
    sy = g.const(layer["name"] + ".sy", np.array(p["my"] / 2.0 ** p["shift"], np.float32))
    return g.requantized(layer, out, lambda o: g.node(
        "QLinearAdd", [x, sx, "zp", y, sy, "zp", "one", "zp"], o, domain="com.microsoft"))


def avgpool(g, layer, x, out):
    """The card sums each channel and requantizes the sum per channel."""
    name = layer["name"]
    f = g.node("DequantizeLinear", [x, "one", "zp"], name + ".f")
    s = g.node("ReduceSum", [f, "axes_hw"], name + ".sum", keepdims=1)
    b = g.node("Add", [s, g.const(name + ".bias", np.array(layer["bias"], np.float32).reshape(1, -1, 1, 1))],
               name + ".biased")
    m = g.node("Mul", [b, g.const(name + ".scale", scales(layer).reshape(1, -1, 1, 1))], name + ".scaled")
    return g.requantized(layer, out, lambda o: g.node("QuantizeLinear", [m, "one", "zp"], o))


def build(net, weights, isolated=False):
    """The network as an ONNX model. isolated: every layer reads its inputs
    from graph inputs ("ref<tensor>") and every layer's output is a graph
    output, so each layer can be fed the reference's own tensors."""
    onnx, TensorProto, helper, _ = onnx_modules()
    g = Graph()
    shapes = net["tensors"]
    names = ["t%d" % i for i in range(len(shapes))]
    refs = set()

    def source(i):
        if not isolated or i == net["input"]:
            return names[i]
        refs.add(i)
        return "ref%d" % i

    for layer in net["layers"]:
        x, out, kind = source(layer["in0"]), names[layer["out"]], layer["kind"]
        if kind in ("conv", "fc"):  # the FC is a 1x1 conv on the pooled 1x1 map
            conv(g, dict(layer, k=1) if kind == "fc" else layer, weights, shapes[layer["in0"]][2], x, out)
        elif kind == "maxpool":
            k, s, p = layer["k"], layer["stride"], layer["pad"]
            g.node("MaxPool", [x], out, kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
        elif kind == "add":
            add(g, layer, x, source(layer["in1"]), out)
        elif kind == "avgpool":
            avgpool(g, layer, x, out)
        else:
            sys.exit("ort_baseline: unknown layer kind %s" % kind)

    def value(name, i):
        h, w, c = shapes[i]
        return helper.make_tensor_value_info(name, TensorProto.UINT8, [1, c, h, w])

    inputs = [value(names[net["input"]], net["input"])] + [value("ref%d" % i, i) for i in sorted(refs)]
    outs = [l["out"] for l in net["layers"]] if isolated else [net["output"]]
    graph = helper.make_graph(g.nodes, net["name"], inputs, [value(names[i], i) for i in outs], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                   helper.make_opsetid("com.microsoft", 1)],
                              producer_name="aic100-virt bench/ort_baseline.py")
    onnx.checker.check_model(model, full_check=True)
    return model


def to_onnx(x_i8, shape):
    """An NHWC int8 tensor as the model's NCHW uint8."""
    h, w, c = shape
    x = x_i8.reshape(1, h, w, c).transpose(0, 3, 1, 2)
    return np.ascontiguousarray((x.astype(np.int16) + ZERO).astype(np.uint8))


def from_onnx(x_u8):
    """The model's NCHW uint8 as the card's NHWC int8, flat."""
    return (x_u8.transpose(0, 2, 3, 1).astype(np.int16) - ZERO).reshape(-1)


def layer_by_layer(net, d):
    """Each layer fed the reference's input tensors: how far its output is
    from the reference's, which is the rounding alone, without what earlier
    layers passed on."""
    shapes = net["tensors"]
    flat = np.fromfile(os.path.join(d, "tensors-1.bin"), np.int8)
    offsets = np.cumsum([0] + [h * w * c for h, w, c in shapes])
    tensors = [flat[offsets[i]:offsets[i + 1]] for i in range(len(shapes))]
    sess = session(os.path.join(d, "model-layers.onnx"))
    feed = {}
    for i in sess.get_inputs():
        idx = int(i.name[3:]) if i.name.startswith("ref") else net["input"]
        feed[i.name] = to_onnx(tensors[idx], shapes[idx])
    outs = sess.run(None, feed)
    worst, differing, total = 0, 0, 0
    for o, got in zip(sess.get_outputs(), outs):
        diff = np.abs(from_onnx(got) - tensors[int(o.name[1:])].astype(np.int16))
        worst, differing, total = max(worst, int(diff.max())), differing + int((diff != 0).sum()), total + diff.size
    return {"max_diff": worst, "differing": differing, "values": total}


def compare(got_u8, want_i8):
    got = from_onnx(got_u8)
    want = want_i8.astype(np.int16)
    diff = np.abs(got - want)
    return {"top1_card": int(np.argmax(want)), "top1_ort": int(np.argmax(got)),
            "top1_equal": bool(np.argmax(want) == np.argmax(got)),
            "max_diff": int(diff.max()), "differing": int((diff != 0).sum())}


def measure(model_path, threads, inputs, count, windows=4):
    """Inferences per second on `threads` intra-op threads: the best of
    `windows` windows of count / windows inferences each, as the engine's
    figure in aic100-host-bench is the best of its windows."""
    import onnxruntime as ort
    opt = ort.SessionOptions()
    opt.intra_op_num_threads = threads
    opt.inter_op_num_threads = 1
    opt.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opt.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = session(model_path, opt)
    name = sess.get_inputs()[0].name
    outs = [sess.run(None, {name: x})[0] for x in inputs]  # also the warm-up
    per_window = max(1, count // windows)
    rates = []
    for w in range(windows):
        t0 = time.perf_counter()
        for i in range(per_window):
            sess.run(None, {name: inputs[i % len(inputs)]})
        rates.append(per_window / (time.perf_counter() - t0))
    return outs, {"threads": threads, "inferences": per_window * windows, "windows": windows,
                  "inf_per_s": max(rates), "mean_inf_per_s": sum(rates) / len(rates)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--model-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    net = json.load(open(os.path.join(a.dir, "network.json")))
    model_path = os.path.join(a.dir, "model.onnx")
    if a.model_only:
        weights = np.fromfile(os.path.join(a.dir, "weights.bin"), np.int8)
        onnx_modules()[0].save(build(net, weights), model_path)
        onnx_modules()[0].save(build(net, weights, isolated=True), os.path.join(a.dir, "model-layers.onnx"))
        return
    subprocess.run([sys.executable, __file__, a.dir, "--model-only"], check=True)
    ins, wants, k = [], [], 1
    while os.path.exists(os.path.join(a.dir, "input-%d.bin" % k)):
        ins.append(to_onnx(np.fromfile(os.path.join(a.dir, "input-%d.bin" % k), np.int8),
                           net["tensors"][net["input"]]))
        wants.append(np.fromfile(os.path.join(a.dir, "output-%d.bin" % k), np.int8))
        k += 1
    if not ins:
        sys.exit("ort_baseline: no input-1.bin in %s" % a.dir)
    import onnxruntime as ort
    result = {"network": net["name"], "macs": net["macs"], "onnxruntime": ort.__version__, "runs": [],
              "layer_by_layer": layer_by_layer(net, a.dir)}
    lbl = result["layer_by_layer"]
    print("onnxruntime %s, %s, each layer fed the reference's inputs: at most %d apart (%d of %d values)" %
          (ort.__version__, net["name"], lbl["max_diff"], lbl["differing"], lbl["values"]))
    for t in [int(v) for v in a.threads.split(",")]:
        outs, run = measure(model_path, t, ins, a.count)
        run["outputs"] = [compare(o, w) for o, w in zip(outs, wants)]
        result["runs"].append(run)
        worst = max(o["max_diff"] for o in run["outputs"])
        top1 = all(o["top1_equal"] for o in run["outputs"])
        print("onnxruntime %s, %s, %d thread(s): %.2f inf/s (best of %d windows, mean %.2f); top-1 %s, "
              "int8 logits at most %d apart (%s differing of %d)" %
              (ort.__version__, net["name"], t, run["inf_per_s"], run["windows"], run["mean_inf_per_s"],
               "identical" if top1 else "DIFFERENT", worst,
               "+".join(str(o["differing"]) for o in run["outputs"]), wants[0].size))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
