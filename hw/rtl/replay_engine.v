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
 * In-network experience replay engine (docs/protocol.md section 5).
 *
 * Input: the replay protocol frames (opcodes 3..7) the switch lookup sends
 * here. Output: PUSH_ACK and SAMPLE_RESP frames, TUSER[31:24] = the
 * requester's ingress port. AXI4-Lite: the replay view of the register map.
 *
 *   replay_ingress    header capture, checks of section 6, payload and
 *                     meta FIFOs (one frame per clock)
 *   replay_executor   pops one request at a time, in arrival order:
 *                     PUSH   records -> record memory (one beat per clock),
 *                            leaves wp.. -> sum tree (one per clock), PUSH_ACK
 *                     UPDATE one (index, priority) pair per clock -> sum tree
 *                     SAMPLE one xorshift32 draw per clock -> replay_mul ->
 *                            replay_sum_tree descent -> replay_stack
 *   replay_stack      record chains (written by PUSH); a stacked sample's
 *                     chain walk; the samples' response queue entries
 *   replay_responder  one beat per clock: 64-byte header, descriptor and the
 *                     record read from the record memory
 *
 * This module holds the register file, the draw multiplier and the sum
 * tree, and the storage the executor and the responder share: the record
 * memory (C * R bytes), the request contexts (4 entries: what a reply
 * echoes) and the response queue (128 entries: one per PUSH_ACK or sample).
 *
 * Record memory: block RAM (REC_STORE = 0, m_axi_* held at 0), or external
 * memory behind the AXI4 master m_axi_* (REC_STORE = 1,
 * replay_rec_store_axi: each sample's record is read when its index enters
 * the response queue and replaces the responder's record beats on the way
 * out; the payload stream into the executor holds while the store cannot
 * take a record beat).
 *
 * Ordering: the sum tree is either updating or descending, never both. A
 * SAMPLE_REQ waits until the updates before it have left the update
 * pipeline (at most 6 clocks); an UPDATE or PUSH waits until the samples
 * before it have left the descent pipeline (about 5 log2(C) + 14 clocks); a
 * PUSH also waits until the responder has read every record it will
 * overwrite. So every request sees exactly the state its predecessors left,
 * as in hostdrv.switch.reference.
 */
module replay_engine #
(
    // Width of AXI stream data in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of AXI stream tkeep in bits
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of AXI stream tuser in bits (SUME layout)
    parameter USER_WIDTH = 128,
    // Replay capacity C in records (power of two, 4 .. 131072)
    parameter CAPACITY = 16384,
    // Record size R in bytes (multiple of 64, 64 .. 8192)
    parameter RECORD_BYTES = 128,
    // Value of the BUILD_HASH register
    parameter BUILD_HASH = 32'd0,
    // Record store: 0 = block RAM (m_axi_* unused), 1 = external memory
    // through the AXI4 master (replay_rec_store_axi)
    parameter REC_STORE = 0,
    // Width of the AXI4 master address (REC_STORE = 1)
    parameter AXI_ADDR_WIDTH = 32,
    // Width of the AXI4 master IDs (REC_STORE = 1)
    parameter AXI_ID_WIDTH = 1,
    // Byte address of record 0 in the AXI4 address space (REC_STORE = 1)
    parameter [AXI_ADDR_WIDTH-1:0] AXI_BASE_ADDR = 0,
    // Jobs served (JOBS), 1 to 8: one table each
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // Width of the AXI4-Lite address: the page (job) above bit 11 (computed)
    parameter AW = JOBS > 1 ? 12 + JW : 12
)
(
    input  wire                   clk,
    input  wire                   rst,

    /*
     * Replay protocol frames in
     */
    input  wire [DATA_WIDTH-1:0]  s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]  s_axis_tkeep,
    input  wire                   s_axis_tvalid,
    output wire                   s_axis_tready,
    input  wire                   s_axis_tlast,
    input  wire [USER_WIDTH-1:0]  s_axis_tuser,

    /*
     * Replies out
     */
    output wire [DATA_WIDTH-1:0]  m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]  m_axis_tkeep,
    output wire                   m_axis_tvalid,
    input  wire                   m_axis_tready,
    output wire                   m_axis_tlast,
    output wire [USER_WIDTH-1:0]  m_axis_tuser,

    /*
     * AXI4-Lite slave (registers)
     */
    input  wire [AW-1:0]          s_axil_awaddr,
    input  wire [2:0]             s_axil_awprot,
    input  wire                   s_axil_awvalid,
    output wire                   s_axil_awready,
    input  wire [31:0]            s_axil_wdata,
    input  wire [3:0]             s_axil_wstrb,
    input  wire                   s_axil_wvalid,
    output wire                   s_axil_wready,
    output wire [1:0]             s_axil_bresp,
    output wire                   s_axil_bvalid,
    input  wire                   s_axil_bready,
    input  wire [AW-1:0]          s_axil_araddr,
    input  wire [2:0]             s_axil_arprot,
    input  wire                   s_axil_arvalid,
    output wire                   s_axil_arready,
    output wire [31:0]            s_axil_rdata,
    output wire [1:0]             s_axil_rresp,
    output wire                   s_axil_rvalid,
    input  wire                   s_axil_rready,

    /*
     * The switch's job table (nrl_axil_split; unused with JOBS = 1): every
     * job's JOB_ID, JOB_ENABLE bit and table (JOB_RPL_BASE, _CAP, _RECORD);
     * table_carve empties a job's table (as its RPL_RESET = 1)
     */
    input  wire [JOBS*8-1:0]      job_id,
    input  wire [JOBS-1:0]        job_enable,
    input  wire [JOBS*32-1:0]     job_rpl_base,
    input  wire [JOBS*32-1:0]     job_rpl_cap,
    input  wire [JOBS*14-1:0]     job_rpl_record,
    input  wire [JOBS-1:0]        table_carve,

    /*
     * AXI4 master, 512-bit data: the record store (REC_STORE = 1; outputs
     * held at 0 with REC_STORE = 0)
     */
    output wire [AXI_ID_WIDTH-1:0]    m_axi_awid,
    output wire [AXI_ADDR_WIDTH-1:0]  m_axi_awaddr,
    output wire [7:0]                 m_axi_awlen,
    output wire [2:0]                 m_axi_awsize,
    output wire [1:0]                 m_axi_awburst,
    output wire                       m_axi_awlock,
    output wire [3:0]                 m_axi_awcache,
    output wire [2:0]                 m_axi_awprot,
    output wire [3:0]                 m_axi_awqos,
    output wire                       m_axi_awvalid,
    input  wire                       m_axi_awready,
    output wire [511:0]               m_axi_wdata,
    output wire [63:0]                m_axi_wstrb,
    output wire                       m_axi_wlast,
    output wire                       m_axi_wvalid,
    input  wire                       m_axi_wready,
    input  wire [AXI_ID_WIDTH-1:0]    m_axi_bid,
    input  wire [1:0]                 m_axi_bresp,
    input  wire                       m_axi_bvalid,
    output wire                       m_axi_bready,
    output wire [AXI_ID_WIDTH-1:0]    m_axi_arid,
    output wire [AXI_ADDR_WIDTH-1:0]  m_axi_araddr,
    output wire [7:0]                 m_axi_arlen,
    output wire [2:0]                 m_axi_arsize,
    output wire [1:0]                 m_axi_arburst,
    output wire                       m_axi_arlock,
    output wire [3:0]                 m_axi_arcache,
    output wire [2:0]                 m_axi_arprot,
    output wire [3:0]                 m_axi_arqos,
    output wire                       m_axi_arvalid,
    input  wire                       m_axi_arready,
    input  wire [AXI_ID_WIDTH-1:0]    m_axi_rid,
    input  wire [511:0]               m_axi_rdata,
    input  wire [1:0]                 m_axi_rresp,
    input  wire                       m_axi_rlast,
    input  wire                       m_axi_rvalid,
    output wire                       m_axi_rready
);

localparam BEAT_BYTES = KEEP_WIDTH;
localparam INDEX_W = $clog2(CAPACITY);
localparam SUM_W = 32 + INDEX_W;
localparam REC_BEATS = RECORD_BYTES / BEAT_BYTES;
localparam REC_BEAT_W = REC_BEATS > 1 ? $clog2(REC_BEATS) : 1;
localparam REC_ADDR_W = INDEX_W + REC_BEAT_W;
// the payload FIFO holds two of the largest PUSH payloads: 16 records, or what a
// 65535-byte frame holds (R > 4088)
localparam PL_BYTES_16 = 64 + 16*RECORD_BYTES;
localparam MAX_PL_BEATS = (PL_BYTES_16 < 65535 - 64 ? PL_BYTES_16 : 65535 - 64 + BEAT_BYTES - 1) / BEAT_BYTES;
localparam PL_BEATS_W = $clog2((64 + 16*RECORD_BYTES) / BEAT_BYTES + 1);
localparam PL_ADDR_WIDTH = $clog2(2*MAX_PL_BEATS);
localparam META_ADDR_WIDTH = 5;
localparam META_WIDTH = JW + 8 + 8 + 5 + INDEX_W + 1 + 16 + 4 + 2 + 1 + 3 + 32 + 8 + 48 + 32 + 16 + 8 + PL_BEATS_W;
localparam CTX_TAG_W = 2;  // 4 request contexts
localparam RESP_Q_ADDR_W = 7;  // response queue: 128 entries
localparam SMP_USER_W = 4 + CTX_TAG_W + 6 + 1 + 1;  // sample side band: stk, tag, i, last, uniform
localparam RESP_ENTRY_W = 1 + 1 + CTX_TAG_W + 8 + 6 + INDEX_W + 32;
localparam CTX_WIDTH = JW + 8 + 16 + 12 + INDEX_W + 48 + 32 + 16 + 8 + 3 + 32 + 16 + 8 + SUM_W + (INDEX_W+1);
localparam NCNT = 16;

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
    if (CAPACITY < 4 || CAPACITY > 131072 || (CAPACITY & (CAPACITY - 1)) != 0) begin
        $error("Error: CAPACITY must be a power of two in 4 .. 131072 (instance %m)");
        $finish;
    end
    if (RECORD_BYTES < 64 || RECORD_BYTES % 64 != 0 || RECORD_BYTES > 8192) begin
        $error("Error: RECORD_BYTES must be a multiple of 64 in 64..8192 (instance %m)");
        $finish;
    end
    if (JOBS < 1 || JOBS > 8) begin
        $error("Error: JOBS must be 1..8 (instance %m)");
        $finish;
    end
    if (REC_STORE != 0 && REC_STORE != 1) begin
        $error("Error: REC_STORE must be 0 (block RAM) or 1 (AXI4 master) (instance %m)");
        $finish;
    end
end

// ---------------------------------------------------------------------------
// registers and every job's word (replay_config)

wire rpl_enable;
wire [15:0] udp_port;
wire [31:0] switch_ip;
wire [47:0] switch_mac;
wire [JOBS*511-1:0] jobs_word;
wire [JOBS-1:0] jobs_enable, jobs_notab;
wire [JOBS*INDEX_W-1:0] jobs_base;
wire [JOBS*5-1:0] jobs_lcap;
wire [JOBS*32-1:0] seed, min_size, spi, spi_error;
wire [JOBS-1:0] seed_wr, spi_wr, tbl_reset;
wire [JOBS*64-1:0] rate_diff;
wire [NCNT-1:0] cnt_inc;
wire [NCNT*JW-1:0] cnt_inc_job;
wire [JOBS*(INDEX_W+1)-1:0] size;
wire [JOBS*INDEX_W-1:0] wptr;
wire [31:0] rpl_axi_err;  // record store error responses (REC_STORE = 1)
wire [JOBS*SUM_W-1:0] job_totals;  // every job's table's total (JOBS = 1: the tree's)

replay_config #(
    .CAPACITY(CAPACITY),
    .RECORD_BYTES(RECORD_BYTES),
    .BUILD_HASH(BUILD_HASH),
    .NCNT(NCNT),
    .JOBS(JOBS)
)
cfg_inst (
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
    .job_id(job_id),
    .job_enable(job_enable),
    .job_rpl_base(job_rpl_base),
    .job_rpl_cap(job_rpl_cap),
    .job_rpl_record(job_rpl_record),
    .table_carve(table_carve),
    .rpl_enable(rpl_enable),
    .udp_port(udp_port),
    .switch_ip(switch_ip),
    .switch_mac(switch_mac),
    .jobs_word(jobs_word),
    .jobs_enable(jobs_enable),
    .jobs_base(jobs_base),
    .jobs_lcap(jobs_lcap),
    .jobs_notab(jobs_notab),
    .seed(seed),
    .seed_wr(seed_wr),
    .min_size(min_size),
    .spi(spi),
    .spi_error(spi_error),
    .spi_wr(spi_wr),
    .tbl_reset(tbl_reset),
    .rate_diff(rate_diff),
    .size(size),
    .wptr(wptr),
    .total(job_totals),
    .axi_err(rpl_axi_err),
    .cnt_inc(cnt_inc),
    .cnt_inc_job(cnt_inc_job)
);

// ---------------------------------------------------------------------------
// ingress

wire [DATA_WIDTH-1:0] pl_data;
wire pl_valid;
wire pl_ready;
// the record store takes a record beat (always with block RAM); the payload
// stream between ingress and executor holds while it cannot
wire rec_wr_ready;
wire pl_valid_x = pl_valid && rec_wr_ready;
wire pl_ready_x;
assign pl_ready = pl_ready_x && rec_wr_ready;
wire [META_WIDTH-1:0] meta_data;
wire meta_valid;
wire meta_ready;
wire stat_rx_push, stat_rx_sample, stat_rx_update;
wire [6:0] stat_drop;
wire [JW-1:0] stat_in_job;

replay_ingress #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH),
    .RECORD_BYTES(RECORD_BYTES),
    .PL_ADDR_WIDTH(PL_ADDR_WIDTH),
    .META_ADDR_WIDTH(META_ADDR_WIDTH),
    .INDEX_W(INDEX_W),
    .JOBS(JOBS)
)
ingress_inst (
    .clk(clk),
    .rst(rst),
    .s_axis_tdata(s_axis_tdata),
    .s_axis_tkeep(s_axis_tkeep),
    .s_axis_tvalid(s_axis_tvalid),
    .s_axis_tready(s_axis_tready),
    .s_axis_tlast(s_axis_tlast),
    .s_axis_tuser(s_axis_tuser),
    .rpl_enable(rpl_enable),
    .switch_ip(switch_ip),
    .jobs_word(jobs_word),
    .job_enable(jobs_enable),
    .pl_data(pl_data),
    .pl_valid(pl_valid),
    .pl_ready(pl_ready),
    .meta_data(meta_data),
    .meta_valid(meta_valid),
    .meta_ready(meta_ready),
    .stat_rx_push(stat_rx_push),
    .stat_rx_sample(stat_rx_sample),
    .stat_rx_update(stat_rx_update),
    .stat_drop(stat_drop),
    .stat_job(stat_in_job)
);

// ---------------------------------------------------------------------------
// executor

wire rec_we;
wire [REC_ADDR_W-1:0] rec_wa;
wire [REC_ADDR_W-INDEX_W-1:0] rec_wlast;
wire tree_clear, tree_clearing, upd_valid, upd_count, upd_busy, q_busy;
wire [JW-1:0] upd_job, smp_job, stat_upd_job;  // smp_job: the executor's request's
wire [JOBS-1:0] ch_clear, job_total_clear;
wire [INDEX_W-1:0] smp_base;
wire [4:0] smp_depth;
wire [INDEX_W:0] smp_size;
wire [SUM_W-1:0] smp_total;
wire [INDEX_W-1:0] upd_index;
wire [31:0] upd_prio;
wire ch_begin, ch_rec, ch_end;
wire [2:0] ch_worker;
wire smp_done;
wire r_valid;
wire [INDEX_W-1:0] r_index;
wire [31:0] r_prio;
wire [SMP_USER_W-1:0] r_user;
wire ctx_we, ctx_free, ex_rq_push;
wire [CTX_TAG_W-1:0] ctx_wa;
wire [CTX_WIDTH-1:0] ctx_wd;
wire [RESP_ENTRY_W-1:0] ex_rq_push_data;
wire rq_pop;
// the executor's state, 0 when idle (the testbench's busy probe reads it here)
// verilator lint_off UNUSEDSIGNAL
wire [3:0] state_reg;
// verilator lint_on UNUSEDSIGNAL
wire stat_empty, stat_bad_update;
wire smp_setup, smp_issue, smp_last;
wire [CTX_TAG_W-1:0] smp_tag;
wire [3:0] smp_stk;
wire smp_prio;
wire [7:0] smp_count;
wire rq_take;
wire [3:0] rq_take_n;
wire ctx_room, rq_empty, rq_room_1, rq_room_k, inflight_zero;

replay_executor #(
    .DATA_WIDTH(DATA_WIDTH),
    .CAPACITY(CAPACITY),
    .RECORD_BYTES(RECORD_BYTES),
    .CTX_TAG_W(CTX_TAG_W),
    .JOBS(JOBS),
    .REC_ADDR_W(REC_ADDR_W),
    .META_WIDTH(META_WIDTH),
    .CTX_WIDTH(CTX_WIDTH),
    .RESP_ENTRY_W(RESP_ENTRY_W)
)
exec_inst (
    .clk(clk),
    .rst(rst),
    .rpl_reset(tbl_reset),
    .min_size(min_size),
    .spi(spi),
    .spi_error(spi_error),
    .spi_wr(spi_wr),
    .jobs_base(jobs_base),
    .jobs_lcap(jobs_lcap),
    .jobs_notab(jobs_notab),
    .rate_diff(rate_diff),
    .size(size),
    .wptr(wptr),
    .pl_data(pl_data),
    .pl_valid(pl_valid_x),
    .pl_ready(pl_ready_x),
    .meta_data(meta_data),
    .meta_valid(meta_valid),
    .meta_ready(meta_ready),
    .rec_we(rec_we),
    .rec_waddr(rec_wa),
    .rec_wlast(rec_wlast),
    .tree_clear(tree_clear),
    .tree_clearing(tree_clearing),
    .upd_valid(upd_valid),
    .upd_index(upd_index),
    .upd_prio(upd_prio),
    .upd_job(upd_job),
    .upd_count(upd_count),
    .upd_busy(upd_busy),
    .q_busy(q_busy),
    .tree_total(job_totals),
    .job_total_clear(job_total_clear),
    .ch_clear(ch_clear),
    .ch_begin(ch_begin),
    .ch_worker(ch_worker),
    .ch_rec(ch_rec),
    .ch_end(ch_end),
    .smp_setup(smp_setup),
    .smp_issue(smp_issue),
    .smp_last(smp_last),
    .smp_tag(smp_tag),
    .smp_stk(smp_stk),
    .smp_prio(smp_prio),
    .smp_count(smp_count),
    .smp_job(smp_job),
    .smp_base(smp_base),
    .smp_depth(smp_depth),
    .smp_size(smp_size),
    .smp_total(smp_total),
    .rq_take(rq_take),
    .rq_take_n(rq_take_n),
    .ctx_room(ctx_room),
    .rq_empty(rq_empty),
    .rq_room_1(rq_room_1),
    .rq_room_k(rq_room_k),
    .inflight_zero(inflight_zero),
    .ctx_we(ctx_we),
    .ctx_waddr(ctx_wa),
    .ctx_wdata(ctx_wd),
    .rq_push(ex_rq_push),
    .rq_push_data(ex_rq_push_data),
    .state(state_reg),
    .stat_empty(stat_empty),
    .stat_bad_update(stat_bad_update),
    .stat_upd_job(stat_upd_job)
);

// ---------------------------------------------------------------------------
// the executor's credits (request contexts, response queue entries, samples
// in flight); the draws, the draw multiplier and the sum tree (replay_sampler)

replay_credits #(
    .CTX_TAG_W(CTX_TAG_W),
    .RESP_Q_ADDR_W(RESP_Q_ADDR_W)
)
credits_inst (
    .clk(clk),
    .rst(rst),
    .ctx_take(ctx_we),
    .ctx_free(ctx_free),
    .ctx_room(ctx_room),
    .rq_take(rq_take),
    .rq_take_n(rq_take_n),
    .rq_pop(rq_pop),
    .lim_load(smp_setup),
    .lim_stk(smp_stk),
    .rq_empty(rq_empty),
    .rq_room_1(rq_room_1),
    .rq_room_k(rq_room_k),
    .issue(smp_issue),
    .smp_done(smp_done),
    .inflight_zero(inflight_zero)
);

replay_sampler #(
    .CAPACITY(CAPACITY),
    .CTX_TAG_W(CTX_TAG_W),
    .JOBS(JOBS)
)
smp_inst (
    .clk(clk),
    .rst(rst),
    .seed(seed),
    .seed_wr(seed_wr),
    .prio(smp_prio),
    .count(smp_count),
    .stk(smp_stk),
    .tag(smp_tag),
    .total(smp_total),
    .size(smp_size),
    .job(smp_job),
    .base(smp_base),
    .depth(smp_depth),
    .setup(smp_setup),
    .issue(smp_issue),
    .last(smp_last),
    .clear_start(tree_clear),
    .clearing(tree_clearing),
    .upd_valid(upd_valid),
    .upd_index(upd_index),
    .upd_prio(upd_prio),
    .upd_job(upd_job),
    .upd_count(upd_count),
    .upd_busy(upd_busy),
    .q_busy(q_busy),
    .r_valid(r_valid),
    .r_index(r_index),
    .r_prio(r_prio),
    .r_user(r_user),
    .job_totals(job_totals),
    .job_total_clear(job_total_clear)
);

// ---------------------------------------------------------------------------
// egress (replay_egress): record chains and stacked samples, the record store,
// the request contexts, the response queue and the responder

wire stat_tx_ack, stat_tx_resp, stat_tx_push_ny, stat_tx_sample_ny;
wire [JW-1:0] stat_tx_job;
// the response queue holds an entry (the testbench's busy probe reads it here)
// verilator lint_off UNUSEDSIGNAL
wire rq_valid;
// verilator lint_on UNUSEDSIGNAL

replay_egress #(
    .DATA_WIDTH(DATA_WIDTH),
    .KEEP_WIDTH(KEEP_WIDTH),
    .USER_WIDTH(USER_WIDTH),
    .CAPACITY(CAPACITY),
    .RECORD_BYTES(RECORD_BYTES),
    .REC_STORE(REC_STORE),
    .AXI_ADDR_WIDTH(AXI_ADDR_WIDTH),
    .AXI_ID_WIDTH(AXI_ID_WIDTH),
    .AXI_BASE_ADDR(AXI_BASE_ADDR),
    .CTX_TAG_W(CTX_TAG_W),
    .JOBS(JOBS),
    .RESP_Q_ADDR_W(RESP_Q_ADDR_W),
    .REC_ADDR_W(REC_ADDR_W)
)
egress_inst (
    .clk(clk),
    .rst(rst),
    .udp_port(udp_port),
    .switch_ip(switch_ip),
    .switch_mac(switch_mac),
    .rpl_reset(|tbl_reset),
    .ch_clear(ch_clear),
    .ch_begin(ch_begin),
    .ch_job(smp_job),
    .ch_worker(ch_worker),
    .ch_rec(ch_rec),
    .ch_index(upd_index),
    .ch_end(ch_end),
    .r_valid(r_valid),
    .r_index(r_index),
    .r_prio(r_prio),
    .r_user(r_user),
    .smp_done(smp_done),
    .ex_rq_push(ex_rq_push),
    .ex_rq_push_data(ex_rq_push_data),
    .rq_pop(rq_pop),
    .rq_valid(rq_valid),
    .ctx_we(ctx_we),
    .ctx_waddr(ctx_wa),
    .ctx_wdata(ctx_wd),
    .ctx_free(ctx_free),
    .rec_we(rec_we),
    .rec_waddr(rec_wa),
    .rec_wlast(rec_wlast),
    .rec_wdata(pl_data),
    .rec_wr_ready(rec_wr_ready),
    .m_axis_tdata(m_axis_tdata),
    .m_axis_tkeep(m_axis_tkeep),
    .m_axis_tvalid(m_axis_tvalid),
    .m_axis_tready(m_axis_tready),
    .m_axis_tlast(m_axis_tlast),
    .m_axis_tuser(m_axis_tuser),
    .m_axi_awid(m_axi_awid),
    .m_axi_awaddr(m_axi_awaddr),
    .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize),
    .m_axi_awburst(m_axi_awburst),
    .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache),
    .m_axi_awprot(m_axi_awprot),
    .m_axi_awqos(m_axi_awqos),
    .m_axi_awvalid(m_axi_awvalid),
    .m_axi_awready(m_axi_awready),
    .m_axi_wdata(m_axi_wdata),
    .m_axi_wstrb(m_axi_wstrb),
    .m_axi_wlast(m_axi_wlast),
    .m_axi_wvalid(m_axi_wvalid),
    .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid),
    .m_axi_bresp(m_axi_bresp),
    .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready),
    .m_axi_arid(m_axi_arid),
    .m_axi_araddr(m_axi_araddr),
    .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize),
    .m_axi_arburst(m_axi_arburst),
    .m_axi_arlock(m_axi_arlock),
    .m_axi_arcache(m_axi_arcache),
    .m_axi_arprot(m_axi_arprot),
    .m_axi_arqos(m_axi_arqos),
    .m_axi_arvalid(m_axi_arvalid),
    .m_axi_arready(m_axi_arready),
    .m_axi_rid(m_axi_rid),
    .m_axi_rdata(m_axi_rdata),
    .m_axi_rresp(m_axi_rresp),
    .m_axi_rlast(m_axi_rlast),
    .m_axi_rvalid(m_axi_rvalid),
    .m_axi_rready(m_axi_rready),
    .axi_err(rpl_axi_err),
    .stat_tx_ack(stat_tx_ack),
    .stat_tx_resp(stat_tx_resp),
    .stat_tx_push_ny(stat_tx_push_ny),
    .stat_tx_sample_ny(stat_tx_sample_ny),
    .stat_tx_job(stat_tx_job)
);

// ---------------------------------------------------------------------------
// counters

assign cnt_inc = {stat_tx_sample_ny, stat_tx_push_ny, stat_bad_update, stat_empty, stat_drop, stat_tx_resp, stat_tx_ack,
                  stat_rx_update, stat_rx_sample, stat_rx_push};
assign cnt_inc_job = {stat_tx_job, stat_tx_job, stat_upd_job, smp_job, {7{stat_in_job}}, stat_tx_job, stat_tx_job,
                      {3{stat_in_job}}};

endmodule

`resetall
