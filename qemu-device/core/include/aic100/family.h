// SPDX-License-Identifier: GPL-2.0-or-later
// The card families the core models, as upstream qaic tells them apart
// (struct qaic_device_config plus the MHI controller and Sahara settings it
// picks per family): what differs between an AIC100 and an AIC200 is
// described here, once, and every block that cares reads it. Everything
// else is one implementation for both (docs/aic200.md).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "aic100/regs.h"

namespace aic100 {

enum class Family : uint8_t { Aic100, Aic200 };

// How the PBL takes sbl.bin: one buffer over BHI, or also a vector table
// of segments over BHIe (the only way upstream loads an AIC200).
enum class SblLoad : uint8_t { Bhi, Bhie };

// How the host answers READ_DATA. NonStreaming: one transfer of at most
// 512 KiB per request. Streaming: a request of any length, answered as
// one-TRE transfers of at most 0xFFFF bytes, one at a time.
enum class SaharaForm : uint8_t { NonStreaming, Streaming };

// Execution environments (bits 1 << EE) in which the card serves each pair
// of channels 2k (host to card) and 2k+1; 0 for a pair the family lacks.
inline constexpr unsigned kChannelPairs = 12; // channels 0..23
using ChannelTable = std::array<uint32_t, kChannelPairs>;

namespace ee_bit {
inline constexpr uint32_t kSbl = 1u << static_cast<unsigned>(regs::ExecEnv::Sbl);
inline constexpr uint32_t kAmss = 1u << static_cast<unsigned>(regs::ExecEnv::Amss);
} // namespace ee_bit

// Pairs: LOOPBACK, SAHARA, DIAG, SSR, QDSS, CONTROL, LOGGING, STATUS,
// TELEMETRY, DEBUG, TIMESYNC, TIMESYNC_PERIODIC (upstream's AIC100 table).
inline constexpr ChannelTable kAic100Channels = {
	ee_bit::kAmss, ee_bit::kSbl,  ee_bit::kAmss, ee_bit::kAmss, ee_bit::kAmss, ee_bit::kAmss,
	ee_bit::kSbl,  ee_bit::kAmss, ee_bit::kAmss, ee_bit::kAmss, ee_bit::kSbl,  ee_bit::kAmss};
// Upstream's AIC200 table: no DIAG, QDSS, DEBUG or boot-time TIMESYNC.
inline constexpr ChannelTable kAic200Channels = {
	ee_bit::kAmss, ee_bit::kSbl,  0, ee_bit::kAmss, 0, ee_bit::kAmss,
	ee_bit::kSbl,  ee_bit::kAmss, ee_bit::kAmss, 0, 0, ee_bit::kAmss};

struct FamilyConfig {
	Family family;
	const char *name;      // as upstream's MHI controller name: "AIC100"
	uint16_t device_id;    // PCI device id
	uint8_t bar_mask;      // the memory BARs the host insists on (qaic's bar_mask)
	unsigned mhi_bar;      // MHI, BHI, BHIe and the QTimer
	unsigned dbc_bar;      // the DMA Bridge
	SblLoad sbl_load;
	SaharaForm sahara_form;
	const char *firmware_dir; // under /lib/firmware
	bool boot_timesync;       // QAIC_TIMESYNC (20/21) in the SBL
	ChannelTable channels;
	// The Sahara images that carry the QSM and the NSP firmware: the
	// QSM reports their versions.
	uint32_t qsm_image_id, nsp_image_id;
};

const FamilyConfig &family_config(Family f);
// Whether `device_id` presents a card of family `f` (AIC080 is an AIC100).
bool family_has_device_id(Family f, uint16_t device_id);
// The host's file name of Sahara image `id`: "fw1.bin" on AIC100,
// "aic200-hlos.elf" on AIC200; "image <id>" when the host has none.
std::string image_file(Family f, uint32_t id);

} // namespace aic100
