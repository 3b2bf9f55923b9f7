// SPDX-License-Identifier: GPL-2.0-or-later
// aic100/nsp_run.h over the interpreter's own classes.
#include "aic100/nsp_run.h"

#include "aic100/nsp_interpreter.h"
#include "aic100/nsp_kernels.h"
#include "aic100/semaphores.h"

namespace aic100::nsp_run {

Result run(std::span<const nsp::Instr> program, std::span<uint8_t> window,
	   std::span<const nsp::PackedRegion> packed)
{
	Semaphores sems;
	nsp::Counters counters;
	nsp::Core core(program, 0, window, sems, counters);
	core.set_packed(packed);
	core.run([] { return false; });
	return {core.halted(), core.executed(), core.halted() ? std::string() : core.fault()};
}

struct Activation::State {
	Semaphores sems;
	nsp::Counters counters;
	nsp::Profile profile;
	nsp::Workers workers; // last: stopped before the rest goes
};

Activation::Activation() : s_(std::make_unique<State>()) {}

Activation::~Activation()
{
	stop();
}

bool Activation::start(const nsp::Workload &w, std::span<uint8_t> window, unsigned nsps)
{
	if (s_->workers.running())
		return false;
	s_->sems.reset();
	return s_->workers.start(w, window, s_->sems, s_->counters, nsps);
}

void Activation::stop()
{
	s_->workers.stop();
}

bool Activation::set_profiling(bool on)
{
	if (s_->workers.threads())
		return false; // its threads read the pointer
	s_->workers.set_profile(on ? &s_->profile : nullptr);
	return true;
}

Profile Activation::profile() const
{
	Profile p;
	for (const nsp::Profile::Core &c : s_->profile.cores)
		p.cores.push_back({c.thread, c.ns, c.count});
	for (const nsp::Profile::Thread &t : s_->profile.threads)
		p.threads.push_back({t.wall_ns, t.cpu_ns, t.idle_ns});
	return p;
}

unsigned Activation::threads() const
{
	return s_->workers.threads();
}

bool Activation::faulted() const
{
	return s_->workers.faulted();
}

std::string Activation::fault() const
{
	return s_->workers.fault();
}

uint64_t Activation::iterations() const
{
	return s_->counters.iterations.load();
}

bool Activation::apply(unsigned index, sem::Op op, uint16_t value)
{
	return s_->sems.apply(index, op, value);
}

bool Activation::wait(unsigned index, sem::Op op, uint16_t value, const std::function<bool()> &give_up)
{
	return s_->sems.wait(index, op, value,
			     [&] { return s_->workers.faulted() || (give_up && give_up()); });
}

namespace kernels = nsp::kernels;

struct Kernels::State {
	kernels::Isa isa;
	kernels::Scratch scratch;
};

std::vector<std::string> Kernels::paths()
{
	std::vector<std::string> v;
	for (kernels::Isa isa : kernels::usable_isas())
		v.emplace_back(kernels::isa_name(isa));
	return v;
}

Kernels::Kernels(std::string_view path) : s_(std::make_unique<State>())
{
	s_->isa = kernels::best_isa();
	for (kernels::Isa isa : kernels::usable_isas())
		if (path == kernels::isa_name(isa))
			s_->isa = isa;
	path_ = kernels::isa_name(s_->isa);
}

Kernels::~Kernels() = default;

void Kernels::gemm_i8(int32_t *c, const int8_t *a, const int8_t *b, uint32_t m, uint32_t n, uint32_t k)
{
	kernels::gemm_i8(reinterpret_cast<uint8_t *>(c), reinterpret_cast<const uint8_t *>(a),
			 reinterpret_cast<const uint8_t *>(b), m, n, k, s_->scratch, nullptr, s_->isa);
}

void Kernels::gemm_f32(float *c, const float *a, const float *b, uint32_t m, uint32_t n, uint32_t k)
{
	kernels::gemm_f32(reinterpret_cast<uint8_t *>(c), reinterpret_cast<const uint8_t *>(a),
			  reinterpret_cast<const uint8_t *>(b), m, n, k, s_->scratch, nullptr, s_->isa);
}

void Kernels::im2col_i8(int8_t *dst, const int8_t *src, uint32_t h, uint32_t w, uint32_t c, uint32_t k,
			uint32_t stride, uint32_t pad, uint32_t row0, uint32_t rows)
{
	kernels::im2col_i8(reinterpret_cast<uint8_t *>(dst), reinterpret_cast<const uint8_t *>(src), h, w, c, k,
			   stride, pad, row0, rows);
}

void Kernels::maxpool_i8(int8_t *dst, const int8_t *src, uint32_t h, uint32_t w, uint32_t c, uint32_t k,
			 uint32_t stride, uint32_t pad, uint32_t row0, uint32_t rows)
{
	kernels::maxpool_i8(reinterpret_cast<uint8_t *>(dst), reinterpret_cast<const uint8_t *>(src), h, w, c, k,
			    stride, pad, row0, rows);
}

} // namespace aic100::nsp_run
