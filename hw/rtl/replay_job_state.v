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

/*
 * Replay executor: every job's table state and the request's job
 * (docs/protocol.md section 11, docs/architecture.md "Jobs in the RTL").
 *
 * Per job the next index written and the records held (size, wptr: the
 * RPL_WPTR and RPL_SIZE of its page). While the executor is idle the head's
 * job's copies (wp, cur_size: the request's) and values are registered from its meta
 * entry: job index, table base, index mask, table size (cap), depth (log2 C -
 * log2 of its records), the record's last beat, JOB_ID, the SAMPLE_RESP's
 * frame length and last beat, and 64 + R (a NOT_YET's checksum from a
 * SAMPLE_RESP's); they stay while the request runs. A PUSH's end (wb)
 * advances the copies by its count (wp mod the table size, the size up to
 * it) and writes them back.
 *
 * Tables to empty (rpl_reset: a job's RPL_RESET or its table carved) are
 * pending until the executor takes the lowest one (rj) with rst_go, once
 * nothing is in flight: its pointer, size, accumulator, chains (ch_clear)
 * and total (job_total_clear, JOBS > 1) are cleared at once; with JOBS > 1
 * its leaves are then zeroed one a clock (zeroing, zero_idx: JOB_RPL_CAP
 * clocks, untagged updates through replay_leaf_update; with one job the
 * executor clears the whole tree instead). total_sel is the request's
 * job's total: the tree's with one job; with JOBS > 1 registered once
 * more, so smp_quiet asks for two clocks of an empty update pipeline
 * before a SAMPLE_REQ reads it.
 *
 * Rate limiting (docs/protocol.md section 5, replay_rate_limiter: an
 * accumulator per job): a PUSH or SAMPLE_REQ the limiter refuses is
 * answered NOT_YET by the executor. The head's job's accumulator
 * (RPL_RATE_DIFF) gains at an accepted PUSH (insert), loses at a served
 * SAMPLE_REQ (sample) and is cleared by a write to its RPL_SPI (spi_wr) or
 * the emptying of its table; the decisions on the meta head are settled
 * (settled) RATE_SETTLE clocks after the request leaves the idle state.
 */
module replay_job_state #
(
    // Width of a payload beat in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index
    parameter JW = 1,
    // log2(C)
    parameter INDEX_W = 14,
    // Width of sums
    parameter SUM_W = 32 + INDEX_W,
    // Width of a record's beat number
    parameter REC_BEAT_W = 2
)
(
    input  wire                     clk,
    input  wire                     rst,

    /*
     * The executor idle (load the head's), a PUSH's end (write back)
     */
    input  wire                     idle,
    input  wire [JW-1:0]            m_job,
    input  wire [INDEX_W-1:0]       m_base,
    input  wire [4:0]               m_lcap,
    input  wire [7:0]               m_rb64,
    input  wire [7:0]               m_jid,
    input  wire                     wb,

    /*
     * Tables to empty: pending, the lowest one taken (rst_go), its leaves zeroed
     */
    input  wire [JOBS-1:0]          rpl_reset,
    input  wire                     rst_go,
    output wire                     pend,
    input  wire [JOBS*INDEX_W-1:0]  jobs_base,
    input  wire [JOBS*5-1:0]        jobs_lcap,
    input  wire [JOBS-1:0]          jobs_notab,
    output wire                     zeroing,
    output wire [INDEX_W-1:0]       zero_idx,
    output wire [JOBS-1:0]          job_total_clear,
    output wire [JOBS-1:0]          ch_clear,

    /*
     * Rate limiter (replay_rate_limiter): every job's configuration; the head's
     * count, its job's size (the executor's copy); the decisions; the updates
     */
    input  wire [JOBS*32-1:0]       min_size,
    input  wire [JOBS*32-1:0]       spi,
    input  wire [JOBS*32-1:0]       spi_error,
    input  wire [JOBS-1:0]          spi_wr,
    input  wire [6:0]               count,
    output wire                     settled,
    output wire                     can_insert,
    output wire                     can_sample,
    output wire                     min_size_ok,
    input  wire                     insert,
    input  wire                     sample,
    output wire [JOBS*64-1:0]       rate_diff,

    /*
     * Totals
     */
    input  wire [JOBS*SUM_W-1:0]    tree_total,
    input  wire                     upd_quiet,
    output wire [SUM_W-1:0]         total_sel,
    output wire                     smp_quiet,

    /*
     * The head's job's copies, the request's values, every job's state
     */
    output reg  [INDEX_W-1:0]       wp,
    output reg  [INDEX_W:0]         cur_size,
    output reg  [JW-1:0]            job,
    output reg  [INDEX_W-1:0]       base,
    output reg  [INDEX_W-1:0]       mask,
    output reg  [4:0]               depth,
    output reg  [REC_BEAT_W-1:0]    rec_last,
    output reg  [7:0]               jid,
    output reg  [15:0]              resp_len,
    output reg  [11:0]              resp_last,
    output reg  [16:0]              csum_d,
    output wire [JOBS*(INDEX_W+1)-1:0] size,
    output wire [JOBS*INDEX_W-1:0]  wptr
);

localparam BEAT_BYTES = DATA_WIDTH / 8;
localparam HDR_BEATS = 64 / BEAT_BYTES;
localparam [31:0] BEAT_BYTES32 = BEAT_BYTES;
localparam [13:0] BEAT_BYTES14 = BEAT_BYTES32[13:0];
localparam [31:0] HDR2_M1_32 = 2*HDR_BEATS - 1;
localparam [11:0] HDR2_M1 = HDR2_M1_32[11:0];
localparam [4:0] INDEX_W5 = INDEX_W[4:0];

wire [13:0] m_rbytes = {m_rb64, 6'd0};
// verilator lint_off UNUSEDSIGNAL
wire [13:0] m_rbeats = m_rbytes / BEAT_BYTES14;
// verilator lint_on UNUSEDSIGNAL

reg [INDEX_W:0] cap;  // the request's table's size
reg [INDEX_W-1:0] wp_q[JOBS-1:0];
reg [INDEX_W:0] size_q[JOBS-1:0];
reg [JOBS-1:0] pend_reg;
reg [JW-1:0] rj_c;
wire [JOBS-1:0] rj_hot;
wire rst_do = rst_go;
reg [INDEX_W-1:0] zero_idx_reg;
reg [INDEX_W:0] zero_left_reg;  // leaves still to zero
integer k, kj;

assign zeroing = zero_left_reg != {INDEX_W+1{1'b0}};
assign zero_idx = zero_idx_reg;
assign job_total_clear = JOBS > 1 && rst_do ? rj_hot : {JOBS{1'b0}};
assign ch_clear = rst_do ? rj_hot : {JOBS{1'b0}};

replay_rate_limiter #(
    .INDEX_W(INDEX_W),
    .JOBS(JOBS)
)
rate_inst (
    .clk(clk),
    .rst(rst),
    .min_size(min_size),
    .spi(spi),
    .spi_error(spi_error),
    .idle(idle),
    .job(m_job),
    .count(count),
    .size(cur_size),
    .settled(settled),
    .can_insert(can_insert),
    .can_sample(can_sample),
    .min_size_ok(min_size_ok),
    .insert(insert),
    .sample(sample),
    .clear(spi_wr | (rst_do ? rj_hot : {JOBS{1'b0}})),
    .diff(rate_diff)
);

// a PUSH's end: the pointer past its records, the size up to the table's
reg [INDEX_W:0] size_sat_reg;
// verilator lint_off UNUSEDSIGNAL
wire [31:0] size_add32 = {{31-INDEX_W{1'b0}}, cur_size} + {27'd0, count[4:0]};
wire [31:0] wp_add32 = {{32-INDEX_W{1'b0}}, wp} + {27'd0, count[4:0]};
// verilator lint_on UNUSEDSIGNAL
wire [INDEX_W-1:0] wp_end = wp_add32[INDEX_W-1:0] & mask;
// the job taken (rj): with JOBS > 1 the lowest pending one, registered (its bit stays set
// until it is taken, so the registered choice is a pending job; pend waits for it)
reg [JW-1:0] rj_reg;
reg pend_ok_reg;
wire [JW-1:0] rj = JOBS > 1 ? rj_reg : rj_c;
assign pend = JOBS > 1 ? pend_ok_reg && pend_reg[rj_reg] : pend_reg != {JOBS{1'b0}};
assign rj_hot = {{JOBS-1{1'b0}}, 1'b1} << rj;

// the lowest job with a reset pending (one table is emptied at a time)
always @* begin
    rj_c = {JW{1'b0}};
    for (kj = JOBS - 1; kj >= 0; kj = kj - 1) begin
        if (pend_reg[kj]) begin
            rj_c = kj[JW-1:0];
        end
    end
end

genvar gj;
generate
for (gj = 0; gj < JOBS; gj = gj + 1) begin : g_job_out
    assign size[gj*(INDEX_W+1) +: INDEX_W+1] = size_q[gj];
    assign wptr[gj*INDEX_W +: INDEX_W] = wp_q[gj];
end
if (JOBS > 1) begin : g_total_sel
    reg [SUM_W-1:0] total_sel_reg;
    reg [1:0] quiet_reg;  // the update pipeline was empty one and two clocks ago
    always @(posedge clk) begin
        total_sel_reg <= tree_total[job*SUM_W +: SUM_W];
        quiet_reg <= {quiet_reg[0], upd_quiet};
        if (rst) begin
            quiet_reg <= 2'b00;
        end
    end
    assign total_sel = total_sel_reg;
    assign smp_quiet = &quiet_reg && upd_quiet;
end else begin : g_total_one
    assign total_sel = tree_total;
    assign smp_quiet = 1'b1;
    // verilator lint_off UNUSEDSIGNAL
    wire unused_quiet = upd_quiet;
    // verilator lint_on UNUSEDSIGNAL
end
endgenerate

always @(posedge clk) begin
    pend_reg <= (pend_reg & ~(rst_do ? rj_hot : {JOBS{1'b0}})) | rpl_reset;
    rj_reg <= rj_c;
    pend_ok_reg <= pend_reg != {JOBS{1'b0}};
    size_sat_reg <= size_add32 > {{31-INDEX_W{1'b0}}, cap} ? cap : size_add32[INDEX_W:0];
    if (idle) begin
        wp <= wp_q[m_job];
        cur_size <= size_q[m_job];
        job <= m_job;
        base <= m_base;
        mask <= ~({INDEX_W{1'b1}} << m_lcap);
        cap <= {{INDEX_W{1'b0}}, 1'b1} << m_lcap;
        depth <= INDEX_W5 - m_lcap;
        rec_last <= m_rbeats[REC_BEAT_W-1:0] - 1'b1;
        jid <= m_jid;
        resp_len <= 16'd128 + {2'd0, m_rbytes};
        resp_last <= HDR2_M1 + m_rbeats[11:0];
        csum_d <= 17'd64 + {3'd0, m_rbytes};
    end
    if (wb) begin
        wp <= wp_end;
        cur_size <= size_sat_reg;
        wp_q[job] <= wp_end;
        size_q[job] <= size_sat_reg;
    end
    if (zeroing) begin
        zero_idx_reg <= zero_idx_reg + 1'b1;
        zero_left_reg <= zero_left_reg - 1'b1;
    end
    if (rst_do) begin
        wp_q[rj] <= {INDEX_W{1'b0}};
        size_q[rj] <= {INDEX_W+1{1'b0}};
        if (JOBS > 1 && !jobs_notab[rj]) begin
            zero_idx_reg <= jobs_base[rj*INDEX_W +: INDEX_W];
            zero_left_reg <= {{INDEX_W{1'b0}}, 1'b1} << jobs_lcap[rj*5 +: 5];
        end
    end
    if (rst) begin
        pend_reg <= {JOBS{1'b0}};
        pend_ok_reg <= 1'b0;
        zero_left_reg <= {INDEX_W+1{1'b0}};
        for (k = 0; k < JOBS; k = k + 1) begin
            wp_q[k] <= {INDEX_W{1'b0}};
            size_q[k] <= {INDEX_W+1{1'b0}};
        end
    end
end

endmodule

`resetall
