// SPDX-License-Identifier: GPL-2.0-or-later
// The card's (target's) side of the Sahara protocol, as the SBL speaks it on
// QAIC_SAHARA. Image transfer (mode 0): HELLO, then for each image of the
// SBL's manifest READ_DATA requests (header first, then the payload in
// chunks), END_OF_IMAGE, DONE/DONE_RESP. Each image is checked
// (fw::check_header, SHA-256) before the next one is asked for. Memory
// debug (mode 2), after a firmware failure: HELLO, MEM_DEBUG64 with the RAM
// dump's table, MEM_READ64 requests served until the host's RESET; then the
// image transfer as above.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "aic100/family.h"
#include "aic100/firmware.h"
#include "aic100/ramdump.h"
#include "aic100/sahara_wire.h"
#include "aic100/sha256.h"

namespace aic100 {

// An image's payload as the SBL loaded it, held once and never changed: the
// QSM, the card's restart and a RAM dump of a failure share it (a manifest
// of 16 images of 64 MiB is 1 GiB).
using ImagePayload = std::shared_ptr<const std::vector<uint8_t>>;

struct LoadedImage {
	fw::Header header;
	ImagePayload payload; // never null
};

class SaharaTarget {
public:
	class Io {
	public:
		virtual ~Io() = default;
		virtual void sahara_send(std::vector<uint8_t> packet) = 0;
		virtual void sahara_log(const std::string &line) = 0;
		// All images are in (ok), or the transfer failed for good.
		virtual void sahara_finished(bool ok) = 0;
		// The RAM dump offered is over: the host ended it with RESET
		// (`taken`), or it was withdrawn. The image transfer follows.
		virtual void sahara_dump_ended(bool taken) = 0;
	};

	// With `dump`, the session starts in memory-debug mode and offers it;
	// `dump` must outlive the session or sahara_dump_ended(). The family's
	// host answers READ_DATA streaming or not, and names the images.
	SaharaTarget(Io &io, std::vector<uint32_t> image_ids, const RamDump *dump = nullptr,
		     Family family = Family::Aic100);

	// Sends HELLO. Call once both Sahara channels run.
	void start();
	// A host that has not answered the memory-debug HELLO gets no dump:
	// HELLO again, for the image transfer.
	void withdraw_dump();
	// HELLO in mode 2 sent, not answered yet.
	bool offering_dump() const { return state_ == State::WaitHelloResp && mode_ == sahara::kModeMemoryDebug; }
	bool serving_dump() const { return state_ == State::ServingDump; }
	// One TD from the host on the UL channel: a packet or image data.
	void receive(std::span<const uint8_t> data);

	enum class State { Idle, WaitHelloResp, ServingDump, WaitData, WaitDone, Done, Failed };
	State state() const { return state_; }
	const std::vector<LoadedImage> &images() const { return images_; }
	// The images loaded, moved out: whoever takes them is their only holder.
	std::vector<LoadedImage> take_images() { return std::exchange(images_, {}); }
	// Human-readable reason of a failure.
	const std::string &failure() const { return failure_; }

private:
	void hello(uint32_t mode);
	void hello_resp(std::span<const uint8_t> p);
	void dump_packet(std::span<const uint8_t> p);
	void end_dump(bool taken, const std::string &why);
	void request_next();
	void request(uint32_t offset, uint32_t len);
	void on_packet(std::span<const uint8_t> p);
	bool is_host_reset(std::span<const uint8_t> data) const;
	uint32_t read_length(uint64_t left) const;
	void on_data(std::span<const uint8_t> d);
	void take_payload(std::span<const uint8_t> d);
	void reply_complete();
	bool accept_header(std::span<const uint8_t> bytes);
	void end_of_image(uint32_t status);
	void fail(uint32_t status, const std::string &why);
	std::string image_name() const;

	Io &io_;
	std::vector<uint32_t> ids_;
	Family family_;
	bool streaming_;
	size_t index_ = 0;
	State state_ = State::Idle;
	const RamDump *dump_;
	uint32_t mode_ = sahara::kModeImageTxPending;
	uint64_t dump_reads_ = 0, dump_bytes_ = 0, dump_refused_ = 0;

	// The image being fetched.
	std::optional<fw::Header> header_;
	std::vector<uint8_t> payload_;
	Sha256 digest_;
	uint64_t next_offset_ = 0; // file offset of the next byte wanted
	uint32_t want_ = 0;        // bytes of the reply requested
	uint32_t got_ = 0;         // bytes of the reply received
	uint32_t skip_ = 0;        // leading bytes of the reply already held
	// The header's reply. Payload bytes go straight into payload_: a
	// streaming host answers with the whole payload at once.
	std::vector<uint8_t> header_bytes_;

	std::vector<LoadedImage> images_;
	std::string failure_;
};

} // namespace aic100
