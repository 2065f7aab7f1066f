# What a node learns on and with: data sets (Fashion-MNIST IDX reader, synthetic clusters),
# partitioning, batch sampling, models (softmax regression, MLP), the learning-rate schedule and the
# local step (weight decay, momentum).
add_library(qgossip_learn STATIC
  batch_sampler.cpp
  dataset.cpp
  idx_reader.cpp
  local_step.cpp
  lr_schedule.cpp
  mlp.cpp
  model_factory.cpp
  partition.cpp
  softmax_regression.cpp
  synthetic.cpp
)
target_link_libraries(qgossip_learn PUBLIC qgossip_core Eigen3::Eigen PRIVATE ZLIB::ZLIB)
