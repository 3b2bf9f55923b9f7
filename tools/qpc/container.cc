// SPDX-License-Identifier: GPL-2.0-or-later
// Writes and reads program containers (docs/qpc.md, "Container").
#include "container.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <set>

#include <aic100/wire.h>

namespace aic100::qpc {

namespace {

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

// The pointer fields of a container: base + an offset inside the file.
struct Pointers {
	std::span<const uint8_t> file;
	uint64_t base;
	std::string &err;

	// The offset `ptr` points to, when [ptr, +len) lies in the file.
	bool offset_of(uint64_t ptr, uint64_t len, const std::string &what, uint64_t &off) const
	{
		off = ptr - base;
		if (ptr < base || off > file.size() || len > file.size() - off) {
			err = what + " at " + hex(ptr) + " (+" + std::to_string(len) + ") is outside the file";
			return false;
		}
		return true;
	}
};

// Segment `i` of the table, its name and data checked to lie in the file;
// nullopt with the reason in ptr.err.
std::optional<Segment> read_segment(const Pointers &ptr, const SegmentEntry &e, uint64_t i)
{
	const std::string which = "segment " + std::to_string(i);
	uint64_t name_off, data_off;
	if (!ptr.offset_of(e.name, 1, which + "'s name", name_off))
		return std::nullopt;
	const uint8_t *name = ptr.file.data() + name_off;
	const void *nul = std::memchr(name, 0, ptr.file.size() - name_off);
	if (!nul) {
		ptr.err = which + "'s name is not terminated";
		return std::nullopt;
	}
	Segment s;
	s.name.assign(reinterpret_cast<const char *>(name), static_cast<const uint8_t *>(nul) - name);
	if (s.name.empty()) {
		ptr.err = which + " has an empty name";
		return std::nullopt;
	}
	const uint64_t len = e.size;
	if (!ptr.offset_of(e.data, len, which + " (" + s.name + ")'s data", data_off))
		return std::nullopt;
	s.split = e.split;
	if (s.split > len) {
		ptr.err = s.name + ": split " + std::to_string(s.split) + " beyond its " + std::to_string(len) + " bytes";
		return std::nullopt;
	}
	const auto data = ptr.file.subspan(data_off, len);
	s.data.assign(data.begin(), data.end());
	return s;
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
	const Header h{kMagic, kMajor, kMinor, kRelocatable, f.size(), 0, segments.size(), table};
	wire::store(f.data(), 0, h);
	for (size_t i = 0; i < segments.size(); i++) {
		const Segment &s = segments[i];
		const SegmentEntry e{s.data.size(), s.split, name_at[i], data_at[i]};
		wire::store(f.data(), table + kSegmentEntrySize * i, e);
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
	const uint64_t size = file.size();
	if (size < kHeaderSize)
		return bad("truncated: " + std::to_string(size) + " bytes, the header alone is 40");
	const auto h = wire::load<Header>(file);
	if (h.magic != kMagic)
		return bad("bad magic " + hex(h.magic) + " (a program container starts with 0x00a1cd7c)");
	Container c;
	c.major = h.major;
	c.minor = h.minor;
	c.compression = h.compression;
	c.base = h.base;
	if (c.major != kMajor)
		return bad("container version " + std::to_string(c.major) + "." + std::to_string(c.minor) +
			   " is not 0.x");
	if (c.compression != kRelocatable)
		return bad("compression type " + std::to_string(c.compression) +
			   " is not 1 (the UMD relocates only type 1)");
	if (h.size != size)
		return bad("header size " + std::to_string(h.size) + " is not the file's " + std::to_string(size) +
			   " bytes");
	const uint64_t count = h.segment_count;
	if (count > (size - kHeaderSize) / kSegmentEntrySize)
		return bad("segment count " + std::to_string(count) + " does not fit in the file");
	const Pointers ptr{file, c.base, err};
	uint64_t table;
	if (!ptr.offset_of(h.segment_table, count * kSegmentEntrySize, "the segment table", table))
		return std::nullopt;
	std::set<std::string> seen;
	for (uint64_t i = 0; i < count; i++) {
		auto s = read_segment(ptr, wire::load<SegmentEntry>(file, table + kSegmentEntrySize * i), i);
		if (!s)
			return std::nullopt;
		if (!seen.insert(s->name).second)
			return bad("segment " + s->name + " appears twice");
		c.segments.push_back(std::move(*s));
	}
	return c;
}

} // namespace aic100::qpc
