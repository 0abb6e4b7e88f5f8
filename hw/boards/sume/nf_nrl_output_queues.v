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
 * Output queues for the NetFPGA SUME wrapper of the netfpga-rl switch
 *
 * The role of SUME's output_queues core: one packet FIFO (block RAM) per
 * output, filled from the single switch output according to the
 * destination bitmap TUSER[31:24]. Queue i < 4 is MAC port i (bit 2i);
 * queue 4 is the DMA queue (any odd bit), as in SUME, and the host driver
 * tells the four DMA interfaces apart by the bitmap carried along in TUSER.
 * A multicast packet is written into all its queues at once.
 *
 * Like SUME's core this never backpressures the switch (s_axis_tready is
 * 1 out of reset): at a packet's first beat each destination queue admits it
 * only if it has room for a packet of MAX_PKT_BEATS beats; otherwise that
 * queue drops the packet and counts it (drop_count). A queue shows a packet
 * to its output only after its last beat is stored (store and forward), so
 * the MACs never see an underrun inside a frame.
 */
module nf_nrl_output_queues #
(
    // Number of output queues (4 MAC ports + DMA)
    parameter NUM_QUEUES = 5,
    // Width of AXI stream data in bits
    parameter DATA_WIDTH = 256,
    // Width of AXI stream tkeep in bits
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of AXI stream tuser in bits (SUME layout)
    parameter USER_WIDTH = 128,
    // log2 of the depth of each queue in beats
    parameter QUEUE_ADDR_WIDTH = 9,
    // Largest packet in beats (1518 bytes rounded up, plus margin)
    parameter MAX_PKT_BEATS = 2048*8/DATA_WIDTH
)
(
    input  wire                             clk,
    input  wire                             rst,

    /*
     * AXI input (switch output)
     */
    input  wire [DATA_WIDTH-1:0]            s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]            s_axis_tkeep,
    input  wire                             s_axis_tvalid,
    output wire                             s_axis_tready,
    input  wire                             s_axis_tlast,
    input  wire [USER_WIDTH-1:0]            s_axis_tuser,

    /*
     * AXI outputs (queue i in bits [i*WIDTH +: WIDTH])
     */
    output wire [NUM_QUEUES*DATA_WIDTH-1:0] m_axis_tdata,
    output wire [NUM_QUEUES*KEEP_WIDTH-1:0] m_axis_tkeep,
    output wire [NUM_QUEUES-1:0]            m_axis_tvalid,
    input  wire [NUM_QUEUES-1:0]            m_axis_tready,
    output wire [NUM_QUEUES-1:0]            m_axis_tlast,
    output wire [NUM_QUEUES*USER_WIDTH-1:0] m_axis_tuser,

    /*
     * Status: packets dropped per queue (wrapping)
     */
    output wire [NUM_QUEUES*32-1:0]         drop_count
);

localparam DEPTH = 2**QUEUE_ADDR_WIDTH;
localparam ENTRY_WIDTH = DATA_WIDTH + KEEP_WIDTH + 1 + USER_WIDTH;
localparam integer ROOM_INT = DEPTH - MAX_PKT_BEATS;
localparam [QUEUE_ADDR_WIDTH:0] ROOM = ROOM_INT[QUEUE_ADDR_WIDTH:0];

// bus width assertions
initial begin
    if (NUM_QUEUES != 5) begin
        $error("Error: NUM_QUEUES must be 5, the SUME port layout (instance %m)");
        $finish;
    end

    if (KEEP_WIDTH * 8 != DATA_WIDTH) begin
        $error("Error: AXI stream interface requires byte (8-bit) granularity (instance %m)");
        $finish;
    end

    if (USER_WIDTH < 32) begin
        $error("Error: USER_WIDTH must hold the SUME port fields [31:16] (instance %m)");
        $finish;
    end

    if (MAX_PKT_BEATS * 2 > DEPTH) begin
        $error("Error: QUEUE_ADDR_WIDTH too small for two packets of MAX_PKT_BEATS (instance %m)");
        $finish;
    end
end

// queue select from the destination bitmap (SUME output_queues mapping)
wire [7:0] dst = s_axis_tuser[31:24];
wire [NUM_QUEUES-1:0] dst_queues = {dst[1] | dst[3] | dst[5] | dst[7], dst[6], dst[4], dst[2], dst[0]};

reg first_reg;

assign s_axis_tready = !rst;

wire in_fire = s_axis_tvalid && s_axis_tready;

genvar n;

generate

for (n = 0; n < NUM_QUEUES; n = n + 1) begin : queue

    reg [ENTRY_WIDTH-1:0] mem[DEPTH-1:0];

    reg [QUEUE_ADDR_WIDTH:0] wr_ptr_reg;
    reg [QUEUE_ADDR_WIDTH:0] wr_ptr_commit_reg;
    reg [QUEUE_ADDR_WIDTH:0] rd_ptr_reg;
    reg [31:0] drop_count_reg;
    // the packet being written was admitted to this queue
    reg active_reg;

    reg [ENTRY_WIDTH-1:0] out_reg;
    reg out_valid_reg;

    // room for a whole packet, counted against the committed-or-not write pointer
    wire [QUEUE_ADDR_WIDTH:0] used = wr_ptr_reg - rd_ptr_reg;
    wire has_room = used <= ROOM;
    // this beat goes into this queue: admitted at the first beat, kept to the last
    wire admit = first_reg ? (dst_queues[n] && has_room) : active_reg;
    wire wr = in_fire && admit;

    wire empty = wr_ptr_commit_reg == rd_ptr_reg;
    wire rd = !empty && (!out_valid_reg || m_axis_tready[n]);

    always @(posedge clk) begin
        if (wr) begin
            mem[wr_ptr_reg[QUEUE_ADDR_WIDTH-1:0]] <= {s_axis_tdata, s_axis_tkeep, s_axis_tlast, s_axis_tuser};
            wr_ptr_reg <= wr_ptr_reg + 1;
            if (s_axis_tlast) begin
                wr_ptr_commit_reg <= wr_ptr_reg + 1;
            end
        end

        if (in_fire) begin
            active_reg <= admit && !s_axis_tlast;
        end

        if (in_fire && first_reg && dst_queues[n] && !has_room) begin
            drop_count_reg <= drop_count_reg + 1;
        end

        // registered block RAM read straight into the output register
        if (rd) begin
            out_reg <= mem[rd_ptr_reg[QUEUE_ADDR_WIDTH-1:0]];
            rd_ptr_reg <= rd_ptr_reg + 1;
            out_valid_reg <= 1'b1;
        end else if (m_axis_tready[n]) begin
            out_valid_reg <= 1'b0;
        end

        if (rst) begin
            wr_ptr_reg <= {QUEUE_ADDR_WIDTH+1{1'b0}};
            wr_ptr_commit_reg <= {QUEUE_ADDR_WIDTH+1{1'b0}};
            rd_ptr_reg <= {QUEUE_ADDR_WIDTH+1{1'b0}};
            drop_count_reg <= 32'd0;
            active_reg <= 1'b0;
            out_valid_reg <= 1'b0;
        end
    end

    assign {m_axis_tdata[n*DATA_WIDTH +: DATA_WIDTH], m_axis_tkeep[n*KEEP_WIDTH +: KEEP_WIDTH],
            m_axis_tlast[n], m_axis_tuser[n*USER_WIDTH +: USER_WIDTH]} = out_reg;
    assign m_axis_tvalid[n] = out_valid_reg;
    assign drop_count[n*32 +: 32] = drop_count_reg;

end

endgenerate

always @(posedge clk) begin
    if (in_fire) begin
        first_reg <= s_axis_tlast;
    end

    if (rst) begin
        first_reg <= 1'b1;
    end
end

endmodule

`resetall
`default_nettype wire
