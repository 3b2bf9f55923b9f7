// SPDX-License-Identifier: GPL-2.0-or-later
// A card on the fake host, with the miniature MHI host over it: what every
// test that drives a whole Device starts from (the boot flows, the NNC
// tests, the threaded ones). Host is FakeHost or a class derived from it.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>

#include "aic100/device.h"
#include "fake_host.h"
#include "host_mhi.h"

namespace aic100::test {

template <class Host = FakeHost> class CardTest : public ::testing::Test {
protected:
	// A new card with cfg (in PBL, or straight in AMSS with
	// cfg.boot_amss), and a new host stack for it.
	void new_card(const DeviceConfig &cfg)
	{
		mhi.reset();
		dev = std::make_unique<Device>(host, cfg);
		new_host();
	}
	// A new host stack over the same card, with contexts of its own: a
	// reloaded driver, or the host after a reset of the card.
	void new_host() { mhi = std::make_unique<HostMhi>(host, *dev); }
	// The host takes the card to M0 and starts these channels, each on a
	// ring of `elements`.
	void online(std::initializer_list<unsigned> channels, unsigned elements = 32)
	{
		mhi->ready_handshake();
		for (unsigned ch : channels)
			ASSERT_TRUE(mhi->start(ch, elements)) << "channel " << ch;
	}

	Host host;
	std::unique_ptr<Device> dev;
	std::unique_ptr<HostMhi> mhi;
};

} // namespace aic100::test
