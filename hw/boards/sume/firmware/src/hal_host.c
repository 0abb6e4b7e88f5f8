/* SPDX-License-Identifier: MIT
 *
 * hal_host.c - the HAL of the native (gcc) build, for tests and trying the
 * protocol without a board.
 *
 * Registers: a 4 KB array holding the reset values of every register of the
 * generated map (hostdrv/wire/nrl_protocol.h, NRL_REGISTER_TABLE). It
 * behaves like the RTL register file where that matters to a host: writes to
 * ro and rc registers are ignored, rw registers keep only their width's bits,
 * CTRL bit 31 zeroes the counters and clears itself, RPL_RESET clears itself.
 * Nothing else (no datapath): counters only change through --preload.
 * UART: stdin/stdout, or with --pty a new pseudo-terminal whose slave path is
 * printed on stdout as "pty PATH". I2C: every write is logged on stderr as
 * "i2c AA: BB CC ..." (hex) and acknowledged; reads as "i2c-read AA: BB ->
 * N bytes", answered with the Si5324's LOL_INT set to $NRL_FW_SI5324_LOL
 * (0 by default, 1; "N" for no acknowledge). Delays are logged ("delay N us"),
 * not waited.
 *
 * Usage: nrl_fw_host [--pty] [--preload FILE]
 *   FILE: lines "ADDR VALUE" (hex, '#' comments) loaded into the array after
 *   the reset values, whatever the register's access (counters included).
 */
#define _DEFAULT_SOURCE
#define _XOPEN_SOURCE 600
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "hal.h"
#include "nrl_cmd.h"
#include "nrl_protocol.h"

static uint32_t regs[NRL_FW_REG_WINDOW / 4u];
static uint8_t access_of[NRL_FW_REG_WINDOW / 4u];
static uint32_t mask_of[NRL_FW_REG_WINDOW / 4u];
static int known[NRL_FW_REG_WINDOW / 4u];
static int fd_in = 0;
static int fd_out = 1;
static const char *preload_path;

static void load_reset_values(void)
{
#define NRL_FW_RESET(name, addr, acc, reset, width, param, server, job, admin) \
    regs[(addr) / 4u] = (reset);                                   \
    access_of[(addr) / 4u] = (acc);                                \
    mask_of[(addr) / 4u] = (width) >= 32u ? 0xFFFFFFFFu : ((1u << (width)) - 1u); \
    known[(addr) / 4u] = 1;
    NRL_REGISTER_TABLE(NRL_FW_RESET)
#undef NRL_FW_RESET
}

static int preload(const char *path)
{
    FILE *f = fopen(path, "r");
    char text[128];
    unsigned long addr, value;

    if (f == NULL) {
        fprintf(stderr, "nrl_fw_host: cannot open --preload %s: %s\n", path, strerror(errno));
        return -1;
    }
    while (fgets(text, sizeof text, f) != NULL) {
        if (text[0] == '#' || text[0] == '\n')
            continue;
        if (sscanf(text, "%lx %lx", &addr, &value) != 2 || addr >= NRL_FW_REG_WINDOW ||
            (addr & 3u)) {
            fprintf(stderr, "nrl_fw_host: bad --preload line: %s", text);
            fclose(f);
            return -1;
        }
        regs[addr / 4u] = (uint32_t)value;
    }
    fclose(f);
    return 0;
}

static void make_raw(int fd)
{
    struct termios t;

    if (tcgetattr(fd, &t) == 0) {
        cfmakeraw(&t);
        tcsetattr(fd, TCSANOW, &t);
    }
}

static int open_pty(void)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    const char *name;
    int slave;

    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 ||
        (name = ptsname(master)) == NULL) {
        fprintf(stderr, "nrl_fw_host: cannot create a pty: %s\n", strerror(errno));
        return -1;
    }
    /* keep a slave open ourselves: the master then blocks (instead of EIO)
       while no client has the port open, and clients may come and go */
    slave = open(name, O_RDWR | O_NOCTTY);
    if (slave < 0) {
        fprintf(stderr, "nrl_fw_host: cannot open %s: %s\n", name, strerror(errno));
        return -1;
    }
    make_raw(slave);
    fd_in = fd_out = master;
    printf("pty %s\n", name);
    fflush(stdout);
    return 0;
}

int hal_init(void)
{
    load_reset_values();
    if (preload_path != NULL && preload(preload_path) != 0)
        return -1;
    if (isatty(fd_in))
        make_raw(fd_in);
    return 0;
}

uint32_t hal_reg_read(uint32_t off)
{
    return regs[(off % NRL_FW_REG_WINDOW) / 4u];
}

void hal_reg_write(uint32_t off, uint32_t value)
{
    uint32_t i = (off % NRL_FW_REG_WINDOW) / 4u;

    if (!known[i]) {
        regs[i] = value;  /* unmapped: plain memory */
        return;
    }
    if (access_of[i] != NRL_ACCESS_RW)
        return;  /* ro and rc registers ignore writes */
    if (off == NRL_REG_CTRL && (value & NRL_CTRL_CLEAR_COUNTERS)) {
#define NRL_FW_CLEAR(name, addr, acc, reset, width, param, server, job, admin) \
        if ((acc) == NRL_ACCESS_RC) regs[(addr) / 4u] = 0;
        NRL_REGISTER_TABLE(NRL_FW_CLEAR)
#undef NRL_FW_CLEAR
        value &= ~NRL_CTRL_CLEAR_COUNTERS;
    }
    if (off == NRL_REG_RPL_RESET)
        value = 0;  /* self-clearing */
    regs[i] = value & mask_of[i];
}

int hal_uart_getc(void)
{
    unsigned char c;
    ssize_t n;

    do {
        n = read(fd_in, &c, 1);
    } while (n < 0 && errno == EINTR);
    return n == 1 ? c : -1;
}

void hal_uart_putc(char c)
{
    ssize_t n;

    do {
        n = write(fd_out, &c, 1);
    } while (n < 0 && errno == EINTR);
}

int hal_i2c_write(uint8_t addr7, const uint8_t *buf, unsigned len)
{
    unsigned i;

    fprintf(stderr, "i2c %02X:", addr7);
    for (i = 0; i < len; i++)
        fprintf(stderr, " %02X", buf[i]);
    fprintf(stderr, "\n");
    return 0;
}

int hal_i2c_read(uint8_t addr7, const uint8_t *wbuf, unsigned wlen, uint8_t *rbuf, unsigned rlen)
{
    unsigned i;
    const char *lol = getenv("NRL_FW_SI5324_LOL");  /* the stub's LOL_INT: 0 (default) or 1 */

    fprintf(stderr, "i2c-read %02X:", addr7);
    for (i = 0; i < wlen; i++)
        fprintf(stderr, " %02X", wbuf[i]);
    fprintf(stderr, " -> %u bytes\n", rlen);
    for (i = 0; i < rlen; i++)
        rbuf[i] = (lol != NULL && lol[0] == '1') ? 0x01u : 0x00u;
    return (lol != NULL && lol[0] == 'N') ? -1 : 0;  /* "N": no acknowledge */
}

void hal_i2c_gpo(uint32_t value)
{
    fprintf(stderr, "gpo %02X\n", (unsigned)value);
}

void hal_delay_us(uint32_t us)
{
    fprintf(stderr, "delay %u us\n", (unsigned)us);  /* logged, not waited: tests stay fast */
}

int main(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pty") == 0) {
            if (open_pty() != 0)
                return 1;
        } else if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc) {
            preload_path = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--pty] [--preload FILE]\n", argv[0]);
            return 2;
        }
    }
    return nrl_firmware_main();
}
