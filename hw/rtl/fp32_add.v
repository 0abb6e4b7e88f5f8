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
 * Pipelined IEEE-754 binary32 adder
 *
 * LATENCY = 6
 *
 * Computes out_sum = in_a + in_b, bit-exact with IEEE-754 binary32 addition
 * in round-to-nearest-even mode (numpy float32 a + b): subnormal inputs and
 * outputs are handled fully (no flush-to-zero), x + (-x) = +0,
 * (-0) + (-0) = -0, overflow rounds to infinity, inf + finite = inf and
 * inf + (-inf) = NaN. The only deviation from numpy is that every NaN result
 * is the canonical quiet NaN 32'h7fc00000 (operand NaN payloads are not
 * propagated).
 *
 * Fully pipelined with no backpressure: one operation may be issued every
 * clock and its result appears on out_valid/out_sum/out_tag exactly
 * LATENCY = 6 clocks after in_valid/in_a/in_b/in_tag were sampled. The
 * latency is a constant that does not depend on any parameter. in_tag is an
 * opaque side-band word that travels with the operation (e.g. lane index or
 * packet metadata). Only the valid pipeline is reset; the datapath is not.
 *
 * Stages (each at most ~8 LUT/CARRY4 levels on 7-series):
 *   1. unpack, classify (zero/subnormal/inf/NaN), compare exponents and
 *      fractions, compute the saturated exponent difference
 *   2. swap so the larger magnitude is first, align the smaller operand
 *      (right shift with guard/round/sticky)
 *   3. 28-bit significand add/subtract; decode the subnormal limit for
 *      normalization
 *   4. leading-zero count (limited so results never go below the minimum
 *      exponent, producing subnormals), zero-result sign
 *   5. normalization left shift, round-to-nearest-even decision, exponent
 *   6. rounding increment (carry-select), overflow and special-value select
 *
 * The stage 1 logic is driven directly by in_a/in_b, so they should come
 * from registers in the instantiating module.
 */
module fp32_add #
(
    // Width of the side-band tag carried from in_tag to out_tag
    parameter TAG_WIDTH = 1
)
(
    input  wire                  clk,
    input  wire                  rst,

    /*
     * Operands
     */
    input  wire                  in_valid,
    input  wire [31:0]           in_a,
    input  wire [31:0]           in_b,
    input  wire [TAG_WIDTH-1:0]  in_tag,

    /*
     * Result, LATENCY clocks later
     */
    output wire                  out_valid,
    output wire [31:0]           out_sum,
    output wire [TAG_WIDTH-1:0]  out_tag
);

// clocks from input sample to output (fixed, parameter independent)
localparam LATENCY = 6;

// canonical quiet NaN returned for every NaN result
localparam [31:0] CANONICAL_NAN = 32'h7fc00000;

// bad parameter check
initial begin
    if (TAG_WIDTH < 1) begin
        $error("Error: TAG_WIDTH must be at least 1 (instance %m)");
        $finish;
    end
end

integer j;

// control pipeline (the only reset state) and side-band tag
reg [LATENCY-1:0] valid_pipe_reg;
reg [LATENCY*TAG_WIDTH-1:0] tag_pipe_reg;

always @(posedge clk) begin
    valid_pipe_reg <= {valid_pipe_reg[LATENCY-2:0], in_valid};
    tag_pipe_reg <= {tag_pipe_reg[(LATENCY-1)*TAG_WIDTH-1:0], in_tag};

    if (rst) begin
        valid_pipe_reg <= {LATENCY{1'b0}};
    end
end

assign out_valid = valid_pipe_reg[LATENCY-1];
assign out_tag = tag_pipe_reg[LATENCY*TAG_WIDTH-1 -: TAG_WIDTH];

/*
 * Stage 1: unpack, classify, compare
 */
wire        a_sign = in_a[31];
wire [7:0]  a_exp  = in_a[30:23];
wire [22:0] a_frac = in_a[22:0];
wire        b_sign = in_b[31];
wire [7:0]  b_exp  = in_b[30:23];
wire [22:0] b_frac = in_b[22:0];

wire a_exp_zero = a_exp == 8'd0;
wire b_exp_zero = b_exp == 8'd0;
wire a_exp_max = a_exp == 8'hff;
wire b_exp_max = b_exp == 8'hff;
wire a_frac_zero = a_frac == 23'd0;
wire b_frac_zero = b_frac == 23'd0;

wire a_nan = a_exp_max && !a_frac_zero;
wire b_nan = b_exp_max && !b_frac_zero;
wire a_inf = a_exp_max && a_frac_zero;
wire b_inf = b_exp_max && b_frac_zero;

// effective exponents: subnormals (exponent field 0) scale like exponent 1
wire [7:0] a_eexp = {a_exp[7:1], a_exp[0] | a_exp_zero};
wire [7:0] b_eexp = {b_exp[7:1], b_exp[0] | b_exp_zero};

// magnitude compare split in exponent and fraction parts (combined in stage 2)
wire exp_gt = a_exp > b_exp;
wire exp_eq = a_exp == b_exp;
wire frac_ge = a_frac >= b_frac;

// alignment distance |a_eexp - b_eexp|, saturated to 31 (>= 27 shifts out
// the whole 27-bit aligned significand). exp_gt on the raw exponents implies
// a_eexp >= b_eexp; on equal raw exponents both differences are zero.
wire [7:0] diff_ab = a_eexp - b_eexp;
wire [7:0] diff_ba = b_eexp - a_eexp;
wire [7:0] diff = exp_gt ? diff_ab : diff_ba;
wire [4:0] diff_sat = diff[7:5] != 3'd0 ? 5'd31 : diff[4:0];

reg        s1_a_sign_reg, s1_b_sign_reg;
reg [23:0] s1_a_mant_reg, s1_b_mant_reg;
reg [7:0]  s1_a_eexp_reg, s1_b_eexp_reg;
reg        s1_exp_gt_reg, s1_exp_eq_reg, s1_frac_ge_reg;
reg [4:0]  s1_shift_reg;
reg        s1_nan_reg, s1_inf_reg, s1_inf_sign_reg;

always @(posedge clk) begin
    s1_a_sign_reg <= a_sign;
    s1_b_sign_reg <= b_sign;
    s1_a_mant_reg <= {!a_exp_zero, a_frac};
    s1_b_mant_reg <= {!b_exp_zero, b_frac};
    s1_a_eexp_reg <= a_eexp;
    s1_b_eexp_reg <= b_eexp;
    s1_exp_gt_reg <= exp_gt;
    s1_exp_eq_reg <= exp_eq;
    s1_frac_ge_reg <= frac_ge;
    s1_shift_reg <= diff_sat;
    s1_nan_reg <= a_nan || b_nan || (a_inf && b_inf && (a_sign != b_sign));
    s1_inf_reg <= a_inf || b_inf;
    s1_inf_sign_reg <= a_inf ? a_sign : b_sign;
end

/*
 * Stage 2: swap, align
 */
wire a_ge_b = s1_exp_gt_reg || (s1_exp_eq_reg && s1_frac_ge_reg);

wire [23:0] big_mant   = a_ge_b ? s1_a_mant_reg : s1_b_mant_reg;
wire [23:0] small_mant = a_ge_b ? s1_b_mant_reg : s1_a_mant_reg;
wire [7:0]  big_eexp   = a_ge_b ? s1_a_eexp_reg : s1_b_eexp_reg;
wire        big_sign   = a_ge_b ? s1_a_sign_reg : s1_b_sign_reg;

// significand with guard, round and sticky positions, shifted right
wire [26:0] small_shr = {small_mant, 3'b000} >> s1_shift_reg;

// sticky: any set significand bit shifted below the sticky position
wire [23:0] sticky_bits;

genvar gi;

generate

for (gi = 0; gi < 24; gi = gi + 1) begin : g_sticky
    // small_mant bit gi sits at position gi + 3 of the unshifted word
    localparam [4:0] POS = gi + 3;
    assign sticky_bits[gi] = small_mant[gi] && (s1_shift_reg > POS);
end

endgenerate

reg        s2_sub_reg, s2_sign_reg, s2_zero_sign_reg;
reg [23:0] s2_big_mant_reg;
reg [26:0] s2_small_mant_reg;
reg [7:0]  s2_eexp_reg;
reg        s2_nan_reg, s2_inf_reg, s2_inf_sign_reg;

always @(posedge clk) begin
    s2_sub_reg <= s1_a_sign_reg != s1_b_sign_reg;
    s2_sign_reg <= big_sign;
    // sign of an exact zero sum in round-to-nearest-even
    s2_zero_sign_reg <= s1_a_sign_reg && s1_b_sign_reg;
    s2_big_mant_reg <= big_mant;
    s2_small_mant_reg <= {small_shr[26:1], small_shr[0] || (sticky_bits != 24'd0)};
    s2_eexp_reg <= big_eexp;
    s2_nan_reg <= s1_nan_reg;
    s2_inf_reg <= s1_inf_reg;
    s2_inf_sign_reg <= s1_inf_sign_reg;
end

/*
 * Stage 3: add/subtract
 */
// |big| >= |small|, so the difference is never negative. Bit 27 is the
// carry of an addition, bit 26 the hidden-bit position.
wire [27:0] sum = {1'b0, s2_big_mant_reg, 3'b000}
                + ({1'b0, s2_small_mant_reg} ^ {28{s2_sub_reg}})
                + {27'd0, s2_sub_reg};

// normalization limit: a sum bit at position 27 - eexp normalizes to the
// minimum exponent; a marker there caps the leading-zero count at eexp so
// smaller results come out subnormal (eexp >= 28 never limits)
wire [26:0] limit_marker;

generate

for (gi = 0; gi < 27; gi = gi + 1) begin : g_limit
    localparam [7:0] EEXP = 27 - gi;
    assign limit_marker[gi] = s2_eexp_reg == EEXP;
end

endgenerate

reg [27:0] s3_sum_reg;
reg [26:0] s3_limit_reg;
reg [7:0]  s3_eexp_inc_reg;
reg        s3_sign_reg, s3_zero_sign_reg;
reg        s3_nan_reg, s3_inf_reg, s3_inf_sign_reg;

always @(posedge clk) begin
    s3_sum_reg <= sum;
    s3_limit_reg <= limit_marker;
    // exponent of sum bit 27 (eexp <= 254 for finite operands)
    s3_eexp_inc_reg <= s2_eexp_reg + 8'd1;
    s3_sign_reg <= s2_sign_reg;
    s3_zero_sign_reg <= s2_zero_sign_reg;
    s3_nan_reg <= s2_nan_reg;
    s3_inf_reg <= s2_inf_reg;
    s3_inf_sign_reg <= s2_inf_sign_reg;
end

/*
 * Stage 4: leading-zero count
 */
// padded with ones so that an all-zero sum gives a count of 28
wire [31:0] lzc_in = {s3_sum_reg | {1'b0, s3_limit_reg}, 4'b1111};

// per-nibble zero flag and leading-zero count, nibble 0 most significant
reg [7:0] nib_nz;
reg [15:0] nib_lz;

always @* begin
    for (j = 0; j < 8; j = j + 1) begin
        nib_nz[j] = lzc_in[31-4*j -: 4] != 4'd0;
        if (lzc_in[31-4*j]) begin
            nib_lz[2*j +: 2] = 2'd0;
        end else if (lzc_in[30-4*j]) begin
            nib_lz[2*j +: 2] = 2'd1;
        end else if (lzc_in[29-4*j]) begin
            nib_lz[2*j +: 2] = 2'd2;
        end else begin
            nib_lz[2*j +: 2] = 2'd3;
        end
    end
end

// first non-zero nibble as a two-level tree (nibble 7 is the constant
// padding, so the low half is never all zero): in each half of four nibbles
// the first non-zero one and its count, then the half
reg [1:0] hi_nib, lo_nib;
reg [1:0] hi_low, lo_low;

always @* begin
    if (nib_nz[0]) begin
        hi_nib = 2'd0;
        hi_low = nib_lz[1:0];
    end else if (nib_nz[1]) begin
        hi_nib = 2'd1;
        hi_low = nib_lz[3:2];
    end else if (nib_nz[2]) begin
        hi_nib = 2'd2;
        hi_low = nib_lz[5:4];
    end else begin
        hi_nib = 2'd3;
        hi_low = nib_lz[7:6];
    end
    if (nib_nz[4]) begin
        lo_nib = 2'd0;
        lo_low = nib_lz[9:8];
    end else if (nib_nz[5]) begin
        lo_nib = 2'd1;
        lo_low = nib_lz[11:10];
    end else if (nib_nz[6]) begin
        lo_nib = 2'd2;
        lo_low = nib_lz[13:12];
    end else begin
        lo_nib = 2'd3;
        lo_low = nib_lz[15:14];
    end
end

wire       hi_nz = nib_nz[0] || nib_nz[1] || nib_nz[2] || nib_nz[3];
// verilator lint_off UNUSEDSIGNAL
wire       unused_pad = nib_nz[7];  // the padding nibble: never zero
// verilator lint_on UNUSEDSIGNAL
wire [2:0] lz_nib = hi_nz ? {1'b0, hi_nib} : {1'b1, lo_nib};
wire [1:0] lz_low = hi_nz ? hi_low : lo_low;

reg [27:0] s4_sum_reg;
reg [4:0]  s4_shift_reg;
reg [7:0]  s4_eexp_inc_reg;
reg        s4_sign_reg;
reg        s4_nan_reg, s4_inf_reg, s4_inf_sign_reg;

always @(posedge clk) begin
    s4_sum_reg <= s3_sum_reg;
    s4_shift_reg <= {lz_nib, lz_low};
    s4_eexp_inc_reg <= s3_eexp_inc_reg;
    s4_sign_reg <= s3_sum_reg == 28'd0 ? s3_zero_sign_reg : s3_sign_reg;
    s4_nan_reg <= s3_nan_reg;
    s4_inf_reg <= s3_inf_reg;
    s4_inf_sign_reg <= s3_inf_sign_reg;
end

/*
 * Stage 5: normalize, round decision
 */
// bit 27 hidden bit (0 for subnormal/zero results), 26:4 fraction,
// 3 guard, 2:0 sticky
wire [27:0] norm = s4_sum_reg << s4_shift_reg;

wire        norm_hidden = norm[27];
wire        round_up = norm[3] && (norm[4] || norm[2:0] != 3'd0);
// never wraps for finite operands: shift <= eexp when the hidden bit is set
wire [7:0]  norm_exp = s4_eexp_inc_reg - {3'd0, s4_shift_reg};

reg [7:0]  s5_exp_reg;
reg [22:0] s5_frac_reg;
reg        s5_round_up_reg;
reg        s5_sign_reg;
reg        s5_nan_reg, s5_inf_reg, s5_inf_sign_reg;

always @(posedge clk) begin
    s5_exp_reg <= norm_hidden ? norm_exp : 8'd0;
    s5_frac_reg <= norm[26:4];
    s5_round_up_reg <= round_up;
    s5_sign_reg <= s4_sign_reg;
    s5_nan_reg <= s4_nan_reg;
    s5_inf_reg <= s4_inf_reg;
    s5_inf_sign_reg <= s4_inf_sign_reg;
end

/*
 * Stage 6: round, pack
 */
// {exponent, fraction} + round_up, carry-select split into 16 + 15 bits;
// fraction overflow carries into the exponent (incl. subnormal -> normal)
wire [30:0] mag = {s5_exp_reg, s5_frac_reg};
wire [16:0] mag_lo = {1'b0, mag[15:0]} + {16'd0, s5_round_up_reg};
wire [14:0] mag_hi_inc = mag[30:16] + 15'd1;
wire [30:0] mag_rnd = {mag_lo[16] ? mag_hi_inc : mag[30:16], mag_lo[15:0]};

// result exponent reaches 255: overflow to infinity
wire overflow = (s5_exp_reg == 8'hff)
             || (mag == {8'hfe, 23'h7fffff} && s5_round_up_reg);

reg [31:0] s6_sum_reg;

always @(posedge clk) begin
    if (s5_nan_reg) begin
        s6_sum_reg <= CANONICAL_NAN;
    end else if (s5_inf_reg) begin
        s6_sum_reg <= {s5_inf_sign_reg, 8'hff, 23'd0};
    end else if (overflow) begin
        s6_sum_reg <= {s5_sign_reg, 8'hff, 23'd0};
    end else begin
        s6_sum_reg <= {s5_sign_reg, mag_rnd};
    end
end

assign out_sum = s6_sum_reg;

endmodule

`resetall
`default_nettype wire
