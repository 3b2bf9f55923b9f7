#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# aic100-qpc from the command line: $1 the tool, $2 the build's tools
# directory (its qpc-examples and workloads), $3 a scratch directory.
set -eu
qpc=$1 tools=$2 tmp=$3
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

# Every container the build packed reads back.
for e in copy vadd_f32 matmul_i8 matmul_i8p matmul_f32 mlp_f32 add_4nsp; do
	"$qpc" --inspect "$tools/qpc-examples/$e/programqpc.bin" >"$tmp/$e.txt" || fail "$e does not read back"
	grep -q "name \"$e\"" "$tmp/$e.txt" || fail "$e: no name in --inspect"
done
grep -q 'add_4nsp", 4 NSPs' "$tmp/add_4nsp.txt" || fail "add_4nsp is not on 4 NSPs"

# The UMD's test-data layout, with the compiled ResNet-50 in its test copy:
# a float input quantized before the copy, which the open UMD refuses to
# run, and no reference pairs. The runnable copy, with one plain copy per
# tensor and its pairs, is the build's --networks one; the two carry the
# same program and constants.
"$qpc" --umd-test-data "$tmp/td"
cmp "$tmp/td/aic100/v2/4nsp/4nsp-add/programqpc.bin" "$tools/qpc-examples/add_4nsp/programqpc.bin" ||
	fail "the 4nsp-add container differs from add_4nsp's"
r50=aic100/v2/4nsp/4nsp-quant-resnet50
run50=$tools/qpc-networks/4nsp-quant-resnet50/programqpc.bin
[ ! -e "$tmp/td/$r50/input.0.bin" ] || fail "the test copy has reference pairs"
"$qpc" --inspect "$tmp/td/$r50/programqpc.bin" >"$tmp/test-copy.txt" || fail "the test copy does not read back"
grep -q 'input  image    FloatTy\[1,224,224,3\]' "$tmp/test-copy.txt" &&
	grep -q 'quantized to Int8QTy' "$tmp/test-copy.txt" &&
	grep -q 'open UMD: loads this program but refuses to run it (input image has 2 transforms)' \
		"$tmp/test-copy.txt" || fail "the test copy's input is not a float quantized before the copy"
"$qpc" --inspect "$run50" >"$tmp/runnable.txt"
grep -q 'open UMD:' "$tmp/runnable.txt" && fail "the runnable copy is one the open UMD refuses"
for seg in network.elf constants.bin constantsdesc.bin; do
	"$qpc" --extract "$tmp/td/$r50/programqpc.bin" $seg -o "$tmp/test.$seg"
	"$qpc" --extract "$run50" $seg -o "$tmp/run.$seg"
	cmp -s "$tmp/test.$seg" "$tmp/run.$seg" || fail "the two ResNet-50 copies differ in $seg"
done
for k in 0 1; do
	[ "$(wc -c <"$tools/qpc-networks/4nsp-quant-resnet50/input.$k.bin")" = 150528 ] &&
		[ "$(wc -c <"$tools/qpc-networks/4nsp-quant-resnet50/output.$k.bin")" = 1000 ] ||
		fail "the build's reference pair $k is not 224x224x3 in, 1000 out"
done
grep -q 'input  image    Int8QTy\[1,224,224,3\]' "$tmp/runnable.txt" ||
	fail "4nsp-quant-resnet50: no 224x224x3 int8 input in the runnable copy"
st=0; "$qpc" --network resnet18 -o "$tmp/x" 2>/dev/null || st=$?
[ "$st" = 2 ] || fail "unknown network: status $st"

# A workload ELF packed by hand, then a segment extracted.
"$qpc" --elf "$tools/workloads/copy.elf" --input 'src:i8:4096@0' --output 'dst:u8q:64x64@0x1000' \
	--sem-in 0 --sem-out 1 -o "$tmp/hand.bin"
"$qpc" --inspect "$tmp/hand.bin" | grep -q 'output dst      UInt8QTy\[64,64\]' || fail "hand-packed output"
"$qpc" --extract "$tmp/hand.bin" network.elf -o "$tmp/net.elf"
cmp -n 4 "$tmp/net.elf" "$tools/workloads/copy.elf" || fail "extracted network.elf is not an ELF"

# Refusals: status 1 for a container or a spec that is wrong, 2 for usage.
head -c 100 "$tmp/hand.bin" >"$tmp/short.bin"
st=0; "$qpc" --inspect "$tmp/short.bin" 2>"$tmp/err" || st=$?
[ "$st" = 1 ] && grep -q 'refused: header size' "$tmp/err" || fail "truncated container: status $st"
st=0; "$qpc" --elf "$tools/workloads/copy.elf" --input 'a:i8:4096@0' --output 'b:i8:4096@0x800' \
	-o "$tmp/x.bin" 2>"$tmp/err" || st=$?
[ "$st" = 1 ] && grep -q 'overlap' "$tmp/err" || fail "overlapping tensors: status $st"
st=0; "$qpc" --elf "$tools/workloads/copy.elf" --input 'a:f99:1@0' -o "$tmp/x.bin" 2>/dev/null || st=$?
[ "$st" = 2 ] || fail "unknown type: status $st"
st=0; "$qpc" --inspect 2>/dev/null || st=$?
[ "$st" = 2 ] || fail "missing value: status $st"
echo "qpc-cli: ok"
