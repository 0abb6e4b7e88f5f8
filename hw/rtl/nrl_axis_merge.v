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
 * AXI4-Stream merge: packet-granular round-robin arbiter of S_COUNT streams
 *
 * Forwards whole packets from S_COUNT inputs onto one output. When no packet
 * is in progress the arbiter picks, in the same clock, the first input with
 * tvalid after the one served last (round robin), and holds the grant until
 * that packet's tlast beat has been transferred, so packets never
 * interleave and back-to-back packets leave with no idle clock between
 * them. The output is registered through a skid buffer (nrl_axis_skid), so
 * m_axis_tready reaches no input combinationally.
 */
module nrl_axis_merge #
(
    // Number of input streams
    parameter S_COUNT = 3,
    // Width of AXI stream data in bits
    parameter DATA_WIDTH = 256,
    // Width of AXI stream tkeep in bits
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of AXI stream tuser in bits
    parameter USER_WIDTH = 128
)
(
    input  wire                           clk,
    input  wire                           rst,

    /*
     * AXI inputs (stream i in bits [i*WIDTH +: WIDTH])
     */
    input  wire [S_COUNT*DATA_WIDTH-1:0]  s_axis_tdata,
    input  wire [S_COUNT*KEEP_WIDTH-1:0]  s_axis_tkeep,
    input  wire [S_COUNT-1:0]             s_axis_tvalid,
    output wire [S_COUNT-1:0]             s_axis_tready,
    input  wire [S_COUNT-1:0]             s_axis_tlast,
    input  wire [S_COUNT*USER_WIDTH-1:0]  s_axis_tuser,

    /*
     * AXI output
     */
    output wire [DATA_WIDTH-1:0]          m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]          m_axis_tkeep,
    output wire                           m_axis_tvalid,
    input  wire                           m_axis_tready,
    output wire                           m_axis_tlast,
    output wire [USER_WIDTH-1:0]          m_axis_tuser
);

localparam CL_S_COUNT = S_COUNT > 1 ? $clog2(S_COUNT) : 1;
localparam [CL_S_COUNT:0] S_COUNT_W = S_COUNT;
localparam [CL_S_COUNT-1:0] LAST_INIT = S_COUNT - 1;

// bus width assertions
initial begin
    if (S_COUNT < 2) begin
        $error("Error: S_COUNT must be at least 2 (instance %m)");
        $finish;
    end

    if (KEEP_WIDTH * 8 != DATA_WIDTH) begin
        $error("Error: AXI stream interface requires byte (8-bit) granularity (instance %m)");
        $finish;
    end
end

// arbiter state: a packet is in progress from sel_reg; last_reg was served last
reg active_reg, active_next;
reg [CL_S_COUNT-1:0] sel_reg, sel_next;
reg [CL_S_COUNT-1:0] last_reg, last_next;

// internal datapath into the output skid buffer
reg  [DATA_WIDTH-1:0] m_axis_tdata_int;
reg  [KEEP_WIDTH-1:0] m_axis_tkeep_int;
reg                   m_axis_tvalid_int;
wire                  m_axis_tready_int;
reg                   m_axis_tlast_int;
reg  [USER_WIDTH-1:0] m_axis_tuser_int;

// round robin: first valid input after last_reg
reg [CL_S_COUNT-1:0] arb_sel;
reg arb_found;
reg [CL_S_COUNT:0] arb_idx;
integer k;

always @* begin
    arb_sel = {CL_S_COUNT{1'b0}};
    arb_found = 1'b0;
    for (k = 1; k <= S_COUNT; k = k + 1) begin
        arb_idx = {1'b0, last_reg} + k[CL_S_COUNT:0];
        if (arb_idx >= S_COUNT_W) begin
            arb_idx = arb_idx - S_COUNT_W;
        end
        if (!arb_found && s_axis_tvalid[arb_idx[CL_S_COUNT-1:0]]) begin
            arb_found = 1'b1;
            arb_sel = arb_idx[CL_S_COUNT-1:0];
        end
    end
end

wire [CL_S_COUNT-1:0] cur_sel = active_reg ? sel_reg : arb_sel;
wire cur_valid = active_reg ? s_axis_tvalid[sel_reg] : arb_found;
wire xfer = cur_valid && m_axis_tready_int;

assign s_axis_tready = {{S_COUNT-1{1'b0}}, xfer} << cur_sel;

always @* begin
    active_next = active_reg;
    sel_next = sel_reg;
    last_next = last_reg;

    m_axis_tdata_int = s_axis_tdata[cur_sel*DATA_WIDTH +: DATA_WIDTH];
    m_axis_tkeep_int = s_axis_tkeep[cur_sel*KEEP_WIDTH +: KEEP_WIDTH];
    m_axis_tvalid_int = xfer;
    m_axis_tlast_int = s_axis_tlast[cur_sel];
    m_axis_tuser_int = s_axis_tuser[cur_sel*USER_WIDTH +: USER_WIDTH];

    if (xfer) begin
        sel_next = cur_sel;
        last_next = cur_sel;
        active_next = !s_axis_tlast[cur_sel];
    end
end

always @(posedge clk) begin
    active_reg <= active_next;
    sel_reg <= sel_next;
    last_reg <= last_next;

    if (rst) begin
        active_reg <= 1'b0;
        sel_reg <= {CL_S_COUNT{1'b0}};
        last_reg <= LAST_INIT;
    end
end

// output register slice: the merged beat is offered only in a clock the
// slice is ready (xfer), so the slice's registered s_axis_tready is the
// arbiter's ready and m_axis_tready reaches no input combinationally
nrl_axis_skid #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH)
)
out_skid_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata(m_axis_tdata_int),
    .s_axis_tkeep(m_axis_tkeep_int),
    .s_axis_tvalid(m_axis_tvalid_int),
    .s_axis_tready(m_axis_tready_int),
    .s_axis_tlast(m_axis_tlast_int),
    .s_axis_tuser(m_axis_tuser_int),
    .m_axis_tdata(m_axis_tdata),
    .m_axis_tkeep(m_axis_tkeep),
    .m_axis_tvalid(m_axis_tvalid),
    .m_axis_tready(m_axis_tready),
    .m_axis_tlast(m_axis_tlast),
    .m_axis_tuser(m_axis_tuser)
);

endmodule

`resetall
`default_nettype wire
