// SPDX-License-Identifier: GPL-2.0-or-later
// Runs a compiled network on the NSP interpreter as the card and the host
// would: the window as ACTIVATE leaves it (constants at const_offset), then
// per inference the host's protocol on semaphores 0 and 1 (lower.h). It
// goes through aic100/nsp_run.h, as aic100-compile --run does.
#pragma once

#include <aic100/nsp.h>
#include <aic100/nsp_run.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "lower.h"

namespace aic100::compiler::testing {

struct InterpResult {
	std::vector<std::vector<int8_t>> outputs;
	std::string problem; // empty: every inference came back
	uint64_t iterations = 0;
};

// With `profile`, the run is profiled into it.
inline InterpResult run_on_interpreter(const Compiled &c, const std::vector<std::vector<int8_t>> &inputs,
				       unsigned nsps = 0, nsp_run::Profile *profile = nullptr)
{
	using Clock = std::chrono::steady_clock;
	InterpResult res;
	const nsp::Workload w = c.workload();
	std::vector<uint8_t> window = c.initial_window();
	nsp_run::Activation act;
	act.set_profiling(profile != nullptr);
	if (!act.start(w, window, nsps)) {
		res.problem = "the workers did not start";
		return res;
	}
	const auto deadline = Clock::now() + std::chrono::seconds(120);
	const std::function<bool()> give_up = [&] { return Clock::now() > deadline; };
	for (const auto &in : inputs) {
		if (!act.wait(kSemIn, sem::Op::WaitEq, 0, give_up))
			break;
		std::memcpy(window.data() + c.input_offset, in.data(), std::min<size_t>(in.size(), c.input_bytes));
		act.apply(kSemIn, sem::Op::Inc, 1);
		if (!act.wait(kSemOut, sem::Op::WaitGe, 1, give_up))
			break;
		const auto *o = reinterpret_cast<const int8_t *>(window.data() + c.output_offset);
		res.outputs.emplace_back(o, o + c.output_bytes);
		act.apply(kSemOut, sem::Op::Dec, 1);
	}
	if (act.faulted())
		res.problem = act.fault();
	else if (res.outputs.size() != inputs.size())
		res.problem = "timed out after " + std::to_string(res.outputs.size()) + " inferences";
	act.stop();
	res.iterations = act.iterations();
	if (profile)
		*profile = act.profile();
	return res;
}

} // namespace aic100::compiler::testing
