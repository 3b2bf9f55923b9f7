// SPDX-License-Identifier: GPL-2.0-or-later
// The NNC (Neural Network Control) protocols, as wire structures shared by
// the card's QSM and our user-space library:
//  * the transport the qaic driver speaks on QAIC_CONTROL (version 5.0):
//    a 32-byte message header and transactions (contract §8);
//  * the command protocol 17.0 that user space carries inside PASSTHROUGH
//    transactions (the open UMD's protocol; reference umd-nnc-protocol.md).
// Everything is little-endian and packed; offsets are pinned by asserts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aic100::nnc {

// ---- transport (QAIC_CONTROL) --------------------------------------------

inline constexpr uint32_t kMagic = 0x43494151; // "QAIC"
inline constexpr size_t kHeaderSize = 32;
inline constexpr size_t kMaxReply = 4096;
inline constexpr size_t kMaxRequest = 64 * 1024;
inline constexpr uint16_t kVersionMajor = 5;
inline constexpr uint16_t kVersionMinor = 0;
inline constexpr uint64_t kStatusFlagCrc = 1; // STATUS_FROM_DEV status_flags bit 0

enum Transaction : uint32_t {
	kPassthroughFromUsr = 1,
	kPassthroughFromDev = 3,
	kPassthroughToDev = 4,
	kDmaXferFromUsr = 5,
	kDmaXferToDev = 6,
	kActivateFromUsr = 7,
	kActivateFromDev = 8,
	kActivateToDev = 9,
	kDeactivateFromUsr = 10,
	kDeactivateFromDev = 11,
	kStatusFromUsr = 12,
	kStatusFromDev = 14,
	kStatusToDev = 15,
	kTerminateFromDev = 16,
	kTerminateToDev = 17,
	kDmaXferCont = 18,
	kValidatePartitionFromDev = 19,
	kValidatePartitionToDev = 20,
};

struct __attribute__((packed)) Header {
	uint32_t crc32;
	uint32_t magic;
	uint32_t sequence_number;
	uint32_t len;
	uint32_t count;
	uint32_t handle;
	uint32_t partition_id; // 0xFFFFFFFF: none
	uint32_t padding;
};
static_assert(sizeof(Header) == kHeaderSize);

struct __attribute__((packed)) TransHdr {
	uint32_t type;
	uint32_t len; // including this header
};

struct __attribute__((packed)) DmaXferToDev {
	TransHdr hdr;
	uint32_t tag;
	uint32_t count; // address/size pairs that follow
	uint32_t dma_chunk_id;
	uint32_t padding;
	// followed by `count` DmaPair
};
struct __attribute__((packed)) DmaPair {
	uint64_t addr;
	uint64_t size;
};
struct __attribute__((packed)) DmaXferCont {
	TransHdr hdr;
	uint32_t dma_chunk_id;
	uint32_t padding;
	uint64_t xferred_size;
};
struct __attribute__((packed)) ActivateToDev {
	TransHdr hdr;
	uint64_t req_q_addr;
	uint64_t rsp_q_addr;
	uint32_t req_q_size;
	uint32_t rsp_q_size;
	uint32_t buf_len;
	uint32_t options;
};
struct __attribute__((packed)) ActivateFromDev {
	TransHdr hdr;
	uint32_t status;
	uint32_t dbc_id;
	uint64_t options;
};
struct __attribute__((packed)) DeactivateFromDev {
	TransHdr hdr;
	uint32_t status;
	uint32_t dbc_id;
};
struct __attribute__((packed)) StatusFromDev {
	TransHdr hdr;
	uint16_t major;
	uint16_t minor;
	uint32_t status;
	uint64_t status_flags;
};
struct __attribute__((packed)) TerminateToDev {
	TransHdr hdr;
	uint32_t handle;
	uint32_t padding;
};
struct __attribute__((packed)) TerminateFromDev {
	TransHdr hdr;
	uint32_t status;
	uint32_t padding;
};
struct __attribute__((packed)) ValidatePartitionToDev {
	TransHdr hdr;
	uint32_t part_id;
	uint32_t padding;
};
struct __attribute__((packed)) ValidatePartitionFromDev {
	TransHdr hdr;
	uint32_t status;
	uint32_t padding;
};
static_assert(sizeof(DmaXferToDev) == 24 && sizeof(DmaXferCont) == 24 && sizeof(ActivateToDev) == 40 &&
	      sizeof(ActivateFromDev) == 24 && sizeof(DeactivateFromDev) == 16 && sizeof(StatusFromDev) == 24 &&
	      sizeof(TerminateToDev) == 16 && sizeof(TerminateFromDev) == 16 &&
	      sizeof(ValidatePartitionToDev) == 16 && sizeof(ValidatePartitionFromDev) == 16);

// ---- command protocol 17.0 (inside PASSTHROUGH) ------------------------------

namespace cmd {

inline constexpr uint16_t kProtocolMajor = 17;
inline constexpr uint16_t kProtocolMinor = 0;
inline constexpr uint16_t kMetadataMajor = 1;
inline constexpr uint16_t kMetadataMinor = 0;
inline constexpr uint8_t kFormatVersion = 12;
// DMA tags the UMD uses for images riding in DMA_XFER.
inline constexpr uint32_t kTagElf = 100;
inline constexpr uint32_t kTagConstants = 300;

enum Type : uint32_t {
	kLoadConstants = 1,
	kLoadConstantsResp = 2,
	kLoadElf = 3,
	kLoadElfResp = 4,
	kUnloadConstants = 5,
	kUnloadConstantsResp = 6,
	kUnloadElf = 7,
	kUnloadElfResp = 8,
	kActivate = 9,
	kActivateResp = 10,
	kDeactivate = 11,
	kDeactivateResp = 12,
	kStatus = 13,
	kStatusResp = 14,
	kLoadConstantsEx = 15,
	kLoadConstantsPayload = 16,
	kTerminate = 17,
	kTerminateResp = 18,
	kReserveVc = 19,
	kReserveVcResp = 20,
	kReleaseVc = 22,
	kReleaseVcResp = 23,
	kReserveAc = 24,
	kReserveAcResp = 25,
	kDeviceConfig = 26,
	kDeviceConfigResp = 27,
	kCreateResourceGroup = 28,
	kCreateResourceGroupResp = 29,
	kReleaseResourceGroup = 30,
	kReleaseResourceGroupResp = 31,
	kResourceInfo = 32,
	kResourceInfoResp = 33,
	kPerformanceInfo = 34,
	kPerformanceInfoResp = 35,
	kActivateStateCmd = 36,
	kActivateStateCmdResp = 37,
	kUpdateAcRes = 38,
	kUpdateAcResResp = 39,
	kReserved44 = 44,
	kReserved44Resp = 45,
};

// Status codes (i32) of every response.
enum Status : int32_t {
	kOk = 0,
	kErrGeneral = -1,
	kErrDma = -2,
	kErrUndefinedRequest = -3,
	kErrMemory = -4,
	kErrMetadata = -5,
	kErrParameter = -6,
	kErrTimeout = -7,
	kErrNotInitialized = -8,
	kErrNotPermitted = -9,
	kErrBufferTooSmall = -10,
	kErrNotFound = -11,
	kErrMcidAlloc = -12,
	kErrNspAlloc = -13,
	kErrVcAlloc = -14,
	kErrSemAlloc = -15,
	kErrNspResponse = -16,
	kErrCommandLength = -17,
	kErrIdsExhausted = -18,
	kErrQueueTooSmall = -34,
	kErrVcConfigure = -35,
	kErrNspUnderSsr = -36,
};

struct __attribute__((packed)) ResourceInfo {
	uint32_t dram_total_mb;
	uint32_t dram_free_mb;
	uint32_t fragmentation_status;
	uint8_t vc_total;
	uint8_t vc_free;
	uint8_t nsp_total;
	uint8_t nsp_free;
	uint32_t mcid_total;
	uint32_t mcid_free;
	uint32_t sem_total;
	uint32_t sem_free;
	uint8_t pc_total;
	uint8_t pc_reserved;
	uint8_t pad[6];
};
static_assert(sizeof(ResourceInfo) == 40);

struct __attribute__((packed)) PerfInfo {
	uint32_t nsp_frequency_hz;
	uint32_t ddr_frequency_hz;
	uint32_t comp_frequency_hz;
	uint32_t mem_frequency_hz;
	uint32_t sys_frequency_hz;
	uint32_t pad;
	uint64_t peak_compute;
	uint64_t dram_bw_kbps;
	uint64_t reserved[2];
};
static_assert(sizeof(PerfInfo) == 56);

struct __attribute__((packed)) DevData {
	uint8_t fw_version[4]; // major, minor, patch, build (255 = hidden)
	char fw_qc_image_version[38];
	char fw_oem_image_version[38];
	char fw_image_variant[16];
	uint32_t hw_version;
	char serial[16];
	char board_serial[32];
	uint32_t compiler_version;
	ResourceInfo resource_info;
	PerfInfo perf_info;
	uint32_t num_loaded_consts;
	uint32_t num_consts_in_use;
	uint8_t num_loaded_nws;
	uint8_t num_active_nws;
	uint16_t meta_ver_major;
	uint16_t meta_ver_minor;
	uint16_t nnc_major;
	uint16_t nnc_minor;
	char sbl_image_name[24];
	uint8_t need_reset_to_retire_pages;
	uint8_t pad0;
	uint32_t pvs_image_version;
	uint64_t nsp_pgmask;
	uint64_t qts_time_offset_usecs;
	uint32_t num_retired_pages;
	uint8_t sku_type;
	uint8_t complex_id;
	uint8_t pad1[2];
};
static_assert(sizeof(DevData) == 320);

struct __attribute__((packed)) NspData {
	uint8_t version[4];
	uint8_t pad[4];
	char qc_image_version[64];
	char oem_image_version[48];
	char image_variant[48];
};
static_assert(sizeof(NspData) == 168);

struct __attribute__((packed)) StatusReq {
	uint32_t type;
	uint8_t info_type;
	uint8_t pad[3];
};
struct __attribute__((packed)) StatusResp {
	uint32_t type;
	int32_t status;
	uint8_t format_version;
	uint8_t pad[7];
	DevData dev;
	NspData nsp;
};
static_assert(sizeof(StatusReq) == 8 && sizeof(StatusResp) == 504);
static_assert(offsetof(StatusResp, dev) + offsetof(DevData, hw_version) == 112);
static_assert(offsetof(StatusResp, dev) + offsetof(DevData, nnc_major) == 278);
static_assert(offsetof(StatusResp, dev) + offsetof(DevData, sku_type) == 332);

struct __attribute__((packed)) ResourceInfoReq {
	uint32_t type;
	uint32_t process_id;
	int32_t res_grp_id; // -1: the whole device
	uint32_t pad;
};
struct __attribute__((packed)) ResourceInfoResp {
	uint32_t type;
	int32_t res_grp_id;
	ResourceInfo info;
	int32_t status;
	uint32_t pad;
};
static_assert(sizeof(ResourceInfoReq) == 16 && sizeof(ResourceInfoResp) == 56);
static_assert(offsetof(ResourceInfoResp, status) == 48);

struct __attribute__((packed)) PerformanceInfoReq {
	uint32_t type;
	uint32_t pad;
};
struct __attribute__((packed)) PerformanceInfoResp {
	uint32_t type;
	int32_t status;
	PerfInfo info;
};
static_assert(sizeof(PerformanceInfoReq) == 8 && sizeof(PerformanceInfoResp) == 64);

struct __attribute__((packed)) LoadElfReq {
	uint32_t type;
	uint32_t tag;
	uint32_t pid;
	uint32_t metadata_crc;
	char network_name[64];
	uint64_t data_length;
	uint32_t fb_crc;
	uint32_t pad;
};
struct __attribute__((packed)) LoadElfResp {
	uint32_t type;
	uint32_t elf_id;
	int32_t status;
	uint32_t pad;
};
static_assert(sizeof(LoadElfReq) == 96 && sizeof(LoadElfResp) == 16);

struct __attribute__((packed)) LoadConstantsReq {
	uint32_t type;
	uint32_t pid;
	uint32_t tag;
	uint32_t crc;
	uint64_t data_length;
	char name[64];
};
struct __attribute__((packed)) ConstantsDescriptor {
	uint64_t static_size;
	uint64_t dynamic_size;
	uint8_t ecc_static;
	uint8_t ecc_dynamic;
	uint8_t pad[6];
};
struct __attribute__((packed)) LoadConstantsExReq {
	uint32_t type;
	uint32_t pid;
	char name[64];
	uint32_t descriptor_len;
	uint32_t pad;
	// followed by descriptor_len bytes (a ConstantsDescriptor)
};
struct __attribute__((packed)) LoadConstantsPayloadReq {
	uint32_t type;
	uint32_t pid;
	uint32_t tag;
	uint32_t constants_id;
	uint64_t data_length;
	uint64_t offset;
};
struct __attribute__((packed)) LoadConstantsResp {
	uint32_t type;
	uint32_t constants_id;
	int32_t status;
	uint32_t pad;
};
static_assert(sizeof(LoadConstantsReq) == 88 && sizeof(ConstantsDescriptor) == 24 &&
	      sizeof(LoadConstantsExReq) == 80 && sizeof(LoadConstantsPayloadReq) == 32 &&
	      sizeof(LoadConstantsResp) == 16);

struct __attribute__((packed)) ActivateReq {
	uint32_t type;
	uint32_t pid;
	uint32_t constants_id; // 0: none
	uint32_t elf_id;
	uint32_t reservation_type;
	int32_t resource_res_id; // -1: none
	uint32_t opt_vc_setup;
	int32_t vc_res_id;
	uint32_t initial_state; // 0 standby, 1 ready, 2 deactivated
	uint32_t dma_type;
	uint8_t datapath_switching;
	uint8_t pad[7];
};
struct __attribute__((packed)) ActivateResp {
	uint32_t type;
	int32_t status;
	uint32_t activation_id;
	uint32_t virtual_channel_id; // the DBC
	uint64_t ddr_base;
	uint64_t dynamic_ddr_base;
	uint64_t mcid_base;
	uint64_t mcid_base_dma_cmd;
	uint32_t dma_type;
	uint32_t pc_mask;
	uint64_t nsp_polling_addr;
	uint32_t nsp_polling_size;
	uint32_t nsp_polling_data;
	uint64_t doorbell_addr;
	uint8_t doorbell_len;
	uint8_t doorbell_valid;
	uint32_t nsp_mask;
	uint8_t pad[2];
};
static_assert(sizeof(ActivateReq) == 48 && sizeof(ActivateResp) == 88);
static_assert(offsetof(ActivateResp, nsp_mask) == 82);

struct __attribute__((packed)) DeactivateReq {
	uint32_t type;
	uint32_t activation_id;
	uint32_t opt_vc_teardown;
	uint32_t pad;
};
struct __attribute__((packed)) IdReq { // UNLOAD_ELF, UNLOAD_CONSTANTS, RELEASE_RESOURCE_GROUP
	uint32_t type;
	uint32_t id;
};
struct __attribute__((packed)) StatusOnlyResp {
	uint32_t type;
	int32_t status;
};
static_assert(sizeof(DeactivateReq) == 16 && sizeof(IdReq) == 8 && sizeof(StatusOnlyResp) == 8);

struct __attribute__((packed)) ActivateStateCmdReq {
	uint32_t type;
	uint32_t num_cmds; // at most 8
	struct __attribute__((packed)) {
		uint32_t activation_id;
		uint32_t cmd; // 0 standby, 1 ready, 2 deactivate
	} cmds[8];
};
static_assert(sizeof(ActivateStateCmdReq) == 72);

struct __attribute__((packed)) CreateResourceGroupReq {
	uint32_t type;
	uint32_t pid;
	int32_t source_grp; // -1: the device's free pool
	uint32_t nsp;
	uint32_t mcid;
	uint32_t sem;
	uint32_t vc;
	uint32_t pad;
	uint64_t shddr;
	uint64_t l2region;
	uint64_t mem; // bytes of DDR
	uint16_t num_networks;
	uint8_t pad2[6];
};
struct __attribute__((packed)) CreateResourceGroupResp {
	uint32_t type;
	int32_t status;
	int32_t res_grp_id;
	uint32_t pad;
};
static_assert(sizeof(CreateResourceGroupReq) == 64 && sizeof(CreateResourceGroupResp) == 16);

} // namespace cmd
} // namespace aic100::nnc
