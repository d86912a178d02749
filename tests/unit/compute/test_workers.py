import asyncio

from nova_async.compute.workers import InstanceWorkers
from tests.waiting import until


async def test_jobs_for_one_instance_run_in_order_and_others_in_parallel():
    log: list[tuple[str, str, str]] = []
    gate = asyncio.Event()

    async def handle(key: str, job: str) -> None:
        log.append((key, job, "start"))
        if job == "slow-build":
            await gate.wait()
        log.append((key, job, "end"))

    async with InstanceWorkers(handle, name="t", idle_seconds=0.05) as workers:
        workers.submit("a", "slow-build")
        workers.submit("a", "terminate")
        workers.submit("b", "build")
        await asyncio.sleep(0)  # let the workers take their first jobs
        await asyncio.sleep(0)
        # b is not held up by a; a's terminate waits for a's build
        assert ("b", "build", "end") in log
        assert ("a", "terminate", "start") not in log
        gate.set()
    assert [e for e in log if e[0] == "a"] == [
        ("a", "slow-build", "start"), ("a", "slow-build", "end"),
        ("a", "terminate", "start"), ("a", "terminate", "end")]
    assert len(workers) == 0


async def test_a_failing_job_does_not_stop_the_next_one():
    done = []

    async def handle(key: str, job: str) -> None:
        if job == "bad":
            raise RuntimeError("boom")
        done.append(job)

    async with InstanceWorkers(handle, name="t") as workers:
        workers.submit("a", "bad")
        workers.submit("a", "good")
    assert done == ["good"]


async def test_idle_workers_end_and_come_back():
    seen = []
    came_back = asyncio.Event()

    async def handle(key: str, job: str) -> None:
        seen.append(job)
        if job == "second":
            came_back.set()

    async with InstanceWorkers(handle, name="t", idle_seconds=0.01) as workers:
        workers.submit("a", "first")
        await until(lambda: len(workers), lambda n: n == 0, what='the worker for "a" ended, idle')
        workers.submit("a", "second")
        await came_back.wait()
    assert seen == ["first", "second"]
