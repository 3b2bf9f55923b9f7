// SPDX-License-Identifier: GPL-2.0-or-later
#include "nspasm.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace aic100::nsp {
// For gtest's messages.
void PrintTo(const Instr &in, std::ostream *o)
{
	*o << disassemble(in);
}
} // namespace aic100::nsp

namespace aic100::nspasm {
namespace {

using nsp::Instr;
using nsp::Op;

Instr I(Op op, uint8_t a = 0, uint8_t b = 0, uint8_t c = 0, uint32_t imm32 = 0, uint64_t imm64 = 0)
{
	return Instr{uint8_t(op), a, b, c, imm32, imm64};
}

uint64_t f32_bits(float f)
{
	uint32_t b;
	std::memcpy(&b, &f, 4);
	return b;
}

Program assemble_ok(const std::string &src, Options opt = {})
{
	std::string err;
	auto p = assemble(src, opt, err);
	EXPECT_TRUE(p) << err;
	return p ? *p : Program{};
}

std::string assemble_err(const std::string &src, Options opt = {})
{
	std::string err;
	auto p = assemble(src, opt, err);
	EXPECT_FALSE(p);
	return err;
}

Instr one(const std::string &line)
{
	const Program p = assemble_ok(".io_size 4096\n.equ SYM, 0x40\n" + line + "\n");
	EXPECT_EQ(p.code.size(), 1u) << line;
	return p.code.empty() ? Instr{} : p.code[0];
}

TEST(NspAsm, EveryMnemonic)
{
	const std::pair<const char *, Instr> cases[] = {
		{"nop", I(Op::Nop)},
		{"HALT", I(Op::Halt)},
		{"li r3, 0x1122334455667788", I(Op::Li, 3, 0, 0, 0, 0x1122334455667788)},
		{"li r31, -1", I(Op::Li, 31, 0, 0, 0, ~0ull)},
		{"add r1, r2, r3", I(Op::Add, 1, 2, 3)},
		{"sub r4, r5, r6", I(Op::Sub, 4, 5, 6)},
		{"mul r7, r8, r9", I(Op::Mul, 7, 8, 9)},
		{"and r10, r11, r12", I(Op::And, 10, 11, 12)},
		{"or r13, r14, r15", I(Op::Or, 13, 14, 15)},
		{"shl r16, r17, r18", I(Op::Shl, 16, 17, 18)},
		{"shr r19, r20, r21", I(Op::Shr, 19, 20, 21)},
		{"addi r1, r2, -8", I(Op::Addi, 1, 2, 0, 0, uint64_t(-8))},
		{"ld r1, r2, SYM + 8", I(Op::Ld, 1, 2, 0, 0, 0x48)},
		{"st r1, r2, 16", I(Op::St, 1, 2, 0, 0, 16)},
		{"ld32 r1, r2, 4", I(Op::Ld32, 1, 2, 0, 0, 4)},
		{"st32 r1, r2, 0", I(Op::St32, 1, 2, 0, 0, 0)},
		{"jmp 0", I(Op::Jmp)},
		{"beq r1, r2, 0", I(Op::Beq, 1, 2)},
		{"bne r1, r2, 0", I(Op::Bne, 1, 2)},
		{"blt r1, r2, 0", I(Op::Blt, 1, 2)},
		{"semwait 5, 3, eq", I(Op::SemWait, 5, 0, 0, 3)},
		{"semwait 5, 3, ge", I(Op::SemWait, 5, 1, 0, 3)},
		{"semwait 31, 0, gt0", I(Op::SemWait, 31, 2, 0, 0)},
		{"semwait 1, 4095, >=", I(Op::SemWait, 1, 1, 0, 4095)},
		{"semwait 1, 1, 2", I(Op::SemWait, 1, 2, 0, 1)},
		{"seminc 2, 1", I(Op::SemInc, 2, 0, 0, 1)},
		{"semdec 3, 2", I(Op::SemDec, 3, 0, 0, 2)},
		{"semset 4, 0", I(Op::SemSet, 4, 0, 0, 0)},
		{"mark", I(Op::Mark)},
		{"copy r1, r2, r3", I(Op::Copy, 1, 2, 3)},
		{"vaddf r1, r2, r3, r4", I(Op::VAddF, 1, 2, 3, 4)},
		{"vmulf r1, r2, r3, r4", I(Op::VMulF, 1, 2, 3, 4)},
		{"vaddi8 r1, r2, r3, r4", I(Op::VAddI8, 1, 2, 3, 4)},
		{"vscalef r1, r2, r3, 0.5", I(Op::VScaleF, 1, 2, 3, 0, f32_bits(0.5f))},
		{"vscalef r1, r2, r3, -2.5e-3f", I(Op::VScaleF, 1, 2, 3, 0, f32_bits(-2.5e-3f))},
		{"actf r1, r2, r3, relu", I(Op::ActF, 1, 2, 3, 0)},
		{"actf r1, r2, r3, sigmoid", I(Op::ActF, 1, 2, 3, 1)},
		{"actf r1, r2, r3, TANH", I(Op::ActF, 1, 2, 3, 2)},
		{"actf r1, r2, r3, gelu", I(Op::ActF, 1, 2, 3, 3)},
		{"actf r1, r2, r3, 1", I(Op::ActF, 1, 2, 3, 1)},
		{"sumf r1, r2, r3", I(Op::SumF, 1, 2, 3)},
		{"maxf r1, r2, r3", I(Op::MaxF, 1, 2, 3)},
		{"mmi8 r1, r2, r3, 64, 128, 256", I(Op::MmI8, 1, 2, 3, 0, nsp::pack_mnk(64, 128, 256))},
		{"mmi8p r1, r2, r3, 64, 128, 256", I(Op::MmI8P, 1, 2, 3, 0, nsp::pack_mnk(64, 128, 256))},
		{"mmf32 r1, r2, r3, 1, 2097151, 7", I(Op::MmF32, 1, 2, 3, 0, nsp::pack_mnk(1, 2097151, 7))},
		{"mmf32 r1, r2, r3, 0x123", I(Op::MmF32, 1, 2, 3, 0, 0x123)},
		{"biasf r1, r2, r3, 37", I(Op::BiasF, 1, 2, 3, 37)},
		{"cvti32f r1, r2, r3, 0.125", I(Op::CvtI32F, 1, 2, 3, 0, f32_bits(0.125f))},
		{"im2col r1, r2, r3, 224, 224, 3, 7, 2, 3",
		 I(Op::Im2Col, 1, 2, 3, 0, nsp::pack_geom({224, 224, 3, 7, 2, 3}))},
		{"maxpooli8 r1, r2, r3, 112, 112, 64, 3, 2, 1",
		 I(Op::MaxPoolI8, 1, 2, 3, 0, nsp::pack_geom({112, 112, 64, 3, 2, 1}))},
		{"reqi8 r1, r2, r3, r4", I(Op::ReqI8, 1, 2, 3, 4)},
		{"vaddqi8 r1, r2, r3, r4, 11585, 11585, 14, 1",
		 I(Op::VAddQI8, 1, 2, 3, 4, nsp::pack_addq({11585, 11585, 14, true}))},
		{".insn 0xff, 1, 2, 3, 0xffffffff, -1", Instr{0xFF, 1, 2, 3, 0xFFFFFFFF, ~0ull}},
	};
	for (const auto &[src, want] : cases)
		EXPECT_EQ(one(src), want) << src;
	// Every opcode of the table is covered.
	for (const nsp::OpInfo &o : nsp::op_table()) {
		bool seen = false;
		for (const auto &c : cases)
			seen = seen || c.second.op == uint8_t(o.op);
		EXPECT_TRUE(seen) << o.name;
	}
}

TEST(NspAsm, LabelsCommentsAndLines)
{
	const Program p = assemble_ok("; a comment\n"
				      ".io_size 0x1000   # another\n"
				      "start: first:\n"
				      "\tjmp end        // forward\n"
				      "loop: nop\n"
				      "\n"
				      "\tbne r1, r2, loop\n"
				      "end:\thalt\n");
	ASSERT_EQ(p.code.size(), 4u);
	EXPECT_EQ(p.code[0], I(Op::Jmp, 0, 0, 0, 3));
	EXPECT_EQ(p.code[2], I(Op::Bne, 1, 2, 0, 1));
	EXPECT_EQ(p.symbols.at("start"), 0u);
	EXPECT_EQ(p.symbols.at("first"), 0u);
	EXPECT_EQ(p.symbols.at("loop"), 1u);
	EXPECT_EQ(p.symbols.at("end"), 3u);
	EXPECT_EQ(p.lines, (std::vector<unsigned>{4, 5, 7, 8}));
}

TEST(NspAsm, Expressions)
{
	auto li = [](const std::string &e) { return one("li r1, " + e).imm64; };
	EXPECT_EQ(li("1 + 2 * 3"), 7u);
	EXPECT_EQ(li("(1 + 2) * 3"), 9u);
	EXPECT_EQ(li("0x10 | 0b11"), 0x13u);
	EXPECT_EQ(li("1 << 40 >> 8"), 1ull << 32);
	EXPECT_EQ(li("-SYM"), uint64_t(-0x40));
	EXPECT_EQ(li("~0 & 0xff"), 0xFFu);
	EXPECT_EQ(li("100 / 7 + 100 % 7"), 16u);
	EXPECT_EQ(li("6 ^ 3"), 5u);
	EXPECT_EQ(li("SYM*2 - 1"), 0x7Fu);
	EXPECT_EQ(li("18446744073709551615"), ~0ull);
	EXPECT_NE(assemble_err(".io_size 4096\nli r1, 1/0\n").find("division by zero"), std::string::npos);
	EXPECT_NE(assemble_err(".io_size 4096\nli r1, 18446744073709551616\n").find("does not fit 64 bits"),
		  std::string::npos);
	EXPECT_NE(assemble_err(".io_size 4096\nli r1, (1\n").find("missing ')'"), std::string::npos);
	EXPECT_NE(assemble_err(".io_size 4096\nli r1, 1 +\n").find("missing operand"), std::string::npos);
	EXPECT_NE(assemble_err(".io_size 4096\nli r1, 12ab\n").find("bad number"), std::string::npos);
}

TEST(NspAsm, MetaAndRegisterAliases)
{
	const Program p = assemble_ok(".name \"mlp\"\n.nsps 4\n.io_size 1 << 20\n.const_offset 0x8000\n"
				      ".entry main\n.reg acc, r7\nnop\nmain: add acc, acc, r1\n");
	EXPECT_EQ(p.meta.name, "mlp");
	EXPECT_EQ(p.meta.nsp_count, 4);
	EXPECT_EQ(p.meta.io_size, 1u << 20);
	EXPECT_EQ(p.meta.const_offset, 0x8000u);
	EXPECT_EQ(p.meta.entry, 1u);
	EXPECT_EQ(p.code[1], I(Op::Add, 7, 7, 1));
	Options o;
	o.io_size = 8192;
	o.nsps = 16;
	o.name = "override";
	const Program q = assemble_ok(".name a\n.nsps 2\n.io_size 4096\nhalt\n", o);
	EXPECT_EQ(q.meta.io_size, 8192u);
	EXPECT_EQ(q.meta.nsp_count, 16);
	EXPECT_EQ(q.meta.name, "override");
}

TEST(NspAsm, DataSegments)
{
	Options o;
	o.read_file = [](const std::string &path, std::string &err) -> std::optional<std::vector<uint8_t>> {
		if (path == "w.bin")
			return std::vector<uint8_t>{0xAA, 0xBB};
		err = "no " + path;
		return std::nullopt;
	};
	const Program p = assemble_ok(".io_size 0x10000\n"
				      ".data 0x100\n"
				      "\t.bytes 1, 2, 255, -1\n"
				      "\t.i16 -2, 0x1234\n"
				      "\t.i32 -1\n"
				      "\t.align 16\n"
				      "\t.i64 0x0102030405060708\n"
				      "\t.f32 1.5, -0.25\n"
				      "\t.zero 2\n"
				      "\t.file \"w.bin\"\n"
				      "\t.space 100\n"
				      ".data 0x1000\n"
				      "\t.space 0x800\n"
				      ".text\n"
				      "halt\n"
				      ".data 0x2000\n"
				      "\t.space 4\n"
				      "\t.i8 7\n",
				      o);
	ASSERT_EQ(p.segments.size(), 3u);
	const nsp::Segment &s = p.segments[0];
	EXPECT_EQ(s.offset, 0x100u);
	const std::vector<uint8_t> want = {1, 2, 255, 255, 0xFE, 0xFF, 0x34, 0x12, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0,
					   8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0xC0, 0x3F, 0, 0, 0x80, 0xBE, 0, 0, 0xAA,
					   0xBB};
	EXPECT_EQ(s.data, want);
	EXPECT_EQ(s.memsz, want.size() + 100);
	EXPECT_EQ(p.segments[1].offset, 0x1000u);
	EXPECT_TRUE(p.segments[1].data.empty());
	EXPECT_EQ(p.segments[1].memsz, 0x800u);
	EXPECT_EQ(p.segments[2].data, (std::vector<uint8_t>{0, 0, 0, 0, 7})); // .space before data
	EXPECT_EQ(p.code.size(), 1u);
}

TEST(NspAsm, FileDirectiveReadsRelativeToTheSource)
{
	const auto dir = std::filesystem::temp_directory_path() / ("nspasm-test-" + std::to_string(::getpid()));
	std::filesystem::create_directories(dir);
	std::ofstream(dir / "w.bin", std::ios::binary) << "xyz";
	Options o;
	o.filename = (dir / "prog.s").string();
	const Program p = assemble_ok(".io_size 4096\n.data 0\n.file w.bin\n.text\nhalt\n", o);
	ASSERT_EQ(p.segments.size(), 1u);
	EXPECT_EQ(p.segments[0].data, (std::vector<uint8_t>{'x', 'y', 'z'}));
	const std::string err = assemble_err(".io_size 4096\n.data 0\n.file missing.bin\nhalt\n", o);
	EXPECT_NE(err.find("prog.s:3: .file: cannot read"), std::string::npos) << err;
	std::filesystem::remove_all(dir);
}

TEST(NspAsm, ErrorsNameTheLine)
{
	const std::pair<const char *, const char *> cases[] = {
		{"frob r1", "<input>:2: unknown instruction 'frob'"},
		{"add r1, r2, r32", "<input>:2: expected a register r0..r31, got 'r32'"},
		{"add r1, r2, x", "<input>:2: expected a register r0..r31, got 'x'"},
		{"add r1, r2", "<input>:2: ADD takes 3 operands, got 2"},
		{"add r1, , r2", "<input>:2: empty operand"},
		{"jmp nowhere", "<input>:2: undefined symbol 'nowhere'"},
		{"seminc 32, 1", "<input>:2: semaphore 32 above 31"},
		{"semset 1, 4096", "<input>:2: semaphore value 4096 above 4095"},
		{"semwait 1, 1, lt", "<input>:2: undefined symbol 'lt'"},
		{"semwait 1, 1, 3", "<input>:2: condition 3 above 2"},
		{"actf r1, r2, r3, swish", "<input>:2: undefined symbol 'swish'"},
		{"mmi8 r1, r2, r3, 0, 1, 1", "<input>:2: M is 0"},
		{"mmi8 r1, r2, r3, 1, 1, 2097152", "<input>:2: K 2097152 above 2097151"},
		{"mmi8 r1, r2, r3, 1, 1", "<input>:2: MMI8 takes C, A, B and M, N, K (or one packed value)"},
		{"biasf r1, r2, r3, 0", "<input>:2: BIASF needs at least one column"},
		{"im2col r1, r2, r3, 4, 4, 1, 3, 1, 3", "<input>:2: IM2COL: a pad of 3 is not below K 3"},
		{"im2col r1, r2, r3, 4, 4, 1, 16, 1, 0", "<input>:2: K 16 above 15"},
		{"maxpooli8 r1, r2, r3, 4, 4", "<input>:2: MAXPOOLI8 takes dst, src, rows and H, W, C, K, stride, pad (or one packed value)"},
		{"vaddqi8 r1, r2, r3, r4, 65536, 1, 1, 0", "<input>:2: MX 65536 above 65535"},
		{"vaddqi8 r1, r2, r3, r4, 1, 1, 32, 0", "<input>:2: shift 32 above 31"},
		{"vscalef r1, r2, r3, half", "<input>:2: expected a number, got 'half'"},
		{".bytes 1", "<input>:2: .bytes outside a .data segment"},
		{".data 0\n.i8 300", "<input>:3: value 300 does not fit 8 bits"},
		{".data 0\n.i8 -129", "<input>:3: value -129 does not fit 8 bits"},
		{".data 0\n.align 3", "<input>:3: .align needs a power of two"},
		{".name aaaaaaaaaaaaaaaaaaaaaaaaa", "<input>:2: name longer than 24 bytes"},
		{".nsps 17", "<input>:2: .nsps 17 above 16"},
		{".frob", "<input>:2: unknown directive '.frob'"},
		{".packed 0, 4", "<input>:2: .packed OFFSET, K, N"},
		{".packed 0, 0, 4", "<input>:2: .packed: K and N must each be 1..2^21-1"},
		{".packed 0, 4, 2097152", "<input>:2: .packed: K and N must each be 1..2^21-1"},
		{"x: nop\nx: nop", "<input>:3: 'x' defined twice"},
		{"add: nop", "<input>:2: 'add' is an instruction or register name"},
		{".equ r5, 1", "<input>:2: 'r5' is an instruction or register name"},
		{".reg r5, r6", "<input>:2: 'r5' is an instruction or register name"},
	};
	for (const auto &[line, want] : cases)
		EXPECT_EQ(assemble_err(std::string(".io_size 4096\n") + line + "\nhalt\n"), want) << line;
	EXPECT_EQ(assemble_err("halt\n"), "<input>: no io_size (.io_size or --io-size)");
	EXPECT_EQ(assemble_err(".io_size 4096\n"), "<input>: no instructions");
}

TEST(NspAsm, ElfRoundTrip)
{
	Options o;
	o.read_file = [](const std::string &, std::string &) -> std::optional<std::vector<uint8_t>> {
		return std::vector<uint8_t>(100, 0x5A);
	};
	const std::string src = ".name roundtrip\n.nsps 3\n.io_size 0x20000\n.entry go\n.const_offset 0x10000\n"
				".data 0x1000\n.f32 1, 2, 3\n.space 0x100\n"
				".data 0x8000\n.file x\n"
				".data 0x9000\n.space 0x1000\n"
				".text\nnop\ngo: mmf32 r1, r2, r3, 3, 4, 5\njmp go\n";
	std::string err;
	const auto p = assemble(src, o, err);
	ASSERT_TRUE(p) << err;
	const auto elf = write_elf(*p, err);
	ASSERT_TRUE(elf) << err;
	const auto w = nsp::parse(*elf, err);
	ASSERT_TRUE(w) << err;
	EXPECT_EQ(w->meta.name, "roundtrip");
	EXPECT_EQ(w->meta.nsp_count, 3);
	EXPECT_EQ(w->meta.io_size, 0x20000u);
	EXPECT_EQ(w->meta.entry, 1u);
	EXPECT_EQ(w->meta.const_offset, 0x10000u);
	ASSERT_EQ(w->program.size(), p->code.size());
	for (size_t i = 0; i < p->code.size(); i++)
		EXPECT_EQ(w->program[i], p->code[i]);
	ASSERT_EQ(w->segments.size(), 3u);
	for (size_t i = 0; i < 3; i++) {
		EXPECT_EQ(w->segments[i].offset, p->segments[i].offset);
		EXPECT_EQ(w->segments[i].data, p->segments[i].data);
		EXPECT_EQ(w->segments[i].memsz, p->segments[i].memsz);
	}
	EXPECT_EQ(w->segments[2].data.size(), 0u); // .space only: no file bytes
	EXPECT_LT(elf->size(), 1024u);
}

// .packed declares MMI8P's B (.aic.packed), its size the layout's.
TEST(NspAsm, PackedRegionsReachTheElf)
{
	std::string err;
	const auto p = assemble(".io_size 0x10000\n.equ B, 0x4000\n.packed B, 23, 45\n.packed 0x100, 5, 1\n"
				"li r5, B\nmmi8p r3, r4, r5, 4, 45, 23\nhalt\n",
				{}, err);
	ASSERT_TRUE(p) << err;
	const auto elf = write_elf(*p, err);
	ASSERT_TRUE(elf) << err;
	const auto w = nsp::parse(*elf, err);
	ASSERT_TRUE(w) << err;
	EXPECT_EQ(w->packed, (std::vector<nsp::PackedRegion>{{0x100, 256, 5, 1}, {0x4000, 1536, 23, 45}}));
}

TEST(NspAsm, WriterRefusesWhatTheCardWouldRefuse)
{
	std::string err;
	auto elf_of = [&err](const std::string &src) {
		std::string e;
		auto p = assemble(src, {}, e);
		EXPECT_TRUE(p) << e;
		return p ? write_elf(*p, err) : std::nullopt;
	};
	EXPECT_FALSE(elf_of(".io_size 4096\n.data 0xF00\n.space 0x101\n.text\nhalt\n"));
	EXPECT_EQ(err, "the workload would not load: segment 0: [0xf00, +0x101) outside io_size 0x1000");
	EXPECT_FALSE(elf_of(".io_size 4096\n.data 0\n.space 16\n.data 8\n.i8 1\n.text\nhalt\n"));
	EXPECT_EQ(err, "the workload would not load: segments overlap at window offset 0x8");
	EXPECT_FALSE(elf_of(".io_size 100\nhalt\n"));
	EXPECT_EQ(err, "the workload would not load: .aic.meta: io_size 0x64 not in 4 KiB..4 GiB");
	EXPECT_FALSE(elf_of(".io_size 4096\n.packed 0xF80, 5, 1\nhalt\n"));
	EXPECT_EQ(err, "the workload would not load: .aic.packed region 0 at 0xf80: [0xf80, +0x100) outside io_size "
		       "0x1000");
	EXPECT_FALSE(elf_of(".io_size 4096\n.packed 0, 5, 1\n.packed 0x80, 1, 1\nhalt\n"));
	EXPECT_EQ(err, "the workload would not load: .aic.packed: regions overlap at window offset 0x80");
	EXPECT_FALSE(elf_of(".io_size 4096\n.entry 5\nhalt\n"));
	EXPECT_EQ(err, "the workload would not load: entry 5 outside the program of 1 instructions");
	nsp::Meta m;
	m.io_size = 4096;
	m.name = std::string(25, 'x');
	const Instr h = I(Op::Halt);
	EXPECT_FALSE(write_elf(m, std::span(&h, 1), {}, err));
	EXPECT_EQ(err, "name \"xxxxxxxxxxxxxxxxxxxxxxxxx\" is longer than 24 bytes");
}

TEST(NspAsm, ListingReassembles)
{
	// Every form, plus an unknown opcode, through disassemble() and back.
	const std::vector<Instr> code = {
		I(Op::Nop), I(Op::Li, 3, 0, 0, 0, ~0ull), I(Op::Add, 1, 2, 3), I(Op::Addi, 1, 2, 0, 0, uint64_t(-8)),
		I(Op::Jmp, 0, 0, 0, 4), I(Op::Blt, 1, 2, 0, 0), I(Op::SemWait, 3, 2, 0, 7), I(Op::SemDec, 3, 0, 0, 2),
		I(Op::VAddI8, 1, 2, 3, 4), I(Op::CvtI32F, 1, 2, 3, 0, f32_bits(-1.0e-7f)), I(Op::ActF, 1, 2, 3, 2),
		I(Op::BiasF, 1, 2, 3, 9), I(Op::MmI8, 1, 2, 3, 0, nsp::pack_mnk(5, 6, 7)), Instr{0xEE, 1, 2, 3, 4, 5},
		I(Op::VScaleF, 1, 2, 3, 0, f32_bits(3.0e38f)), I(Op::Im2Col, 1, 2, 3, 0, nsp::pack_geom({9, 7, 3, 3, 2, 1})),
		I(Op::MaxPoolI8, 4, 5, 6, 0, nsp::pack_geom({56, 56, 64, 3, 2, 1})), I(Op::ReqI8, 7, 8, 9, 10),
		I(Op::VAddQI8, 1, 2, 3, 4, nsp::pack_addq({7, 9, 5, false})),
		I(Op::VAddQI8, 1, 2, 3, 4, 1ull << 50), I(Op::Im2Col, 1, 2, 3, 0, 0)};
	std::string src = ".io_size 4096\n";
	std::istringstream lst(listing(code));
	for (std::string line; std::getline(lst, line);)
		src += line.substr(line.find(':') + 1) + "\n";
	const Program p = assemble_ok(src);
	ASSERT_EQ(p.code.size(), code.size());
	for (size_t i = 0; i < code.size(); i++)
		EXPECT_EQ(p.code[i], code[i]) << i;
}

} // namespace
} // namespace aic100::nspasm
