// SPDX-License-Identifier: MIT
// Replay engine: a request context, written by replay_executor when it takes
// a request and read by replay_responder (and replay_egress's AXI record
// store) for the request's replies, LSB first (bit offsets; INDEX_W, SUM_W
// and JW are the includer's): the table's size and total (the descriptor's),
// the count, the reply's IPv4 checksum, seq, worker, the requester's port,
// UDP source port, IPv4 and Ethernet source addresses; then the job's
// fields: the table's index mask, the SAMPLE_RESP's last beat and length
// (128 + the job's record bytes), JOB_ID and the job's index.
localparam CX_SIZE = 0;
localparam CX_TOTAL = CX_SIZE + INDEX_W + 1;
localparam CX_COUNT = CX_TOTAL + SUM_W;
localparam CX_CSUM = CX_COUNT + 8;
localparam CX_SEQ = CX_CSUM + 16;
localparam CX_W = CX_SEQ + 32;
localparam CX_PORT = CX_W + 3;
localparam CX_UDP = CX_PORT + 8;
localparam CX_IP = CX_UDP + 16;
localparam CX_ETH = CX_IP + 32;
localparam CX_MASK = CX_ETH + 48;
localparam CX_RLAST = CX_MASK + INDEX_W;
localparam CX_RLEN = CX_RLAST + 12;
localparam CX_JID = CX_RLEN + 16;
localparam CX_JOB = CX_JID + 8;
localparam CX_W_ALL = CX_JOB + JW;  // the context's width
