#pragma once
// A sample value as Prometheus writes one (the text exposition format, its
// HTTP API's strings, alert values): the shortest text that reads back the
// same double ("0.05", "3600", "1e+21"), "+Inf", "-Inf", "NaN". The one
// formatter of such values; pure.

#include <string>

namespace ckptmon {

std::string prom_value(double v);

}  // namespace ckptmon
