// SPDX-License-Identifier: GPL-2.0-or-later
// printf into a std::string: the card's and the tools' error messages.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace aic100 {

__attribute__((format(printf, 1, 2))) inline std::string format(const char *fmt, ...)
{
	va_list ap, again;
	va_start(ap, fmt);
	va_copy(again, ap);
	const int n = std::vsnprintf(nullptr, 0, fmt, ap);
	va_end(ap);
	std::string s(n > 0 ? size_t(n) : 0, '\0');
	if (n > 0)
		std::vsnprintf(s.data(), s.size() + 1, fmt, again);
	va_end(again);
	return s;
}

} // namespace aic100
