// SPDX-License-Identifier: GPL-2.0-or-later
// The NSP interpreter (docs/nsp.md) and the threads of an activation. Every
// operand range is checked against the window before a kernel touches it;
// anything wrong stops the core with a message naming the instruction.
#include "aic100/nsp_interpreter.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <system_error>

#include "aic100/nsp_kernels.h"

namespace aic100::nsp {

static_assert(std::endian::native == std::endian::little, "LD/ST copy little-endian words as they are");

namespace {

// Instructions between two polls of the stop predicate (also the period of
// the busy-time accounting when no SEMWAIT or MARK comes by).
constexpr unsigned kPollEvery = 4096;
// How long a core runs before a host thread it shares moves on to its next
// core (checked every kPollEvery instructions): only programs that spin on
// memory instead of a semaphore ever use it up.
constexpr std::chrono::milliseconds kSlice{1};

int64_t now_ns()
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

// This thread's CPU time (profiling only: a system call on some hosts).
uint64_t thread_cpu_ns()
{
	timespec ts{};
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

std::string hex(uint64_t v)
{
	char buf[24];
	std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return buf;
}

// SEMWAIT's conditions (Cond), in order.
constexpr Semaphores::Op kWaitOps[] = {Semaphores::Op::WaitEq, Semaphores::Op::WaitGe, Semaphores::Op::WaitGt0};

float f32_of(uint64_t imm)
{
	const uint32_t bits = uint32_t(imm);
	float f;
	std::memcpy(&f, &bits, 4);
	return f;
}

} // namespace

Core::Core(std::span<const Instr> program, uint32_t entry, std::span<uint8_t> window, Semaphores &sems,
	   Counters &counters, unsigned k, unsigned n)
	: program_(program), window_(window), sems_(sems), counters_(counters), pc_(entry),
	  scratch_(std::make_unique<kernels::Scratch>())
{
	r_[1] = k;
	r_[2] = n;
}

Core::Core(const Workload &w, std::span<uint8_t> window, Semaphores &sems, Counters &counters, unsigned k,
	   unsigned n)
	: Core(w.program, w.meta.entry, window, sems, counters, k, n)
{
	packed_ = w.packed;
}

Core::~Core() = default;

uint64_t Core::scratch_bytes() const
{
	const kernels::Scratch &s = *scratch_;
	return s.a.capacity() + s.b.capacity() + s.alias_a.capacity() + s.alias_b.capacity();
}

Core::Result Core::fail(const Instr &in, const std::string &why)
{
	const OpInfo *info = op_info(in.op);
	char what[32];
	if (info)
		std::snprintf(what, sizeof(what), "%s", info->name);
	else
		std::snprintf(what, sizeof(what), "opcode 0x%02x", in.op);
	state_ = State::Fault;
	fault_ = "instruction " + std::to_string(pc_) + " (" + what + "): " + why;
	if (!fault_addr_set_)
		fault_addr_ = pc_ * sizeof(Instr);
	return Result::Fault;
}

// Out of line: the check in reg_ok() runs for every operand of every
// instruction, the message almost never.
[[gnu::cold, gnu::noinline]] bool Core::no_register(const Instr &in, unsigned r)
{
	fail(in, "register r" + std::to_string(r) + " does not exist");
	return false;
}

[[gnu::always_inline]] inline bool Core::reg_ok(const Instr &in, unsigned r)
{
	return r < kNumRegs || no_register(in, r);
}

uint8_t *Core::range(const Instr &in, const char *what, uint64_t off, uint64_t count, uint64_t elem)
{
	uint64_t len;
	if (__builtin_mul_overflow(count, elem, &len)) {
		fail(in, std::string(what) + ": " + std::to_string(count) + " elements overflow");
		return nullptr;
	}
	const uint64_t size = window_.size();
	if (off > size || len > size - off) {
		fault_addr_ = off;
		fault_addr_set_ = true;
		fail(in, std::string(what) + " [" + hex(off) + ", +" + hex(len) + ") outside the window of " +
				 hex(size) + " bytes");
		return nullptr;
	}
	return window_.data() + off;
}

Core::Result Core::branch(const Instr &in, uint64_t target, const std::function<bool()> *stop)
{
	if (target >= program_.size())
		return fail(in, "branch to " + std::to_string(target) + " outside the program of " +
					std::to_string(program_.size()) + " instructions");
	const bool backward = target <= pc_;
	pc_ = target;
	// A loop polls at least once per iteration.
	if (backward && stop && (*stop)())
		stop_requested_ = true;
	return Result::Jumped;
}

void Core::flush_busy()
{
	if (busy_since_ < 0)
		return;
	const int64_t t = now_ns();
	counters_.busy_ns.fetch_add(uint64_t(t - busy_since_), std::memory_order_relaxed);
	busy_since_ = t;
}

// Profiling: the time since `since` goes to instruction `at` (< the
// program's size, as prof_'s vectors), which completed unless it blocked,
// stopped or faulted. Returns now, where the next one's time starts.
int64_t Core::charge(uint64_t at, int64_t since, Result res)
{
	const int64_t t = now_ns();
	prof_->ns[at] += uint64_t(t - since);
	if (res == Result::Next || res == Result::Jumped || res == Result::Halt)
		prof_->count[at]++;
	return t;
}

Core::Result Core::vector_copy(const Instr &in)
{
	const uint64_t n = r_[in.c];
	uint8_t *d, *x;
	if (!(d = range(in, "dst", r_[in.a], n, 1)) || !(x = range(in, "src", r_[in.b], n, 1)))
		return Result::Fault;
	kernels::copy(d, x, n);
	return Result::Next;
}

// VADDF, VMULF, VADDI8: d = x op y, element by element.
Core::Result Core::vector_binary(const Instr &in)
{
	const uint64_t n = r_[in.imm32];
	const uint64_t elem = Op(in.op) == Op::VAddI8 ? 1 : 4;
	uint8_t *d, *x, *y;
	if (!(d = range(in, "dst", r_[in.a], n, elem)) || !(x = range(in, "x", r_[in.b], n, elem)) ||
	    !(y = range(in, "y", r_[in.c], n, elem)))
		return Result::Fault;
	if (Op(in.op) == Op::VAddF)
		kernels::vadd_f32(d, x, y, n);
	else if (Op(in.op) == Op::VMulF)
		kernels::vmul_f32(d, x, y, n);
	else
		kernels::vadd_i8_sat(d, x, y, n);
	return Result::Next;
}

// VSCALEF, CVTI32F, ACTF: d = f(src), element by element.
Core::Result Core::vector_unary(const Instr &in)
{
	const uint64_t n = r_[in.c];
	if (Op(in.op) == Op::ActF && in.imm32 > uint32_t(Act::Gelu))
		return fail(in, "activation kind " + std::to_string(in.imm32) + " (0..3)");
	uint8_t *d, *x;
	if (!(d = range(in, "dst", r_[in.a], n, 4)) || !(x = range(in, "src", r_[in.b], n, 4)))
		return Result::Fault;
	if (Op(in.op) == Op::VScaleF)
		kernels::vscale_f32(d, x, n, f32_of(in.imm64));
	else if (Op(in.op) == Op::CvtI32F)
		kernels::cvt_i32_f32(d, x, n, f32_of(in.imm64));
	else
		kernels::act_f32(d, x, n, in.imm32);
	return Result::Next;
}

// SUMF, MAXF: one float out of n.
Core::Result Core::vector_reduce(const Instr &in)
{
	const uint64_t n = r_[in.c];
	uint8_t *d, *x;
	if (!(d = range(in, "dst", r_[in.a], 1, 4)) || !(x = range(in, "src", r_[in.b], n, 4)))
		return Result::Fault;
	const float v = Op(in.op) == Op::SumF ? kernels::sum_f32(x, n) : kernels::max_f32(x, n);
	std::memcpy(d, &v, 4);
	return Result::Next;
}

Core::Result Core::vector_bias(const Instr &in)
{
	const uint64_t n = r_[in.c], cols = in.imm32;
	if (!cols)
		return fail(in, "0 columns");
	// Only the bias elements that are used must be in the window.
	uint8_t *d, *x;
	if (!(d = range(in, "dst", r_[in.a], n, 4)) || !(x = range(in, "bias", r_[in.b], std::min(n, cols), 4)))
		return Result::Fault;
	kernels::bias_f32(d, x, n, cols);
	return Result::Next;
}

// IM2COL, MAXPOOLI8: rows of an output over a K x K window of an image.
Core::Result Core::im2col_maxpool(const Instr &in)
{
	const std::string why = geom_problem(in.imm64);
	if (!why.empty())
		return fail(in, why);
	const Geom g = unpack_geom(in.imm64);
	const uint64_t row0 = uint32_t(r_[in.c]), rows = r_[in.c] >> 32;
	if (row0 + rows > g.out_h())
		return fail(in, "output rows " + std::to_string(row0) + " + " + std::to_string(rows) + " beyond the " +
					std::to_string(g.out_h()) + " of the output");
	const uint64_t window = Op(in.op) == Op::Im2Col ? uint64_t(g.k) * g.k * g.c : g.c;
	uint8_t *d, *x;
	if (!(d = range(in, "dst", r_[in.a], rows * g.out_w(), window)) ||
	    !(x = range(in, "src", r_[in.b], uint64_t(g.h) * g.w, g.c)))
		return Result::Fault;
	if (Op(in.op) == Op::Im2Col)
		kernels::im2col_i8(d, x, g.h, g.w, g.c, g.k, g.stride, g.pad, uint32_t(row0), uint32_t(rows));
	else
		kernels::maxpool_i8(d, x, g.h, g.w, g.c, g.k, g.stride, g.pad, uint32_t(row0), uint32_t(rows));
	return Result::Next;
}

// REQI8: int32 to int8 by per-column multipliers and shifts.
Core::Result Core::requantize(const Instr &in)
{
	const uint64_t n = r_[in.imm32];
	uint8_t *hdr = range(in, "parameters", r_[in.c], kReqHeaderSize, 1);
	if (!hdr)
		return Result::Fault;
	uint32_t head[4];
	std::memcpy(head, hdr, sizeof(head));
	const uint32_t cols = head[0];
	if (!cols || (head[1] & ~kReqRelu) || head[2] || head[3])
		return fail(in, "parameter header: 0 columns, unknown flags or reserved words set");
	uint8_t *tables = range(in, "parameters", r_[in.c], req_block_size(cols), 1);
	uint8_t *d, *x;
	if (!tables || !(d = range(in, "dst", r_[in.a], n, 1)) || !(x = range(in, "src", r_[in.b], n, 4)))
		return Result::Fault;
	tables += kReqHeaderSize;
	for (uint32_t j = 0; j < cols; j++) {
		int32_t mult, shift;
		std::memcpy(&mult, tables + (uint64_t(cols) + j) * 4, 4);
		std::memcpy(&shift, tables + (2 * uint64_t(cols) + j) * 4, 4);
		if (mult < 0 || shift < 0 || uint32_t(shift) > kReqMaxShift)
			return fail(in, "column " + std::to_string(j) + ": multiplier " + std::to_string(mult) +
						" (0..2^31-1) or shift " + std::to_string(shift) + " (0..62)");
	}
	kernels::requant_i8(d, x, n, tables, tables + uint64_t(cols) * 4, tables + uint64_t(cols) * 8, cols,
			    head[1] & kReqRelu);
	return Result::Next;
}

// VADDQI8: quantized int8 addition.
Core::Result Core::vector_addq(const Instr &in)
{
	const uint64_t n = r_[in.imm32];
	if (in.imm64 & kAddQReserved)
		return fail(in, "reserved operand bits " + hex(in.imm64 & kAddQReserved) + " are set");
	const AddQ q = unpack_addq(in.imm64);
	uint8_t *d, *x, *y;
	if (!(d = range(in, "dst", r_[in.a], n, 1)) || !(x = range(in, "x", r_[in.b], n, 1)) ||
	    !(y = range(in, "y", r_[in.c], n, 1)))
		return Result::Fault;
	if (q.shift > kAddQMaxShift)
		return fail(in, "shift " + std::to_string(q.shift) + " (0..31)");
	kernels::vaddq_i8(d, x, y, n, q.mx, q.my, q.shift, q.relu);
	return Result::Next;
}

Core::Result Core::vector_op(const Instr &in)
{
	switch (Op(in.op)) {
	case Op::Copy:
		return vector_copy(in);
	case Op::VAddF:
	case Op::VMulF:
	case Op::VAddI8:
		return vector_binary(in);
	case Op::VScaleF:
	case Op::CvtI32F:
	case Op::ActF:
		return vector_unary(in);
	case Op::SumF:
	case Op::MaxF:
		return vector_reduce(in);
	case Op::BiasF:
		return vector_bias(in);
	case Op::Im2Col:
	case Op::MaxPoolI8:
		return im2col_maxpool(in);
	case Op::ReqI8:
		return requantize(in);
	case Op::VAddQI8:
		return vector_addq(in);
	default:
		return fail(in, "not a vector instruction");
	}
}

// MMI8P's B is a region the workload declared (.aic.packed) for this K
// and N: the layout's size was checked at load, and the card knows which
// of the window's bytes are weights in it.
bool Core::declared_packed(const Instr &in, uint64_t off, const Mnk &s)
{
	const PackedRegion *r = find_packed(packed_, off);
	if (r && r->k == s.k && r->n == s.n)
		return true;
	fault_addr_ = off;
	fault_addr_set_ = true;
	if (!r)
		fail(in, "B (packed) at " + hex(off) + " is not a region .aic.packed declares");
	else
		fail(in, "B (packed) at " + hex(off) + " is declared K=" + std::to_string(r->k) + " N=" +
				 std::to_string(r->n) + ", used as K=" + std::to_string(s.k) + " N=" +
				 std::to_string(s.n));
	return false;
}

Core::Result Core::gemm(const Instr &in, const std::function<bool()> *stop)
{
	const Mnk s = unpack_mnk(in.imm64);
	if (!s.m || !s.n || !s.k || s.k >= kMaxDim)
		return fail(in, "M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) + " K=" +
					std::to_string(s.k) + ": each must be 1..2^21-1");
	const Op op = Op(in.op);
	const uint64_t elem = op == Op::MmF32 ? 4 : 1;
	// MMI8P's B is packed: its size is the layout's (nsp.h), not K·N.
	const bool packed = op == Op::MmI8P;
	const uint64_t b_bytes = packed ? packed_b_size(s.k, s.n) : s.k * s.n * elem;
	if (packed && !declared_packed(in, r_[in.c], s))
		return Result::Fault;
	uint8_t *c, *a, *b;
	if (!(c = range(in, "C", r_[in.a], s.m * s.n, 4)) || !(a = range(in, "A", r_[in.b], s.m * s.k, elem)) ||
	    !(b = range(in, packed ? "B (packed)" : "B", r_[in.c], b_bytes, 1)))
		return Result::Fault;
	const uint64_t c_bytes = s.m * s.n * 4;
	const auto aliased = [&](const uint8_t *operand, uint64_t bytes) {
		return operand < c + c_bytes && c < operand + bytes && bytes > kMaxAliasedOperand;
	};
	if (aliased(a, s.m * s.k * elem) || aliased(b, b_bytes))
		return fail(in, std::string(aliased(a, s.m * s.k * elem) ? "A" : "B") +
					" overlaps C and is larger than " + std::to_string(kMaxAliasedOperand >> 20) +
					" MiB");
	const uint32_t m = uint32_t(s.m), n = uint32_t(s.n), k = uint32_t(s.k);
	bool done;
	if (op == Op::MmF32)
		done = kernels::gemm_f32(c, a, b, m, n, k, *scratch_, stop);
	else if (packed)
		done = kernels::gemm_i8_packed(c, a, b, m, n, k, *scratch_, stop);
	else
		done = kernels::gemm_i8(c, a, b, m, n, k, *scratch_, stop);
	// Up to 2 x 64 MiB a core, 2 GiB for 16: held only while a GEMM runs
	// (a stopped one copies again when it is re-executed).
	for (std::vector<uint8_t> *copy : {&scratch_->alias_a, &scratch_->alias_b})
		if (copy->capacity() > kScratchKept)
			std::vector<uint8_t>().swap(*copy);
	return done ? Result::Next : Result::Stopped;
}

// The registers, condition and semaphore operands the instruction's form
// names are in range, so the handlers below index with them unchecked.
[[gnu::always_inline]] inline bool Core::operands_ok(const Instr &in, Form form)
{
	switch (form) {
	case Form::None:
	case Form::Jump:
		return true;
	case Form::RegImm:
		return reg_ok(in, in.a);
	case Form::Reg2Imm:
	case Form::Branch:
		return reg_ok(in, in.a) && reg_ok(in, in.b);
	case Form::Reg4:
	case Form::Reg4Imm:
		if (!reg_ok(in, in.imm32))
			return false;
		[[fallthrough]];
	case Form::Reg3:
	case Form::Reg3Geom:
	case Form::Reg3F32:
	case Form::Reg3Kind:
	case Form::Reg3Imm:
	case Form::Reg3Mnk:
		return reg_ok(in, in.a) && reg_ok(in, in.b) && reg_ok(in, in.c);
	case Form::SemCond:
		if (in.b > uint8_t(Cond::Gt0)) {
			fail(in, "condition " + std::to_string(in.b) + " (0 ==, 1 >=, 2 > 0)");
			return false;
		}
		[[fallthrough]];
	case Form::SemValue:
		if (in.a >= Semaphores::kCount) {
			fail(in, "semaphore " + std::to_string(in.a) + " (0..31)");
			return false;
		}
		if (in.imm32 > Semaphores::kMax) {
			fail(in, "semaphore value " + std::to_string(in.imm32) + " (0..4095)");
			return false;
		}
		return true;
	}
	return true;
}

// Writes register i (r0 stays 0) and goes on to the next instruction.
[[gnu::always_inline]] inline Core::Result Core::put(unsigned i, uint64_t v)
{
	if (i)
		r_[i] = v;
	return Result::Next;
}

// LD, LD32, ST, ST32.
[[gnu::always_inline]] inline Core::Result Core::load_store(const Instr &in)
{
	const bool wide = Op(in.op) == Op::Ld || Op(in.op) == Op::St;
	uint8_t *p = range(in, "address", r_[in.b] + in.imm64, wide ? 8 : 4, 1);
	if (!p)
		return Result::Fault;
	uint64_t v = 0;
	if (Op(in.op) == Op::Ld || Op(in.op) == Op::Ld32) {
		std::memcpy(&v, p, wide ? 8 : 4);
		return put(in.a, v);
	}
	v = r_[in.a];
	std::memcpy(p, &v, wide ? 8 : 4);
	return Result::Next;
}

inline Core::Result Core::sem_wait(const Instr &in, const std::function<bool()> *stop)
{
	const Semaphores::Op op = kWaitOps[in.b];
	const uint16_t value = uint16_t(in.imm32);
	if (sems_.satisfied(in.a, op, value))
		return Result::Next;
	if (!stop || sharing_)
		return Result::Blocked;
	flush_busy(); // waiting is not busy time
	const bool ok = sems_.wait(in.a, op, value, *stop);
	if (busy_since_ >= 0)
		busy_since_ = now_ns();
	return ok ? Result::Next : Result::Stopped;
}

// SEMINC, SEMDEC, SEMSET.
[[gnu::always_inline]] inline Core::Result Core::sem_apply(const Instr &in)
{
	static constexpr Semaphores::Op ops[] = {Semaphores::Op::Inc, Semaphores::Op::Dec, Semaphores::Op::Init};
	static_assert(uint8_t(Op::SemDec) == uint8_t(Op::SemInc) + 1 &&
		      uint8_t(Op::SemSet) == uint8_t(Op::SemInc) + 2);
	sems_.apply(in.a, ops[in.op - uint8_t(Op::SemInc)], uint16_t(in.imm32));
	return Result::Next;
}

[[gnu::always_inline]] inline Core::Result Core::mark()
{
	flush_busy();
	counters_.iterations.fetch_add(1, std::memory_order_relaxed);
	return Result::Next;
}

// The interpreter's hot path: one switch, the scalar instructions inline.
Core::Result Core::exec(const Instr &in, const std::function<bool()> *stop)
{
	const OpInfo *info = op_info(in.op);
	if (!info)
		return fail(in, "unknown opcode");
	if (!operands_ok(in, info->form))
		return Result::Fault;
	const uint64_t *r = r_.data();
	switch (Op(in.op)) {
	case Op::Nop:
		return Result::Next;
	case Op::Halt:
		return Result::Halt;
	case Op::Li:
		return put(in.a, in.imm64);
	case Op::Add:
		return put(in.a, r[in.b] + r[in.c]);
	case Op::Sub:
		return put(in.a, r[in.b] - r[in.c]);
	case Op::Mul:
		return put(in.a, r[in.b] * r[in.c]);
	case Op::And:
		return put(in.a, r[in.b] & r[in.c]);
	case Op::Or:
		return put(in.a, r[in.b] | r[in.c]);
	case Op::Shl:
		return put(in.a, r[in.b] << (r[in.c] & 63));
	case Op::Shr:
		return put(in.a, r[in.b] >> (r[in.c] & 63));
	case Op::Addi:
		return put(in.a, r[in.b] + in.imm64);
	case Op::Ld:
	case Op::Ld32:
	case Op::St:
	case Op::St32:
		return load_store(in);
	case Op::Jmp:
		return branch(in, in.imm32, stop);
	case Op::Beq:
		return r[in.a] == r[in.b] ? branch(in, in.imm32, stop) : Result::Next;
	case Op::Bne:
		return r[in.a] != r[in.b] ? branch(in, in.imm32, stop) : Result::Next;
	case Op::Blt:
		return r[in.a] < r[in.b] ? branch(in, in.imm32, stop) : Result::Next;
	case Op::SemWait:
		return sem_wait(in, stop);
	case Op::SemInc:
	case Op::SemDec:
	case Op::SemSet:
		return sem_apply(in);
	case Op::Mark:
		return mark();
	case Op::MmI8:
	case Op::MmF32:
	case Op::MmI8P:
		return gemm(in, stop);
	default:
		return vector_op(in);
	}
}

void Core::ran_off_end()
{
	state_ = State::Fault;
	fault_ = "pc " + std::to_string(pc_) + ": ran past the end of the program of " +
		 std::to_string(program_.size()) + " instructions";
}

Core::Exit Core::run(const std::function<bool()> &stop, std::chrono::nanoseconds slice)
{
	if (state_ == State::Halted)
		return Exit::Halted;
	if (state_ == State::Fault)
		return Exit::Fault;
	busy_since_ = now_ns();
	stop_requested_ = false;
	sharing_ = slice.count() > 0;
	const int64_t slice_end = busy_since_ + slice.count();
	const Instr *prog = program_.data();
	const uint64_t size = program_.size();
	unsigned budget = kPollEvery;
	int64_t charged = prof_ ? busy_since_ : 0; // profiling: the time charged up to
	Exit exit;
	for (;;) {
		if (--budget == 0) {
			budget = kPollEvery;
			flush_busy();
			if (stop()) {
				exit = Exit::Stopped;
				break;
			}
			if (sharing_ && busy_since_ >= slice_end) {
				exit = Exit::Yielded;
				break;
			}
		}
		if (pc_ >= size) {
			ran_off_end();
			exit = Exit::Fault;
			break;
		}
		const uint64_t at = pc_;
		const Result res = exec(prog[at], &stop);
		if (prof_) [[unlikely]]
			charged = charge(at, charged, res);
		if (res == Result::Next) {
			pc_++;
			executed_++;
			continue;
		}
		if (res == Result::Jumped) {
			executed_++;
			if (stop_requested_) {
				exit = Exit::Stopped;
				break;
			}
			continue;
		}
		if (res == Result::Halt) {
			executed_++;
			state_ = State::Halted;
			exit = Exit::Halted;
		} else if (res == Result::Fault) {
			exit = Exit::Fault;
		} else if (res == Result::Blocked) {
			exit = Exit::Blocked; // sharing_: pc stays on the SEMWAIT
		} else {
			exit = Exit::Stopped;
		}
		break;
	}
	flush_busy();
	busy_since_ = -1;
	stop_requested_ = false;
	sharing_ = false;
	return exit;
}

std::optional<Semaphores::Cond> Core::blocked_on() const
{
	if (state_ != State::Running || pc_ >= program_.size())
		return std::nullopt;
	const Instr &in = program_[pc_];
	if (Op(in.op) != Op::SemWait || in.b >= std::size(kWaitOps))
		return std::nullopt;
	return Semaphores::Cond{in.a, kWaitOps[in.b], uint16_t(in.imm32)};
}

bool Core::step()
{
	if (state_ != State::Running)
		return false;
	if (pc_ >= program_.size()) {
		ran_off_end();
		return false;
	}
	switch (exec(program_[pc_], nullptr)) {
	case Result::Next:
		pc_++;
		executed_++;
		return true;
	case Result::Jumped:
		executed_++;
		return true;
	case Result::Halt:
		executed_++;
		state_ = State::Halted;
		return false;
	case Result::Blocked:
	case Result::Stopped:
		return true;
	case Result::Fault:
		break;
	}
	return false;
}

// ---- Workers ----------------------------------------------------------------

CoreState Core::snapshot(unsigned index) const
{
	CoreState s;
	s.index = index;
	s.state = state_ == State::Halted  ? CoreState::State::Halted
		  : state_ == State::Fault ? CoreState::State::Fault
					   : CoreState::State::Stopped;
	s.pc = pc_;
	s.executed = executed_;
	s.fault_addr = state_ == State::Fault ? fault_addr_ : pc_ * sizeof(Instr);
	if (pc_ < program_.size())
		s.instr = program_[pc_];
	s.regs = r_;
	return s;
}

Workers::~Workers()
{
	stop();
}

bool Workers::start(const Workload &w, std::span<uint8_t> window, Semaphores &sems, Counters &counters,
		    unsigned nsps, std::function<void()> on_end)
{
	if (running() || nsps > kMaxNsps)
		return false;
	join(); // threads that ended by themselves
	program_ = w.program;
	packed_ = w.packed;
	entry_ = w.meta.entry;
	n_ = nsps ? nsps : std::clamp<unsigned>(w.meta.nsp_count, 1, kMaxNsps);
	window_ = window;
	sems_ = &sems;
	counters_ = &counters;
	on_end_ = std::move(on_end);
	{
		std::lock_guard<std::mutex> g(mu_);
		fault_.clear();
		states_.assign(n_, CoreState{});
		for (unsigned k = 0; k < n_; k++)
			states_[k].index = k;
		inject_k_ = ~0u;
	}
	stop_ = false;
	stopped_by_owner_ = false;
	live_ = n_;
	const unsigned cores = max_threads_ ? max_threads_ : std::max(1u, std::thread::hardware_concurrency());
	const unsigned threads = std::min(n_, cores);
	if (profile_)
		size_profile(threads);
	try {
		for (unsigned t = 0; t < threads; t++)
			threads_.emplace_back(&Workers::body, this, t, threads);
	} catch (const std::system_error &) {
		// The cores of the threads that did not start never run.
		stopped_by_owner_ = true;
		for (unsigned k = 0; k < n_; k++)
			if (k % threads >= threads_.size())
				live_--;
		stop();
		return false;
	}
	return true;
}

void Workers::size_profile(unsigned threads)
{
	profile_->cores.assign(n_, {});
	for (unsigned k = 0; k < n_; k++) {
		profile_->cores[k].thread = k % threads;
		profile_->cores[k].ns.assign(program_.size(), 0);
		profile_->cores[k].count.assign(program_.size(), 0);
	}
	profile_->threads.assign(threads, {});
}

// Host thread t of `stride`: cores t, t + stride, ... A host failure (an
// allocation) faults them all, as a hardware failure would: it must not
// reach std::terminate.
void Workers::body(unsigned t, unsigned stride)
{
	// Fixed arrays: the bookkeeping of a failure must not allocate itself.
	std::array<unsigned, kMaxNsps> ks;
	std::array<bool, kMaxNsps> ended{};
	size_t count = 0;
	for (unsigned k = t; k < n_; k += stride)
		ks[count++] = k;
	const int64_t t0 = profile_ ? now_ns() : 0;
	Profile::Thread *prof = profile_ ? &profile_->threads[t] : nullptr;
	try {
		run_cores(std::span(ks.data(), count), std::span(ended.data(), count), prof);
		if (prof) {
			prof->wall_ns = uint64_t(now_ns() - t0);
			prof->cpu_ns = thread_cpu_ns();
		}
	} catch (const std::exception &e) {
		for (size_t i = 0; i < count; i++)
			if (!ended[i])
				fail_on_host(ks[i], e.what());
	}
}

void Workers::run_cores(std::span<const unsigned> ks, std::span<bool> ended, Profile::Thread *prof)
{
	const std::function<bool()> stop = [this] { return stop_.load(std::memory_order_relaxed); };
	std::vector<std::unique_ptr<Core>> cores;
	for (unsigned k : ks) {
		cores.push_back(std::make_unique<Core>(program_, entry_, window_, *sems_, *counters_, k, n_));
		cores.back()->set_packed(packed_);
		if (profile_)
			cores.back()->set_profile(&profile_->cores[k]);
	}
	if (cores.size() == 1) { // a thread of its own: SEMWAIT sleeps in place
		const Core::Exit exit = cores[0]->run(stop);
		ended[0] = true; // before: finish() ends the core even if it throws
		finish(ks[0], *cores[0], exit);
		return;
	}
	// A core that yielded has work: the time until its next turn is busy
	// time, as it would be on an NSP of its own (SEMWAIT's is not).
	std::vector<int64_t> ready_since(cores.size(), -1);
	size_t left = cores.size();
	std::vector<Semaphores::Cond> waits;
	while (left) {
		bool progressed = false;
		waits.clear();
		for (size_t i = 0; i < cores.size(); i++) {
			if (ended[i])
				continue;
			Core &c = *cores[i];
			Core::Exit exit = Core::Exit::Stopped;
			if (ready_since[i] >= 0) {
				counters_->busy_ns.fetch_add(uint64_t(now_ns() - ready_since[i]), std::memory_order_relaxed);
				ready_since[i] = -1;
			}
			if (!stop()) {
				const uint64_t before = c.executed();
				exit = c.run(stop, kSlice);
				progressed = progressed || c.executed() != before || exit == Core::Exit::Yielded;
				if (exit == Core::Exit::Yielded) {
					ready_since[i] = now_ns();
					continue;
				}
				if (exit == Core::Exit::Blocked) {
					waits.push_back(*c.blocked_on());
					continue;
				}
			}
			ended[i] = true;
			finish(ks[i], c, exit);
			left--;
			progressed = true;
		}
		if (left && !progressed)
			sleep_blocked(ks, cores, ended, waits, stop, prof);
	}
}

// Every core here waits and none moved: sleep until one of their
// conditions holds (checked under the semaphores' lock, so a change made
// meanwhile is not missed) or the workload stops. Profiling: the sleep is
// the waiting cores' SEMWAIT time, split evenly.
void Workers::sleep_blocked(std::span<const unsigned> ks, const std::vector<std::unique_ptr<Core>> &cores,
			    std::span<const bool> ended, const std::vector<Semaphores::Cond> &waits,
			    const std::function<bool()> &stop, Profile::Thread *prof)
{
	const int64_t t0 = prof ? now_ns() : 0;
	sems_->wait_any(waits, stop);
	if (!prof || waits.empty())
		return;
	const uint64_t slept = uint64_t(now_ns() - t0);
	prof->idle_ns += slept;
	for (size_t i = 0; i < cores.size(); i++)
		if (!ended[i])
			profile_->cores[ks[i]].ns[cores[i]->pc()] += slept / waits.size();
}

void Workers::finish(unsigned k, const Core &core, Core::Exit exit)
{
	try {
		record_end(k, core, exit);
	} catch (const std::exception &) {
		note_fault(k, "out of memory");
		exit = Core::Exit::Fault;
	}
	end_core(exit == Core::Exit::Fault);
}

void Workers::record_end(unsigned k, const Core &core, Core::Exit exit)
{
	std::lock_guard<std::mutex> g(mu_);
	CoreState s = core.snapshot(k);
	if (exit == Core::Exit::Stopped && inject_k_ == k) {
		s.state = CoreState::State::Fault;
		if (fault_.empty())
			fault_ = "nsp " + std::to_string(k) + ": injected fault: " + inject_why_ + " at instruction " +
				 std::to_string(core.pc());
	} else if (exit == Core::Exit::Fault && fault_.empty()) {
		fault_ = "nsp " + std::to_string(k) + ": " + core.fault();
	}
	states_.at(k) = s;
}

// Core k failed for the host's sake; its end must be counted whatever else
// fails, so the text falls back to one short enough not to allocate.
void Workers::note_fault(unsigned k, const char *why) noexcept
{
	std::lock_guard<std::mutex> g(mu_);
	states_[k].state = CoreState::State::Fault;
	if (!fault_.empty())
		return;
	try {
		fault_ = "nsp " + std::to_string(k) + ": the host could not run it: " + why;
	} catch (const std::exception &) {
		fault_ = "out of memory";
	}
}

void Workers::fail_on_host(unsigned k, const char *why)
{
	note_fault(k, why);
	end_core(true);
}

// One core has ended; a fault stops the workload as a whole.
void Workers::end_core(bool fault)
{
	if (fault) {
		stop_ = true;
		sems_->wake_all();
	}
	if (live_.fetch_sub(1) != 1)
		return;
	{
		// The injected core had ended by itself before the injection: it
		// fails where it stood.
		std::lock_guard<std::mutex> g(mu_);
		if (inject_k_ < states_.size() && fault_.empty()) {
			CoreState &s = states_[inject_k_];
			s.state = CoreState::State::Fault;
			fault_ = "nsp " + std::to_string(inject_k_) + ": injected fault: " + inject_why_ +
				 " at instruction " + std::to_string(s.pc);
		}
	}
	if (!stopped_by_owner_ && on_end_)
		on_end_();
}

void Workers::join()
{
	for (std::thread &t : threads_)
		if (t.joinable())
			t.join();
	threads_.clear();
}

void Workers::stop()
{
	if (threads_.empty())
		return;
	stopped_by_owner_ = true;
	stop_ = true;
	sems_->wake_all();
	join();
}

bool Workers::faulted() const
{
	std::lock_guard<std::mutex> g(mu_);
	return !fault_.empty();
}

std::string Workers::fault() const
{
	std::lock_guard<std::mutex> g(mu_);
	return fault_;
}

bool Workers::inject_fault(unsigned k, const std::string &why)
{
	if (!running() || k >= n_ || stopped_by_owner_)
		return false;
	{
		std::lock_guard<std::mutex> g(mu_);
		if (inject_k_ != ~0u || !fault_.empty())
			return false; // already failing
		inject_k_ = k;
		inject_why_ = why;
	}
	stop_ = true;
	sems_->wake_all();
	return true;
}

std::vector<CoreState> Workers::states() const
{
	std::lock_guard<std::mutex> g(mu_);
	return states_;
}

} // namespace aic100::nsp
