"""hetnn.transforms against NumPy's own operations on fresh random images, image_folder against the pixels written,
and fit(transform=...) training on each epoch's transformed images without touching the caller's array."""
import numpy as np
import pytest

from hetnn import datasets, nn, optim, transforms as T


def test_each_transform_does_what_numpy_does(rng):
    x = rng.integers(0, 256, (9, 2, 6, 7)).astype(np.float32)
    flipped = T.RandomHorizontalFlip(1.0)(x, rng)
    assert np.array_equal(flipped, x[:, :, :, ::-1]) and np.array_equal(T.RandomHorizontalFlip(0.0)(x, rng), x)
    half = T.RandomHorizontalFlip(0.5)(x, np.random.default_rng(3))
    flips = np.random.default_rng(3).random(9) < 0.5
    assert np.array_equal(half[flips], x[flips, :, :, ::-1]) and np.array_equal(half[~flips], x[~flips])
    crop = T.RandomCrop((6, 7), padding=2)(x, np.random.default_rng(4))
    draw = np.random.default_rng(4)
    tops, lefts = draw.integers(0, 5, 9), draw.integers(0, 5, 9)
    padded = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)))
    for i in range(9):
        assert np.array_equal(crop[i], padded[i, :, tops[i]:tops[i] + 6, lefts[i]:lefts[i] + 7])
    sq = x[:, :, :6, :6]
    assert all(np.array_equal(T.rotate(img, 90), np.rot90(img, 1, axes=(1, 2))) for img in sq)
    assert all(np.array_equal(T.rotate(img, -90), np.rot90(img, -1, axes=(1, 2))) for img in sq)
    assert np.array_equal(T.RandomRotation(0)(x, rng), x)
    norm = T.Normalize([10.0, 20.0], [2.0, 4.0])(x)
    assert np.allclose(norm, (x - np.array([10, 20])[:, None, None]) / np.array([2, 4])[:, None, None])
    assert np.allclose(T.Resize((6, 7))(x), x) and T.Resize(3)(x).shape == (9, 2, 3, 3)
    both = T.Compose([T.RandomHorizontalFlip(1.0), T.RandomHorizontalFlip(1.0)])(x, rng)
    assert np.array_equal(both, x)
    for bad, exc in ((lambda: T.RandomHorizontalFlip(2), ValueError), (lambda: T.RandomCrop(0), ValueError),
                     (lambda: T.Normalize([1], [0]), ValueError), (lambda: T.Compose([3]), TypeError),
                     (lambda: T.RandomCrop(9)(x, rng), ValueError)):
        with pytest.raises(exc):
            bad()


def test_image_folder_reads_a_folder_per_class(tmp_path, rng):
    Image = pytest.importorskip("PIL.Image")
    want = {}
    for cls in ("cat", "dog"):
        (tmp_path / cls).mkdir()
        for i in range(3):
            px = rng.integers(0, 256, (5, 4, 3), dtype=np.uint8)
            Image.fromarray(px).save(tmp_path / cls / f"{i}.png")
            want[(cls, i)] = px
    (tmp_path / "cat" / "notes.txt").write_text("not an image")
    x, y, classes = datasets.image_folder(tmp_path)
    assert classes == ["cat", "dog"] and x.shape == (6, 3, 5, 4) and x.dtype == np.float32
    assert list(y) == [0, 0, 0, 1, 1, 1]
    assert np.array_equal(x[4], want[("dog", 1)].transpose(2, 0, 1) / np.float32(255))
    g, _, _ = datasets.image_folder(tmp_path, size=(8, 6), grayscale=True)
    assert g.shape == (6, 1, 8, 6) and 0 <= g.min() and g.max() <= 1
    Image.fromarray(rng.integers(0, 256, (7, 7, 3), dtype=np.uint8)).save(tmp_path / "dog" / "big.png")
    with pytest.raises(ValueError, match="big.png is 7x7"):
        datasets.image_folder(tmp_path)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        datasets.image_folder(tmp_path / "none")


def test_fit_trains_on_each_epochs_transformed_images(device, rng):
    x = rng.random((32, 1, 6, 6)).astype(np.float32)
    y = rng.integers(0, 2, 32)
    before = x.copy()
    seen = []

    def record(imgs, g):
        seen.append(imgs.copy())
        return T.RandomHorizontalFlip(1.0)(imgs, g)
    model = nn.Sequential([nn.Flatten(), nn.Dense(36, 2, seed=1)], device=device)
    model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1), epochs=3, batch_size=8,
              seed=5, transform=record)
    assert len(seen) == 3 and all(np.array_equal(s, before) for s in seen)  # from the stored images each epoch
    assert np.array_equal(x, before)  # the caller's array untouched
    # the same training on the flipped images by hand: the same weights
    ref = nn.Sequential([nn.Flatten(), nn.Dense(36, 2, seed=1)], device=device)
    ref.fit(x[:, :, :, ::-1].copy(), y, loss="cross_entropy", optimizer=optim.SGD(ref.parameters(), lr=0.1),
            epochs=3, batch_size=8, seed=5)
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="transform returned shape"):
        model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1),
                  transform=lambda imgs, g: imgs[:, :, :3])
    with pytest.raises(TypeError, match="transform must be callable"):
        model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1), transform=3)
