"""hostdrv.protocol: round trips, typed errors, and a fuzz of arbitrary bytes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostdrv import protocol as p


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


@settings(max_examples=500, deadline=None)
@given(st.binary(min_size=64, max_size=300))
def test_any_frame_parses_or_raises(data: bytes) -> None:
    try:
        p.parse_frame(data)
    except p.ProtocolError:
        pass


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
    msg = p.Message(op, data.draw(st.integers(0, 15)), data.draw(st.integers(0, 255)),
                    data.draw(st.integers(0, 0xFFFF)), data.draw(st.integers(0, 0xFFFF)),
                    data.draw(st.integers(0, 2**32 - 1)), count,
                    data.draw(st.integers(0, 2**32 - 1)), payload)
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
