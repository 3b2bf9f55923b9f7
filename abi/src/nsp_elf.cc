// SPDX-License-Identifier: GPL-2.0-or-later
// Workload ELFs (docs/nsp.md) and the instruction encoding. The ELF comes
// from the guest: every field is checked before it is used, with sums
// written so that they cannot wrap.
#include "aic100/nsp.h"
#include "aic100/format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace aic100::nsp {

namespace {

// ELF64 constants (elf.h is not used so that the core builds anywhere).
constexpr size_t kEhdrSize = 64, kPhdrSize = 56, kShdrSize = 64;
constexpr uint8_t kClass64 = 2, kData2Lsb = 1, kEvCurrent = 1;
constexpr uint16_t kEtExec = 2;
constexpr uint32_t kPtLoad = 1, kPfX = 1;
constexpr uint32_t kShtNobits = 8;

uint16_t le16(const uint8_t *p)
{
	return uint16_t(p[0] | p[1] << 8);
}

uint32_t le32(const uint8_t *p)
{
	return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

uint64_t le64(const uint8_t *p)
{
	return uint64_t(le32(p)) | uint64_t(le32(p + 4)) << 32;
}

void put16(uint8_t *p, uint16_t v)
{
	p[0] = uint8_t(v);
	p[1] = uint8_t(v >> 8);
}

void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = uint8_t(v >> (8 * i));
}

void put64(uint8_t *p, uint64_t v)
{
	put32(p, uint32_t(v));
	put32(p + 4, uint32_t(v >> 32));
}

// [off, off + len) inside a buffer of `size` bytes, without overflow.
bool fits(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

std::string hex(uint64_t v)
{
	char buf[24];
	std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return buf;
}

struct Section {
	uint32_t type;
	uint64_t offset, size;
};

constexpr OpInfo kOps[] = {
	{Op::Nop, "NOP", Form::None},
	{Op::Halt, "HALT", Form::None},
	{Op::Li, "LI", Form::RegImm},
	{Op::Add, "ADD", Form::Reg3},
	{Op::Sub, "SUB", Form::Reg3},
	{Op::Mul, "MUL", Form::Reg3},
	{Op::And, "AND", Form::Reg3},
	{Op::Or, "OR", Form::Reg3},
	{Op::Shl, "SHL", Form::Reg3},
	{Op::Shr, "SHR", Form::Reg3},
	{Op::Addi, "ADDI", Form::Reg2Imm},
	{Op::Ld, "LD", Form::Reg2Imm},
	{Op::St, "ST", Form::Reg2Imm},
	{Op::Ld32, "LD32", Form::Reg2Imm},
	{Op::St32, "ST32", Form::Reg2Imm},
	{Op::Jmp, "JMP", Form::Jump},
	{Op::Beq, "BEQ", Form::Branch},
	{Op::Bne, "BNE", Form::Branch},
	{Op::Blt, "BLT", Form::Branch},
	{Op::SemWait, "SEMWAIT", Form::SemCond},
	{Op::SemInc, "SEMINC", Form::SemValue},
	{Op::SemDec, "SEMDEC", Form::SemValue},
	{Op::SemSet, "SEMSET", Form::SemValue},
	{Op::Mark, "MARK", Form::None},
	{Op::Copy, "COPY", Form::Reg3},
	{Op::VAddF, "VADDF", Form::Reg4},
	{Op::VMulF, "VMULF", Form::Reg4},
	{Op::VAddI8, "VADDI8", Form::Reg4},
	{Op::VScaleF, "VSCALEF", Form::Reg3F32},
	{Op::ActF, "ACTF", Form::Reg3Kind},
	{Op::SumF, "SUMF", Form::Reg3},
	{Op::MaxF, "MAXF", Form::Reg3},
	{Op::MmI8, "MMI8", Form::Reg3Mnk},
	{Op::MmF32, "MMF32", Form::Reg3Mnk},
	{Op::BiasF, "BIASF", Form::Reg3Imm},
	{Op::CvtI32F, "CVTI32F", Form::Reg3F32},
	{Op::Im2Col, "IM2COL", Form::Reg3Geom},
	{Op::MaxPoolI8, "MAXPOOLI8", Form::Reg3Geom},
	{Op::ReqI8, "REQI8", Form::Reg4},
	{Op::VAddQI8, "VADDQI8", Form::Reg4Imm},
	{Op::MmI8P, "MMI8P", Form::Reg3Mnk},
};

// Indexed by opcode for the interpreter's hot path.
constexpr auto kIndex = [] {
	std::array<int16_t, 256> t{};
	t.fill(-1);
	for (size_t i = 0; i < std::size(kOps); i++)
		t[size_t(kOps[i].op)] = int16_t(i);
	return t;
}();

} // namespace

std::array<uint8_t, kMetaSize> encode_meta(const Meta &m)
{
	std::array<uint8_t, kMetaSize> b{};
	put32(&b[0], kMetaMagic);
	put16(&b[4], m.version);
	put16(&b[6], m.nsp_count);
	put64(&b[8], m.io_size);
	put32(&b[16], m.entry);
	put32(&b[20], m.const_offset);
	std::memcpy(&b[24], m.name.data(), std::min(m.name.size(), kNameSize));
	return b;
}

Instr decode(const uint8_t *p)
{
	return Instr{p[0], p[1], p[2], p[3], le32(p + 4), le64(p + 8)};
}

void encode(const Instr &in, uint8_t *p)
{
	p[0] = in.op;
	p[1] = in.a;
	p[2] = in.b;
	p[3] = in.c;
	put32(p + 4, in.imm32);
	put64(p + 8, in.imm64);
}

void pack_b(std::span<const int8_t> b, uint32_t k, uint32_t n, std::span<uint8_t> out)
{
	std::fill(out.begin(), out.begin() + packed_b_size(k, n), uint8_t(0x80));
	for (uint32_t row = 0; row < k; row++)
		for (uint32_t col = 0; col < n; col++)
			out[packed_b_offset(k, row, col)] = uint8_t(b[uint64_t(row) * n + col]) ^ 0x80;
}

std::array<uint8_t, kPackedEntrySize> encode_packed(const PackedRegion &r)
{
	std::array<uint8_t, kPackedEntrySize> b{};
	put64(&b[0], r.offset);
	put64(&b[8], r.size);
	put32(&b[16], r.k);
	put32(&b[20], r.n);
	return b;
}

const PackedRegion *find_packed(std::span<const PackedRegion> regions, uint64_t offset)
{
	const auto it = std::lower_bound(regions.begin(), regions.end(), offset,
					 [](const PackedRegion &r, uint64_t off) { return r.offset < off; });
	return it != regions.end() && it->offset == offset ? &*it : nullptr;
}

std::span<const OpInfo> op_table()
{
	return kOps;
}

const OpInfo *op_info(uint8_t op)
{
	return kIndex[op] < 0 ? nullptr : &kOps[kIndex[op]];
}

const OpInfo *op_info(std::string_view mnemonic)
{
	for (const OpInfo &o : kOps) {
		const std::string_view name = o.name;
		if (name.size() == mnemonic.size() &&
		    std::equal(name.begin(), name.end(), mnemonic.begin(), [](char x, char y) {
			    return x == (y >= 'a' && y <= 'z' ? char(y - 32) : y);
		    }))
			return &o;
	}
	return nullptr;
}

std::string geom_problem(uint64_t v)
{
	if (v >> 46)
		return "reserved geometry bits " + hex(v >> 46 << 46) + " are set";
	const Geom g = unpack_geom(v);
	if (!g.h || !g.w || !g.c || !g.k || !g.stride)
		return "H, W, C, K and the stride must not be 0";
	if (g.pad >= g.k)
		return "a pad of " + std::to_string(g.pad) + " is not below K " + std::to_string(g.k);
	if (g.k > g.h + 2 * g.pad || g.k > g.w + 2 * g.pad)
		return "a " + std::to_string(g.k) + "x" + std::to_string(g.k) + " window does not fit " +
		       std::to_string(g.h) + "x" + std::to_string(g.w) + " padded by " + std::to_string(g.pad);
	return "";
}

namespace {


// The form every instruction has, the assembler's .insn.
std::string raw_insn(const Instr &in)
{
	return format(".insn 0x%02x, %u, %u, %u, 0x%" PRIx32 ", 0x%" PRIx64, in.op, in.a, in.b, in.c, in.imm32,
		      in.imm64);
}

// The vector and matrix forms: registers a, b, c, then a fourth register
// or an immediate.
std::string disassemble_vector(const OpInfo &info, const Instr &in)
{
	static const char *const acts[] = {"relu", "sigmoid", "tanh", "gelu"};
	const char *n = info.name;
	switch (info.form) {
	case Form::Reg4:
		return format("%s r%u, r%u, r%u, r%" PRIu32, n, in.a, in.b, in.c, in.imm32);
	case Form::Reg3F32: {
		float f;
		const uint32_t fbits = uint32_t(in.imm64);
		std::memcpy(&f, &fbits, 4);
		return format("%s r%u, r%u, r%u, %.9g", n, in.a, in.b, in.c, double(f));
	}
	case Form::Reg3Kind:
		if (in.imm32 < 4)
			return format("%s r%u, r%u, r%u, %s", n, in.a, in.b, in.c, acts[in.imm32]);
		return format("%s r%u, r%u, r%u, %" PRIu32, n, in.a, in.b, in.c, in.imm32);
	case Form::Reg3Imm:
		return format("%s r%u, r%u, r%u, %" PRIu32, n, in.a, in.b, in.c, in.imm32);
	case Form::Reg3Mnk: {
		const Mnk d = unpack_mnk(in.imm64);
		return format("%s r%u, r%u, r%u, %" PRIu64 ", %" PRIu64 ", %" PRIu64, n, in.a, in.b, in.c, d.m, d.n,
			      d.k);
	}
	case Form::Reg3Geom: {
		if (!geom_problem(in.imm64).empty()) // the assembler refuses a bad geometry: the raw form
			return raw_insn(in);
		const Geom g = unpack_geom(in.imm64);
		return format("%s r%u, r%u, r%u, %u, %u, %u, %u, %u, %u", n, in.a, in.b, in.c, g.h, g.w, g.c, g.k,
			      g.stride, g.pad);
	}
	case Form::Reg4Imm: {
		if (in.imm64 & kAddQReserved)
			return format("%s r%u, r%u, r%u, r%" PRIu32 ", 0x%" PRIx64, n, in.a, in.b, in.c, in.imm32,
				      in.imm64);
		const AddQ q = unpack_addq(in.imm64);
		return format("%s r%u, r%u, r%u, r%" PRIu32 ", %u, %u, %u, %u", n, in.a, in.b, in.c, in.imm32, q.mx,
			      q.my, q.shift, unsigned(q.relu));
	}
	default:
		return {};
	}
}

} // namespace

std::string disassemble(const Instr &in)
{
	static const char *const conds[] = {"eq", "ge", "gt0"};
	const OpInfo *info = op_info(in.op);
	if (!info)
		return raw_insn(in);
	const char *n = info->name;
	switch (info->form) {
	case Form::None:
		return format("%s", n);
	case Form::RegImm:
		return format("%s r%u, 0x%" PRIx64, n, in.a, in.imm64);
	case Form::Reg3:
		return format("%s r%u, r%u, r%u", n, in.a, in.b, in.c);
	case Form::Reg2Imm:
		return format("%s r%u, r%u, %" PRId64, n, in.a, in.b, int64_t(in.imm64));
	case Form::Jump:
		return format("%s %" PRIu32, n, in.imm32);
	case Form::Branch:
		return format("%s r%u, r%u, %" PRIu32, n, in.a, in.b, in.imm32);
	case Form::SemCond:
		if (in.b < 3)
			return format("%s %u, %" PRIu32 ", %s", n, in.a, in.imm32, conds[in.b]);
		return format("%s %u, %" PRIu32 ", %u", n, in.a, in.imm32, in.b);
	case Form::SemValue:
		return format("%s %u, %" PRIu32, n, in.a, in.imm32);
	default:
		return disassemble_vector(*info, in);
	}
}

namespace {

// A PT_LOAD as the header gives it, before its data is copied.
struct SegmentRef {
	uint64_t file_offset, vaddr, filesz, memsz;
};

// Sorted by `key`, the ranges [key, key + len) must not overlap; empty
// ranges never do. The first that does, or nullptr.
template <typename Key, typename Len>
const SegmentRef *first_overlap(std::vector<SegmentRef> &refs, Key key, Len len)
{
	std::sort(refs.begin(), refs.end(), [&](const auto &x, const auto &y) { return key(x) < key(y); });
	const SegmentRef *prev = nullptr;
	for (const SegmentRef &r : refs) {
		if (!len(r))
			continue;
		if (prev && key(r) - key(*prev) < len(*prev))
			return &r;
		prev = &r;
	}
	return nullptr;
}

// Segments may not share window bytes, nor file bytes: no linker makes
// either, and the second bounds what the card copies by the file's size.
// Takes a copy: the caller's order is the header's.
std::string check_overlaps(std::vector<SegmentRef> refs)
{
	auto vaddr = [](const SegmentRef &r) { return r.vaddr; };
	auto memsz = [](const SegmentRef &r) { return r.memsz; };
	if (const SegmentRef *r = first_overlap(refs, vaddr, memsz))
		return "segments overlap at window offset " + hex(r->vaddr);
	auto file_offset = [](const SegmentRef &r) { return r.file_offset; };
	auto filesz = [](const SegmentRef &r) { return r.filesz; };
	if (const SegmentRef *r = first_overlap(refs, file_offset, filesz))
		return "segments share file bytes at offset " + hex(r->file_offset);
	return {};
}

} // namespace

namespace {

// The ELF header's fields that locate the tables.
struct ElfHeader {
	uint64_t phoff, shoff;
	uint16_t phentsize, phnum, shentsize, shnum, shstrndx;
};

// Checks the ELF header: an ELF64 LE executable for the NSP.
std::string read_header(std::span<const uint8_t> elf, ElfHeader &h)
{
	const uint8_t *f = elf.data();
	if (elf.size() < kEhdrSize)
		return "truncated ELF header";
	if (std::memcmp(f, "\x7f" "ELF", 4) != 0)
		return "not an ELF file";
	if (f[4] != kClass64 || f[5] != kData2Lsb || f[6] != kEvCurrent)
		return "not a little-endian ELF64 (version 1)";
	if (le16(f + 16) != kEtExec)
		return "e_type is not ET_EXEC";
	if (le16(f + 18) != kMachine)
		return "e_machine is not 164 (EM_QDSP6)";
	if (le32(f + 20) != kEvCurrent)
		return "e_version is not 1";
	h = {le64(f + 32), le64(f + 40), le16(f + 54), le16(f + 56), le16(f + 58), le16(f + 60), le16(f + 62)};
	return {};
}

// The section headers, each inside the file unless NOBITS.
std::string read_sections(std::span<const uint8_t> elf, const ElfHeader &h, std::vector<Section> &sec)
{
	if (h.shnum == 0)
		return "no section headers";
	if (h.shentsize != kShdrSize)
		return "e_shentsize is not 64";
	if (!fits(h.shoff, uint64_t(h.shnum) * kShdrSize, elf.size()))
		return "section headers outside the file";
	if (h.shstrndx >= h.shnum)
		return "e_shstrndx out of range";
	sec.resize(h.shnum);
	for (unsigned i = 0; i < h.shnum; i++) {
		const uint8_t *p = elf.data() + h.shoff + uint64_t(i) * kShdrSize;
		sec[i] = {le32(p + 4), le64(p + 24), le64(p + 32)};
		if (sec[i].type != kShtNobits && i != 0 && !fits(sec[i].offset, sec[i].size, elf.size()))
			return "section " + std::to_string(i) + " outside the file";
	}
	return {};
}

// The sections found by name (-1: none).
struct AicSections {
	int meta = -1, text = -1, packed = -1;
};

// .aic.meta and .aic.text, found by name: exactly one of each, with
// contents; .aic.packed at most once.
std::string find_aic_sections(std::span<const uint8_t> elf, const ElfHeader &h, const std::vector<Section> &sec,
			      AicSections &idx)
{
	const Section &strtab = sec[h.shstrndx];
	if (strtab.type == kShtNobits || h.shstrndx == 0)
		return "no section name table";
	idx = {};
	for (unsigned i = 1; i < h.shnum; i++) {
		const uint32_t name = le32(elf.data() + h.shoff + uint64_t(i) * kShdrSize);
		if (name >= strtab.size)
			return "section " + std::to_string(i) + " name outside the name table";
		const char *s = reinterpret_cast<const char *>(elf.data() + strtab.offset + name);
		if (!std::memchr(s, '\0', strtab.size - name))
			return "section " + std::to_string(i) + " name not terminated";
		int *slot = nullptr;
		if (std::strcmp(s, kMetaSection) == 0)
			slot = &idx.meta;
		else if (std::strcmp(s, kTextSection) == 0)
			slot = &idx.text;
		else if (std::strcmp(s, kPackedSection) == 0)
			slot = &idx.packed;
		if (!slot)
			continue;
		if (*slot >= 0)
			return std::string("two ") + s + " sections";
		if (sec[i].type == kShtNobits)
			return std::string(s) + " has no contents";
		*slot = int(i);
	}
	if (idx.meta < 0)
		return "no .aic.meta section";
	if (idx.text < 0)
		return "no .aic.text section";
	return {};
}

// .aic.meta: 48 bytes, every field in its range.
std::string read_meta(std::span<const uint8_t> elf, const Section &ms, Meta &meta)
{
	if (ms.size != kMetaSize)
		return ".aic.meta is not 48 bytes";
	const uint8_t *m = elf.data() + ms.offset;
	if (le32(m) != kMetaMagic)
		return ".aic.meta: bad magic";
	meta.version = le16(m + 4);
	meta.nsp_count = le16(m + 6);
	meta.io_size = le64(m + 8);
	meta.entry = le32(m + 16);
	meta.const_offset = le32(m + 20);
	if (meta.version != kMetaVersion)
		return ".aic.meta: version " + std::to_string(meta.version) + " is not 1";
	if (meta.nsp_count < 1 || meta.nsp_count > kMaxNsps)
		return ".aic.meta: nsp_count " + std::to_string(meta.nsp_count) + " not in 1..16";
	if (meta.io_size < kMinIoSize || meta.io_size > kMaxIoSize)
		return ".aic.meta: io_size " + hex(meta.io_size) + " not in 4 KiB..4 GiB";
	const char *name = reinterpret_cast<const char *>(m + 24);
	const size_t len = std::find(name, name + kNameSize, '\0') - name;
	if (!std::all_of(name, name + len, [](char c) { return c >= 0x20 && c < 0x7f; }))
		return ".aic.meta: name is not printable ASCII";
	if (!std::all_of(name + len, name + kNameSize, [](char c) { return c == '\0'; }))
		return ".aic.meta: name is not NUL-padded";
	meta.name.assign(name, len);
	return {};
}

// .aic.text: whole instructions, the entry among them.
std::string read_text(std::span<const uint8_t> elf, const Section &ts, Workload &w)
{
	if (ts.size == 0 || ts.size % sizeof(Instr))
		return ".aic.text size " + std::to_string(ts.size) + " is not a non-zero multiple of 16";
	const uint64_t count = ts.size / sizeof(Instr);
	if (w.meta.entry >= count)
		return "entry " + std::to_string(w.meta.entry) + " outside the program of " + std::to_string(count) +
		       " instructions";
	w.program.reserve(count);
	for (uint64_t i = 0; i < count; i++)
		w.program.push_back(decode(elf.data() + ts.offset + i * sizeof(Instr)));
	return {};
}

// Program headers: the non-executable PT_LOADs are the window's initial
// contents (executable ones may describe the text for other tools).
// Everything is checked before anything is copied: a hostile header table
// can name the whole file 65,535 times.
std::string read_segments(std::span<const uint8_t> elf, const ElfHeader &h, Workload &w)
{
	if (h.phnum) {
		if (h.phentsize != kPhdrSize)
			return "e_phentsize is not 56";
		if (!fits(h.phoff, uint64_t(h.phnum) * kPhdrSize, elf.size()))
			return "program headers outside the file";
	}
	std::vector<SegmentRef> refs;
	for (unsigned i = 0; i < h.phnum; i++) {
		const uint8_t *p = elf.data() + h.phoff + uint64_t(i) * kPhdrSize;
		if (le32(p) != kPtLoad || (le32(p + 4) & kPfX))
			continue;
		const SegmentRef r{le64(p + 8), le64(p + 16), le64(p + 32), le64(p + 40)};
		const std::string what = "segment " + std::to_string(i);
		if (r.filesz > r.memsz)
			return what + ": p_filesz above p_memsz";
		if (!fits(r.file_offset, r.filesz, elf.size()))
			return what + ": data outside the file";
		if (!fits(r.vaddr, r.memsz, w.meta.io_size))
			return what + ": [" + hex(r.vaddr) + ", +" + hex(r.memsz) + ") outside io_size " +
			       hex(w.meta.io_size);
		if (r.memsz)
			refs.push_back(r);
	}
	if (std::string why = check_overlaps(refs); !why.empty())
		return why;
	const uint8_t *f = elf.data();
	for (const SegmentRef &r : refs)
		w.segments.push_back({r.vaddr, std::vector<uint8_t>(f + r.file_offset, f + r.file_offset + r.filesz),
				      r.memsz});
	return {};
}

// One .aic.packed entry: a shape MMI8P can take, the size its layout
// gives that shape, inside the window.
std::string check_packed(const PackedRegion &r, uint64_t io_size)
{
	if (!r.k || r.k >= kMaxDim || !r.n || r.n >= kMaxDim)
		return "K=" + std::to_string(r.k) + " N=" + std::to_string(r.n) + ": each must be 1..2^21-1";
	if (r.size != packed_b_size(r.k, r.n))
		return "size " + hex(r.size) + " is not what MMI8P's layout takes for K=" + std::to_string(r.k) +
		       " N=" + std::to_string(r.n) + " (" + hex(packed_b_size(r.k, r.n)) + ")";
	if (!fits(r.offset, r.size, io_size))
		return "[" + hex(r.offset) + ", +" + hex(r.size) + ") outside io_size " + hex(io_size);
	return {};
}

// .aic.packed: whole entries, each valid, none sharing a byte with another.
std::string read_packed(std::span<const uint8_t> elf, const Section &ps, Workload &w)
{
	if (ps.size % kPackedEntrySize)
		return ".aic.packed size " + std::to_string(ps.size) + " is not a multiple of 24";
	if (ps.size / kPackedEntrySize > kMaxPackedRegions)
		return ".aic.packed: more than " + std::to_string(kMaxPackedRegions) + " regions";
	const uint8_t *p = elf.data() + ps.offset;
	for (uint64_t i = 0; i < ps.size / kPackedEntrySize; i++, p += kPackedEntrySize) {
		const PackedRegion r{le64(p), le64(p + 8), le32(p + 16), le32(p + 20)};
		if (std::string why = check_packed(r, w.meta.io_size); !why.empty())
			return ".aic.packed region " + std::to_string(i) + " at " + hex(r.offset) + ": " + why;
		w.packed.push_back(r);
	}
	std::sort(w.packed.begin(), w.packed.end(),
		  [](const PackedRegion &a, const PackedRegion &b) { return a.offset < b.offset; });
	for (size_t i = 1; i < w.packed.size(); i++)
		if (w.packed[i].offset - w.packed[i - 1].offset < w.packed[i - 1].size)
			return ".aic.packed: regions overlap at window offset " + hex(w.packed[i].offset);
	return {};
}

} // namespace

std::optional<Workload> parse(std::span<const uint8_t> elf, std::string &err)
{
	ElfHeader h{};
	std::vector<Section> sec;
	AicSections idx;
	Workload w;
	std::string why = read_header(elf, h);
	if (why.empty())
		why = read_sections(elf, h, sec);
	if (why.empty())
		why = find_aic_sections(elf, h, sec, idx);
	if (why.empty())
		why = read_meta(elf, sec[size_t(idx.meta)], w.meta);
	if (why.empty())
		why = read_text(elf, sec[size_t(idx.text)], w);
	if (why.empty())
		why = read_segments(elf, h, w);
	if (why.empty() && idx.packed >= 0)
		why = read_packed(elf, sec[size_t(idx.packed)], w);
	if (!why.empty()) {
		err = std::move(why);
		return std::nullopt;
	}
	return w;
}

bool load_segments(const Workload &w, std::span<uint8_t> window)
{
	for (const Segment &s : w.segments)
		if (s.data.size() > s.memsz || !fits(s.offset, s.memsz, window.size()))
			return false;
	for (const Segment &s : w.segments) {
		uint8_t *p = window.data() + s.offset;
		if (!s.data.empty())
			std::memcpy(p, s.data.data(), s.data.size());
		std::memset(p + s.data.size(), 0, s.memsz - s.data.size());
	}
	return true;
}

} // namespace aic100::nsp
