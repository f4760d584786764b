// Long counted repetitions in the form the grammar engine answers fast. xgrammar unrolls a
// repetition of at most 128 into automaton states, whose token masks it precomputes at
// compile time; a larger count becomes a counter that it checks token by token at run time,
// for every step of every request in such a string (tens of milliseconds a mask over a 128k
// vocabulary). Nesting counts of at most 128 keeps the masks precomputed, at a compile cost
// per state (docs/benchmarks.md), hence a budget per schema.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::structured {

// The largest count the engine unrolls by itself.
inline constexpr int64_t kEngineUnrollLimit = 128;

// Automaton states `atom` (one character) repeated lo..hi times takes once unrolled
// (hi < 0: no upper bound).
int64_t unrolled_repeat_states(int64_t lo, int64_t hi);

// A regex matching exactly `atom` repeated lo..hi times (hi < 0: unbounded, else hi >= lo),
// every count in it at most kEngineUnrollLimit, unambiguous so the parser tracks at most two
// paths. atom must be one regex atom (a character class or a group).
std::string unrolled_repeat(const std::string& atom, int64_t lo, int64_t hi);

}  // namespace tessera::structured
