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

/*
 * Replay executor's writes: a PUSH's records into the record memory and its
 * leaves into the sum tree, an UPDATE's pairs and an emptied table's zeroed
 * leaves into the sum tree (through replay_leaf_update, the tree's update
 * registers).
 *
 * A PUSH: its priority block's beats are held (blk_we, blk_hi); start (the
 * block's last beat) restarts the counters; while run (the executor's
 * record state) its count records go to the record memory one beat per
 * clock (pl_take: the payload beat is taken when pl_valid; rec_we and
 * rec_waddr = {memory index, beat}, the record's last beat rec_last, its
 * memory index base + (wp + j mod the table size)) while its leaves go to
 * the tree one per clock (leaf j at the same index, tagged with the job);
 * done when both are through. An UPDATE pair (pair_v, pair) and a zeroed
 * leaf (zeroing, zero_idx) go to replay_leaf_update as they come.
 */
module replay_writer #
(
    // Width of a payload beat in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // log2(C)
    parameter INDEX_W = 14,
    // Width of a job index
    parameter JW = 1,
    // Width of a record's beat number
    parameter REC_BEAT_W = 2
)
(
    input  wire                          clk,
    input  wire                          rst,

    /*
     * The request's job: its table's base, index mask and size, its
     * pointer, its record's last beat
     */
    input  wire [JW-1:0]                 job,
    input  wire [INDEX_W-1:0]            base,
    input  wire [INDEX_W-1:0]            mask,
    input  wire [INDEX_W:0]              size,
    input  wire [INDEX_W-1:0]            wp,
    input  wire [REC_BEAT_W-1:0]         rec_last,

    /*
     * A PUSH: its priority block, its records and leaves
     */
    input  wire                          blk_we,
    input  wire                          blk_hi,
    input  wire [DATA_WIDTH-1:0]         pl_data,
    input  wire                          pl_valid,
    input  wire                          start,
    input  wire                          run,
    input  wire [4:0]                    count,
    output wire                          pl_take,
    output wire                          rec_we,
    output wire [INDEX_W+REC_BEAT_W-1:0] rec_waddr,
    output wire                          done,

    /*
     * An UPDATE's pair; a zeroed leaf
     */
    input  wire                          pair_v,
    input  wire [63:0]                   pair,
    input  wire                          zeroing,
    input  wire [INDEX_W-1:0]            zero_idx,

    /*
     * Sum tree updates, a bad pair, a record's leaf (replay_leaf_update)
     */
    output wire                          upd_valid,
    output wire [INDEX_W-1:0]            upd_index,
    output wire [31:0]                   upd_prio,
    output wire [JW-1:0]                 upd_job,
    output wire                          upd_count,
    output wire                          bad_update,
    output wire [JW-1:0]                 bad_job,
    output wire                          busy,
    output wire                          ch_rec
);

reg [4:0] rec_j_reg;                // records written
reg [REC_BEAT_W-1:0] rec_b_reg;     // the beat of the record being written
reg [INDEX_W-1:0] rec_idx_reg;      // its memory index
reg [4:0] tu_j_reg;                 // leaves written

// verilator lint_off UNUSEDSIGNAL
wire [31:0] wp_plus_j = {{32-INDEX_W{1'b0}}, wp} + {27'd0, tu_j_reg};
wire [31:0] rec_idx_inc = {{32-INDEX_W{1'b0}}, rec_idx_reg} + 32'd1;
// verilator lint_on UNUSEDSIGNAL
// a PUSH's leaf j: in the job's table, at its base
wire [INDEX_W-1:0] leaf_at = base | (wp_plus_j[INDEX_W-1:0] & mask);
wire leaf_v = run && tu_j_reg != count;

assign pl_take = run && rec_j_reg != count;
assign rec_we = pl_take && pl_valid;
assign rec_waddr = {rec_idx_reg, rec_b_reg};
assign done = rec_j_reg == count && tu_j_reg == count;

always @(posedge clk) begin
    if (start) begin
        rec_j_reg <= 5'd0;
        rec_b_reg <= {REC_BEAT_W{1'b0}};
        rec_idx_reg <= base | wp;
        tu_j_reg <= 5'd0;
    end else begin
        if (rec_we) begin
            if (rec_b_reg == rec_last) begin
                rec_b_reg <= {REC_BEAT_W{1'b0}};
                rec_j_reg <= rec_j_reg + 1'b1;
                rec_idx_reg <= base | (rec_idx_inc[INDEX_W-1:0] & mask);
            end else begin
                rec_b_reg <= rec_b_reg + 1'b1;
            end
        end
        if (leaf_v) begin
            tu_j_reg <= tu_j_reg + 1'b1;
        end
    end
    if (rst) begin
        rec_j_reg <= 5'd0;
        tu_j_reg <= 5'd0;
    end
end

replay_leaf_update #(
    .DATA_WIDTH(DATA_WIDTH),
    .INDEX_W(INDEX_W),
    .JW(JW)
)
leaf_inst (
    .clk(clk),
    .rst(rst),
    .size(size),
    .base(base),
    .job(job),
    .blk_we(blk_we),
    .blk_hi(blk_hi),
    .blk_data(pl_data),
    .leaf_v(leaf_v || zeroing),
    .leaf_zero(zeroing),
    .leaf_idx(zeroing ? zero_idx : leaf_at),
    .leaf_j(tu_j_reg[3:0]),
    .pair_v(pair_v),
    .pair(pair),
    .upd_valid(upd_valid),
    .upd_index(upd_index),
    .upd_prio(upd_prio),
    .upd_job(upd_job),
    .upd_count(upd_count),
    .bad_update(bad_update),
    .bad_job(bad_job),
    .busy(busy),
    .ch_rec(ch_rec)
);

endmodule

`resetall
