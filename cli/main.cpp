#include "cli/cli.hpp"

int main(int argc, char** argv) { return ckptmon::cli_main(argc, argv); }
