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
 * Gradient aggregation engine egress: reply frames.
 *
 * Builds the frames grad_agg sends (docs/protocol.md sections 4 and 7):
 * RESULT multicast to the members, RESULT re-sent to one sender, ERROR
 * RESULT, upward GRADIENT to the parent. Each reply request of
 * grad_agg_ingress (req_*) goes through header preparation (HP2..HP4:
 * destination MAC, IPv4, UDP port and egress port bitmap by kind; the IPv4
 * header checksum) into the header FIFO; the output assembler sends a reply
 * once its whole payload is in the payload FIFO (store and forward): the
 * header beats (64 bytes) built from the header FIFO entry and the
 * configuration, then the payload, on m_axis with the destination port
 * bitmap in TUSER[31:24] and the frame length in TUSER[15:0].
 *
 * Interface to the rest of grad_agg:
 *   req_*           in: reply requests (grad_agg_ingress), one per pulse of
 *                   req_valid
 *   hdr_wr_*        out: header FIFO entry, HP4 (no backpressure: the
 *                   ingress stalls before the FIFO fills)
 *   hdr_rd_*        in: header FIFO head, popped with the reply's first
 *                   header beat (the rest of the header is kept in a
 *                   register), so the payload FIFO's block RAM read
 *                   reaches only this module's state and output registers
 *   pay_rd_*        in: payload FIFO head {last, beat}
 *   pay_wr_done     in: a reply's last payload beat enters the payload FIFO
 *
 * Header FIFO entry (MSB first, HDR_ENTRY_W bits): the reply's job's
 * values the output assembler writes (elems, leaf id, job id, dtype, frame,
 * UDP and IPv4 lengths), ports, csum, udp_dst, ip_dst, eth_dst, kind, error,
 * worker, total, slot, seq, aux.
 *
 * Jobs (docs/protocol.md section 11): a request names its job (req_job); HP2
 * takes that job's registers and the values precomputed from them (a copy
 * per job), and what the output needs travels in the header FIFO entry.
 */
module grad_agg_egress #
(
    // Width of the AXI4-Stream data bus (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of tkeep (one bit per byte)
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of tuser (SUME layout in the low 32 bits)
    parameter USER_WIDTH = 128,
    // Payload FIFO depth in beats (power of two)
    parameter OUT_DEPTH = 64,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of a configuration word (grad_agg_cfg.vh CF_W; do not override)
    parameter CF_WIDTH = 644,
    // Width of a header FIFO entry (computed; do not override)
    parameter HDR_ENTRY_W = 69 + 8 + 16 + 16 + 32 + 48 + 2 + 1 + 3 + 32 + 16 + 32 + 32
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * Configuration (grad_agg_regs)
     */
    input  wire [15:0]             cfg_udp_port,
    input  wire [31:0]             cfg_switch_ip,
    input  wire [47:0]             cfg_switch_mac,
    input  wire [31:0]             cfg_mcast_ip,
    // every job's configuration word (grad_agg_cfg.vh)
    input  wire [JOBS*CF_WIDTH-1:0] cfg_jobs,

    /*
     * Reply requests in (grad_agg_ingress)
     */
    input  wire                    req_valid,
    input  wire [JW-1:0]           req_job,
    input  wire [1:0]              req_kind,
    input  wire [15:0]             req_slot,
    input  wire [31:0]             req_seq,
    input  wire [31:0]             req_aux,
    input  wire                    req_error,
    input  wire [2:0]              req_worker,
    input  wire [31:0]             req_total,
    input  wire [47:0]             req_eth_src,
    input  wire [31:0]             req_ip_src,
    input  wire [15:0]             req_udp_src,
    input  wire [7:0]              req_port,

    /*
     * Header FIFO
     */
    output wire [HDR_ENTRY_W-1:0]  hdr_wr_data,
    output wire                    hdr_wr_valid,
    input  wire [HDR_ENTRY_W-1:0]  hdr_rd_data,
    input  wire                    hdr_rd_valid,
    output wire                    hdr_rd_ready,

    /*
     * Payload FIFO
     */
    input  wire [DATA_WIDTH:0]     pay_rd_data,
    input  wire                    pay_rd_valid,
    output wire                    pay_rd_ready,
    input  wire                    pay_wr_done,

    /*
     * Reply frames out
     */
    output wire [DATA_WIDTH-1:0]   m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]   m_axis_tkeep,
    output wire                    m_axis_tvalid,
    input  wire                    m_axis_tready,
    output wire                    m_axis_tlast,
    output wire [USER_WIDTH-1:0]   m_axis_tuser
);

localparam BYTES = DATA_WIDTH/8;
// beats holding bytes 0..63 (Ethernet + IPv4 + UDP + protocol header)
localparam HDR_BEATS = 64/BYTES;
localparam OUT_AW = $clog2(OUT_DEPTH);
// the same entry without the checksum (header preparation pipeline)
localparam HDR_FIELDS_W = HDR_ENTRY_W - 16;
// the job's values at the top of the entry
localparam JV_W = 69;

// reply kinds (req_kind; grad_agg_ingress has the same)
// verilator lint_off UNUSEDPARAM
localparam [1:0] K_MCAST = 2'd0, K_RESEND = 2'd1, K_UP = 2'd2;
// verilator lint_on UNUSEDPARAM

// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"
`include "grad_agg_cfg.vh"
// verilator lint_on UNUSEDPARAM

// frame byte offsets of the Ethernet, IPv4 and UDP fields written here
localparam OFF_ETH_SRC = 6;                     // Ethernet source address
localparam OFF_ETHERTYPE = NRL_ETH_LEN - 2;     // EtherType
localparam OFF_IP_LEN = NRL_IP_OFFSET + 2;      // IPv4 total length
localparam OFF_IP_SRC = NRL_IP_OFFSET + 12;     // IPv4 source address
localparam OFF_UDP_LEN = NRL_UDP_OFFSET + 4;    // UDP length
localparam [15:0] LEN_PAYLOAD = NRL_PAYLOAD_OFFSET[15:0];  // frame bytes before the payload

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
    if ((1 << OUT_AW) != OUT_DEPTH) begin
        $error("Error: OUT_DEPTH must be a power of two (instance %m)");
        $finish;
    end
    if (HDR_ENTRY_W != 307 || CF_WIDTH != CF_W) begin
        $error("Error: HDR_ENTRY_W is computed, do not override it (instance %m)");
        $finish;
    end
end

genvar gi, mi;

// byte swaps from network order fields to AXI4-Stream byte lanes
function [15:0] bswap16(input [15:0] v);
    bswap16 = {v[7:0], v[15:8]};
endfunction

function [31:0] bswap32(input [31:0] v);
    bswap32 = {v[7:0], v[15:8], v[23:16], v[31:24]};
endfunction

/*
 * Values derived from each job's configuration (registered; a job's
 * registers are only written while it is idle)
 */
reg [JOBS*8-1:0]  cfg_mcast_ports_q;      // egress ports of the members
reg [JOBS*16-1:0] cfg_ip_len_q;           // IPv4 total length
reg [JOBS*16-1:0] cfg_udp_len_q;          // UDP length
reg [JOBS*16-1:0] cfg_frame_len_q;        // frame length
reg [JOBS*17-1:0] cfg_csum_a_q;
reg [16:0]        cfg_csum_b_reg;
reg [JOBS*18-1:0] cfg_csum_base_q;        // checksum sum without the destination
reg [JOBS*16-1:0] cfg_up_udp_q;           // upward UDP destination port

generate

for (gi = 0; gi < JOBS; gi = gi + 1) begin : g_job
    // verilator lint_off UNUSEDSIGNAL
    wire [CF_W-1:0] w = cfg_jobs[CF_W*gi +: CF_W];
    // verilator lint_on UNUSEDSIGNAL
    wire [3:0] members = w[CF_MEMBERS +: 4];
    wire [15:0] elems_x4 = {5'd0, w[CF_ELEMS +: 9], 2'b00};
    wire [15:0] parent_udp = w[CF_PARENT_UDP +: 16];
    wire [8*8-1:0] mcast_port_sel;

    for (mi = 0; mi < 8; mi = mi + 1) begin : g_mcast
        localparam [3:0] IDX = mi;
        assign mcast_port_sel[8*mi +: 8] = IDX < members ? w[CF_MPORT + 8*mi +: 8] : 8'd0;
    end

    always @(posedge clk) begin
        cfg_mcast_ports_q[8*gi +: 8] <= mcast_port_sel[0 +: 8] | mcast_port_sel[8 +: 8]
            | mcast_port_sel[16 +: 8] | mcast_port_sel[24 +: 8] | mcast_port_sel[32 +: 8]
            | mcast_port_sel[40 +: 8] | mcast_port_sel[48 +: 8] | mcast_port_sel[56 +: 8];
        cfg_ip_len_q[16*gi +: 16] <= elems_x4 + 16'd50;
        cfg_udp_len_q[16*gi +: 16] <= elems_x4 + 16'd30;
        cfg_frame_len_q[16*gi +: 16] <= elems_x4 + LEN_PAYLOAD;
        cfg_csum_a_q[17*gi +: 17] <= {1'b0, cfg_ip_len_q[16*gi +: 16]} + {1'b0, cfg_switch_ip[31:16]};
        cfg_csum_base_q[18*gi +: 18] <= {1'b0, cfg_csum_a_q[17*gi +: 17]} + {1'b0, cfg_csum_b_reg};
        cfg_up_udp_q[16*gi +: 16] <= parent_udp != 16'd0 ? parent_udp : cfg_udp_port;
    end
end

endgenerate

always @(posedge clk) begin
    cfg_csum_b_reg <= {1'b0, cfg_switch_ip[15:0]} + 17'h0c511;
end

/*
 * Header preparation: destination (HP2), checksum (HP3, HP4)
 */
// the request's job's registers and values (a J-to-1 select by job index)
reg [31:0]     cfg_parent_ip;
reg [7:0]      cfg_uplink_port;
reg [7:0]      cfg_mcast_ports;
reg [15:0]     cfg_up_udp;
reg [17:0]     cfg_csum_base;
// {elems, leaf id, job id, dtype, frame length, UDP length, IPv4 length}
reg [JV_W-1:0] rq_values;

integer j;

always @* begin
    cfg_parent_ip = 32'd0;
    cfg_uplink_port = 8'd0;
    cfg_mcast_ports = 8'd0;
    cfg_up_udp = 16'd0;
    cfg_csum_base = 18'd0;
    rq_values = {JV_W{1'b0}};
    for (j = 0; j < JOBS; j = j + 1) begin
        if (req_job == j[JW-1:0]) begin
            cfg_parent_ip = cfg_jobs[CF_W*j + CF_PARENT_IP +: 32];
            cfg_uplink_port = cfg_jobs[CF_W*j + CF_UPLINK +: 8];
            cfg_mcast_ports = cfg_mcast_ports_q[8*j +: 8];
            cfg_up_udp = cfg_up_udp_q[16*j +: 16];
            cfg_csum_base = cfg_csum_base_q[18*j +: 18];
            rq_values = {cfg_jobs[CF_W*j + CF_ELEMS +: 9], cfg_jobs[CF_W*j + CF_LEAF_ID +: 3],
                         cfg_jobs[CF_W*j + CF_JOB_ID +: 8], cfg_jobs[CF_W*j + CF_DTYPE],
                         cfg_frame_len_q[16*j +: 16], cfg_udp_len_q[16*j +: 16], cfg_ip_len_q[16*j +: 16]};
        end
    end
end

wire req_resend = req_kind == K_RESEND;
wire req_up = req_kind == K_UP;
wire [31:0] req_ip_dst = req_resend ? req_ip_src : (req_up ? cfg_parent_ip : cfg_mcast_ip);

reg [JV_W-1:0] hp2_values_reg;
reg [17:0]     hp2_csum_base_reg;
reg        hp2_valid_reg;
reg [1:0]  hp2_kind_reg;
reg [15:0] hp2_slot_reg;
reg [31:0] hp2_seq_reg;
reg [31:0] hp2_aux_reg;
reg        hp2_error_reg;
reg [2:0]  hp2_worker_reg;
reg [31:0] hp2_total_reg;
reg [47:0] hp2_eth_dst_reg;
reg [31:0] hp2_ip_dst_reg;
reg [15:0] hp2_udp_dst_reg;
reg [7:0]  hp2_ports_reg;
reg [16:0] hp2_ip_dst_sum_reg;  // the destination's two 16-bit words added

always @(posedge clk) begin
    hp2_valid_reg <= req_valid;
    hp2_values_reg <= rq_values;
    hp2_csum_base_reg <= cfg_csum_base;
    hp2_kind_reg <= req_kind;
    hp2_slot_reg <= req_slot;
    hp2_seq_reg <= req_seq;
    hp2_aux_reg <= req_aux;
    hp2_error_reg <= req_error;
    hp2_worker_reg <= req_worker;
    hp2_total_reg <= req_total;
    hp2_eth_dst_reg <= req_resend ? req_eth_src : 48'hffffffffffff;
    hp2_ip_dst_reg <= req_ip_dst;
    hp2_udp_dst_reg <= req_resend ? req_udp_src : (req_up ? cfg_up_udp : cfg_udp_port);
    hp2_ports_reg <= req_resend ? req_port : (req_up ? cfg_uplink_port : cfg_mcast_ports);
    hp2_ip_dst_sum_reg <= {1'b0, req_ip_dst[31:16]} + {1'b0, req_ip_dst[15:0]};
    if (rst) begin
        hp2_valid_reg <= 1'b0;
    end
end

reg                    hp3_valid_reg;
reg [HDR_FIELDS_W-1:0] hp3_fields_reg;
reg [18:0]             hp3_csum_sum_reg;   // checksum words added
reg                    hp4_valid_reg;
reg [HDR_FIELDS_W-1:0] hp4_fields_reg;
reg [16:0]             hp4_csum_fold_reg;  // the sum folded once

// entry without the checksum: {ports, udp_dst, ip_dst, eth_dst, kind, error,
// worker, total, slot, seq, aux}
wire [HDR_FIELDS_W-1:0] hp2_fields = {hp2_values_reg, hp2_ports_reg, hp2_udp_dst_reg, hp2_ip_dst_reg, hp2_eth_dst_reg,
                                      hp2_kind_reg, hp2_error_reg, hp2_worker_reg, hp2_total_reg,
                                      hp2_slot_reg, hp2_seq_reg, hp2_aux_reg};

always @(posedge clk) begin
    hp3_valid_reg <= hp2_valid_reg;
    hp3_fields_reg <= hp2_fields;
    hp3_csum_sum_reg <= {1'b0, hp2_csum_base_reg} + {2'b00, hp2_ip_dst_sum_reg};
    hp4_valid_reg <= hp3_valid_reg;
    hp4_fields_reg <= hp3_fields_reg;
    hp4_csum_fold_reg <= {1'b0, hp3_csum_sum_reg[15:0]} + {14'd0, hp3_csum_sum_reg[18:16]};
    if (rst) begin
        hp3_valid_reg <= 1'b0;
        hp4_valid_reg <= 1'b0;
    end
end

wire [15:0] hp4_csum = ~(hp4_csum_fold_reg[15:0] + {15'd0, hp4_csum_fold_reg[16]});

assign hdr_wr_data = {hp4_fields_reg[HDR_FIELDS_W-1 -: JV_W+8], hp4_csum, hp4_fields_reg[HDR_FIELDS_W-JV_W-9:0]};
assign hdr_wr_valid = hp4_valid_reg;

/*
 * Output assembler: header beats from the header FIFO entry, then the
 * payload, once the whole payload is in the FIFO
 */
wire [8:0]  hf_elems   = hdr_rd_data[306:298];
wire [2:0]  hf_leaf_id = hdr_rd_data[297:295];
wire [7:0]  hf_job_id  = hdr_rd_data[294:287];
wire        hf_dtype   = hdr_rd_data[286];
wire [15:0] hf_frame_len = hdr_rd_data[285:270];
wire [15:0] hf_udp_len = hdr_rd_data[269:254];
wire [15:0] hf_ip_len  = hdr_rd_data[253:238];
wire [7:0]  hf_ports   = hdr_rd_data[237:230];
wire [15:0] hf_csum    = hdr_rd_data[229:214];
wire [15:0] hf_udp_dst = hdr_rd_data[213:198];
wire [31:0] hf_ip_dst  = hdr_rd_data[197:166];
wire [47:0] hf_eth_dst = hdr_rd_data[165:118];
wire [1:0]  hf_kind    = hdr_rd_data[117:116];
wire        hf_error   = hdr_rd_data[115];
wire [2:0]  hf_worker  = hdr_rd_data[114:112];
wire [31:0] hf_total   = hdr_rd_data[111:80];
wire [15:0] hf_slot    = hdr_rd_data[79:64];
wire [31:0] hf_seq     = hdr_rd_data[63:32];
wire [31:0] hf_aux     = hdr_rd_data[31:0];

wire [511:0] out_hdr;

assign out_hdr[8*0 +: 48]   = hf_eth_dst;
assign out_hdr[8*OFF_ETH_SRC +: 16]   = bswap16(cfg_switch_mac[47:32]);
assign out_hdr[8*(OFF_ETH_SRC+2) +: 32] = bswap32(cfg_switch_mac[31:0]);
assign out_hdr[8*OFF_ETHERTYPE +: 16] = bswap16(NRL_ETHERTYPE_IPV4);
assign out_hdr[8*NRL_IP_OFFSET +: 16] = {8'h00, NRL_IPV4_VER_IHL};      // version/IHL, DSCP 0
assign out_hdr[8*OFF_IP_LEN +: 16]    = bswap16(hf_ip_len);
assign out_hdr[8*(NRL_IP_OFFSET+4) +: 16] = 16'h0000;                  // identification
assign out_hdr[8*(NRL_IP_OFFSET+6) +: 16] = bswap16(NRL_IP_FLAGS_DF);
assign out_hdr[8*(NRL_IP_OFFSET+8) +: 16] = {NRL_IP_PROTO_UDP, NRL_IP_TTL};
assign out_hdr[8*(NRL_IP_OFFSET+10) +: 16] = bswap16(hf_csum);
assign out_hdr[8*OFF_IP_SRC +: 32]    = bswap32(cfg_switch_ip);
assign out_hdr[8*(OFF_IP_SRC+4) +: 32] = bswap32(hf_ip_dst);
assign out_hdr[8*NRL_UDP_OFFSET +: 16] = bswap16(cfg_udp_port);
assign out_hdr[8*(NRL_UDP_OFFSET+2) +: 16] = bswap16(hf_udp_dst);
assign out_hdr[8*OFF_UDP_LEN +: 16]   = bswap16(hf_udp_len);
assign out_hdr[8*(NRL_UDP_OFFSET+6) +: 16] = 16'h0000;                 // UDP checksum: none
assign out_hdr[8*NRL_OFF_VERSION +: 8] = NRL_VERSION;
assign out_hdr[8*NRL_OFF_OPCODE +: 8]  = hf_kind == K_UP ? NRL_OP_GRADIENT : NRL_OP_RESULT;
// flags: ERROR (bit 4), FROM_SWITCH (bit 3, always), RESEND (bit 2), INT32 (bit 0)
assign out_hdr[8*NRL_OFF_FLAGS +: 8]   = {3'd0, hf_error, 1'b1, hf_kind == K_RESEND, 1'b0, hf_dtype};
assign out_hdr[8*NRL_OFF_JOB +: 8] = hf_job_id;
assign out_hdr[8*NRL_OFF_WORKER +: 16] = bswap16({13'd0, hf_kind == K_UP ? hf_leaf_id : hf_worker});
assign out_hdr[8*NRL_OFF_SLOT +: 16] = bswap16(hf_slot);
assign out_hdr[8*NRL_OFF_SEQ +: 32] = bswap32(hf_seq);
assign out_hdr[8*NRL_OFF_COUNT +: 16] = bswap16({7'd0, hf_elems});
assign out_hdr[8*NRL_OFF_AUX +: 32] = bswap32(hf_aux);
assign out_hdr[8*NRL_OFF_TOTAL +: 32] = bswap32(hf_total);

wire [DATA_WIDTH-1:0] out_hdr_b0 = out_hdr[DATA_WIDTH-1:0];
wire [DATA_WIDTH-1:0] out_hdr_b1;

generate

if (HDR_BEATS == 2) begin : g_ohdr2
    assign out_hdr_b1 = out_hdr[511 -: DATA_WIDTH];
end else begin : g_ohdr1
    assign out_hdr_b1 = out_hdr[DATA_WIDTH-1:0];
end

endgenerate

localparam [1:0] O_IDLE = 2'd0, O_HDR = 2'd1, O_PAY = 2'd2;

reg [1:0]            o_state_reg, o_state_next;
// the second header beat, taken with the first (the header FIFO entry is
// popped then); unused when one beat holds the header
reg [DATA_WIDTH-1:0] o_hdr_b1_reg, o_hdr_b1_next;
// replies whose whole payload is in the payload FIFO
reg [OUT_AW:0]       o_ready_pkts_reg, o_ready_pkts_next;
reg [DATA_WIDTH-1:0] m_tdata_reg, m_tdata_next;
reg                  m_tvalid_reg, m_tvalid_next;
reg                  m_tlast_reg, m_tlast_next;
reg [31:0]           m_tuser_reg, m_tuser_next;
reg                  pay_pop;   // combinational: the payload FIFO's out_ready
reg                  hdr_pop;   // combinational: the header FIFO's out_ready

wire o_adv = !m_tvalid_reg || m_axis_tready;

always @* begin
    o_state_next = o_state_reg;
    o_ready_pkts_next = o_ready_pkts_reg + {{OUT_AW{1'b0}}, pay_wr_done};
    o_hdr_b1_next = o_hdr_b1_reg;
    m_tdata_next = m_tdata_reg;
    m_tvalid_next = m_tvalid_reg && !m_axis_tready;
    m_tlast_next = m_tlast_reg;
    m_tuser_next = m_tuser_reg;
    pay_pop = 1'b0;
    hdr_pop = 1'b0;

    case (o_state_reg)
        O_IDLE: begin
            if (o_adv && hdr_rd_valid && o_ready_pkts_reg != {OUT_AW+1{1'b0}}) begin
                m_tdata_next = out_hdr_b0;
                m_tvalid_next = 1'b1;
                m_tlast_next = 1'b0;
                m_tuser_next = {hf_ports, 8'd0, hf_frame_len};
                o_ready_pkts_next = o_ready_pkts_reg - {{OUT_AW{1'b0}}, !pay_wr_done};
                o_hdr_b1_next = out_hdr_b1;
                hdr_pop = 1'b1;
                o_state_next = HDR_BEATS == 2 ? O_HDR : O_PAY;
            end
        end
        O_HDR: begin
            if (o_adv) begin
                m_tdata_next = o_hdr_b1_reg;
                m_tvalid_next = 1'b1;
                m_tlast_next = 1'b0;
                o_state_next = O_PAY;
            end
        end
        default: begin
            if (o_adv && pay_rd_valid) begin
                m_tdata_next = pay_rd_data[DATA_WIDTH-1:0];
                m_tvalid_next = 1'b1;
                m_tlast_next = pay_rd_data[DATA_WIDTH];
                pay_pop = 1'b1;
                if (pay_rd_data[DATA_WIDTH]) begin
                    o_state_next = O_IDLE;
                end
            end
        end
    endcase
end

always @(posedge clk) begin
    o_state_reg <= o_state_next;
    o_ready_pkts_reg <= o_ready_pkts_next;
    o_hdr_b1_reg <= o_hdr_b1_next;
    m_tdata_reg <= m_tdata_next;
    m_tvalid_reg <= m_tvalid_next;
    m_tlast_reg <= m_tlast_next;
    m_tuser_reg <= m_tuser_next;

    if (rst) begin
        o_state_reg <= O_IDLE;
        o_ready_pkts_reg <= {OUT_AW+1{1'b0}};
        m_tvalid_reg <= 1'b0;
        m_tlast_reg <= 1'b0;
    end
end

assign pay_rd_ready = pay_pop;
assign hdr_rd_ready = hdr_pop;

assign m_axis_tdata = m_tdata_reg;
assign m_axis_tkeep = {KEEP_WIDTH{1'b1}};
assign m_axis_tvalid = m_tvalid_reg;
assign m_axis_tlast = m_tlast_reg;
assign m_axis_tuser = {{USER_WIDTH-32{1'b0}}, m_tuser_reg};

endmodule

`resetall
`default_nettype wire
