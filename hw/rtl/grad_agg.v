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
 * In-switch gradient aggregation engine (docs/protocol.md sections 4, 6, 7)
 *
 * Receives every protocol frame whose opcode is not a replay opcode (3..7)
 * on s_axis (SUME TUSER: [15:0] length in bytes, [23:16] one-hot source
 * port), checks it in the order of section 6, adds GRADIENT payloads into a
 * slot copy (fp32 or int32, one adder per 32-bit lane), and emits RESULTs,
 * re-sent RESULTs and upward GRADIENTs on m_axis with the destination port
 * bitmap in TUSER[31:24].
 *
 * Each slot copy holds its round, contributor bitmap, tensor length (total,
 * from the GRADIENT that opened it), the RESULT aux (contribution count in
 * bits 3:0, member id of the j-th contribution added in bits 8+3j..10+3j;
 * a leaf's DONE copy: the parent's aux; an error copy: the refused length),
 * an error flag and culprit, and its state. A GRADIENT whose total differs
 * from its round's is dropped as MISMATCH: an OPEN or UP copy becomes an
 * error copy (ERROR RESULT multicast, worker = culprit), a DONE copy
 * re-sends its RESULT to the sender.
 *
 * Pipeline (one input beat per clock):
 *   P0  input beat; header bytes captured; at the last header beat the slot
 *       state RAM is read and the accumulator base address loaded
 *   D1  header checks and state compares (registered flags); the copy's aux
 *       with this contribution added
 *   D2  verdict: drop reason, state write (with forwarding to the next D1),
 *       payload mode (add / store / pass accumulator / none), output header
 *   P1  accumulator RAM data, forwarded from the adder output or the last
 *       write when a beat of the same address is still in flight
 *   P2  operand registers into LANES fp32_add (LATENCY 6) and int32 adders
 *   X   (P2 + 6) result written back and into the output payload FIFO
 * The output assembler sends a packet once its payload is complete
 * (store and forward): header beats built from a header FIFO entry, then
 * the payload. Packets for the same slot copy need 7 beats between
 * same-address beats (the read-modify-write loop); shorter back-to-back
 * packets for one copy are spaced by input stalls, all other traffic runs
 * at one beat per clock until the output FIFO fills under backpressure.
 *
 * The engine trusts the switch lookup: every frame it receives is a protocol
 * frame (IPv4/UDP to UDP_PORT); TUSER length is the frame length.
 */
module grad_agg #
(
    // Width of the AXI4-Stream data buses (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of tkeep (one bit per byte)
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of tuser (SUME layout in the low 32 bits)
    parameter USER_WIDTH = 128,
    // Slot memory depth (AGG_MAX_SLOTS), 1..64
    parameter MAX_SLOTS = 64,
    // Largest P (AGG_MAX_ELEMS), a multiple of 16 in 16..352
    parameter MAX_ELEMS = 352,
    // Output payload FIFO depth in beats (power of two, > one packet + 12)
    parameter OUT_DEPTH = 2**$clog2(2*MAX_ELEMS*32/DATA_WIDTH + 16),
    // Output header FIFO depth in packets (power of two, >= 16)
    parameter HDR_DEPTH = 32,
    // Value of the BUILD_HASH register
    parameter BUILD_HASH = 32'd0
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * Protocol frames in
     */
    input  wire [DATA_WIDTH-1:0]   s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]   s_axis_tkeep,
    input  wire                    s_axis_tvalid,
    output wire                    s_axis_tready,
    input  wire                    s_axis_tlast,
    input  wire [USER_WIDTH-1:0]   s_axis_tuser,

    /*
     * Frames the engine originates
     */
    output wire [DATA_WIDTH-1:0]   m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]   m_axis_tkeep,
    output wire                    m_axis_tvalid,
    input  wire                    m_axis_tready,
    output wire                    m_axis_tlast,
    output wire [USER_WIDTH-1:0]   m_axis_tuser,

    /*
     * AXI4-Lite slave: registers
     */
    input  wire [11:0]             s_axil_awaddr,
    input  wire [2:0]              s_axil_awprot,
    input  wire                    s_axil_awvalid,
    output wire                    s_axil_awready,
    input  wire [31:0]             s_axil_wdata,
    input  wire [3:0]              s_axil_wstrb,
    input  wire                    s_axil_wvalid,
    output wire                    s_axil_wready,
    output wire [1:0]              s_axil_bresp,
    output wire                    s_axil_bvalid,
    input  wire                    s_axil_bready,
    input  wire [11:0]             s_axil_araddr,
    input  wire [2:0]              s_axil_arprot,
    input  wire                    s_axil_arvalid,
    output wire                    s_axil_arready,
    output wire [31:0]             s_axil_rdata,
    output wire [1:0]              s_axil_rresp,
    output wire                    s_axil_rvalid,
    input  wire                    s_axil_rready
);

localparam BYTES = DATA_WIDTH/8;
localparam LANES = DATA_WIDTH/32;
// beats holding bytes 0..63 (Ethernet + IPv4 + UDP + protocol header)
localparam HDR_BEATS = 64/BYTES;
// beats per slot copy at MAX_ELEMS
localparam MAX_PAY_BEATS = MAX_ELEMS*4/BYTES;
localparam SLOT_W = MAX_SLOTS > 1 ? $clog2(MAX_SLOTS) : 1;
// slot copy index {slot, round[0]}
localparam COPY_W = SLOT_W + 1;
localparam COPY_N = 2**COPY_W;
localparam ACC_DEPTH = 2*MAX_SLOTS*MAX_PAY_BEATS;
localparam ACC_AW = $clog2(ACC_DEPTH);
// payload beat index, wide enough to saturate above MAX_PAY_BEATS
localparam PIDX_W = $clog2(MAX_PAY_BEATS+1);
// fp32_add latency (checked against the adder's out_valid in simulation)
localparam FP_LAT = 6;
localparam OUT_AW = $clog2(OUT_DEPTH);
localparam HDR_AW = $clog2(HDR_DEPTH);
// beats that may still reach the payload FIFO after the stall decision
localparam OUT_MARGIN = 12;
// packets that may still reach the header FIFO after the stall decision
localparam HDR_MARGIN = 10;
// slot state word: state[109:108], error[107], culprit[106:104], total[103:72],
// aux[71:40] (RESULT aux; bits 3:0 the contribution count while OPEN),
// bitmap[39:32], round[31:0]
localparam ST_W = 110;
// header FIFO entry: {ports, csum, udp_dst, ip_dst, eth_dst, kind, error,
// worker, total, slot, seq, aux}
localparam HF_ENTRY_W = 8 + 16 + 16 + 32 + 48 + 2 + 1 + 3 + 32 + 16 + 32 + 32;
// the same without the checksum (header preparation pipeline)
localparam HF_FIELDS_W = HF_ENTRY_W - 16;
localparam [1:0] HDR_BEAT_CNT = HDR_BEATS[1:0];
localparam [1:0] HDR_BEAT_LAST = HDR_BEAT_CNT - 2'd1;
localparam [OUT_AW+1:0] OUT_STALL = OUT_DEPTH - OUT_MARGIN;
localparam [HDR_AW+1:0] HDR_STALL = HDR_DEPTH - HDR_MARGIN;

localparam [1:0] ST_OPEN = 2'd0, ST_UP = 2'd1, ST_DONE = 2'd2;
localparam [1:0] M_NONE = 2'd0, M_ADD = 2'd1, M_STORE = 2'd2, M_PASS = 2'd3;
localparam [1:0] K_MCAST = 2'd0, K_RESEND = 2'd1, K_UP = 2'd2;

// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"
// verilator lint_on UNUSEDPARAM

// frame byte offsets of the Ethernet, IPv4 and UDP fields read and written here
localparam OFF_ETH_SRC = 6;                     // Ethernet source address
localparam OFF_ETHERTYPE = NRL_ETH_LEN - 2;     // EtherType
localparam OFF_IP_LEN = NRL_IP_OFFSET + 2;      // IPv4 total length
localparam OFF_IP_SRC = NRL_IP_OFFSET + 12;     // IPv4 source address
localparam OFF_UDP_LEN = NRL_UDP_OFFSET + 4;    // UDP length
// flag bits below this are defined (NRL_FLAGS_MASK); set bits above are BAD_HEADER
localparam FLAGS_DEFINED = $clog2(NRL_FLAGS_MASK + 1);
// the same offsets as 16-bit frame lengths (TUSER length arithmetic)
localparam [15:0] LEN_IP = NRL_IP_OFFSET[15:0];            // frame bytes before the IPv4 header
localparam [15:0] LEN_UDP = NRL_UDP_OFFSET[15:0];          // frame bytes before the UDP header
localparam [15:0] LEN_PAYLOAD = NRL_PAYLOAD_OFFSET[15:0];  // frame bytes before the payload
localparam LEN_OPCODE_I = NRL_OFF_OPCODE + 1;
localparam [15:0] LEN_OPCODE = LEN_OPCODE_I[15:0];  // shortest frame that carries an opcode

// bad parameter check
initial begin
    if (DATA_WIDTH != 256 && DATA_WIDTH != 512) begin
        $error("Error: DATA_WIDTH must be 256 or 512 (instance %m)");
        $finish;
    end
    if (KEEP_WIDTH*8 != DATA_WIDTH) begin
        $error("Error: KEEP_WIDTH must be DATA_WIDTH/8 (instance %m)");
        $finish;
    end
    if (USER_WIDTH < 32) begin
        $error("Error: USER_WIDTH must be at least 32 (instance %m)");
        $finish;
    end
    if (MAX_SLOTS < 1 || MAX_SLOTS > 64) begin
        $error("Error: MAX_SLOTS must be 1..64 (instance %m)");
        $finish;
    end
    if (MAX_ELEMS < 16 || MAX_ELEMS > 352 || MAX_ELEMS % 16 != 0) begin
        $error("Error: MAX_ELEMS must be a multiple of 16 in 16..352 (instance %m)");
        $finish;
    end
    if ((1 << OUT_AW) != OUT_DEPTH || OUT_DEPTH <= MAX_PAY_BEATS + OUT_MARGIN) begin
        $error("Error: OUT_DEPTH must be a power of two > MAX_ELEMS*32/DATA_WIDTH + 12 (instance %m)");
        $finish;
    end
    if ((1 << HDR_AW) != HDR_DEPTH || HDR_DEPTH < 16) begin
        $error("Error: HDR_DEPTH must be a power of two >= 16 (instance %m)");
        $finish;
    end
end

integer i;
genvar gi;

// byte swaps between network order fields and AXI4-Stream byte lanes
function [15:0] bswap16(input [15:0] v);
    bswap16 = {v[7:0], v[15:8]};
endfunction

function [31:0] bswap32(input [31:0] v);
    bswap32 = {v[7:0], v[15:8], v[23:16], v[31:24]};
endfunction

/*
 * Registers
 */
wire [1:0]      cfg_ctrl;
wire [7:0]      cfg_job_id;
wire [15:0]     cfg_udp_port;
wire [31:0]     cfg_switch_ip;
wire [47:0]     cfg_switch_mac;
wire [31:0]     cfg_mcast_ip;
wire [3:0]      cfg_members;
wire [3:0]      cfg_threshold;
wire [6:0]      cfg_slots;
wire [8:0]      cfg_elems;
wire            cfg_dtype;
wire            cfg_mode;
wire [31:0]     cfg_staleness;
wire            cfg_role;
wire [7:0]      cfg_uplink_port;
wire [31:0]     cfg_parent_ip;
wire [15:0]     cfg_parent_udp;
wire [2:0]      cfg_leaf_id;
wire [8*8-1:0]  cfg_member_port;
wire [8*32-1:0] cfg_member_ip;
wire [8*16-1:0] cfg_member_udp;
wire [8*3-1:0]  cfg_member_role;
wire            cfg_invalidate;

reg [17:0] cnt_inc_reg;

grad_agg_regs #(
    .MAX_SLOTS(MAX_SLOTS),
    .MAX_ELEMS(MAX_ELEMS),
    .BUILD_HASH(BUILD_HASH),
    .CNT_COUNT(18)
)
regs_inst (
    .clk(clk),
    .rst(rst),
    .s_axil_awaddr(s_axil_awaddr),
    .s_axil_awprot(s_axil_awprot),
    .s_axil_awvalid(s_axil_awvalid),
    .s_axil_awready(s_axil_awready),
    .s_axil_wdata(s_axil_wdata),
    .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid),
    .s_axil_wready(s_axil_wready),
    .s_axil_bresp(s_axil_bresp),
    .s_axil_bvalid(s_axil_bvalid),
    .s_axil_bready(s_axil_bready),
    .s_axil_araddr(s_axil_araddr),
    .s_axil_arprot(s_axil_arprot),
    .s_axil_arvalid(s_axil_arvalid),
    .s_axil_arready(s_axil_arready),
    .s_axil_rdata(s_axil_rdata),
    .s_axil_rresp(s_axil_rresp),
    .s_axil_rvalid(s_axil_rvalid),
    .s_axil_rready(s_axil_rready),
    .cfg_ctrl(cfg_ctrl),
    .cfg_job_id(cfg_job_id),
    .cfg_udp_port(cfg_udp_port),
    .cfg_switch_ip(cfg_switch_ip),
    .cfg_switch_mac(cfg_switch_mac),
    .cfg_mcast_ip(cfg_mcast_ip),
    .cfg_members(cfg_members),
    .cfg_threshold(cfg_threshold),
    .cfg_slots(cfg_slots),
    .cfg_elems(cfg_elems),
    .cfg_dtype(cfg_dtype),
    .cfg_mode(cfg_mode),
    .cfg_staleness(cfg_staleness),
    .cfg_role(cfg_role),
    .cfg_uplink_port(cfg_uplink_port),
    .cfg_parent_ip(cfg_parent_ip),
    .cfg_parent_udp(cfg_parent_udp),
    .cfg_leaf_id(cfg_leaf_id),
    .cfg_member_port(cfg_member_port),
    .cfg_member_ip(cfg_member_ip),
    .cfg_member_udp(cfg_member_udp),
    .cfg_member_role(cfg_member_role),
    .cfg_invalidate(cfg_invalidate),
    .cnt_inc(cnt_inc_reg)
);

/*
 * Values derived from the configuration (registered; the registers are
 * only written while the engine is idle)
 */
reg [PIDX_W-1:0] cfg_pay_beats_reg;      // payload beats per packet
reg [PIDX_W-1:0] cfg_pay_beats_m1_reg;
reg [3:0]        cfg_thr_reg;               // contributions completing a round
reg              cfg_ge_first_reg;          // one contribution completes
reg [7:0]        cfg_mcast_ports_reg;
reg [15:0]       cfg_tl_reg;               // IPv4 total length
reg [15:0]       cfg_ulen_reg;             // UDP length
reg [15:0]       cfg_flen_reg;             // frame length
reg [16:0]       cfg_cs_a_reg;
reg [16:0]       cfg_cs_b_reg;
reg [17:0]       cfg_cs_base_reg;          // checksum sum without the destination
reg [15:0]       cfg_pudp_reg;             // upward UDP destination port

wire [15:0] cfg_elems_x4 = {5'd0, cfg_elems, 2'b00};
wire [8:0] cfg_pay_beats_full = cfg_elems >> $clog2(BYTES/4);
wire [8*8-1:0] mcast_port_sel;

generate

for (gi = 0; gi < 8; gi = gi + 1) begin : g_mcast
    localparam [3:0] IDX = gi;
    assign mcast_port_sel[8*gi +: 8] = IDX < cfg_members ? cfg_member_port[8*gi +: 8] : 8'd0;
end

endgenerate

wire [7:0] mcast_ports = mcast_port_sel[0 +: 8] | mcast_port_sel[8 +: 8] | mcast_port_sel[16 +: 8]
                       | mcast_port_sel[24 +: 8] | mcast_port_sel[32 +: 8] | mcast_port_sel[40 +: 8]
                       | mcast_port_sel[48 +: 8] | mcast_port_sel[56 +: 8];

always @(posedge clk) begin
    cfg_pay_beats_reg <= cfg_pay_beats_full[PIDX_W-1:0];
    cfg_pay_beats_m1_reg <= cfg_pay_beats_reg - 1'b1;
    cfg_thr_reg <= cfg_mode ? cfg_threshold : cfg_members;
    cfg_ge_first_reg <= cfg_thr_reg <= 4'd1;
    cfg_mcast_ports_reg <= mcast_ports;
    cfg_tl_reg <= cfg_elems_x4 + 16'd50;
    cfg_ulen_reg <= cfg_elems_x4 + 16'd30;
    cfg_flen_reg <= cfg_elems_x4 + LEN_PAYLOAD;
    cfg_cs_a_reg <= {1'b0, cfg_tl_reg} + {1'b0, cfg_switch_ip[31:16]};
    cfg_cs_b_reg <= {1'b0, cfg_switch_ip[15:0]} + 17'h0c511;
    cfg_cs_base_reg <= {1'b0, cfg_cs_a_reg} + {1'b0, cfg_cs_b_reg};
    cfg_pudp_reg <= cfg_parent_udp != 16'd0 ? cfg_parent_udp : cfg_udp_port;
end

/*
 * P0: input framing and header capture
 */
reg [1:0] in_cnt_reg, in_cnt_next;   // beats of this frame so far, saturating at HDR_BEATS
reg stall_out_reg;                    // output FIFOs near full (or reset)
reg in_hazard_reg;                           // the next payload beat must wait

wire in_hdr = in_cnt_reg != HDR_BEAT_CNT;
assign s_axis_tready = !stall_out_reg && !(!in_hdr && in_hazard_reg);
wire in_acc = s_axis_tvalid && s_axis_tready;
wire in_first = in_cnt_reg == 2'd0;
// last header beat (or a frame ending inside the header): the verdict starts
wire in_hc = in_acc && in_hdr && (in_cnt_reg == HDR_BEAT_LAST || s_axis_tlast);
wire in_pay = in_acc && !in_hdr;

always @* begin
    in_cnt_next = in_cnt_reg;
    if (in_acc) begin
        if (s_axis_tlast) begin
            in_cnt_next = 2'd0;
        end else if (in_hdr) begin
            in_cnt_next = in_cnt_reg + 2'd1;
        end
    end
end

always @(posedge clk) begin
    in_cnt_reg <= in_cnt_next;
    if (rst) begin
        in_cnt_reg <= 2'd0;
    end
end

// bytes 0..63 as they stand at the last header beat
wire [511:0] hdr_now;

generate

if (HDR_BEATS == 1) begin : g_hdr1
    assign hdr_now = s_axis_tdata;
end else begin : g_hdr2
    reg [DATA_WIDTH-1:0] hdr0_reg;

    always @(posedge clk) begin
        if (in_acc && in_first) begin
            hdr0_reg <= s_axis_tdata;
        end
    end

    assign hdr_now = {s_axis_tdata, hdr0_reg};
end

endgenerate

wire [15:0] hn_ip_len  = bswap16(hdr_now[8*OFF_IP_LEN +: 16]);
wire [31:0] hn_ip_src  = bswap32(hdr_now[8*OFF_IP_SRC +: 32]);
wire [15:0] hn_udp_src = bswap16(hdr_now[8*NRL_UDP_OFFSET +: 16]);
wire [15:0] hn_udp_len = bswap16(hdr_now[8*OFF_UDP_LEN +: 16]);
wire [7:0]  hn_ver     = hdr_now[8*NRL_OFF_VERSION +: 8];
wire [7:0]  hn_op      = hdr_now[8*NRL_OFF_OPCODE +: 8];
wire [7:0]  hn_flags   = hdr_now[8*NRL_OFF_FLAGS +: 8];
wire [7:0]  hn_job     = hdr_now[8*NRL_OFF_JOB +: 8];
wire [15:0] hn_worker  = bswap16(hdr_now[8*NRL_OFF_WORKER +: 16]);
wire [15:0] hn_slot    = bswap16(hdr_now[8*NRL_OFF_SLOT +: 16]);
wire [31:0] hn_seq     = bswap32(hdr_now[8*NRL_OFF_SEQ +: 32]);
wire [15:0] hn_count   = bswap16(hdr_now[8*NRL_OFF_COUNT +: 16]);
wire [31:0] hn_aux     = bswap32(hdr_now[8*NRL_OFF_AUX +: 32]);
wire [31:0] hn_total   = bswap32(hdr_now[8*NRL_OFF_TOTAL +: 32]);
wire [COPY_W-1:0] sc_now = {hn_slot[SLOT_W-1:0], hn_seq[0]};

// frame length facts, captured at the first beat (TUSER)
wire [15:0] tu_len = s_axis_tuser[15:0];

reg [15:0] ip_len_exp_reg;
reg [15:0] udp_len_exp_reg;
reg [15:0] pay_len_reg;
reg        short_frame_reg;
reg        has_opcode_reg;
reg [7:0]  port_reg;

always @(posedge clk) begin
    if (in_acc && in_first) begin
        ip_len_exp_reg <= tu_len - LEN_IP;
        udp_len_exp_reg <= tu_len - LEN_UDP;
        pay_len_reg <= tu_len - LEN_PAYLOAD;
        short_frame_reg <= tu_len < LEN_PAYLOAD;
        has_opcode_reg <= tu_len >= LEN_OPCODE;
        port_reg <= s_axis_tuser[23:16];
    end
end

// authenticity against every member entry (ingress port, IPv4 and UDP
// source), at the last header beat; D1 picks the worker's bit
wire [7:0] port_now = in_first ? s_axis_tuser[23:16] : port_reg;
wire [7:0] auth_now;

generate

for (gi = 0; gi < 8; gi = gi + 1) begin : g_auth
    wire [15:0] udp = cfg_member_udp[16*gi +: 16];
    assign auth_now[gi] = (port_now & cfg_member_port[8*gi +: 8]) != 8'd0
                       && hn_ip_src == cfg_member_ip[32*gi +: 32]
                       && (udp == 16'd0 || hn_udp_src == udp);
end

endgenerate

// header fields for D1, captured at the last header beat
reg            d1_valid_reg;
reg            hd_trunc_reg;
reg [15:0]     hd_ip_len_reg;
reg [31:0]     hd_ip_src_reg;
reg [15:0]     hd_udp_src_reg;
reg [15:0]     hd_udp_len_reg;
reg [7:0]      hd_ver_reg;
reg [7:0]      hd_op_reg;
reg [7:0]      hd_flags_reg;
reg [7:0]      hd_job_reg;
reg [15:0]     hd_worker_reg;
reg [15:0]     hd_slot_reg;
reg [31:0]     hd_seq_reg;
reg [15:0]     hd_count_reg;
reg [31:0]     hd_aux_reg;
reg [31:0]     hd_total_reg;
reg            hd_tot0_reg;
reg [47:0]     hd_eth_src_reg;
reg [7:0]      hd_auth_reg;
reg [COPY_W-1:0] hd_sc_reg;
// seq - aux in carry-select halves (async staleness)
reg [16:0]     hd_sd_lo_reg;
reg [15:0]     hd_sd_hi0_reg;
reg [15:0]     hd_sd_hi1_reg;

always @(posedge clk) begin
    d1_valid_reg <= in_hc;
    if (in_hc) begin
        hd_trunc_reg <= s_axis_tlast;
        hd_ip_len_reg <= hn_ip_len;
        hd_ip_src_reg <= hn_ip_src;
        hd_udp_src_reg <= hn_udp_src;
        hd_udp_len_reg <= hn_udp_len;
        hd_ver_reg <= hn_ver;
        hd_op_reg <= hn_op;
        hd_flags_reg <= hn_flags;
        hd_job_reg <= hn_job;
        hd_worker_reg <= hn_worker;
        hd_slot_reg <= hn_slot;
        hd_seq_reg <= hn_seq;
        hd_count_reg <= hn_count;
        hd_aux_reg <= hn_aux;
        hd_total_reg <= hn_total;
        hd_tot0_reg <= hn_total == 32'd0;
        hd_eth_src_reg <= hdr_now[8*OFF_ETH_SRC +: 48];
        hd_auth_reg <= auth_now;
        hd_sc_reg <= sc_now;
        hd_sd_lo_reg <= {1'b0, hn_seq[15:0]} - {1'b0, hn_aux[15:0]};
        hd_sd_hi0_reg <= hn_seq[31:16] - hn_aux[31:16];
        hd_sd_hi1_reg <= hn_seq[31:16] + ~hn_aux[31:16];
    end
    if (rst) begin
        d1_valid_reg <= 1'b0;
    end
end

/*
 * Slot state: RAM of {state, error, culprit, total, aux, bitmap, round} per
 * copy, valid bits in registers (cleared by reset and by configuration
 * writes)
 */
reg [ST_W-1:0] st_mem[0:COPY_N-1];
reg [ST_W-1:0] st_rdata_reg;
reg [COPY_N-1:0] st_valid_reg;
// the write of the cycle of the read, forwarded to D1
reg [ST_W-1:0] st_hist_reg;
reg            st_hist_we_reg;
reg            st_match_reg;

wire           st_we;
wire [ST_W-1:0] st_wdata;
reg [COPY_W-1:0] d2_sc_reg;

always @(posedge clk) begin
    if (st_we) begin
        st_mem[d2_sc_reg] <= st_wdata;
    end
    st_rdata_reg <= st_mem[sc_now];
end

// decoded valid-bit set (no variable-index write: that costs a carry chain)
wire [COPY_N-1:0] st_set;

generate

for (gi = 0; gi < COPY_N; gi = gi + 1) begin : g_vset
    localparam [COPY_W-1:0] IDX = gi;
    assign st_set[gi] = st_we && d2_sc_reg == IDX;
end

endgenerate

always @(posedge clk) begin
    st_hist_reg <= st_wdata;
    st_hist_we_reg <= st_we;
    st_match_reg <= d2_sc_reg == sc_now;
    st_valid_reg <= st_valid_reg | st_set;
    if (rst || cfg_invalidate) begin
        st_valid_reg <= {COPY_N{1'b0}};
        st_hist_we_reg <= 1'b0;
    end
end

/*
 * D1: checks and state compares
 */
wire [ST_W-1:0] st_cur = (st_match_reg && st_hist_we_reg) ? st_hist_reg : st_rdata_reg;
wire [31:0] st_round = st_cur[31:0];
wire [7:0]  st_bitmap = st_cur[39:32];
wire [31:0] st_aux = st_cur[71:40];
wire [31:0] st_total = st_cur[103:72];
wire [2:0]  st_culprit = st_cur[106:104];
wire        st_error = st_cur[107];
wire [1:0]  st_state = st_cur[109:108];
// contributions added so far (an OPEN copy's aux bits 3:0)
wire [3:0]  st_count = st_aux[3:0];

wire [2:0]  w3 = hd_worker_reg[2:0];
wire [2:0]  m_role = cfg_member_role[3*w3 +: 3];

wire is_grad = hd_op_reg == NRL_OP_GRADIENT;
wire w_lt_n = hd_worker_reg[15:4] == 12'd0 && hd_worker_reg[3:0] < cfg_members;

wire f_len1 = short_frame_reg || hd_ip_len_reg != ip_len_exp_reg || hd_udp_len_reg != udp_len_exp_reg;
// (word 60 is the tensor length on both opcodes this engine accepts)
wire f_hdr = hd_ver_reg != NRL_VERSION || (hd_op_reg != NRL_OP_GRADIENT && hd_op_reg != NRL_OP_RESULT)
          || hd_flags_reg[7:FLAGS_DEFINED] != {8-FLAGS_DEFINED{1'b0}};
wire f_job = hd_job_reg != cfg_job_id;
wire f_dis = !cfg_ctrl[0];
wire f_unk = is_grad && !(w_lt_n && m_role[0]);
wire f_spoof_g = !hd_auth_reg[w3];
wire f_spoof_r = !cfg_role || (port_reg & cfg_uplink_port) == 8'd0 || hd_ip_src_reg != cfg_parent_ip;
wire f_spoof = is_grad ? f_spoof_g : f_spoof_r;
wire f_cnt = hd_count_reg != {7'd0, cfg_elems} || (is_grad && hd_tot0_reg);
wire f_len2 = pay_len_reg != {hd_count_reg[13:0], 2'b00} || hd_trunc_reg;
wire f_dtype = hd_flags_reg[0] != cfg_dtype;
wire f_slot = hd_slot_reg[15:7] != 9'd0 || hd_slot_reg[6:0] >= cfg_slots;

// (seq - aux) > AGG_STALENESS, in halves
wire [15:0] sd_hi = hd_sd_lo_reg[16] ? hd_sd_hi1_reg : hd_sd_hi0_reg;
wire sd_gt_hi = sd_hi > cfg_staleness[31:16];
wire sd_eq_hi = sd_hi == cfg_staleness[31:16];
wire sd_gt_lo = hd_sd_lo_reg[15:0] > cfg_staleness[15:0];

// copy round - seq, in halves: the sign decides newer / older
wire [16:0] rd_lo = {1'b0, st_round[15:0]} - {1'b0, hd_seq_reg[15:0]};
wire [15:0] rd_hi0 = st_round[31:16] - hd_seq_reg[31:16];
wire [15:0] rd_hi1 = st_round[31:16] + ~hd_seq_reg[31:16];
wire [4:0] cnt_p1 = {1'b0, st_count} + 5'd1;

// aux after adding worker w3 to an OPEN copy: w3 in order field st_count
// (bits 8+3j, j = count), count + 1 in bits 3:0
wire [23:0] ord_add;

generate

for (gi = 0; gi < 8; gi = gi + 1) begin : g_ord
    localparam [3:0] J = gi;
    assign ord_add[3*gi +: 3] = st_count == J ? w3 : st_aux[8+3*gi +: 3];
end

endgenerate

reg            d2_valid_reg;
reg            d2_rx_grad_reg;
reg            d2_rx_res_reg;
reg            d2_f_len1_reg;
reg            d2_f_hdr_reg;
reg            d2_f_job_reg;
reg            d2_f_dis_reg;
reg            d2_f_unk_reg;
reg            d2_f_spoof_reg;
reg            d2_f_cnt_reg;
reg            d2_f_len2_reg;
reg            d2_f_dtype_reg;
reg            d2_f_slot_reg;
reg            d2_is_grad_reg;
reg            d2_sd_gt_hi_reg;
reg            d2_sd_eq_hi_reg;
reg            d2_sd_gt_lo_reg;
reg            d2_vld_reg;
reg            d2_eq_reg;
reg            d2_rd_borrow_reg;
reg            d2_h0_reg;
reg            d2_h1_reg;
reg            d2_has_w_reg;
reg            d2_ge_add_reg;
reg            d2_tmis_reg;     // packet total != copy total
reg [1:0]      d2_state_reg;
reg            d2_st_err_reg;
reg [2:0]      d2_st_cul_reg;
reg [31:0]     d2_st_aux_reg;
reg [31:0]     d2_st_total_reg;
reg [31:0]     d2_aux_add_reg;  // copy aux with this contribution added
reg [7:0]      d2_bitmap_reg;
reg [31:0]     d2_round_reg;
reg [7:0]      d2_bit_reg;
reg [2:0]      d2_w3_reg;
reg            d2_flag_err_reg; // flags.ERROR (RESULT)
reg [15:0]     d2_slot_reg;
reg [31:0]     d2_seq_reg;
reg [31:0]     d2_total_reg;
reg [31:0]     d2_aux_alt_reg;  // GRADIENT: its total (an error copy's aux); RESULT: its aux
reg [47:0]     d2_eth_src_reg;
reg [31:0]     d2_ip_src_reg;
reg [15:0]     d2_udp_src_reg;
reg [7:0]      d2_port_reg;

always @(posedge clk) begin
    d2_valid_reg <= d1_valid_reg;
    d2_rx_grad_reg <= has_opcode_reg && hd_op_reg == NRL_OP_GRADIENT;
    d2_rx_res_reg <= has_opcode_reg && hd_op_reg == NRL_OP_RESULT;
    d2_f_len1_reg <= f_len1;
    d2_f_hdr_reg <= f_hdr;
    d2_f_job_reg <= f_job;
    d2_f_dis_reg <= f_dis;
    d2_f_unk_reg <= f_unk;
    d2_f_spoof_reg <= f_spoof;
    d2_f_cnt_reg <= f_cnt;
    d2_f_len2_reg <= f_len2;
    d2_f_dtype_reg <= f_dtype;
    d2_f_slot_reg <= f_slot;
    d2_is_grad_reg <= is_grad;
    d2_sd_gt_hi_reg <= sd_gt_hi;
    d2_sd_eq_hi_reg <= sd_eq_hi;
    d2_sd_gt_lo_reg <= sd_gt_lo;
    d2_vld_reg <= st_valid_reg[hd_sc_reg];
    d2_eq_reg <= st_round == hd_seq_reg;
    d2_rd_borrow_reg <= rd_lo[16];
    d2_h0_reg <= rd_hi0[15];
    d2_h1_reg <= rd_hi1[15];
    d2_has_w_reg <= st_bitmap[w3];
    d2_ge_add_reg <= cnt_p1 >= {1'b0, cfg_thr_reg};
    d2_tmis_reg <= hd_total_reg != st_total;
    d2_state_reg <= st_state;
    d2_st_err_reg <= st_error;
    d2_st_cul_reg <= st_culprit;
    d2_st_aux_reg <= st_aux;
    d2_st_total_reg <= st_total;
    d2_aux_add_reg <= {ord_add, 4'd0, cnt_p1[3:0]};
    d2_bitmap_reg <= st_bitmap;
    d2_round_reg <= st_round;
    d2_bit_reg <= 8'd1 << w3;
    d2_w3_reg <= w3;
    d2_flag_err_reg <= hd_flags_reg[4];
    d2_sc_reg <= hd_sc_reg;
    d2_slot_reg <= hd_slot_reg;
    d2_seq_reg <= hd_seq_reg;
    d2_total_reg <= hd_total_reg;
    d2_aux_alt_reg <= is_grad ? hd_total_reg : hd_aux_reg;
    d2_eth_src_reg <= hd_eth_src_reg;
    d2_ip_src_reg <= hd_ip_src_reg;
    d2_udp_src_reg <= hd_udp_src_reg;
    d2_port_reg <= port_reg;
    if (rst) begin
        d2_valid_reg <= 1'b0;
    end
end

/*
 * D2: verdict
 */
// checks 1-10, first failing one wins
wire p_len1 = d2_f_len1_reg;
wire p_hdr = !p_len1 && d2_f_hdr_reg;
wire pre_job = !d2_f_len1_reg && !d2_f_hdr_reg;
wire p_job = pre_job && d2_f_job_reg;
wire pre_dis = pre_job && !d2_f_job_reg;
wire p_dis = pre_dis && d2_f_dis_reg;
wire pre_unk = pre_dis && !d2_f_dis_reg;
wire p_unk = pre_unk && d2_f_unk_reg;
wire pre_spoof = pre_unk && !d2_f_unk_reg;
wire p_spoof = pre_spoof && d2_f_spoof_reg;
wire pre_cnt = pre_spoof && !d2_f_spoof_reg;
wire p_cnt = pre_cnt && d2_f_cnt_reg;
wire pre_len2 = pre_cnt && !d2_f_cnt_reg;
wire p_len2 = pre_len2 && d2_f_len2_reg;
wire pre_dtype = pre_len2 && !d2_f_len2_reg;
wire p_dtype = pre_dtype && d2_f_dtype_reg;
wire pre_slot = pre_dtype && !d2_f_dtype_reg;
wire p_slot = pre_slot && d2_f_slot_reg;
wire ok = pre_slot && !d2_f_slot_reg;

// GRADIENT, section 4 steps 1-7
wire stale1 = cfg_mode && (d2_sd_gt_hi_reg || (d2_sd_eq_hi_reg && d2_sd_gt_lo_reg));
wire d_neg = d2_rd_borrow_reg ? d2_h1_reg : d2_h0_reg;
wire newer = d2_vld_reg && !d2_eq_reg && !d_neg;
wire g_open = !d2_vld_reg || !d2_eq_reg;
// the copy holds this round and another tensor length (a newly opened copy
// takes the packet's)
wire mis = !g_open && d2_tmis_reg;
wire hw = !g_open && d2_has_w_reg;
wire [1:0] stt = g_open ? ST_OPEN : d2_state_reg;
wire g_stale = stale1 || newer;
wire g_stale_resend = !stale1 && newer && d2_state_reg == ST_DONE;
wire g_mis = !g_stale && mis;
// MISMATCH on a DONE copy re-sends its RESULT; on an OPEN or UP copy it
// makes an error copy (ERROR RESULT to every member)
wire g_mis_resend = g_mis && d2_state_reg == ST_DONE;
wire g_err = g_mis && d2_state_reg != ST_DONE;
wire g_dup = !g_stale && !mis && (hw || stt != ST_OPEN);
wire g_resend = g_dup && stt == ST_DONE;
wire g_upre = g_dup && stt == ST_UP && hw;
wire g_add = !g_stale && !mis && !g_dup;
wire complete = g_open ? cfg_ge_first_reg : d2_ge_add_reg;
// aux with this contribution added: the first one is member w3 alone
wire [31:0] aux_new = g_open ? {21'd0, d2_w3_reg, 4'd0, 4'd1} : d2_aux_add_reg;
// a valid copy that holds this round (or a newer one): its total counts
wire use_st = newer || !g_open;

// RESULT (leaf)
wire r_replace = d2_vld_reg && d2_eq_reg && d2_state_reg == ST_UP;
wire r_dup = d2_vld_reg && d2_eq_reg && d2_state_reg == ST_DONE;

wire okg = ok && d2_is_grad_reg;
wire okr = ok && !d2_is_grad_reg;

wire out_mcast = (okg && ((g_add && complete && !cfg_role) || g_err)) || (okr && r_replace);
wire out_resend = okg && (g_stale_resend || g_resend || g_mis_resend);
wire out_up = okg && ((g_add && complete && cfg_role) || g_upre);
wire out_any = out_mcast || out_resend || out_up;

// written: GRADIENT add, GRADIENT error copy (mis), accepted RESULT; the
// round is the packet's (the copy's own unless the copy is opened now)
wire wr_add = d2_is_grad_reg && !mis;
wire wr_err = d2_is_grad_reg && mis;
assign st_we = d2_valid_reg && ((okg && (g_add || g_err)) || (okr && r_replace));
assign st_wdata = {
    wr_add ? (complete ? (cfg_role ? ST_UP : ST_DONE) : ST_OPEN) : ST_DONE,
    d2_is_grad_reg ? wr_err : d2_flag_err_reg,
    d2_w3_reg,
    wr_err ? d2_st_total_reg : d2_total_reg,
    wr_add ? aux_new : d2_aux_alt_reg,
    wr_add ? ((g_open ? 8'd0 : d2_bitmap_reg) | d2_bit_reg) : d2_bitmap_reg,
    d2_seq_reg
};

// payload handling of the packet, used by its beats at P2
reg [1:0] dec_mode_reg;
reg       dec_out_reg;
reg       dec_int_reg;

always @(posedge clk) begin
    if (d2_valid_reg) begin
        if (okg && g_add) begin
            dec_mode_reg <= g_open ? M_STORE : M_ADD;
        end else if (okr && r_replace) begin
            dec_mode_reg <= M_STORE;
        end else if (out_any) begin
            // resend, upward resend, error RESULT: the accumulator as it stands
            dec_mode_reg <= M_PASS;
        end else begin
            dec_mode_reg <= M_NONE;
        end
        dec_out_reg <= out_any;
        dec_int_reg <= cfg_dtype;
    end
    if (rst) begin
        dec_mode_reg <= M_NONE;
        dec_out_reg <= 1'b0;
    end
end

// counters
always @(posedge clk) begin
    cnt_inc_reg <= {18{d2_valid_reg}} & {
        okg && g_mis,                                          // 17 MISMATCH
        okg && g_dup && !hw,                                   // 16 LATE
        (okg && g_dup && hw) || (okr && r_dup),                // 15 DUPLICATE
        (okg && g_stale) || (okr && !r_replace && !r_dup),     // 14 STALE
        p_slot,                                                // 13 BAD_SLOT
        p_dtype,                                               // 12 BAD_DTYPE
        p_cnt,                                                 // 11 BAD_COUNT
        p_spoof,                                               // 10 SPOOFED
        p_unk,                                                 //  9 UNKNOWN_WORKER
        p_dis,                                                 //  8 DISABLED
        p_job,                                                 //  7 BAD_JOB
        p_hdr,                                                 //  6 BAD_HEADER
        p_len1 || p_len2,                                      //  5 BAD_LENGTH
        out_up,                                                //  4 TX_UP
        out_resend,                                            //  3 TX_RESEND
        out_mcast,                                             //  2 TX_RESULT
        d2_rx_res_reg,                                         //  1 RX_RESULT
        d2_rx_grad_reg                                         //  0 RX_GRADIENT
    };
    if (rst) begin
        cnt_inc_reg <= 18'd0;
    end
end

/*
 * Output header preparation: destination, checksum (HP1..HP4)
 */
reg        hp1_valid_reg;
reg [1:0]  hp1_kind_reg;
reg [15:0] hp1_slot_reg;
reg [31:0] hp1_seq_reg;
reg [31:0] hp1_aux_reg;
reg        hp1_err_reg;
reg [2:0]  hp1_wk_reg;
reg [31:0] hp1_total_reg;
reg [47:0] hp1_mac_reg;
reg [31:0] hp1_ip_reg;
reg [15:0] hp1_udp_reg;
reg [7:0]  hp1_port_reg;

always @(posedge clk) begin
    hp1_valid_reg <= d2_valid_reg && out_any;
    hp1_kind_reg <= out_resend ? K_RESEND : (out_up ? K_UP : K_MCAST);
    hp1_slot_reg <= d2_slot_reg;
    hp1_seq_reg <= (d2_is_grad_reg && newer) ? d2_round_reg : d2_seq_reg;
    // RESULTs carry the copy's aux, total, ERROR flag and culprit (the
    // copy as it is written now for a multicast); an upward GRADIENT its
    // round as aux and the total
    if (out_resend) begin
        hp1_aux_reg <= d2_st_aux_reg;
    end else if (out_up) begin
        hp1_aux_reg <= d2_seq_reg;
    end else if (wr_add) begin
        hp1_aux_reg <= aux_new;
    end else begin
        hp1_aux_reg <= d2_aux_alt_reg;
    end
    if (out_resend) begin
        hp1_err_reg <= d2_st_err_reg;
        hp1_wk_reg <= d2_st_err_reg ? d2_st_cul_reg : 3'd0;
    end else begin
        hp1_err_reg <= d2_is_grad_reg ? mis : d2_flag_err_reg;
        hp1_wk_reg <= (d2_is_grad_reg ? mis : d2_flag_err_reg) ? d2_w3_reg : 3'd0;
    end
    hp1_total_reg <= (d2_is_grad_reg && use_st) ? d2_st_total_reg : d2_total_reg;
    hp1_mac_reg <= d2_eth_src_reg;
    hp1_ip_reg <= d2_ip_src_reg;
    hp1_udp_reg <= d2_udp_src_reg;
    hp1_port_reg <= d2_port_reg;
    if (rst) begin
        hp1_valid_reg <= 1'b0;
    end
end

wire hp1_resend = hp1_kind_reg == K_RESEND;
wire hp1_up = hp1_kind_reg == K_UP;
wire [31:0] hp1_ip_dst = hp1_resend ? hp1_ip_reg : (hp1_up ? cfg_parent_ip : cfg_mcast_ip);

reg        hp2_valid_reg;
reg [1:0]  hp2_kind_reg;
reg [15:0] hp2_slot_reg;
reg [31:0] hp2_seq_reg;
reg [31:0] hp2_aux_reg;
reg        hp2_err_reg;
reg [2:0]  hp2_wk_reg;
reg [31:0] hp2_total_reg;
reg [47:0] hp2_eth_dst_reg;
reg [31:0] hp2_ip_dst_reg;
reg [15:0] hp2_udp_dst_reg;
reg [7:0]  hp2_ports_reg;
reg [16:0] hp2_t_reg;

always @(posedge clk) begin
    hp2_valid_reg <= hp1_valid_reg;
    hp2_kind_reg <= hp1_kind_reg;
    hp2_slot_reg <= hp1_slot_reg;
    hp2_seq_reg <= hp1_seq_reg;
    hp2_aux_reg <= hp1_aux_reg;
    hp2_err_reg <= hp1_err_reg;
    hp2_wk_reg <= hp1_wk_reg;
    hp2_total_reg <= hp1_total_reg;
    hp2_eth_dst_reg <= hp1_resend ? hp1_mac_reg : 48'hffffffffffff;
    hp2_ip_dst_reg <= hp1_ip_dst;
    hp2_udp_dst_reg <= hp1_resend ? hp1_udp_reg : (hp1_up ? cfg_pudp_reg : cfg_udp_port);
    hp2_ports_reg <= hp1_resend ? hp1_port_reg : (hp1_up ? cfg_uplink_port : cfg_mcast_ports_reg);
    hp2_t_reg <= {1'b0, hp1_ip_dst[31:16]} + {1'b0, hp1_ip_dst[15:0]};
    if (rst) begin
        hp2_valid_reg <= 1'b0;
    end
end

reg            hp3_valid_reg;
reg [HF_FIELDS_W-1:0] hp3_fields_reg;
reg [18:0]     hp3_s_reg;
reg            hp4_valid_reg;
reg [HF_FIELDS_W-1:0] hp4_fields_reg;
reg [16:0]     hp4_f_reg;

// entry without the checksum: {ports, udp_dst, ip_dst, eth_dst, kind, error,
// worker, total, slot, seq, aux}
wire [HF_FIELDS_W-1:0] hp2_fields = {hp2_ports_reg, hp2_udp_dst_reg, hp2_ip_dst_reg, hp2_eth_dst_reg,
                                 hp2_kind_reg, hp2_err_reg, hp2_wk_reg, hp2_total_reg,
                                 hp2_slot_reg, hp2_seq_reg, hp2_aux_reg};

always @(posedge clk) begin
    hp3_valid_reg <= hp2_valid_reg;
    hp3_fields_reg <= hp2_fields;
    hp3_s_reg <= {1'b0, cfg_cs_base_reg} + {2'b00, hp2_t_reg};
    hp4_valid_reg <= hp3_valid_reg;
    hp4_fields_reg <= hp3_fields_reg;
    hp4_f_reg <= {1'b0, hp3_s_reg[15:0]} + {14'd0, hp3_s_reg[18:16]};
    if (rst) begin
        hp3_valid_reg <= 1'b0;
        hp4_valid_reg <= 1'b0;
    end
end

wire [15:0] hp4_csum = ~(hp4_f_reg[15:0] + {15'd0, hp4_f_reg[16]});

wire [HF_ENTRY_W-1:0] hf_wr_data = {hp4_fields_reg[HF_FIELDS_W-1 -: 8], hp4_csum, hp4_fields_reg[HF_FIELDS_W-9:0]};

wire            hf_valid;
wire [HF_ENTRY_W-1:0] hf_data;
reg             hf_rd_ready;
wire [HDR_AW+1:0] hf_count;

// the engine stalls its input well before the FIFOs fill (count, registered)
nrl_fifo #(
    .WIDTH(HF_ENTRY_W),
    .ADDR_WIDTH(HDR_AW),
    .FULL_GUARD(0),
    .COUNT_REG(1)
)
hdr_fifo_inst (
    .clk(clk),
    .rst(rst),
    .in_data(hf_wr_data),
    .in_valid(hp4_valid_reg),
    /* verilator lint_off PINCONNECTEMPTY */
    .in_ready(),
    /* verilator lint_on PINCONNECTEMPTY */
    .out_data(hf_data),
    .out_valid(hf_valid),
    .out_ready(hf_rd_ready),
    .count(hf_count)
);

/*
 * Payload path
 */
reg [ACC_AW-1:0] rd_addr_reg;     // accumulator address of the next payload beat
reg [ACC_AW-1:0] rd_addr_p1_reg;  // rd_addr_reg + 1
reg [PIDX_W-1:0] pidx_reg;        // index of the next payload beat (saturating)
reg [PIDX_W-1:0] pidx_p1_reg;     // pidx_reg + 1 (saturating)
reg [COPY_W-1:0]   pkt_sc_reg;      // slot copy of the frame streaming in

// accumulator base address of each slot copy (and + 1), constant tables
wire [ACC_AW-1:0] base_rom[0:COPY_N-1];
wire [ACC_AW-1:0] base_p1_rom[0:COPY_N-1];

generate

for (gi = 0; gi < COPY_N; gi = gi + 1) begin : g_base
    localparam integer BASE_I = gi < 2*MAX_SLOTS ? gi*MAX_PAY_BEATS : 0;
    localparam [ACC_AW-1:0] BASE = BASE_I[ACC_AW-1:0];
    localparam [ACC_AW-1:0] BASE_P1 = BASE + 1'b1;
    assign base_rom[gi] = BASE;
    assign base_p1_rom[gi] = BASE_P1;
end

endgenerate

always @(posedge clk) begin
    if (in_hc) begin
        rd_addr_reg <= base_rom[sc_now];
        rd_addr_p1_reg <= base_p1_rom[sc_now];
        pidx_reg <= {PIDX_W{1'b0}};
        pidx_p1_reg <= {{PIDX_W-1{1'b0}}, 1'b1};
        pkt_sc_reg <= sc_now;
    end else if (in_pay) begin
        rd_addr_reg <= rd_addr_p1_reg;
        rd_addr_p1_reg <= rd_addr_p1_reg + 1'b1;
        pidx_reg <= pidx_p1_reg;
        if (pidx_p1_reg != {PIDX_W{1'b1}}) begin
            pidx_p1_reg <= pidx_p1_reg + 1'b1;
        end
    end
end

// accumulator RAM: one beat of LANES elements per word
reg [DATA_WIDTH-1:0] acc_mem[0:ACC_DEPTH-1];
reg [DATA_WIDTH-1:0] acc_rdata_reg;

// exit stage (X) signals
wire                  x_we;
wire [ACC_AW-1:0]     x_addr;
wire [DATA_WIDTH-1:0] x_data;

always @(posedge clk) begin
    if (x_we) begin
        acc_mem[x_addr] <= x_data;
    end
    acc_rdata_reg <= acc_mem[rd_addr_reg];
end

// control pipeline, index k = clocks after P2 (k = FP_LAT is X)
reg                  f_valid_reg[1:FP_LAT];
reg                  f_we_reg[1:FP_LAT];
reg                  f_oe_reg[1:FP_LAT];
reg                  f_last_reg[1:FP_LAT];
reg                  f_sum_reg[1:FP_LAT];
reg                  f_int_reg[1:FP_LAT];
reg [ACC_AW-1:0]     f_addr_reg[1:FP_LAT];
reg [DATA_WIDTH-1:0] f_pass_reg[1:FP_LAT];

// P1
reg                  p1_valid_reg;
reg [DATA_WIDTH-1:0] p1_data_reg;
reg [ACC_AW-1:0]     p1_addr_reg;
reg [PIDX_W-1:0]     p1_pidx_reg;
reg                  p1_samec_reg;
reg [COPY_W-1:0]       p1_sc_reg;
reg                  p1_inr_reg;
reg                  p1_last_reg;
reg                  p1_fx_reg;
reg                  p1_fh_reg;
// P2
reg                  p2_valid_reg;
reg [DATA_WIDTH-1:0] p2_a_reg;
reg [DATA_WIDTH-1:0] p2_b_reg;
reg [ACC_AW-1:0]     p2_addr_reg;
reg [PIDX_W-1:0]     p2_pidx_reg;
reg                  p2_samec_reg;
reg [COPY_W-1:0]       p2_sc_reg;
reg                  p2_inr_reg;
reg                  p2_last_reg;
// last written beat (one clock old)
reg [DATA_WIDTH-1:0] h_data_reg;

// payload index, slot copy and "same copy as the frame streaming in" of the
// beats in f1..f3 (hazard check)
reg [PIDX_W-1:0]     f_pidx_reg[1:3];
reg [COPY_W-1:0]       f_sc_reg[1:3];
reg [3:1]            f_samec_reg;

/*
 * Read-after-write hazard: a payload beat may not start while a beat of the
 * same slot copy and index (same address) is fewer than FP_LAT+1 clocks
 * ahead (in P1, P2, f1..f4): its sum is not ready to be forwarded. Computed
 * a clock early for the beat that comes next, against P1, P2, f1..f3 (one
 * step further down by then): index 0 of the slot copy whose header
 * completes now, the index after the payload beat taken now, or the index
 * of the beat that waits. Beats of the frame streaming in carry "same copy";
 * a completing header re-evaluates it for every beat in flight.
 *
 * The three candidates are kept as nets (keep: the LUT mapper may not merge
 * them with the select into one deep tree of wide LUTs; at the switch level
 * it built 11 levels from p2_pidx_reg to in_hazard_reg without the cut).
 */
(* keep *)
wire hz_first = (p1_valid_reg && p1_pidx_reg == {PIDX_W{1'b0}} && p1_sc_reg == sc_now)
             || (p2_valid_reg && p2_pidx_reg == {PIDX_W{1'b0}} && p2_sc_reg == sc_now)
             || (f_valid_reg[1] && f_pidx_reg[1] == {PIDX_W{1'b0}} && f_sc_reg[1] == sc_now)
             || (f_valid_reg[2] && f_pidx_reg[2] == {PIDX_W{1'b0}} && f_sc_reg[2] == sc_now)
             || (f_valid_reg[3] && f_pidx_reg[3] == {PIDX_W{1'b0}} && f_sc_reg[3] == sc_now);
(* keep *)
wire hz_adv = (p1_valid_reg && p1_samec_reg && p1_pidx_reg == pidx_p1_reg)
           || (p2_valid_reg && p2_samec_reg && p2_pidx_reg == pidx_p1_reg)
           || (f_valid_reg[1] && f_samec_reg[1] && f_pidx_reg[1] == pidx_p1_reg)
           || (f_valid_reg[2] && f_samec_reg[2] && f_pidx_reg[2] == pidx_p1_reg)
           || (f_valid_reg[3] && f_samec_reg[3] && f_pidx_reg[3] == pidx_p1_reg);
(* keep *)
wire hz_stay = (p1_valid_reg && p1_samec_reg && p1_pidx_reg == pidx_reg)
            || (p2_valid_reg && p2_samec_reg && p2_pidx_reg == pidx_reg)
            || (f_valid_reg[1] && f_samec_reg[1] && f_pidx_reg[1] == pidx_reg)
            || (f_valid_reg[2] && f_samec_reg[2] && f_pidx_reg[2] == pidx_reg)
            || (f_valid_reg[3] && f_samec_reg[3] && f_pidx_reg[3] == pidx_reg);

always @(posedge clk) begin
    in_hazard_reg <= in_hc ? hz_first : (in_pay ? hz_adv : hz_stay);
    f_pidx_reg[1] <= p2_pidx_reg;
    f_sc_reg[1] <= p2_sc_reg;
    f_samec_reg[1] <= in_hc ? p2_sc_reg == sc_now : p2_samec_reg;
    f_pidx_reg[2] <= f_pidx_reg[1];
    f_sc_reg[2] <= f_sc_reg[1];
    f_samec_reg[2] <= in_hc ? f_sc_reg[1] == sc_now : f_samec_reg[1];
    f_pidx_reg[3] <= f_pidx_reg[2];
    f_sc_reg[3] <= f_sc_reg[2];
    f_samec_reg[3] <= in_hc ? f_sc_reg[2] == sc_now : f_samec_reg[2];
    if (rst) begin
        in_hazard_reg <= 1'b0;
    end
end

always @(posedge clk) begin
    p1_valid_reg <= in_pay;
    p1_data_reg <= s_axis_tdata;
    p1_addr_reg <= rd_addr_reg;
    p1_pidx_reg <= pidx_reg;
    p1_samec_reg <= 1'b1;
    p1_sc_reg <= pkt_sc_reg;
    p1_inr_reg <= pidx_reg < cfg_pay_beats_reg;
    p1_last_reg <= s_axis_tlast || pidx_reg == cfg_pay_beats_m1_reg;
    // the beat leaving X next clock, or the one leaving now (then in h_data_reg)
    p1_fx_reg <= f_valid_reg[FP_LAT-1] && f_we_reg[FP_LAT-1] && f_addr_reg[FP_LAT-1] == rd_addr_reg;
    p1_fh_reg <= f_valid_reg[FP_LAT] && f_we_reg[FP_LAT] && f_addr_reg[FP_LAT] == rd_addr_reg;

    p2_valid_reg <= p1_valid_reg;
    p2_a_reg <= p1_fx_reg ? x_data : (p1_fh_reg ? h_data_reg : acc_rdata_reg);
    p2_b_reg <= p1_data_reg;
    p2_addr_reg <= p1_addr_reg;
    p2_pidx_reg <= p1_pidx_reg;
    p2_samec_reg <= in_hc ? p1_sc_reg == sc_now : p1_samec_reg;
    p2_sc_reg <= p1_sc_reg;
    p2_inr_reg <= p1_inr_reg;
    p2_last_reg <= p1_last_reg;

    h_data_reg <= x_data;

    if (rst) begin
        p1_valid_reg <= 1'b0;
        p2_valid_reg <= 1'b0;
    end
end

always @(posedge clk) begin
    f_valid_reg[1] <= p2_valid_reg;
    f_we_reg[1] <= p2_inr_reg && (dec_mode_reg == M_ADD || dec_mode_reg == M_STORE);
    f_oe_reg[1] <= p2_inr_reg && dec_out_reg;
    f_last_reg[1] <= p2_last_reg;
    f_sum_reg[1] <= dec_mode_reg == M_ADD;
    f_int_reg[1] <= dec_int_reg;
    f_addr_reg[1] <= p2_addr_reg;
    f_pass_reg[1] <= dec_mode_reg == M_STORE ? p2_b_reg : p2_a_reg;
    for (i = 2; i <= FP_LAT; i = i + 1) begin
        f_valid_reg[i] <= f_valid_reg[i-1];
        f_we_reg[i] <= f_we_reg[i-1];
        f_oe_reg[i] <= f_oe_reg[i-1];
        f_last_reg[i] <= f_last_reg[i-1];
        f_sum_reg[i] <= f_sum_reg[i-1];
        f_int_reg[i] <= f_int_reg[i-1];
        f_addr_reg[i] <= f_addr_reg[i-1];
        f_pass_reg[i] <= f_pass_reg[i-1];
    end
    if (rst) begin
        for (i = 1; i <= FP_LAT; i = i + 1) begin
            f_valid_reg[i] <= 1'b0;
        end
    end
end

// adder lanes: fp32 (fp32_add) and int32 (two 16-bit halves, then delayed)
wire [DATA_WIDTH-1:0] fp_sum;
wire [LANES-1:0]      fp_out_valid;
wire [DATA_WIDTH-1:0] i_sum2;
reg  [DATA_WIDTH-1:0] i_sum_reg[3:FP_LAT];

generate

for (gi = 0; gi < LANES; gi = gi + 1) begin : g_lane
    // verilator lint_off UNUSEDSIGNAL
    wire lane_tag;
    // verilator lint_on UNUSEDSIGNAL

    fp32_add #(
        .TAG_WIDTH(1)
    )
    add_inst (
        .clk(clk),
        .rst(rst),
        .in_valid(p2_valid_reg),
        .in_a(p2_a_reg[32*gi +: 32]),
        .in_b(p2_b_reg[32*gi +: 32]),
        .in_tag(1'b0),
        .out_valid(fp_out_valid[gi]),
        .out_sum(fp_sum[32*gi +: 32]),
        .out_tag(lane_tag)
    );

    // int32: low halves, then high halves with the carry
    reg [16:0] lo_reg;
    reg [15:0] ahi_reg;
    reg [15:0] bhi_reg;
    reg [31:0] sum_reg;

    always @(posedge clk) begin
        lo_reg <= {1'b0, p2_a_reg[32*gi +: 16]} + {1'b0, p2_b_reg[32*gi +: 16]};
        ahi_reg <= p2_a_reg[32*gi+16 +: 16];
        bhi_reg <= p2_b_reg[32*gi+16 +: 16];
        sum_reg <= {ahi_reg + bhi_reg + {15'd0, lo_reg[16]}, lo_reg[15:0]};
    end

    assign i_sum2[32*gi +: 32] = sum_reg;
end

endgenerate

always @(posedge clk) begin
    i_sum_reg[3] <= i_sum2;
    for (i = 4; i <= FP_LAT; i = i + 1) begin
        i_sum_reg[i] <= i_sum_reg[i-1];
    end
end

// X: result, write back, output
assign x_data = f_sum_reg[FP_LAT] ? (f_int_reg[FP_LAT] ? i_sum_reg[FP_LAT] : fp_sum) : f_pass_reg[FP_LAT];
assign x_we = f_valid_reg[FP_LAT] && f_we_reg[FP_LAT];
assign x_addr = f_addr_reg[FP_LAT];

wire pf_wr_en = f_valid_reg[FP_LAT] && f_oe_reg[FP_LAT];
wire pf_done = pf_wr_en && f_last_reg[FP_LAT];

`ifndef SYNTHESIS
always @(posedge clk) begin
    if (!rst && fp_out_valid[0] != f_valid_reg[FP_LAT]) begin
        $error("Error: fp32_add latency differs from FP_LAT (instance %m)");
        $finish;
    end
end
`endif

wire                  pf_valid;
wire [DATA_WIDTH:0]   pf_data;
reg                   pf_rd_ready;
wire [OUT_AW+1:0]     pf_count;

nrl_fifo #(
    .WIDTH(DATA_WIDTH+1),
    .ADDR_WIDTH(OUT_AW),
    .FULL_GUARD(0),
    .COUNT_REG(1)
)
pay_fifo_inst (
    .clk(clk),
    .rst(rst),
    .in_data({f_last_reg[FP_LAT], x_data}),
    .in_valid(pf_wr_en),
    /* verilator lint_off PINCONNECTEMPTY */
    .in_ready(),
    /* verilator lint_on PINCONNECTEMPTY */
    .out_data(pf_data),
    .out_valid(pf_valid),
    .out_ready(pf_rd_ready),
    .count(pf_count)
);

always @(posedge clk) begin
    stall_out_reg <= pf_count >= OUT_STALL || hf_count >= HDR_STALL;
    if (rst) begin
        stall_out_reg <= 1'b1;
    end
end

/*
 * Output assembler: header beats from the header FIFO entry, then the
 * payload, once the whole payload is in the FIFO
 */
wire [7:0]  hf_ports   = hf_data[237:230];
wire [15:0] hf_csum    = hf_data[229:214];
wire [15:0] hf_udp_dst = hf_data[213:198];
wire [31:0] hf_ip_dst  = hf_data[197:166];
wire [47:0] hf_eth_dst = hf_data[165:118];
wire [1:0]  hf_kind    = hf_data[117:116];
wire        hf_err     = hf_data[115];
wire [2:0]  hf_wk      = hf_data[114:112];
wire [31:0] hf_total   = hf_data[111:80];
wire [15:0] hf_slot    = hf_data[79:64];
wire [31:0] hf_seq     = hf_data[63:32];
wire [31:0] hf_aux     = hf_data[31:0];

wire [511:0] o_hdr;

assign o_hdr[8*0 +: 48]   = hf_eth_dst;
assign o_hdr[8*OFF_ETH_SRC +: 16]   = bswap16(cfg_switch_mac[47:32]);
assign o_hdr[8*(OFF_ETH_SRC+2) +: 32] = bswap32(cfg_switch_mac[31:0]);
assign o_hdr[8*OFF_ETHERTYPE +: 16] = bswap16(NRL_ETHERTYPE_IPV4);
assign o_hdr[8*NRL_IP_OFFSET +: 16] = {8'h00, NRL_IPV4_VER_IHL};      // version/IHL, DSCP 0
assign o_hdr[8*OFF_IP_LEN +: 16]    = bswap16(cfg_tl_reg);
assign o_hdr[8*(NRL_IP_OFFSET+4) +: 16] = 16'h0000;                  // identification
assign o_hdr[8*(NRL_IP_OFFSET+6) +: 16] = bswap16(NRL_IP_FLAGS_DF);
assign o_hdr[8*(NRL_IP_OFFSET+8) +: 16] = {NRL_IP_PROTO_UDP, NRL_IP_TTL};
assign o_hdr[8*(NRL_IP_OFFSET+10) +: 16] = bswap16(hf_csum);
assign o_hdr[8*OFF_IP_SRC +: 32]    = bswap32(cfg_switch_ip);
assign o_hdr[8*(OFF_IP_SRC+4) +: 32] = bswap32(hf_ip_dst);
assign o_hdr[8*NRL_UDP_OFFSET +: 16] = bswap16(cfg_udp_port);
assign o_hdr[8*(NRL_UDP_OFFSET+2) +: 16] = bswap16(hf_udp_dst);
assign o_hdr[8*OFF_UDP_LEN +: 16]   = bswap16(cfg_ulen_reg);
assign o_hdr[8*(NRL_UDP_OFFSET+6) +: 16] = 16'h0000;                 // UDP checksum: none
assign o_hdr[8*NRL_OFF_VERSION +: 8] = NRL_VERSION;
assign o_hdr[8*NRL_OFF_OPCODE +: 8]  = hf_kind == K_UP ? NRL_OP_GRADIENT : NRL_OP_RESULT;
// flags: ERROR (bit 4), FROM_SWITCH (bit 3, always), RESEND (bit 2), INT32 (bit 0)
assign o_hdr[8*NRL_OFF_FLAGS +: 8]   = {3'd0, hf_err, 1'b1, hf_kind == K_RESEND, 1'b0, cfg_dtype};
assign o_hdr[8*NRL_OFF_JOB +: 8] = cfg_job_id;
assign o_hdr[8*NRL_OFF_WORKER +: 16] = bswap16({13'd0, hf_kind == K_UP ? cfg_leaf_id : hf_wk});
assign o_hdr[8*NRL_OFF_SLOT +: 16] = bswap16(hf_slot);
assign o_hdr[8*NRL_OFF_SEQ +: 32] = bswap32(hf_seq);
assign o_hdr[8*NRL_OFF_COUNT +: 16] = bswap16({7'd0, cfg_elems});
assign o_hdr[8*NRL_OFF_AUX +: 32] = bswap32(hf_aux);
assign o_hdr[8*NRL_OFF_TOTAL +: 32] = bswap32(hf_total);

wire [DATA_WIDTH-1:0] o_hdr_b0 = o_hdr[DATA_WIDTH-1:0];
wire [DATA_WIDTH-1:0] o_hdr_b1;

generate

if (HDR_BEATS == 2) begin : g_ohdr2
    assign o_hdr_b1 = o_hdr[511 -: DATA_WIDTH];
end else begin : g_ohdr1
    assign o_hdr_b1 = o_hdr[DATA_WIDTH-1:0];
end

endgenerate

localparam [1:0] O_IDLE = 2'd0, O_HDR = 2'd1, O_PAY = 2'd2;

reg [1:0]            o_state_reg, o_state_next;
reg [OUT_AW:0]       o_done_reg, o_done_next;
reg [DATA_WIDTH-1:0] m_tdata_reg, m_tdata_next;
reg                  m_tvalid_reg, m_tvalid_next;
reg                  m_tlast_reg, m_tlast_next;
reg [31:0]           m_tuser_reg, m_tuser_next;

wire o_adv = !m_tvalid_reg || m_axis_tready;

always @* begin
    o_state_next = o_state_reg;
    o_done_next = o_done_reg + {{OUT_AW{1'b0}}, pf_done};
    m_tdata_next = m_tdata_reg;
    m_tvalid_next = m_tvalid_reg && !m_axis_tready;
    m_tlast_next = m_tlast_reg;
    m_tuser_next = m_tuser_reg;
    pf_rd_ready = 1'b0;
    hf_rd_ready = 1'b0;

    case (o_state_reg)
        O_IDLE: begin
            if (o_adv && hf_valid && o_done_reg != {OUT_AW+1{1'b0}}) begin
                m_tdata_next = o_hdr_b0;
                m_tvalid_next = 1'b1;
                m_tlast_next = 1'b0;
                m_tuser_next = {hf_ports, 8'd0, cfg_flen_reg};
                o_done_next = o_done_reg - {{OUT_AW{1'b0}}, !pf_done};
                o_state_next = HDR_BEATS == 2 ? O_HDR : O_PAY;
            end
        end
        O_HDR: begin
            if (o_adv) begin
                m_tdata_next = o_hdr_b1;
                m_tvalid_next = 1'b1;
                m_tlast_next = 1'b0;
                o_state_next = O_PAY;
            end
        end
        default: begin
            if (o_adv && pf_valid) begin
                m_tdata_next = pf_data[DATA_WIDTH-1:0];
                m_tvalid_next = 1'b1;
                m_tlast_next = pf_data[DATA_WIDTH];
                pf_rd_ready = 1'b1;
                if (pf_data[DATA_WIDTH]) begin
                    hf_rd_ready = 1'b1;
                    o_state_next = O_IDLE;
                end
            end
        end
    endcase
end

always @(posedge clk) begin
    o_state_reg <= o_state_next;
    o_done_reg <= o_done_next;
    m_tdata_reg <= m_tdata_next;
    m_tvalid_reg <= m_tvalid_next;
    m_tlast_reg <= m_tlast_next;
    m_tuser_reg <= m_tuser_next;

    if (rst) begin
        o_state_reg <= O_IDLE;
        o_done_reg <= {OUT_AW+1{1'b0}};
        m_tvalid_reg <= 1'b0;
        m_tlast_reg <= 1'b0;
    end
end

assign m_axis_tdata = m_tdata_reg;
assign m_axis_tkeep = {KEEP_WIDTH{1'b1}};
assign m_axis_tvalid = m_tvalid_reg;
assign m_axis_tlast = m_tlast_reg;
assign m_axis_tuser = {{USER_WIDTH-32{1'b0}}, m_tuser_reg};

// inputs the engine does not look at
// verilator lint_off UNUSEDSIGNAL
wire unused_in = &{1'b0, s_axis_tkeep, s_axis_tuser[USER_WIDTH-1:24], fp_out_valid,
                   hdr_now, cfg_pay_beats_full, cfg_ctrl[1], hd_flags_reg[3:1],
                   m_role[2:1], rd_lo[15:0], rd_hi0[14:0], rd_hi1[14:0]};
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
`default_nettype wire
