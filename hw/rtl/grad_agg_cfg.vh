// SPDX-License-Identifier: MIT
// The aggregation engine's per-job configuration word (grad_agg): one per job,
// CF_W bits, job j's at [CF_W*j +: CF_W]. Bits 0 .. CFR_W-1 are grad_agg_regs'
// (the AGG_* registers and the member table of the job's page), the rest the
// switch's job table (nrl_axil_split; with JOBS = 1 the engine's own JOB_ID and
// the fixed share). Field f of width w at [CF_f +: w].
localparam CF_MEMBERS = 0;        // AGG_MEMBERS, 4
localparam CF_THRESHOLD = 4;      // AGG_THRESHOLD, 4
localparam CF_SLOTS = 8;          // AGG_SLOTS, 7
localparam CF_ELEMS = 15;         // AGG_ELEMS, 9
localparam CF_DTYPE = 24;         // AGG_DTYPE, 1
localparam CF_MODE = 25;          // AGG_MODE, 1
localparam CF_ROLE = 26;          // AGG_ROLE, 1
localparam CF_LEAF_ID = 27;       // AGG_LEAF_ID, 3
localparam CF_UPLINK = 30;        // AGG_UPLINK_PORT, 8
localparam CF_PARENT_UDP = 38;    // AGG_PARENT_UDP, 16
localparam CF_STALENESS = 54;     // AGG_STALENESS, 32
localparam CF_PARENT_IP = 86;     // AGG_PARENT_IP, 32
localparam CF_EPOCH = 118;        // AGG_EPOCH, 32
localparam CF_MPORT = 150;        // MEMBER_PORT_0..7, 8 x 8
localparam CF_MIP = 214;          // MEMBER_IP_0..7, 8 x 32
localparam CF_MUDP = 470;         // MEMBER_UDP_0..7, 8 x 16
localparam CF_MROLE = 598;        // MEMBER_ROLE_0..7, 8 x 3
localparam CFR_W = 622;           // grad_agg_regs' part
localparam CF_JOB_ID = 622;       // JOB_ID, 8
localparam CF_SLOT_BASE = 630;    // JOB_SLOT_BASE, 7
localparam CF_SLOT_COUNT = 637;   // JOB_SLOT_COUNT, 7
localparam CF_W = 644;
