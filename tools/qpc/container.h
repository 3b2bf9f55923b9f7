// SPDX-License-Identifier: GPL-2.0-or-later
// The program container (QPC, "programqpc.bin"): named segments behind a
// small header, in the layout the open UMD reads (aic100/qpc.h; docs/qpc.md,
// "Container"). The files we write have base 0.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <aic100/qpc.h>

namespace aic100::qpc {

struct Segment {
	std::string name;
	std::vector<uint8_t> data;
	// constants.bin: the length of its static part (the rest is the
	// dynamic part); 0 in every other segment.
	uint64_t split = 0;
};

struct Container {
	uint8_t major = kMajor, minor = kMinor;
	uint16_t compression = kRelocatable;
	uint64_t base = 0;
	std::vector<Segment> segments;

	const Segment *find(std::string_view name) const;
};

// The file for `segments`, in their order: header, segment table, names,
// then data, each name and each segment's data 8-byte aligned. nullopt
// (reason in `err`) for an empty or repeated name, or a split beyond the
// data.
std::optional<std::vector<uint8_t>> write_container(const std::vector<Segment> &segments, std::string &err);

// Parses a whole file and checks every field; nullopt with the first
// problem in `err`.
std::optional<Container> read_container(std::span<const uint8_t> file, std::string &err);

} // namespace aic100::qpc
