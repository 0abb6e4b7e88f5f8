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
 * from the GRADIENT that opened it), step id (step: the aux of that
 * GRADIENT), the RESULT aux (contribution count in bits 3:0, member id of
 * the j-th contribution added in bits 8+3j..10+3j; a leaf's DONE copy: the
 * parent's aux; an error copy: the refused length, or its total for a step
 * mismatch), an error flag and culprit, and its state. A GRADIENT whose
 * total differs from its round's, or in sync mode whose aux (step id)
 * differs from the round's step, is dropped as MISMATCH: an OPEN or UP
 * copy becomes an error copy (ERROR RESULT multicast, worker = culprit), a
 * DONE copy re-sends its RESULT to the sender (for a step mismatch on a
 * copy that is no error copy: with ERROR forced on, worker = the sender,
 * aux = total). A GRADIENT whose round is AGG_AHEAD_ROUNDS or more (below
 * 2^31) ahead of AGG_EPOCH is dropped as AHEAD.
 *
 *   grad_agg_regs     AXI4-Lite register map, configuration, counters
 *   grad_agg_ingress  header capture, checks of section 6, slot state RAM
 *                     and verdict (D1, D2), reply request; the payload
 *                     through the accumulator RAM and the adder lanes
 *                     (P1, P2, X) into the payload FIFO; one beat per clock
 *   header FIFO       reply headers, prepared by the egress (HP2..HP4)
 *   payload FIFO      reply payload beats {last, beat}
 *   grad_agg_egress   destination and IPv4 checksum of each reply request
 *                     into the header FIFO; output assembler: a reply's
 *                     header beats, then its payload once the whole payload
 *                     is in the FIFO (store and forward)
 *
 * Pipeline (one input beat per clock; the stages are described in the
 * submodules):
 *   header    P0 capture, D1 checks, D2 verdict, HP1 reply request (ingress),
 *             HP2..HP4 destination and checksum (egress), header FIFO
 *   payload   P1 accumulator read, P2 adder operands, X = P2 + 6 sum
 *             written back (ingress), payload FIFO
 *   output    header beats, then the payload (egress)
 * Packets for the same slot copy need 7 beats between same-address beats
 * (the read-modify-write loop); shorter back-to-back packets for one copy
 * are spaced by input stalls, all other traffic runs at one beat per clock
 * until the output FIFOs fill under backpressure: the input stalls while
 * either FIFO lacks room for what may still arrive (OUT_MARGIN beats,
 * HDR_MARGIN packets; the flag is registered).
 *
 * The engine trusts the switch lookup: every frame it receives is a protocol
 * frame (IPv4/UDP to UDP_PORT); TUSER length is the frame length.
 *
 * Jobs (docs/protocol.md section 11; JOBS = 1 to 8): every job has its own
 * AGG_* registers, member table and counters (register page j: AXI4-Lite
 * address bits above 11 with JOBS > 1); the switch's job table
 * (nrl_axil_split: job_id, job_enable, job_slot_base, job_slot_count) names
 * the enabled jobs and their slot ranges. grad_agg_job looks up each frame's
 * job two clocks ahead of the ingress (a frame naming no enabled job is
 * BAD_JOB, counted in job 0's page); the frame's slot s is memory slot
 * JOB_SLOT_BASE + s, and below min(AGG_SLOTS, JOB_SLOT_COUNT) or BAD_SLOT;
 * its checks, verdict, counters and reply use its job's registers. With
 * JOBS = 1 the job is the engine's JOB_ID with every slot (the job_* inputs
 * are unused), and a configuration write invalidates every copy; with more
 * the switch frees the written job's slots (slot_free).
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
    parameter BUILD_HASH = 32'd0,
    // Jobs served (JOBS, docs/protocol.md section 11), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of the AXI4-Lite address: the page (job) above bit 12 (computed)
    parameter AW = JOBS > 1 ? 12 + JW : 12
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
    input  wire [AW-1:0]           s_axil_awaddr,
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
    input  wire [AW-1:0]           s_axil_araddr,
    input  wire [2:0]              s_axil_arprot,
    input  wire                    s_axil_arvalid,
    output wire                    s_axil_arready,
    output wire [31:0]             s_axil_rdata,
    output wire [1:0]              s_axil_rresp,
    output wire                    s_axil_rvalid,
    input  wire                    s_axil_rready,

    /*
     * The switch's job table (nrl_axil_split; unused with JOBS = 1): every
     * job's JOB_ID, JOB_SLOT_BASE, JOB_SLOT_COUNT and JOB_ENABLE bit
     */
    input  wire [JOBS*8-1:0]       job_id,
    input  wire [JOBS-1:0]         job_enable,
    input  wire [JOBS*7-1:0]       job_slot_base,
    input  wire [JOBS*7-1:0]       job_slot_count,

    /*
     * Slot copies to free (the switch's job table, nrl_axil_split slot_free:
     * docs/protocol.md section 11), a pulse per memory slot; 0 when unused
     */
    input  wire [MAX_SLOTS-1:0]    slot_free
);

// verilator lint_off UNUSEDPARAM
`include "grad_agg_cfg.vh"
// verilator lint_on UNUSEDPARAM

localparam BYTES = DATA_WIDTH/8;
// beats per slot copy at MAX_ELEMS
localparam MAX_PAY_BEATS = MAX_ELEMS*4/BYTES;
localparam OUT_AW = $clog2(OUT_DEPTH);
localparam HDR_AW = $clog2(HDR_DEPTH);
// beats that may still reach the payload FIFO after the stall decision
localparam OUT_MARGIN = 12;
// packets that may still reach the header FIFO after the stall decision
localparam HDR_MARGIN = 10;
// header FIFO entry (grad_agg_egress): {job values, ports, csum, udp_dst,
// ip_dst, eth_dst, kind, error, worker, total, slot, seq, aux}
localparam HF_ENTRY_W = 69 + 8 + 16 + 16 + 32 + 48 + 2 + 1 + 3 + 32 + 16 + 32 + 32;
localparam [OUT_AW+1:0] OUT_STALL = OUT_DEPTH - OUT_MARGIN;
localparam [HDR_AW+1:0] HDR_STALL = HDR_DEPTH - HDR_MARGIN;

// bad parameter check (the others: grad_agg_ingress, grad_agg_egress)
initial begin
    if ((1 << OUT_AW) != OUT_DEPTH || OUT_DEPTH <= MAX_PAY_BEATS + OUT_MARGIN) begin
        $error("Error: OUT_DEPTH must be a power of two > MAX_ELEMS*32/DATA_WIDTH + 12 (instance %m)");
        $finish;
    end
    if ((1 << HDR_AW) != HDR_DEPTH || HDR_DEPTH < 16) begin
        $error("Error: HDR_DEPTH must be a power of two >= 16 (instance %m)");
        $finish;
    end
end

/*
 * Registers
 */
wire [1:0]      cfg_ctrl;
wire [7:0]      cfg_job_id;
wire [15:0]     cfg_udp_port;
wire [31:0]     cfg_switch_ip;
wire [47:0]     cfg_switch_mac;
wire [31:0]     cfg_mcast_ip;
wire [JOBS*CFR_W-1:0] cfg_regs;
wire            cfg_invalidate;

wire [18:0] cnt_inc;
wire [JW-1:0] cnt_job;

grad_agg_regs #(
    .MAX_SLOTS(MAX_SLOTS),
    .MAX_ELEMS(MAX_ELEMS),
    .BUILD_HASH(BUILD_HASH),
    .CNT_COUNT(19),
    .JOBS(JOBS)
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
    .cfg_jobs(cfg_regs),
    .cfg_invalidate(cfg_invalidate),
    .cnt_inc(cnt_inc),
    .cnt_inc_job({19{cnt_job}})
);

/*
 * Every job's configuration word (grad_agg_cfg.vh): its registers and its
 * row of the job table (with JOBS = 1 the engine's JOB_ID, every slot)
 */
wire [JOBS*CF_W-1:0] cfg_jobs;
wire [JOBS-1:0]      cfg_job_enable;

genvar gj;

generate

for (gj = 0; gj < JOBS; gj = gj + 1) begin : g_cfg_job
    assign cfg_jobs[CF_W*gj +: CFR_W] = cfg_regs[CFR_W*gj +: CFR_W];
    if (JOBS > 1) begin : g_table
        assign cfg_jobs[CF_W*gj + CF_JOB_ID +: 8] = job_id[8*gj +: 8];
        assign cfg_jobs[CF_W*gj + CF_SLOT_BASE +: 7] = job_slot_base[7*gj +: 7];
        assign cfg_jobs[CF_W*gj + CF_SLOT_COUNT +: 7] = job_slot_count[7*gj +: 7];
        assign cfg_job_enable[gj] = job_enable[gj];
    end else begin : g_fixed
        localparam [6:0] ALL_SLOTS = MAX_SLOTS;
        assign cfg_jobs[CF_W*gj + CF_JOB_ID +: 8] = cfg_job_id;
        assign cfg_jobs[CF_W*gj + CF_SLOT_BASE +: 7] = 7'd0;
        assign cfg_jobs[CF_W*gj + CF_SLOT_COUNT +: 7] = ALL_SLOTS;
        assign cfg_job_enable[gj] = 1'b1;
    end
end

endgenerate

/*
 * The job of each frame, two clocks ahead of the ingress
 */
wire [DATA_WIDTH-1:0] jb_tdata;
wire [KEEP_WIDTH-1:0] jb_tkeep;
wire                  jb_tvalid;
wire                  jb_tready;
wire                  jb_tlast;
wire [USER_WIDTH-1:0] jb_tuser;
wire [JW-1:0]         jb_job;
wire                  jb_found;
wire [CF_W-1:0]       jb_cfg;
wire [6:0]            jb_mslot;
wire [6:0]            jb_nslots;

grad_agg_job #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH),
    .JOBS(JOBS)
)
job_inst (
    .clk(clk),
    .rst(rst),
    .cfg_jobs(cfg_jobs),
    .job_enable(cfg_job_enable),
    .s_axis_tdata(s_axis_tdata),
    .s_axis_tkeep(s_axis_tkeep),
    .s_axis_tvalid(s_axis_tvalid),
    .s_axis_tready(s_axis_tready),
    .s_axis_tlast(s_axis_tlast),
    .s_axis_tuser(s_axis_tuser),
    .m_axis_tdata(jb_tdata),
    .m_axis_tkeep(jb_tkeep),
    .m_axis_tvalid(jb_tvalid),
    .m_axis_tready(jb_tready),
    .m_axis_tlast(jb_tlast),
    .m_axis_tuser(jb_tuser),
    .m_job(jb_job),
    .m_found(jb_found),
    .m_cfg(jb_cfg),
    .m_mslot(jb_mslot),
    .m_nslots(jb_nslots)
);

/*
 * Ingress: checks, slot state, accumulation
 */
reg stall_out_reg;  // output FIFOs near full (or reset)

wire                  req_valid;
wire [JW-1:0]         req_job;
wire [1:0]            req_kind;
wire [15:0]           req_slot;
wire [31:0]           req_seq;
wire [31:0]           req_aux;
wire                  req_error;
wire [2:0]            req_worker;
wire [31:0]           req_total;
wire [47:0]           req_eth_src;
wire [31:0]           req_ip_src;
wire [15:0]           req_udp_src;
wire [7:0]            req_port;

wire [DATA_WIDTH-1:0] pay_wr_data;
wire                  pay_wr_last;
wire                  pay_wr_valid;

grad_agg_ingress #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH),
    .MAX_SLOTS(MAX_SLOTS),
    .MAX_ELEMS(MAX_ELEMS),
    .JOBS(JOBS)
)
ingress_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata(jb_tdata),
    .s_axis_tkeep(jb_tkeep),
    .s_axis_tvalid(jb_tvalid),
    .s_axis_tready(jb_tready),
    .s_axis_tlast(jb_tlast),
    .s_axis_tuser(jb_tuser),
    .s_axis_job(jb_job),
    .s_axis_found(jb_found),
    .s_axis_cfg(jb_cfg),
    .s_axis_mslot(jb_mslot),
    .s_axis_nslots(jb_nslots),
    .cfg_enable(cfg_ctrl[0]),
    .cfg_invalidate(cfg_invalidate),
    .slot_free(slot_free),
    .out_stall(stall_out_reg),
    .req_valid(req_valid),
    .req_job(req_job),
    .req_kind(req_kind),
    .req_slot(req_slot),
    .req_seq(req_seq),
    .req_aux(req_aux),
    .req_error(req_error),
    .req_worker(req_worker),
    .req_total(req_total),
    .req_eth_src(req_eth_src),
    .req_ip_src(req_ip_src),
    .req_udp_src(req_udp_src),
    .req_port(req_port),
    .pay_data(pay_wr_data),
    .pay_last(pay_wr_last),
    .pay_valid(pay_wr_valid),
    .cnt_inc(cnt_inc),
    .cnt_job(cnt_job)
);

/*
 * Output FIFOs; the ingress stalls its input well before they fill (counts
 * registered in the FIFOs, the stall flag here)
 */
wire [HF_ENTRY_W-1:0] hf_wr_data;
wire                  hf_wr_valid;
wire [HF_ENTRY_W-1:0] hf_rd_data;
wire                  hf_rd_valid;
wire                  hf_rd_ready;
wire [HDR_AW+1:0]     hf_count;

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
    .in_valid(hf_wr_valid),
    /* verilator lint_off PINCONNECTEMPTY */
    .in_ready(),
    /* verilator lint_on PINCONNECTEMPTY */
    .out_data(hf_rd_data),
    .out_valid(hf_rd_valid),
    .out_ready(hf_rd_ready),
    .count(hf_count)
);

wire [DATA_WIDTH:0]   pf_rd_data;
wire                  pf_rd_valid;
wire                  pf_rd_ready;
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
    .in_data({pay_wr_last, pay_wr_data}),
    .in_valid(pay_wr_valid),
    /* verilator lint_off PINCONNECTEMPTY */
    .in_ready(),
    /* verilator lint_on PINCONNECTEMPTY */
    .out_data(pf_rd_data),
    .out_valid(pf_rd_valid),
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
 * Egress: reply headers and frames
 */
grad_agg_egress #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH),
    .OUT_DEPTH(OUT_DEPTH),
    .JOBS(JOBS),
    .HDR_ENTRY_W(HF_ENTRY_W)
)
egress_inst (
    .clk(clk),
    .rst(rst),
    .cfg_udp_port(cfg_udp_port),
    .cfg_switch_ip(cfg_switch_ip),
    .cfg_switch_mac(cfg_switch_mac),
    .cfg_mcast_ip(cfg_mcast_ip),
    .cfg_jobs(cfg_jobs),
    .req_valid(req_valid),
    .req_job(req_job),
    .req_kind(req_kind),
    .req_slot(req_slot),
    .req_seq(req_seq),
    .req_aux(req_aux),
    .req_error(req_error),
    .req_worker(req_worker),
    .req_total(req_total),
    .req_eth_src(req_eth_src),
    .req_ip_src(req_ip_src),
    .req_udp_src(req_udp_src),
    .req_port(req_port),
    .hdr_wr_data(hf_wr_data),
    .hdr_wr_valid(hf_wr_valid),
    .hdr_rd_data(hf_rd_data),
    .hdr_rd_valid(hf_rd_valid),
    .hdr_rd_ready(hf_rd_ready),
    .pay_rd_data(pf_rd_data),
    .pay_rd_valid(pf_rd_valid),
    .pay_rd_ready(pf_rd_ready),
    .pay_wr_done(pay_wr_valid && pay_wr_last),
    .m_axis_tdata(m_axis_tdata),
    .m_axis_tkeep(m_axis_tkeep),
    .m_axis_tvalid(m_axis_tvalid),
    .m_axis_tready(m_axis_tready),
    .m_axis_tlast(m_axis_tlast),
    .m_axis_tuser(m_axis_tuser)
);

// configuration the engine does not look at
// verilator lint_off UNUSEDSIGNAL
wire unused_cfg = &{1'b0, cfg_ctrl[1], cfg_job_id, job_id, job_enable, job_slot_base, job_slot_count};
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
`default_nettype wire
