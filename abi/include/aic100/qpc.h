// SPDX-License-Identifier: GPL-2.0-or-later
// The program container (QPC, "programqpc.bin") that user space hands to the
// UMD, in the layout the open UMD reads (docs/qpc.md): the header and the
// segment table, the segment names, constantsdesc.bin, the network ELF's
// "metadata" section header and the values its fields take. The schemas of
// the metadata (FlatBuffers) and of the network descriptor (protobuf) are
// tools/qpc/schema; the writer and the reader are tools/qpc.
//
// Little-endian; every "pointer" field holds the container's `base` plus a
// file offset.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "aic100/nnc.h"
#include "aic100/sem.h"

namespace aic100::qpc {

static_assert(std::endian::native == std::endian::little, "program containers are little-endian");

// ---- the container ----------------------------------------------------------

inline constexpr uint32_t kMagic = 0x00A1CD7C;
inline constexpr uint8_t kMajor = 0;
inline constexpr uint8_t kMinor = 1;
// Header::compression 1: the pointer fields are base-relative and may be
// relocated (the UMD copies the file and fixes them up; it refuses 0).
inline constexpr uint16_t kRelocatable = 1;

struct __attribute__((packed)) Header {
	uint32_t magic;
	uint8_t major;
	uint8_t minor;
	uint16_t compression;
	uint64_t size; // the file's length
	uint64_t base;
	uint64_t segment_count;
	uint64_t segment_table; // pointer to segment_count SegmentEntry
};
static_assert(sizeof(Header) == 40);
inline constexpr size_t kHeaderSize = sizeof(Header);

struct __attribute__((packed)) SegmentEntry {
	uint64_t size;
	// constants.bin: the length of its static part (the rest is the
	// dynamic part); 0 in every other segment.
	uint64_t split;
	uint64_t name; // pointer to a NUL-terminated string
	uint64_t data; // pointer
};
static_assert(sizeof(SegmentEntry) == 32);
inline constexpr size_t kSegmentEntrySize = sizeof(SegmentEntry);

// The segment names the UMD looks for.
inline constexpr char kNetworkElf[] = "network.elf";
inline constexpr char kNetworkDesc[] = "networkdesc.bin";
inline constexpr char kConstants[] = "constants.bin";
inline constexpr char kConstantsDesc[] = "constantsdesc.bin";

// constantsdesc.bin: the descriptor that LOAD_CONSTANTS_EX carries
// (aic100/nnc.h); ECC flags 0 or 1, padding 0.
using ConstantsDescriptor = nnc::cmd::ConstantsDescriptor;
inline constexpr size_t kConstantsDescriptorSize = sizeof(ConstantsDescriptor);

// ---- network.elf's "metadata" section ---------------------------------------

// An 8-byte header (u16 major, u16 minor, u32 0), then a FlatBuffer of
// schema/aic_metadata.fbs.
inline constexpr char kMetadataSection[] = "metadata";
inline constexpr uint16_t kMetadataMajor = 1;
inline constexpr uint16_t kMetadataMinor = 0;
inline constexpr size_t kMetadataHeaderSize = 8;
// The same FlatBuffer without the header. The compiler of firmware 1.15
// and later writes "metadata" alone; the UMD's readers look for this one
// first, and its qaic-device-partition reads "metadata" only in the older
// raw layout (docs/umd-compat.md, section 4). So a container carries both.
inline constexpr char kMetadataFbSection[] = "metadata_fb";

// SemaphoreOp.semOp is a sem::Op (at most WaitGt0, the UMD's "P");
// .preOrPost places it before or after the transfer.
inline constexpr uint8_t kSemPost = 0, kSemPre = 1;
// What one DmaRequest carries at most (a DBC request element's room).
inline constexpr size_t kMaxSemaphoreOps = 4, kMaxDoorbellOps = 1;
// DmaRequest.devAddrSpace, .inOut and the ports of the host's tensors.
inline constexpr uint8_t kAddrSpaceMulticast = 0, kAddrSpaceDdr = 1;
inline constexpr uint8_t kDmaIn = 0, kDmaOut = 1;
inline constexpr uint16_t kPortHostInput = 100, kPortHostOutput = 101;
// ThreadDescriptor.typeMask bits.
inline constexpr uint8_t kThreadHmx = 1, kThreadHvx = 2;
// Metadata.exitDoorbellOffset of a program without one.
inline constexpr uint64_t kNoExitDoorbell = ~uint64_t(0);
// Metadata.execContextMajorVersion and .hwVersion* (AIC100).
inline constexpr uint16_t kExecContextMajor = 4;
inline constexpr uint8_t kHwVersionMajor = 2, kHwVersionMinor = 0;

// ---- networkdesc.bin --------------------------------------------------------

// The network descriptor's version (the UMD expects major 9).
inline constexpr uint32_t kNetDescMajor = 9;
inline constexpr uint32_t kNetDescMinor = 0;

} // namespace aic100::qpc
