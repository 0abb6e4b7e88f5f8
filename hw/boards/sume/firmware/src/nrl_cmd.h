/* SPDX-License-Identifier: MIT
 *
 * nrl_cmd.h - the register line protocol served on the USB-UART
 * (docs/board_uart.md). Portable C99: all hardware access is in hal.h.
 */
#ifndef NRL_CMD_H
#define NRL_CMD_H

#include <stdint.h>

#define NRL_FW_PROTOCOL   2u      /* line protocol version, in the identity reply */
#define NRL_FW_LINE_MAX   80u     /* longest request line (without CR/LF) */
#define NRL_FW_REG_WINDOW 0x1000u /* the register window: 4 KB */

/* CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor)
 * of `len` bytes; the check value of "123456789" is 0x29B1. */
uint16_t nrl_crc16(const char *data, unsigned len);

/* Answer one request line (without its CR/LF) into `reply` (at least
 * NRL_FW_REPLY_MAX bytes, NUL-terminated, with the CRC and CR/LF). Returns
 * the reply length, 0 for a line that gets no answer (empty, or a comment
 * starting with '#'). `clock_status` and `lol_status` (si5324_configure()
 * and si5324_wait_lock()) go into the identity reply. */
#define NRL_FW_REPLY_MAX 400u
unsigned nrl_cmd_line(const char *line, unsigned len, uint32_t clock_status, uint32_t lol_status,
                      char *reply);

/* Read lines from the UART and answer them until hal_uart_getc() gives -1. */
void nrl_cmd_loop(uint32_t clock_status, uint32_t lol_status);

/* Boot: hal_init(), Si5324 set-up, a banner line, then nrl_cmd_loop().
 * Both builds' main() call it. */
int nrl_firmware_main(void);

#endif /* NRL_CMD_H */
