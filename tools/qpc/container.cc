// SPDX-License-Identifier: GPL-2.0-or-later
// Writes and reads program containers (docs/qpc.md, "Container").
#include "container.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <set>
#include "le.h"

namespace aic100::qpc {

namespace {

using le::get;
using le::put;

size_t align8(size_t v)
{
	return (v + 7) & ~size_t(7);
}

std::string hex(uint64_t v)
{
	char b[24];
	std::snprintf(b, sizeof(b), "0x%" PRIx64, v);
	return b;
}

} // namespace

const Segment *Container::find(std::string_view name) const
{
	for (const Segment &s : segments)
		if (s.name == name)
			return &s;
	return nullptr;
}

std::optional<std::vector<uint8_t>> write_container(const std::vector<Segment> &segments, std::string &err)
{
	std::set<std::string> seen;
	for (const Segment &s : segments) {
		if (s.name.empty() || s.name.find('\0') != std::string::npos) {
			err = "a segment name is empty or holds a NUL";
			return std::nullopt;
		}
		if (!seen.insert(s.name).second) {
			err = "segment " + s.name + " appears twice";
			return std::nullopt;
		}
		if (s.split > s.data.size()) {
			err = "segment " + s.name + ": split " + std::to_string(s.split) + " beyond its " +
			      std::to_string(s.data.size()) + " bytes";
			return std::nullopt;
		}
	}
	const size_t table = kHeaderSize;
	size_t at = table + kSegmentEntrySize * segments.size();
	std::vector<size_t> name_at, data_at;
	for (const Segment &s : segments) {
		name_at.push_back(at);
		at = align8(at + s.name.size() + 1);
	}
	for (const Segment &s : segments) {
		data_at.push_back(at);
		at = align8(at + s.data.size());
	}
	std::vector<uint8_t> f(at, 0);
	put(f, 0, kMagic, 4);
	f[4] = kMajor;
	f[5] = kMinor;
	put(f, 6, kRelocatable, 2);
	put(f, 8, f.size(), 8);
	put(f, 16, 0, 8); // base
	put(f, 24, segments.size(), 8);
	put(f, 32, table, 8);
	for (size_t i = 0; i < segments.size(); i++) {
		const Segment &s = segments[i];
		const size_t e = table + kSegmentEntrySize * i;
		put(f, e, s.data.size(), 8);
		put(f, e + 8, s.split, 8);
		put(f, e + 16, name_at[i], 8);
		put(f, e + 24, data_at[i], 8);
		std::memcpy(&f[name_at[i]], s.name.data(), s.name.size());
		if (!s.data.empty())
			std::memcpy(&f[data_at[i]], s.data.data(), s.data.size());
	}
	return f;
}

std::optional<Container> read_container(std::span<const uint8_t> file, std::string &err)
{
	auto bad = [&err](std::string why) -> std::optional<Container> {
		err = std::move(why);
		return std::nullopt;
	};
	const uint8_t *f = file.data();
	const uint64_t size = file.size();
	if (size < kHeaderSize)
		return bad("truncated: " + std::to_string(size) + " bytes, the header alone is 40");
	if (get(f, 4) != kMagic)
		return bad("bad magic " + hex(get(f, 4)) + " (a program container starts with 0x00a1cd7c)");
	Container c;
	c.major = f[4];
	c.minor = f[5];
	c.compression = uint16_t(get(f + 6, 2));
	c.base = get(f + 16, 8);
	if (c.major != kMajor)
		return bad("container version " + std::to_string(c.major) + "." + std::to_string(c.minor) +
			   " is not 0.x");
	if (c.compression != kRelocatable)
		return bad("compression type " + std::to_string(c.compression) +
			   " is not 1 (the UMD relocates only type 1)");
	if (get(f + 8, 8) != size)
		return bad("header size " + std::to_string(get(f + 8, 8)) + " is not the file's " +
			   std::to_string(size) + " bytes");
	// A pointer field: base + an offset inside the file.
	auto offset_of = [&](uint64_t ptr, uint64_t len, const std::string &what, uint64_t &off) {
		off = ptr - c.base;
		if (ptr < c.base || off > size || len > size - off) {
			err = what + " at " + hex(ptr) + " (+" + std::to_string(len) + ") is outside the file";
			return false;
		}
		return true;
	};
	const uint64_t count = get(f + 24, 8);
	if (count > (size - kHeaderSize) / kSegmentEntrySize)
		return bad("segment count " + std::to_string(count) + " does not fit in the file");
	uint64_t table;
	if (!offset_of(get(f + 32, 8), count * kSegmentEntrySize, "the segment table", table))
		return std::nullopt;
	std::set<std::string> seen;
	for (uint64_t i = 0; i < count; i++) {
		const uint8_t *e = f + table + kSegmentEntrySize * i;
		const std::string which = "segment " + std::to_string(i);
		uint64_t name_off, data_off;
		if (!offset_of(get(e + 16, 8), 1, which + "'s name", name_off))
			return std::nullopt;
		const void *nul = std::memchr(f + name_off, 0, size - name_off);
		if (!nul)
			return bad(which + "'s name is not terminated");
		Segment s;
		s.name.assign(reinterpret_cast<const char *>(f + name_off),
			      static_cast<const uint8_t *>(nul) - (f + name_off));
		if (s.name.empty())
			return bad(which + " has an empty name");
		const uint64_t len = get(e, 8);
		if (!offset_of(get(e + 24, 8), len, which + " (" + s.name + ")'s data", data_off))
			return std::nullopt;
		s.split = get(e + 8, 8);
		if (s.split > len)
			return bad(s.name + ": split " + std::to_string(s.split) + " beyond its " + std::to_string(len) +
				   " bytes");
		if (!seen.insert(s.name).second)
			return bad("segment " + s.name + " appears twice");
		s.data.assign(f + data_off, f + data_off + len);
		c.segments.push_back(std::move(s));
	}
	return c;
}

} // namespace aic100::qpc
