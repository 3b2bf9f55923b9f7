// SPDX-License-Identifier: GPL-2.0-or-later
// In-guest checks of the card's health channels as the driver shows them
// (docs/health.md), reported as KTAP: hwmon and telemetry follow the card's
// sensors and counters, RAS events are counted and logged, a UE resets the
// card, a crashed workload recovers through SSR (EPIPE, DBC states and
// their uevents, devcoredump, Pipeline::recover()) while another keeps
// computing, a user killed mid-SSR leaks nothing, and bad injections are
// refused. Faults come from the card's BAR4 test mailbox (mailbox.h), so
// the guest needs -device aic100,test-mailbox=on.
//
// With --upstream 1 (upstream Linux 6.12's qaic, which binds none of the
// health channels): the card recovers a crash by itself, RAS and sensor
// injections leave the driver alone, and a UE nobody hears takes the card
// to SYS_ERR, from which upstream brings it back ONLINE. With --upstream 7.3
// (upstream Linux 7.3's qaic, with SSR and RAS clients of its own): the
// cases of ours that hold for it, in its terms (docs/upstream-7.3.md), and
// what it adds.
//
// Each case is a function of the case's name, given the fixture (the card,
// the driver's profile, the options); the table at the end lists them in
// the order they run, with the drivers they run against. Where the drivers
// differ (errnos, what they bind, how they log, their known bugs) is their
// Profile's, in one place: a case asks the profile, never which driver it is.
//
// Cases with counts: ssr_crash_loop (--crashes, 20), reload_under_load
// (--reloads, 6) and reset_under_load (--resets, 4). --soak 1 runs only the
// soak (make soak, scripts/soak): a baseline, those three cases (with the
// counts given) and soak_no_leaks, which checks that the card's resources,
// the guest's memory, devcoredump and the kernel log are as they were and
// prints the figures.
//
// --known-bug close-after-unbind: the driver is upstream's without patch
// 0005/0006 (docs/upstream-bugs.md); reload_under_load ends its users before
// it unbinds the card, and says so.
// --known-bug execute-unwind: the driver is upstream's without patch 0008
// (docs/upstream-bugs.md); ssr_execute_unwind expects the bug and loads the
// driver again after it. That case needs --exec-gate, the path of the test
// module tests/guest/kmod/qaic_exec_gate.ko built for the guest's kernel;
// without it the case is skipped.
//
// Usage: qaic-health-tests [--card N] [--upstream 1] [--crashes N] [--reloads N]
//                          [--resets N] [--soak 1] [--case NAME] [--exec-gate KO]
//                          [--known-bug close-after-unbind|execute-unwind]...
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datapath.h"
#include "driver_under_test.h"
#include "guest_util.h"
#include "ktap.h"
#include "mailbox.h"
#include "nnc_client.h"
#include "pipeline.h"
#include "qaic.h"
#include "workloads.h"

namespace {

namespace fs = std::filesystem;
namespace wl = aic100::workloads;
namespace cmd = aic100::nnc::cmd;
using Clock = std::chrono::steady_clock;

struct Options {
	unsigned card = 0;
	DriverUnderTest driver = DriverUnderTest::Ours; // --upstream
	unsigned crashes = 20; // ssr_crash_loop
	unsigned reloads = 6;  // reload_under_load
	unsigned resets = 4;   // reset_under_load
	bool soak = false;     // the soak's cases only (make soak)
	// --known-bug close-after-unbind, execute-unwind (Profile says what they do)
	bool close_after_unbind_bug = false, execute_unwind_bug = false;
	std::string exec_gate; // --exec-gate: tests/guest/kmod/qaic_exec_gate.ko for the guest's kernel
	std::string only;      // run this case alone
	std::map<std::string, std::string> skips; // --skip NAME=WHY
};

constexpr double kOnlineTimeout = 60; // seconds; TCG guests are slow
constexpr double kSsrTimeout = 30;    // a crash to its DBC free again

// ---- small helpers ------------------------------------------------------------

bool wait_for(const std::function<bool()> &cond, double timeout_s, int poll_ms = 10)
{
	const auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
	while (Clock::now() < end) {
		if (cond())
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
	}
	return cond();
}

double ms_since(Clock::time_point t0)
{
	return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::optional<qaic::Card> card_info(unsigned card)
{
	auto cards = qaic::find_cards();
	if (card >= cards.size())
		return std::nullopt;
	return cards[card];
}

// ONLINE as users see it: the accel node opens (ENODEV until the card is).
bool is_online(unsigned card)
{
	auto c = card_info(card);
	return c && c->accel_minor && qaic::Device::open(*c->accel_minor).has_value();
}

bool is_online_bdf(const std::string &bdf)
{
	for (const auto &c : qaic::find_cards())
		if (c.bdf == bdf)
			return c.accel_minor && qaic::Device::open(*c.accel_minor).has_value();
	return false;
}

std::optional<qaic::Device> open_card(ktap::Case &t, unsigned card, double timeout_s = kOnlineTimeout)
{
	std::optional<qaic::Device> dev;
	wait_for([&] {
		auto c = card_info(card);
		if (c && c->accel_minor)
			dev = qaic::Device::open(*c->accel_minor);
		return dev.has_value();
	}, timeout_s, 100);
	t.expect(dev.has_value(), "card %u: no ONLINE accel node", card);
	return dev;
}

// Gives up on the case at once: for states the case cannot unwind from
// (a thread that will not stop). The harness reports the case failed.
[[noreturn]] void abandon(ktap::Case &t, const char *why)
{
	t.expect(false, "%s; abandoning the case", why);
	std::fflush(stdout);
	_exit(1);
}

std::optional<int64_t> read_num(const std::string &path)
{
	const std::string s = qaic::read_attr(path);
	if (s.empty())
		return std::nullopt;
	errno = 0;
	char *end = nullptr;
	const long long v = std::strtoll(s.c_str(), &end, 0);
	if (errno || *end)
		return std::nullopt;
	return v;
}

// 0 or -errno of writing `value` to a sysfs file.
int write_sysfs(const std::string &path, const std::string &value)
{
	const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	const ssize_t n = ::write(fd, value.data(), value.size());
	const int r = n < 0 ? -errno : 0;
	::close(fd);
	return r;
}

std::string slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string unique_tag()
{
	std::random_device rd;
	char b[24];
	std::snprintf(b, sizeof(b), "%08x", rd());
	return b;
}

std::string str(int64_t v) { return std::to_string(v); }
std::string fmt(const std::optional<int64_t> &v) { return v ? std::to_string(*v) : std::string("(unreadable)"); }

// ---- where our driver shows things --------------------------------------------

struct Sysfs {
	std::string pci;   // /sys/bus/pci/devices/<bdf>
	std::string bdf;
	std::string accel; // /sys/class/accel/accelN
	std::string hwmon; // .../<bdf>/hwmon/hwmonK named "qaic", if any

	std::optional<int64_t> ras(const char *name) const { return read_num(pci + "/" + name); }
	std::optional<int64_t> tele(const char *name) const { return read_num(pci + "/telemetry/" + name); }
	std::optional<int64_t> hw(const char *name) const { return read_num(hwmon + "/" + name); }
	std::string dbc_state_path(uint32_t dbc) const { return accel + "/dbc" + std::to_string(dbc) + "_state"; }
	std::optional<int64_t> dbc_state(uint32_t dbc) const { return read_num(dbc_state_path(dbc)); }
};

std::optional<Sysfs> sysfs_of(ktap::Case &t, unsigned card)
{
	auto c = card_info(card);
	if (!c) {
		t.expect(false, "no card %u", card);
		return std::nullopt;
	}
	Sysfs s;
	s.pci = c->sysfs;
	s.bdf = c->bdf;
	if (c->accel_minor)
		s.accel = "/sys/class/accel/accel" + std::to_string(*c->accel_minor);
	std::error_code ec;
	for (const auto &d : fs::directory_iterator(s.pci + "/hwmon", ec))
		if (qaic::read_attr(d.path().string() + "/name") == "qaic")
			s.hwmon = d.path().string();
	return s;
}

// ---- the kernel log since a mark ----------------------------------------------

struct LogLine {
	int level;
	std::string text;
};

// /dev/kmsg from where it stood at construction; immune to the ring
// buffer's size, unlike offsets into dmesg's output.
class Kmsg {
public:
	Kmsg()
	{
		fd_ = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd_ >= 0)
			::lseek(fd_, 0, SEEK_END);
	}
	~Kmsg()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	Kmsg(const Kmsg &) = delete;
	Kmsg &operator=(const Kmsg &) = delete;

	bool ok() const { return fd_ >= 0; }
	// Times the ring buffer overwrote records before they were read (a
	// long case reads lines() as it goes to keep up).
	unsigned lost() const { return lost_; }
	const std::vector<LogLine> &lines()
	{
		char buf[8192];
		for (;;) {
			const ssize_t n = ::read(fd_, buf, sizeof(buf) - 1);
			if (n < 0 && errno == EPIPE) {
				lost_++; // overwritten before we read it
				continue;
			}
			if (n <= 0)
				break;
			buf[n] = 0;
			const char *semi = std::strchr(buf, ';');
			if (!semi)
				continue;
			const char *nl = std::strchr(semi, '\n');
			lines_.push_back({std::atoi(buf) & 7, std::string(semi + 1, nl ? nl : buf + n)});
		}
		return lines_;
	}
	// Lines that contain every one of `words`.
	std::vector<std::string> grep(const std::vector<std::string> &words)
	{
		std::vector<std::string> out;
		for (const auto &l : lines())
			if (std::all_of(words.begin(), words.end(),
					[&](const std::string &w) { return l.text.find(w) != std::string::npos; }))
				out.push_back(l.text);
		return out;
	}
	bool wait_grep(const std::vector<std::string> &words, double timeout_s)
	{
		return wait_for([&] { return !grep(words).empty(); }, timeout_s, 20);
	}

private:
	int fd_ = -1;
	unsigned lost_ = 0;
	std::vector<LogLine> lines_;
};

// Kernel trouble of any kind: a splat fails every case that sees one.
bool alarming(const std::string &s)
{
	static const char *const signs[] = {"WARNING:", "BUG:", "Oops", "Call Trace", "general protection",
					    "Kernel panic", "refcount_t", "list_add corruption", "list_del corruption",
					    "UBSAN", "KASAN", "INFO: task", "circular locking", "recursive locking",
					    "sleeping function called", "kmemleak", "use-after-free", "double free",
					    // A DMA the IOMMU refused: the card wrote where the host had not mapped.
					    "DMAR: [DMA", "DMAR: DRHD: handling fault"};
	return std::any_of(std::begin(signs), std::end(signs),
			   [&](const char *w) { return s.find(w) != std::string::npos; });
}

void expect_log_clean(ktap::Case &t, Kmsg &k, const char *when)
{
	unsigned bad = 0;
	for (const auto &l : k.lines())
		if (alarming(l.text)) {
			if (bad++ < 10)
				t.note("kernel: %s", l.text.c_str());
		}
	t.expect(bad == 0, "%s: %u alarming kernel messages", when, bad);
	if (k.lost())
		t.note("%s: the kernel log overwrote records %u times before they were read", when, k.lost());
}

// ---- kernel uevents (NETLINK_KOBJECT_UEVENT) -----------------------------------

struct Uevent {
	std::string action, devpath, subsystem;
	std::map<std::string, std::string> env;
	int dbc_id = -1, dbc_state = -1;
};

class Uevents {
public:
	Uevents()
	{
		fd_ = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
		if (fd_ < 0)
			return;
		int size = 16 << 20;
		if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
			::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
		sockaddr_nl a{};
		a.nl_family = AF_NETLINK;
		a.nl_groups = 1; // the kernel's own uevents
		if (::bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof(a))) {
			::close(fd_);
			fd_ = -1;
		}
	}
	~Uevents()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	Uevents(const Uevents &) = delete;
	Uevents &operator=(const Uevents &) = delete;

	bool ok() const { return fd_ >= 0; }
	bool overflowed() const { return overflow_; }
	size_t mark()
	{
		drain();
		return events_.size();
	}
	const std::vector<Uevent> &events()
	{
		drain();
		return events_;
	}
	// Waits until an event from index `from` on satisfies `pred`; its
	// index in *at.
	bool wait(const std::function<bool(const Uevent &)> &pred, size_t from, double timeout_s, size_t *at = nullptr)
	{
		const auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
		for (;;) {
			drain();
			for (size_t i = from; i < events_.size(); i++)
				if (pred(events_[i])) {
					if (at)
						*at = i;
					return true;
				}
			from = events_.size();
			const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
			if (left <= 0)
				return false;
			pollfd p{fd_, POLLIN, 0};
			::poll(&p, 1, static_cast<int>(std::min<long long>(left, 100)));
		}
	}

private:
	void drain()
	{
		if (fd_ < 0)
			return;
		char buf[16384];
		for (;;) {
			const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
			if (n < 0 && errno == ENOBUFS) {
				overflow_ = true;
				continue;
			}
			if (n <= 0)
				break;
			Uevent e;
			// "action@devpath\0KEY=VALUE\0..."
			for (size_t off = std::strlen(buf) + 1; off < size_t(n);) {
				const std::string kv(buf + off);
				off += kv.size() + 1;
				const size_t eq = kv.find('=');
				if (eq != std::string::npos)
					e.env[kv.substr(0, eq)] = kv.substr(eq + 1);
			}
			e.action = e.env["ACTION"];
			e.devpath = e.env["DEVPATH"];
			e.subsystem = e.env["SUBSYSTEM"];
			if (e.env.count("DBC_ID"))
				e.dbc_id = std::atoi(e.env["DBC_ID"].c_str());
			if (e.env.count("DBC_STATE"))
				e.dbc_state = std::atoi(e.env["DBC_STATE"].c_str());
			events_.push_back(std::move(e));
		}
	}

	int fd_ = -1;
	bool overflow_ = false;
	std::vector<Uevent> events_;
};

constexpr char kUmdClass[] = "Qualcomm Cloud AI 100";

bool of_card(const Uevent &e, const std::string &bdf) { return e.devpath.find("/" + bdf + "/") != std::string::npos; }

// DBC_STATE values of DBC `dbc` of the card announced on subsystem `subsystem`
// since event `from`.
std::vector<int> dbc_states(Uevents &u, const std::string &bdf, uint32_t dbc, const std::string &subsystem,
			    size_t from)
{
	std::vector<int> out;
	const auto &ev = u.events();
	for (size_t i = from; i < ev.size(); i++)
		if (ev[i].action == "change" && ev[i].subsystem == subsystem && of_card(ev[i], bdf) &&
		    ev[i].dbc_id == int(dbc))
			out.push_back(ev[i].dbc_state);
	return out;
}

std::string join(const std::vector<int> &v)
{
	std::string s;
	for (int x : v)
		s += (s.empty() ? "" : ",") + std::to_string(x);
	return "[" + s + "]";
}

// Waits until the card's device on `subsystem` (the accel device, or the
// UMD's class device, whose uevents come separately) announces DBC `dbc`
// IDLE again after `from`.
bool wait_dbc_idle(Uevents &u, const std::string &bdf, uint32_t dbc, size_t from, double timeout_s = kSsrTimeout,
		   const std::string &subsystem = "accel")
{
	return u.wait([&](const Uevent &e) {
		return e.subsystem == subsystem && of_card(e, bdf) && e.dbc_id == int(dbc) && e.dbc_state == 0;
	}, from, timeout_s);
}

// Both drivers announce a reset on the accel device: offline, then online
// once the card answers NNC again.
bool wait_offline_online(Uevents &u, const std::string &bdf, size_t from, double timeout_s = kOnlineTimeout)
{
	size_t off = 0;
	const bool down = u.wait([&](const Uevent &e) {
		return e.subsystem == "accel" && of_card(e, bdf) && e.action == "offline";
	}, from, timeout_s, &off);
	return down && u.wait([&](const Uevent &e) {
		return e.subsystem == "accel" && of_card(e, bdf) && e.action == "online";
	}, off + 1, timeout_s);
}

// ---- workloads ------------------------------------------------------------------

// A workload's run through a Pipeline, reported into the case.
bool run_workload(ktap::Case &t, const qaic::Device &dev, const std::string &name, uint64_t n, unsigned depth = 4)
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
	const bool ok = r.problem.empty() && r.inferences == n && !r.mismatches;
	t.expect(ok, "%s: %llu of %llu inferences, %llu wrong; %s %s", name.c_str(),
		 static_cast<unsigned long long>(r.inferences), static_cast<unsigned long long>(n),
		 static_cast<unsigned long long>(r.mismatches), r.problem.c_str(), r.first_mismatch.c_str());
	return ok;
}

// One Pipeline run reported into the case.
bool expect_run(ktap::Case &t, const char *what, const qaic::RunResult &r, uint64_t n)
{
	const bool ok = r.problem.empty() && r.inferences == n && !r.mismatches;
	t.expect(ok, "%s: %llu of %llu inferences, %llu wrong; %s %s", what,
		 static_cast<unsigned long long>(r.inferences), static_cast<unsigned long long>(n),
		 static_cast<unsigned long long>(r.mismatches), r.problem.c_str(), r.first_mismatch.c_str());
	return ok;
}

// An activation of a workload by hand, for what a Pipeline hides: an output
// the card holds back (nothing feeds the program), single requests.
struct Manual {
	const qaic::Device &dev;
	const wl::Example &e;
	qaic::Nnc nnc;
	uint32_t elf = 0;
	qaic::ActivateResult act;
	std::optional<qaic::Bo> in, out;
	std::string problem;

	Manual(const qaic::Device &d, const wl::Example &ex) : dev(d), e(ex), nnc(d)
	{
		std::string err;
		const auto image = wl::build(e, err);
		if (!image) {
			problem = "building " + e.layout.name + ": " + err;
			return;
		}
		const auto l = nnc.load_elf(*image, e.layout.name);
		if (!l.ok()) {
			problem = "LOAD_ELF: " + l.describe();
			return;
		}
		elf = l.id;
		in = qaic::Bo::create(dev, e.layout.input.size);
		out = qaic::Bo::create(dev, e.layout.output.size);
		if (!in || !out)
			problem = "CREATE_BO";
		else
			problem = activate();
	}
	~Manual()
	{
		in.reset();
		out.reset();
		if (act.ok())
			nnc.deactivate(act.activation_id, act.dbc_id);
		if (elf)
			nnc.unload_elf(elf);
	}
	uint32_t dbc() const { return act.dbc_id; }
	std::string activate()
	{
		act = nnc.activate(elf, 0, 8);
		if (!act.ok())
			return "ACTIVATE: " + act.describe();
		return {};
	}
	// -errno of attaching in and out with the workload's semaphore protocol.
	int attach()
	{
		const auto &L = e.layout;
		qaic_attach_slice_entry si{}, so{};
		si.size = L.input.size;
		si.sem0 = qaic::sem(QAIC_SEM_WAIT_EQUAL, uint8_t(L.sem_in), 0, true);
		si.sem1 = qaic::sem(QAIC_SEM_INC, uint8_t(L.sem_in), 1, false);
		si.dev_addr = act.ddr_base + L.input.offset;
		so.size = L.output.size;
		so.sem0 = qaic::sem(QAIC_SEM_WAIT_GT_0, uint8_t(L.sem_out), 0, true);
		so.sem1 = qaic::sem(QAIC_SEM_DEC, uint8_t(L.sem_out), 1, false);
		so.dev_addr = act.ddr_base + L.output.offset;
		int r = qaic::attach_slices(dev, in->handle(), dbc(), qaic::kToDevice, std::span(&si, 1));
		return r ? r : qaic::attach_slices(dev, out->handle(), dbc(), qaic::kFromDevice, std::span(&so, 1));
	}
	int execute_out_only()
	{
		const qaic_execute_entry ent{out->handle(), qaic::kFromDevice};
		return qaic::execute(dev, dbc(), std::span(&ent, 1));
	}
	int execute_both(uint64_t seed)
	{
		const auto input = e.make_input(seed);
		std::memcpy(in->data(), input.data(), input.size());
		const qaic_execute_entry ents[2] = {{in->handle(), qaic::kToDevice}, {out->handle(), qaic::kFromDevice}};
		return qaic::execute(dev, dbc(), ents);
	}
	bool output_matches(uint64_t seed, std::string &why) const
	{
		return wl::matches(e, out->bytes(), e.reference(e.make_input(seed)), why);
	}
};

// Free resources as the card counts them.
std::optional<cmd::ResourceInfo> resources(const qaic::Device &dev)
{
	qaic::Nnc nnc(dev);
	auto r = nnc.resource_info(-1);
	if (!r.ok())
		return std::nullopt;
	return r.resp.info;
}

bool all_free(const cmd::ResourceInfo &r) { return r.vc_free == r.vc_total && r.nsp_free == r.nsp_total; }

std::string describe(const cmd::ResourceInfo &r)
{
	char b[160];
	std::snprintf(b, sizeof(b), "DDR %u MiB, VCs %u/%u, NSPs %u/%u, MCIDs %u, semaphores %u free", r.dram_free_mb,
		      r.vc_free, r.vc_total, r.nsp_free, r.nsp_total, r.mcid_free, r.sem_free);
	return b;
}

bool same_free(const cmd::ResourceInfo &a, const cmd::ResourceInfo &b)
{
	return a.dram_free_mb == b.dram_free_mb && a.vc_free == b.vc_free && a.nsp_free == b.nsp_free &&
	       a.mcid_free == b.mcid_free && a.sem_free == b.sem_free;
}

// The pool with nothing activated (a TERMINATE of an earlier case's user may
// still be on its way).
std::optional<cmd::ResourceInfo> idle_resources(ktap::Case &t, const qaic::Device &dev)
{
	std::optional<cmd::ResourceInfo> r;
	wait_for([&] {
		r = resources(dev);
		return r && all_free(*r);
	}, 10, 50);
	t.expect(r && all_free(*r), "the card's pool is not idle: %s", r ? describe(*r).c_str() : "RESOURCE_INFO failed");
	return r;
}

// ---- devcoredump ----------------------------------------------------------------

// /sys/class/devcoredump/devcdN of the card, if one is there.
std::string devcd_of(const std::string &bdf)
{
	std::error_code ec;
	for (const auto &d : fs::directory_iterator("/sys/class/devcoredump", ec)) {
		const fs::path link = d.path() / "failing_device";
		std::error_code e2;
		const fs::path target = fs::read_symlink(link, e2);
		if (!e2 && target.filename() == bdf)
			return d.path().string();
	}
	return {};
}

// Frees a dump (any write to data does) and waits for it to go.
bool free_devcd(const std::string &dir)
{
	write_sysfs(dir + "/data", "1");
	return wait_for([&] { return !fs::exists(dir); }, 60, 20);
}

void free_all_devcd(const std::string &bdf)
{
	for (std::string d; !(d = devcd_of(bdf)).empty();)
		if (!free_devcd(d))
			return;
}

unsigned count_devcd()
{
	std::error_code ec;
	unsigned n = 0;
	for (const auto &d : fs::directory_iterator("/sys/class/devcoredump", ec))
		n += d.path().filename().string().rfind("devcd", 0) == 0; // not "disabled"
	return n;
}

struct DumpRegion {
	std::string desc, filename;
	uint64_t mem_base = 0, len = 0, save_perf = 0;
	std::string data;
};

// The dump as our driver lays it out: {magic, version, size, tbl_len}, the
// card's table of 64-byte entries, then each region in table order.
std::string parse_dump(const std::string &d, std::vector<DumpRegion> &out)
{
	auto le64 = [&](size_t off) {
		uint64_t v;
		std::memcpy(&v, d.data() + off, 8);
		return v;
	};
	if (d.size() < 32)
		return "dump of " + std::to_string(d.size()) + " bytes: no header";
	char b[200];
	if (le64(0) != 0x1234567890abcdefull) {
		std::snprintf(b, sizeof(b), "magic 0x%" PRIx64, le64(0));
		return b;
	}
	if (le64(8) != 1)
		return "version " + std::to_string(le64(8));
	if (le64(16) != d.size())
		return "header size " + std::to_string(le64(16)) + ", file " + std::to_string(d.size());
	const uint64_t tbl_len = le64(24);
	if (!tbl_len || tbl_len % 64 || 32 + tbl_len > d.size())
		return "table length " + std::to_string(tbl_len);
	uint64_t off = 32 + tbl_len;
	for (uint64_t i = 0; i < tbl_len / 64; i++) {
		const size_t e = 32 + i * 64;
		DumpRegion r;
		r.save_perf = le64(e);
		r.mem_base = le64(e + 8);
		r.len = le64(e + 16);
		r.desc.assign(d.data() + e + 24, strnlen(d.data() + e + 24, 20));
		r.filename.assign(d.data() + e + 44, strnlen(d.data() + e + 44, 20));
		if (!r.len || off + r.len > d.size())
			return "entry " + std::to_string(i) + " (" + r.filename + ") of " + std::to_string(r.len) +
			       " bytes runs past the dump";
		r.data = d.substr(off, r.len);
		off += r.len;
		out.push_back(std::move(r));
	}
	if (off != d.size())
		return "regions end at " + std::to_string(off) + " of " + std::to_string(d.size());
	return {};
}

// "key: value" lines of summary.txt.
std::map<std::string, std::string> summary_fields(const std::string &s)
{
	std::map<std::string, std::string> m;
	std::istringstream in(s);
	for (std::string line; std::getline(in, line);)
		if (const size_t c = line.find(": "); c != std::string::npos)
			m.emplace(line.substr(0, c), line.substr(c + 2));
	return m;
}

// Waits for the card's dump, checks that it is the one of the crash of DBC
// `dbc` with `reason` (and more, when `deep`), then frees it.
void check_dump(ktap::Case &t, const std::string &bdf, uint32_t dbc, const std::string &reason, bool deep,
		const std::string &workload = "", unsigned nsps = 0)
{
	std::string dir;
	wait_for([&] { return !(dir = devcd_of(bdf)).empty(); }, 60, 20);
	if (dir.empty())
		return t.expect(false, "no devcoredump of %s after the crash of DBC %u", bdf.c_str(), dbc);
	const std::string data = slurp(dir + "/data");
	std::vector<DumpRegion> regions;
	const std::string why = parse_dump(data, regions);
	t.expect(why.empty(), "%s/data: %s", dir.c_str(), why.c_str());
	const DumpRegion *summary = nullptr, *nsp = nullptr, *dbcr = nullptr;
	for (const auto &r : regions) {
		if (r.filename == "summary.txt")
			summary = &r;
		else if (r.filename == "nsp.bin")
			nsp = &r;
		else if (r.filename == "dbc.bin")
			dbcr = &r;
		t.expect(r.save_perf == 0, "%s: save_perf %" PRIu64 ", want 0", r.filename.c_str(), r.save_perf);
	}
	t.expect(summary, "no summary.txt among %zu regions", regions.size());
	if (summary) {
		auto f = summary_fields(summary->data);
		t.expect(f["dbc"] == std::to_string(dbc), "summary.txt: dbc '%s', want %u", f["dbc"].c_str(), dbc);
		t.expect(f["fault"].find(reason) != std::string::npos, "summary.txt: fault '%s' does not name '%s'",
			 f["fault"].c_str(), reason.c_str());
		t.expect(f["cause"] == "injected", "summary.txt: cause '%s', want injected", f["cause"].c_str());
		if (deep) {
			t.note("summary.txt:\n    #   %s", [&] {
				std::string s = summary->data;
				for (size_t p = 0; (p = s.find('\n', p)) != std::string::npos && p + 1 < s.size(); p += 9)
					s.replace(p, 1, "\n    #   ");
				return s;
			}().c_str());
			if (!workload.empty())
				t.expect(f["workload"] == workload, "summary.txt: workload '%s', want %s",
					 f["workload"].c_str(), workload.c_str());
		}
	}
	if (deep) {
		t.expect(nsp && nsp->len == 304ull * nsps, "nsp.bin: %" PRIu64 " bytes, want %u records of 304",
			 nsp ? nsp->len : 0, nsps);
		for (uint64_t k = 0; nsp && k < nsp->len / 304; k++) {
			uint32_t state;
			std::memcpy(&state, nsp->data.data() + k * 304 + 4, 4);
			t.expect(state <= 3, "nsp.bin record %" PRIu64 ": state %u", k, state);
		}
		t.expect(dbcr && dbcr->len == 176, "dbc.bin: %" PRIu64 " bytes, want 176", dbcr ? dbcr->len : 0);
		if (dbcr && dbcr->len >= 4) {
			uint32_t id;
			std::memcpy(&id, dbcr->data.data(), 4);
			t.expect(id == dbc, "dbc.bin names DBC %u, want %u", id, dbc);
		}
	}
	t.expect(free_devcd(dir), "%s did not go away when freed", dir.c_str());
}

// ---- where upstream 7.3 shows things ------------------------------------------------

// Where upstream 7.3 shows a DBC in debugfs (qaic_debugfs.c): under the
// accel device's debugfs root, dbcNNN/{fifo_size,queued}.
std::string upstream_dbc_debugfs(const std::string &bdf, uint32_t dbc)
{
	char d[16];
	std::snprintf(d, sizeof(d), "dbc%03u", dbc);
	return "/sys/kernel/debug/accel/" + bdf + "/" + d;
}

std::string upstream_bootlog(const std::string &bdf) { return slurp("/sys/kernel/debug/accel/" + bdf + "/bootlog"); }

// The SBL's line for the boot-time QAIC_TIMESYNC exchange: the host's UTC
// in seconds, or nullopt.
std::optional<double> boot_timesync_utc(const std::string &bootlog)
{
	const std::string key = "time synchronised with the host: UTC ";
	const size_t at = bootlog.rfind(key);
	if (at == std::string::npos)
		return std::nullopt;
	char *end = nullptr;
	const double v = std::strtod(bootlog.c_str() + at + key.size(), &end);
	return end == bootlog.c_str() + at + key.size() ? std::nullopt : std::optional<double>(v);
}

double utc_now()
{
	timespec ts{};
	clock_gettime(CLOCK_REALTIME, &ts);
	return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// The host time offset the card reports in STATUS (µs): what it learnt
// from the host's last QAIC_TIMESYNC_PERIODIC message.
std::optional<int64_t> status_time_offset_us(const qaic::Device &dev)
{
	qaic::Nnc nnc(dev);
	auto st = nnc.status();
	if (!st.ok())
		return std::nullopt;
	uint64_t v;
	std::memcpy(&v, reinterpret_cast<const uint8_t *>(&st.resp.dev) + offsetof(cmd::DevData, qts_time_offset_usecs),
		    8);
	return int64_t(v);
}

// ---- how the drivers log the card's RAS events --------------------------------------

// Ours: one line an event, "RAS event N: <severity> error in <source> (...): <syndrome>".
const std::map<std::string, std::string> kSourceLog = {
	{"soc_mem", "SoC memory"},     {"pcie", "PCIe"},	      {"ddr", "DDR"},
	{"sys_bus1", "system bus 1"}, {"sys_bus2", "system bus 2"}, {"nsp_mem", "NSP memory"},
	{"tsens", "temperature sensor"}};

std::string ours_ras_names(const std::string &type, const std::string &source)
{
	static const std::map<std::string, std::string> severity = {
		{"ce", "corrected error in "}, {"ue_nf", "non-fatal uncorrectable error in "},
		{"ue", "fatal uncorrectable error in "}};
	return severity.at(type) + kSourceLog.at(source);
}

std::vector<std::string> ours_tsens(bool critical, int deg_c)
{
	if (critical)
		return {"critical"};
	return {"upper threshold crossed at " + std::to_string(deg_c) + " degrees C"};
}

// Upstream 7.3's RAS log (qaic_ras.c): one record per event, "RAS event."
// then "Class:", "Description:<type> error from <source>" and the
// syndrome, on lines of its own within the record.
const std::map<std::string, std::string> kUpstreamSource = {
	{"soc_mem", "SoC Memory"},	      {"pcie", "PCIE"},		       {"ddr", "DDR"},
	{"sys_bus1", "System Bus source 1"}, {"sys_bus2", "System Bus source 2"}, {"nsp_mem", "NSP Memory"},
	{"tsens", "Temperature Sensors"}};
const std::map<std::string, std::string> kUpstreamType = {
	{"ce", "Correctable"}, {"ue", "Uncorrectable"}, {"ue_nf", "Uncorrectable Non-Fatal"}};

std::string upstream_ras_description(const std::string &type, const std::string &source)
{
	return "Description:" + kUpstreamType.at(type) + " error from " + kUpstreamSource.at(source);
}

std::vector<std::string> upstream_tsens(bool critical, int deg_c)
{
	return {critical ? "critical threshold" : "upper threshold", std::to_string(deg_c) + " deg C"};
}

// How a driver logs the card's RAS events.
struct RasLog {
	const char *mark;   // in every event's record
	const char *record; // what the cases' messages call an event's record
	unsigned detail;    // which of RasInjection::detail its records show
	// The words that name an event's type (ce, ue_nf, ue) and source.
	std::string (*names)(const std::string &type, const std::string &source);
	// The words of a TSENS event's threshold and temperature.
	std::vector<std::string> (*tsens)(bool critical, int deg_c);
	// Records of their own that ras_ce_ue_nf_counted's injections add, and
	// what its message says when one is missing.
	std::vector<std::pair<const char *, const char *>> extra;
	const char *dropped; // what the driver logs when it drops an event (none may show), or nullptr
};

// ras_ce_ue_nf_counted's injections, with the part of each event's
// syndrome that the driver's record shows (RasLog::detail; "": none).
struct RasInjection {
	const char *type, *source, *args;
	const char *detail[2]; // ours, upstream 7.3
};
const RasInjection kRasInjections[] = {
	{"ce", "ddr", "addr=0x12345000", {"address 0x12345000", "Address lsb 0x12345000"}},
	{"ce", "soc_mem", "addr=0xabc000", {"0xabc000", "0xabc000"}},
	{"ce", "pcie", "", {"bad TLP 1", ""}},
	{"ce", "sys_bus1", "addr=0x1234", {"address 1234", "address0 0x1234"}},
	{"ce", "sys_bus2", "addr=0x7700", {"address 0x7700/", "lsb3 30464"}},
	{"ce", "nsp_mem", "nsp=3 addr=0x40", {"NSP 3", "NSP ID 3"}},
	{"ce", "ddr", "addr=0x2000", {"address 0x2000", "Address lsb 0x2000"}},
	{"ue_nf", "pcie", "", {"poisoned TLP 1", ""}},
	{"ue_nf", "nsp_mem", "nsp=5 addr=0x80", {"NSP 5", "NSP ID 5"}},
	{"ue_nf", "sys_bus2", "", {"", "valid 1"}},
};

// ---- the drivers under test ---------------------------------------------------------
//
// Where our driver, upstream Linux 6.12's and upstream Linux 7.3's differ as
// this suite sees them (kselftest_harness.h's FIXTURE_VARIANT): a case asks
// its fixture's profile, never which driver it runs against.
// docs/upstream-7.3.md says why each of 7.3's differences is there.

// The runs a case belongs to (the case table's column).
enum Runs : unsigned { kOurs = 1, kUpstream612 = 2, kUpstream73 = 4, kSoak = 8 };

// What the owner of a crashed DBC is told (-errno) of EXECUTE_BO, of an
// ATTACH_SLICE_BO of a new BO and of WAIT_BO on its queued input; 0: not asked.
struct OwnerCalls {
	int exec = 0, attach = 0, wait = 0;
};

struct Profile {
	Runs runs; // the cases that run against it
	// What it binds: hwmon and the telemetry/ attributes; the UMD's class
	// device, which announces DBC states as the accel device does.
	bool hwmon_telemetry = false, umd_device = false;
	// The card's boot log: in debugfs (bootlog), or as the card's lines of
	// the kernel log.
	bool bootlog_in_debugfs = false;
	// The SSR client. Upstream 7.3 releases a crashed DBC at BEFORE_SHUTDOWN:
	// its owner is then told what a user of a DBC not its own is, its
	// DEACTIVATE is refused, and a call that a crash interrupts may end
	// in EPERM as well as EPIPE. Its BEFORE_SHUTDOWN waits for the readers
	// of the DBC's channel lock (synchronize_srcu), a WAIT_BO among them.
	// It sets dbcN_state IDLE only when a DEACTIVATE is answered or an SSR
	// ends (docs/upstream-7.3.md), not when a reset or a killed user's
	// close releases the DBC.
	bool releases_dbc_at_shutdown = false, shutdown_waits_for_waiters = false, idle_only_after_deactivate = false;
	// What the crashed DBC's owner is told under SSR and after it, and of a
	// WAIT_BO on the output the crash dropped (ssr_errno_epipe).
	OwnerCalls under_ssr{}, after_ssr{};
	int dropped_wait_under_ssr = 0, dropped_wait_after_ssr = 0;
	bool ssr_errno_checks_dump = false; // ssr_errno_epipe checks the crash's dump too
	// What the driver logs of an SSR gone wrong is known: errors, and
	// "refused", "unexpected", "abandon" (ssr_kill_during_recovery).
	bool ssr_complaints_known = false;
	// ssr_kill_during_recovery kills at BEFORE_POWER_UP with the card
	// holding the recovery there until the killed user is reaped.
	bool kill_held_at_power_up = false;
	RasLog ras{};
	// Known upstream bugs the suite keeps out of the way of, or expects
	// (--known-bug; docs/upstream-bugs.md):
	// close-after-unbind: the driver frees memory at unbind that a node
	// closed later still uses (without patch 0005/0006), so
	// reload_under_load's users close before an unbind, not after it.
	bool close_after_unbind_bug = false;
	// execute-unwind: its EXECUTE_BO error path takes back BOs that a
	// release of the DBC (an SSR) already took off its queue (without patch
	// 0008); ssr_execute_unwind expects that, and loads the driver again
	// afterwards, and the streaming workloads EXECUTE_BO one BO at a time.
	bool execute_unwind_bug = false;
};

const Profile kOursProfile = {
	.runs = kOurs,
	.hwmon_telemetry = true,
	.umd_device = true,
	.under_ssr = {-EPIPE, -EPIPE, -EPIPE},
	.dropped_wait_after_ssr = -EPIPE,
	.ssr_complaints_known = true,
	.ras = {"RAS event", "kernel message", 0, ours_ras_names, ours_tsens, {}, nullptr},
};

// Binds none of the health channels (its cases are its own).
const Profile kUpstream612Profile = {.runs = kUpstream612};

const Profile kUpstream73Profile = {
	.runs = kUpstream73,
	.bootlog_in_debugfs = true,
	.releases_dbc_at_shutdown = true,
	.shutdown_waits_for_waiters = true,
	.idle_only_after_deactivate = true,
	// (ATTACH takes a new BO: EINVAL is also upstream's answer for a BO already attached.)
	.under_ssr = {-EPERM, -EINVAL, -EPERM},
	.after_ssr = {-EPERM, -EINVAL, -EPERM},
	.dropped_wait_under_ssr = -EPERM,
	.dropped_wait_after_ssr = -EPERM,
	.ssr_errno_checks_dump = true,
	.kill_held_at_power_up = true,
	.ras = {"RAS event.", "RAS record", 1, upstream_ras_description, upstream_tsens,
		// PCIe's syndrome is a record of its own (a printk continuing the dev_printk).
		{{"Bad TLP count 1", "no PCIe CE syndrome with the bad TLP"},
		 {"Poisoned TLP count 1", "no PCIe UE_NF syndrome with the poisoned TLP"}},
		"Dropping RAS message"},
};

Profile profile_of(const Options &o)
{
	Profile p = o.driver == DriverUnderTest::Ours		? kOursProfile
		    : o.driver == DriverUnderTest::Upstream612 ? kUpstream612Profile
							       : kUpstream73Profile;
	p.close_after_unbind_bug = o.close_after_unbind_bug;
	p.execute_unwind_bug = o.execute_unwind_bug;
	return p;
}

// ---- the fixture ------------------------------------------------------------------

// What every case is given (kselftest_harness.h's FIXTURE with its variant).
struct Fixture {
	unsigned card;
	Profile p;
	Options o;
};

// What a case opens on its card before it starts (FIXTURE_SETUP), in the
// order of Rig's members; kNoDumps: then the card's dumps that earlier
// cases left are freed.
enum Need : unsigned { kCard = 1, kSysfs = 2, kMailbox = 4, kDevice = 8, kUevents = 16, kKmsg = 32, kNoDumps = 64 };
constexpr unsigned kAll = kSysfs | kMailbox | kDevice | kUevents | kKmsg;

struct Rig {
	std::optional<qaic::Card> card; // as qaic::find_cards() has it
	std::optional<Sysfs> sysfs;
	std::optional<qaic::Mailbox> mb;
	std::optional<qaic::Device> dev; // ONLINE
	std::optional<Uevents> ue;
	std::optional<Kmsg> km;
	bool ready = true; // all of it there; what is not has been reported

	Rig(ktap::Case &t, unsigned n, unsigned need)
	{
		if (need & kCard)
			ready &= (card = card_info(n)).has_value();
		if (need & kSysfs)
			ready &= (sysfs = sysfs_of(t, n)).has_value();
		if (need & kMailbox)
			mb.emplace(n);
		if (need & kDevice)
			ready &= (dev = open_card(t, n)).has_value();
		if (need & kUevents)
			ue.emplace();
		if (need & kKmsg)
			km.emplace();
		if (mb && !mb->ok()) {
			ready = false;
			t.expect(false, "%s", mb->problem().c_str());
		}
		if (ready && (need & kNoDumps))
			free_all_devcd(card ? card->bdf : sysfs->bdf);
	}
};

// The two workloads, every output checked: the card computes.
void expect_computes(ktap::Case &t, const qaic::Device &dev)
{
	run_workload(t, dev, "vadd_f32", 100);
	run_workload(t, dev, "matmul_i8", 50);
}

// The card's free resources, once they are `base` again (within 10 s).
std::optional<cmd::ResourceInfo> resources_back_to(const qaic::Device &dev, const cmd::ResourceInfo &base)
{
	std::optional<cmd::ResourceInfo> now;
	wait_for([&] {
		now = resources(dev);
		return now && same_free(base, *now);
	}, 10, 50);
	return now;
}

// ---- every driver -----------------------------------------------------------------

// The test mailbox answers: a harmless command is carried out, an unknown
// one refused.
void mailbox_present(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kMailbox);
	if (!r.ready)
		return;
	qaic::Mailbox &mb = *r.mb;
	t.expect(mb.rd(qaic::Mailbox::kMagic) == qaic::Mailbox::kMagicValue, "magic");
	const std::string res = mb.run("sensor soc_temp=auto");
	t.expect(res.empty(), "a harmless command was refused: %s", res.c_str());
	t.expect(mb.rd(qaic::Mailbox::kStatus) == qaic::Mailbox::kDone, "status %u after a command carried out",
		 mb.rd(qaic::Mailbox::kStatus));
	const std::string bad = mb.run("no such fault");
	t.expect(!bad.empty() && mb.rd(qaic::Mailbox::kStatus) == qaic::Mailbox::kRefused,
		 "an unknown command was not refused (status %u)", mb.rd(qaic::Mailbox::kStatus));
	t.note("card %u (%s): mailbox answers; a refusal reads '%s'", f.card, mb.bdf().c_str(), bad.c_str());
}

// ---- the RAM dump after a firmware failure (Sahara memory debug) -------------------

// What the card's RAM dump holds (docs/health.md, "RAM dump after a
// firmware failure"), in table order, and where it puts each region.
constexpr uint64_t kRamDumpTable = 0xD800000000000000ull, kRamDumpStride = 0x100000000ull;
std::vector<std::string> ram_dump_files(const guest_util::CardFamily &fam)
{
	return {"summary.txt", "sbl.log", "mhi_regs.bin", fam.qsm_image, fam.nsp_image};
}

// Checks the card's RAM dump of an injected SYS_ERR in devcoredump (the
// dump_file_meta layout of upstream 7.3's sahara.c, which ours shares).
void check_ram_dump(ktap::Case &t, const std::string &data, const guest_util::CardFamily &fam)
{
	const std::vector<std::string> want = ram_dump_files(fam);
	std::vector<DumpRegion> regions;
	const std::string why = parse_dump(data, regions);
	t.expect(why.empty(), "RAM dump: %s", why.c_str());
	t.expect(regions.size() == want.size(), "RAM dump of %zu regions, want %zu", regions.size(),
		 want.size());
	std::map<std::string, const DumpRegion *> by_file;
	for (size_t i = 0; i < regions.size(); i++) {
		const DumpRegion &r = regions[i];
		by_file[r.filename] = &r;
		if (i < want.size())
			t.expect(r.filename == want[i], "region %zu is %s, want %s", i, r.filename.c_str(),
				 want[i].c_str());
		t.expect(r.mem_base == kRamDumpTable + (i + 1) * kRamDumpStride && r.save_perf == 0,
			 "%s: address 0x%" PRIx64 " type %" PRIu64, r.filename.c_str(), r.mem_base, r.save_perf);
	}
	if (const DumpRegion *r = by_file["summary.txt"]) {
		auto f = summary_fields(r->data);
		t.expect(r->data.rfind(std::string(fam.name) + " RAM dump\n", 0) == 0,
			 "summary.txt does not open with its title");
		t.expect(f["reason"] == "SYS_ERR injected (test)", "summary.txt: reason '%s'", f["reason"].c_str());
		t.expect(f["exec_env"] == "amss", "summary.txt: exec_env '%s'", f["exec_env"].c_str());
		t.expect(f["image"].rfind(std::string(fam.qsm_image) + " " + fam.qsm_kind + " ", 0) == 0,
			 "summary.txt: first image '%s'", f["image"].c_str());
		t.note("summary.txt: reason '%s', serial %s, failure %s", f["reason"].c_str(), f["serial"].c_str(),
		       f["failure"].c_str());
	}
	if (const DumpRegion *r = by_file["sbl.log"])
		t.expect(r->data.find("SBL: all images loaded; starting AMSS\n") != std::string::npos,
			 "sbl.log is not the boot log of the SBL that started AMSS");
	if (const DumpRegion *r = by_file["mhi_regs.bin"]) {
		auto reg = [&](size_t off) {
			uint32_t v = 0;
			if (off + 4 <= r->data.size())
				std::memcpy(&v, r->data.data() + off, 4);
			return v;
		};
		t.expect(r->len == 0x200, "mhi_regs.bin: %" PRIu64 " bytes, want 512", r->len);
		t.expect((reg(0x48) >> 8 & 0xFF) == 0xFF, "mhi_regs.bin: MHISTATUS 0x%x, want the SYS_ERR state",
			 reg(0x48));
		t.expect(reg(0x100 + 0x28) == 2, "mhi_regs.bin: BHI_EXECENV %u, want 2 (AMSS)", reg(0x128));
	}
	for (const char *fw : {fam.qsm_image, fam.nsp_image}) {
		const std::string path = std::string(fam.firmware_dir) + "/" + fw, file = slurp(path);
		const DumpRegion *r = by_file[fw];
		t.expect(file.size() > 128 && r && r->data == file.substr(128),
			 "%s: %zu bytes in the dump, want the %zu-byte payload of %s", fw, r ? r->data.size() : 0,
			 file.size() > 128 ? file.size() - 128 : 0, path.c_str());
	}
}

// Whether the card's log says `text` (in its new boot, after a reset):
// debugfs bootlog, or the card's lines of the kernel log.
void expect_card_log_says(ktap::Case &t, const Profile &p, Kmsg &km, const std::string &bdf, const std::string &text)
{
	if (p.bootlog_in_debugfs)
		t.expect(wait_for([&] { return upstream_bootlog(bdf).find(text) != std::string::npos; }, 10, 100),
			 "debugfs bootlog does not say '%s'", text.c_str());
	else
		t.expect(km.wait_grep({bdf, text}, 10), "the kernel log has no card line '%s'", text.c_str());
}

// A firmware failure (an injected SYS_ERR): the card comes back from the
// host's reset in its SBL and offers its RAM dump over Sahara (mode 2); the
// driver's Sahara client reads it into devcoredump on the PCI device, then
// the card loads its images again, comes ONLINE and computes.
void sahara_crash_dump(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kCard | kMailbox | kUevents | kKmsg | kNoDumps);
	if (!r.ready)
		return;
	t.expect(qaic::read_attr("/sys/class/devcoredump/disabled") != "1", "devcoredump is disabled");
	t.expect(r.ue->ok(), "no uevent socket");
	t.expect(is_online(f.card), "not ONLINE before the failure");
	const std::string &bdf = r.card->bdf;
	const size_t mark = r.ue->mark();
	const auto t0 = Clock::now();
	const std::string res = r.mb->run("syserr");
	t.expect(res.empty(), "syserr: %s", res.c_str());
	std::string dir;
	t.expect(wait_for([&] { return !(dir = devcd_of(bdf)).empty(); }, 120, 50),
		 "no devcoredump of %s after the failure", bdf.c_str());
	if (!dir.empty()) {
		const std::string data = slurp(dir + "/data");
		t.note("RAM dump of %zu bytes in %s after %.0f ms", data.size(), dir.c_str(), ms_since(t0));
		check_ram_dump(t, data, guest_util::family_of_bdf(bdf));
		t.expect(free_devcd(dir), "%s did not go away when freed", dir.c_str());
	}
	t.expect(wait_offline_online(*r.ue, bdf, mark), "no offline, then online, uevent of the card");
	t.expect(wait_for([&] { return is_online(f.card); }, kOnlineTimeout, 100), "not ONLINE after the dump");
	t.note("failure to ONLINE again in %.0f ms", ms_since(t0));
	// The new boot's log says the host took the dump.
	expect_card_log_says(t, f.p, *r.km, bdf, "SBL: sahara: RAM dump taken");
	if (auto dev = open_card(t, f.card))
		expect_computes(t, *dev);
	t.expect(devcd_of(bdf).empty(), "a second dump appeared");
	expect_log_clean(t, *r.km, "RAM dump");
}

// ---- hwmon and telemetry (ours) ---------------------------------------------------

// Back to the model: SoC 35 °C + 0.6 °C/W, board 30 + 0.4, DDR 32 + 0.3,
// of the board's power (docs/health.md). Read until the power holds still
// across the temperatures.
void expect_sensor_model(ktap::Case &t, const Sysfs &S)
{
	std::optional<int64_t> p, t1, t2, t3;
	const bool consistent = wait_for([&] {
		p = S.hw("power1_input");
		t2 = S.hw("temp2_input");
		t1 = S.hw("temp1_input");
		t3 = S.hw("temp3_input");
		return p && t1 && t2 && t3 && S.hw("power1_input") == p && *t2 == 35000 + *p * 6 / 10000 &&
		       *t1 == 30000 + *p * 4 / 10000 && *t3 == 32000 + *p * 3 / 10000;
	}, 10, 50);
	t.expect(consistent, "after auto: power %s µW, SoC %s, board %s, DDR %s m°C do not follow the model",
		 fmt(p).c_str(), fmt(t2).c_str(), fmt(t1).c_str(), fmt(t3).c_str());
	t.expect(p && *p >= 18000000 && *p <= 75000000, "power1_input %s µW outside 18..75 W", fmt(p).c_str());
	t.note("model: %s µW, SoC %s, board %s, DDR %s m°C", fmt(p).c_str(), fmt(t2).c_str(), fmt(t1).c_str(),
	       fmt(t3).c_str());
}

// The hwmon device named qaic: its limits, values pinned by injection
// exactly, and the sensors' model once they are let go.
void hwmon_sensors_follow_injections(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kSysfs | kMailbox);
	if (!r.ready)
		return;
	const Sysfs &S = *r.sysfs;
	qaic::Mailbox &mb = *r.mb;
	if (S.hwmon.empty())
		return t.expect(false, "no hwmon device named qaic under %s/hwmon", S.pci.c_str());
	t.note("hwmon: %s", S.hwmon.c_str());
	for (const char *h : {"temp1_input", "temp1_highest", "temp2_input", "temp2_highest", "temp2_crit",
			      "temp2_emergency", "temp3_input", "power1_input", "power1_max", "power1_rated_max"})
		t.expect(S.hw(h).has_value(), "%s/%s unreadable", S.hwmon.c_str(), h);
	t.expect(S.hw("temp2_crit") == 95000, "temp2_crit %s, want 95000", fmt(S.hw("temp2_crit")).c_str());
	t.expect(S.hw("temp2_emergency") == 110000, "temp2_emergency %s, want 110000",
		 fmt(S.hw("temp2_emergency")).c_str());
	t.expect(S.hw("power1_rated_max") == 75000000, "power1_rated_max %s, want 75000000",
		 fmt(S.hw("power1_rated_max")).c_str());

	// Pinned values come back exactly, in m°C and µW.
	const std::string pin = "sensor soc_temp=71234 board_temp=52345 ddr_temp=63456 board_power=41234567";
	const std::string pinned = mb.run(pin);
	t.expect(pinned.empty(), "%s: %s", pin.c_str(), pinned.c_str());
	const std::pair<const char *, int64_t> want[] = {
		{"temp2_input", 71234}, {"temp1_input", 52345}, {"temp3_input", 63456}, {"power1_input", 41234567}};
	for (const auto &[h, v] : want)
		t.expect(S.hw(h) == v, "%s %s, want %" PRId64 " as injected", h, fmt(S.hw(h)).c_str(), v);
	t.expect(S.hw("temp2_highest") >= 71234, "temp2_highest %s below the injected 71234",
		 fmt(S.hw("temp2_highest")).c_str());
	t.expect(S.hw("temp1_highest") >= 52345, "temp1_highest %s below the injected 52345",
		 fmt(S.hw("temp1_highest")).c_str());
	// One at a time, below zero too.
	t.expect(mb.run("sensor soc_temp=-5000").empty(), "soc_temp=-5000 refused");
	t.expect(S.hw("temp2_input") == -5000, "temp2_input %s, want -5000", fmt(S.hw("temp2_input")).c_str());
	t.expect(S.hw("temp1_input") == 52345, "temp1_input %s moved when the SoC's sensor was set",
		 fmt(S.hw("temp1_input")).c_str());
	t.expect(mb.run("sensor soc_temp=auto board_temp=auto ddr_temp=auto board_power=auto").empty(),
		 "auto refused");
	expect_sensor_model(t, S);
}

// power1_max takes limits of 10..75 W and refuses others; a limit below
// the idle draw throttles the board; the power state takes 1..3.
void hwmon_power_limit(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kSysfs);
	if (!r.ready)
		return;
	const Sysfs &S = *r.sysfs;
	if (S.hwmon.empty())
		return t.expect(false, "no hwmon device named qaic under %s/hwmon", S.pci.c_str());
	const std::string max = S.hwmon + "/power1_max";
	const auto orig = S.hw("power1_max");
	t.expect(orig == 75000000, "power1_max %s, want the default 75000000", fmt(orig).c_str());
	for (int64_t v : {50000000ll, 12345678ll, 75000000ll}) {
		const int w = write_sysfs(max, str(v));
		t.expect(w == 0, "writing %" PRId64 " to power1_max: %s", v, qaic::errno_name(-w).c_str());
		t.expect(S.hw("power1_max") == v, "power1_max reads %s after writing %" PRId64,
			 fmt(S.hw("power1_max")).c_str(), v);
	}
	// 10 W ≤ limit ≤ POWER_MAX (75 W).
	for (const char *bad : {"9999999", "75000001", "-1", "0"}) {
		const int w = write_sysfs(max, bad);
		t.expect(w == -EINVAL, "writing %s to power1_max: %s, want EINVAL", bad, qaic::errno_name(-w).c_str());
	}
	t.expect(S.hw("power1_max") == 75000000, "power1_max %s after refused writes", fmt(S.hw("power1_max")).c_str());

	// A limit below the idle draw (18 W) holds the board to it, throttling.
	t.expect(write_sysfs(max, "10000000") == 0, "writing 10 W to power1_max");
	t.expect(S.hw("power1_input") == 10000000, "power1_input %s µW under a 10 W limit",
		 fmt(S.hw("power1_input")).c_str());
	const auto thr = S.tele("throttle_percent");
	t.expect(thr && *thr > 0, "throttle_percent %s under a 10 W limit", fmt(thr).c_str());
	// The power state: 1 full, 2 reduced, 3 minimal.
	const std::string ps = S.pci + "/telemetry/power_state";
	t.expect(write_sysfs(ps, "3") == 0, "power_state 3");
	t.expect(S.tele("power_state") == 3, "power_state %s, want 3", fmt(S.tele("power_state")).c_str());
	t.expect(write_sysfs(ps, "4") == -EINVAL, "power_state 4 not refused with EINVAL");
	t.expect(write_sysfs(ps, "1") == 0, "power_state 1");
	t.expect(write_sysfs(max, "75000000") == 0, "restoring power1_max");
	t.expect(S.hw("power1_input") >= 18000000, "power1_input %s µW after the limit was lifted",
		 fmt(S.hw("power1_input")).c_str());
	t.expect(S.tele("throttle_percent") == 0, "throttle_percent %s after the limit was lifted",
		 fmt(S.tele("throttle_percent")).c_str());
	t.note("throttled under 10 W: %s %%, %s ms in all", fmt(thr).c_str(), fmt(S.tele("throttle_time_ms")).c_str());
}

// Whether the card's inference count has grown by n since `from`.
bool counted(const Sysfs &S, std::optional<int64_t> from, int64_t n)
{
	const auto now = S.tele("nsp_inferences");
	return !from || (now && *now >= *from + n);
}

// The NSP counters follow the workloads: inferences and busy time grow,
// active NSPs are those assigned, faults stay put without a crash.
void telemetry_nsp_counters(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kSysfs | kDevice);
	if (!r.ready)
		return;
	const Sysfs &S = *r.sysfs;
	for (const char *n : {"nsp_busy_ns", "nsp_inferences", "nsp_faults", "nsp_active", "throttle_percent",
			      "throttle_time_ms", "power_state"})
		t.expect(S.tele(n).has_value(), "%s/telemetry/%s unreadable", S.pci.c_str(), n);
	const auto inf0 = S.tele("nsp_inferences"), busy0 = S.tele("nsp_busy_ns"), act0 = S.tele("nsp_active"),
		   faults0 = S.tele("nsp_faults");
	{
		qaic::Pipeline a(*r.dev, *wl::find("vadd_f32"), 4);
		if (const auto why = a.setup(); !why.empty())
			return t.expect(false, "vadd_f32: %s", why.c_str());
		t.expect(act0 && S.tele("nsp_active") == *act0 + 1, "nsp_active %s with a 1-NSP workload, was %s",
			 fmt(S.tele("nsp_active")).c_str(), fmt(act0).c_str());
		expect_run(t, "vadd_f32", a.run(200), 200);
		// An NSP counts an inference as its loop ends (MARK), just after it
		// announced the output: the host may take the output first.
		wait_for([&] { return counted(S, inf0, 200); }, 30);
		const auto inf1 = S.tele("nsp_inferences"), busy1 = S.tele("nsp_busy_ns");
		t.expect(inf0 && inf1 && *inf1 == *inf0 + 200, "nsp_inferences %s -> %s over 200 inferences",
			 fmt(inf0).c_str(), fmt(inf1).c_str());
		t.expect(busy0 && busy1 && *busy1 > *busy0, "nsp_busy_ns %s -> %s over 200 inferences",
			 fmt(busy0).c_str(), fmt(busy1).c_str());
		qaic::Pipeline b(*r.dev, *wl::find("matmul_i8"), 4);
		if (const auto why = b.setup(); !why.empty())
			return t.expect(false, "matmul_i8: %s", why.c_str());
		t.expect(act0 && S.tele("nsp_active") == *act0 + 3, "nsp_active %s with 1 + 2 NSPs assigned, was %s",
			 fmt(S.tele("nsp_active")).c_str(), fmt(act0).c_str());
		expect_run(t, "matmul_i8", b.run(50), 50);
		wait_for([&] { return counted(S, inf1, 50); }, 30);
		const auto inf2 = S.tele("nsp_inferences"), busy2 = S.tele("nsp_busy_ns");
		t.expect(inf1 && inf2 && *inf2 >= *inf1 + 50, "nsp_inferences %s -> %s over 50 inferences",
			 fmt(inf1).c_str(), fmt(inf2).c_str());
		t.expect(busy1 && busy2 && *busy2 > *busy1, "nsp_busy_ns %s -> %s", fmt(busy1).c_str(), fmt(busy2).c_str());
		t.note("vadd_f32 x200 then matmul_i8 x50: inferences %s -> %s, busy %s -> %s ns", fmt(inf0).c_str(),
		       fmt(inf2).c_str(), fmt(busy0).c_str(), fmt(busy2).c_str());
	}
	t.expect(wait_for([&] { return S.tele("nsp_active") == act0; }, 60, 50), "nsp_active %s after deactivating, was %s",
		 fmt(S.tele("nsp_active")).c_str(), fmt(act0).c_str());
	t.expect(S.tele("nsp_faults") == faults0, "nsp_faults %s -> %s without a crash", fmt(faults0).c_str(),
		 fmt(S.tele("nsp_faults")).c_str());
}

// ---- RAS counters -----------------------------------------------------------------

struct RasCounts {
	std::optional<int64_t> ce, ue, ue_nf;
	bool operator==(const RasCounts &) const = default;
	std::string str() const { return "ce " + fmt(ce) + ", ue " + fmt(ue) + ", ue_nf " + fmt(ue_nf); }
};

RasCounts ras_counts(const Sysfs &S)
{
	return {S.ras("ce_count"), S.ras("ue_count"), S.ras("ue_nonfatal_count")};
}

// Waits for the counts to reach `want`, then makes sure they stay there.
void expect_counts(ktap::Case &t, const Sysfs &S, const RasCounts &want, const char *what)
{
	wait_for([&] { return ras_counts(S) == want; }, 60, 20);
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	const RasCounts got = ras_counts(S);
	t.expect(got == want, "%s: %s, want %s", what, got.str().c_str(), want.str().c_str());
}

RasCounts plus(const RasCounts &c, int ce, int ue, int ue_nf)
{
	return {c.ce ? std::optional<int64_t>(*c.ce + ce) : std::nullopt,
		c.ue ? std::optional<int64_t>(*c.ue + ue) : std::nullopt,
		c.ue_nf ? std::optional<int64_t>(*c.ue_nf + ue_nf) : std::nullopt};
}

// ---- refused injections -----------------------------------------------------------

// What a refused injection must not change. Where the driver binds no hwmon
// and no telemetry (upstream 7.3) those stay unread, and its RAS counters and
// DBC states are what the injections would move.
struct Snapshot {
	RasCounts ras;
	std::optional<int64_t> t1, t2, t3, p, pmax, faults, active;
	std::vector<std::optional<int64_t>> dbc_states; // every DBC's
	bool online = false;
	unsigned dumps = 0;
	bool hwmon_telemetry = true; // read
	bool operator==(const Snapshot &) const = default;
	std::string str() const
	{
		std::string states;
		for (const auto &st : dbc_states)
			states += (states.empty() ? "" : ",") + fmt(st);
		const std::string hw = !hwmon_telemetry ? std::string() :
			"; temps " + fmt(t1) + "/" + fmt(t2) + "/" + fmt(t3) + " m°C, power " + fmt(p) + "/" + fmt(pmax) +
			" µW, faults " + fmt(faults) + ", active " + fmt(active);
		return ras.str() + hw + "; DBC states " + states + (online ? ", online" : ", offline") + ", " +
		       std::to_string(dumps) + " dumps";
	}
};

Snapshot snapshot(const Sysfs &S, const Fixture &f)
{
	Snapshot n;
	n.ras = ras_counts(S);
	n.hwmon_telemetry = f.p.hwmon_telemetry;
	if (n.hwmon_telemetry) {
		n.t1 = S.hw("temp1_input");
		n.t2 = S.hw("temp2_input");
		n.t3 = S.hw("temp3_input");
		n.p = S.hw("power1_input");
		n.pmax = S.hw("power1_max");
		n.faults = S.tele("nsp_faults");
		n.active = S.tele("nsp_active");
	}
	for (uint32_t d = 0; d < 16; d++)
		n.dbc_states.push_back(S.dbc_state(d));
	n.online = is_online(f.card);
	n.dumps = count_devcd();
	return n;
}

// Malformed mailbox commands and what their refusals must mention: `mine`
// is the DBC of a channel of the case's, `free_dbc` one nobody uses.
std::vector<std::pair<std::string, std::string>> bad_commands(uint32_t mine_dbc, uint32_t free_dbc)
{
	const std::string mine = std::to_string(mine_dbc);
	return {
		{"nonsense", "unknown fault"},
		{"syserr now", "takes no arguments"},
		{"crash", "give dbc=N or nsp=N"},
		{"crash reason=no target", "give dbc=N or nsp=N"},
		{"crash dbc=" + mine + " nsp=0", "give dbc=N or nsp=N"},
		{"crash dbc=16", "no DBC 16"},
		{"crash dbc=x", "not a number"},
		{"crash dbc=" + mine + " dbc=" + mine, "given twice"},
		{"crash dbc=" + std::to_string(free_dbc), "no workload on DBC"},
		{"crash nsp=16", "no NSP 16"},
		{"crash dbc", "not key=value"},
		{"ras", "is not ce, ue or ue_nf"},
		{"ras fatal source=ddr", "is not ce, ue or ue_nf"},
		{"ras ce", "source="},
		{"ras ce source=dram", "source=dram"},
		{"ras ce source=ddr nsp=16", "nsp=16"},
		{"ras ue source=ddr addr=-1", "not an address"},
		{"ras ue source=ddr addr=0x1zz", "not an address"},
		{"ras ce source=tsens temp=300000", "temp=300000"},
		{"ras ce source=tsens threshold=hot", "threshold=hot"},
		{"ras ce source=ddr colour=red", "unknown argument"},
		{"ras ce source=ddr addr=0x10 addr=0x20", "given twice"},
		{"sensor", "give NAME=VALUE"},
		{"sensor fan=100", "unknown sensor"},
		{"sensor soc_temp", "not key=value"},
		{"sensor soc_temp=hot", "soc_temp=hot"},
		{"sensor soc_temp=200001", "-40000..200000"},
		{"sensor board_power=-1", "0..500000000"},
		// All or nothing: the good half must not be applied either.
		{"sensor soc_temp=60000 board_temp=500000", "board_temp=500000"},
		{"sensor soc_temp=96000 ddr_temp=x", "ddr_temp=x"},
	};
}

// The highest DBC in state 0, or 16.
uint32_t highest_free_dbc(const Sysfs &S)
{
	for (uint32_t d = 15; d < 16; d--)
		if (S.dbc_state(d) == 0)
			return d;
	return 16;
}

// Every command refused with its reason, and the mailbox's own checks:
// length 0 and beyond 255; a NUL ends the command (what follows is not read).
void expect_refused(ktap::Case &t, qaic::Mailbox &mb, const std::vector<std::pair<std::string, std::string>> &bad)
{
	for (const auto &[c, why] : bad) {
		const std::string res = mb.run(c);
		t.expect(!res.empty(), "'%s' was carried out", c.c_str());
		t.expect(res.find(why) != std::string::npos, "'%s' refused with '%s', want it to mention '%s'", c.c_str(),
			 res.c_str(), why.c_str());
		t.expect(mb.rd(qaic::Mailbox::kStatus) == qaic::Mailbox::kRefused, "'%s': status %u, want 1 (refused)",
			 c.c_str(), mb.rd(qaic::Mailbox::kStatus));
	}
	for (uint32_t len : {0u, 256u, 4096u}) {
		const std::string res = mb.run_raw("ras ce source=ddr", len);
		t.expect(res.find("length must be 1..255") != std::string::npos, "length %u: '%s'", len, res.c_str());
	}
	const std::string nul("ras ce source=nowhere\0", 22);
	t.expect(mb.run_raw(nul + "xyz", 25).find("source=nowhere") != std::string::npos, "command after a NUL");
}

// The channel still moves data.
void expect_channel_moves_data(ktap::Case &t, const qaic::Device &dev, const qaic::DataChannel &ch)
{
	auto in = qaic::Bo::create(dev, 4096), out = qaic::Bo::create(dev, 4096);
	if (!in || !out)
		return;
	const auto cs = qaic::copy_slices(4096, ch.ddr_base());
	std::memset(in->data(), 0x5a, 4096);
	qaic::attach_slices(dev, in->handle(), ch.dbc(), qaic::kToDevice, std::span(&cs.in, 1));
	qaic::attach_slices(dev, out->handle(), ch.dbc(), qaic::kFromDevice, std::span(&cs.out, 1));
	const qaic_execute_entry e[2] = {{in->handle(), qaic::kToDevice}, {out->handle(), qaic::kFromDevice}};
	t.expect(!qaic::execute(dev, ch.dbc(), e) && !qaic::wait(dev, ch.dbc(), out->handle(), 10000) &&
			 !std::memcmp(in->data(), out->data(), 4096),
		 "the channel does not move data after the refusals");
}

// Malformed mailbox commands are refused, each with its reason, and
// change nothing that a good one would (Snapshot); no RAS event, no
// DBC_STATE uevent; the data channel and the mailbox still work.
void bad_injections_refused(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kAll);
	if (!r.ready)
		return;
	const Sysfs &S = *r.sysfs;
	qaic::Mailbox &mb = *r.mb;
	qaic::DataChannel ch(*r.dev);
	if (!ch.problem().empty())
		return t.expect(false, "%s", ch.problem().c_str());
	// Pinned sensors, so that nothing moves by itself.
	const std::string pin = "sensor soc_temp=50000 board_temp=40000 ddr_temp=45000 board_power=20000000";
	t.expect(mb.run(pin).empty(), "pinning the sensors");
	const size_t mark = r.ue->mark();
	const Snapshot before = snapshot(S, f);
	t.expect(before.dbc_states[ch.dbc()] == 1, "DBC %u of the channel in state %s, want 1", ch.dbc(),
		 fmt(before.dbc_states[ch.dbc()]).c_str());
	t.expect(before.ras.ce && before.ras.ue && before.ras.ue_nf, "RAS counters unreadable: %s",
		 before.ras.str().c_str());
	const auto bad = bad_commands(ch.dbc(), highest_free_dbc(S));
	expect_refused(t, mb, bad);
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	const Snapshot after = snapshot(S, f);
	t.expect(after == before, "changed by refused commands:\n    #   before %s\n    #   after  %s",
		 before.str().c_str(), after.str().c_str());
	t.note("%zu commands refused; nothing changed: %s", bad.size() + 4, after.str().c_str());
	// The channel still moves data, and the mailbox still works.
	expect_channel_moves_data(t, *r.dev, ch);
	t.expect(mb.run("sensor soc_temp=auto board_temp=auto ddr_temp=auto board_power=auto").empty(),
		 "a good command after the refusals");
	t.expect(r.km->grep({"RAS event"}).empty(), "a refused command raised a RAS event");
	const auto &evs = r.ue->events();
	for (size_t i = mark; i < evs.size(); i++)
		if (evs[i].dbc_state >= 0 && of_card(evs[i], S.bdf))
			t.expect(false, "a refused command announced DBC %d state %d", evs[i].dbc_id, evs[i].dbc_state);
}

// ---- SSR --------------------------------------------------------------------------

// Steers the card's interrupts to CPU 0 for the scope (and back after).
struct IrqsOnCpu0 {
	std::vector<std::pair<std::string, std::string>> saved; // /proc/irq/N/smp_affinity, old mask
	unsigned moved = 0;
	explicit IrqsOnCpu0(const std::string &pci)
	{
		std::error_code ec;
		for (const auto &d : fs::directory_iterator(pci + "/msi_irqs", ec)) {
			const std::string f = "/proc/irq/" + d.path().filename().string() + "/smp_affinity";
			const std::string old = qaic::read_attr(f);
			if (old.empty())
				continue;
			saved.emplace_back(f, old);
			moved += write_sysfs(f, "1") == 0;
		}
	}
	~IrqsOnCpu0()
	{
		for (const auto &[f, old] : saved)
			write_sysfs(f, old);
	}
};

std::string reason_for(const std::string &what) { return what + "-" + unique_tag(); }

// Whether thread `tid` of process `pid` sleeps in an ioctl (system call 16),
// as a WAIT_BO that waits does.
bool asleep_in_ioctl(pid_t tid, pid_t pid = ::getpid())
{
	const std::string dir = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid);
	const std::string st = slurp(dir + "/stat");
	const size_t p = st.rfind(')');
	return p != std::string::npos && p + 2 < st.size() && st[p + 2] == 'S' &&
	       slurp(dir + "/syscall").rfind("16 ", 0) == 0;
}

struct HeldCrash {
	int waited = 1;       // what the sleeping WAIT_BO returned (1: nothing)
	double woken_ms = 0;  // from the injection to its return
};

// One good inference of `m`, then a WAIT_BO asleep on an output the card
// holds back (nothing feeds the program), then a crash of m's DBC that the
// card holds before power-up (crash hold=1) until `ssr release`.
HeldCrash crash_held_under_waiter(ktap::Case &t, const qaic::Device &dev, Manual &m, qaic::Mailbox &mb,
				  const std::string &reason)
{
	const uint32_t dbc = m.dbc();
	HeldCrash c;
	t.expect(m.attach() == 0, "ATTACH");
	std::string why;
	t.expect(m.execute_both(1) == 0 && qaic::wait(dev, dbc, m.out->handle(), 10000) == 0 &&
			 m.output_matches(1, why),
		 "an inference before the crash: %s", why.c_str());
	t.expect(m.execute_out_only() == 0, "EXECUTE of the output alone");
	std::atomic<pid_t> tid{0};
	std::atomic<int> waited{1};
	std::thread waiter([&] {
		tid = pid_t(::syscall(SYS_gettid));
		waited = qaic::wait(dev, dbc, m.out->handle(), 30000);
	});
	t.expect(wait_for([&] { return tid && waited == 1 && asleep_in_ioctl(tid); }, 10, 1),
		 "WAIT_BO not asleep before the crash (returned %s)", qaic::errno_name(-waited).c_str());
	const auto t0 = Clock::now();
	const std::string r = mb.run("crash dbc=" + std::to_string(dbc) + " hold=1 reason=" + reason);
	t.expect(r.empty(), "crash dbc=%u: %s", dbc, r.c_str());
	waiter.join();
	c.waited = waited;
	c.woken_ms = ms_since(t0);
	return c;
}

// What the owner of a crashed DBC got of EXECUTE_BO, of an ATTACH_SLICE_BO
// of a new BO and of WAIT_BO on its input, `when` (under SSR, after the
// recovery), checked against what the profile says it is told.
OwnerCalls expect_owner_told(ktap::Case &t, const qaic::Device &dev, Manual &m, const char *when, const OwnerCalls &want)
{
	OwnerCalls got{1, 1, 1};
	auto fresh = qaic::Bo::create(dev, 4096);
	if (!fresh) {
		t.expect(false, "CREATE_BO");
		return got;
	}
	qaic_attach_slice_entry sl{};
	sl.size = 4096;
	sl.dev_addr = m.act.ddr_base;
	got.exec = m.execute_both(2);
	got.attach = qaic::attach_slices(dev, fresh->handle(), m.dbc(), qaic::kToDevice, std::span(&sl, 1));
	got.wait = qaic::wait(dev, m.dbc(), m.in->handle(), 100);
	const std::pair<const char *, std::pair<int, int>> calls[] = {
		{"EXECUTE_BO", {got.exec, want.exec}}, {"ATTACH_SLICE_BO", {got.attach, want.attach}},
		{"WAIT_BO", {got.wait, want.wait}}};
	for (const auto &[call, e] : calls)
		t.expect(e.first == e.second, "%s %s: %s, want %s", call, when, qaic::errno_name(-e.first).c_str(),
			 qaic::errno_name(-e.second).c_str());
	return got;
}

// WAIT_BO on the output the crash dropped, `when`: the profile's errno.
void expect_dropped_wait(ktap::Case &t, const qaic::Device &dev, Manual &m, const char *when, int want)
{
	const int got = qaic::wait(dev, m.dbc(), m.out->handle(), 100);
	t.expect(got == want, "WAIT_BO on the dropped output %s: %s, want %s", when, qaic::errno_name(-got).c_str(),
		 qaic::errno_name(-want).c_str());
}

// The crashed activation's DEACTIVATE: the card forgot it, or the host
// refuses it, the DBC no longer its owner's.
void expect_crashed_deactivate(ktap::Case &t, Manual &m, uint32_t dbc, const Profile &p)
{
	if (p.releases_dbc_at_shutdown) {
		const auto d = m.nnc.deactivate(m.act.activation_id, dbc);
		return t.expect(d.err == -EPERM, "DEACTIVATE of the crashed activation: %s, want EPERM (the DBC was "
				"released)", d.describe().c_str());
	}
	const auto d = m.nnc.deactivate(m.act.activation_id, std::nullopt);
	t.expect(d.answered && d.status == cmd::kErrNotFound, "DEACTIVATE of the crashed activation: %s, want not found",
		 d.describe().c_str());
}

// `ssr release` of a held recovery, and the DBC IDLE again.
void release_held_crash(ktap::Case &t, Rig &r, uint32_t dbc, size_t mark)
{
	const std::string rel = r.mb->run("ssr release");
	t.expect(rel.empty(), "ssr release: %s", rel.c_str());
	t.expect(wait_dbc_idle(*r.ue, r.sysfs->bdf, dbc, mark), "no DBC_STATE=0 uevent for DBC %u within %.0f s", dbc,
		 kSsrTimeout);
}

// The crashed workload's ELF, still loaded, activates again (dbcN_state 1),
// its BOs attach again (the SSR detached them) and it computes.
void expect_computes_again(ktap::Case &t, const qaic::Device &dev, const Sysfs &S, Manual &m, uint64_t seed)
{
	const std::string a = m.activate();
	if (!a.empty())
		return t.expect(false, "activating the loaded ELF again: %s", a.c_str());
	t.expect(S.dbc_state(m.dbc()) == 1, "dbc%u_state %s once activated again, want 1", m.dbc(),
		 fmt(S.dbc_state(m.dbc())).c_str());
	t.expect(m.attach() == 0, "ATTACH again (the SSR detached the BOs)");
	std::string why;
	t.expect(m.execute_both(seed) == 0 && qaic::wait(dev, m.dbc(), m.out->handle(), 10000) == 0 &&
			 m.output_matches(seed, why),
		 "an inference after activating again on DBC %u: %s", m.dbc(), why.c_str());
}

// p-th percentile (0..100) of `v`, nearest rank.
double percentile(std::vector<double> v, double p)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	const size_t rank = size_t(std::ceil(p / 100 * double(v.size())));
	return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

double mean(const std::vector<double> &v)
{
	double sum = 0;
	for (double x : v)
		sum += x;
	return v.empty() ? 0 : sum / double(v.size());
}

std::optional<int64_t> meminfo_kb(const char *key)
{
	std::ifstream f("/proc/meminfo");
	const std::string want = std::string(key) + ":";
	for (std::string k; f >> k;) {
		int64_t v;
		f >> v;
		if (k == want)
			return v;
		f.ignore(64, '\n');
	}
	return std::nullopt;
}

// Figures the soak's cases hand on to its last one, soak_no_leaks. Each case
// runs in a child process of its own (ktap's add_isolated), so they live in
// memory shared with the parent, mapped before the first case starts.
struct SoakFigures {
	bool have_base;
	cmd::ResourceInfo res0;
	uint32_t nws_loaded0, nws_active0, consts_loaded0, consts_in_use0;
	int64_t mem_available0_kb, pcp0_kb, slab0_kb, sunreclaim0_kb;
	char meminfo0[8192]; // all of /proc/meminfo at the baseline
	char slabinfo0[65536]; // and /proc/slabinfo
	unsigned long taint0;
	// ssr_crash_loop
	unsigned crashes, recoveries;
	double idle_mean_ms, idle_p99_ms, idle_worst_ms; // crash to the DBC IDLE again
	double back_mean_ms, back_p99_ms, back_worst_ms; // crash to A's first correct inference after recover()
	uint64_t ssr_inferences, ssr_mismatches;
	// reload_under_load, reset_under_load
	unsigned reloads, reloads_unbind, reloads_kill, resets, resets_pci, resets_soc;
	double reload_online_mean_ms, reload_online_worst_ms, reset_online_mean_ms, reset_online_worst_ms;
	uint64_t cycle_inferences, cycle_mismatches;
	char reload_errnos[160], reset_errnos[160];
};
SoakFigures *g_fig = nullptr;

// The owner of the DBC a case crashes: a vadd_f32 activation by hand on
// the rig's card.
struct CrashedOwner {
	Rig r;
	std::optional<Manual> m;
	bool ready = false;

	CrashedOwner(ktap::Case &t, const Fixture &f) : r(t, f.card, kAll | kNoDumps)
	{
		if (!r.ready)
			return;
		m.emplace(*r.dev, *wl::find("vadd_f32"));
		if (!m->problem.empty())
			t.expect(false, "%s", m->problem.c_str());
		else
			ready = true;
	}
};

// The SSR client's DBC states, read in sysfs while the card holds the
// recovery before power-up, and announced by uevent: every value of
// upstream's enum dbc_states the recovery passes through. A WAIT_BO
// asleep then gets EPIPE; the owner's calls are answered as the profile
// says (upstream 7.3 released the DBC at BEFORE_SHUTDOWN: refused as for a
// DBC not the owner's), and so is its DEACTIVATE. The loaded ELF
// activates again and computes.
void ssr_dbc_state_through_recovery(ktap::Case &t, const Fixture &f)
{
	CrashedOwner o(t, f);
	if (!o.ready)
		return;
	t.expect(o.r.ue->ok(), "no uevent socket");
	Rig &r = o.r;
	Manual &m = *o.m;
	const Sysfs &S = *r.sysfs;
	const uint32_t dbc = m.dbc();
	t.expect(S.dbc_state(dbc) == 1, "dbc%u_state %s once activated, want 1 (ASSIGNED)", dbc,
		 fmt(S.dbc_state(dbc)).c_str());
	const size_t mark = r.ue->mark();
	const std::string reason = reason_for("states");
	const HeldCrash c = crash_held_under_waiter(t, *r.dev, m, *r.mb, reason);
	t.expect(c.waited == -EPIPE, "the waiter's WAIT_BO: %s, want EPIPE", qaic::errno_name(-c.waited).c_str());
	// Held after the host acknowledged BEFORE_POWER_UP.
	t.expect(wait_for([&] { return S.dbc_state(dbc) == 4; }, kSsrTimeout),
		 "dbc%u_state %s while the card holds the recovery, want 4 (BEFORE_POWER_UP)", dbc,
		 fmt(S.dbc_state(dbc)).c_str());
	t.expect(dbc_states(*r.ue, S.bdf, dbc, "accel", mark) == std::vector<int>({2, 3, 4}),
		 "DBC %u announced %s before power-up, want [2,3,4]", dbc,
		 join(dbc_states(*r.ue, S.bdf, dbc, "accel", mark)).c_str());
	t.expect(devcd_of(S.bdf).empty(), "a dump before the card offered one");
	expect_owner_told(t, *r.dev, m, "under SSR", f.p.under_ssr);
	t.expect(S.dbc_state(dbc) == 4, "dbc%u_state %s after the refused calls", dbc, fmt(S.dbc_state(dbc)).c_str());
	release_held_crash(t, r, dbc, mark);
	const auto seq = dbc_states(*r.ue, S.bdf, dbc, "accel", mark);
	t.expect(seq == std::vector<int>({2, 3, 4, 5, 0}), "DBC %u announced %s, want [2,3,4,5,0]", dbc,
		 join(seq).c_str());
	t.expect(S.dbc_state(dbc) == 0, "dbc%u_state %s after recovery", dbc, fmt(S.dbc_state(dbc)).c_str());
	check_dump(t, S.bdf, dbc, reason, false);
	expect_crashed_deactivate(t, m, dbc, f.p);
	expect_computes_again(t, *r.dev, S, m, 3);
	t.note("DBC %u: states %s; the ELF active again on DBC %u", dbc, join(seq).c_str(), m.dbc());
	expect_log_clean(t, *r.km, "SSR");
}

// The owner's calls on its DBC while the card holds the recovery (the
// DBC's state read around them: they ran under SSR), then a WAIT_BO on
// the output the crash dropped where the profile asks it.
void expect_told_under_ssr(ktap::Case &t, Rig &r, Manual &m, const Profile &p)
{
	const Sysfs &S = *r.sysfs;
	const auto st0 = S.dbc_state(m.dbc());
	const OwnerCalls got = expect_owner_told(t, *r.dev, m, "under SSR", p.under_ssr);
	const auto st1 = S.dbc_state(m.dbc());
	t.expect(st0.value_or(0) >= 2 && st1.value_or(0) >= 2, "the DBC left SSR during the checks (state %s..%s)",
		 fmt(st0).c_str(), fmt(st1).c_str());
	t.note("under SSR (state %s..%s): EXECUTE %s, ATTACH %s, WAIT %s", fmt(st0).c_str(), fmt(st1).c_str(),
	       qaic::errno_name(-got.exec).c_str(), qaic::errno_name(-got.attach).c_str(),
	       qaic::errno_name(-got.wait).c_str());
	if (p.dropped_wait_under_ssr)
		expect_dropped_wait(t, *r.dev, m, "under SSR", p.dropped_wait_under_ssr);
}

// The DBC's states announced on the accel device and, the same, on the
// UMD's class device.
void expect_announced_on_both(ktap::Case &t, Uevents &ue, const std::string &bdf, uint32_t dbc, size_t mark)
{
	const auto seq = dbc_states(ue, bdf, dbc, "accel", mark);
	t.expect(seq == std::vector<int>({2, 3, 4, 5, 0}), "DBC %u states announced %s, want [2,3,4,5,0]", dbc,
		 join(seq).c_str());
	t.expect(wait_dbc_idle(ue, bdf, dbc, mark, kSsrTimeout, kUmdClass),
		 "no DBC_STATE=0 uevent on the UMD's device for DBC %u", dbc);
	const auto useq = dbc_states(ue, bdf, dbc, kUmdClass, mark);
	t.expect(useq == seq, "the UMD's device announced %s", join(useq).c_str());
}

// The errno contract of docs/health.md step by step, in the driver's
// terms: a WAIT_BO asleep at the crash is woken with EPIPE; while the card
// holds the recovery, and where the profile asks after it, the owner's
// calls on the DBC get EPIPE from ours, and from upstream 7.3 (which
// released the DBC at BEFORE_SHUTDOWN) what a DBC not the owner's gets;
// the dropped output stays dropped until it is queued again; the card
// forgot the activation (or the host refuses its DEACTIVATE); the ELF
// stays loaded, activates again and computes.
void ssr_errno_epipe(ktap::Case &t, const Fixture &f)
{
	const Profile &p = f.p;
	CrashedOwner o(t, f);
	if (!o.ready)
		return;
	Rig &r = o.r;
	Manual &m = *o.m;
	const Sysfs &S = *r.sysfs;
	const uint32_t dbc = m.dbc();
	const auto faults0 = S.tele("nsp_faults");
	const size_t mark = r.ue->mark();
	const auto t0 = Clock::now();
	const std::string reason = reason_for("epipe");
	// The card holds the recovery before power-up until released, so
	// the checks below always run while the DBC is under SSR.
	const HeldCrash c = crash_held_under_waiter(t, *r.dev, m, *r.mb, reason);
	t.expect(c.waited == -EPIPE, "the waiter's WAIT_BO: %s, want EPIPE", qaic::errno_name(-c.waited).c_str());
	t.note("the waiter saw %s %.1f ms after the injection", qaic::errno_name(-c.waited).c_str(), c.woken_ms);
	t.expect(wait_for([&] { return S.dbc_state(dbc).value_or(0) >= 2; }, kSsrTimeout),
		 "dbc%u_state never showed the recovery (now %s)", dbc, fmt(S.dbc_state(dbc)).c_str());
	expect_told_under_ssr(t, r, m, p);
	release_held_crash(t, r, dbc, mark);
	t.note("DBC %u free again %.1f ms after the first inference (the crash held until released)", dbc,
	       ms_since(t0));
	// Upstream 7.3's announcements: ssr_dbc_state_through_recovery.
	if (p.umd_device)
		expect_announced_on_both(t, *r.ue, S.bdf, dbc, mark);
	t.expect(S.dbc_state(dbc) == 0, "dbc%u_state %s after recovery", dbc, fmt(S.dbc_state(dbc)).c_str());
	if (p.after_ssr.exec)
		expect_owner_told(t, *r.dev, m, "after the recovery", p.after_ssr);
	expect_dropped_wait(t, *r.dev, m, "after recovery", p.dropped_wait_after_ssr);
	expect_crashed_deactivate(t, m, dbc, p);
	if (p.hwmon_telemetry)
		t.expect(S.tele("nsp_faults") == (faults0 ? *faults0 + 1 : -1), "nsp_faults %s, was %s",
			 fmt(S.tele("nsp_faults")).c_str(), fmt(faults0).c_str());
	if (p.ssr_errno_checks_dump)
		check_dump(t, S.bdf, dbc, reason, false);
	expect_computes_again(t, *r.dev, S, m, 3);
	free_all_devcd(S.bdf);
	expect_log_clean(t, *r.km, "SSR");
}

// A crash of a running workload: its dump in devcoredump (the
// dump_file_meta header, the card's table and regions naming this crash),
// then the same Pipeline activates its loaded ELF again and computes.
void ssr_devcoredump(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kSysfs | kMailbox | kDevice | kUevents | kNoDumps);
	if (!r.ready)
		return;
	const Sysfs &S = *r.sysfs;
	t.expect(qaic::read_attr("/sys/class/devcoredump/disabled") != "1", "devcoredump is disabled");
	qaic::Pipeline p(*r.dev, *wl::find("matmul_i8"), 4);
	if (const auto why = p.setup(); !why.empty())
		return t.expect(false, "matmul_i8: %s", why.c_str());
	expect_run(t, "before the crash", p.run(20), 20);
	const uint32_t dbc = p.dbc();
	const std::string reason = reason_for("devcoredump test");
	const size_t mark = r.ue->mark();
	const std::string res = r.mb->run("crash dbc=" + std::to_string(dbc) + " reason=" + reason);
	t.expect(res.empty(), "crash dbc=%u: %s", dbc, res.c_str());
	t.expect(wait_dbc_idle(*r.ue, S.bdf, dbc, mark), "DBC %u not free again", dbc);
	check_dump(t, S.bdf, dbc, reason, true, "matmul_i8", 2);
	// The Pipeline carries on.
	const std::string rec = p.recover();
	t.expect(rec.empty(), "recover(): %s", rec.c_str());
	if (rec.empty())
		expect_run(t, "after recover()", p.run(20), 20);
}

// ---- the crash loop ---------------------------------------------------------------

// B of ssr_crash_loop: batches of 25 inferences, every output checked, in a
// thread of its own until stopped (or a batch goes wrong).
class Streamer {
public:
	explicit Streamer(qaic::Pipeline &p) : p_(p), th_([this] { loop(); }) {}
	~Streamer() { stop(); }
	Streamer(const Streamer &) = delete;
	Streamer &operator=(const Streamer &) = delete;

	void stop()
	{
		stop_ = true;
		if (th_.joinable())
			th_.join();
	}
	std::atomic<uint64_t> inferences{0}, batches{0}, mismatches{0};
	std::string problem; // read once stopped

private:
	void loop()
	{
		while (!stop_) {
			const qaic::RunResult r = p_.run(25);
			inferences += r.inferences;
			mismatches += r.mismatches;
			batches++;
			if (!r.problem.empty() || r.mismatches || r.inferences != 25) {
				problem = "batch " + std::to_string(batches) + ": " + std::to_string(r.inferences) +
					  " of 25, " + std::to_string(r.mismatches) + " wrong; " + r.problem + " " +
					  r.first_mismatch;
				return;
			}
		}
	}

	qaic::Pipeline &p_;
	std::atomic<bool> stop_{false};
	std::thread th_; // last: starts once the rest is there
};

// What ssr_crash_loop counts over its crashes of A.
struct CrashLoop {
	unsigned in_wait = 0, in_exec = 0, in_eperm = 0, sysfs_ssr_seen = 0, recovered = 0;
	uint64_t a_inferences = 0, a_mismatches = 0;
	std::vector<double> idle_ms, back_ms; // crash to the DBC IDLE again; to A's first correct inference
	std::vector<unsigned> dbcs_used;
	Clock::time_point start = Clock::now(), last_note = start;
};

// Where a crash stands: the uevents from `mark`, the injection at `t0`.
struct CrashMark {
	size_t mark;
	Clock::time_point t0;
};

// Crash `k` of A while it streams: once A has had a full pipeline of
// outputs back, a crash of its DBC; its run() stops, telling EPIPE (or,
// where the driver releases the DBC at BEFORE_SHUTDOWN, EPERM for a call
// made or finished after the recovery: the DBC is no longer the user's).
CrashMark crash_streaming(ktap::Case &t, const Fixture &f, Rig &r, qaic::Pipeline &a, unsigned k, CrashLoop &n,
			  const std::string &reason)
{
	std::atomic<bool> a_done{false};
	qaic::RunResult ra;
	const uint64_t c0 = a.completed();
	std::thread ta([&] {
		ra = a.run(100000000);
		a_done = true;
	});
	const std::string crash = "crash " + std::to_string(k);
	if (!wait_for([&] { return a.completed() >= c0 + 8 || a_done; }, 60, 1) || a_done)
		abandon(t, (crash + ": A is not streaming: " + ra.problem).c_str());
	const CrashMark c{r.ue->mark(), Clock::now()};
	const std::string res = r.mb->run("crash dbc=" + std::to_string(a.dbc()) + " reason=" + reason);
	if (!res.empty())
		abandon(t, (crash + " refused: " + res).c_str());
	if (!wait_for([&] { return a_done.load(); }, 30, 1))
		abandon(t, (crash + ": A's run() did not stop").c_str());
	ta.join();
	n.a_inferences += ra.inferences;
	n.a_mismatches += ra.mismatches;
	const bool eperm = f.p.releases_dbc_at_shutdown;
	t.expect(ra.error == -EPIPE || (eperm && ra.error == -EPERM), "crash %u: A's run() ended with %s (%s), want EPIPE%s",
		 k, qaic::errno_name(-ra.error).c_str(), ra.problem.c_str(), eperm ? " or EPERM" : "");
	n.in_eperm += ra.error == -EPERM;
	t.expect(!ra.mismatches, "crash %u: %llu wrong outputs of A before it; %s", k,
		 static_cast<unsigned long long>(ra.mismatches), ra.first_mismatch.c_str());
	(ra.problem.rfind("WAIT_BO", 0) == 0 ? n.in_wait : n.in_exec)++;
	return c;
}

// After crash `k` of DBC `dbc`: its state in sysfs runs through the SSR
// stages back to 0, and the uevents announce every state, in order, on
// every device that announces them.
void expect_ssr_cycle(ktap::Case &t, const Fixture &f, Rig &r, uint32_t dbc, unsigned k, const CrashMark &c,
		      CrashLoop &n)
{
	const size_t mark = c.mark;
	const Sysfs &S = *r.sysfs;
	std::vector<int> seen;
	const bool idle = wait_for([&] {
		const auto st = S.dbc_state(dbc);
		if (st && (seen.empty() || seen.back() != *st))
			seen.push_back(int(*st));
		return st == 0;
	}, kSsrTimeout, 1);
	n.idle_ms.push_back(ms_since(c.t0));
	t.expect(idle, "crash %u: dbc%u_state %s, not back to 0 (seen %s)", k, dbc, fmt(S.dbc_state(dbc)).c_str(),
		 join(seen).c_str());
	// Values 2..5 in order, maybe none of them (a quick SSR), then 0.
	const auto ssr_states = [](int v) { return v == 0 || (v >= 2 && v <= 5); };
	t.expect(std::is_sorted(seen.begin(), seen.end() - (seen.size() && seen.back() == 0)) &&
			 std::all_of(seen.begin(), seen.end(), ssr_states),
		 "crash %u: dbc%u_state went %s", k, dbc, join(seen).c_str());
	n.sysfs_ssr_seen += std::any_of(seen.begin(), seen.end(), [](int v) { return v >= 2; });
	t.expect(wait_dbc_idle(*r.ue, S.bdf, dbc, mark), "crash %u: no DBC_STATE=0 uevent", k);
	const auto seq = dbc_states(*r.ue, S.bdf, dbc, "accel", mark);
	t.expect(seq == std::vector<int>({2, 3, 4, 5, 0}), "crash %u: DBC %u announced %s, want [2,3,4,5,0]", k, dbc,
		 join(seq).c_str());
	if (!f.p.umd_device)
		return;
	t.expect(wait_dbc_idle(*r.ue, S.bdf, dbc, mark, kSsrTimeout, kUmdClass),
		 "crash %u: no DBC_STATE=0 uevent on the UMD's device", k);
	const auto useq = dbc_states(*r.ue, S.bdf, dbc, kUmdClass, mark);
	t.expect(std::count(useq.begin(), useq.end(), 2) == 1 && std::count(useq.begin(), useq.end(), 5) == 1,
		 "crash %u: the UMD's device announced %s", k, join(useq).c_str());
}

// One crash of A, and A back to correct inferences after recover(); its
// dump names the crash and is freed for the next one. False: A did not
// recover.
bool crash_and_recover(ktap::Case &t, const Fixture &f, Rig &r, qaic::Pipeline &a, unsigned k, CrashLoop &n,
		       const Streamer &b)
{
	const uint32_t dbcA = a.dbc();
	if (std::find(n.dbcs_used.begin(), n.dbcs_used.end(), dbcA) == n.dbcs_used.end())
		n.dbcs_used.push_back(dbcA);
	const std::string reason = reason_for("loop " + std::to_string(k));
	const CrashMark c = crash_streaming(t, f, r, a, k, n, reason);
	expect_ssr_cycle(t, f, r, dbcA, k, c, n);
	// A carries on: back to a correct inference.
	const std::string rec = a.recover();
	t.expect(rec.empty(), "crash %u: recover(): %s", k, rec.c_str());
	if (!rec.empty())
		return false;
	const qaic::RunResult first = a.run(1);
	n.back_ms.push_back(ms_since(c.t0));
	const qaic::RunResult more = a.run(19);
	n.a_inferences += first.inferences + more.inferences;
	n.a_mismatches += first.mismatches + more.mismatches;
	const std::string what = "crash " + std::to_string(k) + ": A after recover()";
	if (expect_run(t, what.c_str(), first, 1) && expect_run(t, what.c_str(), more, 19))
		n.recovered++;
	check_dump(t, r.sysfs->bdf, dbcA, reason, false);
	r.km->lines(); // keep up with the kernel's ring buffer
	if (k + 1 == f.o.crashes || (k + 1) % 100 == 0 || Clock::now() - n.last_note > std::chrono::seconds(15)) {
		n.last_note = Clock::now();
		t.note("progress: crash %u/%u at %.0f s: crash to DBC idle mean %.1f ms (worst %.1f), to A "
		       "correct again mean %.1f ms; B %llu inferences, all correct; MemAvailable %s kB",
		       k + 1, f.o.crashes, ms_since(n.start) / 1000, mean(n.idle_ms),
		       *std::max_element(n.idle_ms.begin(), n.idle_ms.end()), mean(n.back_ms),
		       static_cast<unsigned long long>(b.inferences.load()), fmt(meminfo_kb("MemAvailable")).c_str());
		std::fflush(stdout);
	}
	return true;
}

// The loop's figures, in the case's notes and for the soak's summary.
void report_crash_loop(ktap::Case &t, const Fixture &f, const CrashLoop &n, const Streamer &b, uint32_t dbcB)
{
	std::string used;
	for (unsigned d : n.dbcs_used)
		used += (used.empty() ? "" : ",") + std::to_string(d);
	t.note("%u crashes of A (DBCs %s), %u recovered: stopped in WAIT_BO %u times, in EXECUTE_BO %u (EPERM "
	       "%u times); an SSR state seen in sysfs %u times", f.o.crashes, used.c_str(), n.recovered, n.in_wait,
	       n.in_exec, n.in_eperm, n.sysfs_ssr_seen);
	t.note("crash to DBC idle: mean %.1f ms, p99 %.1f, worst %.1f; crash to A's first correct inference: "
	       "mean %.1f ms, p99 %.1f, worst %.1f",
	       mean(n.idle_ms), percentile(n.idle_ms, 99), percentile(n.idle_ms, 100), mean(n.back_ms),
	       percentile(n.back_ms, 99), percentile(n.back_ms, 100));
	t.note("A: %llu good inferences; B (DBC %u): %llu inferences in %llu batches, all correct",
	       static_cast<unsigned long long>(n.a_inferences), dbcB, static_cast<unsigned long long>(b.inferences.load()),
	       static_cast<unsigned long long>(b.batches.load()));
	if (!g_fig)
		return;
	g_fig->crashes = f.o.crashes;
	g_fig->recoveries = n.recovered;
	g_fig->idle_mean_ms = mean(n.idle_ms);
	g_fig->idle_p99_ms = percentile(n.idle_ms, 99);
	g_fig->idle_worst_ms = percentile(n.idle_ms, 100);
	g_fig->back_mean_ms = mean(n.back_ms);
	g_fig->back_p99_ms = percentile(n.back_ms, 99);
	g_fig->back_worst_ms = percentile(n.back_ms, 100);
	g_fig->ssr_inferences = n.a_inferences + b.inferences;
	g_fig->ssr_mismatches = n.a_mismatches + b.mismatches;
}

// Two workloads on two DBCs: A crashes over and over (--crashes, 20 in
// the regular suite, 1000 in the soak) and recovers each time, B keeps
// computing: its DBC never changes state and its outputs are all correct.
// Then every NSP, DBC, semaphore, MCID and byte of DDR is free again.
void ssr_crash_loop(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kAll | kNoDumps);
	auto devB = r.ready ? open_card(t, f.card) : std::nullopt;
	if (!r.ready || !devB)
		return;
	const Sysfs &S = *r.sysfs;
	t.expect(r.ue->ok(), "no uevent socket");
	std::optional<qaic::Pipeline> pa, pb;
	pa.emplace(*r.dev, *wl::find("vadd_f32"), 8);
	pb.emplace(*devB, *wl::find("matmul_i8"), 4);
	// A is crashed while it streams: with --known-bug execute-unwind it
	// EXECUTE_BOs one BO at a time, out of the way of upstream's error
	// path (see start_workers()).
	pa->set_one_bo_per_execute(f.p.execute_unwind_bug);
	for (auto *p : {&*pa, &*pb})
		if (const auto why = p->setup(); !why.empty())
			return t.expect(false, "setup: %s", why.c_str());
	const uint32_t dbcB = pb->dbc();
	const auto faults0 = f.p.hwmon_telemetry ? S.tele("nsp_faults") : std::nullopt;
	const size_t mark0 = r.ue->mark();
	CrashLoop n;
	Streamer b(*pb);
	for (unsigned k = 0; k < f.o.crashes && !t.failed(); k++)
		if (!crash_and_recover(t, f, r, *pa, k, n, b))
			break;
	b.stop();
	t.expect(b.problem.empty(), "B: %s", b.problem.c_str());
	t.expect(b.inferences > 0, "B ran no inference");
	t.expect(dbc_states(*r.ue, S.bdf, dbcB, "accel", mark0).empty(), "B's DBC %u changed state: %s", dbcB,
		 join(dbc_states(*r.ue, S.bdf, dbcB, "accel", mark0)).c_str());
	t.expect(!r.ue->overflowed(), "the uevent socket overflowed");
	if (f.p.hwmon_telemetry)
		t.expect(S.tele("nsp_faults") == (faults0 ? *faults0 + f.o.crashes : -1), "nsp_faults %s -> %s over %u "
			 "crashes", fmt(faults0).c_str(), fmt(S.tele("nsp_faults")).c_str(), f.o.crashes);
	report_crash_loop(t, f, n, b, dbcB);
	t.expect(n.sysfs_ssr_seen > 0, "dbcN_state never showed an SSR state in %u crashes", f.o.crashes);
	pa.reset();
	pb.reset();
	if (const auto idle = idle_resources(t, *r.dev))
		t.note("after the loop: %s", describe(*idle).c_str());
	expect_log_clean(t, *r.km, "crash loop");
}

// ---- a quick recovery -------------------------------------------------------------

// A setting written for the scope, and written back after.
struct Setting {
	std::string f, old;
	bool set = false;
	Setting(std::string file, const char *v) : f(std::move(file)), old(qaic::read_attr(f))
	{
		set = !old.empty() && write_sysfs(f, v) == 0;
	}
	~Setting()
	{
		if (set)
			write_sysfs(f, old);
	}
};

// Nothing but one real-time thread on CPU 1 while it runs, for the scope:
// no RT throttling, and no time for CFS tasks (6.12's fair server gives
// them 50 ms a second otherwise); the card's interrupts on CPU 0.
struct Cpu1ForOneThread {
	IrqsOnCpu0 irqs;
	Setting rt{"/proc/sys/kernel/sched_rt_runtime_us", "-1"};
	Setting fair{"/sys/kernel/debug/sched/fair_server/cpu1/runtime", "0"};
	explicit Cpu1ForOneThread(const std::string &pci) : irqs(pci) {}
};

void pin_to_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

// "copy", counting to 10 million before each copy: an inference of a few
// hundred ms.
std::optional<wl::Example> slow_copy()
{
	wl::Example e = *wl::find("copy");
	const size_t body = e.source.find("\tli r10, OUT\n");
	if (body == std::string::npos)
		return std::nullopt;
	e.source.insert(body, "\tli r13, 0\n\tli r14, 10000000\nspin:\n\taddi r13, r13, 1\n\tbne r13, r14, spin\n");
	return e;
}

// An attempt's waiter (a WAIT_BO on CPU 1; `waited` 1 until it returns)
// and the real-time thread that then holds CPU 1, for at most 5 s or
// until stopped.
struct Cpu1Threads {
	std::atomic<pid_t> tid{0};
	std::atomic<int> waited{1}, hog_rc{-1};
	std::atomic<bool> hog_on{true};
	Clock::time_point returned;
	std::thread waiter, hog;

	void start_waiter(const qaic::Device &dev, uint32_t dbc, uint32_t bo)
	{
		waiter = std::thread([this, d = &dev, dbc, bo] {
			pin_to_cpu(1);
			tid = pid_t(::syscall(SYS_gettid));
			waited = qaic::wait(*d, dbc, bo, 60000);
			returned = Clock::now();
		});
	}
	void start_hog()
	{
		hog = std::thread([this] {
			pin_to_cpu(1);
			sched_param sp{};
			sp.sched_priority = 1;
			hog_rc = sched_setscheduler(0, SCHED_FIFO, &sp) ? errno : 0;
			const auto end = Clock::now() + std::chrono::seconds(5);
			while (hog_on.load(std::memory_order_relaxed) && Clock::now() < end) {
			}
		});
	}
	void stop()
	{
		hog_on = false;
		hog.join();
		waiter.join();
	}
};

// What the waiter of an attempt did, and when.
struct QuickAttempt {
	bool asleep = false, held_at_shutdown = false, slept_through = false, returned_before_idle = false;
	int waited = 1, hog_rc = -1;
	double inference_ms = 0, to_idle_ms = 0, to_return_ms = 0, idle_to_return_ms = 0;
};

// One attempt: the waiter asleep on CPU 1 while a slow inference computes,
// then CPU 1 held; the inference completes (a second waiter, on CPU 0,
// sees it), and the card crashes its DBC. Nullopt: the case cannot go on.
std::optional<QuickAttempt> quick_attempt(ktap::Case &t, Rig &r, const wl::Example &e, unsigned attempt)
{
	const qaic::Device &dev = *r.dev;
	Manual m(dev, e);
	if (!m.problem.empty()) {
		t.expect(false, "%s", m.problem.c_str());
		return std::nullopt;
	}
	QuickAttempt a;
	const uint32_t dbc = m.dbc();
	t.expect(m.attach() == 0, "ATTACH");
	t.expect(m.execute_both(attempt + 1) == 0, "EXECUTE");
	const auto t0 = Clock::now();
	Cpu1Threads c;
	c.start_waiter(dev, dbc, m.out->handle());
	a.asleep = wait_for([&] { return c.tid && c.waited == 1 && asleep_in_ioctl(c.tid); }, 10, 1);
	c.start_hog();
	const int done = qaic::wait(dev, dbc, m.out->handle(), 30000);
	a.inference_ms = ms_since(t0);
	std::string why;
	t.expect(done == 0 && m.output_matches(attempt + 1, why), "the inference: %s %s", qaic::errno_name(-done).c_str(),
		 why.c_str());
	const size_t mark = r.ue->mark();
	const auto crash_t = Clock::now();
	const std::string res = r.mb->run("crash dbc=" + std::to_string(dbc) + " reason=" + reason_for("quick"));
	t.expect(res.empty(), "crash dbc=%u: %s", dbc, res.c_str());
	// BEFORE_SHUTDOWN announced, the waiter still held off the CPU.
	t.expect(r.ue->wait([&](const Uevent &ev) {
		return ev.subsystem == "accel" && of_card(ev, r.sysfs->bdf) && ev.dbc_id == int(dbc) && ev.dbc_state >= 2;
	}, mark, kSsrTimeout), "no DBC_STATE uevent of the recovery of DBC %u", dbc);
	a.held_at_shutdown = a.asleep && c.waited == 1;
	t.expect(wait_dbc_idle(*r.ue, r.sysfs->bdf, dbc, mark), "DBC %u not free again", dbc);
	const auto idle = Clock::now();
	a.slept_through = a.asleep && c.waited == 1;
	c.stop();
	free_all_devcd(r.sysfs->bdf);
	a.waited = c.waited;
	a.hog_rc = c.hog_rc;
	const auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
	a.to_idle_ms = ms(idle - crash_t);
	a.to_return_ms = ms(c.returned - crash_t);
	a.idle_to_return_ms = ms(c.returned - idle);
	a.returned_before_idle = c.returned < idle;
	return a;
}

// Whether an attempt tells (its waiter ran again only once the recovery
// had begun, or ended, as the driver has it), and then what it was told.
bool judge_quick_attempt(ktap::Case &t, const Profile &p, unsigned attempt, const QuickAttempt &a)
{
	const std::string told = qaic::errno_name(-a.waited);
	const char *waited = told.c_str();
	if (p.shutdown_waits_for_waiters) {
		// BEFORE_SHUTDOWN empties the DBC's transfer list and waits for
		// the readers of its channel lock (synchronize_srcu), the waiter
		// among them: the recovery cannot end before the waiter has run.
		if (!a.held_at_shutdown) {
			t.note("attempt %u: the waiter ran before the recovery began (%s); again", attempt, waited);
			return false;
		}
		t.expect(a.waited == -EPIPE, "attempt %u: WAIT_BO of a BO completed before the crash, back under SSR: "
			 "%s, want EPIPE", attempt, waited);
		t.expect(a.returned_before_idle, "attempt %u: the DBC was free %.0f ms after the crash, before the waiter "
			 "ran again (%.0f ms): the recovery did not wait for it", attempt, a.to_idle_ms, a.to_return_ms);
		t.note("attempt %u: inference %.0f ms; the waiter ran again %.0f ms after the crash (%s), the DBC free "
		       "at %.0f ms", attempt, a.inference_ms, a.to_return_ms, waited, a.to_idle_ms);
		return true;
	}
	if (!a.slept_through || a.returned_before_idle) {
		t.note("attempt %u: the waiter %s before the recovery ended (%s; crash to DBC free %.0f ms, to the "
		       "waiter's return %.0f ms; SCHED_FIFO: %s); again", attempt, a.asleep ? "ran" : "was not asleep",
		       waited, a.to_idle_ms, a.to_return_ms, a.hog_rc ? qaic::errno_name(a.hog_rc).c_str() : "ok");
		return false;
	}
	t.expect(a.waited == -EPIPE, "attempt %u: WAIT_BO of a BO completed before the crash, back after the "
		 "recovery: %s, want EPIPE", attempt, waited);
	t.note("attempt %u: inference %.0f ms; the waiter ran again %.0f ms after the DBC was free: %s", attempt,
	       a.inference_ms, a.idle_to_return_ms, waited);
	return true;
}

// A waiter whose BO completed just before the crash, and which runs again
// only once the recovery is over: still EPIPE, however quickly the card
// recovered (docs/health.md), not the EPERM of a DBC taken away. The
// waiter sleeps in WAIT_BO on CPU 1 while a slow inference computes; a
// real-time busy thread then holds CPU 1 (for at most 5 s) and the card's
// interrupts are steered to CPU 0, so the waiter is woken by the
// completion but runs again only after the SSR. (CPU 0 stays free: SRCU
// runs its callbacks there, and the SSR waits for a grace period.) Where
// the SSR waits for the waiter itself (upstream 7.3), the waiter runs
// again under SSR, gets EPIPE, and the DBC is free only after that.
void ssr_epipe_after_quick_recovery(ktap::Case &t, const Fixture &f)
{
	if (std::thread::hardware_concurrency() < 2)
		return t.skip("needs two CPUs");
	Rig r(t, f.card, kAll);
	if (!r.ready)
		return;
	// Other tasks move to CPU 0.
	const Cpu1ForOneThread cpu1(r.sysfs->pci);
	t.expect(cpu1.rt.set || cpu1.fair.set, "cannot give CPU 1 to a real-time thread alone");
	t.expect(cpu1.irqs.moved > 0, "could not steer the card's interrupts to CPU 0");
	pin_to_cpu(0); // this thread stays off CPU 1
	const auto e = slow_copy();
	if (!e)
		return t.expect(false, "the copy workload's source changed");
	unsigned conclusive = 0;
	for (unsigned attempt = 0; attempt < 6 && conclusive < 2 && !t.failed(); attempt++) {
		const auto a = quick_attempt(t, r, *e, attempt);
		if (!a)
			return;
		conclusive += judge_quick_attempt(t, f.p, attempt, *a);
	}
	t.expect(conclusive > 0, "the waiter never slept through a recovery in 6 attempts");
	expect_log_clean(t, *r.km, "quick recovery");
}

// ---- users killed during a recovery -----------------------------------------------

// A user of its own (a child process) asleep in WAIT_BO on its DBC: the DBC
// comes on `fd` once it queued, then what the WAIT_BO returned.
struct SleepingUser {
	pid_t pid;
	int fd;
	int32_t dbc;
};

[[noreturn]] void sleeping_user(unsigned card, int fd)
{
	ktap::Case c;
	auto d = open_card(c, card);
	int32_t msg[2] = {-1, 1};
	if (d) {
		Manual m(*d, *wl::find("vadd_f32"));
		if (m.problem.empty() && m.attach() == 0 && m.execute_out_only() == 0) {
			msg[0] = int32_t(m.dbc());
			[[maybe_unused]] ssize_t w = write(fd, msg, 4);
			// Blocks until the crash.
			msg[1] = qaic::wait(*d, m.dbc(), m.out->handle(), 60000);
			w = write(fd, msg + 1, 4);
			pause();
		}
	}
	[[maybe_unused]] ssize_t w = write(fd, msg, 4);
	_exit(1);
}

std::optional<SleepingUser> start_sleeping_user(ktap::Case &t, unsigned card)
{
	int to_parent[2];
	if (pipe(to_parent)) {
		t.expect(false, "pipe");
		return std::nullopt;
	}
	std::fflush(stdout);
	const pid_t pid = fork();
	if (pid == 0) {
		close(to_parent[0]);
		sleeping_user(card, to_parent[1]);
	}
	close(to_parent[1]);
	SleepingUser u{pid, to_parent[0], -1};
	pollfd pf{u.fd, POLLIN, 0};
	if (poll(&pf, 1, 60000) != 1 || read(u.fd, &u.dbc, 4) != 4 || u.dbc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		close(u.fd);
		t.expect(false, "the child could not activate and queue");
		return std::nullopt;
	}
	return u;
}

// The killed user reaped; what its WAIT_BO returned, if it did.
std::optional<int32_t> reap_killed_user(ktap::Case &t, const SleepingUser &u)
{
	int status = 0;
	waitpid(u.pid, &status, 0);
	t.expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child was not killed (status %#x)", status);
	fcntl(u.fd, F_SETFL, O_NONBLOCK);
	int32_t waited = 1;
	const bool told = read(u.fd, &waited, 4) == 4;
	close(u.fd);
	return told ? std::optional<int32_t>(waited) : std::nullopt;
}

// After a kill: the DBC IDLE again, the card's pool as it was, no NSP
// active but those before.
void expect_freed_after_kill(ktap::Case &t, const Fixture &f, Rig &r, const cmd::ResourceInfo &base,
			     std::optional<int64_t> active0, int32_t dbc, size_t mark, int target)
{
	const Sysfs &S = *r.sysfs;
	t.expect(wait_dbc_idle(*r.ue, S.bdf, uint32_t(dbc), mark), "DBC %d not free again", dbc);
	t.expect(S.dbc_state(uint32_t(dbc)) == 0, "dbc%d_state %s at the end", dbc, fmt(S.dbc_state(uint32_t(dbc))).c_str());
	const auto now = resources_back_to(*r.dev, base);
	t.expect(now && same_free(base, *now), "after the kill at state %d: %s; want %s", target,
		 now ? describe(*now).c_str() : "RESOURCE_INFO failed", describe(base).c_str());
	if (f.p.hwmon_telemetry)
		t.expect(wait_for([&] { return S.tele("nsp_active") == active0; }, 60, 50), "nsp_active %s, was %s",
			 fmt(S.tele("nsp_active")).c_str(), fmt(active0).c_str());
	free_all_devcd(S.bdf);
}

// A user killed at the first sight of DBC_STATE `target`; with `held`,
// the card holds the recovery there (crash hold=1) until the user is
// reaped, then is released. False: the case cannot go on.
bool kill_at(ktap::Case &t, const Fixture &f, Rig &r, const cmd::ResourceInfo &base, std::optional<int64_t> active0,
	     int target, bool held, std::vector<uint32_t> &used)
{
	const Sysfs &S = *r.sysfs;
	const auto u = start_sleeping_user(t, f.card);
	if (!u)
		return false;
	const int32_t dbc = u->dbc;
	t.expect(wait_for([&] { return asleep_in_ioctl(u->pid, u->pid); }, 10, 5), "the child is not asleep in WAIT_BO");
	used.push_back(uint32_t(dbc));
	const auto busy = resources(*r.dev);
	t.expect(busy && busy->nsp_free < base.nsp_free, "the child's activation does not show");
	const size_t mark = r.ue->mark();
	const std::string res = r.mb->run("crash dbc=" + std::to_string(dbc) + (held ? " hold=1" : "") + " reason=" +
					  reason_for("kill"));
	t.expect(res.empty(), "crash dbc=%d: %s", dbc, res.c_str());
	const bool reached = r.ue->wait([&](const Uevent &e) {
		return e.subsystem == "accel" && of_card(e, S.bdf) && e.dbc_id == dbc && e.dbc_state >= target;
	}, mark, kSsrTimeout);
	const auto st = S.dbc_state(uint32_t(dbc));
	kill(u->pid, SIGKILL);
	t.expect(reached, "no DBC_STATE>=%d uevent for DBC %d", target, dbc);
	const auto waited = reap_killed_user(t, *u);
	if (waited)
		t.expect(*waited == -EPIPE, "the child's WAIT_BO: %s, want EPIPE", qaic::errno_name(-*waited).c_str());
	t.note("killed at DBC_STATE %d%s (dbc%d_state %s); the child's WAIT_BO %s", target, held ? ", held by the card" : "",
	       dbc, fmt(st).c_str(), waited ? qaic::errno_name(-*waited).c_str() : "had not returned");
	if (held) {
		t.expect(S.dbc_state(uint32_t(dbc)) == target, "dbc%d_state %s with the recovery held and its user gone, "
			 "want %d", dbc, fmt(S.dbc_state(uint32_t(dbc))).c_str(), target);
		const std::string rel = r.mb->run("ssr release");
		t.expect(rel.empty(), "ssr release: %s", rel.c_str());
	}
	expect_freed_after_kill(t, f, r, base, active0, dbc, mark, target);
	return true;
}

// A user killed while the card recovers its DBC leaves nothing behind: the
// card's resources are all free again, the DBC is IDLE in sysfs and a user
// computes on it. Killed at the first sight of BEFORE_SHUTDOWN,
// BEFORE_POWER_UP and AFTER_POWER_UP; at BEFORE_POWER_UP with the card
// holding the recovery where the profile says so.
void ssr_kill_during_recovery(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kAll | kNoDumps);
	if (!r.ready)
		return;
	const Sysfs &S = *r.sysfs;
	const auto base = idle_resources(t, *r.dev);
	const auto active0 = S.tele("nsp_active");
	if (!base)
		return;
	std::vector<uint32_t> used;
	const std::pair<int, bool> points[] = {{2, false}, {4, f.p.kill_held_at_power_up}, {5, false}};
	for (const auto &[target, held] : points)
		if (!kill_at(t, f, r, *base, active0, target, held, used))
			return;
	// Where the driver sets IDLE only when a DEACTIVATE is answered or an
	// SSR ends, a DBC of a user killed in an earlier suite still reads 1:
	// only this case's DBCs are asked.
	for (uint32_t d = 0; d < 16; d++)
		if (!f.p.idle_only_after_deactivate || std::count(used.begin(), used.end(), d))
			t.expect(S.dbc_state(d) == 0, "dbc%u_state %s with no user", d, fmt(S.dbc_state(d)).c_str());
	// The DBCs are usable again (a DBC the driver still held would hang
	// this), to a user that was not there before.
	if (auto fresh = open_card(t, f.card))
		run_workload(t, *fresh, "vadd_f32", 50);
	expect_log_clean(t, *r.km, "killed users");
	if (!f.p.ssr_complaints_known)
		return;
	// The driver's own complaints.
	for (const auto &l : r.km->lines())
		if (l.level <= 3 || l.text.find("refused") != std::string::npos ||
		    l.text.find("unexpected") != std::string::npos || l.text.find("abandon") != std::string::npos)
			t.expect(false, "kernel: %s", l.text.c_str());
}

// ---- module reloads and card resets under load ------------------------------------

// A workload streaming in a process of its own, as an application's would:
// its open accel node pins the module, and its end (an error, or a kill)
// lets go of it. What it did is in memory shared with the case.
class Worker {
public:
	struct Shared {
		std::atomic<int> state; // 0 starting, 1 streaming, 2 ended (its node about to close)
		std::atomic<uint64_t> inferences, mismatches;
		std::atomic<int32_t> error; // -errno of the call that ended it; 0: it never streamed
		char problem[240];
	};

	// one_bo: EXECUTE_BO one BO at a time (Pipeline::set_one_bo_per_execute()).
	Worker(unsigned card, const char *workload, unsigned depth, bool one_bo = false) : name_(workload), one_bo_(one_bo)
	{
		void *p = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return;
		sh_ = new (p) Shared{};
		std::fflush(stdout);
		pid_ = ::fork();
		if (pid_ == 0) {
			child(card, depth);
			sh_->state = 2;
			std::fflush(stdout);
			_exit(0);
		}
	}
	~Worker()
	{
		if (pid_ > 0 && !reaped_) {
			::kill(pid_, SIGKILL);
			::waitpid(pid_, nullptr, 0);
		}
		if (sh_)
			::munmap(sh_, sizeof(Shared));
	}
	Worker(const Worker &) = delete;
	Worker &operator=(const Worker &) = delete;

	const std::string &name() const { return name_; }
	bool started() const { return pid_ > 0; }
	bool wait_streaming(double timeout_s)
	{
		return started() && wait_for([&] { return sh_->state != 0; }, timeout_s, 5) && sh_->state == 1;
	}
	uint64_t inferences() const { return sh_ ? sh_->inferences.load() : 0; }
	uint64_t mismatches() const { return sh_ ? sh_->mismatches.load() : 0; }
	int error() const { return sh_ ? sh_->error.load() : 0; }
	std::string problem() const { return sh_ ? std::string(sh_->problem) : "no shared memory"; }
	void kill9() const
	{
		if (pid_ > 0)
			::kill(pid_, SIGKILL);
	}
	// Waits for the process to end; true if it did within the time.
	bool reap(double timeout_s)
	{
		if (pid_ <= 0 || reaped_)
			return reaped_;
		reaped_ = wait_for([&] { return ::waitpid(pid_, &status_, WNOHANG) == pid_; }, timeout_s, 2);
		return reaped_;
	}
	bool exited_by_itself() const { return reaped_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0; }
	int status() const { return status_; }

private:
	void child(unsigned card, unsigned depth)
	{
		const auto c = card_info(card);
		auto dev = c && c->accel_minor ? qaic::Device::open(*c->accel_minor) : std::nullopt;
		if (!dev) {
			std::snprintf(sh_->problem, sizeof(sh_->problem), "card %u: no ONLINE accel node", card);
			return;
		}
		qaic::Pipeline p(*dev, *wl::find(name_), depth);
		if (const std::string why = p.setup(); !why.empty()) {
			std::snprintf(sh_->problem, sizeof(sh_->problem), "setup: %s", why.c_str());
			return;
		}
		p.set_one_bo_per_execute(one_bo_);
		// Long enough for a reset's way back; short enough to tell a hang.
		p.set_wait_timeout(20000);
		for (;;) {
			const qaic::RunResult r = p.run(10);
			sh_->inferences += r.inferences;
			sh_->mismatches += r.mismatches;
			if (r.mismatches && !sh_->problem[0])
				std::snprintf(sh_->problem, sizeof(sh_->problem), "wrong output: %s", r.first_mismatch.c_str());
			if (!r.problem.empty()) {
				if (!sh_->problem[0])
					std::snprintf(sh_->problem, sizeof(sh_->problem), "%s", r.problem.c_str());
				sh_->error = r.error ? r.error : -EPROTO;
				return; // ~Pipeline: DEACTIVATE and unload, as an application does
			}
			sh_->state = 1;
		}
	}

	std::string name_;
	bool one_bo_ = false;
	Shared *sh_ = nullptr;
	pid_t pid_ = -1;
	bool reaped_ = false;
	int status_ = 0;
};

// What a user in the middle of a reset or an unplug may be told
// (docs/testing.md, "Soak"; docs/health.md): ENODEV while the card is not
// ONLINE or gone, EPERM for a DBC the reset took away, EPIPE for one under
// SSR.
bool reset_errno(int e) { return e == -ENODEV || e == -EPERM || e == -EPIPE; }

std::string errno_counts(const std::map<int, unsigned> &m)
{
	std::string s;
	for (const auto &[e, n] : m)
		s += (s.empty() ? "" : ", ") + qaic::errno_name(-e) + " x" + std::to_string(n);
	return s.empty() ? "none" : s;
}

// Runs a write that might block in the kernel in a thread of its own:
// 0 or -errno, or -ETIME when it has not returned within the time (then the
// blocked tasks' stacks go to the kernel log and the case gives up).
int bounded_write(ktap::Case &t, const std::string &path, const std::string &value, double timeout_s)
{
	auto done = std::make_shared<std::atomic<int>>(1);
	std::thread([path, value, done] { *done = write_sysfs(path, value); }).detach();
	if (!wait_for([&] { return *done != 1; }, timeout_s, 2)) {
		write_sysfs("/proc/sysrq-trigger", "w");
		abandon(t, ("writing '" + value + "' to " + path + " has not returned after " +
			    std::to_string(int(timeout_s)) + " s (blocked tasks dumped to the kernel log)").c_str());
	}
	return *done;
}

// The module vm-run loaded (aic_module) and its parameters.
struct ModuleFile {
	std::string path, params;
};

ModuleFile module_file()
{
	ModuleFile m;
	if (const char *p = std::getenv("aic_module"); p && std::strcmp(p, "none"))
		m.path = p;
	if (const char *r = std::getenv("aic_run")) {
		std::string a = slurp(std::string(r) + "/module-args");
		while (!a.empty() && (a.back() == '\n' || a.back() == ' '))
			a.pop_back();
		m.params = a;
	}
	return m;
}

int rmmod_qaic()
{
	return ::syscall(SYS_delete_module, "qaic", O_NONBLOCK) ? -errno : 0;
}

int insmod(const ModuleFile &m)
{
	const int fd = ::open(m.path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	const int r = ::syscall(SYS_finit_module, fd, m.params.c_str(), 0) ? -errno : 0;
	::close(fd);
	return r;
}

// The MHI controller's soc_reset attribute of the card.
std::string soc_reset_attr(const std::string &pci)
{
	std::error_code ec;
	for (const auto &e : fs::directory_iterator(pci, ec)) {
		const std::string n = e.path().filename().string();
		if (n.rfind("mhi", 0) == 0 && fs::exists(e.path() / "soc_reset"))
			return (e.path() / "soc_reset").string();
	}
	return {};
}

// Two workloads streaming on the card, each in a process of its own. With
// --known-bug execute-unwind they EXECUTE_BO one BO at a time: the unbinds
// and resets release their DBCs under them, which upstream's error path
// does not survive when it has BOs of its own queued.
std::vector<std::unique_ptr<Worker>> start_workers(ktap::Case &t, const Fixture &f)
{
	std::vector<std::unique_ptr<Worker>> w;
	w.push_back(std::make_unique<Worker>(f.card, "vadd_f32", 4, f.p.execute_unwind_bug));
	w.push_back(std::make_unique<Worker>(f.card, "matmul_i8", 4, f.p.execute_unwind_bug));
	for (auto &x : w)
		if (!x->wait_streaming(60)) {
			t.expect(false, "%s did not start streaming: %s", x->name().c_str(), x->problem().c_str());
			return {};
		}
	return w;
}

// After the reload or reset: the workers end by themselves (told one of the
// documented errnos), with nothing computed wrong.
void reap_workers(ktap::Case &t, std::vector<std::unique_ptr<Worker>> &w, const std::string &what,
		  std::map<int, unsigned> &errnos, uint64_t &inferences, uint64_t &mismatches)
{
	for (auto &x : w) {
		const bool ended = x->reap(60);
		t.expect(ended, "%s: %s still running 60 s after the card came back", what.c_str(), x->name().c_str());
		if (ended)
			t.expect(x->exited_by_itself(), "%s: %s ended with status %#x", what.c_str(), x->name().c_str(),
				 x->status());
		inferences += x->inferences();
		mismatches += x->mismatches();
		t.expect(!x->mismatches(), "%s: %s computed %llu wrong outputs: %s", what.c_str(), x->name().c_str(),
			 static_cast<unsigned long long>(x->mismatches()), x->problem().c_str());
		errnos[x->error()]++;
		t.expect(reset_errno(x->error()), "%s: %s ended with %s (%s), want ENODEV, EPERM or EPIPE",
			 what.c_str(), x->name().c_str(), qaic::errno_name(-x->error()).c_str(), x->problem().c_str());
	}
}

// Every card bound to qaic and ONLINE, as users see it.
bool all_online(unsigned cards)
{
	unsigned n = 0;
	for (const auto &c : qaic::find_cards())
		n += c.driver == "qaic" && c.accel_minor && is_online_bdf(c.bdf);
	return n == cards;
}

// After a reload or reset: the card computes correctly and its pool is idle.
void expect_card_works(ktap::Case &t, unsigned card, const std::string &what, uint64_t &inferences)
{
	auto dev = open_card(t, card);
	if (!dev)
		return;
	if (run_workload(t, *dev, "vadd_f32", 30))
		inferences += 30;
	if (run_workload(t, *dev, "matmul_i8", 10))
		inferences += 10;
	const auto r = idle_resources(t, *dev);
	t.expect(r.has_value(), "%s: the pool is not idle", what.c_str());
}

// What the reload or reset cycles told, and how long the card took.
struct Cycles {
	std::map<int, unsigned> errnos;
	std::vector<double> online_ms;
	uint64_t inferences = 0, mismatches = 0;
	unsigned first = 0, second = 0; // by unbind and by kill; PCI and SoC resets
	Clock::time_point start = Clock::now();
};

// The cycles' figures, for the soak's summary.
void record_cycles(const Cycles &n, unsigned &total, unsigned &first, unsigned &second, double &mean_ms,
		   double &worst_ms, char (&errnos)[160])
{
	total = n.first + n.second;
	first = n.first;
	second = n.second;
	mean_ms = mean(n.online_ms);
	worst_ms = percentile(n.online_ms, 100);
	g_fig->cycle_inferences += n.inferences;
	g_fig->cycle_mismatches += n.mismatches;
	std::snprintf(errnos, sizeof(errnos), "%s", errno_counts(n.errnos).c_str());
}

// The users killed and reaped: their outputs were right until then.
void kill_and_reap(ktap::Case &t, std::vector<std::unique_ptr<Worker>> &w, const std::string &what, Cycles &n)
{
	for (auto &x : w)
		x->kill9();
	for (auto &x : w) {
		t.expect(x->reap(30), "%s: %s not gone 30 s after SIGKILL", what.c_str(), x->name().c_str());
		n.inferences += x->inferences();
		n.mismatches += x->mismatches();
		t.expect(!x->mismatches(), "%s: %s computed wrong outputs: %s", what.c_str(), x->name().c_str(),
			 x->problem().c_str());
	}
}

// The cards unbound from the driver under the users' feet (hot unplug:
// they get ENODEV or EPERM and close), then rmmod. With the known
// close-after-unbind bug the users go first, their nodes closed while the
// driver still has the card.
int unbind_and_rmmod(ktap::Case &t, const Fixture &f, std::vector<std::unique_ptr<Worker>> &w,
		     const std::string &what, Cycles &n)
{
	if (f.p.close_after_unbind_bug)
		kill_and_reap(t, w, what, n);
	for (const auto &c : qaic::find_cards())
		if (c.driver == "qaic") {
			const int r = bounded_write(t, "/sys/bus/pci/drivers/qaic/unbind", c.bdf, 60);
			t.expect(r == 0, "%s: unbind %s: %s", what.c_str(), c.bdf.c_str(), qaic::errno_name(-r).c_str());
		}
	if (!f.p.close_after_unbind_bug)
		reap_workers(t, w, what, n.errnos, n.inferences, n.mismatches);
	const int rm = rmmod_qaic();
	n.first++;
	return rm;
}

// The users killed, and rmmod as soon as their nodes are closed.
int kill_and_rmmod(ktap::Case &t, std::vector<std::unique_ptr<Worker>> &w, const std::string &what, Cycles &n)
{
	int rm = -EWOULDBLOCK;
	for (auto &x : w)
		x->kill9();
	wait_for([&] { return (rm = rmmod_qaic()) != -EWOULDBLOCK; }, 30, 2);
	kill_and_reap(t, w, what, n);
	n.second++;
	return rm;
}

// Reload `k`: rmmod refused while users stream (and they go on), then
// unbinding or killing them, in turn, rmmod and insmod: every card ONLINE
// again, and this one computes. False: the case cannot go on.
bool reload_once(ktap::Case &t, const Fixture &f, const ModuleFile &mod, unsigned cards, unsigned k, Cycles &n)
{
	const bool unbind = k % 2 == 0;
	const std::string what = "reload " + std::to_string(k + 1) + (unbind ? " (unbind)" : " (kill)");
	auto w = start_workers(t, f);
	if (w.empty())
		return false;
	// In use: refused at once, and the users go on.
	const int busy = rmmod_qaic();
	t.expect(busy == -EWOULDBLOCK, "%s: rmmod with users: %s, want EWOULDBLOCK", what.c_str(),
		 qaic::errno_name(-busy).c_str());
	const uint64_t before = w[0]->inferences();
	t.expect(wait_for([&] { return w[0]->inferences() > before; }, 30, 2), "%s: %s stopped after a refused rmmod",
		 what.c_str(), w[0]->name().c_str());
	const int rm = unbind ? unbind_and_rmmod(t, f, w, what, n) : kill_and_rmmod(t, w, what, n);
	t.expect(rm == 0, "%s: rmmod: %s (refcnt %s)", what.c_str(), qaic::errno_name(-rm).c_str(),
		 qaic::read_attr("/sys/module/qaic/refcnt").c_str());
	if (rm)
		return false;
	unsigned bound = 0;
	for (const auto &c : qaic::find_cards())
		bound += !c.driver.empty() || c.accel_minor.has_value();
	t.expect(bound == 0, "%s: %u cards still bound after rmmod", what.c_str(), bound);
	const auto t0 = Clock::now();
	const int ins = insmod(mod);
	t.expect(ins == 0, "%s: insmod %s %s: %s", what.c_str(), mod.path.c_str(), mod.params.c_str(),
		 qaic::errno_name(-ins).c_str());
	const bool back = ins == 0 && wait_for([&] { return all_online(cards); }, kOnlineTimeout, 20);
	n.online_ms.push_back(ms_since(t0));
	t.expect(back, "%s: not every card ONLINE %.0f s after insmod", what.c_str(), kOnlineTimeout);
	if (!back)
		return false;
	expect_card_works(t, f.card, what, n.inferences);
	t.note("progress: %s of %u at %.0f s: ONLINE %.0f ms after insmod; workloads told %s", what.c_str(),
	       f.o.reloads, ms_since(n.start) / 1000, n.online_ms.back(), errno_counts(n.errnos).c_str());
	std::fflush(stdout);
	return true;
}

// rmmod/insmod of qaic while workloads stream. Users pin the module, so
// a plain rmmod is refused (and leaves them computing); the reload then
// happens in one of two ways, alternately: the cards are unbound from
// the driver under the users' feet (hot unplug: they get ENODEV or
// EPERM and close), or the users are killed and rmmod goes as soon as
// their nodes are closed.
void reload_under_load(ktap::Case &t, const Fixture &f)
{
	const ModuleFile mod = module_file();
	if (mod.path.empty())
		return t.skip("no module path ($aic_module)");
	const unsigned cards = unsigned(qaic::find_cards().size());
	t.expect(all_online(cards), "not every card ONLINE at the start");
	Kmsg km;
	Cycles n;
	if (f.p.close_after_unbind_bug)
		t.note("known bug: the driver frees its device at unbind but cleans up locks in it at the last "
		       "close (upstream's use after free at a close() after unbind: docs/upstream-bugs.md, "
		       "patches/linux/0005-*, 0006-*; reproduced by qaic-close-after-unbind-tests in the "
		       "close-after-unbind configurations): the users end and close before each unbind");
	for (unsigned k = 0; k < f.o.reloads && !t.failed(); k++) {
		if (!reload_once(t, f, mod, cards, k, n))
			break;
		km.lines(); // keep up with the kernel's ring buffer
	}
	t.note("%u reloads (%u unbinding the cards %s, %u killing the users), ONLINE after insmod in "
	       "%.0f ms on average, %.0f at worst; %llu inferences checked, %llu wrong; the users were told %s",
	       n.first + n.second, n.first,
	       f.p.close_after_unbind_bug ? "once their users were killed (the known bug)" : "under load", n.second,
	       mean(n.online_ms), percentile(n.online_ms, 100), static_cast<unsigned long long>(n.inferences),
	       static_cast<unsigned long long>(n.mismatches), errno_counts(n.errnos).c_str());
	expect_log_clean(t, km, "reloads");
	if (g_fig)
		record_cycles(n, g_fig->reloads, g_fig->reloads_unbind, g_fig->reloads_kill, g_fig->reload_online_mean_ms,
			      g_fig->reload_online_worst_ms, g_fig->reload_errnos);
}

// After a reset, every DBC IDLE. Where the driver sets IDLE only on a
// DEACTIVATE answered and at the end of an SSR, a reset releases the
// DBCs without it (docs/upstream-7.3.md): their states are only reported.
void expect_dbcs_idle_after_reset(ktap::Case &t, const Fixture &f, const Sysfs &S, const std::string &what)
{
	std::string stale;
	for (uint32_t d = 0; d < 16; d++) {
		if (f.p.idle_only_after_deactivate && S.dbc_state(d) != 0)
			stale += " dbc" + std::to_string(d) + "_state=" + fmt(S.dbc_state(d));
		else
			t.expect(S.dbc_state(d) == 0, "%s: dbc%u_state %s", what.c_str(), d, fmt(S.dbc_state(d)).c_str());
	}
	if (!stale.empty())
		t.note("%s: upstream left%s after the reset", what.c_str(), stale.c_str());
}

// Reset `k` under load, a PCI reset or (every other one) a SoC reset:
// offline, online, the users told one of the documented errnos, every DBC
// IDLE, the card computes. False: the card did not come back.
bool reset_once(ktap::Case &t, const Fixture &f, Rig &r, const std::string &soc, unsigned k, Cycles &n)
{
	const Sysfs &S = *r.sysfs;
	const bool pci_reset = k % 2 == 0 || soc.empty();
	const std::string what = "reset " + std::to_string(k + 1) + (pci_reset ? " (PCI)" : " (SoC)");
	auto w = start_workers(t, f);
	if (w.empty())
		return false;
	const size_t mark = r.ue->mark();
	const auto t0 = Clock::now();
	const int res = bounded_write(t, pci_reset ? S.pci + "/reset" : soc, "1", 60);
	t.expect(res == 0, "%s: %s", what.c_str(), qaic::errno_name(-res).c_str());
	(pci_reset ? n.first : n.second)++;
	t.expect(wait_offline_online(*r.ue, S.bdf, mark), "%s: no offline, then online, uevent", what.c_str());
	const bool back = wait_for([&] { return is_online(f.card); }, kOnlineTimeout, 20);
	n.online_ms.push_back(ms_since(t0));
	t.expect(back, "%s: not ONLINE again", what.c_str());
	reap_workers(t, w, what, n.errnos, n.inferences, n.mismatches);
	if (!back)
		return false;
	expect_dbcs_idle_after_reset(t, f, S, what);
	expect_card_works(t, f.card, what, n.inferences);
	r.km->lines(); // keep up with the kernel's ring buffer
	t.note("progress: %s of %u at %.0f s: ONLINE again %.0f ms after the reset; workloads told %s", what.c_str(),
	       f.o.resets, ms_since(n.start) / 1000, n.online_ms.back(), errno_counts(n.errnos).c_str());
	std::fflush(stdout);
	return true;
}

// Resets of the card while workloads stream, alternately a PCI reset
// (sysfs reset: the driver's reset_prepare/reset_done) and a SoC reset
// through MHI (soc_reset: SYS_ERR and MHI's recovery).
void reset_under_load(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kSysfs | kUevents | kKmsg);
	if (!r.ready)
		return;
	const Sysfs &S = *r.sysfs;
	t.expect(r.ue->ok(), "no uevent socket");
	const std::string soc = soc_reset_attr(S.pci);
	t.expect(!soc.empty(), "no soc_reset attribute under %s", S.pci.c_str());
	Cycles n;
	for (unsigned k = 0; k < f.o.resets && !t.failed(); k++)
		if (!reset_once(t, f, r, soc, k, n))
			break;
	t.expect(!r.ue->overflowed(), "the uevent socket overflowed");
	t.note("%u resets (%u PCI, %u SoC), ONLINE again in %.0f ms on average, %.0f at worst; %llu inferences "
	       "checked, %llu wrong; the users were told %s",
	       n.first + n.second, n.first, n.second, mean(n.online_ms), percentile(n.online_ms, 100),
	       static_cast<unsigned long long>(n.inferences), static_cast<unsigned long long>(n.mismatches),
	       errno_counts(n.errnos).c_str());
	expect_log_clean(t, *r.km, "resets");
	if (g_fig)
		record_cycles(n, g_fig->resets, g_fig->resets_pci, g_fig->resets_soc, g_fig->reset_online_mean_ms,
			      g_fig->reset_online_worst_ms, g_fig->reset_errnos);
}

// ---- an SSR in the middle of a failing EXECUTE_BO ----------------------------------

// The test module that holds a thread in its EXECUTE_BO
// (tests/guest/kmod/qaic_exec_gate.c), loaded for the scope.
class ExecGate {
public:
	explicit ExecGate(const std::string &ko)
	{
		const int fd = ::open(ko.c_str(), O_RDONLY | O_CLOEXEC);
		if (fd < 0 || ::syscall(SYS_finit_module, fd, "", 0))
			problem_ = "loading " + ko + ": " + std::strerror(errno);
		if (fd >= 0)
			::close(fd);
	}
	~ExecGate()
	{
		if (problem_.empty())
			::syscall(SYS_delete_module, "qaic_exec_gate", O_NONBLOCK);
	}
	ExecGate(const ExecGate &) = delete;
	ExecGate &operator=(const ExecGate &) = delete;

	const std::string &problem() const { return problem_; }
	int64_t get(const char *param) const { return read_num(kDir + param).value_or(-1); }
	bool set(const char *param, int64_t v) const { return write_sysfs(kDir + param, std::to_string(v)) == 0; }

private:
	static inline const std::string kDir = "/sys/module/qaic_exec_gate/parameters/";
	std::string problem_;
};

// What an EXECUTE_BO of a queued BO and a refused one did while the card
// released its DBC (an SSR's BEFORE_SHUTDOWN) in between.
struct UnwindRun {
	int exec = 1;            // the EXECUTE_BO
	int waited = 1;          // a WAIT_BO on the first BO, started while it was held
	bool waiter_slept = false; // the driver showed that BO queued before the release
	bool on_cue = false;     // the SSR got that far before the EXECUTE_BO went on
	int64_t held = 0, timed_out = 0, unlinked = -1; // the gate's counters
};

// Steps of execute_across_ssr(): whether the gate holds the EXECUTE_BO
// (`exec` still unanswered); whether the waiter sleeps (the driver shows
// its BO queued).
bool gate_holds(const ExecGate &g, const std::atomic<int> &exec)
{
	return wait_for([&] { return g.get("holding") == 1 || exec != 1; }, 10, 1) && exec == 1;
}

bool waiter_asleep(const std::atomic<pid_t> &tid, const std::atomic<int> &waited)
{
	wait_for([&] { return waited != 1 || (tid && asleep_in_ioctl(tid)); }, 10, 1);
	return waited == 1;
}

// EXECUTE_BO of m's input and of a BO never attached (refused with EINVAL),
// the gate holding it after the input was queued; meanwhile the card
// crashes m's workload and its SSR releases the DBC, the card holding the
// recovery before power-up (crash hold=1) so that the DBC stays in SSR
// until the EXECUTE_BO has returned. The EXECUTE_BO goes on once the
// release took the input off the DBC's queue (its waiter woke), or, with a
// driver that does not show it queued yet, once the DBC is in SSR.
UnwindRun execute_across_ssr(ktap::Case &t, const qaic::Device &dev, const Sysfs &S, Manual &m,
			     qaic::Mailbox &mb, const ExecGate &g)
{
	UnwindRun u;
	const uint32_t dbc = m.dbc();
	auto refused = qaic::Bo::create(dev, 4096);
	if (!refused || m.attach() != 0) {
		t.expect(false, "CREATE_BO or ATTACH");
		return u;
	}
	const qaic_execute_entry ents[2] = {{m.in->handle(), qaic::kToDevice}, {refused->handle(), qaic::kFromDevice}};
	std::atomic<int> exec{1}, waited{1};
	std::atomic<pid_t> wtid{0};
	g.set("release", 0);
	std::thread submitter([&] {
		g.set("tid", ::syscall(SYS_gettid));
		exec = qaic::execute(dev, dbc, ents);
		g.set("tid", 0);
	});
	const bool holding = gate_holds(g, exec);
	t.expect(holding, "the gate did not hold the EXECUTE_BO (it returned %s)", qaic::errno_name(-exec).c_str());
	std::thread waiter([&] {
		wtid = pid_t(::syscall(SYS_gettid));
		waited = qaic::wait(dev, dbc, m.in->handle(), 30000);
	});
	u.waiter_slept = holding && waiter_asleep(wtid, waited);
	const std::string r = mb.run("crash dbc=" + std::to_string(dbc) + " hold=1 reason=" + reason_for("unwind"));
	t.expect(r.empty(), "crash dbc=%u: %s", dbc, r.c_str());
	if (u.waiter_slept)
		u.on_cue = wait_for([&] { return waited != 1; }, kSsrTimeout, 1);
	else
		u.on_cue = wait_for([&] { return S.dbc_state(dbc).value_or(0) >= 2; }, kSsrTimeout, 1);
	g.set("release", 1);
	submitter.join();
	waiter.join();
	const std::string rel = mb.run("ssr release");
	t.expect(rel.empty(), "ssr release: %s", rel.c_str());
	u.exec = exec;
	u.waited = waited;
	u.held = g.get("held");
	u.timed_out = g.get("timed_out");
	u.unlinked = g.get("unlinked");
	return u;
}

// The kernel log, but for the WARNINGs of a refcount underflow (the known
// bug's, when its unlucky word is not positive): alarming lines outside
// them, and how many such WARNINGs there were.
unsigned alarming_but_refcount_warnings(Kmsg &k, unsigned &warnings, ktap::Case &t)
{
	unsigned bad = 0;
	bool in_warning = false;
	for (const auto &line : k.lines()) {
		const std::string &l = line.text;
		if (l.find("refcount_t: underflow") != std::string::npos) {
			in_warning = true;
			warnings++;
		}
		if (!in_warning && alarming(l) && bad++ < 10)
			t.note("kernel: %s", l.c_str());
		if (l.find("---[ end trace") != std::string::npos)
			in_warning = false;
	}
	return bad;
}

// The EXECUTE_BO's answer. A driver that showed its first BO queued was
// past its checks of the DBC, and the second BO is refused: EINVAL. One that
// looks its BOs up before it takes the DBC (ours) was held before those
// checks, and finds the DBC under SSR: EPIPE, or EPERM where the release
// is the first thing it sees (upstream's order).
void expect_unwind_errno(ktap::Case &t, const UnwindRun &u)
{
	if (u.waiter_slept)
		return t.expect(u.exec == -EINVAL, "EXECUTE_BO with a BO never attached, its first BO queued: %s, "
				"want EINVAL", qaic::errno_name(-u.exec).c_str());
	t.expect(u.exec == -EINVAL || u.exec == -EPIPE || u.exec == -EPERM, "EXECUTE_BO with a BO never attached, "
		 "across an SSR: %s, want EINVAL, EPIPE or EPERM", qaic::errno_name(-u.exec).c_str());
}

// The outcome, as the driver should have it or, with --known-bug
// execute-unwind, as upstream's has it.
void expect_unwind_outcome(ktap::Case &t, const Profile &p, const UnwindRun &u, Kmsg &km)
{
	unsigned warnings = 0;
	const unsigned bad = alarming_but_refcount_warnings(km, warnings, t);
	t.expect(bad == 0, "%u alarming kernel messages besides refcount underflows", bad);
	t.note("EXECUTE_BO %s; the waiter on its first BO %s (%s); entries on no list that its error path took off "
	       "a list: %lld; refcount underflow WARNINGs: %u", qaic::errno_name(-u.exec).c_str(),
	       u.waiter_slept ? "slept until the SSR released the DBC" : "returned at once",
	       qaic::errno_name(-u.waited).c_str(), static_cast<long long>(u.unlinked), warnings);
	if (!p.execute_unwind_bug) {
		// The gate's count cannot tell upstream's removal of the DBC's
		// list head from a list_del_init() of an entry that is already off
		// its list, which is legal (it counted one such, now and then, in
		// our driver's runs; the kernel log names the caller). The bug
		// itself drops a reference through what it took: a refcount
		// underflow, or DEBUG_LIST's report, both alarming above.
		t.expect(warnings == 0, "EXECUTE_BO's error path took the DBC's emptied transfer list for a BO and "
			 "dropped a reference through it (upstream's bug, docs/upstream-bugs.md: \"An SSR during a "
			 "failing EXECUTE_BO\"; patches/linux/0008-*)");
		return;
	}
	t.note("known bug: upstream's EXECUTE_BO error path takes back what the SSR already took off the DBC's "
	       "queue (docs/upstream-bugs.md, \"An SSR during a failing EXECUTE_BO\"; patches/linux/0008-*)");
	t.expect(u.waiter_slept && u.unlinked > 0, "the known bug did not show (the waiter %s, %lld entries on no "
		 "list taken off): fixed upstream? Then drop --known-bug execute-unwind",
		 u.waiter_slept ? "slept" : "did not sleep", static_cast<long long>(u.unlinked));
}

// The driver loaded again (from vm-run's module file): after the known
// bug, the instance's memory next to the DBCs has been written through.
void reload_driver(ktap::Case &t, unsigned card)
{
	const ModuleFile mf = module_file();
	if (mf.path.empty())
		return t.expect(false, "no module file to load again (aic_module)");
	int rm = -EWOULDBLOCK;
	wait_for([&] { return (rm = rmmod_qaic()) != -EWOULDBLOCK; }, 30, 100);
	t.expect(rm == 0, "rmmod qaic: %s", qaic::errno_name(-rm).c_str());
	const int r = insmod(mf);
	t.expect(r == 0, "insmod %s: %s", mf.path.c_str(), qaic::errno_name(-r).c_str());
	t.expect(wait_for([&] { return is_online(card); }, kOnlineTimeout, 100), "card %u not ONLINE after the reload",
		 card);
}

// Activations until one gets a DBC numbered 2 or above: upstream's bug
// writes 0x1c8 bytes before the DBC's transfer list, which for DBC 0 and 1
// is outside the DBC array; from 2 on it is a DBC kept idle here. Empty
// when the last one failed (its problem reported).
std::vector<std::unique_ptr<Manual>> activate_from_dbc2(ktap::Case &t, const qaic::Device &dev)
{
	std::vector<std::unique_ptr<Manual>> ms;
	while (ms.size() < 4 && (ms.empty() || ms.back()->dbc() < 2)) {
		ms.push_back(std::make_unique<Manual>(dev, *wl::find("vadd_f32")));
		if (!ms.back()->problem.empty()) {
			t.expect(false, "%s", ms.back()->problem.c_str());
			return {};
		}
	}
	t.expect(ms.back()->dbc() >= 2, "no DBC above 1 in %zu activations", ms.size());
	return ms;
}

// ssr_execute_unwind but for the reload after the known bug.
void execute_unwind(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kAll | kNoDumps);
	if (!r.ready)
		return;
	const Sysfs &S = *r.sysfs;
	ExecGate gate(f.o.exec_gate);
	if (!gate.problem().empty())
		return t.expect(false, "%s", gate.problem().c_str());
	auto ms = activate_from_dbc2(t, *r.dev);
	if (ms.empty() || ms.back()->dbc() < 2)
		return;
	Manual &m = *ms.back();
	const size_t mark = r.ue->mark();
	guest_util::kmsg("execute-unwind reproducer armed");
	const UnwindRun u = execute_across_ssr(t, *r.dev, S, m, *r.mb, gate);
	t.expect(wait_dbc_idle(*r.ue, S.bdf, m.dbc(), mark), "DBC %u not free again", m.dbc());
	guest_util::kmsg("execute-unwind reproducer done");
	t.expect(u.held == 1 && u.timed_out == 0, "the gate held %lld EXECUTE_BOs, %lld until its timeout; want one, "
		 "released by the test", static_cast<long long>(u.held), static_cast<long long>(u.timed_out));
	t.expect(u.on_cue, "the SSR %s", u.waiter_slept ? "did not wake the waiter on the queued BO"
						 : "never showed BEFORE_SHUTDOWN");
	expect_unwind_errno(t, u);
	expect_unwind_outcome(t, f.p, u, *r.km);
	free_all_devcd(S.bdf);
	if (!f.p.execute_unwind_bug)
		expect_computes_again(t, *r.dev, S, m, 5);
}

// The card crashes a workload while its owner's EXECUTE_BO of two BOs
// has queued the first and not yet refused the second (it was never
// attached): the release of the DBC at BEFORE_SHUTDOWN must not leave
// the EXECUTE_BO's error path anything but its own BOs to take back.
// A test module holds the EXECUTE_BO between the two BOs until the
// release has begun (docs/upstream-bugs.md: upstream's error path then
// took the list head for a BO).
void ssr_execute_unwind(ktap::Case &t, const Fixture &f)
{
	if (f.o.exec_gate.empty())
		return t.skip("no --exec-gate (tests/guest/kmod/qaic_exec_gate.ko)");
	execute_unwind(t, f); // every node it opened closed on return
	if (f.p.execute_unwind_bug)
		reload_driver(t, f.card);
}

// ---- the soak: a baseline, the loops above with large counts, then nothing leaked ----

// How far the guest's memory may end from where it started. Measured here
// with the per-CPU free lists counted back: MemAvailable within 0.3 MiB
// (once 8 MiB higher), unreclaimable slab 0.3..0.8 MiB higher (task_struct,
// vmap_area: the caches' own churn), whether after 40 reloads, 40 resets or
// 300 SSRs; a leak of one BO page per cycle would show as 4 KiB a cycle.
constexpr int64_t kMemAvailableSlackKb = 8 * 1024;      // MemAvailable (+ per-CPU free) may end this much lower
constexpr int64_t kUnreclaimableSlabSlackKb = 2 * 1024; // SUnreclaim may end this much higher

struct MemFigures {
	std::optional<int64_t> available, slab, sunreclaim;
	int64_t pcp = 0; // free pages in the per-CPU lists, kB
	// MemAvailable leaves out the free pages the per-CPU lists hold (up to
	// ~28 MiB a CPU here, and they come and go): counted back in.
	std::optional<int64_t> usable() const { return available ? std::optional(*available + pcp) : std::nullopt; }
};

// Free pages held in the per-CPU lists (/proc/zoneinfo, "pagesets"), in kB.
int64_t pcp_free_kb()
{
	std::ifstream f("/proc/zoneinfo");
	int64_t pages = 0;
	for (std::string w; f >> w;)
		if (w == "count:") {
			int64_t n = 0;
			f >> n;
			pages += n;
		}
	return pages * (::sysconf(_SC_PAGESIZE) / 1024);
}

// After dropping the page cache, dentries and inodes: what is left is what
// the kernel holds on to.
MemFigures settled_memory()
{
	::sync();
	write_sysfs("/proc/sys/vm/drop_caches", "3");
	MemFigures m{meminfo_kb("MemAvailable"), meminfo_kb("Slab"), meminfo_kb("SUnreclaim")};
	m.pcp = pcp_free_kb();
	return m;
}

// The /proc/meminfo fields (kB) that moved by at least `min_kb` from `before`.
std::string meminfo_moves(const std::string &before, const std::string &after, int64_t min_kb)
{
	auto parse = [](const std::string &text) {
		std::map<std::string, int64_t> m;
		std::istringstream in(text);
		for (std::string k; in >> k;) {
			int64_t v = 0;
			in >> v;
			in.ignore(64, '\n');
			if (!k.empty() && k.back() == ':')
				m[k.substr(0, k.size() - 1)] = v;
		}
		return m;
	};
	const auto a = parse(before), b = parse(after);
	std::string out;
	for (const auto &[k, v] : b)
		if (a.count(k) && std::abs(v - a.at(k)) >= min_kb)
			out += (out.empty() ? "" : ", ") + k + " " + (v >= a.at(k) ? "+" : "") + std::to_string(v - a.at(k));
	return out.empty() ? "none" : out;
}

// The slab caches whose memory (slabs x pages per slab) grew by at least
// `min_kb` from `before` (/proc/slabinfo), largest first.
std::string slab_growth(const std::string &before, const std::string &after, int64_t min_kb)
{
	auto parse = [](const std::string &text) {
		std::map<std::string, int64_t> m;
		std::istringstream in(text);
		for (std::string line; std::getline(in, line);) {
			if (line.empty() || line[0] == '#' || line.rfind("slabinfo", 0) == 0)
				continue;
			// name active_objs num_objs objsize objperslab pagesperslab : tunables ... : slabdata active num shared
			std::istringstream l(line);
			std::string name, w;
			int64_t pages_per_slab = 0, slabs = 0;
			l >> name >> w >> w >> w >> w >> pages_per_slab;
			const size_t sd = line.find("slabdata");
			if (sd != std::string::npos) {
				std::istringstream d(line.substr(sd + 8));
				d >> w >> slabs;
			}
			m[name] += pages_per_slab * slabs * (::sysconf(_SC_PAGESIZE) / 1024);
		}
		return m;
	};
	const auto a = parse(before), b = parse(after);
	std::vector<std::pair<int64_t, std::string>> grew;
	for (const auto &[k, v] : b) {
		const int64_t d = v - (a.count(k) ? a.at(k) : 0);
		if (d >= min_kb)
			grew.emplace_back(d, k);
	}
	std::sort(grew.rbegin(), grew.rend());
	std::string out;
	for (const auto &[d, k] : grew)
		out += (out.empty() ? "" : ", ") + k + " +" + std::to_string(d);
	return out.empty() ? "none" : out;
}

unsigned long taint()
{
	return std::strtoul(qaic::read_attr("/proc/sys/kernel/tainted").c_str(), nullptr, 0);
}

// The figures the soak ends with: the card's resources and STATUS, the
// guest's memory and taint.
void soak_baseline(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kMailbox | kDevice);
	if (!r.ready)
		return;
	t.expect(count_devcd() == 0, "%u devcoredumps before the soak", count_devcd());
	// Warm-up: the first inferences allocate what stays allocated
	// (slab caches, IOMMU page tables, the workloads' ELFs on the host).
	run_workload(t, *r.dev, "vadd_f32", 50);
	run_workload(t, *r.dev, "matmul_i8", 20);
	const auto res = idle_resources(t, *r.dev);
	qaic::Nnc nnc(*r.dev);
	const auto st = nnc.status();
	t.expect(st.ok(), "STATUS: %s", st.describe().c_str());
	const MemFigures m = settled_memory();
	t.expect(m.available && m.slab && m.sunreclaim, "/proc/meminfo unreadable");
	if (!res || !st.ok() || !m.available || !m.slab || !m.sunreclaim)
		return;
	g_fig->have_base = true;
	g_fig->res0 = *res;
	g_fig->nws_loaded0 = st.resp.dev.num_loaded_nws;
	g_fig->nws_active0 = st.resp.dev.num_active_nws;
	g_fig->consts_loaded0 = st.resp.dev.num_loaded_consts;
	g_fig->consts_in_use0 = st.resp.dev.num_consts_in_use;
	g_fig->mem_available0_kb = *m.available;
	g_fig->pcp0_kb = m.pcp;
	g_fig->slab0_kb = *m.slab;
	g_fig->sunreclaim0_kb = *m.sunreclaim;
	g_fig->taint0 = taint();
	std::snprintf(g_fig->meminfo0, sizeof(g_fig->meminfo0), "%s", slurp("/proc/meminfo").c_str());
	std::snprintf(g_fig->slabinfo0, sizeof(g_fig->slabinfo0), "%s", slurp("/proc/slabinfo").c_str());
	t.note("before: %s; STATUS: %u ELFs loaded, %u active, %u constants loaded, %u in use", describe(*res).c_str(),
	       g_fig->nws_loaded0, g_fig->nws_active0, g_fig->consts_loaded0, g_fig->consts_in_use0);
	t.note("before: MemAvailable %" PRId64 " kB (and %" PRId64 " kB free in per-CPU lists), Slab %" PRId64
	       " kB (unreclaimable %" PRId64 " kB), tainted %#lx",
	       *m.available, m.pcp, *m.slab, *m.sunreclaim, g_fig->taint0);
}

// The card after the soak: every resource back, nothing loaded, every DBC
// IDLE, no NSP active, no dump left.
struct CardAfter {
	std::optional<cmd::ResourceInfo> now;
	uint32_t nws = 0, active = 0, consts = 0, in_use = 0;
	unsigned dumps = 0;
};

CardAfter expect_card_as_before(ktap::Case &t, const SoakFigures &f, const Sysfs &S, const qaic::Device &dev)
{
	CardAfter a;
	a.now = resources_back_to(dev, f.res0);
	t.expect(a.now && same_free(f.res0, *a.now) && all_free(*a.now), "resources after the soak: %s; before: %s",
		 a.now ? describe(*a.now).c_str() : "RESOURCE_INFO failed", describe(f.res0).c_str());
	qaic::Nnc nnc(dev);
	const auto st = nnc.status();
	t.expect(st.ok(), "STATUS: %s", st.describe().c_str());
	a.nws = st.resp.dev.num_loaded_nws;
	a.active = st.resp.dev.num_active_nws;
	a.consts = st.resp.dev.num_loaded_consts;
	a.in_use = st.resp.dev.num_consts_in_use;
	t.expect(st.ok() && a.nws == f.nws_loaded0 && a.active == f.nws_active0 && a.consts == f.consts_loaded0 &&
			 a.in_use == f.consts_in_use0,
		 "STATUS after the soak: %u ELFs loaded, %u active, %u constants loaded, %u in use", a.nws, a.active,
		 a.consts, a.in_use);
	for (uint32_t d = 0; d < 16; d++)
		t.expect(S.dbc_state(d) == 0, "dbc%u_state %s", d, fmt(S.dbc_state(d)).c_str());
	t.expect(S.tele("nsp_active") == 0, "nsp_active %s", fmt(S.tele("nsp_active")).c_str());
	a.dumps = count_devcd();
	t.expect(a.dumps == 0, "%u devcoredumps left", a.dumps);
	return a;
}

// The guest after the soak: memory back within the slack, no new taint (a
// WARN, an oops, a bad page...), nothing alarming in what the log holds.
struct GuestAfter {
	MemFigures m;
	unsigned long tainted;
};

GuestAfter expect_guest_as_before(ktap::Case &t, const SoakFigures &f)
{
	const MemFigures m = settled_memory();
	const int64_t avail_delta = m.usable().value_or(0) - (f.mem_available0_kb + f.pcp0_kb);
	const int64_t unrec_delta = m.sunreclaim.value_or(0) - f.sunreclaim0_kb;
	t.expect(m.available && avail_delta >= -kMemAvailableSlackKb,
		 "MemAvailable + per-CPU free %s kB after the soak, %" PRId64 " kB before: down more than %" PRId64
		 " kB", fmt(m.usable()).c_str(), f.mem_available0_kb + f.pcp0_kb, kMemAvailableSlackKb);
	t.expect(m.sunreclaim && unrec_delta <= kUnreclaimableSlabSlackKb,
		 "unreclaimable slab %s kB after the soak, %" PRId64 " kB before: up more than %" PRId64 " kB",
		 fmt(m.sunreclaim).c_str(), f.sunreclaim0_kb, kUnreclaimableSlabSlackKb);
	const unsigned long tainted = taint();
	t.expect(tainted == f.taint0, "kernel tainted %#lx, %#lx before the soak", tainted, f.taint0);
	FILE *p = popen("dmesg", "r");
	char line[1024];
	unsigned bad = 0;
	while (p && fgets(line, sizeof(line), p))
		if (alarming(line) && bad++ < 10)
			t.note("kernel: %s", line);
	if (p)
		pclose(p);
	t.expect(bad == 0, "%u alarming lines in the kernel log", bad);
	return {m, tainted};
}

void note_soak_summary(ktap::Case &t, const SoakFigures &f, const CardAfter &a, const GuestAfter &g)
{
	const MemFigures &m = g.m;
	const int64_t avail_delta = m.usable().value_or(0) - (f.mem_available0_kb + f.pcp0_kb);
	const int64_t slab_delta = m.slab.value_or(0) - f.slab0_kb;
	const int64_t unrec_delta = m.sunreclaim.value_or(0) - f.sunreclaim0_kb;
	t.note("SOAK SUMMARY");
	t.note("  SSR recoveries: %u of %u crashes; crash to DBC idle mean %.1f ms, p99 %.1f ms, worst %.1f ms",
	       f.recoveries, f.crashes, f.idle_mean_ms, f.idle_p99_ms, f.idle_worst_ms);
	t.note("  crash to the crashed workload's first correct inference: mean %.1f ms, p99 %.1f ms, worst %.1f ms",
	       f.back_mean_ms, f.back_p99_ms, f.back_worst_ms);
	t.note("  inferences checked: %llu during the crashes, %llu around reloads and resets; mismatches %llu",
	       static_cast<unsigned long long>(f.ssr_inferences), static_cast<unsigned long long>(f.cycle_inferences),
	       static_cast<unsigned long long>(f.ssr_mismatches + f.cycle_mismatches));
	t.note("  module reloads: %u (%u unbinding under load, %u killing the users); ONLINE after insmod mean "
	       "%.0f ms, worst %.0f; users told %s",
	       f.reloads, f.reloads_unbind, f.reloads_kill, f.reload_online_mean_ms, f.reload_online_worst_ms,
	       f.reload_errnos[0] ? f.reload_errnos : "none");
	t.note("  resets: %u (%u PCI, %u SoC); ONLINE again mean %.0f ms, worst %.0f; users told %s", f.resets,
	       f.resets_pci, f.resets_soc, f.reset_online_mean_ms, f.reset_online_worst_ms,
	       f.reset_errnos[0] ? f.reset_errnos : "none");
	t.note("  resources before: %s", describe(f.res0).c_str());
	t.note("  resources after:  %s", a.now ? describe(*a.now).c_str() : "(unreadable)");
	t.note("  STATUS after: %u ELFs loaded, %u active, %u constants loaded, %u in use", a.nws, a.active, a.consts,
	       a.in_use);
	t.note("  MemAvailable before %" PRId64 " kB, after %s kB; with the per-CPU free lists (%" PRId64 " -> %" PRId64
	       " kB): %+" PRId64 " kB (slack -%" PRId64 " kB)",
	       f.mem_available0_kb, fmt(m.available).c_str(), f.pcp0_kb, m.pcp, avail_delta, kMemAvailableSlackKb);
	t.note("  Slab before %" PRId64 " kB, after %s kB (%+" PRId64 " kB); unreclaimable %" PRId64 " -> %s kB "
	       "(%+" PRId64 " kB; slack +%" PRId64 " kB)",
	       f.slab0_kb, fmt(m.slab).c_str(), slab_delta, f.sunreclaim0_kb, fmt(m.sunreclaim).c_str(), unrec_delta,
	       kUnreclaimableSlabSlackKb);
	t.note("  meminfo fields that moved by 1 MiB or more (kB): %s",
	       meminfo_moves(f.meminfo0, slurp("/proc/meminfo"), 1024).c_str());
	t.note("  slab caches that grew by 64 KiB or more (kB): %s",
	       slab_growth(f.slabinfo0, slurp("/proc/slabinfo"), 64).c_str());
	t.note("  devcoredumps left: %u; kernel tainted %#lx (before %#lx)", a.dumps, g.tainted, f.taint0);
}

// After the soak's loops: the card and the guest as they were at the
// baseline; then the soak's figures.
void soak_no_leaks(ktap::Case &t, const Fixture &f)
{
	const SoakFigures &fig = *g_fig;
	if (!fig.have_base)
		return t.expect(false, "no baseline (soak_baseline failed)");
	Rig r(t, f.card, kSysfs | kDevice);
	if (!r.ready)
		return;
	const CardAfter a = expect_card_as_before(t, fig, *r.sysfs, *r.dev);
	r.dev.reset();
	const GuestAfter g = expect_guest_as_before(t, fig);
	note_soak_summary(t, fig, a, g);
}

// ---- upstream 6.12 ----------------------------------------------------------------

// The crashed user of upstream_crash_recovered_by_card (a child process):
// vadd_f32 runs, its DBC goes to the parent; once told, it runs again (the
// parent crashed the DBC meanwhile) and sends the errno; once told again,
// it ends, deactivating as an application does.
[[noreturn]] void crashed_user(unsigned card, int to_parent, int from_parent)
{
	ktap::Case c;
	auto d = open_card(c, card);
	int32_t msg[2] = {-1, 0};
	if (!d) {
		[[maybe_unused]] ssize_t w = write(to_parent, msg, 4);
		_exit(1);
	}
	{
		qaic::Pipeline p(*d, *wl::find("vadd_f32"), 4);
		const std::string why = p.setup();
		const qaic::RunResult before = why.empty() ? p.run(50) : qaic::RunResult{};
		if (why.empty() && before.problem.empty() && !before.mismatches) {
			msg[0] = int32_t(p.dbc());
			[[maybe_unused]] ssize_t w = write(to_parent, msg, 4);
			char go;
			if (read(from_parent, &go, 1) == 1) {
				p.set_wait_timeout(2000);
				msg[1] = p.run(4).error;
				w = write(to_parent, msg + 1, 4);
			}
			// Wait for the parent to look at the held resources.
			if (read(from_parent, &go, 1) != 1)
				_exit(1);
		} else {
			std::printf("    # child: %s %s\n", why.c_str(), before.problem.c_str());
		}
	} // ~Pipeline: DEACTIVATE and unload, as an application does
	std::fflush(stdout);
	_exit(0);
}

// After the crashed user deactivated and closed: the card's pool as before,
// STATUS answered, and its DBC given out again (had upstream still held
// it, this ACTIVATE would hang).
void expect_released_and_computes(ktap::Case &t, const qaic::Device &dev, const cmd::ResourceInfo &base)
{
	const auto now = resources_back_to(dev, base);
	t.expect(now && same_free(base, *now), "after the crashed user deactivated and closed: %s",
		 now ? describe(*now).c_str() : "RESOURCE_INFO failed");
	qaic::Nnc nnc(dev);
	auto status = nnc.status();
	t.expect(status.ok(), "STATUS after the crash: %s", status.describe().c_str());
	expect_computes(t, dev);
}

// No QAIC_SSR client: the card frees the crashed DBC by itself; the host
// sees only its requests time out. The crashed user then goes away
// without a DEACTIVATE, and its close releases the DBC on the host.
// (A DEACTIVATE would leave upstream's DBC disabled for good: the card
// answers "not found" with no DEACTIVATE_FROM_DEV, so upstream neither
// releases nor re-enables it, and the next ACTIVATE given that DBC
// waits for it forever.)
void upstream_crash_recovered_by_card(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kMailbox | kDevice | kKmsg);
	if (!r.ready)
		return;
	const auto base = idle_resources(t, *r.dev);
	if (!base)
		return;
	int to_parent[2], to_child[2];
	if (pipe(to_parent) || pipe(to_child))
		return t.expect(false, "pipe");
	std::fflush(stdout);
	const pid_t pid = fork();
	if (pid == 0) {
		close(to_parent[0]);
		close(to_child[1]);
		crashed_user(f.card, to_parent[1], to_child[0]);
	}
	close(to_parent[1]);
	close(to_child[0]);
	int32_t dbc = -1, err = 0;
	if (read(to_parent[0], &dbc, 4) != 4 || dbc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		return t.expect(false, "the child could not run vadd_f32");
	}
	const std::string res = r.mb->run("crash dbc=" + std::to_string(dbc) + " reason=" + reason_for("upstream"));
	t.expect(res.empty(), "crash dbc=%d: %s", dbc, res.c_str());
	[[maybe_unused]] ssize_t w = write(to_child[1], "g", 1);
	const bool told = read(to_parent[0], &err, 4) == 4;
	t.expect(told && err == -ETIMEDOUT, "the crashed user's next run: %s, want ETIMEDOUT",
		 told ? qaic::errno_name(-err).c_str() : "no answer");
	// Upstream still counts the DBC as its user's: the card holds the
	// crashed activation's DBC and NSPs until the owner deactivates it.
	const auto held = resources(*r.dev);
	t.expect(held && held->vc_free + 1 == base->vc_free && held->nsp_free < base->nsp_free,
		 "the crashed activation's DBC and NSPs should stay held: %s",
		 held ? describe(*held).c_str() : "RESOURCE_INFO failed");
	// The owner's DEACTIVATE (~Pipeline) is answered as usual, so
	// upstream releases the DBC.
	w = write(to_child[1], "g", 1);
	int st = 0;
	waitpid(pid, &st, 0);
	close(to_parent[0]);
	close(to_child[1]);
	t.expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the crashed user did not exit cleanly");
	t.note("crashed DBC %d: held until its owner deactivated it; its user saw %s", dbc,
	       told ? qaic::errno_name(-err).c_str() : "nothing");
	expect_released_and_computes(t, *r.dev, *base);
	expect_log_clean(t, *r.km, "crash");
}

// RAS and sensor injections of every kind but a UE leave upstream alone: no
// reset, no error in the kernel log, the workload runs throughout.
void upstream_ras_sensor_injections_ignored(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kCard | kMailbox | kDevice | kUevents | kKmsg);
	if (!r.ready)
		return;
	const size_t mark = r.ue->mark();
	qaic::Pipeline p(*r.dev, *wl::find("vadd_f32"), 4);
	if (const auto why = p.setup(); !why.empty())
		return t.expect(false, "vadd_f32: %s", why.c_str());
	const char *groups[][4] = {
		{"ras ce source=ddr addr=0x1000", "ras ce source=pcie", "ras ce source=soc_mem addr=0x10",
		 "ras ce source=nsp_mem nsp=2"},
		{"ras ce source=sys_bus1", "ras ce source=sys_bus2", "ras ue_nf source=pcie", "ras ue_nf source=ddr"},
		{"sensor soc_temp=70000 board_power=30000000", "sensor soc_temp=96000", "sensor soc_temp=111000",
		 "sensor soc_temp=auto board_power=auto"},
		{"ras ue_nf source=nsp_mem nsp=1", "ras ce source=tsens temp=96000 threshold=upper",
		 "sensor ddr_temp=90000", "sensor ddr_temp=auto"},
	};
	unsigned n = 0;
	for (const auto &g : groups) {
		for (const char *c : g) {
			const std::string res = r.mb->run(c);
			t.expect(res.empty(), "%s: %s", c, res.c_str());
			n++;
		}
		expect_run(t, "vadd_f32 between injections", p.run(50), 50);
	}
	t.expect(is_online(f.card), "not ONLINE after the injections");
	const auto &ev = r.ue->events();
	bool reset = false;
	for (size_t i = mark; i < ev.size(); i++)
		reset |= of_card(ev[i], r.card->bdf) && (ev[i].action == "remove" || ev[i].action == "offline");
	t.expect(!reset, "the card was reset by CE/UE_NF/sensor injections");
	for (const auto &l : r.km->lines())
		if (l.level <= 3)
			t.expect(false, "kernel error: %s", l.text.c_str());
	expect_log_clean(t, *r.km, "injections");
	t.note("%u injections; the workload ran throughout", n);
}

// Whether card `card` is back: a fresh open answers STATUS (the uevents
// and the node can run ahead of upstream's own view of a reset: MHI's
// remove comes before the driver marks the card offline). `last`: what
// STATUS last said.
bool answers_status(unsigned card, std::string &last)
{
	const auto c = card_info(card);
	auto dev = c && c->accel_minor ? qaic::Device::open(*c->accel_minor) : std::nullopt;
	if (!dev)
		return false;
	qaic::Nnc nnc(*dev);
	auto st = nnc.status();
	last = st.describe();
	return st.ok();
}

// No QAIC_STATUS client: a UE takes the card to SYS_ERR and upstream's
// MHI handling brings it back.
void upstream_ue_syserr_recovery(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kCard | kMailbox | kUevents | kKmsg);
	if (!r.ready)
		return;
	const std::string &bdf = r.card->bdf;
	t.expect(r.ue->ok(), "no uevent socket");
	t.expect(is_online(f.card), "not ONLINE before the UE");
	const size_t mark = r.ue->mark();
	const auto t0 = Clock::now();
	const std::string res = r.mb->run("ras ue source=ddr addr=0x8000");
	t.expect(res.empty(), "ras ue: %s", res.c_str());
	// SYS_ERR: MHI tears the channel devices down, upstream announces the
	// card offline, and online again once the control channel is back.
	const bool mhi_down = r.ue->wait([&](const Uevent &e) {
		return of_card(e, bdf) && e.action == "remove" && e.subsystem == "mhi";
	}, mark, 30);
	t.expect(mhi_down, "no MHI channel went away after the UE (no SYS_ERR?)");
	t.expect(wait_offline_online(*r.ue, bdf, mark), "no offline, then online, uevent of the card after the UE");
	std::string last = "no answer";
	const bool back = wait_for([&] { return answers_status(f.card, last); }, kOnlineTimeout, 100);
	t.expect(back, "STATUS after the UE: %s", last.c_str());
	t.note("UE to ONLINE and answering STATUS again in %.0f ms", ms_since(t0));
	// The card came back through its SBL, which offered a RAM dump in
	// Sahara mode 2; 6.12's client does not answer that, so the SBL
	// withdrew it after its timeout and booted (docs/health.md).
	const std::string withdrawn = "RAM dump not taken: the host did not answer the memory-debug HELLO";
	t.expect(wait_for([&] { return upstream_bootlog(bdf).find(withdrawn) != std::string::npos; }, 10, 100),
		 "debugfs bootlog does not say '%s'", withdrawn.c_str());
	t.expect(devcd_of(bdf).empty(), "a devcoredump from upstream 6.12");
	if (auto dev = back ? open_card(t, f.card) : std::nullopt)
		expect_computes(t, *dev);
	expect_log_clean(t, *r.km, "UE");
}

// ---- upstream 7.3 -----------------------------------------------------------------

// Outputs the program holds back (it waits for inputs that never come),
// attached and queued one by one: each stays queued on the card, and
// `queued` (read by `rd`) counts them. False: CREATE_BO failed.
bool queue_held_outputs(ktap::Case &t, const qaic::Device &dev, Manual &m,
			const std::function<std::string(const char *)> &rd)
{
	const auto &L = m.e.layout;
	std::vector<qaic::Bo> outs;
	for (unsigned k = 0; k < 3; k++) {
		auto bo = qaic::Bo::create(dev, L.output.size);
		if (!bo) {
			t.expect(false, "CREATE_BO");
			return false;
		}
		qaic_attach_slice_entry so{};
		so.size = L.output.size;
		so.sem0 = qaic::sem(QAIC_SEM_WAIT_GT_0, uint8_t(L.sem_out), 0, true);
		so.sem1 = qaic::sem(QAIC_SEM_DEC, uint8_t(L.sem_out), 1, false);
		so.dev_addr = m.act.ddr_base + L.output.offset;
		t.expect(qaic::attach_slices(dev, bo->handle(), m.dbc(), qaic::kFromDevice, std::span(&so, 1)) == 0,
			 "ATTACH of output %u", k);
		outs.push_back(std::move(*bo));
	}
	for (unsigned k = 0; k < outs.size(); k++) {
		const qaic_execute_entry ent{outs[k].handle(), qaic::kFromDevice};
		t.expect(qaic::execute(dev, m.dbc(), std::span(&ent, 1)) == 0, "EXECUTE of output %u", k);
		const std::string want = std::to_string(k + 1);
		// The card takes the request off the FIFO only to start it;
		// a held request stays between head and tail.
		t.expect(wait_for([&] { return rd("queued") == want; }, 5, 20), "queued '%s' after %u held requests",
			 rd("queued").c_str(), k + 1);
	}
	return true;
}

// DBC debugfs with an activated DBC and requests the card holds back:
// fifo_size is the queue size the activation asked for, queued the
// requests between the card's head and the host's tail.
void dbc_debugfs_queued(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kCard | kDevice);
	if (!r.ready)
		return;
	std::string dir;
	{
		Manual m(*r.dev, *wl::find("vadd_f32"));
		if (!m.problem.empty())
			return t.expect(false, "%s", m.problem.c_str());
		dir = upstream_dbc_debugfs(r.card->bdf, m.dbc());
		auto rd = [&](const char *n) { return qaic::read_attr(dir + "/" + n); };
		t.expect(rd("fifo_size") == "8", "%s/fifo_size '%s', want 8 (the activation's queue)", dir.c_str(),
			 rd("fifo_size").c_str());
		t.expect(rd("queued") == "0", "%s/queued '%s' before any request", dir.c_str(), rd("queued").c_str());
		t.expect(m.attach() == 0, "ATTACH");
		if (!queue_held_outputs(t, *r.dev, m, rd))
			return;
		t.note("%s: fifo_size 8, queued 0 idle, then 1, 2, 3 as held requests were queued", dir.c_str());
	} // DEACTIVATE: the DBC is released
	t.expect(wait_for([&] { return qaic::read_attr(dir + "/fifo_size") == "0"; }, 5, 20),
		 "fifo_size '%s' after DEACTIVATE, want 0", qaic::read_attr(dir + "/fifo_size").c_str());
}

// The host's clock stepped by `secs`.
bool step_clock(int64_t secs)
{
	timespec ts{};
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	return clock_settime(CLOCK_REALTIME, &ts) == 0;
}

// The boot-time exchange (the SBL logs the host's UTC it was given) and
// the periodic one: the card's offset of host time (STATUS) follows a
// step of the host's clock within a few periods.
void timesync_host_time_follows(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kCard | kDevice);
	if (!r.ready)
		return;
	const qaic::Device &dev = *r.dev;
	const auto boot_utc = boot_timesync_utc(upstream_bootlog(r.card->bdf));
	timespec up{};
	clock_gettime(CLOCK_BOOTTIME, &up);
	const double now = utc_now();
	// AIC200 has no boot-time timesync channel: only the periodic one.
	if (guest_util::family_of_bdf(r.card->bdf).boot_timesync)
		t.expect(boot_utc && *boot_utc <= now + 1 && *boot_utc >= now - double(up.tv_sec) - 5,
			 "boot timesync UTC %.6f, want within this guest's uptime (%ld s) before %.6f",
			 boot_utc.value_or(0), long(up.tv_sec), now);
	// offset = host µs - card µs: constant while both clocks run.
	std::optional<int64_t> off0;
	t.expect(wait_for([&] { return (off0 = status_time_offset_us(dev)) && *off0 != 0; }, 10, 200),
		 "no periodic timesync offset in STATUS");
	if (!off0)
		return;
	const double card_uptime = now - double(*off0) / 1e6;
	t.expect(card_uptime >= 0 && card_uptime < 3600, "STATUS offset %" PRId64 " us: the card would have run %.1f s",
		 *off0, card_uptime);
	// Step the host's clock forward: the offset follows.
	constexpr int64_t kStepS = 1000;
	if (!step_clock(kStepS))
		return t.expect(false, "clock_settime: %s", std::strerror(errno));
	std::optional<int64_t> off1;
	const bool followed = wait_for([&] {
		off1 = status_time_offset_us(dev);
		return off1 && std::llabs(*off1 - *off0 - kStepS * 1000000) < 2000000;
	}, 20, 200);
	const bool back = step_clock(-kStepS);
	t.expect(back, "setting the clock back: %s", std::strerror(errno));
	t.expect(followed, "after a +%" PRId64 " s step the offset went %" PRId64 " -> %s us", kStepS, *off0,
		 fmt(off1).c_str());
	std::optional<int64_t> off2;
	t.expect(wait_for([&] {
		off2 = status_time_offset_us(dev);
		return off2 && std::llabs(*off2 - *off0) < 2000000;
	}, 20, 200), "after stepping back the offset is %s us, was %" PRId64, fmt(off2).c_str(), *off0);
	t.note("boot timesync UTC %.3f; periodic offset %" PRId64 " us, %s after +%" PRId64 " s, %s after",
	       boot_utc.value_or(0), *off0, fmt(off1).c_str(), kStepS, fmt(off2).c_str());
}

// ---- RAS --------------------------------------------------------------------------

// The driver's records of the card's RAS events since the case began:
// `n` of them, each at warning level, none dropped.
void expect_ras_records(ktap::Case &t, Kmsg &km, const std::string &bdf, const RasLog &L, size_t n)
{
	unsigned logged = 0;
	for (const auto &l : km.lines())
		if (l.text.find(bdf) != std::string::npos && l.text.find(L.mark) != std::string::npos) {
			logged++;
			t.expect(l.level == 4, "logged at level %d, want 4 (warning): %s", l.level, l.text.c_str());
			if (logged <= 2)
				t.note("kernel: %s", l.text.substr(0, 200).c_str());
		}
	t.expect(logged == n, "%u RAS records for %zu events", logged, n);
}

void expect_none_dropped(ktap::Case &t, Kmsg &km, const RasLog &L)
{
	if (L.dropped)
		t.expect(km.grep({L.dropped}).empty(), "upstream dropped a RAS message of the card");
}

// CE and UE_NF injections of every source move ce_count and
// ue_nonfatal_count exactly; each event is logged with its type, source
// and syndrome (in the driver's terms: Profile::ras).
void ras_ce_ue_nf_counted(ktap::Case &t, const Fixture &f)
{
	Rig r(t, f.card, kSysfs | kMailbox | kKmsg);
	if (!r.ready)
		return;
	const RasLog &L = f.p.ras;
	const Sysfs &S = *r.sysfs;
	Kmsg &km = *r.km;
	const RasCounts base = ras_counts(S);
	t.expect(base.ce && base.ue && base.ue_nf, "RAS counters under %s: %s", S.pci.c_str(), base.str().c_str());
	int ce = 0, ue_nf = 0;
	for (const auto &i : kRasInjections) {
		const std::string c = std::string("ras ") + i.type + " source=" + i.source + " " + i.args;
		const std::string res = r.mb->run(c);
		t.expect(res.empty(), "%s: %s", c.c_str(), res.c_str());
		(std::string(i.type) == "ce" ? ce : ue_nf)++;
	}
	expect_counts(t, S, plus(base, ce, 0, ue_nf), "after the injections");
	for (const auto &i : kRasInjections) {
		const std::string names = L.names(i.type, i.source);
		t.expect(!km.grep({S.bdf, L.mark, names, i.detail[L.detail]}).empty(),
			 "no %s for ras %s source=%s naming '%s' and '%s'", L.record, i.type, i.source, names.c_str(),
			 i.detail[L.detail]);
	}
	for (const auto &[words, missing] : L.extra)
		t.expect(!km.grep({words}).empty(), "%s", missing);
	expect_ras_records(t, km, S.bdf, L, std::size(kRasInjections));
	expect_none_dropped(t, km, L);
	expect_log_clean(t, km, "RAS");
}

// SoC temperatures crossing 95 °C and 110 °C raise one TSENS CE (upper
// threshold) and one UE_NF (critical threshold); staying above or coming
// down raises nothing.
void ras_tsens_threshold_crossing(ktap::Case &t, const Fixture &f)
{
	const RasLog &L = f.p.ras;
	Rig r(t, f.card, kSysfs | kMailbox | kKmsg);
	if (!r.ready)
		return;
	const Sysfs &S = *r.sysfs;
	const RasCounts base = ras_counts(S);
	auto inject = [&](const std::string &c) {
		const std::string res = r.mb->run(c);
		t.expect(res.empty(), "%s: %s", c.c_str(), res.c_str());
	};
	auto logged = [&](const char *type, bool critical, int deg_c) {
		std::vector<std::string> words = {S.bdf, L.mark, L.names(type, "tsens")};
		for (auto &w : L.tsens(critical, deg_c))
			words.push_back(w);
		return r.km->wait_grep(words, 5);
	};
	inject("sensor soc_temp=80000"); // below the warning threshold: nothing
	expect_counts(t, S, base, "SoC at 80 °C");
	inject("sensor soc_temp=96000"); // crosses 95 °C: a TSENS CE, upper threshold
	expect_counts(t, S, plus(base, 1, 0, 0), "SoC from 80 to 96 °C");
	t.expect(logged("ce", false, 96), "no %s for the TSENS crossing at 96 °C", L.record);
	inject("sensor soc_temp=97000"); // still above: no new event
	expect_counts(t, S, plus(base, 1, 0, 0), "SoC from 96 to 97 °C");
	inject("sensor soc_temp=111000"); // crosses 110 °C: critical, UE_NF
	expect_counts(t, S, plus(base, 1, 0, 1), "SoC from 97 to 111 °C");
	t.expect(logged("ue_nf", true, 111), "no %s for the critical crossing at 111 °C", L.record);
	inject("sensor soc_temp=auto"); // on the way down: nothing
	expect_counts(t, S, plus(base, 1, 0, 1), "SoC back to the model");
	inject("ras ce source=tsens temp=91000 threshold=upper");
	expect_counts(t, S, plus(base, 2, 0, 1), "a TSENS CE injected directly");
	t.expect(logged("ce", false, 91), "no %s for the injected TSENS CE at 91 °C", L.record);
	expect_none_dropped(t, *r.km, L);
	expect_log_clean(t, *r.km, "TSENS");
}

// Without a boot-time timesync to date it (AIC200), the boot log cannot
// tell a new boot from the old one (their lines are the same): the log
// must be whole again; the uevents and ONLINE show the reset.
void expect_new_boot_log(ktap::Case &t, const std::string &bdf)
{
	t.expect(wait_for([&] { return upstream_bootlog(bdf).find("starting AMSS") != std::string::npos; }, 10, 100),
		 "debugfs bootlog does not reach AMSS after the reset");
	t.note("no boot-time timesync on this card: the boot log cannot be dated");
}

// A reset shows as a new boot of the card: in the card's lines of the
// kernel log, or in debugfs bootlog, whose boot-time timesync is then after
// the UE (injected at `utc0`; `boot0` the old boot's).
void expect_new_boot(ktap::Case &t, const Profile &p, Kmsg &km, const std::string &bdf, std::optional<double> boot0,
		     double utc0)
{
	if (!p.bootlog_in_debugfs) {
		// A SoC reset: the card booted from PBL again, SBL fetching the images.
		t.expect(km.wait_grep({bdf, "card: SBL: all images loaded"}, 10), "no new boot log after the UE");
		t.expect(km.wait_grep({bdf, "card online"}, 10), "no 'card online' after the UE");
		return;
	}
	if (!guest_util::family_of_bdf(bdf).boot_timesync)
		return expect_new_boot_log(t, bdf);
	std::string log;
	std::optional<double> boot1;
	t.expect(wait_for([&] {
		log = upstream_bootlog(bdf);
		boot1 = boot_timesync_utc(log);
		return boot1 && *boot1 >= utc0 - 1 && log.find("starting AMSS") != std::string::npos;
	}, 10, 100), "debugfs bootlog is not a new boot's: timesync UTC %.3f (before the UE %.3f, UE at %.3f)",
		 boot1.value_or(0), boot0.value_or(0), utc0);
}

// Last: a UE resets the card (ours, or upstream 7.3's MHI SoC reset). It is
// counted and logged as an error; the card goes offline, comes back from a
// new boot and computes; the counters carry over the reset and count after it.
void ras_ue_resets_card(ktap::Case &t, const Fixture &f)
{
	const RasLog &L = f.p.ras;
	Rig r(t, f.card, kSysfs | kMailbox | kUevents | kKmsg);
	if (!r.ready)
		return;
	const Sysfs &S = *r.sysfs;
	t.expect(r.ue->ok(), "no uevent socket");
	t.expect(is_online(f.card), "card not ONLINE before the UE");
	const auto boot0 = f.p.bootlog_in_debugfs ? boot_timesync_utc(upstream_bootlog(S.bdf)) : std::nullopt;
	const RasCounts base = ras_counts(S);
	const size_t mark = r.ue->mark();
	const auto t0 = Clock::now();
	const double utc0 = utc_now();
	const std::string res = r.mb->run("ras ue source=ddr addr=0x40000000");
	t.expect(res.empty(), "ras ue: %s", res.c_str());
	// Counted, then the card is reset: it goes offline and comes back.
	t.expect(wait_for([&] { return S.ras("ue_count") == (base.ue ? *base.ue + 1 : -1); }, 60, 20),
		 "ue_count %s, was %s", fmt(S.ras("ue_count")).c_str(), fmt(base.ue).c_str());
	t.expect(wait_offline_online(*r.ue, S.bdf, mark), "no offline, then online, uevent of the card after the UE");
	t.expect(wait_for([&] { return is_online(f.card); }, kOnlineTimeout, 100), "not ONLINE again after the UE");
	t.note("UE to ONLINE again in %.0f ms", ms_since(t0));
	expect_new_boot(t, f.p, *r.km, S.bdf, boot0, utc0);
	const std::string ue = L.names("ue", "ddr");
	t.expect(!r.km->grep({S.bdf, L.mark, ue}).empty(), "the UE is not in the kernel log");
	bool err_level = false;
	for (const auto &l : r.km->lines())
		if (l.text.find(ue) != std::string::npos)
			err_level = l.level <= 3;
	t.expect(err_level, "the UE was not logged as an error");
	expect_counts(t, S, plus(base, 0, 1, 0), "after the reset");
	// The counters still count after the reset.
	t.expect(r.mb->run("ras ce source=ddr").empty(), "CE after the reset");
	expect_counts(t, S, plus(base, 1, 1, 0), "a CE after the reset");
	if (auto dev = open_card(t, f.card))
		expect_computes(t, *dev);
	expect_log_clean(t, *r.km, "UE");
}

// ---- the suite --------------------------------------------------------------------

struct Entry {
	ktap::Def<Fixture> def;
	unsigned runs; // Runs: the drivers it runs against, and the soak
};

// Every case in the order it runs, and the runs it belongs to. Ours and
// upstream 7.3 share the cases of the same name; 6.12 binds no health
// channel and has cases of its own. The RAS cases come last: the UE resets
// the card.
std::vector<Entry> cases(const Options &o)
{
	constexpr unsigned kBoth = kOurs | kUpstream73, kEvery = kOurs | kUpstream612 | kUpstream73;
	const unsigned crash_loop_s = std::max(900u, 300 + o.crashes * 5), reload_s = std::max(300u, 120 + o.reloads * 40),
		       reset_s = std::max(300u, 120 + o.resets * 40);
	return {
		{KTAP_CASE(soak_baseline, 300), kSoak},
		{KTAP_CASE(mailbox_present, 60), kEvery},
		{KTAP_CASE(sahara_crash_dump, 300), kBoth},
		{KTAP_CASE(hwmon_sensors_follow_injections, 120), kOurs},
		{KTAP_CASE(hwmon_power_limit, 120), kOurs},
		{KTAP_CASE(telemetry_nsp_counters, 300), kOurs},
		{KTAP_CASE(dbc_debugfs_queued, 120), kUpstream73},
		{KTAP_CASE(timesync_host_time_follows, 120), kUpstream73},
		{KTAP_CASE(bad_injections_refused, 120), kBoth},
		{KTAP_CASE(ssr_dbc_state_through_recovery, 120), kUpstream73},
		{KTAP_CASE(ssr_errno_epipe, 120), kBoth},
		{KTAP_CASE(ssr_devcoredump, 120), kBoth},
		{KTAP_CASE(ssr_crash_loop, crash_loop_s), kBoth | kSoak},
		{KTAP_CASE(ssr_epipe_after_quick_recovery, 180), kBoth},
		{KTAP_CASE(ssr_kill_during_recovery, 300), kBoth},
		{KTAP_CASE(ssr_execute_unwind, 180), kBoth},
		{KTAP_CASE(reload_under_load, reload_s), kBoth | kSoak},
		{KTAP_CASE(reset_under_load, reset_s), kBoth | kSoak},
		{KTAP_CASE(ras_ce_ue_nf_counted, 120), kBoth},
		{KTAP_CASE(ras_tsens_threshold_crossing, 120), kBoth},
		{KTAP_CASE(ras_ue_resets_card, 300), kBoth},
		{KTAP_CASE(upstream_crash_recovered_by_card, 300), kUpstream612},
		{KTAP_CASE(upstream_ras_sensor_injections_ignored, 300), kUpstream612},
		{KTAP_CASE(upstream_ue_syserr_recovery, 300), kUpstream612},
		{KTAP_CASE(soak_no_leaks, 300), kSoak},
	};
}

// The cases of this run (the driver's, or the soak's), or the one --case
// names; those --skip names are listed, skipped with the reason.
void add_cases(ktap::Suite &s, const Fixture &f)
{
	const unsigned run = f.o.soak ? kSoak : f.p.runs;
	for (const auto &[def, runs] : cases(f.o)) {
		if (!(runs & run) || (!f.o.only.empty() && f.o.only != def.name))
			continue;
		if (const auto it = f.o.skips.find(def.name); it != f.o.skips.end())
			s.add_skipped(def.name, it->second);
		else
			s.add(def, f);
	}
}

// False: the usage was wrong (said on stderr).
bool parse_options(int argc, char **argv, Options &o)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string k = argv[i], v = argv[i + 1];
		if (k == "--card")
			o.card = std::stoul(v);
		else if (k == "--upstream") {
			const auto d = parse_driver_under_test(v);
			if (!d)
				return false;
			o.driver = *d;
		} else if (k == "--crashes")
			o.crashes = std::stoul(v);
		else if (k == "--reloads")
			o.reloads = std::stoul(v);
		else if (k == "--resets")
			o.resets = std::stoul(v);
		else if (k == "--soak")
			o.soak = v == "1";
		else if (k == "--case")
			o.only = v;
		else if (k == "--skip" && v.find('=') != std::string::npos)
			o.skips[v.substr(0, v.find('='))] = v.substr(v.find('=') + 1);
		else if (k == "--exec-gate")
			o.exec_gate = v;
		else if (k == "--known-bug" && (v == "close-after-unbind" || v == "execute-unwind"))
			(v == "close-after-unbind" ? o.close_after_unbind_bug : o.execute_unwind_bug) = true;
		else if (k == "--known-bug") {
			std::fprintf(stderr, "--known-bug %s: the known bugs are: close-after-unbind, execute-unwind\n",
				     v.c_str());
			return false;
		} else {
			std::fprintf(stderr, "unknown option %s\n", k.c_str());
			return false;
		}
	}
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	const bool listing = ktap::take_list_option(argc, argv);
	Options o;
	if (!parse_options(argc, argv, o))
		return 2;
	// Shared with every case's process: the soak's figures.
	void *fig = ::mmap(nullptr, sizeof(SoakFigures), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fig != MAP_FAILED)
		g_fig = new (fig) SoakFigures{};
	if (o.soak && !g_fig) {
		std::fprintf(stderr, "mmap: %s\n", std::strerror(errno));
		return 2;
	}
	const Fixture f{o.card, profile_of(o), o};
	ktap::Suite s;
	add_cases(s, f);
	return s.run_or_list(listing);
}
