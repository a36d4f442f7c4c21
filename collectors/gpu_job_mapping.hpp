#pragma once
// The per-GPU job files dcgm-exporter reads from DCGM_HPC_JOB_MAPPING_DIR:
// one file per GPU, named by its index, holding the job id(s) running on it
// (one per line or separated by white space), written by a Slurm prolog and
// removed (or emptied) by its epilog. Blocking; runs on the GPU worker.

#include <map>
#include <string>
#include <vector>

namespace ckptmon {

// Bounds: a file larger than this, or naming more jobs, is rejected whole.
inline constexpr std::size_t kMaxJobMappingFileBytes = 4096;
inline constexpr std::size_t kMaxJobsPerGpu = 8;

struct JobMappingRead {
  // GPU index -> job ids (sanitised); an empty list: the file says no job.
  std::map<unsigned, std::vector<std::string>> jobs;
  // One located message per rejected file or directory problem:
  // "<path>: <what>".
  std::vector<std::string> errors;
};

// Reads every file in `dir` whose name is a GPU index below kMaxGpus (other
// names are ignored: dot files, editors' backups). Never follows a symlink,
// never blocks on a FIFO. An empty file means "no job" and is reported.
JobMappingRead read_job_mapping_dir(const std::string& dir);

}  // namespace ckptmon
