/* SPDX-License-Identifier: MIT
 *
 * hal_microblaze.c - the HAL on the SUME board's MicroBlaze (nf_mbsys),
 * built with mb-gcc against the standalone BSP of the SUME reference
 * project's hardware export (Xilinx SDK 2016.4).
 *
 * Polled, no interrupts: the UART Lite and the AXI IIC core are driven with
 * the BSP's low-level calls (xuartlite_l.h, xiic_l.h), which is all a
 * one-request-at-a-time line protocol and a one-off I2C sequence need.
 * Peripheral base addresses come from the BSP's xparameters.h; the register
 * window's base, NRL_REG_BASE, from the Makefile (the address the datapath's
 * AXI4-Lite slave S0_AXI has in the MicroBlaze's address map).
 */
#include "hal.h"
#include "nrl_cmd.h"

#include "xil_io.h"
#include "xiic_l.h"
#include "xparameters.h"
#include "xuartlite_l.h"

#ifndef NRL_REG_BASE
#error "NRL_REG_BASE (the register window's address seen by the MicroBlaze) is not set; build with the Makefile"
#endif

#define UART_BASE XPAR_UARTLITE_0_BASEADDR
#define IIC_BASE  XPAR_IIC_0_BASEADDR

int hal_init(void)
{
    /* the I2C core: reset it, then let XIic_Send configure it per transfer */
    XIic_WriteReg(IIC_BASE, XIIC_RESETR_OFFSET, XIIC_RESET_MASK);
    return 0;
}

uint32_t hal_reg_read(uint32_t off)
{
    return Xil_In32((UINTPTR)NRL_REG_BASE + (off & (NRL_FW_REG_WINDOW - 1u)));
}

void hal_reg_write(uint32_t off, uint32_t value)
{
    Xil_Out32((UINTPTR)NRL_REG_BASE + (off & (NRL_FW_REG_WINDOW - 1u)), value);
}

int hal_uart_getc(void)
{
    return XUartLite_RecvByte(UART_BASE);  /* blocks until a byte arrives */
}

void hal_uart_putc(char c)
{
    XUartLite_SendByte(UART_BASE, (u8)c);
}

int hal_i2c_write(uint8_t addr7, const uint8_t *buf, unsigned len)
{
    /* XIic_Send returns the bytes sent; fewer means a NAK or a lost bus */
    unsigned sent = XIic_Send(IIC_BASE, addr7, (u8 *)buf, len, XIIC_STOP);
    return sent == len ? 0 : -1;
}

int hal_i2c_read(uint8_t addr7, const uint8_t *wbuf, unsigned wlen, uint8_t *rbuf, unsigned rlen)
{
    if (XIic_Send(IIC_BASE, addr7, (u8 *)wbuf, wlen, XIIC_REPEATED_START) != wlen)
        return -1;
    return XIic_Recv(IIC_BASE, addr7, rbuf, rlen, XIIC_STOP) == rlen ? 0 : -1;
}

void hal_i2c_gpo(uint32_t value)
{
    XIic_WriteReg(IIC_BASE, XIIC_GPO_REG_OFFSET, value);
}

void hal_delay_us(uint32_t us)
{
    /* one loop iteration takes several clocks (a volatile load and store, a
       branch), so counting clocks gives at least `us` */
    volatile uint32_t n = us * (uint32_t)(XPAR_CPU_CORE_CLOCK_FREQ_HZ / 1000000u);

    while (n != 0u)
        n = n - 1u;
}

int main(void)
{
    return nrl_firmware_main();
}
