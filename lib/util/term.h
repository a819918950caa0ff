// Output for people: stderr, colour only when stderr is a terminal (and NO_COLOR is unset).
#pragma once
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace kf::term {

bool is_tty();  // stderr is a terminal
std::string green(std::string_view s);
std::string red(std::string_view s);
std::string yellow(std::string_view s);
std::string bold(std::string_view s);
std::string dim(std::string_view s);

void print_line(std::string_view line);  // to stderr, with a newline
// A progress line that rewrites itself on a terminal and prints nothing elsewhere.
void progress(std::string_view line);
// A step of a long job: the progress line on a terminal, a plain line in a log (CI shows where a run is).
void step(std::string_view line);
void end_progress();

template <typename... A>
void say(fmt::format_string<A...> f, A&&... a) {
  print_line(fmt::format(f, std::forward<A>(a)...));
}

}  // namespace kf::term
