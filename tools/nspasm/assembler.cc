// SPDX-License-Identifier: GPL-2.0-or-later
// A two-pass assembler for the NSP virtual instruction set (docs/nsp.md;
// syntax in nspasm.h). Pass 1 collects labels and .equ symbols, pass 2
// encodes instructions and data.
#include "nspasm.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <aic100/sem.h>

namespace aic100::nspasm {

namespace {

using nsp::Form;
using nsp::Instr;

struct AsmError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string &msg)
{
	throw AsmError(msg);
}

std::string_view trim(std::string_view s)
{
	while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
		s.remove_prefix(1);
	while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
		s.remove_suffix(1);
	return s;
}

std::string lower(std::string_view s)
{
	std::string out(s);
	for (char &c : out)
		if (c >= 'A' && c <= 'Z')
			c = char(c + 32);
	return out;
}

bool ident_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

bool is_ident(std::string_view s)
{
	if (s.empty() || !ident_char(s[0], true))
		return false;
	for (char c : s)
		if (!ident_char(c, false))
			return false;
	return true;
}

// The comment starts at the first ';', '#' or "//" outside a string.
std::string_view strip_comment(std::string_view s)
{
	bool quoted = false;
	for (size_t i = 0; i < s.size(); i++) {
		if (s[i] == '"' && (i == 0 || s[i - 1] != '\\'))
			quoted = !quoted;
		if (quoted)
			continue;
		if (s[i] == ';' || s[i] == '#' || (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '/'))
			return s.substr(0, i);
	}
	return s;
}

// Operands are separated by commas outside parentheses and strings.
std::vector<std::string_view> split_operands(std::string_view s)
{
	std::vector<std::string_view> out;
	s = trim(s);
	if (s.empty())
		return out;
	int depth = 0;
	bool quoted = false;
	size_t start = 0;
	for (size_t i = 0; i < s.size(); i++) {
		const char c = s[i];
		if (c == '"' && (i == 0 || s[i - 1] != '\\'))
			quoted = !quoted;
		else if (!quoted && c == '(')
			depth++;
		else if (!quoted && c == ')')
			depth--;
		else if (!quoted && depth == 0 && c == ',') {
			out.push_back(trim(s.substr(start, i - start)));
			start = i + 1;
		}
	}
	out.push_back(trim(s.substr(start)));
	for (std::string_view o : out)
		if (o.empty())
			fail("empty operand");
	return out;
}

std::string unquote(std::string_view s)
{
	s = trim(s);
	if (s.size() < 2 || s.front() != '"' || s.back() != '"')
		return std::string(s);
	std::string out;
	for (size_t i = 1; i + 1 < s.size(); i++) {
		if (s[i] == '\\' && i + 2 < s.size())
			i++;
		out += s[i];
	}
	return out;
}

// Integer expressions, 64-bit wrapping. Precedence from low to high:
// | ^ & (<< >>) (+ -) (* / %) unary(- ~ +).
class Expr {
public:
	Expr(std::string_view s, const std::map<std::string, uint64_t> &syms) : s_(s), syms_(syms) {}

	uint64_t eval()
	{
		const uint64_t v = binary(0);
		ws();
		if (i_ != s_.size())
			fail("unexpected '" + std::string(s_.substr(i_)) + "' in expression");
		return v;
	}

private:
	void ws()
	{
		while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t'))
			i_++;
	}
	bool eat(std::string_view op)
	{
		ws();
		if (s_.substr(i_, op.size()) != op)
			return false;
		// "<" is not an operator: only "<<"; and "|"/"&" never double.
		i_ += op.size();
		return true;
	}

	uint64_t binary(int level)
	{
		static const std::vector<std::vector<std::string_view>> levels = {
			{"|"}, {"^"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"}};
		if (level == int(levels.size()))
			return unary();
		uint64_t v = binary(level + 1);
		for (;;) {
			std::string_view op;
			for (std::string_view o : levels[level])
				if (eat(o)) {
					op = o;
					break;
				}
			if (op.empty())
				return v;
			const uint64_t r = binary(level + 1);
			if (op == "|")
				v |= r;
			else if (op == "^")
				v ^= r;
			else if (op == "&")
				v &= r;
			else if (op == "<<")
				v = r >= 64 ? 0 : v << r;
			else if (op == ">>")
				v = r >= 64 ? 0 : v >> r;
			else if (op == "+")
				v += r;
			else if (op == "-")
				v -= r;
			else if (op == "*")
				v *= r;
			else {
				if (r == 0)
					fail("division by zero");
				v = op == "/" ? v / r : v % r;
			}
		}
	}

	uint64_t unary()
	{
		if (eat("-"))
			return -unary();
		if (eat("~"))
			return ~unary();
		if (eat("+"))
			return unary();
		return primary();
	}

	uint64_t primary()
	{
		ws();
		if (eat("(")) {
			const uint64_t v = binary(0);
			if (!eat(")"))
				fail("missing ')'");
			return v;
		}
		const size_t start = i_;
		if (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
			while (i_ < s_.size() && ident_char(s_[i_], false))
				i_++;
			std::string_view t = s_.substr(start, i_ - start);
			int base = 10;
			if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
				base = 16, t.remove_prefix(2);
			else if (t.size() > 2 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B'))
				base = 2, t.remove_prefix(2);
			uint64_t v = 0;
			const auto r = std::from_chars(t.data(), t.data() + t.size(), v, base);
			if (r.ec == std::errc::result_out_of_range)
				fail("number " + std::string(s_.substr(start, i_ - start)) + " does not fit 64 bits");
			if (r.ec != std::errc() || r.ptr != t.data() + t.size())
				fail("bad number '" + std::string(s_.substr(start, i_ - start)) + "'");
			return v;
		}
		while (i_ < s_.size() && ident_char(s_[i_], i_ == start))
			i_++;
		if (i_ == start)
			fail(i_ < s_.size() ? "unexpected '" + std::string(s_.substr(i_)) + "' in expression"
					     : "missing operand in expression");
		const std::string name(s_.substr(start, i_ - start));
		const auto it = syms_.find(name);
		if (it == syms_.end())
			fail("undefined symbol '" + name + "'");
		return it->second;
	}

	std::string_view s_;
	size_t i_ = 0;
	const std::map<std::string, uint64_t> &syms_;
};

class Assembler {
public:
	explicit Assembler(const Options &opt) : opt_(opt) {}

	Program run(std::string_view src)
	{
		std::vector<std::string_view> lines;
		for (size_t pos = 0; pos <= src.size();) {
			size_t nl = src.find('\n', pos);
			if (nl == std::string_view::npos)
				nl = src.size();
			lines.push_back(src.substr(pos, nl - pos));
			pos = nl + 1;
		}
		for (int pass = 1; pass <= 2; pass++) {
			count_ = 0;
			for (line_ = 0; line_ < lines.size(); line_++)
				statement(lines[line_], pass);
		}
		at_end_ = true; // what follows is about the whole file
		close_segment();
		if (opt_.io_size)
			p_.meta.io_size = *opt_.io_size;
		if (opt_.nsps)
			p_.meta.nsp_count = *opt_.nsps;
		if (opt_.name)
			p_.meta.name = *opt_.name;
		if (!p_.meta.io_size)
			fail("no io_size (.io_size or --io-size)");
		if (p_.code.empty())
			fail("no instructions");
		return std::move(p_);
	}

	// 0 once past the last line.
	unsigned line() const { return at_end_ ? 0 : unsigned(line_ + 1); }

private:
	void statement(std::string_view text, int pass)
	{
		std::string_view s = trim(strip_comment(text));
		// Leading labels.
		for (;;) {
			const size_t colon = s.find(':');
			if (colon == std::string_view::npos || !is_ident(trim(s.substr(0, colon))))
				break;
			if (pass == 1)
				define(std::string(trim(s.substr(0, colon))), count_);
			s = trim(s.substr(colon + 1));
		}
		if (s.empty())
			return;
		size_t sp = 0;
		while (sp < s.size() && s[sp] != ' ' && s[sp] != '\t')
			sp++;
		const std::string word = lower(s.substr(0, sp));
		const std::string_view rest = trim(s.substr(sp));
		if (word[0] == '.') {
			directive(word, rest, pass);
			return;
		}
		const nsp::OpInfo *info = nsp::op_info(word);
		if (!info)
			fail("unknown instruction '" + std::string(s.substr(0, sp)) + "'");
		if (pass == 2) {
			p_.code.push_back(encode(*info, split_operands(rest)));
			p_.lines.push_back(line());
		}
		count_++;
	}

	void define(const std::string &name, uint64_t v)
	{
		if (p_.symbols.count(name))
			fail("'" + name + "' defined twice");
		if (nsp::op_info(name) || reg_number(name) >= 0)
			fail("'" + name + "' is an instruction or register name");
		p_.symbols[name] = v;
	}

	uint64_t value(std::string_view s)
	{
		return Expr(s, p_.symbols).eval();
	}

	uint64_t ranged(std::string_view s, uint64_t max, const char *what)
	{
		const uint64_t v = value(s);
		if (v > max)
			fail(std::string(what) + " " + std::to_string(v) + " above " + std::to_string(max));
		return v;
	}

	// A signed or unsigned value that fits `bits` bits.
	uint64_t fits(std::string_view s, unsigned bits)
	{
		const uint64_t v = value(s);
		const int64_t sv = int64_t(v);
		if (bits < 64 && !(v < (1ull << bits) || (sv < 0 && sv >= -(int64_t(1) << (bits - 1)))))
			fail("value " + std::string(s) + " does not fit " + std::to_string(bits) + " bits");
		return v;
	}

	int reg_number(const std::string &lname) const
	{
		if (lname.size() < 2 || lname.size() > 3 || lname[0] != 'r')
			return -1;
		int n = 0;
		for (size_t i = 1; i < lname.size(); i++) {
			if (lname[i] < '0' || lname[i] > '9')
				return -1;
			n = n * 10 + (lname[i] - '0');
		}
		if (lname.size() == 3 && lname[1] == '0')
			return -1;
		return n < int(nsp::kNumRegs) ? n : -1;
	}

	uint8_t reg(std::string_view s)
	{
		const std::string l = lower(trim(s));
		const auto alias = regs_.find(l);
		if (alias != regs_.end())
			return alias->second;
		const int n = reg_number(l);
		if (n < 0)
			fail("expected a register r0..r31, got '" + std::string(s) + "'");
		return uint8_t(n);
	}

	float f32(std::string_view s)
	{
		std::string t(trim(s));
		if (t.size() > 1 && (t.back() == 'f' || t.back() == 'F') && t[t.size() - 2] >= '0' &&
		    t[t.size() - 2] <= '9')
			t.pop_back();
		char *end = nullptr;
		errno = 0;
		const float v = std::strtof(t.c_str(), &end);
		if (t.empty() || *end != '\0')
			fail("expected a number, got '" + std::string(s) + "'");
		return v;
	}

	static uint64_t bits_of(float f)
	{
		uint32_t b;
		std::memcpy(&b, &f, 4);
		return b;
	}

	void count(const std::vector<std::string_view> &ops, size_t n, const char *name)
	{
		if (ops.size() != n)
			fail(std::string(name) + " takes " + std::to_string(n) + " operands, got " +
			     std::to_string(ops.size()));
	}

	Instr encode(const nsp::OpInfo &info, const std::vector<std::string_view> &ops)
	{
		Instr in{uint8_t(info.op), 0, 0, 0, 0, 0};
		const char *n = info.name;
		switch (info.form) {
		case Form::None:
			count(ops, 0, n);
			break;
		case Form::RegImm:
			count(ops, 2, n);
			in.a = reg(ops[0]);
			in.imm64 = value(ops[1]);
			break;
		case Form::Reg3:
			count(ops, 3, n);
			in.a = reg(ops[0]), in.b = reg(ops[1]), in.c = reg(ops[2]);
			break;
		case Form::Reg2Imm:
			count(ops, 3, n);
			in.a = reg(ops[0]), in.b = reg(ops[1]);
			in.imm64 = value(ops[2]);
			break;
		case Form::Jump:
			count(ops, 1, n);
			in.imm32 = uint32_t(ranged(ops[0], 0xFFFFFFFF, "target"));
			break;
		case Form::Branch:
			count(ops, 3, n);
			in.a = reg(ops[0]), in.b = reg(ops[1]);
			in.imm32 = uint32_t(ranged(ops[2], 0xFFFFFFFF, "target"));
			break;
		case Form::SemCond:
		case Form::SemValue:
			encode_semaphore(info, ops, in);
			break;
		default:
			encode_vector(info, ops, in);
			break;
		}
		return in;
	}

	// SEMWAIT sem, value, condition; SEMINC/DEC/SET sem, value.
	void encode_semaphore(const nsp::OpInfo &info, const std::vector<std::string_view> &ops, Instr &in)
	{
		const bool cond = info.form == Form::SemCond;
		count(ops, cond ? 3 : 2, info.name);
		in.a = uint8_t(ranged(ops[0], sem::kCount - 1, "semaphore"));
		in.imm32 = uint32_t(ranged(ops[1], sem::kMax, "semaphore value"));
		if (!cond)
			return;
		const std::string c = lower(ops[2]);
		if (c == "eq" || c == "==")
			in.b = 0;
		else if (c == "ge" || c == ">=")
			in.b = 1;
		else if (c == "gt0" || c == ">0" || c == "gt")
			in.b = 2;
		else
			in.b = uint8_t(ranged(ops[2], 2, "condition"));
	}

	// The vector and matrix forms: registers a, b, c, then a fourth
	// register or an immediate.
	void encode_vector(const nsp::OpInfo &info, const std::vector<std::string_view> &ops, Instr &in)
	{
		const char *n = info.name;
		auto abc = [&] { in.a = reg(ops[0]), in.b = reg(ops[1]), in.c = reg(ops[2]); };
		switch (info.form) {
		case Form::Reg4:
			count(ops, 4, n);
			abc();
			in.imm32 = reg(ops[3]);
			break;
		case Form::Reg3F32:
			count(ops, 4, n);
			abc();
			in.imm64 = bits_of(f32(ops[3]));
			break;
		case Form::Reg3Kind:
			count(ops, 4, n);
			abc();
			in.imm32 = activation_kind(ops[3]);
			break;
		case Form::Reg3Imm:
			count(ops, 4, n);
			abc();
			in.imm32 = uint32_t(ranged(ops[3], 0xFFFFFFFF, "value"));
			if (info.op == nsp::Op::BiasF && in.imm32 == 0)
				fail("BIASF needs at least one column");
			break;
		case Form::Reg3Mnk:
			if (ops.size() != 4 && ops.size() != 6)
				fail(std::string(n) + " takes C, A, B and M, N, K (or one packed value)");
			abc();
			in.imm64 = ops.size() == 4 ? value(ops[3]) : mnk(ops);
			break;
		case Form::Reg3Geom:
			if (ops.size() != 4 && ops.size() != 9)
				fail(std::string(n) + " takes dst, src, rows and H, W, C, K, stride, pad (or one packed value)");
			abc();
			in.imm64 = ops.size() == 4 ? value(ops[3]) : geom(ops);
			if (const std::string why = nsp::geom_problem(in.imm64); !why.empty())
				fail(std::string(n) + ": " + why);
			break;
		case Form::Reg4Imm:
			if (ops.size() != 5 && ops.size() != 8)
				fail(std::string(n) + " takes dst, x, y, n and MX, MY, SHIFT, RELU (or one packed value)");
			abc();
			in.imm32 = reg(ops[3]);
			in.imm64 = ops.size() == 5 ? value(ops[4]) : addq(ops);
			break;
		default:
			break;
		}
	}

	// ACTF's kind: a name or its number.
	uint32_t activation_kind(std::string_view op)
	{
		static const char *const kinds[] = {"relu", "sigmoid", "tanh", "gelu"};
		const std::string k = lower(op);
		const auto it = std::find(std::begin(kinds), std::end(kinds), k);
		return it != std::end(kinds) ? uint32_t(it - std::begin(kinds)) : uint32_t(ranged(op, 3, "activation kind"));
	}

	// M, N, K from operands 3..5, packed.
	uint64_t mnk(const std::vector<std::string_view> &ops)
	{
		uint64_t d[3];
		static const char *const names[] = {"M", "N", "K"};
		for (int i = 0; i < 3; i++) {
			d[i] = ranged(ops[3 + i], nsp::kMaxDim - 1, names[i]);
			if (!d[i])
				fail(std::string(names[i]) + " is 0");
		}
		return nsp::pack_mnk(d[0], d[1], d[2]);
	}

	// H, W, C, K, stride, pad from operands 3..8, packed.
	uint64_t geom(const std::vector<std::string_view> &ops)
	{
		nsp::Geom g;
		g.h = uint32_t(ranged(ops[3], nsp::kGeomMaxHwc, "H"));
		g.w = uint32_t(ranged(ops[4], nsp::kGeomMaxHwc, "W"));
		g.c = uint32_t(ranged(ops[5], nsp::kGeomMaxHwc, "C"));
		g.k = uint32_t(ranged(ops[6], nsp::kGeomMaxK, "K"));
		g.stride = uint32_t(ranged(ops[7], nsp::kGeomMaxStride, "stride"));
		g.pad = uint32_t(ranged(ops[8], nsp::kGeomMaxPad, "pad"));
		return nsp::pack_geom(g);
	}

	// MX, MY, SHIFT, RELU from operands 4..7, packed.
	uint64_t addq(const std::vector<std::string_view> &ops)
	{
		nsp::AddQ q;
		q.mx = uint32_t(ranged(ops[4], 0xFFFF, "MX"));
		q.my = uint32_t(ranged(ops[5], 0xFFFF, "MY"));
		q.shift = uint32_t(ranged(ops[6], nsp::kAddQMaxShift, "shift"));
		q.relu = ranged(ops[7], 1, "ReLU flag") != 0;
		return nsp::pack_addq(q);
	}

	nsp::Segment &segment(const std::string &dir)
	{
		if (!open_)
			fail(dir + " outside a .data segment");
		nsp::Segment &s = p_.segments.back();
		if (pending_) {
			s.data.resize(s.data.size() + pending_);
			pending_ = 0;
		}
		return s;
	}

	void close_segment()
	{
		if (!open_)
			return;
		nsp::Segment &s = p_.segments.back();
		s.memsz = s.data.size() + pending_;
		pending_ = 0;
		open_ = false;
		if (s.memsz == 0)
			p_.segments.pop_back();
	}

	uint64_t size_arg(std::string_view s, const std::string &dir)
	{
		const uint64_t v = value(s);
		if (v > nsp::kMaxIoSize)
			fail(dir + " " + std::to_string(v) + " is larger than any window");
		return v;
	}

	void data_values(const std::string &dir, std::string_view rest, unsigned bytes, bool real)
	{
		const auto ops = split_operands(rest);
		if (ops.empty())
			fail(dir + " needs values");
		nsp::Segment &s = segment(dir);
		for (std::string_view o : ops) {
			uint64_t v = real ? bits_of(f32(o)) : fits(o, bytes * 8);
			for (unsigned i = 0; i < bytes; i++)
				s.data.push_back(uint8_t(v >> (8 * i)));
		}
	}

	std::vector<uint8_t> read(const std::string &path)
	{
		std::string err;
		std::optional<std::vector<uint8_t>> data;
		if (opt_.read_file) {
			data = opt_.read_file(path, err);
		} else {
			std::filesystem::path p(path);
			if (p.is_relative())
				p = std::filesystem::path(opt_.filename).parent_path() / p;
			std::ifstream in(p, std::ios::binary);
			if (in)
				data.emplace(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
			if (!in && !in.eof())
				err = "cannot read " + p.string() + ": " + std::strerror(errno);
		}
		if (!data)
			fail(".file: " + (err.empty() ? "cannot read " + path : err));
		return std::move(*data);
	}

	void directive(const std::string &dir, std::string_view rest, int pass)
	{
		if (dir == ".equ" || dir == ".set") {
			if (pass == 2)
				return;
			const auto ops = split_operands(rest);
			if (ops.size() != 2 || !is_ident(ops[0]))
				fail(dir + " NAME, VALUE");
			define(std::string(ops[0]), value(ops[1]));
			return;
		}
		if (dir == ".insn") {
			if (pass == 2)
				raw_instruction(rest);
			count_++;
			return;
		}
		if (pass == 1)
			return;
		if (!meta_directive(dir, rest) && !data_directive(dir, rest))
			fail("unknown directive '" + dir + "'");
	}

	// .insn OP, A, B, C, IMM32, IMM64: an instruction given field by field.
	void raw_instruction(std::string_view rest)
	{
		const auto ops = split_operands(rest);
		if (ops.size() != 6)
			fail(".insn OP, A, B, C, IMM32, IMM64");
		p_.code.push_back(Instr{uint8_t(fits(ops[0], 8)), uint8_t(fits(ops[1], 8)), uint8_t(fits(ops[2], 8)),
					uint8_t(fits(ops[3], 8)), uint32_t(fits(ops[4], 32)), value(ops[5])});
		p_.lines.push_back(line());
	}

	// .reg and the program's .aic.meta fields; false for another directive.
	bool meta_directive(const std::string &dir, std::string_view rest)
	{
		if (dir == ".reg") {
			const auto ops = split_operands(rest);
			if (ops.size() != 2 || !is_ident(ops[0]))
				fail(".reg NAME, rN");
			const std::string l = lower(ops[0]);
			if (reg_number(l) >= 0 || nsp::op_info(l))
				fail("'" + std::string(ops[0]) + "' is an instruction or register name");
			regs_[l] = reg(ops[1]);
		} else if (dir == ".name") {
			p_.meta.name = unquote(rest);
			if (p_.meta.name.size() > nsp::kNameSize)
				fail("name longer than 24 bytes");
		} else if (dir == ".nsps") {
			p_.meta.nsp_count = uint16_t(ranged(rest, nsp::kMaxNsps, ".nsps"));
			if (!p_.meta.nsp_count)
				fail(".nsps 0");
		} else if (dir == ".io_size") {
			p_.meta.io_size = value(rest);
		} else if (dir == ".entry") {
			p_.meta.entry = uint32_t(ranged(rest, 0xFFFFFFFF, ".entry"));
		} else if (dir == ".const_offset") {
			p_.meta.const_offset = uint32_t(ranged(rest, 0xFFFFFFFF, ".const_offset"));
		} else if (dir == ".packed") {
			packed_region(rest);
		} else {
			return false;
		}
		return true;
	}

	// .packed OFFSET, K, N: the size is the layout's for that shape.
	void packed_region(std::string_view rest)
	{
		const auto ops = split_operands(rest);
		if (ops.size() != 3)
			fail(".packed OFFSET, K, N");
		const uint64_t k = value(ops[1]), n = value(ops[2]);
		if (!k || k >= nsp::kMaxDim || !n || n >= nsp::kMaxDim)
			fail(".packed: K and N must each be 1..2^21-1");
		p_.packed.push_back({value(ops[0]), nsp::packed_b_size(k, n), uint32_t(k), uint32_t(n)});
	}

	// The data segments and what goes in them; false for another directive.
	bool data_directive(const std::string &dir, std::string_view rest)
	{
		static const struct {
			const char *name;
			unsigned bytes;
			bool real;
		} kValues[] = {{".bytes", 1, false}, {".byte", 1, false}, {".i8", 1, false}, {".i16", 2, false},
			       {".i32", 4, false},   {".i64", 8, false},  {".u64", 8, false}, {".f32", 4, true}};
		for (const auto &v : kValues)
			if (dir == v.name) {
				data_values(dir, rest, v.bytes, v.real);
				return true;
			}
		if (dir == ".data") {
			close_segment();
			p_.segments.push_back({value(rest), {}, 0});
			open_ = true;
		} else if (dir == ".text") {
			close_segment();
		} else if (dir == ".zero") {
			const uint64_t n = size_arg(rest, dir);
			nsp::Segment &s = segment(dir);
			s.data.resize(s.data.size() + n);
		} else if (dir == ".space") {
			const uint64_t n = size_arg(rest, dir);
			if (!open_)
				fail(dir + " outside a .data segment");
			pending_ += n;
		} else if (dir == ".align") {
			align(size_arg(rest, dir));
		} else if (dir == ".file") {
			const auto bytes = read(unquote(rest));
			nsp::Segment &s = segment(dir);
			s.data.insert(s.data.end(), bytes.begin(), bytes.end());
		} else {
			return false;
		}
		return true;
	}

	// .align N: the open segment's next byte to a multiple of N.
	void align(uint64_t n)
	{
		if (!n || (n & (n - 1)))
			fail(".align needs a power of two");
		if (!open_)
			fail(".align outside a .data segment");
		const nsp::Segment &s = p_.segments.back();
		const uint64_t at = s.offset + s.data.size() + pending_;
		pending_ += (n - at % n) % n;
	}

	const Options &opt_;
	Program p_;
	std::map<std::string, uint8_t> regs_;
	size_t line_ = 0;
	bool at_end_ = false;
	uint64_t count_ = 0; // instructions so far in this pass
	bool open_ = false;  // a .data segment is open (the last one)
	uint64_t pending_ = 0;
};

} // namespace

std::optional<Program> assemble(std::string_view source, const Options &opt, std::string &err)
{
	Assembler a(opt);
	try {
		return a.run(source);
	} catch (const AsmError &e) {
		err = opt.filename + (a.line() ? ":" + std::to_string(a.line()) : "") + ": " + e.what();
	}
	return std::nullopt;
}

} // namespace aic100::nspasm
