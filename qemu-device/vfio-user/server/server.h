// SPDX-License-Identifier: GPL-2.0-or-later
// The aic100-vfio-user server's loop: one client at a time on a listening
// UNIX socket, its messages through the Dispatcher onto the card, the
// card's work when it kicks or its timer expires, and the card's own DMA
// messages to the client. One thread does it all, so the card sees one
// access at a time, as it does under QEMU's BQL.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "aic100/vfio_user/dispatcher.h"
#include "card_backend.h"
#include "socket_io.h"

namespace aic100::vfio_user {

// What the server offers in VERSION: 16 fds a message (QEMU's MSI
// eventfds come 16 at a time), 1 MiB accesses, 4 KiB pages.
inline constexpr Caps kServerCaps{16, 1u << 20, 4096, 65535, false};

class Server final : public DmaPort {
public:
	Server(CardBackend &card, const Caps &ours = kServerCaps);
	~Server() override;

	// Serves clients accepted on `listen_fd`, one at a time, until
	// `stop_fd` becomes readable; then lets the client go.
	void run(int listen_fd, int stop_fd);
	// Runs `fn` on the server's thread at its next turn; safe from any
	// thread (tests, a future monitor).
	void post(std::function<void()> fn);

	// How long a DMA message waits for its reply before the client is
	// taken for gone (QEMU's own requests time out after 5 s).
	void set_dma_timeout_ms(int ms) { dma_timeout_ms_ = ms; }
	const Dispatcher &dispatcher() const { return dispatcher_; }

	// DmaPort
	bool dma_exchange(const std::vector<uint8_t> &request, std::vector<uint8_t> &reply) override;
	uint64_t dma_max_xfer() const override;
	uint16_t next_dma_id() override { return next_id_++; }

private:
	void accept_client(int listen_fd);
	void drop_client();
	void read_client();
	void handle(Message &m);
	void handle_queued();
	void run_posted();
	bool wait_readable(int fd, int timeout_ms) const;

	CardBackend &card_;
	Dispatcher dispatcher_;
	UniqueFd client_;
	UniqueFd post_fd_;
	std::mutex post_mu_;
	std::vector<std::function<void()>> posted_;
	std::deque<Message> queued_;  // commands that came while a DMA message waited
	bool reply_owed_ = false;     // inside a command: no DMA message may go out
	bool client_broken_ = false;  // dropped once the current turn ends
	uint16_t next_id_ = 0x8000;   // apart from the small ids QEMU's own requests start with
	int dma_timeout_ms_ = 10'000;
};

}  // namespace aic100::vfio_user
