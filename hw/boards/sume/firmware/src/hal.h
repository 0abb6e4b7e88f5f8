/* SPDX-License-Identifier: MIT
 *
 * hal.h - the firmware's hardware abstraction: everything the command loop
 * (nrl_cmd.c) and the Si5324 set-up (si5324.c) touch goes through these
 * calls, so the same sources build for the MicroBlaze (hal_microblaze.c,
 * AXI UART Lite + AXI IIC + the datapath's AXI4-Lite register window) and
 * natively with gcc (hal_host.c: a 4 KB register array, stdin/stdout or a pty).
 */
#ifndef NRL_HAL_H
#define NRL_HAL_H

#include <stdint.h>

/* Set up the UART, the I2C master and the register window; 0 on success. */
int hal_init(void);

/* Read / write the 32-bit register at byte offset `off` of the netfpga-rl
 * register window (0 <= off < NRL_FW_REG_WINDOW, a multiple of 4). */
uint32_t hal_reg_read(uint32_t off);
void hal_reg_write(uint32_t off, uint32_t value);

/* Next byte from the UART (blocks); -1 when the line is gone for good
 * (host build: end of file), after which the command loop returns. */
int hal_uart_getc(void);

/* Send one byte on the UART. */
void hal_uart_putc(char c);

/* I2C write of `len` bytes to 7-bit address `addr7`, with a STOP at the end;
 * 0 when every byte was acknowledged. */
int hal_i2c_write(uint8_t addr7, const uint8_t *buf, unsigned len);

/* I2C read: write `wlen` bytes of `wbuf` (the device's register address) to
 * 7-bit address `addr7`, then a repeated START and `rlen` bytes read into
 * `rbuf`, with a STOP at the end; 0 when the device acknowledged. */
int hal_i2c_read(uint8_t addr7, const uint8_t *wbuf, unsigned wlen, uint8_t *rbuf, unsigned rlen);

/* Drive the AXI IIC core's general purpose outputs (the PCA9548 reset lines
 * on SUME). */
void hal_i2c_gpo(uint32_t value);

/* Wait at least `us` microseconds (busy wait). */
void hal_delay_us(uint32_t us);

#endif /* NRL_HAL_H */
