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
// Language: Verilog 2001

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Replay sum tree update stage (replay_executor): the leaf updates of a
 * PUSH and of an UPDATE, one per clock, registered for replay_sum_tree.
 *
 * A PUSH's priority block (its first 64 payload bytes, blk_we: one beat,
 * blk_hi: the second 256-bit half) is held here; its leaf j (leaf_v, index
 * leaf_idx, priority word j of the block) goes to the update registers
 * directly. An UPDATE pair (pair_v: the (index, priority) pair the
 * executor selected from the payload beat) is registered once first, so
 * the payload FIFO's block RAM head reaches only that register (issue 25),
 * then checked: index >= size (or above the index width) is not applied
 * and counted (bad_update, CNT_DROP_BAD_INDEX). busy: a pair or leaf is on
 * its way (a SAMPLE_REQ or RPL_RESET waits for it and for upd_busy).
 * ch_rec: the update is a PUSH's record (replay_stack's chain write).
 *
 * Jobs: a pair's index is its job's table's (the request's base and size,
 * registered with the pair: the executor may start the next request before
 * the pair is checked); the update is tagged with the request's job
 * (upd_job, upd_count: it counts in the job's total). A leaf with leaf_zero
 * (a table emptied) is set to 0 untagged and is no record.
 */
module replay_leaf_update #
(
    // Width of a payload beat in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // log2(C)
    parameter INDEX_W = 14,
    // Width of a job index
    parameter JW = 1
)
(
    input  wire                clk,
    input  wire                rst,

    input  wire [INDEX_W:0]    size,
    input  wire [INDEX_W-1:0]  base,
    input  wire [JW-1:0]       job,

    input  wire                   blk_we,
    input  wire                   blk_hi,
    input  wire [DATA_WIDTH-1:0]  blk_data,
    input  wire                leaf_v,
    input  wire                leaf_zero,
    input  wire [INDEX_W-1:0]  leaf_idx,
    input  wire [3:0]          leaf_j,
    input  wire                pair_v,
    input  wire [63:0]         pair,

    output wire                upd_valid,
    output wire [INDEX_W-1:0]  upd_index,
    output wire [31:0]         upd_prio,
    output wire [JW-1:0]       upd_job,
    output wire                upd_count,
    output wire                bad_update,
    output wire [JW-1:0]       bad_job,
    output wire                busy,
    output wire                ch_rec
);

reg [2*DATA_WIDTH-1:0] blk_reg;  // the priority block (first 64 bytes)
reg up_v_reg;
reg [63:0] up_pair_reg;
reg tu_v_reg;
reg tu_check_reg;
reg [31:0] tu_idx_reg;
reg [31:0] tu_prio_reg;
reg [INDEX_W:0] up_size_reg, tu_size_reg;
reg [INDEX_W-1:0] up_base_reg, tu_base_reg;
reg [JW-1:0] up_job_reg, tu_job_reg;
reg tu_zero_reg;

wire tu_bad = tu_check_reg && (tu_idx_reg[31:INDEX_W+1] != 0 || tu_idx_reg[INDEX_W:0] >= tu_size_reg);

assign upd_valid = tu_v_reg && !tu_bad;
// a pair's index in its table (below its size: within the table's records)
assign upd_index = tu_base_reg | tu_idx_reg[INDEX_W-1:0];
assign upd_job = tu_job_reg;
assign upd_count = !tu_zero_reg;
assign bad_job = tu_job_reg;
assign upd_prio = tu_prio_reg;
assign bad_update = tu_v_reg && tu_bad;
assign busy = up_v_reg || tu_v_reg;
assign ch_rec = tu_v_reg && !tu_check_reg && !tu_zero_reg;

always @(posedge clk) begin
    if (blk_we) begin
        if (blk_hi) begin
            blk_reg[DATA_WIDTH +: DATA_WIDTH] <= blk_data;
        end else begin
            blk_reg[0 +: DATA_WIDTH] <= blk_data;
        end
    end
    up_v_reg <= pair_v;
    up_pair_reg <= pair;
    up_size_reg <= size;
    up_base_reg <= base;
    up_job_reg <= job;
    tu_v_reg <= leaf_v || up_v_reg;
    tu_check_reg <= !leaf_v && up_v_reg;
    tu_zero_reg <= leaf_v && leaf_zero;
    if (leaf_v) begin
        // a PUSH's leaf (its index in the record memory already) or a zeroed one
        tu_idx_reg <= {{32-INDEX_W{1'b0}}, leaf_idx};
        tu_prio_reg <= leaf_zero ? 32'd0 : blk_reg[leaf_j*32 +: 32];
        tu_base_reg <= {INDEX_W{1'b0}};
        tu_job_reg <= job;
    end else if (up_v_reg) begin
        tu_idx_reg <= up_pair_reg[31:0];
        tu_prio_reg <= up_pair_reg[63:32];
        tu_base_reg <= up_base_reg;
        tu_job_reg <= up_job_reg;
    end
    tu_size_reg <= up_size_reg;
    if (rst) begin
        up_v_reg <= 1'b0;
        tu_v_reg <= 1'b0;
        tu_check_reg <= 1'b0;
        tu_zero_reg <= 1'b0;
    end
end

endmodule

`resetall
