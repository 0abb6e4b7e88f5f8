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
 * MAC learning table of the netfpga-rl switch (ordinary L2 traffic).
 *
 * hostdrv.model.L2Table is the specification (docs/architecture.md, L2
 * switching). One request per received frame, in arrival order, protocol
 * frames included: req_dst / req_src are bytes 0..5 / 6..11 of the frame as
 * they lie on the bus (byte 0 in bits 7:0), req_port its one-hot source port,
 * req_eth whether the frame holds a whole Ethernet header (14 bytes).
 *
 *   1. lookup: res_ports = the learned port of req_dst minus req_port (0:
 *      filtered, res_drop set), or MAC_PORTS minus req_port (flood) for a
 *      broadcast/multicast or unknown destination or a short frame;
 *   2. learning: a unicast source MAC takes (or keeps) an entry with port
 *      req_port, marked active; a new MAC takes the lowest free entry, else
 *      the entry at the round-robin replacement pointer, which advances;
 *   3. aging: each request counts one frame of the age_frames period
 *      (0: off); the request that ends a period removes the entries not
 *      marked active during it, then clears every mark. age_load (a write of
 *      L2_AGE_FRAMES) restarts the period.
 *
 * The request is registered; the next clock compares it with all entries at
 * once (flip-flops, ENTRIES x 48-bit comparators), presents the result
 * (res_valid, res_ports, res_drop: combinational from registers) and writes
 * the table. A request every clock is taken (line rate: back-to-back frames
 * of one beat), and each request sees every earlier request's learning.
 */
module nrl_l2_learn #
(
    // MAC table entries (NRL_L2_ENTRIES in the switch), 2..256
    parameter ENTRIES = 16
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * Configuration: aging period in frames, load pulse on a write
     */
    input  wire [31:0]            age_frames,
    input  wire                   age_load,

    /*
     * Request: one per received frame
     */
    input  wire                   req_valid,
    input  wire [47:0]            req_dst,
    input  wire [47:0]            req_src,
    input  wire [7:0]             req_port,
    input  wire                   req_eth,

    /*
     * Result: the clock after the request
     */
    output wire                   res_valid,
    output wire [7:0]             res_ports,
    output wire                   res_drop
);

localparam IDX_W = ENTRIES > 1 ? $clog2(ENTRIES) : 1;
localparam PORT_WIDTH = 8;
localparam [31:0] LAST = ENTRIES - 1;

// NRL_MAC_PORTS (flooding), RST_L2_AGE_FRAMES (aging period after reset)
// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"
`include "nrl_regs.vh"
// verilator lint_on UNUSEDPARAM

initial begin
    if (ENTRIES < 2 || ENTRIES > 256) begin
        $error("Error: ENTRIES must be 2..256 (instance %m)");
        $finish;
    end
end

// registered request
reg                  q_valid_reg;
reg [47:0]           q_dst_reg;
reg [47:0]           q_src_reg;
reg [PORT_WIDTH-1:0] q_port_reg;
reg                  q_eth_reg;

// table
reg [47:0]           mac_reg[ENTRIES-1:0];
reg [PORT_WIDTH-1:0] port_reg[ENTRIES-1:0];
reg [ENTRIES-1:0]    valid_reg, valid_next;
reg [ENTRIES-1:0]    active_reg, active_next;
reg [IDX_W-1:0]      victim_reg, victim_next;
reg [31:0]           left_reg, left_next;

// comparisons with every entry
reg [ENTRIES-1:0] dst_hit;
reg [ENTRIES-1:0] src_hit;
reg [PORT_WIDTH-1:0] hit_port;
integer i;

always @* begin
    hit_port = {PORT_WIDTH{1'b0}};
    for (i = 0; i < ENTRIES; i = i + 1) begin
        dst_hit[i] = valid_reg[i] && mac_reg[i] == q_dst_reg;
        src_hit[i] = valid_reg[i] && mac_reg[i] == q_src_reg;
        hit_port = hit_port | (dst_hit[i] ? port_reg[i] : {PORT_WIDTH{1'b0}});
    end
end

// 1. lookup (bit 0 of byte 0 is the group bit)
wire flood = !q_eth_reg || q_dst_reg[0] || dst_hit == {ENTRIES{1'b0}};
wire [PORT_WIDTH-1:0] ports = (flood ? NRL_MAC_PORTS : hit_port) & ~q_port_reg;

assign res_valid = q_valid_reg;
assign res_ports = ports;
assign res_drop = ports == {PORT_WIDTH{1'b0}};

// 2. learning: where the source MAC goes
wire learn = q_valid_reg && q_eth_reg && !q_src_reg[0];
wire src_known = src_hit != {ENTRIES{1'b0}};
wire all_used = &valid_reg;
// lowest free entry, one-hot: ~valid & (valid + 1)
wire [ENTRIES-1:0] first_free = ~valid_reg & (valid_reg + 1'b1);

reg [ENTRIES-1:0] wr_new;   // entry taken by a new MAC
reg [ENTRIES-1:0] wr_any;   // entry written (new MAC or refresh)

always @* begin
    for (i = 0; i < ENTRIES; i = i + 1) begin
        wr_new[i] = learn && !src_known &&
                    (all_used ? victim_reg == i[IDX_W-1:0] : first_free[i]);
    end
    wr_any = wr_new | (learn ? src_hit : {ENTRIES{1'b0}});
end

// 3. aging
wire age_on = age_frames != 32'd0;
wire sweep = q_valid_reg && age_on && left_reg[31:1] == 31'd0;

always @* begin
    victim_next = victim_reg;
    if (learn && !src_known && all_used) begin
        victim_next = victim_reg == LAST[IDX_W-1:0] ? {IDX_W{1'b0}} : victim_reg + 1'b1;
    end

    left_next = left_reg;
    if (age_load) begin
        left_next = age_frames;
    end else if (sweep) begin
        left_next = age_frames;
    end else if (q_valid_reg && age_on) begin
        left_next = left_reg - 1'b1;
    end

    // a sweep keeps the entries marked active, this request's included
    valid_next = (sweep ? valid_reg & active_reg : valid_reg) | wr_any;
    active_next = sweep ? {ENTRIES{1'b0}} : active_reg | wr_any;
end

always @(posedge clk) begin
    q_valid_reg <= req_valid;
    if (req_valid) begin
        q_dst_reg <= req_dst;
        q_src_reg <= req_src;
        q_port_reg <= req_port;
        q_eth_reg <= req_eth;
    end

    for (i = 0; i < ENTRIES; i = i + 1) begin
        if (wr_new[i]) begin
            mac_reg[i] <= q_src_reg;
        end
        if (wr_any[i]) begin
            port_reg[i] <= q_port_reg;
        end
    end

    valid_reg <= valid_next;
    active_reg <= active_next;
    victim_reg <= victim_next;
    left_reg <= left_next;

    if (rst) begin
        q_valid_reg <= 1'b0;
        valid_reg <= {ENTRIES{1'b0}};
        active_reg <= {ENTRIES{1'b0}};
        victim_reg <= {IDX_W{1'b0}};
        left_reg <= RST_L2_AGE_FRAMES;
    end
end

endmodule

`resetall
`default_nettype wire
