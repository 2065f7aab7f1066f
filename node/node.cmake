add_library(qgossip_node STATIC
  codec_report.cpp
  config.cpp
  json_writer.cpp
  node_runner.cpp
  npy.cpp
  replica_check.cpp
  run_summary.cpp
  run_log.cpp
  subprocess.cpp
  topology_builder.cpp
  yaml_reader.cpp
)
target_link_libraries(qgossip_node PUBLIC
  qgossip_learn qgossip_launch qgossip_algorithms qgossip_compress qgossip_gossip qgossip_topology qgossip_core
  yaml-cpp)

add_executable(qgossip
  main.cpp
  command_launch.cpp
  command_plot.cpp
  command_run.cpp
  command_topology.cpp
  command_verify.cpp
  command_codec.cpp
  command_logs.cpp
)
target_link_libraries(qgossip PRIVATE qgossip_node CLI11::CLI11)
set_target_properties(qgossip PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
