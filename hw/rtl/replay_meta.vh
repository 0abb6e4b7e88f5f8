// SPDX-License-Identifier: MIT
// Replay engine: the meta entry replay_ingress writes per frame and
// replay_executor reads, LSB first (bit offsets; PL_BEATS_W, INDEX_W and JW
// are the includer's): the payload beats to skip or take, the requester's
// port, UDP source port, IPv4 and Ethernet source addresses, the count, seq,
// worker, PRIORITIZED flag, opcode (0 PUSH, 1 SAMPLE_REQ, 2 UPDATE), stack
// depth, the reply's IPv4 checksum and the verdict (ok); then the frame's
// job's table base, log2 of its records, record bytes / 64, JOB_ID and index.
localparam MO_PORT = PL_BEATS_W;
localparam MO_UDP = MO_PORT + 8;
localparam MO_IP = MO_UDP + 16;
localparam MO_ETH = MO_IP + 32;
localparam MO_CNT = MO_ETH + 48;
localparam MO_SEQ = MO_CNT + 8;
localparam MO_W = MO_SEQ + 32;
localparam MO_PRIO = MO_W + 3;
localparam MO_OP = MO_PRIO + 1;
localparam MO_STK = MO_OP + 2;
localparam MO_CSUM = MO_STK + 4;
localparam MO_OK = MO_CSUM + 16;
localparam MO_JB = MO_OK + 1;
localparam MO_JL = MO_JB + INDEX_W;
localparam MO_JR = MO_JL + 5;
localparam MO_JI = MO_JR + 8;
localparam MO_JX = MO_JI + 8;
localparam MO_W_ALL = MO_JX + JW;  // the entry's width
