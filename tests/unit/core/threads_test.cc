// SPDX-License-Identifier: GPL-2.0-or-later
// The device core driven from several threads, the way QEMU drives it: the
// card's pass on a worker thread under a big lock (the BQL), vCPUs writing
// the DMA Bridge's registers without it (dbc-lockless), and another vCPU
// using MHI under it. Run under ThreadSanitizer (make SANITIZE=thread unit),
// any data race is a report; without it, the card must still answer.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "aic100/device.h"
#include "aic100/regs.h"
#include "fake_card.h"

namespace aic100::test {
namespace {

// QEMU's side of the host interface is shared by its threads: the records
// the fake keeps are taken under a lock of their own, and kick() wakes the
// worker, as aic100_kick sets the worker's event.
class SharedHost : public FakeHost {
public:
	void raise_msi(unsigned vector) override
	{
		std::lock_guard<std::mutex> g(records_);
		FakeHost::raise_msi(vector);
	}
	void guest_error(const char *msg) override
	{
		std::lock_guard<std::mutex> g(records_);
		FakeHost::guest_error(msg);
	}
	void trace(const char *msg) override
	{
		std::lock_guard<std::mutex> g(records_);
		FakeHost::trace(msg);
	}
	void kick() override
	{
		FakeHost::kick();
		{
			std::lock_guard<std::mutex> g(wake_mu_);
			queued_ = true;
		}
		wake_.notify_one();
	}
	// The worker: waits for a kick (or the end), like aic100_worker.
	bool wait_for_work(const std::atomic<bool> &stop)
	{
		std::unique_lock<std::mutex> g(wake_mu_);
		wake_.wait(g, [&] { return queued_ || stop.load(); });
		queued_ = false;
		return !stop.load();
	}
	void wake_all()
	{
		std::lock_guard<std::mutex> g(wake_mu_);
		wake_.notify_all();
	}

private:
	std::mutex records_, wake_mu_;
	std::condition_variable wake_;
	bool queued_ = false;
};

class DeviceThreads : public CardTest<SharedHost> {
protected:
	void SetUp() override
	{
		DeviceConfig cfg;
		cfg.boot_amss = true;
		cfg.nsp_count = 2;
		cfg.ddr_size = 64ull << 20;
		new_card(cfg);
		ASSERT_NO_FATAL_FAILURE(online({0, 1}));
		worker = std::thread([this] {
			while (host.wait_for_work(stop)) {
				std::lock_guard<std::mutex> g(bql);
				dev->process();
			}
		});
	}
	void TearDown() override
	{
		stop = true;
		host.wake_all();
		worker.join();
	}

	std::mutex bql;
	std::atomic<bool> stop{false};
	std::thread worker;
};

// A vCPU without the BQL: doorbells and pointers of DBCs nobody activated
// (refused, under the DMA Bridge's own lock), and their reads.
void hammer_bar2(Device &dev, unsigned rounds)
{
	for (unsigned i = 0; i < rounds; i++) {
		const uint32_t dbc = regs::kDbcBase + (i % 16) * regs::kDbcStride;
		dev.bar_write(2, dbc + regs::DBC_REQTP, i % 8, 4);
		dev.bar_write(2, dbc + regs::DBC_RSPHP, i % 8, 4);
		(void)dev.bar_read(2, dbc + regs::DBC_REQTP, 4);
	}
}

TEST_F(DeviceThreads, Bar2WithoutTheBqlBesideTheCardsPassAndMhiTraffic)
{
	std::thread vcpu0([this] { hammer_bar2(*dev, 20000); });
	std::thread vcpu1([this] { hammer_bar2(*dev, 20000); });
	// Meanwhile a vCPU with the BQL sends on the loopback channel and
	// reads MHI's registers, while the worker runs the card's passes.
	for (unsigned n = 0; n < 50; n++) {
		std::lock_guard<std::mutex> g(bql);
		mhi->queue_dl(1, 4096);
		mhi->send(0, std::vector<uint8_t>(1000, uint8_t(n)));
		EXPECT_EQ(mhi->pop(1), std::vector<uint8_t>(1000, uint8_t(n))) << n;
		EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8 & 0xFF, 2u);
	}
	vcpu0.join();
	vcpu1.join();
}

// A PCI reset (QEMU's, under the BQL) while vCPUs write BAR2 without it.
TEST_F(DeviceThreads, ResetsBesideLocklessBar2Writes)
{
	std::thread vcpu([this] { hammer_bar2(*dev, 20000); });
	for (unsigned n = 0; n < 20; n++) {
		std::lock_guard<std::mutex> g(bql);
		dev->reset();
		new_host();
		mhi->ready_handshake();
		EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8 & 0xFF, 2u);
	}
	vcpu.join();
}

} // namespace
} // namespace aic100::test
