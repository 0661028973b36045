"""Dense and convolutional networks on one device: layers, losses, Sequential (fit, evaluate, predict, save), load."""
from ._layers import (AvgPool2d, Conv2d, Dense, Dropout, Flatten, GlobalAvgPool2d, Layer, MaxPool2d, Parameter,
                      ReLU, Reshape, Sigmoid, Softmax, Tanh, manual_seed)
from ._losses import CrossEntropyLoss, Loss, MSELoss
from ._callbacks import Callback, EarlyStopping, History, ModelCheckpoint
from ._lr_find import LRFind, lr_find
from ._metrics import confusion_matrix, plot_confusion_matrix
from ._model import Sequential, load

__all__ = [
    "AvgPool2d", "Callback", "Conv2d", "CrossEntropyLoss", "Dense", "Dropout", "EarlyStopping", "Flatten",
    "GlobalAvgPool2d",
    "History", "Layer", "LRFind", "lr_find", "ModelCheckpoint", "Loss", "MSELoss", "MaxPool2d", "Parameter",
    "ReLU", "Reshape", "Sequential", "Sigmoid", "Softmax", "Tanh", "load", "manual_seed", "confusion_matrix",
    "plot_confusion_matrix",
]
