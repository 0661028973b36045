// Fronts of the convolution-network ops on activations held in a device's channel-blocked layout
// (backend/extensions.h ConvLayouts), for the training loop (core/trainer.cpp): a chain conv -> activation ->
// max pool -> conv keeps oneDNN's nChw16c (or the block each convolution prefers) from layer to layer, and the
// network reorders to NCHW only where a layer needs that order (flatten, dropout, dense) and back in the backward.
// Arguments are checked here against the logical (N, C, H, W) shapes, as the NCHW fronts check them.
#pragma once
#include "backend/extensions.h"
#include "core/array.h"
#include "core/ops.h"

namespace hetnn {

// A float32 activation of logical shape (N, C, H, W) in channel block `block`: `a` holds (N, ceil(C/b), H, W, b),
// the NCHW array itself for b = 1. Elementwise ops (activation and its backward) run on `a` as it is: channels past
// C hold zeros or finite values that meet zero weights.
struct BlockedAct {
  Array a;
  Shape shape;
  int block = 1;
};

// The ConvLayouts of float32 x's device, else null.
ConvLayouts* conv_layouts_for(const Array& x);

// The descriptor of conv2d for an input of logical shape xs, with x's dtype and device (core/conv2d.cpp).
Conv2dDesc conv2d_plan(const Shape& xs, const Array& x, const Array& weight, const Array* bias, const Conv2dArgs& args,
                       const char* op);

// y = conv2d(x, weight, bias, args) in the block the device prefers; *y_buf is reused when its shape fits.
BlockedAct conv2d_blocked(ConvLayouts& cl, const BlockedAct& x, const Array& weight, const Array* bias,
                          const Conv2dArgs& args, Array* y_buf);
// Gradients of the convolution before its activation (args.act ignored): weight (and bias) into gw (gb), the input's
// into *gx_buf in x's block when gx_buf is non-null (returned).
BlockedAct conv2d_backward_blocked(ConvLayouts& cl, const BlockedAct& gy, const BlockedAct& x, const Array& weight,
                                   const Conv2dArgs& args, Array* gx_buf, const Array& gw, const Array* gb);
// max_pool2d in x's block; *idx_buf (int32 positions) holds what the backward needs.
BlockedAct max_pool2d_blocked(ConvLayouts& cl, const BlockedAct& x, const Pool2dArgs& args, Array* y_buf,
                              Array* idx_buf);
BlockedAct max_pool2d_backward_blocked(ConvLayouts& cl, const BlockedAct& gy, const Array& idx,
                                       const Shape& input_shape, const Pool2dArgs& args, Array* gx_buf);
// x in block `to` (x itself when it is already).
BlockedAct reorder_blocked(ConvLayouts& cl, const BlockedAct& x, int to, Array* out_buf);

// One convolution layer as it runs inside a network with device layouts: x reordered once into the block the
// layer's primitive reads, then run() convolves it into the block it writes (weights reordered per call, as in
// training, where they change every step). For the benchmarks (bench conv: "hetnn layouts").
class ResidentConv {
 public:
  ResidentConv(const Array& x, const Array& weight, const Conv2dArgs& args);
  void run();
  Array fetch();  // the last result in NCHW

 private:
  ConvLayouts* cl_;
  Array w_, x_buf_, y_buf_, out_buf_;
  Conv2dArgs args_;
  BlockedAct x_, y_;
};

}  // namespace hetnn
