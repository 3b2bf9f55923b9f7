// SPDX-License-Identifier: GPL-2.0-or-later
// Data-path benchmarks, run inside a guest by bench/run, which sets them
// against baselines measured on the host in the same run (host memcpy,
// OpenBLAS; bench/host_bench.cc):
//  * bulk DMA to and from the card (4 KiB .. 64 MiB), end to end, and the
//    card's own time for the same transfers (its DMA Bridge times its
//    copies; read through the test mailbox's dma-stats). Every payload
//    makes the round trip and is compared;
//  * small requests (4 KiB, EXECUTE_BO + WAIT_BO one at a time) from 1, 2
//    and 4 threads on as many DBCs vs as many threads reading 4 KiB with
//    O_DIRECT from QEMU's emulated NVMe on a null backend in the same guest
//    (the same emulator's request path, multi-queue), in alternating
//    windows, the best window of each side compared;
//  * NSP matmul (the int8 and fp32 example workloads, pipelined), every
//    output checked against the host reference;
//  * getting a crashed workload back: SSR (crash, EPIPE, re-activate the
//    loaded ELF, one correct inference) vs resetting the whole card (SoC
//    reset, ONLINE, load, activate, one inference). Needs the card's test
//    mailbox (-device aic100,test-mailbox=on) to crash it; last, as the
//    baseline resets the card.
// Usage: aic100-datapath-bench [--nvme /dev/nvme0n1] [--quick] [--json FILE]
//                              [--only bulk|small|workloads|recovery]
//                              [--threads N[,N...]] [--card none]
// --only runs one part (e.g. the 4 KiB requests under a trace,
// docs/performance.md). --threads gives the numbers of submitting threads
// of the small requests (default 1,2,4; at most 16, the card's DBCs);
// --nvme none leaves the NVMe's windows out, --card none the card's (to
// profile one of them alone, bench/profile-requests).
// --json writes every figure, with the configuration it was measured in
// (driver, kernel, MSI vectors, IOMMU), to FILE.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/utsname.h>
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

// Figures as JSON, written by hand: objects of numbers, strings, booleans
// and nested arrays of objects, in the order they were added.
class Json {
public:
	Json &num(const std::string &k, double v)
	{
		char b[64];
		// Whole numbers (sizes, counts) exactly; the rest to 6 digits.
		if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 9e15)
			std::snprintf(b, sizeof(b), "%.0f", v);
		else
			std::snprintf(b, sizeof(b), "%.6g", v);
		return raw(k, std::isfinite(v) ? b : "null");
	}
	Json &str(const std::string &k, const std::string &v)
	{
		std::string q = "\"";
		for (char c : v) {
			if (c == '"' || c == '\\')
				q += '\\';
			if (static_cast<unsigned char>(c) >= 0x20)
				q += c;
		}
		return raw(k, q + "\"");
	}
	Json &flag(const std::string &k, bool v) { return raw(k, v ? "true" : "false"); }
	Json &list(const std::string &k, const std::vector<Json> &v)
	{
		std::string a = "[";
		for (size_t i = 0; i < v.size(); i++)
			a += (i ? ", " : "") + v[i].text();
		return raw(k, a + "]");
	}
	Json &obj(const std::string &k, const Json &v) { return raw(k, v.text()); }
	std::string text() const { return "{" + body_ + "}"; }

private:
	Json &raw(const std::string &k, const std::string &v)
	{
		body_ += (body_.empty() ? "\"" : ", \"") + k + "\": " + v;
		return *this;
	}
	std::string body_;
};

// The DMA Bridge's counters of one DBC, through the test mailbox.
struct DmaStats {
	uint64_t requests = 0, errors = 0, bytes_in = 0, bytes_out = 0, copy_ns_in = 0, copy_ns_out = 0,
		 request_ns = 0, doorbells = 0, doorbell_ns = 0, now_ns = 0;
};

std::optional<DmaStats> dma_stats(const qaic::Mailbox &mb, uint32_t dbc)
{
	if (!mb.ok())
		return std::nullopt;
	std::string answer;
	if (!mb.ask("dma-stats dbc=" + std::to_string(dbc), answer).empty())
		return std::nullopt;
	DmaStats st;
	const std::pair<const char *, uint64_t *> keys[] = {
		{"requests", &st.requests},     {"errors", &st.errors},       {"bytes_in", &st.bytes_in},
		{"bytes_out", &st.bytes_out},   {"copy_ns_in", &st.copy_ns_in}, {"copy_ns_out", &st.copy_ns_out},
		{"request_ns", &st.request_ns}, {"doorbells", &st.doorbells},   {"doorbell_ns", &st.doorbell_ns},
		{"now_ns", &st.now_ns},
	};
	for (const auto &[k, v] : keys) {
		const std::string key = std::string(" ") + k + "=";
		const size_t at = (" " + answer).find(key);
		if (at == std::string::npos)
			return std::nullopt;
		*v = std::strtoull(answer.c_str() + at + key.size() - 1, nullptr, 10);
	}
	return st;
}

// What the card saw of the requests between two dma_stats() readings.
struct DeviceSide {
	bool ok = false;
	// The card's copy rate, its time per request, and its wait from a
	// doorbell to fetching the request (QEMU's event loop getting to it).
	double copy_MBps = 0, request_us = 0, doorbell_us = 0;
};

DeviceSide device_side(const std::optional<DmaStats> &a, const std::optional<DmaStats> &b, bool to_device)
{
	DeviceSide d;
	if (!a || !b || b->requests <= a->requests || b->errors != a->errors)
		return d;
	const uint64_t bytes = to_device ? b->bytes_in - a->bytes_in : b->bytes_out - a->bytes_out;
	const uint64_t ns = to_device ? b->copy_ns_in - a->copy_ns_in : b->copy_ns_out - a->copy_ns_out;
	d.ok = true;
	d.copy_MBps = ns ? bytes * 1e3 / ns : 0;
	d.request_us = (b->request_ns - a->request_ns) / 1e3 / (b->requests - a->requests);
	if (b->doorbells > a->doorbells)
		d.doorbell_us = (b->doorbell_ns - a->doorbell_ns) / 1e3 / (b->doorbells - a->doorbells);
	return d;
}

struct Xfer {
	std::optional<qaic::Bo> bo;
	uint32_t dbc;
	bool make(const qaic::Device &dev, const qaic::DataChannel &ch, uint64_t size, qaic::Dir dir)
	{
		bo = qaic::Bo::create(dev, size);
		if (!bo)
			return false;
		qaic_attach_slice_entry s{};
		s.size = size;
		s.dev_addr = ch.ddr_base();
		dbc = ch.dbc();
		return !qaic::attach_slices(dev, bo->handle(), dbc, dir, std::span(&s, 1));
	}
	double submit_s = 0; // time in EXECUTE_BO, summed
	bool once(const qaic::Device &dev, qaic::Dir dir)
	{
		const qaic_execute_entry e{bo->handle(), dir};
		const auto t = Clock::now();
		const bool queued = !qaic::execute(dev, dbc, std::span(&e, 1));
		submit_s += since(t);
		return queued && !qaic::wait(dev, dbc, bo->handle(), 30000);
	}
};

// A payload that differs at every size and offset.
void fill_pattern(uint8_t *p, uint64_t size)
{
	uint32_t x = static_cast<uint32_t>(size) * 2654435761u + 1;
	for (uint64_t i = 0; i < size; i++) {
		x = x * 1664525u + 1013904223u;
		p[i] = static_cast<uint8_t>(x >> 24);
	}
}

std::vector<Json> bulk(const qaic::Device &dev, const qaic::Mailbox &mb, bool quick, bool &ok)
{
	std::vector<Json> rows;
	std::printf("\n== bulk DMA, one request per transfer (MB/s end to end; the card's own copy rate and its time per "
		    "request)\n");
	std::printf("%10s %10s %10s %10s %10s %10s %10s %8s\n", "size", "to card", "dev copy", "dev us", "from card",
		    "dev copy", "dev us", "payload");
	qaic::DataChannel ch(dev, 64ull << 20);
	if (!ch.problem().empty()) {
		std::printf("%s\n", ch.problem().c_str());
		ok = false;
		return rows;
	}
	for (uint64_t size = 4096; size <= (64ull << 20); size *= 4) {
		const double budget = quick ? 0.2 : 0.6;
		Xfer x[2];
		if (!x[0].make(dev, ch, size, qaic::kToDevice) || !x[1].make(dev, ch, size, qaic::kFromDevice)) {
			std::printf("BO setup failed for %llu bytes\n", static_cast<unsigned long long>(size));
			ok = false;
			return rows;
		}
		fill_pattern(x[0].bo->data(), size);
		std::memset(x[1].bo->data(), 0, size);
		double rate[2] = {};
		DeviceSide devside[2];
		uint64_t count[2] = {};
		double secs[2] = {};
		for (int d = 0; d < 2; d++) {
			const qaic::Dir dir = d ? qaic::kFromDevice : qaic::kToDevice;
			const auto before = dma_stats(mb, x[d].dbc);
			const auto t = Clock::now();
			while (since(t) < budget && x[d].once(dev, dir))
				count[d]++;
			secs[d] = since(t);
			rate[d] = count[d] * size / secs[d] / 1e6;
			devside[d] = device_side(before, dma_stats(mb, x[d].dbc), !d);
		}
		// The last transfer to the card left the pattern in its DDR, and
		// the last one back brought it home.
		const bool same = count[0] && count[1] && !std::memcmp(x[0].bo->data(), x[1].bo->data(), size);
		ok = ok && same;
		std::printf("%10llu %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %8s\n", static_cast<unsigned long long>(size),
			    rate[0], devside[0].copy_MBps, devside[0].request_us, rate[1], devside[1].copy_MBps,
			    devside[1].request_us, same ? "same" : "DIFFERS");
		Json r;
		r.num("size", double(size)).num("to_card_MBps", rate[0]).num("from_card_MBps", rate[1]);
		if (devside[0].ok)
			r.num("to_card_device_copy_MBps", devside[0].copy_MBps)
				.num("to_card_device_us", devside[0].request_us)
				.num("to_card_doorbell_us", devside[0].doorbell_us);
		if (devside[1].ok)
			r.num("from_card_device_copy_MBps", devside[1].copy_MBps)
				.num("from_card_device_us", devside[1].request_us)
				.num("from_card_doorbell_us", devside[1].doorbell_us);
		r.num("to_card_host_us", count[0] ? secs[0] * 1e6 / count[0] : 0)
			.num("from_card_host_us", count[1] ? secs[1] * 1e6 / count[1] : 0)
			.flag("payload_ok", same);
		rows.push_back(r);
	}
	if (!mb.ok())
		std::printf("(no device-side figures: %s)\n", mb.problem().c_str());
	return rows;
}

// The best window of each side and the mean over all of them. The host is
// shared with other work whose load comes and goes: windows of the NVMe
// and of the card alternate, so that both meet it alike, and the best
// window of each is what the emulator does when left alone.
struct Windows {
	double best = 0; // req/s
	uint64_t requests = 0;
	double secs = 0;
	void add(uint64_t n, double s)
	{
		requests += n;
		secs += s;
		if (s > 0)
			best = std::max(best, n / s);
	}
	double mean() const { return secs > 0 ? requests / secs : 0; }
};

// @n threads (not pinned: the guest's scheduler places them, for the card
// and the NVMe alike), each calling one(i) until @secs have passed or a
// call fails. Adds the requests of all of them to @w and to per[i]; false
// if a call failed.
template <typename One> bool window_of(unsigned n, double secs, Windows &w, std::vector<uint64_t> &per, One one)
{
	std::vector<uint64_t> got(n);
	std::atomic<bool> failed = false;
	std::vector<std::thread> th;
	const auto t = Clock::now();
	for (unsigned i = 0; i < n; i++)
		th.emplace_back([&, i] {
			while (!failed && since(t) < secs) {
				if (!one(i)) {
					failed = true;
					break;
				}
				got[i]++;
			}
		});
	for (auto &x : th)
		x.join();
	const double s = since(t);
	uint64_t all = 0;
	for (unsigned i = 0; i < n; i++) {
		per[i] += got[i];
		all += got[i];
	}
	w.add(all, s);
	return !failed;
}

// One line of the small requests' table: n submitters on each side.
struct SmallLine {
	unsigned n;
	double card, card_mean, nvme, nvme_mean;
	std::string detail;
	bool same;
};

// What small() measures with, and what it found so far.
struct SmallRun {
	const qaic::Device &dev;
	const qaic::Mailbox &mb;
	int fd;       // the NVMe, or -1
	bool nvme_ok; // opened, and its reads have not failed
	bool card_on;
	unsigned rounds;
	double window;
	std::vector<Json> rows, nvme_rows;
	std::vector<SmallLine> lines;
};

// The card's side of n submitters: a DBC each, with a 4 KiB BO to the card
// holding a pattern and one back from it.
struct CardSubmitters {
	std::vector<std::unique_ptr<qaic::DataChannel>> chs;
	std::vector<Xfer> xs, back;

	explicit CardSubmitters(unsigned n) : xs(n), back(n) {}

	// false when a DBC or a BO could not be set up
	bool make(const qaic::Device &dev, bool card_on)
	{
		bool setup = true;
		for (unsigned i = 0; card_on && i < xs.size(); i++) {
			chs.push_back(std::make_unique<qaic::DataChannel>(dev));
			setup = setup && chs.back()->problem().empty() &&
				xs[i].make(dev, *chs.back(), 4096, qaic::kToDevice) &&
				back[i].make(dev, *chs.back(), 4096, qaic::kFromDevice);
			if (setup) {
				fill_pattern(xs[i].bo->data(), 4096 + i);
				std::memset(back[i].bo->data(), 0, 4096);
			}
		}
		return setup;
	}
};

// The NVMe's side of n submitters: a buffer and a 4 MiB stretch of the
// disk each.
class NvmeReaders {
public:
	NvmeReaders(int fd, unsigned n) : fd_(fd), bufs_(n), next_(n)
	{
		for (auto &b : bufs_)
			if (posix_memalign(&b, 4096, 4096))
				b = nullptr;
	}
	~NvmeReaders()
	{
		for (auto b : bufs_)
			free(b);
	}
	NvmeReaders(const NvmeReaders &) = delete;
	NvmeReaders &operator=(const NvmeReaders &) = delete;

	bool ready() const { return std::all_of(bufs_.begin(), bufs_.end(), [](void *b) { return b; }); }

	// Reader i's next 4 KiB.
	bool one(unsigned i)
	{
		const off_t at = static_cast<off_t>(((next_[i]++ % 1024) + 1024 * i) * 4096);
		return pread(fd_, bufs_[i], 4096, at) == 4096;
	}

private:
	int fd_;
	std::vector<void *> bufs_;
	std::vector<uint64_t> next_;
};

// What the card's side of a series of windows comes to: the card's time
// per request and from doorbell to fetch (from its counters), the time in
// EXECUTE_BO, and whether every payload made the round trip.
struct CardFigures {
	double dev_us = 0, bell_us = 0, submit_us = 0;
	unsigned dev_n = 0;
	bool same = false;
};

CardFigures card_figures(const SmallRun &run, CardSubmitters &c, const std::vector<std::optional<DmaStats>> &before,
			 const std::vector<uint64_t> &counts, bool card_ok)
{
	const unsigned n = unsigned(c.xs.size());
	CardFigures f;
	f.same = card_ok;
	for (unsigned i = 0; run.card_on && i < n; i++) {
		const DeviceSide d = device_side(before[i], dma_stats(run.mb, c.xs[i].dbc), true);
		if (d.ok) {
			f.dev_us += d.request_us;
			f.bell_us += d.doorbell_us;
			f.dev_n++;
		}
		f.submit_us += counts[i] ? c.xs[i].submit_s * 1e6 / counts[i] / n : 0;
		f.same = f.same && counts[i] && c.back[i].once(run.dev, qaic::kFromDevice) &&
			 !std::memcmp(c.back[i].bo->data(), c.xs[i].bo->data(), 4096);
	}
	return f;
}

// The table line and the JSON rows of n submitters.
void add_small_rows(SmallRun &run, unsigned n, const Windows &card, const Windows &nvme, const CardFigures &f)
{
	const double rate = card.best, lat = rate > 0 ? n / rate * 1e6 : 0;
	char detail[256];
	int at = std::snprintf(detail, sizeof(detail), "%.1f us each per DBC; EXECUTE_BO %.1f us", lat, f.submit_us);
	if (f.dev_n)
		std::snprintf(detail + at, sizeof(detail) - at, ", doorbell to fetch %.1f us, on the card %.1f us",
			      f.bell_us / f.dev_n, f.dev_us / f.dev_n);
	const double nv = run.nvme_ok ? nvme.best : 0;
	run.lines.push_back({n, rate, card.mean(), nv, run.nvme_ok ? nvme.mean() : 0, detail, f.same});
	Json r;
	r.num("dbcs", n).num("req_per_s", rate).num("req_per_s_per_dbc", rate / n).num("us", lat);
	r.num("mean_req_per_s", card.mean()).num("submit_us", f.submit_us);
	if (f.dev_n)
		r.num("device_us", f.dev_us / f.dev_n).num("doorbell_us", f.bell_us / f.dev_n);
	if (nv > 0)
		r.num("nvme_threads", n).num("nvme_req_per_s", nv);
	r.flag("payload_ok", f.same);
	if (run.card_on)
		run.rows.push_back(r);
	if (nv > 0) {
		Json j;
		j.num("threads", n).num("req_per_s", nv).num("us", n / nv * 1e6).num("mean_req_per_s", nvme.mean());
		run.nvme_rows.push_back(j);
	}
}

// n submitting threads on each side, in alternating windows; false when
// the card's side could not be set up or a payload came back different.
bool small_for(SmallRun &run, unsigned n)
{
	CardSubmitters c(n);
	if (!c.make(run.dev, run.card_on)) {
		std::printf("%u DBCs: setup failed\n", n);
		return false;
	}
	std::optional<NvmeReaders> readers(std::in_place, run.fd, n);
	run.nvme_ok = run.nvme_ok && readers->ready();
	const auto nvme_one = [&](unsigned i) { return readers->one(i); };
	const auto card_one = [&](unsigned i) { return c.xs[i].once(run.dev, qaic::kToDevice); };

	std::vector<std::optional<DmaStats>> before(n);
	for (unsigned i = 0; i < n; i++)
		before[i] = dma_stats(run.mb, c.xs[i].dbc);
	Windows card, nvme;
	std::vector<uint64_t> counts(n), nvme_counts(n);
	bool card_ok = true;
	for (unsigned r = 0; r < run.rounds && card_ok; r++) {
		if (run.nvme_ok)
			run.nvme_ok = window_of(n, run.window, nvme, nvme_counts, nvme_one);
		if (run.card_on)
			card_ok = window_of(n, run.window, card, counts, card_one);
	}
	readers.reset();
	if (!run.nvme_ok && run.fd >= 0)
		std::printf("baseline: the NVMe's reads failed\n");
	const CardFigures f = card_figures(run, c, before, counts, card_ok);
	add_small_rows(run, n, card, nvme, f);
	return f.same;
}

// Scaling: each side against its own single submitter, and the card
// against the NVMe with as many submitters.
void print_small_table(const std::vector<SmallLine> &lines)
{
	const double card1 = lines.empty() || lines[0].n != 1 ? 0 : lines[0].card;
	const double nvme1 = lines.empty() || lines[0].n != 1 ? 0 : lines[0].nvme;
	std::printf("%10s %12s %8s %12s %8s %10s  %s\n", "submitters", "card req/s", "x 1 DBC", "NVMe req/s",
		    "x 1 thr", "card/NVMe", "(best windows; the card's details)");
	for (const auto &l : lines) {
		std::printf("%10u %12.0f %8.2f %12.0f %8.2f %10.3f  %s; mean of all windows: card %.0f, NVMe %.0f "
			    "req/s; payload %s\n",
			    l.n, l.card, card1 > 0 ? l.card / card1 : 0, l.nvme, nvme1 > 0 ? l.nvme / nvme1 : 0,
			    l.nvme > 0 ? l.card / l.nvme : 0, l.detail.c_str(), l.card_mean, l.nvme_mean,
			    l.same ? "same" : "DIFFERS");
	}
}

// 4 KiB requests, one outstanding per submitting thread: the card with one
// thread per DBC, against the same number of threads reading 4 KiB with
// O_DIRECT from QEMU's NVMe (one I/O queue per guest CPU) on null-co in the
// same guest. With as many submitters as the guest has CPUs and more, the
// NVMe's aggregate is what this emulator and machine reach with a
// multi-queue device: the limit the card's aggregate is judged against.
Json small(const qaic::Device &dev, const qaic::Mailbox &mb, const std::string &nvme_dev,
	   const std::vector<unsigned> &threads, bool card_on, bool quick, bool &ok)
{
	Json out;
	const unsigned rounds = 8;
	const double window = (quick ? 1.0 : 4.0) / rounds;
	const unsigned cpus = std::thread::hardware_concurrency();
	std::printf("\n== small requests: 4 KiB, one at a time per submitting thread (the card: a DBC per thread, "
		    "EXECUTE_BO + WAIT_BO), against as many threads reading 4 KiB O_DIRECT from QEMU's NVMe on "
		    "null-co; threads not pinned, %u guest CPUs; best of %u interleaved %.0f ms windows each\n",
		    cpus, rounds, window * 1e3);
	const bool no_nvme = nvme_dev == "none";
	const int fd = no_nvme ? -1 : ::open(nvme_dev.c_str(), O_RDONLY | O_DIRECT);
	SmallRun run{dev, mb, fd, fd >= 0, card_on, rounds, window, {}, {}, {}};
	if (!run.nvme_ok)
		std::printf("baseline: %s\n", no_nvme ? "left out (--nvme none)" : ("no NVMe at " + nvme_dev).c_str());
	for (unsigned n : threads)
		if (!small_for(run, n))
			ok = false;
	print_small_table(run.lines);
	const auto &lines = run.lines;
	const double nvme1 = lines.empty() || lines[0].n != 1 ? 0 : lines[0].nvme;
	// The single-thread NVMe figure, as earlier runs had it.
	if (nvme1 > 0)
		out.num("nvme_req_per_s", nvme1).num("nvme_us", 1e6 / nvme1).num("nvme_mean_req_per_s", lines[0].nvme_mean);
	out.num("windows", rounds).num("window_s", window).num("guest_cpus", cpus).flag("threads_pinned", false);
	out.list("nvme", run.nvme_rows);
	out.list("card", run.rows);
	if (fd >= 0)
		::close(fd);
	return out;
}

std::vector<Json> matmul(const qaic::Device &dev, bool quick, bool &ok)
{
	namespace wl = aic100::workloads;
	std::vector<Json> rows;
	std::printf("\n== NSP example workloads, pipelined (depth 8), every output checked against the reference\n");
	for (const char *name : {"matmul_i8", "matmul_f32", "mlp_f32"}) {
		const wl::Example *e = wl::find(name);
		qaic::Pipeline p(dev, *e, 8);
		if (const auto why = p.setup(); !why.empty()) {
			std::printf("%s: %s\n", name, why.c_str());
			ok = false;
			continue;
		}
		const uint64_t n = quick ? 50 : 300;
		const qaic::RunResult r = p.run(n, true);
		const bool good = r.problem.empty() && !r.mismatches && r.inferences == n;
		ok = ok && good;
		const double card = r.seconds > 0 ? r.inferences / r.seconds : 0;
		std::printf("%-11s %8.1f inf/s, %llu of %llu outputs right%s%s\n", name, card,
			    static_cast<unsigned long long>(r.inferences - r.mismatches),
			    static_cast<unsigned long long>(n), r.problem.empty() ? "" : ("; " + r.problem).c_str(),
			    r.mismatches ? ("; " + r.first_mismatch).c_str() : "");
		Json j;
		j.str("name", name).num("inf_per_s", card).num("inferences", double(r.inferences)).flag("outputs_ok", good);
		rows.push_back(j);
	}
	return rows;
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

Json recovery(const qaic::Card &card, const qaic::Device &dev, bool quick)
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
	Json j;
	if (ssr_n)
		j.num("ssr_ms", ssr_ms / ssr_n);
	if (reset_n)
		j.num("reset_ms", reset_ms / reset_n);
	return j;
}

// What the figures were measured in, read from the guest rather than
// assumed: the driver (ours has the SSR client's dbcN_state attributes),
// the kernel, the MSI vectors the card got, whether an IOMMU translates its
// DMA.
Json configuration(const qaic::Card &card)
{
	utsname u{};
	uname(&u);
	unsigned msis = 0;
	std::error_code ec;
	for (const auto &d : std::filesystem::directory_iterator(card.sysfs + "/msi_irqs", ec)) {
		(void)d;
		msis++;
	}
	const bool ours = std::filesystem::exists("/sys/class/accel/accel" + std::to_string(*card.accel_minor) +
						  "/dbc0_state");
	const bool iommu = std::filesystem::exists(card.sysfs + "/iommu_group");
	Json j;
	j.str("driver", ours ? "ours" : "upstream").str("kernel", u.release).num("msi_vectors", msis)
		.flag("iommu", iommu);
	std::printf("configuration: driver %s, kernel %s, %u MSI vector%s, IOMMU %s\n", ours ? "ours" : "upstream",
		    u.release, msis, msis == 1 ? "" : "s", iommu ? "on" : "off");
	return j;
}

// The command line.
struct Options {
	std::string nvme = "/dev/nvme0n1", json_path, only;
	std::vector<unsigned> threads = {1, 2, 4};
	bool quick = false, card_on = true;
};

// How an option took its value: Usage when it is missing or not one the
// option takes, Refused when the option said why itself.
enum class Took { Ok, Usage, Refused };

// --threads N[,N...]: counts from 1 to 16.
Took take_threads(Options &o, const std::string &list)
{
	o.threads.clear();
	for (size_t at = 0; at <= list.size();) {
		const size_t end = std::min(list.find(',', at), list.size());
		const std::string item = list.substr(at, end - at);
		const unsigned long n = std::strtoul(item.c_str(), nullptr, 10);
		if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || n < 1 || n > 16) {
			std::fprintf(stderr, "--threads %s: give counts from 1 to 16, comma-separated\n", list.c_str());
			return Took::Refused;
		}
		o.threads.push_back(static_cast<unsigned>(n));
		at = end + 1;
	}
	return Took::Ok;
}

const struct Option {
	const char *name;
	bool has_value;
	Took (*take)(Options &o, const std::string &value);
} kOptions[] = {
	{"--nvme", true, [](Options &o, const std::string &v) { return o.nvme = v, Took::Ok; }},
	{"--json", true, [](Options &o, const std::string &v) { return o.json_path = v, Took::Ok; }},
	{"--quick", false, [](Options &o, const std::string &) { return o.quick = true, Took::Ok; }},
	{"--card", true,
	 [](Options &o, const std::string &v) { return v == "none" ? (o.card_on = false, Took::Ok) : Took::Usage; }},
	{"--threads", true, take_threads},
	{"--only", true,
	 [](Options &o, const std::string &v) {
		 if (v != "bulk" && v != "small" && v != "workloads" && v != "recovery")
			 return Took::Usage;
		 o.only = v;
		 return Took::Ok;
	 }},
};

// `o` from the arguments; an exit status when they are wrong.
std::optional<int> parse_options(int argc, char **argv, Options &o)
{
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		const Option *opt = nullptr;
		for (const Option &x : kOptions)
			if (a == x.name)
				opt = &x;
		Took took = Took::Usage;
		if (opt && (!opt->has_value || i + 1 < argc))
			took = opt->take(o, opt->has_value ? argv[i + 1] : "");
		if (took == Took::Refused)
			return 2;
		if (took == Took::Usage) {
			std::fprintf(stderr, "usage: aic100-datapath-bench [--nvme DEV] [--quick] [--json FILE] "
					     "[--only bulk|small|workloads|recovery] [--threads N[,N...]] "
					     "[--card none]\n");
			return 2;
		}
		i += opt->has_value;
	}
	return std::nullopt;
}

// The first card, once it is ONLINE (a minute at most).
std::optional<qaic::Device> open_first_card(const std::vector<qaic::Card> &cards)
{
	std::optional<qaic::Device> dev;
	for (int i = 0; i < 600 && !cards.empty() && cards[0].accel_minor && !dev; i++) {
		dev = qaic::Device::open(cards[0].accel_node());
		if (!dev)
			usleep(100000);
	}
	return dev;
}

// The parts --only asks for, or all of them, into `all`.
void run_parts(const Options &o, const qaic::Card &card, const qaic::Device &dev, Json &all, bool &ok)
{
	const auto part = [&](const char *name) { return o.only.empty() || o.only == name; };
	{
		const qaic::Mailbox mb(card.bdf);
		if (part("bulk"))
			all.list("bulk", bulk(dev, mb, o.quick, ok));
		if (part("small"))
			all.obj("small", small(dev, mb, o.nvme, o.threads, o.card_on, o.quick, ok));
	}
	if (part("workloads"))
		all.list("workloads", matmul(dev, o.quick, ok));
	if (part("recovery"))
		all.obj("recovery", recovery(card, dev, o.quick));
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	if (const auto rc = parse_options(argc, argv, o))
		return *rc;
	const auto cards = qaic::find_cards();
	const std::optional<qaic::Device> dev = open_first_card(cards);
	if (!dev) {
		std::fprintf(stderr, "no ONLINE card\n");
		return 1;
	}
	Json all;
	all.obj("configuration", configuration(cards[0]));
	bool ok = true;
	run_parts(o, cards[0], *dev, all, ok);
	all.flag("outputs_ok", ok);
	if (!o.json_path.empty()) {
		std::ofstream f(o.json_path);
		f << all.text() << "\n";
		if (!f) {
			std::fprintf(stderr, "cannot write %s\n", o.json_path.c_str());
			return 1;
		}
	}
	if (!ok)
		std::printf("\nFAILED: an output or payload was wrong, or a benchmark could not run\n");
	return ok ? 0 : 1;
}
