// A layer of the training loop (core/train/trainer.h): forward, backward, its parameters. Each kind is one file
// (<name>_layer.cpp) built through a factory of layers.h and listed in layer_table() there; the layers only call the
// validated op fronts (core/ops.h, core/nn.h, core/blocked.h), which dispatch to the backends.
#pragma once
#include <cstdint>
#include <list>
#include <utility>
#include <vector>

#include "core/array.h"
#include "core/blocked.h"

namespace hetnn::train {

// What a forward pass carries from layer to layer: the device's convolution layouts (null: NCHW throughout), the
// block of the activation held and its logical (NCHW) shape, and the replica's dropout stream.
struct Pass {
  ConvLayouts* layouts = nullptr;
  int block = 1;
  Shape logical;
  std::uint64_t dropout_stream = 0;
};

// Arrays reused from step to step, by batch size. An epoch needs two (the last batch is smaller); a model's kept
// trainer sees a new size with each predict of another row count, so only the two sizes used last are held (the
// memory held stays that of two batches however many sizes pass through).
class Buffers {
 public:
  // The slot for batches of `rows` rows (an empty Array when new). A slot's reference stays valid until two other
  // sizes have been asked for.
  Array& operator[](std::int64_t rows);
  std::size_t size() const { return slots_.size(); }

 private:
  static constexpr std::size_t kSlots = 2;
  std::list<std::pair<std::int64_t, Array>> slots_;  // the most recently used last
};
// m[shape[0]], (re)allocated on like's device and dtype unless it has that shape already.
Array& buffer(Buffers& m, const Array& like, const Shape& shape);

class Layer {
 public:
  virtual ~Layer() = default;
  // The name of its row in layer_table() (the Python layer's `kind`, "activation" for ReLU/Sigmoid/Tanh).
  virtual const char* kind() const = 0;
  // Whether it takes an activation held in a device layout (a blocked one); the others get NCHW, reordered before
  // them by the trainer (and their input gradient reordered back).
  virtual bool takes_blocked() const { return false; }
  // Whether its output is a ReLU whose gradient mask a following max pooling may apply instead (relu_in_pool).
  virtual bool output_relu() const { return false; }
  virtual bool is_max_pool() const { return false; }
  // The output of x (train: fit's pass, where dropout is active); updates p's block and logical shape when it
  // changes the layout. The result may live in the layer's buffers until its next forward with that batch size.
  virtual Array forward(Pass& p, const Array& x, bool train) = 0;
  // The gradient of its input from g, the gradient of its output (an invalid Array when !need_input_grad); writes
  // its parameters' gradients. Called after forward, with the same Pass.
  virtual Array backward(Pass& p, const Array& g, bool need_input_grad) = 0;
  // (parameter, gradient) pairs, in the order of the Python layer's parameters.
  virtual std::vector<std::pair<Array, Array>> parameters() const { return {}; }

  // Set by the trainer's plan: this layer's ReLU mask is applied by the next max pooling (skipped here); that
  // max pooling applies it.
  bool relu_in_pool = false, pool_masks_relu = false;
  // Set by the trainer around forward: the input's block, and whether it was reordered to NCHW for this layer
  // (from in_logical), with the buffers of that reorder and of its gradient's.
  int in_block = 1;
  bool reordered_in = false;
  Shape in_logical;
  Buffers plain_buf, grad_buf;
};

// A layer with weights W (gradient dW), an optional bias b (db) and an activation fused into its forward.
class WeightedLayer : public Layer {
 public:
  WeightedLayer(const Array& W, const Array* b, const Array& dW, const Array* db, Activation act, const char* what);
  std::vector<std::pair<Array, Array>> parameters() const override;

 protected:
  // The gradient before the fused activation (g itself without one, or when the next max pooling applies it).
  Array pre_activation_grad(const Array& g);
  const Array* bias() const { return has_bias_ ? &b_ : nullptr; }

  Array W_, b_, dW_, db_;
  bool has_bias_ = false;
  Activation act_ = Activation::none;
  Array x_, y_;  // what the backward needs from the forward
  Buffers y_buf_, dz_buf_, dx_buf_;
};

}  // namespace hetnn::train
