// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-qpc: packs NSP workloads into program containers (QPCs) and reads
// them back (docs/qpc.md).
//
//   aic100-qpc --example NAME -o FILE        one example workload
//   aic100-qpc --examples DIR                every example: DIR/NAME/programqpc.bin
//   aic100-qpc --umd-test-data DIR           the examples and networks the open
//                                            UMD's tests name, at their paths
//                                            under DIR; the networks there
//                                            take a float input that the UMD
//                                            refuses to run (its adversarial
//                                            test needs that): --networks
//                                            writes the runnable copies
//   aic100-qpc --network NAME -o DIR         a compiled network (networks.h):
//                                            DIR/programqpc.bin and reference
//                                            pairs DIR/input.K.bin, output.K.bin
//   aic100-qpc --networks DIR                every network: DIR/NAME/...
//              [--references N]              pairs per network (default 2)
//   aic100-qpc --elf FILE --input T [--input T...] --output T [...]
//              [--sem-in N] [--sem-out N] [--constants FILE] -o FILE
//              T = NAME:TYPE:DIMS@OFFSET, e.g. x:f32:16x128@0x1000
//   aic100-qpc --inspect FILE                every field; exit 1 if refused
//   aic100-qpc --extract FILE SEGMENT -o OUT
//
// Exit status: 0 done, 1 a container refused or a build refused, 2 usage
// or I/O errors.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "examples.h"
#include "networks.h"
#include "program.h"

namespace fs = std::filesystem;
using namespace aic100;

namespace {

int usage(const char *why)
{
	if (why)
		std::fprintf(stderr, "aic100-qpc: %s\n", why);
	std::fprintf(stderr,
		     "usage: aic100-qpc --example NAME -o FILE\n"
		     "       aic100-qpc --examples DIR | --umd-test-data DIR\n"
		     "       aic100-qpc --network NAME -o DIR | --networks DIR [--references N]\n"
		     "       aic100-qpc --elf FILE --input NAME:TYPE:DIMS@OFFSET... --output NAME:TYPE:DIMS@OFFSET...\n"
		     "                  [--sem-in N] [--sem-out N] [--constants FILE] -o FILE\n"
		     "       aic100-qpc --inspect FILE\n"
		     "       aic100-qpc --extract FILE SEGMENT -o OUT\n"
		     "TYPE: f32 f16 i8 i8q u8q i16q i32q i32 i64 (or FloatTy, Int8Ty... of the network descriptor)\n");
	return 2;
}

bool read_file(const std::string &path, std::vector<uint8_t> &out)
{
	std::ifstream f(path, std::ios::binary);
	if (!f) {
		std::fprintf(stderr, "aic100-qpc: %s: %s\n", path.c_str(), std::strerror(errno));
		return false;
	}
	out.assign(std::istreambuf_iterator<char>(f), {});
	return true;
}

bool write_file(const fs::path &path, const std::vector<uint8_t> &data)
{
	std::error_code ec;
	if (path.has_parent_path())
		fs::create_directories(path.parent_path(), ec);
	std::ofstream f(path, std::ios::binary | std::ios::trunc);
	f.write(reinterpret_cast<const char *>(data.data()), std::streamsize(data.size()));
	f.close();
	if (!f) {
		std::fprintf(stderr, "aic100-qpc: cannot write %s\n", path.c_str());
		return false;
	}
	return true;
}

bool parse_u64(const std::string &s, uint64_t &v)
{
	if (s.empty())
		return false;
	char *end = nullptr;
	errno = 0;
	v = std::strtoull(s.c_str(), &end, 0);
	return errno == 0 && *end == '\0' && s[0] != '-';
}

bool parse_type(const std::string &s, netdesc::DataType &t)
{
	static const std::map<std::string, netdesc::DataType> alias = {
		{"f32", netdesc::FloatTy},   {"f16", netdesc::Float16Ty}, {"i8", netdesc::Int8Ty},
		{"i8q", netdesc::Int8QTy},   {"u8q", netdesc::UInt8QTy},  {"i16q", netdesc::Int16QTy},
		{"i32q", netdesc::Int32QTy}, {"i32", netdesc::Int32ITy},  {"i64", netdesc::Int64ITy}};
	if (const auto it = alias.find(s); it != alias.end()) {
		t = it->second;
		return true;
	}
	return netdesc::DataType_Parse(s, &t);
}

// NAME:TYPE:DIMS@OFFSET
bool parse_tensor(const std::string &s, qpc::Tensor &t, std::string &why)
{
	const size_t c1 = s.find(':'), c2 = s.find(':', c1 == std::string::npos ? 0 : c1 + 1), at = s.rfind('@');
	if (c1 == std::string::npos || c2 == std::string::npos || at == std::string::npos || at < c2) {
		why = "\"" + s + "\" is not NAME:TYPE:DIMS@OFFSET";
		return false;
	}
	t.name = s.substr(0, c1);
	if (!parse_type(s.substr(c1 + 1, c2 - c1 - 1), t.type)) {
		why = "\"" + s + "\": unknown type";
		return false;
	}
	std::string dims = s.substr(c2 + 1, at - c2 - 1);
	t.dims.clear();
	for (size_t p = 0; p <= dims.size();) {
		size_t x = dims.find('x', p);
		if (x == std::string::npos)
			x = dims.size();
		uint64_t d;
		if (!parse_u64(dims.substr(p, x - p), d) || d == 0 || d > 0x7FFFFFFF) {
			why = "\"" + s + "\": dims must be positive numbers joined by x";
			return false;
		}
		t.dims.push_back(int32_t(d));
		p = x + 1;
	}
	if (!parse_u64(s.substr(at + 1), t.dev_offset)) {
		why = "\"" + s + "\": bad offset";
		return false;
	}
	return true;
}

int build_example(const workloads::Example &e, const fs::path &out)
{
	std::string err;
	const auto spec = qpc::example_spec(e, err);
	const auto file = spec ? qpc::build_qpc(*spec, err) : std::nullopt;
	if (!file) {
		std::fprintf(stderr, "aic100-qpc: %s: %s\n", e.layout.name.c_str(), err.c_str());
		return 1;
	}
	return write_file(out, *file) ? 0 : 2;
}

// A network's container into `dir`, and its reference pairs unless the
// input is the float one (the pairs are the card's int8 tensors).
int build_network(const qpc::NetworkProgram &p, const fs::path &dir, uint64_t references,
		  qpc::InputForm input = qpc::InputForm::Plain)
{
	std::string err;
	const auto file = qpc::build_network_qpc(p, err, input);
	if (!file) {
		std::fprintf(stderr, "aic100-qpc: %s: %s\n", p.name.c_str(), err.c_str());
		return 1;
	}
	if (!write_file(dir / "programqpc.bin", *file))
		return 2;
	if (input != qpc::InputForm::Plain)
		return 0;
	for (const qpc::ReferencePair &r : qpc::reference_files(qpc::network_of(p), unsigned(references)))
		if (!write_file(dir / r.input_file, r.input) || !write_file(dir / r.output_file, r.output))
			return 2;
	return 0;
}

// The command line.
struct Options {
	std::string example, examples_dir, umd_dir, network, networks_dir, elf, inspect, extract, segment, out,
		constants;
	uint64_t references = 2;
	std::vector<std::string> inputs, outputs;
	uint64_t sem_in = 0, sem_out = 1;
};

// The arguments after an option, taken one at a time.
class Values {
public:
	Values(const std::vector<std::string> &args, size_t &i) : args_(args), i_(i) {}

	bool next(std::string &dst)
	{
		if (i_ + 1 >= args_.size())
			return false;
		dst = args_[++i_];
		return true;
	}

	bool next_u64(uint64_t &dst, uint64_t below)
	{
		std::string v;
		return next(v) && parse_u64(v, dst) && dst < below;
	}

private:
	const std::vector<std::string> &args_;
	size_t &i_;
};

struct Option {
	const char *name;
	// Takes the option's values into the options; false when one is
	// missing or invalid.
	bool (*take)(Options &o, Values &v);
	// --input and --output without a value read as unknown arguments.
	bool unknown_without_value = false;
};

const Option kOptions[] = {
	{"--example", [](Options &o, Values &v) { return v.next(o.example); }},
	{"--examples", [](Options &o, Values &v) { return v.next(o.examples_dir); }},
	{"--network", [](Options &o, Values &v) { return v.next(o.network); }},
	{"--networks", [](Options &o, Values &v) { return v.next(o.networks_dir); }},
	{"--references", [](Options &o, Values &v) { return v.next_u64(o.references, 101); }},
	{"--umd-test-data", [](Options &o, Values &v) { return v.next(o.umd_dir); }},
	{"--elf", [](Options &o, Values &v) { return v.next(o.elf); }},
	{"--inspect", [](Options &o, Values &v) { return v.next(o.inspect); }},
	{"--extract", [](Options &o, Values &v) { return v.next(o.extract) && v.next(o.segment); }},
	{"-o", [](Options &o, Values &v) { return v.next(o.out); }},
	{"--out", [](Options &o, Values &v) { return v.next(o.out); }},
	{"--constants", [](Options &o, Values &v) { return v.next(o.constants); }},
	{"--input", [](Options &o, Values &v) { return v.next(o.inputs.emplace_back()); }, true},
	{"--output", [](Options &o, Values &v) { return v.next(o.outputs.emplace_back()); }, true},
	{"--sem-in", [](Options &o, Values &v) { return v.next_u64(o.sem_in, 32); }},
	{"--sem-out", [](Options &o, Values &v) { return v.next_u64(o.sem_out, 32); }},
};

// `o` from the arguments; an exit status when there is nothing more to do
// (help, or a usage error).
std::optional<int> parse_options(const std::vector<std::string> &args, Options &o)
{
	for (size_t i = 0; i < args.size(); i++) {
		const std::string &a = args[i];
		if (a == "-h" || a == "--help")
			return usage(nullptr), 0;
		const Option *opt = std::find_if(std::begin(kOptions), std::end(kOptions),
						 [&a](const Option &x) { return a == x.name; });
		if (opt == std::end(kOptions))
			return usage(("unknown argument " + a).c_str());
		Values v(args, i);
		if (!opt->take(o, v))
			return usage((opt->unknown_without_value ? "unknown argument " + a : a + " needs a (valid) value")
					     .c_str());
	}
	return std::nullopt;
}

// --network NAME -o DIR
int run_network(const Options &o)
{
	const qpc::NetworkProgram *p = qpc::find_network(o.network);
	if (!p)
		return usage(("no network named " + o.network).c_str());
	if (o.out.empty())
		return usage("--network needs -o DIR");
	return build_network(*p, o.out, o.references);
}

// --networks DIR
int run_networks(const Options &o)
{
	int rc = 0;
	for (const qpc::NetworkProgram &p : qpc::network_programs())
		rc = std::max(rc, build_network(p, fs::path(o.networks_dir) / p.name, o.references));
	return rc;
}

// --inspect FILE, --extract FILE SEGMENT -o OUT
int run_read(const Options &o)
{
	std::vector<uint8_t> file;
	if (!read_file(o.inspect.empty() ? o.extract : o.inspect, file))
		return 2;
	std::string err;
	const auto p = qpc::read_qpc(file, err);
	if (!p) {
		std::fprintf(stderr, "aic100-qpc: refused: %s\n", err.c_str());
		return 1;
	}
	if (!o.inspect.empty()) {
		std::fputs(qpc::describe(*p).c_str(), stdout);
		return 0;
	}
	if (o.out.empty())
		return usage("--extract needs -o");
	const qpc::Segment *s = p->container.find(o.segment);
	if (!s) {
		std::fprintf(stderr, "aic100-qpc: no segment %s\n", o.segment.c_str());
		return 1;
	}
	return write_file(o.out, s->data) ? 0 : 2;
}

// --example NAME -o FILE
int run_example(const Options &o)
{
	const workloads::Example *e = workloads::find(o.example);
	if (!e)
		return usage(("no example named " + o.example).c_str());
	if (o.out.empty())
		return usage("--example needs -o");
	return build_example(*e, o.out);
}

// --examples DIR, --umd-test-data DIR
int run_examples(const Options &o)
{
	const bool umd = !o.umd_dir.empty();
	int rc = 0;
	for (const workloads::Example &e : workloads::examples()) {
		const std::string sub = umd ? qpc::umd_test_dir(e.layout.name) : e.layout.name;
		if (sub.empty())
			continue;
		rc = std::max(rc, build_example(e, fs::path(umd ? o.umd_dir : o.examples_dir) / sub / "programqpc.bin"));
	}
	if (umd)
		for (const qpc::NetworkProgram &p : qpc::network_programs())
			if (!p.umd_dir.empty())
				rc = std::max(rc, build_network(p, fs::path(o.umd_dir) / p.umd_dir, o.references,
								qpc::InputForm::FloatQuantized));
	return rc;
}

// --elf FILE --input T... --output T... -o FILE
int run_elf(const Options &o)
{
	if (o.out.empty())
		return usage("--elf needs -o");
	qpc::ProgramSpec spec;
	if (!read_file(o.elf, spec.elf) || (!o.constants.empty() && !read_file(o.constants, spec.constants)))
		return 2;
	spec.sem_in = unsigned(o.sem_in);
	spec.sem_out = unsigned(o.sem_out);
	std::string why;
	for (const auto *list : {&o.inputs, &o.outputs})
		for (const std::string &s : *list) {
			qpc::Tensor t;
			if (!parse_tensor(s, t, why))
				return usage(why.c_str());
			(list == &o.inputs ? spec.inputs : spec.outputs).push_back(t);
		}
	const auto file = qpc::build_qpc(spec, why);
	if (!file) {
		std::fprintf(stderr, "aic100-qpc: %s\n", why.c_str());
		return 1;
	}
	return write_file(o.out, *file) ? 0 : 2;
}

// The modes, each named by one option, and what runs each.
const struct {
	std::string Options::*given;
	int (*run)(const Options &);
} kModes[] = {
	{&Options::example, run_example}, {&Options::examples_dir, run_examples}, {&Options::umd_dir, run_examples},
	{&Options::elf, run_elf},         {&Options::inspect, run_read},          {&Options::extract, run_read},
	{&Options::network, run_network}, {&Options::networks_dir, run_networks},
};

} // namespace

int main(int argc, char **argv)
{
	Options o;
	if (const auto rc = parse_options(std::vector<std::string>(argv + 1, argv + argc), o))
		return *rc;
	const auto given = [&o](const auto &m) { return !(o.*m.given).empty(); };
	if (std::count_if(std::begin(kModes), std::end(kModes), given) != 1)
		return usage("give exactly one of --example, --examples, --umd-test-data, --network, --networks, --elf, "
			     "--inspect, --extract");
	return std::find_if(std::begin(kModes), std::end(kModes), given)->run(o);
}
