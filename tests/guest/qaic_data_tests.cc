// SPDX-License-Identifier: GPL-2.0-or-later
// In-guest checks of the data path, reported as KTAP: example workloads run
// end to end through the driver (BOs, slices, EXECUTE_BO, WAIT_BO) on the
// card's DMA Bridge and NSPs; pipelining; many processes at once; partial
// execute; a foreign dma-buf (udmabuf) imported as a BO; the errnos of the
// BO and slice ioctls; and where a DBC's interrupt is delivered.
// Usage: qaic-data-tests [--card N] [--upstream 1] [--inferences N]
//                        [--networks DIR]
// --networks: the build's compiled networks (tools/qpc-networks), whose
// 64×64 ResNet-50 the qpc_containers case also runs against its reference
// pairs.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sched.h>
#include <linux/dma-buf.h>
#include <linux/udmabuf.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datapath.h"
#include "driver_under_test.h"
#include "guest_util.h"
#include "ktap.h"
#include "nnc_client.h"
#include "examples.h"
#include "pipeline.h"
#include "qaic.h"
#include "qpc_pipeline.h"
#include "workloads.h"

namespace {

namespace wl = aic100::workloads;

struct Options {
	unsigned card = 0;
	bool upstream = false;
	unsigned inferences = 1000;
	std::string networks;
};

std::vector<uint8_t> slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	return f ? std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {}) : std::vector<uint8_t>();
}

std::string node_of(unsigned card)
{
	const auto cards = qaic::find_cards();
	return card < cards.size() && cards[card].accel_minor ? cards[card].accel_node() : std::string();
}

std::optional<qaic::Device> open_card(ktap::Case &t, unsigned card)
{
	const std::string node = node_of(card);
	for (int i = 0; i < 600 && !node.empty(); i++) {
		if (auto d = qaic::Device::open(node))
			return d;
		usleep(100000);
	}
	t.expect(false, "card %u: no ONLINE accel node", card);
	return std::nullopt;
}

// A workload's run through a Pipeline, reported into the case.
bool run_workload(ktap::Case &t, const qaic::Device &dev, const std::string &name, uint64_t n, unsigned depth)
{
	const wl::Example *e = wl::find(name);
	if (!e) {
		t.expect(false, "no workload %s", name.c_str());
		return false;
	}
	qaic::Pipeline p(dev, *e, depth);
	if (const std::string why = p.setup(); !why.empty()) {
		t.expect(false, "%s: %s", name.c_str(), why.c_str());
		return false;
	}
	const qaic::RunResult r = p.run(n);
	t.expect(r.problem.empty(), "%s: %s", name.c_str(), r.problem.c_str());
	t.expect(r.inferences == n, "%s: %llu of %llu inferences", name.c_str(),
		 static_cast<unsigned long long>(r.inferences), static_cast<unsigned long long>(n));
	t.expect(!r.mismatches, "%s: %llu wrong outputs; %s", name.c_str(), static_cast<unsigned long long>(r.mismatches),
		 r.first_mismatch.c_str());
	t.note("%s: %llu inferences in %.2f s on DBC %u", name.c_str(), static_cast<unsigned long long>(r.inferences),
	       r.seconds, p.dbc());
	return !t.failed();
}

// A DBC with a 16 MiB window and no program, reported into the case.
bool open_channel(ktap::Case &t, const qaic::DataChannel &ch)
{
	t.expect(ch.problem().empty(), "%s", ch.problem().c_str());
	return ch.problem().empty();
}

// The card and a DBC with a 16 MiB window, opened for a case (which is
// told what is missing).
struct CardChannel {
	std::optional<qaic::Device> dev;
	std::optional<qaic::DataChannel> ch;

	CardChannel(ktap::Case &t, unsigned card) : dev(open_card(t, card))
	{
		if (dev && open_channel(t, ch.emplace(*dev)))
			return;
		ch.reset();
	}
	bool ok() const { return ch.has_value(); }
};

qaic_attach_slice_entry slice(uint64_t size, uint64_t dev_addr, uint64_t offset = 0)
{
	qaic_attach_slice_entry s{};
	s.size = size;
	s.dev_addr = dev_addr;
	s.offset = offset;
	return s;
}

// Memory of another driver: a udmabuf (CONFIG_UDMABUF, built into Debian's
// kernel) over a memfd, which this process maps and the card reaches only
// through the dma-buf.
class Udmabuf {
public:
	static std::optional<Udmabuf> create(size_t size, std::string *why)
	{
		Udmabuf u;
		u.size_ = size;
		u.memfd_ = memfd_create("qaic-import", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (u.memfd_ < 0)
			return fail(why, "memfd_create");
		if (ftruncate(u.memfd_, static_cast<off_t>(size)) || fcntl(u.memfd_, F_ADD_SEALS, F_SEAL_SHRINK))
			return fail(why, "ftruncate/F_SEAL_SHRINK of the memfd");
		void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, u.memfd_, 0);
		if (p == MAP_FAILED)
			return fail(why, "mmap of the memfd");
		u.map_ = static_cast<uint8_t *>(p);
		const int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
		if (dev < 0)
			return fail(why, "open /dev/udmabuf");
		udmabuf_create c{};
		c.memfd = static_cast<uint32_t>(u.memfd_);
		c.flags = UDMABUF_FLAGS_CLOEXEC;
		c.size = size;
		u.dmabuf_ = ioctl(dev, UDMABUF_CREATE, &c);
		const int err = errno;
		close(dev);
		if (u.dmabuf_ < 0) {
			errno = err;
			return fail(why, "UDMABUF_CREATE");
		}
		return u;
	}
	Udmabuf(Udmabuf &&o) noexcept { *this = std::move(o); }
	Udmabuf &operator=(Udmabuf &&o) noexcept
	{
		std::swap(memfd_, o.memfd_);
		std::swap(dmabuf_, o.dmabuf_);
		std::swap(map_, o.map_);
		std::swap(size_, o.size_);
		return *this;
	}
	~Udmabuf()
	{
		if (map_)
			munmap(map_, size_);
		if (dmabuf_ >= 0)
			close(dmabuf_);
		if (memfd_ >= 0)
			close(memfd_);
	}
	int dmabuf() const { return dmabuf_; }
	uint8_t *data() const { return map_; }
	// DMA_BUF_IOCTL_SYNC around the CPU's access, as a user of a dma-buf must.
	bool sync(uint64_t flags) const
	{
		dma_buf_sync s{flags};
		return ioctl(dmabuf_, DMA_BUF_IOCTL_SYNC, &s) == 0;
	}

private:
	Udmabuf() = default;
	static std::optional<Udmabuf> fail(std::string *why, const char *what)
	{
		*why = std::string(what) + ": " + std::strerror(errno);
		return std::nullopt;
	}
	int memfd_ = -1, dmabuf_ = -1;
	uint8_t *map_ = nullptr;
	size_t size_ = 0;
};

// DRM_IOCTL_PRIME_FD_TO_HANDLE: 0 or -errno.
int import_dmabuf(const qaic::Device &dev, int fd, uint32_t *handle)
{
	drm_prime_handle p{};
	p.fd = fd;
	const int r = dev.ioctl(DRM_IOCTL_PRIME_FD_TO_HANDLE, &p);
	*handle = p.handle;
	return r;
}

// 4 KiB round trips on one DBC, the BOs attached once.
struct RoundTrip {
	const qaic::Device &dev;
	uint32_t dbc;
	std::optional<qaic::Bo> in, out;
	bool failed = false; // a round trip of until() failed

	RoundTrip(const qaic::Device &d, const qaic::DataChannel &ch) : dev(d), dbc(ch.dbc())
	{
		in = qaic::Bo::create(dev, 4096);
		out = qaic::Bo::create(dev, 4096);
		const auto cs = qaic::copy_slices(4096, ch.ddr_base());
		if (!in || !out || qaic::attach_slices(dev, in->handle(), dbc, qaic::kToDevice, std::span(&cs.in, 1)) ||
		    qaic::attach_slices(dev, out->handle(), dbc, qaic::kFromDevice, std::span(&cs.out, 1)))
			in.reset();
	}
	bool ok() const { return in.has_value(); }
	bool once()
	{
		const qaic_execute_entry e[2] = {{in->handle(), qaic::kToDevice}, {out->handle(), qaic::kFromDevice}};
		return !qaic::execute(dev, dbc, e) && !qaic::wait(dev, dbc, out->handle(), 10000);
	}
	// Round trips until `done` holds (true) or one fails or `secs` pass.
	bool until(const std::function<bool()> &done, double secs)
	{
		const auto t0 = std::chrono::steady_clock::now();
		while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs) {
			if (!once()) {
				failed = true;
				return false;
			}
			if (done())
				return true;
		}
		return false;
	}
};

bool pin_to_cpu(unsigned cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0;
}

std::string trimmed(std::string v)
{
	while (!v.empty() && (v.back() == '\n' || v.back() == ' '))
		v.pop_back();
	return v;
}

void add_tests(ktap::Suite &s, const Options &o)
{
	s.add_isolated("round_trip", 120, [o](ktap::Case &t) {
		CardChannel cc(t, o.card);
		if (!cc.ok())
			return;
		auto &dev = cc.dev;
		auto &ch = *cc.ch;
		const uint64_t base = ch.ddr_base();
		for (uint64_t n : {1ull, 4095ull, 4096ull, 65536ull, 1ull << 20, 8ull << 20}) {
			auto in = qaic::Bo::create(*dev, n), out = qaic::Bo::create(*dev, n);
			if (!in || !out)
				return t.expect(false, "CREATE_BO of %llu bytes", static_cast<unsigned long long>(n));
			for (uint64_t i = 0; i < n; i++)
				in->data()[i] = static_cast<uint8_t>(i * 131 + n);
			const auto cs = qaic::copy_slices(n, base);
			t.expect(!qaic::attach_slices(*dev, in->handle(), ch.dbc(), qaic::kToDevice, std::span(&cs.in, 1)),
				 "attach in");
			t.expect(!qaic::attach_slices(*dev, out->handle(), ch.dbc(), qaic::kFromDevice,
						      std::span(&cs.out, 1)),
				 "attach out");
			const qaic_execute_entry e[2] = {{in->handle(), qaic::kToDevice}, {out->handle(), qaic::kFromDevice}};
			t.expect(!qaic::execute(*dev, ch.dbc(), e), "EXECUTE_BO");
			const int r = qaic::wait(*dev, ch.dbc(), out->handle(), 10000);
			t.expect(!r, "WAIT_BO: %s", qaic::errno_name(r).c_str());
			t.expect(std::memcmp(in->data(), out->data(), n) == 0, "%llu bytes came back different",
				 static_cast<unsigned long long>(n));
			qaic_perf_stats_entry ps{};
			ps.handle = out->handle();
			t.expect(!qaic::perf_stats(*dev, ch.dbc(), std::span(&ps, 1)), "PERF_STATS_BO");
		}
	});

	s.add_isolated("workloads", 300, [o](ktap::Case &t) {
		auto dev = open_card(t, o.card);
		if (!dev)
			return;
		for (const auto &e : wl::examples())
			run_workload(t, *dev, e.layout.name, 50, 4);
	});

	// Every example packed as a program container and run the way the open
	// UMD runs one (docs/qpc.md): constants by LOAD_CONSTANTS_EX/_PAYLOAD,
	// the slices of the metadata's DMA requests.
	s.add_isolated("qpc_containers", 300, [o](ktap::Case &t) {
		auto dev = open_card(t, o.card);
		if (!dev)
			return;
		for (const auto &e : wl::examples()) {
			const std::string &name = e.layout.name;
			std::string err;
			const auto spec = aic100::qpc::example_spec(e, err);
			const auto file = spec ? aic100::qpc::build_qpc(*spec, err) : std::nullopt;
			const auto p = file ? aic100::qpc::read_qpc(*file, err) : std::nullopt;
			if (!p) {
				t.expect(false, "%s: packing: %s", name.c_str(), err.c_str());
				continue;
			}
			qaic::QpcPipeline q(*dev, *p, 4);
			if (const std::string why = q.setup(); !why.empty()) {
				t.expect(false, "%s: %s", name.c_str(), why.c_str());
				continue;
			}
			const uint64_t n = 30;
			const qaic::RunResult r = q.run(
				n, [&e](uint64_t i) { return e.make_input(i + 1); },
				[&e](uint64_t i, std::span<const uint8_t> out) {
					std::string why;
					if (!wl::matches(e, out, e.reference(e.make_input(i + 1)), why))
						return why;
					return std::string();
				});
			t.expect(r.problem.empty(), "%s: %s", name.c_str(), r.problem.c_str());
			t.expect(r.inferences == n && !r.mismatches, "%s: %llu of %llu inferences, %llu wrong; %s",
				 name.c_str(), static_cast<unsigned long long>(r.inferences),
				 static_cast<unsigned long long>(n), static_cast<unsigned long long>(r.mismatches),
				 r.first_mismatch.c_str());
			t.note("%s (qpc, %zu constant bytes): %llu inferences in %.2f s on DBC %u", name.c_str(),
			       p->static_constants.size(), static_cast<unsigned long long>(r.inferences), r.seconds, q.dbc());
		}
		if (o.networks.empty())
			return;
		// The compiled ResNet-50 at 64×64 (docs/compiler.md), checked
		// against the reference pairs the build wrote next to it.
		const std::string dir = o.networks + "/4nsp-quant-resnet50-r64";
		const auto file = slurp(dir + "/programqpc.bin");
		std::string err;
		const auto p = aic100::qpc::read_qpc(file, err);
		if (!p) {
			t.expect(false, "%s/programqpc.bin: %s", dir.c_str(), file.empty() ? "cannot read it" : err.c_str());
			return;
		}
		std::vector<std::vector<uint8_t>> in, want;
		for (int k = 0; k < 2; k++) {
			in.push_back(slurp(dir + "/input." + std::to_string(k) + ".bin"));
			want.push_back(slurp(dir + "/output." + std::to_string(k) + ".bin"));
			t.expect(!in.back().empty() && !want.back().empty(), "%s: reference pair %d missing", dir.c_str(), k);
		}
		qaic::QpcPipeline q(*dev, *p, 2);
		if (const std::string why = q.setup(); !why.empty()) {
			t.expect(false, "resnet50-r64: %s", why.c_str());
			return;
		}
		const uint64_t n = 8;
		const qaic::RunResult r = q.run(
			n, [&in](uint64_t i) { return in[i % 2]; },
			[&want](uint64_t i, std::span<const uint8_t> out) {
				const auto &w = want[i % 2];
				if (out.size() != w.size() || !std::equal(out.begin(), out.end(), w.begin()))
					return std::string("the logits differ from the reference's");
				return std::string();
			});
		t.expect(r.problem.empty(), "resnet50-r64: %s", r.problem.c_str());
		t.expect(r.inferences == n && !r.mismatches, "resnet50-r64: %llu of %llu inferences, %llu wrong; %s",
			 static_cast<unsigned long long>(r.inferences), static_cast<unsigned long long>(n),
			 static_cast<unsigned long long>(r.mismatches), r.first_mismatch.c_str());
		t.note("%s (qpc, %zu constant bytes): %llu inferences in %.2f s (%.2f/s) on DBC %u, bit-exact",
		       p->workload.meta.name.c_str(), p->static_constants.size(),
		       static_cast<unsigned long long>(r.inferences), r.seconds,
		       r.seconds > 0 ? double(r.inferences) / r.seconds : 0.0, q.dbc());
	});

	s.add_isolated("pipelined", 600, [o](ktap::Case &t) {
		auto dev = open_card(t, o.card);
		if (dev)
			run_workload(t, *dev, "vadd_f32", o.inferences, 16);
	});

	s.add_isolated("processes_16", 600, [o](ktap::Case &t) {
		// Sixteen users at once, each with its own activation (and DBC)
		// and a one-NSP workload, so that together they fill the card.
		std::vector<pid_t> kids;
		const char *names[] = {"copy", "vadd_f32"};
		for (int k = 0; k < 16; k++) {
			const pid_t p = fork();
			if (p == 0) {
				ktap::Case c;
				auto dev = open_card(c, o.card);
				bool ok = dev && run_workload(c, *dev, names[k % 2], 20, 2);
				_exit(ok ? 0 : 1);
			}
			kids.push_back(p);
		}
		unsigned bad = 0;
		for (pid_t p : kids) {
			int st = 0;
			waitpid(p, &st, 0);
			bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
		t.expect(bad == 0, "%u of 16 processes failed", bad);
	});

	s.add_isolated("partial_execute", 120, [o](ktap::Case &t) {
		CardChannel cc(t, o.card);
		if (!cc.ok())
			return;
		auto &dev = cc.dev;
		auto &ch = *cc.ch;
		const uint64_t n = 8192, base = ch.ddr_base();
		auto in = qaic::Bo::create(*dev, n), out = qaic::Bo::create(*dev, n);
		if (!in || !out)
			return t.expect(false, "CREATE_BO");
		const auto cs = qaic::copy_slices(n, base);
		qaic::attach_slices(*dev, in->handle(), ch.dbc(), qaic::kToDevice, std::span(&cs.in, 1));
		qaic::attach_slices(*dev, out->handle(), ch.dbc(), qaic::kFromDevice, std::span(&cs.out, 1));
		std::memset(in->data(), 'A', n);
		const qaic_execute_entry full[2] = {{in->handle(), qaic::kToDevice}, {out->handle(), qaic::kFromDevice}};
		t.expect(!qaic::execute(*dev, ch.dbc(), full), "EXECUTE_BO");
		t.expect(!qaic::wait(*dev, ch.dbc(), out->handle(), 10000), "WAIT_BO");
		// Only the first 3000 bytes of the new input go out.
		std::memset(in->data(), 'B', n);
		const qaic_partial_execute_entry part[2] = {{in->handle(), qaic::kToDevice, 3000},
							    {out->handle(), qaic::kFromDevice, n}};
		t.expect(!qaic::partial_execute(*dev, ch.dbc(), part), "PARTIAL_EXECUTE_BO");
		t.expect(!qaic::wait(*dev, ch.dbc(), out->handle(), 10000), "WAIT_BO");
		unsigned bad = 0;
		for (uint64_t i = 0; i < n; i++)
			bad += out->data()[i] != (i < 3000 ? 'B' : 'A');
		t.expect(bad == 0, "%u bytes wrong after a 3000-byte partial execute", bad);
	});

	// Another driver's dma-buf imported as BOs (both drivers have
	// .gem_prime_import) and executed: the card reads the input from, and
	// writes the output into, memory the driver never allocated.
	s.add_isolated("dmabuf_import", 120, [o](ktap::Case &t) {
		CardChannel cc(t, o.card);
		if (!cc.ok())
			return;
		auto &dev = cc.dev;
		auto &ch = *cc.ch;
		// 16 pages: without an IOMMU each page of a memfd is a request of
		// its own, and input and output must fit the 64-element FIFO.
		const size_t n = 64 * 1024;
		std::string why;
		auto in = Udmabuf::create(n, &why);
		auto out = in ? Udmabuf::create(n, &why) : std::nullopt;
		if (!in || !out)
			return t.expect(false, "udmabuf: %s", why.c_str());
		in->sync(DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);
		for (size_t i = 0; i < n; i++)
			in->data()[i] = static_cast<uint8_t>(i * 13 + 7);
		in->sync(DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE);

		uint32_t hin = 0, hout = 0;
		int r = import_dmabuf(*dev, in->dmabuf(), &hin);
		t.expect(!r, "PRIME_FD_TO_HANDLE of the input udmabuf: %s", qaic::errno_name(r).c_str());
		r = import_dmabuf(*dev, out->dmabuf(), &hout);
		t.expect(!r, "PRIME_FD_TO_HANDLE of the output udmabuf: %s", qaic::errno_name(r).c_str());
		if (t.failed())
			return;
		uint32_t again = 0;
		r = import_dmabuf(*dev, in->dmabuf(), &again);
		t.expect(!r && again == hin, "a second import: %s, handle %u, want %u", qaic::errno_name(r).c_str(),
			 again, hin);

		// As upstream: an imported BO is mapped where it came from, not
		// through the accel node.
		qaic_mmap_bo mb{hin, 0, 0};
		r = dev->ioctl(DRM_IOCTL_QAIC_MMAP_BO, &mb);
		t.expect(!r, "MMAP_BO of an imported BO: %s", qaic::errno_name(r).c_str());
		if (!r) {
			void *p = mmap(nullptr, n, PROT_READ, MAP_SHARED, dev->fd(), static_cast<off_t>(mb.offset));
			const int err = p == MAP_FAILED ? errno : 0;
			if (p != MAP_FAILED)
				munmap(p, n);
			t.expect(err == EINVAL, "mmap() of an imported BO: %s, want EINVAL", std::strerror(err));
		}

		// Imported input and output, then the imported input into a BO of
		// the driver's own.
		const auto cs = qaic::copy_slices(n, ch.ddr_base());
		t.expect(!qaic::attach_slices(*dev, hin, ch.dbc(), qaic::kToDevice, std::span(&cs.in, 1)), "attach in");
		t.expect(!qaic::attach_slices(*dev, hout, ch.dbc(), qaic::kFromDevice, std::span(&cs.out, 1)),
			 "attach out");
		const qaic_execute_entry e[2] = {{hin, qaic::kToDevice}, {hout, qaic::kFromDevice}};
		r = qaic::execute(*dev, ch.dbc(), e);
		t.expect(!r, "EXECUTE_BO: %s", qaic::errno_name(r).c_str());
		r = qaic::wait(*dev, ch.dbc(), hout, 10000);
		t.expect(!r, "WAIT_BO: %s", qaic::errno_name(r).c_str());
		out->sync(DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
		t.expect(std::memcmp(in->data(), out->data(), n) == 0, "the output udmabuf differs from the input");
		out->sync(DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);

		auto own = qaic::Bo::create(*dev, n);
		if (!own)
			return t.expect(false, "CREATE_BO");
		t.expect(!qaic::attach_slices(*dev, own->handle(), ch.dbc(), qaic::kFromDevice, std::span(&cs.out, 1)),
			 "attach own out");
		const qaic_execute_entry e2[2] = {{hin, qaic::kToDevice}, {own->handle(), qaic::kFromDevice}};
		t.expect(!qaic::execute(*dev, ch.dbc(), e2) && !qaic::wait(*dev, ch.dbc(), own->handle(), 10000),
			 "EXECUTE_BO and WAIT_BO into a BO of the driver's own");
		t.expect(std::memcmp(in->data(), own->data(), n) == 0, "the driver's BO differs from the input udmabuf");

		// Detached and closed, the dma-bufs are the exporter's alone again.
		for (uint32_t h : {hin, hout}) {
			r = qaic::detach_slices(*dev, h);
			t.expect(!r, "DETACH_SLICE_BO of handle %u: %s", h, qaic::errno_name(r).c_str());
			drm_gem_close c{h, 0};
			r = dev->ioctl(DRM_IOCTL_GEM_CLOSE, &c);
			t.expect(!r, "GEM_CLOSE of handle %u: %s", h, qaic::errno_name(r).c_str());
		}
	});

	// Our driver steers a DBC's interrupt to the CPU that submits (at most
	// every 10 ms), unless someone else set its affinity: that stays until
	// it is set back. Upstream's never moves it; the admin's setting stays
	// there too.
	s.add_isolated("irq_affinity", 120, [o](ktap::Case &t) {
		const auto cards = qaic::find_cards();
		if (o.card >= cards.size())
			return t.expect(false, "no card %u", o.card);
		if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
			return t.skip("one CPU");
		std::vector<unsigned> irqs;
		std::error_code ec;
		for (const auto &d :
		     std::filesystem::directory_iterator("/sys/bus/pci/devices/" + cards[o.card].bdf + "/msi_irqs", ec))
			irqs.push_back(unsigned(std::stoul(d.path().filename().string())));
		if (irqs.size() < 2)
			return t.skip("one MSI: the DBCs share MHI's vector");
		CardChannel cc(t, o.card);
		if (!cc.ok())
			return;
		auto &dev = cc.dev;
		auto &ch = *cc.ch;
		RoundTrip rt(*dev, ch);
		if (!rt.ok())
			return t.expect(false, "BOs for the round trips");
		// Vector 0 is MHI's, vector 1 + N DBC N's (consecutive numbers).
		const unsigned irq = *std::min_element(irqs.begin(), irqs.end()) + 1 + ch.dbc();
		const std::string list = "/proc/irq/" + std::to_string(irq) + "/smp_affinity_list";
		const auto on = [&](const std::string &cpus) { return trimmed(qaic::read_attr(list)) == cpus; };
		const std::string online = trimmed(qaic::read_attr("/sys/devices/system/cpu/online"));
		if (!o.upstream) {
			t.expect(pin_to_cpu(1) && rt.until([&] { return on("1"); }, 10),
				 "submitting from CPU 1: interrupt %u on CPUs %s", irq, qaic::read_attr(list).c_str());
			t.expect(pin_to_cpu(0) && rt.until([&] { return on("0"); }, 10),
				 "submitting from CPU 0: interrupt %u on CPUs %s", irq, qaic::read_attr(list).c_str());
		}
		// The admin's CPU 1, while this thread submits from CPU 0: a
		// while of 20 follow intervals at least.
		t.expect(guest_util::spit(list, "1"), "writing 1 to %s", list.c_str());
		pin_to_cpu(0);
		rt.until([] { return false; }, 0.2);
		t.expect(!rt.failed && on("1"),
			 "the admin's CPU 1 was not kept: interrupt %u on CPUs %s", irq, qaic::read_attr(list).c_str());
		if (!o.upstream)
			t.expect(guest_util::dmesg().find("affinity 1 set elsewhere, kept") != std::string::npos,
				 "the kernel log does not say the affinity was kept");
		// Set back to what it was when requested (every online CPU): it
		// follows again.
		t.expect(guest_util::spit(list, online), "writing %s to %s", online.c_str(), list.c_str());
		if (!o.upstream)
			t.expect(rt.until([&] { return on("0"); }, 10),
				 "set back to %s: interrupt %u still on CPUs %s", online.c_str(), irq,
				 qaic::read_attr(list).c_str());
		t.expect(rt.once(), "a round trip at the end");
	});

	s.add_isolated("dbc_debugfs", 60, [o](ktap::Case &t) {
		// Per-DBC fifo_size and queued: where upstream puts them and, for
		// our driver, also where the open UMD looks.
		const auto cards = qaic::find_cards();
		if (o.card >= cards.size())
			return t.expect(false, "no card %u", o.card);
		CardChannel cc(t, o.card);
		if (!cc.ok())
			return;
		auto &dev = cc.dev;
		auto &ch = *cc.ch;
		char dbc[16];
		std::snprintf(dbc, sizeof(dbc), "dbc%03u", ch.dbc());
		std::vector<std::string> dirs = {"/sys/kernel/debug/accel/" + cards[o.card].bdf + "/" + dbc};
		if (!o.upstream)
			dirs.push_back("/sys/kernel/debug/qaic/" + cards[o.card].bdf + "/" + dbc);
		for (const auto &d : dirs) {
			const std::string size = qaic::read_attr(d + "/fifo_size"), queued = qaic::read_attr(d + "/queued");
			t.expect(size == "64", "%s/fifo_size '%s', want 64", d.c_str(), size.c_str());
			t.expect(queued == "0", "%s/queued '%s', want 0", d.c_str(), queued.c_str());
		}
	});

	s.add_isolated("bo_ioctl_errors", 120, [o](ktap::Case &t) {
		CardChannel cc(t, o.card);
		if (!cc.ok())
			return;
		auto &dev = cc.dev;
		auto &ch = *cc.ch;
		const uint32_t dbc = ch.dbc(), other = (dbc + 1) % 16;
		auto bo = qaic::Bo::create(*dev, 8192);
		if (!bo)
			return t.expect(false, "CREATE_BO");
		const uint64_t base = ch.ddr_base();
		auto expect = [&t](int got, int want, const char *what) {
			t.expect(got == want, "%s: %s, want %s", what, qaic::errno_name(got).c_str(),
				 qaic::errno_name(want).c_str());
		};
		qaic_attach_slice_entry s1 = slice(4096, base);
		qaic_attach_slice a{};
		a.hdr = {0, dbc, bo->handle(), 1, 0};
		a.data = reinterpret_cast<uintptr_t>(&s1);
		expect(dev->ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), -EINVAL, "ATTACH count 0");
		a.hdr.count = 1;
		a.hdr.dir = 3;
		expect(dev->ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), -EINVAL, "ATTACH dir 3");
		a.hdr.dir = 1;
		a.data = 0;
		expect(dev->ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), -EINVAL, "ATTACH data 0");
		a.data = reinterpret_cast<uintptr_t>(&s1);
		a.hdr.dbc_id = 16;
		expect(dev->ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), -EINVAL, "ATTACH dbc 16");
		a.hdr.dbc_id = dbc;
		a.hdr.handle = 0xBAD;
		expect(dev->ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), -ENOENT, "ATTACH bad handle");
		a.hdr.handle = bo->handle();
		qaic_attach_slice_entry bad = s1;
		bad.db_len = 7;
		a.data = reinterpret_cast<uintptr_t>(&bad);
		expect(dev->ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), -EINVAL, "ATTACH db_len 7");
		bad = s1;
		bad.sem0 = qaic::sem(7, 0, 0, false);
		expect(dev->ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), -EINVAL, "ATTACH semaphore command 7");
		bad = s1;
		bad.offset = 8192 - 100;
		expect(dev->ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), -EINVAL, "ATTACH slice past the BO");
		bad = s1;
		bad.sem0 = qaic::sem(QAIC_SEM_WAIT_EQUAL, 0, 0, true);
		bad.sem1 = qaic::sem(QAIC_SEM_WAIT_EQUAL, 1, 0, true);
		expect(dev->ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), -EINVAL, "ATTACH two presyncs");
		a.hdr.dbc_id = other;
		a.data = reinterpret_cast<uintptr_t>(&s1);
		expect(dev->ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), -EINVAL, "ATTACH on a DBC not ours");
		a.hdr.dbc_id = dbc;

		qaic_execute_entry ex{bo->handle(), 1};
		expect(qaic::execute(*dev, dbc, std::span(&ex, 0)), -EINVAL, "EXECUTE count 0");
		expect(qaic::execute(*dev, 16, std::span(&ex, 1)), -EINVAL, "EXECUTE dbc 16");
		expect(qaic::execute(*dev, other, std::span(&ex, 1)), -EPERM, "EXECUTE on a DBC not ours");
		expect(qaic::execute(*dev, dbc, std::span(&ex, 1)), -EINVAL, "EXECUTE of an unsliced BO");
		qaic_execute_entry nobo{0xBAD, 1};
		expect(qaic::execute(*dev, dbc, std::span(&nobo, 1)), -ENOENT, "EXECUTE bad handle");

		qaic_wait w{bo->handle(), 100, dbc, 1};
		expect(dev->ioctl(DRM_IOCTL_QAIC_WAIT_BO, &w), -EINVAL, "WAIT pad");
		expect(qaic::wait(*dev, 16, bo->handle(), 100), -EINVAL, "WAIT dbc 16");
		expect(qaic::wait(*dev, other, bo->handle(), 100), -EPERM, "WAIT on a DBC not ours");
		expect(qaic::wait(*dev, dbc, 0xBAD, 100), -ENOENT, "WAIT bad handle");
		expect(qaic::wait(*dev, dbc, bo->handle(), 100), 0, "WAIT on a BO never submitted");

		qaic_detach_slice d{bo->handle(), 1};
		expect(dev->ioctl(DRM_IOCTL_QAIC_DETACH_SLICE_BO, &d), -EINVAL, "DETACH pad");
		expect(qaic::detach_slices(*dev, 0xBAD), -ENOENT, "DETACH bad handle");
		expect(qaic::detach_slices(*dev, bo->handle()), -EINVAL, "DETACH of an unsliced BO");
		qaic_perf_stats_entry ps{};
		ps.handle = bo->handle();
		expect(qaic::perf_stats(*dev, 16, std::span(&ps, 1)), -EINVAL, "PERF_STATS dbc 16");

		// A good slice, then the errors that need one.
		expect(qaic::attach_slices(*dev, bo->handle(), dbc, qaic::kToDevice, std::span(&s1, 1)), 0, "ATTACH");
		expect(qaic::attach_slices(*dev, bo->handle(), dbc, qaic::kToDevice, std::span(&s1, 1)), -EINVAL,
		       "ATTACH of a sliced BO");
		// An output that the device never answers: nothing feeds it.
		auto out = qaic::Bo::create(*dev, 4096);
		qaic_attach_slice_entry so = slice(4096, base);
		so.sem0 = qaic::sem(QAIC_SEM_WAIT_GT_0, 9, 0, true);
		expect(qaic::attach_slices(*dev, out->handle(), dbc, qaic::kFromDevice, std::span(&so, 1)), 0,
		       "ATTACH output");
		qaic_execute_entry eo{out->handle(), 2};
		expect(qaic::execute(*dev, dbc, std::span(&eo, 1)), 0, "EXECUTE output");
		expect(qaic::execute(*dev, dbc, std::span(&eo, 1)), -EINVAL, "EXECUTE of a queued BO");
		expect(qaic::wait(*dev, dbc, out->handle(), 200), -ETIMEDOUT, "WAIT on a BO the card holds back");
		expect(qaic::detach_slices(*dev, out->handle()), -EBUSY, "DETACH of a queued BO");
		expect(qaic::detach_slices(*dev, bo->handle()), 0, "DETACH");
	});

	// The card is unbound from the driver (hot unplug) while a user has BOs
	// mapped: the DRM core zaps every mapping of the device, and the user
	// must still reach its BOs' memory (host pages the BOs keep), not die
	// of SIGBUS; the ioctls tell it ENODEV. Then the card is bound again.
	s.add_isolated("bo_mmap_after_unbind", 120, [o](ktap::Case &t) {
		if (o.upstream)
			return t.skip("upstream's qaic maps BOs without a fault handler: SIGBUS after an unplug");
		const auto cards = qaic::find_cards();
		if (o.card >= cards.size())
			return t.expect(false, "no card %u", o.card);
		const std::string bdf = cards[o.card].bdf;
		{
			auto dev = open_card(t, o.card);
			if (!dev)
				return;
			qaic::DataChannel ch(*dev);
			if (!open_channel(t, ch))
				return;
			// One BO sliced and queued on the DBC, one only mapped.
			auto sliced = qaic::Bo::create(*dev, 65536), plain = qaic::Bo::create(*dev, 65536);
			if (!sliced || !plain)
				return t.expect(false, "CREATE_BO");
			auto so = slice(65536, ch.ddr_base());
			so.sem0 = qaic::sem(QAIC_SEM_WAIT_GT_0, 9, 0, true); // nothing signals it: stays queued
			t.expect(!qaic::attach_slices(*dev, sliced->handle(), ch.dbc(), qaic::kFromDevice, std::span(&so, 1)),
				 "ATTACH");
			const qaic_execute_entry e{sliced->handle(), qaic::kFromDevice};
			t.expect(!qaic::execute(*dev, ch.dbc(), std::span(&e, 1)), "EXECUTE_BO");
			for (size_t i = 0; i < 65536; i++)
				plain->data()[i] = static_cast<uint8_t>(i * 7 + 1);
			std::FILE *f = std::fopen("/sys/bus/pci/drivers/qaic/unbind", "w");
			const bool unbound = f && std::fputs(bdf.c_str(), f) >= 0 && std::fclose(f) == 0;
			t.expect(unbound, "unbind %s", bdf.c_str());
			if (!unbound)
				return;
			// Each BO touched in a process of its own: a SIGBUS ends that one only.
			for (const auto *bo : {&*plain, &*sliced}) {
				std::fflush(stdout);
				const pid_t pid = fork();
				if (pid == 0) {
					bool ok = true;
					if (bo == &*plain)
						for (size_t i = 0; i < 65536; i++)
							ok &= bo->data()[i] == static_cast<uint8_t>(i * 7 + 1);
					for (size_t i = 0; i < 65536; i++)
						bo->data()[i] = static_cast<uint8_t>(i ^ 0x5a);
					for (size_t i = 0; i < 65536; i++)
						ok &= bo->data()[i] == static_cast<uint8_t>(i ^ 0x5a);
					_exit(ok ? 0 : 1);
				}
				int st = 0;
				waitpid(pid, &st, 0);
				const char *which = bo == &*plain ? "a mapped BO" : "a queued BO";
				t.expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s after the unbind: %s", which,
					 WIFSIGNALED(st) ? strsignal(WTERMSIG(st))
							 : WEXITSTATUS(st) ? "its contents changed" : "?");
			}
			t.expect(qaic::wait(*dev, ch.dbc(), sliced->handle(), 100) == -ENODEV, "WAIT_BO after the unbind: %s",
				 qaic::errno_name(-qaic::wait(*dev, ch.dbc(), sliced->handle(), 100)).c_str());
			int err = 0;
			t.expect(!qaic::Bo::create(*dev, 4096, &err) && err == -ENODEV, "CREATE_BO after the unbind: %s",
				 qaic::errno_name(-err).c_str());
		} // the user closes everything
		std::FILE *f = std::fopen("/sys/bus/pci/drivers/qaic/bind", "w");
		t.expect(f && std::fputs(bdf.c_str(), f) >= 0 && std::fclose(f) == 0, "bind %s", bdf.c_str());
		CardChannel cc(t, o.card);
		if (!cc.ok())
			return;
		auto &dev = cc.dev;
		auto &ch = *cc.ch;
		auto in = qaic::Bo::create(*dev, 4096), out = qaic::Bo::create(*dev, 4096);
		if (!in || !out)
			return t.expect(false, "CREATE_BO after the bind");
		std::memset(in->data(), 0xa5, 4096);
		const auto cs = qaic::copy_slices(4096, ch.ddr_base());
		t.expect(!qaic::attach_slices(*dev, in->handle(), ch.dbc(), qaic::kToDevice, std::span(&cs.in, 1)) &&
				 !qaic::attach_slices(*dev, out->handle(), ch.dbc(), qaic::kFromDevice,
						      std::span(&cs.out, 1)),
			 "ATTACH after the bind");
		const qaic_execute_entry e[2] = {{in->handle(), qaic::kToDevice}, {out->handle(), qaic::kFromDevice}};
		t.expect(!qaic::execute(*dev, ch.dbc(), e) && !qaic::wait(*dev, ch.dbc(), out->handle(), 10000) &&
				 !std::memcmp(in->data(), out->data(), 4096),
			 "a round trip after the bind");
	});
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string k = argv[i], v = argv[i + 1];
		if (k == "--card")
			o.card = std::stoul(v);
		else if (k == "--upstream") {
			const auto d = parse_driver_under_test(v);
			if (!d)
				return 2;
			o.upstream = *d != DriverUnderTest::Ours;
		} else if (k == "--inferences")
			o.inferences = std::stoul(v);
		else if (k == "--networks")
			o.networks = v;
		else {
			std::fprintf(stderr, "unknown option %s\n", k.c_str());
			return 2;
		}
	}
	ktap::Suite s;
	add_tests(s, o);
	return s.run() ? 1 : 0;
}
