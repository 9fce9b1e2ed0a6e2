// The selection language of nbkit/analysis.hpp: a recursive-descent parser that evaluates as it
// reads, one boolean per atom (or < and < not, as MDAnalysis's and VMD's languages bind).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>

#include "nbkit/analysis.hpp"
#include "nbkit/core/error.hpp"

namespace nbkit::analysis {

namespace {

using Mask = std::vector<char>;

// Shell-style matching of * (any run) and ? (one character).
bool wildcard_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p, ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1, t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool is_keyword(std::string_view w) {
  return w == "and" || w == "or" || w == "not" || w == "(" || w == ")" || w == "all" || w == "none" ||
         w == "name" || w == "resname" || w == "element" || w == "resid" || w == "index";
}

class Parser {
 public:
  Parser(const AtomTable& atoms, std::string_view text) : atoms_(atoms), text_(text) {
    for (std::size_t i = 0; i < text.size();) {
      if (std::isspace(static_cast<unsigned char>(text[i]))) {
        ++i;
      } else if (text[i] == '(' || text[i] == ')') {
        words_.push_back({text.substr(i, 1), i}), ++i;
      } else {
        const std::size_t start = i;
        while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])) && text[i] != '(' && text[i] != ')') ++i;
        words_.push_back({text.substr(start, i - start), start});
      }
    }
  }

  Mask parse() {
    if (words_.empty()) fail(0, "an empty selection (use 'all' for every atom)");
    Mask m = disjunction();
    if (at_ < words_.size()) fail(words_[at_].at, fmt::format("unexpected '{}'", words_[at_].text));
    return m;
  }

 private:
  struct Word {
    std::string_view text;
    std::size_t at;
  };

  [[noreturn]] void fail(std::size_t at, const std::string& problem) const {
    throw Error(fmt::format("selection \"{}\" at character {}: {}", text_, at + 1, problem));
  }
  bool peek(std::string_view w) const { return at_ < words_.size() && words_[at_].text == w; }
  std::size_t here() const { return at_ < words_.size() ? words_[at_].at : text_.size(); }

  Mask disjunction() {
    Mask m = conjunction();
    while (peek("or")) {
      ++at_;
      const Mask r = conjunction();
      for (std::size_t i = 0; i < m.size(); ++i) m[i] = m[i] || r[i];
    }
    return m;
  }
  Mask conjunction() {
    Mask m = negation();
    while (peek("and")) {
      ++at_;
      const Mask r = negation();
      for (std::size_t i = 0; i < m.size(); ++i) m[i] = m[i] && r[i];
    }
    return m;
  }
  Mask negation() {
    if (peek("not")) {
      ++at_;
      Mask m = negation();
      for (char& v : m) v = !v;
      return m;
    }
    return primary();
  }
  Mask primary() {
    if (at_ >= words_.size()) fail(text_.size(), "the selection ends where a term was expected");
    const Word w = words_[at_++];
    const std::size_t n = atoms_.size();
    if (w.text == "(") {
      Mask m = disjunction();
      if (!peek(")")) fail(here(), "a '(' is not closed");
      ++at_;
      return m;
    }
    if (w.text == "all") return Mask(n, 1);
    if (w.text == "none") return Mask(n, 0);
    if (w.text == "name") return by_word(w, atoms_.name);
    if (w.text == "resname") return by_word(w, atoms_.residue_name);
    if (w.text == "element") {
      if (std::all_of(atoms_.element.begin(), atoms_.element.end(), [](const std::string& e) { return e.empty(); }))
        fail(w.at, atoms_.source + " gives no elements");
      return by_word(w, atoms_.element);
    }
    if (w.text == "resid") return by_number(w, [&](std::size_t i) { return std::int64_t{atoms_.residue_number[i]}; });
    if (w.text == "index") return by_number(w, [](std::size_t i) { return static_cast<std::int64_t>(i); });
    fail(w.at, fmt::format("unknown keyword '{}' (expected name, resname, element, resid, index, all, none, not, "
                           "or a parenthesis)",
                           w.text));
  }

  // The values after a keyword: every word up to the next keyword or parenthesis.
  std::vector<Word> values(const Word& keyword) {
    std::vector<Word> v;
    while (at_ < words_.size() && !is_keyword(words_[at_].text)) v.push_back(words_[at_++]);
    if (v.empty()) fail(here(), fmt::format("'{}' needs at least one value", keyword.text));
    return v;
  }

  Mask by_word(const Word& keyword, const std::vector<std::string>& field) {
    const std::vector<Word> patterns = values(keyword);
    Mask m(atoms_.size(), 0);
    for (std::size_t i = 0; i < m.size(); ++i)
      for (const Word& p : patterns)
        if (wildcard_match(p.text, field[i])) {
          m[i] = 1;
          break;
        }
    return m;
  }

  Mask by_number(const Word& keyword, const std::function<std::int64_t(std::size_t)>& field) {
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    for (const Word& v : values(keyword)) {
      // "a", "a:b" or "a-b" (a leading '-' is a negative number: residue numbers may be)
      const std::string_view s = v.text;
      std::size_t split = s.find(':');
      if (split == std::string_view::npos) split = s.find('-', 1);
      const auto number = [&](std::string_view part) {
        std::int64_t x = 0;
        const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), x);
        if (part.empty() || error != std::errc() || end != part.data() + part.size())
          fail(v.at, fmt::format("'{}' is not a number or a range like 1:10", s));
        return x;
      };
      const std::int64_t lo = number(s.substr(0, split));
      const std::int64_t hi = split == std::string_view::npos ? lo : number(s.substr(split + 1));
      if (hi < lo) fail(v.at, fmt::format("the range '{}' is empty", s));
      ranges.emplace_back(lo, hi);
    }
    Mask m(atoms_.size(), 0);
    for (std::size_t i = 0; i < m.size(); ++i) {
      const std::int64_t x = field(i);
      for (auto [lo, hi] : ranges)
        if (x >= lo && x <= hi) {
          m[i] = 1;
          break;
        }
    }
    return m;
  }

  const AtomTable& atoms_;
  std::string_view text_;
  std::vector<Word> words_;
  std::size_t at_ = 0;
};

}  // namespace

std::vector<std::int32_t> select_atoms(const AtomTable& atoms, std::string_view expression) {
  const Mask m = Parser(atoms, expression).parse();
  std::vector<std::int32_t> selected;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i]) selected.push_back(static_cast<std::int32_t>(i));
  return selected;
}

std::vector<std::int32_t> read_index_file(const std::string& path, std::size_t atoms) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the index file");
  std::vector<std::int32_t> indices;
  std::vector<char> seen(atoms, 0);
  std::string line;
  for (std::int64_t number = 1; std::getline(in, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    for (std::size_t i = 0; i < line.size();) {
      if (std::isspace(static_cast<unsigned char>(line[i]))) {
        ++i;
        continue;
      }
      std::size_t end = i;
      while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
      const std::string_view word(line.data() + i, end - i);
      std::int64_t v = -1;
      const auto [stop, error] = std::from_chars(word.data(), word.data() + word.size(), v);
      if (error != std::errc() || stop != word.data() + word.size())
        throw InputError(path, number, "index", fmt::format("'{}' is not an integer", word));
      if (v < 0 || v >= static_cast<std::int64_t>(atoms))
        throw InputError(path, number, "index",
                         fmt::format("{} is outside 0..{} (0-based indices of the topology's atoms)", v, atoms - 1));
      if (seen[v]) throw InputError(path, number, "index", fmt::format("atom {} is listed twice", v));
      seen[v] = 1;
      indices.push_back(static_cast<std::int32_t>(v));
      i = end;
    }
  }
  if (in.bad()) throw Error(path + ": read error");
  if (indices.empty()) throw Error(path + ": no atom indices");
  std::sort(indices.begin(), indices.end());
  return indices;
}

}  // namespace nbkit::analysis
