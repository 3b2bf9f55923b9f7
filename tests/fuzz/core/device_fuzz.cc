// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the device core, in the manner of QEMU's generic-fuzz:
// the input is a configuration and a sequence of what a guest and QEMU can
// do to the card (fuzz_input.h): MMIO to BAR0 (MHI), BAR2 (DMA Bridge) and
// BAR4 (test mailbox on), doorbells, host memory contents for the card's
// DMA, time passing, the bottom half running, monitor injections, resets.
// Each input gets a new Device, whose destructor stops and joins every NSP
// thread before the next input starts.
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aic100::fuzz::run_input(data, size);
	return 0;
}
