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
 * Header checks shared by the engines (docs/protocol.md section 6).
 *
 * From the frame length n (TUSER[15:0]) and bytes 0..63 of a protocol frame
 * (the classifier has checked EtherType, IPv4 version/IHL, protocol and UDP
 * port), computes the checks that depend on nothing but the frame:
 *
 *   rx          the frame carries an opcode byte (n >= 44) and it is one of
 *               the engine's opcodes: the CNT_RX_<opcode> pulse
 *   bad_length  check 1: n < 64, IPv4 total length != n - 14 or UDP length
 *               != n - 34; with CHECK_BEATS also a beat count (frame_beats)
 *               that disagrees with n on a DATA_WIDTH bus
 *   bad_header  check 2: version != 1, opcode not one of the engine's, flags
 *               bits 7:5 set, or a nonzero word at offset 60 on an opcode
 *               other than GRADIENT and RESULT
 *
 * The engine's opcodes: GRADIENT and RESULT (REPLAY = 0), or PUSH,
 * SAMPLE_REQ and UPDATE (REPLAY = 1). The outputs are flags, not a verdict:
 * the engine applies the order of section 6 (bad_length before bad_header
 * before its own checks).
 *
 * A pipeline without flow control that takes one header per clock: the
 * outputs belong to the inputs of IN_REG + 2 clocks before (stage 1: the
 * header compares, IPv4 and UDP length minus n; stage 2: those differences
 * against a consistent frame's).
 * IN_REG = 1 registers the inputs first, for an engine whose header view is
 * the output of a mux. The caller carries its own valid bit alongside.
 */
module nrl_hdr_check #
(
    // Width of the AXI stream data bus the frames arrive on (256 or 512)
    parameter DATA_WIDTH = 256,
    // Opcodes of the engine: 0 GRADIENT, RESULT; 1 PUSH, SAMPLE_REQ, UPDATE
    parameter REPLAY = 0,
    // Check frame_beats against the frame length (1) or ignore it (0)
    parameter CHECK_BEATS = 0,
    // Register the inputs before the checks (1: latency 3, 0: latency 2)
    parameter IN_REG = 0
)
(
    input  wire          clk,

    /*
     * Frame (one header per clock, no handshake)
     */
    // verilator lint_off UNUSEDSIGNAL
    input  wire [511:0]  hdr,          // bytes 0..63, byte k at [8*k +: 8]
    input  wire [15:0]   frame_len,    // frame length in bytes (TUSER[15:0])
    input  wire [11:0]   frame_beats,  // beats the frame occupied (CHECK_BEATS)
    // verilator lint_on UNUSEDSIGNAL

    /*
     * Check flags, IN_REG + 2 clocks later
     */
    output wire          rx,
    output wire          bad_length,
    output wire          bad_header
);

// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"
// verilator lint_on UNUSEDPARAM

localparam BEAT_BYTES = DATA_WIDTH / 8;
localparam BEAT_BYTES_LOG2 = $clog2(BEAT_BYTES);
localparam BEAT_BYTES_M1_I = BEAT_BYTES - 1;
localparam [16:0] BEAT_BYTES_M1 = BEAT_BYTES_M1_I[16:0];

// frame byte offsets of the IPv4 and UDP lengths
localparam OFF_IP_LEN = NRL_IP_OFFSET + 2;
localparam OFF_UDP_LEN = NRL_UDP_OFFSET + 4;
// flag bits below this are defined (NRL_FLAGS_MASK); set bits above are BAD_HEADER
localparam FLAGS_DEFINED = $clog2(NRL_FLAGS_MASK + 1);
// the offsets as 16-bit frame lengths
localparam [15:0] LEN_IP = NRL_IP_OFFSET[15:0];            // frame bytes before the IPv4 header
localparam [15:0] LEN_UDP = NRL_UDP_OFFSET[15:0];          // frame bytes before the UDP header
localparam [15:0] LEN_PAYLOAD = NRL_PAYLOAD_OFFSET[15:0];  // frame bytes before the payload
localparam [15:0] LEN_OPCODE_M1 = NRL_OFF_OPCODE[15:0];    // frames longer than this carry an opcode
// IPv4 (UDP) length minus n of a consistent frame, modulo 2**16
localparam [15:0] IP_DIFF = 16'd0 - LEN_IP;
localparam [15:0] UDP_DIFF = 16'd0 - LEN_UDP;

initial begin
    if (DATA_WIDTH != 256 && DATA_WIDTH != 512) begin
        $error("Error: DATA_WIDTH must be 256 or 512 (instance %m)");
        $finish;
    end
    if (REPLAY != 0 && REPLAY != 1) begin
        $error("Error: REPLAY must be 0 or 1 (instance %m)");
        $finish;
    end
    if (CHECK_BEATS != 0 && CHECK_BEATS != 1) begin
        $error("Error: CHECK_BEATS must be 0 or 1 (instance %m)");
        $finish;
    end
    if (IN_REG != 0 && IN_REG != 1) begin
        $error("Error: IN_REG must be 0 or 1 (instance %m)");
        $finish;
    end
end

// ---------------------------------------------------------------------------
// the fields the checks read, registered (IN_REG) or not

wire [15:0] n_a;
wire [15:0] iplen_a, udplen_a;
wire [7:0] ver_a, op_a;
wire [7-FLAGS_DEFINED:0] rsvflags_a;
// verilator lint_off UNUSEDSIGNAL
wire [11:0] nbeats_a;  // CHECK_BEATS only
wire [31:0] total_a;   // REPLAY only
// verilator lint_on UNUSEDSIGNAL

wire [15:0] n_h = frame_len;
// (byte k at [8*k +: 8], fields big-endian)
wire [15:0] iplen_h = {hdr[8*OFF_IP_LEN +: 8], hdr[8*(OFF_IP_LEN+1) +: 8]};
wire [15:0] udplen_h = {hdr[8*OFF_UDP_LEN +: 8], hdr[8*(OFF_UDP_LEN+1) +: 8]};
wire [7:0] ver_h = hdr[8*NRL_OFF_VERSION +: 8];
wire [7:0] op_h = hdr[8*NRL_OFF_OPCODE +: 8];
wire [7-FLAGS_DEFINED:0] rsvflags_h = hdr[8*NRL_OFF_FLAGS+FLAGS_DEFINED +: 8-FLAGS_DEFINED];
wire [31:0] total_h = {hdr[8*NRL_OFF_TOTAL +: 8], hdr[8*(NRL_OFF_TOTAL+1) +: 8],
                       hdr[8*(NRL_OFF_TOTAL+2) +: 8], hdr[8*(NRL_OFF_TOTAL+3) +: 8]};

generate

if (IN_REG) begin : g_in_reg
    reg [15:0] n_reg, iplen_reg, udplen_reg;
    reg [11:0] nbeats_reg;
    reg [7:0] ver_reg, op_reg;
    reg [7-FLAGS_DEFINED:0] rsvflags_reg;
    reg [31:0] total_reg;

    always @(posedge clk) begin
        n_reg <= n_h;
        nbeats_reg <= frame_beats;
        iplen_reg <= iplen_h;
        udplen_reg <= udplen_h;
        ver_reg <= ver_h;
        op_reg <= op_h;
        rsvflags_reg <= rsvflags_h;
        total_reg <= total_h;
    end

    assign n_a = n_reg;
    assign nbeats_a = nbeats_reg;
    assign iplen_a = iplen_reg;
    assign udplen_a = udplen_reg;
    assign ver_a = ver_reg;
    assign op_a = op_reg;
    assign rsvflags_a = rsvflags_reg;
    assign total_a = total_reg;
end else begin : g_in_wire
    assign n_a = n_h;
    assign nbeats_a = frame_beats;
    assign iplen_a = iplen_h;
    assign udplen_a = udplen_h;
    assign ver_a = ver_h;
    assign op_a = op_h;
    assign rsvflags_a = rsvflags_h;
    assign total_a = total_h;
end

endgenerate

// ---------------------------------------------------------------------------
// stage 1: header compares, IPv4 and UDP lengths minus n

// the engine's opcodes; the word at offset 60 is reserved on every one but GRADIENT and RESULT
wire op_mine = REPLAY ? (op_a == NRL_OP_PUSH || op_a == NRL_OP_SAMPLE_REQ || op_a == NRL_OP_UPDATE) :
                        (op_a == NRL_OP_GRADIENT || op_a == NRL_OP_RESULT);
wire total_bad = REPLAY ? total_a != 32'd0 : 1'b0;

// beats a frame of n bytes occupies
wire [16:0] nround = {1'b0, n_a} + BEAT_BYTES_M1;
// verilator lint_off UNUSEDSIGNAL
wire [16:0] nbexp = nround >> BEAT_BYTES_LOG2;
// verilator lint_on UNUSEDSIGNAL

reg rx1_reg, short1_reg, hdr_bad1_reg;
reg [15:0] ip_diff1_reg, udp_diff1_reg;
// verilator lint_off UNUSEDSIGNAL
reg [11:0] nbeats1_reg, nbexp1_reg;  // CHECK_BEATS only
// verilator lint_on UNUSEDSIGNAL

always @(posedge clk) begin
    rx1_reg <= n_a > LEN_OPCODE_M1 && op_mine;
    short1_reg <= n_a < LEN_PAYLOAD;
    hdr_bad1_reg <= ver_a != NRL_VERSION || !op_mine || rsvflags_a != {8-FLAGS_DEFINED{1'b0}} || total_bad;
    ip_diff1_reg <= iplen_a - n_a;
    udp_diff1_reg <= udplen_a - n_a;
    nbeats1_reg <= nbeats_a;
    nbexp1_reg <= nbexp[11:0];
end

// ---------------------------------------------------------------------------
// stage 2: length compares

wire beats_bad1 = CHECK_BEATS ? nbeats1_reg != nbexp1_reg : 1'b0;

reg rx2_reg, len_bad2_reg, hdr_bad2_reg;

always @(posedge clk) begin
    rx2_reg <= rx1_reg;
    len_bad2_reg <= short1_reg || ip_diff1_reg != IP_DIFF || udp_diff1_reg != UDP_DIFF || beats_bad1;
    hdr_bad2_reg <= hdr_bad1_reg;
end

assign rx = rx2_reg;
assign bad_length = len_bad2_reg;
assign bad_header = hdr_bad2_reg;

endmodule

`resetall
