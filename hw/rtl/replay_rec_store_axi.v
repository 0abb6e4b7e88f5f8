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
 * Replay record store behind an AXI4 memory-mapped master (replay_engine
 * REC_STORE = 1): the records live in external memory (the SUME DDR3 SODIMM
 * through the MIG), block RAM keeps only the sum tree and the queues.
 *
 * Layout: record i at AXI_BASE_ADDR + i * S, S = RECORD_BYTES rounded up to
 * a power of two (at most 8192). A record of r bytes (r = R, or with several
 * jobs its job's JOB_RPL_RECORD, r <= R) is one INCR burst of r/64 beats of
 * 512 bits when r <= 4096, else one burst per 4 KB piece (64 beats, the last
 * one shorter: r = 7104 is 64 + 47 beats), so no burst crosses a 4 KB
 * boundary (AXI4). Memory used: CAPACITY * S bytes (131072 * 8192 = 1 GiB at
 * most: the SUME's DDR3 SODIMM holds 4 GiB).
 *
 * Write side: the executor's record beats (wr_valid, wr_addr = {index,
 * beat}, wr_data; two 256-bit beats are packed into one 512-bit word; wr_last
 * the record's last beat) enter a W FIFO (WLAST at each burst's last word);
 * the first beat of each 4 KB piece queues its AW (address, LEN = its beats
 * - 1).
 * wr_ready is low while the W / AW FIFOs are nearly full or while a read is
 * queued or outstanding; the engine holds the payload stream meanwhile.
 *
 * Read side: rd_req (one per record a SAMPLE_RESP carries, in response
 * queue order; none for a broken stack position; rd_req_last the record's
 * 512-bit beats - 1) enters the AR queue. Each
 * of a record's bursts (one per 4 KB piece) is issued when the
 * read data FIFO has room for the whole record (beats in the FIFO plus
 * beats requested count against its depth; a burst's beats are counted a
 * clock after its issue, so the room kept is a record plus 64 beats) and
 * no write is queued or waiting for its B response, so up to
 * 2^RD_FIFO_ADDR_W / beats records are in flight and the memory latency is
 * hidden. RREADY is always high (room is reserved). Single ID: data returns
 * in request order. A BRESP or RRESP other than OKAY is counted (axi_err,
 * RPL_AXI_ERR); the data path carries on.
 *
 * Ordering: a PUSH starts only after every earlier sample left the response
 * queue (replay_executor), and its beats are held here until every read is
 * answered; a sample's read waits until every write is answered (B). So a
 * sample reads what the model holds at that point.
 *
 * Output: the responder's frames (s_axis) pass through; the record beats of
 * a SAMPLE_RESP (every beat from byte 128 on; a PUSH_ACK is shorter)
 * get their data from the read data FIFO, and the frame stalls (tvalid low)
 * until it is there. The responder's own record data is unused, except in
 * a frame with s_axis_tzero (a broken stack position: zeros, no read).
 *
 * Bound: a SAMPLE_RESP is 128 + R bytes on the stream and R bytes (R/64
 * beats) from memory. The replies leave back to back, one sample per
 * (128 + R)/W clocks (W = stream bytes per beat), as with block RAM, as
 * long as the memory returns R/64 beats in that time; else one sample per
 * R / B_read seconds, B_read the sustained read bandwidth (PUSH writes
 * share it), the engine stalling, never dropping. SUME: 256-bit stream at
 * 200 MHz (6.4 GB/s) needs 3.2 GB/s at R = 128 and 6.3 GB/s at R = 8192 of
 * the DDR3-1866 SODIMM's 14.9 GB/s peak (MIG, 512-bit AXI at the 233 MHz UI
 * clock). The read data FIFO (2^RD_FIFO_ADDR_W beats of 64 B, 32 KiB by
 * default) bounds the latency hidden: 5 us at 6.4 GB/s.
 * docs/architecture.md (Replay records beyond block RAM).
 */
module replay_rec_store_axi #
(
    // Width of the replay stream data in bits (256 or 512)
    parameter DATA_WIDTH = 256,
    // Width of AXI stream tkeep in bits
    parameter KEEP_WIDTH = DATA_WIDTH/8,
    // Width of AXI stream tuser in bits
    parameter USER_WIDTH = 128,
    // Replay capacity C in records (power of two)
    parameter CAPACITY = 16384,
    // Record size R in bytes (multiple of 64, at most 8192)
    parameter RECORD_BYTES = 128,
    // Width of the AXI4 address
    parameter AXI_ADDR_WIDTH = 32,
    // Width of the AXI4 IDs (every request uses ID 0)
    parameter AXI_ID_WIDTH = 1,
    // Byte address of record 0
    parameter [AXI_ADDR_WIDTH-1:0] AXI_BASE_ADDR = 0,
    // log2 of the read data FIFO depth in 512-bit beats
    parameter RD_FIFO_ADDR_W = 9,
    // log2 of the W FIFO depth in 512-bit beats
    parameter W_FIFO_ADDR_W = 6,
    // log2(C) (computed; do not override)
    parameter INDEX_W = $clog2(CAPACITY),
    // Record memory address width, index and beat (computed; do not override)
    parameter REC_ADDR_W = INDEX_W + (RECORD_BYTES > DATA_WIDTH/8 ? $clog2(RECORD_BYTES*8/DATA_WIDTH) : 1)
)
(
    input  wire                       clk,
    input  wire                       rst,

    /*
     * Record beats from the executor
     */
    input  wire                       wr_valid,
    input  wire [REC_ADDR_W-1:0]      wr_addr,
    input  wire [DATA_WIDTH-1:0]      wr_data,
    input  wire [REC_ADDR_W-INDEX_W-1:0] wr_last,  // the record's last beat (held for the record)
    output wire                       wr_ready,

    /*
     * Sample reads, in response queue order
     */
    input  wire                       rd_req_valid,
    input  wire [INDEX_W-1:0]         rd_req_index,
    input  wire [7:0]                 rd_req_last,   // the record's 512-bit beats - 1

    /*
     * Responder frames in, replies out
     */
    input  wire [DATA_WIDTH-1:0]      s_axis_tdata,
    input  wire [KEEP_WIDTH-1:0]      s_axis_tkeep,
    input  wire                       s_axis_tvalid,
    output wire                       s_axis_tready,
    input  wire                       s_axis_tlast,
    input  wire [USER_WIDTH-1:0]      s_axis_tuser,
    input  wire                       s_axis_tzero,  // record beats are zeros: no read
    output wire [DATA_WIDTH-1:0]      m_axis_tdata,
    output wire [KEEP_WIDTH-1:0]      m_axis_tkeep,
    output wire                       m_axis_tvalid,
    input  wire                       m_axis_tready,
    output wire                       m_axis_tlast,
    output wire [USER_WIDTH-1:0]      m_axis_tuser,

    /*
     * AXI4 master (512-bit data)
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
    output wire                       m_axi_rready,

    /*
     * Error responses (RPL_AXI_ERR): bit 31 sticky, bits 30:0 a saturating
     * count of BRESP (per burst) and RRESP (per beat) other than OKAY;
     * err_clear (RPL_RESET) zeroes both
     */
    input  wire                       err_clear,
    output wire [31:0]                axi_err
);

localparam BEAT_BYTES = DATA_WIDTH / 8;
localparam HDR_BEATS = 64 / BEAT_BYTES;
localparam REC_BEATS = RECORD_BYTES / BEAT_BYTES;        // stream beats per record
localparam REC_BEAT_W = REC_ADDR_W - INDEX_W;
localparam AXI_BEATS = RECORD_BYTES / 64;                // 512-bit beats per record
localparam STRIDE_W = $clog2(RECORD_BYTES);              // log2 of the record stride S
localparam NBURST = (AXI_BEATS + 63) / 64;               // bursts per record (4 KB pieces)
localparam BURST_W = NBURST > 1 ? $clog2(NBURST) : 1;
localparam PIECE_BEATS = RECORD_BYTES > 4096 ? 4096 / BEAT_BYTES : REC_BEATS;  // stream beats per piece
localparam BEAT_CNT_W = 12;   // beats of a frame: (128 + 8192) / 32 = 260 at most
localparam PACK = DATA_WIDTH == 256 ? 1 : 0;             // two stream beats per AXI beat
localparam RD_DEPTH = 2**RD_FIFO_ADDR_W;
localparam CNT_W = RD_FIFO_ADDR_W + 2;
localparam AR_Q_ADDR_W = 8;   // sample reads queued: at most the response queue (128) + a few
localparam AW_Q_ADDR_W = 4;
localparam OB_W = 8;          // AW bursts waiting for B
localparam PIECE_BEATS_M1 = PIECE_BEATS - 1;
localparam [7:0] AXLEN_FULL = 8'd63;                     // LEN of a 4 KB piece
localparam [AXI_ADDR_WIDTH-1:0] PIECE_OFF = 4096;
localparam RD_ROOM_I = RD_DEPTH - AXI_BEATS - 64;  // a record, and the burst counted a clock late
localparam REC_START = 2*HDR_BEATS;
localparam [CNT_W-1:0] RD_ROOM = RD_ROOM_I[CNT_W-1:0];
localparam [BEAT_CNT_W-1:0] REC_START_B = REC_START[BEAT_CNT_W-1:0];
localparam [AXI_ADDR_WIDTH-1:0] BASE = AXI_BASE_ADDR;

initial begin
    if (DATA_WIDTH != 256 && DATA_WIDTH != 512) begin
        $error("Error: DATA_WIDTH must be 256 or 512 (instance %m)");
        $finish;
    end
    if (RECORD_BYTES < 64 || RECORD_BYTES % 64 != 0 || RECORD_BYTES > 8192) begin
        $error("Error: RECORD_BYTES must be a multiple of 64 in 64..8192 (instance %m)");
        $finish;
    end
    if (NBURST > 2) begin
        $error("Error: a record is at most two 4 KB bursts (instance %m)");
        $finish;
    end
    if (INDEX_W + STRIDE_W > AXI_ADDR_WIDTH) begin
        $error("Error: AXI_ADDR_WIDTH is too narrow for C records of 2^ceil(log2 R) bytes (instance %m)");
        $finish;
    end
    if (AXI_BASE_ADDR % (2**STRIDE_W) != 0) begin
        $error("Error: AXI_BASE_ADDR must be a multiple of the record stride (instance %m)");
        $finish;
    end
    if (RD_DEPTH < 2 * AXI_BEATS + 64 || RD_FIFO_ADDR_W < 6) begin
        $error("Error: the read data FIFO must hold two records and 64 beats (instance %m)");
        $finish;
    end
end

// ---------------------------------------------------------------------------
// write side: pack, W FIFO, AW queue

wire [INDEX_W-1:0] wr_index = wr_addr[REC_BEAT_W +: INDEX_W];
wire [REC_BEAT_W-1:0] wr_beat = wr_addr[REC_BEAT_W-1:0];
// the piece (4 KB burst) of this beat, its first beat, the burst's last beat
wire [BURST_W-1:0] wr_piece;
wire wr_first;
wire wr_lastb;

generate
if (NBURST > 1) begin : g_wr_pieces
    localparam PB_W = $clog2(PIECE_BEATS);
    localparam [PB_W-1:0] PB_LAST = PIECE_BEATS_M1[PB_W-1:0];
    assign wr_piece = wr_beat[PB_W];
    assign wr_first = wr_beat[PB_W-1:0] == {PB_W{1'b0}};
    assign wr_lastb = wr_beat[PB_W-1:0] == PB_LAST || wr_beat == wr_last;
end else begin : g_wr_one
    assign wr_piece = 1'b0;
    assign wr_first = wr_beat == {REC_BEAT_W{1'b0}};
    assign wr_lastb = wr_beat == wr_last;
end
endgenerate

// the record's 512-bit beats - 1 and its burst's LEN: a 4 KB piece (63) unless the
// record ends in it
wire [8:0] wr_last9 = {{9-REC_BEAT_W{1'b0}}, wr_last};
wire [7:0] wr_axb_m1 = PACK ? wr_last9[8:1] : wr_last9[7:0];
wire [7:0] wr_len = NBURST > 1 && wr_piece != {BURST_W{1'b0}} ? wr_axb_m1 - 8'd64 :
                    wr_axb_m1 > AXLEN_FULL ? AXLEN_FULL : wr_axb_m1;

reg [DATA_WIDTH-1:0] wr_lo_reg;  // low half of a 512-bit word (256-bit stream)
wire wr_hi = PACK ? wr_beat[0] : 1'b1;  // this beat completes a word
wire [511:0] w_word;

generate
if (PACK) begin : g_pack
    assign w_word = {wr_data, wr_lo_reg};
end else begin : g_nopack
    assign w_word = wr_data;
end
endgenerate

wire [W_FIFO_ADDR_W+1:0] w_count;
wire [AW_Q_ADDR_W+1:0] aw_count;
wire w_out_valid, aw_out_valid;
wire [512:0] w_out;
wire [INDEX_W+BURST_W+7:0] aw_out;
wire unused_w_in_ready, unused_aw_in_ready;

reg wr_room_reg;
reg rd_pending_reg;
reg wr_pending_reg;
wire wr_take = wr_valid && wr_ready;

assign wr_ready = wr_room_reg && !rd_pending_reg;

always @(posedge clk) begin
    if (wr_take && !wr_hi) begin
        wr_lo_reg <= wr_data;
    end
end

nrl_fifo #(
    .WIDTH(513),
    .ADDR_WIDTH(W_FIFO_ADDR_W),
    .FULL_GUARD(0),
    .COUNT_REG(1)
)
w_fifo_inst (
    .clk(clk),
    .rst(rst),
    .in_data({wr_lastb, w_word}),
    .in_valid(wr_take && wr_hi),
    .in_ready(unused_w_in_ready),
    .out_data(w_out),
    .out_valid(w_out_valid),
    .out_ready(m_axi_wready),
    .count(w_count)
);

nrl_fifo #(
    .WIDTH(INDEX_W + BURST_W + 8),
    .ADDR_WIDTH(AW_Q_ADDR_W),
    .FULL_GUARD(0),
    .COUNT_REG(1)
)
aw_fifo_inst (
    .clk(clk),
    .rst(rst),
    .in_data({wr_index, wr_piece, wr_len}),
    .in_valid(wr_take && wr_first),
    .in_ready(unused_aw_in_ready),
    .out_data(aw_out),
    .out_valid(aw_out_valid),
    .out_ready(m_axi_awready),
    .count(aw_count)
);

// bursts whose AW was accepted and whose B has not come back
reg [OB_W-1:0] wr_out_reg;
wire aw_hs = m_axi_awvalid && m_axi_awready;
wire b_hs = m_axi_bvalid && m_axi_bready;

always @(posedge clk) begin
    wr_out_reg <= wr_out_reg + {{OB_W-1{1'b0}}, aw_hs} - {{OB_W-1{1'b0}}, b_hs};
    // room for two more words and one more AW after this clock's writes
    wr_room_reg <= w_count < (2**W_FIFO_ADDR_W) - 3 && aw_count < (2**AW_Q_ADDR_W) - 3 &&
                   wr_out_reg < (2**OB_W) - 4;
    // a write is held somewhere (queued, or waiting for B), or was just taken
    wr_pending_reg <= wr_take || w_count != 0 || aw_count != 0 || wr_out_reg != 0;
    if (rst) begin
        wr_out_reg <= {OB_W{1'b0}};
        wr_room_reg <= 1'b0;
        wr_pending_reg <= 1'b0;
    end
end

assign m_axi_awid = {AXI_ID_WIDTH{1'b0}};
// record base, plus 4 KB for the second piece
wire aw_piece = NBURST > 1 && aw_out[8];
assign m_axi_awaddr = BASE + ({{AXI_ADDR_WIDTH-INDEX_W{1'b0}}, aw_out[8+BURST_W +: INDEX_W]} << STRIDE_W) +
                      (aw_piece ? PIECE_OFF : {AXI_ADDR_WIDTH{1'b0}});
assign m_axi_awlen = aw_out[7:0];
assign m_axi_awsize = 3'd6;
assign m_axi_awburst = 2'b01;
assign m_axi_awlock = 1'b0;
assign m_axi_awcache = 4'b0011;
assign m_axi_awprot = 3'b000;
assign m_axi_awqos = 4'd0;
assign m_axi_awvalid = aw_out_valid;
assign m_axi_wdata = w_out[511:0];
assign m_axi_wstrb = {64{1'b1}};
assign m_axi_wlast = w_out[512];
assign m_axi_wvalid = w_out_valid;
assign m_axi_bready = 1'b1;

// ---------------------------------------------------------------------------
// read side: AR queue, AR issue with reserved room, read data FIFO

wire [INDEX_W+7:0] arq_out;
wire arq_valid;
wire arq_pop;
wire [AR_Q_ADDR_W+1:0] arq_count;
wire unused_arq_in_ready;

nrl_fifo #(
    .WIDTH(INDEX_W + 8),
    .ADDR_WIDTH(AR_Q_ADDR_W),
    .FULL_GUARD(0),
    .COUNT_REG(1)
)
arq_inst (
    .clk(clk),
    .rst(rst),
    .in_data({rd_req_index, rd_req_last}),
    .in_valid(rd_req_valid),
    .in_ready(unused_arq_in_ready),
    .out_data(arq_out),
    .out_valid(arq_valid),
    .out_ready(arq_pop),
    .count(arq_count)
);

reg ar_valid_reg;
reg [AXI_ADDR_WIDTH-1:0] ar_addr_reg;
reg [7:0] ar_len_reg;
reg [CNT_W-1:0] rd_resv_reg;   // read data FIFO beats held or requested (a burst a clock late)
reg [CNT_W-1:0] rd_add_reg;    // beats of the burst issued last clock
reg [OB_W-1:0] rd_out_reg;     // AR bursts accepted, RLAST not yet seen
wire ar_hs = ar_valid_reg && m_axi_arready;
wire r_hs = m_axi_rvalid && m_axi_rready;
wire r_last_hs = r_hs && m_axi_rlast;

// error responses: a memory that answers SLVERR / DECERR loses records
// silently otherwise (the data path carries on either way)
reg err_sticky_reg;
reg [30:0] err_cnt_reg;
wire b_err = b_hs && m_axi_bresp != 2'b00;
wire r_err = r_hs && m_axi_rresp != 2'b00;
wire [31:0] err_sum = {1'b0, err_cnt_reg} + {31'd0, b_err} + {31'd0, r_err};

assign axi_err = {err_sticky_reg, err_cnt_reg};

always @(posedge clk) begin
    if (b_err || r_err) begin
        err_sticky_reg <= 1'b1;
        err_cnt_reg <= err_sum[31] ? {31{1'b1}} : err_sum[30:0];
    end
    if (rst || err_clear) begin
        err_sticky_reg <= 1'b0;
        err_cnt_reg <= 31'd0;
    end
end
wire rd_pop;  // a 512-bit word leaves the read data FIFO

// one AR per 4 KB piece of the head's record (r/64 beats, 64 a piece); the head
// leaves with its last
reg [BURST_W-1:0] ar_piece_reg;
wire [INDEX_W-1:0] arq_index = arq_out[8 +: INDEX_W];
wire [7:0] arq_axb_m1 = arq_out[7:0];
wire arq_two = NBURST > 1 && arq_axb_m1 > AXLEN_FULL;  // the record needs a second burst
wire ar_first_piece = ar_piece_reg == {BURST_W{1'b0}};
wire ar_last_piece = !ar_first_piece || !arq_two;
wire [7:0] ar_len = !ar_last_piece ? AXLEN_FULL : ar_first_piece ? arq_axb_m1 : arq_axb_m1 - 8'd64;
wire [CNT_W-1:0] ar_beats = {{CNT_W-8{1'b0}}, ar_len} + 1'b1;
wire ar_issue = arq_valid && (!ar_valid_reg || m_axi_arready) && !wr_pending_reg &&
                rd_resv_reg <= RD_ROOM && rd_out_reg < (2**OB_W) - 2;
assign arq_pop = ar_issue && ar_last_piece;

always @(posedge clk) begin
    if (ar_hs) begin
        ar_valid_reg <= 1'b0;
    end
    if (ar_issue) begin
        ar_valid_reg <= 1'b1;
        ar_addr_reg <= BASE + ({{AXI_ADDR_WIDTH-INDEX_W{1'b0}}, arq_index} << STRIDE_W) +
                       (!ar_first_piece ? PIECE_OFF : {AXI_ADDR_WIDTH{1'b0}});
        ar_len_reg <= ar_len;
        ar_piece_reg <= ar_last_piece ? {BURST_W{1'b0}} : ar_piece_reg + 1'b1;
    end
    rd_add_reg <= ar_issue ? ar_beats : {CNT_W{1'b0}};
    rd_resv_reg <= rd_resv_reg + rd_add_reg -
                   {{CNT_W-1{1'b0}}, rd_pop};
    rd_out_reg <= rd_out_reg + {{OB_W-1{1'b0}}, ar_hs} - {{OB_W-1{1'b0}}, r_last_hs};
    rd_pending_reg <= rd_req_valid || arq_count != 0 || ar_issue || ar_valid_reg ||
                      rd_out_reg != 0;
    if (rst) begin
        ar_valid_reg <= 1'b0;
        ar_piece_reg <= {BURST_W{1'b0}};
        rd_resv_reg <= {CNT_W{1'b0}};
        rd_add_reg <= {CNT_W{1'b0}};
        rd_out_reg <= {OB_W{1'b0}};
        rd_pending_reg <= 1'b0;
    end
end

assign m_axi_arid = {AXI_ID_WIDTH{1'b0}};
assign m_axi_araddr = ar_addr_reg;
assign m_axi_arlen = ar_len_reg;
assign m_axi_arsize = 3'd6;
assign m_axi_arburst = 2'b01;
assign m_axi_arlock = 1'b0;
assign m_axi_arcache = 4'b0011;
assign m_axi_arprot = 3'b000;
assign m_axi_arqos = 4'd0;
assign m_axi_arvalid = ar_valid_reg;
assign m_axi_rready = 1'b1;

wire [511:0] rd_word;
wire rd_word_valid;
wire [RD_FIFO_ADDR_W+1:0] rd_count;
wire unused_rd_in_ready;

nrl_fifo #(
    .WIDTH(512),
    .ADDR_WIDTH(RD_FIFO_ADDR_W),
    .FULL_GUARD(0)
)
rd_fifo_inst (
    .clk(clk),
    .rst(rst),
    .in_data(m_axi_rdata),
    .in_valid(r_hs),
    .in_ready(unused_rd_in_ready),
    .out_data(rd_word),
    .out_valid(rd_word_valid),
    .out_ready(rd_pop),
    .count(rd_count)
);

// ---------------------------------------------------------------------------
// output: record beats of SAMPLE_RESP frames take the read data

reg [BEAT_CNT_W-1:0] ob_reg;  // beat number in the frame
reg rd_half_reg;         // 256-bit stream: the high half is next
// a PUSH_ACK is 64 bytes, so only a SAMPLE_RESP reaches beat 128 / W
wire is_rec = ob_reg >= REC_START_B && !s_axis_tzero;
wire [DATA_WIDTH-1:0] rec_beat;

generate
if (PACK) begin : g_unpack
    assign rec_beat = rd_half_reg ? rd_word[511:256] : rd_word[255:0];
end else begin : g_nounpack
    assign rec_beat = rd_word;
end
endgenerate

wire out_ok = !is_rec || rd_word_valid;
wire out_hs = s_axis_tvalid && m_axis_tready && out_ok;
wire rec_hs = out_hs && is_rec;

assign rd_pop = rec_hs && (PACK ? rd_half_reg : 1'b1);
assign s_axis_tready = m_axis_tready && out_ok;
assign m_axis_tvalid = s_axis_tvalid && out_ok;
assign m_axis_tdata = is_rec ? rec_beat : s_axis_tdata;
assign m_axis_tkeep = s_axis_tkeep;
assign m_axis_tlast = s_axis_tlast;
assign m_axis_tuser = s_axis_tuser;

always @(posedge clk) begin
    if (out_hs) begin
        ob_reg <= s_axis_tlast ? {BEAT_CNT_W{1'b0}} : ob_reg + 1'b1;
    end
    if (rec_hs && PACK) begin
        rd_half_reg <= !rd_half_reg;
    end
    if (rst) begin
        ob_reg <= {BEAT_CNT_W{1'b0}};
        rd_half_reg <= 1'b0;
    end
end

// verilator lint_off UNUSEDSIGNAL
wire unused_ok = unused_w_in_ready | unused_aw_in_ready | unused_arq_in_ready |
                 unused_rd_in_ready | (|rd_count) | (|m_axi_bid) |
                 (|m_axi_rid) | (|wr_lo_reg);
// verilator lint_on UNUSEDSIGNAL

endmodule

`resetall
