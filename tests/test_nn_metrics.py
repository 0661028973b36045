"""hetnn.nn.confusion_matrix against counts made with NumPy from the model's own outputs, on every device; its
accuracy is evaluate's; bad labels are refused naming y."""
import numpy as np
import pytest

from hetnn import nn


def test_confusion_matrix_counts_true_against_predicted(device, rng):
    model = nn.Sequential([nn.Dense(6, 8, "relu", seed=1), nn.Dense(8, 4, seed=2)], device=device)
    x = rng.standard_normal((97, 6)).astype(np.float32)
    y = rng.integers(0, 4, 97)
    cm = nn.confusion_matrix(model, x, y, batch_size=16)
    pred = model.predict(x).argmax(axis=1)
    want = np.array([[np.sum((y == i) & (pred == j)) for j in range(4)] for i in range(4)])
    assert cm.dtype == np.int64 and np.array_equal(cm, want) and cm.sum() == 97
    acc = model.evaluate(x, y, loss="cross_entropy", metrics=["accuracy"])["accuracy"]
    assert np.trace(cm) / 97 == pytest.approx(acc)
    assert np.array_equal(nn.confusion_matrix(model, x, np.eye(4)[y]), cm)  # one-hot rows: the same
    with pytest.raises(ValueError, match="label 4 is out of range for 4 classes"):
        nn.confusion_matrix(model, x, np.full(97, 4))
    with pytest.raises(ValueError, match="y must be 97 labels"):
        nn.confusion_matrix(model, x, y[:5])
    with pytest.raises(TypeError, match="model must be"):
        nn.confusion_matrix("model", x, y)


def test_the_confusion_plot_writes_every_count():
    pytest.importorskip("matplotlib")
    cm = np.array([[5, 1], [2, 7]])
    fig = nn.plot_confusion_matrix(cm, labels=["cat", "dog"])
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"5", "1", "2", "7"} <= texts and "accuracy 0.8000" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="2 classes but 3 labels"):
        nn.plot_confusion_matrix(cm, labels=["a", "b", "c"])
