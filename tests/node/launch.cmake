# Launcher and progress-protocol tests: real child processes (/bin/sh scripts as fake nodes).
qgossip_add_test(NAME launcher
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/launcher_test.cpp ${CMAKE_CURRENT_LIST_DIR}/progress_test.cpp
  LIBS qgossip_launch
  TIMEOUT 60)
