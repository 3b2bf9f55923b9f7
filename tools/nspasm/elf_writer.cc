// SPDX-License-Identifier: GPL-2.0-or-later
// Writes workload ELFs in the format of docs/nsp.md.
#include "nspasm.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace aic100::nspasm {

namespace {

void put(std::vector<uint8_t> &f, size_t off, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		f[off + i] = uint8_t(v >> (8 * i));
}

size_t append(std::vector<uint8_t> &f, const void *p, size_t n, size_t align)
{
	while (f.size() % align)
		f.push_back(0);
	const size_t off = f.size();
	if (n)
		f.insert(f.end(), static_cast<const uint8_t *>(p), static_cast<const uint8_t *>(p) + n);
	return off;
}

constexpr size_t kEhdr = 64, kPhdr = 56, kShdr = 64;

// Each segment's data, and its PT_LOAD in the table after the ELF header.
void append_segments(std::vector<uint8_t> &f, std::span<const nsp::Segment> segments)
{
	for (size_t i = 0; i < segments.size(); i++) {
		const nsp::Segment &s = segments[i];
		const size_t off = append(f, s.data.data(), s.data.size(), 16);
		const size_t h = kEhdr + kPhdr * i;
		put(f, h, 1, 4);                  // PT_LOAD
		put(f, h + 4, 6, 4);              // PF_R | PF_W: window data
		put(f, h + 8, off, 8);
		put(f, h + 16, s.offset, 8);      // p_vaddr: window offset
		put(f, h + 24, s.offset, 8);      // p_paddr
		put(f, h + 32, s.data.size(), 8); // p_filesz
		put(f, h + 40, std::max<uint64_t>(s.memsz, s.data.size()), 8);
		put(f, h + 48, 1, 8);
	}
}

// The ELF header: ELF64 LE, EM_QDSP6, ET_EXEC, the tables' places.
void put_header(std::vector<uint8_t> &f, uint32_t entry, size_t phnum, size_t shoff, unsigned shnum)
{
	std::memcpy(f.data(), "\x7f" "ELF", 4);
	f[4] = 2; // ELFCLASS64
	f[5] = 1; // ELFDATA2LSB
	f[6] = 1; // EV_CURRENT
	put(f, 16, 2, 2); // ET_EXEC
	put(f, 18, nsp::kMachine, 2);
	put(f, 20, 1, 4);
	put(f, 24, entry, 8); // informative: the meta's entry is what counts
	put(f, 32, phnum ? kEhdr : 0, 8);
	put(f, 40, shoff, 8);
	put(f, 52, kEhdr, 2);
	put(f, 54, kPhdr, 2);
	put(f, 56, phnum, 2);
	put(f, 58, kShdr, 2);
	put(f, 60, shnum, 2);
	put(f, 62, 3, 2); // .shstrtab
}

} // namespace

std::optional<std::vector<uint8_t>> write_elf(const nsp::Meta &meta, std::span<const nsp::Instr> code,
					      std::span<const nsp::Segment> segments, std::string &err)
{
	return write_elf(meta, code, segments, {}, err);
}

std::optional<std::vector<uint8_t>> write_elf(const nsp::Meta &meta, std::span<const nsp::Instr> code,
					      std::span<const nsp::Segment> segments,
					      std::span<const nsp::PackedRegion> packed, std::string &err)
{
	if (meta.name.size() > nsp::kNameSize) {
		err = "name \"" + meta.name + "\" is longer than 24 bytes";
		return std::nullopt;
	}
	if (segments.size() > 0xFFFF) {
		err = "too many segments";
		return std::nullopt;
	}
	std::vector<uint8_t> f(kEhdr + kPhdr * segments.size());

	const auto m = nsp::encode_meta(meta);
	const size_t meta_off = append(f, m.data(), m.size(), 8);
	std::vector<uint8_t> text(code.size() * sizeof(nsp::Instr));
	for (size_t i = 0; i < code.size(); i++)
		nsp::encode(code[i], &text[i * sizeof(nsp::Instr)]);
	const size_t text_off = append(f, text.data(), text.size(), 16);
	std::vector<uint8_t> regions;
	for (const nsp::PackedRegion &r : packed) {
		const auto e = nsp::encode_packed(r);
		regions.insert(regions.end(), e.begin(), e.end());
	}
	const size_t packed_off = append(f, regions.data(), regions.size(), 8);
	append_segments(f, segments);
	// .aic.packed, when there are regions, is the fifth section; its name
	// ends the name table only then, so that other ELFs stay as they were.
	static const char kNames[] = "\0.aic.meta\0.aic.text\0.shstrtab\0.aic.packed";
	const unsigned sections = packed.empty() ? 4 : 5;
	const size_t names_size = packed.empty() ? sizeof("\0.aic.meta\0.aic.text\0.shstrtab") : sizeof(kNames);
	const size_t str_off = append(f, kNames, names_size, 1);
	const size_t shoff = append(f, nullptr, 0, 8);
	f.resize(shoff + sections * kShdr);
	auto section = [&](int i, uint32_t name, uint32_t type, uint64_t flags, uint64_t off, uint64_t size,
			   uint64_t align, uint64_t entsize) {
		const size_t h = shoff + kShdr * i;
		put(f, h, name, 4);
		put(f, h + 4, type, 4);
		put(f, h + 8, flags, 8);
		put(f, h + 24, off, 8);
		put(f, h + 32, size, 8);
		put(f, h + 48, align, 8);
		put(f, h + 56, entsize, 8);
	};
	section(1, 1, 1 /* PROGBITS */, 0, meta_off, m.size(), 8, 0);
	section(2, 11, 1, 0x6 /* ALLOC|EXECINSTR */, text_off, text.size(), 16, sizeof(nsp::Instr));
	section(3, 21, 3 /* STRTAB */, 0, str_off, names_size, 1, 0);
	if (!packed.empty())
		section(4, 31, 1, 0, packed_off, regions.size(), 8, nsp::kPackedEntrySize);

	put_header(f, meta.entry, segments.size(), shoff, sections);

	std::string why;
	if (!nsp::parse(f, why)) {
		err = "the workload would not load: " + why;
		return std::nullopt;
	}
	return f;
}

std::optional<std::vector<uint8_t>> write_elf(const Program &p, std::string &err)
{
	return write_elf(p.meta, p.code, p.segments, p.packed, err);
}

std::optional<std::vector<uint8_t>> assemble_elf(std::string_view source, const Options &opt, std::string &err)
{
	auto p = assemble(source, opt, err);
	if (!p)
		return std::nullopt;
	auto elf = write_elf(*p, err);
	if (!elf)
		err = opt.filename + ": " + err;
	return elf;
}

std::string listing(std::span<const nsp::Instr> code)
{
	std::string out;
	char idx[32];
	for (size_t i = 0; i < code.size(); i++) {
		std::snprintf(idx, sizeof(idx), "%5zu: ", i);
		out += idx + nsp::disassemble(code[i]) + "\n";
	}
	return out;
}

} // namespace aic100::nspasm
