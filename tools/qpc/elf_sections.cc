// SPDX-License-Identifier: GPL-2.0-or-later
// ELF64 LE section lookup and insertion.
#include "elf_sections.h"

#include <cstring>

#include <aic100/wire.h>

namespace aic100::qpc {

namespace {

using wire::load;
using wire::store;

constexpr size_t kEhdr = 64, kShdr = 64;
constexpr uint32_t kShtProgbits = 1, kShtStrtab = 3, kShtNobits = 8;

bool fits(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

struct Layout {
	uint64_t shoff;
	unsigned shnum, shstrndx;
	uint64_t str_off, str_size;
};

// Checks the header, the section header table and the name table.
std::optional<Layout> layout(std::span<const uint8_t> elf, std::string &err)
{
	const uint8_t *f = elf.data();
	if (elf.size() < kEhdr || std::memcmp(f, "\x7f" "ELF", 4) != 0) {
		err = "not an ELF file";
		return std::nullopt;
	}
	if (f[4] != 2 || f[5] != 1) {
		err = "not a little-endian ELF64 file";
		return std::nullopt;
	}
	Layout l{load<uint64_t>(elf, 40), load<uint16_t>(elf, 60), load<uint16_t>(elf, 62), 0, 0};
	if (l.shnum == 0 || load<uint16_t>(elf, 58) != kShdr || !fits(l.shoff, uint64_t(l.shnum) * kShdr, elf.size())) {
		err = "no sound section header table";
		return std::nullopt;
	}
	if (l.shstrndx == 0 || l.shstrndx >= l.shnum) {
		err = "no section name table";
		return std::nullopt;
	}
	const uint64_t s = l.shoff + uint64_t(l.shstrndx) * kShdr;
	l.str_off = load<uint64_t>(elf, s + 24);
	l.str_size = load<uint64_t>(elf, s + 32);
	if (load<uint32_t>(elf, s + 4) != kShtStrtab || !fits(l.str_off, l.str_size, elf.size())) {
		err = "the section name table is not a string table inside the file";
		return std::nullopt;
	}
	return l;
}

// The name of the section header at `h`, or nullopt when it is not a
// terminated string of the name table.
std::optional<std::string> name_of(std::span<const uint8_t> elf, const Layout &l, uint64_t h)
{
	const uint64_t n = load<uint32_t>(elf, h);
	if (n >= l.str_size)
		return std::nullopt;
	const char *s = reinterpret_cast<const char *>(elf.data() + l.str_off + n);
	const void *nul = std::memchr(s, 0, l.str_size - n);
	if (!nul)
		return std::nullopt;
	return std::string(s, static_cast<const char *>(nul));
}

} // namespace

std::optional<std::span<const uint8_t>> find_section(std::span<const uint8_t> elf, const std::string &name,
						     std::string &err)
{
	const auto l = layout(elf, err);
	if (!l)
		return std::nullopt;
	std::optional<std::span<const uint8_t>> found;
	for (unsigned i = 1; i < l->shnum; i++) {
		const uint64_t h = l->shoff + uint64_t(i) * kShdr;
		const auto n = name_of(elf, *l, h);
		if (!n) {
			err = "section " + std::to_string(i) + " has no name in the name table";
			return std::nullopt;
		}
		if (*n != name)
			continue;
		if (found) {
			err = "two sections named " + name;
			return std::nullopt;
		}
		const uint64_t off = load<uint64_t>(elf, h + 24), size = load<uint64_t>(elf, h + 32);
		if (load<uint32_t>(elf, h + 4) == kShtNobits) {
			err = "section " + name + " has no contents in the file";
			return std::nullopt;
		}
		if (!fits(off, size, elf.size())) {
			err = "section " + name + " is outside the file";
			return std::nullopt;
		}
		found = elf.subspan(off, size);
	}
	if (!found)
		err = "no section named " + name;
	return found;
}

std::optional<std::vector<uint8_t>> add_section(std::span<const uint8_t> elf, const std::string &name,
						std::span<const uint8_t> data, std::string &err)
{
	const auto l = layout(elf, err);
	if (!l)
		return std::nullopt;
	if (name.empty() || name.find('\0') != std::string::npos) {
		err = "a section name must be a non-empty string";
		return std::nullopt;
	}
	if (l->shnum >= 0xFF00) {
		err = "too many sections";
		return std::nullopt;
	}
	std::string why;
	if (find_section(elf, name, why)) {
		err = "the ELF already has a section named " + name;
		return std::nullopt;
	}
	if (why != "no section named " + name) {
		err = why;
		return std::nullopt;
	}
	std::vector<uint8_t> f(elf.begin(), elf.end());
	auto append = [&f](const uint8_t *p, size_t n) {
		while (f.size() % 8)
			f.push_back(0);
		const size_t at = f.size();
		f.insert(f.end(), p, p + n);
		return at;
	};
	const size_t data_at = append(data.data(), data.size());
	// The old names, then the new one.
	std::vector<uint8_t> names(elf.begin() + long(l->str_off), elf.begin() + long(l->str_off + l->str_size));
	if (names.empty() || names.back() != 0)
		names.push_back(0);
	const size_t name_idx = names.size();
	names.insert(names.end(), name.begin(), name.end());
	names.push_back(0);
	const size_t names_at = append(names.data(), names.size());
	const size_t shoff = append(elf.data() + l->shoff, uint64_t(l->shnum) * kShdr);
	f.resize(shoff + uint64_t(l->shnum + 1) * kShdr, 0);
	const uint64_t strh = shoff + uint64_t(l->shstrndx) * kShdr;
	store<uint64_t>(f.data(), strh + 24, names_at);
	store<uint64_t>(f.data(), strh + 32, names.size());
	const uint64_t h = shoff + uint64_t(l->shnum) * kShdr;
	store<uint32_t>(f.data(), h, uint32_t(name_idx));
	store<uint32_t>(f.data(), h + 4, kShtProgbits);
	store<uint64_t>(f.data(), h + 24, data_at);
	store<uint64_t>(f.data(), h + 32, data.size());
	store<uint64_t>(f.data(), h + 48, 8); // sh_addralign
	store<uint64_t>(f.data(), 40, shoff);
	store<uint16_t>(f.data(), 60, uint16_t(l->shnum + 1));
	return f;
}

} // namespace aic100::qpc
