// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/family.h"

#include "aic100/aic200.h"

namespace aic100 {

namespace {

// Upstream 7.3's aic100_config and aic200_config (qaic_drv.c), with the MHI
// controller and Sahara settings qaic takes per family.
constexpr FamilyConfig kAic100 = {
	.family = Family::Aic100,
	.name = "AIC100",
	.device_id = 0xA100,
	.bar_mask = (1u << 0) | (1u << 2) | (1u << 4),
	.mhi_bar = 0,
	.dbc_bar = 2,
	.sbl_load = SblLoad::Bhi,
	.sahara_form = SaharaForm::NonStreaming,
	.firmware_dir = "qcom/aic100",
	.boot_timesync = true,
	.channels = kAic100Channels,
	.qsm_image_id = 1,
	.nsp_image_id = 2,
};

constexpr FamilyConfig kAic200 = {
	.family = Family::Aic200,
	.name = "AIC200",
	.device_id = aic200::kPciDeviceId,
	.bar_mask = (1u << 0) | (1u << 1) | (1u << 2) | (1u << 4),
	.mhi_bar = 1,
	.dbc_bar = 2,
	.sbl_load = SblLoad::Bhie,
	.sahara_form = SaharaForm::Streaming,
	.firmware_dir = "qcom/aic200",
	.boot_timesync = false,
	.channels = kAic200Channels,
	.qsm_image_id = aic200::kHlosImageId,
	.nsp_image_id = aic200::kNspImageId,
};

} // namespace

const FamilyConfig &family_config(Family f)
{
	return f == Family::Aic200 ? kAic200 : kAic100;
}

bool family_has_device_id(Family f, uint16_t device_id)
{
	if (f == Family::Aic200)
		return device_id == aic200::kPciDeviceId;
	return device_id == 0xA100 || device_id == 0xA080;
}

std::string image_file(Family f, uint32_t id)
{
	if (f == Family::Aic100)
		return "fw" + std::to_string(id) + ".bin";
	const std::string_view file = aic200::sahara_image_file(id);
	return file.empty() ? "image " + std::to_string(id) : std::string(file);
}

} // namespace aic100
