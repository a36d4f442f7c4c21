#pragma once
// The `ckptmon` command line: subcommands and Prometheus-style flags.

namespace ckptmon {

int cli_main(int argc, char** argv);

}  // namespace ckptmon
