// SPDX-License-Identifier: GPL-2.0-or-later
// The RAM dump a crashed card keeps for the host: what the SBL offers over
// Sahara in mode 2 (MEMORY_DEBUG) when it comes back from the host's reset
// after a firmware failure (docs/health.md, "RAM dump after a firmware
// failure"). A table of 64-byte entries and the regions it lists, each at a
// card address of its own; the host reads them with MEM_READ64.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace aic100 {

class RamDump {
public:
	// Where the table sits, and how far apart the regions are: each region
	// has a window of its own, so a read never spans two of them.
	static constexpr uint64_t kTableAddress = 0xD800'0000'0000'0000;
	static constexpr uint64_t kRegionStride = 0x1'0000'0000;
	static constexpr size_t kEntrySize = 64;
	static constexpr size_t kNameSize = 20; // description and filename, NUL included
	// The most one MEM_READ64 may ask for: the host's receive buffer
	// (an MHI transfer holds at most 64 KiB - 1 bytes).
	static constexpr uint64_t kMaxRead = 0xFFFF;

	struct Region {
		std::string description; // at most 19 characters
		std::string filename;    // at most 19 characters
		// Shared, not copied: an image's region is the payload the QSM
		// ran from.
		std::shared_ptr<const std::vector<uint8_t>> bytes;
		std::span<const uint8_t> data; // all of *bytes, never empty
		uint64_t address = 0;
	};

	// Regions are laid out in the order they are added. Names longer than
	// 19 characters are cut; an empty region is not added.
	void add(std::string description, std::string filename, std::vector<uint8_t> data);
	// The same, sharing bytes that someone else holds too (an image's
	// payload): the dump keeps them alive and copies nothing.
	void add_shared(std::string description, std::string filename,
			std::shared_ptr<const std::vector<uint8_t>> data);

	const std::vector<Region> &regions() const { return regions_; }
	// The table as the host reads it: one entry {le64 type (0), le64
	// address, le64 length, char description[20], char filename[20]} per
	// region.
	const std::vector<uint8_t> &table() const { return table_; }
	uint64_t table_length() const { return table_.size(); }
	// Table and regions together.
	uint64_t total_bytes() const;

	// What one MEM_READ64 gets: the bytes, or a Sahara status saying why
	// not (0x19: the range is not inside the table or one region; 0x1A: a
	// length of 0 or above kMaxRead).
	struct Read {
		uint32_t status = 0;
		std::span<const uint8_t> data;
	};
	Read read(uint64_t address, uint64_t length) const;

private:
	std::vector<Region> regions_;
	std::vector<uint8_t> table_;
};

} // namespace aic100
