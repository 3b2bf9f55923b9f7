// SPDX-License-Identifier: GPL-2.0-or-later
// Data-path benchmarks, run inside a guest by bench/run. Every figure is
// printed next to a baseline measured in the same guest in the same run:
//  * bulk DMA to and from the card (4 KiB .. 64 MiB) vs memcpy of the same
//    size in the guest;
//  * small requests (4 KiB, EXECUTE_BO + WAIT_BO one at a time) on 1 and 4
//    DBCs vs 4 KiB O_DIRECT reads from QEMU's emulated NVMe on a null
//    backend (the same emulator's request path);
//  * NSP matmul (the int8 and fp32 example workloads, pipelined) vs the
//    same matmul computed by a plain loop in the guest;
//  * getting a crashed workload back: SSR (crash, EPIPE, re-activate the
//    loaded ELF, one correct inference) vs resetting the whole card (SoC
//    reset, ONLINE, load, activate, one inference). Needs the card's test
//    mailbox (-device aic100,test-mailbox=on) to crash it; last, as the
//    baseline resets the card.
// Usage: aic100-datapath-bench [--nvme /dev/nvme0n1] [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "datapath.h"
#include "mailbox.h"
#include "nnc_client.h"
#include "pipeline.h"
#include "qaic.h"
#include "workloads.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Xfer {
	std::optional<qaic::Bo> bo;
	uint32_t dbc;
	bool make(const qaic::Device &dev, const qaic::DataChannel &ch, uint64_t size, qaic::Dir dir)
	{
		bo = qaic::Bo::create(dev, size);
		if (!bo)
			return false;
		std::memset(bo->data(), 0x5A, size);
		qaic_attach_slice_entry s{};
		s.size = size;
		s.dev_addr = ch.ddr_base();
		dbc = ch.dbc();
		return !qaic::attach_slices(dev, bo->handle(), dbc, dir, std::span(&s, 1));
	}
	bool once(const qaic::Device &dev, qaic::Dir dir)
	{
		const qaic_execute_entry e{bo->handle(), dir};
		return !qaic::execute(dev, dbc, std::span(&e, 1)) && !qaic::wait(dev, dbc, bo->handle(), 30000);
	}
};

void bulk(const qaic::Device &dev, bool quick)
{
	std::printf("\n== bulk DMA (one request per BO slice segment; MB/s, ratio to guest memcpy)\n");
	std::printf("%10s %12s %12s %12s %8s %8s\n", "size", "memcpy", "to card", "from card", "to/mc", "from/mc");
	qaic::DataChannel ch(dev, 64ull << 20);
	if (!ch.problem().empty()) {
		std::printf("%s\n", ch.problem().c_str());
		return;
	}
	for (uint64_t size = 4096; size <= (64ull << 20); size *= 4) {
		const double budget = quick ? 0.2 : 0.6;
		std::vector<uint8_t> a(size, 1), b(size);
		uint64_t n = 0;
		auto t = Clock::now();
		while (since(t) < budget) {
			std::memcpy(b.data(), a.data(), size);
			a[n % size]++;
			n++;
		}
		const double mc = n * size / since(t) / 1e6;
		double rate[2] = {};
		for (int d = 0; d < 2; d++) {
			const qaic::Dir dir = d ? qaic::kFromDevice : qaic::kToDevice;
			Xfer x;
			if (!x.make(dev, ch, size, dir)) {
				std::printf("BO setup failed for %llu bytes\n", static_cast<unsigned long long>(size));
				return;
			}
			uint64_t k = 0;
			t = Clock::now();
			while (since(t) < budget && x.once(dev, dir))
				k++;
			rate[d] = k * size / since(t) / 1e6;
		}
		std::printf("%10llu %12.1f %12.1f %12.1f %8.3f %8.3f\n", static_cast<unsigned long long>(size), mc, rate[0],
			    rate[1], rate[0] / mc, rate[1] / mc);
	}
}

double nvme_iops(const std::string &path, double budget, double *lat_us)
{
	const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
	if (fd < 0)
		return 0;
	void *buf = nullptr;
	if (posix_memalign(&buf, 4096, 4096)) {
		::close(fd);
		return 0;
	}
	uint64_t n = 0;
	const auto t = Clock::now();
	while (since(t) < budget) {
		if (pread(fd, buf, 4096, static_cast<off_t>((n % 1024) * 4096)) != 4096)
			break;
		n++;
	}
	const double s = since(t);
	free(buf);
	::close(fd);
	*lat_us = n ? s / n * 1e6 : 0;
	return n / s;
}

void small(const qaic::Device &dev, const std::string &nvme_dev, bool quick)
{
	const double budget = quick ? 0.5 : 2.0;
	std::printf("\n== small requests: 4 KiB, one at a time per DBC (EXECUTE_BO + WAIT_BO)\n");
	double nvme_lat = 0;
	const double nvme = nvme_iops(nvme_dev, budget, &nvme_lat);
	if (nvme > 0)
		std::printf("baseline: emulated NVMe, null backend, 4 KiB O_DIRECT reads: %.0f req/s, %.1f us\n", nvme,
			    nvme_lat);
	else
		std::printf("baseline: no NVMe at %s\n", nvme_dev.c_str());
	for (unsigned dbcs : {1u, 4u}) {
		std::vector<std::unique_ptr<qaic::DataChannel>> chs;
		std::vector<Xfer> xs(dbcs);
		bool ok = true;
		for (unsigned i = 0; i < dbcs; i++) {
			chs.push_back(std::make_unique<qaic::DataChannel>(dev));
			ok = ok && chs.back()->problem().empty() && xs[i].make(dev, *chs.back(), 4096, qaic::kToDevice);
		}
		if (!ok) {
			std::printf("%u DBCs: setup failed\n", dbcs);
			continue;
		}
		std::vector<uint64_t> counts(dbcs);
		std::vector<std::thread> th;
		const auto t = Clock::now();
		for (unsigned i = 0; i < dbcs; i++)
			th.emplace_back([&, i] {
				while (since(t) < budget && xs[i].once(dev, qaic::kToDevice))
					counts[i]++;
			});
		for (auto &x : th)
			x.join();
		const double s = since(t);
		uint64_t total = 0;
		for (auto c : counts)
			total += c;
		const double rate = total / s, lat = s / (total ? static_cast<double>(total) / dbcs : 1) * 1e6;
		std::printf("%u DBC%s: %.0f req/s total, %.0f req/s and %.1f us per DBC", dbcs, dbcs > 1 ? "s" : "", rate,
			    rate / dbcs, lat);
		if (nvme > 0)
			std::printf("; ratio to NVMe: rate %.3f, latency %.3f", rate / dbcs / nvme, lat / nvme_lat);
		std::printf("\n");
	}
}

void matmul(const qaic::Device &dev, bool quick)
{
	namespace wl = aic100::workloads;
	std::printf("\n== NSP matmul (example workloads, pipelined; ratio to the same math in a guest loop)\n");
	for (const char *name : {"matmul_i8", "matmul_f32", "mlp_f32"}) {
		const wl::Example *e = wl::find(name);
		qaic::Pipeline p(dev, *e, 8);
		if (const auto why = p.setup(); !why.empty()) {
			std::printf("%s: %s\n", name, why.c_str());
			continue;
		}
		const uint64_t n = quick ? 50 : 300;
		const qaic::RunResult r = p.run(n, false);
		const auto in = e->make_input(1);
		uint64_t k = 0;
		const auto t = Clock::now();
		while (since(t) < r.seconds && k < n) {
			volatile auto out = e->reference(in).size();
			(void)out;
			k++;
		}
		const double card = r.inferences / r.seconds, guest = k / since(t);
		std::printf("%-11s card %8.1f inf/s, guest loop %8.1f inf/s, ratio %.2f%s\n", name, card, guest,
			    card / guest, r.problem.empty() ? "" : (" (" + r.problem + ")").c_str());
	}
}

std::optional<qaic::Device> open_online(const qaic::Card &card, double timeout_s)
{
	const auto t = Clock::now();
	while (since(t) < timeout_s) {
		if (auto d = qaic::Device::open(card.accel_node()))
			return d;
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	return std::nullopt;
}

void recovery(const qaic::Card &card, const qaic::Device &dev, bool quick)
{
	namespace wl = aic100::workloads;
	std::printf("\n== getting a crashed workload back (vadd_f32): SSR vs resetting the card\n");
	const wl::Example &e = *wl::find("vadd_f32");
	qaic::Mailbox mb(card.bdf);
	const bool ssr = std::filesystem::exists("/sys/class/accel/accel" + std::to_string(*card.accel_minor) +
						 "/dbc0_state");
	double ssr_ms = 0;
	unsigned ssr_n = 0;
	if (!mb.ok()) {
		std::printf("SSR: no test mailbox to crash the workload with (%s)\n", mb.problem().c_str());
	} else if (!ssr) {
		std::printf("SSR: the driver has no SSR client (upstream 6.12): the crashed user waits for its "
			    "timeout\n");
	} else {
		qaic::Pipeline p(dev, e, 4);
		std::string why = p.setup();
		if (why.empty() && !p.run(8).problem.empty())
			why = "first inferences failed";
		p.set_wait_timeout(5000);
		for (unsigned k = 0; why.empty() && k < (quick ? 5u : 20u); k++) {
			const auto t = Clock::now();
			why = mb.run("crash dbc=" + std::to_string(p.dbc()) + " reason=bench");
			if (!why.empty())
				break;
			const qaic::RunResult lost = p.run(1);
			if (lost.error != -EPIPE) {
				why = "after the crash: " + (lost.problem.empty() ? "no error" : lost.problem);
				break;
			}
			why = p.recover();
			if (!why.empty())
				break;
			const qaic::RunResult back = p.run(1);
			if (!back.problem.empty() || back.mismatches)
				why = "after recovery: " + back.problem;
			ssr_ms += 1000 * since(t);
			ssr_n += why.empty();
		}
		if (!why.empty())
			std::printf("SSR: %s\n", why.c_str());
	}
	// The baseline: what a host without SSR does to get the workload back.
	std::string reset_attr;
	std::error_code ec;
	for (const auto &d : std::filesystem::directory_iterator(card.sysfs, ec))
		if (d.path().filename().string().rfind("mhi", 0) == 0 && std::filesystem::exists(d.path() / "soc_reset"))
			reset_attr = (d.path() / "soc_reset").string();
	double reset_ms = 0;
	unsigned reset_n = 0;
	for (unsigned k = 0; !reset_attr.empty() && k < (quick ? 2u : 5u); k++) {
		const auto t = Clock::now();
		std::ofstream(reset_attr) << "1";
		// Offline first (the node stops opening), then ONLINE again.
		for (int i = 0; i < 1000 && qaic::Device::open(card.accel_node()); i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
		auto fresh = open_online(card, 60);
		if (!fresh)
			break;
		qaic::Pipeline p(*fresh, e, 4);
		if (!p.setup().empty() || !p.run(1).problem.empty())
			break;
		reset_ms += 1000 * since(t);
		reset_n++;
	}
	if (ssr_n)
		std::printf("SSR recovery:  %8.1f ms (mean of %u)\n", ssr_ms / ssr_n, ssr_n);
	if (reset_n)
		std::printf("card reset:    %8.1f ms (mean of %u)\n", reset_ms / reset_n, reset_n);
	if (ssr_n && reset_n)
		std::printf("ratio (card reset / SSR): %.1f\n", (reset_ms / reset_n) / (ssr_ms / ssr_n));
}

} // namespace

int main(int argc, char **argv)
{
	std::string nvme = "/dev/nvme0n1";
	bool quick = false;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if (a == "--nvme" && i + 1 < argc)
			nvme = argv[++i];
		else if (a == "--quick")
			quick = true;
	}
	auto cards = qaic::find_cards();
	std::optional<qaic::Device> dev;
	for (int i = 0; i < 600 && !cards.empty() && cards[0].accel_minor && !dev; i++) {
		dev = qaic::Device::open(cards[0].accel_node());
		if (!dev)
			usleep(100000);
	}
	if (!dev) {
		std::fprintf(stderr, "no ONLINE card\n");
		return 1;
	}
	bulk(*dev, quick);
	small(*dev, nvme, quick);
	matmul(*dev, quick);
	recovery(cards[0], *dev, quick);
	return 0;
}
