#pragma once
// gzip for scrapes: Prometheus asks every scrape with Accept-Encoding: gzip.

#include <string>
#include <string_view>

namespace ckptmon {

// One gzip member (RFC 1952) holding `in`, at zlib's fastest level: metrics
// text still shrinks about tenfold. Members concatenate: a reader decodes
// a + b as the concatenation of their texts.
std::string gzip_compress(std::string_view in);

// Whether an Accept-Encoding value admits gzip: a "gzip" (or "*") coding
// whose q is not 0. Case-insensitive; an empty value admits nothing.
bool accepts_gzip(std::string_view accept_encoding);

}  // namespace ckptmon
