# The launcher: starts and supervises local node processes and shows their progress (node/launcher.hpp,
# node/progress.hpp). Included from node/CMakeLists.txt (via node.cmake).
add_library(qgossip_launch STATIC
  ${CMAKE_CURRENT_LIST_DIR}/launcher.cpp
  ${CMAKE_CURRENT_LIST_DIR}/progress.cpp
)
target_link_libraries(qgossip_launch PUBLIC qgossip_core Threads::Threads)
