// SPDX-License-Identifier: GPL-2.0-or-later
// Example NSP workloads (docs/nsp.md), their window layouts and host
// reference implementations. `aic100-workloads --out DIR` writes them as
// ELFs with DIR/workloads.json; tests and runners link this library.
//
// Every example is a pipeline over one input and one output buffer:
//
//   host (DMA Bridge requests)            program (every NSP)
//   wait sem_in == 0, write the input,    loop: wait sem_in >= 1 and
//     sem_in += 1                               sem_out == 0; compute;
//   wait sem_out > 0, read the output,          sem_in -= 1, sem_out += 1,
//     sem_out -= 1                              MARK; repeat
//
// so the host may queue any number of inputs and outputs. With several NSPs
// each computes its share (by r1 = k, r2 = n); NSP 0 waits for the others
// on semaphore 2 (a count) and releases them through semaphore 3 (a phase
// that flips each iteration) after it has done the sem_in/sem_out step, so
// no NSP can start on an input twice.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace aic100::workloads {

constexpr unsigned kSemIn = 0;    // input present (host +1, program -1)
constexpr unsigned kSemOut = 1;   // output present (program +1, host -1)
constexpr unsigned kSemDone = 2;  // NSPs done with this iteration (internal)
constexpr unsigned kSemPhase = 3; // iteration parity, set by NSP 0 (internal)

struct Buffer {
	std::string name;
	uint64_t offset, size;
	std::string role; // "input", "output", "weights" (in the ELF), "scratch"
};

struct Layout {
	std::string name;
	std::string description;
	unsigned nsps = 1;
	uint64_t io_size = 0;
	Buffer input, output;
	unsigned sem_in = kSemIn, sem_out = kSemOut;
	std::vector<Buffer> buffers; // all of them, in window order
};

enum class Compare { Exact, F32 };

struct Example {
	Layout layout;
	Compare compare = Compare::Exact;
	double tolerance = 0; // F32: |got - want| <= tolerance * (1 + |want|)
	std::string source;   // assembler text (tools/nspasm/nspasm.h)
	std::map<std::string, std::vector<uint8_t>> files; // what its .file lines read
	std::function<std::vector<uint8_t>(uint64_t seed)> make_input;
	std::function<std::vector<uint8_t>(std::span<const uint8_t> input)> reference;
};

// copy, vadd_f32, matmul_i8, matmul_f32, mlp_f32, add_4nsp.
const std::vector<Example> &examples();
const Example *find(std::string_view name);

// The workload ELF of an example.
std::optional<std::vector<uint8_t>> build(const Example &e, std::string &err);

// Whether `got` matches `want` as the example compares outputs; the first
// mismatch in `why`.
bool matches(const Example &e, std::span<const uint8_t> got, std::span<const uint8_t> want, std::string &why);

// Every layout as JSON (DIR/workloads.json) and as a Markdown table.
std::string layouts_json();
std::string layouts_markdown();

} // namespace aic100::workloads
