#pragma once
// What the launcher writes while it runs: text lines (node output that is not protocol, the
// launcher's own notes) and the status line — redrawn in place (\r) on a terminal ("live"), or
// printed as a plain line now and then (CI logs, pipes) — and at the end the final status line and
// the per-node table. It only writes; when to redraw is the caller's timer.
// Not thread-safe: owned by the launcher's event loop.
#include <iosfwd>
#include <string>

namespace qgossip {

class launch_display {
 public:
  // out: nullptr for silence. live: redraw one line in place, cut to the terminal's width.
  launch_display(std::ostream* out, bool live);

  // A line of text above the live status line (or simply a line, when not live).
  void print_text(const std::string& text);
  // Live: redraws the status line. Plain: prints it when `any_started` (no empty lines before any
  // node has reported).
  void draw(const std::string& status_line, bool any_started);
  // Live and a text line has scrolled the status line away: the caller should draw() now.
  [[nodiscard]] bool needs_redraw() const { return out_ && live_ && !drawn_; }
  // The final status line (replacing the live one) and the table.
  void finish(const std::string& status_line, const std::string& table);

 private:
  std::ostream* out_;
  bool live_;
  bool drawn_ = false;  // the live line is on screen
  int columns_ = 0;     // the terminal's width when live; 0: unknown
};

}  // namespace qgossip
