// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/bhie_loader.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "aic100/bhie.h"
#include "aic100/format.h"

namespace aic100 {

namespace {

// Why the table's own size is unusable, or empty.
std::string check_table_size(uint32_t table_size)
{
	if (table_size == 0)
		return "vector table size is 0";
	if (table_size % sizeof(bhie::VecEntry))
		return format("vector table size %" PRIu32 " is not a whole number of %zu-byte entries", table_size,
			      sizeof(bhie::VecEntry));
	if (table_size / sizeof(bhie::VecEntry) > kMaxBhieSegments)
		return format("vector table of %zu segments (at most %" PRIu32 ")",
			      table_size / sizeof(bhie::VecEntry), kMaxBhieSegments);
	return {};
}

// Checks every entry and adds up the image's size; why not, or empty.
std::string check_entries(const std::vector<bhie::VecEntry> &entries, uint64_t max_image, uint64_t &total)
{
	total = 0;
	for (size_t i = 0; i < entries.size(); i++) {
		const bhie::VecEntry &e = entries[i];
		if (e.size == 0)
			return format("segment %zu has size 0", i);
		// Compared before they are added: no sum can wrap.
		if (e.size > max_image || total > max_image - e.size)
			return format("segments 0..%zu add up to more than the %" PRIu64 "-byte image limit", i,
				      max_image);
		if (e.dma_addr + e.size < e.dma_addr)
			return format("segment %zu at 0x%" PRIx64 " wraps the bus address space", i, e.dma_addr);
		total += e.size;
	}
	return {};
}

} // namespace

BhieLoad load_bhie_image(HostInterface &host, uint64_t table_addr, uint32_t table_size, uint64_t max_image)
{
	BhieLoad out;
	out.error = check_table_size(table_size);
	if (!out.error.empty())
		return out;
	std::vector<bhie::VecEntry> entries(table_size / sizeof(bhie::VecEntry));
	if (host.dma_read(table_addr, entries.data(), table_size) != DmaStatus::Ok) {
		out.error = format("vector table at 0x%" PRIx64 " (%" PRIu32 " bytes) unreadable", table_addr, table_size);
		return out;
	}
	uint64_t total = 0;
	out.error = check_entries(entries, max_image, total);
	if (!out.error.empty())
		return out;
	out.image.resize(total);
	uint64_t at = 0;
	for (size_t i = 0; i < entries.size(); i++) {
		const bhie::VecEntry &e = entries[i];
		if (host.dma_read(e.dma_addr, out.image.data() + at, e.size) != DmaStatus::Ok) {
			out.error = format("segment %zu at 0x%" PRIx64 " (%" PRIu64 " bytes) unreadable", i, e.dma_addr,
					   e.size);
			out.image.clear();
			return out;
		}
		at += e.size;
	}
	return out;
}

} // namespace aic100
