"""netfpga-rl wire protocol: encode, decode and validate every packet type.

Two layers, as on the wire (``docs/protocol.md`` is the reference):

* a **message** is what a UDP socket carries: the 22-byte protocol header
  followed by the payload (:func:`encode_message`, :func:`decode_message`);
* a **frame** is the whole Ethernet/IPv4/UDP frame the switch sees on its
  AXI4-Stream, with the message at byte 42 (:func:`build_frame`,
  :func:`parse_frame`).

Every decoding error is a :class:`ProtocolError` naming the field and the
value that was wrong.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from enum import IntEnum, IntFlag

import numpy as np

from hostdrv.errors import NetrlError
from hostdrv.wire import consts as C
from hostdrv.wire.consts import (  # noqa: F401 - re-exported: part of this module's API
    AUX_COUNT_MASK,
    AUX_ORDER_BITS,
    AUX_ORDER_SHIFT,
    BLOCK,
    ELEM_QUANTUM,
    ETH_LEN,
    FLAGS_MASK,
    HEADER_LEN,
    HEADER_OFFSET,
    IP_OFFSET,
    MAX_BATCH,
    MAX_ELEMS,
    MAX_ETH_FRAME,
    MAX_JUMBO_ELEMS,
    MAX_MEMBERS,
    MAX_PUSH_RECORDS,
    MAX_RECORD_BYTES,
    MAX_STACK,
    MAX_UPDATE_PAIRS,
    NO_INDEX,
    PAYLOAD_OFFSET,
    UDP_OFFSET,
    VERSION,
)
from hostdrv.wire.regmap import REGISTERS

DEFAULT_UDP_PORT = REGISTERS["UDP_PORT"].reset
"""The ``UDP_PORT`` register's reset value: the port a protocol frame is sent to."""
MAX_FRAME = MAX_ETH_FRAME

HEADER = struct.Struct("!BBBBHHIHII")
"""Header layout: version, opcode, flags, job, worker, slot, seq, count, aux, total.

The last word is ``total`` (the tensor length in elements) on GRADIENT and
RESULT and reserved (zero) on every other opcode."""
assert HEADER.size == HEADER_LEN

DESCRIPTOR = struct.Struct("<IIQII")
"""SAMPLE_RESP descriptor head: index, priority, total, batch, size (then :data:`STACK_WORDS`)."""

STACK_WORDS = struct.Struct("<III")
"""SAMPLE_RESP descriptor words at ``DESC_STACK`` (24): stack depth k, position j, valid; all
zero for a request with k <= 1. The rest of the 64 bytes is zero."""
assert C.DESC_STACK == DESCRIPTOR.size and C.DESC_POS == C.DESC_STACK + 4

BROADCAST_MAC = b"\xff" * 6


class Opcode(IntEnum):
    """Protocol opcodes."""

    GRADIENT = C.OP_GRADIENT
    RESULT = C.OP_RESULT
    PUSH = C.OP_PUSH
    PUSH_ACK = C.OP_PUSH_ACK
    SAMPLE_REQ = C.OP_SAMPLE_REQ
    SAMPLE_RESP = C.OP_SAMPLE_RESP
    UPDATE = C.OP_UPDATE


class Flags(IntFlag):
    """Header flag bits (bits 7:6 must be zero)."""

    NONE = 0
    INT32 = C.FLAG_INT32
    PRIORITIZED = C.FLAG_PRIORITIZED
    RESEND = C.FLAG_RESEND
    FROM_SWITCH = C.FLAG_FROM_SWITCH
    ERROR = C.FLAG_ERROR
    """RESULT: the round failed (a tensor length mismatch); ``worker`` is the member whose
    contribution was refused, ``aux`` its tensor length, ``total`` the round's."""
    NOT_YET = C.FLAG_NOT_YET
    """PUSH_ACK / SAMPLE_RESP: the rate limiter refused the request for now (``count`` 0,
    ``slot`` the reason ``NOT_YET_*``, ``aux`` the replay size); retry later (section 5)."""


def result_aux(order: list[int] | tuple[int, ...]) -> int:
    """RESULT ``aux`` for contributions added in ``order`` (member ids, first one stored)."""
    if len(order) > MAX_MEMBERS:
        raise FieldError("order", list(order), f"at most {MAX_MEMBERS} contributions")
    aux = len(order)
    for j, w in enumerate(order):
        if not 0 <= w < MAX_MEMBERS:
            raise FieldError("order", list(order), f"member ids are 0..{MAX_MEMBERS - 1}")
        aux |= w << (AUX_ORDER_SHIFT + AUX_ORDER_BITS * j)
    return aux


def result_order(aux: int) -> list[int]:
    """Member ids in the order the switch added them, from a RESULT's ``aux``.

    The first member's payload was stored as it is; each later one was added
    to the running sum (``docs/protocol.md`` section 4.3), so a client can
    recompute an fp32 sum bit for bit.
    """
    k = min(aux & AUX_COUNT_MASK, MAX_MEMBERS)
    return [(aux >> (AUX_ORDER_SHIFT + AUX_ORDER_BITS * j)) & 0x7 for j in range(k)]


class ProtocolError(NetrlError, ValueError):
    """A packet or field that violates the protocol.

    Attributes
    ----------
    field:
        Name of the offending field (``"opcode"``, ``"length"``, ...).
    value:
        The value that was found.
    """

    def __init__(self, field: str, value: object, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"bad {field}={value!r}: {reason}")


class LengthError(ProtocolError):
    """A frame, datagram or payload whose length is inconsistent."""


class HeaderError(ProtocolError):
    """A header field with an illegal value (version, opcode, flags, reserved word)."""


class FieldError(ProtocolError):
    """A field value out of range for the opcode (count, worker, ...)."""


@dataclass
class Message:
    """One protocol message: the header fields and the raw payload bytes."""

    opcode: Opcode
    flags: int = 0
    job: int = 0
    worker: int = 0
    slot: int = 0
    seq: int = 0
    count: int = 0
    aux: int = 0
    payload: bytes = b""
    version: int = VERSION
    total: int = 0
    """GRADIENT/RESULT: elements of the whole tensor this chunk belongs to; 0 on other opcodes."""

    # -- typed payload views -------------------------------------------------
    def elements(self) -> np.ndarray:
        """GRADIENT/RESULT payload as a little-endian float32 or int32 array."""
        dt = np.dtype("<i4") if self.flags & Flags.INT32 else np.dtype("<f4")
        return np.frombuffer(self.payload, dtype=dt, count=self.count)

    def push_priorities(self) -> np.ndarray:
        """PUSH priorities (u32, little-endian)."""
        return np.frombuffer(self.payload, dtype="<u4", count=self.count)

    def push_records(self) -> list[bytes]:
        """PUSH records, each ``record_bytes`` long."""
        r = self.record_bytes()
        body = self.payload[BLOCK:]
        return [bytes(body[i * r:(i + 1) * r]) for i in range(self.count)]

    def record_bytes(self) -> int:
        """R implied by a PUSH or SAMPLE_RESP payload length."""
        if self.opcode == Opcode.PUSH:
            return (len(self.payload) - BLOCK) // max(self.count, 1)
        if self.opcode == Opcode.SAMPLE_RESP:
            return len(self.payload) - BLOCK
        raise FieldError("opcode", self.opcode, "only PUSH and SAMPLE_RESP carry records")

    def descriptor(self) -> SampleDescriptor:
        """SAMPLE_RESP descriptor and record."""
        idx, prio, total, batch, size = DESCRIPTOR.unpack_from(self.payload, 0)
        stack, pos, valid = STACK_WORDS.unpack_from(self.payload, C.DESC_STACK)
        return SampleDescriptor(idx, prio, total, batch, size, bytes(self.payload[BLOCK:]),
                                stack, pos, valid)

    def update_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """UPDATE (indices, priorities) as u32 arrays."""
        a = np.frombuffer(self.payload, dtype="<u4", count=2 * self.count)
        return a[0::2].copy(), a[1::2].copy()


@dataclass(frozen=True)
class SampleDescriptor:
    """One record of a SAMPLE_RESP: where it came from and its record.

    With a stack depth k >= 2 (``sample_request(stack=k)``) a sample is k records, positions
    ``pos`` 0 (oldest) .. k - 1 (the sampled record); ``index`` is this position's record
    (``NO_INDEX`` when ``valid`` is 0: the chain broke and ``record`` is zeros) while
    ``priority`` and ``total`` are the sampled record's. With k <= 1 ``stack``, ``pos`` and
    ``valid`` are 0.
    """

    index: int
    priority: int
    total: int
    batch: int
    size: int
    record: bytes
    stack: int = 0
    pos: int = 0
    valid: int = 0


@dataclass
class Frame:
    """A whole Ethernet/IPv4/UDP frame carrying a protocol message."""

    message: Message
    eth_dst: bytes = BROADCAST_MAC
    eth_src: bytes = b"\x02\x00\x00\x00\x00\x01"
    ip_src: int = 0x0A000002
    ip_dst: int = 0x0A000001
    udp_src: int = DEFAULT_UDP_PORT
    udp_dst: int = DEFAULT_UDP_PORT
    extra: dict[str, int] = field(default_factory=dict)


# ---------------------------------------------------------------------------
# payload length rules


def expected_payload_len(opcode: int, count: int, payload_len: int) -> int:
    """Payload length that ``opcode`` and ``count`` imply, or -1 if none fits.

    PUSH and SAMPLE_RESP carry records of R bytes that the message alone does
    not name; R is derived from the length and must be a positive multiple
    of 64, so the result is ``payload_len`` when it is legal and -1 if not.
    """
    if opcode in (Opcode.GRADIENT, Opcode.RESULT):
        return 4 * count
    if opcode in (Opcode.PUSH_ACK, Opcode.SAMPLE_REQ):
        return 0
    if opcode == Opcode.UPDATE:
        return 8 * count
    body = payload_len - BLOCK
    if opcode == Opcode.PUSH:
        if count > 0 and body > 0 and body % count == 0 and (body // count) % BLOCK == 0:
            return payload_len
        return -1
    if opcode == Opcode.SAMPLE_RESP:
        if body > 0 and body % BLOCK == 0:
            return payload_len
        return -1
    raise HeaderError("opcode", opcode, "unknown opcode")


def _length_rule(opcode: int, count: int) -> str:
    name = Opcode(opcode).name
    if opcode == Opcode.PUSH:
        return f"PUSH with count={count} needs 64 + {count} * R bytes, R a positive multiple of 64"
    if opcode == Opcode.SAMPLE_RESP:
        return "SAMPLE_RESP needs 64 + R bytes, R a positive multiple of 64"
    return f"{name} with count={count} needs {expected_payload_len(opcode, count, 0)} bytes"


def check_count(opcode: int, count: int) -> None:
    """Raise :class:`FieldError` when ``count`` is out of range for ``opcode``."""
    if opcode in (Opcode.GRADIENT, Opcode.RESULT):
        ok = 0 < count <= MAX_JUMBO_ELEMS and count % ELEM_QUANTUM == 0
        why = f"elements must be a multiple of {ELEM_QUANTUM} in 16..{MAX_JUMBO_ELEMS}"
    elif opcode in (Opcode.PUSH, Opcode.PUSH_ACK):
        ok = 1 <= count <= MAX_PUSH_RECORDS
        why = f"records must be 1..{MAX_PUSH_RECORDS}"
    elif opcode == Opcode.SAMPLE_REQ:
        ok = 1 <= count <= MAX_BATCH and count & (count - 1) == 0
        why = f"batch must be a power of two in 1..{MAX_BATCH}"
    elif opcode == Opcode.SAMPLE_RESP:
        ok = count == 1
        why = "a SAMPLE_RESP carries exactly one record"
    elif opcode == Opcode.UPDATE:
        ok = 1 <= count <= MAX_UPDATE_PAIRS
        why = f"pairs must be 1..{MAX_UPDATE_PAIRS}"
    else:
        raise HeaderError("opcode", opcode, "unknown opcode")
    if not ok:
        raise FieldError("count", count, why)


# ---------------------------------------------------------------------------
# messages (UDP payloads)


def pack_header_into(buf: bytearray | memoryview, offset: int, msg: Message) -> None:
    """Write ``msg``'s 22-byte header into ``buf`` at ``offset`` (no checks)."""
    HEADER.pack_into(buf, offset, msg.version, int(msg.opcode), msg.flags, msg.job,
                     msg.worker, msg.slot, msg.seq, msg.count, msg.aux, msg.total)


def encode_message(msg: Message) -> bytes:
    """Encode a message (header + payload) after validating it.

    Raises
    ------
    ProtocolError
        When a field is out of range or the payload length does not match.
    """
    _check_ranges(msg)
    if _check_not_yet(msg.opcode, msg.flags, msg.count, len(msg.payload)):
        return bytes(_header_bytes(msg))
    check_count(msg.opcode, msg.count)
    want = expected_payload_len(msg.opcode, msg.count, len(msg.payload))
    if len(msg.payload) != want:
        raise LengthError("payload", len(msg.payload), _length_rule(msg.opcode, msg.count))
    buf = bytearray(HEADER_LEN + len(msg.payload))
    pack_header_into(buf, 0, msg)
    buf[HEADER_LEN:] = msg.payload
    return bytes(buf)


def _header_bytes(msg: Message) -> bytearray:
    buf = bytearray(HEADER_LEN)
    pack_header_into(buf, 0, msg)
    return buf


def _check_not_yet(opcode: int, flags: int, count: int, payload_len: int) -> bool:
    """True for a well-formed NOT_YET answer (a PUSH_ACK or SAMPLE_RESP with flag NOT_YET,
    count 0 and no payload; section 5); raise :class:`ProtocolError` for a malformed one,
    False for any other message."""
    if not flags & Flags.NOT_YET or opcode not in (Opcode.PUSH_ACK, Opcode.SAMPLE_RESP):
        return False
    if count:
        raise FieldError("count", count, "a NOT_YET answer has count 0")
    if payload_len:
        raise LengthError("payload", payload_len, "a NOT_YET answer has no payload")
    return True


def _check_ranges(msg: Message) -> None:
    for name, bits in (("flags", 8), ("job", 8), ("worker", 16), ("slot", 16), ("seq", 32),
                       ("count", 16), ("aux", 32), ("total", 32), ("version", 8)):
        v = getattr(msg, name)
        if not isinstance(v, int) or not 0 <= v < (1 << bits):
            raise FieldError(name, v, f"must be an unsigned {bits}-bit integer")
    if msg.version != VERSION:
        raise HeaderError("version", msg.version, f"expected {VERSION}")
    if msg.flags & ~FLAGS_MASK:
        raise HeaderError("flags", msg.flags, "bits 7:6 must be zero")
    try:
        Opcode(msg.opcode)
    except ValueError:
        raise HeaderError("opcode", msg.opcode, "unknown opcode") from None
    _check_total(msg.opcode, msg.total)


def _check_total(opcode: int, total: int) -> None:
    if opcode == Opcode.GRADIENT and total == 0:
        raise FieldError("total", total, "a GRADIENT names its tensor's length (1 .. 2**32 - 1)")
    if opcode not in (Opcode.GRADIENT, Opcode.RESULT) and total:
        raise HeaderError("reserved", total, "must be zero")


def decode_header(data: bytes | bytearray | memoryview) -> Message:
    """Decode and check the 22-byte header only; the payload is left empty."""
    if len(data) < HEADER_LEN:
        raise LengthError("length", len(data), f"shorter than the {HEADER_LEN}-byte header")
    ver, op, flags, job, worker, slot, seq, count, aux, res = HEADER.unpack_from(data, 0)
    if ver != VERSION:
        raise HeaderError("version", ver, f"expected {VERSION}")
    try:
        opcode = Opcode(op)
    except ValueError:
        raise HeaderError("opcode", op, "unknown opcode") from None
    if flags & ~FLAGS_MASK:
        raise HeaderError("flags", flags, "bits 7:6 must be zero")
    _check_total(opcode, res)
    return Message(opcode, flags, job, worker, slot, seq, count, aux, b"", ver, res)


def decode_message(data: bytes | bytearray | memoryview) -> Message:
    """Decode a UDP payload (header + payload) into a :class:`Message`.

    Raises
    ------
    ProtocolError
        Any malformation: the error names the field and value.
    """
    msg = decode_header(data)
    if _check_not_yet(msg.opcode, msg.flags, msg.count, len(data) - HEADER_LEN):
        return msg
    check_count(msg.opcode, msg.count)
    plen = len(data) - HEADER_LEN
    want = expected_payload_len(msg.opcode, msg.count, plen)
    if plen != want:
        raise LengthError("payload", plen, _length_rule(msg.opcode, msg.count))
    msg.payload = bytes(data[HEADER_LEN:])
    return msg


# ---------------------------------------------------------------------------
# constructors for each packet type


def gradient(values: np.ndarray, *, job: int, worker: int, slot: int, round_: int,
             version: int | None = None, total: int | None = None) -> Message:
    """A GRADIENT message for one chunk (float32 or int32 array of P elements).

    ``total`` is the length of the whole tensor in elements (default: the
    chunk's own length, a tensor of one chunk).
    """
    flags = _dtype_flag(values)
    return Message(Opcode.GRADIENT, flags, job, worker, slot, round_ & 0xFFFFFFFF, len(values),
                   (round_ if version is None else version) & 0xFFFFFFFF,
                   np.ascontiguousarray(values).astype(values.dtype.newbyteorder("<"), copy=False).tobytes(),
                   total=len(values) if total is None else total)


def result(values: np.ndarray, *, job: int, slot: int, round_: int, contributors: int,
           flags: int = 0, worker: int = 0, total: int | None = None) -> Message:
    """A RESULT message (what the switch sends); ``contributors`` is the whole ``aux`` word."""
    f = _dtype_flag(values) | flags
    return Message(Opcode.RESULT, f, job, worker, slot, round_ & 0xFFFFFFFF, len(values),
                   contributors, np.ascontiguousarray(values).astype(values.dtype.newbyteorder("<"), copy=False).tobytes(),
                   total=len(values) if total is None else total)


def push(records: list[bytes] | np.ndarray, priorities: np.ndarray | list[int], *, job: int,
         worker: int, seq: int = 0) -> Message:
    """A PUSH of k records (each a multiple of 64 bytes) with u32 priorities."""
    recs = [bytes(r) for r in records]
    k = len(recs)
    if k != len(priorities):
        raise FieldError("priorities", len(priorities), f"need one per record ({k})")
    check_count(Opcode.PUSH, k)
    r = len(recs[0])
    if r == 0 or r % BLOCK or any(len(x) != r for x in recs):
        raise FieldError("record_bytes", r, "records must all be the same positive multiple of 64 bytes")
    block = bytearray(BLOCK)
    block[:4 * k] = np.asarray(priorities, dtype="<u4").tobytes()
    return Message(Opcode.PUSH, 0, job, worker, 0, seq, k, 0, bytes(block) + b"".join(recs))


def push_ack(*, job: int, worker: int, seq: int, count: int, first_index: int) -> Message:
    """A PUSH_ACK (what the switch sends)."""
    return Message(Opcode.PUSH_ACK, int(Flags.FROM_SWITCH), job, worker, 0, seq, count, first_index)


def sample_request(batch: int, *, job: int, worker: int, seq: int = 0,
                   prioritized: bool = True, stack: int = 0) -> Message:
    """A SAMPLE_REQ for ``batch`` samples of ``stack`` records each (``aux``; 0 or 1: one
    record per sample, 2 .. ``MAX_STACK``: the sampled record and its chain predecessors)."""
    check_count(Opcode.SAMPLE_REQ, batch)
    check_stack(stack)
    return Message(Opcode.SAMPLE_REQ, int(Flags.PRIORITIZED) if prioritized else 0, job, worker,
                   0, seq, batch, stack)


def check_stack(stack: int) -> None:
    """Raise :class:`FieldError` when ``stack`` is not a SAMPLE_REQ stack depth (0 .. MAX_STACK)."""
    if isinstance(stack, bool) or not isinstance(stack, int | np.integer) \
            or not 0 <= stack <= MAX_STACK:
        raise FieldError("stack", stack, f"a stack depth is an integer in 0..{MAX_STACK} "
                                         "(0 or 1: one record per sample)")


def sample_response(desc: SampleDescriptor, *, job: int, worker: int, seq: int, number: int,
                    flags: int = 0) -> Message:
    """A SAMPLE_RESP carrying sample ``number`` of a batch (what the switch sends)."""
    d = bytearray(BLOCK)
    DESCRIPTOR.pack_into(d, 0, desc.index, desc.priority, desc.total, desc.batch, desc.size)
    STACK_WORDS.pack_into(d, C.DESC_STACK, desc.stack, desc.pos, desc.valid)
    return Message(Opcode.SAMPLE_RESP, int(Flags.FROM_SWITCH) | flags, job, worker, 0, seq, 1,
                   number, bytes(d) + desc.record)


def update(indices: np.ndarray | list[int], priorities: np.ndarray | list[int], *, job: int,
           worker: int, seq: int = 0) -> Message:
    """An UPDATE of (index, priority) pairs."""
    idx = np.asarray(indices, dtype="<u4")
    pr = np.asarray(priorities, dtype="<u4")
    if idx.shape != pr.shape or idx.ndim != 1:
        raise FieldError("priorities", pr.shape, f"must match indices {idx.shape}")
    check_count(Opcode.UPDATE, len(idx))
    pairs = np.empty(2 * len(idx), dtype="<u4")
    pairs[0::2] = idx
    pairs[1::2] = pr
    return Message(Opcode.UPDATE, 0, job, worker, 0, seq, len(idx), 0, pairs.tobytes())


def _dtype_flag(values: np.ndarray) -> int:
    if values.dtype == np.float32:
        return 0
    if values.dtype == np.int32:
        return int(Flags.INT32)
    raise FieldError("dtype", str(values.dtype), "payload must be float32 or int32")


# ---------------------------------------------------------------------------
# frames


def ip_checksum(header: bytes | bytearray | memoryview) -> int:
    """RFC 791 one's-complement checksum of an IPv4 header (checksum field as zero)."""
    s = 0
    for i in range(0, len(header), 2):
        s += (header[i] << 8) | header[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def build_frame(frame: Frame, *, validate: bool = True) -> bytes:
    """Build the Ethernet/IPv4/UDP frame around a message.

    With ``validate=False`` the message is packed as it is (tests use this
    to build malformed frames on purpose).
    """
    msg = frame.message
    body = encode_message(msg) if validate else _raw_message(msg)
    n = HEADER_OFFSET + len(body)
    buf = bytearray(n)
    buf[0:6] = frame.eth_dst
    buf[6:12] = frame.eth_src
    buf[12:14] = b"\x08\x00"
    struct.pack_into("!BBHHHBBHII", buf, IP_OFFSET, 0x45, 0, n - ETH_LEN, 0, 0x4000, 64, 17, 0,
                     frame.ip_src, frame.ip_dst)
    struct.pack_into("!H", buf, IP_OFFSET + 10, ip_checksum(buf[IP_OFFSET:IP_OFFSET + 20]))
    struct.pack_into("!HHHH", buf, UDP_OFFSET, frame.udp_src, frame.udp_dst, n - UDP_OFFSET, 0)
    buf[HEADER_OFFSET:] = body
    return bytes(buf)


def _raw_message(msg: Message) -> bytes:
    buf = bytearray(HEADER_LEN)
    HEADER.pack_into(buf, 0, msg.version & 0xFF, int(msg.opcode) & 0xFF, msg.flags & 0xFF,
                     msg.job & 0xFF, msg.worker & 0xFFFF, msg.slot & 0xFFFF, msg.seq & 0xFFFFFFFF,
                     msg.count & 0xFFFF, msg.aux & 0xFFFFFFFF, msg.total & 0xFFFFFFFF)
    return bytes(buf) + bytes(msg.payload)


def is_protocol_frame(frame: bytes | bytearray | memoryview, udp_port: int = DEFAULT_UDP_PORT) -> bool:
    """Whether a frame is IPv4 (no options) / UDP to ``udp_port`` (section 1)."""
    return (
        len(frame) >= HEADER_OFFSET
        and frame[12] == 0x08 and frame[13] == 0x00
        and frame[14] == 0x45
        and frame[23] == 17
        and ((frame[36] << 8) | frame[37]) == udp_port
    )


def parse_frame(data: bytes | bytearray | memoryview, udp_port: int = DEFAULT_UDP_PORT) -> Frame:
    """Parse and validate a whole protocol frame.

    Raises
    ------
    ProtocolError
        When the frame is not a protocol frame, its IPv4/UDP lengths are
        inconsistent, or the message is malformed.
    """
    if len(data) < PAYLOAD_OFFSET:
        raise LengthError("length", len(data), f"a protocol frame is at least {PAYLOAD_OFFSET} bytes")
    if not is_protocol_frame(data, udp_port):
        raise HeaderError("udp_dst", (data[36] << 8) | data[37], "not an IPv4/UDP protocol frame")
    ip_len, = struct.unpack_from("!H", data, IP_OFFSET + 2)
    if ip_len != len(data) - ETH_LEN:
        raise LengthError("ip_length", ip_len, f"frame of {len(data)} bytes needs {len(data) - ETH_LEN}")
    udp_src, udp_dst, udp_len = struct.unpack_from("!HHH", data, UDP_OFFSET)
    if udp_len != len(data) - UDP_OFFSET:
        raise LengthError("udp_length", udp_len, f"frame of {len(data)} bytes needs {len(data) - UDP_OFFSET}")
    msg = decode_message(memoryview(data)[HEADER_OFFSET:])
    ip_src, ip_dst = struct.unpack_from("!II", data, IP_OFFSET + 12)
    return Frame(msg, bytes(data[0:6]), bytes(data[6:12]), ip_src, ip_dst, udp_src, udp_dst)


def with_fields(msg: Message, **changes: object) -> Message:
    """Copy of ``msg`` with some fields changed."""
    return replace(msg, **changes)  # type: ignore[arg-type]
