// SPDX-License-Identifier: GPL-2.0-or-later
// What an AIC200 (17cb:a110) and its host agree on beyond AIC100's ABI:
// the Sahara image table upstream Linux 7.3's qaic serves it from
// (drivers/accel/qaic/sahara.c, aic200_image_table), where its firmware
// lives, and which of those images this card's SBL fetches (docs/aic200.md).
#pragma once

#include <cstdint>
#include <string_view>

namespace aic100::aic200 {

inline constexpr uint16_t kPciDeviceId = 0xA110;
// /lib/firmware/<kFirmwareDir>/sbl.bin and the images below.
inline constexpr std::string_view kFirmwareDir = "qcom/aic200";

struct SaharaImage {
	uint32_t id;
	std::string_view file; // in kFirmwareDir
};

// Upstream's table, in id order; any other id is unknown to the host.
inline constexpr SaharaImage kSaharaImages[] = {
	{5, "uefi.elf"},
	{12, "aic200-nsp.bin"},
	{23, "aop.mbn"},
	{32, "tz.mbn"},
	{33, "hypvm.mbn"},
	{38, "xbl_config.elf"},
	{39, "aic200_abl.elf"},
	{40, "apdp.mbn"},
	{41, "devcfg.mbn"},
	{42, "sec.elf"},
	{43, "aic200-hlos.elf"},
	{49, "shrm.elf"},
	{50, "cpucp.elf"},
	{51, "aop_devcfg.mbn"},
	{54, "qupv3fw.elf"},
	{57, "cpucp_dtbs.elf"},
	{62, "uefi_dtbs.elf"},
	{63, "xbl_ac_config.mbn"},
	{64, "tz_ac_config.mbn"},
	{65, "hyp_ac_config.mbn"},
	{66, "pdp.elf"},
	{67, "pdp_cdb.elf"},
	{68, "sdi.mbn"},
	{69, "dcd.mbn"},
	{73, "gearvm.mbn"},
	{74, "sti.bin"},
	{76, "tz_qti_config.mbn"},
	{78, "pvs.bin"},
};

// The file of Sahara image `id`, or empty when the host has no such image.
constexpr std::string_view sahara_image_file(uint32_t id)
{
	for (const SaharaImage &im : kSaharaImages)
		if (im.id == id)
			return im.file;
	return {};
}

// The images this card's SBL fetches, in this order (the manifest
// aic100-fwbuild --family aic200 writes): the high-level OS image carries
// the QSM, the NSP image the NSPs' firmware.
inline constexpr uint32_t kHlosImageId = 43;
inline constexpr uint32_t kNspImageId = 12;

} // namespace aic100::aic200
