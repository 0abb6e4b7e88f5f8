"""hostdrv.wire.protocol: round trips, typed errors, and a fuzz of arbitrary bytes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostdrv.wire import protocol as p


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=600))
def test_any_bytes_decode_or_raise_protocol_error(data: bytes) -> None:
    try:
        msg = p.decode_message(data)
    except p.ProtocolError as e:
        assert e.field and isinstance(e.reason, str)
        return
    # whatever decoded re-encodes to the same bytes
    assert p.encode_message(msg) == data


#: bytes of the Ethernet/IPv4/UDP headers that ``parse_frame`` neither checks nor
#: keeps (protocol.md section 6: "Fields a check does not name are ignored"):
#: DSCP/ECN, identification, IPv4 flags/fragment, TTL, IPv4 checksum, UDP checksum
IGNORED_FRAME_BYTES = (15, 18, 19, 20, 21, 22, 24, 25, 40, 41)


def canonical_frame(data: bytes) -> bytes:
    """``data`` with the ignored header fields as ``build_frame`` writes them (section 7).

    ``build_frame(parse_frame(x))`` equals this, not ``x``: a parsed :class:`Frame`
    keeps the addresses, ports and the message but none of the ignored fields, and
    ``build_frame`` writes DSCP/ECN 0, identification 0, flags ``0x4000`` (DF), TTL
    64, the IPv4 header checksum and UDP checksum 0. Every other byte is kept.
    """
    buf = bytearray(data)
    buf[p.IP_OFFSET + 1] = 0
    buf[p.IP_OFFSET + 4:p.IP_OFFSET + 8] = (0x4000).to_bytes(4, "big")  # id 0, flags DF
    buf[p.IP_OFFSET + 8] = 64
    buf[p.IP_OFFSET + 10:p.IP_OFFSET + 12] = bytes(2)
    buf[p.IP_OFFSET + 10:p.IP_OFFSET + 12] = p.ip_checksum(
        buf[p.IP_OFFSET:p.IP_OFFSET + 20]).to_bytes(2, "big")
    buf[p.UDP_OFFSET + 6:p.UDP_OFFSET + 8] = bytes(2)
    return bytes(buf)


_u32 = st.integers(0, 2**32 - 1)


@st.composite
def valid_messages(draw: st.DrawFn) -> p.Message:
    """A valid message of an opcode a host sends or receives, built by the codec's constructors."""
    kind = draw(st.sampled_from(["sample_req", "update", "push", "gradient", "push_ack"]))
    ids = {"job": draw(st.integers(0, 255)), "worker": draw(st.integers(0, 0xFFFF))}
    if kind == "sample_req":
        return p.sample_request(1 << draw(st.integers(0, 6)), seq=draw(_u32),
                                prioritized=draw(st.booleans()), **ids)
    if kind == "update":
        n = draw(st.integers(1, 8))
        return p.update(draw(st.lists(_u32, min_size=n, max_size=n)),
                        draw(st.lists(_u32, min_size=n, max_size=n)), seq=draw(_u32), **ids)
    if kind == "push":
        k = draw(st.integers(1, 3))
        return p.push([draw(st.binary(min_size=64, max_size=64)) for _ in range(k)],
                      draw(st.lists(_u32, min_size=k, max_size=k)), seq=draw(_u32), **ids)
    if kind == "gradient":
        n = 16 * draw(st.integers(1, 3))
        dtype = draw(st.sampled_from(["<f4", "<i4"]))
        values = np.frombuffer(draw(st.binary(min_size=4 * n, max_size=4 * n)), dtype=dtype)
        return p.gradient(values, slot=draw(st.integers(0, 0xFFFF)), round_=draw(_u32),
                          version=draw(_u32), total=draw(st.integers(1, 2**32 - 1)), **ids)
    return p.push_ack(seq=draw(_u32), count=draw(st.integers(1, 16)), first_index=draw(_u32), **ids)


@st.composite
def frames_with_ignored_fields_scrambled(draw: st.DrawFn) -> bytes:
    """A valid protocol frame whose ignored header bytes hold random values."""
    frame = p.Frame(draw(valid_messages()), eth_dst=draw(st.binary(min_size=6, max_size=6)),
                    eth_src=draw(st.binary(min_size=6, max_size=6)), ip_src=draw(_u32),
                    ip_dst=draw(_u32), udp_src=draw(st.integers(0, 0xFFFF)))
    buf = bytearray(p.build_frame(frame))
    for i in IGNORED_FRAME_BYTES:
        buf[i] = draw(st.integers(0, 255))
    return bytes(buf)


@st.composite
def frames_one_byte_changed(draw: st.DrawFn) -> bytes:
    """A scrambled valid frame with one more byte anywhere set to a random value (may break it)."""
    buf = bytearray(draw(frames_with_ignored_fields_scrambled()))
    buf[draw(st.integers(0, len(buf) - 1))] = draw(st.integers(0, 255))
    return bytes(buf)


@settings(max_examples=500, deadline=None)
@given(st.one_of(
    st.tuples(st.binary(min_size=64, max_size=300), st.just(False)),
    st.tuples(frames_one_byte_changed(), st.just(False)),
    st.tuples(frames_with_ignored_fields_scrambled(), st.just(True)),
))
def test_any_frame_parses_or_raises(case: tuple[bytes, bool]) -> None:
    """Arbitrary and near-valid frames: a typed error, or a frame that rebuilds to the same bytes.

    The rebuilt frame is compared with :func:`canonical_frame` of the input (the
    ignored header fields normalized, every other byte identical). A valid frame
    that differs only in ignored fields must parse.
    """
    data, must_parse = case
    try:
        frame = p.parse_frame(data)
    except p.ProtocolError as e:
        assert not must_parse, f"valid frame refused for a field the switch ignores: {e}"
        assert e.field and isinstance(e.reason, str)
        return
    assert p.build_frame(frame) == canonical_frame(data)
    assert p.parse_frame(canonical_frame(data)) == frame


@settings(max_examples=300, deadline=None)
@given(
    op=st.sampled_from(list(p.Opcode)),
    data=st.data(),
)
def test_valid_messages_round_trip(op: p.Opcode, data: st.DataObject) -> None:
    if op in (p.Opcode.GRADIENT, p.Opcode.RESULT):
        count = data.draw(st.integers(1, p.MAX_ELEMS // 16)) * 16
        payload = data.draw(st.binary(min_size=4 * count, max_size=4 * count))
    elif op == p.Opcode.PUSH:
        count = data.draw(st.integers(1, p.MAX_PUSH_RECORDS))
        r = 64 * data.draw(st.integers(1, 2))
        payload = bytes(64) + data.draw(st.binary(min_size=count * r, max_size=count * r))
    elif op == p.Opcode.SAMPLE_RESP:
        count = 1
        payload = data.draw(st.binary(min_size=128, max_size=128))
    elif op == p.Opcode.SAMPLE_REQ:
        count = 1 << data.draw(st.integers(0, 6))
        payload = b""
    elif op == p.Opcode.UPDATE:
        count = data.draw(st.integers(1, p.MAX_UPDATE_PAIRS))
        payload = data.draw(st.binary(min_size=8 * count, max_size=8 * count))
    else:
        count = data.draw(st.integers(1, 16))
        payload = b""
    if op == p.Opcode.GRADIENT:
        total = data.draw(st.integers(1, 2**32 - 1))
    elif op == p.Opcode.RESULT:
        total = data.draw(st.integers(0, 2**32 - 1))
    else:
        total = 0
    flags = data.draw(st.integers(0, p.FLAGS_MASK))
    if flags & p.Flags.NOT_YET and op in (p.Opcode.PUSH_ACK, p.Opcode.SAMPLE_RESP):
        count, payload = 0, b""  # a NOT_YET answer (section 5)
    msg = p.Message(op, flags, data.draw(st.integers(0, 255)),
                    data.draw(st.integers(0, 0xFFFF)), data.draw(st.integers(0, 0xFFFF)),
                    data.draw(st.integers(0, 2**32 - 1)), count,
                    data.draw(st.integers(0, 2**32 - 1)), payload, total=total)
    wire = p.encode_message(msg)
    assert p.decode_message(wire) == msg
    frame = p.build_frame(p.Frame(msg))
    assert p.parse_frame(frame).message == msg
    assert len(frame) == p.HEADER_OFFSET + len(wire)


def test_errors_name_field_and_value() -> None:
    good = p.encode_message(p.sample_request(8, job=1, worker=2))
    bad = bytearray(good)
    bad[0] = 9
    with pytest.raises(p.HeaderError) as e:
        p.decode_message(bytes(bad))
    assert (e.value.field, e.value.value) == ("version", 9)
    bad = bytearray(good)
    bad[1] = 0x42
    with pytest.raises(p.HeaderError) as e:
        p.decode_message(bytes(bad))
    assert (e.value.field, e.value.value) == ("opcode", 0x42)
    bad = bytearray(good)
    bad[12:14] = (3).to_bytes(2, "big")
    with pytest.raises(p.FieldError) as e:
        p.decode_message(bytes(bad))
    assert (e.value.field, e.value.value) == ("count", 3)
    with pytest.raises(p.LengthError) as e:
        p.decode_message(good + b"\0")
    assert e.value.field == "payload"
    with pytest.raises(p.FieldError) as e:
        p.gradient(np.zeros(16, dtype=np.float64), job=0, worker=0, slot=0, round_=0)
    assert e.value.field == "dtype"


def test_frame_length_fields_checked() -> None:
    frame = bytearray(p.build_frame(p.Frame(p.sample_request(4, job=0, worker=0))))
    frame[17] += 1
    with pytest.raises(p.LengthError) as e:
        p.parse_frame(bytes(frame))
    assert e.value.field == "ip_length"


def test_payload_views() -> None:
    vals = np.arange(32, dtype=np.int32) - 7
    m = p.decode_message(p.encode_message(p.gradient(vals, job=0, worker=1, slot=2, round_=3)))
    np.testing.assert_array_equal(m.elements(), vals)
    recs = [bytes(range(i, i + 128)) for i in range(3)]
    m = p.decode_message(p.encode_message(p.push(recs, [1, 2, 3], job=0, worker=0)))
    assert m.push_records() == recs
    assert m.push_priorities().tolist() == [1, 2, 3]
    desc = p.SampleDescriptor(7, 9, 2**40 + 5, 32, 100, bytes(range(64)))
    m = p.decode_message(p.encode_message(p.sample_response(desc, job=0, worker=0, seq=1, number=4)))
    assert m.descriptor() == desc
