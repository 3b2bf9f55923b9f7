// SPDX-License-Identifier: GPL-2.0-or-later
// In-guest checks of the data path, reported as KTAP: example workloads run
// end to end through the driver (BOs, slices, EXECUTE_BO, WAIT_BO) on the
// card's DMA Bridge and NSPs; pipelining; many processes at once; partial
// execute; a foreign dma-buf (udmabuf) imported as a BO; implicit sync
// with other drivers through shared BOs' fences (vgem as the producer); the
// errnos of the BO and slice ioctls; and where a DBC's interrupt is
// delivered (by default, and with datapath_irq_follows=1).
// With --upstream (6.12 or 7.3, alike here): the cases of what upstream's
// qaic lacks (dma-buf fences, interrupts that follow their submitter, BO
// mappings that outlive an unplug) skip, saying why, and irq_affinity and
// dbc_debugfs leave out our driver's parameter and its second debugfs home.
// Each case is a function of the case's name, given the fixture (the card,
// the driver's profile, the options); kCases lists them in the order they
// run, and the Profile says where the drivers differ.
// Usage: qaic-data-tests [--card N] [--upstream 1] [--inferences N]
//                        [--networks DIR] [--only CASE,CASE...]
// --networks: the build's compiled networks (tools/qpc-networks), whose
// 64×64 ResNet-50 the qpc_containers case also runs against its reference
// pairs.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <linux/dma-buf.h>
#include <linux/sync_file.h>
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
#include "mailbox.h"
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
	std::vector<std::string> only;
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
// told what is missing); none when the driver lacks what the case needs
// (`unsupported` says what): the case is skipped.
struct CardChannel {
	std::optional<qaic::Device> dev;
	std::optional<qaic::DataChannel> ch;

	CardChannel(ktap::Case &t, unsigned card, const char *unsupported = nullptr)
	{
		if (unsupported) {
			t.skip(unsupported);
			return;
		}
		dev = open_card(t, card);
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

// ---- Other drivers' fences on shared BOs (implicit sync) ----

// vgem's fence ioctls (include/uapi/drm/vgem_drm.h, which libdrm does not
// install): a producer that holds a fence on its buffer until told.
struct VgemFenceAttach {
	uint32_t handle, flags, out_fence, pad;
};
struct VgemFenceSignal {
	uint32_t fence, flags;
};
constexpr uint32_t kVgemFenceWrite = 1;
constexpr unsigned long kVgemFenceAttach = DRM_IOWR(DRM_COMMAND_BASE + 0x1, VgemFenceAttach);
constexpr unsigned long kVgemFenceSignal = DRM_IOW(DRM_COMMAND_BASE + 0x2, VgemFenceSignal);

// 0 or -errno, retrying interruptions.
int xioctl(int fd, unsigned long req, void *arg)
{
	int r;
	do {
		r = ::ioctl(fd, req, arg);
	} while (r && errno == EINTR);
	return r ? -errno : 0;
}

// The node of the vgem driver (Debian's kernels build it as a module), or -1.
int open_vgem_node()
{
	std::error_code ec;
	for (const auto &d : std::filesystem::directory_iterator("/dev/dri", ec)) {
		if (d.path().filename().string().rfind("card", 0) != 0)
			continue;
		const int fd = ::open(d.path().c_str(), O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		char name[16] = {};
		drm_version v{};
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (!xioctl(fd, DRM_IOCTL_VERSION, &v) && std::string(name) == "vgem")
			return fd;
		::close(fd);
	}
	return -1;
}

// A buffer of vgem's, mapped here and exported as a dma-buf: the producer
// of the implicit-sync cases, which holds write fences on it.
class VgemBuffer {
public:
	static std::optional<VgemBuffer> create(size_t size, std::string *why)
	{
		VgemBuffer b;
		b.fd_ = open_vgem_node();
		if (b.fd_ < 0 && guest_util::shell("modprobe vgem") == 0)
			guest_util::wait_for([&b] { return (b.fd_ = open_vgem_node()) >= 0; }, 10);
		if (b.fd_ < 0)
			return fail(why, "no vgem node (modprobe vgem)", 0);
		drm_mode_create_dumb c{};
		c.width = 1024;
		c.bpp = 32;
		c.height = static_cast<uint32_t>(size / 4096);
		int r = xioctl(b.fd_, DRM_IOCTL_MODE_CREATE_DUMB, &c);
		if (r)
			return fail(why, "MODE_CREATE_DUMB", r);
		b.handle_ = c.handle;
		b.size_ = c.size;
		drm_mode_map_dumb m{};
		m.handle = c.handle;
		if ((r = xioctl(b.fd_, DRM_IOCTL_MODE_MAP_DUMB, &m)))
			return fail(why, "MODE_MAP_DUMB", r);
		void *p = mmap(nullptr, b.size_, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd_, static_cast<off_t>(m.offset));
		if (p == MAP_FAILED)
			return fail(why, "mmap", -errno);
		b.map_ = static_cast<uint8_t *>(p);
		drm_prime_handle h{};
		h.handle = c.handle;
		h.flags = DRM_CLOEXEC | DRM_RDWR;
		if ((r = xioctl(b.fd_, DRM_IOCTL_PRIME_HANDLE_TO_FD, &h)))
			return fail(why, "PRIME_HANDLE_TO_FD", r);
		b.dmabuf_ = h.fd;
		return b;
	}
	VgemBuffer(VgemBuffer &&o) noexcept { *this = std::move(o); }
	VgemBuffer &operator=(VgemBuffer &&o) noexcept
	{
		std::swap(fd_, o.fd_);
		std::swap(dmabuf_, o.dmabuf_);
		std::swap(handle_, o.handle_);
		std::swap(map_, o.map_);
		std::swap(size_, o.size_);
		return *this;
	}
	~VgemBuffer()
	{
		if (map_)
			munmap(map_, size_);
		if (dmabuf_ >= 0)
			::close(dmabuf_);
		if (fd_ >= 0)
			::close(fd_); // also signals what it still holds
	}
	int dmabuf() const { return dmabuf_; }
	uint8_t *data() const { return map_; }
	// A write fence of the producer's on the buffer: its id, or -errno.
	int attach_write_fence() const
	{
		VgemFenceAttach a{handle_, kVgemFenceWrite, 0, 0};
		const int r = xioctl(fd_, kVgemFenceAttach, &a);
		return r ? r : static_cast<int>(a.out_fence);
	}
	int signal(int fence) const
	{
		VgemFenceSignal sig{static_cast<uint32_t>(fence), 0};
		return xioctl(fd_, kVgemFenceSignal, &sig);
	}

private:
	VgemBuffer() = default;
	static std::optional<VgemBuffer> fail(std::string *why, const char *what, int r)
	{
		*why = std::string(what) + (r ? ": " + std::string(std::strerror(-r)) : "");
		return std::nullopt;
	}
	int fd_ = -1, dmabuf_ = -1;
	uint32_t handle_ = 0;
	uint8_t *map_ = nullptr;
	size_t size_ = 0;
};

// Would poll() of a dma-buf for `events` return at once? POLLIN waits for
// its writers' fences, POLLOUT for every fence.
bool dmabuf_ready(int fd, short events)
{
	pollfd p{fd, events, 0};
	return ::poll(&p, 1, 0) == 1 && (p.revents & events);
}

// The fences a consumer of a dma-buf would wait for, as a sync_file
// (DMA_BUF_IOCTL_EXPORT_SYNC_FILE; DMA_BUF_SYNC_READ: a reader's, those of
// the writers).
class SyncFile {
public:
	SyncFile(int dmabuf, uint32_t flags)
	{
		dma_buf_export_sync_file e{flags, -1};
		err_ = xioctl(dmabuf, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &e);
		fd_ = err_ ? -1 : e.fd;
	}
	~SyncFile()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	SyncFile(const SyncFile &) = delete;
	SyncFile &operator=(const SyncFile &) = delete;
	int error() const { return err_; }
	// 1 signalled, 0 active, -errno signalled with an error.
	int status() const
	{
		sync_file_info i{};
		return fd_ >= 0 && !xioctl(fd_, SYNC_IOC_FILE_INFO, &i) ? i.status : -1000;
	}
	// The drivers of its fences, e.g. "qaic" (a signalled fence may have
	// forgotten its driver).
	std::string drivers() const
	{
		sync_fence_info f[8] = {};
		sync_file_info i{};
		i.num_fences = 8;
		i.sync_fence_info = reinterpret_cast<uintptr_t>(f);
		std::string out;
		if (fd_ < 0 || xioctl(fd_, SYNC_IOC_FILE_INFO, &i))
			return "(no fence information)";
		for (uint32_t k = 0; k < std::min<uint32_t>(i.num_fences, 8); k++)
			out += std::string(out.empty() ? "" : " ") + f[k].driver_name + "/" + f[k].obj_name;
		return out;
	}
	// Waits up to `ms` for it to signal.
	bool wait(int ms) const
	{
		pollfd p{fd_, POLLIN, 0};
		return fd_ >= 0 && ::poll(&p, 1, ms) == 1;
	}

private:
	int fd_ = -1, err_ = 0;
};

// A slice the card holds back: its presync waits for semaphore 9, which
// nothing counts up. Only a release of the DBC ends it (and whatever the
// DBC would start after it).
qaic_attach_slice_entry held_slice(uint64_t size, uint64_t dev_addr)
{
	qaic_attach_slice_entry s = slice(size, dev_addr);
	s.sem0 = qaic::sem(QAIC_SEM_WAIT_GT_0, 9, 0, true);
	return s;
}

// DRM_IOCTL_PRIME_HANDLE_TO_FD of a BO of ours: the dma-buf, or -errno.
int export_bo(const qaic::Device &dev, uint32_t handle)
{
	drm_prime_handle h{};
	h.handle = handle;
	h.flags = DRM_CLOEXEC | DRM_RDWR;
	const int r = dev.ioctl(DRM_IOCTL_PRIME_HANDLE_TO_FD, &h);
	return r ? r : h.fd;
}

// Where thread `tid` of this process sleeps in the kernel ("0" running).
std::string wchan_of(pid_t tid)
{
	return tid ? qaic::read_attr("/proc/self/task/" + std::to_string(tid) + "/wchan") : std::string();
}

// ---- Interrupts ----

// A sysfs or procfs setting changed for a case and put back after it.
class Setting {
public:
	Setting(std::string path, const std::string &value) : path_(std::move(path)), old_(qaic::read_attr(path_))
	{
		set_ = !old_.empty() && guest_util::spit(path_, value);
	}
	~Setting() { restore(); }
	Setting(const Setting &) = delete;
	Setting &operator=(const Setting &) = delete;
	bool ok() const { return set_; }
	void restore()
	{
		if (set_)
			guest_util::spit(path_, old_);
		set_ = false;
	}

private:
	std::string path_, old_;
	bool set_ = false;
};

const char *const kIrqFollows = "/sys/module/qaic/parameters/datapath_irq_follows";
const char *const kPolling = "/sys/module/qaic/parameters/datapath_polling";
const char *const kKeptMessage = "set elsewhere, kept";

// The card's MSI vectors, lowest first.
std::vector<unsigned> msi_irqs(const std::string &bdf)
{
	std::vector<unsigned> irqs;
	std::error_code ec;
	for (const auto &d : std::filesystem::directory_iterator("/sys/bus/pci/devices/" + bdf + "/msi_irqs", ec))
		irqs.push_back(unsigned(std::stoul(d.path().filename().string())));
	std::sort(irqs.begin(), irqs.end());
	return irqs;
}

// DBC `dbc`'s vector: 1 + its id on multiple MSIs (consecutive numbers),
// MHI's vector 0 on a single MSI.
unsigned dbc_irq(const std::vector<unsigned> &irqs, uint32_t dbc)
{
	return irqs.size() == 1 ? irqs[0] : irqs[0] + 1 + dbc;
}

std::string affinity_list(unsigned irq)
{
	return trimmed(qaic::read_attr("/proc/irq/" + std::to_string(irq) + "/smp_affinity_list"));
}

// The kernel log's lines from now on (/dev/kmsg, read as they come).
class KmsgTail {
public:
	KmsgTail()
	{
		fd_ = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd_ >= 0)
			::lseek(fd_, 0, SEEK_END);
	}
	~KmsgTail()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	KmsgTail(const KmsgTail &) = delete;
	KmsgTail &operator=(const KmsgTail &) = delete;
	bool ok() const { return fd_ >= 0; }
	// Waits up to `ms` for a new line holding `text`: that line, or "".
	std::string wait_for(const std::string &text, int ms)
	{
		const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
		for (;;) {
			char rec[8192];
			const ssize_t n = ::read(fd_, rec, sizeof(rec) - 1);
			if (n > 0) {
				// "prio,seq,time,flags;message\n", then " KEY=value" lines.
				std::string line(rec, static_cast<size_t>(n));
				line = line.substr(0, line.find('\n'));
				if (line.find(text) != std::string::npos)
					return line.substr(line.find(';') + 1);
				continue;
			}
			if (n < 0 && errno == EPIPE)
				continue; // overwritten records: go on with the next
			const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
				end - std::chrono::steady_clock::now());
			if (fd_ < 0 || left.count() <= 0)
				return {};
			pollfd p{fd_, POLLIN, 0};
			::poll(&p, 1, static_cast<int>(left.count()));
		}
	}

private:
	int fd_ = -1;
};

// ---- the drivers under test ------------------------------------------------

// Where upstream's qaic (6.12's and 7.3's alike, as this suite sees them)
// differs from ours, in one place (kselftest_harness.h's FIXTURE_VARIANT):
// a case asks its fixture's profile, never which driver it runs against.
struct Profile {
	// Why the cases of dma-buf fences skip: the driver neither waits for
	// nor publishes them (nullptr: they run).
	const char *no_dmabuf_fences = nullptr;
	// Why the cases of an interrupt that follows its submitter skip.
	const char *no_irq_follow = nullptr;
	// Why bo_mmap_after_unbind skips: a user of a mapped BO dies of SIGBUS
	// after an unplug.
	const char *no_mmap_after_unbind = nullptr;
	// datapath_irq_follows (off by default), and the kernel log line that
	// says an admin's affinity was kept.
	bool irq_follows_param = false;
	// A DBC's debugfs also where the open UMD looks (/sys/kernel/debug/qaic).
	bool umd_debugfs = false;
};

const Profile kOursProfile = {.irq_follows_param = true, .umd_debugfs = true};

const Profile kUpstreamProfile = {
	.no_dmabuf_fences = "upstream's qaic neither waits for nor publishes dma-buf fences",
	.no_irq_follow = "upstream's qaic never moves an interrupt",
	.no_mmap_after_unbind = "upstream's qaic maps BOs without a fault handler: SIGBUS after an unplug",
};

// What every case is given (kselftest_harness.h's FIXTURE with its variant).
struct Fixture {
	unsigned card;
	Profile p;
	Options o;
};

// A channel's 4 KiB round trips, for the cases of where its interrupt goes.
struct RoundTrips {
	CardChannel cc;
	std::optional<RoundTrip> rt;

	// Reported into the case when it is not ok().
	RoundTrips(ktap::Case &t, unsigned card) : cc(t, card)
	{
		if (!cc.ok())
			return;
		rt.emplace(*cc.dev, *cc.ch);
		if (!rt->ok())
			t.expect(false, "BOs for the round trips");
	}
	bool ok() const { return rt && rt->ok(); }
};

// ---- round trips and workloads -------------------------------------------

// Copies of 1 byte to 8 MiB through a DBC come back as they went.
void round_trip(ktap::Case &t, const Fixture &f)
{
	CardChannel cc(t, f.card);
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
		t.expect(!qaic::attach_slices(*dev, out->handle(), ch.dbc(), qaic::kFromDevice, std::span(&cs.out, 1)),
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
}

// Every example workload, 50 inferences each.
void workloads(ktap::Case &t, const Fixture &f)
{
	auto dev = open_card(t, f.card);
	if (!dev)
		return;
	for (const auto &e : wl::examples())
		run_workload(t, *dev, e.layout.name, 50, 4);
}

// Example `e` packed as a program container and run as the open UMD runs one.
void run_example_qpc(ktap::Case &t, const qaic::Device &dev, const wl::Example &e)
{
	const std::string &name = e.layout.name;
	std::string err;
	const auto spec = aic100::qpc::example_spec(e, err);
	const auto file = spec ? aic100::qpc::build_qpc(*spec, err) : std::nullopt;
	const auto p = file ? aic100::qpc::read_qpc(*file, err) : std::nullopt;
	if (!p)
		return t.expect(false, "%s: packing: %s", name.c_str(), err.c_str());
	qaic::QpcPipeline q(dev, *p, 4);
	if (const std::string why = q.setup(); !why.empty())
		return t.expect(false, "%s: %s", name.c_str(), why.c_str());
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
	t.expect(r.inferences == n && !r.mismatches, "%s: %llu of %llu inferences, %llu wrong; %s", name.c_str(),
		 static_cast<unsigned long long>(r.inferences), static_cast<unsigned long long>(n),
		 static_cast<unsigned long long>(r.mismatches), r.first_mismatch.c_str());
	t.note("%s (qpc, %zu constant bytes): %llu inferences in %.2f s on DBC %u", name.c_str(),
	       p->static_constants.size(), static_cast<unsigned long long>(r.inferences), r.seconds, q.dbc());
}

// The compiled ResNet-50 at 64×64 (docs/compiler.md) of the build's
// networks, checked against the reference pairs the build wrote next to it.
void run_resnet50_r64(ktap::Case &t, const qaic::Device &dev, const std::string &networks)
{
	const std::string dir = networks + "/4nsp-quant-resnet50-r64";
	const auto file = slurp(dir + "/programqpc.bin");
	std::string err;
	const auto p = aic100::qpc::read_qpc(file, err);
	if (!p)
		return t.expect(false, "%s/programqpc.bin: %s", dir.c_str(), file.empty() ? "cannot read it" : err.c_str());
	std::vector<std::vector<uint8_t>> in, want;
	for (int k = 0; k < 2; k++) {
		in.push_back(slurp(dir + "/input." + std::to_string(k) + ".bin"));
		want.push_back(slurp(dir + "/output." + std::to_string(k) + ".bin"));
		t.expect(!in.back().empty() && !want.back().empty(), "%s: reference pair %d missing", dir.c_str(), k);
	}
	qaic::QpcPipeline q(dev, *p, 2);
	if (const std::string why = q.setup(); !why.empty())
		return t.expect(false, "resnet50-r64: %s", why.c_str());
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
	       p->workload.meta.name.c_str(), p->static_constants.size(), static_cast<unsigned long long>(r.inferences),
	       r.seconds, r.seconds > 0 ? double(r.inferences) / r.seconds : 0.0, q.dbc());
}

// Every example packed as a program container and run the way the open
// UMD runs one (docs/qpc.md): constants by LOAD_CONSTANTS_EX/_PAYLOAD,
// the slices of the metadata's DMA requests; with --networks, the
// compiled ResNet-50 too.
void qpc_containers(ktap::Case &t, const Fixture &f)
{
	auto dev = open_card(t, f.card);
	if (!dev)
		return;
	for (const auto &e : wl::examples())
		run_example_qpc(t, *dev, e);
	if (!f.o.networks.empty())
		run_resnet50_r64(t, *dev, f.o.networks);
}

// vadd_f32 with 16 requests in flight (--inferences of them).
void pipelined(ktap::Case &t, const Fixture &f)
{
	auto dev = open_card(t, f.card);
	if (dev)
		run_workload(t, *dev, "vadd_f32", f.o.inferences, 16);
}

// Sixteen users at once, each with its own activation (and DBC) and a
// one-NSP workload, so that together they fill the card.
void processes_16(ktap::Case &t, const Fixture &f)
{
	std::vector<pid_t> kids;
	const char *names[] = {"copy", "vadd_f32"};
	for (int k = 0; k < 16; k++) {
		const pid_t p = fork();
		if (p == 0) {
			ktap::Case c;
			auto dev = open_card(c, f.card);
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
}

// PARTIAL_EXECUTE_BO sends only the first bytes of the input.
void partial_execute(ktap::Case &t, const Fixture &f)
{
	CardChannel cc(t, f.card);
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
}

// ---- dma-bufs ---------------------------------------------------------------

// As upstream: an imported BO is mapped where it came from, not through
// the accel node.
void expect_imported_unmappable(ktap::Case &t, const qaic::Device &dev, uint32_t handle, size_t n)
{
	qaic_mmap_bo mb{handle, 0, 0};
	const int r = dev.ioctl(DRM_IOCTL_QAIC_MMAP_BO, &mb);
	t.expect(!r, "MMAP_BO of an imported BO: %s", qaic::errno_name(r).c_str());
	if (r)
		return;
	void *p = mmap(nullptr, n, PROT_READ, MAP_SHARED, dev.fd(), static_cast<off_t>(mb.offset));
	const int err = p == MAP_FAILED ? errno : 0;
	if (p != MAP_FAILED)
		munmap(p, n);
	t.expect(err == EINVAL, "mmap() of an imported BO: %s, want EINVAL", std::strerror(err));
}

// The imported input copied to the imported output, then into a BO of
// the driver's own. False: no BO of its own.
bool expect_copied_through_imports(ktap::Case &t, const qaic::Device &dev, const qaic::DataChannel &ch,
				   const Udmabuf &in, const Udmabuf &out, uint32_t hin, uint32_t hout, size_t n)
{
	const auto cs = qaic::copy_slices(n, ch.ddr_base());
	t.expect(!qaic::attach_slices(dev, hin, ch.dbc(), qaic::kToDevice, std::span(&cs.in, 1)), "attach in");
	t.expect(!qaic::attach_slices(dev, hout, ch.dbc(), qaic::kFromDevice, std::span(&cs.out, 1)), "attach out");
	const qaic_execute_entry e[2] = {{hin, qaic::kToDevice}, {hout, qaic::kFromDevice}};
	int r = qaic::execute(dev, ch.dbc(), e);
	t.expect(!r, "EXECUTE_BO: %s", qaic::errno_name(r).c_str());
	r = qaic::wait(dev, ch.dbc(), hout, 10000);
	t.expect(!r, "WAIT_BO: %s", qaic::errno_name(r).c_str());
	out.sync(DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
	t.expect(std::memcmp(in.data(), out.data(), n) == 0, "the output udmabuf differs from the input");
	out.sync(DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
	auto own = qaic::Bo::create(dev, n);
	if (!own) {
		t.expect(false, "CREATE_BO");
		return false;
	}
	t.expect(!qaic::attach_slices(dev, own->handle(), ch.dbc(), qaic::kFromDevice, std::span(&cs.out, 1)),
		 "attach own out");
	const qaic_execute_entry e2[2] = {{hin, qaic::kToDevice}, {own->handle(), qaic::kFromDevice}};
	t.expect(!qaic::execute(dev, ch.dbc(), e2) && !qaic::wait(dev, ch.dbc(), own->handle(), 10000),
		 "EXECUTE_BO and WAIT_BO into a BO of the driver's own");
	t.expect(std::memcmp(in.data(), own->data(), n) == 0, "the driver's BO differs from the input udmabuf");
	return true;
}

// Another driver's dma-buf imported as BOs (both drivers have
// .gem_prime_import) and executed: the card reads the input from, and
// writes the output into, memory the driver never allocated. Detached and
// closed, the dma-bufs are the exporter's alone again.
void dmabuf_import(ktap::Case &t, const Fixture &f)
{
	CardChannel cc(t, f.card);
	if (!cc.ok())
		return;
	const qaic::Device &dev = *cc.dev;
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
	int r = import_dmabuf(dev, in->dmabuf(), &hin);
	t.expect(!r, "PRIME_FD_TO_HANDLE of the input udmabuf: %s", qaic::errno_name(r).c_str());
	r = import_dmabuf(dev, out->dmabuf(), &hout);
	t.expect(!r, "PRIME_FD_TO_HANDLE of the output udmabuf: %s", qaic::errno_name(r).c_str());
	if (t.failed())
		return;
	uint32_t again = 0;
	r = import_dmabuf(dev, in->dmabuf(), &again);
	t.expect(!r && again == hin, "a second import: %s, handle %u, want %u", qaic::errno_name(r).c_str(), again, hin);
	expect_imported_unmappable(t, dev, hin, n);
	if (!expect_copied_through_imports(t, dev, *cc.ch, *in, *out, hin, hout, n))
		return;
	for (uint32_t h : {hin, hout}) {
		r = qaic::detach_slices(dev, h);
		t.expect(!r, "DETACH_SLICE_BO of handle %u: %s", h, qaic::errno_name(r).c_str());
		drm_gem_close c{h, 0};
		r = dev.ioctl(DRM_IOCTL_GEM_CLOSE, &c);
		t.expect(!r, "GEM_CLOSE of handle %u: %s", h, qaic::errno_name(r).c_str());
	}
}

// EXECUTE_BO of the vgem buffer's import `hin` into `out`, in a thread of
// its own, while the producer's write fence is unsignalled: it must sleep
// on the fence; the producer writes, then signals; the card reads what it
// wrote.
void execute_behind_fence(ktap::Case &t, const qaic::Device &dev, uint32_t dbc, VgemBuffer &vb, int fence,
			  uint32_t hin, const qaic::Bo &out, size_t n)
{
	std::atomic<pid_t> tid{0};
	std::atomic<bool> returned{false};
	int er = 0;
	const qaic_execute_entry e[2] = {{hin, qaic::kToDevice}, {out.handle(), qaic::kFromDevice}};
	std::thread th([&] {
		tid = gettid();
		er = qaic::execute(dev, dbc, e);
		returned = true;
	});
	const auto on_fence = [&] { return wchan_of(tid).find("fence") != std::string::npos; };
	guest_util::wait_for([&] { return returned || on_fence(); }, 4);
	if (returned) {
		t.expect(false, "EXECUTE_BO returned (%s) while the producer's write fence was unsignalled",
			 qaic::errno_name(-er).c_str());
		if (!er && !qaic::wait(dev, dbc, out.handle(), 10000))
			t.expect(out.data()[0] != 0x11, "the card read the buffer before the producer was done");
		vb.signal(fence);
		th.join();
		return;
	}
	const std::string asleep = wchan_of(tid);
	t.expect(on_fence(), "EXECUTE_BO neither returned nor slept on the fence within 4 s (wchan '%s')",
		 asleep.c_str());
	// The producer finishes writing, then says so.
	std::memset(vb.data(), 0x22, n);
	int r = vb.signal(fence);
	t.expect(!r, "VGEM_FENCE_SIGNAL: %s", qaic::errno_name(-r).c_str());
	th.join();
	t.expect(!er, "EXECUTE_BO once the fence signalled: %s", qaic::errno_name(-er).c_str());
	r = qaic::wait(dev, dbc, out.handle(), 10000);
	t.expect(!r, "WAIT_BO: %s", qaic::errno_name(-r).c_str());
	const size_t bad = size_t(std::count_if(out.data(), out.data() + n, [](uint8_t b) { return b != 0x22; }));
	t.expect(!bad, "%zu of %zu bytes are not what the producer wrote before it signalled", bad, n);
	t.note("EXECUTE_BO slept in %s until the producer signalled", asleep.c_str());
}

// A producer's write fence on an imported buffer holds the card back:
// EXECUTE_BO waits for it (the card must not read what is still being
// written), and once the producer has written and signalled, the card
// reads what it wrote. vgem is the producer (its fence ioctls). The
// waiting EXECUTE_BO is seen asleep on the fence in the kernel (its
// wchan), not assumed to be after a while.
void dmabuf_waits_for_producer(ktap::Case &t, const Fixture &f)
{
	CardChannel cc(t, f.card, f.p.no_dmabuf_fences);
	if (!cc.ok())
		return;
	const qaic::Device &dev = *cc.dev;
	const qaic::DataChannel &ch = *cc.ch;
	const size_t n = 16 * 1024;
	std::string why;
	auto vb = VgemBuffer::create(n, &why);
	if (!vb)
		return t.expect(false, "vgem: %s", why.c_str());
	std::memset(vb->data(), 0x11, n);
	uint32_t hin = 0;
	const int r = import_dmabuf(dev, vb->dmabuf(), &hin);
	auto out = qaic::Bo::create(dev, n);
	if (r || !out)
		return t.expect(false, "import of the vgem dma-buf: %s; CREATE_BO", qaic::errno_name(-r).c_str());
	const auto cs = qaic::copy_slices(n, ch.ddr_base());
	if (qaic::attach_slices(dev, hin, ch.dbc(), qaic::kToDevice, std::span(&cs.in, 1)) ||
	    qaic::attach_slices(dev, out->handle(), ch.dbc(), qaic::kFromDevice, std::span(&cs.out, 1)))
		return t.expect(false, "ATTACH_SLICE_BO");
	const int fence = vb->attach_write_fence();
	if (fence < 0)
		return t.expect(false, "VGEM_FENCE_ATTACH: %s", qaic::errno_name(-fence).c_str());
	execute_behind_fence(t, dev, ch.dbc(), *vb, fence, hin, *out, n);
}

// The buffers of dmabuf_card_fence_busy: udmabufs imported as the input
// and an output, and an exported BO of the driver's own.
struct FenceBuffers {
	std::optional<Udmabuf> in, out;
	std::optional<qaic::Bo> own;
	int own_fd = -1;
	uint32_t hin = 0, hout = 0;
	bool ok = false; // what is missing has been reported

	FenceBuffers(ktap::Case &t, const qaic::Device &dev, size_t n)
	{
		std::string why;
		in = Udmabuf::create(n, &why);
		out = in ? Udmabuf::create(n, &why) : std::nullopt;
		own = qaic::Bo::create(dev, n);
		if (!in || !out || !own) {
			t.expect(false, "udmabuf: %s; CREATE_BO", why.c_str());
			return;
		}
		own_fd = export_bo(dev, own->handle());
		if (own_fd < 0 || import_dmabuf(dev, in->dmabuf(), &hin) || import_dmabuf(dev, out->dmabuf(), &hout)) {
			t.expect(false, "PRIME_HANDLE_TO_FD of a BO (%s), PRIME_FD_TO_HANDLE of the udmabufs",
				 qaic::errno_name(own_fd < 0 ? -own_fd : 0).c_str());
			return;
		}
		std::memset(in->data(), 0x5a, n);
		ok = true;
	}
};

// A round trip through the udmabufs, answered: the fences are signalled by
// the time WAIT_BO returns.
void expect_fences_once_answered(ktap::Case &t, const qaic::Device &dev, const qaic::DataChannel &ch,
				 FenceBuffers &b, size_t n)
{
	const uint32_t dbc = ch.dbc();
	const auto cs = qaic::copy_slices(n, ch.ddr_base());
	t.expect(!qaic::attach_slices(dev, b.hin, dbc, qaic::kToDevice, std::span(&cs.in, 1)) &&
			 !qaic::attach_slices(dev, b.hout, dbc, qaic::kFromDevice, std::span(&cs.out, 1)),
		 "ATTACH_SLICE_BO");
	const qaic_execute_entry e[2] = {{b.hin, qaic::kToDevice}, {b.hout, qaic::kFromDevice}};
	int r = qaic::execute(dev, dbc, e);
	r = r ? r : qaic::wait(dev, dbc, b.hout, 10000);
	t.expect(!r, "a round trip through the udmabufs: %s", qaic::errno_name(-r).c_str());
	{
		SyncFile sf(b.out->dmabuf(), DMA_BUF_SYNC_READ);
		t.expect(sf.status() == 1, "once answered, a reader's sync_file of the output: status %d (%s), want 1",
			 sf.status(), sf.drivers().c_str());
	}
	t.expect(dmabuf_ready(b.out->dmabuf(), POLLIN) && dmabuf_ready(b.in->dmabuf(), POLLOUT),
		 "once answered, poll() of the udmabufs still waits");
	t.expect(!std::memcmp(b.in->data(), b.out->data(), n), "the output udmabuf differs from the input");
	t.expect(!qaic::detach_slices(dev, b.hin) && !qaic::detach_slices(dev, b.hout), "DETACH_SLICE_BO");
}

// Both outputs held back by the card, the input queued behind them: their
// readers wait for the card's write fences, the input's writer for its read.
void expect_fences_while_held(ktap::Case &t, const qaic::Device &dev, const qaic::DataChannel &ch, FenceBuffers &b,
			      SyncFile &sf_out, SyncFile &sf_own)
{
	const uint32_t dbc = ch.dbc();
	const int out_fd = b.out->dmabuf(), in_fd = b.in->dmabuf();
	t.expect(sf_out.status() == 0 && sf_out.drivers().find("qaic/") != std::string::npos,
		 "a reader's sync_file of the held output udmabuf: status %d, fences '%s', want 0 and qaic's",
		 sf_out.status(), sf_out.drivers().c_str());
	t.expect(sf_own.status() == 0, "a reader's sync_file of the exported BO: status %d (%s), want 0",
		 sf_own.status(), sf_own.drivers().c_str());
	t.expect(!dmabuf_ready(out_fd, POLLIN) && !dmabuf_ready(b.own_fd, POLLIN),
		 "poll() for reading the held outputs does not wait (udmabuf %d, exported BO %d)",
		 dmabuf_ready(out_fd, POLLIN), dmabuf_ready(b.own_fd, POLLIN));
	t.expect(dmabuf_ready(in_fd, POLLIN) && !dmabuf_ready(in_fd, POLLOUT),
		 "the input the card is to read: poll() for reading %s, for writing %s (want ready, waiting)",
		 dmabuf_ready(in_fd, POLLIN) ? "ready" : "waits", dmabuf_ready(in_fd, POLLOUT) ? "ready" : "waits");
	const int r = qaic::wait(dev, dbc, b.hout, 200);
	t.expect(r == -ETIMEDOUT, "WAIT_BO of the held output: %s, want ETIMEDOUT", qaic::errno_name(-r).c_str());
	t.expect(!sf_out.wait(200), "the reader's sync_file signalled while the card holds the request");
}

// Both outputs attached and queued held back, the input behind them.
void queue_held_behind(ktap::Case &t, const qaic::Device &dev, const qaic::DataChannel &ch, FenceBuffers &b,
		       size_t n)
{
	const uint32_t dbc = ch.dbc();
	const auto held = held_slice(n, ch.ddr_base()), plain = slice(n, ch.ddr_base());
	t.expect(!qaic::attach_slices(dev, b.hout, dbc, qaic::kFromDevice, std::span(&held, 1)) &&
			 !qaic::attach_slices(dev, b.own->handle(), dbc, qaic::kFromDevice, std::span(&held, 1)) &&
			 !qaic::attach_slices(dev, b.hin, dbc, qaic::kToDevice, std::span(&plain, 1)),
		 "ATTACH_SLICE_BO of the held slices");
	const qaic_execute_entry h[3] = {
		{b.hout, qaic::kFromDevice}, {b.own->handle(), qaic::kFromDevice}, {b.hin, qaic::kToDevice}};
	const int r = qaic::execute(dev, dbc, h);
	t.expect(!r, "EXECUTE_BO of the held requests: %s", qaic::errno_name(-r).c_str());
}

// The card's own accesses as others see them: a consumer of an imported
// output (a udmabuf) or of an exported BO of ours waits, by poll() or by
// the sync_file of DMA_BUF_IOCTL_EXPORT_SYNC_FILE, for the card's write
// fence while the card holds the request back; a writer of the input
// waits for its read. Answered, the fences are signalled by the time
// WAIT_BO returns; torn down (the channel closed), they signal with
// ECANCELED.
void dmabuf_card_fence_busy(ktap::Case &t, const Fixture &f)
{
	CardChannel cc(t, f.card, f.p.no_dmabuf_fences);
	if (!cc.ok())
		return;
	const size_t n = 16 * 1024;
	FenceBuffers b(t, *cc.dev, n);
	if (!b.ok)
		return;
	expect_fences_once_answered(t, *cc.dev, *cc.ch, b, n);
	queue_held_behind(t, *cc.dev, *cc.ch, b, n);
	SyncFile sf_out(b.out->dmabuf(), DMA_BUF_SYNC_READ), sf_own(b.own_fd, DMA_BUF_SYNC_READ);
	expect_fences_while_held(t, *cc.dev, *cc.ch, b, sf_out, sf_own);
	// Torn down.
	cc.ch.reset();
	t.expect(sf_out.wait(30000) && sf_own.wait(30000), "the fences did not signal when the channel closed");
	t.expect(sf_out.status() == -ECANCELED && sf_own.status() == -ECANCELED,
		 "sync_file status %d and %d once the channel closed, want %d (ECANCELED)", sf_out.status(),
		 sf_own.status(), -ECANCELED);
	t.expect(dmabuf_ready(b.in->dmabuf(), POLLOUT), "poll() for writing the input still waits");
	::close(b.own_fd);
}

// A crash of the workload (SSR, through the card's test mailbox) drops
// the request the card held: its fence signals, with EPIPE as WAIT_BO
// says, and nobody waiting for the buffer hangs.
void dmabuf_fence_after_ssr(ktap::Case &t, const Fixture &f)
{
	if (f.p.no_dmabuf_fences)
		return t.skip(f.p.no_dmabuf_fences);
	qaic::Mailbox mb(f.card);
	if (!mb.ok())
		return t.skip("no test mailbox (-device aic100,test-mailbox=on): " + mb.problem());
	const auto cards = qaic::find_cards();
	if (f.card >= cards.size() || !cards[f.card].accel_minor)
		return t.expect(false, "no card %u", f.card);
	CardChannel cc(t, f.card);
	if (!cc.ok())
		return;
	auto &dev = cc.dev;
	const uint32_t dbc = cc.ch->dbc();
	const size_t n = 16 * 1024;
	std::string why;
	auto out = Udmabuf::create(n, &why);
	uint32_t hout = 0;
	if (!out || import_dmabuf(*dev, out->dmabuf(), &hout))
		return t.expect(false, "udmabuf: %s; PRIME_FD_TO_HANDLE", why.c_str());
	const auto held = held_slice(n, cc.ch->ddr_base());
	const qaic_execute_entry e{hout, qaic::kFromDevice};
	if (qaic::attach_slices(*dev, hout, dbc, qaic::kFromDevice, std::span(&held, 1)) ||
	    qaic::execute(*dev, dbc, std::span(&e, 1)))
		return t.expect(false, "ATTACH_SLICE_BO and EXECUTE_BO of a held request");
	SyncFile sf(out->dmabuf(), DMA_BUF_SYNC_READ);
	t.expect(sf.status() == 0, "before the crash: status %d (%s), want 0", sf.status(), sf.drivers().c_str());
	const std::string r = mb.run("crash dbc=" + std::to_string(dbc) + " reason=dma-buf fence test");
	t.expect(r.empty(), "crash dbc=%u: %s", dbc, r.c_str());
	t.expect(sf.wait(30000), "the card's fence did not signal within 30 s of the crash");
	t.expect(sf.status() == -EPIPE, "after the crash: status %d, want %d (EPIPE)", sf.status(), -EPIPE);
	const int w = qaic::wait(*dev, dbc, hout, 100);
	t.expect(w == -EPIPE, "WAIT_BO after the crash: %s, want EPIPE", qaic::errno_name(-w).c_str());
	// The next case needs the DBC back from its recovery.
	const std::string state = "/sys/class/accel/accel" + std::to_string(*cards[f.card].accel_minor) + "/dbc" +
				  std::to_string(dbc) + "_state";
	t.expect(guest_util::wait_for([&] { return qaic::read_attr(state) == "0"; }, 60),
		 "DBC %u not idle again after its recovery: state %s", dbc, qaic::read_attr(state).c_str());
}

// ---- where a DBC's interrupt goes --------------------------------------------

// Round trips submitted from each CPU in turn: with datapath_irq_follows=1
// the interrupt follows the submitter (at most every 10 ms).
void expect_irq_follows(ktap::Case &t, RoundTrip &rt, unsigned irq)
{
	const auto on = [&](const std::string &cpus) { return affinity_list(irq) == cpus; };
	t.expect(pin_to_cpu(1) && rt.until([&] { return on("1"); }, 10),
		 "following, submitting from CPU 1: interrupt %u on CPUs %s", irq, affinity_list(irq).c_str());
	t.expect(pin_to_cpu(0) && rt.until([&] { return on("0"); }, 10),
		 "following, submitting from CPU 0: interrupt %u on CPUs %s", irq, affinity_list(irq).c_str());
}

// The admin's CPU 1, while this thread submits from CPU 0 (a while of 20
// follow intervals at least), is kept; set back to what it was when
// requested (every online CPU), it follows again.
void expect_admins_affinity_kept(ktap::Case &t, const Profile &p, RoundTrip &rt, unsigned irq)
{
	const std::string list = "/proc/irq/" + std::to_string(irq) + "/smp_affinity_list";
	const std::string online = trimmed(qaic::read_attr("/sys/devices/system/cpu/online"));
	KmsgTail km;
	t.expect(guest_util::spit(list, "1"), "writing 1 to %s", list.c_str());
	pin_to_cpu(0);
	rt.until([] { return false; }, 0.2);
	t.expect(!rt.failed && affinity_list(irq) == "1", "the admin's CPU 1 was not kept: interrupt %u on CPUs %s", irq,
		 affinity_list(irq).c_str());
	if (p.irq_follows_param)
		t.expect(!km.wait_for("affinity 1 " + std::string(kKeptMessage), 5000).empty(),
			 "the kernel log does not say the affinity was kept");
	t.expect(guest_util::spit(list, online), "writing %s to %s", online.c_str(), list.c_str());
	if (p.irq_follows_param)
		t.expect(rt.until([&] { return affinity_list(irq) == "0"; }, 10),
			 "set back to %s: interrupt %u still on CPUs %s", online.c_str(), irq, affinity_list(irq).c_str());
}

// Where a DBC's interrupt goes. By default neither driver moves it:
// submitting from CPU 1, then from CPU 0, leaves it where it was. With
// our datapath_irq_follows=1 it follows the CPU that submits (at most
// every 10 ms), unless someone else set its affinity: that stays until
// it is set back. The admin's setting stays with upstream's driver too.
void irq_affinity(ktap::Case &t, const Fixture &f)
{
	const auto cards = qaic::find_cards();
	if (f.card >= cards.size())
		return t.expect(false, "no card %u", f.card);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return t.skip("one CPU");
	const std::vector<unsigned> irqs = msi_irqs(cards[f.card].bdf);
	if (irqs.size() < 2)
		return t.skip("one MSI: the DBCs share MHI's vector");
	RoundTrips r(t, f.card);
	if (!r.ok())
		return;
	RoundTrip &rt = *r.rt;
	const unsigned irq = dbc_irq(irqs, r.cc.ch->dbc());
	// By default: a while of 20 follow intervals on each CPU.
	const std::string before = affinity_list(irq);
	if (f.p.irq_follows_param)
		t.expect(qaic::read_attr(kIrqFollows) == "N", "datapath_irq_follows is '%s' by default, want N",
			 qaic::read_attr(kIrqFollows).c_str());
	for (unsigned cpu : {1u, 0u}) {
		pin_to_cpu(cpu);
		rt.until([] { return false; }, 0.2);
		t.expect(!rt.failed && affinity_list(irq) == before,
			 "by default, submitting from CPU %u moved interrupt %u from CPUs %s to %s", cpu, irq,
			 before.c_str(), affinity_list(irq).c_str());
	}
	std::optional<Setting> follows;
	if (f.p.irq_follows_param) {
		follows.emplace(kIrqFollows, "1");
		t.expect(follows->ok(), "setting datapath_irq_follows=1");
		expect_irq_follows(t, rt, irq);
	}
	expect_admins_affinity_kept(t, f.p, rt, irq);
	t.expect(rt.once(), "a round trip at the end");
}

// The driver's own move, not applied yet, is not someone else's choice.
// Without interrupt remapping (a single MSI here) the kernel moves an
// MSI only at its next interrupt and shows where it was meanwhile.
// Requests that the card holds back raise none: submitted from CPU 1
// over 20 follow intervals, after round trips brought the interrupt to
// CPU 0, they keep the driver's move to CPU 1 pending all along, and
// the driver must not log "set elsewhere, kept" for it. (With
// remapping the move is done at once: nothing to mistake.)
void irq_follow_own_move(ktap::Case &t, const Fixture &f)
{
	if (f.p.no_irq_follow)
		return t.skip(f.p.no_irq_follow);
	if (qaic::read_attr(kPolling) == "Y")
		return t.skip("datapath_polling=1: the driver leaves interrupts alone");
	const auto cards = qaic::find_cards();
	if (f.card >= cards.size())
		return t.expect(false, "no card %u", f.card);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return t.skip("one CPU");
	RoundTrips r(t, f.card);
	if (!r.ok())
		return;
	const qaic::Device &dev = *r.cc.dev;
	const uint32_t dbc = r.cc.ch->dbc();
	std::vector<qaic::Bo> held;
	const auto hs = held_slice(4096, r.cc.ch->ddr_base() + (1 << 20));
	for (int k = 0; k < 24; k++) {
		auto b = qaic::Bo::create(dev, 4096);
		if (!b || qaic::attach_slices(dev, b->handle(), dbc, qaic::kFromDevice, std::span(&hs, 1)))
			return t.expect(false, "held BO %d", k);
		held.push_back(std::move(*b));
	}
	const unsigned irq = dbc_irq(msi_irqs(cards[f.card].bdf), dbc);
	KmsgTail km;
	Setting follows(kIrqFollows, "1");
	t.expect(km.ok() && follows.ok(), "reading /dev/kmsg, setting datapath_irq_follows=1");
	t.expect(pin_to_cpu(0) && r.rt->until([&] { return affinity_list(irq) == "0"; }, 10),
		 "submitting from CPU 0: interrupt %u on CPUs %s", irq, affinity_list(irq).c_str());
	pin_to_cpu(1);
	std::string kept;
	size_t sent = 0;
	for (auto &b : held) {
		const qaic_execute_entry e{b.handle(), qaic::kFromDevice};
		const int res = qaic::execute(dev, dbc, std::span(&e, 1));
		t.expect(!res, "EXECUTE_BO of held BO %zu: %s", sent, qaic::errno_name(-res).c_str());
		sent++;
		// Paced by the 10 ms of the driver's follow interval.
		if (res || !(kept = km.wait_for(kKeptMessage, 10)).empty())
			break;
	}
	const std::string effective = trimmed(qaic::read_attr("/proc/irq/" + std::to_string(irq) +
							      "/effective_affinity_list"));
	t.expect(kept.empty(), "the driver took its own move for someone else's: %s", kept.c_str());
	t.expect(affinity_list(irq) == "1", "submitting from CPU 1: interrupt %u on CPUs %s", irq,
		 affinity_list(irq).c_str());
	t.note("interrupt %u after %zu held requests from CPU 1: affinity %s, effective %s", irq, sent,
	       affinity_list(irq).c_str(), effective.c_str());
}

// Per-DBC fifo_size and queued: where upstream puts them and, for our
// driver, also where the open UMD looks.
void dbc_debugfs(ktap::Case &t, const Fixture &f)
{
	const auto cards = qaic::find_cards();
	if (f.card >= cards.size())
		return t.expect(false, "no card %u", f.card);
	CardChannel cc(t, f.card);
	if (!cc.ok())
		return;
	char dbc[16];
	std::snprintf(dbc, sizeof(dbc), "dbc%03u", cc.ch->dbc());
	std::vector<std::string> dirs = {"/sys/kernel/debug/accel/" + cards[f.card].bdf + "/" + dbc};
	if (f.p.umd_debugfs)
		dirs.push_back("/sys/kernel/debug/qaic/" + cards[f.card].bdf + "/" + dbc);
	for (const auto &d : dirs) {
		const std::string size = qaic::read_attr(d + "/fifo_size"), queued = qaic::read_attr(d + "/queued");
		t.expect(size == "64", "%s/fifo_size '%s', want 64", d.c_str(), size.c_str());
		t.expect(queued == "0", "%s/queued '%s', want 0", d.c_str(), queued.c_str());
	}
}

// ---- the BO ioctls' errnos -------------------------------------------------

void expect_errno(ktap::Case &t, int got, int want, const char *what)
{
	t.expect(got == want, "%s: %s, want %s", what, qaic::errno_name(got).c_str(), qaic::errno_name(want).c_str());
}

// ATTACH_SLICE_BO's refusals of a header or slice of BO `bo` on `dbc`
// (`other`: a DBC not the user's).
void expect_attach_errors(ktap::Case &t, const qaic::Device &dev, const qaic::Bo &bo, uint32_t dbc, uint32_t other,
			  uint64_t base)
{
	qaic_attach_slice_entry s1 = slice(4096, base);
	qaic_attach_slice a{};
	a.hdr = {0, dbc, bo.handle(), 1, 0};
	a.data = reinterpret_cast<uintptr_t>(&s1);
	const auto attach = [&](int want, const char *what) {
		expect_errno(t, dev.ioctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a), want, what);
	};
	attach(-EINVAL, "ATTACH count 0");
	a.hdr.count = 1;
	a.hdr.dir = 3;
	attach(-EINVAL, "ATTACH dir 3");
	a.hdr.dir = 1;
	a.data = 0;
	attach(-EINVAL, "ATTACH data 0");
	a.data = reinterpret_cast<uintptr_t>(&s1);
	a.hdr.dbc_id = 16;
	attach(-EINVAL, "ATTACH dbc 16");
	a.hdr.dbc_id = dbc;
	a.hdr.handle = 0xBAD;
	attach(-ENOENT, "ATTACH bad handle");
	a.hdr.handle = bo.handle();
	qaic_attach_slice_entry bad = s1;
	bad.db_len = 7;
	a.data = reinterpret_cast<uintptr_t>(&bad);
	attach(-EINVAL, "ATTACH db_len 7");
	bad = s1;
	bad.sem0 = qaic::sem(7, 0, 0, false);
	attach(-EINVAL, "ATTACH semaphore command 7");
	bad = s1;
	bad.offset = 8192 - 100;
	attach(-EINVAL, "ATTACH slice past the BO");
	bad = s1;
	bad.sem0 = qaic::sem(QAIC_SEM_WAIT_EQUAL, 0, 0, true);
	bad.sem1 = qaic::sem(QAIC_SEM_WAIT_EQUAL, 1, 0, true);
	attach(-EINVAL, "ATTACH two presyncs");
	a.hdr.dbc_id = other;
	a.data = reinterpret_cast<uintptr_t>(&s1);
	attach(-EINVAL, "ATTACH on a DBC not ours");
}

// EXECUTE_BO's, WAIT_BO's, DETACH_SLICE_BO's and PERF_STATS_BO's refusals
// around BO `bo`, never sliced.
void expect_unsliced_errors(ktap::Case &t, const qaic::Device &dev, const qaic::Bo &bo, uint32_t dbc, uint32_t other)
{
	qaic_execute_entry ex{bo.handle(), 1};
	expect_errno(t, qaic::execute(dev, dbc, std::span(&ex, 0)), -EINVAL, "EXECUTE count 0");
	expect_errno(t, qaic::execute(dev, 16, std::span(&ex, 1)), -EINVAL, "EXECUTE dbc 16");
	expect_errno(t, qaic::execute(dev, other, std::span(&ex, 1)), -EPERM, "EXECUTE on a DBC not ours");
	expect_errno(t, qaic::execute(dev, dbc, std::span(&ex, 1)), -EINVAL, "EXECUTE of an unsliced BO");
	qaic_execute_entry nobo{0xBAD, 1};
	expect_errno(t, qaic::execute(dev, dbc, std::span(&nobo, 1)), -ENOENT, "EXECUTE bad handle");

	qaic_wait w{bo.handle(), 100, dbc, 1};
	expect_errno(t, dev.ioctl(DRM_IOCTL_QAIC_WAIT_BO, &w), -EINVAL, "WAIT pad");
	expect_errno(t, qaic::wait(dev, 16, bo.handle(), 100), -EINVAL, "WAIT dbc 16");
	expect_errno(t, qaic::wait(dev, other, bo.handle(), 100), -EPERM, "WAIT on a DBC not ours");
	expect_errno(t, qaic::wait(dev, dbc, 0xBAD, 100), -ENOENT, "WAIT bad handle");
	expect_errno(t, qaic::wait(dev, dbc, bo.handle(), 100), 0, "WAIT on a BO never submitted");

	qaic_detach_slice d{bo.handle(), 1};
	expect_errno(t, dev.ioctl(DRM_IOCTL_QAIC_DETACH_SLICE_BO, &d), -EINVAL, "DETACH pad");
	expect_errno(t, qaic::detach_slices(dev, 0xBAD), -ENOENT, "DETACH bad handle");
	expect_errno(t, qaic::detach_slices(dev, bo.handle()), -EINVAL, "DETACH of an unsliced BO");
	qaic_perf_stats_entry ps{};
	ps.handle = bo.handle();
	expect_errno(t, qaic::perf_stats(dev, 16, std::span(&ps, 1)), -EINVAL, "PERF_STATS dbc 16");
}

// The errors that need a slice: BO `bo` sliced, and an output that the
// device never answers (nothing feeds it) queued.
void expect_sliced_errors(ktap::Case &t, const qaic::Device &dev, const qaic::Bo &bo, uint32_t dbc, uint64_t base)
{
	qaic_attach_slice_entry s1 = slice(4096, base);
	expect_errno(t, qaic::attach_slices(dev, bo.handle(), dbc, qaic::kToDevice, std::span(&s1, 1)), 0, "ATTACH");
	expect_errno(t, qaic::attach_slices(dev, bo.handle(), dbc, qaic::kToDevice, std::span(&s1, 1)), -EINVAL,
		     "ATTACH of a sliced BO");
	auto out = qaic::Bo::create(dev, 4096);
	qaic_attach_slice_entry so = slice(4096, base);
	so.sem0 = qaic::sem(QAIC_SEM_WAIT_GT_0, 9, 0, true);
	expect_errno(t, qaic::attach_slices(dev, out->handle(), dbc, qaic::kFromDevice, std::span(&so, 1)), 0,
		     "ATTACH output");
	qaic_execute_entry eo{out->handle(), 2};
	expect_errno(t, qaic::execute(dev, dbc, std::span(&eo, 1)), 0, "EXECUTE output");
	expect_errno(t, qaic::execute(dev, dbc, std::span(&eo, 1)), -EINVAL, "EXECUTE of a queued BO");
	expect_errno(t, qaic::wait(dev, dbc, out->handle(), 200), -ETIMEDOUT, "WAIT on a BO the card holds back");
	expect_errno(t, qaic::detach_slices(dev, out->handle()), -EBUSY, "DETACH of a queued BO");
	expect_errno(t, qaic::detach_slices(dev, bo.handle()), 0, "DETACH");
}

// The BO and slice ioctls refuse what they must, each with its errno.
void bo_ioctl_errors(ktap::Case &t, const Fixture &f)
{
	CardChannel cc(t, f.card);
	if (!cc.ok())
		return;
	const uint32_t dbc = cc.ch->dbc(), other = (dbc + 1) % 16;
	auto bo = qaic::Bo::create(*cc.dev, 8192);
	if (!bo)
		return t.expect(false, "CREATE_BO");
	expect_attach_errors(t, *cc.dev, *bo, dbc, other, cc.ch->ddr_base());
	expect_unsliced_errors(t, *cc.dev, *bo, dbc, other);
	expect_sliced_errors(t, *cc.dev, *bo, dbc, cc.ch->ddr_base());
}

// The driver never steers an interrupt out of the affinity it had when
// requested, which irqaffinity= sets: here its run-time form,
// /proc/irq/default_smp_affinity, set to CPU 0 while the card is bound
// again. Submitting from CPU 1 with datapath_irq_follows=1 then leaves
// the interrupt on CPU 0. (The card is bound once more by the next
// case, with every CPU allowed again.)
void irq_follow_within_home(ktap::Case &t, const Fixture &f)
{
	if (f.p.no_irq_follow)
		return t.skip(f.p.no_irq_follow);
	if (qaic::read_attr(kPolling) == "Y")
		return t.skip("datapath_polling=1: the driver leaves interrupts alone");
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return t.skip("one CPU");
	const auto cards = qaic::find_cards();
	if (f.card >= cards.size())
		return t.expect(false, "no card %u", f.card);
	const std::string bdf = cards[f.card].bdf;
	{
		Setting only0("/proc/irq/default_smp_affinity", "1");
		t.expect(only0.ok(), "setting /proc/irq/default_smp_affinity to CPU 0");
		t.expect(guest_util::spit("/sys/bus/pci/drivers/qaic/unbind", bdf) &&
				 guest_util::spit("/sys/bus/pci/drivers/qaic/bind", bdf),
			 "unbind and bind %s", bdf.c_str());
	}
	RoundTrips r(t, f.card);
	if (!r.ok())
		return;
	const unsigned irq = dbc_irq(msi_irqs(bdf), r.cc.ch->dbc());
	t.expect(affinity_list(irq) == "0", "requested with CPU 0 for default: interrupt %u on CPUs %s", irq,
		 affinity_list(irq).c_str());
	Setting follows(kIrqFollows, "1");
	t.expect(follows.ok(), "setting datapath_irq_follows=1");
	pin_to_cpu(1);
	r.rt->until([] { return false; }, 0.2);
	t.expect(!r.rt->failed && affinity_list(irq) == "0", "submitting from CPU 1: interrupt %u on CPUs %s", irq,
		 affinity_list(irq).c_str());
}

// ---- an unplug under a user's mappings ---------------------------------------

// Each BO touched in a process of its own, the card unbound: a SIGBUS ends
// that one only. The plain BO still holds what was written before.
void expect_bos_reachable(ktap::Case &t, const qaic::Bo &plain, const qaic::Bo &sliced)
{
	for (const auto *bo : {&plain, &sliced}) {
		std::fflush(stdout);
		const pid_t pid = fork();
		if (pid == 0) {
			bool ok = true;
			if (bo == &plain)
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
		const char *which = bo == &plain ? "a mapped BO" : "a queued BO";
		t.expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s after the unbind: %s", which,
			 WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : WEXITSTATUS(st) ? "its contents changed" : "?");
	}
}

// A user with one BO sliced and queued on its DBC and one only mapped,
// the card unbound under it: it reaches both BOs' memory, and the ioctls
// tell it ENODEV. Everything it opened is closed on return. False: the
// case cannot go on.
bool user_through_unbind(ktap::Case &t, unsigned card, const std::string &bdf)
{
	auto dev = open_card(t, card);
	if (!dev)
		return false;
	qaic::DataChannel ch(*dev);
	if (!open_channel(t, ch))
		return false;
	auto sliced = qaic::Bo::create(*dev, 65536), plain = qaic::Bo::create(*dev, 65536);
	if (!sliced || !plain) {
		t.expect(false, "CREATE_BO");
		return false;
	}
	auto so = slice(65536, ch.ddr_base());
	so.sem0 = qaic::sem(QAIC_SEM_WAIT_GT_0, 9, 0, true); // nothing signals it: stays queued
	t.expect(!qaic::attach_slices(*dev, sliced->handle(), ch.dbc(), qaic::kFromDevice, std::span(&so, 1)), "ATTACH");
	const qaic_execute_entry e{sliced->handle(), qaic::kFromDevice};
	t.expect(!qaic::execute(*dev, ch.dbc(), std::span(&e, 1)), "EXECUTE_BO");
	for (size_t i = 0; i < 65536; i++)
		plain->data()[i] = static_cast<uint8_t>(i * 7 + 1);
	std::FILE *f = std::fopen("/sys/bus/pci/drivers/qaic/unbind", "w");
	const bool unbound = f && std::fputs(bdf.c_str(), f) >= 0 && std::fclose(f) == 0;
	t.expect(unbound, "unbind %s", bdf.c_str());
	if (!unbound)
		return false;
	expect_bos_reachable(t, *plain, *sliced);
	t.expect(qaic::wait(*dev, ch.dbc(), sliced->handle(), 100) == -ENODEV, "WAIT_BO after the unbind: %s",
		 qaic::errno_name(-qaic::wait(*dev, ch.dbc(), sliced->handle(), 100)).c_str());
	int err = 0;
	t.expect(!qaic::Bo::create(*dev, 4096, &err) && err == -ENODEV, "CREATE_BO after the unbind: %s",
		 qaic::errno_name(-err).c_str());
	return true;
}

// The card is unbound from the driver (hot unplug) while a user has BOs
// mapped: the DRM core zaps every mapping of the device, and the user
// must still reach its BOs' memory (host pages the BOs keep), not die
// of SIGBUS; the ioctls tell it ENODEV. Then the card is bound again.
void bo_mmap_after_unbind(ktap::Case &t, const Fixture &f)
{
	if (f.p.no_mmap_after_unbind)
		return t.skip(f.p.no_mmap_after_unbind);
	const auto cards = qaic::find_cards();
	if (f.card >= cards.size())
		return t.expect(false, "no card %u", f.card);
	const std::string bdf = cards[f.card].bdf;
	if (!user_through_unbind(t, f.card, bdf))
		return;
	std::FILE *b = std::fopen("/sys/bus/pci/drivers/qaic/bind", "w");
	t.expect(b && std::fputs(bdf.c_str(), b) >= 0 && std::fclose(b) == 0, "bind %s", bdf.c_str());
	CardChannel cc(t, f.card);
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
			 !qaic::attach_slices(*dev, out->handle(), ch.dbc(), qaic::kFromDevice, std::span(&cs.out, 1)),
		 "ATTACH after the bind");
	const qaic_execute_entry e[2] = {{in->handle(), qaic::kToDevice}, {out->handle(), qaic::kFromDevice}};
	t.expect(!qaic::execute(*dev, ch.dbc(), e) && !qaic::wait(*dev, ch.dbc(), out->handle(), 10000) &&
			 !std::memcmp(in->data(), out->data(), 4096),
		 "a round trip after the bind");
}

// ---- the suite --------------------------------------------------------------

// Every case in the order it runs.
const ktap::Def<Fixture> kCases[] = {
	KTAP_CASE(round_trip, 120),
	KTAP_CASE(workloads, 300),
	KTAP_CASE(qpc_containers, 300),
	KTAP_CASE(pipelined, 600),
	KTAP_CASE(processes_16, 600),
	KTAP_CASE(partial_execute, 120),
	KTAP_CASE(dmabuf_import, 120),
	KTAP_CASE(dmabuf_waits_for_producer, 120),
	KTAP_CASE(dmabuf_card_fence_busy, 120),
	KTAP_CASE(dmabuf_fence_after_ssr, 120),
	KTAP_CASE(irq_affinity, 120),
	KTAP_CASE(irq_follow_own_move, 120),
	KTAP_CASE(dbc_debugfs, 60),
	KTAP_CASE(bo_ioctl_errors, 120),
	KTAP_CASE(irq_follow_within_home, 180),
	KTAP_CASE(bo_mmap_after_unbind, 120),
};

} // namespace

int main(int argc, char **argv)
{
	const bool listing = ktap::take_list_option(argc, argv);
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
		else if (k == "--only") {
			std::stringstream names(v);
			for (std::string name; std::getline(names, name, ',');)
				o.only.push_back(name);
		}
		else {
			std::fprintf(stderr, "unknown option %s\n", k.c_str());
			return 2;
		}
	}
	// The suite's cases, or those that --only names (a run by hand).
	const Fixture f{o.card, o.upstream ? kUpstreamProfile : kOursProfile, o};
	ktap::Suite s;
	for (const auto &c : kCases)
		if (o.only.empty() || std::find(o.only.begin(), o.only.end(), c.name) != o.only.end())
			s.add(c, f);
	return s.run_or_list(listing);
}
