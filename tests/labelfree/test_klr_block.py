"""The block solver of the exact pinned classifier (odeval.labelfree._klr_block) against the dense one (_klr)."""

import importlib

import numpy as np
import pytest

from odeval.labelfree import _klr, _klr_block, ireos

ireos_module = importlib.import_module("odeval.labelfree.ireos")  # the module (the package exports the function)


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (n - 4, 3)), rng.normal(3.5, 0.5, (4, 3))])
    X[5] = X[6]  # an exact duplicate: p -> a_dup / c_dup at large gamma with the pinned classifier
    return X


def _dense(X, objs, costs, mode, gammas, gamma_max):
    N = X.shape[0]
    train = np.array([np.r_[j, np.delete(np.arange(N), j)] for j in objs])
    ct = np.array([np.r_[c[j], np.delete(c, j)] for j, c in zip(objs, costs, strict=True)])
    return _klr.curves_batch(X, train, ct, mode, gammas, gamma_max, 1e-3, 8, 1, True)


@pytest.mark.parametrize("mcl", [1.0, 3.0])
def test_block_areas_and_points_equal_the_dense_solver(mcl):
    X = _data()
    N = X.shape[0]
    objs = np.array([0, 5, 6, 40, N - 1, N - 2])
    w = np.linspace(0, 1, N)
    costs = np.tile(100.0 * (1.0 / mcl) ** w, (objs.size, 1))
    costs[np.arange(objs.size), objs] = 100.0
    dense, fits, _ = _dense(X, objs, costs, 0, np.zeros(0), 1.5)
    gammas = np.array([0.0, 0.2, 0.7, 1.5, 6.0])
    dense_points, *_ = _dense(X, objs, costs, 1, gammas, 1.5)
    for core in (None, 0, N - 1):  # the default (2 % of N: 3 objects), none, every object's (exact)
        block, bfits, products = _klr_block.curves(X, objs, costs, 0, np.zeros(0), 1.5, 1e-3, 8, 1, core=core)
        np.testing.assert_allclose(block, dense, rtol=0, atol=1e-7)
        assert bfits == fits and products > 0  # the same adaptive nodes
        block, *_ = _klr_block.curves(X, objs, costs, 1, gammas, 1.5, 1e-3, 8, 1, core=core)
        np.testing.assert_allclose(block, dense_points, rtol=0, atol=1e-7)


def _saddle_point_problem(seed=3, m=3):
    """A Newton step's systems of three classifiers on the test data: positives 0, 5 and 40 masked, weights over
    four orders of magnitude, a right-hand side and a constraint value per classifier."""
    rng = np.random.default_rng(seed)
    X = _data(80)
    N = X.shape[0]
    M = np.ones((N, m))
    M[[0, 5, 40][:m], np.arange(m)] = 0.0
    w = 10.0 ** rng.uniform(-3, 1.4, (N, m)) * M  # 1/D; 0 at the positive
    D = np.divide(1.0, w, out=np.zeros_like(w), where=M > 0)
    return X, M, w, D, rng.normal(size=(N, m)) * M, rng.normal(size=m)


def _kernel(X, landmarks, on_torch):
    if on_torch:
        pytest.importorskip("torch", reason="PyTorch not installed (make install-dev installs its CPU build)")
        return _klr_block.TorchKernel(X, landmarks, "cpu")
    return _klr_block.HostKernel(_klr_block.sqdist(X), landmarks)


@pytest.mark.parametrize("on_torch", [False, True])
@pytest.mark.parametrize("core", [0, 7])
def test_preconditioner_is_the_inverse_of_nystrom_plus_the_exact_core_block(on_torch, core):
    """:class:`_klr_block._Preconditioner` applies M_k^-1 on the free coordinates (0 on the masked one), M_k = D_k +
    L L' + E (K - L L')_SS E' with S the ``core`` objects of largest weight w = 1/D: the explicit inverse of M_k."""
    X, M, w, D, _r, _beta = _saddle_point_problem()
    N, m = M.shape
    kernel = _kernel(X, np.arange(0, N, 8), on_torch)
    kernel.core = core
    kernel.set_gamma(0.7)
    ops = kernel.ops
    K, L = ops.host(kernel.K), ops.host(kernel.L)
    G = np.random.default_rng(4).normal(size=(N, m)) * M
    Z = ops.host(_klr_block._Preconditioner(kernel, ops.dev(w), ops.dev(D))(ops.dev(G)))
    for k in range(m):
        free = M[:, k] > 0
        S = np.argsort(-w[:, k])[:core]
        Mk = np.diag(D[:, k]) + L @ L.T
        Mk[np.ix_(S, S)] = K[np.ix_(S, S)] + np.diag(D[S, k])
        want = np.linalg.solve(Mk[np.ix_(free, free)], G[free, k])
        np.testing.assert_allclose(Z[free, k], want, rtol=0, atol=1e-9 * np.abs(want).max())
        assert (Z[~free, k] == 0).all()


@pytest.mark.parametrize("on_torch", [False, True])
@pytest.mark.parametrize("core", [0, 7, 79])
def test_projected_pcg_solves_the_newton_saddle_point_system(on_torch, core):
    """:func:`_klr_block._projected_pcg`: (K + D) x + 1 y = r, 1' x = beta per column, masked coordinates 0, the
    bordered system's solution (numpy.linalg.solve), K x returned equal to the product; from its own start and
    from a given feasible one (x0, K x0); with the Nystrom preconditioner alone (core 0), an exact block of 7
    objects, and of every free object (79 of 80: the preconditioner is K + D itself, two iterations at most)."""
    X, M, w, D, r, beta = _saddle_point_problem()
    N, m = M.shape
    kernel = _kernel(X, np.arange(0, N, 4), on_torch)
    kernel.core = core
    ops = kernel.ops
    kernel.set_gamma(0.7)
    K = ops.host(kernel.K)
    x0 = M * np.random.default_rng(1).random((N, m))
    x0 *= beta / x0.sum(axis=0)
    for start in (None, (ops.dev(x0), ops.dev(K @ x0))):
        before = kernel.products
        x, y, Kx = kernel.pcg(*(ops.dev(a) for a in (r, beta, w, M, D)), np.full(m, 1e-12), start)
        if core == N - 1:
            assert kernel.products - before <= (3 if start is None else 2) * m  # (the start, two iterations)
        x, Kx = ops.host(x), ops.host(Kx)
        assert isinstance(y, np.ndarray) and y.shape == (m,)
        np.testing.assert_allclose(x.sum(axis=0), beta, rtol=0, atol=1e-12)
        np.testing.assert_allclose(Kx, K @ x, rtol=0, atol=1e-12)
        for k in range(m):
            free = M[:, k] > 0
            assert (x[~free, k] == 0).all()
            n = int(free.sum())
            bordered = np.zeros((n + 1, n + 1))
            bordered[:n, :n] = K[np.ix_(free, free)] + np.diag(D[free, k])
            bordered[:n, n] = bordered[n, :n] = 1.0
            want = np.linalg.solve(bordered, np.r_[r[free, k], beta[k]])
            np.testing.assert_allclose(x[free, k], want[:n], rtol=0, atol=1e-8 * np.abs(want[:n]).max())
            np.testing.assert_allclose(y[k], want[n], rtol=1e-8)


def test_block_solver_names_select_their_preconditioner():
    """``ireos.BLOCK_SOLVERS``: each name (part of a chunk's checkpoint key) runs its own solver -- the landmarks
    alone and steps solved to 1e-10 for ``pinned-block-projected`` (cells begun before the block), the block of 2 %
    of N and 1e-6 for the default -- so a resumed cell is finished by the solver that began it."""
    X = _data(300, seed=4)
    N = X.shape[0]
    objs = np.array([0, 7, 150, N - 1])
    costs = np.full((objs.size, N), 100.0)
    gammas = np.array([0.0, 0.5, 1.5, 6.0])
    assert ireos_module.BLOCK == "pinned-block-projected-core"
    for name, core, cg_tol in (("pinned-block-projected", 0, 1e-10), (ireos_module.BLOCK, 6, 1e-6)):
        got = ireos_module._solve_chunk(X, objs[:, None], costs, 1, gammas, 6.0, 1e-3, 8, 1, name)
        want = _klr_block.curves(X, objs, costs, 1, gammas, 6.0, 1e-3, 8, 1, core=core, cg_tol=cg_tol)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[2] == want[2]  # (the same products: the same iterations)
    assert got[2] < _klr_block.curves(X, objs, costs, 1, gammas, 6.0, 1e-3, 8, 1, core=0, cg_tol=1e-10)[2]


def test_ireos_uses_the_block_solver_on_large_exact_data_with_the_same_index(monkeypatch):
    X = _data(90, seed=1)
    rng = np.random.default_rng(2)
    sols = [np.linalg.norm(X - X.mean(0), axis=1), rng.random(X.shape[0])]
    dense = ireos(X, sols, knn=None)
    dense3 = ireos(X, sols, knn=None, m_cl=3)
    monkeypatch.setattr(ireos_module, "BLOCK_MIN_N", 50)
    monkeypatch.setattr(ireos_module, "BLOCK_CHUNK", 16)
    block = ireos(X, sols, knn=None)
    assert block.gamma_max == dense.gamma_max
    np.testing.assert_allclose(block.index, dense.index, rtol=0, atol=1e-7)
    np.testing.assert_allclose(block.areas, dense.areas, rtol=0, atol=1e-7)
    assert not np.array_equal(block.areas, dense.areas)  # (another solver: equal to its tolerance, not in bits)
    # fixed chunks: the same bits with any number of workers
    again = ireos(X, sols, knn=None, workers=2)
    np.testing.assert_array_equal(again.index, block.index)
    # m_cl > 1: each solution's own costs (Eq. 12) in each chunk
    np.testing.assert_allclose(ireos(X, sols, knn=None, m_cl=3).index, dense3.index, rtol=0, atol=1e-7)


# ---------------------------------------------------------------------------------------- on a PyTorch device
def test_torch_kernel_gives_the_host_areas_and_nodes():
    """:class:`_klr_block.TorchKernel` (the kernel, its products and the conjugate gradients on a PyTorch device;
    here PyTorch's CPU build, the same code as on a GPU) gives the host solver's areas and separabilities to the
    conjugate gradients' tolerance, with the same adaptive nodes."""
    pytest.importorskip("torch", reason="PyTorch not installed (make install-dev installs its CPU build)")
    X = _data()
    N = X.shape[0]
    objs = np.array([0, 5, 6, 40, N - 1, N - 2])
    for mcl in (1.0, 3.0):
        costs = np.tile(100.0 * (1.0 / mcl) ** np.linspace(0, 1, N), (objs.size, 1))
        costs[np.arange(objs.size), objs] = 100.0
        host, fits, _ = _klr_block.curves(X, objs, costs, 0, np.zeros(0), 1.5, 1e-3, 8, 1)
        dev, dfits, products = _klr_block.curves(X, objs, costs, 0, np.zeros(0), 1.5, 1e-3, 8, 1, torch_device="cpu")
        np.testing.assert_allclose(dev, host, rtol=0, atol=1e-8)
        assert dfits == fits and products > 0
        gammas = np.array([0.0, 0.2, 0.7, 1.5, 6.0])
        host, *_ = _klr_block.curves(X, objs, costs, 1, gammas, 1.5, 1e-3, 8, 1)
        dev, *_ = _klr_block.curves(X, objs, costs, 1, gammas, 1.5, 1e-3, 8, 1, torch_device="cpu")
        np.testing.assert_allclose(dev, host, rtol=0, atol=1e-8)


def test_ireos_on_a_device_runs_the_block_solver_at_any_size(monkeypatch):
    """``ireos(device=...)``: the exact pinned index by the block solver on the device whatever N (here 60 < the
    host's BLOCK_MIN_N), the index of the host's block solver to its tolerance, the same bits for any worker count;
    a device with the kNN approximation or the optimum classifier is a one-line error."""
    pytest.importorskip("torch", reason="PyTorch not installed (make install-dev installs its CPU build)")
    X = _data(60, seed=1)
    sols = [np.linalg.norm(X - X.mean(0), axis=1), np.random.default_rng(2).random(X.shape[0])]
    monkeypatch.setattr(ireos_module, "_torch_device", lambda device: None if device == "cpu" else "cpu")
    monkeypatch.setattr(ireos_module, "BLOCK_CHUNK", 16)
    dev = ireos(X, sols, knn=None, device="cuda")
    monkeypatch.setattr(ireos_module, "BLOCK_MIN_N", 50)
    host = ireos(X, sols, knn=None)
    assert dev.gamma_max == host.gamma_max and dev.n_fits == host.n_fits
    np.testing.assert_allclose(dev.areas, host.areas, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(ireos(X, sols, knn=None, device="cuda", workers=2).index, dev.index)
    with pytest.raises(ValueError, match=r"^device='cuda' runs the exact index's block solver, which needs knn=None"):
        ireos(X, sols, knn=20, device="cuda")
    with pytest.raises(ValueError, match=r"classifier='optimum'\); use device='cpu'$"):
        ireos(X, sols, knn=None, classifier="optimum", device="cuda")


def test_ireos_device_errors(monkeypatch):
    """An unknown device, or one PyTorch cannot give, is a one-line error naming the CPU path (no silent CPU)."""
    X = _data(40)
    sols = [np.linalg.norm(X - X.mean(0), axis=1)]
    with pytest.raises(ValueError, match=r"^unknown device 'gpu'; use 'cpu' \(NumPy\) or 'cuda' / 'cuda:N'"):
        ireos(X, sols, knn=None, device="gpu")
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"^device='cuda' needs PyTorch: pip install 'odeval\[gpu\]'"):
        ireos(X, sols, knn=None, device="cuda")
