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
 * Gradient aggregation engine, lane accumulate path (part of
 * grad_agg_ingress).
 *
 * Adds or stores the payload beats of a frame into its slot copy's beats of
 * the accumulator RAM, one fp32_add or int32 adder per 32-bit lane, and
 * sends the result out as the reply's payload beats. What to do with the
 * payload (pay_mode: add / store / pass the accumulator / none, whether it
 * is a reply payload, fp32 or int32) is the verdict of grad_agg_verdict,
 * registered at D2, before the frame's first payload beat reaches P2.
 *
 * Pipeline (one payload beat per clock):
 *   P0  in_hdr_end: the frame's slot copy (copy_now) loads the accumulator
 *       base address; in_pay: a payload beat (in_data, in_last) is taken
 *   P1  accumulator RAM data, forwarded from the adder output or the last
 *       write when a beat of the same address is still in flight
 *   P2  operand registers into LANES fp32_add (LATENCY 6) and int32 adders
 *   X   (P2 + 6) result written back and out as a payload beat
 * hazard (registered) is high while the next payload beat may not be taken:
 * a beat of the same address is fewer than 7 clocks ahead (the
 * read-modify-write loop).
 */
module grad_agg_accum #
(
    // Width of the AXI4-Stream data bus (256 or 512)
    parameter DATA_WIDTH = 256,
    // Slot memory depth (AGG_MAX_SLOTS), 1..64
    parameter MAX_SLOTS = 64,
    // Largest P (AGG_MAX_ELEMS), a multiple of 16 in 16..352
    parameter MAX_ELEMS = 352,
    // Width of a slot copy index {slot, round[0]} (computed; do not override)
    parameter COPY_W = (MAX_SLOTS > 1 ? $clog2(MAX_SLOTS) : 1) + 1
)
(
    input  wire                    clk,
    input  wire                    rst,

    /*
     * Configuration (grad_agg_regs)
     */
    input  wire [8:0]              cfg_elems,

    /*
     * Input beats (grad_agg_ingress P0)
     */
    input  wire                    in_hdr_end,   // last header beat taken
    input  wire [COPY_W-1:0]       copy_now,     // its slot copy {slot, seq[0]}
    input  wire                    in_pay,       // payload beat taken
    input  wire [DATA_WIDTH-1:0]   in_data,
    input  wire                    in_last,
    output wire                    hazard,       // the next payload beat must wait

    /*
     * Payload handling of the frame (grad_agg_verdict, from D2)
     */
    input  wire [1:0]              pay_mode,
    input  wire                    pay_out,
    input  wire                    pay_int,

    /*
     * Reply payload beats out (payload FIFO)
     */
    output wire [DATA_WIDTH-1:0]   pay_data,
    output wire                    pay_last,
    output wire                    pay_valid
);

localparam BYTES = DATA_WIDTH/8;
localparam LANES = DATA_WIDTH/32;
// beats per slot copy at MAX_ELEMS
localparam MAX_PAY_BEATS = MAX_ELEMS*4/BYTES;
localparam COPY_N = 2**COPY_W;
localparam ACC_DEPTH = 2*MAX_SLOTS*MAX_PAY_BEATS;
localparam ACC_AW = $clog2(ACC_DEPTH);
// payload beat index, wide enough to saturate above MAX_PAY_BEATS
localparam PIDX_W = $clog2(MAX_PAY_BEATS+1);
// fp32_add latency (checked against the adder's out_valid in simulation)
localparam FP_LAT = 6;

// payload modes (pay_mode) written here; grad_agg_verdict has all four
localparam [1:0] M_ADD = 2'd1, M_STORE = 2'd2;

// (parameters checked by grad_agg_ingress)

integer i;
genvar gi;

/*
 * The packet's payload beats, from its job's AGG_ELEMS (cfg_elems at its
 * last header beat), for its payload beats
 */
reg [PIDX_W-1:0] cfg_pay_beats_reg;        // payload beats per packet
reg [PIDX_W-1:0] cfg_pay_beats_m1_reg;

wire [8:0] cfg_pay_beats_full = cfg_elems >> $clog2(BYTES/4);

always @(posedge clk) begin
    if (in_hdr_end) begin
        cfg_pay_beats_reg <= cfg_pay_beats_full[PIDX_W-1:0];
        cfg_pay_beats_m1_reg <= cfg_pay_beats_full[PIDX_W-1:0] - 1'b1;
    end
end

reg in_hazard_reg;

assign hazard = in_hazard_reg;

/*
 * Payload path
 */
reg [ACC_AW-1:0] rd_addr_reg;      // accumulator address of the next payload beat
reg [ACC_AW-1:0] rd_addr_p1_reg;   // rd_addr_reg + 1
reg [PIDX_W-1:0] pidx_reg;         // index of the next payload beat (saturating)
reg [PIDX_W-1:0] pidx_p1_reg;      // pidx_reg + 1 (saturating)
reg [COPY_W-1:0] pkt_copy_reg;     // slot copy of the frame streaming in

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
    if (in_hdr_end) begin
        rd_addr_reg <= base_rom[copy_now];
        rd_addr_p1_reg <= base_p1_rom[copy_now];
        pidx_reg <= {PIDX_W{1'b0}};
        pidx_p1_reg <= {{PIDX_W-1{1'b0}}, 1'b1};
        pkt_copy_reg <= copy_now;
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

// a forwarded operand replaces the RAM's word (p0_fwd): the read register
// is cleared then (the block RAM's output reset) and the two are ORed
wire p0_fwd;

always @(posedge clk) begin
    if (x_we) begin
        acc_mem[x_addr] <= x_data;
    end
    if (p0_fwd) begin
        acc_rdata_reg <= {DATA_WIDTH{1'b0}};
    end else begin
        acc_rdata_reg <= acc_mem[rd_addr_reg];
    end
end

// control pipeline, index k = clocks after P2 (k = FP_LAT is X)
reg                  f_valid_reg[1:FP_LAT];
reg                  f_we_reg[1:FP_LAT];     // written back
reg                  f_out_reg[1:FP_LAT];    // a reply payload beat
reg                  f_last_reg[1:FP_LAT];
reg                  f_sum_reg[1:FP_LAT];    // the adder's sum (else f_pass_reg)
reg                  f_int_reg[1:FP_LAT];
reg [ACC_AW-1:0]     f_addr_reg[1:FP_LAT];
reg [DATA_WIDTH-1:0] f_pass_reg[1:FP_LAT];

// P1
reg                  p1_valid_reg;
reg [DATA_WIDTH-1:0] p1_data_reg;
reg [ACC_AW-1:0]     p1_addr_reg;
reg [PIDX_W-1:0]     p1_pidx_reg;
reg                  p1_same_copy_reg;
reg [COPY_W-1:0]     p1_copy_reg;
reg                  p1_in_range_reg;  // a beat of the packet's payload (not past P)
reg                  p1_last_reg;
reg                  p1_fwd_x_reg;     // operand from the beat leaving X now
reg                  p1_fwd_hist_reg;  // operand from the beat that left X (x_hist_reg)
// P2
reg                  p2_valid_reg;
reg [DATA_WIDTH-1:0] p2_a_reg;
reg [DATA_WIDTH-1:0] p2_b_reg;
reg [ACC_AW-1:0]     p2_addr_reg;
reg [PIDX_W-1:0]     p2_pidx_reg;
reg                  p2_same_copy_reg;
reg [COPY_W-1:0]     p2_copy_reg;
reg                  p2_in_range_reg;
reg                  p2_last_reg;
// last written beat (one clock old)
reg [DATA_WIDTH-1:0] x_hist_reg;

// payload index, slot copy and "same copy as the frame streaming in" of the
// beats in f1..f3 (hazard check)
reg [PIDX_W-1:0]     f_pidx_reg[1:3];
reg [COPY_W-1:0]     f_copy_reg[1:3];
reg [3:1]            f_same_copy_reg;

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
wire hz_first = (p1_valid_reg && p1_pidx_reg == {PIDX_W{1'b0}} && p1_copy_reg == copy_now)
             || (p2_valid_reg && p2_pidx_reg == {PIDX_W{1'b0}} && p2_copy_reg == copy_now)
             || (f_valid_reg[1] && f_pidx_reg[1] == {PIDX_W{1'b0}} && f_copy_reg[1] == copy_now)
             || (f_valid_reg[2] && f_pidx_reg[2] == {PIDX_W{1'b0}} && f_copy_reg[2] == copy_now)
             || (f_valid_reg[3] && f_pidx_reg[3] == {PIDX_W{1'b0}} && f_copy_reg[3] == copy_now);
(* keep *)
wire hz_adv = (p1_valid_reg && p1_same_copy_reg && p1_pidx_reg == pidx_p1_reg)
           || (p2_valid_reg && p2_same_copy_reg && p2_pidx_reg == pidx_p1_reg)
           || (f_valid_reg[1] && f_same_copy_reg[1] && f_pidx_reg[1] == pidx_p1_reg)
           || (f_valid_reg[2] && f_same_copy_reg[2] && f_pidx_reg[2] == pidx_p1_reg)
           || (f_valid_reg[3] && f_same_copy_reg[3] && f_pidx_reg[3] == pidx_p1_reg);
(* keep *)
wire hz_stay = (p1_valid_reg && p1_same_copy_reg && p1_pidx_reg == pidx_reg)
            || (p2_valid_reg && p2_same_copy_reg && p2_pidx_reg == pidx_reg)
            || (f_valid_reg[1] && f_same_copy_reg[1] && f_pidx_reg[1] == pidx_reg)
            || (f_valid_reg[2] && f_same_copy_reg[2] && f_pidx_reg[2] == pidx_reg)
            || (f_valid_reg[3] && f_same_copy_reg[3] && f_pidx_reg[3] == pidx_reg);

always @(posedge clk) begin
    in_hazard_reg <= in_hdr_end ? hz_first : (in_pay ? hz_adv : hz_stay);
    f_pidx_reg[1] <= p2_pidx_reg;
    f_copy_reg[1] <= p2_copy_reg;
    f_same_copy_reg[1] <= in_hdr_end ? p2_copy_reg == copy_now : p2_same_copy_reg;
    f_pidx_reg[2] <= f_pidx_reg[1];
    f_copy_reg[2] <= f_copy_reg[1];
    f_same_copy_reg[2] <= in_hdr_end ? f_copy_reg[1] == copy_now : f_same_copy_reg[1];
    f_pidx_reg[3] <= f_pidx_reg[2];
    f_copy_reg[3] <= f_copy_reg[2];
    f_same_copy_reg[3] <= in_hdr_end ? f_copy_reg[2] == copy_now : f_same_copy_reg[2];
    if (rst) begin
        in_hazard_reg <= 1'b0;
    end
end

/*
 * The operand: the accumulator RAM's word or a forwarded one. When a beat
 * is forwarded the RAM's read register is cleared in the read's clock (the
 * block RAM's output reset) and the forwarded word, chosen from flip-flops
 * alone and 0 otherwise, is ORed in: the RAM's output, which arrives late
 * (no output register in the block RAM), meets one LUT, the bank select
 * with the OR (2.45 + 0.64 ns before routing; a select after the bank
 * select was a second LUT, 3.56 ns at the defaults).
 *
 * The written beats at f(FP_LAT-1) and X, copied out of the control
 * pipeline into flip-flops of their own (reset, so that they are not mapped
 * into the shift registers the rest of the pipeline becomes, whose outputs
 * are slow): the forwarding compares start there.
 */
reg [ACC_AW-1:0] tap_addr_reg[0:1];
reg [1:0]        tap_we_reg;

always @(posedge clk) begin
    tap_addr_reg[0] <= f_addr_reg[FP_LAT-2];
    tap_we_reg[0] <= f_valid_reg[FP_LAT-2] && f_we_reg[FP_LAT-2];
    tap_addr_reg[1] <= tap_addr_reg[0];
    tap_we_reg[1] <= tap_we_reg[0];
    if (rst) begin
        tap_addr_reg[0] <= {ACC_AW{1'b0}};
        tap_addr_reg[1] <= {ACC_AW{1'b0}};
        tap_we_reg <= 2'b00;
    end
end

wire p0_fwd_x = tap_we_reg[0] && tap_addr_reg[0] == rd_addr_reg;
wire p0_fwd_hist = tap_we_reg[1] && tap_addr_reg[1] == rd_addr_reg;

assign p0_fwd = p0_fwd_x || p0_fwd_hist;

// the forwarded word, 0 when the RAM's word is the operand
(* keep *)
wire [DATA_WIDTH-1:0] fwd_data = p1_fwd_x_reg ? x_data : (p1_fwd_hist_reg ? x_hist_reg : {DATA_WIDTH{1'b0}});

always @(posedge clk) begin
    p1_valid_reg <= in_pay;
    p1_data_reg <= in_data;
    p1_addr_reg <= rd_addr_reg;
    p1_pidx_reg <= pidx_reg;
    p1_same_copy_reg <= 1'b1;
    p1_copy_reg <= pkt_copy_reg;
    p1_in_range_reg <= pidx_reg < cfg_pay_beats_reg;
    p1_last_reg <= in_last || pidx_reg == cfg_pay_beats_m1_reg;
    // the beat leaving X next clock, or the one leaving now (then in x_hist_reg)
    p1_fwd_x_reg <= p0_fwd_x;
    p1_fwd_hist_reg <= p0_fwd_hist;

    p2_valid_reg <= p1_valid_reg;
    p2_a_reg <= fwd_data | acc_rdata_reg;
    p2_b_reg <= p1_data_reg;
    p2_addr_reg <= p1_addr_reg;
    p2_pidx_reg <= p1_pidx_reg;
    p2_same_copy_reg <= in_hdr_end ? p1_copy_reg == copy_now : p1_same_copy_reg;
    p2_copy_reg <= p1_copy_reg;
    p2_in_range_reg <= p1_in_range_reg;
    p2_last_reg <= p1_last_reg;

    x_hist_reg <= x_data;

    if (rst) begin
        p1_valid_reg <= 1'b0;
        p2_valid_reg <= 1'b0;
    end
end

always @(posedge clk) begin
    f_valid_reg[1] <= p2_valid_reg;
    f_we_reg[1] <= p2_in_range_reg && (pay_mode == M_ADD || pay_mode == M_STORE);
    f_out_reg[1] <= p2_in_range_reg && pay_out;
    f_last_reg[1] <= p2_last_reg;
    f_sum_reg[1] <= pay_mode == M_ADD;
    f_int_reg[1] <= pay_int;
    f_addr_reg[1] <= p2_addr_reg;
    f_pass_reg[1] <= pay_mode == M_STORE ? p2_b_reg : p2_a_reg;
    for (i = 2; i <= FP_LAT; i = i + 1) begin
        f_valid_reg[i] <= f_valid_reg[i-1];
        f_we_reg[i] <= f_we_reg[i-1];
        f_out_reg[i] <= f_out_reg[i-1];
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
wire [LANES-1:0]      fp_out_valid;  // lane 0 checks FP_LAT in simulation
wire [DATA_WIDTH-1:0] int_sum;
reg  [DATA_WIDTH-1:0] int_sum_reg[3:FP_LAT];

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

    assign int_sum[32*gi +: 32] = sum_reg;
end

endgenerate

always @(posedge clk) begin
    int_sum_reg[3] <= int_sum;
    for (i = 4; i <= FP_LAT; i = i + 1) begin
        int_sum_reg[i] <= int_sum_reg[i-1];
    end
end

// X: result, write back, reply payload beat
assign x_data = f_sum_reg[FP_LAT] ? (f_int_reg[FP_LAT] ? int_sum_reg[FP_LAT] : fp_sum) : f_pass_reg[FP_LAT];
assign x_we = f_valid_reg[FP_LAT] && f_we_reg[FP_LAT];
assign x_addr = f_addr_reg[FP_LAT];

assign pay_data = x_data;
assign pay_last = f_last_reg[FP_LAT];
assign pay_valid = f_valid_reg[FP_LAT] && f_out_reg[FP_LAT];

`ifndef SYNTHESIS
always @(posedge clk) begin
    if (!rst && fp_out_valid[0] != f_valid_reg[FP_LAT]) begin
        $error("Error: fp32_add latency differs from FP_LAT (instance %m)");
        $finish;
    end
end
`endif

// configuration bits the path does not look at
// verilator lint_off UNUSEDSIGNAL
wire unused_in = &{1'b0, fp_out_valid, cfg_pay_beats_full};
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
`default_nettype wire
