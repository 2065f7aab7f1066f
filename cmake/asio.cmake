# Standalone Asio (header-only; Debian's libasio-dev, no Boost) as the imported target asio::asio.
# Asio ships no CMake package, so the header is looked for here; ASIO_ROOT or -DASIO_INCLUDE_DIR=...
# point at another copy. Included by every directory that uses it (node/launch); the target is global.
if(TARGET asio::asio)
  return()
endif()
set(QGOSSIP_ASIO_MIN_VERSION 102200)  # 1.22: the release the launcher is written and tested against
find_path(ASIO_INCLUDE_DIR asio.hpp HINTS ${ASIO_ROOT} ENV ASIO_ROOT PATH_SUFFIXES include)
if(NOT ASIO_INCLUDE_DIR OR NOT EXISTS "${ASIO_INCLUDE_DIR}/asio/version.hpp")
  message(FATAL_ERROR "Standalone Asio not found: no asio.hpp (with asio/version.hpp) in the include path. "
                      "Install it with `apt-get install libasio-dev` (scripts/setup.sh does), or pass "
                      "-DASIO_INCLUDE_DIR=<dir holding asio.hpp>.")
endif()
file(STRINGS "${ASIO_INCLUDE_DIR}/asio/version.hpp" asio_version_line REGEX "^#define ASIO_VERSION [0-9]+")
string(REGEX REPLACE "^#define ASIO_VERSION ([0-9]+).*" "\\1" asio_version "${asio_version_line}")
if(NOT asio_version OR asio_version LESS QGOSSIP_ASIO_MIN_VERSION)
  message(FATAL_ERROR "Asio in ${ASIO_INCLUDE_DIR} is version '${asio_version}' (ASIO_VERSION), "
                      "expected ${QGOSSIP_ASIO_MIN_VERSION} (1.22) or newer")
endif()
math(EXPR asio_major "${asio_version} / 100000")
math(EXPR asio_minor "${asio_version} / 100 % 1000")
math(EXPR asio_patch "${asio_version} % 100")
message(STATUS "Found standalone Asio ${asio_major}.${asio_minor}.${asio_patch}: ${ASIO_INCLUDE_DIR}")
add_library(asio::asio INTERFACE IMPORTED GLOBAL)
# SYSTEM: Asio's own warnings are not ours. ASIO_NO_DEPRECATED keeps the pre-io_context names out.
target_include_directories(asio::asio SYSTEM INTERFACE "${ASIO_INCLUDE_DIR}")
target_compile_definitions(asio::asio INTERFACE ASIO_STANDALONE ASIO_NO_DEPRECATED)
target_link_libraries(asio::asio INTERFACE Threads::Threads)
