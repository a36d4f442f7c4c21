#pragma once
// The version and the build's git revision, defined in the generated
// util/version.cpp (from util/version.cpp.in), so a new commit recompiles
// that one file, not every file that prints the version.
namespace ckptmon {
extern const char* const kVersion;
extern const char* const kRevision;
}  // namespace ckptmon
