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
 * Classifier and output port lookup of the netfpga-rl switch.
 *
 * Takes the single arbitrated stream (as after SUME's input_arbiter) and
 * steers every packet, whole, to one of three outputs:
 *
 *   - m_axis_agg: protocol frames (docs/protocol.md section 1: EtherType
 *     0x0800, IPv4 0x45, protocol 17, UDP destination port == udp_port)
 *     whose opcode (byte 43) is not 3..7, including frames too short to
 *     carry an opcode: the aggregation engine owns their checks;
 *   - m_axis_rpl: protocol frames with opcode 3..7 (replay engine);
 *   - m_axis_l2: everything else, with TUSER[31:24] (destination ports) set
 *     by the learning switch nrl_l2_learn (docs/architecture.md, L2
 *     switching): the learned port of the destination MAC, or the MAC ports
 *     NRL_MAC_PORTS minus the source port TUSER[23:16] (flooding: broadcast,
 *     multicast, unknown destination); a frame whose destination was learned
 *     on its own source port is filtered (consumed, not sent). stat_pass
 *     pulses once per such frame, filtered or not (CNT_PASS).
 *
 * Every frame, protocol frames included, teaches the MAC table: the parser
 * hands each packet's first beat (MAC addresses, source port) to
 * nrl_l2_learn in arrival order, and its answer (two clocks later) waits in
 * a port FIFO beside the decision FIFO.
 *
 * The fields the decision needs end at byte 43: the first beat on a 512-bit
 * bus, the second on a 256-bit bus. Beats enter a 4-entry FIFO at one per
 * clock while a parser watches the input and pushes the decision into a
 * small decision FIFO as soon as it is known (first or second beat, or the
 * last beat of a shorter frame). The read side forwards a beat only when its
 * packet's decision and its learning-switch answer are there (two clocks
 * after its first beat), so a packet waits at most two clocks and
 * back-to-back packets flow at one beat per clock with no bubbles.
 * s_axis_tready depends only on registers. A stalled output blocks the
 * packets behind it (head of line), as in SUME's output_port_lookup.
 */
module nrl_classifier #
(
    // Width of AXI stream data in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of AXI stream tkeep in bits
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of AXI stream tuser in bits (SUME layout, 128)
    parameter USER_WIDTH = 128
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * Configuration
     */
    input  wire [15:0]            udp_port,
    input  wire [31:0]            l2_age_frames,  // L2_AGE_FRAMES
    input  wire                   l2_age_load,    // pulse: L2_AGE_FRAMES written

    /*
     * AXI input (arbitrated switch input)
     */
    input  wire [DATA_WIDTH-1:0]  s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]  s_axis_tkeep,
    input  wire                   s_axis_tvalid,
    output wire                   s_axis_tready,
    input  wire                   s_axis_tlast,
    input  wire [USER_WIDTH-1:0]  s_axis_tuser,

    /*
     * AXI output: ordinary L2 traffic (flooded)
     */
    output wire [DATA_WIDTH-1:0]  m_axis_l2_tdata,
    output wire [KEEP_WIDTH-1:0]  m_axis_l2_tkeep,
    output wire                   m_axis_l2_tvalid,
    input  wire                   m_axis_l2_tready,
    output wire                   m_axis_l2_tlast,
    output wire [USER_WIDTH-1:0]  m_axis_l2_tuser,

    /*
     * AXI output: protocol frames for the aggregation engine
     */
    output wire [DATA_WIDTH-1:0]  m_axis_agg_tdata,
    output wire [KEEP_WIDTH-1:0]  m_axis_agg_tkeep,
    output wire                   m_axis_agg_tvalid,
    input  wire                   m_axis_agg_tready,
    output wire                   m_axis_agg_tlast,
    output wire [USER_WIDTH-1:0]  m_axis_agg_tuser,

    /*
     * AXI output: protocol frames for the replay engine (opcodes 3..7)
     */
    output wire [DATA_WIDTH-1:0]  m_axis_rpl_tdata,
    output wire [KEEP_WIDTH-1:0]  m_axis_rpl_tkeep,
    output wire                   m_axis_rpl_tvalid,
    input  wire                   m_axis_rpl_tready,
    output wire                   m_axis_rpl_tlast,
    output wire [USER_WIDTH-1:0]  m_axis_rpl_tuser,

    /*
     * Status
     */
    output wire                   stat_pass
);

// beats that hold bytes 0..43 (header fields the decision needs)
localparam HDR_BEATS = DATA_WIDTH >= 512 ? 1 : 2;
// byte offset of the beat holding the UDP port and the opcode
localparam PORT_BEAT_BASE = HDR_BEATS == 2 ? KEEP_WIDTH : 0;

localparam FIFO_ADDR = 2;
localparam FIFO_DEPTH = 2**FIFO_ADDR;

// output select, one-hot: bit 0 L2, bit 1 aggregation engine, bit 2 replay engine
localparam [2:0] SEL_L2 = 3'b001, SEL_AGG = 3'b010, SEL_RPL = 3'b100;

// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"
// verilator lint_on UNUSEDPARAM

// frame byte offsets the classifier reads besides the protocol header's
localparam OFF_ETHERTYPE = NRL_ETH_LEN - 2;      // EtherType, last field of the Ethernet header
localparam OFF_IP_PROTO = NRL_IP_OFFSET + 9;     // IPv4 protocol
localparam OFF_UDP_DPORT = NRL_UDP_OFFSET + 2;   // UDP destination port

localparam ENTRY_WIDTH = DATA_WIDTH + KEEP_WIDTH + 1 + USER_WIDTH;

// bus width assertions
initial begin
    if (DATA_WIDTH != 256 && DATA_WIDTH != 512) begin
        $error("Error: DATA_WIDTH must be 256 or 512 (instance %m)");
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
end

// ---------------------------------------------------------------------------
// input side: beat FIFO and header parser

reg [ENTRY_WIDTH-1:0] mem[FIFO_DEPTH-1:0];
reg [FIFO_ADDR:0] wr_ptr_reg, wr_ptr_next;
reg [FIFO_ADDR:0] rd_ptr_reg, rd_ptr_next;

// decision FIFO: select; one entry per packet in the beat FIFO at most, so
// it never overflows
reg [2:0] dec_mem[FIFO_DEPTH-1:0];
reg [FIFO_ADDR:0] dec_wr_ptr_reg, dec_wr_ptr_next;
reg [FIFO_ADDR:0] dec_rd_ptr_reg, dec_rd_ptr_next;

// parser state: next input beat is the first / second of its packet
reg in_first_reg, in_first_next;
reg in_second_reg, in_second_next;
// port FIFO: the learning switch's answer {filtered, L2 destination ports},
// one entry per packet (a request per first beat), as the decision FIFO
reg [8:0] port_mem[FIFO_DEPTH-1:0];
reg [FIFO_ADDR:0] port_wr_ptr_reg;
reg [FIFO_ADDR:0] port_rd_ptr_reg, port_rd_ptr_next;

// first-beat results kept for the second beat (256-bit bus)
reg l3_ok_reg, l3_ok_next;

wire full = wr_ptr_reg == (rd_ptr_reg ^ {1'b1, {FIFO_ADDR{1'b0}}});
wire empty = wr_ptr_reg == rd_ptr_reg;
wire dec_empty = dec_wr_ptr_reg == dec_rd_ptr_reg;
wire port_empty = port_wr_ptr_reg == port_rd_ptr_reg;

assign s_axis_tready = !full;

wire in_fire = s_axis_tvalid && !full;

// first beat: Ethernet II / IPv4 without options / UDP
wire l3_ok_now = {s_axis_tdata[OFF_ETHERTYPE*8 +: 8], s_axis_tdata[(OFF_ETHERTYPE+1)*8 +: 8]} == NRL_ETHERTYPE_IPV4 &&
                 s_axis_tdata[NRL_IP_OFFSET*8 +: 8] == NRL_IPV4_VER_IHL &&
                 s_axis_tdata[OFF_IP_PROTO*8 +: 8] == NRL_IP_PROTO_UDP;
// beat holding bytes 36..43: UDP destination port (and >= 42 bytes present)
wire udp_ok_now = s_axis_tkeep[NRL_HEADER_OFFSET-1-PORT_BEAT_BASE] &&
                  {s_axis_tdata[(OFF_UDP_DPORT-PORT_BEAT_BASE)*8 +: 8], s_axis_tdata[(OFF_UDP_DPORT+1-PORT_BEAT_BASE)*8 +: 8]} == udp_port;
// opcode, 0 (not a replay opcode) when the frame ends before byte 43
wire [7:0] opcode_now = s_axis_tkeep[NRL_OFF_OPCODE-PORT_BEAT_BASE] ? s_axis_tdata[(NRL_OFF_OPCODE-PORT_BEAT_BASE)*8 +: 8] : 8'd0;
wire rpl_op_now = opcode_now >= NRL_OP_PUSH && opcode_now <= NRL_OP_UPDATE;

// the learning switch: one request per packet, on its first beat
wire       l2_res_valid;
wire [7:0] l2_res_ports;
wire       l2_res_drop;

nrl_l2_learn #(
    .ENTRIES(NRL_L2_ENTRIES)
)
l2_learn_inst (
    .clk(clk),
    .rst(rst),
    .age_frames(l2_age_frames),
    .age_load(l2_age_load),
    .req_valid(in_fire && in_first_reg),
    .req_dst(s_axis_tdata[47:0]),
    .req_src(s_axis_tdata[95:48]),
    .req_port(s_axis_tuser[23:16]),
    .req_eth(s_axis_tkeep[NRL_ETH_LEN-1]),
    .res_valid(l2_res_valid),
    .res_ports(l2_res_ports),
    .res_drop(l2_res_drop)
);

reg dec_push;
reg [2:0] dec_push_data;

always @* begin
    wr_ptr_next = wr_ptr_reg;
    dec_wr_ptr_next = dec_wr_ptr_reg;
    in_first_next = in_first_reg;
    in_second_next = in_second_reg;
    l3_ok_next = l3_ok_reg;

    dec_push = 1'b0;
    dec_push_data = SEL_L2;

    if (in_fire) begin
        wr_ptr_next = wr_ptr_reg + 1;
        in_first_next = s_axis_tlast;
        in_second_next = 1'b0;

        if (in_first_reg) begin
            if (HDR_BEATS == 1) begin
                // everything is in the first beat
                dec_push = 1'b1;
                if (l3_ok_now && udp_ok_now) begin
                    dec_push_data = rpl_op_now ? SEL_RPL : SEL_AGG;
                end else begin
                    dec_push_data = SEL_L2;
                end
            end else if (s_axis_tlast) begin
                // one-beat frame: shorter than a protocol frame
                dec_push = 1'b1;
                dec_push_data = SEL_L2;
            end else begin
                l3_ok_next = l3_ok_now;
                in_second_next = 1'b1;
            end
        end else if (in_second_reg) begin
            dec_push = 1'b1;
            if (l3_ok_reg && udp_ok_now) begin
                dec_push_data = rpl_op_now ? SEL_RPL : SEL_AGG;
            end else begin
                dec_push_data = SEL_L2;
            end
        end
    end

    if (dec_push) begin
        dec_wr_ptr_next = dec_wr_ptr_reg + 1;
    end
end

always @(posedge clk) begin
    if (in_fire) begin
        mem[wr_ptr_reg[FIFO_ADDR-1:0]] <= {s_axis_tdata, s_axis_tkeep, s_axis_tlast, s_axis_tuser};
    end
    if (dec_push) begin
        dec_mem[dec_wr_ptr_reg[FIFO_ADDR-1:0]] <= dec_push_data;
    end
    if (l2_res_valid) begin
        port_mem[port_wr_ptr_reg[FIFO_ADDR-1:0]] <= {l2_res_drop, l2_res_ports};
    end
end

// ---------------------------------------------------------------------------
// output side: steer the head beat to its packet's output register

wire [DATA_WIDTH-1:0] head_tdata;
wire [KEEP_WIDTH-1:0] head_tkeep;
wire                  head_tlast;
wire [USER_WIDTH-1:0] head_tuser;

assign {head_tdata, head_tkeep, head_tlast, head_tuser} = mem[rd_ptr_reg[FIFO_ADDR-1:0]];

wire [2:0] head_dec = dec_mem[dec_rd_ptr_reg[FIFO_ADDR-1:0]];
wire [8:0] head_port = port_mem[port_rd_ptr_reg[FIFO_ADDR-1:0]];
wire [7:0] head_ports = head_port[7:0];
// a filtered L2 packet goes to no output: its beats are consumed
wire [2:0] head_sel = {head_dec[2:1], head_dec[0] && !head_port[8]};

reg [DATA_WIDTH-1:0] m_axis_l2_tdata_reg,  m_axis_agg_tdata_reg,  m_axis_rpl_tdata_reg;
reg [KEEP_WIDTH-1:0] m_axis_l2_tkeep_reg,  m_axis_agg_tkeep_reg,  m_axis_rpl_tkeep_reg;
reg                  m_axis_l2_tlast_reg,  m_axis_agg_tlast_reg,  m_axis_rpl_tlast_reg;
reg [USER_WIDTH-1:0] m_axis_l2_tuser_reg,  m_axis_agg_tuser_reg,  m_axis_rpl_tuser_reg;
reg [2:0] m_axis_tvalid_reg, m_axis_tvalid_next;

reg stat_pass_reg, stat_pass_next;

wire [2:0] m_axis_tready_int = {m_axis_rpl_tready, m_axis_agg_tready, m_axis_l2_tready};
// each output register takes a beat when it is empty or being emptied
wire [2:0] out_free = ~m_axis_tvalid_reg | m_axis_tready_int;

wire head_avail = !empty && !dec_empty && !port_empty;
wire pop = head_avail && (out_free & head_sel) == head_sel;

always @* begin
    rd_ptr_next = rd_ptr_reg;
    dec_rd_ptr_next = dec_rd_ptr_reg;
    port_rd_ptr_next = port_rd_ptr_reg;
    m_axis_tvalid_next = m_axis_tvalid_reg & ~m_axis_tready_int;
    stat_pass_next = 1'b0;

    if (pop) begin
        rd_ptr_next = rd_ptr_reg + 1;
        m_axis_tvalid_next = m_axis_tvalid_next | head_sel;
        if (head_tlast) begin
            dec_rd_ptr_next = dec_rd_ptr_reg + 1;
            port_rd_ptr_next = port_rd_ptr_reg + 1;
            stat_pass_next = head_dec[0];
        end
    end
end

always @(posedge clk) begin
    wr_ptr_reg <= wr_ptr_next;
    rd_ptr_reg <= rd_ptr_next;
    dec_wr_ptr_reg <= dec_wr_ptr_next;
    dec_rd_ptr_reg <= dec_rd_ptr_next;
    in_first_reg <= in_first_next;
    in_second_reg <= in_second_next;
    l3_ok_reg <= l3_ok_next;
    port_rd_ptr_reg <= port_rd_ptr_next;
    if (l2_res_valid) begin
        port_wr_ptr_reg <= port_wr_ptr_reg + 1;
    end
    m_axis_tvalid_reg <= m_axis_tvalid_next;
    stat_pass_reg <= stat_pass_next;

    if (pop && head_sel[0]) begin
        m_axis_l2_tdata_reg <= head_tdata;
        m_axis_l2_tkeep_reg <= head_tkeep;
        m_axis_l2_tlast_reg <= head_tlast;
        m_axis_l2_tuser_reg <= {head_tuser[USER_WIDTH-1:32], head_ports, head_tuser[23:0]};
    end
    if (pop && head_sel[1]) begin
        m_axis_agg_tdata_reg <= head_tdata;
        m_axis_agg_tkeep_reg <= head_tkeep;
        m_axis_agg_tlast_reg <= head_tlast;
        m_axis_agg_tuser_reg <= head_tuser;
    end
    if (pop && head_sel[2]) begin
        m_axis_rpl_tdata_reg <= head_tdata;
        m_axis_rpl_tkeep_reg <= head_tkeep;
        m_axis_rpl_tlast_reg <= head_tlast;
        m_axis_rpl_tuser_reg <= head_tuser;
    end

    if (rst) begin
        wr_ptr_reg <= {FIFO_ADDR+1{1'b0}};
        rd_ptr_reg <= {FIFO_ADDR+1{1'b0}};
        dec_wr_ptr_reg <= {FIFO_ADDR+1{1'b0}};
        dec_rd_ptr_reg <= {FIFO_ADDR+1{1'b0}};
        port_wr_ptr_reg <= {FIFO_ADDR+1{1'b0}};
        port_rd_ptr_reg <= {FIFO_ADDR+1{1'b0}};
        in_first_reg <= 1'b1;
        in_second_reg <= 1'b0;
        m_axis_tvalid_reg <= 3'b000;
        stat_pass_reg <= 1'b0;
    end
end

assign m_axis_l2_tdata = m_axis_l2_tdata_reg;
assign m_axis_l2_tkeep = m_axis_l2_tkeep_reg;
assign m_axis_l2_tlast = m_axis_l2_tlast_reg;
assign m_axis_l2_tuser = m_axis_l2_tuser_reg;
assign m_axis_l2_tvalid = m_axis_tvalid_reg[0];

assign m_axis_agg_tdata = m_axis_agg_tdata_reg;
assign m_axis_agg_tkeep = m_axis_agg_tkeep_reg;
assign m_axis_agg_tlast = m_axis_agg_tlast_reg;
assign m_axis_agg_tuser = m_axis_agg_tuser_reg;
assign m_axis_agg_tvalid = m_axis_tvalid_reg[1];

assign m_axis_rpl_tdata = m_axis_rpl_tdata_reg;
assign m_axis_rpl_tkeep = m_axis_rpl_tkeep_reg;
assign m_axis_rpl_tlast = m_axis_rpl_tlast_reg;
assign m_axis_rpl_tuser = m_axis_rpl_tuser_reg;
assign m_axis_rpl_tvalid = m_axis_tvalid_reg[2];

assign stat_pass = stat_pass_reg;

endmodule

`resetall
`default_nettype wire
