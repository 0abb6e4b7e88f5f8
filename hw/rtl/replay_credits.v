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
// Language: Verilog 2001

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * Replay executor credits: what replay_executor checks before it takes a
 * request context, reserves response queue entries or lets a PUSH or a
 * NOT_YET through.
 *
 *   request contexts   in use from a write (ctx_take) until the responder
 *                      releases it (ctx_free): ctx_room while fewer than
 *                      2^CTX_TAG_W
 *   response queue     entries reserved (rq_take: rq_take_n of them, 1 for
 *                      an ack or a NOT_YET, k for a stacked sample) until
 *                      the responder has issued the frame's last beat
 *                      (rq_pop, registered: decoded from the queue head in
 *                      the same clock, so a release may come a clock late);
 *                      lim_load (a SAMPLE_REQ's setup) sets the limit
 *                      2^RESP_Q_ADDR_W - k for its samples: rq_room_k
 *   samples in flight  from their draw (issue) until replay_stack has
 *                      queued their entries (smp_done): inflight_zero
 */
module replay_credits #
(
    // log2 of the number of request contexts
    parameter CTX_TAG_W = 2,
    // log2 of the response queue depth
    parameter RESP_Q_ADDR_W = 7
)
(
    input  wire        clk,
    input  wire        rst,

    input  wire        ctx_take,
    input  wire        ctx_free,
    output wire        ctx_room,

    input  wire        rq_take,
    input  wire [3:0]  rq_take_n,
    input  wire        rq_pop,
    input  wire        lim_load,
    input  wire [3:0]  lim_stk,      // the SAMPLE_REQ's stack depth (0: one entry a sample)
    output wire        rq_empty,     // nothing reserved
    output wire        rq_room_1,    // room for one more entry
    output wire        rq_room_k,    // room for one more sample of the request

    input  wire        issue,
    input  wire        smp_done,
    output wire        inflight_zero
);

localparam RESP_Q_DEPTH = 2**RESP_Q_ADDR_W;
localparam [RESP_Q_ADDR_W+1:0] RESP_Q_DEPTH_L = RESP_Q_DEPTH;

reg [CTX_TAG_W:0] ctx_used_reg;
reg [RESP_Q_ADDR_W+1:0] rq_used_reg;
reg [RESP_Q_ADDR_W+1:0] rq_lim_reg;
reg rq_pop_reg;
reg [7:0] inflight_reg;

assign ctx_room = ctx_used_reg < 2**CTX_TAG_W;
assign rq_empty = rq_used_reg == 0;
assign rq_room_1 = rq_used_reg < RESP_Q_DEPTH;
assign rq_room_k = rq_used_reg <= rq_lim_reg;
assign inflight_zero = inflight_reg == 0;

always @(posedge clk) begin
    ctx_used_reg <= ctx_used_reg + {{CTX_TAG_W{1'b0}}, ctx_take} - {{CTX_TAG_W{1'b0}}, ctx_free};
    rq_pop_reg <= rq_pop;
    rq_used_reg <= rq_used_reg + (rq_take ? {{RESP_Q_ADDR_W-2{1'b0}}, rq_take_n} : {RESP_Q_ADDR_W+2{1'b0}}) -
                   {{RESP_Q_ADDR_W+1{1'b0}}, rq_pop_reg};
    if (lim_load) begin
        rq_lim_reg <= RESP_Q_DEPTH_L - (lim_stk == 4'd0 ? {{RESP_Q_ADDR_W+1{1'b0}}, 1'b1} :
                                        {{RESP_Q_ADDR_W-2{1'b0}}, lim_stk});
    end
    inflight_reg <= inflight_reg + {7'd0, issue} - {7'd0, smp_done};
    if (rst) begin
        ctx_used_reg <= {CTX_TAG_W+1{1'b0}};
        rq_pop_reg <= 1'b0;
        rq_used_reg <= {RESP_Q_ADDR_W+2{1'b0}};
        rq_lim_reg <= {RESP_Q_ADDR_W+2{1'b0}};
        inflight_reg <= 8'd0;
    end
end

endmodule

`resetall
