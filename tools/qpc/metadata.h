// SPDX-License-Identifier: GPL-2.0-or-later
// The "metadata" section of a network ELF: an 8-byte header (u16 major 1,
// u16 minor 0, u32 0) then a FlatBuffer of schema/aic_metadata.fbs
// (aic100/qpc.h; docs/qpc.md, "metadata").
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <aic100/qpc.h>

#include "aic_metadata_generated.h"

namespace aic100::qpc {

// "AicMetadataFlat_Metadata->field" names of the requiredFields list that
// this reader understands: every field of our schema.
const std::vector<std::string> &known_required_fields();

// The FlatBuffer of `m`, every scalar written, defaults included: the
// "metadata_fb" section.
std::vector<uint8_t> encode_flatbuffer(const meta::MetadataT &m);
// The "metadata" section: the 8-byte header, then encode_flatbuffer(m).
std::vector<uint8_t> encode_metadata(const meta::MetadataT &m);

// Verifies and unpacks a section (with or without its 8-byte header, as the
// UMD accepts both); nullptr with the reason in `err` when the FlatBuffer
// does not verify, its major version is not 1, or it requires a field this
// reader does not know.
std::unique_ptr<meta::MetadataT> decode_metadata(std::span<const uint8_t> section, std::string &err);

} // namespace aic100::qpc
