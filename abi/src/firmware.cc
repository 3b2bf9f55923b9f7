// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/firmware.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include "aic100/sha256.h"

namespace aic100::fw {

static_assert(std::endian::native == std::endian::little, "the image header is little-endian");

namespace {

constexpr size_t kDigestOffset = offsetof(Header, sha256);

// The name must be printable ASCII, non-empty, NUL-terminated and NUL-padded,
// so that the boot log can print it as is.
bool name_ok(const char (&name)[24])
{
	const auto *end = std::find(std::begin(name), std::end(name), '\0');
	if (end == std::begin(name) || end == std::end(name))
		return false;
	if (!std::all_of(std::begin(name), end, [](char c) { return c >= 0x20 && c < 0x7f; }))
		return false;
	return std::all_of(end, std::end(name), [](char c) { return c == '\0'; });
}

Sha256Digest image_digest(std::span<const uint8_t> image)
{
	static const uint8_t zeros[sizeof(Header::sha256)] = {};
	Sha256 s;
	s.update(image.data(), kDigestOffset);
	s.update(zeros, sizeof(zeros));
	s.update(image.subspan(kDigestOffset + sizeof(zeros)));
	return s.finish();
}

uint32_t load_le32(const uint8_t *p)
{
	return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

} // namespace

const char *error_name(Error e)
{
	switch (e) {
	case Error::None:
		return "ok";
	case Error::BadHeader:
		return "bad header";
	case Error::BadDigest:
		return "bad digest";
	case Error::Truncated:
		return "truncated";
	case Error::TooLarge:
		return "too large";
	case Error::DmaFault:
		return "DMA fault";
	case Error::WrongImage:
		return "wrong image";
	}
	return "unknown error";
}

Error check_header(const Header &h, uint64_t max_total)
{
	if (h.magic != kMagic || h.format_version != kFormatVersion || h.header_size != kHeaderSize ||
	    h.flags != 0)
		return Error::BadHeader;
	if (!std::all_of(std::begin(h.reserved), std::end(h.reserved), [](uint8_t b) { return b == 0; }))
		return Error::BadHeader;
	if (!name_ok(h.name))
		return Error::BadHeader;
	// Written so that a payload_size near 2^64 cannot wrap the sum.
	if (max_total < kHeaderSize || h.payload_size > max_total - kHeaderSize)
		return Error::TooLarge;
	return Error::None;
}

Error verify(std::span<const uint8_t> image, uint64_t max_total)
{
	if (image.size() < kHeaderSize)
		return Error::Truncated;
	Header h;
	std::memcpy(&h, image.data(), sizeof(h));
	if (const Error e = check_header(h, max_total); e != Error::None)
		return e;
	const uint64_t want = kHeaderSize + h.payload_size; // bounded by check_header
	if (image.size() < want)
		return Error::Truncated;
	if (image.size() > want)
		return Error::TooLarge;
	const Sha256Digest d = image_digest(image);
	if (!std::equal(d.begin(), d.end(), std::begin(h.sha256)))
		return Error::BadDigest;
	return Error::None;
}

bool parse_manifest(std::span<const uint8_t> payload, std::vector<uint32_t> &ids)
{
	ids.clear();
	if (payload.size() < 4)
		return false;
	const uint32_t count = load_le32(payload.data());
	if (count > kMaxManifestImages || payload.size() != 4 + size_t(count) * 4)
		return false;
	std::vector<uint32_t> out;
	for (uint32_t i = 0; i < count; i++) {
		const uint32_t id = load_le32(payload.data() + 4 + 4 * i);
		// The SBL is already running and never fetches itself; a repeated id
		// would make the SBL load an image twice.
		if (id == kSblImageId || std::find(out.begin(), out.end(), id) != out.end())
			return false;
		out.push_back(id);
	}
	ids = std::move(out);
	return true;
}

std::vector<uint8_t> build(uint32_t image_id, const std::string &name, const std::array<uint16_t, 4> &version,
			   std::span<const uint8_t> payload)
{
	Header h{};
	if (name.size() >= sizeof(h.name))
		throw std::invalid_argument("firmware image name longer than 23 characters");
	h.magic = kMagic;
	h.format_version = kFormatVersion;
	h.header_size = kHeaderSize;
	h.image_id = image_id;
	h.payload_size = payload.size();
	std::memcpy(h.version, version.data(), sizeof(h.version));
	std::memcpy(h.name, name.data(), name.size());
	// Never emit an image that the loaders would refuse for its header.
	if (!name_ok(h.name))
		throw std::invalid_argument("firmware image name must be non-empty printable ASCII");

	std::vector<uint8_t> image(kHeaderSize + payload.size());
	std::memcpy(image.data(), &h, sizeof(h));
	std::copy(payload.begin(), payload.end(), image.begin() + kHeaderSize);
	const Sha256Digest d = image_digest(image);
	std::copy(d.begin(), d.end(), image.begin() + kDigestOffset);
	return image;
}

} // namespace aic100::fw
