// SPDX-License-Identifier: GPL-2.0-or-later
// The profile of a run on the interpreter (profile.h).
#include "profile.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace aic100::compiler::profile {

namespace {

using nsp::Op;

std::string fmt(const char *f, double v)
{
	char buf[64];
	std::snprintf(buf, sizeof(buf), f, v);
	return buf;
}

std::string quoted(const std::string &s)
{
	std::string r = "\"";
	for (char ch : s) {
		if (ch == '"' || ch == '\\')
			r += '\\';
		if (uint8_t(ch) >= 0x20)
			r += ch;
	}
	return r + "\"";
}

std::string times_json(const Times &t)
{
	std::string r;
	for (unsigned w = 0; w < kWorks; w++)
		r += std::string(w ? ", " : "") + quoted(work_name(w)) + ": " + fmt("%.6f", t.s[w]);
	return r;
}

// MACs of one execution of a GEMM instruction.
uint64_t gemm_macs(const nsp::Instr &in)
{
	if (Op(in.op) != Op::MmI8 && Op(in.op) != Op::MmF32 && Op(in.op) != Op::MmI8P)
		return 0;
	const nsp::Mnk s = nsp::unpack_mnk(in.imm64);
	return s.m * s.n * s.k;
}

// Core k's instructions into the layers' rows (the loop's last but one)
// and its own times; returns its GEMMs' MACs.
uint64_t add_core(const Compiled &c, const nsp_run::Profile::Core &pc, Report &r, Times &own)
{
	uint64_t macs = 0;
	const size_t loop = r.layers.size() - 2;
	for (size_t i = 0; i < c.code.size() && i < pc.ns.size(); i++) {
		const int32_t li = c.layer_of[i];
		Report::Layer &l = r.layers[li < 0 ? loop : size_t(li)];
		const double s = double(pc.ns[i]) * 1e-9;
		const Work w = work_of(c.code[i].op);
		l.t.s[w] += s;
		own.s[w] += s;
		r.ops[c.code[i].op].seconds += s;
		r.ops[c.code[i].op].count += pc.count[i];
		const uint64_t m = gemm_macs(c.code[i]) * pc.count[i];
		l.gemm_macs += m;
		macs += m;
	}
	return macs;
}

// Per opcode that ran: its seconds and executions.
std::string ops_json(const Report &r)
{
	std::string j;
	for (unsigned op = 0; op < r.ops.size(); op++) {
		const nsp::OpInfo *info = nsp::op_info(uint8_t(op));
		if (!info || !r.ops[op].count)
			continue;
		j += std::string(j.empty() ? "\n" : ",\n") + "    " + quoted(info->name) + ": {\"seconds\": " +
		     fmt("%.6f", r.ops[op].seconds) + ", \"count\": " + std::to_string(r.ops[op].count) + "}";
	}
	return j;
}

} // namespace

const char *work_name(unsigned w)
{
	static const char *const names[kWorks] = {"gemm", "move", "elementwise", "wait", "other"};
	return w < kWorks ? names[w] : "?";
}

Work work_of(uint8_t op)
{
	switch (Op(op)) {
	case Op::MmI8:
	case Op::MmF32:
	case Op::MmI8P:
		return Gemm;
	case Op::Copy:
	case Op::Im2Col:
	case Op::Ld:
	case Op::St:
	case Op::Ld32:
	case Op::St32:
		return Move;
	case Op::VAddF:
	case Op::VMulF:
	case Op::VAddI8:
	case Op::VScaleF:
	case Op::ActF:
	case Op::SumF:
	case Op::MaxF:
	case Op::BiasF:
	case Op::CvtI32F:
	case Op::MaxPoolI8:
	case Op::ReqI8:
	case Op::VAddQI8:
		return Elementwise;
	case Op::SemWait:
		return Wait;
	default:
		return Other;
	}
}

double Times::total() const
{
	double t = 0;
	for (double v : s)
		t += v;
	return t;
}

Times &Times::operator+=(const Times &o)
{
	for (unsigned w = 0; w < kWorks; w++)
		s[w] += o.s[w];
	return *this;
}

Report make_report(const Network &n, const Compiled &c, const nsp_run::Profile &p, unsigned resolution,
		   uint64_t inferences, double seconds)
{
	Report r;
	r.resolution = resolution;
	r.nsps = unsigned(p.cores.size());
	r.inferences = inferences;
	r.seconds = seconds;
	for (size_t i = 0; i < n.layers.size(); i++)
		r.layers.push_back({n.layers[i].name, kind_name(n.layers[i].kind), n.layer_macs(i), 0, {}});
	r.layers.push_back({"(loop)", "loop", 0, 0, {}});
	r.layers.push_back({"(switching)", "threads", 0, 0, {}});
	r.threads.resize(p.threads.size());
	const double per = inferences ? 1.0 / double(inferences) : 0;
	for (size_t k = 0; k < p.cores.size(); k++) {
		Times own;
		const uint64_t macs = uint64_t(double(add_core(c, p.cores[k], r, own)) * per + 0.5);
		r.cores.push_back(own);
		Report::Thread &t = r.threads.at(p.cores[k].thread);
		t.nsps.push_back(unsigned(k));
		t.t += own;
		t.gemm_macs += macs;
		r.gemm_macs += macs;
	}
	for (size_t i = 0; i < p.threads.size(); i++) {
		Report::Thread &t = r.threads[i];
		t.wall = double(p.threads[i].wall_ns) * 1e-9;
		t.cpu = double(p.threads[i].cpu_ns) * 1e-9;
		t.idle = double(p.threads[i].idle_ns) * 1e-9;
		const double rest = std::max(0.0, t.wall - t.t.total());
		t.t.s[Other] += rest;
		r.layers.back().t.s[Other] += rest;
		r.total += t.t;
	}
	for (Report::Layer &l : r.layers)
		l.gemm_macs = uint64_t(double(l.gemm_macs) * per + 0.5);
	r.macs = n.macs();
	return r;
}

std::string to_json(const Report &r)
{
	std::string j = "{\n  \"resolution\": " + std::to_string(r.resolution) +
			",\n  \"nsps\": " + std::to_string(r.nsps) +
			",\n  \"host_threads\": " + std::to_string(r.threads.size()) +
			",\n  \"inferences\": " + std::to_string(r.inferences) + ",\n  \"seconds\": " +
			fmt("%.6f", r.seconds) + ",\n  \"inferences_per_s\": " +
			fmt("%.3f", r.seconds > 0 ? double(r.inferences) / r.seconds : 0) +
			",\n  \"unit\": \"seconds over the whole run; MACs per inference\",\n  \"threads\": [\n";
	for (size_t i = 0; i < r.threads.size(); i++) {
		const Report::Thread &t = r.threads[i];
		std::string ks;
		for (unsigned k : t.nsps)
			ks += (ks.empty() ? "" : ", ") + std::to_string(k);
		j += "    {\"thread\": " + std::to_string(i) + ", \"nsps\": [" + ks + "], \"wall\": " +
		     fmt("%.6f", t.wall) + ", \"cpu\": " + fmt("%.6f", t.cpu) + ", \"idle\": " + fmt("%.6f", t.idle) +
		     ", \"gemm_macs\": " + std::to_string(t.gemm_macs) + ", " + times_json(t.t) + "}" +
		     (i + 1 < r.threads.size() ? ",\n" : "\n");
	}
	j += "  ],\n  \"nsp_times\": [\n";
	for (size_t k = 0; k < r.cores.size(); k++)
		j += "    {\"nsp\": " + std::to_string(k) + ", " + times_json(r.cores[k]) + "}" +
		     (k + 1 < r.cores.size() ? ",\n" : "\n");
	j += "  ],\n  \"layers\": [\n";
	for (size_t i = 0; i < r.layers.size(); i++) {
		const Report::Layer &l = r.layers[i];
		j += "    {\"name\": " + quoted(l.name) + ", \"kind\": " + quoted(l.kind) +
		     ", \"macs\": " + std::to_string(l.macs) + ", \"gemm_macs\": " + std::to_string(l.gemm_macs) +
		     ", " + times_json(l.t) + "}" + (i + 1 < r.layers.size() ? ",\n" : "\n");
	}
	j += "  ],\n  \"ops\": {" + ops_json(r) + "\n  },\n  \"totals\": {\"macs\": " + std::to_string(r.macs) +
	     ", \"gemm_macs\": " + std::to_string(r.gemm_macs) + ", " + times_json(r.total) + "}\n}\n";
	return j;
}

namespace {

// One row of the table: the name, ms per inference per kind, the total,
// and the GEMMs' GOP/s per thread.
std::string row(const std::string &name, const Times &t, uint64_t gemm_macs, double per)
{
	char buf[160];
	const double gops = t.s[Gemm] > 0 ? 2.0 * double(gemm_macs) / (t.s[Gemm] * per) / 1e9 : 0;
	std::snprintf(buf, sizeof(buf), "%-26s %8.2f %8.2f %8.2f %8.2f %8.2f %9.2f %8.1f\n", name.c_str(),
		      t.s[Gemm] * per * 1e3, t.s[Move] * per * 1e3, t.s[Elementwise] * per * 1e3,
		      t.s[Wait] * per * 1e3, t.s[Other] * per * 1e3, t.total() * per * 1e3, gops);
	return buf;
}

// The layers merged by the part of their names before the first dot
// (ResNet-50's stages), in order.
std::vector<Report::Layer> stages(const std::vector<Report::Layer> &layers)
{
	std::vector<Report::Layer> out;
	for (const Report::Layer &l : layers) {
		const std::string key = l.name.substr(0, l.name.find('.'));
		if (out.empty() || out.back().name != key)
			out.push_back({key, l.kind, 0, 0, {}});
		out.back().macs += l.macs;
		out.back().gemm_macs += l.gemm_macs;
		out.back().t += l.t;
	}
	return out;
}

} // namespace

std::string table(const Report &r)
{
	const double per = r.inferences ? 1.0 / double(r.inferences) : 0;
	std::string s = "profile, " + std::to_string(r.resolution) + "x" + std::to_string(r.resolution) + " on " +
			std::to_string(r.nsps) + " NSPs (" + std::to_string(r.threads.size()) +
			" host threads), ms per inference summed over the threads (by layer in the JSON):\n";
	s += std::string("stage                      ") + "     gemm     move  elemwise    wait    other     total  GEMM GOP/s\n";
	for (const Report::Layer &l : stages(r.layers))
		if (l.t.total() > 0)
			s += row(l.name, l.t, l.gemm_macs, per);
	for (size_t i = 0; i < r.threads.size(); i++)
		s += row("thread " + std::to_string(i), r.threads[i].t, r.threads[i].gemm_macs, per);
	s += row("total", r.total, r.gemm_macs, per);
	for (size_t i = 0; i < r.threads.size(); i++) {
		const Report::Thread &t = r.threads[i];
		std::string ks;
		for (unsigned k : t.nsps)
			ks += " " + std::to_string(k);
		char buf[160];
		std::snprintf(buf, sizeof(buf), "thread %zu (NSPs%s): wall %.2f ms, on a CPU %.2f, asleep with every core blocked %.2f\n",
			      i, ks.c_str(), t.wall * per * 1e3, t.cpu * per * 1e3, t.idle * per * 1e3);
		s += buf;
	}
	return s;
}

} // namespace aic100::compiler::profile
