// SPDX-License-Identifier: MIT
/*

Copyright (c) 2025 netfpga-rl contributors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in
all copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN
THE SOFTWARE.

*/

// Language: Verilog 2001

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Pipelined sum tree for prioritized replay: CAPACITY leaves of 32-bit
 * priorities, exact integer sums.
 *
 * Storage: one memory per tree level. The leaves (level LEVELS = log2(C)) are two
 * memories, even and odd leaves, so a descent reads both children of its
 * last node in one access. Internal level e (1 .. LEVELS-1) holds 2^e nodes of
 * 32 + LEVELS - e bits, split in two lanes: lane 0 is the low (SUM_WIDTH + 1) / 2
 * bits (23 for C = 16384), lane 1 the rest, so a lane with its carry in or
 * out is a 24-bit chain. The root (level 0) is a register pair. Every memory
 * has one write and one registered read port (simple dual-port block RAM).
 *
 * Every memory read is registered twice: the block RAM's own read register,
 * then a fabric register (the forwarding mux of an update in front of it),
 * so no carry chain starts at a block RAM output (2.45 ns on xc7 before
 * routing, against 0.3 ns for a flip-flop).
 *
 * Update (one per clock): setting leaf i to p adds delta = p - old to every
 * ancestor of i. The old leaf value is read (U0), the leaf written (U1), the
 * old value registered (U1) and lane 0 of delta formed (U2); then every level
 * adds delta to its ancestor of i in parallel, lane 0 in U3 (read in U1) and
 * lane 1 with the lane-0 carry in U4 (read in U2). Back-to-back updates that
 * hit the same node use the value written one or two clocks earlier
 * (forwarding), so the result equals the sequential one.
 *
 * Descent (one query per clock): one pipeline stage per level, five clocks
 * each (read the left child; register the read; subtract lane 0; subtract
 * lane 1 both without and with a lane-0 borrow; pick by the borrow and
 * choose a side), so no path has more than one LUT after a carry chain. A
 * prioritized query goes left when target < left sum, else subtracts it and
 * goes right (docs/protocol.md section 5); a uniform query follows the bits
 * of its index. The result is the leaf index, the leaf priority and the
 * query's side band, 5 log2(C) + 1 clocks after the query.
 *
 * Tables (docs/protocol.md section 11): a table of C / 2^d records at an
 * aligned base is the sub-tree of the node at depth d on the base's path; a
 * query with q_depth = d follows q_index's bits on its first d levels,
 * target untouched (relative to that node). Each of JOBS tables has a total
 * (job_total): the deltas of the updates tagged with its job (upd_job, when
 * upd_count); job_total_clear and a clear zero it (a table is emptied by
 * untagged updates setting its leaves to 0 after its total was cleared).
 *
 * Updates and queries must not be in flight together (upd_busy, q_busy, the
 * latter registered: it falls a clock after the last query left):
 * the replay engine drains one before it starts the other, which is how
 * requests take effect in arrival order. clear_start zeroes every node in
 * CAPACITY/2 clocks (clearing is high meanwhile); it also runs after reset.
 */
module replay_sum_tree #
(
    // Number of leaves C (power of two, 4 .. 131072)
    parameter CAPACITY = 16384,
    // Width of the query side band
    parameter USER_WIDTH = 16,
    // Tables with a total of their own (job_total), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // log2(C) (computed; do not override)
    parameter INDEX_WIDTH = $clog2(CAPACITY),
    // Width of sums and targets, 32 + log2(C) (computed; do not override)
    parameter SUM_WIDTH = 32 + INDEX_WIDTH,
    // Width of a query's depth, 0 .. log2(C) (computed; do not override)
    parameter DEPTH_WIDTH = $clog2(INDEX_WIDTH + 1)
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * Clear
     */
    input  wire                    clear_start,
    output wire                    clearing,

    /*
     * Leaf update
     */
    input  wire                    upd_valid,
    input  wire [INDEX_WIDTH-1:0]  upd_index,
    input  wire [31:0]             upd_prio,
    input  wire [JW-1:0]           upd_job,
    input  wire                    upd_count,
    output wire                    upd_busy,

    /*
     * Query
     */
    input  wire                    q_valid,
    input  wire                    q_uniform,
    input  wire [SUM_WIDTH-1:0]    q_target,
    input  wire [INDEX_WIDTH-1:0]  q_index,
    input  wire [DEPTH_WIDTH-1:0]  q_depth,
    input  wire [USER_WIDTH-1:0]   q_user,
    output wire                    q_busy,

    /*
     * Query result
     */
    output wire                    r_valid,
    output wire [INDEX_WIDTH-1:0]  r_index,
    output wire [31:0]             r_prio,
    output wire [USER_WIDTH-1:0]   r_user,

    /*
     * Root sum, and every table's total
     */
    output wire [SUM_WIDTH-1:0]    total,
    output wire [JOBS*SUM_WIDTH-1:0] job_total,
    input  wire [JOBS-1:0]         job_total_clear
);

localparam LEVELS = INDEX_WIDTH;              // levels below the root; the leaves are level LEVELS
localparam LANE0_W = (SUM_WIDTH + 1) / 2;     // lane 0 width: 23 bits for C = 16384, so a lane with
                                              // its carry in or out is a 24-bit chain (six CARRY4)
localparam SUM_LANE1_W = SUM_WIDTH - LANE0_W; // lane 1 width of targets and of the root
localparam PRIO_LANE1_W = 32 - LANE0_W;       // lane 1 width of a leaf priority
localparam DELTA_LANE1_W = PRIO_LANE1_W + 1;  // lane 1 of delta = new - old (signed)

initial begin
    if (CAPACITY < 4 || CAPACITY > 131072 || (CAPACITY & (CAPACITY - 1)) != 0) begin
        $error("Error: CAPACITY must be a power of two in 4 .. 131072 (instance %m)");
        $finish;
    end
    if (INDEX_WIDTH != $clog2(CAPACITY) || SUM_WIDTH != 32 + INDEX_WIDTH) begin
        $error("Error: INDEX_WIDTH and SUM_WIDTH are computed parameters (instance %m)");
        $finish;
    end
end

// ---------------------------------------------------------------------------
// clear sweep

reg clearing_reg;
reg [LEVELS-2:0] clr_addr_reg;

assign clearing = clearing_reg;

always @(posedge clk) begin
    if (clearing_reg) begin
        clr_addr_reg <= clr_addr_reg + 1'b1;
        if (&clr_addr_reg) begin
            clearing_reg <= 1'b0;
        end
    end
    if (clear_start) begin
        clearing_reg <= 1'b1;
        clr_addr_reg <= {LEVELS-1{1'b0}};
    end
    if (rst) begin
        clearing_reg <= 1'b1;
        clr_addr_reg <= {LEVELS-1{1'b0}};
    end
end

// ---------------------------------------------------------------------------
// update pipeline control (U0 .. U3)

reg u0_v_reg, u1_v_reg, u2_v_reg, u3_v_reg, u4_v_reg;
reg [LEVELS-1:0] u0_i_reg, u1_i_reg, u2_i_reg, u3_i_reg;
// verilator lint_off UNUSEDSIGNAL
reg [LEVELS-1:0] u4_i_reg;  // bit 0 selects a leaf, the levels use the rest
// verilator lint_on UNUSEDSIGNAL
reg [31:0] u0_p_reg, u1_p_reg, u2_p_reg;
// the update's table and whether it counts in that table's total
reg [JW-1:0] u0_j_reg, u1_j_reg, u2_j_reg, u3_j_reg, u4_j_reg;
reg u0_c_reg, u1_c_reg, u2_c_reg, u3_c_reg, u4_c_reg;
reg u1_fwd_reg;
reg [31:0] u2_old_reg;  // the old leaf value (forwarded or read)
reg [LANE0_W-1:0] u3_d0_reg;
reg u3_b_reg;
reg [PRIO_LANE1_W-1:0] u3_phi_reg, u3_ohi_reg;
reg [DELTA_LANE1_W-1:0] u4_d1_reg;

assign upd_busy = u0_v_reg | u1_v_reg | u2_v_reg | u3_v_reg | u4_v_reg;

// leaves
reg [31:0] leaf_even[(2**(LEVELS-1))-1:0];
reg [31:0] leaf_odd[(2**(LEVELS-1))-1:0];
reg [31:0] even_rd_reg, odd_rd_reg;

wire [31:0] leaf_old = u1_fwd_reg ? u2_p_reg : (u1_i_reg[0] ? odd_rd_reg : even_rd_reg);
wire [LANE0_W:0] d0 = {1'b0, u2_p_reg[LANE0_W-1:0]} - {1'b0, u2_old_reg[LANE0_W-1:0]};
// a - b - c as one two-operand subtraction: the borrow-in rides in an extra LSB, so
// synthesis builds a single carry chain (no full-adder layer in front of it)
// verilator lint_off UNUSEDSIGNAL
wire [DELTA_LANE1_W:0] d1_x = {1'b0, u3_phi_reg, 1'b0} - {1'b0, u3_ohi_reg, u3_b_reg};
// verilator lint_on UNUSEDSIGNAL
wire [DELTA_LANE1_W-1:0] d1 = d1_x[DELTA_LANE1_W:1];

always @(posedge clk) begin
    u0_v_reg <= upd_valid;
    u0_i_reg <= upd_index;
    u0_p_reg <= upd_prio;
    {u4_j_reg, u4_c_reg, u3_j_reg, u3_c_reg, u2_j_reg, u2_c_reg, u1_j_reg, u1_c_reg, u0_j_reg, u0_c_reg} <=
        {u3_j_reg, u3_c_reg, u2_j_reg, u2_c_reg, u1_j_reg, u1_c_reg, u0_j_reg, u0_c_reg, upd_job, upd_count};

    u1_v_reg <= u0_v_reg;
    u1_i_reg <= u0_i_reg;
    u1_p_reg <= u0_p_reg;
    u1_fwd_reg <= u0_v_reg && u1_v_reg && u0_i_reg == u1_i_reg;

    u2_v_reg <= u1_v_reg;
    u2_i_reg <= u1_i_reg;
    u2_p_reg <= u1_p_reg;
    u2_old_reg <= leaf_old;

    u3_v_reg <= u2_v_reg;
    u3_i_reg <= u2_i_reg;
    u3_d0_reg <= d0[LANE0_W-1:0];
    u3_b_reg <= d0[LANE0_W];
    u3_phi_reg <= u2_p_reg[31:LANE0_W];
    u3_ohi_reg <= u2_old_reg[31:LANE0_W];

    u4_v_reg <= u3_v_reg;
    u4_i_reg <= u3_i_reg;
    u4_d1_reg <= d1;

    if (rst) begin
        u0_v_reg <= 1'b0;
        u1_v_reg <= 1'b0;
        u2_v_reg <= 1'b0;
        u3_v_reg <= 1'b0;
        u4_v_reg <= 1'b0;
    end
end

// root: lane 0 in U3, lane 1 with carry in U4
reg [LANE0_W-1:0] root0_reg;
reg [SUM_LANE1_W-1:0] root1_reg;
reg root_c_reg;

wire [LANE0_W:0] root0_sum = {1'b0, root0_reg} + {1'b0, u3_d0_reg};
// verilator lint_off UNUSEDSIGNAL
wire [SUM_LANE1_W:0] root1_x = {root1_reg, root_c_reg} + {{SUM_LANE1_W-DELTA_LANE1_W{u4_d1_reg[DELTA_LANE1_W-1]}}, u4_d1_reg, 1'b1};
// verilator lint_on UNUSEDSIGNAL
wire [SUM_LANE1_W-1:0] root1_sum = root1_x[SUM_LANE1_W:1];

assign total = {root1_reg, root0_reg};

always @(posedge clk) begin
    if (u3_v_reg) begin
        root0_reg <= root0_sum[LANE0_W-1:0];
    end
    root_c_reg <= root0_sum[LANE0_W];  // only used by the update in U4, which is valid then
    if (u4_v_reg) begin
        root1_reg <= root1_sum;
    end
    if (clearing_reg) begin
        root0_reg <= {LANE0_W{1'b0}};
        root1_reg <= {SUM_LANE1_W{1'b0}};
    end
end

// every table's total: the root's adders on the updates tagged with its job
genvar gj;

generate

for (gj = 0; gj < JOBS; gj = gj + 1) begin : g_job_total
    localparam [JW-1:0] J = gj;
    reg [LANE0_W-1:0] t0_reg;
    reg [SUM_LANE1_W-1:0] t1_reg;
    reg t_c_reg;

    wire [LANE0_W:0] t0_sum = {1'b0, t0_reg} + {1'b0, u3_d0_reg};
    // verilator lint_off UNUSEDSIGNAL
    wire [SUM_LANE1_W:0] t1_x = {t1_reg, t_c_reg} + {{SUM_LANE1_W-DELTA_LANE1_W{u4_d1_reg[DELTA_LANE1_W-1]}}, u4_d1_reg, 1'b1};
    // verilator lint_on UNUSEDSIGNAL

    always @(posedge clk) begin
        if (u3_v_reg && u3_c_reg && u3_j_reg == J) t0_reg <= t0_sum[LANE0_W-1:0];
        t_c_reg <= t0_sum[LANE0_W];
        if (u4_v_reg && u4_c_reg && u4_j_reg == J) t1_reg <= t1_x[SUM_LANE1_W:1];
        if (clearing_reg || job_total_clear[gj]) {t1_reg, t0_reg} <= {SUM_WIDTH{1'b0}};
    end

    assign job_total[SUM_WIDTH*gj +: SUM_WIDTH] = {t1_reg, t0_reg};
end

endgenerate

// ---------------------------------------------------------------------------
// descent stage boundaries: stage d reads bus d, writes bus d+1

wire [LEVELS-1:0] bus_v;
wire [LEVELS*LEVELS-1:0] bus_n;
wire [LEVELS*SUM_WIDTH-1:0] bus_t;
wire [LEVELS-1:0] bus_uni;
wire [LEVELS*DEPTH_WIDTH-1:0] bus_depth;
wire [LEVELS*LEVELS-1:0] bus_idx;
wire [LEVELS*USER_WIDTH-1:0] bus_user;

reg q_v_reg;
reg [SUM_WIDTH-1:0] q_t_reg;
reg q_uni_reg;
reg [LEVELS-1:0] q_idx_reg;
reg [DEPTH_WIDTH-1:0] q_depth_reg;
reg [USER_WIDTH-1:0] q_user_reg;

always @(posedge clk) begin
    q_v_reg <= q_valid;
    q_t_reg <= q_target;
    q_uni_reg <= q_uniform;
    q_idx_reg <= q_index;
    q_depth_reg <= q_depth;
    q_user_reg <= q_user;
    if (rst) begin
        q_v_reg <= 1'b0;
    end
end

assign bus_v[0] = q_v_reg;
assign bus_n[0 +: LEVELS] = {LEVELS{1'b0}};
assign bus_t[0 +: SUM_WIDTH] = q_t_reg;
assign bus_uni[0] = q_uni_reg;
assign bus_depth[0 +: DEPTH_WIDTH] = q_depth_reg;
assign bus_idx[0 +: LEVELS] = q_idx_reg;
assign bus_user[0 +: USER_WIDTH] = q_user_reg;

// per-stage B and C valid bits, for q_busy. q_busy is registered (the wide OR
// and the executor's wait conditions behind it made the engine's worst path):
// q_busy_reg holds whether a query was in a stage or entering (q_valid) in the
// clock before, so it is high in every clock a query is in the pipeline and
// falls one clock after the last one left (a wait for it lasts a clock longer)
wire [LEVELS-1:0] stage_busy;
reg q_busy_reg;
assign q_busy = q_busy_reg;

always @(posedge clk) begin
    q_busy_reg <= q_valid | (|bus_v) | (|stage_busy);
    if (rst) begin
        q_busy_reg <= 1'b0;
    end
end

// ---------------------------------------------------------------------------
// internal levels e = 1 .. LEVELS-1, each with the descent stage d = e-1 that
// reads it

genvar e;
generate
    for (e = 1; e < LEVELS; e = e + 1) begin : level
        localparam LEVEL_LANE1_W = 32 + LEVELS - e - LANE0_W;  // lane 1 width at this level
        localparam STAGE = e - 1;             // descent stage reading this level
        localparam [DEPTH_WIDTH-1:0] STAGE_D = STAGE;

        reg [LANE0_W-1:0] mem0[(2**e)-1:0];
        reg [LEVEL_LANE1_W-1:0] mem1[(2**e)-1:0];
        reg [LANE0_W-1:0] rd0_reg;
        reg [LEVEL_LANE1_W-1:0] rd1_reg;
        // the reads registered again: an update's operand (forwarded or read), a
        // descent's left child sum
        reg [LANE0_W-1:0] op0_reg;
        reg [LEVEL_LANE1_W-1:0] op1_reg;

        // descent stage registers: B (block RAM read), B2 (read registered), C (after
        // lane 0), D (after both lane-1 chains)
        reg b_v_reg, b2_v_reg, c_v_reg;
        reg [LEVELS-1:0] b_n_reg, b_idx_reg, b2_n_reg, b2_idx_reg, c_idx_reg, c_n_reg;
        reg [SUM_WIDTH-1:0] b_t_reg, b2_t_reg, c_t_reg;
        reg b_uni_reg, b2_uni_reg, c_uni_reg;
        reg [DEPTH_WIDTH-1:0] b_depth_reg, b2_depth_reg, c_depth_reg, d_depth_reg, o_depth_reg;
        reg [USER_WIDTH-1:0] b_user_reg, b2_user_reg, c_user_reg;
        reg [LANE0_W-1:0] c_df0_reg;
        reg c_b0_reg;
        reg d_v_reg;
        reg [LEVELS-1:0] d_idx_reg;
        // verilator lint_off UNUSEDSIGNAL
        reg [LEVELS-1:0] d_n_reg;  // the top bit of a node number is 0 until the last stage
        // verilator lint_on UNUSEDSIGNAL
        reg [SUM_WIDTH-1:0] d_t_reg;
        reg d_uni_reg;
        // this level follows the query's index: a uniform query, or a level above its table
        reg d_force_reg;
        reg [USER_WIDTH-1:0] d_user_reg;
        reg [LANE0_W-1:0] d_df0_reg;
        reg d_b0_reg;
        reg [SUM_LANE1_W:0] d_dfa_reg, d_dfb_reg;
        // next bus registers
        reg o_v_reg;
        reg [LEVELS-1:0] o_n_reg, o_idx_reg;
        reg [SUM_WIDTH-1:0] o_t_reg;
        reg o_uni_reg;
        reg [USER_WIDTH-1:0] o_user_reg;

        wire a_v = bus_v[STAGE];
        wire [LEVELS-1:0] a_n = bus_n[STAGE*LEVELS +: LEVELS];

        // update lanes: lane 0 read in U1, added and written in U3; lane 1 read in U2,
        // added and written in U4
        wire [e-1:0] u1_a = u1_i_reg[LEVELS-1 -: e];
        wire [e-1:0] u2_a = u2_i_reg[LEVELS-1 -: e];
        wire [e-1:0] u3_a = u3_i_reg[LEVELS-1 -: e];
        wire [e-1:0] u4_a = u4_i_reg[LEVELS-1 -: e];
        // forwarding: the same node written by the update one (f*1) or two (f*2)
        // clocks ahead, which a read misses (written after it, or in its clock)
        reg f01_reg, f02_reg, f11_reg, f12_reg;
        reg [LANE0_W-1:0] last0_reg;
        reg [LEVEL_LANE1_W-1:0] last1_reg;
        reg c0_reg;

        // operands forced to 0 while clearing, so the write data is the sum itself
        wire [LANE0_W-1:0] a0 = clearing_reg ? {LANE0_W{1'b0}} : op0_reg;
        wire [LANE0_W-1:0] b0 = clearing_reg ? {LANE0_W{1'b0}} : u3_d0_reg;
        wire [LANE0_W:0] s0 = {1'b0, a0} + {1'b0, b0};
        // lane 1 with the lane-0 carry as an extra LSB (one carry chain)
        // verilator lint_off UNUSEDSIGNAL
        wire [LEVEL_LANE1_W:0] a1 = clearing_reg ? {LEVEL_LANE1_W+1{1'b0}} : {op1_reg, c0_reg};
        wire [LEVEL_LANE1_W:0] b1 = clearing_reg ? {LEVEL_LANE1_W+1{1'b0}} : {{LEVEL_LANE1_W-DELTA_LANE1_W{u4_d1_reg[DELTA_LANE1_W-1]}}, u4_d1_reg, 1'b1};
        wire [LEVEL_LANE1_W:0] s1_x = a1 + b1;
        // verilator lint_on UNUSEDSIGNAL
        wire [LEVEL_LANE1_W-1:0] s1 = s1_x[LEVEL_LANE1_W:1];

        // read addresses: updates own the ports while in flight
        // verilator lint_off UNUSEDSIGNAL
        wire [LEVELS:0] a_ext = {a_n, 1'b0};
        wire [LEVELS:0] b_ext = {b_n_reg, 1'b0};
        // verilator lint_on UNUSEDSIGNAL
        wire [e-1:0] a_addr = a_ext[e-1:0];
        wire [e-1:0] b_addr = b_ext[e-1:0];
        wire [e-1:0] ra0 = u1_v_reg ? u1_a : a_addr;
        wire [e-1:0] ra1 = u2_v_reg ? u2_a : b_addr;
        // write ports
        wire we0 = clearing_reg || u3_v_reg;
        wire we1 = clearing_reg || u4_v_reg;
        wire [e-1:0] wa0 = clearing_reg ? clr_addr_reg[e-1:0] : u3_a;
        wire [e-1:0] wa1 = clearing_reg ? clr_addr_reg[e-1:0] : u4_a;
        wire [LANE0_W-1:0] wd0 = s0[LANE0_W-1:0];
        wire [LEVEL_LANE1_W-1:0] wd1 = s1;

        always @(posedge clk) begin
            if (we0) begin
                mem0[wa0] <= wd0;
            end
            rd0_reg <= mem0[ra0];
        end

        always @(posedge clk) begin
            if (we1) begin
                mem1[wa1] <= wd1;
            end
            rd1_reg <= mem1[ra1];
        end

        always @(posedge clk) begin
            // lane 0: the flags in U1 (against U2 and U3), the operand in U2 (the
            // update in U3 adds now, the one in U4 added a clock ago)
            f01_reg <= u1_v_reg && u2_v_reg && u1_a == u2_a;
            f02_reg <= u1_v_reg && u3_v_reg && u1_a == u3_a;
            op0_reg <= f01_reg ? s0[LANE0_W-1:0] : (f02_reg ? last0_reg : rd0_reg);
            // lane 1: the same one clock later
            f11_reg <= u2_v_reg && u3_v_reg && u2_a == u3_a;
            f12_reg <= u2_v_reg && u4_v_reg && u2_a == u4_a;
            op1_reg <= f11_reg ? s1 : (f12_reg ? last1_reg : rd1_reg);
            last0_reg <= s0[LANE0_W-1:0];
            last1_reg <= s1;
            c0_reg <= s0[LANE0_W];
        end

        // descent: lane 0 in B2; in C lane 1 both without and with the lane-0 borrow
        // (t - l and t + ~l = t - l - 1, two two-operand chains); in D the borrow picks
        // one and the side is chosen (no update is in flight: op*_reg hold the reads)
        wire [LANE0_W:0] df0 = {1'b0, b2_t_reg[LANE0_W-1:0]} - {1'b0, op0_reg};
        wire [SUM_LANE1_W-1:0] l1 = {{SUM_LANE1_W-LEVEL_LANE1_W{1'b0}}, op1_reg};
        wire [SUM_LANE1_W:0] dfa = {1'b0, c_t_reg[SUM_WIDTH-1:LANE0_W]} - {1'b0, l1};
        wire [SUM_LANE1_W:0] dfb = {1'b0, c_t_reg[SUM_WIDTH-1:LANE0_W]} + {1'b0, ~l1};
        // target < left sum: t1 < l1 without a lane-0 borrow, t1 <= l1 with one
        wire lt = d_b0_reg ? !d_dfb_reg[SUM_LANE1_W] : d_dfa_reg[SUM_LANE1_W];
        wire go_left = d_force_reg ? !d_idx_reg[LEVELS-1-STAGE] : lt;
        wire [SUM_LANE1_W-1:0] df1 = d_b0_reg ? d_dfb_reg[SUM_LANE1_W-1:0] : d_dfa_reg[SUM_LANE1_W-1:0];

        always @(posedge clk) begin
            b_v_reg <= a_v;
            b_n_reg <= a_n;
            b_t_reg <= bus_t[STAGE*SUM_WIDTH +: SUM_WIDTH];
            b_uni_reg <= bus_uni[STAGE];
            {o_depth_reg, d_depth_reg, c_depth_reg, b2_depth_reg, b_depth_reg} <=
                {d_depth_reg, c_depth_reg, b2_depth_reg, b_depth_reg, bus_depth[STAGE*DEPTH_WIDTH +: DEPTH_WIDTH]};
            d_force_reg <= c_uni_reg || c_depth_reg > STAGE_D;
            b_idx_reg <= bus_idx[STAGE*LEVELS +: LEVELS];
            b_user_reg <= bus_user[STAGE*USER_WIDTH +: USER_WIDTH];

            b2_v_reg <= b_v_reg;
            b2_n_reg <= b_n_reg;
            b2_t_reg <= b_t_reg;
            b2_uni_reg <= b_uni_reg;
            b2_idx_reg <= b_idx_reg;
            b2_user_reg <= b_user_reg;

            c_v_reg <= b2_v_reg;
            c_n_reg <= b2_n_reg;
            c_t_reg <= b2_t_reg;
            c_uni_reg <= b2_uni_reg;
            c_idx_reg <= b2_idx_reg;
            c_user_reg <= b2_user_reg;
            c_df0_reg <= df0[LANE0_W-1:0];
            c_b0_reg <= df0[LANE0_W];

            d_v_reg <= c_v_reg;
            d_n_reg <= c_n_reg;
            d_t_reg <= c_t_reg;
            d_uni_reg <= c_uni_reg;
            d_idx_reg <= c_idx_reg;
            d_user_reg <= c_user_reg;
            d_df0_reg <= c_df0_reg;
            d_b0_reg <= c_b0_reg;
            d_dfa_reg <= dfa;
            d_dfb_reg <= dfb;

            o_v_reg <= d_v_reg;
            o_n_reg <= {d_n_reg[LEVELS-2:0], !go_left};
            // a uniform query never reads its target
            o_t_reg <= (lt || d_force_reg) ? d_t_reg : {df1, d_df0_reg};
            o_uni_reg <= d_uni_reg;
            o_idx_reg <= d_idx_reg;
            o_user_reg <= d_user_reg;

            if (rst) begin
                b_v_reg <= 1'b0;
                b2_v_reg <= 1'b0;
                c_v_reg <= 1'b0;
                d_v_reg <= 1'b0;
                o_v_reg <= 1'b0;
            end
        end

        assign stage_busy[STAGE] = b_v_reg | b2_v_reg | c_v_reg | d_v_reg;
        assign bus_v[STAGE+1] = o_v_reg;
        assign bus_n[(STAGE+1)*LEVELS +: LEVELS] = o_n_reg;
        assign bus_t[(STAGE+1)*SUM_WIDTH +: SUM_WIDTH] = o_t_reg;
        assign bus_uni[STAGE+1] = o_uni_reg;
        assign bus_depth[(STAGE+1)*DEPTH_WIDTH +: DEPTH_WIDTH] = o_depth_reg;
        assign bus_idx[(STAGE+1)*LEVELS +: LEVELS] = o_idx_reg;
        assign bus_user[(STAGE+1)*USER_WIDTH +: USER_WIDTH] = o_user_reg;
    end
endgenerate

// ---------------------------------------------------------------------------
// leaves: update read/write (U0/U1) and the last descent stage (LEVELS-1:
// LB read, LB2 read registered, LC lane 0 borrow, LD lane 1 borrows, R pick)

localparam LAST_STAGE = LEVELS - 1;
localparam [DEPTH_WIDTH-1:0] LAST_STAGE_D = LAST_STAGE[DEPTH_WIDTH-1:0];

reg lb_v_reg, lb2_v_reg, lc_v_reg;
reg [LEVELS-1:0] lb_n_reg, lb_idx_reg, lb2_n_reg, lb2_idx_reg;
reg [SUM_WIDTH-1:0] lb_t_reg, lb2_t_reg;
// verilator lint_off UNUSEDSIGNAL
reg [LEVELS-1:0] lc_n_reg, lc_idx_reg;  // the last stage uses the low index bit and n[LEVELS-2:0]
reg [SUM_WIDTH-1:0] lc_t_reg;             // only lane 1 is left to compare
// verilator lint_on UNUSEDSIGNAL
reg lb_uni_reg, lb2_uni_reg, lc_uni_reg;
reg [DEPTH_WIDTH-1:0] lb_depth_reg, lb2_depth_reg, lc_depth_reg;
reg [USER_WIDTH-1:0] lb_user_reg, lb2_user_reg, lc_user_reg;
reg [31:0] lb2_even_reg, lb2_odd_reg;  // the leaf reads registered again
reg lc_b0_reg;
reg [31:0] lc_even_reg, lc_odd_reg;

// the decision is registered before the priority is picked (one LUT after the chain)
reg ld_v_reg, ld_uni_reg, ld_idx0_reg, ld_b0_reg, ld_ba_reg, ld_bb_reg;
reg [LEVELS-2:0] ld_n_reg;
reg [31:0] ld_even_reg, ld_odd_reg;
reg [USER_WIDTH-1:0] ld_user_reg;

reg r_v_reg;
reg [LEVELS-1:0] r_index_reg;
reg [31:0] r_prio_reg;
reg [USER_WIDTH-1:0] r_user_reg;

wire [LEVELS-1:0] la_n = bus_n[LAST_STAGE*LEVELS +: LEVELS];
wire [LEVELS-2:0] leaf_ra = u0_v_reg ? u0_i_reg[LEVELS-1:1] : la_n[LEVELS-2:0];
wire leaf_we_even = clearing_reg || (u1_v_reg && !u1_i_reg[0]);
wire leaf_we_odd = clearing_reg || (u1_v_reg && u1_i_reg[0]);
wire [LEVELS-2:0] leaf_wa = clearing_reg ? clr_addr_reg : u1_i_reg[LEVELS-1:1];
wire [31:0] leaf_wd = clearing_reg ? 32'd0 : u1_p_reg;

always @(posedge clk) begin
    if (leaf_we_even) begin
        leaf_even[leaf_wa] <= leaf_wd;
    end
    even_rd_reg <= leaf_even[leaf_ra];
end

always @(posedge clk) begin
    if (leaf_we_odd) begin
        leaf_odd[leaf_wa] <= leaf_wd;
    end
    odd_rd_reg <= leaf_odd[leaf_ra];
end

// only the borrow of lane 0 matters in the last stage
// verilator lint_off UNUSEDSIGNAL
wire [LANE0_W:0] ldf0 = {1'b0, lb2_t_reg[LANE0_W-1:0]} - {1'b0, lb2_even_reg[LANE0_W-1:0]};
// verilator lint_on UNUSEDSIGNAL
// the last stage needs only the borrows: t1 < l1, and t1 <= l1 for a lane-0 borrow
wire [SUM_LANE1_W-1:0] ll1 = {{SUM_LANE1_W-PRIO_LANE1_W{1'b0}}, lc_even_reg[31:LANE0_W]};
// verilator lint_off UNUSEDSIGNAL
wire [SUM_LANE1_W:0] ldfa = {1'b0, lc_t_reg[SUM_WIDTH-1:LANE0_W]} - {1'b0, ll1};
wire [SUM_LANE1_W:0] ldfb = {1'b0, lc_t_reg[SUM_WIDTH-1:LANE0_W]} + {1'b0, ~ll1};
// verilator lint_on UNUSEDSIGNAL
wire lgo_left = ld_uni_reg ? !ld_idx0_reg : (ld_b0_reg ? !ld_bb_reg : ld_ba_reg);

always @(posedge clk) begin
    lb_v_reg <= bus_v[LAST_STAGE];
    lb_n_reg <= la_n;
    lb_t_reg <= bus_t[LAST_STAGE*SUM_WIDTH +: SUM_WIDTH];
    lb_uni_reg <= bus_uni[LAST_STAGE];
    {lc_depth_reg, lb2_depth_reg, lb_depth_reg} <=
        {lb2_depth_reg, lb_depth_reg, bus_depth[LAST_STAGE*DEPTH_WIDTH +: DEPTH_WIDTH]};
    lb_idx_reg <= bus_idx[LAST_STAGE*LEVELS +: LEVELS];
    lb_user_reg <= bus_user[LAST_STAGE*USER_WIDTH +: USER_WIDTH];

    lb2_v_reg <= lb_v_reg;
    lb2_n_reg <= lb_n_reg;
    lb2_t_reg <= lb_t_reg;
    lb2_uni_reg <= lb_uni_reg;
    lb2_idx_reg <= lb_idx_reg;
    lb2_user_reg <= lb_user_reg;
    lb2_even_reg <= even_rd_reg;
    lb2_odd_reg <= odd_rd_reg;

    lc_v_reg <= lb2_v_reg;
    lc_n_reg <= lb2_n_reg;
    lc_t_reg <= lb2_t_reg;
    lc_uni_reg <= lb2_uni_reg;
    lc_idx_reg <= lb2_idx_reg;
    lc_user_reg <= lb2_user_reg;
    lc_b0_reg <= ldf0[LANE0_W];
    lc_even_reg <= lb2_even_reg;
    lc_odd_reg <= lb2_odd_reg;

    ld_v_reg <= lc_v_reg;
    ld_uni_reg <= lc_uni_reg || lc_depth_reg > LAST_STAGE_D;
    ld_idx0_reg <= lc_idx_reg[0];
    ld_b0_reg <= lc_b0_reg;
    ld_ba_reg <= ldfa[SUM_LANE1_W];
    ld_bb_reg <= ldfb[SUM_LANE1_W];
    ld_n_reg <= lc_n_reg[LEVELS-2:0];
    ld_even_reg <= lc_even_reg;
    ld_odd_reg <= lc_odd_reg;
    ld_user_reg <= lc_user_reg;

    r_v_reg <= ld_v_reg;
    r_index_reg <= {ld_n_reg, !lgo_left};
    r_prio_reg <= lgo_left ? ld_even_reg : ld_odd_reg;
    r_user_reg <= ld_user_reg;

    if (rst) begin
        lb_v_reg <= 1'b0;
        lb2_v_reg <= 1'b0;
        lc_v_reg <= 1'b0;
        ld_v_reg <= 1'b0;
        r_v_reg <= 1'b0;
    end
end

assign stage_busy[LAST_STAGE] = lb_v_reg | lb2_v_reg | lc_v_reg | ld_v_reg | r_v_reg;

assign r_valid = r_v_reg;
assign r_index = r_index_reg;
assign r_prio = r_prio_reg;
assign r_user = r_user_reg;

endmodule

`resetall
