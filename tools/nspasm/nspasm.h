// SPDX-License-Identifier: GPL-2.0-or-later
// The NSP assembler and the workload ELF writer (docs/nsp.md). The syntax:
//
//   ; comment (also # and //)       label:   .equ NAME, EXPR   .reg NAME, rN
//   .name "x"  .nsps N  .io_size EXPR  .entry EXPR  .const_offset EXPR
//   .data EXPR    (opens a data segment at that window offset, then:)
//     .bytes/.i8/.i16/.i32/.i64 EXPR, ...   .f32 FLOAT, ...
//     .zero N  .space N (zeros; trailing .space costs no file bytes)
//     .align N  .file "PATH" (relative to the source file)
//   .text          (closes the data segment)
//   .packed OFFSET, K, N   (a K×N B in MMI8P's layout at that window
//                           offset: an entry of .aic.packed)
//   .insn OP, A, B, C, IMM32, IMM64   (any 16 bytes)
//
// Instructions use the mnemonics of docs/nsp.md, registers r0..r31 (or
// .reg aliases), integer expressions (+ - * / % << >> & | ^ ~ and
// parentheses over numbers, labels and .equ symbols):
//
//   LI r3, IN + 4*64         VADDF r3, r4, r5, r6      SEMWAIT 0, 1, ge
//   VSCALEF r3, r4, r5, 0.5  ACTF r3, r3, r5, relu     MMF32 r3, r4, r5, M, N, K
#pragma once

#include <aic100/nsp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace aic100::nspasm {

struct Program {
	nsp::Meta meta;
	std::vector<nsp::Instr> code;
	std::vector<nsp::Segment> segments;
	std::vector<nsp::PackedRegion> packed; // .packed
	std::map<std::string, uint64_t> symbols; // labels (instruction index) and .equ
	std::vector<unsigned> lines;             // source line of each instruction
};

struct Options {
	std::string filename = "<input>"; // for messages and relative .file paths
	// Reads a .file operand; by default from the file system, relative to
	// the directory of `filename`. nullopt with a message in `err`.
	std::function<std::optional<std::vector<uint8_t>>(const std::string &path, std::string &err)> read_file;
	// Override the source's directives (the command line's options).
	std::optional<uint64_t> io_size;
	std::optional<uint16_t> nsps;
	std::optional<std::string> name;
};

// nullopt with "file:line: message" in `err`. The result has io_size set
// (from the source or the options) but is otherwise unchecked: write_elf()
// validates it as a whole.
std::optional<Program> assemble(std::string_view source, const Options &opt, std::string &err);

// The workload ELF: ELF64 LE, EM_QDSP6, ET_EXEC; sections .aic.meta,
// .aic.text, .shstrtab and, with packed regions, .aic.packed; one
// non-executable PT_LOAD per segment. The result is checked with
// nsp::parse(), so what this returns is loadable.
std::optional<std::vector<uint8_t>> write_elf(const nsp::Meta &meta, std::span<const nsp::Instr> code,
					      std::span<const nsp::Segment> segments, std::string &err);
std::optional<std::vector<uint8_t>> write_elf(const nsp::Meta &meta, std::span<const nsp::Instr> code,
					      std::span<const nsp::Segment> segments,
					      std::span<const nsp::PackedRegion> packed, std::string &err);
std::optional<std::vector<uint8_t>> write_elf(const Program &p, std::string &err);

// assemble() then write_elf().
std::optional<std::vector<uint8_t>> assemble_elf(std::string_view source, const Options &opt, std::string &err);

// "index: disassembly" lines of a program.
std::string listing(std::span<const nsp::Instr> code);

} // namespace aic100::nspasm
