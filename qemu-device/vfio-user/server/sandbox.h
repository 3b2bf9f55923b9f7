// SPDX-License-Identifier: GPL-2.0-or-later
// What aic100-vfio-user gives up before it serves (docs/vfio-user.md,
// "Isolation"): root, for an unprivileged user, and every system call its
// loop and the card's NSP threads do not make. What a guest makes the
// card do then cannot reach past the fds the server was handed.
#pragma once

#include <string>

namespace aic100::vfio_user {

// Becomes `user`: its gid, no supplementary groups, its uid, for good.
// False with the reason in `why` when the user is unknown or a step fails.
bool drop_to_user(const std::string &user, std::string &why);

// Installs the seccomp allow-list (libseccomp). After it, opening a file
// fails with EACCES, and any call outside the list ends the process with
// a line on stderr naming the call's number (exit status 159). Threads
// started later inherit it. False with the reason in `why`.
bool enter_sandbox(std::string &why);

}  // namespace aic100::vfio_user
