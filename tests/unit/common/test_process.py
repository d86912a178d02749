"""Helper programs: output captured, exit codes kept, and a hung program killed at its bound."""

import pytest

from nova_async.common import process


async def test_output_and_exit_code():
    done = await process.run("sh", "-c", 'printf "out "; printf err >&2; exit 3')
    assert done.returncode == 3 and done.output == "out err"


async def test_a_program_past_its_bound_is_killed():
    with pytest.raises(process.ProcessTimeout, match="sleep did not finish within 0 s"):
        await process.run("sleep", "30", timeout=0.2)
