// SPDX-License-Identifier: GPL-2.0-or-later
// The program container (QPC, "programqpc.bin"): named segments behind a
// small header, in the layout the open UMD reads (docs/qpc.md,
// "Container"). Little-endian; every "pointer" field holds `base` plus a
// file offset, and the files we write have base 0.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace aic100::qpc {

constexpr uint32_t kMagic = 0x00A1CD7C;
constexpr uint8_t kMajor = 0;
constexpr uint8_t kMinor = 1;
// 1: the pointer fields are base-relative and may be relocated (the UMD
// copies the file and fixes them up; it refuses 0).
constexpr uint16_t kRelocatable = 1;
constexpr size_t kHeaderSize = 40;
constexpr size_t kSegmentEntrySize = 32;

// The segment names the UMD looks for.
constexpr char kNetworkElf[] = "network.elf";
constexpr char kNetworkDesc[] = "networkdesc.bin";
constexpr char kConstants[] = "constants.bin";
constexpr char kConstantsDesc[] = "constantsdesc.bin";

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
