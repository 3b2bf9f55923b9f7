// SPDX-License-Identifier: GPL-2.0-or-later
// The reproducer of upstream qaic's STATUS length bug (docs/upstream-bugs.md,
// patches/linux/0002-*): a STATUS transaction that the user pads beyond
// its 8-byte header. The driver copies 8 bytes to the wire message, but its
// headers count the user's length, so the card receives a message shorter
// than its header says and drops it; the user waits for the driver's
// response timeout. A fixed driver sends what it counts, and the card
// answers.
//
// Each --run loads MODULE in place of the qaic module that is loaded (if
// any), waits for the card to be ONLINE, and sends the padded STATUS with a
// 5-second response timeout. EXPECT is "fixed" (STATUS answered) or "bug"
// (ETIMEDOUT). Either way a plain STATUS must be answered afterwards. The
// last run's module stays loaded.
//
// Usage: qaic-status-padding-tests [--card N] --run LABEL=MODULE:EXPECT ...
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "guest_util.h"
#include "ktap.h"
#include "manage.h"
#include "nnc_client.h"
#include "qaic.h"

namespace {

using namespace guest_util;

struct Run {
	std::string label, module;
	bool expect_fixed = false;
};

struct Options {
	unsigned card = 0;
	std::vector<Run> runs;
};

// The padded transaction: type STATUS_FROM_USR, len 16, 8 zero bytes after
// the header.
std::vector<uint8_t> padded_status()
{
	std::vector<uint8_t> t(16, 0);
	const qaic_manage_trans_hdr h{QAIC_TRANS_STATUS_FROM_USR, 16};
	std::memcpy(t.data(), &h, sizeof(h));
	return t;
}

void add_run(ktap::Suite &s, const Options &o, const Run &r)
{
	s.add(r.label + "_loaded", [=](ktap::Case &t) {
		if (std::filesystem::exists("/sys/module/qaic"))
			t.expect(shell("rmmod qaic") == 0, "rmmod qaic failed");
		t.expect(shell("insmod " + r.module) == 0, "insmod %s failed", r.module.c_str());
		auto cards = qaic::find_cards();
		if (o.card >= cards.size())
			return t.expect(false, "no card %u", o.card);
		t.expect(wait_online(cards[o.card].bdf), "card %s not ONLINE after loading %s",
			 cards[o.card].bdf.c_str(), r.module.c_str());
	});

	s.add(r.label + "_padded_status", [=](ktap::Case &t) {
		auto cards = qaic::find_cards();
		if (o.card >= cards.size() || !cards[o.card].accel_minor)
			return t.expect(false, "no accel node for card %u", o.card);
		auto dev = qaic::Device::open(*cards[o.card].accel_minor);
		if (!dev)
			return t.expect(false, "open: %s", std::strerror(errno));
		// A bounded wait for the buggy driver's request.
		t.expect(spit("/sys/module/qaic/parameters/control_resp_timeout_s", "5"),
			 "setting control_resp_timeout_s");
		qaic::Manage m;
		m.raw(padded_status());
		const int rc = m.send(*dev);
		const bool answered = rc == 0 && m.reply().status().has_value();
		if (r.expect_fixed)
			t.expect(answered, "padded STATUS: %s%s, want an answer", qaic::errno_name(-rc).c_str(),
				 rc == 0 && !answered ? " without STATUS_FROM_DEV" : "");
		else
			t.expect(rc == -ETIMEDOUT, "padded STATUS: %s, want ETIMEDOUT (the bug: the card drops the "
				 "message)", rc ? qaic::errno_name(-rc).c_str() : "answered");
		// The card and the driver still answer a STATUS as it should be.
		qaic::Nnc nnc(*dev);
		const auto st = nnc.status();
		t.expect(st.ok(), "a plain STATUS afterwards: %s", st.describe().c_str());
		t.note("%s: padded STATUS %s", r.label.c_str(), answered ? "answered" : qaic::errno_name(-rc).c_str());
	});
}

} // namespace

int main(int argc, char **argv)
{
	const bool listing = ktap::take_list_option(argc, argv);
	Options o;
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string k = argv[i], v = argv[i + 1];
		if (k == "--card") {
			o.card = std::stoul(v);
		} else if (k == "--run") {
			const auto run = parse_module_run(v, {"fixed", "bug"});
			if (!run) {
				std::fprintf(stderr, "--run %s: want LABEL=MODULE:fixed|bug\n", v.c_str());
				return 2;
			}
			o.runs.push_back({run->label, run->module, run->outcome == "fixed"});
		} else {
			std::fprintf(stderr, "unknown option %s\n", k.c_str());
			return 2;
		}
	}
	if (o.runs.empty()) {
		std::fprintf(stderr, "usage: %s [--card N] --run LABEL=MODULE:fixed|bug ...\n", argv[0]);
		return 2;
	}
	ktap::Suite s;
	for (const auto &r : o.runs)
		add_run(s, o, r);
	return s.run_or_list(listing);
}
