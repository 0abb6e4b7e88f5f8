"""The conformance suite: every kind of vector, each from a seed (:func:`vectors`).

Random mixed traffic, every malformed class, loss, duplication and reorder, async and a
leaf of a hierarchy, step ids and the far-ahead bound, replay sequences with prioritized
sampling and updates, the replay rate limiter, stacked samples of interleaving actors and
records up to 8 KB, the learning switch, register writes including refused ones (see :mod:`hostdrv.switch.conformance`).
"""

from __future__ import annotations

from hostdrv.switch.conformance_gen import UDP_PORT, UPLINK, VectorBuilder
from hostdrv.switch.conformance_run import M32, Vector
from hostdrv.wire import consts as C
from hostdrv.wire.protocol import Flags, Opcode

__all__ = ["vectors"]


def _params(**kw: int) -> dict[str, int]:
    """The switch's parameters: small memories, and one set for most vectors (the RTL leg
    builds nrl_switch once per set)."""
    p = {"capacity": 64, "record_bytes": 64, "max_slots": 8, "max_elems": 64,
         "build_hash": 0xC0FFEE}
    p.update(kw)
    return p


def _sync(seed: int, dtype: int, packet_elems: int = 32) -> Vector:
    g = VectorBuilder(f"sync_{'int32' if dtype else 'fp32'}_p{packet_elems}", seed,
             _params(max_elems=max(packet_elems, 64)))
    g.configure(members=4, slots=4, packet_elems=packet_elems, dtype=dtype)
    g.aggregation(30, wrap=True)
    g.malformed(60)
    g.aggregation(10, loss=0.2, dup=0.2, late=0.1)
    return g.v


def _async(seed: int) -> Vector:
    g = VectorBuilder("async", seed, _params())
    g.configure(members=5, slots=3, packet_elems=16, mode=1, threshold=3, staleness=2)
    g.aggregation(30, loss=0.1, dup=0.1, late=0.05)
    g.write("AGG_THRESHOLD", 1)  # every contribution completes a round
    g.aggregation(5)
    return g.v


def _async_catchup(seed: int) -> Vector:
    """Async members lagging beyond the staleness bound: never added, answered by a DONE
    copy of their round or a newer one (protocol section 4, step 1)."""
    g = VectorBuilder("async_catchup", seed, _params())
    g.configure(members=4, slots=2, packet_elems=16, mode=1, threshold=2, staleness=1)
    rng = g.rng
    base = [rng.randrange(1 << 20), (M32 - 5) & M32]
    for k in range(40):
        for s in range(g.slots):
            rnd = (base[s] + k) & M32
            total = g.packet_elems * 7
            fresh = rng.sample(range(g.members), g.threshold_members())
            frames = [(g.port(w), g.gradient(w, s, rnd, total)) for w in fresh]
            for w in range(g.members):  # laggards: this round, older or newer ones
                if w in fresh and rng.random() < 0.7:
                    continue
                r = (rnd + rng.choice([0, 0, 0, -1, -2, -3, 1])) & M32
                lag = rng.choice([0, 1, 2, 2, 3, 5, 1 << 20])
                frames.append((g.port(w), g.gradient(w, s, r, total, (r - lag) & M32)))
            g.deliver(frames, dup=0.1, reorder=0.3, late=0.05)
    return g.v


def _leaf(seed: int) -> Vector:
    """A leaf of a two-level tree: partial sums go up, the parent's RESULTs come down."""
    g = VectorBuilder("hierarchy_leaf", seed, _params())
    g.configure(members=3, slots=4, packet_elems=16, dtype=seed % 2)
    parent_ip, parent_udp = g.make_leaf(5)
    rng = g.rng
    first_step = rng.randrange(1 << 32)
    for k in range(40):
        s = rng.randrange(g.slots)
        rnd = 100 + k
        step = (first_step + k) & M32
        frames = [(g.port(w), g.gradient(w, s, rnd, g.packet_elems * 3,
                                         step if rng.random() >= 0.03 else g.other_step(step)))
                  for w in range(g.members)]
        g.deliver(frames, dup=0.15, reorder=0.5, late=0.05)
        for _ in range(rng.choice([0, 1, 1, 2])):  # the parent's RESULT (maybe twice, maybe late)
            err = rng.random() < 0.1
            data = g.build(rng.randrange(8), Opcode.RESULT,
                           flags=g.dtype | (int(Flags.ERROR) if err else 0)
                           | int(Flags.FROM_SWITCH),
                           slot=s, seq=rnd - rng.choice([0, 0, 0, 2]), count=g.packet_elems,
                           aux=rng.randrange(1 << 32), payload=g.elements(g.packet_elems),
                           total=g.packet_elems * 3,
                           ip_src=rng.choice([parent_ip] * 5 + [g.ip[0]]),
                           udp_src=parent_udp)
            g.frame(rng.choice([UPLINK] * 5 + [g.port(0)]), data)
    g.malformed(40)
    return g.v


_STEP_CASES = ("clean", "clean", "open", "done", "error", "length", "straggler")
"""What happens to one round of the step vectors (:func:`_step_round`)."""


def _step_round(g: VectorBuilder, s: int, rnd: int, step: int, total: int, case: str,
                flags: int = 0) -> tuple[list[tuple[int, bytes]], list[tuple[int, bytes]]]:
    """One sync round of call ``step`` (protocol section 4 step 4): the members' GRADIENTs,
    and what comes after them. ``case``: ``clean``; ``open``, a member of another step among
    them (an error copy, or a wrong step opens the copy and the others are refused);
    ``error``, that and more mismatches on the error copy; ``done``, members of other steps
    after the round completed (the ERROR-forced RESEND) and a retransmission of the right
    step; ``length``, a member of another length and step (a length mismatch: tested
    first); ``straggler``, member 0 one call behind (issue 19); ``up`` (a leaf), as
    ``done``, before or after the parent's RESULT."""
    rng = g.rng
    n = g.members
    m = rng.randrange(n)
    steps = [step] * n
    if case in ("open", "error"):
        steps[m] = g.other_step(step)
    elif case == "straggler":
        steps[0] = (step - 1) & M32
    first = [(g.port(w), g.gradient(w, s, rnd, total, steps[w], flags)) for w in range(n)]
    after: list[tuple[int, bytes]] = []
    if case == "length":
        first[m] = (g.port(m), g.gradient(m, s, rnd, total + g.packet_elems,
                                          g.other_step(step), flags))
    elif case in ("done", "up"):
        after = [(g.port(w), g.gradient(w, s, rnd, total, g.other_step(step), flags))
                 for w in rng.sample(range(n), rng.randint(1, min(2, n)))]
        w = rng.randrange(n)
        after.append((g.port(w), g.gradient(w, s, rnd, total, step, flags)))
    elif case == "error":
        w = rng.randrange(n)
        after = [(g.port(m), g.gradient(m, s, rnd, total, steps[m], flags)),
                 (g.port(w), g.gradient(w, s, rnd, total, g.other_step(step), flags))]
    return first, after


def _step_traffic(g: VectorBuilder, calls: int, flags: int = 0) -> None:
    """``calls`` sync calls, one round of every slot each, every round a :data:`_STEP_CASES`
    case; a lossy, duplicating, reordering network."""
    rng = g.rng
    base = [rng.randrange(1 << 20) for _ in range(g.slots)]
    totals = [g.packet_elems * rng.randint(1, 50) for _ in range(g.slots)]
    first_step = rng.randrange(1 << 32)
    for k in range(calls):
        step = (first_step + k) & M32
        for s in range(g.slots):
            first, after = _step_round(g, s, (base[s] + k) & M32, step, totals[s],
                                       rng.choice(_STEP_CASES), flags)
            g.deliver(first, loss=0.03, dup=0.1, reorder=0.5, late=0.03)
            g.deliver(after, dup=0.1, reorder=0.5)


def _step_flat(seed: int) -> Vector:
    """Step identity on a flat switch (sync): step mismatches on OPEN, DONE and error copies,
    a length mismatch with another step, a straggler one call behind; then mixed traffic."""
    g = VectorBuilder("step_flat", seed, _params())
    g.configure(members=3, slots=2, packet_elems=16, dtype=seed % 2)
    _step_traffic(g, 30)
    g.aggregation(8, step_mismatch=0.1)
    g.malformed(20)
    return g.v


def _step_root(seed: int) -> Vector:
    """Step identity at a root: its members are leaves, whose upward GRADIENTs (from their
    ``UDP_PORT``, ``FROM_SWITCH`` set) carry their members' step id."""
    g = VectorBuilder("step_root", seed, _params())
    g.configure(members=3, slots=3, packet_elems=16, dtype=seed % 2)
    for i in range(g.members):
        g.udp[i] = UDP_PORT
        g.write(f"MEMBER_UDP_{i}", UDP_PORT)
    _step_traffic(g, 25, flags=int(Flags.FROM_SWITCH))
    return g.v


def _step_leaf(seed: int) -> Vector:
    """Step identity at a leaf: its upward GRADIENT carries the copy's step (sync; async
    the round), a member of another step refused while OPEN, UP (waiting for the parent)
    or DONE (the parent's RESULT relayed), the parent's ERROR RESULTs of a step mismatch
    (aux = total) relayed down."""
    g = VectorBuilder("step_leaf", seed, _params())
    g.configure(members=3, slots=2, packet_elems=16, dtype=seed % 2)
    parent_ip, parent_udp = g.make_leaf(2)
    rng = g.rng
    total = g.packet_elems * 5
    first_step = rng.randrange(1 << 32)

    def parent_result(s: int, rnd: int) -> None:
        err = rng.random() < 0.3
        data = g.build(rng.randrange(8), Opcode.RESULT,
                       flags=g.dtype | int(Flags.FROM_SWITCH) | (int(Flags.ERROR) if err else 0),
                       slot=s, seq=rnd, count=g.packet_elems,
                       aux=total if err and rng.random() < 0.7 else rng.randrange(1 << 32),
                       payload=g.elements(g.packet_elems), total=total, ip_src=parent_ip,
                       udp_src=parent_udp)
        g.frame(UPLINK, data)

    for k in range(24):
        step = (first_step + k) & M32
        for s in range(g.slots):
            rnd = (200 + k) & M32
            first, after = _step_round(g, s, rnd, step, total,
                                       rng.choice(_STEP_CASES + ("up", "up")))
            g.deliver(first, loss=0.03, dup=0.1, reorder=0.5)
            answered = rng.random() < 0.5
            if answered:  # the parent's RESULT before the late members: DONE at the leaf
                parent_result(s, rnd)
            g.deliver(after, dup=0.1, reorder=0.5)
            if not answered and rng.random() < 0.8:
                parent_result(s, rnd)
    # async: the upward aux is the round, and steps are not checked
    g.write("AGG_MODE", 1)
    g.write("AGG_THRESHOLD", 2)
    g.write("AGG_STALENESS", 2)
    g.mode, g.staleness, g._threshold = 1, 2, 2
    for k in range(10):
        s = rng.randrange(g.slots)
        rnd = (500 + k) & M32
        frames = [(g.port(w), g.gradient(w, s, rnd, total, (rnd - rng.randint(0, 3)) & M32))
                  for w in range(g.members)]
        g.deliver(frames, dup=0.1, reorder=0.5)
        parent_result(s, rnd)
    return g.v


def _ahead(seed: int) -> Vector:
    """The far-ahead bound (protocol section 6, check 11): for several ``AGG_EPOCH`` values
    (0, a block, one that wraps), sync and async, full rounds exactly 2**25 - 1 ahead
    (accepted), 2**25 and more ahead up to 2**31 - 1 (dropped as AHEAD), and behind (2**31
    and more: processed); ordinary traffic crossing the bound; stragglers of an old epoch
    after ``AGG_EPOCH`` moves on (processed: STALE/RESEND) and after it moves back (their
    rounds are now far ahead)."""
    g = VectorBuilder("ahead", seed, _params())
    g.configure(members=3, slots=2, packet_elems=16, dtype=seed % 2)
    rng = g.rng
    ahead, half = C.AGG_AHEAD_ROUNDS, 1 << 31
    epochs = [0, rng.randrange(1, 255) * C.EPOCH_ROUNDS, 0xFF000000]
    for mode in (0, 1):
        if mode:
            g.write("AGG_MODE", 1)
            g.write("AGG_THRESHOLD", 2)
            g.write("AGG_STALENESS", 1)
            g.mode, g.staleness, g._threshold = 1, 1, 2
        rng.shuffle(epochs)
        for epoch in epochs:
            g.write("AGG_EPOCH", epoch)
            probes = [ahead - 1, ahead, ahead + 1, half - 1, half, half + 1, M32, 0, 1,
                      rng.randrange(ahead, half), rng.randrange(half, 1 << 32),
                      rng.randrange(ahead)]
            rng.shuffle(probes)
            for d in probes:
                rnd = (epoch + d) & M32
                s = rng.randrange(g.slots)
                step = rng.randrange(1 << 32)
                frames = [(g.port(w), g.gradient(w, s, rnd, g.packet_elems * 3,
                                                 (rnd - rng.randint(0, 2)) & M32 if mode else step))
                          for w in range(g.members)]
                g.deliver(frames, dup=0.1, reorder=0.3)
            g.aggregation(6, start=(epoch + ahead - 3) & M32)  # crossing the bound
            g.aggregation(4, start=(epoch - 2) & M32)  # around the epoch
            g.write("AGG_EPOCH", (epoch + C.EPOCH_ROUNDS) & M32)  # the job moved on
            for op in rng.sample(g.sent[-40:], 12):  # stragglers of the old epoch
                g.frame(op[1], op[2])
            g.write("AGG_EPOCH", (epoch - ahead) & M32)  # moved back: the rounds are ahead
            for op in rng.sample(g.sent[-40:], 8):
                g.frame(op[1], op[2])
            g.read("AGG_EPOCH")
    return g.v


def _replay(seed: int, capacity: int, record_bytes: int) -> Vector:
    g = VectorBuilder(f"replay_c{capacity}_r{record_bytes}", seed,
             _params(capacity=capacity, record_bytes=record_bytes))
    g.configure(members=2, slots=1, packet_elems=16)
    w = g.with_role(C.ROLE_LEARNER)
    g.frame(g.port(w), g.sample(w))  # from an empty memory
    g.replay(400)
    g.malformed(40)
    return g.v


def _rate(seed: int) -> Vector:
    """The replay rate limiter (protocol section 5): minimum size, samples-per-insert ratios
    with error buffers (NOT_YET answers to PUSH and SAMPLE_REQ), the accumulator read back,
    cleared by RPL_SPI and RPL_RESET, and extreme register values (a 64-bit offset)."""
    g = VectorBuilder("rate", seed, _params())
    g.configure(members=2, slots=1, packet_elems=16,
                roles=[C.ROLE_ACTOR, C.ROLE_LEARNER, C.ROLE_ACTOR | C.ROLE_LEARNER,
                       C.ROLE_ACTOR, C.ROLE_LEARNER, 0, 0, 0])
    rng, one = g.rng, C.SPI_ONE
    diff = ("RPL_RATE_DIFF_LO", "RPL_RATE_DIFF_HI")
    w = g.with_role(C.ROLE_LEARNER)
    g.write("RPL_MIN_SIZE", rng.randint(8, 24))
    g.frame(g.port(w), g.sample(w))  # empty
    g.replay(60)  # ratio limiting off: MIN_SIZE only, diff counts the samples down
    for name in diff:
        g.read(name)
    for _ in range(4):
        g.write("RPL_MIN_SIZE", rng.randint(0, 40))
        spi = rng.choice([one, one // 2, 3 * one + rng.randrange(one), 8 * one, 1])
        g.write("RPL_SPI", spi)
        g.write("RPL_SPI_ERROR", rng.choice([16 * one, 40 * one + 7, 64 * one,
                                             16 * spi + rng.randrange(one), 0]))
        g.replay(rng.randint(60, 120))
        for name in diff:
            g.read(name)
    # extreme values: offset = SPI * MIN_SIZE near 2**64, then a small minimum size
    g.write("RPL_SPI", M32)
    g.write("RPL_SPI_ERROR", M32)
    g.write("RPL_MIN_SIZE", M32)
    g.replay(30)
    g.write("RPL_MIN_SIZE", 3)
    g.replay(40)
    for name in diff:
        g.read(name)
    g.write("RPL_RESET", 1)
    g.write("RPL_SPI", 2 * one)
    g.write("RPL_SPI_ERROR", 40 * one)
    g.replay(60)
    return g.v


_STACKS = (0, 1, 2, 3, 4, 4, 4, 5, 8, 8, C.MAX_STACK + 1, 255, M32)
"""SAMPLE_REQ stack depths (``aux``) of the stacked vectors: one record, 2 .. MAX_STACK, and
depths above MAX_STACK (BAD_COUNT drops)."""


def _stacked_traffic(g: VectorBuilder, events: int, actors: list[int], *,
                     counts: tuple[int, ...], max_log2_batch: int) -> None:
    """Replay traffic of several actors whose PUSHes interleave (so a stack must follow each
    actor's chain, not the ring), stacked SAMPLE_REQs, UPDATEs, ``RPL_RESET`` (chains restart)
    and reads; a small ring wraps, and an overwritten predecessor breaks a chain."""
    rng = g.rng
    for _ in range(events):
        r = rng.random()
        if r < 0.45:
            a = rng.choice(actors)
            g.frame(g.port(a), g.push(a, rng.choice(counts)))
        elif r < 0.8:
            w = g.with_role(C.ROLE_LEARNER)
            g.frame(g.port(w), g.sample(w, rng.choice(_STACKS), max_log2_batch))
        elif r < 0.9:
            w = g.with_role(C.ROLE_LEARNER)
            g.frame(g.port(w), g.update(w))
        elif r < 0.93:
            g.write("RPL_RESET", 1)
            g.size = 0
        elif r < 0.95:
            g.write("RPL_SEED", rng.choice([0, rng.randrange(1 << 32)]))
        else:
            for name in ("RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO", "RPL_TOTAL_HI"):
                g.read(name)


def _stacked(seed: int) -> Vector:
    """Stacked samples (SAMPLE_REQ ``aux`` = k, protocol section 5): five actors interleaving
    in a 64-record ring (chains across the wrap, overwrites breaking them), k from 0 to
    MAX_STACK and above it, resets; then the rate limiter with stacks (it counts B samples,
    not B * k records)."""
    g = VectorBuilder("stacked", seed, _params())
    actor, learner = C.ROLE_ACTOR, C.ROLE_LEARNER
    g.configure(members=2, slots=1, packet_elems=16,
                roles=[actor, actor, actor, actor | learner, learner, actor, 0, learner])
    actors = [0, 1, 2, 3, 5]
    w = g.with_role(learner)
    g.frame(g.port(w), g.sample(w, 4))  # from an empty memory
    _stacked_traffic(g, 300, actors, counts=(1, 1, 1, 2, 3, 5, 16), max_log2_batch=6)
    one = C.SPI_ONE
    g.write("RPL_MIN_SIZE", 8)
    g.write("RPL_SPI", one)
    g.write("RPL_SPI_ERROR", 24 * one)
    _stacked_traffic(g, 120, actors, counts=(1, 2, 4), max_log2_batch=3)
    for name in ("RPL_RATE_DIFF_LO", "RPL_RATE_DIFF_HI"):
        g.read(name)
    g.malformed(20)
    return g.v


def _large(seed: int, record_bytes: int) -> Vector:
    """Records up to MAX_RECORD_BYTES (an Atari frame record of 7104 bytes, 8192): PUSHes of
    as many as fit a 65535-byte frame, stacked samples of small batches (a SAMPLE_RESP is
    128 + R bytes), malformed frames."""
    g = VectorBuilder(f"large_r{record_bytes}", seed, _params(capacity=16,
                                                                record_bytes=record_bytes))
    actor, learner = C.ROLE_ACTOR, C.ROLE_LEARNER
    g.configure(members=2, slots=1, packet_elems=16,
                roles=[actor, actor, learner, actor | learner, 0, 0, 0, 0])
    fit = (C.MAX_FRAME_LEN - 2 * C.BLOCK) // record_bytes
    _stacked_traffic(g, 50, [0, 1, 3], counts=(1, 1, 2, fit), max_log2_batch=2)
    g.malformed(12)
    return g.v


def _mixed(seed: int) -> Vector:
    """Everything at once, with register writes (legal and refused) between the frames."""
    g = VectorBuilder("mixed", seed, _params(capacity=128, record_bytes=128, max_elems=352) if seed % 2
             else _params())
    g.configure(members=4, slots=8, packet_elems=352 if seed % 2 else 48, job=seed & 0xFF)
    rng = g.rng
    for _ in range(12):
        r = rng.random()
        if r < 0.35:
            g.aggregation(rng.randint(1, 4))
        elif r < 0.6:
            g.replay(rng.randint(5, 40))
        elif r < 0.8:
            g.malformed(rng.randint(5, 20))
        elif r < 0.9:
            g.l2(rng.randint(5, 40))
        else:
            g.registers(rng.randint(3, 10))
            g.configure(members=rng.randint(1, 8), slots=rng.randint(1, 8),
                        packet_elems=16 * rng.randint(1, 4), dtype=rng.randint(0, 1),
                        mode=rng.randint(0, 1), threshold=rng.randint(0, 4),
                        staleness=rng.randint(0, 3), job=g.job)
            g.write("CTRL", rng.choice([0x3, 0x3, 0x1, 0x2, 0x80000003]))
    return g.v


def _l2(seed: int) -> Vector:
    """The learning switch: ordinary traffic, aging, a full table, protocol frames between."""
    g = VectorBuilder("l2", seed, _params())
    g.configure(members=3, slots=2, packet_elems=16)
    g.read("L2_AGE_FRAMES")
    g.l2(150, age=0.0)  # no aging (the reset period is far away): learning and a full table
    g.aggregation(3)
    g.replay(8)
    g.l2(250)
    g.write("CTRL", 0x80000003)
    g.aggregation(2)
    g.l2(150, age=0.06)
    g.read("L2_AGE_FRAMES")
    return g.v


def _registers(seed: int) -> Vector:
    g = VectorBuilder("registers", seed, _params())
    g.registers(600)
    g.configure(members=3, slots=2, packet_elems=16)
    g.write("UDP_PORT", UDP_PORT)  # the random writes may have moved it: protocol frames again
    g.write("CTRL", 0)  # both engines off
    g.malformed(20)
    for _ in range(4):  # legal frames of every engine: DISABLED
        g.frame(*g.valid_frame())
    g.replay(10)
    g.write("CTRL", 0x80000003)  # clear the counters, engines on
    g.aggregation(4)
    g.registers(200)
    return g.v


def _carve(g: VectorBuilder, page: int, **share: int) -> None:
    """Job ``page``'s share (``slot_base``, ``slots``, ``rpl_base``, ``rpl_cap``, ``record``),
    written in an order the share rules take while the job is disabled."""
    g.tenant(page)
    for name, key in (("JOB_SLOT_COUNT", "slots"), ("JOB_SLOT_BASE", "slot_base"),
                      ("JOB_RPL_CAP", "rpl_cap"), ("JOB_RPL_BASE", "rpl_base"),
                      ("JOB_RPL_RECORD", "record")):
        if key in share:
            g.write(name, share[key])
    g.cap, g.rb = share.get("rpl_cap", g.cap), share.get("record", g.rb)


def _jobs(seed: int) -> Vector:
    """Several jobs and tables at once (protocol section 11): three jobs carved out of the
    slot and record memories, each with hosts of its own, interleaved aggregation and replay
    with loss, malformed frames, a member of one job sending with another's id, refused
    carvings, claims (``JOB_OWNER``) taken and refused, and jobs disabled and re-enabled
    while the others run (``JOB_ENABLE`` and its set / clear pair)."""
    g = VectorBuilder("jobs", seed, _params(jobs=4, capacity=64, record_bytes=128, max_slots=8))
    rng = g.rng
    ids = rng.sample(range(256), 4)
    _carve(g, 0, slots=3, rpl_cap=16)
    _carve(g, 1, slots=4, slot_base=4, rpl_cap=32, rpl_base=32)
    _carve(g, 2, slots=0, rpl_cap=16, rpl_base=16, record=64)
    g.tenant(0)
    g.write("JOB_ENABLE", 0b1111)  # refused: job 3 still has the reset share (everything)
    for page in range(3):
        g.tenant(page)
        g.write("JOB_ID", ids[page])
    g.tenant(0)
    g.write("JOB_ENABLE", 0b111)
    g.write("JOB_SLOT_COUNT", 5)  # refused: job 1's slots
    g.write("JOB_ID", ids[1])  # refused: job 1's id
    g.write("JOB_ENABLE_SET", 0b1010)  # refused: job 1 is enabled already
    g.write("JOB_OWNER", 0x600D)  # job 0 claimed ...
    g.write("JOB_OWNER", 0xBAD)  # ... refused: another token holds it
    g.write("JOB_OWNER", 0x600D)  # the same token: taken
    g.write("JOB_OWNER", 0)  # freed
    shapes = {0: dict(members=3, slots=3, packet_elems=32), 1: dict(members=4, slots=4,
              packet_elems=16, mode=1, threshold=2, staleness=2), 2: dict(members=0, slots=1,
              packet_elems=16)}
    for page, shape in shapes.items():
        g.tenant(page)
        g.configure(job=ids[page], **shape)  # type: ignore[arg-type]
    for phase in range(24):
        if phase == 12:
            g.tenant(0)
            g.write("JOB_ENABLE", 0b101)  # job 1 leaves: its slots and table are freed
            g.write("JOB_ENABLE", 0b111)
            g.write("JOB_ENABLE_CLR", 0b100)  # and job 2, by its bit alone
            g.write("JOB_ENABLE_SET", 0b100)
        g.tenant(rng.randrange(3))
        r = rng.random()
        if r < 0.4 and g.page != 2:
            g.aggregation(rng.randint(1, 3), loss=0.05, dup=0.05)
        elif r < 0.75:
            g.replay(rng.randint(5, 25))
        elif r < 0.85:
            g.malformed(rng.randint(3, 10))
        elif r < 0.92:  # a member of this job sending with another job's id
            mine = g.job
            g.job = ids[rng.choice([p for p in range(3) if p != g.page])]
            g.frame(*g.valid_frame())
            g.job = mine
        else:
            for name in ("RPL_SIZE", "RPL_WPTR", "RPL_TOTAL_LO", "CNT_RX_GRADIENT"):
                g.read(name)
    return g.v


def vectors(scale: int = 1) -> list[Vector]:
    """The conformance suite (deterministic); ``scale`` > 1 adds seeds of every kind."""
    out: list[Vector] = []
    for k in range(scale):
        s = 1000 * k
        out += [_sync(s + 1, 0), _sync(s + 2, 1), _sync(s + 3, 0, packet_elems=352), _async(s + 4),
                _leaf(s + 5), _leaf(s + 6), _replay(s + 7, 64, 64), _replay(s + 8, 128, 192),
                _replay(s + 9, 4, 64), _mixed(s + 10), _mixed(s + 11), _registers(s + 12),
                _l2(s + 13), _l2(s + 14), _rate(s + 15), _rate(s + 16),
                _async_catchup(s + 17), _step_flat(s + 18), _step_flat(s + 19),
                _step_leaf(s + 20), _step_leaf(s + 21), _step_root(s + 22), _ahead(s + 23),
                _ahead(s + 24), _stacked(s + 25), _stacked(s + 26), _large(s + 27, 7104),
                _large(s + 28, C.MAX_RECORD_BYTES), _jobs(s + 29), _jobs(s + 30)]
    return out
