#include "serve/publisher.hpp"

#include "exporter/state.hpp"

namespace ckptmon {

std::shared_ptr<const Snapshot> SnapshotPublisher::publish(const State& state,
                                                           std::shared_ptr<const RulesOutput> rules,
                                                           double now) {
  auto snap = std::make_shared<Snapshot>();
  snap->state = state;
  std::string text = state_text(state, catalogs_);
  if (rules) text += rules->metrics_text;
  snap->metrics_text = std::move(text);
  snap->rules = std::move(rules);
  snap->taken_at = now;
  return snap;
}

}  // namespace ckptmon
