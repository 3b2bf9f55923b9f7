// SPDX-License-Identifier: GPL-2.0-or-later
// The card's NSPs as programs see them (docs/nsp.md): the workload ELF and
// the virtual instruction set, its encoding and its limits, shared by the
// card and the tools that build programs. The interpreter that runs them is
// the device core's (aic100/nsp_interpreter.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace aic100::nsp {

constexpr uint16_t kMachine = 164;          // EM_QDSP6
constexpr uint32_t kMetaMagic = 0x57434941; // "AICW"
constexpr uint16_t kMetaVersion = 1;
constexpr size_t kMetaSize = 48;
constexpr size_t kNameSize = 24;
constexpr unsigned kMaxNsps = 16;
constexpr uint64_t kMinIoSize = 4096;
constexpr uint64_t kMaxIoSize = 4ull << 30;
constexpr unsigned kNumRegs = 32;
constexpr uint64_t kMaxDim = 1u << 21; // M, N, K of a GEMM are below this
// A GEMM operand that overlaps C is read as it was before (a host copy):
// at most this large, so that a program cannot make each core copy GiBs.
constexpr uint64_t kMaxAliasedOperand = 64ull << 20;
constexpr char kMetaSection[] = ".aic.meta";
constexpr char kTextSection[] = ".aic.text";
constexpr char kPackedSection[] = ".aic.packed";

struct Meta {
	uint16_t version = kMetaVersion;
	uint16_t nsp_count = 1;
	uint64_t io_size = 0;
	uint32_t entry = 0;
	uint32_t const_offset = 0;
	std::string name; // at most kNameSize bytes, printable ASCII
};

// The 48 bytes of .aic.meta for `m` (name truncated to kNameSize).
std::array<uint8_t, kMetaSize> encode_meta(const Meta &m);

struct Instr {
	uint8_t op, a, b, c;
	uint32_t imm32;
	uint64_t imm64;
	friend bool operator==(const Instr &, const Instr &) = default;
};
static_assert(sizeof(Instr) == 16, "instructions are 16 bytes");

// Little-endian wire form of one instruction.
Instr decode(const uint8_t *p);
void encode(const Instr &in, uint8_t *p);

// Window contents of a PT_LOAD segment: data.size() bytes at `offset`, then
// zeros up to `memsz`.
struct Segment {
	uint64_t offset = 0;
	std::vector<uint8_t> data;
	uint64_t memsz = 0;
};

// A window region that holds a K×N B in MMI8P's layout (below, "Packed
// weights"): one entry of .aic.packed, 24 bytes: offset u64, size u64, k
// u32, n u32. The size is redundant, packed_b_size(k, n), so that a tool
// that packed with another layout is caught at load; MMI8P's B must be
// one of these regions, used with its K and N.
struct PackedRegion {
	uint64_t offset = 0, size = 0;
	uint32_t k = 0, n = 0;
	friend bool operator==(const PackedRegion &, const PackedRegion &) = default;
};
constexpr size_t kPackedEntrySize = 24;
// At most this many regions: a layer per NSP per entry, with room.
constexpr size_t kMaxPackedRegions = 65536;
std::array<uint8_t, kPackedEntrySize> encode_packed(const PackedRegion &r);
// The region of `regions` (sorted by offset) that starts at `offset`.
const PackedRegion *find_packed(std::span<const PackedRegion> regions, uint64_t offset);

struct Workload {
	Meta meta;
	std::vector<Instr> program;
	std::vector<Segment> segments;
	std::vector<PackedRegion> packed; // sorted by offset, disjoint
};

// Validates a workload ELF completely (it comes from the guest: every
// offset and size is checked before use). nullopt with a reason in `err`.
std::optional<Workload> parse(std::span<const uint8_t> elf, std::string &err);

// Copies the segments into the window and zero-fills them to memsz. The
// window is normally io_size bytes; false (nothing written) if a segment does
// not fit it. start() does not do this: the QSM calls it at ACTIVATE, before
// it copies the constants.
bool load_segments(const Workload &w, std::span<uint8_t> window);

enum class Op : uint8_t {
	Nop = 0x00,
	Halt = 0x01,
	Li = 0x02,
	Add = 0x03,
	Sub = 0x04,
	Mul = 0x05,
	And = 0x06,
	Or = 0x07,
	Shl = 0x08,
	Shr = 0x09,
	Addi = 0x0A,
	Ld = 0x0B,
	St = 0x0C,
	Ld32 = 0x0D,
	St32 = 0x0E,
	Jmp = 0x10,
	Beq = 0x11,
	Bne = 0x12,
	Blt = 0x13,
	SemWait = 0x18,
	SemInc = 0x19,
	SemDec = 0x1A,
	SemSet = 0x1B,
	Mark = 0x1C,
	Copy = 0x20,
	VAddF = 0x21,
	VMulF = 0x22,
	VAddI8 = 0x23,
	VScaleF = 0x24,
	ActF = 0x28,
	SumF = 0x29,
	MaxF = 0x2A,
	MmI8 = 0x30,
	MmF32 = 0x31,
	BiasF = 0x32,
	CvtI32F = 0x33,
	Im2Col = 0x34,
	MaxPoolI8 = 0x35,
	ReqI8 = 0x36,
	VAddQI8 = 0x37,
	MmI8P = 0x38,
};

// How an instruction uses its fields; shared by the interpreter's checks,
// the assembler and the disassembler.
enum class Form : uint8_t {
	None,     // NOP HALT MARK
	RegImm,   // LI a, imm64
	Reg3,     // a, b, c registers
	Reg2Imm,  // ADDI/LD/ST: a, b, imm64
	Jump,     // JMP imm32
	Branch,   // a, b, imm32 target
	SemCond,  // SEMWAIT a=sem, imm32=value, b=cond
	SemValue, // SEMINC/DEC/SET a=sem, imm32=value
	Reg4,     // a, b, c, imm32 = a fourth register (the element count)
	Reg3F32,  // a, b, c, imm64 = f32 bits
	Reg3Kind, // ACTF: a, b, c, imm32 = activation kind
	Reg3Imm,  // BIASF: a, b, c, imm32 = cols
	Reg3Mnk,  // MMI8/MMF32/MMI8P: a, b, c, imm64 = M | N << 21 | K << 42
	Reg3Geom, // IM2COL/MAXPOOLI8: a, b, c, imm64 = window geometry (Geom)
	Reg4Imm,  // VADDQI8: a, b, c, imm32 = count register, imm64 = AddQ
};

struct OpInfo {
	Op op;
	const char *name; // upper case, as docs/nsp.md writes it
	Form form;
};

std::span<const OpInfo> op_table();
const OpInfo *op_info(uint8_t op);
const OpInfo *op_info(std::string_view mnemonic); // case-insensitive

enum class Act : uint32_t { Relu = 0, Sigmoid = 1, Tanh = 2, Gelu = 3 };
enum class Cond : uint8_t { Eq = 0, Ge = 1, Gt0 = 2 };

struct Mnk {
	uint64_t m, n, k;
};
constexpr uint64_t pack_mnk(uint64_t m, uint64_t n, uint64_t k)
{
	return m | n << 21 | k << 42;
}
constexpr Mnk unpack_mnk(uint64_t v)
{
	return {v & (kMaxDim - 1), v >> 21 & (kMaxDim - 1), v >> 42};
}

// MMI8P's B (docs/nsp.md, "Packed weights"): a K×N int8 matrix in strips
// of kPackedCols columns, strip after strip; in a strip, per quad of k
// (rows 4q .. 4q+3), for each of its columns the four values of that quad
// as offset-binary bytes (b + 128). K is padded to a multiple of four and
// N to one of kPackedCols; what the padding holds is ignored. This is the
// layout the matrix unit's int8 path takes as it is (one 128-byte row of
// 32 four-byte words per quad), so a compiler packs constant weights once.
constexpr uint32_t kPackedCols = 32, kPackedDepth = 4;
constexpr uint64_t packed_b_strip_size(uint64_t k)
{
	return (k + kPackedDepth - 1) / kPackedDepth * kPackedCols * kPackedDepth;
}
constexpr uint64_t packed_b_size(uint64_t k, uint64_t n)
{
	return (n + kPackedCols - 1) / kPackedCols * packed_b_strip_size(k);
}
// Where B[row][col] is, from the start of the packed matrix.
constexpr uint64_t packed_b_offset(uint64_t k, uint64_t row, uint64_t col)
{
	return col / kPackedCols * packed_b_strip_size(k) +
	       (row / kPackedDepth * kPackedCols + col % kPackedCols) * kPackedDepth + row % kPackedDepth;
}
constexpr int8_t packed_b_value(const uint8_t *packed, uint64_t k, uint64_t row, uint64_t col)
{
	return int8_t(packed[packed_b_offset(k, row, col)] ^ 0x80);
}
// B[k×n] (row-major int8) packed into `out` (packed_b_size(k, n) bytes;
// the padding written as zeros, 0x80).
void pack_b(std::span<const int8_t> b, uint32_t k, uint32_t n, std::span<uint8_t> out);

// The geometry of a sliding window over an int8 NHWC tensor (IM2COL and
// MAXPOOLI8): H×W pixels of C channels, a K×K window moved by `stride`,
// `pad` pixels of padding on each side. imm64 bits: H 0-11, W 12-23,
// C 24-35, K 36-39, stride 40-42, pad 43-45; the rest 0.
struct Geom {
	uint32_t h = 0, w = 0, c = 0, k = 0, stride = 0, pad = 0;
	uint32_t out_h() const { return (h + 2 * pad - k) / stride + 1; }
	uint32_t out_w() const { return (w + 2 * pad - k) / stride + 1; }
	friend bool operator==(const Geom &, const Geom &) = default;
};
constexpr uint32_t kGeomMaxHwc = 4095, kGeomMaxK = 15, kGeomMaxStride = 7, kGeomMaxPad = 7;
constexpr uint64_t pack_geom(const Geom &g)
{
	return uint64_t(g.h) | uint64_t(g.w) << 12 | uint64_t(g.c) << 24 | uint64_t(g.k) << 36 |
	       uint64_t(g.stride) << 40 | uint64_t(g.pad) << 43;
}
constexpr Geom unpack_geom(uint64_t v)
{
	return {uint32_t(v & 0xFFF),        uint32_t(v >> 12 & 0xFFF), uint32_t(v >> 24 & 0xFFF),
		uint32_t(v >> 36 & 0xF),    uint32_t(v >> 40 & 0x7),   uint32_t(v >> 43 & 0x7)};
}
// Why `v` is not a usable geometry (reserved bits set, a size of 0, a pad
// of K or more, a window larger than the padded input); empty if it is.
std::string geom_problem(uint64_t v);

// The operands of VADDQI8 in imm64: x's multiplier (bits 0-15), y's
// (16-31), the right shift (32-37, 0..31) and ReLU (bit 40); the rest 0.
struct AddQ {
	uint32_t mx = 0, my = 0, shift = 0;
	bool relu = false;
	friend bool operator==(const AddQ &, const AddQ &) = default;
};
constexpr uint64_t pack_addq(const AddQ &q)
{
	return uint64_t(q.mx) | uint64_t(q.my) << 16 | uint64_t(q.shift) << 32 | uint64_t(q.relu) << 40;
}
constexpr AddQ unpack_addq(uint64_t v)
{
	return {uint32_t(v & 0xFFFF), uint32_t(v >> 16 & 0xFFFF), uint32_t(v >> 32 & 0x3F), bool(v >> 40 & 1)};
}
constexpr uint64_t kAddQReserved = ~((1ull << 38) - 1) & ~(1ull << 40);
constexpr uint32_t kAddQMaxShift = 31;

// REQI8's parameter block, in the window at the address in its c register:
// a 16-byte header (u32 cols, u32 flags, 8 bytes of zeros) then three
// tables of `cols` i32: bias, multiplier (0 .. 2^31-1) and shift (0..62).
constexpr size_t kReqHeaderSize = 16;
constexpr uint32_t kReqRelu = 1; // flags bit 0: ReLU after saturation
constexpr uint32_t kReqMaxShift = 62;
constexpr uint64_t req_block_size(uint64_t cols)
{
	return kReqHeaderSize + 12 * cols;
}

// One line of assembler for `in`, e.g. "VADDF r3, r4, r5, r6".
std::string disassemble(const Instr &in);

} // namespace aic100::nsp
