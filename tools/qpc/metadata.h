// SPDX-License-Identifier: GPL-2.0-or-later
// The "metadata" section of a network ELF: an 8-byte header (u16 major 1,
// u16 minor 0, u32 0) then a FlatBuffer of schema/aic_metadata.fbs
// (docs/qpc.md, "metadata").
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "aic_metadata_generated.h"

namespace aic100::qpc {

constexpr char kMetadataSection[] = "metadata";
constexpr uint16_t kMetadataMajor = 1;
constexpr uint16_t kMetadataMinor = 0;
constexpr size_t kMetadataHeaderSize = 8;

// Semaphore opcodes (SemaphoreOp.semOp) and their placement.
enum SemOpcode : uint8_t { kSemNop = 0, kSemInit = 1, kSemInc = 2, kSemDec = 3, kSemWaitEq = 4, kSemWaitGe = 5, kSemP = 6 };
constexpr uint8_t kSemPost = 0, kSemPre = 1;
// DmaRequest.devAddrSpace and .inOut.
constexpr uint8_t kAddrSpaceMulticast = 0, kAddrSpaceDdr = 1;
constexpr uint8_t kDmaIn = 0, kDmaOut = 1;
constexpr uint16_t kPortHostInput = 100, kPortHostOutput = 101;

// "AicMetadataFlat_Metadata->field" names of the requiredFields list that
// this reader understands: every field of our schema.
const std::vector<std::string> &known_required_fields();

// The section's bytes for `m` (every scalar written, defaults included).
std::vector<uint8_t> encode_metadata(const meta::MetadataT &m);

// Verifies and unpacks a section (with or without its 8-byte header, as the
// UMD accepts both); nullptr with the reason in `err` when the FlatBuffer
// does not verify, its major version is not 1, or it requires a field this
// reader does not know.
std::unique_ptr<meta::MetadataT> decode_metadata(std::span<const uint8_t> section, std::string &err);

} // namespace aic100::qpc
