#include "node/launch/display.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <ostream>

namespace qgossip {
namespace {

int terminal_columns() {
  struct winsize ws {};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

// Cuts `line` to `columns` terminal cells (UTF-8 continuation bytes take none).
std::string fit_columns(const std::string& line, int columns) {
  if (columns <= 0) return line;
  int cells = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80 && ++cells > columns) return line.substr(0, i);
  }
  return line;
}

}  // namespace

launch_display::launch_display(std::ostream* out, bool live)
    : out_(out), live_(live), columns_(live ? terminal_columns() : 0) {}

void launch_display::print_text(const std::string& text) {
  if (!out_) return;
  if (live_ && drawn_) *out_ << "\r\x1b[K";
  *out_ << text << '\n';
  drawn_ = false;
  out_->flush();
}

void launch_display::draw(const std::string& status_line, bool any_started) {
  if (!out_) return;
  if (live_) {
    *out_ << '\r' << fit_columns(status_line, columns_ > 1 ? columns_ - 1 : 0) << "\x1b[K";
    drawn_ = true;
  } else if (any_started) {
    *out_ << status_line << '\n';
  }
  out_->flush();
}

void launch_display::finish(const std::string& status_line, const std::string& table) {
  if (!out_) return;
  if (live_ && drawn_) *out_ << "\r\x1b[K";
  *out_ << status_line << '\n' << table;
  out_->flush();
}

}  // namespace qgossip
