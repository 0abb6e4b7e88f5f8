"""Who may use the control channel of a soft or sim switch (``docs/protocol.md`` section 9).

* Without a key, requests from a non-loopback address are refused with status
  5 and counted in ``SRV_CTRL_REFUSED``; nothing is executed. That needs a
  non-loopback local address, so the test runs in a private network namespace
  (``unshare -n``) with ``10.77.0.1`` added to its own ``lo``.
* With ``--control-key FILE`` every request, loopback included, must carry a
  session, timestamp, nonce, attempt and an HMAC-SHA256 under the file's key:
  unsigned, wrongly signed and expired requests are refused and counted; signed
  ones (``key_file=``, ``?key=FILE``, ``NETRL_CONTROL_KEY``) are executed.
* A signed request executes at most once: its replays, from the same or another
  address, and after the switch restarted (another session), are refused with
  status 5 and counted; a retry (a new attempt of the same request) is answered
  from the reply cache, not executed again, also when the client's first reply
  is lost (a relay that drops it); the legitimate client keeps working.
* The servers' command line takes ``--control-key`` and prints the refusals
  with its statistics when it stops.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from netutil import build_sim_rtl, switch_factory

from hostdrv.client.control import SwitchControl
from hostdrv.client.transport import CONTROL_KEY_ENV, ControlAuthError, TransportError
from hostdrv.switch.soft import SoftSwitch, SoftSwitchProcess
from hostdrv.wire import regmap
from hostdrv.wire.control import (
    CONTROL,
    CONTROL_AUTH_WINDOW_MS,
    CONTROL_MAGIC,
    CONTROL_READ,
    CONTROL_WRITE,
    ControlReplayGuard,
    ControlStatus,
    SignedRequest,
    sign_control,
)

REPO = Path(__file__).resolve().parents[1]
REMOTE_IP = "10.77.0.1"


@pytest.fixture(params=["native", "model", "sim"])
def make_switch(request: pytest.FixtureRequest) -> Iterator[Callable[..., SoftSwitch]]:
    """A factory of started switches on loopback (the soft switch with either engine, or
    the sim switch), closed after the test; ``listen`` picks the address."""
    with switch_factory(request.param) as make:
        yield make


@pytest.fixture()
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(CONTROL_KEY_ENV, raising=False)
    path = tmp_path / "control.key"
    path.write_bytes(b"  \n" + os.urandom(24).hex().encode() + b"\n\n")
    return path


def _raw_request(address: tuple[str, int], datagram: bytes,
                 sock: socket.socket | None = None) -> tuple[int, int, str, int]:
    """Send one control datagram (from ``sock``, else a new socket); (status, tag,
    reason, value) of the reply."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as own:
        s = sock or own
        s.settimeout(5)
        s.sendto(datagram, address)
        reply = s.recv(2048)
    _m, _op, status, tag, _addr, value = CONTROL.unpack_from(reply)
    return status, tag, reply[CONTROL.size:].decode(), value


def _session(sw: SoftSwitch, key: bytes) -> int:
    """The switch's session, learned as a client learns it: a request signed for session 0
    is refused (status 5, not counted) with the session in the reply's value."""
    before = sw.stats["ctrl_refused"]
    req = CONTROL.pack(CONTROL_MAGIC, CONTROL_READ, 0, 7, regmap.REGISTERS["MAGIC"].addr, 0)
    status, tag, why, session = _raw_request(sw.address, sign_control(req, key))
    assert (status, tag) == (ControlStatus.UNAUTHENTICATED, 7) and "session" in why
    assert session != 0 and sw.stats["ctrl_refused"] == before
    return session


def _write_req(name: str, value: int, tag: int) -> bytes:
    return CONTROL.pack(CONTROL_MAGIC, CONTROL_WRITE, 0, tag, regmap.REGISTERS[name].addr, value)


def test_control_key_needs_signed_requests(make_switch: Callable[..., SoftSwitch],
                                           key_file: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    sw = make_switch(control_key=str(key_file))
    key = key_file.read_bytes().strip()
    slots = sw.read("AGG_SLOTS")
    refused = 0
    # unsigned, from loopback: refused, nothing executed
    with SwitchControl(sw.url) as ctl:
        with pytest.raises(ControlAuthError, match=r"write AGG_SLOTS=5.*no HMAC") as err:
            ctl.write("AGG_SLOTS", 5)
        assert err.value.status == ControlStatus.UNAUTHENTICATED == 5
        assert "--control-key" in str(err.value) and CONTROL_KEY_ENV in str(err.value)
        refused += 1
        with pytest.raises(ControlAuthError, match="read AGG_SLOTS"):
            ctl.read("AGG_SLOTS")
        refused += 1
    assert sw.read("AGG_SLOTS") == slots
    # signed with the key: key_file=, ?key=FILE, NETRL_CONTROL_KEY
    with SwitchControl(sw.url, key_file=key_file) as ctl:
        ctl.write("AGG_SLOTS", slots - 1)
        assert ctl.read("AGG_SLOTS") == slots - 1 == sw.read("AGG_SLOTS")
    with SwitchControl(f"{sw.url}?key={key_file}") as ctl:
        ctl.write("AGG_SLOTS", slots - 2)
        assert sw.read("AGG_SLOTS") == slots - 2
    monkeypatch.setenv(CONTROL_KEY_ENV, str(key_file))
    with SwitchControl(sw.url) as ctl:
        ctl.write("AGG_SLOTS", slots - 3)
        assert sw.read("AGG_SLOTS") == slots - 3
    monkeypatch.delenv(CONTROL_KEY_ENV)
    # another key: refused
    wrong = tmp_path / "wrong.key"
    wrong.write_bytes(key[:-1] + bytes([key[-1] ^ 1]))
    with SwitchControl(sw.url, key_file=wrong) as ctl, \
            pytest.raises(ControlAuthError, match="wrong HMAC"):
        ctl.write("AGG_SLOTS", 1)
    refused += 1
    assert sw.read("AGG_SLOTS") == slots - 3
    # a request signed more than 30 s ago (a replay) or ahead: refused; signed now: executed
    session = _session(sw, key)
    now = int(time.time() * 1000)
    for tag, ts in enumerate((now - CONTROL_AUTH_WINDOW_MS - 1000,
                              now + CONTROL_AUTH_WINDOW_MS + 1000), start=100):
        signed = sign_control(_write_req("AGG_SLOTS", 1, tag), key, session=session,
                              timestamp=ts)
        status, rtag, why, value = _raw_request(sw.address, signed)
        assert (status, rtag) == (ControlStatus.UNAUTHENTICATED, tag) and "expired" in why
        assert value == 0  # only a refusal for another session names the session
        refused += 1
    assert sw.read("AGG_SLOTS") == slots - 3
    signed = sign_control(_write_req("AGG_SLOTS", 1, 102), key, session=session)
    # bytes after the HMAC are not signed and are ignored
    assert _raw_request(sw.address, signed + b"junk")[:2] == (ControlStatus.OK, 102)
    assert sw.read("AGG_SLOTS") == 1
    # a truncated MAC is no MAC
    status, _tag, why, _v = _raw_request(sw.address, signed[:-1])
    assert status == ControlStatus.UNAUTHENTICATED and "no HMAC" in why
    refused += 1
    # a short request: op 0x80, tag 0, status 5 (it has no HMAC)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(b"NRLC\x02", sw.address)
        reply = s.recv(2048)
    assert CONTROL.unpack_from(reply)[1:4] == (0x80, ControlStatus.UNAUTHENTICATED, 0)
    refused += 1
    with SwitchControl(sw.url, key_file=key_file) as ctl:
        assert ctl.read("SRV_CTRL_REFUSED") == refused == sw.stats["ctrl_refused"]
        ctl.clear_counters()
        assert ctl.server_counters()["SRV_CTRL_REFUSED"] == 0
    assert sw.stats["ctrl_refused"] == refused


def test_loopback_needs_no_key(make_switch: Callable[..., SoftSwitch], key_file: Path) -> None:
    sw = make_switch()
    with SwitchControl(sw.url) as ctl:
        ctl.write("AGG_SLOTS", 7)
        assert ctl.read("AGG_SLOTS") == 7
    # a signing client is served too (the switch has no key to check it against)
    with SwitchControl(sw.url, key_file=key_file) as ctl:
        ctl.write("AGG_SLOTS", 8)
        assert ctl.read("SRV_CTRL_REFUSED") == 0
    assert sw.read("AGG_SLOTS") == 8


def test_bad_key_files_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.key"
    empty.write_text(" \n")
    with pytest.raises(TransportError, match="empty"):
        SoftSwitch(control_key=str(empty))
    with pytest.raises(TransportError, match="cannot read control key file"):
        SwitchControl("soft://127.0.0.1:9", key_file=tmp_path / "missing.key")
    with pytest.raises(TransportError, match="empty"):
        SwitchControl(f"soft://127.0.0.1:9?key={empty}")


# ---------------------------------------------------------------------------
# at most once: replays, retries, restarts


def test_signed_requests_execute_at_most_once(make_switch: Callable[..., SoftSwitch],
                                              key_file: Path) -> None:
    sw = make_switch(control_key=str(key_file))
    key = key_file.read_bytes().strip()
    session = _session(sw, key)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as a, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as b, \
            SwitchControl(sw.url, key_file=key_file) as ctl:
        # a counter clear captured on the wire runs once: the counter moved after it stays
        clear = sign_control(_write_req("CTRL", 0x80000003, 1), key, session=session)
        assert _raw_request(sw.address, clear, a)[:2] == (ControlStatus.OK, 1)
        a.sendto(b"", sw.address)  # an empty datagram: one BAD_LENGTH drop
        assert ctl.read("CNT_DROP_BAD_LENGTH") == 1
        refused = 0
        for sock in (a, b):  # the same address, another address
            status, tag, why, value = _raw_request(sw.address, clear, sock)
            assert (status, tag, value) == (ControlStatus.UNAUTHENTICATED, 1, 0)
            assert "replayed" in why
            refused += 1
        assert ctl.read("CNT_DROP_BAD_LENGTH") == 1
        # a JOB_ID write captured, then the job moves on: its replays cannot roll it back
        job = sign_control(_write_req("JOB_ID", 0x37, 2), key, session=session)
        assert _raw_request(sw.address, job, a)[:2] == (ControlStatus.OK, 2)
        ctl.write("JOB_ID", 0x44)
        for sock in (a, b, a):
            assert _raw_request(sw.address, job, sock)[0] == ControlStatus.UNAUTHENTICATED
            refused += 1
        assert ctl.read("JOB_ID") == 0x44 == sw.read("JOB_ID")
        # a retry (a new attempt of the request, from any address) is answered from the
        # reply cache and not executed again; each attempt runs once
        ts, nonce = int(time.time() * 1000), 0x0123456789ABCDEF
        first = sign_control(_write_req("JOB_ID", 0x50, 3), key, session=session,
                             timestamp=ts, nonce=nonce, attempt=0)
        assert _raw_request(sw.address, first, a)[:2] == (ControlStatus.OK, 3)
        ctl.write("JOB_ID", 0x51)
        retry = sign_control(_write_req("JOB_ID", 0x50, 3), key, session=session,
                             timestamp=ts, nonce=nonce, attempt=1)
        status, tag, _why, value = _raw_request(sw.address, retry, b)
        assert (status, tag, value) == (ControlStatus.OK, 3, 0x50)
        assert ctl.read("JOB_ID") == 0x51
        for dgram in (retry, first):
            assert _raw_request(sw.address, dgram, a)[0] == ControlStatus.UNAUTHENTICATED
            refused += 1
        assert ctl.read("JOB_ID") == 0x51
        # the legitimate client keeps working, and every replay was counted
        ctl.write("AGG_SLOTS", 3)
        assert ctl.read("AGG_SLOTS") == 3
        assert ctl.read("SRV_CTRL_REFUSED") == refused == sw.stats["ctrl_refused"]


def test_replay_guard_bounds_its_memory_without_a_hole() -> None:
    """The guard forgets requests whose timestamp left the window, and beyond its capacity
    the oldest, raising its floor: nothing forgotten is ever executed again."""
    g = ControlReplayGuard(session=5, capacity=2)
    now = 1_000_000_000
    reqs = [SignedRequest(b"", 5, now + i, 100 + i, 0) for i in range(3)]
    for r in reqs:
        assert g.check(r, now) == ("", None)
        g.remember(r, b"reply%d" % r.nonce)
    assert len(g) == 2 and g.floor == now  # the first was forgotten: its timestamp is the floor
    why, cached = g.check(reqs[0], now)
    assert "expired" in why and cached is None
    why, _ = g.check(SignedRequest(b"", 5, now, 999, 0), now)  # unknown, not after the floor
    assert "expired" in why
    assert g.check(SignedRequest(b"", 5, now + 1, 101, 1), now) == ("", b"reply101")  # a retry
    assert g.check(SignedRequest(b"", 5, now + 1, 101, 1), now)[0].startswith("replayed")
    assert g.check(SignedRequest(b"", 6, now + 1, 101, 2), now)[0].startswith("session")
    # 30 s later every remembered request is forgotten, and refused as expired
    later = now + CONTROL_AUTH_WINDOW_MS + 10
    assert "expired" in g.check(reqs[2], later)[0] and len(g) == 0


class _LossyRelay:
    """A UDP relay between one client and a switch that drops the next ``drop`` OK replies,
    and sends an empty datagram (one BAD_LENGTH drop) to the switch after each it drops."""

    def __init__(self, switch: tuple[str, int]) -> None:
        self.switch = switch
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.drop = 0
        self.dropped = 0
        self.client: tuple[str, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"soft://127.0.0.1:{self.sock.getsockname()[1]}"

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data, src = self.sock.recvfrom(4096)
            except (TimeoutError, OSError):
                continue
            if src != self.switch:
                self.client = src
                self.sock.sendto(data, self.switch)
            elif self.client is not None:
                if self.drop and len(data) >= CONTROL.size and data[5] == ControlStatus.OK:
                    self.drop -= 1
                    self.dropped += 1
                    self.sock.sendto(b"", self.switch)
                    continue
                self.sock.sendto(data, self.client)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def test_retry_after_a_lost_reply_executes_once(make_switch: Callable[..., SoftSwitch],
                                                key_file: Path) -> None:
    sw = make_switch(control_key=str(key_file))
    relay = _LossyRelay(sw.address)
    try:
        with SwitchControl(relay.url, key_file=key_file, timeout=0.2) as ctl:
            assert ctl.read("MAGIC") == regmap.REGISTERS["MAGIC"].reset  # learns the session
            relay.drop = 1
            ctl.write("CTRL", 0x80000003)  # executed once; its reply is lost, the retry is answered
            assert relay.dropped == 1
            # the drop the relay caused after the first execution was not cleared again
            assert ctl.read("CNT_DROP_BAD_LENGTH") == 1
            relay.drop = 1
            ctl.write("JOB_ID", 0x21)
            assert relay.dropped == 2 and ctl.read("JOB_ID") == 0x21
            assert ctl.read("SRV_CTRL_REFUSED") == 0
    finally:
        relay.close()


def test_no_replay_across_a_restart(make_switch: Callable[..., SoftSwitch],
                                    key_file: Path) -> None:
    sw = make_switch(control_key=str(key_file))
    key = key_file.read_bytes().strip()
    host, port = sw.address
    old_session = _session(sw, key)
    captured = sign_control(_write_req("JOB_ID", 0x37, 9), key, session=old_session)
    with SwitchControl(sw.url, key_file=key_file) as ctl:
        assert _raw_request(sw.address, captured)[:2] == (ControlStatus.OK, 9)
        ctl.write("JOB_ID", 0x44)
        sw.close()
        sw = make_switch(f"{host}:{port}", control_key=str(key_file))  # the same address
        new_session = _session(sw, key)
        assert new_session != old_session
        # the client learns the new session and carries on
        ctl.write("JOB_ID", 0x45)
        # a request of the switch's earlier run is refused and counted, nothing executed
        status, tag, why, value = _raw_request(sw.address, captured)
        assert (status, tag, value) == (ControlStatus.UNAUTHENTICATED, 9, new_session)
        assert "session" in why and "earlier run" in why
        assert ctl.read("JOB_ID") == 0x45
        # counted: the replay, and the client's first request after the restart (signed
        # for the old session: refused, then signed again for the new one)
        assert ctl.read("SRV_CTRL_REFUSED") == 2 == sw.stats["ctrl_refused"]


# ---------------------------------------------------------------------------
# a non-loopback source, in a private network namespace

REMOTE_CHILD = '''\
"""Run in a private network namespace (unshare -n): control requests from 10.77.0.1."""
import json, subprocess, sys
from hostdrv.client.control import SwitchControl
from hostdrv.client.transport import ControlAuthError

kind, key_file, remote_ip = sys.argv[1:4]
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["ip", "addr", "add", remote_ip + "/32", "dev", "lo"], check=True)
if kind == "sim":
    from hostdrv.switch.sim import SimSwitch as Switch
else:
    from hostdrv.switch.soft import SoftSwitch as Switch


def attempt(fn):
    try:
        return ["ok", fn()]
    except ControlAuthError as e:
        return ["refused", int(e.status), str(e)]


out = {}
for keyed in (False, True):
    sw = Switch("0.0.0.0:0", control_key=key_file if keyed else None).start()
    port = sw.address[1]
    remote, local = f"{kind}://{remote_ip}:{port}", f"{kind}://127.0.0.1:{port}"
    sign = {"key_file": key_file} if keyed else {}
    with SwitchControl(local, **sign) as ctl:
        ctl.write("AGG_SLOTS", 3)
    res = {}
    with SwitchControl(remote) as r:
        res["unsigned_write"] = attempt(lambda: r.write("AGG_SLOTS", 9))
        res["unsigned_read"] = attempt(lambda: r.read("MAGIC"))
        res["source"] = r._t.sock.getsockname()[0]
    with SwitchControl(remote, key_file=key_file) as r:
        res["signed_write"] = attempt(lambda: r.write("AGG_SLOTS", 5))
    with SwitchControl(local, **sign) as ctl:
        res["slots"] = ctl.read("AGG_SLOTS")
        res["server"] = ctl.server_counters()
    res["stats"] = sw.stats
    res["server_class"] = type(sw).__name__
    sw.close()
    out["keyed" if keyed else "plain"] = res
print("AUTH " + json.dumps(out))
'''


def _network_namespace() -> str:
    """``unshare`` if this machine lets the test make a network namespace, else skip.

    A machine-dependent skip (root, util-linux ``unshare``, iproute2 ``ip``),
    listed in ``tests/test_ci_policy.py``.
    """
    unshare, why = shutil.which("unshare"), ""
    if os.geteuid() != 0:
        why = "unshare -n needs root (CAP_SYS_ADMIN)"
    elif unshare is None or shutil.which("ip") is None:
        why = "needs util-linux unshare and iproute2 ip for a private network namespace"
    else:
        probe = subprocess.run([unshare, "-n", "true"], capture_output=True, text=True,
                               timeout=10)
        if probe.returncode != 0:
            why = f"cannot create a network namespace: {probe.stderr.strip()}"
    if why or unshare is None:
        pytest.skip(why or "no unshare")
    return unshare


@pytest.mark.parametrize("kind", ["soft", "sim"])
def test_non_loopback_requests_are_refused_unless_signed(kind: str, key_file: Path,
                                                         tmp_path: Path) -> None:
    unshare = _network_namespace()
    if kind == "sim":
        build_sim_rtl()
    script = tmp_path / "remote_child.py"
    script.write_text(textwrap.dedent(REMOTE_CHILD))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop(CONTROL_KEY_ENV, None)
    proc = subprocess.run([unshare, "-n", sys.executable, str(script), kind, str(key_file),
                           REMOTE_IP], capture_output=True, text=True, timeout=300, env=env,
                          cwd=str(REPO))
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("AUTH ")), None)
    assert proc.returncode == 0 and line is not None, proc.stdout + proc.stderr
    out = json.loads(line[5:])
    plain, keyed = out["plain"], out["keyed"]
    assert plain["server_class"] == {"soft": "SoftSwitch", "sim": "SimSwitch"}[kind]
    assert plain["source"] == keyed["source"] == REMOTE_IP
    # no key: the network may not use the control channel, signed or not
    for what in ("unsigned_write", "unsigned_read", "signed_write"):
        verdict, status, text = plain[what]
        assert (verdict, status) == ("refused", ControlStatus.UNAUTHENTICATED), what
        assert f"request from {REMOTE_IP}" in text and "loopback" in text
    assert plain["slots"] == 3
    assert plain["server"]["SRV_CTRL_REFUSED"] == 3 == plain["stats"]["ctrl_refused"]
    # a key: signed requests from anywhere, nothing unsigned
    assert keyed["unsigned_write"][:2] == ["refused", ControlStatus.UNAUTHENTICATED]
    assert keyed["unsigned_read"][:2] == ["refused", ControlStatus.UNAUTHENTICATED]
    assert keyed["signed_write"] == ["ok", None]
    assert keyed["slots"] == 5
    assert keyed["server"]["SRV_CTRL_REFUSED"] == 2 == keyed["stats"]["ctrl_refused"]


# ---------------------------------------------------------------------------
# command line


@pytest.mark.parametrize("kind", ["soft", "sim"])
def test_cli_control_key_and_exit_statistics(kind: str, key_file: Path) -> None:
    if kind == "sim":
        build_sim_rtl()
        from hostdrv.switch.sim import SimSwitchProcess

        proc: SoftSwitchProcess = SimSwitchProcess(args=["--control-key", str(key_file)])
    else:
        proc = SoftSwitchProcess(args=["--control-key", str(key_file)])
    refused = 0
    try:
        with SwitchControl(proc.url) as ctl:
            for _ in range(2):
                with pytest.raises(ControlAuthError):
                    ctl.write("JOB_ID", 4)
                refused += 1
        with SwitchControl(proc.url, key_file=key_file) as ctl:
            ctl.write("JOB_ID", 4)
            assert ctl.read("JOB_ID") == 4
            assert ctl.read("SRV_CTRL_REFUSED") == refused
    finally:
        out = proc.stop()
    assert proc.proc.returncode == 0, out
    stats = json.loads(next(ln for ln in out.splitlines() if ln.startswith("stats "))[6:])
    assert stats["ctrl_refused"] == refused and stats["rx_overflow"] == 0
    assert ("sim " in out) == (kind == "sim")
