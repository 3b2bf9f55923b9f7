// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-fwbuild: writes the default firmware set of the virtual card
// (sbl.bin, fw1.bin, fw2.bin; docs/firmware.md; or an AIC200's set,
// docs/aic200.md) or inspects an image.
#include <aic100/aic200.h>
#include <aic100/firmware.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fw = aic100::fw;

namespace {

struct ImageSpec {
	uint32_t id;
	const char *name;
	const char *file;
	size_t payload_size; // runtime images only; the SBL's payload is the manifest
	std::array<uint16_t, 4> version;
};

void usage(FILE *out)
{
	std::fprintf(out,
		     "usage: aic100-fwbuild --out DIR [--family aic100|aic200] [--sbl-version A.B.C.D]\n"
		     "                      [--fw1-version A.B.C.D] [--fw2-version A.B.C.D]\n"
		     "       aic100-fwbuild --inspect FILE\n"
		     "Writes DIR/sbl.bin (image 0, manifest: 1 2), DIR/fw1.bin (\"qsm\", 768 KiB)\n"
		     "and DIR/fw2.bin (\"nsp\", 256 KiB); or prints FILE's header and checks it\n"
		     "(exit status 1 when it would be refused). With --family aic200 the set is an\n"
		     "AIC200's, for /lib/firmware/qcom/aic200: sbl.bin (manifest: 43 12),\n"
		     "aic200-hlos.elf (image 43, \"hlos\", 768 KiB) and aic200-nsp.bin (image 12,\n"
		     "\"nsp\", 256 KiB); --fw1-version and --fw2-version then version those two.\n");
}

std::optional<std::array<uint16_t, 4>> parse_version(const char *s)
{
	std::array<uint16_t, 4> v{};
	for (size_t i = 0; i < v.size(); i++) {
		char *end;
		errno = 0;
		const unsigned long n = std::strtoul(s, &end, 10);
		if (end == s || errno || n > 0xffff || *s == '-' || *s == '+')
			return std::nullopt;
		v[i] = uint16_t(n);
		if (i + 1 < v.size() ? *end != '.' : *end != '\0')
			return std::nullopt;
		s = end + 1;
	}
	return v;
}

// splitmix64 seeded by the image id: stable across hosts and compilers, so
// every build produces the same bytes and the same digests.
std::vector<uint8_t> filler(uint32_t id, size_t size)
{
	std::vector<uint8_t> out(size);
	uint64_t state = id;
	for (size_t i = 0; i < size; i += 8) {
		uint64_t z = (state += 0x9e3779b97f4a7c15ull);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		for (size_t j = 0; j < 8 && i + j < size; j++)
			out[i + j] = uint8_t(z >> (8 * j));
	}
	return out;
}

std::vector<uint8_t> manifest(const std::vector<uint32_t> &ids)
{
	std::vector<uint8_t> out;
	auto put = [&out](uint32_t v) {
		for (int i = 0; i < 4; i++)
			out.push_back(uint8_t(v >> (8 * i)));
	};
	put(uint32_t(ids.size()));
	for (uint32_t id : ids)
		put(id);
	return out;
}

bool read_file(const std::string &path, std::vector<uint8_t> &data)
{
	std::ifstream in(path, std::ios::binary);
	if (!in)
		return false;
	data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
	return !in.bad();
}

// Leaves an unchanged file alone (its mtime too) and replaces a changed one
// through a rename, so that a reader never sees half an image.
bool write_file(const std::string &path, const std::vector<uint8_t> &data)
{
	std::vector<uint8_t> old;
	if (read_file(path, old) && old == data)
		return true;
	const std::string tmp = path + ".tmp";
	{
		std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
		out.write(reinterpret_cast<const char *>(data.data()), std::streamsize(data.size()));
		if (!out.flush()) {
			std::fprintf(stderr, "aic100-fwbuild: cannot write %s\n", tmp.c_str());
			return false;
		}
	}
	if (std::rename(tmp.c_str(), path.c_str()) != 0) {
		std::fprintf(stderr, "aic100-fwbuild: cannot rename %s: %s\n", tmp.c_str(), std::strerror(errno));
		return false;
	}
	return true;
}

std::string hex(const uint8_t *p, size_t n)
{
	std::string s;
	char b[3];
	for (size_t i = 0; i < n; i++) {
		std::snprintf(b, sizeof(b), "%02x", p[i]);
		s += b;
	}
	return s;
}

int inspect(const std::string &path)
{
	std::vector<uint8_t> data;
	if (!read_file(path, data)) {
		std::fprintf(stderr, "aic100-fwbuild: cannot read %s\n", path.c_str());
		return 2;
	}
	std::printf("file:           %s (%zu bytes)\n", path.c_str(), data.size());
	if (data.size() < fw::kHeaderSize) {
		std::printf("verify:         %s (shorter than the %zu-byte header)\n",
			    fw::error_name(fw::Error::Truncated), fw::kHeaderSize);
		return 1;
	}
	fw::Header h;
	std::memcpy(&h, data.data(), sizeof(h));
	const std::string name(h.name, strnlen(h.name, sizeof(h.name)));
	std::printf("magic:          0x%08x%s\n", h.magic, h.magic == fw::kMagic ? " (AICF)" : "");
	std::printf("format version: %u\n", h.format_version);
	std::printf("header size:    %u\n", h.header_size);
	std::printf("image id:       %u%s\n", h.image_id, h.image_id == fw::kSblImageId ? " (SBL)" : "");
	std::printf("flags:          0x%08x\n", h.flags);
	std::printf("payload size:   %llu\n", static_cast<unsigned long long>(h.payload_size));
	std::printf("version:        %u.%u.%u.%u\n", h.version[0], h.version[1], h.version[2], h.version[3]);
	std::printf("name:           \"%s\"\n", name.c_str());
	std::printf("sha256:         %s\n", hex(h.sha256, sizeof(h.sha256)).c_str());

	// Judged by the loader that would receive it: the PBL for the SBL, the
	// SBL for everything else.
	const bool sbl = h.image_id == fw::kSblImageId;
	const fw::Error e = fw::verify(data, sbl ? fw::kMaxSblSize : fw::kMaxRuntimeSize);
	if (e == fw::Error::None && sbl) {
		std::vector<uint32_t> ids;
		const std::span<const uint8_t> payload(data.data() + fw::kHeaderSize, data.size() - fw::kHeaderSize);
		if (!fw::parse_manifest(payload, ids)) {
			std::printf("manifest:       malformed\n");
			return 1;
		}
		std::printf("manifest:      ");
		for (uint32_t id : ids)
			std::printf(" %u", id);
		std::printf("%s\n", ids.empty() ? " (empty)" : "");
	}
	std::printf("verify:         %s\n", fw::error_name(e));
	return e == fw::Error::None ? 0 : 1;
}

int build_set(const std::string &dir, const ImageSpec &sbl, const std::vector<ImageSpec> &runtime)
{
	std::error_code ec;
	std::filesystem::create_directories(dir, ec);
	if (ec) {
		std::fprintf(stderr, "aic100-fwbuild: cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
		return 1;
	}
	std::vector<uint32_t> ids;
	for (const ImageSpec &s : runtime) {
		const auto image = fw::build(s.id, s.name, s.version, filler(s.id, s.payload_size));
		if (!write_file(dir + "/" + s.file, image))
			return 1;
		std::printf("%s/%s: image %u \"%s\", %zu bytes\n", dir.c_str(), s.file, s.id, s.name, image.size());
		ids.push_back(s.id);
	}
	const auto image = fw::build(sbl.id, sbl.name, sbl.version, manifest(ids));
	if (!write_file(dir + "/" + sbl.file, image))
		return 1;
	std::printf("%s/%s: image %u \"%s\", %zu bytes\n", dir.c_str(), sbl.file, sbl.id, sbl.name, image.size());
	return 0;
}

// The AIC200's set: the same two runtime images, under the ids and file
// names of upstream's AIC200 image table. False for an unknown family.
bool use_family(const std::string &family, std::vector<ImageSpec> &runtime)
{
	if (family == "aic100")
		return true;
	if (family != "aic200")
		return false;
	const uint32_t ids[] = {aic100::aic200::kHlosImageId, aic100::aic200::kNspImageId};
	const char *names[] = {"hlos", "nsp"};
	for (size_t i = 0; i < runtime.size(); i++) {
		runtime[i].id = ids[i];
		runtime[i].name = names[i];
		// The table's names are string literals: NUL-terminated.
		runtime[i].file = aic100::aic200::sahara_image_file(ids[i]).data();
	}
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	ImageSpec sbl{fw::kSblImageId, "sbl", "sbl.bin", 0, {1, 0, 0, 1}};
	// 768 KiB takes two 512 KiB Sahara reads; 256 KiB takes one short read.
	std::vector<ImageSpec> runtime = {
		{1, "qsm", "fw1.bin", 768u << 10, {1, 0, 0, 2}},
		{2, "nsp", "fw2.bin", 256u << 10, {1, 0, 0, 3}},
	};
	std::string out, inspect_path;

	for (int i = 1; i < argc; i++) {
		const std::string arg = argv[i];
		if (arg == "-h" || arg == "--help") {
			usage(stdout);
			return 0;
		}
		if (i + 1 >= argc) {
			usage(stderr);
			return 2;
		}
		const char *val = argv[++i];
		ImageSpec *target = nullptr;
		if (arg == "--out") {
			out = val;
		} else if (arg == "--inspect") {
			inspect_path = val;
		} else if (arg == "--family") {
			if (!use_family(val, runtime)) {
				std::fprintf(stderr, "aic100-fwbuild: --family %s: want aic100 or aic200\n", val);
				return 2;
			}
		} else if (arg == "--sbl-version") {
			target = &sbl;
		} else if (arg == "--fw1-version") {
			target = &runtime[0];
		} else if (arg == "--fw2-version") {
			target = &runtime[1];
		} else {
			usage(stderr);
			return 2;
		}
		if (target) {
			const auto v = parse_version(val);
			if (!v) {
				std::fprintf(stderr, "aic100-fwbuild: %s: want A.B.C.D, each 0..65535\n", val);
				return 2;
			}
			target->version = *v;
		}
	}
	if (out.empty() == inspect_path.empty()) {
		usage(stderr);
		return 2;
	}
	if (!inspect_path.empty())
		return inspect(inspect_path);
	return build_set(out, sbl, runtime);
}
