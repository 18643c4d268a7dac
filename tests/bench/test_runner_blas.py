"""Study workers run BLAS with one thread each: several worker processes each starting a BLAS thread per core
oversubscribe the machine (an estimator whose time is in BLAS then ran ~100× slower). That a process executor
with ``limit_blas`` does limit them is tested in tests/test_executor.py."""

from __future__ import annotations


def test_study_worker_processes_limit_blas_to_one_thread():
    from odeval.bench.runner import _executor
    from odeval.executor import ProcessExecutor

    with _executor(2, None) as ex:
        assert isinstance(ex, ProcessExecutor) and ex.limit_blas
