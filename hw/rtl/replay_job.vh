// SPDX-License-Identifier: MIT
// Replay engine: one job's word (replay_engine builds it per job, replay_job
// selects a frame's, replay_ingress and replay_executor read it). Offsets in
// bits, LSB first: member table (port, IP, UDP port, role of members 0..7),
// JOB_ID, JOB_RPL_RECORD / 64, log2 JOB_RPL_CAP, JOB_RPL_BASE, and "no table"
// (JOB_RPL_CAP = 0).
localparam RJ_PORT = 0;     // 8 x 8
localparam RJ_IP = 64;      // 8 x 32
localparam RJ_UDP = 320;    // 8 x 16
localparam RJ_ROLE = 448;   // 8 x 3
localparam RJ_ID = 472;     // 8
localparam RJ_RB = 480;     // 8: record bytes / 64 (1 .. 128)
localparam RJ_LCAP = 488;   // 5: log2 of the table's records
localparam RJ_BASE = 493;   // 17: the table's first record
localparam RJ_NOTAB = 510;  // 1: no table
localparam RJ_W = 511;
