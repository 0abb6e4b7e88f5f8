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
 * Replay engine executor: runs the accepted requests against the record
 * memory and the sum tree, one at a time, in arrival order.
 *
 * Pops one meta entry of replay_ingress at a time (with its payload beats):
 *
 *   PUSH    the 64-byte priority block is held; then the records go to
 *           the record memory (one beat per clock) while their leaves
 *           wp.. go to the sum tree (one per clock); then wp and size
 *           advance, a request context is written and a PUSH_ACK entry
 *           enters the response queue
 *   UPDATE  one (index, priority) pair per clock to the sum tree; a pair
 *           with index >= size is counted and left out
 *   SAMPLE  one xorshift32 draw per clock to the draw multiplier
 *           (replay_mul), which feeds the sum tree descent; each result
 *           goes to replay_stack, which puts its k entries (1 when the
 *           request is not stacked) into the response queue
 *   dropped frame: its payload beats are skipped
 *
 * Rate limiting (docs/protocol.md section 5; the limiter is replay_job_state's):
 * a PUSH or SAMPLE_REQ the limiter refuses (or a SAMPLE_REQ with nothing to
 * sample) writes a request context and one NOT_YET entry to the response
 * queue (a header-only PUSH_ACK or SAMPLE_RESP: entry ack = 1, i = {1,
 * sample, 00, reason}, prio = size), then skips its payload; nothing is
 * written or drawn.
 *
 * Jobs: the request's job's table state and values, the tables' emptying
 * and the rate limiter are replay_job_state's.
 *
 * Ordering: the sum tree is either updating or descending, never both. A
 * SAMPLE_REQ waits until the updates before it have left the update
 * pipeline (upd_busy); an UPDATE or PUSH waits until the samples before it
 * have left the descent pipeline (its own in-flight count and q_busy); a
 * PUSH also waits until the response queue is empty, i.e. the responder
 * has read every record it will overwrite. A table's emptying waits for an
 * idle executor and an empty tree pipeline.
 *
 * The storage shared with the responder is replay_egress's (the context,
 * entry and side band layouts there). Record chains (replay_stack): at an
 * accepted PUSH ch_begin names its worker, each leaf it writes (ch_rec,
 * index upd_index) is a record of the chain, ch_end closes it.
 */
module replay_executor #
(
    // Width of AXI stream data in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // Replay capacity C in records (power of two, 4 .. 131072)
    parameter CAPACITY = 16384,
    // Record size R in bytes (multiple of 64, at most 8192)
    parameter RECORD_BYTES = 128,
    // log2 of the number of request contexts
    parameter CTX_TAG_W = 2,
    // Jobs served (JOBS), 1 to 8: one table each
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1,
    // log2(C) (computed; do not override)
    parameter INDEX_W = $clog2(CAPACITY),
    // Width of sums, 32 + log2(C) (computed; do not override)
    parameter SUM_W = 32 + INDEX_W,
    // Record memory address width (computed; do not override)
    parameter REC_ADDR_W = INDEX_W + (RECORD_BYTES > DATA_WIDTH/8 ? $clog2(RECORD_BYTES*8/DATA_WIDTH) : 1),
    // Width of the ingress meta entry (computed; do not override)
    parameter META_WIDTH = JW + 8 + 8 + 5 + INDEX_W + 1 + 16 + 4 + 2 + 1 + 3 + 32 + 8 + 48 + 32 + 16 + 8 + $clog2((64 + 16*RECORD_BYTES)/(DATA_WIDTH/8) + 1),
    // Width of a request context (computed; do not override)
    parameter CTX_WIDTH = JW + 8 + 16 + 12 + INDEX_W + 48 + 32 + 16 + 8 + 3 + 32 + 16 + 8 + SUM_W + (INDEX_W+1),
    // Width of a response queue entry (computed; do not override)
    parameter RESP_ENTRY_W = 1 + 1 + CTX_TAG_W + 8 + 6 + INDEX_W + 32
)
(
    input  wire                     clk,
    input  wire                     rst,

    /*
     * Configuration
     */
    input  wire [JOBS-1:0]          rpl_reset,  // per job: RPL_RESET written, or the table carved
    input  wire [JOBS*32-1:0]       min_size,
    input  wire [JOBS*32-1:0]       spi,
    input  wire [JOBS*32-1:0]       spi_error,
    input  wire [JOBS-1:0]          spi_wr,
    // every job's table: base and log2 of its records (JOBS > 1: what a reset zeroes)
    input  wire [JOBS*INDEX_W-1:0]  jobs_base,
    input  wire [JOBS*5-1:0]        jobs_lcap,
    input  wire [JOBS-1:0]          jobs_notab,

    /*
     * Every job's rate limiter accumulator (RPL_RATE_DIFF), records held and
     * next index written
     */
    output wire [JOBS*64-1:0]       rate_diff,
    output wire [JOBS*(INDEX_W+1)-1:0] size,
    output wire [JOBS*INDEX_W-1:0]  wptr,

    /*
     * Payload beats and meta entries in (replay_ingress)
     */
    input  wire [DATA_WIDTH-1:0]    pl_data,
    input  wire                     pl_valid,
    output wire                     pl_ready,
    input  wire [META_WIDTH-1:0]    meta_data,
    input  wire                     meta_valid,
    output wire                     meta_ready,

    /*
     * Record memory write port (the data is pl_data)
     */
    output wire                     rec_we,
    output wire [REC_ADDR_W-1:0]    rec_waddr,
    output wire [REC_ADDR_W-INDEX_W-1:0] rec_wlast,  // the record's last beat (its job's size)

    /*
     * Sum tree (replay_sum_tree): clear, updates, descent results
     */
    output wire                     tree_clear,
    input  wire                     tree_clearing,
    output wire                     upd_valid,
    output wire [INDEX_W-1:0]       upd_index,
    output wire [31:0]              upd_prio,
    output wire [JW-1:0]            upd_job,
    output wire                     upd_count,
    input  wire                     upd_busy,
    input  wire                     q_busy,
    input  wire [JOBS*SUM_W-1:0]    tree_total,  // every job's (JOBS = 1: the tree's total)
    output wire [JOBS-1:0]          job_total_clear,

    /*
     * Record chains (replay_stack): a PUSH's worker, its records, its end;
     * a sample's entries all pushed to the response queue
     */
    output wire [JOBS-1:0]          ch_clear,  // a job's chains restart
    output wire                     ch_begin,  // (its job: smp_job)
    output wire [2:0]               ch_worker,
    output wire                     ch_rec,
    output wire                     ch_end,

    /*
     * Draws (replay_draw) and credits (replay_credits): a SAMPLE_REQ served
     * (setup), a draw (issue; last of the request), the request's tag, stack
     * depth, PRIORITIZED flag and batch; queue entries taken; what the
     * credits allow
     */
    output wire                     smp_setup,
    output wire                     smp_issue,
    output wire                     smp_last,
    output wire [CTX_TAG_W-1:0]     smp_tag,
    output wire [3:0]               smp_stk,
    output wire                     smp_prio,
    output wire [7:0]               smp_count,
    output wire [JW-1:0]            smp_job,     // the request's job (stat_empty's too), its table's
    output wire [INDEX_W-1:0]       smp_base,    // base and the levels above it
    output wire [4:0]               smp_depth,   // (log2 C - log2 JOB_RPL_CAP)
    output wire [INDEX_W:0]         smp_size,    // its size and total (the draws' scale)
    output wire [SUM_W-1:0]         smp_total,
    output wire                     rq_take,
    output wire [3:0]               rq_take_n,
    input  wire                     ctx_room,
    input  wire                     rq_empty,
    input  wire                     rq_room_1,
    input  wire                     rq_room_k,
    input  wire                     inflight_zero,

    /*
     * Request contexts (write port) and response queue entries (acks and
     * NOT_YET; the samples' come from replay_stack)
     */
    output wire                     ctx_we,
    output wire [CTX_TAG_W-1:0]     ctx_waddr,
    output wire [CTX_WIDTH-1:0]     ctx_wdata,
    output wire                     rq_push,
    output wire [RESP_ENTRY_W-1:0]  rq_push_data,

    /*
     * Status: state (0 when idle), counter pulses
     */
    output wire [3:0]               state,
    output wire                     stat_empty,
    output wire                     stat_bad_update,
    output wire [JW-1:0]            stat_upd_job  // stat_bad_update's job
);

localparam BEAT_BYTES = DATA_WIDTH / 8;
localparam HDR_BEATS = 64 / BEAT_BYTES;
localparam REC_BEATS = RECORD_BYTES / BEAT_BYTES;
localparam REC_BEAT_W = REC_ADDR_W - INDEX_W;
localparam PAIRS_PER_BEAT = BEAT_BYTES / 8;                 // UPDATE pairs per beat
localparam PAIR_LANE_W = $clog2(PAIRS_PER_BEAT);
localparam MAX_PL_BEATS = (64 + 16*RECORD_BYTES) / BEAT_BYTES;
localparam PL_BEATS_W = $clog2(MAX_PL_BEATS + 1);

// verilator lint_off UNUSEDPARAM
`include "nrl_protocol.vh"  // NRL_NOT_YET_*
`include "replay_meta.vh"   // MO_*: the meta entry's fields
`include "replay_ctx.vh"    // CX_*: the request context's fields (ctx_common's order)
// verilator lint_on UNUSEDPARAM

localparam HDR_BEATS_M1 = HDR_BEATS - 1;
localparam PAIRS_PER_BEAT_M1 = PAIRS_PER_BEAT - 1;
localparam [PL_BEATS_W-1:0] PB_LAST = HDR_BEATS_M1[PL_BEATS_W-1:0];  // last beat of the priority block
localparam [PAIR_LANE_W-1:0] PAIR_LANE_LAST = PAIRS_PER_BEAT_M1[PAIR_LANE_W-1:0];

initial begin
    if (META_WIDTH != MO_W_ALL) begin
        $error("Error: META_WIDTH must be the ingress meta entry width (instance %m)");
        $finish;
    end
    if (REC_BEAT_W != (REC_BEATS > 1 ? $clog2(REC_BEATS) : 1)) begin
        $error("Error: REC_ADDR_W must be log2(C) + the record beat bits (instance %m)");
        $finish;
    end
end

// meta entry fields
wire [PL_BEATS_W-1:0] m_plb = meta_data[0 +: PL_BEATS_W];
wire [7:0] m_count = meta_data[MO_CNT +: 8];
wire [15:0] m_csum = meta_data[MO_CSUM +: 16];
wire m_prio = meta_data[MO_PRIO];
wire [1:0] m_op = meta_data[MO_OP +: 2];
wire m_ok = meta_data[MO_OK];
wire [3:0] m_stk = meta_data[MO_STK +: 4];  // stack depth k, 0 when not stacked

// ---------------------------------------------------------------------------
// the request's job (its values in the meta entry) and every job's table state

// the request's copies of its job's pointer and size (loaded while idle, written back
// at a PUSH's end), its values (replay_job_state); tables to empty
wire [JW-1:0] job_reg;
wire [INDEX_W-1:0] base_reg, mask_reg;
wire [REC_BEAT_W-1:0] rec_last_reg;
wire [7:0] jid_reg;
wire [15:0] resp_len_reg;
wire [11:0] resp_last_reg;
wire [16:0] csum_d_reg;
wire [INDEX_W-1:0] wp_reg;   // the request's job's pointer and size
wire [INDEX_W:0] size_reg;
wire smp_quiet, reset_pend, zeroing;
wire [INDEX_W-1:0] zero_idx;
reg rst_go;  // the lowest job's pending reset takes effect this clock

// ---------------------------------------------------------------------------
// sum tree updates

reg tree_clear_int;
reg wr_start;                // a PUSH's records and leaves start (replay_writer)
wire wr_take, wr_done;
wire tu_busy;

assign tree_clear = tree_clear_int;

// ---------------------------------------------------------------------------
// request contexts and response queue entries in use

reg ctx_we_int;
reg [CTX_WIDTH-1:0] ctx_wd;
reg [CTX_TAG_W-1:0] ctx_wr_reg, ctx_wr_next;

assign ctx_we = ctx_we_int;
assign ctx_waddr = ctx_wr_reg;
assign ctx_wdata = ctx_wd;

reg rq_take_int;
reg [3:0] rq_take_n_int;  // entries taken: 1, or k for a stacked sample
reg smp_issue_int;
reg smp_setup_int;        // a SAMPLE_REQ is served: the draws' scale and the queue limit

assign rq_take = rq_take_int;
assign rq_take_n = rq_take_n_int;
assign smp_issue = smp_issue_int;
assign smp_setup = smp_setup_int;
assign smp_tag = ctx_wr_reg;
assign smp_stk = m_stk;
assign smp_prio = m_prio;
assign smp_count = m_count;
assign smp_job = job_reg;
assign smp_base = base_reg;
assign smp_size = size_reg;

// ---------------------------------------------------------------------------
// state machine

reg pl_ready_int;
reg meta_ready_int;
reg rq_push_int;
reg [RESP_ENTRY_W-1:0] rq_push_data_int;

assign pl_ready = pl_ready_int;
assign meta_ready = meta_ready_int;
assign rq_push = rq_push_int;
assign rq_push_data = rq_push_data_int;
assign stat_empty = stat_empty_int;

localparam [3:0]
    S_IDLE = 4'd0,
    S_SKIP = 4'd1,
    S_PUSH_WAIT = 4'd2,
    S_PUSH_BLK = 4'd3,
    S_PUSH_REC = 4'd4,
    S_PUSH_END = 4'd5,
    S_UPD_WAIT = 4'd6,
    S_UPD = 4'd7,
    S_SMP_WAIT = 4'd8,
    S_SMP_SETUP = 4'd9,
    S_SMP_ISSUE = 4'd10;

reg [3:0] state_reg, state_next;

assign state = state_reg;

reg [PL_BEATS_W-1:0] cnt_reg, cnt_next;
reg [7:0] pair_reg, pair_next;
reg [7:0] left_reg, left_next;  // pairs or samples still to go in this request
wire left_last = left_reg == 8'd1;
assign smp_last = left_last;
reg stat_empty_int;

// ---------------------------------------------------------------------------
// rate limiter (replay_rate_limiter) and NOT_YET replies

localparam [1:0] NY_EMPTY = NRL_NOT_YET_EMPTY[1:0];
localparam [1:0] NY_MIN_SIZE = NRL_NOT_YET_MIN_SIZE[1:0];
localparam [1:0] NY_RATE = NRL_NOT_YET_RATE[1:0];
// the IPv4 checksum of a 64-byte reply from that of a 128 + R byte one: the length
// difference (csum_d_reg) added back, one's complement (an all-ones sum is the zero
// it stands for)
reg rate_insert;      // the PUSH at the head is accepted: the accumulator gains
reg rate_sample;      // the SAMPLE_REQ at the head is served: the accumulator loses
wire settled, push_ok, smp_rate_ok, min_ok;
wire [16:0] csum_sum = {1'b0, m_csum} + csum_d_reg;
wire [15:0] csum_short = csum_sum >= 17'h0FFFF ? csum_sum[15:0] - 16'hFFFF : csum_sum[15:0];
reg ny_int;           // a NOT_YET entry this clock
reg ny_sample;        // ... answering a SAMPLE_REQ (else a PUSH)
reg [1:0] ny_reason;

wire [CTX_WIDTH-1:0] ctx_common = {job_reg, jid_reg, resp_len_reg, resp_last_reg, mask_reg,
                                   meta_data[MO_ETH +: 48], meta_data[MO_IP +: 32], meta_data[MO_UDP +: 16],
                                   meta_data[MO_PORT +: 8], meta_data[MO_W +: 3], meta_data[MO_SEQ +: 32],
                                   meta_data[MO_CSUM +: 16], m_count, {SUM_W{1'b0}}, {INDEX_W+1{1'b0}}};

// registered: the tree and size are stable for at least one clock when a SAMPLE_REQ
// reaches S_SMP_SETUP (it waits for the update pipeline to drain first; with JOBS > 1
// for two clocks, as the job's total is registered once more: smp_quiet)
reg size_zero_reg, total_zero_reg;

replay_job_state #(
    .DATA_WIDTH(DATA_WIDTH),
    .JOBS(JOBS),
    .JW(JW),
    .INDEX_W(INDEX_W),
    .SUM_W(SUM_W),
    .REC_BEAT_W(REC_BEAT_W)
)
job_inst (
    .clk(clk),
    .rst(rst),
    .idle(state_reg == S_IDLE),
    .m_job(meta_data[MO_JX +: JW]),
    .m_base(meta_data[MO_JB +: INDEX_W]),
    .m_lcap(meta_data[MO_JL +: 5]),
    .m_rb64(meta_data[MO_JR +: 8]),
    .m_jid(meta_data[MO_JI +: 8]),
    .wb(state_reg == S_PUSH_END),
    .rpl_reset(rpl_reset),
    .rst_go(rst_go),
    .pend(reset_pend),
    .jobs_base(jobs_base),
    .jobs_lcap(jobs_lcap),
    .jobs_notab(jobs_notab),
    .zeroing(zeroing),
    .zero_idx(zero_idx),
    .job_total_clear(job_total_clear),
    .ch_clear(ch_clear),
    .min_size(min_size),
    .spi(spi),
    .spi_error(spi_error),
    .spi_wr(spi_wr),
    .count(m_count[6:0]),
    .settled(settled),
    .can_insert(push_ok),
    .can_sample(smp_rate_ok),
    .min_size_ok(min_ok),
    .insert(rate_insert),
    .sample(rate_sample),
    .rate_diff(rate_diff),
    .tree_total(tree_total),
    .upd_quiet(!upd_busy && !tu_busy),
    .total_sel(smp_total),
    .smp_quiet(smp_quiet),
    .wp(wp_reg),
    .cur_size(size_reg),
    .job(job_reg),
    .base(base_reg),
    .mask(mask_reg),
    .depth(smp_depth),
    .rec_last(rec_last_reg),
    .jid(jid_reg),
    .resp_len(resp_len_reg),
    .resp_last(resp_last_reg),
    .csum_d(csum_d_reg),
    .size(size),
    .wptr(wptr)
);

wire m_empty = size_zero_reg || (m_prio && total_zero_reg);
assign rec_wlast = rec_last_reg;
wire [PAIR_LANE_W-1:0] pair_lane = pair_reg[PAIR_LANE_W-1:0];
wire [63:0] pair_data = pl_data[pair_lane*64 +: 64];

// a PUSH's records and leaves, an UPDATE's pairs, a table's zeroed leaves
replay_writer #(
    .DATA_WIDTH(DATA_WIDTH),
    .INDEX_W(INDEX_W),
    .JW(JW),
    .REC_BEAT_W(REC_BEAT_W)
)
wr_inst (
    .clk(clk),
    .rst(rst),
    .job(job_reg),
    .base(base_reg),
    .mask(mask_reg),
    .size(size_reg),
    .wp(wp_reg),
    .rec_last(rec_last_reg),
    .blk_we(state_reg == S_PUSH_BLK && pl_valid),
    .blk_hi(cnt_reg[0]),
    .pl_data(pl_data),
    .pl_valid(pl_valid),
    .start(wr_start),
    .run(state_reg == S_PUSH_REC),
    .count(m_count[4:0]),
    .pl_take(wr_take),
    .rec_we(rec_we),
    .rec_waddr(rec_waddr),
    .done(wr_done),
    .pair_v(state_reg == S_UPD && pl_valid),
    .pair(pair_data),
    .zeroing(zeroing),
    .zero_idx(zero_idx),
    .upd_valid(upd_valid),
    .upd_index(upd_index),
    .upd_prio(upd_prio),
    .upd_job(upd_job),
    .upd_count(upd_count),
    .bad_update(stat_bad_update),
    .bad_job(stat_upd_job),
    .busy(tu_busy),
    .ch_rec(ch_rec)
);

always @* begin
    state_next = state_reg;
    cnt_next = cnt_reg;
    pair_next = pair_reg;
    left_next = left_reg;
    ctx_wr_next = ctx_wr_reg;
    rst_go = 1'b0;
    rate_insert = 1'b0;
    rate_sample = 1'b0;
    ny_int = 1'b0;
    ny_sample = 1'b0;
    ny_reason = NY_RATE;

    wr_start = 1'b0;

    pl_ready_int = 1'b0;
    meta_ready_int = 1'b0;
    tree_clear_int = 1'b0;
    ctx_we_int = 1'b0;
    ctx_wd = ctx_common;
    rq_take_int = 1'b0;
    rq_take_n_int = 4'd1;
    smp_issue_int = 1'b0;
    smp_setup_int = 1'b0;
    stat_empty_int = 1'b0;

    case (state_reg)
        S_IDLE: begin
            if (zeroing) begin
                // a table's leaves are being zeroed (replay_job_state)
            end else if (reset_pend) begin
                // empty a table once nothing is in flight (replay_job_state; JOBS = 1:
                // the whole tree is cleared)
                if (!upd_busy && !tu_busy && inflight_zero && !q_busy) begin
                    rst_go = 1'b1;
                    tree_clear_int = JOBS == 1;
                end
            end else if (!tree_clearing && meta_valid) begin
                if (!m_ok) begin
                    if (m_plb == 0) begin
                        meta_ready_int = 1'b1;
                    end else begin
                        cnt_next = m_plb;
                        state_next = S_SKIP;
                    end
                end else if (m_op == 2'd0) begin
                    state_next = S_PUSH_WAIT;
                end else if (m_op == 2'd1) begin
                    state_next = S_SMP_WAIT;
                end else if (inflight_zero && !q_busy) begin
                    // UPDATE with the descent pipeline already empty: start now
                    pair_next = 8'd0;
                    left_next = m_count;
                    state_next = S_UPD;
                end else begin
                    state_next = S_UPD_WAIT;
                end
            end
        end
        S_SKIP: begin
            pl_ready_int = 1'b1;
            if (pl_valid) begin
                cnt_next = cnt_reg - 1'b1;
                if (cnt_reg == 1) begin
                    meta_ready_int = 1'b1;
                    state_next = S_IDLE;
                end
            end
        end
        S_PUSH_WAIT: begin
            if (inflight_zero && !q_busy && rq_empty && ctx_room && settled) begin
                if (push_ok) begin
                    rate_insert = 1'b1;
                    cnt_next = {PL_BEATS_W{1'b0}};
                    state_next = S_PUSH_BLK;
                end else begin
                    // NOT_YET: its context and queue entry now, then skip the payload
                    ny_int = 1'b1;
                    ctx_we_int = 1'b1;
                    ctx_wr_next = ctx_wr_reg + 1'b1;
                    rq_take_int = 1'b1;
                    cnt_next = m_plb;
                    state_next = S_SKIP;
                end
            end
        end
        S_PUSH_BLK: begin
            pl_ready_int = 1'b1;
            if (pl_valid) begin
                // the beat is held in replay_leaf_update (blk_we)
                cnt_next = cnt_reg + 1'b1;
                if (cnt_reg == PB_LAST) begin
                    wr_start = 1'b1;
                    state_next = S_PUSH_REC;
                end
            end
        end
        S_PUSH_REC: begin
            // records, one beat per clock, and leaves, one per clock (replay_writer)
            pl_ready_int = wr_take;
            if (wr_done) begin
                state_next = S_PUSH_END;
            end
        end
        S_PUSH_END: begin
            ctx_we_int = 1'b1;
            ctx_wr_next = ctx_wr_reg + 1'b1;
            rq_take_int = 1'b1;
            meta_ready_int = 1'b1;
            state_next = S_IDLE;
        end
        S_UPD_WAIT: begin
            if (inflight_zero && !q_busy) begin
                pair_next = 8'd0;
                left_next = m_count;
                state_next = S_UPD;
            end
        end
        S_UPD: begin
            if (pl_valid) begin
                pair_next = pair_reg + 1'b1;
                left_next = left_reg - 8'd1;
                if (pair_lane == PAIR_LANE_LAST || left_last) begin
                    pl_ready_int = 1'b1;
                end
                if (left_last) begin
                    meta_ready_int = 1'b1;
                    state_next = S_IDLE;
                end
            end
        end
        S_SMP_WAIT: begin
            if (!upd_busy && !tu_busy && smp_quiet && ctx_room && settled) begin
                state_next = S_SMP_SETUP;
            end
        end
        S_SMP_SETUP: begin
            if (m_empty || !min_ok || !smp_rate_ok) begin
                // NOT_YET, after the samples before it have entered the queue
                if (inflight_zero && !q_busy && rq_room_1) begin
                    stat_empty_int = m_empty;
                    ny_int = 1'b1;
                    ny_sample = 1'b1;
                    ny_reason = m_empty ? NY_EMPTY : !min_ok ? NY_MIN_SIZE : NY_RATE;
                    ctx_we_int = 1'b1;
                    ctx_wd[CX_CSUM +: 16] = csum_short;
                    ctx_wr_next = ctx_wr_reg + 1'b1;
                    rq_take_int = 1'b1;
                    meta_ready_int = 1'b1;
                    state_next = S_IDLE;
                end
            end else begin
                rate_sample = 1'b1;
                smp_setup_int = 1'b1;
                ctx_we_int = 1'b1;
                ctx_wd[CX_TOTAL +: SUM_W] = m_prio ? smp_total : {{SUM_W-INDEX_W-1{1'b0}}, size_reg};
                ctx_wd[CX_SIZE +: INDEX_W+1] = size_reg;
                left_next = m_count;
                state_next = S_SMP_ISSUE;
            end
        end
        S_SMP_ISSUE: begin
            if (rq_room_k) begin
                smp_issue_int = 1'b1;
                rq_take_int = 1'b1;
                rq_take_n_int = m_stk == 4'd0 ? 4'd1 : m_stk;
                left_next = left_reg - 8'd1;
                if (left_last) begin
                    ctx_wr_next = ctx_wr_reg + 1'b1;
                    meta_ready_int = 1'b1;
                    state_next = S_IDLE;
                end
            end
        end
        default: begin
            state_next = S_IDLE;
        end
    endcase
end

always @(posedge clk) begin
    state_reg <= state_next;
    cnt_reg <= cnt_next;
    pair_reg <= pair_next;
    left_reg <= left_next;
    ctx_wr_reg <= ctx_wr_next;
    size_zero_reg <= size_reg == 0;
    total_zero_reg <= smp_total == 0;

    if (rst) begin
        state_reg <= S_IDLE;
        ctx_wr_reg <= {CTX_TAG_W{1'b0}};
    end
end

// response queue input: the ack or a NOT_YET here, the samples' entries from
// replay_stack; never both, since a PUSH or a NOT_YET waits for every earlier
// sample to be done (inflight_reg counts until replay_stack's smp_done)
always @* begin
    rq_push_int = 1'b0;
    rq_push_data_int = {1'b1, 1'b1, ctx_wr_reg, 8'd0, 6'd0, wp_reg, 32'd0};
    if (state_reg == S_PUSH_END) begin
        rq_push_int = 1'b1;
    end else if (ny_int) begin
        // NOT_YET: header only (ack), i = {1, sample, 00, reason}, prio = size
        rq_push_int = 1'b1;
        rq_push_data_int = {1'b1, 1'b1, ctx_wr_reg, 8'd0, 1'b1, ny_sample, 2'b00, ny_reason,
                            {INDEX_W{1'b0}}, {{31-INDEX_W{1'b0}}, size_reg}};
    end
end

// record chains: the PUSH's worker when it is accepted, its leaves (the tree
// updates without the UPDATE range check), its end
assign ch_begin = rate_insert;
assign ch_worker = meta_data[MO_W +: 3];
assign ch_end = state_reg == S_PUSH_END;

endmodule

`resetall
