// SPDX-License-Identifier: GPL-2.0-or-later
// A JSON reader for VERSION's capabilities, strict where the server reads a
// value and only as lenient as the grammar where it skips one.
#include "aic100/vfio_user/caps.h"

#include <array>
#include <charconv>
#include <limits>

namespace aic100::vfio_user {
namespace {

constexpr int kMaxDepth = 16;

class JsonReader {
public:
	explicit JsonReader(std::string_view text) : s_(text) {}

	bool read_document(Caps &caps)
	{
		if (!read_object(0, [&](std::string_view key) {
			    if (key == kCapObject)
				    return read_object(1, [&](std::string_view k) { return read_cap(k, caps); });
			    return skip_value(1);
		    }))
			return false;
		skip_ws();
		return pos_ == s_.size();
	}

private:
	std::string_view s_;
	size_t pos_ = 0;

	void skip_ws()
	{
		while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
			pos_++;
	}
	bool eat(char c)
	{
		skip_ws();
		if (pos_ < s_.size() && s_[pos_] == c) {
			pos_++;
			return true;
		}
		return false;
	}
	bool eat_word(std::string_view w)
	{
		if (s_.substr(pos_, w.size()) != w)
			return false;
		pos_ += w.size();
		return true;
	}

	// `{ "key": value, ... }`, calling on_member with the reader at each value.
	template <class F> bool read_object(int depth, F &&on_member)
	{
		if (depth >= kMaxDepth || !eat('{'))
			return false;
		if (eat('}'))
			return true;
		do {
			std::string key;
			skip_ws();
			if (!read_string(key) || !eat(':') || !on_member(std::string_view(key)))
				return false;
		} while (eat(','));
		return eat('}');
	}

	bool read_cap(std::string_view key, Caps &caps)
	{
		uint64_t v = 0;
		if (key == kCapMaxMsgFds) {
			if (!read_uint(v) || v > std::numeric_limits<uint32_t>::max())
				return false;
			caps.max_msg_fds = static_cast<uint32_t>(v);
			return true;
		}
		if (key == kCapMaxDataXfer)
			return read_uint(caps.max_data_xfer);
		if (key == kCapPgsizes)
			return read_uint(caps.pgsizes);
		if (key == kCapMaxDmaMaps)
			return read_uint(caps.max_dma_maps);
		if (key == kCapWriteMultiple)
			return read_bool(caps.write_multiple);
		return skip_value(2);
	}

	bool read_uint(uint64_t &out)
	{
		skip_ws();
		const char *b = s_.data() + pos_;
		const char *e = s_.data() + s_.size();
		if (b == e || *b < '0' || *b > '9')
			return false;
		const auto [p, ec] = std::from_chars(b, e, out);
		if (ec != std::errc())
			return false;
		pos_ += static_cast<size_t>(p - b);
		// 1.0 or 1e3 is a number, not an unsigned integer.
		return pos_ == s_.size() || (s_[pos_] != '.' && s_[pos_] != 'e' && s_[pos_] != 'E');
	}
	bool read_bool(bool &out)
	{
		skip_ws();
		if (eat_word("true"))
			out = true;
		else if (eat_word("false"))
			out = false;
		else
			return false;
		return true;
	}

	// A string at pos_ (after its opening quote is checked here); escapes
	// are decoded to ASCII, anything past ASCII becomes '?'.
	bool read_string(std::string &out)
	{
		if (pos_ >= s_.size() || s_[pos_] != '"')
			return false;
		pos_++;
		while (pos_ < s_.size()) {
			const unsigned char c = static_cast<unsigned char>(s_[pos_++]);
			if (c == '"')
				return true;
			if (c < 0x20)
				return false;
			if (c != '\\') {
				out += static_cast<char>(c);
				continue;
			}
			if (!read_escape(out))
				return false;
		}
		return false;
	}
	bool read_escape(std::string &out)
	{
		if (pos_ >= s_.size())
			return false;
		const char c = s_[pos_++];
		static constexpr std::string_view from = "\"\\/bfnrt", to = "\"\\/\b\f\n\r\t";
		if (const size_t i = from.find(c); i != std::string_view::npos) {
			out += to[i];
			return true;
		}
		if (c != 'u' || s_.size() - pos_ < 4)
			return false;
		unsigned v = 0;
		const auto [p, ec] = std::from_chars(s_.data() + pos_, s_.data() + pos_ + 4, v, 16);
		if (ec != std::errc() || p != s_.data() + pos_ + 4)
			return false;
		pos_ += 4;
		out += v < 0x80 ? static_cast<char>(v) : '?';
		return true;
	}

	bool skip_number()
	{
		const size_t start = pos_;
		if (pos_ < s_.size() && s_[pos_] == '-')
			pos_++;
		auto digits = [&] {
			const size_t d = pos_;
			while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9')
				pos_++;
			return pos_ > d;
		};
		if (!digits())
			return false;
		if (pos_ < s_.size() && s_[pos_] == '.' && (++pos_, !digits()))
			return false;
		if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
			pos_++;
			if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-'))
				pos_++;
			if (!digits())
				return false;
		}
		return pos_ > start;
	}

	bool skip_array(int depth)
	{
		if (depth >= kMaxDepth || !eat('['))
			return false;
		if (eat(']'))
			return true;
		do {
			if (!skip_value(depth + 1))
				return false;
		} while (eat(','));
		return eat(']');
	}

	bool skip_value(int depth)
	{
		skip_ws();
		if (pos_ >= s_.size())
			return false;
		std::string ignored;
		switch (s_[pos_]) {
		case '{':
			return read_object(depth, [&](std::string_view) { return skip_value(depth + 1); });
		case '[':
			return skip_array(depth);
		case '"':
			return read_string(ignored);
		case 't':
			return eat_word("true");
		case 'f':
			return eat_word("false");
		case 'n':
			return eat_word("null");
		default:
			return skip_number();
		}
	}
};

}  // namespace

std::optional<Caps> parse_caps(std::string_view json)
{
	Caps caps;
	JsonReader r(json);
	if (!r.read_document(caps))
		return std::nullopt;
	return caps;
}

std::string write_caps(const Caps &caps, size_t room, Caps &sent)
{
	sent = Caps{};
	struct Key {
		std::string text;
		void (*apply)(const Caps &from, Caps &to);
	};
	auto num = [](const char *k, uint64_t v) { return std::string("\"") + k + "\":" + std::to_string(v); };
	std::array<Key, 5> keys = {{
		{num(kCapMaxMsgFds, caps.max_msg_fds), [](const Caps &f, Caps &t) { t.max_msg_fds = f.max_msg_fds; }},
		{num(kCapMaxDataXfer, caps.max_data_xfer), [](const Caps &f, Caps &t) { t.max_data_xfer = f.max_data_xfer; }},
		{num(kCapPgsizes, caps.pgsizes), [](const Caps &f, Caps &t) { t.pgsizes = f.pgsizes; }},
		{num(kCapMaxDmaMaps, caps.max_dma_maps), [](const Caps &f, Caps &t) { t.max_dma_maps = f.max_dma_maps; }},
		{caps.write_multiple ? std::string("\"") + kCapWriteMultiple + "\":true" : std::string(),
		 [](const Caps &f, Caps &t) { t.write_multiple = f.write_multiple; }},
	}};
	const std::string head = std::string("{\"") + kCapObject + "\":{", tail = "}}";
	std::string body;
	for (const Key &k : keys) {
		if (k.text.empty())
			continue;
		const std::string next = body.empty() ? k.text : body + "," + k.text;
		if (head.size() + next.size() + tail.size() + 1 > room)
			break;
		body = next;
		k.apply(caps, sent);
	}
	if (head.size() + body.size() + tail.size() + 1 > room)
		return {};
	return head + body + tail;
}

}  // namespace aic100::vfio_user
