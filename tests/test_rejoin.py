"""Failures and rejoin (protocol section 4, "Epochs, failures and rejoin"), on the soft and
the sim switch.

Workers are real processes (``tests/faultutil.py``); one of them dies in the middle of an
all-reduce (it sends one chunk and exits) and a new process with the same member id takes
its place. Expected sums are computed here from the inputs; the async check recomputes
each RESULT from the GRADIENTs the switch logged, in the order the RESULT reports.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hostdrv import Aggregator, SoftSwitch, SwitchControl
from hostdrv.wire.protocol import result_order
from tests.faultutil import expected_sum
from tests.netutil import ordered_sum

REPO = Path(__file__).resolve().parents[1]
SIZE, SLOTS, ELEMS = 40, 4, 16  # 3 chunks per call


@contextlib.contextmanager
def switch(kind: str, **kw: Any) -> Iterator[SoftSwitch]:
    """A soft switch or a sim switch (the RTL) serving in a thread."""
    if kind == "soft":
        with SoftSwitch("127.0.0.1:0", **kw) as sw:
            yield sw
        return
    from tests.toolcheck import require_module, require_tool

    require_tool("verilator", "the sim switch runs the RTL in Verilator")
    require_module("pyverilator", "the sim switch runs the RTL in Verilator")
    from hostdrv.switch.sim import SimSwitch

    with SimSwitch("127.0.0.1:0", **kw) as sw:
        yield sw


def spawn(url: str, worker: int, out: Path, *args: str) -> subprocess.Popen[bytes]:
    """Start one worker process (``python -m tests.faultutil``)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "tests.faultutil", url, str(worker), str(out),
                             *args], cwd=REPO, env=env, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen[bytes], timeout: float = 90) -> int:
    """Wait for a worker; its stderr is shown when it failed."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"worker did not finish: {err.decode()[-2000:]}") from None
    if proc.returncode not in (0, 9):
        raise AssertionError(f"worker exited {proc.returncode}: {err.decode()[-2000:]}")
    return proc.returncode


def load(path: Path) -> list[dict[str, Any]]:
    return pickle.loads(path.read_bytes()) if path.exists() else []


@pytest.mark.parametrize("kind", ["soft", "sim"])
def test_sync_worker_dies_mid_allreduce_and_rejoins(kind: str, tmp_path: Path) -> None:
    """N=4 sync: member 3 dies after one chunk of call 2; the others time out, a new
    process takes member id 3, and every call of everyone is the exact sum of all four."""
    calls, die_at, seed = 6, 2, 11
    with switch(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=4, slots=SLOTS, packet_elems=ELEMS, dtype="int32")
        common = ["--stop", str(calls), "--size", str(SIZE), "--seed", str(seed)]
        procs = [spawn(sw.url, w, tmp_path / f"w{w}.pkl", *common) for w in range(3)]
        dead = spawn(sw.url, 3, tmp_path / "w3a.pkl", *common, "--die-at", str(die_at))
        assert finish(dead) == 9
        time.sleep(0.3)  # the survivors are stuck in call 2 now
        reborn = spawn(sw.url, 3, tmp_path / "w3b.pkl", *common, "--start", str(die_at))
        for p in [*procs, reborn]:
            assert finish(p) == 0
        counters = ctl.counters()
        epoch = ctl.read("AGG_EPOCH")
    first = load(tmp_path / "w3a.pkl")
    assert [r["call"] for r in first] == list(range(die_at))
    runs = {w: load(tmp_path / f"w{w}.pkl") for w in range(3)}
    runs[3] = first + load(tmp_path / "w3b.pkl")
    for w, recs in runs.items():
        assert [r["call"] for r in recs] == list(range(calls)), w
        for r in recs:
            want = expected_sum(seed, r["call"], [0, 1, 2, 3], SIZE, "int32")
            np.testing.assert_array_equal(r["result"], want, err_msg=f"worker {w} call {r['call']}")
            assert (r["aux"] & 0xF).tolist() == [4] * 3
    # the survivors failed call 2 (timeouts: they resumed it in vain, the dead member's
    # chunks missing), then followed the epoch the reborn member started (it found the
    # slots ahead of it: out of step, or a newcomer's timeout) and completed call 2 there
    for w in range(3):
        assert runs[w][die_at]["failures"], w
        assert all("Timeout" in f for f in runs[w][die_at]["failures"]), w
        assert not any(r["failures"] for r in runs[w][die_at + 1:]), w
        assert runs[w][-1]["epochs"] >= 1
    assert epoch != 0 and epoch % (1 << 24) == 0
    assert runs[3][die_at]["epochs"] >= 1  # the reborn member started it
    assert {r["epoch"] for w in range(4) for r in runs[w][die_at:]} == {epoch}
    # nothing of the abandoned call was summed into another: every RESULT was complete
    assert counters["CNT_DROP_MISMATCH"] == 0


@pytest.mark.parametrize("kind", ["soft", "sim"])
def test_async_others_train_while_one_is_down(kind: str, tmp_path: Path) -> None:
    """N=4, H=3 async: member 3 dies; 0-2 keep completing calls without a failure; a new
    member 3 catches up and contributes again. Every RESULT anyone took is, bit for bit,
    the ordered sum (RESULT aux) of the first GRADIENTs of that slot and round."""
    seed = 5
    with switch(kind, log_arrivals=True) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=4, slots=SLOTS, packet_elems=ELEMS, dtype="fp32",
                                  mode="async", threshold=3, staleness=1 << 30)
        common = ["--size", str(SIZE), "--seed", str(seed), "--dtype", "float32",
                  "--pace", "0.02"]
        stop = tmp_path / "stop"
        procs = [spawn(sw.url, w, tmp_path / f"w{w}.pkl", "--stop", "100000",
                       "--stop-file", str(stop), *common) for w in range(3)]
        dead = spawn(sw.url, 3, tmp_path / "w3a.pkl", "--stop", "100", *common, "--die-at", "3")
        assert finish(dead) == 9
        t_dead = time.time()
        time.sleep(0.5)
        reborn = spawn(sw.url, 3, tmp_path / "w3b.pkl", "--start", "3", "--stop", "15", *common)
        assert finish(reborn) == 0
        # the others stop together, a few iterations on (H = 3: none may be left alone; a
        # member that caught up made fewer calls for the same iteration, so not by calls)
        done = max(r["iteration"] for w in range(3) for r in load(tmp_path / f"w{w}.pkl"))
        stop.with_suffix(".tmp").write_text(str(done + 3))
        stop.with_suffix(".tmp").replace(stop)  # whole, never read half written
        for p in procs:
            assert finish(p) == 0
        arrivals = list(sw.arrivals or [])
    runs = {w: load(tmp_path / f"w{w}.pkl") for w in range(3)}
    back = load(tmp_path / "w3b.pkl")
    for w, recs in runs.items():
        assert not any(r["failures"] for r in recs), w  # nobody waited for the dead one
        assert sum(r["time"] > t_dead for r in recs) >= 5, w  # progress while it was down
    assert len(back) == 12 and not any(r["failures"] for r in back)
    first: dict[tuple[int, int, int], bytes] = {}
    for a in arrivals:
        if (a.seq - a.aux) & 0xFFFFFFFF <= 1 << 30:  # addable: not a poll (lag beyond bound)
            first.setdefault((a.slot, a.seq, a.worker), a.payload)
    contributed = 0
    for w, recs in [*runs.items(), (3, back)]:
        for r in recs:
            for c, (rnd, aux) in enumerate(zip(r["rounds"], r["aux"], strict=True)):
                slot = c % SLOTS
                order = result_order(int(aux))
                assert len(order) == 3
                parts = [np.frombuffer(first[slot, int(rnd), w], dtype=np.float32)
                         for w in order]
                want = ordered_sum(parts)
                got = r["result"][c * ELEMS:(c + 1) * ELEMS]
                np.testing.assert_array_equal(got.view(np.uint32),
                                              want[:got.size].view(np.uint32))
                contributed += w == 3 and 3 in order
    # the rejoined member is back in step: after its first call (a catch-up), calls are
    # answered by the rounds it sent, not by a newer round's RESEND (async may still overtake
    # it now and then); whether H = 3 is reached before its chunk arrives is timing
    # (``contributed`` counts the chunks where it was among the first three)
    assert any(r["stale"] == 0 for r in back[1:]), [r["stale"] for r in back]
    print(f"{kind}: rejoined member summed into {contributed} chunks")


@pytest.mark.parametrize("kind", ["soft", "sim"])
def test_rounds_crossing_into_the_next_block_move_agg_epoch(kind: str) -> None:
    """Before a call whose rounds reach the next epoch block, the members write AGG_EPOCH =
    that block, so the far-ahead bound (AGG_EPOCH + 2**25) stays ahead of the job: calls
    that cross three blocks are all summed, nothing is dropped AHEAD (without the writes
    the third would be: its rounds 2**25 ahead of AGG_EPOCH)."""
    block = 1 << 24
    with switch(kind) as sw, SwitchControl(sw.url) as ctl:
        ctl.configure_aggregation(members=2, slots=SLOTS, packet_elems=ELEMS, dtype="int32")
        aggs = [Aggregator(sw.url, worker=w, timeout=0.05, retries=8) for w in range(2)]
        seen = []
        for k in range(1, 4):  # k = 3 without the writes: 2**25 ahead of AGG_EPOCH
            for a in aggs:  # as after 2**24 - 1 calls of one chunk per slot in the block
                a._rounds = [k * block - 1] * SLOTS
            xs = [np.arange(2 * SLOTS * ELEMS, dtype=np.int32) * (w + 1) + k for w in range(2)]
            ys = [None, None]

            def call(w: int, xs: list[np.ndarray] = xs, ys: list[Any] = ys) -> None:
                ys[w] = aggs[w].allreduce(xs[w])

            run = [threading.Thread(target=call, args=(w,)) for w in range(2)]
            for t in run:
                t.start()
            for t in run:
                t.join(30)
            for w in range(2):
                np.testing.assert_array_equal(ys[w], xs[0] + xs[1])
                assert aggs[w].last_rounds.tolist() == [k * block - 1] * SLOTS + [k * block] * SLOTS
                assert aggs[w].epoch == k * block
            seen.append(ctl.read("AGG_EPOCH"))
        assert seen == [block, 2 * block, 3 * block]
        assert ctl.read("CNT_DROP_AHEAD") == 0
        for a in aggs:
            a.close()
