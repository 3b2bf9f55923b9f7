// SPDX-License-Identifier: GPL-2.0-or-later
// The PBL's BHIe load (AIC200): the vector table and its segments joined
// into sbl.bin, then the same checks and the same SBL as a load over BHI.
#include "aic100/bhie_loader.h"
#include "aic100/boot.h"

namespace aic100 {

void Boot::bhie_fail(const std::string &why)
{
	const std::string msg = "PBL: BHIe load refused: " + why + "; TXVECSTATUS error";
	host_.guest_error(msg.c_str());
	host_.trace(msg.c_str());
	mhi_.bhie_complete(false);
}

void Boot::bhie_transfer(uint64_t table_addr, uint32_t table_size)
{
	BhieLoad load = load_bhie_image(host_, table_addr, table_size, fw::kMaxSblSize);
	if (!load.error.empty()) {
		bhie_fail(load.error);
		return;
	}
	const SblCheck sbl = check_sbl(load.image);
	if (sbl.error != fw::Error::None) {
		bhie_fail(std::string("sbl.bin ") + fw::error_name(sbl.error));
		return;
	}
	mhi_.bhie_complete(true);
	start_sbl(sbl);
}

} // namespace aic100
