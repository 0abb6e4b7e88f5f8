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
 * Gradient aggregation engine: the job of a frame (docs/protocol.md section
 * 11), two clocks ahead of grad_agg_ingress.
 *
 * Two register stages on the engine's input stream (one beat per clock;
 * s_axis_tready = m_axis_tready or stage B empty, so a stall holds both
 * stages). Each beat carries, on m_job .. m_nslots, what its bytes at the
 * header offsets of the job byte (45) and the slot (48-49) select; at the
 * frame's last header beat (which holds both, on a 256- or 512-bit bus)
 * that is the frame's job:
 *   stage A  the job byte against every enabled job's JOB_ID (one-hot; the
 *            table never holds one id twice among the enabled jobs)
 *   stage B  the job's configuration word (grad_agg_cfg.vh: its AGG_*
 *            registers, member table, JOB_ID and slot range), its index, the
 *            memory slot JOB_SLOT_BASE + slot (mod 128) and
 *            min(AGG_SLOTS, JOB_SLOT_COUNT); a byte that names no enabled
 *            job: m_found low, job 0, an all-zero word
 * so the ingress reads the frame's configuration from flip-flops, as it read
 * the one job's registers before.
 */
module grad_agg_job #
(
    // Width of the AXI4-Stream data bus (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of tkeep (one bit per byte)
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of tuser
    parameter USER_WIDTH = 128,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of a configuration word (grad_agg_cfg.vh CF_W; do not override)
    parameter CF_WIDTH = 644
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * Every job's configuration word (grad_agg_cfg.vh) and enable bit
     */
    input  wire [JOBS*CF_WIDTH-1:0] cfg_jobs,
    input  wire [JOBS-1:0]         job_enable,

    /*
     * Frames in
     */
    input  wire [DATA_WIDTH-1:0]   s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]   s_axis_tkeep,
    input  wire                    s_axis_tvalid,
    output wire                    s_axis_tready,
    input  wire                    s_axis_tlast,
    input  wire [USER_WIDTH-1:0]   s_axis_tuser,

    /*
     * Frames out, two clocks later, with the job their bytes select
     */
    output wire [DATA_WIDTH-1:0]   m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]   m_axis_tkeep,
    output wire                    m_axis_tvalid,
    input  wire                    m_axis_tready,
    output wire                    m_axis_tlast,
    output wire [USER_WIDTH-1:0]   m_axis_tuser,
    output wire [JW-1:0]           m_job,
    output wire                    m_found,
    output wire [CF_WIDTH-1:0]     m_cfg,
    output wire [6:0]              m_mslot,
    output wire [6:0]              m_nslots
);

// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"
`include "grad_agg_cfg.vh"
// verilator lint_on UNUSEDPARAM

localparam BYTES = DATA_WIDTH/8;
// the job byte and the slot's low byte within their beat
localparam B_JOB = NRL_OFF_JOB % BYTES;
localparam B_SLOT_LO = (NRL_OFF_SLOT + 1) % BYTES;

// bad parameter check
initial begin
    if (CF_WIDTH != CF_W || JOBS < 1 || JOBS > 8) begin
        $error("Error: JOBS must be 1..8, CF_WIDTH is computed (instance %m)");
        $finish;
    end
    if (NRL_OFF_JOB / BYTES != (NRL_OFF_SLOT + 1) / BYTES || (NRL_OFF_SLOT + 1) / BYTES != 64 / BYTES - 1) begin
        $error("Error: the job byte and the slot must be in the last header beat (instance %m)");
        $finish;
    end
end

integer j;

/*
 * Stage A: the beat and the enabled jobs its job byte names
 */
reg                  a_valid_reg;
reg [DATA_WIDTH-1:0] a_data_reg;
reg [KEEP_WIDTH-1:0] a_keep_reg;
reg                  a_last_reg;
reg [USER_WIDTH-1:0] a_user_reg;
reg [JOBS-1:0]       a_hit_reg;
reg [6:0]            a_slot_reg;

wire [7:0] in_job = s_axis_tdata[8*B_JOB +: 8];
reg  [JOBS-1:0] in_hit;

always @* begin
    for (j = 0; j < JOBS; j = j + 1) begin
        in_hit[j] = job_enable[j] && in_job == cfg_jobs[CF_W*j + CF_JOB_ID +: 8];
    end
end

/*
 * Stage B: the job's configuration, index and slots
 */
reg                  b_valid_reg;
reg [DATA_WIDTH-1:0] b_data_reg;
reg [KEEP_WIDTH-1:0] b_keep_reg;
reg                  b_last_reg;
reg [USER_WIDTH-1:0] b_user_reg;
reg [JW-1:0]         b_job_reg;
reg                  b_found_reg;
reg [CF_W-1:0]       b_cfg_reg;
reg [6:0]            b_mslot_reg;
reg [6:0]            b_nslots_reg;

// both stages move when stage B is empty or taken
wire adv = !b_valid_reg || m_axis_tready;

assign s_axis_tready = adv;

// each job's min(AGG_SLOTS, JOB_SLOT_COUNT), registered (a configuration
// write reaches it a clock later)
reg [JOBS*7-1:0] nslots_reg;

always @(posedge clk) begin
    for (j = 0; j < JOBS; j = j + 1) begin
        nslots_reg[7*j +: 7] <= cfg_jobs[CF_W*j + CF_SLOTS +: 7] < cfg_jobs[CF_W*j + CF_SLOT_COUNT +: 7]
                              ? cfg_jobs[CF_W*j + CF_SLOTS +: 7] : cfg_jobs[CF_W*j + CF_SLOT_COUNT +: 7];
    end
end

// the selected job's values: an AND-OR of the one-hot hit
reg [CF_W-1:0] sel_cfg;
reg [6:0]      sel_base;
reg [6:0]      sel_nslots;
reg [JW-1:0]   sel_job;

always @* begin
    sel_cfg = {CF_W{1'b0}};
    sel_base = 7'd0;
    sel_nslots = 7'd0;
    sel_job = {JW{1'b0}};
    for (j = 0; j < JOBS; j = j + 1) begin
        if (a_hit_reg[j]) begin
            sel_cfg = sel_cfg | cfg_jobs[CF_W*j +: CF_W];
            sel_base = sel_base | cfg_jobs[CF_W*j + CF_SLOT_BASE +: 7];
            sel_nslots = sel_nslots | nslots_reg[7*j +: 7];
            sel_job = sel_job | j[JW-1:0];
        end
    end
end

always @(posedge clk) begin
    if (adv) begin
        a_valid_reg <= s_axis_tvalid;
        a_data_reg <= s_axis_tdata;
        a_keep_reg <= s_axis_tkeep;
        a_last_reg <= s_axis_tlast;
        a_user_reg <= s_axis_tuser;
        a_hit_reg <= in_hit;
        a_slot_reg <= s_axis_tdata[8*B_SLOT_LO +: 7];

        b_valid_reg <= a_valid_reg;
        b_data_reg <= a_data_reg;
        b_keep_reg <= a_keep_reg;
        b_last_reg <= a_last_reg;
        b_user_reg <= a_user_reg;
        b_job_reg <= sel_job;
        b_found_reg <= a_hit_reg != {JOBS{1'b0}};
        b_cfg_reg <= sel_cfg;
        b_mslot_reg <= a_slot_reg + sel_base;
        b_nslots_reg <= sel_nslots;
    end
    if (rst) begin
        a_valid_reg <= 1'b0;
        b_valid_reg <= 1'b0;
    end
end

assign m_axis_tdata = b_data_reg;
assign m_axis_tkeep = b_keep_reg;
assign m_axis_tvalid = b_valid_reg;
assign m_axis_tlast = b_last_reg;
assign m_axis_tuser = b_user_reg;
assign m_job = b_job_reg;
assign m_found = b_found_reg;
assign m_cfg = b_cfg_reg;
assign m_mslot = b_mslot_reg;
assign m_nslots = b_nslots_reg;

endmodule

`resetall
`default_nettype wire
