#include "core/train/layers.h"

namespace hetnn::train {

const std::vector<TableRow>& layer_table() {
  static const std::vector<TableRow> rows{
      {"dense", "Dense", "core/train/dense_layer.cpp"},
      {"conv2d", "Conv2d", "core/train/conv2d_layer.cpp"},
      {"activation", "ReLU, Sigmoid, Tanh", "core/train/activation_layer.cpp"},
      {"flatten", "Flatten", "core/train/shape_layers.cpp"},
      {"reshape", "Reshape", "core/train/shape_layers.cpp"},
      {"maxpool2d", "MaxPool2d", "core/train/max_pool_layer.cpp"},
      {"avgpool2d", "AvgPool2d", "core/train/avg_pool_layer.cpp"},
      {"globalavgpool2d", "GlobalAvgPool2d", "core/train/global_avg_pool_layer.cpp"},
      {"dropout", "Dropout", "core/train/dropout_layer.cpp"},
  };
  return rows;
}

const std::vector<TableRow>& optimizer_table() {
  static const std::vector<TableRow> rows{
      {"sgd", "SGD", "core/train/sgd_optimizer.cpp"},
      {"adam", "Adam", "core/train/adam_optimizer.cpp"},
      {"adamw", "AdamW", "core/train/adam_optimizer.cpp"},
  };
  return rows;
}

}  // namespace hetnn::train
