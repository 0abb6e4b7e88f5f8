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
 * hostdrv.switch.reference.L2Table is the specification (docs/architecture.md, L2
 * switching). One request per received frame, in arrival order, protocol
 * frames included: req_dst / req_src are bytes 0..5 / 6..11 of the frame as
 * they lie on the bus (byte 0 in bits 7:0), req_port its one-hot source port,
 * req_eth whether the frame holds a whole Ethernet header (14 bytes).
 *
 *   1. lookup: res_ports = the learned port of req_dst minus req_port (0:
 *      filtered, res_drop set), or MAC_PORTS minus req_port (flood) for a
 *      broadcast/multicast or unknown destination or a short frame;
 *   2. learning: a unicast source MAC takes (or keeps) an entry with port
 *      req_port, marked active; a new MAC takes the entry at the replacement
 *      pointer, which advances (round robin, the reference's policy);
 *   3. aging: each request counts one frame of the age_frames period
 *      (0: off); the request that ends a period removes the entries not
 *      marked active during it, then clears every mark. age_load (a write of
 *      L2_AGE_FRAMES) restarts the period.
 *
 * Two steps, a request every clock (line rate: back-to-back frames of one
 * beat), each request seeing every earlier request's learning:
 *
 *   A (the request's clock): its destination and source MAC are compared
 *     with every entry's MAC (flip-flops, 2 x ENTRIES 48-bit comparators)
 *     and with the source MAC of the request in step B, which may be
 *     writing a new MAC into an entry at this very clock; all registered.
 *   B (the next clock): the hit vectors are corrected for that write (the
 *     entry step B wrote takes the registered comparison with its MAC) and
 *     masked with the entries valid now (a sweep); the answer (res_valid,
 *     res_ports, res_drop) is presented, combinational from registers, and
 *     the learning and the aging update the table at the clock's end.
 *
 * The aging countdown is two 16-bit halves decremented in parallel, so no
 * carry chain is longer than four CARRY4.
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

// step B registers: the request and its step A comparisons
reg                  q_valid_reg;
reg [47:0]           q_src_reg;
reg [PORT_WIDTH-1:0] q_port_reg;
reg                  q_eth_reg;
reg                  q_dst_group_reg;
reg [ENTRIES-1:0]    q_dst_hit_reg;     // MAC compare with the table of step A's clock
reg [ENTRIES-1:0]    q_src_hit_reg;
reg                  q_same_dst_reg;    // destination == source MAC of the request ahead
reg                  q_same_src_reg;    // source == source MAC of the request ahead
reg [ENTRIES-1:0]    q_prev_new_reg;    // entry the request ahead wrote a new MAC into

// table
reg [47:0]           mac_reg[ENTRIES-1:0];
reg [PORT_WIDTH-1:0] port_reg[ENTRIES-1:0];
reg [ENTRIES-1:0]    valid_reg, valid_next;
reg [ENTRIES-1:0]    active_reg, active_next;
reg [IDX_W-1:0]      victim_reg, victim_next;
// frames left in the aging period, as two 16-bit halves
reg [15:0]           left_lo_reg, left_lo_next;
reg [15:0]           left_hi_reg, left_hi_next;

integer i;

// ---------------------------------------------------------------------------
// step A: compare the request with every entry

reg [ENTRIES-1:0] a_dst_hit;
reg [ENTRIES-1:0] a_src_hit;

always @* begin
    for (i = 0; i < ENTRIES; i = i + 1) begin
        a_dst_hit[i] = mac_reg[i] == req_dst;
        a_src_hit[i] = mac_reg[i] == req_src;
    end
end

// ---------------------------------------------------------------------------
// step B: corrected hit vectors

reg [ENTRIES-1:0] dst_hit;
reg [ENTRIES-1:0] src_hit;
reg [ENTRIES-1:0] own_port;   // entry i's port minus the source port is empty
reg [PORT_WIDTH-1:0] hit_port;

always @* begin
    hit_port = {PORT_WIDTH{1'b0}};
    for (i = 0; i < ENTRIES; i = i + 1) begin
        dst_hit[i] = valid_reg[i] && (q_prev_new_reg[i] ? q_same_dst_reg : q_dst_hit_reg[i]);
        src_hit[i] = valid_reg[i] && (q_prev_new_reg[i] ? q_same_src_reg : q_src_hit_reg[i]);
        own_port[i] = (port_reg[i] & ~q_port_reg) == {PORT_WIDTH{1'b0}};
        hit_port = hit_port | (dst_hit[i] ? port_reg[i] : {PORT_WIDTH{1'b0}});
    end
end

// 1. lookup: a learned MAC is in one entry at most
wire dst_known = dst_hit != {ENTRIES{1'b0}};
wire flood = !q_eth_reg || q_dst_group_reg || !dst_known;

assign res_valid = q_valid_reg;
assign res_ports = (flood ? NRL_MAC_PORTS : hit_port) & ~q_port_reg;
assign res_drop = !q_dst_group_reg && q_eth_reg && (dst_hit & own_port) != {ENTRIES{1'b0}};

// 2. learning (bit 0 of byte 6 is the source's group bit)
wire learn = q_valid_reg && q_eth_reg && !q_src_reg[0];
// the entry step B wrote last clock is valid and holds that request's source
wire src_known = (valid_reg & ~q_prev_new_reg & q_src_hit_reg) != {ENTRIES{1'b0}} ||
                 (q_same_src_reg && q_prev_new_reg != {ENTRIES{1'b0}});

reg [ENTRIES-1:0] wr_new;      // entry taken by a new MAC
reg [ENTRIES-1:0] wr_any;      // entry written (new MAC or refresh)

always @* begin
    for (i = 0; i < ENTRIES; i = i + 1) begin
        wr_new[i] = learn && !src_known && victim_reg == i[IDX_W-1:0];
    end
    wr_any = wr_new | (learn ? src_hit : {ENTRIES{1'b0}});
end

// 3. aging
wire age_on = age_frames != 32'd0;
wire last_frame = left_hi_reg == 16'd0 && left_lo_reg[15:1] == 15'd0;  // left <= 1
wire sweep = q_valid_reg && age_on && last_frame;

always @* begin
    victim_next = victim_reg;
    if (learn && !src_known) begin
        victim_next = victim_reg == LAST[IDX_W-1:0] ? {IDX_W{1'b0}} : victim_reg + 1'b1;
    end

    left_lo_next = left_lo_reg;
    left_hi_next = left_hi_reg;
    if (age_load || sweep) begin
        {left_hi_next, left_lo_next} = age_frames;
    end else if (q_valid_reg && age_on) begin
        left_lo_next = left_lo_reg - 1'b1;
        if (left_lo_reg == 16'd0) begin
            left_hi_next = left_hi_reg - 1'b1;
        end
    end

    // a sweep keeps the entries marked active, this request's included
    valid_next = (sweep ? valid_reg & active_reg : valid_reg) | wr_any;
    active_next = sweep ? {ENTRIES{1'b0}} : active_reg | wr_any;
end

always @(posedge clk) begin
    q_valid_reg <= req_valid;
    if (req_valid) begin
        q_src_reg <= req_src;
        q_port_reg <= req_port;
        q_eth_reg <= req_eth;
        q_dst_group_reg <= req_dst[0];
        q_dst_hit_reg <= a_dst_hit;
        q_src_hit_reg <= a_src_hit;
        q_same_dst_reg <= req_dst == q_src_reg;
        q_same_src_reg <= req_src == q_src_reg;
        q_prev_new_reg <= wr_new;
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
    left_lo_reg <= left_lo_next;
    left_hi_reg <= left_hi_next;

    if (rst) begin
        q_valid_reg <= 1'b0;
        valid_reg <= {ENTRIES{1'b0}};
        active_reg <= {ENTRIES{1'b0}};
        victim_reg <= {IDX_W{1'b0}};
        {left_hi_reg, left_lo_reg} <= RST_L2_AGE_FRAMES;
    end
end

endmodule

`resetall
`default_nettype wire
