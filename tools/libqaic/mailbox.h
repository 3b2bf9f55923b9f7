// SPDX-License-Identifier: GPL-2.0-or-later
// The virtual card's BAR4 fault-injection mailbox (docs/health.md, "Fault
// injection"), for in-guest tests and tools: present with
// -device aic100,test-mailbox=on (a real card has nothing there).
// Neither driver claims BAR4, so /sys/bus/pci/devices/<bdf>/resource4 maps it
// even with a driver bound (IO_STRICT_DEVMEM refuses only claimed regions).
//
//   0x000  the command, at most 255 bytes
//   0x100  its length: writing it runs the command
//   0x104  status: 2 pending, 0 done, 1 refused
//   0x108  magic "MBOX" (0x584f424d)
//   0x200  the card's message (NUL-terminated), e.g. why it refused
//
//   qaic::Mailbox mb(0);                     // the first card
//   std::string err = mb.run("ras ce source=ddr");   // "" when done
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aic100/test_mailbox.h"
#include "qaic.h"

namespace qaic {

class Mailbox {
public:
	// The registers (aic100/test_mailbox.h, the card's ABI).
	static constexpr uint32_t kCommand = aic100::mailbox::kCommand, kLength = aic100::mailbox::kLength,
				  kStatus = aic100::mailbox::kStatus, kMagic = aic100::mailbox::kMagic,
				  kMessage = aic100::mailbox::kMessage;
	static constexpr uint32_t kMagicValue = aic100::mailbox::kMagicValue;
	static constexpr uint32_t kPending = aic100::mailbox::kPending, kDone = aic100::mailbox::kDone,
				  kRefused = aic100::mailbox::kRefused;
	static constexpr size_t kMaxCommand = aic100::mailbox::kMaxCommand, kMap = 4096;

	// The mailbox of card `card` in qaic::find_cards() order.
	explicit Mailbox(unsigned card)
	{
		const auto cards = qaic::find_cards();
		if (card >= cards.size()) {
			problem_ = "no card " + std::to_string(card);
			return;
		}
		open(cards[card].bdf);
	}
	// The mailbox of the card at PCI address `bdf` (e.g. 0000:01:00.0).
	explicit Mailbox(const std::string &bdf) { open(bdf); }
	~Mailbox()
	{
		if (base_)
			::munmap(const_cast<uint8_t *>(base_), kMap);
		if (fd_ >= 0)
			::close(fd_);
	}
	Mailbox(const Mailbox &) = delete;
	Mailbox &operator=(const Mailbox &) = delete;

	bool ok() const { return problem_.empty(); }
	// Why the mailbox cannot be used (empty when it can).
	const std::string &problem() const { return problem_; }
	const std::string &bdf() const { return bdf_; }

	// Runs a command: "" when the card carried it out, else its message
	// (or why the mailbox could not be used). Commands from several
	// processes are serialised with a lock on the resource file.
	std::string run(const std::string &command, double timeout_s = 10) const
	{
		if (command.size() > kMaxCommand)
			return "mailbox: command longer than 255 bytes";
		return run_raw(command, static_cast<uint32_t>(command.size()), timeout_s);
	}

	// Asks the card a question (e.g. "dma-stats dbc=0"): "" and its answer
	// in `answer`, or why it was not answered.
	std::string ask(const std::string &question, std::string &answer, double timeout_s = 10) const
	{
		answer.clear();
		if (question.size() > kMaxCommand)
			return "mailbox: question longer than 255 bytes";
		return run_raw(question, static_cast<uint32_t>(question.size()), timeout_s, &answer);
	}

	// Writes `command` and then `length` as given (which need not be its
	// size): for tests of the mailbox itself.
	// `answer`, when given, gets the message of a command that was done
	// (read under the lock, so no other user's command replaces it).
	std::string run_raw(const std::string &command, uint32_t length, double timeout_s = 10,
			    std::string *answer = nullptr) const
	{
		if (!ok())
			return "mailbox: " + problem_;
		Lock lock(fd_);
		// Wait out a command still pending (another user's).
		if (!wait_idle(timeout_s))
			return "mailbox: a command is still pending after " + std::to_string(timeout_s) + " s";
		uint8_t buf[aic100::mailbox::kBufferSize] = {};
		std::memcpy(buf, command.data(), std::min(command.size(), sizeof(buf)));
		for (uint32_t off = 0; off < sizeof(buf); off += 4) {
			uint32_t w;
			std::memcpy(&w, buf + off, 4);
			wr(kCommand + off, w);
		}
		wr(kLength, length);
		if (!wait_idle(timeout_s))
			return "mailbox: no answer within " + std::to_string(timeout_s) + " s";
		const uint32_t status = rd(kStatus);
		if (status == kDone) {
			if (answer)
				*answer = message();
			return {};
		}
		std::string msg = message();
		if (status != kRefused)
			msg = "mailbox: status " + std::to_string(status) + " (" + msg + ")";
		return msg.empty() ? "refused without a message" : msg;
	}

	// The message register as it stands.
	std::string message() const
	{
		std::string s;
		for (uint32_t off = 0; off < aic100::mailbox::kBufferSize; off += 4) {
			const uint32_t w = rd(kMessage + off);
			for (int b = 0; b < 4; b++) {
				const char c = static_cast<char>(w >> (8 * b));
				if (!c)
					return s;
				s += c;
			}
		}
		return s;
	}

	uint32_t rd(uint32_t off) const { return *reinterpret_cast<volatile const uint32_t *>(base_ + off); }
	void wr(uint32_t off, uint32_t v) const { *reinterpret_cast<volatile uint32_t *>(base_ + off) = v; }

private:
	struct Lock {
		explicit Lock(int fd) : fd_(fd) { while (::flock(fd_, LOCK_EX) && errno == EINTR) {} }
		~Lock() { ::flock(fd_, LOCK_UN); }
		int fd_;
	};

	void open(const std::string &bdf)
	{
		bdf_ = bdf;
		const std::string path = "/sys/bus/pci/devices/" + bdf + "/resource4";
		fd_ = ::open(path.c_str(), O_RDWR | O_SYNC | O_CLOEXEC);
		if (fd_ < 0) {
			problem_ = path + ": " + std::strerror(errno);
			return;
		}
		void *p = ::mmap(nullptr, kMap, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
		if (p == MAP_FAILED) {
			problem_ = "mmap " + path + ": " + std::strerror(errno);
			return;
		}
		base_ = static_cast<volatile uint8_t *>(p);
		if (const uint32_t m = rd(kMagic); m != kMagicValue) {
			char buf[96];
			std::snprintf(buf, sizeof(buf), "no mailbox in BAR4 of %s (magic 0x%08x; test-mailbox=on?)",
				      bdf.c_str(), m);
			problem_ = buf;
		}
	}

	bool wait_idle(double timeout_s) const
	{
		const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
		while (rd(kStatus) == kPending) {
			if (std::chrono::steady_clock::now() > end)
				return false;
			std::this_thread::sleep_for(std::chrono::microseconds(200));
		}
		return true;
	}

	std::string bdf_;
	std::string problem_;
	int fd_ = -1;
	volatile uint8_t *base_ = nullptr;
};

} // namespace qaic
