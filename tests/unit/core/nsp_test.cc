// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/nsp_interpreter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "aic100/nsp_kernels.h"
#include "common/alloc_budget.h"
#include "gemm_reference.h"

namespace aic100::nsp {
namespace {

using aic100::test::reference_f32;
using aic100::test::reference_i8;

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

Instr I(Op op, uint8_t a = 0, uint8_t b = 0, uint8_t c = 0, uint32_t imm32 = 0, uint64_t imm64 = 0)
{
	return Instr{uint8_t(op), a, b, c, imm32, imm64};
}

Instr Li(uint8_t reg, uint64_t v)
{
	return I(Op::Li, reg, 0, 0, 0, v);
}

uint64_t f32_bits(float f)
{
	uint32_t b;
	std::memcpy(&b, &f, 4);
	return b;
}

// A window, its semaphores and counters, and one core over them.
struct Machine {
	explicit Machine(size_t size = 1 << 16) : win(size) {}

	Core &load(std::vector<Instr> p, unsigned k = 0, unsigned n = 1, uint32_t entry = 0)
	{
		prog = std::move(p);
		core = std::make_unique<Core>(prog, entry, win, sems, ctr, k, n);
		core->set_packed(packed);
		return *core;
	}
	// MMI8P's B: K×N in the packed layout at `off`, as .aic.packed declares it.
	void declare_packed(uint64_t off, uint32_t k, uint32_t n)
	{
		packed.push_back({off, packed_b_size(k, n), k, n});
		std::sort(packed.begin(), packed.end(),
			  [](const PackedRegion &a, const PackedRegion &b) { return a.offset < b.offset; });
	}
	// Steps to HALT (or a fault); the programs of these tests are short.
	void run()
	{
		for (int i = 0; i < 1000000 && core->step();)
			i++;
	}
	void halts()
	{
		run();
		EXPECT_TRUE(core->halted()) << core->fault();
	}
	std::string faults()
	{
		run();
		EXPECT_TRUE(core->faulted());
		return core->fault();
	}

	template <class T>
	T get(uint64_t off) const
	{
		T v;
		std::memcpy(&v, &win[off], sizeof(T));
		return v;
	}
	template <class T>
	void put(uint64_t off, T v)
	{
		std::memcpy(&win[off], &v, sizeof(T));
	}
	template <class T>
	void put_all(uint64_t off, const std::vector<T> &v)
	{
		if (!v.empty())
			std::memcpy(&win[off], v.data(), v.size() * sizeof(T));
	}
	template <class T>
	std::vector<T> get_all(uint64_t off, size_t n) const
	{
		std::vector<T> v(n);
		if (n)
			std::memcpy(v.data(), &win[off], n * sizeof(T));
		return v;
	}

	std::vector<uint8_t> win;
	Semaphores sems;
	Counters ctr;
	std::vector<Instr> prog;
	std::vector<PackedRegion> packed;
	std::unique_ptr<Core> core;
};

std::vector<float> random_f32(size_t n, uint32_t seed, float lo = -1, float hi = 1)
{
	std::mt19937 rng(seed);
	std::uniform_real_distribution<float> d(lo, hi);
	std::vector<float> v(n);
	for (float &x : v)
		x = d(rng);
	return v;
}

std::vector<int8_t> random_i8(size_t n, uint32_t seed)
{
	std::mt19937 rng(seed);
	std::vector<int8_t> v(n);
	for (int8_t &x : v)
		x = int8_t(rng());
	return v;
}

// ---- scalar instructions -----------------------------------------------------

TEST(NspCore, StartsWithKAndN)
{
	Machine m;
	Core &c = m.load({I(Op::Halt)}, 3, 7);
	EXPECT_EQ(c.reg(1), 3u);
	EXPECT_EQ(c.reg(2), 7u);
	for (unsigned i = 3; i < kNumRegs; i++)
		EXPECT_EQ(c.reg(i), 0u);
	m.halts();
}

TEST(NspCore, Arithmetic)
{
	Machine m;
	m.load({
		Li(3, 40),
		Li(4, 2),
		I(Op::Add, 5, 3, 4),
		I(Op::Sub, 6, 4, 3), // wraps
		I(Op::Mul, 7, 3, 4),
		Li(8, 0xF0F0),
		Li(9, 0x0FF0),
		I(Op::And, 10, 8, 9),
		I(Op::Or, 11, 8, 9),
		I(Op::Shl, 12, 4, 4),
		I(Op::Shr, 13, 8, 4),
		Li(14, 65),          // shifts use the low 6 bits
		I(Op::Shl, 15, 4, 14),
		I(Op::Addi, 16, 3, 0, 0, uint64_t(-50)),
		Li(0, 99),           // r0 stays 0
		I(Op::Add, 17, 0, 3),
		I(Op::Halt),
	});
	m.halts();
	Core &c = *m.core;
	EXPECT_EQ(c.reg(5), 42u);
	EXPECT_EQ(c.reg(6), uint64_t(-38));
	EXPECT_EQ(c.reg(7), 80u);
	EXPECT_EQ(c.reg(10), 0x00F0u);
	EXPECT_EQ(c.reg(11), 0xFFF0u);
	EXPECT_EQ(c.reg(12), 8u);
	EXPECT_EQ(c.reg(13), 0x3C3Cu);
	EXPECT_EQ(c.reg(15), 4u);
	EXPECT_EQ(c.reg(16), uint64_t(-10));
	EXPECT_EQ(c.reg(0), 0u);
	EXPECT_EQ(c.reg(17), 40u);
	EXPECT_EQ(c.executed(), 17u);
}

TEST(NspCore, LoadsAndStoresAnyAlignment)
{
	Machine m;
	m.put<uint64_t>(0x101, 0x1122334455667788ull);
	m.put<uint32_t>(0x203, 0xDEADBEEF);
	m.load({
		Li(3, 0x109),
		I(Op::Ld, 4, 3, 0, 0, uint64_t(-8)), // 0x101
		Li(5, 0x200),
		I(Op::Ld32, 6, 5, 0, 0, 3),          // zero-extended
		Li(7, 0xAABBCCDDEEFF0011ull),
		I(Op::St, 7, 5, 0, 0, 0x11),
		I(Op::St32, 7, 5, 0, 0, 0x21),
		I(Op::Halt),
	});
	m.halts();
	EXPECT_EQ(m.core->reg(4), 0x1122334455667788ull);
	EXPECT_EQ(m.core->reg(6), 0xDEADBEEFull);
	EXPECT_EQ(m.get<uint64_t>(0x211), 0xAABBCCDDEEFF0011ull);
	EXPECT_EQ(m.get<uint32_t>(0x221), 0xEEFF0011u);
	EXPECT_EQ(m.win[0x225], 0);
}

TEST(NspCore, Branches)
{
	Machine m;
	// r3 counts to 100 in a loop; BLT is unsigned; BEQ/BNE fall through.
	m.load({
		Li(4, 100),                     // 0
		I(Op::Addi, 3, 3, 0, 0, 1),     // 1
		I(Op::Blt, 3, 4, 0, 1),         // 2
		Li(5, uint64_t(-1)),            // 3
		Li(6, 1),                       // 4
		I(Op::Blt, 5, 6, 0, 9),         // 5: -1 is not below 1 unsigned
		I(Op::Beq, 5, 6, 0, 9),         // 6
		I(Op::Bne, 5, 5, 0, 9),         // 7
		I(Op::Jmp, 0, 0, 0, 10),        // 8
		I(Op::Halt),                    // 9: not reached
		I(Op::Beq, 5, 5, 0, 12),        // 10
		I(Op::Halt),                    // 11
		Li(7, 1),                       // 12
		I(Op::Bne, 5, 6, 0, 15),        // 13
		I(Op::Halt),                    // 14
		Li(8, 1),                       // 15
		I(Op::Halt),
	});
	m.halts();
	EXPECT_EQ(m.core->reg(3), 100u);
	EXPECT_EQ(m.core->reg(7), 1u);
	EXPECT_EQ(m.core->reg(8), 1u);
	EXPECT_EQ(m.core->pc(), 16u);
}

TEST(NspCore, SemaphoreArithmeticSaturates)
{
	Machine m;
	m.load({
		I(Op::SemSet, 5, 0, 0, 4000),
		I(Op::SemInc, 5, 0, 0, 200), // 4095
		I(Op::SemSet, 6, 0, 0, 3),
		I(Op::SemDec, 6, 0, 0, 10),  // 0
		I(Op::SemInc, 31, 0, 0, 7),
		I(Op::SemDec, 31, 0, 0, 2),
		I(Op::Halt),
	});
	m.halts();
	EXPECT_EQ(m.sems.value(5), 4095);
	EXPECT_EQ(m.sems.value(6), 0);
	EXPECT_EQ(m.sems.value(31), 5);
}

TEST(NspCore, SemWaitConditions)
{
	Machine m;
	m.load({
		I(Op::SemWait, 2, uint8_t(Cond::Eq), 0, 3),
		I(Op::SemWait, 2, uint8_t(Cond::Ge), 0, 5),
		I(Op::SemWait, 3, uint8_t(Cond::Gt0)),
		I(Op::Halt),
	});
	Core &c = *m.core;
	// Not satisfied: step() leaves pc on the SEMWAIT.
	EXPECT_TRUE(c.step());
	EXPECT_EQ(c.pc(), 0u);
	m.sems.apply(2, Semaphores::Op::Init, 4);
	EXPECT_TRUE(c.step());
	EXPECT_EQ(c.pc(), 0u);
	m.sems.apply(2, Semaphores::Op::Dec, 1);
	EXPECT_TRUE(c.step());
	EXPECT_EQ(c.pc(), 1u);
	EXPECT_TRUE(c.step());
	EXPECT_EQ(c.pc(), 1u);
	m.sems.apply(2, Semaphores::Op::Inc, 3); // 6 >= 5
	EXPECT_TRUE(c.step());
	EXPECT_EQ(c.pc(), 2u);
	EXPECT_TRUE(c.step());
	EXPECT_EQ(c.pc(), 2u);
	m.sems.apply(3, Semaphores::Op::Inc, 1);
	EXPECT_TRUE(c.step());
	EXPECT_FALSE(c.step());
	EXPECT_TRUE(c.halted());
	EXPECT_EQ(m.sems.value(3), 1); // SEMWAIT does not consume
}

TEST(NspCore, MarkCountsIterations)
{
	Machine m;
	m.load({Li(4, 5), I(Op::Mark), I(Op::Addi, 3, 3, 0, 0, 1), I(Op::Bne, 3, 4, 0, 1), I(Op::Halt)});
	m.halts();
	EXPECT_EQ(m.ctr.iterations.load(), 5u);
}

// ---- vector instructions -----------------------------------------------------

TEST(NspVector, CopyIsAMemmove)
{
	Machine m;
	for (int i = 0; i < 100; i++)
		m.win[0x100 + i] = uint8_t(i);
	m.load({Li(3, 0x105), Li(4, 0x100), Li(5, 100), I(Op::Copy, 3, 4, 5), Li(5, 0),
		I(Op::Copy, 3, 4, 5), I(Op::Halt)});
	m.halts();
	for (int i = 0; i < 100; i++)
		ASSERT_EQ(m.win[0x105 + i], i);
}

TEST(NspVector, AddMulF32OddCountsUnaligned)
{
	for (uint64_t n : {0ull, 1ull, 63ull, 64ull, 67ull, 1001ull}) {
		Machine m;
		const auto x = random_f32(n, 1), y = random_f32(n, 2);
		m.put_all(0x1003, x);
		m.put_all(0x3001, y);
		m.load({Li(3, 0x5002), Li(4, 0x1003), Li(5, 0x3001), Li(6, n), I(Op::VAddF, 3, 4, 5, 6),
			Li(3, 0x7001), I(Op::VMulF, 3, 4, 5, 6), I(Op::Halt)});
		m.halts();
		const auto sum = m.get_all<float>(0x5002, n), prod = m.get_all<float>(0x7001, n);
		for (size_t i = 0; i < n; i++) {
			ASSERT_EQ(sum[i], x[i] + y[i]);
			ASSERT_EQ(prod[i], x[i] * y[i]);
		}
		EXPECT_EQ(m.get<float>(0x5002 + n * 4), 0.0f); // nothing past n
	}
}

TEST(NspVector, AddI8Saturates)
{
	Machine m;
	const std::vector<int8_t> x = {100, -100, 127, -128, 5, -5, 0, 64, -64};
	const std::vector<int8_t> y = {100, -100, 1, -1, -10, 10, 0, 63, -65};
	const std::vector<int8_t> want = {127, -128, 127, -128, -5, 5, 0, 127, -128};
	m.put_all(0x10, x);
	m.put_all(0x20, y);
	m.load({Li(3, 0x31), Li(4, 0x10), Li(5, 0x20), Li(6, x.size()), I(Op::VAddI8, 3, 4, 5, 6),
		I(Op::Halt)});
	m.halts();
	EXPECT_EQ(m.get_all<int8_t>(0x31, x.size()), want);
	// Long vectors against a reference.
	Machine m2;
	const auto a = random_i8(1000, 3), b = random_i8(1000, 4);
	m2.put_all(0x1000, a);
	m2.put_all(0x2000, b);
	m2.load({Li(3, 0x3000), Li(4, 0x1000), Li(5, 0x2000), Li(6, 1000), I(Op::VAddI8, 3, 4, 5, 6),
		 I(Op::Halt)});
	m2.halts();
	const auto got = m2.get_all<int8_t>(0x3000, 1000);
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ(got[i], std::clamp(a[i] + b[i], -128, 127));
}

TEST(NspVector, ScaleAndConvert)
{
	Machine m;
	const auto x = random_f32(77, 5, -100, 100);
	const std::vector<int32_t> ints = {0, 1, -1, 1 << 30, -(1 << 30), 123456, -7};
	m.put_all(0x100, x);
	m.put_all(0x800, ints);
	m.load({Li(3, 0x400), Li(4, 0x100), Li(5, 77), I(Op::VScaleF, 3, 4, 5, 0, f32_bits(-0.25f)),
		Li(3, 0x900), Li(4, 0x800), Li(5, ints.size()), I(Op::CvtI32F, 3, 4, 5, 0, f32_bits(0.5f)),
		I(Op::Halt)});
	m.halts();
	const auto s = m.get_all<float>(0x400, 77);
	for (int i = 0; i < 77; i++)
		ASSERT_EQ(s[i], x[i] * -0.25f);
	const auto f = m.get_all<float>(0x900, ints.size());
	for (size_t i = 0; i < ints.size(); i++)
		EXPECT_EQ(f[i], float(ints[i]) * 0.5f);
}

TEST(NspVector, Activations)
{
	const auto x = random_f32(301, 6, -6, 6);
	auto gelu = [](double v) {
		return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
	};
	for (uint32_t kind = 0; kind < 4; kind++) {
		Machine m;
		m.put_all(0x100, x);
		m.load({Li(3, 0x1000), Li(4, 0x100), Li(5, x.size()), I(Op::ActF, 3, 4, 5, kind),
			// in place too
			I(Op::ActF, 4, 4, 5, kind), I(Op::Halt)});
		m.halts();
		const auto out = m.get_all<float>(0x1000, x.size()), inplace = m.get_all<float>(0x100, x.size());
		for (size_t i = 0; i < x.size(); i++) {
			const double v = x[i];
			const double want = kind == 0   ? std::max(v, 0.0)
					    : kind == 1 ? 1 / (1 + std::exp(-v))
					    : kind == 2 ? std::tanh(v)
							: gelu(v);
			ASSERT_NEAR(out[i], want, 1e-5) << "kind " << kind << " x " << v;
			ASSERT_EQ(out[i], inplace[i]);
		}
	}
}

TEST(NspVector, SumAndMax)
{
	Machine m;
	const auto x = random_f32(1003, 7, -10, 10);
	m.put_all(0x101, x);
	m.put<float>(0x3000, std::numeric_limits<float>::quiet_NaN());
	m.put<float>(0x3004, -3.0f);
	m.put<float>(0x3008, -2.0f);
	m.load({Li(3, 0x2001), Li(4, 0x101), Li(5, x.size()), I(Op::SumF, 3, 4, 5), Li(3, 0x2005),
		I(Op::MaxF, 3, 4, 5), Li(5, 0), Li(3, 0x2009), I(Op::SumF, 3, 4, 5), Li(3, 0x200D),
		I(Op::MaxF, 3, 4, 5), Li(3, 0x2011), Li(4, 0x3000), Li(5, 3), I(Op::MaxF, 3, 4, 5),
		I(Op::Halt)});
	m.halts();
	double sum = 0;
	float mx = -1e30f;
	for (float v : x) {
		sum += v;
		mx = std::max(mx, v);
	}
	EXPECT_NEAR(m.get<float>(0x2001), sum, 1e-3);
	EXPECT_EQ(m.get<float>(0x2005), mx);
	EXPECT_EQ(m.get<float>(0x2009), 0.0f);
	EXPECT_EQ(m.get<float>(0x200D), -std::numeric_limits<float>::infinity());
	EXPECT_EQ(m.get<float>(0x2011), -2.0f); // the NaN is ignored
}

TEST(NspVector, Bias)
{
	Machine m;
	const auto x = random_f32(3 * 37 + 5, 8);
	const auto b = random_f32(37, 9);
	m.put_all(0x103, x);
	m.put_all(0x1001, b);
	m.load({Li(3, 0x103), Li(4, 0x1001), Li(5, x.size()), I(Op::BiasF, 3, 4, 5, 37), I(Op::Halt)});
	m.halts();
	const auto got = m.get_all<float>(0x103, x.size());
	for (size_t i = 0; i < x.size(); i++)
		ASSERT_EQ(got[i], x[i] + b[i % 37]);
}

// ---- GEMMs ---------------------------------------------------------------------

// The kernels themselves, on every code path: nsp_kernels_test.cc.
TEST(NspGemm, InstructionsUseWindowOffsets)
{
	const uint32_t M = 37, N = 19, K = 45;
	Machine m(1 << 20);
	const auto ai = random_i8(M * K, 1), bi = random_i8(K * N, 2);
	const auto af = random_f32(M * K, 3), bf = random_f32(K * N, 4);
	m.put_all(0x1001, ai);
	m.put_all(0x3003, bi);
	m.put_all(0x10001, af);
	m.put_all(0x20003, bf);
	m.load({Li(3, 0x5005), Li(4, 0x1001), Li(5, 0x3003), I(Op::MmI8, 3, 4, 5, 0, pack_mnk(M, N, K)),
		Li(3, 0x30007), Li(4, 0x10001), Li(5, 0x20003), I(Op::MmF32, 3, 4, 5, 0, pack_mnk(M, N, K)),
		I(Op::Halt)});
	m.halts();
	EXPECT_EQ(m.get_all<int32_t>(0x5005, M * N), reference_i8(ai, bi, M, N, K));
	EXPECT_EQ(m.get_all<float>(0x30007, M * N), reference_f32(af, bf, M, N, K));
}

// MMI8P takes its B packed (nsp.h's layout) wherever it lies in the window:
// the same C as MMI8 on B as it is.
TEST(NspGemm, PackedInstructionEqualsMmi8)
{
	const uint32_t M = 37, N = 45, K = 23;
	Machine m(1 << 20);
	const auto a = random_i8(M * K, 11), b = random_i8(K * N, 12);
	std::vector<uint8_t> packed(packed_b_size(K, N));
	pack_b(b, K, N, packed);
	m.put_all(0x1001, a);
	m.put_all(0x3003, b);
	m.put_all(0x8007, packed);
	m.declare_packed(0x8007, K, N);
	m.load({Li(3, 0x20001), Li(4, 0x1001), Li(5, 0x3003), I(Op::MmI8, 3, 4, 5, 0, pack_mnk(M, N, K)),
		Li(3, 0x30005), Li(5, 0x8007), I(Op::MmI8P, 3, 4, 5, 0, pack_mnk(M, N, K)), I(Op::Halt)});
	m.halts();
	EXPECT_EQ(m.get_all<int32_t>(0x30005, M * N), reference_i8(a, b, M, N, K));
	EXPECT_EQ(m.get_all<int32_t>(0x30005, M * N), m.get_all<int32_t>(0x20001, M * N));
}

// ---- faults --------------------------------------------------------------------

TEST(NspFault, UnknownOpcode)
{
	Machine m;
	m.load({I(Op::Nop), Instr{0xFF, 0, 0, 0, 0, 0}});
	EXPECT_EQ(m.faults(), "instruction 1 (opcode 0xff): unknown opcode");
	EXPECT_EQ(m.core->pc(), 1u);
	EXPECT_FALSE(m.core->step()); // stays faulted
}

TEST(NspFault, OperandOutsideWindow)
{
	Machine m(4096);
	m.load({Li(3, 0), Li(4, 0xF00), Li(5, 65), I(Op::VAddF, 3, 3, 4, 5)});
	EXPECT_EQ(m.faults(), "instruction 3 (VADDF): y [0xf00, +0x104) outside the window of 0x1000 bytes");
}

TEST(NspFault, HugeCountsDoNotWrap)
{
	Machine m(4096);
	m.load({Li(4, 1ull << 62), I(Op::VScaleF, 3, 3, 4)});
	EXPECT_NE(m.faults().find("overflow"), std::string::npos);
	m.load({Li(3, ~0ull - 2), I(Op::Ld, 4, 3)});
	EXPECT_EQ(m.faults(), "instruction 1 (LD): address [0xfffffffffffffffd, +0x8) outside the window of "
			      "0x1000 bytes");
	m.load({Li(3, 4092), I(Op::Ld32, 4, 3), I(Op::Ld, 4, 3)});
	EXPECT_NE(m.faults().find("instruction 2 (LD): address [0xffc, +0x8)"), std::string::npos);
	m.load({Li(4, ~0ull), I(Op::Copy, 3, 3, 4)});
	EXPECT_NE(m.faults().find("(COPY): dst [0x0, +0xffffffffffffffff)"), std::string::npos);
}

TEST(NspFault, GemmOperands)
{
	Machine m(4096);
	m.load({I(Op::MmI8, 3, 4, 5, 0, pack_mnk(0, 1, 1))});
	EXPECT_NE(m.faults().find("M=0 N=1 K=1"), std::string::npos);
	m.load({I(Op::MmF32, 3, 4, 5, 0, pack_mnk(1, 1, 1) | 1ull << 63)});
	EXPECT_NE(m.faults().find("K=2097153"), std::string::npos);
	m.load({I(Op::MmF32, 3, 4, 5, 0, pack_mnk(16, 16, 16)), I(Op::Halt)});
	m.halts(); // 1 KiB each: fits
	m.load({I(Op::MmF32, 3, 4, 5, 0, pack_mnk(33, 32, 1))});
	EXPECT_EQ(m.faults(), "instruction 0 (MMF32): C [0x0, +0x1080) outside the window of 0x1000 bytes");
	m.load({Li(4, 4000), I(Op::MmI8, 3, 4, 5, 0, pack_mnk(10, 1, 10))});
	EXPECT_EQ(m.faults(), "instruction 1 (MMI8): A [0xfa0, +0x64) outside the window of 0x1000 bytes");
	// A packed B of 1 column and 5 k: two quads of a 32-column strip.
	m.declare_packed(4096 - 255, 5, 1);
	m.load({Li(3, 0), Li(4, 0), Li(5, 4096 - 255), I(Op::MmI8P, 3, 4, 5, 0, pack_mnk(1, 1, 5))});
	EXPECT_EQ(m.faults(), "instruction 3 (MMI8P): B (packed) [0xf01, +0x100) outside the window of 0x1000 bytes");
}

// MMI8P reads B only from a region the workload declared, with the K and N
// it declared: the card never takes other bytes for packed weights.
TEST(NspFault, PackedBMustBeADeclaredRegionOfItsShape)
{
	Machine m(1 << 16);
	m.load({Li(5, 0x8000), I(Op::MmI8P, 3, 4, 5, 0, pack_mnk(4, 45, 23))});
	EXPECT_EQ(m.faults(), "instruction 1 (MMI8P): B (packed) at 0x8000 is not a region .aic.packed declares");
	EXPECT_EQ(m.core->fault_addr(), 0x8000u);
	m.declare_packed(0x8000, 23, 45);
	m.load({Li(5, 0x8000), I(Op::MmI8P, 3, 4, 5, 0, pack_mnk(4, 44, 23))});
	EXPECT_EQ(m.faults(), "instruction 1 (MMI8P): B (packed) at 0x8000 is declared K=23 N=45, used as K=23 N=44");
	m.load({Li(5, 0x8020), I(Op::MmI8P, 3, 4, 5, 0, pack_mnk(4, 45, 23))});
	EXPECT_EQ(m.faults(), "instruction 1 (MMI8P): B (packed) at 0x8020 is not a region .aic.packed declares");
	m.load({Li(5, 0x8000), I(Op::MmI8P, 3, 4, 5, 0, pack_mnk(4, 45, 23)), I(Op::Halt)});
	m.halts();
}

// An operand overlapping C is copied before the GEMM runs: 64 MiB at most,
// so that a program cannot make each of 16 cores copy 4 GiB.
TEST(NspFault, GemmOperandOverlappingCIsAtMost64MiB)
{
	const uint64_t a_bytes = 4096ull * 4097 * 4;
	Machine m(a_bytes + 4097 * 4);
	m.load({Li(5, a_bytes), I(Op::MmF32, 3, 4, 5, 0, pack_mnk(4096, 1, 4097))});
	EXPECT_EQ(m.faults(), "instruction 1 (MMF32): A overlaps C and is larger than 64 MiB");
	m.load({Li(4, 16), Li(5, 0), I(Op::MmI8, 3, 4, 5, 0, pack_mnk(1, 1048577, 64)), I(Op::Halt)});
	EXPECT_EQ(m.faults(), "instruction 2 (MMI8): B overlaps C and is larger than 64 MiB");
	// At the limit it runs.
	m.load({Li(5, 64ull << 20), I(Op::MmF32, 3, 4, 5, 0, pack_mnk(4096, 1, 4096)), I(Op::Halt)});
	m.halts();
}

// 16 cores each keeping its copies of operands that overlapped C (up to
// 2 x 64 MiB) would hold 2 GiB of a card's host memory between GEMMs.
TEST(NspFault, ACoreKeepsNoCopyOfAnOperandOverlappingCAfterItsGemm)
{
	Machine m((64ull << 20) + 4096 * 4);
	Core &core = m.load({Li(5, 64ull << 20), I(Op::MmF32, 3, 4, 5, 0, pack_mnk(4096, 1, 4096)), I(Op::Halt)});
	m.halts();
	EXPECT_LE(core.scratch_bytes(), Core::kScratchKept + (4u << 20)) << "the packing buffers only";
}

TEST(NspFault, BadFields)
{
	Machine m;
	m.load({I(Op::Add, 3, 32, 4)});
	EXPECT_EQ(m.faults(), "instruction 0 (ADD): register r32 does not exist");
	m.load({I(Op::VAddF, 3, 4, 5, 40)});
	EXPECT_EQ(m.faults(), "instruction 0 (VADDF): register r40 does not exist");
	m.load({I(Op::SemInc, 32, 0, 0, 1)});
	EXPECT_EQ(m.faults(), "instruction 0 (SEMINC): semaphore 32 (0..31)");
	m.load({I(Op::SemWait, 40, 0, 0, 1)});
	EXPECT_EQ(m.faults(), "instruction 0 (SEMWAIT): semaphore 40 (0..31)");
	m.load({I(Op::SemWait, 1, 3, 0, 1)});
	EXPECT_EQ(m.faults(), "instruction 0 (SEMWAIT): condition 3 (0 ==, 1 >=, 2 > 0)");
	m.load({I(Op::SemSet, 1, 0, 0, 4096)});
	EXPECT_EQ(m.faults(), "instruction 0 (SEMSET): semaphore value 4096 (0..4095)");
	m.load({I(Op::ActF, 3, 4, 5, 4)});
	EXPECT_EQ(m.faults(), "instruction 0 (ACTF): activation kind 4 (0..3)");
	m.load({I(Op::BiasF, 3, 4, 5, 0)});
	EXPECT_EQ(m.faults(), "instruction 0 (BIASF): 0 columns");
}

TEST(NspFault, BranchOutsideProgram)
{
	Machine m;
	m.load({I(Op::Nop), I(Op::Jmp, 0, 0, 0, 2)});
	EXPECT_EQ(m.faults(), "instruction 1 (JMP): branch to 2 outside the program of 2 instructions");
	m.load({I(Op::Beq, 0, 0, 0, 0xFFFFFFFF)});
	EXPECT_NE(m.faults().find("branch to 4294967295"), std::string::npos);
	m.load({I(Op::Bne, 0, 0, 0, 99), I(Op::Nop)}); // not taken: no fault, then off the end
	EXPECT_EQ(m.faults(), "pc 2: ran past the end of the program of 2 instructions");
}

// ---- run(): stop, busy time ----------------------------------------------------

TEST(NspRun, StopsAnInfiniteLoop)
{
	for (uint32_t target : {0u, 1u}) { // a self-loop, and a loop with a body
		Machine m;
		m.load({I(Op::Nop), I(Op::Addi, 3, 3, 0, 0, 1), I(Op::Jmp, 0, 0, 0, target)});
		std::atomic<bool> stop{false};
		std::thread t([&] {
			std::this_thread::sleep_for(30ms);
			stop = true;
		});
		const auto t0 = Clock::now();
		EXPECT_EQ(m.core->run([&] { return stop.load(); }), Core::Exit::Stopped);
		EXPECT_LT(Clock::now() - t0, 10s); // a hang, not a speed: the machine may be loaded
		t.join();
		EXPECT_GT(m.core->reg(3), 1000u);
		EXPECT_GT(m.ctr.busy_ns.load(), 20'000'000u);
		// It can be resumed.
		stop = false;
		const uint64_t before = m.core->reg(3);
		int polls = 0;
		EXPECT_EQ(m.core->run([&] { return ++polls > 3; }), Core::Exit::Stopped);
		EXPECT_GT(m.core->reg(3), before);
	}
}

TEST(NspRun, SemWaitIsNotBusyTime)
{
	Machine m;
	m.load({I(Op::SemWait, 0, uint8_t(Cond::Gt0)), I(Op::Halt)});
	std::thread t([&] {
		std::this_thread::sleep_for(100ms);
		m.sems.apply(0, Semaphores::Op::Inc, 1);
	});
	EXPECT_EQ(m.core->run([] { return false; }), Core::Exit::Halted);
	t.join();
	EXPECT_LT(m.ctr.busy_ns.load(), 50'000'000u);
	EXPECT_EQ(m.core->run([] { return false; }), Core::Exit::Halted);
}

TEST(NspRun, StopsInsideALongGemm)
{
	// A 1024^3 GEMM asks whether to stop while it runs, not only between
	// instructions: stop at the second time anyone asks, which can only be
	// inside the GEMM (a program of four instructions asks at most once
	// between them). Counted, not timed, so a loaded machine cannot make
	// the GEMM finish first.
	const uint32_t n = 1024;
	Machine m(3ull * n * n * 4);
	m.load({Li(4, uint64_t(n) * n * 4), Li(5, uint64_t(n) * n * 8),
		I(Op::MmF32, 3, 4, 5, 0, pack_mnk(n, n, n)), I(Op::Halt)});
	int asked = 0;
	EXPECT_EQ(m.core->run([&] { return ++asked >= 2; }), Core::Exit::Stopped);
	EXPECT_EQ(m.core->pc(), 2u); // the GEMM runs again on the next run()
	EXPECT_EQ(asked, 2);
}

// ---- ELF -----------------------------------------------------------------------

void put16(std::vector<uint8_t> &f, size_t off, uint16_t v)
{
	std::memcpy(&f[off], &v, 2);
}
void put32(std::vector<uint8_t> &f, size_t off, uint32_t v)
{
	std::memcpy(&f[off], &v, 4);
}
void put64(std::vector<uint8_t> &f, size_t off, uint64_t v)
{
	std::memcpy(&f[off], &v, 8);
}
uint64_t get64(const std::vector<uint8_t> &f, size_t off)
{
	uint64_t v;
	std::memcpy(&v, &f[off], 8);
	return v;
}

// An ELF written here from docs/nsp.md, independently of tools/nspasm.
struct ElfSpec {
	uint16_t nsps = 2;
	uint64_t io_size = 0x10000;
	uint32_t entry = 1;
	std::string name = "test";
	std::vector<Instr> text = {I(Op::Nop), I(Op::Mark), I(Op::Jmp, 0, 0, 0, 1)};
	struct Seg {
		uint64_t vaddr;
		std::vector<uint8_t> data;
		uint64_t memsz;
		uint32_t flags = 6; // RW
	};
	std::vector<Seg> segs = {{0x100, {1, 2, 3, 4}, 8}, {0x2000, {9}, 0x1000}};
	// With a value, a fifth section .aic.packed holding these bytes.
	std::optional<std::vector<uint8_t>> packed;
};

// .aic.packed's bytes for these regions (offset u64, size u64, k u32, n u32).
std::vector<uint8_t> packed_entries(const std::vector<PackedRegion> &regions)
{
	std::vector<uint8_t> b(regions.size() * 24);
	for (size_t i = 0; i < regions.size(); i++) {
		std::memcpy(&b[i * 24], &regions[i].offset, 8);
		std::memcpy(&b[i * 24 + 8], &regions[i].size, 8);
		std::memcpy(&b[i * 24 + 16], &regions[i].k, 4);
		std::memcpy(&b[i * 24 + 20], &regions[i].n, 4);
	}
	return b;
}

// Layout: ehdr | phdrs | meta | text | segment data | [packed] | shstrtab |
// shdrs (null, .aic.meta, .aic.text, .shstrtab[, .aic.packed]).
std::vector<uint8_t> make_elf(const ElfSpec &s)
{
	std::vector<uint8_t> f(64 + 56 * s.segs.size());
	auto append = [&f](const void *p, size_t n) {
		const size_t off = f.size();
		f.insert(f.end(), static_cast<const uint8_t *>(p), static_cast<const uint8_t *>(p) + n);
		return off;
	};
	uint8_t meta[48] = {};
	uint32_t magic = kMetaMagic;
	uint16_t version = 1;
	std::memcpy(meta, &magic, 4);
	std::memcpy(meta + 4, &version, 2);
	std::memcpy(meta + 6, &s.nsps, 2);
	std::memcpy(meta + 8, &s.io_size, 8);
	std::memcpy(meta + 16, &s.entry, 4);
	std::memcpy(meta + 24, s.name.data(), std::min<size_t>(s.name.size(), 24));
	const size_t meta_off = append(meta, 48);
	const size_t text_off = append(s.text.data(), s.text.size() * 16);
	for (size_t i = 0; i < s.segs.size(); i++) {
		const size_t off = append(s.segs[i].data.data(), s.segs[i].data.size());
		const size_t h = 64 + 56 * i;
		put32(f, h, 1);
		put32(f, h + 4, s.segs[i].flags);
		put64(f, h + 8, off);
		put64(f, h + 16, s.segs[i].vaddr);
		put64(f, h + 24, s.segs[i].vaddr);
		put64(f, h + 32, s.segs[i].data.size());
		put64(f, h + 40, s.segs[i].memsz);
		put64(f, h + 48, 1);
	}
	const size_t packed_off = s.packed ? append(s.packed->data(), s.packed->size()) : 0;
	// .aic.packed's name only with the section: the table's last byte
	// terminates the last name in use.
	static constexpr char kNames[] = "\0.aic.meta\0.aic.text\0.shstrtab\0.aic.packed";
	const std::string_view names(kNames, s.packed ? sizeof(kNames) : 31);
	const size_t str_off = append(names.data(), names.size());
	while (f.size() % 8)
		f.push_back(0);
	const size_t shoff = f.size();
	const uint16_t sections = s.packed ? 5 : 4;
	f.resize(shoff + sections * 64);
	auto sh = [&](int i, uint32_t name, uint32_t type, uint64_t off, uint64_t size) {
		const size_t h = shoff + 64 * i;
		put32(f, h, name);
		put32(f, h + 4, type);
		put64(f, h + 24, off);
		put64(f, h + 32, size);
	};
	sh(1, 1, 1, meta_off, 48);
	sh(2, 11, 1, text_off, s.text.size() * 16);
	sh(3, 21, 3, str_off, names.size());
	if (s.packed)
		sh(4, 31, 1, packed_off, s.packed->size());
	std::memcpy(&f[0], "\x7f" "ELF\x02\x01\x01", 7);
	put16(f, 16, 2);
	put16(f, 18, 164);
	put32(f, 20, 1);
	put64(f, 32, 64);
	put64(f, 40, shoff);
	put16(f, 52, 64);
	put16(f, 54, 56);
	put16(f, 56, uint16_t(s.segs.size()));
	put16(f, 58, 64);
	put16(f, 60, sections);
	put16(f, 62, 3);
	return f;
}

size_t shdr(const std::vector<uint8_t> &f, int i)
{
	return size_t(get64(f, 40)) + 64 * i;
}

std::string parse_error(const std::vector<uint8_t> &f)
{
	std::string err;
	auto w = parse(f, err);
	EXPECT_FALSE(w) << "accepted";
	return err;
}

TEST(NspElf, ParsesAWellFormedElf)
{
	std::string err;
	auto w = parse(make_elf({}), err);
	ASSERT_TRUE(w) << err;
	EXPECT_EQ(w->meta.nsp_count, 2);
	EXPECT_EQ(w->meta.io_size, 0x10000u);
	EXPECT_EQ(w->meta.entry, 1u);
	EXPECT_EQ(w->meta.name, "test");
	ASSERT_EQ(w->program.size(), 3u);
	EXPECT_EQ(w->program[2].op, uint8_t(Op::Jmp));
	EXPECT_EQ(w->program[2].imm32, 1u);
	ASSERT_EQ(w->segments.size(), 2u);
	EXPECT_EQ(w->segments[0].offset, 0x100u);
	EXPECT_EQ(w->segments[0].data, (std::vector<uint8_t>{1, 2, 3, 4}));
	EXPECT_EQ(w->segments[1].memsz, 0x1000u);

	std::vector<uint8_t> win(0x10000, 0xEE);
	ASSERT_TRUE(load_segments(*w, win));
	EXPECT_EQ(win[0xFF], 0xEE);
	EXPECT_EQ(win[0x100], 1);
	EXPECT_EQ(win[0x104], 0);
	EXPECT_EQ(win[0x107], 0);
	EXPECT_EQ(win[0x108], 0xEE);
	EXPECT_EQ(win[0x2000], 9);
	EXPECT_EQ(win[0x2FFF], 0);
	EXPECT_EQ(win[0x3000], 0xEE);
	std::vector<uint8_t> small(0x2FFF, 0xEE);
	EXPECT_FALSE(load_segments(*w, small));
	EXPECT_EQ(small[0x100], 0xEE); // nothing written
}

TEST(NspElf, IgnoresExecutableSegmentsAndOtherSections)
{
	ElfSpec s;
	s.segs.push_back({0x100, {7}, 1, 5}); // R+X: overlaps, but is not window data
	std::string err;
	auto w = parse(make_elf(s), err);
	ASSERT_TRUE(w) << err;
	EXPECT_EQ(w->segments.size(), 2u);
}

TEST(NspElf, RejectsBadHeaders)
{
	const auto good = make_elf({});
	auto with = [&good](auto patch) {
		auto f = good;
		patch(f);
		return parse_error(f);
	};
	EXPECT_EQ(with([](auto &f) { f[0] = 0; }), "not an ELF file");
	EXPECT_EQ(with([](auto &f) { f[4] = 1; }), "not a little-endian ELF64 (version 1)");
	EXPECT_EQ(with([](auto &f) { f[5] = 2; }), "not a little-endian ELF64 (version 1)");
	EXPECT_EQ(with([](auto &f) { put16(f, 16, 3); }), "e_type is not ET_EXEC");
	EXPECT_EQ(with([](auto &f) { put16(f, 18, 62); }), "e_machine is not 164 (EM_QDSP6)");
	EXPECT_EQ(with([](auto &f) { put16(f, 58, 40); }), "e_shentsize is not 64");
	EXPECT_EQ(with([](auto &f) { put16(f, 60, 0); }), "no section headers");
	EXPECT_EQ(with([](auto &f) { put64(f, 40, ~0ull - 100); }), "section headers outside the file");
	EXPECT_EQ(with([](auto &f) { put16(f, 60, 0xFFFF); }), "section headers outside the file");
	EXPECT_EQ(with([](auto &f) { put16(f, 62, 4); }), "e_shstrndx out of range");
	EXPECT_EQ(with([](auto &f) { put16(f, 62, 0); }), "no section name table");
	EXPECT_EQ(with([](auto &f) { put16(f, 54, 32); }), "e_phentsize is not 56");
	EXPECT_EQ(with([](auto &f) { put64(f, 32, f.size() - 8); }), "program headers outside the file");
	EXPECT_EQ(with([](auto &f) { put64(f, 32, ~0ull); }), "program headers outside the file");
}

TEST(NspElf, RejectsBadSections)
{
	const auto good = make_elf({});
	auto with = [&good](auto patch) {
		auto f = good;
		patch(f);
		return parse_error(f);
	};
	EXPECT_EQ(with([](auto &f) { put64(f, shdr(f, 2) + 24, ~0ull - 8); }), "section 2 outside the file");
	EXPECT_EQ(with([](auto &f) { put64(f, shdr(f, 2) + 32, 1ull << 62); }), "section 2 outside the file");
	EXPECT_EQ(with([](auto &f) { put32(f, shdr(f, 1), 1000); }),
		  "section 1 name outside the name table");
	// The name table's last byte is its only terminator.
	EXPECT_EQ(with([](auto &f) {
			  const size_t st = shdr(f, 3);
			  f[get64(f, st + 24) + get64(f, st + 32) - 1] = 'x';
		  }),
		  "section 3 name not terminated");
	EXPECT_EQ(with([](auto &f) { put32(f, shdr(f, 1), 0); }), "no .aic.meta section");
	EXPECT_EQ(with([](auto &f) { put32(f, shdr(f, 2), 0); }), "no .aic.text section");
	EXPECT_EQ(with([](auto &f) { put32(f, shdr(f, 2), 1); }), "two .aic.meta sections");
	EXPECT_EQ(with([](auto &f) { put32(f, shdr(f, 1) + 4, 8); }), ".aic.meta has no contents");
	EXPECT_EQ(with([](auto &f) { put64(f, shdr(f, 1) + 32, 40); }), ".aic.meta is not 48 bytes");
	EXPECT_EQ(with([](auto &f) { put64(f, shdr(f, 2) + 32, 40); }),
		  ".aic.text size 40 is not a non-zero multiple of 16");
	EXPECT_EQ(with([](auto &f) { put64(f, shdr(f, 2) + 32, 0); }),
		  ".aic.text size 0 is not a non-zero multiple of 16");
}

TEST(NspElf, RejectsBadMeta)
{
	auto err = [](auto change) {
		ElfSpec s;
		change(s);
		return parse_error(make_elf(s));
	};
	EXPECT_EQ(err([](ElfSpec &s) { s.nsps = 0; }), ".aic.meta: nsp_count 0 not in 1..16");
	EXPECT_EQ(err([](ElfSpec &s) { s.nsps = 17; }), ".aic.meta: nsp_count 17 not in 1..16");
	EXPECT_EQ(err([](ElfSpec &s) { s.io_size = 4095; }), ".aic.meta: io_size 0xfff not in 4 KiB..4 GiB");
	EXPECT_EQ(err([](ElfSpec &s) { s.io_size = (4ull << 30) + 1; }),
		  ".aic.meta: io_size 0x100000001 not in 4 KiB..4 GiB");
	EXPECT_EQ(err([](ElfSpec &s) { s.entry = 3; }), "entry 3 outside the program of 3 instructions");
	EXPECT_EQ(err([](ElfSpec &s) { s.name = "bad\x01"; }), ".aic.meta: name is not printable ASCII");
	ElfSpec s;
	auto f = make_elf(s);
	const size_t meta = get64(f, shdr(f, 1) + 24);
	f[meta + 30] = 'x'; // after the NUL of "test"
	EXPECT_EQ(parse_error(f), ".aic.meta: name is not NUL-padded");
	f = make_elf(s);
	f[meta] ^= 1;
	EXPECT_EQ(parse_error(f), ".aic.meta: bad magic");
	f = make_elf(s);
	f[meta + 4] = 2;
	EXPECT_EQ(parse_error(f), ".aic.meta: version 2 is not 1");
	// Boundaries that are accepted.
	std::string e;
	s.io_size = 4ull << 30;
	s.name = std::string(24, 'n');
	s.nsps = 16;
	auto w = parse(make_elf(s), e);
	ASSERT_TRUE(w) << e;
	EXPECT_EQ(w->meta.name, std::string(24, 'n'));
}

TEST(NspElf, RejectsBadSegments)
{
	auto err = [](std::vector<ElfSpec::Seg> segs) {
		ElfSpec s;
		s.segs = std::move(segs);
		return parse_error(make_elf(s));
	};
	EXPECT_EQ(err({{0, {1, 2, 3}, 2}}), "segment 0: p_filesz above p_memsz");
	EXPECT_EQ(err({{0xFFFF, {1}, 2}}), "segment 0: [0xffff, +0x2) outside io_size 0x10000");
	EXPECT_EQ(err({{~0ull, {}, 2}}), "segment 0: [0xffffffffffffffff, +0x2) outside io_size 0x10000");
	EXPECT_EQ(err({{0x10, {}, ~0ull}}), "segment 0: [0x10, +0xffffffffffffffff) outside io_size 0x10000");
	EXPECT_EQ(err({{0x100, {}, 0x100}, {0x1FF, {}, 1}}), "segments overlap at window offset 0x1ff");
	EXPECT_EQ(err({{0x1FF, {}, 1}, {0x100, {}, 0x100}}), "segments overlap at window offset 0x1ff");
	// Touching is not overlapping; a segment may end at io_size.
	ElfSpec s;
	s.segs = {{0x100, {}, 0x100}, {0x200, {}, 1}, {0xFFFF, {5}, 1}};
	std::string e;
	EXPECT_TRUE(parse(make_elf(s), e)) << e;

	auto f = make_elf({});
	put64(f, 64 + 8, f.size() - 2); // data of segment 0 runs off the end
	EXPECT_EQ(parse_error(f), "segment 0: data outside the file");
	put64(f, 64 + 8, ~0ull);
	EXPECT_EQ(parse_error(f), "segment 0: data outside the file");
}

// `count` PT_LOADs that all name segment 0's `bytes` of file data, at
// window offsets `stride` apart (0: all at offset 0).
std::vector<uint8_t> elf_with_repeated_segment(unsigned count, uint64_t bytes, uint64_t stride)
{
	ElfSpec s;
	s.io_size = 4ull << 30;
	s.segs.assign(count, {0, {}, bytes});
	s.segs[0].data.assign(bytes, 0x5a);
	auto f = make_elf(s);
	const uint64_t data_off = get64(f, 64 + 8);
	for (unsigned i = 1; i < count; i++) {
		put64(f, 64 + 56 * i + 8, data_off);
		put64(f, 64 + 56 * i + 16, i * stride);
		put64(f, 64 + 56 * i + 32, bytes);
	}
	return f;
}

// 65,535 segments each covering 1 MiB of the window and the file: refused
// for the overlap before any is copied (64 GiB otherwise).
TEST(NspElf, RefusesOverlappingSegmentsBeforeCopyingThem)
{
	const auto f = elf_with_repeated_segment(0xFFFF, 1 << 20, 0);
	std::string err;
	test::AllocBudget budget(64 << 20);
	EXPECT_FALSE(parse(f, err));
	EXPECT_FALSE(budget.exceeded());
	EXPECT_EQ(err, "segments overlap at window offset 0x0");
}

// Disjoint in the window, but all the same file bytes: 4096 x 1 MiB of
// copies from a 1 MiB file. Refused, as no linker writes it.
TEST(NspElf, RefusesSegmentsThatShareFileBytes)
{
	const auto f = elf_with_repeated_segment(4096, 1 << 20, 1 << 20);
	std::string err;
	test::AllocBudget budget(64 << 20);
	EXPECT_FALSE(parse(f, err));
	EXPECT_FALSE(budget.exceeded());
	EXPECT_EQ(err.rfind("segments share file bytes at offset 0x", 0), 0u) << err;
}

// .aic.packed (docs/nsp.md, "Packed weights"): each region's size must be
// what MMI8P's layout gives its K and N, inside io_size, none overlapping.
TEST(NspElf, ReadsPackedRegionsSortedByOffset)
{
	ElfSpec s;
	const PackedRegion late{0x8000, packed_b_size(23, 45), 23, 45}, early{0x4000, packed_b_size(5, 1), 5, 1};
	s.packed = packed_entries({late, early});
	std::string err;
	auto w = parse(make_elf(s), err);
	ASSERT_TRUE(w) << err;
	EXPECT_EQ(w->packed, (std::vector<PackedRegion>{early, late}));
	EXPECT_EQ(find_packed(w->packed, 0x8000), &w->packed[1]);
	EXPECT_EQ(find_packed(w->packed, 0x8001), nullptr);
}

TEST(NspElf, RefusesAPackedRegionWhoseSizeDoesNotMatchItsShape)
{
	ElfSpec s;
	// K·N bytes, as if unpacked: 23 × 45 = 1035, the layout takes 1536.
	s.packed = packed_entries({{0x8000, 23 * 45, 23, 45}});
	EXPECT_EQ(parse_error(make_elf(s)), ".aic.packed region 0 at 0x8000: size 0x40b is not what MMI8P's layout "
					    "takes for K=23 N=45 (0x600)");
}

TEST(NspElf, RefusesBadPackedRegions)
{
	ElfSpec s;
	auto refused = [&s](std::vector<PackedRegion> regions) {
		s.packed = packed_entries(regions);
		return parse_error(make_elf(s));
	};
	EXPECT_EQ(refused({{0x8000, 0, 0, 4}}), ".aic.packed region 0 at 0x8000: K=0 N=4: each must be 1..2^21-1");
	EXPECT_EQ(refused({{0x8000, 128, 1, 1u << 21}}),
		  ".aic.packed region 0 at 0x8000: K=1 N=2097152: each must be 1..2^21-1");
	EXPECT_EQ(refused({{0xFF80, 256, 5, 1}}),
		  ".aic.packed region 0 at 0xff80: [0xff80, +0x100) outside io_size 0x10000");
	EXPECT_EQ(refused({{~0ull - 127, 128, 1, 1}}),
		  ".aic.packed region 0 at 0xffffffffffffff80: [0xffffffffffffff80, +0x80) outside io_size 0x10000");
	EXPECT_EQ(refused({{0x8000, 256, 5, 1}, {0x80FF, 128, 1, 1}}),
		  ".aic.packed: regions overlap at window offset 0x80ff");
	s.packed = std::vector<uint8_t>(25);
	EXPECT_EQ(parse_error(make_elf(s)), ".aic.packed size 25 is not a multiple of 24");
}

TEST(NspElf, SurvivesTruncationAndCorruption)
{
	const auto good = make_elf({});
	std::string err;
	for (size_t len = 0; len < good.size(); len++) {
		std::vector<uint8_t> f(good.begin(), good.begin() + len);
		f.shrink_to_fit(); // so that reading past the end would be caught by ASan/valgrind
		EXPECT_FALSE(parse(f, err)) << len;
	}
	// Random corruption: only what it says matters, and that it returns.
	std::mt19937 rng(42);
	int accepted = 0;
	for (int round = 0; round < 20000; round++) {
		auto f = good;
		for (int n = 1 + rng() % 4; n; n--) {
			const size_t at = rng() % f.size();
			if (rng() % 2)
				f[at] = uint8_t(rng());
			else // plausible large values in 8-byte fields
				put64(f, at & ~size_t(7), rng() % 2 ? ~0ull - rng() % 64 : uint64_t(rng()) << (rng() % 40));
		}
		f.resize(f.size() - rng() % 8);
		f.shrink_to_fit();
		auto w = parse(f, err);
		if (w) {
			accepted++;
			std::vector<uint8_t> win(w->meta.io_size > (1 << 20) ? 0 : w->meta.io_size);
			if (!win.empty()) {
				EXPECT_TRUE(load_segments(*w, win));
			}
		}
	}
	EXPECT_LT(accepted, 20000);
}

// ---- Workers -------------------------------------------------------------------

Workload workload(std::vector<Instr> prog, uint16_t nsps = 1, uint64_t io_size = 1 << 16)
{
	Workload w;
	w.meta.nsp_count = nsps;
	w.meta.io_size = io_size;
	w.program = std::move(prog);
	return w;
}

// Each case with the NSPs on at most 1, 2 or 16 host threads (the cores
// of one thread take turns) and on as many as this host has cores (0).
// Most cases use the fixture's 64 KiB window, semaphores and counters.
class NspWorkers : public testing::TestWithParam<unsigned> {
protected:
	void SetUp() override { wk.set_max_threads(GetParam()); }

	std::vector<uint8_t> win = std::vector<uint8_t>(1 << 16);
	Semaphores sems;
	Counters ctr;
	Workers wk; // last: stopped before what its cores use goes
};
INSTANTIATE_TEST_SUITE_P(MaxThreads, NspWorkers, testing::Values(0u, 1u, 2u, 16u),
			 [](const testing::TestParamInfo<unsigned> &p) {
				 return p.param ? std::to_string(p.param) : std::string("HostCores");
			 });

// Waits until `n` cores have passed a SEMINC of semaphore `index`: each
// is then at (or blocked in) the instruction after it.
void await_arrivals(Semaphores &sems, unsigned index, uint16_t n)
{
	ASSERT_TRUE(sems.wait(index, Semaphores::Op::WaitEq, n, [] { return false; }));
}

// Waits (polling: the workload ends by itself) until the workers end.
bool ends(const Workers &wk)
{
	for (int i = 0; i < 30000 && wk.running(); i++)
		std::this_thread::sleep_for(1ms);
	return !wk.running();
}

TEST_P(NspWorkers, ThreadsAreTheFewerOfNspsAndTheLimit)
{
	ASSERT_TRUE(wk.start(workload({I(Op::SemWait, 7, uint8_t(Cond::Gt0)), I(Op::Halt)}, 5), win, sems, ctr));
	const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
	EXPECT_EQ(wk.threads(), std::min(5u, GetParam() ? GetParam() : cores));
	sems.apply(7, Semaphores::Op::Init, 1);
	EXPECT_TRUE(ends(wk));
	EXPECT_FALSE(wk.faulted()) << wk.fault();
	for (const CoreState &st : wk.states())
		EXPECT_EQ(st.state, CoreState::State::Halted) << "nsp " << st.index;
	wk.stop();
}

// 8 NSPs pass 300 barriers (each adds 1, then waits for 8 per round): the
// cores of a shared thread must take turns at every one.
TEST_P(NspWorkers, EightNspsPassManyBarriers)
{
	constexpr unsigned kRounds = 300, kNsps = 8;
	// A counting barrier, unrolled: round r waits for 8·r arrivals (2400
	// at the end, within the semaphore's 12 bits). NSP 0 marks each round.
	std::vector<Instr> prog;
	for (unsigned r = 1; r <= kRounds; r++) {
		prog.push_back(I(Op::SemInc, 8, 0, 0, 1));
		prog.push_back(I(Op::SemWait, 8, uint8_t(Cond::Ge), 0, r * kNsps));
		prog.push_back(I(Op::Bne, 1, 0, 0, uint32_t(prog.size() + 2)));
		prog.push_back(I(Op::Mark));
	}
	prog.push_back(I(Op::Halt));
	const auto w = workload(std::move(prog), kNsps);
	ASSERT_TRUE(wk.start(w, win, sems, ctr));
	EXPECT_TRUE(ends(wk));
	EXPECT_FALSE(wk.faulted()) << wk.fault();
	EXPECT_EQ(ctr.iterations.load(), kRounds);
	wk.stop();
}

// Two NSPs that never wait are busy all the time, also when they take
// turns on one thread: from the moment both have started, busy time grows
// at twice the wall clock. Measured from both cores' first instruction (not
// from start(): a loaded host may start a worker thread late), so a busy
// machine cannot make it fail.
TEST_P(NspWorkers, NspsTakingTurnsCountAsBusy)
{
	const auto t0 = Clock::now();
	ASSERT_TRUE(wk.start(workload({I(Op::SemInc, 8, 0, 0, 1), I(Op::Mark), I(Op::Jmp, 0, 0, 0, 1)}, 2), win,
			     sems, ctr));
	await_arrivals(sems, 8, 2);
	const auto t1 = Clock::now();
	const uint64_t busy_before = ctr.busy_ns.load();
	const uint64_t marks_before = ctr.iterations.load();
	// Long enough for many slices each, and both must have made progress.
	while (wk.running() && (Clock::now() - t1 < 50ms || ctr.iterations.load() - marks_before < 100000))
		std::this_thread::sleep_for(1ms);
	ASSERT_FALSE(wk.faulted()) << wk.fault();
	const auto t2 = Clock::now();
	wk.stop();
	const auto t3 = Clock::now();
	const uint64_t busy = ctr.busy_ns.load();
	const auto ns = [](Clock::duration d) { return std::chrono::duration<double, std::nano>(d).count(); };
	EXPECT_GT(double(busy - busy_before), 1.5 * ns(t2 - t1)) << "busy " << busy - busy_before << " ns in "
								 << ns(t2 - t1);
	EXPECT_LE(double(busy), 2.0 * ns(t3 - t0)) << "busy " << busy << " ns in " << ns(t3 - t0);
}

// NSP 0 spins on a word in the window until NSP 1 writes it: on a shared
// thread NSP 0's slice must end for NSP 1 to run at all.
TEST_P(NspWorkers, ACoreSpinningOnMemoryLetsTheOthersRun)
{
	const auto w = workload({
		Li(3, 0x100),             // 0
		I(Op::Bne, 1, 0, 0, 5),   // 1: NSP 1 goes to 5
		I(Op::Ld, 4, 3),          // 2: NSP 0: spin until [0x100] != 0
		I(Op::Beq, 4, 0, 0, 2),   // 3
		I(Op::Halt),              // 4
		Li(4, 0x5a),              // 5: NSP 1 writes it
		I(Op::St, 4, 3),          // 6
		I(Op::Halt),              // 7
	}, 2);
	ASSERT_TRUE(wk.start(w, win, sems, ctr));
	EXPECT_TRUE(ends(wk));
	EXPECT_FALSE(wk.faulted()) << wk.fault();
	wk.stop();
}

// The host cannot give a core the memory it needs (here: none at all, from
// the GEMM's copy of A on): the workload faults; the process goes on.
TEST_P(NspWorkers, AHostAllocationFailureFaultsTheWorkload)
{
	const auto w = workload({I(Op::SemInc, 8, 0, 0, 1), I(Op::SemWait, 7, uint8_t(Cond::Gt0)), Li(5, 0x2000),
				 I(Op::MmF32, 3, 3, 5, 0, pack_mnk(16, 16, 16)), I(Op::Halt)},
				2);
	ASSERT_TRUE(wk.start(w, win, sems, ctr));
	await_arrivals(sems, 8, 2);
	bool ended;
	{
		test::AllocBudget room_for_the_message(512); // not for the 1 KiB copy of A
		sems.apply(7, Semaphores::Op::Init, 2);
		ended = ends(wk);
	}
	ASSERT_TRUE(ended);
	EXPECT_TRUE(wk.faulted());
	EXPECT_NE(wk.fault().find(": the host could not run it: std::bad_alloc"), std::string::npos) << wk.fault();
	wk.stop();
	// The next workload runs.
	ASSERT_TRUE(wk.start(workload({I(Op::Halt)}), win, sems, ctr));
	EXPECT_TRUE(ends(wk));
	EXPECT_FALSE(wk.faulted()) << wk.fault();
}

// A profile counts each core's instructions where they ran, and its time
// in them (the waits of the cores that NSP 0 keeps at a barrier too) is
// part of their threads' wall time.
TEST_P(NspWorkers, AProfileCountsEachInstructionOfEachCore)
{
	constexpr unsigned kNsps = 3, kLoop = 20000;
	const auto w = workload({
		I(Op::Bne, 1, 0, 0, 4),    // 0: NSP 0 counts down first
		Li(3, kLoop),              // 1
		I(Op::Addi, 3, 3, 0, 0, uint64_t(-1)), // 2
		I(Op::Bne, 3, 0, 0, 2),    // 3
		I(Op::SemInc, 8, 0, 0, 1), // 4: then the barrier
		I(Op::SemWait, 8, uint8_t(Cond::Ge), 0, kNsps), // 5
		I(Op::Halt),               // 6
	}, kNsps);
	Profile p;
	wk.set_profile(&p);
	ASSERT_TRUE(wk.start(w, win, sems, ctr));
	EXPECT_TRUE(ends(wk));
	EXPECT_FALSE(wk.faulted()) << wk.fault();
	wk.stop();
	ASSERT_EQ(p.cores.size(), kNsps);
	const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
	ASSERT_EQ(p.threads.size(), std::min(kNsps, GetParam() ? GetParam() : cores));
	std::vector<uint64_t> thread_ns(p.threads.size());
	for (unsigned k = 0; k < kNsps; k++) {
		const Profile::Core &c = p.cores[k];
		ASSERT_EQ(c.count.size(), w.program.size());
		EXPECT_EQ(c.thread, k % p.threads.size());
		const std::vector<uint64_t> want = k ? std::vector<uint64_t>{1, 0, 0, 0, 1, 1, 1}
						     : std::vector<uint64_t>{1, 1, kLoop, kLoop, 1, 1, 1};
		EXPECT_EQ(c.count, want) << "nsp " << k;
		EXPECT_TRUE(k || c.ns[2] > 0);
		for (uint64_t ns : c.ns)
			thread_ns[c.thread] += ns;
	}
	for (size_t t = 0; t < p.threads.size(); t++) {
		EXPECT_LE(thread_ns[t], p.threads[t].wall_ns) << "thread " << t;
		EXPECT_LE(p.threads[t].idle_ns, p.threads[t].wall_ns) << "thread " << t;
	}
	// Off again: the next run leaves the profile alone.
	wk.set_profile(nullptr);
	ASSERT_TRUE(wk.start(w, win, sems, ctr));
	EXPECT_TRUE(ends(wk));
	wk.stop();
	EXPECT_EQ(p.cores[0].count[2], kLoop);
}

TEST_P(NspWorkers, StopsCoresBlockedInSemWait)
{
	ASSERT_TRUE(wk.start(workload({I(Op::SemInc, 8, 0, 0, 1), I(Op::SemWait, 7, uint8_t(Cond::Gt0)), I(Op::Halt)}, 4),
			     win, sems, ctr));
	await_arrivals(sems, 8, 4);
	EXPECT_TRUE(wk.running());
	EXPECT_FALSE(wk.start(workload({I(Op::Halt)}), win, sems, ctr)); // already running
	const auto t0 = Clock::now();
	wk.stop();
	EXPECT_LT(Clock::now() - t0, 10s); // a hang, not a speed: the machine may be loaded
	EXPECT_FALSE(wk.running());
	EXPECT_FALSE(wk.faulted());
	wk.stop(); // idempotent
}

TEST_P(NspWorkers, StopsAnInfiniteLoopAndRestarts)
{
	const auto w = workload({I(Op::Mark), I(Op::Jmp)}, 2);
	ASSERT_TRUE(wk.start(w, win, sems, ctr));
	for (int i = 0; i < 10000 && ctr.iterations.load() <= 1000; i++)
		std::this_thread::sleep_for(1ms);
	const auto t0 = Clock::now();
	wk.stop();
	EXPECT_LT(Clock::now() - t0, 10s); // a hang, not a speed: the machine may be loaded
	const uint64_t n = ctr.iterations.load();
	EXPECT_GT(n, 1000u);
	EXPECT_GT(ctr.busy_ns.load(), 0u);
	ASSERT_TRUE(wk.start(w, win, sems, ctr));
	// Runs again: wait for it (a loaded host may take a while to run it).
	for (int i = 0; i < 10000 && ctr.iterations.load() <= n; i++)
		std::this_thread::sleep_for(1ms);
	wk.stop();
	EXPECT_GT(ctr.iterations.load(), n);
}

TEST_P(NspWorkers, AFaultStopsTheWholeWorkload)
{
	std::atomic<int> ended{0};
	// NSP 2 of 3 faults after a while; the others wait forever.
	const auto w = workload({Li(3, 2), I(Op::Bne, 1, 3, 0, 4), Li(4, 1 << 20), I(Op::Ld, 4, 4),
				 I(Op::SemWait, 0, uint8_t(Cond::Gt0)), I(Op::Halt)},
				3);
	ASSERT_TRUE(wk.start(w, win, sems, ctr, 0, [&] { ended++; }));
	for (int i = 0; i < 30000 && wk.running(); i++)
		std::this_thread::sleep_for(5ms);
	EXPECT_FALSE(wk.running());
	EXPECT_TRUE(wk.faulted());
	EXPECT_EQ(wk.fault(), "nsp 2: instruction 3 (LD): address [0x100000, +0x8) outside the window of "
			      "0x10000 bytes");
	EXPECT_EQ(ended.load(), 1);
	wk.stop();
	// The next start clears the fault.
	ASSERT_TRUE(wk.start(workload({I(Op::Halt)}), win, sems, ctr, 0, [&] { ended++; }));
	for (int i = 0; i < 30000 && wk.running(); i++)
		std::this_thread::sleep_for(1ms);
	EXPECT_FALSE(wk.faulted());
	EXPECT_EQ(ended.load(), 2);
}

TEST_P(NspWorkers, AnInjectedFaultStopsTheWorkloadAndKeepsEachCoresState)
{
	std::atomic<int> ended{0};
	const auto w = workload(
		{Li(5, 0x55), I(Op::SemInc, 8, 0, 0, 1), I(Op::SemWait, 0, uint8_t(Cond::Gt0)), I(Op::Halt)}, 2);
	ASSERT_TRUE(wk.start(w, win, sems, ctr, 0, [&] { ended++; }));
	await_arrivals(sems, 8, 2); // both at the SEMWAIT (instruction 2)
	EXPECT_FALSE(wk.inject_fault(2, "no such core"));
	ASSERT_TRUE(wk.inject_fault(1, "bit flip"));
	EXPECT_FALSE(wk.inject_fault(0, "twice")) << "one fault at a time";
	for (int i = 0; i < 30000 && wk.running(); i++)
		std::this_thread::sleep_for(5ms);
	EXPECT_FALSE(wk.running());
	EXPECT_EQ(wk.fault(), "nsp 1: injected fault: bit flip at instruction 2");
	EXPECT_EQ(ended.load(), 1) << "the owner hears that the workload ended";
	const auto st = wk.states();
	ASSERT_EQ(st.size(), 2u);
	EXPECT_EQ(st[0].state, CoreState::State::Stopped);
	EXPECT_EQ(st[1].state, CoreState::State::Fault);
	EXPECT_EQ(st[1].pc, 2u);
	EXPECT_EQ(st[1].fault_addr, 32u) << "the instruction's address";
	ASSERT_TRUE(st[1].instr);
	EXPECT_EQ(st[1].instr->op, uint8_t(Op::SemWait));
	EXPECT_EQ(st[1].regs[5], 0x55u);
	EXPECT_EQ(st[1].regs[1], 1u) << "r1 = k";
	wk.stop();
}

TEST_P(NspWorkers, NoEndCallbackAfterStop)
{
	std::atomic<int> ended{0};
	ASSERT_TRUE(wk.start(workload({I(Op::Jmp)}), win, sems, ctr, 0, [&] { ended++; }));
	wk.stop();
	EXPECT_EQ(ended.load(), 0);
}

TEST_P(NspWorkers, StopsPromptlyInsideAGemm)
{
	// Each NSP writes a C of its own (at r1 * n²·4): two cores writing the
	// same bytes would be the program's race, which ThreadSanitizer reports.
	const uint64_t n = 1024, matrix = n * n * 4;
	win.assign(4 * matrix, 0);
	ASSERT_TRUE(wk.start(workload({Li(6, matrix), I(Op::Mul, 3, 1, 6), Li(4, 2 * matrix), Li(5, 3 * matrix),
				       I(Op::MmF32, 3, 4, 5, 0, pack_mnk(n, n, n)), I(Op::Jmp)},
				      2, win.size()),
			     win, sems, ctr));
	std::this_thread::sleep_for(30ms);
	const auto t0 = Clock::now();
	wk.stop();
	EXPECT_LT(Clock::now() - t0, 10s); // a hang, not a speed: the machine may be loaded
}

TEST_P(NspWorkers, TwoNspsSplitTheWork)
{
	// Each NSP adds its half of two 1000-element vectors: its first element
	// is r1 * (n / r2).
	const uint64_t n = 1000;
	const auto x = random_f32(n, 11), y = random_f32(n, 12);
	std::memcpy(&win[0x1000], x.data(), n * 4);
	std::memcpy(&win[0x2000], y.data(), n * 4);
	const auto w = workload({
		Li(3, n),                 // 0
		Li(5, 0),                 // 1: r5 = n / r2 (there is no DIV)
		I(Op::Add, 6, 0, 3),      // 2: r6 = n
		I(Op::Blt, 6, 2, 0, 7),   // 3: while r6 >= r2
		I(Op::Sub, 6, 6, 2),
		I(Op::Addi, 5, 5, 0, 0, 1),
		I(Op::Jmp, 0, 0, 0, 3),
		I(Op::Mul, 7, 1, 5),      // 7: first element = r1 * r5
		Li(8, 4),
		I(Op::Mul, 7, 7, 8),      // byte offset
		I(Op::Addi, 9, 7, 0, 0, 0x1000),
		I(Op::Addi, 10, 7, 0, 0, 0x2000),
		I(Op::Addi, 11, 7, 0, 0, 0x3000),
		I(Op::VAddF, 11, 9, 10, 5),
		I(Op::Halt),
	}, 2);
	ASSERT_TRUE(wk.start(w, win, sems, ctr));
	for (int i = 0; i < 500 && wk.running(); i++)
		std::this_thread::sleep_for(2ms);
	EXPECT_FALSE(wk.running());
	EXPECT_FALSE(wk.faulted()) << wk.fault();
	std::vector<float> out(n);
	std::memcpy(out.data(), &win[0x3000], n * 4);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(out[i], x[i] + y[i]) << i;
}

// The test plays the DMA Bridge: it writes an input when the input buffer
// is free, raises the input semaphore, waits for the output semaphore,
// checks and releases the output; the program loops.
TEST_P(NspWorkers, PipelinedLoop)
{
	constexpr uint64_t kIn = 0x1000, kOut = 0x2000, kN = 256;
	constexpr unsigned kSemIn = 0, kSemOut = 1;
	const auto w = workload({
		Li(3, kIn),
		Li(4, kOut),
		Li(5, kN),
		I(Op::SemWait, kSemIn, uint8_t(Cond::Ge), 0, 1),  // 3: loop
		I(Op::SemWait, kSemOut, uint8_t(Cond::Eq), 0, 0),
		I(Op::VScaleF, 4, 3, 5, 0, f32_bits(2.0f)),
		I(Op::VAddF, 4, 4, 3, 5),                         // 3 x
		I(Op::SemDec, kSemIn, 0, 0, 1),
		I(Op::SemInc, kSemOut, 0, 0, 1),
		I(Op::Mark),
		I(Op::Jmp, 0, 0, 0, 3),
	});
	ASSERT_TRUE(wk.start(w, win, sems, ctr));
	const auto never = [] { return false; };
	for (int it = 0; it < 1000; it++) {
		ASSERT_TRUE(sems.wait(kSemIn, Semaphores::Op::WaitEq, 0, never));
		std::vector<float> in(kN);
		for (uint64_t i = 0; i < kN; i++)
			in[i] = float(it) + float(i) * 0.5f;
		std::memcpy(&win[kIn], in.data(), kN * 4);
		sems.apply(kSemIn, Semaphores::Op::Inc, 1);
		ASSERT_TRUE(sems.wait(kSemOut, Semaphores::Op::WaitGt0, 0, never));
		std::vector<float> out(kN);
		std::memcpy(out.data(), &win[kOut], kN * 4);
		for (uint64_t i = 0; i < kN; i++)
			ASSERT_EQ(out[i], in[i] * 2.0f + in[i]) << "iteration " << it;
		sems.apply(kSemOut, Semaphores::Op::Dec, 1);
	}
	// The 1000th MARK may still be on its way.
	for (int i = 0; i < 100 && ctr.iterations.load() < 1000; i++)
		std::this_thread::sleep_for(1ms);
	EXPECT_EQ(ctr.iterations.load(), 1000u);
	EXPECT_GT(ctr.busy_ns.load(), 0u);
	EXPECT_TRUE(wk.running());
	wk.stop();
	EXPECT_FALSE(wk.faulted());
}

// ---- int8 network instructions -------------------------------------------------

// Naive im2col of rows row0.. of the output (ky, kx, c order, zero padding).
std::vector<int8_t> naive_im2col(const std::vector<int8_t> &x, const Geom &g, uint32_t row0, uint32_t rows)
{
	std::vector<int8_t> out;
	for (uint32_t oy = row0; oy < row0 + rows; oy++)
		for (uint32_t ox = 0; ox < g.out_w(); ox++)
			for (uint32_t ky = 0; ky < g.k; ky++)
				for (uint32_t kx = 0; kx < g.k; kx++)
					for (uint32_t c = 0; c < g.c; c++) {
						const int64_t y = int64_t(oy * g.stride + ky) - g.pad;
						const int64_t xx = int64_t(ox * g.stride + kx) - g.pad;
						const bool in = y >= 0 && y < g.h && xx >= 0 && xx < g.w;
						out.push_back(in ? x[(uint64_t(y) * g.w + uint64_t(xx)) * g.c + c] : 0);
					}
	return out;
}

TEST(NspInt8, GeometryPacksAndIsChecked)
{
	const Geom g{224, 223, 3, 7, 2, 3};
	EXPECT_EQ(unpack_geom(pack_geom(g)), g);
	EXPECT_EQ(g.out_h(), 112u);
	EXPECT_EQ(g.out_w(), 112u);
	EXPECT_EQ(geom_problem(pack_geom(g)), "");
	EXPECT_NE(geom_problem(pack_geom({4, 4, 1, 3, 1, 3})), ""); // pad >= K
	EXPECT_NE(geom_problem(pack_geom({2, 9, 1, 5, 1, 1})), ""); // 5 > 2 + 2
	EXPECT_NE(geom_problem(pack_geom({4, 4, 0, 3, 1, 1})), ""); // C = 0
	EXPECT_NE(geom_problem(pack_geom({4, 4, 1, 3, 0, 1})), ""); // stride 0
	EXPECT_NE(geom_problem(pack_geom(g) | 1ull << 50), "");   // reserved bits
}

TEST(NspInt8, Im2colPaddingStridesAndRowRanges)
{
	const Geom shapes[] = {{9, 7, 3, 3, 2, 1}, {8, 8, 5, 7, 2, 3}, {6, 6, 20, 1, 2, 0}, {5, 4, 70, 3, 1, 1},
			       {3, 3, 1, 3, 1, 2}};
	for (const Geom &g : shapes) {
		SCOPED_TRACE(disassemble(I(Op::Im2Col, 3, 4, 5, 0, pack_geom(g))));
		const auto x = random_i8(uint64_t(g.h) * g.w * g.c, 5);
		for (uint32_t row0 : {0u, g.out_h() / 2}) {
			const uint32_t rows = g.out_h() - row0;
			Machine m(1 << 20);
			m.put_all<int8_t>(0x100, x);
			m.load({Li(3, 0x40000), Li(4, 0x100), Li(5, uint64_t(row0) | uint64_t(rows) << 32),
				I(Op::Im2Col, 3, 4, 5, 0, pack_geom(g)), I(Op::Halt)});
			m.halts();
			const auto want = naive_im2col(x, g, row0, rows);
			EXPECT_EQ(m.get_all<int8_t>(0x40000, want.size()), want) << "row0 " << row0;
		}
	}
}

TEST(NspInt8, MaxPoolIgnoresPadding)
{
	const Geom g{5, 6, 70, 3, 2, 1};
	auto x = random_i8(uint64_t(g.h) * g.w * g.c, 9);
	for (size_t i = 0; i < x.size(); i += 3)
		x[i] = int8_t(-128 + int(i % 5)); // many very negative values: zero padding would win
	Machine m(1 << 20);
	m.put_all<int8_t>(0x100, x);
	m.load({Li(3, 0x40000), Li(4, 0x100), Li(5, uint64_t(g.out_h()) << 32),
		I(Op::MaxPoolI8, 3, 4, 5, 0, pack_geom(g)), I(Op::Halt)});
	m.halts();
	std::vector<int8_t> want;
	for (uint32_t oy = 0; oy < g.out_h(); oy++)
		for (uint32_t ox = 0; ox < g.out_w(); ox++)
			for (uint32_t c = 0; c < g.c; c++) {
				int best = -1000;
				for (uint32_t ky = 0; ky < 3; ky++)
					for (uint32_t kx = 0; kx < 3; kx++) {
						const int64_t y = int64_t(oy * 2 + ky) - 1, xx = int64_t(ox * 2 + kx) - 1;
						if (y >= 0 && y < g.h && xx >= 0 && xx < g.w)
							best = std::max<int>(best, x[(uint64_t(y) * g.w + uint64_t(xx)) * g.c + c]);
					}
				want.push_back(int8_t(best));
			}
	EXPECT_EQ(m.get_all<int8_t>(0x40000, want.size()), want);
}

// REQI8's parameter block for `cols` channels.
std::vector<uint8_t> req_block(const std::vector<int32_t> &bias, const std::vector<int32_t> &mult,
			       const std::vector<int32_t> &shift, bool relu)
{
	const uint32_t cols = uint32_t(bias.size());
	std::vector<uint8_t> b(req_block_size(cols), 0);
	const uint32_t head[4] = {cols, relu ? kReqRelu : 0, 0, 0};
	std::memcpy(b.data(), head, sizeof(head));
	std::memcpy(&b[kReqHeaderSize], bias.data(), cols * 4);
	std::memcpy(&b[kReqHeaderSize + cols * 4], mult.data(), cols * 4);
	std::memcpy(&b[kReqHeaderSize + cols * 8], shift.data(), cols * 4);
	return b;
}

int8_t run_reqi8(int32_t acc, int32_t bias, int32_t mult, int32_t shift, bool relu)
{
	Machine m;
	m.put<int32_t>(0x100, acc);
	m.put_all<uint8_t>(0x200, req_block({bias}, {mult}, {shift}, relu));
	m.load({Li(3, 0x300), Li(4, 0x100), Li(5, 0x200), Li(6, 1), I(Op::ReqI8, 3, 4, 5, 6), I(Op::Halt)});
	m.halts();
	return m.get<int8_t>(0x300);
}

TEST(NspInt8, RequantRoundsHalfUpAtEveryShift)
{
	EXPECT_EQ(run_reqi8(10, 0, 1, 2, false), 3);   // 2.5
	EXPECT_EQ(run_reqi8(-10, 0, 1, 2, false), -2); // -2.5: half up, not away from zero
	EXPECT_EQ(run_reqi8(-11, 0, 1, 2, false), -3); // -2.75
	EXPECT_EQ(run_reqi8(-9, 0, 1, 2, false), -2);  // -2.25
	EXPECT_EQ(run_reqi8(9, 0, 1, 2, false), 2);
	EXPECT_EQ(run_reqi8(1, 0, 1, 1, false), 1);    // 0.5
	EXPECT_EQ(run_reqi8(-1, 0, 1, 1, false), 0);   // -0.5
	EXPECT_EQ(run_reqi8(77, 0, 1, 0, false), 77);  // shift 0: no rounding
	EXPECT_EQ(run_reqi8(5, -2, 3, 0, false), 9);   // bias before the multiplier
	EXPECT_EQ(run_reqi8(1000, 0, 1, 0, false), 127);
	EXPECT_EQ(run_reqi8(-1000, 0, 1, 0, false), -128);
	EXPECT_EQ(run_reqi8(-1000, 0, 1, 0, true), 0);
	EXPECT_EQ(run_reqi8(40, 0, 1, 0, true), 40);
	// The widest operands: (acc + bias) · mult needs 63 bits.
	EXPECT_EQ(run_reqi8(INT32_MIN, INT32_MIN, INT32_MAX, 62, false), -2);
	EXPECT_EQ(run_reqi8(INT32_MAX, INT32_MAX, INT32_MAX, 62, false), 2);
	EXPECT_EQ(run_reqi8(INT32_MAX, INT32_MAX, INT32_MAX, 57, false), 64);
	// Exhaustively around the halves of shift 3, against exact arithmetic.
	for (int32_t acc = -100; acc <= 100; acc++) {
		const double exact = double(acc) * 3 / 8;
		const int want = int(std::clamp(std::floor(exact + 0.5), -128.0, 127.0));
		ASSERT_EQ(run_reqi8(acc, 0, 3, 3, false), want) << acc;
	}
}

TEST(NspInt8, RequantPerChannelOverRows)
{
	const uint32_t cols = 5, rows = 7;
	Machine m;
	std::vector<int32_t> acc(cols * rows);
	for (size_t i = 0; i < acc.size(); i++)
		acc[i] = int32_t(i * 977) - 15000;
	const std::vector<int32_t> bias = {0, 100, -100, 7, 0}, mult = {1 << 30, 1 << 29, 3 << 28, 1 << 30, 0},
				   shift = {38, 36, 40, 30, 5};
	m.put_all<int32_t>(0x1000, acc);
	m.put_all<uint8_t>(0x2000, req_block(bias, mult, shift, true));
	m.load({Li(3, 0x3000), Li(4, 0x1000), Li(5, 0x2000), Li(6, cols * rows), I(Op::ReqI8, 3, 4, 5, 6),
		I(Op::Halt)});
	m.halts();
	for (uint32_t i = 0; i < cols * rows; i++) {
		const uint32_t j = i % cols;
		const __int128 p = (__int128(acc[i]) + bias[j]) * mult[j];
		__int128 q = shift[j] ? (p + (__int128(1) << (shift[j] - 1))) >> shift[j] : p;
		q = q > 127 ? 127 : q < 0 ? 0 : q;
		EXPECT_EQ(m.get<int8_t>(0x3000 + i), int8_t(q)) << i;
	}
}

TEST(NspInt8, RequantRefusesBadParameters)
{
	auto fault = [](std::vector<uint8_t> block, uint64_t n = 1) {
		Machine m;
		m.put_all<uint8_t>(0x200, block);
		m.load({Li(3, 0x300), Li(4, 0x100), Li(5, 0x200), Li(6, n), I(Op::ReqI8, 3, 4, 5, 6), I(Op::Halt)});
		return m.faults();
	};
	EXPECT_NE(fault(req_block({0}, {-1}, {3}, false)).find("multiplier -1"), std::string::npos);
	EXPECT_NE(fault(req_block({0}, {1}, {63}, false)).find("shift 63"), std::string::npos);
	auto flags = req_block({0}, {1}, {3}, false);
	flags[4] = 2;
	EXPECT_NE(fault(flags).find("unknown flags"), std::string::npos);
	auto zero = req_block({0}, {1}, {3}, false);
	zero[0] = 0;
	EXPECT_NE(fault(zero).find("0 columns"), std::string::npos);
	auto huge = req_block({0}, {1}, {3}, false);
	huge[3] = 0x10; // 2^28 columns: the tables leave the window
	EXPECT_NE(fault(huge).find("outside the window"), std::string::npos);
	EXPECT_NE(fault(req_block({0}, {1}, {3}, false), 1ull << 40).find("outside the window"), std::string::npos);
}

// REQI8 checks its tables, but they live in shared memory: another NSP or
// a DMA can change them before the kernel reads them. Then an out-of-range
// multiplier or shift reads as the nearest valid one (UBSan aborts on the
// shift otherwise).
TEST(NspInt8, RequantTablesChangedAfterTheCheckReadAsTheNearestValidValue)
{
	const int32_t acc[4] = {1000, 1000, 100, 1000};
	const int32_t bias[4] = {0, 0, 0, 0}, mult[4] = {-5, 1, 1, 1}, shift[4] = {0, 200, -3, 62};
	int8_t out[4] = {9, 9, 9, 9};
	kernels::requant_i8(reinterpret_cast<uint8_t *>(out), reinterpret_cast<const uint8_t *>(acc), 4,
			    reinterpret_cast<const uint8_t *>(bias), reinterpret_cast<const uint8_t *>(mult),
			    reinterpret_cast<const uint8_t *>(shift), 4, false);
	EXPECT_EQ(out[0], 0) << "multiplier -5 reads as 0";
	EXPECT_EQ(out[1], out[3]) << "shift 200 reads as 62";
	EXPECT_EQ(out[2], 100) << "shift -3 reads as 0";
}

TEST(NspInt8, AddWithRequantization)
{
	const auto x = random_i8(1000, 3), y = random_i8(1000, 4);
	for (const AddQ q : {AddQ{11585, 11585, 14, true}, AddQ{1, 0, 1, false}, AddQ{3, 5, 0, false},
			     AddQ{65535, 65535, 31, false}}) {
		Machine m;
		m.put_all<int8_t>(0x1000, x);
		m.put_all<int8_t>(0x2000, y);
		m.load({Li(3, 0x3000), Li(4, 0x1000), Li(5, 0x2000), Li(6, 1000), I(Op::VAddQI8, 3, 4, 5, 6, pack_addq(q)),
			I(Op::Halt)});
		m.halts();
		for (size_t i = 0; i < x.size(); i++) {
			const double exact = (double(x[i]) * q.mx + double(y[i]) * q.my) / std::ldexp(1.0, int(q.shift));
			const int want = int(std::clamp(std::floor(exact + 0.5), q.relu ? 0.0 : -128.0, 127.0));
			ASSERT_EQ(m.get<int8_t>(0x3000 + i), want) << i << " mx " << q.mx << " shift " << q.shift;
		}
	}
	EXPECT_EQ(unpack_addq(pack_addq({1, 2, 3, true})), (AddQ{1, 2, 3, true}));
	Machine m;
	m.load({Li(6, 4), I(Op::VAddQI8, 3, 4, 5, 6, pack_addq({1, 1, 1, false}) | 1ull << 45)});
	EXPECT_NE(m.faults().find("reserved operand bits"), std::string::npos);
}

TEST(NspInt8, WindowChecksOfIm2colAndPool)
{
	const Geom g{8, 8, 4, 3, 1, 1};
	auto fault = [&g](Op op, uint64_t rows_reg, uint64_t dst, uint64_t geom) {
		Machine m;
		m.load({Li(3, dst), Li(4, 0), Li(5, rows_reg), I(op, 3, 4, 5, 0, geom), I(Op::Halt)});
		return m.faults();
	};
	EXPECT_NE(fault(Op::Im2Col, 5 | 4ull << 32, 0x1000, pack_geom(g)).find("beyond the 8"), std::string::npos);
	EXPECT_NE(fault(Op::MaxPoolI8, 8ull << 32, 0xFFFF, pack_geom(g)).find("outside the window"), std::string::npos);
	EXPECT_NE(fault(Op::Im2Col, 1ull << 32, 0x1000, pack_geom({4, 4, 1, 3, 1, 3})).find("pad"), std::string::npos);
	// Zero rows: nothing to do, nothing touched.
	Machine m;
	m.load({Li(3, 0xFFFF), Li(4, 0), Li(5, 0), I(Op::Im2Col, 3, 4, 5, 0, pack_geom(g)), I(Op::Halt)});
	m.halts();
}

TEST(NspDisasm, EveryOpcodeHasAName)
{
	for (const OpInfo &o : op_table()) {
		EXPECT_EQ(op_info(uint8_t(o.op)), &o);
		EXPECT_EQ(op_info(std::string(o.name)), &o);
	}
	EXPECT_EQ(op_info(0x0F), nullptr);
	EXPECT_EQ(op_info("vaddf")->op, Op::VAddF);
	EXPECT_EQ(disassemble(I(Op::VAddF, 3, 4, 5, 6)), "VADDF r3, r4, r5, r6");
	EXPECT_EQ(disassemble(I(Op::MmI8, 3, 4, 5, 0, pack_mnk(64, 128, 256))), "MMI8 r3, r4, r5, 64, 128, 256");
	EXPECT_EQ(disassemble(I(Op::MmI8P, 3, 4, 5, 0, pack_mnk(64, 128, 256))), "MMI8P r3, r4, r5, 64, 128, 256");
	EXPECT_EQ(disassemble(I(Op::SemWait, 2, 1, 0, 5)), "SEMWAIT 2, 5, ge");
	EXPECT_EQ(disassemble(I(Op::VScaleF, 1, 2, 3, 0, f32_bits(0.5f))), "VSCALEF r1, r2, r3, 0.5");
	EXPECT_EQ(disassemble(I(Op::ActF, 1, 2, 3, 3)), "ACTF r1, r2, r3, gelu");
	EXPECT_EQ(disassemble(I(Op::Im2Col, 1, 2, 3, 0, pack_geom({224, 224, 3, 7, 2, 3}))),
		  "IM2COL r1, r2, r3, 224, 224, 3, 7, 2, 3");
	EXPECT_EQ(disassemble(I(Op::ReqI8, 1, 2, 3, 4)), "REQI8 r1, r2, r3, r4");
	EXPECT_EQ(disassemble(I(Op::VAddQI8, 1, 2, 3, 4, pack_addq({100, 200, 14, true}))),
		  "VADDQI8 r1, r2, r3, r4, 100, 200, 14, 1");
}

} // namespace
} // namespace aic100::nsp
