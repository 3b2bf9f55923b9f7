// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-compile --profile: where a run on the interpreter spent its time,
// per layer and per kind of work, from the interpreter's time per
// instruction of each core (nsp_run::Profile) and the compiler's map of
// instructions to layers (Compiled::layer_of). docs/compiler.md has the
// JSON's fields and bench/engine_profile.py draws them.
#pragma once

#include <aic100/nsp_run.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lower.h"
#include "network.h"

namespace aic100::compiler::profile {

// The kinds of work an instruction does; the other time of a host thread
// (switching between the cores it shares) is Other too.
enum Work : unsigned {
	Gemm,        // MMI8, MMF32
	Move,        // data movement: COPY, IM2COL, LD/ST
	Elementwise, // REQI8, VADDQI8, MAXPOOLI8, the f32 vector operations
	Wait,        // SEMWAIT: barriers and the host protocol, blocked time
	Other,       // scalar arithmetic, branches, SEMINC/SET, MARK, switching
	kWorks
};
const char *work_name(unsigned w);
Work work_of(uint8_t op);

// Seconds per kind of work.
struct Times {
	std::array<double, kWorks> s{};
	double total() const;
	Times &operator+=(const Times &o);
};

struct Report {
	unsigned resolution = 0, nsps = 0;
	uint64_t inferences = 0;
	double seconds = 0; // of the inferences, as --run times them
	struct Thread {
		std::vector<unsigned> nsps;
		double wall = 0, cpu = 0, idle = 0; // nsp_run::Profile::Thread's
		uint64_t gemm_macs = 0; // per inference
		Times t; // its cores' instructions, then the rest of its wall time as Other
	};
	struct Layer {
		std::string name, kind; // "(loop)": the inference loop; "(switching)": threads between cores
		uint64_t macs = 0;      // the network's, per inference
		uint64_t gemm_macs = 0; // done by its MMI8s, per inference (the pool's too)
		Times t;                // summed over the threads, whole run
	};
	std::vector<Thread> threads;
	std::vector<Times> cores; // per NSP: its instructions only
	std::vector<Layer> layers;
	struct OpTime {
		double seconds = 0;  // whole run, summed over the cores
		uint64_t count = 0;  // executions completed
	};
	std::array<OpTime, 256> ops; // by opcode
	Times total;
	uint64_t macs = 0, gemm_macs = 0; // per inference
};

Report make_report(const Network &n, const Compiled &c, const nsp_run::Profile &p, unsigned resolution,
		   uint64_t inferences, double seconds);
std::string to_json(const Report &r);
// A short table in ms per inference: the stages (layers merged by the part
// of their names before the first dot), the threads and the totals.
std::string table(const Report &r);

} // namespace aic100::compiler::profile
