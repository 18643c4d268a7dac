"""The graph and the scoring partitioned over a real Dask LocalCluster (2 worker processes): the one-process
exact numbers, bit for bit, for every method with a block plan; the CLI's --scheduler."""

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from odeval.bench.distributed import PartitionedGraph, check_partitionable, parse_scheduler, partitioned  # noqa: E402
from odeval.detectors import get_detector  # noqa: E402
from odeval.detectors.blockwise import partitioned_methods  # noqa: E402
from odeval.detectors.scoring import score_ks  # noqa: E402
from odeval.neighbors import knn_graph  # noqa: E402

pytestmark = pytest.mark.slow  # starts two worker processes (≈ 10–20 s on a loaded machine)


@pytest.fixture(scope="module")
def cluster():
    cl = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0",
                                  env={"NUMBA_NUM_THREADS": "1"})
    yield cl
    cl.close()


def _data():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, size=(260, 3)).astype(float)
    X[130:] += rng.normal(scale=0.4, size=(130, 3))
    X[20:34] = X[3]  # duplicates
    return X


@pytest.mark.parametrize("assign", ["spatial", "index"])
def test_every_method_bit_identical_on_two_worker_processes(cluster, assign):
    X = _data()
    X = X[np.random.default_rng(2).permutation(len(X))]  # random order: spatial blocks are not ranges
    g = knn_graph(X, 30)
    with distributed.Client(cluster) as client:
        pg = PartitionedGraph(client, X, 30, n_blocks=3, assign=assign)
        assert pg.partition.contiguous == (assign == "index")
        assert len(client.scheduler_info()["workers"]) == 2
        full = pg.gather_graph()
        assert np.array_equal(full.distances, g.distances) and np.array_equal(full.indices, g.indices)
        vol = pg.exchange_volume()
        assert vol["edges"] == int((g.indices >= 0).sum()) and len(vol["halo_objects"]) == 3
        for name in partitioned_methods():
            det = get_detector(name)
            ks = "1..30" if name != "LOF" else "29..40"  # LOF: k beyond the graph's k_max is skipped alike
            a = score_ks(det, g, ks)
            b = score_ks(partitioned(det, pg), pg, ks)
            assert a.ks == b.ks and a.skipped == b.skipped
            assert np.array_equal(a.scores, b.scores), (name, ks)


def test_cli_score_with_a_scheduler(cluster, tmp_path):
    from click.testing import CliRunner

    from odeval.cli import main

    X = _data()
    path = tmp_path / "d.csv"
    np.savetxt(path, X, delimiter=",", header="a,b,c", comments="")
    runner = CliRunner()
    one = runner.invoke(main, ["score", str(path), "-m", "LOF", "-m", "ODIN", "--k", "1:12", "--unlabelled",
                               "-o", str(tmp_path / "one.npz")])
    assert one.exit_code == 0, one.output
    two = runner.invoke(main, ["score", str(path), "-m", "LOF", "-m", "ODIN", "--k", "1:12", "--unlabelled",
                               "--scheduler", cluster.scheduler_address, "--blocks", "3",
                               "-o", str(tmp_path / "two.npz")])
    assert two.exit_code == 0, two.output
    assert "3 blocks on 2 Dask worker(s)" in two.output
    assert np.array_equal(np.load(tmp_path / "one.npz")["scores"], np.load(tmp_path / "two.npz")["scores"])
    bad = runner.invoke(main, ["score", str(path), "-m", "GLOSH", "--k", "2:5", "--unlabelled",
                               "--scheduler", cluster.scheduler_address, "-o", str(tmp_path / "x.npz")])
    assert bad.exit_code != 0 and "GLOSH is not block-partitioned" in bad.output
    assert "Traceback" not in bad.output


def test_parse_scheduler_and_refusal():
    assert parse_scheduler("local:3") == ("local", 3)
    assert parse_scheduler("tcp://h:8786") == ("address", "tcp://h:8786")
    with pytest.raises(ValueError, match="local:N"):
        parse_scheduler("local:x")
    with pytest.raises(ValueError, match=r"elki-0\.7\.1-cks"):
        check_partitionable([get_detector("KDEOS", variant="elki-0.7.1-cks")])
