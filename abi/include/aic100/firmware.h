// SPDX-License-Identifier: GPL-2.0-or-later
// The card's firmware image format (docs/firmware.md). Every image the host
// hands the card, sbl.bin over BHI and fw<id>.bin over Sahara, starts with a
// 128-byte header whose SHA-256 covers the header (digest field zeroed) and
// the payload. The PBL and the SBL reject anything that does not check out.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace aic100::fw {

inline constexpr uint32_t kMagic = 0x46434941; // "AICF"
inline constexpr uint16_t kFormatVersion = 1;
inline constexpr size_t kHeaderSize = 128;
inline constexpr uint32_t kSblImageId = 0;
// Largest SBL the PBL accepts over BHI (the PBL copies it into on-chip RAM).
inline constexpr uint64_t kMaxSblSize = 2u << 20;
// Largest runtime image the SBL accepts over Sahara.
inline constexpr uint64_t kMaxRuntimeSize = 64u << 20;
// Longest SBL manifest (image ids to fetch over Sahara).
inline constexpr uint32_t kMaxManifestImages = 16;

struct __attribute__((packed)) Header {
	uint32_t magic;          // kMagic
	uint16_t format_version; // kFormatVersion
	uint16_t header_size;    // kHeaderSize
	uint32_t image_id;       // 0 = SBL, else the Sahara image id
	uint32_t flags;          // 0
	uint64_t payload_size;   // bytes following the header
	uint16_t version[4];     // major, minor, patch, build
	char name[24];           // NUL-padded ASCII, e.g. "qsm"
	uint8_t sha256[32];      // over header (this field zeroed) + payload
	uint8_t reserved[40];    // 0
};
static_assert(sizeof(Header) == kHeaderSize);

// Why an image was refused. The numeric values are what the PBL reports in
// BHI ERRCODE and the SBL in its boot log.
enum class Error : uint32_t {
	None = 0,
	BadHeader = 1,  // magic, format version, header size, flags, reserved, id or name
	BadDigest = 2,  // SHA-256 mismatch
	Truncated = 3,  // fewer bytes than header + payload_size
	TooLarge = 4,   // more than the loader accepts, or trailing bytes
	DmaFault = 5,   // the image could not be read from host memory
	WrongImage = 6, // a valid image, but not the one that was asked for
};

const char *error_name(Error e);

// Checks only the header fields (no digest, no size against data).
// `max_total` bounds header + payload.
Error check_header(const Header &h, uint64_t max_total);

// Full check of an image held in memory: header, exact length, digest.
Error verify(std::span<const uint8_t> image, uint64_t max_total);

// SBL payload: le32 count, then count le32 image ids, in load order.
// Empty result plus false when malformed.
bool parse_manifest(std::span<const uint8_t> payload, std::vector<uint32_t> &ids);

// Builds a complete image (used by tools/ and tests).
std::vector<uint8_t> build(uint32_t image_id, const std::string &name, const std::array<uint16_t, 4> &version,
			   std::span<const uint8_t> payload);

} // namespace aic100::fw
