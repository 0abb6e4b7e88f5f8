/* SPDX-License-Identifier: MIT
 *
 * nrl_cmd.c - the register line protocol (docs/board_uart.md).
 *
 * Request:  CMD SP TAG [SP ARG]... '*' CRC4 [CR] LF
 * Reply:    "OK" SP TAG SP CMD [SP FIELD]... '*' CRC4 CR LF
 *           "ER" SP TAG SP CODE SP TEXT '*' CRC4 CR LF
 * CMD is I (identity), R (read), W (write, the reply carries the value read
 * back), D (dump every RTL counter). TAG is two hex digits the host picks and
 * the reply echoes ("??" when the request was too damaged to tell). Numbers
 * are hexadecimal without a prefix. CRC4 is nrl_crc16() of every byte before
 * '*', in four hex digits. No printf: the MicroBlaze has 64 KB of BRAM.
 */
#include "nrl_cmd.h"

#include "hal.h"
#include "nrl_protocol.h"
#include "si5324.h"

/* -- the register map, from the generated header ---------------------------- */

struct reg_entry {
    uint16_t addr;
    uint8_t access;
    uint8_t server;
};

#define NRL_FW_ENTRY(name, addr, access, reset, width, param, server, job, admin) \
    {(uint16_t)(addr), (uint8_t)(access), (uint8_t)(server)},
static const struct reg_entry REGISTERS[] = {NRL_REGISTER_TABLE(NRL_FW_ENTRY)};
#undef NRL_FW_ENTRY

#define REGISTER_COUNT (sizeof REGISTERS / sizeof REGISTERS[0])

/* -- CRC and text helpers --------------------------------------------------- */

uint16_t nrl_crc16(const char *data, unsigned len)
{
    uint16_t crc = 0xFFFFu;
    unsigned i, b;

    for (i = 0; i < len; i++) {
        crc ^= (uint16_t)((uint8_t)data[i] << 8);
        for (b = 0; b < 8; b++)
            crc = (crc & 0x8000u) ? (uint16_t)((crc << 1) ^ 0x1021u) : (uint16_t)(crc << 1);
    }
    return crc;
}

static const char HEX[] = "0123456789ABCDEF";

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Parse 1..max_digits hex digits at *p up to a space or the end; advance *p. */
static int parse_hex(const char **p, const char *end, unsigned max_digits, uint32_t *out)
{
    uint32_t v = 0;
    unsigned n = 0;
    int d;

    while (*p < end && **p != ' ') {
        d = hex_digit(**p);
        if (d < 0 || ++n > max_digits)
            return -1;
        v = (v << 4) | (uint32_t)d;
        (*p)++;
    }
    if (n == 0)
        return -1;
    *out = v;
    return 0;
}

struct out {
    char *buf;
    unsigned n;
};

static void put_str(struct out *o, const char *s)
{
    while (*s && o->n < NRL_FW_REPLY_MAX - 8u)
        o->buf[o->n++] = *s++;
}

static void put_char(struct out *o, char c)
{
    if (o->n < NRL_FW_REPLY_MAX - 8u)
        o->buf[o->n++] = c;
}

/* ' ' then `v` in hex, `digits` digits (0: as few as needed, at least one). */
static void put_hex(struct out *o, uint32_t v, unsigned digits)
{
    int shift;
    int started = 0;

    put_char(o, ' ');
    for (shift = 28; shift >= 0; shift -= 4) {
        unsigned d = (v >> shift) & 0xFu;
        if (d || started || shift == 0 || (digits && (unsigned)shift < 4u * digits)) {
            put_char(o, HEX[d]);
            started = 1;
        }
    }
}

/* Append "*CRC4\r\n" and the NUL; return the length. */
static unsigned finish(struct out *o)
{
    uint16_t crc = nrl_crc16(o->buf, o->n);
    int shift;

    o->buf[o->n++] = '*';
    for (shift = 12; shift >= 0; shift -= 4)
        o->buf[o->n++] = HEX[(crc >> shift) & 0xFu];
    o->buf[o->n++] = '\r';
    o->buf[o->n++] = '\n';
    o->buf[o->n] = '\0';
    return o->n;
}

static unsigned error_reply(struct out *o, const char *tag, const char *code, const char *text)
{
    o->n = 0;
    put_str(o, "ER ");
    put_str(o, tag);
    put_char(o, ' ');
    put_str(o, code);
    put_char(o, ' ');
    put_str(o, text);
    return finish(o);
}

/* -- one request ------------------------------------------------------------ */

unsigned nrl_cmd_line(const char *line, unsigned len, uint32_t clock_status, uint32_t lol_status,
                      char *reply)
{
    struct out o = {reply, 0};
    const char *star = 0;
    const char *p;
    const char *end;
    char tag[3] = "??";
    char cmd;
    uint32_t crc, addr, value;
    unsigned i;

    if (len == 0 || line[0] == '#')
        return 0;
    if (len > NRL_FW_LINE_MAX)
        return error_reply(&o, "??", "LONG", "line too long");
    for (i = 0; i < len; i++)
        if (line[i] == '*')
            star = line + i;
    p = star + 1;
    if (star == 0 || parse_hex(&p, line + len, 4, &crc) != 0 || p != line + len ||
        line + len - star != 5)
        return error_reply(&o, "??", "CRC", "no *CRC4 at the end of the line");
    if (crc != nrl_crc16(line, (unsigned)(star - line)))
        return error_reply(&o, "??", "CRC", "checksum mismatch");

    /* CMD SP TAG */
    end = star;
    if (end - line < 4 || line[1] != ' ' || hex_digit(line[2]) < 0 || hex_digit(line[3]) < 0 ||
        (end - line > 4 && line[4] != ' '))
        return error_reply(&o, "??", "SYNTAX", "expected CMD TAG [ARGS]");
    tag[0] = line[2];
    tag[1] = line[3];
    cmd = line[0];
    p = line + 4;

    o.n = 0;
    put_str(&o, "OK ");
    put_str(&o, tag);
    put_char(&o, ' ');
    put_char(&o, cmd);
    switch (cmd) {
    case 'I':
        if (p != end)
            return error_reply(&o, tag, "SYNTAX", "I takes no arguments");
        put_hex(&o, hal_reg_read(NRL_REG_MAGIC), 8);
        put_hex(&o, hal_reg_read(NRL_REG_VERSION), 8);
        put_hex(&o, hal_reg_read(NRL_REG_BUILD_HASH), 8);
        put_hex(&o, NRL_FW_PROTOCOL, 0);
        put_hex(&o, clock_status, 0);
        put_hex(&o, lol_status, 0);
        return finish(&o);
    case 'R':
    case 'W':
        p++;
        if (p > end || parse_hex(&p, end, 3, &addr) != 0)
            return error_reply(&o, tag, "SYNTAX", "expected a hex address");
        if (cmd == 'W') {
            p++;
            if (p > end || parse_hex(&p, end, 8, &value) != 0)
                return error_reply(&o, tag, "SYNTAX", "expected a hex value");
        }
        if (p != end)
            return error_reply(&o, tag, "SYNTAX", "too many arguments");
        if (addr >= NRL_FW_REG_WINDOW || (addr & 3u))
            return error_reply(&o, tag, "ADDR", "address outside the 4 KB window or unaligned");
        if (cmd == 'W')
            hal_reg_write(addr, value);
        put_hex(&o, addr, 3);
        put_hex(&o, hal_reg_read(addr), 8);
        return finish(&o);
    case 'D': {
        unsigned n = 0;
        if (p != end)
            return error_reply(&o, tag, "SYNTAX", "D takes no arguments");
        for (i = 0; i < REGISTER_COUNT; i++)
            n += REGISTERS[i].access == NRL_ACCESS_RC && !REGISTERS[i].server;
        put_hex(&o, n, 0);
        for (i = 0; i < REGISTER_COUNT; i++)
            if (REGISTERS[i].access == NRL_ACCESS_RC && !REGISTERS[i].server)
                put_hex(&o, hal_reg_read(REGISTERS[i].addr), 0);
        return finish(&o);
    }
    default:
        return error_reply(&o, tag, "CMD", "unknown command (I, R, W, D)");
    }
}

/* -- the loop --------------------------------------------------------------- */

static void send(const char *s, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++)
        hal_uart_putc(s[i]);
}

void nrl_cmd_loop(uint32_t clock_status, uint32_t lol_status)
{
    static char line[NRL_FW_LINE_MAX + 1u];
    static char reply[NRL_FW_REPLY_MAX];
    unsigned len = 0;
    int overflow = 0;
    unsigned n;
    int c;

    for (;;) {
        c = hal_uart_getc();
        if (c < 0)
            return;
        if (c == '\r')
            continue;
        if (c != '\n') {
            if (len < sizeof line)
                line[len++] = (char)c;
            else
                overflow = 1;
            continue;
        }
        n = nrl_cmd_line(line, overflow ? NRL_FW_LINE_MAX + 1u : len, clock_status, lol_status, reply);
        send(reply, n);
        len = 0;
        overflow = 0;
    }
}

static void send_text(const char *s)
{
    while (*s)
        hal_uart_putc(*s++);
}

int nrl_firmware_main(void)
{
    uint32_t clock_status;
    uint32_t lol_status = SI5324_LOL_UNREAD;
    char step[3];

    if (hal_init() != 0)
        return 1;
    clock_status = si5324_configure();
    /* banner lines start with '#': hosts skip them */
    send_text("# netfpga-rl firmware, register line protocol 2 (docs/board_uart.md)\r\n");
    if (clock_status == 0) {
        send_text("# si5324: configured for 156.25 MHz, calibrating\r\n");
        lol_status = si5324_wait_lock();
        if (lol_status == SI5324_LOCKED)
            send_text("# si5324: locked (LOL clear)\r\n");
        else if (lol_status == SI5324_NO_LOCK)
            send_text("# si5324: LOSS OF LOCK: LOL still set after 3 s; the 10G ports have no "
                      "reference clock\r\n");
        else
            send_text("# si5324: the LOL register read was not acknowledged\r\n");
    } else {
        step[0] = HEX[((clock_status - 1u) >> 4) & 0xFu];
        step[1] = HEX[(clock_status - 1u) & 0xFu];
        step[2] = '\0';
        send_text("# si5324: I2C step 0x");
        send_text(step);
        send_text(" not acknowledged; the 10G ports will have no reference clock\r\n");
    }
    /* the MicroBlaze reaches the register window only if the block design maps
       it (docs/board_uart.md): say so at boot rather than serve zeros silently */
    if (hal_reg_read(NRL_REG_MAGIC) == NRL_RST_MAGIC)
        send_text("# registers: MAGIC reads NRL1\r\n");
    else
        send_text("# registers: MAGIC does not read NRL1: no netfpga-rl register window at "
                  "NRL_REG_BASE\r\n");
    nrl_cmd_loop(clock_status, lol_status);
    return 0;
}
