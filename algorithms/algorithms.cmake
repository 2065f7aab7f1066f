add_library(qgossip_algorithms STATIC
  algorithm.cpp
  capabilities.cpp
  centralized_sgd.cpp
  choco_sgd.cpp
  clipped_mix.cpp
  dpsgd.cpp
  dcd_psgd.cpp
  decentralized.cpp
  ecd_psgd.cpp
  metropolis.cpp
  robust_mixing.cpp
  remix.cpp
)
target_link_libraries(qgossip_algorithms PUBLIC qgossip_core)
