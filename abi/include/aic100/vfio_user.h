// SPDX-License-Identifier: GPL-2.0-or-later
// The vfio-user protocol on the wire (QEMU's docs/interop/vfio-user.rst,
// protocol version 0.0), as the card's vfio-user server speaks it: the
// 16-byte message header, the command numbers and flags, and the payload of
// every command the server answers or sends. Payload structs start right
// after the header; offsets in the comments are from the payload's start.
// The protocol uses the host's byte order; every host we run on is
// little-endian. The region, IRQ and DMA structs mirror Linux's
// include/uapi/linux/vfio.h, whose numbers they share.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace aic100::vfio_user {

static_assert(std::endian::native == std::endian::little, "vfio-user messages use the host's (little-endian) order");

inline constexpr uint16_t kMajor = 0;
inline constexpr uint16_t kMinor = 0;

// Every message, command or reply, starts with this header.
struct Header {
	uint16_t id;       // chosen by the sender, echoed in the reply
	uint16_t command;  // Command; repeated in the reply
	uint32_t size;     // the whole message, header included
	uint32_t flags;    // kType*, kNoReply, kError
	uint32_t error;    // errno of an error reply; reserved in commands
};
static_assert(sizeof(Header) == 16 && offsetof(Header, size) == 4 && offsetof(Header, error) == 12);

inline constexpr uint32_t kTypeMask = 0xf;
inline constexpr uint32_t kTypeCommand = 0;
inline constexpr uint32_t kTypeReply = 1;
inline constexpr uint32_t kNoReply = 0x10;  // the sender wants no reply, not even an error
inline constexpr uint32_t kError = 0x20;    // a reply that carries only the header and an errno
inline constexpr uint32_t kKnownFlags = kTypeMask | kNoReply | kError;

enum class Command : uint16_t {
	Version = 1,
	DmaMap = 2,
	DmaUnmap = 3,
	DeviceGetInfo = 4,
	GetRegionInfo = 5,
	GetRegionIoFds = 6,
	GetIrqInfo = 7,
	SetIrqs = 8,
	RegionRead = 9,
	RegionWrite = 10,
	DmaRead = 11,   // server to client
	DmaWrite = 12,  // server to client
	DeviceReset = 13,
	DirtyPages = 14,  // retired
	RegionWriteMulti = 15,
	DeviceFeature = 16,
	MigDataRead = 17,
	MigDataWrite = 18,
};

// VERSION, both ways: this, then an optional NUL-terminated JSON object
// {"capabilities":{...}} up to the message's end.
struct Version {
	uint16_t major;
	uint16_t minor;
};
static_assert(sizeof(Version) == 4);

// The capability keys and the values a peer assumes when a key is absent.
inline constexpr const char *kCapObject = "capabilities";
inline constexpr const char *kCapMaxMsgFds = "max_msg_fds";
inline constexpr const char *kCapMaxDataXfer = "max_data_xfer_size";
inline constexpr const char *kCapPgsizes = "pgsizes";
inline constexpr const char *kCapMaxDmaMaps = "max_dma_maps";
inline constexpr const char *kCapWriteMultiple = "write_multiple";
inline constexpr uint32_t kDefaultMaxMsgFds = 1;
inline constexpr uint64_t kDefaultMaxDataXfer = 1u << 20;
inline constexpr uint64_t kDefaultPgsizes = 4096;
inline constexpr uint64_t kDefaultMaxDmaMaps = 65535;

// DMA_MAP (vfio_iommu_type1_dma_map), with zero or one fd; empty reply.
struct DmaMap {
	uint32_t argsz;
	uint32_t flags;    // kDmaRead | kDmaWrite
	uint64_t offset;   // into the fd's file
	uint64_t address;  // client (guest) address
	uint64_t size;
};
static_assert(sizeof(DmaMap) == 32 && offsetof(DmaMap, address) == 16);

inline constexpr uint32_t kDmaRead = 1u << 0;
inline constexpr uint32_t kDmaWrite = 1u << 1;

// DMA_UNMAP (vfio_iommu_type1_dma_unmap); the reply repeats it.
struct DmaUnmap {
	uint32_t argsz;
	uint32_t flags;  // kUnmapDirtyBitmap, kUnmapAll
	uint64_t address;
	uint64_t size;
};
static_assert(sizeof(DmaUnmap) == 24 && offsetof(DmaUnmap, address) == 8);

inline constexpr uint32_t kUnmapDirtyBitmap = 1u << 0;
inline constexpr uint32_t kUnmapAll = 1u << 1;  // address 0 and size 0: every mapping

// DEVICE_GET_INFO (vfio_device_info), request and reply.
struct DeviceInfo {
	uint32_t argsz;
	uint32_t flags;  // kDeviceReset | kDevicePci
	uint32_t num_regions;
	uint32_t num_irqs;
};
static_assert(sizeof(DeviceInfo) == 16);

inline constexpr uint32_t kDeviceReset = 1u << 0;
inline constexpr uint32_t kDevicePci = 1u << 1;

// DEVICE_GET_REGION_INFO (vfio_region_info), request and reply; the reply
// may go on with a chain of capabilities (cap_offset from this struct's
// start) and carry one fd when the region can be mmapped.
struct RegionInfo {
	uint32_t argsz;
	uint32_t flags;  // kRegion*
	uint32_t index;
	uint32_t cap_offset;
	uint64_t size;
	uint64_t offset;  // mmap offset in the fd; base of the sparse areas
};
static_assert(sizeof(RegionInfo) == 32 && offsetof(RegionInfo, size) == 16);

inline constexpr uint32_t kRegionRead = 1u << 0;
inline constexpr uint32_t kRegionWrite = 1u << 1;
inline constexpr uint32_t kRegionMmap = 1u << 2;
inline constexpr uint32_t kRegionCaps = 1u << 3;

// PCI regions and IRQ indices (VFIO_PCI_*_REGION_INDEX, VFIO_PCI_*_IRQ_INDEX).
inline constexpr uint32_t kBar0Region = 0;
inline constexpr uint32_t kRomRegion = 6;
inline constexpr uint32_t kConfigRegion = 7;
inline constexpr uint32_t kVgaRegion = 8;
inline constexpr uint32_t kPciRegions = 9;
inline constexpr uint32_t kIntxIrq = 0;
inline constexpr uint32_t kMsiIrq = 1;
inline constexpr uint32_t kMsixIrq = 2;
inline constexpr uint32_t kErrIrq = 3;
inline constexpr uint32_t kReqIrq = 4;
inline constexpr uint32_t kPciIrqs = 5;

// A capability's header (vfio_info_cap_header); next is an offset from the
// region info's start, 0 at the chain's end.
struct CapHeader {
	uint16_t id;
	uint16_t version;
	uint32_t next;
};
static_assert(sizeof(CapHeader) == 8);

inline constexpr uint16_t kCapSparseMmap = 1;
inline constexpr uint16_t kCapSparseMmapVersion = 1;

// VFIO_REGION_INFO_CAP_SPARSE_MMAP: the parts of a region the client may
// mmap, at fd offset RegionInfo::offset + area.offset.
struct SparseMmap {
	CapHeader header;
	uint32_t nr_areas;
	uint32_t reserved;
	// then nr_areas SparseArea
};
struct SparseArea {
	uint64_t offset;
	uint64_t size;
};
static_assert(sizeof(SparseMmap) == 16 && sizeof(SparseArea) == 16);

// DEVICE_GET_IRQ_INFO (vfio_irq_info), request and reply.
struct IrqInfo {
	uint32_t argsz;
	uint32_t flags;  // kIrq*
	uint32_t index;
	uint32_t count;
};
static_assert(sizeof(IrqInfo) == 16);

inline constexpr uint32_t kIrqEventfd = 1u << 0;
inline constexpr uint32_t kIrqMaskable = 1u << 1;
inline constexpr uint32_t kIrqAutomasked = 1u << 2;
inline constexpr uint32_t kIrqNoresize = 1u << 3;

// DEVICE_SET_IRQS (vfio_irq_set); DATA_BOOL: count bytes follow; DATA_EVENTFD:
// count fds (or none: de-assign) come with the message. Empty reply.
struct IrqSet {
	uint32_t argsz;
	uint32_t flags;  // one kIrqData*, one kIrqAction*
	uint32_t index;
	uint32_t start;
	uint32_t count;
};
static_assert(sizeof(IrqSet) == 20 && offsetof(IrqSet, count) == 16);

inline constexpr uint32_t kIrqDataNone = 1u << 0;
inline constexpr uint32_t kIrqDataBool = 1u << 1;
inline constexpr uint32_t kIrqDataEventfd = 1u << 2;
inline constexpr uint32_t kIrqDataMask = kIrqDataNone | kIrqDataBool | kIrqDataEventfd;
inline constexpr uint32_t kIrqActionMask = 1u << 3;
inline constexpr uint32_t kIrqActionUnmask = 1u << 4;
inline constexpr uint32_t kIrqActionTrigger = 1u << 5;
inline constexpr uint32_t kIrqActionMaskAll = kIrqActionMask | kIrqActionUnmask | kIrqActionTrigger;

// REGION_READ (request: this; reply: this + count bytes) and REGION_WRITE
// (request: this + count bytes; reply: this).
struct RegionAccess {
	uint64_t offset;
	uint32_t region;
	uint32_t count;
};
static_assert(sizeof(RegionAccess) == 16 && offsetof(RegionAccess, count) == 12);

// REGION_WRITE_MULTI: wr_cnt, then wr_cnt entries; the reply is wr_cnt.
struct WriteMulti {
	uint64_t wr_cnt;
};
struct WriteMultiEntry {
	uint64_t offset;
	uint32_t region;
	uint32_t count;  // 1 to kWriteMultiData
	uint8_t data[8];
};
static_assert(sizeof(WriteMulti) == 8 && sizeof(WriteMultiEntry) == 24 && offsetof(WriteMultiEntry, data) == 16);

inline constexpr uint32_t kWriteMultiData = 8;
inline constexpr uint64_t kWriteMultiMax = 200;  // what QEMU's client packs at most

// DMA_READ and DMA_WRITE as the spec lays them out: this, then count bytes
// (the DMA_WRITE request, the DMA_READ reply).
struct DmaAccess {
	uint64_t address;
	uint64_t count;
};
static_assert(sizeof(DmaAccess) == 16);

// The same two messages as QEMU's client (hw/vfio-user/protocol.h,
// VFIOUserDMARW, 10.1 to 11.1 at least) reads and writes them: a 32-bit count, the
// data from payload offset 12, and a message size of 32 + count (its
// struct's size, padding included, plus the data), so 4 bytes of padding
// trail the data. docs/vfio-user.md, "DMA_READ and DMA_WRITE in QEMU".
struct __attribute__((packed)) QemuDmaAccess {
	uint64_t address;
	uint32_t count;
};
static_assert(sizeof(QemuDmaAccess) == 12);
inline constexpr uint32_t kQemuDmaDataOffset = 12;  // from the payload's start
inline constexpr uint32_t kQemuDmaFixedSize = 32;   // message size without data

}  // namespace aic100::vfio_user
