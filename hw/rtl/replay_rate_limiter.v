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
 * Replay engine rate limiter (docs/protocol.md section 5), used by
 * replay_executor: Reverb's CanInsert / CanSample on a samples-per-insert
 * accumulator.
 *
 * The accumulator diff (RPL_RATE_DIFF, 64-bit two's complement Q16.16)
 * gains count * SPI at an accepted PUSH (insert) and loses B * 1.0 at a
 * served SAMPLE_REQ (sample); clear (a write to RPL_SPI or RPL_RESET)
 * empties it. The decisions for the request at the head of the executor
 * (its count, the occupancy size) are registered terms, exact in 67-bit
 * signed arithmetic:
 *   can_insert   SPI = 0, or size + count <= MIN_SIZE, or
 *                diff + count * SPI <= SPI * MIN_SIZE + SPI_ERROR
 *   can_sample   SPI = 0, or diff - B * 1.0 >= SPI * MIN_SIZE - SPI_ERROR
 *   min_size_ok  size >= MIN_SIZE
 * settled rises RATE_SETTLE clocks after idle falls (the request left the
 * executor's idle state): from then on the three decisions are those of the
 * head. Both products are pipelined for 200 MHz: the configuration (SPI,
 * MIN_SIZE, SPI_ERROR) is registered first, SPI * MIN_SIZE is four
 * registered 16 x 16 products summed over two clocks (the bounds follow a
 * new register value 5 clocks later, 2 before), count * SPI two registered
 * 16 x 5 products summed in one.
 *
 * Jobs (JOBS > 1): every job has its accumulator and configuration; the
 * head's job (job) selects which, registered once more (the configuration
 * with the others, the accumulator into diff_act_reg), so settled rises two
 * clocks later (RATE_SETTLE 7: the bounds from the head's job's values). insert and sample update the head's job's
 * accumulator; clear is a mask of jobs.
 */
module replay_rate_limiter #
(
    // log2(C), the width of the record index (size is one bit wider)
    parameter INDEX_W = 14,
    // Jobs served (JOBS), 1 to 8
    parameter JOBS = 1,
    // Width of a job index (computed; do not override)
    parameter JW = JOBS > 1 ? $clog2(JOBS) : 1
)
(
    input  wire                     clk,
    input  wire                     rst,

    /*
     * Configuration (replay_regs)
     */
    input  wire [JOBS*32-1:0]       min_size,
    input  wire [JOBS*32-1:0]       spi,
    input  wire [JOBS*32-1:0]       spi_error,

    /*
     * The request at the head of the executor
     */
    input  wire                     idle,     // the executor is idle (no head taken)
    input  wire [JW-1:0]            job,      // its job
    input  wire [6:0]               count,    // records of a PUSH (bits 4:0), B of a SAMPLE_REQ
    input  wire [INDEX_W:0]         size,     // records held

    /*
     * Decisions (registered)
     */
    output wire                     settled,
    output wire                     can_insert,
    output wire                     can_sample,
    output wire                     min_size_ok,

    /*
     * Accumulator updates and value (RPL_RATE_DIFF)
     */
    input  wire                     insert,   // the PUSH at the head is accepted
    input  wire                     sample,   // the SAMPLE_REQ at the head is served
    input  wire [JOBS-1:0]          clear,    // per job: RPL_SPI written, or its table emptied
    output wire [JOBS*64-1:0]       diff
);

localparam RW = 67;  // offset + error < 2**65, diff + count * SPI < 2**63 + 2**37: 67 signed bits
// clocks from leaving idle until the head's terms are registered: count (1), its two
// partial products (2), gain (3), push_sum (4), push_ok (5); one more as margin for the
// accumulator written as the previous request ends
localparam [2:0] RATE_SETTLE = JOBS > 1 ? 3'd7 : 3'd5;

// bad parameter check
initial begin
    if (INDEX_W < 2 || INDEX_W > 17) begin
        $error("Error: INDEX_W must be 2..17 (instance %m)");
        $finish;
    end
end

reg [63:0] diff_q[JOBS-1:0];  // every job's accumulator
wire [63:0] diff_reg;          // the head's job's
integer k;
// configuration, registered once here (the register file may sit far away)
reg [31:0] spi_q_reg, min_size_q_reg, spi_error_q_reg;
reg spi_zero_reg;
// SPI * MIN_SIZE: 16 x 16 partial products, then the middle pair summed, then the whole
reg [31:0] off_ll_reg, off_lh_reg, off_hl_reg, off_hh_reg;
reg [32:0] off_mid_reg;
reg [63:0] off_lohi_reg;
reg [63:0] offset_reg;
reg signed [RW-1:0] min_diff_reg, max_diff_reg;
// count * SPI: the head's count registered, two 16 x 5 partial products, their sum
reg [4:0] cnt5_reg;
reg [20:0] gain_lo_reg, gain_hi_reg;
reg [36:0] gain_reg;
reg signed [RW-1:0] push_sum_reg, smp_left_reg;
reg push_ok_reg, smp_rate_ok_reg, min_ok_reg;
reg [2:0] settle_reg;
wire [31:0] spi_sel, min_size_sel, spi_error_sel;
wire signed [RW-1:0] diff_s = {{RW-64{diff_reg[63]}}, diff_reg};
wire [31:0] size_add32 = {{31-INDEX_W{1'b0}}, size} + {27'd0, count[4:0]};

assign settled = settle_reg == RATE_SETTLE;
assign can_insert = push_ok_reg;
assign can_sample = smp_rate_ok_reg;
assign min_size_ok = min_ok_reg;
genvar gj;
generate
for (gj = 0; gj < JOBS; gj = gj + 1) begin : g_diff
    assign diff[64*gj +: 64] = diff_q[gj];
end
if (JOBS > 1) begin : g_sel
    // the head's job's configuration and accumulator, registered once more
    reg [31:0] spi_s_reg, min_size_s_reg, spi_error_s_reg;
    reg [63:0] diff_act_reg;
    always @(posedge clk) begin
        spi_s_reg <= spi[32*job +: 32];
        min_size_s_reg <= min_size[32*job +: 32];
        spi_error_s_reg <= spi_error[32*job +: 32];
        diff_act_reg <= diff_q[job];
    end
    assign diff_reg = diff_act_reg;
    assign spi_sel = spi_s_reg;
    assign min_size_sel = min_size_s_reg;
    assign spi_error_sel = spi_error_s_reg;
end else begin : g_one
    assign spi_sel = spi;
    assign min_size_sel = min_size;
    assign spi_error_sel = spi_error;
    assign diff_reg = diff_q[0];
end
endgenerate

always @(posedge clk) begin
    spi_q_reg <= spi_sel;
    min_size_q_reg <= min_size_sel;
    spi_error_q_reg <= spi_error_sel;
    spi_zero_reg <= spi_sel == 32'd0;
    off_ll_reg <= spi_q_reg[15:0] * min_size_q_reg[15:0];
    off_lh_reg <= spi_q_reg[15:0] * min_size_q_reg[31:16];
    off_hl_reg <= spi_q_reg[31:16] * min_size_q_reg[15:0];
    off_hh_reg <= spi_q_reg[31:16] * min_size_q_reg[31:16];
    off_mid_reg <= {1'b0, off_lh_reg} + {1'b0, off_hl_reg};
    off_lohi_reg <= {off_hh_reg, off_ll_reg};
    offset_reg <= off_lohi_reg + {15'd0, off_mid_reg, 16'd0};
    min_diff_reg <= $signed({3'b000, offset_reg}) - $signed({35'd0, spi_error_q_reg});
    max_diff_reg <= $signed({3'b000, offset_reg}) + $signed({35'd0, spi_error_q_reg});
    cnt5_reg <= count[4:0];
    gain_lo_reg <= spi_q_reg[15:0] * cnt5_reg;
    gain_hi_reg <= spi_q_reg[31:16] * cnt5_reg;
    gain_reg <= {gain_hi_reg, 16'd0} + {16'd0, gain_lo_reg};
    push_sum_reg <= diff_s + $signed({30'd0, gain_reg});
    smp_left_reg <= diff_s - $signed({44'd0, count, 16'd0});
    push_ok_reg <= spi_zero_reg || size_add32 <= min_size_q_reg || push_sum_reg <= max_diff_reg;
    smp_rate_ok_reg <= spi_zero_reg || smp_left_reg >= min_diff_reg;
    min_ok_reg <= {{31-INDEX_W{1'b0}}, size} >= min_size_q_reg;
    if (idle) begin
        settle_reg <= 3'd0;
    end else if (!settled) begin
        settle_reg <= settle_reg + 3'd1;
    end
    for (k = 0; k < JOBS; k = k + 1) begin
        if (clear[k]) begin
            diff_q[k] <= 64'd0;
        end else if (insert && job == k[JW-1:0]) begin
            diff_q[k] <= push_sum_reg[63:0];
        end else if (sample && job == k[JW-1:0]) begin
            diff_q[k] <= smp_left_reg[63:0];
        end
    end
    if (rst) begin
        for (k = 0; k < JOBS; k = k + 1) begin
            diff_q[k] <= 64'd0;
        end
        settle_reg <= 3'd0;
    end
end

endmodule

`resetall
`default_nettype wire
