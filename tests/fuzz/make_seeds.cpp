// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// Writes the seed corpora of the fuzz targets: well-formed inputs built the
// way the unit tests build their MADs and commands, in each target's input
// format (see the comment at the top of each tests/fuzz/fuzz_*.cpp).
//
//   build-fuzz/tests/fuzz/fuzz_make_seeds tests/fuzz/seeds
//
// Each seed is written as <dir>/<target>/<name>. LIDs, P_Keys and the
// attributes a Set writes back come from the same brought-up default
// subnet the targets use (fuzz::Fixture), so the seeds reach deep paths:
// responses that match, RMPP windows that open, QPs that reach RTS. Run a
// target on one seed with IBEMU_FUZZ_TRACE=1 to see what each step did.
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/seeds.h"

#include "fabric/topology.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace ibemu;
using namespace ibemu::fabric;
using namespace ibemu::fuzz::seeds;
namespace fs = std::filesystem;

namespace {

fs::path outDir;
unsigned written = 0;

} /* namespace */

void ibemu::fuzz::seeds::put(const std::string &target, const std::string &name, const Bytes &b)
{
	fs::path dir = outDir / target;
	fs::create_directories(dir);
	std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
	f.write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
	if (!f) {
		fprintf(stderr, "cannot write %s\n", (dir / name).c_str());
		exit(1);
	}
	written++;
}

/* ------------------------------------------------------------ topology */

void ibemu::fuzz::seeds::topologySeeds()
{
	for (const auto &e : fs::directory_iterator(fs::path(IBEMU_TEST_DATA) / "topology")) {
		if (e.path().extension() == ".md")
			continue;
		std::ifstream f(e.path(), std::ios::binary);
		std::stringstream ss;
		ss << f.rdbuf();
		std::string s = ss.str();
		put("topology", e.path().filename().string(), Bytes(s.begin(), s.end()));
	}
	auto text = [](const std::string &name, std::string_view s) {
		put("topology", name, Bytes(s.begin(), s.end()));
	};
	text("default", defaultTopology());
	/* the fixtures are copied next to the target (tests/fuzz/run.sh) */
	text("include", "include \"net.1\"\n\nCa 1 \"Extra\"\n[1] \"Switch1\"[8]\n");
	text("module-alias",
	     "module=\"left\"\nSwitch 4 \"S\"\n@[4] \"@uplink\"\n[1] \"H\"[1]\n\n"
	     "Ca 1 \"H\"\n[1] \"S\"[1]\n\nmodule=\"\"\nSwitch 4 \"Core\"\n[1] \"left#@uplink\"\n");
	text("masks",
	     "width=3\nspeed=7\nextspeed=15\nSwitch 8 \"S1\" # \"sw\" enhanced port 0 lid 5 lmc 1\n"
	     "[1] \"H1\"[1] w=1 s=1 e=0 # \"h\" lid 9 12xHDR\n[2] \"R1\"[1] # 1xFDR10\n\n"
	     "caguid=0x1234\nsysimgguid=0x99\nCa 2 \"H1\" # \"host one\"\n"
	     "[1](1235) \"S1\"[1] # lid 9 lmc 2 \"sw\" lid 5 4xNDR\n\n"
	     "rtguid=0x0\nRt 1 \"R1\"\n[1] \"S1\"[2]\n");
	text("ibnetdiscover-g",
	     "#\n# Topology file: generated\n#\nNon-Chassis Nodes\n\nHostname: x\n"
	     "vendid=0x2c9\ndevid=0xb924\nsysimgguid=0x2c90200000001\nswitchguid=0x2c90200000001(2c90200000001)\n"
	     "Switch\t2 \"S-0002c90200000001\"\t\t# \"sw\" base port 0 lid 1 lmc 0\n"
	     "[1]\t\"H-0002c90300000100\"[1](2c90300000101) \t\t# \"h\" lid 2 4xQDR\n\n"
	     "caguid=0x2c90300000100\nCa\t1 \"H-0002c90300000100\"\t\t# \"h\"\n"
	     "[1](2c90300000101) \t\"S-0002c90200000001\"[1]\t\t# lid 2 lmc 0 \"sw\" lid 1 4xQDR\n");
	text("ibsim-commands",
	     "do link Switch1 1\npdebug=1\nSwitch 2 \"A\"\n[1] \"B\"[1]\nSwitch 2 \"B\"\n[1] \"A\"[1]\n[2] \"A\"\n");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s SEEDS_DIR (tests/fuzz/seeds)\n", argv[0]);
		return 2;
	}
	outDir = argv[1];
	fuzz::initOnce();
	topologySeeds();
	madSeeds();
	umadSeeds();
	rmppSeeds();
	uverbsSeeds();
	ucmaSeeds();
	controlSeeds();
	printf("%u seeds written under %s\n", written, outDir.c_str());
	return 0;
}
